/*
 * test_dedup.c — templates (numbers, versions, hashes, UUIDs, times, URLs,
 * paths become {}), the template length edge, groups that keep every
 * line and location, and the group limit.
 */
#include "harness.h"
#include "squash/dedup.h"

static uint64_t tmpl(const char *s, buf_t *out)
{
    return dedup_template(s, strlen(s), out);
}

TEST(dedup_templates_replace_variable_tokens)
{
    buf_t t = BUF_INIT;
    tmpl("npm warn deprecated inflight@1.0.6: leaks", &t);
    ASSERT_STR(t.p, "npm warn deprecated {} leaks");
    tmpl("2026-11-22T10:47:00.820Z INFO worker-4 done id=e841a300dc02 in 12ms", &t);
    ASSERT_STR(t.p, "{} INFO {} done id={} in {}");
    tmpl("GET https://registry.npmjs.org/glob 13ms (cache updated)", &t);
    ASSERT_STR(t.p, "GET {} {} (cache updated)");
    tmpl("uuid 123e4567-e89b-12d3-a456-426614174000 commit deadbeefcafe", &t);
    ASSERT_STR(t.p, "uuid {} commit {}");
    tmpl("/usr/include/stdio.h", &t);
    ASSERT_STR(t.p, "{}");
    tmpl("", &t);
    ASSERT_STR(t.p, "");
    ASSERT_EQ(tmpl("a 1 b", NULL), tmpl("a 22 b", NULL));
    ASSERT_TRUE(tmpl("a 1 b", NULL) != tmpl("a 1 c", NULL));
    buf_free(&t);
}

TEST(dedup_template_text_is_capped_but_hash_sees_everything)
{
    buf_t t = BUF_INIT, s = BUF_INIT;
    for (size_t i = 0; i < DEDUP_TEMPLATE_MAX + 100; i++)
        buf_append_byte(&s, 'w');
    uint64_t h1 = dedup_template(s.p, s.len, &t);
    ASSERT_EQ(t.len, DEDUP_TEMPLATE_MAX);
    buf_append_byte(&s, 'x');
    ASSERT_TRUE(dedup_template(s.p, s.len, &t) != h1);
    buf_free(&t);
    buf_free(&s);
}

TEST(dedup_high_entropy_at_its_edge)
{
    char s[DEDUP_ENTROPY_TOKEN + 1];
    memset(s, 'a', sizeof s);
    ASSERT_FALSE(dedup_high_entropy(s, DEDUP_ENTROPY_TOKEN - 1));
    ASSERT_TRUE(dedup_high_entropy(s, DEDUP_ENTROPY_TOKEN));
}

TEST(dedup_groups_keep_every_line_and_location)
{
    dedup_t *d;
    ASSERT_OK(dedup_new(&d));
    uint32_t g1, g2;
    ASSERT_EQ(dedup_add(d, 7, "t {}", 4, 3, "a.c:1:2", 7, &g1), 1);
    ASSERT_EQ(dedup_add(d, 9, "u", 1, 4, NULL, 0, &g2), 1);
    ASSERT_EQ(dedup_add(d, 7, "t {}", 4, 9, "b.c:5", 5, &g1), 2);
    ASSERT_TRUE(g1 != g2);
    ASSERT_EQ(dedup_count(d, g1), 2);
    ASSERT_STR(dedup_template_text(d, g1), "t {}");
    size_t n;
    const uint64_t *l = dedup_lines(d, g1, &n);
    ASSERT_EQ(n, 2);
    ASSERT_EQ(l[0], 3);
    ASSERT_EQ(l[1], 9);
    buf_t out = BUF_INIT;
    ASSERT_OK(dedup_locations(d, g1, 0, &out));
    ASSERT_STR(out.p, "a.c:1:2, b.c:5");
    ASSERT_EQ(dedup_location_count(d, g1), 2);
    ASSERT_EQ(dedup_group_count(d), 2);
    buf_free(&out);
    dedup_free(d);
    dedup_free(NULL);
}

TEST(dedup_group_limit_at_its_edge)
{
    dedup_t *d;
    ASSERT_OK(dedup_new(&d));
    uint32_t g;
    for (uint64_t i = 0; i < DEDUP_GROUPS_MAX; i++)
        ASSERT_EQ(dedup_add(d, i * 2654435761u + 1, "x", 1, i, NULL, 0, &g), 1);
    ASSERT_EQ(dedup_group_count(d), DEDUP_GROUPS_MAX);
    ASSERT_EQ(dedup_add(d, 3, "y", 1, 1, NULL, 0, &g), 1);
    ASSERT_EQ(g, UINT32_MAX);
    /* an existing group still counts */
    ASSERT_EQ(dedup_add(d, 1, "x", 1, 9, NULL, 0, &g), 2);
    dedup_free(d);
}
