/*
 * procfs_helper.c — processes with an awkward /proc shape for test_procfs.
 *
 * Each mode prints one line on stdout once it is set up, so a test
 * synchronises on that line instead of sleeping, then waits for signals
 * for ever:
 *
 *   thread-fork   a second thread forks a child (which pauses) and stays
 *                 alive itself, so the child is listed only in that
 *                 thread's /proc/<pid>/task/<tid>/children, not in the
 *                 main thread's; prints "ready <tid> <child>".
 *   comm NAME     sets its comm to NAME (prctl PR_SET_NAME: exec -a only
 *                 changes argv[0]), so NAME may hold ") (" and spaces that
 *                 a stat parser must not be fooled by; prints "ready".
 *
 * Every process here dies with the thread that started it
 * (PR_SET_PDEATHSIG), so a test that fails half-way leaves nothing behind.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Dies with the thread that forked us; false if that already happened. */
static int die_with_parent(pid_t parent)
{
    return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0 &&
           getppid() == parent;
}

static void *thread_fork(void *arg)
{
    (void)arg;
    pid_t self = getpid();
    pid_t kid = fork();
    if (kid == 0) {
        if (!die_with_parent(self))
            _exit(1);
        for (;;)
            pause();
    }
    if (kid < 0)
        _exit(1);
    /* The thread stays: were it to end, its children would pass to a
     * thread still running (the main one), and the test would prove
     * nothing. */
    dprintf(1, "ready %ld %ld\n", (long)syscall(SYS_gettid), (long)kid);
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        return 2;
    if (!strcmp(argv[1], "thread-fork")) {
        pthread_t th;
        if (pthread_create(&th, NULL, thread_fork, NULL) != 0)
            return 1;
        pthread_join(th, NULL);
        return 1;
    }
    if (!strcmp(argv[1], "comm") && argc == 3) {
        if (prctl(PR_SET_NAME, argv[2], 0, 0, 0) < 0)
            return 1;
        dprintf(1, "ready\n");
        for (;;)
            pause();
    }
    return 2;
}
