/*
 * registry.h — the durable run registry: SQLite in the state directory.
 *
 * Every run rein starts is recorded here before it counts as running, with
 * enough identity to find it again after a crash: boot id, pid, pid start
 * time, process group, session, cgroup, containment level, owner.  Output
 * never goes into SQLite: each run spools to its own log file and the
 * registry keeps the path and byte count.  Environment values are never
 * stored, only names.
 *
 * One file, `registry.db`, in WAL mode with synchronous=NORMAL, STRICT
 * tables, migrations by user_version, BEGIN IMMEDIATE for every write and a
 * busy timeout, so several rein processes (owners) share it safely.  Run ids
 * are one id space (>= REGISTRY_FIRST_RUN_ID, never reused): the session id
 * later tools show.
 *
 * Times are wall-clock milliseconds since the epoch (they are shown to
 * people and compared across processes); boot id + pid start time, not
 * wall time, decide identity.
 */
#ifndef REIN_SUPERVISE_REGISTRY_H
#define REIN_SUPERVISE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/procfs.h"
#include "base/ptree.h"

#define REGISTRY_FILE "registry.db"
#define REGISTRY_FIRST_RUN_ID 1000
#define REGISTRY_BUSY_TIMEOUT_MS 5000
/* An owner id: 32 hex digits (random) and a NUL. */
#define REGISTRY_OWNER_ID_LEN 33

typedef struct registry registry_t;

/* Mirrors rein.h's rein_run_state_t. */
enum run_state { RUN_STARTING = 0, RUN_RUNNING, RUN_EXITING, RUN_EXITED };

typedef struct owner_record {
    char id[REGISTRY_OWNER_ID_LEN];
    pid_t pid;
    uint64_t start_time;
    char boot_id[PROCFS_BOOT_ID_LEN];
    char *lock_path;          /* the owner's flock'ed file */
    int64_t started_ms;
    int64_t lease_expires_ms; /* renewed by heartbeats */
} owner_record_t;

typedef struct run_record {
    int64_t id;                      /* assigned by registry_run_insert */
    char owner[REGISTRY_OWNER_ID_LEN];
    char boot_id[PROCFS_BOOT_ID_LEN];
    pid_t pid;                       /* 0 until spawned */
    uint64_t start_time;             /* /proc/<pid>/stat field 22 */
    pid_t pgid, sid;
    char *cgroup;                    /* v2 path, or NULL */
    char containment[16];            /* "cgroup" "subreaper" "pgid" */
    bool tty;
    int state;                       /* enum run_state */
    int reason;                      /* rein_reason_t (rein.h); 0 none */
    int exit_code;                   /* -1: none */
    int signal;                      /* 0: none */
    bool cleanup_incomplete;
    char *survivors;                 /* "pid:start,..." or NULL */
    int64_t created_ms, started_ms, ended_ms, last_output_ms, updated_ms;
    uint64_t bytes;                  /* output bytes logged */
    char *command, *cwd, *log_path;
    char *env_names;                 /* "A,B,C" — names only, never values */
} run_record_t;

/* Opens (creating dir 0700 and file 0600, migrating) the registry in dir. */
int registry_open(const char *dir, registry_t **out);
void registry_close(registry_t *reg);

int registry_owner_add(registry_t *reg, const owner_record_t *o);
int registry_owner_renew(registry_t *reg, const char *owner_id,
                         int64_t lease_expires_ms);
int registry_owner_get(registry_t *reg, const char *owner_id,
                       owner_record_t *out);
/* Every owner with a run that is not exited. */
int registry_owner_list(registry_t *reg, owner_record_t **out, size_t *n);
void owner_record_clear(owner_record_t *o);

/* Inserts r (state, fields as given) and sets r->id. */
int registry_run_insert(registry_t *reg, run_record_t *r);
/* Writes every field of r (by r->id). */
int registry_run_update(registry_t *reg, const run_record_t *r);
/* -ENOENT for an unknown id. */
int registry_run_get(registry_t *reg, int64_t id, run_record_t *out);
/* Runs ordered by id; all=false: only those not exited. */
int registry_run_list(registry_t *reg, bool all, run_record_t **out,
                      size_t *n);
void run_record_clear(run_record_t *r);
void run_record_list_free(run_record_t *v, size_t n);

/* Remembers a descendant of a run (idempotent). */
int registry_descendant_add(registry_t *reg, int64_t run_id, pid_t pid,
                            uint64_t start_time);
int registry_descendants(registry_t *reg, int64_t run_id, ptree_t *out);

/*
 * Moves every non-exited run of owner `from` to owner `to`, atomically and
 * only if `from` still owns them, and records the steal (counter
 * run_lease_steal_total).  *n: how many runs moved.
 */
int registry_steal(registry_t *reg, const char *from, const char *to,
                   size_t *n);

/* Prometheus-style counters, e.g. "run_exit_total{reason=\"exit\"}". */
int registry_counter_add(registry_t *reg, const char *name, int64_t delta);
/* Counters as Prometheus text exposition (with # TYPE lines). */
int registry_metrics_text(registry_t *reg, char **out);

#endif
