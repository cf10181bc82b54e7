/*
 * procfs.c — /proc readers (see procfs.h).
 *
 * Every reader opens, reads once and closes: /proc files are generated at
 * read time, and a single read() of a small buffer gives a consistent
 * snapshot.  The stat line is parsed from the last ')' because comm may
 * itself contain spaces and parentheses.
 */
#include "base/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Big enough for any /proc/<pid>/stat line. */
#define PROCFS_STAT_BUF 1024
/* The first buffer of procfs_read_file, doubled until the file fits. */
#define PROCFS_READ_BUF0 4096
/* Largest cmdline we read (the kernel's ARG_MAX is far smaller in practice). */
#define PROCFS_CMDLINE_MAX (1u << 21)
/* Largest /proc/<pid>/status we read (some 1.5 KiB in practice). */
#define PROCFS_STATUS_MAX (64u << 10)

int procfs_read_file(const char *path, char **out, size_t *len, size_t max)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t cap = PROCFS_READ_BUF0, n = 0;
    char *b = malloc(cap);
    int rc = 0;
    if (!b) {
        rc = -ENOMEM;
        goto fail;
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                rc = -ENOMEM;
                goto fail;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t k = read(fd, b + n, cap - n - 1);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto fail;
        }
        if (k == 0)
            break;
        n += (size_t)k;
        if (n > max) {
            rc = -E2BIG;
            goto fail;
        }
    }
    close(fd);
    b[n] = 0;
    *out = b;
    if (len)
        *len = n;
    return 0;
fail:
    close(fd);
    free(b);
    return rc;
}

int procfs_read_stat(pid_t pid, procfs_stat_t *out)
{
    char path[64], buf[PROCFS_STAT_BUF];
    /* Cleared first, failure or not: callers test `read(...) == 0 &&
     * st.state ...`, and gcc may load the fields before the result's
     * test (one branch for both), which valgrind reports when a process
     * that ended between two reads left them unwritten. */
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    ssize_t n;
    do
        n = read(fd, buf, sizeof buf - 1);
    while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (n <= 0)
        return n == 0 || e == ESRCH ? -ESRCH : -e;
    buf[n] = 0;
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp || rp[1] != ' ')
        return -EIO;
    out->pid = pid;
    size_t cl = (size_t)(rp - lp - 1);
    if (cl >= PROCFS_COMM_LEN)
        cl = PROCFS_COMM_LEN - 1;
    memcpy(out->comm, lp + 1, cl);
    out->comm[cl] = 0;
    /* Fields from 3 (state) on; start time is field 22. */
    char *p = rp + 2, *save = NULL;
    int field = 3;
    for (char *t = strtok_r(p, " ", &save); t; t = strtok_r(NULL, " ", &save),
              field++) {
        switch (field) {
        case 3: out->state = t[0]; break;
        case 4: out->ppid = (pid_t)strtol(t, NULL, 10); break;
        case 5: out->pgrp = (pid_t)strtol(t, NULL, 10); break;
        case 6: out->session = (pid_t)strtol(t, NULL, 10); break;
        case 7: out->tty_nr = (int)strtol(t, NULL, 10); break;
        case 8: out->tpgid = (pid_t)strtol(t, NULL, 10); break;
        case 9: out->flags = (unsigned)strtoul(t, NULL, 10); break;
        case 22:
            out->start_time = strtoull(t, NULL, 10);
            return 0;
        default: break;
        }
    }
    return -EIO;
}

int procfs_start_time(pid_t pid, uint64_t *out)
{
    procfs_stat_t st;
    int rc = procfs_read_stat(pid, &st);
    *out = st.start_time; /* 0 on failure: see procfs_read_stat */
    return rc < 0 ? rc : 0;
}

bool procfs_alive(pid_t pid, uint64_t start_time)
{
    procfs_stat_t st;
    if (pid <= 0 || procfs_read_stat(pid, &st) < 0)
        return false;
    if (st.state == 'Z' || st.state == 'X')
        return false;
    return !start_time || st.start_time == start_time;
}

/* The hex mask after "name" in a /proc/<pid>/status text, or 0. */
static uint64_t status_mask(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    return p ? strtoull(p + strlen(name), NULL, 16) : 0;
}

procfs_fate_t procfs_fate(pid_t pid, uint64_t start_time)
{
    procfs_stat_t st;
    char path[64], *text;
    if (pid <= 0 || procfs_read_stat(pid, &st) < 0 ||
        (start_time && st.start_time != start_time))
        return PROCFS_FATE_GONE;
    if (st.state == 'Z' || st.state == 'X' || (st.flags & PROCFS_PF_EXITING))
        return PROCFS_FATE_DYING;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (procfs_read_file(path, &text, NULL, PROCFS_STATUS_MAX) < 0)
        return PROCFS_FATE_GONE;
    /* The thread's own pending set (SigPnd) and the process's (ShdPnd). */
    uint64_t pending = status_mask(text, "\nSigPnd:") |
                       status_mask(text, "\nShdPnd:");
    uint64_t caught = status_mask(text, "\nSigCgt:");
    uint64_t blocked = status_mask(text, "\nSigBlk:");
    free(text);
    uint64_t kill_bit = 1ull << (SIGKILL - 1), hup_bit = 1ull << (SIGHUP - 1);
    procfs_fate_t fate = PROCFS_FATE_RUNNING;
    if (pending & kill_bit)
        fate = PROCFS_FATE_DYING;
    else if ((pending & hup_bit) && !(caught & hup_bit))
        fate = blocked & hup_bit ? PROCFS_FATE_HUP_BLOCKED : PROCFS_FATE_DYING;
    /* Still the process whose stat was read: a pid reused in between
     * would answer for another. */
    if (procfs_read_stat(pid, &st) < 0 ||
        (start_time && st.start_time != start_time))
        return PROCFS_FATE_GONE;
    return fate;
}

int procfs_boot_id(char out[PROCFS_BOOT_ID_LEN])
{
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, out, PROCFS_BOOT_ID_LEN - 1);
    int e = errno;
    close(fd);
    if (n < PROCFS_BOOT_ID_LEN - 1)
        return n < 0 ? -e : -EIO;
    out[PROCFS_BOOT_ID_LEN - 1] = 0;
    return 0;
}

int procfs_pid_ns(uint64_t *ino)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) < 0)
        return -errno;
    *ino = (uint64_t)st.st_ino;
    return 0;
}

/* Appends the pids listed in text to (*v, *n, *cap). */
static int parse_pids(const char *text, pid_t **v, size_t *n, size_t *cap)
{
    const char *p = text;
    while (*p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            pid_t *nv = realloc(*v, nc * sizeof *nv);
            if (!nv)
                return -ENOMEM;
            *v = nv;
            *cap = nc;
        }
        (*v)[(*n)++] = (pid_t)x;
        p = end;
    }
    return 0;
}

static int children_into(pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? -ESRCH : -errno;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        char cpath[PATH_MAX], *text;
        if (e->d_name[0] == '.')
            continue;
        snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int)pid,
                 e->d_name);
        if (procfs_read_file(cpath, &text, NULL, PROCFS_CMDLINE_MAX) < 0)
            continue; /* the thread ended meanwhile */
        rc = parse_pids(text, v, n, cap);
        free(text);
        if (rc < 0)
            break;
    }
    closedir(d);
    return rc;
}

int procfs_children(pid_t pid, pid_t **out, size_t *n)
{
    pid_t *v = NULL;
    size_t cnt = 0, cap = 0;
    int rc = children_into(pid, &v, &cnt, &cap);
    if (rc < 0) {
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return 0;
}

int procfs_descendants(pid_t pid, pid_t **out, size_t *n)
{
    pid_t *v = NULL;
    size_t cnt = 0, cap = 0;
    int rc = children_into(pid, &v, &cnt, &cap);
    if (rc < 0 && rc != -ESRCH)
        goto fail;
    /* Breadth-first: v grows while we walk it. */
    for (size_t i = 0; i < cnt && cnt < PROCFS_MAX_DESCENDANTS; i++) {
        rc = children_into(v[i], &v, &cnt, &cap);
        if (rc < 0 && rc != -ESRCH)
            goto fail;
    }
    *out = v;
    *n = cnt;
    return 0;
fail:
    free(v);
    return rc;
}

int procfs_cmdline(pid_t pid, char ***argv)
{
    char path[64], *text;
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int rc = procfs_read_file(path, &text, &len, PROCFS_CMDLINE_MAX);
    if (rc < 0)
        return rc == -ENOENT ? -ESRCH : rc; /* the process is gone */
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        if (!text[i])
            count++;
    if (len && text[len - 1])
        count++; /* last argument without its NUL (a rewritten title) */
    char **v = calloc(count + 1, sizeof *v);
    if (!v) {
        free(text);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < len && k < count;) {
        size_t l = strnlen(text + i, len - i);
        v[k] = strndup(text + i, l);
        if (!v[k]) {
            procfs_strv_free(v);
            free(text);
            return -ENOMEM;
        }
        k++;
        i += l + 1;
    }
    free(text);
    *argv = v;
    return 0;
}

void procfs_strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

int procfs_exe(pid_t pid, char *out, size_t size)
{
    char path[64];
    static const char deleted[] = " (deleted)";
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, out, size - 1);
    if (n < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    if ((size_t)n >= size - 1)
        return -ENAMETOOLONG;
    out[n] = 0;
    size_t dl = sizeof deleted - 1;
    if ((size_t)n > dl && !strcmp(out + n - dl, deleted))
        out[n - dl] = 0;
    return 0;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

int procfs_list_all(pid_t **out, size_t *n)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -errno;
    pid_t *v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        if (cnt == cap) {
            size_t nc = cap ? cap * 2 : 256;
            pid_t *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        v[cnt++] = (pid_t)strtol(e->d_name, NULL, 10);
    }
    closedir(d);
    if (rc < 0) {
        free(v);
        return rc;
    }
    qsort(v, cnt, sizeof *v, cmp_pid);
    *out = v;
    *n = cnt;
    return 0;
}
