/*
 * test_dedup.c — templates (numbers, versions, hashes, UUIDs, times, URLs,
 * paths become {}), the template length edge, groups that keep every
 * line and location, the group limit and the recycling of groups shown
 * whole past it, and the caps on what one group keeps (runs of lines,
 * distinct locations) at their edges, and the time stamps that open log
 * lines.
 */
#include <stdio.h>

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

/* A count of zero beside a word of failure stays in the template, so a
 * line counting some failures never folds with lines counting none; any
 * other zero, and a non-zero count, is variable as ever. */
TEST(dedup_templates_keep_a_zero_count_of_failures)
{
    buf_t t = BUF_INIT;
    tmpl("batch 7: 0 failed, 50 passed", &t);
    ASSERT_STR(t.p, "batch {} 0 failed, {} passed");
    tmpl("batch 101: 3 failed, 47 passed", &t);
    ASSERT_STR(t.p, "batch {} {} failed, {} passed");
    tmpl("worker 3: processed=120 errors=0", &t);
    ASSERT_STR(t.p, "worker {} processed={} errors=0");
    tmpl("host1 : ok=5 changed=0 unreachable=0 failed=0", &t);
    ASSERT_STR(t.p, "{} : ok={} changed={} unreachable=0 failed=0");
    tmpl("Tests: 0 Failures: 0 Errors: 00", &t);
    ASSERT_STR(t.p, "Tests: {} Failures: 0 Errors: 00");
    tmpl("0 ERRORS, 0 failure", &t);
    ASSERT_STR(t.p, "0 ERRORS, 0 failure");
    /* not beside one: `0 files`, `failed (0)` across a bracket, `0.5
     * failed` (a token with a dot), `0 failedx` */
    tmpl("0 files, failed (0) 0.5 failed, 0 failedx", &t);
    ASSERT_STR(t.p, "{} files, failed ({}) {} failed, {} failedx");
    ASSERT_TRUE(tmpl("a: 0 failed", NULL) != tmpl("a: 1 failed", NULL));
    ASSERT_EQ(tmpl("a: 1 failed", NULL), tmpl("a: 20 failed", NULL));
    ASSERT_EQ(tmpl("took 0 ms", NULL), tmpl("took 5 ms", NULL));
    buf_free(&t);
}

/* The time stamp opening a log line, with the blanks after it: what a
 * hazard's exact group skips (squash.c), so that one message logged again
 * and again is one group. */
TEST(dedup_stamp_len_knows_log_time_stamps)
{
    static const struct {
        const char *line;
        size_t len;
    } v[] = {
        {"2026-11-22T10:00:01.001Z ERROR db: reset", 25},
        {"2026-11-22T10:00:01Z x", 21},
        {"2026-11-22T10:00:01+01:00 x", 26},
        {"2026-11-22T10:00:01.5-0800 x", 27},
        {"2026-11-22 10:00:01,123 ERROR x", 24},
        {"2026-11-22 10:00:01\tx", 20},
        {"[2026-11-22 10:00:01] error: x", 22},
        {"[10:00:01.123]   x", 17},
        {"10:00:01 error: x", 9},
        {"Nov 22 10:00:01 host sshd[42]: x", 16},
        {"Nov  2 10:00:01 host x", 16},
        {"E1124 07:51:39.309454   21704 memcache.go:265] x", 30},
        {"W20261124 07:51:39.309454 7 a.cc:1] x", 28},
        {"2026-11-22T10:00:01Z", 20}, /* nothing after it */
        /* not stamps */
        {"2026-11-22x10:00:01 x", 0},
        {"2026-11-22T10:00 x", 0},
        {"10:00 x", 0},
        {"10:00:01x", 0},
        {"[10:00:01 x", 0},
        {"Nox 22 10:00:01 x", 0},
        {"E1124 07:51:39.309454 memcache.go:265] x", 0},
        {"E1124 07:51:39 1 x.go:9] x", 0}, /* glog writes its fraction */
        {"X1124 07:51:39.309454 1 a.go:1] x", 0},
        {"error: x", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t got = dedup_stamp_len(v[i].line, strlen(v[i].line));
        if (got != v[i].len)
            test_fail(__FILE__, __LINE__, "\"%s\": %zu, want %zu", v[i].line,
                      got, v[i].len);
    }
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
    ASSERT_EQ(dedup_add(d, 7, "t {}", 4, 3, "a.c:1:2", 7, 0, &g1), 1);
    ASSERT_EQ(dedup_add(d, 9, "u", 1, 4, NULL, 0, 0, &g2), 1);
    ASSERT_EQ(dedup_add(d, 7, "t {}", 4, 9, "b.c:5", 5, 0, &g1), 2);
    ASSERT_TRUE(g1 != g2);
    ASSERT_EQ(dedup_count(d, g1), 2);
    ASSERT_STR(dedup_template_text(d, g1), "t {}");
    size_t n;
    uint64_t more;
    const dedup_run_t *r = dedup_runs(d, g1, &n, &more);
    ASSERT_EQ(n, 2);
    ASSERT_EQ(r[0].first, 3);
    ASSERT_EQ(r[0].last, 3);
    ASSERT_EQ(r[1].first, 9);
    ASSERT_EQ(r[1].last, 9);
    ASSERT_EQ(more, 0);
    ASSERT_TRUE(dedup_locations_vary(d, g1));
    ASSERT_FALSE(dedup_locations_vary(d, g2));
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
        ASSERT_EQ(dedup_add(d, i * 2654435761u + 1, "x", 1, i, NULL, 0, 0,
                            &g), 1);
    ASSERT_EQ(dedup_group_count(d), DEDUP_GROUPS_MAX);
    ASSERT_EQ(dedup_add(d, 3, "y", 1, 1, NULL, 0, 0, &g), 1);
    ASSERT_EQ(g, UINT32_MAX);
    /* an existing group still counts */
    ASSERT_EQ(dedup_add(d, 1, "x", 1, 9, NULL, 0, 0, &g), 2);
    dedup_free(d);
}

/* What the recycle callback saw: the groups, in order, and for each the
 * members dedup_runs listed while it was still readable. */
struct recycled {
    dedup_t *d;
    uint32_t last;
    size_t calls;
    uint64_t members;
};

static void on_recycle(uint32_t g, void *data)
{
    struct recycled *r = data;
    size_t n;
    uint64_t more;
    const dedup_run_t *runs = dedup_runs(r->d, g, &n, &more);
    r->last = g;
    r->calls++;
    r->members = more;
    for (size_t i = 0; i < n; i++)
        r->members += runs[i].last - runs[i].first + 1;
}

/* A hash whose home slots crowd (its low bits are zero), so that probes
 * run through clusters and a deletion has entries to move back. */
static uint64_t crowded(uint64_t i)
{
    return (i * 0x9E3779B97F4A7C15ull) << 4;
}

/* At DEDUP_GROUPS_MAX a new template takes the place of a group whose
 * members are all shown (count at most its show), and the caller hears of
 * it while the group is readable; every other group is still found after
 * many recycles (the table's deletions keep the probes whole); a group
 * with members past its show is never taken, so a table of those leaves
 * the new template ungrouped, as a show of 0 always does. */
TEST(dedup_a_full_table_recycles_only_groups_shown_whole)
{
    static uint64_t owner[DEDUP_GROUPS_MAX];
    struct recycled r = {0};
    uint32_t g;
    ASSERT_OK(dedup_new(&r.d));
    dedup_t *d = r.d;
    dedup_on_recycle(d, on_recycle, &r);
    for (uint64_t i = 0; i < DEDUP_GROUPS_MAX; i++) {
        /* every third group shown twice: two members, show 2 */
        ASSERT_EQ(dedup_add(d, crowded(i), "x", 1, 2 * i + 1, NULL, 0,
                            2, &g), 1);
        ASSERT_EQ(g, i);
        owner[g] = crowded(i);
        if (i % 3 == 0)
            ASSERT_EQ(dedup_add(d, crowded(i), "x", 1, 2 * i + 2, NULL,
                                0, 2, &g), 2);
    }
    ASSERT_EQ(r.calls, 0);
    /* 20000 new templates: each takes a recycled index */
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t h = crowded(DEDUP_GROUPS_MAX + i);
        ASSERT_EQ(dedup_add(d, h, "y", 1, 1000000 + i, NULL, 0, 2, &g), 1);
        ASSERT_EQ(r.calls, i + 1);
        ASSERT_EQ(g, r.last);
        ASSERT_TRUE(r.members == 1 || r.members == 2);
        owner[g] = h;
        ASSERT_EQ(dedup_group_count(d), DEDUP_GROUPS_MAX);
        ASSERT_STR(dedup_template_text(d, g), "y");
    }
    /* every group alive is where its hash leads: a third member makes it
     * unrecyclable (count 3 > show 2) */
    size_t calls = r.calls;
    for (uint32_t k = 0; k < DEDUP_GROUPS_MAX; k++) {
        int cnt = dedup_add(d, owner[k], "?", 1, 2000000 + k, NULL, 0, 2,
                            &g);
        ASSERT_EQ(g, k);
        ASSERT_TRUE(cnt >= 2);
        if (cnt == 2)
            ASSERT_EQ(dedup_add(d, owner[k], "?", 1, 3000000 + k, NULL, 0,
                                2, &g), 3);
    }
    ASSERT_EQ(r.calls, calls);
    /* none left to recycle: ungrouped, and nobody told */
    ASSERT_EQ(dedup_add(d, crowded(1u << 30), "z", 1, 9, NULL, 0, 2, &g), 1);
    ASSERT_EQ(g, UINT32_MAX);
    ASSERT_EQ(r.calls, calls);
    dedup_free(d);
}

TEST(dedup_runs_kept_at_their_edge)
{
    dedup_t *d;
    ASSERT_OK(dedup_new(&d));
    uint32_t g;
    /* DEDUP_RUNS_MAX runs of two lines each (2-3, 5-6, ...): all kept */
    uint64_t line = 2;
    for (int r = 0; r < DEDUP_RUNS_MAX; r++, line += 3) {
        ASSERT_TRUE(dedup_add(d, 5, "t", 1, line, NULL, 0, 0, &g) > 0);
        ASSERT_TRUE(dedup_add(d, 5, "t", 1, line + 1, NULL, 0, 0, &g) > 0);
    }
    size_t n;
    uint64_t more;
    const dedup_run_t *r = dedup_runs(d, g, &n, &more);
    ASSERT_EQ(n, DEDUP_RUNS_MAX);
    ASSERT_EQ(more, 0);
    ASSERT_EQ(r[DEDUP_RUNS_MAX - 1].first, line - 3);
    ASSERT_EQ(r[DEDUP_RUNS_MAX - 1].last, line - 2);
    /* the last run still grows by the next line */
    ASSERT_TRUE(dedup_add(d, 5, "t", 1, line - 1, NULL, 0, 0, &g) > 0);
    r = dedup_runs(d, g, &n, &more);
    ASSERT_EQ(r[DEDUP_RUNS_MAX - 1].last, line - 1);
    ASSERT_EQ(more, 0);
    /* a run past the cap is counted, not kept, and so is what follows,
     * even a line next to it */
    ASSERT_TRUE(dedup_add(d, 5, "t", 1, line + 1, NULL, 0, 0, &g) > 0);
    ASSERT_TRUE(dedup_add(d, 5, "t", 1, line + 2, NULL, 0, 0, &g) > 0);
    r = dedup_runs(d, g, &n, &more);
    ASSERT_EQ(n, DEDUP_RUNS_MAX);
    ASSERT_EQ(more, 2);
    ASSERT_EQ(dedup_count(d, g), 2 * DEDUP_RUNS_MAX + 3);
    /* a million members of one line cost one group of bounded size: the
     * count is exact, the kept runs stay DEDUP_RUNS_MAX */
    for (uint64_t i = 0; i < 1000000; i++)
        ASSERT_TRUE(dedup_add(d, 5, "t", 1, 100 + 2 * i, NULL, 0, 0, &g) > 0);
    r = dedup_runs(d, g, &n, &more);
    ASSERT_EQ(n, DEDUP_RUNS_MAX);
    ASSERT_EQ(more, 1000002);
    dedup_free(d);
}

TEST(dedup_locations_distinct_and_capped_at_their_edge)
{
    dedup_t *d;
    ASSERT_OK(dedup_new(&d));
    uint32_t g;
    char loc[32];
    /* one location, however many members: kept once, and no `at` */
    for (int i = 0; i < 1000; i++)
        ASSERT_TRUE(dedup_add(d, 5, "t", 1, (uint64_t)i + 1, "a.c:1:1", 7,
                              0, &g) > 0);
    ASSERT_EQ(dedup_location_count(d, g), 1);
    ASSERT_FALSE(dedup_locations_vary(d, g));
    /* DEDUP_LOCATIONS_MAX distinct ones in all: every one kept, in order */
    for (int i = 1; i < DEDUP_LOCATIONS_MAX; i++) {
        int n = snprintf(loc, sizeof loc, "f%d.c:%d", i, i);
        ASSERT_TRUE(dedup_add(d, 5, "t", 1, 2000 + (uint64_t)i, loc,
                              (size_t)n, 0, &g) > 0);
        /* a repeat of a kept one is not kept again */
        ASSERT_TRUE(dedup_add(d, 5, "t", 1, 3000 + (uint64_t)i, "a.c:1:1", 7,
                              0, &g) > 0);
    }
    ASSERT_EQ(dedup_location_count(d, g), DEDUP_LOCATIONS_MAX);
    ASSERT_EQ(dedup_locations_more(d, g), 0);
    ASSERT_TRUE(dedup_locations_vary(d, g));
    buf_t out = BUF_INIT;
    ASSERT_OK(dedup_locations(d, g, 0, &out));
    ASSERT_TRUE(!strncmp(out.p, "a.c:1:1, f1.c:1, f2.c:2, ", 25));
    snprintf(loc, sizeof loc, ", f%d.c:%d", DEDUP_LOCATIONS_MAX - 1,
             DEDUP_LOCATIONS_MAX - 1);
    ASSERT_TRUE(out.len > strlen(loc) &&
                !strcmp(out.p + out.len - strlen(loc), loc));
    /* one more distinct location: counted, not kept; nor a repeat of it */
    ASSERT_TRUE(dedup_add(d, 5, "t", 1, 9000, "z.c:9", 5, 0, &g) > 0);
    ASSERT_TRUE(dedup_add(d, 5, "t", 1, 9001, "z.c:9", 5, 0, &g) > 0);
    ASSERT_TRUE(dedup_add(d, 5, "t", 1, 9002, "f1.c:1", 6, 0, &g) > 0);
    ASSERT_EQ(dedup_location_count(d, g), DEDUP_LOCATIONS_MAX);
    ASSERT_EQ(dedup_locations_more(d, g), 2);
    buf_reset(&out);
    ASSERT_OK(dedup_locations(d, g, DEDUP_LOCATIONS_MAX - 1, &out));
    ASSERT_STR(out.p, loc + 2);
    buf_free(&out);
    dedup_free(d);
}
