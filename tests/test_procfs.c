/*
 * test_procfs.c — /proc readers: stat fields, start time, boot id, children
 * of every thread, breadth-first descendants, cmdline, exe.
 *
 * The stat parser is checked against an independent reading of the same
 * line (the comm taken from /proc/<pid>/comm, so no ')' is searched for)
 * and against CLOCK_BOOTTIME, including for a process whose comm holds
 * ") (" and spaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/procfs.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"

TEST(procfs_stat_of_self)
{
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(getpid(), &st));
    ASSERT_EQ(st.pid, getpid());
    ASSERT_EQ(st.ppid, getppid());
    ASSERT_EQ(st.pgrp, getpgrp());
    ASSERT_EQ(st.session, getsid(0));
    ASSERT_INT(st.start_time, >, 0);
    ASSERT_EQ(st.state, 'R');
    ASSERT_INT(strlen(st.comm), >, 0); /* "rein-test", or valgrind's name */
    ASSERT_TRUE(procfs_alive(getpid(), st.start_time));
    ASSERT_FALSE(procfs_alive(getpid(), st.start_time + 1));
    ASSERT_EQ(procfs_read_stat(0x3fffffff, &st), -ESRCH);
}

TEST(procfs_boot_id_is_a_uuid)
{
    char id[PROCFS_BOOT_ID_LEN];
    ASSERT_OK(procfs_boot_id(id));
    ASSERT_EQ(strlen(id), 36);
    ASSERT_EQ(id[8], '-');
    ASSERT_EQ(id[13], '-');
}

TEST(procfs_children_and_descendants_of_a_shell_tree)
{
    /* sh -> (sleep, sh -> sleep): two children, three descendants. */
    spawn_opts_t o;
    const char *argv[] = {"sh", "-c",
                    "sleep 30 & sh -c 'sleep 30 & wait' & wait", NULL};
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    pid_t pid;
    int pidfd;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    pid_t *kids = NULL, *all = NULL;
    size_t nk = 0, na = 0;
    uint64_t t0 = test_now_ms();
    while (test_now_ms() - t0 < 5000) {
        free(all);
        all = NULL;
        ASSERT_OK(procfs_descendants(pid, &all, &na));
        if (na == 3)
            break;
        usleep(10000); /* polling /proc: no event says "forked" */
    }
    ASSERT_EQ(na, 3);
    ASSERT_OK(procfs_children(pid, &kids, &nk));
    ASSERT_EQ(nk, 2);
    /* Breadth-first: the direct children come first. */
    ASSERT_TRUE((all[0] == kids[0] && all[1] == kids[1]) ||
                (all[0] == kids[1] && all[1] == kids[0]));
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(all[2], &st));
    ASSERT_TRUE(st.ppid == kids[0] || st.ppid == kids[1]);
    ASSERT_EQ(st.session, pid);
    ASSERT_OK(kill(-pid, SIGKILL)); /* our own session's group */
    ASSERT_OK(spawn_reap(pid, pidfd, NULL));
    if (pidfd >= 0)
        close(pidfd);
    free(kids);
    free(all);
}

TEST(procfs_cmdline_and_exe)
{
    char **argv = NULL;
    ASSERT_OK(procfs_cmdline(getpid(), &argv));
    ASSERT_CONTAINS(argv[0], "rein-test");
    procfs_strv_free(argv);
    char exe[4096];
    ASSERT_OK(procfs_exe(getpid(), exe, sizeof exe));
    ASSERT_CONTAINS(exe, "/tests/rein-test");
    ASSERT_EQ(procfs_exe(0x3fffffff, exe, sizeof exe), -ESRCH);
    ASSERT_EQ(procfs_cmdline(0x3fffffff, &argv), -ESRCH);
}

TEST(procfs_list_all_includes_self_sorted)
{
    pid_t *v;
    size_t n;
    ASSERT_OK(procfs_list_all(&v, &n));
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == getpid())
            found = true;
        if (i)
            ASSERT_INT(v[i - 1], <, v[i]);
    }
    ASSERT_TRUE(found);
    free(v);
}

/* ------------------------------------------------- helper processes */

/* A procfs_helper in its own session, stdout on the pipe out. */
typedef struct helper {
    pid_t pid;
    int pidfd;
    int out;
} helper_t;

static void helper_start(helper_t *h, const char *const *args)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/procfs_helper", test_bin_dir());
    const char *argv[4] = {path, NULL, NULL, NULL};
    for (size_t i = 0; i < 2 && args[i]; i++)
        argv[i + 1] = args[i];
    h->out = tu_spawn_piped(argv, SPAWN_SESSION, -1, &h->pid, &h->pidfd);
}

/* Kills the helper's session (its own group: pgid == pid) and reaps it. */
static void helper_kill(helper_t *h)
{
    ASSERT_OK(kill(-h->pid, SIGKILL));
    int code;
    ASSERT_OK(spawn_reap(h->pid, h->pidfd, &code));
    ASSERT_EQ(code, 128 + SIGKILL);
    if (h->pidfd >= 0)
        close(h->pidfd);
    close(h->out);
}

/* Reads a small /proc file whole into buf (NUL-terminated). */
static size_t read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_INT(fd, >=, 0);
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    ASSERT_INT(n, >, 0);
    buf[n] = 0;
    return (size_t)n;
}

/* True when the pid list in /proc/<pid>/task/<tid>/children has kid. */
static bool task_lists(pid_t pid, pid_t tid, pid_t kid)
{
    char path[96], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid,
             (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_INT(fd, >=, 0);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    ASSERT_INT(n, >=, 0);
    buf[n] = 0;
    for (char *p = buf, *end; *p; p = end) {
        long x = strtol(p, &end, 10);
        if (end == p)
            break;
        if (x == kid)
            return true;
    }
    return false;
}

/* ------------------------------------------- children of every thread */

TEST(procfs_children_include_those_of_a_second_thread)
{
    /* The child belongs to the helper's second thread, which stays alive:
     * only that thread's children file lists it. */
    const char *args[] = {"thread-fork", NULL};
    helper_t h;
    helper_start(&h, args);
    char line[128];
    tu_read_line(h.out, line, sizeof line);
    long tid, kid;
    ASSERT_EQ(sscanf(line, "ready %ld %ld", &tid, &kid), 2);
    ASSERT_INT(tid, !=, h.pid);
    /* The premise: the main thread's file does not list it. */
    ASSERT_FALSE(task_lists(h.pid, h.pid, (pid_t)kid));
    ASSERT_TRUE(task_lists(h.pid, (pid_t)tid, (pid_t)kid));

    pid_t *kids = NULL, *all = NULL;
    size_t nk = 0, na = 0;
    ASSERT_OK(procfs_children(h.pid, &kids, &nk));
    ASSERT_EQ(nk, 1);
    ASSERT_EQ(kids[0], kid);
    ASSERT_OK(procfs_descendants(h.pid, &all, &na));
    ASSERT_EQ(na, 1);
    ASSERT_EQ(all[0], kid);
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat((pid_t)kid, &st));
    ASSERT_EQ(st.ppid, h.pid); /* the process, not the thread */

    /* And through the public API. */
    rein_proc_t *p, **v;
    size_t n;
    ASSERT_OK(rein_proc_from_pid(h.pid, &p));
    ASSERT_OK(rein_proc_children(p, &v, &n));
    ASSERT_EQ(n, 1);
    ASSERT_EQ(rein_proc_pid(v[0]), kid);
    rein_proc_list_free(v, n);
    rein_proc_free(p);
    free(kids);
    free(all);
    helper_kill(&h);
}

/* ------------------------------------------------ start time, field 22 */

/* /proc/<pid>/stat parsed without searching for ')': the comm is read from
 * /proc/<pid>/comm, so the line's prefix "<pid> (<comm>) " is known
 * exactly; the fields after it are split on spaces.  Returns field `want`
 * (>= 3) as a number, its text in text (for the state, field 3). */
static unsigned long long stat_field_indep(pid_t pid, int want, char *text,
                                           size_t tsize)
{
    char path[64], comm[64], line[1024], prefix[128];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    size_t cl = read_small(path, comm, sizeof comm);
    ASSERT_TRUE(cl > 0 && comm[cl - 1] == '\n');
    comm[cl - 1] = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    read_small(path, line, sizeof line);
    int pl = snprintf(prefix, sizeof prefix, "%d (%s) ", (int)pid, comm);
    ASSERT_TRUE(!strncmp(line, prefix, (size_t)pl));
    const char *p = line + pl;
    for (int field = 3; field < want; field++) {
        p = strchr(p, ' ');
        ASSERT_TRUE(p != NULL);
        p++;
    }
    size_t len = strcspn(p, " \n");
    ASSERT_INT(len, <, tsize);
    memcpy(text, p, len);
    text[len] = 0;
    return strtoull(text, NULL, 10);
}

/* CLOCK_BOOTTIME in clock ticks, the unit and the clock of field 22. */
static unsigned long long boottime_ticks(void)
{
    struct timespec ts;
    ASSERT_OK(clock_gettime(CLOCK_BOOTTIME, &ts));
    unsigned long long hz = (unsigned long long)sysconf(_SC_CLK_TCK);
    return (unsigned long long)ts.tv_sec * hz +
           (unsigned long long)ts.tv_nsec / (1000000000ull / hz);
}

TEST(procfs_start_time_is_field_22_of_self)
{
    procfs_stat_t st;
    char text[64];
    ASSERT_OK(procfs_read_stat(getpid(), &st));
    ASSERT_EQ(st.start_time, stat_field_indep(getpid(), 22, text,
                                              sizeof text));
    ASSERT_EQ(st.ppid, stat_field_indep(getpid(), 4, text, sizeof text));
    uint64_t t;
    ASSERT_OK(procfs_start_time(getpid(), &t));
    ASSERT_EQ(t, st.start_time);
    ASSERT_INT(t, <=, boottime_ticks());
}

/* A comm that a parser searching for the first ')' gets wrong: every
 * field after it would shift (and the last one even looks plausible). */
static const char *const weird_comms[] = {"a) (b c", ") R 1 1 1 0 -1",
                                          "(x)) )", NULL};

TEST(procfs_stat_of_a_comm_with_parens_and_spaces)
{
    for (size_t i = 0; weird_comms[i]; i++) {
        const char *name = weird_comms[i];
        const char *args[] = {"comm", name, NULL};
        helper_t h;
        unsigned long long b0 = boottime_ticks();
        helper_start(&h, args);
        char line[32];
        tu_read_line(h.out, line, sizeof line);
        ASSERT_STR(line, "ready");
        unsigned long long b1 = boottime_ticks();

        procfs_stat_t st;
        ASSERT_OK(procfs_read_stat(h.pid, &st));
        ASSERT_STR(st.comm, name);
        ASSERT_EQ(st.pid, h.pid);
        /* Going to pause() or in it. */
        ASSERT_TRUE(st.state == 'R' || st.state == 'S');
        ASSERT_EQ(st.ppid, getpid());
        ASSERT_EQ(st.pgrp, h.pid); /* its own session and group */
        ASSERT_EQ(st.session, h.pid);
        ASSERT_EQ(st.tty_nr, 0);
        char text[64];
        ASSERT_EQ(st.start_time, stat_field_indep(h.pid, 22, text,
                                                  sizeof text));
        /* Independent of any parsing: it started between b0 and b1.  A
         * tick of slack either side for the rounding of both clocks. */
        ASSERT_INT(st.start_time + 1, >=, b0);
        ASSERT_INT(st.start_time, <=, b1 + 1);
        uint64_t t;
        ASSERT_OK(procfs_start_time(h.pid, &t));
        ASSERT_EQ(t, st.start_time);
        ASSERT_TRUE(procfs_alive(h.pid, st.start_time));
        ASSERT_FALSE(procfs_alive(h.pid, st.start_time + 1));

        /* The public handle reads the same stat line. */
        rein_proc_t *p;
        ASSERT_OK(rein_proc_from_pid(h.pid, &p));
        ASSERT_EQ(rein_proc_ppid(p), getpid());
        pid_t pgid;
        ASSERT_OK(rein_proc_group_id(p, &pgid));
        ASSERT_EQ(pgid, h.pid);
        rein_proc_free(p);
        helper_kill(&h);
    }
}

/* procfs_read_file takes a file of exactly max bytes, across the buffer's
 * doublings, and refuses one byte more; a missing file is -ENOENT. */
TEST(procfs_read_file_limit_is_exact)
{
    static const size_t sizes[] = {0, 1, 4095, 4096, 4097, 20000};
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/f", test_tmpdir());
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t sz = sizes[i];
        char *body = malloc(sz + 1);
        ASSERT_TRUE(body != NULL);
        memset(body, 'x', sz + 1);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, body, sz), (ssize_t)sz);
        close(fd);
        char *text;
        size_t len = 0;
        ASSERT_OK(procfs_read_file(path, &text, &len, sz));
        ASSERT_EQ(len, sz);
        ASSERT_EQ(strlen(text), sz);
        free(text);
        if (sz) {
            ASSERT_EQ(procfs_read_file(path, &text, &len, sz - 1), -E2BIG);
            ASSERT_TRUE(text == NULL);
        }
        free(body);
    }
    char *text;
    snprintf(path, sizeof path, "%s/missing", test_tmpdir());
    ASSERT_EQ(procfs_read_file(path, &text, NULL, 10), -ENOENT);
    ASSERT_TRUE(text == NULL);
}

/* A child that blocks SIGHUP, its mask kept across exec (so it holds
 * under valgrind too, which runs an exec'd child natively): `sleep`, or,
 * when catch_it, a shell that handles SIGHUP (trap) and waits in read.
 * Returns once the program runs; *in is the write end of its stdin. */
static pid_t fate_child(bool catch_it, int *in)
{
    int p[2], q[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC) < 0 ? -errno : 0);
    ASSERT_OK(pipe2(q, O_CLOEXEC) < 0 ? -errno : 0);
    pid_t pid = fork();
    ASSERT_INT(pid, >=, 0);
    if (pid == 0) {
        sigset_t hup;
        sigemptyset(&hup);
        sigaddset(&hup, SIGHUP);
        sigprocmask(SIG_BLOCK, &hup, NULL);
        dup2(q[0], STDIN_FILENO);
        if (catch_it) {
            dup2(p[1], STDOUT_FILENO);
            execl("/bin/sh", "sh", "-c", "trap : HUP; echo r; read x",
                  (char *)NULL);
        } else {
            execl("/bin/sleep", "sleep", "60", (char *)NULL);
        }
        _exit(127);
    }
    char c;
    close(p[1]);
    close(q[0]);
    /* The shell's line once its trap is set; EOF at sleep's exec. */
    ASSERT_INT(read(p[0], &c, 1), ==, catch_it ? 1 : 0);
    close(p[0]);
    *in = q[1];
    return pid;
}

/* What procfs_fate says of a process the hangup reached: sent SIGHUP, a
 * child that blocks it has it pending with its default action (it dies
 * once it unblocks it), one that handles it lives on; one killed is
 * dying (a zombie, here) until reaped, then gone. */
TEST(procfs_fate_of_a_blocked_caught_killed_and_reaped_hangup)
{
    int in_plain, in_caught;
    pid_t plain = fate_child(false, &in_plain);
    pid_t caught = fate_child(true, &in_caught);
    uint64_t st_plain, st_caught;
    ASSERT_OK(procfs_start_time(plain, &st_plain));
    ASSERT_OK(procfs_start_time(caught, &st_caught));
    ASSERT_EQ(procfs_fate(plain, st_plain), PROCFS_FATE_RUNNING);
    ASSERT_OK(kill(plain, SIGHUP));
    ASSERT_OK(kill(caught, SIGHUP));
    ASSERT_EQ(procfs_fate(plain, st_plain), PROCFS_FATE_HUP_BLOCKED);
    ASSERT_EQ(procfs_fate(caught, st_caught), PROCFS_FATE_RUNNING);
    ASSERT_EQ(procfs_fate(plain, st_plain + 1), PROCFS_FATE_GONE);
    ASSERT_OK(kill(plain, SIGKILL));
    siginfo_t info;
    /* Exited, not yet reaped: a zombie. */
    ASSERT_OK(waitid(P_PID, (id_t)plain, &info, WEXITED | WNOWAIT));
    ASSERT_EQ(procfs_fate(plain, st_plain), PROCFS_FATE_DYING);
    ASSERT_OK(waitid(P_PID, (id_t)plain, &info, WEXITED));
    ASSERT_EQ(procfs_fate(plain, st_plain), PROCFS_FATE_GONE);
    ASSERT_OK(kill(caught, SIGKILL));
    ASSERT_OK(waitid(P_PID, (id_t)caught, &info, WEXITED));
    close(in_plain);
    close(in_caught);
}
