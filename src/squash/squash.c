/*
 * squash.c — the squasher pipeline (see squash.h): vt → redraw →
 * classify → dedup → emit.  A frame of a row that a later one drew over
 * (redraw.h) is counted as progress and goes no further, unless it says
 * an error or a warning.
 *
 * Lines worth showing become items (hazards and the lines they own, below
 * them and, from a grammar's `lead` rule, above them: gcc's include chain;
 * outcomes, prompts, binary runs, the first line of a deduplicated group,
 * and at the end the fallback tail); everything else is only counted.  An
 * item keeps its text in one arena, so the lines that survive cost one copy
 * and the ones that do not cost none.
 *
 * Two ways out:
 *   streaming (default): each hazard line is sent the moment it completes
 *     (in output that redraws its last rows, once its row is out of a
 *     redraw's reach, redraw.h);
 *     at the end the exit marker, the remaining items, the repeat markers
 *     and the counts follow.  While the output is small, every line but
 *     noise is sent, no later than the next line streamed, a quiet spell
 *     or the end (sq_release);
 *   deferred (budget, cap_to_input, or asked for): at the end, the exit
 *     marker heads the output, every item in line order with each gap
 *     marked in place.  With a budget the items are chosen by priority
 *     (hazard lines, errors before warnings, first and last first; the
 *     line closing a capture with its message, as a traceback's exception
 *     line; the lines they
 *     own that name a location, the lines leading into them first;
 *     outcomes; their other lines by weight:
 *     message, excerpt, caret; deduplicated lines; the tail, latest
 *     first) until the rendered output would pass the budget, an item
 *     refused being tried again once a neighbour is taken.  The hazard
 *     lines are settled first, as the longest run of their order that
 *     fits (sq_plan_hazards), so that a larger budget never shows fewer
 *     of them, a long one sized as its start (SQ_HAZARD_PART_MIN) and
 *     shown cut when it does not fit whole; the other lines fill the
 *     room left.  The input cap is not a
 *     budget: hazards, their location and message lines and outcomes are
 *     kept whatever it costs (sq_must), and when even that passes the
 *     cap the smaller of that view and the unplanned one is shown.  A
 *     small output (SQ_WHOLE_BYTES_MAX) is shown whole instead when that
 *     is no larger.
 *
 * A grammar of category `structured` (git status/log/diff, docker ps)
 * keeps every outcome line: its rows are paths, states and hashes, each a
 * fact, so none is folded into a template.  A compound command classifies
 * with the grammars of all its tools (grammar_set_detect_all); an outcome
 * a grammar matched goes by that grammar's category, a built-in one by
 * the first grammar's.
 *
 * Every raw line leaves through emit_raw, whichever view it is in (an
 * item, the whole view, a streamed prompt), so a line of the command's
 * that reads `[rein] ...` is escaped and never passes for a marker.
 *
 * Condensing is O(n log n) in lines at worst, and its memory linear in
 * what it keeps: every line costs O(1) on the way in (a dedup group keeps
 * bounded runs and locations, the bitmaps a bit); a render is one pass
 * over the items and the groups (a gap's lines are counted by popcount,
 * sq_rank); a plan orders in passes over the items, and checks its
 * estimate with a few renders and then a bisection, never one render per
 * item; and a streamed line's text is let go once it is out.
 *
 * A view of a later part of a log gives the log's byte offsets and line
 * numbers (raw_base, line_base, added only as markers are written, so
 * that the line bitmaps stay the size of the view), and a middle that was
 * never read (squash_skip, the part of a huge output past what a view
 * reads) is an item of its own, always shown as its marker, whose lines
 * have no bits.
 */
#include "squash/squash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "squash/classify.h"
#include "squash/dedup.h"
#include "squash/emit.h"
#include "squash/grammar.h"
#include "squash/redraw.h"
#include "squash/vt.h"

/* FNV-1a for exact hazard groups: the 64-bit prime, and a basis that is
 * not the template hash's (the standard offset basis, byte-swapped). */
#define SQ_FNV_PRIME 0x100000001b3ull
#define SQ_EXACT_BASIS 0x25232284e49cf2cbull
/* Bytes a gap marker is assumed to cost while planning a budget. */
#define SQ_GAP_COST 48
/* With at most this many items, a budget plan fills the room its
 * estimates left by trying each remaining item with an exact render. */
#define SQ_PLAN_EXACT_MAX 512
/* Bytes a repeat marker adds to its template while planning. */
#define SQ_REPEAT_COST 72
/* A plan over budget after its estimates drops its least important items
 * one at a time, rendering the view after each, for this many items; then
 * it finds how many more to drop by bisection (O(log n) renders, not one
 * per item: under a budget, 200k diagnostics whose gap markers the
 * estimate undercounts drop some 2000 more).  Bisection takes the view's
 * size as growing with what is kept, which a gap marker can break by a
 * few bytes; the single steps keep the exact first fit for the plans that
 * need only a few (the corpus and the fixtures need at most 2). */
#define SQ_PLAN_DROP_STEPS 8

enum sq_role {
    SQ_R_HAZARD = 0,
    SQ_R_CONT,    /* a line owned by the hazard above */
    SQ_R_LEAD,    /* a line owned by the hazard below (cls_result_t.lead:
                     gcc's `In file included from`), shown only with it */
    SQ_R_OUTCOME,
    SQ_R_PROMPT,
    SQ_R_BINARY,
    SQ_R_DEDUP,   /* first line of a grammar `dedup` noise group */
    SQ_R_TAIL,
    SQ_R_SKIP,    /* lines first..lineno, not read (squash_skip): always
                     shown as their marker */
};

/* What a line a hazard owns is worth when room is short.  A frame that
 * names a location (`File "x.py", line 5`, `at f (app.js:3:9)`, `-->
 * src/main.rs:2:5`, a linter's `  4:7  error ...` row) and the rest of
 * the message are as much facts as the hazard; a compiler's source
 * excerpt (`   23 |     return x`) shows what the file already holds;
 * a caret line least. */
enum sq_weight {
    SQ_W_MARK = 0, /* no letter or digit: carets, rules, gutters */
    SQ_W_EXCERPT,  /* a source excerpt behind a `N |` gutter */
    SQ_W_TEXT,
    SQ_W_LOC,
    SQ_W_LEVELS,
};

struct sq_item {
    uint64_t lineno, raw_start, raw_end;
    uint64_t first;   /* its first line: a binary run spans first..lineno */
    size_t off, len;  /* text in the arena */
    uint32_t group;   /* dedup group, UINT32_MAX: none */
    uint32_t head;    /* SQ_R_CONT, SQ_R_LEAD: the index of its hazard
                         item */
    uint8_t role;
    uint8_t weight;   /* SQ_R_CONT, SQ_R_LEAD: enum sq_weight */
    bool cut;         /* longer than SQ_LINE_MAX */
    bool escaped;     /* shown after EMIT_ESCAPE (emit_raw_escaped) */
    bool emitted;     /* streamed already */
    bool selected;
    bool warning;     /* SQ_R_HAZARD: of warning severity */
    bool shown_cut;   /* longer than SQ_LINE_SHOW_MAX: shown as its head
                         and tail (its len is 0 once streamed) */
    size_t split;     /* a line over SQ_LINE_MAX (sq_line_t.split): the
                         text is its head [0, split) and its tail */
    uint64_t full;    /* ... of this many text bytes in all */
    size_t part;      /* SQ_R_HAZARD under an explicit budget too small
                         for it as usual: shown as its first `part`
                         bytes (sq_plan_hazards); 0: as usual */
};

/* A dedup group while a view is rendered (sq_render fills it): where its
 * marker goes, and what a plan's measuring render knows of it. */
struct sq_grp {
    uint32_t last;    /* the last selected item of the group's blocks,
                         UINT32_MAX: none */
    uint32_t shown;   /* selected members */
    bool hazard;      /* the last selected member is a hazard */
    size_t cost[2];   /* bytes of its markers (by `hazard`), once rendered
                         in full; 0: not yet */
};

/* What the deferred view says of the whole run, and the scratch of its
 * renders. */
struct sq_view {
    int exit_code;
    uint64_t duration_ms, lines, raw_bytes;
    struct sq_grp *grp; /* dedup_group_count() entries */
    bool no_noise;      /* the noise marker left out: the markers alone
                           are over the explicit budget */
};

/* The lines a gap marker must count (not noise, and, unless under an
 * explicit budget, not folded into a group's repeat marker), as a bitmap
 * over the line bitmaps' index with a popcount before each word: whether
 * a gap has one is O(1) however long it is (sq_gap_matters). */
struct sq_rank {
    uint64_t *words, *before;
    size_t nwords;
    uint64_t nbits;   /* bits 1..nbits-1 are lines (bit 0 is none) */
};

/* Line bitmaps: which lines are noise, which are folded into a group. */
struct sq_bits {
    uint8_t *p;
    size_t bytes;
};

/* Lines stepped over by squash_skip: first .. first + lines - 1. */
struct sq_skip {
    uint64_t first, lines;
};

struct sq_tail {
    uint64_t lineno, raw_start, raw_end;
    char *text;
    size_t len;
    bool cut;
    /* A line longer than SQ_LINE_MAX (sq_line_t.split): text is the
     * line's first `split` bytes then its last len - split, of `full`
     * text bytes in all.  split 0: text is the whole line or piece. */
    size_t split;
    uint64_t full;
};

/* The complete line a kept tail, lead or held line stands for. */
static sq_line_t sq_tail_line(const struct sq_tail *t)
{
    return (sq_line_t){.text = t->text, .len = t->len,
                       .kind = SQ_LINE_COMPLETE, .lineno = t->lineno,
                       .raw_start = t->raw_start, .raw_end = t->raw_end,
                       .cut = t->cut, .split = t->split, .full = t->full};
}

struct squash {
    sq_emit_fn emit;
    void *data;
    char *command, *log_path;
    uint64_t log_lost; /* bytes that never reached the log (squash_log_lost) */
    size_t budget;
    int exit_signal; /* squash_set_signal's; -1: read from the status */
    uint64_t raw_base; /* added to byte offsets in markers */
    uint64_t line_base; /* added to line numbers in markers: the lines are
                           numbered from 1 here, so that the bitmaps stay
                           the size of this view, not of the log */
    bool deferred, cap;
    bool structured;    /* the first grammar's category: every outcome
                           kept (a grammar's own outcomes go by its own) */
    unsigned tail_lines;

    vt_t *vt;
    redraw_t *rd;       /* between vt and the rest: a row's last frame */
    classify_t *cls;
    dedup_t *dd;
    grammar_set_t *own_set;
    const grammar_t *gs[GRAMMAR_PER_COMMAND_MAX]; /* the command's, in
                                                     priority order */
    size_t ng;

    buf_t arena;
    struct sq_item *items;
    size_t nitems, capitems;
    struct sq_tail *ring;
    size_t ringcap, ringn, ringhead;
    struct sq_bits noisebits; /* counted by the noise marker */
    struct sq_bits foldbits;  /* hazards and outcomes past their group's
                                 show limit: counted by its repeat marker */
    struct sq_bits foldhaz;   /* the hazards among them: under a budget,
                                 which may show no member of their group
                                 (and so no repeat marker), a gap's
                                 `; N hazards` counts them */
    struct sq_skip *skips;    /* in line order */
    size_t nskips;
    struct sq_rank rank;      /* built at the end (deferred views) */
    struct sq_rank hazrank;   /* foldhaz, likewise (under a budget) */
    /* A small output's every line, while it stays small (deferred only):
     * the whole view, shown instead of a condensed one that is no smaller */
    buf_t whole;
    size_t whole_raw;   /* its lines' bytes as printed (no escape prefix) */
    bool whole_ok, whole_shown;
    /* A streamed view of an output still small (at most SQ_SMALL_LINES
     * lines and SQ_WHOLE_BYTES_MAX bytes so far) shows all of it but its
     * noise.  The lines not streamed the moment they complete (unknown
     * lines, in the ring; outcomes, prompts, a dedup group's first line
     * and binary runs, among the items) wait, and go out in line order
     * ahead of the next line streamed, after SQ_QUIET_MS without output,
     * or at the end, before the exit marker (sq_release).  Once the output
     * passes either bound, the lines waiting are the condensed view's, as
     * every later one. */
    bool small;
    size_t small_bytes;
    uint64_t frames_dropped; /* lines a redraw replaced (sq_on_frame) */
    size_t released;       /* the items before this index are all out */
    uint64_t stream_last;  /* the latest line streamed (sq_stream) */
    uint64_t last_feed_ms; /* when the last bytes came (squash_feed) */

    uint64_t noise[CLS_NOISE_REASONS];
    uint64_t hazards, errors, warnings, outcomes, prompts;
    bool head_shown;
    uint32_t last_head;
    uint64_t head_key;  /* the exact hash of last_head's line (sq_fact_key) */
    /* The last hazard folded into its group (past SQ_HAZARD_SHOW), kept
     * until its block shows whether it is a fact of its own: shown after
     * all when it owns a location or message line no shown member of its
     * group has (see sq_unfold). */
    struct sq_tail folded;
    uint32_t folded_group;
    uint64_t folded_key;
    bool folded_warning;
    bool folded_valid;
    /* Hashes of the location and message lines owned by the shown
     * copies of each hazard line, mixed with the line's exact hash, not
     * its group's index: a group recycled at DEDUP_GROUPS_MAX hands its
     * index to another line, not its facts (open addressing; 0 is
     * empty). */
    uint64_t *facts;
    size_t nfacts, capfacts;
    /* Lines that lead into a hazard (cls_result_t.lead) waiting for the
     * line after them: when it is a hazard line shown, they are its
     * (SQ_R_LEAD items, before it); otherwise they are what they were
     * classified: a grammar's noise, or the universal tier's unknown lines
     * (for the fallback tail).  The first SQ_LEAD_MAX - 1 and the latest
     * are kept; any between are let go at once. */
    struct sq_tail lead[SQ_LEAD_MAX];
    bool lead_noise[SQ_LEAD_MAX]; /* counted as noise (a grammar's rule) */
    size_t nlead;
    /* A line held as the source excerpt of the hazard above
     * (cls_result_t.pending: clang's, which has no gutter): the next line
     * says whether it is (a caret line under it, `confirms`), else it is
     * taken as its own verdict said. */
    struct sq_tail held;
    cls_result_t held_r;
    bool held_valid;
    size_t frame_indent; /* indent of the hazard's last location line,
                            SIZE_MAX: none (see sq_cont_weight) */
    /* The line longer than SQ_LINE_MAX whose pieces are arriving
     * (sq_long_add): its first SQ_LINE_SHOW_EDGE bytes and its latest,
     * all that is ever shown of it, however long it grows; at its last
     * piece it is one line, classified and shown as any other. */
    struct sq_tail longl;
    sq_line_kind_t long_kind;
    unsigned long_colours;
    uint32_t long_frames;
    bool long_valid;
    bool finishing, finished;
    int err;            /* first error in the vt callback */
    buf_t out, tmpl;
    buf_t item_line;    /* sq_item_group_add's line, its item replaced */
    sq_stats_t st;
};

/* ------------------------------------------------------------ output */

static void sq_send(squash_t *sq, buf_t *b)
{
    if (!b->len)
        return;
    for (size_t i = 0; i < b->len; i++)
        sq->st.out_lines += b->p[i] == '\n';
    sq->st.out_bytes += b->len;
    if (sq->emit)
        sq->emit(b->p, b->len, sq->data);
    buf_reset(b);
}

/* ------------------------------------------------------------- items */

static int sq_item_add(squash_t *sq, const sq_line_t *l, enum sq_role role,
                       uint32_t group, struct sq_item **out)
{
    if (sq->nitems == sq->capitems) {
        size_t cap = sq->capitems ? sq->capitems * 2 : 64;
        struct sq_item *p = realloc(sq->items, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        sq->items = p;
        sq->capitems = cap;
    }
    struct sq_item *it = &sq->items[sq->nitems];
    memset(it, 0, sizeof *it);
    it->lineno = it->first = l->lineno;
    it->raw_start = l->raw_start;
    it->raw_end = l->raw_end;
    it->off = sq->arena.len;
    it->len = l->len;
    it->group = group;
    it->role = (uint8_t)role;
    it->cut = l->cut;
    it->split = l->split;
    it->full = l->split ? l->full : l->len;
    it->shown_cut = l->len > SQ_LINE_SHOW_MAX || l->split;
    it->escaped = emit_raw_escaped(l->text, l->len);
    it->head = UINT32_MAX;
    if (buf_append(&sq->arena, l->text, l->len) < 0)
        return -ENOMEM;
    sq->nitems++;
    *out = it;
    return 0;
}

_Static_assert(SQ_LINE_SHOW_EDGE >= CLS_SCAN_MAX,
              "a long line shows every byte the classifier's scans read");
_Static_assert(SQ_LINE_SHOW_MAX >= 2 * SQ_LINE_SHOW_EDGE + 2048,
               "a line cut for showing loses more than its markers cost");
_Static_assert(SQ_HAZARD_PART_MIN < SQ_LINE_SHOW_EDGE,
               "the least part of a hazard is within the head held of a "
               "line past SQ_LINE_MAX");

/* Raw text of an item, or its size counted in *extra (a plan measuring). */
static int sq_raw_render(buf_t *out, size_t *extra, const char *t, size_t n)
{
    if (extra) {
        *extra += (emit_raw_escaped(t, n) ? strlen(EMIT_ESCAPE) : 0) + n + 1;
        return 0;
    }
    return emit_raw(out, t, n);
}

/* A line longer than SQ_LINE_SHOW_MAX (or one over SQ_LINE_MAX, held as
 * its ends: split): its first and last SQ_LINE_SHOW_EDGE bytes, each a
 * piece after its `cut` marker, and the middle's bytes in the log between
 * them.  With part (a hazard line a budget has no room for as usual,
 * sq_plan_hazards), its first `part` bytes alone, and the bytes of the
 * rest of it: one way of cutting a line, whatever the reason.  The text's
 * bytes are the log's
 * when the line was written as plain text (its raw bytes are its text and
 * a LF, or CR LF): then the range is exact.  Escape sequences in it make
 * the raw line longer than its text, and the range is then counted from
 * either end of the raw line: it holds the middle, and may hold some of
 * the head's and tail's escapes. */
static int sq_long_render(const squash_t *sq, const sq_line_t *l,
                          size_t part, buf_t *out, size_t *extra)
{
    const char *t = l->text;
    /* merged pieces (split): the head, then the tail from there */
    size_t n = l->len, h, s;
    uint64_t full = l->split ? l->full : n; /* the line's text bytes */
    if (part) {
        /* the head alone: no further than the text held of it, and
         * never inside a character */
        size_t avail = l->split ? l->split : n;
        h = part < avail ? part : avail;
        while (h > 0 && h < avail && ((unsigned char)t[h] & 0xC0) == 0x80)
            h--;
        s = n;
    } else if (l->split) {
        h = s = l->split;
    } else {
        h = SQ_LINE_SHOW_EDGE;
        s = n - SQ_LINE_SHOW_EDGE;
        while (h > 0 && ((unsigned char)t[h] & 0xC0) == 0x80)
            h--;
        while (s < n && ((unsigned char)t[s] & 0xC0) == 0x80)
            s++;
    }
    uint64_t rs = l->raw_start, re = l->raw_end, raw = re - rs;
    uint64_t a = rs + h, b = rs + full - (n - s);
    if (raw < full || raw > full + 2) {
        a = a < re ? a : re;
        b = raw > n - s ? re - (n - s) : rs;
        b = b > a ? b : a;
    }
    uint64_t lineno = sq->line_base + l->lineno;
    int rc = emit_cut(out, lineno, h);
    if (rc == 0)
        rc = sq_raw_render(out, extra, t, h);
    if (rc == 0)
        rc = emit_omitted_part(out, lineno, sq->raw_base + a,
                               sq->raw_base + b);
    if (rc == 0 && !part)
        rc = emit_cut(out, lineno, n - s);
    if (rc == 0 && !part)
        rc = sq_raw_render(out, extra, t + s, n - s);
    return rc;
}

/* Renders one item's lines (markers it carries, then its text).  With
 * extra (a plan measuring a view), its raw text is counted there instead
 * of written: a plan renders many times, and copying every line each time
 * would cost the view's bytes per render. */
static int sq_item_render(const squash_t *sq, const struct sq_item *it,
                          buf_t *out, size_t *extra)
{
    int rc = 0;
    if (it->role == SQ_R_BINARY)
        return emit_binary(out, sq->raw_base + it->raw_start,
                           sq->raw_base + it->raw_end);
    if (it->role == SQ_R_SKIP)
        return emit_omitted_unscanned(out, it->lineno - it->first + 1,
                                      sq->line_base + it->first,
                                      sq->line_base + it->lineno,
                                      sq->raw_base + it->raw_start,
                                      sq->raw_base + it->raw_end);
    if (it->role == SQ_R_PROMPT)
        rc = emit_prompt(out);
    if (rc == 0 && (it->part || it->split || it->len > SQ_LINE_SHOW_MAX)) {
        sq_line_t l = {.text = sq->arena.p + it->off, .len = it->len,
                       .lineno = it->lineno, .raw_start = it->raw_start,
                       .raw_end = it->raw_end, .split = it->split,
                       .full = it->full};
        return sq_long_render(sq, &l, it->part, out, extra);
    }
    if (rc == 0 && it->cut)
        rc = emit_cut(out, sq->line_base + it->lineno, it->len);
    if (rc == 0 && extra)
        *extra += (it->escaped ? strlen(EMIT_ESCAPE) : 0) + it->len + 1;
    else if (rc == 0)
        rc = emit_raw(out, sq->arena.p + it->off, it->len);
    return rc;
}

/* The repeat (and, for hazards, at) markers of a group with members not
 * shown.  They depend on the group alone, so with extra (a plan
 * measuring) a group's markers are written once and then counted by the
 * size they had (gr->cost): an identical hazard's template is its whole
 * line. */
static int sq_group_render(const squash_t *sq, uint32_t group,
                           struct sq_grp *gr, buf_t *out, size_t *extra)
{
    if (group == UINT32_MAX || dedup_count(sq->dd, group) <= gr->shown)
        return 0;
    if (extra && gr->cost[gr->hazard]) {
        *extra += gr->cost[gr->hazard];
        return 0;
    }
    size_t n, at = out->len;
    uint64_t more;
    const dedup_run_t *runs = dedup_runs(sq->dd, group, &n, &more);
    int rc = emit_repeat(out, dedup_count(sq->dd, group),
                         dedup_template_text(sq->dd, group), runs, n, more);
    if (rc == 0 && gr->hazard && dedup_locations_vary(sq->dd, group))
        rc = emit_at(out, sq->dd, group);
    if (rc == 0)
        gr->cost[gr->hazard] = out->len - at;
    return rc;
}

/* A line's bit in the line bitmaps: its number less the lines skipped
 * before it, so that a skip of millions of lines costs no bitmap; false
 * for a skipped line, which has no bit. */
static bool sq_bit_index(const squash_t *sq, uint64_t lineno, uint64_t *idx)
{
    uint64_t shift = 0;
    for (size_t i = 0; i < sq->nskips; i++) {
        const struct sq_skip *k = &sq->skips[i];
        if (lineno < k->first)
            break;
        if (lineno - k->first < k->lines)
            return false;
        shift += k->lines;
    }
    *idx = lineno - shift;
    return true;
}

static void sq_bit_set(const squash_t *sq, struct sq_bits *b, uint64_t lineno)
{
    uint64_t idx;
    if (!sq_bit_index(sq, lineno, &idx))
        return;
    size_t byte = (size_t)(idx / 8);
    if (byte >= b->bytes) {
        size_t n = b->bytes ? b->bytes : 1024;
        while (n <= byte)
            n *= 2;
        uint8_t *p = realloc(b->p, n);
        if (!p)
            return; /* only makes a gap marker appear where none was needed */
        memset(p + b->bytes, 0, n - b->bytes);
        b->p = p;
        b->bytes = n;
    }
    b->p[byte] |= (uint8_t)(1u << (idx % 8));
}

static void sq_bit_clear(const squash_t *sq, struct sq_bits *b,
                         uint64_t lineno)
{
    uint64_t idx;
    if (!sq_bit_index(sq, lineno, &idx))
        return;
    size_t byte = (size_t)(idx / 8);
    if (byte < b->bytes)
        b->p[byte] &= (uint8_t)~(1u << (idx % 8));
}

static bool sq_bit_get(const squash_t *sq, const struct sq_bits *b,
                       uint64_t lineno)
{
    uint64_t idx;
    if (!sq_bit_index(sq, lineno, &idx))
        return false;
    size_t byte = (size_t)(idx / 8);
    return byte < b->bytes && (b->p[byte] >> (idx % 8)) & 1u;
}

static void sq_noise_mark(squash_t *sq, uint64_t lineno)
{
    sq_bit_set(sq, &sq->noisebits, lineno);
}

/* Copies a line into t (its text NUL-terminated). */
static int sq_tail_set(struct sq_tail *t, const sq_line_t *l)
{
    char *p = realloc(t->text, l->len + 1);
    if (!p)
        return -ENOMEM;
    memcpy(p, l->text, l->len);
    p[l->len] = '\0';
    t->text = p;
    t->len = l->len;
    t->lineno = l->lineno;
    t->raw_start = l->raw_start;
    t->raw_end = l->raw_end;
    t->cut = l->cut;
    t->split = l->split;
    t->full = l->split ? l->full : l->len;
    return 0;
}

/* The next piece l of the long line t holds (its first piece, or its
 * pieces merged so far), merged into it: t keeps the line's first
 * SQ_LINE_SHOW_EDGE bytes and its last SQ_LINE_SHOW_EDGE, all a view shows
 * of it (sq_long_render), at UTF-8 boundaries, and counts the rest; it
 * holds at most 2 * SQ_LINE_SHOW_EDGE bytes however long the line. */
static int sq_tail_merge(struct sq_tail *t, const sq_line_t *l)
{
    size_t h = t->split;
    if (!h) {
        h = t->len < SQ_LINE_SHOW_EDGE ? t->len : SQ_LINE_SHOW_EDGE;
        while (h > 0 && h < t->len && ((unsigned char)t->text[h] & 0xC0) == 0x80)
            h--;
    }
    /* the tail: the end of what t had after its head, then l */
    size_t keep = l->len < SQ_LINE_SHOW_EDGE ? SQ_LINE_SHOW_EDGE - l->len : 0;
    size_t old = t->len - h, from = old > keep ? t->len - keep : h;
    while (from < t->len && ((unsigned char)t->text[from] & 0xC0) == 0x80)
        from++;
    size_t lfrom = l->len > SQ_LINE_SHOW_EDGE ? l->len - SQ_LINE_SHOW_EDGE : 0;
    while (lfrom < l->len && ((unsigned char)l->text[lfrom] & 0xC0) == 0x80)
        lfrom++;
    size_t n = h + (t->len - from) + (l->len - lfrom);
    char *p = malloc(n + 1);
    if (!p)
        return -ENOMEM;
    memcpy(p, t->text, h);
    memcpy(p + h, t->text + from, t->len - from);
    memcpy(p + h + (t->len - from), l->text + lfrom, l->len - lfrom);
    p[n] = '\0';
    free(t->text);
    t->text = p;
    t->len = n;
    t->split = h;
    t->full += l->len;
    t->raw_end = l->raw_end;
    return 0;
}

/* Remembers an unknown line for the fallback tail. */
static int sq_tail_push(squash_t *sq, const sq_line_t *l)
{
    if (!sq->ringcap)
        return 0;
    struct sq_tail *t;
    if (sq->ringn < sq->ringcap) {
        t = &sq->ring[(sq->ringhead + sq->ringn++) % sq->ringcap];
    } else {
        t = &sq->ring[sq->ringhead];
        sq->ringhead = (sq->ringhead + 1) % sq->ringcap;
    }
    return sq_tail_set(t, l);
}

/* ---------------------------------------------------------- per line */

static inline bool sq_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Whether a line names a place in a file: `name.ext:N` (a path token
 * with a dot or slash, a colon, a digit), Python's `", line N`, a path
 * token then `, line N` or ` line N` (bats' `(in test file t/a.bats, line
 * 12)`, Perl's and Test::More's `at t/a.t line 12.`), or a `line:col`
 * pair opening an indented row. */
static bool sq_names_location(const char *s, size_t n)
{
    size_t j = 0;
    while (j < n && (s[j] == ' ' || s[j] == '\t'))
        j++;
    if (j < n && sq_digit(s[j])) {
        while (j < n && sq_digit(s[j]))
            j++;
        if (j + 1 < n && s[j] == ':' && sq_digit(s[j + 1])) {
            for (j++; j < n && sq_digit(s[j]);)
                j++;
            if (j < n && (s[j] == ' ' || s[j] == '\t'))
                return true;
        }
    }
    bool pathish = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (pathish && (c == ' ' || c == ',')) {
            size_t w = c == ',' ? i + 1 : i;
            if (w + 6 < n && !memcmp(s + w, " line ", 6) && sq_digit(s[w + 6]))
                return true;
        }
        if (c == ' ' || c == '(' || c == '"' || c == '\'' || c == '\t') {
            pathish = false;
            if (c == '"' && i + 8 < n && !memcmp(s + i, "\", line ", 8) &&
                s[i + 8] >= '0' && s[i + 8] <= '9')
                return true;
        } else if (c == '.' || c == '/') {
            pathish = true;
        } else if (c == ':' && pathish && i + 1 < n && s[i + 1] >= '0' &&
                   s[i + 1] <= '9') {
            return true;
        }
    }
    return false;
}

static bool sq_wordy(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (sq_digit((char)c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
            c >= 0x80)
            return true;
    }
    return false;
}

/* frame_indent: the indent of the last location line of this capture
 * (SIZE_MAX: none); it is updated.  A line indented deeper than the frame
 * above it is that frame's source excerpt (a traceback's code line). */
static enum sq_weight sq_cont_weight(const char *s, size_t n,
                                     size_t *frame_indent)
{
    size_t ind = 0;
    while (ind < n && (s[ind] == ' ' || s[ind] == '\t'))
        ind++;
    if (sq_names_location(s, n)) {
        *frame_indent = ind;
        return SQ_W_LOC;
    }
    if (*frame_indent != SIZE_MAX && ind > *frame_indent)
        return sq_wordy(s, n) ? SQ_W_EXCERPT : SQ_W_MARK;
    *frame_indent = SIZE_MAX;
    /* a gutter: blanks, an optional line number, blanks, '|' */
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    while (i < n && sq_digit(s[i]))
        i++;
    while (i < n && s[i] == ' ')
        i++;
    if (i < n && s[i] == '|')
        return sq_wordy(s + i + 1, n - i - 1) ? SQ_W_EXCERPT : SQ_W_MARK;
    return sq_wordy(s, n) ? SQ_W_TEXT : SQ_W_MARK;
}

/* Whether a line is only carets and tildes under a source excerpt
 * (`               ^`, clang's `    ~~~~~~   ^`), drawn with no gutter. */
static bool sq_caret_line(const char *s, size_t n)
{
    bool mark = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '^' || s[i] == '~')
            mark = true;
        else if (s[i] != ' ' && s[i] != '\t')
            return false;
    }
    return mark;
}

static int sq_stream(squash_t *sq, struct sq_item *it)
{
    if (sq->deferred)
        return 0;
    int rc = sq_item_render(sq, it, &sq->out, NULL);
    it->emitted = true;
    if (it->lineno > sq->stream_last)
        sq->stream_last = it->lineno;
    sq_send(sq, &sq->out);
    /* A streamed line is never rendered again (the summary renders only
     * what was not streamed), so its text need not stay: a stream of a
     * million hazards keeps their items, not their bytes. */
    if (it->off + it->len == sq->arena.len) {
        sq->arena.len = it->off;
        if (sq->arena.p)
            sq->arena.p[it->off] = '\0';
        it->len = 0;
    }
    return rc;
}

/* Sends what the stream of a small output holds (see `small`), in line
 * order: the items not streamed yet, and the unknown lines in the ring,
 * each made a tail item as it goes.  Those are added after the items
 * walked, which is why the walk holds indices, never pointers.  Called
 * before a line is streamed (ahead of its item being added, so that the
 * items keep their order and a hazard's index its meaning), after a
 * quiet spell, and at the end. */
static int sq_send_waiting(squash_t *sq, uint64_t after, size_t keep);

static int sq_release(squash_t *sq)
{
    if (sq->deferred || !sq->small)
        return 0;
    return sq_send_waiting(sq, 0, 0);
}

/*
 * A quiet spell in the stream of an output past the small bounds: what
 * waits for the summary (outcomes, prompts, a dedup group's first line)
 * and the last tail_lines lines go out now, in line order, so that whoever
 * watches sees what the command says as it waits: a server's `Listening on
 * :3000` after its build's chatter, a long job's latest step (the seed's
 * "silence > 2s: flush pending").  Only lines after the last one streamed
 * go, so the stream stays in line order: the ring's older lines stay for
 * the fallback tail at the end, older items wait for the summary.
 * Nothing is sent twice: a spell with nothing new since the last sends
 * nothing.
 */
static int sq_release_quiet(squash_t *sq)
{
    if (sq->deferred || sq->small)
        return 0;
    /* the ring's newest lines after the last streamed, tail_lines at most;
     * the older ones stay for the fallback tail at the end (a failed
     * command's last words, when no error line says why) */
    size_t keep = sq->ringn;
    while (keep && sq->ringn - keep < sq->tail_lines &&
           sq->ring[(sq->ringhead + keep - 1) % sq->ringcap].lineno >
               sq->stream_last)
        keep--;
    return sq_send_waiting(sq, sq->stream_last, keep);
}

/* Sends the items not streamed yet, but for those at or above line
 * `after`, which wait for the summary, and the lines in the ring but its
 * `keep` oldest, in line order; the lines sent leave the ring, the ones
 * kept stay (sq_release, sq_release_quiet). */
static int sq_send_waiting(squash_t *sq, uint64_t after, size_t keep)
{
    size_t end = sq->nitems, i = sq->released, r = keep;
    int rc = 0;
    while (rc == 0 && (i < end || r < sq->ringn)) {
        if (i < end && (sq->items[i].emitted ||
                        sq->items[i].lineno <= after)) {
            i++;
            continue;
        }
        const struct sq_tail *t =
            r < sq->ringn ? &sq->ring[(sq->ringhead + r) % sq->ringcap] : NULL;
        struct sq_item *it;
        if (t && (i == end || t->lineno < sq->items[i].lineno)) {
            sq_line_t l = sq_tail_line(t);
            r++;
            if ((rc = sq_item_add(sq, &l, SQ_R_TAIL, UINT32_MAX, &it)) < 0)
                break;
        } else {
            it = &sq->items[i++]; /* i < end: the loop's condition */
        }
        rc = sq_stream(sq, it);
    }
    /* The lines sent leave the ring: the fallback tail at the end is
     * made of the lines kept and the lines after them. */
    sq->ringn = keep;
    if (!keep)
        sq->ringhead = 0;
    sq->released = sq->nitems;
    return rc;
}

/* Whether the output is still small for its stream (see `small`), with
 * one more complete line. */
static void sq_small_count(squash_t *sq, const sq_line_t *l)
{
    if (!sq->small)
        return;
    sq->small_bytes += l->len + 1;
    if (l->lineno > SQ_SMALL_LINES || l->cut || l->split ||
        sq->small_bytes > SQ_WHOLE_BYTES_MAX)
        sq->small = false;
}

/* Adds a line to its group, of which the view shows `show` members.
 * exact: the group is of identical lines (its marker still shows the
 * template), for hazards: two diagnostics that differ in a name or a
 * location are two facts, and each is shown; *hash is then the line's
 * exact hash. */
static int sq_group_add(squash_t *sq, const sq_line_t *l, const char *loc,
                        size_t loclen, bool exact, uint32_t show,
                        uint32_t *group, uint64_t *hash)
{
    if (exact) {
        /* FNV-1a over the text, from a basis of its own so that an exact
         * group never meets a template group in the table.  Its members
         * are one text, which the repeat marker names as it is: a `{}`
         * would say that something varies.  A log line's time stamp is
         * the one part that does, and says only when: copies of one
         * message logged again and again are one group, and the marker
         * shows the stamp as `{}`. */
        size_t st = dedup_stamp_len(l->text, l->len);
        uint64_t h = SQ_EXACT_BASIS;
        /* glog's stamp opens with the level letter, which is no time: a
         * warning and an error of one text are two groups (`W{} ...`,
         * `E{} ...`). */
        char level = st && dedup_glog_len(l->text, l->len) == st
                         ? l->text[0] : 0;
        if (level)
            h = (h ^ (unsigned char)level) * SQ_FNV_PRIME;
        for (size_t i = st; i < l->len; i++)
            h = (h ^ (unsigned char)l->text[i]) * SQ_FNV_PRIME;
        if (hash)
            *hash = h;
        if (!st)
            return dedup_add(sq->dd, h, l->text, l->len,
                             sq->line_base + l->lineno, loc, loclen, show,
                             group);
        buf_reset(&sq->tmpl);
        if ((level && buf_append_byte(&sq->tmpl, level) < 0) ||
            buf_append_str(&sq->tmpl, "{} ") < 0 ||
            buf_append(&sq->tmpl, l->text + st, l->len - st) < 0)
            return -ENOMEM;
        return dedup_add(sq->dd, h, sq->tmpl.p, sq->tmpl.len,
                         sq->line_base + l->lineno, loc, loclen, show,
                         group);
    }
    uint64_t h = dedup_template(l->text, l->len, &sq->tmpl);
    return dedup_add(sq->dd, h, sq->tmpl.p, sq->tmpl.len,
                     sq->line_base + l->lineno, loc,
                     loclen, show, group);
}

/* Adds a line of a grammar's dedup noise whose rule names the part its
 * members vary in (an `item` group: apt's package name, a word dedup's
 * template would keep): templated with that span as one variable token,
 * so `Inst autoconf (...)` and `Inst automake (...)` are one group, shown
 * once.  As sq_group_add. */
static int sq_item_group_add(squash_t *sq, const sq_line_t *l,
                             const cls_result_t *r, uint32_t *group)
{
    if (r->item_off > l->len || r->item_len > l->len - r->item_off)
        return sq_group_add(sq, l, NULL, 0, false, 1, group, NULL);
    buf_reset(&sq->item_line);
    /* A digit is variable to the template (dedup.c): the span becomes {}. */
    if (buf_append(&sq->item_line, l->text, r->item_off) < 0 ||
        buf_append_byte(&sq->item_line, '0') < 0 ||
        buf_append(&sq->item_line, l->text + r->item_off + r->item_len,
                   l->len - r->item_off - r->item_len) < 0)
        return -ENOMEM;
    uint64_t h = dedup_template(sq->item_line.p, sq->item_line.len,
                                &sq->tmpl);
    return dedup_add(sq->dd, h, sq->tmpl.p, sq->tmpl.len,
                     sq->line_base + l->lineno, NULL, 0, 1, group);
}

/* dedup is giving group g's index to another template (DEDUP_GROUPS_MAX):
 * every member of g is an item (it had no more than its view shows), and
 * each keeps its line but names no group.  The members are found by line
 * number: items are in line order while the input is read. */
static void sq_on_recycle(uint32_t g, void *data)
{
    squash_t *sq = data;
    size_t nr;
    uint64_t more;
    const dedup_run_t *r = dedup_runs(sq->dd, g, &nr, &more);
    for (size_t k = 0; k < nr; k++)
        for (uint64_t ln = r[k].first; ln <= r[k].last; ln++) {
            uint64_t lineno = ln - sq->line_base;
            size_t lo = 0, hi = sq->nitems;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (sq->items[mid].lineno < lineno)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (; lo < sq->nitems && sq->items[lo].lineno == lineno; lo++)
                if (sq->items[lo].group == g)
                    sq->items[lo].group = UINT32_MAX;
        }
}

/* Keeps a line for the whole view while the output stays small.  Small
 * is measured on the output as printed: an escaped line's prefix is rein's
 * (SQ_WHOLE_BYTES_MAX). */
static int sq_whole_add(squash_t *sq, const sq_line_t *l)
{
    if (l->kind == SQ_LINE_BINARY || l->cut ||
        sq->whole_raw + l->len + 1 > SQ_WHOLE_BYTES_MAX) {
        sq->whole_ok = false;
        buf_free(&sq->whole);
        return 0;
    }
    sq->whole_raw += l->len + 1;
    return emit_raw(&sq->whole, l->text, l->len);
}

/* ------------------------------------------------------ folded facts */

/* The key of a line owned by a hazard whose line's exact hash is head:
 * FNV-1a of its text with the blanks around it trimmed, mixed with head;
 * never 0 (the empty slot). */
static uint64_t sq_fact_key(uint64_t head, const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    uint64_t h = 1469598103934665603ull ^ (head * 0x9E3779B97F4A7C15ull);
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ? h : 1;
}

static bool sq_fact_has(const squash_t *sq, uint64_t key)
{
    if (!sq->capfacts)
        return false;
    for (size_t i = key & (sq->capfacts - 1);; i = (i + 1) & (sq->capfacts - 1)) {
        if (sq->facts[i] == key)
            return true;
        if (!sq->facts[i])
            return false;
    }
}

static int sq_fact_add(squash_t *sq, uint64_t key)
{
    if (sq_fact_has(sq, key))
        return 0;
    if ((sq->nfacts + 1) * 2 > sq->capfacts) { /* at most half full */
        size_t cap = sq->capfacts ? sq->capfacts * 2 : 64;
        uint64_t *v = calloc(cap, sizeof *v);
        if (!v)
            return -ENOMEM;
        for (size_t i = 0; i < sq->capfacts; i++) {
            if (!sq->facts[i])
                continue;
            size_t j = sq->facts[i] & (cap - 1);
            while (v[j])
                j = (j + 1) & (cap - 1);
            v[j] = sq->facts[i];
        }
        free(sq->facts);
        sq->facts = v;
        sq->capfacts = cap;
    }
    size_t j = key & (sq->capfacts - 1);
    while (sq->facts[j])
        j = (j + 1) & (sq->capfacts - 1);
    sq->facts[j] = key;
    sq->nfacts++;
    return 0;
}

/* Whether a line a hazard owns is one of its facts: it names a location or
 * carries a message (an excerpt or a caret is not).  Weighed as a shown
 * block's lines are, under the frame above it (frame_indent, updated):
 * a traceback's code line is the excerpt of its `File` line, in a folded
 * copy as in a shown one, so a fourth copy of a traceback does not
 * unfold at its first code line. */
static bool sq_is_fact(const char *s, size_t n, size_t *frame_indent)
{
    enum sq_weight w = sq_cont_weight(s, n, frame_indent);
    return w == SQ_W_LOC || w == SQ_W_TEXT;
}

/* Keeps a copy of a hazard line folded into its group. */
static int sq_fold_keep(squash_t *sq, const sq_line_t *l, uint32_t group,
                        uint64_t key, bool warning)
{
    int rc = sq_tail_set(&sq->folded, l);
    if (rc < 0)
        return rc;
    sq->folded_group = group;
    sq->folded_key = key;
    sq->folded_warning = warning;
    sq->folded_valid = true;
    return 0;
}

static int sq_stream(squash_t *sq, struct sq_item *it);

/*
 * A folded hazard (its text the same as that of SQ_HAZARD_SHOW shown
 * members of its group) whose block has a line no shown member owned
 * (`--> src/mod3.rs:13:13`, `Caused by: ... input_3.csv`) is another
 * diagnostic after all, which the text alone did not tell: it is shown,
 * from that line on, and its location and message lines are never
 * merged away.  Lines of its block before that one stay omitted.  1 when
 * it was unfolded, 0 when it stays folded.
 */
static int sq_unfold(squash_t *sq, const sq_line_t *cont, size_t margin)
{
    if (!sq->folded_valid ||
        !sq_is_fact(cont->text + margin, cont->len - margin,
                    &sq->frame_indent) ||
        sq_fact_has(sq, sq_fact_key(sq->folded_key, cont->text,
                                    cont->len)))
        return 0;
    const struct sq_tail *f = &sq->folded;
    sq_line_t head = sq_tail_line(f);
    struct sq_item *it;
    int rc = sq_release(sq);
    if (rc == 0)
        rc = sq_item_add(sq, &head, SQ_R_HAZARD, sq->folded_group, &it);
    if (rc < 0)
        return rc;
    it->warning = sq->folded_warning;
    sq_bit_clear(sq, &sq->foldbits, f->lineno);
    sq_bit_clear(sq, &sq->foldhaz, f->lineno);
    sq->folded_valid = false;
    sq->head_shown = true;
    sq->last_head = (uint32_t)(sq->nitems - 1);
    sq->head_key = sq->folded_key;
    sq->frame_indent = SIZE_MAX;
    rc = sq_stream(sq, it);
    return rc < 0 ? rc : 1;
}

/* ------------------------------------------------------------ leads */

/* Lead lines i.. that lead into no hazard shown: a grammar's stay the
 * noise they were counted as; the universal tier's are unknown lines, for
 * the fallback tail. */
static int sq_lead_release(squash_t *sq, size_t i, size_t n)
{
    int rc = 0;
    for (; rc == 0 && i < n; i++) {
        const struct sq_tail *t = &sq->lead[i];
        if (!sq->lead_noise[i]) {
            sq_line_t l = sq_tail_line(t);
            rc = sq_tail_push(sq, &l);
        }
    }
    return rc;
}

/* A line that leads into a hazard (gcc's `In file included from
 * src/main.c:3:`, `util.h: In function 'f':`), from a grammar's `lead`
 * rule (noise, counted now) or the universal tier: kept until the next
 * line tells whether it leads into a hazard shown. */
static int sq_lead_push(squash_t *sq, const sq_line_t *l, bool noise)
{
    if (noise) {
        sq->noise[CLS_NOISE_TOOL]++;
        sq_noise_mark(sq, l->lineno);
    }
    /* Past the cap the latest line takes the last slot: a chain keeps its
     * ends (gcc's ends in the source file compiled), its middle goes. */
    size_t i = sq->nlead;
    if (i < SQ_LEAD_MAX) {
        sq->nlead++;
    } else {
        i = SQ_LEAD_MAX - 1;
        int rc = sq_lead_release(sq, i, SQ_LEAD_MAX);
        if (rc < 0)
            return rc;
    }
    sq->lead_noise[i] = noise;
    return sq_tail_set(&sq->lead[i], l);
}

/* The n lead lines waiting lead into the hazard line about to be added as
 * the next item: they become its lines, before it, shown (streamed) when
 * it is and no longer noise. */
static int sq_lead_claim(squash_t *sq, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct sq_tail *t = &sq->lead[i];
        sq_line_t l = sq_tail_line(t);
        struct sq_item *it;
        int rc = sq_item_add(sq, &l, SQ_R_LEAD, UINT32_MAX, &it);
        if (rc < 0)
            return rc;
        /* The hazard's index: the leads come just before it.  Weighed as
         * a location: `from src/main.c:3` names the file that was built. */
        it->head = (uint32_t)(sq->nitems - 1 + (n - i));
        it->weight = SQ_W_LOC;
        if (sq->lead_noise[i]) {
            sq->noise[CLS_NOISE_TOOL]--;
            sq_bit_clear(sq, &sq->noisebits, t->lineno);
        }
        if ((rc = sq_stream(sq, it)) < 0)
            return rc;
    }
    return 0;
}

static int sq_take(squash_t *sq, const sq_line_t *l, cls_result_t r);

/* The line held as an excerpt (sq->held), when the line after it has
 * come: a line of the hazard above when that line confirms it (taken with
 * the caret line's verdict, which is its hazard's), else its own. */
static int sq_held_release(squash_t *sq, const cls_result_t *next)
{
    if (!sq->held_valid)
        return 0;
    sq->held_valid = false;
    const struct sq_tail *t = &sq->held;
    sq_line_t l = sq_tail_line(t);
    cls_result_t r = sq->held_r;
    if (next && next->confirms) {
        r = *next;
        r.confirms = false;
    }
    return sq_take(sq, &l, r);
}

static int sq_long_end(squash_t *sq);

/* No line follows the ones waiting on the next (a skipped middle, the end
 * of output): a held line is no excerpt, and lead lines lead into
 * nothing. */
static int sq_pending_end(squash_t *sq)
{
    int rc = redraw_flush(sq->rd);
    if (rc == 0)
        rc = sq_long_end(sq);
    if (rc == 0)
        rc = sq_held_release(sq, NULL);
    if (rc < 0)
        return rc;
    size_t leads = sq->nlead;
    sq->nlead = 0;
    return sq_lead_release(sq, 0, leads);
}

/* A whole line into the classifier and the view. */
static int sq_line(squash_t *sq, const sq_line_t *l)
{
    int rc = 0;
    if (sq->whole_ok && (rc = sq_whole_add(sq, l)) < 0)
        return rc;
    sq_small_count(sq, l);
    cls_result_t r;
    if ((rc = classify_line(sq->cls, l, &r)) < 0 ||
        (rc = sq_held_release(sq, &r)) < 0)
        return rc;
    if (r.pending) {
        sq->held_r = r;
        sq->held_valid = true;
        return sq_tail_set(&sq->held, l);
    }
    return sq_take(sq, l, r);
}

/* The line longer than SQ_LINE_MAX held (sq->longl) has had its last
 * piece: it goes on as one line. */
static int sq_long_end(squash_t *sq)
{
    if (!sq->long_valid)
        return 0;
    sq->long_valid = false;
    sq_line_t l = sq_tail_line(&sq->longl);
    l.kind = sq->long_kind;
    l.colours = sq->long_colours;
    l.frames = sq->long_frames;
    return sq_line(sq, &l);
}

/* A piece of a line longer than SQ_LINE_MAX (vt.h).  The pieces are one
 * line: the classifier judges it, and the view shows it, by its first and
 * last SQ_LINE_SHOW_EDGE bytes (the classifier reads no more of any line,
 * CLS_SCAN_MAX), and the `omitted part` marker names every byte between,
 * so a 300 KiB `Error: ... status 500` ends as it ended.  Only those bytes
 * are kept while the pieces come (sq_tail_merge), so a line of many MB, or
 * one that never ends, costs no more than one of 64 KiB. */
static int sq_long_add(squash_t *sq, const sq_line_t *l)
{
    int rc = 0;
    if (sq->long_valid && sq->longl.lineno != l->lineno)
        rc = sq_long_end(sq); /* never: a line's last piece ends it */
    if (rc < 0)
        return rc;
    if (!sq->long_valid) {
        if ((rc = sq_tail_set(&sq->longl, l)) < 0)
            return rc;
        sq->long_valid = true;
        sq->long_kind = l->kind;
        sq->long_colours = 0;
        sq->long_frames = 0;
    } else if ((rc = sq_tail_merge(&sq->longl, l)) < 0) {
        return rc;
    }
    /* a binary piece makes the line binary; else it is what its last
     * piece says (an overwrite, a partial line at the end) */
    if (sq->long_kind != SQ_LINE_BINARY)
        sq->long_kind = l->kind;
    sq->long_colours |= l->colours;
    sq->long_frames = l->frames; /* the stripper counts them per line */
    return l->more ? 0 : sq_long_end(sq);
}

/* A partial line that is a prompt, streamed as the line so far would be
 * shown: a long one by its ends, the line's own (with the pieces before
 * it, sq->longl, when it is past SQ_LINE_MAX). */
static int sq_prompt_stream(squash_t *sq, const sq_line_t *l)
{
    struct sq_tail t = {0};
    sq_line_t line = *l;
    int rc = 0;
    if (l->cut && sq->long_valid) {
        sq_line_t before = sq_tail_line(&sq->longl);
        if ((rc = sq_tail_set(&t, &before)) == 0 &&
            (rc = sq_tail_merge(&t, l)) == 0)
            line = sq_tail_line(&t);
    }
    if (rc == 0)
        rc = sq_release(sq);
    if (rc == 0)
        rc = emit_prompt(&sq->out);
    if (rc == 0 && (line.split || line.len > SQ_LINE_SHOW_MAX))
        rc = sq_long_render(sq, &line, 0, &sq->out, NULL);
    else if (rc == 0)
        rc = emit_raw(&sq->out, line.text, line.len);
    free(t.text);
    sq_send(sq, &sq->out);
    return rc;
}

/* Whether a frame a later one drew over must be shown all the same: it
 * says an error or a warning, and a failure a program drew and then drew
 * over is still a fact (it comes in its turn, redraw.h). */
static bool sq_keep_frame(const sq_line_t *l, void *data)
{
    (void)data;
    return classify_hazard_line(l->text, l->len, l->colours);
}

/* A line out of the redraw hold (redraw.h).  A frame a later one drew
 * over (as it is replaced, out of line order) is progress, counted and
 * never shown; the whole view leaves it out too, as it leaves out the
 * frames of a carriage-return bar (sq_whole_view).  Every other line, a
 * kept frame among them, in order into the view. */
static int sq_on_frame(const sq_line_t *l, redraw_how_t how, void *data)
{
    squash_t *sq = data;
    if (how == REDRAW_DROPPED) {
        sq_small_count(sq, l);
        sq->noise[CLS_NOISE_PROGRESS]++;
        sq->frames_dropped++;
        sq_noise_mark(sq, l->lineno);
        return 0;
    }
    if (l->cut)
        return sq_long_add(sq, l);
    int rc = sq_long_end(sq); /* never: a line's last piece ends it */
    return rc < 0 ? rc : sq_line(sq, l);
}

static int sq_on_line(const sq_line_t *l, void *data)
{
    squash_t *sq = data;
    int rc = 0;

    if (l->kind == SQ_LINE_PARTIAL && !sq->finishing) {
        /* A pause mid-line: a prompt is worth saying at once, after the
         * lines before it. */
        if (!sq->deferred && classify_prompt(l->text, l->len) &&
            (rc = redraw_flush(sq->rd)) == 0)
            rc = sq_prompt_stream(sq, l);
        return rc;
    }
    return redraw_put(sq->rd, l);
}

/* A classified line into the view's items and counts. */
static int sq_take(squash_t *sq, const sq_line_t *l, cls_result_t r)
{
    struct sq_item *it;
    uint32_t group;
    uint64_t key = 0;
    int rc = 0, cnt;
    if (r.lead)
        return sq_lead_push(sq, l, r.kind == CLS_NOISE);
    /* The lead lines waiting are this line's if it is a hazard line shown,
     * else what they were classified. */
    size_t leads = sq->nlead;
    sq->nlead = 0;
    if ((r.kind != CLS_HAZARD || r.cont) &&
        (rc = sq_lead_release(sq, 0, leads)) < 0)
        return rc;
    switch (r.kind) {
    case CLS_HAZARD:
        if (r.cont) {
            if (!sq->head_shown && (rc = sq_unfold(sq, l, r.margin)) <= 0) {
                if (rc < 0)
                    return rc;
                sq->st.omitted++;
                return 0;
            }
            if ((rc = sq_release(sq)) < 0 ||
                (rc = sq_item_add(sq, l, SQ_R_CONT, UINT32_MAX, &it)) < 0)
                return rc;
            it->head = sq->last_head;
            /* weighed past a margin drawn before it (r.margin) */
            it->weight = (uint8_t)sq_cont_weight(l->text + r.margin,
                                                 l->len - r.margin,
                                                 &sq->frame_indent);
            /* A caret line says the line above it was a source excerpt,
             * which a compiler that draws no gutter (clang, javac) leaves
             * looking like a message. */
            struct sq_item *above = sq->nitems > 1 ? it - 1 : NULL;
            if (above && above->role == SQ_R_CONT &&
                above->head == it->head && above->weight == SQ_W_TEXT &&
                sq_caret_line(l->text, l->len))
                above->weight = SQ_W_EXCERPT;
            if ((it->weight == SQ_W_LOC || it->weight == SQ_W_TEXT) &&
                (rc = sq_fact_add(sq, sq_fact_key(sq->head_key, l->text,
                                                  l->len))) < 0)
                return rc;
            return sq_stream(sq, it);
        }
        sq->hazards++;
        if (r.warning)
            sq->warnings++;
        else
            sq->errors++;
        cnt = sq_group_add(sq, l, r.has_loc ? l->text + r.loc_off : NULL,
                           r.has_loc ? r.loc_len : 0, true, SQ_HAZARD_SHOW,
                           &group, &key);
        if (cnt < 0)
            return cnt;
        sq->head_shown = cnt <= SQ_HAZARD_SHOW;
        sq->folded_valid = false;
        if (!sq->head_shown) {
            sq_bit_set(sq, &sq->foldbits, l->lineno);
            sq_bit_set(sq, &sq->foldhaz, l->lineno);
            sq->frame_indent = SIZE_MAX; /* its block is weighed afresh */
            if ((rc = sq_lead_release(sq, 0, leads)) < 0)
                return rc;
            return sq_fold_keep(sq, l, group, key, r.warning);
        }
        if ((rc = sq_release(sq)) < 0 ||
            (rc = sq_lead_claim(sq, leads)) < 0 ||
            (rc = sq_item_add(sq, l, SQ_R_HAZARD, group, &it)) < 0)
            return rc;
        it->warning = r.warning;
        sq->last_head = (uint32_t)(sq->nitems - 1);
        sq->head_key = key;
        sq->frame_indent = SIZE_MAX;
        return sq_stream(sq, it);
    case CLS_OUTCOME:
        sq->outcomes++;
        /* A listing's lines (paths, states, hashes) are each a fact: no
         * template may fold them together. */
        if (r.grammar ? !strcmp(grammar_category(r.grammar), "structured")
                      : sq->structured)
            return sq_item_add(sq, l, SQ_R_OUTCOME, UINT32_MAX, &it);
        /* A verdict the universal rules call an error (`FAIL\tpkg`) is
         * grouped only with its identical copies: each package's is a
         * fact. */
        cnt = sq_group_add(sq, l, NULL, 0, r.failure, SQ_OUTCOME_SHOW,
                           &group, NULL);
        if (cnt < 0)
            return cnt;
        if (cnt > SQ_OUTCOME_SHOW) {
            sq_bit_set(sq, &sq->foldbits, l->lineno);
            return 0;
        }
        return sq_item_add(sq, l, SQ_R_OUTCOME, group, &it);
    case CLS_PROMPT:
        sq->prompts++;
        return sq_item_add(sq, l, SQ_R_PROMPT, UINT32_MAX, &it);
    case CLS_BINARY:
        /* a run of binary lines is one item, unless its marker is out
         * already (a quiet spell sent it): the rest is another */
        if (sq->nitems && sq->items[sq->nitems - 1].role == SQ_R_BINARY &&
            !sq->items[sq->nitems - 1].emitted &&
            sq->items[sq->nitems - 1].raw_end == l->raw_start) {
            sq->items[sq->nitems - 1].raw_end = l->raw_end;
            sq->items[sq->nitems - 1].lineno = l->lineno;
            sq_noise_mark(sq, l->lineno - 1); /* covered by the marker */
            return 0;
        }
        /* the marker stands for the bytes: a binary run keeps no text */
        return sq_item_add(sq, &(sq_line_t){.lineno = l->lineno,
                                            .raw_start = l->raw_start,
                                            .raw_end = l->raw_end,
                                            .kind = l->kind, .text = ""},
                           SQ_R_BINARY, UINT32_MAX, &it);
    case CLS_NOISE:
        sq->noise[r.noise]++;
        sq_noise_mark(sq, l->lineno);
        if (r.noise == CLS_NOISE_DEDUP) {
            cnt = r.has_item ? sq_item_group_add(sq, l, &r, &group)
                             : sq_group_add(sq, l, NULL, 0, false, 1, &group,
                                            NULL);
            if (cnt < 0)
                return cnt;
            if (cnt == 1)
                return sq_item_add(sq, l, SQ_R_DEDUP, group, &it);
        }
        if (r.noise == CLS_NOISE_REPEAT)
            return sq_tail_push(sq, l);
        return 0;
    case CLS_UNKNOWN:
    default:
        return sq_tail_push(sq, l);
    }
}

/* ------------------------------------------------------------- public */

int squash_new(const sq_opts_t *opts, sq_emit_fn emit, void *data,
               squash_t **out)
{
    squash_t *sq = calloc(1, sizeof *sq);
    if (!sq)
        return -ENOMEM;
    int rc = -ENOMEM;
    sq->emit = emit;
    sq->data = data;
    sq->budget = opts->budget_bytes;
    sq->exit_signal = -1; /* unknown until squash_set_signal */
    sq->raw_base = opts->raw_base;
    sq->line_base = opts->line_base;
    sq->cap = opts->cap_to_input;
    sq->deferred = opts->deferred || sq->budget || sq->cap;
    sq->tail_lines = opts->tail_lines ? opts->tail_lines : SQ_TAIL_DEFAULT;
    if (opts->command && !(sq->command = strdup(opts->command)))
        goto fail;
    if (opts->log_path && !(sq->log_path = strdup(opts->log_path)))
        goto fail;
    sq->ringcap = sq->tail_lines > SQ_SMALL_LINES ? sq->tail_lines : SQ_SMALL_LINES;
    if (!(sq->ring = calloc(sq->ringcap, sizeof *sq->ring)))
        goto fail;
    const grammar_set_t *set = opts->grammars;
    if (!set && opts->command) {
        /* Bad user grammars must not stop the squasher: their errors are
         * for `rein grammar check`, the set keeps the good ones. */
        buf_t errs = BUF_INIT;
        rc = grammar_set_load(&sq->own_set, opts->grammar_dirs, &errs);
        buf_free(&errs);
        if (rc < 0)
            goto fail;
        set = sq->own_set;
    }
    if (set && opts->command) {
        grammar_ctx_t *ctx;
        if ((rc = grammar_ctx_new(&ctx)) < 0)
            goto fail;
        sq->ng = grammar_set_detect_all(set, ctx, opts->command, sq->gs);
        grammar_ctx_free(ctx);
    }
    sq->structured = sq->ng && !strcmp(grammar_category(sq->gs[0]),
                                       "structured");
    sq->whole_ok = sq->deferred;
    sq->small = !sq->deferred;
    if ((rc = vt_new(sq_on_line, sq, &sq->vt)) < 0 ||
        (rc = redraw_new(sq->deferred ? REDRAW_REACH : 0, sq_on_frame,
                         sq_keep_frame, sq, &sq->rd)) < 0 ||
        (rc = classify_new_set(sq->gs, sq->ng, &sq->cls)) < 0 || (rc = dedup_new(&sq->dd)) < 0)
        goto fail;
    dedup_on_recycle(sq->dd, sq_on_recycle, sq);
    vt_set_cols(sq->vt, opts->cols);
    /* a frame of the cursor's row erased or drawn over before the row
     * came out meets the same keep as a frame of a row drawn again */
    vt_set_keep(sq->vt, sq_keep_frame, sq);
    *out = sq;
    return 0;
fail:
    squash_free(sq);
    return rc;
}

void squash_free(squash_t *sq)
{
    if (!sq)
        return;
    free(sq->command);
    free(sq->log_path);
    vt_free(sq->vt);
    redraw_free(sq->rd);
    classify_free(sq->cls);
    dedup_free(sq->dd);
    grammar_set_free(sq->own_set);
    buf_free(&sq->arena);
    free(sq->items);
    for (size_t i = 0; sq->ring && i < sq->ringcap; i++)
        free(sq->ring[i].text);
    free(sq->ring);
    free(sq->noisebits.p);
    free(sq->foldbits.p);
    free(sq->foldhaz.p);
    free(sq->skips);
    free(sq->rank.words);
    free(sq->rank.before);
    free(sq->hazrank.words);
    free(sq->hazrank.before);
    free(sq->folded.text);
    free(sq->held.text);
    free(sq->longl.text);
    for (size_t i = 0; i < SQ_LEAD_MAX; i++)
        free(sq->lead[i].text);
    free(sq->facts);
    buf_free(&sq->whole);
    buf_free(&sq->out);
    buf_free(&sq->tmpl);
    buf_free(&sq->item_line);
    free(sq);
}

int squash_feed(squash_t *sq, const void *data, size_t len, uint64_t now_ms)
{
    if (sq->finished)
        return -EINVAL;
    if (len)
        sq->last_feed_ms = now_ms;
    return vt_feed(sq->vt, data, len, now_ms);
}

int squash_tick(squash_t *sq, uint64_t now_ms)
{
    if (sq->finished)
        return -EINVAL;
    int rc = vt_tick(sq->vt, now_ms);
    /* a quiet spell: what waits for a redraw shows as it stands */
    if (rc == 0 && now_ms - sq->last_feed_ms >= SQ_QUIET_MS &&
        !sq->deferred && (rc = redraw_flush(sq->rd)) == 0)
        rc = sq->small ? sq_release(sq) : sq_release_quiet(sq);
    return rc;
}

int squash_skip(squash_t *sq, uint64_t bytes, uint64_t lines)
{
    if (sq->finished || !sq->deferred || (bytes == 0) != (lines == 0))
        return -EINVAL;
    if (bytes == 0)
        return 0;
    struct sq_skip *k = realloc(sq->skips, (sq->nskips + 1) * sizeof *k);
    if (!k)
        return -ENOMEM;
    sq->skips = k;
    int rc = vt_skip(sq->vt, bytes, lines);
    if (rc < 0)
        return rc;
    /* Lines waiting to lead into a hazard lead into nothing past the gap
     * (vt_skip has ended the line pending before it), nor is a line held
     * as an excerpt one. */
    if ((rc = sq_pending_end(sq)) < 0)
        return rc;
    uint64_t raw, total;
    vt_counts(sq->vt, &raw, &total, NULL);
    sq->skips[sq->nskips++] = (struct sq_skip){total - lines + 1, lines};
    struct sq_item *it;
    sq_line_t l = {.text = "", .lineno = total, .raw_start = raw - bytes,
                   .raw_end = raw};
    if ((rc = sq_item_add(sq, &l, SQ_R_SKIP, UINT32_MAX, &it)) < 0)
        return rc;
    it->first = total - lines + 1;
    /* The whole view would join the lines on either side as if nothing
     * were between them. */
    sq->whole_ok = false;
    buf_free(&sq->whole);
    /* What follows is judged afresh: a traceback before the gap does not
     * own the first lines after it, nor can they unfold a hazard folded
     * before it. */
    classify_t *cls;
    if ((rc = classify_new_set(sq->gs, sq->ng, &cls)) < 0)
        return rc;
    classify_free(sq->cls);
    sq->cls = cls;
    sq->folded_valid = false;
    sq->head_shown = false;
    sq->frame_indent = SIZE_MAX;
    return 0;
}

static int sq_item_cmp(const void *a, const void *b)
{
    const struct sq_item *x = a, *y = b;
    if (x->lineno != y->lineno)
        return x->lineno < y->lineno ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off; /* arena order = arrival */
}

/* Adds the fallback tail as items: the whole of a small output, else the
 * last tail_lines unknown lines. */
static int sq_add_tail(squash_t *sq, uint64_t lines)
{
    size_t n = sq->ringn;
    if (lines > SQ_SMALL_LINES && n > sq->tail_lines)
        n = sq->tail_lines;
    for (size_t i = sq->ringn - n; i < sq->ringn; i++) {
        const struct sq_tail *t = &sq->ring[(sq->ringhead + i) % sq->ringcap];
        sq_line_t l = sq_tail_line(t);
        struct sq_item *it;
        int rc = sq_item_add(sq, &l, SQ_R_TAIL, UINT32_MAX, &it);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The noise counts a view names: the lines classified as noise less those
 * it shows anyway, which are not dropped (the noise marker counts dropped
 * lines only, docs/markers.md): the first line of each group a grammar's
 * dedup rule folds, and the near-duplicates the fallback tail keeps so that
 * output which is all alike still ends with its last lines. */
static void sq_noise_dropped(const squash_t *sq,
                             uint64_t out[CLS_NOISE_REASONS])
{
    memcpy(out, sq->noise, sizeof sq->noise);
    for (size_t i = 0; i < sq->nitems; i++) {
        const struct sq_item *it = &sq->items[i];
        if (!it->selected || !sq_bit_get(sq, &sq->noisebits, it->lineno))
            continue;
        int reason = it->role == SQ_R_DEDUP  ? CLS_NOISE_DEDUP
                     : it->role == SQ_R_TAIL ? CLS_NOISE_REPEAT
                                             : -1;
        if (reason < 0)
            continue;
        if (out[reason])
            out[reason]--;
    }
}

static uint64_t sq_noise_sum(const uint64_t counts[CLS_NOISE_REASONS])
{
    uint64_t n = 0;
    for (int i = 0; i < CLS_NOISE_REASONS; i++)
        n += counts[i];
    return n;
}

/* The bitmap word w (64 line bits from bit 64w) of b. */
static uint64_t sq_bits_word(const struct sq_bits *b, size_t w)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 8 && w * 8 + i < b->bytes; i++)
        v |= (uint64_t)b->p[w * 8 + i] << (8 * i);
    return v;
}

/* Builds a rank over nbits line bits: of the lines that matter (not
 * noise and, unless under an explicit budget, not folded into a group),
 * or with folded, of the hazards folded into their group. */
static int sq_rank_make(const squash_t *sq, struct sq_rank *r, uint64_t nbits,
                        bool folded)
{
    r->nbits = nbits;
    r->nwords = (size_t)(r->nbits / 64) + 1;
    if (!(r->words = malloc(r->nwords * sizeof *r->words)) ||
        !(r->before = malloc((r->nwords + 1) * sizeof *r->before)))
        return -ENOMEM;
    r->before[0] = 0;
    for (size_t w = 0; w < r->nwords; w++) {
        uint64_t v = folded ? sq_bits_word(&sq->foldhaz, w)
                            : ~sq_bits_word(&sq->noisebits, w);
        if (!folded && !sq->budget)
            v &= ~sq_bits_word(&sq->foldbits, w);
        if (w == 0)
            v &= ~1ull; /* no line 0 */
        if (w == r->nwords - 1 && r->nbits % 64)
            v &= (1ull << (r->nbits % 64)) - 1;
        else if (w == r->nwords - 1)
            v = 0;
        r->words[w] = v;
        r->before[w + 1] = r->before[w] + (uint64_t)__builtin_popcountll(v);
    }
    return 0;
}

/* Builds sq->rank (and, under an explicit budget, sq->hazrank) for lines
 * 1..lines, less the skipped ones.  The bitmaps are final once the input
 * has ended. */
static int sq_rank_build(squash_t *sq, uint64_t lines)
{
    uint64_t skipped = 0;
    for (size_t i = 0; i < sq->nskips; i++)
        skipped += sq->skips[i].lines;
    int rc = sq_rank_make(sq, &sq->rank, lines - skipped + 1, false);
    if (rc == 0 && sq->budget)
        rc = sq_rank_make(sq, &sq->hazrank, lines - skipped + 1, true);
    return rc;
}

/* Lines that matter among bits 0..x-1. */
static uint64_t sq_rank_of(const struct sq_rank *r, uint64_t x)
{
    size_t w = (size_t)(x / 64);
    unsigned b = (unsigned)(x % 64);
    return r->before[w] +
           (b ? (uint64_t)__builtin_popcountll(r->words[w] &
                                               ((1ull << b) - 1))
              : 0);
}

/* Has [a, b] (line numbers) a line no other marker counts?  Noise lines
 * are in the noise marker; a line folded into a hazard or outcome group is
 * in the group's repeat marker, which is rendered whenever the group has a
 * line shown: always, unless an explicit budget may drop them all.  A
 * skipped line has no bit and counts (a gap never spans one: its item is
 * always shown); so does a line past the bitmaps. */
static bool sq_gap_matters(const squash_t *sq, uint64_t a, uint64_t b)
{
    uint64_t ia, ib;
    if (!sq_bit_index(sq, a, &ia) || !sq_bit_index(sq, b, &ib) ||
        ib - ia != b - a || ib >= sq->rank.nbits)
        return true;
    return sq_rank_of(&sq->rank, ib + 1) > sq_rank_of(&sq->rank, ia);
}

/* Hazards folded into their group among lines [a, b], under an explicit
 * budget: a gap's `; N hazards` counts them with the hazard lines it
 * hides, since the budget may show no member of their group, and then no
 * repeat marker names them.  Without one, every group with a folded member
 * shows its marker, and the count is 0.  A gap never spans a skip. */
static uint64_t sq_gap_folded(const squash_t *sq, uint64_t a, uint64_t b)
{
    uint64_t ia, ib;
    if (!sq->hazrank.words || !sq_bit_index(sq, a, &ia) ||
        !sq_bit_index(sq, b, &ib) || ib >= sq->hazrank.nbits)
        return 0;
    return sq_rank_of(&sq->hazrank, ib + 1) - sq_rank_of(&sq->hazrank, ia);
}

/* Whether an item is a line a hazard owns (after it or before it). */
static bool sq_owned(const struct sq_item *it)
{
    return (it->role == SQ_R_CONT || it->role == SQ_R_LEAD) &&
           it->head != UINT32_MAX;
}

/* The group whose repeat marker an item's block ends with: its own, or,
 * for a line a hazard owns, its hazard's; UINT32_MAX for none. */
static uint32_t sq_block_group(const squash_t *sq, const struct sq_item *it)
{
    if (sq_owned(it))
        return sq->items[it->head].group;
    return it->group;
}

/* The markers a view puts between two of its shown items, prev (NULL:
 * the view's start) and next (NULL: its end), with `hidden` hazard items
 * between them left out: the gap's `omitted` marker, when its lines are
 * not all counted by other markers.  Sets *dropped when anything is left
 * out there.  The one account of a gap: sq_render writes it, and a plan sizes
 * views gap by gap with it (sq_plan_sizes). */
static int sq_gap_render(const squash_t *sq, const struct sq_view *v,
                         const struct sq_item *prev,
                         const struct sq_item *next, uint64_t hidden,
                         buf_t *out, bool *dropped)
{
    bool bytes = sq->budget != 0;
    uint64_t last = prev ? prev->lineno : 0;
    uint64_t last_raw = prev ? prev->raw_end : 0;
    int rc = 0;
    if (!next) {
        if (v->lines <= last && !hidden)
            return 0;
        *dropped = true;
        uint64_t hz = v->lines > last ? hidden + sq_gap_folded(sq, last + 1,
                                                               v->lines)
                                      : hidden;
        if (v->lines > last && (sq_gap_matters(sq, last + 1, v->lines) || hz)) {
            uint64_t br[2] = {sq->raw_base + last_raw,
                              sq->raw_base + v->raw_bytes};
            rc = emit_omitted(out, v->lines - last, sq->line_base + last + 1,
                              sq->line_base + v->lines, bytes ? br : NULL, hz);
        }
        return rc;
    }
    if (next->first > last + 1 || hidden) {
        uint64_t a = last + 1, b = next->first - (next->first > last);
        if (b >= a) {
            uint64_t hz = hidden + sq_gap_folded(sq, a, b);
            *dropped = true;
            if (sq_gap_matters(sq, a, b) || hz) {
                uint64_t br[2] = {sq->raw_base + last_raw,
                                  sq->raw_base + next->raw_start};
                rc = emit_omitted(out, b - a + 1, sq->line_base + a,
                                  sq->line_base + b, bytes ? br : NULL, hz);
            }
        }
    }
    return rc;
}

/* Renders the deferred output of the selected items into out.  With extra,
 * a plan measuring: the view's size is out->len + *extra (raw lines and
 * known group markers are counted, not written).  O(items + groups + the
 * bytes written): a group's markers go after its last shown block, and
 * what it shows is counted in one pass before. */
static int sq_render(squash_t *sq, buf_t *out, size_t *extra,
                     const struct sq_view *v, bool *dropped)
{
    int rc = emit_exit(out, v->exit_code, sq->exit_signal, v->duration_ms,
                       sq->line_base + v->lines);
    uint64_t hidden_hazards = 0;
    size_t ng = dedup_group_count(sq->dd);
    struct sq_grp *grp = v->grp;
    const struct sq_item *prev = NULL;
    *dropped = false;
    for (size_t g = 0; g < ng; g++) {
        grp[g].last = UINT32_MAX;
        grp[g].shown = 0;
        grp[g].hazard = false;
    }
    /* A group's marker comes after the block of its last shown member:
     * the lines that member owns are its, not the marker's. */
    for (size_t i = 0; i < sq->nitems; i++) {
        const struct sq_item *it = &sq->items[i];
        uint32_t g = sq_block_group(sq, it);
        if (!it->selected)
            continue;
        if (g < ng)
            grp[g].last = (uint32_t)i;
        if (it->group < ng) {
            grp[it->group].shown++;
            grp[it->group].hazard = it->role == SQ_R_HAZARD;
        }
    }
    for (size_t i = 0; rc == 0 && i < sq->nitems; i++) {
        const struct sq_item *it = &sq->items[i];
        uint32_t bg = sq_block_group(sq, it);
        if (!it->selected) {
            hidden_hazards += it->role == SQ_R_HAZARD;
            continue;
        }
        rc = sq_gap_render(sq, v, prev, it, hidden_hazards, out, dropped);
        hidden_hazards = 0;
        if (it->role == SQ_R_SKIP || it->shown_cut || it->part)
            *dropped = true;
        if (rc == 0)
            rc = sq_item_render(sq, it, out, extra);
        if (rc == 0 && bg < ng && grp[bg].last == i) {
            if (dedup_count(sq->dd, bg) > grp[bg].shown)
                *dropped = true;
            rc = sq_group_render(sq, bg, &grp[bg], out, extra);
        }
        prev = it;
    }
    if (rc == 0)
        rc = sq_gap_render(sq, v, prev, NULL, hidden_hazards, out, dropped);
    uint64_t noise[CLS_NOISE_REASONS];
    sq_noise_dropped(sq, noise);
    if (rc == 0 && sq_noise_sum(noise) && !v->no_noise)
        rc = emit_noise(out, noise);
    if (rc == 0 && *dropped && sq->log_path)
        rc = emit_log(out, sq->log_path, sq->log_lost);
    return rc;
}

/* The size of the view of the selected items, rendered in measure mode
 * into scratch; 0 on error (*rc set). */
static size_t sq_measure(squash_t *sq, buf_t *scratch,
                         const struct sq_view *v, int *rc)
{
    size_t extra = 0;
    bool dropped;
    buf_reset(scratch);
    *rc = sq_render(sq, scratch, &extra, v, &dropped);
    return *rc < 0 ? 0 : scratch->len + extra;
}

/* Whether a plan keeps this item whatever its cost.  Only an explicit
 * budget may drop a hazard; the input cap (cap_to_input) is a goal that
 * gives way to the facts: hazards, the locations and message lines they
 * own, and outcomes stay; the room is made from the rest (source excerpts
 * and carets, then deduplicated and tail lines). */
static bool sq_must(const squash_t *sq, const struct sq_item *it)
{
    if (it->role == SQ_R_SKIP)
        return true; /* not a line: the marker of lines nobody read */
    return !sq->budget &&
           (it->role == SQ_R_HAZARD || it->role == SQ_R_OUTCOME ||
            (sq_owned(it) && it->weight >= SQ_W_TEXT));
}

/* Leading blanks of an item's text. */
static size_t sq_item_indent(const squash_t *sq, const struct sq_item *it)
{
    const char *t = sq->arena.p + it->off;
    size_t i = 0;
    while (i < it->len && (t[i] == ' ' || t[i] == '\t'))
        i++;
    return i;
}

/* The last line hazard item h owns when it carries a message (or a
 * location) at the hazard's own indentation: the line that closes the
 * capture, such as a traceback's exception line (`RuntimeError: disk
 * full` under `Traceback (most recent call last):`), which says what the
 * hazard line does not.  Only for a hazard line that announces what
 * follows (it ends in a colon): one that says what failed itself (`not ok
 * 3 - add`) keeps its location first, and its closing line (TAP's
 * `expected: ...`) is one of its messages.  0 for none. */
static size_t sq_closing(const squash_t *sq, size_t h)
{
    const struct sq_item *hz = &sq->items[h];
    const char *t = sq->arena.p + hz->off;
    size_t e = hz->len;
    while (e && (t[e - 1] == ' ' || t[e - 1] == '\t' || t[e - 1] == '\r'))
        e--;
    if (!e || t[e - 1] != ':')
        return 0;
    size_t i = h + 1;
    while (i < sq->nitems && sq->items[i].role == SQ_R_CONT)
        i++;
    if (i == h + 1)
        return 0;
    const struct sq_item *it = &sq->items[i - 1];
    if (it->weight < SQ_W_TEXT ||
        sq_item_indent(sq, it) > sq_item_indent(sq, &sq->items[h]))
        return 0;
    return i - 1;
}

/* Unselects item gone, and the lines it owns when it is a hazard (they
 * follow it, up to the next hazard; its leads are just before it). */
static void sq_unselect(squash_t *sq, uint32_t gone)
{
    sq->items[gone].selected = false;
    for (size_t i = gone; i-- > 0 && sq->items[i].role == SQ_R_LEAD &&
                          sq->items[i].head == gone;)
        sq->items[i].selected = false;
    for (size_t i = gone + 1;
         i < sq->nitems && sq->items[i].role != SQ_R_HAZARD; i++)
        if (sq->items[i].role == SQ_R_CONT && sq->items[i].head == gone)
            sq->items[i].selected = false;
}

/* The selection once the last d of the nd droppable items (drop, in
 * priority order) are dropped, from the selection before any (base); as
 * d single sq_unselect calls would leave it, in one pass. */
static void sq_drop_to(squash_t *sq, const bool *base, const uint32_t *pos,
                       size_t nd, size_t d)
{
    for (size_t i = 0; i < sq->nitems; i++) {
        struct sq_item *it = &sq->items[i];
        bool gone = pos[i] != UINT32_MAX && pos[i] >= nd - d;
        bool head_gone = sq_owned(it) &&
                         pos[it->head] != UINT32_MAX &&
                         pos[it->head] >= nd - d;
        it->selected = base[i] && !gone && !head_gone;
    }
}

/* The bytes an item's own lines add to a view (its markers and text). */
static size_t sq_item_cost(const squash_t *sq, const struct sq_item *it,
                           buf_t *scratch)
{
    size_t extra = 0;
    buf_reset(scratch);
    return sq_item_render(sq, it, scratch, &extra) < 0 ? SIZE_MAX / 4
                                                       : scratch->len + extra;
}

/* Bytes of a gap's markers (sq_gap_render); *dropped as it sets it. */
static size_t sq_gap_cost(const squash_t *sq, const struct sq_view *v,
                          const struct sq_item *prev,
                          const struct sq_item *next, uint64_t hidden,
                          buf_t *scratch, bool *dropped, int *rc)
{
    buf_reset(scratch);
    *dropped = false;
    *rc = sq_gap_render(sq, v, prev, next, hidden, scratch, dropped);
    return scratch->len;
}

/*
 * The size of the view of each prefix of the hazard order, those hazards
 * alone (and the middles squash_skip stepped over, always shown), each
 * as its part says (sq_plan_hazards): size[k] for order[0..k), k =
 * 0..nh, exact.  The view of them all is summed up
 * once, gap by gap; then the hazards are taken out, the last first: each
 * one's gaps on either side become one (sq_gap_render sizes it), and its
 * group's markers may come or go.  So every prefix is sized by a few
 * markers, not by a render of its own.
 */
static int sq_plan_sizes(squash_t *sq, const struct sq_view *v,
                         const uint32_t *order, size_t nh, buf_t *scratch,
                         size_t *size)
{
    size_t n = sq->nitems, ng = dedup_group_count(sq->dd);
    const uint32_t none = UINT32_MAX;
    /* the shown items as a list in line order; slot n stands for the
     * view's end: gap[i] is the gap before item i, hid[i] the hazards
     * left out in it */
    uint32_t *prv = malloc((n + 1) * sizeof *prv);
    uint32_t *nxt = malloc((n + 1) * sizeof *nxt);
    uint64_t *hid = calloc(n + 1, sizeof *hid);
    size_t *gap = calloc(n + 1, sizeof *gap);
    size_t *cost = calloc(n + 1, sizeof *cost); /* each item's own lines */
    bool *gdrop = calloc(n + 1, sizeof *gdrop);
    uint32_t *shown = calloc(ng ? ng : 1, sizeof *shown);
    size_t *gcost = calloc(ng ? ng : 1, sizeof *gcost);
    int rc = 0;
    if (!prv || !nxt || !hid || !gap || !cost || !gdrop || !shown ||
        !gcost) {
        rc = -ENOMEM;
        goto done;
    }
    size_t body = 0, ndrop = 0;
    uint32_t last = none;
    for (size_t i = 0; rc == 0 && i <= n; i++) {
        const struct sq_item *it = i < n ? &sq->items[i] : NULL;
        if (it && it->role != SQ_R_HAZARD && it->role != SQ_R_SKIP)
            continue;
        prv[i] = last;
        if (last != none)
            nxt[last] = (uint32_t)i;
        last = (uint32_t)i;
        gap[i] = sq_gap_cost(sq, v, prv[i] == none ? NULL : &sq->items[prv[i]],
                             it, 0, scratch, &gdrop[i], &rc);
        body += gap[i];
        ndrop += gdrop[i];
        if (!it)
            break;
        cost[i] = sq_item_cost(sq, it, scratch);
        body += cost[i];
        ndrop += it->role == SQ_R_SKIP || it->shown_cut || it->part;
        if (it->group < ng)
            shown[it->group]++;
    }
    nxt[n] = none;
    /* a group's markers: the first time they are needed, their size */
    for (size_t g = 0; rc == 0 && g < ng; g++) {
        if (!shown[g])
            continue;
        struct sq_grp gr = {.shown = 1, .hazard = true};
        buf_reset(scratch);
        rc = sq_group_render(sq, (uint32_t)g, &gr, scratch, NULL);
        gcost[g] = scratch->len;
        if (dedup_count(sq->dd, (uint32_t)g) > shown[g]) {
            body += gcost[g];
            ndrop++;
        }
    }
    /* what every view has: its exit marker, the noise marker (no hazard
     * changes it), the log marker when anything is left out */
    buf_reset(scratch);
    uint64_t noise[CLS_NOISE_REASONS];
    sq_noise_dropped(sq, noise);
    if (rc == 0)
        rc = emit_exit(scratch, v->exit_code, sq->exit_signal,
                       v->duration_ms, sq->line_base + v->lines);
    if (rc == 0 && sq_noise_sum(noise))
        rc = emit_noise(scratch, noise);
    size_t fixed = scratch->len, log = 0;
    buf_reset(scratch);
    if (rc == 0 && sq->log_path)
        rc = emit_log(scratch, sq->log_path, sq->log_lost);
    log = scratch->len;
    size[nh] = fixed + body + (ndrop ? log : 0);
    for (size_t k = nh; rc == 0 && k > 0; k--) {
        uint32_t h = order[k - 1], p = prv[h], q = nxt[h];
        const struct sq_item *it = &sq->items[h];
        body -= cost[h] + gap[h] + gap[q];
        ndrop -= gdrop[h] + gdrop[q] + (it->shown_cut || it->part);
        hid[q] += hid[h] + 1;
        gap[q] = sq_gap_cost(sq, v, p == none ? NULL : &sq->items[p],
                             q == n ? NULL : &sq->items[q], hid[q], scratch,
                             &gdrop[q], &rc);
        body += gap[q];
        ndrop += gdrop[q];
        if (p != none)
            nxt[p] = q;
        prv[q] = p;
        uint32_t g = it->group;
        if (g < ng) {
            uint32_t cnt = dedup_count(sq->dd, g);
            bool before = cnt > shown[g];
            bool after = --shown[g] && cnt > shown[g];
            if (after && !before) {
                body += gcost[g];
                ndrop++;
            } else if (before && !after) {
                body -= gcost[g];
                ndrop--;
            }
        }
        size[k - 1] = fixed + body + (ndrop ? log : 0);
    }
done:
    free(prv);
    free(nxt);
    free(hid);
    free(gap);
    free(cost);
    free(gdrop);
    free(shown);
    free(gcost);
    return rc;
}

/* The bytes hazard item it adds to a view shown as its first `part`
 * bytes (0: as usual). */
static size_t sq_part_cost(const squash_t *sq, struct sq_item *it,
                           size_t part, buf_t *scratch)
{
    size_t was = it->part;
    it->part = part;
    size_t cost = sq_item_cost(sq, it, scratch);
    it->part = was;
    return cost;
}

/* The least of hazard item it a view may show: its first
 * SQ_HAZARD_PART_MIN bytes when they cost less than the item as usual
 * (its markers included: a line just over the minimum is cheaper whole),
 * else the item as usual (0). */
static size_t sq_part_least(const squash_t *sq, struct sq_item *it,
                            buf_t *scratch)
{
    if (it->len <= SQ_HAZARD_PART_MIN)
        return 0;
    return sq_part_cost(sq, it, SQ_HAZARD_PART_MIN, scratch) <
                   sq_part_cost(sq, it, 0, scratch)
               ? SQ_HAZARD_PART_MIN
               : 0;
}

/* Gives hazard item it, shown as its first it->part bytes, up to room
 * more bytes of the view: the item as usual when that fits, else as many
 * more of its first bytes as do.  Only the item's own lines change (the
 * gaps around it are the same whatever it shows), so its cost is the
 * view's change, exactly.  The bytes it took. */
static size_t sq_part_grow(const squash_t *sq, struct sq_item *it,
                           size_t room, buf_t *scratch)
{
    size_t was = it->part, now = sq_item_cost(sq, it, scratch);
    size_t usual = sq_part_cost(sq, it, 0, scratch);
    if (usual <= now + room) {
        it->part = 0;
        return usual > now ? usual - now : 0;
    }
    size_t avail = it->split ? it->split : it->len;
    size_t p = room < avail - was ? was + room : avail, cost = now;
    /* the markers' numbers may gain a digit as the part grows: shrink by
     * what it passes the room by until it fits (a step or two) */
    while (p > was && (cost = sq_part_cost(sq, it, p, scratch)) > now + room)
        p -= cost - (now + room) < p - was ? cost - (now + room) : p - was;
    if (p <= was)
        return 0;
    it->part = p;
    return cost > now ? cost - now : 0;
}

/*
 * The hazard lines of a view under an explicit budget, decided before any
 * other line: the longest prefix of their priority order (order[0..nh))
 * whose view, those hazards alone, fits (sq_plan_sizes), even past a
 * shorter one that does not (a hazard shown can replace a gap marker
 * longer than itself).  A prefix, not the hazards that fit one by one, so
 * that a larger budget never shows fewer: a hazard passed over because it
 * did not fit would, at a budget just large enough for it, push out a
 * later one shown at the smaller budget.  Each hazard is sized at the
 * least of it a view shows (sq_part_least: a long one as its first
 * SQ_HAZARD_PART_MIN bytes), so a long hazard the budget cannot hold
 * whole is shown cut rather than only counted, and as many hazards are
 * shown as their starts make room for; then the room left goes to the
 * hazards kept in the same order, each shown as usual when it fits, else
 * as much of its start as does (sq_part_grow).  When every hazard kept
 * fits as usual, each is so shown, as before parts were: the first ones
 * grow first.  The other lines (sq_plan) fill the room these leave and
 * never take a hazard's.
 */
static int sq_plan_hazards(squash_t *sq, size_t budget,
                           const struct sq_view *v, const uint32_t *order,
                           size_t nh, buf_t *scratch)
{
    size_t *size = malloc((nh + 1) * sizeof *size), keep = 0;
    if (!size)
        return -ENOMEM;
    for (size_t x = 0; x < nh; x++) {
        struct sq_item *it = &sq->items[order[x]];
        it->part = sq_part_least(sq, it, scratch);
    }
    int rc = sq_plan_sizes(sq, v, order, nh, scratch, size);
    for (size_t k = 0; rc == 0 && k <= nh; k++)
        if (size[k] <= budget)
            keep = k;
    for (size_t x = 0; x < nh; x++)
        sq->items[order[x]].selected = x < keep;
    /* The sizes are exact, so this never runs; were one ever off, the
     * view would still keep to the budget: a prefix that fits. */
    if (rc == 0 && keep && sq_measure(sq, scratch, v, &rc) > budget) {
        size_t lo = 0, hi = keep;
        while (rc == 0 && hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            for (size_t x = 0; x < keep; x++)
                sq->items[order[x]].selected = x < mid;
            if (sq_measure(sq, scratch, v, &rc) <= budget)
                lo = mid;
            else
                hi = mid;
        }
        keep = lo;
        for (size_t x = 0; x < nh; x++)
            sq->items[order[x]].selected = x < keep;
    }
    for (size_t x = keep; x < nh; x++)
        sq->items[order[x]].part = 0;
    size_t used = rc == 0 && keep ? sq_measure(sq, scratch, v, &rc) : 0;
    for (size_t x = 0; rc == 0 && x < keep && used < budget; x++)
        if (sq->items[order[x]].part)
            used += sq_part_grow(sq, &sq->items[order[x]], budget - used,
                                 scratch);
    free(size);
    return rc;
}

/* Chooses items for a budget by priority; see the file comment.
 * O(n log n) renders' worth at most: ordering is one pass per weight
 * over the lines the hazards own, the estimate one pass, the exact check
 * SQ_PLAN_DROP_STEPS renders and then a bisection, and the exact fill
 * only for SQ_PLAN_EXACT_MAX items or fewer. */
static int sq_plan(squash_t *sq, size_t budget, const struct sq_view *v,
                   buf_t *out)
{
    size_t n = sq->nitems, k = 0;
    bool dropped;
    int rc = 0;
    size_t nh = 0;
    for (size_t i = 0; i < n; i++)
        nh += sq->items[i].role == SQ_R_HAZARD;
    size_t nalloc = n ? n : 1, halloc = nh ? nh : 1;
    uint32_t *order = malloc(nalloc * sizeof *order);
    uint32_t *heads = malloc(halloc * sizeof *heads);
    uint32_t *ncont = malloc(halloc * sizeof *ncont);
    uint32_t *nlead = malloc(halloc * sizeof *nlead);
    uint32_t *closing = malloc(halloc * sizeof *closing);
    uint32_t *alive = malloc(halloc * sizeof *alive);
    uint32_t *sel = malloc(nalloc * sizeof *sel);
    uint32_t *pos = malloc(nalloc * sizeof *pos);
    bool *base = malloc(nalloc * sizeof *base);
    bool *tried = NULL;
    uint32_t *stack = NULL, *copy_seen = NULL;
    buf_t scratch = BUF_INIT;
    if (!order || !heads || !ncont || !nlead || !closing || !alive || !sel ||
        !pos || !base) {
        rc = -ENOMEM;
        goto done;
    }
    /* hazard lines: the errors, then the warnings, each first, last,
     * second, second-to-last, ...: a budget too small for every hazard
     * spends itself on errors.  Within each, every distinct hazard comes
     * before the further copies of one already taken (a repeated
     * header's error in each file that includes it), which tell less
     * than a hazard not seen yet. */
    size_t ng = dedup_group_count(sq->dd);
    if (!(copy_seen = calloc(ng ? ng : 1, sizeof *copy_seen))) {
        rc = -ENOMEM;
        goto done;
    }
    nh = 0;
    for (int pass = 0; pass < 4; pass++) {
        bool warn = pass >= 2, copies = pass % 2;
        size_t from_h = nh;
        memset(copy_seen, 0, (ng ? ng : 1) * sizeof *copy_seen);
        for (size_t i = 0; i < n; i++) {
            const struct sq_item *it = &sq->items[i];
            if (it->role != SQ_R_HAZARD || it->warning != warn)
                continue;
            bool copy = it->group < ng && copy_seen[it->group]++ > 0;
            if (copy == copies)
                heads[nh++] = (uint32_t)i;
        }
        for (size_t a = from_h, b = nh; a < b;) {
            order[k++] = heads[a++];
            if (a < b)
                order[k++] = heads[--b];
        }
    }
    /* The lines each hazard owns: first the line closing each capture
     * with the message its hazard line lacks (sq_closing); then by weight
     * (locations, then excerpts, then carets; outcomes between the first
     * two), and within a weight round-robin over the hazards by rank:
     * rank 0 is a capture's last line, then its first, second-to-last,
     * second, ... so every hazard keeps its ends before any keeps its
     * middle.  Each hazard's lines are counted once, and a round visits
     * only the hazards with lines left at its rank (alive), so a weight
     * costs the lines owned, not hazards × the longest capture. */
    size_t kh = k;
    for (size_t x = 0; x < kh; x++) {
        size_t first = order[x] + 1, m = 0;
        while (first + m < n && sq->items[first + m].role == SQ_R_CONT)
            m++;
        ncont[x] = (uint32_t)m;
        for (m = 0; m < order[x] &&
                    sq->items[order[x] - 1 - m].role == SQ_R_LEAD;)
            m++;
        nlead[x] = (uint32_t)m;
        closing[x] = (uint32_t)sq_closing(sq, order[x]);
        if (closing[x])
            order[k++] = closing[x];
    }
    for (int w = SQ_W_LEVELS - 1; w >= 0; w--) {
        /* A hazard's leads (gcc's include chain) are locations too, taken
         * before the ones it owns below it, round-robin like them: each
         * chain's last line (the file compiled), its first, ... */
        size_t na = 0;
        for (size_t x = 0; w == SQ_W_LOC && x < kh; x++)
            if (nlead[x])
                alive[na++] = (uint32_t)x;
        for (size_t rank = 0; na; rank++) {
            size_t keep = 0;
            for (size_t a = 0; a < na; a++) {
                size_t x = alive[a], m = nlead[x], first = order[x] - m;
                if (rank >= m)
                    continue;
                alive[keep++] = (uint32_t)x;
                size_t p = rank == 0 ? m - 1
                           : rank % 2 ? (rank - 1) / 2 : m - 1 - rank / 2;
                order[k++] = (uint32_t)(first + p);
            }
            na = keep;
        }
        na = 0;
        for (size_t x = 0; x < kh; x++)
            if (ncont[x])
                alive[na++] = (uint32_t)x;
        for (size_t rank = 0; na; rank++) {
            size_t keep = 0;
            for (size_t a = 0; a < na; a++) {
                size_t x = alive[a], first = order[x] + 1, m = ncont[x];
                if (rank >= m)
                    continue;
                alive[keep++] = (uint32_t)x;
                size_t p = rank == 0 ? m - 1
                           : rank % 2 ? (rank - 1) / 2 : m - 1 - rank / 2;
                if (sq->items[first + p].weight == w &&
                    !(rank == 0 && closing[x] == first + p))
                    order[k++] = (uint32_t)(first + p);
            }
            na = keep;
        }
        for (size_t i = 0; w == SQ_W_LOC && i < n; i++)
            if (sq->items[i].role == SQ_R_OUTCOME)
                order[k++] = (uint32_t)i;
    }
    static const uint8_t later[] = {SQ_R_PROMPT, SQ_R_BINARY, SQ_R_DEDUP};
    for (size_t r = 0; r < sizeof later; r++)
        for (size_t i = 0; i < n; i++)
            if (sq->items[i].role == later[r])
                order[k++] = (uint32_t)i;
    for (size_t i = n; i-- > 0;)
        if (sq->items[i].role == SQ_R_TAIL)
            order[k++] = (uint32_t)i;
    for (size_t i = 0; i < n; i++) {
        sq->items[i].selected = sq->items[i].role == SQ_R_SKIP;
        sq->items[i].part = 0;
    }
    /* An explicit budget settles the hazard lines first; the rest below
     * fills the room they leave, from order[from] on. */
    size_t from = 0;
    if (sq->budget) {
        rc = sq_plan_hazards(sq, budget, v, order, kh, &scratch);
        from = kh;
    }

    /* the fixed cost: everything but the items still to choose */
    size_t used = rc == 0 ? sq_measure(sq, &scratch, v, &rc) : 0;
    size_t nsel = 0;
    for (size_t x = from; rc == 0 && x < k; x++) {
        struct sq_item *it = &sq->items[order[x]];
        if (sq_owned(it) && !sq->items[it->head].selected)
            continue;
        size_t cost = it->shown_cut ? it->len + 2 + 3 * SQ_GAP_COST
                                    : it->len + 1;
        if (it->shown_cut && !it->split)
            cost = 2 * (SQ_LINE_SHOW_EDGE + 1) + 3 * SQ_GAP_COST;
        if (it->role == SQ_R_PROMPT || it->cut || it->role == SQ_R_BINARY)
            cost += SQ_GAP_COST;
        if (!(order[x] > 0 && sq->items[order[x] - 1].selected &&
              sq->items[order[x] - 1].lineno + 1 >= it->lineno))
            cost += SQ_GAP_COST;
        if (it->group != UINT32_MAX && dedup_count(sq->dd, it->group) > 1)
            cost += strlen(dedup_template_text(sq->dd, it->group)) + SQ_REPEAT_COST;
        if (used + cost > budget && !sq_must(sq, it))
            continue;
        used += cost;
        it->selected = true;
        sel[nsel++] = order[x];
    }
    /* Exact check: drop the least important until it fits (the items
     * that must stay are never dropped).  The first SQ_PLAN_DROP_STEPS
     * one at a time; past them, the fewest further drops that fit are
     * found by bisection over the same order. */
    size_t nd = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        pos[i] = UINT32_MAX;
        base[i] = sq->items[i].selected;
    }
    for (size_t x = 0; x < nsel; x++)
        if (!sq_must(sq, &sq->items[sel[x]])) {
            pos[sel[x]] = (uint32_t)nd;
            sel[nd++] = sel[x]; /* the droppable ones, in order */
        }
    for (;;) {
        size_t size = sq_measure(sq, &scratch, v, &rc);
        if (rc < 0 || size <= budget || d == nd)
            break;
        if (d == SQ_PLAN_DROP_STEPS) {
            /* size(d) > budget: find the least d' in (d, nd] that fits,
             * or nd when none does */
            size_t lo = d, hi = nd;
            sq_drop_to(sq, base, pos, nd, hi);
            bool fits = sq_measure(sq, &scratch, v, &rc) <= budget;
            while (rc == 0 && fits && hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                sq_drop_to(sq, base, pos, nd, mid);
                if (sq_measure(sq, &scratch, v, &rc) <= budget)
                    hi = mid;
                else
                    lo = mid;
            }
            sq_drop_to(sq, base, pos, nd, hi);
            break;
        }
        sq_unselect(sq, sel[nd - 1 - d]);
        d++;
    }
    /* The estimates above are pessimistic (a gap marker per item): with
     * few items, fill what room is left by exact rendering, in priority
     * order.  An item shown makes the lines next to it cheaper (the gap
     * marker between them goes), so a neighbour refused before it, which
     * ranks higher, is tried again then: a traceback's exception line
     * refused for the marker it needed is not left out while the lines
     * around it are shown.  Each item is shown once, and each shown one
     * retries two: the stack holds 2n + 1. */
    if (rc == 0 && n <= SQ_PLAN_EXACT_MAX &&
        (!(tried = calloc(nalloc, sizeof *tried)) ||
         !(stack = malloc((2 * n + 1) * sizeof *stack))))
        rc = -ENOMEM;
    for (size_t x = from; rc == 0 && n <= SQ_PLAN_EXACT_MAX && x < k; x++) {
        size_t ns = 0;
        stack[ns++] = order[x];
        tried[order[x]] = true;
        while (rc == 0 && ns) {
            uint32_t i = stack[--ns];
            struct sq_item *it = &sq->items[i];
            if (it->selected ||
                (sq_owned(it) && !sq->items[it->head].selected))
                continue;
            it->selected = true;
            if (sq_measure(sq, &scratch, v, &rc) > budget) {
                it->selected = false;
                continue;
            }
            if (i > 0 && tried[i - 1] && !sq->items[i - 1].selected &&
                sq->items[i - 1].lineno + 1 >= it->first)
                stack[ns++] = i - 1;
            if (i + 1 < n && tried[i + 1] && !sq->items[i + 1].selected &&
                it->lineno + 1 >= sq->items[i + 1].first)
                stack[ns++] = i + 1;
        }
    }
    if (rc == 0) {
        buf_reset(out);
        rc = sq_render(sq, out, NULL, v, &dropped);
    }
    /* Past the budget still (the facts alone do not fit): every gap costs
     * a marker, so the view with nothing dropped may be the smaller.  It
     * is measured, and rendered only when it is: a second copy of a view
     * of every line would double the memory the view takes. */
    if (rc == 0 && out->len > budget) {
        /* no hazard is shown cut here: a part is only given when the
         * hazards kept fit, and then so does the view */
        for (size_t i = 0; i < n; i++) {
            base[i] = sq->items[i].selected;
            sq->items[i].selected = true;
        }
        if (sq_measure(sq, &scratch, v, &rc) < out->len && rc == 0) {
            buf_reset(out);
            rc = sq_render(sq, out, NULL, v, &dropped);
        } else {
            for (size_t i = 0; i < n; i++)
                sq->items[i].selected = base[i];
        }
    }
done:
    buf_free(&scratch);
    free(tried);
    free(stack);
    free(copy_seen);
    free(base);
    free(pos);
    free(sel);
    free(alive);
    free(closing);
    free(nlead);
    free(ncont);
    free(heads);
    free(order);
    return rc;
}

/* The whole view of a small output: its exit marker and every line as
 * printed.  It replaces the condensed view in out when it is no larger:
 * it drops nothing, so it needs no other marker. */
static int sq_whole_view(squash_t *sq, int exit_code, uint64_t duration_ms,
                         uint64_t lines, buf_t *out)
{
    buf_t w = BUF_INIT;
    int rc = emit_exit(&w, exit_code, sq->exit_signal, duration_ms,
                       sq->line_base + lines);
    /* every line but the frames a redraw replaced, left out as a
     * carriage-return bar's frames are: what the screen showed */
    if (rc == 0)
        rc = buf_append(&w, sq->whole.p, sq->whole.len);
    if (rc == 0 && w.len <= out->len) {
        buf_free(out);
        *out = w;
        w = (buf_t)BUF_INIT;
        sq->whole_shown = true;
        for (size_t i = 0; i < sq->nitems; i++)
            sq->items[i].selected = true;
    }
    buf_free(&w);
    return rc;
}

void squash_log_lost(squash_t *sq, uint64_t lost)
{
    if (sq)
        sq->log_lost = lost;
}

void squash_set_cols(squash_t *sq, unsigned cols)
{
    vt_set_cols(sq->vt, cols);
}

void squash_set_signal(squash_t *sq, int signo)
{
    if (sq)
        sq->exit_signal = signo;
}

int squash_finish(squash_t *sq, int exit_code, uint64_t duration_ms,
                  uint64_t now_ms)
{
    (void)now_ms;
    if (sq->finished)
        return -EINVAL;
    sq->finished = sq->finishing = true;
    int rc = vt_finish(sq->vt);
    if (rc < 0)
        return rc;
    if ((rc = sq_pending_end(sq)) < 0) /* the very end */
        return rc;
    uint64_t raw_bytes, lines, text_bytes;
    vt_counts(sq->vt, &raw_bytes, &lines, &text_bytes);
    sq->st.raw_bytes = raw_bytes;
    sq->st.raw_lines = lines;
    /* A small output's stream ends with all of it, then the summary. */
    if ((rc = sq_release(sq)) < 0)
        return rc;

    /* The fallback tail: for output with nothing known in it, and for a
     * failure that no error line explains, whose last lines most often do
     * (apt's "Do you want to continue? [Y/n] Abort." after its summary
     * line, a tool's own wording of what went wrong). */
    if (!sq->errors && (!sq->outcomes || exit_code > 0) &&
        (rc = sq_add_tail(sq, lines)) < 0)
        return rc;
    /* Items arrive in line order except the tail: restore it, then relink
     * each cont to its head (the hazard item just above it). */
    if (sq->nitems > 1)
        qsort(sq->items, sq->nitems, sizeof *sq->items, sq_item_cmp);
    for (size_t i = 0, h = 0; i < sq->nitems; i++) {
        if (sq->items[i].role == SQ_R_HAZARD)
            h = i;
        else if (sq->items[i].role == SQ_R_CONT)
            sq->items[i].head = (uint32_t)h;
    }
    /* ... and each lead to the hazard item just below it */
    for (size_t i = sq->nitems, h = 0; i-- > 0;) {
        if (sq->items[i].role == SQ_R_HAZARD)
            h = i;
        else if (sq->items[i].role == SQ_R_LEAD)
            sq->items[i].head = (uint32_t)h;
    }

    size_t ng = dedup_group_count(sq->dd);
    struct sq_view v = {.exit_code = exit_code, .duration_ms = duration_ms,
                        .lines = lines, .raw_bytes = raw_bytes,
                        .grp = calloc(ng ? ng : 1, sizeof *v.grp)};
    if (!v.grp)
        return -ENOMEM;
    size_t budget = sq->budget ? sq->budget : sq->cap ? (size_t)text_bytes : 0;
    bool dropped = false;
    if (sq->deferred) {
        for (size_t i = 0; i < sq->nitems; i++)
            sq->items[i].selected = true;
        buf_reset(&sq->out);
        rc = sq_rank_build(sq, lines);
        if (rc == 0)
            rc = sq_render(sq, &sq->out, NULL, &v, &dropped);
        if (rc == 0 && budget && sq->out.len > budget)
            rc = sq_plan(sq, budget, &v, &sq->out);
        if (rc == 0 && sq->budget && sq->out.len > sq->budget) {
            /* nothing left to drop but markers: the noise marker goes,
             * the one that only says what some omitted lines were */
            v.no_noise = true;
            buf_reset(&sq->out);
            rc = sq_render(sq, &sq->out, NULL, &v, &dropped);
        }
        if (rc == 0 && sq->whole_ok)
            rc = sq_whole_view(sq, exit_code, duration_ms, lines, &sq->out);
    } else {
        /* Streaming: hazards are out; the summary follows them. */
        buf_t *o = &sq->out;
        rc = emit_exit(o, exit_code, sq->exit_signal, duration_ms,
                       sq->line_base + lines);
        uint64_t shown = 0;
        bool cut_shown = false;
        for (size_t i = 0; rc == 0 && i < sq->nitems; i++) {
            struct sq_item *it = &sq->items[i];
            it->selected = true;
            shown += it->role != SQ_R_BINARY;
            cut_shown = cut_shown || it->shown_cut;
            if (!it->emitted)
                rc = sq_item_render(sq, it, o, NULL);
            /* what each group shows, counted in the same pass */
            if (it->group < ng) {
                v.grp[it->group].shown++;
                v.grp[it->group].hazard |= it->role == SQ_R_HAZARD;
            }
        }
        for (size_t gi = 0; rc == 0 && gi < ng; gi++)
            if (v.grp[gi].shown &&
                dedup_count(sq->dd, (uint32_t)gi) > v.grp[gi].shown)
                rc = sq_group_render(sq, (uint32_t)gi, &v.grp[gi], o, NULL);
        uint64_t counts[CLS_NOISE_REASONS];
        sq_noise_dropped(sq, counts);
        uint64_t noise = sq_noise_sum(counts);
        /* the noise is part of the total, as in the deferred view's
         * markers: the noise marker only says what some of it was */
        if (rc == 0 && lines > shown)
            rc = emit_omitted_total(o, lines - shown);
        if (rc == 0 && noise)
            rc = emit_noise(o, counts);
        dropped = lines > shown || cut_shown;
        if (rc == 0 && dropped && sq->log_path)
            rc = emit_log(o, sq->log_path, sq->log_lost);
    }
    free(v.grp);
    sq_send(sq, &sq->out);
    return rc;
}

void squash_stats(const squash_t *sq, sq_stats_t *out)
{
    *out = sq->st;
    out->hazards = sq->hazards;
    out->errors = sq->errors;
    out->warnings = sq->warnings;
    out->outcomes = sq->outcomes;
    uint64_t noise = 0;
    for (int i = 0; i < CLS_NOISE_REASONS; i++)
        noise += sq->noise[i];
    out->noise = noise;
    uint64_t shown = 0;
    for (size_t i = 0; i < sq->nitems; i++)
        shown += sq->items[i].selected && sq->items[i].role != SQ_R_BINARY &&
                 sq->items[i].role != SQ_R_SKIP;
    out->omitted = sq->st.raw_lines > shown ? sq->st.raw_lines - shown : 0;
    if (sq->whole_shown)
        out->omitted = sq->frames_dropped;
}

static void sq_collect(const char *text, size_t len, void *data)
{
    buf_append(data, text, len);
}

int squash_buffer(const sq_opts_t *opts, const void *data, size_t len,
                  int exit_code, uint64_t duration_ms, buf_t *out)
{
    sq_opts_t o = *opts;
    if (!o.budget_bytes)
        o.cap_to_input = true;
    o.deferred = true;
    squash_t *sq;
    int rc = squash_new(&o, sq_collect, out, &sq);
    if (rc < 0)
        return rc;
    size_t before = out->len;
    rc = squash_feed(sq, data, len, 0);
    if (rc == 0)
        rc = squash_finish(sq, exit_code, duration_ms, 0);
    if (rc == 0 && out->len - before != sq->st.out_bytes)
        rc = -ENOMEM; /* an append in the sink failed */
    squash_free(sq);
    return rc;
}
