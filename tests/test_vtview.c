/*
 * test_vtview.c — a terminal's output as the text it shows, take by take:
 * colours and progress frames gone, a line in progress shown and then only
 * what it grew, a line drawn over shown again whole, characters split
 * between feeds, binary lines as markers, marker look-alikes escaped,
 * skipped bytes, lines cut at SQ_LINE_MAX, when it says text was drawn
 * over, and rows drawn again after a move up: in place within a take,
 * back in their place after one, blank rows held, a status bar aside, and
 * real tools that redraw their last lines (jest, vitest, pnpm, yarn).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "harness.h"
#include "squash/squash.h"
#include "squash/vt.h"
#include "squash/vtview.h"
#include "tutil.h"

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

/* A row taken into hand while the arena compacts: the new row was copied
 * with the length and offset it had not been given yet (fuzz_vt, under
 * ASan: an allocation of 0xbebebebe... bytes).  Fed whole, then taken,
 * as fuzz_vt found it. */
TEST(vtview_a_new_row_during_compaction_is_empty_not_uninitialised)
{
    static const char in[] = "\x1b" "7\x1b[1024Cx\x1b[e#\x1b" "8S\n[\n\n";
    vtview_t *v;
    buf_t out = BUF_INIT;
    ASSERT_OK(vtview_new(&v));
    ASSERT_OK(vtview_feed(v, in, sizeof in - 1));
    ASSERT_OK(vtview_take(v, &out, NULL));
    ASSERT_EQ(utf8_valid_prefix(out.p ? out.p : "", out.len), out.len);
    ASSERT_CONTAINS(out.p, "S");
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

/* A take of rows over VTVIEW_KEEP_BYTES gives their room back; one that
 * fits keeps it for the next. */
TEST(vtview_keeps_room_for_lines_up_to_its_limit)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    size_t n = VTVIEW_KEEP_BYTES + 1;
    char *line = malloc(n);
    ASSERT_TRUE(line != NULL);
    memset(line, 'a', n - 1);
    line[n - 1] = '\n';
    ASSERT_OK(vtview_new(&v));
    /* A row of n - 2 bytes and the buffer's NUL: exactly the limit. */
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

/* A program that redraws its last lines (docker's build steps) shows
 * each row at its last frame, once. */
TEST(vtview_rows_drawn_again_show_their_last_frame_once)
{
    vtview_t *v;
    buf_t out = BUF_INIT, in = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    buf_append_str(&in, "Step 1/3 : FROM debian\r\n");
    for (int i = 1; i <= 5; i++) {
        if (i > 1)
            buf_append_str(&in, "\x1b[3A");
        buf_printf(&in, "\x1b[2K => a %d0%%\r\n\x1b[2K => b %d5%%\r\n"
                        "\x1b[2K => c %d2%%\r\n", i, i, i);
    }
    buf_append_str(&in, "Done\r\n");
    feed_take(v, in.p, in.len, &out, &drawn);
    ASSERT_STR(TEXT(out), "Step 1/3 : FROM debian\n => a 50%\n => b 55%\n"
                          " => c 52%\nDone\n");
    ASSERT_TRUE(drawn);
    /* A frame the program left partly drawn shows what the screen does:
     * the new first row, the old rows under it. */
    TAKE(v, "x\r\ny\r\n\x1b[2A\x1b[2KX", &out, &drawn);
    ASSERT_STR(TEXT(out), "X\ny\n");
    ASSERT_TRUE(drawn);
    buf_free(&in);
    buf_free(&out);
    vtview_free(v);
}

/* More rows in one take than the hand holds: the oldest are given as
 * they leave reach, the last ones still take their redraws in place. */
TEST(vtview_a_take_of_more_rows_than_a_move_reaches)
{
    vtview_t *v;
    buf_t out = BUF_INIT, in = BUF_INIT, want = BUF_INIT;
    for (int i = 0; i < 500; i++) {
        buf_printf(&in, "line %d\r\n", i);
        buf_printf(&want, i >= 497 ? "LINE %d\n" : "line %d\n", i);
    }
    buf_append_str(&in, "\x1b[3A");
    for (int i = 497; i < 500; i++)
        buf_printf(&in, "\x1b[2KLINE %d\r\n", i);
    ASSERT_OK(vtview_new(&v));
    feed_take(v, in.p, in.len, &out, NULL);
    ASSERT_STR(TEXT(out), want.p);
    buf_free(&in);
    buf_free(&want);
    buf_free(&out);
    vtview_free(v);
}

/* A row an earlier take showed, drawn again, is shown again in its place
 * among the rows of this take, not where its redraw came (jest erases
 * its status line, writes above it and draws it again below). */
TEST(vtview_a_row_drawn_again_after_a_take_comes_back_in_its_place)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "a\r\n\r\nRUNS\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "a\n\nRUNS\n");
    ASSERT_FALSE(drawn);
    TAKE(v, "\x1b[K\x1b[1A\x1b[K\x1b[1Ab\r\n\r\nRUNS\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "b\n\nRUNS\n");
    ASSERT_TRUE(drawn);
    /* The cursor only passing over rows shows nothing again, nor do rows
     * erased and drawn the same (Ink draws its whole frame each time). */
    TAKE(v, "\x1b[3A\x1b[3B", &out, &drawn);
    ASSERT_STR(TEXT(out), "");
    ASSERT_FALSE(drawn);
    TAKE(v, "\x1b[3A\x1b[2Kb\r\n\x1b[2K\r\n\x1b[2KRUNS!\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "RUNS!\n");
    buf_free(&out);
    vtview_free(v);
}

/* Drawing its frame again, a program changed two rows with one between
 * them that it drew the same: a take gives the two and the row between,
 * one piece of the screen, and nothing of the rows drawn the same around
 * them; so whether it overwrote its rows or erased them first (log-update
 * erases every row, then draws them all). */
TEST(vtview_a_take_gives_the_rows_that_changed_as_one_piece_of_the_screen)
{
    static const char *const redraw[] = {
        /* in place */
        "\x1b[5A\rA 2\x1b[K\r\n\rB same\x1b[K\r\n\rC 2\x1b[K\r\n"
        "\r\x1b[K\r\n\rD same\x1b[K\r\n",
        /* log-update */
        "\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K"
        "\x1b[1A\x1b[2K\x1b[GA 2\r\nB same\r\nC 2\r\n\r\nD same\r\n",
    };
    for (size_t k = 0; k < 2; k++) {
        vtview_t *v;
        buf_t out = BUF_INIT;
        bool drawn;
        ASSERT_OK(vtview_new(&v));
        TAKE(v, "header\r\nA 1\r\nB same\r\nC 1\r\n\r\nD same\r\n", &out,
             &drawn);
        feed_take(v, redraw[k], strlen(redraw[k]), &out, &drawn);
        ASSERT_STR(TEXT(out), "A 2\nB same\nC 2\n");
        ASSERT_TRUE(drawn);
        /* Nothing changed: nothing given. */
        feed_take(v, redraw[k], strlen(redraw[k]), &out, &drawn);
        ASSERT_STR(TEXT(out), "");
        /* A row given, then a line in progress below the rows drawn the
         * same: the rows between come with them. */
        TAKE(v, "\x1b[5AA 3\x1b[5E> ", &out, &drawn);
        ASSERT_STR(TEXT(out), "A 3\nB same\nC 2\n\nD same\n> ");
        buf_free(&out);
        vtview_free(v);
    }
}

/* Rows a program erased to draw its frame again, at and below the
 * cursor, show nothing until written, or until the cursor moves past
 * them (they were empty lines after all). */
TEST(vtview_blank_rows_at_and_below_the_cursor_wait)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "a\r\nb\r\nc\r\n\x1b[3A\x1b[J", &out, &drawn);
    ASSERT_STR(TEXT(out), "");
    ASSERT_TRUE(drawn);
    TAKE(v, "A\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "A\n");
    TAKE(v, "\r\nC\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "\nC\n");
    /* Erased and never written again: never shown. */
    TAKE(v, "\x1b[2A\x1b[J", &out, &drawn);
    ASSERT_OK(vtview_finish(v));
    TAKE(v, "", &out, &drawn);
    ASSERT_STR(TEXT(out), "");
    buf_free(&out);
    vtview_free(v);
}

/* A status bar drawn at an absolute row (apt's) stands aside: one row at
 * its last frame where it first came, gone once erased. */
TEST(vtview_a_status_bar_aside_shows_its_last_frame_until_erased)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    static const char bars[] =
        "x\r\n\x1b" "7\x1b[30;0fProgress: [ 20%]\x1b" "8y\r\n"
        "\x1b" "7\x1b[30;0fProgress: [ 60%]\x1b" "8z\r\n";
    ASSERT_OK(vtview_new(&v));
    TAKE(v, bars, &out, &drawn);
    ASSERT_STR(TEXT(out), "x\nProgress: [ 60%]\ny\nz\n");
    ASSERT_TRUE(drawn);
    TAKE(v, "\x1b[J", &out, &drawn);
    ASSERT_STR(TEXT(out), "");
    vtview_free(v);
    /* Erased in the same take: never shown. */
    ASSERT_OK(vtview_new(&v));
    buf_reset(&out);
    ASSERT_OK(vtview_feed(v, bars, sizeof bars - 1));
    ASSERT_OK(vtview_feed(v, "\x1b[J", 3));
    ASSERT_OK(vtview_take(v, &out, &drawn));
    ASSERT_STR(TEXT(out), "x\ny\nz\n");
    buf_free(&out);
    vtview_free(v);
}

/* Lines drawn at different absolute rows between two takes are all
 * shown, in the order drawn (an error among them is not lost to the last
 * one); a row drawn again at the same place shows its last frame; the
 * line in progress aside grows across takes; an erase blanks them all. */
TEST(vtview_lines_at_different_absolute_rows_are_each_shown)
{
    vtview_t *v;
    buf_t out = BUF_INIT;
    bool drawn;
    ASSERT_OK(vtview_new(&v));
    TAKE(v,
         "start\r\n\x1b[5;1Herror: first thing failed"
         "\x1b[6;1Hsecond\x1b[5;1Herror: first thing failed!"
         "\x1b[7;1Hthi",
         &out, &drawn);
    ASSERT_STR(TEXT(out),
               "start\nerror: first thing failed!\nsecond\nthi");
    /* VPA keeps the column. */
    TAKE(v, "rd\x1b[8dfourth\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "rd\n     fourth\n");
    /* A cursor saved aside comes back to the same screen row. */
    TAKE(v, "\x1b[10;1H\x1b" "7ten\x1b[11;1Heleven\x1b" "8TEN\r\n", &out,
         &drawn);
    ASSERT_STR(TEXT(out), "TEN\neleven\n");
    vtview_free(v);

    /* Drawn and erased in one take: the screen shows none of it. */
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "a\r\n\x1b[5;1Hfive\x1b[6;1Hsix\x1b[1;1H\x1b[J", &out,
         &drawn);
    ASSERT_STR(TEXT(out), "a\n");
    /* An erase below a row aside leaves the rows above it. */
    TAKE(v, "\x1b[3;1Hthree\x1b[5;1Hfive\x1b[4;1H\x1b[Jfour\r\n", &out,
         &drawn);
    ASSERT_STR(TEXT(out), "three\nfour\n");
    vtview_free(v);

    /* From column 1 it takes the cursor's row too: ESC[H ESC[J, the
     * `clear` of vt100 and the Linux console, clears everything. */
    static const char *const cleared[] = {
        "a\r\n\x1b[1;1Hone\x1b[6;1Hsix\x1b[H\x1b[J",
        "a\r\n\x1b[5;1Hfive\x1b[6;1Hsix\x1b[5;1H\x1b[J",
    };
    for (size_t i = 0; i < 2; i++) {
        ASSERT_OK(vtview_new(&v));
        buf_reset(&out);
        ASSERT_OK(vtview_feed(v, cleared[i], strlen(cleared[i])));
        ASSERT_OK(vtview_take(v, &out, &drawn));
        ASSERT_STR(TEXT(out), "a\n");
        vtview_free(v);
    }

    /* Text at rows not drawn before is drawn over nothing. */
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "a\r\n\x1b[5;1Hfive\x1b[6;1Hsix\x1b[7;1Hseven\r\n", &out,
         &drawn);
    ASSERT_STR(TEXT(out), "a\nfive\nsix\nseven\n");
    ASSERT_FALSE(drawn);
    TAKE(v, "\x1b[6;1HSIX\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "SIX\n");
    ASSERT_TRUE(drawn);
    vtview_free(v);

    /* Screen rows up to VT_ASIDE_ROWS remember their own text; those
     * below share the last one's memory: a first line there reads as
     * drawn over, though each line is still shown. */
    char edge[128];
    for (unsigned k = 0; k < 2; k++) {
        unsigned a = VT_ASIDE_ROWS - 1 + k;
        ASSERT_OK(vtview_new(&v));
        TAKE(v, "a\r\n", &out, &drawn);
        int n = snprintf(edge, sizeof edge, "\x1b[%u;1Hx\x1b[%u;1Hy\r\n",
                         a, a + 1);
        ASSERT_OK(vtview_feed(v, edge, (size_t)n));
        buf_reset(&out);
        ASSERT_OK(vtview_take(v, &out, &drawn));
        ASSERT_STR(TEXT(out), "x\ny\n");
        ASSERT_EQ(drawn, k == 1);
        vtview_free(v);
    }

    /* A line aside shown without its end, then erased: it ends there,
     * and what comes next is a line of its own. */
    ASSERT_OK(vtview_new(&v));
    TAKE(v, "a\r\n\x1b[5;1Hthi", &out, &drawn);
    ASSERT_STR(TEXT(out), "a\nthi");
    TAKE(v, "\x1b[1;1H\x1b[2Jnext\r\n", &out, &drawn);
    ASSERT_STR(TEXT(out), "\nnext\n");
    buf_free(&out);
    vtview_free(v);
}

/* The view of a fixture's bytes, taken after every `chunk` bytes (0:
 * once), joined. */
static void view_fixture(const char *name, size_t chunk, buf_t *out)
{
    char path[1024];
    buf_t raw = BUF_INIT;
    vtview_t *v;
    snprintf(path, sizeof path, "%s/../tests/fixtures/%s", test_build_dir(),
             name);
    ASSERT_TRUE(tu_read_file(path, &raw));
    ASSERT_OK(vtview_new(&v));
    buf_reset(out);
    if (!chunk)
        chunk = raw.len;
    for (size_t i = 0; i < raw.len; i += chunk) {
        ASSERT_OK(vtview_feed(v, raw.p + i,
                              raw.len - i < chunk ? raw.len - i : chunk));
        ASSERT_OK(vtview_take(v, out, NULL));
    }
    ASSERT_OK(vtview_finish(v));
    ASSERT_OK(vtview_take(v, out, NULL));
    vtview_free(v);
    buf_free(&raw);
}

static size_t count_of(const buf_t *b, const char *s)
{
    size_t n = 0;
    for (const char *p = TEXT(*b); (p = strstr(p, s)); p++)
        n++;
    return n;
}

/* Real tools that redraw their last lines read as the screen they left
 * (checked against tmux's rendering of the same bytes): no status line
 * they erased, each progress line once, at its end. */
TEST(vtview_real_tools_that_redraw_read_as_the_screen_they_left)
{
    buf_t out = BUF_INIT;
    view_fixture("jest/fail_pty.out", 0, &out);
    ASSERT_EQ(count_of(&out, "RUNS"), 0);
    ASSERT_EQ(count_of(&out, "Determining test suites"), 0);
    ASSERT_TRUE(strstr(TEXT(out), "options.\n FAIL  jt/math.test.js\n"
                                  "  \xe2\x97\x8f math \xe2\x80\xba mean "
                                  "of three\n\n    expect(") != NULL);
    view_fixture("vitest/fail_pty.out", 0, &out);
    ASSERT_EQ(count_of(&out, "[queued]"), 0);
    ASSERT_EQ(count_of(&out, "Test Files"), 1);
    view_fixture("pnpm/install_pty.out", 0, &out);
    ASSERT_EQ(count_of(&out, "Progress:"), 1);
    ASSERT_TRUE(strncmp(TEXT(out), "Packages are hard linked", 24) == 0);
    ASSERT_TRUE(strstr(TEXT(out), "\nPackages: +2\n++\nProgress: resolved 2,"
                                  " reused 2, downloaded 0, added 2, done\n")
                != NULL);
    view_fixture("yarn/install_pty.out", 0, &out);
    ASSERT_EQ(count_of(&out, "----"), 0);
    ASSERT_EQ(count_of(&out, "===="), 0);
    view_fixture("apt/install_pty.out", 0, &out);
    ASSERT_EQ(count_of(&out, "Progress: ["), 0);
    ASSERT_TRUE(strstr(TEXT(out), "\nUnpacking sl (5.02-1+b1) ...\nSetting up")
                != NULL);
    /* Taken as polls would, every 300 bytes: every error line still
     * shows, and the RUNS line only where a take found it standing (4
     * times; shown as lines, each of its draws and erases made 11). */
    view_fixture("jest/fail_pty.out", 300, &out);
    ASSERT_TRUE(count_of(&out, "RUNS") <= 4);
    ASSERT_TRUE(strstr(TEXT(out), "Received: 2.3333333333333335") != NULL);
    buf_free(&out);
}
