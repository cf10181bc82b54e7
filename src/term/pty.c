/*
 * pty.c — PTY sessions (rein.h: rein_pty_*).
 *
 * rein_pty_start() opens a pseudo-terminal, runs `<shell> -lc <command>` with
 * the slave as its controlling terminal, and drives a private event loop
 * until the run is over, handing output to the caller as UTF-8 chunks.
 * rein_pty_write/resize/kill act on the running session from the chunk
 * callback or from any other thread; a mutex guards only the master fd's
 * lifetime, never the read path.
 *
 * How a run ends, first reason wins:
 *   exit     the child exits: reap it, close our slave, then drain the
 *            master until EIO (every writer gone) or REIN_PTY_EXIT_DRAIN_MS.
 *            Our slave stays open until the child is reaped, because closing
 *            the last slave fd first hangs up the terminal and can turn a
 *            clean exit into SIGHUP.
 *   kill     rein_pty_kill(), the cancel token or the timeout: TERM + CONT to
 *            the session's group and its process tree, then after
 *            REIN_PTY_KILL_DRAIN_MS a KILL to whatever is left (the tree is
 *            rescanned), then the same reap and drain.  The leader is reaped
 *            only after the last signal, so its pid, and with it the group
 *            id, cannot be reused while we still signal the group.
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
#include "base/env.h"
#include "base/loop.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "base/utf8.h"
#include "term/ptyio.h"

/* Bytes asked for per read(); a PTY returns at most ~4 KiB anyway. */
#define PTY_READ_BUF 65536
/* How long rein_pty_write waits for room in the terminal's input queue. */
#define PTY_WRITE_TIMEOUT_MS 5000
/* After the last KILL: how long to wait for the leader's exit event. */
#define PTY_KILL_BOUND_MS 5000
#define PTY_DEFAULT_SHELL "sh"
#define PTY_DEFAULT_TERM "xterm-256color"

struct rein_pty {
    pthread_mutex_t mu; /* guards running, master, cols, rows */
    bool running;
    int master;
    unsigned cols, rows;
    int wake_fd; /* eventfd: rein_pty_kill wakes the running loop */
    atomic_bool kill_req;
};

enum pty_end { END_NONE, END_EXIT, END_CANCEL, END_TIMEOUT };

/* The state of one rein_pty_start. */
struct pty_run {
    rein_pty_t *p;
    const rein_pty_start_opts_t *o;
    loop_t *loop;
    int master, slave;
    pid_t pid;
    int pidfd;
    bool exited, reaped, eof, done;
    int exit_code;
    enum pty_end end;
    bool killed; /* the final KILL was sent */
    uint64_t drain_timer, bound_timer;
    ptree_t tree; /* captured when a kill starts, rescanned at KILL */
    utf8_dec_t dec;
    buf_t out;
    char *rbuf;
    int err; /* first internal error */
};

static unsigned clamp(unsigned v, unsigned lo, unsigned hi, unsigned dflt)
{
    if (v == 0)
        return dflt;
    return v < lo ? lo : v > hi ? hi : v;
}

int rein_pty_new(rein_pty_t **out)
{
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
    close(p->wake_fd);
    pthread_mutex_destroy(&p->mu);
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

static void finish(struct pty_run *r)
{
    r->done = true;
    loop_stop(r->loop);
}

/* Reads everything the master has now.  Sets eof on EIO (no writer left). */
static void read_master(struct pty_run *r)
{
    if (r->eof)
        return;
    for (;;) {
        ssize_t n = read(r->master, r->rbuf, PTY_READ_BUF);
        if (n > 0) {
            if (utf8_decode(&r->dec, r->rbuf, (size_t)n, &r->out) < 0 &&
                !r->err)
                r->err = -ENOMEM;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        /* EIO (all slave fds closed) or 0: the terminal is drained. */
        r->eof = true;
        loop_io_del(r->loop, r->master);
        break;
    }
    emit(r);
}

static void close_slave(struct pty_run *r)
{
    if (r->slave >= 0) {
        close(r->slave);
        r->slave = -1;
    }
}

static void reap(struct pty_run *r)
{
    if (r->reaped)
        return;
    int code = 0;
    if (spawn_reap(r->pid, r->pidfd, &code) == 0 && !r->exit_code)
        r->exit_code = code;
    r->reaped = true;
    close_slave(r);
}

static void on_drain_end(loop_t *l, uint64_t id, void *data);

/* Reaps, then drains until EIO or the window ends. */
static void start_drain(struct pty_run *r, uint64_t window_ms)
{
    reap(r);
    read_master(r);
    if (r->eof) {
        finish(r);
        return;
    }
    loop_timer_del(r->loop, r->drain_timer);
    loop_timer_add(r->loop, window_ms, on_drain_end, r, &r->drain_timer);
}

static void on_drain_end(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct pty_run *r = data;
    r->drain_timer = 0;
    read_master(r); /* the final drain: whatever is there now */
    finish(r);
}

/* Whether anything of the run is still alive (leader, tree or group). */
static bool anything_alive(struct pty_run *r)
{
    return !r->exited || ptree_count_alive(&r->tree) > 0 ||
           ptree_group_alive(r->pid);
}

static void on_kill_bound(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct pty_run *r = data;
    r->bound_timer = 0;
    /* The leader did not die even after KILL (uninterruptible sleep):
     * give up waiting; it stays a zombie-to-be that we cannot reap here. */
    r->reaped = true;
    close_slave(r);
    read_master(r);
    finish(r);
}

/* The end of the grace window: KILL what is left, then drain. */
static void on_kill_grace_end(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct pty_run *r = data;
    r->drain_timer = 0;
    ptree_t now;
    if (ptree_capture(r->pid, &now) == 0) {
        ptree_merge(&r->tree, &now);
        ptree_free(&now);
    }
    ptree_signal(&r->tree, SIGKILL);
    ptree_signal_group(r->pid, SIGKILL);
    r->killed = true;
    if (r->exited) {
        start_drain(r, 0);
        return;
    }
    loop_timer_add(l, PTY_KILL_BOUND_MS, on_kill_bound, r, &r->bound_timer);
}

static void begin_kill(struct pty_run *r, enum pty_end why)
{
    if (r->end != END_NONE)
        return; /* the first reason wins */
    r->end = why;
    if (ptree_capture(r->pid, &r->tree) < 0)
        r->tree.n = 0;
    ptree_signal_group(r->pid, SIGTERM);
    ptree_signal(&r->tree, SIGTERM);
    ptree_signal_group(r->pid, SIGCONT);
    ptree_signal(&r->tree, SIGCONT);
    loop_timer_add(r->loop, REIN_PTY_KILL_DRAIN_MS, on_kill_grace_end, r,
                   &r->drain_timer);
}

static void on_child(loop_t *l, pid_t pid, const siginfo_t *info, void *data)
{
    (void)l;
    (void)pid;
    struct pty_run *r = data;
    r->exited = true;
    r->exit_code = spawn_code_from_info(info);
    if (r->end == END_NONE) {
        r->end = END_EXIT;
        start_drain(r, REIN_PTY_EXIT_DRAIN_MS);
        return;
    }
    if (r->killed) {
        loop_timer_del(l, r->bound_timer);
        r->bound_timer = 0;
        start_drain(r, 0);
        return;
    }
    /* Exited within the grace window: finish early if nothing is left. */
    if (!anything_alive(r)) {
        loop_timer_del(l, r->drain_timer);
        r->drain_timer = 0;
        start_drain(r, REIN_PTY_KILL_DRAIN_MS);
    }
}

static void on_master(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    struct pty_run *r = data;
    read_master(r);
    if (r->eof && r->reaped)
        finish(r);
}

static void on_timeout(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    begin_kill(data, END_TIMEOUT);
}

static void on_cancel(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)ev;
    loop_io_del(l, fd); /* the token stays readable: watch it once */
    begin_kill(data, END_CANCEL);
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
        begin_kill(r, END_CANCEL);
}

/* Builds argv and env, spawns the child on the slave. */
static int run_spawn(struct pty_run *r, env_t *env)
{
    const rein_pty_start_opts_t *o = r->o;
    const char *shell = o->shell && *o->shell ? o->shell : PTY_DEFAULT_SHELL;
    const char *argv[] = {shell, shell_flag(shell), o->command, NULL};
    int rc = env_init(env, NULL);
    if (rc < 0)
        return rc;
    if ((rc = env_put_all(env, o->env)) < 0 ||
        (rc = env_default(env, "TERM", PTY_DEFAULT_TERM)) < 0)
        return rc;
    spawn_opts_t so;
    spawn_opts_init(&so);
    so.file = shell;
    so.argv = argv;
    so.envp = (const char *const *)env->v;
    so.cwd = o->cwd;
    so.fd_in = so.fd_out = so.fd_err = r->slave;
    so.ctty_fd = r->slave;
    so.group = SPAWN_SESSION;
    so.want_pidfd = loop_uses_pidfd(r->loop);
    return spawn_start(&so, &r->pid, &r->pidfd, NULL);
}

static int run_loop(struct pty_run *r)
{
    int rc;
    if ((rc = loop_io_add(r->loop, r->master, LOOP_READ, on_master, r)) < 0 ||
        (rc = loop_io_add(r->loop, r->p->wake_fd, LOOP_READ, on_wake, r)) <
            0 ||
        (rc = loop_child_add(r->loop, r->pid, r->pidfd, on_child, r)) < 0)
        return rc;
    if (r->o->cancel &&
        (rc = loop_io_add(r->loop, cancel_fd(r->o->cancel), LOOP_READ,
                          on_cancel, r)) < 0)
        return rc;
    if (r->o->timeout_ms &&
        (rc = loop_timer_add(r->loop, r->o->timeout_ms, on_timeout, r,
                             NULL)) < 0)
        return rc;
    /* A kill() that raced with set-up, or a token raised before start. */
    if (atomic_exchange(&r->p->kill_req, false) ||
        rein_cancel_triggered(r->o->cancel))
        begin_kill(r, END_CANCEL);
    while (!r->done) {
        rc = loop_run_once(r->loop, -1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int rein_pty_start(rein_pty_t *p, const rein_pty_start_opts_t *o,
                   rein_run_result_t *result)
{
    struct pty_run r;
    env_t env = {NULL, 0};
    int rc;

    if (!p || !o || !o->command || !result)
        return -EINVAL;
    memset(result, 0, sizeof *result);
    memset(&r, 0, sizeof r);
    r.p = p;
    r.o = o;
    r.master = r.slave = r.pidfd = -1;
    r.pid = -1;
    utf8_init(&r.dec);

    unsigned cols = clamp(o->cols, REIN_PTY_MIN_COLS, REIN_PTY_MAX_COLS,
                          REIN_PTY_DEFAULT_COLS);
    unsigned rows = clamp(o->rows, REIN_PTY_MIN_ROWS, REIN_PTY_MAX_ROWS,
                          REIN_PTY_DEFAULT_ROWS);
    pthread_mutex_lock(&p->mu);
    if (p->running) {
        pthread_mutex_unlock(&p->mu);
        return REIN_EPTY_RUNNING;
    }
    rc = ptyio_open(cols, rows, NULL, &r.master, &r.slave);
    if (rc == 0) {
        p->running = true;
        p->master = r.master;
        p->cols = cols;
        p->rows = rows;
    }
    pthread_mutex_unlock(&p->mu);
    if (rc < 0)
        return rc;

    r.rbuf = malloc(PTY_READ_BUF);
    if (!r.rbuf) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = loop_new(&r.loop)) < 0)
        goto out;
    if ((rc = run_spawn(&r, &env)) < 0)
        goto out;
    fcntl(r.master, F_SETFL, fcntl(r.master, F_GETFL) | O_NONBLOCK);
    rc = run_loop(&r);
    if (rc < 0 && !r.reaped) {
        /* The loop failed: never leave the child behind. */
        ptree_signal_group(r.pid, SIGKILL);
        reap(&r);
    }
    if (utf8_finish(&r.dec, &r.out) == 0)
        emit(&r);
    if (rc == 0 && r.err)
        rc = r.err;
    if (rc == 0) {
        result->cancelled = r.end == END_CANCEL;
        result->timed_out = r.end == END_TIMEOUT;
        result->has_exit_code = r.end == END_EXIT;
        result->exit_code = r.end == END_EXIT ? r.exit_code : 0;
    }

out:
    pthread_mutex_lock(&p->mu);
    p->running = false;
    p->master = -1;
    atomic_store(&p->kill_req, false);
    pthread_mutex_unlock(&p->mu);
    if (r.pidfd >= 0)
        close(r.pidfd);
    close_slave(&r);
    close(r.master);
    ptree_free(&r.tree);
    loop_free(r.loop);
    env_free(&env);
    buf_free(&r.out);
    free(r.rbuf);
    return rc;
}

/* ------------------------------------------------------------- controls */

int rein_pty_write(rein_pty_t *p, const void *data, size_t len)
{
    const char *s = data;
    size_t off = 0;
    int rc = 0;
    if (!p || (!data && len))
        return -EINVAL;
    pthread_mutex_lock(&p->mu);
    if (!p->running) {
        rc = REIN_EPTY_IDLE;
        goto out;
    }
    while (off < len) {
        ssize_t n = write(p->master, s + off, len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            /* The terminal's input queue is full: the child is not
             * reading.  Wait for room, but not forever. */
            struct pollfd pfd = {.fd = p->master, .events = POLLOUT};
            int k = poll(&pfd, 1, PTY_WRITE_TIMEOUT_MS);
            if (k == 0) {
                rc = -ETIMEDOUT;
                goto out;
            }
            if (k < 0 && errno != EINTR) {
                rc = -errno;
                goto out;
            }
            continue;
        }
        rc = n < 0 ? -errno : -EIO;
        goto out;
    }
out:
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int rein_pty_resize(rein_pty_t *p, unsigned cols, unsigned rows)
{
    int rc = 0;
    if (!p)
        return -EINVAL;
    cols = clamp(cols, REIN_PTY_MIN_COLS, REIN_PTY_MAX_COLS,
                 REIN_PTY_DEFAULT_COLS);
    rows = clamp(rows, REIN_PTY_MIN_ROWS, REIN_PTY_MAX_ROWS,
                 REIN_PTY_DEFAULT_ROWS);
    pthread_mutex_lock(&p->mu);
    if (!p->running) {
        rc = REIN_EPTY_IDLE;
    } else {
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
