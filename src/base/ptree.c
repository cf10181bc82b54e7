/*
 * ptree.c — owned process trees (see ptree.h).
 */
#include "base/ptree.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/procfs.h"

void ptree_free(ptree_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].pidfd >= 0)
            close(t->v[i].pidfd);
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

static bool has(const ptree_t *t, pid_t pid, uint64_t start)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].pid == pid && t->v[i].start_time == start)
            return true;
    return false;
}

/* Appends m; on failure closes its pidfd. */
static int push(ptree_t *t, ptree_member_t m)
{
    ptree_member_t *v = realloc(t->v, (t->n + 1) * sizeof *v);
    if (!v) {
        if (m.pidfd >= 0)
            close(m.pidfd);
        return -ENOMEM;
    }
    t->v = v;
    t->v[t->n++] = m;
    return 0;
}

static bool has_pid(const ptree_t *t, pid_t pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].pid == pid)
            return true;
    return false;
}

/* Pins pid: a pidfd (close-on-exec, as every pidfd), then its stat, read
 * through the pin.  -ESRCH when it is gone or a zombie; unpinned (pidfd -1)
 * where no pidfd can be had. */
static int pin(pid_t pid, ptree_member_t *m, procfs_stat_t *st)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0 && errno == ESRCH)
        return -ESRCH;
    if (procfs_read_stat(pid, st) < 0 || st->state == 'Z') {
        if (fd >= 0)
            close(fd);
        return -ESRCH;
    }
    *m = (ptree_member_t){pid, st->start_time, fd};
    return 0;
}

/* Reads pid as a member, pinned (see pin) or by its start time alone;
 * *ppid is its parent when pinned.  -ESRCH when it is gone. */
static int member(pid_t pid, bool pinned, ptree_member_t *m, pid_t *ppid)
{
    procfs_stat_t st;
    uint64_t start;
    *ppid = 0;
    if (pinned) {
        int rc = pin(pid, m, &st);
        if (rc == 0)
            *ppid = st.ppid;
        return rc;
    }
    if (procfs_start_time(pid, &start) < 0)
        return -ESRCH;
    *m = PTREE_MEMBER(pid, start);
    return 0;
}

static int capture(pid_t root, bool pinned, ptree_t *out)
{
    pid_t *desc = NULL, ppid;
    size_t nd = 0;
    ptree_member_t m;
    int rc = 0;
    out->v = NULL;
    out->n = 0;
    if (member(root, pinned, &m, &ppid) < 0)
        return 0;
    if ((rc = push(out, m)) < 0)
        goto fail;
    rc = procfs_descendants(root, &desc, &nd);
    if (rc < 0)
        goto fail;
    /* Breadth-first: a parent comes before its children. */
    for (size_t i = 0; i < nd; i++) {
        if (member(desc[i], pinned, &m, &ppid) < 0)
            continue; /* gone meanwhile */
        if (pinned && !has_pid(out, ppid)) {
            if (m.pidfd >= 0) /* reparented, or not the one listed */
                close(m.pidfd);
            continue;
        }
        if ((rc = push(out, m)) < 0)
            goto fail;
    }
    free(desc);
    return 0;
fail:
    free(desc);
    ptree_free(out);
    return rc;
}

int ptree_capture(pid_t root, ptree_t *out)
{
    return capture(root, false, out);
}

int ptree_capture_pinned(pid_t root, ptree_t *out)
{
    return capture(root, true, out);
}

int ptree_merge(ptree_t *dst, const ptree_t *src)
{
    for (size_t i = 0; i < src->n; i++) {
        const ptree_member_t *m = &src->v[i];
        if (has(dst, m->pid, m->start_time) || !ptree_member_alive(m))
            continue;
        ptree_member_t c = *m;
        if (c.pidfd >= 0)
            c.pidfd = fcntl(c.pidfd, F_DUPFD_CLOEXEC, 0);
        if (m->pidfd >= 0 && c.pidfd < 0 && errno == ENOMEM)
            return -ENOMEM;
        /* Out of fds: it stays in the tree, unpinned. */
        int rc = push(dst, c);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int ptree_add(ptree_t *t, pid_t pid, uint64_t start_time)
{
    if (has(t, pid, start_time))
        return 0;
    return push(t, PTREE_MEMBER(pid, start_time));
}

int ptree_signal_one(pid_t pid, uint64_t start_time, int signo)
{
    if (pid <= 1 || pid == getpid())
        return -EPERM;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0 && errno != ENOSYS && errno != EINVAL)
        return -errno; /* ESRCH: gone */
    /* Verify after opening: the pidfd pins the process we check. */
    uint64_t now;
    if (procfs_start_time(pid, &now) < 0 || now != start_time) {
        if (fd >= 0)
            close(fd);
        return -ESRCH;
    }
    int rc;
    if (fd >= 0) {
        rc = (int)syscall(SYS_pidfd_send_signal, fd, signo, NULL, 0);
        int e = errno;
        close(fd);
        return rc < 0 ? -e : 0;
    }
    rc = kill(pid, signo);
    return rc < 0 ? -errno : 0;
}

int ptree_signal_member(const ptree_member_t *m, int signo)
{
    if (m->pidfd < 0)
        return ptree_signal_one(m->pid, m->start_time, signo);
    if (m->pid <= 1 || m->pid == getpid())
        return -EPERM;
    /* The pidfd is the process seen at capture, or nothing: never a
     * successor with its pid. */
    return syscall(SYS_pidfd_send_signal, m->pidfd, signo, NULL, 0) < 0
               ? -errno
               : 0;
}

bool ptree_member_alive(const ptree_member_t *m)
{
    if (m->pidfd < 0)
        return procfs_alive(m->pid, m->start_time);
    /* A pidfd is readable once its process has exited (zombie or reaped). */
    struct pollfd p = {.fd = m->pidfd, .events = POLLIN};
    return poll(&p, 1, 0) == 0;
}

int ptree_signal(const ptree_t *t, int signo)
{
    int sent = 0;
    for (size_t i = t->n; i-- > 0;)
        if (ptree_signal_member(&t->v[i], signo) == 0)
            sent++;
    return sent;
}

int ptree_signal_group(pid_t pgid, int signo)
{
    if (pgid <= 1 || pgid == getpgrp())
        return -EPERM;
    return kill(-pgid, signo) < 0 ? -errno : 0;
}

void ptree_pass_begin(ptree_pass_t *p, int signo, pid_t pgid)
{
    memset(p, 0, sizeof *p);
    p->signo = signo;
    if (pgid > 0 && ptree_signal_group(pgid, signo) == 0)
        p->pgid = pgid;
}

/* The index of the first sent pid >= pid. */
static size_t pass_find(const ptree_pass_t *p, pid_t pid)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->sent[mid] < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool ptree_pass_due(const ptree_pass_t *p, pid_t pid)
{
    size_t i = pass_find(p, pid);
    if (i < p->n && p->sent[i] == pid)
        return false;
    /* A second KILL changes nothing: a fork bomb's members are spared a
     * read of /proc each on every kill pass. */
    if (p->signo == SIGKILL)
        return true;
    procfs_stat_t st;
    return !(p->pgid > 0 && procfs_read_stat(pid, &st) == 0 &&
             st.pgrp == p->pgid);
}

void ptree_pass_note(ptree_pass_t *p, pid_t pid)
{
    size_t i = pass_find(p, pid);
    if (i < p->n && p->sent[i] == pid)
        return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        pid_t *v = realloc(p->sent, cap * sizeof *v);
        if (!v)
            return; /* see the contract: at worst a second signal */
        p->sent = v;
        p->cap = cap;
    }
    /* Routes note in ascending order (cgroup.procs is read sorted), so
     * this is an append but for a tree's few members. */
    memmove(p->sent + i + 1, p->sent + i, (p->n - i) * sizeof *p->sent);
    p->sent[i] = pid;
    p->n++;
}

int ptree_pass_member(ptree_pass_t *p, const ptree_member_t *m)
{
    if (!ptree_pass_due(p, m->pid))
        return 1;
    int rc = ptree_signal_member(m, p->signo);
    if (rc == 0)
        ptree_pass_note(p, m->pid);
    return rc;
}

int ptree_pass_tree(ptree_pass_t *p, const ptree_t *t)
{
    int sent = 0;
    for (size_t i = t->n; i-- > 0;)
        if (ptree_pass_member(p, &t->v[i]) == 0)
            sent++;
    return sent;
}

void ptree_pass_end(ptree_pass_t *p)
{
    free(p->sent);
    p->sent = NULL;
    p->n = p->cap = 0;
}

size_t ptree_count_alive(const ptree_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (ptree_member_alive(&t->v[i]))
            n++;
    return n;
}

pid_t ptree_group_session(pid_t pgid)
{
    pid_t *all;
    size_t n;
    pid_t sid = -ESRCH;
    int rc;
    if (pgid <= 1)
        return -ESRCH;
    if ((rc = procfs_list_all(&all, &n)) < 0)
        return rc;
    for (size_t i = 0; i < n && sid < 0; i++) {
        procfs_stat_t st;
        if (procfs_read_stat(all[i], &st) == 0 && st.pgrp == pgid &&
            st.state != 'Z' && st.state != 'X')
            sid = st.session;
    }
    free(all);
    return sid;
}

bool ptree_group_alive(pid_t pgid)
{
    return ptree_group_session(pgid) >= 0;
}
