/*
 * b64.c — base64: the public strict-but-forgiving decoder and the internal
 * encoder.
 *
 * rein_base64_decode() reads write_stdin's chars_b64, whose whole point is
 * "exactly these bytes", so it accepts what honest encoders produce and
 * rejects everything else rather than guess:
 *   - the standard alphabet only (A-Z a-z 0-9 + /).  The URL-safe '-' and
 *     '_' are rejected: the tool schema says standard base64, and a string
 *     mixing alphabets is more likely corrupt than deliberate;
 *   - '=' padding is optional, but when present it must complete the last
 *     quantum exactly ("QQ==", "QUI="; not "QQ=", "QUJD=", "QQ===") and
 *     nothing but whitespace may follow it;
 *   - ASCII whitespace (space, \t \n \v \f \r) is ignored anywhere, for
 *     wrapped (MIME/PEM style) input;
 *   - a lone final character (length % 4 == 1) and non-zero unused bits in
 *     the last character ("QR==" for "A") are rejected, so each byte string
 *     has one accepted encoding up to whitespace and padding.
 */
#include "base/b64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "rein.h"

#define B64_ALPHABET \
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#define B64_PAD '='
/* Sextets in a quantum, and the bytes a full quantum decodes to. */
#define B64_QUANTUM 4
#define B64_QUANTUM_BYTES 3

/* Decode table classes; values 0..63 are sextets. */
enum { B64_BAD = -1, B64_SPACE = -2, B64_PADDING = -3 };

/* The class of c.  Computed rather than looked up in a lazily built table:
 * no static state, so no init race when threads decode at once. */
static int b64_class(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    switch (c) {
    case '+': return 62;
    case '/': return 63;
    case B64_PAD: return B64_PADDING;
    case ' ': case '\t': case '\n': case '\v': case '\f': case '\r':
        return B64_SPACE;
    default: return B64_BAD;
    }
}

int rein_base64_decode(const char *in, size_t len, unsigned char **out,
                       size_t *out_len)
{
    if (!out || !out_len || (!in && len))
        return -EINVAL;
    /* Whitespace only shrinks the output, so this bound always holds. */
    size_t cap = len / B64_QUANTUM * B64_QUANTUM_BYTES + B64_QUANTUM_BYTES + 1;
    unsigned char *o = malloc(cap);
    if (!o)
        return -ENOMEM;
    size_t n = 0, nq = 0, npad = 0;
    uint32_t acc = 0;
    int rc = REIN_EBASE64;
    for (size_t i = 0; i < len; i++) {
        int v = b64_class((unsigned char)in[i]);
        if (v == B64_SPACE)
            continue;
        if (v == B64_PADDING) {
            /* Padding only ever follows 2 or 3 sextets of a quantum. */
            if (nq < 2 || nq + npad >= B64_QUANTUM)
                goto fail;
            npad++;
            continue;
        }
        if (v == B64_BAD || npad)
            goto fail;
        acc = acc << 6 | (uint32_t)v;
        if (++nq == B64_QUANTUM) {
            o[n++] = (unsigned char)(acc >> 16);
            o[n++] = (unsigned char)(acc >> 8);
            o[n++] = (unsigned char)acc;
            nq = 0;
            acc = 0;
        }
    }
    if (npad && nq + npad != B64_QUANTUM)
        goto fail;
    switch (nq) {
    case 0:
        break;
    case 2: /* 12 bits: one byte and 4 unused bits */
        if (acc & 0xF)
            goto fail;
        o[n++] = (unsigned char)(acc >> 4);
        break;
    case 3: /* 18 bits: two bytes and 2 unused bits */
        if (acc & 0x3)
            goto fail;
        o[n++] = (unsigned char)(acc >> 10);
        o[n++] = (unsigned char)(acc >> 2);
        break;
    default: /* 1 sextet is 6 bits: not even one byte */
        goto fail;
    }
    o[n] = 0;
    *out = o;
    *out_len = n;
    return 0;
fail:
    free(o);
    return rc;
}

size_t b64_encoded_len(size_t n)
{
    size_t q = n / B64_QUANTUM_BYTES + (n % B64_QUANTUM_BYTES != 0);
    if (q > SIZE_MAX / B64_QUANTUM)
        return 0;
    return q * B64_QUANTUM;
}

int b64_encode(const void *data, size_t n, buf_t *out)
{
    const unsigned char *p = data;
    size_t elen = b64_encoded_len(n);
    if (n && !elen)
        return -ENOMEM;
    int rc = buf_reserve(out, elen);
    if (rc < 0)
        return rc;
    char *o = out->p + out->len;
    size_t i = 0;
    for (; i + B64_QUANTUM_BYTES <= n; i += B64_QUANTUM_BYTES) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = B64_ALPHABET[v >> 18];
        *o++ = B64_ALPHABET[(v >> 12) & 63];
        *o++ = B64_ALPHABET[(v >> 6) & 63];
        *o++ = B64_ALPHABET[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        *o++ = B64_ALPHABET[v >> 18];
        *o++ = B64_ALPHABET[(v >> 12) & 63];
        *o++ = i + 1 < n ? B64_ALPHABET[(v >> 6) & 63] : B64_PAD;
        *o++ = B64_PAD;
    }
    out->len += elen;
    out->p[out->len] = 0;
    return 0;
}
