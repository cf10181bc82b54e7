/*
 * test_registry.c — the run registry and the event log.
 *
 * Schema, migrations (from the previous schema, written here as it
 * shipped) and pragmas; records round-tripping every field; ids from 1000
 * never reused; environment names only; descendants; strays per owner,
 * stolen with the runs; leases and atomic steals (also raced between
 * processes); counters as Prometheus text; concurrent writers; a writer
 * SIGKILLed inside a big transaction and inside a commit loop
 * (integrity_check must say ok); a registry that
 * cannot be written (a full tmpfs and a read-only bind mount, in a private
 * mount namespace, since root ignores mode bits); the state directory's
 * lookup order; JSONL events and the heartbeat rate limit; and the bench
 * figure of reconcile's shape (list + update 1,000 runs in one batch).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "harness.h"
#include "supervise/events.h"
#include "supervise/registry.h"
#include "tutil.h"

#define OWNER_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define OWNER_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define OWNER_C "cccccccccccccccccccccccccccccccc"
/* Room for a path built from another PATH_MAX one plus a suffix. */
#define TPATH (PATH_MAX + 64)
#define BOOT "01234567-89ab-cdef-0123-456789abcdef"
/* A lease that has not expired (2100-01-01): an owner alive for
 * registry_owner_list, which also lists those whose lease ran out. */
#define LEASE_LIVE 4102444800000LL

static void mkrun(run_record_t *r, const char *owner, const char *command)
{
    run_record_init(r);
    snprintf(r->owner, sizeof r->owner, "%s", owner);
    snprintf(r->boot_id, sizeof r->boot_id, "%s", BOOT);
    snprintf(r->containment, sizeof r->containment, "pgid");
    r->state = RUN_RUNNING;
    r->command = strdup(command);
    r->cwd = strdup("/tmp");
}

static int64_t insert_run(registry_t *reg, const char *owner, int state)
{
    run_record_t r;
    mkrun(&r, owner, "true");
    r.state = state;
    ASSERT_OK(registry_run_insert(reg, &r));
    run_record_clear(&r);
    return r.id;
}

static void add_owner(registry_t *reg, const char *id, int64_t lease)
{
    owner_record_t o = {0};
    snprintf(o.id, sizeof o.id, "%s", id);
    o.pid = getpid();
    o.start_time = 42;
    snprintf(o.boot_id, sizeof o.boot_id, "%s", BOOT);
    o.lock_path = (char *)"/tmp/lock";
    o.started_ms = 1;
    o.lease_expires_ms = lease;
    ASSERT_OK(registry_owner_add(reg, &o));
}

/* A single-value query on a raw connection, as an integer. */
static long long raw_int(const char *path, const char *sql)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
              SQLITE_OK);
    sqlite3_stmt *st;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static size_t count_runs(registry_t *reg)
{
    run_record_t *v;
    size_t n;
    ASSERT_OK(registry_run_list(reg, true, &v, &n));
    run_record_list_free(v, n);
    return n;
}

TEST(registry_schema_pragmas_and_modes)
{
    char dir[PATH_MAX], db[TPATH];
    snprintf(dir, sizeof dir, "%s/state/deeper", test_tmpdir());
    snprintf(db, sizeof db, "%s/%s", dir, REGISTRY_FILE);
    registry_t *reg;
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_FALSE(registry_readonly(reg));
    insert_run(reg, OWNER_A, RUN_RUNNING);
    struct stat st;
    ASSERT_EQ(stat(dir, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0700);
    ASSERT_EQ(stat(db, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    char wal[TPATH + 8];
    snprintf(wal, sizeof wal, "%s-wal", db);
    ASSERT_EQ(stat(wal, &st), 0); /* WAL mode, and the -wal is private too */
    ASSERT_EQ(st.st_mode & 0777, 0600);
    ASSERT_EQ(raw_int(db, "PRAGMA user_version"), REGISTRY_SCHEMA_VERSION);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM pragma_table_list "
                          "WHERE name IN ('owners','runs','descendants',"
                          "'counters','strays') AND strict = 1"),
              5);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM pragma_journal_mode "
                          "WHERE journal_mode = 'wal'"),
              1);
    ASSERT_OK(registry_check(reg));
    registry_close(reg);
    registry_close(NULL);
}

TEST(registry_migrates_old_and_refuses_newer_schema)
{
    char dir[PATH_MAX], db[TPATH];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/%s", dir, REGISTRY_FILE);
    /* An old database: version 0 with a table of its own. */
    sqlite3 *raw;
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE legacy (x INTEGER)", NULL,
                           NULL, NULL),
              SQLITE_OK);
    sqlite3_close(raw);

    /* A read-only open never migrates. */
    registry_t *reg;
    char msg[REGISTRY_ERRMSG_LEN] = "";
    ASSERT_EQ(registry_open_ex(dir, true, &reg, msg, sizeof msg), -ENOENT);
    ASSERT_TRUE(reg == NULL);
    ASSERT_CONTAINS(msg, "schema version 0");

    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_EQ(insert_run(reg, OWNER_A, RUN_RUNNING), REGISTRY_FIRST_RUN_ID);
    registry_close(reg);
    ASSERT_EQ(raw_int(db, "PRAGMA user_version"), REGISTRY_SCHEMA_VERSION);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM legacy"), 0);

    /* Reopening does not migrate again: the run is still there. */
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_EQ(count_runs(reg), 1);
    registry_close(reg);

    /* A newer rein's database is refused, with a message that says so. */
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 99", NULL, NULL,
                           NULL),
              SQLITE_OK);
    sqlite3_close(raw);
    ASSERT_EQ(registry_open_ex(dir, false, &reg, msg, sizeof msg),
              -EPROTONOSUPPORT);
    ASSERT_CONTAINS(msg, "newer");
}

/* The schema version 1 as rein shipped it (migration 0, verbatim): what a
 * registry written by the previous build holds. */
static const char schema_v1[] =
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
    "INSERT INTO sqlite_sequence (name, seq) VALUES ('runs', 999);";

TEST(registry_migrates_schema_1_keeping_everything)
{
    _Static_assert(REGISTRY_SCHEMA_VERSION == 5,
                   "the checks below cover what each migration since 1 "
                   "adds");
    char dir[PATH_MAX], db[TPATH];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/%s", dir, REGISTRY_FILE);
    /* What the previous build left: a dead owner, its live run, a
     * descendant, a counter, in WAL mode. */
    sqlite3 *raw;
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA journal_mode = WAL", NULL, NULL,
                           NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, schema_v1, NULL, NULL, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(
                  raw,
                  "INSERT INTO owners VALUES ('" OWNER_A "', 7, 8, '" BOOT
                  "', '/nowhere.lock', 1, 2);"
                  "INSERT INTO runs (owner, boot_id, pid, start_time, pgid,"
                  " sid, containment, tty, state, reason, exit_code, signal,"
                  " cleanup_incomplete, created_ms, started_ms, ended_ms,"
                  " last_output_ms, updated_ms, bytes, command)"
                  " VALUES ('" OWNER_A "', '" BOOT "', 4242, 99, 4242, 4242,"
                  " 'subreaper', 0, 1, 0,"
                  " -1, 0, 0, 1, 1, 0, 0, 1, 0, 'old run');"
                  "INSERT INTO descendants VALUES (1000, 4243, 100, 1);"
                  "INSERT INTO counters VALUES ('run_spawn_total', 1);"
                  "PRAGMA user_version = 1;",
                  NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(raw);

    /* A read-only open (rein ps on a read-only mount) does not migrate. */
    registry_t *reg;
    char msg[REGISTRY_ERRMSG_LEN] = "";
    ASSERT_EQ(registry_open_ex(dir, true, &reg, msg, sizeof msg), -ENOENT);
    ASSERT_CONTAINS(msg, "schema version 1");

    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_EQ(raw_int(db, "PRAGMA user_version"), REGISTRY_SCHEMA_VERSION);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM pragma_table_list "
                          "WHERE name = 'strays' AND strict = 1"),
              1);
    run_record_t r;
    ASSERT_OK(registry_run_get(reg, REGISTRY_FIRST_RUN_ID, &r));
    ASSERT_STR(r.command, "old run");
    ASSERT_STR(r.owner, OWNER_A);
    ASSERT_EQ(r.pid, 4242);
    ASSERT_FALSE(r.background_ended); /* 4 -> 5: unknown, none */
    ASSERT_EQ(r.background_hung_up, 0);
    run_record_clear(&r);
    ptree_t t;
    ASSERT_OK(registry_descendants(reg, REGISTRY_FIRST_RUN_ID, &t));
    ASSERT_EQ(t.n, 1);
    ASSERT_EQ(t.v[0].pid, 4243);
    ptree_free(&t);
    int64_t v;
    ASSERT_OK(registry_counter_get(reg, "run_spawn_total", &v));
    ASSERT_EQ(v, 1);
    /* The old owner lists (its run lives) and can now have strays. */
    stray_record_t x = {OWNER_A, BOOT, 5000, 123, 0};
    ASSERT_OK(registry_stray_add(reg, &x));
    owner_record_t *ov;
    size_t n;
    ASSERT_OK(registry_owner_list(reg, &ov, &n));
    ASSERT_EQ(n, 1);
    ASSERT_STR(ov[0].id, OWNER_A);
    ASSERT_EQ(ov[0].pid_ns, 0); /* 2 -> 3: unknown for an old owner */
    ASSERT_TRUE(ov[0].cgroup == NULL); /* 3 -> 4: none recorded */
    ASSERT_TRUE(ov[0].pids_cgroup == NULL);
    for (size_t i = 0; i < n; i++)
        owner_record_clear(&ov[i]);
    free(ov);
    /* Ids go on from the old sequence. */
    ASSERT_EQ(insert_run(reg, OWNER_B, RUN_RUNNING),
              REGISTRY_FIRST_RUN_ID + 1);
    ASSERT_OK(registry_check(reg));
    registry_close(reg);

    /* Opened again, nothing migrates twice: the stray is still there. */
    ASSERT_OK(registry_open(dir, &reg));
    stray_record_t *sv;
    ASSERT_OK(registry_strays(reg, OWNER_A, &sv, &n));
    ASSERT_EQ(n, 1);
    free(sv);
    registry_close(reg);

    /* The very next version (a newer rein's) is refused, and left alone. */
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d",
             REGISTRY_SCHEMA_VERSION + 1);
    ASSERT_EQ(sqlite3_exec(raw, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    ASSERT_EQ(registry_open_ex(dir, false, &reg, msg, sizeof msg),
              -EPROTONOSUPPORT);
    ASSERT_CONTAINS(msg, "newer");
    ASSERT_EQ(registry_open_ex(dir, true, &reg, msg, sizeof msg),
              -EPROTONOSUPPORT);
    ASSERT_EQ(raw_int(db, "PRAGMA user_version"),
              REGISTRY_SCHEMA_VERSION + 1);
}

TEST(registry_not_a_database_is_a_clean_error)
{
    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/%s", test_tmpdir(), REGISTRY_FILE);
    FILE *f = fopen(db, "w");
    ASSERT_TRUE(f != NULL);
    for (int i = 0; i < 512; i++)
        fputs("this is not sqlite ", f);
    fclose(f);
    registry_t *reg;
    char msg[REGISTRY_ERRMSG_LEN] = "";
    ASSERT_EQ(registry_open_ex(test_tmpdir(), false, &reg, msg, sizeof msg),
              -EUCLEAN);
    ASSERT_CONTAINS(msg, REGISTRY_FILE);
}

TEST(registry_run_round_trip_every_field)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    run_record_t r;
    mkrun(&r, OWNER_A, "npm install --verbose");
    r.pid = 4242;
    r.start_time = 123456789012ull;
    r.pgid = 4242;
    r.sid = 4241;
    r.cgroup = strdup("/rein/run-1000");
    snprintf(r.containment, sizeof r.containment, "cgroup");
    r.tty = true;
    r.state = RUN_EXITED;
    r.reason = RUN_REASON_SIGNAL;
    r.exit_code = 137;
    r.signal = 9;
    r.cleanup_incomplete = true;
    r.survivors = strdup("77:1,78:2");
    r.created_ms = 1700000000000;
    r.started_ms = 1700000000001;
    r.ended_ms = 1700000000002;
    r.last_output_ms = 1700000000003;
    r.bytes = 1ull << 40;
    r.log_path = strdup("/state/logs/1000.log");
    r.env_names = strdup("PATH,HOME,NPM_TOKEN");
    ASSERT_OK(registry_run_insert(&*reg, &r));
    ASSERT_EQ(r.id, REGISTRY_FIRST_RUN_ID);
    ASSERT_INT(r.updated_ms, >, 0);

    run_record_t g;
    ASSERT_OK(registry_run_get(reg, r.id, &g));
    ASSERT_EQ(g.id, r.id);
    ASSERT_STR(g.owner, OWNER_A);
    ASSERT_STR(g.boot_id, BOOT);
    ASSERT_EQ(g.pid, 4242);
    ASSERT_TRUE(g.start_time == 123456789012ull);
    ASSERT_EQ(g.pgid, 4242);
    ASSERT_EQ(g.sid, 4241);
    ASSERT_STR(g.cgroup, "/rein/run-1000");
    ASSERT_STR(g.containment, "cgroup");
    ASSERT_TRUE(g.tty);
    ASSERT_EQ(g.state, RUN_EXITED);
    ASSERT_EQ(g.reason, RUN_REASON_SIGNAL);
    ASSERT_EQ(g.exit_code, 137);
    ASSERT_EQ(g.signal, 9);
    ASSERT_TRUE(g.cleanup_incomplete);
    ASSERT_STR(g.survivors, "77:1,78:2");
    ASSERT_EQ(g.created_ms, 1700000000000);
    ASSERT_EQ(g.started_ms, 1700000000001);
    ASSERT_EQ(g.ended_ms, 1700000000002);
    ASSERT_EQ(g.last_output_ms, 1700000000003);
    ASSERT_EQ(g.updated_ms, r.updated_ms);
    ASSERT_TRUE(g.bytes == 1ull << 40);
    ASSERT_STR(g.command, "npm install --verbose");
    ASSERT_STR(g.cwd, "/tmp");
    ASSERT_STR(g.log_path, "/state/logs/1000.log");
    ASSERT_STR(g.env_names, "PATH,HOME,NPM_TOKEN");
    run_record_clear(&g);

    /* Update: every field is written, NULLs included. */
    free(r.cgroup);
    r.cgroup = NULL;
    r.state = RUN_RUNNING;
    r.bytes = 5;
    ASSERT_OK(registry_run_update(reg, &r));
    ASSERT_OK(registry_run_get(reg, r.id, &g));
    ASSERT_TRUE(g.cgroup == NULL);
    ASSERT_EQ(g.state, RUN_RUNNING);
    ASSERT_EQ(g.bytes, 5);
    run_record_clear(&g);

    /* Live vs all. */
    int64_t done = insert_run(reg, OWNER_B, RUN_EXITED);
    run_record_t *v;
    size_t n;
    ASSERT_OK(registry_run_list(reg, false, &v, &n));
    ASSERT_EQ(n, 1);
    ASSERT_EQ(v[0].id, r.id);
    run_record_list_free(v, n);
    ASSERT_OK(registry_run_list(reg, true, &v, &n));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(v[1].id, done);
    run_record_list_free(v, n);

    /* Unknown ids. */
    ASSERT_EQ(registry_run_get(reg, 999999, &g), -ENOENT);
    ASSERT_CONTAINS(registry_errmsg(reg), "no such run");
    r.id = 999999;
    ASSERT_EQ(registry_run_update(reg, &r), -ENOENT);
    ASSERT_EQ(registry_run_delete(reg, 999999), -ENOENT);
    r.state = 17;
    ASSERT_EQ(registry_run_update(reg, &r), -EINVAL);
    run_record_clear(&r);
    run_record_clear(NULL);
    run_record_list_free(NULL, 0);
    registry_close(reg);
}

TEST(registry_ids_start_at_1000_and_are_never_reused)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    ASSERT_EQ(insert_run(reg, OWNER_A, RUN_RUNNING), 1000);
    ASSERT_EQ(insert_run(reg, OWNER_A, RUN_RUNNING), 1001);
    int64_t last = insert_run(reg, OWNER_A, RUN_RUNNING);
    ASSERT_EQ(last, 1002);
    ASSERT_OK(registry_descendant_add(reg, last, 5000, 1));
    ASSERT_OK(registry_run_delete(reg, last)); /* the highest id goes */
    ptree_t t;
    ASSERT_OK(registry_descendants(reg, last, &t));
    ASSERT_EQ(t.n, 0); /* its descendants went with it */
    ptree_free(&t);
    registry_close(reg);
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    ASSERT_EQ(insert_run(reg, OWNER_A, RUN_RUNNING), 1003);
    registry_close(reg);
}

TEST(registry_stores_environment_names_never_values)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    run_record_t r;
    mkrun(&r, OWNER_A, "deploy");
    r.env_names = strdup("PATH,API_KEY=hunter2");
    ASSERT_EQ(registry_run_insert(reg, &r), -EINVAL);
    ASSERT_CONTAINS(registry_errmsg(reg), "env_names");
    free(r.env_names);
    r.env_names = strdup("PATH,API_KEY");
    ASSERT_OK(registry_run_insert(reg, &r));
    free(r.env_names);
    r.env_names = strdup("X=1");
    ASSERT_EQ(registry_run_update(reg, &r), -EINVAL);
    run_record_clear(&r);
    registry_close(reg);

    /* The schema itself refuses a value, whoever writes. */
    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/%s", test_tmpdir(), REGISTRY_FILE);
    sqlite3 *raw;
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "UPDATE runs SET env_names = 'A=b'", NULL,
                           NULL, NULL),
              SQLITE_CONSTRAINT);
    sqlite3_close(raw);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM runs WHERE "
                          "env_names LIKE '%hunter2%'"),
              0);
}

TEST(registry_descendants_in_order_and_idempotent)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    int64_t id = insert_run(reg, OWNER_A, RUN_RUNNING);
    ASSERT_OK(registry_descendant_add(reg, id, 300, 30));
    ASSERT_OK(registry_descendant_add(reg, id, 100, 10));
    ASSERT_OK(registry_descendant_add(reg, id, 300, 30)); /* again */
    ASSERT_OK(registry_descendant_add(reg, id, 300, 31)); /* pid reused */
    ASSERT_EQ(registry_descendant_add(reg, 424242, 1, 1), -ENOENT);
    ptree_t t;
    ASSERT_OK(registry_descendants(reg, id, &t));
    ASSERT_EQ(t.n, 3);
    ASSERT_EQ(t.v[0].pid, 300);
    ASSERT_EQ(t.v[0].start_time, 30);
    ASSERT_EQ(t.v[1].pid, 100);
    ASSERT_EQ(t.v[2].start_time, 31);
    ptree_free(&t);
    registry_close(reg);
}

TEST(registry_owners_leases_and_steal)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    add_owner(reg, OWNER_A, LEASE_LIVE - 3);
    add_owner(reg, OWNER_B, LEASE_LIVE - 2);
    add_owner(reg, OWNER_C, LEASE_LIVE - 1);
    ASSERT_EQ(registry_owner_renew(reg, OWNER_A, LEASE_LIVE), 0);
    ASSERT_EQ(registry_owner_renew(reg, "nobody", 5000), -ENOENT);
    owner_record_t o;
    ASSERT_OK(registry_owner_get(reg, OWNER_A, &o));
    ASSERT_EQ(o.lease_expires_ms, LEASE_LIVE);
    ASSERT_EQ(o.pid, getpid());
    ASSERT_STR(o.lock_path, "/tmp/lock");
    ASSERT_STR(o.boot_id, BOOT);
    owner_record_clear(&o);
    owner_record_clear(NULL);
    ASSERT_EQ(registry_owner_get(reg, "nobody", &o), -ENOENT);

    int64_t a1 = insert_run(reg, OWNER_A, RUN_RUNNING);
    int64_t a2 = insert_run(reg, OWNER_A, RUN_EXITING);
    int64_t a3 = insert_run(reg, OWNER_A, RUN_EXITED);
    insert_run(reg, OWNER_C, RUN_EXITED);

    /* Only owners with live runs are listed, while their leases hold. */
    owner_record_t *ov;
    size_t n;
    ASSERT_OK(registry_owner_list(reg, &ov, &n));
    ASSERT_EQ(n, 1);
    ASSERT_STR(ov[0].id, OWNER_A);
    for (size_t i = 0; i < n; i++)
        owner_record_clear(&ov[i]);
    free(ov);

    ASSERT_OK(registry_steal(reg, OWNER_A, OWNER_B, &n, NULL));
    ASSERT_EQ(n, 2);
    run_record_t g;
    ASSERT_OK(registry_run_get(reg, a1, &g));
    ASSERT_STR(g.owner, OWNER_B);
    run_record_clear(&g);
    ASSERT_OK(registry_run_get(reg, a2, &g));
    ASSERT_STR(g.owner, OWNER_B);
    run_record_clear(&g);
    ASSERT_OK(registry_run_get(reg, a3, &g)); /* exited runs stay put */
    ASSERT_STR(g.owner, OWNER_A);
    run_record_clear(&g);
    /* The owner it was taken from (judged dead, but alive after all) can
     * no longer write the run back; the new owner can. */
    ASSERT_OK(registry_run_get(reg, a1, &g));
    memcpy(g.owner, OWNER_A, sizeof g.owner);
    g.state = RUN_EXITED;
    ASSERT_EQ(registry_run_update(reg, &g), -ENOENT);
    memcpy(g.owner, OWNER_B, sizeof g.owner);
    g.state = RUN_RUNNING;
    ASSERT_OK(registry_run_update(reg, &g));
    run_record_clear(&g);
    ASSERT_OK(registry_run_get(reg, a1, &g));
    ASSERT_STR(g.owner, OWNER_B);
    ASSERT_EQ(g.state, RUN_RUNNING);
    run_record_clear(&g);
    ASSERT_OK(registry_owner_get(reg, OWNER_A, &o));
    ASSERT_EQ(o.lease_expires_ms, 0);
    owner_record_clear(&o);

    /* A second steal of the same owner finds nothing: only-if-still-owned. */
    ASSERT_OK(registry_steal(reg, OWNER_A, OWNER_C, &n, NULL));
    ASSERT_EQ(n, 0);
    int64_t v;
    ASSERT_OK(registry_counter_get(reg, "run_lease_steal_total", &v));
    ASSERT_EQ(v, 1);
    registry_close(reg);
}

/* A `starting` row stolen from a dead owner is given the leaves that
 * owner made for it before its spawn: its instance cgroups + run-<id>.
 * A row with a path keeps it; a live run, which got its own in the
 * post-spawn commit, and an owner without cgroups get nothing. */
TEST(registry_steal_names_the_leaves_of_a_starting_run)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    owner_record_t o = {0};
    snprintf(o.id, sizeof o.id, "%s", OWNER_A);
    snprintf(o.boot_id, sizeof o.boot_id, "%s", BOOT);
    o.cgroup = (char *)"/a.scope/rein/7.8.1";
    o.pids_cgroup = (char *)"/p/rein/7.8.1";
    ASSERT_OK(registry_owner_add(reg, &o));
    add_owner(reg, OWNER_B, 1); /* no cgroups recorded */
    add_owner(reg, OWNER_C, LEASE_LIVE);
    owner_record_t got;
    ASSERT_OK(registry_owner_get(reg, OWNER_A, &got));
    ASSERT_STR(got.cgroup, "/a.scope/rein/7.8.1");
    ASSERT_STR(got.pids_cgroup, "/p/rein/7.8.1");
    owner_record_clear(&got);

    int64_t starting = insert_run(reg, OWNER_A, RUN_STARTING);
    int64_t running = insert_run(reg, OWNER_A, RUN_RUNNING);
    run_record_t r;
    mkrun(&r, OWNER_A, "true");
    r.state = RUN_STARTING;
    r.cgroup = strdup("/a.scope/rein/7.8.1/run-9");
    ASSERT_OK(registry_run_insert(reg, &r));
    int64_t named = r.id;
    run_record_clear(&r);
    int64_t b_starting = insert_run(reg, OWNER_B, RUN_STARTING);

    size_t n;
    ASSERT_OK(registry_steal(reg, OWNER_A, OWNER_C, &n, NULL));
    ASSERT_EQ(n, 3);
    ASSERT_OK(registry_steal(reg, OWNER_B, OWNER_C, &n, NULL));
    ASSERT_EQ(n, 1);
    char want[64];
    ASSERT_OK(registry_run_get(reg, starting, &r));
    snprintf(want, sizeof want, "/a.scope/rein/7.8.1/run-%lld",
             (long long)starting);
    ASSERT_STR(r.cgroup, want);
    snprintf(want, sizeof want, "/p/rein/7.8.1/run-%lld", (long long)starting);
    ASSERT_STR(r.pids_cgroup, want);
    ASSERT_STR(r.owner, OWNER_C);
    run_record_clear(&r);
    ASSERT_OK(registry_run_get(reg, running, &r));
    ASSERT_TRUE(r.cgroup == NULL && r.pids_cgroup == NULL);
    run_record_clear(&r);
    ASSERT_OK(registry_run_get(reg, named, &r));
    ASSERT_STR(r.cgroup, "/a.scope/rein/7.8.1/run-9");
    snprintf(want, sizeof want, "/p/rein/7.8.1/run-%lld", (long long)named);
    ASSERT_STR(r.pids_cgroup, want);
    run_record_clear(&r);
    ASSERT_OK(registry_run_get(reg, b_starting, &r));
    ASSERT_TRUE(r.cgroup == NULL && r.pids_cgroup == NULL);
    run_record_clear(&r);
    registry_close(reg);
}

static size_t count_strays(registry_t *reg, const char *owner)
{
    stray_record_t *v;
    size_t n;
    ASSERT_OK(registry_strays(reg, owner, &v, &n));
    free(v);
    return n;
}

static bool owner_listed(registry_t *reg, const char *owner)
{
    owner_record_t *ov;
    size_t n;
    bool found = false;
    ASSERT_OK(registry_owner_list(reg, &ov, &n));
    for (size_t i = 0; i < n; i++) {
        found = found || !strcmp(ov[i].id, owner);
        owner_record_clear(&ov[i]);
    }
    free(ov);
    return found;
}

TEST(registry_strays_per_owner_stolen_with_the_runs)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    add_owner(reg, OWNER_A, LEASE_LIVE);
    add_owner(reg, OWNER_B, LEASE_LIVE);
    add_owner(reg, OWNER_C, LEASE_LIVE);
    stray_record_t a1 = {OWNER_A, BOOT, 300, 30, 0};
    stray_record_t a2 = {OWNER_A, BOOT, 100, 10, 77};
    stray_record_t b1 = {OWNER_B, BOOT, 500, 50, 0};
    ASSERT_OK(registry_stray_add(reg, &a1));
    ASSERT_OK(registry_stray_add(reg, &a2));
    ASSERT_OK(registry_stray_add(reg, &a1)); /* again: one row */
    ASSERT_OK(registry_stray_add(reg, &b1));
    stray_record_t nobody = {"dddddddddddddddddddddddddddddddd", BOOT, 1, 1,
                             0};
    ASSERT_EQ(registry_stray_add(reg, &nobody), -ENOENT);

    stray_record_t *v;
    size_t n;
    ASSERT_OK(registry_strays(reg, OWNER_A, &v, &n));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(v[0].pid, 300); /* in the order recorded */
    ASSERT_EQ(v[0].start_time, 30);
    ASSERT_STR(v[0].boot_id, BOOT);
    ASSERT_INT(v[0].seen_ms, >, 1600000000000); /* stamped */
    ASSERT_EQ(v[1].pid, 100);
    ASSERT_EQ(v[1].seen_ms, 77);
    free(v);

    /* An owner with strays and no live run is still one to reconcile. */
    ASSERT_TRUE(owner_listed(reg, OWNER_A));
    ASSERT_FALSE(owner_listed(reg, OWNER_C));

    /* Deleting is by the whole identity, and idempotent. */
    stray_record_t other_boot = a2;
    snprintf(other_boot.boot_id, sizeof other_boot.boot_id, "x");
    ASSERT_OK(registry_stray_delete(reg, &other_boot));
    ASSERT_EQ(count_strays(reg, OWNER_A), 2);
    ASSERT_OK(registry_stray_delete(reg, &a2));
    ASSERT_OK(registry_stray_delete(reg, &a2));
    ASSERT_EQ(count_strays(reg, OWNER_A), 1);

    /* A steal takes the strays along, even without a run, and counts. */
    size_t runs, strays;
    ASSERT_OK(registry_steal(reg, OWNER_A, OWNER_C, &runs, &strays));
    ASSERT_EQ(runs, 0);
    ASSERT_EQ(strays, 1);
    ASSERT_EQ(count_strays(reg, OWNER_A), 0);
    ASSERT_EQ(count_strays(reg, OWNER_C), 1);
    /* Its lease is expired by the steal: listed until reconcile forgets
     * it, which it may now that it holds nothing. */
    ASSERT_TRUE(owner_listed(reg, OWNER_A));
    ASSERT_EQ(registry_owner_forget(reg, OWNER_A), 1);
    ASSERT_FALSE(owner_listed(reg, OWNER_A));
    /* Not one with strays on record. */
    ASSERT_EQ(registry_owner_forget(reg, OWNER_C), 0);
    int64_t steals;
    ASSERT_OK(registry_counter_get(reg, "run_lease_steal_total", &steals));
    ASSERT_EQ(steals, 1);
    ASSERT_OK(registry_steal(reg, OWNER_A, OWNER_C, &runs, &strays));
    ASSERT_EQ(strays, 0); /* the second stealer finds nothing */

    /* The stealer may hold the same process itself: one row is kept. */
    stray_record_t c_too = b1;
    memcpy(c_too.owner, OWNER_C, sizeof c_too.owner);
    ASSERT_OK(registry_stray_add(reg, &c_too));
    int64_t b_run = insert_run(reg, OWNER_B, RUN_RUNNING);
    ASSERT_OK(registry_steal(reg, OWNER_B, OWNER_C, &runs, &strays));
    ASSERT_EQ(runs, 1);
    ASSERT_EQ(strays, 1);
    ASSERT_EQ(count_strays(reg, OWNER_C), 2);
    run_record_t g;
    ASSERT_OK(registry_run_get(reg, b_run, &g));
    ASSERT_STR(g.owner, OWNER_C);
    run_record_clear(&g);

    /* Strays go to a known owner only; nothing moves otherwise. */
    ASSERT_EQ(registry_steal(reg, OWNER_C, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
                             &runs, &strays),
              -ENOENT);
    ASSERT_EQ(runs, 0);
    ASSERT_EQ(strays, 0);
    ASSERT_EQ(count_strays(reg, OWNER_C), 2);
    ASSERT_OK(registry_run_get(reg, b_run, &g));
    ASSERT_STR(g.owner, OWNER_C);
    run_record_clear(&g);
    registry_close(reg);

    /* An owner is not forgotten while it has strays on record (whoever
     * deletes it); one without may go. */
    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/%s", test_tmpdir(), REGISTRY_FILE);
    sqlite3 *raw;
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA foreign_keys = ON", NULL, NULL, NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "DELETE FROM owners WHERE id = '" OWNER_C "'",
                           NULL, NULL, NULL),
              SQLITE_CONSTRAINT);
    ASSERT_EQ(sqlite3_exec(raw, "DELETE FROM owners WHERE id = '" OWNER_A "'",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(raw);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM strays"), 2);
}

static int64_t insert_ended(registry_t *reg, const char *owner, int state,
                            int64_t ended_ms)
{
    run_record_t r;
    mkrun(&r, owner, "true");
    r.state = state;
    r.ended_ms = ended_ms;
    ASSERT_OK(registry_run_insert(reg, &r));
    run_record_clear(&r);
    return r.id;
}

static bool run_exists(registry_t *reg, int64_t id)
{
    run_record_t r;
    int rc = registry_run_get(reg, id, &r);
    if (rc == 0)
        run_record_clear(&r);
    ASSERT_TRUE(rc == 0 || rc == -ENOENT);
    return rc == 0;
}

TEST(registry_owner_forget_keeps_an_owner_that_holds_something)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    add_owner(reg, OWNER_A, LEASE_LIVE); /* a live run */
    add_owner(reg, OWNER_B, LEASE_LIVE); /* exited runs only */
    add_owner(reg, OWNER_C, LEASE_LIVE); /* a stray */
    int64_t a = insert_run(reg, OWNER_A, RUN_EXITING);
    insert_run(reg, OWNER_B, RUN_EXITED);
    stray_record_t c = {OWNER_C, BOOT, 300, 30, 0};
    ASSERT_OK(registry_stray_add(reg, &c));
    /* A dead owner that held nothing: listed once its lease ran out. */
    add_owner(reg, "dddddddddddddddddddddddddddddddd", 1);
    ASSERT_TRUE(owner_listed(reg, "dddddddddddddddddddddddddddddddd"));
    ASSERT_FALSE(owner_listed(reg, OWNER_B));

    ASSERT_EQ(registry_owner_forget(reg, OWNER_A), 0);
    ASSERT_EQ(registry_owner_forget(reg, OWNER_B), 1);
    ASSERT_EQ(registry_owner_forget(reg, OWNER_C), 0);
    ASSERT_EQ(registry_owner_forget(reg, "dddddddddddddddddddddddddddddddd"),
              1);
    ASSERT_EQ(registry_owner_forget(reg, "nobody"), 0);
    owner_record_t o;
    ASSERT_OK(registry_owner_get(reg, OWNER_A, &o));
    owner_record_clear(&o);
    ASSERT_EQ(registry_owner_get(reg, OWNER_B, &o), -ENOENT);
    ASSERT_OK(registry_owner_get(reg, OWNER_C, &o));
    owner_record_clear(&o);
    /* Once its run is over and its stray gone, each may go. */
    run_record_t r;
    ASSERT_OK(registry_run_get(reg, a, &r));
    r.state = RUN_EXITED;
    ASSERT_OK(registry_run_update(reg, &r));
    run_record_clear(&r);
    ASSERT_OK(registry_stray_delete(reg, &c));
    ASSERT_EQ(registry_owner_forget(reg, OWNER_A), 1);
    ASSERT_EQ(registry_owner_forget(reg, OWNER_C), 1);
    /* Their runs stay: a run's record does not need its owner's. */
    ASSERT_TRUE(run_exists(reg, a));
    registry_close(reg);
}

TEST(registry_runs_forget_by_age_and_by_id_never_a_live_one)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    int64_t old = insert_ended(reg, OWNER_A, RUN_EXITED, 4999);
    int64_t edge = insert_ended(reg, OWNER_A, RUN_EXITED, 5000);
    int64_t named = insert_ended(reg, OWNER_A, RUN_EXITED, 9000);
    int64_t live = insert_ended(reg, OWNER_A, RUN_RUNNING, 0);
    int64_t ending = insert_ended(reg, OWNER_A, RUN_EXITING, 1);
    ASSERT_OK(registry_descendant_add(reg, old, 300, 30));
    ASSERT_OK(registry_descendant_add(reg, live, 301, 31));
    size_t n;
    /* By age: ended strictly before the cutoff; by id: exited ones only. */
    int64_t ids[] = {named, live, ending, 424242};
    ASSERT_OK(registry_runs_forget(reg, 5000, ids, 4, &n));
    ASSERT_EQ(n, 2);
    ASSERT_FALSE(run_exists(reg, old));
    ASSERT_TRUE(run_exists(reg, edge));
    ASSERT_FALSE(run_exists(reg, named));
    ASSERT_TRUE(run_exists(reg, live));
    ASSERT_TRUE(run_exists(reg, ending));
    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/%s", test_tmpdir(), REGISTRY_FILE);
    /* The descendants went with their run. */
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM descendants"), 1);
    /* 0: nothing by age. */
    ASSERT_OK(registry_runs_forget(reg, 0, NULL, 0, &n));
    ASSERT_EQ(n, 0);
    ASSERT_TRUE(run_exists(reg, edge));
    /* One gone descendant of a live run forgotten, by its identity. */
    ASSERT_OK(registry_descendant_delete(reg, live, 301, 99));
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM descendants"), 1);
    ASSERT_OK(registry_descendant_delete(reg, live, 301, 31));
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM descendants"), 0);
    /* Ids are still never reused. */
    ASSERT_INT(insert_ended(reg, OWNER_A, RUN_EXITED, 1), >, ending);
    registry_close(reg);
}

TEST(registry_steal_race_between_processes_has_one_winner)
{
    enum { RUNS = 50, STEALERS = 4 };
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    add_owner(reg, OWNER_A, 1);
    ASSERT_OK(registry_begin(reg));
    for (int i = 0; i < RUNS; i++)
        insert_run(reg, OWNER_A, RUN_RUNNING);
    ASSERT_OK(registry_commit(reg));
    registry_close(reg);

    int go[2];
    ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
    pid_t pids[STEALERS];
    for (int s = 0; s < STEALERS; s++) {
        pids[s] = fork();
        ASSERT_TRUE(pids[s] >= 0);
        if (pids[s] == 0) {
            close(go[1]);
            registry_t *r2;
            if (registry_open(test_tmpdir(), &r2) < 0)
                _exit(255);
            char me[REGISTRY_OWNER_ID_LEN];
            snprintf(me, sizeof me, "%032d", s + 1);
            char c;
            (void)!read(go[0], &c, 1); /* all start together */
            size_t moved = 0;
            int rc = registry_steal(r2, OWNER_A, me, &moved, NULL);
            registry_close(r2);
            _exit(rc < 0 ? 254 : (int)moved);
        }
    }
    close(go[0]);
    close(go[1]); /* EOF releases every stealer at once */
    int winners = 0, total = 0;
    for (int s = 0; s < STEALERS; s++) {
        int status;
        ASSERT_EQ(waitpid(pids[s], &status, 0), pids[s]);
        ASSERT_TRUE(WIFEXITED(status));
        int moved = WEXITSTATUS(status);
        ASSERT_INT(moved, <=, RUNS);
        winners += moved > 0;
        total += moved;
    }
    ASSERT_EQ(winners, 1);
    ASSERT_EQ(total, RUNS);
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    int64_t v;
    ASSERT_OK(registry_counter_get(reg, "run_lease_steal_total", &v));
    ASSERT_EQ(v, 1);
    registry_close(reg);
}

TEST(registry_counters_as_prometheus_text)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    ASSERT_OK(registry_counter_add(reg, "run_spawn_total", 3));
    ASSERT_OK(registry_counter_add(reg, "run_exit_total{reason=\"exit\"}", 2));
    ASSERT_OK(registry_counter_add(reg, "run_exit_total{reason=\"exit\"}", 1));
    ASSERT_OK(registry_counter_add(
        reg, "run_cleanup_kill_total{mode=\"job\"}", 1));
    ASSERT_OK(registry_counter_add(reg, "custom_total{a=\"x\",b=\"y\\\"z\"}",
                                   7));
    ASSERT_EQ(registry_counter_add(reg, "", 1), -EINVAL);
    ASSERT_EQ(registry_counter_add(reg, "9lives", 1), -EINVAL);
    ASSERT_EQ(registry_counter_add(reg, "bad name", 1), -EINVAL);
    ASSERT_EQ(registry_counter_add(reg, "x{a=\"unterminated}", 1), -EINVAL);
    ASSERT_EQ(registry_counter_add(reg, "x{a=\"v\"} 1\ny", 1), -EINVAL);
    int64_t v;
    ASSERT_OK(registry_counter_get(reg, "run_exit_total{reason=\"exit\"}",
                                   &v));
    ASSERT_EQ(v, 3);
    ASSERT_OK(registry_counter_get(reg, "never_total", &v));
    ASSERT_EQ(v, 0);

    char *text;
    ASSERT_OK(registry_metrics_text(reg, &text));
    ASSERT_CONTAINS(text, "# TYPE run_spawn_total counter\nrun_spawn_total 3\n");
    ASSERT_CONTAINS(text, "# TYPE run_exit_total counter\n");
    ASSERT_CONTAINS(text, "\nrun_exit_total{reason=\"exit\"} 3\n");
    ASSERT_CONTAINS(text, "\nrun_exit_total{reason=\"lost\"} 0\n");
    ASSERT_CONTAINS(text, "\nrun_timeout_total{type=\"no_output\"} 0\n");
    ASSERT_CONTAINS(text, "\nrun_cleanup_kill_total{mode=\"job\"} 1\n");
    ASSERT_CONTAINS(text, "\nrun_reconcile_orphans_total 0\n");
    ASSERT_CONTAINS(text, "\nrun_reconcile_strays_total 0\n");
    ASSERT_CONTAINS(text, "\nrun_lease_steal_total 0\n");
    ASSERT_CONTAINS(text, "\nrun_ownership_escape_total 0\n");
    ASSERT_CONTAINS(text, "# TYPE custom_total counter\n"
                          "custom_total{a=\"x\",b=\"y\\\"z\"} 7\n");
    /* Every line is a comment or "series value"; each series once; every
     * family's # TYPE comes before its series. */
    char *save = NULL, *copy = strdup(text);
    int series = 0;
    for (char *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') {
            ASSERT_TRUE(!strncmp(line, "# TYPE ", 7) ||
                        !strncmp(line, "# HELP ", 7));
            continue;
        }
        char *sp = strrchr(line, ' ');
        ASSERT_TRUE(sp != NULL);
        char *end;
        strtoll(sp + 1, &end, 10);
        ASSERT_TRUE(*end == 0);
        *sp = 0;
        char at[300];
        snprintf(at, sizeof at, "\n%s ", line);
        char *first = strstr(text, at);
        ASSERT_TRUE(first != NULL);
        ASSERT_TRUE(strstr(first + 1, at) == NULL); /* each series once */
        size_t flen = strcspn(line, "{");
        char type[300];
        snprintf(type, sizeof type, "# TYPE %.*s counter", (int)flen, line);
        char *t = strstr(text, type);
        ASSERT_TRUE(t != NULL && t < first);
        series++;
    }
    /* spawn, exit x every reason but none, timeout x 2, kill x 3 + job,
     * orphans, strays, steal, escape, custom. */
    ASSERT_EQ(series, 1 + (RUN_REASON_COUNT - 1) + 2 + 4 + 4 + 1);
    /* Each reason of rein.h's table is a series, and shown by name. */
    for (int i = RUN_REASON_NONE + 1; i < RUN_REASON_COUNT; i++) {
        char at[128];
        snprintf(at, sizeof at, "\nrun_exit_total{reason=\"%s\"} 0\n",
                 rein_reason_name((rein_reason_t)i));
        ASSERT_TRUE(i == RUN_REASON_EXIT || strstr(text, at) != NULL);
        ASSERT_STR(registry_reason_name(i), rein_reason_name((rein_reason_t)i));
    }
    ASSERT_CONTAINS(text, "\nrun_exit_total{reason=\"no-input\"} 0\n");
    ASSERT_STR(registry_reason_name(RUN_REASON_NONE), "");
    ASSERT_STR(registry_reason_name(RUN_REASON_COUNT), "unknown");
    ASSERT_STR(registry_reason_name(-1), "unknown");
    free(copy);
    free(text);
    registry_close(reg);
}

TEST(registry_batch_lands_whole_or_not_at_all)
{
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    int64_t id = insert_run(reg, OWNER_A, RUN_RUNNING);
    ASSERT_OK(registry_begin(reg));
    ASSERT_EQ(registry_begin(reg), -EBUSY);
    insert_run(reg, OWNER_A, RUN_RUNNING);
    run_record_t g;
    ASSERT_EQ(registry_run_get(reg, 5, &g), -ENOENT); /* a failed read is fine */
    ASSERT_OK(registry_counter_add(reg, "run_spawn_total", 1));
    ASSERT_OK(registry_commit(reg));
    ASSERT_EQ(count_runs(reg), 2);

    ASSERT_OK(registry_begin(reg));
    insert_run(reg, OWNER_A, RUN_RUNNING);
    ASSERT_EQ(registry_run_delete(reg, 777), -ENOENT); /* a failed write */
    ASSERT_EQ(registry_counter_add(reg, "run_spawn_total", 1), -ENOENT);
    ASSERT_EQ(registry_commit(reg), -ENOENT);
    ASSERT_EQ(count_runs(reg), 2);
    int64_t v;
    ASSERT_OK(registry_counter_get(reg, "run_spawn_total", &v));
    ASSERT_EQ(v, 1);

    ASSERT_OK(registry_begin(reg));
    ASSERT_OK(registry_run_delete(reg, id));
    ASSERT_OK(registry_rollback(reg));
    ASSERT_EQ(count_runs(reg), 2);
    ASSERT_EQ(registry_commit(reg), -EINVAL);
    ASSERT_OK(registry_rollback(reg));
    registry_close(reg);
}

TEST(registry_concurrent_writers_with_busy_timeout)
{
    enum { PROCS = 3, EACH = 150 };
    registry_t *r1, *r2;
    ASSERT_OK(registry_open(test_tmpdir(), &r1));
    ASSERT_OK(registry_open(test_tmpdir(), &r2));
    /* Two handles in one process, interleaved. */
    for (int i = 0; i < 20; i++) {
        insert_run(i % 2 ? r1 : r2, OWNER_A, RUN_RUNNING);
        ASSERT_OK(registry_counter_add(i % 2 ? r2 : r1, "run_spawn_total",
                                       1));
    }
    /* One handle holds a batch open while the other waits at BEGIN: the
     * busy timeout, not an error, is what it meets first. */
    ASSERT_OK(registry_begin(r1));
    insert_run(r1, OWNER_A, RUN_RUNNING);
    ASSERT_OK(registry_commit(r1));
    registry_close(r2);
    /* No connection crosses a fork: the children open their own. */
    registry_close(r1);

    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        ASSERT_TRUE(pids[p] >= 0);
        if (pids[p] == 0) {
            registry_t *r;
            if (registry_open(test_tmpdir(), &r) < 0)
                _exit(1);
            for (int i = 0; i < EACH; i++) {
                run_record_t x;
                mkrun(&x, OWNER_B, "child");
                int rc = registry_run_insert(r, &x);
                run_record_clear(&x);
                if (rc < 0 ||
                    registry_counter_add(r, "run_spawn_total", 1) < 0) {
                    fprintf(stderr, "%s\n", registry_errmsg(r));
                    _exit(2);
                }
            }
            registry_close(r);
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status;
        ASSERT_EQ(waitpid(pids[p], &status, 0), pids[p]);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ASSERT_OK(registry_open(test_tmpdir(), &r1));
    run_record_t *v;
    size_t n;
    ASSERT_OK(registry_run_list(r1, true, &v, &n));
    ASSERT_EQ(n, 21 + PROCS * EACH);
    for (size_t i = 1; i < n; i++)
        ASSERT_INT(v[i].id, >, v[i - 1].id);
    run_record_list_free(v, n);
    int64_t c;
    ASSERT_OK(registry_counter_get(r1, "run_spawn_total", &c));
    ASSERT_EQ(c, 20 + PROCS * EACH);
    ASSERT_OK(registry_check(r1));
    registry_close(r1);
}

TEST(registry_first_open_by_many_processes_at_once)
{
    enum { PROCS = 6, EACH = 20 };
    int go[2];
    ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        ASSERT_TRUE(pids[p] >= 0);
        if (pids[p] == 0) {
            close(go[1]);
            char c;
            (void)!read(go[0], &c, 1);
            registry_t *r;
            if (registry_open(test_tmpdir(), &r) < 0)
                _exit(1);
            for (int i = 0; i < EACH; i++) {
                run_record_t x;
                mkrun(&x, OWNER_A, "racer");
                int rc = registry_run_insert(r, &x);
                run_record_clear(&x);
                if (rc < 0)
                    _exit(2);
            }
            registry_close(r);
            _exit(0);
        }
    }
    close(go[0]);
    close(go[1]); /* every child opens the fresh directory at once */
    for (int p = 0; p < PROCS; p++) {
        int status;
        ASSERT_EQ(waitpid(pids[p], &status, 0), pids[p]);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
    }
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    ASSERT_EQ(count_runs(reg), PROCS * EACH);
    ASSERT_OK(registry_check(reg));
    registry_close(reg);
}

/* The child of the SIGKILL tests: commits `committed` runs, then either
 * opens one big batch (big) or commits small ones, and after `signal_after`
 * more inserts tells the parent (one byte on fd) and keeps writing until
 * it is killed. */
static void writer_child(int fd, int committed, int signal_after, bool big)
{
    registry_t *r;
    if (registry_open(test_tmpdir(), &r) < 0)
        _exit(1);
    char *cmd = malloc(4097);
    memset(cmd, 'x', 4096);
    cmd[4096] = 0;
    for (int i = 0; i < committed; i++) {
        run_record_t x;
        mkrun(&x, OWNER_A, "committed");
        if (registry_run_insert(r, &x) < 0)
            _exit(2);
        run_record_clear(&x);
    }
    if (big && registry_begin(r) < 0)
        _exit(3);
    for (long i = 0;; i++) {
        if (i == signal_after && write(fd, "k", 1) != 1)
            _exit(4);
        run_record_t x;
        mkrun(&x, OWNER_B, cmd);
        x.env_names = strdup("PATH");
        if (registry_run_insert(r, &x) < 0)
            _exit(5);
        if (registry_descendant_add(r, x.id, (pid_t)i + 2, (uint64_t)i) < 0)
            _exit(6);
        run_record_clear(&x);
    }
}

static void kill_writer_and_check(bool big)
{
    enum { COMMITTED = 20, SIGNAL_AFTER = 3000 };
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        writer_child(p[1], COMMITTED, SIGNAL_AFTER, big);
    }
    close(p[1]);
    char c;
    ASSERT_EQ(read(p[0], &c, 1), 1);
    close(p[0]);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* The WAL the dead writer left is there to be recovered. */
    char wal[PATH_MAX];
    snprintf(wal, sizeof wal, "%s/%s-wal", test_tmpdir(), REGISTRY_FILE);
    struct stat st;
    ASSERT_EQ(stat(wal, &st), 0);
    ASSERT_INT(st.st_size, >, 1024 * 1024);

    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    ASSERT_OK(registry_check(reg));
    size_t n = count_runs(reg);
    if (big)
        ASSERT_EQ(n, COMMITTED); /* the open batch left nothing */
    else
        ASSERT_INT(n, >=, COMMITTED + SIGNAL_AFTER);
    int64_t id = insert_run(reg, OWNER_C, RUN_RUNNING);
    ASSERT_INT(id, >=, REGISTRY_FIRST_RUN_ID + (int64_t)n);
    ASSERT_OK(registry_check(reg));
    registry_close(reg);

    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/%s", test_tmpdir(), REGISTRY_FILE);
    sqlite3 *raw;
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    sqlite3_stmt *q;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &q,
                                 NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    ASSERT_STR((const char *)sqlite3_column_text(q, 0), "ok");
    sqlite3_finalize(q);
    sqlite3_close(raw);
}

TEST_T(registry_sigkill_inside_a_big_transaction_leaves_it_intact, 120)
{
    kill_writer_and_check(true);
}

TEST_T(registry_sigkill_inside_a_commit_loop_leaves_it_intact, 120)
{
    kill_writer_and_check(false);
}

TEST_T(registry_full_disk_fails_writes_cleanly_and_recovers, 120)
{
    tu_private_mounts();
    char dir[PATH_MAX], filler[TPATH];
    snprintf(dir, sizeof dir, "%s/fs", test_tmpdir());
    ASSERT_EQ(mkdir(dir, 0700), 0);
    ASSERT_EQ(mount("tmpfs", dir, "tmpfs", 0, "size=2m,mode=0700"), 0);
    registry_t *reg;
    ASSERT_OK(registry_open(dir, &reg));
    int64_t running = insert_run(reg, OWNER_A, RUN_RUNNING);

    /* Fill the file system to the last byte. */
    snprintf(filler, sizeof filler, "%s/filler", dir);
    int fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    static char block[4096];
    memset(block, 'f', sizeof block);
    for (;;) {
        ssize_t w = write(fd, block, sizeof block);
        if (w < 0) {
            ASSERT_EQ(errno, ENOSPC);
            break;
        }
    }
    while (write(fd, block, 1) == 1) /* the last partial block */
        ;
    close(fd);

    /* New runs are refused with a clear, recognisable error... */
    run_record_t r;
    mkrun(&r, OWNER_A, "refused");
    r.command = realloc(r.command, 64 * 1024);
    memset(r.command, 'c', 64 * 1024 - 1);
    r.command[64 * 1024 - 1] = 0;
    int rc = 0;
    for (int i = 0; i < 8 && rc == 0; i++)
        rc = registry_run_insert(reg, &r);
    ASSERT_INT(rc, <, 0);
    ASSERT_TRUE(registry_err_unwritable(rc));
    ASSERT_CONTAINS(registry_errmsg(reg), "full");
    /* ...reading goes on, and nothing is damaged. */
    run_record_t g;
    ASSERT_OK(registry_run_get(reg, running, &g));
    ASSERT_EQ(g.state, RUN_RUNNING);
    run_record_clear(&g);
    ASSERT_OK(registry_check(reg));

    /* Space comes back: the same handle writes again. */
    ASSERT_EQ(unlink(filler), 0);
    ASSERT_OK(registry_run_get(reg, running, &g));
    g.state = RUN_EXITED;
    g.reason = RUN_REASON_EXIT;
    g.exit_code = 0;
    ASSERT_OK(registry_run_update(reg, &g));
    run_record_clear(&g);
    ASSERT_OK(registry_run_insert(reg, &r));
    run_record_clear(&r);
    ASSERT_OK(registry_check(reg));
    registry_close(reg);
}

TEST(registry_on_a_read_only_mount_refuses_writes_and_still_reads)
{
    tu_private_mounts();
    char dir[PATH_MAX], ro[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/rw", test_tmpdir());
    snprintf(ro, sizeof ro, "%s/ro", test_tmpdir());
    ASSERT_EQ(mkdir(ro, 0700), 0);
    registry_t *rw;
    ASSERT_OK(registry_open(dir, &rw));
    int64_t running = insert_run(rw, OWNER_A, RUN_RUNNING);
    /* The same directory seen through a read-only bind mount: what a
     * remount read-only looks like to a process that opens it afresh. */
    ASSERT_EQ(mount(dir, ro, "none", MS_BIND, NULL), 0);
    ASSERT_EQ(mount("none", ro, "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL),
              0);
    registry_t *reg;
    char msg[REGISTRY_ERRMSG_LEN] = "";
    int rc = registry_open_ex(ro, false, &reg, msg, sizeof msg);
    ASSERT_OK(rc);
    ASSERT_TRUE(registry_readonly(reg));
    run_record_t r;
    mkrun(&r, OWNER_B, "refused");
    rc = registry_run_insert(reg, &r);
    ASSERT_EQ(rc, -EROFS);
    ASSERT_TRUE(registry_err_unwritable(rc));
    ASSERT_CONTAINS(registry_errmsg(reg), "read-only");
    ASSERT_EQ(registry_counter_add(reg, "run_spawn_total", 1), -EROFS);
    ASSERT_EQ(registry_begin(reg), -EROFS);
    run_record_t g;
    ASSERT_OK(registry_run_get(reg, running, &g));
    ASSERT_STR(g.command, "true");
    run_record_clear(&g);

    /* The running run's owner, on the writable path, carries on. */
    ASSERT_OK(registry_run_get(rw, running, &g));
    g.state = RUN_EXITED;
    ASSERT_OK(registry_run_update(rw, &g));
    run_record_clear(&g);
    ASSERT_OK(registry_run_get(reg, running, &g));
    ASSERT_EQ(g.state, RUN_EXITED); /* and the read-only reader sees it */
    run_record_clear(&g);
    registry_close(reg);
    ASSERT_OK(registry_check(rw));
    ASSERT_OK(registry_run_insert(rw, &r));
    run_record_clear(&r);
    registry_close(rw);
}

TEST(registry_state_dir_lookup_order)
{
    char out[PATH_MAX], want[PATH_MAX];
    const char *t = test_tmpdir();
    snprintf(want, sizeof want, "%s/explicit", t);
    setenv("REIN_STATE_DIR", want, 1);
    setenv("XDG_STATE_HOME", t, 1);
    ASSERT_OK(registry_state_dir(out, sizeof out));
    ASSERT_STR(out, want);
    struct stat st;
    ASSERT_EQ(stat(want, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0700);

    unsetenv("REIN_STATE_DIR");
    snprintf(want, sizeof want, "%s/xdg", t);
    setenv("XDG_STATE_HOME", want, 1);
    ASSERT_OK(registry_state_dir(out, sizeof out));
    snprintf(want, sizeof want, "%s/xdg/rein", t);
    ASSERT_STR(out, want);
    ASSERT_EQ(stat(want, &st), 0);

    setenv("XDG_STATE_HOME", "relative/ignored", 1);
    snprintf(want, sizeof want, "%s/home", t);
    setenv("HOME", want, 1);
    ASSERT_OK(registry_state_dir(out, sizeof out));
    snprintf(want, sizeof want, "%s/home/.local/state/rein", t);
    ASSERT_STR(out, want);
    ASSERT_EQ(stat(want, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0700);

    char small[8];
    ASSERT_EQ(registry_state_dir(small, sizeof small), -ENAMETOOLONG);
}

/* Reads dir/events.jsonl: every line must be one JSON object. */
/* The events of one file (suffix "" or EVENTS_OLD_SUFFIX), past the NUL
 * bytes a test put before them (a sparse file standing for a full one). */
static json_t *read_events_file(const char *dir, const char *suffix)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s%s", dir, EVENTS_FILE, suffix);
    FILE *f = fopen(path, "r");
    ASSERT_TRUE(f != NULL);
    int c;
    while ((c = getc(f)) == 0)
        ;
    if (c != EOF)
        ungetc(c, f);
    json_t *all = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        ASSERT_EQ(line[n - 1], '\n');
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        if (!o)
            test_fail(__FILE__, __LINE__, "bad event line: %s (%s)", line,
                      err.text);
        ASSERT_TRUE(json_is_object(o));
        json_array_append_new(all, o);
    }
    free(line);
    fclose(f);
    return all;
}

static json_t *read_events(const char *dir)
{
    return read_events_file(dir, "");
}

/* Makes dir's event file a sparse one of size bytes, as if that many had
 * been written. */
static void events_prefill(const char *dir, off_t size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, EVENTS_FILE);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(ftruncate(fd, size), 0);
    close(fd);
}

static off_t events_size(const char *dir, const char *suffix)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s%s", dir, EVENTS_FILE, suffix);
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Forks procs writers (at most EVENTS_WRITERS_MAX) that each emit `each`
 * output events of run 1000 + p (a "pad" of payload letters 'a' + p, and
 * "i" counting from 0), all into dir's event log at once, and waits for
 * every one. */
#define EVENTS_WRITERS_MAX 8
static void events_writers(const char *dir, int procs, int each, int payload)
{
    pid_t pids[EVENTS_WRITERS_MAX];
    ASSERT_INT(procs, <=, EVENTS_WRITERS_MAX);
    for (int p = 0; p < procs; p++) {
        pids[p] = fork();
        ASSERT_TRUE(pids[p] >= 0);
        if (pids[p] == 0) {
            events_t *ev;
            if (events_open(dir, OWNER_B, &ev) < 0)
                _exit(1);
            char *pad = malloc((size_t)payload + 1);
            memset(pad, 'a' + p, (size_t)payload);
            pad[payload] = 0;
            for (int i = 0; i < each; i++)
                if (events_emit(ev, EVENTS_OUTPUT, 1000 + p,
                                json_pack("{s:s, s:i}", "pad", pad, "i",
                                          i)) < 0)
                    _exit(2);
            free(pad);
            events_close(ev);
            _exit(0);
        }
    }
    for (int p = 0; p < procs; p++) {
        int status;
        ASSERT_EQ(waitpid(pids[p], &status, 0), pids[p]);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

/* Checks that the events of all are whole lines of events_writers, each
 * writer's in its order: next[p] is the "i" expected of writer p next. */
static void events_in_writer_order(json_t *all, int procs, int payload,
                                   int *next)
{
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *e = json_array_get(all, i);
        int p = (int)json_integer_value(json_object_get(e, "run")) - 1000;
        ASSERT_TRUE(p >= 0 && p < procs);
        const char *pad = json_string_value(json_object_get(e, "pad"));
        ASSERT_EQ(strlen(pad), (size_t)payload);
        ASSERT_EQ(pad[payload - 1], 'a' + p);
        ASSERT_EQ(json_integer_value(json_object_get(e, "i")), next[p]++);
    }
}

TEST(events_file_rotates_at_its_cap_into_one_old_file)
{
    const char *dir = test_tmpdir();
    events_prefill(dir, EVENTS_MAX_BYTES - 1);
    events_t *ev, *other;
    ASSERT_OK(events_open(dir, OWNER_A, &ev));
    ASSERT_OK(events_open(dir, OWNER_B, &other)); /* the same file */
    /* One byte short of the cap: the line still goes into it. */
    ASSERT_OK(events_emit(ev, EVENTS_SPAWN, 1000, NULL));
    off_t full = events_size(dir, "");
    ASSERT_INT(full, >, (off_t)EVENTS_MAX_BYTES);
    ASSERT_EQ(events_size(dir, EVENTS_OLD_SUFFIX), -1);
    /* At the cap: renamed, and the line starts a new file. */
    ASSERT_OK(events_emit(ev, EVENTS_EXIT, 1000, NULL));
    ASSERT_EQ(events_size(dir, EVENTS_OLD_SUFFIX), full);
    json_t *cur = read_events(dir);
    ASSERT_EQ(json_array_size(cur), 1);
    ASSERT_STR(json_string_value(
                   json_object_get(json_array_get(cur, 0), "type")),
               "exit");
    json_decref(cur);
    /* A writer still holding the renamed file follows to the new one,
     * and does not rename again. */
    ASSERT_OK(events_emit(other, EVENTS_CANCEL, 1001, NULL));
    ASSERT_EQ(events_size(dir, EVENTS_OLD_SUFFIX), full);
    cur = read_events(dir);
    ASSERT_EQ(json_array_size(cur), 2);
    ASSERT_EQ(json_integer_value(
                  json_object_get(json_array_get(cur, 1), "run")),
              1001);
    json_decref(cur);
    json_t *old = read_events_file(dir, EVENTS_OLD_SUFFIX);
    ASSERT_EQ(json_array_size(old), 1);
    json_decref(old);
    /* The next rotation replaces the old file: two at most. */
    events_prefill(dir, EVENTS_MAX_BYTES);
    ASSERT_OK(events_emit(other, EVENTS_SPAWN, 1002, NULL));
    ASSERT_EQ(events_size(dir, EVENTS_OLD_SUFFIX), (off_t)EVENTS_MAX_BYTES);
    cur = read_events(dir);
    ASSERT_EQ(json_array_size(cur), 1);
    json_decref(cur);
    /* A file removed under a writer is made again. */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, EVENTS_FILE);
    ASSERT_EQ(unlink(path), 0);
    ASSERT_OK(events_emit(ev, EVENTS_EXIT, 1003, NULL));
    cur = read_events(dir);
    ASSERT_EQ(json_array_size(cur), 1);
    json_decref(cur);
    events_close(ev);
    events_close(other);
}

TEST(events_rotation_by_many_writers_at_once_loses_no_line)
{
    /* Room for about a third of the lines below before the cap: the
     * writers all cross it at about the same time, and exactly one
     * rotation must come of it. */
    enum { PROCS = 4, EACH = 300, PAYLOAD = 100 };
    const char *dir = test_tmpdir();
    events_prefill(dir, EVENTS_MAX_BYTES - PROCS * EACH * PAYLOAD / 3);
    events_writers(dir, PROCS, EACH, PAYLOAD);
    /* The old file is the prefilled one (a second rename would have put
     * the small new one there and lost it): every line is in one of the
     * two, whole and in each writer's order. */
    ASSERT_INT(events_size(dir, EVENTS_OLD_SUFFIX), >=,
               (off_t)EVENTS_MAX_BYTES);
    json_t *old = read_events_file(dir, EVENTS_OLD_SUFFIX);
    json_t *cur = read_events(dir);
    ASSERT_INT(json_array_size(cur), >, 0);
    ASSERT_EQ(json_array_size(old) + json_array_size(cur), PROCS * EACH);
    int next[PROCS] = {0};
    events_in_writer_order(old, PROCS, PAYLOAD, next);
    events_in_writer_order(cur, PROCS, PAYLOAD, next);
    json_decref(old);
    json_decref(cur);
}

TEST(events_are_json_lines_with_the_common_fields)
{
    events_t *ev;
    ASSERT_OK(events_open(test_tmpdir(), OWNER_A, &ev));
    ASSERT_OK(events_emit(ev, EVENTS_SPAWN, 1000,
                          json_pack("{s:i, s:s}", "pid", 77, "command",
                                    "echo \"hi\"\nthere")));
    ASSERT_OK(events_emit(ev, EVENTS_EXIT, 1000,
                          json_pack("{s:s, s:i, s:s}", "reason", "exit",
                                    "exit_code", 0, "type", "spoofed")));
    ASSERT_OK(events_emit(ev, EVENTS_RECONCILE, 0, NULL));
    ASSERT_EQ(events_emit(ev, EVENTS_CANCEL, 1, json_string("x")), -EINVAL);
    ASSERT_EQ(events_emit(ev, EVENTS_TYPE_COUNT, 1, NULL), -EINVAL);
    events_close(ev);
    events_close(NULL);

    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), EVENTS_FILE);
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    json_t *all = read_events(test_tmpdir());
    ASSERT_EQ(json_array_size(all), 3);
    json_t *e = json_array_get(all, 0);
    ASSERT_STR(json_string_value(json_object_get(e, "type")), "spawn");
    ASSERT_EQ(json_integer_value(json_object_get(e, "run")), 1000);
    ASSERT_STR(json_string_value(json_object_get(e, "owner")), OWNER_A);
    ASSERT_INT(json_integer_value(json_object_get(e, "ts")), >,
               1600000000000);
    ASSERT_EQ(json_integer_value(json_object_get(e, "pid")), 77);
    ASSERT_STR(json_string_value(json_object_get(e, "command")),
               "echo \"hi\"\nthere");
    e = json_array_get(all, 1);
    ASSERT_STR(json_string_value(json_object_get(e, "type")), "exit");
    ASSERT_STR(json_string_value(json_object_get(e, "reason")), "exit");
    e = json_array_get(all, 2);
    ASSERT_STR(json_string_value(json_object_get(e, "type")), "reconcile");
    ASSERT_EQ(json_integer_value(json_object_get(e, "run")), 0);
    json_decref(all);
    ASSERT_STR(events_type_name(EVENTS_LEASE_STEAL), "lease_steal");
    ASSERT_STR(events_type_name(EVENTS_STRAY), "stray");
    ASSERT_STR(events_type_name(EVENTS_TYPE_COUNT), "unknown");
}

TEST(events_output_heartbeat_at_most_once_a_second)
{
    events_t *ev;
    ASSERT_OK(events_open(test_tmpdir(), OWNER_A, &ev));
    events_heartbeat_t a = EVENTS_HEARTBEAT_INIT, b = EVENTS_HEARTBEAT_INIT;
    ASSERT_EQ(events_output(ev, &a, 1000, 10, 50000), 1);
    ASSERT_EQ(events_output(ev, &a, 1000, 20, 50010), 0);
    ASSERT_EQ(events_output(ev, &b, 1001, 5, 50020), 1); /* per run */
    ASSERT_EQ(events_output(ev, &a, 1000, 30, 50999), 0);
    ASSERT_EQ(events_output(ev, &a, 1000, 40, 51000), 1);
    ASSERT_EQ(events_output(ev, &a, 1000, 40, 51500), 0);
    ASSERT_EQ(events_output(ev, &a, 1000, 90, 52000), 1);
    events_close(ev);
    json_t *all = read_events(test_tmpdir());
    ASSERT_EQ(json_array_size(all), 4);
    static const long long want[][3] = {
        {1000, 10, 10}, {1001, 5, 5}, {1000, 40, 30}, {1000, 90, 50}};
    for (size_t i = 0; i < 4; i++) {
        json_t *e = json_array_get(all, i);
        ASSERT_STR(json_string_value(json_object_get(e, "type")), "output");
        ASSERT_EQ(json_integer_value(json_object_get(e, "run")), want[i][0]);
        ASSERT_EQ(json_integer_value(json_object_get(e, "bytes")),
                  want[i][1]);
        ASSERT_EQ(json_integer_value(json_object_get(e, "new_bytes")),
                  want[i][2]);
    }
    json_decref(all);
}

TEST(events_from_many_processes_never_interleave)
{
    enum { PROCS = 4, EACH = 300, PAYLOAD = 3000 };
    events_writers(test_tmpdir(), PROCS, EACH, PAYLOAD);
    json_t *all = read_events(test_tmpdir());
    ASSERT_EQ(json_array_size(all), PROCS * EACH);
    int next[PROCS] = {0};
    events_in_writer_order(all, PROCS, PAYLOAD, next);
    json_decref(all);
}

TEST(registry_bench_list_and_update_1000_runs_in_one_transaction)
{
    enum { RUNS = 1000 };
    registry_t *reg;
    ASSERT_OK(registry_open(test_tmpdir(), &reg));
    ASSERT_OK(registry_begin(reg));
    for (int i = 0; i < RUNS; i++) {
        run_record_t r;
        mkrun(&r, OWNER_A, "npm run build -- --watch");
        r.pid = 10000 + i;
        r.start_time = (uint64_t)i;
        r.log_path = strdup("/state/logs/x.log");
        r.env_names = strdup("PATH,HOME");
        ASSERT_OK(registry_run_insert(reg, &r));
        run_record_clear(&r);
    }
    ASSERT_OK(registry_commit(reg));

    /* Reconcile's shape: read every live record, decide, write each back,
     * all in one transaction. */
    uint64_t t0 = test_now_ms();
    ASSERT_OK(registry_begin(reg));
    run_record_t *v;
    size_t n;
    ASSERT_OK(registry_run_list(reg, false, &v, &n));
    ASSERT_EQ(n, RUNS);
    for (size_t i = 0; i < n; i++) {
        v[i].state = RUN_EXITED;
        v[i].reason = RUN_REASON_LOST;
        ASSERT_OK(registry_run_update(reg, &v[i]));
    }
    ASSERT_OK(registry_counter_add(reg, "run_exit_total{reason=\"lost\"}",
                                   (int64_t)n));
    ASSERT_OK(registry_commit(reg));
    uint64_t ms = test_now_ms() - t0;
    run_record_list_free(v, n);
    fprintf(stderr, "bench: list + update %d runs in one transaction: "
                    "%llu ms\n",
            RUNS, (unsigned long long)ms);
    ASSERT_INT(ms, <, 1000);
    ASSERT_OK(registry_run_list(reg, false, &v, &n));
    ASSERT_EQ(n, 0);
    run_record_list_free(v, n);
    registry_close(reg);
}
