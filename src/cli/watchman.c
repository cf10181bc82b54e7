/*
 * watchman.c — ends the runs of an owner (`rein serve`, `rein run`) the
 * moment it dies.
 *
 * An owner that stops (a server's client closed stdin, SIGTERM, SIGINT; a
 * proxy's command exited) ends its own runs.  One that is SIGKILLed, killed
 * by the OOM killer or crashes cannot, and its runs used to go on until the
 * next supervisor opened on the state directory and reconciled them:
 * perhaps never, when the agent that started it is gone for good.  That is
 * the process that outlives its agent, which rein exists to prevent.  (A
 * proxy's PTY hangs up its command's foreground as it dies, but a job that
 * ignores SIGHUP, or left the terminal's session, stays.)
 *
 * So the owner starts a watchman before its supervisor: a small `rein`
 * process, not its child (a fork of the owner starts it and exits, so the
 * owner never has it to reap, a subreaper owner never adopts it as a
 * run's orphan, and a caller that kills the owner's process tree does not
 * find it there) and in a session of its own (a signal to the owner's
 * process group, or its terminal's hangup, does not reach it), holding the
 * read end of a pipe whose only write end the owner holds.  At a clean stop
 * the owner writes WATCHMAN_BYE after its supervisor has closed; end of
 * file without it means the owner died.  The watchman then waits until
 * the owner is gone (its pidfd readable, or its pid and start time no
 * longer a live process), reconciles the state directory — the same
 * reconciliation every supervisor runs when it opens, which ends only
 * runs of dead owners whose recorded identity still matches, records each
 * decision as an event and leaves the rest `lost` — and exits.
 *
 * The watchman is `rein reconcile --watch FD --pid PID --start TICKS
 * [--state-dir DIR]`, TICKS being the owner's start time (field 22 of its
 * stat), so that a reused pid is never taken for the owner.  Its stdio is
 * /dev/null, since the owner's stderr may be a pipe its caller waits to
 * see closed.
 */
#include "cli/watchman.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/loop.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "cli/cli.h"
#include "rein.h"

/* The byte an owner writes when it stops cleanly. */
#define WATCHMAN_BYE 'q'
/* The fd the watchman reads the pipe on. */
#define WATCHMAN_FD 3
/* Without a pidfd, how often it looks at the owner's pid meanwhile. */
#define WATCHMAN_POLL_MS 10

/* The first process: a fork of the owner, so its only job is to start
 * the watchman (exec'd, in a session of its own, fd WATCHMAN_FD the
 * pipe's read end, stdio /dev/null) and exit, which makes the watchman
 * nobody's child but init's (or an outer subreaper's).  The owner waits
 * for a fork and an execve, not for the watchman's whole start. */
static void watchman_first(int rfd, int wfd, const char *const argv[])
{
    close(wfd); /* the owner's alone: its end of file is the signal */
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = "/proc/self/exe";
    o.argv = argv;
    o.extra_fds = &rfd; /* its fd 3: WATCHMAN_FD */
    o.n_extra_fds = 1;
    o.want_pidfd = false;
    pid_t pid;
    spawn_step_t step = SPAWN_STEP_NONE;
    int rc = spawn_start(&o, &pid, NULL, &step);
    if (rc < 0) {
        fprintf(stderr, "rein: cannot start the watchman (%s): %s\n",
                spawn_step_name(step), rein_strerror(rc));
        _exit(CLI_EXIT_FAILURE);
    }
    _exit(CLI_EXIT_OK);
}

int watchman_spawn(const char *state_dir, watchman_t *w)
{
    int p[2] = {-1, -1}, rc;
    char fdarg[16], pidarg[32], startarg[32];
    uint64_t start;
    w->pid = -1;
    w->bye_fd = -1;
    if ((rc = procfs_start_time(getpid(), &start)) < 0)
        return rc;
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    snprintf(fdarg, sizeof fdarg, "%d", WATCHMAN_FD);
    snprintf(pidarg, sizeof pidarg, "%ld", (long)getpid());
    snprintf(startarg, sizeof startarg, "%llu", (unsigned long long)start);
    const char *argv[] = {"rein",   "reconcile", "--watch",
                          fdarg,    "--pid",     pidarg,
                          "--start", startarg,   state_dir ? "--state-dir" : NULL,
                          state_dir, NULL};
    /* A plain fork, since the first process runs code of its own (a
     * vfork-style child could not start a process itself).  The owner
     * calls this before its supervisor opens, while it is still small,
     * so the fork copies little. */
    pid_t pid = fork();
    if (pid < 0) {
        rc = -errno;
        close(p[0]);
        close(p[1]);
        return rc;
    }
    if (pid == 0)
        watchman_first(p[0], p[1], argv);
    close(p[0]);
    w->pid = pid;
    w->bye_fd = p[1];
    return 0;
}

int watchman_settle(watchman_t *w)
{
    if (w->pid < 0)
        return w->bye_fd >= 0 ? 0 : REIN_EINTERNAL;
    /* The first process exits once the watchman is exec'd. */
    int st, rc = 0;
    while (waitpid(w->pid, &st, 0) < 0)
        if (errno != EINTR) {
            rc = -errno;
            break;
        }
    w->pid = -1;
    if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
        rc = REIN_EINTERNAL; /* it says why on our stderr */
    if (rc < 0 && w->bye_fd >= 0) {
        close(w->bye_fd); /* no watchman reads it */
        w->bye_fd = -1;
    }
    return rc;
}

int watchman_start(const char *state_dir, watchman_t *w)
{
    int rc = watchman_spawn(state_dir, w);
    return rc < 0 ? rc : watchman_settle(w);
}

void watchman_bye(watchman_t *w)
{
    if (w->pid >= 0)
        watchman_settle(w);
    if (w->bye_fd < 0)
        return;
    char c = WATCHMAN_BYE;
    while (write(w->bye_fd, &c, 1) < 0 && errno == EINTR)
        ;
    close(w->bye_fd);
    w->bye_fd = -1;
}

/* Waits, at most WATCHMAN_EXIT_WAIT_MS, until the owner (pidfd, or pid
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
    unsigned long long start = 0;
    bool have_start = false;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (i + 1 >= argc)
            goto usage;
        if (!strcmp(argv[i], "--watch"))
            fd = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--pid"))
            pid = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--start")) {
            errno = 0;
            start = strtoull(argv[++i], &end, 10);
            have_start = errno == 0 && argv[i][0] != '-';
        } else if (!strcmp(argv[i], "--state-dir")) {
            state_dir = argv[++i];
            continue;
        } else
            goto usage;
        if (*end || end == argv[i])
            goto usage;
    }
    if (fd < 0 || fd > INT_MAX || pid <= 1 || pid > INT_MAX || !have_start)
        goto usage;
    struct stat fst;
    if (fstat((int)fd, &fst) < 0 || !S_ISFIFO(fst.st_mode)) {
        fprintf(stderr, "rein reconcile --watch: fd %ld is not a pipe\n", fd);
        return CLI_EXIT_USAGE;
    }
    /* The pidfd is the owner's only if the pid still has its start time
     * after the pidfd was taken; else the owner is already gone (its pid
     * perhaps reused), and there is nothing to wait for. */
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (!procfs_alive((pid_t)pid, (uint64_t)start) && pidfd >= 0) {
        close(pidfd);
        pidfd = -1;
    }

    char c;
    ssize_t n;
    while ((n = read((int)fd, &c, 1)) < 0 && errno == EINTR)
        ;
    if (n == 1 && c == WATCHMAN_BYE)
        return CLI_EXIT_OK;
    watchman_await_exit(pidfd, (pid_t)pid, (uint64_t)start);

    rein_reconcile_stats_t st;
    return cli_reconcile_state("reconcile --watch", state_dir, &st);
usage:
    fprintf(stderr, "rein reconcile: --watch is for rein's own use (usage: "
                    "rein reconcile --watch FD --pid PID --start TICKS "
                    "[--state-dir DIR])\n");
    return CLI_EXIT_USAGE;
}
