/*
 * vtview.c — a terminal's output as the text it shows (see vtview.h).
 *
 * The stripper does the terminal's work; this file only decides what of
 * it a take gives.  Ended lines collect in `ended` as the stripper hands
 * them over.  The line in progress is read from the stripper at the take
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

struct vtview {
    vt_t *vt;
    buf_t ended;     /* what lines ended since the last take show */
    buf_t shown;     /* the line in progress as the last take gave it */
    bool shown_esc;  /* ... after EMIT_ESCAPE */
    bool in_piece;   /* a cut line's later pieces are coming */
    bool skipping;   /* vtview_skip: lines ended now are not shown */
    int err;         /* the first failure inside the line callback */
    uint64_t drawn_over; /* vt_drawn_over at the last take */
};

/* Appends line text t[0..n) to out, or, when the line in progress was
 * shown and this text only grew from it, the part not shown yet.  A line
 * that must be escaped and was not shown escaped is given whole; a later
 * piece of a cut line (cont) goes on its line as it is.  Forgets what was
 * shown, keeping in shown_esc whether this text was escaped (for a take
 * that shows it as the line in progress). */
static int view_line_text(vtview_t *v, buf_t *out, const char *t, size_t n,
                          bool cont)
{
    bool esc = !cont && emit_raw_escaped(t, n);
    size_t from = 0;
    if (v->shown.len && v->shown.len <= n && esc == v->shown_esc &&
        memcmp(t, v->shown.p, v->shown.len) == 0)
        from = v->shown.len;
    else if (esc && buf_append_str(out, EMIT_ESCAPE) < 0)
        return -ENOMEM;
    buf_reset(&v->shown);
    v->shown_esc = esc;
    return buf_append(out, t + from, n - from);
}

static int view_on_line(const sq_line_t *l, void *data)
{
    vtview_t *v = data;
    int rc = 0;
    if (v->skipping)
        return 0;
    if (l->kind == SQ_LINE_BINARY && !l->len) {
        buf_reset(&v->shown);
        v->in_piece = false;
        rc = emit_binary(&v->ended, l->raw_start, l->raw_end);
    } else {
        rc = view_line_text(v, &v->ended, l->text, l->len, v->in_piece);
        v->in_piece = l->more;
        /* The end of the stream ends a last line without adding one. */
        if (rc == 0 && !l->more && l->kind != SQ_LINE_PARTIAL)
            rc = buf_append_byte(&v->ended, '\n');
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

void vtview_free(vtview_t *v)
{
    if (!v)
        return;
    vt_free(v->vt);
    buf_free(&v->ended);
    buf_free(&v->shown);
    free(v);
}

int vtview_feed(vtview_t *v, const void *data, size_t n)
{
    int rc = vt_feed(v->vt, data, n, 0);
    return rc < 0 ? rc : v->err;
}

int vtview_skip(vtview_t *v, uint64_t bytes, uint64_t lines)
{
    v->skipping = true;
    int rc = vt_skip(v->vt, bytes, lines);
    v->skipping = false;
    buf_reset(&v->shown);
    v->shown_esc = v->in_piece = false;
    v->drawn_over = vt_drawn_over(v->vt);
    return rc;
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
    const char *t;
    bool binary;
    size_t n = vt_pending(v->vt, &t, &binary);
    if (rc == 0 && n && !binary) {
        /* A character still being written stays for the next take; bytes
         * that can never form one show as U+FFFD, as in ended lines. */
        buf_t text = BUF_INIT;
        utf8_dec_t d;
        utf8_init(&d);
        rc = utf8_decode(&d, t, n, &text);
        if (rc == 0 && text.len &&
            !(text.len == v->shown.len &&
              memcmp(text.p, v->shown.p, text.len) == 0)) {
            rc = view_line_text(v, out, text.p, text.len, v->in_piece);
            if (rc == 0)
                rc = buf_append(&v->shown, text.p, text.len);
        }
        buf_free(&text);
    }
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
}

size_t vtview_held(const vtview_t *v)
{
    return v->ended.cap;
}
