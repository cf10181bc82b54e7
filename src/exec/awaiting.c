/*
 * awaiting.c — waiting for input, read from /proc (see awaiting.h).
 *
 * Each candidate's /proc/<pid>/syscall names the call it sleeps in and its
 * arguments; the fds it waits on are resolved through /proc/<pid>/fd, and
 * for the multiplexers the sets it passed are read from its memory.  What
 * cannot be read (memory gone, a set too large) never makes a wait look
 * like one on the input alone: a hang-up rests on `sole`, so doubt falls
 * on the side of "something else may wake it".
 */
#include "exec/awaiting.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
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
    bool others; /* it also watches something that is not the input */
    bool timed;
    bool read;
};

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
            w->others = true;
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
            w->others = true;
    }
    return yes;
}

/* Is pid asleep in a syscall waiting on our input?  *w says how. */
static bool proc_waits(pid_t pid, bool tty, const struct stat *in,
                       dev_t ctty, struct wait *w)
{
    char path[64], line[AWAITING_SYSCALL_LINE];
    memset(w, 0, sizeof *w);
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n <= 0)
        return false;
    line[n] = 0;
    long nr;
    unsigned long a[6];
    if (sscanf(line, "%ld %lx %lx %lx %lx %lx %lx", &nr, &a[0], &a[1], &a[2],
               &a[3], &a[4], &a[5]) != 7)
        return false; /* "running", or -1 (not in a syscall) */
    switch (nr) {
    case SYS_read:
    case SYS_readv:
        w->read = true;
        return fd_is_input(pid, (long)a[0], tty, in, ctty);
#ifdef SYS_select
    case SYS_select:
#endif
    case SYS_pselect6: {
        /* select's timeval and pselect6's timespec: NULL waits forever. */
        long nfds = (long)a[0];
        if (nfds <= 0)
            return false;
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
        if (!cnt)
            return false;
        if (a[1] > AWAITING_POLL_MAX_FDS)
            w->others = true;
#ifdef SYS_poll
        if (nr == SYS_poll)
            w->timed = (int)a[2] >= 0; /* ms; negative waits forever */
        else
#endif
            w->timed = a[2] != 0; /* ppoll's timespec: NULL forever */
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
                w->others = true;
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
    default:
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
        out->pid = p;
    }
    free(desc);
    return 0;
}
