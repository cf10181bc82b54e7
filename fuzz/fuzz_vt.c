/*
 * fuzz_vt.c — the VT stripper and the whole squasher on arbitrary bytes.
 *
 * The first byte picks the chunk size.  Checked: every line is valid
 * UTF-8 and at most SQ_LINE_MAX bytes; the pieces of a cut line come in
 * a row, each but the last with `more`, and the last always comes;
 * every byte is in one line's range (pieces of one share it), the
 * lines' ranges in order; a line
 * stands on a row that gave one already, the next new row, or aside;
 * chunking changes nothing (same line
 * count and text bytes as one feed); the squasher never exceeds its input
 * cap by more than its mandatory markers and ends every line in '\n';
 * streamed, with quiet spells between chunks, it sends whole lines and
 * counts what it sent.  Under a budget (one picked from the input) its
 * view is valid UTF-8, whole lines, and every `cut` marker's count is
 * the bytes of the piece after it: a hazard cut for the budget is never
 * cut inside a character.
 * The redraw hold (redraw.h), fed the stripper's lines, hands each on
 * once, in line order but for the frames drawn over that it hands on as
 * they are replaced (the pieces of a cut line together), whatever its
 * reach; every frame it drops is one keep refused, every one it keeps
 * one keep wanted, and a frame of the cursor's row that the stripper
 * hands out (sq_line_t frame, vt_set_keep, asked with the same keep) is
 * one keep wanted and leaves kept.
 * The terminal's view (vtview.h), taken after every chunk, is valid UTF-8
 * each time and counts every byte; for text that nothing draws over (no
 * control byte but LF, no `[` that could make a marker look-alike), the
 * takes joined are the one take of the whole.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "squash/emit.h"
#include "squash/redraw.h"
#include "squash/squash.h"
#include "squash/vt.h"
#include "squash/vtview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
    uint64_t lines, bytes, hash;
    uint64_t more; /* the line whose next piece is due, 0: none */
    uint64_t raw_start, raw_end; /* the last line's bytes */
    uint64_t rows;    /* rows that gave a line */
    redraw_t *rd;     /* the hold the lines go on to */
    uint64_t held_out, held_last; /* lines it handed on, the last one's */
    bool held_cut;    /* ... which was a piece of a cut line */
};

/* Keeps every other frame drawn over in its turn: both ways out run. */
static bool fz_keep(const sq_line_t *l, void *d)
{
    (void)d;
    return l->lineno & 1;
}

static int fz_held(const sq_line_t *l, redraw_how_t how, void *d)
{
    struct fz *f = d;
    f->held_out++;
    if ((how == REDRAW_DROPPED) == fz_keep(l, d) && how != REDRAW_SHOWN)
        abort(); /* dropped though kept, or kept though not */
    if (l->frame && how != REDRAW_KEPT)
        abort(); /* a frame the stripper kept leaves kept */
    if (how == REDRAW_DROPPED)
        return 0; /* handed on as it is replaced: out of order */
    if (l->lineno < f->held_last ||
        (l->lineno == f->held_last && !(l->cut && f->held_cut)))
        abort();
    f->held_last = l->lineno;
    f->held_cut = l->cut;
    return 0;
}

static int fz_line(const sq_line_t *l, void *d)
{
    struct fz *f = d;
    if (l->len > SQ_LINE_MAX || utf8_valid_prefix(l->text, l->len) != l->len)
        abort();
    if (memchr(l->text, '\n', l->len))
        abort();
    if (l->kind == SQ_LINE_PARTIAL && l->lineno == 0)
        abort();
    if (l->frame && !fz_keep(l, d))
        abort(); /* the stripper hands out only frames keep wants */
    if ((l->more && !l->cut) || (f->more && l->lineno != f->more))
        abort();
    /* Pieces cut from one repaired line share its range (vt_deliver). */
    if ((l->raw_start != f->raw_end &&
         !(f->more && l->raw_start == f->raw_start)) ||
        l->raw_end < l->raw_start)
        abort();
    f->raw_start = l->raw_start;
    f->raw_end = l->raw_end;
    if (l->row != SQ_ROW_ASIDE && l->row > f->rows)
        abort();
    if (l->row == f->rows)
        f->rows++;
    f->more = l->more ? l->lineno : 0;
    if (redraw_put(f->rd, l) < 0)
        abort();
    f->lines++;
    f->bytes += l->len;
    for (size_t i = 0; i < l->len; i++)
        f->hash = (f->hash ^ (unsigned char)l->text[i]) * 1099511628211ull;
    f->hash = (f->hash ^ (uint64_t)l->kind) * 1099511628211ull;
    f->hash = (f->hash ^ (uint64_t)l->more) * 1099511628211ull;
    return 0;
}

/* The squasher's sink: each send is one or more whole lines. */
static void fz_collect(const char *text, size_t len, void *data)
{
    if (!len || text[len - 1] != '\n')
        abort();
    buf_append(data, text, len);
}

static void fz_run(const uint8_t *p, size_t n, size_t chunk, unsigned reach,
                   unsigned cols, struct fz *f)
{
    vt_t *vt;
    if (redraw_new(reach, fz_held, fz_keep, f, &f->rd) < 0 ||
        vt_new(fz_line, f, &vt) < 0)
        abort();
    vt_set_cols(vt, cols);
    vt_set_keep(vt, fz_keep, f);
    for (size_t i = 0; i < n; i += chunk)
        if (vt_feed(vt, p + i, n - i < chunk ? n - i : chunk, 0) < 0)
            abort();
    if (vt_finish(vt) < 0 || f->more || redraw_flush(f->rd) < 0 ||
        f->held_out != f->lines)
        abort();
    vt_free(vt);
    redraw_free(f->rd);
}

/* The view of p[0..n) taken after every chunk, joined into *out. */
static void fz_view(const uint8_t *p, size_t n, size_t chunk, buf_t *out)
{
    vtview_t *v;
    buf_t t = BUF_INIT;
    if (vtview_new(&v) < 0)
        abort();
    for (size_t i = 0; i < n; i += chunk) {
        buf_reset(&t);
        if (vtview_feed(v, p + i, n - i < chunk ? n - i : chunk) < 0 ||
            vtview_take(v, &t, NULL) < 0)
            abort();
        if (utf8_valid_prefix(t.p ? t.p : "", t.len) != t.len)
            abort();
        buf_append(out, t.p ? t.p : "", t.len);
    }
    if (vtview_offset(v) != n)
        abort();
    buf_free(&t);
    vtview_free(v);
}

/* A budgeted view: valid UTF-8 in whole lines, and each `cut` marker
 * followed by a piece of the bytes it says (after rein's escape prefix,
 * which is not counted). */
static void fz_check_budgeted(const buf_t *out)
{
    const char *q = out->p ? out->p : "", *end = q + out->len;
    if (utf8_valid_prefix(q, out->len) != out->len ||
        (out->len && end[-1] != '\n'))
        abort();
    unsigned long long line, at;
    for (const char *e; q < end; q = e + 1) {
        e = memchr(q, '\n', (size_t)(end - q));
        if (!e)
            abort();
        if (sscanf(q, "[rein] cut line %llu at %llu bytes", &line, &at) != 2)
            continue;
        const char *t = e + 1, *te = memchr(t, '\n', (size_t)(end - t));
        if (!te)
            abort();
        size_t tn = (size_t)(te - t);
        if (tn >= strlen(EMIT_ESCAPE) &&
            !memcmp(t, EMIT_ESCAPE, strlen(EMIT_ESCAPE)) &&
            emit_raw_escaped(t + strlen(EMIT_ESCAPE),
                             tn - strlen(EMIT_ESCAPE)))
            tn -= strlen(EMIT_ESCAPE);
        if (tn != at)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] % 17 + 1;
    /* half the inputs on a terminal of a known width (moves count the
     * rows a wide line wraps to), 20 to 83 columns */
    unsigned cols = data[0] & 0x80 ? 20u + (data[0] & 0x3f) : 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    struct fz a = {0}, b = {0};
    fz_run(p, n, n ? n : 1, REDRAW_REACH, cols, &a);
    fz_run(p, n, chunk, 0, cols, &b);
    if (a.lines != b.lines || a.bytes != b.bytes || a.hash != b.hash)
        abort();

    buf_t whole = BUF_INIT, parts = BUF_INIT;
    fz_view(p, n, n ? n : 1, &whole);
    fz_view(p, n, chunk, &parts);
    bool plain = true;
    for (size_t i = 0; i < n && plain; i++)
        plain = p[i] == '\n' || (p[i] >= 0x20 && p[i] != 0x7f && p[i] != '[');
    if (plain && (whole.len != parts.len ||
                  memcmp(whole.p ? whole.p : "", parts.p ? parts.p : "",
                         whole.len) != 0))
        abort();
    buf_free(&whole);
    buf_free(&parts);

    sq_opts_t o;
    memset(&o, 0, sizeof o);
    o.command = "fuzz";
    o.cols = cols;
    o.log_path = "/l";
    o.grammars = NULL;
    o.grammar_dirs = (const char *const[]){NULL};
    buf_t out = BUF_INIT;
    if (squash_buffer(&o, p, n, 1, 0, &out) < 0)
        abort();
    if (out.len && out.p[out.len - 1] != '\n')
        abort();
    buf_free(&out);

    /* under a budget of 160 bytes (the markers alone) to some 6 KB */
    o.budget_bytes = 160 + (size_t)(n ? p[n - 1] : 0) * 24;
    if (squash_buffer(&o, p, n, 1, 0, &out) < 0)
        abort();
    fz_check_budgeted(&out);
    buf_free(&out);
    o.budget_bytes = 0;

    /* Streamed, fed in chunks with quiet spells between some of them
     * (a small output's lines wait, then go out): every send is whole
     * lines, and the counts add up. */
    squash_t *sq;
    if (squash_new(&o, fz_collect, &out, &sq) < 0)
        abort();
    uint64_t now = 0;
    for (size_t i = 0; i < n; i += chunk) {
        if (squash_feed(sq, p + i, n - i < chunk ? n - i : chunk, now) < 0)
            abort();
        now += p[i] & 1 ? SQ_QUIET_MS : 1;
        if (squash_tick(sq, now) < 0)
            abort();
    }
    if (squash_finish(sq, 1, 0, now) < 0)
        abort();
    sq_stats_t st;
    squash_stats(sq, &st);
    if (st.out_bytes != out.len || st.omitted > st.raw_lines)
        abort();
    squash_free(sq);
    buf_free(&out);
    return 0;
}
