/*
 * test_shell.c — one-shot and persistent bash against real bash: exit
 * codes, merged output order, environment and cwd, snapshots, UTF-8, the
 * drain after the foreground command (EOF, idle window, 2 s bound) in both
 * modes, a persistent session's per-run output channels and the bound on
 * those that linger, state kept or dropped between runs, cancel, abort and
 * timeout reaching a TERM-ignoring tree, and nothing ever left running.
 * The core cases run twice: with pidfds and with the SIGCHLD fallback.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "exec/shell.h"
#include "harness.h"

/* Output collector; when the output first contains `when`, acts from
 * inside the callback: 1 abort, 2 try a nested run, 3 write a byte to
 * notify_fd (another thread waits on it). */
struct col {
    buf_t out;
    rein_shell_t *sh;
    const char *when;
    int action;
    int notify_fd;
    bool fired;
    int action_rc;
};

static void on_chunk(const char *s, size_t n, void *data)
{
    struct col *c = data;
    buf_append(&c->out, s, n);
    if (!c->when || c->fired || !c->out.p || !strstr(c->out.p, c->when))
        return;
    c->fired = true;
    if (c->action == 1) {
        c->action_rc = rein_shell_abort(c->sh);
    } else if (c->action == 2) {
        rein_shell_run_opts_t o = {.command = "true"};
        rein_run_result_t res;
        c->action_rc = rein_shell_run(c->sh, &o, &res);
    } else if (c->action == 3) {
        c->action_rc = write(c->notify_fd, "x", 1) == 1 ? 0 : -errno;
    }
}

static int xexec(const rein_shell_opts_t *so, rein_shell_run_opts_t *o,
                 struct col *c, rein_run_result_t *res)
{
    o->on_chunk = on_chunk;
    o->data = c;
    return rein_shell_exec(so, o, res);
}

static int xrun(rein_shell_t *sh, rein_shell_run_opts_t *o, struct col *c,
                rein_run_result_t *res)
{
    c->sh = sh;
    o->on_chunk = on_chunk;
    o->data = c;
    return rein_shell_run(sh, o, res);
}

/* Runs cmd in sh and returns its output (static buffer of the collector). */
static const char *run_out(rein_shell_t *sh, struct col *c, const char *cmd,
                           rein_run_result_t *res)
{
    rein_shell_run_opts_t o = {.command = cmd};
    buf_reset(&c->out);
    ASSERT_OK(xrun(sh, &o, c, res));
    return c->out.p ? c->out.p : "";
}

/* The number after `tag ` in s, e.g. "gc 1234". */
static pid_t pid_after(const char *s, const char *tag)
{
    const char *p = s ? strstr(s, tag) : NULL;
    ASSERT_TRUE(p != NULL);
    return (pid_t)atol(p + strlen(tag));
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    ASSERT_TRUE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* The whole of a small file, in buf. */
static const char *read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(fd >= 0);
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    ASSERT_TRUE(n >= 0);
    buf[n] = '\0';
    return buf;
}

/* How many fds of this process are a persistent session's output channels
 * (FIFOs in a rein-shell-* directory, deleted or not). */
static int count_channels(void)
{
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[512], link[512];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k <= 0)
            continue;
        link[k] = '\0';
        if (strstr(link, "/rein-shell-"))
            n++;
    }
    closedir(d);
    return n;
}

/* A background job that prints a tick every 100 ms until a file named
 * `stop` appears in its cwd. */
#define TICKER                                                              \
    "while [ ! -e stop ]; do echo tick; sleep 0.1; done & echo \"bg $!\""

/* ------------------------------------------------------------ one-shot */

static void core_exec_exit_codes(void)
{
    static const struct {
        const char *cmd;
        int code;
    } cases[] = {{"true", 0}, {"exit 3", 3}, {"false", 1},
                 {"kill -9 $$", 128 + SIGKILL}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct col c = {0};
        rein_shell_run_opts_t o = {.command = cases[i].cmd};
        rein_run_result_t res;
        ASSERT_OK(xexec(NULL, &o, &c, &res));
        ASSERT_TRUE(res.has_exit_code);
        ASSERT_EQ(res.exit_code, cases[i].code);
        ASSERT_FALSE(res.cancelled);
        ASSERT_FALSE(res.timed_out);
        buf_free(&c.out);
    }
}
TEST(shell_exec_exit_codes) { core_exec_exit_codes(); }

static void core_exec_merged_output(void)
{
    struct col c = {0};
    rein_shell_run_opts_t o = {.command = "echo a; echo b >&2; echo c"};
    rein_run_result_t res;
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    ASSERT_STR(c.out.p, "a\nb\nc\n");
    buf_free(&c.out);
}
TEST(shell_exec_merges_stdout_and_stderr_in_order)
{
    core_exec_merged_output();
}

TEST(shell_exec_env_cwd_and_skipped_variables)
{
    char benv[512];
    snprintf(benv, sizeof benv, "%s/bash_env", test_tmpdir());
    write_file(benv, "echo LEAKED\n");
    setenv("BASH_ENV", benv, 1); /* must not be sourced */
    setenv("SHLVL", "41", 1);    /* bash would make it 42 */
    setenv("REIN_T_HOST", "host", 1);
    const char *senv[] = {"REIN_T_S=session", "REIN_T_B=session", NULL};
    const char *renv[] = {"REIN_T_B=cmd value", NULL};
    rein_shell_opts_t so = {.session_env = senv};
    struct col c = {0};
    rein_shell_run_opts_t o = {
        .command = "echo \"$REIN_T_HOST|$REIN_T_S|$REIN_T_B|$SHLVL|$(pwd)\"",
        .env = renv, .cwd = test_tmpdir()};
    rein_run_result_t res;
    ASSERT_OK(xexec(&so, &o, &c, &res));
    char want[1024];
    snprintf(want, sizeof want, "host|session|cmd value|1|%s\n",
             test_tmpdir());
    ASSERT_STR(c.out.p, want);

    /* The skip-list holds for the session env and a command's env as for
     * the host's: no startup file, no exported function, no SHLVL, and no
     * seed or offset of bash's own (SECONDS, RANDOM, $0 by BASH_ARGV0,
     * the platform names).  Other names pass. */
    char fenv[600];
    snprintf(fenv, sizeof fenv, "BASH_ENV=%s", benv);
    setenv("SECONDS", "1000", 1);
    setenv("BASH_ARGV0", "renamed", 1);
    setenv("OSTYPE", "host-os", 1);
    const char *senv2[] = {fenv, "SHLVL=9", "BASH_FUNC_f%%=() { echo fn; }",
                           "REIN_T_S=s2", "HOSTTYPE=host-type", NULL};
    const char *renv2[] = {fenv, "SHLVL=42", "ENV=/nonexistent",
                           "PS4=+cmd ", "REIN_T_B=b2", NULL};
    rein_shell_opts_t so2 = {.session_env = senv2};
    rein_shell_run_opts_t o2 = {
        .command = "echo \"$SHLVL|$(type -t f)|$REIN_T_S|$REIN_T_B|"
                   "$(( SECONDS < 100 ))|$0|"
                   "$([ \"$OSTYPE\" = host-os ] && echo leaked)|"
                   "$([ \"$HOSTTYPE\" = host-type ] && echo leaked)|$PS4\"",
        .env = renv2};
    buf_reset(&c.out);
    ASSERT_OK(xexec(&so2, &o2, &c, &res));
    ASSERT_STR(c.out.p, "1||s2|b2|1|/bin/bash|||+ \n");
    rein_shell_t *sh;
    ASSERT_OK(rein_shell_new(&so2, &sh));
    o2.command = "echo \"$SHLVL|$(type -t f)|$REIN_T_S|$REIN_T_B|$PS4\"";
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &o2, &c, &res));
    ASSERT_STR(c.out.p, "1||s2|b2|+ \n");
    rein_shell_free(sh);
    unsetenv("SECONDS");
    unsetenv("BASH_ARGV0");
    unsetenv("OSTYPE");

    rein_shell_run_opts_t bad = {.command = "true", .cwd = "/nonexistent"};
    ASSERT_EQ(xexec(NULL, &bad, &c, &res), REIN_ECWD);
    const char *malformed[] = {"NOEQUALS", NULL};
    rein_shell_run_opts_t bad2 = {.command = "true", .env = malformed};
    ASSERT_EQ(xexec(NULL, &bad2, &c, &res), REIN_EENV);
    ASSERT_EQ(rein_shell_exec(NULL, NULL, &res), -EINVAL);
    buf_free(&c.out);
}

TEST(shell_exec_sources_the_snapshot)
{
    char snap[512];
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    write_file(snap, "SNAPVAR=v1\nsnapfn() { echo \"fn:$SNAPVAR\"; }\n"
                     "echo noise; echo noise >&2\n");
    rein_shell_opts_t so = {.snapshot_path = snap};
    struct col c = {0};
    rein_shell_run_opts_t o = {
        .command = "snapfn; echo \"[$1|$2|${__rein_c-unset}]\"; exit 4"};
    rein_run_result_t res;
    ASSERT_OK(xexec(&so, &o, &c, &res));
    ASSERT_STR(c.out.p, "fn:v1\n[||unset]\n");
    ASSERT_EQ(res.exit_code, 4);

    rein_shell_opts_t missing = {.snapshot_path = "/nonexistent/snap.sh"};
    ASSERT_EQ(xexec(&missing, &o, &c, &res), REIN_ESNAPSHOT);
    char quits[512];
    snprintf(quits, sizeof quits, "%s/quits.sh", test_tmpdir());
    write_file(quits, "exit 3\n");
    rein_shell_opts_t q = {.snapshot_path = quits};
    ASSERT_EQ(xexec(&q, &o, &c, &res), REIN_ESNAPSHOT);

    /* An empty path is no snapshot, as for a session: the command runs
     * and its status stands (it failed with ESNAPSHOT after running, and
     * a command long enough to go through a memfd was read from the wrong
     * fd). */
    rein_shell_opts_t none = {.snapshot_path = ""};
    rein_shell_run_opts_t hi = {.command = "echo hi; exit 5"};
    buf_reset(&c.out);
    ASSERT_OK(xexec(&none, &hi, &c, &res));
    ASSERT_STR(c.out.p, "hi\n");
    ASSERT_EQ(res.exit_code, 5);
    buf_t longc = BUF_INIT;
    ASSERT_OK(buf_append_str(&longc, ": '"));
    while (longc.len < SHELL_ARG_MAX + 1024)
        ASSERT_OK(buf_append_str(&longc, "xxxxxxxx"));
    ASSERT_OK(buf_append_str(&longc, "'; echo long"));
    rein_shell_run_opts_t lo = {.command = longc.p};
    buf_reset(&c.out);
    ASSERT_OK(xexec(&none, &lo, &c, &res));
    ASSERT_STR(c.out.p, "long\n");
    ASSERT_EQ(res.exit_code, 0);
    buf_free(&longc);
    buf_free(&c.out);
}

TEST(shell_exec_invalid_utf8_becomes_replacement)
{
    struct col c = {0};
    rein_shell_run_opts_t o = {.command = "printf 'a\\377b\\342\\202\\254'"};
    rein_run_result_t res;
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    ASSERT_STR(c.out.p, "a\xEF\xBF\xBD" "b\xE2\x82\xAC");
    buf_free(&c.out);
}

static void core_exec_background_drain(void)
{
    /* Output a background job writes after the command is still caught:
     * the drain runs until EOF, within the window. */
    struct col c = {0};
    rein_shell_run_opts_t o = {.command = "(sleep 0.1; echo late) & echo now"};
    rein_run_result_t res;
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    ASSERT_STR(c.out.p, "now\nlate\n");
    buf_free(&c.out);
}
TEST(shell_exec_drains_background_output)
{
    core_exec_background_drain();
}

static void core_exec_background_job_terminated(void)
{
    /* A job holding the pipe delays the return by the idle window only,
     * and is terminated afterwards. */
    struct col c = {0};
    rein_shell_run_opts_t o = {.command = "sleep 30 & echo \"bg $!\""};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    uint64_t took = test_now_ms() - t0;
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_INT(took, >=, REIN_SHELL_DRAIN_IDLE_MS);
    ASSERT_INT(took, <, REIN_SHELL_DRAIN_IDLE_MS + 1000);
    ASSERT_FALSE(test_pid_alive(pid_after(c.out.p, "bg ")));

    /* One that does not hold the pipe is found all the same. */
    buf_reset(&c.out);
    rein_shell_run_opts_t o2 = {
        .command = "sleep 30 >/dev/null 2>&1 & echo \"bg $!\""};
    t0 = test_now_ms();
    ASSERT_OK(xexec(NULL, &o2, &c, &res));
    ASSERT_INT(test_now_ms() - t0, <, REIN_SHELL_DRAIN_IDLE_MS);
    ASSERT_FALSE(test_pid_alive(pid_after(c.out.p, "bg ")));
    buf_free(&c.out);
}
TEST(shell_exec_terminates_background_jobs_after_the_drain)
{
    core_exec_background_job_terminated();
}

TEST(shell_exec_drain_is_bounded_by_the_max_window)
{
    /* A job that never pauses for the idle window: the drain stops at
     * REIN_SHELL_DRAIN_MAX_MS, then the job is ended. */
    struct col c = {0};
    rein_shell_run_opts_t o = {.command = TICKER, .cwd = test_tmpdir()};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    uint64_t took = test_now_ms() - t0;
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_INT(took, >=, REIN_SHELL_DRAIN_MAX_MS - 100);
    ASSERT_INT(took, <, REIN_SHELL_DRAIN_MAX_MS + 1000);
    ASSERT_CONTAINS(c.out.p, "tick\ntick\ntick\n");
    ASSERT_FALSE(test_pid_alive(pid_after(c.out.p, "bg ")));
    buf_free(&c.out);
}

/* A snapshot that reads stdin: it must see EOF at once (stdin is
 * /dev/null), never block nor read what rein's own stdin holds. */
static void snapshot_reading_stdin(const char *snap, const char *rcfile)
{
    char text[1024];
    snprintf(text, sizeof text,
             "IFS= read -r x; echo \"rc=$? x=$x\" > '%s'\n", rcfile);
    write_file(snap, text);
    /* Our stdin: a pipe holding a line, its writer kept open, so a
     * snapshot reading it would get "leak" (or block without it). */
    int p[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC) < 0 ? -errno : 0);
    ASSERT_EQ(write(p[1], "leak\n", 5), 5);
    ASSERT_TRUE(dup2(p[0], 0) == 0);
    close(p[0]);
}

TEST(shell_snapshot_is_sourced_with_stdin_on_dev_null)
{
    char snap[512], rcfile[512], buf[256];
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    snprintf(rcfile, sizeof rcfile, "%s/rc", test_tmpdir());
    snapshot_reading_stdin(snap, rcfile);
    rein_shell_opts_t so = {.snapshot_path = snap};
    struct col c = {0};
    rein_run_result_t res;

    rein_shell_run_opts_t o = {.command = "echo ran"};
    ASSERT_OK(xexec(&so, &o, &c, &res));
    ASSERT_STR(c.out.p, "ran\n");
    ASSERT_STR(read_file(rcfile, buf, sizeof buf), "rc=1 x=\n");

    unlink(rcfile);
    rein_shell_t *sh;
    ASSERT_OK(rein_shell_new(&so, &sh));
    ASSERT_STR(run_out(sh, &c, "echo ran", &res), "ran\n");
    ASSERT_STR(read_file(rcfile, buf, sizeof buf), "rc=1 x=\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

/* Everything ignores TERM: bash, a subshell and its sleep. */
#define TERM_PROOF_TREE                                                     \
    "trap '' TERM; (trap '' TERM; sleep 60 & echo \"gc $!\"; wait) & "      \
    "echo ready; wait"

static void core_exec_timeout_kills_term_proof_tree(void)
{
    struct col c = {0};
    rein_shell_run_opts_t o = {.command = TERM_PROOF_TREE,
                               .timeout_ms = 300};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    uint64_t took = test_now_ms() - t0;
    ASSERT_TRUE(res.timed_out);
    ASSERT_FALSE(res.cancelled);
    ASSERT_FALSE(res.has_exit_code);
    ASSERT_INT(took, >=, 300 + REIN_SHELL_GRACE_MS - 100);
    ASSERT_INT(took, <, 300 + REIN_SHELL_GRACE_MS + 3000);
    ASSERT_FALSE(test_pid_alive(pid_after(c.out.p, "gc ")));
    buf_free(&c.out);
}
TEST(shell_exec_timeout_kills_a_term_ignoring_tree)
{
    core_exec_timeout_kills_term_proof_tree();
}

TEST(shell_exec_cancel_token_raised_before)
{
    rein_cancel_t *tok;
    ASSERT_OK(rein_cancel_new(&tok));
    rein_cancel_trigger(tok);
    struct col c = {0};
    /* Nothing starts: not even the command's first line. */
    char mark[512], cmd[600];
    snprintf(mark, sizeof mark, "%s/ran", test_tmpdir());
    snprintf(cmd, sizeof cmd, "echo ran > '%s'; sleep 30", mark);
    rein_shell_run_opts_t o = {.command = cmd, .cancel = tok};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    ASSERT_TRUE(res.cancelled);
    ASSERT_FALSE(res.has_exit_code);
    ASSERT_INT(test_now_ms() - t0, <, REIN_SHELL_GRACE_MS);
    /* A persistent session runs nothing either, and is kept. */
    rein_shell_t *sh;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(run_out(sh, &c, "X=kept", &res), "");
    ASSERT_OK(xrun(sh, &o, &c, &res));
    ASSERT_TRUE(res.cancelled);
    ASSERT_STR(run_out(sh, &c, "echo $X", &res), "kept\n");
    rein_shell_free(sh);
    ASSERT_EQ(access(mark, F_OK), -1);
    rein_cancel_free(tok);
    buf_free(&c.out);
}

TEST(shell_missing_bash_is_init_error)
{
    shell_set_program("/nonexistent/bash");
    struct col c = {0};
    rein_shell_run_opts_t o = {.command = "true"};
    rein_run_result_t res;
    ASSERT_EQ(xexec(NULL, &o, &c, &res), REIN_ESHELL_INIT);
    rein_shell_t *sh;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_EQ(xrun(sh, &o, &c, &res), REIN_ESHELL_INIT);
    shell_set_program(NULL);
    ASSERT_OK(xrun(sh, &o, &c, &res)); /* and it recovers */
    ASSERT_EQ(res.exit_code, 0);
    rein_shell_free(sh);
    ASSERT_STR(rein_strerror(REIN_ESHELL_INIT), "Failed to initialize shell");
    buf_free(&c.out);
}

/* ---------------------------------------------------------- persistent */

static void core_session_state_persists(void)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    char cmd[1024], want[1024];
    ASSERT_OK(rein_shell_new(NULL, &sh));
    snprintf(cmd, sizeof cmd,
             "cd '%s'; export PV=exported; PLAIN=plain; "
             "pf() { echo \"pf $1\"; }",
             test_tmpdir());
    run_out(sh, &c, cmd, &res);
    ASSERT_EQ(res.exit_code, 0);
    const char *out = run_out(sh, &c,
                              "pwd; echo \"$PV $PLAIN\"; pf x; "
                              "bash -c 'echo \"child ${PV-} ${PLAIN-none}\"'",
                              &res);
    snprintf(want, sizeof want, "%s\nexported plain\npf x\nchild exported none\n",
             test_tmpdir());
    ASSERT_STR(out, want);
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_keeps_cwd_exports_and_functions)
{
    core_session_state_persists();
}

static void core_session_command_env_popped(void)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    run_out(sh, &c, "export KEEP=old; PLAIN=p", &res);
    const char *env[] = {"KEEP=new", "NEWV=x y", "PLAIN=q", NULL};
    rein_shell_run_opts_t o = {
        .command = "echo \"$KEEP|$NEWV|$PLAIN\"; "
                   "env | grep -E '^(KEEP|NEWV|PLAIN)=' | sort",
        .env = env};
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &o, &c, &res));
    ASSERT_STR(c.out.p, "new|x y|q\nKEEP=new\nNEWV=x y\nPLAIN=q\n");
    const char *out = run_out(
        sh, &c,
        "echo \"$KEEP|${NEWV-unset}|$PLAIN\"; "
        "env | grep -E '^(KEEP|NEWV|PLAIN)=' | sort",
        &res);
    ASSERT_STR(out, "old|unset|p\nKEEP=old\n");
    /* Names bash cannot export, or the driver's own, are refused. */
    const char *bad[] = {"A-B=1", NULL};
    o.env = bad;
    ASSERT_EQ(xrun(sh, &o, &c, &res), REIN_EENV);
    const char *priv[] = {"__rein_cmd=1", NULL};
    o.env = priv;
    ASSERT_EQ(xrun(sh, &o, &c, &res), REIN_EENV);
    const char *set_by_driver[] = {"POSIXLY_CORRECT=1", "FUNCNEST=1"};
    for (size_t i = 0; i < 2; i++) {
        const char *one[] = {set_by_driver[i], NULL};
        o.env = one;
        ASSERT_EQ(xrun(sh, &o, &c, &res), REIN_EENV);
    }
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_command_env_is_popped_after_the_command)
{
    core_session_command_env_popped();
}

TEST(shell_session_env_snapshot_and_cwd_option)
{
    char snap[512], count[512], cmd[1024];
    snprintf(count, sizeof count, "%s/count", test_tmpdir());
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "echo once >> '%s'; snapfn() { echo \"snap $SESS\"; }; "
             "echo noise\n", count);
    write_file(snap, cmd);
    const char *senv[] = {"SESS=s1", NULL};
    rein_shell_opts_t so = {.session_env = senv, .snapshot_path = snap};
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(&so, &sh));
    ASSERT_STR(run_out(sh, &c, "snapfn", &res), "snap s1\n");
    ASSERT_STR(run_out(sh, &c, "snapfn; echo \"$# ${1-}\"", &res),
               "snap s1\n0 \n");
    snprintf(cmd, sizeof cmd, "cat '%s'", count);
    ASSERT_STR(run_out(sh, &c, cmd, &res), "once\n"); /* sourced once */

    /* cwd option: applied and kept; a bad one fails and drops the session
     * (an errored run), so the next run has a fresh bash. */
    run_out(sh, &c, "KEPT=yes", &res);
    rein_shell_run_opts_t o = {.command = "pwd", .cwd = test_tmpdir()};
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &o, &c, &res));
    snprintf(cmd, sizeof cmd, "%s\n", test_tmpdir());
    ASSERT_STR(c.out.p, cmd);
    rein_shell_run_opts_t bad = {.command = "echo ran", .cwd = "/nonexistent"};
    buf_reset(&c.out);
    ASSERT_EQ(xrun(sh, &bad, &c, &res), REIN_ECWD);
    ASSERT_TRUE(c.out.p == NULL || !strstr(c.out.p, "ran"));
    ASSERT_STR(run_out(sh, &c, "echo ${KEPT-gone}", &res), "gone\n");
    ASSERT_EQ(res.exit_code, 0);
    rein_shell_free(sh);

    /* A snapshot that cannot be sourced: no session, every time. */
    rein_shell_opts_t missing = {.snapshot_path = "/nonexistent/snap.sh"};
    ASSERT_OK(rein_shell_new(&missing, &sh));
    rein_shell_run_opts_t t = {.command = "true"};
    ASSERT_EQ(xrun(sh, &t, &c, &res), REIN_ESNAPSHOT);
    ASSERT_EQ(xrun(sh, &t, &c, &res), REIN_ESNAPSHOT);
    rein_shell_free(sh);
    const char *malformed[] = {"=x", NULL};
    rein_shell_opts_t bad_env = {.session_env = malformed};
    ASSERT_EQ(rein_shell_new(&bad_env, &sh), REIN_EENV);
    buf_free(&c.out);
}

static void core_session_exit_codes_keep_or_drop(void)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    run_out(sh, &c, "X=5; false", &res);
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 1);
    ASSERT_STR(run_out(sh, &c, "echo $X; (exit 9)", &res), "5\n");
    ASSERT_EQ(res.exit_code, 9);
    ASSERT_STR(run_out(sh, &c, "echo $X", &res), "5\n"); /* kept */

    ASSERT_STR(run_out(sh, &c, "Y=1; echo bye; exit 7", &res), "bye\n");
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 7);
    ASSERT_STR(run_out(sh, &c, "echo ${X-gone} ${Y-gone}", &res),
               "gone gone\n"); /* a fresh session */

    /* Loop control flow at the top level ends the session too. */
    run_out(sh, &c, "Z=1; break", &res);
    ASSERT_STR(run_out(sh, &c, "echo ${Z-gone}", &res), "gone\n");
    run_out(sh, &c, "Z=1; continue", &res);
    ASSERT_STR(run_out(sh, &c, "echo ${Z-gone}", &res), "gone\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_nonzero_exit_keeps_it_exit_drops_it)
{
    core_session_exit_codes_keep_or_drop();
}

static void core_session_background_drain(void)
{
    /* What a job prints just after the command belongs to the same run:
     * the run drains the command's channel until every writer is gone.
     * A subshell, and an exec'd program. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(run_out(sh, &c, "(sleep 0.1; echo late) & echo now", &res),
               "now\nlate\n");
    ASSERT_STR(run_out(sh, &c, "sh -c 'sleep 0.1; echo late2' & echo now2",
                       &res),
               "now2\nlate2\n");
    ASSERT_STR(run_out(sh, &c, "echo next", &res), "next\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_drains_background_output_in_the_same_run)
{
    core_session_background_drain();
}

static void core_session_exit_keeps_late_output(void)
{
    /* `exit` in the command: the supervisor waits for the command's
     * channel to drain before it ends the job (an exec'd job, which holds
     * no copy of bash's own pipe). */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(run_out(sh, &c, "V=1; sh -c 'sleep 0.1; echo late' & exit 3",
                       &res),
               "late\n");
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 3);
    ASSERT_STR(run_out(sh, &c, "echo ${V-gone}", &res), "gone\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_exit_keeps_late_output_of_jobs)
{
    core_session_exit_keeps_late_output();
}

TEST(shell_session_plain_command_does_not_wait_the_idle_window)
{
    /* EOF of the command's channel comes as soon as its writers are
     * gone: no idle window for a command that leaves nothing behind, nor
     * for a job that does not hold the channel.  The fastest of a few runs
     * (a loaded machine may stall any one of them), against half the idle
     * window: well clear of it, and of a slow machine's scheduling. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    const char *cmds[] = {"true", "echo hi; false",
                          "sleep 30 >/dev/null 2>&1 &"};
    ASSERT_OK(rein_shell_new(NULL, &sh));
    run_out(sh, &c, "true", &res); /* starts bash */
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++) {
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < 5; i++) {
            uint64_t t0 = test_now_ms();
            run_out(sh, &c, cmds[k], &res);
            uint64_t took = test_now_ms() - t0;
            if (took < best)
                best = took;
        }
        ASSERT_INT(best, <, REIN_SHELL_DRAIN_IDLE_MS / 2);
    }
    ASSERT_STR(c.out.p, "");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_drain_is_bounded_and_the_job_lives_on)
{
    /* A job that never pauses for the idle window: the run returns after
     * REIN_SHELL_DRAIN_MAX_MS; the job keeps its channel (no SIGPIPE, no
     * loss) and what it prints later arrives with later runs. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    char stop[512];
    snprintf(stop, sizeof stop, "%s/stop", test_tmpdir());
    ASSERT_OK(rein_shell_new(NULL, &sh));
    rein_shell_run_opts_t o = {.command = TICKER, .cwd = test_tmpdir()};
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xrun(sh, &o, &c, &res));
    const char *out = c.out.p;
    uint64_t took = test_now_ms() - t0;
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_INT(took, >=, REIN_SHELL_DRAIN_MAX_MS - 100);
    ASSERT_INT(took, <, REIN_SHELL_DRAIN_MAX_MS + 1000);
    ASSERT_CONTAINS(out, "tick\ntick\ntick\n");
    pid_t bg = pid_after(out, "bg ");
    ASSERT_TRUE(test_pid_alive(bg));
    ASSERT_EQ(count_channels(), 1);

    /* The next run ends at its own status: the lingering channel does not
     * hold it, but what the job printed meanwhile is delivered to it. */
    t0 = test_now_ms();
    out = run_out(sh, &c, "sleep 0.3; echo mine", &res);
    ASSERT_INT(test_now_ms() - t0, <, REIN_SHELL_DRAIN_MAX_MS);
    ASSERT_CONTAINS(out, "tick\n");
    ASSERT_CONTAINS(out, "mine\n");
    ASSERT_TRUE(test_pid_alive(bg));

    /* Once the job is gone (with its sleep), its channel's EOF closes it. */
    write_file(stop, "");
    ASSERT_TRUE(test_wait_gone(bg));
    run_out(sh, &c, "true", &res);
    ASSERT_EQ(count_channels(), 0);
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST_T(shell_session_lingering_channels_are_bounded, 60)
{
    /* SHELL_LINGER_MAX + 1 runs each leave a job holding its channel,
     * waiting on a FIFO of ours before it prints.  Up to the bound every
     * channel is kept; past it the oldest is closed: its job's write
     * fails (EPIPE; it ignores SIGPIPE to tell us), every other job's
     * output arrives with the next run. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    const char *dir = test_tmpdir();
    char path[512], cmd[1024], buf[64];
    pid_t bg[SHELL_LINGER_MAX + 1];
    ASSERT_OK(rein_shell_new(NULL, &sh));
    for (int i = 0; i <= SHELL_LINGER_MAX; i++) {
        snprintf(path, sizeof path, "%s/go%d", dir, i);
        ASSERT_OK(mkfifo(path, 0600) < 0 ? -errno : 0);
        snprintf(path, sizeof path, "%s/ack%d", dir, i);
        ASSERT_OK(mkfifo(path, 0600) < 0 ? -errno : 0);
        snprintf(cmd, sizeof cmd,
                 "(trap '' PIPE; read -r _ < '%s/go%d'; echo \"late %d\"; "
                 "echo \"rc=$?\" > '%s/ack%d') & echo \"bg $!\"",
                 dir, i, i, dir, i);
        bg[i] = pid_after(run_out(sh, &c, cmd, &res), "bg ");
        ASSERT_EQ(count_channels(), i < SHELL_LINGER_MAX ? i + 1
                                                          : SHELL_LINGER_MAX);
    }
    for (int i = 0; i <= SHELL_LINGER_MAX; i++) {
        snprintf(path, sizeof path, "%s/go%d", dir, i);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, "\n", 1), 1);
        close(fd);
        snprintf(path, sizeof path, "%s/ack%d", dir, i);
        ASSERT_STR(read_file(path, buf, sizeof buf),
                   i == 0 ? "rc=1\n" : "rc=0\n");
    }
    const char *out = run_out(sh, &c, "echo end", &res);
    ASSERT_CONTAINS(out, "end\n");
    ASSERT_TRUE(strstr(out, "late 0") == NULL);
    for (int i = 1; i <= SHELL_LINGER_MAX; i++) {
        snprintf(buf, sizeof buf, "late %d\n", i);
        ASSERT_CONTAINS(out, buf);
    }
    /* The jobs are done; their channels close at EOF. */
    for (int i = 0; i <= SHELL_LINGER_MAX; i++)
        ASSERT_TRUE(test_wait_gone(bg[i]));
    run_out(sh, &c, "true", &res);
    ASSERT_EQ(count_channels(), 0);
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_channels_live_in_a_private_directory)
{
    /* The FIFOs sit in a 0700 directory of the session's own, each
     * 0600 and unlinked once its run is over; free removes the
     * directory.  (The driver's variable names the FIFO, so a command
     * can look: element 1 of __rein_out, which is empty when no step ran.) */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    struct stat st;
    char path[512];
    ASSERT_OK(rein_shell_new(NULL, &sh));
    const char *out = run_out(sh, &c, "echo \"${__rein_out[1]}\"", &res);
    ASSERT_CONTAINS(out, "/rein-shell-");
    snprintf(path, sizeof path, "%s", out);
    path[strcspn(path, "\n")] = '\0';
    ASSERT_STR(run_out(sh, &c, "stat -c %a \"${__rein_out[1]}\"", &res),
               "600\n");
    ASSERT_TRUE(stat(path, &st) < 0 && errno == ENOENT);
    char *dir = dirname(path);
    ASSERT_OK(stat(dir, &st) < 0 ? -errno : 0);
    ASSERT_EQ(st.st_mode & 07777, 0700);
    ASSERT_EQ(st.st_uid, getuid());
    rein_shell_free(sh);
    ASSERT_TRUE(stat(dir, &st) < 0 && errno == ENOENT);
    buf_free(&c.out);
}

struct canceller {
    int fd;
    rein_cancel_t *tok;
};

static void *cancel_on_signal(void *arg)
{
    struct canceller *k = arg;
    char ch;
    if (read(k->fd, &ch, 1) == 1) /* the callback saw "ready" */
        rein_cancel_trigger(k->tok);
    return NULL;
}

/* Checks a killed run: elapsed within grace .. grace + 3 s, the grandchild
 * gone, the session dropped. */
static void check_killed(rein_shell_t *sh, struct col *c, uint64_t took)
{
    ASSERT_INT(took, >=, REIN_SHELL_GRACE_MS - 100);
    ASSERT_INT(took, <, REIN_SHELL_GRACE_MS + 3000);
    ASSERT_FALSE(test_pid_alive(pid_after(c->out.p, "gc ")));
    rein_run_result_t res;
    ASSERT_STR(run_out(sh, c, "echo ${Z-gone}", &res), "gone\n");
}

static void core_session_cancel_from_thread(void)
{
    rein_shell_t *sh;
    rein_cancel_t *tok;
    struct col c = {0};
    int p[2];
    pthread_t th;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_OK(rein_cancel_new(&tok));
    ASSERT_OK(pipe2(p, O_CLOEXEC) < 0 ? -errno : 0);
    struct canceller k = {p[0], tok};
    ASSERT_OK(pthread_create(&th, NULL, cancel_on_signal, &k));
    c.when = "ready";
    c.action = 3;
    c.notify_fd = p[1];
    rein_shell_run_opts_t o = {.command = "Z=1; " TERM_PROOF_TREE,
                               .cancel = tok};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xrun(sh, &o, &c, &res));
    uint64_t took = test_now_ms() - t0;
    pthread_join(th, NULL);
    ASSERT_TRUE(res.cancelled);
    ASSERT_FALSE(res.timed_out);
    ASSERT_FALSE(res.has_exit_code);
    c.when = NULL;
    check_killed(sh, &c, took);
    close(p[0]);
    close(p[1]);
    rein_cancel_free(tok);
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_cancel_token_from_another_thread)
{
    core_session_cancel_from_thread();
}

static void core_session_abort_from_callback(void)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_OK(rein_shell_abort(sh)); /* idle: fine */
    c.when = "ready";
    c.action = 1;
    rein_shell_run_opts_t o = {.command = "Z=1; " TERM_PROOF_TREE};
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xrun(sh, &o, &c, &res));
    uint64_t took = test_now_ms() - t0;
    ASSERT_OK(c.action_rc);
    ASSERT_TRUE(res.cancelled);
    ASSERT_FALSE(res.has_exit_code);
    c.when = NULL;
    check_killed(sh, &c, took);
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_abort_from_the_callback)
{
    core_session_abort_from_callback();
}

static void core_session_timeout(void)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    rein_shell_run_opts_t o = {.command = "Z=1; " TERM_PROOF_TREE,
                               .timeout_ms = 200};
    uint64_t t0 = test_now_ms();
    ASSERT_OK(xrun(sh, &o, &c, &res));
    uint64_t took = test_now_ms() - t0;
    ASSERT_TRUE(res.timed_out);
    ASSERT_FALSE(res.cancelled);
    ASSERT_FALSE(res.has_exit_code);
    check_killed(sh, &c, took - 200);

    /* A TERM-abiding command ends well before the grace. */
    rein_shell_run_opts_t quick = {.command = "sleep 30", .timeout_ms = 100};
    t0 = test_now_ms();
    ASSERT_OK(xrun(sh, &quick, &c, &res));
    ASSERT_TRUE(res.timed_out);
    ASSERT_INT(test_now_ms() - t0, <, REIN_SHELL_GRACE_MS);
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_timeout_drops_it)
{
    core_session_timeout();
}

TEST(shell_session_busy_and_null)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    c.when = "x";
    c.action = 2;
    rein_shell_run_opts_t o = {.command = "echo x"};
    ASSERT_OK(xrun(sh, &o, &c, &res));
    ASSERT_EQ(c.action_rc, REIN_ESHELL_BUSY);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_EQ(rein_shell_run(sh, NULL, &res), -EINVAL);
    ASSERT_EQ(rein_shell_abort(NULL), -EINVAL);
    rein_shell_free(sh);
    rein_shell_free(NULL);
    buf_free(&c.out);
}

static void core_session_free_leaves_nothing(void)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    /* A background job outlives its run inside a live session ... */
    const char *out = run_out(
        sh, &c, "sleep 60 >/dev/null 2>&1 & echo \"bg $!\"; echo \"sh $$\"",
        &res);
    pid_t bg = pid_after(out, "bg "), bash = pid_after(out, "sh ");
    ASSERT_TRUE(test_pid_alive(bg));
    ASSERT_STR(run_out(sh, &c, "echo still", &res), "still\n");
    ASSERT_TRUE(test_pid_alive(bg));
    /* ... and goes with the session. */
    rein_shell_free(sh);
    ASSERT_FALSE(test_pid_alive(bg));
    ASSERT_FALSE(test_pid_alive(bash));
    buf_free(&c.out);
}
TEST(shell_session_free_terminates_it)
{
    core_session_free_leaves_nothing();
}

static void core_session_bash_killed(void)
{
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    /* Killed from outside mid-run (by its own command, which is outside
     * the driver's knowledge all the same). */
    rein_shell_run_opts_t o = {.command = "W=1; kill -9 $$; sleep 30"};
    buf_reset(&c.out);
    ASSERT_EQ(xrun(sh, &o, &c, &res), REIN_ESHELL_EXEC);
    ASSERT_STR(run_out(sh, &c, "echo ${W-gone}", &res), "gone\n");

    /* Killed between runs: the next run says so, the one after is fresh. */
    const char *out = run_out(sh, &c, "W=1; echo \"sh $$\"", &res);
    pid_t bash = pid_after(out, "sh ");
    kill(bash, SIGKILL);
    rein_shell_run_opts_t t = {.command = "echo ${W-gone}"};
    /* Synchronise on the death, not on time: until it is a zombie. */
    ASSERT_TRUE(test_wait_gone(bash));
    ASSERT_EQ(xrun(sh, &t, &c, &res), REIN_ESHELL_EXEC);
    ASSERT_STR(run_out(sh, &c, "echo ${W-gone}", &res), "gone\n");
    ASSERT_STR(rein_strerror(REIN_ESHELL_EXEC), "Shell execution failed");
    rein_shell_free(sh);
    buf_free(&c.out);
}
TEST(shell_session_bash_killed_is_exec_error)
{
    core_session_bash_killed();
}

TEST(shell_session_hostile_settings_do_not_break_the_driver)
{
    /* set -eu, an xtrace, an IFS, functions named like the builtins the
     * driver uses, a command-scoped env: the driver neither trips nor
     * shows up in the output. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    run_out(sh, &c,
            "set -u; IFS=:; cd() { echo fake-cd; }; read() { echo fake; }; "
            "printf() { echo fake; }; export() { echo fake; }; "
            "exec 3>&1 4>&2",
            &res);
    ASSERT_EQ(res.exit_code, 0);
    const char *env[] = {"CV=1", NULL};
    rein_shell_run_opts_t o = {.command = "echo \"v=$CV\"", .env = env,
                               .cwd = "/"};
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &o, &c, &res));
    ASSERT_STR(c.out.p, "v=1\n");
    run_out(sh, &c, "set -x", &res);
    const char *out = run_out(sh, &c, "echo hi", &res);
    ASSERT_CONTAINS(out, "+ echo hi\nhi\n");
    ASSERT_TRUE(strstr(out, "__rein_") == NULL);
    run_out(sh, &c, "set +x", &res);
    /* A command-scoped variable that cannot be set (read-only) is left
     * alone: `|| :` used to call a function named `:`. */
    run_out(sh, &c, ":() { exit 9; }; readonly RO=1", &res);
    const char *ro[] = {"RO=2", NULL};
    rein_shell_run_opts_t r = {.command = "echo \"ro=$RO\"", .env = ro};
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &r, &c, &res));
    ASSERT_STR(c.out.p, "ro=1\n");
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_STR(run_out(sh, &c, "echo \"ro=$RO\"", &res), "ro=1\n");
    ASSERT_STR(run_out(sh, &c, "set -e; true; echo ${CV-unset}", &res),
               "unset\n");
    /* Under set -e a failing command ends the shell, as bash would. */
    run_out(sh, &c, "KEPT=1; false", &res);
    ASSERT_EQ(res.exit_code, 1);
    ASSERT_STR(run_out(sh, &c, "echo ${KEPT-gone}", &res), "gone\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

/* Runs cmd in sh, checks its exit code, and returns what `echo $?` prints
 * in the next run. */
static const char *status_after(rein_shell_t *sh, struct col *c,
                                const char *cmd, int code)
{
    rein_run_result_t res;
    run_out(sh, c, cmd, &res);
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, code);
    const char *out = run_out(sh, c, "echo $?", &res);
    ASSERT_EQ(res.exit_code, 0);
    return out;
}

TEST(shell_session_carries_the_exit_status)
{
    /* `$?` at the start of a run is the previous run's status, as in a
     * terminal: 0..255, statuses of signals included.  It used to be 0
     * always. */
    static const struct {
        const char *cmd;
        int code;
        const char *want;
    } cases[] = {
        {"true", 0, "0\n"},
        {"false", 1, "1\n"},
        {"ls /nonexistent-rein-dir 2>/dev/null", 2, "2\n"},
        {"rein-no-such-command 2>/dev/null", 127, "127\n"},
        {"bash -c 'kill -INT $$'", 130, "130\n"},
        {"bash -c 'kill -KILL $$'", 137, "137\n"},
        {"(exit 255)", 255, "255\n"},
        {"false; true", 0, "0\n"},
    };
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(run_out(sh, &c, "echo $?", &res), "0\n"); /* first run */
    /* What sets it is gone before the command runs. */
    ASSERT_STR(run_out(sh, &c, "declare -F | grep -c __rein_", &res), "0\n");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        ASSERT_STR(status_after(sh, &c, cases[i].cmd, cases[i].code),
                   cases[i].want);

    /* The usual tests of it, and a cwd and command-scoped variables
     * (applied before the command) leave it alone. */
    run_out(sh, &c, "false", &res);
    ASSERT_STR(run_out(sh, &c, "[ $? -eq 0 ] && echo ok || echo failed",
                       &res),
               "failed\n");
    ASSERT_STR(run_out(sh, &c, "[ $? -eq 0 ] && echo ok || echo failed",
                       &res),
               "ok\n");
    run_out(sh, &c, "(exit 42)", &res);
    const char *env[] = {"CV=1", NULL};
    rein_shell_run_opts_t o = {.command = "echo \"$? $CV\"", .env = env,
                               .cwd = "/"};
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &o, &c, &res));
    ASSERT_STR(c.out.p, "42 1\n");

    /* PIPESTATUS holds that one status, not the stages of a pipeline. */
    run_out(sh, &c, "true | (exit 3)", &res);
    ASSERT_EQ(res.exit_code, 3);
    ASSERT_STR(run_out(sh, &c, "echo \"$? ${PIPESTATUS[*]}\"", &res),
               "3 3\n");
    run_out(sh, &c, "(exit 4) | true", &res);
    ASSERT_STR(run_out(sh, &c, "echo \"$? ${PIPESTATUS[*]}\"", &res),
               "0 0\n");

    /* A run that drops the session (exit, a cwd that cannot be entered)
     * leaves a fresh bash, at 0. */
    ASSERT_STR(status_after(sh, &c, "exit 3", 3), "0\n");
    run_out(sh, &c, "false", &res);
    rein_shell_run_opts_t bad = {.command = "true", .cwd = "/nonexistent"};
    ASSERT_EQ(xrun(sh, &bad, &c, &res), REIN_ECWD);
    ASSERT_STR(run_out(sh, &c, "echo $?", &res), "0\n");
    rein_shell_free(sh);

    /* A snapshot's last status is not a command's: the first run sees 0. */
    char snap[512];
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    write_file(snap, "snapfn() { :; }\nfalse\n");
    rein_shell_opts_t so = {.snapshot_path = snap};
    ASSERT_OK(rein_shell_new(&so, &sh));
    ASSERT_STR(run_out(sh, &c, "echo $?", &res), "0\n");
    ASSERT_STR(status_after(sh, &c, "snapfn; false", 1), "1\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_carries_the_status_through_hostile_settings)
{
    /* What sets `$?` for the next command neither fails under set -e or
     * set -u, nor runs an ERR trap, nor calls the user's functions, nor
     * shows in a trace, nor prints through a RETURN trap. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    run_out(sh, &c,
            "set -u; n=0; trap 'n=$((n + 1))' ERR; "
            "return() { echo fake-return; }; unset() { echo fake-unset; }; "
            ":() { exit 9; }; shopt -s expand_aliases; "
            "alias __rein_status='exit 8'",
            &res);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_STR(status_after(sh, &c, "true", 0), "0\n");
    /* The ERR trap ran for `false`, once, as in a terminal: not for the
     * command as a whole, nor for the next run's start.  It used to run
     * twice per failure. */
    ASSERT_STR(status_after(sh, &c, "false", 1), "1\n");
    ASSERT_STR(run_out(sh, &c, "false", &res), "");
    ASSERT_STR(run_out(sh, &c, "echo \"$? $n\"", &res), "1 2\n");
    run_out(sh, &c, "trap 'echo ERR' ERR", &res);
    ASSERT_STR(run_out(sh, &c, "false", &res), "ERR\n");
    ASSERT_STR(run_out(sh, &c, "echo $?", &res), "1\n");
    run_out(sh, &c, "trap - ERR; set -T; trap 'echo RET' RETURN", &res);
    ASSERT_STR(status_after(sh, &c, "(exit 5)", 5), "5\n");
    run_out(sh, &c, "trap - RETURN; set +T", &res);
    run_out(sh, &c, "builtin unset -f $(compgen -A function)", &res);
    ASSERT_STR(status_after(sh, &c, "(exit 6)", 6), "6\n");

    /* A trace shows the command and nothing of the driver's, not even
     * the eval that runs it (its lines are one level deeper, as under any
     * eval). */
    run_out(sh, &c, "set -x", &res);
    ASSERT_STR(run_out(sh, &c, "false", &res), "++ false\n");
    ASSERT_STR(run_out(sh, &c, "echo $?", &res), "++ echo 1\n1\n");
    run_out(sh, &c, "set +x", &res);

    /* Under set -e a run that ends non-zero ends the shell, as bash
     * would; the next run is a fresh session. */
    run_out(sh, &c, "set -e; X=1", &res);
    ASSERT_STR(status_after(sh, &c, "false", 1), "0\n");
    ASSERT_STR(run_out(sh, &c, "echo ${X-gone}", &res), "gone\n");
    /* set -e on when the status to carry is not 0: a DEBUG trap switches
     * it on (once) after the failure, on the driver's next line. */
    run_out(sh, &c, "X=1", &res);
    ASSERT_STR(run_out(sh, &c,
                       "trap '(( $? == 0 )) || { set -e; trap - DEBUG; }' "
                       "DEBUG; false && true",
                       &res),
               "");
    ASSERT_EQ(res.exit_code, 1);
    ASSERT_STR(run_out(sh, &c,
                       "echo \"$? ${X-gone}\"; [[ $- == *e* ]] && echo errexit",
                       &res),
               "1 1\nerrexit\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_cwd_is_taken_as_a_path)
{
    /* cwd "-" is a directory named "-" (cd would take $OLDPWD), a bare name
     * is not looked up in the session's CDPATH, and "" is REIN_ECWD, as
     * for the one-shot's chdir. */
    char base[512], cmd[4096];
    snprintf(base, sizeof base, "%s/cw", test_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/-' '%s/sub' '%s/alt/sub' && "
             "cd '%s' && CDPATH='%s/alt'", base, base, base, base, base);
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(run_out(sh, &c, cmd, &res), "");
    rein_shell_run_opts_t o = {.command = "pwd", .cwd = "sub"};
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &o, &c, &res));
    snprintf(cmd, sizeof cmd, "%s/sub\n", base);
    ASSERT_STR(c.out.p, cmd);
    run_out(sh, &c, "cd ..", &res); /* $OLDPWD is sub now */
    rein_shell_run_opts_t dash = {.command = "pwd", .cwd = "-"};
    buf_reset(&c.out);
    ASSERT_OK(xrun(sh, &dash, &c, &res));
    snprintf(cmd, sizeof cmd, "%s/-\n", base);
    ASSERT_STR(c.out.p, cmd);
    rein_shell_run_opts_t none = {.command = "pwd", .cwd = ""};
    ASSERT_EQ(xrun(sh, &none, &c, &res), REIN_ECWD);
    ASSERT_EQ(xexec(NULL, &none, &c, &res), REIN_ECWD);
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_loop_control_past_the_command_drops_it)
{
    /* break N / continue N reaching past the command's own loops: bash
     * would clamp them; here they leave the driver's loop, so the session
     * is dropped (as for break at the top level) and the call returns.
     * continue 2 used to land on the driver's next read and hang. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    const char *cmds[] = {
        "Z=1; continue 2; echo after",
        "Z=1; for i in 1; do continue 3; done; echo after",
        "Z=1; for i in 1 2; do for j in 1 2; do break 5; done; done; "
        "echo after",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        ASSERT_STR(run_out(sh, &c, cmds[i], &res), "");
        ASSERT_TRUE(res.has_exit_code);
        ASSERT_STR(run_out(sh, &c, "echo ${Z-gone}", &res), "gone\n");
    }
    /* Loops of the command's own are the command's business. */
    ASSERT_STR(run_out(sh, &c,
                       "Z=1; for i in 1 2; do for j in 1; do continue 2; "
                       "done; done; echo after",
                       &res),
               "after\n");
    ASSERT_STR(run_out(sh, &c, "echo ${Z-gone}", &res), "1\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_set_n_ends_it_instead_of_spinning)
{
    /* Under set -n bash executes nothing more, the driver's lines
     * included; the session ends (with the status bash last had: that of
     * the eval, 0, as bash read the rest of the command without running
     * it) and the next run gets a fresh one. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(run_out(sh, &c, "Z=1; set -n; echo hidden", &res), "");
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_STR(run_out(sh, &c, "echo ${Z-gone}", &res), "gone\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_snapshot_that_exits_is_a_snapshot_error)
{
    /* A snapshot that ends the shell (exit 0 included) sourced no session:
     * REIN_ESNAPSHOT every time, and the command never runs.  It used to
     * come back as the command's success. */
    const char *bodies[] = {"exit 0\n", "exit 5\n", "set -e; false\n",
                            "echo ${UNSET_VAR?}\n"};
    char snap[512], mark[512], cmd[1024];
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    snprintf(mark, sizeof mark, "%s/ran", test_tmpdir());
    snprintf(cmd, sizeof cmd, "echo ran > '%s'", mark);
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        write_file(snap, bodies[i]);
        rein_shell_opts_t so = {.snapshot_path = snap};
        rein_shell_t *sh;
        struct col c = {0};
        rein_run_result_t res;
        ASSERT_OK(rein_shell_new(&so, &sh));
        rein_shell_run_opts_t o = {.command = cmd};
        ASSERT_EQ(xrun(sh, &o, &c, &res), REIN_ESNAPSHOT);
        ASSERT_EQ(xrun(sh, &o, &c, &res), REIN_ESNAPSHOT);
        rein_shell_free(sh);
        ASSERT_EQ(xexec(&so, &o, &c, &res), REIN_ESNAPSHOT);
        ASSERT_TRUE(access(mark, F_OK) != 0);
        buf_free(&c.out);
    }
}

TEST(shell_session_tmout_does_not_end_it)
{
    /* bash's read takes TMOUT as its default timeout; the driver's reads
     * wait for the next command however long it takes.  The host's TMOUT
     * (hardened hosts export one) is not passed on at all, nor is the
     * session env's (the skip-list); one a command sets, even read-only,
     * no longer ends the session when it runs out. */
    ASSERT_OK(setenv("TMOUT", "1", 1)); /* this test's own process */
    struct col c = {0};
    rein_run_result_t res;
    rein_shell_run_opts_t o = {.command = "echo ${TMOUT-unset}"};
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    ASSERT_STR(c.out.p, "unset\n");

    rein_shell_t *sh;
    const char *senv[] = {"TMOUT=1", NULL};
    rein_shell_opts_t so = {.session_env = senv};
    ASSERT_OK(rein_shell_new(&so, &sh));
    ASSERT_STR(run_out(sh, &c, "X=1; readonly TMOUT=1", &res), "");
    /* The point of the test is time passing with nothing to do: wait out
     * the TMOUT the session has. */
    usleep(1300 * 1000);
    ASSERT_STR(run_out(sh, &c, "echo X=$X TMOUT=$TMOUT", &res),
               "X=1 TMOUT=1\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_allexport_keeps_the_driver_out_of_the_environment)
{
    /* With set -a every assignment is exported: the driver's own must not
     * be (the command text, the FIFO's path), the user's still are. */
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    run_out(sh, &c, "set -a", &res);
    const char *env[] = {"CV=1", NULL};
    rein_shell_run_opts_t o = {.command = "env | grep -c ^__rein_", .env = env,
                               .cwd = "/"};
    buf_reset(&c.out);
    xrun(sh, &o, &c, &res);
    ASSERT_STR(c.out.p, "0\n");
    ASSERT_STR(run_out(sh, &c, "Y=2; env | grep ^Y=", &res), "Y=2\n");
    ASSERT_STR(run_out(sh, &c, "env | grep -c ^__rein_", &res), "0\n");
    ASSERT_STR(run_out(sh, &c, "set +a; Z=3; env | grep -c ^Z=", &res),
               "0\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_snapshot_set_x_and_set_a_apply_to_commands_only)
{
    /* A snapshot's set -x and set -a are the user's: they apply to the
     * commands, as after a command that says them.  The driver's lines
     * used to be traced into the first run's output, and its variables
     * assigned before that run (the command text among them) stayed in
     * every child's environment. */
    char snap[512];
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    write_file(snap, "set -x\nset -a\nSNAPV=1\n");
    rein_shell_opts_t so = {.snapshot_path = snap};
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(&so, &sh));
    ASSERT_STR(run_out(sh, &c, "echo hi", &res), "++ echo hi\nhi\n");
    run_out(sh, &c, "set +x", &res);
    ASSERT_STR(run_out(sh, &c, "env | grep -c ^__rein_", &res), "0\n");
    ASSERT_STR(run_out(sh, &c, "Y=2; env | grep -E '^(SNAPV|Y)=' | sort",
                       &res),
               "SNAPV=1\nY=2\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

TEST(shell_session_survives_its_fifo_directory_being_removed)
{
    /* A command that cleans $TMPDIR takes the session's private directory
     * with it; the next run makes another and the session goes on. */
    char tmp[512], cmd[1024];
    snprintf(tmp, sizeof tmp, "%s/tmp", test_tmpdir());
    ASSERT_OK(mkdir(tmp, 0700));
    ASSERT_OK(setenv("TMPDIR", tmp, 1));
    rein_shell_t *sh;
    struct col c = {0};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    snprintf(cmd, sizeof cmd, "X=5; rm -rf '%s'/rein-shell-*", tmp);
    ASSERT_STR(run_out(sh, &c, cmd, &res), "");
    ASSERT_STR(run_out(sh, &c, "echo X=$X", &res), "X=5\n");
    ASSERT_STR(run_out(sh, &c, "echo again $X", &res), "again 5\n");
    rein_shell_free(sh);
    buf_free(&c.out);
}

/* A command of exactly len bytes: first, then a heredoc of 'x' lines whose
 * bytes wc counts; *body gets that count. */
#define LONG_HEREDOC "wc -c <<'EOF'\n"
#define LONG_END "\nEOF\n"
static char *long_command(const char *first, size_t len, size_t *body)
{
    size_t f = strlen(first), h = sizeof LONG_HEREDOC - 1;
    size_t t = sizeof LONG_END - 1;
    char *cmd = malloc(len + 1);
    ASSERT_TRUE(cmd != NULL);
    memcpy(cmd, first, f);
    memcpy(cmd + f, LONG_HEREDOC, h);
    for (size_t i = f + h; i < len - t; i++)
        cmd[i] = (i - f - h) % 80 == 79 ? '\n' : 'x';
    memcpy(cmd + len - t, LONG_END, t + 1);
    *body = len - t - f - h + 1; /* with the line's own newline */
    return cmd;
}

TEST(shell_exec_runs_a_command_too_long_for_an_argument)
{
    /* Linux refuses an exec argument over SHELL_ARG_MAX bytes with its NUL
     * (a large heredoc writing a file is a usual agent command).  At the
     * edge the command is still bash's -c text; one byte more, it arrives
     * through a memfd, with a snapshot too, and no fd of it is left. */
    static const char len_of_c[] = "echo ${#BASH_EXECUTION_STRING}; ";
    /* ls alone, not in a pipeline: bash holds a pipe's fds for a moment
     * while it starts the stages, and ls could list them. */
    static const char probe[] = "echo \"${SNAP-} ${__rein_c-none} $#\"; "
                                "ls -m /proc/$$/fd; ";
    char expect[64], snap[512];
    struct col c = {0};
    rein_run_result_t res;
    size_t body;
    char *at = long_command(len_of_c, SHELL_ARG_MAX - 1, &body);
    rein_shell_run_opts_t o = {.command = at};
    ASSERT_OK(xexec(NULL, &o, &c, &res));
    snprintf(expect, sizeof expect, "%u\n%zu\n", SHELL_ARG_MAX - 1, body);
    ASSERT_STR(c.out.p, expect);
    ASSERT_EQ(res.exit_code, 0);

    char *over = long_command(len_of_c, SHELL_ARG_MAX, &body);
    rein_shell_run_opts_t o2 = {.command = over};
    buf_reset(&c.out);
    ASSERT_OK(xexec(NULL, &o2, &c, &res));
    ASSERT_EQ(res.exit_code, 0);
    snprintf(expect, sizeof expect, "%zu\n", body);
    ASSERT_TRUE(c.out.p && strchr(c.out.p, '\n'));
    ASSERT_STR(strchr(c.out.p, '\n') + 1, expect); /* not the command's */
    ASSERT_TRUE(atol(c.out.p) != (long)SHELL_ARG_MAX);

    char *fds = long_command(probe, SHELL_ARG_MAX, &body);
    rein_shell_run_opts_t o3 = {.command = fds};
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    write_file(snap, "SNAP=yes\n");
    rein_shell_opts_t so = {.snapshot_path = snap};
    snprintf(expect, sizeof expect, "yes none 0\n0, 1, 2\n%zu\n", body);
    buf_reset(&c.out);
    ASSERT_OK(xexec(&so, &o3, &c, &res));
    ASSERT_STR(c.out.p, expect);
    snprintf(expect, sizeof expect, " none 0\n0, 1, 2\n%zu\n", body);
    buf_reset(&c.out);
    ASSERT_OK(xexec(NULL, &o3, &c, &res));
    ASSERT_STR(c.out.p, expect);
    free(at);
    free(over);
    free(fds);
    buf_free(&c.out);
}

/* ------------------------------------------------- the SIGCHLD fallback */

TEST(shell_core_without_pidfd)
{
    setenv("REIN_PIDFD", "0", 1);
    core_exec_exit_codes();
    core_exec_merged_output();
    core_exec_background_drain();
    core_exec_background_job_terminated();
    core_session_state_persists();
    core_session_command_env_popped();
    core_session_exit_codes_keep_or_drop();
    core_session_background_drain();
    core_session_exit_keeps_late_output();
    core_session_free_leaves_nothing();
    core_session_bash_killed();
}

TEST(shell_kills_without_pidfd)
{
    setenv("REIN_PIDFD", "0", 1);
    core_exec_timeout_kills_term_proof_tree();
    core_session_cancel_from_thread();
    core_session_abort_from_callback();
}
