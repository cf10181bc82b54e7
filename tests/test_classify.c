/*
 * test_classify.c — the classifier's tiers: universal hazards (traces of
 * each language, compiler locations, keywords with their boundaries and
 * zero counts, colour), tools' own failure forms (signal deaths, make,
 * the linker, shells, curl, Ruby, mocha, errno texts) beside harmless
 * look-alikes, a BuildKit step prefix, the scan windows of a long line at
 * their edges, hazards in lines binary for bad UTF-8, multiline capture
 * and its limit, outcomes and progress finals, prompts, structure
 * (blank, decoration, hints, near-duplicates, diffs bypassing them), and
 * a compound command's several grammars (no noise rule hides a hazard).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/utf8.h"
#include "harness.h"
#include "squash/classify.h"

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
        "\"noise\":[{\"id\":\"e\",\"pattern\":\"^error: ignorable\"}]}";
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
    r = cl(&s, "error: ignorable");
    ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_TOOL);
    classify_free(s.c);
    grammar_free(g);
    buf_free(&err);
}

/* A compound command's grammars, tier by tier: when two disagree the most
 * visible verdict stands (hazard over outcome over noise), a tie goes to
 * the first, and a noise rule of one tool never hides a line the
 * universal rules call a hazard, which a single grammar's noise may. */
TEST(classify_several_grammars_never_let_noise_hide_a_hazard)
{
    static const char a_json[] =
        "{\"name\":\"a\",\"hazard\":[{\"id\":\"a-fail\",\"pattern\":\"^A FAIL\"},"
        "{\"id\":\"a-both\",\"pattern\":\"^both\",\"severity\":\"warning\"}],"
        "\"outcome\":[{\"id\":\"a-done\",\"pattern\":\"^A done\"}],"
        "\"noise\":[{\"id\":\"a-chatter\",\"pattern\":\"^(?:B FAIL|B done|z)\"},"
        "{\"id\":\"a-err\",\"pattern\":\"^error: \",\"action\":\"dedup\"}]}";
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
        /* a's noise rule on a line the universal rules call an error */
        r = cl(&s, "error: linker failed");
        ASSERT_TRUE(r.kind == CLS_HAZARD && !r.warning && r.grammar == NULL);
        ASSERT_STR(r.source, "universal");
        classify_free(s.c);
    }
    /* a alone speaks for every line: its noise stands */
    struct cl s = {0};
    ASSERT_OK(classify_new_set(ab, 1, &s.c));
    cls_result_t r = cl(&s, "error: linker failed");
    ASSERT_TRUE(r.kind == CLS_NOISE && r.noise == CLS_NOISE_DEDUP && r.grammar == a);
    r = cl(&s, "B FAIL y");
    ASSERT_TRUE(r.kind == CLS_NOISE);
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
