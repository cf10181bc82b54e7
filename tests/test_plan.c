/*
 * test_plan.c — the budget planner (squash.c sq_plan) as a property over
 * real and generated outputs: for budgets b < b', every hazard line the
 * view at b shows is shown at b' too (a larger budget never trades a
 * hazard it could show for something else), and at every budget no error
 * is dropped: each error line is shown, listed in a `repeat` marker, or
 * counted by the `; N hazards` of the `omitted` marker whose range holds
 * it, and that count is exact: every hazard line in the range, a copy
 * folded into its group's repeat marker too (the budget may show no
 * member of the group, and then no repeat marker names it).
 *
 * Which lines are hazards is the classifier's call, replayed here on the
 * same lines with the same grammars (vt, then classify_line); where each
 * line of a view came from is worked out from the view alone: raw lines
 * are in line order, and an `omitted` marker says where the next one
 * starts.  The inputs: the corpus (../shared/corpus/condense), the
 * fixtures (tests/fixtures), generated outputs that mix compiler
 * diagnostics, tracebacks, copies of one error, outcomes and noise, and a
 * real `make -k -j2` of many failing C files, larger than exec_command's
 * default budget, whose every error line that budget shows.
 *
 * Each view is also read for its markers' arithmetic: an `omitted`
 * marker's count is its range's, its bytes are exactly those lines' in the
 * log, and every line neither shown nor in a gap is noise or in a repeat
 * group the view names.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/spawn.h"
#include "base/utf8.h"
#include "harness.h"
#include "squash/classify.h"
#include "squash/dedup.h"
#include "squash/emit.h"
#include "squash/grammar.h"
#include "squash/redraw.h"
#include "squash/squash.h"
#include "squash/vt.h"
#include "tutil.h"

/* Budgets tried per output: spread over 0 .. the unplanned view's size. */
#define PLAN_BUDGETS 160
/* Below this size every budget is tried. */
#define PLAN_EVERY_BYTE_MAX 1200
/* Repeat markers with unlisted members a view's reading keeps. */
#define PLAN_MORE_MAX 256

/* The default budget of exec_command's view (max_output_tokens, 4 bytes
 * a token; src/mcp/codex.h): the other budget the audit judges at. */
#define PLAN_DEFAULT_BUDGET (10000 * 4)

/* One VT-stripped line of the input, as the squasher's classifier saw it. */
struct ref_line {
    size_t off, len;  /* text in ref.text */
    uint64_t raw_start, raw_end; /* its bytes in the input */
    cls_kind_t kind;
    bool hazard;      /* a hazard line (not a line one owns) */
    bool error;       /* ... of error severity */
    bool drawn_over;  /* a frame a redraw replaced: never shown */
};

/* The input, line by line (l[1] .. l[n]). */
struct ref {
    buf_t text;
    struct ref_line *l;
    size_t n, cap;
    uint64_t raw_len; /* the log's size */
    classify_t *cls;
    int err;
};

/* A line as the squasher takes it out of its redraw hold (redraw.h): a
 * frame drawn over is progress, never classified (it comes out of line
 * order), unless it says an error or a warning. */
static int ref_on_line(const sq_line_t *sl, redraw_how_t how, void *data)
{
    struct ref *r = data;
    cls_result_t c = {.kind = CLS_NOISE, .noise = CLS_NOISE_PROGRESS};
    bool drawn_over = how == REDRAW_DROPPED;
    if (!drawn_over && classify_line(r->cls, sl, &c) < 0)
        return -ENOMEM;
    if (sl->lineno >= r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        while (cap <= sl->lineno)
            cap *= 2;
        struct ref_line *p = realloc(r->l, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + r->cap, 0, (cap - r->cap) * sizeof *p);
        r->l = p;
        r->cap = cap;
    }
    struct ref_line *l = &r->l[sl->lineno];
    if (l->len || l->hazard) { /* a later piece of a cut line */
        r->err = 1;
        return 0;
    }
    l->off = r->text.len;
    l->len = sl->len;
    l->raw_start = sl->raw_start;
    l->raw_end = sl->raw_end;
    l->kind = c.kind;
    l->hazard = c.kind == CLS_HAZARD && !c.cont;
    l->error = l->hazard && !c.warning;
    l->drawn_over = drawn_over;
    if (sl->lineno > r->n)
        r->n = (size_t)sl->lineno;
    return buf_append(&r->text, sl->text ? sl->text : "", sl->len);
}

static bool ref_keep(const sq_line_t *sl, void *data)
{
    (void)data;
    return classify_hazard_line(sl->text, sl->len, sl->colours);
}

static int ref_on_vt(const sq_line_t *sl, void *data)
{
    return redraw_put(data, sl);
}

static void ref_build(const grammar_set_t *set, const char *command,
                      const buf_t *raw, struct ref *r)
{
    memset(r, 0, sizeof *r);
    const grammar_t *gs[GRAMMAR_PER_COMMAND_MAX];
    grammar_ctx_t *ctx;
    ASSERT_OK(grammar_ctx_new(&ctx));
    size_t ng = set ? grammar_set_detect_all(set, ctx, command, gs) : 0;
    grammar_ctx_free(ctx);
    ASSERT_OK(classify_new_set(gs, ng, &r->cls));
    vt_t *vt;
    redraw_t *rd;
    ASSERT_OK(redraw_new(REDRAW_REACH, ref_on_line, ref_keep, r, &rd));
    ASSERT_OK(vt_new(ref_on_vt, rd, &vt));
    vt_set_keep(vt, ref_keep, r);
    ASSERT_OK(vt_feed(vt, raw->p, raw->len, 0));
    ASSERT_OK(vt_finish(vt));
    ASSERT_OK(redraw_flush(rd));
    vt_free(vt);
    redraw_free(rd);
    r->raw_len = raw->len;
    classify_free(r->cls);
    ASSERT_OK(buf_append(&r->text, "", 0));
}

static void ref_free(struct ref *r)
{
    buf_free(&r->text);
    free(r->l);
}

/* What one view shows and says, per input line. */
struct seen {
    uint8_t *shown;   /* shown as a raw line */
    uint8_t *listed;  /* in a repeat marker's line list */
    size_t n;
    bool more;        /* a repeat marker has members it does not list */
    /* the templates of those markers (in the view's text) */
    const char *more_tmpl[PLAN_MORE_MAX];
    size_t more_len[PLAN_MORE_MAX], nmore;
};

/* Whether line L is a member of a repeat group the view names: listed by
 * its marker, or a hazard whose text (an exact group's template) is that
 * of a marker counting members it does not list. */
/* Whether tmpl[0..tn) is the name an exact hazard group gives line t:
 * the line itself, or `{} ` and the line past its time stamp
 * (dedup_stamp_len: copies of one logged message are one group), after
 * glog's level letter when the stamp is glog's (`E{} ...`). */
static bool group_names(const char *tmpl, size_t tn, const char *t, size_t n)
{
    if (tn == n && !memcmp(tmpl, t, n))
        return true;
    size_t st = dedup_stamp_len(t, n);
    if (st && dedup_glog_len(t, n) == st) {
        if (!tn || tmpl[0] != t[0])
            return false;
        tmpl++;
        tn--;
    }
    return st && tn == n - st + 3 && !memcmp(tmpl, "{} ", 3) &&
           !memcmp(tmpl + 3, t + st, n - st);
}

static bool seen_grouped(const struct ref *r, const struct seen *s, size_t L)
{
    if (s->listed[L])
        return true;
    for (size_t i = 0; r->l[L].hazard && i < s->nmore; i++)
        if (group_names(s->more_tmpl[i], s->more_len[i],
                        r->text.p + r->l[L].off, r->l[L].len))
            return true;
    return false;
}

/* Whether the n bytes at t are a line of text, or the template a repeat
 * marker of it names (an exact group's: the line itself). */
static bool text_has_line(const buf_t *text, const char *t, size_t n)
{
    /* a long line is shown by its first bytes, after a `cut` marker */
    size_t head = n > SQ_LINE_SHOW_MAX ? SQ_LINE_SHOW_EDGE - UTF8_SEQ_MAX : 0;
    for (const char *p = text->p, *e; p && (e = strchr(p, '\n')); p = e + 1) {
        size_t len = (size_t)(e - p);
        if ((len == n && !memcmp(p, t, n)) ||
            (head && len >= head && !memcmp(p, t, head) &&
             p - text->p >= 7 && !memcmp(p - 7, " bytes\n", 7)))
            return true;
        const char *q = strncmp(p, "[rein] repeat ", 14)
                            ? NULL
                            : memmem(p, len, "× \"", strlen("× \""));
        if (q) {
            const char *tm = q + strlen("× \""), *l = NULL;
            for (const char *x = tm;
                 (x = memmem(x, (size_t)(e - x), "\" (line", 7)); x++)
                l = x;
            if (l && group_names(tm, (size_t)(l - tm), t, n))
                return true;
        }
    }
    return false;
}

static void view(const grammar_set_t *set, const char *command,
                 const buf_t *raw, size_t budget, buf_t *out)
{
    tu_condense(set, command, raw, false, budget, 1, out);
}

/* "1-4, 7, 9, +K more" (up to the closing parenthesis) into listed; a
 * marker with members past its list keeps its template, tmpl[0..tn). */
static void parse_ranges(const char *p, const char *end, const char *tmpl,
                         size_t tn, struct seen *s)
{
    while (p < end && *p != ')') {
        if (*p == '+') {
            s->more = true;
            ASSERT_TRUE(s->nmore < PLAN_MORE_MAX);
            s->more_tmpl[s->nmore] = tmpl;
            s->more_len[s->nmore++] = tn;
            return;
        }
        char *q;
        unsigned long long a = strtoull(p, &q, 10), b = a;
        if (q < end && *q == '-')
            b = strtoull(q + 1, &q, 10);
        for (unsigned long long k = a; k <= b && k < s->n; k++)
            s->listed[k] = 1;
        p = q;
        while (p < end && (*p == ',' || *p == ' '))
            p++;
    }
}

/* A gap marker: lines a..b, h hazards. */
struct gap {
    size_t a, b;
    unsigned long h;
};

/* A line shown as its start alone (a hazard a budget cut,
 * SQ_HAZARD_PART_MIN): its `omitted part` marker's bytes run to the end of
 * the line's text, when the line was plain text (its bytes in the log are
 * its text and a LF, or CR LF). */
static void seen_part_end(const struct ref *r, size_t L,
                          unsigned long long end, buf_t *why)
{
    const struct ref_line *l = &r->l[L];
    uint64_t raw = l->raw_end - l->raw_start;
    if (raw >= l->len && raw <= l->len + 2 && end != l->raw_start + l->len)
        buf_printf(why, "line %zu shown by its start: the part omitted ends "
                        "at byte %llu, the line at %llu\n", L, end,
                   (unsigned long long)(l->raw_start + l->len));
}

/*
 * Reads a view against the input: which lines it shows and lists, and its
 * gaps.  Appends what is wrong with the view itself (a raw line not in the
 * input in order) to why.
 */
static void seen_read(const struct ref *r, const buf_t *out, struct seen *s,
                      struct gap **gaps, size_t *ngaps, buf_t *why)
{
    s->n = r->n + 1;
    s->more = false;
    s->nmore = 0;
    s->shown = calloc(s->n, 1);
    s->listed = calloc(s->n, 1);
    uint8_t *unmarked = calloc(s->n, 1);
    ASSERT_TRUE(s->shown && s->listed && unmarked);
    *gaps = NULL;
    *ngaps = 0;
    size_t next = 1, capg = 0, piece = 0;
    /* the line of the last `omitted part` marker, and where its bytes
     * end, until the line's tail follows it (a long line's) or not (a
     * hazard's start alone, cut for a budget: the rest is the line's) */
    size_t part = 0;
    unsigned long long part_end = 0;
    const char *p = out->p, *end = p + out->len;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        ASSERT_TRUE(e != NULL);
        size_t n = (size_t)(e - p);
        unsigned long long N, a, b, A, B, h = 0;
        if (part && !(sscanf(p, "[rein] cut line %llu", &a) == 1 &&
                      a == part))
            seen_part_end(r, part, part_end, why);
        part = 0;
        if (n >= 7 && !memcmp(p, EMIT_PREFIX, 7)) {
            const char *semi = memmem(p, n, "; ", 2);
            if (semi)
                h = strtoull(semi + 2, NULL, 10);
            if (sscanf(p, "[rein] omitted %llu lines (lines %llu-%llu", &N, &a,
                       &b) == 3 ||
                (sscanf(p, "[rein] omitted %llu line (line %llu", &N, &a) == 2 &&
                 (b = a))) {
                if (a < next || b < a || N != b - a + 1 || b > r->n)
                    buf_printf(why, "gap %llu-%llu (%llu lines) after line "
                                    "%zu\n", a, b, N, next - 1);
                /* its bytes are exactly its lines' in the log (the last
                 * line's, to the log's end: what follows it prints no
                 * line, a terminal's closing escapes) */
                const char *by = memmem(p, n, ", bytes ", 8);
                unsigned long long want = b < r->n   ? r->l[b].raw_end
                                          : b == r->n ? r->raw_len : 0;
                if (by && b <= r->n && a >= 1 &&
                    (sscanf(by, ", bytes %llu-%llu", &A, &B) != 2 ||
                     A != r->l[a].raw_start || B != want))
                    buf_printf(why, "gap %llu-%llu: bytes %llu-%llu, its "
                                    "lines are bytes %llu-%llu\n", a, b, A, B,
                               (unsigned long long)r->l[a].raw_start, want);
                for (size_t L = next; L < a && L <= r->n; L++)
                    unmarked[L] = 1;
                if (*ngaps == capg) {
                    capg = capg ? capg * 2 : 16;
                    *gaps = realloc(*gaps, capg * sizeof **gaps);
                    ASSERT_TRUE(*gaps != NULL);
                }
                (*gaps)[(*ngaps)++] = (struct gap){a, b, (unsigned long)h};
                next = b + 1;
            } else if (sscanf(p, "[rein] omitted part of line %llu (bytes "
                                 "%llu-%llu", &a, &A, &B) == 3) {
                /* the middle of a long line shown: within its bytes */
                if (a < 1 || a > r->n || A > B || A < r->l[a].raw_start ||
                    B > r->l[a].raw_end)
                    buf_printf(why, "part of line %llu: bytes %llu-%llu, "
                               "not in its bytes\n", a, A, B);
                /* the line's head is shown: its tail may follow */
                next = a + 1;
                part = a <= r->n ? a : 0;
                part_end = B;
            } else if (sscanf(p, "[rein] cut line %llu", &a) == 1) {
                /* the raw text after it is a piece of line a */
                if (a < next && a + 1 != next)
                    buf_printf(why, "cut line %llu after line %zu\n", a,
                               next - 1);
                piece = a;
            } else if (!strncmp(p, "[rein] repeat ", 14)) {
                const char *l = NULL;
                for (const char *q = p; (q = memmem(q, (size_t)(e - q), "\" (line", 7));
                     q++)
                    l = q;
                const char *t = strstr(p, "× \"");
                ASSERT_TRUE(l != NULL && t != NULL && t < l);
                t += strlen("× \"");
                size_t tn = (size_t)(l - t);
                l += 7;
                while (l < e && *l != ' ')
                    l++;
                parse_ranges(l + 1, e, t, tn, s);
            }
        } else if (piece) {
            const char *t = p;
            size_t tn = n;
            if (n >= 6 && !memcmp(p, EMIT_ESCAPE, 6) &&
                emit_raw_escaped(p + 6, n - 6))
                t += 6, tn -= 6;
            /* a piece is the line's start or its end, no middle */
            const char *lt = piece <= r->n ? r->text.p + r->l[piece].off : "";
            size_t ln = piece <= r->n ? r->l[piece].len : 0;
            bool head = tn <= ln && !memcmp(lt, t, tn);
            if (!head && (tn > ln || memcmp(lt + ln - tn, t, tn)))
                buf_printf(why, "piece not an end of line %zu: \"%.*s\"\n",
                           piece, (int)(n < 80 ? n : 80), p);
            /* ... cut between characters */
            else if (head ? tn < ln && ((unsigned char)lt[tn] & 0xC0) == 0x80
                          : tn && ((unsigned char)t[0] & 0xC0) == 0x80)
                buf_printf(why, "piece of line %zu cut inside a character\n",
                           piece);
            for (size_t k = next; k < piece && k <= r->n; k++)
                unmarked[k] = 1;
            if (piece <= r->n)
                s->shown[piece] = 1;
            next = piece + 1;
            piece = 0;
        } else {
            const char *t = p;
            size_t tn = n;
            if (n >= 6 && !memcmp(p, EMIT_ESCAPE, 6) &&
                emit_raw_escaped(p + 6, n - 6))
                t += 6, tn -= 6;
            size_t L = next;
            while (L < s->n && (r->l[L].drawn_over || r->l[L].len != tn ||
                                memcmp(r->text.p + r->l[L].off, t, tn)))
                L++;
            if (L == s->n) {
                buf_printf(why, "raw line not in the input after line %zu: "
                                "\"%.*s\"\n", next - 1, (int)n, p);
            } else {
                for (size_t k = next; k < L; k++)
                    unmarked[k] = 1;
                s->shown[L] = 1;
                next = L + 1;
            }
        }
        p = e + 1;
    }
    if (part)
        seen_part_end(r, part, part_end, why);
    for (size_t k = next; k <= r->n; k++)
        unmarked[k] = 1;
    /* A line neither shown nor in a gap is noise (the noise marker counts
     * it) or a member of a repeat group: listed, or, when a marker counts
     * members it does not list, a hazard, an outcome or a grammar's dedup
     * line.  Judged once the view is read: a repeat marker follows the
     * lines it folds. */
    for (size_t k = 1; k <= r->n; k++) {
        cls_kind_t kd = r->l[k].kind;
        if (unmarked[k] && kd != CLS_NOISE && !seen_grouped(r, s, k) &&
            !(s->more && kd == CLS_OUTCOME))
            buf_printf(why, "line %zu is in no marker: \"%.*s\"\n", k,
                       (int)r->l[k].len, r->text.p + r->l[k].off);
    }
    free(unmarked);
}

/*
 * Reads one view (seen_read) and judges what holds at every budget: every
 * error line is shown, in a repeat group the view names, or in a gap that
 * counts hazards (with must_show, one of the first two); and each gap's
 * `; N hazards` counts exactly the hazard lines in it: under a budget all
 * of them, else those no repeat marker names (docs/markers.md).  The
 * caller frees s->shown and s->listed.
 */
static void plan_judge(const struct ref *r, const buf_t *out, bool budgeted,
                       bool must_show, struct seen *s, buf_t *why)
{
    struct gap *gaps;
    size_t ng, gi = 0;
    seen_read(r, out, s, &gaps, &ng, why);
    for (size_t L = 1; L <= r->n; L++) {
        while (gi < ng && gaps[gi].b < L)
            gi++;
        bool in_gap = gi < ng && gaps[gi].a <= L;
        if (r->l[L].error && !s->shown[L] && !seen_grouped(r, s, L) &&
            (must_show || !(in_gap && gaps[gi].h)))
            buf_printf(why, "error line %zu dropped: \"%.*s\"\n", L,
                       (int)r->l[L].len, r->text.p + r->l[L].off);
    }
    for (size_t g = 0; g < ng; g++) {
        unsigned long all = 0;
        for (size_t L = gaps[g].a; L <= gaps[g].b && L <= r->n; L++)
            all += r->l[L].hazard && (budgeted || !seen_grouped(r, s, L));
        if (gaps[g].h != all)
            buf_printf(why, "gap %zu-%zu says %lu hazards; it holds %lu\n",
                       gaps[g].a, gaps[g].b, gaps[g].h, all);
    }
    free(gaps);
}

/*
 * The property over one input: the view capped to the input (rein
 * squash's, the smallest that keeps every fact) and the one at
 * exec_command's default budget show every error line (the latter when
 * the unplanned view fits it); then views at budgets 0 .. past the
 * unplanned view's size, each judged (plan_judge), and each pair of
 * neighbours for a hazard shown at the smaller budget and not at the
 * larger.  Appends every failure to fails (named by `name`).
 */
static void plan_check(const grammar_set_t *set, const char *name,
                       const char *command, const buf_t *raw, buf_t *fails)
{
    struct ref r;
    ref_build(set, command, raw, &r);
    if (r.err) {
        ref_free(&r);
        return; /* cut lines: numbering by pieces is not modelled */
    }
    buf_t out = BUF_INIT, why = BUF_INIT;
    struct seen s;
    view(set, command, raw, (size_t)1 << 40, &out);
    size_t full = out.len;
    static const char *const what[] = {"the input cap", "the default budget"};
    for (int k = 0; k < 2 && !why.len; k++) {
        view(set, command, raw, k ? PLAN_DEFAULT_BUDGET : 0, &out);
        plan_judge(&r, &out, k == 1, k == 0 || full <= PLAN_DEFAULT_BUDGET,
                   &s, &why);
        if (why.len)
            buf_printf(fails, "== %s (%s), %s:\n%s-- view:\n%s", name,
                       command, what[k], why.p, out.p);
        free(s.shown);
        free(s.listed);
    }
    /* streamed (rein run): every error line, as it comes or folded */
    tu_condense(set, command, raw, true, 0, 1, &out);
    for (size_t L = 1; L <= r.n && !why.len; L++)
        if (r.l[L].error &&
            !text_has_line(&out, r.text.p + r.l[L].off, r.l[L].len))
            buf_printf(fails, "== %s (%s), streamed: error line %zu dropped: "
                              "\"%.*s\"\n-- view:\n%s", name, command, L,
                       (int)r.l[L].len, r.text.p + r.l[L].off, out.p);
    size_t step = full <= PLAN_EVERY_BYTE_MAX ? 1 : full / PLAN_BUDGETS + 1;
    uint8_t *prev = NULL;
    size_t prev_b = 0;
    for (size_t b = 0; b <= full + step && !why.len; b += step) {
        view(set, command, raw, b ? b : 1, &out);
        plan_judge(&r, &out, true, false, &s, &why);
        /* A view over its budget (one too small even for the markers of
         * nothing shown) is not one the budget allows: it is not
         * compared, but once a budget is met, every larger one is. */
        bool fits = out.len <= (b ? b : 1);
        if (prev && !fits)
            buf_printf(&why, "%zu bytes, over the budget; budget %zu was met\n",
                       out.len, prev_b);
        for (size_t L = 1; prev && L <= r.n; L++)
            if (r.l[L].hazard && prev[L] && !s.shown[L])
                buf_printf(&why, "hazard line %zu shown at budget %zu, not at "
                                 "%zu: \"%.*s\"\n", L, prev_b, b,
                           (int)r.l[L].len, r.text.p + r.l[L].off);
        if (why.len) /* the first budget that fails says enough */
            buf_printf(fails, "== %s (%s), budget %zu:\n%s-- view:\n%s", name,
                       command, b, why.p, out.p);
        if (fits) {
            free(prev);
            prev = s.shown;
            prev_b = b;
        } else {
            free(s.shown);
        }
        free(s.listed);
    }
    free(prev);
    buf_free(&out);
    buf_free(&why);
    ref_free(&r);
}

static void plan_fail_if(buf_t *fails)
{
    if (fails->len)
        test_fail(__FILE__, __LINE__, "%s", fails->p);
    buf_free(fails);
}

/* Every case of a corpus-shaped directory: dir/<case>/{case.json,output}
 * (per_dir) or dir/<tool>/<name>.{json,out}. */
static void plan_dir(const grammar_set_t *set, const char *dir, bool per_dir,
                     buf_t *fails, size_t *cases)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    const struct dirent *e;
    while ((e = readdir(d))) {
        char p[PATH_MAX + 600], q[PATH_MAX + 600], cmd[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (!per_dir) {
            struct stat st;
            if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
                plan_dir(set, p, true, fails, cases);
            continue;
        }
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        snprintf(q, sizeof q, "%.*s.out", (int)(strlen(p) - 5), p);
        json_error_t je;
        json_t *cs = json_load_file(p, 0, &je);
        buf_t raw = BUF_INIT;
        if (cs && tu_read_file(q, &raw)) {
            tu_case_command(cs, cmd, sizeof cmd);
            plan_check(set, q, cmd, &raw, fails);
            ++*cases;
        }
        buf_free(&raw);
        json_decref(cs);
    }
    closedir(d);
}

TEST_T(plan_fixtures_hazards_grow_with_the_budget_and_no_error_is_dropped, 300)
{
    grammar_set_t *set = tu_shipped_set();
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/../tests/fixtures", test_build_dir());
    buf_t fails = BUF_INIT;
    size_t cases = 0;
    plan_dir(set, dir, false, &fails, &cases);
    ASSERT_TRUE(cases > 0);
    grammar_set_free(set);
    plan_fail_if(&fails);
}

TEST_T(plan_corpus_hazards_grow_with_the_budget_and_no_error_is_dropped, 300)
{
    char dir[PATH_MAX];
    const char *env = getenv("REIN_CORPUS_DIR");
    if (env && *env)
        snprintf(dir, sizeof dir, "%s", env);
    else
        snprintf(dir, sizeof dir, "%s/../../shared/corpus/condense",
                 test_build_dir());
    DIR *d = opendir(dir);
    if (!d)
        SKIP("no corpus at %s (set REIN_CORPUS_DIR)", dir);
    grammar_set_t *set = tu_shipped_set();
    buf_t fails = BUF_INIT;
    size_t cases = 0;
    const struct dirent *e;
    while ((e = readdir(d))) {
        char p[PATH_MAX + 600], cmd[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s/case.json", dir, e->d_name);
        json_error_t je;
        json_t *cs = json_load_file(p, 0, &je);
        buf_t raw = BUF_INIT;
        snprintf(p, sizeof p, "%s/%s/output", dir, e->d_name);
        if (cs && tu_read_file(p, &raw)) {
            tu_case_command(cs, cmd, sizeof cmd);
            plan_check(set, p, cmd, &raw, &fails);
            cases++;
        }
        buf_free(&raw);
        json_decref(cs);
    }
    closedir(d);
    ASSERT_TRUE(cases > 0);
    grammar_set_free(set);
    plan_fail_if(&fails);
}

/* ------------------------------------------------------ generated */

static uint32_t gen(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* Output a build or a test run could print: gcc diagnostics with their
 * excerpt and caret (some after an include chain, the gcc grammar's
 * `lead` lines), Python tracebacks (some chained), copies of one error,
 * outcomes, noise and plain lines, and include chains that lead to no
 * diagnostic, in a mix the seed picks.  The chains are chosen from values
 * drawn anyway, so the rest of each seed's output is as it was. */
static void gen_mixed(uint32_t seed, unsigned least, unsigned spread,
                      buf_t *in)
{
    uint32_t s = seed;
    unsigned n = least + gen(&s) % spread;
    for (unsigned i = 0; i < n; i++) {
        unsigned k = gen(&s) % 100;
        if (k < 15) {
            unsigned f = gen(&s) % 4, l = 1 + gen(&s) % 90;
            if (l % 3 == 0)
                buf_printf(in, "In file included from src/m%u.h:%u,\n"
                               "                 from src/top%u.c:1:\n",
                           f, l % 7 + 1, l % 5);
            else if (l % 5 == 0)
                buf_printf(in, "src/m%u.c: In function 'f%u':\n", f, l);
            buf_printf(in, "src/m%u.c:%u:%u: %s: '%c' undeclared\n"
                           "   %u |     return %c + 1;\n"
                           "      |            ^\n",
                       f, l, 1 + gen(&s) % 20,
                       gen(&s) % 3 ? "error" : "warning",
                       'a' + (char)(gen(&s) % 4), l, 'a' + (char)(gen(&s) % 4));
        } else if (k < 22) {
            unsigned depth = 1 + gen(&s) % 4;
            buf_append_str(in, "Traceback (most recent call last):\n");
            for (unsigned d = 0; d < depth; d++)
                buf_printf(in, "  File \"/app/mod%u.py\", line %u, in f%u\n"
                               "    step%u()\n", d, 10 + d, d, d);
            buf_printf(in, "%s: bad value %u\n",
                       gen(&s) % 2 ? "ValueError" : "KeyError", gen(&s) % 5);
            if (gen(&s) % 3 == 0)
                buf_append_str(in, "\nDuring handling of the above exception, "
                                   "another exception occurred:\n\n");
        } else if (k < 30) {
            buf_append_str(in, "error: connection refused\n");
        } else if (k < 36) {
            buf_printf(in, "test_%u ... ok\n", gen(&s) % 50);
        } else if (k < 40) {
            buf_printf(in, "%u passed, %u failed in 0.%us\n", gen(&s) % 40,
                       gen(&s) % 3, gen(&s) % 9);
        } else if (k < 48) {
            buf_append_str(in, "\n");
        } else if (k < 52) {
            buf_append_str(in, "==========\n");
        } else {
            if (i % 7 == 0)
                buf_printf(in, "In file included from src/lone%u.c:2:\n", i);
            buf_printf(in, "step %u: compiling unit_%u\n", i, gen(&s) % 30);
        }
    }
}

TEST_T(plan_generated_hazards_grow_with_the_budget_and_no_error_is_dropped,
       300)
{
    grammar_set_t *set = tu_shipped_set();
    static const char *const cmds[] = {"gcc -c m.c", "python3 app.py",
                                       "make -k", "tool"};
    buf_t fails = BUF_INIT;
    /* the last seeds make outputs of more than SQ_PLAN_EXACT_MAX items,
     * whose hazards the plan sizes by a bound */
    for (uint32_t seed = 1; seed <= 66 && !fails.len; seed++) {
        buf_t in = BUF_INIT;
        gen_mixed(seed, seed <= 60 ? 5 : 1200, seed <= 60 ? 120 : 600, &in);
        char name[32];
        snprintf(name, sizeof name, "seed %u", seed);
        plan_check(set, name, cmds[seed % 4], &in, &fails);
        buf_free(&in);
    }
    grammar_set_free(set);
    plan_fail_if(&fails);
}

/* Long lines among the rest: an error line and a JSON line of some
 * kilobytes, each past SQ_LINE_SHOW_MAX (shown as their first and last
 * SQ_LINE_SHOW_EDGE bytes, the middle named), one at the limit (shown
 * whole), at every budget: a larger budget never shows fewer hazard
 * lines, none is dropped unnamed, and the markers' bytes are the lines'. */
TEST_T(plan_long_lines_hazards_grow_with_the_budget, 300)
{
    grammar_set_t *set = tu_shipped_set();
    static const char *const cmds[] = {"python3 app.py", "tool", "make -k"};
    buf_t fails = BUF_INIT;
    for (uint32_t seed = 1; seed <= 6 && !fails.len; seed++) {
        buf_t in = BUF_INIT;
        gen_mixed(seed, 5, 30, &in);
        size_t sizes[] = {SQ_LINE_SHOW_MAX + 1 + seed * 997,
                          SQ_LINE_SHOW_MAX, 3 * SQ_LINE_SHOW_MAX + seed};
        for (size_t k = 0; k < 3; k++) {
            const char *head = k == 1 ? "RuntimeError: stuck " :
                               k == 0 ? "error: bad payload " : "{\"error\":\"";
            buf_append_str(&in, head);
            for (size_t i = strlen(head); i < sizes[k]; i++)
                buf_append_byte(&in, 'a' + (char)((i * seed) % 26));
            buf_append_byte(&in, '\n');
            gen_mixed(seed * 31 + (uint32_t)k, 2, 10, &in);
        }
        char name[32];
        snprintf(name, sizeof name, "long lines, seed %u", seed);
        plan_check(set, name, cmds[seed % 3], &in, &fails);
        buf_free(&in);
    }
    grammar_set_free(set);
    plan_fail_if(&fails);
}

/* Long hazard lines under SQ_LINE_SHOW_MAX (errors and warnings of a few
 * hundred bytes to a few kilobytes, some of three-byte characters) among
 * the rest: at a budget too small for them whole they are shown cut, as
 * their starts (SQ_HAZARD_PART_MIN at least, whole characters, the rest's
 * bytes named), and still a larger budget never shows fewer hazard lines
 * and none is dropped unnamed. */
TEST_T(plan_long_hazards_cut_and_grow_with_the_budget, 300)
{
    grammar_set_t *set = tu_shipped_set();
    static const char *const cmds[] = {"gcc -c m.c", "tool", "make -k"};
    static const char *const heads[] = {"src/big.c:7:1: error: payload ",
                                        "error: request failed ",
                                        "src/w.c:3:2: warning: wide "};
    static const char *const fills[] = {"abcdefgh", "\xe2\x82\xac", "xy"};
    buf_t fails = BUF_INIT;
    size_t cut = 0;
    for (uint32_t seed = 1; seed <= 12 && !fails.len; seed++) {
        buf_t in = BUF_INIT;
        uint32_t s = seed;
        gen_mixed(seed, 3, 20, &in);
        for (unsigned k = 0, n = 1 + gen(&s) % 4; k < n; k++) {
            size_t len = SQ_HAZARD_PART_MIN / 2 + gen(&s) % 3000, at = in.len;
            buf_printf(&in, "%s%u ", heads[(seed + k) % 3], k + 1);
            while (in.len - at < len)
                buf_append_str(&in, fills[gen(&s) % 3]);
            buf_append_byte(&in, '\n');
            gen_mixed(seed * 17 + k, 2, 12, &in);
        }
        char name[40];
        snprintf(name, sizeof name, "long hazards, seed %u", seed);
        plan_check(set, name, cmds[seed % 3], &in, &fails);
        /* and the cut copies are there to judge: a budget of half the
         * view with every line cuts some */
        buf_t out = BUF_INIT;
        view(set, cmds[seed % 3], &in, (size_t)1 << 40, &out);
        view(set, cmds[seed % 3], &in, out.len / 2, &out);
        cut += strstr(out.p, "[rein] cut line ") != NULL;
        buf_free(&out);
        buf_free(&in);
    }
    grammar_set_free(set);
    plan_fail_if(&fails);
    ASSERT_INT(cut, >=, 6);
}

/* ------------------------------------------------------ a real build */

/* C files the audit build compiles, and what each one holds: three errors
 * and three warnings with distinct names, so nothing folds. */
#define PLAN_BUILD_FILES 30

TEST_T(plan_a_real_make_k_j2_of_many_failing_files, 300)
{
    char dir[PATH_MAX], p[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/build", test_tmpdir());
    ASSERT_EQ(mkdir(dir, 0700), 0);
    buf_t mk = BUF_INIT, src = BUF_INIT, raw = BUF_INIT, fails = BUF_INIT;
    ASSERT_OK(buf_append_str(&mk, "CFLAGS = -Wall -Wextra\nall:"));
    for (int i = 0; i < PLAN_BUILD_FILES; i++) {
        ASSERT_OK(buf_printf(&mk, " unit%d.o", i));
        buf_reset(&src);
        ASSERT_OK(buf_printf(&src,
            "static int helper_%d(int x) { return x; }\n"
            "int total_%d(int a) {\n"
            "    int unused_%d;\n"
            "    return compute_%d(a) + undeclared_%d;\n"
            "}\n"
            "void fill_%d(void) { struct missing_%d s; }\n"
            "int pick_%d(int a, int b) { if (a > b) return a; }\n"
            "void call_%d(void) { total_%d(1, 2); }\n",
            i, i, i, i, i, i, i, i, i, i));
        snprintf(p, sizeof p, "%s/unit%d.c", dir, i);
        FILE *f = fopen(p, "w");
        ASSERT_TRUE(f != NULL);
        ASSERT_EQ(fwrite(src.p, 1, src.len, f), src.len);
        fclose(f);
    }
    ASSERT_OK(buf_append_str(&mk, "\n"));
    snprintf(p, sizeof p, "%s/Makefile", dir);
    FILE *f = fopen(p, "w");
    ASSERT_TRUE(f != NULL);
    ASSERT_EQ(fwrite(mk.p, 1, mk.len, f), mk.len);
    fclose(f);
    const char *argv[] = {"/bin/sh", "-c", "exec make -k -j2 2>&1", NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.cwd = dir;
    int code = tu_run(&o, &raw);
    if (code == 127 || !strstr(raw.p ? raw.p : "", ": error: "))
        SKIP("no make and cc to build with (exit %d)", code);
    ASSERT_EQ(code, 2);
    grammar_set_t *set = tu_shipped_set();
    plan_check(set, "make -k -j2", "make -k -j2", &raw, &fails);
    /* Larger than the default budget, yet its error lines alone fit: at
     * that budget every one is shown. */
    struct ref r;
    ref_build(set, "make -k -j2", &raw, &r);
    buf_t out = BUF_INIT, why = BUF_INIT;
    view(set, "make -k -j2", &raw, (size_t)1 << 40, &out);
    ASSERT_TRUE(out.len > PLAN_DEFAULT_BUDGET);
    view(set, "make -k -j2", &raw, PLAN_DEFAULT_BUDGET, &out);
    ASSERT_TRUE(out.len <= PLAN_DEFAULT_BUDGET);
    struct seen s;
    plan_judge(&r, &out, true, true, &s, &why);
    size_t errors = 0;
    for (size_t L = 1; L <= r.n; L++)
        errors += r.l[L].error;
    ASSERT_INT(errors, >=, 2 * PLAN_BUILD_FILES);
    if (why.len)
        buf_printf(&fails, "== the default budget:\n%s-- view:\n%s", why.p,
                   out.p);
    free(s.shown);
    free(s.listed);
    ref_free(&r);
    grammar_set_free(set);
    buf_free(&out);
    buf_free(&why);
    buf_free(&mk);
    buf_free(&src);
    buf_free(&raw);
    plan_fail_if(&fails);
}
