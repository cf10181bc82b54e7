/*
 * narrate.h — say what a file command changed (the router's narrate
 * category).
 *
 * `cp a b` prints nothing when it works, so condensing its output tells the
 * reader nothing.  Instead the arguments are read the way the command reads
 * them (options, operands, a target directory), each path is stat()ed
 * before the command runs and again after, and the difference becomes
 * `[rein] narrate …` markers (docs/markers.md) naming sources, destinations
 * and sizes.  Nothing is guessed: a marker only reports what stat() saw.
 * This file judges what changed; emit.c (emit_narrate) words the marker,
 * as it words every other one.
 *
 * Handled: cp, mv, rm, rmdir, mkdir, touch, chmod, chown, chgrp, ln,
 * truncate.  Anything else gives no markers.
 */
#ifndef REIN_SQUASH_NARRATE_H
#define REIN_SQUASH_NARRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Operands narrated per command; beyond, one marker counts the rest. */
#define NARRATE_MAX_OPERANDS 64
/* Entries a directory-size walk visits before it stops (the size is then
 * reported as "at least"). */
#define NARRATE_WALK_MAX 100000

typedef struct narrate narrate_t;

/* Reads one command's words (argv[0] is the command, wrappers already
 * skipped) and records the state of every path it names.  A command that
 * is not a narrated one gives an empty plan (0, markers none).
 * 0 or -ENOMEM. */
int narrate_begin(const char *const *argv, size_t argc, narrate_t **out);
/* Stats the paths again and appends one marker line per change (each
 * ending in '\n') to out.  0 or -ENOMEM. */
int narrate_end(narrate_t *n, buf_t *out);
void narrate_free(narrate_t *n);

/* The total size of path: a file's size, or for a directory the sum of
 * the regular files under it (symlinks not followed), visiting at most
 * max_entries entries (*partial set when stopped early).  0 or -errno. */
int narrate_tree_size(const char *path, size_t max_entries, uint64_t *bytes,
                      uint64_t *files, bool *partial);

#endif
