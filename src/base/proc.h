/*
 * proc.h — the internal side of rein_proc_* (rein.h, "process").
 *
 * A handle names a process by pid plus start time, and by a pidfd where the
 * kernel gives one.  REIN_PIDFD=0 in the environment makes new handles do
 * without a pidfd, exactly as under valgrind or on a kernel without
 * pidfd_open, so that path can be exercised anywhere (the loop honours the
 * same variable).
 */
#ifndef REIN_BASE_PROC_H
#define REIN_BASE_PROC_H

#include <stdbool.h>

#include "rein.h"

/* True when p holds a pidfd; false on the /proc-polling fallback. */
bool proc_has_pidfd(const rein_proc_t *p);

#endif
