/*
 * test_reconcile.c — crash safety: a supervisor SIGKILLed mid-run and the
 * next one reconciling what it left (a setsid daemon among it; the escapee
 * of a quiet run, known only from what the periodic scan recorded), two
 * supervisors on one registry, records that must never be signalled (a
 * reused pid, another boot), and an unwritable registry refusing new runs
 * while running ones go on.  Strays too: a double-fork daemon that none of
 * several live runs could claim is recorded under its owner, ended by
 * reconcile after a crash and by a clean close (which forgets it), is
 * recorded at the next heartbeat when the registry refused it at first,
 * and a stray record that no longer names its process is never signalled.
 * And the log of a SIGKILLed supervisor holds every byte it had read,
 * which reconcile puts on the run's record; a supervisor killed between a
 * spawn and its commit leaves a child that reconcile finds through the
 * leaf its owner row leads to.
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
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/procfs.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "cli/watchman.h"
#include "harness.h"
#include "supervise/contain.h"
#include "supervise/events.h"
#include "supervise/registry.h"
#include "tutil.h"

static const char *const levels[] = {"cgroup", "subreaper", "pgid"};
#define NLEVELS 3

static void state_dir(char *out, size_t size)
{
    snprintf(out, size, "%s/state", test_tmpdir());
}

static rein_sup_t *open_sup(const char *level)
{
    char dir[PATH_MAX];
    state_dir(dir, sizeof dir);
    rein_sup_opts_t so = {.state_dir = dir, .containment = level};
    rein_sup_t *s;
    int rc = rein_sup_open(&so, &s);
    if (rc == REIN_ECONTAIN)
        SKIP_FACILITY(level, "containment level %s unavailable", level);
    ASSERT_OK(rc);
    return s;
}

struct seen {
    buf_t out;
};

static void collect(rein_sup_t *s, int64_t id, const void *d, size_t n,
                    void *ud)
{
    (void)s;
    (void)id;
    buf_append(&((struct seen *)ud)->out, d, n);
}

/*
 * A supervisor in a child process: spawns a run whose shell starts a setsid
 * daemon and keeps a child of its own, reports "<run id> <shell pid>
 * <daemon pid>" on fd as soon as the daemon exists, then waits to be
 * SIGKILLed.
 */
static void supervisor_child(const char *level, bool tty, int fd)
{
    rein_sup_t *s = open_sup(level);
    struct seen seen = {BUF_INIT};
    const char *argv[] = {
        "/bin/sh", "-c",
        "(setsid sh -c 'echo daemon $$; exec sleep 300' &); sleep 300 & "
        "while :; do echo tick; sleep 0.1; done",
        NULL};
    int64_t id;
    rein_run_opts_t ro = {.argv = argv, .tty = tty, .grace_ms = -1,
                          .cwd = test_tmpdir(), .on_output = collect,
                          .data = &seen};
    if (rein_sup_spawn(s, &ro, &id) < 0)
        _exit(3);
    rein_run_info_t info;
    rein_sup_info(s, id, &info);
    pid_t daemon = 0;
    uint64_t t0 = test_now_ms();
    while (test_now_ms() - t0 < 20000) {
        rein_sup_run_once(s, 100);
        const char *p = seen.out.p ? strstr(seen.out.p, "daemon ") : NULL;
        if (p && !daemon)
            daemon = (pid_t)atoi(p + 7);
        /* Crash now, before a scan sees the escape (and ends the run
         * itself): what the daemon's run left must be found by reconcile
         * from the registry and the run's cgroups. */
        if (daemon) {
            dprintf(fd, "%lld %d %d\n", (long long)id, (int)info.pid,
                    (int)daemon);
            for (;;)
                pause(); /* SIGKILL comes */
        }
    }
    _exit(4);
}

/* Forks a supervisor that runs child(level, tty, fd) and is to be
 * SIGKILLed; returns its pid, and in *rd the read end of the pipe whose
 * write end is fd. */
static pid_t fork_supervisor(void (*child)(const char *, bool, int),
                             const char *level, bool tty, int *rd)
{
    int p[2];
    ASSERT_OK(pipe(p));
    fflush(NULL);
    pid_t sup = fork();
    ASSERT_INT(sup, >=, 0);
    if (sup == 0) {
        close(p[0]);
        child(level, tty, p[1]);
    }
    close(p[1]);
    *rd = p[0];
    return sup;
}

TEST_T(reconcile_after_sigkill_with_two_contending_supervisors, 120)
{
    for (int l = 0; l < NLEVELS; l++)
        for (int tty = 0; tty < 2; tty++) {
            printf("level %s, %s\n", levels[l], tty ? "pty" : "pipe");
            int rd;
            pid_t sup = fork_supervisor(supervisor_child, levels[l], tty, &rd);
            char line[128] = {0};
            ssize_t got = read(rd, line, sizeof line - 1);
            close(rd);
            if (got == 0) {
                /* The supervisor ended without a line: it skipped a level
                 * not available here (no root: no cgroup), and the other
                 * levels still run; on CI its skip is a failure. */
                int st;
                ASSERT_EQ(waitpid(sup, &st, 0), sup);
                ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == SKIP_EXIT);
                continue;
            }
            ASSERT_INT(got, >, 0);
            long long id;
            int shell, daemon;
            ASSERT_EQ(sscanf(line, "%lld %d %d", &id, &shell, &daemon), 3);
            /* Identities, not bare pids: parallel tests reuse pids fast. */
            uint64_t shell_st = 0, daemon_st = 0;
            procfs_start_time(shell, &shell_st);
            ASSERT_OK(procfs_start_time(daemon, &daemon_st));
            ASSERT_OK(kill(sup, SIGKILL)); /* the crash */
            int st;
            ASSERT_EQ(waitpid(sup, &st, 0), sup);
            /* The shell may die of SIGPIPE on its own now; the daemon,
             * writing nothing, would live on forever. */
            ASSERT_TRUE(procfs_alive(daemon, daemon_st));
            registry_t *reg;
            run_record_t rec;
            char dir[PATH_MAX];
            state_dir(dir, sizeof dir);
            ASSERT_OK(registry_open(dir, &reg));
            ASSERT_OK(registry_run_get(reg, id, &rec));
            /* Without a cgroup of its own the daemon is findable only if a
             * scan remembered it before the crash. */
            if (!rec.cgroup && !rec.pids_cgroup) {
                /* Ours, by pid and start time: nothing else is left to
                 * end them once the test stops here. */
                ptree_signal_one(daemon, daemon_st, SIGKILL);
                if (shell_st)
                    ptree_signal_one(shell, shell_st, SIGKILL);
                /* And the shell's background sleep, left in the run's
                 * process group: while a member lives, no other group
                 * can have its id. */
                if (rec.pgid > 1)
                    kill(-rec.pgid, SIGKILL);
                run_record_clear(&rec);
                registry_close(reg);
                SKIP_FACILITY("pids-limit", "the run at %s had no cgroup",
                              levels[l]);
            }
            run_record_clear(&rec);
            registry_close(reg);

            int64_t steals0 = 0, orphans0 = 0;
            ASSERT_OK(registry_open(dir, &reg));
            registry_counter_get(reg, "run_lease_steal_total", &steals0);
            registry_counter_get(reg, "run_reconcile_orphans_total",
                                 &orphans0);
            registry_close(reg);
            /* Lease contention: two supervisors open (and reconcile) at
             * once; exactly one steals the dead owner's run and ends it. */
            pid_t rc2[2];
            for (int k = 0; k < 2; k++) {
                fflush(NULL);
                rc2[k] = fork();
                ASSERT_INT(rc2[k], >=, 0);
                if (rc2[k] == 0) {
                    rein_sup_opts_t so = {.state_dir = dir,
                                          .containment = levels[l],
                                          .no_reconcile = true};
                    rein_sup_t *s;
                    rein_reconcile_stats_t rs;
                    if (rein_sup_open(&so, &s) < 0 ||
                        rein_sup_reconcile(s, &rs) < 0)
                        _exit(3);
                    printf("reconciler %d: dead %zu alive %zu stolen %zu "
                           "reaped %zu lost %zu\n",
                           k, rs.owners_dead, rs.skipped_alive,
                           rs.runs_stolen, rs.orphans_reaped, rs.lost);
                    fflush(stdout);
                    rein_sup_close(s);
                    _exit(0);
                }
            }
            for (int k = 0; k < 2; k++) {
                ASSERT_EQ(waitpid(rc2[k], &st, 0), rc2[k]);
                ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
            }
            ASSERT_FALSE(shell_st && procfs_alive(shell, shell_st));
            ASSERT_FALSE(procfs_alive(daemon, daemon_st));
            ASSERT_OK(registry_open(dir, &reg));
            ASSERT_OK(registry_run_get(reg, id, &rec));
            ASSERT_EQ(rec.state, REIN_RUN_EXITED);
            ASSERT_EQ(rec.reason, REIN_REASON_ORPHAN_REAPED);
            run_record_clear(&rec);
            int64_t steals = 0, orphans = 0;
            ASSERT_OK(registry_counter_get(reg, "run_lease_steal_total",
                                           &steals));
            ASSERT_OK(registry_counter_get(reg, "run_reconcile_orphans_total",
                                           &orphans));
            ASSERT_EQ(steals - steals0, 1);
            ASSERT_EQ(orphans - orphans0, 1);
            ASSERT_OK(registry_check(reg));
            registry_close(reg);
        }
}

/* Adds a fake dead owner with one running run, as a crash would leave. */
static int64_t plant(const char *boot_id, pid_t pid, uint64_t start)
{
    char dir[PATH_MAX], owner[REGISTRY_OWNER_ID_LEN];
    state_dir(dir, sizeof dir);
    snprintf(owner, sizeof owner, "%032x", (unsigned)pid);
    /* Lease long expired, no lock file, no process recorded: dead. */
    tu_plant_t p = {owner, boot_id, 1, 0, 1, pid, start, NULL, 0};
    return tu_plant_run(dir, &p);
}

static int reason_of(int64_t id)
{
    char dir[PATH_MAX];
    registry_t *reg;
    run_record_t r;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_run_get(reg, id, &r));
    int reason = r.state == REIN_RUN_EXITED ? r.reason : -1;
    run_record_clear(&r);
    registry_close(reg);
    return reason;
}

/* A counter of the registry in the test's state dir; 0 when never added. */
static int64_t counter_of(const char *name)
{
    char dir[PATH_MAX];
    registry_t *reg;
    int64_t v = 0;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_counter_get(reg, name, &v));
    registry_close(reg);
    return v;
}

TEST(reconcile_other_boot_is_lost_and_never_signalled)
{
    int pidfd;
    pid_t pid = tu_sleeper_start(&pidfd);
    uint64_t st;
    ASSERT_OK(procfs_start_time(pid, &st));
    /* Same pid and start time, but another boot: not ours to touch. */
    int64_t id = plant("00000000-0000-0000-0000-000000000000", pid, st);
    rein_sup_t *s = open_sup(NULL);
    ASSERT_EQ(reason_of(id), REIN_REASON_LOST);
    ASSERT_TRUE(procfs_alive(pid, st));
    rein_sup_close(s);
    tu_sleeper_stop(pid, pidfd);
}

TEST_SOLO(reconcile_reused_pid_is_lost_and_never_signalled, TEST_DEFAULT_TIMEOUT_S)
{
    char boot[PROCFS_BOOT_ID_LEN];
    ASSERT_OK(procfs_boot_id(boot));
    /* A run that died (its pid recorded with its start time) ... */
    int pidfd;
    pid_t old = tu_sleeper_start(&pidfd);
    uint64_t old_start;
    ASSERT_OK(procfs_start_time(old, &old_start));
    tu_sleeper_stop(old, pidfd);
    int64_t id = plant(boot, old, old_start);
    /* Start times count clock ticks: a reuse within the same tick would
     * look like the same process.  Let a few ticks pass (a clock, not an
     * event, so there is nothing to wait on but time). */
    struct timespec ticks = {0, 3 * 1000000000L / sysconf(_SC_CLK_TCK)};
    nanosleep(&ticks, NULL);
    /* ... and a new process given the very same pid. */
    pid_t again = -1;
    int fd2 = -1;
    for (int tries = 0; tries < 50 && again != old; tries++) {
        int ns = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
        if (ns < 0)
            SKIP_FACILITY("pid-reuse", "ns_last_pid: %s", strerror(errno));
        /* Anyone may open it; only root may write it. */
        int wrote = dprintf(ns, "%d", (int)old - 1), err = errno;
        close(ns);
        if (again > 0)
            tu_sleeper_stop(again, fd2);
        again = -1;
        if (wrote < 0)
            SKIP_FACILITY("pid-reuse", "cannot write ns_last_pid: %s",
                          strerror(err));
        again = tu_sleeper_start(&fd2);
    }
    if (again != old) {
        tu_sleeper_stop(again, fd2);
        SKIP_FACILITY("pid-reuse", "could not get pid %d again", (int)old);
    }
    uint64_t new_start;
    ASSERT_OK(procfs_start_time(again, &new_start));
    ASSERT_INT(new_start, !=, old_start);
    rein_sup_t *s = open_sup(NULL);
    ASSERT_EQ(reason_of(id), REIN_REASON_LOST);
    ASSERT_TRUE(procfs_alive(again, new_start)); /* never signalled */
    rein_sup_close(s);
    tu_sleeper_stop(again, fd2);
}

/*
 * A session left with two sleeps and no leader: a shell led it (spawned
 * in a session of its own), started both, wrote their pids and exited.
 * Returns the session's id (the shell's pid, no process's now) and the
 * sleeps with their start times.
 */
static pid_t leaderless_session(pid_t sleeps[2], uint64_t starts[2])
{
    char pidfile[PATH_MAX], script[3 * PATH_MAX + 128];
    snprintf(pidfile, sizeof pidfile, "%s/sleeps", test_tmpdir());
    snprintf(script, sizeof script,
             "sleep 120 & a=$!; sleep 120 & echo \"$a $!\" > %s.tmp; "
             "mv %s.tmp %s",
             pidfile, pidfile, pidfile);
    const char *argv[] = {"sh", "-c", script, NULL};
    spawn_opts_t o;
    spawn_opts_init(&o); /* a session of its own */
    o.file = "/bin/sh";
    o.argv = argv;
    pid_t leader;
    int code;
    ASSERT_OK(spawn_start(&o, &leader, NULL, NULL));
    ASSERT_OK(spawn_reap(leader, -1, &code)); /* the pidfile is written */
    ASSERT_EQ(code, 0);
    FILE *f = fopen(pidfile, "re");
    ASSERT_TRUE(f != NULL);
    long a = 0, b = 0;
    ASSERT_EQ(fscanf(f, "%ld %ld", &a, &b), 2);
    fclose(f);
    sleeps[0] = (pid_t)a;
    sleeps[1] = (pid_t)b;
    for (int i = 0; i < 2; i++) {
        procfs_stat_t st;
        ASSERT_OK(procfs_read_stat(sleeps[i], &st));
        ASSERT_EQ(st.session, leader);
        starts[i] = st.start_time;
    }
    return leader;
}

/* Ends a sleep of leaderless_session through its pidfd, if still it. */
static void leaderless_stop(pid_t pid, uint64_t start)
{
    ptree_t t;
    ASSERT_OK(ptree_capture_pinned(pid, &t));
    if (t.n && t.v[0].start_time == start)
        ptree_signal_member(&t.v[0], SIGKILL);
    ptree_free(&t);
}

/*
 * The session a dead run led stays the run's while one of its members is
 * known to be the run's; without one, a session of that id may be a new
 * process's (the kernel frees the number once the run's whole session is
 * gone).  Reconcile ends the session's members only with such an anchor.
 */
TEST(reconcile_ends_a_leaderless_session_only_through_a_known_member)
{
    char dir[PATH_MAX], boot[PROCFS_BOOT_ID_LEN];
    state_dir(dir, sizeof dir);
    ASSERT_OK(procfs_boot_id(boot));
    for (int known = 0; known < 2; known++) {
        pid_t sleeps[2];
        uint64_t starts[2];
        pid_t sid = leaderless_session(sleeps, starts);
        uint64_t first = starts[0] < starts[1] ? starts[0] : starts[1];
        /* A run of that id, started before both: with the first sleep
         * recorded as its descendant, or (as after the id's reuse by
         * someone else) with nothing of it known. */
        char owner[REGISTRY_OWNER_ID_LEN];
        snprintf(owner, sizeof owner, "%032x", 0xab00u + (unsigned)known);
        tu_plant_t p = {owner, boot, 1, 0, 1, sid,
                        first > 0 ? first - 1 : 0, NULL, 0};
        int64_t id = tu_plant_run(dir, &p);
        if (known) {
            registry_t *reg;
            ASSERT_OK(registry_open(dir, &reg));
            ASSERT_OK(registry_descendant_add(reg, id, sleeps[0], starts[0]));
            registry_close(reg);
        }
        rein_sup_t *s = open_sup("pgid");
        if (known) {
            ASSERT_EQ(reason_of(id), REIN_REASON_ORPHAN_REAPED);
            ASSERT_FALSE(procfs_alive(sleeps[0], starts[0]));
            ASSERT_FALSE(procfs_alive(sleeps[1], starts[1]));
        } else {
            ASSERT_EQ(reason_of(id), REIN_REASON_LOST);
            ASSERT_TRUE(procfs_alive(sleeps[0], starts[0]));
            ASSERT_TRUE(procfs_alive(sleeps[1], starts[1]));
        }
        rein_sup_close(s);
        for (int i = 0; i < 2; i++)
            leaderless_stop(sleeps[i], starts[i]);
    }
}

/*
 * An owner in another pid namespace (a container sharing the state dir)
 * cannot be judged by its pid here: that pid names another process or
 * none.  Its lock, held, says it lives, and its run is left alone; in our
 * own namespace its process, gone, says it died, whoever holds the lock
 * for a moment (a passing rein ps).
 */
TEST(reconcile_judges_an_owner_of_another_pid_namespace_by_its_lock)
{
    char dir[PATH_MAX], boot[PROCFS_BOOT_ID_LEN], lock[PATH_MAX];
    state_dir(dir, sizeof dir);
    ASSERT_OK(procfs_boot_id(boot));
    snprintf(lock, sizeof lock, "%s/other.lock", test_tmpdir());
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_INT(lfd, >=, 0);
    ASSERT_OK(flock(lfd, LOCK_EX | LOCK_NB));
    uint64_t ns;
    ASSERT_OK(procfs_pid_ns(&ns));
    for (int same = 0; same < 2; same++) {
        int gone_fd, run_fd;
        uint64_t gone_start, run_start;
        pid_t gone = tu_sleeper_timed(&gone_fd, &gone_start);
        pid_t run = tu_sleeper_timed(&run_fd, &run_start);
        tu_sleeper_stop(gone, gone_fd); /* no process here has its pid */
        char owner[REGISTRY_OWNER_ID_LEN];
        snprintf(owner, sizeof owner, "%032x", 0xcd00u + (unsigned)same);
        tu_plant_t p = {owner, boot, gone, gone_start, 1, run, run_start,
                        lock, same ? ns : ns + 1};
        int64_t id = tu_plant_run(dir, &p);
        rein_sup_t *s = open_sup("pgid");
        if (same) {
            ASSERT_EQ(reason_of(id), REIN_REASON_ORPHAN_REAPED);
            ASSERT_FALSE(procfs_alive(run, run_start));
        } else {
            ASSERT_EQ(reason_of(id), -1); /* still running: not touched */
            ASSERT_TRUE(procfs_alive(run, run_start));
        }
        rein_sup_close(s);
        tu_sleeper_stop(run, run_fd);
    }
    close(lfd);
}

/* With its lock file gone, an owner is dead once its process (pid and
 * start time) is, though its lease runs on, as rein ps judges it; while
 * that process lives, its run is never signalled. */
TEST(reconcile_owner_without_a_lock_file_is_dead_once_its_process_is)
{
    char dir[PATH_MAX], boot[PROCFS_BOOT_ID_LEN];
    state_dir(dir, sizeof dir);
    ASSERT_OK(procfs_boot_id(boot));
    int dead_fd, a_fd, b_fd;
    pid_t dead = tu_sleeper_start(&dead_fd);
    pid_t a = tu_sleeper_start(&a_fd), b = tu_sleeper_start(&b_fd);
    uint64_t dead_start, a_start, b_start, my_start;
    ASSERT_OK(procfs_start_time(dead, &dead_start));
    ASSERT_OK(procfs_start_time(a, &a_start));
    ASSERT_OK(procfs_start_time(b, &b_start));
    ASSERT_OK(procfs_start_time(getpid(), &my_start));
    tu_plant_t gone = {"d0000000000000000000000000000001", boot, dead,
                       dead_start, 4102444800000, a, a_start, NULL, 0};
    int64_t orphan = tu_plant_run(dir, &gone);
    tu_sleeper_stop(dead, dead_fd); /* the owner dies; its lease runs on */
    tu_plant_t live = {"a0000000000000000000000000000002", boot, getpid(),
                       my_start, 4102444800000, b, b_start, NULL, 0};
    int64_t kept = tu_plant_run(dir, &live);
    rein_sup_t *s = open_sup("pgid");
    ASSERT_EQ(reason_of(orphan), REIN_REASON_ORPHAN_REAPED);
    ASSERT_FALSE(procfs_alive(a, a_start));
    ASSERT_EQ(reason_of(kept), -1); /* not exited: not touched */
    ASSERT_TRUE(procfs_alive(b, b_start));
    rein_sup_close(s);
    tu_sleeper_stop(a, a_fd);
    tu_sleeper_stop(b, b_fd);
}

TEST_T(reconcile_two_supervisors_one_owner_no_double_kill, 60)
{
    /* A live supervisor's runs are never touched by another. */
    rein_sup_t *a = open_sup(NULL);
    struct seen seen = {BUF_INIT};
    const char *argv[] = {"/bin/sh", "-c", "echo up; sleep 60", NULL};
    int64_t id;
    rein_run_opts_t ro = {.argv = argv, .grace_ms = -1, .on_output = collect,
                          .data = &seen};
    ASSERT_OK(rein_sup_spawn(a, &ro, &id));
    rein_sup_t *b = open_sup(NULL);
    rein_reconcile_stats_t st;
    ASSERT_OK(rein_sup_reconcile(b, &st));
    ASSERT_EQ(st.skipped_alive, 1);
    ASSERT_EQ(st.orphans_reaped, 0);
    rein_run_info_t info;
    ASSERT_OK(rein_sup_info(a, id, &info));
    ASSERT_EQ(info.state, REIN_RUN_RUNNING);
    ASSERT_TRUE(test_pid_alive(info.pid));
    rein_sup_close(b);
    rein_sup_close(a);
    buf_free(&seen.out);

    /* A dead owner's run: of two concurrent reconcilers exactly one
     * steals and kills it. */
    int pfd;
    pid_t pid = tu_sleeper_start(&pfd);
    uint64_t start;
    char boot[PROCFS_BOOT_ID_LEN];
    ASSERT_OK(procfs_boot_id(boot));
    ASSERT_OK(procfs_start_time(pid, &start));
    int64_t planted = plant(boot, pid, start);
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        fflush(NULL);
        kids[i] = fork();
        if (kids[i] == 0) {
            rein_sup_t *s = open_sup(NULL);
            rein_reconcile_stats_t mine;
            rein_sup_reconcile(s, &mine); /* the open already did one */
            rein_sup_close(s);
            _exit(0);
        }
    }
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(waitpid(kids[i], NULL, 0), kids[i]);
    ASSERT_EQ(reason_of(planted), REIN_REASON_ORPHAN_REAPED);
    char dir[PATH_MAX];
    registry_t *reg;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    int64_t steals = 0, orphans = 0;
    ASSERT_OK(registry_counter_get(reg, "run_lease_steal_total", &steals));
    ASSERT_OK(registry_counter_get(reg, "run_reconcile_orphans_total",
                                   &orphans));
    registry_close(reg);
    ASSERT_EQ(steals, 1);
    ASSERT_EQ(orphans, 1);
    int code;
    ASSERT_OK(spawn_reap(pid, pfd, &code));
    ASSERT_EQ(code, 128 + SIGTERM); /* one TERM, from one reconciler */
    if (pfd >= 0)
        close(pfd);
}

TEST_T(unwritable_registry_refuses_new_runs_while_running_ones_go_on, 60)
{
    /* A full disk under the state dir: a private mount namespace and a
     * small tmpfs (root ignores permission bits, so fill it instead). */
    char dir[PATH_MAX];
    state_dir(dir, sizeof dir);
    ASSERT_OK(mkdir(dir, 0700));
    tu_private_mounts();
    if (mount("tmpfs", dir, "tmpfs", 0, "size=4m,mode=0700") < 0)
        SKIP_FACILITY("mount-namespace", "cannot mount a tmpfs: %s",
                      strerror(errno));
    rein_sup_t *s = open_sup(NULL);
    struct seen seen = {BUF_INIT};
    const char *argv[] = {"/bin/sh", "-c", "read x; echo got $x; sleep 60",
                          NULL};
    int64_t id;
    rein_run_opts_t ro = {.argv = argv, .keep_stdin = true, .grace_ms = -1,
                          .on_output = collect, .data = &seen};
    ASSERT_OK(rein_sup_spawn(s, &ro, &id));
    /* Fill the disk. */
    char fill[PATH_MAX + 8];
    snprintf(fill, sizeof fill, "%s/fill", dir);
    int fd = open(fill, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_INT(fd, >=, 0);
    static char block[65536];
    while (write(fd, block, sizeof block) > 0)
        ;
    close(fd);
    const char *argv2[] = {"true", NULL};
    rein_run_opts_t ro2 = {.argv = argv2, .grace_ms = -1};
    int64_t id2;
    ASSERT_EQ(rein_sup_spawn(s, &ro2, &id2), REIN_EREGISTRY);
    /* The running one goes on: it reads, answers, and can be ended. */
    ASSERT_OK(rein_sup_write(s, id, "hello\n", 6));
    uint64_t t0 = test_now_ms();
    while (!seen.out.p || !strstr(seen.out.p, "got hello")) {
        ASSERT_INT(test_now_ms() - t0, <, 5000);
        rein_sup_run_once(s, 100);
    }
    ASSERT_OK(rein_sup_cancel(s, id, 0, -1));
    rein_run_info_t info;
    do {
        rein_sup_run_once(s, 100);
        ASSERT_OK(rein_sup_info(s, id, &info));
        ASSERT_INT(test_now_ms() - t0, <, 10000);
    } while (info.state != REIN_RUN_EXITED);
    ASSERT_EQ(info.reason, REIN_REASON_MANUAL_CANCEL);
    rein_sup_close(s);
    buf_free(&seen.out);
}

/* What a loaded machine may add to the periodic scan's period (a timer
 * fires late, the registry is busy) before the scan counts as missed. */
#define RECONCILE_TEST_SCAN_SLACK_MS 2000
/* The bound of every other wait of the quiet-run tests below. */
#define RECONCILE_TEST_STEP_MS 10000

/* Whether the registry remembers (pid, start) as a descendant of run id. */
static bool registry_has_descendant(int64_t id, pid_t pid, uint64_t start)
{
    char dir[PATH_MAX];
    registry_t *reg;
    ptree_t d;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_descendants(reg, id, &d));
    bool found = false;
    for (size_t i = 0; i < d.n; i++)
        found = found || (d.v[i].pid == pid && d.v[i].start_time == start);
    ptree_free(&d);
    registry_close(reg);
    return found;
}

/*
 * The command of a quiet run: it starts a process that leaves the run's
 * session (setsid) from a subshell that exits at once, so the escapee is
 * neither below the leader nor in its session; it writes its pid to
 * pidfile (not to the run's output) and ignores TERM.  The leader then
 * sleeps, printing nothing.
 */
static void quiet_escape_command(char *out, size_t size, const char *pidfile)
{
    snprintf(out, size,
             "(setsid sh -c 'trap \"\" TERM; echo $$ > %s.tmp; "
             "mv %s.tmp %s; exec sleep 120' &); exec sleep 120",
             pidfile, pidfile, pidfile);
}

/* A supervisor in a child process, at level, whose one run is
 * quiet_escape_command: reports "<run id> <leader pid>" on fd, then only
 * drives its loop (the run prints nothing) until it is SIGKILLed. */
static void quiet_supervisor_child(const char *level, const char *pidfile,
                                   int fd)
{
    rein_sup_t *s = open_sup(level);
    char cmd[3 * PATH_MAX + 128];
    quiet_escape_command(cmd, sizeof cmd, pidfile);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    /* A long grace: the escape a scan finds starts the run's end, and the
     * crash must come before its KILL. */
    rein_run_opts_t ro = {.argv = argv, .grace_ms = 60000,
                          .cwd = test_tmpdir()};
    int64_t id;
    if (rein_sup_spawn(s, &ro, &id) < 0)
        _exit(3);
    rein_run_info_t info;
    rein_sup_info(s, id, &info);
    dprintf(fd, "%lld %d\n", (long long)id, (int)info.pid);
    for (;;)
        rein_sup_run_once(s, -1);
}

/* A quiet run of a supervisor in a child process, and its escapee. */
struct quiet {
    pid_t sup;
    int64_t id;
    pid_t leader;
    pid_t esc;
    uint64_t esc_start;
    uint64_t t_spawn; /* when the run was reported started */
};

/* Starts quiet_supervisor_child at level and waits until the escapee has
 * left the run's session and its parent has exited (it is then the
 * supervisor's, a subreaper's, child). */
/* Holds the registry as another writer would: an open write transaction
 * in *lock, until the caller rolls it back. */
static void registry_hold(sqlite3 **lock)
{
    char db[PATH_MAX + 32];
    state_dir(db, sizeof db);
    snprintf(db + strlen(db), sizeof db - strlen(db), "/%s", REGISTRY_FILE);
    ASSERT_EQ(sqlite3_open(db, lock), SQLITE_OK);
    sqlite3_busy_timeout(*lock, REGISTRY_BUSY_TIMEOUT_MS);
    ASSERT_EQ(sqlite3_exec(*lock, "BEGIN IMMEDIATE", NULL, NULL, NULL),
              SQLITE_OK);
}

static void quiet_start_locked(const char *level, const char *pidfile,
                               struct quiet *q, sqlite3 **lock);

static void quiet_start(const char *level, const char *pidfile,
                        struct quiet *q)
{
    quiet_start_locked(level, pidfile, q, NULL);
}

/* As quiet_start; with lock, the registry is held by another writer (an
 * open write transaction, in *lock) from just after the spawn, before the
 * first scan can record the escapee. */
static void quiet_start_locked(const char *level, const char *pidfile,
                               struct quiet *q, sqlite3 **lock)
{
    int p[2];
    ASSERT_OK(pipe(p));
    fflush(NULL);
    q->sup = fork();
    ASSERT_INT(q->sup, >=, 0);
    if (q->sup == 0) {
        close(p[0]);
        quiet_supervisor_child(level, pidfile, p[1]);
    }
    close(p[1]);
    char line[128] = {0};
    ASSERT_INT(read(p[0], line, sizeof line - 1), >, 0);
    q->t_spawn = test_now_ms();
    close(p[0]);
    long long id;
    int leader;
    ASSERT_EQ(sscanf(line, "%lld %d", &id, &leader), 2);
    q->id = id;
    q->leader = leader;
    if (lock)
        registry_hold(lock);
    q->esc = tu_await_pid_file(pidfile, RECONCILE_TEST_STEP_MS);
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(q->esc, &st));
    q->esc_start = st.start_time;
    ASSERT_INT(st.session, !=, leader); /* it left the run's session */
    while (st.ppid != q->sup) {
        ASSERT_INT(test_now_ms() - q->t_spawn, <, RECONCILE_TEST_STEP_MS);
        usleep(10000);
        ASSERT_OK(procfs_read_stat(q->esc, &st));
    }
}

/* SIGKILLs the supervisor (the crash) and reaps it; the escapee, which
 * ignores TERM, lives on. */
static void quiet_crash(struct quiet *q)
{
    int ws;
    ASSERT_OK(kill(q->sup, SIGKILL));
    ASSERT_EQ(waitpid(q->sup, &ws, 0), q->sup);
    ASSERT_TRUE(procfs_alive(q->esc, q->esc_start));
}

/* Reconciles the state dir from a child process: a supervisor at level
 * (NULL: the best), opened after the child moved itself into the cgroup
 * whose cgroup.procs is procs (NULL: it stays in the test's). */
static void reconcile_in_child(const char *level, const char *procs,
                               rein_reconcile_stats_t *out)
{
    int q[2];
    ASSERT_OK(pipe(q));
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_INT(pid, >=, 0);
    if (pid == 0) {
        close(q[0]);
        if (procs) {
            int fd = open(procs, O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, "0", 1) != 1)
                _exit(4);
            close(fd);
        }
        char dir[PATH_MAX];
        state_dir(dir, sizeof dir);
        rein_sup_opts_t so = {.state_dir = dir, .containment = level,
                              .no_reconcile = true};
        rein_sup_t *s;
        rein_reconcile_stats_t rs;
        if (rein_sup_open(&so, &s) < 0 || rein_sup_reconcile(s, &rs) < 0)
            _exit(3);
        if (write(q[1], &rs, sizeof rs) != (ssize_t)sizeof rs)
            _exit(5);
        rein_sup_close(s);
        _exit(0);
    }
    close(q[1]);
    ASSERT_EQ(read(q[0], out, sizeof *out), (ssize_t)sizeof *out);
    close(q[0]);
    int ws;
    ASSERT_EQ(waitpid(pid, &ws, 0), pid);
    ASSERT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

TEST_T(reconcile_ends_a_quiet_runs_escapee_the_periodic_scan_recorded, 60)
{
    /* A run whose leader lives and prints nothing; a process it started
     * left its session, and the parent in between exited, so it is a
     * child of the supervisor that no SIGCHLD or output announces.  Only
     * the periodic scan (REIN_SUP_SCAN_MS) records it; after the crash,
     * reconcile ends it from that record alone: no cgroup holds it (the
     * pids hierarchy is hidden) and neither the leader's tree nor its
     * session contains it.  A process rein never started lives on. */
    tu_hide_pids_hierarchy();
    char pidfile[PATH_MAX];
    snprintf(pidfile, sizeof pidfile, "%s/escapee.pid", test_tmpdir());
    int decoy_fd;
    pid_t decoy = tu_sleeper_start(&decoy_fd);
    uint64_t decoy_st;
    ASSERT_OK(procfs_start_time(decoy, &decoy_st));

    struct quiet q;
    quiet_start("subreaper", pidfile, &q);
    /* In the registry within the period, the run quiet all along (the
     * registry is another process's: polled, bounded). */
    while (!registry_has_descendant(q.id, q.esc, q.esc_start)) {
        ASSERT_INT(test_now_ms() - q.t_spawn, <,
                   REIN_SUP_SCAN_MS + RECONCILE_TEST_SCAN_SLACK_MS);
        usleep(10000);
    }
    /* The escape ends the run: its leader dies of the TERM (it stays the
     * supervisor's zombie), the escapee ignores it.  Wait for that, so
     * that what is left for reconcile is the escapee alone. */
    uint64_t t0 = test_now_ms();
    while (procfs_alive(q.leader, 0)) {
        ASSERT_INT(test_now_ms() - t0, <, RECONCILE_TEST_STEP_MS);
        usleep(10000);
    }
    quiet_crash(&q);

    rein_reconcile_stats_t rs;
    reconcile_in_child("subreaper", NULL, &rs);
    ASSERT_EQ(rs.owners_dead, 1);
    ASSERT_EQ(rs.orphans_reaped, 1);
    ASSERT_EQ(rs.lost, 0);
    ASSERT_FALSE(procfs_alive(q.esc, q.esc_start));
    ASSERT_TRUE(procfs_alive(decoy, decoy_st)); /* never rein's */
    /* The run was ending for its escape when rein died: the first reason
     * wins, reconcile only finished it, and counts it by that reason (it
     * counted orphan-reaped, which no record said). */
    ASSERT_EQ(reason_of(q.id), REIN_REASON_OWNERSHIP_ESCAPE);
    ASSERT_EQ(counter_of("run_exit_total{reason=\"ownership-escape\"}"), 1);
    ASSERT_EQ(counter_of("run_exit_total{reason=\"orphan-reaped\"}"), 0);
    ASSERT_EQ(counter_of("run_reconcile_orphans_total"), 1);
    tu_sleeper_stop(decoy, decoy_fd);
}

TEST_T(reconcile_reaches_a_runs_cgroup_at_a_forced_level_and_from_another_cgroup,
       90)
{
    /* A quiet run at the cgroup level leaves an escapee that no scan saw
     * (nothing scans a quiet run its cgroup holds) and, the pids hierarchy
     * hidden, only the run's v2 leaf holds it.  After the crash reconcile
     * must reach that leaf however it is run: with a lower level forced
     * (REIN_CONTAINMENT=pgid in the operator's environment), and from a
     * shell in another cgroup (another terminal's or service's scope),
     * whose own cgroup the leaf is not under. */
    tu_hide_pids_hierarchy();
    contain_t *c;
    char why[256];
    if (contain_open_why("cgroup", &c, why, sizeof why) < 0)
        SKIP_FACILITY("cgroup", "%s", why);
    char own[PATH_MAX], other[2 * PATH_MAX], procs[2 * PATH_MAX + 16];
    ASSERT_OK(contain_cgroup_of(getpid(), own, sizeof own));
    snprintf(other, sizeof other, "%s%s/rein-test-other.%d",
             contain_cgroup2_mount(c), strcmp(own, "/") ? own : "",
             (int)getpid());
    contain_free(c);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", other);
    ASSERT_OK(mkdir(other, 0755));
    int decoy_fd;
    pid_t decoy = tu_sleeper_start(&decoy_fd);
    uint64_t decoy_st;
    ASSERT_OK(procfs_start_time(decoy, &decoy_st));

    for (int k = 0; k < 2; k++) {
        printf("%s\n", k == 0 ? "forced pgid" : "from another cgroup");
        char pidfile[PATH_MAX];
        snprintf(pidfile, sizeof pidfile, "%s/escapee-%d.pid", test_tmpdir(),
                 k);
        struct quiet q;
        quiet_start("cgroup", pidfile, &q);
        quiet_crash(&q);
        /* Only the cgroup leads to it. */
        ASSERT_FALSE(registry_has_descendant(q.id, q.esc, q.esc_start));
        rein_reconcile_stats_t rs;
        reconcile_in_child(k == 0 ? "pgid" : NULL, k == 0 ? NULL : procs,
                           &rs);
        ASSERT_EQ(rs.owners_dead, 1);
        ASSERT_EQ(rs.orphans_reaped, 1); /* the leader, alive, at least */
        ASSERT_EQ(rs.lost, 0);
        ASSERT_FALSE(procfs_alive(q.esc, q.esc_start));
        ASSERT_TRUE(procfs_alive(decoy, decoy_st)); /* never rein's */
    }
    tu_sleeper_stop(decoy, decoy_fd);
    ASSERT_OK(rmdir(other));
    /* The dead supervisors' instance cgroups go with the next open here. */
    ASSERT_OK(contain_open("cgroup", &c));
    contain_free(c);
}

/* The crash in the spawn window: the supervisor is SIGKILLed in the
 * commit after its spawn, as that commit writes the run's row (the UPDATE
 * of the row the INSERT before the spawn made), so the row on disk stays
 * `starting`, without pid or leaf paths, while the child runs.  An update
 * hook on every connection this process opens stops it exactly there,
 * says so, and waits for the test's SIGKILL (the test's, not its own:
 * valgrind turns a process's own SIGKILL into an exit with a leak report
 * of the statement it was in). */
static sqlite3_int64 window_row = -1;
static int window_fd = -1;

static void window_on_update(void *ud, int op, const char *db,
                             const char *table, sqlite3_int64 row)
{
    (void)ud;
    (void)db;
    if (strcmp(table, "runs") != 0)
        return;
    if (op == SQLITE_INSERT && window_row < 0)
        window_row = row;
    else if (op == SQLITE_UPDATE && row == window_row) {
        dprintf(window_fd, "%lld\n", (long long)row);
        for (;;)
            pause();
    }
}

static int window_hook(sqlite3 *db, char **err, const void *api)
{
    (void)err;
    (void)api;
    sqlite3_update_hook(db, window_on_update, NULL);
    return SQLITE_OK;
}

static void window_supervisor_child(const char *level, bool tty, int fd)
{
    window_fd = fd;
    sqlite3_auto_extension((void (*)(void))window_hook);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "echo $$ > %s/window.pid.tmp && "
             "mv %s/window.pid.tmp %s/window.pid && exec sleep 300",
             test_tmpdir(), test_tmpdir(), test_tmpdir());
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    rein_sup_t *s = open_sup(level);
    int64_t id;
    rein_run_opts_t ro = {.argv = argv, .tty = tty, .cwd = test_tmpdir()};
    rein_sup_spawn(s, &ro, &id);
    _exit(4); /* the hook should have killed us */
}

/* One crash in the spawn window at level, then a reconcile at the same
 * level; leaf: whether a cgroup leaf held the run. */
static void window_case(const char *level, bool leaf)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/window.pid", test_tmpdir());
    printf("%s: %s\n", level, leaf ? "a leaf holds the run" : "no leaf");
    unlink(path);
    int rd;
    pid_t sup = fork_supervisor(window_supervisor_child, level, false, &rd);
    char line[32];
    tu_read_line(rd, line, sizeof line);
    close(rd);
    int64_t id = atoll(line);
    int ws;
    ASSERT_OK(kill(sup, SIGKILL));
    ASSERT_EQ(waitpid(sup, &ws, 0), sup);
    ASSERT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    pid_t child = tu_await_pid_file(path, RECONCILE_TEST_STEP_MS);
    uint64_t start;
    ASSERT_OK(procfs_start_time(child, &start));

    /* What the crash left: a `starting` row, no pid, no paths. */
    char dir[PATH_MAX];
    state_dir(dir, sizeof dir);
    registry_t *reg;
    run_record_t r;
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_run_get(reg, id, &r));
    ASSERT_EQ(r.state, REIN_RUN_STARTING);
    ASSERT_EQ(r.pid, 0);
    ASSERT_TRUE(r.cgroup == NULL && r.pids_cgroup == NULL);
    run_record_clear(&r);
    registry_close(reg);

    rein_reconcile_stats_t rs;
    reconcile_in_child(level, NULL, &rs);
    ASSERT_EQ(rs.owners_dead, 1);
    ASSERT_EQ(rs.runs_stolen, 1);
    if (leaf) {
        ASSERT_EQ(rs.orphans_reaped, 1);
        ASSERT_EQ(reason_of(id), REIN_REASON_ORPHAN_REAPED);
        ASSERT_FALSE(procfs_alive(child, start));
    } else {
        ASSERT_EQ(rs.lost, 1);
        ASSERT_EQ(reason_of(id), REIN_REASON_LOST);
        /* Untouched; it is the test's own grandchild, ended here through
         * a handle checked against its start time. */
        ASSERT_TRUE(procfs_alive(child, start));
        rein_proc_t *p;
        ASSERT_OK(rein_proc_from_pid(child, &p));
        ASSERT_TRUE(procfs_alive(child, start));
        ASSERT_OK(rein_proc_kill_tree(p, SIGKILL));
        rein_proc_free(p);
    }
    /* At the cgroup level, the leaf went with what it held. */
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_run_get(reg, id, &r));
    registry_close(reg);
    if (!strcmp(level, "cgroup")) {
        contain_t *c;
        ASSERT_OK(contain_open("cgroup", &c));
        char leafdir[2 * PATH_MAX];
        ASSERT_TRUE(r.cgroup != NULL);
        snprintf(leafdir, sizeof leafdir, "%s%s", contain_cgroup2_mount(c),
                 r.cgroup);
        contain_free(c);
        ASSERT_EQ(access(leafdir, F_OK), -1);
    }
    run_record_clear(&r);
}

TEST_T(reconcile_ends_a_run_whose_supervisor_died_between_spawn_and_commit,
       90)
{
    /* The row says `starting`, with no pid: only the leaf its owner made
     * for it before the spawn (its instance cgroup + run-<id>, which the
     * owner's row records) can lead to the child.  At the cgroup level,
     * and wherever a pids cgroup holds runs, reconcile ends the child and
     * records `orphan-reaped`; with neither (the pids hierarchy hidden,
     * below the cgroup level), nothing leads to it: `lost`, and nothing
     * is signalled. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            tu_hide_pids_hierarchy();
        for (int l = 0; l < NLEVELS; l++) {
            contain_t *c;
            char why[256];
            if (contain_open_why(levels[l], &c, why, sizeof why) < 0)
                SKIP_FACILITY(levels[l], "%s", why);
            bool leaf = l == 0 || contain_has_pids_limit(c);
            contain_free(c);
            if (pass == 1 && l == 0)
                continue; /* the v2 leaf, as in pass 0 */
            window_case(levels[l], leaf);
        }
    }
}

/* How many times the stray scenario below is tried.  The daemon is a
 * stray only if no scan saw it below its run's leader first, in the
 * instant between the double fork and the exit of the parent in between;
 * a quiet run is scanned every REIN_SUP_SCAN_MS, so it takes a stall of
 * about that long for a scan to see it, and a second try is rare already. */
#define RECONCILE_TEST_STRAY_TRIES 3

/* The owner id of run id. */
static void owner_of(int64_t id, char out[REGISTRY_OWNER_ID_LEN])
{
    char dir[PATH_MAX];
    registry_t *reg;
    run_record_t r;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_run_get(reg, id, &r));
    memcpy(out, r.owner, REGISTRY_OWNER_ID_LEN);
    run_record_clear(&r);
    registry_close(reg);
}

/* How many strays owner has on record; *found: whether (pid, start) is
 * one of them (may be NULL). */
static size_t strays_of(const char *owner, pid_t pid, uint64_t start,
                        bool *found)
{
    char dir[PATH_MAX];
    registry_t *reg;
    stray_record_t *v;
    size_t n;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_strays(reg, owner, &v, &n));
    if (found) {
        *found = false;
        for (size_t i = 0; i < n; i++)
            *found = *found || (v[i].pid == pid && v[i].start_time == start);
    }
    free(v);
    registry_close(reg);
    return n;
}

/* How many owners have a live run or a stray on record. */
static size_t owners_listed(void)
{
    char dir[PATH_MAX];
    registry_t *reg;
    owner_record_t *ov;
    size_t n;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    ASSERT_OK(registry_owner_list(reg, &ov, &n));
    for (size_t i = 0; i < n; i++)
        owner_record_clear(&ov[i]);
    free(ov);
    registry_close(reg);
    return n;
}

/* The runs of the stray scenario: a quiet one, and a quiet one that
 * double-forks a daemon (quiet_escape_command).  Both are spawned before
 * the loop first runs, so both are live when the daemon is adopted. */
static void spawn_stray_runs(rein_sup_t *s, const char *pidfile,
                             int64_t ids[2], pid_t leaders[2])
{
    char cmd[3 * PATH_MAX + 128];
    quiet_escape_command(cmd, sizeof cmd, pidfile);
    const char *quiet[] = {"/bin/sh", "-c", "exec sleep 120", NULL};
    const char *daemon[] = {"/bin/sh", "-c", cmd, NULL};
    for (int k = 0; k < 2; k++) {
        rein_run_opts_t ro = {.argv = k ? daemon : quiet, .grace_ms = 60000,
                              .cwd = test_tmpdir()};
        ASSERT_OK(rein_sup_spawn(s, &ro, &ids[k]));
        rein_run_info_t info;
        ASSERT_OK(rein_sup_info(s, ids[k], &info));
        leaders[k] = info.pid;
    }
}

/* A supervisor in a child process at the subreaper level with the two
 * runs of spawn_stray_runs: reports "<id> <leader> <id> <leader>" on fd,
 * then only drives its loop until it is SIGKILLed. */
static void strays_supervisor_child(const char *pidfile, int fd)
{
    rein_sup_t *s = open_sup("subreaper");
    int64_t ids[2];
    pid_t leaders[2];
    spawn_stray_runs(s, pidfile, ids, leaders);
    dprintf(fd, "%lld %d %lld %d\n", (long long)ids[0], (int)leaders[0],
            (long long)ids[1], (int)leaders[1]);
    for (;;)
        rein_sup_run_once(s, -1);
}

struct strays_case {
    pid_t sup;
    int64_t ids[2];
    pid_t daemon;
    uint64_t daemon_start;
    char owner[REGISTRY_OWNER_ID_LEN];
};

/* Forks strays_supervisor_child and reads its report: the runs' ids, the
 * owner, and (once its pidfile is there) the daemon, and the leader of
 * the daemon's run in *leader.  With lock, the registry is held
 * (registry_hold) as soon as the runs are reported, before the first
 * scan can adopt the daemon. */
static void strays_spawn(const char *pidfile, struct strays_case *c,
                         sqlite3 **lock, pid_t *leader)
{
    int p[2];
    ASSERT_OK(pipe(p));
    fflush(NULL);
    c->sup = fork();
    ASSERT_INT(c->sup, >=, 0);
    if (c->sup == 0) {
        close(p[0]);
        strays_supervisor_child(pidfile, p[1]);
    }
    close(p[1]);
    char line[128] = {0};
    ASSERT_INT(read(p[0], line, sizeof line - 1), >, 0);
    close(p[0]);
    long long a, b;
    int la, lb;
    ASSERT_EQ(sscanf(line, "%lld %d %lld %d", &a, &la, &b, &lb), 4);
    c->ids[0] = a;
    c->ids[1] = b;
    *leader = lb;
    owner_of(c->ids[0], c->owner);
    if (lock)
        registry_hold(lock);
    c->daemon = tu_await_pid_file(pidfile, RECONCILE_TEST_STEP_MS);
    ASSERT_OK(procfs_start_time(c->daemon, &c->daemon_start));
}

/* Starts strays_supervisor_child and waits until its daemon is the
 * supervisor's child and then on record (bounded polls: the registry is
 * another process's).  True when it is recorded as a stray of the owner;
 * false when a scan saw it below its leader first (it is then that run's
 * descendant, and an escape). */
static bool strays_start(const char *pidfile, struct strays_case *c)
{
    pid_t lb;
    strays_spawn(pidfile, c, NULL, &lb);
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(c->daemon, &st));
    ASSERT_INT(st.start_time, ==, c->daemon_start);
    ASSERT_INT(st.session, !=, lb); /* it left its run's session */
    uint64_t t0 = test_now_ms();
    while (st.ppid != c->sup) {
        ASSERT_INT(test_now_ms() - t0, <, RECONCILE_TEST_STEP_MS);
        usleep(10000);
        ASSERT_OK(procfs_read_stat(c->daemon, &st));
    }
    /* Re-parented to a subreaper announces nothing: the periodic scan
     * finds it within its period. */
    t0 = test_now_ms();
    for (;;) {
        bool stray;
        strays_of(c->owner, c->daemon, c->daemon_start, &stray);
        if (stray)
            return true;
        for (int k = 0; k < 2; k++)
            if (registry_has_descendant(c->ids[k], c->daemon,
                                        c->daemon_start))
                return false;
        ASSERT_INT(test_now_ms() - t0, <,
                   REIN_SUP_SCAN_MS + RECONCILE_TEST_SCAN_SLACK_MS);
        usleep(10000);
    }
}

static void strays_crash(struct strays_case *c)
{
    int ws;
    ASSERT_OK(kill(c->sup, SIGKILL));
    ASSERT_EQ(waitpid(c->sup, &ws, 0), c->sup);
    ASSERT_TRUE(procfs_alive(c->daemon, c->daemon_start));
}

TEST_T(reconcile_ends_a_stray_no_run_could_claim_after_a_crash, 120)
{
    /* Two quiet runs at the subreaper level, no cgroup holding either
     * (the pids hierarchy hidden).  One double-forks a daemon that leaves
     * its session, ignores TERM, and whose parent exits at once: it comes
     * to rein, which cannot tell whose it is.  It is recorded under the
     * owner as a stray; after the crash, reconcile of the dead owner ends
     * it from that record alone.  A process rein never started lives on. */
    tu_hide_pids_hierarchy();
    int decoy_fd;
    pid_t decoy = tu_sleeper_start(&decoy_fd);
    uint64_t decoy_st;
    ASSERT_OK(procfs_start_time(decoy, &decoy_st));

    struct strays_case c;
    bool stray = false;
    for (int try = 0; try < RECONCILE_TEST_STRAY_TRIES && !stray; try++) {
        char pidfile[PATH_MAX];
        snprintf(pidfile, sizeof pidfile, "%s/daemon-%d.pid", test_tmpdir(),
                 try);
        stray = strays_start(pidfile, &c);
        if (!stray) {
            /* A scan saw it first: the run's, not a stray.  Clean up the
             * way a crash would be, and try again. */
            printf("try %d: the daemon was seen below its leader\n", try);
            strays_crash(&c);
            rein_reconcile_stats_t rs;
            reconcile_in_child("subreaper", NULL, &rs);
            ASSERT_FALSE(procfs_alive(c.daemon, c.daemon_start));
        }
    }
    ASSERT_TRUE(stray);
    for (int k = 0; k < 2; k++) /* no run's: it is a stray only */
        ASSERT_FALSE(registry_has_descendant(c.ids[k], c.daemon,
                                             c.daemon_start));
    int64_t strays0 = counter_of("run_reconcile_strays_total");
    strays_crash(&c);

    rein_reconcile_stats_t rs;
    reconcile_in_child("subreaper", NULL, &rs);
    ASSERT_EQ(rs.owners_dead, 1);
    ASSERT_EQ(rs.orphans_reaped, 2); /* both leaders, alive */
    ASSERT_EQ(rs.lost, 0);
    ASSERT_EQ(rs.strays_reaped, 1);
    ASSERT_EQ(rs.strays_lost, 0);
    ASSERT_FALSE(procfs_alive(c.daemon, c.daemon_start));
    ASSERT_TRUE(procfs_alive(decoy, decoy_st)); /* never rein's */
    ASSERT_EQ(counter_of("run_reconcile_strays_total") - strays0, 1);
    for (int k = 0; k < 2; k++)
        ASSERT_EQ(reason_of(c.ids[k]), REIN_REASON_ORPHAN_REAPED);
    /* Nothing is left on record: no live run, no stray, of anyone. */
    ASSERT_EQ(strays_of(c.owner, 0, 0, NULL), 0);
    ASSERT_EQ(owners_listed(), 0);
    tu_sleeper_stop(decoy, decoy_fd);
}

TEST_T(close_ends_strays_and_forgets_them_one_that_exits_at_once, 90)
{
    /* The stray scenario in this process, twice over: each of two quiet
     * runs double-forks a daemon, so both are strays.  One exits (killed
     * here, by its verified identity): rein reaps it and forgets its
     * record while it runs.  The other is ended by the close, which
     * leaves no record behind.  A child of the host's own session is the
     * host's business, never touched. */
    tu_hide_pids_hierarchy();
    const char *argv[] = {"sleep", "60", NULL};
    spawn_opts_t so;
    spawn_opts_init(&so);
    so.file = argv[0];
    so.argv = argv;
    so.group = SPAWN_INHERIT;
    int decoy_fd;
    pid_t decoy;
    ASSERT_OK(spawn_start(&so, &decoy, &decoy_fd, NULL));
    uint64_t decoy_st;
    ASSERT_OK(procfs_start_time(decoy, &decoy_st));

    bool done = false;
    for (int try = 0; try < RECONCILE_TEST_STRAY_TRIES && !done; try++) {
        rein_sup_t *s = open_sup("subreaper");
        char pidfile[2][PATH_MAX];
        int64_t ids[2][2];
        pid_t leaders[2][2], d[2] = {0, 0};
        uint64_t d_st[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            snprintf(pidfile[k], sizeof pidfile[k], "%s/daemon-%d-%d.pid",
                     test_tmpdir(), try, k);
            spawn_stray_runs(s, pidfile[k], ids[k], leaders[k]);
        }
        char owner[REGISTRY_OWNER_ID_LEN];
        owner_of(ids[0][0], owner);
        /* Drive the loop until both daemons are on record. */
        uint64_t t0 = test_now_ms();
        bool seen_below = false;
        for (;;) {
            rein_sup_run_once(s, 10);
            bool all = true;
            for (int k = 0; k < 2; k++) {
                if (!d[k] && access(pidfile[k], F_OK) == 0) {
                    d[k] = tu_read_pid_file(pidfile[k]);
                    ASSERT_OK(procfs_start_time(d[k], &d_st[k]));
                }
                bool rec = false;
                if (d[k])
                    strays_of(owner, d[k], d_st[k], &rec);
                all = all && rec;
                for (int j = 0; d[k] && j < 2; j++)
                    seen_below = seen_below ||
                                 registry_has_descendant(ids[k][j], d[k],
                                                         d_st[k]);
            }
            if (all || seen_below)
                break;
            ASSERT_INT(test_now_ms() - t0, <,
                       RECONCILE_TEST_STEP_MS + REIN_SUP_SCAN_MS);
        }
        if (seen_below) {
            printf("try %d: a daemon was seen below its leader\n", try);
            rein_sup_close(s);
            continue;
        }
        ASSERT_EQ(strays_of(owner, 0, 0, NULL), 2);
        /* The first exits: reaped on its SIGCHLD, its record forgotten. */
        ASSERT_OK(ptree_signal_one(d[0], d_st[0], SIGKILL));
        t0 = test_now_ms();
        while (strays_of(owner, 0, 0, NULL) != 1) {
            ASSERT_INT(test_now_ms() - t0, <, RECONCILE_TEST_STEP_MS);
            rein_sup_run_once(s, 10);
        }
        bool still;
        strays_of(owner, d[1], d_st[1], &still);
        ASSERT_TRUE(still);
        ASSERT_TRUE(procfs_alive(d[1], d_st[1]));
        /* Both runs still run: a stray is no run's escape. */
        for (int k = 0; k < 2; k++) {
            rein_run_info_t info;
            ASSERT_OK(rein_sup_info(s, ids[1][k], &info));
            ASSERT_EQ(info.state, REIN_RUN_RUNNING);
        }
        rein_sup_close(s);
        ASSERT_FALSE(procfs_alive(d[1], d_st[1]));
        procfs_stat_t st;
        ASSERT_TRUE(procfs_read_stat(d[1], &st) < 0 ||
                    st.start_time != d_st[1]); /* reaped, not a zombie */
        ASSERT_EQ(strays_of(owner, 0, 0, NULL), 0);
        ASSERT_EQ(owners_listed(), 0);
        done = true;
    }
    ASSERT_TRUE(done);
    ASSERT_TRUE(procfs_alive(decoy, decoy_st)); /* the host's own */
    tu_sleeper_stop(decoy, decoy_fd);
}

/* Adds a fake dead owner with no run and one stray (boot_id, pid, start),
 * as a crash would leave; returns the owner's id in owner. */
static void plant_stray(const char *boot_id, pid_t pid, uint64_t start,
                        unsigned tag, char owner[REGISTRY_OWNER_ID_LEN])
{
    char dir[PATH_MAX];
    registry_t *reg;
    state_dir(dir, sizeof dir);
    ASSERT_OK(registry_open(dir, &reg));
    owner_record_t o;
    memset(&o, 0, sizeof o);
    snprintf(o.id, sizeof o.id, "5%031x", tag);
    o.pid = 1;
    snprintf(o.boot_id, sizeof o.boot_id, "%s", boot_id);
    o.lease_expires_ms = 1; /* long expired; no lock file: dead */
    ASSERT_OK(registry_owner_add(reg, &o));
    stray_record_t x;
    memset(&x, 0, sizeof x);
    memcpy(x.owner, o.id, sizeof x.owner);
    snprintf(x.boot_id, sizeof x.boot_id, "%s", boot_id);
    x.pid = pid;
    x.start_time = start;
    ASSERT_OK(registry_stray_add(reg, &x));
    memcpy(owner, o.id, REGISTRY_OWNER_ID_LEN);
    registry_close(reg);
}

TEST(reconcile_never_signals_a_stray_record_that_is_not_that_process)
{
    /* A live process rein never started, named by stray records of dead
     * owners: one with its pid but another start time (the stray died and
     * its pid went to this one), one with its pid and start time but
     * another boot.  Neither is signalled; both records are forgotten and
     * counted lost, in a reconcile run elsewhere (so the decoy is no
     * child of the reconciler's). */
    char boot[PROCFS_BOOT_ID_LEN];
    ASSERT_OK(procfs_boot_id(boot));
    int decoy_fd;
    pid_t decoy = tu_sleeper_start(&decoy_fd);
    uint64_t st;
    ASSERT_OK(procfs_start_time(decoy, &st));
    char reused[REGISTRY_OWNER_ID_LEN], other_boot[REGISTRY_OWNER_ID_LEN];
    plant_stray(boot, decoy, st + 1, 1, reused);
    plant_stray("00000000-0000-0000-0000-000000000000", decoy, st, 2,
                other_boot);
    ASSERT_EQ(owners_listed(), 2); /* strays alone make them reconciled */

    rein_reconcile_stats_t rs;
    reconcile_in_child(NULL, NULL, &rs);
    ASSERT_EQ(rs.owners_dead, 2);
    ASSERT_EQ(rs.runs_stolen, 0);
    ASSERT_EQ(rs.strays_reaped, 0);
    ASSERT_EQ(rs.strays_lost, 2);
    ASSERT_TRUE(procfs_alive(decoy, st)); /* never signalled */
    ASSERT_EQ(strays_of(reused, 0, 0, NULL), 0);
    ASSERT_EQ(strays_of(other_boot, 0, 0, NULL), 0);
    ASSERT_EQ(owners_listed(), 0);
    ASSERT_EQ(counter_of("run_reconcile_strays_total"), 0);
    /* Its end is ours: the KILL below, not a TERM from reconcile. */
    ASSERT_OK(kill(decoy, SIGKILL));
    int code;
    ASSERT_OK(spawn_reap(decoy, decoy_fd, &code));
    ASSERT_EQ(code, 128 + SIGKILL);
    if (decoy_fd >= 0)
        close(decoy_fd);
}

/* Whether the state dir's event log has an event of type whose field is
 * value (the log is another process's: read afresh each time). */
static bool event_seen(const char *type, const char *field, json_int_t value)
{
    char path[PATH_MAX + 32];
    state_dir(path, sizeof path);
    snprintf(path + strlen(path), sizeof path - strlen(path), "/%s",
             EVENTS_FILE);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool seen = false;
    while (!seen && getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        seen = o &&
               !strcmp(json_string_value(json_object_get(o, "type"))
                           ? json_string_value(json_object_get(o, "type"))
                           : "",
                       type) &&
               json_integer_value(json_object_get(o, field)) == value;
        json_decref(o);
    }
    free(line);
    fclose(f);
    return seen;
}

TEST_T(a_stray_the_registry_refused_is_recorded_at_the_next_heartbeat, 120)
{
    /* The stray scenario with the registry locked by another writer when
     * the daemon is adopted: its record fails (after the busy timeout),
     * which is an event, and the supervisor goes on.  Once the lock is
     * gone, the heartbeat writes it, so the crash that follows still
     * leaves it to reconcile. */
    tu_hide_pids_hierarchy();
    bool done = false;
    for (int try = 0; try < RECONCILE_TEST_STRAY_TRIES && !done; try++) {
        char pidfile[PATH_MAX];
        snprintf(pidfile, sizeof pidfile, "%s/locked-%d.pid", test_tmpdir(),
                 try);
        struct strays_case c;
        sqlite3 *raw;
        pid_t lb;
        strays_spawn(pidfile, &c, &raw, &lb);
        uint64_t t0 = test_now_ms();
        bool refused = false, below = false;
        while (!refused && !below) {
            refused = event_seen("registry_error", "stray", c.daemon);
            below = event_seen("descendant", "pid", c.daemon);
            ASSERT_INT(test_now_ms() - t0, <,
                       REIN_SUP_SCAN_MS + REGISTRY_BUSY_TIMEOUT_MS +
                           RECONCILE_TEST_STEP_MS);
            usleep(10000);
        }
        /* Adopted all the same: the event says so. */
        ASSERT_TRUE(below || event_seen("stray", "pid", c.daemon));
        ASSERT_EQ(sqlite3_exec(raw, "ROLLBACK", NULL, NULL, NULL),
                  SQLITE_OK);
        sqlite3_close(raw);
        if (below) {
            printf("try %d: the daemon was seen below its leader\n", try);
        } else {
            t0 = test_now_ms();
            for (;;) {
                bool stray;
                strays_of(c.owner, c.daemon, c.daemon_start, &stray);
                if (stray)
                    break;
                ASSERT_INT(test_now_ms() - t0, <,
                           REIN_SUP_HEARTBEAT_MS + REGISTRY_BUSY_TIMEOUT_MS +
                               RECONCILE_TEST_SCAN_SLACK_MS);
                usleep(10000);
            }
        }
        strays_crash(&c);
        rein_reconcile_stats_t rs;
        reconcile_in_child("subreaper", NULL, &rs);
        ASSERT_FALSE(procfs_alive(c.daemon, c.daemon_start));
        if (!below) {
            ASSERT_EQ(rs.strays_reaped, 1);
            done = true;
        }
    }
    ASSERT_TRUE(done);
}

TEST_T(a_descendant_the_registry_refused_is_recorded_at_the_next_heartbeat,
       120)
{
    /* The quiet escapee of reconcile_ends_a_quiet_runs_escapee_..., with
     * the registry held by another writer when the periodic scan finds
     * it: its row fails (after the busy timeout), which is an event, and
     * is written at a heartbeat once the registry is free, so the crash
     * that follows still leaves it to reconcile.  It used to be kept in
     * memory only. */
    tu_hide_pids_hierarchy();
    char pidfile[PATH_MAX];
    snprintf(pidfile, sizeof pidfile, "%s/escapee.pid", test_tmpdir());
    struct quiet q;
    sqlite3 *lock;
    quiet_start_locked("subreaper", pidfile, &q, &lock);
    uint64_t t0 = test_now_ms();
    while (!event_seen("registry_error", "descendant", q.esc)) {
        ASSERT_INT(test_now_ms() - t0, <,
                   REIN_SUP_SCAN_MS + REGISTRY_BUSY_TIMEOUT_MS +
                       RECONCILE_TEST_STEP_MS);
        usleep(10000);
    }
    ASSERT_FALSE(registry_has_descendant(q.id, q.esc, q.esc_start));
    ASSERT_EQ(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(lock);
    t0 = test_now_ms();
    while (!registry_has_descendant(q.id, q.esc, q.esc_start)) {
        ASSERT_INT(test_now_ms() - t0, <,
                   REIN_SUP_HEARTBEAT_MS + REGISTRY_BUSY_TIMEOUT_MS +
                       RECONCILE_TEST_SCAN_SLACK_MS);
        usleep(10000);
    }
    quiet_crash(&q);
    rein_reconcile_stats_t rs;
    reconcile_in_child("subreaper", NULL, &rs);
    ASSERT_FALSE(procfs_alive(q.esc, q.esc_start));
}

/* What a crashing supervisor reports before it dies: the run and its
 * leader. */
struct shown {
    int64_t id;
    pid_t leader;
};

/* A supervisor in a child process: spawns a run that prints three lines
 * and sleeps, and the moment its output callback has seen them all (shown
 * to whoever reads the run), reports the run on fd and dies of SIGKILL:
 * no flush, no close, no timer after that. */
static void crash_after_output(const char *level, bool tty, int fd)
{
    rein_sup_t *s = open_sup(level);
    struct seen seen = {BUF_INIT};
    const char *argv[] = {"/bin/sh", "-c",
                          "trap '' HUP; echo one; echo two; echo ready; "
                          "exec sleep 300",
                          NULL};
    rein_run_opts_t ro = {.argv = argv, .tty = tty, .grace_ms = -1,
                          .cwd = test_tmpdir(), .on_output = collect,
                          .data = &seen};
    struct shown sh = {0};
    if (rein_sup_spawn(s, &ro, &sh.id) < 0)
        _exit(3);
    rein_run_info_t info;
    rein_sup_info(s, sh.id, &info);
    sh.leader = info.pid;
    uint64_t t0 = test_now_ms();
    while (test_now_ms() - t0 < RECONCILE_TEST_STEP_MS) {
        rein_sup_run_once(s, 100);
        if (seen.out.p && strstr(seen.out.p, "ready")) {
            if (write(fd, &sh, sizeof sh) != (ssize_t)sizeof sh)
                _exit(5);
            raise(SIGKILL);
        }
    }
    _exit(4);
}

/* Every byte rein had read (and handed on) before its SIGKILL is in the
 * run's log: the log is complete up to the crash.  It was gathered in
 * memory for up to 200 ms, and a crash lost it though a client had been
 * shown it.  Reconcile then ends the run, its log untouched. */
TEST_T(a_sigkilled_supervisors_log_holds_every_byte_it_had_read, 60)
{
    for (int tty = 0; tty < 2; tty++) {
        int rd;
        pid_t sup = fork_supervisor(crash_after_output, "pgid", tty, &rd);
        struct shown sh;
        ASSERT_EQ(read(rd, &sh, sizeof sh), (ssize_t)sizeof sh);
        close(rd);
        uint64_t leader_st = 0;
        ASSERT_OK(procfs_start_time(sh.leader, &leader_st));
        int st;
        ASSERT_EQ(waitpid(sup, &st, 0), sup);
        ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

        char path[PATH_MAX];
        buf_t log = BUF_INIT;
        snprintf(path, sizeof path, "%s/state/logs/%lld.log", test_tmpdir(),
                 (long long)sh.id);
        ASSERT_TRUE(tu_read_file(path, &log));
        ASSERT_STR(log.p ? log.p : "",
                   tty ? "one\r\ntwo\r\nready\r\n" : "one\ntwo\nready\n");

        rein_reconcile_stats_t rs;
        reconcile_in_child("pgid", NULL, &rs);
        ASSERT_EQ(rs.orphans_reaped, 1);
        ASSERT_FALSE(procfs_alive(sh.leader, leader_st));
        ASSERT_EQ(reason_of(sh.id), REIN_REASON_ORPHAN_REAPED);
        buf_t after = BUF_INIT;
        ASSERT_TRUE(tu_read_file(path, &after));
        ASSERT_MEM(after.p, after.len, log.p, log.len);
        /* The row, last written at spawn, learns the log's count from
         * reconcile, so `rein ps` agrees with the log. */
        char dir[PATH_MAX];
        registry_t *reg;
        run_record_t rec;
        state_dir(dir, sizeof dir);
        ASSERT_OK(registry_open(dir, &reg));
        ASSERT_OK(registry_run_get(reg, sh.id, &rec));
        ASSERT_EQ(rec.bytes, (uint64_t)log.len);
        ASSERT_INT(rec.last_output_ms, >=, rec.started_ms);
        run_record_clear(&rec);
        registry_close(reg);
        buf_free(&log);
        buf_free(&after);
    }
}

/* Every owner row of the state dir's registry (live or not). */
static long long owner_rows(void)
{
    char db[PATH_MAX + 32];
    snprintf(db, sizeof db, "%s/state/%s", test_tmpdir(), REGISTRY_FILE);
    sqlite3 *raw;
    sqlite3_stmt *st;
    ASSERT_EQ(sqlite3_open_v2(db, &raw, SQLITE_OPEN_READONLY, NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT count(*) FROM owners", -1, &st,
                                 NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    return n;
}

/* Each rein process is an owner: a row and a lock file.  They must go when
 * it closes, and when it died and was reconciled (with runs or without),
 * or a state dir used by `rein run` a few thousand times holds a few
 * thousand rows that every reconcile reads. */
TEST(owners_leave_no_row_behind_closed_or_dead)
{
    enum { OPENS = 30 };
    char dir[PATH_MAX], boot[PROCFS_BOOT_ID_LEN];
    state_dir(dir, sizeof dir);
    ASSERT_OK(procfs_boot_id(boot));
    for (int i = 0; i < OPENS; i++) {
        rein_sup_t *s = open_sup("pgid");
        ASSERT_EQ(owner_rows(), 1);
        rein_sup_close(s);
    }
    ASSERT_EQ(owner_rows(), 0);

    /* A dead owner that held nothing (lease run out, its lock file left
     * behind, its process gone) and one that died with a run. */
    int fd;
    pid_t gone = tu_sleeper_start(&fd);
    uint64_t gone_start;
    ASSERT_OK(procfs_start_time(gone, &gone_start));
    tu_sleeper_stop(gone, fd);
    char lock[PATH_MAX + 64];
    snprintf(lock, sizeof lock, "%s/owners/%s.lock", dir,
             "e0000000000000000000000000000001");
    int lfd = open(lock, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_TRUE(lfd >= 0);
    close(lfd);
    registry_t *reg;
    ASSERT_OK(registry_open(dir, &reg));
    owner_record_t o;
    memset(&o, 0, sizeof o);
    snprintf(o.id, sizeof o.id, "e0000000000000000000000000000001");
    snprintf(o.boot_id, sizeof o.boot_id, "%s", boot);
    o.pid = gone;
    o.start_time = gone_start;
    o.lock_path = lock;
    o.lease_expires_ms = 1;
    ASSERT_OK(registry_owner_add(reg, &o));
    registry_close(reg);
    int64_t run = plant(boot, gone, gone_start);
    ASSERT_EQ(owner_rows(), 2);

    rein_sup_t *s = open_sup("pgid");
    ASSERT_EQ(reason_of(run), REIN_REASON_LOST);
    ASSERT_EQ(owner_rows(), 1); /* ours only */
    ASSERT_EQ(access(lock, F_OK), -1);
    rein_sup_close(s);
    ASSERT_EQ(owner_rows(), 0);
}

/* Starts `rein reconcile --watch 3 --pid <this process> --start <its
 * start time + skew> --state-dir <the test's>` as this process's child,
 * its fd 3 a pipe already at end of file with no bye (as an owner that
 * died leaves it), stdout and stderr to out_fd.  Returns the watchman's
 * pid. */
static pid_t watch_spawn(int out_fd, uint64_t skew)
{
    char bin[PATH_MAX], me[32], start[32], dir[PATH_MAX];
    uint64_t ticks;
    ASSERT_OK(procfs_start_time(getpid(), &ticks));
    snprintf(bin, sizeof bin, "%s/rein", test_build_dir());
    snprintf(me, sizeof me, "%ld", (long)getpid());
    snprintf(start, sizeof start, "%llu", (unsigned long long)(ticks + skew));
    state_dir(dir, sizeof dir);
    const char *argv[] = {bin,     "reconcile", "--watch",     "3",
                          "--pid", me,          "--start",     start,
                          "--state-dir", dir,   NULL};
    int p[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC));
    close(p[1]);
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = bin;
    o.argv = argv;
    o.fd_out = o.fd_err = out_fd;
    o.extra_fds = &p[0];
    o.n_extra_fds = 1;
    o.want_pidfd = false;
    pid_t pid;
    ASSERT_OK(spawn_start(&o, &pid, NULL, NULL));
    close(p[0]);
    return pid;
}

/* Waits for child pid and says it exited 0. */
static void reaped_ok(pid_t pid)
{
    int code;
    ASSERT_OK(spawn_reap(pid, -1, &code));
    ASSERT_EQ(code, 0);
}

/* Plants a running run of another boot (leader `sleeper`, started at st)
 * and starts a watchman for this process's identity, its start time plus
 * skew: directly, or through a server child that starts it and exits at
 * once (the watchman then goes to the runner, which reaps it).  Waits for
 * the watchman's end (its stdout's), checks that it said nothing and
 * reconciled (the run is lost now), and returns the time that took. */
static uint64_t watch_once(pid_t sleeper, uint64_t st, uint64_t skew,
                           bool through_server)
{
    const char *other_boot = "00000000-0000-0000-0000-000000000000";
    int64_t id = plant(other_boot, sleeper, st);
    ASSERT_EQ(reason_of(id), -1);
    int p[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC));
    uint64_t t0 = test_now_ms();
    pid_t pid = through_server ? fork() : watch_spawn(p[1], skew);
    ASSERT_INT(pid, >=, 0);
    if (pid == 0)
        _exit(watch_spawn(p[1], skew) > 0 ? 0 : 1);
    reaped_ok(pid);
    close(p[1]);
    buf_t out = BUF_INIT;
    ASSERT_OK(tu_read_all(p[0], &out));
    close(p[0]);
    uint64_t took = test_now_ms() - t0;
    ASSERT_STR(out.p ? out.p : "", "");
    ASSERT_EQ(reason_of(id), REIN_REASON_LOST);
    buf_free(&out);
    return took;
}

/*
 * WATCHMAN_EXIT_WAIT_MS at both edges.  The watchman of an owner that
 * closed its pipe without the bye but lives on (this test) waits the
 * whole bound, then reconciles all the same (a live owner's runs are
 * never touched); the watchman of an owner whose pid now has another
 * start time (a reused pid), or of an owner that is gone, reconciles at
 * once.
 */
TEST_T(reconcile_watch_waits_for_a_live_server_at_most_its_bound, 60)
{
    int pidfd;
    pid_t sleeper = tu_sleeper_start(&pidfd);
    uint64_t st;
    ASSERT_OK(procfs_start_time(sleeper, &st));
    ASSERT_INT(watch_once(sleeper, st, 0, false), >=, WATCHMAN_EXIT_WAIT_MS);
    ASSERT_INT(watch_once(sleeper, st, 1, false), <, WATCHMAN_EXIT_WAIT_MS);
    ASSERT_INT(watch_once(sleeper, st, 0, true), <, WATCHMAN_EXIT_WAIT_MS);
    ASSERT_TRUE(procfs_alive(sleeper, st)); /* another boot's: untouched */
    tu_sleeper_stop(sleeper, pidfd);
}
