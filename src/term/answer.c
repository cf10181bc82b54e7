/*
 * answer.c — replies to terminal queries (see answer.h).
 *
 * A small scanner finds the control sequences in the output, keeping its
 * state across calls, so a query split between two reads is still one
 * query.  It looks only at the few that are queries, that change how a
 * cursor report reads (origin mode, the scroll region's top), or that
 * switch to and from the alternate screen (term_answer_alt); the cursor
 * itself comes from libvterm's state layer, fed the output up to and
 * including each query before the reply is made.
 *
 * The scanner also keeps from libvterm 0.1.4 (Debian 12) what crashes it,
 * hangs it or makes it read and write outside its arrays, found by
 * feeding it random output under ASan and valgrind and by fuzz_answer: a
 * CSI of more than 16 arguments, the DCS and other strings (a DECRQSS
 * reply of its passes an int for a string), a control inside an OSC
 * string, an ESC whose sequence the scanner left (after it the model
 * would take later text for one), a saved cursor or a scroll region that
 * a shrunk screen no longer holds, a REP with nothing of width to repeat
 * (it loops for ever: rep makes REP here), the C1 controls (they move the
 * cursor left, off the screen).  So the model gets text (valid UTF-8,
 * whole characters, vt_feed) and OSC strings as they come, a CSI only
 * whole, an ESC only with the byte after it, the other strings never.
 * Read in pieces or whole, the output leaves the model the same
 * (fuzz_answer checks it).  The session's screen view is such a model
 * too (with the screen layer, and no replies).
 */
#include "term/answer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#include "base/buf.h"
#include "base/loop.h"
#include "base/utf8.h"
#include "rein.h"

/* The colours reported for OSC 10 and 11: libvterm's defaults, which
 * the session's screen view assumes too. */
#define TERM_ANSWER_FG "rgb:f0f0/f0f0/f0f0"
#define TERM_ANSWER_BG "rgb:0000/0000/0000"
/* Parameters of one control sequence looked at. */
#define TERM_ANSWER_PARAMS 16
/* The most arguments libvterm's parser takes in one CSI (its
 * CSI_ARGS_MAX): a CSI with more never reaches it. */
#define TERM_ANSWER_VT_ARGS_MAX 16

enum scan {
    SCAN_GROUND,
    SCAN_ESC,     /* after ESC */
    SCAN_ESC_INT, /* after ESC and an intermediate byte */
    SCAN_CSI,     /* ESC [ ... */
    SCAN_OSC,     /* ESC ] ... to BEL or ST */
    SCAN_OSC_ESC, /* ESC inside an OSC: ST when \ follows */
    SCAN_STR,     /* DCS, APC, PM, SOS: to ST */
    SCAN_STR_ESC,
};

struct term_answer {
    VTerm *vt;
    VTermState *state;
    unsigned cols, rows;
    term_answer_fn fn;
    void *data;
    /* The model is in its ground state, or in the OSC or the escape
     * sequence with intermediates that the scan is in. */
    enum scan scan;
    char seq[TERM_ANSWER_CSI_MAX > TERM_ANSWER_OSC_MAX ? TERM_ANSWER_CSI_MAX
                                                       : TERM_ANSWER_OSC_MAX];
    size_t nseq;
    bool overflow; /* the sequence outgrew seq: not a query */
    unsigned nargs; /* separators in the CSI so far, plus one */
    bool origin;   /* DECOM: cursor reports relative to the region */
    bool alt;      /* the alternate screen is up (modes 47, 1047, 1049) */
    /* Stream offsets: the bytes fed before this feed, the byte being
     * scanned, the last ESC, and the last switch to the alternate screen
     * (its ESC). */
    uint64_t fed_total, at, esc_at, alt_on_at;
    /* The last stays on it, a ring (term_answer_alt_spans), and how many
     * ended in all. */
    uint64_t spans[TERM_ANSWER_ALT_SPANS][2];
    uint64_t nspans;
    char last[UTF8_SEQ_MAX]; /* the last character printed, for REP */
    size_t nlast;
    bool designating; /* in ESC ( and the like: a character set follows */
    bool charsets;    /* a set other than ASCII was designated (vt_feed) */
    unsigned top;  /* the scroll region's first row, 0-based */
    /* The text on its way to the model, made valid UTF-8 (vt_feed). */
    utf8_dec_t dec;
    buf_t scratch, joined;
    char tail[TERM_ANSWER_TAIL_MAX]; /* the last text, held (vt_feed) */
    size_t ntail;
    uint64_t window_start, in_window;
    uint64_t replies, dropped;
};

/* libvterm answers some queries itself; rein's replies are made here. */
static void vt_discard(const char *s, size_t len, void *user)
{
    (void)s;
    (void)len;
    (void)user;
}

static void flush_tail(term_answer_t *a);

_Static_assert(TERM_ANSWER_TAIL_MAX >= VTERM_MAX_CHARS_PER_CELL * UTF8_SEQ_MAX,
               "the held text holds a whole cell");

int term_answer_new(unsigned cols, unsigned rows, term_answer_fn fn,
                    void *data, term_answer_t **out)
{
    if (!out || !cols || !rows)
        return -EINVAL;
    term_answer_t *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    if (!(a->vt = vterm_new((int)rows, (int)cols))) {
        free(a);
        return -ENOMEM;
    }
    vterm_set_utf8(a->vt, 1);
    vterm_output_set_callback(a->vt, vt_discard, NULL);
    a->state = vterm_obtain_state(a->vt);
    vterm_state_reset(a->state, 1);
    a->cols = cols;
    a->rows = rows;
    a->alt_on_at = UINT64_MAX;
    a->fn = fn;
    a->data = data;
    *out = a;
    return 0;
}

void term_answer_free(term_answer_t *a)
{
    if (!a)
        return;
    vterm_free(a->vt);
    buf_free(&a->scratch);
    buf_free(&a->joined);
    free(a);
}

void term_answer_resize(term_answer_t *a, unsigned cols, unsigned rows)
{
    if (!cols || !rows || (cols == a->cols && rows == a->rows))
        return;
    flush_tail(a); /* printed before the resize */
    vterm_set_size(a->vt, (int)rows, (int)cols);
    a->cols = cols;
    a->rows = rows;
    /* The scroll region goes back to the whole screen, as xterm and tmux
     * reset it on a resize; libvterm 0.1.4 keeps it, and reads outside its
     * line array through a region taller than the screen.  The cursor
     * stays where the resize left it (with the region whole, origin mode
     * moves nothing). */
    VTermPos pos;
    char b[32];
    if (a->scan == SCAN_OSC || a->scan == SCAN_OSC_ESC) {
        /* The model is inside that OSC: it ends there, unanswered, with
         * any character of it still held. */
        vterm_input_write(a->vt, "\030", 1);
        utf8_init(&a->dec);
        a->scan = SCAN_STR;
    }
    vterm_state_get_cursorpos(a->state, &pos);
    int n = snprintf(b, sizeof b, "\033[r\033[%d;%dH", pos.row + 1,
                     pos.col + 1);
    vterm_input_write(a->vt, b, (size_t)n);
    a->top = 0;
}

VTerm *term_answer_vterm(term_answer_t *a)
{
    flush_tail(a);
    return a->vt;
}

bool term_answer_alt(const term_answer_t *a)
{
    return a->alt;
}

uint64_t term_answer_alt_since(const term_answer_t *a)
{
    return a->alt ? a->alt_on_at : UINT64_MAX;
}

size_t term_answer_alt_spans(const term_answer_t *a, uint64_t after,
                             uint64_t (*spans)[2], size_t max)
{
    uint64_t kept = a->nspans < TERM_ANSWER_ALT_SPANS ? a->nspans
                                                      : TERM_ANSWER_ALT_SPANS;
    uint64_t i = a->nspans - kept;
    /* They end in order: skip those that ended by `after`. */
    while (i < a->nspans && a->spans[i % TERM_ANSWER_ALT_SPANS][1] <= after)
        i++;
    size_t n = 0;
    for (; i < a->nspans && n < max; i++, n++) {
        spans[n][0] = a->spans[i % TERM_ANSWER_ALT_SPANS][0];
        spans[n][1] = a->spans[i % TERM_ANSWER_ALT_SPANS][1];
    }
    return n;
}

uint64_t term_answer_count(const term_answer_t *a, uint64_t *dropped)
{
    if (dropped)
        *dropped = a->dropped;
    return a->replies;
}

/* ------------------------------------------------------------ replying */

static void reply(term_answer_t *a, const char *s, int n)
{
    if (!a->fn || n <= 0 || n >= TERM_ANSWER_REPLY_MAX)
        return;
    uint64_t now = loop_clock_ms();
    if (!a->window_start || now - a->window_start >= TERM_ANSWER_WINDOW_MS) {
        a->window_start = now ? now : 1;
        a->in_window = 0;
    }
    if (a->in_window >= TERM_ANSWER_BURST) {
        a->dropped++;
        return;
    }
    a->in_window++;
    a->replies++;
    a->fn(s, (size_t)n, a->data);
}

/* A CSI's parts: private marker ('<' '=' '>' '?' or 0), numeric
 * parameters (-1: omitted), intermediates.  False when it is no plain
 * numeric sequence (sub-parameters, too many parameters). */
struct csi {
    char priv;
    int p[TERM_ANSWER_PARAMS];
    size_t np;
    char inter[4];
    size_t ninter;
};

static bool csi_parse(const char *s, size_t n, struct csi *c)
{
    size_t i = 0;
    memset(c, 0, sizeof *c);
    if (n && s[0] >= '<' && s[0] <= '?')
        c->priv = s[i++];
    int v = -1;
    for (; i < n && s[i] >= 0x30 && s[i] <= 0x3f; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            v = (v < 0 ? 0 : v) * 10 + (s[i] - '0');
            if (v > 99999)
                return false;
        } else if (s[i] == ';') {
            if (c->np == TERM_ANSWER_PARAMS)
                return false;
            c->p[c->np++] = v;
            v = -1;
        } else {
            return false; /* ':' or a marker after the start */
        }
    }
    if (c->np == TERM_ANSWER_PARAMS)
        return false;
    c->p[c->np++] = v;
    for (; i < n; i++) {
        if (s[i] < 0x20 || s[i] > 0x2f || c->ninter == sizeof c->inter)
            return false;
        c->inter[c->ninter++] = s[i];
    }
    return true;
}

/* The first parameter is omitted or 0. */
static bool csi_default(const struct csi *c)
{
    return c->np == 1 && c->p[0] <= 0;
}

/* The alternate screen goes up or down with the sequence that ends at the
 * byte being scanned. */
static void alt_switch(term_answer_t *a, bool on)
{
    if (on && !a->alt) {
        a->alt_on_at = a->esc_at;
    } else if (!on && a->alt) {
        uint64_t *sp = a->spans[a->nspans++ % TERM_ANSWER_ALT_SPANS];
        sp[0] = a->alt_on_at;
        sp[1] = a->at + 1;
    }
    a->alt = on;
}

static void csi_dispatch(term_answer_t *a, char final)
{
    struct csi c;
    char r[TERM_ANSWER_REPLY_MAX];
    if (a->overflow || !csi_parse(a->seq, a->nseq, &c))
        return;
    if (c.ninter) {
        if (final == 'p' && c.ninter == 1 && c.inter[0] == '!' &&
            !c.priv) { /* DECSTR, a soft reset */
            a->origin = false;
            a->top = 0;
        }
        return;
    }
    switch (final) {
    case 'n':
        if (c.priv || c.np != 1)
            return;
        if (c.p[0] == 5) {
            reply(a, "\033[0n", 4);
        } else if (c.p[0] == 6) {
            VTermPos pos;
            vterm_state_get_cursorpos(a->state, &pos);
            int row = pos.row + 1 - (a->origin ? (int)a->top : 0);
            reply(a, r,
                  snprintf(r, sizeof r, "\033[%d;%dR", row < 1 ? 1 : row,
                           pos.col + 1));
        }
        return;
    case 'c':
        if (!c.priv && csi_default(&c))
            reply(a, "\033[?1;2c", 7);
        else if (c.priv == '>' && csi_default(&c))
            reply(a, "\033[>0;0;0c", 9);
        return;
    case 'q':
        if (c.priv == '>' && csi_default(&c))
            reply(a, r,
                  snprintf(r, sizeof r, "\033P>|rein %s\033\\",
                           REIN_VERSION_STRING));
        return;
    case 't':
        if (!c.priv && c.np == 1 && c.p[0] == 18)
            reply(a, r,
                  snprintf(r, sizeof r, "\033[8;%u;%ut", a->rows, a->cols));
        return;
    case 'h':
    case 'l':
        if (c.priv == '?')
            for (size_t i = 0; i < c.np; i++) {
                if (c.p[i] == 6)
                    a->origin = final == 'h';
                else if (c.p[i] == 47 || c.p[i] == 1047 || c.p[i] == 1049)
                    alt_switch(a, final == 'h');
            }
        return;
    case 'r': /* DECSTBM: as the screen model takes it */
        if (!c.priv) {
            int top = c.p[0] > 0 ? c.p[0] : 1;
            int bottom = c.np > 1 && c.p[1] > 0 ? c.p[1] : (int)a->rows;
            if (bottom > (int)a->rows)
                bottom = (int)a->rows;
            if (top < bottom)
                a->top = (unsigned)top - 1;
            else if (c.np == 1 && c.p[0] <= 0)
                a->top = 0;
        }
        return;
    default:
        return;
    }
}

/* OSC 10 ; ? and OSC 11 ; ?, answered with the query's terminator. */
static void osc_dispatch(term_answer_t *a, bool st)
{
    char r[TERM_ANSWER_REPLY_MAX];
    const char *colour = NULL;
    if (a->overflow)
        return;
    if (a->nseq == 4 && !memcmp(a->seq, "10;?", 4))
        colour = TERM_ANSWER_FG;
    else if (a->nseq == 4 && !memcmp(a->seq, "11;?", 4))
        colour = TERM_ANSWER_BG;
    if (colour)
        reply(a, r,
              snprintf(r, sizeof r, "\033]%.2s;%s%s", a->seq, colour,
                       st ? "\033\\" : "\a"));
}

static void seq_add(term_answer_t *a, unsigned char c, size_t max)
{
    if (a->nseq < max)
        a->seq[a->nseq++] = (char)c;
    else
        a->overflow = true;
}

static void seq_begin(term_answer_t *a, enum scan to)
{
    a->scan = to;
    a->nseq = 0;
    a->nargs = 1;
    a->overflow = false;
}

/* ------------------------------------------------------------ scanning */

/* Whether valid UTF-8 t[0..n) has a C1 control (U+0080..U+009F) at i. */
static bool is_c1(const char *t, size_t i, size_t n)
{
    return (unsigned char)t[i] == 0xC2 && i + 1 < n &&
           (unsigned char)t[i + 1] >= 0x80 && (unsigned char)t[i + 1] <= 0x9F;
}

/* Keeps the last character of text t[0..n) that is not a control: what a
 * REP after it repeats (rep). */
static void note_last(term_answer_t *a, const char *t, size_t n)
{
    size_t end = n;
    for (;;) {
        while (end > 0 && ((unsigned char)t[end - 1] < 0x20 ||
                           (unsigned char)t[end - 1] == 0x7f))
            end--;
        if (end < 2 || !is_c1(t, end - 2, end))
            break;
        end -= 2;
    }
    if (end == 0)
        return;
    size_t start = end - 1;
    while (start > 0 && end - start < UTF8_SEQ_MAX &&
           ((unsigned char)t[start] & 0xC0) == 0x80)
        start--;
    memcpy(a->last, t + start, end - start);
    a->nlast = end - start;
}

/* Writes text t[0..n), valid UTF-8, to the model as libvterm 0.1.4 takes
 * it right.  It decodes the C1 controls, U+0080..U+009F, as characters of
 * width -1: each moves the cursor a column left, off the screen from
 * column 0.  xterm prints nothing for them; they are left out.  And it
 * maps text through a designated set (DEC line drawing after ESC ( 0)
 * only up to the first non-ASCII character of a write, decoding the rest
 * as UTF-8: so with one designated, each write ends where ASCII follows
 * non-ASCII, as if that run had come in a read of its own, and the set
 * applies to every ASCII character. */
static void model_text(term_answer_t *a, const char *t, size_t n)
{
    if (!a->charsets && !memchr(t, 0xC2, n)) {
        if (n)
            vterm_input_write(a->vt, t, n);
        return;
    }
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_c1(t, i, n)) {
            if (i > start)
                vterm_input_write(a->vt, t + start, i - start);
            start = ++i + 1;
        } else if (a->charsets && i > start &&
                   !((unsigned char)t[i] & 0x80) &&
                   ((unsigned char)t[i - 1] & 0x80)) {
            vterm_input_write(a->vt, t + start, i - start);
            start = i;
        }
    }
    if (n > start)
        vterm_input_write(a->vt, t + start, n - start);
}

/* Gives the model the text vt_feed held back. */
static void flush_tail(term_answer_t *a)
{
    if (a->ntail) {
        model_text(a, a->tail, a->ntail);
        a->ntail = 0;
    }
}

/* Passes the stream's bytes p[from, to) to the screen model, as valid
 * UTF-8 (base/utf8.h).  libvterm 0.1.4 decodes each write on its own: a
 * character split between two reads of the PTY would reach the screen as
 * two U+FFFD, and a byte that is no character would count for one column
 * or none depending on where the reads fall.  A character cut at the end
 * of a read is held for the next one.  So is the text after the last
 * control, a few characters of it: a combining mark that comes in the
 * next read must reach libvterm in the same write as the character it
 * marks, or, at the last column, it marks the character before and
 * prints on the next row.  The model has that text before anything else:
 * a control, an escape sequence, a resize, a read of the screen
 * (term_answer_vterm). */
static void vt_feed(term_answer_t *a, const unsigned char *p, size_t from,
                    size_t to)
{
    const char *t;
    size_t n;
    if (to <= from)
        return;
    if (utf8_decode_view(&a->dec, p + from, to - from, &a->scratch, &t,
                         &n) < 0) {
        utf8_init(&a->dec); /* no memory: the bytes as they are */
        t = (const char *)p + from;
        n = to - from;
    }
    if (n == 0)
        return;
    note_last(a, t, n);
    /* Text that starts in ASCII marks nothing before it: the held text
     * goes first, in a write of its own, with no copy. */
    if (a->ntail && !((unsigned char)t[0] & 0x80))
        flush_tail(a);
    if (a->ntail) {
        buf_reset(&a->joined);
        if (buf_append(&a->joined, a->tail, a->ntail) == 0 &&
            buf_append(&a->joined, t, n) == 0) {
            a->ntail = 0;
            t = a->joined.p;
            n = a->joined.len;
        } else {
            flush_tail(a); /* no memory: one write more */
        }
    }
    /* The text after the last control, up to TERM_ANSWER_TAIL_MAX bytes
     * from a character's start: room for a character and all the marks a
     * cell takes. */
    size_t at = n;
    while (at > 0 && n - at < TERM_ANSWER_TAIL_MAX &&
           (unsigned char)t[at - 1] >= 0x20 && t[at - 1] != 0x7f)
        at--;
    while (at < n && ((unsigned char)t[at] & 0xC0) == 0x80)
        at++;
    size_t hold = n - at;
    model_text(a, t, n - hold);
    memcpy(a->tail, t + n - hold, hold);
    a->ntail = hold;
}

/* Gives the model all the text before what the scan took from the stream
 * now (an escape sequence, a control inside one, the CAN that ends an
 * aborted one): the text held back, and a character the text left
 * incomplete, which ends there as one U+FFFD. */
static void vt_settle(term_answer_t *a)
{
    flush_tail(a);
    if (utf8_pending(&a->dec)) {
        buf_reset(&a->scratch);
        if (utf8_finish(&a->dec, &a->scratch) == 0)
            vterm_input_write(a->vt, a->scratch.p, a->scratch.len);
        else
            utf8_init(&a->dec);
    }
}

/* Writes what the scan took from the stream to the model, after the text
 * before it (vt_settle). */
static void vt_write(term_answer_t *a, const char *s, size_t n)
{
    vt_settle(a);
    vterm_input_write(a->vt, s, n);
}

/* After a saved cursor was restored (DECRC, modes 1048 and 1049): one
 * saved before the screen shrank lies outside it, and libvterm 0.1.4
 * neither clamps it on the resize nor on the restore, then writes through
 * it outside its arrays.  Moves it back in, as xterm clamps it. */
static void clamp_cursor(term_answer_t *a)
{
    VTermPos pos;
    char b[32];
    int n = 0;
    vterm_state_get_cursorpos(a->state, &pos);
    if (pos.row >= (int)a->rows)
        n += snprintf(b, sizeof b, "\033[%dA", pos.row - (int)a->rows + 1);
    if (pos.col >= (int)a->cols)
        n += snprintf(b + n, sizeof b - (size_t)n, "\033[%dD",
                      pos.col - (int)a->cols + 1);
    if (n)
        vterm_input_write(a->vt, b, (size_t)n);
}

/* REP (CSI n b), the last character printed n more times, made here:
 * libvterm 0.1.4 repeats it until the cursor has moved n columns, and a
 * character of no width (none printed yet, a combining mark, U+200B) never
 * moves it, so `printf '\033[b'` would hold rein's loop for good.  One copy
 * is printed to learn the width (of no width, it stays the only one); the
 * others up to the end of the row, as libvterm bounds them. */
static void rep(term_answer_t *a)
{
    size_t i = 0;
    unsigned count = 0;
    for (; i < a->nseq && a->seq[i] >= '0' && a->seq[i] <= '9'; i++)
        if (count < TERM_ANSWER_REP_MAX)
            count = count * 10 + (unsigned)(a->seq[i] - '0');
    if (i < a->nseq && a->seq[i] != ';')
        return; /* a leader, an intermediate or a sub-parameter: no REP */
    if (!a->nlast)
        return;
    if (count > TERM_ANSWER_REP_MAX)
        count = TERM_ANSWER_REP_MAX;
    if (count == 0)
        count = 1;
    VTermPos p0, p1;
    vt_settle(a);
    vterm_state_get_cursorpos(a->state, &p0);
    vterm_input_write(a->vt, a->last, a->nlast);
    vterm_state_get_cursorpos(a->state, &p1);
    if (p1.row != p0.row || p1.col <= p0.col)
        return; /* no width, or the row ended */
    long w = p1.col - p0.col;
    long end = (long)p0.col + (long)count;
    if (end > (long)a->cols)
        end = (long)a->cols;
    for (long more = (end - p1.col + w - 1) / w; more > 0; more--)
        vterm_input_write(a->vt, a->last, a->nlast);
}

/* The CSI just ended with `final`: the screen model gets it unless it has
 * more arguments than libvterm keeps (its parser writes past its array:
 * 0.1.4 crashes on the 17th), then it is answered.  REP is made here. */
static void csi_end(term_answer_t *a, unsigned char final)
{
    if (final == 'b' && !a->overflow &&
        !(a->nseq && a->seq[0] >= '<' && a->seq[0] <= '?')) {
        rep(a);
    } else if (!a->overflow && a->nargs <= TERM_ANSWER_VT_ARGS_MAX) {
        char b[2 + TERM_ANSWER_CSI_MAX + 1];
        b[0] = '\033';
        b[1] = '[';
        memcpy(b + 2, a->seq, a->nseq);
        b[2 + a->nseq] = (char)final;
        vt_write(a, b, a->nseq + 3);
        if ((final == 'l' || final == 'h') && a->nseq && a->seq[0] == '?')
            clamp_cursor(a); /* 1048 and 1049 restore the cursor */
    }
    csi_dispatch(a, (char)final);
}

/* ESC and then c, c neither '[' nor ESC: the model gets both when they
 * make an escape sequence it ends by itself (it never sees a string
 * sequence but OSC, nor an ESC it would stay in).  True when c is taken
 * care of here, false when the model gets it next. */
static bool esc_then(term_answer_t *a, unsigned char c)
{
    a->scan = SCAN_GROUND;
    if (c < 0x20 || c > 0x7e)
        return false; /* no sequence: the ESC is void, c is text */
    if (c == 'P' || c == '_' || c == '^' || c == 'X') {
        a->scan = SCAN_STR;
        return true;
    }
    if (c == '8') { /* DECRC */
        vt_write(a, "\0338", 2);
        clamp_cursor(a);
        return true;
    }
    vt_write(a, "\033", 1);
    if (c == ']') {
        seq_begin(a, SCAN_OSC);
    } else if (c <= 0x2f) {
        a->scan = SCAN_ESC_INT; /* an intermediate: ESC ( B */
        a->designating = strchr("()*+-./", c) != NULL;
    } else if (c == 'c') { /* RIS, a full reset */
        a->origin = false;
        a->top = 0;
        alt_switch(a, false);
    }
    return false;
}

void term_answer_feed(term_answer_t *a, const void *data, size_t n)
{
    const unsigned char *p = data;
    /* p[fed..] has not reached the screen model yet.  The model gets the
     * text and OSC strings as they come, a CSI only whole (csi_end), the
     * other strings never, and an ESC only together with what follows
     * it: so it never waits inside a sequence the scan has left. */
    size_t fed = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        a->at = a->fed_total + i;
        if (c == 0x1b)
            a->esc_at = a->at;
        switch (a->scan) {
        case SCAN_GROUND: {
            const unsigned char *e = memchr(p + i, 0x1b, n - i);
            if (!e) {
                i = n;
                break;
            }
            i = (size_t)(e - p);
            a->esc_at = a->fed_total + i;
            vt_feed(a, p, fed, i);
            fed = i + 1; /* held */
            a->scan = SCAN_ESC;
            break;
        }
        case SCAN_ESC:
        esc:
            fed = i + 1;
            if (c == '[') {
                seq_begin(a, SCAN_CSI);
            } else if (c == 0x1b) {
                a->scan = SCAN_ESC; /* the first one is void */
            } else if (!esc_then(a, c)) {
                fed = i; /* c goes to the model after the ESC */
            }
            break;
        case SCAN_ESC_INT:
            if (c >= 0x20 && c <= 0x7e && !strchr("[]P_^X", c)) {
                if (c >= 0x30) {
                    a->scan = SCAN_GROUND; /* its final byte */
                    a->charsets |= a->designating && c != 'B';
                }
            } else if (c == 0x1b) {
                /* A new sequence: the model's ends with a CAN, so that it
                 * is not left inside it when this ESC comes to nothing. */
                vt_feed(a, p, fed, i);
                vt_write(a, "\030", 1);
                fed = i + 1;
                a->scan = SCAN_ESC;
            } else {
                /* Malformed, or a final libvterm would take for the
                 * start of a CSI or a string: the model's ends with a
                 * CAN instead. */
                vt_feed(a, p, fed, i);
                vt_write(a, "\030", 1);
                fed = c >= 0x20 && c <= 0x7e ? i + 1 : i;
                a->scan = SCAN_GROUND;
            }
            break;
        case SCAN_CSI:
            fed = i + 1; /* the CSI's bytes are held (csi_end) */
            if (c == 0x1b) {
                a->scan = SCAN_ESC;
            } else if (c == 0x18 || c == 0x1a) {
                a->scan = SCAN_GROUND; /* CAN, SUB: aborted */
            } else if (c >= 0x20 && c <= 0x3f) {
                a->nargs += c == ';' || c == ':';
                seq_add(a, c, TERM_ANSWER_CSI_MAX);
            } else if (c >= 0x40 && c <= 0x7e) {
                a->scan = SCAN_GROUND;
                csi_end(a, c);
            } else if (c >= 0x80) {
                a->scan = SCAN_GROUND; /* no sequence after all: text */
                fed = i;
            } else if (c != 0x7f) {
                /* A C0 control acts inside a CSI, as if before it. */
                vt_write(a, (const char *)p + i, 1);
            }
            break;
        case SCAN_OSC:
            if (c == 0x07) {
                a->scan = SCAN_GROUND;
                osc_dispatch(a, false);
            } else if (c == 0x1b) {
                vt_feed(a, p, fed, i);
                fed = i + 1; /* held */
                a->scan = SCAN_OSC_ESC;
            } else if (c == 0x18 || c == 0x1a) {
                a->scan = SCAN_GROUND;
            } else if (c < 0x20 || c == 0x7f) {
                /* A control inside the string, which xterm ignores: the
                 * model never gets it, as libvterm 0.1.4 reads past the
                 * end of a write that ends in its string after one. */
                vt_feed(a, p, fed, i);
                fed = i + 1;
            } else {
                seq_add(a, c, TERM_ANSWER_OSC_MAX);
            }
            break;
        case SCAN_OSC_ESC:
            if (c == '\\') {
                vt_write(a, "\033", 1);
                fed = i; /* the model's ST */
                a->scan = SCAN_GROUND;
                osc_dispatch(a, true);
                break;
            }
            /* The OSC ends unanswered at that ESC; the model's ends with
             * a CAN.  c follows the ESC. */
            vt_write(a, "\030", 1);
            a->scan = SCAN_ESC;
            goto esc;
        case SCAN_STR:
            fed = i + 1;
            if (c == 0x1b)
                a->scan = SCAN_STR_ESC;
            else if (c == 0x18 || c == 0x1a)
                a->scan = SCAN_GROUND;
            break;
        case SCAN_STR_ESC:
            fed = i + 1;
            if (c == '\\') {
                a->scan = SCAN_GROUND;
                break;
            }
            a->scan = SCAN_ESC; /* the string ended at that ESC */
            goto esc;
        }
    }
    vt_feed(a, p, fed, n);
    a->fed_total += n;
}
