/*
 * bench.c — `make bench`: rein's figures beside floors measured the same
 * way in the same run.
 *
 * The machines are shared and noisy, so every figure is the median of
 * several rounds, and floor and rein rounds are interleaved so a burst of
 * noise hits both.  Each line prints the figure, its floor, the ratio, the
 * target and PASS or MISS.  Floors follow ../shared/floor/ (raw posix_spawn,
 * the naive blocking read loop writing each chunk to a log file); they are
 * written here again, not linked, so they are measured with exactly the
 * same clock and child.
 *
 * The squasher has no floor program: its figure is raw input condensed
 * per second over the condensation corpus (../shared/corpus/condense, or
 * $REIN_CORPUS_DIR) with the repo's grammars loaded, and its "floor" is
 * the target itself (BENCH_SQUASH_TARGET_MBS), so the ratio reads as a
 * fraction of it.
 *
 * usage: rein-bench [--quick] [--only NAME]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/spawn.h"
#include "base/spool.h"
#include "supervise/contain.h"
#include "supervise/registry.h"
#include "bench.h"
#include "rein.h"
#include "squash/grammar.h"
#include "squash/squash.h"

extern char **environ;

/* Rounds per figure (median taken); --quick lowers them. */
#define BENCH_SPAWN_ITERS 300
/* The same spawn figure for calls spaced as an agent makes them: a pause
 * before each call, so nothing the kernel keeps warm for back-to-back
 * spawns (see docs/bench.md) carries over from the previous one.  With 21
 * rounds the median of the ratio moved by 0.05 to 0.08 from run to run,
 * more than the changes it has to show; 61 take 12 s a figure. */
#define BENCH_SPACED_ITERS 61
#define BENCH_SPACED_GAP_MS 100
/* What a supervised spawn may add to a bare one, in us. */
#define BENCH_SUP_ADDED_US 500
#define BENCH_THRU_ROUNDS 7
/* The pause before each throughput run, floor and rein alike.  A run that
 * has just written and dropped a 64 MiB log slows the next one for about
 * 300 ms here (both sides fell to ~75 MB/s back to back, from 120-170), so
 * each run starts from a quiet machine, as an agent's command does after
 * the model's turn. */
#define BENCH_THRU_SETTLE_MS 500
#define BENCH_PIPE_BYTES (256ll << 20)
#define BENCH_PTY_BYTES (64ll << 20)
#define BENCH_TAIL_RUNS 100
#define BENCH_RECONCILE_RUNS 1000
#define BENCH_READ_BUF 65536
/* The squasher: MB/s of raw input it must condense on one core, the
 * rounds over the corpus, and the most cases read. */
#define BENCH_SQUASH_TARGET_MBS 100.0
#define BENCH_SQUASH_ROUNDS 9
#define BENCH_SQUASH_CASES 256

static int g_quick;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
    fprintf(stderr, "rein-bench: %s: %s\n", what, strerror(errno));
    exit(125);
}

/* One result line. higher: bigger is better (throughput). */
static void report(const char *name, const char *unit, double rein,
                   double floor, double target, int higher)
{
    double ratio = rein / floor;
    int pass = higher ? ratio >= target : ratio <= target;
    printf("%-34s rein %10.1f %-5s floor %10.1f %-5s ratio %5.2f  target "
           "%s%.2f  %s\n",
           name, rein, unit, floor, unit, ratio, higher ? ">=" : "<=", target,
           pass ? "PASS" : "MISS");
    fflush(stdout);
}

/* One result line for a figure judged by the time it adds to its floor
 * (target: at most BENCH_SUP_ADDED_US). */
static void report_added(const char *name, double rein, double floor)
{
    printf("%-34s rein %10.1f %-5s floor %10.1f %-5s added %5.0f us  target "
           "<=%d us  %s\n",
           name, rein, "us", floor, "us", rein - floor, BENCH_SUP_ADDED_US,
           rein - floor <= BENCH_SUP_ADDED_US ? "PASS" : "MISS");
    fflush(stdout);
}

static char g_log[4096];

/* ------------------------------------------------------------- spawn */

static void sleep_ms(long ms)
{
    struct timespec gap = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&gap, &gap) < 0 && errno == EINTR)
        ;
}

/* The pause before each spaced call (BENCH_SPACED_GAP_MS). */
static void spaced_pause(void)
{
    sleep_ms(BENCH_SPACED_GAP_MS);
}

/* The floor: a bare posix_spawn of argv and its waitpid, in us. */
static double floor_spawn(const char *const *argv)
{
    pid_t pid;
    int st;
    double t0 = now_s();
    if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ))
        die("posix_spawn");
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    return (now_s() - t0) * 1e6;
}

static double floor_spawn_bash_true(void)
{
    static const char *const argv[] = {"/bin/bash", "-c", "true", NULL};
    return floor_spawn(argv);
}

static double rein_spawn_shell_true(void)
{
    rein_shell_run_opts_t run = {.command = "true"};
    rein_run_result_t res;
    double t0 = now_s();
    if (rein_shell_exec(NULL, &run, &res) < 0 || res.exit_code != 0)
        die("rein_shell_exec");
    return (now_s() - t0) * 1e6;
}

static void bench_spawn(void)
{
    int n = g_quick ? 60 : BENCH_SPAWN_ITERS;
    double *f = calloc((size_t)n, sizeof *f), *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < 10; i++) { /* warm-up */
        floor_spawn_bash_true();
        rein_spawn_shell_true();
    }
    for (int i = 0; i < n; i++) {
        f[i] = floor_spawn_bash_true();
        r[i] = rein_spawn_shell_true();
    }
    report("shell_exec(true) vs spawn bash -c", "us", median(r, (size_t)n),
           median(f, (size_t)n), 1.3, 0);

    /* Spaced calls: each side sleeps the gap before each of its calls. */
    n = g_quick ? 5 : BENCH_SPACED_ITERS;
    for (int i = 0; i < n; i++) {
        spaced_pause();
        f[i] = floor_spawn_bash_true();
        spaced_pause();
        r[i] = rein_spawn_shell_true();
    }
    char name[64];
    snprintf(name, sizeof name, "  same, calls %d ms apart",
             BENCH_SPACED_GAP_MS);
    report(name, "us", median(r, (size_t)n), median(f, (size_t)n), 1.3, 0);
    free(f);
    free(r);
}

/* --------------------------------------------------------- throughput */

static long long g_got;

/* Both sides write their log to a file made for the run and unlink it
 * after, as the reference floor (../shared/floor/thru.c) does.  Reusing one
 * file is not neutral on ext4: closing a file that was opened with O_TRUNC
 * over earlier contents starts writeback of everything just written
 * (auto_da_alloc), so the 64 MiB of I/O lands on the *next* run, and the
 * bench once charged the floor's writeback to rein's run that followed it. */
static int log_open_fresh(void)
{
    unlink(g_log);
    int fd = open(g_log, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
                  0600);
    if (fd < 0)
        die("open log");
    return fd;
}

/* The naive loop: blocking 64 KiB reads, each chunk written to the log. */
static double naive_loop(int fd, pid_t pid, long long bytes)
{
    char *buf = malloc(BENCH_READ_BUF);
    int log = log_open_fresh();
    long long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, BENCH_READ_BUF);
        if (n > 0) {
            total += n;
            for (ssize_t off = 0; off < n;) {
                ssize_t w = write(log, buf + off, (size_t)(n - off));
                if (w < 0)
                    die("write log");
                off += w;
            }
            continue;
        }
        if (n == 0 || errno == EIO)
            break;
        if (errno != EINTR)
            die("read");
    }
    int st;
    waitpid(pid, &st, 0);
    close(log);
    unlink(g_log);
    close(fd);
    free(buf);
    if (total != bytes) /* the naive loop can lose a PTY's tail at exit */
        fprintf(stderr, "rein-bench: floor lost %lld of %lld bytes\n",
                bytes - total, bytes);
    return total;
}

static double floor_pipe(long long bytes)
{
    char n[32];
    snprintf(n, sizeof n, "%lld", bytes);
    const char *argv[] = {"head", "-c", n, "/dev/zero", NULL};
    int p[2];
    pid_t pid;
    double t0 = now_s();
    if (pipe2(p, O_CLOEXEC) < 0)
        die("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    if (posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ))
        die("posix_spawn");
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    double got = naive_loop(p[0], pid, bytes);
    return got / (now_s() - t0) / 1e6;
}

static double floor_pty(long long bytes)
{
    char n[32], name[128];
    snprintf(n, sizeof n, "%lld", bytes);
    const char *argv[] = {"head", "-c", n, "/dev/zero", NULL};
    double t0 = now_s();
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 ||
        ptsname_r(m, name, sizeof name))
        die("openpt");
    int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    struct winsize ws = {.ws_row = 40, .ws_col = 120};
    ioctl(s, TIOCSWINSZ, &ws);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, name, O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&fa, 0, 1);
    posix_spawn_file_actions_adddup2(&fa, 0, 2);
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)argv, environ))
        die("posix_spawn pty");
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(s);
    double got = naive_loop(m, pid, bytes);
    return got / (now_s() - t0) / 1e6;
}

static void spool_chunk(const char *s, size_t n, void *data)
{
    spool_write(data, s, n);
    g_got += (long long)n;
}

static double rein_capture(int pty, long long bytes)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "exec head -c %lld /dev/zero", bytes);
    spool_t *sp;
    unlink(g_log);
    double t0 = now_s();
    if (spool_open(g_log, 0, &sp) < 0)
        die("spool_open");
    rein_run_result_t res;
    int rc;
    g_got = 0;
    if (pty) {
        rein_pty_t *p;
        rein_pty_new(&p);
        rein_pty_start_opts_t o = {.command = cmd, .on_chunk = spool_chunk,
                                   .data = sp};
        rc = rein_pty_start(p, &o, &res);
        rein_pty_free(p);
    } else {
        rein_shell_run_opts_t o = {.command = cmd, .on_chunk = spool_chunk,
                                   .data = sp};
        rc = rein_shell_exec(NULL, &o, &res);
    }
    if (spool_close(sp) < 0 || rc < 0)
        die("rein capture");
    double dt = now_s() - t0;
    unlink(g_log);
    if (g_got != bytes) {
        fprintf(stderr, "rein-bench: rein short read %lld of %lld\n", g_got,
                bytes);
        exit(125);
    }
    return (double)bytes / dt / 1e6;
}

/* The lowest and highest run of each side.  PTY throughput here is bimodal
 * (the naive loop swings between about 65 and 170 MB/s from one run to the
 * next, with the host's scheduling of the two vCPUs), so the medians alone
 * can mislead; see docs/bench.md. */
static void spread(const char *name, const double *f, const double *r,
                   int n)
{
    double flo = f[0], fhi = f[0], rlo = r[0], rhi = r[0];
    for (int i = 1; i < n; i++) {
        flo = f[i] < flo ? f[i] : flo;
        fhi = f[i] > fhi ? f[i] : fhi;
        rlo = r[i] < rlo ? r[i] : rlo;
        rhi = r[i] > rhi ? r[i] : rhi;
    }
    printf("%-34s runs: rein %.0f..%.0f, floor %.0f..%.0f (%d each)\n", name,
           rlo, rhi, flo, fhi, n);
    fflush(stdout);
}

static void bench_thru(int pty)
{
    int rounds = g_quick ? 3 : BENCH_THRU_ROUNDS;
    long long bytes = pty ? BENCH_PTY_BYTES : BENCH_PIPE_BYTES;
    if (g_quick)
        bytes /= 4;
    double f[16], r[16];
    for (int i = 0; i < rounds; i++) {
        sleep_ms(BENCH_THRU_SETTLE_MS);
        f[i] = pty ? floor_pty(bytes) : floor_pipe(bytes);
        sleep_ms(BENCH_THRU_SETTLE_MS);
        r[i] = rein_capture(pty, bytes);
    }
    if (pty) {
        report("pty capture+log vs naive loop+log", "MB/s",
               median(r, (size_t)rounds), median(f, (size_t)rounds), 1.5, 1);
        spread("pty capture+log", f, r, rounds);
    }
    else
        report("pipe capture+log vs bare loop+log", "MB/s",
               median(r, (size_t)rounds), median(f, (size_t)rounds), 0.8, 1);
}

/* ---------------------------------------------------- no tail lost */

static void count_chunk(const char *s, size_t n, void *data)
{
    (void)s;
    *(long long *)data += (long long)n;
}

static void bench_tail(void)
{
    int runs = g_quick ? 20 : BENCH_TAIL_RUNS, complete = 0;
    /* 4 MiB as fast as the child can write, ending with its exit. */
    const long long bytes = 4ll << 20;
    char cmd[96];
    snprintf(cmd, sizeof cmd, "exec head -c %lld /dev/zero", bytes);
    rein_pty_t *p;
    rein_pty_new(&p);
    for (int i = 0; i < runs; i++) {
        long long got = 0;
        rein_pty_start_opts_t o = {.command = cmd, .on_chunk = count_chunk,
                                   .data = &got};
        rein_run_result_t res;
        if (rein_pty_start(p, &o, &res) == 0 && got == bytes)
            complete++;
    }
    rein_pty_free(p);
    printf("%-34s %d of %d runs complete, %d lost bytes  target all  %s\n",
           "pty tail at exit (4 MiB fast)", complete, runs, runs - complete,
           complete == runs ? "PASS" : "MISS");
}

/* ------------------------------------------------------ supervisor */

static void sup_exit(rein_sup_t *s, int64_t id, const rein_run_info_t *i,
                     void *ud)
{
    (void)s;
    (void)id;
    (void)i;
    *(int *)ud = 1;
}

static double floor_spawn_true(void)
{
    static const char *const argv[] = {"/bin/true", NULL};
    return floor_spawn(argv);
}

static double rein_sup_true(rein_sup_t *s)
{
    const char *argv[] = {"/bin/true", NULL};
    int done = 0;
    rein_run_opts_t ro = {.argv = argv, .grace_ms = -1, .on_exit = sup_exit,
                          .data = &done};
    int64_t id;
    double t0 = now_s();
    if (rein_sup_spawn(s, &ro, &id) < 0)
        die("rein_sup_spawn");
    while (!done)
        rein_sup_run_once(s, -1);
    double us = (now_s() - t0) * 1e6;
    rein_sup_forget(s, id);
    return us;
}

/* Supervised spawn-to-exit of /bin/true (registry writes, containment,
 * log, events included) against a bare posix_spawn + waitpid. */
static void bench_sup(const char *dir)
{
    int n = g_quick ? 50 : BENCH_SPAWN_ITERS;
    rein_sup_opts_t so = {.state_dir = dir};
    rein_sup_t *s;
    if (rein_sup_open(&so, &s) < 0)
        die("rein_sup_open");
    double *f = calloc((size_t)n, sizeof *f), *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < 10; i++) {
        floor_spawn_true();
        rein_sup_true(s);
    }
    for (int i = 0; i < n; i++) {
        f[i] = floor_spawn_true();
        r[i] = rein_sup_true(s);
    }
    report_added("supervised spawn-to-exit (true)", median(r, (size_t)n),
                 median(f, (size_t)n));
    n = g_quick ? 5 : BENCH_SPACED_ITERS;
    for (int i = 0; i < n; i++) {
        spaced_pause();
        f[i] = floor_spawn_true();
        spaced_pause();
        r[i] = rein_sup_true(s);
    }
    char name[64];
    snprintf(name, sizeof name, "  same, spawns %d ms apart",
             BENCH_SPACED_GAP_MS);
    report_added(name, median(r, (size_t)n), median(f, (size_t)n));
    free(f);
    free(r);
    rein_sup_close(s);
}

/* One spawn_start of o and its reap, in us. */
static double spawn_opts_true(const spawn_opts_t *o)
{
    pid_t pid;
    int code;
    double t0 = now_s();
    if (spawn_start(o, &pid, NULL, NULL) < 0 || spawn_reap(pid, -1, &code) < 0)
        die("spawn_start");
    return (now_s() - t0) * 1e6;
}

/* Spawn-to-exit of /bin/true into a run's cgroup v2 leaf, spawns
 * BENCH_SPACED_GAP_MS apart, against a bare posix_spawn after the same
 * pause: born inside (clone3, as rein starts every run where it has the
 * cgroup level) and, for comparison, joining by a write to cgroup.procs
 * (the fallback).  The v1 pids join is left out: the figure is the v2
 * leaf's cost alone, which is the whole boundary on a pure v2 host. */
static void bench_cgroup(void)
{
    contain_t *c;
    contain_run_t *r;
    if (contain_open("cgroup", &c) < 0) {
        printf("# cgroup spawn: skipped (no writable cgroup v2 here)\n");
        return;
    }
    if (contain_run_new(c, 1, 0, &r) < 0)
        die("contain_run_new");
    static const char *const argv[] = {"/bin/true", NULL};
    int join[CONTAIN_MAX_JOIN_FDS];
    spawn_opts_t born, wrote;
    spawn_opts_init(&born);
    born.file = argv[0];
    born.argv = argv;
    born.want_pidfd = false;
    contain_run_spawn_opts(r, &born, join);
    born.n_join_fds = 0;
    wrote = born;
    wrote.cgroup_fd = -1;
    wrote.join_fds = &born.cgroup_procs_fd;
    wrote.n_join_fds = 1;

    int n = g_quick ? 5 : BENCH_SPACED_ITERS;
    double f[BENCH_SPACED_ITERS] = {0}, b[BENCH_SPACED_ITERS] = {0},
           w[BENCH_SPACED_ITERS] = {0};
    for (int i = 0; i < n; i++) {
        spaced_pause();
        f[i] = floor_spawn_true();
        spaced_pause();
        b[i] = spawn_opts_true(&born);
        spaced_pause();
        w[i] = spawn_opts_true(&wrote);
    }
    char name[64];
    snprintf(name, sizeof name, "spawn into cgroup v2, %d ms apart",
             BENCH_SPACED_GAP_MS);
    double fm = median(f, (size_t)n);
    report_added(name, median(b, (size_t)n), fm);
    printf("#   joining by a write to cgroup.procs instead: %.1f us "
           "(%.0f us added)\n",
           median(w, (size_t)n), median(w, (size_t)n) - fm);
    contain_run_free(r);
    contain_free(c);
}

/* Reconcile of BENCH_RECONCILE_RUNS records a dead owner left (from
 * another boot: each is judged and recorded lost). */
static void bench_reconcile(const char *dir)
{
    registry_t *reg;
    if (registry_open(dir, &reg) < 0)
        die("registry_open");
    owner_record_t o;
    memset(&o, 0, sizeof o);
    snprintf(o.id, sizeof o.id, "%032x", 0xdeadu);
    snprintf(o.boot_id, sizeof o.boot_id, "%s",
             "00000000-0000-0000-0000-000000000000");
    o.pid = 1;
    o.lease_expires_ms = 1;
    registry_owner_add(reg, &o);
    registry_begin(reg);
    for (int i = 0; i < BENCH_RECONCILE_RUNS; i++) {
        run_record_t r;
        run_record_init(&r);
        memcpy(r.owner, o.id, sizeof r.owner);
        memcpy(r.boot_id, o.boot_id, sizeof r.boot_id);
        r.pid = r.pgid = r.sid = 100000 + i;
        snprintf(r.containment, sizeof r.containment, "pgid");
        r.state = REIN_RUN_RUNNING;
        registry_run_insert(reg, &r);
        run_record_clear(&r);
    }
    if (registry_commit(reg) < 0)
        die("plant records");
    registry_close(reg);
    rein_sup_opts_t so = {.state_dir = dir, .no_reconcile = true};
    rein_sup_t *s;
    if (rein_sup_open(&so, &s) < 0)
        die("rein_sup_open");
    rein_reconcile_stats_t st;
    double t0 = now_s();
    if (rein_sup_reconcile(s, &st) < 0 || st.lost != BENCH_RECONCILE_RUNS)
        die("reconcile");
    double ms = (now_s() - t0) * 1e3;
    printf("%-34s rein %10.1f %-5s target < 1000 ms  %s\n",
           "reconcile of 1000 records", ms, "ms", ms < 1000 ? "PASS" : "MISS");
    rein_sup_close(s);
}

/* ---------------------------------------------------------- squash */

struct bench_case {
    char command[4096];
    buf_t raw;
    int exit_code;
};

/* A case.json's "command" (up to a "  (note)") and "exit_code", read with
 * a plain scan: the bench needs no JSON library for two fields. */
static void bench_case_meta(const char *json, struct bench_case *c)
{
    const char *p = strstr(json, "\"command\"");
    c->command[0] = '\0';
    if (p && (p = strchr(p + 9, '"'))) {
        size_t n = 0;
        for (p++; *p && *p != '"' && n + 1 < sizeof c->command; p++) {
            if (*p == '\\' && p[1])
                p++;
            c->command[n++] = *p;
        }
        c->command[n] = '\0';
        char *note = strstr(c->command, "  (");
        if (note)
            *note = '\0';
    }
    p = strstr(json, "\"exit_code\"");
    c->exit_code = p && (p = strchr(p, ':')) ? atoi(p + 1) : 0;
}

static int bench_read(const char *path, buf_t *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    char chunk[BENCH_READ_BUF];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(b, chunk, n);
    fclose(f);
    return 0;
}

static void bench_squash(void)
{
    char dir[PATH_MAX], exe[PATH_MAX];
    const char *env = getenv("REIN_CORPUS_DIR");
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[l > 0 ? l : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    if (env && *env)
        snprintf(dir, sizeof dir, "%s", env);
    else
        snprintf(dir, sizeof dir, "%.*s/../../shared/corpus/condense",
                 (int)(sizeof dir - 64), exe);
    struct bench_case *cases = calloc(BENCH_SQUASH_CASES, sizeof *cases);
    size_t nc = 0, total = 0;
    if (!cases)
        die("calloc");
    DIR *d = opendir(dir);
    const struct dirent *e;
    while (d && (e = readdir(d)) && nc < BENCH_SQUASH_CASES) {
        char p[PATH_MAX + 300];
        buf_t json = BUF_INIT;
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s/case.json", dir, e->d_name);
        if (bench_read(p, &json) < 0 || buf_append_byte(&json, '\0') < 0) {
            buf_free(&json);
            continue;
        }
        struct bench_case *c = &cases[nc];
        memset(c, 0, sizeof *c);
        bench_case_meta(json.p, c);
        buf_free(&json);
        snprintf(p, sizeof p, "%s/%s/output", dir, e->d_name);
        if (bench_read(p, &c->raw) < 0 || !c->raw.len) {
            buf_free(&c->raw);
            continue;
        }
        total += c->raw.len;
        nc++;
    }
    if (d)
        closedir(d);
    if (!nc) {
        printf("%-34s no corpus at %s (set REIN_CORPUS_DIR)  SKIP\n",
               "squash corpus (grammars loaded)", dir);
        free(cases);
        return;
    }
    grammar_set_t *set;
    buf_t errs = BUF_INIT;
    if (grammar_set_load(&set, NULL, &errs) < 0)
        die("grammar_set_load");
    buf_free(&errs);
    int rounds = g_quick ? 3 : BENCH_SQUASH_ROUNDS;
    double r[BENCH_SQUASH_ROUNDS] = {0};
    buf_t out = BUF_INIT;
    for (int i = 0; i < rounds; i++) {
        double t0 = now_s();
        for (size_t k = 0; k < nc; k++) {
            sq_opts_t o;
            memset(&o, 0, sizeof o);
            o.command = cases[k].command;
            o.log_path = "/dev/null";
            o.grammars = set;
            buf_reset(&out);
            if (squash_buffer(&o, cases[k].raw.p, cases[k].raw.len,
                              cases[k].exit_code, 0, &out) < 0)
                die("squash_buffer");
        }
        r[i] = (double)total / (now_s() - t0) / 1e6;
    }
    report("squash corpus (grammars) vs target", "MB/s", median(r, (size_t)rounds),
           BENCH_SQUASH_TARGET_MBS, 1.0, 1);
    buf_free(&out);
    grammar_set_free(set);
    for (size_t k = 0; k < nc; k++)
        buf_free(&cases[k].raw);
    free(cases);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            g_quick = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: rein-bench [--quick] [--only NAME]\n"
                            "names: spawn pipe pty tail sup cgroup reconcile "
                            "proxy serve squash\n");
            return 2;
        }
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g_log, sizeof g_log, "%s/rein-bench-%d.log", tmp ? tmp : "/tmp",
             (int)getpid());
    printf("# rein %s bench: medians; floors measured in this run\n",
           REIN_VERSION_STRING);
    if (!only || !strcmp(only, "spawn"))
        bench_spawn();
    if (!only || !strcmp(only, "pipe"))
        bench_thru(0);
    if (!only || !strcmp(only, "pty"))
        bench_thru(1);
    if (!only || !strcmp(only, "tail"))
        bench_tail();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/rein-bench-%d.state", tmp ? tmp : "/tmp",
             (int)getpid());
    if (!only || !strcmp(only, "sup"))
        bench_sup(dir);
    if (!only || !strcmp(only, "cgroup"))
        bench_cgroup();
    if (!only || !strcmp(only, "reconcile")) {
        char rdir[4300];
        snprintf(rdir, sizeof rdir, "%s.r", dir);
        bench_reconcile(rdir);
    }
    if (!only || !strcmp(only, "proxy"))
        bench_proxy(g_quick ? 20 : BENCH_PROXY_RUNS);
    if (!only || !strcmp(only, "serve"))
        bench_serve(g_quick);
    if (!only || !strcmp(only, "squash"))
        bench_squash();
    unlink(g_log);
    /* The benches' state dirs (registry, logs): ours to remove. */
    char rm[9000];
    snprintf(rm, sizeof rm, "rm -rf -- '%s' '%s.r'", dir, dir);
    if (system(rm) != 0)
        fprintf(stderr, "rein-bench: could not remove %s\n", dir);
    return 0;
}
