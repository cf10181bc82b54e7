/* test_b64.c — rein_base64_decode (what is accepted, what is REIN_EBASE64)
 * and the internal b64_encode. */
#include <errno.h>
#include <stdlib.h>

#include "base/b64.h"
#include "harness.h"

static void check_ok(const char *in, const void *exp, size_t n)
{
    unsigned char *out = NULL;
    size_t len = 99;
    ASSERT_OK(rein_base64_decode(in, strlen(in), &out, &len));
    ASSERT_TRUE(out != NULL);
    ASSERT_MEM(out, len, exp, n);
    ASSERT_EQ(out[len], 0);
    rein_free(out);
}

static void check_bad(const char *in)
{
    unsigned char *out = (unsigned char *)"untouched";
    size_t len = 99;
    int rc = rein_base64_decode(in, strlen(in), &out, &len);
    if (rc != REIN_EBASE64)
        test_fail(__FILE__, __LINE__, "\"%s\": rc %d, want REIN_EBASE64", in, rc);
    ASSERT_STR((const char *)out, "untouched");
    ASSERT_EQ(len, 99);
}

#define OK(in, exp) check_ok(in, exp, sizeof(exp) - 1)

TEST(b64_seed_example)
{
    OK("G3s6wgo=", "\x1b\x7b\x3a\xc2\x0a");
    OK("G3s6wgo", "\x1b\x7b\x3a\xc2\x0a");
}

TEST(b64_rfc4648_vectors)
{
    OK("", "");
    OK("Zg==", "f");
    OK("Zm8=", "fo");
    OK("Zm9v", "foo");
    OK("Zm9vYg==", "foob");
    OK("Zm9vYmE=", "fooba");
    OK("Zm9vYmFy", "foobar");
}

TEST(b64_padding_optional)
{
    OK("Zg", "f");
    OK("Zm8", "fo");
    OK("Zm9vYg", "foob");
}

TEST(b64_whitespace_ignored)
{
    OK(" Zm9v\nYmFy\r\n", "foobar");
    OK("Z g = =", "f");
    OK("\t\v\fZm8=\n", "fo");
    OK("   \n", "");
    OK("Zg==\n\n", "f");
}

TEST(b64_binary_all_bytes)
{
    OK("AP8=", "\x00\xff");
    OK("+/+/", "\xfb\xff\xbf");
    OK("AAAA", "\0\0\0");
}

TEST(b64_bad_char)
{
    check_bad("Zm9v!");
    check_bad("Zm 9v.");
    check_bad("Zm9v\x80");
}

TEST(b64_nul_inside_len_rejected)
{
    unsigned char *out = NULL;
    size_t len = 0;
    ASSERT_EQ(rein_base64_decode("Zm\0v", 4, &out, &len), REIN_EBASE64);
}

TEST(b64_url_safe_rejected)
{
    check_bad("-_8=");
    check_bad("Zm9v-w");
    check_bad("Zm9v_w");
}

TEST(b64_bad_length)
{
    check_bad("Z");
    check_bad("Zm9vY");
    check_bad("Zm9vY=");
    check_bad("Zm9vYmFyZ");
}

TEST(b64_bad_padding)
{
    check_bad("=");
    check_bad("==");
    check_bad("Z=");     /* pad after one sextet */
    check_bad("Zg=");    /* incomplete padding */
    check_bad("Zg===");  /* too much */
    check_bad("Zm8==");  /* too much */
    check_bad("Zm9v=");  /* pad after a full quantum */
    check_bad("=Zm9v");
    check_bad("Zm9v====");
}

TEST(b64_data_after_padding)
{
    check_bad("Zg==Zg==");
    check_bad("Zm8=A");
    check_bad("Zg==\nZ");
    check_bad("Zg=A=");
    check_bad("Zg=A");      /* pad + data adds up to a quantum: still bad */
    check_bad("Zm9vYg=A");
}

TEST(b64_nonzero_trailing_bits)
{
    check_bad("Zh==");  /* 'h' leaves bits set below the byte */
    check_bad("Zh");
    check_bad("Zm9=");
    check_bad("Zm9");
    OK("Zm8", "fo");
}

TEST(b64_bad_args)
{
    unsigned char *out = NULL;
    size_t len = 0;
    ASSERT_EQ(rein_base64_decode(NULL, 4, &out, &len), -EINVAL);
    ASSERT_EQ(rein_base64_decode("Zg==", 4, NULL, &len), -EINVAL);
    ASSERT_OK(rein_base64_decode(NULL, 0, &out, &len));
    ASSERT_EQ(len, 0);
    rein_free(out);
}

TEST(b64_encode_vectors)
{
    static const struct { const char *in, *exp; } v[] = {
        {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
        {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        buf_t b = BUF_INIT;
        ASSERT_OK(buf_append_str(&b, ">"));
        ASSERT_OK(b64_encode(v[i].in, strlen(v[i].in), &b));
        ASSERT_STR(b.p + 1, v[i].exp); /* appends, after what was there */
        ASSERT_EQ(b.len, 1 + b64_encoded_len(strlen(v[i].in)));
        buf_free(&b);
    }
    ASSERT_EQ(b64_encoded_len(0), 0);
    ASSERT_EQ(b64_encoded_len(1), 4);
    ASSERT_EQ(b64_encoded_len(3), 4);
    ASSERT_EQ(b64_encoded_len(4), 8);
    ASSERT_EQ(b64_encoded_len(SIZE_MAX), 0); /* overflow */
}

TEST(b64_roundtrip_random)
{
    unsigned seed = 12345;
    unsigned char data[300];
    for (size_t n = 0; n < sizeof data; n++) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            data[i] = (unsigned char)(seed >> 16);
        }
        buf_t b = BUF_INIT;
        ASSERT_OK(b64_encode(data, n, &b));
        unsigned char *out = NULL;
        size_t len = 0;
        ASSERT_OK(rein_base64_decode(b.p ? b.p : "", b.len, &out, &len));
        ASSERT_MEM(out, len, data, n);
        rein_free(out);
        /* And without padding. */
        while (b.len && b.p[b.len - 1] == '=')
            b.len--;
        ASSERT_OK(rein_base64_decode(b.p ? b.p : "", b.len, &out, &len));
        ASSERT_MEM(out, len, data, n);
        rein_free(out);
        buf_free(&b);
    }
}
