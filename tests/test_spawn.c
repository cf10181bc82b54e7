/*
 * test_spawn.c — spawning: synchronous errors naming the step, a clean
 * child (default signals, empty mask, no inherited fds), its own session,
 * the PTY slave as controlling terminal, extra fds placed at 3, 4, ...
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/env.h"
#include "base/procfs.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"

static void opts(spawn_opts_t *o, const char **argv)
{
    spawn_opts_init(o);
    o->file = argv[0];
    o->argv = argv;
}

TEST(spawn_missing_program_is_a_synchronous_error)
{
    spawn_opts_t o;
    const char *argv[] = {"rein-no-such-program-xyz", NULL};
    pid_t pid;
    int pidfd;
    spawn_step_t step;
    opts(&o, argv);
    ASSERT_EQ(spawn_start(&o, &pid, &pidfd, &step), -ENOENT);
    ASSERT_EQ(step, SPAWN_STEP_RESOLVE);
    ASSERT_EQ(pid, -1);
    ASSERT_EQ(pidfd, -1);

    const char *abs[] = {"/nonexistent/prog", NULL};
    opts(&o, abs);
    ASSERT_EQ(spawn_start(&o, &pid, &pidfd, &step), -ENOENT);
    ASSERT_EQ(step, SPAWN_STEP_EXEC);
}

TEST(spawn_inconsistent_cgroup_options_are_refused)
{
    spawn_opts_t o;
    const char *argv[] = {"true", NULL};
    pid_t pid;
    int dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_INT(dir, >=, 0);
    /* A cgroup to be born in needs its cgroup.procs for the fallback. */
    opts(&o, argv);
    o.cgroup_fd = dir;
    ASSERT_EQ(spawn_start(&o, &pid, NULL, NULL), -EINVAL);
    ASSERT_EQ(pid, -1);
    /* A count of join fds needs the fds. */
    opts(&o, argv);
    o.n_join_fds = 1;
    ASSERT_EQ(spawn_start(&o, &pid, NULL, NULL), -EINVAL);
    ASSERT_EQ(waitpid(-1, NULL, WNOHANG), -1); /* nothing was started */
    ASSERT_EQ(errno, ECHILD);
    close(dir);
}

TEST(spawn_non_executable_file_is_eacces)
{
    char path[512];
    snprintf(path, sizeof path, "%s/notexec", test_tmpdir());
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_INT(fd, >=, 0);
    ASSERT_EQ(write(fd, "#!/bin/sh\n", 10), 10);
    close(fd);
    spawn_opts_t o;
    const char *argv[] = {path, NULL};
    pid_t pid;
    spawn_step_t step;
    opts(&o, argv);
    ASSERT_EQ(spawn_start(&o, &pid, NULL, &step), -EACCES);
    ASSERT_EQ(step, SPAWN_STEP_EXEC);
}

TEST(spawn_bad_cwd_fails_at_chdir)
{
    spawn_opts_t o;
    const char *argv[] = {"/bin/true", NULL};
    pid_t pid;
    spawn_step_t step;
    opts(&o, argv);
    o.cwd = "/nonexistent-dir-for-rein";
    ASSERT_EQ(spawn_start(&o, &pid, NULL, &step), -ENOENT);
    ASSERT_EQ(step, SPAWN_STEP_CHDIR);
    ASSERT_STR(spawn_step_name(step), "chdir");
}

/* A parent with its stdio closed gets the errno pipe as fd 0..2: a failed
 * step is still its synchronous error, not 8 bytes in the child's output
 * and a spawn that seemed to work.  The parent here is a fork of the test
 * that closes 0..2, reporting through its exit status. */
TEST(spawn_error_is_reported_with_the_parents_stdio_closed)
{
    int out[2];
    ASSERT_OK(pipe2(out, O_CLOEXEC));
    pid_t p = fork();
    ASSERT_TRUE(p >= 0);
    if (p == 0) {
        int keep = fcntl(out[1], F_DUPFD_CLOEXEC, 20);
        close(0);
        close(1);
        close(2);
        spawn_opts_t o;
        const char *argv[] = {"/bin/true", NULL};
        pid_t pid;
        spawn_step_t step = SPAWN_STEP_NONE;
        opts(&o, argv);
        o.cwd = "/nonexistent-dir-for-rein";
        o.fd_out = o.fd_err = keep;
        int rc = spawn_start(&o, &pid, NULL, &step);
        _exit(rc == -ENOENT && step == SPAWN_STEP_CHDIR ? 0 : 1);
    }
    close(out[1]);
    int st;
    ASSERT_INT(waitpid(p, &st, 0), ==, p);
    ASSERT_TRUE(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 0);
    char b[64];
    ASSERT_EQ(read(out[0], b, sizeof b), 0); /* nothing in the output */
    close(out[0]);
}

TEST(spawn_exit_code_and_cwd)
{
    spawn_opts_t o;
    const char *argv[] = {"sh", "-c", "pwd; exit 3", NULL};
    buf_t out = BUF_INIT;
    opts(&o, argv);
    o.cwd = "/tmp";
    ASSERT_EQ(tu_run(&o, &out), 3);
    ASSERT_STR(out.p, "/tmp\n");
    buf_free(&out);
}

TEST(spawn_child_gets_default_signals_and_empty_mask)
{
    /* The parent ignores SIGPIPE and blocks SIGUSR1 — as a server would. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    /* Also glibc's reserved signal 33, which only the raw call can touch
     * (make, for one, leaves it ignored in its children). */
    struct {
        void (*h)(int);
        unsigned long flags;
        void (*r)(void);
        uint64_t mask;
    } ign = {SIG_IGN, 0, NULL, 0};
    ASSERT_OK(syscall(SYS_rt_sigaction, 33, &ign, NULL, sizeof ign.mask));
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    sigprocmask(SIG_BLOCK, &s, NULL);
    spawn_opts_t o;
    const char *argv[] = {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL};
    buf_t out = BUF_INIT;
    opts(&o, argv);
    ASSERT_EQ(tu_run(&o, &out), 0);
    ASSERT_CONTAINS(out.p, "SigBlk:\t0000000000000000");
    ASSERT_CONTAINS(out.p, "SigIgn:\t0000000000000000");
    buf_free(&out);
}

TEST(spawn_child_inherits_no_fds_beyond_stdio)
{
    int leak = open("/dev/null", O_RDONLY); /* deliberately not CLOEXEC */
    ASSERT_INT(leak, >=, 3);
    spawn_opts_t o;
    /* ls opens the directory itself (one more fd); count the rest. */
    const char *argv[] = {"sh", "-c", "ls /proc/self/fd | wc -l", NULL};
    buf_t out = BUF_INIT;
    opts(&o, argv);
    ASSERT_EQ(tu_run(&o, &out), 0);
    /* 0, 1, 2 and ls's own directory fd */
    ASSERT_STR(out.p, "4\n");
    buf_free(&out);
    close(leak);
}

/* On kernels whose close_range lacks CLOSE_RANGE_CLOEXEC (5.9, 5.10:
 * EINVAL) or is missing (ENOSYS), the child still inherits nothing
 * beyond stdio, and a failed exec is still reported through the errno
 * pipe, which the child must keep open until then. */
TEST(spawn_child_inherits_no_fds_on_older_kernels)
{
    for (int k = 0; k < 2; k++) {
        pid_t pid = fork();
        ASSERT_INT(pid, >=, 0);
        if (pid == 0) {
            /* A child per kernel: a filter stays for good. */
            if (k == 0)
                tu_syscall_fails(__NR_close_range, 2, 4 /* CLOEXEC */, EINVAL);
            else
                tu_syscall_fails(__NR_close_range, TU_ANY_ARG, 0, ENOSYS);
            int leak = open("/dev/null", O_RDONLY); /* not CLOEXEC */
            int high = fcntl(leak, F_DUPFD, 1000);
            const char *argv[] = {"sh", "-c", "ls /proc/self/fd | wc -l",
                                  NULL};
            spawn_opts_t o;
            buf_t out = BUF_INIT;
            opts(&o, argv);
            if (leak < 3 || high < 1000 || tu_run(&o, &out) != 0 ||
                strcmp(out.p, "4\n") != 0)
                _exit(1);
            const char *none[] = {"/nonexistent/rein-test", NULL};
            opts(&o, none);
            pid_t p2;
            int fd2;
            spawn_step_t step;
            if (spawn_start(&o, &p2, &fd2, &step) != -ENOENT ||
                step != SPAWN_STEP_EXEC)
                _exit(2);
            _exit(0);
        }
        int st;
        ASSERT_EQ(waitpid(pid, &st, 0), pid);
        ASSERT_TRUE(WIFEXITED(st));
        ASSERT_EQ(WEXITSTATUS(st), 0);
    }
}

/* An environment with a name twice (execve allows it) gives the child
 * that name once: the first value, as getenv reads it, or the one rein
 * sets over it; never a second copy a shell would take instead. */
TEST(spawn_env_with_a_name_twice_passes_it_once)
{
    static const char *const base[] = {"A=first", "B=b", "A=second", "=x",
                                       "junk", NULL};
    env_t e;
    ASSERT_OK(env_init(&e, base));
    ASSERT_EQ(e.n, 2);
    ASSERT_STR(env_get(&e, "A"), "first");
    const char *argv[] = {"sh", "-c", "echo \"$A $B\"; env | grep -c '^A='",
                          NULL};
    for (int k = 0; k < 2; k++) {
        if (k == 1)
            ASSERT_OK(env_put(&e, "A=set"));
        spawn_opts_t o;
        buf_t out = BUF_INIT;
        opts(&o, argv);
        o.envp = (const char *const *)e.v;
        ASSERT_EQ(tu_run(&o, &out), 0);
        ASSERT_STR(out.p, k == 0 ? "first b\n1\n" : "set b\n1\n");
        buf_free(&out);
    }
    env_free(&e);
}

/* Writes tag into a fresh pipe, returns its read end; *w gets the write end
 * moved to exactly fd at (so sources collide with the targets 3 and 4). */
static int pipe_at(int at, int *w)
{
    int p[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC) < 0 ? -errno : 0);
    if (p[0] <= 6) { /* keep the read end out of the way of 3..6 */
        int r = fcntl(p[0], F_DUPFD_CLOEXEC, 10);
        ASSERT_INT(r, >=, 10);
        close(p[0]);
        p[0] = r;
    }
    if (p[1] != at) {
        ASSERT_INT(dup3(p[1], at, O_CLOEXEC), ==, at);
        close(p[1]);
    }
    *w = at;
    return p[0];
}

TEST(spawn_extra_fds_land_at_3_and_up_and_nothing_else_leaks)
{
    /* Free 3..6 so the sources can be placed exactly where they collide:
     * the source for fd 3 sits at 4 and the one for fd 4 at 3. */
    for (int fd = 3; fd <= 6; fd++)
        close(fd);
    int w3, w4;
    int r4 = pipe_at(3, &w4); /* becomes the child's fd 4 */
    int r3 = pipe_at(4, &w3); /* becomes the child's fd 3 */
    int leak = open("/dev/null", O_RDONLY); /* deliberately not CLOEXEC */
    ASSERT_INT(leak, >=, 3);
    const int extra[] = {w3, w4};
    spawn_opts_t o;
    const char *argv[] = {
        "sh", "-c",
        "echo three >&3; echo four >&4; exec 3>&- 4>&-; "
        "ls /proc/self/fd | wc -l", NULL};
    buf_t out = BUF_INIT, a = BUF_INIT, b = BUF_INIT;
    opts(&o, argv);
    o.extra_fds = extra;
    o.n_extra_fds = 2;
    ASSERT_EQ(tu_run(&o, &out), 0);
    ASSERT_STR(out.p, "4\n"); /* 0, 1, 2 and ls's own directory fd */
    close(w3);
    close(w4);
    ASSERT_OK(tu_read_all(r3, &a));
    ASSERT_OK(tu_read_all(r4, &b));
    ASSERT_STR(a.p, "three\n");
    ASSERT_STR(b.p, "four\n");
    close(r3);
    close(r4);
    close(leak);
    buf_free(&out);
    buf_free(&a);
    buf_free(&b);

    /* More than the limit is refused before anything runs. */
    int many[SPAWN_MAX_EXTRA_FDS + 1];
    for (size_t i = 0; i <= SPAWN_MAX_EXTRA_FDS; i++)
        many[i] = 0;
    pid_t pid;
    o.extra_fds = many;
    o.n_extra_fds = SPAWN_MAX_EXTRA_FDS + 1;
    ASSERT_EQ(spawn_start(&o, &pid, NULL, NULL), -EINVAL);
}

TEST(spawn_child_leads_its_own_session)
{
    spawn_opts_t o;
    const char *argv[] = {"sleep", "5", NULL};
    pid_t pid;
    int pidfd;
    opts(&o, argv);
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    procfs_stat_t st;
    ASSERT_OK(procfs_read_stat(pid, &st));
    ASSERT_EQ(st.session, pid);
    ASSERT_EQ(st.pgrp, pid);
    ASSERT_OK(kill(pid, SIGKILL));
    int code;
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    ASSERT_EQ(code, 128 + SIGKILL);
    if (pidfd >= 0)
        close(pidfd);

    o.group = SPAWN_PGROUP;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    ASSERT_OK(procfs_read_stat(pid, &st));
    ASSERT_EQ(st.pgrp, pid);
    ASSERT_EQ(st.session, getsid(0));
    kill(pid, SIGKILL);
    ASSERT_OK(spawn_reap(pid, pidfd, NULL));
    if (pidfd >= 0)
        close(pidfd);
}

TEST(spawn_pty_slave_becomes_controlling_terminal)
{
    int m, s;
    char name[128];
    ASSERT_OK(openpty(&m, &s, name, NULL, NULL));
    fcntl(m, F_SETFD, FD_CLOEXEC);
    fcntl(s, F_SETFD, FD_CLOEXEC);
    spawn_opts_t o;
    const char *argv[] = {"sh", "-c", "tty; test -t 0 && echo yes", NULL};
    opts(&o, argv);
    o.fd_in = o.fd_out = o.fd_err = s;
    o.ctty_fd = s;
    pid_t pid;
    int pidfd;
    ASSERT_OK(spawn_start(&o, &pid, &pidfd, NULL));
    buf_t out = BUF_INIT;
    int code;
    ASSERT_OK(spawn_reap(pid, pidfd, &code));
    close(s); /* after reaping: the master then reads to EIO */
    tu_read_all(m, &out);
    close(m);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out.p, name);
    ASSERT_CONTAINS(out.p, "yes");
    buf_free(&out);
    if (pidfd >= 0)
        close(pidfd);
}

TEST(spawn_resolve_searches_path)
{
    char out[256];
    ASSERT_OK(spawn_resolve("sh", "/nonexistent:/bin", out, sizeof out));
    ASSERT_STR(out, "/bin/sh");
    ASSERT_EQ(spawn_resolve("sh", "/nonexistent", out, sizeof out), -ENOENT);
    ASSERT_EQ(spawn_resolve("", "/bin", out, sizeof out), -ENOENT);
    ASSERT_EQ(spawn_resolve("sh", "/bin", out, 4), -ENOENT);
}
