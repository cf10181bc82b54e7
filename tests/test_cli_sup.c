/*
 * test_cli_sup.c — `rein kill` and `rein reconcile` against a live owner in
 * another process, a dead owner's run, and bad input.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "cli/cli.h"
#include "harness.h"
#include "supervise/registry.h"
#include "tutil.h"

/* A lease that runs out in 2100: an owner planted with it is alive while
 * its process is. */
#define LEASE_AHEAD_MS 4102444800000

static void use_state_dir(char *dir, size_t size)
{
    snprintf(dir, size, "%s/state", test_tmpdir());
    setenv("REIN_STATE_DIR", dir, 1);
}

static int rein(const char *const *args, buf_t *out)
{
    char path[PATH_MAX];
    const char *argv[8] = {path};
    snprintf(path, sizeof path, "%s/rein", test_build_dir());
    for (size_t i = 0; i < 6 && args[i]; i++)
        argv[i + 1] = args[i];
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = path;
    o.argv = argv;
    return tu_run(&o, out);
}

struct owner_report {
    rein_reason_t reason;
    int exits;
    bool ready;        /* the run said so: its TERM trap is set */
    const char *word;  /* what it says when it is */
    buf_t out;         /* all it printed */
};

static void owner_output(rein_sup_t *s, int64_t id, const void *data,
                         size_t len, void *ud)
{
    (void)s;
    (void)id;
    struct owner_report *r = ud;
    buf_append(&r->out, data, len);
    if (memmem(r->out.p, r->out.len, r->word, strlen(r->word)))
        r->ready = true;
}

static void owner_exit(rein_sup_t *s, int64_t id, const rein_run_info_t *i,
                       void *ud)
{
    (void)s;
    (void)id;
    struct owner_report *r = ud;
    r->reason = i->reason;
    r->exits++;
}

/* An owner in a child process: spawns argv, reports its id and pid on fd
 * once the run printed `word` (set up: a signal before would find it
 * unready), drives the run to its end, writes all the run printed on fd,
 * then exits with the run's reason as status. */
static void owner_child(int fd, const char *const *argv, const char *word)
{
    rein_sup_t *s;
    rein_sup_opts_t so = {.no_reconcile = true};
    if (rein_sup_open(&so, &s) < 0)
        _exit(100);
    struct owner_report rep = {REIN_REASON_NONE, 0, false, word, BUF_INIT};
    rein_run_opts_t ro = {.argv = argv, .grace_ms = -1,
                          .on_output = owner_output, .on_exit = owner_exit,
                          .data = &rep};
    int64_t id;
    if (rein_sup_spawn(s, &ro, &id) < 0)
        _exit(101);
    while (!rep.ready && !rep.exits)
        rein_sup_run_once(s, 100);
    rein_run_info_t info;
    rein_sup_info(s, id, &info);
    dprintf(fd, "%lld %d\n", (long long)id, (int)info.pid);
    while (!rep.exits)
        rein_sup_run_once(s, 100);
    if (rep.out.len && write(fd, rep.out.p, rep.out.len) < 0)
        _exit(102);
    close(fd);
    rein_sup_close(s);
    _exit((int)rep.reason);
}

/* Starts owner_child in a child process; its pid, and in *id and *pid
 * the run's, and in *fd the pipe the rest of its report comes on. */
static pid_t owner_start(const char *const *argv, const char *word,
                         long long *id, int *pid, int *fd)
{
    int p[2];
    ASSERT_OK(pipe(p));
    fflush(NULL);
    pid_t owner = fork();
    if (owner == 0) {
        close(p[0]);
        owner_child(p[1], argv, word);
    }
    close(p[1]);
    /* The first line, a byte at a time: the rest is the run's output. */
    char line[64] = {0};
    for (size_t n = 0; n + 1 < sizeof line; n++) {
        ASSERT_EQ(read(p[0], &line[n], 1), 1);
        if (line[n] == '\n')
            break;
    }
    ASSERT_EQ(sscanf(line, "%lld %d", id, pid), 2);
    *fd = p[0];
    return owner;
}

/* Appends the rest of what child pid writes on fd to out, closes fd,
 * reaps the child and returns its exit status. */
static int child_finish(pid_t pid, int fd, buf_t *out)
{
    ASSERT_OK(tu_read_all(fd, out));
    close(fd);
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* Reads the rest of owner's report on fd (what its run printed) into
 * out, closes fd, reaps the owner and returns the reason it exited with
 * (the run's). */
static int owner_end(pid_t owner, int fd, buf_t *out)
{
    buf_reset(out);
    return child_finish(owner, fd, out);
}

TEST_T(cli_kill_ends_a_live_owners_run_with_escalation, 60)
{
    char dir[PATH_MAX];
    use_state_dir(dir, sizeof dir);
    const char *argv[] = {"/bin/sh", "-c",
                          "trap '' TERM; echo ready; sleep 60 & wait", NULL};
    long long id;
    int pid, fd;
    pid_t owner = owner_start(argv, "ready", &id, &pid, &fd);
    uint64_t pid_start;
    ASSERT_OK(procfs_start_time(pid, &pid_start)); /* identity, not pid */
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", id);
    buf_t out = BUF_INIT;
    const char *args[] = {"kill", ids, "--grace-ms", "200", NULL};
    uint64_t t0 = test_now_ms();
    ASSERT_EQ(rein(args, &out), 0);
    ASSERT_INT(test_now_ms() - t0, >=, 200);
    ASSERT_CONTAINS(out.p, "SIGTERM, then SIGKILL");
    ASSERT_FALSE(procfs_alive(pid, pid_start));
    /* The owner saw it. */
    ASSERT_EQ(owner_end(owner, fd, &out), REIN_REASON_SIGNAL);
    ASSERT_STR(out.p, "ready\n");
    /* Again: the run is over now. */
    buf_reset(&out);
    ASSERT_EQ(rein(args, &out), 0);
    ASSERT_CONTAINS(out.p, "already exited");
    buf_free(&out);
}

/* rein kill sends each process of the run its signal once, though its
 * group, cgroup and tree all reach it (a second TERM can cut a shell's
 * EXIT trap short): proc_helper sig-count counts a real-time signal, one
 * queued per send; the root and its child share the leader's group, the
 * loner has its own.  They exit once counted, within the grace. */
TEST_T(cli_kill_signals_each_process_once, 60)
{
    char dir[PATH_MAX], helper[PATH_MAX], num[16], ids[32];
    use_state_dir(dir, sizeof dir);
    snprintf(helper, sizeof helper, "%s/proc_helper", test_bin_dir());
    snprintf(num, sizeof num, "%d", SIGRTMIN + 2);
    const char *argv[] = {helper, "sig-count", num, NULL};
    long long id;
    int pid, fd;
    pid_t owner = owner_start(argv, "ready root", &id, &pid, &fd);
    snprintf(ids, sizeof ids, "%lld", id);
    buf_t out = BUF_INIT;
    const char *args[] = {"kill", ids, "--signal", num, "--grace-ms",
                          "30000", NULL};
    ASSERT_EQ(rein(args, &out), 0);
    /* It ended by itself once counted. */
    ASSERT_EQ(owner_end(owner, fd, &out), REIN_REASON_EXIT);
    ASSERT_CONTAINS(out.p, "root got 1\n");
    ASSERT_CONTAINS(out.p, "child got 1\n");
    ASSERT_CONTAINS(out.p, "loner got 1\n");
    buf_free(&out);
}

TEST(cli_kill_bad_input_is_one_line_and_exit_2)
{
    char dir[PATH_MAX];
    use_state_dir(dir, sizeof dir);
    static const char *const cases[][4] = {
        {"kill", NULL},
        {"kill", "abc", NULL},
        {"kill", "424242", NULL},
        {"kill", "1000", "--signal", "SIGNOPE"},
        {"kill", "1000", "--grace-ms", "-5"},
        {"kill", "1000", "--bogus", NULL},
        {"kill", "1000", "--grace-ms", NULL},
        {"reconcile", "extra", NULL},
        /* A run id is written one way, as rein logs takes it too. */
        {"kill", "01000", NULL},
        {"kill", " 1000", NULL},
        {"kill", "99999999999999999999", NULL},
    };
    /* What each line must name. */
    static const char *const says[] = {
        "which run?", "'abc' is not a run id", "no run with id 424242",
        "unknown signal 'SIGNOPE'", "not '-5'", "unknown option '--bogus'",
        "--grace-ms needs a value", "unexpected argument 'extra'",
        "'01000' is not a run id", "' 1000' is not a run id",
        "'99999999999999999999' is not a run id",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf_t out = BUF_INIT;
        const char *args[5] = {cases[i][0], cases[i][1], cases[i][2],
                               cases[i][3], NULL};
        ASSERT_EQ(rein(args, &out), 2);
        ASSERT_TRUE(out.p != NULL);
        ASSERT_EQ(strchr(out.p, '\n'), out.p + out.len - 1); /* one line */
        ASSERT_CONTAINS(out.p, says[i]);
        buf_free(&out);
    }
}

/* The owner is killed before it records its run's end: rein kill hands
 * the run to reconciliation, and says how the registry now records it
 * ended.  Its owner has no lock file, and a lease far ahead: only its
 * process, by pid and start time, tells it is gone. */
TEST(cli_kill_of_an_orphaned_run_reconciles_and_says_how_it_ended)
{
    char dir[PATH_MAX];
    use_state_dir(dir, sizeof dir);
    char boot[PROCFS_BOOT_ID_LEN], owner_id[REGISTRY_OWNER_ID_LEN];
    ASSERT_OK(procfs_boot_id(boot));
    snprintf(owner_id, sizeof owner_id, "%032d", 8);
    int owner_fd, run_fd;
    uint64_t owner_start, run_start;
    pid_t owner = tu_sleeper_timed(&owner_fd, &owner_start);
    pid_t run = tu_sleeper_timed(&run_fd, &run_start);
    tu_plant_t p = {owner_id, boot, owner, owner_start, LEASE_AHEAD_MS,
                    run, run_start, NULL, 0};
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)tu_plant_run(dir, &p));
    tu_sleeper_stop(owner, owner_fd);

    buf_t out = BUF_INIT;
    const char *args[] = {"kill", ids, NULL};
    ASSERT_EQ(rein(args, &out), 0);
    ASSERT_CONTAINS(out.p, "its owner is gone; reconciled: orphan-reaped");
    ASSERT_FALSE(procfs_alive(run, run_start));
    buf_free(&out);
    tu_sleeper_stop(run, run_fd);
}

/* Deletes owner id's row, as if it had never been recorded. */
static void forget_owner(const char *dir, const char *id)
{
    char db[PATH_MAX + 32], sql[128];
    snprintf(db, sizeof db, "%s/%s", dir, REGISTRY_FILE);
    snprintf(sql, sizeof sql, "DELETE FROM owners WHERE id = '%s'", id);
    sqlite3 *raw;
    ASSERT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, sql, NULL, NULL, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_changes(raw), 1);
    sqlite3_close(raw);
}

/* Sets run id's record: state, and the process it names (0: none). */
static void set_run(const char *dir, int64_t id, int state, pid_t pid,
                    uint64_t start)
{
    registry_t *reg;
    run_record_t r;
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_run_get(reg, id, &r));
    r.state = state;
    r.pid = r.pgid = r.sid = pid;
    r.start_time = start;
    ASSERT_OK(registry_run_update(reg, &r));
    run_record_clear(&r);
    registry_close(reg);
}

/* A live owner's `starting` run has no process on record: rein kill says
 * so and waits for the record (the owner's commit after its spawn), then
 * kills what it names; a record that never comes ends the wait at
 * CLI_KILL_STARTING_WAIT_MS, nothing signalled; an owner that dies
 * meanwhile hands the run to reconciliation; one the registry no longer
 * knows leaves nothing to find (exit 125, nothing signalled). */
TEST_T(cli_kill_of_a_starting_run_waits_for_its_record, 60)
{
    char dir[PATH_MAX];
    use_state_dir(dir, sizeof dir);
    char boot[PROCFS_BOOT_ID_LEN], owner_id[REGISTRY_OWNER_ID_LEN], ids[32];
    ASSERT_OK(procfs_boot_id(boot));
    int owner_fd, run_fd;
    uint64_t owner_start, run_start;
    pid_t owner = tu_sleeper_timed(&owner_fd, &owner_start);
    pid_t run = tu_sleeper_timed(&run_fd, &run_start);
    buf_t out = BUF_INIT;
    for (int k = 0; k < 4; k++) {
        snprintf(owner_id, sizeof owner_id, "%032d", 20 + k);
        /* Lease far ahead, and its process alive: a live owner. */
        tu_plant_t p = {owner_id, boot, owner, owner_start, LEASE_AHEAD_MS,
                        run, run_start, NULL, 0};
        int64_t id = tu_plant_run(dir, &p);
        set_run(dir, id, REIN_RUN_STARTING, 0, 0);
        snprintf(ids, sizeof ids, "%lld", (long long)id);
        if (k == 3) {
            forget_owner(dir, owner_id);
            buf_reset(&out);
            const char *args[] = {"kill", ids, NULL};
            ASSERT_EQ(rein(args, &out), 125);
            ASSERT_CONTAINS(out.p, "by an owner the registry does not know");
            continue;
        }
        pid_t kp;
        const char *kill_args[] = {"kill", ids, NULL};
        int fd = tu_rein_start(kill_args, &kp);
        char line[256];
        tu_read_line(fd, line, sizeof line);
        ASSERT_CONTAINS(line, "is starting; waiting for its owner");
        buf_reset(&out);
        if (k == 0) {
            /* The owner's commit comes: the run it names is killed. */
            set_run(dir, id, REIN_RUN_RUNNING, run, run_start);
            ASSERT_EQ(child_finish(kp, fd, &out), 0);
            ASSERT_CONTAINS(out.p, "SIGTERM");
            ASSERT_FALSE(procfs_alive(run, run_start));
            tu_sleeper_stop(run, run_fd);
        } else if (k == 1) {
            /* It never comes. */
            uint64_t t0 = test_now_ms();
            ASSERT_EQ(child_finish(kp, fd, &out), 125);
            ASSERT_INT(test_now_ms() - t0, >=,
                       CLI_KILL_STARTING_WAIT_MS - 100);
            ASSERT_CONTAINS(out.p, "is still starting after");
            ASSERT_CONTAINS(out.p, "nothing was signalled");
            ASSERT_TRUE(procfs_alive(owner, owner_start));
        } else {
            /* The owner dies: reconcile finds no leaf, and records the
             * run lost. */
            tu_sleeper_stop(owner, owner_fd);
            ASSERT_EQ(child_finish(kp, fd, &out), 0);
            ASSERT_CONTAINS(out.p, "its owner is gone; reconciled: lost");
        }
    }
    buf_free(&out);
}

/* A state directory that cannot be made is named in the one line. */
TEST(cli_unusable_state_dir_is_named_and_exit_125)
{
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/a-file", test_tmpdir());
    FILE *f = fopen(file, "w");
    ASSERT_TRUE(f != NULL);
    fclose(f);
    setenv("REIN_STATE_DIR", file, 1);
    static const char *const cases[][3] = {
        {"ps", NULL}, {"logs", "1000", NULL}, {"metrics", NULL},
        {"kill", "1000", NULL}, {"reconcile", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf_t out = BUF_INIT;
        ASSERT_EQ(rein(cases[i], &out), 125);
        ASSERT_EQ(strchr(out.p, '\n'), out.p + out.len - 1); /* one line */
        ASSERT_CONTAINS(out.p, "state directory ");
        ASSERT_CONTAINS(out.p, file);
        ASSERT_CONTAINS(out.p, ": Not a directory");
        buf_free(&out);
    }
}

TEST(cli_reconcile_marks_a_foreign_boot_lost)
{
    char dir[PATH_MAX];
    use_state_dir(dir, sizeof dir);
    char owner_id[REGISTRY_OWNER_ID_LEN];
    snprintf(owner_id, sizeof owner_id, "%032d", 7);
    /* The run would be us: it must not be touched. */
    tu_plant_t p = {owner_id, "11111111-1111-1111-1111-111111111111", 1, 0,
                    1, getpid(), 0, NULL, 0};
    tu_plant_run(dir, &p);
    buf_t out = BUF_INIT;
    const char *args[] = {"reconcile", NULL};
    ASSERT_EQ(rein(args, &out), 0);
    ASSERT_CONTAINS(out.p, "lost 1");
    buf_free(&out); /* and we are still here */
}
