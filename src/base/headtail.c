/*
 * headtail.c — the head+tail output buffer (see headtail.h).
 *
 * The head is a flat array that only grows until its budget is met.  The
 * tail is a ring: once full, each push overwrites its oldest bytes in place,
 * so a stream of small PTY reads costs a copy of each byte and nothing more
 * (Codex uses a VecDeque for the same reason).  Both arrays are allocated
 * lazily and grow geometrically up to their budget, so an idle session with
 * a 1 MiB cap costs a few dozen bytes.
 *
 * Invariant: the stream since `start` is head ++ <omitted bytes> ++ tail,
 * which is what makes the marker's byte range exact.  The -ENOMEM paths keep
 * it by dropping whole runs rather than leaving holes.
 */
#include "base/headtail.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The first allocation of the head or the tail; later ones double. */
#define HEADTAIL_MIN_ALLOC 256
/* After a drain, arrays larger than this are released: the session may now
 * idle for hours and should not pin its peak. */
#define HEADTAIL_KEEP_AFTER_DRAIN (16u * 1024u)

struct headtail {
    size_t cap;
    size_t head_budget; /* cap / 2, lowered only by an -ENOMEM */
    size_t tail_budget; /* cap - cap / 2 */
    unsigned char *head;
    size_t head_len, head_alloc;
    unsigned char *tail; /* ring of tail_alloc bytes */
    size_t tail_off, tail_len, tail_alloc;
    uint64_t omitted; /* since start */
    uint64_t total;   /* pushed since init */
    uint64_t start;   /* stream offset of head[0] */
};

int headtail_new(size_t cap, headtail_t **out)
{
    headtail_t *ht = calloc(1, sizeof *ht);
    if (!ht)
        return -ENOMEM;
    ht->cap = cap;
    ht->head_budget = cap / 2;
    ht->tail_budget = cap - ht->head_budget;
    *out = ht;
    return 0;
}

void headtail_free(headtail_t *ht)
{
    if (!ht)
        return;
    free(ht->head);
    free(ht->tail);
    free(ht);
}

/* The next allocation size: at least need, doubling, capped at budget. */
static size_t headtail_grow_size(size_t alloc, size_t need, size_t budget)
{
    size_t sz = alloc ? alloc : HEADTAIL_MIN_ALLOC;
    while (sz < need && sz <= budget / 2)
        sz *= 2;
    if (sz < need)
        sz = need;
    return sz < budget ? sz : budget;
}

static int headtail_head_reserve(headtail_t *ht, size_t need)
{
    if (need <= ht->head_alloc)
        return 0;
    size_t sz = headtail_grow_size(ht->head_alloc, need, ht->head_budget);
    unsigned char *p = realloc(ht->head, sz);
    if (!p)
        return -ENOMEM;
    ht->head = p;
    ht->head_alloc = sz;
    return 0;
}

/* Grows the ring to hold need bytes, unrolling it so it starts at 0. */
static int headtail_tail_reserve(headtail_t *ht, size_t need)
{
    if (need <= ht->tail_alloc)
        return 0;
    size_t sz = headtail_grow_size(ht->tail_alloc, need, ht->tail_budget);
    unsigned char *p = malloc(sz);
    if (!p)
        return -ENOMEM;
    size_t first = ht->tail_alloc - ht->tail_off;
    if (first > ht->tail_len)
        first = ht->tail_len;
    if (ht->tail_len) {
        memcpy(p, ht->tail + ht->tail_off, first);
        memcpy(p + first, ht->tail, ht->tail_len - first);
    }
    free(ht->tail);
    ht->tail = p;
    ht->tail_alloc = sz;
    ht->tail_off = 0;
    return 0;
}

/* Drops everything held in the tail into the omitted count. */
static void headtail_tail_drop_all(headtail_t *ht)
{
    ht->omitted += ht->tail_len;
    ht->tail_len = 0;
    ht->tail_off = 0;
}

static int headtail_tail_push(headtail_t *ht, const unsigned char *p, size_t n)
{
    size_t tb = ht->tail_budget;
    if (n == 0)
        return 0;
    if (tb == 0) {
        ht->omitted += n;
        return 0;
    }
    if (n >= tb) {
        /* The chunk alone fills the tail: keep its last tb bytes. */
        headtail_tail_drop_all(ht);
        if (headtail_tail_reserve(ht, tb) < 0) {
            ht->omitted += n;
            return -ENOMEM;
        }
        ht->omitted += n - tb;
        memcpy(ht->tail, p + (n - tb), tb);
        ht->tail_len = tb;
        return 0;
    }
    if (ht->tail_len + n > tb) {
        /* Make room by dropping the oldest bytes.  The ring holds at least
         * `excess` bytes, so tail_alloc > 0; it may still be below tb, so
         * positions wrap by tail_alloc, not by the budget. */
        size_t excess = ht->tail_len + n - tb;
        ht->tail_off = (ht->tail_off + excess) % ht->tail_alloc;
        ht->tail_len -= excess;
        ht->omitted += excess;
    }
    if (headtail_tail_reserve(ht, ht->tail_len + n) < 0) {
        headtail_tail_drop_all(ht);
        ht->omitted += n;
        return -ENOMEM;
    }
    size_t at = (ht->tail_off + ht->tail_len) % ht->tail_alloc;
    size_t first = ht->tail_alloc - at;
    if (first > n)
        first = n;
    memcpy(ht->tail + at, p, first);
    memcpy(ht->tail, p + first, n - first);
    ht->tail_len += n;
    return 0;
}

int headtail_push(headtail_t *ht, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (n == 0)
        return 0;
    ht->total += n;
    if (ht->cap == 0) {
        ht->omitted += n;
        return 0;
    }
    size_t room = ht->head_budget - ht->head_len;
    size_t h = room < n ? room : n;
    if (h) {
        if (headtail_head_reserve(ht, ht->head_len + h) < 0) {
            /* Close the head where it is (the tail is still empty, as the
             * head was not full): later bytes go to the tail, so the omitted
             * run stays contiguous right after the head. */
            ht->head_budget = ht->head_len;
            ht->omitted += n;
            return -ENOMEM;
        }
        memcpy(ht->head + ht->head_len, p, h);
        ht->head_len += h;
    }
    return headtail_tail_push(ht, p + h, n - h);
}

size_t headtail_retained(const headtail_t *ht)
{
    return ht->head_len + ht->tail_len;
}

uint64_t headtail_omitted(const headtail_t *ht)
{
    return ht->omitted;
}

uint64_t headtail_total(const headtail_t *ht)
{
    return ht->total;
}

uint64_t headtail_start(const headtail_t *ht)
{
    return ht->start;
}

/* Appends head, the marker when marker is set and something was omitted,
 * then tail. */
static int headtail_render_as(const headtail_t *ht, buf_t *out, bool marker)
{
    size_t old = out->len;
    int rc = buf_reserve(out, headtail_retained(ht));
    if (rc < 0)
        return rc;
    if (ht->head_len && (rc = buf_append(out, ht->head, ht->head_len)) < 0)
        goto fail;
    if (marker && ht->omitted) {
        uint64_t a = ht->start + ht->head_len;
        rc = buf_printf(out,
                        "\n[... %" PRIu64 " bytes omitted (bytes %" PRIu64
                        "-%" PRIu64 ") ...]\n",
                        ht->omitted, a, a + ht->omitted);
        if (rc < 0)
            goto fail;
    }
    if (ht->tail_len) {
        size_t first = ht->tail_alloc - ht->tail_off;
        if (first > ht->tail_len)
            first = ht->tail_len;
        if ((rc = buf_append(out, ht->tail + ht->tail_off, first)) < 0)
            goto fail;
        if ((rc = buf_append(out, ht->tail, ht->tail_len - first)) < 0)
            goto fail;
    }
    return 0;
fail:
    out->len = old;
    if (out->p)
        out->p[old] = 0;
    return rc;
}

int headtail_render(const headtail_t *ht, buf_t *out)
{
    return headtail_render_as(ht, out, true);
}

int headtail_render_raw(const headtail_t *ht, buf_t *out, size_t *head_len)
{
    if (head_len)
        *head_len = ht->head_len;
    return headtail_render_as(ht, out, false);
}

void headtail_clear(headtail_t *ht)
{
    ht->start = ht->total;
    ht->omitted = 0;
    ht->head_len = 0;
    ht->tail_len = 0;
    ht->tail_off = 0;
    ht->head_budget = ht->cap / 2;
    if (ht->head_alloc > HEADTAIL_KEEP_AFTER_DRAIN) {
        free(ht->head);
        ht->head = NULL;
        ht->head_alloc = 0;
    }
    if (ht->tail_alloc > HEADTAIL_KEEP_AFTER_DRAIN) {
        free(ht->tail);
        ht->tail = NULL;
        ht->tail_alloc = 0;
    }
}

int headtail_drain(headtail_t *ht, buf_t *out)
{
    int rc = headtail_render(ht, out);
    if (rc < 0)
        return rc;
    headtail_clear(ht);
    return 0;
}
