/*
 * test_proc.c — rein_proc_*: processes held by identity, against real
 * processes: lookup by pid and by executable, family and command line,
 * kill_tree, terminate (grace, stopped processes, rescans, groups), waits
 * with timeouts and cancel, and a reused pid that must never be signalled.
 *
 * The waiting and terminating tests run twice: with pidfds, and with
 * REIN_PIDFD=0, the /proc-polling fallback that valgrind and old kernels
 * get.  Tests synchronise on lines the children print, never on sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/procfs.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"

/* The grace and the bound on top of it for terminate timing checks: the
 * bound is generous for loaded CI machines and valgrind. */
#define T_GRACE_MS 300
#define T_BOUND_MS 3000
/* A wait that should never run out in a passing test. */
#define T_LONG_MS 10000
/* A short wait_for_exit timeout, and how late it may return. */
#define T_SHORT_MS 200
/* How often the pid-reuse test tries to get the old pid back. */
#define T_REUSE_TRIES 200
/* The exit code of proc_helper term-exit. */
#define T_TERM_EXIT_CODE 42

/* A spawned child: stdout on a pipe (out), stdin on a pipe (in) or
 * /dev/null (in == -1). */
typedef struct kid {
    pid_t pid;
    int pidfd;
    int out;
    int in;
} kid_t;

static void kid_start(kid_t *k, const char *const *argv, spawn_group_t group,
                      bool want_stdin)
{
    int i[2] = {-1, -1};
    if (want_stdin)
        ASSERT_OK(pipe2(i, O_CLOEXEC));
    k->out = tu_spawn_piped(argv, group, i[0], &k->pid, &k->pidfd);
    if (i[0] >= 0)
        close(i[0]);
    k->in = i[1];
}

/* Reaps k and closes its pipes; returns the exit code (128 + signal). */
static int kid_reap(kid_t *k)
{
    int code;
    ASSERT_OK(spawn_reap(k->pid, k->pidfd, &code));
    if (k->pidfd >= 0)
        close(k->pidfd);
    if (k->in >= 0)
        close(k->in);
    close(k->out);
    return code;
}

/* Reads "<word> <pid>" and returns the pid. */
static pid_t read_pid_line(int fd, const char *word)
{
    char line[128];
    tu_read_line(fd, line, sizeof line);
    size_t wl = strlen(word);
    if (wl) {
        ASSERT_TRUE(!strncmp(line, word, wl) && line[wl] == ' ');
        wl++;
    }
    return (pid_t)strtol(line + wl, NULL, 10);
}

static const char *helper_path(void)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc_helper", test_bin_dir());
    return path;
}

/* Starts proc_helper in mode; returns the pid printed on its ready line
 * (0 when the mode prints none). */
static pid_t helper_start(kid_t *k, const char *mode)
{
    const char *argv[] = {helper_path(), mode, NULL};
    kid_start(k, argv, SPAWN_SESSION, false);
    char line[128];
    tu_read_line(k->out, line, sizeof line);
    ASSERT_TRUE(!strncmp(line, "ready", 5));
    return (pid_t)strtol(line + 5, NULL, 10);
}

static bool kernel_has_pidfd(void)
{
    int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (fd < 0)
        return errno != ENOSYS;
    close(fd);
    return true;
}

/* Puts this test process on the fallback path, or checks the pidfd one. */
static void set_mode(bool fallback)
{
    if (fallback)
        ASSERT_OK(setenv("REIN_PIDFD", "0", 1));
}

static void check_mode(const rein_proc_t *h, bool fallback)
{
    if (fallback)
        ASSERT_FALSE(proc_has_pidfd(h));
    else if (kernel_has_pidfd())
        ASSERT_TRUE(proc_has_pidfd(h));
}

/* Waits (without reaping) until our child pid has exited or stopped. */
static void wait_state(pid_t pid, int what)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r;
    do
        r = waitid(P_PID, (id_t)pid, &si, what | WNOWAIT);
    while (r < 0 && errno == EINTR);
    ASSERT_OK(r);
}

/* ------------------------------------------------------------ lookups */

TEST(proc_from_pid_of_self)
{
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(getpid(), &h));
    ASSERT_EQ(rein_proc_pid(h), getpid());
    ASSERT_EQ(rein_proc_ppid(h), getppid());
    pid_t pgid;
    ASSERT_OK(rein_proc_group_id(h, &pgid));
    ASSERT_EQ(pgid, getpgrp());
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_RUNNING);
    check_mode(h, false);
    /* rein never signals itself, nor anything below it: its tree is all
     * the caller runs beside (as pid 1's is everything).  A child of ours
     * used to get the signal before the refusal. */
    const char *argv[] = {"cat", NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, true);
    ASSERT_EQ(rein_proc_kill_tree(h, SIGTERM), -EPERM);
    bool exited = true;
    ASSERT_EQ(rein_proc_terminate(h, NULL, &exited), -EPERM);
    ASSERT_FALSE(exited);
    rein_proc_t *init;
    ASSERT_OK(rein_proc_from_pid(1, &init));
    ASSERT_EQ(rein_proc_kill_tree(init, 0), -EPERM);
    rein_proc_free(init);
    ASSERT_EQ(write(k.in, "ping\n", 5), 5); /* alive: it echoes, */
    char line[16];
    tu_read_line(k.out, line, sizeof line);
    ASSERT_STR(line, "ping");
    close(k.in);
    k.in = -1;
    ASSERT_EQ(kid_reap(&k), 0); /* and ends at EOF, not by a signal */
    rein_proc_free(h);
    rein_proc_free(NULL);
    rein_proc_list_free(NULL, 0);
    rein_strv_free(NULL);
}

TEST(proc_from_pid_unknown_or_zombie_is_esrch)
{
    rein_proc_t *h = NULL;
    ASSERT_EQ(rein_proc_from_pid(0, &h), -ESRCH);
    ASSERT_EQ(rein_proc_from_pid(-1, &h), -ESRCH);
    ASSERT_EQ(rein_proc_from_pid(0x3fffffff, &h), -ESRCH);
    /* A zombie has exited: no handle on it. */
    const char *argv[] = {"true", NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, false);
    wait_state(k.pid, WEXITED);
    ASSERT_EQ(rein_proc_from_pid(k.pid, &h), -ESRCH);
    ASSERT_TRUE(h == NULL);
    ASSERT_EQ(kid_reap(&k), 0);
}

static bool list_has(rein_proc_t **v, size_t n, pid_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (rein_proc_pid(v[i]) == pid)
            return true;
    return false;
}

TEST(proc_from_path_finds_a_spawned_sleep_only)
{
    char *sleep_path = realpath("/bin/sleep", NULL);
    ASSERT_TRUE(sleep_path != NULL);
    const char *sleep_argv[] = {"sleep", "30", NULL};
    const char *cat_argv[] = {"cat", NULL};
    kid_t s, z, c;
    kid_start(&s, sleep_argv, SPAWN_SESSION, false);
    kid_start(&z, sleep_argv, SPAWN_SESSION, false);
    kid_start(&c, cat_argv, SPAWN_SESSION, true);
    /* z becomes a zombie: exited, so not found. */
    ASSERT_OK(kill(z.pid, SIGKILL));
    wait_state(z.pid, WEXITED);

    rein_proc_t **v = NULL;
    size_t n = 0;
    ASSERT_OK(rein_proc_from_path("/bin/sleep", &v, &n));
    ASSERT_TRUE(list_has(v, n, s.pid));
    ASSERT_FALSE(list_has(v, n, z.pid));
    ASSERT_FALSE(list_has(v, n, c.pid));
    ASSERT_FALSE(list_has(v, n, getpid()));
    /* Whatever else it found (other tests' sleeps) runs sleep too. */
    for (size_t i = 0; i < n; i++) {
        char exe[PATH_MAX];
        if (procfs_exe(rein_proc_pid(v[i]), exe, sizeof exe) == 0)
            ASSERT_STR(exe, sleep_path);
    }
    rein_proc_list_free(v, n);

    /* No such file: run by no process, an empty list (the seed's). */
    v = (rein_proc_t **)&n; /* set on success */
    ASSERT_OK(rein_proc_from_path("/nonexistent/rein-no-such-exe", &v, &n));
    ASSERT_EQ(n, 0);
    ASSERT_TRUE(v == NULL);
    rein_proc_list_free(v, n);
    ASSERT_EQ(rein_proc_from_path("", &v, &n), -EINVAL);
    ASSERT_OK(kill(s.pid, SIGKILL));
    ASSERT_EQ(kid_reap(&s), 128 + SIGKILL);
    ASSERT_EQ(kid_reap(&z), 128 + SIGKILL);
    close(c.in);
    c.in = -1;
    ASSERT_EQ(kid_reap(&c), 0);
    free(sleep_path);
}

/* ------------------------------------------------- family and arguments */

TEST(proc_args_ppid_group_of_a_child_then_esrch)
{
    /* The helper's ready line, not spawn's return, marks the end of exec:
     * the kernel closes the errno pipe before it has set up the new
     * argv, and until then /proc/<pid>/cmdline reads empty. */
    const char *argv[] = {helper_path(), "term-exit", NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_PGROUP, false);
    char line[16];
    tu_read_line(k.out, line, sizeof line);
    ASSERT_STR(line, "ready");
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    ASSERT_EQ(rein_proc_ppid(h), getpid());
    pid_t pgid;
    ASSERT_OK(rein_proc_group_id(h, &pgid));
    ASSERT_EQ(pgid, k.pid); /* its own group */
    char **args;
    ASSERT_OK(rein_proc_args(h, &args));
    ASSERT_STR(args[0], helper_path());
    ASSERT_STR(args[1], "term-exit");
    ASSERT_TRUE(args[2] == NULL);
    rein_strv_free(args);

    ASSERT_OK(kill(k.pid, SIGKILL));
    wait_state(k.pid, WEXITED);
    /* A zombie is gone for every reader. */
    ASSERT_EQ(rein_proc_ppid(h), -ESRCH);
    ASSERT_EQ(rein_proc_group_id(h, &pgid), -ESRCH);
    ASSERT_EQ(rein_proc_args(h, &args), -ESRCH);
    ASSERT_EQ(kid_reap(&k), 128 + SIGKILL);
    ASSERT_EQ(rein_proc_ppid(h), -ESRCH);
    rein_proc_free(h);
}

TEST(proc_children_of_a_shell_with_two)
{
    /* After its children the root sleeps on: it must be killed too. */
    const char *argv[] = {"sh", "-c",
                          "sleep 30 & sleep 30 & echo ready; wait; "
                          "exec sleep 30",
                          NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, false);
    char line[32];
    tu_read_line(k.out, line, sizeof line);
    rein_proc_t *h, **kids;
    size_t n;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    ASSERT_OK(rein_proc_children(h, &kids, &n));
    ASSERT_EQ(n, 2);
    /* Their argv is not checked: a child may not have exec'd sleep yet
     * when the shell says ready. */
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ(rein_proc_ppid(kids[i]), k.pid);
    ASSERT_INT(rein_proc_pid(kids[0]), !=, rein_proc_pid(kids[1]));
    ASSERT_OK(rein_proc_kill_tree(h, SIGKILL));
    for (size_t i = 0; i < n; i++) {
        bool exited;
        ASSERT_OK(rein_proc_wait_for_exit(kids[i], T_LONG_MS, NULL, &exited));
        ASSERT_TRUE(exited);
    }
    bool exited;
    ASSERT_OK(rein_proc_wait_for_exit(h, T_LONG_MS, NULL, &exited));
    ASSERT_TRUE(exited);
    rein_proc_list_free(kids, n);
    ASSERT_EQ(kid_reap(&k), 128 + SIGKILL);
    ASSERT_EQ(rein_proc_children(h, &kids, &n), -ESRCH);
    rein_proc_free(h);
}

TEST(proc_status_before_and_after_exit)
{
    const char *argv[] = {"cat", NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, true);
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_RUNNING);
    close(k.in);
    k.in = -1;
    bool exited;
    ASSERT_OK(rein_proc_wait_for_exit(h, -1, NULL, &exited));
    ASSERT_TRUE(exited);
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_EXITED); /* a zombie */
    ASSERT_EQ(kid_reap(&k), 0);
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_EXITED);
    rein_proc_free(h);
}

/* ---------------------------------------------------------- kill_tree */

TEST(proc_kill_tree_reaches_child_and_grandchild)
{
    /* sh -> sh -> sleep; the inner shell prints the sleep's pid.  The root
     * outlives its children (children are signalled first) by exec'ing a
     * sleep, so it too only ends of the signal. */
    const char *argv[] = {"sh", "-c",
                          "sh -c 'sleep 30 & echo $!; wait' & wait; "
                          "exec sleep 30",
                          NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, false);
    pid_t gpid = read_pid_line(k.out, "");
    rein_proc_t *h, *g, **kids;
    size_t n;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    ASSERT_OK(rein_proc_from_pid(gpid, &g));
    ASSERT_OK(rein_proc_children(h, &kids, &n));
    ASSERT_EQ(n, 1);
    ASSERT_EQ(rein_proc_ppid(g), rein_proc_pid(kids[0]));
    /* TERM: each of them dies of it, but only if each is signalled. */
    ASSERT_OK(rein_proc_kill_tree(h, SIGTERM));
    bool exited;
    ASSERT_OK(rein_proc_wait_for_exit(g, T_LONG_MS, NULL, &exited));
    ASSERT_TRUE(exited);
    ASSERT_OK(rein_proc_wait_for_exit(kids[0], T_LONG_MS, NULL, &exited));
    ASSERT_TRUE(exited);
    ASSERT_OK(rein_proc_wait_for_exit(h, T_LONG_MS, NULL, &exited));
    ASSERT_TRUE(exited);
    ASSERT_EQ(kid_reap(&k), 128 + SIGTERM);
    ASSERT_EQ(rein_proc_kill_tree(h, SIGKILL), -ESRCH);
    ASSERT_EQ(rein_proc_kill_tree(h, NSIG), -EINVAL);
    rein_proc_list_free(kids, n);
    rein_proc_free(g);
    rein_proc_free(h);
}

/* Pins the calling thread, and what it spawns from now on, to one CPU. */
static void pin_to_one_cpu(void)
{
    cpu_set_t set;
    ASSERT_OK(sched_getaffinity(0, sizeof set, &set));
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set)) {
            CPU_ZERO(&set);
            CPU_SET(c, &set);
            ASSERT_OK(sched_setaffinity(0, sizeof set, &set));
            return;
        }
    }
    ASSERT_TRUE(!"no CPU in our affinity mask");
}

typedef struct idle_kill {
    rein_proc_t *h;
    int signo;
    int rc;
} idle_kill_t;

/* rein_proc_kill_tree from a SCHED_IDLE thread: each process it wakes on
 * the same CPU runs before the sender's next step. */
static void *kill_tree_idle(void *arg)
{
    idle_kill_t *k = arg;
    struct sched_param sp = {.sched_priority = 0};
    /* Unprivileged, but should it fail the test only loses strength. */
    if (sched_setscheduler(0, SCHED_IDLE, &sp) < 0)
        fprintf(stderr, "note: SCHED_IDLE: %s\n", strerror(errno));
    k->rc = rein_proc_kill_tree(k->h, k->signo);
    return NULL;
}

/*
 * The order of kill_tree's signals, told by the receivers themselves: in
 * proc_helper order-tree (root -> child -> grandchild) USR1 stays pending
 * once sent, and each process, on finding its own pending, reports
 * whether its child's already is.  Children first, that is always so,
 * however the processes are scheduled.  For the converse (a parent sent
 * its signal first must catch its child not yet signalled) the tree and
 * the sender share one CPU and the sender runs SCHED_IDLE: each process
 * woken runs and looks at once, before the sender can go on.
 */
TEST(proc_kill_tree_signals_children_before_their_parent)
{
    pin_to_one_cpu();
    const char *argv[] = {helper_path(), "order-tree", NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, false);
    char line[128];
    for (int i = 0; i < 3; i++) {
        tu_read_line(k.out, line, sizeof line);
        ASSERT_TRUE(!strncmp(line, "ready ", 6));
    }
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    idle_kill_t ik = {.h = h, .signo = SIGUSR1, .rc = -1};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, kill_tree_idle, &ik), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(ik.rc);
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        tu_read_line(k.out, line, sizeof line);
        if (!strncmp(line, "root ", 5)) {
            ASSERT_STR(line, "root got USR1, child pending 1");
            seen |= 1;
        } else if (!strncmp(line, "child ", 6)) {
            ASSERT_STR(line, "child got USR1, grandchild pending 1");
            seen |= 2;
        } else {
            ASSERT_STR(line, "grandchild got USR1");
            seen |= 4;
        }
    }
    ASSERT_EQ(seen, 7);
    ASSERT_OK(rein_proc_kill_tree(h, SIGKILL));
    ASSERT_EQ(kid_reap(&k), 128 + SIGKILL);
    rein_proc_free(h);
}

/* ---------------------------------------------------------- terminate */

/* A TERM-ignoring root with a TERM-ignoring child: both only die of the
 * KILL that follows the grace, and within the bound after it. */
static void stubborn_case(bool fallback)
{
    set_mode(fallback);
    kid_t k;
    pid_t child = helper_start(&k, "stubborn");
    ASSERT_INT(child, >, 0);
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    check_mode(h, fallback);
    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    o.graceful_ms = T_GRACE_MS;
    o.timeout_ms = T_BOUND_MS;
    bool exited = false;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(rein_proc_terminate(h, &o, &exited));
    uint64_t took = test_now_ms() - t0;
    ASSERT_TRUE(exited);
    ASSERT_INT(took, >=, T_GRACE_MS);
    ASSERT_INT(took, <, T_GRACE_MS + T_BOUND_MS);
    ASSERT_FALSE(test_pid_alive(child));
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_EXITED);
    ASSERT_EQ(kid_reap(&k), 128 + SIGKILL);
    rein_proc_free(h);
}

TEST(proc_terminate_term_ignoring_tree_within_grace_and_bound)
{
    stubborn_case(false);
}

TEST(proc_terminate_term_ignoring_tree_fallback)
{
    stubborn_case(true);
}

/* The root forks a TERM-ignoring child when it gets TERM: a child the
 * first capture cannot have seen, killed only thanks to the rescan. */
static void rescan_case(bool fallback)
{
    set_mode(fallback);
    kid_t k;
    helper_start(&k, "fork-on-term");
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    check_mode(h, fallback);
    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    o.graceful_ms = T_GRACE_MS;
    o.timeout_ms = T_BOUND_MS;
    bool exited = false;
    ASSERT_OK(rein_proc_terminate(h, &o, &exited));
    ASSERT_TRUE(exited);
    pid_t late = read_pid_line(k.out, "forked");
    ASSERT_INT(late, >, 0);
    ASSERT_FALSE(test_pid_alive(late));
    ASSERT_EQ(kid_reap(&k), 128 + SIGKILL);
    rein_proc_free(h);
}

TEST(proc_terminate_rescans_after_grace)
{
    rescan_case(false);
}

TEST(proc_terminate_rescans_after_grace_fallback)
{
    rescan_case(true);
}

/* Terminates h with o under a long grace and asserts that the first
 * signal ended it: well before the grace could run out and KILL follow. */
static void terminate_within_grace(rein_proc_t *h, rein_proc_terminate_opts_t *o)
{
    o->graceful_ms = T_LONG_MS;
    bool exited = false;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(rein_proc_terminate(h, o, &exited));
    ASSERT_TRUE(exited);
    ASSERT_INT(test_now_ms() - t0, <, T_LONG_MS / 2);
}

/* A stopped process with a TERM handler can only run it once continued:
 * it exits 42 well within the grace, instead of being killed after it. */
static void stopped_case(bool fallback)
{
    set_mode(fallback);
    kid_t k;
    helper_start(&k, "term-exit");
    ASSERT_OK(kill(k.pid, SIGSTOP));
    wait_state(k.pid, WSTOPPED);
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    check_mode(h, fallback);
    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    terminate_within_grace(h, &o);
    ASSERT_EQ(kid_reap(&k), T_TERM_EXIT_CODE);
    rein_proc_free(h);
}

TEST(proc_terminate_continues_a_stopped_process)
{
    stopped_case(false);
}

TEST(proc_terminate_continues_a_stopped_process_fallback)
{
    stopped_case(true);
}

/* graceful_ms < 0: straight to KILL, far sooner than the default grace a
 * TERM-ignoring process would otherwise cost. */
static void no_grace_case(bool fallback)
{
    set_mode(fallback);
    kid_t k;
    pid_t child = helper_start(&k, "stubborn");
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    ASSERT_EQ(o.graceful_ms, REIN_PROC_GRACEFUL_MS);
    ASSERT_EQ(o.timeout_ms, REIN_PROC_TIMEOUT_MS);
    ASSERT_EQ(o.signal, SIGTERM);
    ASSERT_FALSE(o.group);
    o.graceful_ms = -1;
    bool exited = false;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(rein_proc_terminate(h, &o, &exited));
    ASSERT_TRUE(exited);
    ASSERT_INT(test_now_ms() - t0, <, REIN_PROC_GRACEFUL_MS);
    ASSERT_FALSE(test_pid_alive(child));
    ASSERT_EQ(kid_reap(&k), 128 + SIGKILL);
    rein_proc_free(h);
}

TEST(proc_terminate_without_grace_kills_at_once)
{
    no_grace_case(false);
}

TEST(proc_terminate_without_grace_fallback)
{
    no_grace_case(true);
}

TEST(proc_terminate_group_reaches_a_member_that_is_no_descendant)
{
    /* The inner shell starts a sleep in the group and exits: the sleep is
     * re-parented to the test runner (a subreaper), out of the tree. */
    const char *argv[] = {"sh", "-c",
                          "sh -c 'sleep 60 & echo $!'; echo ready; "
                          "exec sleep 60",
                          NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_PGROUP, false);
    pid_t orphan = read_pid_line(k.out, "");
    char line[32];
    tu_read_line(k.out, line, sizeof line);
    ASSERT_STR(line, "ready");
    rein_proc_t *h, *o_h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    ASSERT_OK(rein_proc_from_pid(orphan, &o_h));
    ASSERT_INT(rein_proc_ppid(o_h), !=, k.pid);
    pid_t pgid;
    ASSERT_OK(rein_proc_group_id(o_h, &pgid));
    ASSERT_EQ(pgid, k.pid);
    pid_t *desc = NULL;
    size_t nd = 0;
    ASSERT_OK(procfs_descendants(k.pid, &desc, &nd));
    for (size_t i = 0; i < nd; i++)
        ASSERT_INT(desc[i], !=, orphan);
    free(desc);

    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    o.group = true;
    bool exited = false;
    ASSERT_OK(rein_proc_terminate(h, &o, &exited));
    ASSERT_TRUE(exited);
    ASSERT_EQ(rein_proc_status(o_h), REIN_PROC_EXITED);
    ASSERT_FALSE(ptree_group_alive(pgid));
    ASSERT_EQ(kid_reap(&k), 128 + SIGTERM);
    rein_proc_free(o_h);
    rein_proc_free(h);
}

/*
 * A terminate with another signal than TERM: proc_helper sig-report reads
 * the usual termination signals from a signalfd and prints each, dying
 * only of the chosen one, after printing whatever was pending with it (so
 * a signal sent before it would show up first).  The grace is long, so
 * dying of the chosen signal is the only quick way out.  With group, a
 * member of the root's group that is no descendant must get it too; this
 * test process becomes its subreaper, so its end can be read as well.
 */
static void chosen_signal_case(bool fallback, int signo, bool group)
{
    set_mode(fallback);
    if (group)
        ASSERT_OK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
    char num[16];
    snprintf(num, sizeof num, "%d", signo);
    const char *argv[] = {helper_path(), "sig-report", num,
                          group ? "member" : NULL, NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_PGROUP, false);
    char line[128];
    long member = 0;
    for (;;) {
        tu_read_line(k.out, line, sizeof line);
        if (!strcmp(line, "ready"))
            break;
        ASSERT_EQ(sscanf(line, "ready member %ld", &member), 1);
    }
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    check_mode(h, fallback);
    rein_proc_t *m = NULL;
    if (group) {
        ASSERT_INT(member, >, 0);
        ASSERT_OK(rein_proc_from_pid((pid_t)member, &m));
        ASSERT_EQ(rein_proc_ppid(m), getpid()); /* no descendant of k */
        pid_t pgid;
        ASSERT_OK(rein_proc_group_id(m, &pgid));
        ASSERT_EQ(pgid, k.pid);
    }

    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    o.signal = signo;
    o.group = group;
    terminate_within_grace(h, &o);
    if (m) /* else the reading below would wait for it for ever */
        ASSERT_EQ(rein_proc_status(m), REIN_PROC_EXITED);

    /* Every line up to EOF (all writers dead): per role, the chosen signal
     * read first, and nothing else but it and the SIGCONT that follows. */
    int first[2] = {0, 0}; /* root, member */
    while (tu_try_read_line(k.out, line, sizeof line)) {
        char role[16];
        int sig;
        ASSERT_EQ(sscanf(line, "%15s sig %d", role, &sig), 2);
        ASSERT_TRUE(!strcmp(role, "root") ||
                    (group && !strcmp(role, "member")));
        int r = !strcmp(role, "member");
        if (!first[r]) {
            first[r] = sig;
            ASSERT_EQ(sig, signo);
        } else {
            ASSERT_TRUE(sig == signo || sig == SIGCONT);
        }
    }
    ASSERT_EQ(first[0], signo);
    ASSERT_EQ(kid_reap(&k), 128 + signo);
    if (group) {
        ASSERT_EQ(first[1], signo);
        int st;
        ASSERT_EQ(waitpid((pid_t)member, &st, 0), member);
        ASSERT_TRUE(WIFSIGNALED(st));
        ASSERT_EQ(WTERMSIG(st), signo);
    }
    rein_proc_free(m);
    rein_proc_free(h);
}

TEST(proc_terminate_sends_the_chosen_signal)
{
    chosen_signal_case(false, SIGUSR1, false);
}

TEST(proc_terminate_sends_the_chosen_signal_fallback)
{
    chosen_signal_case(true, SIGUSR1, false);
}

TEST(proc_terminate_group_gets_the_chosen_signal)
{
    chosen_signal_case(false, SIGINT, true);
}

/*
 * A terminate with group reaches each process once: the group first, then
 * the tree's members outside it.  Both routes used to signal the root and
 * its child, and a second TERM can cut a shell's EXIT trap short.
 * proc_helper sig-count counts a real-time signal, one queued per send:
 * root and child in the group, the loner (a descendant) in its own.
 */
TEST(proc_terminate_signals_each_process_once)
{
    char num[16];
    snprintf(num, sizeof num, "%d", SIGRTMIN + 2);
    const char *argv[] = {helper_path(), "sig-count", num, NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_PGROUP, false);
    char line[128];
    do
        tu_read_line(k.out, line, sizeof line);
    while (strncmp(line, "ready root ", 11));
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    o.signal = SIGRTMIN + 2;
    o.group = true;
    terminate_within_grace(h, &o);
    int seen = 0;
    while (tu_try_read_line(k.out, line, sizeof line)) {
        static const char *const want[] = {"root got 1", "child got 1",
                                           "loner got 1"};
        int i = 0;
        while (i < 3 && strcmp(line, want[i]))
            i++;
        ASSERT_INT(i, <, 3); /* a count of 1, for a role we know */
        seen |= 1 << i;
    }
    ASSERT_EQ(seen, 7);
    ASSERT_EQ(kid_reap(&k), 0);
    rein_proc_free(h);
}

/* ----------------------------------------------------------- pid reuse */

/* Writes last to ns_last_pid, so the next process created gets last + 1. */
static bool set_last_pid(int fd, pid_t last)
{
    char num[32];
    int len = snprintf(num, sizeof num, "%d", (int)last);
    return pwrite(fd, num, (size_t)len, 0) == len;
}

/*
 * A handle whose process exited and was reaped, its pid then given to a
 * new process through ns_last_pid: kill_tree, terminate and every reader
 * must leave the newcomer alone.  The newcomer is a cat that echoes a line
 * back after all of that: a signal sent to it would have ended it first,
 * and it exits 0 at EOF, which no signal gives.
 */
static void reuse_case(bool fallback)
{
    set_mode(fallback);
    int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        SKIP_FACILITY("pid-reuse", "cannot open ns_last_pid: %s (needs root)",
                      strerror(errno));
    const char *argv[] = {"cat", NULL};
    kid_t old;
    kid_start(&old, argv, SPAWN_SESSION, true);
    pid_t pid = old.pid;
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(pid, &h));
    check_mode(h, fallback);
    uint64_t old_start;
    ASSERT_OK(procfs_start_time(pid, &old_start));
    close(old.in);
    old.in = -1;
    ASSERT_EQ(kid_reap(&old), 0);
    if (fallback) {
        /* Without a pidfd, identity is (pid, start time) and start times
         * count clock ticks: two processes on one pid within one tick are
         * indistinguishable, the fallback's documented limit.  Let a tick
         * pass so the test is about reuse, not about that. */
        usleep((useconds_t)(2 * 1000000 / sysconf(_SC_CLK_TCK)));
    }

    kid_t nu;
    bool got = false;
    for (int i = 0; i < T_REUSE_TRIES && !got; i++) {
        if (!set_last_pid(fd, pid - 1)) {
            int e = errno;
            close(fd);
            SKIP_FACILITY("pid-reuse", "cannot write ns_last_pid: %s",
                          strerror(e));
        }
        kid_start(&nu, argv, SPAWN_SESSION, true);
        got = nu.pid == pid;
        if (!got) {
            close(nu.in);
            nu.in = -1;
            kid_reap(&nu);
        }
    }
    close(fd);
    if (!got)
        SKIP_FACILITY("pid-reuse", "pid %d kept being taken by others",
                      (int)pid);
    uint64_t new_start;
    ASSERT_OK(procfs_start_time(pid, &new_start));
    /* With a pidfd even an equal start time must not fool the handle. */
    if (fallback)
        ASSERT_INT(new_start, !=, old_start);

    ASSERT_EQ(rein_proc_status(h), REIN_PROC_EXITED);
    ASSERT_EQ(rein_proc_kill_tree(h, SIGKILL), -ESRCH);
    ASSERT_EQ(rein_proc_kill_tree(h, SIGSTOP), -ESRCH);
    rein_proc_terminate_opts_t o;
    rein_proc_terminate_opts_init(&o);
    o.group = true;
    bool exited = false;
    ASSERT_OK(rein_proc_terminate(h, &o, &exited));
    ASSERT_TRUE(exited);
    o.graceful_ms = -1;
    exited = false;
    ASSERT_OK(rein_proc_terminate(h, &o, &exited));
    ASSERT_TRUE(exited);
    ASSERT_EQ(rein_proc_ppid(h), -ESRCH);
    char **args;
    ASSERT_EQ(rein_proc_args(h, &args), -ESRCH);
    rein_proc_t **kids;
    size_t n;
    ASSERT_EQ(rein_proc_children(h, &kids, &n), -ESRCH);
    ASSERT_OK(rein_proc_wait_for_exit(h, 0, NULL, &exited));
    ASSERT_TRUE(exited);

    /* The newcomer still runs: it echoes, then ends at EOF with 0. */
    ASSERT_EQ(write(nu.in, "ping\n", 5), 5);
    char line[16];
    tu_read_line(nu.out, line, sizeof line);
    ASSERT_STR(line, "ping");
    close(nu.in);
    nu.in = -1;
    ASSERT_EQ(kid_reap(&nu), 0);
    rein_proc_free(h);
}

TEST_SOLO(proc_reused_pid_is_never_signalled, TEST_DEFAULT_TIMEOUT_S)
{
    reuse_case(false);
}

TEST_SOLO(proc_reused_pid_is_never_signalled_fallback, TEST_DEFAULT_TIMEOUT_S)
{
    reuse_case(true);
}

/* ------------------------------------------------------ wait_for_exit */

static void wait_timeout_case(bool fallback)
{
    set_mode(fallback);
    const char *argv[] = {"cat", NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, true);
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    check_mode(h, fallback);
    bool exited = true;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(rein_proc_wait_for_exit(h, T_SHORT_MS, NULL, &exited));
    uint64_t took = test_now_ms() - t0;
    ASSERT_FALSE(exited);
    ASSERT_INT(took, >=, T_SHORT_MS);
    ASSERT_INT(took, <, T_SHORT_MS + T_BOUND_MS);
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_RUNNING);
    close(k.in);
    k.in = -1;
    ASSERT_EQ(kid_reap(&k), 0);
    rein_proc_free(h);
}

TEST(proc_wait_for_exit_times_out)
{
    wait_timeout_case(false);
}

TEST(proc_wait_for_exit_times_out_fallback)
{
    wait_timeout_case(true);
}

/* A process that is not our child (a shell's cat) exits when its stdin
 * closes; the wait returns then, long before its timeout. */
static void wait_exit_case(bool fallback)
{
    set_mode(fallback);
    /* An asynchronous command's stdin is /dev/null unless redirected:
     * hand it the shell's stdin through fd 3. */
    const char *argv[] = {"sh", "-c", "exec 3<&0; cat <&3 & echo $!; wait",
                          NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, true);
    pid_t cat = read_pid_line(k.out, "");
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(cat, &h));
    check_mode(h, fallback);
    ASSERT_EQ(rein_proc_ppid(h), k.pid);
    close(k.in);
    k.in = -1;
    bool exited = false;
    uint64_t t0 = test_now_ms();
    ASSERT_OK(rein_proc_wait_for_exit(h, T_LONG_MS, NULL, &exited));
    ASSERT_TRUE(exited);
    ASSERT_INT(test_now_ms() - t0, <, T_LONG_MS / 2);
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_EXITED);
    ASSERT_EQ(kid_reap(&k), 0);
    rein_proc_free(h);
}

TEST(proc_wait_for_exit_returns_when_a_non_child_exits)
{
    wait_exit_case(false);
}

TEST(proc_wait_for_exit_returns_when_a_non_child_exits_fallback)
{
    wait_exit_case(true);
}

/* How long the cancelling thread lets the waiter block first.  Not a
 * synchronisation: a cancel raised before the wait begins must give the
 * same answer. */
#define T_CANCEL_DELAY_US 100000

static void *cancel_later(void *arg)
{
    usleep(T_CANCEL_DELAY_US);
    rein_cancel_trigger(arg);
    return NULL;
}

static void wait_cancel_case(bool fallback)
{
    set_mode(fallback);
    const char *argv[] = {"cat", NULL};
    kid_t k;
    kid_start(&k, argv, SPAWN_SESSION, true);
    rein_proc_t *h;
    ASSERT_OK(rein_proc_from_pid(k.pid, &h));
    check_mode(h, fallback);
    rein_cancel_t *c;
    ASSERT_OK(rein_cancel_new(&c));
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, cancel_later, c), 0);
    bool exited = true;
    uint64_t t0 = test_now_ms();
    ASSERT_EQ(rein_proc_wait_for_exit(h, T_LONG_MS, c, &exited), -ECANCELED);
    ASSERT_FALSE(exited);
    ASSERT_INT(test_now_ms() - t0, <, T_LONG_MS / 2);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    /* Raised before the call: returns at once. */
    ASSERT_EQ(rein_proc_wait_for_exit(h, -1, c, &exited), -ECANCELED);
    ASSERT_EQ(rein_proc_status(h), REIN_PROC_RUNNING);
    rein_cancel_free(c);
    close(k.in);
    k.in = -1;
    ASSERT_EQ(kid_reap(&k), 0);
    rein_proc_free(h);
}

TEST(proc_wait_for_exit_cancelled_from_another_thread)
{
    wait_cancel_case(false);
}

TEST(proc_wait_for_exit_cancelled_fallback)
{
    wait_cancel_case(true);
}
