/*
 * headtail.h — a capped output buffer keeping the head and the tail.
 *
 * A session's undelivered output is held in memory up to a cap (1 MiB by
 * default).  When a chatty command outruns it, what the model most needs is
 * how the output began (the command's banner, the first error) and how it
 * ends (the result), so the middle is what gets dropped.  This is Codex's
 * HeadTailBuffer (codex-rs/core/src/unified_exec/head_tail_buffer.rs) with
 * the same arithmetic:
 *
 *   - head budget = cap / 2, tail budget = cap - head budget;
 *   - a pushed chunk first fills the head up to its budget; the rest goes to
 *     the tail, whose oldest bytes are dropped to keep it within budget (a
 *     chunk at least as long as the tail budget replaces the tail with its
 *     own last bytes);
 *   - every byte dropped is counted in "omitted"; cap 0 keeps nothing.
 *
 * What the head keeps is the first bytes and what the tail keeps is the last
 * ones, so the omitted bytes are always one contiguous range of the stream.
 * render() names that range with a marker between head and tail:
 *
 *     "\n[... N bytes omitted (bytes A-B) ...]\n"
 *
 * N is the count, and A-B the half-open range [A, B) of stream offsets
 * (B - A == N).  Offsets count every byte pushed since headtail_init(), and
 * keep counting across drains, so they match the offsets of the session's
 * full log file (which spools the same bytes) and the model can ask for
 * exactly the missing range.  Without omission render() gives the bytes
 * alone.  The marker differs from Codex's ("\n... N bytes omitted ...\n")
 * only by the brackets and range.
 *
 * Memory grows on demand, never beyond cap (plus bookkeeping): many mostly
 * idle sessions with large caps must stay cheap.
 */
#ifndef REIN_BASE_HEADTAIL_H
#define REIN_BASE_HEADTAIL_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* The default cap of a session's head+tail buffer. */
#define HEADTAIL_DEFAULT_CAP (1024u * 1024u)

typedef struct headtail headtail_t;

/* A new, empty buffer retaining at most cap bytes (0: keeps nothing).
 * Allocates no data space yet.  0 or -ENOMEM. */
int headtail_new(size_t cap, headtail_t **out);
/* Frees ht; NULL is a no-op. */
void headtail_free(headtail_t *ht);

/* Appends n bytes of output (data may be NULL when n is 0).  On -ENOMEM
 * the chunk is counted as omitted (the stream offsets stay true) and the
 * error returned; the buffer stays usable. */
int headtail_push(headtail_t *ht, const void *data, size_t n);

/* Bytes held now (head + tail), at most cap. */
size_t headtail_retained(const headtail_t *ht);
/* Bytes dropped from the middle since the last drain (or init). */
uint64_t headtail_omitted(const headtail_t *ht);
/* Bytes pushed since init: the stream offset of the next byte. */
uint64_t headtail_total(const headtail_t *ht);
/* The stream offset where the currently held window begins (0 until the
 * first drain): retained + omitted == total - start. */
uint64_t headtail_start(const headtail_t *ht);

/* Appends head, then the marker when something was omitted, then tail to
 * out.  ht is unchanged.  0 or -ENOMEM. */
int headtail_render(const headtail_t *ht, buf_t *out);
/* The bytes alone: head then tail with nothing between them, for a
 * caller that marks the omitted range itself (it lies between the first
 * *head_len bytes appended and the rest; head_len may be NULL).  ht is
 * unchanged.  0 or -ENOMEM. */
int headtail_render_raw(const headtail_t *ht, buf_t *out, size_t *head_len);
/* Empties ht (head, tail, omitted) so the next push starts a new head at
 * the current stream offset. */
void headtail_clear(headtail_t *ht);
/* Like render, then headtail_clear: each byte is delivered once.  On
 * -ENOMEM ht is left unchanged. */
int headtail_drain(headtail_t *ht, buf_t *out);

#endif
