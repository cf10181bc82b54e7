/*
 * test_fixup.c — rein_bash_fixup: which trailing `| head`/`| tail` and
 * `2>&1` go, and everything that must stay.
 *
 * The vectors include every case of the reference's own tests (oh-my-pi,
 * crates/pi-shell/src/fixup.rs), re-typed as data, then rein's additions:
 * the places where we are deliberately stricter, quoting and nesting corner
 * cases, the input-length limit at its edge, argument errors, and every
 * allocation failing in turn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "term/fixup.h"

/* More allocations than one call of rein_bash_fixup makes on these inputs. */
#define FIXUP_TEST_MAX_ALLOCS 100

struct fixup_case {
    const char *in;
    const char *out;      /* NULL: unchanged */
    const char *strip[3]; /* expected pieces, NULL-terminated */
};

/* Runs one vector; on a mismatch says which input failed. */
static void check_case(const struct fixup_case *c)
{
    rein_fixup_t f;
    size_t want_n = 0;

    while (want_n < 2 && c->strip[want_n])
        want_n++;
    int rc = rein_bash_fixup(c->in, &f);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "input \"%s\": rc %d", c->in, rc);
    const char *want = c->out ? c->out : c->in;
    if (!f.command || strcmp(f.command, want) != 0)
        test_fail(__FILE__, __LINE__, "input \"%s\": got \"%s\", want \"%s\"",
                  c->in, f.command ? f.command : "(null)", want);
    if (f.n_stripped != want_n || !f.stripped || f.stripped[f.n_stripped])
        test_fail(__FILE__, __LINE__, "input \"%s\": %zu pieces, want %zu",
                  c->in, f.n_stripped, want_n);
    for (size_t i = 0; i < want_n; i++)
        if (strcmp(f.stripped[i], c->strip[i]) != 0)
            test_fail(__FILE__, __LINE__,
                      "input \"%s\": piece %zu \"%s\", want \"%s\"", c->in, i,
                      f.stripped[i], c->strip[i]);
    rein_fixup_free(&f);
}

#define RUN_CASES(table)                                                    \
    for (size_t i_ = 0; i_ < sizeof(table) / sizeof((table)[0]); i_++)      \
        check_case(&(table)[i_])

/* ------------------------------------------------ the reference's vectors */

TEST(fixup_ref_strips_trailing_head_tail)
{
    static const struct fixup_case cases[] = {
        {"ls | head", "ls", {"| head"}},
        {"ls | head -5", "ls", {"| head -5"}},
        {"ls | head -n 5", "ls", {"| head -n 5"}},
        {"ls | head -n5", "ls", {"| head -n5"}},
        {"ls | head -n=5", "ls", {"| head -n=5"}},
        {"ls | head -c 100", "ls", {"| head -c 100"}},
        {"ls | head --lines=20", "ls", {"| head --lines=20"}},
        {"ls | head --lines 20", "ls", {"| head --lines 20"}},
        {"ls | head --quiet -5", "ls", {"| head --quiet -5"}},
        {"ls | tail -5", "ls", {"| tail -5"}},
        {"ls | tail --bytes=200", "ls", {"| tail --bytes=200"}},
        {"ls|head", "ls", {"|head"}},
        {"ls |  tail   -20  ", "ls", {"|  tail   -20"}},
        {"git log --oneline | head -20", "git log --oneline", {"| head -20"}},
        {"echo a | tr a b | head -3", "echo a | tr a b", {"| head -3"}},
        {"just build |& head -5", "just build", {"|& head -5"}},
    };
    RUN_CASES(cases);
}

TEST(fixup_ref_strips_with_multibyte_content)
{
    static const struct fixup_case cases[] = {
        {"xcodebuild 2>&1 | grep -E \"a|\xe2\x9c\x93|\xc3\x97|b\" | tail -80",
         "xcodebuild 2>&1 | grep -E \"a|\xe2\x9c\x93|\xc3\x97|b\"",
         {"| tail -80"}},
        {"echo \xe2\x9c\x93 | head -3", "echo \xe2\x9c\x93", {"| head -3"}},
        {"printf '\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e' | tail -n 5",
         "printf '\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e'", {"| tail -n 5"}},
        {"echo \xe2\x9c\x93 \xc3\x97 2>&1", "echo \xe2\x9c\x93 \xc3\x97",
         {"2>&1"}},
    };
    RUN_CASES(cases);
}

TEST(fixup_ref_strips_redundant_2to1)
{
    static const struct fixup_case cases[] = {
        {"cmd 2>&1", "cmd", {"2>&1"}},
        {"just build 2>&1", "just build", {"2>&1"}},
        {"just build 2>&1 | tail -3", "just build", {"| tail -3", "2>&1"}},
        {"cargo build 2>&1 | head -50", "cargo build", {"| head -50", "2>&1"}},
    };
    RUN_CASES(cases);
}

TEST(fixup_ref_strips_across_compound_commands)
{
    static const struct fixup_case cases[] = {
        {"just build 2>&1 | tail -3 && just up && sleep 4 && just healthz",
         "just build && just up && sleep 4 && just healthz",
         {"| tail -3", "2>&1"}},
        {"cmd1 | head -5 && cmd2 && cmd3 | tail -3", "cmd1 && cmd2 && cmd3",
         {"| head -5", "| tail -3"}},
        {"echo a; cmd | head -5; echo b", "echo a; cmd; echo b", {"| head -5"}},
        {"cmd | head -5 || fallback | tail -3", "cmd || fallback",
         {"| head -5", "| tail -3"}},
        {"cmd1 | head -5 && cmd2 2>&1 | grep err", "cmd1 && cmd2 2>&1 | grep err",
         {"| head -5"}},
    };
    RUN_CASES(cases);
}

TEST(fixup_ref_preserves_semantics_bearing_pipelines)
{
    static const struct fixup_case cases[] = {
        {"tail -f /var/log/system.log", NULL, {NULL}},
        {"tail -F file.log", NULL, {NULL}},
        {"ls | tail -f -", NULL, {NULL}},
        {"ls | head -5 | sort", NULL, {NULL}},
        {"cat file | head -5 | wc -l", NULL, {NULL}},
        {"cat file | tail -n +2", NULL, {NULL}},
        {"cat file | tail +5", NULL, {NULL}},
        {"ls | head -5 > /tmp/out.txt", NULL, {NULL}},
        {"ls | head -5 2>/dev/null", NULL, {NULL}},
        {"echo \"ls | head -5\"", NULL, {NULL}},
        {"echo $(ls | head -5)", NULL, {NULL}},
        {"head -5 file.txt", NULL, {NULL}},
        {"head /etc/hosts", NULL, {NULL}},
        {"head -5", NULL, {NULL}},
        {"cmd 2>&1 | grep err", NULL, {NULL}},
        {"cmd > file 2>&1", NULL, {NULL}},
        {"cmd >& file", NULL, {NULL}},
        {"cmd 2>&1 > file", NULL, {NULL}},
        {"for f in *.txt; do\n  echo $f\ndone | head -5", NULL, {NULL}},
        {"cat <<EOF | head -5\ncontent\nEOF", NULL, {NULL}},
        {"ls\nls | head -5", NULL, {NULL}},
        {"echo \"unterminated | head -5", NULL, {NULL}},
    };
    RUN_CASES(cases);
}

/* ------------------------------------------------------- rein's additions */

TEST(fixup_strips_more_shapes)
{
    static const struct fixup_case cases[] = {
        {"ls | head -q", "ls", {"| head -q"}},
        {"ls | tail -v -n 3", "ls", {"| tail -v -n 3"}},
        {"ls | tail --verbose --lines=3", "ls", {"| tail --verbose --lines=3"}},
        {"ls | head -c5", "ls", {"| head -c5"}},
        {"ls | tail -n 20", "ls", {"| tail -n 20"}},
        {"ls | tail -20", "ls", {"| tail -20"}},
        {"ls\t|\thead\t-3", "ls", {"|\thead\t-3"}},
        {"cmd 2>&1|head", "cmd", {"|head", "2>&1"}},
        {"cmd\t2>&1", "cmd", {"2>&1"}},
        {"cmd   2>&1   ", "cmd", {"2>&1"}},
        {"make -j8 all 2>&1", "make -j8 all", {"2>&1"}},
        {"FOO=1 cmd 2>&1", "FOO=1 cmd", {"2>&1"}},
        {"head -5 2>&1", "head -5", {"2>&1"}},
        {"ls | head -5; ", "ls;", {"| head -5"}},
        {"ls | head -5 &", "ls &", {"| head -5"}},
        {"cmd 2>&1 &", "cmd &", {"2>&1"}},
        {"cmd 2>&1; ls | tail", "cmd; ls", {"2>&1", "| tail"}},
        {"ls | head -5 # first few", "ls # first few", {"| head -5"}},
        {"cmd 2>&1 | head | head", "cmd 2>&1 | head", {"| head"}},
        {"! grep x f | head", "! grep x f", {"| head"}},
        {"time make 2>&1", "time make", {"2>&1"}},
        {"[[ -f x ]] || ls | head", "[[ -f x ]] || ls", {"| head"}},
    };
    RUN_CASES(cases);
}

TEST(fixup_compound_stage_before_the_cap)
{
    /* A whole loop, group or subshell may feed the cap; its inside stays. */
    static const struct fixup_case cases[] = {
        {"for i in 1 2; do echo $i; done | head", "for i in 1 2; do echo $i; done",
         {"| head"}},
        {"while read l; do echo $l | head -1; done < f | tail -3",
         "while read l; do echo $l | head -1; done < f", {"| tail -3"}},
        {"(cd src && make) | head -20", "(cd src && make)", {"| head -20"}},
        {"{ make; make test; } 2>&1 | tail", "{ make; make test; } 2>&1",
         {"| tail"}},
        {"if true; then ls; fi | head", "if true; then ls; fi", {"| head"}},
        {"case $x in a) ls;; esac | head", "case $x in a) ls;; esac", {"| head"}},
        {"(( i = 1 | 2 )) && ls | head", "(( i = 1 | 2 )) && ls", {"| head"}},
    };
    RUN_CASES(cases);
}

TEST(fixup_leaves_quoted_and_nested_alone)
{
    static const struct fixup_case cases[] = {
        {"echo '| head'", NULL, {NULL}},
        {"echo \"x | head -5\"", NULL, {NULL}},
        {"echo 'a' \"b\" '2>&1'", NULL, {NULL}},
        {"echo \\| head", NULL, {NULL}},
        {"(cmd | head)", NULL, {NULL}},
        {"echo $(cmd | head)", NULL, {NULL}},
        {"echo `cmd | head`", NULL, {NULL}},
        {"cat <(ls | head)", NULL, {NULL}},
        {"{ ls | head; }", NULL, {NULL}},
        {"for i in 1 2; do ls | head; done", NULL, {NULL}},
        {"if true; then ls | head; fi", NULL, {NULL}},
        {"case x in a) ls | head;; esac", NULL, {NULL}},
        {"while true; do make 2>&1; done", NULL, {NULL}},
        {"(make 2>&1)", NULL, {NULL}},
        {"echo $(make 2>&1)", NULL, {NULL}},
    };
    RUN_CASES(cases);
}

TEST(fixup_quoting_does_not_hide_the_real_pipe)
{
    /* Quotes, escapes and expansions with | inside, then a real cap. */
    static const struct fixup_case cases[] = {
        {"echo '| head' | head", "echo '| head'", {"| head"}},
        {"echo \"a \\\" | b\" | tail -2", "echo \"a \\\" | b\"", {"| tail -2"}},
        {"echo $'it\\'s | x' | head", "echo $'it\\'s | x'", {"| head"}},
        {"echo ${x:-a|b} | head", "echo ${x:-a|b}", {"| head"}},
        {"echo $((1|2)) | head", "echo $((1|2))", {"| head"}},
        {"echo \"$(ls | wc -l)\" | head", "echo \"$(ls | wc -l)\"", {"| head"}},
        {"echo `ls | wc` | head", "echo `ls | wc`", {"| head"}},
        {"diff <(ls a) <(ls b) | head", "diff <(ls a) <(ls b)", {"| head"}},
        {"echo $(case x in a) echo;; esac) | head",
         "echo $(case x in a) echo;; esac)", {"| head"}},
        {"grep -r 'if x' . | head", "grep -r 'if x' .", {"| head"}},
        {"echo done | head", "echo done", {"| head"}},
    };
    RUN_CASES(cases);
}

TEST(fixup_keeps_what_changes_meaning)
{
    static const struct fixup_case cases[] = {
        {"ls | tail -f x", NULL, {NULL}},
        {"ls | tail --follow", NULL, {NULL}},
        {"ls | tail -n +5", NULL, {NULL}},
        {"ls | head file.txt", NULL, {NULL}},
        {"ls | head --help", NULL, {NULL}},
        {"ls | head -5 file.txt", NULL, {NULL}},
        {"a | head | wc -l", NULL, {NULL}},
        {"ls | head > out", NULL, {NULL}},
        {"ls | head < in", NULL, {NULL}},
        {"ls | FOO=1 head", NULL, {NULL}},
        {"ls | /usr/bin/head", NULL, {NULL}},
        {"ls | \"head\" -5", NULL, {NULL}},
        {"ls | \\head", NULL, {NULL}},
        {"ls | head -n \"5\"", NULL, {NULL}},
        {"ls | head --silent", NULL, {NULL}},
        {"ls | headx", NULL, {NULL}},
        {"ls | head-5", NULL, {NULL}},
        {"head -5 file", NULL, {NULL}},
        {"tail", NULL, {NULL}},
        {"cmd || head", NULL, {NULL}},
        {"cmd && tail -5", NULL, {NULL}},
        {"cmd 2>&1 | grep x", NULL, {NULL}},
        {"cmd > f 2>&1", NULL, {NULL}},
        {"cmd 2>/dev/null 2>&1", NULL, {NULL}},
        {"2>&1 cmd", NULL, {NULL}},
        {"2>&1", NULL, {NULL}},
        {"cmd 2>& 1", NULL, {NULL}},
        {"cmd 1>&2", NULL, {NULL}},
        {"cmd x2>&1", NULL, {NULL}},
        {"cmd 2>&1x", NULL, {NULL}},
        {"cmd 12>&1", NULL, {NULL}},
        {"cmd &>/dev/null", NULL, {NULL}},
        {"(make) 2>&1", NULL, {NULL}},
        {"FOO=1 2>&1", NULL, {NULL}},
        /* |& already merges stderr into the pipe: the 2>&1 is left, as the
         * reference does (its parser sees two redirections there). */
        {"make 2>&1 |& head", "make 2>&1", {"|& head"}},
        {"ls | head -5 2>&1", NULL, {NULL}},
        {"ls | head -5 | tail -2 | wc", NULL, {NULL}},
    };
    RUN_CASES(cases);
}

TEST(fixup_stricter_than_reference)
{
    /* `head 5` reads a file named 5; a dangling -n is an error; both stay.
     * -n -5 (all but the last 5) also stays: a value must be plain digits. */
    static const struct fixup_case cases[] = {
        {"ls | head 5", NULL, {NULL}},
        {"ls | head -n", NULL, {NULL}},
        {"ls | tail --lines", NULL, {NULL}},
        {"ls | head -n -5", NULL, {NULL}},
        {"ls | head -n=", NULL, {NULL}},
        {"ls | head --lines=", NULL, {NULL}},
        {"ls | head -", NULL, {NULL}},
    };
    RUN_CASES(cases);
}

TEST(fixup_leaves_what_is_not_shell_alone)
{
    static const struct fixup_case cases[] = {
        {"", NULL, {NULL}},
        {"   ", NULL, {NULL}},
        {"| head", NULL, {NULL}},
        {"ls |", NULL, {NULL}},
        {"ls | | head", NULL, {NULL}},
        {"ls && | head", NULL, {NULL}},
        {"ls && ", NULL, {NULL}},
        {"; ls | head", NULL, {NULL}},
        {"ls ;; ls | head", NULL, {NULL}},
        {"echo 'open | head", NULL, {NULL}},
        {"echo $(ls | head", NULL, {NULL}},
        {"echo `ls | head", NULL, {NULL}},
        {"echo ${x | head", NULL, {NULL}},
        {"(ls | head", NULL, {NULL}},
        {"ls) | head", NULL, {NULL}},
        {"ls \\", NULL, {NULL}},
        {"ls | head\r", NULL, {NULL}},
        {"ls | head -5\n", NULL, {NULL}},
        {"cat <<EOF | head", NULL, {NULL}},
        {"f() { ls; } | head", NULL, {NULL}},
        {"function f { ls; } ; ls | head", NULL, {NULL}},
        {"a=(1 2) ; ls | head", NULL, {NULL}},
        {"ls !(x) | head", NULL, {NULL}},
        {"if true; then ls; | head", NULL, {NULL}},
        {"fi; ls | head", NULL, {NULL}},
        {"done | head", NULL, {NULL}},
        {"{ ls; } x | head", NULL, {NULL}},
        {"ls | time head", NULL, {NULL}},
        {"echo $[1|2] | head", NULL, {NULL}},
        {"ls > | head", NULL, {NULL}},
        {"ls # | head", NULL, {NULL}},
    };
    RUN_CASES(cases);
}

TEST(fixup_follows_bash_grammar)
{
    /* Valid forms of case and for still feed a cap that goes; forms bash
     * rejects (checked with bash -n) are left as they are. */
    static const struct fixup_case cases[] = {
        {"case x in (a|b) ls;; esac | head", "case x in (a|b) ls;; esac",
         {"| head"}},
        {"case x in esac | head", "case x in esac", {"| head"}},
        {"case x in a) ls; esac | head", "case x in a) ls; esac", {"| head"}},
        {"for x; do echo; done | head", "for x; do echo; done", {"| head"}},
        {"for x do echo; done | head", "for x do echo; done", {"| head"}},
        {"for x in; do :; done | head", "for x in; do :; done", {"| head"}},
        {"a[1]=2 ls | head", "a[1]=2 ls", {"| head"}},
        {"cmd 2>&1>x | head", "cmd 2>&1>x", {"| head"}},
        {"for x in a b; echo | head", NULL, {NULL}},
        {"for x in a b do echo; done | head", NULL, {NULL}},
        {"case x in a b) ;; esac | head", NULL, {NULL}},
        {"case x in ;; esac | head", NULL, {NULL}},
        {"e[ | head", NULL, {NULL}},
        {"ls | ! head", NULL, {NULL}},
        {"in | head", NULL, {NULL}},
        {"echo >0>2 | head", NULL, {NULL}},
        {"ls &; ls | head", NULL, {NULL}},
        {"cat <(ls |) | head", NULL, {NULL}},
        {"if a && then b; fi | head", NULL, {NULL}},
        {"if a; then b; elif c; then d; else e; fi | head",
         "if a; then b; elif c; then d; else e; fi", {"| head"}},
        {"echo $() <() | head", "echo $() <()", {"| head"}},
        {"if a; then b; else c; else d; fi | head", NULL, {NULL}},
        {"if a; then fi | head", NULL, {NULL}},
        {"if a; fi | head", NULL, {NULL}},
        {"for i in 1 2; do done | head", NULL, {NULL}},
        {"while a; done | head", NULL, {NULL}},
        {"{ } | head", NULL, {NULL}},
        {"( ) | head", NULL, {NULL}},
    };
    RUN_CASES(cases);
}

/* ------------------------------------------------------------ the contract */

TEST(fixup_unchanged_result_shape)
{
    rein_fixup_t f;
    ASSERT_OK(rein_bash_fixup("ls -la  ", &f));
    ASSERT_STR(f.command, "ls -la  "); /* a copy, trailing blanks kept */
    ASSERT_EQ(f.n_stripped, 0);
    ASSERT_TRUE(f.stripped != NULL);
    ASSERT_TRUE(f.stripped[0] == NULL);
    rein_fixup_free(&f);
    ASSERT_TRUE(f.command == NULL && f.stripped == NULL && f.n_stripped == 0);
}

TEST(fixup_einval_and_free_edges)
{
    rein_fixup_t f;
    memset(&f, 0x5a, sizeof f);
    ASSERT_EQ(rein_bash_fixup(NULL, &f), -EINVAL);
    ASSERT_TRUE(f.command == NULL && f.stripped == NULL && f.n_stripped == 0);
    ASSERT_EQ(rein_bash_fixup("ls | head", NULL), -EINVAL);

    rein_fixup_free(NULL);
    rein_fixup_t zero;
    memset(&zero, 0, sizeof zero);
    rein_fixup_free(&zero);
    rein_fixup_free(&zero); /* twice: free zeroes */
}

/* A string of exactly len bytes: "ls", blanks, then " | head". */
static char *padded_cap(size_t len)
{
    char *s = malloc(len + 1);
    if (!s)
        return NULL;
    memset(s, ' ', len);
    memcpy(s, "ls", 2);
    memcpy(s + len - 7, " | head", 7);
    s[len] = '\0';
    return s;
}

TEST(fixup_input_limit_edge)
{
    rein_fixup_t f;
    char *at = padded_cap(FIXUP_MAX_INPUT);
    char *over = padded_cap(FIXUP_MAX_INPUT + 1);
    ASSERT_TRUE(at && over);

    ASSERT_OK(rein_bash_fixup(at, &f));
    ASSERT_STR(f.command, "ls");
    ASSERT_EQ(f.n_stripped, 1);
    ASSERT_STR(f.stripped[0], "| head");
    rein_fixup_free(&f);

    ASSERT_OK(rein_bash_fixup(over, &f));
    ASSERT_STR(f.command, over);
    ASSERT_EQ(f.n_stripped, 0);
    rein_fixup_free(&f);
    free(at);
    free(over);
}

TEST(fixup_deep_nesting_is_bounded)
{
    /* Far deeper than FIXUP_MAX_DEPTH: unchanged, and no stack overflow. */
    size_t depth = 10000;
    size_t len = depth * 3 + 16;
    char *s = malloc(len);
    ASSERT_TRUE(s);
    size_t at = 0;
    for (size_t i = 0; i < depth; i++)
        s[at++] = '$', s[at++] = '(';
    s[at++] = 'x';
    for (size_t i = 0; i < depth; i++)
        s[at++] = ')';
    memcpy(s + at, " | head", 8);

    rein_fixup_t f;
    ASSERT_OK(rein_bash_fixup(s, &f));
    ASSERT_STR(f.command, s);
    ASSERT_EQ(f.n_stripped, 0);
    rein_fixup_free(&f);

    /* Within the bound it still works. */
    ASSERT_OK(rein_bash_fixup("echo $(echo $(echo $(ls))) | head", &f));
    ASSERT_STR(f.command, "echo $(echo $(echo $(ls)))");
    rein_fixup_free(&f);
    free(s);
}

TEST(fixup_many_pipelines)
{
    /* Thousands of cuts in one command, all reported in order. */
    size_t n = 2000;
    const char *unit = "ls 2>&1 | head; ";
    size_t ulen = strlen(unit);
    char *s = malloc(n * ulen + 1);
    ASSERT_TRUE(s);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * ulen, unit, ulen);
    s[n * ulen] = '\0';

    rein_fixup_t f;
    ASSERT_OK(rein_bash_fixup(s, &f));
    ASSERT_EQ(f.n_stripped, 2 * n);
    ASSERT_STR(f.stripped[0], "| head");
    ASSERT_STR(f.stripped[1], "2>&1");
    ASSERT_STR(f.stripped[2 * n - 1], "2>&1");
    ASSERT_TRUE(f.stripped[2 * n] == NULL);
    ASSERT_EQ(strlen(f.command), n * 4 - 1); /* "ls; " each, last blank cut */
    ASSERT_TRUE(strncmp(f.command, "ls; ls; ", 8) == 0);
    rein_fixup_free(&f);
    free(s);
}

TEST(fixup_every_allocation_failure)
{
    /* Fail the 1st, 2nd, ... allocation until a call succeeds: each failure
     * must be -ENOMEM with *out zeroed (leaks show under ASan/valgrind). */
    static const char *const inputs[] = {
        "cargo build 2>&1 | head -50", "ls", "a | head; b 2>&1", "x\ny",
    };
    for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
        unsigned long nth;
        for (nth = 1; nth < FIXUP_TEST_MAX_ALLOCS; nth++) {
            rein_fixup_t f;
            fixup_fail_nth_alloc = nth;
            int rc = rein_bash_fixup(inputs[k], &f);
            fixup_fail_nth_alloc = 0;
            if (rc == 0) {
                rein_fixup_free(&f);
                break;
            }
            ASSERT_EQ(rc, -ENOMEM);
            ASSERT_TRUE(f.command == NULL && f.stripped == NULL &&
                        f.n_stripped == 0);
        }
        ASSERT_TRUE(nth > 1); /* at least one allocation was failed */
        ASSERT_TRUE(nth < FIXUP_TEST_MAX_ALLOCS);
    }
}
