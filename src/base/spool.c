/*
 * spool.c — the append-only log file, small writes gathered (see spool.h).
 *
 * The buffer is allocated on demand and released by an explicit flush:
 * dozens of idle sessions must not pin 64 KiB each.  When it cannot be
 * allocated the bytes go straight to the file, so -ENOMEM never drops any.
 * The internal flush of a full buffer keeps it: the stream is busy.
 */
#include "base/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPOOL_KNOWN_FLAGS (SPOOL_OPEN_APPEND | SPOOL_OPEN_WRITE_THROUGH)

struct spool {
    int fd;
    int err;          /* first write error, sticky; 0 while healthy */
    bool through;     /* SPOOL_OPEN_WRITE_THROUGH: nothing is gathered */
    uint64_t bytes;   /* accepted by spool_write */
    uint64_t dropped; /* accepted but never written */
    size_t len;       /* bytes in buf */
    unsigned char *buf; /* SPOOL_BUF_SIZE bytes, or NULL while idle */
    uint64_t end;       /* the file's size: where the next write lands */
    uint64_t cap, head; /* 0: no cap */
    uint64_t hole_to;   /* dropped [head, hole_to); hole_to <= head: none */
    int hole_err;       /* -EOPNOTSUPP once punching failed */
    char *note_path;
};

int spool_open(const char *path, unsigned flags, spool_t **out)
{
    if (flags & ~(unsigned)SPOOL_KNOWN_FLAGS)
        return -EINVAL;
    int oflags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
    if (!(flags & SPOOL_OPEN_APPEND))
        oflags |= O_EXCL;
    spool_t *sp = calloc(1, sizeof *sp);
    if (!sp)
        return -ENOMEM;
    sp->fd = open(path, oflags, SPOOL_FILE_MODE);
    if (sp->fd < 0) {
        int rc = -errno;
        free(sp);
        return rc;
    }
    sp->through = flags & SPOOL_OPEN_WRITE_THROUGH;
    struct stat st;
    if (fstat(sp->fd, &st) == 0)
        sp->end = (uint64_t)st.st_size;
    *out = sp;
    return 0;
}

/* Records the dropped range in the note file; best effort (the range is
 * also in memory, and the log itself is what matters). */
static void spool_write_note(const spool_t *sp)
{
    if (!sp->note_path)
        return;
    int fd = open(sp->note_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  SPOOL_FILE_MODE);
    if (fd < 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "dropped %llu-%llu\n",
                     (unsigned long long)sp->head,
                     (unsigned long long)sp->hole_to);
    if (n > 0 && write(fd, line, (size_t)n) < 0) {
        /* nothing more to do: the note is advisory */
    }
    close(fd);
}

bool spool_log_hole(const char *log_path, uint64_t *from, uint64_t *to)
{
    char note[PATH_MAX + sizeof SPOOL_NOTE_SUFFIX], line[96];
    snprintf(note, sizeof note, "%s" SPOOL_NOTE_SUFFIX, log_path);
    FILE *f = fopen(note, "re");
    if (!f)
        return false;
    unsigned long long x, y;
    bool ok = fgets(line, sizeof line, f) &&
              sscanf(line, "dropped %llu-%llu", &x, &y) == 2 && y > x;
    fclose(f);
    if (ok) {
        *from = x;
        *to = y;
    }
    return ok;
}

/* Past the cap: punches out what lies between the head and the rolling
 * tail, once the tail outgrew its budget by a step. */
static void spool_punch(spool_t *sp)
{
    if (!sp->cap || sp->hole_err)
        return;
    uint64_t keep = sp->cap - sp->head;
    uint64_t step = keep / SPOOL_HOLE_STEP_DIV;
    uint64_t from = sp->hole_to > sp->head ? sp->hole_to : sp->head;
    if (sp->end < from + keep + step)
        return;
    uint64_t to = (sp->end - keep) / SPOOL_HOLE_ALIGN * SPOOL_HOLE_ALIGN;
    if (to <= from)
        return;
    if (fallocate(sp->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)from, (off_t)(to - from)) < 0) {
        sp->hole_err = -EOPNOTSUPP; /* keep every byte instead */
        return;
    }
    sp->hole_to = to;
    spool_write_note(sp);
}

/* Writes all of p, or records the error and counts the unwritten rest as
 * dropped.  Returns 0 or the (now sticky) error. */
static int spool_write_all(spool_t *sp, const unsigned char *p, size_t n)
{
    int rc = 0;
    while (n) {
        ssize_t w = write(sp->fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            sp->err = -errno;
            sp->dropped += n;
            rc = sp->err;
            break;
        }
        if (w == 0) { /* cannot happen for regular files; never spin */
            sp->err = -EIO;
            sp->dropped += n;
            rc = sp->err;
            break;
        }
        p += w;
        n -= (size_t)w;
        sp->end += (uint64_t)w;
    }
    spool_punch(sp);
    return rc;
}

/* Writes what is buffered, keeping the buffer (the stream is busy). */
static int spool_flush_keep(spool_t *sp)
{
    if (sp->err)
        return sp->err;
    size_t n = sp->len;
    sp->len = 0;
    return n ? spool_write_all(sp, sp->buf, n) : 0;
}

int spool_flush(spool_t *sp)
{
    int rc = spool_flush_keep(sp);
    /* An explicit flush means the writer paused: give the memory back. */
    free(sp->buf);
    sp->buf = NULL;
    sp->len = 0;
    return rc;
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
    if (n >= SPOOL_DIRECT_MIN || sp->through) {
        /* Big enough to go as it is (or nothing is gathered); keep order
         * by flushing first. */
        if ((rc = spool_flush_keep(sp)) < 0) {
            sp->dropped += n;
            return rc;
        }
        return spool_write_all(sp, p, n);
    }
    if (!sp->buf && !(sp->buf = malloc(SPOOL_BUF_SIZE)))
        return spool_write_all(sp, p, n); /* unbatched, but kept */
    size_t room = SPOOL_BUF_SIZE - sp->len;
    if (n < room) {
        memcpy(sp->buf + sp->len, p, n);
        sp->len += n;
        return 0;
    }
    /* Top the buffer up so every batch is a full SPOOL_BUF_SIZE write. */
    memcpy(sp->buf + sp->len, p, room);
    sp->len = SPOOL_BUF_SIZE;
    if ((rc = spool_flush_keep(sp)) < 0) {
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

int spool_set_cap(spool_t *sp, uint64_t cap, uint64_t head,
                  const char *note_path)
{
    if (!cap || head >= cap || head % SPOOL_HOLE_ALIGN ||
        cap % SPOOL_HOLE_ALIGN)
        return -EINVAL;
    char *copy = NULL;
    if (note_path && !(copy = strdup(note_path)))
        return -ENOMEM;
    free(sp->note_path);
    sp->note_path = copy;
    sp->cap = cap;
    sp->head = head;
    return 0;
}

int spool_hole(const spool_t *sp, uint64_t *from, uint64_t *to)
{
    bool any = sp->cap && sp->hole_to > sp->head;
    *from = any ? sp->head : 0;
    *to = any ? sp->hole_to : 0;
    if (sp->hole_err)
        return sp->hole_err;
    return sp->cap ? 1 : 0;
}

int spool_close(spool_t *sp)
{
    if (!sp)
        return 0;
    int rc = spool_flush(sp);
    if (close(sp->fd) < 0 && rc == 0 && errno != EINTR)
        rc = -errno; /* NFS and friends report write-back errors here */
    free(sp->note_path);
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
        /* A name that exists but leads nowhere: a dangling symlink. */
        if (e == EEXIST && errno == ENOENT)
            return -ENOTDIR;
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
