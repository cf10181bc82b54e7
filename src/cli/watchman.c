/*
 * watchman.c — ends a `rein serve` server's runs the moment it dies.
 *
 * A server that stops (its client closed stdin, SIGTERM, SIGINT) ends its
 * own runs.  One that is SIGKILLed, killed by the OOM killer or crashes
 * cannot, and its runs used to go on until the next supervisor opened on
 * the state directory and reconciled them: perhaps never, when the agent
 * that started it is gone for good.  That is the process that outlives
 * its agent, which rein exists to prevent.
 *
 * So the server starts a watchman first: a small `rein` process, not its
 * child (it forks once and its parent exits, so the server never has it
 * to reap) and in a session of its own (a signal to the server's process
 * group, or its terminal's hangup, does not reach it), holding the read
 * end of a pipe whose only write end the server holds.  At a clean stop
 * the server writes WATCHMAN_BYE after its supervisor has closed; end of
 * file without it means the server died.  The watchman then waits until
 * the server is gone (its pidfd readable, or its pid and start time no
 * longer a live process), reconciles the state directory — the same
 * reconciliation every supervisor runs when it opens, which ends only
 * runs of dead owners whose recorded identity still matches, records each
 * decision as an event and leaves the rest `lost` — and exits.
 *
 * The watchman is `rein reconcile --watch FD --pid PID [--state-dir DIR]`;
 * its stdio is /dev/null, since the server's stderr may be a pipe its
 * client waits to see closed.
 */
#include "cli/watchman.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/loop.h"
#include "base/procfs.h"
#include "cli/cli.h"
#include "rein.h"

extern char **environ;

/* The byte a server writes when it stops cleanly. */
#define WATCHMAN_BYE 'q'
/* The fd the watchman reads the pipe on. */
#define WATCHMAN_FD 3
/* Without a pidfd, how often it looks at the server's pid meanwhile. */
#define WATCHMAN_POLL_MS 10

int watchman_start(const char *state_dir, int *bye_fd)
{
    int p[2] = {-1, -1}, rc;
    char fdarg[16], pidarg[32];
    *bye_fd = -1;
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    snprintf(fdarg, sizeof fdarg, "%d", WATCHMAN_FD);
    snprintf(pidarg, sizeof pidarg, "%ld", (long)getpid());
    const char *argv[] = {"rein", "reconcile", "--watch", fdarg, "--pid",
                          pidarg, state_dir ? "--state-dir" : NULL,
                          state_dir, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    /* The read end lands on WATCHMAN_FD without O_CLOEXEC (dup2 clears
     * it); every other fd of the server is close-on-exec. */
    if ((rc = posix_spawn_file_actions_adddup2(&fa, p[0], WATCHMAN_FD)) ||
        (rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY,
                                               0)) ||
        (rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY,
                                               0)) ||
        (rc = posix_spawn_file_actions_adddup2(&fa, 1, 2)) ||
        (rc = posix_spawnattr_setsigmask(&at, &none)) ||
        (rc = posix_spawnattr_setsigdefault(&at, &all)) ||
        (rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
                                                POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF))) {
        rc = -rc;
        goto fail;
    }
    pid_t pid;
    /* exec's argv is not const only for historical reasons. */
    if ((rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at,
                          (char *const *)argv, environ))) {
        rc = -rc;
        goto fail;
    }
    close(p[0]);
    p[0] = -1;
    /* The first process forks the watchman and exits once it holds the
     * server's identity: reaped here, before the supervisor (which may
     * make this process a subreaper) exists. */
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            rc = -errno;
            goto fail;
        }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rc = REIN_EINTERNAL; /* it says why on our stderr */
        goto fail;
    }
    *bye_fd = p[1];
    p[1] = -1;
    rc = 0;
fail:
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    return rc;
}

void watchman_bye(int bye_fd)
{
    if (bye_fd < 0)
        return;
    char c = WATCHMAN_BYE;
    while (write(bye_fd, &c, 1) < 0 && errno == EINTR)
        ;
    close(bye_fd);
}

/* Waits, at most WATCHMAN_EXIT_WAIT_MS, until the server (pidfd, or pid
 * and start time where there is no pidfd) is gone. */
static void watchman_await_exit(int pidfd, pid_t pid, uint64_t start)
{
    uint64_t deadline = loop_clock_ms() + WATCHMAN_EXIT_WAIT_MS;
    for (;;) {
        uint64_t now = loop_clock_ms();
        if (now >= deadline)
            return;
        if (pidfd >= 0) {
            struct pollfd pf = {.fd = pidfd, .events = POLLIN};
            int n = poll(&pf, 1, (int)(deadline - now));
            if (n != 0 && !(n < 0 && errno == EINTR))
                return;
        } else {
            if (!procfs_alive(pid, start))
                return;
            poll(NULL, 0, WATCHMAN_POLL_MS);
        }
    }
}

int watchman_main(int argc, char **argv)
{
    const char *state_dir = NULL;
    long fd = -1, pid = -1;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (i + 1 >= argc)
            goto usage;
        if (!strcmp(argv[i], "--watch"))
            fd = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--pid"))
            pid = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--state-dir")) {
            state_dir = argv[++i];
            continue;
        } else
            goto usage;
        if (*end || end == argv[i])
            goto usage;
    }
    if (fd < 0 || fd > INT_MAX || pid <= 1 || pid > INT_MAX)
        goto usage;
    struct stat fst;
    if (fstat((int)fd, &fst) < 0 || !S_ISFIFO(fst.st_mode)) {
        fprintf(stderr, "rein reconcile --watch: fd %ld is not a pipe\n", fd);
        return CLI_EXIT_USAGE;
    }
    /* Still the server's child, and the server waits for us: its pid is
     * its own while we take hold of it. */
    if (getppid() != (pid_t)pid) {
        fprintf(stderr, "rein reconcile --watch: not started by process "
                        "%ld\n",
                pid);
        return CLI_EXIT_USAGE;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    uint64_t start = 0;
    if (procfs_start_time((pid_t)pid, &start) < 0 || getppid() != pid)
        return CLI_EXIT_FAILURE; /* it died meanwhile: nothing to hold */
    pid_t w = fork(); /* a small process, just exec'd */
    if (w < 0)
        return CLI_EXIT_FAILURE;
    if (w > 0)
        _exit(CLI_EXIT_OK);

    char c;
    ssize_t n;
    while ((n = read((int)fd, &c, 1)) < 0 && errno == EINTR)
        ;
    if (n == 1 && c == WATCHMAN_BYE)
        return CLI_EXIT_OK;
    watchman_await_exit(pidfd, (pid_t)pid, start);

    rein_reconcile_stats_t st;
    return cli_reconcile_state("reconcile --watch", state_dir, &st);
usage:
    fprintf(stderr, "rein reconcile: --watch is rein serve's own (usage: "
                    "rein reconcile --watch FD --pid PID [--state-dir "
                    "DIR])\n");
    return CLI_EXIT_USAGE;
}
