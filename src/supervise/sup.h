/*
 * sup.h — the supervisor's internal side, for front ends in this tree.
 *
 * The MCP server and the CLI run their own fds and timers on the loop the
 * supervisor already drives, so one epoll wait serves everything.
 */
#ifndef REIN_SUPERVISE_SUP_H
#define REIN_SUPERVISE_SUP_H

#include <stdbool.h>
#include <sys/stat.h>

#include "base/loop.h"
#include "rein.h"

/* The loop behind s (owned by s). */
loop_t *sup_loop(rein_sup_t *s);
/* fstat of what run id's processes read as input: the PTY slave, or the
 * stdin pipe.  0, REIN_ENORUN, or -EPIPE when stdin is closed (or the
 * terminal already released). */
int sup_run_input(rein_sup_t *s, int64_t id, struct stat *st);
/* Reads (and hands to on_output) what the run's output fd holds now. */
void sup_run_drain(rein_sup_t *s, int64_t id);
/* Writes the run's buffered log bytes to the file.  0 or a negative code. */
int sup_run_flush_log(rein_sup_t *s, int64_t id);
/* True when ending run id needed SIGKILL after the grace. */
bool sup_run_escalated(rein_sup_t *s, int64_t id);
/* Drops run id's callbacks (its owner is freed first); the run goes on
 * until it ends or rein_sup_close ends it. */
void sup_run_detach(rein_sup_t *s, int64_t id);
/* The directory holding <id>.log files; NULL for an ephemeral supervisor. */
const char *sup_logs_dir(const rein_sup_t *s);

#endif
