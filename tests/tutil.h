/*
 * tutil.h — small helpers shared by the process tests: run a child
 * through spawn and collect its output, read a pipe to EOF.
 */
#ifndef REIN_TEST_TUTIL_H
#define REIN_TEST_TUTIL_H

#include <sys/types.h>

#include "base/buf.h"
#include "base/spawn.h"

/* Spawns argv with stdout+stderr on a pipe, reads to EOF, reaps.  Returns
 * the exit code (>= 0) or a negative error; output in *out. */
int tu_run(spawn_opts_t *o, buf_t *out);
/* Reads fd to EOF into out. */
int tu_read_all(int fd, buf_t *out);

#endif
