/*
 * escape.c — C-style escape decoding for write_stdin's `chars`.
 *
 * The wire format (JSON inside a tool call) cannot carry control bytes in a
 * way models reliably produce, so `chars` is decoded as a C-style escape
 * string first: "\x03" is Ctrl-C, "\x1b[A" is up-arrow.  The rules aim to
 * never surprise a model that wrote something else:
 *
 *   \n \r \t \b \f \v   LF CR TAB BS FF VT
 *   \0                  NUL (only that: no octal, "\012" is NUL "12")
 *   \a \e               BEL (07), ESC (1B)
 *   \xHH                exactly 2 hex digits: that byte, raw (\xff is the
 *                       byte FF, not U+00FF; "\x1b3" is ESC "3")
 *   \uHHHH              exactly 4 hex digits: the code point, as UTF-8
 *   \u{H...}            1-6 hex digits, <= 10FFFF: the code point, as UTF-8
 *   \\ \" \'            the character itself
 *
 * Surrogates: a high \uHHHH (D800-DBFF) immediately followed by a low
 * \uHHHH (DC00-DFFF) is one UTF-16 pair ("\uD83D\uDE00" is U+1F600), since
 * that is how JSON-minded writers spell astral characters.  Any other
 * surrogate (lone, unpaired, or in \u{...}) has no UTF-8 encoding, so its
 * escape is kept literally like any malformed one.
 *
 * Anything else keeps the backslash: an unknown escape ("\q", "\d") is kept
 * as both characters, a malformed \x or \u ("\xZ1", "\u12", "\u{}",
 * "\u{110000}") keeps "\x" / "\u" and the characters after it are read
 * normally, and a trailing lone backslash is kept.  Keeping rather than
 * rejecting means a model that did not mean an escape ("\d+" in a regex)
 * gets what it wrote; a Windows path still needs "C:\\temp", as "\t" is TAB.
 * Bytes that are not part of an escape, NUL and non-ASCII included, pass
 * through untouched.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "rein.h"

#define ESC_BYTE 0x1B
#define ESC_HEX_X_DIGITS 2       /* \xHH */
#define ESC_HEX_U_DIGITS 4       /* \uHHHH */
#define ESC_BRACE_MAX_DIGITS 6   /* \u{HHHHHH} */
#define ESC_CODEPOINT_MAX 0x10FFFFu
#define ESC_SURROGATE_HIGH_MIN 0xD800u
#define ESC_SURROGATE_LOW_MIN 0xDC00u
#define ESC_SURROGATE_MAX 0xDFFFu

static int esc_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads exactly ndig hex digits at p (avail bytes there) into *v.  False
 * when fewer are there or one is not hex. */
static bool esc_hex_exact(const unsigned char *p, size_t avail, size_t ndig,
                          uint32_t *v)
{
    if (avail < ndig)
        return false;
    uint32_t x = 0;
    for (size_t i = 0; i < ndig; i++) {
        int h = esc_hexval(p[i]);
        if (h < 0)
            return false;
        x = x << 4 | (uint32_t)h;
    }
    *v = x;
    return true;
}

static bool esc_is_surrogate(uint32_t cp)
{
    return cp >= ESC_SURROGATE_HIGH_MIN && cp <= ESC_SURROGATE_MAX;
}

/*
 * Parses the \u escape whose 'u' is at p[0] (avail bytes from there).  On
 * success sets *cp to a scalar value and returns how many bytes after the
 * backslash it spans; returns 0 when malformed (kept literally).
 */
static size_t esc_parse_u(const unsigned char *p, size_t avail, uint32_t *cp)
{
    uint32_t v;
    if (avail >= 2 && p[1] == '{') {
        size_t i = 2;
        v = 0;
        while (i < avail && i - 2 < ESC_BRACE_MAX_DIGITS && esc_hexval(p[i]) >= 0)
            v = v << 4 | (uint32_t)esc_hexval(p[i++]);
        if (i == 2 || i >= avail || p[i] != '}')
            return 0; /* no digits, too many, or unterminated */
        if (v > ESC_CODEPOINT_MAX || esc_is_surrogate(v))
            return 0;
        *cp = v;
        return i + 1;
    }
    if (!esc_hex_exact(p + 1, avail - 1, ESC_HEX_U_DIGITS, &v))
        return 0;
    size_t used = 1 + ESC_HEX_U_DIGITS;
    if (!esc_is_surrogate(v)) {
        *cp = v;
        return used;
    }
    /* A high surrogate may pair with a directly following \uHHHH low one. */
    const unsigned char *q = p + used;
    size_t left = avail - used;
    uint32_t lo;
    if (v < ESC_SURROGATE_LOW_MIN && left >= 2 && q[0] == '\\' && q[1] == 'u' &&
        esc_hex_exact(q + 2, left - 2, ESC_HEX_U_DIGITS, &lo) &&
        lo >= ESC_SURROGATE_LOW_MIN && lo <= ESC_SURROGATE_MAX) {
        *cp = 0x10000u + ((v - ESC_SURROGATE_HIGH_MIN) << 10) +
              (lo - ESC_SURROGATE_LOW_MIN);
        return used + 2 + ESC_HEX_U_DIGITS;
    }
    return 0;
}

/* The byte a one-character escape stands for, or -1 when c is not one. */
static int esc_simple(unsigned char c)
{
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0': return 0;
    case 'a': return '\a';
    case 'e': return ESC_BYTE;
    case '\\': return '\\';
    case '"': return '"';
    case '\'': return '\'';
    default: return -1;
    }
}

int rein_unescape(const char *in, size_t len, char **out, size_t *out_len)
{
    if (!out || !out_len || (!in && len))
        return -EINVAL;
    const unsigned char *p = (const unsigned char *)in;
    buf_t b = BUF_INIT;
    /* Escapes never grow the input except \uHHHH pairs (12 -> 4) and
     * \u{H} (4 -> up to 3): len is a fine first guess. */
    int rc = buf_reserve(&b, len);
    if (rc < 0)
        goto fail;
    size_t i = 0;
    while (i < len) {
        /* Copy the run up to the next backslash in one go. */
        size_t j = i;
        while (j < len && p[j] != '\\')
            j++;
        if (j > i && (rc = buf_append(&b, p + i, j - i)) < 0)
            goto fail;
        i = j;
        if (i == len)
            break;
        if (i + 1 == len) { /* trailing lone backslash */
            rc = buf_append_byte(&b, '\\');
            if (rc < 0)
                goto fail;
            break;
        }
        unsigned char c = p[i + 1];
        int s = esc_simple(c);
        uint32_t v;
        if (s >= 0) {
            rc = buf_append_byte(&b, (unsigned char)s);
            i += 2;
        } else if (c == 'x' &&
                   esc_hex_exact(p + i + 2, len - i - 2, ESC_HEX_X_DIGITS, &v)) {
            rc = buf_append_byte(&b, (unsigned char)v);
            i += 2 + ESC_HEX_X_DIGITS;
        } else if (c == 'u') {
            size_t used = esc_parse_u(p + i + 1, len - i - 1, &v);
            if (used) {
                char u[UTF8_SEQ_MAX];
                rc = buf_append(&b, u, utf8_encode(v, u));
                i += 1 + used;
            } else {
                rc = buf_append(&b, p + i, 2);
                i += 2;
            }
        } else {
            /* Unknown or malformed: keep both characters.  The next char
             * cannot start an escape (it is not a backslash: "\\" matched
             * above), so skipping it is safe. */
            rc = buf_append(&b, p + i, 2);
            i += 2;
        }
        if (rc < 0)
            goto fail;
    }
    size_t n = b.len;
    char *s = buf_detach(&b);
    if (!s) {
        rc = -ENOMEM;
        goto fail;
    }
    *out = s;
    *out_len = n;
    return 0;
fail:
    buf_free(&b);
    return rc;
}
