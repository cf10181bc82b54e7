/*
 * test_run.c — `rein run`, the CLI proxy, driving the real build/rein:
 * a dangerous command not run (with no terminal, and answered on one),
 * narrate of cp, passthrough verbatim, exit codes (the command's, 125 for
 * rein's own failure, 127 not found), an interactive program through a real
 * PTY in raw mode, hazards shown before the command ends, SIGWINCH and
 * SIGINT forwarding, a SIGTERM the command ignores ending the run after
 * the grace, stdin forwarding, --json, and the command's lines
 * that read like markers escaped on screen but not in the log.  Each run is a run of
 * the supervisor on the state dir: `rein ps` and `rein logs` know it, its
 * log is logs/<id>.log there, a state dir that cannot hold the registry
 * means nothing runs, and a `rein run` killed by SIGKILL leaves its command
 * for `rein reconcile`.  With its own stdin at its end, rein answers every
 * cooked read of the command's terminal with EOF (two prompts, `cat;
 * cat`, password prompts), hangs up a raw-mode wait on the terminal alone
 * after its grace (each job's group, then the run when SIGHUP is
 * ignored), and leaves alone what may still get input: an open stdin
 * pipe, a terminal stdin, a wait that also watches something else.
 *
 * Synchronisation is always on output (a line appearing) or on a FIFO the
 * test opens, never on sleeps; poll timeouts only bound a failing test.
 * The dangerous commands used are harmless if they ever ran (a fake rm
 * first on PATH, a nonexistent mkfs.* tool), and a marker file proves
 * whether anything ran.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "cli/cli.h"
#include "supervise/registry.h"
#include "exec/retention.h"
#include "exec/awaiting.h"
#include "harness.h"
#include "term/ptyio.h"
#include "tutil.h"

/* How long a step may take before the test is declared failed. */
#define RUN_TEST_STEP_MS 10000

static pid_t g_rein = -1;

/* A failing assert exits: never leave rein (and through its PTY hang-up,
 * its child) behind. */
static void kill_rein(void)
{
    if (g_rein > 0)
        kill(-g_rein, SIGKILL);
}

static const char *rein_path(void)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/rein", test_build_dir());
    return p;
}

static const char *helper_path(void)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/termhelper", test_bin_dir());
    return p;
}

/* Every test: logs in its own state dir, no personal policy file. */
static void setup(void)
{
    char p[PATH_MAX];
    setenv("REIN_STATE_DIR", test_tmpdir(), 1);
    snprintf(p, sizeof p, "%s/no-policy.json", test_tmpdir());
    setenv("REIN_POLICY", p, 1);
    atexit(kill_rein);
}

/* The argv of `rein ARGS...`: args NULL-terminated, "rein" not included,
 * at most RUN_TEST_ARGS_MAX of them. */
#define RUN_TEST_ARGS_MAX 62
static void rein_argv(const char *const *args, const char *argv[])
{
    size_t n = 0;
    argv[n++] = rein_path();
    for (; args[n - 1]; n++) {
        ASSERT_INT(n, <=, RUN_TEST_ARGS_MAX);
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
}

/* Runs argv (rein, or rein under a wrapper), stdin from fd_in (-1:
 * /dev/null), in its own session (so no /dev/tty), in cwd.  Returns the
 * exit code; stdout and stderr in out and err. */
static int run_argv(const char *const *argv, int fd_in, const char *cwd,
                    buf_t *out, buf_t *err)
{
    int po[2], pe[2];
    ASSERT_EQ(pipe2(po, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(pe, O_CLOEXEC), 0);
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.fd_in = fd_in;
    o.fd_out = po[1];
    o.fd_err = pe[1];
    o.cwd = cwd;
    pid_t pid;
    int pidfd, code;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    g_rein = pid;
    close(po[1]);
    close(pe[1]);
    tu_read_all(po[0], out);
    tu_read_all(pe[0], err);
    close(po[0]);
    close(pe[0]);
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    g_rein = -1;
    if (pidfd >= 0)
        close(pidfd);
    return code;
}

/* run_argv of `rein ARGS...` (rein_argv). */
static int run_rein(const char *const *args, int fd_in, const char *cwd,
                    buf_t *out, buf_t *err)
{
    const char *argv[RUN_TEST_ARGS_MAX + 2];
    rein_argv(args, argv);
    return run_argv(argv, fd_in, cwd, out, err);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void write_file(const char *path, const char *body, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, body, strlen(body)), (ssize_t)strlen(body));
    close(fd);
}

/* ------------------------------------------------------------- danger */

TEST(run_dangerous_command_is_not_run_without_a_terminal)
{
    setup();
    char bin[PATH_MAX], rm[PATH_MAX + 8], mark[PATH_MAX], path[PATH_MAX * 2];
    snprintf(bin, sizeof bin, "%s/bin", test_tmpdir());
    snprintf(rm, sizeof rm, "%s/rm", bin);
    snprintf(mark, sizeof mark, "%s/MARK", test_tmpdir());
    ASSERT_EQ(mkdir(bin, 0700), 0);
    /* The rm rein would run is a fake that only leaves a mark. */
    char script[PATH_MAX + 64];
    snprintf(script, sizeof script, "#!/bin/sh\ntouch '%s'\n", mark);
    write_file(rm, script, 0700);
    snprintf(path, sizeof path, "%s:/usr/bin:/bin", bin);
    setenv("PATH", path, 1);
    char resolved[PATH_MAX];
    ASSERT_OK(spawn_resolve("rm", path, resolved, sizeof resolved));
    ASSERT_STR(resolved, rm);

    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a1[] = {"run", "--", "rm", "-rf", "/rein-test-no-such-dir",
                        NULL};
    ASSERT_EQ(run_rein(a1, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "[rein] danger rm -rf /rein-test-no-such-dir "
                           "(pattern: rm-root) — not run");
    ASSERT_FALSE(exists(mark));

    /* What `rein run -- /path/to/rm -rf ~` reaches rein as: the command
     * word by its path, the home by its value.  Still asked, as is a
     * shell's -c string and a group in a line. */
    char home[PATH_MAX];
    snprintf(home, sizeof home, "%s/home", test_tmpdir());
    setenv("HOME", home, 1);
    const char *a4[] = {"run", "--", rm, "-rf", home, NULL};
    buf_reset(&err);
    ASSERT_EQ(run_rein(a4, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "(pattern: rm-root) — not run");
    ASSERT_FALSE(exists(mark));
    const char *a5[] = {"run", "--", "bash", "-c", "(rm -rf ~/)", NULL};
    buf_reset(&err);
    ASSERT_EQ(run_rein(a5, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "(pattern: rm-root) — not run");
    ASSERT_FALSE(exists(mark));
    char group[PATH_MAX * 2 + 64];
    snprintf(group, sizeof group, "touch '%s'; { %s -rf \\\n ~; }", mark,
             rm);
    const char *a6[] = {group, NULL};
    buf_reset(&err);
    ASSERT_EQ(run_rein(a6, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "(pattern: rm-root) — not run");
    ASSERT_FALSE(exists(mark));

    /* A shell line: one dangerous segment stops the whole line. */
    buf_reset(&err);
    char line[PATH_MAX + 64];
    snprintf(line, sizeof line, "touch '%s' && mkfs.reintest x", mark);
    const char *a2[] = {line, NULL};
    ASSERT_EQ(run_rein(a2, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "(pattern: mkfs)");
    ASSERT_FALSE(exists(mark));

    /* A script of several lines, longer than 1 KiB: the marker is one
     * line, the whole command on it, the pattern and decision after. */
    buf_t script2 = BUF_INIT;
    snprintf(line, sizeof line, "touch '%s'\nrm -rf /rein-test-no-such-dir", mark);
    ASSERT_OK(buf_append_str(&script2, line));
    for (int i = 0; i < 600; i++)
        ASSERT_OK(buf_append_str(&script2, " x"));
    const char *a3[] = {script2.p, NULL};
    buf_reset(&err);
    ASSERT_EQ(run_rein(a3, -1, test_tmpdir(), &out, &err), 125);
    const char *m = strstr(err.p, "[rein] danger touch ");
    ASSERT_TRUE(m != NULL);
    const char *e = strchr(m, '\n');
    ASSERT_TRUE(e != NULL);
    ASSERT_TRUE(e - m > 1200);
    ASSERT_TRUE(memmem(m, (size_t)(e - m), " x x (pattern: rm-root) — not run",
                       strlen(" x x (pattern: rm-root) — not run")) != NULL);
    ASSERT_TRUE(memmem(m, (size_t)(e - m), "' rm -rf /rein-test-no-such-dir x",
                       32) != NULL);
    ASSERT_FALSE(exists(mark));
    buf_free(&script2);
    buf_free(&out);
    buf_free(&err);
}

TEST(run_policy_forbid_and_allow)
{
    setup();
    char pol[PATH_MAX], mark[PATH_MAX], line[PATH_MAX + 64];
    snprintf(pol, sizeof pol, "%s/policy.json", test_tmpdir());
    snprintf(mark, sizeof mark, "%s/MARK", test_tmpdir());
    write_file(pol, "{\"forbid\": [\"^echo forbidden\"], "
                    "\"allow\": [\"mkfs\\\\.reintest\"]}", 0600);
    setenv("REIN_POLICY", pol, 1);
    buf_t out = BUF_INIT, err = BUF_INIT;
    snprintf(line, sizeof line, "touch '%s'; echo forbidden", mark);
    const char *a1[] = {line, NULL};
    ASSERT_EQ(run_rein(a1, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "forbidden by policy, not run");
    ASSERT_FALSE(exists(mark));
    /* Allowed: runs (the tool does not exist: 127 from the shell). */
    snprintf(line, sizeof line, "touch '%s'; mkfs.reintest x", mark);
    const char *a2[] = {line, NULL};
    ASSERT_EQ(run_rein(a2, -1, test_tmpdir(), &out, &err), 127);
    ASSERT_TRUE(exists(mark));
    buf_free(&out);
    buf_free(&err);
}

/* ---------------------------------------------------- driving a PTY */

struct tty {
    int master;
    int slave; /* the test's own copy: see tty_finish */
    pid_t pid;
    int pidfd;
    buf_t out;
};

/* Starts argv on a fresh PTY (cols x rows) as its controlling terminal. */
static void tty_spawn(struct tty *t, const char *const *argv, unsigned cols,
                      unsigned rows)
{
    int slave;
    memset(t, 0, sizeof *t);
    ASSERT_OK(ptyio_open(cols, rows, NULL, &t->master, &slave));
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.fd_in = o.fd_out = o.fd_err = slave;
    o.ctty_fd = slave;
    o.cwd = test_tmpdir();
    ASSERT_OK(spawn_start(&o, &t->pid, &t->pidfd, NULL));
    g_rein = t->pid;
    t->slave = slave;
}

/* Starts rein with args on a fresh PTY (tty_spawn). */
static void tty_start(struct tty *t, const char *const *args, unsigned cols,
                      unsigned rows)
{
    const char *argv[RUN_TEST_ARGS_MAX + 2];
    rein_argv(args, argv);
    tty_spawn(t, argv, cols, rows);
}

/* Reads fd into out until out contains needle (from offset 0); fails the
 * test at EOF or after RUN_TEST_STEP_MS. */
static void expect_fd(int fd, buf_t *out, const char *needle)
{
    uint64_t end = test_now_ms() + RUN_TEST_STEP_MS;
    while (!out->p || !strstr(out->p, needle)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        uint64_t now = test_now_ms();
        if (now >= end)
            test_fail(__FILE__, __LINE__, "no \"%s\" in \"%s\"", needle,
                      out->p ? out->p : "");
        if (poll(&p, 1, (int)(end - now)) <= 0)
            continue;
        char b[4096];
        ssize_t k = read(fd, b, sizeof b);
        if (k <= 0)
            test_fail(__FILE__, __LINE__, "EOF before \"%s\" in \"%s\"",
                      needle, out->p ? out->p : "");
        buf_append(out, b, (size_t)k);
    }
}

/* Reads fd into out until it holds a whole line "<prefix><number>" (from
 * offset 0), and returns the number; fails the test at EOF or after
 * RUN_TEST_STEP_MS. */
static int expect_number(int fd, buf_t *out, const char *prefix)
{
    expect_fd(fd, out, prefix);
    uint64_t end = test_now_ms() + RUN_TEST_STEP_MS;
    for (;;) {
        const char *at = strstr(out->p, prefix) + strlen(prefix);
        if (strchr(at, '\n'))
            return atoi(at);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        uint64_t now = test_now_ms();
        if (now >= end)
            test_fail(__FILE__, __LINE__, "no whole \"%s\" line in \"%s\"",
                      prefix, out->p);
        if (poll(&p, 1, (int)(end - now)) <= 0)
            continue;
        char b[4096];
        ssize_t k = read(fd, b, sizeof b);
        if (k <= 0)
            test_fail(__FILE__, __LINE__, "EOF in \"%s\"", out->p);
        buf_append(out, b, (size_t)k);
    }
}

/* Reads the master until its output contains needle (from offset 0). */
static void tty_expect(struct tty *t, const char *needle)
{
    expect_fd(t->master, &t->out, needle);
}

/* Starts argv (argv[0]: the rein binary) with stdout on a pipe, as
 * g_rein; returns the pipe's read end, *pid and *pidfd for the reap. */
static int rein_start_piped(const char *const *argv, pid_t *pid, int *pidfd)
{
    int out = tu_spawn_piped(argv, SPAWN_SESSION, -1, pid, pidfd);
    g_rein = *pid;
    return out;
}

/* Reads what a rein started by rein_start_piped prints into out, to its
 * end, then reaps rein; returns its exit code. */
static int rein_finish(pid_t pid, int pidfd, int out_fd, buf_t *out)
{
    int code;
    tu_read_all(out_fd, out);
    close(out_fd);
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    g_rein = -1;
    if (pidfd >= 0)
        close(pidfd);
    return code;
}

/* Kills a rein started by rein_start_piped with SIGKILL (the crash case:
 * no chance to clean up), reaps it and reads what it printed into out. */
static void rein_crash(pid_t pid, int pidfd, int out_fd, buf_t *out)
{
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    ASSERT_EQ(rein_finish(pid, pidfd, out_fd, out), 128 + SIGKILL);
}

static void tty_send(struct tty *t, const char *s)
{
    ASSERT_EQ(write(t->master, s, strlen(s)), (ssize_t)strlen(s));
}

/* Reads what is there now, without waiting. */
static void tty_drain(struct tty *t)
{
    struct pollfd p = {.fd = t->master, .events = POLLIN};
    char b[4096];
    ssize_t k;
    while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN) &&
           (k = read(t->master, b, sizeof b)) > 0)
        buf_append(&t->out, b, (size_t)k);
}

/* Reads until rein has exited, then to the end; reaps rein and returns
 * its exit code.  The test holds a copy of the slave until rein is gone
 * and what it wrote is read: the last close of a slave is then the
 * test's, long after rein's last write, so no close races the reads
 * (under load the end of the output was once lost, EIO coming first). */
static int tty_finish(struct tty *t)
{
    siginfo_t si;
    for (;;) {
        memset(&si, 0, sizeof si);
        ASSERT_OK(waitid(P_PID, (id_t)t->pid, &si,
                         WEXITED | WNOHANG | WNOWAIT));
        if (si.si_pid == t->pid)
            break;
        struct pollfd p = {.fd = t->master, .events = POLLIN};
        if (poll(&p, 1, 20) == 1)
            tty_drain(t);
    }
    tty_drain(t);
    if (t->slave >= 0)
        close(t->slave);
    t->slave = -1;
    tu_read_all(t->master, &t->out);
    int code;
    ASSERT_OK(spawn_reap(t->pid, t->pidfd, &code));
    g_rein = -1;
    if (t->pidfd >= 0)
        close(t->pidfd);
    close(t->master);
    return code;
}

TEST(run_dangerous_asks_the_person_on_the_terminal)
{
    setup();
    char mark[PATH_MAX], line[PATH_MAX + 64];
    snprintf(mark, sizeof mark, "%s/MARK", test_tmpdir());
    snprintf(line, sizeof line, "touch '%s'; mkfs.reintest x", mark);
    const char *args[] = {"run", "--", line, NULL};
    struct tty t;
    tty_start(&t, args, 80, 24);
    tty_expect(&t, "run it? [y/N] ");
    ASSERT_CONTAINS(t.out.p, "(pattern: mkfs)");
    tty_send(&t, "n\r");
    ASSERT_EQ(tty_finish(&t), 125);
    ASSERT_CONTAINS(t.out.p, "— not run");
    ASSERT_FALSE(exists(mark));
    buf_free(&t.out);

    tty_start(&t, args, 80, 24);
    tty_expect(&t, "run it? [y/N] ");
    tty_send(&t, "y\r");
    ASSERT_EQ(tty_finish(&t), 127);
    ASSERT_CONTAINS(t.out.p, "confirmed");
    ASSERT_TRUE(exists(mark));
    buf_free(&t.out);
}

TEST(run_interactive_program_gets_a_raw_terminal_both_ways)
{
    setup();
    const char *args[] = {"run", "--", helper_path(), "raw", NULL};
    struct tty t;
    tty_start(&t, args, 80, 24);
    tty_expect(&t, "READY");
    /* Bytes a cooked terminal would hold back (no newline) or turn into
     * a signal (^C): they arrive only if rein made ours raw too. */
    tty_send(&t, "a\x03");
    tty_expect(&t, "<61><03>");
    tty_send(&t, "\x1b[A");
    tty_expect(&t, "<1b><5b><41>");
    tty_send(&t, "q");
    tty_expect(&t, "BYE");
    ASSERT_EQ(tty_finish(&t), 0);
    ASSERT_CONTAINS(t.out.p, "[rein] exit 0");
    buf_free(&t.out);
}

TEST(run_terminal_is_restored_after_raw_mode)
{
    setup();
    const char *args[] = {"run", "--", helper_path(), "raw", NULL};
    struct tty t;
    tty_start(&t, args, 80, 24);
    tty_expect(&t, "READY");
    struct termios tio;
    /* Our side of the terminal shows what rein set on its side. */
    ASSERT_EQ(tcgetattr(t.master, &tio), 0);
    ASSERT_FALSE(tio.c_lflag & ICANON);
    tty_send(&t, "q");
    /* rein restores the terminal before it prints its footer. */
    tty_expect(&t, "[rein] exit 0");
    ASSERT_EQ(tcgetattr(t.master, &tio), 0);
    ASSERT_TRUE(tio.c_lflag & ICANON);
    ASSERT_TRUE(tio.c_lflag & ECHO);
    ASSERT_EQ(tty_finish(&t), 0);
    buf_free(&t.out);
}

/* The status line of a run on a person's terminal (RUN_STATUS_AFTER_MS):
 * each one drawn is erased (CR, EL) before any line is written, and fits
 * in one column less than the terminal's width: at 20 columns (the least
 * it is drawn in, RUN_STATUS_MIN_COLS) it is `[rein] running · 2s`, 19 of
 * them; at 19 there is none, nor under TERM=dumb.  The command takes 3 s,
 * printing all the while, so a status was due. */
TEST(run_status_line_on_a_terminal_is_erased_before_output)
{
    setup();
    const char *args[] = {"run", "--", helper_path(), "slow", "30", "100",
                          NULL};
    static const struct {
        unsigned cols;
        const char *term;
        bool drawn;
    } cases[] = {{20, "xterm-256color", true}, {19, "xterm-256color", false},
                 {80, "dumb", false}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        unsigned cols = cases[c].cols;
        ASSERT_EQ(setenv("TERM", cases[c].term, 1), 0);
        struct tty t;
        tty_start(&t, args, cols, 24);
        ASSERT_EQ(tty_finish(&t), 0);
        ASSERT_CONTAINS(t.out.p, "step 30\r\n[rein] exit 0 ");
        const char *st = "\r\033[K[rein] running";
        const char *p = strstr(t.out.p, st);
        if (!cases[c].drawn) {
            ASSERT_TRUE(p == NULL);
            buf_free(&t.out);
            continue;
        }
        ASSERT_TRUE(p != NULL);
        for (; p; p = strstr(p + 1, st)) {
            const char *text = p + 4, *end = strchr(text, '\r');
            ASSERT_TRUE(end != NULL);
            ASSERT_TRUE(!strncmp(end, "\r\033[K", 4));
            ASSERT_TRUE(memchr(text, '\n', (size_t)(end - text)) == NULL);
            size_t width = 0;
            for (const char *q = text; q < end; q++)
                width += ((unsigned char)*q & 0xC0) != 0x80;
            ASSERT_INT(width, ==, cols - 1);
            ASSERT_TRUE(!strncmp(text, "[rein] running \xc2\xb7 ", 18));
        }
        buf_free(&t.out);
    }
}

TEST(run_sigwinch_resizes_the_child_terminal)
{
    setup();
    const char *args[] = {"run", "--raw", "--",
                          "stty size; read x; stty size; read y", NULL};
    struct tty t;
    tty_start(&t, args, 100, 30);
    tty_expect(&t, "30 100");
    struct winsize ws = {.ws_row = 50, .ws_col = 160};
    ASSERT_EQ(ioctl(t.master, TIOCSWINSZ, &ws), 0);
    tty_send(&t, "\r");
    tty_expect(&t, "50 160");
    tty_send(&t, "\r");
    ASSERT_EQ(tty_finish(&t), 0);
    buf_free(&t.out);
}

/* ------------------------------------------------------- categories */

TEST(run_narrate_cp_names_source_destination_and_size)
{
    setup();
    char a[PATH_MAX], d[PATH_MAX];
    snprintf(a, sizeof a, "%s/a.txt", test_tmpdir());
    snprintf(d, sizeof d, "%s/backup", test_tmpdir());
    char body[4201];
    memset(body, 'x', 4200);
    body[4200] = '\0';
    write_file(a, body, 0644);
    ASSERT_EQ(mkdir(d, 0700), 0);
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a1[] = {"cp", "a.txt", "backup/", NULL};
    ASSERT_EQ(run_rein(a1, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_CONTAINS(out.p,
                    "[rein] narrate cp: a.txt → backup/a.txt (4.1 KiB)\n");
    ASSERT_CONTAINS(out.p, "[rein] exit 0");
    buf_reset(&out);
    const char *a2[] = {"cp -r backup copy && rm a.txt && mkdir -p n/m", NULL};
    ASSERT_EQ(run_rein(a2, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_CONTAINS(out.p, "[rein] narrate cp: backup → copy/ (1 file, "
                           "4.1 KiB)\n");
    ASSERT_CONTAINS(out.p, "[rein] narrate rm: removed a.txt (4.1 KiB)\n");
    ASSERT_CONTAINS(out.p, "[rein] narrate mkdir: created n/m/\n");
    buf_reset(&out);
    /* A failed copy: the command's own error, and what did not happen. */
    const char *a3[] = {"cp", "missing", "x", NULL};
    ASSERT_EQ(run_rein(a3, -1, test_tmpdir(), &out, &err), 1);
    ASSERT_CONTAINS(out.p, "No such file");
    ASSERT_CONTAINS(out.p, "[rein] narrate cp: missing → x: not created\n");
    buf_free(&out);
    buf_free(&err);
}

/* Words the shell expands are not the paths the command gets: such a
 * segment is not narrated, where stat()ing `$V` or `*.tmp` as written
 * reported a deleted directory as one that "did not exist".  A file whose
 * name only looks like a glob, given as a word of its own, still is. */
TEST(run_narrate_says_nothing_of_what_the_shell_expands)
{
    setup();
    char dir[PATH_MAX], f[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/victim", test_tmpdir());
    ASSERT_EQ(mkdir(dir, 0700), 0);
    snprintf(f, sizeof f, "%s/f", dir);
    write_file(f, "hi\n", 0644);
    snprintf(f, sizeof f, "%s/a.tmp", test_tmpdir());
    write_file(f, "x\n", 0644);
    setenv("REIN_T_V", dir, 1);
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a1[] = {"sh", "-c", "rm -rf $REIN_T_V", NULL};
    ASSERT_EQ(run_rein(a1, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_EQ(access(dir, F_OK), -1); /* it was removed */
    ASSERT_NOT_CONTAINS(out.p, "[rein] narrate");
    buf_reset(&out);
    const char *a2[] = {"rm *.tmp && mkdir $(echo x)y d{1,2} && "
                        "touch ~/../nonexistent-rein-dir/f",
                        NULL};
    ASSERT_EQ(run_rein(a2, -1, test_tmpdir(), &out, &err), 1);
    ASSERT_EQ(access(f, F_OK), -1); /* a.tmp was removed */
    ASSERT_NOT_CONTAINS(out.p, "[rein] narrate");
    buf_reset(&out);
    /* Quoted, the characters are the name's: narrated. */
    const char *a3[] = {"touch 'g*.txt' \"h\\$.txt\"", NULL};
    ASSERT_EQ(run_rein(a3, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_CONTAINS(out.p, "[rein] narrate touch: created g*.txt");
    buf_reset(&out);
    const char *a4[] = {"rm", "g*.txt", NULL};
    ASSERT_EQ(run_rein(a4, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_CONTAINS(out.p, "[rein] narrate rm: removed g*.txt");
    unsetenv("REIN_T_V");
    buf_free(&out);
    buf_free(&err);
}

TEST(run_passthrough_is_verbatim)
{
    setup();
    char f[PATH_MAX];
    snprintf(f, sizeof f, "%s/f.txt", test_tmpdir());
    const char *body = "one\n\n  two  \nerror: not really\n\tthree\n";
    write_file(f, body, 0644);
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"cat", "f.txt", NULL};
    ASSERT_EQ(run_rein(a, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_TRUE(out.len > strlen(body));
    ASSERT_MEM(out.p, strlen(body), body, strlen(body));
    ASSERT_TRUE(!strncmp(out.p + strlen(body), "[rein] exit 0 · ", 17));
    ASSERT_CONTAINS(out.p, " · 5 lines\n");
    /* --raw: the bytes and nothing else. */
    buf_reset(&out);
    const char *b[] = {"run", "--raw", "--", "cat", "f.txt", NULL};
    ASSERT_EQ(run_rein(b, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_MEM(out.p, out.len, body, strlen(body));
    /* One line is "1 line", as in every other exit marker. */
    write_file(f, "only\n", 0644);
    buf_reset(&out);
    ASSERT_EQ(run_rein(a, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_CONTAINS(out.p, "only\n[rein] exit 0 · ");
    ASSERT_CONTAINS(out.p, " · 1 line\n");
    buf_free(&out);
    buf_free(&err);
}

TEST(run_exit_codes_are_the_commands_and_125_for_rein)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a1[] = {"sh", "-c", "exit 7", NULL};
    ASSERT_EQ(run_rein(a1, -1, NULL, &out, &err), 7);
    const char *a2[] = {"run", "--", "kill -TERM $$", NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein(a2, -1, NULL, &out, &err), 128 + SIGTERM);
    ASSERT_CONTAINS(out.p, "[rein] signal SIGTERM \xc2\xb7 exit 143");
    /* a status of 128 + N that the command chose is no signal's */
    const char *a2b[] = {"run", "--", "exit 130", NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein(a2b, -1, NULL, &out, &err), 130);
    ASSERT_CONTAINS(out.p, "[rein] exit 130 \xc2\xb7");
    ASSERT_NOT_CONTAINS(out.p, "signal");
    const char *a2c[] = {"run", "--json", "--", "exit 130", NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein(a2c, -1, NULL, &out, &err), 130);
    ASSERT_CONTAINS(out.p, "\"signal\":null");
    const char *a3[] = {"run", "--", "rein-no-such-command-x", NULL};
    ASSERT_EQ(run_rein(a3, -1, NULL, &out, &err), 127);
    /* rein's own failures: 125 and one clear line. */
    char pol[PATH_MAX];
    snprintf(pol, sizeof pol, "%s/bad.json", test_tmpdir());
    write_file(pol, "{\"forbid\": [\"(\"]}", 0600);
    setenv("REIN_POLICY", pol, 1);
    buf_reset(&err);
    const char *a4[] = {"true", NULL};
    ASSERT_EQ(run_rein(a4, -1, NULL, &out, &err), 125);
    ASSERT_CONTAINS(err.p, "rein: policy: ");
    ASSERT_CONTAINS(err.p, "forbid[0]");
    unsetenv("REIN_POLICY");
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/not-a-dir", test_tmpdir());
    write_file(file, "", 0600);
    setenv("REIN_STATE_DIR", file, 1);
    setenv("REIN_POLICY", "/nonexistent/policy.json", 1);
    buf_reset(&err);
    ASSERT_EQ(run_rein(a4, -1, NULL, &out, &err), 125);
    ASSERT_CONTAINS(err.p, "rein: cannot create a log");
    /* Usage errors of the verb itself: 2. */
    const char *a5[] = {"run", NULL};
    ASSERT_EQ(run_rein(a5, -1, NULL, &out, &err), 2);
    const char *a6[] = {"run", "--bogus", "--", "true", NULL};
    ASSERT_EQ(run_rein(a6, -1, NULL, &out, &err), 2);
    /* Two views: refused, not the last one silently. */
    buf_reset(&err);
    const char *a7[] = {"run", "--raw", "--json", "--", "true", NULL};
    ASSERT_EQ(run_rein(a7, -1, NULL, &out, &err), 2);
    ASSERT_CONTAINS(err.p, "rein run: --raw and --json cannot go together");
    buf_free(&out);
    buf_free(&err);
}

/* Starts `rein termhelper MODE FIFO`, its stdout on a pipe (as
 * rein_start_piped), with FIFO made here: the command waits on it until
 * fifo_release.  Returns the pipe's read end. */
static int start_on_fifo(const char *mode, char fifo[PATH_MAX], pid_t *pid,
                         int *pidfd)
{
    snprintf(fifo, PATH_MAX, "%s/release", test_tmpdir());
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    const char *argv[] = {rein_path(), helper_path(), mode, fifo, NULL};
    return rein_start_piped(argv, pid, pidfd);
}

/* Lets a command that start_on_fifo started go on. */
static void fifo_release(const char *fifo)
{
    int w = open(fifo, O_WRONLY | O_CLOEXEC);
    ASSERT_TRUE(w >= 0);
    close(w);
}

TEST(run_hazard_is_shown_before_the_command_ends)
{
    setup();
    char fifo[PATH_MAX];
    pid_t pid;
    int pidfd;
    int out_fd = start_on_fifo("hazard", fifo, &pid, &pidfd);
    /* The command is blocked on the FIFO until we open it: whatever we
     * read now was emitted while it still runs. */
    buf_t out = BUF_INIT;
    expect_fd(out_fd, &out, "error: boom\n");
    ASSERT_TRUE(strstr(out.p, "done") == NULL);
    ASSERT_TRUE(strstr(out.p, "[rein] exit") == NULL);
    fifo_release(fifo);
    ASSERT_EQ(rein_finish(pid, pidfd, out_fd, &out), 0);
    /* The rest is shown or named as dropped, never silently lost. */
    ASSERT_TRUE(strstr(out.p, "done\n") || strstr(out.p, "[rein] omitted"));
    ASSERT_CONTAINS(out.p, "[rein] exit 0");
    buf_free(&out);
}

/* A small output (SQ_SMALL_LINES) is shown whole: the lines a condensed
 * stream drops wait for the next hazard, for SQ_QUIET_MS without output
 * (a server's lines before it waits for requests), or for the end, and
 * come in their order.  A short failure used to show its error line
 * alone, and a quiet server nothing until it exited. */
TEST(run_small_output_is_shown_whole_and_quiet_lines_come_out)
{
    setup();
    char fifo[PATH_MAX];
    pid_t pid;
    int pidfd;
    int out_fd = start_on_fifo("quiet", fifo, &pid, &pidfd);
    buf_t out = BUF_INIT;
    /* The command is blocked on the FIFO, quiet: its lines come out. */
    expect_fd(out_fd, &out, "listening on 3000\n");
    ASSERT_STR(out.p, "starting\nlistening on 3000\n");
    fifo_release(fifo);
    ASSERT_EQ(rein_finish(pid, pidfd, out_fd, &out), 1);
    const char *whole = "starting\nlistening on 3000\nx.c:1:1: error: boom\n"
                        "after\n[rein] exit 1 ";
    ASSERT_TRUE(!strncmp(out.p, whole, strlen(whole)));
    ASSERT_NOT_CONTAINS(out.p, "[rein] omitted");
    buf_free(&out);
}

TEST(run_forwards_sigint_to_the_child)
{
    setup();
    /* --raw: this is about signals, and "ready" must show at once. */
    const char *argv[] = {rein_path(), "run", "--raw", "--", helper_path(),
                          "sig", NULL};
    pid_t pid;
    int pidfd;
    int out_fd = rein_start_piped(argv, &pid, &pidfd);
    buf_t out = BUF_INIT;
    expect_fd(out_fd, &out, "ready\n");
    ASSERT_EQ(kill(pid, SIGINT), 0);
    ASSERT_EQ(rein_finish(pid, pidfd, out_fd, &out), 5);
    ASSERT_CONTAINS(out.p, "got SIGINT");
    buf_free(&out);
}

/* True when s (may be NULL) does not contain needle. */
static bool lacks(const char *s, const char *needle)
{
    return !s || !strstr(s, needle);
}

/* The state of process pid (stat field 3) once it is `want` or not
 * (`is`), polled: a stop or a continue reaches a process a moment after
 * it was sent, and there is no event for it here. */
static void await_state(pid_t pid, char want, bool is)
{
    uint64_t end = test_now_ms() + RUN_TEST_STEP_MS;
    for (;;) {
        procfs_stat_t st;
        ASSERT_OK(procfs_read_stat(pid, &st));
        if ((st.state == want) == is)
            return;
        if (test_now_ms() >= end)
            test_fail(__FILE__, __LINE__, "pid %d state %c, %s %c", (int)pid,
                      st.state, is ? "wanted" : "not wanted", want);
        usleep(2000);
    }
}

/* A line-echoing job (cooked terminal) that writes its pid to a file in
 * the test dir first; the shell command, into cmd. */
static void echo_job(char *cmd, size_t size, char *pidfile, size_t psize)
{
    snprintf(pidfile, psize, "%s/job.pid", test_tmpdir());
    snprintf(cmd, size,
             "echo $$ > %s.tmp && mv %s.tmp %s && "
             "while read l; do echo \"got $l\"; done",
             pidfile, pidfile, pidfile);
}

/* A TERM for rein reaches a job that stopped itself, woken: it ends as
 * its trap says, not by the KILL after REIN_SUP_GRACE_MS. */
TEST(run_forwards_sigterm_to_a_stopped_job_and_wakes_it)
{
    setup();
    char pidfile[PATH_MAX], cmd[4 * PATH_MAX];
    snprintf(pidfile, sizeof pidfile, "%s/job.pid", test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "trap 'echo got TERM; exit 3' TERM; "
             "echo $$ > %s.tmp && mv %s.tmp %s && kill -STOP $$; sleep 100",
             pidfile, pidfile, pidfile);
    const char *argv[] = {rein_path(), "run", "--raw", "--", "sh", "-c",
                          cmd, NULL};
    pid_t pid;
    int pidfd;
    int out_fd = rein_start_piped(argv, &pid, &pidfd);
    pid_t job = tu_await_pid_file(pidfile, RUN_TEST_STEP_MS);
    await_state(job, 'T', true);
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein_finish(pid, pidfd, out_fd, &out), 3);
    ASSERT_CONTAINS(out.p, "got TERM");
    buf_free(&out);
}

/* Ctrl-Z at a job-control shell suspends the job with rein, and `fg`
 * resumes both: the job (in a session of its own, where SIGTSTP would be
 * dropped) is stopped, the shell reports rein stopped, and after `fg`
 * the job reads what is typed again.  Through a real interactive bash. */
/* In an interactive bash on a terminal of its own (t, prompt
 * `test-prompt$ `), `rein run` of the echo job, which echoes a line typed
 * and is then suspended with ^Z; the job's pid. */
static pid_t echo_job_suspended_in_a_shell(struct tty *t)
{
    char cmd[4 * PATH_MAX], pidfile[PATH_MAX], line[6 * PATH_MAX];
    echo_job(cmd, sizeof cmd, pidfile, sizeof pidfile);
    const char *argv[] = {"/bin/bash", "--norc", "--noprofile", "-i", NULL};
    setenv("PS1", "test-prompt$ ", 1); /* whatever the environment had */
    unsetenv("PROMPT_COMMAND");
    tty_spawn(t, argv, 100, 30);
    snprintf(line, sizeof line, "%s run --raw -- sh -c '%s'\r", rein_path(),
             cmd);
    tty_send(t, line);
    pid_t job = tu_await_pid_file(pidfile, RUN_TEST_STEP_MS);
    tty_send(t, "one\r");
    tty_expect(t, "got one");
    tty_send(t, "\x1a");
    tty_expect(t, "Stopped");
    return job;
}

/* `fg` of that job: it echoes the next line, running again; then ^D ends
 * it, and rein with it, 0, and the shell on t exits. */
static void echo_job_fg_then_ended(struct tty *t, pid_t job)
{
    tty_send(t, "fg\r");
    tty_send(t, "two\r");
    tty_expect(t, "got two");
    await_state(job, 'T', false);
    /* EOF: the job ends, and rein with it; the shell's prompt says so
     * (typed before it, the line could still be rein's to read). */
    buf_reset(&t->out);
    tty_send(t, "\x04");
    tty_expect(t, "test-prompt$ ");
    tty_send(t, "echo \"rein said $?\"\r");
    tty_expect(t, "rein said 0");
    tty_send(t, "exit\r");
    ASSERT_EQ(tty_finish(t), 0);
    buf_free(&t->out);
}

TEST(run_ctrl_z_suspends_the_job_with_rein_and_fg_resumes_both)
{
    setup();
    struct tty t;
    pid_t job = echo_job_suspended_in_a_shell(&t);
    await_state(job, 'T', true);
    echo_job_fg_then_ended(&t, job);
}

/* ^Z, then `bg`: rein runs on in the background of the person's shell,
 * and the terminal is the shell's.  rein used to go on reading it: the
 * next line typed at the shell stopped it (`Stopped (tty input)`), and
 * after `fg` it sat in a read of a line the shell had taken, its command
 * long gone, until the person pressed Enter.  Now it leaves the terminal
 * alone until `fg` gives it back, and reads it again then. */
TEST(run_bg_leaves_the_terminal_to_the_shell_until_fg)
{
    setup();
    struct tty t;
    pid_t job = echo_job_suspended_in_a_shell(&t);
    tty_send(&t, "bg\r");
    await_state(job, 'T', false);
    /* Lines for the shell, while rein runs in its background. */
    tty_send(&t, "echo shell-$((6*7))\r");
    tty_expect(&t, "shell-42");
    tty_send(&t, "jobs\r");
    tty_expect(&t, "Running");
    ASSERT_TRUE(lacks(t.out.p, "Stopped (tty input)"));
    ASSERT_TRUE(lacks(t.out.p, "got echo"));
    echo_job_fg_then_ended(&t, job);
}

/* A shell inside rein's terminal does its own job control: a TSTP for
 * rein while that shell's job has the terminal suspends the job alone,
 * as ^Z would at a terminal; the inner shell says `Stopped`, rein runs
 * on, and the shell's own `fg` resumes the job. */
/* `rein run --raw -- bash -i` on a terminal of its own (prompt
 * `inner$ `), with the job `line` starts at its prompt; the job's pid,
 * once it wrote it to `pidfile`. */
static pid_t inner_shell_job(struct tty *t, const char *line,
                             const char *pidfile)
{
    setenv("PS1", "inner$ ", 1);
    unsetenv("PROMPT_COMMAND");
    const char *args[] = {"run", "--raw", "--", "/bin/bash", "--norc",
                          "--noprofile", "-i", NULL};
    tty_start(t, args, 100, 30);
    tty_expect(t, "inner$ ");
    tty_send(t, line);
    return tu_await_pid_file(pidfile, RUN_TEST_STEP_MS);
}

TEST(run_ctrl_z_under_a_shell_inside_suspends_that_shells_job)
{
    setup();
    char pidfile[PATH_MAX], line[4 * PATH_MAX];
    snprintf(pidfile, sizeof pidfile, "%s/job.pid", test_tmpdir());
    snprintf(line, sizeof line,
             "sh -c 'echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 100'\r",
             pidfile, pidfile, pidfile);
    struct tty t;
    pid_t job = inner_shell_job(&t, line, pidfile);
    buf_reset(&t.out);
    ASSERT_OK(kill(t.pid, SIGTSTP));
    tty_expect(&t, "Stopped");
    await_state(job, 'T', true);
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(t.pid, &st));
    ASSERT_TRUE(st.state != 'T'); /* rein itself runs on */
    tty_send(&t, "fg\r");
    await_state(job, 'T', false);
    tty_send(&t, "\x03"); /* the job ends; then the shell */
    tty_expect(&t, "inner$ ");
    tty_send(&t, "exit 0\r");
    ASSERT_EQ(tty_finish(&t), 0);
    buf_free(&t.out);
}

/* The job in the terminal's foreground may have outlived its group's
 * leader: the later stages of a pipeline whose first stage has ended.  A
 * TSTP or INT for rein still reaches that job, not the shell's group
 * (which an interactive shell ignores them in). */
TEST(run_signals_reach_a_foreground_job_whose_group_leader_has_exited)
{
    setup();
    char pidfile[PATH_MAX], line[4 * PATH_MAX];
    snprintf(pidfile, sizeof pidfile, "%s/job.pid", test_tmpdir());
    snprintf(line, sizeof line,
             "true | (echo $BASHPID > %s.tmp && mv %s.tmp %s && "
             "exec sleep 100)\r",
             pidfile, pidfile, pidfile);
    struct tty t;
    pid_t job = inner_shell_job(&t, line, pidfile);
    procfs_stat_t st;
    uint64_t job_start;
    ASSERT_OK(procfs_read_stat(job, &st));
    ASSERT_OK(procfs_start_time(job, &job_start));
    pid_t leader = st.pgrp;
    ASSERT_TRUE(leader != job);
    /* `true` has ended and the shell reaps it: polled, as no event here
     * says so. */
    uint64_t end = test_now_ms() + RUN_TEST_STEP_MS;
    while (procfs_read_stat(leader, &st) == 0) {
        ASSERT_TRUE(test_now_ms() < end);
        usleep(2000);
    }
    buf_reset(&t.out);
    ASSERT_OK(kill(t.pid, SIGTSTP));
    tty_expect(&t, "Stopped");
    await_state(job, 'T', true);
    tty_expect(&t, "inner$ ");
    buf_reset(&t.out);
    tty_send(&t, "fg\r");
    tty_expect(&t, "exec sleep 100 )"); /* the shell names the job */
    await_state(job, 'T', false);
    buf_reset(&t.out);
    ASSERT_OK(kill(t.pid, SIGINT));
    tty_expect(&t, "inner$ "); /* the job ended, the shell is back */
    uint64_t now_start;
    ASSERT_FALSE(procfs_start_time(job, &now_start) == 0 &&
                 now_start == job_start);
    tty_send(&t, "exit 0\r");
    ASSERT_EQ(tty_finish(&t), 0);
    buf_free(&t.out);
}

/* With no shell to resume it (rein leads its own session, an orphaned
 * group), Ctrl-Z stops neither rein nor the job for more than a moment:
 * the job goes on reading. */
TEST(run_ctrl_z_without_a_job_control_shell_stops_nothing)
{
    setup();
    char cmd[4 * PATH_MAX], pidfile[PATH_MAX];
    echo_job(cmd, sizeof cmd, pidfile, sizeof pidfile);
    const char *args[] = {"run", "--raw", "--", "sh", "-c", cmd, NULL};
    struct tty t;
    tty_start(&t, args, 80, 24);
    tu_await_pid_file(pidfile, RUN_TEST_STEP_MS);
    tty_send(&t, "one\r");
    tty_expect(&t, "got one");
    tty_send(&t, "\x1a");
    tty_send(&t, "two\r");
    tty_expect(&t, "got two");
    tty_send(&t, "\x04");
    ASSERT_EQ(tty_finish(&t), 0);
    buf_free(&t.out);
}

TEST(run_forwards_stdin_then_eof)
{
    setup();
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    ASSERT_EQ(write(p[1], "line one\npartial", 16), 16);
    close(p[1]);
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"run", "--raw", "--", "cat", NULL};
    ASSERT_EQ(run_rein(a, p[0], NULL, &out, &err), 0);
    close(p[0]);
    /* No echo of piped input: the output is cat's alone. */
    ASSERT_STR(out.p, "line one\npartial");
    buf_free(&out);
    buf_free(&err);
}

/* A line longer than a terminal's line discipline holds in canonical mode
 * (4095 bytes and its end). */
#define RUN_TEST_LONG_LINE 10000

/* A file or pipe on stdin is the command's own, byte for byte: through the
 * PTY, a long line was cut at 4095 bytes, CR LF came out as NL NL, ^W ^U
 * and DEL edited the line, ^C ^\ and ^Z sent signals (`cat > file` of
 * random bytes ended with 131 and an empty file), and ^D ended the input
 * early.  The command sees a file or a pipe, as it would without rein. */
TEST(run_passes_stdin_to_the_command_byte_for_byte)
{
    setup();
    buf_t data = BUF_INIT;
    for (int i = 0; i < 256; i++)
        buf_append(&data, (char[]){(char)i}, 1);
    buf_append_str(&data, "line1\r\nline2\r\nword \027X\ncut\025Y\n"
                          "del\177Z\nint\003quit\034stop\032eof\004\n");
    for (int i = 0; i < RUN_TEST_LONG_LINE; i++)
        buf_append(&data, "x", 1);
    buf_append_str(&data, "\npartial");
    char in[PATH_MAX], got[PATH_MAX], cmd[PATH_MAX + 64];
    snprintf(in, sizeof in, "%s/stdin.bin", test_tmpdir());
    snprintf(got, sizeof got, "%s/got.bin", test_tmpdir());
    int fd = open(in, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, data.p, data.len), (ssize_t)data.len);
    close(fd);
    snprintf(cmd, sizeof cmd, "test -t 0 && echo on-a-tty; cat > '%s'", got);
    const char *a[] = {"run", "--raw", "--", "/bin/sh", "-c", cmd, NULL};
    buf_t out = BUF_INIT, err = BUF_INIT, copy = BUF_INIT;
    for (int pipe_in = 0; pipe_in < 2; pipe_in++) {
        int src = open(in, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(src >= 0);
        int p[2] = {-1, -1};
        pid_t w = -1;
        if (pipe_in) { /* the same bytes through a pipe */
            ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
            fflush(NULL);
            ASSERT_TRUE((w = fork()) >= 0);
            if (w == 0) {
                close(p[0]);
                _exit(write(p[1], data.p, data.len) == (ssize_t)data.len
                          ? 0
                          : 1);
            }
            close(p[1]);
            close(src);
            src = p[0];
        }
        buf_reset(&out);
        ASSERT_EQ(run_rein(a, src, NULL, &out, &err), 0);
        close(src);
        if (w > 0) {
            int st;
            ASSERT_EQ(waitpid(w, &st, 0), w);
            ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        ASSERT_TRUE(lacks(out.p, "on-a-tty"));
        buf_reset(&copy);
        ASSERT_TRUE(tu_read_file(got, &copy));
        ASSERT_EQ(copy.len, data.len);
        ASSERT_TRUE(memcmp(copy.p, data.p, data.len) == 0);
    }
    buf_free(&copy);
    buf_free(&data);
    buf_free(&out);
    buf_free(&err);
}

/* The subject of repo's HEAD commit, into out (size n). */
static void git_subject(const char *repo, char *out, size_t n)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "git -C '%s' log -1 --format=%%s", repo);
    FILE *f = popen(cmd, "r");
    ASSERT_TRUE(f != NULL);
    ASSERT_TRUE(fgets(out, (int)n, f) != NULL);
    out[strcspn(out, "\n")] = 0;
    ASSERT_EQ(pclose(f), 0);
}

/* git merge, pull and revert open an editor on their message only on a
 * terminal, and rein runs them on a PTY.  With nobody at rein's terminal
 * (stdin /dev/null) the editor would wait for keys nobody types until the
 * hang-up (the merge failed with 129 after 4 s): rein gives git
 * GIT_EDITOR=true, and git commits with its own message as it does
 * without a terminal.  A person at the terminal gets the editor.  The
 * editor is git's default, vi (`editor` on Debian), here a script first
 * on PATH that says when it runs. */
TEST(run_git_opens_its_editor_only_for_a_person_at_the_terminal)
{
    setup();
    char bin[PATH_MAX], vi[PATH_MAX + 8], repo[PATH_MAX], path[PATH_MAX * 2];
    snprintf(bin, sizeof bin, "%s/bin", test_tmpdir());
    ASSERT_EQ(mkdir(bin, 0700), 0);
    /* vi, or `editor` where git is built to take it (Debian's). */
    static const char *const names[] = {"vi", "editor", NULL};
    for (const char *const *nm = names; *nm; nm++) {
        snprintf(vi, sizeof vi, "%s/%s", bin, *nm);
        write_file(vi, "#!/bin/sh\necho \"vi ran on ${1##*/}\"\n", 0755);
    }
    snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH"));
    setenv("PATH", path, 1);
    static const char *const unset[] = {"GIT_EDITOR", "VISUAL", "EDITOR",
                                        "GIT_MERGE_AUTOEDIT", NULL};
    for (const char *const *u = unset; *u; u++)
        unsetenv(*u);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    /* The person's terminal: on a dumb one (TERM=dumb, as a CI shell may
     * set it) git refuses its default editor outright, and rein passes
     * the person's TERM on to the command. */
    setenv("TERM", "xterm-256color", 1);
    snprintf(repo, sizeof repo, "%s/repo", test_tmpdir());
    char init[PATH_MAX * 2 + 512];
    snprintf(init, sizeof init,
             "set -e; git init -q -b main '%s'; cd '%s'; "
             "git config user.email t@example.com; git config user.name t; "
             "echo a > a; git add a; git commit -qm a; "
             "git checkout -qb topic; echo b > b; git add b; "
             "git commit -qm b; git checkout -q main; echo c > c; git add c; "
             "git commit -qm c",
             repo, repo);
    ASSERT_EQ(system(init), 0);

    char subject[256];
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *merge[] = {"run", "--json", "--", "git", "-C", repo,
                           "merge", "topic", NULL};
    ASSERT_EQ(run_rein(merge, -1, NULL, &out, &err), 0);
    ASSERT_TRUE(lacks(out.p, "vi ran"));
    json_error_t je;
    json_t *o = json_loads(out.p, 0, &je);
    ASSERT_TRUE(o != NULL);
    ASSERT_STR(json_string_value(json_object_get(o, "view")), "condense");
    ASSERT_TRUE(json_is_null(json_object_get(o, "hangup")));
    json_decref(o);
    git_subject(repo, subject, sizeof subject);
    ASSERT_STR(subject, "Merge branch 'topic'");

    buf_reset(&out);
    buf_reset(&err);
    const char *revert[] = {"run", "--raw", "--", "git", "-C", repo,
                            "revert", "HEAD^", NULL};
    ASSERT_EQ(run_rein(revert, -1, NULL, &out, &err), 0);
    ASSERT_TRUE(lacks(out.p, "vi ran"));
    git_subject(repo, subject, sizeof subject);
    ASSERT_STR(subject, "Revert \"c\"");

    /* A person at the terminal: git opens the editor, and the view is the
     * terminal's. */
    struct tty t;
    const char *again[] = {"run", "--", "git", "-C", repo, "revert",
                           "HEAD", NULL};
    tty_start(&t, again, 80, 24);
    tty_expect(&t, "vi ran on COMMIT_EDITMSG");
    ASSERT_EQ(tty_finish(&t), 0);
    git_subject(repo, subject, sizeof subject);
    ASSERT_STR(subject, "Revert \"Revert \"c\"\"");
    buf_free(&t.out);
    buf_free(&out);
    buf_free(&err);
}

/* With nobody at rein's terminal (stdin /dev/null), the command's
 * environment says so to the programs that listen (debconf, gh, pip,
 * git's credential prompt), where it is not set already; a person at the
 * terminal gets the environment as it is. */
TEST(run_tells_programs_nobody_is_at_the_terminal)
{
    setup();
    static const char *const vars[] = {"DEBIAN_FRONTEND",
                                       "GH_PROMPT_DISABLED", "PIP_NO_INPUT",
                                       "GIT_TERMINAL_PROMPT", NULL};
    for (const char *const *v = vars; *v; v++)
        unsetenv(*v);
    const char *show =
        "echo \"[$DEBIAN_FRONTEND][$GH_PROMPT_DISABLED][$PIP_NO_INPUT]"
        "[$GIT_TERMINAL_PROMPT]\"";
    const char *a[] = {"run", "--raw", "--", show, NULL};
    buf_t out = BUF_INIT, err = BUF_INIT;
    ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
    ASSERT_STR(out.p, "[noninteractive][1][1][0]\n");
    setenv("PIP_NO_INPUT", "0", 1); /* the person's own setting stays */
    buf_reset(&out);
    buf_reset(&err);
    ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
    ASSERT_STR(out.p, "[noninteractive][1][0][0]\n");
    unsetenv("PIP_NO_INPUT");

    struct tty t;
    tty_start(&t, a, 80, 24);
    ASSERT_EQ(tty_finish(&t), 0);
    ASSERT_CONTAINS(t.out.p, "[][][][]");
    buf_free(&t.out);
    buf_free(&out);
    buf_free(&err);
}

TEST(run_json_has_every_field)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"run", "--json", "--",
                       "echo 'error: bad thing'; echo fine; exit 3", NULL};
    ASSERT_EQ(run_rein(a, -1, test_tmpdir(), &out, &err), 3);
    json_error_t je;
    json_t *o = json_loads(out.p, 0, &je);
    ASSERT_TRUE(o != NULL);
    ASSERT_STR(json_string_value(json_object_get(o, "command")),
               "echo 'error: bad thing'; echo fine; exit 3");
    ASSERT_TRUE(json_is_true(json_object_get(o, "shell")));
    ASSERT_STR(json_string_value(json_object_get(o, "category")), "condense");
    ASSERT_EQ(json_integer_value(json_object_get(o, "exit_code")), 3);
    ASSERT_TRUE(json_is_null(json_object_get(o, "signal")));
    ASSERT_TRUE(json_is_integer(json_object_get(o, "duration_ms")));
    ASSERT_EQ(json_integer_value(json_object_get(o, "lines")), 2);
    ASSERT_EQ(json_integer_value(json_object_get(o, "bytes")), 22);
    ASSERT_TRUE(json_is_integer(json_object_get(o, "hazards")));
    ASSERT_EQ(json_array_size(json_object_get(o, "segments")), 3);
    ASSERT_CONTAINS(json_string_value(json_object_get(o, "output")),
                    "error: bad thing");
    const char *log = json_string_value(json_object_get(o, "log"));
    ASSERT_TRUE(log != NULL);
    /* The supervisor's log of the run: $REIN_STATE_DIR/logs/<id>.log. */
    ASSERT_TRUE(json_is_integer(json_object_get(o, "id")));
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, "%s/logs/%lld.log", test_tmpdir(),
             (long long)json_integer_value(json_object_get(o, "id")));
    ASSERT_STR(log, want);
    struct stat st;
    ASSERT_EQ(stat(log, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    ASSERT_EQ(st.st_size, 22);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/logs", test_tmpdir());
    ASSERT_EQ(stat(dir, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0700);
    ASSERT_TRUE(json_is_true(json_object_get(o, "ran")));
    ASSERT_TRUE(json_is_null(json_object_get(o, "danger")));
    json_decref(o);

    /* Nothing run is still one object, saying why. */
    buf_reset(&out);
    const char *b[] = {"run", "--json", "--", "mkfs.reintest x", NULL};
    ASSERT_EQ(run_rein(b, -1, test_tmpdir(), &out, &err), 125);
    o = json_loads(out.p, 0, &je);
    ASSERT_TRUE(o != NULL);
    ASSERT_TRUE(json_is_false(json_object_get(o, "ran")));
    ASSERT_TRUE(json_is_null(json_object_get(o, "id")));
    ASSERT_EQ(json_integer_value(json_object_get(o, "exit_code")), 125);
    ASSERT_STR(json_string_value(json_object_get(o, "category")),
               "dangerous");
    json_t *d = json_object_get(o, "danger");
    ASSERT_STR(json_string_value(json_object_get(d, "pattern")), "mkfs");
    ASSERT_STR(json_string_value(json_object_get(d, "decision")),
               "not run (no terminal to ask)");
    ASSERT_TRUE(json_is_null(json_object_get(o, "error")));
    json_decref(o);

    /* A command that cannot start: its object, its status, and why. */
    const char *nf[] = {"run", "--json", "--", "/nonexistent/rein-x", NULL};
    const char *nx[] = {"run", "--json", "--", "/etc/passwd", NULL};
    const char *const *cases[] = {nf, nx};
    const int codes[] = {127, 126};
    const char *whys[] = {"/nonexistent/rein-x: command not found",
                          "/etc/passwd: Permission denied"};
    for (size_t i = 0; i < 2; i++) {
        buf_reset(&out);
        ASSERT_EQ(run_rein(cases[i], -1, test_tmpdir(), &out, &err),
                  codes[i]);
        o = json_loads(out.p, 0, &je);
        ASSERT_TRUE(o != NULL);
        ASSERT_TRUE(json_is_false(json_object_get(o, "ran")));
        ASSERT_EQ(json_integer_value(json_object_get(o, "exit_code")),
                  codes[i]);
        ASSERT_STR(json_string_value(json_object_get(o, "error")), whys[i]);
        ASSERT_TRUE(json_integer_value(json_object_get(o, "duration_ms")) >=
                    0);
        json_decref(o);
    }
    buf_free(&out);
    buf_free(&err);
}

TEST(run_context_is_terse_with_the_command)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"run", "--context", "--", "echo", "hi there", NULL};
    ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
    ASSERT_TRUE(!strncmp(out.p, "$ echo 'hi there'\n", 18));
    ASSERT_CONTAINS(out.p, "hi there\n");
    ASSERT_CONTAINS(out.p, "[rein] exit 0");
    buf_free(&out);
    buf_free(&err);
}

/* ------------------------------------------------- the supervisor's run */

/* The one run in `rein ps --all --json` whose command contains needle
 * (a new reference), or a failed test. */
static json_t *ps_find(const char *needle)
{
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"ps", "--all", "--json", NULL};
    ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
    json_error_t je;
    json_t *arr = json_loads(out.p, 0, &je), *found = NULL;
    ASSERT_TRUE(json_is_array(arr));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *c = json_string_value(json_object_get(v, "command"));
        if (c && strstr(c, needle)) {
            ASSERT_TRUE(found == NULL);
            found = json_incref(v);
        }
    }
    json_decref(arr);
    buf_free(&out);
    buf_free(&err);
    if (!found)
        test_fail(__FILE__, __LINE__, "no run of \"%s\" in rein ps", needle);
    return found;
}

/* SIGTERM asks rein to end.  It is passed on to the command first, which
 * may end as it likes; one that ignores it (trap '' TERM, a wedged
 * process) is ended with all of its run REIN_SUP_GRACE_MS later, and the
 * run is recorded a cancel.  Before, rein waited for ever beside it, and
 * the SIGKILL a caller sends after its own grace left it to reconcile. */
TEST(run_sigterm_ignored_by_the_command_ends_the_run_after_the_grace)
{
    setup();
    /* `wait $!`, not a bare `wait`: the KILL reaches the child first, and
     * a bare wait then returns 0, so the shell could exit 0 by itself
     * before its own KILL landed (seen once on a loaded machine). */
    const char *argv[] = {rein_path(), "run", "--raw", "--", "/bin/sh", "-c",
                          "trap '' TERM; sh -c 'echo child $$; "
                          "exec sleep 300' & echo ready $$; wait $!",
                          NULL};
    pid_t pid;
    int pidfd, code;
    int out_fd = rein_start_piped(argv, &pid, &pidfd);
    buf_t out = BUF_INIT;
    int leader = expect_number(out_fd, &out, "ready ");
    int child = expect_number(out_fd, &out, "child ");
    uint64_t leader_st, child_st;
    ASSERT_OK(procfs_start_time(leader, &leader_st));
    ASSERT_OK(procfs_start_time(child, &child_st));
    uint64_t t0 = test_now_ms();
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    /* EOF once rein exits: within the grace and a step, or the test fails
     * (expect_fd gives up after RUN_TEST_STEP_MS). */
    struct pollfd pf = {.fd = out_fd, .events = POLLIN};
    for (;;) {
        ASSERT_INT(test_now_ms() - t0, <,
                   REIN_SUP_GRACE_MS + RUN_TEST_STEP_MS);
        if (poll(&pf, 1, 100) <= 0)
            continue;
        char b[4096];
        ssize_t k = read(out_fd, b, sizeof b);
        if (k <= 0)
            break;
        buf_append(&out, b, (size_t)k);
    }
    close(out_fd);
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    g_rein = -1;
    ASSERT_INT(test_now_ms() - t0, >=, REIN_SUP_GRACE_MS);
    ASSERT_EQ(code, 128 + SIGKILL);
    ASSERT_FALSE(procfs_alive(leader, leader_st));
    ASSERT_FALSE(procfs_alive(child, child_st));
    json_t *run = ps_find("trap '' TERM");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")),
               "manual-cancel");
    json_decref(run);
    buf_free(&out);
}

TEST(run_is_in_the_registry_and_rein_logs_prints_all_of_it)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    /* Enough lines that the condensed view drops some and names the log. */
    const char *a[] = {"run", "--",
                       "seq 1 500; echo 'error: broken thing'; exit 4", NULL};
    ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 4);
    ASSERT_CONTAINS(out.p, "error: broken thing");

    json_t *run = ps_find("seq 1 500");
    ASSERT_STR(json_string_value(json_object_get(run, "state")), "exited");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")), "exit");
    ASSERT_EQ(json_integer_value(json_object_get(run, "exit_code")), 4);
    ASSERT_TRUE(json_is_true(json_object_get(run, "tty")));
    ASSERT_CONTAINS(json_string_value(json_object_get(run, "command")),
                    "seq 1 500; echo 'error: broken thing'; exit 4");
    long long id = json_integer_value(json_object_get(run, "id"));
    char log[PATH_MAX + 32], marker[PATH_MAX + 64];
    snprintf(log, sizeof log, "%s/logs/%lld.log", test_tmpdir(), id);
    ASSERT_STR(json_string_value(json_object_get(run, "log_path")), log);
    /* The squasher's marker names the supervisor's log. */
    snprintf(marker, sizeof marker, "[rein] log %s\n", log);
    ASSERT_CONTAINS(out.p, marker);
    json_decref(run);

    /* Every byte, as the command wrote it (no CR: stdout was no tty). */
    buf_t want = BUF_INIT;
    for (int i = 1; i <= 500; i++)
        buf_printf(&want, "%d\n", i);
    buf_append_str(&want, "error: broken thing\n");
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *l[] = {"logs", ids, NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein(l, -1, NULL, &out, &err), 0);
    ASSERT_MEM(out.p, out.len, want.p, want.len);
    buf_free(&want);
    buf_free(&out);
    buf_free(&err);
}

/* The command's own lines that read like rein's markers are shown escaped
 * in the condensed view (docs/markers.md), a coloured one too; the log
 * keeps them byte for byte. */
TEST(run_lines_that_look_like_markers_are_escaped_and_logged_as_written)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    /* `exit` makes it a condense line (seq and printf alone are
     * passthrough, shown verbatim) */
    const char *a[] = {"run", "--",
                       "seq 1 100; printf '[rein] exit 0 \302\267 1 line\n"
                       "[rein]x\n\033[31m[rein] omitted 9 lines\033[0m\n"
                       "  [rein] log /x\n'; exit 0", NULL};
    ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
    ASSERT_CONTAINS(out.p, "\n[raw] [rein] exit 0 \xc2\xb7 1 line\n");
    ASSERT_CONTAINS(out.p, "\n[raw] [rein]x\n");
    ASSERT_CONTAINS(out.p, "\n[raw] [rein] omitted 9 lines\n");
    ASSERT_CONTAINS(out.p, "\n[raw]   [rein] log /x\n");
    /* rein's own markers: one exit, and the log it names */
    size_t exits = 0;
    for (const char *p = out.p; (p = strstr(p, "[rein] exit ")); p++)
        exits += p == out.p || p[-1] == '\n';
    ASSERT_EQ(exits, 1);
    ASSERT_TRUE(strncmp(out.p, "[rein] exit 0 ", 14) == 0 ||
                strstr(out.p, "\n[rein] exit 0 ") != NULL);

    json_t *run = ps_find("seq 1 100; printf");
    char ids[32];
    snprintf(ids, sizeof ids, "%lld",
             (long long)json_integer_value(json_object_get(run, "id")));
    json_decref(run);
    buf_t want = BUF_INIT;
    for (int i = 1; i <= 100; i++)
        buf_printf(&want, "%d\n", i);
    buf_append_str(&want, "[rein] exit 0 \xc2\xb7 1 line\n[rein]x\n"
                          "\033[31m[rein] omitted 9 lines\033[0m\n"
                          "  [rein] log /x\n");
    const char *l[] = {"logs", ids, NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein(l, -1, NULL, &out, &err), 0);
    ASSERT_MEM(out.p, out.len, want.p, want.len);
    buf_free(&want);
    buf_free(&out);
    buf_free(&err);
}

TEST(run_without_a_usable_state_dir_runs_nothing)
{
    setup();
    char mark[PATH_MAX], line[PATH_MAX + 16], file[PATH_MAX + 32],
        dir[PATH_MAX];
    snprintf(mark, sizeof mark, "%s/MARK", test_tmpdir());
    snprintf(line, sizeof line, "touch '%s'", mark);
    const char *a[] = {"run", "--", line, NULL};
    buf_t out = BUF_INIT, err = BUF_INIT;

    /* The state dir is a file. */
    snprintf(file, sizeof file, "%s/not-a-dir", test_tmpdir());
    write_file(file, "", 0600);
    setenv("REIN_STATE_DIR", file, 1);
    ASSERT_EQ(run_rein(a, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "rein: cannot create a log in the state dir ");
    ASSERT_CONTAINS(err.p, file);
    ASSERT_CONTAINS(err.p, "not run");
    ASSERT_FALSE(exists(mark));

    /* The registry in it is no database: no fallback to an unrecorded
     * run, whose output and ownership nobody could find again. */
    snprintf(dir, sizeof dir, "%s/state", test_tmpdir());
    ASSERT_EQ(mkdir(dir, 0700), 0);
    snprintf(file, sizeof file, "%s/%s", dir, REGISTRY_FILE);
    write_file(file, "this is not sqlite, not at all, not even close\n", 0600);
    setenv("REIN_STATE_DIR", dir, 1);
    buf_reset(&err);
    ASSERT_EQ(run_rein(a, -1, test_tmpdir(), &out, &err), 125);
    ASSERT_CONTAINS(err.p, "rein: cannot create a log in the state dir ");
    ASSERT_CONTAINS(err.p, dir);
    ASSERT_FALSE(exists(mark));
    /* One line, nothing else. */
    ASSERT_EQ(strchr(err.p, '\n'), err.p + err.len - 1);
    buf_free(&out);
    buf_free(&err);
}

/* A relative REIN_STATE_DIR is taken from where rein starts, and recorded
 * absolute: the log path in the registry is opened by rein processes in
 * other directories. */
TEST(run_relative_state_dir_is_recorded_absolute)
{
    setup();
    char proj[PATH_MAX], abs[PATH_MAX + 16];
    snprintf(proj, sizeof proj, "%s/proj", test_tmpdir());
    ASSERT_EQ(mkdir(proj, 0700), 0);
    setenv("REIN_STATE_DIR", "rel-state", 1);
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"run", "--raw", "--", "echo", "hi", NULL};
    ASSERT_EQ(run_rein(a, -1, proj, &out, &err), 0);
    snprintf(abs, sizeof abs, "%s/rel-state", proj);
    setenv("REIN_STATE_DIR", abs, 1);
    buf_reset(&out);
    buf_reset(&err);
    const char *l[] = {"logs", "1000", NULL};
    ASSERT_EQ(run_rein(l, -1, "/", &out, &err), 0);
    ASSERT_STR(out.p, "hi\n");
    buf_free(&out);
    buf_free(&err);
}

/* Says the one run whose command holds needle is run `id`, exited for
 * `reason`. */
static void assert_ended(const char *needle, long long id, const char *reason)
{
    json_t *run = ps_find(needle);
    ASSERT_EQ(json_integer_value(json_object_get(run, "id")), id);
    ASSERT_STR(json_string_value(json_object_get(run, "state")), "exited");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")), reason);
    json_decref(run);
}

/* Makes this test a subreaper, so that the watchman of each rein it
 * starts (which its first process leaves to init, or to the nearest
 * subreaper) becomes this test's own child: one it may signal. */
static void adopt_watchmen(void)
{
    ASSERT_OK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
}

/* The watchman of rein `owner`, after adopt_watchmen: the child of ours
 * that runs `rein reconcile --watch FD --pid <owner> ...`; -1 if none is
 * (yet) ours. */
static pid_t watchman_of(pid_t owner)
{
    pid_t *kids, found = -1;
    size_t n;
    char me[32];
    snprintf(me, sizeof me, "%ld", (long)owner);
    ASSERT_OK(procfs_children(getpid(), &kids, &n));
    for (size_t i = 0; i < n && found < 0; i++) {
        char **argv;
        if (procfs_cmdline(kids[i], &argv) < 0)
            continue;
        size_t argc = 0;
        while (argv[argc])
            argc++;
        if (argc > 5 && !strcmp(argv[1], "reconcile") &&
            !strcmp(argv[2], "--watch") && !strcmp(argv[5], me))
            found = kids[i];
        procfs_strv_free(argv);
    }
    free(kids);
    return found;
}

/* Reaps the adopted watchman w and says it exited 0: it saw its owner
 * stop cleanly, or reconciled after its death. */
static void watchman_exited_ok(pid_t w)
{
    int code;
    ASSERT_OK(spawn_reap(w, -1, &code));
    ASSERT_EQ(code, 0);
}

/* Kills and reaps the watchman of rein `owner` (adopted: our child), as
 * when rein and its watchman die together; what rein leaves then waits
 * for a reconcile. */
static void watchman_kill(pid_t owner)
{
    pid_t w = watchman_of(owner);
    ASSERT_INT(w, >, 1);
    ASSERT_OK(kill(w, SIGKILL));
    ASSERT_OK(spawn_reap(w, -1, NULL));
}

/* rein dies without a chance to clean up (SIGKILL) while its command
 * ignores the hang-up of its terminal and has a job in a session of its
 * own: rein's watchman ends both at once, with no other rein started,
 * records the run orphan-reaped and exits.  Before the watchman, both ran
 * on until someone ran `rein reconcile`.  A rein that ends cleanly tells
 * its watchman so, and the watchman leaves without reconciling. */
TEST_T(run_killed_by_sigkill_has_what_it_started_ended_by_its_watchman, 60)
{
    setup();
    adopt_watchmen();
    const char *argv[] = {rein_path(), "run", "--raw", "--",
                          "trap '' HUP; "
                          "setsid sh -c 'echo job=$$; exec sleep 301' & "
                          "exec sleep 300",
                          NULL};
    pid_t pid;
    int pidfd;
    int out_fd = rein_start_piped(argv, &pid, &pidfd);
    buf_t out = BUF_INIT;
    pid_t job = expect_number(out_fd, &out, "job=");
    json_t *run = ps_find("exec sleep 300");
    pid_t cmd = (pid_t)json_integer_value(json_object_get(run, "pid"));
    long long id = json_integer_value(json_object_get(run, "id"));
    json_decref(run);
    ASSERT_TRUE(cmd > 1 && job > 1 && test_pid_alive(cmd) &&
                test_pid_alive(job));
    ASSERT_INT(getsid(job), ==, job); /* outside the terminal's session */
    pid_t w = watchman_of(pid);
    ASSERT_INT(w, >, 1);
    ASSERT_INT(getsid(w), ==, w); /* and so is the watchman */

    rein_crash(pid, pidfd, out_fd, &out);
    ASSERT_TRUE(test_wait_gone(cmd));
    ASSERT_TRUE(test_wait_gone(job));
    watchman_exited_ok(w);
    assert_ended("exec sleep 300", id, "orphan-reaped");

    /* A clean end: the command ends when its input does. */
    int in[2];
    ASSERT_OK(pipe2(in, O_CLOEXEC));
    const char *clean[] = {rein_path(), "run", "--raw", "--",
                           "echo ready; exec cat", NULL};
    buf_reset(&out);
    pid = 0;
    out_fd = tu_spawn_piped(clean, SPAWN_SESSION, in[0], &pid, &pidfd);
    g_rein = pid;
    close(in[0]);
    expect_fd(out_fd, &out, "ready\n");
    w = watchman_of(pid);
    ASSERT_INT(w, >, 1);
    close(in[1]);
    ASSERT_EQ(rein_finish(pid, pidfd, out_fd, &out), 0);
    watchman_exited_ok(w);
    run = ps_find("exec cat");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")), "exit");
    json_decref(run);
    buf_free(&out);
}

TEST_T(run_killed_with_its_watchman_leaves_its_command_to_reconcile, 60)
{
    setup();
    adopt_watchmen();
    /* The command outlives the hang-up of its terminal when rein dies
     * (HUP ignored, kept across exec) and says when it is ready.  Its
     * watchman dies first, so nothing ends it but a reconcile. */
    const char *argv[] = {rein_path(), "run", "--raw", "--",
                          "trap '' HUP; echo ready; exec sleep 300", NULL};
    pid_t pid;
    int pidfd;
    int out_fd = rein_start_piped(argv, &pid, &pidfd);
    buf_t out = BUF_INIT;
    expect_fd(out_fd, &out, "ready\n");
    json_t *run = ps_find("exec sleep 300");
    ASSERT_STR(json_string_value(json_object_get(run, "state")), "running");
    ASSERT_TRUE(json_is_false(json_object_get(run, "orphaned")));
    pid_t cmd = (pid_t)json_integer_value(json_object_get(run, "pid"));
    long long id = json_integer_value(json_object_get(run, "id"));
    json_decref(run);
    ASSERT_TRUE(cmd > 1 && test_pid_alive(cmd));

    /* A follower of its log, asleep before the owner dies. */
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *fa[] = {rein_path(), "logs", ids, "-f", NULL};
    pid_t fpid;
    int fpidfd, fcode;
    int f_fd = tu_spawn_piped(fa, SPAWN_SESSION, -1, &fpid, &fpidfd);
    buf_t fout = BUF_INIT;
    expect_fd(f_fd, &fout, "ready\n");

    /* rein dies without a chance to clean up: the crash case. */
    watchman_kill(pid);
    rein_crash(pid, pidfd, out_fd, &out);
    ASSERT_TRUE(test_pid_alive(cmd)); /* left behind, still recorded */
    run = ps_find("exec sleep 300");
    ASSERT_STR(json_string_value(json_object_get(run, "state")), "running");
    /* The last state its owner wrote, but nobody will write another: ps
     * says so, and which verb ends it. */
    ASSERT_TRUE(json_is_true(json_object_get(run, "orphaned")));
    json_decref(run);
    buf_t pout = BUF_INIT, perr = BUF_INIT;
    const char *pa[] = {"ps", NULL};
    ASSERT_EQ(run_rein(pa, -1, NULL, &pout, &perr), 0);
    ASSERT_CONTAINS(pout.p, " orphaned ");
    ASSERT_TRUE(strstr(pout.p, " running ") == NULL);
    ASSERT_CONTAINS(perr.p, "`rein reconcile` ends it");
    buf_free(&pout);
    buf_free(&perr);

    /* The follower wakes on the owner's death and stops: nothing more can
     * be logged.  It used to wait for a reconcile forever.  Started after
     * the death, a follower stops at once. */
    tu_read_all(f_fd, &fout);
    close(f_fd);
    ASSERT_OK(spawn_reap(fpid, fpidfd, &fcode));
    if (fpidfd >= 0)
        close(fpidfd);
    ASSERT_EQ(fcode, 0);
    ASSERT_STR(fout.p, "ready\n");
    buf_t lout = BUF_INIT, lerr = BUF_INIT;
    const char *la[] = {"logs", ids, "-f", NULL};
    ASSERT_EQ(run_rein(la, -1, NULL, &lout, &lerr), 0);
    ASSERT_STR(lout.p, "ready\n");
    ASSERT_CONTAINS(lerr.p, "its owner is gone, so nothing more will be "
                            "logged");
    buf_free(&fout);
    buf_free(&lout);
    buf_free(&lerr);

    buf_t rout = BUF_INIT, rerr = BUF_INIT;
    const char *r[] = {"reconcile", NULL};
    ASSERT_EQ(run_rein(r, -1, NULL, &rout, &rerr), 0);
    ASSERT_CONTAINS(rout.p, "orphans ended 1");
    ASSERT_FALSE(test_pid_alive(cmd));
    assert_ended("exec sleep 300", id, "orphan-reaped");
    buf_free(&rout);
    buf_free(&rerr);
    buf_free(&out);
}

/* More stdin than a pipe or a terminal holds (4 MiB): every byte arrives,
 * from a regular file and from a pipe whose writer never waits. */
#define RUN_TEST_BIG_LINES 40000
#define RUN_TEST_LINE_LEN 105 /* with its newline */

/* A log the disk refuses part of (here a file size limit, as a full disk
 * would): the run goes on and keeps the command's status, and the view,
 * stderr and --json all say the log is incomplete.  It used to say
 * nothing, and the `log` marker promised every byte. */
/* A damaged state dir: the message names the part that is wrong and its
 * file, not "cannot create a log" with the registry's errno. */
TEST(run_names_what_is_wrong_with_the_state_dir)
{
    setup();
    static const struct {
        const char *what; /* what is planted in the state dir */
        const char *says;
    } cases[] = {
        {"registry.db", "/registry.db: enable WAL: file is not a database"},
        {"events.jsonl/", "/events.jsonl: Is a directory"},
        {"logs@", "/logs: Not a directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[PATH_MAX], path[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/bad%zu", test_tmpdir(), i);
        ASSERT_OK(mkdir(dir, 0700));
        /* A trailing '/' plants a directory, '@' a dangling symlink,
         * nothing a file of junk. */
        const char *w = cases[i].what;
        size_t wl = strlen(w);
        char kind = w[wl - 1];
        bool plain = kind != '/' && kind != '@';
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)(plain ? wl : wl - 1),
                 w);
        if (kind == '/')
            ASSERT_OK(mkdir(path, 0700));
        else if (kind == '@')
            ASSERT_OK(symlink("/nonexistent/rein-test", path));
        else
            write_file(path, "this is no database, not at all\n", 0600);
        setenv("REIN_STATE_DIR", dir, 1);
        const char *args[] = {"run", "--", "echo", "hi", NULL};
        buf_t out = BUF_INIT, err = BUF_INIT;
        ASSERT_EQ(run_rein(args, -1, NULL, &out, &err), 125);
        ASSERT_CONTAINS(err.p, cases[i].says);
        ASSERT_TRUE(out.len == 0 || !strstr(out.p, "hi"));
        buf_free(&out);
        buf_free(&err);
    }
}

TEST_T(run_says_when_its_log_is_incomplete, 60)
{
    setup();
    const char *argv[] = {
        "/bin/bash", "-c",
        "ulimit -f 1024; trap '' XFSZ; exec \"$0\" \"$@\"", rein_path(),
        "run", "--json", "--",
        "seq 1 300000; echo 'x.c:1:1: error: late'; exit 3", NULL};
    buf_t out = BUF_INIT, err = BUF_INIT;
    ASSERT_EQ(run_argv(argv, -1, NULL, &out, &err), 3);
    json_error_t je;
    json_t *o = json_loads(out.p, 0, &je);
    ASSERT_TRUE(o != NULL);
    const char *e = json_string_value(json_object_get(o, "error"));
    ASSERT_TRUE(e != NULL);
    ASSERT_CONTAINS(e, "the log is incomplete: ");
    ASSERT_CONTAINS(e, "(File too large)");
    ASSERT_CONTAINS(err.p, ": the log is incomplete: ");
    const char *view = json_string_value(json_object_get(o, "output"));
    ASSERT_CONTAINS(view, "x.c:1:1: error: late");
    ASSERT_CONTAINS(view, " (incomplete: ");
    ASSERT_CONTAINS(view, " bytes lost)\n");
    json_decref(o);
    buf_free(&out);
    buf_free(&err);
}

TEST_T(run_killed_while_exiting_keeps_the_commands_exit_code, 60)
{
    setup();
    adopt_watchmen();
    /* The command exits 5 and leaves a TERM-ignoring child: the run is
     * `exiting` (the child in its grace) when rein dies.  The exit code
     * used to be written only at the end, so reconciliation recorded the
     * run orphan-reaped with no exit code at all. */
    char line[PATH_MAX * 2 + 256];
    snprintf(line, sizeof line,
             "sh -c 'trap \"\" TERM HUP; touch %s/armed; exec sleep 300' & "
             "while [ ! -e %s/armed ]; do sleep 0.01; done; echo ready; "
             "exit 5",
             test_tmpdir(), test_tmpdir());
    const char *argv[] = {rein_path(), "run", "--raw", "--", line, NULL};
    pid_t pid;
    int pidfd;
    int out_fd = rein_start_piped(argv, &pid, &pidfd);
    buf_t out = BUF_INIT;
    expect_fd(out_fd, &out, "ready\n");
    uint64_t end = test_now_ms() + RUN_TEST_STEP_MS;
    json_t *run;
    for (;;) { /* no event tells another process the state changed */
        run = ps_find("exec sleep 300");
        if (!strcmp(json_string_value(json_object_get(run, "state")),
                    "exiting"))
            break;
        if (test_now_ms() >= end)
            test_fail(__FILE__, __LINE__, "state %s",
                      json_string_value(json_object_get(run, "state")));
        json_decref(run);
        usleep(10000);
    }
    ASSERT_EQ(json_integer_value(json_object_get(run, "exit_code")), 5);
    json_decref(run);
    watchman_kill(pid); /* the reconcile below is the test's */
    rein_crash(pid, pidfd, out_fd, &out);

    buf_t rout = BUF_INIT, rerr = BUF_INIT;
    const char *r[] = {"reconcile", NULL};
    ASSERT_EQ(run_rein(r, -1, NULL, &rout, &rerr), 0);
    run = ps_find("exec sleep 300");
    ASSERT_STR(json_string_value(json_object_get(run, "state")), "exited");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")), "exit");
    ASSERT_EQ(json_integer_value(json_object_get(run, "exit_code")), 5);
    json_decref(run);
    buf_free(&rout);
    buf_free(&rerr);
    buf_free(&out);
}

TEST_T(reconcile_ends_a_dead_runs_session_members_at_pgid, 60)
{
    setup();
    adopt_watchmen();
    /* At the pgid level nothing holds a process that left the run's tree
     * and its process group but its session: a job of its own group (set
     * -m) whose parent exited is re-parented away from the leader.
     * Reconciliation after rein's death ends it: through the descendants
     * the live supervisor recorded, and, where it died before it saw the
     * job, through the run's session (doom_session). */
    setenv("REIN_CONTAINMENT", "pgid", 1);
    char f[PATH_MAX], line[3 * PATH_MAX + 256];
    snprintf(f, sizeof f, "%s/orphan.pid", test_tmpdir());
    snprintf(line, sizeof line,
             "trap '' TERM HUP; echo ready; "
             "sh -c 'set -m; sleep 300 & echo $! > %s.tmp; mv %s.tmp %s'; "
             "exec sleep 301",
             f, f, f);
    const char *argv[] = {rein_path(), "run", "--raw", "--", line, NULL};
    pid_t pid;
    int pidfd;
    int out_fd = rein_start_piped(argv, &pid, &pidfd);
    buf_t out = BUF_INIT;
    expect_fd(out_fd, &out, "ready\n");
    uint64_t end = test_now_ms() + RUN_TEST_STEP_MS;
    while (!exists(f)) { /* another process's file: no event to wait on */
        ASSERT_INT(test_now_ms(), <, end);
        usleep(10000);
    }
    buf_t pidtext = BUF_INIT;
    ASSERT_TRUE(tu_read_file(f, &pidtext));
    pid_t orphan = (pid_t)atol(pidtext.p);
    buf_free(&pidtext);
    ASSERT_TRUE(orphan > 1 && test_pid_alive(orphan));
    json_t *live = ps_find("exec sleep 301");
    ASSERT_STR(json_string_value(json_object_get(live, "containment")), "pgid");
    json_decref(live);
    watchman_kill(pid); /* the reconcile below is the test's */
    rein_crash(pid, pidfd, out_fd, &out);
    ASSERT_TRUE(test_pid_alive(orphan));

    buf_t rout = BUF_INIT, rerr = BUF_INIT;
    const char *r[] = {"reconcile", NULL};
    ASSERT_EQ(run_rein(r, -1, NULL, &rout, &rerr), 0);
    ASSERT_FALSE(test_pid_alive(orphan));
    json_t *run = ps_find("exec sleep 301");
    ASSERT_STR(json_string_value(json_object_get(run, "state")), "exited");
    json_decref(run);
    buf_free(&rout);
    buf_free(&rerr);
    buf_free(&out);
}

TEST_T(run_forwards_more_stdin_than_it_holds, 60)
{
    setup();
    char path[PATH_MAX], want[32];
    snprintf(path, sizeof path, "%s/big.txt", test_tmpdir());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    char line[RUN_TEST_LINE_LEN];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (int i = 0; i < RUN_TEST_BIG_LINES; i++)
        ASSERT_EQ(write(fd, line, sizeof line), (ssize_t)sizeof line);
    close(fd);
    snprintf(want, sizeof want, "%d\n",
             RUN_TEST_BIG_LINES * RUN_TEST_LINE_LEN);

    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"run", "--raw", "--", "wc", "-c", NULL};
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(run_rein(a, fd, NULL, &out, &err), 0);
    close(fd);
    ASSERT_STR(out.p, want);

    /* A pipe, fed by a writer that never waits for the child. */
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t w = fork();
    ASSERT_TRUE(w >= 0);
    if (w == 0) {
        close(p[0]);
        int in = open(path, O_RDONLY | O_CLOEXEC);
        char b[65536];
        ssize_t k;
        while (in >= 0 && (k = read(in, b, sizeof b)) > 0)
            if (write(p[1], b, (size_t)k) != k)
                _exit(1);
        _exit(0);
    }
    close(p[1]);
    buf_reset(&out);
    ASSERT_EQ(run_rein(a, p[0], NULL, &out, &err), 0);
    close(p[0]);
    int st;
    ASSERT_EQ(waitpid(w, &st, 0), w);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ASSERT_STR(out.p, want);
    buf_free(&out);
    buf_free(&err);
}

/* ------------------------------------------- with its stdin at its end */

/* Runs rein like run_rein, but waits at most ms for it: a rein still
 * running then is killed (its whole group; its command goes with the PTY)
 * and fails the test, since a hang is what these tests look for.
 * *took_ms (may be NULL) is how long it ran. */
static int run_rein_within(const char *const *args, int fd_in, uint64_t ms,
                           buf_t *out, buf_t *err, uint64_t *took_ms)
{
    const char *argv[RUN_TEST_ARGS_MAX + 2];
    rein_argv(args, argv);
    int po[2], pe[2];
    ASSERT_EQ(pipe2(po, O_CLOEXEC | O_NONBLOCK), 0);
    ASSERT_EQ(pipe2(pe, O_CLOEXEC | O_NONBLOCK), 0);
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.fd_in = fd_in;
    o.fd_out = po[1];
    o.fd_err = pe[1];
    o.cwd = test_tmpdir();
    pid_t pid;
    int pidfd, code;
    uint64_t t0 = test_now_ms(), end = t0 + ms;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    g_rein = pid;
    close(po[1]);
    close(pe[1]);
    struct pollfd p[2] = {{.fd = po[0], .events = POLLIN},
                          {.fd = pe[0], .events = POLLIN}};
    buf_t *to[2] = {out, err};
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        uint64_t now = test_now_ms();
        if (now >= end) {
            kill(-pid, SIGKILL);
            test_fail(__FILE__, __LINE__,
                      "rein still running after %llu ms; output \"%s\"",
                      (unsigned long long)ms, out->p ? out->p : "");
        }
        if (poll(p, 2, (int)(end - now)) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            char b[4096];
            ssize_t k;
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            while ((k = read(p[i].fd, b, sizeof b)) > 0)
                buf_append(to[i], b, (size_t)k);
            if (k == 0) {
                close(p[i].fd);
                p[i].fd = -1;
            }
        }
    }
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    g_rein = -1;
    if (took_ms)
        *took_ms = test_now_ms() - t0;
    if (pidfd >= 0)
        close(pidfd);
    return code;
}

/* Watches rein's pidfd for ms: fails the test if rein ends meanwhile.
 * A bounded look for something that must not happen (a hang-up), not a
 * synchronisation: what follows waits on output. */
static void expect_running_for(pid_t pid, int pidfd, uint64_t ms)
{
    uint64_t end = test_now_ms() + ms;
    for (uint64_t now; (now = test_now_ms()) < end;) {
        if (pidfd < 0) {
            /* No pidfd (valgrind): poll the process itself. */
            siginfo_t si = {0};
            ASSERT_EQ(waitid(P_PID, (id_t)pid, &si,
                             WEXITED | WNOHANG | WNOWAIT), 0);
            if (si.si_pid == pid)
                test_fail(__FILE__, __LINE__, "rein ended early");
            struct pollfd none = {.fd = -1};
            poll(&none, 1, 20);
            continue;
        }
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        if (poll(&p, 1, (int)(end - now)) > 0)
            test_fail(__FILE__, __LINE__, "rein ended early");
    }
}

/* Counts the lines of out that are markers of kind (e.g. "hangup"), each
 * checked against the marker syntax. */
static int markers_of(const buf_t *out, const char *kind)
{
    char prefix[64];
    int n = 0;
    snprintf(prefix, sizeof prefix, "[rein] %s ", kind);
    for (const char *p = out->p; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= strlen(prefix) && !strncmp(p, prefix, strlen(prefix))) {
            ASSERT_TRUE(tu_is_marker(p, len));
            n++;
        }
        p = e ? e + 1 : p + len;
    }
    return n;
}

/* --json's boolean field name is want. */
static void assert_json_flag(const buf_t *out, const char *name, bool want)
{
    json_t *o = json_loads(out->p, 0, NULL);
    ASSERT_TRUE(o != NULL);
    json_t *v = json_object_get(o, name);
    ASSERT_TRUE(json_is_boolean(v));
    ASSERT_EQ(json_is_true(v), want);
    json_decref(o);
}

/* --json's background_ended is the boolean want. */
static void assert_background_ended(const buf_t *out, bool want)
{
    assert_json_flag(out, "background_ended", want);
}

/* The same job not ignoring SIGHUP: as the command (its terminal's
 * session leader) exits, the kernel hangs up the terminal's foreground
 * group, the job's, and the job dies of it before rein looks.  It used to
 * be reported nowhere (the run looked as if it left nothing); now its own
 * `background` marker says so, and --json's background_hung_up, while
 * background_ended stays false: rein ended nothing.  The command waits on
 * a FIFO until the job runs. */
TEST(run_background_job_killed_by_the_hangup_is_said)
{
    setup();
    char cmd[2 * PATH_MAX + 256];
    snprintf(cmd, sizeof cmd,
             "f='%s/hup.fifo'; rm -f \"$f\"; mkfifo \"$f\"; "
             "sh -c 'echo up > \"$0\"; exec sleep 300' \"$f\" & "
             "echo \"job $!\"; cat \"$f\"; echo started",
             test_tmpdir());
    const char *modes[] = {"--context", "--raw", "--json"};
    for (size_t m = 0; m < 3; m++) {
        buf_t out = BUF_INIT, err = BUF_INIT;
        const char *a[] = {"run", modes[m], "--", "/bin/sh", "-c", cmd, NULL};
        ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
        const char *job = strstr(out.p ? out.p : "", "job ");
        ASSERT_TRUE(job != NULL);
        ASSERT_FALSE(test_pid_alive((pid_t)atol(job + 4)));
        const buf_t *where = m == 1 ? &err : &out;
        if (m < 2) {
            ASSERT_EQ(markers_of(where, "background"), 1);
            ASSERT_CONTAINS(where->p,
                            "[rein] background processes the command left "
                            "running were killed by the terminal's hangup "
                            "as it exited\n");
        }
        if (m == 1)
            ASSERT_EQ(markers_of(&out, "background"), 0);
        if (m == 2) {
            assert_json_flag(&out, "background_hung_up", true);
            assert_background_ended(&out, false);
        }
        buf_free(&out);
        buf_free(&err);
    }
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *pj[] = {"run", "--json", "--", "/bin/sh", "-c", "echo plain",
                        NULL};
    ASSERT_EQ(run_rein(pj, -1, NULL, &out, &err), 0);
    assert_json_flag(&out, "background_hung_up", false);
    buf_free(&out);
    buf_free(&err);
}

/* `rein run -- sh -c 'server & echo started'`: the job (ignoring the
 * hangup of the terminal's end) is still running when the command exits.
 * rein ends it, as it ends whatever a run leaves, and says so: a
 * `background` marker after the summary (stderr under --raw) and
 * --json's background_ended.  A command that leaves nothing says
 * nothing.  The command waits on a FIFO until the job's trap is set. */
TEST(run_background_job_left_running_is_ended_and_said)
{
    setup();
    char cmd[2 * PATH_MAX + 256];
    snprintf(cmd, sizeof cmd,
             "f='%s/bg.fifo'; rm -f \"$f\"; mkfifo \"$f\"; "
             "(trap '' HUP; echo up > \"$f\"; exec sleep 300) & "
             "echo \"job $!\"; cat \"$f\"; echo started",
             test_tmpdir());
    const char *modes[] = {"--context", "--raw", "--json"};
    for (size_t m = 0; m < 3; m++) {
        buf_t out = BUF_INIT, err = BUF_INIT;
        const char *a[] = {"run", modes[m], "--", "/bin/sh", "-c", cmd, NULL};
        ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
        const char *job = strstr(out.p ? out.p : "", "job ");
        ASSERT_TRUE(job != NULL);
        ASSERT_FALSE(test_pid_alive((pid_t)atol(job + 4)));
        if (m == 0)
            ASSERT_EQ(markers_of(&out, "background"), 1);
        if (m == 1) {
            ASSERT_EQ(markers_of(&out, "background"), 0);
            ASSERT_EQ(markers_of(&err, "background"), 1);
        }
        if (m == 2)
            assert_background_ended(&out, true);
        buf_free(&out);
        buf_free(&err);
    }
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *plain[] = {"run", "--", "/bin/sh", "-c", "echo plain", NULL};
    ASSERT_EQ(run_rein(plain, -1, NULL, &out, &err), 0);
    ASSERT_EQ(markers_of(&out, "background"), 0);
    buf_reset(&out);
    const char *pj[] = {"run", "--json", "--", "/bin/sh", "-c", "echo plain",
                        NULL};
    ASSERT_EQ(run_rein(pj, -1, NULL, &out, &err), 0);
    assert_background_ended(&out, false);
    buf_free(&out);
    buf_free(&err);
}

TEST(run_input_over_answers_every_cooked_read_with_eof)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    char path[PATH_MAX];

    /* Two prompts on the terminal, stdin /dev/null: each read of the
     * terminal gets its own EOF. */
    const char *two[] = {"run", "--raw", "--", "/bin/sh", "-c",
                         "exec </dev/tty; printf 'first? '; read a; "
                         "printf 'second? '; read b; echo done",
                         NULL};
    ASSERT_EQ(run_rein_within(two, -1, RUN_TEST_STEP_MS, &out, &err, NULL),
              0);
    ASSERT_STR(out.p, "first? second? done\n");

    /* A file is the command's own stdin: its lines, then its end for
     * each cat. */
    snprintf(path, sizeof path, "%s/in.txt", test_tmpdir());
    write_file(path, "abc\n", 0600);
    const char *cats[] = {"run", "--raw", "--", "/bin/sh", "-c",
                          "cat; cat; echo done", NULL};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    buf_reset(&out);
    ASSERT_EQ(run_rein_within(cats, fd, RUN_TEST_STEP_MS, &out, &err, NULL),
              0);
    close(fd);
    ASSERT_STR(out.p, "abc\ndone\n");

    /* A last line without its newline is delivered as it is. */
    write_file(path, "abc", 0600);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    buf_reset(&out);
    ASSERT_EQ(run_rein_within(cats, fd, RUN_TEST_STEP_MS, &out, &err, NULL),
              0);
    close(fd);
    ASSERT_STR(out.p, "abcdone\n");

    /* No stdin at all (fd 0 closed): the terminal is the command's stdin,
     * its input over. */
    char script[PATH_MAX + 128];
    snprintf(script, sizeof script,
             "exec <&-; exec '%s' run --raw -- /bin/sh -c "
             "'read a; read b; echo done'",
             rein_path());
    const char *closed[] = {"/bin/sh", "-c", script, NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = closed[0];
    o.argv = closed;
    buf_reset(&out);
    ASSERT_EQ(tu_run(&o, &out), 0);
    ASSERT_STR(out.p, "done\n");
    buf_free(&out);
    buf_free(&err);
}

/* Password prompts turn echo off and flush what is queued (TCSAFLUSH):
 * an EOF sent ahead of them was lost, and they waited for ever. */
TEST(run_input_over_ends_password_prompts_with_eof)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *sh[] = {"run", "--", "/bin/sh", "-c",
                        "exec </dev/tty; printf 'Password: '; "
                        "stty -echo; read -r pw; "
                        "echo \"read=$?\"; printf 'Again: '; read -r pw2; "
                        "echo \"again=$?\"; stty echo; exit 4",
                        NULL};
    ASSERT_EQ(run_rein_within(sh, -1, RUN_TEST_STEP_MS, &out, &err, NULL), 4);
    ASSERT_CONTAINS(out.p, "Password: read=1");
    ASSERT_CONTAINS(out.p, "Again: again=1");
    ASSERT_EQ(markers_of(&out, "hangup"), 0);

    /* Python's getpass: EOFError at once, as with < /dev/null. */
    spawn_opts_t o;
    spawn_opts_init(&o);
    const char *probe[] = {"python3", "-c", "import getpass", NULL};
    o.file = probe[0];
    o.argv = probe;
    buf_reset(&out);
    if (tu_run(&o, &out) != 0)
        SKIP("no python3");
    const char *py[] = {"run", "--", "python3", "-c",
                        "import getpass; getpass.getpass()", NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein_within(py, -1, RUN_TEST_STEP_MS, &out, &err, NULL), 1);
    ASSERT_CONTAINS(out.p, "Password: ");
    ASSERT_CONTAINS(out.p, "EOFError");
    buf_free(&out);
    buf_free(&err);
}

TEST(run_input_over_hangs_up_a_raw_read_after_the_grace)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    uint64_t took;
    const char *a[] = {"run", "--", "/bin/sh", "-c",
                       "exec </dev/tty; printf 'key? '; stty raw -echo; "
                       "dd bs=1 count=1 2>/dev/null | od -An -tx1; "
                       "echo not-reached",
                       NULL};
    ASSERT_EQ(run_rein_within(a, -1, RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                              &out, &err, &took),
              128 + SIGHUP);
    ASSERT_TRUE(took >= RUN_NO_INPUT_HANGUP_MS);
    ASSERT_EQ(markers_of(&out, "hangup"), 1);
    ASSERT_CONTAINS(out.p, "[rein] hangup SIGHUP · terminal read in raw mode");
    ASSERT_CONTAINS(out.p, "[rein] signal SIGHUP · exit 129");
    ASSERT_CONTAINS(out.p, "key? ");
    ASSERT_TRUE(lacks(out.p, "not-reached"));

    /* --raw: stdout is the command's alone, the marker goes to stderr;
     * --json: the object says so. */
    const char *r[] = {"run", "--raw", "--", "/bin/sh", "-c",
                       "exec </dev/tty; stty raw -echo; "
                       "dd bs=1 count=1 2>/dev/null",
                       NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein_within(r, -1, RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                              &out, &err, NULL),
              128 + SIGHUP);
    ASSERT_EQ(out.len, 0u);
    ASSERT_EQ(markers_of(&err, "hangup"), 1);
    const char *j[] = {"run", "--json", "--", "/bin/sh", "-c",
                       "exec </dev/tty; stty raw -echo; "
                       "dd bs=1 count=1 2>/dev/null",
                       NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein_within(j, -1, RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                              &out, &err, NULL),
              128 + SIGHUP);
    json_t *o = json_loads(out.p, 0, NULL);
    ASSERT_TRUE(o != NULL);
    json_t *h = json_object_get(o, "hangup");
    ASSERT_STR(json_string_value(json_object_get(h, "signal")), "SIGHUP");
    ASSERT_TRUE(json_integer_value(json_object_get(h, "after_ms")) >=
                RUN_NO_INPUT_HANGUP_MS);
    json_decref(o);
    buf_free(&out);
    buf_free(&err);
}

/* SIGHUP ignored: the next wait of the same kind ends the run (TERM to all
 * of it, then KILL after the supervisor's grace), and every record says
 * why: no-input, not a manual cancel nobody asked for. */
TEST(run_input_over_hangup_ignored_ends_the_run)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    uint64_t took;
    const char *a[] = {"run", "--", "/bin/sh", "-c",
                       "exec </dev/tty; trap '' HUP; stty raw -echo; "
                       "dd bs=1 count=1",
                       NULL};
    ASSERT_EQ(run_rein_within(a, -1,
                              2 * RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                              &out, &err, &took),
              128 + SIGTERM);
    ASSERT_TRUE(took >= 2 * RUN_NO_INPUT_HANGUP_MS);
    ASSERT_EQ(markers_of(&out, "hangup"), 2);
    ASSERT_CONTAINS(out.p, "[rein] hangup SIGHUP · ");
    ASSERT_CONTAINS(out.p, "[rein] hangup SIGTERM · terminal read in raw "
                           "mode");

    /* A real raw-mode program that ignores SIGHUP and reads its terminal,
     * stdin at /dev/null. */
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(null >= 0);
    const char *py[] = {"run", "--json", "--", "python3", "-c",
                        "import signal, sys, tty; "
                        "signal.signal(signal.SIGHUP, signal.SIG_IGN); "
                        "t = open('/dev/tty', 'rb', 0); "
                        "tty.setraw(t.fileno()); t.read(1); "
                        "print('raw-never-read')",
                        NULL};
    buf_reset(&out);
    int rc = run_rein_within(py, null,
                             2 * RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                             &out, &err, NULL);
    close(null);
    if (rc == 127)
        SKIP("no python3");
    ASSERT_EQ(rc, 128 + SIGTERM);
    json_t *o = json_loads(out.p, 0, NULL);
    ASSERT_TRUE(o != NULL);
    ASSERT_STR(json_string_value(json_object_get(o, "reason")), "no-input");
    ASSERT_STR(json_string_value(
                   json_object_get(json_object_get(o, "hangup"), "signal")),
               "SIGTERM");
    json_decref(o);
    json_t *run = ps_find("raw-never-read");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")), "no-input");
    json_decref(run);
    run = ps_find("trap '' HUP");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")), "no-input");
    json_decref(run);
    const char *ps[] = {"ps", "--all", NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein(ps, -1, NULL, &out, &err), 0);
    ASSERT_CONTAINS(out.p, "exited (no-input)");
    ASSERT_TRUE(lacks(out.p, "manual-cancel"));
    const char *m[] = {"metrics", NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein(m, -1, NULL, &out, &err), 0);
    ASSERT_CONTAINS(out.p, "\nrun_exit_total{reason=\"no-input\"} 2\n");
    ASSERT_CONTAINS(out.p, "\nrun_exit_total{reason=\"manual-cancel\"} 0\n");
    buf_free(&out);
    buf_free(&err);
}

/* Job control: each job is a process group of its own, and each that
 * waits for keys gets its own SIGHUP; the shell goes on after them. */
TEST(run_input_over_hangs_up_each_job_of_a_job_control_shell)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"run", "--raw", "--", "/bin/sh", "-c",
                       "exec </dev/tty; set -m; "
                       "sh -c 'stty raw -echo; dd bs=1 count=1'; "
                       "echo \"one=$?\"; stty raw -echo; dd bs=1 count=1; "
                       "echo \"two=$?\"",
                       NULL};
    ASSERT_EQ(run_rein_within(a, -1,
                              2 * RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                              &out, &err, NULL),
              0);
    ASSERT_CONTAINS(out.p, "one=129");
    ASSERT_CONTAINS(out.p, "two=129");
    ASSERT_EQ(markers_of(&err, "hangup"), 2);
    ASSERT_TRUE(lacks(err.p, "[rein] hangup SIGTERM"));
    buf_free(&out);
    buf_free(&err);
}

/* A wait with a timeout of its own is not hung up before
 * RUN_NO_INPUT_HANGUP_TIMED_MS: a read with VTIME longer than the
 * untimed grace ends by itself, and reads nothing (no EOF was queued
 * ahead of it to come out as a byte); one repeated for ever is hung up. */
TEST_T(run_input_over_timed_waits_get_the_longer_grace, 90)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    char cmd[256];
    uint64_t took;
    /* VTIME is in tenths of a second: twice the untimed grace. */
    snprintf(cmd, sizeof cmd,
             "exec </dev/tty; stty raw -echo min 0 time %d; "
             "dd bs=1 count=1 2>/dev/null | od -An -tx1; echo end",
             2 * RUN_NO_INPUT_HANGUP_MS / 100);
    const char *a[] = {"run", "--raw", "--", "/bin/sh", "-c", cmd, NULL};
    ASSERT_EQ(run_rein_within(a, -1, RUN_TEST_STEP_MS, &out, &err, &took), 0);
    ASSERT_STR(out.p, "end\n");
    ASSERT_EQ(markers_of(&err, "hangup"), 0);
    ASSERT_TRUE(took >= 2 * RUN_NO_INPUT_HANGUP_MS);

    snprintf(cmd, sizeof cmd,
             "exec </dev/tty; stty raw -echo min 0 time %d; "
             "while :; do dd bs=1 count=1 2>/dev/null; done",
             RUN_NO_INPUT_HANGUP_MS / 200);
    const char *b[] = {"run", "--raw", "--", "/bin/sh", "-c", cmd, NULL};
    buf_reset(&out);
    buf_reset(&err);
    ASSERT_EQ(run_rein_within(b, -1,
                              RUN_NO_INPUT_HANGUP_TIMED_MS + RUN_TEST_STEP_MS,
                              &out, &err, &took),
              128 + SIGHUP);
    ASSERT_EQ(markers_of(&err, "hangup"), 1);
    ASSERT_TRUE(took >= RUN_NO_INPUT_HANGUP_TIMED_MS);
    buf_free(&out);
    buf_free(&err);
}

/* `rein run --raw -- termhelper MODE [ARG] FIFO`, FIFO made here: rein
 * must leave the command waiting for twice the hang-up grace, and once
 * FIFO is written the command says "fifo" and exits 0. */
static void waits_for_the_fifo(const char *mode, const char *arg)
{
    char fifo[PATH_MAX];
    snprintf(fifo, sizeof fifo, "%s/other-%s-%s", test_tmpdir(), mode,
             arg ? arg : "");
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    const char *argv[9] = {rein_path(), "run", "--raw", "--", helper_path(),
                           mode};
    size_t n = 6;
    if (arg)
        argv[n++] = arg;
    argv[n++] = fifo;
    argv[n] = NULL;
    pid_t pid;
    int pidfd;
    int fd = rein_start_piped(argv, &pid, &pidfd);
    buf_t out = BUF_INIT;
    expect_fd(fd, &out, "READY");
    expect_running_for(pid, pidfd, 2 * RUN_NO_INPUT_HANGUP_MS);
    int w = open(fifo, O_WRONLY | O_CLOEXEC);
    ASSERT_TRUE(w >= 0);
    ASSERT_EQ(write(w, "x", 1), 1);
    close(w);
    ASSERT_EQ(rein_finish(pid, pidfd, fd, &out), 0);
    ASSERT_CONTAINS(out.p, "fifo");
    buf_free(&out);
}

/* Raw mode alone is no wait: a command that never reads runs its course,
 * as does one that waits on its terminal and something else (the other
 * side may still answer, as ssh's socket does). */
TEST(run_input_over_leaves_commands_that_do_not_wait_on_the_terminal_alone)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "exec </dev/tty; stty raw -echo; sleep %d.%d; echo ok",
             2 * RUN_NO_INPUT_HANGUP_MS / 1000,
             2 * RUN_NO_INPUT_HANGUP_MS % 1000 / 100);
    const char *a[] = {"run", "--json", "--", "/bin/sh", "-c", cmd, NULL};
    ASSERT_EQ(run_rein_within(a, -1, RUN_TEST_STEP_MS, &out, &err, NULL), 0);
    json_t *o = json_loads(out.p, 0, NULL);
    ASSERT_TRUE(o != NULL);
    ASSERT_TRUE(json_is_null(json_object_get(o, "hangup")));
    ASSERT_EQ(json_integer_value(json_object_get(o, "eofs")), 0);
    ASSERT_CONTAINS(json_string_value(json_object_get(o, "output")), "ok");
    json_decref(o);

    waits_for_the_fifo("rawpoll", NULL);
    buf_free(&out);
    buf_free(&err);
}

/* An event loop's runtime (node's libuv) waits on its terminal beside an
 * eventfd and a self-pipe that only it can make ready (asyncio's is a
 * socketpair), its other threads asleep on a condition variable or
 * waiting for a signal (glibc's timer thread in vim, whose wait was taken
 * for something else, so vim was never hung up); or reads the terminal in
 * a thread of its own while the first joins it.  Either waits for keys
 * nobody can press, and is hung up as a plain raw read is. */
TEST(run_input_over_hangs_up_an_event_loop_waiting_on_the_terminal)
{
    setup();
    static const char *const modes[] = {"", "thread", "sockpair", "sigwait",
                                        NULL};
    for (const char *const *m = modes; *m; m++) {
        buf_t out = BUF_INIT, err = BUF_INIT;
        uint64_t took;
        const char *a[] = {"run", "--", helper_path(), "loop", *m, NULL};
        ASSERT_EQ(run_rein_within(a, -1,
                                  RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                                  &out, &err, &took),
                  128 + SIGHUP);
        ASSERT_TRUE(took >= RUN_NO_INPUT_HANGUP_MS);
        ASSERT_EQ(markers_of(&out, "hangup"), 1);
        ASSERT_CONTAINS(out.p, "[rein] hangup SIGHUP · terminal read in raw");
        ASSERT_CONTAINS(out.p, "READY");
        ASSERT_TRUE(lacks(out.p, "tty"));
        buf_free(&out);
        buf_free(&err);
    }
}

/* `rein run --raw -- termhelper loop MODE ARG`, its input over: hung up
 * (129), or, with hung_up false, still running after twice the grace and
 * then ended by rein's SIGTERM. */
static void loop_at_limit(const char *mode, int arg, bool hung_up)
{
    char a[16];
    snprintf(a, sizeof a, "%d", arg);
    buf_t out = BUF_INIT, err = BUF_INIT;
    if (hung_up) {
        const char *args[] = {"run", "--raw", "--", helper_path(), "loop",
                              mode, a, NULL};
        ASSERT_EQ(run_rein_within(args, -1,
                                  RUN_NO_INPUT_HANGUP_MS + RUN_TEST_STEP_MS,
                                  &out, &err, NULL),
                  128 + SIGHUP);
    } else {
        const char *argv[] = {rein_path(), "run", "--raw", "--",
                              helper_path(), "loop", mode, a, NULL};
        pid_t pid;
        int pidfd;
        int fd = rein_start_piped(argv, &pid, &pidfd);
        expect_fd(fd, &out, "READY");
        expect_running_for(pid, pidfd, 2 * RUN_NO_INPUT_HANGUP_MS);
        ASSERT_EQ(kill(pid, SIGTERM), 0);
        ASSERT_EQ(rein_finish(pid, pidfd, fd, &out), 128 + SIGTERM);
    }
    buf_free(&out);
    buf_free(&err);
}

/* The limits of the look, at their edges: a loop of AWAITING_THREADS_MAX
 * threads (its first, its sleeper and the rest) is looked at whole and
 * hung up, one thread more is taken as doing something else; the
 * self-pipe's write end on the last fd read (AWAITING_FD_SCAN_MAX - 1)
 * makes it the loop's own, on the next one it is not seen. */
TEST(run_input_over_looks_at_threads_and_fds_up_to_their_limits)
{
    setup();
    loop_at_limit("threads", AWAITING_THREADS_MAX - 2, true);
    loop_at_limit("threads", AWAITING_THREADS_MAX - 1, false);
    loop_at_limit("highfd", AWAITING_FD_SCAN_MAX - 1, true);
    loop_at_limit("highfd", AWAITING_FD_SCAN_MAX, false);
}

/* The same loop is left alone while something outside it may still wake
 * it: a thread of it reading a FIFO (a file another process writes), a
 * second thread on the terminal that also polls a FIFO (beside one that
 * reads the terminal alone), or a child of it (which may end, or write to
 * what it inherited). */
TEST(run_input_over_leaves_an_event_loop_something_else_may_wake)
{
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    waits_for_the_fifo("loop", "fifo");
    waits_for_the_fifo("loop", "both");

    char ms[32];
    snprintf(ms, sizeof ms, "%d", 3 * RUN_NO_INPUT_HANGUP_MS);
    const char *a[] = {"run", "--", helper_path(), "loop", "child", ms, NULL};
    buf_reset(&out);
    uint64_t took;
    ASSERT_EQ(run_rein_within(a, -1, 3 * RUN_NO_INPUT_HANGUP_MS +
                                         RUN_TEST_STEP_MS,
                              &out, &err, &took),
              0);
    ASSERT_TRUE(took >= 3 * RUN_NO_INPUT_HANGUP_MS);
    ASSERT_CONTAINS(out.p, "child");
    ASSERT_EQ(markers_of(&out, "hangup"), 0);
    buf_free(&out);
    buf_free(&err);
}

/* stdin a pipe whose writer lives is the command's own: it waits for what
 * may still come, as it would without rein, and takes it when it comes. */
TEST(run_open_stdin_pipe_is_waited_for)
{
    setup();
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    const char *argv[] = {rein_path(), "run", "--raw", "--", "/bin/sh", "-c",
                          "echo ready; read a; echo \"got $a\"; "
                          "dd bs=1 count=1 2>/dev/null | od -An -tx1",
                          NULL};
    pid_t pid;
    int pidfd;
    int fd = tu_spawn_piped(argv, SPAWN_SESSION, p[0], &pid, &pidfd);
    g_rein = pid;
    close(p[0]);
    buf_t out = BUF_INIT;
    expect_fd(fd, &out, "ready");
    expect_running_for(pid, pidfd, 2 * RUN_NO_INPUT_HANGUP_MS);
    ASSERT_TRUE(lacks(out.p, "got"));
    ASSERT_EQ(write(p[1], "hello\n", 6), 6);
    expect_fd(fd, &out, "got hello");
    expect_running_for(pid, pidfd, 2 * RUN_NO_INPUT_HANGUP_MS);
    ASSERT_EQ(write(p[1], "z", 1), 1);
    expect_fd(fd, &out, "7a");
    close(p[1]);
    ASSERT_EQ(rein_finish(pid, pidfd, fd, &out), 0);
    ASSERT_TRUE(lacks(out.p, "[rein] hangup"));
    buf_free(&out);
}

/* stdin a terminal: a person may still type, whatever the wait. */
TEST(run_terminal_stdin_is_never_hung_up)
{
    setup();
    struct tty t;
    const char *a[] = {"run", "--raw", "--", "/bin/sh", "-c",
                       "echo ready; stty raw -echo; "
                       "dd bs=1 count=1 2>/dev/null | od -An -tx1",
                       NULL};
    tty_start(&t, a, 80, 24);
    tty_expect(&t, "ready");
    expect_running_for(t.pid, t.pidfd, 2 * RUN_NO_INPUT_HANGUP_MS);
    tty_send(&t, "q");
    tty_expect(&t, "71");
    ASSERT_EQ(tty_finish(&t), 0);
    ASSERT_TRUE(lacks(t.out.p, "[rein] hangup"));
    buf_free(&t.out);
}

/* rein's terminal hangs up (its master closed) while the command, which
 * ignores SIGHUP, runs on: every read of the hung-up terminal returns at
 * once, and each was passed on as another ^D, in a loop that took 70% of
 * a CPU and filled the command's terminal with EOFs.  Now the hang-up
 * ends rein's input: rein waits for its command without spinning.  Its
 * CPU time is the measure (wait4's rusage), not the wall clock. */
TEST(run_terminal_hangup_ends_the_input_without_spinning)
{
    setup();
    struct tty t;
    const char *a[] = {"run", "--raw", "--", "/bin/sh", "-c",
                       "trap '' HUP; echo ready; exec sleep 2", NULL};
    tty_start(&t, a, 80, 24);
    tty_expect(&t, "ready");
    close(t.master);
    int st;
    struct rusage ru;
    ASSERT_INT(wait4(t.pid, &st, 0, &ru), ==, t.pid);
    g_rein = -1;
    if (t.pidfd >= 0)
        close(t.pidfd);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    ASSERT_TRUE(cpu < 0.5);
    buf_free(&t.out);
}

/* The reader of rein's stdout goes away (`rein run -- CMD | head -1`):
 * the command gets SIGPIPE, as it would have at its next write without
 * rein in between, and rein exits as it did (141), in the raw view and
 * the condensed one alike.  `yes` ran on for ever, its log growing by 14
 * MB a second. */
TEST(run_reader_gone_sends_the_command_sigpipe)
{
    setup();
    static const char *const raw_view[] = {"run", "--raw", "--", "/bin/sh",
                                           "-c", "echo error: x; exec yes",
                                           NULL};
    static const char *const view[] = {"run", "--", "/bin/sh", "-c",
                                       "echo error: x; exec yes", NULL};
    for (int raw = 0; raw < 2; raw++) {
        const char *argv[RUN_TEST_ARGS_MAX + 2];
        rein_argv(raw ? raw_view : view, argv);
        pid_t pid;
        int pidfd;
        int out = rein_start_piped(argv, &pid, &pidfd);
        buf_t b = BUF_INIT;
        expect_fd(out, &b, "error: x");
        close(out);
        int code;
        ASSERT_OK(spawn_reap(pid, pidfd, &code));
        g_rein = -1;
        if (pidfd >= 0)
            close(pidfd);
        ASSERT_EQ(code, 128 + SIGPIPE);
        buf_free(&b);
    }
}

/* `rein run CMD &` from a job-control shell, whose line editor has the
 * terminal in raw mode: rein is in the background, so the terminal is not
 * its to read or to set (it stopped on SIGTTOU at once, until `fg`).  The
 * command runs and rein ends with it. */
TEST(run_in_the_background_of_a_job_control_shell_is_not_stopped)
{
    setup();
    char script[PATH_MAX + 256];
    snprintf(script, sizeof script,
             "stty -icanon -echo; %s run -- /bin/sh -c 'echo finished' & "
             "wait $!; echo \"rc=$?\"; stty sane",
             rein_path());
    const char *argv[] = {"/bin/bash", "--noprofile", "--norc", "-m", "-c",
                          script, NULL};
    struct tty t;
    tty_spawn(&t, argv, 80, 24); /* bash, which starts rein */
    tty_expect(&t, "rc=");
    ASSERT_CONTAINS(t.out.p, "finished");
    ASSERT_CONTAINS(t.out.p, "rc=0");
    ASSERT_EQ(tty_finish(&t), 0);
    buf_free(&t.out);
}

/* A process of the command's that leaves the run's boundary (setsid) is
 * an ownership escape: rein ends the run and it, and the view says so.
 * The command's SIGTERM read as its own failure, with nothing to say why
 * (a script that starts a daemon, a tmux server or an ssh-agent). */
TEST(run_ownership_escape_is_said)
{
    setup();
    const char *a[] = {"run", "--", "/bin/sh", "-c",
                       "setsid sh -c 'echo job=$$; exec sleep 301' & "
                       "exec sleep 300",
                       NULL};
    buf_t out = BUF_INIT, err = BUF_INIT;
    ASSERT_EQ(run_rein_within(a, -1, RUN_TEST_STEP_MS, &out, &err, NULL),
              128 + SIGTERM);
    ASSERT_CONTAINS(out.p, "[rein] signal SIGTERM");
    ASSERT_CONTAINS(out.p, "\n[rein] ended · a process it started left the "
                           "run's boundary (setsid, a double fork)");
    const char *j = strstr(out.p, "job=");
    ASSERT_TRUE(j != NULL);
    pid_t job = (pid_t)atoi(j + 4);
    ASSERT_INT(job, >, 1);
    ASSERT_TRUE(test_wait_gone(job));
    json_t *run = ps_find("exec sleep 300");
    ASSERT_STR(json_string_value(json_object_get(run, "reason")),
               "ownership-escape");
    json_decref(run);

    /* A command that merely exits leaves no such marker. */
    const char *b[] = {"run", "--", "/bin/sh", "-c", "exit 3", NULL};
    buf_reset(&out);
    ASSERT_EQ(run_rein_within(b, -1, RUN_TEST_STEP_MS, &out, &err, NULL), 3);
    ASSERT_TRUE(lacks(out.p, "[rein] ended"));
    buf_free(&out);
    buf_free(&err);
}

/* Whether `rein ps --all` lists a run whose command contains needle. */
static bool ps_lists(const char *needle)
{
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"ps", "--all", "--json", NULL};
    ASSERT_EQ(run_rein(a, -1, NULL, &out, &err), 0);
    bool found = out.p && strstr(out.p, needle);
    buf_free(&out);
    buf_free(&err);
    return found;
}

static void set_mtime(const char *path, int64_t ago_ms)
{
    struct timespec now, ts[2];
    clock_gettime(CLOCK_REALTIME, &now);
    ts[0].tv_sec = now.tv_sec - (time_t)(ago_ms / 1000);
    ts[0].tv_nsec = 0;
    ts[1] = ts[0];
    ASSERT_EQ(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* A state dir that only `rein run` uses is pruned too: at most once per
 * RETENTION_EVERY_MS (the stamp), the logs past the limits go, and their
 * records with them. */
TEST(run_prunes_old_logs_and_records_at_most_hourly)
{
    setup();
    setenv("REIN_LOG_MAX_BYTES", "1", 1); /* every log not fresh is over */
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *one[] = {"run", "--", "echo first-run", NULL};
    ASSERT_EQ(run_rein(one, -1, NULL, &out, &err), 0);
    json_t *r = ps_find("echo first-run");
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s",
             json_string_value(json_object_get(r, "log_path")));
    json_decref(r);
    char stamp[PATH_MAX + 32];
    snprintf(stamp, sizeof stamp, "%s/logs/" RETENTION_STAMP, test_tmpdir());
    ASSERT_TRUE(exists(stamp)); /* the first run made the first pass */
    /* Past the minute any log is left alone for. */
    set_mtime(log, 2 * RETENTION_FRESH_MS);
    /* Within the hour: no pass, the old log stays. */
    set_mtime(stamp, RETENTION_EVERY_MS - 60000);
    const char *two[] = {"run", "--", "echo second-run", NULL};
    ASSERT_EQ(run_rein(two, -1, NULL, &out, &err), 0);
    ASSERT_TRUE(exists(log));
    ASSERT_TRUE(ps_lists("echo first-run"));
    /* An hour on: the pass removes it and its record; the fresh log of
     * the run that made the pass stays. */
    set_mtime(stamp, RETENTION_EVERY_MS + 1000);
    const char *three[] = {"run", "--", "echo third-run", NULL};
    ASSERT_EQ(run_rein(three, -1, NULL, &out, &err), 0);
    ASSERT_FALSE(exists(log));
    ASSERT_FALSE(ps_lists("echo first-run"));
    ASSERT_TRUE(ps_lists("echo second-run"));
    r = ps_find("echo third-run");
    ASSERT_TRUE(exists(json_string_value(json_object_get(r, "log_path"))));
    json_decref(r);
    buf_free(&out);
    buf_free(&err);
}

/* ---------------------------------------------------- terminal queries */

TEST(run_answers_terminal_queries_when_there_is_no_terminal)
{
    /* stdin /dev/null, stdout a pipe: nobody else can answer the cursor
     * report or the DA the command waits for. */
    setup();
    buf_t out = BUF_INIT, err = BUF_INIT;
    const char *a[] = {"run", "--raw", "--", helper_path(), "ask",
                       "\\e[2J\\e[H\\r\\nab", "\\e[6n", "\\e[c", NULL};
    ASSERT_EQ(run_rein(a, -1, test_tmpdir(), &out, &err), 0);
    ASSERT_CONTAINS(out.p, "ab\033[6nreply: \\e[2;3R\r\n");
    ASSERT_CONTAINS(out.p, "\033[creply: \\e[?1;2c\r\n");
    buf_free(&out);
    buf_free(&err);
}

TEST(run_on_a_real_terminal_leaves_the_queries_to_it)
{
    /* The test is the real terminal: it sees the query in rein's output
     * and answers with a DA of its own, which is the reply the command
     * reads (rein answering too would have come first). */
    setup();
    const char *a[] = {"run", "--raw", "--", helper_path(), "ask", "",
                       "\\e[c", NULL};
    struct tty t;
    tty_start(&t, a, 80, 24);
    tty_expect(&t, "\033[c");
    tty_send(&t, "\033[?62;22c");
    tty_expect(&t, "reply: \\e[?62;22c");
    ASSERT_EQ(tty_finish(&t), 0);
    buf_free(&t.out);
}
