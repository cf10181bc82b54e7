/*
 * registry.c — the durable run registry (see registry.h).
 *
 * One SQLite connection per handle, no threads.  Every statement is
 * prepared once (SQLITE_PREPARE_PERSISTENT) and cached on the handle, so
 * reconcile touching a thousand records costs a thousand steps, not a
 * thousand compilations.  Every write is one BEGIN IMMEDIATE transaction —
 * taking the write lock up front means a writer waits in the busy handler
 * at BEGIN instead of failing with SQLITE_BUSY half-way, where a deferred
 * transaction cannot be upgraded — unless the caller opened a batch with
 * registry_begin(), in which case the batch commits or rolls back whole.
 *
 * Crash safety is SQLite's: WAL with synchronous=NORMAL loses at most the
 * last commits on power loss, never integrity, and a SIGKILL of a writer at
 * any point leaves the database as of its last commit.  Migrations run in
 * one transaction together with the user_version bump, so a half-migrated
 * schema cannot exist.
 */
#include "supervise/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/loop.h"
#include "base/spool.h"
#include "rein.h"

#define REGISTRY_FILE_MODE 0600
/* getpwuid_r's scratch space when $HOME is unset. */
#define REGISTRY_PWBUF_SIZE 4096
/* The longest counter name, labels included. */
#define REGISTRY_COUNTER_NAME_MAX 256
/* The -wal is cut back to this after a checkpoint, so one big batch
 * (reconcile of thousands) does not leave a big file behind for good. */
#define REGISTRY_WAL_LIMIT_BYTES (4 * 1024 * 1024)
/* Initial room of a run list; it doubles from there. */
#define REGISTRY_LIST_INITIAL 16

/* How long a process waits between tries to switch a fresh file to WAL. */
#define REGISTRY_WAL_RETRY_MS 5

/* ------------------------------------------------------------- schema */

/*
 * Migration i takes user_version i to i + 1.  Never edit one that has
 * shipped: append another.  AUTOINCREMENT plus a seeded sqlite_sequence
 * gives ids from REGISTRY_FIRST_RUN_ID that are never reused, even after
 * the highest run is deleted.  Descendants keep a rowid so they come back
 * in the order they were seen (parents before children).
 */
static const char *const registry_migrations[REGISTRY_SCHEMA_VERSION] = {
    "CREATE TABLE owners ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  pid INTEGER NOT NULL,"
    "  start_time INTEGER NOT NULL,"
    "  boot_id TEXT NOT NULL,"
    "  lock_path TEXT,"
    "  started_ms INTEGER NOT NULL,"
    "  lease_expires_ms INTEGER NOT NULL"
    ") STRICT;"
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  owner TEXT NOT NULL,"
    "  boot_id TEXT NOT NULL,"
    "  pid INTEGER NOT NULL,"
    "  start_time INTEGER NOT NULL,"
    "  pgid INTEGER NOT NULL,"
    "  sid INTEGER NOT NULL,"
    "  cgroup TEXT,"
    "  pids_cgroup TEXT,"
    "  containment TEXT NOT NULL,"
    "  tty INTEGER NOT NULL CHECK (tty IN (0, 1)),"
    "  state INTEGER NOT NULL CHECK (state BETWEEN 0 AND 3),"
    "  reason INTEGER NOT NULL,"
    "  exit_code INTEGER NOT NULL,"
    "  signal INTEGER NOT NULL,"
    "  cleanup_incomplete INTEGER NOT NULL CHECK (cleanup_incomplete IN (0, 1)),"
    "  survivors TEXT,"
    "  created_ms INTEGER NOT NULL,"
    "  started_ms INTEGER NOT NULL,"
    "  ended_ms INTEGER NOT NULL,"
    "  last_output_ms INTEGER NOT NULL,"
    "  updated_ms INTEGER NOT NULL,"
    "  bytes INTEGER NOT NULL,"
    "  command TEXT,"
    "  cwd TEXT,"
    "  log_path TEXT,"
    "  env_names TEXT CHECK (env_names IS NULL OR instr(env_names, '=') = 0)"
    ") STRICT;"
    /* Reconcile and `rein ps` read the live runs; exited ones pile up. */
    "CREATE INDEX runs_live ON runs (owner) WHERE state < 3;"
    "CREATE TABLE descendants ("
    "  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    "  pid INTEGER NOT NULL,"
    "  start_time INTEGER NOT NULL,"
    "  seen_ms INTEGER NOT NULL,"
    "  UNIQUE (run_id, pid, start_time)"
    ") STRICT;"
    "CREATE TABLE counters ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  value INTEGER NOT NULL"
    ") STRICT;"
    "INSERT INTO sqlite_sequence (name, seq) VALUES ('runs', 999);",

    /* 1 -> 2: strays, the orphans re-parented to an owner (a subreaper)
     * that no run of it could claim.  Keyed by their owner, since no run
     * is known to be theirs; the boot id is in the key because pid + start
     * time name a process within one boot only.  RESTRICT, not CASCADE:
     * a stray's row may be the only trace of a live process, so an owner
     * cannot be forgotten while it has one; its strays leave it when
     * reconcile takes them over (the steal) or ends them. */
    "CREATE TABLE strays ("
    "  owner TEXT NOT NULL REFERENCES owners (id) ON DELETE RESTRICT,"
    "  boot_id TEXT NOT NULL,"
    "  pid INTEGER NOT NULL,"
    "  start_time INTEGER NOT NULL,"
    "  seen_ms INTEGER NOT NULL,"
    "  UNIQUE (owner, boot_id, pid, start_time)"
    ") STRICT;",

    /* 2 -> 3: the owner's pid namespace.  Its pid and start time name it
     * only in that namespace; a reader in another one (a container
     * sharing the state dir) cannot judge it by them.  0 for the owners of
     * older builds: unknown, judged as before. */
    "ALTER TABLE owners ADD COLUMN pid_ns INTEGER NOT NULL DEFAULT 0;",

    /* 3 -> 4: the owner's instance cgroups, where it makes each run's
     * leaf before that run's spawn.  A run's own row gets its leaf's path
     * only in the commit after the spawn; an owner that died between the
     * two leaves a `starting` row whose leaf reconcile finds through these.
     * NULL where the owner had none (or was an older build). */
    ("ALTER TABLE owners ADD COLUMN cgroup TEXT;"
     "ALTER TABLE owners ADD COLUMN pids_cgroup TEXT;"),

    /* 4 -> 5: what a run's exit did to the processes it left running
     * (rein_run_info_t.leftovers_ended, leftovers_hung_up), so that `rein
     * ps` can say so after the owner is gone.  0 for older rows: unknown. */
    ("ALTER TABLE runs ADD COLUMN background_ended INTEGER NOT NULL"
     "  DEFAULT 0 CHECK (background_ended IN (0, 1));"
     "ALTER TABLE runs ADD COLUMN background_hung_up INTEGER NOT NULL"
     "  DEFAULT 0 CHECK (background_hung_up >= 0);"),
};

_Static_assert(REGISTRY_FIRST_RUN_ID == 1000,
               "the seeded sqlite_sequence above says 999");

/* The run columns after id, in the order registry_bind_run binds them and
 * registry_read_run reads them. */
#define RUN_COLS                                                            \
    "owner, boot_id, pid, start_time, pgid, sid, cgroup, pids_cgroup,"      \
    " containment, tty,"                                                    \
    " state, reason, exit_code, signal, cleanup_incomplete, survivors,"     \
    " created_ms, started_ms, ended_ms, last_output_ms, updated_ms, bytes," \
    " command, cwd, log_path, env_names, background_ended,"                \
    " background_hung_up"
#define RUN_NCOLS 28
#define RUN_PARAMS                                                          \
    "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?"
#define OWNER_COLS                                                          \
    "id, pid, start_time, boot_id, lock_path, started_ms, lease_expires_ms," \
    " pid_ns, cgroup, pids_cgroup"

enum registry_stmt_id {
    ST_OWNER_ADD,
    ST_OWNER_RENEW,
    ST_OWNER_GET,
    ST_OWNER_LIST,
    ST_OWNER_EXPIRE,
    ST_OWNER_FORGET,
    ST_RUN_INSERT,
    ST_RUN_UPDATE,
    ST_RUN_DELETE,
    ST_RUN_FORGET,
    ST_RUN_FORGET_ENDED,
    ST_RUN_GET,
    ST_RUN_LIST_ALL,
    ST_RUN_LIST_LIVE,
    ST_DESC_ADD,
    ST_DESC_LIST,
    ST_DESC_DELETE,
    ST_STRAY_ADD,
    ST_STRAY_DELETE,
    ST_STRAY_LIST,
    ST_STEAL_LEAVES,
    ST_STEAL,
    ST_STEAL_STRAYS,
    ST_COUNTER_ADD,
    ST_COUNTER_GET,
    ST_COUNTER_LIST,
    ST_COUNT
};

static const char *const registry_sql[ST_COUNT] = {
    [ST_OWNER_ADD] = "INSERT INTO owners (" OWNER_COLS ") "
                     "VALUES (?,?,?,?,?,?,?,?,?,?)",
    [ST_OWNER_RENEW] = "UPDATE owners SET lease_expires_ms = ? WHERE id = ?",
    [ST_OWNER_GET] = "SELECT " OWNER_COLS " FROM owners WHERE id = ?",
    /* Owners with something to reconcile, and those whose lease ran out
     * (an owner that died with nothing live leaves only its row and its
     * lock file, which reconcile then removes). */
    [ST_OWNER_LIST] = "SELECT " OWNER_COLS " FROM owners o WHERE EXISTS "
                      "(SELECT 1 FROM runs r WHERE r.owner = o.id "
                      "AND r.state < 3) OR EXISTS "
                      "(SELECT 1 FROM strays s WHERE s.owner = o.id) "
                      "OR lease_expires_ms < ? "
                      "ORDER BY started_ms, id",
    [ST_OWNER_EXPIRE] = "UPDATE owners SET lease_expires_ms = 0 WHERE id = ?",
    /* Never while a run of it is live or a stray is on record: those rows
     * are how reconcile finds what the owner left. */
    [ST_OWNER_FORGET] = "DELETE FROM owners WHERE id = ?1 AND NOT EXISTS "
                        "(SELECT 1 FROM runs WHERE owner = ?1 AND state < 3) "
                        "AND NOT EXISTS "
                        "(SELECT 1 FROM strays WHERE owner = ?1)",
    [ST_RUN_INSERT] = "INSERT INTO runs (" RUN_COLS ") VALUES (" RUN_PARAMS
                      ")",
    /* Only by its owner: a run another rein has taken over (the steal,
     * when this one was judged dead) is never written back by the one it
     * was taken from.  ?1 is the owner the row is written with. */
    [ST_RUN_UPDATE] = "UPDATE runs SET (" RUN_COLS ") = (" RUN_PARAMS
                      ") WHERE id = ? AND owner = ?1",
    [ST_RUN_DELETE] = "DELETE FROM runs WHERE id = ?",
    [ST_RUN_FORGET] = "DELETE FROM runs WHERE id = ? AND state = 3",
    [ST_RUN_FORGET_ENDED] = "DELETE FROM runs WHERE state = 3 "
                            "AND ended_ms < ?",
    [ST_RUN_GET] = "SELECT id, " RUN_COLS " FROM runs WHERE id = ?",
    [ST_RUN_LIST_ALL] = "SELECT id, " RUN_COLS " FROM runs ORDER BY id",
    [ST_RUN_LIST_LIVE] = "SELECT id, " RUN_COLS " FROM runs WHERE state < 3 "
                         "ORDER BY id",
    [ST_DESC_ADD] = "INSERT OR IGNORE INTO descendants "
                    "(run_id, pid, start_time, seen_ms) VALUES (?,?,?,?)",
    [ST_DESC_LIST] = "SELECT pid, start_time FROM descendants "
                     "WHERE run_id = ? ORDER BY rowid",
    [ST_DESC_DELETE] = "DELETE FROM descendants WHERE run_id = ? AND pid = ? "
                       "AND start_time = ?",
    [ST_STRAY_ADD] = "INSERT OR IGNORE INTO strays "
                     "(owner, boot_id, pid, start_time, seen_ms) "
                     "VALUES (?,?,?,?,?)",
    [ST_STRAY_DELETE] = "DELETE FROM strays WHERE owner = ? AND boot_id = ? "
                        "AND pid = ? AND start_time = ?",
    [ST_STRAY_LIST] = "SELECT owner, boot_id, pid, start_time, seen_ms "
                      "FROM strays WHERE owner = ? ORDER BY rowid",
    /* A `starting` row has no leaf path yet (it is written with the pid,
     * after the spawn), but its owner made the leaf, run-<id> under its
     * instance, before the spawn: a rein killed in between leaves the
     * child in it.  The paths go on the row before it moves, from the
     * owner's row, which the steal is about to make unneeded.  NULL where
     * the owner recorded none (`||` with NULL is NULL). */
    [ST_STEAL_LEAVES] = "UPDATE runs SET "
                        "cgroup = coalesce(cgroup, (SELECT o.cgroup || "
                        "'/run-' || runs.id FROM owners o "
                        "WHERE o.id = runs.owner)), "
                        "pids_cgroup = coalesce(pids_cgroup, (SELECT "
                        "o.pids_cgroup || '/run-' || runs.id FROM owners o "
                        "WHERE o.id = runs.owner)) "
                        "WHERE owner = ? AND state = 0",
    [ST_STEAL] = "UPDATE runs SET owner = ?, updated_ms = ? "
                 "WHERE owner = ? AND state < 3",
    /* OR REPLACE: the stealer may hold the same process as a stray of its
     * own (a rein run by rein: the dead one's orphans come to its parent),
     * and one row of it is enough. */
    [ST_STEAL_STRAYS] = "UPDATE OR REPLACE strays SET owner = ? "
                        "WHERE owner = ?",
    [ST_COUNTER_ADD] = "INSERT INTO counters (name, value) VALUES (?, ?) "
                       "ON CONFLICT (name) DO UPDATE "
                       "SET value = value + excluded.value",
    [ST_COUNTER_GET] = "SELECT value FROM counters WHERE name = ?",
    [ST_COUNTER_LIST] = "SELECT name, value FROM counters ORDER BY name",
};

struct registry {
    sqlite3 *db;
    char path[PATH_MAX];
    bool in_batch;  /* registry_begin() is open */
    int batch_err;  /* first failure inside the batch */
    sqlite3_stmt *stmt[ST_COUNT];
    char errmsg[REGISTRY_ERRMSG_LEN];
};

/* ------------------------------------------------------------- names */

static const char *const registry_state_names[RUN_STATE_COUNT] = {
    "starting", "running", "exiting", "exited"};

/* By value, from rein.h's table, NULL-terminated: past "none", the label
 * values of run_exit_total. */
static const char *const registry_reason_names[RUN_REASON_COUNT + 1] = {
#define REGISTRY_REASON_TEXT_(name, value, text) [value] = text,
    REIN_REASON_MAP(REGISTRY_REASON_TEXT_)
#undef REGISTRY_REASON_TEXT_
};
_Static_assert(RUN_REASON_NONE == 0, "run_exit_total's values skip index 0");

const char *registry_state_name(int state)
{
    if (state < 0 || state >= RUN_STATE_COUNT)
        return "unknown";
    return registry_state_names[state];
}

const char *registry_reason_name(int reason)
{
    if (reason < 0 || reason >= RUN_REASON_COUNT ||
        !registry_reason_names[reason])
        return "unknown";
    return reason == RUN_REASON_NONE ? "" : registry_reason_names[reason];
}

/* ------------------------------------------------------------- errors */

/* SQLite's result as the nearest errno.  An I/O error carries the errno
 * that caused it (ENOSPC, EROFS, EDQUOT...), which says more than EIO. */
static int registry_map(sqlite3 *db, int rc)
{
    int sys = db ? sqlite3_system_errno(db) : 0;
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return 0;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_READONLY:
        return -EROFS;
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return -EACCES;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_IOERR:
        if (sys == ENOSPC || sys == EROFS || sys == EDQUOT || sys == EACCES ||
            sys == EPERM)
            return -sys;
        return -EIO;
    case SQLITE_CANTOPEN:
        return sys > 0 ? -sys : -EACCES;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return -EUCLEAN;
    case SQLITE_CONSTRAINT:
        return -EEXIST;
    case SQLITE_TOOBIG:
        return -E2BIG;
    case SQLITE_NOTFOUND:
        return -ENOENT;
    case SQLITE_INTERRUPT:
        return -EINTR;
    case SQLITE_PROTOCOL:
        return -EIO;
    default:
        return REIN_EINTERNAL;
    }
}

__attribute__((format(printf, 2, 3)))
static void registry_set_msg(registry_t *reg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reg->errmsg, sizeof reg->errmsg, fmt, ap);
    va_end(ap);
}

/* Records a failed SQLite call (what: the operation) and returns its
 * code. */
static int registry_fail(registry_t *reg, int rc, const char *what)
{
    int err = registry_map(reg->db, rc);
    if (err == 0)
        err = REIN_EINTERNAL;
    registry_set_msg(reg, "registry %s: %s: %s", reg->path, what,
                     sqlite3_errmsg(reg->db));
    return err;
}

/* A failure of ours (not SQLite's), recorded the same way. */
static int registry_fail_code(registry_t *reg, int err, const char *what)
{
    registry_set_msg(reg, "registry %s: %s: %s", reg->path, what,
                     rein_strerror(err));
    return err;
}

const char *registry_errmsg(const registry_t *reg)
{
    return reg ? reg->errmsg : "registry: no handle";
}

bool registry_readonly(const registry_t *reg)
{
    return sqlite3_db_readonly(reg->db, "main") == 1;
}

bool registry_err_unwritable(int err)
{
    return err == -EROFS || err == -EACCES || err == -EPERM ||
           err == -ENOSPC || err == -EDQUOT || err == -EIO;
}

/* ------------------------------------------------- statements, txns */

static int registry_exec(registry_t *reg, const char *sql, const char *what)
{
    int rc = sqlite3_exec(reg->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : registry_fail(reg, rc, what);
}

/* Makes room in an array of cap elements of size elem for element len,
 * doubling from REGISTRY_LIST_INITIAL.  arrp points at the array pointer
 * (any element type: it is read and written with memcpy).  0 or -ENOMEM,
 * the array unchanged. */
static int registry_grow(void *arrp, size_t *cap, size_t len, size_t elem)
{
    if (len < *cap)
        return 0;
    void *cur, *nv;
    size_t ncap = *cap ? 2 * *cap : REGISTRY_LIST_INITIAL;
    memcpy(&cur, arrp, sizeof cur);
    if (!(nv = realloc(cur, ncap * elem)))
        return -ENOMEM;
    memcpy(arrp, &nv, sizeof nv);
    *cap = ncap;
    return 0;
}

/* The cached statement id, prepared on first use. */
static int registry_stmt(registry_t *reg, enum registry_stmt_id id,
                         sqlite3_stmt **out)
{
    if (!reg->stmt[id]) {
        int rc = sqlite3_prepare_v3(reg->db, registry_sql[id], -1,
                                    SQLITE_PREPARE_PERSISTENT, &reg->stmt[id],
                                    NULL);
        if (rc != SQLITE_OK)
            return registry_fail(reg, rc, "prepare");
    }
    *out = reg->stmt[id];
    return 0;
}

/* Makes a statement ready for its next use; bindings are dropped so a
 * stale string pointer can never be read again. */
static void registry_reset(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* How a listing reads one row into an element of its array, and clears
 * one.  read starts by initialising the element, so whatever it fails on,
 * the element can be cleared. */
typedef struct registry_rows {
    size_t size; /* of one element */
    int (*read)(sqlite3_stmt *st, void *elem);
    void (*clear)(void *elem);
    const char *what; /* the listing, for the error ("list runs") */
} registry_rows_t;

/* Steps st to its end, each row read into a growing array of elements,
 * stored through outp (a pointer to the array pointer) with its length in
 * *n.  On failure everything read is cleared and freed, and the error
 * returned.  st is reset either way. */
static int registry_collect(registry_t *reg, sqlite3_stmt *st,
                            const registry_rows_t *rows, void *outp,
                            size_t *n)
{
    char *v = NULL;
    size_t len = 0, cap = 0;
    int src, rc = 0;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = registry_grow(&v, &cap, len, rows->size)) < 0)
            goto fail;
        /* Counted before it is read: a row read halfway is cleared too. */
        if ((rc = rows->read(st, v + rows->size * len++)) < 0)
            goto fail;
    }
    if (src != SQLITE_DONE) {
        rc = registry_fail(reg, src, rows->what);
        goto fail;
    }
    registry_reset(st);
    memcpy(outp, &v, sizeof v);
    *n = len;
    return 0;
fail:
    registry_reset(st);
    for (size_t i = 0; i < len; i++)
        rows->clear(v + rows->size * i);
    free(v);
    return rc;
}

/* Steps a statement that returns no rows. */
static int registry_step_done(registry_t *reg, sqlite3_stmt *st,
                              const char *what)
{
    int rc = sqlite3_step(st);
    int err = rc == SQLITE_DONE ? 0 : registry_fail(reg, rc, what);
    registry_reset(st);
    return err;
}

/* Rolls back whatever transaction is open, keeping the error message of
 * the failure that led here. */
static void registry_rollback_quiet(registry_t *reg)
{
    if (!sqlite3_get_autocommit(reg->db))
        sqlite3_exec(reg->db, "ROLLBACK", NULL, NULL, NULL);
}

/* A handle SQLite opened read-only (read-only mount, no permission)
 * would take BEGIN IMMEDIATE and fail only at the first write: say so up
 * front, in words that name the cause. */
static int registry_check_writable(registry_t *reg)
{
    if (!registry_readonly(reg))
        return 0;
    return registry_fail_code(reg, -EROFS, "opened read-only, cannot write");
}

/* Starts a write: BEGIN IMMEDIATE, or nothing inside a batch. */
static int registry_write_begin(registry_t *reg)
{
    if (reg->in_batch)
        return reg->batch_err ? reg->batch_err : 0;
    int rc = registry_check_writable(reg);
    if (rc < 0)
        return rc;
    return registry_exec(reg, "BEGIN IMMEDIATE", "begin");
}

/* Ends a write begun by registry_write_begin: commits on rc == 0, else
 * rolls back.  Inside a batch the first failed write dooms the batch (a
 * failed read does not). */
static int registry_write_end(registry_t *reg, int rc)
{
    if (reg->in_batch) {
        if (rc < 0 && !reg->batch_err)
            reg->batch_err = rc;
        return rc;
    }
    if (rc == 0) {
        rc = registry_exec(reg, "COMMIT", "commit");
        if (rc == 0)
            return 0;
    }
    registry_rollback_quiet(reg);
    return rc;
}

/* registry_write_begin, then statement id for the write.  On failure no
 * write is left open (registry_write_end has rolled it back). */
static int registry_write_stmt(registry_t *reg, enum registry_stmt_id id,
                               sqlite3_stmt **st)
{
    int rc = registry_write_begin(reg);
    if (rc < 0)
        return rc;
    rc = registry_stmt(reg, id, st);
    return rc < 0 ? registry_write_end(reg, rc) : 0;
}

int registry_begin(registry_t *reg)
{
    if (reg->in_batch)
        return registry_fail_code(reg, -EBUSY, "begin");
    int rc = registry_check_writable(reg);
    if (rc == 0)
        rc = registry_exec(reg, "BEGIN IMMEDIATE", "begin");
    if (rc < 0)
        return rc;
    reg->in_batch = true;
    reg->batch_err = 0;
    return 0;
}

int registry_commit(registry_t *reg)
{
    if (!reg->in_batch)
        return registry_fail_code(reg, -EINVAL, "commit outside a batch");
    reg->in_batch = false;
    int rc = reg->batch_err;
    reg->batch_err = 0;
    if (rc == 0) {
        /* SQLite may have rolled back on its own (a full disk, an I/O
         * error): committing nothing must not look like success. */
        if (sqlite3_get_autocommit(reg->db))
            return registry_fail_code(reg, -EIO, "batch rolled back");
        rc = registry_exec(reg, "COMMIT", "commit");
        if (rc == 0)
            return 0;
    }
    registry_rollback_quiet(reg);
    return rc;
}

int registry_rollback(registry_t *reg)
{
    reg->in_batch = false;
    reg->batch_err = 0;
    registry_rollback_quiet(reg);
    return 0;
}

/* ------------------------------------------------------ open, migrate */

static int registry_user_version(registry_t *reg, int *version)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(reg->db, "PRAGMA user_version", -1, &st,
                                NULL);
    if (rc != SQLITE_OK)
        return registry_fail(reg, rc, "read schema version");
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *version = sqlite3_column_int(st, 0);
    int err = rc == SQLITE_ROW ? 0 : registry_fail(reg, rc,
                                                   "read schema version");
    sqlite3_finalize(st);
    return err;
}

static int registry_newer_schema(registry_t *reg, int version)
{
    registry_set_msg(reg,
                     "registry %s: schema version %d is newer than this "
                     "rein understands (%d); upgrade rein",
                     reg->path, version, REGISTRY_SCHEMA_VERSION);
    return -EPROTONOSUPPORT;
}

/* Brings the schema to REGISTRY_SCHEMA_VERSION.  The version is read again
 * under the write lock: another process may have migrated meanwhile. */
static int registry_migrate(registry_t *reg)
{
    int version = 0;
    int rc = registry_user_version(reg, &version);
    if (rc < 0)
        return rc;
    if (version == REGISTRY_SCHEMA_VERSION)
        return 0;
    if (version > REGISTRY_SCHEMA_VERSION)
        return registry_newer_schema(reg, version);
    rc = registry_exec(reg, "BEGIN IMMEDIATE", "begin migration");
    if (rc < 0)
        return rc;
    rc = registry_user_version(reg, &version);
    if (rc < 0)
        goto fail;
    if (version > REGISTRY_SCHEMA_VERSION) {
        rc = registry_newer_schema(reg, version);
        goto fail;
    }
    for (int v = version; v < REGISTRY_SCHEMA_VERSION; v++) {
        rc = registry_exec(reg, registry_migrations[v], "migrate");
        if (rc < 0)
            goto fail;
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d",
             REGISTRY_SCHEMA_VERSION);
    rc = registry_exec(reg, sql, "set schema version");
    if (rc < 0)
        goto fail;
    return registry_exec(reg, "COMMIT", "commit migration");
fail:
    registry_rollback_quiet(reg);
    return rc;
}

/* Creates the file 0600 before SQLite does (it would use 0644), so the
 * -wal and -shm files, which copy the database's mode, are private too. */
static int registry_create_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                  REGISTRY_FILE_MODE);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    int err = -errno;
    /* An existing database on a read-only file system or behind
     * permissions still opens read-only; let SQLite decide. */
    if ((err == -EROFS || err == -EACCES || err == -EPERM) &&
        access(path, F_OK) == 0)
        return 0;
    return err;
}

/* Opens the connection and sets it up.  immutable: a read-only file that
 * nobody writes, read without locks or -shm. */
static int registry_connect(registry_t *reg, bool readonly, bool immutable)
{
    int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
                SQLITE_OPEN_NOMUTEX | (immutable ? SQLITE_OPEN_URI : 0);
    char uri[sizeof reg->path * 3 + sizeof "file:?immutable=1"];
    const char *name = reg->path;
    if (immutable) {
        /* A URI filename: everything but the unreserved set escaped. */
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;
        o += (size_t)snprintf(uri, sizeof uri, "file:");
        for (const unsigned char *p = (const unsigned char *)reg->path; *p;
             p++) {
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || strchr("/._-~", *p)) {
                uri[o++] = (char)*p;
            } else {
                uri[o++] = '%';
                uri[o++] = hex[*p >> 4];
                uri[o++] = hex[*p & 15];
            }
        }
        snprintf(uri + o, sizeof uri - o, "?immutable=1");
        name = uri;
    }
    int src = sqlite3_open_v2(name, &reg->db, flags, NULL);
    if (src != SQLITE_OK)
        return reg->db ? registry_fail(reg, src, "open") : -ENOMEM;
    sqlite3_extended_result_codes(reg->db, 1);
    sqlite3_busy_timeout(reg->db, REGISTRY_BUSY_TIMEOUT_MS);
    if (!readonly) {
        /* Short-lived rein processes (rein run, ps, kill) open and close
         * the registry every time: keep the WAL file and leave the
         * checkpoint to the commits that fill it, instead of recreating,
         * syncing and deleting it on every open and close. */
        int persist = 1;
        sqlite3_file_control(reg->db, "main", SQLITE_FCNTL_PERSIST_WAL,
                             &persist);
        sqlite3_db_config(reg->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
                          NULL);
    }
    /* WAL is a property of the file: set once, it stays.  A read-only
     * open just reads the file in the mode it has. */
    if (!readonly && !registry_readonly(reg)) {
        /* Switching a fresh file to WAL needs it to itself, and SQLite
         * answers BUSY without calling the busy handler when another
         * process opening the same fresh file holds a lock: retry, within
         * the busy timeout, until one of them has switched it. */
        int rc;
        for (int waited = 0;; waited += REGISTRY_WAL_RETRY_MS) {
            rc = sqlite3_exec(reg->db, "PRAGMA journal_mode = WAL", NULL,
                              NULL, NULL);
            if ((rc & 0xff) != SQLITE_BUSY ||
                waited >= REGISTRY_BUSY_TIMEOUT_MS)
                break;
            sqlite3_sleep(REGISTRY_WAL_RETRY_MS);
        }
        if (rc != SQLITE_OK)
            return registry_fail(reg, rc, "enable WAL");
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %d",
             REGISTRY_WAL_LIMIT_BYTES);
    int rc = registry_exec(reg, sql, "open");
    if (rc < 0)
        return rc;
    return registry_exec(reg,
                         "PRAGMA synchronous = NORMAL;"
                         "PRAGMA foreign_keys = ON;"
                         "PRAGMA trusted_schema = OFF;"
                         /* the first read: a -shm problem shows here */
                         "SELECT count(*) FROM sqlite_schema",
                         "open");
}

static bool registry_has_shm(const registry_t *reg)
{
    char shm[sizeof reg->path + sizeof "-shm"];
    snprintf(shm, sizeof shm, "%s-shm", reg->path);
    return access(shm, F_OK) == 0;
}

int registry_open_ex(const char *dir, bool readonly, registry_t **out,
                     char *errmsg, size_t errmsg_size)
{
    *out = NULL;
    int rc;
    registry_t *reg = calloc(1, sizeof *reg);
    if (!reg)
        return -ENOMEM;
    if ((size_t)snprintf(reg->path, sizeof reg->path, "%s/%s", dir,
                         REGISTRY_FILE) >= sizeof reg->path) {
        rc = -ENAMETOOLONG;
        registry_set_msg(reg, "registry in %s: %s", dir, rein_strerror(rc));
        goto fail;
    }
    if (readonly) {
        if (access(reg->path, F_OK) < 0) {
            rc = -errno;
            registry_set_msg(reg, "registry %s: %s", reg->path,
                             rein_strerror(rc));
            goto fail;
        }
    } else {
        rc = spool_mkdir_private(dir);
        if (rc == 0)
            rc = registry_create_file(reg->path);
        if (rc < 0) {
            registry_set_msg(reg, "registry %s: %s", reg->path,
                             rein_strerror(rc));
            goto fail;
        }
    }
    rc = registry_connect(reg, readonly, false);
    if (rc < 0 && (readonly || (reg->db && registry_readonly(reg))) &&
        !registry_has_shm(reg)) {
        /* A WAL database can be read only through its -shm; on a read-only
         * file system nobody can create one.  No -shm means no writer is
         * alive (a WAL writer always holds it), so the file cannot change
         * under us: read it as immutable. */
        sqlite3_close(reg->db);
        reg->db = NULL;
        readonly = true;
        rc = registry_connect(reg, true, true);
    }
    if (rc < 0)
        goto fail;
    if (readonly) {
        int version = 0;
        rc = registry_user_version(reg, &version);
        if (rc < 0)
            goto fail;
        if (version > REGISTRY_SCHEMA_VERSION) {
            rc = registry_newer_schema(reg, version);
            goto fail;
        }
        if (version < REGISTRY_SCHEMA_VERSION) {
            rc = -ENOENT;
            registry_set_msg(reg,
                             "registry %s: schema version %d; open it "
                             "read-write once to migrate",
                             reg->path, version);
            goto fail;
        }
    } else {
        rc = registry_migrate(reg);
        if (rc < 0)
            goto fail;
    }
    reg->errmsg[0] = 0;
    *out = reg;
    return 0;
fail:
    if (errmsg && errmsg_size)
        snprintf(errmsg, errmsg_size, "%s", reg->errmsg);
    registry_close(reg);
    return rc;
}

int registry_open(const char *dir, registry_t **out)
{
    return registry_open_ex(dir, false, out, NULL, 0);
}

void registry_close(registry_t *reg)
{
    if (!reg)
        return;
    if (reg->db)
        registry_rollback_quiet(reg);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(reg->stmt[i]);
    sqlite3_close(reg->db);
    free(reg);
}

int registry_check(registry_t *reg)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(reg->db, "PRAGMA integrity_check", -1, &st,
                                NULL);
    if (rc != SQLITE_OK)
        return registry_fail(reg, rc, "integrity check");
    rc = sqlite3_step(st);
    int err;
    if (rc != SQLITE_ROW) {
        err = registry_fail(reg, rc, "integrity check");
    } else {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (t && !strcmp(t, "ok")) {
            err = 0;
        } else {
            err = -EUCLEAN;
            registry_set_msg(reg, "registry %s: integrity check: %s",
                             reg->path, t ? t : "(no answer)");
        }
    }
    sqlite3_finalize(st);
    return err;
}

int registry_sync(registry_t *reg)
{
    if (reg->in_batch || registry_readonly(reg))
        return 0;
    int rc = registry_exec(reg, "BEGIN IMMEDIATE", "wait for writers");
    registry_rollback_quiet(reg);
    return rc;
}

/* ------------------------------------------------------------ state dir */

static int registry_join(char *out, size_t size, const char *a,
                         const char *b)
{
    if ((size_t)snprintf(out, size, "%s/%s", a, b) >= size)
        return -ENAMETOOLONG;
    return 0;
}

int registry_dir_absolute(const char *dir, char *out, size_t size)
{
    if (dir[0] == '/')
        return (size_t)snprintf(out, size, "%s", dir) >= size ? -ENAMETOOLONG
                                                              : 0;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -errno;
    return registry_join(out, size, cwd, dir);
}

int registry_state_dir(char *out, size_t size)
{
    int rc;
    const char *e = getenv("REIN_STATE_DIR");
    if (e && *e) {
        if ((rc = registry_dir_absolute(e, out, size)) < 0)
            return rc;
    } else if ((e = getenv("XDG_STATE_HOME")) && e[0] == '/') {
        /* The XDG spec: a relative path is invalid and to be ignored. */
        rc = registry_join(out, size, e, REGISTRY_STATE_SUBDIR);
        if (rc < 0)
            return rc;
    } else {
        const char *home = getenv("HOME");
        char pwbuf[REGISTRY_PWBUF_SIZE];
        struct passwd pw, *pwp = NULL;
        if (!home || !*home) {
            if (getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &pwp) != 0 ||
                !pwp || !pw.pw_dir || !*pw.pw_dir)
                return -ENOENT;
            home = pw.pw_dir;
        }
        if ((size_t)snprintf(out, size, "%s/.local/state/%s", home,
                             REGISTRY_STATE_SUBDIR) >= size)
            return -ENAMETOOLONG;
    }
    return spool_mkdir_private(out);
}

/* --------------------------------------------------------------- owners */

static void registry_copy_fixed(char *dst, size_t size, const void *text)
{
    snprintf(dst, size, "%s", text ? (const char *)text : "");
}

/* A column's text as a fresh string (NULL stays NULL).  0 or -ENOMEM. */
static int registry_dup_col(sqlite3_stmt *st, int col, char **out)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    *out = NULL;
    if (!t)
        return sqlite3_errcode(sqlite3_db_handle(st)) == SQLITE_NOMEM
                   ? -ENOMEM
                   : 0;
    *out = strdup((const char *)t);
    return *out ? 0 : -ENOMEM;
}

/* Binds text, or NULL for a NULL pointer.  SQLITE_STATIC: the caller's
 * string outlives the step, and bindings are cleared right after. */
static int registry_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC)
             : sqlite3_bind_null(st, i);
}

int registry_owner_add(registry_t *reg, const owner_record_t *o)
{
    sqlite3_stmt *st;
    int rc = registry_write_stmt(reg, ST_OWNER_ADD, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, o->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, o->pid);
    sqlite3_bind_int64(st, 3, (int64_t)o->start_time);
    sqlite3_bind_text(st, 4, o->boot_id, -1, SQLITE_STATIC);
    registry_bind_text(st, 5, o->lock_path);
    sqlite3_bind_int64(st, 6, o->started_ms);
    sqlite3_bind_int64(st, 7, o->lease_expires_ms);
    sqlite3_bind_int64(st, 8, (int64_t)o->pid_ns);
    registry_bind_text(st, 9, o->cgroup);
    registry_bind_text(st, 10, o->pids_cgroup);
    rc = registry_step_done(reg, st, "add owner");
    return registry_write_end(reg, rc);
}

int registry_owner_renew(registry_t *reg, const char *owner_id,
                         int64_t lease_expires_ms)
{
    sqlite3_stmt *st;
    int rc = registry_write_stmt(reg, ST_OWNER_RENEW, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, lease_expires_ms);
    sqlite3_bind_text(st, 2, owner_id, -1, SQLITE_STATIC);
    rc = registry_step_done(reg, st, "renew lease");
    if (rc == 0 && sqlite3_changes(reg->db) == 0)
        rc = registry_fail_code(reg, -ENOENT, "renew lease of unknown owner");
    return registry_write_end(reg, rc);
}

static int registry_read_owner(sqlite3_stmt *st, owner_record_t *o)
{
    memset(o, 0, sizeof *o);
    registry_copy_fixed(o->id, sizeof o->id, sqlite3_column_text(st, 0));
    o->pid = (pid_t)sqlite3_column_int64(st, 1);
    o->start_time = (uint64_t)sqlite3_column_int64(st, 2);
    registry_copy_fixed(o->boot_id, sizeof o->boot_id,
                        sqlite3_column_text(st, 3));
    int rc = registry_dup_col(st, 4, &o->lock_path);
    o->started_ms = sqlite3_column_int64(st, 5);
    o->lease_expires_ms = sqlite3_column_int64(st, 6);
    o->pid_ns = (uint64_t)sqlite3_column_int64(st, 7);
    if (rc == 0)
        rc = registry_dup_col(st, 8, &o->cgroup);
    if (rc == 0)
        rc = registry_dup_col(st, 9, &o->pids_cgroup);
    return rc;
}

int registry_owner_get(registry_t *reg, const char *owner_id,
                       owner_record_t *out)
{
    sqlite3_stmt *st;
    int rc = registry_stmt(reg, ST_OWNER_GET, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, owner_id, -1, SQLITE_STATIC);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        rc = registry_read_owner(st, out);
    else if (src == SQLITE_DONE)
        rc = registry_fail_code(reg, -ENOENT, "no such owner");
    else
        rc = registry_fail(reg, src, "get owner");
    registry_reset(st);
    return rc;
}

void owner_record_clear(owner_record_t *o)
{
    if (!o)
        return;
    free(o->lock_path);
    free(o->cgroup);
    free(o->pids_cgroup);
    o->lock_path = o->cgroup = o->pids_cgroup = NULL;
}

static int owner_row_read(sqlite3_stmt *st, void *elem)
{
    return registry_read_owner(st, elem);
}

static void owner_row_clear(void *elem)
{
    owner_record_clear(elem);
}

int registry_owner_list(registry_t *reg, owner_record_t **out, size_t *n)
{
    static const registry_rows_t rows = {sizeof **out, owner_row_read,
                                         owner_row_clear, "list owners"};
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int rc = registry_stmt(reg, ST_OWNER_LIST, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, loop_wall_ms());
    return registry_collect(reg, st, &rows, out, n);
}

int registry_owner_forget(registry_t *reg, const char *owner_id)
{
    sqlite3_stmt *st;
    int rc = registry_write_stmt(reg, ST_OWNER_FORGET, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, owner_id, -1, SQLITE_STATIC);
    rc = registry_step_done(reg, st, "forget owner");
    bool gone = rc == 0 && sqlite3_changes(reg->db) > 0;
    rc = registry_write_end(reg, rc);
    return rc < 0 ? rc : gone;
}

/* ----------------------------------------------------------------- runs */

void run_record_init(run_record_t *r)
{
    memset(r, 0, sizeof *r);
    r->state = RUN_STARTING;
    r->exit_code = -1;
}

void run_record_clear(run_record_t *r)
{
    if (!r)
        return;
    free(r->cgroup);
    free(r->pids_cgroup);
    free(r->survivors);
    free(r->command);
    free(r->cwd);
    free(r->log_path);
    free(r->env_names);
    r->cgroup = r->pids_cgroup = r->survivors = NULL;
    r->command = r->cwd = r->log_path = NULL;
    r->env_names = NULL;
}

void run_record_list_free(run_record_t *v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        run_record_clear(&v[i]);
    free(v);
}

/* Binds every column of RUN_COLS from r, starting at parameter 1. */
static void registry_bind_run(sqlite3_stmt *st, const run_record_t *r,
                              int64_t updated_ms)
{
    int i = 1;
    sqlite3_bind_text(st, i++, r->owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, r->boot_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, i++, r->pid);
    sqlite3_bind_int64(st, i++, (int64_t)r->start_time);
    sqlite3_bind_int64(st, i++, r->pgid);
    sqlite3_bind_int64(st, i++, r->sid);
    registry_bind_text(st, i++, r->cgroup);
    registry_bind_text(st, i++, r->pids_cgroup);
    sqlite3_bind_text(st, i++, r->containment, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, i++, r->tty ? 1 : 0);
    sqlite3_bind_int(st, i++, r->state);
    sqlite3_bind_int(st, i++, r->reason);
    sqlite3_bind_int(st, i++, r->exit_code);
    sqlite3_bind_int(st, i++, r->signal);
    sqlite3_bind_int(st, i++, r->cleanup_incomplete ? 1 : 0);
    registry_bind_text(st, i++, r->survivors);
    sqlite3_bind_int64(st, i++, r->created_ms);
    sqlite3_bind_int64(st, i++, r->started_ms);
    sqlite3_bind_int64(st, i++, r->ended_ms);
    sqlite3_bind_int64(st, i++, r->last_output_ms);
    sqlite3_bind_int64(st, i++, updated_ms);
    sqlite3_bind_int64(st, i++, (int64_t)r->bytes);
    registry_bind_text(st, i++, r->command);
    registry_bind_text(st, i++, r->cwd);
    registry_bind_text(st, i++, r->log_path);
    registry_bind_text(st, i++, r->env_names);
    sqlite3_bind_int(st, i++, r->background_ended ? 1 : 0);
    sqlite3_bind_int64(st, i++, (int64_t)r->background_hung_up);
}

/* Reads "id, RUN_COLS" into out (zeroed first). */
static int registry_read_run(sqlite3_stmt *st, run_record_t *r)
{
    int i = 0, rc = 0;
    run_record_init(r);
    r->id = sqlite3_column_int64(st, i++);
    registry_copy_fixed(r->owner, sizeof r->owner,
                        sqlite3_column_text(st, i++));
    registry_copy_fixed(r->boot_id, sizeof r->boot_id,
                        sqlite3_column_text(st, i++));
    r->pid = (pid_t)sqlite3_column_int64(st, i++);
    r->start_time = (uint64_t)sqlite3_column_int64(st, i++);
    r->pgid = (pid_t)sqlite3_column_int64(st, i++);
    r->sid = (pid_t)sqlite3_column_int64(st, i++);
    rc |= registry_dup_col(st, i++, &r->cgroup);
    rc |= registry_dup_col(st, i++, &r->pids_cgroup);
    registry_copy_fixed(r->containment, sizeof r->containment,
                        sqlite3_column_text(st, i++));
    r->tty = sqlite3_column_int(st, i++) != 0;
    r->state = sqlite3_column_int(st, i++);
    r->reason = sqlite3_column_int(st, i++);
    r->exit_code = sqlite3_column_int(st, i++);
    r->signal = sqlite3_column_int(st, i++);
    r->cleanup_incomplete = sqlite3_column_int(st, i++) != 0;
    rc |= registry_dup_col(st, i++, &r->survivors);
    r->created_ms = sqlite3_column_int64(st, i++);
    r->started_ms = sqlite3_column_int64(st, i++);
    r->ended_ms = sqlite3_column_int64(st, i++);
    r->last_output_ms = sqlite3_column_int64(st, i++);
    r->updated_ms = sqlite3_column_int64(st, i++);
    r->bytes = (uint64_t)sqlite3_column_int64(st, i++);
    rc |= registry_dup_col(st, i++, &r->command);
    rc |= registry_dup_col(st, i++, &r->cwd);
    rc |= registry_dup_col(st, i++, &r->log_path);
    rc |= registry_dup_col(st, i++, &r->env_names);
    r->background_ended = sqlite3_column_int(st, i++) != 0;
    r->background_hung_up = (uint32_t)sqlite3_column_int64(st, i++);
    if (rc) {
        run_record_clear(r);
        return -ENOMEM;
    }
    return 0;
}

/* Environment values never reach the database: a '=' in the names list
 * means the caller passed NAME=value entries. */
static int registry_check_run(registry_t *reg, const run_record_t *r)
{
    if (r->env_names && strchr(r->env_names, '='))
        return registry_fail_code(reg, -EINVAL,
                                  "env_names holds a value ('=')");
    if (r->state < 0 || r->state >= RUN_STATE_COUNT)
        return registry_fail_code(reg, -EINVAL, "run state out of range");
    return 0;
}

int registry_run_insert(registry_t *reg, run_record_t *r)
{
    sqlite3_stmt *st;
    int rc = registry_check_run(reg, r);
    if (rc < 0)
        return rc;
    int64_t now = loop_wall_ms();
    if (!r->created_ms)
        r->created_ms = now;
    rc = registry_write_stmt(reg, ST_RUN_INSERT, &st);
    if (rc < 0)
        return rc;
    registry_bind_run(st, r, now);
    rc = registry_step_done(reg, st, "insert run");
    if (rc == 0) {
        r->id = sqlite3_last_insert_rowid(reg->db);
        r->updated_ms = now;
    }
    return registry_write_end(reg, rc);
}

int registry_run_update(registry_t *reg, const run_record_t *r)
{
    sqlite3_stmt *st;
    int rc = registry_check_run(reg, r);
    if (rc < 0)
        return rc;
    rc = registry_write_stmt(reg, ST_RUN_UPDATE, &st);
    if (rc < 0)
        return rc;
    registry_bind_run(st, r, loop_wall_ms());
    sqlite3_bind_int64(st, RUN_NCOLS + 1, r->id);
    rc = registry_step_done(reg, st, "update run");
    if (rc == 0 && sqlite3_changes(reg->db) == 0)
        rc = registry_fail_code(reg, -ENOENT,
                                "update of a run unknown or not this "
                                "owner's");
    return registry_write_end(reg, rc);
}

int registry_run_delete(registry_t *reg, int64_t id)
{
    sqlite3_stmt *st;
    int rc = registry_write_stmt(reg, ST_RUN_DELETE, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    rc = registry_step_done(reg, st, "delete run");
    if (rc == 0 && sqlite3_changes(reg->db) == 0)
        rc = registry_fail_code(reg, -ENOENT, "delete of unknown run");
    return registry_write_end(reg, rc);
}

int registry_runs_forget(registry_t *reg, int64_t ended_before_ms,
                         const int64_t *ids, size_t n_ids, size_t *n)
{
    sqlite3_stmt *st;
    size_t gone = 0;
    *n = 0;
    /* One transaction for the lot: a pass may forget thousands. */
    int rc = registry_write_stmt(reg, ST_RUN_FORGET_ENDED, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, ended_before_ms);
    rc = registry_step_done(reg, st, "forget ended runs");
    if (rc == 0)
        gone += (size_t)sqlite3_changes(reg->db);
    for (size_t i = 0; rc == 0 && i < n_ids; i++) {
        if ((rc = registry_stmt(reg, ST_RUN_FORGET, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, ids[i]);
        rc = registry_step_done(reg, st, "forget run");
        if (rc == 0)
            gone += (size_t)sqlite3_changes(reg->db);
    }
    rc = registry_write_end(reg, rc);
    if (rc == 0)
        *n = gone;
    return rc;
}

int registry_run_get(registry_t *reg, int64_t id, run_record_t *out)
{
    sqlite3_stmt *st;
    int rc = registry_stmt(reg, ST_RUN_GET, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        rc = registry_read_run(st, out);
    else if (src == SQLITE_DONE)
        rc = registry_fail_code(reg, -ENOENT, "no such run");
    else
        rc = registry_fail(reg, src, "get run");
    registry_reset(st);
    return rc;
}

static int run_row_read(sqlite3_stmt *st, void *elem)
{
    return registry_read_run(st, elem);
}

static void run_row_clear(void *elem)
{
    run_record_clear(elem);
}

int registry_run_list(registry_t *reg, bool all, run_record_t **out,
                      size_t *n)
{
    static const registry_rows_t rows = {sizeof **out, run_row_read,
                                         run_row_clear, "list runs"};
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int rc = registry_stmt(reg, all ? ST_RUN_LIST_ALL : ST_RUN_LIST_LIVE,
                           &st);
    if (rc < 0)
        return rc;
    return registry_collect(reg, st, &rows, out, n);
}

/* ---------------------------------------------------------- descendants */

/* One write of a descendant's row, by its identity (run, pid, start
 * time): id is ST_DESC_ADD (which takes the time seen too) or
 * ST_DESC_DELETE. */
static int registry_descendant_write(registry_t *reg,
                                     enum registry_stmt_id id, int64_t run_id,
                                     pid_t pid, uint64_t start_time,
                                     const char *what)
{
    sqlite3_stmt *st;
    int rc = registry_write_stmt(reg, id, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, pid);
    sqlite3_bind_int64(st, 3, (int64_t)start_time);
    if (id == ST_DESC_ADD)
        sqlite3_bind_int64(st, 4, loop_wall_ms());
    rc = registry_step_done(reg, st, what);
    /* The foreign key names the only constraint left after OR IGNORE. */
    if (rc == -EEXIST)
        rc = registry_fail_code(reg, -ENOENT, "descendant of unknown run");
    return registry_write_end(reg, rc);
}

int registry_descendant_add(registry_t *reg, int64_t run_id, pid_t pid,
                            uint64_t start_time)
{
    return registry_descendant_write(reg, ST_DESC_ADD, run_id, pid,
                                     start_time, "add descendant");
}

int registry_descendant_delete(registry_t *reg, int64_t run_id, pid_t pid,
                               uint64_t start_time)
{
    return registry_descendant_write(reg, ST_DESC_DELETE, run_id, pid,
                                     start_time, "delete descendant");
}

int registry_descendants(registry_t *reg, int64_t run_id, ptree_t *out)
{
    out->v = NULL;
    out->n = 0;
    sqlite3_stmt *st;
    int rc = registry_stmt(reg, ST_DESC_LIST, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = registry_grow(&out->v, &cap, out->n, sizeof *out->v)) < 0)
            goto fail;
        out->v[out->n] =
            PTREE_MEMBER((pid_t)sqlite3_column_int64(st, 0),
                         (uint64_t)sqlite3_column_int64(st, 1));
        out->n++;
    }
    if (src != SQLITE_DONE) {
        rc = registry_fail(reg, src, "list descendants");
        goto fail;
    }
    registry_reset(st);
    return 0;
fail:
    registry_reset(st);
    free(out->v);
    out->v = NULL;
    out->n = 0;
    return rc;
}

/* --------------------------------------------------------------- strays */

/* Binds the identity of x (owner, boot id, pid, start time) from 1. */
static void registry_bind_stray(sqlite3_stmt *st, const stray_record_t *x)
{
    sqlite3_bind_text(st, 1, x->owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, x->boot_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, x->pid);
    sqlite3_bind_int64(st, 4, (int64_t)x->start_time);
}

int registry_stray_add(registry_t *reg, const stray_record_t *x)
{
    sqlite3_stmt *st;
    int rc = registry_write_stmt(reg, ST_STRAY_ADD, &st);
    if (rc < 0)
        return rc;
    registry_bind_stray(st, x);
    sqlite3_bind_int64(st, 5, x->seen_ms ? x->seen_ms : loop_wall_ms());
    rc = registry_step_done(reg, st, "add stray");
    /* As for descendants: OR IGNORE leaves the foreign key to fail. */
    if (rc == -EEXIST)
        rc = registry_fail_code(reg, -ENOENT, "stray of unknown owner");
    return registry_write_end(reg, rc);
}

int registry_stray_delete(registry_t *reg, const stray_record_t *x)
{
    sqlite3_stmt *st;
    int rc = registry_write_stmt(reg, ST_STRAY_DELETE, &st);
    if (rc < 0)
        return rc;
    registry_bind_stray(st, x);
    rc = registry_step_done(reg, st, "delete stray");
    return registry_write_end(reg, rc);
}

static int stray_row_read(sqlite3_stmt *st, void *elem)
{
    stray_record_t *x = elem;
    memset(x, 0, sizeof *x);
    registry_copy_fixed(x->owner, sizeof x->owner,
                        sqlite3_column_text(st, 0));
    registry_copy_fixed(x->boot_id, sizeof x->boot_id,
                        sqlite3_column_text(st, 1));
    x->pid = (pid_t)sqlite3_column_int64(st, 2);
    x->start_time = (uint64_t)sqlite3_column_int64(st, 3);
    x->seen_ms = sqlite3_column_int64(st, 4);
    return 0;
}

static void stray_row_clear(void *elem)
{
    (void)elem; /* fixed fields only */
}

int registry_strays(registry_t *reg, const char *owner_id,
                    stray_record_t **out, size_t *n)
{
    static const registry_rows_t rows = {sizeof **out, stray_row_read,
                                         stray_row_clear, "list strays"};
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int rc = registry_stmt(reg, ST_STRAY_LIST, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, owner_id, -1, SQLITE_STATIC);
    return registry_collect(reg, st, &rows, out, n);
}

/* ---------------------------------------------------------------- steal */

/* Adds to a counter inside the caller's transaction. */
static int registry_counter_add_locked(registry_t *reg, const char *name,
                                       int64_t delta)
{
    sqlite3_stmt *st;
    int rc = registry_stmt(reg, ST_COUNTER_ADD, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, delta);
    return registry_step_done(reg, st, "add to counter");
}

int registry_steal(registry_t *reg, const char *from, const char *to,
                   size_t *n, size_t *n_strays)
{
    size_t strays_dummy;
    if (!n_strays)
        n_strays = &strays_dummy;
    *n = *n_strays = 0;
    sqlite3_stmt *st;
    /* One BEGIN IMMEDIATE: of two stealers racing for the same runs, the
     * second finds them owned by the first and moves nothing. */
    int rc = registry_write_stmt(reg, ST_STEAL_LEAVES, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, from, -1, SQLITE_STATIC);
    rc = registry_step_done(reg, st, "name the leaves of starting runs");
    if (rc < 0)
        goto out;
    rc = registry_stmt(reg, ST_STEAL, &st);
    if (rc < 0)
        goto out;
    sqlite3_bind_text(st, 1, to, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, loop_wall_ms());
    sqlite3_bind_text(st, 3, from, -1, SQLITE_STATIC);
    rc = registry_step_done(reg, st, "steal runs");
    if (rc < 0)
        goto out;
    size_t moved = (size_t)sqlite3_changes(reg->db);
    rc = registry_stmt(reg, ST_STEAL_STRAYS, &st);
    if (rc < 0)
        goto out;
    sqlite3_bind_text(st, 1, to, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, from, -1, SQLITE_STATIC);
    rc = registry_step_done(reg, st, "steal strays");
    if (rc == -EEXIST) /* the foreign key: `to` is no owner */
        rc = registry_fail_code(reg, -ENOENT, "strays stolen by no owner");
    if (rc < 0)
        goto out;
    size_t moved_strays = (size_t)sqlite3_changes(reg->db);
    if (moved == 0 && moved_strays == 0)
        goto out;
    rc = registry_stmt(reg, ST_OWNER_EXPIRE, &st);
    if (rc < 0)
        goto out;
    sqlite3_bind_text(st, 1, from, -1, SQLITE_STATIC);
    rc = registry_step_done(reg, st, "expire stolen lease");
    if (rc < 0)
        goto out;
    rc = registry_counter_add_locked(reg, "run_lease_steal_total", 1);
    if (rc == 0) {
        *n = moved;
        *n_strays = moved_strays;
    }
out:
    rc = registry_write_end(reg, rc);
    if (rc < 0)
        *n = *n_strays = 0;
    return rc;
}

/* ------------------------------------------------------------- counters */

static bool registry_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == ':' || (!first && c >= '0' && c <= '9');
}

/* A Prometheus metric name, optionally with {label="value",...}; values
 * may hold \\, \" and \n escapes but no raw quote or newline.  Anything
 * else would make the exposition text unparsable. */
static bool registry_counter_name_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > REGISTRY_COUNTER_NAME_MAX)
        return false;
    const char *p = s;
    if (!registry_name_char(*p, true))
        return false;
    while (registry_name_char(*p, false))
        p++;
    if (!*p)
        return true;
    if (*p++ != '{')
        return false;
    for (;;) {
        if (!registry_name_char(*p, true) || *p == ':')
            return false;
        while (registry_name_char(*p, false) && *p != ':')
            p++;
        if (*p++ != '=' || *p++ != '"')
            return false;
        while (*p && *p != '"' && *p != '\n') {
            if (*p == '\\') {
                p++;
                if (*p != '\\' && *p != '"' && *p != 'n')
                    return false;
            }
            p++;
        }
        if (*p++ != '"')
            return false;
        if (*p == ',') {
            p++;
            continue;
        }
        return p[0] == '}' && p[1] == 0;
    }
}

int registry_counter_add(registry_t *reg, const char *name, int64_t delta)
{
    if (!registry_counter_name_ok(name))
        return registry_fail_code(reg, -EINVAL, "bad counter name");
    int rc = registry_write_begin(reg);
    if (rc < 0)
        return rc;
    rc = registry_counter_add_locked(reg, name, delta);
    return registry_write_end(reg, rc);
}

int registry_counter_get(registry_t *reg, const char *name, int64_t *value)
{
    *value = 0;
    sqlite3_stmt *st;
    int rc = registry_stmt(reg, ST_COUNTER_GET, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        *value = sqlite3_column_int64(st, 0);
    else if (src != SQLITE_DONE)
        rc = registry_fail(reg, src, "get counter");
    registry_reset(st);
    return rc;
}

/* The counters DESIGN.md names: always exposed, 0 until added to, so a
 * dashboard sees the series before the first event. */
static const struct registry_family {
    const char *name;
    const char *help;
    const char *label;               /* NULL: no label */
    const char *const *values;       /* NULL-terminated; NULL: no label */
} registry_families[] = {
    {"run_spawn_total", "Runs started.", NULL, NULL},
    {"run_exit_total", "Runs ended, by termination reason.", "reason",
     registry_reason_names + 1},
    {"run_timeout_total", "Runs ended by a deadline, by deadline.", "type",
     (const char *const[]){"no_output", "overall", NULL}},
    {"run_cleanup_kill_total", "Cleanup kills, by what was signalled.",
     "mode", (const char *const[]){"pid", "pgid", "cgroup", NULL}},
    {"run_reconcile_orphans_total",
     "Orphans of a dead owner found and killed by reconcile.", NULL, NULL},
    {"run_reconcile_strays_total",
     "Strays of a dead owner (adopted orphans no run could claim) found "
     "and killed by reconcile.",
     NULL, NULL},
    {"run_lease_steal_total", "Stale owner leases taken over.", NULL, NULL},
    {"run_ownership_escape_total",
     "Descendants that left their run's session or cgroup.", NULL, NULL},
};

#define REGISTRY_NFAMILIES                                                  \
    (sizeof registry_families / sizeof registry_families[0])

struct registry_counter {
    char *name;
    int64_t value;
    bool shown;
};

/* Length of the family part of a series name ("x" in "x{a=\"b\"}"). */
static size_t registry_family_len(const char *name)
{
    return strcspn(name, "{");
}

static int64_t registry_take(struct registry_counter *c, size_t n,
                             const char *series)
{
    for (size_t i = 0; i < n; i++) {
        if (!c[i].shown && !strcmp(c[i].name, series)) {
            c[i].shown = true;
            return c[i].value;
        }
    }
    return 0;
}

/* Every not yet shown series of family (name of length flen). */
static int registry_emit_rest(buf_t *b, struct registry_counter *c,
                              size_t n, const char *family, size_t flen)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (c[i].shown || registry_family_len(c[i].name) != flen ||
            strncmp(c[i].name, family, flen))
            continue;
        c[i].shown = true;
        rc = buf_printf(b, "%s %" PRId64 "\n", c[i].name, c[i].value);
    }
    return rc;
}

int registry_metrics_text(registry_t *reg, char **out)
{
    *out = NULL;
    buf_t b = BUF_INIT;
    struct registry_counter *c = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *st;
    int rc = registry_stmt(reg, ST_COUNTER_LIST, &st);
    if (rc < 0)
        return rc;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = registry_grow(&c, &cap, n, sizeof *c)) < 0)
            goto fail;
        c[n].value = sqlite3_column_int64(st, 1);
        c[n].shown = false;
        rc = registry_dup_col(st, 0, &c[n].name);
        if (rc < 0)
            goto fail;
        if (!c[n].name)
            continue;
        n++;
    }
    if (src != SQLITE_DONE) {
        rc = registry_fail(reg, src, "list counters");
        goto fail;
    }
    registry_reset(st);

    for (size_t f = 0; f < REGISTRY_NFAMILIES && rc == 0; f++) {
        const struct registry_family *fam = &registry_families[f];
        rc = buf_printf(&b, "# HELP %s %s\n# TYPE %s counter\n", fam->name,
                        fam->help, fam->name);
        if (!fam->label && rc == 0)
            rc = buf_printf(&b, "%s %" PRId64 "\n", fam->name,
                            registry_take(c, n, fam->name));
        for (size_t v = 0; fam->values && fam->values[v] && rc == 0; v++) {
            char series[REGISTRY_COUNTER_NAME_MAX + 1];
            snprintf(series, sizeof series, "%s{%s=\"%s\"}", fam->name,
                     fam->label, fam->values[v]);
            rc = buf_printf(&b, "%s %" PRId64 "\n", series,
                            registry_take(c, n, series));
        }
        if (rc == 0)
            rc = registry_emit_rest(&b, c, n, fam->name, strlen(fam->name));
    }
    /* Counters nobody declared above, one family at a time (the list is
     * sorted by name, so a family's series are adjacent). */
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (c[i].shown)
            continue;
        size_t flen = registry_family_len(c[i].name);
        rc = buf_printf(&b, "# TYPE %.*s counter\n", (int)flen, c[i].name);
        if (rc == 0)
            rc = registry_emit_rest(&b, c, n, c[i].name, flen);
    }
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < n; i++)
        free(c[i].name);
    free(c);
    *out = buf_detach(&b);
    return *out ? 0 : -ENOMEM;
fail:
    registry_reset(st);
    for (size_t i = 0; i < n; i++)
        free(c[i].name);
    free(c);
    buf_free(&b);
    return rc;
}
