/*
 * test_vt.c — the VT stripper and line buffer: CR/CRLF, spinners redrawn
 * with CHA + EL, progress bars, BS, erase modes, OSC/DCS strings, SGR
 * colour metadata, partial lines, long-line cuts at the edge, binary lines,
 * rows drawn again after moves up (kept text, reach, erase below, rows
 * aside, saved cursors), and that any chunking gives the same lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "harness.h"
#include "squash/vt.h"

#define VT_TEST_LINES 64

struct got {
    size_t n;
    char *text[VT_TEST_LINES];
    sq_line_t line[VT_TEST_LINES];
};

static int got_line(const sq_line_t *l, void *data)
{
    struct got *g = data;
    if (g->n == VT_TEST_LINES)
        return 0;
    g->text[g->n] = strndup(l->text, l->len);
    g->line[g->n] = *l;
    g->line[g->n].text = g->text[g->n];
    g->n++;
    return 0;
}

static void got_free(struct got *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->text[i]);
    g->n = 0;
}

/* Feeds s in chunks of `chunk` bytes (0: whole), then finishes. */
static void vt_run(const char *s, size_t len, size_t chunk, struct got *g)
{
    vt_t *vt;
    ASSERT_OK(vt_new(got_line, g, &vt));
    if (!chunk)
        chunk = len ? len : 1;
    for (size_t i = 0; i < len; i += chunk)
        ASSERT_OK(vt_feed(vt, s + i, len - i < chunk ? len - i : chunk, 0));
    ASSERT_OK(vt_finish(vt));
    vt_free(vt);
}

#define RUN(lit, g) vt_run((lit), sizeof(lit) - 1, 0, (g))

TEST(vt_crlf_is_one_line_end_not_an_overwrite)
{
    struct got g = {0};
    RUN("one\r\ntwo\nthree", &g);
    ASSERT_EQ(g.n, 3);
    ASSERT_STR(g.text[0], "one");
    ASSERT_EQ(g.line[0].kind, SQ_LINE_COMPLETE);
    ASSERT_EQ(g.line[0].frames, 0);
    ASSERT_STR(g.text[1], "two");
    ASSERT_STR(g.text[2], "three");
    ASSERT_EQ(g.line[2].kind, SQ_LINE_PARTIAL);
    ASSERT_EQ(g.line[0].lineno, 1);
    ASSERT_EQ(g.line[2].lineno, 3);
    ASSERT_EQ(g.line[0].raw_start, 0);
    ASSERT_EQ(g.line[0].raw_end, 5);
    ASSERT_EQ(g.line[1].raw_start, 5);
    got_free(&g);
}

TEST(vt_spinner_with_cha_and_el_collapses_and_never_glues)
{
    struct got g = {0};
    RUN("\xe2\xa0\x99\x1b[1G\x1b[0Knpm http fetch GET 200\r\n"
        "\xe2\xa0\x8f\x1b[1G\x1b[0K\xe2\xa0\x8b\x1b[1G\x1b[0K\r\n"
        "added 125 packages\r\n\xe2\xa0\xa7\x1b[1G\x1b[0K",
        &g);
    ASSERT_EQ(g.n, 3);
    ASSERT_STR(g.text[0], "npm http fetch GET 200");
    ASSERT_EQ(g.line[0].kind, SQ_LINE_OVERWRITE);
    ASSERT_EQ(g.line[0].frames, 1);
    ASSERT_STR(g.text[1], "");
    ASSERT_STR(g.text[2], "added 125 packages");
    ASSERT_EQ(g.line[2].kind, SQ_LINE_COMPLETE);
    got_free(&g);
}

TEST(vt_progress_bar_keeps_its_final_frame)
{
    struct got g = {0};
    RUN("\rDownloading [   ]   0%\rDownloading [#  ]  50%"
        "\rDownloading [###] 100%\r\nnext\n",
        &g);
    ASSERT_EQ(g.n, 2);
    ASSERT_STR(g.text[0], "Downloading [###] 100%");
    ASSERT_EQ(g.line[0].kind, SQ_LINE_OVERWRITE);
    ASSERT_EQ(g.line[0].frames, 2);
    ASSERT_STR(g.text[1], "next");
    got_free(&g);
}

TEST(vt_shorter_frame_leaves_the_tail_as_a_terminal_would)
{
    struct got g = {0};
    RUN("abcdef\rXY\n", &g);
    ASSERT_STR(g.text[0], "XYcdef");
    got_free(&g);
    RUN("abcdef\rXY\x1b[K\n", &g);
    ASSERT_STR(g.text[0], "XY");
    got_free(&g);
}

TEST(vt_overwrite_replaces_whole_utf8_characters)
{
    struct got g = {0};
    RUN("\xc3\xa9\xc3\xa9z\rab\n", &g);
    ASSERT_STR(g.text[0], "abz");
    got_free(&g);
    RUN("abc\r\xe2\x82\xac\n", &g);
    ASSERT_STR(g.text[0], "\xe2\x82\xac" "bc");
    got_free(&g);
}

TEST(vt_backspace_cuf_cub_and_cha_move_by_columns)
{
    struct got g = {0};
    RUN("|\b/\b-\bdone\n", &g);
    ASSERT_STR(g.text[0], "done");
    ASSERT_EQ(g.line[0].frames, 3);
    got_free(&g);
    RUN("a\x1b[3Cb\n", &g);
    ASSERT_STR(g.text[0], "a   b");
    got_free(&g);
    RUN("abcd\x1b[2DX\n", &g);
    ASSERT_STR(g.text[0], "abXd");
    got_free(&g);
    RUN("x\x1b[5Gy\n", &g);
    ASSERT_STR(g.text[0], "x   y");
    got_free(&g);
}

TEST(vt_erase_modes)
{
    struct got g = {0};
    RUN("abcdef\x1b[3G\x1b[1KZ\n", &g);
    ASSERT_STR(g.text[0], "  Zdef");
    got_free(&g);
    RUN("abcdef\x1b[2K\rxy\n", &g);
    ASSERT_STR(g.text[0], "xy");
    got_free(&g);
    RUN("abcdef\x1b[2Kxy\n", &g);
    ASSERT_STR(g.text[0], "      xy");
    got_free(&g);
    RUN("abc\x1b[1G\x1b[Jz\n", &g);
    ASSERT_STR(g.text[0], "z");
    got_free(&g);
    /* erase on an empty line (fuzz: it once wrote through NULL) */
    RUN("\x1b[1K\x1b[2K\x1b[K\x1b[5G\x1b[1Kx\n", &g);
    ASSERT_STR(g.text[0], "    x");
    got_free(&g);
}

TEST(vt_strings_and_other_escapes_are_swallowed)
{
    struct got g = {0};
    RUN("\x1b]0;title\x07" "a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"
        "\x1bP1$r0m\x1b\\c\x1b_apc\x1b\\d\x1b^pm\x1b\\e\x1b(Bf\x1b=g"
        "\x1b[?25lh\x1b[?2004hi\n",
        &g);
    ASSERT_EQ(g.n, 1);
    ASSERT_STR(g.text[0], "alinkbcdefghi");
    got_free(&g);
}

TEST(vt_sgr_colour_is_line_metadata)
{
    struct got g = {0};
    RUN("\x1b[31merror\x1b[0m: x\n\x1b[1;33mwarn\x1b[m\n\x1b[32m \x1b[0mplain\n"
        "\x1b[38;5;196mred256\x1b[0m\n\x1b[38;2;250;200;0myellow\x1b[0m\n"
        "\x1b[41m FAIL \x1b[49m\n",
        &g);
    ASSERT_EQ(g.n, 6);
    ASSERT_STR(g.text[0], "error: x");
    ASSERT_EQ(g.line[0].colours, SQ_COLOUR_RED);
    ASSERT_EQ(g.line[1].colours, SQ_COLOUR_YELLOW);
    ASSERT_EQ(g.line[2].colours, 0); /* colour on a blank only */
    ASSERT_EQ(g.line[3].colours, SQ_COLOUR_RED);
    ASSERT_EQ(g.line[4].colours, SQ_COLOUR_YELLOW);
    ASSERT_EQ(g.line[5].colours, SQ_COLOUR_RED);
    got_free(&g);
}

TEST(vt_cursor_up_marks_redraws)
{
    struct got g = {0};
    RUN("a: 10%\nb: 20%\n\x1b[2A\x1b[2Ka: 100%\n\x1b[2Kb: 100%\nafter\n", &g);
    ASSERT_EQ(g.n, 5);
    ASSERT_EQ(g.line[0].kind, SQ_LINE_COMPLETE);
    ASSERT_STR(g.text[2], "a: 100%");
    ASSERT_EQ(g.line[2].kind, SQ_LINE_OVERWRITE);
    ASSERT_EQ(g.line[3].kind, SQ_LINE_OVERWRITE);
    ASSERT_EQ(g.line[4].kind, SQ_LINE_COMPLETE);
    got_free(&g);
}

/* A row drawn again comes out again, whole, with its row: the text it
 * kept where the new text did not reach; a row the cursor only passed
 * through does not; every byte stays in one line's range. */
TEST(vt_a_row_drawn_again_comes_out_with_its_row_and_kept_text)
{
    struct got g = {0};
    RUN("a: 10%\nb: 20%\nc\n\x1b[3A\x1b[4G50%\n\n\x1b[2K done\nd\n", &g);
    ASSERT_EQ(g.n, 6);
    static const char *const text[] = {"a: 10%", "b: 20%", "c", "a: 50%",
                                       " done", "d"};
    static const uint64_t row[] = {0, 1, 2, 0, 2, 3};
    for (size_t i = 0; i < 6; i++) {
        ASSERT_STR(g.text[i], text[i]);
        ASSERT_EQ(g.line[i].row, row[i]);
        ASSERT_EQ(g.line[i].raw_start, i ? g.line[i - 1].raw_end : 0);
        ASSERT_EQ(g.line[i].kind,
                  i == 3 || i == 4 ? SQ_LINE_OVERWRITE : SQ_LINE_COMPLETE);
    }
    ASSERT_EQ(g.line[3].frames, 1);
    got_free(&g);
    /* Erased and drawn again the same: nothing changed, nothing comes. */
    RUN("a\nb\n\x1b[2A\x1b[2Ka\n\x1b[2Kb!\n", &g);
    ASSERT_EQ(g.n, 3);
    ASSERT_STR(g.text[2], "b!");
    ASSERT_EQ(g.line[2].row, 1);
    got_free(&g);
}

/* RI, NEL, CPL, CNL, and a cursor saved and restored, each with CSI and
 * ESC forms where a terminal has both. */
TEST(vt_every_vertical_move_lands_on_its_row)
{
    struct got g = {0};
    RUN("a\nb\n\x1bMB\x1b" "E\x1b[2FA\x1b[1E\x1b[s\x1b[1Bc\x1b[u!\n"
        "\x1b" "7\x1b[3A\x1b[2Kx\x1b" "8y\n", &g);
    static const char *const text[] = {"a", "b", "B", "A", "c", "!", "x", "y"};
    static const uint64_t row[] = {0, 1, 1, 0, 2, 1, 0, 2};
    ASSERT_EQ(g.n, 8);
    for (size_t i = 0; i < 8; i++) {
        ASSERT_STR(g.text[i], text[i]);
        ASSERT_EQ(g.line[i].row, row[i]);
    }
    /* Nothing saved: a restore goes to column 1 and stays on the row. */
    RUN("ab\x1b" "8c\n", &g);
    ASSERT_STR(g.text[8], "cb");
    ASSERT_EQ(g.line[8].row, 0);
    got_free(&g);
}

/* The last line only, for inputs of more lines than a got holds. */
struct last {
    char text[VT_ROW_KEEP_MAX + 8];
    size_t len;
    uint64_t row;
};

static int last_line(const sq_line_t *l, void *data)
{
    struct last *t = data;
    t->len = l->len < sizeof t->text ? l->len : sizeof t->text;
    memcpy(t->text, l->text, t->len);
    t->row = l->row;
    return 0;
}

static void run_last(const buf_t *in, const char *then, struct last *t)
{
    vt_t *vt;
    memset(t, 0, sizeof *t);
    ASSERT_OK(vt_new(last_line, t, &vt));
    ASSERT_OK(vt_feed(vt, in->p, in->len, 0));
    ASSERT_OK(vt_feed(vt, then, strlen(then), 0));
    ASSERT_OK(vt_finish(vt));
    vt_free(vt);
}

/* A move up reaches VT_ROWS_BACK rows back and stops there. */
TEST(vt_a_move_up_reaches_its_limit_and_stops)
{
    buf_t in = BUF_INIT;
    struct last t;
    char up[32];
    for (unsigned i = 0; i < VT_ROWS_BACK + 5; i++)
        buf_printf(&in, "L%u\n", i);
    snprintf(up, sizeof up, "\x1b[%uAX\n", VT_ROWS_BACK - 1);
    run_last(&in, up, &t);
    ASSERT_EQ(t.row, 6);
    ASSERT_EQ(t.len, 2);
    ASSERT_MEM(t.text, 2, "X6", 2);
    snprintf(up, sizeof up, "\x1b[%uAX\n", VT_ROWS_BACK);
    run_last(&in, up, &t);
    ASSERT_EQ(t.row, 5);
    ASSERT_MEM(t.text, 2, "X5", 2);
    snprintf(up, sizeof up, "\x1b[%uAX\n", VT_ROWS_BACK + 1);
    run_last(&in, up, &t);
    ASSERT_EQ(t.row, 5);
    ASSERT_MEM(t.text, 2, "X5", 2);
    buf_free(&in);
}

/* The ring keeps a row of VT_ROW_KEEP_MAX bytes, not one more; a row
 * stays whole while VT_ROWS_KEEP_BYTES hold it and the rows after it,
 * and resumes blank once a byte more came. */
TEST(vt_kept_row_text_at_its_limits)
{
    buf_t in = BUF_INIT;
    struct last t;
    for (size_t i = 0; i < VT_ROW_KEEP_MAX; i++)
        buf_append_byte(&in, 'k');
    buf_append_byte(&in, '\n');
    run_last(&in, "\x1b[AZ\n", &t);
    ASSERT_EQ(t.len, VT_ROW_KEEP_MAX);
    ASSERT_MEM(t.text, 3, "Zkk", 3);
    buf_reset(&in);
    for (size_t i = 0; i <= VT_ROW_KEEP_MAX; i++)
        buf_append_byte(&in, 'k');
    buf_append_byte(&in, '\n');
    run_last(&in, "\x1b[AZ\n", &t);
    ASSERT_EQ(t.len, 1);

    /* Row 0, then 16 rows of 1000 bytes: all of it is exactly the ring. */
    size_t first = VT_ROWS_KEEP_BYTES - 16 * 1000;
    for (int extra = 0; extra < 2; extra++) {
        buf_reset(&in);
        for (size_t i = 0; i < first + (size_t)extra; i++)
            buf_append_byte(&in, 'f');
        buf_append_byte(&in, '\n');
        for (int r = 0; r < 16; r++) {
            for (int i = 0; i < 1000; i++)
                buf_append_byte(&in, 'r');
            buf_append_byte(&in, '\n');
        }
        run_last(&in, "\x1b[17AZ\n", &t);
        ASSERT_EQ(t.row, 0);
        ASSERT_EQ(t.len, extra ? 1 : first);
        /* the next row is whole either way */
        run_last(&in, "\x1b[16AZ\n", &t);
        ASSERT_EQ(t.row, 1);
        ASSERT_EQ(t.len, 1000);
    }
    buf_free(&in);
}

/* ED 0 blanks the rows below the cursor (each that showed text comes out
 * empty) and a row aside; ED 2 the row aside only.  A move to an absolute
 * row goes aside, and a line feed from there to the next new row. */
TEST(vt_erase_below_blanks_rows_and_the_row_aside)
{
    struct got g = {0};
    RUN("one\ntwo\nthree\n\x1b[3A\x1b[JONE\n", &g);
    ASSERT_EQ(g.n, 6);
    ASSERT_STR(g.text[3], "");
    ASSERT_EQ(g.line[3].row, 1);
    ASSERT_STR(g.text[4], "");
    ASSERT_EQ(g.line[4].row, 2);
    ASSERT_EQ(g.line[4].kind, SQ_LINE_OVERWRITE);
    ASSERT_STR(g.text[5], "ONE");
    ASSERT_EQ(g.line[5].row, 0);
    got_free(&g);

    RUN("x\n\x1b" "7\x1b[30;1Hbar 1\x1b" "8y\n"
        "\x1b" "7\x1b[30;1Hbar 2\x1b" "8z\n\x1b[J"
        "\x1b[5;1Hclear\nafter\n\x1b[2J", &g);
    static const char *const text[] = {"x", "bar 1", "y", "bar 2", "z", "",
                                       "clear", "after", ""};
    static const uint64_t row[] = {0, SQ_ROW_ASIDE, 1, SQ_ROW_ASIDE, 2,
                                   SQ_ROW_ASIDE, SQ_ROW_ASIDE, 3,
                                   SQ_ROW_ASIDE};
    ASSERT_EQ(g.n, 9);
    for (size_t i = 0; i < 9; i++) {
        ASSERT_STR(g.text[i], text[i]);
        ASSERT_EQ(g.line[i].row, row[i]);
    }
    /* Text aside redraws only text aside that no erase took. */
    ASSERT_EQ(g.line[1].kind, SQ_LINE_COMPLETE);
    ASSERT_EQ(g.line[3].kind, SQ_LINE_OVERWRITE);
    ASSERT_EQ(g.line[6].kind, SQ_LINE_COMPLETE);
    got_free(&g);
}

/* After a skip no move goes back above the line that follows it. */
TEST(vt_no_move_goes_back_over_a_skip)
{
    struct got g = {0};
    vt_t *vt;
    ASSERT_OK(vt_new(got_line, &g, &vt));
    ASSERT_OK(vt_feed(vt, "a\nb\n", 4, 0));
    ASSERT_OK(vt_skip(vt, 10, 1));
    ASSERT_OK(vt_feed(vt, "\x1b[5AX\n", 6, 0));
    ASSERT_OK(vt_finish(vt));
    vt_free(vt);
    ASSERT_EQ(g.n, 3);
    ASSERT_STR(g.text[2], "X");
    ASSERT_EQ(g.line[2].row, 2);
    ASSERT_EQ(g.line[2].kind, SQ_LINE_COMPLETE);
    got_free(&g);
}

TEST(vt_partial_line_after_the_wait_then_whole_on_newline)
{
    struct got g = {0};
    vt_t *vt;
    ASSERT_OK(vt_new(got_line, &g, &vt));
    ASSERT_OK(vt_feed(vt, "Password: ", 10, 1000));
    ASSERT_OK(vt_tick(vt, 1000 + SQ_PARTIAL_MS - 1));
    ASSERT_EQ(g.n, 0);
    ASSERT_OK(vt_tick(vt, 1000 + SQ_PARTIAL_MS));
    ASSERT_EQ(g.n, 1);
    ASSERT_EQ(g.line[0].kind, SQ_LINE_PARTIAL);
    ASSERT_STR(g.text[0], "Password: ");
    ASSERT_OK(vt_tick(vt, 5000)); /* once per wait */
    ASSERT_EQ(g.n, 1);
    ASSERT_OK(vt_feed(vt, "\n", 1, 6000));
    ASSERT_EQ(g.n, 2);
    ASSERT_EQ(g.line[1].kind, SQ_LINE_COMPLETE);
    ASSERT_EQ(g.line[1].lineno, 1);
    uint64_t raw, lines, text;
    vt_counts(vt, &raw, &lines, &text);
    ASSERT_EQ(raw, 11);
    ASSERT_EQ(lines, 1);
    ASSERT_EQ(text, 11);
    vt_free(vt);
    got_free(&g);
}

TEST(vt_long_line_is_cut_at_the_limit_on_a_char_boundary)
{
    struct got g = {0};
    size_t n = SQ_LINE_MAX + 10;
    char *s = malloc(n + 1);
    memset(s, 'a', n);
    s[n] = '\n';
    vt_run(s, n + 1, 4096, &g);
    ASSERT_EQ(g.n, 2);
    ASSERT_EQ(strlen(g.text[0]), SQ_LINE_MAX);
    ASSERT_TRUE(g.line[0].cut);
    ASSERT_EQ(strlen(g.text[1]), 10);
    ASSERT_TRUE(g.line[1].cut);
    ASSERT_EQ(g.line[0].lineno, 1);
    ASSERT_EQ(g.line[1].lineno, 1);
    got_free(&g);

    /* Exactly at the limit: one line, not cut. */
    memset(s, 'a', SQ_LINE_MAX);
    s[SQ_LINE_MAX] = '\n';
    vt_run(s, SQ_LINE_MAX + 1, 0, &g);
    ASSERT_EQ(g.n, 1);
    ASSERT_FALSE(g.line[0].cut);
    got_free(&g);

    /* A 2-byte character straddling the limit moves to the next piece. */
    memset(s, 'a', SQ_LINE_MAX - 1);
    s[SQ_LINE_MAX - 1] = '\xc3';
    s[SQ_LINE_MAX] = '\xa9';
    s[SQ_LINE_MAX + 1] = '\n';
    vt_run(s, SQ_LINE_MAX + 2, 0, &g);
    ASSERT_EQ(g.n, 2);
    ASSERT_EQ(strlen(g.text[0]), SQ_LINE_MAX - 1);
    ASSERT_STR(g.text[1], "\xc3\xa9");
    got_free(&g);
    free(s);
}

TEST(vt_repair_that_grows_a_line_past_the_limit_cuts_it_again)
{
    /* one invalid byte in twenty: repaired, not binary, and > SQ_LINE_MAX */
    struct got g = {0};
    size_t n = SQ_LINE_MAX;
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        s[i] = i % 20 ? 'a' : '\xff';
    s[n] = '\n';
    vt_run(s, n + 1, 0, &g);
    ASSERT_EQ(g.n, 2);
    ASSERT_TRUE(g.line[0].cut && g.line[1].cut);
    ASSERT_TRUE(g.line[0].len <= SQ_LINE_MAX);
    ASSERT_EQ(g.line[0].len + g.line[1].len, n + (n + 19) / 20 * 2);
    got_free(&g);
    free(s);
}

TEST(vt_binary_lines_carry_their_range_and_text_only_if_repaired)
{
    struct got g = {0};
    static const char bin[] = "text\n\x01\x02\x03\x00\x04\x05zz\nmore\n";
    vt_run(bin, sizeof bin - 1, 0, &g);
    ASSERT_EQ(g.n, 3);
    ASSERT_EQ(g.line[1].kind, SQ_LINE_BINARY);
    ASSERT_EQ(g.line[1].len, 0);
    ASSERT_EQ(g.line[1].raw_start, 5);
    ASSERT_EQ(g.line[1].raw_end, 14);
    ASSERT_STR(g.text[2], "more");
    got_free(&g);
    /* SO and SI shift character sets, as `tput sgr0` does under screen,
     * tmux and the linux console: nothing shown, not binary. */
    RUN("ok\033[m\017\n\016x\017\n", &g);
    ASSERT_EQ(g.n, 2);
    ASSERT_EQ(g.line[0].kind, SQ_LINE_COMPLETE);
    ASSERT_STR(g.text[0], "ok");
    ASSERT_STR(g.text[1], "x");
    got_free(&g);
    /* Invalid UTF-8 in mostly text: repaired, not binary. */
    RUN("caf\xe9 ok here\n", &g);
    ASSERT_EQ(g.line[0].kind, SQ_LINE_COMPLETE);
    ASSERT_STR(g.text[0], "caf" UTF8_REPLACEMENT " ok here");
    got_free(&g);
    /* Too much of it invalid: binary, but with its repaired text, for
     * the classifier to find a hazard in. */
    RUN("e: \xab\xbb" "f\xab\xbb\n", &g);
    ASSERT_EQ(g.line[0].kind, SQ_LINE_BINARY);
    ASSERT_STR(g.text[0], "e: " UTF8_REPLACEMENT UTF8_REPLACEMENT "f"
                          UTF8_REPLACEMENT UTF8_REPLACEMENT);
    got_free(&g);
}

TEST(vt_unterminated_string_gives_up_at_its_limit)
{
    struct got g = {0};
    size_t n = VT_STRING_MAX + 100;
    char *s = malloc(n + 8);
    memcpy(s, "\x1b]0;", 4);
    memset(s + 4, 'x', n - 4);
    memcpy(s + n, "\nok\n", 4);
    vt_run(s, n + 4, 1000, &g);
    ASSERT_TRUE(g.n >= 1);
    ASSERT_STR(g.text[g.n - 1], "ok");
    got_free(&g);
    free(s);
}

TEST(vt_any_chunking_gives_the_same_lines)
{
    static const char in[] =
        "\x1b[1;31merr\xc3\xa9\x1b[0m\r\n\xe2\xa0\x99\x1b[1G\x1b[0Kspin\r\n"
        "\rbar 1%\rbar 100%\r\n\x1b]0;t\x07tail\x1b[K\n"
        /* a wide character over narrow ones, split by a read; a REP
         * after a stray byte; a backspace into a wide character */
        "abc\r\xe4\xb8\xad\n \x80\x1b[b\n"
        "\xe4\xb8\x96\xe7\x95\x8c\b\x1b[K\n"
        /* a byte that leads no character, with three after it */
        "uz\r\xf8\x8b\x9e\x96\n";
    struct got whole = {0}, part = {0};
    vt_run(in, sizeof in - 1, 0, &whole);
    for (size_t chunk = 1; chunk < 9; chunk++) {
        vt_run(in, sizeof in - 1, chunk, &part);
        ASSERT_EQ(part.n, whole.n);
        for (size_t i = 0; i < whole.n; i++) {
            ASSERT_STR(part.text[i], whole.text[i]);
            ASSERT_EQ(part.line[i].kind, whole.line[i].kind);
            ASSERT_EQ(part.line[i].colours, whole.line[i].colours);
            ASSERT_EQ(part.line[i].raw_end, whole.line[i].raw_end);
        }
        got_free(&part);
    }
    got_free(&whole);
}

/* An input that makes one line, and the text that line must have. */
struct one_line {
    const char *in, *want;
};

/* Runs each case through the stripper whole: one line, with its text. */
static void expect_one_line(const struct one_line *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct got g = {0};
        vt_run(c[i].in, strlen(c[i].in), 0, &g);
        ASSERT_EQ(g.n, 1);
        ASSERT_STR(g.text[0], c[i].want);
        got_free(&g);
    }
}

/* Line editing as readline and ncurses do it: DCH deletes characters at
 * the cursor (the rest moves left), ICH opens blanks, ECH blanks them in
 * place, REP prints the last character again; ncurses' boxes in DEC's
 * line-drawing set.  Each was ignored, and
 * bash's `left left left backspace` in `echo abcdef` read `echo abdeff`. */
TEST(vt_delete_insert_erase_and_repeat_characters)
{
    static const struct one_line cases[] = {
        {"hello world\x1b[6D\x1b[3Pxy\n", "helloxyd"},
        {"hello\x1b[3D\x1b[2@XY\n", "heXYllo"},
        {"hello world\r\x1b[3Xq\n", "q  lo world"},
        {"echo abcdef\b\b\b\b\x1b[1Pdef\b\b\b\n", "echo abdef"},
        {"ab\xc3\xa9" "cd\r\x1b[2C\x1b[P\n", "abcd"},   /* a whole é */
        {"ab\xc3\xa9" "cd\r\x1b[2C\x1b[X\n", "ab cd"},  /* one blank */
        {"abc\x1b[5P\n", "abc"},                     /* past the end */
        {"abc\r\x1b[9P\n", ""},
        {"x\x1b[4b\n", "xxxxx"},
        {"a\xc3\xa9\x1b[2b\n", "a\xc3\xa9\xc3\xa9\xc3\xa9"},
        {"\x1b[3bz\n", "z"},                         /* nothing to repeat */
        /* DEC line drawing in G0 (ncurses' smacs and rmacs) */
        {"\x1b(0lqqqk\x1b(B\n",
         "\xe2\x94\x8c\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x90"},
        {"a\x1b(0x\x1b(Bx\n", "a\xe2\x94\x82x"},
        {"\x1b(0q\x1b[2b\x1b(B\n", "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"},
    };
    expect_one_line(cases, sizeof cases / sizeof cases[0]);
    /* REP stops at the margin, as a move does */
    struct got g = {0};
    RUN("x\x1b[65535b\n", &g);
    ASSERT_EQ(g.line[0].len, VT_PAD_MAX);
    got_free(&g);
}

/* Columns are cells: a wide character takes two, a combining mark none.
 * Moves and backspaces land where a terminal's do, a move into a wide
 * character on its right half, and writing there leaves a blank in its
 * left.  Counted as code points, `中文abc ESC[5G x` read `中文abx`, and a
 * backspace over `界` in bash's `echo 世界` took `世` with it. */
TEST(vt_wide_and_combining_characters_take_their_cells)
{
    static const struct one_line cases[] = {
        {"\xe4\xb8\xad\xe6\x96\x87" "abc\x1b[5Gx\n",
         "\xe4\xb8\xad\xe6\x96\x87" "xbc"},
        {"e\xcc\x81" "abc\x1b[3Gx\n", "e\xcc\x81" "axc"},
        /* readline: two backspaces over a wide character, then EL */
        {"echo \xe4\xb8\x96\xe7\x95\x8c\b\b\x1b[K\n",
         "echo \xe4\xb8\x96"},
        /* one backspace: its right half; EL leaves its left blank */
        {"\xe4\xb8\x96\xe7\x95\x8c\b\x1b[K\n", "\xe4\xb8\x96 "},
        /* a narrow character over a wide one's left or right half */
        {"\xe4\xb8\xad\xe6\x96\x87\rx\n", "x \xe6\x96\x87"},
        {"a\xe4\xb8\xad\x1b[3Gz\n", "a z"},
        /* a wide character over two narrow ones */
        {"abc\r\xe4\xb8\xad\n", "\xe4\xb8\xad" "c"},
        /* ECH blanks a wide character's two cells */
        {"\xe4\xb8\x96\xe7\x95\x8c\r\x1b[1X\n", "  \xe7\x95\x8c"},
        /* CUB over a combining mark's cell: the mark stays with it */
        {"ae\xcc\x81" "b\x1b[2DX\n", "aXb"},
    };
    expect_one_line(cases, sizeof cases / sizeof cases[0]);
}

/* A flood of moves past the end of the line opens no more than the margin
 * allows: 2000 `x ESC[1000C` made two million bytes of blanks (the view
 * a hundred times the output), and each move counted the whole line. */
TEST(vt_moves_past_the_end_stop_at_the_margin)
{
    buf_t in = BUF_INIT;
    for (int i = 0; i < 2000; i++)
        ASSERT_OK(buf_append_str(&in, "x\x1b[1000C"));
    ASSERT_OK(buf_append_str(&in, "end\n"));
    struct got g = {0};
    vt_run(in.p, in.len, 0, &g);
    size_t total = 0;
    for (size_t i = 0; i < g.n; i++)
        total += g.line[i].len;
    ASSERT_INT(total, <=, VT_PAD_MAX + 2000 + 3);
    ASSERT_STR(g.text[g.n - 1] + strlen(g.text[g.n - 1]) - 3, "end");
    got_free(&g);
    buf_free(&in);
}

TEST(vt_csi_parameters_clamp_at_their_limits)
{
    struct got g = {0};
    /* a cursor move goes no further than column VT_PAD_MAX past the end
     * of the line: `ESC[65535G` used to make 64 KiB of blanks, cutting
     * the text after it in two (an "error" lost across the cut) */
    RUN("a\x1b[99999999Gb\n", &g);
    ASSERT_EQ(g.n, 1);
    ASSERT_EQ(g.line[0].len, VT_PAD_MAX + 1);
    ASSERT_EQ(g.text[0][VT_PAD_MAX], 'b');
    ASSERT_FALSE(g.line[0].cut);
    got_free(&g);
    char esc[32];
    snprintf(esc, sizeof esc, "\x1b[%uGx\n", VT_PAD_MAX + 1); /* the edge */
    vt_run(esc, strlen(esc), 0, &g);
    ASSERT_EQ(g.line[0].len, VT_PAD_MAX + 1);
    got_free(&g);
    snprintf(esc, sizeof esc, "\x1b[%uGx\n", VT_PAD_MAX + 2); /* past it */
    vt_run(esc, strlen(esc), 0, &g);
    ASSERT_EQ(g.line[0].len, VT_PAD_MAX + 1);
    got_free(&g);
    RUN("\x1b[65535Cerror: disk full\n", &g);
    ASSERT_EQ(g.n, 1);
    ASSERT_EQ(g.line[0].len, VT_PAD_MAX + 16);
    got_free(&g);
    /* more than VT_PARAMS_MAX parameters: the extra ones are ignored */
    RUN("\x1b[0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;31mred\x1b[0m\n", &g);
    ASSERT_EQ(g.line[0].colours, 0);
    got_free(&g);
    RUN("\x1b[0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;31mred\x1b[0m\n", &g);
    ASSERT_EQ(g.line[0].colours, SQ_COLOUR_RED);
    got_free(&g);
}
