/*
 * ptree.c — owned process trees (see ptree.h).
 */
#include "base/ptree.h"

#include <errno.h>
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

static int push(ptree_t *t, pid_t pid, uint64_t start)
{
    ptree_member_t *v = realloc(t->v, (t->n + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    t->v = v;
    t->v[t->n++] = (ptree_member_t){pid, start};
    return 0;
}

int ptree_capture(pid_t root, ptree_t *out)
{
    pid_t *desc = NULL;
    size_t nd = 0;
    uint64_t st;
    int rc = 0;
    out->v = NULL;
    out->n = 0;
    if (procfs_start_time(root, &st) < 0)
        return 0;
    if ((rc = push(out, root, st)) < 0)
        goto fail;
    rc = procfs_descendants(root, &desc, &nd);
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < nd; i++) {
        if (procfs_start_time(desc[i], &st) < 0)
            continue; /* gone meanwhile */
        if ((rc = push(out, desc[i], st)) < 0)
            goto fail;
    }
    free(desc);
    return 0;
fail:
    free(desc);
    ptree_free(out);
    return rc;
}

int ptree_merge(ptree_t *dst, const ptree_t *src)
{
    for (size_t i = 0; i < src->n; i++) {
        const ptree_member_t *m = &src->v[i];
        if (has(dst, m->pid, m->start_time) ||
            !procfs_alive(m->pid, m->start_time))
            continue;
        int rc = push(dst, m->pid, m->start_time);
        if (rc < 0)
            return rc;
    }
    return 0;
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

int ptree_signal(const ptree_t *t, int signo)
{
    int sent = 0;
    for (size_t i = t->n; i-- > 0;)
        if (ptree_signal_one(t->v[i].pid, t->v[i].start_time, signo) == 0)
            sent++;
    return sent;
}

int ptree_signal_group(pid_t pgid, int signo)
{
    if (pgid <= 1 || pgid == getpgrp())
        return -EPERM;
    return kill(-pgid, signo) < 0 ? -errno : 0;
}

size_t ptree_count_alive(const ptree_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (procfs_alive(t->v[i].pid, t->v[i].start_time))
            n++;
    return n;
}

bool ptree_group_alive(pid_t pgid)
{
    pid_t *all;
    size_t n;
    bool found = false;
    if (pgid <= 1 || procfs_list_all(&all, &n) < 0)
        return false;
    for (size_t i = 0; i < n && !found; i++) {
        procfs_stat_t st;
        if (procfs_read_stat(all[i], &st) == 0 && st.pgrp == pgid &&
            st.state != 'Z' && st.state != 'X')
            found = true;
    }
    free(all);
    return found;
}
