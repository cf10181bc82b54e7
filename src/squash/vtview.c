/*
 * vtview.c — a terminal's output as the text it shows (see vtview.h).
 *
 * The stripper does the terminal's work; this file only decides what of
 * it a take gives.  The rows lines came from since the last take are held
 * in hand (`rows`, their text in `arena`) in the order they are shown, so
 * that a row drawn again (vt.h: a program that goes back up and redraws
 * its last lines) replaces its text where it stands rather than adding
 * lines.  A row no move can reach any more is final: it leaves the hand
 * for `ended`.  Rows aside (drawn after an absolute move) have no place
 * among the others: each screen row drawn that way is a row in hand of
 * its own, after the rows before it.  The line in progress is read from
 * the stripper at the take
 * and remembered in `shown`, so that the next take can tell whether the
 * line only grew (give the new text) or was drawn over (give it whole).
 */
#include "squash/vtview.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "squash/emit.h"
#include "squash/vt.h"

/* The most rows held in hand: every row a move reaches, and one aside.
 * The hand starts with room for VIEW_ROWS_MIN and doubles as rows come. */
#define VIEW_ROWS (VT_ROWS_BACK + 1u)
#define VIEW_ROWS_MIN 16u

/* What takes gave for the rows in reach, to tell a row drawn again the
 * same (VIEW_GIVEN_MIN slots, doubled as rows pass them, up to
 * VIEW_GIVEN_MAX, a power of two above VIEW_ROWS). */
#define VIEW_GIVEN_MIN 16u
#define VIEW_GIVEN_MAX 256u
_Static_assert(VIEW_GIVEN_MAX >= VIEW_ROWS, "a slot per row in reach");

typedef struct {
    uint64_t row;
    uint64_t hash; /* of the text given, 0: none */
} view_given_t;

/* A row in hand: its text is arena[off, off + len).  Rows aside (several
 * may be in hand) are told apart by the screen row they are, `at`. */
typedef struct {
    uint64_t row;
    uint32_t at;
    size_t off, len;
    bool marker; /* a binary line's marker: shown as it is, never escaped */
    bool open;   /* no line end: more pieces come, or the stream ended */
} view_row_t;

struct vtview {
    vt_t *vt;
    buf_t ended;      /* what rows out of reach show, ready to give */
    buf_t arena;      /* the text of the rows in hand */
    size_t live;      /* ... of it that rows still use */
    view_row_t *rows; /* a ring of cap: the rows in hand, in order */
    size_t cap, first, nrows;
    uint64_t seen;    /* rows below this gave a line already */
    buf_t shown;      /* the line in progress as the last take gave it */
    uint64_t shown_row;
    uint32_t shown_at;
    bool shown_esc;   /* ... after EMIT_ESCAPE */
    bool in_piece;    /* a cut line's later pieces are coming ... */
    view_row_t *piece; /* ... for this row in hand */
    bool skipping;    /* vtview_skip: lines ended now are not shown */
    int err;          /* the first failure inside the line callback */
    uint64_t drawn_over; /* vt_drawn_over at the last take */
    view_given_t *given; /* row r in given[r % ngiven] */
    size_t ngiven;
};

static view_row_t *view_row(vtview_t *v, size_t i)
{
    return &v->rows[(v->first + i) % v->cap];
}

/* A row's text in the arena (which a take may have given back: rows
 * carried over it are empty). */
static const char *view_text(const vtview_t *v, const view_row_t *r)
{
    return v->arena.p ? v->arena.p + r->off : "";
}

/* Appends a row's text t[0..n) to out as shown: after EMIT_ESCAPE when it
 * could pass for a marker (a marker itself never), then a line end (nl).
 * The first row given after a take that showed a line in progress is
 * that line's continuation: when it is the same row and only grew, only
 * the part not shown yet is given.  0 or -ENOMEM. */
static int view_emit(vtview_t *v, buf_t *out, uint64_t row, uint32_t at,
                     const char *t, size_t n, bool marker, bool nl)
{
    bool esc = !marker && emit_raw_escaped(t, n);
    size_t from = 0;
    if (v->shown.len) {
        if (row == v->shown_row && at == v->shown_at && v->shown.len <= n &&
            esc == v->shown_esc && memcmp(t, v->shown.p, v->shown.len) == 0)
            from = v->shown.len;
        buf_reset(&v->shown);
    }
    if (!from && esc && buf_append_str(out, EMIT_ESCAPE) < 0)
        return -ENOMEM;
    if (buf_append(out, t + from, n - from) < 0)
        return -ENOMEM;
    return nl ? buf_append_byte(out, '\n') : 0;
}

/* A row's text as a number: FNV-1a, never 0 (0 is no text given). */
static uint64_t view_hash(const char *t, size_t n, bool marker)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)marker;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)t[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* Whether a take gave row `row` with this text, ended (a row, not a line
 * in progress), and no take gave it otherwise since. */
static bool view_was_given(const vtview_t *v, uint64_t row, const char *t,
                           size_t n, bool marker)
{
    if (!v->ngiven || row == SQ_ROW_ASIDE)
        return false;
    const view_given_t *g = &v->given[row & (v->ngiven - 1)];
    return g->hash && g->row == row && g->hash == view_hash(t, n, marker);
}

/* Notes that a take gave row `row` with this text (hash 0: as a line in
 * progress, which says nothing of the row's text to come).  0 or
 * -ENOMEM. */
static int view_note_given(vtview_t *v, uint64_t row, uint64_t hash)
{
    if (row == SQ_ROW_ASIDE)
        return 0;
    size_t n = v->ngiven ? v->ngiven : VIEW_GIVEN_MIN;
    while (n < VIEW_GIVEN_MAX && row >= n)
        n *= 2;
    if (n != v->ngiven) {
        view_given_t *g = calloc(n, sizeof *g);
        if (!g)
            return -ENOMEM;
        for (size_t i = 0; i < v->ngiven; i++)
            if (v->given[i].hash)
                g[v->given[i].row & (n - 1)] = v->given[i];
        free(v->given);
        v->given = g;
        v->ngiven = n;
    }
    v->given[row & (n - 1)] = (view_given_t){row, hash};
    return 0;
}

/* Appends row r in hand to out as shown (text t[0..n): its own, or the
 * line in progress on it), noting what was given.  A blank row aside is
 * nothing: an erased status bar. */
static int view_give(vtview_t *v, buf_t *out, const view_row_t *r,
                     const char *t, size_t n)
{
    if (r->row == SQ_ROW_ASIDE && !n)
        return 0;
    int rc = view_emit(v, out, r->row, r->at, t, n, r->marker, !r->open);
    if (rc == 0)
        rc = view_note_given(v, r->row,
                             r->open ? 0 : view_hash(t, n, r->marker));
    return rc;
}

/* Gives the oldest row in hand to `ended`. */
static int view_flush_one(vtview_t *v)
{
    view_row_t *r = view_row(v, 0);
    int rc = view_give(v, &v->ended, r, view_text(v, r), r->len);
    v->live -= r->len;
    v->first = (v->first + 1) % v->cap;
    v->nrows--;
    if (v->piece == r)
        v->piece = NULL;
    return rc;
}

/* Copies the rows in hand to a fresh arena once most of the old one is
 * text that rows replaced or gave away. */
static int view_compact(vtview_t *v)
{
    if (v->arena.len < 4096 || v->arena.len / 2 < v->live)
        return 0;
    buf_t a = BUF_INIT;
    if (buf_reserve(&a, v->live) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < v->nrows; i++) {
        view_row_t *r = view_row(v, i);
        size_t off = a.len;
        buf_append(&a, view_text(v, r), r->len); /* reserved */
        r->off = off;
    }
    buf_free(&v->arena);
    v->arena = a;
    return 0;
}

/* Room in hand for one row more, up to VIEW_ROWS (past it the oldest
 * is given to `ended`).  0 or -ENOMEM. */
static int view_room(vtview_t *v)
{
    if (v->nrows < v->cap || v->cap == VIEW_ROWS)
        return 0;
    size_t cap = v->cap ? v->cap * 2 : VIEW_ROWS_MIN;
    if (cap > VIEW_ROWS)
        cap = VIEW_ROWS;
    view_row_t *rows = malloc(cap * sizeof *rows);
    if (!rows)
        return -ENOMEM;
    for (size_t i = 0; i < v->nrows; i++)
        rows[i] = *view_row(v, i);
    free(v->rows);
    v->rows = rows;
    v->cap = cap;
    v->first = 0;
    v->piece = NULL; /* set again by the hold that made room */
    return 0;
}

/* The row in hand that shows row `row` (aside: screen row `at`), or
 * NULL. */
static view_row_t *view_find(vtview_t *v, uint64_t row, uint32_t at)
{
    for (size_t i = v->nrows; i-- > 0;) {
        view_row_t *r = view_row(v, i);
        if (r->row == row && (row != SQ_ROW_ASIDE || r->at == at))
            return r;
    }
    return NULL;
}

/* An erase of the rows aside from screen row `from` down (sq_line_t
 * aside_from): those in hand are blank now, and a line in progress aside
 * that a take showed there, without its end, is over: its line end goes
 * out, so that what comes next is not read as more of it.  No row in
 * hand is made, and a cut line's pieces go on after it.  0 or -ENOMEM. */
static int view_erase_aside(vtview_t *v, uint32_t from)
{
    for (size_t i = 0; i < v->nrows; i++) {
        view_row_t *r = view_row(v, i);
        if (r->row == SQ_ROW_ASIDE && r->at >= from) {
            v->live -= r->len;
            r->len = 0;
            r->open = false;
        }
    }
    if (v->shown.len && v->shown_row == SQ_ROW_ASIDE && v->shown_at >= from) {
        buf_reset(&v->shown);
        v->shown_esc = false;
        return buf_append_byte(&v->ended, '\n');
    }
    return 0;
}

/* Makes room in hand for row `row`, not in hand, where the screen shows
 * it: after the rows above it, so that a row drawn again after an
 * earlier take showed it comes back in its place among the rest.  A row
 * aside has no place: it goes at the end, and the rows before it stay
 * before it. */
static view_row_t *view_insert(vtview_t *v, uint64_t row, uint32_t at)
{
    size_t i = v->nrows;
    while (row != SQ_ROW_ASIDE && i) {
        uint64_t before = view_row(v, i - 1)->row;
        if (before == SQ_ROW_ASIDE || before < row)
            break;
        i--;
    }
    for (size_t k = v->nrows; k > i; k--)
        *view_row(v, k) = *view_row(v, k - 1);
    v->nrows++;
    view_row_t *r = view_row(v, i);
    /* empty until view_hold fills it: a compaction in between copies it
     * as it stands */
    memset(r, 0, sizeof *r);
    r->row = row;
    r->at = at;
    r->off = v->arena.len;
    return r;
}

/* Takes a row's text t[0..n) in hand: over the row's earlier text where
 * that is still in hand, else as a new row in its place (view_insert;
 * flushing the oldest first when the hand is full).  A later piece of a
 * cut line (cont) goes on the end of its row. */
static int view_hold(vtview_t *v, const sq_line_t *l, const char *t,
                     size_t n, bool marker, bool cont)
{
    view_row_t *r = v->piece;
    if (cont && r) {
        /* Nothing came between the pieces: its text ends the arena. */
        v->live += n;
        r->len += n;
        r->open = l->more || l->kind == SQ_LINE_PARTIAL;
        return buf_append(&v->arena, t, n);
    }
    bool redraw = l->row == SQ_ROW_ASIDE || l->row < v->seen;
    if (l->row != SQ_ROW_ASIDE && l->row >= v->seen)
        v->seen = l->row + 1;
    int rc = 0;
    if (redraw && (r = view_find(v, l->row, l->aside_at)) != NULL) {
        v->live -= r->len;
        r->len = 0;
    } else {
        if ((rc = view_room(v)) < 0 ||
            (v->nrows == VIEW_ROWS && (rc = view_flush_one(v)) < 0))
            return rc;
        r = view_insert(v, l->row, l->aside_at);
    }
    if ((rc = view_compact(v)) < 0)
        return rc;
    r->off = v->arena.len;
    r->len = n;
    r->marker = marker;
    r->open = l->more || l->kind == SQ_LINE_PARTIAL;
    v->live += n;
    v->piece = r;
    return buf_append(&v->arena, t, n);
}

static int view_on_line(const sq_line_t *l, void *data)
{
    vtview_t *v = data;
    int rc = 0;
    if (v->skipping) {
        if (l->row != SQ_ROW_ASIDE && l->row >= v->seen)
            v->seen = l->row + 1;
        return 0;
    }
    if (l->row == SQ_ROW_ASIDE && l->aside_from) {
        rc = view_erase_aside(v, l->aside_from);
    } else if (l->kind == SQ_LINE_BINARY && !l->len) {
        buf_t m = BUF_INIT;
        v->in_piece = false;
        rc = emit_binary(&m, l->raw_start, l->raw_end);
        if (rc == 0 && m.len && m.p[m.len - 1] == '\n')
            m.len--;
        if (rc == 0)
            rc = view_hold(v, l, m.p ? m.p : "", m.len, true, false);
        buf_free(&m);
    } else {
        rc = view_hold(v, l, l->text, l->len, false, v->in_piece);
        v->in_piece = l->more;
    }
    if (rc < 0 && !v->err)
        v->err = rc;
    return rc;
}

int vtview_new(vtview_t **out)
{
    vtview_t *v = calloc(1, sizeof *v);
    if (!v)
        return -ENOMEM;
    if (vt_new(view_on_line, v, &v->vt) < 0) {
        free(v);
        return -ENOMEM;
    }
    *out = v;
    return 0;
}

void vtview_set_cols(vtview_t *v, unsigned cols)
{
    vt_set_cols(v->vt, cols);
}

void vtview_free(vtview_t *v)
{
    if (!v)
        return;
    vt_free(v->vt);
    buf_free(&v->ended);
    buf_free(&v->arena);
    buf_free(&v->shown);
    free(v->rows);
    free(v->given);
    free(v);
}

int vtview_feed(vtview_t *v, const void *data, size_t n)
{
    int rc = vt_feed(v->vt, data, n, 0);
    return rc < 0 ? rc : v->err;
}

/* Gives the rows of the screen strictly between row `from`, given last
 * (SQ_ROW_ASIDE: none), and row `to`, as the stripper keeps them: rows
 * no take gave again since, between two that it gives.  A row whose text
 * is not kept (vt_row_text) is left out.  0 or -ENOMEM. */
static int view_fill(vtview_t *v, buf_t *out, uint64_t from, uint64_t to)
{
    if (from == SQ_ROW_ASIDE || to == SQ_ROW_ASIDE || to <= from + 1)
        return 0;
    if (to - from - 1 > VT_ROWS_BACK) /* out of reach: kept by nothing */
        from = to - VT_ROWS_BACK - 1;
    buf_t raw = BUF_INIT, text = BUF_INIT;
    int rc = 0;
    for (uint64_t row = from + 1; rc == 0 && row < to; row++) {
        buf_reset(&raw);
        buf_reset(&text);
        if ((rc = vt_row_text(v->vt, row, &raw)) <= 0)
            continue;
        utf8_dec_t d;
        utf8_init(&d);
        if ((rc = utf8_decode(&d, raw.p ? raw.p : "", raw.len, &text)) < 0 ||
            (rc = utf8_finish(&d, &text)) < 0)
            break;
        const char *t = text.p ? text.p : "";
        if ((rc = view_emit(v, out, row, 0, t, text.len, false, true)) == 0)
            rc = view_note_given(v, row, view_hash(t, text.len, false));
    }
    buf_free(&raw);
    buf_free(&text);
    return rc < 0 ? rc : 0;
}

/* Whether row `row` (its text n bytes long) is blank and not above the
 * cursor's (crow): the screen shows nothing there yet, so a take gives
 * nothing (a program that erased its last lines to draw them again). */
static bool view_blank_below(uint64_t row, size_t n, uint64_t crow)
{
    return !n && row != SQ_ROW_ASIDE && crow != SQ_ROW_ASIDE && row >= crow;
}

/* Drops the first `given` rows in hand, which a take gave; the rest are
 * blank (view_blank_below; the cursor's may hold text the line in
 * progress erased) and stay, text-less, for the next take.  The
 * arena's room is given back past VTVIEW_KEEP_BYTES. */
static void view_drop(vtview_t *v, size_t given)
{
    v->first = v->cap ? (v->first + given) % v->cap : 0;
    v->nrows -= given;
    for (size_t i = 0; i < v->nrows; i++)
        view_row(v, i)->off = view_row(v, i)->len = 0;
    v->live = 0;
    v->piece = NULL;
    if (v->arena.cap > VTVIEW_KEEP_BYTES)
        buf_free(&v->arena);
    else
        buf_reset(&v->arena);
}

/* How many rows in hand a take gives: all but the blank rows at the end
 * from the cursor's row crow down (cur: the row in hand the line in
 * progress stands on, its text n bytes long).  The screen shows nothing
 * there yet; such a row is given once written, or once the cursor moved
 * past it (an empty line after all). */
static size_t view_to_give(vtview_t *v, uint64_t crow, const view_row_t *cur,
                           size_t n)
{
    size_t end = v->nrows;
    while (end) {
        const view_row_t *r = view_row(v, end - 1);
        size_t len = cur && r == cur ? n : r->len;
        if (!view_blank_below(r->row, len, crow))
            break;
        end--;
    }
    return end;
}

int vtview_skip(vtview_t *v, uint64_t bytes, uint64_t lines)
{
    uint64_t crow;
    uint32_t cat;
    bool fresh;
    vt_cursor_row(v->vt, &crow, &cat, &fresh);
    v->skipping = true;
    int rc = vt_skip(v->vt, bytes, lines);
    v->skipping = false;
    /* The rows in hand are shown as they stand, but for blank ones below
     * the cursor: no move reaches them from the far side of the skipped
     * bytes. */
    for (size_t n = view_to_give(v, crow, NULL, 0); rc == 0 && n; n--)
        rc = view_flush_one(v);
    view_drop(v, 0);
    v->first = v->nrows = 0;
    buf_reset(&v->shown);
    v->shown_esc = v->in_piece = false;
    v->drawn_over = vt_drawn_over(v->vt);
    return rc < 0 ? rc : v->err;
}

int vtview_finish(vtview_t *v)
{
    int rc = vt_finish(v->vt);
    return rc < 0 ? rc : v->err;
}

uint64_t vtview_offset(const vtview_t *v)
{
    uint64_t off;
    vt_counts(v->vt, &off, NULL, NULL);
    return off;
}

int vtview_take(vtview_t *v, buf_t *out, bool *drawn_over)
{
    int rc = v->err;
    if (rc == 0)
        rc = buf_append(out, v->ended.p ? v->ended.p : "", v->ended.len);
    if (v->ended.cap > VTVIEW_KEEP_BYTES)
        buf_free(&v->ended);
    else
        buf_reset(&v->ended);

    /* The line in progress, as it stands, if it shows something new. */
    const char *t;
    bool binary, fresh;
    uint64_t crow;
    uint32_t cat;
    size_t n = vt_pending(v->vt, &t, &binary);
    bool pending = vt_cursor_row(v->vt, &crow, &cat, &fresh) && !binary;
    buf_t text = BUF_INIT;
    if (rc == 0 && pending && n) {
        /* A character still being written stays for the next take; bytes
         * that can never form one show as U+FFFD, as in ended lines. */
        utf8_dec_t d;
        utf8_init(&d);
        rc = utf8_decode(&d, t, n, &text);
    }
    const char *pt = text.p ? text.p : "";
    view_row_t *cur = pending && !fresh ? view_find(v, crow, cat) : NULL;

    /* The rows given: from the first that shows what no take gave there
     * to the last, and every row of the screen between them (a take gives
     * one piece of the screen); rows a take gave the same are not given
     * again outside that piece. */
    size_t end = view_to_give(v, crow, cur, text.len);
    size_t first = end, last = 0;
    for (size_t i = 0; i < end; i++) {
        view_row_t *r = view_row(v, i);
        if (!r->open && (r == cur ? view_was_given(v, r->row, pt, text.len,
                                                   false)
                                  : view_was_given(v, r->row, view_text(v, r),
                                                   r->len, r->marker)))
            continue;
        if (first == end)
            first = i;
        last = i;
    }
    uint64_t prev = SQ_ROW_ASIDE; /* the last row given, unless aside */
    for (size_t i = first; rc == 0 && i < end && i <= last; i++) {
        view_row_t *r = view_row(v, i);
        if ((rc = view_fill(v, out, prev, r->row)) < 0)
            break;
        if (r == cur)
            rc = view_give(v, out, r, pt, text.len);
        else
            rc = view_give(v, out, r, view_text(v, r), r->len);
        prev = r->row != SQ_ROW_ASIDE ? r->row : prev;
    }
    if (rc == 0 && !cur && text.len) {
        /* A new row, or one aside, may grow: it has no line end yet, and
         * the next take gives only what it grew.  A row drawn before
         * (shown in an earlier take) is given whole, as a row. */
        bool open = fresh || crow == SQ_ROW_ASIDE;
        bool esc = emit_raw_escaped(pt, text.len);
        if (first < end)
            rc = view_fill(v, out, prev, crow);
        if (rc == 0)
            rc = view_emit(v, out, crow, cat, pt, text.len, false, !open);
        if (rc == 0)
            rc = view_note_given(v, crow,
                                 open ? 0 : view_hash(pt, text.len, false));
        if (rc == 0 && open) {
            rc = buf_append(&v->shown, pt, text.len);
            v->shown_row = crow;
            v->shown_at = cat;
            v->shown_esc = esc;
        }
    }
    buf_free(&text);
    view_drop(v, end);
    uint64_t drawn = vt_drawn_over(v->vt);
    if (drawn_over)
        *drawn_over = drawn != v->drawn_over;
    v->drawn_over = drawn;
    v->err = 0;
    return rc < 0 ? -ENOMEM : 0;
}

void vtview_unshow(vtview_t *v)
{
    buf_reset(&v->shown);
    v->shown_esc = false;
    /* Nothing the take gave reached the reader: no row is known to it. */
    if (v->given)
        memset(v->given, 0, v->ngiven * sizeof *v->given);
}

size_t vtview_held(const vtview_t *v)
{
    return v->ended.cap + v->arena.cap;
}
