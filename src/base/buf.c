/*
 * buf.c — a growable byte buffer (see buf.h).
 */
#include "base/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 64

int buf_reserve(buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return -ENOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : BUF_MIN_CAP;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int buf_append(buf_t *b, const void *data, size_t n)
{
    int rc = buf_reserve(b, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

int buf_append_str(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_append_byte(buf_t *b, unsigned char c)
{
    return buf_append(b, &c, 1);
}

int buf_printf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    if ((size_t)n < sizeof small)
        return buf_append(b, small, (size_t)n);
    int rc = buf_reserve(b, (size_t)n);
    if (rc < 0)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void buf_consume(buf_t *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    b->p[b->len] = 0;
}

void buf_reset(buf_t *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = 0;
}

char *buf_detach(buf_t *b)
{
    if (!b->p && buf_reserve(b, 0) < 0)
        return NULL;
    b->p[b->len] = 0;
    char *p = b->p;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

void buf_free(buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

size_t buf_count(const void *p, size_t n, unsigned char c)
{
    const unsigned char *s = p;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == c;
    return k;
}
