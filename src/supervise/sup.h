/*
 * sup.h — the supervisor's internal side, for front ends in this tree.
 *
 * The MCP server and the CLI run their own fds and timers on the loop the
 * supervisor already drives, so one epoll wait serves everything.
 */
#ifndef REIN_SUPERVISE_SUP_H
#define REIN_SUPERVISE_SUP_H

#include "base/loop.h"
#include "rein.h"

/* The loop behind s (owned by s). */
loop_t *sup_loop(rein_sup_t *s);
/* The run's PTY master (tty runs) or -1; valid until the run is exited. */
int sup_run_fd(rein_sup_t *s, int64_t id);

#endif
