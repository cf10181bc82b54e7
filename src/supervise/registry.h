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
 *
 * Errors: every call returns 0 or a negative code, SQLite's result mapped to
 * the nearest errno (busy -EBUSY, full -ENOSPC, read-only -EROFS, I/O -EIO,
 * corrupt -EUCLEAN, ...) and SQLite's own words kept for people in
 * registry_errmsg().  A registry that can no longer be written (disk full,
 * read-only remount, permissions, I/O error) fails each write cleanly with
 * one of the codes registry_err_unwritable() recognises; nothing half-done
 * is left behind, so the supervisor refuses new runs and lets running ones
 * go on, retrying their updates later.
 */
#ifndef REIN_SUPERVISE_REGISTRY_H
#define REIN_SUPERVISE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/procfs.h"
#include "base/ptree.h"
#include "rein.h"

#define REGISTRY_FILE "registry.db"
#define REGISTRY_FIRST_RUN_ID 1000
#define REGISTRY_BUSY_TIMEOUT_MS 5000
/* The schema this code reads and writes (PRAGMA user_version).  2 added
 * the strays table; a version 1 file is migrated when opened read-write,
 * and a file newer than this is refused. */
#define REGISTRY_SCHEMA_VERSION 5
/* The state directory under $XDG_STATE_HOME or ~/.local/state. */
#define REGISTRY_STATE_SUBDIR "rein"
/* Room for registry_errmsg(): SQLite's message plus the path. */
#define REGISTRY_ERRMSG_LEN 512
/* An owner id: 32 hex digits (random) and a NUL. */
#define REGISTRY_OWNER_ID_LEN 33

typedef struct registry registry_t;

/* Mirrors rein.h's rein_run_state_t. */
enum run_state { RUN_STARTING = 0, RUN_RUNNING, RUN_EXITING, RUN_EXITED };
#define RUN_STATE_COUNT 4

/*
 * Termination reasons: rein.h's REIN_REASON_MAP, stored as its numbers,
 * shown by name (rein ps, the run_exit_total{reason} label).  One table,
 * so a reason added there is stored, shown and counted here as well.  A
 * number this rein does not know (a newer rein's reason) reads as
 * "unknown"; the column has no CHECK, so adding one needs no migration.
 */
enum run_reason {
#define RUN_REASON_ENUM_(name, value, text) RUN_REASON_##name = (value),
    REIN_REASON_MAP(RUN_REASON_ENUM_)
#undef RUN_REASON_ENUM_
};
#define RUN_REASON_ONE_(name, value, text) +1
#define RUN_REASON_COUNT (0 REIN_REASON_MAP(RUN_REASON_ONE_))

/* "starting" "running" "exiting" "exited"; "unknown" out of range. */
const char *registry_state_name(int state);
/* "exit" "signal" "manual-cancel" ...; "" for none, "unknown" out of range. */
const char *registry_reason_name(int reason);

typedef struct owner_record {
    char id[REGISTRY_OWNER_ID_LEN];
    pid_t pid;
    uint64_t start_time;
    char boot_id[PROCFS_BOOT_ID_LEN];
    char *lock_path;          /* the owner's flock'ed file */
    int64_t started_ms;
    int64_t lease_expires_ms; /* renewed by heartbeats */
    uint64_t pid_ns;          /* its pid namespace (procfs_pid_ns), or 0 */
    char *cgroup;             /* its v2 instance cgroup (runs' leaves), or NULL */
    char *pids_cgroup;        /* its v1 pids instance cgroup, or NULL */
} owner_record_t;

typedef struct run_record {
    int64_t id;                      /* assigned by registry_run_insert */
    char owner[REGISTRY_OWNER_ID_LEN];
    char boot_id[PROCFS_BOOT_ID_LEN];
    pid_t pid;                       /* 0 until spawned */
    uint64_t start_time;             /* /proc/<pid>/stat field 22 */
    pid_t pgid, sid;
    char *cgroup;                    /* v2 path, or NULL */
    char *pids_cgroup;               /* v1 pids cgroup path, or NULL */
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
    /* rein_run_info_t.leftovers_ended and leftovers_hung_up, as the run
     * ended (0 before, and for rows older than schema 5). */
    bool background_ended;
    uint32_t background_hung_up;
} run_record_t;

/*
 * The state directory: $REIN_STATE_DIR (made absolute: a relative one is
 * taken from the current directory), else $XDG_STATE_HOME/rein (an absolute
 * XDG_STATE_HOME only, as the XDG spec says), else ~/.local/state/rein;
 * created 0700 with its missing parents.  0, -ENAMETOOLONG when out is too
 * small, -ENOENT when no home is known, or the mkdir error (out then names
 * the directory).
 */
int registry_state_dir(char *out, size_t size);
/*
 * dir as an absolute path: as is, or after the current directory.  A
 * state directory is always named so, because the registry records log
 * and lock paths under it that rein processes in other directories open.
 * 0, -ENAMETOOLONG, or getcwd's error.
 */
int registry_dir_absolute(const char *dir, char *out, size_t size);

/*
 * Opens (creating dir 0700 and file 0600, migrating) the registry in dir.
 * A database on a read-only file system still opens when its schema is
 * current (writes then fail with -EROFS; see registry_readonly).  A schema
 * newer than REGISTRY_SCHEMA_VERSION is refused with -EPROTONOSUPPORT.  On
 * failure *out is NULL.
 */
int registry_open(const char *dir, registry_t **out);
/*
 * The same, for tools: readonly opens an existing database without creating
 * or migrating anything (-ENOENT when there is none), and a failed open
 * leaves its message in errmsg (when given), since there is no handle to
 * ask.
 */
int registry_open_ex(const char *dir, bool readonly, registry_t **out,
                     char *errmsg, size_t errmsg_size);
/* NULL is a no-op.  Finalises the statements and closes the database. */
void registry_close(registry_t *reg);
/* The message of the last failed call: SQLite's words and the path. */
const char *registry_errmsg(const registry_t *reg);
/* True when the database was opened (or fell back to) read-only. */
bool registry_readonly(const registry_t *reg);
/* True for the codes a write gets when the registry cannot be written:
 * -EROFS -EACCES -EPERM -ENOSPC -EDQUOT -EIO. */
bool registry_err_unwritable(int err);
/* PRAGMA integrity_check: 0 when "ok", else -EUCLEAN with the first
 * complaint in registry_errmsg. */
int registry_check(registry_t *reg);
/*
 * Waits (up to the busy timeout) until no write transaction is in progress
 * in any process, by taking the write lock and dropping it.  For a reader
 * woken by inotify on the database files: a commit writes its -wal frames
 * before it publishes them in the -shm, so a read right after the wake-up
 * can miss the very commit that woke it, and no later event would come.
 * A no-op on a read-only handle.
 */
int registry_sync(registry_t *reg);

/*
 * An explicit write transaction (BEGIN IMMEDIATE) around many calls, e.g.
 * reconcile updating every record at once.  Calls inside it do not commit
 * on their own.  If any call inside fails, registry_commit rolls everything
 * back and returns that first error: a batch lands whole or not at all.
 * Not nestable (-EBUSY).
 */
int registry_begin(registry_t *reg);
int registry_commit(registry_t *reg);
/* Rolls back; a no-op returning 0 outside a transaction. */
int registry_rollback(registry_t *reg);

int registry_owner_add(registry_t *reg, const owner_record_t *o);
int registry_owner_renew(registry_t *reg, const char *owner_id,
                         int64_t lease_expires_ms);
int registry_owner_get(registry_t *reg, const char *owner_id,
                       owner_record_t *out);
/* Every owner with a run that is not exited, or with a stray, or whose
 * lease has expired: those reconcile looks at. */
int registry_owner_list(registry_t *reg, owner_record_t **out, size_t *n);
/* Deletes owner_id's record unless a run of it is not exited or it has a
 * stray on record: an owner that closed (or died and was reconciled)
 * leaves no row behind, so the table holds the live owners and the dead
 * ones still to reconcile, not every rein process that ever ran.  1 when
 * deleted, 0 when kept (or unknown), or a negative error. */
int registry_owner_forget(registry_t *reg, const char *owner_id);
void owner_record_clear(owner_record_t *o);

/*
 * Inserts r (state, fields as given) and sets r->id (and r->created_ms when
 * 0, and r->updated_ms).  -EINVAL when env_names holds a '=': values are
 * never stored.
 */
int registry_run_insert(registry_t *reg, run_record_t *r);
/* Writes every field of r (by r->id); updated_ms is stamped with the time
 * of the write, whatever r holds.  -ENOENT for an unknown id or a row
 * whose owner is not r->owner (another rein took the run over), -EINVAL
 * as for insert. */
int registry_run_update(registry_t *reg, const run_record_t *r);
/* Deletes a run and its descendants; its id is never handed out again.
 * -ENOENT for an unknown id. */
int registry_run_delete(registry_t *reg, int64_t id);
/* Retention: deletes, in one transaction, the exited runs that ended
 * before ended_before_ms (0: none by age) and the exited ones among ids
 * (their logs are gone), with their descendants.  A run not exited is
 * never deleted.  *n: how many went. */
int registry_runs_forget(registry_t *reg, int64_t ended_before_ms,
                         const int64_t *ids, size_t n_ids, size_t *n);
/* -ENOENT for an unknown id. */
int registry_run_get(registry_t *reg, int64_t id, run_record_t *out);
/* Runs ordered by id; all=false: only those not exited. */
int registry_run_list(registry_t *reg, bool all, run_record_t **out,
                      size_t *n);
/* A record with no strings, exit_code -1, state starting. */
void run_record_init(run_record_t *r);
/* Frees r's strings (and leaves them NULL); the fixed fields stay. */
void run_record_clear(run_record_t *r);
void run_record_list_free(run_record_t *v, size_t n);

/* Remembers a descendant of a run (idempotent). */
int registry_descendant_add(registry_t *reg, int64_t run_id, pid_t pid,
                            uint64_t start_time);
/* Forgets a descendant that is gone (0 also when none was recorded). */
int registry_descendant_delete(registry_t *reg, int64_t run_id, pid_t pid,
                               uint64_t start_time);
int registry_descendants(registry_t *reg, int64_t run_id, ptree_t *out);

/*
 * A stray: an orphan re-parented to an owner (rein as a subreaper) that no
 * run of that owner could claim (several were live, and it had left their
 * sessions).  Recorded under the owner, never under a run, so that ending
 * one run never ends another's daemon; reconcile ends a dead owner's
 * strays that are still the same process (boot id, pid, start time).
 */
typedef struct stray_record {
    char owner[REGISTRY_OWNER_ID_LEN];
    char boot_id[PROCFS_BOOT_ID_LEN];
    pid_t pid;
    uint64_t start_time;             /* /proc/<pid>/stat field 22 */
    int64_t seen_ms;                 /* when adopted; 0 on add: now */
} stray_record_t;

/* Remembers a stray (idempotent: the same owner, boot id, pid and start
 * time once).  -ENOENT when its owner is not in the registry. */
int registry_stray_add(registry_t *reg, const stray_record_t *x);
/* Forgets the stray of that owner, boot id, pid and start time; 0 also
 * when there was none (a stray is forgotten once it is gone, and a write
 * that failed before may have left nothing to forget). */
int registry_stray_delete(registry_t *reg, const stray_record_t *x);
/* The strays of owner_id, in the order they were recorded.  free() *out. */
int registry_strays(registry_t *reg, const char *owner_id,
                    stray_record_t **out, size_t *n);

/*
 * Moves every non-exited run and every stray of owner `from` to owner `to`,
 * atomically and only if `from` still owns them, and records the steal
 * (counter run_lease_steal_total, once per steal that moved anything;
 * from's lease is set to 0 so it reads as expired).  *n: how many runs
 * moved, *n_strays (may be NULL) how many strays; both 0 when another
 * stealer won the race.  A `starting` run moved gets the leaf paths its
 * owner recorded (owner_record_t cgroup, pids_cgroup) + "/run-<id>" where
 * it had none.  `to` must be an owner in the registry when `from`
 * has strays (-ENOENT, nothing moved).  Whether from is stale (lease
 * expired, its lock file's flock free) is the caller's decision, taken
 * before the call.
 */
int registry_steal(registry_t *reg, const char *from, const char *to,
                   size_t *n, size_t *n_strays);

/* Prometheus-style counters, e.g. "run_exit_total{reason=\"exit\"}".
 * -EINVAL for a name that is not a metric name with optional labels. */
int registry_counter_add(registry_t *reg, const char *name, int64_t delta);
/* One counter's value; 0 for one never added to. */
int registry_counter_get(registry_t *reg, const char *name, int64_t *value);
/* Counters as Prometheus text exposition (# HELP and # TYPE lines; every
 * counter DESIGN.md names is present, 0 until added to).  free() *out. */
int registry_metrics_text(registry_t *reg, char **out);

#endif
