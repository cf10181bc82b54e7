/*
 * test_ptree.c — owned process trees: capture, children-first signalling,
 * a stale (pid, start time) never signalled, group guards.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
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
    pid_t pid = tu_sleeper_start(&pidfd);
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

/* How often the reuse test tries to get the old pid back. */
#define T_REUSE_TRIES 200

TEST_SOLO(ptree_pinned_member_is_never_its_successor, TEST_DEFAULT_TIMEOUT_S)
{
    /* A member's start time counts 10 ms ticks: a process given its pid
     * within the same tick would pass the start-time check.  A pinned
     * member is its pidfd, so even with the successor's start time written
     * into the record it is neither alive nor signalled. */
    int nsfd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
    if (nsfd < 0)
        SKIP_FACILITY("pid-reuse", "cannot open ns_last_pid: %s (needs root)",
                      strerror(errno));
    const char *argv[] = {"sleep", "30", NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    pid_t pid, nu = 0;
    int pidfd, nufd = -1;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    ptree_t t;
    ASSERT_OK(ptree_capture_pinned(pid, &t));
    ASSERT_EQ(t.n, 1);
    if (t.v[0].pidfd < 0) {
        close(nsfd);
        ptree_free(&t);
        kill(pid, SIGKILL);
        spawn_reap(pid, pidfd, NULL);
        SKIP_FACILITY("pidfd", "no pidfd_open: the member is unpinned");
    }
    ASSERT_EQ(ptree_signal(&t, SIGKILL), 1);
    ASSERT_OK(spawn_reap(pid, pidfd, NULL));
    if (pidfd >= 0)
        close(pidfd);
    for (int i = 0; i < T_REUSE_TRIES && nu != pid; i++) {
        char num[32];
        int len = snprintf(num, sizeof num, "%d", (int)pid - 1);
        if (pwrite(nsfd, num, (size_t)len, 0) != len) {
            /* Opening it is allowed to anyone; writing needs root. */
            int err = errno;
            close(nsfd);
            if (nu > 0) {
                kill(nu, SIGKILL);
                spawn_reap(nu, nufd, NULL);
            }
            SKIP_FACILITY("pid-reuse", "cannot write ns_last_pid: %s",
                          strerror(err));
        }
        if (nu > 0) {
            kill(nu, SIGKILL);
            spawn_reap(nu, nufd, NULL);
            if (nufd >= 0)
                close(nufd);
        }
        ASSERT_OK(spawn_start(&o, &nu, &nufd, NULL));
    }
    close(nsfd);
    if (nu != pid) {
        kill(nu, SIGKILL);
        spawn_reap(nu, nufd, NULL);
        SKIP_FACILITY("pid-reuse", "pid %d kept being taken by others",
                      (int)pid);
    }
    uint64_t st;
    ASSERT_OK(procfs_start_time(nu, &st));
    t.v[0].start_time = st; /* as if both had started in one tick */
    ASSERT_FALSE(ptree_member_alive(&t.v[0]));
    ASSERT_EQ(ptree_count_alive(&t), 0);
    ASSERT_EQ(ptree_signal(&t, SIGKILL), 0);
    ASSERT_EQ(ptree_signal_member(&t.v[0], SIGKILL), -ESRCH);
    ASSERT_TRUE(procfs_alive(nu, st)); /* the successor lives on */
    /* The same record unpinned cannot tell them apart: the limit the pin
     * removes. */
    ptree_member_t bare = PTREE_MEMBER(nu, st);
    ASSERT_TRUE(ptree_member_alive(&bare));
    ptree_free(&t);
    ASSERT_OK(kill(nu, SIGKILL));
    ASSERT_OK(spawn_reap(nu, nufd, NULL));
    if (nufd >= 0)
        close(nufd);
}

TEST(ptree_pinned_capture_holds_each_member)
{
    int pidfd;
    pid_t pid = start_tree(&pidfd);
    ptree_t t;
    ASSERT_OK(ptree_capture_pinned(pid, &t));
    ASSERT_EQ(t.n, 3);
    if (t.v[0].pidfd < 0) { /* valgrind: no pidfd_open */
        ptree_signal(&t, SIGKILL);
        spawn_reap(pid, pidfd, NULL);
        ptree_free(&t);
        SKIP_FACILITY("pidfd", "no pidfd_open: members are unpinned");
    }
    for (size_t i = 0; i < t.n; i++)
        ASSERT_INT(t.v[i].pidfd, >=, 0);
    ptree_t copy = {NULL, 0};
    ASSERT_OK(ptree_merge(&copy, &t));
    ASSERT_EQ(copy.n, 3);
    ASSERT_INT(copy.v[1].pidfd, !=, t.v[1].pidfd); /* its own */
    ptree_free(&t); /* the copy's pins stay good */
    ASSERT_EQ(ptree_signal(&copy, SIGTERM), 3);
    uint64_t t0 = test_now_ms();
    while (ptree_count_alive(&copy) != 1 && test_now_ms() - t0 < 5000)
        usleep(5000);
    ASSERT_EQ(ptree_count_alive(&copy), 1); /* the TERM-ignoring shell */
    ASSERT_INT(ptree_signal(&copy, SIGKILL), >=, 1); /* zombies count */
    int code;
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    ASSERT_EQ(code, 128 + SIGKILL);
    ptree_free(&copy);
    if (pidfd >= 0)
        close(pidfd);
}

/* ptree_add takes the caller's word: a member added twice is one, and an
 * identity no live process has is added all the same (ptree_merge, which
 * checks, leaves it out). */
TEST(ptree_add_keeps_one_of_each_without_a_liveness_check)
{
    int pidfd;
    pid_t pid = tu_sleeper_start(&pidfd);
    uint64_t st;
    ASSERT_OK(procfs_start_time(pid, &st));
    ptree_t t = {NULL, 0};
    ASSERT_OK(ptree_add(&t, pid, st));
    ASSERT_OK(ptree_add(&t, pid, st));
    ASSERT_EQ(t.n, 1);
    ASSERT_EQ(t.v[0].pidfd, -1);
    ASSERT_OK(ptree_add(&t, pid, st + 1)); /* not that process */
    ASSERT_EQ(t.n, 2);
    ptree_t merged = {NULL, 0};
    ASSERT_OK(ptree_merge(&merged, &t));
    ASSERT_EQ(merged.n, 1);
    ASSERT_EQ(merged.v[0].start_time, st);
    ptree_free(&merged);
    ptree_free(&t);
    tu_sleeper_stop(pid, pidfd);
}

TEST(ptree_refuses_foreign_groups)
{
    ASSERT_EQ(ptree_signal_group(0, 0), -EPERM);
    ASSERT_EQ(ptree_signal_group(1, 0), -EPERM);
    ASSERT_EQ(ptree_signal_group(getpgrp(), 0), -EPERM);
    ASSERT_EQ(ptree_signal_one(1, 0, 0), -EPERM);
    ASSERT_EQ(ptree_signal_one(getpid(), 0, 0), -EPERM);
}

/* A pass signals the group first and then only what it has not reached:
 * members of that group, and pids noted, are not due again.  Signal 0
 * (nothing delivered) keeps the tree as it is. */
TEST(ptree_pass_reaches_each_process_once)
{
    int pidfd;
    pid_t pid = start_tree(&pidfd); /* its own session and group */
    ptree_t t;
    ASSERT_OK(ptree_capture(pid, &t));
    ASSERT_EQ(t.n, 3);
    ptree_pass_t p;
    ptree_pass_begin(&p, 0, pid);
    ASSERT_EQ(p.pgid, pid);
    for (size_t i = 0; i < t.n; i++)
        ASSERT_FALSE(ptree_pass_due(&p, t.v[i].pid)); /* in the group */
    ASSERT_EQ(ptree_pass_tree(&p, &t), 0);
    ASSERT_EQ(ptree_pass_member(&p, &t.v[0]), 1);
    ASSERT_EQ(p.n, 0);
    ptree_pass_end(&p);

    /* No group: each member is sent it once, and noted. */
    ptree_pass_begin(&p, 0, 0);
    ASSERT_EQ(ptree_pass_tree(&p, &t), 3);
    ASSERT_EQ(ptree_pass_tree(&p, &t), 0);
    ASSERT_EQ(p.n, 3);
    for (size_t i = 1; i < p.n; i++)
        ASSERT_INT(p.sent[i - 1], <, p.sent[i]);
    ptree_pass_end(&p);
    ASSERT_EQ(p.n, 0);

    /* Notes out of order stay sorted and single. */
    ptree_pass_begin(&p, 0, 0);
    pid_t notes[] = {300, 100, 200, 100, 400, 50};
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
        ptree_pass_note(&p, notes[i]);
    ASSERT_EQ(p.n, 5);
    ASSERT_EQ(p.sent[0], 50);
    ASSERT_EQ(p.sent[4], 400);
    ASSERT_FALSE(ptree_pass_due(&p, 200));
    ASSERT_TRUE(ptree_pass_due(&p, 250));
    ptree_pass_end(&p);

    /* A group that is not ours to signal is left to the other routes. */
    ptree_pass_begin(&p, 0, getpgrp());
    ASSERT_EQ(p.pgid, 0);
    ASSERT_TRUE(ptree_pass_due(&p, getpid()));
    ptree_pass_end(&p);

    ASSERT_INT(ptree_signal(&t, SIGKILL), >=, 1);
    int code;
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    ASSERT_EQ(code, 128 + SIGKILL);
    ptree_free(&t);
    if (pidfd >= 0)
        close(pidfd);
}
