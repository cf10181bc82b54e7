/*
 * test_redraw.c — a row's last frame (squash/redraw.h): rows drawn again
 * by a move back up (docker's layer bars, a log-update block) give their
 * last frame, the others come out marked, every line once and in order;
 * a streamed view holds nothing until a row is drawn again; lines out of
 * reach leave before the end; the hold's line and byte bounds at their
 * edges; a status bar aside replaced and erased; a cut line passes after
 * what was held; and the squasher's views of a redrawn pull: only each
 * layer's last frame, an error frame kept, a quiet spell showing what
 * waits; told the terminal's width, moves count a wide line's wrapped
 * rows, so an Ink block with one keeps the lines written above it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "harness.h"
#include "squash/grammar.h"
#include "squash/redraw.h"
#include "squash/squash.h"
#include "squash/vt.h"
#include "tutil.h"

/* What left the hold, in order. */
struct got {
    buf_t text;  /* each line, then '\n' */
    buf_t marks; /* 'R' for a line marked redrawn, '.' for one not */
    buf_t kept;  /* each line kept (REDRAW_KEPT), then '\n' */
    uint64_t last_lineno; /* of the last line not redrawn */
    uint64_t lines;       /* all that came */
    uint32_t frames_max;
    bool out_of_order;
};

static int got_line(const sq_line_t *l, redraw_how_t how, void *data)
{
    struct got *g = data;
    bool redrawn = how != REDRAW_SHOWN;
    /* a frame drawn over comes as it is replaced; the rest in order */
    if (!redrawn && l->lineno <= g->last_lineno)
        g->out_of_order = true;
    if (!redrawn)
        g->last_lineno = l->lineno;
    g->lines++;
    if (!redrawn && l->frames > g->frames_max)
        g->frames_max = l->frames;
    int rc = buf_append_byte(&g->marks, redrawn ? 'R' : '.');
    if (rc == 0 && how == REDRAW_KEPT &&
        (rc = buf_append(&g->kept, l->text, l->len)) == 0)
        rc = buf_append_byte(&g->kept, '\n');
    if (rc == 0 && !redrawn)
        rc = buf_append(&g->text, l->text, l->len);
    if (rc == 0 && !redrawn)
        rc = buf_append_byte(&g->text, '\n');
    return rc;
}

/* How many lines came marked redrawn. */
static size_t redraw_count_of(const struct got *g)
{
    return g->marks.len ? buf_count(g->marks.p, g->marks.len, 'R') : 0;
}

static int to_hold(const sq_line_t *l, void *data)
{
    return redraw_put(data, l);
}

/* A stripper (told the terminal's width, 0: unknown) feeding a hold of
 * base rows, whose lines go to g. */
struct pipe {
    vt_t *vt;
    redraw_t *rd;
};

static void pipe_open(struct pipe *p, unsigned base, unsigned cols,
                      redraw_keep_fn keep, struct got *g)
{
    ASSERT_OK(redraw_new(base, got_line, keep, g, &p->rd));
    ASSERT_OK(vt_new(to_hold, p->rd, &p->vt));
    vt_set_cols(p->vt, cols);
    vt_set_keep(p->vt, keep, g);
}

static void pipe_feed(struct pipe *p, const char *s)
{
    ASSERT_OK(vt_feed(p->vt, s, strlen(s), 0));
}

/* Ends the stream and flushes the hold, then lets both go. */
static void pipe_close(struct pipe *p)
{
    ASSERT_OK(vt_finish(p->vt));
    ASSERT_OK(redraw_flush(p->rd));
    vt_free(p->vt);
    redraw_free(p->rd);
}

static void got_free(struct got *g)
{
    buf_free(&g->text);
    buf_free(&g->marks);
    buf_free(&g->kept);
}

/* Draws as docker's progress display does (one row per layer id, made by
 * a line feed below the others; a frame of a row: move up to it, erase
 * it, carriage return, the text, carriage return, move back down), with
 * `steps` frames of each layer's bar, then `last` for each layer: a pull
 * of n layers.  A plain line clears the rows docker redraws.  err_at: the
 * step at which layer 0 draws an error frame, or -1. */
static const char *const layer_ids[] = {"0a1b2c3d4e5f", "1b2c3d4e5f60",
                                        "2c3d4e5f6071", "3d4e5f607182"};

static void docker_pull(buf_t *b, int n, int steps, const char *last,
                        int err_at)
{
    ASSERT_TRUE(n <= (int)(sizeof layer_ids / sizeof *layer_ids));
    ASSERT_OK(buf_append_str(b, "Using default tag: latest\n"
                                "latest: Pulling from library/python\n"));
    for (int i = 0; i < n; i++)
        ASSERT_OK(buf_printf(b, "\n\x1b[1A\x1b[2K\r%s: Pulling fs layer "
                                "\r\x1b[1B", layer_ids[i]));
    for (int s = 0; s <= steps; s++)
        for (int i = 0; i < n; i++) {
            int up = n - i;
            ASSERT_OK(buf_printf(b, "\x1b[%dA\x1b[2K\r", up));
            if (s == err_at && i == 0)
                ASSERT_OK(buf_printf(b, "%s: error: unexpected EOF, "
                                        "retrying\r", layer_ids[i]));
            else if (s < steps)
                ASSERT_OK(buf_printf(b, "%s: Downloading [%.*s>%*s] "
                                        "%dMB/%dMB\r", layer_ids[i], s,
                                     "====================", steps - s, "",
                                     s, steps));
            else
                ASSERT_OK(buf_printf(b, "%s: %s\r", layer_ids[i], last));
            ASSERT_OK(buf_printf(b, "\x1b[%dB", up));
        }
    ASSERT_OK(buf_append_str(b, "Digest: sha256:0123abcd\n"
                                "Status: Downloaded newer image for "
                                "python:latest\n"));
}

/* Feeds raw through a stripper (told the terminal's width, 0: unknown)
 * into a hold of base rows, flushing at the end. */
static void through_at(const buf_t *raw, unsigned base, unsigned cols,
                       struct got *g)
{
    struct pipe p;
    pipe_open(&p, base, cols, NULL, g);
    ASSERT_OK(vt_feed(p.vt, raw->p, raw->len, 0));
    pipe_close(&p);
}

static void through(const buf_t *raw, unsigned base, struct got *g)
{
    through_at(raw, base, 0, g);
}

/* Feeds the text in through a stripper (cols: the terminal's width, 0:
 * unknown) whose frames meet keep, into a hold of REDRAW_REACH rows. */
static void through_text(const char *in, unsigned cols, redraw_keep_fn keep,
                         struct got *g)
{
    struct pipe p;
    pipe_open(&p, REDRAW_REACH, cols, keep, g);
    pipe_feed(&p, in);
    pipe_close(&p);
}

TEST(redraw_a_row_drawn_again_gives_its_last_frame)
{
    buf_t raw = BUF_INIT;
    docker_pull(&raw, 3, 10, "Pull complete", -1);
    struct got g = {0};
    through(&raw, REDRAW_REACH, &g);
    /* every line once, in order; only each layer's last frame unmarked,
     * with the frames it replaced counted */
    ASSERT_FALSE(g.out_of_order);
    ASSERT_EQ(g.last_lineno, g.marks.len);
    ASSERT_STR(g.text.p, "Using default tag: latest\n"
                         "latest: Pulling from library/python\n"
                         "0a1b2c3d4e5f: Pull complete\n"
                         "1b2c3d4e5f60: Pull complete\n"
                         "2c3d4e5f6071: Pull complete\n"
                         "Digest: sha256:0123abcd\n"
                         "Status: Downloaded newer image for python:latest\n");
    ASSERT_EQ(g.marks.len - buf_count(g.marks.p, g.marks.len, 'R'), 7);
    ASSERT_TRUE(g.frames_max >= 11);
    got_free(&g);
    buf_free(&raw);
}

/* A streamed view (base 0): output that never redraws is never held, so
 * each line leaves while it is put; a block drawn once and then again
 * keeps its first frame (it had left) and its last. */
TEST(redraw_a_streamed_view_holds_only_after_a_row_is_drawn_again)
{
    struct got g = {0};
    struct pipe p;
    pipe_open(&p, 0, 0, NULL, &g);
    pipe_feed(&p, "one\ntwo\n");
    ASSERT_STR(g.text.p, "one\ntwo\n");
    pipe_feed(&p, "a 1\nb 1\n");
    ASSERT_STR(g.text.p, "one\ntwo\na 1\nb 1\n");
    pipe_feed(&p, "\x1b[2Aa 2\nb 2\n");
    pipe_feed(&p, "\x1b[2Aa 3\nb 3\n");
    ASSERT_STR(g.text.p, "one\ntwo\na 1\nb 1\n"); /* held */
    ASSERT_EQ(redraw_count(p.rd), 2);
    pipe_close(&p);
    ASSERT_STR(g.text.p, "one\ntwo\na 1\nb 1\na 3\nb 3\n");
    ASSERT_STR(g.marks.p, "....RR..");
    ASSERT_FALSE(g.out_of_order);
    got_free(&g);
}

/* Once rows are drawn again two deep, a line more than two rows above the
 * lowest leaves at once: lines printed above a live block of two rows
 * (as a test runner prints results above its summary) are not kept for
 * the end. */
TEST(redraw_lines_out_of_reach_leave_before_the_end)
{
    struct got g = {0};
    struct pipe p;
    pipe_open(&p, 0, 0, NULL, &g);
    pipe_feed(&p, "s 1\nt 1\n\x1b[2As 2\nt 2\n");
    ASSERT_STR(g.text.p, "s 1\nt 1\n");
    /* a result printed where the block was, the block drawn below it:
     * each time, the line three rows above the cursor's is out of reach */
    for (int i = 0; i < 5; i++) {
        char b[64];
        snprintf(b, sizeof b, "\x1b[2Aresult %d\ns %d\nt %d\n", i, i + 3,
                 i + 3);
        pipe_feed(&p, b);
    }
    ASSERT_STR(g.text.p, "s 1\nt 1\nresult 0\nresult 1\nresult 2\n"
                         "result 3\nresult 4\n");
    pipe_close(&p);
    ASSERT_STR(g.text.p, "s 1\nt 1\nresult 0\nresult 1\nresult 2\n"
                         "result 3\nresult 4\ns 7\nt 7\n");
    ASSERT_FALSE(g.out_of_order);
    got_free(&g);
}

static sq_line_t aside_line(uint64_t lineno, uint32_t at, const char *text,
                            size_t len)
{
    return (sq_line_t){.text = text, .len = len, .lineno = lineno,
                       .row = SQ_ROW_ASIDE, .aside_at = at,
                       .kind = SQ_LINE_COMPLETE};
}

/* Rows aside that nothing draws again never go out of reach: the hold's
 * bounds let them go, the oldest first, at REDRAW_MAX_LINES lines and
 * REDRAW_MAX_BYTES bytes exactly. */
TEST(redraw_the_hold_lets_the_oldest_go_at_its_bounds)
{
    struct got g = {0};
    redraw_t *rd;
    ASSERT_OK(redraw_new(REDRAW_REACH, got_line, NULL, &g, &rd));
    uint64_t n = 0;
    for (uint32_t at = 1; at <= REDRAW_MAX_LINES; at++) {
        sq_line_t l = aside_line(++n, at, "x", 1);
        ASSERT_OK(redraw_put(rd, &l));
    }
    ASSERT_EQ(g.marks.len, 0);
    sq_line_t l = aside_line(++n, REDRAW_MAX_LINES + 1, "x", 1);
    ASSERT_OK(redraw_put(rd, &l));
    ASSERT_EQ(g.marks.len, 1);
    ASSERT_EQ(g.last_lineno, 1);
    ASSERT_OK(redraw_flush(rd));
    ASSERT_EQ(g.marks.len, REDRAW_MAX_LINES + 1);
    ASSERT_FALSE(g.out_of_order);
    redraw_free(rd);
    got_free(&g);

    /* bytes: four lines of a quarter each fill the hold; a fifth byte
     * more pushes the first out */
    struct got h = {0};
    ASSERT_OK(redraw_new(REDRAW_REACH, got_line, NULL, &h, &rd));
    size_t q = REDRAW_MAX_BYTES / 4;
    char *big = malloc(q + 1);
    ASSERT_TRUE(big != NULL);
    memset(big, 'y', q + 1);
    for (uint32_t i = 1; i <= 4; i++) {
        sq_line_t b = aside_line(i, i, big, q);
        ASSERT_OK(redraw_put(rd, &b));
    }
    ASSERT_EQ(h.marks.len, 0);
    sq_line_t one = aside_line(5, 5, big, 1);
    ASSERT_OK(redraw_put(rd, &one));
    ASSERT_EQ(h.marks.len, 1);
    /* a cut line (a piece of one longer than SQ_LINE_MAX) is never held:
     * what was held leaves first */
    sq_line_t cut = aside_line(6, 6, big, q);
    cut.cut = true;
    ASSERT_OK(redraw_put(rd, &cut));
    ASSERT_EQ(h.marks.len, 6);
    ASSERT_EQ(h.last_lineno, 6);
    ASSERT_FALSE(h.out_of_order);
    free(big);
    redraw_free(rd);
    got_free(&h);
}

/* A status bar aside (apt's, at the screen's last row) drawn again
 * replaces its last frame; an erase from its row down replaces the one
 * standing, a clear of the whole screen does not. */
TEST(redraw_a_status_bar_aside_is_replaced_then_erased)
{
    struct got g = {0};
    redraw_t *rd;
    ASSERT_OK(redraw_new(0, got_line, NULL, &g, &rd));
    sq_line_t a = aside_line(1, 24, "Progress: [ 10%]", 16);
    ASSERT_OK(redraw_put(rd, &a)); /* first frame: nothing redraws yet */
    ASSERT_STR(g.marks.p, ".");
    sq_line_t b = aside_line(2, 24, "Progress: [ 60%]", 16);
    b.kind = SQ_LINE_OVERWRITE;
    ASSERT_OK(redraw_put(rd, &b));
    sq_line_t c = aside_line(3, 24, "Progress: [ 90%]", 16);
    c.kind = SQ_LINE_OVERWRITE;
    ASSERT_OK(redraw_put(rd, &c));
    /* a clear of the whole screen takes nothing: what it showed was
     * shown */
    sq_line_t clear = aside_line(4, 0, "", 0);
    clear.kind = SQ_LINE_OVERWRITE;
    clear.aside_from = 1;
    ASSERT_OK(redraw_put(rd, &clear));
    sq_line_t erase = aside_line(5, 0, "", 0);
    erase.kind = SQ_LINE_OVERWRITE;
    erase.aside_from = 24;
    ASSERT_OK(redraw_put(rd, &erase));
    ASSERT_OK(redraw_flush(rd));
    ASSERT_STR(g.marks.p, ".RR..");
    ASSERT_STR(g.text.p, "Progress: [ 10%]\n\n\n");
    redraw_free(rd);
    ASSERT_EQ(redraw_new(REDRAW_REACH + 1, got_line, NULL, &g, &rd), -EINVAL);
    ASSERT_TRUE(rd == NULL);
    redraw_free(NULL);
    got_free(&g);
}

static void collect(const char *t, size_t n, void *d)
{
    buf_append(d, t, n);
}

/* The squasher's views of a pull: each layer's last frame and none of
 * its bars, which the noise marker counts as progress; an error a layer
 * drew and then drew over is still shown. */
TEST(squash_a_redrawn_pull_shows_each_layers_last_frame)
{
    struct grammar_set *set = tu_shipped_set();
    buf_t raw = BUF_INIT, out = BUF_INIT;
    docker_pull(&raw, 4, 20, "Pull complete", -1);
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(set, "docker pull python", &raw, streamed, 0, 0, &out);
        ASSERT_NOT_CONTAINS(out.p, "Downloading");
        ASSERT_CONTAINS(out.p, "0a1b2c3d4e5f: Pull complete\n");
        ASSERT_CONTAINS(out.p, "Status: Downloaded newer image for "
                               "python:latest\n");
        if (streamed) {
            ASSERT_CONTAINS(out.p, "[rein] repeat 4× \"{} Pull complete\"");
            ASSERT_CONTAINS(out.p, "progress ");
        }
    }
    /* deferred: small, so shown whole as the screen ended, without one
     * stale first frame */
    tu_condense(set, "docker pull python", &raw, false, 0, 0, &out);
    ASSERT_NOT_CONTAINS(out.p, "Pulling fs layer");
    ASSERT_CONTAINS(out.p, "3d4e5f607182: Pull complete\nDigest:");
    buf_reset(&raw);
    docker_pull(&raw, 4, 20, "Pull complete", 7);
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(set, "docker pull python", &raw, streamed, 0, 1, &out);
        ASSERT_NOT_CONTAINS(out.p, "Downloading");
        ASSERT_CONTAINS(out.p, "0a1b2c3d4e5f: error: unexpected EOF, "
                               "retrying\n");
    }
    buf_free(&raw);
    buf_free(&out);
    grammar_set_free(set);
}

/* A streamed view holds the rows a redraw may still reach; a quiet spell
 * shows them as they stand. */
TEST(squash_a_quiet_spell_shows_the_rows_a_redraw_holds)
{
    sq_opts_t o = {.command = "docker pull python"};
    buf_t out = BUF_INIT;
    squash_t *sq;
    ASSERT_OK(squash_new(&o, collect, &out, &sq));
    const char *blk = "fetch a 1%\nfetch b 1%\n\x1b[2Afetch a 50%\n"
                      "fetch b 70%\n";
    ASSERT_OK(squash_feed(sq, blk, strlen(blk), 10));
    ASSERT_NOT_CONTAINS(out.p ? out.p : "", "50%");
    ASSERT_OK(squash_tick(sq, 10 + SQ_QUIET_MS));
    ASSERT_CONTAINS(out.p, "fetch a 50%\nfetch b 70%\n");
    ASSERT_OK(squash_finish(sq, 0, 5, 20));
    ASSERT_CONTAINS(out.p, "[rein] exit 0");
    squash_free(sq);
    buf_free(&out);
}

/* As Ink and log-update draw: a block of a row wider than the terminal
 * and a progress row, erased (ESC[2K, then ESC[1A, once per screen row
 * the block took: the wide row is two) to write a line that stays, then
 * drawn again below it.  Told the width, the stripper counts the wide
 * row as the two rows it wrapped to, so the erase ends where the block
 * began and every line written to stay is kept.  Counting it as one
 * row, the erase went a row too far and took the line above the block
 * with it, each time. */
TEST(redraw_a_block_wider_than_the_terminal_keeps_the_lines_above_it)
{
    const char *wide = "Compiling src/components/a-directory-name-long-enough/"
                       "to-wrap-past-the-right-margin-of-a-terminal-that-is-"
                       "eighty-columns/Widget.tsx";
    ASSERT_TRUE(strlen(wide) > 80 && strlen(wide) <= 160);
    const char *kept[] = {"warning: package foo is deprecated",
                          "Built chunk main.js (120 kB)",
                          "Built chunk vendor.js (900 kB)",
                          "Build finished with 1 warning"};
    buf_t raw = BUF_INIT;
    ASSERT_OK(buf_printf(&raw, "Starting build\n%s\nProgress 0%%\n", wide));
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(buf_append_str(&raw, "\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K"
                                       "\x1b[1A\x1b[2K\x1b[G"));
        ASSERT_OK(buf_printf(&raw, "%s\n", kept[i]));
        if (i < 3)
            ASSERT_OK(buf_printf(&raw, "%s\nProgress %d%%\n", wide,
                                 30 * (i + 1)));
    }
    struct got g = {0};
    through_at(&raw, REDRAW_REACH, 80, &g);
    ASSERT_STR(g.text.p, "Starting build\n"
                         "warning: package foo is deprecated\n"
                         "Built chunk main.js (120 kB)\n"
                         "Built chunk vendor.js (900 kB)\n"
                         "\n" /* the progress row, erased */
                         "Build finished with 1 warning\n");
    ASSERT_FALSE(g.out_of_order);
    got_free(&g);
    /* the squasher told the width shows them */
    sq_opts_t o = {.command = "node build.js", .cols = 80, .deferred = true};
    buf_t out = BUF_INIT;
    ASSERT_OK(squash_buffer(&o, raw.p, raw.len, 0, 0, &out));
    for (int i = 0; i < 4; i++)
        ASSERT_CONTAINS(out.p, kept[i]);
    ASSERT_NOT_CONTAINS(out.p, "Progress");
    buf_free(&out);
    buf_free(&raw);
}

/* A move within a row wider than the terminal stays on it; one past it
 * goes on to the rows beyond, down as up; unknown width, every line is a
 * row. */
TEST(redraw_moves_count_the_rows_a_wide_line_wrapped_to)
{
    struct got g = {0};
    buf_t raw = BUF_INIT;
    /* rows: "top", a 50-cell line (three rows of 20), "low"; up 3 from
     * the row below "low" lands on the wide line's middle piece, and a
     * move down 3 from there comes back to the row below "low": the
     * erase between takes the wide line, not "top" */
    const char *w50 = "01234567890123456789012345678901234567890123456789";
    ASSERT_OK(buf_printf(&raw, "top\n%s\nlow\n\x1b[3A\x1b[2K\x1b[3Bend\n",
                         w50));
    through_at(&raw, REDRAW_REACH, 20, &g);
    ASSERT_STR(g.text.p, "top\nlow\n\nend\n");
    got_free(&g);
    /* each line one row: the same moves go to "top" and back */
    memset(&g, 0, sizeof g);
    through_at(&raw, REDRAW_REACH, 0, &g);
    buf_t want = BUF_INIT;
    ASSERT_OK(buf_printf(&want, "%s\nlow\n\nend\n", w50));
    ASSERT_STR(g.text.p, want.p);
    buf_free(&want);
    /* within the wide line: up 1 from its last piece is its middle one,
     * at the same column; a carriage return there still starts the
     * line */
    buf_reset(&raw);
    got_free(&g);
    memset(&g, 0, sizeof g);
    ASSERT_OK(buf_printf(&raw, "%s\x1b[1AXY\rZ\n", w50));
    through_at(&raw, REDRAW_REACH, 20, &g);
    ASSERT_STR(g.text.p, "Z12345678901234567890123456789XY2345678901234567"
                         "89\n");
    got_free(&g);
    buf_free(&raw);
}

/* A row that waits unchanged (a layer `Waiting` while others download)
 * stays held however often the rows below it redraw: their frames are
 * handed on as they are replaced, and the hold closes up their places
 * rather than push the waiting row out at REDRAW_MAX_LINES. */
TEST(redraw_a_waiting_row_outlasts_a_thousand_frames_below_it)
{
    struct got g = {0};
    struct pipe p;
    pipe_open(&p, REDRAW_REACH, 0, NULL, &g);
    pipe_feed(&p, "layer1: Waiting\nlayer2: 0%\n");
    for (int i = 1; i <= 4 * (int)REDRAW_MAX_LINES; i++) {
        char b[64];
        snprintf(b, sizeof b, "\x1b[1A\x1b[2Klayer2: %d%%\n", i);
        pipe_feed(&p, b);
    }
    ASSERT_EQ(g.text.len, 0); /* nothing but replaced frames out yet */
    ASSERT_EQ(g.lines, 4 * REDRAW_MAX_LINES);
    pipe_feed(&p, "\x1b[2Alayer1: Pull complete\n");
    pipe_close(&p);
    char want[64];
    /* in line order: layer2's last frame came before layer1's */
    snprintf(want, sizeof want, "layer2: %u%%\nlayer1: Pull complete\n",
             4 * REDRAW_MAX_LINES);
    ASSERT_STR(g.text.p, want);
    ASSERT_FALSE(g.out_of_order);
    got_free(&g);
}

static bool keep_errors(const sq_line_t *l, void *data)
{
    (void)data;
    return memmem(l->text, l->len, "error", 5) != NULL;
}

/* A frame `keep` wants comes in its turn, marked; the others as they are
 * replaced. */
TEST(redraw_a_kept_frame_comes_in_line_order)
{
    struct got g = {0};
    struct pipe p;
    pipe_open(&p, REDRAW_REACH, 0, keep_errors, &g);
    pipe_feed(&p, "head\nfetch 10%\n\x1b[1Afetch error, retrying\n"
                  "\x1b[1Afetch 90%\n\x1b[1Afetch done\ntail\n");
    ASSERT_STR(g.marks.p, "RR"); /* `fetch 10%` and `90%`, at once */
    pipe_close(&p);
    ASSERT_STR(g.marks.p, "RR.R.."); /* head, the error, done, tail */
    ASSERT_FALSE(g.out_of_order);
    got_free(&g);
}

/* From the newest row, a move down (ESC[E, ESC[B) starts a new row below
 * it, width known or not: it used to come back onto the row it left, and
 * take it for a frame of itself. */
TEST(redraw_a_move_down_from_the_newest_row_starts_the_next)
{
    static const char *const moves[] = {"\x1b[1E", "\x1b[B", "\x1b[3e"};
    for (size_t i = 0; i < sizeof moves / sizeof *moves; i++)
        for (unsigned cols = 0; cols <= 80; cols += 80) {
            buf_t raw = BUF_INIT;
            struct got g = {0};
            ASSERT_OK(buf_printf(&raw, "Build finished: 3 targets%s\r"
                                       "Deployed to staging\n", moves[i]));
            through_at(&raw, REDRAW_REACH, cols, &g);
            ASSERT_STR(g.text.p, "Build finished: 3 targets\n"
                                 "Deployed to staging\n");
            ASSERT_EQ(redraw_count_of(&g), 0);
            got_free(&g);
            buf_free(&raw);
        }
}

/* A spinner line wider than the terminal cleared as ora clears it
 * (ESC[1G ESC[0K, then ESC[1A ESC[0K per extra row) and drawn again:
 * the return to column 1 stays on the row the cursor is on, so the
 * clear climbs no higher than the spinner, and the lines above it
 * stay. */
TEST(redraw_a_wide_spinner_cleared_after_a_return_keeps_the_lines_above)
{
    buf_t raw = BUF_INIT;
    char spin[128];
    memset(spin, '-', 99);
    spin[99] = '\0';
    ASSERT_OK(buf_append_str(&raw, "Resolved 312 packages from lockfile\n"
                                   "Using cache at /home/u/.cache/pkg\n"));
    for (int i = 0; i < 4; i++) {
        spin[0] = "|/-\\"[i];
        ASSERT_OK(buf_printf(&raw, "%s", spin));
        ASSERT_OK(buf_append_str(&raw, "\x1b[1G\x1b[0K\x1b[1A\x1b[0K"));
    }
    ASSERT_OK(buf_append_str(&raw, "Installed 312 packages in 4.2s\n"));
    struct got g = {0};
    through_at(&raw, REDRAW_REACH, 80, &g);
    ASSERT_STR(g.text.p, "Resolved 312 packages from lockfile\n"
                         "Using cache at /home/u/.cache/pkg\n"
                         "Installed 312 packages in 4.2s\n");
    got_free(&g);
    buf_free(&raw);
}

/* A small output with a frame redrawn is still shown whole: every line
 * but the frame, no markers, as a carriage-return bar's frames are left
 * out. */
TEST(squash_a_small_redrawn_output_is_shown_whole_without_its_frames)
{
    const char *in = "Running 3 checks\n[1/3]\n\x1b[1A\x1b[2K[3/3]\n"
                     "All checks passed: lint, types, format\n";
    sq_opts_t o = {.command = "./check.sh", .cap_to_input = true,
                   .deferred = true, .log_path = "/l"};
    buf_t out = BUF_INIT;
    ASSERT_OK(squash_buffer(&o, in, strlen(in), 0, 0, &out));
    ASSERT_STR(out.p, "[rein] exit 0 \xc2\xb7 4 lines\n"
                      "Running 3 checks\n[3/3]\n"
                      "All checks passed: lint, types, format\n");
    buf_free(&out);
}

/* A frame whose hazard is its colour (a bold red `Compilation aborted`,
 * a yellow `⚠ 3 packages deprecated`: shown as lines, by the universal
 * tier's colour rule) is kept when drawn over, in both views:
 * the keep decision reads the frame's colours as the classifier reads a
 * line's.  It used to judge frames colourless and drop them. */
TEST(squash_a_frame_hazardous_by_its_colour_is_kept)
{
    buf_t raw = BUF_INIT, out = BUF_INIT;
    ASSERT_OK(buf_append_str(&raw, "head\r\n"));
    for (int i = 0; i < 60; i++)
        ASSERT_OK(buf_printf(&raw, "noise line %d filler\r\n", i));
    ASSERT_OK(buf_append_str(&raw,
                             "\x1b[1;31mCompilation aborted\x1b[0m\r\n"
                             "\x1b[33m\xe2\x9a\xa0 3 packages "
                             "deprecated\x1b[0m\r\n"
                             "\x1b[2A\x1b[2Kstep 1 done\r\n"
                             "\x1b[2Kstep 2 done\r\n"));
    for (int i = 0; i < 60; i++)
        ASSERT_OK(buf_printf(&raw, "more line %d filler\r\n", i));
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(NULL, "mytool", &raw, streamed, 0, 0, &out);
        ASSERT_CONTAINS(out.p, "Compilation aborted\n");
        ASSERT_CONTAINS(out.p, "\xe2\x9a\xa0 3 packages deprecated\n");
    }
    buf_free(&raw);
    buf_free(&out);
}

/* A frame of the cursor's own row that an erase or a write over it
 * destroys before the row comes out meets the same keep as a frame of a
 * row drawn again: kept, in order, when keep wants it (log-update's and
 * ora's erase of a last row with no newline, an erase then a return, a
 * plain carriage return); refused, it is counted in the row's frames as
 * before and never comes out.  The rest of a frame an erase cut is not
 * asked about again, nor a frame drawn again the same, nor a resumed row
 * that did not change (its text was out already: the hold keeps it).
 * These used to lose the error in every view. */
TEST(redraw_a_frame_destroyed_on_the_cursors_row_meets_keep)
{
    static const struct {
        const char *in, *text, *kept, *marks;
    } c[] = {
        {"head\r\ntitle 0\r\nerror: last row partial\x1b[2K\x1b[1A\x1b[2K"
         "\x1b[Gtitle 1\r\nstatus ok\r\nend\r\n",
         "head\ntitle 1\nstatus ok\nend\n", "error: last row partial\n",
         "R.R..."},
        {"head\r\nerror: connection refused\x1b[2K\rstatus ok\r\nend\r\n",
         "head\nstatus ok\nend\n", "error: connection refused\n", ".R.."},
        {"start\r\nerror: disk full\rprogress 50%\rprogress 100%\r\n"
         "done\r\n",
         "start\nprogress 100%ull\ndone\n", "error: disk full\n", ".R.."},
        /* ESC[P, ESC[X and ESC[1K take text too */
        {"error: a\x1b[G\x1b[9Pok\r\n", "ok\n", "error: a\n", "R."},
        {"error: b\x1b[G\x1b[9Xok\r\n", "ok      \n", "error: b\n", "R."},
        {"error: c\x1b[1Kok\r\n", "        ok\n", "error: c\n", "R."},
        /* what an erase left, and the same frame again: asked once */
        {"error: abc\x1b[8G\x1b[K\rerror: abc\rerror: abc\rok\r\n",
         "okror: abc\n", "error: abc\n", "R."},
        /* a spinner's frames, their letters the same: the first only */
        {"\xe2\xa0\x8b error: 3 retries (1s)\r\xe2\xa0\x99 error: 3 "
         "retries (2s)\r\xe2\xa0\xb9 error: 4 retries (3s)\rok\x1b[K\r\n",
         "ok\n", "\xe2\xa0\x8b error: 3 retries (1s)\n", "R."},
        /* a frame kept whole: after an insert (ICH) shifted its bytes,
         * and when only part of the row is redrawn (ESC[27G) */
        {"ab\rerror: disk is full\b\b\b\b\x1b[2@\x1b[2K\r\n", "\n",
         "error: disk is   full\n", "R."},
        {"error: connection reset [ 10%] retry in 5s\x1b[27G20\x1b[2K\r\n",
         "\n", "error: connection reset [ 10%] retry in 5s\n", "R."},
        /* other letters are another frame */
        {"error: a\rerror: b\rok\x1b[K\r\n", "ok\n", "error: a\nerror: b\n",
         "RR."},
        /* refused frames come out as nothing, counted */
        {"10%\r50%\x1b[2K\r100%\r\n", "100%\n", "", "."},
        /* a resumed row unchanged was out: the hold keeps it, once */
        {"error: x\r\n\x1b[1A\x1b[2K\x1b[1Bnext\r\n", "\nnext\n",
         "error: x\n", "R.."},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        struct got g = {0};
        through_text(c[i].in, 0, keep_errors, &g);
        ASSERT_STR(g.text.p, c[i].text);
        ASSERT_STR(g.kept.p ? g.kept.p : "", c[i].kept);
        ASSERT_STR(g.marks.p, c[i].marks);
        ASSERT_FALSE(g.out_of_order);
        got_free(&g);
    }
}

/* Through the squasher, both views: the error erased on the last row
 * (log-update), and the one a carriage return drew over, are shown. */
TEST(squash_an_error_erased_on_the_cursors_row_is_shown)
{
    buf_t raw = BUF_INIT, out = BUF_INIT;
    ASSERT_OK(buf_append_str(&raw, "head\r\ntitle 0\r\nerror: last row "
                                   "partial\x1b[2K\x1b[1A\x1b[2K\x1b[Gtitle "
                                   "1\r\nstart\r\nerror: disk full\r"
                                   "progress 50%\rprogress 100%\r\n"
                                   "done\r\n"));
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(NULL, "mytool", &raw, streamed, 0, 0, &out);
        ASSERT_CONTAINS(out.p, "error: last row partial\n");
        ASSERT_CONTAINS(out.p, "error: disk full\n");
        ASSERT_CONTAINS(out.p, "title 1\n");
    }
    buf_free(&raw);
    buf_free(&out);
}

/* Keeps a frame that has colour in it. */
static bool keep_coloured(const sq_line_t *l, void *data)
{
    (void)data;
    return l->colours != 0;
}

/* A line erased to nothing forgets its colours: the plain frame drawn
 * after a red one that was erased is plain (it was taken for red, and a
 * plain `0 failed` for a hazard). */
TEST(redraw_a_line_erased_to_nothing_forgets_its_colours)
{
    struct got g = {0};
    through_text("\x1b[31mred\x1b[0m\r\x1b[Kplain one\r\x1b[Kplain two\r\n", 0, keep_coloured, &g);
    ASSERT_STR(g.kept.p ? g.kept.p : "", "red\n");
    ASSERT_STR(g.text.p, "plain two\n");
    got_free(&g);
}

/* Counts the lines of text that contain needle. */
static size_t lines_with(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Kept frames of one row, through the squasher, both views: a spinner
 * whose warning's letters change every frame (its rate's unit flips) was
 * every frame, some 300 lines; it is VT_KEPT_FRAMES_MAX now.  A frame that
 * says what the last kept one said is not kept again; a failure after
 * frames that were none (`1 FAILED` after `0 FAILED`, the same letters)
 * is kept. */
TEST(squash_kept_frames_of_a_row_are_bounded_and_each_says_something)
{
    buf_t raw = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 300; i++)
        ASSERT_OK(buf_printf(&raw, "\r\xe2\xa0\x8b warning: mirror is slow "
                                   "(%d %s/s)",
                             100 + i, i % 2 ? "MB" : "kB"));
    ASSERT_OK(buf_append_str(&raw, "\rdone\x1b[K\r\n"));
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(NULL, "mytool", &raw, streamed, 0, 0, &out);
        ASSERT_EQ(lines_with(out.p, "warning: mirror is slow"),
                  (size_t)VT_KEPT_FRAMES_MAX);
        ASSERT_CONTAINS(out.p, "done\n");
    }
    buf_reset(&raw);
    for (int i = 1; i <= 10; i++)
        ASSERT_OK(buf_printf(&raw, "\r\xe2\xa0\x8b Running %d/20 (%d FAILED)",
                             i, i > 5));
    ASSERT_OK(buf_append_str(&raw, "\x1b[2K\rdone\r\n"));
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(NULL, "mytool", &raw, streamed, 0, 0, &out);
        ASSERT_EQ(lines_with(out.p, "(1 FAILED)"), 1u);
        ASSERT_EQ(lines_with(out.p, "(0 FAILED)"), 0u);
    }
    buf_free(&raw);
    buf_free(&out);
}

/* A clear of the whole screen (ESC[2J) takes nothing, the cursor's row
 * no more than the rows above it: its text is handed out as it stood, an
 * error or not, and what follows starts a row of its own at the cursor's
 * column on the screen, as with ESC[H ESC[J.  ESC[2J used to erase the
 * row first and lose it.  ESC[3J clears the scrollback alone: the row
 * stays, and a carriage return writes over it. */
TEST(redraw_a_clear_of_the_screen_hands_out_the_cursors_row)
{
    static const struct {
        const char *in, *text;
    } c[] = {
        {"head\r\nerror: partial before clear\x1b[2J\x1b[Hnext\r\nend\r\n",
         "head\nerror: partial before clear\nnext\nend\n"},
        {"head\r\nerror: partial before clear\x1b[H\x1b[Jnext\r\nend\r\n",
         "head\nerror: partial before clear\nnext\nend\n"},
        {"head\r\nplain text\x1b[2Jmore\r\nend\r\n",
         "head\nplain text\n          more\nend\n"},
        {"head\r\nplain text\x1b[3J\rmore\r\nend\r\n",
         "head\nmoren text\nend\n"},
        {"\x1b[5;1Hstatus\x1b[2J\x1b[1;1Hnext\r\n", "status\n\nnext\n"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        struct got g = {0};
        through_text(c[i].in, 0, keep_errors, &g);
        ASSERT_STR(g.text.p, c[i].text);
        ASSERT_EQ(redraw_count_of(&g), 0);
        got_free(&g);
    }
}

/* Leaving the alternate screen (modes 1049, 1047, 47) ends the row the
 * cursor was on there, and the text after it starts a row of its own
 * (at the column 1049 saved as it entered), as a terminal shows it on
 * the screen it restores; a move up after it climbs no higher.  Text
 * before the switch in is handed out as it stood.  A switch to the
 * screen that is up changes nothing.  The private modes used to be
 * ignored: `status line` on the alternate screen and `after` glued. */
TEST(redraw_the_alternate_screen_left_glues_no_rows)
{
    static const struct {
        const char *in, *text;
    } c[] = {
        {"before\r\n\x1b[?1049h\x1b[H\x1b[2Jscreen title\r\n\x1b[5;1H"
         "status line\x1b[?1049lafter\r\n",
         "before\nscreen title\nstatus line\nafter\n"},
        {"before\r\n\x1b[?1049hX\r\nY\r\n\x1b[?1049l\x1b[1AZ\r\n",
         "before\nX\nY\nZ\n"},
        {"ab\x1b[?1049hX\x1b[?1049lc\r\n", "ab\n  X\n  c\n"},
        {"ab\x1b[?47hXYZ\x1b[?47lc\r\n", "ab\n  XYZ\n     c\n"},
        {"ab\x1b[?1049lc\x1b[?1049h\x1b[?1049hd\r\n", "abc\n   d\n"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        for (unsigned cols = 0; cols <= 80; cols += 80) {
            struct got g = {0};
            through_text(c[i].in, cols, keep_errors, &g);
            ASSERT_STR(g.text.p, c[i].text);
            ASSERT_EQ(redraw_count_of(&g), 0);
            got_free(&g);
        }
}

/* IL (ESC[L) at the cursor's row pushes its text down and leaves a blank
 * row at column 1: the row's text is handed out as it stood and what
 * follows starts a row of its own.  DL (ESC[M) deletes the row: its text
 * is erased, a frame keep is asked about.  Both used to be ignored, and
 * `error: x` was written over `status 1 of 10` as `error: x of 10`. */
TEST(redraw_an_inserted_line_starts_a_row_and_a_deleted_one_is_erased)
{
    static const struct {
        const char *in, *text, *kept;
    } c[] = {
        {"head\r\nstatus 1 of 10\r\x1b[1Lerror: x\r\nstatus 2 of 10"
         "\x1b[K\r\nend\r\n",
         "head\nstatus 1 of 10\nerror: x\nstatus 2 of 10\nend\n", ""},
        {"head\r\nerror: y\x1b[Mok\r\n", "head\nok\n", "error: y\n"},
        {"head\r\nplain\x1b[2Mok\r\n", "head\nok\n", ""},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        struct got g = {0};
        through_text(c[i].in, 80, keep_errors, &g);
        ASSERT_STR(g.text.p, c[i].text);
        ASSERT_STR(g.kept.p ? g.kept.p : "", c[i].kept);
        got_free(&g);
    }
}
