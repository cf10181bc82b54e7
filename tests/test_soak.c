/*
 * test_soak.c — a long agent session in miniature: the library's entry
 * points and the session store that `rein serve` runs on, each driven a
 * few hundred times in one process, must come back to where they started.
 * Open fds, heap in use, the loop's timers and watches, cgroup leaves,
 * sessions held: a leak of one of them per command is invisible in any
 * single test and fatal after a day.  Each loop is synchronised by the
 * call's own return or by the run's exit callback, never by a sleep.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/loop.h"
#include "exec/session.h"
#include "harness.h"
#include "supervise/sup.h"
#include "tutil.h"

/* Commands per loop: enough that a leak of one fd, timer or watch per
 * command is far past any slack, few enough to run in seconds on two slow
 * cores (a shell command costs 2-20 ms here). */
#define SOAK_N 300
/* Heap the loops may end with beyond where they began, once warmed up:
 * glibc keeps freed chunks in its bins and moves its top, by a few KiB.
 * A leak of 256 bytes per command is 75 KiB over SOAK_N and fails. */
#define SOAK_HEAP_SLACK (64 * 1024)
/* The longest one command of a loop may take before the test gives up. */
#define SOAK_WAIT_MS 10000

static size_t fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own fd */
}

/* Bytes of heap in use (0 where the allocator does not say, as under
 * ASan, whose leak checker then does this job). */
static size_t heap_in_use(void)
{
    return mallinfo2().uordblks;
}

/* Where a loop started: taken after one warm-up command, so what is
 * allocated once and kept (a grammar set, a cached path) is not a leak. */
struct mark {
    size_t fds, heap;
};

static struct mark mark_now(void)
{
    return (struct mark){fd_count(), heap_in_use()};
}

static void expect_back(const struct mark *m, const char *what)
{
    size_t fds = fd_count(), heap = heap_in_use();
    if (fds != m->fds)
        test_fail(__FILE__, __LINE__, "%s: %zu fds open, %zu before", what,
                  fds, m->fds);
    if (heap > m->heap + SOAK_HEAP_SLACK)
        test_fail(__FILE__, __LINE__, "%s: heap %zu bytes, %zu before", what,
                  heap, m->heap);
}

static void count_bytes(const char *text, size_t len, void *data)
{
    (void)text;
    *(size_t *)data += len;
}

static void shell_exec_once(void)
{
    size_t got = 0;
    rein_shell_run_opts_t ro = {.command = "echo hi", .on_chunk = count_bytes,
                                .data = &got};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_exec(NULL, &ro, &res));
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_EQ(got, 3);
}

TEST(soak_shell_exec_leaves_nothing_behind)
{
    shell_exec_once();
    struct mark m = mark_now();
    for (int i = 0; i < SOAK_N; i++)
        shell_exec_once();
    expect_back(&m, "rein_shell_exec");
}

static void shell_run(rein_shell_t *sh, const char *cmd, size_t want)
{
    size_t got = 0;
    rein_shell_run_opts_t ro = {.command = cmd, .on_chunk = count_bytes,
                                .data = &got};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_run(sh, &ro, &res));
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_EQ(got, want);
}

TEST(soak_persistent_shells_leave_nothing_behind)
{
    /* One shell for many commands, as an agent keeps one. */
    rein_shell_t *sh;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    shell_run(sh, "x=1; echo hi", 3);
    struct mark m = mark_now();
    for (int i = 0; i < SOAK_N; i++)
        shell_run(sh, "echo $x$x", 3);
    /* The shell's own fds (its channel, its run) are still open here. */
    expect_back(&m, "rein_shell_run");
    rein_shell_free(sh);
    /* And shells made and dropped, a fifth as many: each is a bash. */
    ASSERT_OK(rein_shell_new(NULL, &sh));
    shell_run(sh, "echo hi", 3);
    rein_shell_free(sh);
    m = mark_now();
    for (int i = 0; i < SOAK_N / 5; i++) {
        ASSERT_OK(rein_shell_new(NULL, &sh));
        shell_run(sh, "echo hi", 3);
        rein_shell_free(sh);
    }
    expect_back(&m, "rein_shell_new/run/free");
}

/* A PTY command that prints a line and would then sleep: the chunk
 * callback kills it as soon as the line is there (the event). */
struct pty_kill {
    rein_pty_t *p;
    size_t got;
    bool killed;
};

static void kill_on_output(const char *text, size_t len, void *data)
{
    (void)text;
    struct pty_kill *k = data;
    k->got += len;
    if (!k->killed && rein_pty_kill(k->p) == 0)
        k->killed = true;
}

static void pty_once(bool kill)
{
    rein_pty_t *p;
    ASSERT_OK(rein_pty_new(&p));
    struct pty_kill k = {p, 0, false};
    rein_pty_start_opts_t o = {
        .command = kill ? "echo hi; exec sleep 30" : "echo hi",
        .on_chunk = kill ? kill_on_output : count_bytes,
        .data = kill ? (void *)&k : (void *)&k.got};
    rein_run_result_t res;
    ASSERT_OK(rein_pty_start(p, &o, &res));
    ASSERT_INT(k.got, >=, 3);
    if (kill)
        ASSERT_TRUE(res.cancelled);
    else
        ASSERT_EQ(res.exit_code, 0);
    rein_pty_free(p);
}

TEST(soak_pty_sessions_leave_nothing_behind)
{
    pty_once(false);
    struct mark m = mark_now();
    for (int i = 0; i < SOAK_N; i++)
        pty_once(false);
    expect_back(&m, "rein_pty_new/start/free");
    /* Killed ones: each waits REIN_PTY_KILL_DRAIN_MS, so fewer. */
    pty_once(true);
    m = mark_now();
    for (int i = 0; i < SOAK_N / 15; i++)
        pty_once(true);
    expect_back(&m, "rein_pty_kill");
}

/* The cgroup2 mount point, or "" when there is none. */
static void cgroup2_mount(char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/self/mounts", "r");
    ASSERT_TRUE(f != NULL);
    char dev[256], dir[PATH_MAX], type[64];
    while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3)
        if (!strcmp(type, "cgroup2")) {
            snprintf(out, size, "%s", dir);
            break;
        }
    fclose(f);
}

struct sup_soak {
    rein_sup_t *s;
    int exits;
    bool leaf_left; /* a run's cgroup leaf still there at its exit */
    char mount[PATH_MAX];
};

static void soak_on_exit(rein_sup_t *s, int64_t id,
                         const rein_run_info_t *info, void *ud)
{
    (void)s;
    (void)id;
    struct sup_soak *k = ud;
    k->exits++;
    char leaf[2 * PATH_MAX];
    struct stat st;
    if (info->cgroup && k->mount[0]) {
        snprintf(leaf, sizeof leaf, "%s%s", k->mount, info->cgroup);
        if (stat(leaf, &st) == 0)
            k->leaf_left = true;
    }
}

/* One run through the supervisor: tty or pipes, cancelled at once or
 * left to exit; driven until its exit callback, then forgotten. */
static void sup_once(struct sup_soak *k, int i)
{
    const char *argv[] = {"/bin/sh", "-c", "echo hi", NULL};
    rein_run_opts_t ro = {.argv = argv, .tty = i % 2, .grace_ms = 500,
                          .on_exit = soak_on_exit, .data = k};
    int64_t id;
    int before = k->exits;
    ASSERT_OK(rein_sup_spawn(k->s, &ro, &id));
    if (i % 3 == 0)
        ASSERT_OK(rein_sup_cancel(k->s, id, SIGTERM, 500));
    uint64_t t0 = test_now_ms();
    while (k->exits == before) {
        ASSERT_INT(test_now_ms() - t0, <, SOAK_WAIT_MS);
        ASSERT_INT(rein_sup_run_once(k->s, 100), >=, 0);
    }
    ASSERT_OK(rein_sup_forget(k->s, id));
    rein_run_info_t info;
    ASSERT_EQ(rein_sup_info(k->s, id, &info), REIN_ENORUN);
}

TEST(soak_supervisor_runs_leave_nothing_behind)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/state", test_tmpdir());
    struct sup_soak k = {NULL, 0, false, ""};
    cgroup2_mount(k.mount, sizeof k.mount);
    rein_sup_opts_t so = {.state_dir = dir};
    ASSERT_OK(rein_sup_open(&so, &k.s));
    loop_t *l = sup_loop(k.s);
    for (int i = 0; i < 6; i++) /* every kind once */
        sup_once(&k, i);
    /* The heap is not checked here: SQLite's page cache grows with the
     * registry, by design, up to its cache_size. */
    size_t fds = fd_count(), timers = loop_timer_count(l),
           watches = loop_watch_count(l);
    for (int i = 0; i < SOAK_N; i++)
        sup_once(&k, i);
    ASSERT_EQ(fd_count(), fds);
    ASSERT_EQ(loop_timer_count(l), timers);
    ASSERT_EQ(loop_watch_count(l), watches);
    ASSERT_FALSE(k.leaf_left);
    rein_sup_close(k.s);
}

static void on_wake(session_t *s, session_wake_t why, void *data)
{
    (void)s;
    *(session_wake_t *)data = why;
}

/* The store `rein serve` keeps its sessions in: spawn, wait until the
 * exit wakes the waiter, take the output, release, as exec_command does
 * for a short command. */
static void session_once(session_store_t *st, rein_sup_t *sup, int i)
{
    const char *argv[] = {"/bin/sh", "-c", "echo hi", NULL};
    session_spawn_opts_t o = {.argv = argv, .command = "echo hi",
                              .cwd = test_tmpdir(), .tty = i % 2};
    session_t *s;
    ASSERT_OK(session_spawn(st, &o, &s));
    session_wake_t why = (session_wake_t)-1;
    session_wait_opts_t wo = {.timeout_ms = SOAK_WAIT_MS};
    ASSERT_OK(session_wait(s, &wo, on_wake, &why));
    while (why == (session_wake_t)-1)
        ASSERT_INT(rein_sup_run_once(sup, -1), >=, 0);
    ASSERT_EQ(why, SESSION_WAKE_EXIT);
    buf_t out = BUF_INIT;
    session_chunk_t c;
    ASSERT_OK(session_take_output(s, &out, NULL, &c));
    ASSERT_STR(out.p, i % 2 ? "hi\r\n" : "hi\n");
    buf_free(&out);
    session_release(s);
}

TEST(soak_session_store_leaves_nothing_behind)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/state", test_tmpdir());
    rein_sup_opts_t so = {.state_dir = dir};
    rein_sup_t *sup;
    ASSERT_OK(rein_sup_open(&so, &sup));
    session_store_opts_t sto = {.sup = sup};
    session_store_t *st;
    ASSERT_OK(session_store_new(&sto, &st));
    loop_t *l = sup_loop(sup);
    for (int i = 0; i < 2; i++)
        session_once(st, sup, i);
    /* The frees are zero-delay timers: let them run. */
    while (loop_timer_count(l) > 1)
        ASSERT_INT(rein_sup_run_once(sup, 100), >=, 0);
    size_t fds = fd_count(), timers = loop_timer_count(l),
           watches = loop_watch_count(l);
    for (int i = 0; i < SOAK_N; i++)
        session_once(st, sup, i);
    while (loop_timer_count(l) > timers)
        ASSERT_INT(rein_sup_run_once(sup, 100), >=, 0);
    ASSERT_EQ(session_count(st), 0);
    ASSERT_EQ(fd_count(), fds);
    ASSERT_EQ(loop_timer_count(l), timers);
    ASSERT_EQ(loop_watch_count(l), watches);
    session_store_free(st);
    rein_sup_close(sup);
}
