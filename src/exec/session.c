/*
 * session.c — the session store of unified exec (see session.h).
 *
 * Ownership: a session is created with its supervisor run and outlives it
 * as long as the store holds it (the model has not seen its exit yet).  It
 * is freed once both are over: not stored, run ended, no waiter.  The
 * supervisor calls us back (output, exit) from inside its read and
 * finalize paths, so those callbacks only record and schedule; waking a
 * waiter and freeing happen on zero-delay timers.
 *
 * Pruning (the LRU) takes only a session no call is using: one whose
 * exec_command, write_stdin or kill_session is in flight has a waiter,
 * and the model is about to be told it runs (or has just been), so
 * ending it would return a session id that is already unknown.  The
 * session a result is being built for has no waiter any more, so it is
 * named to the pruner (session_settle's `except`).  A session settled at
 * spawn (past max_live starting at once) keeps its spawn time as its
 * stamp while its first call waits: it is spared by being in use, not by
 * its stamp.  When every other session is in use or protected the store
 * goes over max_live rather than end one the model is driving, and each
 * call that returns a running session prunes it back; only spawns add
 * sessions, and they stop at session_max_open with REIN_ESESSIONS_FULL,
 * so the store stays bounded whatever the client runs at once.
 *
 * Awaiting input is read from /proc (see exec/awaiting.h): the
 * decision rests on what the kernel says a process is blocked in, so a
 * process that printed "Password:" and went on computing, or one asleep in
 * nanosleep, is never taken for one waiting at a prompt.
 */
#include "exec/session.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vterm.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/headtail.h"
#include "base/loop.h"
#include "base/utf8.h"
#include "exec/awaiting.h"
#include "squash/vt.h"
#include "squash/vtview.h"
#include "supervise/sup.h"
#include "term/answer.h"
#include "term/ptyio.h"

/* Ids of pruned sessions queued for the next result. */
#define SESSION_PRUNED_QUEUE 64

struct session {
    session_store_t *st;
    struct session *next; /* every session, stored or ending */
    int64_t id;
    pid_t pid;
    bool tty;
    char *command, *cwd, *log_path;
    headtail_t *ht;
    unsigned char carry[UTF8_SEQ_MAX]; /* incomplete UTF-8 held back */
    size_t ncarry;
    /* Newlines in the whole stream, and in it before the undelivered
     * output (the carry holds none): counted as the output arrives, so a
     * result can number its lines as the log does even when its middle
     * was never kept. */
    uint64_t newlines, newlines_taken;
    unsigned char last_byte; /* of the stream so far */
    uint64_t lru;
    bool stored, exited, freeing;
    bool starting; /* stored, but not yet counted against max_live */
    int exit_code, signo;
    rein_reason_t reason; /* why the run ended (NONE while it runs) */
    bool cleanup_incomplete, escalated;
    bool leftovers_ended; /* rein_run_info_t.leftovers_ended */
    bool hung_up;         /* rein_run_info_t.leftovers_hung_up > 0 */
    int64_t started_ms, last_output_ms;
    unsigned cols, rows;
    char prompt[SESSION_PROMPT_MAX]; /* the partial last line, raw */
    size_t prompt_len;
    /* A tty's terminal is rein: the answers to the program's queries
     * (term/answer.h), and the screen, once asked for (a screen model
     * that answers nothing). */
    term_answer_t *ans, *screen;
    /* The text a tty's output shows, for results (squash/vtview.h). */
    vtview_t *view;

    /* the waiter */
    session_wake_fn wake_fn;
    void *wake_data;
    session_wake_t wake_why;
    bool wake_due;
    uint64_t t_wake, t_deadline, t_tick, t_free;
    session_pattern_t *re; /* wait_for */
    buf_t window;
    /* On a tty, wait_for reads the text the terminal shows, as results
     * do (vtview.h): this stripper's ended lines go to the window. */
    vt_t *match_vt;
    char wait_error[SESSION_PATTERN_ERR_MAX]; /* SESSION_WAKE_PATTERN's */
    bool detect_input;
    uint64_t wait_bytes0, wait_t0, progress_ms, last_progress;
    void (*progress)(session_t *s, uint64_t bytes, uint64_t waited_ms,
                     void *data);
};

struct session_store {
    rein_sup_t *sup;
    loop_t *loop;
    size_t max_live, protected_n, headtail_cap;
    session_t *all;
    size_t nstored;
    size_t nstarting; /* of them, starting (session_settle) */
    uint64_t clock; /* LRU stamps */
    int64_t pruned[SESSION_PRUNED_QUEUE];
    size_t npruned;
    session_output_fn on_output;
    void *on_output_ud;
};

/* ------------------------------------------------------------ lifetime */

static void session_clear_wait(session_t *s)
{
    loop_t *l = s->st->loop;
    loop_timer_del(l, s->t_wake);
    loop_timer_del(l, s->t_deadline);
    loop_timer_del(l, s->t_tick);
    s->t_wake = s->t_deadline = s->t_tick = 0;
    session_pattern_free(s->re);
    s->re = NULL;
    vt_free(s->match_vt);
    s->match_vt = NULL;
    buf_free(&s->window);
    s->wake_fn = NULL;
    s->wake_data = NULL;
    s->wake_due = false;
    s->progress = NULL;
}

static void session_free(session_t *s)
{
    session_store_t *st = s->st;
    session_clear_wait(s);
    loop_timer_del(st->loop, s->t_free);
    for (session_t **pp = &st->all; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    term_answer_free(s->ans);
    term_answer_free(s->screen);
    vtview_free(s->view);
    headtail_free(s->ht);
    free(s->command);
    free(s->cwd);
    free(s->log_path);
    free(s);
}

static void on_free_due(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    session_t *s = data;
    s->t_free = 0;
    if (s->stored || !s->exited || s->wake_fn)
        return; /* something still needs it; checked again later */
    rein_sup_forget(s->st->sup, s->id);
    session_free(s);
}

/* Frees s soon if nothing needs it any more. */
static void session_maybe_free(session_t *s)
{
    if (s->stored || !s->exited || s->wake_fn || s->t_free)
        return;
    loop_timer_add(s->st->loop, 0, on_free_due, s, &s->t_free);
}

int session_store_new(const session_store_opts_t *o, session_store_t **out)
{
    /* The pruner's and list_sessions' arrays hold session_max_open. */
    if (!o || !o->sup || !out || o->max_live > SESSION_MAX_LIVE)
        return -EINVAL;
    session_store_t *st = calloc(1, sizeof *st);
    if (!st)
        return -ENOMEM;
    st->sup = o->sup;
    st->loop = sup_loop(o->sup);
    st->max_live = o->max_live ? o->max_live : SESSION_MAX_LIVE;
    st->protected_n = o->protected_n ? o->protected_n : SESSION_LRU_PROTECTED;
    st->headtail_cap = o->headtail_cap ? o->headtail_cap
                                       : HEADTAIL_DEFAULT_CAP;
    *out = st;
    return 0;
}

void session_store_free(session_store_t *st)
{
    if (!st)
        return;
    while (st->all) {
        session_t *s = st->all;
        if (s->exited)
            rein_sup_forget(st->sup, s->id);
        else
            sup_run_detach(st->sup, s->id);
        session_free(s);
    }
    free(st);
}

void session_store_set_output_hook(session_store_t *st, session_output_fn fn,
                                   void *ud)
{
    st->on_output = fn;
    st->on_output_ud = ud;
}

size_t session_count(const session_store_t *st)
{
    return st->nstored;
}

size_t session_max_live(const session_store_t *st)
{
    return st->max_live;
}

_Static_assert(SESSION_WARN_LIVE < SESSION_MAX_LIVE, "a warning before the cap");

size_t session_warn_at(const session_store_t *st)
{
    const size_t before = SESSION_MAX_LIVE - SESSION_WARN_LIVE;
    return st->max_live > before ? st->max_live - before : 1;
}

size_t session_max_open(const session_store_t *st)
{
    return 2 * st->max_live;
}

session_t *session_at(const session_store_t *st, size_t i)
{
    /* At most session_max_open stored: a selection pass per call is
     * cheap. */
    uint64_t below = UINT64_MAX;
    session_t *pick = NULL;
    for (size_t k = 0; k <= i; k++) {
        pick = NULL;
        for (session_t *s = st->all; s; s = s->next)
            if (s->stored && s->lru < below && (!pick || s->lru > pick->lru))
                pick = s;
        if (!pick)
            return NULL;
        below = pick->lru;
    }
    return pick;
}

/* -------------------------------------------------------------- waking */

static void on_wake_due(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    session_t *s = data;
    s->t_wake = 0;
    session_wake_fn fn = s->wake_fn;
    void *wd = s->wake_data;
    session_wake_t why = s->wake_why;
    session_clear_wait(s);
    if (fn)
        fn(s, why, wd);
    session_maybe_free(s);
}

/* Wakes the waiter from a zero-delay timer; the first reason wins. */
static void session_wake(session_t *s, session_wake_t why)
{
    if (!s->wake_fn || s->wake_due)
        return;
    s->wake_why = why;
    /* Without a timer (no memory) the wake stays undue, so the next event
     * (output, exit, the deadline) tries again rather than finding it due
     * and never firing. */
    s->wake_due = loop_timer_add(s->st->loop, 0, on_wake_due, s,
                                 &s->t_wake) == 0;
}

/* ------------------------------------------------------ output and exit */

/* Keeps the partial last line (for `prompt`): the bytes after the last
 * newline, at most SESSION_PROMPT_MAX of them (the latest). */
static void session_track_prompt(session_t *s, const unsigned char *p,
                                 size_t n)
{
    const unsigned char *nl = memrchr(p, '\n', n);
    if (nl) {
        s->prompt_len = 0;
        n -= (size_t)(nl + 1 - p);
        p = nl + 1;
    }
    if (n >= SESSION_PROMPT_MAX) {
        memcpy(s->prompt, p + n - SESSION_PROMPT_MAX, SESSION_PROMPT_MAX);
        s->prompt_len = SESSION_PROMPT_MAX;
        return;
    }
    if (s->prompt_len + n > SESSION_PROMPT_MAX) {
        size_t drop = s->prompt_len + n - SESSION_PROMPT_MAX;
        memmove(s->prompt, s->prompt + drop, s->prompt_len - drop);
        s->prompt_len -= drop;
    }
    memcpy(s->prompt + s->prompt_len, p, n);
    s->prompt_len += n;
}

/* Matches wait_for against the new output p with the last
 * SESSION_MATCH_WINDOW bytes before it, so a match split across two reads
 * is found, and every byte of p is searched (a match followed by more
 * than the window in the same read used to be missed); then keeps the
 * window's last bytes for the next read. */
static void session_match(session_t *s, const void *p, size_t n)
{
    if (!s->re || s->wake_due)
        return;
    /* On a tty the window holds the lines as shown, and the line in
     * progress is matched as it stands, then taken off again: it may yet
     * be drawn over. */
    size_t ended = 0;
    if (s->match_vt) {
        const char *t;
        bool binary;
        if (vt_feed(s->match_vt, p, n, 0) < 0)
            return;
        ended = s->window.len;
        size_t k = vt_pending(s->match_vt, &t, &binary);
        if (buf_append(&s->window, t, binary ? 0 : k) < 0)
            return;
    } else if (buf_append(&s->window, p, n) < 0) {
        return;
    }
    int rc = session_pattern_match(s->re, s->window.p, s->window.len,
                                   s->wait_error, sizeof s->wait_error);
    if (s->match_vt) {
        s->window.len = ended;
        if (s->window.p)
            s->window.p[ended] = '\0';
    }
    if (s->window.len > SESSION_MATCH_WINDOW)
        buf_consume(&s->window, s->window.len - SESSION_MATCH_WINDOW);
    if (rc > 0)
        session_wake(s, SESSION_WAKE_MATCH);
    else if (rc < 0) /* it would cost as much at every read: given up */
        session_wake(s, SESSION_WAKE_PATTERN);
}

/* A line the tty's stripper ended, for wait_for's window; a binary one
 * is no text to match. */
static int session_match_line(const sq_line_t *l, void *data)
{
    session_t *s = data;
    if (l->kind == SQ_LINE_BINARY && !l->len)
        return 0;
    if (buf_append(&s->window, l->text, l->len) < 0 ||
        (!l->more && buf_append_byte(&s->window, '\n') < 0))
        return -ENOMEM;
    return 0;
}

static VTerm *session_screen_model(session_t *s);

static void on_run_output(rein_sup_t *sup, int64_t id, const void *data,
                          size_t n, void *ud)
{
    (void)sup;
    (void)id;
    session_t *s = ud;
    headtail_push(s->ht, data, n); /* -ENOMEM: counted as omitted */
    s->newlines += buf_count(data, n, '\n');
    if (n)
        s->last_byte = ((const unsigned char *)data)[n - 1];
    s->last_output_ms = loop_wall_ms();
    session_track_prompt(s, data, n);
    if (s->ans)
        term_answer_feed(s->ans, data, n);
    if (s->screen) {
        term_answer_feed(s->screen, data, n);
    } else if (s->ans && term_answer_alt(s->ans)) {
        /* A full-screen program starts drawing: its screen is modelled
         * from here, while the log still holds the start of the drawing
         * (the log has these bytes already, so the replay covers them). */
        if (session_screen_model(s) && !s->log_path)
            term_answer_feed(s->screen, data, n);
    }
    session_match(s, data, n);
    if (s->st->on_output)
        s->st->on_output(s, data, n, s->st->on_output_ud);
}

static void on_run_exit(rein_sup_t *sup, int64_t id,
                        const rein_run_info_t *info, void *ud)
{
    session_t *s = ud;
    s->exited = true;
    s->exit_code = info->exit_code;
    s->signo = info->signal;
    s->reason = info->reason;
    s->cleanup_incomplete = info->cleanup_incomplete;
    s->leftovers_ended = info->leftovers_ended;
    s->hung_up = info->leftovers_hung_up > 0;
    s->escalated = sup_run_escalated(sup, id);
    session_wake(s, SESSION_WAKE_EXIT);
    session_maybe_free(s);
}

/* ------------------------------------------------------------- the LRU */

int session_lru_victim(const session_lru_entry_t *v, size_t n,
                       size_t protected_n)
{
    if (n <= protected_n)
        return -1;
    /* An entry is protected when fewer than protected_n others are more
     * recent than it. */
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (size_t i = 0; i < n; i++) {
            size_t newer = 0;
            uint64_t mine = v[i].last_used;
            for (size_t k = 0; k < n; k++)
                newer += k != i && (v[k].last_used > mine ||
                                    (v[k].last_used == mine && k > i));
            if (newer < protected_n || v[i].in_use ||
                (pass == 0 && !v[i].exited))
                continue;
            if (best < 0 || v[i].last_used < v[best].last_used)
                best = (int)i;
        }
    return best;
}

/* The session to prune among the settled ones, or NULL when none may go:
 * a session with a waiter is in use (its call is in flight), and so is
 * except (the one a call is returning). */
static session_t *session_victim(session_store_t *st, const session_t *except)
{
    session_lru_entry_t v[SESSION_MAX_LIVE * 2];
    session_t *who[SESSION_MAX_LIVE * 2];
    size_t n = 0;
    for (session_t *s = st->all; s && n < sizeof v / sizeof v[0]; s = s->next)
        if (s->stored && !s->starting) {
            v[n] = (session_lru_entry_t){s->lru, s->exited,
                                         s->wake_fn || s == except};
            who[n++] = s;
        }
    int i = session_lru_victim(v, n, st->protected_n);
    if (i < 0)
        return NULL;
    return who[i];
}

/* Prunes s: ends its run, queues its id for the next result, forgets it.
 * No call waits on it (session_victim), so no call is answered with it. */
static void session_prune(session_t *s)
{
    session_store_t *st = s->st;
    if (st->npruned == SESSION_PRUNED_QUEUE) {
        memmove(st->pruned, st->pruned + 1,
                (SESSION_PRUNED_QUEUE - 1) * sizeof st->pruned[0]);
        st->npruned--;
    }
    st->pruned[st->npruned++] = s->id;
    if (!s->exited)
        rein_sup_cancel(st->sup, s->id, SIGTERM, -1);
    session_release(s);
}

/* Prunes until room more settled sessions fit under max_live, or none may
 * go: every one left is protected or in use (the store stays over
 * max_live until their calls return). */
static void session_trim(session_store_t *st, size_t room,
                         const session_t *except)
{
    while (st->nstored - st->nstarting + room > st->max_live) {
        session_t *s = session_victim(st, except);
        if (!s)
            break;
        session_prune(s);
    }
}

size_t session_take_pruned(session_store_t *st, int64_t *ids, size_t cap)
{
    size_t n = st->npruned < cap ? st->npruned : cap;
    memcpy(ids, st->pruned, n * sizeof *ids);
    memmove(st->pruned, st->pruned + n,
            (st->npruned - n) * sizeof st->pruned[0]);
    st->npruned -= n;
    return n;
}

/* A reply to the program's query (term/answer.h), whole, after the input
 * already queued (rein_sup_write keeps order), so it never lands inside
 * bytes of a write_stdin. */
static void session_answer(const void *reply, size_t n, void *data)
{
    session_t *s = data;
    if (!s->exited)
        rein_sup_write(s->st->sup, s->id, reply, n);
}

int session_spawn(session_store_t *st, const session_spawn_opts_t *o,
                  session_t **out)
{
    int rc = -ENOMEM;
    if (!o || !o->argv || !o->argv[0])
        return -EINVAL;
    /* A starting session takes no place yet, up to max_live of them; past
     * that (a client starting that many at once) it is settled at once. */
    bool starting = o->starting && st->nstarting < st->max_live;
    /* At session_max_open one must go first, starting or not: refused
     * when none may (all in use or protected), before anything runs. */
    bool full = st->nstored >= session_max_open(st);
    if (full && !session_victim(st, NULL))
        return REIN_ESESSIONS_FULL;
    session_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->st = st;
    s->tty = o->tty;
    s->exit_code = -1;
    s->cols = o->tty ? ptyio_clamp_cols(o->cols) : 0;
    s->rows = o->tty ? ptyio_clamp_rows(o->rows) : 0;
    s->command = strdup(o->command ? o->command : o->argv[0]);
    s->cwd = o->cwd ? strdup(o->cwd) : NULL;
    if (!s->command || (o->cwd && !s->cwd) ||
        headtail_new(st->headtail_cap, &s->ht) < 0 ||
        (o->tty && (term_answer_new(s->cols, s->rows, session_answer, s,
                                    &s->ans) < 0 ||
                    vtview_new(&s->view) < 0)))
        goto fail;
    if (s->view)
        vtview_set_cols(s->view, s->cols);
    rein_run_opts_t ro = {
        .argv = o->argv,
        .cwd = o->cwd,
        .env = o->env,
        .tty = o->tty,
        .cols = o->cols,
        .rows = o->rows,
        .keep_stdin = !o->tty,
        .timeout_ms = o->timeout_ms,
        .no_output_timeout_ms = o->idle_timeout_ms,
        .grace_ms = -1,
        .on_output = on_run_output,
        .on_exit = on_run_exit,
        .data = s,
    };
    if ((rc = rein_sup_spawn(st->sup, &ro, &s->id)) < 0)
        goto fail;
    rein_run_info_t info;
    if (rein_sup_info(st->sup, s->id, &info) == 0) {
        s->pid = info.pid;
        s->started_ms = info.started_ms;
        if (info.log_path)
            s->log_path = strdup(info.log_path);
    }
    /* Room for it, once it exists: a spawn that fails prunes nothing.  At
     * session_max_open, held > max_live or room for one more settled
     * makes the trim prune the victim found above. */
    if (!starting || full)
        session_trim(st, starting ? 0 : 1, NULL);
    s->stored = true;
    s->starting = starting;
    st->nstarting += starting;
    s->lru = ++st->clock;
    s->next = st->all;
    st->all = s;
    st->nstored++;
    *out = s;
    return 0;
fail:
    term_answer_free(s->ans);
    vtview_free(s->view);
    headtail_free(s->ht);
    free(s->command);
    free(s->cwd);
    free(s);
    return rc;
}

session_t *session_find(session_store_t *st, int64_t id)
{
    for (session_t *s = st->all; s; s = s->next)
        if (s->stored && s->id == id)
            return s;
    return NULL;
}

void session_touch(session_t *s)
{
    s->lru = ++s->st->clock;
}

void session_settle(session_t *s)
{
    if (s->starting) {
        s->starting = false;
        s->st->nstarting--;
    }
    /* In use now: the victim is another one.  A store over max_live (its
     * other sessions were in use) prunes back here as calls return. */
    session_touch(s);
    if (s->stored)
        session_trim(s->st, 0, s);
}

void session_release(session_t *s)
{
    if (s->starting) {
        s->starting = false;
        s->st->nstarting--;
    }
    if (s->stored) {
        s->stored = false;
        s->st->nstored--;
    }
    session_maybe_free(s);
}

/* ----------------------------------------------------------- accessors */

int64_t session_id(const session_t *s) { return s->id; }
pid_t session_pid(const session_t *s) { return s->pid; }
bool session_tty(const session_t *s) { return s->tty; }
const char *session_command(const session_t *s) { return s->command; }
const char *session_cwd(const session_t *s) { return s->cwd; }
const char *session_log_path(const session_t *s) { return s->log_path; }
bool session_running(const session_t *s) { return !s->exited; }
uint64_t session_bytes(const session_t *s) { return headtail_total(s->ht); }
int64_t session_started_ms(const session_t *s) { return s->started_ms; }
int64_t session_last_output_ms(const session_t *s)
{
    return s->last_output_ms;
}
rein_sup_t *session_sup(const session_t *s) { return s->st->sup; }

void session_exit_info(const session_t *s, int *code, int *signo,
                       bool *cleanup_incomplete, bool *escalated)
{
    if (code)
        *code = s->exit_code;
    if (signo)
        *signo = s->signo;
    if (cleanup_incomplete)
        *cleanup_incomplete = s->cleanup_incomplete;
    if (escalated)
        *escalated = s->escalated;
}

rein_reason_t session_exit_reason(const session_t *s)
{
    return s->reason;
}

bool session_leftovers_ended(const session_t *s)
{
    return s->leftovers_ended;
}

bool session_leftovers_hung_up(const session_t *s)
{
    return s->hung_up;
}

/* ------------------------------------------------------------- output */

/* Bytes at the end of p[0..n) that start a valid but unfinished UTF-8
 * sequence (0..3): held back so a character split across polls is not
 * shown as two U+FFFD. */
static size_t utf8_incomplete_tail(const unsigned char *p, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = p[n - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back */
        size_t need = c >= 0xF0 && c <= 0xF4   ? 4
                      : c >= 0xE0 && c <= 0xEF ? 3
                      : c >= 0xC2 && c <= 0xDF ? 2
                                               : 0;
        return need > back ? back : 0;
    }
    return 0;
}

int session_take_output(session_t *s, buf_t *out, buf_t *raw,
                        session_chunk_t *c)
{
    buf_t shown = BUF_INIT;
    int rc = 0;
    size_t carry = s->ncarry, head = 0;
    uint64_t from = headtail_start(s->ht) - carry;
    uint64_t omitted = headtail_omitted(s->ht);
    uint64_t total = headtail_total(s->ht);
    if (carry && (rc = buf_append(&shown, s->carry, carry)) < 0)
        goto done;
    if ((rc = headtail_render(s->ht, &shown)) < 0)
        goto done;
    if (raw) {
        size_t raw0 = raw->len;
        if ((carry && (rc = buf_append(raw, s->carry, carry)) < 0) ||
            (rc = headtail_render_raw(s->ht, raw, &head)) < 0) {
            raw->len = raw0;
            goto done;
        }
        head += carry;
    }
    headtail_clear(s->ht);
    s->ncarry = 0;
    /* Held back from the end of what is shown: that end is the tail's
     * (or the head's, with nothing omitted), the end of the raw bytes
     * too; after a marker (a tail lost to -ENOMEM) it is a newline and
     * nothing is held. */
    size_t hold = s->exited ? 0
                            : utf8_incomplete_tail((unsigned char *)shown.p,
                                                   shown.len);
    if (hold) {
        memcpy(s->carry, shown.p + shown.len - hold, hold);
        s->ncarry = hold;
        if (raw) {
            raw->len -= hold;
            raw->p[raw->len] = '\0';
        }
    }
    utf8_dec_t d;
    utf8_init(&d);
    if ((rc = utf8_decode(&d, shown.p, shown.len - hold, out)) == 0)
        rc = utf8_finish(&d, out);
    if (c) {
        c->from = from;
        c->bytes = total - from - hold;
        c->omitted = omitted;
        c->head = head;
        /* Bytes held back are part of a character: no newline. */
        c->lines_before = s->newlines_taken;
        c->newlines = s->newlines - s->newlines_taken;
        /* The last byte delivered: the stream's, unless some are held;
         * then the one before them, which is in what is shown. */
        c->ends_line = hold ? shown.len > hold &&
                                  shown.p[shown.len - hold - 1] == '\n'
                            : c->bytes > 0 && s->last_byte == '\n';
    }
    s->newlines_taken = s->newlines;
done:
    buf_free(&shown);
    return rc;
}

/* ------------------------------------------------------ awaiting input */

/* The prompt as the model should read it: the text after the last CR
 * (a redrawn line shows its last frame), escape sequences and control
 * bytes removed. */
static void prompt_clean(const char *p, size_t n, buf_t *out)
{
    const char *cr = memrchr(p, '\r', n);
    while (cr && cr + 1 == p + n && cr > p) /* a trailing CR ends the line */
        cr = memrchr(p, '\r', (size_t)(cr - p));
    if (cr && cr + 1 < p + n) {
        n -= (size_t)(cr + 1 - p);
        p = cr + 1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == 0x1b && i + 1 < n) {
            if (p[i + 1] == '[') { /* CSI: to the final byte */
                i += 2;
                while (i < n && !((unsigned char)p[i] >= 0x40 &&
                                  (unsigned char)p[i] <= 0x7e))
                    i++;
            } else if (p[i + 1] == ']') { /* OSC: to BEL or ST */
                i += 2;
                while (i < n && p[i] != 7 &&
                       !(p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\'))
                    i++;
                if (i < n && p[i] == 0x1b)
                    i++;
            } else {
                i++;
            }
            continue;
        }
        if (c < 0x20 && c != '\t')
            continue;
        if (c == 0x7f)
            continue;
        buf_append_byte(out, c);
    }
}

/* Whether s is blocked waiting for its input (*aw says how); what it
 * printed before blocking is read first. */
static bool session_scan_input(session_t *s, awaiting_t *aw)
{
    struct stat in;
    if (s->exited || sup_run_input(s->st->sup, s->id, &in) < 0 ||
        awaiting_scan(s->pid, s->tty, &in, aw) < 0 || !aw->waiting)
        return false;
    /* What it printed before blocking is in the pipe or the terminal:
     * read it now, so the result shows the prompt it is waiting at. */
    sup_run_drain(s->st->sup, s->id);
    return true;
}

static bool has_visible(const buf_t *b)
{
    for (size_t i = 0; i < b->len; i++)
        if (!isspace((unsigned char)b->p[i]))
            return true;
    return false;
}

static void session_cursor_line(session_t *s, buf_t *out);

/* The prompt, VT-stripped: the partial last line of the output, or on a
 * TTY where that shows nothing, the cursor's row on the screen. */
static void session_prompt_text(session_t *s, buf_t *clean)
{
    prompt_clean(s->prompt, s->prompt_len, clean);
    if (s->tty && !has_visible(clean)) {
        buf_t row = BUF_INIT;
        session_cursor_line(s, &row);
        if (has_visible(&row)) {
            buf_reset(clean);
            buf_append(clean, row.p, row.len);
        }
        buf_free(&row);
    }
}

bool session_check_input(session_t *s, buf_t *prompt)
{
    awaiting_t aw;
    if (!session_scan_input(s, &aw))
        return false;
    if (prompt) {
        buf_t clean = BUF_INIT;
        session_prompt_text(s, &clean);
        utf8_dec_t d;
        utf8_init(&d);
        if (utf8_decode(&d, clean.p, clean.len, prompt) == 0)
            utf8_finish(&d, prompt);
        buf_free(&clean);
    }
    return true;
}

/* Whether the output ends in a prompt: a partial last line with something
 * visible in it (or on a TTY, the cursor's row). */
static bool session_prompt_shown(session_t *s)
{
    buf_t clean = BUF_INIT;
    session_prompt_text(s, &clean);
    bool shown = has_visible(&clean);
    buf_free(&clean);
    return shown;
}

/*
 * Whether a wait ends because the session waits for input.  It does when
 * only input can end the process's wait (a read, or a select/poll/epoll
 * over the input alone: a shell, a REPL, a pager, a password prompt).  A
 * wait that watches other fds too is an event loop's (node, asyncio,
 * ssh): a server reading requests from its stdin sits in it while it
 * works on one, so ending the call then would return before the reply,
 * and every later poll the same.  Such a wait ends the call only once the
 * output ends in a prompt (node's `> `, a remote shell's); otherwise the
 * call waits on for output, wait_for or its yield time, and its result
 * still says `awaiting_input`.  An event loop at rest, with nothing but
 * the input and its own wake-ups to wait on and no timer of its own
 * pending, can only be woken by input (idle node): that ends the call.
 * With a timer pending it does not, since that timer may be the reply's
 * work (a server waiting out a delay).
 */
static bool session_input_wakes(session_t *s)
{
    awaiting_t aw;
    if (!session_scan_input(s, &aw))
        return false;
    return (aw.sole && !(aw.internal && aw.timed)) ||
           session_prompt_shown(s);
}

/* ---------------------------------------------------------------- waits */

static void on_deadline(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    session_t *s = data;
    s->t_deadline = 0;
    session_wake(s, SESSION_WAKE_DEADLINE);
}

static void on_tick(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    session_t *s = data;
    s->t_tick = 0;
    if (s->wake_due || s->exited)
        return;
    if (s->detect_input && session_input_wakes(s)) {
        session_wake(s, SESSION_WAKE_INPUT);
        return;
    }
    uint64_t now = loop_now(l);
    if (s->progress && now - s->last_progress >= s->progress_ms) {
        s->last_progress = now;
        s->progress(s, headtail_total(s->ht) - s->wait_bytes0,
                    now - s->wait_t0, s->wake_data);
    }
    loop_timer_add(l, SESSION_INPUT_CHECK_MS, on_tick, s, &s->t_tick);
}

struct session_pattern {
    char *text; /* as given, for the messages */
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mc;
};

void session_pattern_free(session_pattern_t *p)
{
    if (!p)
        return;
    free(p->text);
    pcre2_match_data_free(p->md);
    pcre2_match_context_free(p->mc);
    pcre2_code_free(p->re);
    free(p);
}

int session_pattern_new(const char *pattern, bool multiline,
                        session_pattern_t **out, char *err, size_t errlen)
{
    int ec;
    PCRE2_SIZE off;
    session_pattern_t *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return -ENOMEM;
    p->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
                              (multiline ? PCRE2_MULTILINE : 0),
                          &ec, &off, NULL);
    if (!p->re) {
        if (err && errlen) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(ec, msg, sizeof msg);
            snprintf(err, errlen, "at offset %zu: %s", (size_t)off,
                     (const char *)msg);
        }
        session_pattern_free(p);
        return -EINVAL;
    }
    const char *jit = getenv("REIN_PCRE2_JIT");
    if (!(jit && !strcmp(jit, "0")))
        (void)pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* else: the
                                                interpreter, same limits */
    p->text = strdup(pattern);
    p->md = pcre2_match_data_create_from_pattern(p->re, NULL);
    p->mc = pcre2_match_context_create(NULL);
    if (!p->text || !p->md || !p->mc) {
        session_pattern_free(p);
        return -ENOMEM;
    }
    pcre2_set_match_limit(p->mc, SESSION_PATTERN_MATCH_LIMIT);
    pcre2_set_depth_limit(p->mc, SESSION_PATTERN_DEPTH_LIMIT);
    pcre2_set_heap_limit(p->mc, SESSION_PATTERN_HEAP_KIB);
    *out = p;
    return 0;
}

int session_pattern_match(session_pattern_t *p, const char *s, size_t n,
                          char *err, size_t errlen)
{
    int rc = pcre2_match(p->re, (PCRE2_SPTR)(s ? s : ""), n, 0, 0, p->md,
                         p->mc);
    if (rc >= 0)
        return 1;
    char limit[64];
    switch (rc) {
    case PCRE2_ERROR_MATCHLIMIT:
        snprintf(limit, sizeof limit, "its match limit (%u steps)",
                 SESSION_PATTERN_MATCH_LIMIT);
        break;
    case PCRE2_ERROR_DEPTHLIMIT:
        snprintf(limit, sizeof limit, "its depth limit (%u)",
                 SESSION_PATTERN_DEPTH_LIMIT);
        break;
    case PCRE2_ERROR_HEAPLIMIT:
        snprintf(limit, sizeof limit, "its memory limit (%u KiB)",
                 SESSION_PATTERN_HEAP_KIB);
        break;
    case PCRE2_ERROR_JIT_STACKLIMIT:
        snprintf(limit, sizeof limit, "the JIT's stack limit");
        break;
    default:
        return 0; /* no match */
    }
    if (err && errlen) {
        size_t len = strlen(p->text);
        snprintf(err, errlen,
                 "the pattern `%.*s%s` reached %s on the output and was "
                 "given up: nested repeats such as (a+)+ or (.*)* backtrack "
                 "without end; write it without them",
                 (int)(len > SESSION_PATTERN_SHOWN ? SESSION_PATTERN_SHOWN
                                                   : len),
                 p->text, len > SESSION_PATTERN_SHOWN ? "..." : "", limit);
    }
    return REIN_EPATTERN_LIMIT;
}

int session_pattern_check(const char *pattern, char *err, size_t errlen)
{
    session_pattern_t *p;
    int rc = session_pattern_new(pattern, true, &p, err, errlen);
    session_pattern_free(p);
    return rc;
}

void *session_waiter(const session_t *s, session_wake_fn fn)
{
    return s->wake_fn == fn ? s->wake_data : NULL;
}

const char *session_wait_error(const session_t *s)
{
    return s->wait_error;
}

int session_wait(session_t *s, const session_wait_opts_t *o,
                 session_wake_fn fn, void *data)
{
    loop_t *l = s->st->loop;
    if (s->wake_fn) {
        /* One waiter at a time: the older call returns what it has. */
        session_wake_fn old = s->wake_fn;
        void *od = s->wake_data;
        session_clear_wait(s);
        old(s, SESSION_WAKE_PREEMPTED, od);
    }
    s->wait_error[0] = '\0';
    if (o->wait_for) {
        int rc = session_pattern_new(o->wait_for, true, &s->re, NULL, 0);
        if (rc == 0 && s->tty)
            rc = vt_new(session_match_line, s, &s->match_vt);
        if (rc < 0) {
            session_pattern_free(s->re);
            s->re = NULL;
            return rc;
        }
    }
    s->wake_fn = fn;
    s->wake_data = data;
    s->detect_input = o->detect_input;
    s->progress = o->progress;
    s->progress_ms = o->progress_ms;
    s->wait_bytes0 = headtail_total(s->ht);
    s->wait_t0 = s->last_progress = loop_now(l);
    if (s->exited) {
        session_wake(s, SESSION_WAKE_EXIT);
        return 0;
    }
    if (s->re) {
        /* Output already waiting may hold the match: its head, then its
         * tail, each on its own (they are not contiguous, and rein's gap
         * line between them is no output a pattern may match). */
        buf_t pending = BUF_INIT;
        size_t head = 0;
        if (headtail_render_raw(s->ht, &pending, &head) == 0 && pending.len) {
            if (!headtail_omitted(s->ht))
                head = pending.len; /* one contiguous stretch */
            session_match(s, pending.p, head);
            if (head < pending.len && !s->wake_due) {
                if (s->match_vt)
                    vt_skip(s->match_vt, 0, 0);
                buf_reset(&s->window);
                session_match(s, pending.p + head, pending.len - head);
            }
        }
        buf_free(&pending);
    }
    loop_timer_add(l, o->timeout_ms, on_deadline, s, &s->t_deadline);
    if (o->detect_input || o->progress)
        loop_timer_add(l, o->first_check_ms ? o->first_check_ms
                                            : SESSION_INPUT_CHECK_MS,
                       on_tick, s, &s->t_tick);
    return 0;
}

void session_wait_expire(session_t *s)
{
    session_wake(s, SESSION_WAKE_DEADLINE);
}

void session_wait_cancel(session_t *s)
{
    session_clear_wait(s);
    session_maybe_free(s);
}

/* -------------------------------------------------------------- screen */

/* Feeds the last SESSION_SCREEN_REPLAY_MAX bytes of the log to the
 * screen. */
static void session_replay(session_t *s)
{
    if (!s->log_path)
        return;
    int fd = open(s->log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        off_t from = st.st_size > (off_t)SESSION_SCREEN_REPLAY_MAX
                         ? st.st_size - (off_t)SESSION_SCREEN_REPLAY_MAX
                         : 0;
        size_t n = (size_t)(st.st_size - from);
        if ((buf = malloc(n))) {
            ssize_t got = pread(fd, buf, n, from);
            if (got > 0)
                term_answer_feed(s->screen, buf, (size_t)got);
        }
    }
    free(buf);
    close(fd);
}

/* The screen model of a TTY session, made on first use from the log's
 * last SESSION_SCREEN_REPLAY_MAX bytes and fed from then on; NULL when
 * out of memory. */
static VTerm *session_screen_model(session_t *s)
{
    if (!s->screen) {
        if (term_answer_new(s->cols, s->rows, NULL, NULL, &s->screen) < 0)
            return NULL;
        VTermScreen *scr = vterm_obtain_screen(term_answer_vterm(s->screen));
        /* Two buffers, as a terminal has: the alternate screen starts
         * blank, whatever the normal one shows, and leaving it brings
         * the normal one back. */
        vterm_screen_enable_altscreen(scr, 1);
        vterm_screen_reset(scr, 1);
        session_replay(s);
    }
    return term_answer_vterm(s->screen);
}

/* Appends row r of the screen, its first `cols` cells, as UTF-8; returns
 * the length of out up to its last cell with something in it. */
static size_t screen_row(VTermScreen *scr, int r, int cols, buf_t *out)
{
    size_t keep = out->len;
    for (int c = 0; c < cols; c++) {
        VTermScreenCell cell;
        if (!vterm_screen_get_cell(scr, (VTermPos){r, c}, &cell))
            continue;
        if (cell.chars[0] == 0) {
            if (cell.width != 0)
                buf_append_byte(out, ' ');
            continue;
        }
        for (int k = 0; k < VTERM_MAX_CHARS_PER_CELL && cell.chars[k]; k++) {
            char u[UTF8_SEQ_MAX];
            buf_append(out, u, utf8_encode(cell.chars[k], u));
        }
        keep = out->len;
        if (cell.width > 1)
            c += cell.width - 1;
    }
    return keep;
}

int session_screen(session_t *s, buf_t *out)
{
    if (!s->tty)
        return -ENOTTY;
    VTerm *vt = session_screen_model(s);
    if (!vt)
        return -ENOMEM;
    VTermScreen *scr = vterm_obtain_screen(vt);
    int rows, cols;
    vterm_get_size(vt, &rows, &cols);
    for (int r = 0; r < rows; r++) {
        size_t line_start = out->len;
        size_t keep = screen_row(scr, r, cols, out);
        /* Trailing blanks are the empty rest of the row. */
        out->len = keep > line_start ? keep : line_start;
        while (out->len > line_start && out->p[out->len - 1] == ' ')
            out->len--;
        if (out->p)
            out->p[out->len] = 0;
        buf_append_byte(out, '\n');
    }
    /* Blank rows at the bottom say nothing. */
    while (out->len >= 2 && out->p[out->len - 1] == '\n' &&
           out->p[out->len - 2] == '\n')
        out->p[--out->len] = 0;
    return 0;
}

bool session_alt_screen(const session_t *s)
{
    return s->ans && term_answer_alt(s->ans);
}

vtview_t *session_view(session_t *s)
{
    return s->view;
}

uint64_t session_alt_since(const session_t *s)
{
    return s->ans ? term_answer_alt_since(s->ans) : UINT64_MAX;
}

size_t session_alt_spans(const session_t *s, uint64_t after,
                         uint64_t (*spans)[2], size_t max)
{
    /* The model is fed every byte from the first, as the log is. */
    return s->ans ? term_answer_alt_spans(s->ans, after, spans, max) : 0;
}

/* A TTY session's row at the cursor, up to the cursor, from the screen:
 * the prompt of a program that drew it and then moved on, as IPython
 * (prompt_toolkit) does once it knows where its cursor is, printing empty
 * lines below the prompt to make room for its menus and going back up. */
static void session_cursor_line(session_t *s, buf_t *out)
{
    VTerm *vt = session_screen_model(s);
    if (!vt)
        return;
    VTermPos pos;
    vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
    screen_row(vterm_obtain_screen(vt), pos.row, pos.col, out);
}

void session_size(const session_t *s, unsigned *cols, unsigned *rows)
{
    *cols = s->cols;
    *rows = s->rows;
}

int session_resize(session_t *s, unsigned cols, unsigned rows)
{
    if (!s->tty)
        return -ENOTTY;
    if (s->exited)
        return REIN_ENOTRUNNING;
    int rc = rein_sup_resize(s->st->sup, s->id, cols, rows);
    if (rc < 0)
        return rc;
    s->cols = ptyio_clamp_cols(cols);
    s->rows = ptyio_clamp_rows(rows);
    if (s->ans)
        term_answer_resize(s->ans, s->cols, s->rows);
    if (s->screen)
        term_answer_resize(s->screen, s->cols, s->rows);
    if (s->view)
        vtview_set_cols(s->view, s->cols);
    return 0;
}
