/* test_loggrep.c — read_output's grep (src/exec/loggrep.c): forward and
 * backward give the lines a plain reading of the whole file gives (the
 * reference here), over logs made to cross every boundary: lines longer
 * than a block and than the kept line, '\r' ends, empty lines, no final
 * newline, a dropped range, a hi inside a line; the time limit stops a
 * search back with the last matches found and says where to go on; and
 * nothing past the size the call began with is read. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "exec/loggrep.h"
#include "exec/session.h"
#include "harness.h"

/* A line as the reference splits it. */
struct ref_line {
    uint64_t start;
    const char *p;
    size_t len; /* kept, without its final '\r's */
};

/* Splits d[0, size) into lines: the segments [0, ha) and [hb, size),
 * each cut at '\n', a last line without one ending at the segment's end;
 * LOG_GREP_LINE_MAX bytes of each kept, then its final '\r's dropped. */
static size_t ref_split(const char *d, uint64_t size, bool hole, uint64_t ha,
                        uint64_t hb, struct ref_line **out)
{
    size_t n = 0, cap = 1024;
    struct ref_line *v = malloc(cap * sizeof *v);
    ASSERT_TRUE(v);
    uint64_t sa[2] = {0, hb}, sb[2] = {hole ? ha : size, size};
    for (int i = 0; i < (hole ? 2 : 1); i++) {
        for (uint64_t p = sa[i]; p < sb[i];) {
            const char *q = memchr(d + p, '\n', (size_t)(sb[i] - p));
            uint64_t e = q ? (uint64_t)(q - d) : sb[i];
            size_t keep = (size_t)(e - p);
            if (keep > LOG_GREP_LINE_MAX)
                keep = LOG_GREP_LINE_MAX;
            while (keep && d[p + keep - 1] == '\r')
                keep--;
            if (n == cap) {
                cap *= 2;
                struct ref_line *nv = realloc(v, cap * sizeof *v);
                ASSERT_TRUE(nv);
                v = nv;
            }
            v[n++] = (struct ref_line){p, d + p, keep};
            p = q ? e + 1 : sb[i];
        }
    }
    *out = v;
    return n;
}

/* What a grep should give: the matches among lines starting in [lo, hi),
 * all (tail LOG_GREP_ALL: the first that fit the budget) or the last tail
 * (the newest that fit). */
static void ref_grep(const struct ref_line *l, size_t n, const char *pat,
                     uint64_t lo, uint64_t hi, uint64_t tail, size_t budget,
                     buf_t *out, bool *truncated)
{
    session_pattern_t *re;
    char err[256];
    ASSERT_OK(session_pattern_new(pat, false, &re, err, sizeof err));
    size_t *hit = malloc((n + 1) * sizeof *hit), nh = 0;
    ASSERT_TRUE(hit);
    for (size_t i = 0; i < n; i++)
        if (l[i].start >= lo && l[i].start < hi &&
            session_pattern_match(re, l[i].p, l[i].len, err, sizeof err) == 1)
            hit[nh++] = i;
    session_pattern_free(re);
    size_t first = 0;
    *truncated = false;
    if (tail != LOG_GREP_ALL) {
        first = nh > tail ? nh - (size_t)tail : 0;
        size_t bytes = 0, k = nh;
        while (k > first) {
            size_t sz = (size_t)snprintf(NULL, 0, "%zu: ", hit[k - 1] + 1) +
                        l[hit[k - 1]].len + 1;
            if (sz > budget - bytes) {
                *truncated = true;
                break;
            }
            bytes += sz;
            k--;
        }
        first = k;
    }
    for (size_t k = first; k < nh; k++) {
        size_t before = out->len;
        ASSERT_OK(buf_printf(out, "%zu: ", hit[k] + 1));
        ASSERT_OK(buf_append(out, l[hit[k]].p, l[hit[k]].len));
        ASSERT_OK(buf_append_byte(out, '\n'));
        if (tail == LOG_GREP_ALL && out->len > budget) {
            out->len = before;
            *truncated = true;
            break;
        }
    }
    free(hit);
}

static int write_log(const char *name, const char *d, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, d, n), (ssize_t)n);
    return fd;
}

static uint64_t rng_state;
static uint64_t rnd(uint64_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? rng_state % n : 0;
}

/* A log of about `bytes` whose lines cross the block and kept-line sizes,
 * end in '\r's, are empty, carry UTF-8 and the marker "E<n>". */
static void make_log(buf_t *b, size_t bytes)
{
    static const char *const bits[] = {"é", "x", "\r", "E", "ab", "€"};
    for (unsigned k = 0; b->len < bytes; k++) {
        uint64_t kind = rnd(20);
        size_t len = kind == 0   ? LOG_GREP_BLOCK + rnd(LOG_GREP_BLOCK)
                     : kind == 1 ? LOG_GREP_LINE_MAX - 2 + rnd(5)
                     : kind == 2 ? 0
                                 : rnd(120);
        size_t at = b->len;
        if (rnd(4) == 0)
            ASSERT_OK(buf_printf(b, "E%u ", k));
        while (b->len - at < len)
            ASSERT_OK(buf_append_str(b, bits[rnd(6)]));
        if (rnd(8) == 0)
            ASSERT_OK(buf_append_str(b, rnd(2) ? "\r" : "\r\r"));
        ASSERT_OK(buf_append_byte(b, '\n'));
    }
    if (rnd(2)) /* no final newline */
        b->len--;
}

static void grep_ok(int fd, log_grep_t *g, buf_t *out)
{
    char err[512];
    buf_reset(out);
    ASSERT_OK(log_grep(fd, g, out, err, sizeof err));
}

/* Forward and backward against the reference, over random logs, with and
 * without a dropped range, for tails and budgets around the match count,
 * and for hi at line starts and inside lines. */
TEST(loggrep_back_and_forth_match_a_plain_reading)
{
    static const char *const pats[] = {"E", "^$", "x$", "^E[0-9]*7 ", "zzz"};
    for (unsigned seed = 1; seed <= 24; seed++) {
        rng_state = 0x9e3779b97f4a7c15ull * seed;
        buf_t d = BUF_INIT, out = BUF_INIT, want = BUF_INIT;
        make_log(&d, 40000 + (size_t)rnd(400000));
        uint64_t size = d.len, ha = 0, hb = 0;
        bool hole = seed % 3 == 0 && size > 20000;
        if (hole) {
            ha = 1 + rnd(size / 2);
            hb = ha + 1 + rnd(size / 4);
            /* What the dropped range holds is never read. */
            for (uint64_t i = ha; i < hb; i++)
                d.p[i] = i % 7 ? 'E' : '\n';
        }
        int fd = write_log("log", d.p, d.len);
        struct ref_line *l;
        size_t n = ref_split(d.p, size, hole, ha, hb, &l);
        for (size_t pi = 0; pi < sizeof pats / sizeof *pats; pi++) {
            bool tr;
            log_grep_t g = {.pattern = pats[pi], .lo = 0, .hi = size,
                            .size = size, .tail = LOG_GREP_ALL,
                            .budget = SIZE_MAX, .hole = hole, .ha = ha,
                            .hb = hb, .time_ms = LOG_GREP_NO_TIME_LIMIT};
            grep_ok(fd, &g, &out);
            buf_reset(&want);
            ref_grep(l, n, pats[pi], 0, size, LOG_GREP_ALL, SIZE_MAX, &want,
                     &tr);
            ASSERT_MEM(out.p, out.len, want.p, want.len);
            uint64_t all = g.found;
            uint64_t tails[] = {0, 1, 3, all ? all - 1 : 0, all, all + 5};
            for (size_t ti = 0; ti < sizeof tails / sizeof *tails; ti++) {
                uint64_t his[] = {size, rnd(size + 1),
                                  l[rnd(n)].start, 0};
                for (size_t hi_i = 0; hi_i < 4; hi_i++) {
                    size_t budgets[] = {SIZE_MAX, 4000 + rnd(70000), 5};
                    for (size_t bi = 0; bi < 3; bi++) {
                        log_grep_t gb = g;
                        gb.hi = his[hi_i];
                        gb.tail = tails[ti];
                        gb.budget = budgets[bi];
                        grep_ok(fd, &gb, &out);
                        buf_reset(&want);
                        ref_grep(l, n, pats[pi], 0, gb.hi, gb.tail,
                                 gb.budget, &want, &tr);
                        if (out.len != want.len ||
                            memcmp(out.p, want.p, out.len))
                            fprintf(stderr,
                                    "seed %u /%s/ tail %" PRIu64
                                    " hi %" PRIu64 " budget %zu\n",
                                    seed, pats[pi], gb.tail, gb.hi,
                                    gb.budget);
                        ASSERT_MEM(out.p, out.len, want.p, want.len);
                        ASSERT_EQ(gb.truncated, tr);
                        ASSERT_EQ(gb.stopped, 0);
                        ASSERT_EQ(gb.to, gb.hi);
                    }
                }
            }
        }
        free(l);
        close(fd);
        buf_free(&d);
        buf_free(&out);
        buf_free(&want);
    }
}

/* With a time limit of 0 each call searches one line: searched back, the
 * first call still gives the log's last match when the last line has it,
 * and calls from where each stopped (before: stopped, the tail less what
 * was found) give, joined, the last matches of the whole log. */
TEST(loggrep_back_stops_for_time_and_goes_on_from_where_it_said)
{
    buf_t d = BUF_INIT, out = BUF_INIT, got = BUF_INIT;
    for (int i = 1; i <= 3000; i++)
        ASSERT_OK(buf_printf(&d, i % 100 == 0 ? "error %d\n" : "ok %d\n",
                             i));
    int fd = write_log("timed", d.p, d.len);
    log_grep_t g = {.pattern = "^error", .hi = d.len, .size = d.len,
                    .tail = 1, .budget = SIZE_MAX,
                    .time_ms = 0};
    grep_ok(fd, &g, &out);
    ASSERT_STR(out.p, "3000: error 3000\n");
    ASSERT_EQ(g.stopped, 0); /* found before the time ran out */
    ASSERT_EQ(g.from, d.len - strlen("error 3000\n"));

    /* The last 5 errors, a line a call. */
    uint64_t hi = d.len, tail = 5;
    int calls = 0;
    for (;;) {
        log_grep_t c = g;
        c.hi = hi;
        c.tail = tail;
        grep_ok(fd, &c, &out);
        calls++;
        if (got.len)
            ASSERT_OK(buf_append(&out, got.p, got.len));
        buf_reset(&got);
        if (out.len)
            ASSERT_OK(buf_append(&got, out.p, out.len));
        ASSERT_TRUE(c.found <= tail);
        tail -= c.found;
        if (!c.stopped)
            break;
        ASSERT_TRUE(tail > 0);
        ASSERT_TRUE(c.stopped < hi);
        ASSERT_EQ(c.from, c.stopped);
        /* The line it stopped at is the earliest searched, numbered. */
        char no[32];
        snprintf(no, sizeof no, "%" PRIu64 "\n", c.stopped_line);
        ASSERT_TRUE(!memcmp(d.p + c.stopped, c.stopped_line % 100 ? "ok " :
                                                                    "error ",
                            c.stopped_line % 100 ? 3 : 6));
        ASSERT_TRUE(!strncmp(strchr(d.p + c.stopped, ' ') + 1, no,
                             strlen(no)));
        hi = c.stopped;
        ASSERT_TRUE(calls < 1000);
    }
    ASSERT_EQ(calls, 401); /* lines 2600 to 3000, one a call */
    ASSERT_STR(got.p, "2600: error 2600\n2700: error 2700\n"
                      "2800: error 2800\n2900: error 2900\n"
                      "3000: error 3000\n");

    /* Forward from inside a line, with no time at all: the first line
     * that starts past the offset is still searched, then it stops. */
    log_grep_t f = {.pattern = "^ok", .lo = 3, .hi = d.len, .size = d.len,
                    .tail = LOG_GREP_ALL, .budget = SIZE_MAX, .time_ms = 0};
    grep_ok(fd, &f, &out);
    ASSERT_STR(out.p, "2: ok 2\n");
    ASSERT_EQ(f.found, 1);
    ASSERT_EQ(f.stopped, strlen("ok 1\nok 2\n"));
    ASSERT_EQ(f.stopped_line, 3);

    /* Fewer matches than asked for: the whole log is searched. */
    log_grep_t c = g;
    c.pattern = "^error 1?00$";
    c.tail = 10;
    c.time_ms = LOG_GREP_NO_TIME_LIMIT;
    grep_ok(fd, &c, &out);
    ASSERT_STR(out.p, "100: error 100\n");
    ASSERT_EQ(c.from, 0);
    ASSERT_EQ(c.found, 1);
    close(fd);
    buf_free(&d);
    buf_free(&out);
    buf_free(&got);
}

/* A line that costs the pattern its limit is named by its number, found
 * back as forward. */
TEST(loggrep_back_names_the_line_that_reached_the_limit)
{
    buf_t d = BUF_INIT, out = BUF_INIT;
    ASSERT_OK(buf_append_str(&d, "one\ntwo\n"));
    for (int i = 0; i < 16000; i++)
        ASSERT_OK(buf_append_byte(&d, 'a'));
    ASSERT_OK(buf_append_str(&d, "b\nthree\n"));
    int fd = write_log("limit", d.p, d.len);
    for (int back = 0; back < 2; back++) {
        log_grep_t g = {.pattern = "(a+)+$", .hi = d.len, .size = d.len,
                        .tail = back ? 5 : LOG_GREP_ALL, .budget = SIZE_MAX,
                        .time_ms = LOG_GREP_NO_TIME_LIMIT};
        char err[512];
        buf_reset(&out);
        ASSERT_EQ(log_grep(fd, &g, &out, err, sizeof err),
                  REIN_EPATTERN_LIMIT);
        ASSERT_CONTAINS(err, "(at log line 3)");
    }
    close(fd);
    buf_free(&d);
    buf_free(&out);
}

/* A log still being written is searched as it was when the call began:
 * a line cut at `size` is matched as cut, both ways. */
TEST(loggrep_reads_nothing_past_size)
{
    const char *d = "error a\nerror b\nerror c and more\n";
    int fd = write_log("grow", d, strlen(d));
    uint64_t size = strlen("error a\nerror b\nerror c");
    for (int back = 0; back < 2; back++) {
        buf_t out = BUF_INIT;
        log_grep_t g = {.pattern = "^error", .hi = size, .size = size,
                        .tail = back ? 2 : LOG_GREP_ALL, .budget = SIZE_MAX,
                        .time_ms = LOG_GREP_NO_TIME_LIMIT};
        grep_ok(fd, &g, &out);
        ASSERT_STR(out.p, back ? "2: error b\n3: error c\n"
                               : "1: error a\n2: error b\n3: error c\n");
        buf_free(&out);
    }
    close(fd);
}

/* A terminal's log (as_shown): lines matched and shown as the terminal
 * showed them, the same forward and back; a line of control bytes
 * matches nothing; a line that moves up and draws its row again shows
 * its last frame; numbers stay the log's.  Read as bytes, the coloured
 * line does not match. */
TEST(loggrep_a_terminal_log_is_searched_as_it_was_shown)
{
    const char *d = "\033[1;31merror:\033[0m it broke\r\n"
                    "dl 10%\rdl 100%\r\n"
                    "\001\002\003\004\005\006\016\017\020\021\022x\r\n"
                    "\033]0;title\007plain: ok\r\n"
                    "fetch 1/3\033[A\rfetch 3/3\r\n";
    int fd = write_log("tty", d, strlen(d));
    uint64_t size = strlen(d);
    for (int back = 0; back < 2; back++) {
        struct {
            const char *pattern, *want;
        } c[] = {
            {"error: it broke$", "1: error: it broke\n"},
            {"^dl \\d+%$", "2: dl 100%\n"},
            {"^.?$|x", ""},
            {"^\\w+: ", "1: error: it broke\n4: plain: ok\n"},
            {"^fetch", "5: fetch 3/3\n"},
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            buf_t out = BUF_INIT;
            log_grep_t g = {.pattern = c[i].pattern, .hi = size, .size = size,
                            .tail = back ? 9 : LOG_GREP_ALL,
                            .budget = SIZE_MAX,
                            .time_ms = LOG_GREP_NO_TIME_LIMIT,
                            .as_shown = true};
            grep_ok(fd, &g, &out);
            ASSERT_MEM(out.p ? out.p : "", out.len, c[i].want,
                       strlen(c[i].want));
            buf_free(&out);
        }
        buf_t raw = BUF_INIT;
        log_grep_t g = {.pattern = "error: it", .hi = size, .size = size,
                        .tail = back ? 9 : LOG_GREP_ALL, .budget = SIZE_MAX,
                        .time_ms = LOG_GREP_NO_TIME_LIMIT};
        grep_ok(fd, &g, &raw);
        ASSERT_EQ(raw.len, 0);
        buf_free(&raw);
    }
    close(fd);
}

/* log_line_end: where the last line that starts before a byte ends. */
TEST(loggrep_line_end)
{
    const char *d = "ab\ncd\nef";
    int fd = write_log("ends", d, strlen(d));
    uint64_t e;
    static const struct {
        uint64_t at, end;
    } cases[] = {{0, 0}, {1, 3}, {2, 3}, {3, 3}, {4, 6}, {6, 6}, {7, 8},
                 {8, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ASSERT_OK(log_line_end(fd, 8, false, 0, 0, cases[i].at, &e));
        ASSERT_EQ(e, cases[i].end);
    }
    /* A line cut by the dropped range [4, 7) ends where it starts. */
    ASSERT_OK(log_line_end(fd, 8, true, 4, 7, 4, &e));
    ASSERT_EQ(e, 4);
    ASSERT_OK(log_line_end(fd, 8, true, 4, 7, 5, &e));
    ASSERT_EQ(e, 5);
    ASSERT_OK(log_line_end(fd, 8, true, 5, 7, 5, &e));
    ASSERT_EQ(e, 5);
    close(fd);
}
