/*
 * utf8.c — a streaming, lossy UTF-8 decoder (see utf8.h).
 *
 * One helper, utf8_subpart(), knows the well-formed byte ranges of Unicode's
 * table 3-7; both the validator and the error path use it, so "valid" and
 * "what one U+FFFD replaces" can never disagree.  The streaming part only
 * re-runs that helper on the held bytes plus the start of the next chunk.
 */
#include "base/utf8.h"

#include <errno.h>
#include <string.h>

/* ASCII is checked this many bytes at a time (two 64-bit words). */
#define UTF8_ASCII_STRIDE 16
#define UTF8_HIGH_BITS 0x8080808080808080ull

void utf8_init(utf8_dec_t *d)
{
    memset(d, 0, sizeof *d);
}

/* The full length of a sequence starting with lead byte b: 1..4, or 0 when b
 * cannot start a sequence (a continuation byte, C0/C1, F5..FF). */
static size_t utf8_seq_len(unsigned char b)
{
    if (b < 0x80)
        return 1;
    if (b < 0xC2)
        return 0;
    if (b < 0xE0)
        return 2;
    if (b < 0xF0)
        return 3;
    if (b < 0xF5)
        return 4;
    return 0;
}

/*
 * Looks at the sequence starting at p (avail >= 1 bytes there).  Sets *full
 * to the length the lead byte announces (0 for a bad lead) and returns how
 * many bytes, from the start, form a valid prefix of it: *full when the
 * sequence is complete and well-formed, less when it is cut short by the
 * end of input (return == avail) or by an ill-formed byte.  The second byte's
 * range depends on the lead, which is how overlongs (E0, F0), surrogates
 * (ED) and > U+10FFFF (F4) are refused at the earliest byte possible.
 */
static size_t utf8_subpart(const unsigned char *p, size_t avail, size_t *full)
{
    unsigned char b0 = p[0];
    size_t len = utf8_seq_len(b0);
    *full = len;
    if (len <= 1)
        return len;
    unsigned char lo = 0x80, hi = 0xBF;
    switch (b0) {
    case 0xE0: lo = 0xA0; break; /* overlong below U+0800 */
    case 0xED: hi = 0x9F; break; /* surrogates D800..DFFF */
    case 0xF0: lo = 0x90; break; /* overlong below U+10000 */
    case 0xF4: hi = 0x8F; break; /* above U+10FFFF */
    default: break;
    }
    size_t k = 1;
    while (k < len && k < avail) {
        unsigned char b = p[k];
        if (b < lo || b > hi)
            break;
        lo = 0x80;
        hi = 0xBF;
        k++;
    }
    return k;
}

size_t utf8_valid_prefix(const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t i = 0;
    while (i < n) {
        /* The common case on the read path: long ASCII runs. */
        while (n - i >= UTF8_ASCII_STRIDE) {
            uint64_t a, b;
            memcpy(&a, p + i, sizeof a);
            memcpy(&b, p + i + sizeof a, sizeof b);
            if ((a | b) & UTF8_HIGH_BITS)
                break;
            i += UTF8_ASCII_STRIDE;
        }
        if (i >= n)
            break;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t full;
        size_t k = utf8_subpart(p + i, n - i, &full);
        if (full == 0 || k < full)
            break;
        i += full;
    }
    return i;
}

size_t utf8_encode(uint32_t cp, char out[UTF8_SEQ_MAX])
{
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        cp = 0xFFFD;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int utf8_put_replacement(buf_t *out)
{
    return buf_append(out, UTF8_REPLACEMENT, UTF8_REPLACEMENT_LEN);
}

/*
 * Resumes a held sequence with the first bytes of the new chunk.  Returns
 * how many input bytes were consumed (>= 0) or -ENOMEM.  On return either
 * the held sequence was resolved (npend == 0) or the input ran out first.
 */
static long utf8_resume(utf8_dec_t *d, const unsigned char *p, size_t n,
                        buf_t *out)
{
    unsigned char tmp[UTF8_SEQ_MAX];
    size_t held = d->npend;
    size_t take = UTF8_SEQ_MAX - held < n ? UTF8_SEQ_MAX - held : n;
    memcpy(tmp, d->pend, held);
    memcpy(tmp + held, p, take);
    size_t avail = held + take, full;
    size_t k = utf8_subpart(tmp, avail, &full);
    if (k == full) { /* completed */
        d->npend = 0;
        int rc = buf_append(out, tmp, full);
        return rc < 0 ? rc : (long)(full - held);
    }
    if (k == avail) { /* still incomplete: all of the input joins it */
        memcpy(d->pend, tmp, avail);
        d->npend = (uint8_t)avail;
        return (long)take;
    }
    /* Broken by tmp[k]: the held bytes plus any good ones from this chunk
     * are one maximal subpart; tmp[k] is decoded afresh by the caller. */
    d->npend = 0;
    int rc = utf8_put_replacement(out);
    return rc < 0 ? rc : (long)(k - held);
}

int utf8_decode(utf8_dec_t *d, const void *data, size_t n, buf_t *out)
{
    const unsigned char *p = data;
    size_t i = 0;
    int rc;
    if (n == 0)
        return 0;
    if (d->npend) {
        long used = utf8_resume(d, p, n, out);
        if (used < 0)
            return (int)used;
        i = (size_t)used;
        if (d->npend)
            return 0;
    }
    while (i < n) {
        size_t good = utf8_valid_prefix(p + i, n - i);
        if (good) {
            rc = buf_append(out, p + i, good);
            if (rc < 0)
                return rc;
            i += good;
            if (i == n)
                break;
        }
        size_t full;
        size_t k = utf8_subpart(p + i, n - i, &full);
        if (full != 0 && k == n - i) {
            /* A valid prefix running into the chunk's end: hold it. */
            memcpy(d->pend, p + i, k);
            d->npend = (uint8_t)k;
            break;
        }
        rc = utf8_put_replacement(out);
        if (rc < 0)
            return rc;
        i += k ? k : 1; /* a bad lead byte is a subpart of one */
    }
    return 0;
}

int utf8_finish(utf8_dec_t *d, buf_t *out)
{
    if (!d->npend)
        return 0;
    d->npend = 0;
    return utf8_put_replacement(out);
}

int utf8_decode_view(utf8_dec_t *d, const void *data, size_t n,
                     buf_t *scratch, const char **text, size_t *len)
{
    if (d->npend == 0 && utf8_valid_prefix(data, n) == n) {
        *text = data;
        *len = n;
        return 0;
    }
    buf_reset(scratch);
    int rc = utf8_decode(d, data, n, scratch);
    *text = scratch->p ? scratch->p : "";
    *len = scratch->len;
    return rc;
}

int utf8_forward(utf8_dec_t *d, const void *data, size_t n, buf_t *scratch,
                 utf8_sink_fn fn, void *fn_data)
{
    const char *text;
    size_t len;
    int rc = utf8_decode_view(d, data, n, scratch, &text, &len);
    if (len && fn)
        fn(text, len, fn_data);
    buf_reset(scratch);
    return rc;
}
