/*
 * test_pty.c — PTY sessions against real processes and real terminals:
 * size as stty sees it, clamping, resize, Ctrl-C and ^D, kill, timeout,
 * cancel, state errors, writes to a child that never reads (bounded, and
 * ended by a kill), and no output lost at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/buf.h"
#include "harness.h"
#include "term/answer.h"

/* Collects output; when it first contains `when`, writes `send` (or runs
 * the action) from inside the chunk callback. */
struct drive {
    rein_pty_t *p;
    buf_t out;
    const char *when;
    const char *send;
    size_t send_len;
    int action; /* 0 write send, 1 kill, 2 resize to cols x rows */
    unsigned cols, rows;
    bool fired;
    int action_rc;
};

static void on_chunk(const char *s, size_t n, void *data)
{
    struct drive *d = data;
    buf_append(&d->out, s, n);
    if (d->when && !d->fired && d->out.p && strstr(d->out.p, d->when)) {
        d->fired = true;
        if (d->action == 0)
            d->action_rc = rein_pty_write(d->p, d->send, d->send_len);
        else if (d->action == 1)
            d->action_rc = rein_pty_kill(d->p);
        else
            d->action_rc = rein_pty_resize(d->p, d->cols, d->rows);
    }
}

static void run(struct drive *d, rein_pty_start_opts_t *o,
                rein_run_result_t *res)
{
    if (!d->p)
        ASSERT_OK(rein_pty_new(&d->p));
    o->on_chunk = on_chunk;
    o->data = d;
    ASSERT_OK(rein_pty_start(d->p, o, res));
}

static void done(struct drive *d)
{
    rein_pty_free(d->p);
    buf_free(&d->out);
}

TEST(pty_runs_a_command_with_its_exit_code)
{
    struct drive d = {0};
    rein_pty_start_opts_t o = {.command = "echo hello; exit 3"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 3);
    ASSERT_FALSE(res.cancelled);
    ASSERT_FALSE(res.timed_out);
    ASSERT_STR(d.out.p, "hello\r\n"); /* the terminal's ONLCR */
    done(&d);
}

TEST(pty_size_defaults_and_is_what_stty_sees)
{
    struct drive d = {0};
    rein_pty_start_opts_t o = {.command = "stty size; test -t 0 && tty"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_CONTAINS(d.out.p, "40 120\r\n");
    ASSERT_CONTAINS(d.out.p, "/dev/pts/");
    buf_reset(&d.out);
    o.cols = 100;
    o.rows = 30;
    run(&d, &o, &res);
    ASSERT_CONTAINS(d.out.p, "30 100\r\n");
    done(&d);
}

TEST(pty_size_is_clamped_on_start)
{
    struct drive d = {0};
    rein_pty_start_opts_t o = {.command = "stty size", .cols = 1,
                               .rows = 1};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_STR(d.out.p, "5 20\r\n");
    buf_reset(&d.out);
    o.cols = 10000;
    o.rows = 10000;
    run(&d, &o, &res);
    ASSERT_STR(d.out.p, "200 400\r\n");
    done(&d);
}

/* Resizes a shell that prints its size after the SIGWINCH to cols x
 * rows, and checks the size it saw (`stty size`: "rows cols"). */
static void resize_seen(unsigned cols, unsigned rows, const char *want)
{
    struct drive d = {0};
    d.when = "ready";
    d.action = 2;
    d.cols = cols;
    d.rows = rows;
    rein_pty_start_opts_t o = {
        .command = "trap 'stty size; exit 0' WINCH; echo ready; "
                   "while :; do sleep 0.05; done"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_OK(d.action_rc);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_CONTAINS(d.out.p, want);
    done(&d);
}

TEST(pty_resize_is_seen_and_clamped)
{
    resize_seen(3, 9999, "200 20\r\n");
}

/* 0 is a size below the minimum on resize, clamped as the seed clamps
 * it, not "the default" as at start. */
TEST(pty_resize_to_zero_clamps_to_the_minimum)
{
    resize_seen(0, 0, "5 20\r\n");
}

TEST(pty_ctrl_d_ends_cat_cleanly)
{
    struct drive d = {0};
    d.when = "ready";
    d.send = "abc\n\x04";
    d.send_len = 5;
    rein_pty_start_opts_t o = {.command = "echo ready; cat"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_OK(d.action_rc);
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 0); /* EOF, not 129 (SIGHUP) */
    ASSERT_CONTAINS(d.out.p, "abc\r\nabc\r\n"); /* echo, then cat */
    done(&d);
}

TEST(pty_ctrl_c_interrupts_and_traps)
{
    struct drive d = {0};
    d.when = "ready";
    d.send = "\x03";
    d.send_len = 1;
    rein_pty_start_opts_t o = {.command = "echo ready; exec cat"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_OK(d.action_rc);
    ASSERT_EQ(res.exit_code, 128 + SIGINT);

    struct drive t = {0};
    t.when = "ready";
    t.send = "\x03";
    t.send_len = 1;
    rein_pty_start_opts_t ot = {
        .command = "trap 'echo trapped; exit 42' INT; echo ready; "
                   "while :; do sleep 0.05; done"};
    run(&t, &ot, &res);
    ASSERT_EQ(res.exit_code, 42);
    ASSERT_CONTAINS(t.out.p, "trapped");
    done(&d);
    done(&t);
}

TEST(pty_kill_from_callback_cancels)
{
    struct drive d = {0};
    d.when = "ready";
    d.action = 1;
    rein_pty_start_opts_t o = {.command = "echo ready; sleep 30"};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    run(&d, &o, &res);
    ASSERT_OK(d.action_rc);
    ASSERT_TRUE(res.cancelled);
    ASSERT_FALSE(res.has_exit_code);
    ASSERT_INT(test_now_ms() - t0, <, 5000);
    done(&d);
}

TEST(pty_kill_reaches_a_term_ignoring_tree)
{
    struct drive d = {0};
    d.when = "ready";
    d.action = 1;
    /* Both the shell and its background child ignore TERM. */
    rein_pty_start_opts_t o = {
        .command = "trap '' TERM; sleep 60 & echo ready; wait"};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    run(&d, &o, &res);
    ASSERT_TRUE(res.cancelled);
    uint64_t took = test_now_ms() - t0;
    ASSERT_INT(took, >=, REIN_PTY_KILL_DRAIN_MS);
    ASSERT_INT(took, <, REIN_PTY_KILL_DRAIN_MS + 3000);
    done(&d); /* the runner fails the suite if the sleep survived */
}

TEST(pty_timeout)
{
    struct drive d = {0};
    rein_pty_start_opts_t o = {.command = "sleep 30", .timeout_ms = 200};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    run(&d, &o, &res);
    ASSERT_TRUE(res.timed_out);
    ASSERT_FALSE(res.cancelled);
    ASSERT_FALSE(res.has_exit_code);
    ASSERT_INT(test_now_ms() - t0, >=, 200);
    done(&d);
}

static void *cancel_later(void *arg)
{
    usleep(100000);
    rein_cancel_trigger(arg);
    return NULL;
}

TEST(pty_cancel_token_from_another_thread)
{
    struct drive d = {0};
    rein_cancel_t *c;
    pthread_t th;
    ASSERT_OK(rein_cancel_new(&c));
    rein_pty_start_opts_t o = {.command = "sleep 30", .cancel = c};
    rein_run_result_t res;
    ASSERT_OK(pthread_create(&th, NULL, cancel_later, c));
    run(&d, &o, &res);
    pthread_join(th, NULL);
    ASSERT_TRUE(res.cancelled);
    rein_cancel_free(c);
    done(&d);
}

/* A token raised before the call starts nothing at all. */
TEST(pty_cancel_token_raised_before_start_starts_nothing)
{
    struct drive d = {0};
    rein_cancel_t *c;
    ASSERT_OK(rein_cancel_new(&c));
    rein_cancel_trigger(c);
    char mark[512], cmd[600];
    snprintf(mark, sizeof mark, "%s/ran", test_tmpdir());
    snprintf(cmd, sizeof cmd, "echo ran > '%s'; sleep 30", mark);
    rein_pty_start_opts_t o = {.command = cmd, .cancel = c};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_TRUE(res.cancelled);
    ASSERT_FALSE(res.has_exit_code);
    ASSERT_EQ(access(mark, F_OK), -1);
    rein_cancel_free(c);
    done(&d);
}

struct concurrent {
    rein_pty_t *p;
    int rc;
};

static void on_chunk_try_start(const char *s, size_t n, void *data)
{
    (void)s;
    (void)n;
    struct concurrent *c = data;
    if (c->rc)
        return;
    rein_pty_start_opts_t o = {.command = "true"};
    rein_run_result_t res;
    c->rc = rein_pty_start(c->p, &o, &res);
}

TEST(pty_state_errors)
{
    rein_pty_t *p;
    ASSERT_OK(rein_pty_new(&p));
    ASSERT_EQ(rein_pty_write(p, "x", 1), REIN_EPTY_IDLE);
    ASSERT_EQ(rein_pty_resize(p, 80, 24), REIN_EPTY_IDLE);
    ASSERT_EQ(rein_pty_kill(p), REIN_EPTY_IDLE);
    ASSERT_STR(rein_strerror(REIN_EPTY_IDLE), "PTY session is not running");
    struct concurrent c = {p, 0};
    rein_pty_start_opts_t o = {.command = "echo x", .on_chunk =
                                                        on_chunk_try_start,
                               .data = &c};
    rein_run_result_t res;
    ASSERT_OK(rein_pty_start(p, &o, &res));
    ASSERT_EQ(c.rc, REIN_EPTY_RUNNING);
    ASSERT_STR(rein_strerror(REIN_EPTY_RUNNING),
               "PTY session already running");
    ASSERT_EQ(rein_pty_start(p, NULL, &res), -EINVAL);
    rein_pty_free(p);
    rein_pty_free(NULL);
}

/* Lines for a terminal whose reader never reads: more than its input
 * queue and the PTY's buffers hold (4 KiB and 8 KiB here). */
#define T_FLOOD_BYTES (256 * 1024)

/* T_FLOOD_BYTES of "x\n" lines (free them). */
static char *flood_lines(void)
{
    char *lines = malloc(T_FLOOD_BYTES);
    ASSERT_TRUE(lines != NULL);
    for (size_t i = 0; i < T_FLOOD_BYTES; i += 2)
        memcpy(lines + i, "x\n", 2);
    return lines;
}

struct flood {
    rein_pty_t *p;
    pthread_t th;
    bool fired;
    int rc;
    uint64_t took_ms;
};

/* Floods the terminal with lines the child never reads, timing the write;
 * then kills the session. */
static void *flood_writer(void *arg)
{
    struct flood *f = arg;
    char *lines = flood_lines();
    uint64_t t0 = test_now_ms();
    f->rc = rein_pty_write(f->p, lines, T_FLOOD_BYTES);
    f->took_ms = test_now_ms() - t0;
    free(lines);
    ASSERT_OK(rein_pty_kill(f->p));
    return NULL;
}

/* On the first output ("ready"), starts the flood from a thread of its
 * own: a write from the callback would only be queued. */
static void on_chunk_flood(const char *s, size_t n, void *data)
{
    struct flood *f = data;
    (void)s;
    (void)n;
    if (f->fired)
        return;
    f->fired = true;
    ASSERT_EQ(pthread_create(&f->th, NULL, flood_writer, f), 0);
}

TEST(pty_write_to_a_child_that_never_reads_times_out)
{
    struct flood f = {0};
    ASSERT_OK(rein_pty_new(&f.p));
    /* Whole lines: a canonical terminal discards the excess of an
     * unfinished line instead of filling up. */
    rein_pty_start_opts_t o = {.command = "echo ready; exec sleep 60",
                               .on_chunk = on_chunk_flood,
                               .data = &f};
    rein_run_result_t res;
    ASSERT_OK(rein_pty_start(f.p, &o, &res));
    ASSERT_TRUE(f.fired);
    ASSERT_EQ(pthread_join(f.th, NULL), 0);
    ASSERT_EQ(f.rc, -ETIMEDOUT);
    ASSERT_INT(f.took_ms, >=, REIN_PTY_WRITE_TIMEOUT_MS);
    ASSERT_INT(f.took_ms, <, REIN_PTY_WRITE_TIMEOUT_MS + 3000);
    ASSERT_TRUE(res.cancelled); /* the session was still there to kill */
    rein_pty_free(f.p);
}

/* A flood written from its own thread, killed from the loop's. */
struct stuck {
    rein_pty_t *p;
    pthread_t th;
    _Atomic pid_t tid;
    bool fired;
    int rc, cb_rc;
    uint64_t took_ms, kill_ms, cb_ms;
};

static void *stuck_writer(void *arg)
{
    struct stuck *w = arg;
    w->tid = (pid_t)syscall(SYS_gettid);
    char *lines = flood_lines();
    uint64_t t0 = test_now_ms();
    w->rc = rein_pty_write(w->p, lines, T_FLOOD_BYTES);
    w->took_ms = test_now_ms() - t0;
    free(lines);
    return NULL;
}

/* Whether thread tid of this process sits in poll(2) (no event says a
 * write started to wait, so the test reads where the thread is). */
static bool in_poll(pid_t tid)
{
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    long nr = got ? strtol(buf, NULL, 10) : -1;
    return nr == SYS_poll || nr == SYS_ppoll;
}

static void on_chunk_stuck(const char *s, size_t n, void *data)
{
    struct stuck *w = data;
    (void)s;
    (void)n;
    if (w->fired)
        return;
    w->fired = true;
    ASSERT_EQ(pthread_create(&w->th, NULL, stuck_writer, w), 0);
    uint64_t deadline = test_now_ms() + REIN_PTY_WRITE_TIMEOUT_MS / 2;
    while (!w->tid || !in_poll(w->tid)) {
        ASSERT_INT(test_now_ms(), <, deadline);
        sched_yield();
    }
    /* A write from the callback while that write holds the terminal:
     * held for later, never waited for (it used to wait out the other
     * write's timeout, and the loop, a kill with it, stood still). */
    uint64_t t0 = test_now_ms();
    w->cb_rc = rein_pty_write(w->p, "z", 1);
    w->cb_ms = test_now_ms() - t0;
    t0 = test_now_ms();
    ASSERT_OK(rein_pty_kill(w->p));
    w->kill_ms = test_now_ms() - t0;
}

TEST(pty_kill_ends_a_write_stuck_on_a_child_that_never_reads)
{
    struct stuck w = {0};
    ASSERT_OK(rein_pty_new(&w.p));
    rein_pty_start_opts_t o = {.command = "echo ready; exec sleep 60",
                               .on_chunk = on_chunk_stuck,
                               .data = &w};
    rein_run_result_t res;
    ASSERT_OK(rein_pty_start(w.p, &o, &res));
    ASSERT_TRUE(w.fired);
    ASSERT_EQ(pthread_join(w.th, NULL), 0);
    ASSERT_TRUE(res.cancelled);
    /* The kill did not wait for the write, and the write ended with the
     * child instead of running out its timeout. */
    ASSERT_INT(w.kill_ms, <, REIN_PTY_WRITE_TIMEOUT_MS / 5);
    ASSERT_OK(w.cb_rc);
    ASSERT_INT(w.cb_ms, <, REIN_PTY_WRITE_TIMEOUT_MS / 5);
    ASSERT_INT(w.rc, <, 0);
    ASSERT_INT(w.rc, !=, -ETIMEDOUT);
    ASSERT_INT(w.took_ms, <, REIN_PTY_WRITE_TIMEOUT_MS);
    rein_pty_free(w.p);
}

/* A write of another thread's that waits for room, and a callback write
 * held behind it meanwhile: once the child reads, the held bytes follow
 * every byte of the other write, none lost, none interleaved. */
struct held {
    rein_pty_t *p;
    pthread_t th;
    pid_t tid;
    bool fired;
    char flag[PATH_MAX];
    buf_t out;
    int rc, cb_rc;
    bool no_z; /* the callback writes nothing itself */
};

#define T_HELD_BYTES 20000

static void *held_writer(void *arg)
{
    struct held *h = arg;
    h->tid = (pid_t)syscall(SYS_gettid);
    char *a = malloc(T_HELD_BYTES);
    memset(a, 'a', T_HELD_BYTES);
    h->rc = rein_pty_write(h->p, a, T_HELD_BYTES);
    free(a);
    return NULL;
}

static void on_chunk_held(const char *s, size_t n, void *data)
{
    struct held *h = data;
    buf_append(&h->out, s, n);
    if (h->fired || !strstr(h->out.p, "READY"))
        return;
    h->fired = true;
    ASSERT_EQ(pthread_create(&h->th, NULL, held_writer, h), 0);
    uint64_t deadline = test_now_ms() + REIN_PTY_WRITE_TIMEOUT_MS / 2;
    while (!h->tid || !in_poll(h->tid)) {
        ASSERT_INT(test_now_ms(), <, deadline);
        sched_yield();
    }
    if (!h->no_z)
        h->cb_rc = rein_pty_write(h->p, "Z", 1);
    int fd = open(h->flag, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_INT(fd, >=, 0);
    close(fd);
}

/* Runs a raw, silent child that says READY (the callback then starts the
 * other thread's write), waits for the callback's flag, prints `then`
 * and reads back `extra` bytes more than that write; the write is over
 * and its thread joined when this returns. */
static void held_run(struct held *h, const char *then, int extra,
                     bool answer, rein_run_result_t *res)
{
    snprintf(h->flag, sizeof h->flag, "%s/go", test_tmpdir());
    ASSERT_OK(rein_pty_new(&h->p));
    char cmd[PATH_MAX + 160];
    snprintf(cmd, sizeof cmd,
             "stty raw -echo; echo READY; while [ ! -e %s ]; do sleep 0.01; "
             "done; %sexec head -c %d",
             h->flag, then, T_HELD_BYTES + extra);
    rein_pty_start_opts_t o = {.command = cmd, .on_chunk = on_chunk_held,
                               .data = h, .timeout_ms = 30000,
                               .answer = answer};
    ASSERT_OK(rein_pty_start(h->p, &o, res));
    ASSERT_TRUE(h->fired);
    ASSERT_EQ(pthread_join(h->th, NULL), 0);
    ASSERT_OK(h->rc);
}

TEST(pty_callback_write_held_behind_another_write_follows_it)
{
    struct held h = {0};
    rein_run_result_t res;
    held_run(&h, "", 1, false, &res);
    ASSERT_OK(h.cb_rc);
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 0);
    const char *body = strstr(h.out.p, "READY") + 5;
    size_t as = 0;
    const char *z = strchr(body, 'Z');
    ASSERT_TRUE(z != NULL);
    for (const char *q = body; q < z; q++)
        as += *q == 'a';
    ASSERT_EQ(as, T_HELD_BYTES); /* every 'a' came before the 'Z' */
    rein_pty_free(h.p);
    buf_free(&h.out);
}

/* Writes from the chunk callback: what the first output asks for. */
struct cbw {
    rein_pty_t *p;
    buf_t out;
    bool fired;
    size_t len; /* bytes of "x\n" lines to write, then ^D unless kill */
    bool kill;
    int rc, rc2, rc3;
};

static void on_chunk_cbw(const char *s, size_t n, void *data)
{
    struct cbw *w = data;
    buf_append(&w->out, s, n);
    if (w->fired || !strstr(w->out.p, "READY"))
        return;
    w->fired = true;
    char *lines = malloc(w->len + 2);
    ASSERT_TRUE(lines != NULL);
    for (size_t i = 0; i + 1 < w->len + 2; i += 2)
        memcpy(lines + i, "x\n", 2);
    if (w->kill) {
        /* The edge of the queue: one byte over is refused whole. */
        w->rc = rein_pty_write(w->p, lines, REIN_PTY_WRITE_QUEUE_MAX + 1);
        w->rc2 = rein_pty_write(w->p, lines, REIN_PTY_WRITE_QUEUE_MAX);
        w->rc3 = rein_pty_kill(w->p);
    } else {
        w->rc = rein_pty_write(w->p, lines, w->len);
        w->rc2 = rein_pty_write(w->p, "\x04", 1); /* after them: in order */
    }
    free(lines);
}

TEST(pty_write_from_the_callback_is_queued_not_waited_for)
{
    /* cat prints what it reads: a write waiting on the loop's thread
     * stopped the reading, so cat's output filled the terminal, cat
     * stopped reading its input, and the write ran out its timeout.  (No
     * echo: the line discipline drops echoes its buffer cannot hold while
     * a slow reader, valgrind's, falls behind.) */
    struct cbw w = {.len = 200000};
    ASSERT_OK(rein_pty_new(&w.p));
    rein_pty_start_opts_t o = {.command = "stty -echo; echo READY; exec cat",
                               .on_chunk = on_chunk_cbw,
                               .data = &w,
                               .timeout_ms = 30000};
    rein_run_result_t res;
    ASSERT_OK(rein_pty_start(w.p, &o, &res));
    ASSERT_TRUE(w.fired);
    ASSERT_OK(w.rc);
    ASSERT_OK(w.rc2);
    ASSERT_FALSE(res.timed_out);
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_EQ(res.exit_code, 0); /* cat saw every line, then the ^D */
    size_t xs = 0;
    for (size_t i = 0; i < w.out.len; i++)
        xs += w.out.p[i] == 'x';
    ASSERT_EQ(xs, w.len / 2); /* every line, printed by cat */
    rein_pty_free(w.p);
    buf_free(&w.out);

    /* A child that never reads: the queue takes REIN_PTY_WRITE_QUEUE_MAX
     * bytes, not one more, and a kill from the callback still ends it. */
    struct cbw k = {.len = REIN_PTY_WRITE_QUEUE_MAX + 2, .kill = true};
    ASSERT_OK(rein_pty_new(&k.p));
    rein_pty_start_opts_t ko = {.command = "stty -echo; echo READY; "
                                           "exec sleep 60",
                                .on_chunk = on_chunk_cbw,
                                .data = &k};
    ASSERT_OK(rein_pty_start(k.p, &ko, &res));
    ASSERT_EQ(k.rc, -ENOBUFS);
    ASSERT_OK(k.rc2);
    ASSERT_OK(k.rc3);
    ASSERT_TRUE(res.cancelled);
    rein_pty_free(k.p);
    buf_free(&k.out);
}

/* Spins on write or resize while another thread enters start. */
struct early {
    rein_pty_t *p;
    _Atomic bool go;
    int resize; /* 0 write, 1 resize */
    int rc;
};

static void *early_caller(void *arg)
{
    struct early *e = arg;
    while (!e->go)
        sched_yield();
    for (;;) {
        int rc = e->resize ? rein_pty_resize(e->p, 100, 30)
                           : rein_pty_write(e->p, "\n", 1);
        if (rc == REIN_EPTY_IDLE) {
            sched_yield(); /* under valgrind threads take turns */
            continue;
        }
        e->rc = rc;
        if (e->resize && rc == 0) /* end the child's read */
            e->rc = rein_pty_write(e->p, "\n", 1);
        return NULL;
    }
}

TEST(pty_write_and_resize_wait_out_starts_set_up)
{
    /* Valid from the moment start is entered: before the terminal existed
     * they failed with EBADF (and a resize was lost). */
    for (int i = 0; i < 10; i++) {
        struct early e = {.resize = i % 2};
        ASSERT_OK(rein_pty_new(&e.p));
        pthread_t th;
        ASSERT_EQ(pthread_create(&th, NULL, early_caller, &e), 0);
        rein_pty_start_opts_t o = {.command = "read -t 20 x",
                                   .shell = "bash"};
        rein_run_result_t res;
        e.go = true;
        ASSERT_OK(rein_pty_start(e.p, &o, &res));
        ASSERT_EQ(pthread_join(th, NULL), 0);
        ASSERT_OK(e.rc);
        ASSERT_TRUE(res.has_exit_code); /* the newline reached read */
        ASSERT_EQ(res.exit_code, 0);
        rein_pty_free(e.p);
    }
}

TEST(pty_spawn_errors_are_synchronous)
{
    rein_pty_t *p;
    rein_run_result_t res;
    ASSERT_OK(rein_pty_new(&p));
    rein_pty_start_opts_t o = {.command = "true",
                               .shell = "/nonexistent/shell"};
    ASSERT_EQ(rein_pty_start(p, &o, &res), -ENOENT);
    rein_pty_start_opts_t o2 = {.command = "true", .cwd = "/nonexistent"};
    ASSERT_EQ(rein_pty_start(p, &o2, &res), -ENOENT);
    const char *bad_env[] = {"NOEQUALS", NULL};
    rein_pty_start_opts_t o3 = {.command = "true", .env = bad_env};
    ASSERT_EQ(rein_pty_start(p, &o3, &res), REIN_EENV);
    /* Still usable afterwards. */
    rein_pty_start_opts_t ok = {.command = "exit 5"};
    ASSERT_OK(rein_pty_start(p, &ok, &res));
    ASSERT_EQ(res.exit_code, 5);
    rein_pty_free(p);
}

TEST(pty_env_cwd_shell_and_term)
{
    struct drive d = {0};
    const char *env[] = {"REIN_X=hello there", NULL};
    unsetenv("TERM"); /* a terminal is given a TERM when it has none */
    rein_pty_start_opts_t o = {
        .command = "echo \"$REIN_X|$(pwd)|$TERM|$0\"", .env = env,
        .cwd = "/tmp", .shell = "/bin/bash"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_STR(d.out.p, "hello there|/tmp|xterm-256color|/bin/bash\r\n");
    done(&d);
}

/* The flag before the command follows the shell's name: -lc for POSIX
 * shells, /c for cmd, -Command for PowerShell.  Stand-in shells (scripts
 * named like the real ones) print the arguments they were given. */
TEST(pty_shell_flag_follows_the_shell_name)
{
    static const struct {
        const char *name, *want;
    } cases[] = {
        {"cmd", "/c|echo hi|\r\n"},
        {"cmd.exe", "/c|echo hi|\r\n"},
        {"CMD.EXE", "/c|echo hi|\r\n"},
        {"powershell", "-Command|echo hi|\r\n"},
        {"powershell.exe", "-Command|echo hi|\r\n"},
        {"pwsh", "-Command|echo hi|\r\n"},
        {"pwsh.exe", "-Command|echo hi|\r\n"},
        {"zsh", "-lc|echo hi|\r\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", test_tmpdir(), cases[i].name);
        FILE *f = fopen(path, "w");
        ASSERT_TRUE(f != NULL);
        fputs("#!/bin/sh\nprintf '%s|' \"$@\"; echo\n", f);
        fclose(f);
        ASSERT_OK(chmod(path, 0700));
        struct drive d = {0};
        rein_pty_start_opts_t o = {.command = "echo hi", .shell = path};
        rein_run_result_t res;
        run(&d, &o, &res);
        ASSERT_EQ(res.exit_code, 0);
        ASSERT_STR(d.out.p, cases[i].want);
        done(&d);
    }
}

/* With no shell given, the command runs in `sh -lc`: a login shell. */
TEST(pty_default_shell_is_a_login_sh)
{
    struct drive d = {0};
    rein_pty_start_opts_t o = {.command = "echo \"$0\""};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_STR(d.out.p, "sh\r\n");
    done(&d);
    struct drive b = {0};
    rein_pty_start_opts_t ob = {
        .command = "shopt -q login_shell && echo login", .shell = "/bin/bash"};
    run(&b, &ob, &res);
    ASSERT_STR(b.out.p, "login\r\n");
    done(&b);
}

TEST(pty_invalid_utf8_becomes_replacement)
{
    struct drive d = {0};
    rein_pty_start_opts_t o = {.command = "printf 'a\\377b\\342\\202\\254'"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_STR(d.out.p, "a\xEF\xBF\xBD" "b\xE2\x82\xAC");
    done(&d);
}

struct counter {
    size_t bytes;
    size_t lf;
};

static void count_chunk(const char *s, size_t n, void *data)
{
    struct counter *c = data;
    c->bytes += n;
    for (size_t i = 0; i < n; i++)
        c->lf += s[i] == '\n';
}

TEST(pty_fast_output_loses_nothing_at_exit)
{
    /* 100 runs of fast output that ends with the exit: every byte must
     * arrive every time (peers lose the tail in about half their runs). */
    rein_pty_t *p;
    ASSERT_OK(rein_pty_new(&p));
    for (int i = 0; i < 100; i++) {
        struct counter c = {0, 0};
        rein_pty_start_opts_t o = {.command = "seq 1 20000",
                                   .on_chunk = count_chunk, .data = &c};
        rein_run_result_t res;
        ASSERT_OK(rein_pty_start(p, &o, &res));
        ASSERT_EQ(res.exit_code, 0);
        ASSERT_EQ(c.lf, 20000);
        /* seq 1 20000 prints 108894 bytes; ONLCR adds a CR per line. */
        ASSERT_EQ(c.bytes, 108894 + 20000);
    }
    rein_pty_free(p);
}

TEST(pty_background_job_keeping_the_terminal_does_not_hang_exit)
{
    struct drive d = {0};
    rein_pty_start_opts_t o = {.command = "sleep 2 & echo done"};
    rein_run_result_t res;
    uint64_t t0 = test_now_ms();
    run(&d, &o, &res);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_CONTAINS(d.out.p, "done");
    ASSERT_INT(test_now_ms() - t0, <, 1500); /* the drain window, not 2 s */
    done(&d);
}

TEST(pty_works_on_the_sigchld_fallback)
{
    setenv("REIN_PIDFD", "0", 1); /* as under valgrind or old kernels */
    struct drive d = {0};
    d.when = "ready";
    d.send = "\x04";
    d.send_len = 1;
    rein_pty_start_opts_t o = {.command = "echo ready; cat; exit 4"};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_EQ(res.exit_code, 4);
    struct drive k = {0};
    k.when = "ready";
    k.action = 1;
    rein_pty_start_opts_t ok = {
        .command = "trap '' TERM; sleep 60 & echo ready; wait"};
    run(&k, &ok, &res);
    ASSERT_TRUE(res.cancelled);
    done(&d);
    done(&k);
}

/* ------------------------------------------------ terminal queries */

/* `termhelper ask PRE QUERY...` (tests/bin/termhelper.c) as a command. */
static void ask_command(char *cmd, size_t size, const char *args)
{
    snprintf(cmd, size, "'%s/termhelper' ask %s", test_bin_dir(), args);
}

TEST(pty_answers_the_terminal_queries_of_its_command)
{
    struct drive d = {0};
    char cmd[PATH_MAX + 512];
    /* Cleared, then two lines down and five characters in: the cursor
     * report says row 3, column 6, the cursor after what came before. */
    ask_command(cmd, sizeof cmd,
                "'\\e[2J\\e[H\\r\\n\\r\\nhello' '\\e[6n' '\\e[c' "
                "'\\e[?u\\e[c' '\\e[>c' '\\e[5n' '\\e]11;?\\a'");
    rein_pty_start_opts_t o = {.command = cmd, .answer = true};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_CONTAINS(d.out.p, "hello\033[6nreply: \\e[3;6R\r\n");
    ASSERT_CONTAINS(d.out.p, "\033[creply: \\e[?1;2c\r\n");
    /* No kitty keyboard flags (rein sends legacy keys): the DA after the
     * query is the first reply. */
    ASSERT_CONTAINS(d.out.p, "\033[?u\033[creply: \\e[?1;2c\r\n");
    ASSERT_CONTAINS(d.out.p, "reply: \\e[>0;0;0c\r\n");
    ASSERT_CONTAINS(d.out.p, "reply: \\e[0n\r\n");
    ASSERT_CONTAINS(d.out.p, "reply: \\e]11;rgb:0000/0000/0000\\a\r\n");
    ASSERT_NOT_CONTAINS(d.out.p, "noreply");
    done(&d);
}

TEST(pty_without_answer_leaves_the_queries_to_the_host)
{
    /* The host answers the DA itself, as its terminal emulator would:
     * the command gets that reply, not one of rein's before it. */
    struct drive d = {.when = "\033[c", .send = "\033[?62;22c",
                      .send_len = 9};
    char cmd[PATH_MAX + 512];
    ask_command(cmd, sizeof cmd, "'' '\\e[c'");
    rein_pty_start_opts_t o = {.command = cmd}; /* answer: false */
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_OK(d.action_rc);
    ASSERT_CONTAINS(d.out.p, "reply: \\e[?62;22c\r\n");
    done(&d);
}

TEST(pty_a_query_flood_gets_a_bounded_number_of_replies)
{
    struct drive d = {0};
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "'%s/termhelper' flood 1000", test_bin_dir());
    rein_pty_start_opts_t o = {.command = cmd, .answer = true};
    rein_run_result_t res;
    run(&d, &o, &res);
    ASSERT_EQ(res.exit_code, 0);
    char want[64];
    snprintf(want, sizeof want, "replies: %d\r", TERM_ANSWER_BURST);
    ASSERT_CONTAINS(d.out.p, want);
    done(&d);
}

TEST(pty_a_reply_never_lands_inside_another_write)
{
    /* Another thread's write waits for room (the child does not read
     * yet); the child asks for its status meanwhile: rein's reply follows
     * every byte of that write, as the child then reads them. */
    struct held h = {.no_z = true};
    rein_run_result_t res;
    held_run(&h, "printf 'Q\\033[5n'; ", 4, true, &res);
    ASSERT_EQ(res.exit_code, 0);
    const char *body = strstr(h.out.p, "Q\033[5n");
    ASSERT_TRUE(body != NULL);
    body += 5;
    const char *reply = strstr(body, "\033[0n");
    ASSERT_TRUE(reply != NULL);
    size_t as = 0;
    for (const char *q = body; q < reply; q++)
        as += *q == 'a';
    ASSERT_EQ(as, T_HELD_BYTES); /* every 'a' came before the reply */
    rein_pty_free(h.p);
    buf_free(&h.out);
}
