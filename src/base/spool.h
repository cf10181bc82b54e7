/*
 * spool.h — the append-only log file that keeps every byte of a run.
 *
 * Each run's output is spooled to its own file so that nothing is ever lost,
 * whatever the in-memory head+tail buffer drops.  Small writes (a prompt, a
 * line at a time) are gathered in a SPOOL_BUF_SIZE buffer and reach the file
 * when it fills, on spool_flush() or on spool_close(), so a chatty stream
 * does not cost a write() per line.  A write of at least SPOOL_DIRECT_MIN
 * bytes (a PTY read under load is ~4 KiB) goes straight to the file, after
 * what is buffered, so order is kept: gathering a PTY flood's reads into
 * 64 KiB batches made it slower, not faster (docs/bench.md, "Reading the
 * PTY figure").  A gathered byte is lost if the writer dies (SIGKILL, a
 * crash) before it reaches the file: with SPOOL_OPEN_WRITE_THROUGH nothing
 * is gathered, and every byte is in the file (the page cache, which
 * outlives the process) when spool_write returns.
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
 *
 * Memory: the batching buffer is allocated by the first write that needs
 * it and released by spool_flush(), so an idle log (a session waiting at a
 * prompt for hours) costs no buffer.  Without memory for it, a write goes
 * straight to the file: slower, never lost.
 *
 * A size cap (spool_set_cap) keeps a runaway log bounded on disk: once the
 * file passes the cap, the bytes after its head are punched out
 * (FALLOC_FL_PUNCH_HOLE), keeping the first `head` bytes and a rolling tail
 * of at least cap - head bytes.  The file keeps its apparent size, so file
 * offsets stay stream offsets; the hole reads as zeros, and the dropped
 * range [A, B) is recorded in a note file ("dropped A-B\n") and by
 * spool_hole().  Where the file system cannot punch holes the cap is given
 * up (spool_hole says so) and the log grows: bytes are never lost for it.
 */
#ifndef REIN_BASE_SPOOL_H
#define REIN_BASE_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The buffer that gathers small writes. */
#define SPOOL_BUF_SIZE (64u * 1024u)
/* A write this large or larger is not gathered: it goes to the file at
 * once.  Half a PTY read, so a flood's reads all go straight through. */
#define SPOOL_DIRECT_MIN 2048u
/* Mode of new spool files and of directories spool_mkdir_private makes. */
#define SPOOL_FILE_MODE 0600
#define SPOOL_DIR_MODE 0700
/* Hole boundaries are kept on this (file system block) multiple, so a
 * punch frees whole blocks instead of zeroing parts of them. */
#define SPOOL_HOLE_ALIGN 4096u
/* Punch when the tail has grown this fraction of (cap - head) past its
 * budget: a punch per write would cost a syscall per chunk. */
#define SPOOL_HOLE_STEP_DIV 4

/* spool_open flags. */
enum {
    /* Open an existing file (or create a new one) and append to it,
     * instead of failing with -EEXIST. */
    SPOOL_OPEN_APPEND = 1u << 0,
    /* Gather nothing: each spool_write is written before it returns, so
     * the writer's own death loses none of what it was given (rein's
     * supervisor logs: a byte shown to anyone is on disk). */
    SPOOL_OPEN_WRITE_THROUGH = 1u << 1,
};

typedef struct spool spool_t;

/* Opens path for appending (O_WRONLY|O_APPEND|O_CLOEXEC, plus O_CREAT|O_EXCL
 * unless SPOOL_OPEN_APPEND, then O_CREAT alone), creating it 0600.  The
 * parent directory must exist.  0, -EEXIST, -EINVAL (unknown flag) or
 * another -errno. */
int spool_open(const char *path, unsigned flags, spool_t **out);

/* Accepts n bytes (data may be NULL when n is 0): buffered, or written when
 * the buffer fills (at once with SPOOL_OPEN_WRITE_THROUGH).  0, or the
 * sticky write error (-errno); bytes that could not be written are counted
 * as dropped, not retried. */
int spool_write(spool_t *sp, const void *data, size_t n);

/* Writes what is buffered.  0 or the sticky write error. */
int spool_flush(spool_t *sp);

/* Bytes accepted by spool_write since open, dropped ones included. */
uint64_t spool_bytes(const spool_t *sp);
/* Bytes that will never reach the file because of a write error. */
uint64_t spool_dropped(const spool_t *sp);

/* Caps the file at about cap bytes on disk, keeping its first head bytes
 * and a rolling tail (head < cap; both multiples of SPOOL_HOLE_ALIGN).
 * note_path (copied; may be NULL) receives the dropped range each time it
 * grows.  0 or -EINVAL. */
int spool_set_cap(spool_t *sp, uint64_t cap, uint64_t head,
                  const char *note_path);
/* Where a capped log's note lives: its path with this suffix.  The note
 * is one line, "dropped A-B\n". */
#define SPOOL_NOTE_SUFFIX ".dropped"
/* The dropped range [*from, *to) noted beside the log at log_path, for a
 * reader of the file (another process than the writer).  False when
 * there is no note, or it holds no range. */
bool spool_log_hole(const char *log_path, uint64_t *from, uint64_t *to);
/* The dropped range [*from, *to) (both 0 when nothing was dropped).
 * Returns 1 while the cap works, 0 without a cap, -EOPNOTSUPP when the
 * file system refused to punch and the cap was given up. */
int spool_hole(const spool_t *sp, uint64_t *from, uint64_t *to);

/* Flushes, closes and frees sp.  Returns the first write error (or a close
 * error), else 0.  NULL is a no-op returning 0. */
int spool_close(spool_t *sp);

/* Creates dir, and any missing parents, with mode 0700 (before umask).
 * Existing directories are left as they are.  0, -ENOTDIR when a component
 * is not a directory, or another -errno. */
int spool_mkdir_private(const char *dir);

#endif
