/* test_headtail.c — the head+tail buffer: Codex's goldens, the marker and
 * its byte range, drains, the raw bytes with their split, and a model
 * check against a plain copy. */
#include <stdlib.h>

#include "base/headtail.h"
#include "harness.h"

static headtail_t *mk(size_t cap)
{
    headtail_t *ht = NULL;
    ASSERT_OK(headtail_new(cap, &ht));
    ASSERT_TRUE(ht != NULL);
    return ht;
}

static void push(headtail_t *ht, const char *s)
{
    ASSERT_OK(headtail_push(ht, s, strlen(s)));
}

static void check_render(const headtail_t *ht, const char *exp)
{
    buf_t b = BUF_INIT;
    ASSERT_OK(headtail_render(ht, &b));
    ASSERT_MEM(b.p ? b.p : "", b.len, exp, strlen(exp));
    buf_free(&b);
}

TEST(headtail_keeps_head_and_tail_golden)
{
    headtail_t *ht = mk(10);
    push(ht, "0123456789");
    ASSERT_EQ(headtail_omitted(ht), 0);
    check_render(ht, "0123456789");
    push(ht, "ab");
    ASSERT_EQ(headtail_omitted(ht), 2);
    ASSERT_EQ(headtail_retained(ht), 10);
    ASSERT_EQ(headtail_total(ht), 12);
    check_render(ht, "01234\n[... 2 bytes omitted (bytes 5-7) ...]\n789ab");
    headtail_free(ht);
}

TEST(headtail_cap_zero_drops_everything)
{
    headtail_t *ht = mk(0);
    push(ht, "abc");
    push(ht, "de");
    ASSERT_EQ(headtail_retained(ht), 0);
    ASSERT_EQ(headtail_omitted(ht), 5);
    ASSERT_EQ(headtail_total(ht), 5);
    check_render(ht, "\n[... 5 bytes omitted (bytes 0-5) ...]\n");
    headtail_free(ht);
}

TEST(headtail_cap_one_keeps_last_byte)
{
    headtail_t *ht = mk(1); /* head budget 0, tail budget 1 */
    push(ht, "abc");
    ASSERT_EQ(headtail_retained(ht), 1);
    ASSERT_EQ(headtail_omitted(ht), 2);
    check_render(ht, "\n[... 2 bytes omitted (bytes 0-2) ...]\nc");
    headtail_free(ht);
}

TEST(headtail_chunk_larger_than_tail)
{
    headtail_t *ht = mk(10);
    push(ht, "0123456789");
    push(ht, "ABCDEFGHIJK");
    ASSERT_EQ(headtail_omitted(ht), 11);
    check_render(ht, "01234\n[... 11 bytes omitted (bytes 5-16) ...]\nGHIJK");
    /* One chunk into an empty buffer: head, then the chunk's last bytes. */
    headtail_t *h2 = mk(10);
    push(h2, "abcdefghijklmnopqrstuvwxyz");
    check_render(h2, "abcde\n[... 16 bytes omitted (bytes 5-21) ...]\nvwxyz");
    /* Exactly the tail budget after the head is filled. */
    headtail_t *h3 = mk(10);
    push(h3, "01234xxx");
    push(h3, "56789");
    check_render(h3, "01234\n[... 3 bytes omitted (bytes 5-8) ...]\n56789");
    headtail_free(ht);
    headtail_free(h2);
    headtail_free(h3);
}

TEST(headtail_fills_head_then_tail)
{
    headtail_t *ht = mk(10);
    push(ht, "01");
    push(ht, "234");
    check_render(ht, "01234");
    push(ht, "567");
    push(ht, "89");
    check_render(ht, "0123456789"); /* exact fill: no marker */
    ASSERT_EQ(headtail_omitted(ht), 0);
    push(ht, "a");
    ASSERT_EQ(headtail_omitted(ht), 1);
    check_render(ht, "01234\n[... 1 bytes omitted (bytes 5-6) ...]\n6789a");
    headtail_free(ht);
}

TEST(headtail_many_small_pushes)
{
    headtail_t *ht = mk(10);
    const char *s = "0123456789ab";
    for (const char *p = s; *p; p++) {
        ASSERT_OK(headtail_push(ht, NULL, 0)); /* empty pushes are no-ops */
        ASSERT_OK(headtail_push(ht, p, 1));
    }
    ASSERT_EQ(headtail_retained(ht), 10);
    ASSERT_EQ(headtail_omitted(ht), 2);
    check_render(ht, "01234\n[... 2 bytes omitted (bytes 5-7) ...]\n789ab");
    headtail_free(ht);
}

TEST(headtail_odd_cap_split)
{
    headtail_t *ht = mk(7); /* head 3, tail 4 */
    push(ht, "abcdefghij");
    check_render(ht, "abc\n[... 3 bytes omitted (bytes 3-6) ...]\nghij");
    headtail_free(ht);
}

TEST(headtail_drain_resets_and_offsets_continue)
{
    headtail_t *ht = mk(10);
    push(ht, "0123456789");
    push(ht, "ab");
    buf_t b = BUF_INIT;
    ASSERT_OK(headtail_drain(ht, &b));
    ASSERT_STR(b.p, "01234\n[... 2 bytes omitted (bytes 5-7) ...]\n789ab");
    ASSERT_EQ(headtail_retained(ht), 0);
    ASSERT_EQ(headtail_omitted(ht), 0);
    ASSERT_EQ(headtail_total(ht), 12);
    ASSERT_EQ(headtail_start(ht), 12);
    check_render(ht, "");
    /* A new head starts; offsets are stream offsets (12 pushed before). */
    push(ht, "ABCDEFGHIJKL");
    check_render(ht, "ABCDE\n[... 2 bytes omitted (bytes 17-19) ...]\nHIJKL");
    buf_reset(&b);
    ASSERT_OK(headtail_drain(ht, &b));
    ASSERT_OK(headtail_drain(ht, &b)); /* draining empty adds nothing */
    ASSERT_STR(b.p, "ABCDE\n[... 2 bytes omitted (bytes 17-19) ...]\nHIJKL");
    buf_free(&b);
    headtail_free(ht);
}

/* The bytes alone, for a caller that marks the omitted range itself:
 * head then tail, the split given; clear then starts a new window. */
TEST(headtail_render_raw_gives_the_split_and_clear_empties)
{
    headtail_t *ht = mk(10);
    push(ht, "0123456789ab");
    buf_t b = BUF_INIT;
    size_t head = 99;
    ASSERT_OK(headtail_render_raw(ht, &b, &head));
    ASSERT_STR(b.p, "01234789ab");
    ASSERT_EQ(head, 5);
    ASSERT_EQ(headtail_omitted(ht), 2); /* unchanged */
    headtail_clear(ht);
    ASSERT_EQ(headtail_retained(ht), 0);
    ASSERT_EQ(headtail_omitted(ht), 0);
    ASSERT_EQ(headtail_start(ht), 12);
    push(ht, "xyz");
    buf_reset(&b);
    ASSERT_OK(headtail_render_raw(ht, &b, NULL));
    ASSERT_STR(b.p, "xyz");
    buf_free(&b);
    headtail_free(ht);
}

TEST(headtail_free_null)
{
    headtail_free(NULL);
}

TEST(headtail_does_not_allocate_cap_up_front)
{
    /* A cap no allocator can satisfy: only lazy growth makes this work. */
    headtail_t *ht = mk((size_t)1 << 60);
    push(ht, "hello");
    check_render(ht, "hello");
    headtail_free(ht);
}

/* Pushes random chunks (up to maxchunk bytes) into a cap-sized buffer and
 * checks render against the whole stream kept aside. */
static void model_round(size_t cap, size_t maxchunk, int pushes, unsigned *seed)
{
    headtail_t *ht = mk(cap);
    buf_t all = BUF_INIT, got = BUF_INIT, exp = BUF_INIT;
    char *chunk = malloc(maxchunk + 1);
    ASSERT_TRUE(chunk != NULL);
    for (int i = 0; i < pushes; i++) {
        *seed = *seed * 1103515245u + 12345u;
        size_t n = (*seed >> 8) % (maxchunk + 1);
        for (size_t j = 0; j < n; j++)
            chunk[j] = (char)('!' + (all.len + j) % 90);
        ASSERT_OK(buf_append(&all, chunk, n));
        ASSERT_OK(headtail_push(ht, chunk, n));
    }
    size_t hb = cap / 2, tb = cap - hb, total = all.len;
    ASSERT_EQ(headtail_total(ht), total);
    ASSERT_OK(headtail_render(ht, &got));
    if (total <= cap) {
        ASSERT_OK(buf_append(&exp, all.p, total));
        ASSERT_EQ(headtail_omitted(ht), 0);
        ASSERT_EQ(headtail_retained(ht), total);
    } else {
        size_t om = total - hb - tb;
        ASSERT_OK(buf_append(&exp, all.p, hb));
        ASSERT_OK(buf_printf(&exp, "\n[... %zu bytes omitted (bytes %zu-%zu) ...]\n",
                             om, hb, hb + om));
        ASSERT_OK(buf_append(&exp, all.p + total - tb, tb));
        ASSERT_EQ(headtail_omitted(ht), om);
        ASSERT_EQ(headtail_retained(ht), cap);
    }
    ASSERT_MEM(got.p ? got.p : "", got.len, exp.p ? exp.p : "", exp.len);
    free(chunk);
    buf_free(&all);
    buf_free(&got);
    buf_free(&exp);
    headtail_free(ht);
}

/* Small caps: the ring wraps at once; every cap/chunk relation. */
TEST(headtail_matches_model_small)
{
    unsigned seed = 7;
    for (size_t cap = 0; cap < 40; cap++)
        for (int round = 0; round < 20; round++)
            model_round(cap, cap + 4, 1 + round * 3, &seed);
}

/* Larger caps: head and tail grow through several reallocations, with
 * chunks smaller and larger than the budgets. */
TEST(headtail_matches_model_growth)
{
    unsigned seed = 11;
    static const size_t caps[] = {511, 600, 1000, 4097, 70000};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
        for (int round = 0; round < 30; round++)
            model_round(caps[c], round % 2 ? caps[c] / 7 + 1 : caps[c] * 2, 1 + round * 5, &seed);
}
