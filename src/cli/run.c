/*
 * run.c — `rein run`: the CLI proxy.
 *
 * Runs one command in a PTY sized like the real terminal, so it behaves as
 * it would for a person (colours, progress bars, no pipe buffering), and
 * prints what the router says is the right view of its output:
 *
 *   condense     the squasher's condensed stream, hazards the moment their
 *                line is complete;
 *   passthrough, structured
 *                verbatim (the CLI has no budget), then an `exit` footer;
 *   narrate      verbatim output, then `narrate` markers from stat() before
 *                and after, then the footer;
 *   interactive  verbatim, with the real terminal switched to raw mode as
 *                soon as the child puts the PTY in raw mode;
 *   dangerous    nothing runs until the person says yes on /dev/tty; with no
 *                terminal to ask, or a policy `forbid`, nothing runs at all.
 *
 * The PTY is driven on rein's event loop the way term/pty.c drives its
 * sessions (reap, then drain the master to EIO), plus what a proxy needs:
 * stdin forwarded to the master, SIGWINCH resizing the PTY, SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT forwarded to the child's process group, and the real
 * terminal's mode following the PTY's (raw when the child goes raw; echo off
 * when the child turns echo off, so a password typed at a cooked prompt is
 * not shown).  While the real terminal stays cooked it echoes what the
 * person types, and the PTY echoes it into the output as well: that copy is
 * part of the output (and the log), as it would be on a plain terminal.
 *
 * Every byte is spooled to a log file in the state dir; the squasher names
 * it in a `log` marker whenever it dropped anything.
 *
 * Exit status: the command's (128+N for signal N); 125 when rein fails or
 * refuses (danger), 126/127 when the command cannot be executed / found.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/env.h"
#include "base/loop.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "base/spool.h"
#include "base/utf8.h"
#include "rein.h"
#include "squash/narrate.h"
#include "squash/router.h"
#include "squash/squash.h"
#include "term/ptyio.h"

/* Bytes asked for per read of the master or stdin. */
#define RUN_READ_BUF 65536
/* Stdin bytes held for a child that is not reading; past this, stdin is
 * not read until the child catches up. */
#define RUN_STDIN_PENDING_MAX (1024u * 1024u)
/* How often the PTY's mode is checked while the child is silent (a child
 * that goes raw and waits for a key prints nothing first). */
#define RUN_TERM_POLL_MS 50
/* How often the squasher is given the time (partial lines, silence). */
#define RUN_TICK_MS 100
/* The tail of the current output line kept to re-show a prompt when the
 * view switches to verbatim mid-line. */
#define RUN_LINE_TAIL_MAX 4096
/* Size of a PTY when neither stdin nor stdout is a terminal. */
#define RUN_DEFAULT_COLS 120
#define RUN_DEFAULT_ROWS 40
#define RUN_DEFAULT_TERM "xterm-256color"
/* The longest answer read from /dev/tty for the danger question. */
#define RUN_ANSWER_MAX 64

enum run_mode { MODE_CONDENSED, MODE_RAW, MODE_JSON, MODE_CONTEXT };
enum run_term { TERM_COOKED, TERM_NOECHO, TERM_RAW };

struct run {
    enum run_mode mode;
    char **cmd_argv; /* what is executed */
    char *cmdline;   /* what is shown and routed */
    bool shell;      /* cmd_argv is /bin/sh -c cmdline */
    router_result_t route;
    router_cat_t view; /* the category the output is shown as */
    narrate_t **narr;
    size_t nnarr;

    loop_t *loop;
    int master, slave;
    pid_t pid;
    int pidfd;
    bool exited, reaped, eof, done;
    int exit_code;
    uint64_t drain_timer, tick_timer, poll_timer;
    uint64_t start_ms, end_ms;

    /* terminal */
    bool in_tty, out_tty;
    struct termios saved;
    enum run_term term;
    bool went_raw;
    unsigned cols, rows;

    /* stdin */
    bool in_watched, in_eof, in_file;
    buf_t pending_in;
    bool last_in_nl;

    /* output */
    bool verbatim; /* bytes go straight to stdout */
    bool sq_muted; /* the squasher's output is no longer shown */
    bool out_broken;
    bool out_nl; /* the last byte written ended a line */
    squash_t *sq;
    spool_t *spool;
    char log_path[PATH_MAX];
    buf_t collected; /* --json: the output field */
    buf_t line_tail;
    utf8_dec_t dec;
    buf_t decoded;
    uint64_t raw_bytes, raw_lines;
    char *rbuf;
    const char *decision; /* the danger decision, for --json; or NULL */
    int err;
};

/* ------------------------------------------------------------ output */

static void run_write_fd(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN) {
            /* stdout shared with a non-blocking reader: wait for room. */
            fd_set w;
            FD_ZERO(&w);
            FD_SET(fd, &w);
            select(fd + 1, NULL, &w, NULL, NULL);
            continue;
        }
        return; /* EPIPE and the like: the reader is gone */
    }
}

/* Everything the person sees goes through here (or into --json). */
static void run_out(struct run *r, const char *p, size_t n)
{
    if (!n)
        return;
    r->out_nl = p[n - 1] == '\n';
    if (r->mode == MODE_JSON) {
        if (buf_append(&r->collected, p, n) < 0 && !r->err)
            r->err = -ENOMEM;
        return;
    }
    if (!r->out_broken)
        run_write_fd(STDOUT_FILENO, p, n);
}

static void run_emit(const char *text, size_t len, void *data)
{
    struct run *r = data;
    if (!r->sq_muted)
        run_out(r, text, len);
}

/* ------------------------------------------------------------ terminal */

static void run_term_apply(struct run *r, enum run_term want)
{
    struct termios t = r->saved;
    if (want == TERM_RAW)
        cfmakeraw(&t); /* ^C and ^Z reach the PTY as bytes: its rules */
    else if (want == TERM_NOECHO)
        t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    tcsetattr(STDIN_FILENO, TCSADRAIN, &t);
    r->term = want;
}

static void run_term_restore(struct run *r)
{
    if (r->in_tty && r->term != TERM_COOKED)
        run_term_apply(r, TERM_COOKED);
}

/* Switches the view to verbatim (the child became interactive). */
static void run_go_verbatim(struct run *r)
{
    if (r->verbatim)
        return;
    r->verbatim = true;
    r->sq_muted = true;
    r->view = ROUTER_INTERACTIVE;
    /* Show the start of the line the child is on (its prompt), which
     * the squasher was still holding. */
    run_out(r, r->line_tail.p, r->line_tail.len);
}

/* Makes the real terminal follow the PTY's mode (see the top of file). */
static void run_term_sync(struct run *r)
{
    struct termios t;
    if (!r->in_tty || r->mode == MODE_JSON || r->slave < 0 ||
        tcgetattr(r->slave, &t) < 0)
        return;
    enum run_term want = !(t.c_lflag & ICANON) ? TERM_RAW
                         : !(t.c_lflag & ECHO) ? TERM_NOECHO
                                               : TERM_COOKED;
    if (want == TERM_RAW && r->out_tty) {
        r->went_raw = true;
        run_go_verbatim(r);
    }
    if (want != r->term)
        run_term_apply(r, want);
}

/* Reads the real terminal's size; false when neither end is a terminal. */
static bool run_term_size(unsigned *cols, unsigned *rows)
{
    struct winsize ws;
    if ((ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ||
         ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) &&
        ws.ws_col && ws.ws_row) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
        return true;
    }
    return false;
}

/* Resizes the PTY when the real terminal's size changed. */
static void run_sync_size(struct run *r)
{
    unsigned c, w;
    if (r->master < 0 || !run_term_size(&c, &w) ||
        (c == r->cols && w == r->rows))
        return;
    if (ptyio_resize(r->master, c, w) == 0) {
        r->cols = c;
        r->rows = w;
    }
}

/* ------------------------------------------------------------- the run */

static void run_finish(struct run *r)
{
    r->done = true;
    loop_stop(r->loop);
}

/* Feeds one chunk of the child's output to the log and the view. */
static void run_output(struct run *r, const char *p, size_t n)
{
    if (r->spool)
        spool_write(r->spool, p, n);
    r->raw_bytes += n;
    const char *nl = memrchr(p, '\n', n);
    for (const char *q = p; (q = memchr(q, '\n', (size_t)(p + n - q))); q++)
        r->raw_lines++;
    /* The current line's tail, for run_go_verbatim. */
    if (nl) {
        buf_reset(&r->line_tail);
        buf_append(&r->line_tail, nl + 1, (size_t)(p + n - nl - 1));
    } else if (r->line_tail.len + n <= RUN_LINE_TAIL_MAX) {
        buf_append(&r->line_tail, p, n);
    }
    if (r->verbatim || r->mode == MODE_RAW) {
        if (r->mode == MODE_JSON) {
            buf_reset(&r->decoded);
            utf8_decode(&r->dec, p, n, &r->decoded);
            run_out(r, r->decoded.p, r->decoded.len);
        } else {
            run_out(r, p, n);
        }
    }
    /* The squasher sees everything, muted in a verbatim view, so its
     * counts (hazards, errors) are there for --json whatever the view. */
    if (squash_feed(r->sq, p, n, loop_clock_ms()) < 0 && !r->err)
        r->err = -ENOMEM;
}

static void run_read_master(struct run *r)
{
    if (r->eof)
        return;
    /* The mode first: a child switches it before it writes, so output
     * seen now is already output of the new mode. */
    run_term_sync(r);
    for (;;) {
        ssize_t n = read(r->master, r->rbuf, RUN_READ_BUF);
        if (n > 0) {
            run_output(r, r->rbuf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        r->eof = true; /* EIO: every slave fd is closed */
        loop_io_del(r->loop, r->master);
        break;
    }
    run_term_sync(r);
}

static void run_reap(struct run *r)
{
    if (r->reaped)
        return;
    int code = 0;
    if (spawn_reap(r->pid, r->pidfd, &code) == 0 && !r->exit_code)
        r->exit_code = code;
    r->reaped = true;
    /* Our slave stays open until the reap: closing the last slave fd
     * first would hang up the terminal under a clean exit. */
    if (r->slave >= 0) {
        close(r->slave);
        r->slave = -1;
    }
}

static void run_on_drain_end(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct run *r = data;
    r->drain_timer = 0;
    run_read_master(r);
    run_finish(r);
}

static void run_on_child(loop_t *l, pid_t pid, const siginfo_t *info,
                         void *data)
{
    (void)pid;
    struct run *r = data;
    r->exited = true;
    r->exit_code = spawn_code_from_info(info);
    r->end_ms = loop_clock_ms();
    run_reap(r);
    run_read_master(r);
    if (r->eof) {
        run_finish(r);
        return;
    }
    /* A background job may still hold the terminal: drain, but bounded. */
    loop_timer_add(l, REIN_PTY_EXIT_DRAIN_MS, run_on_drain_end, r,
                   &r->drain_timer);
}

/* Writes what stdin gave us to the master, as far as it takes it. */
static void run_flush_in(struct run *r)
{
    while (r->pending_in.len) {
        ssize_t n = write(r->master, r->pending_in.p, r->pending_in.len);
        if (n > 0) {
            buf_consume(&r->pending_in, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            loop_io_mod(r->loop, r->master, LOOP_READ | LOOP_WRITE);
            return;
        }
        buf_reset(&r->pending_in); /* the terminal is gone */
        break;
    }
    if (!r->eof)
        loop_io_mod(r->loop, r->master, LOOP_READ);
}

static void run_on_stdin(loop_t *l, int fd, unsigned ev, void *data);

/* Adds the EOF character for the child: one to end a line read, two when
 * the last line had no newline (the first only delivers the line). */
static void run_send_eof(struct run *r)
{
    struct termios t;
    unsigned char eof = 4; /* ^D */
    if (r->slave >= 0 && tcgetattr(r->slave, &t) == 0 &&
        t.c_cc[VEOF] != _POSIX_VDISABLE)
        eof = t.c_cc[VEOF];
    if (!r->last_in_nl)
        buf_append_byte(&r->pending_in, eof);
    buf_append_byte(&r->pending_in, eof);
    r->last_in_nl = true;
}

static void run_stdin_watch(struct run *r, bool on)
{
    if (on == r->in_watched || r->in_eof || r->in_file)
        return;
    if (on)
        loop_io_add(r->loop, STDIN_FILENO, LOOP_READ, run_on_stdin, r);
    else
        loop_io_del(r->loop, STDIN_FILENO);
    r->in_watched = on;
}

/* Reads a chunk of stdin into pending_in; false at EOF or error. */
static bool run_read_stdin(struct run *r)
{
    ssize_t n = read(STDIN_FILENO, r->rbuf, RUN_READ_BUF);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0) {
        run_send_eof(r);
        if (!r->in_tty) {
            /* A pipe or file ends for good; a terminal's ^D does not. */
            run_stdin_watch(r, false);
            r->in_eof = true;
        }
        return false;
    }
    buf_append(&r->pending_in, r->rbuf, (size_t)n);
    r->last_in_nl = r->rbuf[n - 1] == '\n' || r->rbuf[n - 1] == '\r';
    return true;
}

static void run_on_stdin(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    struct run *r = data;
    /* A resize that came before this input must reach the PTY before it:
     * the child may ask for its size in reply. */
    run_sync_size(r);
    run_term_sync(r);
    run_read_stdin(r);
    run_flush_in(r);
    if (r->pending_in.len >= RUN_STDIN_PENDING_MAX)
        run_stdin_watch(r, false);
}

/* stdin is a regular file (epoll refuses those): read it as the child
 * takes it. */
static void run_pump_file(struct run *r)
{
    while (r->in_file && !r->in_eof && r->pending_in.len == 0) {
        if (!run_read_stdin(r))
            r->in_eof = true;
        run_flush_in(r);
    }
}

static void run_on_master(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    struct run *r = data;
    if (ev & LOOP_WRITE) {
        run_flush_in(r);
        if (r->pending_in.len < RUN_STDIN_PENDING_MAX)
            run_stdin_watch(r, true);
        run_pump_file(r);
    }
    if (ev & (LOOP_READ | LOOP_HUP))
        run_read_master(r);
    if (r->eof && r->reaped)
        run_finish(r);
}

static void run_on_signal(loop_t *l, int signo, void *data)
{
    (void)l;
    struct run *r = data;
    if (signo == SIGWINCH) {
        run_sync_size(r);
        return;
    }
    /* The child has its own session: a signal meant for the job (Ctrl-C
     * at a cooked terminal, kill from outside) is passed on to its group. */
    if (!r->exited)
        ptree_signal_group(r->pid, signo);
}

static void run_on_tick(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    squash_tick(r->sq, loop_clock_ms());
    loop_timer_add(l, RUN_TICK_MS, run_on_tick, r, &r->tick_timer);
}

static void run_on_poll(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    run_term_sync(r);
    loop_timer_add(l, RUN_TERM_POLL_MS, run_on_poll, r, &r->poll_timer);
}

/* ------------------------------------------------------------- set-up */

/* The state dir's logs/ (created 0700) and a fresh 0600 log in it. */
static int run_open_log(struct run *r)
{
    char dir[PATH_MAX];
    const char *e;
    int n;
    if ((e = getenv("REIN_STATE_DIR")) && *e)
        n = snprintf(dir, sizeof dir, "%s/logs", e);
    else if ((e = getenv("XDG_STATE_HOME")) && *e == '/')
        n = snprintf(dir, sizeof dir, "%s/rein/logs", e);
    else if ((e = getenv("HOME")) && *e)
        n = snprintf(dir, sizeof dir, "%s/.local/state/rein/logs", e);
    else
        return -ENOENT;
    if (n < 0 || (size_t)n >= sizeof dir)
        return -ENAMETOOLONG;
    int rc = spool_mkdir_private(dir);
    if (rc < 0)
        return rc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    for (unsigned attempt = 0;; attempt++) {
        n = snprintf(r->log_path, sizeof r->log_path,
                     "%s/run-%04d%02d%02d-%02d%02d%02d-%ld-%u.log", dir,
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, (long)getpid(), attempt);
        if (n < 0 || (size_t)n >= sizeof r->log_path)
            return -ENAMETOOLONG;
        rc = spool_open(r->log_path, 0, &r->spool);
        if (rc != -EEXIST || attempt > 16)
            return rc;
    }
}

/* True when a lone argument needs a shell to mean what it says. */
static bool run_has_shell_syntax(const char *s)
{
    return strpbrk(s, " \t\n|&;<>()$`\\\"'*?[]{}~#") != NULL;
}

/* A shell-quoted rendering of argv, for display and routing records. */
static char *run_join_argv(char *const *argv)
{
    buf_t b = BUF_INIT;
    for (size_t i = 0; argv[i]; i++) {
        const char *a = argv[i];
        if (i)
            buf_append_byte(&b, ' ');
        if (*a && !run_has_shell_syntax(a)) {
            buf_append_str(&b, a);
            continue;
        }
        buf_append_byte(&b, '\'');
        for (; *a; a++) {
            if (*a == '\'')
                buf_append_str(&b, "'\\''");
            else
                buf_append_byte(&b, (unsigned char)*a);
        }
        buf_append_byte(&b, '\'');
    }
    return buf_detach(&b);
}

/* Asks the person on /dev/tty.  1 yes, 0 no, -errno when there is no
 * terminal to ask. */
static int run_ask(const char *question)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    run_write_fd(fd, question, strlen(question));
    char ans[RUN_ANSWER_MAX];
    size_t n = 0;
    while (n + 1 < sizeof ans) {
        ssize_t k = read(fd, ans + n, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || ans[n] == '\n' || ans[n] == '\r')
            break;
        n++;
    }
    close(fd);
    ans[n] = '\0';
    return !strcasecmp(ans, "y") || !strcasecmp(ans, "yes");
}

/* The danger decision.  0: go on; CLI_EXIT_FAILURE: do not run. */
static int run_danger(struct run *r)
{
    const router_result_t *rt = &r->route;
    char head[1024];
    snprintf(head, sizeof head, "[rein] danger %s (pattern: %s)",
             r->cmdline, rt->danger_id ? rt->danger_id : "?");
    if (rt->danger == ROUTER_DANGER_FORBID) {
        r->decision = "forbidden by policy, not run";
        fprintf(stderr, "%s — %s\n", head, r->decision);
        return CLI_EXIT_FAILURE;
    }
    char q[1400];
    snprintf(q, sizeof q, "%s — %s\nrun it? [y/N] ", head,
             rt->danger_what ? rt->danger_what : "dangerous");
    int yes = run_ask(q);
    r->decision = yes < 0 ? "not run (no terminal to ask)"
                  : yes   ? "confirmed, running"
                          : "not run";
    fprintf(stderr, "%s — %s\n", head, r->decision);
    return yes > 0 ? 0 : CLI_EXIT_FAILURE;
}

/* Narrate plans for every segment, before anything runs. */
static int run_narrate_begin(struct run *r)
{
    r->narr = calloc(r->route.nsegs ? r->route.nsegs : 1, sizeof *r->narr);
    if (!r->narr)
        return -ENOMEM;
    for (size_t i = 0; i < r->route.nsegs; i++) {
        router_seg_t *s = &r->route.segs[i];
        size_t k = router_command_at(s->argv, s->argc);
        int rc = narrate_begin((const char *const *)s->argv + k, s->argc - k,
                               &r->narr[i]);
        if (rc < 0)
            return rc;
        r->nnarr++;
    }
    return 0;
}

static int run_build_env(struct run *r, env_t *env)
{
    int rc = env_init(env, NULL);
    if (rc < 0)
        return rc;
    if ((rc = env_default(env, "TERM", RUN_DEFAULT_TERM)) < 0)
        return rc;
    /* A pager would wait for keys nobody sees in a condensed view. */
    if (r->view != ROUTER_INTERACTIVE &&
        ((rc = env_put(env, "PAGER=cat")) < 0 ||
         (rc = env_put(env, "GIT_PAGER=cat")) < 0 ||
         (rc = env_put(env, "SYSTEMD_PAGER=cat")) < 0))
        return rc;
    return 0;
}

/* Opens the PTY like the real terminal and starts the child on it.
 * Returns 0, or an exit status for a command that could not start. */
static int run_spawn(struct run *r)
{
    struct termios tio, *tp = NULL;
    env_t env = {NULL, 0};
    int rc;
    if (!run_term_size(&r->cols, &r->rows)) {
        r->cols = RUN_DEFAULT_COLS;
        r->rows = RUN_DEFAULT_ROWS;
    }
    if (r->in_tty && tcgetattr(STDIN_FILENO, &r->saved) == 0) {
        tio = r->saved;
        tp = &tio;
    }
    if ((rc = ptyio_open(r->cols, r->rows, tp, &r->master, &r->slave)) < 0)
        goto fail;
    if ((!tp || !r->out_tty) && tcgetattr(r->slave, &tio) == 0) {
        /* No person typing: the PTY's echo would only duplicate piped
         * input in the output.  No terminal reading: CR LF line ends
         * would be a PTY artefact in a file or pipe. */
        if (!tp)
            tio.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
        if (!r->out_tty)
            tio.c_oflag &= ~(tcflag_t)ONLCR;
        tcsetattr(r->slave, TCSANOW, &tio);
    }
    if ((rc = run_build_env(r, &env)) < 0)
        goto fail;
    spawn_opts_t so;
    spawn_opts_init(&so);
    so.file = r->cmd_argv[0];
    so.argv = (const char *const *)r->cmd_argv;
    so.envp = (const char *const *)env.v;
    so.fd_in = so.fd_out = so.fd_err = r->slave;
    so.ctty_fd = r->slave;
    so.group = SPAWN_SESSION;
    so.want_pidfd = loop_uses_pidfd(r->loop);
    spawn_step_t step = SPAWN_STEP_NONE;
    r->start_ms = loop_clock_ms();
    rc = spawn_start(&so, &r->pid, &r->pidfd, &step);
    env_free(&env);
    if (rc < 0) {
        fprintf(stderr, "rein: %s: %s\n", r->cmd_argv[0],
                rc == -ENOENT ? "command not found" : rein_strerror(rc));
        return rc == -ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
    }
    fcntl(r->master, F_SETFL, fcntl(r->master, F_GETFL) | O_NONBLOCK);
    return 0;
fail:
    env_free(&env);
    fprintf(stderr, "rein: cannot open a terminal: %s\n", rein_strerror(rc));
    return CLI_EXIT_FAILURE;
}

static int run_loop(struct run *r)
{
    static const int sigs[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    int rc;
    if ((rc = loop_io_add(r->loop, r->master, LOOP_READ, run_on_master, r)) <
            0 ||
        (rc = loop_child_add(r->loop, r->pid, r->pidfd, run_on_child, r)) <
            0)
        return rc;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if ((rc = loop_signal_add(r->loop, sigs[i], run_on_signal, r)) < 0)
            return rc;
    rc = loop_io_add(r->loop, STDIN_FILENO, LOOP_READ, run_on_stdin, r);
    if (rc == -EPERM) {
        r->in_file = true; /* a regular file or /dev/null */
        run_pump_file(r);
    } else if (rc < 0) {
        r->in_eof = true; /* stdin closed: nothing to forward */
    } else {
        r->in_watched = true;
    }
    loop_timer_add(r->loop, RUN_TICK_MS, run_on_tick, r, &r->tick_timer);
    if (r->in_tty && r->mode != MODE_JSON)
        loop_timer_add(r->loop, RUN_TERM_POLL_MS, run_on_poll, r,
                       &r->poll_timer);
    while (!r->done) {
        rc = loop_run_once(r->loop, -1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ results */

static void run_footer(struct run *r, buf_t *b)
{
    uint64_t ms = r->end_ms - r->start_ms;
    if (r->exit_code > 128 && r->exit_code < 128 + NSIG)
        buf_printf(b, "[rein] signal SIG%s · exit %d · %.2fs · %llu lines\n",
                   sigabbrev_np(r->exit_code - 128)
                       ? sigabbrev_np(r->exit_code - 128)
                       : "?",
                   r->exit_code, (double)ms / 1000.0,
                   (unsigned long long)r->raw_lines);
    else
        buf_printf(b, "[rein] exit %d · %.2fs · %llu lines\n", r->exit_code,
                   (double)ms / 1000.0, (unsigned long long)r->raw_lines);
}

/* Everything after the child is gone: narrate markers, the summary. */
static void run_summary(struct run *r)
{
    buf_t b = BUF_INIT;
    if (!r->end_ms)
        r->end_ms = loop_clock_ms();
    uint64_t ms = r->end_ms - r->start_ms;
    if (r->mode == MODE_RAW) {
        buf_free(&b);
        return;
    }
    if (r->verbatim) {
        if (r->mode == MODE_JSON)
            utf8_finish(&r->dec, &r->collected);
        if (r->raw_bytes && !r->out_nl)
            buf_append_byte(&b, '\n');
        for (size_t i = 0; i < r->nnarr; i++)
            narrate_end(r->narr[i], &b);
        run_footer(r, &b);
        run_out(r, b.p, b.len);
    }
    squash_finish(r->sq, r->exit_code, ms, loop_clock_ms());
    buf_free(&b);
}

static void run_json(struct run *r, char **argv)
{
    sq_stats_t st = {0};
    if (r->sq)
        squash_stats(r->sq, &st);
    json_t *o = json_object(), *av = json_array(), *segs = json_array();
    for (size_t i = 0; argv[i]; i++)
        json_array_append_new(av, json_string(argv[i]));
    for (size_t i = 0; i < r->route.nsegs; i++) {
        router_seg_t *s = &r->route.segs[i];
        static const char *const ops[] = {"", "&&", "||", ";", "&"};
        json_array_append_new(
            segs, json_pack("{s:s, s:s, s:s, s:s?}", "text", s->text, "op",
                            ops[s->op], "category",
                            router_cat_name(s->category), "danger",
                            s->danger_id));
    }
    uint64_t ms = r->end_ms - r->start_ms;
    int sig = r->exit_code > 128 && r->exit_code < 128 + NSIG
                  ? r->exit_code - 128
                  : 0;
    json_object_set_new(o, "command", json_string(r->cmdline));
    json_object_set_new(o, "argv", av);
    json_object_set_new(o, "shell", json_boolean(r->shell));
    json_object_set_new(o, "category",
                        json_string(router_cat_name(r->route.category)));
    json_object_set_new(o, "view", json_string(router_cat_name(r->view)));
    json_object_set_new(o, "segments", segs);
    json_object_set_new(o, "exit_code", json_integer(r->exit_code));
    json_object_set_new(o, "signal",
                        sig && sigabbrev_np(sig) ? json_string(sigabbrev_np(sig))
                                                 : json_null());
    json_object_set_new(o, "duration_ms", json_integer((json_int_t)ms));
    json_object_set_new(o, "lines", json_integer((json_int_t)r->raw_lines));
    json_object_set_new(o, "bytes", json_integer((json_int_t)r->raw_bytes));
    json_object_set_new(o, "hazards", json_integer((json_int_t)st.hazards));
    json_object_set_new(o, "errors", json_integer((json_int_t)st.errors));
    json_object_set_new(o, "warnings", json_integer((json_int_t)st.warnings));
    json_object_set_new(o, "omitted", json_integer((json_int_t)st.omitted));
    json_object_set_new(o, "interactive", json_boolean(r->went_raw));
    json_object_set_new(o, "output",
                        json_stringn(r->collected.p ? r->collected.p : "",
                                     r->collected.len));
    json_object_set_new(o, "log", r->log_path[0] ? json_string(r->log_path)
                                                 : json_null());
    json_object_set_new(o, "ran", json_boolean(r->pid > 0));
    json_object_set_new(
        o, "danger",
        r->route.danger == ROUTER_SAFE
            ? json_null()
            : json_pack("{s:s?, s:s?, s:s?}", "pattern", r->route.danger_id,
                        "what", r->route.danger_what, "decision",
                        r->decision));
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (s) {
        run_write_fd(STDOUT_FILENO, s, strlen(s));
        run_write_fd(STDOUT_FILENO, "\n", 1);
        free(s);
    }
    json_decref(o);
}

/* ------------------------------------------------------------ the verb */

static void run_usage(FILE *f)
{
    fprintf(f, "usage: rein run [--raw|--json|--context] [--] CMD [ARGS...]\n"
               "       rein CMD [ARGS...]   (when CMD is not a rein verb)\n");
}

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->nnarr; i++)
        narrate_free(r->narr[i]);
    free(r->narr);
    router_result_free(&r->route);
    squash_free(r->sq);
    spool_close(r->spool);
    if (r->pidfd >= 0)
        close(r->pidfd);
    if (r->slave >= 0)
        close(r->slave);
    if (r->master >= 0)
        close(r->master);
    loop_free(r->loop);
    buf_free(&r->pending_in);
    buf_free(&r->collected);
    buf_free(&r->line_tail);
    buf_free(&r->decoded);
    free(r->rbuf);
    free(r->cmdline);
    if (r->shell)
        free(r->cmd_argv);
}

int cli_run(int argc, char **argv, bool shorthand)
{
    struct run r;
    router_t *router = NULL;
    int i = shorthand ? 0 : 1, rc, status = CLI_EXIT_FAILURE;
    char err[1024], policy[PATH_MAX];

    memset(&r, 0, sizeof r);
    r.master = r.slave = r.pidfd = -1;
    r.pid = -1;
    r.out_nl = true;
    r.last_in_nl = true;
    utf8_init(&r.dec);
    for (; !shorthand && i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--raw"))
            r.mode = MODE_RAW;
        else if (!strcmp(argv[i], "--json"))
            r.mode = MODE_JSON;
        else if (!strcmp(argv[i], "--context"))
            r.mode = MODE_CONTEXT;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            run_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "rein run: unknown option '%s'\n", argv[i]);
            run_usage(stderr);
            return CLI_EXIT_USAGE;
        } else
            break;
    }
    if (i >= argc) {
        run_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    char **cmd = argv + i;
    int ncmd = argc - i;
    signal(SIGPIPE, SIG_IGN);

    /* A lone argument with shell syntax means what a shell makes of it. */
    if (ncmd == 1 && run_has_shell_syntax(cmd[0])) {
        r.shell = true;
        r.cmd_argv = calloc(4, sizeof *r.cmd_argv);
        r.cmdline = strdup(cmd[0]);
        if (!r.cmd_argv || !r.cmdline)
            goto nomem;
        r.cmd_argv[0] = (char *)"/bin/sh";
        r.cmd_argv[1] = (char *)"-c";
        r.cmd_argv[2] = r.cmdline;
    } else {
        r.cmd_argv = cmd;
        if (!(r.cmdline = run_join_argv(cmd)))
            goto nomem;
    }

    /* Route, with the person's policy file. */
    rc = router_policy_path(policy, sizeof policy);
    rc = router_new(rc == 0 ? policy : NULL, &router, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "rein: policy: %s\n",
                err[0] ? err : rein_strerror(rc));
        goto out;
    }
    rc = r.shell ? router_classify(router, r.cmdline, &r.route)
                 : router_classify_argv(router, (const char *const *)cmd,
                                        &r.route);
    router_free(router);
    if (rc < 0)
        goto nomem;
    r.view = r.route.category;
    if (r.view == ROUTER_DANGEROUS) {
        if ((status = run_danger(&r)) != 0) {
            r.exit_code = status;
            if (r.mode == MODE_JSON)
                run_json(&r, cmd); /* one object, even for nothing run */
            goto out;
        }
        r.view = ROUTER_CONDENSE;
    }
    status = CLI_EXIT_FAILURE;
    r.in_tty = isatty(STDIN_FILENO);
    r.out_tty = isatty(STDOUT_FILENO);
    r.verbatim = r.mode == MODE_RAW || (r.mode != MODE_CONTEXT &&
                                        (r.view == ROUTER_PASSTHROUGH ||
                                         r.view == ROUTER_STRUCTURED ||
                                         r.view == ROUTER_NARRATE ||
                                         r.view == ROUTER_INTERACTIVE));
    if ((rc = run_open_log(&r)) < 0) {
        fprintf(stderr, "rein: cannot create a log in the state dir: %s\n",
                rein_strerror(rc));
        goto out;
    }
    sq_opts_t so = {.command = r.cmdline, .log_path = r.log_path};
    if (!(r.rbuf = malloc(RUN_READ_BUF)) ||
        squash_new(&so, run_emit, &r, &r.sq) < 0)
        goto nomem;
    r.sq_muted = r.verbatim;
    if (r.view == ROUTER_NARRATE && run_narrate_begin(&r) < 0)
        goto nomem;
    if ((rc = loop_new(&r.loop)) < 0) {
        fprintf(stderr, "rein: event loop: %s\n", rein_strerror(rc));
        goto out;
    }
    if (r.mode == MODE_CONTEXT) {
        char *h = NULL;
        if (asprintf(&h, "$ %s\n", r.cmdline) > 0) {
            run_out(&r, h, strlen(h));
            free(h);
        }
    }
    if ((status = run_spawn(&r)) != 0) {
        /* Nothing ran: an empty log would only be litter. */
        spool_close(r.spool);
        r.spool = NULL;
        unlink(r.log_path);
        goto out;
    }
    rc = run_loop(&r);
    run_term_restore(&r);
    if (rc < 0) {
        /* Never leave the child behind. */
        ptree_signal_group(r.pid, SIGKILL);
        run_reap(&r);
        fprintf(stderr, "rein: event loop: %s\n", rein_strerror(rc));
        status = CLI_EXIT_FAILURE;
        goto out;
    }
    run_summary(&r);
    if (r.mode == MODE_JSON)
        run_json(&r, cmd);
    status = r.exit_code;
    goto out;
nomem:
    fprintf(stderr, "rein: out of memory\n");
    status = CLI_EXIT_FAILURE;
out:
    run_term_restore(&r);
    run_free(&r);
    return status;
}
