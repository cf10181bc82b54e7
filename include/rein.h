/*
 * rein.h — the public C API of librein, the process runtime under rein.
 *
 * rein runs commands and long-lived sessions (PTY or pipes) for an AI coding
 * agent, owns every process it starts, keeps every byte of output, and turns
 * terminal input into named keys and back.  This header is the only public
 * one; every struct behind a handle is defined in its .c file.
 *
 * Conventions, the same everywhere:
 *   - Functions return 0 (or a non-negative count) on success and a negative
 *     error code on failure: -errno for system errors, or one of the REIN_E*
 *     codes of the table below.  rein_strerror() names either kind.
 *   - Results come back through out-parameters.  A NULL handle or
 *     out-parameter is -EINVAL, never a crash.  The exceptions say so at
 *     their declaration: functions that return a pid, a status or a bool,
 *     and the key functions, whose buffers follow their size (a NULL or
 *     too small buffer is REIN_ETOOSMALL) and whose "is it a key" answers
 *     are 0 for a NULL out-parameter.
 *   - rein_xxx_free(NULL) is a no-op.  Memory handed to the caller is
 *     released with the matching _free function, or rein_free() for plain
 *     buffers.
 *   - Synchronous calls that run a process take a streaming callback, which
 *     receives output as valid UTF-8 (invalid bytes become U+FFFD), and an
 *     optional cancel token.
 */
#ifndef REIN_H
#define REIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REIN_VERSION_MAJOR 0
#define REIN_VERSION_MINOR 1
#define REIN_VERSION_PATCH 0
#define REIN_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- errors */

/*
 * rein's own error codes: X(NAME, value, message).  Values sit below -1000
 * so they never collide with -errno.  One table gives the enum, the message
 * (rein_strerror) and the name (rein_err_name).
 */
#define REIN_ERROR_MAP(X)                                                   \
    X(EINTERNAL, -1000, "internal error")                                   \
    X(ETOOSMALL, -1001, "buffer too small")                                 \
    X(EPTY_RUNNING, -1002, "PTY session already running")                   \
    X(EPTY_IDLE, -1003, "PTY session is not running")                       \
    X(ESHELL_INIT, -1004, "Failed to initialize shell")                     \
    X(ECWD, -1005, "Failed to set cwd")                                     \
    X(ESNAPSHOT, -1006, "Failed to source snapshot")                        \
    X(ESHELL_EXEC, -1007, "Shell execution failed")                         \
    X(ESHELL_BUSY, -1008, "shell session already running a command")        \
    X(EBASE64, -1009, "malformed base64")                                   \
    X(EKEY, -1010, "unknown key name")                                      \
    X(ESTALE, -1011, "process identity changed (pid reused)")              \
    X(EENV, -1012, "malformed environment entry (expected NAME=value)")   \
    X(ENOTRUNNING, -1013, "process is not running")                        \
    X(ENORUN, -1014, "no such run")                                         \
    X(EREGISTRY, -1015, "the run registry cannot be written")             \
    X(ECONTAIN, -1016, "the requested containment level is not available") \
    X(EINPUT_CLOSED, -1017, "stdin was already closed at rein's end")    \
    X(EPATTERN_LIMIT, -1018, "a regular expression reached its match limit") \
    X(ESESSIONS_FULL, -1019, "the session store is full; none may be pruned")

typedef enum rein_err {
#define REIN_ERR_ENUM_(name, value, msg) REIN_##name = (value),
    REIN_ERROR_MAP(REIN_ERR_ENUM_)
#undef REIN_ERR_ENUM_
} rein_err_t;

/* The message for any code rein returns: its own or -errno.  Never NULL. */
const char *rein_strerror(int err);
/* The symbolic name ("EPTY_RUNNING", "ENOENT"); "OK" for 0, as
 * rein_strerror says "success"; "EUNKNOWN" when unknown. */
const char *rein_err_name(int err);

/* Releases a buffer that rein allocated for the caller.  NULL is a no-op. */
void rein_free(void *p);

/* ---------------------------------------------------------------- cancel */

/*
 * A cancel token: a one-way flag a caller raises to stop a running call.
 * rein_cancel_trigger() is safe from any thread and from a signal handler.
 * One token may be shared by several calls; once triggered it stays so.
 */
typedef struct rein_cancel rein_cancel_t;

/* A new token, not triggered.  -ENOMEM, or -errno when no eventfd can be
 * made (a token can wake a call blocked in the kernel). */
int rein_cancel_new(rein_cancel_t **out);
/* Raises the flag; every call using the token returns -ECANCELED or a
 * cancelled result soon after.  A call given a token already raised
 * starts nothing: rein_shell_exec, rein_shell_run and rein_pty_start
 * return a cancelled result at once (a persistent session is kept: it ran
 * nothing).  Repeats are no-ops. */
void rein_cancel_trigger(rein_cancel_t *c);
/* Whether the flag has been raised. */
bool rein_cancel_triggered(const rein_cancel_t *c);
/* Frees the token; no call may still be using it. */
void rein_cancel_free(rein_cancel_t *c);

/* Receives output: a chunk of valid UTF-8, not NUL-terminated. */
typedef void (*rein_chunk_fn)(const char *text, size_t len, void *data);

/* How a run ended.  has_exit_code is false when cancelled or timed out. */
typedef struct rein_run_result {
    bool has_exit_code;
    int exit_code; /* the exit status, or 128 + signal number */
    bool cancelled;
    bool timed_out;
} rein_run_result_t;

/* ----------------------------------------------------------------- shell */

/*
 * Shell execution: /bin/bash --noprofile --norc, stdout and stderr merged.
 * A persistent shell keeps cwd, variables and functions between runs.
 */
typedef struct rein_shell rein_shell_t;

typedef struct rein_shell_opts {
    const char *const *session_env; /* "NAME=value"..., NULL-terminated, or NULL */
    const char *snapshot_path;      /* sourced at creation, stdio on /dev/null */
} rein_shell_opts_t;

typedef struct rein_shell_run_opts {
    const char *command;     /* required */
    const char *cwd;         /* NULL: unchanged */
    const char *const *env;  /* command-scoped "NAME=value", popped after */
    uint32_t timeout_ms;     /* 0: none */
    rein_cancel_t *cancel;   /* optional */
    rein_chunk_fn on_chunk;  /* optional */
    void *data;              /* passed to on_chunk */
} rein_shell_run_opts_t;

/* Grace between TERM and KILL when a shell run is cancelled or times out. */
#define REIN_SHELL_GRACE_MS 2000
/* After the foreground command ends: drain until EOF, this long idle ... */
#define REIN_SHELL_DRAIN_IDLE_MS 250
/* ... or this long in all. */
#define REIN_SHELL_DRAIN_MAX_MS 2000

/* One-shot: a fresh shell for one command, dropped afterwards.  After the
 * drain, processes of its session still running (background jobs) are
 * terminated: TERM, REIN_SHELL_GRACE_MS, KILL. */
int rein_shell_exec(const rein_shell_opts_t *opts,
                    const rein_shell_run_opts_t *run,
                    rein_run_result_t *result);

/* A persistent shell session; the shell itself starts with the first run.
 * REIN_EENV for a session_env entry that is not NAME=value. */
int rein_shell_new(const rein_shell_opts_t *opts, rein_shell_t **out);
/* Runs one command in the session (created lazily on first run).  A
 * cancelled, timed-out or failed run (REIN_ECWD included), or one that
 * exits the shell, drops the session; the next run starts a fresh one.
 * `$?` carries: a command starts with it set to the previous run's exit
 * status, 0 in a fresh session (after a snapshot too); PIPESTATUS then
 * holds that one status.  REIN_EENV for a command-scoped env entry bash
 * cannot export, or one the session sets around its own lines (__rein_*,
 * POSIXLY_CORRECT, FUNCNEST).
 * Output: what the command and its jobs write until EOF or the drain
 * windows above; a job's output after that comes with a later run. */
int rein_shell_run(rein_shell_t *sh, const rein_shell_run_opts_t *run,
                   rein_run_result_t *result);
/* Aborts the running command, if any; succeeds when nothing runs.
 * Safe from another thread or from the chunk callback. */
int rein_shell_abort(rein_shell_t *sh);
/* Ends the shell and its jobs (TERM, REIN_SHELL_GRACE_MS, KILL) and frees
 * the session.  Not while a run is in progress: that is a caller bug, and
 * the call then does nothing. */
void rein_shell_free(rein_shell_t *sh);

/* ------------------------------------------------------------------- pty */

/* A PTY session: one command at a time on a fresh pseudo-terminal. */
typedef struct rein_pty rein_pty_t;

#define REIN_PTY_DEFAULT_COLS 120
#define REIN_PTY_DEFAULT_ROWS 40
#define REIN_PTY_MIN_COLS 20
#define REIN_PTY_MAX_COLS 400
#define REIN_PTY_MIN_ROWS 5
#define REIN_PTY_MAX_ROWS 200
/* Drain windows after the child exits or after a kill. */
#define REIN_PTY_EXIT_DRAIN_MS 300
#define REIN_PTY_KILL_DRAIN_MS 300
/* The longest one rein_pty_write waits, in all, for room in the
 * terminal's input queue (a child that does not read its input). */
#define REIN_PTY_WRITE_TIMEOUT_MS 5000
/* The most bytes writes from the chunk callback may leave queued for the
 * terminal (they never wait: waiting there would stop the reading). */
#define REIN_PTY_WRITE_QUEUE_MAX (1024u * 1024u)

typedef struct rein_pty_start_opts {
    const char *command;    /* required; run as <shell> -lc <command> */
    const char *cwd;        /* NULL: inherited */
    const char *const *env; /* "NAME=value" over the inherited environment */
    uint32_t timeout_ms;    /* 0: none */
    rein_cancel_t *cancel;  /* optional */
    unsigned cols, rows;    /* 0: defaults; clamped */
    const char *shell;      /* NULL: "sh" */
    rein_chunk_fn on_chunk; /* optional */
    void *data;
    /* true: rein answers the command's terminal queries (cursor position,
     * device attributes: docs/api.md) as a terminal would, from a screen
     * model fed all the output (about 10 ms of CPU a MB).  false: the
     * host answers them, or nobody does (the seed's PTY), as when it
     * renders the output in a terminal emulator that writes its replies
     * back with rein_pty_write. */
    bool answer;
} rein_pty_start_opts_t;

/* A PTY session with nothing running, size REIN_PTY_DEFAULT_COLS x
 * REIN_PTY_DEFAULT_ROWS. */
int rein_pty_new(rein_pty_t **out);
/* Runs the command to completion; REIN_EPTY_RUNNING if one already runs.
 * write/resize/kill are valid from the moment start is entered, from the
 * chunk callback or another thread. */
int rein_pty_start(rein_pty_t *p, const rein_pty_start_opts_t *opts,
                   rein_run_result_t *result);
/* Writes all of data to the terminal, as typed: the line discipline echoes
 * and interprets it (^C, ^D).  REIN_EPTY_IDLE when nothing runs;
 * -ETIMEDOUT when it found the input queue full and data was still not
 * all written REIN_PTY_WRITE_TIMEOUT_MS later (part of it may have been);
 * -EIO when the command ended meanwhile (a kill from another thread ends a
 * waiting write that way).  Called while start is still setting up, it
 * waits for the terminal to exist.  From the chunk callback it never
 * waits, not even for another thread's write that waits for room (its
 * bytes then follow all of that write's): what the terminal cannot take
 * at once is queued and written, in order, as room comes; -ENOBUFS (nothing queued) when that would leave
 * more than REIN_PTY_WRITE_QUEUE_MAX bytes waiting.  (A write from another
 * thread may go out before bytes the callback left queued.) */
int rein_pty_write(rein_pty_t *p, const void *data, size_t len);
/* Sets the terminal size, clamped as at start, except that 0 is below
 * the minimum here (20 columns, 5 rows), not the default; the foreground
 * job gets SIGWINCH.  REIN_EPTY_IDLE when nothing runs; while start is still
 * setting up, it waits for the terminal to exist. */
int rein_pty_resize(rein_pty_t *p, unsigned cols, unsigned rows);
/* Ends the running command and its descendants (TERM, grace, KILL); start
 * then returns a cancelled result after REIN_PTY_KILL_DRAIN_MS of drain.
 * Returns at once; REIN_EPTY_IDLE when nothing runs. */
int rein_pty_kill(rein_pty_t *p);
/* Frees an idle session.  Not while start runs: that is a caller bug, and
 * the call then does nothing. */
void rein_pty_free(rein_pty_t *p);

/* --------------------------------------------------------------- process */

/*
 * A process on this machine, held by identity: a pidfd plus the start time
 * from /proc/<pid>/stat.  Nothing is ever signalled once the pid has been
 * reused by another process.
 */
typedef struct rein_proc rein_proc_t;

typedef enum rein_proc_status {
    REIN_PROC_RUNNING = 0,
    REIN_PROC_EXITED = 1,
} rein_proc_status_t;

typedef struct rein_proc_terminate_opts {
    bool group;       /* signal the process group too */
    int graceful_ms;  /* default 1000; < 0 skips the graceful phase */
    int timeout_ms;   /* wait after the hard kill; default 5000 */
    int signal;       /* graceful signal; default SIGTERM */
} rein_proc_terminate_opts_t;

#define REIN_PROC_GRACEFUL_MS 1000
#define REIN_PROC_TIMEOUT_MS 5000

/* -ESRCH when no such process, or only a zombie (it has exited). */
int rein_proc_from_pid(pid_t pid, rein_proc_t **out);
/* Every process whose executable is path (symbolic links resolved: on a
 * merged /usr, /bin/sleep finds /usr/bin/sleep's); *out is an array of
 * *n handles.  A path that names no file: 0 with none (NULL, 0). */
int rein_proc_from_path(const char *path, rein_proc_t ***out, size_t *n);
/* Frees a handle (never signals anything). */
void rein_proc_free(rein_proc_t *p);
/* Frees an array of n handles and the array. */
void rein_proc_list_free(rein_proc_t **list, size_t n);

/* The pid the handle was opened on (it never changes); -EINVAL for a
 * NULL handle. */
pid_t rein_proc_pid(const rein_proc_t *p);
/* The current parent pid; -ESRCH once the process is gone. */
pid_t rein_proc_ppid(const rein_proc_t *p);
/* argv as a NULL-terminated array; free with rein_strv_free. */
int rein_proc_args(const rein_proc_t *p, char ***argv);
void rein_strv_free(char **v);
/* Signals the process and every descendant, children first.  -ESRCH once
 * the process has exited; -EPERM for pid 1 or the caller itself, before
 * anything is signalled.  Each descendant is held by a pidfd from the
 * moment it is seen, so one that exits meanwhile is never confused with a
 * process given its pid. */
int rein_proc_kill_tree(rein_proc_t *p, int signo);
/* Defaults: the process only, REIN_PROC_GRACEFUL_MS, REIN_PROC_TIMEOUT_MS,
 * SIGTERM.  NULL is a no-op. */
void rein_proc_terminate_opts_init(rein_proc_terminate_opts_t *o);
/* Graceful signal (+SIGCONT), wait, rescan, KILL, wait.  *exited says how
 * it ended; true at once when the process had already exited.  -EPERM as
 * for kill_tree.  A child forked during the grace by a process that then
 * exits at once is no longer below the tree when it is rescanned; `group`
 * reaches it if it kept the process group. */
int rein_proc_terminate(rein_proc_t *p, const rein_proc_terminate_opts_t *o,
                        bool *exited);
/* *exited: true when the process exited within timeout_ms (< 0: forever).
 * -ECANCELED when cancel was raised first. */
int rein_proc_wait_for_exit(rein_proc_t *p, int timeout_ms,
                            rein_cancel_t *cancel, bool *exited);
/* The current process group; -ESRCH once the process is gone. */
int rein_proc_group_id(const rein_proc_t *p, pid_t *pgid);
/* Handles on the current children (of every thread); *out is an array of
 * *n, free with rein_proc_list_free.  -ESRCH once the process is gone. */
int rein_proc_children(const rein_proc_t *p, rein_proc_t ***out, size_t *n);
/* RUNNING until the process has exited (a zombie counts as exited);
 * EXITED for a NULL handle (nothing runs under it). */
rein_proc_status_t rein_proc_status(const rein_proc_t *p);

/* ------------------------------------------------------------------ keys */

/* The longest key id rein_key_parse writes, NUL included. */
#define REIN_KEY_ID_MAX 64

/*
 * Writes the key id of data ("ctrl+c", "shift+up", "f5", "a") into buf,
 * NUL-terminated, and returns its length; 0 when data is not exactly one
 * key; REIN_ETOOSMALL when buf cannot hold the id.
 */
int rein_key_parse(const void *data, size_t len, bool kitty_active, char *buf,
                   size_t size);
/* True when data is the key key_id (case-insensitive; "esc" and "plus"
 * are aliases of "escape" and "+"). */
bool rein_key_matches(const void *data, size_t len, const char *key_id,
                      bool kitty_active);

/* Kitty keyboard protocol modifier bits (value sent is 1 + bits). */
#define REIN_KITTY_SHIFT 1u
#define REIN_KITTY_ALT 2u
#define REIN_KITTY_CTRL 4u
#define REIN_KITTY_SUPER 8u
#define REIN_KITTY_HYPER 16u
#define REIN_KITTY_META 32u
#define REIN_KITTY_CAPS_LOCK 64u
#define REIN_KITTY_NUM_LOCK 128u

typedef enum rein_kitty_event {
    REIN_KITTY_PRESS = 1,
    REIN_KITTY_REPEAT = 2,
    REIN_KITTY_RELEASE = 3,
} rein_kitty_event_t;

typedef struct rein_kitty_key {
    uint32_t codepoint;
    uint32_t shifted_key;      /* 0: absent */
    uint32_t base_layout_key;  /* 0: absent */
    uint32_t modifier;         /* REIN_KITTY_* bits */
    rein_kitty_event_t event;
} rein_kitty_key_t;

/* 1 and *out filled when data is one Kitty sequence, else 0 (also for a
 * NULL data or out). */
int rein_kitty_parse(const void *data, size_t len, rein_kitty_key_t *out);
bool rein_kitty_matches(const void *data, size_t len, uint32_t codepoint,
                        uint32_t modifier);
/* True when data is exactly a legacy sequence of key_name ("up", "f1"). */
bool rein_legacy_matches(const void *data, size_t len, const char *key_name);
/* The bytes a terminal sends for key_id; returns their count, REIN_EKEY for
 * an unknown id, REIN_ETOOSMALL when buf is too small.  Unlike matching,
 * which reads the last non-modifier word as the key, an id to encode must
 * be modifiers (shift, ctrl, alt, super, any order) and then exactly one
 * key: "ctrl+c+d", "hyper+q" and "a+ctrl" are REIN_EKEY.  They are the legacy
 * bytes programs expect, so a few ids share their bytes with another key
 * and rein_key_parse names that one: ctrl+m is enter (0d), ctrl+i tab,
 * ctrl+h backspace, ctrl+[ escape; alt+<digit or symbol> is ESC and the
 * character, which the parser (as the reference) reads as no key; and
 * alt+shift+b / alt+shift+f are ESC B / ESC F, which a parser without the
 * Kitty flag reads as alt+left / alt+right. */
int rein_key_encode(const char *key_id, char *buf, size_t size);

/* ---------------------------------------------------------- bash fixups */

typedef struct rein_fixup {
    char *command;    /* the rewritten command */
    char **stripped;  /* what was removed, in removal order; NULL-terminated */
    size_t n_stripped;
} rein_fixup_t;

/* Strips a safe trailing `| head`/`| tail` and a redundant trailing 2>&1. */
int rein_bash_fixup(const char *command, rein_fixup_t *out);
void rein_fixup_free(rein_fixup_t *f);

/* -------------------------------------------------------------- decoders */

/* C-style escapes (\n \r \t \b \f \v \0 \a \e \xHH \uHHHH \u{H..} \\ \" \')
 * decoded; unknown escapes kept literally; raw bytes pass through.  *out is
 * NUL-terminated (not counted in *out_len); free with rein_free. */
int rein_unescape(const char *in, size_t len, char **out, size_t *out_len);
/* Standard base64 (padding optional, whitespace ignored); REIN_EBASE64 when
 * malformed.  *out NUL-terminated; free with rein_free. */
int rein_base64_decode(const char *in, size_t len, unsigned char **out,
                       size_t *out_len);

/* ------------------------------------------------------------ supervisor */

/*
 * The supervisor: owns every run it starts, through one lifecycle for PTY
 * and pipe runs (starting -> running -> exiting -> exited), one cancel
 * model, deterministic cleanup of the whole process tree, and a durable
 * registry (SQLite in the state dir) that survives rein's own SIGKILL: the
 * next supervisor to open the state dir reconciles what the dead one left.
 *
 * A supervisor runs on its own event loop; drive it with rein_sup_run_once
 * (or poll rein_sup_fd for readability first).  Callbacks run from there.
 *
 * What it keeps is bounded however long it runs: a run's remembered
 * processes are those still there (the gone ones are forgotten, in memory
 * and in the registry), an exited run stays in memory until
 * rein_sup_forget, the event log (events.jsonl) is rotated at
 * REIN_SUP_EVENTS_MAX_BYTES into one older file, and a supervisor's owner
 * record goes when it closes (or, after a crash, when reconcile has taken
 * what it left).  Run records and logs stay until a retention pass
 * removes them: `rein serve` runs one at start and hourly, `rein run` at
 * most hourly (docs/serve.md, "Logs"), a host of its own with
 * rein_sup_prune.
 */
typedef struct rein_sup rein_sup_t;

typedef enum rein_run_state {
    REIN_RUN_STARTING = 0,
    REIN_RUN_RUNNING = 1,
    REIN_RUN_EXITING = 2,
    REIN_RUN_EXITED = 3,
} rein_run_state_t;

/* Why a run ended: X(NAME, value, text).  The first reason wins.  The
 * values are what the registry stores: never renumber one, append.
 * no-input: `rein run`'s input was over (its stdin ended) and the command
 * kept waiting for keys in raw mode after its SIGHUP, so rein ended it.
 * shutdown: rein itself was closing (rein_sup_close, `rein serve`'s end of
 * input or signal) while the run was live, so it ended the run. */
#define REIN_REASON_MAP(X)                                                  \
    X(NONE, 0, "none")                                                      \
    X(EXIT, 1, "exit")                                                      \
    X(SIGNAL, 2, "signal")                                                  \
    X(MANUAL_CANCEL, 3, "manual-cancel")                                    \
    X(OVERALL_TIMEOUT, 4, "overall-timeout")                                \
    X(NO_OUTPUT_TIMEOUT, 5, "no-output-timeout")                            \
    X(SPAWN_ERROR, 6, "spawn-error")                                        \
    X(OWNERSHIP_ESCAPE, 7, "ownership-escape")                              \
    X(ORPHAN_REAPED, 8, "orphan-reaped")                                    \
    X(LOST, 9, "lost")                                                      \
    X(NO_INPUT, 10, "no-input")                                             \
    X(SHUTDOWN, 11, "shutdown")

typedef enum rein_reason {
#define REIN_REASON_ENUM_(name, value, text) REIN_REASON_##name = (value),
    REIN_REASON_MAP(REIN_REASON_ENUM_)
#undef REIN_REASON_ENUM_
} rein_reason_t;

const char *rein_reason_name(rein_reason_t r);
const char *rein_run_state_name(rein_run_state_t s);

/* Default grace between TERM and KILL. */
#define REIN_SUP_GRACE_MS 2000
/* How long termination may take in all before it is reported incomplete. */
#define REIN_SUP_KILL_BOUND_MS 5000
/* Owner lease length and heartbeat. */
#define REIN_SUP_LEASE_MS 10000
#define REIN_SUP_HEARTBEAT_MS 2000
/* How often a run's processes are scanned, so that every member (pid +
 * start time) is in the registry before a crash could orphan it: at most
 * this often on output and, under a supervisor with a registry, at least
 * this often however quiet the run is.  A run a cgroup holds (a v2 leaf,
 * or a v1 pids cgroup) is scanned through it: cgroup.procs and one stat
 * read per member (some 2 us each), an escapee still noticed within this
 * period, not only once the run printed again.  A member that left the
 * run's session (setsid, a double fork) is then recorded within this
 * period (as a subreaper, even after its parent died: it is re-parented
 * to rein; at the pgid level only while it is still below the leader)
 * and, an escape, ends the run; reconcile after a crash ends it from its
 * record.  Cost, measured on 2 shared cores: a quiet run of 50 processes
 * takes 1.0-1.3 ms of CPU per scan as a subreaper (20-25 us a member, in
 * /proc reads; 8 such runs, 5.6 ms); the pgid level adds one pass over all
 * of /proc per period, shared by all runs, 6-8 us per process on the
 * machine (0.9 ms with 150, 19 ms with 2,400 under load).  One second is
 * the pace talkative runs were scanned at already: a quiet run costs no
 * more than a talkative one did. */
#define REIN_SUP_SCAN_MS 1000
/* The event log of a state dir is renamed to events.jsonl.1 (replacing
 * the one before) once it holds this many bytes: at most twice this on
 * disk, days of a busy server's events. */
#define REIN_SUP_EVENTS_MAX_BYTES (32u << 20)

typedef struct rein_sup_opts {
    const char *state_dir;   /* NULL: $REIN_STATE_DIR, $XDG_STATE_HOME/rein,
                                ~/.local/state/rein */
    const char *containment; /* NULL: $REIN_CONTAINMENT, else the best one */
    bool ephemeral;          /* no state dir, registry or events */
    bool no_reconcile;       /* do not reconcile dead owners at open */
    /* When rein_sup_open fails and errmsg is given: which step and which
     * file ("registry /x/registry.db: file is not a database"),
     * NUL-terminated within errlen bytes; "" when the code says it all. */
    char *errmsg;
    size_t errlen;
} rein_sup_opts_t;

typedef struct rein_run_info {
    int64_t id;
    pid_t pid, pgid, sid;
    rein_run_state_t state;
    rein_reason_t reason;
    int exit_code;           /* -1 while none; a signal death is 128+signo */
    int signal;              /* 0: none */
    bool tty;
    const char *containment; /* "cgroup" "subreaper" "pgid" */
    const char *cgroup;      /* or NULL */
    const char *log_path;    /* or NULL (ephemeral) */
    uint64_t bytes;
    int64_t started_ms, ended_ms, last_output_ms; /* wall clock */
    bool cleanup_incomplete;
    size_t n_survivors;
    const pid_t *survivors;
    /* Output that never reached the log (a full disk, a write error): its
     * byte count and the first error (-errno), 0 when the log is whole.
     * `bytes` still counts it. */
    uint64_t log_lost;
    int log_error;
    /* The leader exited on its own and processes it left in its boundary
     * (background jobs, daemons) were still running after the exit drain:
     * rein ended them, as it ends whatever a run leaves behind.  The
     * reason stays REIN_REASON_EXIT; this says something else was lost.
     * A process already on its way out when rein looked (killed by the
     * terminal's hangup, below, or by the command itself) does not count. */
    bool leftovers_ended;
    /* Processes of a terminal's run that the kernel's hangup killed as the
     * leader exited on its own (SIGHUP to the terminal's foreground
     * process group: `server &` in `sh -c`, which neither ignores, catches
     * nor blocks it).  Counted as rein reaps them, a subreaper (cgroup and
     * subreaper levels; always 0 at the pgid level and on pipes); one
     * reaped by a parent that survived the hangup is not counted (that
     * parent is a leftover).  Whole when the run is reported. */
    size_t leftovers_hung_up;
} rein_run_info_t;

typedef void (*rein_output_fn)(rein_sup_t *s, int64_t id, const void *data,
                               size_t len, void *ud);
typedef void (*rein_exit_fn)(rein_sup_t *s, int64_t id,
                             const rein_run_info_t *info, void *ud);

typedef struct rein_run_opts {
    const char *const *argv; /* required; argv[0] searched on PATH */
    const char *cwd;         /* NULL: inherited */
    const char *const *env;  /* "NAME=value" over the inherited environment */
    bool tty;                /* PTY (else pipes: stdout+stderr merged) */
    unsigned cols, rows;     /* tty: 0 = defaults, clamped as rein_pty */
    bool keep_stdin;         /* pipes: stdin a pipe held open (else /dev/null) */
    /* tty: the child's stdin is the caller's own fd 0 (a file or pipe),
     * not the PTY, so its bytes reach it exactly, with their own end;
     * the PTY stays its controlling terminal and its stdout and stderr,
     * and rein_sup_write still types into that terminal. */
    bool inherit_stdin;
    uint32_t timeout_ms;           /* overall; 0: none */
    uint32_t no_output_timeout_ms; /* 0: none; re-armed by every output */
    int grace_ms;                  /* < 0: REIN_SUP_GRACE_MS */
    uint32_t pids_max;             /* 0: default, where a pids limit exists */
    rein_output_fn on_output;      /* raw bytes as read */
    rein_exit_fn on_exit;          /* once, when the run is exited */
    void *data;
} rein_run_opts_t;

/* At the cgroup and subreaper levels the supervisor makes the calling
 * process a child subreaper (PR_SET_CHILD_SUBREAPER): processes orphaned
 * below it come to it, and it claims (and reaps) every child of the
 * caller outside the caller's session as a run's.  A host that forks
 * children of its own that leave its session should ask for "pgid", as
 * rein's shell and PTY sessions do. */
int rein_sup_open(const rein_sup_opts_t *o, rein_sup_t **out);
/* Terminates every live run (TERM, 1 s grace, KILL) and every stray (an
 * adopted orphan no run could claim: KILL), finalizes the registry (a
 * stray's record goes once it is gone), releases the owner lease and
 * deletes the owner's record (kept while a run outlived the kill or a
 * stray is on record: reconcile finds those through it). */
void rein_sup_close(rein_sup_t *s);
/* An fd that is readable when rein_sup_run_once has work. */
int rein_sup_fd(const rein_sup_t *s);
/* Dispatches ready events, waiting up to timeout_ms (-1: until one). */
int rein_sup_run_once(rein_sup_t *s, int timeout_ms);
/* Starts a run; *id is its registry id (>= 1000, never reused), or 0 when
 * the run could not start. */
int rein_sup_spawn(rein_sup_t *s, const rein_run_opts_t *o, int64_t *id);
/* Writes to the run's stdin (PTY or kept pipe).  REIN_EINPUT_CLOSED after
 * rein_sup_close_stdin on a pipe (rein closed it), -EPIPE when the process
 * closed its end, or when there is no stdin to write. */
int rein_sup_write(rein_sup_t *s, int64_t id, const void *data, size_t len);
/* Ends the run's input: the EOF character on a PTY, else closes the pipe,
 * after whatever rein_sup_write still holds has been written. */
int rein_sup_close_stdin(rein_sup_t *s, int64_t id);
int rein_sup_resize(rein_sup_t *s, int64_t id, unsigned cols, unsigned rows);
/* Sends signo to the run's foreground process group (not a cancel). */
int rein_sup_signal(rein_sup_t *s, int64_t id, int signo);
/* Cancels (manual-cancel): signo (0: SIGTERM) + CONT, grace, KILL.  A
 * cancel of a run already ending signals nothing again; it can only bring
 * the KILL forward: at once with SIGKILL, else to the end of its own
 * grace when that comes sooner. */
int rein_sup_cancel(rein_sup_t *s, int64_t id, int signo, int grace_ms);
/* The run's state; pointers inside stay valid until the run is forgotten. */
int rein_sup_info(rein_sup_t *s, int64_t id, rein_run_info_t *out);
/* Drops an exited run from memory (the registry keeps it).  A host that
 * never calls it holds every run it started. */
int rein_sup_forget(rein_sup_t *s, int64_t id);

typedef struct rein_reconcile_stats {
    size_t owners_dead, runs_stolen, orphans_reaped, lost, skipped_alive;
    /* Strays of dead owners (orphans adopted as a subreaper that no run
     * could claim): ended (still the process recorded: boot id, pid, start
     * time), and forgotten without a signal (gone, or not that process). */
    size_t strays_reaped, strays_lost;
} rein_reconcile_stats_t;
/* Reconciles runs of dead owners: kills verified orphans (orphan-reaped),
 * marks the rest lost without a signal; the same for their strays, whose
 * records are then deleted. */
int rein_sup_reconcile(rein_sup_t *s, rein_reconcile_stats_t *out);

/* rein_sup_prune's limits: REIN_PRUNE_DEFAULT for the environment's
 * (REIN_LOG_MAX_AGE_DAYS, REIN_LOG_MAX_BYTES; unset or invalid: 7 days,
 * 2 GiB), 0 for none. */
#define REIN_PRUNE_DEFAULT (-1)
typedef struct rein_prune_stats {
    size_t logs_removed;
    uint64_t bytes_removed, bytes_kept; /* allocated blocks, in bytes */
} rein_prune_stats_t;
/* Removes old logs and run records from s's state dir, as `rein serve`
 * does at start and hourly (docs/serve.md, "Logs"): a log goes once it is
 * older than max_age_ms (by its last write), or, oldest first, while the
 * logs together pass max_bytes; a run's record goes with its log, or once
 * the run ended longer ago than max_age_ms.  The logs of runs not exited
 * (of any owner on the state dir) and logs written within the last
 * minute are kept.  A host that keeps a state dir for long should call it
 * now and then, or the dir grows without end.  0 (nothing to do for an
 * ephemeral supervisor), -EINVAL for a limit below REIN_PRUNE_DEFAULT, or
 * the error that stopped it before anything was removed; out may be
 * NULL. */
int rein_sup_prune(rein_sup_t *s, int64_t max_age_ms, int64_t max_bytes,
                   rein_prune_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* REIN_H */
