/*
 * events.h — the structured event log: one JSON object a line.
 *
 * Every decision the supervisor takes about a run (spawn, output
 * heartbeat, cancel, exit, cleanup, reconcile, lease steal) is appended to
 * `<state dir>/events.jsonl` (0600), so an incident can be replayed after the
 * fact and by other tools.  Several rein processes share the file: it is
 * opened O_APPEND and each event is exactly one write() of one whole line,
 * which the kernel places at the end of the file without interleaving
 * (regular files take the inode lock per write).
 *
 * Each line has "ts" (wall-clock ms), "type", "run" (0 when about no one
 * run) and "owner", then the type's own fields.
 *
 * The file is bounded: once it holds EVENTS_MAX_BYTES, the next writer
 * renames it to events.jsonl.1 (replacing the one before) and starts a new
 * one, so the events of a state dir take at most twice that.  Every writer
 * follows: before each write it checks that its file is still the one at
 * the path and not full, under an flock on that file, so of several
 * writers exactly one renames it and none writes on into a renamed one
 * (past the line that was on its way).
 */
#ifndef REIN_SUPERVISE_EVENTS_H
#define REIN_SUPERVISE_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "rein.h"

#define EVENTS_FILE "events.jsonl"
#define EVENTS_FILE_MODE 0600
/* The previous file, once the current one filled up. */
#define EVENTS_OLD_SUFFIX ".1"
/* The size at which the file is rotated (rein.h): with the one before
 * it, the events take at most twice this, a few hundred thousand events
 * (an output heartbeat is about 150 bytes). */
#define EVENTS_MAX_BYTES REIN_SUP_EVENTS_MAX_BYTES
/* Output heartbeats of one run are at least this far apart. */
#define EVENTS_HEARTBEAT_MS 1000
/* The longest event line; a larger one is refused (-E2BIG), never split. */
#define EVENTS_MAX_LINE (64u * 1024u)

typedef enum events_type {
    EVENTS_SPAWN,
    EVENTS_OUTPUT,
    EVENTS_CANCEL,
    EVENTS_EXIT,
    EVENTS_CLEANUP,
    EVENTS_RECONCILE,
    EVENTS_LEASE_STEAL,
    EVENTS_DESCENDANT,     /* a new descendant of a run was remembered */
    EVENTS_ESCAPE,         /* a descendant left the run's boundary */
    EVENTS_REGISTRY_ERROR, /* a registry write failed (run goes on) */
    EVENTS_STRAY,          /* an adopted orphan no run could claim */
    EVENTS_TYPE_COUNT
} events_type_t;

typedef struct events events_t;

/* A run's heartbeat state; zero-initialise it (EVENTS_HEARTBEAT_INIT). */
typedef struct events_heartbeat {
    bool emitted;      /* one heartbeat has gone out */
    int64_t last_ms;   /* when (the caller's clock) */
    uint64_t last_bytes;
} events_heartbeat_t;

#define EVENTS_HEARTBEAT_INIT {false, 0, 0}

/* "spawn" "output" "cancel" "exit" "cleanup" "reconcile" "lease_steal"
 * "descendant" "ownership_escape" "registry_error" "stray". */
const char *events_type_name(events_type_t type);

/* Opens (creating 0600) dir/events.jsonl for appending, as owner_id. */
int events_open(const char *dir, const char *owner_id, events_t **out);
/* NULL is a no-op. */
void events_close(events_t *ev);

/*
 * Appends one event.  extra (may be NULL) is an object whose fields are
 * added to the line (never over ts, type, run, owner); it is stolen (decref'd) whatever the outcome.  0,
 * -EINVAL (extra not an object, unknown type), -E2BIG, -ENOMEM or the
 * write error (-ENOSPC ...).
 */
int events_emit(events_t *ev, events_type_t type, int64_t run_id,
                json_t *extra);

/*
 * An output heartbeat for run_id, at most one per EVENTS_HEARTBEAT_MS of
 * now_ms (a monotonic clock of the caller's), with the run's total output
 * bytes and how many arrived since the last heartbeat.  Returns 1 when
 * emitted, 0 when rate-limited, or a negative error.
 */
int events_output(events_t *ev, events_heartbeat_t *hb, int64_t run_id,
                  uint64_t bytes, int64_t now_ms);

#endif
