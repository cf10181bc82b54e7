/*
 * utf8.h — a streaming UTF-8 decoder that never fails on bad input.
 *
 * Output from a child arrives in arbitrary chunks (a PTY read can split a
 * character anywhere) and may hold any bytes at all.  Everything above the
 * read path wants valid UTF-8: JSON strings, the squasher, the model.  This
 * decoder turns a byte stream into valid UTF-8, chunk by chunk:
 *
 *   - valid sequences are copied through unchanged;
 *   - each "maximal subpart" of an ill-formed sequence becomes one U+FFFD
 *     (the Unicode / WHATWG rule that Rust's String::from_utf8_lossy also
 *     follows): a lead byte that can start nothing (80..C1, F5..FF) is one
 *     U+FFFD; a valid prefix of a sequence cut short by an unexpected byte
 *     is one U+FFFD and the unexpected byte is then decoded afresh.
 *     Overlongs (E0 80.., F0 80..), surrogates (ED A0..) and code points
 *     above U+10FFFF (F4 90.., F5..) are ill-formed at their second byte at
 *     the latest, so they give one U+FFFD per byte;
 *   - a valid but incomplete sequence at the end of a chunk is held (at most
 *     3 bytes) until the next chunk completes or breaks it, or until
 *     utf8_finish() replaces it with one U+FFFD.
 *
 * Splitting the input differently never changes the output: feeding a
 * stream in any number of chunks then finishing gives the same bytes as one
 * utf8_decode() of the whole stream followed by utf8_finish().
 *
 * Runs of valid bytes are appended with one copy; ASCII is scanned 16 bytes
 * at a time, because this sits on the output read path.
 */
#ifndef REIN_BASE_UTF8_H
#define REIN_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* The longest UTF-8 sequence, and so the most a decoder ever holds + 1. */
#define UTF8_SEQ_MAX 4
/* U+FFFD REPLACEMENT CHARACTER, encoded. */
#define UTF8_REPLACEMENT "\xEF\xBF\xBD"
#define UTF8_REPLACEMENT_LEN 3

/* Decoder state: the held prefix of an incomplete sequence.  Plain data, no
 * allocation: copy it, embed it, drop it; no _free needed. */
typedef struct utf8_dec {
    unsigned char pend[UTF8_SEQ_MAX]; /* held bytes, a valid prefix */
    uint8_t npend;                    /* 0..3 */
} utf8_dec_t;

/* Sets d to the start-of-stream state. */
void utf8_init(utf8_dec_t *d);

/* Decodes n bytes of the stream (data may be NULL when n is 0), appending
 * valid UTF-8 to out.  A trailing incomplete sequence is held in d.
 * 0, or -ENOMEM (out may then hold part of this chunk's output and the
 * decoder state is unspecified: reinit before reuse). */
int utf8_decode(utf8_dec_t *d, const void *data, size_t n, buf_t *out);

/* Ends the stream: a held incomplete sequence becomes one U+FFFD.  d is then
 * back at the start-of-stream state.  0 or -ENOMEM. */
int utf8_finish(utf8_dec_t *d, buf_t *out);

/* True when the decoder holds an incomplete sequence. */
static inline int utf8_pending(const utf8_dec_t *d)
{
    return d->npend != 0;
}

/*
 * The read path's shortcut: when nothing is held and data is valid UTF-8
 * as it stands, *text points at data itself (no copy); otherwise the chunk
 * is decoded into scratch (reset first) and *text points there.  *len is
 * the text's length (0: nothing to hand on yet).  0 or -ENOMEM.
 */
int utf8_decode_view(utf8_dec_t *d, const void *data, size_t n,
                     buf_t *scratch, const char **text, size_t *len);

/* Where decoded text goes: a chunk of valid UTF-8 (rein_chunk_fn's shape). */
typedef void (*utf8_sink_fn)(const char *text, size_t len, void *data);

/* Decodes n bytes of the stream and hands what is ready to fn (when fn is
 * not NULL and there is any): the input itself when it is valid as it
 * stands, else the decoded text in scratch.  0 or -ENOMEM (what decoded is
 * still handed on). */
int utf8_forward(utf8_dec_t *d, const void *data, size_t n, buf_t *scratch,
                 utf8_sink_fn fn, void *fn_data);

/* Encodes code point cp as UTF-8 into out and returns the length (1..4);
 * a surrogate or a value past U+10FFFF becomes U+FFFD. */
size_t utf8_encode(uint32_t cp, char out[UTF8_SEQ_MAX]);

/* The length of the longest prefix of p[0..n) that is complete, valid UTF-8.
 * Equals n exactly when the whole of p is valid (no incomplete tail). */
size_t utf8_valid_prefix(const void *p, size_t n);

#endif
