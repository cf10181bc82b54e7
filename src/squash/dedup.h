/*
 * dedup.h — templates and groups: lines that differ only in their
 * variable parts (numbers, versions, hashes, UUIDs, timestamps, URLs,
 * paths) share a template, and a group counts them.
 *
 * A template keeps a line's words and replaces each variable token with
 * `{}`, so `npm warn deprecated inflight@1.0.6: ...` and `... glob@7.2.3:
 * ...` are one group.  Groups remember every member's line number and, for
 * hazards, every location (`file:line[:col]`): dedup never merges a
 * hazard's location away, the `at` marker lists them all.
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
/* Groups tracked; past this, new templates are not grouped (each line is
 * its own group). */
#define DEDUP_GROUPS_MAX 65536

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

int dedup_new(dedup_t **out);
void dedup_free(dedup_t *d);
/* Adds a line with template hash h to its group (made on first sight).
 * loc, when not NULL, is the hazard's location text (copied).  Sets *group
 * to the group index and returns the group's count after adding, or
 * -ENOMEM.  When DEDUP_GROUPS_MAX groups exist, a new template gets
 * *group = UINT32_MAX and count 1. */
int dedup_add(dedup_t *d, uint64_t h, const char *tmpl, size_t tmpl_len,
              uint64_t lineno, const char *loc, size_t loc_len,
              uint32_t *group);
/* Groups made so far (indices 0 .. count-1). */
size_t dedup_group_count(const dedup_t *d);
uint32_t dedup_count(const dedup_t *d, uint32_t group);
const char *dedup_template_text(const dedup_t *d, uint32_t group);
/* Member line numbers (ascending) of a group. */
const uint64_t *dedup_lines(const dedup_t *d, uint32_t group, size_t *n);
/* Locations recorded for a group, as "a, b, c" into out (appended). */
int dedup_locations(const dedup_t *d, uint32_t group, size_t skip,
                    buf_t *out);
size_t dedup_location_count(const dedup_t *d, uint32_t group);
/* Whether a group's locations are not all the same one (an `at` marker
 * would add nothing to a line that names its one location). */
bool dedup_locations_vary(const dedup_t *d, uint32_t group);

#endif
