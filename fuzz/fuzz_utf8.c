/*
 * fuzz_utf8.c — the streaming UTF-8 decoder on arbitrary bytes.
 *
 * The first input byte picks how the rest is cut: one split at a
 * data-derived point, plus runs of chunks of a data-derived size.  Checked:
 * the output is valid UTF-8, it equals the one-shot decode of the whole
 * input, and valid input comes back unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_same(const buf_t *a, const buf_t *b)
{
    if (a->len != b->len || (a->len && memcmp(a->p, b->p, a->len)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned knob = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;

    utf8_dec_t d;
    buf_t one = BUF_INIT, two = BUF_INIT, many = BUF_INIT;

    utf8_init(&d);
    if (utf8_decode(&d, p, n, &one) < 0 || utf8_finish(&d, &one) < 0)
        abort();
    if (utf8_valid_prefix(one.p, one.len) != one.len)
        abort();
    if (utf8_valid_prefix(p, n) == n &&
        (one.len != n || (n && memcmp(one.p, p, n))))
        abort();

    /* Two chunks, cut where the knob says (scaled to the input). */
    size_t cut = n ? (size_t)knob * n / 255 : 0;
    utf8_init(&d);
    if (utf8_decode(&d, p, cut, &two) < 0 ||
        utf8_decode(&d, p + cut, n - cut, &two) < 0 ||
        utf8_finish(&d, &two) < 0)
        abort();
    fuzz_same(&one, &two);

    /* Fixed-size chunks of 1..8 bytes. */
    size_t step = 1 + (knob & 7);
    utf8_init(&d);
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        if (utf8_decode(&d, p + i, k, &many) < 0)
            abort();
    }
    if (utf8_finish(&d, &many) < 0)
        abort();
    fuzz_same(&one, &many);

    buf_free(&one);
    buf_free(&two);
    buf_free(&many);
    return 0;
}
