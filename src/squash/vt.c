/*
 * vt.c — the VT stripper and line buffer (see vt.h).
 *
 * One state machine over raw bytes (the escape grammar is ASCII, so it runs
 * before UTF-8 decoding; each finished line is then validated once).  The
 * current line is a byte buffer with a cursor: the common case, printing at
 * the end of the line, is a bulk append of a whole run of printable bytes,
 * which keeps the per-byte cost at a compare.  Only a redraw (the cursor
 * moved back) pays for the column model: overwriting a character replaces
 * the whole UTF-8 sequence under the cursor, so a frame drawn over a wider
 * one never leaves half a character behind.
 *
 * Columns are display cells, as a terminal counts them: a wide (CJK,
 * emoji) character takes two, a combining mark none (it belongs to the
 * cell before it), by glibc's wcwidth in the C.UTF-8 locale.  A move into
 * the right half of a wide character stops at its left.  Rows are
 * counted, not drawn: there is no screen here (rein's libvterm screen is
 * elsewhere), only the row the cursor is on, how many rows lines came
 * from, and the text of the last few in a ring (`kept`), read back when
 * the cursor returns to one.  A row is handed out when the cursor leaves
 * it, if it shows something not handed out yet; a row drawn again comes
 * out as OVERWRITE, which the classifier treats as progress.
 */
#include "squash/vt.h"

#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "base/buf.h"
#include "base/utf8.h"

enum vt_state {
    VT_GROUND = 0,
    VT_ESC,       /* after ESC */
    VT_ESC_INTER, /* ESC + intermediates (ESC ( B ...), up to a final */
    VT_CSI,       /* ESC [ ... */
    VT_STR,       /* OSC / DCS / APC / PM / SOS body */
    VT_STR_ESC,   /* ESC inside a string: ST (ESC \) or a new escape */
};

/* One row's text in the ring: bytes [at, at + len) of everything the
 * ring was given, intact while no more than the ring's size followed. */
struct vt_slot {
    uint64_t row;
    uint64_t at;
    uint32_t len;
    uint32_t ctl;
    uint32_t cells;   /* its width when handed out, if cols is known:
                         how many screen rows it wraps to */
    uint8_t colours;
    bool valid;
};

/* Slots for every row a move reaches, a power of two (a mask, not a
 * division, per line).  Slots and ring start small and double as rows
 * come, so that a session that printed a line holds a few hundred bytes
 * for it, not the whole ring (64 idle sessions, bench_serve.c). */
#define VT_ROW_SLOTS 256u
#define VT_KEPT_MIN_SLOTS 16u
#define VT_KEPT_MIN_BYTES 1024u
_Static_assert(VT_ROW_SLOTS >= VT_ROWS_BACK + 1, "a slot per row in reach");
_Static_assert((VT_ROW_SLOTS & (VT_ROW_SLOTS - 1)) == 0, "a power of two");
_Static_assert((VT_ROWS_KEEP_BYTES & (VT_ROWS_KEEP_BYTES - 1)) == 0,
               "a power of two");

struct vt_kept {
    uint64_t head;        /* bytes given to the ring */
    size_t size;          /* ring bytes: doubled before it would wrap, up
                             to VT_ROWS_KEEP_BYTES; it wraps only then */
    size_t nslots;        /* doubled as rows come, up to VT_ROW_SLOTS */
    struct vt_slot *slot; /* row r in slot r % nslots */
    char *ring;           /* not cleared: only slots say what holds a row */
};

static struct vt_slot *vt_slot(const struct vt_kept *k, uint64_t row)
{
    return &k->slot[row & (k->nslots - 1)];
}

/* The slot of row `row` if it holds the row's text, still in the ring. */
static const struct vt_slot *vt_kept_row(const struct vt_kept *k,
                                         uint64_t row)
{
    const struct vt_slot *s = k ? vt_slot(k, row) : NULL;
    return s && s->valid && s->row == row && k->head - s->at <= k->size
               ? s : NULL;
}

/* Where a kept row's text starts in the ring, and how much of it comes
 * before the ring's end (*first; the rest is at its start). */
static size_t vt_kept_at(const struct vt_kept *k, const struct vt_slot *s,
                         size_t *first)
{
    size_t pos = (size_t)(s->at & (k->size - 1));
    *first = s->len < k->size - pos ? s->len : k->size - pos;
    return pos;
}

/* Appends kept row s's text to out.  0 or -ENOMEM. */
static int vt_kept_text(const struct vt_kept *k, const struct vt_slot *s,
                        buf_t *out)
{
    size_t first, pos = vt_kept_at(k, s, &first);
    if (buf_append(out, k->ring + pos, first) < 0 ||
        buf_append(out, k->ring, s->len - first) < 0)
        return -ENOMEM;
    return 0;
}

static void vt_kept_free(struct vt_kept *k)
{
    if (k) {
        free(k->slot);
        free(k->ring);
        free(k);
    }
}

/* Room in k for row `row` of n bytes: more slots once rows pass them,
 * a larger ring before this text would wrap it.  0 or -ENOMEM. */
static int vt_kept_grow(struct vt_kept *k, uint64_t row, size_t n)
{
    size_t ns = k->nslots;
    while (ns < VT_ROW_SLOTS && row >= ns)
        ns *= 2;
    if (ns != k->nslots) {
        struct vt_slot *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return -ENOMEM;
        for (size_t i = 0; i < k->nslots; i++)
            if (k->slot[i].valid || k->slot[i].cells)
                sl[k->slot[i].row & (ns - 1)] = k->slot[i];
        free(k->slot);
        k->slot = sl;
        k->nslots = ns;
    }
    size_t size = k->size;
    while (size < VT_ROWS_KEEP_BYTES && k->head + n > size)
        size *= 2;
    if (size != k->size) {
        /* Nothing wrapped yet: the text keeps its offsets. */
        char *r = realloc(k->ring, size);
        if (!r)
            return -ENOMEM;
        k->ring = r;
        k->size = size;
    }
    return 0;
}

/* SGR colour bits for foreground and background, merged per line. */
struct vt {
    vt_line_fn fn;
    void *data;
    vt_keep_fn keep;   /* asked about frames destroyed (vt_set_keep) */
    void *keep_data;
    enum vt_state state;

    buf_t line;        /* the current line's bytes */
    size_t cur;        /* cursor: a byte offset in line, at a char start */
    size_t pad;        /* cursor columns beyond the end of the line */
    bool half;         /* the cursor is on the right half of the wide
                          character at cur (a move or a backspace into it) */
    /* A column known: line[0, cc_off) holds cc_col code points.  Counting
     * from it, a cursor move costs the distance moved, not the line's
     * length (a flood of `x ESC[C` would cost the square of its size).
     * Every change to the line's bytes before cc_off drops it to (0, 0),
     * which always holds (vt_cc_drop). */
    size_t cc_off, cc_col;
    unsigned char last[UTF8_SEQ_MAX]; /* the last character printed (REP) */
    size_t last_len;
    /* The first bytes of a character a read cut off, printed with the
     * rest (vt_print): the cells it writes over depend on its width, which
     * only its whole sequence tells, and must not depend on the reads. */
    unsigned char pend[UTF8_SEQ_MAX];
    size_t npend;
    unsigned char inter; /* an ESC sequence's first intermediate byte */
    bool g0_graphics;    /* ESC ( 0: G0 is DEC's line-drawing set */
    unsigned fg, bg;   /* current SGR colours (SQ_COLOUR_*) */
    unsigned colours;  /* colours seen on printed text of this line */
    uint32_t frames;   /* frames of this line overwritten */
    bool rewound;      /* cursor moved back over text: next print = frame */
    bool partial_sent; /* vt_tick reported this text already */
    bool cut_active;   /* this line already gave out cut pieces */
    /* The line's text is what is left of a frame offered to keep already
     * (an erase took the rest): nothing printed since. */
    bool frame_out;
    /* The last frame of this line offered to keep: its text's hash, so
     * that one drawn again the same is not asked about twice. */
    uint64_t frame_hash;
    bool frame_hashed;
    /* A frame was offered as the next was drawn over it, and the text
     * since printed from the cursor it left ends at fresh_end (bytes):
     * past it is what is left of that frame (`\rok` over `error: x`
     * leaves `ok` and `ror: x`), until an edit shifts the bytes. */
    bool fresh;
    size_t fresh_end;
    /* Frames of this line keep wanted, and the letters and colours of
     * the last one (vt_offer_frame: VT_KEPT_FRAMES_MAX). */
    uint32_t kept_frames;
    uint64_t kept_hash;
    size_t ctl;        /* control bytes on this line */

    /* Rows (vt.h): the current line is row `row`; lines came from rows
     * below `rows`.  A row below `rows` was resumed (row_old) and comes
     * out again only if it changed (row_dirty, and vt_row_changed). */
    uint64_t row;
    uint64_t rows;
    uint64_t row_floor;  /* no move goes above this (set by vt_skip) */
    unsigned cols;       /* the terminal's width, 0: unknown (vt_set_cols) */
    /* With cols known, the current line's screen rows: the highest the
     * cursor reached and how many the line took, since it entered the
     * line (vt_note_piece). */
    size_t piece, pieces;
    bool row_old;
    bool row_dirty;
    uint64_t saved_row;  /* ESC 7 / ESC[s */
    size_t saved_col;
    uint32_t saved_at;
    bool saved;
    bool alt;            /* on the alternate screen (vt_alt_screen) */
    size_t alt_col;      /* the cursor's column mode 1049 saved */
    uint32_t aside_at;   /* the screen row a row aside is (sq_line_t) */
    /* The rows aside that gave text no erase took: a bit per screen row
     * (vt_aside_bit). */
    uint64_t aside_shown[VT_ASIDE_ROWS / 64];
    struct vt_kept *kept; /* the last rows' text, made at the first row */

    unsigned params[VT_PARAMS_MAX];
    unsigned nparams;
    bool param_open;   /* digits seen for the current parameter */
    bool param_over;   /* the current parameter is past VT_PARAMS_MAX */
    unsigned char priv;/* CSI private marker (? < = >), 0 if none */
    bool str_osc;      /* the string may end with BEL */
    size_t str_len;

    uint64_t raw_off;        /* bytes fed (or skipped) so far */
    uint64_t line_raw_start; /* raw offset where the current line began */
    uint64_t lines;          /* lines delivered (cut pieces count once)
                                or skipped */
    uint64_t text_bytes;
    uint64_t drawn_over;     /* text written over or erased (vt_drawn_over) */
    uint64_t last_ms;
    buf_t scratch;           /* UTF-8 repair of an ill-formed line */
};

int vt_new(vt_line_fn fn, void *data, vt_t **out)
{
    vt_t *vt = calloc(1, sizeof *vt);
    if (!vt)
        return -ENOMEM;
    vt->fn = fn;
    vt->data = data;
    *out = vt;
    return 0;
}

void vt_set_cols(vt_t *vt, unsigned cols)
{
    vt->cols = cols;
}

void vt_set_keep(vt_t *vt, vt_keep_fn keep, void *data)
{
    vt->keep = keep;
    vt->keep_data = data;
}

void vt_free(vt_t *vt)
{
    if (!vt)
        return;
    buf_free(&vt->line);
    buf_free(&vt->scratch);
    vt_kept_free(vt->kept);
    free(vt);
}

void vt_counts(const vt_t *vt, uint64_t *raw_bytes, uint64_t *lines,
               uint64_t *text_bytes)
{
    if (raw_bytes)
        *raw_bytes = vt->raw_off;
    if (lines)
        *lines = vt->lines;
    if (text_bytes)
        *text_bytes = vt->text_bytes;
}

static inline bool vt_is_cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* ------------------------------------------------------------- widths */

/* Bytes of a line-drawing run translated at a time (each to 3 at most). */
#define VT_GRAPHICS_PIECE 256

/* The C.UTF-8 locale, made once, whose wcwidth the widths are: rein never
 * sets a locale of its own process, a library's host's least of all. */
static locale_t vt_utf8;
static pthread_once_t vt_utf8_once = PTHREAD_ONCE_INIT;

static void vt_utf8_init(void)
{
    vt_utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* The cells code point cp takes: 0, 1 or 2 (1 when unknown). */
static int vt_cp_width(uint32_t cp)
{
    if (cp < 0x300)
        return 1; /* nothing below the combining marks is wide or none */
    pthread_once(&vt_utf8_once, vt_utf8_init);
    if (!vt_utf8)
        return 1;
    locale_t old = uselocale(vt_utf8);
    int w = wcwidth((wchar_t)cp);
    uselocale(old);
    return w < 0 ? 1 : w;
}

/* The length a sequence opening with lead says it has. */
static size_t vt_seq_len(unsigned char lead)
{
    return lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
}

/* The cells of the character whose len bytes are at s (its whole
 * sequence; an ill-formed one takes one). */
static int vt_seq_width(const unsigned char *s, size_t len)
{
    if (s[0] < 0x80)
        return 1;
    if (vt_is_cont(s[0]))
        return 0; /* a stray continuation byte: counted as before, none */
    if (s[0] < 0xC2 || s[0] > 0xF4 || len != vt_seq_len(s[0]))
        return 1; /* no lead of a character (vt_print holds only these) */
    uint32_t cp = s[0] & (0xFFu >> (len + 1));
    for (size_t k = 1; k < len; k++) {
        if (!vt_is_cont(s[k]))
            return 1;
        cp = cp << 6 | (s[k] & 0x3Fu);
    }
    return vt_cp_width(cp);
}

/* The character at line offset i: its bytes (with the continuation bytes
 * that follow it) and, in *w, its cells. */
static size_t vt_cell(const vt_t *vt, size_t i, int *w)
{
    const unsigned char *l = (const unsigned char *)vt->line.p;
    if (l[i] < 0x80) {
        *w = 1;
        return 1;
    }
    size_t e = i + 1;
    while (e < vt->line.len && e - i < UTF8_SEQ_MAX && vt_is_cont(l[e]))
        e++;
    *w = vt_seq_width(l + i, e - i);
    return e - i;
}

/* Past the zero-width characters at offset i: the marks of the cell
 * before them. */
static size_t vt_skip_marks(const vt_t *vt, size_t i)
{
    int w;
    size_t l;
    while (i < vt->line.len && vt->line.p[i] & 0x80 &&
           (l = vt_cell(vt, i, &w)) && !w)
        i += l;
    return i;
}

/* The line's bytes from offset off on change: a column known past off
 * no longer holds. */
static void vt_cc_drop(vt_t *vt, size_t off)
{
    if (vt->cc_off > off)
        vt->cc_off = vt->cc_col = 0;
}

/* Cells in line[0, end), counted from the column known when it is not
 * past end, which then moves to end. */
static size_t vt_columns(vt_t *vt, size_t end)
{
    size_t i = 0, n = 0;
    if (vt->cc_off <= end) {
        i = vt->cc_off;
        n = vt->cc_col;
    }
    while (i < end) {
        if (!(vt->line.p[i] & 0x80)) {
            n++;
            i++;
            continue;
        }
        int w;
        i += vt_cell(vt, i, &w);
        n += (size_t)w;
    }
    vt->cc_off = end;
    vt->cc_col = n;
    return n;
}

static size_t vt_cursor_col(vt_t *vt)
{
    return vt_columns(vt, vt->cur) + vt->half + vt->pad;
}

/* Whatever is written at the right half of a wide character leaves a
 * blank in its left half: the character becomes that blank, and the
 * cursor stands after it. */
static void vt_split_wide(vt_t *vt)
{
    bool half = vt->half;
    vt->half = false;
    if (!half || vt->cur >= vt->line.len)
        return;
    vt->fresh = false; /* the bytes after it move */
    int w;
    size_t e = vt_skip_marks(vt, vt->cur + vt_cell(vt, vt->cur, &w));
    vt_cc_drop(vt, vt->cur);
    char *l = vt->line.p;
    memmove(l + vt->cur + 1, l + e, vt->line.len - e);
    l[vt->cur] = ' ';
    vt->line.len -= e - vt->cur - 1;
    l[vt->line.len] = '\0';
    vt->cur++;
}

/* The byte offset past k cells from offset i (the line's end at most; a
 * wide character is taken whole), its marks too; *cells: how many were
 * passed. */
static size_t vt_skip_cells(const vt_t *vt, size_t i, size_t k,
                            size_t *cells)
{
    size_t c = 0;
    while (c < k && i < vt->line.len) {
        int w;
        i += vt_cell(vt, i, &w);
        c += (size_t)w;
    }
    *cells = c;
    return vt_skip_marks(vt, i);
}

/* Resets the per-line state after a line is delivered. */
static void vt_line_reset(vt_t *vt, uint64_t raw_end)
{
    vt_cc_drop(vt, 0);
    vt->line.len = 0;
    if (vt->line.p)
        vt->line.p[0] = '\0';
    vt->cur = vt->pad = 0;
    vt->half = false;
    vt->colours = 0;
    vt->frames = 0;
    vt->rewound = vt->partial_sent = vt->cut_active = false;
    vt->frame_out = vt->frame_hashed = vt->fresh = false;
    vt->fresh_end = 0;
    vt->kept_frames = 0;
    vt->kept_hash = 0;
    vt->ctl = 0;
    vt->piece = vt->pieces = 0;
    vt->line_raw_start = raw_end;
}

/*
 * With the terminal's width known, remembers which of its line's screen
 * rows the cursor is on and how many the line takes, before a move back
 * or an erase changes its column or text: a carriage return or ESC[G
 * goes to the start of the screen row the cursor is on, not of the line
 * (the line model keeps it at the line's start), and an erase blanks a
 * wrapped line's rows without taking them away, so a move up after
 * either counts from where a terminal's cursor is.
 */
static void vt_note_piece(vt_t *vt)
{
    if (!vt->cols || vt->row == SQ_ROW_ASIDE)
        return;
    size_t w = vt->cols, col = vt_cursor_col(vt);
    size_t cells = vt_columns(vt, vt->line.len);
    size_t piece = col / w, h = cells > w ? (cells + w - 1) / w : 1;
    if (piece && col % w == 0 && col == cells)
        piece--; /* just past the last column: still on that row */
    if (piece > vt->piece)
        vt->piece = piece;
    if (h > vt->pieces)
        vt->pieces = h;
}

/* Whether a line of len text bytes and ctl control bytes is binary
 * (VT_BINARY_CTL_RATIO): judged on the text and control bytes only, not
 * the raw range, so the same line comes out the same however its bytes
 * were chunked. */
static bool vt_binary_count(size_t ctl, size_t len)
{
    return ctl * VT_BINARY_CTL_RATIO > ctl + len;
}

/* The same for the current line's first len bytes. */
static bool vt_binary(const vt_t *vt, size_t len)
{
    return vt_binary_count(vt->ctl, len);
}

/* The bit of screen row `at` (1-based) in aside_shown: rows past
 * VT_ASIDE_ROWS share the last. */
static unsigned vt_aside_bit(uint32_t at)
{
    return at > VT_ASIDE_ROWS ? VT_ASIDE_ROWS - 1 : at ? at - 1 : 0;
}

static bool vt_aside_was_shown(const vt_t *vt, uint32_t at)
{
    unsigned b = vt_aside_bit(at);
    return vt->aside_shown[b / 64] >> (b % 64) & 1;
}

/* Whether a row aside from screen row `from` down gave text no erase
 * took; with clear, forgets those rows' text (an erase took it). */
static bool vt_aside_below(vt_t *vt, uint32_t from, bool clear)
{
    bool any = false;
    for (unsigned b = vt_aside_bit(from); b < VT_ASIDE_ROWS; b++) {
        uint64_t bit = (uint64_t)1 << (b % 64);
        if (vt->aside_shown[b / 64] & bit) {
            any = true;
            if (clear)
                vt->aside_shown[b / 64] &= ~bit;
        }
    }
    return any;
}

/* Whether the current line is drawn over a row the screen showed
 * already: one resumed, or one aside over text drawn at that screen row
 * before (a status bar drawn again; the first text after a clear, or at
 * a row not drawn before, is no redraw). */
static bool vt_redraws(const vt_t *vt)
{
    return vt->row_old ||
           (vt->row == SQ_ROW_ASIDE && vt_aside_was_shown(vt, vt->aside_at));
}

/* Hands line[0, len) to the callback as one line or piece; a frame
 * (vt_offer_frame) only if keep wants it, then returning 1.  0 or the
 * callback's negative return. */
static int vt_deliver(vt_t *vt, size_t len, sq_line_kind_t kind, bool cut,
                      bool more, bool counted, bool frame, uint64_t raw_end)
{
    sq_line_t l;
    memset(&l, 0, sizeof l);
    const char *text = vt->line.p ? vt->line.p : "";
    size_t raw_len = (size_t)(raw_end - vt->line_raw_start);
    bool binary = vt_binary(vt, len);
    bool damaged = false; /* binary for ill-formed UTF-8 alone */

    if (!binary && utf8_valid_prefix(text, len) != len) {
        utf8_dec_t d;
        utf8_init(&d);
        buf_reset(&vt->scratch);
        if (utf8_decode(&d, text, len, &vt->scratch) < 0 ||
            utf8_finish(&d, &vt->scratch) < 0)
            return -ENOMEM;
        size_t bad = 0;
        for (const char *q = vt->scratch.p;
             (q = memmem(q, vt->scratch.len - (size_t)(q - vt->scratch.p),
                         UTF8_REPLACEMENT, UTF8_REPLACEMENT_LEN));
             q += UTF8_REPLACEMENT_LEN)
            bad++;
        damaged = bad * UTF8_REPLACEMENT_LEN * VT_BINARY_BAD_RATIO >
                  vt->scratch.len;
        text = vt->scratch.p;
        len = vt->scratch.len;
    }
    if (binary) {
        text = "";
        len = 0;
        kind = SQ_LINE_BINARY;
    } else if (damaged) {
        kind = SQ_LINE_BINARY; /* with its repaired text, for the classifier */
    } else if (kind == SQ_LINE_COMPLETE && (vt->frames || vt_redraws(vt))) {
        kind = SQ_LINE_OVERWRITE;
    }
    l.kind = kind;
    l.colours = vt->colours;
    l.lineno = vt->lines + 1;
    l.raw_start = vt->line_raw_start;
    l.raw_end = raw_end;
    l.frames = vt->frames ? vt->frames : (vt_redraws(vt) ? 1 : 0);
    l.row = vt->row;
    l.aside_at = vt->row == SQ_ROW_ASIDE ? vt->aside_at : 0;
    l.cut = cut;
    l.frame = frame;
    if (frame) {
        l.text = text;
        l.len = len;
        if (!vt->keep(&l, vt->keep_data))
            return 0;
    }
    if (counted)
        vt->text_bytes += binary || damaged ? raw_len : len + 1;
    /* Repair can grow a line (one bad byte becomes three): pieces again. */
    while (len > SQ_LINE_MAX) {
        size_t k = SQ_LINE_MAX;
        while (k > 0 && vt_is_cont((unsigned char)text[k]))
            k--;
        l.text = text;
        l.len = k;
        l.cut = l.more = true;
        int rc = vt->fn(&l, vt->data);
        if (rc < 0)
            return rc;
        text += k;
        len -= k;
    }
    l.text = text;
    l.len = len;
    l.more = more;
    int rc = vt->fn(&l, vt->data);
    return rc < 0 ? rc : frame;
}

/* The line reached SQ_LINE_MAX: hands out a piece, cut at a character
 * boundary, and keeps the incomplete character (if any) for the next. */
static int vt_cut(vt_t *vt, uint64_t raw_end)
{
    size_t len = vt->line.len, cut = len;
    size_t j = len;
    while (j > 0 && len - j < UTF8_SEQ_MAX - 1 &&
           vt_is_cont((unsigned char)vt->line.p[j - 1]))
        j--;
    if (j > 0) {
        unsigned char lead = (unsigned char)vt->line.p[j - 1];
        size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (j - 1 + need > len)
            cut = j - 1;
    }
    if (cut == 0)
        cut = len; /* no boundary found: ill-formed, cut anywhere */
    int rc = vt_deliver(vt, cut, SQ_LINE_COMPLETE, true, true, true, false,
                        raw_end);
    vt_cc_drop(vt, 0);
    memmove(vt->line.p, vt->line.p + cut, len - cut);
    vt->line.len = len - cut;
    vt->line.p[vt->line.len] = '\0';
    vt->cur = vt->line.len;
    vt->pad = 0;
    vt->half = false;
    vt->cut_active = true;
    vt->line_raw_start = raw_end;
    vt->ctl = 0;
    return rc;
}

/* Appends at the end of the line, cutting pieces at SQ_LINE_MAX. */
static int vt_append(vt_t *vt, const unsigned char *p, size_t n,
                     uint64_t raw_end)
{
    while (n) {
        size_t room = SQ_LINE_MAX > vt->line.len ? SQ_LINE_MAX - vt->line.len : 0;
        if (room == 0) {
            int rc = vt_cut(vt, raw_end - n);
            if (rc < 0)
                return rc;
            continue;
        }
        size_t k = n < room ? n : room;
        if (buf_append(&vt->line, p, k) < 0)
            return -ENOMEM;
        p += k;
        n -= k;
        vt->cur = vt->line.len;
    }
    return 0;
}

static bool vt_row_pending(const vt_t *vt, bool lf);

/* FNV-1a of the current line's text, or (letters) of its ASCII letters
 * and its colours alone: a frame drawn again the same as the last one
 * offered, or one that says what the last one kept said, with only a
 * count, a time, a bar or a spinner's glyph changed (vt_offer_frame). */
static uint64_t vt_line_hash(const vt_t *vt, bool letters)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < vt->line.len; i++) {
        unsigned char c = (unsigned char)vt->line.p[i];
        if (!letters || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
            h = (h ^ c) * 1099511628211ull;
    }
    return letters ? (h ^ vt->colours) * 1099511628211ull : h;
}

/*
 * The current line's text is about to be erased or written over: a frame
 * of the cursor's row ends.  A frame of another row meets the redraw
 * hold's keep when a later one replaces it (redraw.h); this is the same
 * decision for the cursor's own row, whose text was never handed out, so
 * that `error: x ESC[2K` or `error: x CR 50%` loses no error
 * (vt_set_keep).  Only a frame that could say something not said yet is
 * asked about: not what an erase left of one asked about already
 * (frame_out), not a row's text handed out already (a resumed row that
 * did not change, a partial line shown as a prompt), not one the same as
 * the last asked about (a status line redrawn the same each tick), not
 * the last piece of a cut line (its pieces are out).  A frame keep wants
 * is kept unless it says what the line's last kept frame said, its
 * letters and colours the same (`⠋ error: 3 retries (2s)` redrawn each
 * tick is one line, its `1 FAILED` after `0 FAILED` another), and at
 * most VT_KEPT_FRAMES_MAX of one line are: a spinner whose message
 * changes every frame is a few lines, not thousands, and costs no more
 * keep calls once they are kept.  A frame kept takes the line's bytes so
 * far, to raw_end (the end of what destroyed it).  0, or the callback's
 * negative return.
 */
static int vt_offer_frame(vt_t *vt, uint64_t raw_end)
{
    if (!vt->keep || vt->frame_out || vt->cut_active || vt->partial_sent ||
        !vt->line.len || vt->kept_frames >= VT_KEPT_FRAMES_MAX ||
        !vt_row_pending(vt, false))
        return 0;
    vt->frame_out = true;
    uint64_t h = vt_line_hash(vt, false);
    if (vt->frame_hashed && h == vt->frame_hash)
        return 0;
    vt->frame_hash = h;
    vt->frame_hashed = true;
    uint64_t said = vt_line_hash(vt, true);
    if (vt->kept_frames && said == vt->kept_hash)
        return 0;
    if (raw_end < vt->line_raw_start)
        raw_end = vt->line_raw_start;
    int rc = vt_deliver(vt, vt->line.len, SQ_LINE_COMPLETE, false, false,
                        true, true, raw_end);
    if (rc <= 0)
        return rc;
    vt->lines++;
    vt->line_raw_start = raw_end;
    vt->kept_frames++;
    vt->kept_hash = said;
    return 0;
}

/* Prints a run of printable bytes (>= 0x20, not DEL; or a TAB) at the
 * cursor: appended at the end, or written over the text under it (the
 * frame it ends offered to keep first).  0, -ENOMEM or the callback's
 * negative return. */
static int vt_print_run(vt_t *vt, const unsigned char *p, size_t n,
                        uint64_t raw_end)
{
    if (vt->rewound) {
        int rc = vt_offer_frame(vt, raw_end);
        if (rc < 0)
            return rc;
        vt->frames++;
        vt->drawn_over++;
        vt->rewound = false;
        vt->fresh = true;
        vt->fresh_end = vt->cur;
    }
    vt->frame_out = false;
    unsigned colour = vt->fg | vt->bg;
    if (colour && !(vt->colours & colour))
        for (size_t i = 0; i < n; i++)
            if (p[i] != ' ' && p[i] != '\t') {
                vt->colours |= colour;
                break;
            }
    vt->partial_sent = false;
    vt->row_dirty = true;
    vt_split_wide(vt);
    if (vt->pad) {
        /* The cursor sits past the end: the cells between are blank. */
        size_t room = SQ_LINE_MAX > vt->line.len ? SQ_LINE_MAX - vt->line.len : 0;
        size_t pad = vt->pad < room ? vt->pad : room;
        if (buf_reserve(&vt->line, pad) < 0)
            return -ENOMEM;
        memset(vt->line.p + vt->line.len, ' ', pad);
        vt->line.len += pad;
        vt->line.p[vt->line.len] = '\0';
        vt->cur = vt->line.len;
        vt->pad = 0;
    }
    /* the last character printed, for REP: one that is whole and well
     * formed, or none (what stray bytes end the run with is none, however
     * the reads cut it) */
    size_t lb = n;
    while (lb > 0 && n - lb < UTF8_SEQ_MAX && vt_is_cont(p[lb - 1]))
        lb--;
    vt->last_len = 0;
    if (lb > 0) {
        unsigned char lead = p[lb - 1];
        size_t len = n - (lb - 1);
        if ((lead < 0x80 && len == 1) ||
            (lead >= 0xC2 && lead <= 0xF4 && len == vt_seq_len(lead))) {
            vt->last_len = len;
            memcpy(vt->last, p + lb - 1, len);
        }
    }
    size_t i = 0;
    if (vt->cur < vt->line.len)
        vt_cc_drop(vt, vt->cur); /* written over from the cursor on */
    while (i < n && vt->cur < vt->line.len) {
        unsigned char c = p[i++];
        char *l = vt->line.p;
        /* its width when it is whole here (vt_print keeps one a read cut
         * off for the next run); an ill-formed one takes a cell */
        size_t nl = vt_seq_len(c), got = 1;
        while (got < nl && i - 1 + got < n && vt_is_cont(p[i - 1 + got]))
            got++;
        int nw = vt_is_cont(c) ? 0
                 : got == nl ? vt_seq_width(p + i - 1, nl)
                             : 1;
        if (!vt_is_cont(c) && nw > 0) {
            /* Replace the cells under it: whole characters, marks and
             * all, until they cover its width; a wide one written over
             * half by a narrow one leaves a blank in its other half. */
            size_t covered, e = vt_skip_cells(vt, vt->cur, (size_t)nw,
                                              &covered);
            size_t blanks = covered > (size_t)nw && vt->line.len < SQ_LINE_MAX
                                ? covered - (size_t)nw
                                : 0;
            if (buf_reserve(&vt->line, 1 + blanks) < 0)
                return -ENOMEM;
            l = vt->line.p;
            memmove(l + vt->cur + 1 + blanks, l + e, vt->line.len - e);
            vt->line.len = vt->line.len - (e - vt->cur) + 1 + blanks;
            memset(l + vt->cur + 1, ' ', blanks);
            l[vt->line.len] = '\0';
            l[vt->cur++] = (char)c;
        } else if (vt->line.len >= SQ_LINE_MAX) {
            /* No room to grow in place: overwrite (bounded, stays lossy
             * only for ill-formed input at the limit). */
            l[vt->cur++] = (char)c;
        } else {
            /* A continuation byte extends the character just written; a
             * combining mark is part of the cell before the cursor: both
             * go in, over nothing. */
            if (buf_reserve(&vt->line, 1) < 0)
                return -ENOMEM;
            l = vt->line.p;
            memmove(l + vt->cur + 1, l + vt->cur, vt->line.len - vt->cur);
            vt->line.len++;
            l[vt->line.len] = '\0';
            l[vt->cur++] = (char)c;
        }
    }
    int rc = i < n ? vt_append(vt, p + i, n - i, raw_end) : 0;
    if (vt->fresh && vt->cur > vt->fresh_end)
        vt->fresh_end = vt->cur;
    return rc;
}

/* DEC's line-drawing set for the bytes 0x5f..0x7e (`lqqqk` is `┌───┐`),
 * as the code points a terminal shows for them. */
static const uint16_t vt_dec_graphics[32] = {
    0x00A0, 0x25C6, 0x2592, 0x2409, 0x240C, 0x240D, 0x240A, 0x00B0,
    0x00B1, 0x2424, 0x240B, 0x2518, 0x2510, 0x250C, 0x2514, 0x253C,
    0x23BA, 0x23BB, 0x2500, 0x23BC, 0x23BD, 0x251C, 0x2524, 0x2534,
    0x252C, 0x2502, 0x2264, 0x2265, 0x03C0, 0x2260, 0x00A3, 0x00B7,
};

static int vt_print(vt_t *vt, const unsigned char *p, size_t n,
                    uint64_t raw_end);

/* Prints a run with G0 the line-drawing set: its bytes 0x5f..0x7e as the
 * characters they draw, a piece at a time. */
static int vt_print_graphics(vt_t *vt, const unsigned char *p, size_t n,
                             uint64_t raw_end)
{
    char b[VT_GRAPHICS_PIECE * 3];
    while (n) {
        size_t k = 0, used = 0;
        for (; k < n && k < VT_GRAPHICS_PIECE; k++) {
            if (p[k] >= 0x5f && p[k] <= 0x7e)
                used += utf8_encode(vt_dec_graphics[p[k] - 0x5f], b + used);
            else
                b[used++] = (char)p[k];
        }
        int rc = vt_print(vt, (const unsigned char *)b, used, raw_end);
        if (rc < 0)
            return rc;
        p += k;
        n -= k;
    }
    return 0;
}

/* Prints the character held (vt->pend): whole once its rest came, or as
 * it is when something else came first (an ill-formed sequence then). */
static int vt_flush_pend(vt_t *vt, uint64_t raw_end)
{
    size_t n = vt->npend;
    if (!n)
        return 0;
    unsigned char b[UTF8_SEQ_MAX];
    memcpy(b, vt->pend, n);
    vt->npend = 0;
    return vt_print_run(vt, b, n, raw_end);
}

/* Prints a run of printable bytes, a character cut off by the read before
 * completed first, and one cut off at its end kept for the next run. */
static int vt_print(vt_t *vt, const unsigned char *p, size_t n,
                    uint64_t raw_end)
{
    int rc;
    if (vt->npend) {
        size_t need = vt_seq_len(vt->pend[0]) - vt->npend;
        while (need && n && vt_is_cont(*p)) {
            vt->pend[vt->npend++] = *p++;
            n--;
            need--;
        }
        if (need && n == 0)
            return 0; /* still short: the next run goes on with it */
        if ((rc = vt_flush_pend(vt, raw_end)) < 0)
            return rc;
    }
    /* a character cut off at the end waits for its rest */
    size_t lead = n;
    while (lead > 0 && n - lead < UTF8_SEQ_MAX && vt_is_cont(p[lead - 1]))
        lead--;
    if (lead > 0 && p[lead - 1] >= 0xC2 && p[lead - 1] <= 0xF4 &&
        n - (lead - 1) < vt_seq_len(p[lead - 1])) {
        vt->npend = n - (lead - 1);
        memcpy(vt->pend, p + lead - 1, vt->npend);
        n = lead - 1;
    }
    return n ? vt_print_run(vt, p, n, raw_end) : 0;
}

/* Moves the cursor to column col (0-based) of the current line, no
 * further past its end than column VT_PAD_MAX (a terminal stops the
 * cursor at its right margin); a column inside a wide character is its
 * right half (vt->half).  The walk starts at the cursor, or at the
 * line's start when that is nearer, so a move costs what it moves. */
static void vt_note_piece(vt_t *vt);

static void vt_move_col(vt_t *vt, size_t col)
{
    vt_note_piece(vt);
    size_t now = vt_cursor_col(vt), at = now - vt->pad - vt->half;
    if (col < now && vt->line.len)
        vt->rewound = true;
    size_t i = vt->cur, c = at;
    if (col < at && col < at - col) {
        i = c = 0; /* nearer the start */
    } else {
        while (c > col && i > 0) { /* back, a character at a time */
            i--;
            while (i && vt_is_cont((unsigned char)vt->line.p[i]))
                i--;
            int w;
            vt_cell(vt, i, &w);
            c = c > (size_t)w ? c - (size_t)w : 0;
        }
    }
    while (i < vt->line.len && c < col) {
        int w;
        size_t l = vt_cell(vt, i, &w);
        if (c + (size_t)w > col)
            break; /* into a wide character: its right half */
        i += l;
        c += (size_t)w;
    }
    vt->half = i < vt->line.len && c < col;
    if (!vt->half)
        i = vt_skip_marks(vt, i);
    vt->cur = i;
    vt->pad = 0;
    if (i == vt->line.len && col > c) {
        size_t room = SQ_LINE_MAX > vt->line.len ? SQ_LINE_MAX - vt->line.len
                                                 : 0;
        size_t margin = c < VT_PAD_MAX ? VT_PAD_MAX - c : 0;
        size_t pad = col - c;
        pad = pad < room ? pad : room;
        vt->pad = pad < margin ? pad : margin;
    }
}

/* DCH (ESC[nP): deletes n cells at the cursor (a wide character whole);
 * the rest of the line moves left.  0 or the callback's negative return
 * (vt_offer_frame). */
static int vt_delete_chars(vt_t *vt, size_t n, uint64_t raw_end)
{
    vt->half = false; /* the wide character under it, whole */
    vt->fresh = false; /* the bytes after it move */
    if (vt->pad || vt->cur >= vt->line.len)
        return 0; /* past the end: nothing to delete */
    int rc = vt_offer_frame(vt, raw_end);
    if (rc < 0)
        return rc;
    size_t cells, e = vt_skip_cells(vt, vt->cur, n, &cells);
    vt_cc_drop(vt, vt->cur);
    memmove(vt->line.p + vt->cur, vt->line.p + e, vt->line.len - e);
    vt->line.len -= e - vt->cur;
    vt->line.p[vt->line.len] = '\0';
    vt->rewound = true;
    vt->drawn_over++;
    vt->row_dirty = true;
    return 0;
}

/* ICH (ESC[n@): opens n blank cells at the cursor; the rest of the line
 * moves right (within SQ_LINE_MAX).  0 or -ENOMEM. */
static int vt_insert_blanks(vt_t *vt, size_t n)
{
    vt->half = false;
    vt->fresh = false;
    if (vt->pad || vt->cur >= vt->line.len)
        return 0; /* past the end: cells there are blank already */
    size_t room = SQ_LINE_MAX > vt->line.len ? SQ_LINE_MAX - vt->line.len : 0;
    if (n > room)
        n = room;
    if (!n || buf_reserve(&vt->line, n) < 0)
        return n ? -ENOMEM : 0;
    vt_cc_drop(vt, vt->cur);
    char *l = vt->line.p;
    memmove(l + vt->cur + n, l + vt->cur, vt->line.len - vt->cur);
    memset(l + vt->cur, ' ', n);
    vt->line.len += n;
    l[vt->line.len] = '\0';
    vt->rewound = true;
    vt->drawn_over++;
    vt->row_dirty = true;
    return 0;
}

/* ECH (ESC[nX): blanks n cells from the cursor on, which stays (a wide
 * character, two blanks).  0 or the callback's negative return
 * (vt_offer_frame). */
static int vt_erase_chars(vt_t *vt, size_t n, uint64_t raw_end)
{
    vt->half = false;
    vt->fresh = false;
    if (vt->pad || vt->cur >= vt->line.len)
        return 0;
    size_t k, e = vt_skip_cells(vt, vt->cur, n, &k);
    if (k > e - vt->cur)
        return 0; /* more blanks than bytes: only wide ones are so, and
                     they never are (each has three bytes or four) */
    int rc = vt_offer_frame(vt, raw_end);
    if (rc < 0)
        return rc;
    vt_cc_drop(vt, vt->cur);
    char *l = vt->line.p;
    /* k one-byte blanks in place of e - cur bytes: never more */
    memmove(l + vt->cur + k, l + e, vt->line.len - e);
    memset(l + vt->cur, ' ', k);
    vt->line.len -= (e - vt->cur) - k;
    l[vt->line.len] = '\0';
    vt->rewound = true;
    vt->drawn_over++;
    vt->row_dirty = true;
    return 0;
}

/* Erases in line: 0 cursor to end, 1 start to cursor, 2 the whole line;
 * a frame with text taken is offered to keep first (vt_offer_frame).  0
 * or the callback's negative return. */
static int vt_erase(vt_t *vt, unsigned mode, uint64_t raw_end)
{
    vt_note_piece(vt);
    /* An erase of only what the frame drawn over left (`\rok ESC[K`, the
     * tail of a longer frame) takes nothing not asked about already. */
    bool leftover = mode == 0 && vt->fresh && vt->cur >= vt->fresh_end;
    int rc = vt->line.len && (mode != 0 || vt->cur < vt->line.len) &&
                     !leftover
                 ? vt_offer_frame(vt, raw_end)
                 : 0;
    if (rc < 0)
        return rc;
    if (mode == 0) {
        /* from the right half of a wide character: its left half stays, a
         * blank */
        vt_split_wide(vt);
        if (vt->cur < vt->line.len) {
            vt_cc_drop(vt, vt->cur);
            vt->line.len = vt->cur;
            vt->line.p[vt->line.len] = '\0';
            vt->rewound = true;
            vt->drawn_over++;
            vt->row_dirty = true;
        }
    } else if (mode == 1) {
        /* Blank the cells up to and including the cursor's (on an empty
         * line they are blank already). */
        if (!vt->line.len)
            return 0;
        vt->fresh = false; /* the bytes move */
        vt->drawn_over++;
        vt->row_dirty = true;
        size_t col = vt_cursor_col(vt);
        size_t end = vt->cur;
        if (end < vt->line.len) {
            int w;
            end = vt_skip_marks(vt, end + vt_cell(vt, end, &w));
        }
        size_t cols = vt_columns(vt, end);
        vt_cc_drop(vt, 0);
        memmove(vt->line.p + cols, vt->line.p + end, vt->line.len - end);
        memset(vt->line.p, ' ', cols);
        vt->line.len = vt->line.len - end + cols;
        vt->line.p[vt->line.len] = '\0';
        vt->cur = cols < vt->line.len ? cols : vt->line.len;
        vt->pad = 0;
        vt_move_col(vt, col);
        if (cols)
            vt->rewound = true;
    } else {
        size_t col = vt_cursor_col(vt);
        if (vt->line.len) {
            vt->rewound = true;
            vt->drawn_over++;
            vt->row_dirty = true;
        }
        vt_cc_drop(vt, 0);
        vt->line.len = 0;
        if (vt->line.p)
            vt->line.p[0] = '\0';
        vt->cur = 0;
        vt->half = false;
        vt->pad = col < VT_PAD_MAX ? col : VT_PAD_MAX;
    }
    /* Nothing left of the line: the colours of its text went with it (a
     * bold red erased does not make the plain text after it a hazard). */
    if (!vt->line.len)
        vt->colours = 0;
    return 0;
}

/* Keeps the current row's text in the ring for a move back to it, or
 * marks its slot empty (a row too long, or handed out in pieces).  0 or
 * -ENOMEM. */
static int vt_keep_row(vt_t *vt)
{
    if (vt->row == SQ_ROW_ASIDE)
        return 0;
    if (!vt->kept) {
        struct vt_kept *k = calloc(1, sizeof *k);
        if (!k || !(k->slot = calloc(VT_KEPT_MIN_SLOTS, sizeof *k->slot)) ||
            !(k->ring = malloc(VT_KEPT_MIN_BYTES))) {
            vt_kept_free(k);
            return -ENOMEM;
        }
        k->nslots = VT_KEPT_MIN_SLOTS;
        k->size = VT_KEPT_MIN_BYTES;
        vt->kept = k;
    }
    struct vt_kept *k = vt->kept;
    bool keep = !vt->cut_active && vt->line.len <= VT_ROW_KEEP_MAX;
    size_t n = vt->line.len;
    if (keep && vt_kept_grow(k, vt->row, n) < 0)
        return -ENOMEM;
    struct vt_slot *s = vt_slot(k, vt->row);
    s->row = vt->row;
    s->valid = keep;
    s->cells = 0;
    if (vt->cols) {
        size_t cells = vt_columns(vt, vt->line.len);
        s->cells = cells > UINT32_MAX ? UINT32_MAX : (uint32_t)cells;
    }
    if (!keep)
        return 0;
    /* Per line, so one copy in the common case, where the text does not
     * wrap (reading it back, vt_kept_at, is for moves only). */
    size_t pos = (size_t)(k->head & (k->size - 1));
    if (n <= k->size - pos) {
        if (n)
            memcpy(k->ring + pos, vt->line.p, n);
    } else {
        size_t first = k->size - pos;
        memcpy(k->ring + pos, vt->line.p, first);
        memcpy(k->ring, vt->line.p + first, n - first);
    }
    s->at = k->head;
    s->len = (uint32_t)n;
    s->ctl = vt->ctl > UINT32_MAX ? UINT32_MAX : (uint32_t)vt->ctl;
    s->colours = (uint8_t)vt->colours;
    k->head += n;
    return 0;
}

/* Hands out the current row as it stands (kind: COMPLETE, or PARTIAL at
 * the end of the stream) and keeps its text. */
static int vt_end_row(vt_t *vt, sq_line_kind_t kind, uint64_t raw_end)
{
    int rc = vt_deliver(vt, vt->line.len, kind, vt->cut_active, false, true,
                        false, raw_end);
    if (rc == 0)
        rc = vt_keep_row(vt);
    vt->lines++;
    if (vt_redraws(vt))
        vt->drawn_over++;
    if (vt->row != SQ_ROW_ASIDE && vt->row >= vt->rows)
        vt->rows = vt->row + 1;
    if (vt->row == SQ_ROW_ASIDE)
        vt->aside_shown[vt_aside_bit(vt->aside_at) / 64] |=
            (uint64_t)1 << (vt_aside_bit(vt->aside_at) % 64);
    return rc;
}

/* Whether a resumed row shows other text than when it was handed out:
 * one erased and drawn again the same (an Ink or log-update program
 * draws its whole frame each time) has not changed. */
static bool vt_row_changed(const vt_t *vt)
{
    if (!vt->row_dirty)
        return false;
    const struct vt_kept *k = vt->kept;
    const struct vt_slot *s = vt_kept_row(k, vt->row);
    if (!s || s->len != vt->line.len || s->ctl != vt->ctl)
        return true;
    if (!s->len)
        return false; /* empty then and now */
    size_t first, pos = vt_kept_at(k, s, &first);
    return memcmp(vt->line.p, k->ring + pos, first) != 0 ||
           memcmp(vt->line.p + first, k->ring, s->len - first) != 0;
}

/* Whether the row the cursor is on shows something not handed out yet:
 * a resumed row that changed; a new one (or one aside) with text, control
 * bytes or earlier pieces; with lf, a new one even empty (an empty line
 * is a line). */
static bool vt_row_pending(const vt_t *vt, bool lf)
{
    if (vt->row_old)
        return vt_row_changed(vt);
    return (lf && vt->row != SQ_ROW_ASIDE) || vt->line.len ||
           vt->cut_active || vt->ctl;
}

/* The row a relative move counts from: a row aside stands below the
 * others, where the next new one would. */
static uint64_t vt_row_base(const vt_t *vt)
{
    return vt->row == SQ_ROW_ASIDE ? vt->rows : vt->row;
}

/* Puts the cursor on row `to`, column col, as a line starting at raw
 * offset raw_end: a row lines came from resumes from its kept text (or
 * blank, if the ring no longer holds it), any other starts empty. */
static void vt_enter_row(vt_t *vt, uint64_t to, size_t col, uint64_t raw_end)
{
    vt_line_reset(vt, raw_end);
    vt->row = to;
    vt->row_old = to != SQ_ROW_ASIDE && to < vt->rows;
    vt->row_dirty = false;
    const struct vt_kept *k = vt->kept;
    const struct vt_slot *s = vt->row_old ? vt_kept_row(k, to) : NULL;
    if (s && vt_kept_text(k, s, &vt->line) == 0) {
        vt->ctl = s->ctl;
        vt->colours = s->colours;
    } else if (s) {
        vt_line_reset(vt, raw_end); /* without memory it resumes blank */
    }
    vt_move_col(vt, col);
    /* What is printed over the resumed text draws over it. */
    vt->rewound = vt->cur < vt->line.len;
}

/* Moves the cursor to row `to` (a line feed: lf), column col.  The row
 * left is handed out if it shows something new (vt_row_pending); a move
 * stops at the top of the rows it may reach (VT_ROWS_BACK back, none
 * above a skip) and at the first new row below them. */
static int vt_move_row(vt_t *vt, uint64_t to, size_t col, bool lf,
                       uint64_t raw_end)
{
    int rc = 0;
    bool out = vt_row_pending(vt, lf);
    if (out)
        rc = vt_end_row(vt, SQ_LINE_COMPLETE, raw_end);
    if (to != SQ_ROW_ASIDE) {
        uint64_t top = vt->rows > VT_ROWS_BACK ? vt->rows - VT_ROWS_BACK : 0;
        if (top < vt->row_floor)
            top = vt->row_floor;
        if (to < top)
            to = top;
        if (to > vt->rows)
            to = vt->rows;
    }
    if (!out && to == vt->row) {
        vt_move_col(vt, col); /* nowhere else to go: the row stays as is */
        return rc;
    }
    /* Every byte is in one line's range: bytes of a row left without a
     * line go to the next line that comes out. */
    vt_enter_row(vt, to, col, out ? raw_end : vt->line_raw_start);
    return rc;
}

/* How many screen rows row r takes: one, or as many as it wrapped to
 * when the terminal's width is known and the row is in reach. */
static uint64_t vt_row_height(const vt_t *vt, uint64_t r)
{
    const struct vt_slot *s = vt->kept ? vt_slot(vt->kept, r) : NULL;
    if (!vt->cols || !s || s->row != r || s->cells <= vt->cols)
        return 1;
    return ((uint64_t)s->cells + vt->cols - 1) / vt->cols;
}

/* The screen column of column col of the cursor's line, the terminal's
 * width known: col wrapped at it, but just past the last column of a
 * line that ends there the cursor is still on that row (a terminal wraps
 * only as the next character comes). */
static size_t vt_wrap_col(vt_t *vt, size_t col)
{
    size_t w = vt->cols, c = col % w;
    if (col && c == 0 && col == vt_columns(vt, vt->line.len))
        c = w - 1;
    return c;
}

/*
 * A relative move of n screen rows up (or down), at the cursor's column
 * (or at column 1: home).  Rows are lines (vt.h) while the terminal's
 * width is unknown.  Known (vt_set_cols), a row wider than the terminal
 * is the screen rows it wrapped to, as a program that redraws its last
 * rows counts them (Ink and log-update move up over a wrapped row's
 * every piece): a move within a row stays on it, at that piece's
 * column, and one past it goes on to the rows beyond.  A carriage return
 * still writes from the line's start, not its last piece's, so that a
 * progress line wider than the terminal reads as the line it draws,
 * where a terminal would scroll its pieces away; the piece the cursor
 * was on is remembered for the next move up or down (vt_note_piece).
 */
static int vt_move_rows(vt_t *vt, bool up, uint64_t n, bool home,
                        uint64_t raw_end)
{
    size_t col = home ? 0 : vt_cursor_col(vt);
    uint64_t at = vt_row_base(vt);
    if (!vt->cols)
        return vt_move_row(vt, up ? (at > n ? at - n : 0) : at + n, col,
                           false, raw_end);
    size_t w = vt->cols, c = col % w;
    uint64_t sub = 0, h = 1;
    if (vt->row != SQ_ROW_ASIDE) {
        /* The rows it takes: as many as its text wraps to, as it took
         * since the cursor came, or as it did when handed out; the
         * cursor's, the highest it reached (vt_note_piece). */
        c = vt_wrap_col(vt, col);
        vt_note_piece(vt);
        h = vt->pieces;
        if (vt->row_old && vt_row_height(vt, vt->row) > h)
            h = vt_row_height(vt, vt->row);
        sub = vt->piece < h ? vt->piece : h - 1; /* a terminal stops at
                                                    its margin */
    }
    if (up ? n <= sub : sub + n < h) {
        uint64_t to = up ? sub - n : sub + n;
        vt_move_col(vt, to * w + c);
        vt->piece = to; /* the move set it, up or down */
        return 0;
    }
    uint64_t r = at;
    if (up) {
        uint64_t top = vt->rows > VT_ROWS_BACK ? vt->rows - VT_ROWS_BACK : 0;
        if (top < vt->row_floor)
            top = vt->row_floor;
        for (n -= sub; n && r > top;) {
            uint64_t hr = vt_row_height(vt, --r);
            if (n <= hr)
                return vt_move_row(vt, r, (hr - n) * w + c, false, raw_end);
            n -= hr;
        }
        return vt_move_row(vt, r, c, false, raw_end);
    }
    for (n -= h - 1 - sub; r + 1 < vt->rows;) {
        uint64_t hr = vt_row_height(vt, ++r);
        if (n <= hr)
            return vt_move_row(vt, r, (n - 1) * w + c, false, raw_end);
        n -= hr;
    }
    /* past the last row: vt_move_row stops the move at the first new row,
     * after handing out the one the cursor leaves (the newest, maybe) */
    return vt_move_row(vt, r + n, c, false, raw_end);
}

/* A line feed (LF, VT, FF, IND): the row below, at column col. */
static int vt_line_feed(vt_t *vt, size_t col, uint64_t raw_end)
{
    if (vt->row == vt->rows && !col) {
        /* The common case, a line ended on a new row: the next is new. */
        int rc = vt_end_row(vt, SQ_LINE_COMPLETE, raw_end);
        vt_line_reset(vt, raw_end);
        vt->row = vt->rows;
        return rc;
    }
    return vt_move_row(vt, vt_row_base(vt) + 1, col, true, raw_end);
}

/* An xterm 256-colour or truecolour value, as one of ours (or 0). */
static unsigned vt_rgb_colour(unsigned r, unsigned g, unsigned b)
{
    bool rh = r >= 128, gh = g >= 128;
    bool rl = r <= 95, gl = g <= 95, bl = b <= 95;
    if (rh && gl && bl)
        return SQ_COLOUR_RED;
    if (rh && gh && bl)
        return SQ_COLOUR_YELLOW;
    if (gh && rl && bl)
        return SQ_COLOUR_GREEN;
    return 0;
}

static unsigned vt_256_colour(unsigned n)
{
    static const unsigned basic[16] = {
        0, SQ_COLOUR_RED, SQ_COLOUR_GREEN, SQ_COLOUR_YELLOW, 0, 0, 0, 0,
        0, SQ_COLOUR_RED, SQ_COLOUR_GREEN, SQ_COLOUR_YELLOW, 0, 0, 0, 0,
    };
    static const unsigned cube[6] = {0, 95, 135, 175, 215, 255};
    if (n < 16)
        return basic[n];
    if (n < 232) {
        n -= 16;
        return vt_rgb_colour(cube[n / 36], cube[(n / 6) % 6], cube[n % 6]);
    }
    return 0;
}

/* The colour an SGR parameter names: 30-37/90-97 (fg), 40-47/100-107. */
static unsigned vt_basic_colour(unsigned p)
{
    switch (p % 10) {
    case 1:
        return SQ_COLOUR_RED;
    case 2:
        return SQ_COLOUR_GREEN;
    case 3:
        return SQ_COLOUR_YELLOW;
    default:
        return 0;
    }
}

static void vt_sgr(vt_t *vt)
{
    if (vt->nparams == 0) {
        vt->fg = vt->bg = 0;
        return;
    }
    for (unsigned i = 0; i < vt->nparams; i++) {
        unsigned p = vt->params[i];
        if (p == 0) {
            vt->fg = vt->bg = 0;
        } else if (p == 39) {
            vt->fg = 0;
        } else if (p == 49) {
            vt->bg = 0;
        } else if ((p >= 30 && p <= 37) || (p >= 90 && p <= 97)) {
            vt->fg = vt_basic_colour(p);
        } else if ((p >= 40 && p <= 47) || (p >= 100 && p <= 107)) {
            vt->bg = vt_basic_colour(p);
        } else if (p == 38 || p == 48) {
            unsigned c = 0;
            if (i + 2 < vt->nparams && vt->params[i + 1] == 5) {
                c = vt_256_colour(vt->params[i + 2]);
                i += 2;
            } else if (i + 4 < vt->nparams && vt->params[i + 1] == 2) {
                c = vt_rgb_colour(vt->params[i + 2], vt->params[i + 3],
                                  vt->params[i + 4]);
                i += 4;
            }
            if (p == 38)
                vt->fg = c;
            else
                vt->bg = c;
        }
    }
}

static unsigned vt_param(const vt_t *vt, unsigned i, unsigned dflt)
{
    return i < vt->nparams && vt->params[i] ? vt->params[i] : dflt;
}

/* ESC 7, ESC[s: remembers the cursor's row and column. */
static void vt_save_cursor(vt_t *vt)
{
    vt->saved_row = vt->row;
    vt->saved_col = vt_cursor_col(vt);
    vt->saved_at = vt->aside_at;
    vt->saved = true;
}

/* Moves the cursor to the screen's row `at` (1-based: CUP, HVP, VPA, or
 * the restore of a cursor saved there), column col: a row aside, since
 * which row that is among the ones counted is not known here; `at` tells
 * the lines drawn there apart (sq_line_t aside_at). */
static int vt_move_aside(vt_t *vt, unsigned at, size_t col, uint64_t raw_end)
{
    int rc = vt_move_row(vt, SQ_ROW_ASIDE, col, false, raw_end);
    vt->aside_at = at ? at : 1;
    return rc;
}

/* ESC 8, ESC[u: back to the remembered row and column (a row further back
 * than a move reaches, the top one it does), or to column 1 when nothing
 * was remembered. */
static int vt_restore_cursor(vt_t *vt, uint64_t raw_end)
{
    if (!vt->saved) {
        vt_move_col(vt, 0);
        return 0;
    }
    if (vt->saved_row == SQ_ROW_ASIDE)
        return vt_move_aside(vt, vt->saved_at, vt->saved_col, raw_end);
    return vt_move_row(vt, vt->saved_row, vt->saved_col, false, raw_end);
}

/* Hands out row r, not the cursor's, blanked by an erase: an empty
 * redraw, so that a reader drops what it showed there.  It holds no
 * bytes: the erase is the cursor's line's, which comes out later.  For
 * the rows aside, those from screen row `from` down. */
static int vt_blank_row(vt_t *vt, uint64_t r, uint32_t from)
{
    sq_line_t l;
    memset(&l, 0, sizeof l);
    l.text = "";
    l.kind = SQ_LINE_OVERWRITE;
    l.aside_from = r == SQ_ROW_ASIDE ? from : 0;
    l.lineno = ++vt->lines;
    l.raw_start = l.raw_end = vt->line_raw_start;
    l.frames = 1;
    l.row = r;
    vt->text_bytes++;
    vt->drawn_over++;
    return vt->fn(&l, vt->data);
}

/* ED 0 and ED 2 (ESC[J, ESC[2J) blank the rows aside, where a status
 * bar stands at the bottom of the screen (apt's); from a row aside, ED 0
 * blanks the screen's rows from the cursor's down (its own too from
 * column 1: ESC[H ESC[J clears the screen), ED 2 all of them.  ED 0 also
 * blanks the counted rows below the cursor, each that showed text coming
 * out again, empty.  0 or the callback's negative return. */
static int vt_erase_below(vt_t *vt, unsigned mode)
{
    int rc = 0;
    uint32_t from = 1;
    if (vt->row == SQ_ROW_ASIDE && mode == 0)
        from = vt_cursor_col(vt) == 0  ? vt->aside_at
               : vt->aside_at < UINT32_MAX ? vt->aside_at + 1
                                           : UINT32_MAX;
    if (vt_aside_below(vt, from, true))
        rc = vt_blank_row(vt, SQ_ROW_ASIDE, from);
    if (mode != 0 || vt->row == SQ_ROW_ASIDE || vt->row + 1 >= vt->rows)
        return rc;
    /* Moves keep the cursor within VT_ROWS_BACK rows of the last: every
     * row below it is in reach, with a slot of its own. */
    if (vt->kept && (rc = vt_kept_grow(vt->kept, vt->rows - 1, 0)) < 0)
        return rc;
    for (uint64_t r = vt->row + 1; rc == 0 && r < vt->rows; r++) {
        struct vt_slot *s = vt->kept ? vt_slot(vt->kept, r) : NULL;
        if (s && s->row == r && s->valid && !s->len)
            continue; /* blank already */
        if (s) {
            s->row = r;
            s->valid = true;
            s->len = s->ctl = s->cells = 0;
            s->colours = 0;
        }
        rc = vt_blank_row(vt, r, 0);
    }
    return rc;
}

/* The cursor's column on the screen: its column in the line, wrapped at
 * the terminal's width when that is known (vt_wrap_col). */
static size_t vt_screen_col(vt_t *vt)
{
    size_t col = vt_cursor_col(vt);
    return vt->cols ? vt_wrap_col(vt, col) : col;
}

/* Hands out the cursor's row if it shows something not handed out yet,
 * and goes on at column col of a row that shows nothing: a new one below
 * every row (or, from a row aside, that screen row, blank).  For what
 * leaves the row's text on the screen, or shown once, and the cursor on
 * a blank row: a clear of the screen, a line inserted at the cursor, the
 * alternate screen entered or left.  Nothing is taken from the row: it
 * is no frame drawn over.  0 or the callback's negative return. */
static int vt_fresh_row(vt_t *vt, size_t col, uint64_t raw_end)
{
    /* a row past every row: the move stops at the first new one, counted
     * after the row it leaves (vt_move_row) */
    return vt_move_row(vt, vt->row == SQ_ROW_ASIDE ? SQ_ROW_ASIDE
                                                   : SQ_ROW_ASIDE - 1,
                       col, false, raw_end);
}

/* ED 2 (ESC[2J): the screen is cleared, the cursor stays
 * where it was, and what the screen showed was shown (docs/markers.md):
 * the cursor's row too is handed out as it stood, then the cursor goes
 * on at its column on a blank row; the rows aside are blanked.  0 or
 * the callback's negative return. */
static int vt_clear_screen(vt_t *vt, uint64_t raw_end)
{
    int rc = vt_fresh_row(vt, vt_screen_col(vt), raw_end);
    return rc < 0 ? rc : vt_erase_below(vt, 2);
}

/* DL (ESC[nM): the cursor's row is deleted (the rows below move up, which
 * is not drawn here): its text is erased, a frame offered to keep as any
 * erase's (vt_erase), and the cursor goes to column 1 of what is now
 * there, blank.  0 or the callback's negative return. */
static int vt_delete_line(vt_t *vt, uint64_t raw_end)
{
    int rc = vt_erase(vt, 2, raw_end);
    vt_move_col(vt, 0);
    return rc;
}

/* REP (ESC[nb): prints the last character printed n more times, no
 * further than column VT_PAD_MAX (ncurses uses it where terminfo says
 * the terminal has it, as xterm-256color's does). */
static int vt_repeat(vt_t *vt, size_t n, uint64_t raw_end)
{
    size_t col = vt_cursor_col(vt);
    if (!vt->last_len || col >= VT_PAD_MAX)
        return 0;
    if (n > VT_PAD_MAX - col)
        n = VT_PAD_MAX - col;
    unsigned char c[UTF8_SEQ_MAX];
    size_t len = vt->last_len;
    memcpy(c, vt->last, len);
    for (size_t i = 0; i < n; i++) {
        int rc = vt_print(vt, c, len, raw_end);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/*
 * The alternate screen entered (enter) or left, by modes 47, 1047 or
 * 1049 (save: 1049, which saves the cursor as it enters and restores it
 * as it leaves).  Either way the row the cursor was on stays on the
 * screen it was drawn on: it is handed out as it stands, and the cursor
 * goes on on a blank row of its own, at its column (leaving 1049, the
 * column it saved), never gluing the text after the switch to a row of
 * the other screen.  What a full-screen program draws comes out as rows
 * like any other.  No move goes back above that row (row_floor): the
 * rows above it belong to the other screen.  A switch to the screen
 * already up changes nothing.  0 or the callback's negative return.
 */
static int vt_alt_screen(vt_t *vt, bool enter, bool save, uint64_t raw_end)
{
    if (enter == vt->alt)
        return 0;
    vt->alt = enter;
    size_t col = vt_screen_col(vt);
    if (enter && save)
        vt->alt_col = col;
    else if (!enter && save)
        col = vt->alt_col;
    /* a counted row past every row, from a row aside too: the move stops
     * at the first new one (vt_move_row) */
    int rc = vt_move_row(vt, SQ_ROW_ASIDE - 1, col, false, raw_end);
    vt->row_floor = vt->rows;
    return rc;
}

/* A private-mode set or reset (ESC[?...h, ESC[?...l): of the DEC modes
 * only the alternate screen's (47, 1047, 1049) change the rows; the rest
 * (the cursor shown or hidden, ?25l; bracketed paste ...) change nothing
 * here. */
static int vt_private_mode(vt_t *vt, unsigned char f, uint64_t raw_end)
{
    if (vt->priv != '?' || (f != 'h' && f != 'l'))
        return 0;
    for (unsigned i = 0; i < vt->nparams; i++) {
        unsigned m = vt->params[i];
        if (m == 47 || m == 1047 || m == 1049)
            return vt_alt_screen(vt, f == 'h', m == 1049, raw_end);
    }
    return 0;
}

/* A CSI sequence ended with final byte f. */
static int vt_csi(vt_t *vt, unsigned char f, uint64_t raw_end)
{
    if (vt->priv)
        return vt_private_mode(vt, f, raw_end);
    switch (f) {
    case 'm':
        vt_sgr(vt);
        break;
    case 'G':
    case '`':
        vt_move_col(vt, vt_param(vt, 0, 1) - 1);
        break;
    case 'H':
    case 'f':
        return vt_move_aside(vt, vt_param(vt, 0, 1), vt_param(vt, 1, 1) - 1,
                             raw_end);
    case 'd':
        return vt_move_aside(vt, vt_param(vt, 0, 1), vt_cursor_col(vt),
                             raw_end);
    case 'C': {
        size_t col = vt_cursor_col(vt) + vt_param(vt, 0, 1);
        vt_move_col(vt, col);
        break;
    }
    case 'D': {
        size_t col = vt_cursor_col(vt), n = vt_param(vt, 0, 1);
        vt_move_col(vt, n < col ? col - n : 0);
        break;
    }
    case 'K':
        return vt_erase(vt, vt_param(vt, 0, 0) > 2 ? 2 : vt_param(vt, 0, 0),
                        raw_end);
    case 'J': {
        unsigned m = vt_param(vt, 0, 0);
        if (m == 3)
            return 0; /* the scrollback: the screen's rows stay as they are */
        if (m >= 2)
            return vt_clear_screen(vt, raw_end);
        int rc = vt_erase(vt, m, raw_end);
        if (rc == 0 && m == 0)
            rc = vt_erase_below(vt, m);
        return rc;
    }
    case 'A': /* CUU */
    case 'F': /* CPL: and to column 1 */
        return vt_move_rows(vt, true, vt_param(vt, 0, 1), f == 'F', raw_end);
    case 'B': /* CUD */
    case 'e': /* VPR */
    case 'E': /* CNL: and to column 1 */
        return vt_move_rows(vt, false, vt_param(vt, 0, 1), f == 'E',
                            raw_end);
    case 's':
        vt_save_cursor(vt);
        break;
    case 'u':
        return vt_restore_cursor(vt, raw_end);
    case 'P':
        return vt_delete_chars(vt, vt_param(vt, 0, 1), raw_end);
    case 'L': /* IL: the row's text moves down, a blank row at column 1 */
        return vt_fresh_row(vt, 0, raw_end);
    case 'M':
        return vt_delete_line(vt, raw_end);
    case '@':
        return vt_insert_blanks(vt, vt_param(vt, 0, 1));
    case 'X':
        return vt_erase_chars(vt, vt_param(vt, 0, 1), raw_end);
    case 'b': /* REP: the last character again, up to the margin */
        return vt_repeat(vt, vt_param(vt, 0, 1), raw_end);
    default:
        break;
    }
    return 0;
}

/* ESC 8, ESC M, ESC D or ESC E (c). */
static int vt_esc_move(vt_t *vt, unsigned char c, uint64_t raw_end)
{
    switch (c) {
    case '8':
        return vt_restore_cursor(vt, raw_end);
    case 'M':
        return vt_move_rows(vt, true, 1, false, raw_end);
    case 'D':
        return vt_line_feed(vt, vt_cursor_col(vt), raw_end);
    default:
        return vt_line_feed(vt, 0, raw_end);
    }
}

int vt_feed(vt_t *vt, const void *data, size_t len, uint64_t now_ms)
{
    const unsigned char *p = data, *end = p + len, *start = p;
    uint64_t base = vt->raw_off;
    int rc = 0;

    if (len)
        vt->last_ms = now_ms;
    while (p < end) {
        unsigned char c;
        switch (vt->state) {
        case VT_GROUND: {
            const unsigned char *q = p;
            while (q < end && *q >= 0x20 && *q != 0x7f)
                q++;
            if (q > p) {
                rc = vt->g0_graphics
                         ? vt_print_graphics(vt, p, (size_t)(q - p),
                                             base + (uint64_t)(q - start))
                         : vt_print(vt, p, (size_t)(q - p),
                                    base + (uint64_t)(q - start));
                p = q;
                if (rc < 0)
                    goto out;
                continue;
            }
            c = *p++;
            uint64_t here = base + (uint64_t)(p - start);
            if (vt->npend && (rc = vt_flush_pend(vt, here)) < 0)
                goto out;
            switch (c) {
            case '\n':
            case '\v':
            case '\f':
                rc = vt_line_feed(vt, 0, here);
                break;
            case '\r':
                vt_note_piece(vt);
                if (vt->line.len && vt->cur)
                    vt->rewound = true;
                vt->cur = 0;
                vt->pad = 0;
                vt->half = false;
                break;
            case '\b':
                /* one cell back: onto the right half of a wide character
                 * before the cursor, then onto its left */
                if (vt->pad) {
                    vt->pad--;
                } else if (vt->half) {
                    vt->half = false;
                    vt->rewound = true;
                } else if (vt->cur) {
                    int w = 0;
                    do {
                        vt->cur--;
                        while (vt->cur &&
                               vt_is_cont((unsigned char)vt->line.p[vt->cur]))
                            vt->cur--;
                        vt_cell(vt, vt->cur, &w);
                    } while (!w && vt->cur); /* over its marks */
                    vt->half = w == 2;
                    vt->rewound = true;
                }
                break;
            case '\t':
                rc = vt_print(vt, &c, 1, here);
                break;
            case 0x1b:
                vt->state = VT_ESC;
                break;
            case 0x07: /* BEL: a bell is not content */
            case 0x0e: /* SO and SI shift character sets: `tput sgr0` */
            case 0x0f: /* ends in SI under screen, tmux and linux */
            case 0x7f:
                break;
            default:
                vt->ctl++;
                vt->row_dirty = true;
                break;
            }
            if (rc < 0)
                goto out;
            break;
        }
        case VT_ESC:
            c = *p++;
            vt->nparams = 0;
            vt->param_open = false;
            vt->priv = 0;
            vt->str_len = 0;
            switch (c) {
            case '[':
                vt->state = VT_CSI;
                break;
            case ']':
                vt->str_osc = true;
                vt->state = VT_STR;
                break;
            case 'P':
            case '_':
            case '^':
            case 'X':
                vt->str_osc = false;
                vt->state = VT_STR;
                break;
            case 0x1b:
                break; /* ESC ESC: the first one is dropped */
            case '7': /* DECSC */
                vt_save_cursor(vt);
                vt->state = VT_GROUND;
                break;
            case '8': /* DECRC */
            case 'M': /* RI: a row up */
            case 'D': /* IND: a row down, as a line feed */
            case 'E': /* NEL: the same, to column 1 */
                vt->state = VT_GROUND;
                rc = vt_esc_move(vt, c, base + (uint64_t)(p - start));
                if (rc < 0)
                    goto out;
                break;
            default:
                vt->state = c >= 0x20 && c <= 0x2f ? VT_ESC_INTER : VT_GROUND;
                vt->inter = c;
                break;
            }
            break;
        case VT_ESC_INTER:
            c = *p++;
            if (c < 0x20 || c > 0x2f) {
                vt->state = VT_GROUND;
                /* ESC ( F designates G0: `0` the line-drawing set
                 * (ncurses' smacs), anything else a text set (rmacs) */
                if (vt->inter == '(' && c >= 0x30)
                    vt->g0_graphics = c == '0';
            }
            break;
        case VT_CSI:
            c = *p++;
            if (c >= '0' && c <= '9') {
                if (!vt->param_open) {
                    /* past VT_PARAMS_MAX a parameter is parsed, not kept */
                    vt->param_over = vt->nparams == VT_PARAMS_MAX;
                    if (!vt->param_over)
                        vt->params[vt->nparams++] = 0;
                    vt->param_open = true;
                }
                if (!vt->param_over) {
                    unsigned *v = &vt->params[vt->nparams - 1];
                    unsigned nv = *v * 10 + (unsigned)(c - '0');
                    *v = nv > VT_PARAM_VALUE_MAX ? VT_PARAM_VALUE_MAX : nv;
                }
            } else if (c == ';' || c == ':') {
                if (!vt->param_open && vt->nparams < VT_PARAMS_MAX)
                    vt->params[vt->nparams++] = 0;
                vt->param_open = false;
            } else if (c >= 0x3c && c <= 0x3f) {
                vt->priv = c;
            } else if (c >= 0x40 && c <= 0x7e) {
                vt->state = VT_GROUND;
                rc = vt_csi(vt, c, base + (uint64_t)(p - start));
                if (rc < 0)
                    goto out;
            } else if (c == 0x1b) {
                vt->state = VT_ESC; /* an aborted sequence */
            } else if (c < 0x20 && c != 0x1b) {
                /* C0 inside CSI acts immediately; stay in CSI, as xterm. */
                if (c == '\n') {
                    rc = vt_line_feed(vt, 0, base + (uint64_t)(p - start));
                    if (rc < 0)
                        goto out;
                }
            }
            /* intermediates 0x20-0x2f: ignored */
            break;
        case VT_STR: {
            /* Skip to the terminator in one scan, but no further than the
             * limit: past it, the bytes are read as text again. */
            const unsigned char *q = p, *lim = end;
            size_t room = VT_STRING_MAX - vt->str_len;
            if ((size_t)(end - p) > room)
                lim = p + room;
            while (q < lim && *q != 0x1b && !(vt->str_osc && *q == 0x07))
                q++;
            vt->str_len += (size_t)(q - p);
            p = q;
            if (q < lim) {
                c = *p++;
                vt->state = c == 0x07 ? VT_GROUND : VT_STR_ESC;
            } else if (vt->str_len >= VT_STRING_MAX) {
                vt->state = VT_GROUND;
            }
            break;
        }
        case VT_STR_ESC:
            c = *p;
            if (c == '\\') {
                p++;
                vt->state = VT_GROUND;
            } else {
                vt->state = VT_ESC; /* a new escape ends the string */
            }
            break;
        }
    }
out:
    vt->raw_off = base + (uint64_t)(p - start);
    if (rc < 0)
        vt->raw_off = base + len;
    return rc;
}

size_t vt_pending(const vt_t *vt, const char **text, bool *binary)
{
    *text = vt->line.p ? vt->line.p : "";
    *binary = vt_binary(vt, vt->line.len);
    return vt->line.len;
}

bool vt_cursor_row(const vt_t *vt, uint64_t *row, uint32_t *at, bool *fresh)
{
    *row = vt->row;
    *at = vt->row == SQ_ROW_ASIDE ? vt->aside_at : 0;
    *fresh = vt->row != SQ_ROW_ASIDE && vt->row >= vt->rows;
    return vt_row_pending(vt, false);
}

int vt_row_text(const vt_t *vt, uint64_t row, buf_t *out)
{
    if (row == vt->row && row != SQ_ROW_ASIDE) {
        if (vt_binary(vt, vt->line.len))
            return 0;
        return buf_append(out, vt->line.p ? vt->line.p : "", vt->line.len)
                   < 0 ? -ENOMEM : 1;
    }
    const struct vt_kept *k = vt->kept;
    const struct vt_slot *s = row == SQ_ROW_ASIDE ? NULL : vt_kept_row(k, row);
    if (!s || vt_binary_count(s->ctl, s->len))
        return 0;
    return vt_kept_text(k, s, out) < 0 ? -ENOMEM : 1;
}

uint64_t vt_drawn_over(const vt_t *vt)
{
    return vt->drawn_over;
}

int vt_tick(vt_t *vt, uint64_t now_ms)
{
    /* A row drawn over (resumed, or aside) is no prompt waiting. */
    if (!vt->line.len || vt->partial_sent || vt_redraws(vt) ||
        now_ms - vt->last_ms < SQ_PARTIAL_MS)
        return 0;
    vt->partial_sent = true;
    return vt_deliver(vt, vt->line.len, SQ_LINE_PARTIAL, vt->cut_active,
                      vt->cut_active, false, false, vt->raw_off);
}

int vt_skip(vt_t *vt, uint64_t bytes, uint64_t lines)
{
    int rc = vt_flush_pend(vt, vt->raw_off);
    if (rc < 0)
        return rc;
    vt->state = VT_GROUND;
    if (vt->row_old ? vt_row_changed(vt) : vt->line.len || vt->cut_active)
        rc = vt_end_row(vt, SQ_LINE_COMPLETE, vt->raw_off);
    /* Whatever the skipped bytes set (colours, rows, a cursor) is
     * unknown: the line after them starts from a clean state, on a new
     * row that no move goes back above. */
    vt->fg = vt->bg = 0;
    vt->raw_off += bytes;
    vt->lines += lines;
    vt->row_floor = vt->rows;
    vt->saved = vt->alt = false;
    memset(vt->aside_shown, 0, sizeof vt->aside_shown);
    vt_enter_row(vt, vt->rows, 0, vt->raw_off);
    return rc;
}

int vt_finish(vt_t *vt)
{
    vt->state = VT_GROUND;
    int frc = vt_flush_pend(vt, vt->raw_off);
    if (frc < 0)
        return frc;
    /* a cut line whose last piece was erased still ends (an empty piece),
     * and so does a line of control bytes alone (a binary one); a row
     * drawn again ends as the row it is, not as a partial line */
    if (!vt_row_pending(vt, false))
        return 0;
    int rc = vt_end_row(vt, vt_redraws(vt) ? SQ_LINE_COMPLETE
                                           : SQ_LINE_PARTIAL, vt->raw_off);
    vt_enter_row(vt, vt->rows, 0, vt->raw_off);
    return rc;
}
