/*
 * dedup.c — templates and groups (see dedup.h).
 *
 * The template pass is one scan that splits a line into tokens at spaces
 * and at quoting/bracketing punctuation; a token that holds a digit, a
 * slash, a backslash or an `@`, or is a long run of hex letters, is
 * variable.  That one rule covers numbers, versions, hashes, UUIDs, times,
 * URLs, paths and `file:line:col` alike, without a regex per line: the
 * template runs on every line of the output.  One exception: a count of
 * zero beside a word of failure (`0 failed`, `errors=0`) stays in the
 * template, so that a line that counts some failures (`batch 101: 3
 * failed`) never folds into a group of lines that count none.
 *
 * Groups live in an open-addressing table keyed by the 64-bit hash.  A
 * group's memory is bounded whatever its size (dedup.h): the runs it
 * lists and the locations it names are capped, the rest only counted, so
 * that a member costs O(1) time and, past the caps, no memory.  The
 * groups a full table may recycle (every member shown) are kept in a set
 * with O(1) removal, so that picking one costs O(1) too; a recycled
 * group leaves the table by backward-shift deletion, which needs no
 * tombstones.
 */
#include "squash/dedup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEDUP_FNV_OFFSET 1469598103934665603ull
#define DEDUP_FNV_PRIME 1099511628211ull
/* A run of hex letters this long (no digit) is still a hash. */
#define DEDUP_HEX_TOKEN 8
/* No index: not in the recyclable set. */
#define DEDUP_NONE UINT32_MAX
/* The seed of the recycling's xorshift generator: a fixed one, so that the
 * same output always condenses the same way. */
#define DEDUP_RNG_SEED 0x9E3779B97F4A7C15ull

/* What each byte is to a template, so the hot loop costs one load per
 * byte: a separator between tokens; a character that makes its token
 * variable (digits, path and address characters); a hex letter (a token
 * of them alone is a hash); a character of a high-entropy run. */
#define DC_SEP 1u
#define DC_VAR 2u
#define DC_HEX 4u
#define DC_ENT 8u
static const uint8_t dedup_class[256] = {
    [' '] = DC_SEP, ['\t'] = DC_SEP, ['"'] = DC_SEP, ['\''] = DC_SEP,
    ['('] = DC_SEP, [')'] = DC_SEP, ['['] = DC_SEP, [']'] = DC_SEP,
    ['{'] = DC_SEP, ['}'] = DC_SEP, [','] = DC_SEP, [';'] = DC_SEP,
    ['='] = DC_SEP, ['<'] = DC_SEP, ['>'] = DC_SEP, ['`'] = DC_SEP,
    ['0' ... '9'] = DC_VAR | DC_ENT,
    ['a' ... 'f'] = DC_HEX | DC_ENT, ['A' ... 'F'] = DC_HEX | DC_ENT,
    ['g' ... 'z'] = DC_ENT, ['G' ... 'Z'] = DC_ENT,
    ['/'] = DC_VAR | DC_ENT, ['\\'] = DC_VAR, ['@'] = DC_VAR,
    ['+'] = DC_ENT, ['_'] = DC_ENT, ['-'] = DC_ENT,
};

static inline bool dedup_sep(unsigned char c)
{
    return dedup_class[c] & DC_SEP;
}

static inline uint64_t dedup_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * DEDUP_FNV_PRIME;
    return h;
}

/* i + k when s holds exactly k digits at i (and no more), else 0. */
static size_t dd_digits(const char *s, size_t n, size_t i, size_t k)
{
    size_t j = i;
    while (j < n && s[j] >= '0' && s[j] <= '9')
        j++;
    return j - i == k ? j : 0;
}

/* `hh:mm:ss`, then a fraction after `.` or `,`: its end, or 0. */
static size_t dd_time(const char *s, size_t n, size_t i)
{
    for (int k = 0; k < 3; k++) {
        if (!(i = dd_digits(s, n, i, 2)))
            return 0;
        if (k < 2) {
            if (i >= n || s[i] != ':')
                return 0;
            i++;
        }
    }
    if (i + 1 < n && (s[i] == '.' || s[i] == ',') && s[i + 1] >= '0' &&
        s[i + 1] <= '9') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    return i;
}

size_t dedup_glog_len(const char *s, size_t n)
{
    size_t d, t;
    if (n < 16 || !s[0] || !strchr("IWEF", s[0]) ||
        !((d = dd_digits(s, n, 1, 4)) || (d = dd_digits(s, n, 1, 8))) ||
        d >= n || s[d] != ' ' || !(t = dd_time(s, n, d + 1)) ||
        t <= d + 9) /* glog always writes the fraction */
        return 0;
    while (t < n && s[t] == ' ')
        t++;
    size_t id = t;
    while (t < n && s[t] >= '0' && s[t] <= '9')
        t++;
    if (t == id || t >= n || s[t] != ' ')
        return 0;
    while (t < n && s[t] == ' ')
        t++;
    return t;
}

size_t dedup_stamp_len(const char *s, size_t n)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    size_t g = dedup_glog_len(s, n);
    if (g)
        return g;
    size_t i = 0, t = 0;
    bool br = n && s[0] == '[';
    if (br)
        i = 1;
    size_t d;
    if ((d = dd_digits(s, n, i, 4)) && d < n && s[d] == '-' &&
               (d = dd_digits(s, n, d + 1, 2)) && d < n && s[d] == '-' &&
               (d = dd_digits(s, n, d + 1, 2)) && d < n &&
               (s[d] == 'T' || s[d] == ' ') && (t = dd_time(s, n, d + 1))) {
        /* ISO 8601: then `Z` or an offset */
        if (t < n && s[t] == 'Z') {
            t++;
        } else if (t < n && (s[t] == '+' || s[t] == '-')) {
            size_t e, f;
            if ((e = dd_digits(s, n, t + 1, 4)))
                t = e; /* +0800 */
            else if ((e = dd_digits(s, n, t + 1, 2)))
                t = e < n && s[e] == ':' && (f = dd_digits(s, n, e + 1, 2))
                        ? f /* +08:00 */
                        : e; /* +08 */
        }
    } else if (i + 4 < n && s[i + 3] == ' ') {
        /* syslog: `Nov 22 10:00:01`, `Nov  2 10:00:01` */
        for (size_t m = 0; m < 36 && !t; m += 3)
            if (!memcmp(s + i, months + m, 3)) {
                size_t k = i + 4;
                if (k < n && s[k] == ' ')
                    k++;
                size_t e = k;
                while (e < n && e - k < 3 && s[e] >= '0' && s[e] <= '9')
                    e++;
                if (e > k && e - k <= 2 && e < n && s[e] == ' ')
                    t = dd_time(s, n, e + 1);
            }
    } else {
        t = dd_time(s, n, i);
    }
    if (!t)
        return 0;
    if (br) {
        if (t >= n || s[t] != ']')
            return 0;
        t++;
    }
    if (t < n && s[t] != ' ' && s[t] != '\t')
        return 0;
    while (t < n && (s[t] == ' ' || s[t] == '\t'))
        t++;
    return t;
}

uint64_t dedup_template(const char *line, size_t len, buf_t *out)
{
    return dedup_template_ex(line, len, out, NULL);
}

/* Whether s[i..j) is a word of failure, in any case, a ':' after it
 * allowed: fail, failed, failing, failure(s), error(s), unreachable (as
 * ansible counts hosts). */
static bool dd_fail_word(const unsigned char *s, size_t i, size_t j)
{
    static const char *const words[] = {"fail", "failed", "failing",
                                        "failure", "failures", "error",
                                        "errors", "unreachable", NULL};
    size_t n = j - i;
    if (n && s[j - 1] == ':')
        n--;
    unsigned char c = s[i] | 0x20;
    if (n < 4 || n > 11 || (c != 'f' && c != 'e' && c != 'u'))
        return false; /* the template's hot loop: most tokens stop here */
    for (size_t w = 0; words[w]; w++) {
        size_t l = strlen(words[w]), k = 0;
        if (l != n || words[w][0] != c)
            continue;
        while (k < l && (s[i + k] | 0x20) == words[w][k])
            k++;
        if (k == l)
            return true;
    }
    return false;
}

/* Whether the token s[i..j) is a count of zero beside a word of failure:
 * after one (`errors=0`, `failures: 0`; prev_fail says the token before
 * was one, with only blanks or '=' between) or before one that is no key
 * of its own (`0 failed`, but not `Tests: 0 Failures: 1` or `changed=0
 * unreachable=1`, where the word names the next value). */
static bool dd_zero_failures(const unsigned char *s, size_t len, size_t i,
                             size_t j, bool prev_fail)
{
    for (size_t k = i; k < j; k++)
        if (s[k] != '0')
            return false;
    if (prev_fail)
        return true;
    size_t k = j;
    while (k < len && s[k] == ' ')
        k++;
    size_t e = k;
    while (e < len && !dedup_sep(s[e]))
        e++;
    return k > j && e > k && s[e - 1] != ':' && (e == len || s[e] != '=') &&
           dd_fail_word(s, k, e);
}

uint64_t dedup_template_ex(const char *line, size_t len, buf_t *out,
                           bool *entropy)
{
    const unsigned char *s = (const unsigned char *)line;
    uint64_t h = DEDUP_FNV_OFFSET;
    if (out)
        buf_reset(out);
    size_t i = 0, alnum_run = 0;
    bool ent = false, prev_fail = false;
    while (i < len) {
        if (dedup_sep(s[i])) {
            if (s[i] != '=')
                alnum_run = 0;
            else if (++alnum_run >= DEDUP_ENTROPY_TOKEN)
                ent = true;
            if (s[i] != ' ' && s[i] != '=')
                prev_fail = false;
            h = (h ^ s[i]) * DEDUP_FNV_PRIME;
            if (out && out->len < DEDUP_TEMPLATE_MAX)
                buf_append_byte(out, s[i]);
            i++;
            continue;
        }
        size_t j = i;
        bool var = false;
        size_t hex = 0;
        unsigned c;
        while (j < len && !((c = dedup_class[s[j]]) & DC_SEP)) {
            var |= (c & DC_VAR) != 0;
            hex += (c & DC_HEX) != 0;
            /* the high-entropy run, as dedup_high_entropy counts it */
            if (c & DC_ENT) {
                if (++alnum_run >= DEDUP_ENTROPY_TOKEN)
                    ent = true;
            } else {
                alnum_run = 0;
            }
            j++;
        }
        if (!var && hex >= DEDUP_HEX_TOKEN && hex == j - i)
            var = true;
        if (var && s[i] == '0' && dd_zero_failures(s, len, i, j, prev_fail))
            var = false; /* `0 failed` stays itself */
        prev_fail = !var && dd_fail_word(s, i, j);
        if (var) {
            h = dedup_fnv(h, "{}", 2);
            if (out && out->len < DEDUP_TEMPLATE_MAX)
                buf_append(out, "{}", 2);
        } else {
            h = dedup_fnv(h, s + i, j - i);
            if (out && out->len < DEDUP_TEMPLATE_MAX) {
                size_t k = j - i;
                if (out->len + k > DEDUP_TEMPLATE_MAX)
                    k = DEDUP_TEMPLATE_MAX - out->len;
                buf_append(out, s + i, k);
            }
        }
        i = j;
    }
    if (out && !out->p)
        buf_append(out, "", 0);
    if (entropy)
        *entropy = ent;
    return h;
}

bool dedup_high_entropy(const char *line, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
            (c >= 'A' && c <= 'Z') || c == '+' || c == '/' || c == '=' ||
            c == '_' || c == '-') {
            if (++run >= DEDUP_ENTROPY_TOKEN)
                return true;
        } else {
            run = 0;
        }
    }
    return false;
}

struct dedup_group {
    uint64_t hash;
    uint32_t count;
    uint32_t nruns;
    char *tmpl;
    dedup_run_t runs[DEDUP_RUNS_MAX];
    uint64_t runs_more;  /* members past the runs kept */
    char *locs;          /* "a\0b\0c\0", distinct */
    size_t locs_len, locs_cap;
    uint64_t *lochash;   /* the hash of each location kept */
    uint32_t nlocs, caplocs;
    uint64_t locs_more;  /* members at a location not kept */
    uint32_t show;       /* members the caller shows (dedup_add) */
    uint32_t spare_at;   /* its index in spare, DEDUP_NONE: not there */
};

struct dedup {
    struct dedup_group *g;
    size_t n, cap;
    uint32_t *slots; /* index + 1, 0 empty */
    size_t nslots;
    uint32_t *spare; /* the groups that may be recycled: count <= show */
    size_t nspare;
    uint64_t rng;
    dedup_recycle_fn recycle;
    void *recycle_data;
};

int dedup_new(dedup_t **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return -ENOMEM;
    (*out)->rng = DEDUP_RNG_SEED;
    return 0;
}

void dedup_on_recycle(dedup_t *d, dedup_recycle_fn fn, void *data)
{
    d->recycle = fn;
    d->recycle_data = data;
}

void dedup_free(dedup_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->g[i].tmpl);
        free(d->g[i].locs);
        free(d->g[i].lochash);
    }
    free(d->g);
    free(d->slots);
    free(d->spare);
    free(d);
}

static int dedup_rehash(dedup_t *d)
{
    size_t ns = d->nslots ? d->nslots * 2 : 256;
    uint32_t *s = calloc(ns, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < d->n; i++) {
        size_t k = (size_t)d->g[i].hash & (ns - 1);
        while (s[k])
            k = (k + 1) & (ns - 1);
        s[k] = (uint32_t)i + 1;
    }
    free(d->slots);
    d->slots = s;
    d->nslots = ns;
    return 0;
}

/* The location text kept at index i of a group (NUL-terminated). */
static const char *dedup_loc_at(const struct dedup_group *g, size_t i)
{
    const char *p = g->locs;
    while (i--)
        p += strlen(p) + 1;
    return p;
}

/* Records a member's location: kept when the group has not seen it and
 * has room, else counted when it is new.  A location is looked up by its
 * hash among the at most DEDUP_LOCATIONS_MAX kept, and a hash that matches
 * is checked against the text, so two locations are never taken for one. */
static int dedup_loc_add(struct dedup_group *g, const char *loc,
                         size_t loc_len)
{
    uint64_t h = dedup_fnv(DEDUP_FNV_OFFSET, loc, loc_len);
    for (uint32_t i = 0; i < g->nlocs; i++) {
        if (g->lochash[i] != h)
            continue;
        const char *k = dedup_loc_at(g, i);
        if (strlen(k) == loc_len && !memcmp(k, loc, loc_len))
            return 0;
    }
    if (g->nlocs == DEDUP_LOCATIONS_MAX) {
        g->locs_more++;
        return 0;
    }
    if (g->nlocs == g->caplocs) {
        uint32_t cap = g->caplocs ? g->caplocs * 2 : 2;
        if (cap > DEDUP_LOCATIONS_MAX)
            cap = DEDUP_LOCATIONS_MAX;
        uint64_t *p = realloc(g->lochash, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        g->lochash = p;
        g->caplocs = cap;
    }
    if (g->locs_len + loc_len + 1 > g->locs_cap) {
        size_t cap = (g->locs_cap ? g->locs_cap : 64);
        while (cap < g->locs_len + loc_len + 1)
            cap *= 2;
        char *p = realloc(g->locs, cap);
        if (!p)
            return -ENOMEM;
        g->locs = p;
        g->locs_cap = cap;
    }
    memcpy(g->locs + g->locs_len, loc, loc_len);
    g->locs_len += loc_len;
    g->locs[g->locs_len++] = '\0';
    g->lochash[g->nlocs++] = h;
    return 0;
}

/* The slot where hash h is, or the empty one where it would go. */
static size_t dedup_probe(const dedup_t *d, uint64_t h)
{
    size_t k = (size_t)h & (d->nslots - 1);
    while (d->slots[k] && d->g[d->slots[k] - 1].hash != h)
        k = (k + 1) & (d->nslots - 1);
    return k;
}

/* Empties slot i and moves the entries after it in its cluster back into
 * the hole where their probe allows, so that every entry stays reachable
 * from its home slot with no tombstone left behind. */
static void dedup_slot_del(dedup_t *d, size_t i)
{
    size_t mask = d->nslots - 1;
    for (size_t j = (i + 1) & mask; d->slots[j]; j = (j + 1) & mask) {
        size_t home = (size_t)d->g[d->slots[j] - 1].hash & mask;
        /* the entry at j may fill i unless its home lies in (i, j] */
        bool stays = i <= j ? home > i && home <= j : home > i || home <= j;
        if (!stays) {
            d->slots[i] = d->slots[j];
            i = j;
        }
    }
    d->slots[i] = 0;
}

/* Takes group gi out of the recyclable set (its count passed its show, or
 * it is recycled). */
static void dedup_spare_drop(dedup_t *d, uint32_t gi)
{
    uint32_t at = d->g[gi].spare_at;
    if (at == DEDUP_NONE)
        return;
    uint32_t last = d->spare[--d->nspare];
    d->spare[at] = last;
    d->g[last].spare_at = at;
    d->g[gi].spare_at = DEDUP_NONE;
}

/* Picks a recyclable group at random, tells the caller, and clears it out
 * of the table; its index is then free for a new group. */
static uint32_t dedup_recycle(dedup_t *d)
{
    d->rng ^= d->rng << 13;
    d->rng ^= d->rng >> 7;
    d->rng ^= d->rng << 17;
    uint32_t gi = d->spare[d->rng % d->nspare];
    if (d->recycle)
        d->recycle(gi, d->recycle_data);
    dedup_slot_del(d, dedup_probe(d, d->g[gi].hash));
    dedup_spare_drop(d, gi);
    struct dedup_group *g = &d->g[gi];
    free(g->tmpl);
    free(g->locs);
    free(g->lochash);
    return gi;
}

/* Makes a group for hash h at slot k: a new index, or a recycled one at
 * the cap, or none (*gi = DEDUP_NONE).  0 or -ENOMEM. */
static int dedup_make(dedup_t *d, uint64_t h, size_t k, const char *tmpl,
                      size_t tmpl_len, uint32_t show, uint32_t *gi)
{
    *gi = DEDUP_NONE;
    if (d->n >= DEDUP_GROUPS_MAX && !d->nspare)
        return 0;
    char *t = strndup(tmpl ? tmpl : "", tmpl ? tmpl_len : 0);
    if (!t)
        return -ENOMEM;
    if (d->n == d->cap && d->n < DEDUP_GROUPS_MAX) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct dedup_group *p = realloc(d->g, cap * sizeof *p);
        uint32_t *sp = p ? realloc(d->spare, cap * sizeof *sp) : NULL;
        if (p)
            d->g = p;
        if (!sp) {
            free(t);
            return -ENOMEM;
        }
        d->spare = sp;
        d->cap = cap;
    }
    if (d->n < DEDUP_GROUPS_MAX) {
        *gi = (uint32_t)d->n++;
    } else {
        *gi = dedup_recycle(d);
        k = dedup_probe(d, h); /* the deletion may have moved the hole */
    }
    struct dedup_group *g = &d->g[*gi];
    memset(g, 0, sizeof *g);
    g->hash = h;
    g->tmpl = t;
    g->show = show < DEDUP_RUNS_MAX ? show : DEDUP_RUNS_MAX;
    g->spare_at = DEDUP_NONE;
    if (g->show) {
        g->spare_at = (uint32_t)d->nspare;
        d->spare[d->nspare++] = *gi;
    }
    d->slots[k] = *gi + 1;
    return 0;
}

int dedup_add(dedup_t *d, uint64_t h, const char *tmpl, size_t tmpl_len,
              uint64_t lineno, const char *loc, size_t loc_len,
              uint32_t show, uint32_t *group)
{
    if ((d->n + 1) * 2 > d->nslots && dedup_rehash(d) < 0)
        return -ENOMEM;
    size_t k = dedup_probe(d, h);
    uint32_t gi;
    if (d->slots[k]) {
        gi = d->slots[k] - 1;
    } else {
        int rc = dedup_make(d, h, k, tmpl, tmpl_len, show, &gi);
        if (rc < 0)
            return rc;
        if (gi == DEDUP_NONE) {
            *group = UINT32_MAX;
            return 1;
        }
    }
    struct dedup_group *g = &d->g[gi];
    if (g->nruns && !g->runs_more && lineno == g->runs[g->nruns - 1].last + 1)
        g->runs[g->nruns - 1].last = lineno;
    else if (g->nruns < DEDUP_RUNS_MAX && !g->runs_more)
        g->runs[g->nruns++] = (dedup_run_t){lineno, lineno};
    else
        g->runs_more++;
    if (loc && loc_len && dedup_loc_add(g, loc, loc_len) < 0)
        return -ENOMEM;
    *group = gi;
    if (++g->count > g->show)
        dedup_spare_drop(d, gi);
    return (int)g->count;
}

size_t dedup_group_count(const dedup_t *d)
{
    return d->n;
}

uint32_t dedup_count(const dedup_t *d, uint32_t group)
{
    return group < d->n ? d->g[group].count : 1;
}

const char *dedup_template_text(const dedup_t *d, uint32_t group)
{
    return group < d->n ? d->g[group].tmpl : "";
}

const dedup_run_t *dedup_runs(const dedup_t *d, uint32_t group, size_t *n,
                              uint64_t *more)
{
    *n = group < d->n ? d->g[group].nruns : 0;
    *more = group < d->n ? d->g[group].runs_more : 0;
    return group < d->n ? d->g[group].runs : NULL;
}

size_t dedup_location_count(const dedup_t *d, uint32_t group)
{
    return group < d->n ? d->g[group].nlocs : 0;
}

uint64_t dedup_locations_more(const dedup_t *d, uint32_t group)
{
    return group < d->n ? d->g[group].locs_more : 0;
}

bool dedup_locations_vary(const dedup_t *d, uint32_t group)
{
    /* the locations kept are distinct, and one past them differs */
    return group < d->n && (d->g[group].nlocs > 1 || d->g[group].locs_more);
}

int dedup_locations(const dedup_t *d, uint32_t group, size_t skip, buf_t *out)
{
    if (group >= d->n)
        return 0;
    const struct dedup_group *g = &d->g[group];
    const char *p = g->locs;
    bool first = true;
    for (size_t i = 0; i < g->nlocs; i++) {
        size_t l = strlen(p);
        if (i >= skip) {
            if (!first && buf_append(out, ", ", 2) < 0)
                return -ENOMEM;
            if (buf_append(out, p, l) < 0)
                return -ENOMEM;
            first = false;
        }
        p += l + 1;
    }
    return 0;
}
