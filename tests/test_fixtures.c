/*
 * test_fixtures.c — every grammar on real output of its real tool:
 * tests/fixtures/<tool>/<name>.out (captured bytes) with <name>.json (the
 * corpus' case format, tests/fixtures/README.md) through squash_buffer,
 * with the command from the json and the grammars of the repo's
 * grammars/, judged by the corpus' rules (tu_judge): every must_keep
 * regex, every keep_all_matching line verbatim, the exit code shown, every
 * line raw or a marker, and a token ratio of at most FIXTURE_RATIO_MAX.
 *
 * All fixtures are judged before the test fails, so one run names every
 * broken rule; the ratio of each is printed for the record.  Then two
 * fixtures concatenated, npm's output and make's, under `npm ... && make
 * ...`: each tool's lines get their own grammar's treatment.
 *
 * The ceiling: many fixtures are a few lines (`git clone` prints 32
 * bytes), where the exit marker alone outweighs anything that could be
 * elided, and eliding a fact is never the answer.  So a view above the
 * ceiling passes only when it is no larger than the whole output under
 * its exit marker (the squasher's whole view, squash.h
 * SQ_WHOLE_BYTES_MAX); it is reported as "whole".
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "harness.h"
#include "squash/grammar.h"
#include "squash/squash.h"
#include "tutil.h"

/* No fixture may condense to more tokens than it had. */
#define FIXTURE_RATIO_MAX 1.0
/* Tool directories and fixtures per tool read at most (the tree has
 * ~20 and ~12; a bound keeps the arrays fixed). */
#define FIXTURE_TOOLS_MAX 64
#define FIXTURE_PER_TOOL_MAX 64

static int fixture_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in dir (sorted) that are directories (want_dir) or end in ".out"
 * (without the suffix). */
static size_t fixture_list(const char *dir, bool want_dir, char **names,
                           size_t cap)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    const struct dirent *e;
    while (d && (e = readdir(d)) && n < cap) {
        char p[PATH_MAX + 256];
        struct stat st;
        size_t len = strlen(e->d_name);
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(p, &st) < 0)
            continue;
        if (want_dir && S_ISDIR(st.st_mode))
            names[n++] = strdup(e->d_name);
        else if (!want_dir && S_ISREG(st.st_mode) && len > 4 &&
                 !strcmp(e->d_name + len - 4, ".out"))
            names[n++] = strndup(e->d_name, len - 4);
    }
    if (d)
        closedir(d);
    qsort(names, n, sizeof names[0], fixture_name_cmp);
    return n;
}


/* Fixture `name` under dir: its output appended to raw, its command in
 * cmd; returns its case (the caller's to decref). */
static json_t *fixture_case(const char *dir, const char *name, buf_t *raw,
                            char *cmd, size_t cap)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s.out", dir, name);
    ASSERT_TRUE(tu_read_file(p, raw));
    snprintf(p, sizeof p, "%s/%s.json", dir, name);
    json_error_t je;
    json_t *cs = json_load_file(p, 0, &je);
    ASSERT_TRUE(cs != NULL);
    tu_case_command(cs, cmd, cap);
    return cs;
}
/* Judges one fixture; appends what broke to fails.  Returns true on pass. */
static bool fixture_one(const grammar_set_t *set, const char *dir,
                        const char *tool, const char *name, buf_t *fails)
{
    char p[PATH_MAX + 512], cmd[4096];
    json_error_t je;
    snprintf(p, sizeof p, "%s/%s/%s.json", dir, tool, name);
    json_t *cs = json_load_file(p, 0, &je);
    if (!cs) {
        buf_printf(fails, "%s/%s: %s\n", tool, name, je.text);
        return false;
    }
    buf_t raw = BUF_INIT, out = BUF_INIT, why = BUF_INIT;
    snprintf(p, sizeof p, "%s/%s/%s.out", dir, tool, name);
    bool ok = tu_read_file(p, &raw);
    tu_case_command(cs, cmd, sizeof cmd);
    sq_opts_t o;
    memset(&o, 0, sizeof o);
    o.command = cmd;
    o.log_path = p;
    o.grammars = set;
    int code = (int)json_integer_value(json_object_get(cs, "exit_code"));
    tu_verdict_t v = {0, 0, 0};
    if (!ok || squash_buffer(&o, raw.p, raw.len, code, 0, &out) < 0)
        buf_printf(&why, "cannot read or squash %s\n", p);
    else
        tu_judge(cs, &raw, &out, &v, &why);
    const char *nl = out.p ? memchr(out.p, '\n', out.len) : NULL;
    size_t exit_len = nl && !strncmp(out.p, "[rein] exit ", 12)
                          ? (size_t)(nl - out.p) + 1 : 0;
    bool whole = v.ratio > FIXTURE_RATIO_MAX && out.len <= v.in_bytes + exit_len;
    if (v.ratio > FIXTURE_RATIO_MAX && !whole)
        buf_printf(&why, "ratio %.3f above %.1f\n", v.ratio, FIXTURE_RATIO_MAX);
    fprintf(stderr, "fixture %-34s tokens in %6llu  ratio %.4f  %s\n",
            p + strlen(dir) + 1, (unsigned long long)v.in_tokens, v.ratio,
            why.len ? "FAIL" : whole ? "ok (whole)" : "ok");
    if (why.len)
        buf_printf(fails, "== %s/%s (%s)\n%s-- output:\n%s", tool, name, cmd,
                   why.p, out.p ? out.p : "");
    ok = why.len == 0;
    buf_free(&raw);
    buf_free(&out);
    buf_free(&why);
    json_decref(cs);
    return ok;
}

TEST_T(fixtures_every_grammar_on_real_output, 120)
{
    char dir[PATH_MAX], gdir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/../tests/fixtures", test_build_dir());
    snprintf(gdir, sizeof gdir, "%s/../grammars", test_build_dir());
    struct stat st;
    if (stat(dir, &st) < 0 || stat(gdir, &st) < 0)
        SKIP("no fixtures or grammars beside %s", test_build_dir());
    const char *dirs[] = {gdir, NULL};
    grammar_set_t *set;
    buf_t errs = BUF_INIT, fails = BUF_INIT;
    ASSERT_OK(grammar_set_load(&set, dirs, &errs));
    if (errs.len)
        test_fail(__FILE__, __LINE__, "grammars do not load:\n%s", errs.p);
    char *tools[FIXTURE_TOOLS_MAX];
    size_t nt = fixture_list(dir, true, tools, FIXTURE_TOOLS_MAX);
    size_t pass = 0, total = 0;
    for (size_t t = 0; t < nt; t++) {
        char td[PATH_MAX + 256];
        char *names[FIXTURE_PER_TOOL_MAX];
        snprintf(td, sizeof td, "%s/%s", dir, tools[t]);
        size_t nn = fixture_list(td, false, names, FIXTURE_PER_TOOL_MAX);
        for (size_t i = 0; i < nn; i++) {
            total++;
            pass += fixture_one(set, dir, tools[t], names[i], &fails);
            free(names[i]);
        }
        free(tools[t]);
    }
    fprintf(stderr, "fixtures: %zu of %zu pass\n", pass, total);
    grammar_set_free(set);
    buf_free(&errs);
    ASSERT_TRUE(total > 0);
    if (fails.len)
        test_fail(__FILE__, __LINE__, "%zu of %zu fixtures fail:\n%s",
                  total - pass, total, fails.p);
    buf_free(&fails);
}

/* A compound command's output is each tool's output in turn: npm's real
 * output, then make's.  `npm install ... && make -k ...` applies both
 * grammars, so each tool's lines get their own treatment: npm's http
 * chatter folded by npm's dedup rule, make's outcomes (`Target 'app' not
 * remade`, `... is up to date`) kept by make's outcome rules, make's
 * directory lines counted as its noise, and every fact of both fixtures
 * (the json files' must_keep) kept.  Either command alone misses the
 * other tool's treatment, which is what the one-grammar limit did. */
TEST(fixtures_npm_then_make_each_tool_keeps_its_grammar)
{
    char dir[PATH_MAX], gdir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/../tests/fixtures", test_build_dir());
    tu_shipped_grammars(gdir, sizeof gdir);
    const char *dirs[] = {gdir, NULL};
    grammar_set_t *set;
    buf_t errs = BUF_INIT, raw = BUF_INIT, out = BUF_INIT, why = BUF_INIT;
    ASSERT_OK(grammar_set_load(&set, dirs, &errs));
    static const char *const parts[] = {"npm/install_http_pty", "make/keep_going"};
    char cmds[2][1024];
    json_t *keep = json_array();
    for (size_t i = 0; i < 2; i++) {
        json_t *cs = fixture_case(dir, parts[i], &raw, cmds[i],
                                  sizeof cmds[i]);
        json_array_extend(keep, json_object_get(cs, "must_keep"));
        json_decref(cs);
    }
    char both[2100];
    snprintf(both, sizeof both, "%s && %s", cmds[0], cmds[1]);
    json_t *cs = json_pack("{s:s, s:i, s:o}", "command", both, "exit_code", 2,
                           "must_keep", keep);
    ASSERT_TRUE(cs != NULL);

    static const char npm_dedup[] =
        "\n[rein] repeat 3\xc3\x97 \"npm http fetch GET {} {} {} (cache updated)\" "
        "(lines 2-4)\n";
    static const char *const make_outcomes[] = {
        "\nmake: Target 'app' not remade because of errors.\n",
        "\nmake: 'lib/libutil.a' is up to date.\n",
    };
    for (int deferred = 0; deferred < 2; deferred++) {
        tu_condense(set, both, &raw, !deferred, 0, 2, &out);
        buf_reset(&why);
        tu_verdict_t v;
        if (!tu_judge(cs, &raw, &out, &v, &why))
            test_fail(__FILE__, __LINE__, "%s:\n%s-- output:\n%s",
                      deferred ? "deferred" : "streamed", why.p, out.p);
        ASSERT_CONTAINS(out.p, npm_dedup);
        for (size_t i = 0; i < 2; i++)
            ASSERT_CONTAINS(out.p, make_outcomes[i]);
        ASSERT_TRUE(strstr(out.p, "Entering directory") == NULL);
        ASSERT_CONTAINS(out.p, "\nmake: *** [<builtin>: app.o] Error 1\n");
        ASSERT_CONTAINS(out.p, "\napp.c:5:5: error: expected ");
        ASSERT_CONTAINS(out.p, "\napp.c:4:9: warning: unused variable ");
        ASSERT_CONTAINS(out.p, "added 3 packages in 353ms\n");

        /* the control: one tool's grammar each, the other's treatment
         * is gone */
        tu_condense(set, cmds[0], &raw, !deferred, 0, 2, &out);
        ASSERT_CONTAINS(out.p, npm_dedup);
        /* (streamed, this small output shows every line, noise aside) */
        if (deferred)
            ASSERT_TRUE(strstr(out.p, make_outcomes[0]) == NULL);
        tu_condense(set, cmds[1], &raw, !deferred, 0, 2, &out);
        ASSERT_TRUE(strstr(out.p, npm_dedup) == NULL);
        ASSERT_CONTAINS(out.p, make_outcomes[0]);
    }
    json_decref(cs);
    grammar_set_free(set);
    buf_free(&errs);
    buf_free(&raw);
    buf_free(&out);
    buf_free(&why);
}

/* The real gcc and clang captures of seven files that include one broken
 * header (capture.sh include): each view (streamed as `rein run` shows it,
 * deferred under the input cap as `rein squash` does, and under
 * exec_command's default budget) shows the first copy of the header's
 * error right after the include chain that names the file compiled
 * (src/main.c), the next copies after theirs, and counts all seven copies
 * in one repeat marker, whose folded copies' chains are not shown.  The
 * gcc grammar stripped every chain. */
/* go test writes a test's multi-line log (t.Errorf with newlines, and
 * testify's assertion reports) as its first line at 4 spaces and the rest
 * at 8: the values compared and the diff are the failure, and go with
 * their location, in a long verbose run. */
TEST(fixtures_go_test_log_keeps_its_continuation_lines)
{
    grammar_set_t *set = tu_shipped_set();
    buf_t raw = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 80; i++)
        ASSERT_OK(buf_printf(&raw, "=== RUN   TestParse%d\n--- PASS: "
                                   "TestParse%d (0.00s)\n", i, i));
    static const char failure[] =
        "=== RUN   TestTotal\n"
        "    cart_test.go:42: \n"
        "        \tError Trace:\t/home/u/proj/cart/cart_test.go:42\n"
        "        \tError:      \tNot equal: \n"
        "        \t            \texpected: 300\n"
        "        \t            \tactual  : 299\n"
        "        \t            \tDiff:\n"
        "        \t            \t-300\n"
        "        \t            \t+299\n"
        "    cart_test.go:57: total for code SAVE10\n"
        "        got 0.05\n"
        "        want 0.1\n"
        "--- FAIL: TestTotal (0.00s)\n";
    ASSERT_OK(buf_append_str(&raw, failure));
    for (int i = 0; i < 40; i++)
        ASSERT_OK(buf_printf(&raw, "=== RUN   TestTax%d\n--- PASS: "
                                   "TestTax%d (0.00s)\n", i, i));
    ASSERT_OK(buf_append_str(&raw, "FAIL\nFAIL\texample.com/cart\t0.014s\n"
                                   "FAIL\n"));
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(set, "go test -v ./...", &raw, streamed, 0, 1, &out);
        ASSERT_CONTAINS(out.p, failure + strlen("=== RUN   TestTotal\n"));
    }
    grammar_set_free(set);
    buf_free(&raw);
    buf_free(&out);
}

/* Ruff's full format (its default since 0.9): the rule code and message,
 * then the location and the excerpt under it; each finding is a hazard
 * owning its block, and the count is the outcome.  Without a grammar only
 * the last excerpt and the count were shown. */
TEST(fixtures_ruff_findings_keep_their_location_and_excerpt)
{
    grammar_set_t *set = tu_shipped_set();
    buf_t raw = BUF_INIT, out = BUF_INIT;
    for (int i = 0; i < 9; i++)
        ASSERT_OK(buf_printf(&raw,
                             "F401 [*] `mod%d` imported but unused\n"
                             " --> src/app%d.py:%d:8\n  |\n"
                             "%d | import mod%d\n  |        ^^^^\n  |\n"
                             "help: Remove unused import: `mod%d`\n\n",
                             i, i, i + 1, i + 1, i, i));
    ASSERT_OK(buf_append_str(&raw, "Found 9 errors.\n[*] 9 fixable with the "
                                   "`--fix` option.\n"));
    for (int streamed = 0; streamed < 2; streamed++) {
        tu_condense(set, "ruff check .", &raw, streamed, 0, 1, &out);
        for (int i = 0; i < 9; i++) {
            char want[160];
            snprintf(want, sizeof want,
                     "F401 [*] `mod%d` imported but unused\n"
                     " --> src/app%d.py:%d:8\n",
                     i, i, i + 1);
            ASSERT_CONTAINS(out.p, want);
        }
        ASSERT_CONTAINS(out.p, "\nFound 9 errors.\n");
    }
    grammar_set_free(set);
    buf_free(&raw);
    buf_free(&out);
}

/* `kubectl get pods` is a listing: every row is kept, the header too,
 * and a pod in a failing state is a hazard, so that under a budget its
 * row is the one kept.  Without the grammar the view showed five Running
 * rows and folded the rest, the failing ones with them. */
TEST(fixtures_kubectl_get_keeps_its_rows_and_the_failing_pods)
{
    grammar_set_t *set = tu_shipped_set();
    buf_t raw = BUF_INIT, out = BUF_INIT;
    static const char *const bad[] = {"CrashLoopBackOff", "ImagePullBackOff",
                                      "OOMKilled"};
    ASSERT_OK(buf_append_str(&raw, "NAME                     READY   STATUS"
                                   "             RESTARTS   AGE\n"));
    for (int i = 0; i < 80; i++)
        ASSERT_OK(buf_printf(&raw, "web-7d4b9c%04d-abcde     %s     %-18s"
                                   " %-10d 3d\n",
                             i, i % 20 == 7 ? "0/1" : "1/1",
                             i % 20 == 7 ? bad[i / 30] : "Running",
                             i % 20 == 7 ? 12 : 0));
    for (int view = 0; view < 3; view++) {
        tu_condense(set, "kubectl -n prod get pods", &raw, view == 0,
                    view == 2 ? 1500 : 0, 0, &out);
        if (view < 2) {
            ASSERT_CONTAINS(out.p, "NAME                     READY   STATUS");
            ASSERT_CONTAINS(out.p, "\nweb-7d4b9c0079-abcde ");
            ASSERT_NOT_CONTAINS(out.p, "[rein] repeat");
        }
        for (int i = 7; i < 80; i += 20) {
            char row[64];
            snprintf(row, sizeof row, "\nweb-7d4b9c%04d-abcde     0/1     %s",
                     i, bad[i / 30]);
            ASSERT_CONTAINS(out.p, row);
        }
    }
    grammar_set_free(set);
    buf_free(&raw);
    buf_free(&out);
}

TEST(fixtures_include_chain_goes_with_the_header_error)
{
    static const struct {
        const char *name, *first, *second, *repeat, *folded;
    } cases[] = {
        {"gcc/include_chain",
         "\nIn file included from src/main.c:2:\n"
         "src/../include/util.h:6:1: error: unknown type name \xe2\x80\x98"
         "size_tt\xe2\x80\x99",
         "\nIn file included from src/../include/vec.h:3,\n"
         "                 from src/parse.c:1:\n"
         "src/../include/util.h:6:1: error: ",
         "\n[rein] repeat 7\xc3\x97 \"src/../include/util.h:6:1: error: unknown "
         "type name \xe2\x80\x98size_tt\xe2\x80\x99; did you mean \xe2\x80\x98"
         "size_t\xe2\x80\x99?\" (lines 2, 14, 24, 34, 44, 54, +1 more)\n",
         "from src/log.c:1:"},
        {"gcc/clang_include_chain",
         "\nIn file included from src/main.c:2:\n"
         "src/../include/util.h:6:1: error: unknown type name 'size_tt'",
         "\nIn file included from src/parse.c:1:\n"
         "In file included from src/../include/vec.h:3:\n"
         "src/../include/util.h:6:1: error: ",
         "\n[rein] repeat 7\xc3\x97 \"src/../include/util.h:6:1: error: unknown "
         "type name 'size_tt'; did you mean 'size_t'?\" (lines 2, 22, 36, 50, "
         "64, 78, +1 more)\n",
         "In file included from src/log.c:1:"},
    };
    char dir[PATH_MAX], cmd[4096];
    snprintf(dir, sizeof dir, "%s/../tests/fixtures", test_build_dir());
    grammar_set_t *set = tu_shipped_set();
    buf_t raw = BUF_INIT, out = BUF_INIT, nl = BUF_INIT;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        buf_reset(&raw);
        json_decref(fixture_case(dir, cases[c].name, &raw, cmd, sizeof cmd));
        for (int k = 0; k < 3; k++) {
            /* streamed; the input cap; exec_command's default budget
             * (10000 tokens, which these outputs are well under) */
            tu_condense(set, cmd, &raw, k == 0, k == 2 ? 40000 : 0, 1, &out);
            /* a streamed view starts with the chain: every line of the
             * view is after a newline */
            buf_reset(&nl);
            ASSERT_OK(buf_printf(&nl, "\n%s", out.p));
            if (!strstr(nl.p, cases[c].first) ||
                !strstr(nl.p, cases[c].second) ||
                !strstr(nl.p, cases[c].repeat) || strstr(nl.p, cases[c].folded))
                test_fail(__FILE__, __LINE__, "%s, view %d:\n%s",
                          cases[c].name, k, out.p);
        }
    }
    grammar_set_free(set);
    buf_free(&raw);
    buf_free(&out);
    buf_free(&nl);
}

/* Real clang output (capture.sh clang): clang draws its source excerpt
 * with no gutter, and code at column 0 with no indentation, so a grammar
 * that took only indented or gutter lines cut the excerpt, the caret, the
 * fix-it (`size_t` under `size_tt`) and the notes away from their
 * diagnostic.  Each view (streamed as `rein run` shows it, and under a
 * budget a little larger than the output, as exec_command's) shows each
 * diagnostic with all of them right below it; make's lines and `1 error
 * generated.` after a diagnostic stay lines of their own (the streamed
 * view shows them only after the exit marker).  Under a command no
 * grammar is detected for (ninja), the universal tier does the same. */
TEST(fixtures_clang_excerpts_and_notes_go_with_their_diagnostic)
{
    static const char *const blocks[] = {
        "src/kinds.c:9:1: error: unknown type name 'size_tt'; did you mean "
        "'size_t'?\n"
        "size_tt buf_len(const struct buf *b);\n"
        "^~~~~~~\n"
        "size_t\n"
        "/usr/lib/llvm-14/lib/clang/14.0.6/include/stddef.h:46:23: note: "
        "'size_t' declared here\n"
        "typedef __SIZE_TYPE__ size_t;\n"
        "                      ^\n",
        "[-Wincompatible-pointer-types]\n"
        "return s;\n"
        "       ^\n",
        "src/kinds.c:19:7: note: place parentheses around the assignment to "
        "silence this warning\n"
        "if (n = b->len)\n"
        "      ^\n"
        "    (         )\n",
        "src/kinds.c:21:27: error: member reference base type 'char' is not a "
        "structure or union\n"
        "return undeclared_total + TWICE(b->data);\n"
        "                          ^~~~~~~~~~~~~~\n"
        "src/kinds.c:5:19: note: expanded from macro 'TWICE'\n"
        "#define TWICE(x) (CHECK(x) && CHECK(x))\n"
        "                  ^~~~~~~~\n"
        "src/kinds.c:4:22: note: expanded from macro 'CHECK'\n"
        "#define CHECK(p) ((p)->len > 0)\n"
        "                  ~~~^ ~~~\n",
        "src/kinds.c:21:8: error: use of undeclared identifier "
        "'undeclared_total'\n"
        "return undeclared_total + TWICE(b->data);\n"
        "       ^\n",
        "src/kinds.c:28:23: error: expected ';' after return statement\n"
        "return count_items(&b)\n"
        "                      ^\n"
        "                      ;\n",
    };
    static const char *const eof_block =
        "src/eof.c:3:10: error: expected '}'\n"
        "return 1;\n"
        "         ^\n"
        "src/eof.c:2:1: note: to match this '{'\n"
        "{\n"
        "^\n";
    static const char *const tmpl_block =
        "src/tmpl.cpp:7:9: error: member reference base type 'const int' is "
        "not a structure or union\n"
        "sum += x.weight;\n"
        "       ~^~~~~~~\n"
        "src/tmpl.cpp:13:8: note: in instantiation of function template "
        "specialization 'total<int>' requested here\n"
        "return total(v);\n"
        "       ^\n";
    static const char *const names[] = {"gcc/clang_excerpts",
                                        "make/clang_keep_going",
                                        "gcc/clang_cxx_template"};
    char dir[PATH_MAX], cmd[4096];
    snprintf(dir, sizeof dir, "%s/../tests/fixtures", test_build_dir());
    grammar_set_t *set = tu_shipped_set();
    buf_t raw = BUF_INIT, out = BUF_INIT;
    for (size_t c = 0; c < sizeof names / sizeof names[0]; c++) {
        buf_reset(&raw);
        json_decref(fixture_case(dir, names[c], &raw, cmd, sizeof cmd));
        for (int k = 0; k < 2; k++) {
            tu_condense(set, cmd, &raw, k == 0, k == 1 ? raw.len + 1024 : 0,
                        1, &out);
            bool ok = true;
            if (c == 2) {
                ok = strstr(out.p, tmpl_block) != NULL;
            } else {
                for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
                    ok = ok && strstr(out.p, blocks[b]) != NULL;
            }
            if (c == 1) {
                ok = ok && strstr(out.p, eof_block) != NULL;
                if (k == 0) {
                    /* streamed: the hazards and their lines first; the
                     * outcome after the exit marker */
                    const char *x = strstr(out.p, "[rein] exit ");
                    const char *gen = strstr(out.p, "\n1 error generated.\n");
                    ok = ok && x && gen && gen > x;
                }
            }
            if (!ok)
                test_fail(__FILE__, __LINE__, "%s, view %d:\n%s", names[c], k,
                          out.p);
        }
        if (c != 0)
            continue;
        /* no grammar (ninja): the universal tier keeps them too */
        tu_condense(set, "ninja -C build", &raw, true, 0, 1, &out);
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
            if (!strstr(out.p, blocks[b]))
                test_fail(__FILE__, __LINE__, "ninja, block %zu:\n%s", b,
                          out.p);
    }
    grammar_set_free(set);
    buf_free(&raw);
    buf_free(&out);
}
