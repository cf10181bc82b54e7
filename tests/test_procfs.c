/*
 * test_procfs.c — /proc readers: stat fields, start time, boot id, children
 * of every thread, breadth-first descendants, cmdline, exe.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/procfs.h"
#include "base/spawn.h"
#include "harness.h"

TEST(procfs_stat_of_self)
{
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(getpid(), &st));
    ASSERT_EQ(st.pid, getpid());
    ASSERT_EQ(st.ppid, getppid());
    ASSERT_EQ(st.pgrp, getpgrp());
    ASSERT_EQ(st.session, getsid(0));
    ASSERT_INT(st.start_time, >, 0);
    ASSERT_EQ(st.state, 'R');
    ASSERT_INT(strlen(st.comm), >, 0); /* "rein-test", or valgrind's name */
    ASSERT_TRUE(procfs_alive(getpid(), st.start_time));
    ASSERT_FALSE(procfs_alive(getpid(), st.start_time + 1));
    ASSERT_EQ(procfs_read_stat(0x3fffffff, &st), -ESRCH);
}

TEST(procfs_boot_id_is_a_uuid)
{
    char id[PROCFS_BOOT_ID_LEN];
    ASSERT_OK(procfs_boot_id(id));
    ASSERT_EQ(strlen(id), 36);
    ASSERT_EQ(id[8], '-');
    ASSERT_EQ(id[13], '-');
}

TEST(procfs_children_and_descendants_of_a_shell_tree)
{
    /* sh -> (sleep, sh -> sleep): two children, three descendants. */
    spawn_opts_t o;
    const char *argv[] = {"sh", "-c",
                    "sleep 30 & sh -c 'sleep 30 & wait' & wait", NULL};
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    pid_t pid;
    int pidfd;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    pid_t *kids = NULL, *all = NULL;
    size_t nk = 0, na = 0;
    uint64_t t0 = test_now_ms();
    while (test_now_ms() - t0 < 5000) {
        free(all);
        all = NULL;
        ASSERT_OK(procfs_descendants(pid, &all, &na));
        if (na == 3)
            break;
        usleep(10000); /* polling /proc: no event says "forked" */
    }
    ASSERT_EQ(na, 3);
    ASSERT_OK(procfs_children(pid, &kids, &nk));
    ASSERT_EQ(nk, 2);
    /* Breadth-first: the direct children come first. */
    ASSERT_TRUE((all[0] == kids[0] && all[1] == kids[1]) ||
                (all[0] == kids[1] && all[1] == kids[0]));
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(all[2], &st));
    ASSERT_TRUE(st.ppid == kids[0] || st.ppid == kids[1]);
    ASSERT_EQ(st.session, pid);
    ASSERT_OK(kill(-pid, SIGKILL)); /* our own session's group */
    ASSERT_OK(spawn_reap(pid, pidfd, NULL));
    if (pidfd >= 0)
        close(pidfd);
    free(kids);
    free(all);
}

TEST(procfs_cmdline_and_exe)
{
    char **argv = NULL;
    ASSERT_OK(procfs_cmdline(getpid(), &argv));
    ASSERT_CONTAINS(argv[0], "rein-test");
    procfs_strv_free(argv);
    char exe[4096];
    ASSERT_OK(procfs_exe(getpid(), exe, sizeof exe));
    ASSERT_CONTAINS(exe, "/tests/rein-test");
    ASSERT_EQ(procfs_exe(0x3fffffff, exe, sizeof exe), -ESRCH);
    ASSERT_EQ(procfs_cmdline(0x3fffffff, &argv), -ESRCH);
}

TEST(procfs_list_all_includes_self_sorted)
{
    pid_t *v;
    size_t n;
    ASSERT_OK(procfs_list_all(&v, &n));
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == getpid())
            found = true;
        if (i)
            ASSERT_INT(v[i - 1], <, v[i]);
    }
    ASSERT_TRUE(found);
    free(v);
}
