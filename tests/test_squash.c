/*
 * test_squash.c — the pipeline: hazards stream out before the stream
 * ends, the deferred view heads with the exit marker and marks each gap,
 * budgets are never passed (first and last hazards kept, the rest
 * counted), hazards that differ are all shown and only copies of one
 * line repeat, binary and cut lines are markers, prompts are announced,
 * every marker matches the documented syntax, and nothing is dropped
 * without the log path; a small output is shown whole when that is no
 * larger (SQ_WHOLE_BYTES_MAX at its edge), a `structured` grammar
 * keeps every outcome line, and a hazard in a line of bad UTF-8 is shown
 * rather than folded into a binary marker; a failed TAP test is shown with
 * its diagnostic under any command's grammar, and under a budget it is
 * shown or counted, the line naming its file and line before what it got;
 * a grammar's failure verdicts (`FAIL\tpkg`) fold only with their copies.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "harness.h"
#include "squash/emit.h"
#include "squash/grammar.h"
#include "squash/squash.h"
#include "tutil.h"

static void collect(const char *t, size_t n, void *d)
{
    buf_append(d, t, n);
}

/* Every line of out is a marker in the documented syntax or in raw. */
static void check_lines(const buf_t *out, const char *raw)
{
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR) "^\\[rein\\] [a-z]+(?: .*)?$",
                                   PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off, NULL);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    const char *p = out->p, *end = p + out->len;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        ASSERT_TRUE(e != NULL);
        size_t n = (size_t)(e - p);
        bool marker = pcre2_match(re, (PCRE2_SPTR)p, n, 0, 0, md, NULL) >= 0;
        if (!marker) {
            char *l = strndup(p, n);
            if (!strstr(raw, l))
                test_fail(__FILE__, __LINE__, "not raw: \"%s\"", l);
            free(l);
        }
        p = e + 1;
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
}

TEST(squash_streams_hazards_before_the_end)
{
    sq_opts_t o = {.command = "make", .log_path = "/tmp/x.log"};
    buf_t out = BUF_INIT;
    squash_t *sq;
    ASSERT_OK(squash_new(&o, collect, &out, &sq));
    const char *in = "compiling a\ncompiling b\nsrc/a.c:3:4: error: boom\n";
    ASSERT_OK(squash_feed(sq, in, strlen(in), 0));
    ASSERT_STR(out.p, "src/a.c:3:4: error: boom\n");
    const char *more = "compiling c\nBuild finished: 1 error\n";
    ASSERT_OK(squash_feed(sq, more, strlen(more), 10));
    ASSERT_OK(squash_finish(sq, 2, 2310, 20));
    ASSERT_CONTAINS(out.p, "[rein] exit 2 · 2.31s · 5 lines\n");
    ASSERT_CONTAINS(out.p, "Build finished: 1 error\n");
    ASSERT_CONTAINS(out.p, "[rein] omitted 3 lines\n");
    ASSERT_CONTAINS(out.p, "[rein] log /tmp/x.log\n");
    sq_stats_t st;
    squash_stats(sq, &st);
    ASSERT_EQ(st.raw_lines, 5);
    ASSERT_EQ(st.errors, 1);
    ASSERT_EQ(st.outcomes, 1);
    ASSERT_EQ(st.out_bytes, out.len);
    check_lines(&out, "compiling a\ncompiling b\nsrc/a.c:3:4: error: boom\ncompiling c\n"
                      "Build finished: 1 error\n");
    ASSERT_EQ(squash_feed(sq, "x", 1, 30), -EINVAL);
    squash_free(sq);
    squash_free(NULL);
    buf_free(&out);
}

/* Near-duplicate lines are `repeat` noise, but the fallback tail shows
 * the last of them: a line shown is not dropped, so the noise marker does
 * not count it, and it never counts more lines than were omitted. */
TEST(squash_noise_marker_counts_only_dropped_lines)
{
    sq_opts_t o = {.command = "tool", .log_path = "/tmp/x.log"};
    buf_t out = BUF_INIT;
    squash_t *sq;
    ASSERT_OK(squash_new(&o, collect, &out, &sq));
    ASSERT_OK(squash_feed(sq, "line1\nline2\nline3\n", 18, 0));
    ASSERT_OK(squash_finish(sq, 0, 0, 0));
    ASSERT_STR(out.p, "[rein] exit 0 · 3 lines\nline1\nline2\nline3\n");
    squash_free(sq);

    buf_t in = BUF_INIT;
    for (int i = 1; i <= 2000; i++)
        buf_printf(&in, "%d\n", i);
    buf_reset(&out);
    o.budget_bytes = 200;
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
    unsigned long omitted = 0, noise = 0;
    const char *m = strstr(out.p, "[rein] omitted ");
    const char *n = strstr(out.p, "[rein] noise ");
    ASSERT_TRUE(m && n);
    ASSERT_EQ(sscanf(m, "[rein] omitted %lu", &omitted), 1);
    ASSERT_EQ(sscanf(n, "[rein] noise %lu", &noise), 1);
    ASSERT_INT(noise, <=, omitted);
    ASSERT_EQ(noise, omitted - 1); /* all but the first line are repeats */
    buf_free(&in);
    buf_free(&out);
}

/* A run of binary lines is one marker; the gap before it is only the
 * lines before its first line (the marker covers the rest). */
TEST(squash_gap_before_a_binary_run_counts_only_its_own_lines)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    buf_append_str(&in, "start\n");
    for (int line = 0; line < 3; line++) {
        for (int i = 0; i < 200; i++)
            buf_append(&in, &(char){(char)(0x80 | (i % 0x3f))}, 1);
        buf_append_str(&in, "\n");
    }
    buf_append_str(&in, "error: after binary\nend\n");
    sq_opts_t o = {.command = "tool", .log_path = "/l", .budget_bytes = 4000};
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
    ASSERT_CONTAINS(out.p, "[rein] binary ");
    ASSERT_CONTAINS(out.p, "error: after binary\n");
    /* "start" alone, not "omitted 3 lines (lines 1-3, bytes 0-6)". */
    ASSERT_CONTAINS(out.p, "[rein] omitted 1 line (line 1, bytes 0-6)\n"
                           "[rein] binary 603 bytes (bytes 6-609)\n");
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_exit_marker_names_a_signal_and_counts_one_line)
{
    buf_t out = BUF_INIT;
    sq_opts_t o = {.command = "tool", .log_path = "/l"};
    /* 128 + 9: killed by SIGKILL, as the shell's $? says it. */
    ASSERT_OK(squash_buffer(&o, "partial\n", 8, 137, 1500, &out));
    ASSERT_TRUE(!strncmp(out.p, "[rein] signal SIGKILL · exit 137 · 1.50s · 1 line\n",
                         strlen("[rein] signal SIGKILL · exit 137 · 1.50s · 1 line\n")));
    buf_reset(&out);
    /* 128 itself and codes past the signals are plain statuses. */
    ASSERT_OK(squash_buffer(&o, "x\n", 2, 128, 0, &out));
    ASSERT_TRUE(!strncmp(out.p, "[rein] exit 128 · 1 line\n", 24));
    buf_reset(&out);
    ASSERT_OK(squash_buffer(&o, "x\n", 2, 255, 0, &out));
    ASSERT_TRUE(!strncmp(out.p, "[rein] exit 255 · 1 line\n", 24));
    buf_reset(&out);
    /* A negative status: still running, as docs/markers.md writes it. */
    ASSERT_OK(squash_buffer(&o, "x\n", 2, -1, 0, &out));
    ASSERT_TRUE(!strncmp(out.p, "[rein] exit ? · 1 line\n", 23));
    buf_free(&out);
}

/* A view of a later part of a log gives byte ranges as offsets in that
 * log, so read_output can fetch exactly what a marker names. */
TEST(squash_raw_base_makes_byte_ranges_log_offsets)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 400; i++)
        buf_printf(&in, "line %d of some ordinary output\n", i);
    size_t err_at = in.len;
    buf_printf(&in, "error: boom at x.c:3\n");
    for (int i = 0; i < 400; i++)
        buf_printf(&in, "more %d of some ordinary output\n", i);
    sq_opts_t o = {.command = "tool", .log_path = "/l", .budget_bytes = 400,
                   .raw_base = 5000};
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 1, 0, &out));
    char want[96];
    snprintf(want, sizeof want, "(lines 1-400, bytes 5000-%zu)\nerror: boom",
             5000 + err_at);
    ASSERT_CONTAINS(out.p, want);
    snprintf(want, sizeof want, "bytes %zu-%zu)", 5000 + err_at + 21,
             5000 + in.len);
    ASSERT_CONTAINS(out.p, want);
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_deferred_heads_with_exit_and_marks_gaps)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 100; i++)
        buf_printf(&in, "step %d of the build went fine and quietly\n", i);
    buf_append_str(&in, "fatal: could not read from remote\n");
    for (int i = 0; i < 50; i++)
        buf_printf(&in, "cleanup %d\n", i);
    sq_opts_t o = {.command = "tool", .log_path = "/l"};
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 128, 0, &out));
    ASSERT_TRUE(!strncmp(out.p, "[rein] exit 128 · 151 lines\n", strlen("[rein] exit 128 · 151 lines\n")));
    ASSERT_CONTAINS(out.p, "[rein] omitted 100 lines (lines 1-100)\n"
                           "fatal: could not read from remote\n"
                           "[rein] omitted 50 lines (lines 102-151)\n");
    ASSERT_CONTAINS(out.p, "[rein] log /l\n");
    check_lines(&out, in.p);
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_small_unclassified_output_is_shown_whole_and_large_gets_a_tail)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < SQ_SMALL_LINES; i++)
        buf_printf(&in, "item-%c%c\n", 'a' + i % 26, 'a' + i / 26);
    /* deferred without the input cap: a small output is not trimmed */
    sq_opts_t o = {.command = "ls", .deferred = true};
    squash_t *sq;
    ASSERT_OK(squash_new(&o, collect, &out, &sq));
    ASSERT_OK(squash_feed(sq, in.p, in.len, 0));
    ASSERT_OK(squash_finish(sq, 0, 0, 0));
    squash_free(sq);
    ASSERT_CONTAINS(out.p, "item-aa\n");
    ASSERT_CONTAINS(out.p, "item-nb\n");
    ASSERT_TRUE(strstr(out.p, "omitted") == NULL);
    buf_reset(&out);
    buf_printf(&in, "last-line\n");
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
    ASSERT_TRUE(strstr(out.p, "item-aa\n") == NULL);
    ASSERT_CONTAINS(out.p, "last-line\n");
    ASSERT_CONTAINS(out.p, "[rein] omitted 36 lines (lines 1-36)\n");
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_hazards_that_differ_are_all_shown_copies_repeat)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    /* ten diagnostics of one template: ten facts, each shown */
    for (int i = 1; i <= 10; i++)
        buf_printf(&in, "src/f%d.c:%d:1: warning: unused variable 'x' [-Wunused]\n", i, i);
    sq_opts_t o = {.command = "cc", .deferred = true};
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
    for (int i = 1; i <= 10; i++) {
        char l[80];
        snprintf(l, sizeof l, "src/f%d.c:%d:1: warning: unused", i, i);
        ASSERT_CONTAINS(out.p, l);
    }
    ASSERT_TRUE(strstr(out.p, "[rein] repeat") == NULL);
    check_lines(&out, in.p);
    /* copies of one line: SQ_HAZARD_SHOW shown, the rest in the repeat
     * marker, no `at` marker for a single location; a long unknown line
     * keeps the whole view larger than the condensed one */
    buf_reset(&in);
    buf_reset(&out);
    for (int i = 0; i < SQ_HAZARD_SHOW + 7; i++)
        buf_printf(&in, "src/f.c:1:1: warning: unused variable 'x' [-Wunused]\n");
    for (int i = 0; i < 400; i++)
        buf_append_byte(&in, 'a' + i % 26);
    buf_append_byte(&in, '\n');
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
    const char *p = out.p;
    int shown = 0;
    while ((p = strstr(p, "src/f.c:1:1: warning: unused variable 'x' [-Wunused]\n"))) {
        shown++;
        p++;
    }
    ASSERT_EQ(shown, SQ_HAZARD_SHOW);
    /* one text, named as it is: no `{}`, since nothing varies */
    ASSERT_CONTAINS(out.p, "[rein] repeat 10× \"src/f.c:1:1: warning: unused "
                           "variable 'x' [-Wunused]\" (lines 1-10)\n");
    ASSERT_TRUE(strstr(out.p, "[rein] at ") == NULL);
    /* the folded copies are in the repeat marker: no gap marker for them */
    ASSERT_TRUE(strstr(out.p, "[rein] omitted") == NULL);
    check_lines(&out, in.p);
    buf_free(&in);
    buf_free(&out);
}

/* n rust-style diagnostics with one head text, each owning a location
 * line (`--> src/mod<i>.rs:...`, or the same one when same_loc) and an
 * excerpt; then filler, so the view is condensed. */
static void same_heads(buf_t *in, int n, bool same_loc)
{
    for (int i = 0; i < n; i++) {
        int k = same_loc ? 0 : i;
        buf_printf(in, "warning: unused variable: `e`\n"
                       "  --> src/mod%d.rs:%d:13\n"
                       "   |\n"
                       "%d |         Err(e) => {}\n"
                       "   |             ^ help: prefix it with an underscore\n"
                       "\n",
                   k, 10 + k, 10 + k);
    }
    for (int i = 0; i < 300; i++)
        buf_printf(in, "filler line %d of the build log\n", i);
}

TEST(squash_folded_copies_of_a_hazard_keep_their_own_locations)
{
    /* Identical heads whose blocks name other places are other facts: a
     * 4th and later copy used to take its `-->` line with it into the
     * repeat marker. */
    buf_t in = BUF_INIT, out = BUF_INIT;
    same_heads(&in, SQ_HAZARD_SHOW + 3, false);
    for (int deferred = 0; deferred < 2; deferred++) {
        sq_opts_t o = {.command = "cargo build", .deferred = deferred};
        buf_reset(&out);
        ASSERT_OK(squash_buffer(&o, in.p, in.len, 101, 0, &out));
        for (int i = 0; i < SQ_HAZARD_SHOW + 3; i++) {
            char l[64];
            snprintf(l, sizeof l, "  --> src/mod%d.rs:%d:13\n", i, 10 + i);
            ASSERT_CONTAINS(out.p, l);
        }
        check_lines(&out, in.p);
    }
    /* The same diagnostic over and over (one place, one message) still
     * folds: SQ_HAZARD_SHOW copies, then the marker, after the last shown
     * copy's own lines. */
    buf_reset(&in);
    same_heads(&in, SQ_HAZARD_SHOW + 3, true);
    sq_opts_t o = {.command = "cargo build", .deferred = true};
    buf_reset(&out);
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 101, 0, &out));
    const char *p = out.p;
    int locs = 0;
    while ((p = strstr(p, "  --> src/mod0.rs:10:13\n"))) {
        locs++;
        p++;
    }
    ASSERT_EQ(locs, SQ_HAZARD_SHOW);
    const char *marker = strstr(out.p, "[rein] repeat 6\xc3\x97 ");
    ASSERT_TRUE(marker != NULL);
    const char *last_loc = out.p;
    for (p = out.p; (p = strstr(p, "  --> src/mod0.rs:10:13\n")); p++)
        last_loc = p;
    ASSERT_TRUE(last_loc < marker); /* the marker closes the block */
    check_lines(&out, in.p);
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_a_cut_line_shows_its_first_and_last_piece_and_names_the_rest)
{
    /* A line of four pieces: the middle two used to fill the tail (a
     * 10 MB line showed 40 pieces and dropped 113 with no marker); now
     * the first and last are shown and the bytes between are named. */
    buf_t in = BUF_INIT, out = BUF_INIT;
    size_t len = 3 * SQ_LINE_MAX + 100;
    for (size_t i = 0; i < len; i++)
        buf_append_byte(&in, 'a' + (char)(i / SQ_LINE_MAX));
    buf_append_byte(&in, '\n');
    char part[96];
    snprintf(part, sizeof part,
             "[rein] omitted part of line 1 (bytes %u-%u)\n", SQ_LINE_MAX,
             3 * SQ_LINE_MAX);
    for (int deferred = 0; deferred < 2; deferred++) {
        sq_opts_t o = {.command = "./gen", .deferred = deferred};
        buf_reset(&out);
        ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
        ASSERT_CONTAINS(out.p, part);
        const char *first = strstr(out.p, "aaaa"), *mark = strstr(out.p, part);
        const char *lastp = strstr(out.p, "dddd");
        ASSERT_TRUE(first && mark && lastp && first < mark && mark < lastp);
        ASSERT_TRUE(strstr(out.p, "bbbb") == NULL);
        ASSERT_TRUE(strstr(out.p, "cccc") == NULL);
        ASSERT_INT(out.len, <, 2 * SQ_LINE_MAX);
        check_lines(&out, in.p);
    }
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_budget_is_never_passed_and_keeps_first_and_last_hazards)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    for (int i = 1; i <= 200; i++)
        buf_printf(&in, "noise line %d\nERROR distinct failure number %c%c%c here\n", i,
                   'a' + i % 26, 'a' + (i / 26) % 26, 'a' + i / 676);
    for (size_t budget = 500; budget <= 3000; budget += 250) {
        sq_opts_t o = {.command = "svc", .log_path = "/var/log/x", .budget_bytes = budget};
        buf_reset(&out);
        ASSERT_OK(squash_buffer(&o, in.p, in.len, 1, 0, &out));
        if (out.len > budget)
            test_fail(__FILE__, __LINE__, "budget %zu: %zu bytes:\n%s", budget, out.len, out.p);
        ASSERT_CONTAINS(out.p, "[rein] exit 1");
        ASSERT_CONTAINS(out.p, "[rein] log /var/log/x");
        ASSERT_CONTAINS(out.p, "ERROR distinct failure number baa here"); /* first (i=1) */
        ASSERT_CONTAINS(out.p, "ERROR distinct failure number sha here"); /* last (i=200) */
        ASSERT_CONTAINS(out.p, " hazards)");
        ASSERT_CONTAINS(out.p, ", bytes ");
        check_lines(&out, in.p);
    }
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_binary_cut_and_prompt_markers)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    buf_append_str(&in, "error: before\n");
    buf_append(&in, "\x01\x02\x03\x00\x04\n\x05\x06\x07\x00\n", 11);
    for (size_t i = 0; i < SQ_LINE_MAX + 5; i++)
        buf_append_byte(&in, 'z');
    buf_append_str(&in, "\nContinue? [y/N] ");
    sq_opts_t o = {.command = "x", .deferred = true};
    squash_t *sq;
    ASSERT_OK(squash_new(&o, collect, &out, &sq));
    ASSERT_OK(squash_feed(sq, in.p, in.len, 0));
    ASSERT_OK(squash_finish(sq, 0, 0, 0));
    ASSERT_CONTAINS(out.p, "[rein] binary 11 bytes (bytes 14-25)\n");
    ASSERT_CONTAINS(out.p, "[rein] prompt (no newline for 500ms)\nContinue? [y/N] \n");
    squash_free(sq);

    /* streaming: a prompt is announced when the pause happens */
    buf_reset(&out);
    sq_opts_t s = {.command = "x"};
    ASSERT_OK(squash_new(&s, collect, &out, &sq));
    ASSERT_OK(squash_feed(sq, "Password: ", 10, 100));
    ASSERT_OK(squash_tick(sq, 100 + SQ_PARTIAL_MS));
    ASSERT_STR(out.p, "[rein] prompt (no newline for 500ms)\nPassword: \n");
    squash_free(sq);

    /* a long hazard line: cut pieces, each announced */
    buf_reset(&in);
    buf_reset(&out);
    buf_append_str(&in, "error: ");
    for (size_t i = 0; i < SQ_LINE_MAX; i++)
        buf_append_byte(&in, 'q');
    buf_append_str(&in, "\n");
    sq_opts_t d = {.command = "x", .deferred = true};
    ASSERT_OK(squash_new(&d, collect, &out, &sq));
    ASSERT_OK(squash_feed(sq, in.p, in.len, 0));
    ASSERT_OK(squash_finish(sq, 1, 0, 0));
    ASSERT_CONTAINS(out.p, "[rein] cut line 1 at 65536 bytes\nerror: qqq");
    squash_free(sq);
    buf_free(&in);
    buf_free(&out);
}

TEST(squash_nothing_dropped_means_no_log_marker)
{
    buf_t out = BUF_INIT;
    sq_opts_t o = {.command = "x", .log_path = "/l", .deferred = true};
    squash_t *sq;
    ASSERT_OK(squash_new(&o, collect, &out, &sq));
    ASSERT_OK(squash_feed(sq, "one\ntwo\n", 8, 0));
    ASSERT_OK(squash_finish(sq, 0, 0, 0));
    ASSERT_STR(out.p, "[rein] exit 0 · 2 lines\none\ntwo\n");
    squash_free(sq);
    buf_free(&out);
}

TEST(squash_input_cap_never_drops_a_hazard_line)
{
    /* all hazards and tiny: the cap would need to drop one; it does not */
    static const char in[] = "a.ts(3,7): error TS1: x\nb.ts(1,1): error TS2: y\n";
    sq_opts_t o = {.command = "tsc", .log_path = "/l"};
    buf_t out = BUF_INIT;
    ASSERT_OK(squash_buffer(&o, in, sizeof in - 1, 2, 0, &out));
    ASSERT_CONTAINS(out.p, "a.ts(3,7): error TS1: x\n");
    ASSERT_CONTAINS(out.p, "b.ts(1,1): error TS2: y\n");
    buf_free(&out);
}

TEST(squash_outcome_show_and_range_list_edges)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    /* SQ_OUTCOME_SHOW outcomes of one template shown, the rest counted;
     * the repeat marker lists EMIT_RANGES_MAX ranges then "+N more" */
    for (int i = 0; i < 2 * (EMIT_RANGES_MAX + 2); i++)
        if (i % 2)
            buf_printf(&in, "added %d packages in 1s\n", i);
        else /* long enough that the whole view is the larger */
            buf_printf(&in, "x%c %0100d\n", 'a' + i / 2, i);
    sq_opts_t o = {.command = "npm", .deferred = true};
    squash_t *sq;
    ASSERT_OK(squash_new(&o, collect, &out, &sq));
    ASSERT_OK(squash_feed(sq, in.p, in.len, 0));
    ASSERT_OK(squash_finish(sq, 0, 0, 0));
    ASSERT_CONTAINS(out.p, "added 1 packages in 1s\n");
    ASSERT_CONTAINS(out.p, "added 3 packages in 1s\n");
    ASSERT_TRUE(strstr(out.p, "added 5 packages") == NULL);
    ASSERT_CONTAINS(out.p, "[rein] repeat 8× \"added {} packages in {}\" "
                           "(lines 2, 4, 6, 8, 10, 12, +2 more)\n");
    squash_free(sq);
    buf_free(&in);
    buf_free(&out);
}

/* Distinct error lines (never folded) and one blank line, making exactly
 * total stripped bytes.  The condensed view is the errors and a noise
 * marker; the whole view is the errors and the blank line: smaller. */
static void whole_input(buf_t *in, size_t total)
{
    buf_reset(in);
    for (int i = 0; in->len + 2 * 16 < total; i++)
        buf_printf(in, "error: item%05d\n", i); /* 16 bytes */
    size_t pad = total - in->len - 1 - 7 - 1; /* blank, "error: ", \n */
    buf_append_str(in, "\nerror: ");
    for (size_t i = 0; i < pad; i++)
        buf_append_byte(in, 'a' + i % 26);
    buf_append_byte(in, '\n');
    ASSERT_EQ(in->len, total);
}

TEST(squash_small_output_is_shown_whole_up_to_the_byte_edge)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    sq_opts_t o = {.command = "cc"};
    whole_input(&in, SQ_WHOLE_BYTES_MAX);
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 1, 0, &out));
    ASSERT_TRUE(strstr(out.p, "[rein] noise") == NULL);
    ASSERT_CONTAINS(out.p, "\n\nerror: ");
    ASSERT_TRUE(strstr(out.p, "[rein] exit 1 · ") == out.p);
    ASSERT_EQ(out.len, in.len + strcspn(out.p, "\n") + 1);
    check_lines(&out, in.p);
    /* one byte more: too big to keep whole, the condensed view it is */
    buf_reset(&out);
    whole_input(&in, SQ_WHOLE_BYTES_MAX + 1);
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 1, 0, &out));
    ASSERT_CONTAINS(out.p, "[rein] noise 1 line (blank 1)\n");
    ASSERT_TRUE(strstr(out.p, "\n\n") == NULL);
    check_lines(&out, in.p);
    buf_free(&in);
    buf_free(&out);
}

/* A grammar for "lst" with one outcome rule for tab-indented rows. */
static grammar_set_t *rows_grammar(const char *category)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"name\": \"lst\", \"detect\": {\"commands\": [\"lst\"]},"
             " \"category\": \"%s\", \"outcome\": [{\"id\": \"row\","
             " \"pattern\": \"^\\\\t\\\\S\"}]}", category);
    grammar_t *g;
    grammar_set_t *set;
    buf_t err = BUF_INIT;
    ASSERT_OK(grammar_parse("lst.json", json, strlen(json), &g, &err));
    ASSERT_OK(grammar_set_new(&set));
    ASSERT_OK(grammar_set_add(set, g));
    ASSERT_OK(grammar_set_resolve(set, &err));
    buf_free(&err);
    return set;
}

TEST(squash_structured_grammar_keeps_every_outcome_line)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 40; i++)
        buf_printf(&in, "unlisted line %d of the listing's chatter, long enough\n", i);
    for (int i = 1; i <= 10; i++)
        buf_printf(&in, "\tmodified:   src/f%d.c\n", i);
    grammar_set_t *set = rows_grammar("structured");
    sq_opts_t o = {.command = "lst", .grammars = set, .log_path = "/l"};
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
    for (int i = 1; i <= 10; i++) {
        char l[64];
        snprintf(l, sizeof l, "\tmodified:   src/f%d.c\n", i);
        ASSERT_CONTAINS(out.p, l);
    }
    ASSERT_TRUE(strstr(out.p, "[rein] repeat") == NULL);
    ASSERT_CONTAINS(out.p, "[rein] omitted 40 lines (lines 1-40)\n");
    check_lines(&out, in.p);
    grammar_set_free(set);
    /* the same rows under `condense`: SQ_OUTCOME_SHOW of one template */
    buf_reset(&out);
    set = rows_grammar("condense");
    o.grammars = set;
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
    ASSERT_CONTAINS(out.p, "\tmodified:   src/f2.c\n");
    ASSERT_TRUE(strstr(out.p, "\tmodified:   src/f3.c\n") == NULL);
    ASSERT_CONTAINS(out.p, "[rein] repeat 10× ");
    check_lines(&out, in.p);
    grammar_set_free(set);
    buf_free(&in);
    buf_free(&out);
}

/* ------------------------------------------------- marker arithmetic */

/* A small deterministic generator of plain output: errors, warnings,
 * blanks, near-duplicates, decoration, CR-redrawn progress, non-text
 * lines and words, so every kind of gap and marker turns up. */
static uint32_t gen_next(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void gen_output(uint32_t seed, buf_t *in)
{
    static const char *const words[] = {"compiling", "linking", "ok",
                                        "done", "foo", "bar", "item"};
    uint32_t s = seed;
    unsigned n = 1 + gen_next(&s) % 300;
    for (unsigned i = 0; i < n; i++) {
        unsigned k = gen_next(&s) % 100;
        if (k < 5)
            buf_printf(in, "src/f%u.c:%u:%u: error: thing %u", gen_next(&s) % 9,
                       1 + gen_next(&s) % 99, 1 + gen_next(&s) % 9,
                       gen_next(&s) % 5);
        else if (k < 10)
            buf_printf(in, "warning: careful %u", gen_next(&s) % 3);
        else if (k < 15)
            ; /* blank */
        else if (k < 35)
            buf_printf(in, "progress %u of 100", gen_next(&s) % 100);
        else if (k < 40)
            for (unsigned j = 3 + gen_next(&s) % 50; j; j--)
                buf_append_str(in, "=");
        else if (k < 43)
            for (unsigned j = 1 + gen_next(&s) % 300; j; j--)
                buf_append(in, &(char){(char)(0x80 | gen_next(&s) % 0x3f)}, 1);
        else if (k < 46)
            for (unsigned j = 0; j <= 100; j += 25)
                buf_printf(in, j ? "\rdl %u%%" : "dl %u%%", j);
        else
            for (unsigned j = 1 + gen_next(&s) % 8; j; j--)
                buf_printf(in, "%s ", words[gen_next(&s) % 7]);
        if (i + 1 < n || gen_next(&s) % 10)
            buf_append_str(in, "\n");
    }
}

/* Every `omitted` marker's count matches its line range, and its byte
 * range is exactly those lines' bytes in the input, for any mix of lines
 * and any budget: what a marker names is what read_output would fetch. */
TEST(squash_omitted_markers_name_exactly_their_lines_and_bytes)
{
    static const size_t budgets[] = {200, 500, 2000, 10000};
    for (uint32_t seed = 1; seed <= 150; seed++) {
        buf_t in = BUF_INIT, out = BUF_INIT;
        gen_output(seed, &in);
        /* starts[k] = offset of line k + 1; one past the last: in.len */
        size_t nl = 0;
        for (size_t i = 0; i < in.len; i++)
            nl += in.p[i] == '\n';
        uint64_t *starts = calloc(nl + 2, sizeof *starts);
        ASSERT_TRUE(starts != NULL);
        size_t k = 1;
        for (size_t i = 0; i < in.len; i++)
            if (in.p[i] == '\n')
                starts[k++] = i + 1;
        for (size_t j = k; j < nl + 2; j++)
            starts[j] = in.len;
        sq_opts_t o = {.command = seed % 2 ? "make" : "tool", .log_path = "/l",
                       .budget_bytes = budgets[seed % 4]};
        ASSERT_OK(squash_buffer(&o, in.p, in.len, 0, 0, &out));
        ASSERT_INT(out.len, <=, o.budget_bytes);
        for (const char *m = out.p; (m = strstr(m, "[rein] omitted "));
             m++) {
            unsigned long long n, a, b, A, B;
            if (sscanf(m, "[rein] omitted %llu lines (lines %llu-%llu, bytes "
                          "%llu-%llu)", &n, &a, &b, &A, &B) != 5) {
                ASSERT_EQ(sscanf(m, "[rein] omitted %llu line (line %llu, "
                                    "bytes %llu-%llu)", &n, &a, &A, &B), 4);
                b = a;
            }
            if (n != b - a + 1 || a < 1 || b > nl + 1 || A != starts[a - 1] ||
                B != starts[b])
                test_fail(__FILE__, __LINE__,
                          "seed %u: \"%.80s\": lines %llu-%llu are bytes "
                          "%llu-%llu", seed, m, a, b,
                          (unsigned long long)starts[a - 1],
                          (unsigned long long)starts[b < nl + 1 ? b : nl + 1]);
        }
        free(starts);
        buf_free(&in);
        buf_free(&out);
    }
}

/* make's grammar keeps `make: *** No rule ...` in a long run of repeated
 * lines; the universal tier alone drops it.  Through a wrapper, in a
 * compound line and inside `sh -c`, make is still the tool detected. */
TEST(squash_wrapped_and_compound_make_keeps_its_error)
{
    char gdir[PATH_MAX];
    tu_shipped_grammars(gdir, sizeof gdir);
    const char *dirs[] = {gdir, NULL};
    buf_t in = BUF_INIT;
    for (int i = 0; i < 300; i++) {
        char l[64];
        int n = snprintf(l, sizeof l, "[%04d] step compiled unit_%d\n", i, i);
        ASSERT_OK(buf_append(&in, l, (size_t)n));
        if (i == 150) {
            static const char e[] = "make: *** No rule to make target "
                                    "'src/missing.c', needed by 'all'.  Stop.\n";
            ASSERT_OK(buf_append(&in, e, sizeof e - 1));
        }
    }
    static const char *const cmds[] = {
        "make",
        "timeout 600 make",
        "timeout -s KILL 10 make",
        "stdbuf -oL make",
        "cd sub && make",
        "./configure && make",
        "bash -c 'make'",
        "sh -c \"make -j4\"",
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        sq_opts_t o = {.command = cmds[c], .log_path = "/l",
                       .grammar_dirs = dirs, .deferred = true};
        buf_t out = BUF_INIT;
        squash_t *sq;
        ASSERT_OK(squash_new(&o, collect, &out, &sq));
        ASSERT_OK(squash_feed(sq, in.p, in.len, 0));
        ASSERT_OK(squash_finish(sq, 2, 100, in.len));
        if (!out.p || !strstr(out.p, "make: *** No rule to make target"))
            test_fail(__FILE__, __LINE__, "%s: the make error is dropped:\n%s",
                      cmds[c], out.p ? out.p : "");
        check_lines(&out, in.p);
        squash_free(sq);
        buf_free(&out);
    }
    buf_free(&in);
}

/* A mostly-ASCII error with a few Latin-1 bytes is binary to the stripper
 * (too much of it is U+FFFD), but it says what broke: it is shown,
 * repaired, and only the lines with nothing to say stay binary markers. */
TEST(squash_hazard_in_a_line_of_bad_utf8_is_shown_not_binary)
{
    buf_t in = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 100; i++)
        buf_printf(&in, "[%04d] step compiled unit_%d\n", i, i);
    size_t bin_at = in.len;
    buf_append_str(&in, "\xe9\xe8\xe0 x\n");
    size_t bin_end = in.len;
    buf_append_str(&in, "main.c:10:5: error: \xab\xbb" "foo\xab\xbb undeclared\n");
    for (int i = 100; i < 200; i++)
        buf_printf(&in, "[%04d] step compiled unit_%d\n", i, i);
    sq_opts_t o = {.command = "./deploy.sh", .log_path = "/l"};
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 1, 0, &out));
    ASSERT_CONTAINS(out.p, "\nmain.c:10:5: error: " UTF8_REPLACEMENT UTF8_REPLACEMENT
                           "foo" UTF8_REPLACEMENT UTF8_REPLACEMENT " undeclared\n");
    char want[64];
    snprintf(want, sizeof want, "[rein] binary %zu bytes (bytes %zu-%zu)\n",
             bin_end - bin_at, bin_at, bin_end);
    ASSERT_CONTAINS(out.p, want);
    buf_free(&in);
    buf_free(&out);
}

/* A bats run (TAP): the plan, 3000 test points, the 1502nd failed with
 * bats' two diagnostic lines under it. */
static void bats_run(buf_t *in)
{
    buf_append_str(in, "1..3000\n");
    for (int i = 1; i <= 3000; i++) {
        if (i == 1502)
            buf_append_str(in, "not ok 1502 addition works\n"
                               "# (in test file test/math.bats, line 12)\n"
                               "#   `[ \"$result\" -eq 4 ]' failed\n");
        else
            buf_printf(in, "ok %d case %d passes\n", i, i);
    }
}

/* The `; N hazards` count of the first omitted marker naming one, or 0. */
static unsigned long omitted_hazards(const char *out)
{
    for (const char *p = out; (p = strstr(p, "[rein] omitted ")); p++) {
        const char *e = strchr(p, '\n'), *h = strstr(p, "; ");
        if (h && (!e || h < e))
            return strtoul(h + 2, NULL, 10);
    }
    return 0;
}

/* The audit's hidden failure: a TAP `not ok` is a hazard under every
 * grammar and with none (make's, a shell script's, a runner of another
 * language's), shown with the diagnostic naming its file and line, and
 * no omitted marker claims a hazard it did not drop. */
TEST(squash_a_failed_tap_test_is_shown_under_any_grammar)
{
    char gdir[PATH_MAX];
    tu_shipped_grammars(gdir, sizeof gdir);
    const char *dirs[] = {gdir, NULL};
    buf_t in = BUF_INIT;
    bats_run(&in);
    static const char *const cmds[] = {
        "make test", "bash ./run-tests.sh", "cat", "bats test/", "prove -v",
        "cargo test", "pytest -q", "go test ./...", "npm test", "node --test",
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        sq_opts_t o = {.command = cmds[c], .log_path = "/l", .grammar_dirs = dirs};
        buf_t out = BUF_INIT;
        ASSERT_OK(squash_buffer(&o, in.p, in.len, 1, 0, &out));
        if (!out.p || !strstr(out.p, "\nnot ok 1502 addition works\n"
                                     "# (in test file test/math.bats, line 12)\n"
                                     "#   `[ \"$result\" -eq 4 ]' failed\n"))
            test_fail(__FILE__, __LINE__, "%s: the failed test is dropped:\n%s",
                      cmds[c], out.p ? out.p : "");
        if (omitted_hazards(out.p))
            test_fail(__FILE__, __LINE__, "%s: a marker counts a hazard shown:\n%s",
                      cmds[c], out.p);
        check_lines(&out, in.p);
        buf_free(&out);
    }
    buf_free(&in);
}

/* prove -v on a Test::More test file: 1200 test points, the 600th failed
 * with Test::More's diagnostics: which test, where, what it got and what
 * it expected. */
static void prove_run(buf_t *in)
{
    buf_append_str(in, "1..1200\n");
    for (int i = 1; i <= 1200; i++) {
        if (i == 600)
            buf_append_str(in, "not ok 600 - add 600 and 1\n"
                               "#   Failed test 'add 600 and 1'\n"
                               "#   at t/math.t line 8.\n"
                               "#          got: '602'\n"
                               "#     expected: '601'\n");
        else
            buf_printf(in, "ok %d - add %d and 1\n", i, i);
    }
}

/* Under a budget a failed test comes first, and a budget too small for
 * its line counts it in its omitted marker; of the lines it owns, the one
 * naming its file and line comes before what it got and expected. */
TEST(squash_a_failed_tap_test_under_a_budget)
{
    buf_t bats = BUF_INIT, prove = BUF_INIT;
    bats_run(&bats);
    prove_run(&prove);
    bool shown = false, counted = false, located = false;
    for (size_t b = 150; b <= 500; b += 2) {
        sq_opts_t o = {.command = "make test", .log_path = "/l", .budget_bytes = b};
        buf_t out = BUF_INIT;
        ASSERT_OK(squash_buffer(&o, bats.p, bats.len, 1, 0, &out));
        ASSERT_TRUE(out.len <= b);
        bool head = strstr(out.p, "\nnot ok 1502 addition works\n") != NULL;
        unsigned long n = omitted_hazards(out.p);
        if (head ? n != 0 : n != 1)
            test_fail(__FILE__, __LINE__, "budget %zu: %lu hazards counted:\n%s",
                      b, n, out.p);
        shown |= head;
        counted |= !head;
        check_lines(&out, bats.p);
        buf_free(&out);

        ASSERT_OK(squash_buffer(&o, prove.p, prove.len, 1, 0, &out));
        ASSERT_TRUE(out.len <= b);
        bool loc = strstr(out.p, "\n#   at t/math.t line 8.\n") != NULL;
        bool msg = strstr(out.p, "\n#          got: '602'\n") ||
                   strstr(out.p, "\n#     expected: '601'\n");
        if (msg && !loc)
            test_fail(__FILE__, __LINE__, "budget %zu: no location:\n%s", b, out.p);
        located |= loc;
        check_lines(&out, prove.p);
        buf_free(&out);
    }
    ASSERT_TRUE(shown && counted && located);
    buf_free(&bats);
    buf_free(&prove);
}

/* go test ./... with five failing packages: go's grammar calls each
 * `FAIL\tpkg\t0.01s` an outcome, and outcomes fold by template, but a
 * verdict the universal tier calls an error folds only with identical
 * copies: every failing package is named in the view. */
TEST(squash_every_failing_package_verdict_is_shown)
{
    char gdir[PATH_MAX];
    tu_shipped_grammars(gdir, sizeof gdir);
    const char *dirs[] = {gdir, NULL};
    buf_t in = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 300; i++)
        buf_printf(&in, "=== RUN   TestX%d\n--- PASS: TestX%d (0.00s)\n", i, i);
    for (char p = 'a'; p <= 'e'; p++)
        buf_printf(&in, "--- FAIL: TestF_%c (0.00s)\n    f_test.go:9: bad %c\nFAIL\n"
                        "FAIL\texample.com/%c\t0.01s\n", p, p, p);
    sq_opts_t o = {.command = "go test ./...", .log_path = "/l", .grammar_dirs = dirs};
    ASSERT_OK(squash_buffer(&o, in.p, in.len, 1, 0, &out));
    for (char p = 'a'; p <= 'e'; p++) {
        char want[64];
        snprintf(want, sizeof want, "\nFAIL\texample.com/%c\t0.01s\n", p);
        if (!strstr(out.p, want))
            test_fail(__FILE__, __LINE__, "package %c's verdict is folded:\n%s", p, out.p);
    }
    /* the bare `FAIL` lines are copies of one another, and fold */
    ASSERT_CONTAINS(out.p, "[rein] repeat 5\xc3\x97 \"FAIL\" (lines ");
    check_lines(&out, in.p);
    buf_free(&in);
    buf_free(&out);
}
