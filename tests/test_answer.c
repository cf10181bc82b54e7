/*
 * test_answer.c — rein as the terminal (term/answer.h): which queries are
 * answered and how, a cursor report from the output before it, queries
 * split across reads at every byte, replies in order, the burst bound,
 * and the echo of a reply never taken for a query.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "harness.h"
#include "term/answer.h"

#include <vterm.h>

static void collect(const void *r, size_t n, void *data)
{
    buf_append(data, r, n);
}

/* Feeds s to a in pieces of `step` bytes (0: all at once). */
static void feed_steps(term_answer_t *a, const char *s, size_t step)
{
    size_t n = strlen(s);
    if (!step)
        step = n ? n : 1;
    for (size_t i = 0; i < n; i += step)
        term_answer_feed(a, s + i, n - i < step ? n - i : step);
}

/* Feeds s to a fresh 80x24 responder in pieces of `step` bytes (0: all
 * at once) and returns the replies in *out. */
static void answers(const char *s, size_t step, buf_t *out)
{
    term_answer_t *a;
    ASSERT_OK(term_answer_new(80, 24, collect, out, &a));
    feed_steps(a, s, step);
    term_answer_free(a);
}

static void expect(const char *query, const char *reply)
{
    size_t n = strlen(query);
    for (size_t step = 0; step <= n; step++) { /* every split */
        buf_t out = BUF_INIT;
        answers(query, step, &out);
        if (out.len != strlen(reply) ||
            (out.len && memcmp(out.p, reply, out.len))) {
            test_print_bytes("query", query, n);
            test_print_bytes("reply", out.p, out.len);
            fprintf(stderr, "split every %zu bytes\n", step);
        }
        ASSERT_MEM(out.p, out.len, reply, strlen(reply));
        buf_free(&out);
    }
}

TEST(answer_cursor_position_follows_the_output_before_it)
{
    expect("\033[6n", "\033[1;1R");
    expect("hello\033[6n", "\033[1;6R");
    expect("a\r\nbc\r\n\tx\033[6n", "\033[3;10R");
    expect("\033[5;7H\033[6n", "\033[5;7R");
    /* Wrapping and scrolling are the screen model's. */
    expect("\033[24;79Habc\033[6n", "\033[24;2R");
    /* Two reports, each where the cursor was at the time. */
    expect("ab\033[6ncd\r\n\033[6n", "\033[1;3R\033[2;1R");
    /* UTF-8 text counts as characters, wide ones as two cells. */
    expect("\xc3\xa9t\xc3\xa9\033[6n", "\033[1;4R");
    expect("\xe4\xb8\xad\033[6n", "\033[1;3R");
}

TEST(answer_cursor_report_in_origin_mode_is_relative_to_the_region)
{
    expect("\033[5;20r\033[?6h\033[2;3H\033[6n", "\033[2;3R");
    expect("\033[5;20r\033[?6h\033[?6l\033[7;3H\033[6n", "\033[7;3R");
    expect("\033[5;20r\033[?6h\033c\033[2;3H\033[6n", "\033[2;3R");
}

TEST(answer_status_attributes_version_size_colours)
{
    expect("\033[5n", "\033[0n");
    expect("\033[c", "\033[?1;2c");
    expect("\033[0c", "\033[?1;2c");
    expect("\033[>c", "\033[>0;0;0c");
    expect("\033[>0c", "\033[>0;0;0c");
    expect("\033[>q", "\033P>|rein " REIN_VERSION_STRING "\033\\");
    expect("\033[18t", "\033[8;24;80t");
    expect("\033]10;?\a", "\033]10;rgb:f0f0/f0f0/f0f0\a");
    expect("\033]11;?\033\\", "\033]11;rgb:0000/0000/0000\033\\");
}

TEST(answer_leaves_what_rein_does_not_support_unanswered)
{
    /* kitty keyboard flags: rein sends legacy keys; the DA that
     * programs send after it is the only reply. */
    expect("\033[?u\033[c", "\033[?1;2c");
    /* DECRQM, DECRQSS, XTGETTCAP, a palette colour, a title, a link. */
    expect("\033[?2026$p\033P$qm\033\\\033P+q544e\033\\\033]4;1;?\a"
           "\033]0;title\a\033]8;;http://x/\033\\link\033]8;;\033\\",
           "");
    /* Parameters DA and DSR do not take. */
    expect("\033[1c\033[>1c\033[7n\033[?6n\033[14t", "");
}

TEST(answer_echoed_replies_are_no_queries)
{
    /* A program that leaves echo on gets the reply back as output. */
    expect("\033[?1;2c\033[>0;0;0c\033[0n\033[3;4R\033[8;24;80t"
           "\033]11;rgb:0000/0000/0000\a\033P>|rein 0\033\\",
           "");
}

TEST(answer_sequences_are_skipped_whole)
{
    /* A query's bytes inside a string sequence or an over-long CSI are
     * none; an interrupted one is none; the scan goes on after each. */
    expect("\033]0;[6n\a\033P[c\033\\\033[c", "\033[?1;2c");
    expect("\033[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17n\033[5n",
           "\033[0n");
    expect("\033[\030c\033[5\0326n\033[5n", "\033[0n");
    expect("\033]11;?\033[5n", "\033[0n"); /* ESC ends the OSC */
    expect("\033(B\033[5n", "\033[0n");
}

TEST(answer_a_query_loop_is_bounded)
{
    buf_t q = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 3 * TERM_ANSWER_BURST; i++)
        buf_append(&q, "\033[5n", 4);
    term_answer_t *a;
    ASSERT_OK(term_answer_new(80, 24, collect, &out, &a));
    term_answer_feed(a, q.p, q.len);
    uint64_t dropped;
    ASSERT_EQ(term_answer_count(a, &dropped), TERM_ANSWER_BURST);
    ASSERT_EQ(dropped, 2 * TERM_ANSWER_BURST);
    ASSERT_EQ(out.len, 4 * TERM_ANSWER_BURST);
    term_answer_free(a);
    buf_free(&q);
    buf_free(&out);
}

TEST(answer_resize_is_seen)
{
    buf_t out = BUF_INIT;
    term_answer_t *a;
    ASSERT_OK(term_answer_new(80, 24, collect, &out, &a));
    term_answer_resize(a, 100, 30);
    const char *q = "\033[18t\033[99;99H\033[6n";
    term_answer_feed(a, q, strlen(q));
    ASSERT_STR(out.p, "\033[8;30;100t\033[30;99R");
    term_answer_free(a);
    buf_free(&out);
}

/* libvterm 0.1.4 (Debian 12) crashes on a CSI of more than 16 arguments,
 * and reads and writes outside its arrays through a saved cursor or a
 * scroll region that a smaller screen no longer holds: none of it
 * reaches the model, which the session's screen view reads too. */
TEST(answer_model_survives_what_crashes_libvterm)
{
    buf_t out = BUF_INIT;
    term_answer_t *a;
    ASSERT_OK(term_answer_new(80, 50, collect, &out, &a));
    VTermScreen *scr = vterm_obtain_screen(term_answer_vterm(a));
    vterm_screen_reset(scr, 1);
    const char *many = "\033[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18m"
                       "x\033[1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18H";
    term_answer_feed(a, many, strlen(many));
    const char *save = "\033[10;40r\033[40;70H\0337";
    term_answer_feed(a, save, strlen(save));
    term_answer_resize(a, 30, 6);
    const char *back = "\0338abc\033D\033D\033M\033[6n";
    term_answer_feed(a, back, strlen(back));
    /* The cursor is on the screen (libvterm puts the restored one on the
     * bottom row: the RI then moved it up). */
    int row = 0, col = 0;
    ASSERT_EQ(sscanf(out.p, "\033[%d;%dR", &row, &col), 2);
    ASSERT_EQ(row, 5);
    ASSERT_TRUE(col >= 1 && col <= 30);
    term_answer_free(a);
    buf_free(&out);
}

/* Feeds s to a fresh responder in pieces of `step` bytes (0: at once) and
 * says whether the alternate screen is up after it. */
static bool alt_after(const char *s, size_t step)
{
    term_answer_t *a;
    ASSERT_OK(term_answer_new(80, 24, NULL, NULL, &a));
    feed_steps(a, s, step);
    bool alt = term_answer_alt(a);
    term_answer_free(a);
    return alt;
}

static void expect_alt(const char *s, bool want)
{
    for (size_t step = 0; step <= strlen(s); step++) { /* every split */
        bool alt = alt_after(s, step);
        if (alt != want) {
            test_print_bytes("output", s, strlen(s));
            fprintf(stderr, "split every %zu bytes\n", step);
        }
        ASSERT_EQ(alt, want);
    }
}

/* The switches to and from the alternate screen, which the session's
 * full-screen view follows: the three private modes, several modes in one
 * sequence, a full reset; other modes and look-alikes do not count. */
TEST(answer_alternate_screen_is_followed)
{
    expect_alt("", false);
    expect_alt("\033[?1049h", true);
    expect_alt("\033[?1049h\033[?1049l", false);
    expect_alt("\033[?1047h", true);
    expect_alt("\033[?47h", true);
    expect_alt("\033[?47h\033[?1047l", false);
    expect_alt("\033[?1;1049h", true);          /* with DECCKM */
    expect_alt("\033[?1049;25l\033[?25;47h", true);
    expect_alt("\033[?1049h\033c", false);       /* RIS */
    expect_alt("\033[?1049h\033[!p", true);      /* DECSTR keeps it */
    expect_alt("\033[1049h", false);             /* ANSI mode, not DEC */
    expect_alt("\033[?1048h", false);            /* saves the cursor only */
    expect_alt("\033[?10490h", false);
    expect_alt("?1049h", false);                 /* text */
    expect_alt("\033]0;[?1049h\a", false);        /* in a title */
}

/* Where the stays on the alternate screen are in the output, at every
 * split: from the ESC of the switch to it, to the byte after the switch
 * back; a switch to a screen already up moves nothing, and a stay still
 * going is none of them, but where the screen has been up since. */
TEST(answer_alternate_screen_spans_are_in_output_offsets)
{
    const char *s = "ab\033[?1049hXY\033[?47h\033[?1049lcd\033[?25l";
    for (size_t step = 0; step <= strlen(s); step++) {
        term_answer_t *a;
        uint64_t sp[4][2];
        ASSERT_OK(term_answer_new(80, 24, NULL, NULL, &a));
        ASSERT_EQ(term_answer_alt_spans(a, 0, sp, 4), 0);
        feed_steps(a, s, step);
        ASSERT_EQ(term_answer_alt_spans(a, 0, sp, 4), 1);
        ASSERT_EQ(sp[0][0], 2);
        ASSERT_EQ(sp[0][1], 26);
        feed_steps(a, "\033c", 0); /* RIS, with no screen up */
        ASSERT_EQ(term_answer_alt_spans(a, 0, sp, 4), 1);
        feed_steps(a, "\033[?1047hz\033c", step % 3); /* 36..47 */
        ASSERT_EQ(term_answer_alt_spans(a, 0, sp, 4), 2);
        ASSERT_EQ(sp[1][0], 36);
        ASSERT_EQ(sp[1][1], 47);
        /* Only those that ended after the offset given, and at most max. */
        ASSERT_EQ(term_answer_alt_spans(a, 26, sp, 4), 1);
        ASSERT_EQ(sp[0][0], 36);
        ASSERT_EQ(term_answer_alt_spans(a, 25, sp, 1), 1);
        ASSERT_EQ(sp[0][0], 2);
        ASSERT_EQ(term_answer_alt_spans(a, 47, sp, 4), 0);
        ASSERT_EQ(term_answer_alt_since(a), UINT64_MAX);
        feed_steps(a, "\033[?1049hstill up", 0); /* from 47 */
        ASSERT_EQ(term_answer_alt_spans(a, 0, sp, 4), 2);
        ASSERT_EQ(term_answer_alt_since(a), 47);
        term_answer_free(a);
    }
}

/* The last TERM_ANSWER_ALT_SPANS stays are kept: one more, and the first
 * is gone. */
TEST(answer_alternate_screen_spans_keep_the_last_at_their_limit)
{
    term_answer_t *a;
    static uint64_t sp[TERM_ANSWER_ALT_SPANS + 1][2];
    const char *stay = "x\033[?1049hy\033[?1049l"; /* 18 bytes */
    ASSERT_OK(term_answer_new(80, 24, NULL, NULL, &a));
    for (unsigned i = 0; i < TERM_ANSWER_ALT_SPANS; i++)
        feed_steps(a, stay, 0);
    ASSERT_EQ(term_answer_alt_spans(a, 0, sp, TERM_ANSWER_ALT_SPANS + 1),
              TERM_ANSWER_ALT_SPANS);
    ASSERT_EQ(sp[0][0], 1);
    ASSERT_EQ(sp[TERM_ANSWER_ALT_SPANS - 1][1], 18 * TERM_ANSWER_ALT_SPANS);
    feed_steps(a, stay, 0);
    ASSERT_EQ(term_answer_alt_spans(a, 0, sp, TERM_ANSWER_ALT_SPANS + 1),
              TERM_ANSWER_ALT_SPANS);
    ASSERT_EQ(sp[0][0], 18 + 1);
    ASSERT_EQ(sp[TERM_ANSWER_ALT_SPANS - 1][1], 18 * (TERM_ANSWER_ALT_SPANS + 1));
    term_answer_free(a);
}

/* Feeds the pieces to a fresh 20x3 screen model and returns its first
 * row as UTF-8 (a cell's combining marks after its character, a wide
 * character once), blanks as ' ', without the trailing ones. */
static void first_row(const char *const *pieces, size_t n, buf_t *out)
{
    term_answer_t *a;
    ASSERT_OK(term_answer_new(20, 3, NULL, NULL, &a));
    VTermScreen *scr = vterm_obtain_screen(term_answer_vterm(a));
    vterm_screen_reset(scr, 1);
    for (size_t i = 0; i < n; i++)
        term_answer_feed(a, pieces[i], strlen(pieces[i]));
    ASSERT_TRUE(term_answer_vterm(a) != NULL); /* hands it the last one */
    for (int c = 0; c < 20; c++) {
        VTermScreenCell cell;
        ASSERT_TRUE(vterm_screen_get_cell(scr, (VTermPos){0, c}, &cell));
        if (cell.chars[0] == (uint32_t)-1)
            continue; /* the right half of a wide character */
        if (cell.chars[0] == 0)
            buf_append_byte(out, ' ');
        for (int k = 0; k < VTERM_MAX_CHARS_PER_CELL && cell.chars[k]; k++) {
            char u[UTF8_SEQ_MAX];
            buf_append(out, u, utf8_encode(cell.chars[k], u));
        }
    }
    while (out->len && out->p[out->len - 1] == ' ')
        out->p[--out->len] = 0;
    term_answer_free(a);
}

#define ROW(want, ...)                                                      \
    do {                                                                    \
        static const char *const pieces_[] = {__VA_ARGS__};                \
        buf_t row_ = BUF_INIT;                                              \
        first_row(pieces_, sizeof pieces_ / sizeof pieces_[0], &row_);     \
        ASSERT_STR(row_.p ? row_.p : "", want);                            \
        buf_free(&row_);                                                    \
    } while (0)

/* A character split between two reads reaches the screen whole (libvterm
 * 0.1.4 decodes each write alone: it showed two U+FFFD); a broken one is
 * one U+FFFD wherever the reads fall. */
TEST(answer_model_gets_characters_whole_across_reads)
{
    ROW("x\xe4\xb8\xady", "x\xe4", "\xb8", "\xad", "y");
    ROW("\xef\xbf\xbd" "c", "\xe3", "c");
    ROW("\xef\xbf\xbd" "c", "\xe3" "c");
    /* Cut short by an escape sequence: one U+FFFD, then the sequence. */
    ROW("\xef\xbf\xbd  z", "\xe4\xb8", "\033[4Gz");
    /* A combining mark in the read after its character, at the last
     * column: it marks that character (libvterm 0.1.4 put it on the one
     * before, and wrapped). */
    ROW("                   0\xcc\x82", "\033[1;20H0", "\xcc\x82");
    /* The most marks a cell takes (TERM_ANSWER_TAIL_MAX), the last one in
     * a read of its own. */
    ROW("                   e\xcc\x81\xcc\x82\xcc\x83\xcc\x84\xcc\x85",
        "\033[1;20H", "e\xcc\x81\xcc\x82\xcc\x83\xcc\x84", "\xcc\x85");
    /* At the edge: six code points of four bytes, 24 bytes (U+1D400 and
     * the musical combining marks U+1D167..9, U+1D185..6). */
#define M4 "\xf0\x9d\x90\x80\xf0\x9d\x85\xa7\xf0\x9d\x85\xa8" \
           "\xf0\x9d\x85\xa9\xf0\x9d\x86\x85"
    ROW("                   " M4 "\xf0\x9d\x86\x86", "\033[1;20H", M4,
        "\xf0\x9d\x86\x86");
#undef M4
    /* DEC line drawing applies to ASCII after a non-ASCII character too
     * (libvterm 0.1.4 applied it up to the first one of a write). */
    ROW("\xe2\x94\x80\xe4\xb8\xad\xe2\x94\x80\xe2\x94\x82",
        "\033(0q\xe4\xb8\xadqx");
}

/* REP (CSI n b) repeats the last character to the end of the row at
 * most; with nothing to repeat, or a character of no width, it does
 * nothing (libvterm 0.1.4 looped for ever: `printf '\033[b'` on a tty
 * session held rein's loop). */
TEST(answer_rep_is_bounded_and_never_loops)
{
    ROW("aaaa", "a\033[3b");
    ROW("aa", "a\033[b");
    ROW("aa", "a\033[0b");
    ROW("aa", "a\033[1;5b");
    ROW("\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad", "\xe4\xb8\xad", "\033[4b");
    ROW("--------------------", "-\033[999999999999b");
    ROW("", "\033[5b", "\033[b");
    /* No width: the one copy that measured it, no more. */
    ROW("\xe2\x80\x8b\xe2\x80\x8b", "\xe2\x80\x8b\033[5b");
    ROW("e\xcc\x81\xcc\x81x", "e\xcc\x81\033[7bx");
    /* After controls, the last character printed is still the one. */
    ROW("aa", "a\r\033[C\033[b");
    /* Not REP: a private marker, an intermediate, a sub-parameter. */
    ROW("a", "a\033[?3b\033[3 b\033[3:1b");
}
