/*
 * fuzz_escape.c — rein_unescape and base64 on arbitrary input.
 *
 * Invariants checked (abort on violation, so libFuzzer reports it):
 *   unescape: succeeds on any input; the output is NUL-terminated and never
 *     longer than the input (every escape is shorter than its spelling);
 *     input without a backslash comes back unchanged.
 *   base64 decode: when it accepts, re-encoding gives the input minus
 *     whitespace and padding (one accepted spelling per byte string), and
 *     the output is NUL-terminated.
 *   b64_encode: decoding its output gives the input back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/b64.h"
#include "base/buf.h"
#include "rein.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input without ASCII whitespace and '='. */
static void fuzz_b64_canon(const uint8_t *p, size_t n, buf_t *out)
{
    for (size_t i = 0; i < n; i++) {
        if (strchr(" \t\n\v\f\r=", p[i]) && p[i] != 0)
            continue;
        if (buf_append_byte(out, p[i]) < 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;

    char *u = NULL;
    size_t ulen = 0;
    if (rein_unescape(in, size, &u, &ulen) < 0)
        abort();
    if (ulen > size || u[ulen] != 0)
        abort();
    if (!memchr(data, '\\', size) && (ulen != size || memcmp(u, data, size)))
        abort();
    rein_free(u);

    unsigned char *d = NULL;
    size_t dlen = 0;
    int rc = rein_base64_decode(in, size, &d, &dlen);
    if (rc == 0) {
        if (d[dlen] != 0)
            abort();
        buf_t enc = BUF_INIT, a = BUF_INIT, b = BUF_INIT;
        if (b64_encode(d, dlen, &enc) < 0)
            abort();
        fuzz_b64_canon(data, size, &a);
        fuzz_b64_canon((const uint8_t *)enc.p, enc.len, &b);
        if (a.len != b.len || (a.len && memcmp(a.p, b.p, a.len)))
            abort();
        buf_free(&enc);
        buf_free(&a);
        buf_free(&b);
        rein_free(d);
    } else if (rc != REIN_EBASE64) {
        abort();
    }

    buf_t enc = BUF_INIT;
    if (b64_encode(data, size, &enc) < 0)
        abort();
    if (enc.len != b64_encoded_len(size))
        abort();
    if (rein_base64_decode(enc.p ? enc.p : "", enc.len, &d, &dlen) < 0)
        abort();
    if (dlen != size || (size && memcmp(d, data, size)))
        abort();
    rein_free(d);
    buf_free(&enc);
    return 0;
}
