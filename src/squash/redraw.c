/*
 * redraw.c — a row's last frame (see redraw.h).
 *
 * The held lines are a FIFO ring in line order, their texts one buffer in
 * the same order (a line's text starts where the one before it ended, so
 * the oldest line's text is the buffer's front).  A map from row to the
 * newest held line of that row (a slot per row in reach, told apart by
 * the row it names) finds the line a redraw replaces in O(1).  A frame
 * replaced is handed on at once and leaves a tombstone, so that order
 * and offsets hold; the oldest leave as the ring turns, and when the
 * bounds are reached with tombstones making up half the ring, one pass
 * closes them up (text and map with them) instead: a row that waits
 * unchanged at the front while the rows below it redraw a thousand times
 * is not pushed out by their frames.  Output that never redraws, in a
 * streamed view, is not held: the ring stays unmade and each line passes
 * straight through.
 */
#include "squash/redraw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* Slots of the row maps: more than REDRAW_REACH (a move reaches no
 * further, vt.h), a power of two; the screen rows aside likewise
 * (VT_ASIDE_ROWS tell them apart). */
#define REDRAW_ROW_SLOTS 256u
#define REDRAW_ASIDE_SLOTS 256u
/* The ring starts this small and doubles up to REDRAW_MAX_LINES. */
#define REDRAW_MIN_LINES 16u
/* The text buffer's front is reclaimed once this much of it is spent and
 * it is more than half the buffer. */
#define REDRAW_COMPACT_MIN 4096u
_Static_assert(REDRAW_ROW_SLOTS > REDRAW_REACH, "a slot per row in reach");
_Static_assert((REDRAW_ROW_SLOTS & (REDRAW_ROW_SLOTS - 1)) == 0, "pow2");
_Static_assert((REDRAW_ASIDE_SLOTS & (REDRAW_ASIDE_SLOTS - 1)) == 0,
               "pow2");
_Static_assert((REDRAW_MAX_LINES & (REDRAW_MAX_LINES - 1)) == 0, "pow2");
_Static_assert(REDRAW_MAX_LINES > REDRAW_REACH, "a screen of rows fits");

struct redraw_held {
    sq_line_t line;   /* .text is unset while held: its text is at `at` */
    size_t at;        /* offset of its text in rd->text */
    uint64_t bottom;  /* rd->bottom when it came (for a row aside) */
    bool redrawn;     /* replaced by a later frame of its row */
    bool gone;        /* ... and handed on already: a tombstone */
};

/* Where the newest held line of a row (or a screen row aside) is. */
struct redraw_slot {
    uint64_t key;     /* the row, or the screen row aside */
    uint64_t seq;     /* its place in the ring; 0: none (seqs start at 1) */
};

struct redraw {
    redraw_fn fn;
    redraw_keep_fn keep;
    void *data;
    unsigned base;
    uint64_t reach;    /* max(base, the deepest redraw seen lately) */
    uint64_t bottom;   /* the counted rows below this gave lines */
    uint64_t redraw_bottom; /* bottom at the latest redraw */
    struct redraw_held *ring;
    size_t cap;        /* ring entries, a power of two */
    uint64_t first;    /* seq of the oldest held line */
    uint64_t next;     /* seq the next held line gets */
    size_t ngone;      /* tombstones in the ring */
    buf_t text;
    size_t text_front; /* the oldest held line's text starts here */
    struct redraw_slot rows[REDRAW_ROW_SLOTS];
    struct redraw_slot aside[REDRAW_ASIDE_SLOTS];
    /* The screen rows aside that gave a line (a bit per slot): a line
     * there again is a redraw (vt.h: a carriage return within a row's
     * first line also makes it an OVERWRITE, which says nothing of the
     * row). */
    uint64_t aside_seen[REDRAW_ASIDE_SLOTS / 64];
    uint64_t redrawn;
};

int redraw_new(unsigned base, redraw_fn fn, redraw_keep_fn keep, void *data,
               redraw_t **out)
{
    *out = NULL;
    if (!fn || base > REDRAW_REACH)
        return -EINVAL;
    redraw_t *rd = calloc(1, sizeof *rd);
    if (!rd)
        return -ENOMEM;
    rd->fn = fn;
    rd->keep = keep;
    rd->data = data;
    rd->base = base;
    rd->reach = base;
    rd->first = rd->next = 1;
    *out = rd;
    return 0;
}

void redraw_free(redraw_t *rd)
{
    if (!rd)
        return;
    free(rd->ring);
    buf_free(&rd->text);
    free(rd);
}

uint64_t redraw_count(const redraw_t *rd)
{
    return rd->redrawn;
}

static struct redraw_held *redraw_at(const redraw_t *rd, uint64_t seq)
{
    return &rd->ring[seq & (rd->cap - 1)];
}

static size_t redraw_held_n(const redraw_t *rd)
{
    return (size_t)(rd->next - rd->first);
}

/* A held line's text (valid until the text buffer next changes). */
static sq_line_t redraw_line(const redraw_t *rd, const struct redraw_held *h)
{
    sq_line_t l = h->line;
    l.text = rd->text.p ? rd->text.p + h->at : "";
    return l;
}

/* The held line a slot names, if it is still held and not replaced. */
static struct redraw_held *redraw_find(const redraw_t *rd,
                                       const struct redraw_slot *s,
                                       uint64_t key)
{
    if (!s->seq || s->key != key || s->seq < rd->first || s->seq >= rd->next)
        return NULL;
    struct redraw_held *h = redraw_at(rd, s->seq);
    return h->redrawn ? NULL : h;
}

/* Takes the oldest held line out of the ring: to fn, unless it was
 * handed on when it was replaced. */
static int redraw_pop(redraw_t *rd)
{
    struct redraw_held *h = redraw_at(rd, rd->first);
    sq_line_t l = redraw_line(rd, h);
    bool redrawn = h->redrawn, gone = h->gone;
    rd->first++;
    rd->text_front = h->at + h->line.len;
    rd->ngone -= gone;
    int rc = gone ? 0
                  : rd->fn(&l, redrawn ? REDRAW_KEPT : REDRAW_SHOWN,
                           rd->data);
    if (rd->first == rd->next) {
        buf_reset(&rd->text); /* after fn: l.text points into it */
        rd->text_front = 0;
    }
    return rc;
}

/* Whether the oldest held line may leave: replaced, or out of reach. */
static bool redraw_settled(const redraw_t *rd)
{
    const struct redraw_held *h = redraw_at(rd, rd->first);
    if (h->redrawn)
        return true;
    if (h->line.row == SQ_ROW_ASIDE)
        return rd->bottom - h->bottom > rd->reach;
    return rd->bottom - h->line.row > rd->reach;
}

int redraw_flush(redraw_t *rd)
{
    int rc = 0;
    while (rc == 0 && rd->first != rd->next)
        rc = redraw_pop(rd);
    return rc;
}

/* Marks h replaced by line l, which takes its frames (the stripper counts
 * the row's earlier text as one of l's, vt.h; h's own came before it),
 * and hands it on now unless `keep` wants it in its turn.  0 or fn's
 * negative return. */
static int redraw_replace(redraw_t *rd, struct redraw_held *h, sq_line_t *l)
{
    h->redrawn = true;
    rd->redrawn++;
    uint64_t f = (uint64_t)l->frames + h->line.frames;
    if (f < (uint64_t)h->line.frames + 1)
        f = (uint64_t)h->line.frames + 1;
    l->frames = f > UINT32_MAX ? UINT32_MAX : (uint32_t)f;
    sq_line_t old = redraw_line(rd, h);
    if (rd->keep && rd->keep(&old, rd->data))
        return 0;
    h->gone = true;
    rd->ngone++;
    return rd->fn(&old, REDRAW_DROPPED, rd->data);
}

/* An erase of the rows aside from screen row `from` down (vt.h: an empty
 * line with aside_from): every held line drawn there is gone. */
static int redraw_erase_aside(redraw_t *rd, uint32_t from, sq_line_t *l)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < REDRAW_ASIDE_SLOTS; i++) {
        struct redraw_slot *s = &rd->aside[i];
        struct redraw_held *h =
            s->key >= from ? redraw_find(rd, s, s->key) : NULL;
        if (h)
            rc = redraw_replace(rd, h, l);
    }
    return rc;
}

/* A redraw of a row `depth` rows above the lowest: the reach grows to
 * it.  A streamed view's reach falls back to its base once twice that
 * many rows came with no redraw: a pull that ended holds nothing of the
 * build after it. */
static void redraw_seen(redraw_t *rd, uint64_t depth)
{
    if (depth > rd->reach)
        rd->reach = depth;
    rd->redraw_bottom = rd->bottom;
}

/* Closes up the tombstones: the lines still held move down the ring and
 * their texts down the buffer, in order, and the maps name their new
 * places. */
static void redraw_compact(redraw_t *rd)
{
    uint64_t to = rd->first;
    size_t text_to = rd->text_front;
    for (uint64_t s = rd->first; s != rd->next; s++) {
        struct redraw_held h = *redraw_at(rd, s);
        if (h.gone)
            continue;
        if (h.at != text_to && h.line.len)
            memmove(rd->text.p + text_to, rd->text.p + h.at, h.line.len);
        h.at = text_to;
        text_to += h.line.len;
        *redraw_at(rd, to++) = h;
    }
    rd->next = to;
    rd->text.len = text_to;
    rd->ngone = 0;
    for (size_t i = 0; i < REDRAW_ROW_SLOTS; i++)
        rd->rows[i].seq = 0;
    for (size_t i = 0; i < REDRAW_ASIDE_SLOTS; i++)
        rd->aside[i].seq = 0;
    for (uint64_t s = rd->first; s != rd->next; s++) {
        const struct redraw_held *h = redraw_at(rd, s);
        if (h->redrawn)
            continue;
        bool aside = h->line.row == SQ_ROW_ASIDE;
        uint64_t key = aside ? h->line.aside_at : h->line.row;
        struct redraw_slot *slot =
            aside ? &rd->aside[key & (REDRAW_ASIDE_SLOTS - 1)]
                  : &rd->rows[key & (REDRAW_ROW_SLOTS - 1)];
        *slot = (struct redraw_slot){.key = key, .seq = s};
    }
}

/* Room for one more held line of len bytes: at the bounds, tombstones
 * closed up when they are half the ring, else the oldest lines leave;
 * the ring doubles while below its cap, and the text buffer's spent
 * front is reclaimed.  0, -ENOMEM or fn's negative return. */
static int redraw_room(redraw_t *rd, size_t len)
{
    int rc = 0;
    while (rc == 0 && rd->first != rd->next &&
           (redraw_held_n(rd) >= REDRAW_MAX_LINES ||
            rd->text.len - rd->text_front + len > REDRAW_MAX_BYTES)) {
        if (rd->ngone * 2 >= redraw_held_n(rd))
            redraw_compact(rd);
        else
            rc = redraw_pop(rd);
    }
    if (rc < 0)
        return rc;
    if (redraw_held_n(rd) == rd->cap) {
        size_t cap = rd->cap ? rd->cap * 2 : REDRAW_MIN_LINES;
        struct redraw_held *r = malloc(cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        for (uint64_t s = rd->first; s != rd->next; s++)
            r[s & (cap - 1)] = *redraw_at(rd, s);
        free(rd->ring);
        rd->ring = r;
        rd->cap = cap;
    }
    if (rd->text_front >= REDRAW_COMPACT_MIN &&
        rd->text_front > rd->text.len / 2) {
        size_t off = rd->text_front;
        memmove(rd->text.p, rd->text.p + off, rd->text.len - off);
        rd->text.len -= off;
        rd->text_front = 0;
        for (uint64_t s = rd->first; s != rd->next; s++)
            redraw_at(rd, s)->at -= off;
    }
    return buf_reserve(&rd->text, len);
}

/* A frame of the cursor's row that the stripper's keep wanted (sq_line_t
 * frame): replaced already, by nothing held, so it touches no row's slot
 * and leaves, marked kept, in its turn behind the lines held before it.
 * 0, -ENOMEM or fn's negative return. */
static int redraw_put_frame(redraw_t *rd, const sq_line_t *l)
{
    if (rd->first == rd->next)
        return rd->fn(l, REDRAW_KEPT, rd->data); /* nothing to wait for */
    int rc = redraw_room(rd, l->len);
    if (rc < 0)
        return rc;
    struct redraw_held *h = redraw_at(rd, rd->next);
    *h = (struct redraw_held){.line = *l, .at = rd->text.len,
                              .bottom = rd->bottom, .redrawn = true};
    h->line.text = NULL;
    (void)buf_append(&rd->text, l->text, l->len); /* reserved */
    rd->next++;
    while (rc == 0 && rd->first != rd->next && redraw_settled(rd))
        rc = redraw_pop(rd);
    return rc;
}

int redraw_put(redraw_t *rd, const sq_line_t *line)
{
    int rc = 0;
    sq_line_t l = *line;
    if (l.cut || l.len > REDRAW_MAX_BYTES) {
        /* pieces of one line are not held: what came before leaves
         * first, so the order stands */
        if ((rc = redraw_flush(rd)) < 0)
            return rc;
        return rd->fn(&l, l.frame ? REDRAW_KEPT : REDRAW_SHOWN, rd->data);
    }
    if (l.frame)
        return redraw_put_frame(rd, &l);
    bool aside = l.row == SQ_ROW_ASIDE;
    struct redraw_slot *slot = NULL;
    if (aside && l.aside_from && !l.len) {
        /* An erase from a status bar's row down (apt's, at its end)
         * takes what it showed; a clear of the whole screen (from screen
         * row 1, or from a counted row) does not: what the screen showed
         * before it was shown, and stays a fact. */
        if (l.aside_from > 1)
            rc = redraw_erase_aside(rd, l.aside_from, &l);
    } else if (aside) {
        size_t i = l.aside_at & (REDRAW_ASIDE_SLOTS - 1);
        slot = &rd->aside[i];
        if (rd->aside_seen[i / 64] >> (i % 64) & 1)
            redraw_seen(rd, 1); /* a status bar drawn again */
        rd->aside_seen[i / 64] |= 1ull << (i % 64);
    } else {
        slot = &rd->rows[l.row & (REDRAW_ROW_SLOTS - 1)];
        if (l.row < rd->bottom)
            redraw_seen(rd, rd->bottom - l.row);
        if (l.row >= rd->bottom)
            rd->bottom = l.row + 1;
    }
    if (rd->reach > rd->base && rd->bottom - rd->redraw_bottom > 2 * rd->reach)
        rd->reach = rd->base;
    uint64_t key = aside ? l.aside_at : l.row;
    struct redraw_held *old = slot ? redraw_find(rd, slot, key) : NULL;
    if (rc == 0 && old)
        rc = redraw_replace(rd, old, &l);
    if (rc < 0)
        return rc;
    if (rd->reach == 0 && rd->first == rd->next)
        return rd->fn(&l, REDRAW_SHOWN, rd->data); /* nothing redraws */

    if ((rc = redraw_room(rd, l.len)) < 0)
        return rc;
    struct redraw_held *h = redraw_at(rd, rd->next);
    *h = (struct redraw_held){.line = l, .at = rd->text.len,
                              .bottom = rd->bottom};
    h->line.text = NULL;
    (void)buf_append(&rd->text, l.text, l.len); /* reserved: cannot fail */
    if (slot)
        *slot = (struct redraw_slot){.key = key, .seq = rd->next};
    rd->next++;
    while (rc == 0 && rd->first != rd->next && redraw_settled(rd))
        rc = redraw_pop(rd);
    return rc;
}
