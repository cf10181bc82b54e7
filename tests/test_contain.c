/*
 * test_contain.c — containment against real processes, at every level.
 *
 * Each behaviour is checked at each level (cgroup, subreaper, pgid), the
 * level forced as REIN_CONTAINMENT would: a child and its children are
 * inside the run's cgroups (the first one born in the v2 leaf where clone3
 * can, joining it by a write where not), a double-forked setsid daemon is
 * reported as an escape and still killed, a background job of an
 * interactive shell on a PTY is not an escape, a fork bomb stops at the
 * pids limit, leaves are removed when freed, a run's leaf is attached
 * again (for reconcile) from any cgroup and at any level, by its shape and
 * run id alone.  Tests synchronise on lines the processes print and on
 * cgroup.events / SIGCHLD, never on sleeps.
 *
 * Scaffolding: every test process makes itself a child subreaper (at the
 * pgid level too, where contain_open leaves the flag alone), so that every
 * orphan of a run comes back to the test to be reaped and nothing is left
 * to the runner.  What contain_open itself does with the flag is checked in
 * contain_detects_and_forces_levels, before any scaffolding.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/procfs.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"
#include "supervise/contain.h"

/* How long a test waits for a line or for a run to empty before failing. */
#define WAIT_MS 15000
/* The pids limit the fork bomb runs under, and how far it would go alone. */
#define BOMB_PIDS_MAX 16
#define BOMB_TRY_MAX (BOMB_PIDS_MAX * 8)
/* statfs f_type of a cgroup2 mount (linux/magic.h). */
#define TEST_CGROUP2_MAGIC 0x63677270
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
/* An unprivileged uid/gid ("nobody"). */
#define TEST_NOBODY 65534

/* Each behaviour at each level: NAME_cgroup, NAME_subreaper, NAME_pgid. */
#define LEVEL_TEST(name)                                                    \
    static void name(contain_level_t level);                                \
    TEST(name##_cgroup) { name(CONTAIN_CGROUP); }                           \
    TEST(name##_subreaper) { name(CONTAIN_SUBREAPER); }                     \
    TEST(name##_pgid) { name(CONTAIN_PGID); }                               \
    static void name(contain_level_t level)

/* ------------------------------------------------------------- helpers */

static bool subreaper_flag(void)
{
    int on = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &on, 0, 0, 0);
    return on != 0;
}

/* Opens containment forced to level (skipping where the machine lacks it)
 * and sets up the scaffolding described at the top of the file. */
static contain_t *open_level(contain_level_t level)
{
    char why[512];
    contain_t *c;
    int rc = contain_open_why(contain_level_name(level), &c, why, sizeof why);
    if (rc == -ENOTSUP)
        SKIP_FACILITY(contain_level_name(level), "%s", why);
    ASSERT_OK(rc);
    ASSERT_EQ(contain_level(c), level);
    ASSERT_OK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    return c;
}

/* Spawns argv in run r (own session), stdout on a pipe returned in *out. */
static pid_t spawn_in(contain_run_t *r, const char *const *argv, int *out,
                      int in)
{
    int fds[CONTAIN_MAX_JOIN_FDS];
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.fd_in = in;
    contain_run_spawn_opts(r, &o, fds);
    o.want_pidfd = false;
    pid_t pid;
    *out = tu_spawn_opts_piped(&o, &pid, NULL);
    return pid;
}

/* spawn_in of tests/bin/contain_helper in the given mode, stdin on
 * /dev/null. */
static pid_t spawn_helper(contain_run_t *r, const char *mode, int *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/contain_helper", test_bin_dir());
    const char *argv[] = {path, mode, NULL};
    return spawn_in(r, argv, out, -1);
}

/* Reads fd into acc until a line "<word> <number>..." (or just "<word>")
 * is there; returns the number (0 without one) and, when line is not
 * NULL, the whole line.  That line alone is removed from acc: lines of
 * several processes arrive in any order. */
static long expect_line(int fd, buf_t *acc, const char *word, char *line_out,
                        size_t line_size)
{
    uint64_t deadline = test_now_ms() + WAIT_MS;
    size_t wl = strlen(word);
    for (;;) {
        for (char *line = acc->p; line && *line;) {
            char *nl = strchr(line, '\n');
            if (!nl)
                break;
            if (!strncmp(line, word, wl) &&
                (line[wl] == ' ' || line[wl] == '\n' || line[wl] == '\r')) {
                long v = line[wl] == ' ' ? strtol(line + wl + 1, NULL, 10) : 0;
                if (line_out)
                    snprintf(line_out, line_size, "%.*s", (int)(nl - line),
                             line);
                memmove(line, nl + 1, strlen(nl + 1) + 1);
                acc->len -= (size_t)(nl + 1 - line);
                return v;
            }
            line = nl + 1;
        }
        int64_t left = (int64_t)(deadline - test_now_ms());
        if (left <= 0)
            test_fail(__FILE__, __LINE__, "no \"%s\" line in time; got \"%s\"",
                      word, acc->p ? acc->p : "");
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, (int)left) <= 0)
            continue;
        char tmp[512];
        ssize_t k = read(fd, tmp, sizeof tmp);
        if (k <= 0)
            test_fail(__FILE__, __LINE__, "EOF before \"%s\"; got \"%s\"",
                      word, acc->p ? acc->p : "");
        ASSERT_OK(buf_append(acc, tmp, (size_t)k));
    }
}

/* Reaps every child already exited. */
static void reap_exited(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* Reaps every child there is, blocking: only for processes known to be
 * dead or dying. */
static void reap_all(void)
{
    for (;;) {
        if (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
            continue;
        ASSERT_EQ(errno, ECHILD);
        return;
    }
}

/*
 * Waits until nothing is left in the run, reaping on the way.  At the
 * cgroup level the wake-up is cgroup.events (POLLPRI on each change of
 * "populated"); below it, SIGCHLD: every member is our descendant and the
 * test is a subreaper, so the last one to die is our child.
 */
static void wait_empty(contain_run_t *r)
{
    uint64_t deadline = test_now_ms() + WAIT_MS;
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    for (;;) {
        reap_exited();
        if (!contain_run_populated(r))
            break;
        int64_t left = (int64_t)(deadline - test_now_ms());
        if (left <= 0)
            test_fail(__FILE__, __LINE__, "run still populated");
        int efd = contain_run_events_fd(r);
        if (efd >= 0) {
            struct pollfd pfd = {efd, POLLPRI, 0};
            poll(&pfd, 1, (int)left);
        } else {
            struct timespec ts = {left / 1000, (left % 1000) * 1000000};
            sigtimedwait(&chld, NULL, &ts);
        }
    }
    reap_all();
}

/* The directory of cgroup rel in the hierarchy of fstype (and super
 * option opt), from /proc/self/mountinfo: an independent reading. */
static void cg_dir(const char *fstype, const char *opt, const char *rel,
                   char *out, size_t size)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    bool found = false;
    ASSERT_TRUE(f != NULL);
    while (!found && fgets(line, sizeof line, f)) {
        char root[1024], mnt[1024], type[64], src[256], sopts[1024];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2 ||
            sscanf(dash + 3, "%63s %255s %1023s", type, src, sopts) != 3)
            continue;
        if (strcmp(type, fstype) || (opt && !strstr(sopts, opt)))
            continue;
        size_t rl = strcmp(root, "/") ? strlen(root) : 0;
        ASSERT_INT(strncmp(rel, root, rl), ==, 0);
        snprintf(out, size, "%s%s", mnt, rel + rl);
        found = true;
    }
    fclose(f);
    ASSERT_TRUE(found);
}

/* The cgroup of pid in the v1 hierarchy with controller, as test_contain
 * reads it itself. */
static void v1_cgroup_of(pid_t pid, const char *controller, char *out,
                         size_t size)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
    FILE *f = fopen(path, "re");
    bool found = false;
    ASSERT_TRUE(f != NULL);
    while (!found && fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        if (strcmp(c1 + 1, controller))
            continue;
        c2[1 + strcspn(c2 + 1, "\n")] = 0;
        snprintf(out, size, "%s", c2 + 1);
        found = true;
    }
    fclose(f);
    ASSERT_TRUE(found);
}

static bool path_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Frees r and checks its cgroup directories are gone with it. */
static void free_run_checked(contain_run_t *r)
{
    char v2[PATH_MAX] = "", pids[PATH_MAX] = "";
    if (contain_run_cgroup(r))
        cg_dir("cgroup2", NULL, contain_run_cgroup(r), v2, sizeof v2);
    if (contain_run_pids_cgroup(r))
        cg_dir("cgroup", "pids", contain_run_pids_cgroup(r), pids, sizeof pids);
    if (v2[0])
        ASSERT_TRUE(path_exists(v2));
    if (pids[0])
        ASSERT_TRUE(path_exists(pids));
    contain_run_free(r);
    if (v2[0])
        ASSERT_FALSE(path_exists(v2));
    if (pids[0])
        ASSERT_FALSE(path_exists(pids));
}

/* The boundary a level must give a run here; skips where it is missing. */
static void require_boundary(contain_t *c, contain_level_t level)
{
    if (level != CONTAIN_CGROUP && !contain_has_pids_limit(c))
        SKIP_FACILITY("pids-limit", "no run cgroup at %s: %s",
                      contain_level_name(level), contain_note(c));
}

/* ------------------------------------------------------------- detection */

TEST(contain_detects_and_forces_levels)
{
    static const contain_level_t levels[] = {CONTAIN_CGROUP,
                                             CONTAIN_SUBREAPER, CONTAIN_PGID};
    contain_t *c;
    char why[512];

    ASSERT_FALSE(subreaper_flag()); /* the runner's test processes start so */
    ASSERT_OK(unsetenv("REIN_CONTAINMENT"));
    ASSERT_OK(contain_open(NULL, &c));
    if (contain_level(c) != CONTAIN_CGROUP)
        SKIP_FACILITY("cgroup", "best level is %s: %s",
                      contain_level_name(contain_level(c)), contain_note(c));
    if (!contain_has_pids_limit(c))
        SKIP_FACILITY("pids-limit", "%s", contain_note(c));
    /* The mount found through mountinfo really is a cgroup2 file system. */
    struct statfs sfs;
    ASSERT_OK(statfs(contain_cgroup2_mount(c), &sfs));
    ASSERT_EQ(sfs.f_type, TEST_CGROUP2_MAGIC);
    contain_free(c);
    ASSERT_FALSE(subreaper_flag()); /* turned off again by contain_free */

    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
        const char *name = contain_level_name(levels[i]);
        contain_level_t parsed;
        ASSERT_OK(contain_level_parse(name, &parsed));
        ASSERT_EQ(parsed, levels[i]);

        ASSERT_OK(contain_open(name, &c));
        ASSERT_EQ(contain_level(c), levels[i]);
        /* Orphans come to rein at the cgroup and subreaper levels only. */
        ASSERT_EQ(subreaper_flag(), levels[i] != CONTAIN_PGID);
        ASSERT_EQ(contain_cgroup2_mount(c) != NULL, levels[i] == CONTAIN_CGROUP);
        contain_free(c);
        ASSERT_FALSE(subreaper_flag());

        ASSERT_OK(setenv("REIN_CONTAINMENT", name, 1));
        ASSERT_OK(contain_open(NULL, &c));
        ASSERT_EQ(contain_level(c), levels[i]);
        contain_free(c);
    }

    ASSERT_OK(setenv("REIN_CONTAINMENT", "bogus", 1));
    ASSERT_EQ(contain_open_why(NULL, &c, why, sizeof why), -EINVAL);
    ASSERT_TRUE(c == NULL);
    ASSERT_CONTAINS(why, "bogus");
    ASSERT_EQ(contain_open("cgroupv2", &c), -EINVAL);
    ASSERT_EQ(contain_level_parse("", &(contain_level_t){0}), -EINVAL);
    ASSERT_STR(contain_level_name((contain_level_t)0), "unknown");
    /* An empty variable is the same as none: the best level. */
    ASSERT_OK(setenv("REIN_CONTAINMENT", "", 1));
    ASSERT_OK(contain_open(NULL, &c));
    ASSERT_EQ(contain_level(c), CONTAIN_CGROUP);
    contain_free(c);
    contain_free(NULL);
    contain_run_free(NULL);
}

TEST(contain_unprivileged_user_gets_no_cgroup_level)
{
    contain_t *c;
    char why[512];
    if (geteuid() != 0)
        SKIP("needs root to become an unprivileged user");
    /* This test process only: nobody owns no cgroup and no delegated
     * subtree, so the cgroup level must be refused, naming why. */
    ASSERT_OK(setresgid(TEST_NOBODY, TEST_NOBODY, TEST_NOBODY));
    ASSERT_OK(setresuid(TEST_NOBODY, TEST_NOBODY, TEST_NOBODY));
    ASSERT_EQ(contain_open_why("cgroup", &c, why, sizeof why), -ENOTSUP);
    ASSERT_TRUE(c == NULL);
    ASSERT_CONTAINS(why, "cgroup: ");
    ASSERT_OK(unsetenv("REIN_CONTAINMENT"));
    ASSERT_OK(contain_open(NULL, &c));
    ASSERT_EQ(contain_level(c), CONTAIN_SUBREAPER);
    ASSERT_FALSE(contain_has_pids_limit(c));
    ASSERT_CONTAINS(contain_note(c), "cgroup: ");
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 1, 0, &r));
    ASSERT_TRUE(contain_run_cgroup(r) == NULL);
    spawn_opts_t o;
    spawn_opts_init(&o);
    contain_run_spawn_opts(r, &o, (int[CONTAIN_MAX_JOIN_FDS]){0});
    ASSERT_EQ(o.cgroup_fd, -1);
    ASSERT_EQ(o.cgroup_procs_fd, -1);
    ASSERT_EQ(o.n_join_fds, 0);
    ASSERT_EQ(contain_run_kill(r), -ENOTSUP);
    ASSERT_FALSE(contain_run_populated(r));
    contain_run_free(r);
    contain_free(c);
}

TEST(contain_cgroup_of_reads_proc)
{
    char cg[PATH_MAX], line[PATH_MAX + 8] = "";
    FILE *f = fopen("/proc/self/cgroup", "re");
    ASSERT_TRUE(f != NULL);
    while (fgets(line, sizeof line, f) && strncmp(line, "0::", 3))
        ;
    fclose(f);
    if (strncmp(line, "0::", 3))
        SKIP_FACILITY("cgroup", "no cgroup v2 line in /proc/self/cgroup");
    line[strcspn(line, "\n")] = 0;
    ASSERT_OK(contain_cgroup_of(getpid(), cg, sizeof cg));
    ASSERT_STR(cg, line + 3);
    ASSERT_EQ(contain_cgroup_of(0, cg, sizeof cg), -EINVAL);
    ASSERT_EQ(contain_cgroup_of(getpid(), cg, 1), -ENAMETOOLONG);
    /* A child reaped is gone: its pid names nothing. */
    pid_t kid = fork();
    ASSERT_INT(kid, >=, 0);
    if (kid == 0)
        _exit(0);
    ASSERT_EQ(waitpid(kid, NULL, 0), kid);
    ASSERT_EQ(contain_cgroup_of(kid, cg, sizeof cg), -ESRCH);
}

/* --------------------------------------------------------------- spawn */

TEST(contain_spawn_join_failure_is_a_synchronous_error)
{
    /* /dev/full refuses every write, as a removed cgroup would. */
    int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
    ASSERT_INT(full, >=, 0);
    const char *argv[] = {"true", NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.join_fds = &full;
    o.n_join_fds = 1;
    pid_t pid;
    int pidfd;
    spawn_step_t step;
    ASSERT_EQ(spawn_start(&o, &pid, &pidfd, &step), -ENOSPC);
    ASSERT_EQ(step, SPAWN_STEP_CGROUP);
    ASSERT_STR(spawn_step_name(step), "cgroup join");
    ASSERT_EQ(pid, -1);
    ASSERT_EQ(waitpid(-1, NULL, WNOHANG), -1); /* nothing left to reap */
    ASSERT_EQ(errno, ECHILD);
    close(full);
}

/* Kills and reaps a child of this test that is known unreaped. */
static void end_child(pid_t pid)
{
    ASSERT_OK(kill(pid, SIGKILL));
    ASSERT_EQ(waitpid(pid, NULL, 0), pid);
}

/* Options that start `sleep 100` inside run r (join as for
 * contain_run_spawn_opts). */
static void sleeper_opts(contain_run_t *r, spawn_opts_t *o,
                         int join[CONTAIN_MAX_JOIN_FDS])
{
    static const char *const argv[] = {"sleep", "100", NULL};
    spawn_opts_init(o);
    o->file = argv[0];
    o->argv = argv;
    contain_run_spawn_opts(r, o, join);
}

TEST(contain_spawn_child_is_born_in_the_v2_leaf)
{
    contain_t *c = open_level(CONTAIN_CGROUP);
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 1, 0, &r));
    int join[CONTAIN_MAX_JOIN_FDS], p[2];
    spawn_opts_t o;
    sleeper_opts(r, &o, join);
    ASSERT_INT(o.cgroup_fd, >=, 0);
    ASSERT_INT(o.cgroup_procs_fd, >=, 0);
    /* A pipe stands in for the leaf's cgroup.procs: a child that joined by
     * writing would leave its "0" there. */
    ASSERT_OK(pipe2(p, O_CLOEXEC | O_NONBLOCK));
    o.cgroup_procs_fd = p[1];

    pid_t pid;
    int pidfd;
    char b[8], cg[PATH_MAX];
    cpu_set_t mine, now, its;
    ASSERT_OK(sched_getaffinity(0, sizeof mine, &mine));
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    ssize_t n = read(p[0], b, sizeof b);
    int read_errno = errno;
    /* spawn_start holds this thread to one CPU across the clone: both
     * this thread and the child have the whole mask again afterwards. */
    ASSERT_OK(sched_getaffinity(0, sizeof now, &now));
    ASSERT_OK(sched_getaffinity(pid, sizeof its, &its));
    ASSERT_EQ(CPU_COUNT(&now), CPU_COUNT(&mine));
    ASSERT_TRUE(CPU_EQUAL(&now, &mine));
    ASSERT_EQ(CPU_COUNT(&its), CPU_COUNT(&mine));
    ASSERT_TRUE(CPU_EQUAL(&its, &mine));
    if (spawn_can_start_in_cgroup()) {
        ASSERT_EQ(n, -1); /* nothing written: it was born inside */
        ASSERT_EQ(read_errno, EAGAIN);
        ASSERT_OK(contain_cgroup_of(pid, cg, sizeof cg));
        ASSERT_STR(cg, contain_run_cgroup(r));
        /* The pidfd came with the child and names it. */
        ASSERT_INT(pidfd, >=, 0);
        ASSERT_OK((int)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0));
        siginfo_t si;
        memset(&si, 0, sizeof si);
        ASSERT_OK(waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED));
        ASSERT_EQ(si.si_pid, pid);
        ASSERT_EQ(si.si_status, SIGKILL);
    } else {
        ASSERT_EQ(n, 1); /* no clone3 here: it wrote itself in */
        ASSERT_EQ(b[0], '0');
        end_child(pid);
    }
    if (pidfd >= 0)
        close(pidfd);

    /* A child that fails after the clone is reported like any other, and
     * leaves nothing behind: no process, no pidfd. */
    o.cwd = "/nonexistent/dir";
    spawn_step_t step;
    int before = dup(0);
    ASSERT_INT(before, >=, 0);
    close(before);
    ASSERT_EQ(spawn_start(&o, &pid, &pidfd, &step), -ENOENT);
    ASSERT_EQ(step, SPAWN_STEP_CHDIR);
    ASSERT_EQ(pidfd, -1);
    int after = dup(0);
    ASSERT_EQ(after, before); /* the lowest free fd is where it was */
    close(after);
    ASSERT_EQ(waitpid(-1, NULL, WNOHANG), -1);
    ASSERT_EQ(errno, ECHILD);

    close(p[0]);
    close(p[1]);
    contain_run_free(r);
    contain_free(c);
}

TEST(contain_spawn_falls_back_to_writing_cgroup_procs)
{
    contain_t *c = open_level(CONTAIN_CGROUP);
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 1, 0, &r));
    int join[CONTAIN_MAX_JOIN_FDS];
    spawn_opts_t o;
    sleeper_opts(r, &o, join);
    /* A directory that is no cgroup: clone3 refuses it (EBADF), as it
     * refuses a v1 one, and the child must still end up in the leaf. */
    int notcg = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_INT(notcg, >=, 0);
    o.cgroup_fd = notcg;
    pid_t pid;
    ASSERT_OK(spawn_start(&o, &pid, NULL, NULL));
    char cg[PATH_MAX];
    ASSERT_OK(contain_cgroup_of(pid, cg, sizeof cg));
    ASSERT_STR(cg, contain_run_cgroup(r));
    end_child(pid);
    close(notcg);
    contain_run_free(r);
    contain_free(c);
}

/* ----------------------------------------------------------- per level */

LEVEL_TEST(contain_run_holds_children_and_grandchildren)
{
    contain_t *c = open_level(level);
    require_boundary(c, level);
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 1, 0, &r));
    ASSERT_EQ(contain_run_level(r), level);
    ASSERT_EQ(contain_run_new(c, 1, 0, &(contain_run_t *){NULL}), -EEXIST);
    ASSERT_EQ(contain_run_new(c, -1, 0, &(contain_run_t *){NULL}), -EINVAL);
    ASSERT_FALSE(contain_run_populated(r));

    int out;
    buf_t acc = BUF_INIT;
    pid_t root = spawn_helper(r, "tree", &out);
    pid_t kid = (pid_t)expect_line(out, &acc, "child", NULL, 0);
    ASSERT_INT(kid, >, 0);

    char cg[PATH_MAX], self[PATH_MAX];
    if (level == CONTAIN_CGROUP) {
        ASSERT_TRUE(contain_run_cgroup(r) != NULL);
        ASSERT_CONTAINS(contain_run_cgroup(r), "/rein/");
        ASSERT_OK(contain_cgroup_of(root, cg, sizeof cg));
        ASSERT_STR(cg, contain_run_cgroup(r));
        ASSERT_OK(contain_cgroup_of(kid, cg, sizeof cg));
        ASSERT_STR(cg, contain_run_cgroup(r));
        ASSERT_OK(contain_cgroup_of(getpid(), self, sizeof self));
        ASSERT_TRUE(strcmp(self, contain_run_cgroup(r)) != 0);
        ASSERT_INT(contain_run_events_fd(r), >=, 0);
    } else {
        ASSERT_TRUE(contain_run_cgroup(r) == NULL);
        ASSERT_EQ(contain_run_events_fd(r), -1);
    }
    if (contain_has_pids_limit(c)) {
        ASSERT_TRUE(contain_run_pids_cgroup(r) != NULL);
        v1_cgroup_of(root, "pids", cg, sizeof cg);
        ASSERT_STR(cg, contain_run_pids_cgroup(r));
        v1_cgroup_of(kid, "pids", cg, sizeof cg);
        ASSERT_STR(cg, contain_run_pids_cgroup(r));
    }

    pid_t *pids;
    size_t n;
    ASSERT_OK(contain_run_pids(r, &pids, &n));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(pids[0], root < kid ? root : kid);
    ASSERT_EQ(pids[1], root < kid ? kid : root);
    free(pids);
    ASSERT_TRUE(contain_run_populated(r));
    ASSERT_FALSE(contain_run_escaped(r, root, kid, 0));

    ptree_pass_t pass;
    ptree_pass_begin(&pass, SIGKILL, 0);
    ASSERT_EQ(contain_run_signal(r, &pass), 2);
    /* The same pass again: both were reached, none is sent it twice. */
    ASSERT_EQ(contain_run_signal(r, &pass), 0);
    ASSERT_EQ(pass.n, 2);
    ptree_pass_end(&pass);
    /* A member that exited is a zombie until reaped, and a zombie's
     * cgroup reads "/": it has not escaped (a short-lived pipeline stage
     * ended its run when it did).  The root is ours to reap: wait for its
     * zombie (no event tells us; bounded). */
    procfs_stat_t zst;
    uint64_t t0 = test_now_ms();
    while (procfs_read_stat(root, &zst) == 0 && zst.state != 'Z') {
        ASSERT_INT(test_now_ms() - t0, <, 10000);
        usleep(1000);
    }
    ASSERT_INT(zst.state, ==, 'Z');
    ASSERT_FALSE(contain_run_escaped(r, root, root, 0));
    ASSERT_FALSE(contain_run_escaped(r, root, root, zst.start_time));
    wait_empty(r);
    ASSERT_FALSE(test_pid_alive(kid));
    close(out);
    buf_free(&acc);
    free_run_checked(r);
    contain_free(c);
}

LEVEL_TEST(contain_kill_reaches_a_setsid_daemon)
{
    contain_t *c = open_level(level);
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 7, 0, &r));

    int out;
    buf_t acc = BUF_INIT;
    pid_t root = spawn_helper(r, "daemon", &out);
    pid_t daemon = (pid_t)expect_line(out, &acc, "daemon", NULL, 0);
    expect_line(out, &acc, "parted", NULL, 0);
    ASSERT_INT(daemon, >, 0);
    uint64_t dstart;
    ASSERT_OK(procfs_start_time(daemon, &dstart));

    /* It left the run's session: an ownership escape at every level. */
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(daemon, &st));
    ASSERT_INT(st.session, !=, root);
    ASSERT_TRUE(contain_run_escaped(r, root, daemon, 0));
    ASSERT_FALSE(contain_run_escaped(r, root, root, 0));

    if (level != CONTAIN_PGID) {
        /* Orphaned, it came to us (contain_open set the subreaper flag):
         * the supervisor finds it among its children. */
        pid_t *kids;
        size_t nk;
        bool found = false;
        ASSERT_OK(procfs_children(getpid(), &kids, &nk));
        for (size_t i = 0; i < nk; i++)
            found |= kids[i] == daemon;
        free(kids);
        ASSERT_TRUE(found);
        ASSERT_EQ(st.ppid, getpid());
    }
    char cg[PATH_MAX];
    if (level == CONTAIN_CGROUP) {
        /* Still inside the cgroup, which is why cgroup.kill reaches it. */
        ASSERT_OK(contain_cgroup_of(daemon, cg, sizeof cg));
        ASSERT_STR(cg, contain_run_cgroup(r));
    }

    int rc = contain_run_kill(r);
    if (rc == -ENOTSUP) {
        /* pgid or subreaper without any run cgroup: what the supervisor
         * does there, by pid and start time. */
        ASSERT_FALSE(contain_has_pids_limit(c));
        ASSERT_INT(level, !=, CONTAIN_CGROUP);
        ASSERT_OK(ptree_signal_one(daemon, dstart, SIGKILL));
        ASSERT_OK(kill(root, SIGKILL));
        ASSERT_EQ(waitpid(root, NULL, 0), root);
        reap_all();
        SKIP_FACILITY("pids-limit", "%s", contain_note(c));
    }
    ASSERT_OK(rc);
    wait_empty(r);
    ASSERT_FALSE(procfs_alive(daemon, dstart));
    ASSERT_FALSE(contain_run_populated(r));
    close(out);
    buf_free(&acc);
    free_run_checked(r);
    contain_free(c);
}

LEVEL_TEST(contain_pty_background_job_is_not_an_escape)
{
    contain_t *c = open_level(level);
    require_boundary(c, level);
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 3, 0, &r));

    int m, s;
    ASSERT_OK(openpty(&m, &s, NULL, NULL, NULL));
    fcntl(m, F_SETFD, FD_CLOEXEC);
    fcntl(s, F_SETFD, FD_CLOEXEC);
    int fds[CONTAIN_MAX_JOIN_FDS];
    const char *argv[] = {"bash", "--norc", "--noprofile", "-i", NULL};
    const char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "PS1=$ ",
                          "TERM=dumb", NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.envp = envp;
    o.fd_in = o.fd_out = o.fd_err = s;
    o.ctty_fd = s;
    contain_run_spawn_opts(r, &o, fds);
    o.want_pidfd = false;
    pid_t shell;
    ASSERT_OK(spawn_start(&o, &shell, NULL, NULL));
    close(s);

    /* Job control puts the job in a group of its own, in the same
     * session; "$!" is its pid (the echo of the input has no digits). */
    const char cmd[] = "sleep 100 & echo \"BG=$!\"\n";
    ASSERT_EQ(write(m, cmd, sizeof cmd - 1), (ssize_t)(sizeof cmd - 1));
    buf_t acc = BUF_INIT;
    pid_t job = 0;
    uint64_t deadline = test_now_ms() + WAIT_MS;
    while (!job) {
        const char *p = acc.p;
        while (p && (p = strstr(p, "BG=")) != NULL) {
            if (p[3] >= '1' && p[3] <= '9' && strchr(p, '\n')) {
                job = (pid_t)strtol(p + 3, NULL, 10);
                break;
            }
            p += 3;
        }
        if (job)
            break;
        int64_t left = (int64_t)(deadline - test_now_ms());
        if (left <= 0)
            test_fail(__FILE__, __LINE__, "no job pid; got \"%s\"",
                      acc.p ? acc.p : "");
        struct pollfd pfd = {m, POLLIN, 0};
        if (poll(&pfd, 1, (int)left) <= 0)
            continue;
        char tmp[512];
        ssize_t k = read(m, tmp, sizeof tmp);
        ASSERT_INT(k, >, 0);
        ASSERT_OK(buf_append(&acc, tmp, (size_t)k));
    }

    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(job, &st));
    ASSERT_EQ(st.session, shell);
    ASSERT_EQ(st.pgrp, job); /* its own job-control group ... */
    ASSERT_INT(st.pgrp, !=, shell);
    ASSERT_FALSE(contain_run_escaped(r, shell, job, 0)); /* ... yet inside */
    ASSERT_FALSE(contain_run_escaped(r, shell, shell, 0));
    char cg[PATH_MAX];
    if (level == CONTAIN_CGROUP) {
        ASSERT_OK(contain_cgroup_of(job, cg, sizeof cg));
        ASSERT_STR(cg, contain_run_cgroup(r));
    }

    ASSERT_OK(contain_run_kill(r));
    wait_empty(r);
    ASSERT_FALSE(test_pid_alive(job));
    close(m);
    buf_free(&acc);
    free_run_checked(r);
    contain_free(c);
}

LEVEL_TEST(contain_fork_bomb_is_bounded_by_the_pids_limit)
{
    contain_t *c = open_level(level);
    if (!contain_has_pids_limit(c))
        SKIP_FACILITY("pids-limit", "%s", contain_note(c));
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 9, BOMB_PIDS_MAX, &r));

    char path[PATH_MAX], max[16];
    snprintf(path, sizeof path, "%s/forkbomb", test_bin_dir());
    snprintf(max, sizeof max, "%d", BOMB_TRY_MAX);
    const char *argv[] = {path, max, NULL};
    int in[2], out;
    ASSERT_OK(pipe2(in, O_CLOEXEC));
    buf_t acc = BUF_INIT;
    pid_t bomb = spawn_in(r, argv, &out, in[0]);
    close(in[0]);
    char line[128];
    long n = expect_line(out, &acc, "forked", line, sizeof line);
    /* The bomb itself holds one task of the limit. */
    ASSERT_INT(n, >, 0);
    ASSERT_INT(n, <=, BOMB_PIDS_MAX - 1);
    ASSERT_CONTAINS(line, " eagain");

    pid_t *pids;
    size_t np;
    ASSERT_OK(contain_run_pids(r, &pids, &np));
    ASSERT_EQ(np, (size_t)n + 1);
    free(pids);

    ASSERT_OK(contain_run_kill(r));
    wait_empty(r);
    ASSERT_FALSE(test_pid_alive(bomb));
    close(in[1]);
    close(out);
    buf_free(&acc);
    free_run_checked(r);
    contain_free(c);
}

TEST(contain_kill_without_cgroup_kill_signals_every_member)
{
    /* As on a kernel before 5.14: passes of SIGKILL, each pinned by pidfd
     * and checked for membership, reach the setsid daemon too. */
    ASSERT_OK(setenv("REIN_CGROUP_KILL", "0", 1));
    contain_t *c = open_level(CONTAIN_CGROUP);
    ASSERT_CONTAINS(contain_note(c), "cgroup.kill");
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 2, 0, &r));
    int out;
    buf_t acc = BUF_INIT;
    pid_t root = spawn_helper(r, "daemon", &out);
    pid_t daemon = (pid_t)expect_line(out, &acc, "daemon", NULL, 0);
    expect_line(out, &acc, "parted", NULL, 0);
    ASSERT_INT(root, >, 0);
    ASSERT_OK(contain_run_kill(r));
    wait_empty(r);
    ASSERT_FALSE(test_pid_alive(daemon));
    close(out);
    buf_free(&acc);
    free_run_checked(r);
    contain_free(c);
}

TEST(contain_signal_spares_what_left_the_run)
{
    /* A member moved out of the run's cgroups (as a privileged process
     * may do) is no longer signalled through the run. */
    contain_t *c = open_level(CONTAIN_CGROUP);
    contain_run_t *r;
    ASSERT_OK(contain_run_new(c, 4, 0, &r));
    int out;
    buf_t acc = BUF_INIT;
    pid_t root = spawn_helper(r, "tree", &out);
    pid_t kid = (pid_t)expect_line(out, &acc, "child", NULL, 0);

    /* Move the child back to our own cgroups. */
    char self[PATH_MAX], dir[PATH_MAX], file[PATH_MAX + 16], num[32];
    snprintf(num, sizeof num, "%ld", (long)kid);
    ASSERT_OK(contain_cgroup_of(getpid(), self, sizeof self));
    cg_dir("cgroup2", NULL, self, dir, sizeof dir);
    snprintf(file, sizeof file, "%s/cgroup.procs", dir);
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    ASSERT_INT(fd, >=, 0);
    ASSERT_EQ(write(fd, num, strlen(num)), (ssize_t)strlen(num));
    close(fd);
    if (contain_has_pids_limit(c)) {
        v1_cgroup_of(getpid(), "pids", self, sizeof self);
        cg_dir("cgroup", "pids", self, dir, sizeof dir);
        snprintf(file, sizeof file, "%s/cgroup.procs", dir);
        fd = open(file, O_WRONLY | O_CLOEXEC);
        ASSERT_INT(fd, >=, 0);
        ASSERT_EQ(write(fd, num, strlen(num)), (ssize_t)strlen(num));
        close(fd);
    }
    ASSERT_TRUE(contain_run_escaped(r, root, kid, 0));
    ASSERT_EQ(contain_run_kill(r), 0);
    /* Only the root was still in the run. */
    ASSERT_EQ(waitpid(root, NULL, 0), root);
    ASSERT_TRUE(test_pid_alive(kid));
    ASSERT_FALSE(contain_run_populated(r));
    /* Ours to clean up: the test started it. */
    uint64_t kst;
    ASSERT_OK(procfs_start_time(kid, &kst));
    ASSERT_OK(ptree_signal_one(kid, kst, SIGKILL));
    reap_all();
    close(out);
    buf_free(&acc);
    free_run_checked(r);
    contain_free(c);
}

/* Makes dir (and reports the path) for the sweep test. */
static void make_dir(char *out, size_t size, const char *parent,
                     const char *name)
{
    snprintf(out, size, "%s/%s", parent, name);
    ASSERT_OK(mkdir(out, 0755));
}

/* Moves this process into v2 cgroup dir (its cgroup.procs). */
static void move_self(const char *dir)
{
    char file[PATH_MAX * 2], num[32];
    snprintf(file, sizeof file, "%s/cgroup.procs", dir);
    snprintf(num, sizeof num, "%ld", (long)getpid());
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    ASSERT_INT(fd, >=, 0);
    ASSERT_EQ(write(fd, num, strlen(num)), (ssize_t)strlen(num));
    close(fd);
}

TEST(contain_open_sweeps_what_a_dead_rein_left)
{
    char self[PATH_MAX], home[PATH_MAX], base[PATH_MAX * 2],
        rein[PATH_MAX * 2 + 8], name[64];
    char dead_empty[PATH_MAX * 3], dead_full[PATH_MAX * 3],
        live[PATH_MAX * 3], leaf[PATH_MAX * 4], full_leaf[PATH_MAX * 4],
        live_leaf[PATH_MAX * 4];
    /* In a cgroup of its own, so that no other test's contain_open sweeps
     * the dead instances this test fakes while it builds them. */
    ASSERT_OK(contain_cgroup_of(getpid(), self, sizeof self));
    cg_dir("cgroup2", NULL, self, home, sizeof home);
    snprintf(base, sizeof base, "%s/rein-test-%ld", home, (long)getpid());
    /* Where the hierarchy is not ours to write (no root, no delegation),
     * the cgroup level is unavailable here, as open_level would say. */
    if (mkdir(base, 0755) < 0)
        SKIP_FACILITY("cgroup", "cannot create %s: %s", base,
                      strerror(errno));
    move_self(base);
    contain_t *c = open_level(CONTAIN_CGROUP);
    snprintf(rein, sizeof rein, "%s/rein", base);

    /* A pid and start time that named a process now gone. */
    int p[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC));
    pid_t gone = fork();
    ASSERT_INT(gone, >=, 0);
    if (gone == 0) {
        char ch;
        close(p[1]);
        _exit(read(p[0], &ch, 1) < 0);
    }
    close(p[0]);
    uint64_t gone_start, my_start;
    ASSERT_OK(procfs_start_time(gone, &gone_start));
    close(p[1]);
    ASSERT_EQ(waitpid(gone, NULL, 0), gone);
    ASSERT_OK(procfs_start_time(getpid(), &my_start));

    snprintf(name, sizeof name, "%ld.%llu.0", (long)gone,
             (unsigned long long)gone_start);
    make_dir(dead_empty, sizeof dead_empty, rein, name);
    make_dir(leaf, sizeof leaf, dead_empty, "run-1");
    snprintf(name, sizeof name, "%ld.%llu.1", (long)gone,
             (unsigned long long)gone_start);
    make_dir(dead_full, sizeof dead_full, rein, name);
    make_dir(full_leaf, sizeof full_leaf, dead_full, "run-2");
    snprintf(name, sizeof name, "%ld.%llu.99", (long)getpid(),
             (unsigned long long)my_start);
    make_dir(live, sizeof live, rein, name);
    make_dir(live_leaf, sizeof live_leaf, live, "run-3");
    /* Named with a pid namespace: ours is judged by its pid, another's
     * (a container sharing this cgroup, where that pid may live) is not
     * ours to judge. */
    uint64_t ns;
    ASSERT_OK(procfs_pid_ns(&ns));
    char ns_dead[PATH_MAX * 3], ns_foreign[PATH_MAX * 3],
        ns_foreign_leaf[PATH_MAX * 4];
    snprintf(name, sizeof name, "%ld.%llu.3.%llu", (long)gone,
             (unsigned long long)gone_start, (unsigned long long)ns);
    make_dir(ns_dead, sizeof ns_dead, rein, name);
    make_dir(leaf, sizeof leaf, ns_dead, "run-4");
    snprintf(name, sizeof name, "%ld.%llu.4.%llu", (long)gone,
             (unsigned long long)gone_start, (unsigned long long)ns + 1);
    make_dir(ns_foreign, sizeof ns_foreign, rein, name);
    make_dir(ns_foreign_leaf, sizeof ns_foreign_leaf, ns_foreign, "run-5");

    /* An orphan of the dead rein, still in its leaf. */
    char procs[PATH_MAX * 4 + 16];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", full_leaf);
    int join = open(procs, O_WRONLY | O_CLOEXEC);
    ASSERT_INT(join, >=, 0);
    const char *argv[] = {"sleep", "100", NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.join_fds = &join;
    o.n_join_fds = 1;
    o.want_pidfd = false;
    pid_t orphan;
    ASSERT_OK(spawn_start(&o, &orphan, NULL, NULL));
    close(join);

    contain_t *c2;
    ASSERT_OK(contain_open("cgroup", &c2));
    ASSERT_FALSE(path_exists(dead_empty)); /* dead and empty: swept */
    ASSERT_TRUE(path_exists(full_leaf));   /* populated: for reconcile */
    ASSERT_TRUE(path_exists(live_leaf));   /* a live process's: untouched */
    ASSERT_FALSE(path_exists(ns_dead));    /* dead in our namespace */
    ASSERT_TRUE(path_exists(ns_foreign_leaf)); /* another namespace's */

    ASSERT_OK(kill(orphan, SIGKILL));
    ASSERT_EQ(waitpid(orphan, NULL, 0), orphan);
    ASSERT_OK(rmdir(full_leaf));
    ASSERT_OK(rmdir(dead_full));
    ASSERT_OK(rmdir(live_leaf));
    ASSERT_OK(rmdir(live));
    ASSERT_OK(rmdir(ns_foreign_leaf));
    ASSERT_OK(rmdir(ns_foreign));
    contain_free(c2);
    contain_free(c);
    ASSERT_FALSE(path_exists(rein)); /* the last instance took rein/ along */
    move_self(home);
    ASSERT_OK(rmdir(base));
}

TEST(contain_attach_takes_the_runs_leaf_anywhere_and_nothing_else)
{
    /* Reconcile and `rein kill` may run in another cgroup, or at another
     * level, than the rein that made a run's leaf: the leaf is accepted
     * wherever it lies, at any level, if it has rein's shape and the run's
     * id; nothing else a registry record could name is, though every
     * directory below exists. */
    char self[PATH_MAX], rel[PATH_MAX + 64], dir[PATH_MAX * 2];
    ASSERT_OK(contain_cgroup_of(getpid(), self, sizeof self));
    /* Not our cgroup, nor under it as rein/ would be. */
    snprintf(rel, sizeof rel, "%s/rein-test-attach.%ld",
             strcmp(self, "/") ? self : "", (long)getpid());
    contain_t *c = open_level(CONTAIN_CGROUP);
    contain_t *low;
    ASSERT_OK(contain_open("pgid", &low));
    const char *const made[] = {
        "", "/rein", "/rein/1.2.3", "/rein/bogus", "/rein/bogus/run-77",
        "/rein/1.2", "/rein/1.2/run-77", "/rein/1.2.3x", "/rein/1.2.3x/run-77",
        "/notrein", "/notrein/1.2.3", "/notrein/1.2.3/run-77", "/run-77",
        "/rein/1.2.3.4", "/rein/1.2.3.4.5",
        "/rein/1.2.3.4.5/run-77", "/rein/1.2.3.", "/rein/1.2.3./run-77"};
    const size_t nmade = sizeof made / sizeof *made;
    for (size_t i = 0; i < nmade; i++) {
        char sub[PATH_MAX * 2];
        snprintf(sub, sizeof sub, "%s%s", rel, made[i]);
        cg_dir("cgroup2", NULL, sub, dir, sizeof dir);
        ASSERT_OK(mkdir(dir, 0755));
    }
    static const struct {
        const char *tail; /* after rel; "!" + path: the path alone */
        int64_t id;
        bool ok;
    } cases[] = {
        {"/rein/1.2.3/run-77", 77, true},
        {"/rein/1.2.3/run-77", 78, false},   /* another run's */
        {"/rein/1.2.3/run-77", 7, false},
        {"/rein/1.2.3/run-77/", 77, false},  /* an empty component */
        {"//rein/1.2.3/run-77", 77, false},
        {"/rein/1.2.3/../1.2.3/run-77", 77, false},
        {"/rein/./1.2.3/run-77", 77, false},
        {"/rein/bogus/run-77", 77, false},   /* not an instance's name */
        {"/rein/1.2/run-77", 77, false},
        {"/rein/1.2.3x/run-77", 77, false},
        {"/rein/1.2.3.4/run-77", 77, true},  /* with its pid namespace */
        {"/rein/1.2.3.4.5/run-77", 77, false},
        {"/rein/1.2.3./run-77", 77, false},
        {"/notrein/1.2.3/run-77", 77, false}, /* not under rein/ */
        {"/run-77", 77, false},
        {"!rein/1.2.3/run-77", 77, false},   /* not absolute */
        {"!", 77, false},
    };
    contain_t *const at[] = {c, low};
    for (size_t a = 0; a < 2; a++) {
        /* The leaves to attach: freeing an attached run removes its. */
        static const char *const leaves[] = {"/rein/1.2.3/run-77",
                                             "/rein/1.2.3.4/run-77"};
        for (size_t l = 0; l < 2; l++) {
            char leaf[PATH_MAX * 2];
            snprintf(leaf, sizeof leaf, "%s%s", rel, leaves[l]);
            cg_dir("cgroup2", NULL, leaf, dir, sizeof dir);
            ASSERT_OK(mkdir(dir, 0755));
        }
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            char path[PATH_MAX * 2];
            if (cases[i].tail[0] == '!')
                snprintf(path, sizeof path, "%s", cases[i].tail + 1);
            else
                snprintf(path, sizeof path, "%s%s", rel, cases[i].tail);
            contain_run_t *r;
            int rc = contain_run_attach(at[a], cases[i].id, path, NULL, &r);
            printf("%s %s id %lld: %d\n", a ? "pgid" : "cgroup", path,
                   (long long)cases[i].id, rc);
            if (!cases[i].ok) {
                ASSERT_EQ(rc, -ENOENT);
                continue;
            }
            ASSERT_OK(rc);
            ASSERT_STR(contain_run_cgroup(r), path);
            ASSERT_FALSE(contain_run_populated(r));
            contain_run_free(r); /* empty: the leaf goes */
            cg_dir("cgroup2", NULL, path, dir, sizeof dir);
            ASSERT_FALSE(path_exists(dir));
        }
    }
    for (size_t i = nmade; i-- > 0;) {
        char sub[PATH_MAX * 2];
        snprintf(sub, sizeof sub, "%s%s", rel, made[i]);
        cg_dir("cgroup2", NULL, sub, dir, sizeof dir);
        ASSERT_OK(rmdir(dir));
    }
    contain_free(low);
    contain_free(c);
}
