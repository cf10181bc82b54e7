/*
 * session.h — the sessions an agent drives (unified exec): a store of
 * supervisor runs, each with its undelivered output, polled by the model.
 *
 * A session is one supervisor run (rein_sup_spawn) plus what the model
 * needs between its calls:
 *
 *   - a head+tail buffer (headtail.h, 1 MiB) of output not yet delivered,
 *     so each byte reaches the model once across polls, while the run's log
 *     file keeps every byte;
 *   - a waiter: one call at a time collecting output until a deadline, a
 *     `wait_for` match, the run's exit, or the run blocking on input;
 *   - awaiting-input detection from kernel state (see
 *     exec/awaiting.h), never from the text alone;
 *   - on a tty, rein as the terminal: the replies to the program's
 *     queries (cursor position, device attributes: term/answer.h), from
 *     a screen model fed from the start;
 *   - an LRU stamp: the store holds at most max_live sessions; at the cap
 *     the least recently used one is pruned, never one of the
 *     protected_n most recently used, exited ones first (Codex's rule),
 *     and never one a call is using (it has a waiter: its exec_command,
 *     write_stdin or kill_session is in flight) nor the one a call is
 *     returning.  When every other one is in use the store goes over
 *     max_live for as long as those calls last, and prunes back to it as
 *     they return (session_settle); at twice max_live open, held and
 *     starting, with none that may go, a new session is refused.
 *
 * A session stays in the store until its exit has been reported to the
 * model (session_release); after that it is unknown to the store, while its
 * log stays on disk for read_output.
 *
 * Every wait is a loop timer; every wake-up of a waiter is deferred to a
 * zero-delay timer, so a waiter's callback never runs inside the
 * supervisor's read or exit path and may call anything here.
 */
#ifndef REIN_EXEC_SESSION_H
#define REIN_EXEC_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/buf.h"
#include "rein.h"
#include "squash/vtview.h"

/* Sessions held at once, and how many of the most recently used are never
 * pruned (Codex's MAX_SESSIONS and LRU_PROTECTED_COUNT).  A store's
 * max_live is at most SESSION_MAX_LIVE; it may hold as many starting ones
 * besides (session_max_open). */
#define SESSION_MAX_LIVE 64
#define SESSION_LRU_PROTECTED 8
/* From this many sessions held on, a result that leaves one running warns
 * that the oldest will soon be pruned (Codex's WARNING_SESSIONS): this
 * many below the cap (SESSION_MAX_LIVE - SESSION_WARN_LIVE) for a store
 * opened with another max_live (session_warn_at). */
#define SESSION_WARN_LIVE 60
/* Awaiting input is looked for at most this often during a wait. */
#define SESSION_INPUT_CHECK_MS 100
/* The partial last line kept for `prompt`. */
#define SESSION_PROMPT_MAX 256
/* wait_for is matched against each read in full, with this much of the
 * output before it, so a match may span reads without rescanning
 * megabytes. */
#define SESSION_MATCH_WINDOW (16u * 1024u)
/*
 * Bounds on one match of an agent's pattern (wait_for, read_output's grep)
 * against one stretch of output: PCRE2's match limit (backtracking steps;
 * JIT counts them too), depth limit (nested backtracking) and heap limit
 * (KiB for the interpreter's frames), where PCRE2's own defaults allow 10
 * million steps and 20 GiB.  Ordinary patterns take a few thousand steps
 * on a full window; one that backtracks without end -- `(a+)+$` against a
 * long run of a's -- reaches the limit in about 15 ms (1 ms with JIT) and
 * is given up with an error naming it, instead of holding the server's
 * loop at every read of output or every line of a log.
 */
#define SESSION_PATTERN_MATCH_LIMIT 1000000u
#define SESSION_PATTERN_DEPTH_LIMIT 10000u
#define SESSION_PATTERN_HEAP_KIB (16u * 1024u)
/* Room for the sentence saying a pattern was given up, and for the pattern
 * in it (a longer one is cut, with "..."). */
#define SESSION_PATTERN_ERR_MAX 320
#define SESSION_PATTERN_SHOWN 120

/* Bytes of a TTY session's log replayed into a new screen. */
#define SESSION_SCREEN_REPLAY_MAX (1u << 20)

typedef struct session_store session_store_t;
typedef struct session session_t;

typedef struct session_store_opts {
    rein_sup_t *sup;     /* required; its loop runs every timer */
    size_t max_live;     /* 0: SESSION_MAX_LIVE; at most that */
    size_t protected_n;  /* 0: SESSION_LRU_PROTECTED */
    size_t headtail_cap; /* 0: HEADTAIL_DEFAULT_CAP */
} session_store_opts_t;

/* Called for every output chunk of every session (raw bytes). */
typedef void (*session_output_fn)(session_t *s, const void *data, size_t n,
                                  void *ud);

/* Creates a store.  0, -EINVAL (no sup, or max_live over
 * SESSION_MAX_LIVE) or -ENOMEM. */
int session_store_new(const session_store_opts_t *o, session_store_t **out);
/* Detaches every run from its session (the runs go on until the
 * supervisor ends them) and frees the store.  NULL is a no-op. */
void session_store_free(session_store_t *st);
void session_store_set_output_hook(session_store_t *st, session_output_fn fn,
                                   void *ud);
/* Sessions in the store now. */
size_t session_count(const session_store_t *st);
/* The most sessions the store holds (its max_live), and the count from
 * which a result warns of pruning: SESSION_WARN_LIVE at the default cap,
 * as far below any other cap, and at least 1. */
size_t session_max_live(const session_store_t *st);
size_t session_warn_at(const session_store_t *st);
/* The most sessions open at once, held and starting: twice max_live (up
 * to max_live starting beyond the max_live held).  Past it a spawn that
 * can prune none is refused (REIN_ESESSIONS_FULL). */
size_t session_max_open(const session_store_t *st);
/* The i-th stored session, most recently used first; NULL past the end. */
session_t *session_at(const session_store_t *st, size_t i);

typedef struct session_spawn_opts {
    const char *const *argv; /* required */
    const char *command;     /* what the model asked to run (for listings) */
    const char *cwd;         /* absolute */
    const char *const *env;  /* "NAME=value" over the environment */
    bool tty;
    unsigned cols, rows;
    uint32_t timeout_ms, idle_timeout_ms; /* 0: none */
    /* The session takes its place in the store only at session_settle
     * (its first result found it running), so a command that exits
     * within its first yield prunes nothing (Codex's rule: it never
     * touches the store).  Until then it is neither counted against
     * max_live nor pruned.  At most max_live start at once; past that a
     * session is settled from the start (it may prune another then, but
     * is itself never pruned while a call waits on it). */
    bool starting;
} session_spawn_opts_t;

/* Starts a session, pruning one when the store is full (its id is then
 * queued for session_take_pruned) unless it is starting.  At
 * session_max_open sessions open it prunes one even for a starting
 * session, and when none may go (all in use or protected) starts nothing
 * and returns REIN_ESESSIONS_FULL.  0, that, -EINVAL, -ENOMEM or the
 * supervisor's error; a session that failed to start prunes nothing. */
int session_spawn(session_store_t *st, const session_spawn_opts_t *o,
                  session_t **out);
/* A call is returning s still running (or gave up waiting on it): marks
 * it used now, gives a starting session its place in the store, and
 * prunes the least recently used ones no call is using while the store
 * is over max_live -- never s itself.  The pruned ids are queued for
 * session_take_pruned. */
void session_settle(session_t *s);
/* Moves up to cap ids pruned since the last call into ids; returns the
 * count taken. */
size_t session_take_pruned(session_store_t *st, int64_t *ids, size_t cap);
/* A stored session by id, or NULL (unknown, or its exit was reported). */
session_t *session_find(session_store_t *st, int64_t id);
/* Marks s used now (LRU). */
void session_touch(session_t *s);
/* Removes s from the store (its exit has been reported, or it is being
 * dropped); it is freed as soon as its run has ended. */
void session_release(session_t *s);

/* Which of the entries to prune: the least recently used one that is not
 * among the protected_n most recently used (in use or not) and that no
 * call is using, an exited one first.  -1 when none may go. */
typedef struct session_lru_entry {
    uint64_t last_used;
    bool exited;
    bool in_use; /* a call waits on it, or is returning it */
} session_lru_entry_t;
int session_lru_victim(const session_lru_entry_t *v, size_t n,
                       size_t protected_n);

/* ------------------------------------------------------------- accessors */

int64_t session_id(const session_t *s);
pid_t session_pid(const session_t *s);
bool session_tty(const session_t *s);
const char *session_command(const session_t *s);
const char *session_cwd(const session_t *s);
/* The run's log file, or NULL (ephemeral supervisor). */
const char *session_log_path(const session_t *s);
bool session_running(const session_t *s);
/* After the exit: the code (a signal death is 128+signo), the signal (0:
 * none), whether cleanup was incomplete, whether SIGKILL was needed. */
void session_exit_info(const session_t *s, int *code, int *signo,
                       bool *cleanup_incomplete, bool *escalated);
/* Why the run ended: its own exit or signal, a timeout, a kill...
 * REIN_REASON_NONE while it runs. */
rein_reason_t session_exit_reason(const session_t *s);
/* After the exit: whether processes the command left running (`server &`)
 * were ended with it (rein_run_info_t.leftovers_ended). */
bool session_leftovers_ended(const session_t *s);
/* After the exit: whether the terminal's hangup killed processes the
 * command left running as it exited (rein_run_info_t.leftovers_hung_up). */
bool session_leftovers_hung_up(const session_t *s);
/* Output bytes so far, wall-clock start and last output (ms; 0: none). */
uint64_t session_bytes(const session_t *s);
int64_t session_started_ms(const session_t *s);
int64_t session_last_output_ms(const session_t *s);
rein_sup_t *session_sup(const session_t *s);

/* ---------------------------------------------------------------- waiting */

typedef enum session_wake {
    SESSION_WAKE_DEADLINE = 0,
    SESSION_WAKE_EXIT,      /* the run ended; its output is complete */
    SESSION_WAKE_MATCH,     /* wait_for matched */
    SESSION_WAKE_INPUT,     /* the run is blocked reading its input */
    SESSION_WAKE_PREEMPTED, /* another wait started on the session */
    SESSION_WAKE_PATTERN,   /* wait_for reached a match limit: given up
                               (session_wait_error says which) */
} session_wake_t;

typedef void (*session_wake_fn)(session_t *s, session_wake_t why, void *data);

typedef struct session_wait_opts {
    uint64_t timeout_ms;     /* the deadline */
    const char *wait_for;    /* a PCRE2 pattern, or NULL */
    bool detect_input;       /* wake when blocked on input */
    uint64_t first_check_ms; /* first input check after this long */
    /* Progress: called once per progress_ms (give or take a tick) for as
     * long as the wait lasts, with the bytes received and the milliseconds
     * waited since it began — silent waits too, since a client's request
     * timeout may only be kept back by a notification (NULL: none). */
    void (*progress)(session_t *s, uint64_t bytes, uint64_t waited_ms,
                     void *data);
    uint64_t progress_ms;
} session_wait_opts_t;

/* Validates a wait_for pattern: 0, or -EINVAL with a message in err. */
int session_pattern_check(const char *pattern, char *err, size_t errlen);

/* An agent's pattern, compiled as wait_for and grep match it: UTF, invalid
 * UTF matched as bytes, ^ and $ at every line when multiline; JIT-compiled
 * where PCRE2 can, unless REIN_PCRE2_JIT=0 (valgrind cannot follow JIT
 * code).  Matched with session_pattern_match under the limits above. */
typedef struct session_pattern session_pattern_t;
/* 0, -EINVAL (with a message in err) or -ENOMEM. */
int session_pattern_new(const char *pattern, bool multiline,
                        session_pattern_t **out, char *err, size_t errlen);
void session_pattern_free(session_pattern_t *p);
/* 1 for a match, 0 for none, or REIN_EPATTERN_LIMIT when a limit was
 * reached, with the sentence saying so (the pattern and the limit named)
 * in err. */
int session_pattern_match(session_pattern_t *p, const char *s, size_t n,
                          char *err, size_t errlen);
/* Why the last wait on s woke with SESSION_WAKE_PATTERN ("" otherwise). */
const char *session_wait_error(const session_t *s);
/* Starts waiting; fn runs exactly once (unless session_wait_cancel), never
 * from inside this call.  A wait already running on s is woken with
 * SESSION_WAKE_PREEMPTED.  0, -EINVAL (bad pattern) or -ENOMEM. */
int session_wait(session_t *s, const session_wait_opts_t *o,
                 session_wake_fn fn, void *data);
/* Ends the wait without calling its function. */
void session_wait_cancel(session_t *s);
/* The data of the wait on s when its function is fn, else NULL: a front
 * end telling its own kinds of waiting call apart. */
void *session_waiter(const session_t *s, session_wake_fn fn);
/* Ends the wait now, as if its deadline had come (its function runs from
 * the loop with SESSION_WAKE_DEADLINE); a no-op without a wait. */
void session_wait_expire(session_t *s);

/* What session_take_output delivered. */
typedef struct session_chunk {
    uint64_t from;    /* stream offset of the first byte */
    uint64_t bytes;   /* stream bytes delivered, omitted ones included */
    uint64_t omitted; /* of those, dropped from memory (in the log only) */
    size_t head;      /* raw bytes before the omitted ones (all of them
                         when none were omitted) */
    uint64_t lines_before; /* newlines in the stream before `from` */
    uint64_t newlines;     /* newlines in the bytes delivered, omitted
                              ones included (counted as they arrived) */
    bool ends_line;        /* the last byte delivered is a newline */
} session_chunk_t;

/* Appends the undelivered output to out as valid UTF-8 (invalid bytes as
 * U+FFFD; an incomplete character at the end of a running session's output
 * is held for the next call), with a marker where the middle was dropped.
 * raw (may be NULL) receives the same bytes as they were, without the
 * marker: stream bytes [from, from + head) then, when some were omitted,
 * the ones after them up to from + bytes.  Each byte is delivered once.
 * 0 or -ENOMEM. */
int session_take_output(session_t *s, buf_t *out, buf_t *raw,
                        session_chunk_t *c);

/* Checks now whether the session is blocked reading its input
 * (awaiting_scan: any wait on it, shared or timed too); *prompt (may be
 * NULL) receives the partial last line, VT-stripped, or on a tty where
 * that shows nothing, the cursor's row of the screen up to the cursor. */
bool session_check_input(session_t *s, buf_t *prompt);

/* Renders the terminal screen of a TTY session (libvterm, created on the
 * first call, or when the program first switches to the alternate screen,
 * from the log's last SESSION_SCREEN_REPLAY_MAX bytes and fed from then
 * on) as text lines.  -ENOTTY for a pipe session. */
int session_screen(session_t *s, buf_t *out);
/* Whether a TTY session's program has the terminal on its alternate
 * screen: a full-screen program's display (term_answer_alt).  False for a
 * pipe session. */
bool session_alt_screen(const session_t *s);
/* A TTY session's view of its output as the text the terminal shows
 * (squash/vtview.h), for its results to feed or step over, every byte in
 * order; NULL for a pipe session. */
vtview_t *session_view(session_t *s);
/* Where in the log a TTY session's program switched to the alternate
 * screen it is on (term_answer_alt_since); UINT64_MAX when it is not on
 * it, or for a pipe session. */
uint64_t session_alt_since(const session_t *s);
/* The stays of a TTY session's program on its alternate screen that
 * ended after log offset `after`, oldest first (term_answer_alt_spans:
 * spans[i][0] where the switch to it began, spans[i][1] the byte after the
 * switch back); 0 for a pipe session.  Returns how many. */
size_t session_alt_spans(const session_t *s, uint64_t after,
                         uint64_t (*spans)[2], size_t max);
/* Resizes a TTY session (and its screen).  0 or a negative code. */
int session_resize(session_t *s, unsigned cols, unsigned rows);
/* The terminal's size as last set (clamped). */
void session_size(const session_t *s, unsigned *cols, unsigned *rows);

#endif
