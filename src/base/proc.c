/*
 * proc.c — processes held by identity (rein.h: rein_proc_*).
 *
 * A pid is only a number, and numbers are reused.  A handle therefore pins
 * its process twice: by the start time read from /proc/<pid>/stat when the
 * handle was made, and by a pidfd.  The pidfd is the stronger of the two:
 * it refers to one process for ever and turns readable when that process
 * exits (as a zombie already, before any reaping), so "is it still the
 * one?" is a poll() that cannot be fooled.  Every read from /proc is
 * therefore followed by that check: if the pinned process is still alive
 * after the read, the pid named it during the read too.  Without a pidfd
 * (ENOSYS under valgrind or on old kernels, or REIN_PIDFD=0) the same check
 * compares the start time instead, which only leaves the case of a pid
 * reused within one clock tick.
 *
 * Signals go through ptree, which re-verifies (pid, start time) of every
 * member right before sending, so a handle on an exited process signals
 * nothing, even when its pid now belongs to someone else.
 *
 * A zombie counts as exited everywhere: it has run its last instruction,
 * and a pidfd reports it as such.  rein_proc_from_pid() refuses one with
 * -ESRCH, like a pid that does not exist, and rein_proc_from_path() skips
 * them.
 */
#include "base/proc.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/cancel.h"
#include "base/procfs.h"
#include "base/ptree.h"

/*
 * Waits that have no event to sleep on (a process without a pidfd, the
 * members of a tree, a process group) poll /proc, first after 1 ms, then
 * backing off to at most 50 ms: quick for the common fast exit, cheap for
 * a slow one, and never late by more than one step.
 */
#define PROC_POLL_MIN_MS 1
#define PROC_POLL_MAX_MS 50
/* How often the hard-kill phase stops the tree and rescans it for children
 * forked in the meantime before it gives up and kills what it has. */
#define PROC_FREEZE_PASSES 8

struct rein_proc {
    pid_t pid;
    uint64_t start_time; /* field 22 of /proc/<pid>/stat */
    int pidfd;           /* -1: no pidfd, the start time alone identifies */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The deadline of a timeout; UINT64_MAX for "forever" (timeout < 0). */
static uint64_t deadline_of(int timeout_ms)
{
    return timeout_ms < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout_ms;
}

/* Milliseconds left until deadline, as a poll() timeout (-1: forever). */
static int left_ms(uint64_t deadline)
{
    if (deadline == UINT64_MAX)
        return -1;
    uint64_t now = now_ms();
    if (now >= deadline)
        return 0;
    uint64_t left = deadline - now;
    return left > INT_MAX ? INT_MAX : (int)left;
}

/* Opens a pidfd for pid into *fd, or -1 where pidfds are unavailable or
 * turned off (REIN_PIDFD=0).  -ESRCH when there is no such process;
 * pidfd_open() answers EINVAL for a thread id, which is not a process. */
static int open_pidfd(pid_t pid, int *fd)
{
    const char *e = getenv("REIN_PIDFD");
    *fd = -1;
    if (e && !strcmp(e, "0"))
        return 0;
    /* pidfd_open() always sets O_CLOEXEC on the new fd. */
    int r = (int)syscall(SYS_pidfd_open, pid, 0);
    if (r >= 0) {
        *fd = r;
        return 0;
    }
    if (errno == ENOSYS)
        return 0;
    return errno == EINVAL || errno == ESRCH ? -ESRCH : -errno;
}

/* True once the process behind pidfd has exited (zombie or reaped). */
static bool pidfd_exited(int pidfd)
{
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    int r;
    do
        r = poll(&pfd, 1, 0);
    while (r < 0 && errno == EINTR);
    return r > 0;
}

/* True while p's process runs: its pidfd has not fired, or without one,
 * its pid still shows p's start time and is no zombie. */
static bool proc_alive(const rein_proc_t *p)
{
    if (p->pidfd >= 0)
        return !pidfd_exited(p->pidfd);
    return procfs_alive(p->pid, p->start_time);
}

/* Reads p's stat and proves it was p's: same start time, not a zombie,
 * and still alive after the read.  -ESRCH otherwise. */
static int verified_stat(const rein_proc_t *p, procfs_stat_t *st)
{
    if (procfs_read_stat(p->pid, st) < 0 || st->start_time != p->start_time ||
        st->state == 'Z' || st->state == 'X' || !proc_alive(p))
        return -ESRCH;
    return 0;
}

/* Opens a handle on pid, returning its stat as read while opening.  The
 * pidfd is opened before the read so the liveness check after it proves
 * the stat was that process's. */
static int proc_open(pid_t pid, rein_proc_t **out, procfs_stat_t *st)
{
    if (pid <= 0)
        return -ESRCH;
    rein_proc_t *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->pid = pid;
    p->pidfd = -1;
    int rc = open_pidfd(pid, &p->pidfd);
    if (rc < 0)
        goto fail;
    rc = procfs_read_stat(pid, st);
    if (rc < 0)
        goto fail;
    p->start_time = st->start_time;
    if (st->state == 'Z' || st->state == 'X' ||
        (p->pidfd >= 0 && pidfd_exited(p->pidfd))) {
        rc = -ESRCH;
        goto fail;
    }
    *out = p;
    return 0;
fail:
    rein_proc_free(p);
    return rc;
}

bool proc_has_pidfd(const rein_proc_t *p)
{
    return p && p->pidfd >= 0;
}

int rein_proc_from_pid(pid_t pid, rein_proc_t **out)
{
    if (!out)
        return -EINVAL;
    procfs_stat_t st;
    return proc_open(pid, out, &st);
}

/* Appends h to (*v, *n); frees h on failure. */
static int list_push(rein_proc_t ***v, size_t *n, rein_proc_t *h)
{
    rein_proc_t **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv) {
        rein_proc_free(h);
        return -ENOMEM;
    }
    nv[(*n)++] = h;
    *v = nv;
    return 0;
}

int rein_proc_from_path(const char *path, rein_proc_t ***out, size_t *n)
{
    if (!path || !*path || !out || !n)
        return -EINVAL;
    rein_proc_t **v = NULL;
    size_t cnt = 0, nall = 0;
    pid_t *all = NULL;
    int rc;
    /* /proc/<pid>/exe is a resolved path, so compare with one.  A path
     * that names no file is run by no process: an empty list, as the
     * seed's fromPath gives (a deleted executable's link reads
     * "... (deleted)", which no path given here matches). */
    char *want = realpath(path, NULL);
    if (!want && (errno == ENOENT || errno == ENOTDIR)) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    if (!want)
        return -errno;
    rc = procfs_list_all(&all, &nall);
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < nall; i++) {
        char exe[PATH_MAX];
        procfs_stat_t st;
        rein_proc_t *h;
        /* Unreadable (another user's, gone, a kernel thread): not a match. */
        if (procfs_exe(all[i], exe, sizeof exe) < 0 || strcmp(exe, want))
            continue;
        if (proc_open(all[i], &h, &st) < 0)
            continue;
        /* The pid may have changed hands between the first read and the
         * open: read again, now that the handle pins the process. */
        if (procfs_exe(all[i], exe, sizeof exe) < 0 || strcmp(exe, want) ||
            !proc_alive(h)) {
            rein_proc_free(h);
            continue;
        }
        if ((rc = list_push(&v, &cnt, h)) < 0)
            goto fail;
    }
    free(all);
    free(want);
    *out = v;
    *n = cnt;
    return 0;
fail:
    free(all);
    free(want);
    rein_proc_list_free(v, cnt);
    return rc;
}

void rein_proc_free(rein_proc_t *p)
{
    if (!p)
        return;
    if (p->pidfd >= 0)
        close(p->pidfd);
    free(p);
}

void rein_proc_list_free(rein_proc_t **list, size_t n)
{
    if (!list)
        return;
    for (size_t i = 0; i < n; i++)
        rein_proc_free(list[i]);
    free(list);
}

pid_t rein_proc_pid(const rein_proc_t *p)
{
    return p ? p->pid : -EINVAL;
}

pid_t rein_proc_ppid(const rein_proc_t *p)
{
    if (!p)
        return -EINVAL;
    procfs_stat_t st;
    int rc = verified_stat(p, &st);
    return rc < 0 ? rc : st.ppid;
}

int rein_proc_group_id(const rein_proc_t *p, pid_t *pgid)
{
    if (!p || !pgid)
        return -EINVAL;
    procfs_stat_t st;
    int rc = verified_stat(p, &st);
    if (rc < 0)
        return rc;
    *pgid = st.pgrp;
    return 0;
}

/* A process caught inside execve, past the point where a CLOEXEC pipe
 * reports success but before the kernel has set up the new argv, shows an
 * empty command line: that is what /proc says then, and what we return. */
int rein_proc_args(const rein_proc_t *p, char ***argv)
{
    if (!p || !argv)
        return -EINVAL;
    char **v;
    int rc = procfs_cmdline(p->pid, &v);
    if (rc < 0)
        return rc;
    /* Alive after the read: the command line was p's, not a successor's. */
    if (!proc_alive(p) || !procfs_alive(p->pid, p->start_time)) {
        procfs_strv_free(v);
        return -ESRCH;
    }
    *argv = v;
    return 0;
}

void rein_strv_free(char **v)
{
    procfs_strv_free(v);
}

int rein_proc_children(const rein_proc_t *p, rein_proc_t ***out, size_t *n)
{
    if (!p || !out || !n)
        return -EINVAL;
    rein_proc_t **v = NULL;
    size_t cnt = 0, nk = 0;
    pid_t *kids = NULL;
    int rc = procfs_children(p->pid, &kids, &nk);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < nk; i++) {
        procfs_stat_t st;
        rein_proc_t *h;
        if (proc_open(kids[i], &h, &st) < 0)
            continue; /* exited meanwhile */
        /* A child reaped and its pid reused since the listing has another
         * parent; p alive at the end proves the parent pid was p's. */
        if (st.ppid != p->pid) {
            rein_proc_free(h);
            continue;
        }
        if ((rc = list_push(&v, &cnt, h)) < 0)
            goto fail;
    }
    if (!proc_alive(p)) {
        rc = -ESRCH;
        goto fail;
    }
    free(kids);
    *out = v;
    *n = cnt;
    return 0;
fail:
    free(kids);
    rein_proc_list_free(v, cnt);
    return rc;
}

rein_proc_status_t rein_proc_status(const rein_proc_t *p)
{
    if (!p)
        return REIN_PROC_EXITED;
    return proc_alive(p) ? REIN_PROC_RUNNING : REIN_PROC_EXITED;
}

/* Captures p's tree, root first, each member pinned by a pidfd (see
 * ptree.h).  -ESRCH when p is no longer running; the root's start time and
 * p alive after the capture prove that the tree read was p's and not a
 * successor's.  -EPERM for pid 1 or the caller itself: the tree below
 * either is everything the caller runs beside. */
static int capture_verified(const rein_proc_t *p, ptree_t *t)
{
    if (p->pid <= 1 || p->pid == getpid())
        return -EPERM;
    if (!proc_alive(p))
        return -ESRCH;
    int rc = ptree_capture_pinned(p->pid, t);
    if (rc < 0)
        return rc;
    if (!t->n || t->v[0].start_time != p->start_time || !proc_alive(p)) {
        ptree_free(t);
        return -ESRCH;
    }
    return 0;
}

/* Signals group pgid (when > 0), then every verified member of t outside
 * it, children first, each process once (see ptree_pass_t); returns the
 * root's result, since the others may exit on their own at any moment. */
static int signal_tree(const ptree_t *t, pid_t pgid, int signo)
{
    int rc = -ESRCH;
    ptree_pass_t pass;
    ptree_pass_begin(&pass, signo, pgid);
    for (size_t i = t->n; i-- > 0;) {
        int r = ptree_pass_member(&pass, &t->v[i]);
        if (i == 0)
            rc = r > 0 ? 0 : r; /* reached by the group's signal */
    }
    ptree_pass_end(&pass);
    return rc;
}

/* Adds to t every live descendant of its live members: children forked
 * since the capture, and those of members whose parent already died (a
 * descendant outlives the root; it is no longer below it, but still in t).
 * A member alive after its own capture proves the subtree was its. */
static int rescan(ptree_t *t)
{
    size_t n0 = t->n;
    for (size_t i = 0; i < n0; i++) {
        ptree_member_t m = t->v[i]; /* a copy: t->v moves as it grows */
        ptree_t sub;
        if (!ptree_member_alive(&m))
            continue;
        int rc = ptree_capture_pinned(m.pid, &sub);
        if (rc < 0)
            return rc;
        if (sub.n && sub.v[0].start_time == m.start_time &&
            ptree_member_alive(&m))
            rc = ptree_merge(t, &sub);
        ptree_free(&sub);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/*
 * Stops the tree, then rescans it, until a rescan finds nobody new.  A
 * process with a signal pending cannot complete a fork (the kernel
 * restarts it), so once every member has SIGSTOP pending or taken, the
 * tree can no longer grow, and the following SIGKILL misses no child
 * forked between the last scan and the kill.
 */
static int freeze(ptree_t *t)
{
    for (int pass = 0; pass < PROC_FREEZE_PASSES; pass++) {
        size_t before = t->n;
        signal_tree(t, 0, SIGSTOP);
        int rc = rescan(t);
        if (rc < 0)
            return rc;
        if (t->n == before)
            break;
    }
    return 0;
}

/* True when every member of t and (*pgid > 0) group *pgid are gone.  A
 * group found empty is dropped: *pgid becomes 0 (see rein_proc_terminate). */
static bool rest_gone(const ptree_t *t, pid_t *pgid)
{
    if (*pgid > 0 && !ptree_group_alive(*pgid))
        *pgid = 0;
    return ptree_count_alive(t) == 0 && *pgid == 0;
}

/*
 * Waits up to timeout_ms (< 0: forever) until p, every member of t and the
 * group *pgid (when > 0; 0 once it is found empty) are gone.  The root's
 * pidfd wakes the wait the moment it exits; the other members and the
 * group have no event to wait on, so they are polled with the bounded
 * back-off.
 */
static bool wait_gone(const rein_proc_t *p, const ptree_t *t, pid_t *pgid,
                      int timeout_ms)
{
    uint64_t deadline = deadline_of(timeout_ms);
    int step = PROC_POLL_MIN_MS;
    for (;;) {
        bool root = proc_alive(p);
        /* The group is looked at even while the root runs, so that it is
         * dropped the first time it is empty. */
        bool rest = rest_gone(t, pgid);
        if (!root && rest)
            return true;
        int left = left_ms(deadline);
        if (left == 0)
            return false;
        int slice = left < 0 || left > step ? step : left;
        /* The pidfd only while the root runs: once it has exited it stays
         * readable.  poll() ignores a negative fd: then this is a sleep. */
        struct pollfd pfd = {.fd = root ? p->pidfd : -1, .events = POLLIN};
        if (poll(&pfd, 1, slice) < 0 && errno != EINTR)
            return !proc_alive(p) && rest_gone(t, pgid);
        if (step < PROC_POLL_MAX_MS)
            step = step * 2 > PROC_POLL_MAX_MS ? PROC_POLL_MAX_MS : step * 2;
    }
}

int rein_proc_kill_tree(rein_proc_t *p, int signo)
{
    if (!p || signo < 0 || signo >= NSIG)
        return -EINVAL;
    ptree_t t;
    int rc = capture_verified(p, &t);
    if (rc < 0)
        return rc;
    rc = signal_tree(&t, 0, signo);
    ptree_free(&t);
    return rc;
}

void rein_proc_terminate_opts_init(rein_proc_terminate_opts_t *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->graceful_ms = REIN_PROC_GRACEFUL_MS;
    o->timeout_ms = REIN_PROC_TIMEOUT_MS;
    o->signal = SIGTERM;
}

/*
 * The group is signalled by number only: there is no pidfd for a group.
 * Its number is read from the verified root, and the kernel keeps a pgid
 * from being reused while any process is still in that group.  Once the
 * group has been seen empty the number is free, and a group of that
 * number alive later may be someone else's: the waits look at the group
 * every PROC_POLL_MAX_MS at most, and drop it (pgid 0) the first time
 * they find it empty, so it is signalled only while it has been seen
 * alive all along.
 */
int rein_proc_terminate(rein_proc_t *p, const rein_proc_terminate_opts_t *o,
                        bool *exited)
{
    if (!p || !exited)
        return -EINVAL;
    rein_proc_terminate_opts_t defaults;
    if (!o) {
        rein_proc_terminate_opts_init(&defaults);
        o = &defaults;
    }
    if (o->signal <= 0 || o->signal >= NSIG)
        return -EINVAL;
    *exited = false;
    ptree_t t;
    pid_t pgid = 0;
    int rc = capture_verified(p, &t);
    if (rc == -ESRCH) {
        *exited = true; /* already over: nothing of it is left to signal */
        return 0;
    }
    if (rc < 0)
        return rc;
    if (o->group) {
        procfs_stat_t st;
        /* ptree's guards: never pgid <= 1, never rein's own group. */
        if (verified_stat(p, &st) == 0 && st.pgrp > 1 && st.pgrp != getpgrp())
            pgid = st.pgrp;
    }

    if (o->graceful_ms >= 0) {
        /* Not ours to signal (EPERM): waiting for it would be in vain. */
        int s = signal_tree(&t, pgid, o->signal);
        if (s < 0 && s != -ESRCH) {
            rc = s;
            goto done;
        }
        /* A stopped process only acts on the signal once continued. */
        signal_tree(&t, pgid, SIGCONT);
        if (wait_gone(p, &t, &pgid, o->graceful_ms))
            goto done;
    }

    /* What survived the grace, plus whatever it forked meanwhile.  A
     * failed rescan (no memory) still kills what is known, then reports. */
    rc = freeze(&t);
    int killed = signal_tree(&t, 0, SIGKILL);
    rest_gone(&t, &pgid); /* drops the group if it emptied meanwhile */
    if (pgid > 0)
        ptree_signal_group(pgid, SIGKILL);
    if (killed < 0 && killed != -ESRCH)
        rc = killed;
    else
        wait_gone(p, &t, &pgid, o->timeout_ms);
done:
    *exited = !proc_alive(p);
    ptree_free(&t);
    return rc < 0 ? rc : 0;
}

int rein_proc_wait_for_exit(rein_proc_t *p, int timeout_ms,
                            rein_cancel_t *cancel, bool *exited)
{
    if (!p || !exited)
        return -EINVAL;
    uint64_t deadline = deadline_of(timeout_ms);
    int cfd = cancel_fd(cancel);
    int step = PROC_POLL_MIN_MS;
    *exited = false;
    for (;;) {
        /* With a pidfd the poll below is the whole wait; without one there
         * is no event for a process that is not our child, so /proc is
         * polled with the bounded back-off, the cancel fd still waking the
         * sleep at once. */
        if (p->pidfd < 0 && !procfs_alive(p->pid, p->start_time)) {
            *exited = true;
            return 0;
        }
        int left = left_ms(deadline);
        int slice = left;
        if (p->pidfd < 0 && (left < 0 || left > step))
            slice = step;
        struct pollfd fds[2] = {{.fd = p->pidfd, .events = POLLIN},
                                {.fd = cfd, .events = POLLIN}};
        int r = poll(fds, 2, slice);
        if (r < 0 && errno != EINTR)
            return -errno;
        /* An exit that has happened wins over a cancel arriving with it. */
        if (r > 0 && fds[0].revents) {
            *exited = true;
            return 0;
        }
        if (r > 0 && fds[1].revents)
            return -ECANCELED;
        if (left == 0 || (r == 0 && slice == left && left >= 0)) {
            if (p->pidfd < 0)
                *exited = !procfs_alive(p->pid, p->start_time);
            return 0;
        }
        if (p->pidfd < 0 && step < PROC_POLL_MAX_MS)
            step = step * 2 > PROC_POLL_MAX_MS ? PROC_POLL_MAX_MS : step * 2;
    }
}
