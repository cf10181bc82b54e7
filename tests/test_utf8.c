/* test_utf8.c — the streaming lossy UTF-8 decoder: valid text, each class
 * of ill-formed input (maximal subparts), chunk splits, the held tail, the
 * ASCII fast path's edges; and agreement with a slow reference decoder. */
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "harness.h"

#define R UTF8_REPLACEMENT

/* Decodes in[0..n) in one chunk, finishes, compares with exp. */
static void check1(const void *in, size_t n, const char *exp, size_t elen)
{
    utf8_dec_t d;
    buf_t b = BUF_INIT;
    utf8_init(&d);
    ASSERT_OK(utf8_decode(&d, in, n, &b));
    ASSERT_OK(utf8_finish(&d, &b));
    ASSERT_FALSE(utf8_pending(&d));
    ASSERT_MEM(b.p, b.len, exp, elen);
    buf_free(&b);
}

#define CHECK(in, exp) check1(in, sizeof(in) - 1, exp, sizeof(exp) - 1)

/*
 * The reference: WHATWG's UTF-8 decoder written as its spec reads, byte by
 * byte with bounds and a code point, re-encoding what it decodes.  Built
 * differently from utf8.c on purpose.
 */
static void ref_emit(buf_t *b, uint32_t cp)
{
    unsigned char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        o[0] = (unsigned char)(0xF0 | cp >> 18);
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    ASSERT_OK(buf_append(b, o, n));
}

static void ref_decode(const unsigned char *p, size_t n, buf_t *out)
{
    uint32_t cp = 0;
    unsigned needed = 0, seen = 0, lower = 0x80, upper = 0xBF;
    size_t i = 0;
    while (i < n) {
        unsigned b = p[i];
        if (needed == 0) {
            i++;
            if (b <= 0x7F) {
                ref_emit(out, b);
            } else if (b >= 0xC2 && b <= 0xDF) {
                needed = 1;
                cp = b & 0x1F;
            } else if (b >= 0xE0 && b <= 0xEF) {
                if (b == 0xE0)
                    lower = 0xA0;
                if (b == 0xED)
                    upper = 0x9F;
                needed = 2;
                cp = b & 0xF;
            } else if (b >= 0xF0 && b <= 0xF4) {
                if (b == 0xF0)
                    lower = 0x90;
                if (b == 0xF4)
                    upper = 0x8F;
                needed = 3;
                cp = b & 0x7;
            } else {
                ref_emit(out, 0xFFFD);
            }
            continue;
        }
        if (b < lower || b > upper) {
            cp = needed = seen = 0;
            lower = 0x80;
            upper = 0xBF;
            ref_emit(out, 0xFFFD);
            continue; /* b is processed again */
        }
        i++;
        lower = 0x80;
        upper = 0xBF;
        cp = cp << 6 | (b & 0x3F);
        if (++seen == needed) {
            ref_emit(out, cp);
            cp = needed = seen = 0;
        }
    }
    if (needed)
        ref_emit(out, 0xFFFD);
}

TEST(utf8_valid_multibyte_unchanged)
{
    CHECK("", "");
    CHECK("hello", "hello");
    CHECK("\xc3\xa9", "\xc3\xa9");                 /* U+00E9 */
    CHECK("\xc2\x80\xdf\xbf", "\xc2\x80\xdf\xbf"); /* U+0080, U+07FF */
    CHECK("\xe0\xa0\x80\xef\xbf\xbf", "\xe0\xa0\x80\xef\xbf\xbf");
    CHECK("\xed\x9f\xbf\xee\x80\x80", "\xed\x9f\xbf\xee\x80\x80"); /* around surrogates */
    CHECK("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
    CHECK("a\xe2\x82\xac" "b\xf0\x9f\x98\x80" "c", "a\xe2\x82\xac" "b\xf0\x9f\x98\x80" "c");
    CHECK("\0x\0", "\0x\0"); /* NUL is valid UTF-8 */
}

TEST(utf8_bad_lead_bytes)
{
    CHECK("\x80", R);
    CHECK("\xbf", R);
    CHECK("a\x80\x80z", "a" R R "z");
    CHECK("\xc0", R);
    CHECK("\xc1\xbf", R R);
    CHECK("\xf5\x80\x80\x80", R R R R);
    CHECK("\xf8\x88\x80\x80\x80", R R R R R);
    CHECK("\xfe\xff", R R);
}

TEST(utf8_overlongs)
{
    CHECK("\xc0\xaf", R R);
    CHECK("\xc1\x81", R R);
    CHECK("\xe0\x80\xaf", R R R);
    CHECK("\xe0\x9f\xbf", R R R);
    CHECK("\xf0\x80\x80\xaf", R R R R);
    CHECK("\xf0\x8f\xbf\xbf", R R R R);
}

TEST(utf8_surrogates)
{
    CHECK("\xed\xa0\x80", R R R);
    CHECK("\xed\xbf\xbf", R R R);
    CHECK("\xed\xa0\xbd\xed\xb8\x80", R R R R R R); /* CESU-8 pair */
}

TEST(utf8_above_max)
{
    CHECK("\xf4\x90\x80\x80", R R R R);
    CHECK("\xf7\xbf\xbf\xbf", R R R R);
}

TEST(utf8_truncated_sequences_one_replacement)
{
    CHECK("\xe2\x82" "A", R "A");
    CHECK("\xf0\x9f\x98" "A", R "A");
    CHECK("\xf0\x9f" "A", R "A");
    CHECK("\xc3" "A", R "A");
    CHECK("\xe2\x82\xe2\x82\xac", R "\xe2\x82\xac");
    CHECK("\xf0\x9f\x98\xc3\xa9", R "\xc3\xa9");
    /* Unicode 15, section 3.9, table 3-8's example. */
    CHECK("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64",
          "a" R R R "b" R "c" R R "d");
}

TEST(utf8_incomplete_tail_at_finish)
{
    CHECK("ab\xf0\x9f\x98", "ab" R);
    CHECK("\xe2\x82", R);
    CHECK("\xc3", R);
    /* Held, not emitted, until finish. */
    utf8_dec_t d;
    buf_t b = BUF_INIT;
    utf8_init(&d);
    ASSERT_OK(utf8_decode(&d, "x\xf0\x9f", 3, &b));
    ASSERT_MEM(b.p, b.len, "x", 1);
    ASSERT_TRUE(utf8_pending(&d));
    ASSERT_OK(utf8_finish(&d, &b));
    ASSERT_MEM(b.p, b.len, "x" R, 4);
    ASSERT_FALSE(utf8_pending(&d));
    /* Finish with nothing held adds nothing, and the decoder is reusable. */
    ASSERT_OK(utf8_finish(&d, &b));
    ASSERT_OK(utf8_decode(&d, "\xc3\xa9", 2, &b));
    ASSERT_MEM(b.p, b.len, "x" R "\xc3\xa9", 6);
    buf_free(&b);
}

TEST(utf8_four_byte_split_two_chunks)
{
    static const unsigned char ch[] = "\xf0\x9f\x98\x80";
    for (size_t cut = 0; cut <= 4; cut++) {
        utf8_dec_t d;
        buf_t b = BUF_INIT;
        utf8_init(&d);
        ASSERT_OK(utf8_decode(&d, ch, cut, &b));
        ASSERT_EQ(b.len, cut == 4 ? 4 : 0); /* nothing half-emitted */
        ASSERT_OK(utf8_decode(&d, ch + cut, 4 - cut, &b));
        ASSERT_FALSE(utf8_pending(&d));
        ASSERT_OK(utf8_finish(&d, &b));
        ASSERT_MEM(b.p, b.len, ch, 4);
        buf_free(&b);
    }
}

TEST(utf8_four_byte_single_byte_chunks)
{
    static const unsigned char s[] = "a\xf0\x9f\x98\x80" "b";
    utf8_dec_t d;
    buf_t b = BUF_INIT;
    utf8_init(&d);
    for (size_t i = 0; i < sizeof s - 1; i++) {
        ASSERT_OK(utf8_decode(&d, s + i, 1, &b));
        size_t exp = i == 0 ? 1 : i < 4 ? 1 : i == 4 ? 5 : 6;
        ASSERT_EQ(b.len, exp);
    }
    ASSERT_OK(utf8_finish(&d, &b));
    ASSERT_MEM(b.p, b.len, s, sizeof s - 1);
    buf_free(&b);
}

TEST(utf8_broken_sequence_across_chunks)
{
    utf8_dec_t d;
    buf_t b = BUF_INIT;
    utf8_init(&d);
    /* A held prefix broken by the next chunk's first byte: one U+FFFD, and
     * that byte is decoded on its own. */
    ASSERT_OK(utf8_decode(&d, "\xf0\x9f", 2, &b));
    ASSERT_OK(utf8_decode(&d, "\x98", 1, &b));
    ASSERT_OK(utf8_decode(&d, "A\xe2", 2, &b));
    ASSERT_MEM(b.p, b.len, R "A", 4);
    /* A held E2 broken by a lead byte: one U+FFFD, then the new char. */
    ASSERT_OK(utf8_decode(&d, "\xc3\xa9", 2, &b));
    ASSERT_MEM(b.p, b.len, R "A" R "\xc3\xa9", 9);
    /* A held E0 refused by a second byte that would be an overlong. */
    buf_reset(&b);
    ASSERT_OK(utf8_decode(&d, "\xe0", 1, &b));
    ASSERT_OK(utf8_decode(&d, "\x80" "z", 2, &b));
    ASSERT_MEM(b.p, b.len, R R "z", 7);
    buf_free(&b);
}

TEST(utf8_ascii_fast_path_edges)
{
    /* A multi-byte char, an invalid byte and a truncated char at every
     * offset of ASCII runs around the 16-byte stride. */
    static const struct { const char *ins, *exp; } v[] = {
        {"\xc3\xa9", "\xc3\xa9"},
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
        {"\xff", R},
        {"\xe2\x82", R},
    };
    char in[80], exp[96];
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        size_t il = strlen(v[k].ins), el = strlen(v[k].exp);
        for (size_t len = 0; len <= 40; len++) {
            for (size_t at = 0; at <= len; at++) {
                memset(in, 'a' + (int)(at % 26), len);
                memmove(in + at + il, in + at, len - at);
                memcpy(in + at, v[k].ins, il);
                memset(exp, 'a' + (int)(at % 26), len);
                memmove(exp + at + el, exp + at, len - at);
                memcpy(exp + at, v[k].exp, el);
                check1(in, len + il, exp, len + el);
                size_t vp = utf8_valid_prefix(in, len + il);
                ASSERT_EQ(vp, k < 2 ? len + il : at);
            }
        }
    }
}

TEST(utf8_valid_prefix)
{
    ASSERT_EQ(utf8_valid_prefix("", 0), 0);
    ASSERT_EQ(utf8_valid_prefix("abc", 3), 3);
    ASSERT_EQ(utf8_valid_prefix("ab\xc3", 3), 2);
    ASSERT_EQ(utf8_valid_prefix("ab\xc3\xa9", 4), 4);
    ASSERT_EQ(utf8_valid_prefix("0123456789abcdef0123\x80", 21), 20);
    ASSERT_EQ(utf8_valid_prefix("\xed\xa0\x80", 3), 0);
    ASSERT_EQ(utf8_valid_prefix("\xf4\x8f\xbf\xbf\xf4\x90", 6), 4);
}

/* Interesting bytes for the random tests: leads of every kind, boundary
 * continuation bytes, ASCII. */
static const unsigned char g_pool[] = {
    'a', 'z', 0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1,
    0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4,
    0xf5, 0xff,
};

TEST(utf8_matches_reference_any_split)
{
    unsigned seed = 42;
    unsigned char in[24] = {0};
    for (int iter = 0; iter < 20000; iter++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 16) % sizeof in;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = g_pool[(seed >> 16) % sizeof g_pool];
        }
        buf_t ref = BUF_INIT, one = BUF_INIT;
        ref_decode(in, n, &ref);
        check1(in, n, ref.p ? ref.p : "", ref.len);
        ASSERT_EQ(utf8_valid_prefix(ref.p ? ref.p : "", ref.len), ref.len);
        /* Every two-way split, then single bytes. */
        for (size_t cut = 0; cut <= n; cut++) {
            utf8_dec_t d;
            utf8_init(&d);
            buf_reset(&one);
            ASSERT_OK(utf8_decode(&d, in, cut, &one));
            ASSERT_OK(utf8_decode(&d, in + cut, n - cut, &one));
            ASSERT_OK(utf8_finish(&d, &one));
            ASSERT_MEM(one.p, one.len, ref.p, ref.len);
        }
        utf8_dec_t d;
        utf8_init(&d);
        buf_reset(&one);
        for (size_t i = 0; i < n; i++)
            ASSERT_OK(utf8_decode(&d, in + i, 1, &one));
        ASSERT_OK(utf8_finish(&d, &one));
        ASSERT_MEM(one.p, one.len, ref.p, ref.len);
        buf_free(&ref);
        buf_free(&one);
    }
}

TEST(utf8_long_ascii_then_bad)
{
    size_t n = 1 << 20;
    char *in = malloc(n);
    ASSERT_TRUE(in != NULL);
    memset(in, 'x', n);
    in[n - 1] = (char)0xC3; /* held at the end of a big chunk */
    utf8_dec_t d;
    buf_t b = BUF_INIT;
    utf8_init(&d);
    ASSERT_OK(utf8_decode(&d, in, n, &b));
    ASSERT_EQ(b.len, n - 1);
    ASSERT_OK(utf8_decode(&d, "\xa9", 1, &b));
    ASSERT_EQ(b.len, n + 1);
    ASSERT_MEM(b.p + n - 1, 2, "\xc3\xa9", 2);
    buf_free(&b);
    free(in);
}

TEST(utf8_decode_view_no_copy_when_valid)
{
    utf8_dec_t d;
    buf_t scratch = BUF_INIT;
    const char *text;
    size_t len;
    static const char ok[] = "plain \xE2\x82\xAC text";
    utf8_init(&d);
    ASSERT_OK(utf8_decode_view(&d, ok, sizeof ok - 1, &scratch, &text, &len));
    ASSERT_TRUE(text == ok); /* the input itself, not a copy */
    ASSERT_EQ(len, sizeof ok - 1);
    /* A split character: held, then completed through the scratch buffer. */
    ASSERT_OK(utf8_decode_view(&d, "a\xE2\x82", 3, &scratch, &text, &len));
    ASSERT_MEM(text, len, "a", 1);
    ASSERT_OK(utf8_decode_view(&d, "\xAC!", 2, &scratch, &text, &len));
    ASSERT_TRUE(text != NULL);
    ASSERT_MEM(text, len, "\xE2\x82\xAC!", 4);
    ASSERT_OK(utf8_decode_view(&d, "\xFF", 1, &scratch, &text, &len));
    ASSERT_MEM(text, len, UTF8_REPLACEMENT, UTF8_REPLACEMENT_LEN);
    buf_free(&scratch);
}

/* The encoder at each length's edges; what has no encoding is U+FFFD. */
TEST(utf8_encode_edges)
{
    static const struct {
        uint32_t cp;
        const char *want;
    } v[] = {
        {0x00, "\0"}, {0x7F, "\x7F"}, {0x80, "\xC2\x80"},
        {0x7FF, "\xDF\xBF"}, {0x800, "\xE0\xA0\x80"},
        {0xD7FF, "\xED\x9F\xBF"}, {0xD800, R}, {0xDFFF, R},
        {0xE000, "\xEE\x80\x80"}, {0xFFFF, "\xEF\xBF\xBF"},
        {0x10000, "\xF0\x90\x80\x80"}, {0x10FFFF, "\xF4\x8F\xBF\xBF"},
        {0x110000, R}, {0xFFFFFFFF, R},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char u[UTF8_SEQ_MAX];
        size_t n = utf8_encode(v[i].cp, u);
        size_t want = v[i].cp ? strlen(v[i].want) : 1;
        ASSERT_MEM(u, n, v[i].want, want);
        ASSERT_EQ(utf8_valid_prefix(u, n), n);
    }
}
