/*
 * spool.h — the append-only log file that keeps every byte of a run.
 *
 * Each run's output is spooled to its own file so that nothing is ever lost,
 * whatever the in-memory head+tail buffer drops.  Capture must not be slowed
 * by a write() per 4 KiB PTY read, so writes are batched in a SPOOL_BUF_SIZE
 * buffer and reach the file when it fills, on spool_flush() or on
 * spool_close(); a write at least that large goes straight to the file
 * (after what is buffered, so order is kept).
 *
 * Files are created 0600 (output can hold secrets) with O_EXCL, so a spool
 * never appends to, or follows a symlink planted at, a path it did not
 * create — unless SPOOL_OPEN_APPEND says an existing file is expected.
 *
 * A write error (ENOSPC, EIO, ...) is sticky: it is returned by that call and
 * every later spool_write/spool_flush/spool_close, and every byte that did
 * not reach the file, then or later, is counted by spool_dropped().  The
 * capture path can thus keep going and report the loss once.
 *
 * Byte accounting: spool_bytes() == bytes on disk from this handle
 *                  + bytes still buffered + spool_dropped().
 */
#ifndef REIN_BASE_SPOOL_H
#define REIN_BASE_SPOOL_H

#include <stddef.h>
#include <stdint.h>

/* The batching buffer: 16 PTY reads' worth. */
#define SPOOL_BUF_SIZE (64u * 1024u)
/* Mode of new spool files and of directories spool_mkdir_private makes. */
#define SPOOL_FILE_MODE 0600
#define SPOOL_DIR_MODE 0700

/* spool_open flags. */
enum {
    /* Open an existing file (or create a new one) and append to it,
     * instead of failing with -EEXIST. */
    SPOOL_OPEN_APPEND = 1u << 0,
};

typedef struct spool spool_t;

/* Opens path for appending (O_WRONLY|O_APPEND|O_CLOEXEC, plus O_CREAT|O_EXCL
 * unless SPOOL_OPEN_APPEND, then O_CREAT alone), creating it 0600.  The
 * parent directory must exist.  0, -EEXIST, -EINVAL (unknown flag) or
 * another -errno. */
int spool_open(const char *path, unsigned flags, spool_t **out);

/* Accepts n bytes (data may be NULL when n is 0): buffered, or written when
 * the buffer fills.  0, or the sticky write error (-errno); bytes that could
 * not be written are counted as dropped, not retried. */
int spool_write(spool_t *sp, const void *data, size_t n);

/* Writes what is buffered.  0 or the sticky write error. */
int spool_flush(spool_t *sp);

/* Bytes accepted by spool_write since open, dropped ones included. */
uint64_t spool_bytes(const spool_t *sp);
/* Bytes that will never reach the file because of a write error. */
uint64_t spool_dropped(const spool_t *sp);

/* Flushes, closes and frees sp.  Returns the first write error (or a close
 * error), else 0.  NULL is a no-op returning 0. */
int spool_close(spool_t *sp);

/* Creates dir, and any missing parents, with mode 0700 (before umask).
 * Existing directories are left as they are.  0, -ENOTDIR when a component
 * is not a directory, or another -errno. */
int spool_mkdir_private(const char *dir);

#endif
