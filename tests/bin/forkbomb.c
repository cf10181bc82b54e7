/*
 * forkbomb.c — a controlled fork bomb for test_contain.
 *
 * usage: forkbomb MAX
 *
 * Forks children that each block on a pipe (so every one keeps holding a
 * task), until fork fails or MAX children exist, then prints
 * "forked <count> <why>" where why is "eagain" (a limit stopped it), "max"
 * (nothing did) or the error's name.  It then waits for its stdin to reach
 * EOF or for a signal; on EOF it releases and reaps its children and exits,
 * so nothing outlives it.  It is linear, not exponential: the count alone
 * measures the limit, and MAX keeps it harmless where there is none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long max = strtol(argv[1], NULL, 10);
    int hold[2];
    if (max <= 0 || pipe(hold) < 0)
        return 2;
    long count = 0;
    int err = 0;
    while (count < max) {
        pid_t pid = fork();
        if (pid < 0) {
            err = errno;
            break;
        }
        if (pid == 0) {
            char c;
            close(hold[1]);
            /* Returns at EOF, when the parent lets go. */
            while (read(hold[0], &c, 1) < 0 && errno == EINTR)
                ;
            _exit(0);
        }
        count++;
    }
    dprintf(1, "forked %ld %s\n", count,
            err == EAGAIN ? "eagain" : err ? strerror(err) : "max");
    char buf[64];
    for (;;) {
        ssize_t k = read(0, buf, sizeof buf);
        if (k > 0 || (k < 0 && errno == EINTR))
            continue;
        break;
    }
    close(hold[1]);
    for (;;) {
        if (wait(NULL) > 0 || errno == EINTR)
            continue;
        break;
    }
    return 0;
}
