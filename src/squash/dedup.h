/*
 * dedup.h — templates and groups: lines that differ only in their
 * variable parts (numbers, versions, hashes, UUIDs, timestamps, URLs,
 * paths) share a template, and a group counts them.
 *
 * A template keeps a line's words and replaces each variable token with
 * `{}`, so `npm warn deprecated inflight@1.0.6: ...` and `... glob@7.2.3:
 * ...` are one group.  A group counts every member; it keeps the runs of
 * consecutive line numbers that a marker lists (the first
 * DEDUP_RUNS_MAX, the members past them only counted) and, for hazards,
 * each distinct location (`file:line[:col]`) up to DEDUP_LOCATIONS_MAX,
 * counting the members at the others.  So a group costs bounded memory
 * and a bounded marker however many members it has: a million copies of
 * one line are one group of a few hundred bytes.
 */
#ifndef REIN_SQUASH_DEDUP_H
#define REIN_SQUASH_DEDUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* A template is built from at most this many bytes of a line (the rest
 * only feeds the hash), so a huge line costs a bounded template. */
#define DEDUP_TEMPLATE_MAX 512
/* A token of at least this many base64/hex characters is high-entropy. */
#define DEDUP_ENTROPY_TOKEN 32
/* Groups tracked at once.  When all are taken, a new template takes the
 * place of a group whose every member its caller shows (no more members
 * than the `show` it was added with: no repeat marker needs it), picked
 * at random among them, so that neither a run of new lines nor a cycle of
 * more templates than fit evicts the groups that are about to fold; the
 * caller hears of it (dedup_on_recycle) and forgets the group.  A later
 * copy of that group's line starts a new group.  Only when every group
 * has members past its `show` is a new template left ungrouped (each of
 * its lines its own group).  So memory stays bounded however many
 * templates an output has, and copies of a line first seen past the cap
 * still fold. */
#define DEDUP_GROUPS_MAX 65536
/* Runs of consecutive member line numbers a group keeps ("1-4, 7, 9" is
 * three): the ones a repeat marker lists (EMIT_RANGES_MAX); members past
 * them are counted ("+N more").  Bounded so that a group of a million
 * scattered members costs no million line numbers. */
#define DEDUP_RUNS_MAX 6
/* Distinct locations a group keeps for its `at` marker, in order of first
 * sight; members at further locations are counted (docs/markers.md).  A
 * marker is one line for a reader: 64 locations of a typical `path:l:c`
 * make about 2 KB of it, well under SQ_LINE_MAX. */
#define DEDUP_LOCATIONS_MAX 64

/* Members with consecutive line numbers first..last. */
typedef struct dedup_run {
    uint64_t first, last;
} dedup_run_t;

/* The length of the time stamp that opens a log line, with the blanks
 * after it, or 0: what tells copies of one message apart and nothing
 * else.  `2026-11-22T10:00:01.001Z ` (a space or `T`, a fraction after `.`
 * or `,`, `Z` or an offset), `2026-11-22 10:00:01,123 `, syslog's `Nov 22
 * 10:00:01 `, a time alone (`10:00:01.5 `), any of them in brackets
 * (`[2026-11-22 10:00:01] `), and glog's and klog's `E1124
 * 07:51:39.309454   21704 ` (its level letter, date, time and thread). */
size_t dedup_stamp_len(const char *s, size_t n);
/* The length of glog's and klog's prefix opening a line, with the blanks
 * after it, or 0: its level letter (I, W, E, F), the date as mmdd or
 * yyyymmdd, the time with its microseconds, and the thread id, as in
 * `E1124 07:51:39.309454   21704 memcache.go:265] msg` (the classifier
 * reads the level from it, dedup_stamp_len skips it). */
size_t dedup_glog_len(const char *s, size_t n);

/* Writes line's template to out (replacing its contents) and returns the
 * template's 64-bit hash (FNV-1a over the whole templated line).  out may
 * be NULL when only the hash is wanted. */
uint64_t dedup_template(const char *line, size_t len, buf_t *out);
/* The same, also telling whether the line is high-entropy (as
 * dedup_high_entropy) from the same pass. */
uint64_t dedup_template_ex(const char *line, size_t len, buf_t *out,
                           bool *entropy);
/* True when line holds a long base64/hex-like token: such output (keys,
 * blobs, digests) bypasses near-duplicate merging. */
bool dedup_high_entropy(const char *line, size_t len);

typedef struct dedup dedup_t;

/* Told that group is about to be recycled (DEDUP_GROUPS_MAX): its index
 * will name a new group.  The group is still readable during the call
 * (dedup_runs lists every member: it has at most its `show`). */
typedef void (*dedup_recycle_fn)(uint32_t group, void *data);

int dedup_new(dedup_t **out);
void dedup_free(dedup_t *d);
/* Sets the recycle callback (none by default). */
void dedup_on_recycle(dedup_t *d, dedup_recycle_fn fn, void *data);
/* Adds a line with template hash h to its group (made on first sight).
 * loc, when not NULL, is the hazard's location text (copied unless the
 * group has it already, or has DEDUP_LOCATIONS_MAX others).  Line numbers
 * are expected in ascending order (a run grows by lineno == last + 1).
 * show: how many members of a new group the caller shows, every one of
 * them while the count is at most that (0: not known; the group is never
 * recycled); at most DEDUP_RUNS_MAX, so that its runs list them all.  Sets
 * *group to the group index and returns the group's count after adding,
 * or -ENOMEM.  When DEDUP_GROUPS_MAX groups exist, a new template recycles
 * one (see there), or, when none can be, gets *group = UINT32_MAX and
 * count 1.  O(1) but for the location check, which compares with at most
 * DEDUP_LOCATIONS_MAX hashes. */
int dedup_add(dedup_t *d, uint64_t h, const char *tmpl, size_t tmpl_len,
              uint64_t lineno, const char *loc, size_t loc_len,
              uint32_t show, uint32_t *group);
/* Groups made so far (indices 0 .. count-1). */
size_t dedup_group_count(const dedup_t *d);
uint32_t dedup_count(const dedup_t *d, uint32_t group);
const char *dedup_template_text(const dedup_t *d, uint32_t group);
/* The first DEDUP_RUNS_MAX runs of member line numbers of a group, in
 * the order added; *more is set to the members not in them. */
const dedup_run_t *dedup_runs(const dedup_t *d, uint32_t group, size_t *n,
                              uint64_t *more);
/* The distinct locations kept for a group, as "a, b, c" into out
 * (appended), from the skip-th on. */
int dedup_locations(const dedup_t *d, uint32_t group, size_t skip,
                    buf_t *out);
/* Distinct locations kept (at most DEDUP_LOCATIONS_MAX). */
size_t dedup_location_count(const dedup_t *d, uint32_t group);
/* Members whose location was not kept: at one of the locations past
 * DEDUP_LOCATIONS_MAX. */
uint64_t dedup_locations_more(const dedup_t *d, uint32_t group);
/* Whether a group's locations are not all the same one (an `at` marker
 * would add nothing to a line that names its one location). */
bool dedup_locations_vary(const dedup_t *d, uint32_t group);

#endif
