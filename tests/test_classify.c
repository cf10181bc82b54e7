/*
 * test_classify.c — the classifier's tiers: universal hazards (traces of
 * each language, compiler locations, keywords with their boundaries and
 * zero counts, colour), tools' own failure forms (signal deaths, make,
 * the linker, shells, curl, Ruby, mocha, errno texts) beside harmless
 * look-alikes, the failure lines of popular test runners, checkers and
 * git in a table beside a table of their look-alikes, the detail a
 * failed test and a memory checker's report own, a grammar's noise rule
 * unable to hide a universal error, a BuildKit step prefix, the scan
 * windows of a long line at their edges, hazards in lines binary for bad
 * UTF-8, multiline capture and its limits, outcomes and progress finals,
 * prompts, structure (blank, decoration, hints, near-duplicates, diffs
 * bypassing them), a compound command's several grammars (no noise
 * rule hides a hazard), clang's gutterless excerpt, taken by its
 * place under the gcc grammar, and HCL diagnostics (terraform), boxed
 * and plain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/utf8.h"
#include "harness.h"
#include "squash/classify.h"
#include "tutil.h"

struct cl {
    classify_t *c;
    uint64_t n;
};

static cls_result_t cl_line(struct cl *s, const char *text, sq_line_kind_t k,
                            unsigned colours, uint32_t frames)
{
    sq_line_t l = {.text = text, .len = strlen(text), .kind = k,
                   .colours = colours, .lineno = ++s->n, .frames = frames};
    cls_result_t r;
    ASSERT_OK(classify_line(s->c, &l, &r));
    return r;
}

static cls_result_t cl(struct cl *s, const char *text)
{
    return cl_line(s, text, SQ_LINE_COMPLETE, 0, 0);
}

#define EXPECT(s, text, kind_, warn_)                                        \
    do {                                                                    \
        cls_result_t r_ = cl((s), (text));                                  \
        if (r_.kind != (kind_) || (r_.kind == CLS_HAZARD && r_.warning != (warn_))) \
            test_fail(__FILE__, __LINE__, "\"%s\": kind %d warn %d (%s/%s)", \
                      (text), r_.kind, r_.warning, r_.source, r_.rule);     \
    } while (0)

TEST(classify_keywords_with_boundaries_and_zero_counts)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    EXPECT(&s, "error: linker failed", CLS_HAZARD, false);
    EXPECT(&s, "npm error code E404", CLS_HAZARD, false);
    EXPECT(&s, "npm warn deprecated inflight@1.0.6", CLS_HAZARD, true);
    EXPECT(&s, "E: Unable to locate package foo", CLS_HAZARD, false);
    EXPECT(&s, "2026-01-01T00:00:00Z ERROR db: reset", CLS_HAZARD, false);
    EXPECT(&s, "x WARN slow query", CLS_HAZARD, true);
    EXPECT(&s, "make: *** [Makefile:3: all] Error 2", CLS_HAZARD, false);
    EXPECT(&s, "test_x (a.B.test_x) ... FAIL", CLS_HAZARD, false);
    EXPECT(&s, "Inst liberror-perl (0.17029-2 Debian)", CLS_UNKNOWN, false);
    EXPECT(&s, "compiling src/error.c with -Werror", CLS_UNKNOWN, false);
    EXPECT(&s, "test_error_path ... ok", CLS_UNKNOWN, false);
    EXPECT(&s, "Build finished with 0 errors", CLS_OUTCOME, false);
    EXPECT(&s, "no warnings found here", CLS_UNKNOWN, false);
    EXPECT(&s, "errors: 0 total", CLS_UNKNOWN, false);
    classify_free(s.c);
}

TEST(classify_compiler_locations_and_their_context)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    cls_result_t r = cl(&s, "src/a.c:19:17: warning: unused [-Wunused]");
    ASSERT_EQ(r.kind, CLS_HAZARD);
    ASSERT_TRUE(r.warning);
    ASSERT_TRUE(r.has_loc);
    ASSERT_EQ(r.loc_len, strlen("src/a.c:19:17"));
    r = cl(&s, "   19 |     int x;");
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.cont);
    r = cl(&s, "      |         ^");
    ASSERT_TRUE(r.cont);
    r = cl(&s, "src/a.c:3:1: note: declared here");
    ASSERT_TRUE(r.cont);
    r = cl(&s, "src/a.c:23:24: error: expected ';'");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont && !r.warning);
    r = cl(&s, "src/a.c: In function 'main':");
    ASSERT_EQ(r.kind, CLS_UNKNOWN);
    r = cl(&s, "x.py:3: DeprecationWarning: old");
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.warning);
    r = cl(&s, "error[E0308]: mismatched types");
    ASSERT_EQ(r.kind, CLS_HAZARD);
    r = cl(&s, "  --> src/main.rs:4:18");
    ASSERT_TRUE(r.cont);
    /* the capture stops at its limit */
    cl(&s, "");
    cl(&s, "f.c:1:1: error: x");
    for (int i = 0; i < CLS_CC_CONTEXT_MAX; i++)
        ASSERT_TRUE(cl(&s, "   1 | x").cont);
    ASSERT_FALSE(cl(&s, "   1 | x").cont);
    classify_free(s.c);
}

/* gcc's and clang's lines that lead into a diagnostic, known without a
 * grammar (a build under ninja or a script): unknown lines marked lead,
 * which the squasher shows with the diagnostic below them.  Near misses
 * are plain lines. */
TEST(classify_compiler_lead_lines_without_a_grammar)
{
    static const char *const leads[] = {
        "In file included from src/main.c:3:",
        "In file included from src/../include/vec.h:3,",
        "                 from src/parse.c:1:",
        "src/util.h: In function \xe2\x80\x98vec_dot\xe2\x80\x99:",
        "src/shape.cc: In member function 'int Shape::area() const':",
        "src/t.hpp: In instantiation of 'struct S<int>':",
        "src/l.cc: In lambda function:",
        "src/main.c: At top level:",
        "my dir/x.c: In function 'f':",
    };
    static const char *const plain[] = {
        "In file included from the notes we took",
        "In file included from a.c:",
        "In file included from a b.c:3:",
        "   from src/parse.c:1:",
        "In function 'f':",
        "src/main.c: At top level: more",
        "src/main.c: In function 'f'",
        "warning: In function 'f':",
    };
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    for (size_t i = 0; i < sizeof leads / sizeof leads[0]; i++) {
        cls_result_t r = cl(&s, leads[i]);
        if (r.kind != CLS_UNKNOWN || !r.lead)
            test_fail(__FILE__, __LINE__, "\"%s\": kind %d lead %d", leads[i],
                      r.kind, r.lead);
    }
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        cls_result_t r = cl(&s, plain[i]);
        if (r.lead)
            test_fail(__FILE__, __LINE__, "\"%s\": lead", plain[i]);
    }
    classify_free(s.c);
}

TEST(classify_stack_traces_of_each_language)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    ASSERT_EQ(cl(&s, "Traceback (most recent call last):").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "  File \"a.py\", line 3, in f").cont);
    ASSERT_TRUE(cl(&s, "    x()").cont);
    cls_result_t r = cl(&s, "KeyError: 'k'");
    ASSERT_TRUE(r.cont);
    ASSERT_FALSE(cl(&s, "after").kind == CLS_HAZARD);
    ASSERT_EQ(cl(&s, "panic: runtime error: index out of range").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "").kind != CLS_HAZARD);
    ASSERT_EQ(cl(&s, "goroutine 1 [running]:").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "main.main()").cont);
    ASSERT_TRUE(cl(&s, "\t/tmp/x.go:5 +0x1d").cont);
    cl(&s, "");
    ASSERT_EQ(cl(&s, "thread 'main' panicked at src/main.rs:2:5:").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "called `Option::unwrap()` on a `None` value").cont);
    cl(&s, "");
    ASSERT_EQ(cl(&s, "Exception in thread \"main\" java.lang.IllegalStateException: x").kind,
              CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "\tat com.x.Main.main(Main.java:5)").cont);
    ASSERT_TRUE(cl(&s, "Caused by: java.io.IOException: y").cont);
    ASSERT_TRUE(cl(&s, "\t... 3 more").cont);
    ASSERT_EQ(cl(&s, "TypeError: Cannot read properties of undefined").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "    at Object.<anonymous> (/a/app.js:10:7)").cont);
    ASSERT_FALSE(cl(&s, "next").cont);
    /* node's throw site above an uncaught exception: the path and line,
     * its source line (code at column 0 too) and the caret under it */
    cl(&s, "");
    r = cl(&s, "/tmp/nd/build.js:3");
    ASSERT_EQ(r.kind, CLS_HAZARD);
    ASSERT_STR(r.rule, "throw-site");
    ASSERT_TRUE(cl(&s, "function load() { return cfg.entry; }").cont);
    ASSERT_TRUE(cl(&s, "                             ^").cont);
    ASSERT_FALSE(cl(&s, "").cont);
    ASSERT_EQ(cl(&s, "file:///app/x.mjs:9").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "await go();").cont);
    ASSERT_FALSE(cl(&s, "not a caret").cont); /* the capture ends */
    /* with no excerpt printed, the exception under it is its own */
    ASSERT_EQ(cl(&s, "/app/src/a.ts:12").kind, CLS_HAZARD);
    r = cl(&s, "TypeError: x");
    ASSERT_FALSE(r.cont);
    ASSERT_EQ(r.kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "    at f (a.ts:1:1)").cont);
    cl(&s, "");
    /* not throw sites: no script, words around it, a column */
    static const char *const not_sites[] = {
        "a.c:3", "see app.js:3", "app.js:3:7", "/dir/:3", "app.js:",
        "http://x/app.js:80", "app.js:3x",
        "src/a.js:3", /* grep -c's count of a file */
        NULL};
    for (const char *const *p = not_sites; *p; p++) {
        r = cl(&s, *p);
        if (r.kind == CLS_HAZARD && r.rule && !strcmp(r.rule, "throw-site"))
            test_fail(__FILE__, __LINE__, "\"%s\" is a throw site", *p);
    }
    classify_free(s.c);
}

TEST(classify_colour_outcomes_progress_and_prompts)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    ASSERT_EQ(cl_line(&s, "build broke: missing header", SQ_LINE_COMPLETE,
                      SQ_COLOUR_RED, 0).kind, CLS_HAZARD);
    ASSERT_EQ(cl_line(&s, "build broke: missing header", SQ_LINE_COMPLETE, 0, 0).kind,
              CLS_UNKNOWN);
    cls_result_t r = cl_line(&s, "package is deprecated", SQ_LINE_COMPLETE,
                             SQ_COLOUR_YELLOW, 0);
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.warning);
    ASSERT_EQ(cl(&s, "added 125 packages in 3s").kind, CLS_OUTCOME);
    ASSERT_EQ(cl(&s, "Ran 241 tests in 0.005s").kind, CLS_OUTCOME);
    ASSERT_EQ(cl(&s, "2 upgraded, 135 newly installed, 0 to remove").kind, CLS_OUTCOME);
    ASSERT_EQ(cl(&s, "==== 3 passed, 1 skipped in 0.2s ====").kind, CLS_OUTCOME);
    ASSERT_EQ(cl_line(&s, "Downloading [#####] 100%", SQ_LINE_OVERWRITE, 0, 50).kind,
              CLS_OUTCOME);
    r = cl_line(&s, "", SQ_LINE_OVERWRITE, 0, 3);
    ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_PROGRESS);
    ASSERT_EQ(cl_line(&s, "npm http fetch GET 200 x", SQ_LINE_OVERWRITE, 0, 1).kind,
              CLS_UNKNOWN);
    ASSERT_EQ(cl_line(&s, "Password: ", SQ_LINE_PARTIAL, 0, 0).kind, CLS_PROMPT);
    ASSERT_EQ(cl_line(&s, "Continue? [Y/n] ", SQ_LINE_PARTIAL, 0, 0).kind, CLS_PROMPT);
    ASSERT_EQ(cl_line(&s, "downloading", SQ_LINE_PARTIAL, 0, 0).kind, CLS_UNKNOWN);
    ASSERT_EQ(cl(&s, "Password: ").kind, CLS_UNKNOWN); /* complete: not a prompt */
    classify_free(s.c);
}

TEST(classify_structure_blank_decor_hint_repeat_and_diff_bypass)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    ASSERT_EQ(cl(&s, "   ").noise, CLS_NOISE_BLANK);
    ASSERT_EQ(cl(&s, "=========").noise, CLS_NOISE_DECOR);
    ASSERT_EQ(cl(&s, "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80").noise, CLS_NOISE_DECOR);
    ASSERT_EQ(cl(&s, "  (use \"git add\" to track)").noise, CLS_NOISE_HINT);
    ASSERT_EQ(cl(&s, "(not indented: not a hint)").kind, CLS_UNKNOWN);
    ASSERT_EQ(cl(&s, "fetch GET 200 https://r.org/a 6ms").kind, CLS_UNKNOWN);
    cls_result_t r = cl(&s, "fetch GET 200 https://r.org/b 7ms");
    ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_REPEAT);
    /* high-entropy lines are never merged */
    ASSERT_EQ(cl(&s, "key AAAAB3NzaC1yc2EAAAADAQABAAABAQC1").kind, CLS_UNKNOWN);
    ASSERT_EQ(cl(&s, "key AAAAB3NzaC1yc2EAAAADAQABAAABAQC2").kind, CLS_UNKNOWN);
    /* nor are diff lines */
    ASSERT_EQ(cl(&s, "diff --git a/x b/x").kind, CLS_UNKNOWN);
    ASSERT_EQ(cl(&s, "+line 1").kind, CLS_UNKNOWN);
    ASSERT_EQ(cl(&s, "+line 2").kind, CLS_UNKNOWN);
    ASSERT_STR(classify_noise_name(CLS_NOISE_PROGRESS), "progress");
    classify_free(s.c);
}

TEST(classify_grammar_tier_comes_first)
{
    grammar_t *g;
    buf_t err = BUF_INIT;
    static const char j[] =
        "{\"name\":\"t\",\"hazard\":[{\"id\":\"h\",\"pattern\":\"^BAD (?<file>\\\\S+):(?<line>\\\\d+)\","
        "\"severity\":\"warning\",\"multiline\":{\"continue\":\"^>\",\"max_lines\":2}}],"
        "\"noise\":[{\"id\":\"e\",\"pattern\":\"^warning: ignorable\"}]}";
    ASSERT_OK(grammar_parse("t", j, sizeof j - 1, &g, &err));
    struct cl s = {0};
    ASSERT_OK(classify_new(g, &s.c));
    cls_result_t r = cl(&s, "BAD a.c:3 x");
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.warning);
    ASSERT_STR(r.source, "t");
    ASSERT_STR(r.rule, "h");
    ASSERT_TRUE(r.has_loc);
    ASSERT_EQ(r.loc_len, 5);
    ASSERT_TRUE(cl(&s, "> 1").cont);
    ASSERT_TRUE(cl(&s, "> 2").cont);
    ASSERT_FALSE(cl(&s, "> 3").cont); /* max_lines */
    /* a warning the universal rules see may be the grammar's noise */
    r = cl(&s, "warning: ignorable");
    ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_TOOL);
    classify_free(s.c);
    grammar_free(g);
    buf_free(&err);
}

/* A compound command's grammars, tier by tier: when two disagree the most
 * visible verdict stands (hazard over outcome over noise), a tie goes to
 * the first, and a noise rule of one tool never hides a line the
 * universal rules call a hazard; a single grammar's noise may hide a
 * warning, never an error. */
TEST(classify_several_grammars_never_let_noise_hide_a_hazard)
{
    static const char a_json[] =
        "{\"name\":\"a\",\"hazard\":[{\"id\":\"a-fail\",\"pattern\":\"^A FAIL\"},"
        "{\"id\":\"a-both\",\"pattern\":\"^both\",\"severity\":\"warning\"}],"
        "\"outcome\":[{\"id\":\"a-done\",\"pattern\":\"^A done\"}],"
        "\"noise\":[{\"id\":\"a-chatter\",\"pattern\":\"^(?:B FAIL|B done|z)\"},"
        "{\"id\":\"a-err\",\"pattern\":\"^(?:error|warning): \",\"action\":\"dedup\"}]}";
    static const char b_json[] =
        "{\"name\":\"b\",\"hazard\":[{\"id\":\"b-fail\",\"pattern\":\"^B FAIL\"},"
        "{\"id\":\"b-both\",\"pattern\":\"^both\"}],"
        "\"outcome\":[{\"id\":\"b-done\",\"pattern\":\"^B done\"}],"
        "\"noise\":[{\"id\":\"b-chatter\",\"pattern\":\"^(?:A FAIL|A done|z)\"}]}";
    grammar_t *a, *b;
    buf_t err = BUF_INIT;
    ASSERT_OK(grammar_parse("a", a_json, sizeof a_json - 1, &a, &err));
    ASSERT_OK(grammar_parse("b", b_json, sizeof b_json - 1, &b, &err));
    const grammar_t *ab[] = {a, b}, *ba[] = {b, a};
    for (int order = 0; order < 2; order++) {
        struct cl s = {0};
        ASSERT_OK(classify_new_set(order ? ba : ab, 2, &s.c));
        /* each tool's hazard, though the other calls the line noise */
        cls_result_t r = cl(&s, "A FAIL x");
        ASSERT_TRUE(r.kind == CLS_HAZARD && r.grammar == a);
        ASSERT_STR(r.rule, "a-fail");
        r = cl(&s, "B FAIL y");
        ASSERT_TRUE(r.kind == CLS_HAZARD && r.grammar == b);
        /* each tool's outcome, over the other's noise */
        r = cl(&s, "A done 1");
        ASSERT_TRUE(r.kind == CLS_OUTCOME && r.grammar == a);
        r = cl(&s, "B done 2");
        ASSERT_TRUE(r.kind == CLS_OUTCOME && r.grammar == b);
        /* a tie in one tier: the first grammar's rule */
        r = cl(&s, "both q");
        ASSERT_TRUE(r.kind == CLS_HAZARD && r.grammar == (order ? b : a));
        ASSERT_EQ(r.warning, order == 0);
        /* noise both call noise stays noise */
        r = cl(&s, "z");
        ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_TOOL);
        ASSERT_TRUE(r.grammar == (order ? b : a));
        /* a's noise rule on a line the universal rules call an error,
         * or only a warning */
        r = cl(&s, "error: linker failed");
        ASSERT_TRUE(r.kind == CLS_HAZARD && !r.warning && r.grammar == NULL);
        ASSERT_STR(r.source, "universal");
        r = cl(&s, "warning: unused variable");
        ASSERT_TRUE(r.kind == CLS_HAZARD && r.warning && r.grammar == NULL);
        classify_free(s.c);
    }
    /* a alone speaks for every line: its noise stands over a warning, but
     * never over an error */
    struct cl s = {0};
    ASSERT_OK(classify_new_set(ab, 1, &s.c));
    cls_result_t r = cl(&s, "warning: unused variable");
    ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_DEDUP && r.grammar == a);
    r = cl(&s, "error: linker failed");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.warning && r.grammar == NULL);
    r = cl(&s, "B done 2");
    ASSERT_TRUE(r.kind == CLS_NOISE && r.grammar == a);
    classify_free(s.c);
    /* GRAMMAR_PER_COMMAND_MAX grammars at most */
    const grammar_t *many[GRAMMAR_PER_COMMAND_MAX + 1];
    for (size_t i = 0; i <= GRAMMAR_PER_COMMAND_MAX; i++)
        many[i] = i % 2 ? b : a;
    ASSERT_OK(classify_new_set(many, GRAMMAR_PER_COMMAND_MAX, &s.c));
    classify_free(s.c);
    s.c = NULL;
    ASSERT_EQ(classify_new_set(many, GRAMMAR_PER_COMMAND_MAX + 1, &s.c), -EINVAL);
    ASSERT_TRUE(s.c == NULL);
    grammar_free(a);
    grammar_free(b);
    buf_free(&err);
}

TEST(classify_more_tool_shapes_without_grammars)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    cls_result_t r = cl(&s, "src/index.ts(3,7): error TS2322: Type 'string'");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.warning && r.has_loc);
    ASSERT_EQ(r.loc_len, strlen("src/index.ts(3,7)"));
    cl(&s, "");
    EXPECT(&s, "   3:7   error    'x' is never used  no-unused-vars", CLS_HAZARD, false);
    cl(&s, "");
    EXPECT(&s, "  10:1   warning  Unexpected console statement", CLS_HAZARD, true);
    cl(&s, "");
    EXPECT(&s, "E       AssertionError: assert 6 == 7", CLS_HAZARD, false);
    cl(&s, "");
    r = cl(&s, "    calc_test.go:14: Sub(3, 1) = 3, want 2");
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.has_loc);
    ASSERT_EQ(r.loc_off, 4);
    ASSERT_EQ(r.loc_len, strlen("calc_test.go:14"));
    cl(&s, "");
    EXPECT(&s, "bash: foo: command not found", CLS_HAZARD, false);
    cl(&s, "");
    EXPECT(&s, "find: '/root': Permission denied", CLS_HAZARD, false);
    cl(&s, "");
    EXPECT(&s, "tests/test_a.py ......  [ 50%]", CLS_UNKNOWN, false);
    EXPECT(&s, "tests: 12 passed", CLS_OUTCOME, false);
    /* an error word line owns the indented detail under it */
    ASSERT_EQ(cl(&s, "npm ERR! code E404").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "  npm ERR! 404 Not Found - GET https://x").cont);
    classify_free(s.c);
}

TEST(classify_outcome_length_limit_at_its_edge)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    char line[CLS_OUTCOME_LEN_MAX + 2];
    memset(line, 'x', sizeof line);
    memcpy(line, "added 3 packages ", 17);
    line[CLS_OUTCOME_LEN_MAX] = '\0';
    ASSERT_EQ(cl(&s, line).kind, CLS_OUTCOME);
    line[CLS_OUTCOME_LEN_MAX] = 'y';
    line[CLS_OUTCOME_LEN_MAX + 1] = '\0';
    ASSERT_EQ(cl(&s, line).kind, CLS_UNKNOWN);
    classify_free(s.c);
}

#define EXPECT_CALM(s, text)                                                 \
    do {                                                                    \
        cls_result_t r_ = cl((s), (text));                                  \
        if (r_.kind == CLS_HAZARD)                                          \
            test_fail(__FILE__, __LINE__, "\"%s\": a hazard (%s/%s)",      \
                      (text), r_.source, r_.rule);                          \
    } while (0)

/* What a process or a tool says as it fails, in its own words rather than
 * with an error word: each form, and the harmless lines beside it. */
/* glog's and klog's level letter (kubectl, Kubernetes, Go and C++
 * servers): E and F errors, W a warning, I none (its words still count);
 * Go's and node's lower-case texts of failed calls; `refused`. */
TEST(classify_glog_levels_and_lower_case_errno_texts)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    EXPECT(&s, "E1124 07:51:39.309454   21704 memcache.go:265] \"Unhandled\"",
           CLS_HAZARD, false);
    EXPECT(&s, "F1124 07:51:39.309454 1 main.go:9] cannot start", CLS_HAZARD, false);
    EXPECT(&s, "W1124 07:51:39.309454 1 x.go:9] slow", CLS_HAZARD, true);
    EXPECT(&s, "W20261124 07:51:39.309454 1 x.cc:9] slow", CLS_HAZARD, true);
    EXPECT(&s, "I1124 07:51:39.309454 1 x.go:9] started", CLS_UNKNOWN, false);
    EXPECT(&s, "I1124 07:51:39.309454 1 x.go:9] ERROR in y", CLS_HAZARD, false);
    EXPECT(&s, "E1124 07:51:39 1 x.go:9] no fraction", CLS_UNKNOWN, false);
    EXPECT(&s, "E1124 notatime", CLS_UNKNOWN, false);
    EXPECT(&s, "dial tcp 127.0.0.1:8080: connect: connection refused",
           CLS_HAZARD, false);
    EXPECT(&s, "lookup registry.example.com on 10.0.0.53:53: no such host",
           CLS_HAZARD, false);
    EXPECT(&s, "open /etc/app.conf: no such file or directory", CLS_HAZARD, false);
    EXPECT(&s, "read tcp 10.0.0.2:443: i/o timeout", CLS_HAZARD, false);
    EXPECT(&s, "The connection to the server localhost:8080 was refused - "
               "did you specify the right host or port?", CLS_HAZARD, false);
    EXPECT(&s, "refusedconnections 0", CLS_UNKNOWN, false);
    classify_free(s.c);
}

TEST(classify_deaths_and_tools_own_error_forms)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    EXPECT(&s, "Killed", CLS_HAZARD, false);
    EXPECT(&s, "Terminated", CLS_HAZARD, false);
    EXPECT(&s, "Aborted (core dumped)", CLS_HAZARD, false);
    EXPECT(&s, "./x.sh: line 3:  4242 Killed                  sleep 9", CLS_HAZARD, false);
    EXPECT(&s, "./x.sh: line 5: 77 Bus error               ./prog", CLS_HAZARD, false);
    EXPECT(&s, "/bin/sh: 1: cmake: not found", CLS_HAZARD, false);
    EXPECT(&s, "sh: ninja: not found", CLS_HAZARD, false);
    EXPECT(&s, "bash: foo: command not found", CLS_HAZARD, false);
    EXPECT(&s, "./deploy.sh: line 14: syntax error near unexpected token `fi'",
           CLS_HAZARD, false);
    EXPECT(&s, "./x.sh: line 9: syntax error: unexpected end of file", CLS_HAZARD, false);
    EXPECT(&s, "./x.sh: 4: Syntax error: \"fi\" unexpected", CLS_HAZARD, false);
    EXPECT(&s, "make: *** No rule to make target 'x'.  Stop.", CLS_HAZARD, false);
    EXPECT(&s, "make[2]: *** No targets specified and no makefile found.  Stop.",
           CLS_HAZARD, false);
    EXPECT(&s, "Makefile:5: *** missing separator.  Stop.", CLS_HAZARD, false);
    EXPECT(&s, "make: *** [Makefile:3: all] Error 2", CLS_HAZARD, false);
    EXPECT(&s, "terminate called after throwing an instance of 'std::runtime_error'",
           CLS_HAZARD, false);
    EXPECT(&s, "a.out: main.c:5: main: Assertion `n == 3' failed.", CLS_HAZARD, false);
    EXPECT(&s, "Assertion failed: n == 3 (main.c: main: 5)", CLS_HAZARD, false);
    EXPECT(&s, "main.c:(.text+0x1a): undefined reference to `foo'", CLS_HAZARD, false);
    EXPECT(&s, "/usr/bin/ld: cannot find -lssl", CLS_HAZARD, false);
    EXPECT(&s, "b.c:(.text+0x0): multiple definition of `main'", CLS_HAZARD, false);
    EXPECT(&s, "cc1: all warnings being treated as errors", CLS_HAZARD, false);
    EXPECT(&s, "curl: (6) Could not resolve host: example.invalid", CLS_HAZARD, false);
    EXPECT(&s, "curl: (7) Failed to connect to x port 80 after 0 ms", CLS_HAZARD, false);
    EXPECT(&s, "ssh: connect to host b port 22: Connection refused", CLS_HAZARD, false);
    EXPECT(&s, "touch: cannot touch '/usr/x': Read-only file system", CLS_HAZARD, false);
    EXPECT(&s, "dd: writing to 'x': No space left on device", CLS_HAZARD, false);
    EXPECT(&s, "listen tcp :8080: bind: Address already in use", CLS_HAZARD, false);
    cl(&s, ""); /* mocha's summary on its own, not as the detail above */
    EXPECT(&s, "  1 failing", CLS_HAZARD, false);
    cl(&s, "");
    /* Ruby's uncaught exception owns its `from` frames */
    EXPECT(&s, "app.rb:3:in `<main>': undefined local variable or method `x' "
               "for main:Object (NameError)", CLS_HAZARD, false);
    ASSERT_TRUE(cl(&s, "\tfrom app.rb:9:in `run'").cont);
    cl(&s, "");
    /* node's `Name [code]:`, and indented under a test's title */
    EXPECT(&s, "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'x'", CLS_HAZARD, false);
    cl(&s, "");
    EXPECT(&s, "      AssertionError [ERR_ASSERTION]: 4 == -1", CLS_HAZARD, false);
    ASSERT_TRUE(cl(&s, "      at Context.<anonymous> (test/test.js:6:14)").cont);
    cl(&s, "");
    /* harmless: prose, identifiers, flags, zero counts, probes, progress */
    EXPECT_CALM(&s, "Killed 3 stale workers");
    EXPECT_CALM(&s, "Terminated workers are restarted");
    EXPECT_CALM(&s, "checking for cmake... not found");
    EXPECT_CALM(&s, "fix syntax error in README");
    EXPECT_CALM(&s, "INFO: *** starting ***");
    EXPECT_CALM(&s, "see app.rb:3:in the docs");
    EXPECT_CALM(&s, "  0 failing");
    EXPECT_CALM(&s, "  2 passing (12ms)");
    EXPECT_CALM(&s, "    TypeError is thrown for a bad argument");
    EXPECT_CALM(&s, "0 errors");
    EXPECT_CALM(&s, "error_handler.c compiled");
    EXPECT_CALM(&s, "running with --no-error and --no-warn");
    EXPECT_CALM(&s, "[####      ] 45% fetching error_codes.json");
    EXPECT_CALM(&s, "Downloading connection-refused-handler 12/40");
    classify_free(s.c);
}

/* A BuildKit step's output (`#8 0.345 text`) is judged after its prefix,
 * with the location where it is in the line, and captures nothing. */
TEST(classify_hazard_after_a_build_step_prefix)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    EXPECT(&s, "#8 0.512 E: Unable to locate package foo", CLS_HAZARD, false);
    EXPECT(&s, "#8 0.345 make: *** No targets specified and no makefile found.  Stop.",
           CLS_HAZARD, false);
    EXPECT(&s, "#12 Killed", CLS_HAZARD, false);
    cls_result_t r = cl(&s, "#8 0.345 src/a.c:3:4: error: boom");
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.has_loc);
    ASSERT_EQ(r.loc_off, strlen("#8 0.345 "));
    ASSERT_EQ(r.loc_len, strlen("src/a.c:3:4"));
    ASSERT_FALSE(cl(&s, "#8 0.346     3 |   int x;").cont);
    EXPECT_CALM(&s, "#8 [3/4] RUN make");
    EXPECT_CALM(&s, "#8 DONE 0.1s");
    classify_free(s.c);
}

/* A line with `word` at off in a line of len 'b's, spaces around it. */
static char *long_line(size_t len, size_t off, const char *word)
{
    char *l = malloc(len + 1);
    ASSERT_TRUE(l != NULL);
    memset(l, 'b', len);
    l[len] = '\0';
    size_t w = strlen(word);
    if (off > 0)
        l[off - 1] = ' ';
    memcpy(l + off, word, w);
    if (off + w < len)
        l[off + w] = ' ';
    return l;
}

static cls_kind_t long_kind(size_t len, size_t off)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    char *l = long_line(len, off, "ERROR");
    cls_kind_t k = cl(&s, l).kind;
    free(l);
    classify_free(s.c);
    return k;
}

/* The keyword scan reads the first and the last CLS_SCAN_MAX bytes of a
 * line, each at its edge; the middle of a longer line is not read. */
TEST(classify_scan_windows_at_their_edges)
{
    const size_t W = CLS_SCAN_MAX, L = 2 * CLS_SCAN_MAX + 1000;
    ASSERT_EQ(long_kind(L, W - 5), CLS_HAZARD);      /* ends at the head's edge */
    ASSERT_EQ(long_kind(L, W - 4), CLS_UNKNOWN);     /* one byte past it */
    ASSERT_EQ(long_kind(L, L - W), CLS_HAZARD);      /* starts at the tail's edge */
    ASSERT_EQ(long_kind(L, L - W - 1), CLS_UNKNOWN); /* one byte before it */
    ASSERT_EQ(long_kind(L, L / 2), CLS_UNKNOWN);     /* the middle */
    /* the windows overlap on a shorter line: a word across the head's
     * edge is seen whole */
    ASSERT_EQ(long_kind(W + 100, W - 3), CLS_HAZARD);
    /* the audit's line: 5000 bytes, then the message */
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    char l[5100];
    memset(l, 'b', 5000);
    strcpy(l + 5000, " ERROR: beyond scan window");
    EXPECT(&s, l, CLS_HAZARD, false);
    classify_free(s.c);
}

/* A line binary only for its ill-formed UTF-8 comes with its repaired
 * text: shown when it is a hazard on its own, else binary. */
TEST(classify_binary_line_with_a_hazard_is_shown)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    static const char err[] = "main.c:10:5: error: " UTF8_REPLACEMENT "foo undeclared";
    cls_result_t r = cl_line(&s, err, SQ_LINE_BINARY, 0, 0);
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.warning && r.has_loc);
    ASSERT_EQ(r.loc_len, strlen("main.c:10:5"));
    ASSERT_EQ(cl_line(&s, UTF8_REPLACEMENT " caf" UTF8_REPLACEMENT, SQ_LINE_BINARY, 0, 0).kind,
              CLS_BINARY);
    ASSERT_EQ(cl_line(&s, "", SQ_LINE_BINARY, 0, 0).kind, CLS_BINARY);
    /* colour alone does not make one: red garbage stays binary */
    ASSERT_EQ(cl_line(&s, UTF8_REPLACEMENT " failed", SQ_LINE_BINARY, SQ_COLOUR_RED, 0).kind,
              CLS_BINARY);
    /* and it starts no capture: the excerpt below is judged afresh */
    cl_line(&s, err, SQ_LINE_BINARY, 0, 0);
    ASSERT_FALSE(cl(&s, "   10 |     foo = 1;").cont);
    classify_free(s.c);
}

/* The failure lines of popular tools, each as the tool prints it, and the
 * severity the universal tier gives it (E error, W warning): they are
 * hazards under any grammar and with none.  Each is judged by a fresh
 * classifier, so no line is taken as the detail of the one above. */
static const struct cl_case {
    const char *line;
    char want; /* 'E', 'W'; '-' for no hazard */
} cl_failures[] = {
    /* TAP: bats, prove, tape, node --test; Test::More's diagnostic */
    {"not ok 1502 addition works", 'E'},
    {"not ok 3 - should add numbers", 'E'},
    {"    not ok 1 - nested subtest", 'E'},
    {"not ok", 'E'},
    {"not ok 7", 'E'},
    {"Bail out! database not reachable", 'E'},
    {"#   Failed test 'addition works'", 'E'},
    /* failure marks: jest, bats (pretty), vitest, ava, node's spec */
    {"  \xe2\x9c\x95 renders correctly (12 ms)", 'E'},
    {"  \xe2\x9c\x97 renders correctly", 'E'},
    {" \xe2\x9c\x97 addition works", 'E'},
    {"   \xc3\x97 renders correctly 12ms", 'E'},
    {"  \xe2\x9c\x98 adds numbers", 'E'},
    {"\xe2\x9c\x96 should reject empty input (1.2ms)", 'E'},
    {"  \xe2\x97\x8f math \xe2\x80\xba mean of three", 'E'},
    /* git */
    {"CONFLICT (content): Merge conflict in src/main.c", 'E'},
    {"CONFLICT (modify/delete): a.txt deleted in HEAD and modified in feature.", 'E'},
    {"Automatic merge failed; fix conflicts and then commit the result.", 'E'},
    {" ! [rejected]        main -> main (fetch first)", 'E'},
    {" ! [remote rejected] main -> main (pre-receive hook declined)", 'E'},
    {"error: failed to push some refs to 'origin'", 'E'},
    /* pytest, go test, cargo test */
    {"FAILED tests/test_x.py::test_y - AssertionError: assert 1 == 2", 'E'},
    {"ERROR tests/test_x.py::test_z - ModuleNotFoundError: No module named 'x'", 'E'},
    {"E       assert 1 == 2", 'E'},
    {"--- FAIL: TestAdd (0.00s)", 'E'},
    {"FAIL\texample.com/calc\t0.003s", 'E'},
    {"exit status 1", 'E'},
    {"panic: test timed out after 10m0s", 'E'},
    {"test tests::it_adds ... FAILED", 'E'},
    {"test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured", 'E'},
    {"error: test failed, to rerun pass `--lib`", 'E'},
    /* rspec, mocha */
    {"rspec ./spec/calc_spec.rb:12 # Calc adds numbers", 'E'},
    {"rspec ./spec/calc_spec.rb[1:2:1] # Calc adds numbers", 'E'},
    {"     Failure/Error: expect(add(1, 2)).to eq(4)", 'E'},
    {"  1 failing", 'E'},
    {"     AssertionError: expected 3 to equal 4", 'E'},
    /* maven/surefire, gradle */
    {"[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: "
     "0.05 s <<< FAILURE! - in com.x.CalcTest", 'E'},
    {"testAdd(com.x.CalcTest)  Time elapsed: 0.01 sec  <<< FAILURE!", 'E'},
    {"CalcTest > testAdd() FAILED", 'E'},
    {"> Task :test FAILED", 'E'},
    {"BUILD FAILED in 2s", 'E'},
    {"FAILURE: Build failed with an exception.", 'E'},
    /* ctest, dotnet test, PHPUnit, prove */
    {"1/3 Test #1: calc_add .........................***Failed    0.01 sec", 'E'},
    {"2/3 Test #2: calc_div .........................***Exception: SegFault  0.01 sec", 'E'},
    {"3/3 Test #3: slow .............................***Timeout   1.50 sec", 'E'},
    {"\t  1 - calc_add (Failed)", 'E'},
    {"\t  2 - calc_div (SEGFAULT)", 'E'},
    {"Errors while running CTest", 'E'},
    {"The following tests FAILED:", 'E'},
    {"  Failed CalcTests.Add [12 ms]", 'E'},
    {"Failed!  - Failed:     1, Passed:     4, Skipped:     0, Total:     5", 'E'},
    {"FAILURES!", 'E'},
    {"ERRORS!", 'E'},
    {"Failed asserting that 3 matches expected 4.", 'E'},
    {"Failed 1/3000 subtests", 'E'},
    {"  Failed test:  1502", 'E'},
    {"Result: FAIL", 'E'},
    /* ShellCheck: each finding makes it exit 1 */
    {"      ^-- SC2086 (info): Double quote to prevent globbing and word splitting.", 'W'},
    {"  ^----^ SC2148 (error): Tips depend on target shell and yours is unknown.", 'E'},
    {"In deploy.sh line 3:", 'W'},
    {"deploy.sh:3:7: note: Double quote to prevent globbing. [SC2086]", 'W'},
    /* valgrind, the sanitizers */
    {"==123== Invalid read of size 4", 'E'},
    {"==123== Invalid write of size 1", 'E'},
    {"==123== Conditional jump or move depends on uninitialised value(s)", 'E'},
    {"==123== Invalid free() / delete / delete[] / realloc()", 'E'},
    {"==123== 40 bytes in 1 blocks are definitely lost in loss record 1 of 1", 'E'},
    {"==123==    definitely lost: 40 bytes in 1 blocks", 'E'},
    {"==123== ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)", 'E'},
    {"==1234==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010", 'E'},
    {"==1==ERROR: LeakSanitizer: detected memory leaks", 'E'},
    {"Direct leak of 40 byte(s) in 1 object(s) allocated from:", 'E'},
    {"SUMMARY: AddressSanitizer: heap-use-after-free /app/t.c:5:3 in main", 'E'},
    {"t.c:5:10: runtime error: signed integer overflow: 2147483647 + 1", 'E'},
    {"WARNING: ThreadSanitizer: data race (pid=42)", 'W'},
    /* deaths and memory */
    {"Segmentation fault (core dumped)", 'E'},
    {"Killed", 'E'},
    {"Out of memory: Killed process 1234 (java) total-vm:123kB", 'E'},
    {"java.lang.OutOfMemoryError: Java heap space", 'E'},
    {"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory", 'E'},
    {"fatal error: runtime: out of memory", 'E'},
    {"MemoryError", 'E'},
    /* the usual words, and runners' reports of a child's status */
    {"panic: runtime error: index out of range [5] with length 3", 'E'},
    {"fatal: not a git repository (or any of the parent directories): .git", 'E'},
    {"Traceback (most recent call last):", 'E'},
    {"Error: Cannot find module 'express'", 'E'},
    {"npm ERR! code ELIFECYCLE", 'E'},
    {"npm error Lifecycle script `test` failed with error:", 'E'},
    {"Command failed with exit code 1.", 'E'},
    {"[0] npm run watch exited with code 1", 'E'},
    {"Process completed with exit code 2.", 'E'},
    {"rake aborted!", 'E'},
    {"PHP Fatal error:  Uncaught Exception: boom in /app/a.php:3", 'E'},
    {"CMake Error at CMakeLists.txt:3 (project):", 'E'},
    {"ninja: build stopped: subcommand failed.", 'E'},
    /* a structured log's own level field: zap, pino, logrus, logfmt,
     * Python's JSON logger, nginx, Apache, java.util.logging */
    {"{\"level\":\"error\",\"ts\":1.7e9,\"msg\":\"query failed\"}", 'E'},
    {"{\"level\": \"fatal\", \"msg\": \"cannot bind\"}", 'E'},
    {"{\"level\":\"warn\",\"msg\":\"slow request\"}", 'W'},
    {"{\"level\":50,\"time\":1,\"msg\":\"boom\"}", 'E'},
    {"{\"level\":60,\"msg\":\"down\"}", 'E'},
    {"{\"level\":40,\"msg\":\"slow\"}", 'W'},
    {"time=\"2024-01-01T00:00:00Z\" level=error msg=\"sync done\"", 'E'},
    {"ts=2024-01-01 lvl=warn msg=retrying", 'W'},
    {"ts=1 level=\"crit\" msg=x", 'E'},
    {"{\"severity\": \"critical\", \"message\": \"x\"}", 'E'},
    {"{\"log_level\":\"err\",\"msg\":\"x\"}", 'E'},
    {"2024-01-01T10:00:00Z [error] db unreachable", 'E'},
    {"2024/05/01 10:00:00 [emerg] 1#1: unknown directive \"foo\"", 'E'},
    {"2024/05/01 10:00:00 [alert] 7#7: socket() failed", 'E'},
    {"[Wed Oct 11 14:32:52 2000] [core:crit] [pid 1] AH00001: x", 'E'},
    {"[Wed Oct 11 14:32:52 2000] [proxy:warn] [pid 1] AH01144: x", 'W'},
    {"SEVERE: Servlet.service() for servlet [x] threw exception", 'E'},
    /* single lines of failure with no error word */
    {"free(): double free detected in tcache 2", 'E'},
    {"*** Error in `./a': double free or corruption (fasttop): 0x01", 'E'},
    {"malloc(): corrupted top size", 'E'},
    {"free(): invalid pointer", 'E'},
    {"timeout: the monitored command dumped core", 'E'},
    {"The command '/bin/sh -c make' returned a non-zero code: 2", 'E'},
    {"x509: certificate signed by unknown authority", 'E'},
    {"ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] "
     "certificate verify failed", 'E'},
    {"Job for nginx.service failed because the control process exited.", 'E'},
    {"     Active: failed (Result: exit-code) since Mon 2026-11-23", 'E'},
    {"denied: requested access to the resource is denied", 'E'},
};

/* Their look-alikes in clean output: passes, zero counts, expected
 * failures, prose, and the forms above one byte away from their shape. */
static const char *const cl_harmless[] = {
    "ok 12 - not ok in name",
    "ok 1 case 1 passes",
    "not ok 3 # TODO not implemented yet",
    "not ok 4 - flaky network test # SKIP no network",
    "not okay to proceed without a lock",
    "not ok to merge yet, waiting for review",
    "1..3000",
    "# Subtest: not ok handling",
    "# fail 0",
    "#   Failed (TODO) test 'later'",
    "Bail out of the loop early",
    "  \xe2\x9c\x93 renders item 0 (4 ms)",
    "  \xe2\x9c\x94 adds numbers",
    /* a passed test's name, whatever words it holds */
    "  \xe2\x9c\x93 handles connection refused (3 ms)",
    "  \xe2\x9c\x93 returns ERROR code (1 ms)",
    "    \xe2\x9c\x94 retries when permission denied (2ms)",
    "\xe2\x88\x9a fails over with FAILED status",
    "ok 3 - request refused by policy",
    "ok 4 no such file or directory is reported",
    "2 \xc3\x97 3 = 6",
    "  \xe2\x9c\x95",
    "\xe2\x97\x8f nginx.service - A high performance web server",
    "  \xe2\x97\x8f Console",
    "Merge made by the 'ort' strategy.",
    "Auto-merging src/main.c",
    "CONFLICT markers are gone",
    "no conflicts found",
    "resolve the conflict before you push",
    "0 failed",
    "3 passed, 0 failed",
    "Failures: 0",
    "Failed: 0",
    "errors=0",
    "no errors found",
    "Tests run: 5, Failures: 0, Errors: 0, Skipped: 0",
    "[INFO] Tests run: 5, Failures: 0, Errors: 0, Skipped: 0",
    "Passed!  - Failed:     0, Passed:     5, Skipped:     0, Total:     5",
    "  Passed CalcTests.Add [1 ms]",
    "100% tests passed, 0 tests failed out of 3",
    "1/3 Test #1: calc_add .........................   Passed    0.01 sec",
    "\t  1 - calc_add (Passed)",
    "==123== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)",
    "==123==    definitely lost: 0 bytes in 0 blocks",
    "==123== All heap blocks were freed -- no leaks are possible",
    "==123== HEAP SUMMARY:",
    "exit status 0",
    "exit code 0",
    "Process exited with code 0",
    "the exit status of the last command is in $?",
    "the test may fail if the network is down",
    "retrying failed downloads is cheap",
    "  1) Install the package",
    "rspec spec/calc_spec.rb",
    "3 examples, 0 failures",
    "SC2086 is a good rule to know",
    "In file included from src/a.h:3:",
    "deploy.sh:3:7: note: quoted here",
    " ! [up to date]      main -> main",
    /* levels that are no hazard, and look-alikes of the level fields */
    "{\"level\":\"info\",\"msg\":\"served 3\"}",
    "{\"level\":30,\"msg\":\"listening\"}",
    "{\"level\":500,\"msg\":\"odd\"}",
    "ts=1 level=debug msg=\"cache warm\"",
    "{\"msg\":\"the level of error handling\"}",
    "{\"loglevel_error\":\"x\"}",
    "sealevel=errors rising",
    "[info] all good",
    "see [errors] in the manual",
    "[core:notice] AH00094: Command line",
    "     Active: active (running) since Mon 2026-11-23",
    "retried because the cache was cold",
    "the allocator uses malloc() and free() directly",
};

TEST(classify_failure_lines_of_popular_tools_are_hazards)
{
    buf_t why = BUF_INIT;
    for (size_t i = 0; i < sizeof cl_failures / sizeof cl_failures[0]; i++) {
        struct cl s = {0};
        ASSERT_OK(classify_new(NULL, &s.c));
        cls_result_t r = cl(&s, cl_failures[i].line);
        char got = r.kind != CLS_HAZARD ? '-' : r.warning ? 'W' : 'E';
        if (got != cl_failures[i].want)
            buf_printf(&why, "  \"%s\": %c, want %c (%s/%s)\n", cl_failures[i].line,
                       got, cl_failures[i].want, r.source, r.rule);
        classify_free(s.c);
    }
    for (size_t i = 0; i < sizeof cl_harmless / sizeof cl_harmless[0]; i++) {
        struct cl s = {0};
        ASSERT_OK(classify_new(NULL, &s.c));
        cls_result_t r = cl(&s, cl_harmless[i]);
        if (r.kind == CLS_HAZARD)
            buf_printf(&why, "  \"%s\": a hazard (%s/%s)\n", cl_harmless[i],
                       r.source, r.rule);
        classify_free(s.c);
    }
    if (why.len)
        test_fail(__FILE__, __LINE__, "misjudged:\n%s", why.p);
    buf_free(&why);
}

/* Summaries that count failures are outcomes, as `3 passed, 1 failed` is:
 * kept, not hazards of their own. */
TEST(classify_failure_counts_are_outcomes)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    ASSERT_EQ(cl(&s, "3 examples, 1 failure").kind, CLS_OUTCOME);
    ASSERT_EQ(cl(&s, "There were 2 failures:").kind, CLS_OUTCOME);
    ASSERT_EQ(cl(&s, "1 example, 0 failures").kind, CLS_OUTCOME);
    classify_free(s.c);
}

/* A failed test owns the lines that explain it, and no more: TAP's `#`
 * diagnostics and YAML block, a mark's deeper lines, jest's block with
 * its blank lines; the next test, a `# Subtest:` head or a second
 * Test::More failure ends it.  A failed test's head is never the detail
 * of the hazard above it. */
TEST(classify_failed_test_owns_its_detail)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    /* bats */
    cls_result_t r = cl(&s, "not ok 1502 addition works");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont && !r.warning);
    ASSERT_STR(r.rule, "tap-not-ok");
    ASSERT_TRUE(cl(&s, "# (in test file test/math.bats, line 12)").cont);
    ASSERT_TRUE(cl(&s, "#   `[ \"$result\" -eq 4 ]' failed").cont);
    ASSERT_FALSE(cl(&s, "ok 1503 case 1503 passes").cont);
    /* Test::More under prove -v: one failure's diagnostics, not the next's */
    ASSERT_EQ(cl(&s, "not ok 3 - add").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "#   Failed test 'add'").cont);
    ASSERT_TRUE(cl(&s, "#   at t/math.t line 12.").cont);
    r = cl(&s, "#   Failed test 'sub'");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont);
    ASSERT_TRUE(cl(&s, "#   at t/math.t line 15.").cont);
    ASSERT_TRUE(cl(&s, "# Looks like you failed 2 tests of 30.").cont);
    cl(&s, "");
    /* node --test: the YAML block, then the next subtest's head */
    ASSERT_EQ(cl(&s, "    not ok 1 - child").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "      ---").cont);
    ASSERT_TRUE(cl(&s, "      error: 'Expected values to be strictly equal'").cont);
    ASSERT_TRUE(cl(&s, "      ...").cont);
    ASSERT_FALSE(cl(&s, "    # Subtest: sibling").kind == CLS_HAZARD);
    ASSERT_FALSE(cl(&s, "    ok 2 - sibling").kind == CLS_HAZARD);
    /* bats' pretty formatter: the mark owns its deeper lines only */
    ASSERT_EQ(cl(&s, " \xe2\x9c\x97 addition works").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "   (in test file test/math.bats, line 12)").cont);
    ASSERT_TRUE(cl(&s, "     `[ \"$result\" -eq 4 ]' failed").cont);
    ASSERT_FALSE(cl(&s, " \xe2\x9c\x93 subtraction works").kind == CLS_HAZARD);
    /* jest's tree: a failed test under its suite's FAIL line is a hazard
     * of its own, and the next passed test is no part of it */
    ASSERT_EQ(cl(&s, "FAIL src/math.test.js").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "  math").cont);
    r = cl(&s, "    \xe2\x9c\x95 mean of three (3 ms)");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont);
    ASSERT_FALSE(cl(&s, "    \xe2\x9c\x93 parse (1 ms)").kind == CLS_HAZARD);
    cl(&s, "");
    /* jest's block: through its blank lines to the next block */
    ASSERT_EQ(cl(&s, "  \xe2\x97\x8f math \xe2\x80\xba mean of three").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "").cont);
    ASSERT_TRUE(cl(&s, "    Expected: 2").cont);
    ASSERT_TRUE(cl(&s, "").cont);
    ASSERT_TRUE(cl(&s, "      at Object.toBe (jt/math.test.js:5:57)").cont);
    r = cl(&s, "  \xe2\x97\x8f math \xe2\x80\xba parse");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont);
    ASSERT_TRUE(cl(&s, "    Received: 3").cont);
    ASSERT_FALSE(cl(&s, "PASS jt/ok.test.js").kind == CLS_HAZARD);
    cl(&s, "");
    /* GoogleTest: the assertion's place and its values, up to gtest's own
     * bracketed line */
    r = cl(&s, "/home/u/proj/test/parser_test.cc:42: Failure");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont && !r.warning);
    ASSERT_STR(r.rule, "test-assertion");
    ASSERT_TRUE(cl(&s, "Expected equality of these values:").cont);
    ASSERT_TRUE(cl(&s, "  p.total()").cont);
    ASSERT_TRUE(cl(&s, "    Which is: 299").cont);
    ASSERT_TRUE(cl(&s, "  300").cont);
    r = cl(&s, "[  FAILED  ] Parser.Totals (0 ms)");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont);
    ASSERT_FALSE(cl(&s, "[ RUN      ] Parser.Limits").cont);
    /* Catch2: the assertion and its expansion, up to the blank line */
    r = cl(&s, "/home/u/proj/test/parser_test.cpp:42: FAILED:");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont);
    ASSERT_TRUE(cl(&s, "  REQUIRE( p.total() == 300 )").cont);
    ASSERT_TRUE(cl(&s, "with expansion:").cont);
    ASSERT_TRUE(cl(&s, "  299 == 300").cont);
    ASSERT_FALSE(cl(&s, "").cont);
    ASSERT_FALSE(cl(&s, "log: processing fixture 80").cont);
    /* not an assertion: a word after Failure, or FAILED without its ':' */
    ASSERT_FALSE(cl(&s, "src/x.cc:42: Failure modes are listed").kind ==
                 CLS_HAZARD);
    r = cl(&s, "notes.txt:3: FAILED"); /* a hazard by its word alone */
    ASSERT_TRUE(r.kind != CLS_HAZARD || strcmp(r.rule, "test-assertion"));
    classify_free(s.c);

    /* mocha: after its `N failing`, each numbered report owns its lines,
     * blank ones and its unindented message lines too, to the next */
    struct cl m = {0};
    ASSERT_OK(classify_new(NULL, &m.c));
    ASSERT_FALSE(cl(&m, "  1) Install the package").kind == CLS_HAZARD);
    ASSERT_FALSE(cl(&m, "  60 passing (45ms)").kind == CLS_HAZARD);
    cl(&m, "  2 failing");
    cl(&m, "");
    r = cl(&m, "  1) Cart");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont && !r.warning);
    ASSERT_STR(r.rule, "mocha-failure");
    ASSERT_TRUE(cl(&m, "       computes total:").cont);
    ASSERT_TRUE(cl(&m, "").cont);
    ASSERT_TRUE(cl(&m, "      AssertionError [ERR_ASSERTION]: Expected values "
                       "to be strictly equal:").cont);
    ASSERT_TRUE(cl(&m, "299 !== 300").cont);
    ASSERT_TRUE(cl(&m, "      -299").cont);
    ASSERT_TRUE(
        cl(&m, "      at Context.<anonymous> (test/cart.js:12:12)").cont);
    r = cl(&m, "  2) Cart");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont);
    ASSERT_TRUE(cl(&m, "       applies discount:").cont);
    classify_free(m.c);
}

/* valgrind's error owns its stack (the `==N==` lines up to the blank
 * one); a sanitizer's report owns everything up to its SUMMARY line. */
TEST(classify_memory_checkers_own_their_reports)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    ASSERT_EQ(cl(&s, "==42== Invalid read of size 4").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "==42==    at 0x10914A: main (t.c:5)").cont);
    ASSERT_TRUE(cl(&s, "==42==  Address 0x4a4f044 is 0 bytes after a block of size 4 alloc'd").cont);
    ASSERT_FALSE(cl(&s, "==42== ").cont);
    ASSERT_FALSE(cl(&s, "==42== HEAP SUMMARY:").kind == CLS_HAZARD);
    ASSERT_EQ(cl(&s, "==7==ERROR: AddressSanitizer: heap-use-after-free on address 0x6").kind,
              CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "READ of size 4 at 0x602000000010 thread T0").cont);
    ASSERT_TRUE(cl(&s, "    #0 0x4c in main /app/t.c:5:3").cont);
    ASSERT_TRUE(cl(&s, "").cont);
    ASSERT_TRUE(cl(&s, "freed by thread T0 here:").cont);
    ASSERT_TRUE(cl(&s, "SUMMARY: AddressSanitizer: heap-use-after-free /app/t.c:5:3 in main").cont);
    ASSERT_FALSE(cl(&s, "Shadow bytes around the buggy address:").cont);
    classify_free(s.c);
}

/* A failed test's detail capture takes CLS_TEST_DETAIL_MAX lines, and
 * the next one is judged on its own. */
TEST(classify_test_detail_capture_stops_at_its_limit)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    ASSERT_EQ(cl(&s, "not ok 1 - long diff").kind, CLS_HAZARD);
    for (int i = 0; i < CLS_TEST_DETAIL_MAX; i++)
        ASSERT_TRUE(cl(&s, "#   - expected line").cont);
    ASSERT_FALSE(cl(&s, "#   - expected line").cont);
    ASSERT_EQ(cl(&s, "  \xe2\x9c\x95 long").kind, CLS_HAZARD);
    for (int i = 0; i < CLS_TEST_DETAIL_MAX; i++)
        ASSERT_TRUE(cl(&s, "      detail").cont);
    ASSERT_FALSE(cl(&s, "      detail").cont);
    classify_free(s.c);
}

/* A memory checker's report without its end (a killed run) is captured
 * up to CLS_TRACE_MAX lines; jest's `●` block head is read up to
 * CLS_INDENT_MAX columns in (deeper, it is a bullet in some listing). */
TEST(classify_report_and_block_limits_at_their_edges)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    ASSERT_EQ(cl(&s, "==7==ERROR: AddressSanitizer: SEGV on unknown address").kind,
              CLS_HAZARD);
    for (int i = 0; i < CLS_TRACE_MAX; i++)
        ASSERT_TRUE(cl(&s, "    #0 0x4c in main /app/t.c:5:3").cont);
    ASSERT_FALSE(cl(&s, "    #0 0x4c in main /app/t.c:5:3").cont);
    cl(&s, "");
    ASSERT_EQ(cl(&s, "==9== Invalid read of size 8").kind, CLS_HAZARD);
    for (int i = 0; i < CLS_TRACE_MAX; i++)
        ASSERT_TRUE(cl(&s, "==9==    by 0x10914A: f (t.c:5)").cont);
    ASSERT_FALSE(cl(&s, "==9==    by 0x10914A: f (t.c:5)").cont);
    cl(&s, "");
    char l[64];
    snprintf(l, sizeof l, "%*s\xe2\x97\x8f math \xe2\x80\xba adds", CLS_INDENT_MAX, "");
    ASSERT_EQ(cl(&s, l).kind, CLS_HAZARD);
    ASSERT_FALSE(cl(&s, "PASS src/a.test.js").cont); /* ends the block */
    snprintf(l, sizeof l, "%*s\xe2\x97\x8f math \xe2\x80\xba adds", CLS_INDENT_MAX + 1, "");
    ASSERT_FALSE(cl(&s, l).kind == CLS_HAZARD);
    classify_free(s.c);
}

/* HCL diagnostics (terraform, OpenTofu), which no grammar knows: in its
 * box, `│ Error:` owns every `│` line up to and with the `╵` (weighed past
 * the box's side), and the line after the box is judged afresh; plain
 * (-no-color), `Error:` owns the blank, the `on` line and the source lines
 * under it, a blank, and the message up to the blank after it; a bare
 * `Error:` with no `on` line after its blank owns that blank only, and one
 * with indented lines under it owns them as a stack.  The capture of a box
 * that never closes stops at CLS_HCL_MAX lines.  ShellCheck's `In x.sh line
 * 3:` owns the source line under it, and its findings stay hazards of
 * their own.  Each used to own nothing, and a view dropped `on main.tf
 * line 7` and the message. */
TEST(classify_hcl_diagnostics_own_their_location_and_message)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(NULL, &s.c));
    EXPECT(&s, "\xe2\x95\xb7", CLS_UNKNOWN, false); /* ╷ */
    cls_result_t r = cl(&s, "\xe2\x94\x82 Error: Unsupported argument");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont && !r.warning);
    r = cl(&s, "\xe2\x94\x82 ");
    ASSERT_TRUE(r.cont);
    ASSERT_EQ(r.margin, 4);
    r = cl(&s, "\xe2\x94\x82   on main.tf line 11, in resource \"x\" \"b\":");
    ASSERT_TRUE(r.cont);
    ASSERT_EQ(r.margin, 4);
    ASSERT_TRUE(cl(&s, "\xe2\x94\x82   11:   bogus = 1").cont);
    r = cl(&s, "\xe2\x94\x82");
    ASSERT_TRUE(r.cont);
    ASSERT_EQ(r.margin, 3);
    ASSERT_TRUE(cl(&s, "\xe2\x94\x82 An argument named \"bogus\" is not expected here.").cont);
    r = cl(&s, "\xe2\x95\xb5"); /* ╵ */
    ASSERT_TRUE(r.cont);
    ASSERT_EQ(r.margin, 0);
    ASSERT_FALSE(cl(&s, "\xe2\x94\x82 after the box").cont);
    r = cl(&s, "\xe2\x94\x82 Warning: Deprecated attribute");
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.warning);
    ASSERT_TRUE(cl(&s, "\xe2\x94\x82 more").cont);
    ASSERT_FALSE(cl(&s, "Plan: 1 to add").cont); /* no `╵`: ends before */

    /* plain */
    ASSERT_EQ(cl(&s, "Error: Reference to undeclared local value").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "").cont);
    ASSERT_TRUE(cl(&s, "  on main.tf line 14, in output \"o\":").cont);
    ASSERT_TRUE(cl(&s, "  14:   value = local.nope").cont);
    ASSERT_TRUE(cl(&s, "").cont);
    ASSERT_TRUE(cl(&s, "A local value with the name \"nope\" has not been").cont);
    ASSERT_TRUE(cl(&s, "declared.").cont);
    ASSERT_FALSE(cl(&s, "").cont);
    ASSERT_FALSE(cl(&s, "Success! The configuration is valid.").cont);
    /* a message right under the source lines; the next head ends it */
    ASSERT_EQ(cl(&s, "Warning: Argument is deprecated").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "").cont);
    ASSERT_TRUE(cl(&s, "  on a.tf line 2:").cont);
    ASSERT_TRUE(cl(&s, "Use the new one.").cont);
    r = cl(&s, "Error: Unsupported argument");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont);
    /* not an HCL diagnostic: no `on` line after the blank */
    ASSERT_TRUE(cl(&s, "").cont);
    ASSERT_FALSE(cl(&s, "Usage: tool [options]").cont);
    /* nor one with a stack under it */
    ASSERT_EQ(cl(&s, "Error: boom").kind, CLS_HAZARD);
    ASSERT_TRUE(cl(&s, "    at f (/app/a.js:1:2)").cont);
    ASSERT_TRUE(cl(&s, "    at g (/app/a.js:3:4)").cont);
    ASSERT_FALSE(cl(&s, "done").cont);

    /* a box that never closes */
    ASSERT_EQ(cl(&s, "\xe2\x94\x82 Error: open").kind, CLS_HAZARD);
    for (int i = 0; i < CLS_HCL_MAX; i++)
        ASSERT_TRUE(cl(&s, "\xe2\x94\x82 text").cont);
    ASSERT_FALSE(cl(&s, "\xe2\x94\x82 text").cont);

    /* ShellCheck */
    r = cl(&s, "In deploy.sh line 3:");
    ASSERT_TRUE(r.kind == CLS_HAZARD && r.warning);
    ASSERT_TRUE(cl(&s, "rm -rf $DIR/*").cont);
    r = cl(&s, "       ^-------^ SC2115 (warning): Use \"${var:?}\".");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.cont && r.warning);
    classify_free(s.c);
}

/* A grammar's noise rule may not hide a line the universal tier calls an
 * error (a rule for `ok N` must not swallow `not ok N`); it may still
 * count a universal warning as noise, and outcomes are its to call, an
 * error among them marked a failure (which the squasher does not fold). */
TEST(classify_grammar_noise_cannot_hide_a_universal_error)
{
    grammar_t *g;
    buf_t err = BUF_INIT;
    static const char j[] =
        "{\"name\":\"t\",\"noise\":["
        "{\"id\":\"tap-ok\",\"pattern\":\"ok \\\\d+\",\"action\":\"dedup\"},"
        "{\"id\":\"merging\",\"pattern\":\"(?:Auto-merging|CONFLICT) \"},"
        "{\"id\":\"deprecated\",\"pattern\":\"^npm warn deprecated \"}],"
        "\"outcome\":[{\"id\":\"verdict\",\"pattern\":\"^(?:FAIL|ok )\\\\t\"}]}";
    ASSERT_OK(grammar_parse("t", j, sizeof j - 1, &g, &err));
    struct cl s = {0};
    ASSERT_OK(classify_new(g, &s.c));
    cls_result_t r = cl(&s, "ok 1 - adds");
    ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_DEDUP);
    r = cl(&s, "not ok 2 - subtracts");
    ASSERT_TRUE(r.kind == CLS_HAZARD && !r.warning);
    ASSERT_STR(r.source, "universal");
    ASSERT_STR(r.rule, "tap-not-ok");
    /* and it owns its diagnostics as it would under no grammar */
    ASSERT_TRUE(cl(&s, "# (in test file t/a.bats, line 9)").cont);
    ASSERT_EQ(cl(&s, "ok 3 - multiplies").kind, CLS_NOISE);
    ASSERT_EQ(cl(&s, "Auto-merging src/a.c").kind, CLS_NOISE);
    ASSERT_EQ(cl(&s, "CONFLICT (content): Merge conflict in src/a.c").kind, CLS_HAZARD);
    ASSERT_EQ(cl(&s, "npm warn deprecated inflight@1.0.6").kind, CLS_NOISE);
    /* an outcome the universal rules call an error is marked a failure */
    r = cl(&s, "FAIL\texample.com/calc\t0.003s");
    ASSERT_TRUE(r.kind == CLS_OUTCOME && r.failure);
    r = cl(&s, "ok \texample.com/calc\t0.003s");
    ASSERT_TRUE(r.kind == CLS_OUTCOME && !r.failure);
    classify_free(s.c);
    grammar_free(g);
    /* a structured grammar folds none of its outcomes: none is marked */
    static const char st[] = "{\"name\":\"st\",\"category\":\"structured\","
                             "\"outcome\":[{\"id\":\"row\",\"pattern\":\"^\\\\S\"}]}";
    ASSERT_OK(grammar_parse("st", st, sizeof st - 1, &g, &err));
    ASSERT_OK(classify_new(g, &s.c));
    r = cl(&s, "FAIL\texample.com/calc\t0.003s");
    ASSERT_TRUE(r.kind == CLS_OUTCOME && !r.failure);
    classify_free(s.c);
    grammar_free(g);
    buf_free(&err);
}

/* One line of the test below: its text, and what the classifier must say
 * of it: kind, cont (a line of the hazard above), pending (held as its
 * excerpt), confirms (a caret line that makes the held line one). */
struct cl_want {
    const char *text;
    cls_kind_t kind;
    bool cont, pending, confirms;
};

static void cl_expect_run(const grammar_t *g, const struct cl_want *w,
                          size_t n)
{
    struct cl s = {0};
    ASSERT_OK(classify_new(g, &s.c));
    for (size_t i = 0; i < n; i++) {
        cls_result_t r = cl(&s, w[i].text);
        if (r.kind != w[i].kind || r.cont != w[i].cont ||
            r.pending != w[i].pending || r.confirms != w[i].confirms)
            test_fail(__FILE__, __LINE__,
                      "line %zu \"%s\": kind %d cont %d pending %d confirms "
                      "%d (%s/%s)", i + 1, w[i].text, r.kind, r.cont,
                      r.pending, r.confirms, r.source, r.rule);
    }
    classify_free(s.c);
}

/* clang draws its source excerpt with no gutter, and code at column 0
 * with no indentation (tests/fixtures/gcc/clang_excerpts): the gcc
 * grammar's `multiline.excerpt` takes it by its place.  The line after
 * the hazard line or a note is held (pending) and is the excerpt when a
 * caret line follows (confirms); the line after a caret line is its
 * fix-it when nothing else claims it and it starts no further left than
 * the carets.  Anything else there stays what it is: the next
 * diagnostic, `1 error generated.`, make's lines, a line after a
 * diagnostic that has no excerpt.  gcc's gutter lines are taken as
 * before, and a gutter ends what the place says. */
TEST(classify_clang_excerpt_is_taken_by_its_place)
{
    grammar_set_t *set = tu_shipped_set();
    const grammar_t *gcc = grammar_set_find(set, "gcc");
    ASSERT_TRUE(gcc != NULL);
    const cls_kind_t H = CLS_HAZARD, U = CLS_UNKNOWN, O = CLS_OUTCOME;
    static const char note[] = "/usr/lib/llvm-14/lib/clang/14.0.6/include/"
                               "stddef.h:46:23: note: 'size_t' declared here";
    const struct cl_want clang[] = {
        {"src/util.h:3:1: error: unknown type name 'size_tt'; did you mean "
         "'size_t'?", H, false, false, false},
        {"size_tt util_len(const char *s);", U, false, true, false},
        {"^~~~~~~", H, true, false, true},
        {"size_t", H, true, false, false}, /* the fix-it, at column 0 */
        {note, H, true, false, false},
        {"typedef __SIZE_TYPE__ size_t;", U, false, true, false},
        {"                      ^", H, true, false, true},
        {"src/eof.c:3:10: error: expected '}'", H, false, false, false},
        {"return 1;", U, false, true, false},
        {"         ^", H, true, false, true},
        {"src/eof.c:2:1: note: to match this '{'", H, true, false, false},
        {"{", U, false, true, false},
        {"^", H, true, false, true},
        {"1 error generated.", O, false, false, false},
        {"make: *** [Makefile:5: eof.o] Error 1", H, false, false, false},
    };
    cl_expect_run(gcc, clang, sizeof clang / sizeof clang[0]);
    /* a terminal's clang wraps a long message 6 columns in; then the
     * excerpt; an indented excerpt is `continue`'s, its fix-it too */
    const struct cl_want wrapped[] = {
        {"src/kinds.c:13:8: warning: incompatible pointer types returning "
         "'char *' from a", H, false, false, false},
        {"      function with result type 'int *' "
         "[-Wincompatible-pointer-types]", H, true, false, false},
        {"return s;", U, false, true, false},
        {"       ^", H, true, false, true},
        {"src/geom.c:21:5: error: unknown type name 'grid_t'", H, false,
         false, false},
        {"    grid_t g;", H, true, false, false},
        {"    ^~~~~~", H, true, false, false},
        {"    gid_t", H, true, false, false},
        /* left of the carets: no fix-it */
        {"done", U, false, false, false},
    };
    cl_expect_run(gcc, wrapped, sizeof wrapped / sizeof wrapped[0]);
    /* no excerpt: the held line is no line of the hazard when no caret
     * line follows, nor is a blank line held */
    const struct cl_want bare[] = {
        {"src/a.c:3:4: error: boom", H, false, false, false},
        {"compiling c", U, false, true, false},
        {"Build finished", U, false, false, false},
        {"src/a.c:5:1: warning: w", H, false, false, false},
        {"", CLS_NOISE, false, false, false},
        {"^", U, false, false, false},
        {"src/a.c:6:1: warning: w", H, false, false, false},
        {"make: *** [Makefile:2: a.o] Error 1", H, false, false, false},
    };
    cl_expect_run(gcc, bare, sizeof bare / sizeof bare[0]);
    /* gcc: the gutter lines, and then nothing by place */
    const struct cl_want gnu[] = {
        {"src/calc.c:22:24: error: expected ';' before '}' token", H, false,
         false, false},
        {"   22 |     return sum(NULL, 3)", H, true, false, false},
        {"      |                        ^", H, true, false, false},
        {"      |                        ;", H, true, false, false},
        {"   23 | }", H, true, false, false},
        {"      | ~", H, true, false, false},
        {"echo built", U, false, false, false},
    };
    cl_expect_run(gcc, gnu, sizeof gnu / sizeof gnu[0]);
    grammar_set_free(set);
    /* the universal tier the same, for a build no grammar is detected for
     * (ninja, a script): a `file:line:col:` diagnostic's capture */
    const struct cl_want any[] = {
        {"src/util.h:3:1: error: unknown type name 'size_tt'", H, false,
         false, false},
        {"size_tt util_len(const char *s);", U, false, true, false},
        {"^~~~~~~", H, true, false, true},
        {"size_t", H, true, false, false},
        {note, H, true, false, false},
        {"typedef __SIZE_TYPE__ size_t;", U, false, true, false},
        {"                      ^", H, true, false, true},
        {"[3/7] Building C object util.o", U, false, false, false},
        {"src/a.c:3:4: error: boom", H, false, false, false},
        {"compiling c", U, false, true, false},
        {"Build finished", U, false, false, false},
        /* no column: no excerpt by place */
        {"src/a.c:3: error: old style", H, false, false, false},
        {"int x;", U, false, false, false},
    };
    cl_expect_run(NULL, any, sizeof any / sizeof any[0]);
}
