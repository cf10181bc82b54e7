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

#endif
