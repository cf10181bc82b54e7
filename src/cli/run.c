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
 * The command is a tty run of a persistent supervisor (rein.h: rein_sup_*)
 * on the default state dir, so it has the lifecycle, ownership and cleanup
 * of every other run: it is in the registry (`rein ps --all`, `rein logs
 * ID`), every byte is spooled to the supervisor's logs/<id>.log (named in
 * the squasher's `log` marker whenever it dropped anything), whatever the
 * command leaves behind in its boundary is ended when it exits, and if rein
 * itself is SIGKILLed its watchman (watchman.c), started before the
 * supervisor, reconciles the state dir at once, ending the orphaned
 * command and all it started; were the watchman gone too, the next `rein
 * reconcile` (or the next supervisor to open the state dir) would.
 *
 * This file adds what a proxy needs, on the supervisor's own loop: what a
 * person types at the terminal on stdin forwarded (rein_sup_write), a
 * file or pipe on stdin passed to the command as its own (below),
 * SIGWINCH resizing the PTY, SIGINT, SIGTERM, SIGHUP and SIGQUIT forwarded
 * to the job in the PTY's foreground (a SIGTERM the command has not obeyed
 * within REIN_SUP_GRACE_MS ends the whole run: rein was told to stop),
 * SIGTSTP suspending that job with rein (run_suspend), and
 * the real terminal's mode
 * following the PTY's (raw when the child goes raw; echo off when the child
 * turns echo off, so a password typed at a cooked prompt is not shown).
 * While the real terminal stays cooked it echoes what the person types, and
 * the PTY echoes it into the output as well: that copy is part of the
 * output (and the log), as it would be on a plain terminal.  When stdin
 * and stdout are not both terminals (or with --json), no real terminal
 * can answer the queries the command asks its terminal (the cursor
 * position IPython waits for, the device attributes): rein answers them
 * (term/answer.h).
 *
 * A stdin that is not a terminal (a file, a pipe, /dev/null) is the
 * command's own stdin, exactly as without rein: its bytes are not
 * rewritten by a line discipline (CR to NL, lines cut at 4095 bytes, ^C
 * ^Z ^\ ^U ^W ^D and DEL taken as keys), it ends when it ends, and the
 * command sees a file where it would see one.  Its terminal, the PTY,
 * then has no input at all, and neither has it when there is no stdin or
 * rein runs in the background of a job-control shell: the terminal's
 * input is over for good.  A PTY has no end of input of its own, so rein
 * answers for it whatever reads it (a program that opens /dev/tty for a
 * password or a key: ssh, git's credential prompt, less; the
 * "awaiting input" facts of exec/awaiting.h, looked at on a timer that
 * backs off from RUN_INPUT_CHECK_MIN_MS to RUN_INPUT_CHECK_MAX_MS):
 *
 *   - cooked (ICANON): whenever the terminal's foreground blocks reading
 *     it and nothing is queued there, one EOF character (VEOF), so that
 *     read returns 0: every read, not only the first (`read a; read b`,
 *     `cat; cat`, getpass).  Never ahead of a read: a queued EOF would
 *     reach a later raw-mode reader as a NUL byte;
 *   - raw: no EOF exists that a program understands.  A wait for keys
 *     that only the terminal can end is hung up like a terminal that went
 *     away — SIGHUP to the foreground group — after RUN_NO_INPUT_HANGUP_MS
 *     (RUN_NO_INPUT_HANGUP_TIMED_MS when the wait has a timeout, so a
 *     query of the terminal that gives up by itself is left alone), and if
 *     the same group waits so again, the run is cancelled (TERM, the
 *     supervisor's grace, KILL).  Each is a `hangup` marker.  A wait that
 *     also watches something else (ssh's socket) is never hung up; an
 *     event loop's own wake-ups (node's eventfd and self-pipe, its
 *     sleeping threads) are not something else (exec/awaiting.c).
 *
 * No state dir, no run: when the state dir cannot hold the registry and the
 * log, rein refuses (125, one line naming the dir) instead of falling back
 * to an ephemeral supervisor.  The condensed view drops lines on the promise
 * that the log keeps them, and a run missing from the registry could not be
 * reconciled after rein's own death, nor found by `rein ps` or `rein logs`;
 * a proxy that silently lost those would be worse than one that says so.
 * The way out is one variable (REIN_STATE_DIR).
 *
 * Exit status: the command's (128+N for signal N); 125 when rein fails or
 * refuses (danger, no state dir), 126/127 when the command cannot be
 * executed / found.
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
#include "base/loop.h"
#include "base/utf8.h"
#include "cli/watchman.h"
#include "exec/awaiting.h"
#include "exec/retention.h"
#include "rein.h"
#include "squash/emit.h"
#include "squash/narrate.h"
#include "squash/router.h"
#include "squash/squash.h"
#include "supervise/sup.h"
#include "term/answer.h"
#include "term/ptyio.h"

/* Bytes asked for per read of stdin. */
#define RUN_READ_BUF 65536
/* Bytes typed at the terminal (a paste) that the supervisor may hold for
 * a child that is not reading; past this, the terminal is not read until
 * the child catches up. */
#define RUN_STDIN_PENDING_MAX (1024u * 1024u)
/* How often the person's terminal is looked at: the PTY's mode, while
 * the child is silent (a child that goes raw and waits for a key prints
 * nothing first), and whether rein is in the terminal's foreground (a
 * shell's `fg` of a job running in its background sends it no signal). */
#define RUN_TERM_POLL_MS 50
/* How often the squasher is given the time (partial lines, silence). */
#define RUN_TICK_MS 100
/* The tail of the current output line kept to re-show a prompt when the
 * view switches to verbatim mid-line. */
#define RUN_LINE_TAIL_MAX 4096
/* The condensed view on a person's terminal shows a status line,
 * `[rein] running · 1m05s · 1400 lines`, rewritten in place and erased
 * before anything else is written, so that a quiet minute is not taken
 * for a hang: from RUN_STATUS_AFTER_MS into the run, at most every
 * RUN_STATUS_EVERY_MS, cut to one column less than the terminal's width
 * (a full row would leave the cursor where a carriage return no longer
 * erases it), and not at all on a terminal narrower than
 * RUN_STATUS_MIN_COLS.  A person's terminal: stdin and stdout both a
 * terminal, and TERM set and not `dumb` (what a program that reads the
 * bytes rather than a screen asks for; each frame would be text to it).
 * Never in a pipe or a file, never with --json, --raw or --context. */
#define RUN_STATUS_AFTER_MS 2000
#define RUN_STATUS_EVERY_MS 1000
#define RUN_STATUS_MIN_COLS 20
/* Size of a PTY when neither stdin nor stdout is a terminal. */
#define RUN_DEFAULT_COLS 120
#define RUN_DEFAULT_ROWS 40
/* What a command gets when git would open an editor only because the PTY
 * is a terminal and nobody is at rein's (see cli_run). */
#define RUN_GIT_NO_EDIT "GIT_EDITOR=true"
/* With nobody at rein's terminal, what the command's environment says to
 * the programs that have a way to hear it, each only where the variable
 * is not set already: nobody will answer a question, as they would see
 * without a terminal (debconf's dialogs, the GitHub CLI's and pip's
 * prompts, git's credential prompt).  On the PTY they would ask, and wait
 * to be hung up. */
static const char *const run_nobody_env[] = {
    "DEBIAN_FRONTEND=noninteractive", "GH_PROMPT_DISABLED=1",
    "PIP_NO_INPUT=1", "GIT_TERMINAL_PROMPT=0"};
#define RUN_NOBODY_ENV_N (sizeof run_nobody_env / sizeof run_nobody_env[0])
/* The longest answer read from /dev/tty for the danger question. */
#define RUN_ANSWER_MAX 64
/* Once the command's input is over: the first and the longest interval
 * between looks at what its terminal's foreground waits in.  The interval
 * doubles while no read is answered and drops back to the first when one
 * is, since a read answered with EOF is often followed by the next (`cat;
 * cat`).  10 ms keeps such a sequence quick; 160 ms bounds the /proc
 * scans of a long run that never reads to about six a second. */
#define RUN_INPUT_CHECK_MIN_MS 10
#define RUN_INPUT_CHECK_MAX_MS 160
/* Looks in a row that find no such wait before its clock starts over: one
 * may fall between two waits (a redraw), two mean the program moved on. */
#define RUN_NO_INPUT_MISSES 2

enum run_mode { MODE_CONDENSED, MODE_RAW, MODE_JSON, MODE_CONTEXT };
enum run_term { TERM_COOKED, TERM_NOECHO, TERM_RAW };

struct run {
    enum run_mode mode;
    char **cmd_argv; /* what is executed */
    char *cmdline;   /* what is shown and routed */
    bool shell;      /* cmd_argv is /bin/sh -c cmdline */
    watchman_t watchman; /* ends the command if rein dies */
    bool git_no_edit;    /* RUN_GIT_NO_EDIT in its environment (cli_run) */
    router_result_t route;
    router_cat_t view; /* the category the output is shown as */
    narrate_t **narr;
    size_t nnarr;

    rein_sup_t *sup;
    loop_t *loop; /* the supervisor's */
    int64_t id;   /* the run's registry id; 0 until it started */
    pid_t pid;    /* its leader, for --json's "ran" */
    char error[256]; /* why it did not start (or its log is incomplete),
                        for --json's "error" */
    uint64_t log_lost; /* output bytes that never reached the log */
    int log_error;
    bool leftovers; /* rein_run_info_t.leftovers_ended: a background marker */
    bool hung_up;   /* rein_run_info_t.leftovers_hung_up > 0: another */
    bool done;    /* the supervisor reported the run exited */
    bool closing; /* run_close: a run it ends is no longer shown */
    bool out_gone; /* stdout's reader went away (EPIPE): run_out_gone */
    int exit_code;
    int exit_signal; /* the signal the command died of; 0: it exited */
    uint64_t tick_timer, poll_timer;
    /* After a SIGTERM to rein: the run is cancelled when it fires (see
     * run_on_signal); 0 while none is pending. */
    uint64_t term_timer;
    uint64_t start_ms, end_ms;

    /* terminal */
    bool in_tty, out_tty;
    /* stdin is a terminal whose foreground is not rein's group (`rein run
     * CMD &` from a job-control shell): not read, its modes not touched */
    bool in_bg;
    /* stdin was the person's terminal, and a job-control shell has moved
     * rein to the background since (^Z, then `bg`): run_fg_check */
    bool away;
    bool have_saved; /* saved holds the real terminal's modes */
    struct termios saved;
    enum run_term term;
    bool went_raw;
    unsigned cols, rows;

    /* stdin */
    bool in_watched, in_eof;
    /* stdin is a file or pipe, not a terminal: the command reads it itself
     * (rein_run_opts_t inherit_stdin), and its terminal has no input */
    bool in_pass;
    /* The command's input is over (stdin ended, not a terminal): its
     * terminal's reads are answered (see the top of file). */
    bool input_over;
    uint64_t input_timer;
    uint64_t input_check_ms; /* the delay before the next look */
    uint64_t raw_since;      /* first look at the current raw wait; 0 */
    unsigned raw_misses;     /* looks in a row without it */
    int hangups;             /* SIGHUPs sent, plus one for the cancel */
    bool cancelled;          /* the run was cancelled for a raw wait */
    rein_reason_t reason;    /* why the run ended, for --json */
    pid_t hup_pgrp;          /* the foreground group of the last SIGHUP */
    int hangup_sig;          /* the last hang-up's signal, for --json */
    uint64_t hangup_after_ms; /* the wait before the first, for --json */
    uint64_t eofs;           /* reads answered with EOF, for --json */
    int room_fd; /* while stdin waits for the child: a dup of the PTY
                    master, watched for room; else -1 */
    bool last_in_nl;

    /* output */
    bool verbatim; /* bytes go straight to stdout */
    bool sq_muted; /* the squasher's output is no longer shown */
    bool out_nl;   /* the last byte written ended a line */
    bool status_on;     /* a status line may be drawn (RUN_STATUS_*) */
    bool status_shown;  /* the status line is on the terminal now */
    uint64_t status_ms; /* when it was last drawn; 0: never */
    squash_t *sq;
    /* rein is the child's only terminal (no real one both shows the
     * output and types into the input): its queries are answered here
     * (term/answer.h).  NULL when the real terminal answers them. */
    term_answer_t *ans;
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

/* Writes all of p to fd; false when the reader is gone (EPIPE and the
 * like). */
static bool run_write_fd(int fd, const char *p, size_t n)
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
        return false; /* EPIPE and the like: the reader is gone */
    }
    return true;
}

/* Erases the status line (RUN_STATUS_AFTER_MS) if it is shown: the
 * cursor is on its row, and the row is the one the next output starts. */
static void run_status_clear(struct run *r)
{
    if (!r->status_shown)
        return;
    r->status_shown = false;
    run_write_fd(STDOUT_FILENO, "\r\033[K", 4);
}

/* Draws the status line when it is due: on a terminal showing the
 * condensed view, with nothing of the command's left mid-line there (a
 * prompt), and the terminal cooked (a raw one is the program's; without
 * echo, a password is being typed). */
static void run_status_draw(struct run *r)
{
    uint64_t now = loop_clock_ms();
    struct winsize ws;
    if (!r->status_on || r->away || r->verbatim || r->done || !r->out_nl ||
        r->term != TERM_COOKED ||
        now - r->start_ms < RUN_STATUS_AFTER_MS ||
        (r->status_ms && now - r->status_ms < RUN_STATUS_EVERY_MS) ||
        ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 ||
        ws.ws_col < RUN_STATUS_MIN_COLS)
        return;
    buf_t b = BUF_INIT;
    if (buf_append_str(&b, "\r\033[K") == 0 &&
        emit_running(&b, now - r->start_ms, r->raw_lines) == 0) {
        /* Every character of it is one column wide. */
        size_t end = 4, cols = 0;
        for (; end < b.len; end++)
            if (((unsigned char)b.p[end] & 0xC0) != 0x80 &&
                ++cols == ws.ws_col)
                break;
        run_write_fd(STDOUT_FILENO, b.p, end);
        r->status_shown = true;
        r->status_ms = now;
    }
    buf_free(&b);
}

/* Whoever read rein's stdout went away (`rein run -- yes | head -1`): the
 * command would have had SIGPIPE at its next write, and rein, which
 * ignores it, stands in the way.  So the command is sent it now, as a
 * cancel (SIGPIPE, then KILL after the grace), and ends as it would
 * have: `yes` dies of SIGPIPE and rein exits 141. */
static void run_out_gone(struct run *r)
{
    r->out_gone = true;
    if (!r->done && !r->closing && r->id)
        sup_run_cancel(r->sup, r->id, REIN_REASON_MANUAL_CANCEL, SIGPIPE, -1);
}

/* stdout (a pipe or a socket) reports an error or a hang-up: its reader
 * is gone, found before rein has anything to write (a condensed view
 * writes little, and late). */
static void run_on_stdout(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)ev;
    struct run *r = data;
    loop_io_del(l, fd);
    if (!r->out_gone)
        run_out_gone(r);
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
    run_status_clear(r);
    if (!run_write_fd(STDOUT_FILENO, p, n) && !r->out_gone)
        run_out_gone(r);
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
    if (r->have_saved && r->term != TERM_COOKED)
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

/* Makes the real terminal follow the PTY's mode (see the top of file).
 * The PTY's modes are read through the master, which the kernel answers
 * with the slave's: the supervisor keeps the master until the run ends. */
static void run_term_sync(struct run *r)
{
    struct termios t;
    int fd;
    if (!r->have_saved || r->away || r->mode == MODE_JSON || !r->id ||
        (fd = sup_run_fd(r->sup, r->id)) < 0 || tcgetattr(fd, &t) < 0)
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
    if (!r->id || !run_term_size(&c, &w) || (c == r->cols && w == r->rows))
        return;
    if (rein_sup_resize(r->sup, r->id, c, w) == 0) {
        r->cols = c;
        r->rows = w;
        if (r->ans)
            term_answer_resize(r->ans, ptyio_clamp_cols(c),
                               ptyio_clamp_rows(w));
        if (r->sq)
            squash_set_cols(r->sq, ptyio_clamp_cols(c));
    }
}

/* The PTY's modes before the child starts (sup_spawn_tio): the person's
 * own when stdin is a terminal.  No person typing: the PTY's echo would
 * only duplicate piped input in the output.  No terminal reading: CR LF
 * line ends would be a PTY artefact in a file or pipe. */
static void run_pty_modes(struct termios *t, void *data)
{
    struct run *r = data;
    if (r->have_saved)
        *t = r->saved;
    else
        t->c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    if (!r->out_tty)
        t->c_oflag &= ~(tcflag_t)ONLCR;
}

/* ------------------------------------------------------------- the run */

/* Feeds one chunk of the child's output to the view.  The supervisor has
 * already spooled it to the log. */
static void run_output(struct run *r, const char *p, size_t n)
{
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

static void run_on_output(rein_sup_t *s, int64_t id, const void *data,
                          size_t n, void *ud)
{
    (void)s;
    (void)id;
    struct run *r = ud;
    if (r->ans)
        term_answer_feed(r->ans, data, n);
    if (r->closing || !r->sq)
        return;
    /* The mode first: a child switches it before it writes, so output
     * seen now is already output of the new mode. */
    run_term_sync(r);
    run_output(r, data, n);
}

static void run_stdin_stop(struct run *r);

static void run_on_exit(rein_sup_t *s, int64_t id, const rein_run_info_t *i,
                        void *ud)
{
    (void)s;
    (void)id;
    struct run *r = ud;
    r->done = true;
    r->end_ms = loop_clock_ms();
    /* No exit status only when the leader outlived every kill (the
     * supervisor gave up on it): that is rein failing, not the command. */
    r->exit_code = i->exit_code >= 0 ? i->exit_code : CLI_EXIT_FAILURE;
    r->exit_signal = i->exit_code >= 0 ? i->signal : 0;
    r->reason = i->reason;
    r->log_lost = i->log_lost;
    r->log_error = i->log_error;
    r->leftovers = i->leftovers_ended;
    r->hung_up = i->leftovers_hung_up > 0;
    run_stdin_stop(r);
    loop_timer_del(r->loop, r->input_timer);
    loop_timer_del(r->loop, r->term_timer);
    r->input_timer = r->term_timer = 0;
}

/* ---------------------------------------------------------------- stdin */

static void run_on_stdin(loop_t *l, int fd, unsigned ev, void *data);
static void run_on_room(loop_t *l, int fd, unsigned ev, void *data);

static void run_stdin_watch(struct run *r, bool on)
{
    if (on == r->in_watched || r->in_eof || (on && r->away))
        return;
    if (on)
        loop_io_add(r->loop, STDIN_FILENO, LOOP_READ, run_on_stdin, r);
    else
        loop_io_del(r->loop, STDIN_FILENO);
    r->in_watched = on;
}

/* Stops waiting for room in the child's terminal. */
static void run_room_unwatch(struct run *r)
{
    if (r->room_fd < 0)
        return;
    loop_io_del(r->loop, r->room_fd);
    close(r->room_fd);
    r->room_fd = -1;
}

/* Nothing more is forwarded: stdin ended for good, or the run did. */
static void run_stdin_stop(struct run *r)
{
    run_stdin_watch(r, false);
    run_room_unwatch(r);
    r->in_eof = true;
}

/* True when the supervisor holds as much of our stdin as we allow.  Then
 * stdin is left unread, and a duplicate of the master is watched for room:
 * the supervisor's own watch on the master cannot tell us when it drained
 * (epoll takes the duplicate as a watch of its own). */
static bool run_stdin_full(struct run *r)
{
    if (r->room_fd >= 0)
        return true;
    if (sup_run_pending(r->sup, r->id) < RUN_STDIN_PENDING_MAX)
        return false;
    int m = sup_run_fd(r->sup, r->id);
    r->room_fd = m < 0 ? -1 : fcntl(m, F_DUPFD_CLOEXEC, 0);
    if (r->room_fd >= 0 &&
        loop_io_add(r->loop, r->room_fd, LOOP_WRITE, run_on_room, r) < 0)
        run_room_unwatch(r);
    if (r->room_fd < 0)
        return false; /* nothing would wake us: better unbounded than stuck */
    run_stdin_watch(r, false);
    return true;
}

/* Hands stdin bytes to the run; false when it takes no more. */
static bool run_forward(struct run *r, const void *p, size_t n)
{
    if (rein_sup_write(r->sup, r->id, p, n) == 0)
        return true;
    run_stdin_stop(r); /* the run is over or its terminal gone */
    return false;
}

/* Passes on a ^D the person typed at a cooked terminal (stdin is one):
 * one EOF character to end a line read, two when the last line had no
 * newline (the first only delivers the line). */
static void run_send_eof(struct run *r)
{
    if (!r->last_in_nl)
        rein_sup_close_stdin(r->sup, r->id);
    rein_sup_close_stdin(r->sup, r->id);
    r->last_in_nl = true;
}

/* ------------------------------------------------- the input is over */

/* Shows a marker of rein's own beside the command's output: on a line of
 * its own in a view (after the command's partial line, if any), on
 * stderr under --raw (whose stdout is the command's bytes only), only in
 * the object under --json. */
static void run_marker(struct run *r, const buf_t *m)
{
    if (r->mode == MODE_JSON)
        return;
    if (r->mode == MODE_RAW) {
        run_write_fd(STDERR_FILENO, m->p, m->len);
        return;
    }
    if (!r->out_nl)
        run_out(r, "\n", 1);
    run_out(r, m->p, m->len);
}

/* A look that found no raw-mode wait on the terminal alone. */
static void run_raw_miss(struct run *r)
{
    if (r->raw_since && ++r->raw_misses >= RUN_NO_INPUT_MISSES) {
        r->raw_since = 0;
        r->raw_misses = 0;
    }
}

/* Hangs up the terminal's foreground: it waited for keys in raw mode for
 * waited_ms with nobody to press them.  As the kernel does when a
 * terminal goes away: SIGHUP to the foreground group (which the
 * supervisor sends only to a group of the run's own session).  A group
 * that gets one and waits so again ignores it: then the run is cancelled
 * (TERM + CONT to all of it, the supervisor's grace, KILL).  Another
 * group waiting later (the job-control shell whose vi was hung up) gets
 * its own SIGHUP first. */
static void run_hangup(struct run *r, uint64_t waited)
{
    buf_t b = BUF_INIT;
    pid_t fg = tcgetpgrp(sup_run_fd(r->sup, r->id));
    r->raw_since = 0;
    r->raw_misses = 0;
    if (!r->hangups || fg != r->hup_pgrp) {
        if (rein_sup_signal(r->sup, r->id, SIGHUP) < 0)
            return; /* not running any more: its exit is on the way */
        if (!r->hangups)
            r->hangup_after_ms = waited;
        r->hup_pgrp = fg;
        r->hangup_sig = SIGHUP;
        emit_hangup(&b, SIGHUP, waited, 0);
    } else {
        if (sup_run_cancel(r->sup, r->id, REIN_REASON_NO_INPUT, SIGTERM,
                           -1) < 0)
            return;
        r->cancelled = true;
        r->hangup_sig = SIGTERM;
        emit_hangup(&b, SIGTERM, waited, REIN_SUP_GRACE_MS);
    }
    r->hangups++;
    run_marker(r, &b);
    buf_free(&b);
}

/* One look at the command's terminal with its input over.  True when a
 * read was answered (or our last bytes are still going in), so the next
 * look comes soon. */
static bool run_input_check(struct run *r)
{
    int fd = sup_run_fd(r->sup, r->id);
    struct termios t;
    struct stat in;
    awaiting_t aw;
    if (fd < 0)
        return false;
    if (sup_run_pending(r->sup, r->id) > 0)
        return true; /* what stdin gave is not all in yet */
    /* Something queued (a line, or our last EOF not read yet): a read
     * would not block, and a second EOF would wait ahead of a reader. */
    if (sup_run_input_queued(r->sup, r->id) != 0 || tcgetattr(fd, &t) < 0 ||
        sup_run_input(r->sup, r->id, &in) < 0 ||
        awaiting_scan(r->pid, true, &in, &aw) < 0 || !aw.waiting) {
        run_raw_miss(r);
        return false;
    }
    if (t.c_lflag & ICANON) {
        /* A cooked read, blocked with nothing queued: the EOF ends it,
         * whatever else the wait watches (/dev/null is always readable). */
        r->raw_since = 0;
        r->raw_misses = 0;
        if (rein_sup_close_stdin(r->sup, r->id) < 0)
            return false;
        r->eofs++;
        return true;
    }
    if (!aw.sole) {
        run_raw_miss(r); /* the other side may still wake it */
        return false;
    }
    /* A raw read with VMIN 0 returns when VTIME runs out (or at once). */
    bool timed = aw.timed || (aw.read && t.c_cc[VMIN] == 0);
    uint64_t now = loop_clock_ms();
    r->raw_misses = 0;
    if (!r->raw_since)
        r->raw_since = now;
    uint64_t waited = now - r->raw_since;
    if (waited >= (timed ? RUN_NO_INPUT_HANGUP_TIMED_MS
                         : RUN_NO_INPUT_HANGUP_MS))
        run_hangup(r, waited);
    return false;
}

static void run_on_input_check(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    r->input_timer = 0;
    if (r->done || r->closing || r->cancelled)
        return; /* after the cancel the supervisor ends the run */
    if (run_input_check(r))
        r->input_check_ms = RUN_INPUT_CHECK_MIN_MS;
    else if ((r->input_check_ms *= 2) > RUN_INPUT_CHECK_MAX_MS)
        r->input_check_ms = RUN_INPUT_CHECK_MAX_MS;
    loop_timer_add(l, r->input_check_ms, run_on_input_check, r,
                   &r->input_timer);
}

/* rein's stdin ended for good: nothing more is read, and (stdin not being
 * a terminal) the command's input is over, its reads answered from now on
 * (see the top of file).  No EOF is sent now: one sent before anybody
 * reads would wait in the terminal for the next reader, who may be in raw
 * mode and take it for a key. */
static void run_input_over(struct run *r)
{
    run_stdin_stop(r);
    if (r->input_over || r->in_tty || r->done || r->closing || !r->id)
        return;
    r->input_over = true;
    r->input_check_ms = RUN_INPUT_CHECK_MIN_MS;
    loop_timer_add(r->loop, r->input_check_ms, run_on_input_check, r,
                   &r->input_timer);
}

/* Reads a chunk of the terminal on stdin and forwards it; false at EOF or
 * error.  hup: the wait that woke this read saw a hang-up. */
static bool run_read_stdin(struct run *r, bool hup)
{
    ssize_t n = read(STDIN_FILENO, r->rbuf, RUN_READ_BUF);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0) {
        /* A terminal's ^D ends one read of the person's, not the input:
         * it is passed on as it is.  A terminal that hung up or failed
         * ends for good: its reads return at once from then on, and each
         * would be another ^D. */
        if (n == 0 && !hup)
            run_send_eof(r);
        else
            run_input_over(r);
        return false;
    }
    r->last_in_nl = r->rbuf[n - 1] == '\n' || r->rbuf[n - 1] == '\r';
    return run_forward(r, r->rbuf, (size_t)n);
}

static void run_on_stdin(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    struct run *r = data;
    /* A resize that came before this input must reach the PTY before it:
     * the child may ask for its size in reply. */
    run_sync_size(r);
    run_term_sync(r);
    if (run_read_stdin(r, (ev & LOOP_HUP) != 0))
        run_stdin_full(r);
}

static void run_on_room(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    struct run *r = data;
    if (sup_run_pending(r->sup, r->id) >= RUN_STDIN_PENDING_MAX)
        return; /* the supervisor's own flush of this room comes next */
    run_room_unwatch(r);
    run_stdin_watch(r, true);
}

/* ------------------------------------------------------------- signals */

/* The grace after a SIGTERM is over and the run still lives: its command
 * ignored the TERM (or handled it and went on).  rein was told to stop,
 * and nothing it started may outlive it, so the run is cancelled: KILL to
 * all of it, whose TERM already had its grace. */
static void run_on_term_grace(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct run *r = data;
    r->term_timer = 0;
    if (!r->done && !r->closing)
        sup_run_cancel(r->sup, r->id, REIN_REASON_MANUAL_CANCEL, SIGKILL, 0);
}

/* The signals the proxy watches (run_on_signal). */
static const int run_signals[] = {SIGWINCH, SIGINT,  SIGTERM, SIGHUP,
                                  SIGQUIT,  SIGTSTP, SIGCONT};
#define RUN_NSIGNALS (sizeof run_signals / sizeof run_signals[0])

/*
 * Follows the person's terminal as a job-control shell moves rein between
 * its foreground and its background: `bg` continues rein with SIGCONT,
 * `fg` of a stopped rein too, but `fg` of a running one only hands it the
 * terminal, which the RUN_TERM_POLL_MS look sees.  In the background the
 * terminal is the shell's: rein does not read it (a read stops rein with
 * SIGTTIN, and input seen ready just before the move was a line for the
 * shell, so a read after it waited for the person's next one, with the
 * command long gone), does not set its modes (SIGTTOU; they are the
 * shell's line editor's), and draws no status line over the shell's
 * prompt.  Back in the foreground it reads
 * the terminal again and puts it in the mode the command's terminal is
 * in (the shell set its own meanwhile).  A rein started in the background
 * (in_bg) treats its input as over from the start and stays so.
 */
static void run_fg_check(struct run *r)
{
    if (!r->in_tty)
        return;
    bool away = tcgetpgrp(STDIN_FILENO) != getpgrp();
    if (away == r->away)
        return;
    r->away = away;
    if (away) {
        run_status_clear(r);
        run_stdin_watch(r, false);
        r->term = TERM_COOKED; /* whatever the shell sets is not ours */
        return;
    }
    run_stdin_watch(r, true);
    run_term_sync(r);
}

/*
 * Ctrl-Z at a cooked terminal (or a TSTP from outside): the job is
 * suspended with rein, as a shell suspends a job.
 *
 * When the PTY's foreground is a job a shell inside it started (`rein run
 * -- bash -i`, then `make`), that shell does job control: the job gets
 * SIGTSTP, as from ^Z at a terminal, the shell takes the terminal back
 * and says `Stopped`, and rein runs on.  Otherwise the foreground is the
 * run leader's own group: it leads a session whose leader's parent (rein)
 * is outside it, an orphaned group, and the kernel drops the terminal
 * stop signals sent to one (POSIX), so it gets SIGSTOP.  rein then stops
 * itself with SIGTSTP, which the same rule drops when rein's own group is
 * orphaned: no shell could resume it.  Once it runs again (resumed, or
 * never stopped) that group is continued, the terminal put back in the
 * job's mode (the shell set its own while it had the terminal) and the
 * job told the size (a resize meanwhile was the shell's to see).  A raw
 * terminal sends ^Z to the job as a byte: what it means there is the
 * program's business, and a program that suspends itself on it (less,
 * vi: kill(0, SIGTSTP)) cannot, since the same rule drops the stop
 * signals of its orphaned group, as under `ssh host less`; suspending it
 * would take a parent of the command inside its session, as a shell is.
 */
static void run_suspend(struct run *r)
{
    pid_t pg = r->id && !r->done ? sup_run_fg_group(r->sup, r->id) : -1;
    if (pg > 0 && pg != r->pid) {
        sup_run_signal_group(r->sup, r->id, pg, SIGTSTP);
        return;
    }
    bool job = pg > 0 &&
               sup_run_signal_group(r->sup, r->id, pg, SIGSTOP) == 0;
    enum run_term was = r->term;
    run_status_clear(r);
    run_term_restore(r);
    /* Raised while blocked, then let through: a second ^Z already
     * pending merges with it, and rein stops once.  It comes back here
     * when continued (SIGCONT), or at once when the kernel dropped it. */
    sigset_t tstp;
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    raise(SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &tstp, NULL);
    sigprocmask(SIG_BLOCK, &tstp, NULL);
    if (job)
        sup_run_signal_group(r->sup, r->id, pg, SIGCONT);
    run_fg_check(r);
    if (r->have_saved && !r->away && was != TERM_COOKED)
        run_term_apply(r, was);
    run_sync_size(r);
}

static void run_on_signal(loop_t *l, int signo, void *data)
{
    struct run *r = data;
    if (signo == SIGWINCH) {
        run_sync_size(r);
        return;
    }
    if (signo == SIGTSTP) {
        run_suspend(r);
        return;
    }
    if (signo == SIGCONT) { /* `fg` or `bg` from the person's shell */
        run_fg_check(r);
        return;
    }
    /* The child has its own session: a signal meant for the job (Ctrl-C
     * at a cooked terminal, kill from outside) is passed on to the job in
     * its terminal's foreground.  Once the child is gone there is nothing
     * to pass it to (the supervisor refuses).  SIGINT, SIGHUP and SIGQUIT
     * are the job's to handle as it likes (a REPL lives on after Ctrl-C,
     * a nohup'd job after a hang-up), with rein still owning it; SIGTERM
     * asks rein itself to end, which it does by REIN_SUP_GRACE_MS later
     * at the latest, the command with it (a caller that SIGKILLs rein
     * after its own grace would otherwise leave the command behind until
     * the next reconcile). */
    if (!r->id || r->done)
        return;
    pid_t pg = sup_run_fg_group(r->sup, r->id);
    if (pg > 0) {
        sup_run_signal_group(r->sup, r->id, pg, signo);
        /* A stopped job (`kill -STOP`) would hold a TERM until the grace
         * ends in a KILL, and a HUP for good: woken, as bash's `kill`
         * wakes a stopped job for these two, it ends as it chooses. */
        if (signo == SIGTERM || signo == SIGHUP)
            sup_run_signal_group(r->sup, r->id, pg, SIGCONT);
    }
    if (signo == SIGTERM && !r->term_timer)
        loop_timer_add(l, REIN_SUP_GRACE_MS, run_on_term_grace, r,
                       &r->term_timer);
}

static void run_on_tick(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    squash_tick(r->sq, loop_clock_ms());
    run_status_draw(r);
    loop_timer_add(l, RUN_TICK_MS, run_on_tick, r, &r->tick_timer);
}

static void run_on_poll(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    run_fg_check(r);
    run_term_sync(r);
    loop_timer_add(l, RUN_TERM_POLL_MS, run_on_poll, r, &r->poll_timer);
}

/* ------------------------------------------------------------- set-up */

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

/* The danger decision: the question on /dev/tty (the marker with what
 * the pattern means, then `run it? [y/N] `), then the marker with the
 * decision on stderr.  0: go on; CLI_EXIT_FAILURE: do not run (nor when
 * the marker cannot be formed). */
static int run_danger(struct run *r)
{
    const router_result_t *rt = &r->route;
    const char *id = rt->danger_id ? rt->danger_id : "?";
    buf_t b = BUF_INIT;
    int yes = 0;
    if (rt->danger == ROUTER_DANGER_FORBID) {
        r->decision = "forbidden by policy, not run";
    } else if (emit_danger(&b, r->cmdline, id,
                           rt->danger_what ? rt->danger_what
                                           : "dangerous") == 0 &&
               buf_append_str(&b, "run it? [y/N] ") == 0) {
        yes = run_ask(b.p);
        r->decision = yes < 0 ? "not run (no terminal to ask)"
                      : yes   ? "confirmed, running"
                              : "not run";
    } else {
        r->decision = "not run";
    }
    buf_reset(&b);
    if (emit_danger(&b, r->cmdline, id, r->decision) == 0)
        fputs(b.p, stderr);
    buf_free(&b);
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
        /* Words the shell expands are not the paths the command gets:
         * stat()ing `$V` or `*.tmp` as written would report a deleted
         * directory as one that "did not exist".  Such a segment is not
         * narrated at all, rather than narrated wrong. */
        r->nnarr = i + 1;
        if (r->route.shell_text && s->text && router_expands(s->text))
            continue;
        size_t k = router_command_at(s->argv, s->argc);
        int rc = narrate_begin((const char *const *)s->argv + k, s->argc - k,
                               &r->narr[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Routes the command into r->route: its line when it runs under sh -c,
 * else its words. */
static int run_route(struct run *r, router_t *router, char **cmd,
                     const router_ctx_t *ctx)
{
    return r->shell ? router_classify_ctx(router, r->cmdline, ctx, &r->route)
                    : router_classify_argv_ctx(
                          router, (const char *const *)cmd, ctx, &r->route);
}

/* The watchman could not start: a crash of rein would leave the command
 * to the next reconcile, which the person should know. */
static void run_no_watchman(int rc)
{
    fprintf(stderr, "rein: no watchman (if rein dies, its command runs on "
                    "until `rein reconcile`): %s\n",
            rein_strerror(rc));
}

/* Opens the supervisor on the default state dir (see the top of file for
 * why there is no fallback without one), and watches the signals the proxy
 * forwards.  0, or the exit status when rein cannot go on. */
static int run_open(struct run *r)
{
    char why[512] = "";
    rein_sup_opts_t so = {.errmsg = why, .errlen = sizeof why};
    char dir[PATH_MAX];
    const char *forced = getenv("REIN_CONTAINMENT");
    int rc = rein_sup_open(&so, &r->sup);
    /* An unknown level is EINVAL, an unavailable one ECONTAIN. */
    if (rc == REIN_ECONTAIN || (rc == -EINVAL && forced && *forced)) {
        fprintf(stderr, "rein: REIN_CONTAINMENT=%s: %s; not run\n",
                forced ? forced : "", rein_strerror(rc));
        return CLI_EXIT_FAILURE;
    }
    if (rc < 0) {
        /* The dir by name; the lookup itself may be what failed (it
         * creates the dir), and then only the variable can name it. */
        const char *e = getenv("REIN_STATE_DIR");
        const char *name = e && *e ? e
                           : registry_state_dir(dir, sizeof dir) == 0
                               ? dir
                               : "($XDG_STATE_HOME/rein or "
                                 "~/.local/state/rein)";
        fprintf(stderr,
                "rein: cannot create a log in the state dir %s: %s; not run "
                "(set REIN_STATE_DIR to a writable directory)\n",
                name, why[0] ? why : rein_strerror(rc));
        return CLI_EXIT_FAILURE;
    }
    r->loop = sup_loop(r->sup);
    /* Watched before the spawn: a signal that comes while the child starts
     * waits for it in the signalfd instead of killing rein and leaving the
     * child to reconcile. */
    for (size_t i = 0; i < RUN_NSIGNALS; i++) {
        if ((rc = loop_signal_add(r->loop, run_signals[i], run_on_signal,
                                  r)) < 0) {
            fprintf(stderr, "rein: event loop: %s\n", rein_strerror(rc));
            return CLI_EXIT_FAILURE;
        }
    }
    return 0;
}

/* The exit status and the line for a run the supervisor could not start:
 * the command's fault (not found, not executable) or rein's. */
static int run_spawn_failed(struct run *r, int rc)
{
    const char *cmd = r->cmd_argv[0];
    switch (rc) {
    case -ENOENT:
        snprintf(r->error, sizeof r->error, "%s: command not found", cmd);
        fprintf(stderr, "rein: %s\n", r->error);
        return CLI_EXIT_NOTFOUND;
    case -EACCES:
    case -EPERM:
    case -ENOEXEC:
    case -EISDIR:
    case -ENOTDIR:
    case -ELOOP:
    case -ENAMETOOLONG:
    case -ETXTBSY:
    case -E2BIG:
        snprintf(r->error, sizeof r->error, "%s: %s", cmd, rein_strerror(rc));
        fprintf(stderr, "rein: %s\n", r->error);
        return CLI_EXIT_NOEXEC;
    default:
        snprintf(r->error, sizeof r->error, "cannot start %s: %s", cmd,
                 rein_strerror(rc));
        fprintf(stderr, "rein: %s\n", r->error);
        return CLI_EXIT_FAILURE;
    }
}

/* A reply to the child's query: after the input already queued, whole. */
static void run_answer(const void *reply, size_t n, void *data)
{
    struct run *r = data;
    if (r->id && !r->done)
        rein_sup_write(r->sup, r->id, reply, n);
}

/* Starts the command as a tty run sized like the real terminal.  Returns
 * 0, or an exit status for a command that could not start. */
static int run_spawn(struct run *r)
{
    /* A pager would wait for keys nobody sees in a condensed view. */
    static const char *const no_pager[] = {"PAGER=cat", "GIT_PAGER=cat",
                                           "SYSTEMD_PAGER=cat"};
    const char *env[sizeof no_pager / sizeof no_pager[0] + RUN_NOBODY_ENV_N +
                    2];
    size_t n_env = 0;
    if (r->view != ROUTER_INTERACTIVE)
        for (size_t i = 0; i < sizeof no_pager / sizeof no_pager[0]; i++)
            env[n_env++] = no_pager[i];
    if (r->git_no_edit)
        env[n_env++] = RUN_GIT_NO_EDIT;
    for (size_t i = 0; !r->in_tty && i < RUN_NOBODY_ENV_N; i++) {
        const char *e = run_nobody_env[i];
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(e, "="), e);
        if (!getenv(name))
            env[n_env++] = e;
    }
    env[n_env] = NULL;
    if (!run_term_size(&r->cols, &r->rows)) {
        r->cols = RUN_DEFAULT_COLS;
        r->rows = RUN_DEFAULT_ROWS;
    }
    rein_run_opts_t o = {
        .argv = (const char *const *)r->cmd_argv,
        .env = n_env ? env : NULL,
        .tty = true,
        .cols = r->cols,
        .rows = r->rows,
        .inherit_stdin = r->in_pass,
        .grace_ms = -1,
        .on_output = run_on_output,
        .on_exit = run_on_exit,
        .data = r,
    };
    /* The real terminal answers the child's queries only when it shows
     * them (stdout, and not --json) and its replies reach the child
     * (stdin); else rein does. */
    if ((!r->in_tty || !r->out_tty || r->mode == MODE_JSON) &&
        term_answer_new(ptyio_clamp_cols(r->cols), ptyio_clamp_rows(r->rows),
                        run_answer, r, &r->ans) < 0) {
        r->start_ms = r->end_ms = loop_clock_ms();
        return run_spawn_failed(r, -ENOMEM);
    }
    r->start_ms = loop_clock_ms();
    int rc = sup_spawn_tio(r->sup, &o, run_pty_modes, r, &r->id);
    if (rc < 0) {
        r->id = 0;
        r->end_ms = loop_clock_ms();
        return run_spawn_failed(r, rc);
    }
    rein_run_info_t info;
    if (rein_sup_info(r->sup, r->id, &info) == 0) {
        r->pid = info.pid;
        if (info.log_path)
            snprintf(r->log_path, sizeof r->log_path, "%s", info.log_path);
    }
    return 0;
}

static int run_loop(struct run *r)
{
    struct stat so;
    if (fstat(STDOUT_FILENO, &so) == 0 &&
        (S_ISFIFO(so.st_mode) || S_ISSOCK(so.st_mode)))
        loop_io_add(r->loop, STDOUT_FILENO, 0, run_on_stdout, r);
    /* Only a terminal's input is read here and typed into the command's;
     * a file or pipe is the command's own stdin (in_pass). */
    int rc = r->in_tty ? loop_io_add(r->loop, STDIN_FILENO, LOOP_READ,
                                     run_on_stdin, r)
                       : -EBADF;
    if (rc < 0)
        run_input_over(r); /* no terminal input at all */
    else
        r->in_watched = true;
    loop_timer_add(r->loop, RUN_TICK_MS, run_on_tick, r, &r->tick_timer);
    if (r->in_tty)
        loop_timer_add(r->loop, RUN_TERM_POLL_MS, run_on_poll, r,
                       &r->poll_timer);
    while (!r->done) {
        rc = rein_sup_run_once(r->sup, -1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ results */

/* The exit marker under verbatim output, from the one implementation of
 * the marker syntax (squash/emit.c).  A run always took some time: a 0 ms
 * clock reading is passed as 1 ms, since 0 there means "unknown" and
 * would drop the duration. */
static void run_footer(struct run *r, buf_t *b)
{
    uint64_t ms = r->end_ms - r->start_ms;
    emit_exit(b, r->exit_code, r->exit_signal, ms ? ms : 1, r->raw_lines);
}

/* The background markers after the summary, when the command left jobs
 * running that the terminal's hangup killed as it exited, or that rein
 * ended with it: `sh -c 'server & echo started'` must not read as a
 * server left running. */
static void run_background(struct run *r)
{
    if (!r->leftovers && !r->hung_up)
        return;
    buf_t b = BUF_INIT;
    if (r->hung_up)
        emit_background_hangup(&b);
    if (r->leftovers)
        emit_background(&b);
    run_marker(r, &b);
    buf_free(&b);
}

/* Says why rein ended the run when nothing in the view does: the
 * command's SIGTERM would read as its own failure.  The hang-up has its
 * own markers; the proxy's other cancels answer the person's signal or
 * the reader's going, and `rein kill` signals the run from elsewhere
 * (its reason is the signal). */
static void run_ended(struct run *r)
{
    if (r->reason != REIN_REASON_OWNERSHIP_ESCAPE)
        return;
    buf_t b = BUF_INIT;
    emit_ended(&b, "a process it started left the run's boundary (setsid, "
                   "a double fork), so rein ended the run and it: nothing "
                   "rein starts outlives its run");
    run_marker(r, &b);
    buf_free(&b);
}

/* Everything after the child is gone: narrate markers, the summary. */
static void run_summary(struct run *r)
{
    buf_t b = BUF_INIT;
    if (!r->end_ms)
        r->end_ms = loop_clock_ms();
    uint64_t ms = r->end_ms - r->start_ms;
    if (r->mode == MODE_RAW) {
        run_ended(r);
        run_background(r);
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
    squash_set_signal(r->sq, r->exit_signal);
    squash_finish(r->sq, r->exit_code, ms, loop_clock_ms());
    run_ended(r);
    run_background(r);
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
    int sig = r->exit_signal;
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
    /* The supervisor's reason: a 143 that rein caused (no-input) is not
     * the command's own failure. */
    json_object_set_new(o, "reason",
                        r->reason != REIN_REASON_NONE
                            ? json_string(rein_reason_name(r->reason))
                            : json_null());
    json_object_set_new(o, "duration_ms", json_integer((json_int_t)ms));
    json_object_set_new(o, "lines", json_integer((json_int_t)r->raw_lines));
    json_object_set_new(o, "bytes", json_integer((json_int_t)r->raw_bytes));
    json_object_set_new(o, "hazards", json_integer((json_int_t)st.hazards));
    json_object_set_new(o, "errors", json_integer((json_int_t)st.errors));
    json_object_set_new(o, "warnings", json_integer((json_int_t)st.warnings));
    json_object_set_new(o, "omitted", json_integer((json_int_t)st.omitted));
    json_object_set_new(o, "interactive", json_boolean(r->went_raw));
    json_object_set_new(o, "background_ended", json_boolean(r->leftovers));
    json_object_set_new(o, "background_hung_up", json_boolean(r->hung_up));
    /* With the input over (see the top of file): reads answered with EOF,
     * and the hang-up, if rein had to. */
    json_object_set_new(o, "eofs", json_integer((json_int_t)r->eofs));
    json_object_set_new(
        o, "hangup",
        r->hangups ? json_pack("{s:s, s:I}", "signal",
                               r->hangup_sig == SIGHUP ? "SIGHUP" : "SIGTERM",
                               "after_ms", (json_int_t)r->hangup_after_ms)
                   : json_null());
    json_object_set_new(o, "output",
                        json_stringn(r->collected.p ? r->collected.p : "",
                                     r->collected.len));
    json_object_set_new(o, "log", r->log_path[0] ? json_string(r->log_path)
                                                 : json_null());
    json_object_set_new(o, "ran", json_boolean(r->pid > 0));
    json_object_set_new(o, "error", r->error[0] ? json_string(r->error)
                                                : json_null());
    /* The registry's id: `rein logs ID`, `rein ps`. */
    json_object_set_new(o, "id", r->id ? json_integer((json_int_t)r->id)
                                       : json_null());
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

/* Closes the supervisor: it ends a run still going (rein failed around
 * it; nothing outlives rein) and gives up the owner lease.  Our watchers
 * go first, and output of such a run is no longer shown. */
static void run_close(struct run *r)
{
    if (!r->sup)
        return;
    r->closing = true;
    run_stdin_stop(r);
    loop_timer_del(r->loop, r->tick_timer);
    loop_timer_del(r->loop, r->poll_timer);
    loop_timer_del(r->loop, r->input_timer);
    loop_timer_del(r->loop, r->term_timer);
    r->tick_timer = r->poll_timer = r->input_timer = r->term_timer = 0;
    for (size_t i = 0; i < RUN_NSIGNALS; i++)
        loop_signal_del(r->loop, run_signals[i]);
    rein_sup_close(r->sup);
    r->sup = NULL;
    r->loop = NULL;
}

static void run_free(struct run *r)
{
    run_close(r);
    for (size_t i = 0; i < r->nnarr; i++)
        narrate_free(r->narr[i]);
    free(r->narr);
    router_result_free(&r->route);
    squash_free(r->sq);
    term_answer_free(r->ans);
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
    r.watchman = (watchman_t)WATCHMAN_INIT;
    r.room_fd = -1;
    r.pid = -1;
    r.out_nl = true;
    r.last_in_nl = true;
    utf8_init(&r.dec);
    for (; !shorthand && i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        static const char *const modes[] = {NULL, "--raw", "--json",
                                            "--context"};
        enum run_mode m = MODE_CONDENSED;
        for (enum run_mode k = MODE_RAW; k <= MODE_CONTEXT; k++)
            if (!strcmp(argv[i], modes[k]))
                m = k;
        if (m != MODE_CONDENSED) {
            /* One view per run: the last of two would win unseen. */
            if (r.mode != MODE_CONDENSED && r.mode != m) {
                fprintf(stderr, "rein run: %s and %s cannot go together\n",
                        modes[r.mode], argv[i]);
                run_usage(stderr);
                return CLI_EXIT_USAGE;
            }
            r.mode = m;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
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
    /* The watchman starts while the command is routed, and holds us
     * before the supervisor opens (run_open). */
    rc = watchman_spawn(NULL, &r.watchman);
    if (rc < 0)
        run_no_watchman(rc);

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
    /* The command runs on a terminal, in this environment (an EDITOR or
     * MANPAGER set here is the one it takes). */
    router_ctx_t rctx = {.inherit_env = true};
    rc = run_route(&r, router, cmd, &rctx);
    /* Nobody at a terminal (stdin is none): an editor git opens only
     * because it sees one (merge, pull, revert on the PTY) would wait for
     * keys nobody types, and be hung up.  With GIT_EDITOR=true git keeps
     * its own message, as it does without a terminal; the line is routed
     * again in that environment, so the view is what the command now is. */
    if (rc == 0 && r.route.term_edit && !isatty(STDIN_FILENO)) {
        static const char *const no_edit[] = {RUN_GIT_NO_EDIT, NULL};
        r.git_no_edit = true;
        rctx.env = no_edit;
        router_result_free(&r.route);
        rc = run_route(&r, router, cmd, &rctx);
    }
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
    /* A terminal on stdin is the person's only while rein is in its
     * foreground: in the background, reading it stops rein (SIGTTIN), and
     * so does setting its modes (SIGTTOU), which are the shell's line
     * editor's then, not the person's.  The command runs as on no
     * terminal, its input over. */
    r.in_bg = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) != getpgrp();
    r.in_tty = isatty(STDIN_FILENO) && !r.in_bg;
    /* A file or a pipe is passed to the command as it is, as its own
     * stdin: through the PTY, the line discipline would rewrite it (CR to
     * NL, lines cut at 4095 bytes, ^C ^Z ^\ ^U ^W ^D and DEL taken as
     * keys), and the command would see a terminal where, without rein,
     * it reads a file.  Its terminal then has no input. */
    r.in_pass = !isatty(STDIN_FILENO) && fcntl(STDIN_FILENO, F_GETFD) >= 0;
    r.out_tty = isatty(STDOUT_FILENO);
    const char *term = getenv("TERM");
    r.status_on = r.mode == MODE_CONDENSED && r.in_tty && r.out_tty && term &&
                  *term && strcmp(term, "dumb") != 0;
    r.verbatim = r.mode == MODE_RAW || (r.mode != MODE_CONTEXT &&
                                        (r.view == ROUTER_PASSTHROUGH ||
                                         r.view == ROUTER_STRUCTURED ||
                                         r.view == ROUTER_NARRATE ||
                                         r.view == ROUTER_INTERACTIVE));
    r.have_saved = r.in_tty && tcgetattr(STDIN_FILENO, &r.saved) == 0;
    if (!(r.rbuf = malloc(RUN_READ_BUF)))
        goto nomem;
    if (r.view == ROUTER_NARRATE && run_narrate_begin(&r) < 0)
        goto nomem;
    if (r.watchman.pid >= 0 && (rc = watchman_settle(&r.watchman)) < 0)
        run_no_watchman(rc);
    if ((status = run_open(&r)) != 0)
        goto out;
    if (r.mode == MODE_CONTEXT) {
        char *h = NULL;
        if (asprintf(&h, "$ %s\n", r.cmdline) > 0) {
            run_out(&r, h, strlen(h));
            free(h);
        }
    }
    if ((status = run_spawn(&r)) != 0) {
        r.exit_code = status;
        if (r.mode == MODE_JSON)
            run_json(&r, cmd); /* one object, even for nothing run */
        goto out;
    }
    status = CLI_EXIT_FAILURE;
    /* After the spawn, because the log path is the run's: the child is
     * starting meanwhile, and its output waits in the PTY. */
    sq_opts_t so = {.command = r.cmdline,
                    .log_path = r.log_path[0] ? r.log_path : NULL,
                    .cols = ptyio_clamp_cols(r.cols)};
    if (squash_new(&so, run_emit, &r, &r.sq) < 0)
        goto nomem;
    r.sq_muted = r.verbatim;
    rc = run_loop(&r);
    run_status_clear(&r);
    run_term_restore(&r);
    if (rc < 0) {
        /* run_free's rein_sup_close ends the child: never left behind. */
        fprintf(stderr, "rein: event loop: %s\n", rein_strerror(rc));
        goto out;
    }
    if (r.log_lost) {
        /* The view's `log` marker says so too; the exit status stays the
         * command's, since the command did not fail. */
        snprintf(r.error, sizeof r.error,
                 "the log is incomplete: %llu bytes of output could not be "
                 "written to it (%s)",
                 (unsigned long long)r.log_lost,
                 rein_strerror(r.log_error ? r.log_error : -EIO));
        squash_log_lost(r.sq, r.log_lost);
        fprintf(stderr, "rein: %s: %s\n", r.log_path, r.error);
    }
    run_summary(&r);
    if (r.mode == MODE_JSON)
        run_json(&r, cmd);
    status = r.exit_code;
    /* Its output is out: now, at most hourly per state dir, the logs and
     * records of old runs go, as the server does; a state dir that only
     * `rein run` uses must not grow without end either. */
    retention_opts_t keep;
    retention_opts_from_env(&keep, RETENTION_DEFAULT_AGE_DAYS,
                            RETENTION_DEFAULT_MAX_BYTES);
    retention_pass_due(r.sup, &keep, NULL);
    goto out;
nomem:
    fprintf(stderr, "rein: out of memory\n");
    status = CLI_EXIT_FAILURE;
out:
    run_term_restore(&r);
    run_free(&r);
    watchman_bye(&r.watchman); /* the command and all it left are ended */
    return status;
}
