/*
 * spool.c — the batched, append-only log file (see spool.h).
 *
 * The buffer is allocated with the handle: a spool exists to be written to,
 * and allocating on open keeps spool_write free of an -ENOMEM path that
 * would otherwise have to drop bytes.
 */
#include "base/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPOOL_KNOWN_FLAGS SPOOL_OPEN_APPEND

struct spool {
    int fd;
    int err;          /* first write error, sticky; 0 while healthy */
    uint64_t bytes;   /* accepted by spool_write */
    uint64_t dropped; /* accepted but never written */
    size_t len;       /* bytes in buf */
    unsigned char buf[SPOOL_BUF_SIZE];
};

int spool_open(const char *path, unsigned flags, spool_t **out)
{
    if (flags & ~(unsigned)SPOOL_KNOWN_FLAGS)
        return -EINVAL;
    int oflags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
    if (!(flags & SPOOL_OPEN_APPEND))
        oflags |= O_EXCL;
    spool_t *sp = malloc(sizeof *sp);
    if (!sp)
        return -ENOMEM;
    sp->fd = open(path, oflags, SPOOL_FILE_MODE);
    if (sp->fd < 0) {
        int rc = -errno;
        free(sp);
        return rc;
    }
    sp->err = 0;
    sp->bytes = sp->dropped = 0;
    sp->len = 0;
    *out = sp;
    return 0;
}

/* Writes all of p, or records the error and counts the unwritten rest as
 * dropped.  Returns 0 or the (now sticky) error. */
static int spool_write_all(spool_t *sp, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(sp->fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            sp->err = -errno;
            sp->dropped += n;
            return sp->err;
        }
        if (w == 0) { /* cannot happen for regular files; never spin */
            sp->err = -EIO;
            sp->dropped += n;
            return sp->err;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int spool_flush(spool_t *sp)
{
    if (sp->err)
        return sp->err;
    size_t n = sp->len;
    sp->len = 0;
    return spool_write_all(sp, sp->buf, n);
}

int spool_write(spool_t *sp, const void *data, size_t n)
{
    const unsigned char *p = data;
    int rc;
    if (n == 0)
        return 0;
    sp->bytes += n;
    if (sp->err) {
        sp->dropped += n;
        return sp->err;
    }
    size_t room = SPOOL_BUF_SIZE - sp->len;
    if (n < room) {
        memcpy(sp->buf + sp->len, p, n);
        sp->len += n;
        return 0;
    }
    if (n >= SPOOL_BUF_SIZE) {
        /* Big: no point copying it; keep order by flushing first. */
        if ((rc = spool_flush(sp)) < 0) {
            sp->dropped += n;
            return rc;
        }
        return spool_write_all(sp, p, n);
    }
    /* Top the buffer up so every batch is a full SPOOL_BUF_SIZE write. */
    memcpy(sp->buf + sp->len, p, room);
    sp->len = SPOOL_BUF_SIZE;
    if ((rc = spool_flush(sp)) < 0) {
        sp->dropped += n - room;
        return rc;
    }
    memcpy(sp->buf, p + room, n - room);
    sp->len = n - room;
    return 0;
}

uint64_t spool_bytes(const spool_t *sp)
{
    return sp->bytes;
}

uint64_t spool_dropped(const spool_t *sp)
{
    return sp->dropped;
}

int spool_close(spool_t *sp)
{
    if (!sp)
        return 0;
    int rc = spool_flush(sp);
    if (close(sp->fd) < 0 && rc == 0 && errno != EINTR)
        rc = -errno; /* NFS and friends report write-back errors here */
    free(sp);
    return rc;
}

/* mkdir that accepts an existing directory (following symlinks, as the
 * caller named the path) and refuses anything else there. */
static int spool_mkdir_one(const char *path)
{
    if (mkdir(path, SPOOL_DIR_MODE) == 0)
        return 0;
    int e = errno;
    struct stat st;
    if (e == EEXIST || e == EACCES || e == EROFS || e == EPERM) {
        /* EACCES/EROFS/EPERM for an existing directory we cannot write in
         * (e.g. "/home") are fine: we only need it to exist. */
        if (stat(path, &st) == 0)
            return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    }
    return -e;
}

int spool_mkdir_private(const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    if (n == 0)
        return -EINVAL;
    if (n >= PATH_MAX)
        return -ENAMETOOLONG;
    char path[PATH_MAX];
    memcpy(path, dir, n + 1);
    while (n > 1 && path[n - 1] == '/') /* "a/b/" is "a/b" */
        path[--n] = 0;
    /* Each parent in turn, then dir itself.  Skip the root's slash. */
    for (size_t i = 1; i < n; i++) {
        if (path[i] != '/' || path[i - 1] == '/')
            continue;
        path[i] = 0;
        int rc = spool_mkdir_one(path);
        path[i] = '/';
        if (rc < 0)
            return rc;
    }
    return spool_mkdir_one(path);
}
