/*
 * test_cli.c — the rein command's entry point: --help, --version, help
 * VERB, exit codes for bad usage, the run shorthand, serve's, squash's and
 * the serve watchman's option errors, a long error line's own end through
 * squash and run.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"

static int rein3(const char *a1, const char *a2, const char *a3, buf_t *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rein", test_build_dir());
    const char *argv[] = {path, a1, a2, a3, NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = path;
    o.argv = argv;
    return tu_run(&o, out);
}

static int rein(const char *a1, const char *a2, buf_t *out)
{
    return rein3(a1, a2, NULL, out);
}

TEST(cli_help_and_version)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("--help", NULL, &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein VERB");
    ASSERT_CONTAINS(out.p, "serve");
    buf_reset(&out);
    ASSERT_EQ(rein("--version", NULL, &out), 0);
    ASSERT_STR(out.p, "rein " REIN_VERSION_STRING "\n");
    buf_reset(&out);
    ASSERT_EQ(rein("help", "serve", &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein serve");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--help", &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein serve");
    buf_free(&out);
}

TEST(cli_bad_usage_exits_2_with_one_clear_line)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("--frobnicate", NULL, &out), 2);
    ASSERT_STR(out.p,
               "rein: unknown option '--frobnicate' (try rein --help)\n");
    buf_reset(&out);
    /* A word that is not a verb is a command to proxy. */
    setenv("REIN_STATE_DIR", test_tmpdir(), 1);
    ASSERT_EQ(rein("frobnicate-no-such-command", NULL, &out), 127);
    ASSERT_CONTAINS(out.p, "frobnicate-no-such-command: command not found");
    buf_reset(&out);
    ASSERT_EQ(rein("help", "frobnicate", &out), 2);
    ASSERT_CONTAINS(out.p, "unknown verb 'frobnicate'");
    buf_reset(&out);
    ASSERT_EQ(rein3("help", "run", "extra", &out), 2);
    ASSERT_STR(out.p, "rein help: one verb at a time (usage: rein help "
                      "[VERB])\n");
    buf_reset(&out);
    ASSERT_EQ(rein(NULL, NULL, &out), 2);
    buf_free(&out);
}

TEST(cli_serve_bad_options_exit_2_with_one_clear_line)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("serve", "--profile=mish", &out), 2);
    ASSERT_CONTAINS(out.p, "mish profile is not available yet");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--profile=bash", &out), 2);
    ASSERT_CONTAINS(out.p, "unknown profile 'bash'");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--frob", &out), 2);
    ASSERT_CONTAINS(out.p, "unknown option '--frob'");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--state-dir", &out), 2);
    ASSERT_CONTAINS(out.p, "--state-dir needs a value");
    buf_free(&out);
}

/* `rein reconcile --watch` with argv, fd (or -1) as its fd 3; its exit
 * status, its output in out. */
static int rein_watch(const char *const *argv, int fd, buf_t *out)
{
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    if (fd >= 0) {
        o.extra_fds = &fd;
        o.n_extra_fds = 1;
    }
    buf_reset(out);
    return tu_run(&o, out);
}

/* The watchman's own arguments (rein serve and rein run pass them):
 * anything else is refused with one line and no reconcile (the e2e and
 * run tests show the watchman at work). */
TEST(cli_reconcile_watch_refuses_what_an_owner_would_not_pass)
{
    char path[PATH_MAX], me[32], start[32];
    uint64_t ticks;
    ASSERT_OK(procfs_start_time(getpid(), &ticks));
    snprintf(path, sizeof path, "%s/rein", test_build_dir());
    snprintf(me, sizeof me, "%ld", (long)getpid());
    snprintf(start, sizeof start, "%llu", (unsigned long long)ticks);
    const char *bad[][10] = {
        {path, "reconcile", "--watch", NULL},
        {path, "reconcile", "--watch", "3", NULL},
        {path, "reconcile", "--watch", "3", "--pid", me, NULL},
        {path, "reconcile", "--watch", "x3", "--pid", me, "--start", start},
        {path, "reconcile", "--watch", "3", "--pid", "1", "--start", start},
        {path, "reconcile", "--watch", "3", "--pid", "-5", "--start", start},
        {path, "reconcile", "--watch", "3", "--pid", me, "--start", "-1"},
        {path, "reconcile", "--watch", "3", "--pid", me, "--start", "7x"},
        {path, "reconcile", "--watch", "3", "--pid", me, "--start",
         "99999999999999999999"},
        {path, "reconcile", "--watch", "3", "--pid", me, "--start", start,
         "--frob"},
    };
    buf_t out = BUF_INIT;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(rein_watch(bad[i], -1, &out), 2);
        ASSERT_STR(out.p, "rein reconcile: --watch is for rein's own use "
                          "(usage: rein reconcile --watch FD --pid PID "
                          "--start TICKS [--state-dir DIR])\n");
    }
    /* Well formed, but fd 3 is no pipe. */
    const char *ok[] = {path, "reconcile", "--watch", "3", "--pid", me,
                        "--start", start, NULL};
    ASSERT_EQ(rein_watch(ok, -1, &out), 2);
    ASSERT_STR(out.p, "rein reconcile --watch: fd 3 is not a pipe\n");
    buf_free(&out);
}

static int rein_sh(const char *script, const char *file, buf_t *out);

TEST(cli_squash_bad_options_name_what_was_wrong)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("squash", "--frob", &out), 2);
    ASSERT_CONTAINS(out.p, "rein squash: unknown option '--frob' (usage: "
                           "rein squash [--as \"COMMAND\"]");
    buf_reset(&out);
    ASSERT_EQ(rein("squash", "--exit", &out), 2);
    ASSERT_CONTAINS(out.p, "rein squash: --exit needs a value");
    buf_reset(&out);
    /* help and the error show the same usage, every option in it. */
    ASSERT_EQ(rein("help", "squash", &out), 0);
    ASSERT_CONTAINS(out.p, "[--budget BYTES] [--cols N] [--stream] < output");
    buf_reset(&out);
    ASSERT_EQ(rein("help", "grammar", &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein grammar check FILE [SAMPLE]");
    /* a terminal's width, at the PTY's bounds */
    static const char *const bad[] = {"19", "401", "80x", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char sh[96];
        snprintf(sh, sizeof sh, "\"$0\" squash --cols %s < \"$1\"", bad[i]);
        buf_reset(&out);
        ASSERT_EQ(rein_sh(sh, "/dev/null", &out), 2);
        ASSERT_CONTAINS(out.p, "rein squash: --cols takes the terminal's "
                               "width, 20..400 columns, not '");
    }
    static const char *const good[] = {"20", "400"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char sh[96];
        snprintf(sh, sizeof sh, "\"$0\" squash --cols %s < \"$1\"", good[i]);
        buf_reset(&out);
        ASSERT_EQ(rein_sh(sh, "/dev/null", &out), 0);
        ASSERT_CONTAINS(out.p, "[rein] exit 0");
    }
    buf_free(&out);
}

/* Runs `"$0" ARGS < file` through sh (bin is rein), its output in out. */
static int rein_sh(const char *script, const char *file, buf_t *out)
{
    char bin[PATH_MAX];
    snprintf(bin, sizeof bin, "%s/rein", test_build_dir());
    const char *argv[] = {"/bin/sh", "-c", script, bin, file, NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = "/bin/sh";
    o.argv = argv;
    return tu_run(&o, out);
}

/* A 300 KiB error line (over the squasher's 64 KiB SQ_LINE_MAX) through
 * `rein squash` and through `rein run` of a failing command (in its PTY, which run sets to
 * no ONLCR, the same bytes): its own first
 * and last 4 KiB, one marker naming every byte between, exact; it used to
 * show the ends of its first 64 KiB and never its own end. */
TEST(cli_squash_and_run_show_a_long_error_lines_own_end)
{
    setenv("REIN_STATE_DIR", test_tmpdir(), 1);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/long.out", test_tmpdir());
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    size_t len = 300 * 1024;
    static const char head[] = "Error: request failed: {\"payload\":\"";
    static const char tail[] = "\"} TAIL_7d3f status 500";
    fputs("first\n", f);
    fputs(head, f);
    for (size_t i = strlen(head); i < len - strlen(tail); i++)
        fputc('a' + (int)(i % 26), f);
    fputs(tail, f);
    fputs("\nlast\n", f);
    ASSERT_EQ(fclose(f), 0);
    buf_t out = BUF_INIT;
    char want[160];
    for (int run = 0; run < 2; run++) {
        buf_reset(&out);
        if (run) /* failing: a command that succeeds may be shown verbatim */
            ASSERT_EQ(rein_sh("exec \"$0\" run -- sh -c 'cat \"$1\"; exit 1' "
                              "sh \"$1\"", path, &out), 1);
        else
            ASSERT_EQ(rein_sh("exec \"$0\" squash < \"$1\"", path, &out), 0);
        size_t at = 6; /* line 2 starts after `first` and its LF */
        snprintf(want, sizeof want, "[rein] cut line 2 at 4096 bytes\n%s",
                 head);
        ASSERT_CONTAINS(out.p, want);
        snprintf(want, sizeof want, "\n[rein] omitted part of line 2 (bytes "
                 "%zu-%zu)\n[rein] cut line 2 at 4096 bytes\n", at + 4096,
                 at + len - 4096);
        ASSERT_CONTAINS(out.p, want);
        ASSERT_CONTAINS(out.p, "TAIL_7d3f status 500\n");
        ASSERT_TRUE(strstr(strstr(out.p, "omitted part") + 1,
                           "omitted part") == NULL);
        ASSERT_INT(out.len, <, 9000);
    }
    buf_free(&out);
}
