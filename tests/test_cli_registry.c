/*
 * test_cli_registry.c — rein ps, rein logs and rein metrics, driving the
 * real binary against a registry populated through the C API in a private
 * REIN_STATE_DIR.  logs -f is driven without sleeps: each step waits for
 * the follower's output before making the next change.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "harness.h"
#include "supervise/registry.h"
#include "tutil.h"

#define OWNER_A "aaaaaaaa11111111aaaaaaaa11111111"
#define OWNER_B "bbbbbbbb22222222bbbbbbbb22222222"
#define CLI_MAX_ARGS 8
#define TPATH (PATH_MAX + 64)

/* The state directory of this test, exported for the rein children. */
static const char *state_dir(void)
{
    static char dir[PATH_MAX];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/state", test_tmpdir());
        setenv("REIN_STATE_DIR", dir, 1);
    }
    return dir;
}

/* Runs build/rein with args (NULL-terminated, fewer than CLI_MAX_ARGS);
 * stdout+stderr in out. */
static int rein_v(buf_t *out, const char *const *args)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rein", test_build_dir());
    const char *argv[CLI_MAX_ARGS] = {path};
    for (size_t i = 0; args[i]; i++) {
        ASSERT_TRUE(i + 2 < CLI_MAX_ARGS);
        argv[i + 1] = args[i];
    }
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = path;
    o.argv = argv;
    buf_reset(out);
    return tu_run(&o, out);
}

/* Runs build/rein with up to three args (NULL ends them). */
static int rein(buf_t *out, const char *a1, const char *a2, const char *a3)
{
    const char *args[] = {a1, a2, a3, NULL};
    return rein_v(out, args);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* Exit 2 and exactly one line of error. */
static void assert_usage_error(buf_t *out, int rc, const char *needle)
{
    ASSERT_EQ(rc, 2);
    ASSERT_EQ(count_lines(out->p), 1);
    ASSERT_CONTAINS(out->p, needle);
}

static int64_t add_run(registry_t *reg, const char *owner, int state,
                       const char *command, const char *log_path)
{
    run_record_t r;
    run_record_init(&r);
    snprintf(r.owner, sizeof r.owner, "%s", owner);
    snprintf(r.boot_id, sizeof r.boot_id, "boot");
    snprintf(r.containment, sizeof r.containment, "subreaper");
    r.state = state;
    r.pid = getpid();
    r.pgid = getpid();
    r.command = strdup(command);
    r.cwd = strdup("/work");
    r.log_path = log_path ? strdup(log_path) : NULL;
    r.env_names = strdup("PATH,TOKEN");
    if (state == RUN_EXITED) {
        r.reason = RUN_REASON_EXIT;
        r.exit_code = 3;
    }
    ASSERT_OK(registry_run_insert(reg, &r));
    run_record_clear(&r);
    return r.id;
}

static void populate(registry_t **reg)
{
    ASSERT_OK(registry_open(state_dir(), reg));
    owner_record_t o = {0};
    snprintf(o.id, sizeof o.id, "%s", OWNER_A);
    o.lease_expires_ms = 4102444800000;
    ASSERT_OK(registry_owner_add(*reg, &o));
    ASSERT_EQ(add_run(*reg, OWNER_A, RUN_RUNNING, "sleep 100\necho x", NULL),
              1000);
    ASSERT_EQ(add_run(*reg, OWNER_B, RUN_EXITING, "make -j8", NULL), 1001);
    ASSERT_EQ(add_run(*reg, OWNER_A, RUN_EXITED, "false", NULL), 1002);
}

TEST(cli_ps_lists_runs_of_every_owner)
{
    registry_t *reg;
    populate(&reg);
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein(&out, "ps", NULL, NULL), 0);
    ASSERT_EQ(count_lines(out.p), 3);
    ASSERT_CONTAINS(out.p, "ID ");
    ASSERT_CONTAINS(out.p, "COMMAND");
    ASSERT_CONTAINS(out.p, "\n1000 ");
    ASSERT_CONTAINS(out.p, "aaaaaaaa ");
    ASSERT_CONTAINS(out.p, "bbbbbbbb ");
    ASSERT_CONTAINS(out.p, "running");
    ASSERT_CONTAINS(out.p, "exiting");
    ASSERT_CONTAINS(out.p, "subreaper");
    ASSERT_CONTAINS(out.p, "sleep 100 echo x\n"); /* one line per run */
    ASSERT_TRUE(strstr(out.p, "1002") == NULL);

    ASSERT_EQ(rein(&out, "ps", "--all", NULL), 0);
    ASSERT_EQ(count_lines(out.p), 4);
    ASSERT_CONTAINS(out.p, "\n1002 ");
    ASSERT_CONTAINS(out.p, "exited (exit 3)");

    ASSERT_EQ(rein(&out, "ps", "--json", NULL), 0);
    json_error_t err;
    json_t *a = json_loads(out.p, 0, &err);
    ASSERT_TRUE(json_is_array(a));
    ASSERT_EQ(json_array_size(a), 2);
    json_t *r = json_array_get(a, 0);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 1000);
    ASSERT_EQ(json_integer_value(json_object_get(r, "session_id")), 1000);
    ASSERT_STR(json_string_value(json_object_get(r, "owner")), OWNER_A);
    ASSERT_EQ(json_integer_value(json_object_get(r, "lease_expires_ms")),
              4102444800000);
    ASSERT_STR(json_string_value(json_object_get(r, "state")), "running");
    ASSERT_TRUE(json_is_null(json_object_get(r, "reason")));
    ASSERT_TRUE(json_is_null(json_object_get(r, "exit_code")));
    ASSERT_EQ(json_integer_value(json_object_get(r, "pid")), getpid());
    ASSERT_STR(json_string_value(json_object_get(r, "containment")),
               "subreaper");
    ASSERT_STR(json_string_value(json_object_get(r, "command")),
               "sleep 100\necho x");
    ASSERT_STR(json_string_value(json_object_get(r, "cwd")), "/work");
    ASSERT_TRUE(json_is_integer(json_object_get(r, "age_ms")));
    ASSERT_TRUE(json_is_integer(json_object_get(r, "last_output_ms")));
    json_t *env = json_object_get(r, "env_names");
    ASSERT_EQ(json_array_size(env), 2);
    ASSERT_STR(json_string_value(json_array_get(env, 1)), "TOKEN");
    ASSERT_TRUE(json_is_false(json_object_get(r, "orphaned")));
    r = json_array_get(a, 1);
    ASSERT_TRUE(json_is_null(json_object_get(r, "lease_expires_ms")));
    /* No record of its owner: nothing says it died, and reconcile, which
     * only sees recorded owners, would not end it. */
    ASSERT_TRUE(json_is_false(json_object_get(r, "orphaned")));
    json_decref(a);

    ASSERT_EQ(rein(&out, "ps", "--json", "--all"), 0);
    a = json_loads(out.p, 0, &err);
    ASSERT_EQ(json_array_size(a), 3);
    r = json_array_get(a, 2);
    ASSERT_STR(json_string_value(json_object_get(r, "state")), "exited");
    ASSERT_STR(json_string_value(json_object_get(r, "reason")), "exit");
    ASSERT_EQ(json_integer_value(json_object_get(r, "exit_code")), 3);
    json_decref(a);

    /* The widest state sets its column: the columns after it still line
     * up under their headers ("exited (no-output-timeout)" pushed them
     * right when the column was a fixed 18 wide). */
    int64_t q = add_run(reg, OWNER_A, RUN_EXITED, "quiet", NULL);
    run_record_t rec;
    ASSERT_OK(registry_run_get(reg, q, &rec));
    rec.reason = RUN_REASON_NO_OUTPUT_TIMEOUT;
    ASSERT_OK(registry_run_update(reg, &rec));
    run_record_clear(&rec);
    ASSERT_EQ(rein(&out, "ps", "--all", NULL), 0);
    ASSERT_CONTAINS(out.p, "exited (no-output-timeout) ");
    const char *hdr_cmd = strstr(out.p, "COMMAND");
    const char *quiet = strstr(out.p, "quiet\n");
    const char *first = strstr(out.p, "sleep 100 echo x\n");
    ASSERT_TRUE(hdr_cmd && quiet && first);
    size_t col = (size_t)(hdr_cmd - out.p);
    size_t line2 = (size_t)(strchr(out.p, '\n') + 1 - out.p);
    ASSERT_EQ((size_t)(first - out.p) - line2, col);
    const char *ql = quiet;
    while (ql > out.p && ql[-1] != '\n')
        ql--;
    ASSERT_EQ((size_t)(quiet - ql), col);

    assert_usage_error(&out, rein(&out, "ps", "--bogus", NULL), "--bogus");
    assert_usage_error(&out, rein(&out, "ps", "--json", "x"), "'x'");
    registry_close(reg);
    buf_free(&out);
}

/* A stand-in owner: a real process holding an owner's lock file, as a
 * rein does, until the test kills it by the pid it holds.  Its record
 * names it as rein's own do (boot id, pid, start time, lock file), with a
 * lease far ahead, so only its process and its lock can tell it died. */
static pid_t owner_start(registry_t *reg, const char *id, const char *lock)
{
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 ||
            write(p[1], "k", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    ASSERT_EQ(read(p[0], &c, 1), 1); /* the lock is held */
    close(p[0]);
    owner_record_t o = {0};
    snprintf(o.id, sizeof o.id, "%s", id);
    o.pid = pid;
    ASSERT_OK(procfs_start_time(pid, &o.start_time));
    ASSERT_OK(procfs_boot_id(o.boot_id));
    o.lock_path = (char *)lock;
    o.lease_expires_ms = 4102444800000;
    ASSERT_OK(registry_owner_add(reg, &o));
    return pid;
}

static void owner_kill(pid_t pid)
{
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    ASSERT_EQ(waitpid(pid, NULL, 0), pid);
}

/* The JSON object of run id in `rein ps --json --all`. */
static json_t *ps_run(buf_t *out, int64_t id)
{
    ASSERT_EQ(rein(out, "ps", "--json", "--all"), 0);
    json_error_t err;
    json_t *a = json_loads(out->p, 0, &err), *v, *found = NULL;
    ASSERT_TRUE(json_is_array(a));
    size_t i;
    json_array_foreach(a, i, v)
    {
        if (json_integer_value(json_object_get(v, "id")) == id)
            found = json_incref(v);
    }
    json_decref(a);
    ASSERT_TRUE(found != NULL);
    return found;
}

static bool ps_orphaned(buf_t *out, int64_t id)
{
    json_t *r = ps_run(out, id);
    ASSERT_STR(json_string_value(json_object_get(r, "state")), "running");
    json_t *o = json_object_get(r, "orphaned");
    ASSERT_TRUE(json_is_boolean(o));
    bool orphaned = json_is_true(o);
    json_decref(r);
    return orphaned;
}

/* What became of the processes a run left running, as `rein ps` shows
 * it after the run: real runs through `rein run` (the terminal's hangup
 * kills a background job that does not ignore SIGHUP; rein ends one that
 * does), and a row with survivors, which no process here could leave. */
TEST(cli_ps_says_what_became_of_what_a_run_left_running)
{
    state_dir();
    buf_t out = BUF_INIT;
    const char *hung[] = {"run", "--", "sh", "-c",
                          "sleep 30 & echo started", NULL};
    ASSERT_EQ(rein_v(&out, hung), 0);
    ASSERT_CONTAINS(out.p, "killed by the terminal's hangup");
    const char *ended[] = {"run", "--", "sh", "-c",
                           "trap '' HUP; sleep 30 & echo started", NULL};
    ASSERT_EQ(rein_v(&out, ended), 0);

    json_t *r = ps_run(&out, REGISTRY_FIRST_RUN_ID);
    ASSERT_TRUE(json_is_false(json_object_get(r, "background_ended")));
    ASSERT_EQ(json_integer_value(json_object_get(r, "background_hung_up")),
              1);
    json_decref(r);
    r = ps_run(&out, REGISTRY_FIRST_RUN_ID + 1);
    ASSERT_TRUE(json_is_true(json_object_get(r, "background_ended")));
    ASSERT_EQ(json_integer_value(json_object_get(r, "background_hung_up")),
              0);
    json_decref(r);

    registry_t *reg;
    ASSERT_OK(registry_open(state_dir(), &reg));
    int64_t id = add_run(reg, OWNER_A, RUN_EXITED, "left", NULL);
    run_record_t rec;
    ASSERT_OK(registry_run_get(reg, id, &rec));
    rec.background_ended = true;
    rec.background_hung_up = 2;
    rec.cleanup_incomplete = true;
    rec.survivors = strdup("4242:100,4243:101,4244:102");
    ASSERT_OK(registry_run_update(reg, &rec));
    run_record_clear(&rec);
    registry_close(reg);

    ASSERT_EQ(rein(&out, "ps", "--all", NULL), 0);
    ASSERT_CONTAINS(out.p, "exited (exit 0; background: 1 hung up) ");
    ASSERT_CONTAINS(out.p, "exited (exit 0; background ended) ");
    ASSERT_CONTAINS(out.p, "exited (exit 3; background ended, 2 hung up; "
                           "3 survived cleanup) ");
    buf_free(&out);
}

TEST(cli_ps_shows_the_run_of_a_dead_owner_as_orphaned)
{
    registry_t *reg;
    ASSERT_OK(registry_open(state_dir(), &reg));
    char lock[TPATH + 16];
    snprintf(lock, sizeof lock, "%s/owner-a.lock", state_dir());
    pid_t owner = owner_start(reg, OWNER_A, lock);
    int64_t id = add_run(reg, OWNER_A, RUN_RUNNING, "make -j8", NULL);
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein(&out, "ps", NULL, NULL), 0);
    ASSERT_CONTAINS(out.p, " running ");
    ASSERT_TRUE(strstr(out.p, "orphaned") == NULL);
    ASSERT_FALSE(ps_orphaned(&out, id));

    /* Killed before it could record the end: the registry still says
     * running, and only the owner's liveness tells otherwise. */
    owner_kill(owner);
    ASSERT_EQ(rein(&out, "ps", NULL, NULL), 0);
    ASSERT_CONTAINS(out.p, " orphaned ");
    ASSERT_CONTAINS(out.p, "`rein reconcile` ends it\n");
    ASSERT_TRUE(ps_orphaned(&out, id));
    /* An exited run is never orphaned: its record is final. */
    int64_t done = add_run(reg, OWNER_A, RUN_EXITED, "true", NULL);
    json_t *r = ps_run(&out, done);
    ASSERT_TRUE(json_is_false(json_object_get(r, "orphaned")));
    json_decref(r);
    registry_close(reg);
    buf_free(&out);
}

/* Without a lock file to look at, and a lease far ahead, the owner's
 * process tells, named by pid and start time: a live process with its pid
 * but another start time (a reused pid) is not the owner. */
TEST(cli_ps_owner_is_its_pid_and_start_time_never_its_pid_alone)
{
    registry_t *reg;
    ASSERT_OK(registry_open(state_dir(), &reg));
    uint64_t start;
    ASSERT_OK(procfs_start_time(getpid(), &start));
    owner_record_t o = {0};
    snprintf(o.id, sizeof o.id, "%s", OWNER_A);
    o.pid = getpid(); /* alive, but started at another time */
    o.start_time = start + 1;
    ASSERT_OK(procfs_boot_id(o.boot_id));
    o.lease_expires_ms = 4102444800000;
    ASSERT_OK(registry_owner_add(reg, &o));
    snprintf(o.id, sizeof o.id, "%s", OWNER_B);
    o.start_time = start; /* this very process */
    ASSERT_OK(registry_owner_add(reg, &o));
    int64_t reused = add_run(reg, OWNER_A, RUN_RUNNING, "a", NULL);
    int64_t same = add_run(reg, OWNER_B, RUN_RUNNING, "b", NULL);
    buf_t out = BUF_INIT;
    ASSERT_TRUE(ps_orphaned(&out, reused));
    ASSERT_FALSE(ps_orphaned(&out, same));
    registry_close(reg);
    buf_free(&out);
}

TEST(cli_ps_and_metrics_on_a_fresh_state_dir)
{
    state_dir();
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein(&out, "ps", NULL, NULL), 0);
    ASSERT_EQ(count_lines(out.p), 1);
    ASSERT_EQ(rein(&out, "ps", "--json", NULL), 0);
    ASSERT_STR(out.p, "[]\n");
    ASSERT_EQ(rein(&out, "metrics", NULL, NULL), 0);
    ASSERT_CONTAINS(out.p, "run_spawn_total 0\n");
    buf_free(&out);
}

TEST(cli_metrics_prints_the_counters)
{
    registry_t *reg;
    ASSERT_OK(registry_open(state_dir(), &reg));
    ASSERT_OK(registry_counter_add(reg, "run_spawn_total", 5));
    ASSERT_OK(registry_counter_add(reg, "run_timeout_total{type=\"overall\"}",
                                   2));
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein(&out, "metrics", NULL, NULL), 0);
    ASSERT_CONTAINS(out.p, "# TYPE run_spawn_total counter\n");
    ASSERT_CONTAINS(out.p, "\nrun_spawn_total 5\n");
    ASSERT_CONTAINS(out.p, "\nrun_timeout_total{type=\"overall\"} 2\n");
    ASSERT_CONTAINS(out.p, "\nrun_lease_steal_total 0\n");
    assert_usage_error(&out, rein(&out, "metrics", "--json", NULL),
                       "--json");
    registry_close(reg);
    buf_free(&out);
}

static void write_file(const char *path, const char *text, bool append)
{
    int fd = open(path,
                  O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC),
                  0600);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

TEST(cli_logs_prints_a_runs_log_and_rejects_bad_ids)
{
    registry_t *reg;
    ASSERT_OK(registry_open(state_dir(), &reg));
    char log[TPATH];
    snprintf(log, sizeof log, "%s/1000.log", state_dir());
    write_file(log, "line one\nline two\n", false);
    ASSERT_EQ(add_run(reg, OWNER_A, RUN_EXITED, "echo", log), 1000);
    ASSERT_EQ(add_run(reg, OWNER_A, RUN_EXITED, "echo", NULL), 1001);
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein(&out, "logs", "1000", NULL), 0);
    ASSERT_STR(out.p, "line one\nline two\n");
    ASSERT_EQ(rein(&out, "logs", "1000", "-f"), 0); /* exited: prints, ends */
    ASSERT_STR(out.p, "line one\nline two\n");

    assert_usage_error(&out, rein(&out, "logs", "4242", NULL), "no run 4242");
    assert_usage_error(&out, rein(&out, "logs", "abc", NULL), "'abc'");
    assert_usage_error(&out, rein(&out, "logs", "-5", NULL), "'-5'");
    assert_usage_error(&out, rein(&out, "logs", "1000", "--bogus"),
                       "--bogus");
    assert_usage_error(&out, rein(&out, "logs", NULL, NULL), "usage");
    assert_usage_error(&out, rein(&out, "logs", "1000", "1001"), "one run");
    ASSERT_EQ(rein(&out, "logs", "1001", NULL), 125);
    ASSERT_EQ(count_lines(out.p), 1);
    ASSERT_CONTAINS(out.p, "has no log");

    /* The registry counted more output than the file holds (cut short,
     * truncated): what is there is printed, and the shortfall named. */
    run_record_t r;
    ASSERT_OK(registry_run_get(reg, 1000, &r));
    r.bytes = 40;
    ASSERT_OK(registry_run_update(reg, &r));
    run_record_clear(&r);
    for (int follow = 0; follow < 2; follow++) {
        ASSERT_EQ(rein(&out, "logs", "1000", follow ? "-f" : NULL), 125);
        ASSERT_CONTAINS(out.p, "line one\nline two\nrein logs: run 1000: ");
        ASSERT_CONTAINS(out.p, "1000.log holds 18 of the 40 bytes");
        ASSERT_EQ(count_lines(out.p), 3);
    }
    /* Deleted: following it fails as reading it does, never a silent 0. */
    ASSERT_EQ(unlink(log), 0);
    for (int follow = 0; follow < 2; follow++) {
        ASSERT_EQ(rein(&out, "logs", "1000", follow ? "-f" : NULL), 125);
        ASSERT_EQ(count_lines(out.p), 1);
        ASSERT_CONTAINS(out.p, "1000.log: No such file or directory");
    }
    registry_close(reg);
    buf_free(&out);
}

/* A log past its size cap reads as zeros where the cap punched it out:
 * those are no output, so they are skipped and the range named. */
TEST(cli_logs_skips_the_range_a_size_cap_dropped)
{
    registry_t *reg;
    ASSERT_OK(registry_open(state_dir(), &reg));
    char log[TPATH], note[TPATH + 16];
    snprintf(log, sizeof log, "%s/1000.log", state_dir());
    snprintf(note, sizeof note, "%s.dropped", log);
    int fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, "head\n", 5), 5);
    ASSERT_EQ(pwrite(fd, "tail\n", 5, 1005), 5); /* zeros in between */
    close(fd);
    write_file(note, "dropped 5-1005\n", false);
    ASSERT_EQ(add_run(reg, OWNER_A, RUN_EXITED, "flood", log), 1000);
    buf_t out = BUF_INIT;
    for (int follow = 0; follow < 2; follow++) {
        ASSERT_EQ(rein(&out, "logs", "1000", follow ? "-f" : NULL), 0);
        ASSERT_EQ(memchr(out.p, 0, out.len), NULL);
        ASSERT_CONTAINS(out.p, "head\n");
        ASSERT_CONTAINS(out.p, "rein logs: run 1000: bytes 5-1005 were "
                               "dropped when the log passed its size cap\n");
        ASSERT_CONTAINS(out.p, "tail\n");
        ASSERT_EQ(out.len, strlen(out.p));
        ASSERT_EQ(count_lines(out.p), 3);
    }
    registry_close(reg);
    buf_free(&out);
}

/* Reads from fd until out ends with want (the follower's output so far). */
static void read_until(int fd, buf_t *out, const char *want)
{
    size_t wl = strlen(want);
    while (out->len < wl || strcmp(out->p + out->len - wl, want) != 0) {
        char tmp[4096];
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n <= 0)
            test_fail(__FILE__, __LINE__, "follower output ended at \"%s\"",
                      out->p ? out->p : "");
        buf_append(out, tmp, (size_t)n);
    }
}

TEST(cli_logs_follow_until_the_run_exits)
{
    registry_t *reg;
    ASSERT_OK(registry_open(state_dir(), &reg));
    char logdir[TPATH], log[TPATH + 16];
    snprintf(logdir, sizeof logdir, "%s/logs", state_dir());
    ASSERT_EQ(mkdir(logdir, 0700), 0);
    snprintf(log, sizeof log, "%s/1000.log", logdir);
    /* The run's owner is alive: this process, holding its lock. */
    char lock[TPATH + 16];
    snprintf(lock, sizeof lock, "%s/owner-a.lock", state_dir());
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_TRUE(lfd >= 0);
    ASSERT_OK(flock(lfd, LOCK_EX | LOCK_NB));
    owner_record_t ow = {0};
    snprintf(ow.id, sizeof ow.id, "%s", OWNER_A);
    ow.pid = getpid();
    ow.lock_path = lock;
    ASSERT_OK(registry_owner_add(reg, &ow));
    /* The log does not exist yet: the follower must wait for it. */
    int64_t id = add_run(reg, OWNER_A, RUN_RUNNING, "build", log);

    const char *args[] = {"logs", "1000", "-f", NULL};
    pid_t pid;
    int fd = tu_rein_start(args, &pid);

    buf_t out = BUF_INIT;
    write_file(log, "first\n", false);
    read_until(fd, &out, "first\n");
    write_file(log, "second\n", true);
    read_until(fd, &out, "second\n");
    /* An unrelated registry write wakes it; it must keep following. */
    ASSERT_OK(registry_counter_add(reg, "run_spawn_total", 1));
    write_file(log, "third\n", true);
    read_until(fd, &out, "third\n");

    /* Cut by someone: new output lands at the new end, before where the
     * follower was; it says so and follows from the start again. */
    ASSERT_EQ(truncate(log, 0), 0);
    read_until(fd, &out, "truncated from 19 to 0 bytes; following from "
                         "its start\n");

    /* The last bytes, then the exit: it prints them and ends by itself. */
    write_file(log, "last\n", true);
    run_record_t r;
    ASSERT_OK(registry_run_get(reg, id, &r));
    r.state = RUN_EXITED;
    r.reason = RUN_REASON_EXIT;
    r.exit_code = 0;
    ASSERT_OK(registry_run_update(reg, &r));
    run_record_clear(&r);
    ASSERT_OK(tu_read_all(fd, &out));
    close(fd);
    int code;
    ASSERT_OK(spawn_reap(pid, -1, &code));
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out.p, "first\nsecond\nthird\nrein logs: ");
    ASSERT_CONTAINS(out.p, "its start\nlast\n");
    close(lfd);
    registry_close(reg);
    buf_free(&out);
}

TEST(cli_ps_reads_a_registry_on_a_read_only_mount)
{
    tu_private_mounts();
    char rw[TPATH];
    snprintf(rw, sizeof rw, "%s/rw", test_tmpdir());
    registry_t *reg;
    ASSERT_OK(registry_open(rw, &reg));
    ASSERT_EQ(add_run(reg, OWNER_A, RUN_RUNNING, "served", NULL), 1000);
    registry_close(reg); /* no writer left: no -wal, no -shm */
    const char *ro = state_dir();
    ASSERT_EQ(mkdir(ro, 0700), 0);
    ASSERT_EQ(mount(rw, ro, "none", MS_BIND, NULL), 0);
    ASSERT_EQ(mount("none", ro, "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL),
              0);
    buf_t out = BUF_INIT;
    int rc = rein(&out, "ps", NULL, NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "rein ps: %d: %s", rc, out.p);
    ASSERT_CONTAINS(out.p, "served");

    /* With a writer alive on the writable path, too. */
    ASSERT_OK(registry_open(rw, &reg));
    ASSERT_EQ(add_run(reg, OWNER_A, RUN_RUNNING, "second", NULL), 1001);
    rc = rein(&out, "ps", NULL, NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "rein ps: %d: %s", rc, out.p);
    ASSERT_CONTAINS(out.p, "second");
    registry_close(reg);
    buf_free(&out);
}
