/*
 * tutil.h — small helpers shared by the process tests: run a child
 * through spawn and collect its output, read a pipe to EOF; and for the
 * protocol tests, read one line from a non-blocking fd while a loop runs.
 */
#ifndef REIN_TEST_TUTIL_H
#define REIN_TEST_TUTIL_H

#include <sys/types.h>

#include <stdint.h>

#include "base/buf.h"
#include "base/loop.h"
#include "base/spawn.h"

/* Spawns argv with stdout+stderr on a pipe, reads to EOF, reaps.  Returns
 * the exit code (>= 0) or a negative error; output in *out. */
int tu_run(spawn_opts_t *o, buf_t *out);
/* Reads fd to EOF into out. */
int tu_read_all(int fd, buf_t *out);

/* Runs l until a whole line can be taken from the non-blocking fd (bytes
 * after it stay in acc for the next call) or timeout_ms pass.  Returns the
 * line without its '\n' (malloc'd) or NULL on timeout or EOF. */
char *tu_loop_read_line(loop_t *l, int fd, buf_t *acc, uint64_t timeout_ms);

#endif
