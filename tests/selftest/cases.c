/*
 * cases.c — tests of the test runner itself, linked with harness.c into
 * build/tests/harness-selftest (never into the real suite).  Each case
 * behaves in one way the runner must judge; scripts/check-harness.sh runs
 * the binary and checks every verdict, so a runner that stopped killing a
 * test at its timeout, stopped failing a missing facility on CI, stopped
 * seeing processes a test left behind, or changed its last line fails
 * `make check`.
 *
 * A case that needs to tell the script something (its pid and start time)
 * writes it under $REIN_SELFTEST_DIR, which outlives the runner's own
 * temporary directory.
 */
#include "../harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes "<pid> <start time>" of the calling process to $REIN_SELFTEST_DIR/
 * name, so the script can tell later whether that very process is gone. */
static void note_self(const char *name)
{
    char path[4096], stat[1024];
    const char *dir = getenv("REIN_SELFTEST_DIR");
    ASSERT_TRUE(dir != NULL);
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(fd >= 0);
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    ASSERT_TRUE(n > 0);
    stat[n] = 0;
    /* Field 22, counted after the command name's closing parenthesis. */
    char *p = strrchr(stat, ')');
    ASSERT_TRUE(p != NULL);
    unsigned long long start = 0;
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " "))
        if (++field == 22)
            start = strtoull(tok, NULL, 10);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fprintf(f, "%d %llu\n", (int)getpid(), start);
    fclose(f);
}

/* A noted process says so with one byte on the pipe... */
static void told(int fd)
{
    ASSERT_EQ(write(fd, "!", 1), 1);
}

/* ...and the test waits for n of them. */
static void wait_told(int fd, int n)
{
    char c;
    for (int i = 0; i < n; i++)
        ASSERT_EQ(read(fd, &c, 1), 1);
}

TEST(selftest_passes)
{
    ASSERT_EQ(2 + 2, 4);
}

/* check-harness.sh starts the runner with SIGHUP and SIGPIPE ignored, as
 * nohup and some CI runners do: each test still starts with every
 * disposition at its default. */
TEST(selftest_starts_with_default_signal_dispositions)
{
    static const int sigs[] = {SIGHUP, SIGPIPE, SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        ASSERT_EQ(sigaction(sigs[i], NULL, &sa), 0);
        ASSERT_TRUE(sa.sa_handler == SIG_DFL);
    }
}

TEST(selftest_fails_with_both_values)
{
    int got = 41;
    ASSERT_EQ(got, 42);
}

TEST(selftest_skips)
{
    SKIP("no such thing here");
}

TEST(selftest_skips_a_facility)
{
    SKIP_FACILITY("cgroup", "pretend it is missing");
}

TEST_T(selftest_times_out, 1)
{
    note_self("timeout.pid");
    for (;;)
        pause();
}

TEST(selftest_leaves_a_process_in_its_group)
{
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        note_self("leak.pid");
        told(ready[1]);
        for (;;)
            pause();
    }
    close(ready[1]); /* a child that dies first gives EOF, not a hang */
    wait_told(ready[0], 1); /* return only once the child is noted */
}

TEST(selftest_dies_of_a_signal)
{
    raise(SIGABRT);
}

/* A daemon (a session of its own, so outside the test's group) with a child
 * of its own: the end-of-suite sweep must report and end both, the child
 * once ending the daemon has handed it to the runner. */
TEST(selftest_leaves_a_daemon_with_a_child)
{
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        setsid();
        pid_t kid = fork();
        if (kid == 0) {
            note_self("grandchild.pid");
            told(ready[1]);
            for (;;)
                pause();
        }
        note_self("daemon.pid");
        told(ready[1]);
        for (;;)
            pause();
    }
    close(ready[1]);
    wait_told(ready[0], 2);
}
