/*
 * test_loop.c — the event loop: timers, fd watchers, child exits through a
 * pidfd and through the SIGCHLD fallback, signals, cancel tokens.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cancel.h"
#include "base/loop.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"

struct order {
    int seen[8];
    int n;
};

static void note_timer(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    struct order *o = data;
    o->seen[o->n++] = (int)id;
}

TEST(loop_timers_fire_in_deadline_order_and_delete_works)
{
    loop_t *l;
    struct order o = {{0}, 0};
    uint64_t a, b, c;
    ASSERT_OK(loop_new(&l));
    uint64_t t0 = loop_clock_ms();
    ASSERT_OK(loop_timer_add(l, 30, note_timer, &o, &a));
    ASSERT_OK(loop_timer_add(l, 10, note_timer, &o, &b));
    ASSERT_OK(loop_timer_add(l, 20, note_timer, &o, &c));
    loop_timer_del(l, c);
    loop_timer_del(l, 0);     /* no-op */
    loop_timer_del(l, 99999); /* unknown: no-op */
    while (o.n < 2)
        ASSERT_INT(loop_run_once(l, 1000), >=, 0);
    ASSERT_EQ(o.seen[0], (int)b);
    ASSERT_EQ(o.seen[1], (int)a);
    ASSERT_INT(loop_clock_ms() - t0, >=, 29);
    ASSERT_INT(loop_run_once(l, 0), ==, 0); /* nothing left */
    loop_free(l);
}

struct pipe_ctx {
    int reads;
    char got[64];
    size_t len;
};

static void on_read_then_remove(loop_t *l, int fd, unsigned ev, void *data)
{
    struct pipe_ctx *c = data;
    if (ev & LOOP_READ) {
        ssize_t n = read(fd, c->got + c->len, sizeof c->got - c->len - 1);
        if (n > 0)
            c->len += (size_t)n;
    }
    c->reads++;
    loop_io_del(l, fd); /* removing itself inside its own callback */
}

TEST(loop_io_watcher_reads_and_may_remove_itself)
{
    loop_t *l;
    int p[2];
    struct pipe_ctx c = {0, {0}, 0};
    ASSERT_OK(loop_new(&l));
    ASSERT_OK(pipe2(p, O_CLOEXEC | O_NONBLOCK));
    ASSERT_OK(loop_io_add(l, p[0], LOOP_READ, on_read_then_remove, &c));
    ASSERT_EQ(loop_io_add(l, p[0], LOOP_READ, on_read_then_remove, &c),
              -EEXIST);
    ASSERT_EQ(write(p[1], "hi", 2), 2);
    ASSERT_INT(loop_run_once(l, 1000), ==, 1);
    ASSERT_STR(c.got, "hi");
    ASSERT_EQ(write(p[1], "more", 4), 4);
    ASSERT_INT(loop_run_once(l, 50), ==, 0); /* no longer watched */
    ASSERT_EQ(c.reads, 1);
    ASSERT_EQ(loop_io_del(l, p[0]), -ENOENT);
    close(p[0]);
    close(p[1]);
    loop_free(l);
}

struct child_ctx {
    pid_t pid;
    int code;
    int calls;
    bool zombie_in_callback;
};

static void on_child(loop_t *l, pid_t pid, const siginfo_t *info, void *data)
{
    (void)l;
    struct child_ctx *c = data;
    c->pid = pid;
    c->code = spawn_code_from_info(info);
    c->calls++;
    /* Not reaped yet: the pid stays reserved as a zombie. */
    procfs_stat_t st;
    c->zombie_in_callback = procfs_read_stat(pid, &st) == 0 && st.state == 'Z';
}

static void run_child_exit(bool fallback, const char *const *argv,
                           int want_code)
{
    if (fallback)
        setenv("REIN_PIDFD", "0", 1);
    loop_t *l;
    ASSERT_OK(loop_new(&l));
    if (!fallback && !loop_uses_pidfd(l))
        SKIP_FACILITY("pidfd", "pidfd_open is not available");
    ASSERT_EQ(loop_uses_pidfd(l), !fallback);
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    pid_t pid;
    int pidfd;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    struct child_ctx c = {0, -1, 0, false};
    ASSERT_OK(loop_child_add(l, pid, pidfd, on_child, &c));
    uint64_t t0 = loop_clock_ms();
    while (!c.calls && loop_clock_ms() - t0 < 10000)
        ASSERT_INT(loop_run_once(l, 1000), >=, 0);
    ASSERT_EQ(c.calls, 1);
    ASSERT_EQ(c.pid, pid);
    ASSERT_EQ(c.code, want_code);
    ASSERT_TRUE(c.zombie_in_callback);
    int code;
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    ASSERT_EQ(code, want_code);
    if (pidfd >= 0)
        close(pidfd);
    loop_free(l);
}

TEST(loop_child_exit_through_pidfd)
{
    const char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
    run_child_exit(false, argv, 7);
}

TEST(loop_child_exit_through_sigchld_fallback)
{
    const char *argv[] = {"/bin/sh", "-c", "exit 9", NULL};
    run_child_exit(true, argv, 9);
}

/* Linux 5.3, as a seccomp filter makes this kernel: pidfd_open works and
 * a pidfd polls readable at the exit, but waitid(P_PIDFD) is EINVAL.  The
 * exit is still reported (through the pid), not spun on until the end
 * of time. */
TEST(loop_child_exit_through_pidfd_without_p_pidfd)
{
    tu_syscall_fails(__NR_waitid, 0, 3 /* P_PIDFD */, EINVAL);
    siginfo_t info;
    ASSERT_EQ(waitid((idtype_t)3, 0, &info, WEXITED | WNOHANG), -1);
    ASSERT_EQ(errno, EINVAL); /* the filter answers as 5.3 would */
    const char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
    run_child_exit(false, argv, 7);
}

TEST(loop_child_killed_by_signal_reports_128_plus_signo)
{
    const char *argv[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
    run_child_exit(false, argv, 128 + SIGTERM);
}

TEST(loop_fallback_child_that_exited_before_watch_is_seen)
{
    setenv("REIN_PIDFD", "0", 1);
    loop_t *l;
    ASSERT_OK(loop_new(&l));
    spawn_opts_t o;
    spawn_opts_init(&o);
    const char *argv[] = {"/bin/true", NULL};
    o.file = argv[0];
    o.argv = argv;
    pid_t pid;
    int pidfd;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    /* Let it exit (and its SIGCHLD go unseen) before the watch exists. */
    siginfo_t info;
    ASSERT_OK(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT));
    struct child_ctx c = {0, -1, 0, false};
    ASSERT_OK(loop_child_add(l, pid, -1, on_child, &c));
    ASSERT_INT(loop_run_once(l, 1000), >=, 1);
    ASSERT_EQ(c.calls, 1);
    ASSERT_EQ(c.code, 0);
    ASSERT_OK(spawn_reap(pid, -1, NULL));
    if (pidfd >= 0)
        close(pidfd);
    loop_free(l);
}

static void on_signal(loop_t *l, int signo, void *data)
{
    (void)l;
    *(int *)data = signo;
}

TEST(loop_signal_is_delivered_through_signalfd)
{
    loop_t *l;
    int got = 0;
    ASSERT_OK(loop_new(&l));
    ASSERT_OK(loop_signal_add(l, SIGUSR1, on_signal, &got));
    ASSERT_EQ(loop_signal_add(l, SIGCHLD, on_signal, &got), -EINVAL);
    ASSERT_OK(kill(getpid(), SIGUSR1));
    ASSERT_INT(loop_run_once(l, 1000), >=, 1);
    ASSERT_EQ(got, SIGUSR1);
    loop_free(l);
    /* The mask is restored: SIGUSR1 no longer blocked. */
    sigset_t cur;
    pthread_sigmask(SIG_SETMASK, NULL, &cur);
    ASSERT_EQ(sigismember(&cur, SIGUSR1), 0);
}

static void *trigger_later(void *arg)
{
    usleep(20000);
    rein_cancel_trigger(arg);
    return NULL;
}

static void on_cancel(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)fd;
    (void)ev;
    *(int *)data = 1;
    loop_stop(l);
}

TEST(cancel_token_from_another_thread_wakes_the_loop)
{
    rein_cancel_t *c;
    loop_t *l;
    int woke = 0;
    pthread_t th;
    ASSERT_OK(rein_cancel_new(&c));
    ASSERT_FALSE(rein_cancel_triggered(c));
    ASSERT_OK(loop_new(&l));
    ASSERT_OK(loop_io_add(l, cancel_fd(c), LOOP_READ, on_cancel, &woke));
    ASSERT_OK(pthread_create(&th, NULL, trigger_later, c));
    ASSERT_OK(loop_run(l)); /* blocks until the token is raised */
    pthread_join(th, NULL);
    ASSERT_EQ(woke, 1);
    ASSERT_TRUE(rein_cancel_triggered(c));
    rein_cancel_trigger(c); /* twice: no-op */
    ASSERT_TRUE(rein_cancel_triggered(c));
    loop_free(l);
    rein_cancel_free(c);
    rein_cancel_free(NULL);
    ASSERT_FALSE(rein_cancel_triggered(NULL));
}
