/*
 * test_cli_sup.c — `rein kill` and `rein reconcile` against a live owner in
 * another process, a dead owner's run, and bad input.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "harness.h"
#include "supervise/registry.h"
#include "tutil.h"

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
    bool ready; /* the run said so: its TERM trap is set */
};

static void owner_output(rein_sup_t *s, int64_t id, const void *data,
                         size_t len, void *ud)
{
    (void)s;
    (void)id;
    struct owner_report *r = ud;
    if (memmem(data, len, "ready", 5))
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

/* An owner in a child process: spawns a TERM-ignoring run, reports its id
 * and pid on fd once the run has set its trap (a TERM before it would end
 * the run at once), drives the run to its end, then exits with the run's
 * reason as status. */
static void owner_child(int fd)
{
    rein_sup_t *s;
    rein_sup_opts_t so = {.no_reconcile = true};
    if (rein_sup_open(&so, &s) < 0)
        _exit(100);
    struct owner_report rep = {REIN_REASON_NONE, 0, false};
    const char *argv[] = {"/bin/sh", "-c",
                          "trap '' TERM; echo ready; sleep 60 & wait", NULL};
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
    close(fd);
    while (!rep.exits)
        rein_sup_run_once(s, 100);
    rein_sup_close(s);
    _exit((int)rep.reason);
}

TEST_T(cli_kill_ends_a_live_owners_run_with_escalation, 60)
{
    char dir[PATH_MAX];
    use_state_dir(dir, sizeof dir);
    int p[2];
    ASSERT_OK(pipe(p));
    fflush(NULL);
    pid_t owner = fork();
    if (owner == 0) {
        close(p[0]);
        owner_child(p[1]);
    }
    close(p[1]);
    char line[64] = {0};
    ASSERT_INT(read(p[0], line, sizeof line - 1), >, 0);
    close(p[0]);
    long long id;
    int pid;
    ASSERT_EQ(sscanf(line, "%lld %d", &id, &pid), 2);
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
    int st;
    ASSERT_EQ(waitpid(owner, &st, 0), owner);
    ASSERT_TRUE(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), REIN_REASON_SIGNAL); /* the owner saw it */
    /* Again: the run is over now. */
    buf_reset(&out);
    ASSERT_EQ(rein(args, &out), 0);
    ASSERT_CONTAINS(out.p, "already exited");
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
    };
    /* What each line must name. */
    static const char *const says[] = {
        "which run?", "'abc' is not a run id", "no run with id 424242",
        "unknown signal 'SIGNOPE'", "not '-5'", "unknown option '--bogus'",
        "--grace-ms needs a value", "unexpected argument 'extra'",
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

TEST(cli_reconcile_marks_a_foreign_boot_lost)
{
    char dir[PATH_MAX];
    use_state_dir(dir, sizeof dir);
    registry_t *reg;
    ASSERT_OK(registry_open(dir, &reg));
    owner_record_t o;
    memset(&o, 0, sizeof o);
    snprintf(o.id, sizeof o.id, "%032d", 7);
    o.pid = 1;
    snprintf(o.boot_id, sizeof o.boot_id, "%s",
             "11111111-1111-1111-1111-111111111111");
    o.lease_expires_ms = 1;
    ASSERT_OK(registry_owner_add(reg, &o));
    run_record_t r;
    run_record_init(&r);
    memcpy(r.owner, o.id, sizeof r.owner);
    memcpy(r.boot_id, o.boot_id, sizeof r.boot_id);
    r.pid = r.pgid = r.sid = getpid(); /* would be us: must not be touched */
    snprintf(r.containment, sizeof r.containment, "pgid");
    r.state = REIN_RUN_RUNNING;
    ASSERT_OK(registry_run_insert(reg, &r));
    run_record_clear(&r);
    registry_close(reg);
    buf_t out = BUF_INIT;
    const char *args[] = {"reconcile", NULL};
    ASSERT_EQ(rein(args, &out), 0);
    ASSERT_CONTAINS(out.p, "lost 1");
    buf_free(&out); /* and we are still here */
}
