/* test_escape.c — rein_unescape: the escape table, what is kept literally,
 * surrogate pairs, raw bytes. */
#include <errno.h>
#include <stdlib.h>

#include "harness.h"

/* Unescapes the C string in and checks the result against exp[0..n). */
static void check(const char *in, const char *exp, size_t n)
{
    char *out = NULL;
    size_t len = 99;
    ASSERT_OK(rein_unescape(in, strlen(in), &out, &len));
    ASSERT_TRUE(out != NULL);
    ASSERT_MEM(out, len, exp, n);
    ASSERT_EQ(out[len], 0);
    rein_free(out);
}

#define CHECK(in, exp) check(in, exp, sizeof(exp) - 1)

TEST(escape_simple_table)
{
    CHECK("\\n", "\n");
    CHECK("\\r", "\r");
    CHECK("\\t", "\t");
    CHECK("\\b", "\b");
    CHECK("\\f", "\f");
    CHECK("\\v", "\v");
    CHECK("\\0", "\0");
    CHECK("\\a", "\x07");
    CHECK("\\e", "\x1b");
    CHECK("\\\\", "\\");
    CHECK("\\\"", "\"");
    CHECK("\\'", "'");
    CHECK("a\\tb\\nc", "a\tb\nc");
}

TEST(escape_zero_is_not_octal)
{
    CHECK("\\012", "\0" "12");
}

TEST(escape_hex_x)
{
    CHECK("\\x03", "\x03");
    CHECK("\\x04", "\x04");
    CHECK("\\x1B", "\x1b");
    CHECK("\\xff", "\xff"); /* a raw byte, not U+00FF */
    CHECK("\\x00z", "\0z");
    CHECK("\\x1b3", "\x1b" "3"); /* exactly two digits */
}

TEST(escape_seed_examples)
{
    CHECK("\\x1b:wq\\n", "\x1b:wq\n");
    CHECK("\\x1b[A", "\x1b[A");
    CHECK("password\\n", "password\n");
    CHECK("C:\\\\temp", "C:\\temp");
}

TEST(escape_malformed_x_kept)
{
    CHECK("\\x", "\\x");
    CHECK("\\x1", "\\x1");
    CHECK("\\xZ1", "\\xZ1");
    CHECK("\\x1G", "\\x1G");
    CHECK("\\x\\n", "\\x\n"); /* what follows is still decoded */
}

TEST(escape_u4)
{
    CHECK("\\u0041", "A");
    CHECK("\\u00e9", "\xc3\xa9");
    CHECK("\\u20AC", "\xe2\x82\xac");
    CHECK("\\uFFFF", "\xef\xbf\xbf");
    CHECK("\\u00411", "A1"); /* exactly four digits */
    CHECK("\\u0000", "\0");
}

TEST(escape_u_brace)
{
    CHECK("\\u{41}", "A");
    CHECK("\\u{1F600}", "\xf0\x9f\x98\x80");
    CHECK("\\u{10FFFF}", "\xf4\x8f\xbf\xbf");
    CHECK("\\u{0000e9}", "\xc3\xa9");
    CHECK("\\u{7ff}", "\xdf\xbf");
    CHECK("\\u{800}", "\xe0\xa0\x80");
}

TEST(escape_malformed_u_kept)
{
    CHECK("\\u", "\\u");
    CHECK("\\u12", "\\u12");
    CHECK("\\u12G4", "\\u12G4");
    CHECK("\\u{}", "\\u{}");
    CHECK("\\u{41", "\\u{41");
    CHECK("\\u{1234567}", "\\u{1234567}"); /* seven digits */
    CHECK("\\u{110000}", "\\u{110000}");   /* beyond Unicode */
    CHECK("\\u{4G}", "\\u{4G}");
}

TEST(escape_surrogates)
{
    CHECK("\\uD83D\\uDE00", "\xf0\x9f\x98\x80"); /* a pair combines */
    CHECK("\\ud83d\\ude00!", "\xf0\x9f\x98\x80!");
    CHECK("\\uD83D", "\\uD83D");               /* lone high */
    CHECK("\\uDE00", "\\uDE00");               /* lone low */
    CHECK("\\uD83Dx", "\\uD83Dx");
    CHECK("\\uD83D\\u0041", "\\uD83DA");       /* high then not-low */
    CHECK("\\uD83D\\uD83D", "\\uD83D\\uD83D"); /* two highs */
    CHECK("\\uDE00\\uD83D", "\\uDE00\\uD83D"); /* wrong order */
    CHECK("\\u{D800}", "\\u{D800}");           /* no pairing in braces */
}

TEST(escape_unknown_kept_both_chars)
{
    CHECK("\\q", "\\q");
    CHECK("\\d+", "\\d+");
    CHECK("\\1", "\\1");
    CHECK("\\ ", "\\ ");
    CHECK("\\\xc3\xa9", "\\\xc3\xa9");
}

TEST(escape_trailing_backslash_kept)
{
    CHECK("\\", "\\");
    CHECK("abc\\", "abc\\");
    CHECK("\\\\\\", "\\\\");
}

TEST(escape_raw_bytes_pass_through)
{
    CHECK("", "");
    CHECK("plain text", "plain text");
    CHECK("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");
    CHECK("\xff\xfe\x80", "\xff\xfe\x80"); /* not UTF-8: still untouched */
    CHECK("\x1b[A\x03", "\x1b[A\x03");
}

TEST(escape_nul_inside_len_passes)
{
    static const char in[] = "a\0b\\n\0";
    char *out = NULL;
    size_t len = 0;
    ASSERT_OK(rein_unescape(in, sizeof in - 1, &out, &len));
    ASSERT_MEM(out, len, "a\0b\n\0", 5);
    ASSERT_EQ(out[len], 0);
    rein_free(out);
}

TEST(escape_len_bounds_input)
{
    /* The escape straddles len: only "\\" is inside, kept as a lone one. */
    char *out = NULL;
    size_t len = 0;
    ASSERT_OK(rein_unescape("x\\n", 2, &out, &len));
    ASSERT_MEM(out, len, "x\\", 2);
    rein_free(out);
    /* \x with its digits cut off by len is malformed. */
    ASSERT_OK(rein_unescape("\\x41", 3, &out, &len));
    ASSERT_MEM(out, len, "\\x4", 3);
    rein_free(out);
}

TEST(escape_empty_null_input)
{
    char *out = NULL;
    size_t len = 7;
    ASSERT_OK(rein_unescape(NULL, 0, &out, &len));
    ASSERT_EQ(len, 0);
    ASSERT_TRUE(out && out[0] == 0);
    rein_free(out);
    ASSERT_EQ(rein_unescape(NULL, 3, &out, &len), -EINVAL);
    ASSERT_EQ(rein_unescape("a", 1, NULL, &len), -EINVAL);
}

TEST(escape_long_mixed)
{
    /* Every escape together, back to back, in a long string. */
    const char *unit = "\\n\\r\\t\\b\\f\\v\\0\\a\\e\\x41\\u0042\\u{43}\\\\\\\"\\'\\q";
    static const char exp_unit[] = "\n\r\t\b\f\v\0\a\x1b" "ABC\\\"'\\q";
    size_t reps = 1000, ulen = strlen(unit), elen = sizeof exp_unit - 1;
    char *in = malloc(ulen * reps + 1), *exp = malloc(elen * reps);
    ASSERT_TRUE(in && exp);
    for (size_t i = 0; i < reps; i++) {
        memcpy(in + i * ulen, unit, ulen);
        memcpy(exp + i * elen, exp_unit, elen);
    }
    char *out = NULL;
    size_t len = 0;
    ASSERT_OK(rein_unescape(in, ulen * reps, &out, &len));
    ASSERT_MEM(out, len, exp, elen * reps);
    rein_free(out);
    free(in);
    free(exp);
}
