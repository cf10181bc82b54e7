/*
 * runstate.h — the one lifecycle of a run, as a state × event table.
 *
 *   starting --spawned--> running --cancel/exit--> exiting --cleaned--> exited
 *
 * PTY and pipe runs share it.  A run is `running` only after the spawn and
 * the registry commit both succeeded.  Every (state, event) pair has an
 * entry: the ones that make no sense are explicit no-ops, which is what
 * makes repeated cancels and finalizes harmless, and tests enumerate the
 * whole table.  The reason a run ends is recorded once: the first wins.
 */
#ifndef REIN_SUPERVISE_RUNSTATE_H
#define REIN_SUPERVISE_RUNSTATE_H

#include "rein.h"

typedef enum run_event {
    RUN_EV_SPAWNED = 0,   /* spawn and registry commit succeeded */
    RUN_EV_SPAWN_FAILED,  /* spawn (or its registry commit) failed */
    RUN_EV_CANCEL,        /* manual cancel, a timeout, an ownership escape */
    RUN_EV_CHILD_EXIT,    /* the run's leader exited */
    RUN_EV_CLEANED,       /* the boundary is empty (or cleanup gave up) */
    RUN_EV_COUNT
} run_event_t;

typedef enum run_action {
    RUN_ACT_NONE = 0,   /* nothing to do: a repeat or an impossible pair */
    RUN_ACT_START,      /* arm timers, watch output */
    RUN_ACT_FINALIZE,   /* record the end, emit the exit event once */
    RUN_ACT_TERMINATE,  /* TERM + CONT the boundary, grace, KILL */
    RUN_ACT_CLEANUP,    /* leader gone: end what is left of the boundary */
} run_action_t;

/* Applies ev to *state; returns the action to take.  Never fails: every
 * pair is in the table. */
run_action_t runstate_step(rein_run_state_t *state, run_event_t ev);
/* Records reason unless one is already set.  True when it was recorded. */
bool runstate_set_reason(rein_reason_t *cur, rein_reason_t reason);
const char *run_event_name(run_event_t ev);
const char *run_action_name(run_action_t a);

#endif
