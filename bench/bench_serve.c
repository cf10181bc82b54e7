/*
 * bench_serve.c — `rein serve`'s three figures, driven over pipes like any
 * MCP client would:
 *
 *   round trip   tools/call exec_command {"cmd":"true"} sent until its
 *                response line is read, against the bare posix_spawn of
 *                `bash -c true` + waitpid.  Target: ≤ 2 ms over the floor.
 *   idle RSS     the server's VmRSS with BENCH_SERVE_SESSIONS idle PTY
 *                sessions open.  Target: ≤ 8 MiB (buffers and screens are
 *                grown on demand).
 *   sustained    BENCH_SERVE_BYTES through one PTY session, polled with
 *                write_stdin until its exit; every byte must be in its log
 *                (zero lost).  Throughput is printed beside the bare PTY
 *                loop's, informative.
 *
 * The server runs with a fresh REIN_STATE_DIR under $TMPDIR, removed after.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "bench.h"

extern char **environ;

#define BENCH_SERVE_RT_TARGET_MS 2.0
#define BENCH_SERVE_RSS_TARGET_KB (8 * 1024)
#define BENCH_SERVE_SESSIONS 64
#define BENCH_SERVE_BYTES (64ll << 20)
/* A response later than this means the bench is broken. */
#define BENCH_SERVE_STEP_MS 60000

struct srv {
    pid_t pid;
    int in, out; /* our ends: we write in, read out */
    buf_t acc;
    int next_id;
};

static double ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double med(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The rein binary beside this bench binary. */
static int rein_path(char *out, size_t n)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0)
        return -1;
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = 0;
    int k2 = snprintf(out, n, "%s/rein", self);
    if (k2 < 0 || (size_t)k2 >= n)
        return -1;
    return access(out, X_OK);
}

/* One response line (or NULL on timeout/EOF); notifications skipped. */
static json_t *srv_read(struct srv *s)
{
    double t0 = ms_now();
    for (;;) {
        char *nl = s->acc.p ? memchr(s->acc.p, '\n', s->acc.len) : NULL;
        if (nl) {
            size_t len = (size_t)(nl - s->acc.p);
            json_t *j = json_loadb(s->acc.p, len, 0, NULL);
            buf_consume(&s->acc, len + 1);
            if (j && json_object_get(j, "id"))
                return j;
            json_decref(j);
            continue;
        }
        struct pollfd pf = {s->out, POLLIN, 0};
        if (ms_now() - t0 > BENCH_SERVE_STEP_MS ||
            poll(&pf, 1, BENCH_SERVE_STEP_MS) <= 0)
            return NULL;
        char b[65536];
        ssize_t n = read(s->out, b, sizeof b);
        if (n <= 0)
            return NULL;
        buf_append(&s->acc, b, (size_t)n);
    }
}

static void srv_send(struct srv *s, const char *method, json_t *params)
{
    json_t *m = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id",
                          ++s->next_id, "method", method, "params", params);
    char *t = json_dumps(m, JSON_COMPACT);
    size_t len = strlen(t);
    t[len] = '\n';
    for (size_t off = 0; off <= len;) {
        ssize_t w = write(s->in, t + off, len + 1 - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    free(t);
    json_decref(m);
}

/* tools/call name args (stolen); the structuredContent (a new ref). */
static json_t *srv_call(struct srv *s, const char *name, json_t *args)
{
    srv_send(s, "tools/call",
             json_pack("{s:s, s:o}", "name", name, "arguments", args));
    json_t *r = srv_read(s);
    json_t *sc = json_incref(json_object_get(json_object_get(r, "result"),
                                             "structuredContent"));
    json_decref(r);
    return sc;
}

static int srv_start(struct srv *s, const char *state)
{
    char rein[PATH_MAX];
    int a[2], b[2];
    memset(s, 0, sizeof *s);
    if (rein_path(rein, sizeof rein) < 0 || pipe2(a, O_CLOEXEC) < 0 ||
        pipe2(b, O_CLOEXEC) < 0)
        return -1;
    setenv("REIN_STATE_DIR", state, 1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, a[0], 0);
    posix_spawn_file_actions_adddup2(&fa, b[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    const char *argv[] = {rein, "serve", NULL};
    int rc = posix_spawn(&s->pid, rein, &fa, NULL, (char *const *)argv,
                         environ);
    posix_spawn_file_actions_destroy(&fa);
    unsetenv("REIN_STATE_DIR");
    close(a[0]);
    close(b[1]);
    if (rc)
        return -1;
    s->in = a[1];
    s->out = b[0];
    srv_send(s, "initialize",
             json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion",
                       "2025-11-25", "capabilities", "clientInfo", "name",
                       "rein-bench", "version", "1"));
    json_t *r = srv_read(s);
    if (!r)
        return -1;
    json_decref(r);
    const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":"
                        "\"notifications/initialized\"}\n";
    if (write(s->in, note, sizeof note - 1) < 0)
        return -1;
    return 0;
}

static void srv_stop(struct srv *s)
{
    close(s->in);
    int st;
    waitpid(s->pid, &st, 0);
    close(s->out);
    buf_free(&s->acc);
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static double spawn_floor(void)
{
    const char *argv[] = {"/bin/bash", "-c", "true", NULL};
    pid_t pid;
    int st;
    double t0 = ms_now();
    if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ))
        return -1;
    waitpid(pid, &st, 0);
    return ms_now() - t0;
}

static int bench_round_trip(struct srv *s, int runs)
{
    double *f = calloc((size_t)runs, sizeof *f);
    double *r = calloc((size_t)runs, sizeof *r);
    int bad = 0;
    for (int i = 0; i < runs + 5; i++) {
        double a = spawn_floor();
        double t0 = ms_now();
        json_t *sc = srv_call(s, "exec_command", json_pack("{s:s}", "cmd",
                                                           "true"));
        double b = ms_now() - t0;
        if (!sc || json_integer_value(json_object_get(sc, "exit_code")) != 0)
            bad++;
        json_decref(sc);
        if (i >= 5) { /* the first few warm up */
            f[i - 5] = a;
            r[i - 5] = b;
        }
    }
    double mf = med(f, (size_t)runs), mr = med(r, (size_t)runs);
    printf("%-34s rein %10.3f ms    floor %10.3f ms    over %6.3f ms  "
           "target <=%.1f ms  %s\n",
           "serve exec_command(true) round trip", mr, mf, mr - mf,
           BENCH_SERVE_RT_TARGET_MS,
           !bad && mr - mf <= BENCH_SERVE_RT_TARGET_MS ? "PASS" : "MISS");
    free(f);
    free(r);
    return bad ? 1 : 0;
}

static int bench_idle_rss(struct srv *s)
{
    long before = rss_kb(s->pid);
    int ok = 0;
    for (int i = 0; i < BENCH_SERVE_SESSIONS; i++) {
        json_t *sc = srv_call(s, "exec_command",
                              json_pack("{s:s, s:b, s:s}", "cmd",
                                        "echo ready; exec cat", "tty", 1,
                                        "wait_for", "ready"));
        ok += json_is_integer(json_object_get(sc, "session_id"));
        json_decref(sc);
    }
    long after = rss_kb(s->pid);
    printf("%-34s rein %10ld kB    (%d sessions; %ld kB before)  target "
           "<=%d kB  %s\n",
           "serve RSS, 64 idle PTY sessions", after, ok, before,
           BENCH_SERVE_RSS_TARGET_KB,
           ok == BENCH_SERVE_SESSIONS && after <= BENCH_SERVE_RSS_TARGET_KB
               ? "PASS"
               : "MISS");
    return ok == BENCH_SERVE_SESSIONS ? 0 : 1;
}

/* The bare PTY rate: head -c N /dev/zero on a PTY read in a blocking loop
 * (no log); informative beside the session's rate. */
static int bench_sustained(struct srv *s, long long bytes)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "exec head -c %lld /dev/zero", bytes);
    double t0 = ms_now();
    json_t *sc = srv_call(s, "exec_command",
                          json_pack("{s:s, s:b, s:i, s:i}", "cmd", cmd, "tty",
                                    1, "yield_time_ms", 250,
                                    "max_output_tokens", 100));
    const char *lp = json_string_value(json_object_get(sc, "log_path"));
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s", lp ? lp : "");
    int polls = 0;
    while (sc && json_is_integer(json_object_get(sc, "session_id"))) {
        json_int_t id = json_integer_value(json_object_get(sc, "session_id"));
        json_decref(sc);
        polls++;
        sc = srv_call(s, "write_stdin",
                      json_pack("{s:I, s:i, s:i}", "session_id", id,
                                "yield_time_ms", 250, "max_output_tokens",
                                100));
    }
    double dt = ms_now() - t0;
    int exit0 = sc && json_integer_value(json_object_get(sc, "exit_code")) == 0;
    json_decref(sc);
    struct stat st;
    long long got = stat(log, &st) == 0 ? (long long)st.st_size : -1;
    printf("%-34s rein %10.1f MB/s  %d polls, %lld of %lld bytes in the log, "
           "%lld lost  target 0 lost  %s\n",
           "serve sustained PTY capture", (double)bytes / dt / 1e3, polls,
           got, bytes, bytes - got, exit0 && got == bytes ? "PASS" : "MISS");
    return got == bytes ? 0 : 1;
}

int bench_serve(int quick)
{
    char state[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    snprintf(state, sizeof state, "%s/rein-bench-serve-XXXXXX",
             tmp ? tmp : "/tmp");
    if (!mkdtemp(state)) {
        perror("rein-bench: mkdtemp");
        return 1;
    }
    struct srv s;
    int rc = 1;
    if (srv_start(&s, state) < 0) {
        fprintf(stderr, "rein-bench: cannot start rein serve\n");
        goto out;
    }
    rc = bench_round_trip(&s, quick ? 50 : BENCH_SERVE_RT_RUNS);
    rc |= bench_idle_rss(&s);
    srv_stop(&s);
    /* A fresh server for capture: the idle sessions are gone with it. */
    if (srv_start(&s, state) < 0)
        goto out;
    rc |= bench_sustained(&s, quick ? BENCH_SERVE_BYTES / 4 : BENCH_SERVE_BYTES);
    srv_stop(&s);
out:;
    char cmdline[PATH_MAX + 16];
    snprintf(cmdline, sizeof cmdline, "rm -rf '%s'", state);
    if (system(cmdline) != 0)
        fprintf(stderr, "rein-bench: could not remove %s\n", state);
    return rc;
}
