/*
 * loggrep.c — read_output's grep, forward and backward (loggrep.h).
 *
 * Both ways split the log into the same lines: the segments [0, ha) and
 * [hb, size) (one [0, size) without a hole), each cut at its '\n's, a last
 * line without one ending at the segment's end.  The forward reader walks
 * them a block at a time from byte 0; the backward one looks for each
 * line's start with memrchr from its end, and reads a line's first bytes
 * again only when they are not in the block it holds (a line longer than a
 * block).  A test (test_loggrep.c) runs both over logs made to cross every
 * boundary and asks for the same answer.
 */
#include "exec/loggrep.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/loop.h"
#include "exec/session.h"
#include "squash/vt.h"
#include "rein.h"

/* Reads n bytes at off, all of them unless the file ends first; the bytes
 * read, or -errno. */
static ssize_t read_at(int fd, void *p, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)p + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* The segments that hold lines, at most two, clipped to size. */
struct segs {
    uint64_t a[2], b[2];
    int n;
};

static void segs_of(const log_grep_t *g, struct segs *s)
{
    s->n = 0;
    if (!g->hole) {
        s->a[0] = 0;
        s->b[0] = g->size;
        s->n = 1;
        return;
    }
    uint64_t ha = g->ha < g->size ? g->ha : g->size;
    uint64_t hb = g->hb < g->size ? g->hb : g->size;
    if (ha > 0) {
        s->a[s->n] = 0;
        s->b[s->n++] = ha;
    }
    if (hb < g->size) {
        s->a[s->n] = hb;
        s->b[s->n++] = g->size;
    }
}

/* ------------------------------------------------------------ forward */

struct fwd_reader {
    int fd;
    size_t len, at; /* bytes in blk; the next one to look at, at *pos */
    char blk[LOG_GREP_BLOCK];
};

/* Reads the line at *pos into line (its first LOG_GREP_LINE_MAX bytes),
 * skipping the dropped range first when *pos is in it.  Returns the bytes
 * it spans, newline included; 0 at the end of the log. */
static uint64_t fwd_next_line(struct fwd_reader *rd, const log_grep_t *g,
                              uint64_t *pos, buf_t *line)
{
    buf_reset(line);
    if (g->hole && *pos >= g->ha && *pos < g->hb) {
        *pos = g->hb;
        rd->len = rd->at = 0;
    }
    uint64_t start = *pos;
    for (;;) {
        if (rd->at == rd->len) {
            if (*pos >= g->size)
                break;
            uint64_t left = g->size - *pos;
            ssize_t n = pread(rd->fd, rd->blk,
                              left < sizeof rd->blk ? (size_t)left
                                                    : sizeof rd->blk,
                              (off_t)*pos);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            rd->len = (size_t)n;
            rd->at = 0;
        }
        size_t avail = rd->len - rd->at;
        if (g->hole && *pos < g->ha && g->ha - *pos < avail)
            avail = (size_t)(g->ha - *pos);
        const char *p = rd->blk + rd->at;
        const char *nl = memchr(p, '\n', avail);
        size_t take = nl ? (size_t)(nl - p) + 1 : avail;
        size_t text = nl ? take - 1 : take;
        if (line->len < LOG_GREP_LINE_MAX &&
            buf_append(line, p,
                       text < LOG_GREP_LINE_MAX - line->len
                           ? text
                           : LOG_GREP_LINE_MAX - line->len) < 0)
            break;
        rd->at += take;
        *pos += take;
        if (nl || (g->hole && *pos == g->ha))
            break; /* at the hole, the next call skips it */
    }
    return *pos - start;
}

/* A line as it is matched and shown: without the '\r's that end it. */
static size_t line_text_len(const char *line, size_t l)
{
    while (l && line[l - 1] == '\r')
        l--;
    return l;
}

/* A terminal's line as it showed it (log_grep_t.as_shown). */
struct as_shown {
    vt_t *vt;
    buf_t text;
    bool binary;   /* control bytes, no text to match */
    bool any;      /* a row gave text to this line ... */
    uint64_t row;  /* ... this one, from text.p + from on */
    size_t from;
};

/* A row drawn again within the line (a cursor move up and back) stands
 * for what it showed before: its last frame is the text. */
static int as_shown_line(const sq_line_t *l, void *data)
{
    struct as_shown *sh = data;
    sh->binary = l->kind == SQ_LINE_BINARY && !l->len;
    if (sh->any && l->row == sh->row && !l->cut) {
        sh->text.len = sh->from;
    } else if (!l->cut || !sh->any) {
        sh->row = l->row;
        sh->from = sh->text.len;
    }
    sh->any = true;
    return buf_append(&sh->text, l->text, l->len);
}

/* Replaces *line, *l by the text the terminal showed for that line: the
 * stripper ends it and starts the next from its ground state, so each
 * line reads the same however the search reaches it.  0 or -ENOMEM. */
static int as_shown(struct as_shown *sh, const char **line, size_t *l)
{
    buf_reset(&sh->text);
    sh->binary = sh->any = false;
    int rc = vt_feed(sh->vt, *line, *l, 0);
    if (rc == 0)
        rc = vt_skip(sh->vt, 0, 0);
    *line = sh->text.p ? sh->text.p : "";
    *l = sh->text.len;
    return rc;
}

static int grep_forward(int fd, log_grep_t *g, session_pattern_t *re,
                        struct as_shown *sh, buf_t *out, char *err,
                        size_t errlen)
{
    int rc = 0;
    struct fwd_reader *rd = malloc(sizeof *rd);
    buf_t lb = BUF_INIT;
    uint64_t n, lineno = 0, pos = 0;
    if (!rd)
        return -ENOMEM;
    rd->fd = fd;
    rd->len = rd->at = 0;
    /* The clock starts at the first line searched: counting the lines
     * before offset is not searching them (the search back counts its
     * prefix outside the budget too), and a search that goes on where the
     * last one stopped must get its whole budget, or each call would
     * search one line more and a log would take calls without end. */
    uint64_t t0 = 0;
    bool searched = false; /* a line at least, whatever the budget */
    while (pos < g->hi && (n = fwd_next_line(rd, g, &pos, &lb)) > 0) {
        lineno++;
        uint64_t at = pos - n;
        if (at >= g->lo && !t0)
            t0 = loop_clock_ms();
        if (searched && loop_clock_ms() - t0 >= g->time_ms) {
            g->stopped = at; /* this line is not searched */
            g->stopped_line = lineno;
            break;
        }
        if (at < g->lo)
            continue;
        searched = true;
        const char *line = lb.p ? lb.p : "";
        size_t l = line_text_len(line, lb.len);
        if (sh && (rc = as_shown(sh, &line, &l)) < 0)
            goto out;
        if (sh && sh->binary)
            continue;
        /* A pattern that reaches its limit on one line would cost as much
         * on every other: the grep ends there, saying where. */
        char why[SESSION_PATTERN_ERR_MAX];
        if ((rc = session_pattern_match(re, line, l, why, sizeof why)) < 0) {
            snprintf(err, errlen, "%s (at log line %" PRIu64 ")", why,
                     lineno);
            goto out;
        }
        if (rc == 0)
            continue;
        rc = 0;
        size_t before = out->len;
        if (buf_printf(out, "%" PRIu64 ": ", lineno) < 0 ||
            buf_append(out, line, l) < 0 || buf_append_byte(out, '\n') < 0) {
            rc = -ENOMEM;
            goto out;
        }
        if (out->len > g->budget) { /* from the start: stop here */
            out->len = before;
            out->p[out->len] = 0;
            g->truncated = true;
            break;
        }
        g->found++;
    }
    g->to = g->stopped ? g->stopped : g->hi;
out:
    buf_free(&lb);
    free(rd);
    return rc;
}

/* ----------------------------------------------------------- backward */

struct rev_reader {
    int fd;
    uint64_t bs; /* blk holds the bytes [bs, bs + blen) */
    size_t blen;
    char blk[LOG_GREP_BLOCK];
};

/* Makes blk hold byte p - 1 and as many before it as fit, down to floor. */
static int rev_load(struct rev_reader *r, uint64_t floor, uint64_t p)
{
    if (r->blen && p - 1 >= r->bs && p - 1 < r->bs + r->blen)
        return 0;
    uint64_t from = p - floor > sizeof r->blk ? p - sizeof r->blk : floor;
    ssize_t n = read_at(r->fd, r->blk, (size_t)(p - from), from);
    if (n < 0)
        return (int)n;
    if ((uint64_t)n != p - from)
        return -EIO; /* the log shrank under us */
    r->bs = from;
    r->blen = (size_t)n;
    return 0;
}

/* The start of the line that ends at le (its '\n', or the segment's end),
 * in a segment starting at a: after the last '\n' before le, or a. */
static int rev_line_start(struct rev_reader *r, uint64_t a, uint64_t le,
                          uint64_t *ls)
{
    uint64_t p = le;
    while (p > a) {
        int rc = rev_load(r, a, p);
        if (rc < 0)
            return rc;
        uint64_t low = r->bs > a ? r->bs : a;
        const char *q = memrchr(r->blk + (low - r->bs), '\n', p - low);
        if (q) {
            *ls = r->bs + (uint64_t)(q - r->blk) + 1;
            return 0;
        }
        p = low;
    }
    *ls = a;
    return 0;
}

/* Lines that start before s, a line's start (or the end of a segment). */
static int count_lines(struct rev_reader *r, const struct segs *sg,
                       uint64_t s, uint64_t *count)
{
    uint64_t n = 0;
    for (int i = 0; i < sg->n && sg->a[i] < s; i++) {
        uint64_t end = sg->b[i] < s ? sg->b[i] : s;
        for (uint64_t p = sg->a[i]; p < end;) {
            size_t want = end - p < sizeof r->blk ? (size_t)(end - p)
                                                  : sizeof r->blk;
            ssize_t got = read_at(r->fd, r->blk, want, p);
            if (got < 0)
                return (int)got;
            if ((size_t)got != want)
                return -EIO;
            n += buf_count(r->blk, want, '\n');
            p += want;
        }
        r->blen = 0; /* blk was used for counting */
        if (end == sg->b[i]) { /* a last line without '\n' counts too */
            char c;
            ssize_t got = read_at(r->fd, &c, 1, end - 1);
            if (got < 0)
                return (int)got;
            if (got == 1 && c != '\n')
                n++;
        }
    }
    *count = n;
    return 0;
}

/* A match found going back: the idx-th line searched (0: the newest), its
 * text at off in the text buffer. */
struct rev_match {
    uint64_t idx;
    size_t off, len;
};

static int digits(uint64_t x)
{
    int d = 1;
    while (x >= 10) {
        x /= 10;
        d++;
    }
    return d;
}

static int grep_backward(int fd, log_grep_t *g, session_pattern_t *re,
                         struct as_shown *sh, buf_t *out, char *err,
                         size_t errlen)
{
    int rc = 0;
    struct rev_reader *r = malloc(sizeof *r);
    struct rev_match *m = NULL;
    size_t nm = 0, cap = 0, lower = 0;
    buf_t texts = BUF_INIT, lb = BUF_INIT;
    struct segs sg, cut;
    uint64_t searched = 0, s = g->hi, prior;
    bool stopped = false;
    if (!r)
        return -ENOMEM;
    r->fd = fd;
    r->blen = 0;
    segs_of(g, &sg);
    /* The segments cut to the lines that start before hi. */
    cut.n = 0;
    for (int i = 0; i < sg.n && sg.a[i] < g->hi; i++) {
        cut.a[cut.n] = sg.a[i];
        cut.b[cut.n] = sg.b[i];
        if (g->hi < sg.b[i] &&
            (rc = log_line_end(fd, sg.b[i], false, 0, 0, g->hi,
                               &cut.b[cut.n])) < 0)
            goto out;
        cut.n++;
    }
    uint64_t t0 = loop_clock_ms();
    for (int i = cut.n - 1; i >= 0 && g->found < g->tail; i--) {
        uint64_t a = cut.a[i], le = cut.b[i];
        if ((rc = rev_load(r, a, le)) < 0)
            goto out;
        if (r->blk[le - 1 - r->bs] == '\n')
            le--; /* the last line's own end is no line after it */
        for (;;) {
            if (searched > 0 && loop_clock_ms() - t0 >= g->time_ms) {
                stopped = true;
                break;
            }
            uint64_t ls;
            if ((rc = rev_line_start(r, a, le, &ls)) < 0)
                goto out;
            uint64_t keep = le - ls < LOG_GREP_LINE_MAX ? le - ls
                                                        : LOG_GREP_LINE_MAX;
            const char *line;
            size_t have = (size_t)keep;
            if (ls >= r->bs && ls + keep <= r->bs + r->blen) {
                line = r->blk + (ls - r->bs);
            } else { /* longer than the block holds: read its start */
                buf_reset(&lb);
                if ((rc = buf_reserve(&lb, (size_t)keep)) < 0)
                    goto out;
                ssize_t got = read_at(fd, lb.p, (size_t)keep, ls);
                if (got < 0) {
                    rc = (int)got;
                    goto out;
                }
                lb.len = have = (size_t)got;
                line = lb.p;
            }
            size_t l = line_text_len(line, have);
            char why[SESSION_PATTERN_ERR_MAX];
            if (sh && (rc = as_shown(sh, &line, &l)) < 0)
                goto out;
            rc = sh && sh->binary
                     ? 0
                     : session_pattern_match(re, line, l, why, sizeof why);
            if (rc < 0) {
                uint64_t before;
                int crc = count_lines(r, &sg, ls, &before);
                if (crc < 0) {
                    rc = crc;
                    goto out;
                }
                snprintf(err, errlen, "%s (at log line %" PRIu64 ")", why,
                         before + 1);
                goto out;
            }
            s = ls;
            if (rc == 1) {
                if (nm == cap) {
                    size_t ncap = cap ? 2 * cap : 64;
                    struct rev_match *nv = realloc(m, ncap * sizeof *nv);
                    if (!nv) {
                        rc = -ENOMEM;
                        goto out;
                    }
                    m = nv;
                    cap = ncap;
                }
                m[nm].idx = searched;
                m[nm].off = texts.len;
                m[nm].len = l;
                if ((rc = buf_append(&texts, line, l)) < 0)
                    goto out;
                nm++;
                g->found++;
                /* "1: " and '\n' at least: past the budget, no older match
                 * can be shown, so the search is over. */
                lower += l + 4;
            }
            rc = 0;
            searched++;
            if (g->found >= g->tail || lower > g->budget)
                break;
            if (ls == a)
                break;
            le = ls - 1;
        }
        if (stopped || lower > g->budget)
            break;
    }
    g->from = s;
    g->to = g->hi;
    if (searched == 0)
        goto out; /* tail 0, or no line before hi */
    /* Number the lines: those before the earliest searched, then the
     * searched ones in order. */
    if ((rc = count_lines(r, &sg, s, &prior)) < 0)
        goto out;
    if (stopped) {
        g->stopped = s;
        g->stopped_line = prior + 1;
    }
    /* The newest matches that fit the budget, shown oldest first. */
    size_t shown = 0, bytes = 0;
    while (shown < nm) {
        const struct rev_match *x = &m[shown];
        uint64_t no = prior + searched - x->idx;
        size_t sz = (size_t)digits(no) + 2 + x->len + 1;
        if (sz > g->budget - bytes)
            break;
        bytes += sz;
        shown++;
    }
    g->truncated = shown < nm;
    if ((rc = buf_reserve(out, bytes)) < 0)
        goto out;
    for (size_t k = shown; k-- > 0;) {
        const struct rev_match *x = &m[k];
        buf_printf(out, "%" PRIu64 ": ", prior + searched - x->idx);
        buf_append(out, texts.p + x->off, x->len);
        buf_append_byte(out, '\n');
    }
out:
    free(m);
    buf_free(&texts);
    buf_free(&lb);
    free(r);
    return rc;
}

int log_grep(int fd, log_grep_t *g, buf_t *out, char *err, size_t errlen)
{
    session_pattern_t *re = NULL;
    struct as_shown sh = {.vt = NULL, .text = BUF_INIT};
    int rc = session_pattern_new(g->pattern, false, &re, err, errlen);
    if (rc < 0)
        return rc;
    if (g->as_shown && (rc = vt_new(as_shown_line, &sh, &sh.vt)) < 0)
        goto out;
    g->from = g->lo;
    g->to = g->hi;
    g->stopped = g->stopped_line = g->found = 0;
    g->truncated = false;
    struct as_shown *shp = g->as_shown ? &sh : NULL;
    rc = g->tail == LOG_GREP_ALL
             ? grep_forward(fd, g, re, shp, out, err, errlen)
             : grep_backward(fd, g, re, shp, out, err, errlen);
out:
    vt_free(sh.vt);
    buf_free(&sh.text);
    session_pattern_free(re);
    return rc;
}

int log_line_end(int fd, uint64_t size, bool hole, uint64_t ha, uint64_t hb,
                 uint64_t at, uint64_t *end)
{
    *end = at;
    if (at == 0 || at >= size)
        return 0;
    uint64_t limit = size;
    if (hole && at - 1 >= ha && at - 1 < hb)
        return 0; /* no line holds a dropped byte */
    if (hole && at - 1 < ha && ha < size)
        limit = ha;
    if (at >= limit)
        return 0; /* the line ends where the dropped range starts */
    char blk[4096];
    uint64_t p = at - 1;
    while (p < limit) {
        size_t want = limit - p < sizeof blk ? (size_t)(limit - p)
                                             : sizeof blk;
        ssize_t got = read_at(fd, blk, want, p);
        if (got < 0)
            return (int)got;
        if (got == 0)
            break;
        const char *nl = memchr(blk, '\n', (size_t)got);
        if (nl) {
            *end = p + (uint64_t)(nl - blk) + 1;
            return 0;
        }
        p += (uint64_t)got;
    }
    *end = p < limit ? p : limit;
    return 0;
}
