/*
 * buf.h — a growable byte buffer.
 *
 * The one dynamic byte array of librein: output chunks, decoded text, JSON.
 * Always keeps a NUL after the last byte so text can be used as a C string,
 * and never shrinks until buf_free.  Growth is geometric.
 */
#ifndef REIN_BASE_BUF_H
#define REIN_BASE_BUF_H

#include <stddef.h>

typedef struct buf {
    char *p;    /* NULL until the first append; then NUL-terminated */
    size_t len; /* bytes held, NUL not counted */
    size_t cap; /* bytes allocated */
} buf_t;

#define BUF_INIT {NULL, 0, 0}

/* Ensures room for extra more bytes (and the NUL).  0 or -ENOMEM. */
int buf_reserve(buf_t *b, size_t extra);
/* Appends n bytes.  0 or -ENOMEM (b unchanged). */
int buf_append(buf_t *b, const void *data, size_t n);
int buf_append_str(buf_t *b, const char *s);
int buf_append_byte(buf_t *b, unsigned char c);
/* printf-style append.  0 or -ENOMEM. */
int buf_printf(buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes (n <= len). */
void buf_consume(buf_t *b, size_t n);
/* Empties the buffer, keeping its memory. */
void buf_reset(buf_t *b);
/* Hands the bytes to the caller (NUL-terminated, never NULL on success)
 * and leaves b empty.  NULL on -ENOMEM. */
char *buf_detach(buf_t *b);
void buf_free(buf_t *b);

/* How many of the n bytes at p are c (newlines, to number lines as output
 * streams past: a plain loop the compiler vectorises, a few GB/s). */
size_t buf_count(const void *p, size_t n, unsigned char c);

#endif
