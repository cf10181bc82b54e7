/*
 * awaiting.c — waiting for input, read from /proc (see awaiting.h).
 *
 * Each candidate's /proc/<pid>/syscall names the call it sleeps in and its
 * arguments; the fds it waits on are resolved through /proc/<pid>/fd, and
 * for the multiplexers the sets it passed are read from its memory.  What
 * cannot be read (memory gone, a set too large) never makes a wait look
 * like one on the input alone: a hang-up rests on `sole`, so doubt falls
 * on the side of "something else may wake it".
 *
 * Every thread of a candidate is looked at, not only its first: an event
 * loop's process (node, a Go or tokio program) waits on the terminal in
 * one thread, or in a thread of its own, while the others sleep.  Beside
 * the input, a wait may watch fds that only the process itself can make
 * ready (an eventfd, a timerfd, a signalfd, a pipe whose write end it
 * holds, a unix socket whose peer it holds: the wake-up fds of libuv,
 * Go's runtime, asyncio and their kind).  Those
 * do not count as "something else" when nothing outside the process can
 * reach it either: it has no child, and each other thread sleeps in a
 * futex, a sleep or a wait for a signal, or waits on such fds and the
 * input alone.  A thread
 * running, in the disk, or in any other call (a socket, a pipe from
 * elsewhere, wait4) is something else.  So idle node, at its REPL or at a
 * prompt of its own, waits on the input alone; node reading a socket or
 * waiting on its worker's file read does not.
 */
#include "exec/awaiting.h"

#include <dirent.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/procfs.h"

/* /dev/tty: major 5, minor 0 (TTYAUX_MAJOR). */
#define AWAITING_DEVTTY_MAJOR 5
/* Longest line of /proc/<pid>/syscall: nr, 6 args, sp, pc. */
#define AWAITING_SYSCALL_LINE 256

/* What one process's wait is, when it waits on the input. */
struct wait {
    bool others;   /* something outside the process may end it */
    /* it relies on the process's own wake-ups: it watches fds only the
     * process makes ready, or other threads sleep in a futex, a sleep or
     * a wait for a signal */
    bool internal;
    bool timed;
    bool read;
};

/* What an fd a wait watches beside the input is (see the top of file). */
typedef enum fd_kind {
    FD_OUTSIDE = 0, /* anything another process or the world can ready */
    FD_INTERNAL,    /* ready only by the process's own doing */
    FD_TIMER,       /* a timerfd: ready by itself, in time */
} fd_kind_t;

/* Decodes /proc's tty_nr (new_encode_dev) into a dev_t. */
static dev_t tty_nr_dev(int nr)
{
    unsigned u = (unsigned)nr;
    return makedev((u >> 8) & 0xfff, (u & 0xff) | ((u >> 12) & 0xfff00));
}

/* Does fd of pid refer to our input?  ctty: pid's controlling terminal,
 * for fds opened through /dev/tty. */
static bool fd_is_input(pid_t pid, long fd, bool tty, const struct stat *in,
                        dev_t ctty)
{
    char path[64];
    struct stat st;
    if (fd < 0)
        return false;
    snprintf(path, sizeof path, "/proc/%d/fd/%ld", (int)pid, fd);
    if (stat(path, &st) < 0)
        return false;
    if (tty) {
        if (!S_ISCHR(st.st_mode))
            return false;
        return st.st_rdev == in->st_rdev ||
               (major(st.st_rdev) == AWAITING_DEVTTY_MAJOR &&
                minor(st.st_rdev) == 0 && ctty == in->st_rdev);
    }
    return S_ISFIFO(st.st_mode) && st.st_ino == in->st_ino &&
           st.st_dev == in->st_dev;
}

/* The target of /proc/<pid>/fd/<fd> ("pipe:[123]"); -1 when unreadable. */
static int fd_link(pid_t pid, long fd, char *out, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%ld", (int)pid, fd);
    ssize_t n = readlink(path, out, size - 1);
    if (n < 0)
        return -1;
    out[n] = 0;
    return 0;
}

/* The access mode (O_RDONLY, O_WRONLY, O_RDWR) of pid's fd; -1. */
static int fd_accmode(pid_t pid, long fd)
{
    char path[64], line[64];
    snprintf(path, sizeof path, "/proc/%d/fdinfo/%ld", (int)pid, fd);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int mode = -1;
    unsigned flags;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "flags: %o", &flags) == 1) {
            mode = (int)(flags & O_ACCMODE);
            break;
        }
    fclose(f);
    return mode;
}

/* Does pid hold, on an fd other than fd, the file `link` names (written
 * to, with write_end)?  The other end of a self-pipe or of a socketpair.
 * Only fds numbered below AWAITING_FD_SCAN_MAX are read. */
static bool holds_link(pid_t pid, long fd, const char *link, bool write_end)
{
    char path[64], other[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool yes = false;
    struct dirent *e;
    while (!yes && (e = readdir(d))) {
        char *end;
        long n = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || n == fd ||
            n >= AWAITING_FD_SCAN_MAX)
            continue;
        if (fd_link(pid, n, other, sizeof other) == 0 &&
            !strcmp(other, link)) {
            int m = write_end ? fd_accmode(pid, n) : O_RDWR;
            yes = m == O_WRONLY || m == O_RDWR;
        }
    }
    closedir(d);
    return yes;
}

/* The inode of the peer of the unix socket whose inode is ino, asked of
 * the kernel's socket diagnostics (sock_diag, in rein's own network
 * namespace); 0 when it has none or cannot say. */
static unsigned long unix_peer(unsigned long ino)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return 0;
    struct {
        struct nlmsghdr nh;
        struct unix_diag_req r;
    } req;
    memset(&req, 0, sizeof req);
    req.nh.nlmsg_len = sizeof req;
    req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nh.nlmsg_flags = NLM_F_REQUEST;
    req.r.sdiag_family = AF_UNIX;
    req.r.udiag_states = ~0u;
    req.r.udiag_ino = (uint32_t)ino;
    req.r.udiag_show = UDIAG_SHOW_PEER;
    req.r.udiag_cookie[0] = req.r.udiag_cookie[1] = ~0u; /* no cookie */
    struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
    union {
        struct nlmsghdr nh;
        char b[AWAITING_DIAG_REPLY];
    } rep;
    unsigned long peer = 0;
    ssize_t n = -1;
    /* The kernel answers within the send: nothing to wait for. */
    if (sendto(fd, &req, sizeof req, 0, (struct sockaddr *)&nl,
               sizeof nl) == (ssize_t)sizeof req)
        n = recv(fd, &rep, sizeof rep, MSG_DONTWAIT);
    close(fd);
    if (n <= 0 || !NLMSG_OK(&rep.nh, (size_t)n) ||
        rep.nh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
        rep.nh.nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
        return 0;
    struct unix_diag_msg *m = NLMSG_DATA(&rep.nh);
    struct rtattr *a = (struct rtattr *)(m + 1);
    int len = (int)(rep.nh.nlmsg_len - NLMSG_LENGTH(sizeof *m));
    for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
        if (a->rta_type == UNIX_DIAG_PEER &&
            RTA_PAYLOAD(a) >= sizeof(uint32_t)) {
            uint32_t v;
            memcpy(&v, RTA_DATA(a), sizeof v);
            peer = v;
        }
    return peer;
}

/* What fd of pid is, beside the input (see the top of file). */
static fd_kind_t fd_kind(pid_t pid, long fd)
{
    char link[64];
    if (fd < 0 || fd_link(pid, fd, link, sizeof link) < 0)
        return FD_OUTSIDE;
    if (!strcmp(link, "anon_inode:[eventfd]") ||
        !strcmp(link, "anon_inode:[signalfd]"))
        return FD_INTERNAL;
    if (!strcmp(link, "anon_inode:[timerfd]"))
        return FD_TIMER;
    if (!strncmp(link, "pipe:[", 6) && holds_link(pid, fd, link, true))
        return FD_INTERNAL;
    if (!strncmp(link, "socket:[", 8)) {
        /* A socketpair of its own (asyncio's self-pipe is one). */
        char peer[64];
        unsigned long p = unix_peer(strtoul(link + 8, NULL, 10));
        snprintf(peer, sizeof peer, "socket:[%lu]", p);
        if (p && holds_link(pid, fd, peer, false))
            return FD_INTERNAL;
    }
    return FD_OUTSIDE;
}

/* Counts fd of pid, which a wait watches and which is not the input.
 * Once something outside counts, nothing more is looked at: the answer
 * cannot change, and a loop over many sockets costs one look. */
static void note_other(pid_t pid, long fd, struct wait *w)
{
    if (w->others)
        return;
    switch (fd_kind(pid, fd)) {
    case FD_OUTSIDE: w->others = true; break;
    case FD_TIMER: w->timed = w->internal = true; break;
    case FD_INTERNAL: w->internal = true; break;
    }
}

/* Reads n bytes at addr of pid's memory. */
static int read_mem(pid_t pid, unsigned long addr, void *buf, size_t n)
{
    struct iovec lo = {buf, n}, re = {(void *)addr, n};
    if (process_vm_readv(pid, &lo, 1, &re, 1, 0) == (ssize_t)n)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t got = pread(fd, buf, n, (off_t)addr);
    close(fd);
    return got == (ssize_t)n ? 0 : -EIO;
}

/* epoll: is one of the targets in /proc/<pid>/fdinfo/<epfd> our input,
 * watched for reading?  Any other target goes into w->others. */
static bool epoll_watches_input(pid_t pid, long epfd, bool tty,
                                const struct stat *in, dev_t ctty,
                                struct wait *w)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/fdinfo/%ld", (int)pid, epfd);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool yes = false;
    while (fgets(line, sizeof line, f)) {
        int tfd;
        unsigned ev;
        if (sscanf(line, "tfd: %d events: %x", &tfd, &ev) != 2)
            continue;
        if ((ev & EPOLLIN) && fd_is_input(pid, tfd, tty, in, ctty))
            yes = true;
        else
            note_other(pid, tfd, w);
    }
    fclose(f);
    return yes;
}

/* select: are the fds set in the set at addr (nfds of them) our input?
 * Returns whether one is; fds that are not go into w->others.  An
 * unreadable set: -1. */
static int select_set(pid_t pid, unsigned long addr, long nfds, bool tty,
                      const struct stat *in, dev_t ctty, struct wait *w)
{
    fd_set set;
    bool yes = false;
    if (!addr)
        return 0;
    if (read_mem(pid, addr, &set, ((size_t)nfds + 63) / 64 * 8) < 0)
        return -1;
    for (long f = 0; f < nfds; f++) {
        if (!FD_ISSET((int)f, &set))
            continue;
        if (fd_is_input(pid, f, tty, in, ctty))
            yes = true;
        else
            note_other(pid, f, w);
    }
    return yes;
}

/* Is thread tid of pid asleep in a syscall waiting on our input?  *w says
 * how.  For a thread that is not, *w says what else it sleeps in: in a
 * futex, a sleep, a wait for a signal, or a wait on fds only the process
 * readies (internal,
 * timed when it has a timeout), or in something the world may end
 * (others: a socket, a pipe from elsewhere, wait4, or not asleep). */
static bool task_waits(pid_t pid, pid_t tid, bool tty, const struct stat *in,
                       dev_t ctty, struct wait *w)
{
    char path[64], line[AWAITING_SYSCALL_LINE];
    memset(w, 0, sizeof *w);
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid,
             (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, line, sizeof line - 1);
    if (fd >= 0)
        close(fd);
    long nr;
    unsigned long a[6];
    if (n > 0)
        line[n] = 0;
    if (n <= 0 || sscanf(line, "%ld %lx %lx %lx %lx %lx %lx", &nr, &a[0],
                         &a[1], &a[2], &a[3], &a[4], &a[5]) != 7) {
        w->others = true; /* "running", or -1 (not in a syscall) */
        return false;
    }
    switch (nr) {
    case SYS_read:
    case SYS_readv:
        if (fd_is_input(pid, (long)a[0], tty, in, ctty)) {
            w->read = true;
            return true;
        }
        note_other(pid, (long)a[0], w);
        return false;
#ifdef SYS_select
    case SYS_select:
#endif
    case SYS_pselect6: {
        /* select's timeval and pselect6's timespec: NULL waits forever. */
        long nfds = (long)a[0];
        if (nfds <= 0) {
            w->internal = true; /* a sleep, or a wait for a signal */
            w->timed = a[4] != 0;
            return false;
        }
        if (nfds > FD_SETSIZE) {
            nfds = FD_SETSIZE;
            w->others = true; /* fds past the set we read */
        }
        w->timed = a[4] != 0;
        int r = select_set(pid, a[1], nfds, tty, in, ctty, w);
        if (r < 0) {
            w->others = true;
            return fd_is_input(pid, 0, tty, in, ctty);
        }
        /* The write and exception sets wait on their fds too; the input
         * there (vim asks for its exceptions) is still only the input. */
        if (select_set(pid, a[2], nfds, tty, in, ctty, w) < 0 ||
            select_set(pid, a[3], nfds, tty, in, ctty, w) < 0)
            w->others = true;
        return r > 0;
    }
#ifdef SYS_poll
    case SYS_poll:
#endif
    case SYS_ppoll: {
        size_t cnt =
            a[1] < AWAITING_POLL_MAX_FDS ? a[1] : AWAITING_POLL_MAX_FDS;
        struct pollfd pf[AWAITING_POLL_MAX_FDS];
        bool yes = false;
#ifdef SYS_poll
        if (nr == SYS_poll)
            w->timed = (int)a[2] >= 0; /* ms; negative waits forever */
        else
#endif
            w->timed = a[2] != 0; /* ppoll's timespec: NULL forever */
        if (!cnt) {
            w->internal = true; /* a sleep (or a wait for a signal) */
            return false;
        }
        if (a[1] > AWAITING_POLL_MAX_FDS)
            w->others = true;
        if (read_mem(pid, a[0], pf, cnt * sizeof pf[0]) < 0) {
            w->others = true;
            return fd_is_input(pid, 0, tty, in, ctty);
        }
        for (size_t i = 0; i < cnt; i++) {
            if (pf[i].fd < 0)
                continue; /* the kernel skips it */
            if ((pf[i].events & (POLLIN | POLLRDNORM)) &&
                fd_is_input(pid, pf[i].fd, tty, in, ctty))
                yes = true;
            else
                note_other(pid, pf[i].fd, w);
        }
        return yes;
    }
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
#endif
    case SYS_epoll_pwait:
        w->timed = (int)a[3] >= 0; /* ms; -1 waits forever */
        return epoll_watches_input(pid, (long)a[0], tty, in, ctty, w);
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
        w->timed = a[3] != 0; /* a timespec: NULL forever */
        return epoll_watches_input(pid, (long)a[0], tty, in, ctty, w);
#endif
    case SYS_futex:
#ifdef SYS_futex_waitv
    case SYS_futex_waitv:
#endif
        /* Woken by another thread of the process; the fourth argument is
         * the timeout of both. */
        w->internal = true;
        w->timed = a[3] != 0;
        return false;
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
        w->internal = w->timed = true;
        return false;
    case SYS_rt_sigtimedwait:
    case SYS_rt_sigsuspend:
#ifdef SYS_pause
    case SYS_pause:
#endif
        /* A wait for a signal: glibc's thread for the process's own
         * timers (timer_create with SIGEV_THREAD: vim has one), a thread
         * that takes the process's signals in turn.  What ends it is the
         * process's own timer, a child's SIGCHLD (a child counts as
         * something else already) or a request to stop: never input. */
        w->internal = true;
        w->timed = nr == SYS_rt_sigtimedwait && a[2] != 0;
        return false;
    default:
        w->others = true;
        return false;
    }
}

/* How strongly a wait says "only input ends this": an untimed select,
 * poll or epoll on the input alone, then a read (its terminal may time
 * it out), then a timed wait on the input alone, then a shared one. */
static int wait_rank(const struct wait *w)
{
    if (w->others)
        return 1;
    if (w->read)
        return 3;
    return w->timed ? 2 : 4;
}

/*
 * Is pid waiting on our input, in any of its threads?  *w is the
 * strongest such wait, with `others` set when anything outside the
 * process may still end it: what that wait or another thread watches, or
 * (when some wait relies on fds only the process readies) a child of it,
 * which may write to them or end and signal it (see the top of file).
 */
static bool proc_waits(pid_t pid, bool tty, const struct stat *in,
                       dev_t ctty, struct wait *w)
{
    char path[64];
    memset(w, 0, sizeof *w);
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool waits = false;
    struct wait all = {0}; /* what every thread's wait says, together */
    size_t threads = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || tid <= 0)
            continue;
        if (++threads > AWAITING_THREADS_MAX) {
            all.others = true; /* threads we did not look at */
            break;
        }
        struct wait tw;
        if (task_waits(pid, (pid_t)tid, tty, in, ctty, &tw)) {
            if (!waits || wait_rank(&tw) > wait_rank(w))
                *w = tw;
            waits = true;
        }
        /* A second thread on the input that also watches a socket may
         * still be woken by it, whichever wait is reported. */
        all.others |= tw.others;
        all.internal |= tw.internal;
        all.timed |= tw.timed;
        if (waits && all.others)
            break; /* not on the input alone, whatever the rest do */
    }
    closedir(d);
    if (!waits)
        return false;
    w->others = all.others;
    w->timed = all.timed;
    w->internal = all.internal;
    if (!w->others && w->internal) {
        pid_t *kids = NULL;
        size_t nkids = 0;
        if (procfs_children(pid, &kids, &nkids) < 0 || nkids)
            w->others = true;
        free(kids);
    }
    return true;
}

int awaiting_scan(pid_t leader, bool tty, const struct stat *input,
                  awaiting_t *out)
{
    procfs_stat_t lst;
    int best = 0;
    memset(out, 0, sizeof *out);
    if (procfs_read_stat(leader, &lst) < 0)
        return -ESRCH;
    pid_t *desc = NULL;
    size_t n = 0;
    procfs_descendants(leader, &desc, &n);
    size_t looked = 0;
    for (size_t i = 0; i <= n && looked < AWAITING_SCAN_MAX_PROCS && best < 4;
         i++) {
        pid_t p = i == 0 ? leader : desc[i - 1];
        procfs_stat_t st;
        struct wait w;
        if (procfs_read_stat(p, &st) < 0 || st.state != 'S')
            continue;
        /* On a terminal only the foreground group may read it. */
        if (tty && (lst.tpgid <= 0 || st.pgrp != lst.tpgid))
            continue;
        looked++; /* the cap is on these: a big build's other processes
                     do not hide the one at a prompt */
        if (!proc_waits(p, tty, input, tty_nr_dev(st.tty_nr), &w))
            continue;
        int rank = wait_rank(&w);
        if (rank <= best)
            continue;
        best = rank;
        out->waiting = true;
        out->sole = !w.others;
        out->timed = out->sole && w.timed;
        out->read = out->sole && w.read;
        out->internal = out->sole && w.internal;
        out->pid = p;
    }
    free(desc);
    return 0;
}
