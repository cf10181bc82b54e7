/*
 * bench_proxy.c — the CLI proxy's two figures, each beside its floor
 * measured in the same run:
 *
 *   hazard latency   a hazard line written into a running command's input
 *                    (`dd if=FIFO`, a condensed command) until it comes out
 *                    of `rein run`'s stdout; floor: the same line through a
 *                    bare PTY read directly.  Target: proxy − floor ≤ 50 ms.
 *   proxy overhead   wall time of `rein run -- true` against `true` run in a
 *                    bare PTY (open, spawn, drain to EIO, reap).  Target:
 *                    ≤ 5 ms added.  `rein run` is a run of the persistent
 *                    supervisor, so this includes opening the registry in
 *                    the bench's state dir (under /tmp: its fsyncs cost
 *                    what that disk's do), the run's cgroup, and loading
 *                    the grammars.
 *
 * Medians and p90 over BENCH_PROXY_RUNS runs (fewer with --quick); run from
 * bench.c's main.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/spawn.h"
#include "term/ptyio.h"
#include "bench.h"

#define BENCH_LATENCY_TARGET_MS 50.0
#define BENCH_OVERHEAD_TARGET_MS 5.0
/* A step that takes longer than this means the bench is broken. */
#define BENCH_STEP_MS 10000

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double bench_pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, bench_cmp);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

/* A running child whose output we read from fd. */
struct bench_child {
    pid_t pid;
    int pidfd;
    int fd;
};

/* Starts argv either under rein (stdout on a pipe) or on a bare PTY. */
static int bench_start(const char *const *argv, bool pty,
                       struct bench_child *c)
{
    spawn_opts_t o;
    int r[2], m = -1, s = -1, rc;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    if (pty) {
        if ((rc = ptyio_open(120, 40, NULL, &m, &s)) < 0)
            return rc;
        o.fd_in = o.fd_out = o.fd_err = o.ctty_fd = s;
        c->fd = m;
    } else {
        if (pipe2(r, O_CLOEXEC) < 0)
            return -errno;
        o.fd_out = r[1];
        c->fd = r[0];
    }
    rc = spawn_start(&o, &c->pid, &c->pidfd, NULL);
    close(pty ? s : r[1]);
    if (rc < 0)
        close(c->fd);
    return rc;
}

/* Reads until needle appears in acc (or EOF when needle is NULL). */
static int bench_read_until(struct bench_child *c, buf_t *acc,
                            const char *needle)
{
    double end = bench_now() + BENCH_STEP_MS;
    for (;;) {
        if (needle && acc->p && strstr(acc->p, needle))
            return 0;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (bench_now() > end)
            return -ETIMEDOUT;
        if (poll(&p, 1, 1000) <= 0)
            continue;
        char b[65536];
        ssize_t k = read(c->fd, b, sizeof b);
        if (k > 0) {
            buf_append(acc, b, (size_t)k);
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        return needle ? -EPIPE : 0;
    }
}

static int bench_end(struct bench_child *c)
{
    buf_t rest = BUF_INIT;
    int code = -1;
    bench_read_until(c, &rest, NULL);
    buf_free(&rest);
    close(c->fd);
    spawn_reap(c->pid, c->pidfd, &code);
    if (c->pidfd >= 0)
        close(c->pidfd);
    return code;
}

/* A word for i in letters that are no hex digit (g..z), so no template
 * rule takes it for a number or a hash. */
static void bench_word(int i, char *out, size_t size)
{
    static const char letters[] = "ghijklmnopqrstuvwxyz";
    size_t k = 0;
    do {
        if (k + 1 < size)
            out[k++] = letters[i % 20];
        i /= 20;
    } while (i > 0);
    out[k] = 0;
}

/* Latency of `runs` hazard lines through argv (which reads fifo). */
static int bench_latency(const char *const *argv, bool pty, const char *fifo,
                         int runs, double *out)
{
    struct bench_child c;
    int rc = bench_start(argv, pty, &c);
    if (rc < 0)
        return rc;
    int w = open(fifo, O_WRONLY | O_CLOEXEC);
    if (w < 0) {
        rc = -errno;
        kill(c.pid, SIGKILL);
        bench_end(&c);
        return rc;
    }
    buf_t acc = BUF_INIT;
    for (int i = 0; i < runs && rc == 0; i++) {
        /* Each hazard distinct in its words, not only in a number: the
         * squasher folds repeats of one template into a count. */
        char word[16], line[64], needle[64];
        bench_word(i, word, sizeof word);
        int n = snprintf(line, sizeof line, "error: hazard %s\n", word);
        snprintf(needle, sizeof needle, "error: hazard %s", word);
        buf_reset(&acc);
        double t0 = bench_now();
        if (write(w, line, (size_t)n) != n)
            rc = -EIO;
        else if ((rc = bench_read_until(&c, &acc, needle)) == 0)
            out[i] = bench_now() - t0;
    }
    close(w);
    buf_free(&acc);
    bench_end(&c);
    return rc;
}

int bench_proxy(int runs)
{
    char self[PATH_MAX], rein[PATH_MAX + 8], dir[PATH_MAX], fifo[PATH_MAX + 8];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (runs < 2 || n <= 0)
        return 2;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(rein, sizeof rein, "%s/rein", self);
    snprintf(dir, sizeof dir, "/tmp/rein-bench-XXXXXX");
    if (!mkdtemp(dir))
        return 2;
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    setenv("REIN_STATE_DIR", dir, 1);
    setenv("REIN_POLICY", "/nonexistent/rein-bench-policy.json", 1);
    if (mkfifo(fifo, 0600) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);

    double *a = calloc((size_t)runs, sizeof *a);
    double *b = calloc((size_t)runs, sizeof *b);
    char ifarg[PATH_MAX + 16];
    snprintf(ifarg, sizeof ifarg, "if=%s", fifo);
    const char *bare_dd[] = {"dd", ifarg, "bs=4096", "status=none", NULL};
    const char *rein_dd[] = {rein, "run", "--", "dd", ifarg, "bs=4096", "status=none",
                             NULL};
    int rc1 = bench_latency(bare_dd, true, fifo, runs, a);
    int rc2 = bench_latency(rein_dd, false, fifo, runs, b);
    if (rc1 < 0 || rc2 < 0) {
        fprintf(stderr, "bench: hazard latency failed (%d, %d)\n", rc1, rc2);
        return 1;
    }
    double fl = bench_pct(a, (size_t)runs, 0.5), fl9 = bench_pct(a, (size_t)runs, 0.9);
    double px = bench_pct(b, (size_t)runs, 0.5), px9 = bench_pct(b, (size_t)runs, 0.9);
    printf("hazard latency   rein run: median %.3f ms, p90 %.3f ms | bare PTY "
           "floor: median %.3f ms, p90 %.3f ms | added %.3f ms (target <= "
           "%.0f ms) %s\n",
           px, px9, fl, fl9, px - fl, BENCH_LATENCY_TARGET_MS,
           px - fl <= BENCH_LATENCY_TARGET_MS ? "ok" : "OVER");

    const char *bare_true[] = {"true", NULL};
    const char *rein_true[] = {rein, "run", "--", "true", NULL};
    for (int i = 0; i < runs; i++) {
        struct bench_child c;
        double t0 = bench_now();
        if (bench_start(bare_true, true, &c) < 0)
            return 1;
        bench_end(&c);
        a[i] = bench_now() - t0;
        t0 = bench_now();
        if (bench_start(rein_true, false, &c) < 0)
            return 1;
        bench_end(&c);
        b[i] = bench_now() - t0;
    }
    fl = bench_pct(a, (size_t)runs, 0.5);
    px = bench_pct(b, (size_t)runs, 0.5);
    printf("proxy overhead   rein run -- true: median %.3f ms | bare PTY: "
           "median %.3f ms | added %.3f ms (target <= %.0f ms) %s\n",
           px, fl, px - fl, BENCH_OVERHEAD_TARGET_MS,
           px - fl <= BENCH_OVERHEAD_TARGET_MS ? "ok" : "OVER");
    free(a);
    free(b);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
