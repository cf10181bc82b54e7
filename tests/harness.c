/*
 * harness.c — the test runner.
 *
 * Each test runs in a forked child in its own process group, with its output
 * captured to a temporary file that is shown only when the test fails (or
 * with -v).  Up to -j tests run at once (default: the number of cores).  A
 * test that outlives its timeout has its process group killed.  The runner
 * is a child subreaper, so processes a test leaves behind are re-parented to
 * it; after the last test it lists any still alive, kills them (they are its
 * own descendants) and fails the run.  The last line is always
 * "N passed, N failed, N skipped".
 *
 * usage: rein-test [-v] [-j N] [-l] [PATTERN...]   (substring of file:name)
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


static struct test_case *g_tests;
static size_t g_ntests;
static char g_bin_dir[PATH_MAX];
static char g_build_dir[PATH_MAX];
static char g_tmpdir[PATH_MAX];

void test_register(struct test_case *tc)
{
    tc->next = g_tests;
    g_tests = tc;
    g_ntests++;
}

uint64_t test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *test_bin_dir(void)
{
    return g_bin_dir;
}

const char *test_build_dir(void)
{
    return g_build_dir;
}

const char *test_tmpdir(void)
{
    return g_tmpdir;
}

bool test_pid_alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

bool test_wait_gone(pid_t pid)
{
    uint64_t deadline = test_now_ms() + TEST_WAIT_GONE_MS;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        goto poll_proc; /* gone already (ESRCH), or no pidfds here */
    /* Readable once the process has exited, zombie or reaped. */
    struct pollfd p = {fd, POLLIN, 0};
    int k;
    do
        k = poll(&p, 1, (int)TEST_WAIT_GONE_MS);
    while (k < 0 && errno == EINTR);
    close(fd);
    return k > 0;
poll_proc:
    while (test_pid_alive(pid)) {
        if (test_now_ms() >= deadline)
            return false;
        sched_yield();
    }
    return true;
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(NULL);
    exit(1);
}

void test_skip(const char *fmt, ...)
{
    va_list ap;
    fputs("SKIP: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(NULL);
    exit(SKIP_EXIT);
}

void test_skip_facility(const char *facility, const char *fmt, ...)
{
    const char *ci = getenv("CI");
    va_list ap;
    /* Under valgrind (REIN_VALGRIND=1, set by .ci/run) some facilities are
     * hidden on purpose, e.g. pidfd_open returns ENOSYS: a skip is honest. */
    const char *vg = getenv("REIN_VALGRIND");
    bool on_ci = ci && (!strcmp(ci, "true") || !strcmp(ci, "1")) &&
                 !(vg && !strcmp(vg, "1"));
    fprintf(stderr, "%s%s missing: ", on_ci ? "" : "SKIP: ", facility);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (on_ci)
        fputs("CI machines have this facility, so its absence fails\n",
              stderr);
    fflush(NULL);
    exit(on_ci ? 1 : SKIP_EXIT);
}

void test_print_bytes(const char *label, const void *p, size_t n)
{
    const unsigned char *s = p;
    fprintf(stderr, "  %s (%zu bytes): \"", label, n);
    for (size_t i = 0; i < n && i < 4096; i++) {
        unsigned char c = s[i];
        if (c == '\\' || c == '"')
            fprintf(stderr, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, stderr);
        else if (c == '\n')
            fputs("\\n", stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fputs(n > 4096 ? "\"...\n" : "\"\n", stderr);
}

void test_fail_mem(const char *file, int line, const char *ea, const char *eb,
                   const void *a, size_t alen, const void *b, size_t blen)
{
    fprintf(stderr, "%s:%d: ASSERT_MEM(%s, %s) differ\n", file, line, ea, eb);
    test_print_bytes(ea, a, alen);
    test_print_bytes(eb, b, blen);
    fflush(NULL);
    exit(1);
}

/* ------------------------------------------------------------ the runner */

struct slot {
    struct test_case *tc;
    pid_t pid;
    int out_fd;
    uint64_t start_ms;
    bool timed_out;
};

static int cmp_tests(const void *a, const void *b)
{
    const struct test_case *x = *(struct test_case *const *)a;
    const struct test_case *y = *(struct test_case *const *)b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static bool matches(const struct test_case *tc, int argc, char **argv,
                    int first)
{
    char full[512];
    if (first >= argc)
        return true;
    snprintf(full, sizeof full, "%s:%s", base_name(tc->file), tc->name);
    for (int i = first; i < argc; i++)
        if (strstr(full, argv[i]))
            return true;
    return false;
}

static int rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return unlink(path);
    struct dirent *e;
    while ((e = readdir(d))) {
        char sub[PATH_MAX];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            rm_rf(sub);
        else
            unlink(sub);
    }
    closedir(d);
    return rmdir(path);
}

static void start_test(struct slot *s, struct test_case *tc,
                       const char *root_tmp, size_t idx)
{
    char tmpl[] = "/tmp/rein-test-out-XXXXXX";
    int fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd < 0) {
        perror("mkostemp");
        exit(125);
    }
    unlink(tmpl);
    s->tc = tc;
    s->out_fd = fd;
    s->start_ms = test_now_ms();
    s->timed_out = false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(125);
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Every disposition at its default, whatever the runner was given:
         * under nohup SIGHUP comes ignored, a shell a test starts can then
         * not trap it, and a test of hang-ups fails for the environment's
         * sake. */
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                signal(sig, SIG_DFL);
        setpgid(0, 0);
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, 0);
            close(devnull);
        }
        snprintf(g_tmpdir, sizeof g_tmpdir, "%s/%zu-%s", root_tmp, idx,
                 tc->name);
        if (mkdir(g_tmpdir, 0700) < 0) {
            perror("mkdir test tmpdir");
            _exit(1);
        }
        /* What the code under test makes in $TMPDIR goes with the rest,
         * even when a failed assert skips its clean-up. */
        setenv("TMPDIR", g_tmpdir, 1);
        setvbuf(stdout, NULL, _IOLBF, 0);
        tc->fn();
        fflush(NULL);
        exit(0);
    }
    setpgid(pid, pid); /* both sides, so a kill of the group never races */
    s->pid = pid;
}

static void dump_output(int fd)
{
    char buf[8192];
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, stdout);
}

/* The last "SKIP: ..." line of a test's output, for the summary. */
static void skip_reason(int fd, char *out, size_t size)
{
    char buf[16384];
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    out[0] = 0;
    if (n <= 0)
        return;
    buf[n] = 0;
    char *p = NULL, *q = buf;
    while ((q = strstr(q, "SKIP: ")))
        p = q++;
    if (!p)
        return;
    p += 6;
    size_t len = strcspn(p, "\n");
    if (len >= size)
        len = size - 1;
    memcpy(out, p, len);
    out[len] = 0;
}

/* True when a live (non-zombie) process has process group pgid. */
static bool group_has_live(pid_t pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool found = false;
    if (!d)
        return false;
    while (!found && (e = readdir(d))) {
        char path[300], buf[1024];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t k = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (k <= 0)
            continue;
        buf[k] = 0;
        const char *rp = strrchr(buf, ')');
        char state;
        int ppid, pgrp;
        if (rp && sscanf(rp + 2, "%c %d %d", &state, &ppid, &pgrp) == 3 &&
            pgrp == pgid && state != 'Z' && state != 'X')
            found = true;
    }
    closedir(d);
    return found;
}

/* How long a just-killed process may take to die before it counts as left
 * behind: SIGKILL is asynchronous, and a test may end right after sending
 * it to processes that are not its children (so it cannot wait for them). */
#define LEFTOVER_SETTLE_MS 2000
#define LEFTOVER_POLL_US 10000
/* Rounds of the end-of-suite sweep (see main). */
#define LEFTOVER_SWEEPS 8

/* group_has_live, allowing LEFTOVER_SETTLE_MS for dying members to go. */
static bool group_settles_alive(pid_t pgid)
{
    uint64_t t0 = test_now_ms();
    while (group_has_live(pgid)) {
        if (test_now_ms() - t0 >= LEFTOVER_SETTLE_MS)
            return true;
        usleep(LEFTOVER_POLL_US);
    }
    return false;
}

/* A child of the runner that has exited, left unreaped, with its wait
 * status in *st; 0 when none has. */
static pid_t exited_child(int *st)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || !si.si_pid)
        return 0;
    *st = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status & 0xff, 0)
                                   : W_EXITCODE(0, si.si_status & 0x7f);
    return si.si_pid;
}

/* Children of every thread of the runner that are still running (not
 * zombies). */
static size_t list_leftovers(pid_t *out, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    if (!d)
        return 0;
    while ((e = readdir(d)) && n < max) {
        char path[PATH_MAX], buf[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t k = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (k <= 0)
            continue;
        buf[k] = 0;
        char *save = NULL;
        for (char *t = strtok_r(buf, " \n", &save); t && n < max;
             t = strtok_r(NULL, " \n", &save))
            if (test_pid_alive((pid_t)atoi(t)))
                out[n++] = (pid_t)atoi(t);
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bool verbose = false, list = false;
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "-v"))
            verbose = true;
        else if (!strcmp(argv[first], "-l"))
            list = true;
        else if (!strcmp(argv[first], "-j") && first + 1 < argc)
            jobs = atoi(argv[++first]);
        else if (!strncmp(argv[first], "-j", 2) && argv[first][2])
            jobs = atoi(argv[first] + 2);
        else {
            fprintf(stderr, "usage: %s [-v] [-l] [-j N] [PATTERN...]\n",
                    argv[0]);
            return 2;
        }
        first++;
    }
    if (jobs < 1)
        jobs = 1;
    /* Slow runs (valgrind) stretch every timeout by this factor. */
    const char *scale_env = getenv("REIN_TEST_TIMEOUT_SCALE");
    unsigned scale = scale_env && atoi(scale_env) > 0 ? (unsigned)atoi(scale_env)
                                                      : 1;

    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl < 0) {
        perror("readlink /proc/self/exe");
        return 125;
    }
    self[sl] = 0;
    snprintf(g_bin_dir, sizeof g_bin_dir, "%.*s/bin",
             (int)(strrchr(self, '/') - self), self);
    /* The runner is <build>/tests/rein-test. */
    *strrchr(self, '/') = 0;
    snprintf(g_build_dir, sizeof g_build_dir, "%.*s",
             (int)(strrchr(self, '/') - self), self);

    struct test_case **all = calloc(g_ntests ? g_ntests : 1, sizeof *all);
    size_t n = 0;
    for (struct test_case *t = g_tests; t; t = t->next)
        if (matches(t, argc, argv, first))
            all[n++] = t;
    qsort(all, n, sizeof *all, cmp_tests);
    if (list) {
        for (size_t i = 0; i < n; i++)
            printf("%s:%s\n", base_name(all[i]->file), all[i]->name);
        free(all);
        return 0;
    }

    char root_tmp[] = "/tmp/rein-test-XXXXXX";
    if (!mkdtemp(root_tmp)) {
        perror("mkdtemp");
        return 125;
    }
    setenv("REIN_TEST_TMP", root_tmp, 1);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);

    struct slot *slots = calloc((size_t)jobs, sizeof *slots);
    size_t next = 0, running = 0, passed = 0, failed = 0, skipped = 0;
    uint64_t t0 = test_now_ms();
    /* Solo tests go last, each alone: none of them may overlap another. */
    size_t nsolo = 0;
    for (size_t i = 0; i < n; i++)
        if (all[i]->solo)
            nsolo++;
    for (size_t i = 0, k = 0; i < n; i++)
        if (!all[i]->solo)
            all[k++] = all[i];
    for (struct test_case *t = g_tests, **end = all + (n - nsolo); t;
         t = t->next)
        if (t->solo && matches(t, argc, argv, first))
            *end++ = t;
    while (next < n || running) {
        bool solo_next = next < n && all[next]->solo;
        while (next < n && running < (size_t)(solo_next ? 1 : jobs) &&
               (!all[next]->solo || running == 0)) {
            for (int i = 0; i < jobs; i++)
                if (!slots[i].tc) {
                    start_test(&slots[i], all[next], root_tmp, next);
                    next++;
                    running++;
                    break;
                }
        }
        struct timespec tick = {0, 50 * 1000 * 1000};
        sigtimedwait(&chld, NULL, &tick);
        int st;
        pid_t pid;
        /* Look at an exited child without reaping it: while the test's
         * leader is an unreaped zombie its pid, and so its group id, cannot
         * be handed to another process, so the group check and the kill
         * below can only reach what the test started. */
        while ((pid = exited_child(&st)) > 0) {
            struct slot *s = NULL;
            for (int i = 0; i < jobs; i++)
                if (slots[i].tc && slots[i].pid == pid)
                    s = &slots[i];
            if (!s) { /* an adopted orphan of some test: reap it */
                waitpid(pid, NULL, 0);
                continue;
            }
            double secs = (double)(test_now_ms() - s->start_ms) / 1000.0;
            const char *fname = base_name(s->tc->file);
            /* Processes left in the test's own group are a leak. */
            bool leaked = !s->timed_out && group_settles_alive(pid);
            if (leaked) {
                failed++;
                printf("FAIL %s:%s (left processes in its group)\n",
                       fname, s->tc->name);
                dump_output(s->out_fd);
            } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
                       !s->timed_out) {
                passed++;
                printf("ok   %s:%s (%.2fs)\n", fname, s->tc->name, secs);
                if (verbose)
                    dump_output(s->out_fd);
            } else if (WIFEXITED(st) && WEXITSTATUS(st) == SKIP_EXIT) {
                char why[256];
                skipped++;
                skip_reason(s->out_fd, why, sizeof why);
                printf("skip %s:%s: %s\n", fname, s->tc->name, why);
            } else {
                failed++;
                if (s->timed_out)
                    printf("FAIL %s:%s (timeout after %us)\n", fname,
                           s->tc->name, s->tc->timeout_s * scale);
                else if (WIFSIGNALED(st))
                    printf("FAIL %s:%s (signal %d, %.2fs)\n", fname,
                           s->tc->name, WTERMSIG(st), secs);
                else
                    printf("FAIL %s:%s (exit %d, %.2fs)\n", fname,
                           s->tc->name, WEXITSTATUS(st), secs);
                dump_output(s->out_fd);
            }
            /* End what a failed or leaking test left in its group: it
             * started them, so they are ours; then reap the leader. */
            kill(-pid, SIGKILL);
            waitpid(pid, NULL, 0);
            close(s->out_fd);
            s->tc = NULL;
            running--;
            fflush(stdout);
        }
        uint64_t now = test_now_ms();
        for (int i = 0; i < jobs; i++) {
            struct slot *s = &slots[i];
            if (s->tc && !s->timed_out &&
                now - s->start_ms >
                    (uint64_t)s->tc->timeout_s * scale * 1000u) {
                s->timed_out = true;
                kill(-s->pid, SIGKILL);
            }
        }
    }

    /* Anything a test started that is still alive was re-parented to us.
     * An unreaped child keeps its pid, so each signal below reaches the
     * process just listed.  Ending one hands us its own children, so the
     * sweep goes on until none is left, for at most LEFTOVER_SWEEPS rounds
     * (a chain deeper than that is reported by the next round's list). */
    pid_t left[256];
    size_t nleft = list_leftovers(left, 256);
    for (uint64_t settle0 = test_now_ms();
         nleft && test_now_ms() - settle0 < LEFTOVER_SETTLE_MS;
         nleft = list_leftovers(left, 256))
        usleep(LEFTOVER_POLL_US);
    for (int round = 0; nleft && round < LEFTOVER_SWEEPS; round++) {
        for (size_t i = 0; i < nleft; i++) {
            char path[64], cmd[256] = "?";
            snprintf(path, sizeof path, "/proc/%d/cmdline", (int)left[i]);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                ssize_t k = read(fd, cmd, sizeof cmd - 1);
                cmd[k > 0 ? k : 0] = 0;
                for (ssize_t j = 0; j + 1 < k; j++)
                    if (!cmd[j])
                        cmd[j] = ' ';
                close(fd);
            }
            printf("FAIL leftover process %d still alive after the suite: "
                   "%s\n", (int)left[i], cmd);
            failed++;
            kill(left[i], SIGKILL);
        }
        for (size_t i = 0; i < nleft; i++)
            waitpid(left[i], NULL, 0);
        nleft = list_leftovers(left, 256);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ; /* the zombies among the adopted */
    rm_rf(root_tmp);
    printf("# %zu tests in %.1fs\n", n,
           (double)(test_now_ms() - t0) / 1000.0);
    printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
    free(slots);
    free(all);
    return failed ? 1 : 0;
}
