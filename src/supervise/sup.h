/*
 * sup.h — the supervisor's internal side, for front ends in this tree.
 *
 * The MCP server and the CLI run their own fds and timers on the loop the
 * supervisor already drives, so one epoll wait serves everything.  The CLI
 * proxy also sets its PTY's modes before the child starts and paces the
 * stdin it forwards by what the run has not taken yet.
 */
#ifndef REIN_SUPERVISE_SUP_H
#define REIN_SUPERVISE_SUP_H

#include <stddef.h>
#include <termios.h>

#include "base/loop.h"
#include "rein.h"

/* The loop behind s (owned by s). */
loop_t *sup_loop(rein_sup_t *s);
/* The run's PTY master (tty runs) or -1; valid until the run is exited. */
int sup_run_fd(rein_sup_t *s, int64_t id);
/* Stdin bytes accepted by rein_sup_write but not yet taken by the run (its
 * terminal or pipe is full); 0 for an unknown run.  A front end forwarding
 * a stream stops reading its source past a bound, so a child that does not
 * read cannot make rein hold unbounded input. */
size_t sup_run_pending(rein_sup_t *s, int64_t id);

/* Adjusts a tty run's terminal modes: *t holds the modes the new PTY has. */
typedef void (*sup_tio_fn)(struct termios *t, void *data);
/* rein_sup_spawn, with fn (may be NULL) called on the PTY's modes before
 * the child starts, so its first read or write already sees them (the CLI
 * proxy copies the person's terminal, or turns echo off for piped input).
 * Ignored for pipe runs. */
int sup_spawn_tio(rein_sup_t *s, const rein_run_opts_t *o, sup_tio_fn fn,
                  void *data, int64_t *id);

#endif
