/*
 * runstate.c — the lifecycle table (see runstate.h).
 *
 * Written as data, after s6-supervise: reading the table is reading the
 * lifecycle, and a new event is one column, not a hunt through callbacks.
 */
#include "supervise/runstate.h"

struct transition {
    rein_run_state_t next;
    run_action_t action;
};

#define T(st, act) {REIN_RUN_##st, RUN_ACT_##act}

/* [state][event]: SPAWNED, SPAWN_FAILED, CANCEL, CHILD_EXIT, CLEANED */
static const struct transition table[4][RUN_EV_COUNT] = {
    [REIN_RUN_STARTING] = {T(RUNNING, START), T(EXITED, FINALIZE),
                           T(STARTING, NONE), T(STARTING, NONE),
                           T(STARTING, NONE)},
    [REIN_RUN_RUNNING] = {T(RUNNING, NONE), T(RUNNING, NONE),
                          T(EXITING, TERMINATE), T(EXITING, CLEANUP),
                          T(RUNNING, NONE)},
    [REIN_RUN_EXITING] = {T(EXITING, NONE), T(EXITING, NONE),
                          T(EXITING, NONE), T(EXITING, NONE),
                          T(EXITED, FINALIZE)},
    [REIN_RUN_EXITED] = {T(EXITED, NONE), T(EXITED, NONE), T(EXITED, NONE),
                         T(EXITED, NONE), T(EXITED, NONE)},
};

#undef T

run_action_t runstate_step(rein_run_state_t *state, run_event_t ev)
{
    if ((unsigned)*state > REIN_RUN_EXITED || (unsigned)ev >= RUN_EV_COUNT)
        return RUN_ACT_NONE;
    const struct transition *t = &table[*state][ev];
    *state = t->next;
    return t->action;
}

bool runstate_set_reason(rein_reason_t *cur, rein_reason_t reason)
{
    if (*cur != REIN_REASON_NONE || reason == REIN_REASON_NONE)
        return false;
    *cur = reason;
    return true;
}

const char *run_event_name(run_event_t ev)
{
    static const char *const names[RUN_EV_COUNT] = {
        "spawned", "spawn-failed", "cancel", "child-exit", "cleaned"};
    return (unsigned)ev < RUN_EV_COUNT ? names[ev] : "unknown";
}

const char *run_action_name(run_action_t a)
{
    switch (a) {
    case RUN_ACT_NONE: return "none";
    case RUN_ACT_START: return "start";
    case RUN_ACT_FINALIZE: return "finalize";
    case RUN_ACT_TERMINATE: return "terminate";
    case RUN_ACT_CLEANUP: return "cleanup";
    }
    return "unknown";
}

const char *rein_reason_name(rein_reason_t r)
{
    switch (r) {
#define X(name, value, text) case REIN_REASON_##name: return text;
        REIN_REASON_MAP(X)
#undef X
    }
    return "unknown";
}

const char *rein_run_state_name(rein_run_state_t s)
{
    switch (s) {
    case REIN_RUN_STARTING: return "starting";
    case REIN_RUN_RUNNING: return "running";
    case REIN_RUN_EXITING: return "exiting";
    case REIN_RUN_EXITED: return "exited";
    }
    return "unknown";
}
