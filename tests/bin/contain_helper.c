/*
 * contain_helper.c — process shapes for test_contain that cross a run's
 * boundary in known ways.
 *
 * Each mode prints lines on stdout once its processes are in place, so a
 * test synchronises on them instead of sleeping, then waits for signals
 * for ever:
 *
 *   tree     forks one child (a grandchild of the test), prints
 *            "child <pid>".
 *   daemon   the classic double fork: a child calls setsid() and forks
 *            the daemon, then exits, so the daemon is orphaned in a new
 *            session.  The daemon prints "daemon <pid>"; the root prints
 *            "parted" once it has reaped the middle process, i.e. once the
 *            daemon has been re-parented.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static __attribute__((noreturn)) void wait_forever(void)
{
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "tree")) {
        pid_t kid = fork();
        if (kid < 0)
            return 1;
        if (kid == 0)
            wait_forever();
        dprintf(1, "child %ld\n", (long)kid);
        wait_forever();
    }
    if (!strcmp(argv[1], "daemon")) {
        pid_t mid = fork();
        if (mid < 0)
            return 1;
        if (mid == 0) {
            if (setsid() < 0)
                _exit(1);
            pid_t d = fork();
            if (d < 0)
                _exit(1);
            if (d == 0) {
                dprintf(1, "daemon %ld\n", (long)getpid());
                wait_forever();
            }
            _exit(0);
        }
        int st;
        if (waitpid(mid, &st, 0) != mid || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            return 1;
        dprintf(1, "parted\n");
        wait_forever();
    }
    return 2;
}
