/*
 * pty.c — PTY sessions (rein.h: rein_pty_*).
 *
 * rein_pty_start() runs `<shell> -lc <command>` on a fresh pseudo-terminal
 * as a run of the supervisor (sup.c), so a PTY session has the same
 * lifecycle, ownership and cleanup as every other run, and hands output to
 * the caller as UTF-8 chunks.  Each rein_pty_t keeps one ephemeral
 * supervisor (no registry, no log) for its whole life, at the `pgid`
 * containment level: a library call must not turn its host into a child
 * subreaper, and the run still gets a pids cgroup where one is writable.
 *
 * How a run ends is the supervisor's: the child exits (it is reaped, our
 * slave closed, the master drained until EIO or REIN_PTY_EXIT_DRAIN_MS), or
 * rein_pty_kill(), the cancel token or the timeout end it (TERM + CONT to
 * the whole run, REIN_PTY_KILL_DRAIN_MS of grace, KILL to what is left).
 *
 * rein_pty_write/resize/kill act on the running session from the chunk
 * callback or from any other thread.  They use a duplicate of the master
 * that this file owns, under a mutex that guards only its lifetime, so they
 * never race the supervisor closing its own; kill only raises a flag and
 * wakes the loop, which does the cancelling on its own thread.  A write
 * works on a duplicate of its own, so while it waits for room in the
 * terminal it holds nothing that kill or resize need: a kill from another
 * thread ends a write stuck on a child that does not read.
 *   start is entered with `running` set before the terminal exists; a
 * write or resize in that window waits (`ready`) for the master, or for
 * start to give up.  A write from the chunk callback runs on the loop's own
 * thread: waiting there for room would stop the reading, and a child that
 * echoes (or prints) would then never read more input, so the write is
 * handed to the supervisor's queue (rein_sup_write), which the loop
 * flushes as the terminal takes it.  Nor may it wait for `write_mu` while
 * another thread's write waits for room (the loop would stop, and a kill
 * with it): it only tries the lock, and when another write holds it, its
 * bytes are `held` until that write is done, which then wakes the loop to
 * hand them on, so that bytes of two writes never interleave.
 *   With `answer`, rein is the command's terminal: the queries it writes
 * to it (cursor position, device attributes) are answered (term/answer.h),
 * each reply written as a write from the chunk callback is, so it never
 * lands inside another write.  It is off unless asked for: the screen
 * model it needs costs about a third of a PTY flood's throughput, and a
 * host that renders the output answers the queries itself.
 */
#include "rein.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cancel.h"
#include "base/loop.h"
#include "base/utf8.h"
#include "supervise/sup.h"
#include "term/answer.h"
#include "term/ptyio.h"

#define PTY_DEFAULT_SHELL "sh"
/* The containment of PTY sessions started through the library. */
#define PTY_CONTAINMENT "pgid"

struct rein_pty {
    pthread_mutex_t mu; /* guards running, setting_up, master, id, cols, rows */
    pthread_cond_t ready; /* set-up is over: master is set, or start failed */
    pthread_mutex_t write_mu; /* one write at a time: bytes never interleave */
    bool running;
    bool setting_up; /* running, and the terminal is not there yet */
    int master; /* our duplicate of the run's master, or -1 */
    int64_t id; /* the supervisor's run */
    pthread_t loop_thread; /* start's caller: the chunk callback's thread */
    unsigned cols, rows;
    int wake_fd; /* eventfd: rein_pty_kill wakes the running loop */
    atomic_bool kill_req;
    buf_t held; /* with mu: callback bytes waiting for another write */
    rein_sup_t *sup; /* made on the first start, kept until free */
};

/* The state of one rein_pty_start. */
struct pty_run {
    rein_pty_t *p;
    const rein_pty_start_opts_t *o;
    int64_t id;
    bool done;
    rein_run_info_t info;
    utf8_dec_t dec;
    buf_t out;
    int err; /* first internal error */
    term_answer_t *ans; /* replies to the command's queries, or NULL */
};

int rein_pty_new(rein_pty_t **out)
{
    if (!out)
        return -EINVAL;
    rein_pty_t *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (p->wake_fd < 0) {
        int e = -errno;
        free(p);
        return e;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->ready, NULL);
    pthread_mutex_init(&p->write_mu, NULL);
    p->master = -1;
    p->cols = REIN_PTY_DEFAULT_COLS;
    p->rows = REIN_PTY_DEFAULT_ROWS;
    atomic_init(&p->kill_req, false);
    *out = p;
    return 0;
}

void rein_pty_free(rein_pty_t *p)
{
    if (!p)
        return;
    /* Freeing a running session is a caller bug; we cannot stop the
     * thread inside start, so refuse to tear the mutex down under it. */
    pthread_mutex_lock(&p->mu);
    bool running = p->running;
    pthread_mutex_unlock(&p->mu);
    if (running)
        return;
    rein_sup_close(p->sup);
    close(p->wake_fd);
    pthread_cond_destroy(&p->ready);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->write_mu);
    buf_free(&p->held);
    free(p);
}

/* The flag that makes a shell run one command string. */
static const char *shell_flag(const char *shell)
{
    const char *base = strrchr(shell, '/');
    base = base ? base + 1 : shell;
    if (!strcasecmp(base, "cmd") || !strcasecmp(base, "cmd.exe"))
        return "/c";
    if (!strcasecmp(base, "powershell") ||
        !strcasecmp(base, "powershell.exe") || !strcasecmp(base, "pwsh") ||
        !strcasecmp(base, "pwsh.exe"))
        return "-Command";
    return "-lc";
}

/* ------------------------------------------------------------- the run */

static void emit(struct pty_run *r)
{
    if (r->out.len && r->o->on_chunk)
        r->o->on_chunk(r->out.p, r->out.len, r->o->data);
    buf_reset(&r->out);
}

static void on_output(rein_sup_t *s, int64_t id, const void *data, size_t n,
                      void *ud)
{
    (void)s;
    (void)id;
    struct pty_run *r = ud;
    if (r->ans) {
        /* The size as rein_pty_resize (any thread) last set it. */
        pthread_mutex_lock(&r->p->mu);
        unsigned cols = r->p->cols, rows = r->p->rows;
        pthread_mutex_unlock(&r->p->mu);
        term_answer_resize(r->ans, cols, rows);
        term_answer_feed(r->ans, data, n);
    }
    /* Valid UTF-8 goes out as read, without a copy. */
    if (utf8_forward(&r->dec, data, n, &r->out, r->o->on_chunk,
                     r->o->data) < 0 &&
        !r->err)
        r->err = -ENOMEM;
}

/* A reply to the command's query, from the loop's thread: written as a
 * chunk callback's write is (queued, never waited for, held while another
 * thread's write runs), so it never lands inside another write's bytes. */
static void pty_answer(const void *reply, size_t n, void *data)
{
    struct pty_run *r = data;
    rein_pty_write(r->p, reply, n);
}

static void on_exit_run(rein_sup_t *s, int64_t id, const rein_run_info_t *i,
                        void *ud)
{
    (void)s;
    (void)id;
    struct pty_run *r = ud;
    r->info = *i;
    r->done = true;
}

/* On the loop's thread: hands bytes the chunk callback left `held` to the
 * supervisor's queue, unless another thread's write still runs (it wakes
 * the loop again when it is done). */
static void pty_hand_on_held(rein_pty_t *p)
{
    if (pthread_mutex_trylock(&p->write_mu) != 0)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->held.len && p->running && !p->setting_up)
        rein_sup_write(p->sup, p->id, p->held.p, p->held.len);
    buf_reset(&p->held);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->write_mu);
}

static void cancel(struct pty_run *r)
{
    rein_sup_cancel(r->p->sup, r->id, SIGTERM, REIN_PTY_KILL_DRAIN_MS);
}

static void on_wake(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)ev;
    struct pty_run *r = data;
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof v);
    (void)n;
    if (atomic_exchange(&r->p->kill_req, false))
        cancel(r);
    pty_hand_on_held(r->p);
}

static void on_cancel(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)ev;
    loop_io_del(l, fd); /* the token stays readable: watch it once */
    cancel(data);
}

static int run_spawn(struct pty_run *r, unsigned cols, unsigned rows)
{
    const rein_pty_start_opts_t *o = r->o;
    const char *shell = o->shell && *o->shell ? o->shell : PTY_DEFAULT_SHELL;
    const char *argv[] = {shell, shell_flag(shell), o->command, NULL};
    rein_run_opts_t ro = {
        .argv = argv,
        .cwd = o->cwd,
        .env = o->env,
        .tty = true,
        .cols = cols,
        .rows = rows,
        .timeout_ms = o->timeout_ms,
        .grace_ms = REIN_PTY_KILL_DRAIN_MS,
        .on_output = on_output,
        .on_exit = on_exit_run,
        .data = r,
    };
    return rein_sup_spawn(r->p->sup, &ro, &r->id);
}

/* Drives the supervisor until the run is over. */
static int run_loop(struct pty_run *r)
{
    loop_t *l = sup_loop(r->p->sup);
    int cfd = cancel_fd(r->o->cancel), rc;
    if ((rc = loop_io_add(l, r->p->wake_fd, LOOP_READ, on_wake, r)) < 0)
        return rc;
    if (cfd >= 0 && (rc = loop_io_add(l, cfd, LOOP_READ, on_cancel, r)) < 0)
        goto out;
    /* A kill() that raced with set-up, or a token raised before start. */
    if (atomic_exchange(&r->p->kill_req, false) ||
        rein_cancel_triggered(r->o->cancel))
        cancel(r);
    while (!r->done) {
        rc = rein_sup_run_once(r->p->sup, -1);
        if (rc < 0)
            break;
        rc = 0;
    }
out:
    loop_io_del(l, r->p->wake_fd);
    if (cfd >= 0)
        loop_io_del(l, cfd);
    return rc;
}

int rein_pty_start(rein_pty_t *p, const rein_pty_start_opts_t *o,
                   rein_run_result_t *result)
{
    struct pty_run r;
    int rc;

    if (!p || !o || !o->command || !result)
        return -EINVAL;
    memset(result, 0, sizeof *result);
    memset(&r, 0, sizeof r);
    r.p = p;
    r.o = o;
    utf8_init(&r.dec);
    unsigned cols = ptyio_clamp_cols(o->cols);
    unsigned rows = ptyio_clamp_rows(o->rows);

    pthread_mutex_lock(&p->mu);
    if (p->running) {
        pthread_mutex_unlock(&p->mu);
        return REIN_EPTY_RUNNING;
    }
    if (rein_cancel_triggered(o->cancel)) {
        /* Raised before the call: cancelled, and nothing started. */
        pthread_mutex_unlock(&p->mu);
        result->cancelled = true;
        return 0;
    }
    p->running = true; /* a start from the chunk callback now fails */
    p->setting_up = true;
    p->loop_thread = pthread_self();
    pthread_mutex_unlock(&p->mu);

    if (!p->sup) {
        rein_sup_opts_t so = {.ephemeral = true,
                              .containment = PTY_CONTAINMENT,
                              .no_reconcile = true};
        if ((rc = rein_sup_open(&so, &p->sup)) < 0)
            goto out;
    }
    if (o->answer &&
        (rc = term_answer_new(cols, rows, pty_answer, &r, &r.ans)) < 0)
        goto out;
    if ((rc = run_spawn(&r, cols, rows)) < 0)
        goto out;
    pthread_mutex_lock(&p->mu);
    p->master = fcntl(sup_run_fd(p->sup, r.id), F_DUPFD_CLOEXEC, 0);
    p->id = r.id;
    p->cols = cols;
    p->rows = rows;
    p->setting_up = false;
    pthread_cond_broadcast(&p->ready);
    pthread_mutex_unlock(&p->mu);
    rc = run_loop(&r);
    if (utf8_finish(&r.dec, &r.out) == 0)
        emit(&r);
    if (rc == 0 && !r.done)
        rc = REIN_EINTERNAL;
    if (rc == 0 && r.err)
        rc = r.err;
    if (rc == 0) {
        rein_reason_t why = r.info.reason;
        result->cancelled = why == REIN_REASON_MANUAL_CANCEL ||
                            why == REIN_REASON_NO_INPUT ||
                            why == REIN_REASON_SHUTDOWN;
        result->timed_out = why == REIN_REASON_OVERALL_TIMEOUT;
        result->has_exit_code =
            why == REIN_REASON_EXIT || why == REIN_REASON_SIGNAL;
        result->exit_code = result->has_exit_code ? r.info.exit_code : 0;
    }
    rein_sup_forget(p->sup, r.id);

out:
    pthread_mutex_lock(&p->mu);
    p->running = false;
    p->setting_up = false;
    pthread_cond_broadcast(&p->ready);
    if (p->master >= 0)
        close(p->master);
    p->master = -1;
    atomic_store(&p->kill_req, false);
    buf_free(&p->held); /* for a command that has ended */
    pthread_mutex_unlock(&p->mu);
    buf_free(&r.out);
    term_answer_free(r.ans);
    return rc;
}

/* ------------------------------------------------------------- controls */

/* With p->mu held: waits out start's set-up.  REIN_EPTY_IDLE when nothing
 * runs (or start gave up), -EIO when the terminal could not be kept. */
static int pty_wait_ready(rein_pty_t *p)
{
    while (p->running && p->setting_up)
        pthread_cond_wait(&p->ready, &p->mu);
    if (!p->running)
        return REIN_EPTY_IDLE;
    return p->master >= 0 ? 0 : -EIO;
}

/* A write from the chunk callback (the loop's thread): queued behind what
 * already waits, never waited for; held back while another thread's write
 * holds write_mu (`own`: this call holds it).  With p->mu held. */
static int pty_write_queued(rein_pty_t *p, const void *data, size_t len,
                            bool own)
{
    size_t waiting = sup_run_pending(p->sup, p->id) + p->held.len;
    if (waiting > REIN_PTY_WRITE_QUEUE_MAX ||
        len > REIN_PTY_WRITE_QUEUE_MAX - waiting)
        return -ENOBUFS;
    if (!own || p->held.len)
        return buf_append(&p->held, data, len) < 0 ? -ENOMEM : 0;
    int rc = rein_sup_write(p->sup, p->id, data, len);
    return rc == REIN_ENOTRUNNING ? -EIO : rc;
}

int rein_pty_write(rein_pty_t *p, const void *data, size_t len)
{
    const char *s = data;
    size_t off = 0;
    int rc = 0, fd = -1;
    if (!p || (!data && len))
        return -EINVAL;
    pthread_mutex_lock(&p->mu);
    bool on_loop = p->running && pthread_equal(pthread_self(), p->loop_thread);
    if (on_loop) {
        /* Set-up runs on this thread too, so it is over by now.  Only
         * try write_mu: another thread's write may hold it for seconds. */
        bool own = pthread_mutex_trylock(&p->write_mu) == 0;
        rc = p->setting_up ? REIN_EPTY_IDLE
                           : pty_write_queued(p, data, len, own);
        pthread_mutex_unlock(&p->mu);
        if (own)
            pthread_mutex_unlock(&p->write_mu);
        return rc;
    }
    /* write_mu before mu, as everywhere: drop mu to take it. */
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_lock(&p->write_mu);
    pthread_mutex_lock(&p->mu);
    if ((rc = pty_wait_ready(p)) == 0 &&
        (fd = fcntl(p->master, F_DUPFD_CLOEXEC, 0)) < 0)
        rc = -errno;
    pthread_mutex_unlock(&p->mu);
    if (rc < 0)
        goto out;
    uint64_t deadline = 0;
    while (off < len) {
        ssize_t n = write(fd, s + off, len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            /* The terminal's input queue is full: the child is not
             * reading.  Wait for room, but not forever: one deadline for
             * the whole write, since room that trickles in would
             * otherwise restart the wait again and again.  The child
             * ending (a kill) wakes the wait: the write then fails. */
            uint64_t now = loop_clock_ms();
            if (!deadline)
                deadline = now + REIN_PTY_WRITE_TIMEOUT_MS;
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            int k = now >= deadline ? 0
                                    : poll(&pfd, 1, (int)(deadline - now));
            if (k == 0) {
                rc = -ETIMEDOUT;
                goto out;
            }
            if (k < 0 && errno != EINTR) {
                rc = -errno;
                goto out;
            }
            /* The other side is gone (the child ended and its terminal
             * closed): the master may still take bytes until its buffer
             * fills, but nobody will read them, and a poll that reports
             * the hang-up at once would make this loop spin. */
            if (k > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
                rc = -EIO;
                goto out;
            }
            continue;
        }
        rc = n < 0 ? -errno : -EIO;
        goto out;
    }
out:
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&p->mu);
    bool held = p->held.len > 0 && p->running;
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->write_mu);
    if (held) { /* the loop hands on what the callback wrote meanwhile */
        uint64_t one = 1;
        if (write(p->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
            rc = rc ? rc : -errno;
    }
    return rc;
}

int rein_pty_resize(rein_pty_t *p, unsigned cols, unsigned rows)
{
    int rc = 0;
    if (!p)
        return -EINVAL;
    /* As the seed clamps a resize: 0 is below the minimum here, where at
     * start it asks for the default. */
    cols = cols ? ptyio_clamp_cols(cols) : REIN_PTY_MIN_COLS;
    rows = rows ? ptyio_clamp_rows(rows) : REIN_PTY_MIN_ROWS;
    pthread_mutex_lock(&p->mu);
    bool on_loop = p->running && pthread_equal(pthread_self(), p->loop_thread);
    if (on_loop && p->setting_up) {
        rc = REIN_EPTY_IDLE; /* set-up runs on this thread: cannot be */
    } else if ((rc = pty_wait_ready(p)) == 0) {
        /* The kernel sends SIGWINCH to the terminal's foreground group. */
        rc = ptyio_resize(p->master, cols, rows);
        if (rc == 0) {
            p->cols = cols;
            p->rows = rows;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int rein_pty_kill(rein_pty_t *p)
{
    int rc = 0;
    if (!p)
        return -EINVAL;
    pthread_mutex_lock(&p->mu);
    if (!p->running) {
        rc = REIN_EPTY_IDLE;
    } else {
        uint64_t one = 1;
        atomic_store(&p->kill_req, true);
        if (write(p->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
            rc = -errno;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}
