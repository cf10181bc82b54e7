/*
 * test_ptree.c — owned process trees: capture, children-first signalling,
 * a stale (pid, start time) never signalled, group guards.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "base/procfs.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"

/* A process ignoring TERM (a shell that exec'd sleep) with two sleeping
 * children that do not; returns once the shell said it is ready. */
static pid_t start_tree(int *pidfd)
{
    const char *argv[] = {"sh", "-c",
                          "sleep 30 & sleep 30 & trap '' TERM; echo ready; "
                          "exec sleep 30",
                          NULL};
    pid_t pid;
    int out = tu_spawn_piped(argv, SPAWN_SESSION, -1, &pid, pidfd);
    char buf[16];
    ASSERT_EQ(read(out, buf, sizeof buf), 6);
    close(out);
    return pid;
}

TEST(ptree_capture_signal_and_kill)
{
    int pidfd;
    pid_t pid = start_tree(&pidfd);
    ptree_t t;
    ASSERT_OK(ptree_capture(pid, &t));
    ASSERT_EQ(t.n, 3);
    ASSERT_EQ(t.v[0].pid, pid);
    /* TERM: the sleeps die, the shell ignores it. */
    ASSERT_EQ(ptree_signal(&t, SIGTERM), 3);
    uint64_t t0 = test_now_ms();
    while (ptree_count_alive(&t) != 1 && test_now_ms() - t0 < 5000)
        usleep(5000);
    ASSERT_EQ(ptree_count_alive(&t), 1);
    ASSERT_TRUE(procfs_alive(pid, t.v[0].start_time));
    ASSERT_INT(ptree_signal(&t, SIGKILL), >=, 1);
    int code;
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    ASSERT_EQ(code, 128 + SIGKILL);
    ASSERT_EQ(ptree_count_alive(&t), 0);
    ASSERT_FALSE(ptree_group_alive(pid));
    ptree_free(&t);
    if (pidfd >= 0)
        close(pidfd);
}

TEST(ptree_stale_start_time_is_never_signalled)
{
    int pidfd;
    const char *argv[] = {"sleep", "30", NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    pid_t pid;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    uint64_t st;
    ASSERT_OK(procfs_start_time(pid, &st));
    /* Same pid, another start time: as if the pid had been reused. */
    ASSERT_EQ(ptree_signal_one(pid, st + 1, SIGKILL), -ESRCH);
    ASSERT_TRUE(procfs_alive(pid, st));
    ASSERT_OK(ptree_signal_one(pid, st, SIGKILL));
    ASSERT_OK(spawn_reap(pid, pidfd, NULL));
    ASSERT_EQ(ptree_signal_one(pid, st, SIGKILL), -ESRCH);
    if (pidfd >= 0)
        close(pidfd);
}

TEST(ptree_refuses_foreign_groups)
{
    ASSERT_EQ(ptree_signal_group(0, 0), -EPERM);
    ASSERT_EQ(ptree_signal_group(1, 0), -EPERM);
    ASSERT_EQ(ptree_signal_group(getpgrp(), 0), -EPERM);
    ASSERT_EQ(ptree_signal_one(1, 0, 0), -EPERM);
    ASSERT_EQ(ptree_signal_one(getpid(), 0, 0), -EPERM);
}
