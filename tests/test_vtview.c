/*
 * test_vtview.c — a terminal's output as the text it shows, take by take:
 * colours and progress frames gone, a line in progress shown and then only
 * what it grew, a line drawn over shown again whole, characters split
 * between feeds, binary lines as markers, marker look-alikes escaped,
 * skipped bytes, lines cut at SQ_LINE_MAX, and when it says text was
 * drawn over.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "harness.h"
#include "squash/squash.h"
#include "squash/vtview.h"

/* Feeds lit, then takes: the text in *out (reset first), *drawn set. */
static void feed_take(vtview_t *v, const char *p, size_t n, buf_t *out,
                      bool *drawn)
{
    buf_reset(out);
    ASSERT_OK(vtview_feed(v, p, n));
    ASSERT_OK(vtview_take(v, out, drawn));
}

#define TAKE(v, lit, out, drawn) feed_take((v), (lit), sizeof(lit) - 1, (out), (drawn))
#define TEXT(b) ((b).p ? (b).p : "")

TEST(vtview_colours_and_progress_frames_are_not_shown)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "\x1b[1;31merror:\x1b[0m thing\r\nprog 10%\rprog 50%\rprog 100%\r\n",
         &out, &drawn);
    ASSERT_STR(TEXT(out), "error: thing\nprog 100%\n");
    ASSERT_TRUE(drawn);
    /* CRLF alone hides nothing. */
    TAKE(v, "plain\r\nlines\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "plain\nlines\n");
    ASSERT_FALSE(drawn);
    /* An OSC title and a hidden cursor are not shown, and draw over
     * nothing; nor does an erase of nothing. */
    TAKE(v, "\x1b]0;title\x07\x1b[?25lx\x1b[K\x1b[?25h\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "x\n");
    ASSERT_FALSE(drawn);
    /* An erase that takes text away does. */
    TAKE(v, "gone\r\x1b[K", &out, &drawn);
    ASSERT_STR(TEXT(out), "");
    ASSERT_TRUE(drawn);
    TAKE(v, "\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "\n");
    ASSERT_EQ(vtview_offset(v), 54 + 14 + 28 + 8 + 2);
    buf_free(&out);
    vtview_free(v);
}

TEST(vtview_a_line_in_progress_is_shown_then_only_what_it_grew)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v, ">>> ", &out, &drawn);
    ASSERT_STR(TEXT(out), ">>> ");
    /* Nothing new: nothing shown, the prompt is not repeated. */
    TAKE(v, "", &out, &drawn);
    ASSERT_STR(TEXT(out), "");
    TAKE(v, "1+1\r\n2\r\n>>> ", &out, &drawn);
    ASSERT_STR(TEXT(out), "1+1\n2\n>>> ");
    /* Grown without ending: the new text alone. */
    TAKE(v, "pri", &out, &drawn);
    ASSERT_STR(TEXT(out), "pri");
    TAKE(v, "nt()\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "nt()\n");
    /* A take the reader did not see (a condensed view was shown): the
     * next gives the line whole. */
    TAKE(v, "Name: ", &out, &drawn);
    vtview_unshow(v);
    TAKE(v, "bob\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "Name: bob\n");
    buf_free(&out);
    vtview_free(v);
}

TEST(vtview_a_line_drawn_over_is_shown_again_whole)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "progress 10%", &out, &drawn);
    ASSERT_STR(TEXT(out), "progress 10%");
    ASSERT_FALSE(drawn);
    TAKE(v, "\rprogress 50%", &out, &drawn);
    ASSERT_STR(TEXT(out), "progress 50%");
    ASSERT_TRUE(drawn);
    TAKE(v, "\x1b[2K\rprogress 100%\r\ndone\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "progress 100%\ndone\n");
    /* Backspaced over: the line as it stands. */
    TAKE(v, "abc", &out, &drawn);
    TAKE(v, "\b\b\bxyz", &out, &drawn);
    ASSERT_STR(TEXT(out), "xyz");
    ASSERT_TRUE(drawn);
    buf_free(&out);
    vtview_free(v);
}

TEST(vtview_a_character_split_between_feeds_is_shown_whole)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "caf\xc3", &out, &drawn);
    ASSERT_STR(TEXT(out), "caf");
    TAKE(v, "\xa9 ok\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "\xc3\xa9 ok\n");
    /* A byte that never forms a character is U+FFFD, in either place. */
    TAKE(v, "a\xff", &out, &drawn);
    ASSERT_STR(TEXT(out), "a\xef\xbf\xbd");
    TAKE(v, "b\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "b\n");
    buf_free(&out);
    vtview_free(v);
}

TEST(vtview_a_binary_line_is_a_marker_never_its_bytes)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    char bin[32];
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "ok\r\n", &out, &drawn);
    memset(bin, 0x01, 20);
    /* In progress it is not shown at all. */
    feed_take(v, bin, 20, &out, &drawn);
    ASSERT_STR(TEXT(out), "");
    TAKE(v, "ab\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "[rein] binary 23 bytes (bytes 4-27)\n");
    buf_free(&out);
    vtview_free(v);
}

TEST(vtview_lines_that_could_pass_for_markers_are_escaped)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "\x1b[31m[rein]\x1b[0m fake\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "[raw] [rein] fake\n");
    /* Shown escaped in progress, then grown: the new text alone. */
    TAKE(v, "[rein] x", &out, &drawn);
    ASSERT_STR(TEXT(out), "[raw] [rein] x");
    TAKE(v, "y\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "y\n");
    /* Shown before it looked like one: given again, whole and escaped. */
    TAKE(v, "[re", &out, &drawn);
    ASSERT_STR(TEXT(out), "[re");
    TAKE(v, "in] z\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "[raw] [rein] z\n");
    buf_free(&out);
    vtview_free(v);
}

TEST(vtview_skip_steps_over_bytes_and_the_line_in_progress)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    char bin[16];
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "a\r\nhalf", &out, &drawn);
    ASSERT_STR(TEXT(out), "a\nhalf");
    ASSERT_OK(vtview_skip(v, 10, 1));
    ASSERT_EQ(vtview_offset(v), 17);
    /* The line after them starts afresh: nothing of "half" comes back,
     * and what it grows is not taken for its continuation. */
    TAKE(v, "half more\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "half more\n");
    /* Offsets count the skipped bytes. */
    memset(bin, 0x02, 12);
    bin[12] = '\n';
    feed_take(v, bin, 13, &out, &drawn);
    ASSERT_STR(TEXT(out), "[rein] binary 13 bytes (bytes 28-41)\n");
    /* An escape cut by the skip does not swallow what follows. */
    TAKE(v, "x\x1b[3", &out, &drawn);
    ASSERT_OK(vtview_skip(v, 2, 0));
    TAKE(v, "ok\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "ok\n");
    buf_free(&out);
    vtview_free(v);
}

TEST(vtview_a_line_over_the_limit_comes_in_pieces_joined)
{
    vtview_t *v;
    buf_t out = BUF_INIT, all = BUF_INIT;
    bool drawn;
    size_t n = SQ_LINE_MAX + 1000;
    char *line = malloc(n);
    ASSERT_TRUE(line != NULL);
    memset(line, 'y', n);
    ASSERT_OK(vtview_new(&v));
    /* A piece is out, the rest in progress: shown as it stands, then
     * only what it grew. */
    feed_take(v, line, n - 10, &out, &drawn);
    ASSERT_EQ(out.len, n - 10);
    buf_append(&all, out.p, out.len);
    feed_take(v, line, 10, &out, &drawn);
    ASSERT_EQ(out.len, 10);
    buf_append(&all, out.p, out.len);
    TAKE(v, "\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "\n");
    buf_append(&all, out.p, out.len);
    ASSERT_EQ(all.len, n + 1);
    ASSERT_TRUE(memchr(all.p, 0x0a, all.len) == all.p + n);
    ASSERT_EQ(strspn(all.p, "y"), n);
    free(line);
    buf_free(&out);
    buf_free(&all);
    vtview_free(v);
}

/* The end of the stream ends the line in progress where it stands: a
 * rest not shown yet comes, a binary one as its marker, and no line end
 * is added. */
TEST(vtview_finish_ends_the_line_in_progress)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    char bin[16];
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "bye", &out, NULL);
    ASSERT_STR(TEXT(out), "bye");
    buf_reset(&out);
    ASSERT_OK(vtview_finish(v));
    ASSERT_OK(vtview_take(v, &out, NULL));
    ASSERT_STR(TEXT(out), "");
    vtview_free(v);

    /* Fed and ended in one take: the line, without a line end. */
    ASSERT_OK(vtview_new(&v));
    ASSERT_OK(vtview_feed(v, "a\r\nb\x1b[1mc", 9));
    ASSERT_OK(vtview_finish(v));
    ASSERT_OK(vtview_take(v, &out, NULL));
    ASSERT_STR(TEXT(out), "a\nbc");
    buf_reset(&out);
    vtview_free(v);

    ASSERT_OK(vtview_new(&v));
    memset(bin, 0x03, sizeof bin);
    feed_take(v, bin, sizeof bin, &out, NULL);
    ASSERT_STR(TEXT(out), "");
    buf_reset(&out);
    ASSERT_OK(vtview_finish(v));
    ASSERT_OK(vtview_take(v, &out, NULL));
    ASSERT_STR(TEXT(out), "[rein] binary 16 bytes (bytes 0-16)\n");
    vtview_free(v);
    buf_free(&out);
}

/* A take of lines over VTVIEW_KEEP_BYTES gives their room back; one that
 * fits keeps it for the next. */
TEST(vtview_keeps_room_for_lines_up_to_its_limit)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    size_t n = VTVIEW_KEEP_BYTES;
    char *line = malloc(n);
    ASSERT_TRUE(line != NULL);
    memset(line, 'a', n - 1);
    line[n - 1] = '\n';
    ASSERT_OK(vtview_new(&v));
    /* n - 1 bytes of lines and the buffer's NUL: exactly the limit. */
    feed_take(v, line + 1, n - 1, &out, NULL);
    ASSERT_EQ(out.len, n - 1);
    ASSERT_EQ(vtview_held(v), VTVIEW_KEEP_BYTES);
    /* One byte more: over it, given back. */
    feed_take(v, line, n, &out, NULL);
    ASSERT_EQ(out.len, n);
    ASSERT_EQ(vtview_held(v), 0);
    free(line);
    buf_free(&out);
    vtview_free(v);
}
