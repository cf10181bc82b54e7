/*
 * shell.c — bash for an agent, one-shot or persistent (rein.h: rein_shell_*).
 *
 * Both modes run `/bin/bash --noprofile --norc` in a session of its own
 * (setsid), stdin on /dev/null, stdout and stderr on ONE pipe so the output
 * keeps the order the command wrote it in.  Each call drives a private
 * event loop, as pty.c does, and hands output to the caller as UTF-8 chunks.
 *
 * Environment: the current environ minus the variables that would change
 * how bash itself behaves (prompts, PWD/OLDPWD/SHLVL, exported functions,
 * BASH_ENV/ENV, SHELLOPTS/BASHOPTS, IFS, CDPATH; see shell_env_skip), then
 * the session env laid over it.
 *
 * One-shot (rein_shell_exec): `bash -c <command>` with the command-scoped
 * env simply in its environment and the cwd set by spawn.  With a snapshot,
 * a small fixed script sources it first (stdio on /dev/null) and reports
 * success with one byte on fd 3 before eval'ing the command; the paths and
 * the command travel in argv, never pasted into script text.  One vfork, one
 * pipe (two with a snapshot), the loop: rein_shell_exec of `true` must stay
 * within 1.3x of a bare spawn+wait of `bash -c true`.
 *   After bash exits the pipe is drained until EOF, REIN_SHELL_DRAIN_IDLE_MS
 * without output, or REIN_SHELL_DRAIN_MAX_MS in all.  Then, because rein
 * leaves nothing running, whatever is still in the run's session (background
 * jobs that outlived the command) is terminated: TERM + CONT, up to
 * REIN_SHELL_GRACE_MS, KILL.  bash stays an unreaped zombie until that is
 * done, so its pid — the session and group id — cannot be reused by a
 * stranger while we signal the group.  The session is found by getsid() on
 * every pid: one system call each, cheap enough for the fast path (a
 * /proc/<pid>/stat read of every process would eat most of the 1.3x).
 *
 * Persistent (rein_shell_t): bash runs a driver loop (SHELL_DRIVER) that
 * keeps cwd, variables and functions between runs.  It talks to us over a
 * socketpair placed at its fd 3 (moved to fd 60 at once, out of the way of
 * scripts that use `exec 3>...`):
 *   request  cwd NUL count NUL NAME=value NUL ... command NUL
 *   status   "r\n" ready (after the snapshot) | "n\n" snapshot failed |
 *            "s <code>\n" command done | "c\n" cd failed
 * A socket rather than the two pipes one might expect: writing to a pipe
 * whose reader died raises SIGPIPE in the host, while send(MSG_NOSIGNAL)
 * only fails; and one socket carries both directions.
 *   A run's output is everything read from the pipe until its status line
 * arrives, then what is already readable.  bash writes the status only after
 * the foreground command returned, so its output is in the pipe by then.
 * The 250 ms idle drain of one-shot does not apply: bash itself holds the
 * pipe open between runs, so it never reaches EOF and every run would pay
 * the full idle window.  Late output of a background job arrives with the
 * next run instead — nothing is lost.
 *   bash keeps a duplicate of the control socket while the command runs
 * (the save copy behind `eval ... 60<&-`), so children may inherit it; no
 * decision here depends on that socket's EOF, only on bash's exit.
 *
 * How a run ends, first reason wins:
 *   status   (persistent) the driver reports the command's status: the
 *            session is kept, also after a failed cd (REIN_ECWD).
 *   exit     bash exits: `exit`, break/continue out of the driver, or the
 *            end of a one-shot.  Drain, terminate leftovers, reap.  A
 *            persistent session is dropped; one killed by a signal from
 *            outside is REIN_ESHELL_EXEC.
 *   cancel / timeout   rein_shell_abort(), the token or timeout_ms: TERM +
 *            CONT to the session's group, its captured tree and every
 *            process of the session; up to REIN_SHELL_GRACE_MS (polled, so
 *            it ends as soon as all is gone); rescan, KILL, poll until
 *            all is gone (SHELL_KILL_BOUND_MS at most); reap; the
 *            session is dropped.  No exit code.
 */
#include "exec/shell.h"

#include "rein.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cancel.h"
#include "base/env.h"
#include "base/loop.h"
#include "base/procfs.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "base/utf8.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Bytes asked for per read() of the output pipe. */
#define SHELL_READ_BUF 65536
/* How often the grace window checks whether everything is gone already. */
#define SHELL_POLL_MS 20
/* After the last KILL: how long to wait for everything to be gone. */
#define SHELL_KILL_BOUND_MS 5000
/* The longest status line the driver writes ("s 255\n" and the like). */
#define SHELL_LINE_MAX 64
/* How bash exports functions through the environment. */
#define SHELL_FUNC_EXPORT_PREFIX "BASH_FUNC_"
/* Command-scoped variables the driver keeps to itself. */
#define SHELL_PRIVATE_PREFIX "__rein_"

extern char **environ;

static const char *shell_program = SHELL_BASH_PATH;

void shell_set_program(const char *path)
{
    shell_program = path ? path : SHELL_BASH_PATH;
}

/*
 * The persistent driver.  $1 is the snapshot path ("" for none).  Written
 * against a hostile session: every builtin goes through `builtin` (a
 * snapshot may define functions named cd or read) — except `exec`, which
 * makes redirections permanent only when it is the command word itself, and
 * runs before any function can exist — the whole script is one
 * { } group so it is parsed before a snapshot can enable aliases, it never
 * lets a plain command fail (the user may have said set -e or set -u), and
 * its variables share the SHELL_PRIVATE_PREFIX.
 *   A `set -x` of the user's applies to their commands only: xtrace is
 * switched off (silently, stderr on /dev/null) right after each command and
 * back on right before the next, so the driver's own lines are never
 * traced into the output; only the `eval` line itself shows.
 *   The command runs in `for ... in 1` so break/continue at its top level
 * land there: __rein_done stays empty and the driver exits, which drops
 * the session.  Command-scoped variables are exported after the cd and put
 * back afterwards, in reverse order: unset (u), exported (x) or a plain
 * shell variable (s) with its old value.
 */
static const char SHELL_DRIVER[] =
    "{\n"
    "exec 60<&3 3<&-\n"
    "if [[ -n $1 ]]; then\n"
    "  if [[ -f $1 && -r $1 ]]; then\n"
    "    builtin source \"$1\" </dev/null >/dev/null 2>&1 60<&-\n"
    "  else\n"
    "    builtin printf 'n\\n' >&60\n"
    "    builtin exit 1\n"
    "  fi\n"
    "fi\n"
    "builtin set --\n"
    "__rein_xtrace=0\n"
    "builtin printf 'r\\n' >&60\n"
    "while IFS= builtin read -r -d '' __rein_cwd <&60 &&\n"
    "      IFS= builtin read -r -d '' __rein_n <&60; do\n"
    "  __rein_envs=() __rein_olds=() __rein_how=() __rein_i=0\n"
    "  while [[ $__rein_i -lt $__rein_n ]]; do\n"
    "    IFS= builtin read -r -d '' __rein_e <&60 || builtin exit 1\n"
    "    __rein_envs[__rein_i]=$__rein_e\n"
    "    __rein_i=$((__rein_i + 1))\n"
    "  done\n"
    "  IFS= builtin read -r -d '' __rein_cmd <&60 || builtin exit 1\n"
    "  if [[ -n $__rein_cwd ]] &&\n"
    "     ! builtin cd -- \"$__rein_cwd\" >/dev/null 2>&1; then\n"
    "    builtin printf 'c\\n' >&60\n"
    "    builtin continue\n"
    "  fi\n"
    "  __rein_i=0\n"
    "  while [[ $__rein_i -lt $__rein_n ]]; do\n"
    "    __rein_e=${__rein_envs[__rein_i]}\n"
    "    __rein_v=${__rein_e%%=*}\n"
    "    __rein_olds[__rein_i]=\n"
    "    if [[ -v $__rein_v ]]; then\n"
    "      __rein_olds[__rein_i]=${!__rein_v}\n"
    "      if [[ ${!__rein_v@a} == *x* ]]; then __rein_how[__rein_i]=x\n"
    "      else __rein_how[__rein_i]=s; fi\n"
    "    else\n"
    "      __rein_how[__rein_i]=u\n"
    "    fi\n"
    "    builtin export \"$__rein_e\" 2>/dev/null || :\n"
    "    __rein_i=$((__rein_i + 1))\n"
    "  done\n"
    "  __rein_done= __rein_rc=0\n"
    "  for __rein_once in 1; do\n"
    "    [[ $__rein_xtrace != 1 ]] || builtin set -x\n"
    "    builtin eval \"$__rein_cmd\" 60<&-\n"
    "    { __rein_rc=$? __rein_done=1 __rein_flags=$-; builtin set +x; } 2>/dev/null\n"
    "    __rein_xtrace=0\n"
    "    [[ $__rein_flags != *x* ]] || __rein_xtrace=1\n"
    "  done\n"
    "  [[ -n $__rein_done ]] || builtin exit \"$__rein_rc\"\n"
    "  __rein_i=$__rein_n\n"
    "  while [[ $__rein_i -gt 0 ]]; do\n"
    "    __rein_i=$((__rein_i - 1))\n"
    "    __rein_e=${__rein_envs[__rein_i]}\n"
    "    __rein_v=${__rein_e%%=*}\n"
    "    case ${__rein_how[__rein_i]} in\n"
    "    u) builtin unset -v \"$__rein_v\" || : ;;\n"
    "    x) builtin export \"$__rein_v=${__rein_olds[__rein_i]}\" || : ;;\n"
    "    *) builtin export -n \"$__rein_v\" || :\n"
    "       builtin printf -v \"$__rein_v\" %s \"${__rein_olds[__rein_i]}\""
    " || : ;;\n"
    "    esac\n"
    "  done 2>/dev/null\n"
    "  builtin printf 's %d\\n' \"$__rein_rc\" >&60\n"
    "done\n"
    "}\n";

/*
 * One-shot with a snapshot.  $1 the snapshot, $2 the command.  The byte on
 * fd 3 says the snapshot was sourced; fd 3 is closed before the command so
 * nothing of it is inherited.  The command is expanded into eval's argument
 * before __rein_c is unset, so the command sees neither it nor $1/$2.
 */
static const char SHELL_ONESHOT_SNAPSHOT[] =
    "{\n"
    "if [[ -f $1 && -r $1 ]]; then\n"
    "  builtin source \"$1\" </dev/null >/dev/null 2>&1 3>&-\n"
    "else\n"
    "  builtin exit 1\n"
    "fi\n"
    "builtin printf r >&3\n"
    "exec 3>&-\n"
    "__rein_c=$2\n"
    "builtin set --\n"
    "builtin eval \"builtin unset -v __rein_c\n$__rein_c\"\n"
    "}\n";

/* --------------------------------------------------------- the objects */

/* One bash process and our ends of its channels. */
struct shell_sess {
    pid_t pid;
    int pidfd; /* -1 in the SIGCHLD fallback */
    int out;   /* read end of the stdout+stderr pipe, non-blocking */
    int chan;  /* persistent: control socket; one-shot: snapshot marker */
};

struct rein_shell {
    pthread_mutex_t mu; /* guards running */
    bool running;
    int wake_fd; /* eventfd: rein_shell_abort wakes the running loop */
    atomic_bool abort_req;
    char **session_env; /* NULL-terminated copy, or NULL */
    char *snapshot;     /* or NULL */
    bool live;          /* sess holds a running bash */
    struct shell_sess sess;
};

enum shell_end { END_NONE, END_STATUS, END_EXIT, END_CANCEL, END_TIMEOUT };

/* The state of one run (or of one teardown, when o is NULL). */
struct shell_run {
    rein_shell_t *sh; /* NULL for one-shot */
    const rein_shell_run_opts_t *o;
    loop_t *loop;
    struct shell_sess *s;
    bool persistent;
    enum shell_end end;
    bool exited, reaped, eof, done;
    bool draining; /* after bash's exit: reading until EOF or idle */
    bool killing;  /* terminating what is left of the session */
    bool killed;   /* the final KILL was sent */
    bool exit_by_signal;
    int exit_code;   /* bash's */
    int status_code; /* the command's, from the driver */
    int err;         /* the first error */
    uint64_t idle_timer, max_timer, grace_timer, poll_timer, bound_timer;
    ptree_t tree; /* captured when a kill starts, merged on each scan */
    buf_t req;    /* request bytes not yet sent */
    size_t req_off;
    char line[SHELL_LINE_MAX];
    size_t line_len;
    utf8_dec_t dec;
    buf_t out;
    char *rbuf;
};

static void sess_init(struct shell_sess *s)
{
    s->pid = -1;
    s->pidfd = s->out = s->chan = -1;
}

static void sess_close(struct shell_sess *s)
{
    if (s->pidfd >= 0)
        close(s->pidfd);
    if (s->out >= 0)
        close(s->out);
    if (s->chan >= 0)
        close(s->chan);
    sess_init(s);
}

/* ------------------------------------------------------- environment */

/* Variables bash would act on at start, which the host's values must not
 * steer (the seed's skip-list); BASH_FUNC_* (exported functions) too. */
static const char *const shell_env_skip[] = {
    "PS1",    "PS2",      "PS3",      "PS4",     "PROMPT_COMMAND",
    "PWD",    "OLDPWD",   "SHLVL",    "BASH_ENV", "ENV",
    "SHELLOPTS", "BASHOPTS", "CDPATH", "IFS",    "BASH_XTRACEFD",
    NULL};

static bool shell_env_skipped(const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (!eq)
        return true;
    size_t n = (size_t)(eq - entry);
    if (!strncmp(entry, SHELL_FUNC_EXPORT_PREFIX,
                 strlen(SHELL_FUNC_EXPORT_PREFIX)))
        return true;
    for (const char *const *k = shell_env_skip; *k; k++)
        if (strlen(*k) == n && !strncmp(entry, *k, n))
            return true;
    return false;
}

/* environ minus the skipped variables, then each list in order (the later
 * wins).  REIN_EENV for a malformed entry. */
static int shell_build_env(env_t *e, const char *const *a,
                           const char *const *b)
{
    size_t n = 0, k = 0;
    while (environ && environ[n])
        n++;
    const char **keep = calloc(n + 1, sizeof *keep);
    if (!keep)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (!shell_env_skipped(environ[i]))
            keep[k++] = environ[i];
    int rc = env_init(e, keep);
    free(keep);
    if (rc < 0)
        return rc;
    if ((rc = env_put_all(e, a)) < 0 || (rc = env_put_all(e, b)) < 0) {
        env_free(e);
        return rc;
    }
    return 0;
}

/* A command-scoped entry for a persistent session: the name must be one
 * bash can export, and not one of the driver's own. */
static bool shell_env_exportable(const char *entry)
{
    if (!env_valid(entry) || !strncmp(entry, SHELL_PRIVATE_PREFIX,
                                      strlen(SHELL_PRIVATE_PREFIX)))
        return false;
    if (!isalpha((unsigned char)entry[0]) && entry[0] != '_')
        return false;
    for (const char *p = entry + 1; *p != '='; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return false;
    return true;
}

/* ------------------------------------------------------ session scan */

/*
 * Every live process of session sid except its leader, by getsid() on each
 * pid: while the leader is an unreaped zombie, sid names our session and
 * nothing else, and every member descends from our bash.  Zombies are left
 * out: there is nothing to signal.
 */
static int shell_session_scan(pid_t sid, ptree_t *out)
{
    out->v = NULL;
    out->n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return -errno;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
        uint64_t st;
        if (pid == sid || getsid(pid) != sid ||
            procfs_start_time(pid, &st) < 0 || !procfs_alive(pid, st))
            continue;
        ptree_member_t *v = realloc(out->v, (out->n + 1) * sizeof *v);
        if (!v) {
            rc = -ENOMEM;
            break;
        }
        out->v = v;
        out->v[out->n++] = (ptree_member_t){pid, st};
    }
    closedir(d);
    if (rc < 0)
        ptree_free(out);
    return rc;
}

/* ----------------------------------------------------------- the run */

static void emit(struct shell_run *r)
{
    if (r->out.len && r->o && r->o->on_chunk)
        r->o->on_chunk(r->out.p, r->out.len, r->o->data);
    buf_reset(&r->out);
}

static void finish(struct shell_run *r)
{
    r->done = true;
    loop_stop(r->loop);
}

static void stop_timer(struct shell_run *r, uint64_t *id)
{
    loop_timer_del(r->loop, *id);
    *id = 0;
}

/* Reads what the pipe has now; true when anything came.  Sets eof. */
static bool read_out(struct shell_run *r)
{
    bool got = false;
    if (r->eof)
        return false;
    for (;;) {
        ssize_t n = read(r->s->out, r->rbuf, SHELL_READ_BUF);
        if (n > 0) {
            /* Hand each read on at once (valid UTF-8 without a copy):
             * a fast writer must not make us buffer its whole output. */
            const char *text;
            size_t len;
            got = true;
            if (utf8_decode_view(&r->dec, r->rbuf, (size_t)n, &r->out, &text,
                                 &len) < 0 &&
                !r->err)
                r->err = -ENOMEM;
            if (len && r->o && r->o->on_chunk)
                r->o->on_chunk(text, len, r->o->data);
            buf_reset(&r->out);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        r->eof = true; /* every writer gone (or an error: stop reading) */
        loop_io_del(r->loop, r->s->out);
        break;
    }
    emit(r);
    return got;
}

static void reap(struct shell_run *r)
{
    if (r->reaped)
        return;
    spawn_reap(r->s->pid, r->s->pidfd, NULL);
    r->reaped = true;
}

/* Everything is over: last output, reap, stop. */
static void wind_up(struct shell_run *r)
{
    stop_timer(r, &r->idle_timer);
    stop_timer(r, &r->max_timer);
    stop_timer(r, &r->grace_timer);
    stop_timer(r, &r->poll_timer);
    stop_timer(r, &r->bound_timer);
    read_out(r);
    if (r->exited)
        reap(r);
    finish(r);
}

/* Adds the live members of bash's tree and session to r->tree. */
static void rescan(struct shell_run *r)
{
    ptree_t now;
    if (!r->exited && ptree_capture(r->s->pid, &now) == 0) {
        ptree_merge(&r->tree, &now);
        ptree_free(&now);
    }
    if (shell_session_scan(r->s->pid, &now) == 0) {
        ptree_merge(&r->tree, &now);
        ptree_free(&now);
    }
}

/* Whether anything of the run is still alive: bash, the tree captured so
 * far, or any process of the session. */
static bool anything_alive(struct shell_run *r)
{
    if (!r->exited || ptree_count_alive(&r->tree) > 0)
        return true;
    ptree_t now;
    if (shell_session_scan(r->s->pid, &now) < 0)
        return true; /* cannot tell: let the grace run out */
    bool alive = now.n > 0;
    ptree_free(&now);
    return alive;
}

static void signal_all(struct shell_run *r, int signo)
{
    /* Safe while bash is unreaped: its pid is the group id and no one
     * else can hold it. */
    if (!r->reaped)
        ptree_signal_group(r->s->pid, signo);
    ptree_signal(&r->tree, signo);
}

static void on_kill_bound(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct shell_run *r = data;
    r->bound_timer = 0;
    /* Something did not die even after KILL (uninterruptible sleep): give
     * up waiting.  If it is bash, it cannot be reaped here. */
    if (!r->exited)
        r->reaped = true;
    wind_up(r);
}

static void on_poll(loop_t *l, uint64_t id, void *data);

static void on_grace_end(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct shell_run *r = data;
    r->grace_timer = 0;
    stop_timer(r, &r->poll_timer);
    rescan(r);
    signal_all(r, SIGKILL);
    r->killed = true;
    /* KILL takes effect when each target next runs: keep polling until
     * all are gone, so the caller never sees a survivor, within a bound. */
    if (!anything_alive(r)) {
        wind_up(r);
        return;
    }
    loop_timer_add(l, SHELL_KILL_BOUND_MS, on_kill_bound, r,
                   &r->bound_timer);
    loop_timer_add(l, SHELL_POLL_MS, on_poll, r, &r->poll_timer);
}

static void on_poll(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct shell_run *r = data;
    r->poll_timer = 0;
    if (!anything_alive(r)) {
        wind_up(r);
        return;
    }
    loop_timer_add(l, SHELL_POLL_MS, on_poll, r, &r->poll_timer);
}

/* TERM + CONT to everything of the session; KILL after the grace. */
static void begin_terminate(struct shell_run *r)
{
    if (r->killing)
        return;
    r->killing = true;
    stop_timer(r, &r->idle_timer);
    stop_timer(r, &r->max_timer);
    r->draining = false;
    rescan(r);
    signal_all(r, SIGTERM);
    signal_all(r, SIGCONT);
    loop_timer_add(r->loop, REIN_SHELL_GRACE_MS, on_grace_end, r,
                   &r->grace_timer);
    loop_timer_add(r->loop, SHELL_POLL_MS, on_poll, r, &r->poll_timer);
}

static void begin_kill(struct shell_run *r, enum shell_end why)
{
    if (r->end != END_NONE)
        return; /* the first reason wins */
    r->end = why;
    begin_terminate(r);
}

/* The drain after bash's exit is over: terminate what is left, if any. */
static void drain_end(struct shell_run *r)
{
    stop_timer(r, &r->idle_timer);
    stop_timer(r, &r->max_timer);
    r->draining = false;
    ptree_t now;
    if (shell_session_scan(r->s->pid, &now) == 0 && now.n == 0) {
        ptree_free(&now);
        wind_up(r);
        return;
    }
    ptree_free(&now);
    begin_terminate(r);
}

static void on_drain_timer(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    struct shell_run *r = data;
    if (id == r->idle_timer)
        r->idle_timer = 0;
    else
        r->max_timer = 0;
    read_out(r);
    drain_end(r);
}

/* Handles one status line of the driver. */
static void on_line(struct shell_run *r, const char *line)
{
    if (!strcmp(line, "r"))
        return; /* ready: the request is already queued behind it */
    if (!strcmp(line, "n")) {
        if (!r->err)
            r->err = REIN_ESNAPSHOT;
        return; /* bash exits next */
    }
    if (r->end != END_NONE)
        return;
    if (!strcmp(line, "c")) {
        r->end = END_STATUS;
        if (!r->err)
            r->err = REIN_ECWD;
    } else if (line[0] == 's' && line[1] == ' ') {
        r->end = END_STATUS;
        r->status_code = atoi(line + 2);
    } else {
        if (!r->err)
            r->err = REIN_EINTERNAL;
        begin_kill(r, END_CANCEL); /* a confused driver: drop it */
        return;
    }
    /* The command has returned, so its output is in the pipe. */
    read_out(r);
    finish(r);
}

/* Reads status lines from the control socket. */
static void read_chan(struct shell_run *r)
{
    char tmp[SHELL_LINE_MAX];
    for (;;) {
        ssize_t n = recv(r->s->chan, tmp, sizeof tmp, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* EAGAIN, or EOF: bash's exit tells the rest */
        for (ssize_t i = 0; i < n && !r->done; i++) {
            if (tmp[i] != '\n') {
                if (r->line_len < sizeof r->line - 1)
                    r->line[r->line_len++] = tmp[i];
                continue;
            }
            r->line[r->line_len] = '\0';
            r->line_len = 0;
            on_line(r, r->line);
        }
        if (r->done)
            return;
    }
}

/* Sends what is left of the request; stops watching for room when done. */
static void write_chan(struct shell_run *r)
{
    while (r->req_off < r->req.len) {
        ssize_t n = send(r->s->chan, r->req.p + r->req_off,
                         r->req.len - r->req_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            r->req_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        r->req_off = r->req.len; /* EPIPE: bash is gone; its exit tells */
    }
    loop_io_mod(r->loop, r->s->chan, LOOP_READ);
}

static void on_chan(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    struct shell_run *r = data;
    if (ev & LOOP_WRITE)
        write_chan(r);
    if (ev & (LOOP_READ | LOOP_HUP))
        read_chan(r);
    if (ev & LOOP_HUP)
        loop_io_del(l, fd); /* level-triggered HUP: watch bash's exit */
}

static void on_out(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    struct shell_run *r = data;
    bool got = read_out(r);
    if (!r->draining)
        return;
    if (r->eof) {
        drain_end(r);
    } else if (got) {
        stop_timer(r, &r->idle_timer);
        loop_timer_add(l, REIN_SHELL_DRAIN_IDLE_MS, on_drain_timer, r,
                       &r->idle_timer);
    }
}

static void on_child(loop_t *l, pid_t pid, const siginfo_t *info, void *data)
{
    (void)pid;
    struct shell_run *r = data;
    r->exited = true;
    r->exit_code = spawn_code_from_info(info);
    r->exit_by_signal = info->si_code != CLD_EXITED;
    if (r->killing) {
        if (!anything_alive(r))
            wind_up(r);
        return;
    }
    /* A last status line (a failed snapshot) may still be in the socket. */
    if (r->persistent)
        read_chan(r);
    if (r->done)
        return;
    r->end = END_EXIT;
    if (r->persistent && r->exit_by_signal && !r->err)
        r->err = REIN_ESHELL_EXEC; /* killed from outside */
    r->draining = true;
    read_out(r);
    if (r->eof) {
        drain_end(r);
        return;
    }
    loop_timer_add(l, REIN_SHELL_DRAIN_IDLE_MS, on_drain_timer, r,
                   &r->idle_timer);
    loop_timer_add(l, REIN_SHELL_DRAIN_MAX_MS, on_drain_timer, r,
                   &r->max_timer);
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
    struct shell_run *r = data;
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof v);
    (void)n;
    if (atomic_exchange(&r->sh->abort_req, false))
        begin_kill(r, END_CANCEL);
}

/* Drives the loop until the run is over.  With o NULL it only tears the
 * session down (begin_terminate at once). */
static int run_loop(struct shell_run *r)
{
    const rein_shell_run_opts_t *o = r->o;
    int rc;
    if ((rc = loop_io_add(r->loop, r->s->out, LOOP_READ, on_out, r)) < 0 ||
        (rc = loop_child_add(r->loop, r->s->pid, r->s->pidfd, on_child,
                             r)) < 0)
        return rc;
    if (r->persistent &&
        (rc = loop_io_add(r->loop, r->s->chan,
                          LOOP_READ | (r->req.len ? LOOP_WRITE : 0),
                          on_chan, r)) < 0)
        return rc;
    if (r->sh && o &&
        (rc = loop_io_add(r->loop, r->sh->wake_fd, LOOP_READ, on_wake, r)) <
            0)
        return rc;
    if (o && o->cancel &&
        (rc = loop_io_add(r->loop, cancel_fd(o->cancel), LOOP_READ,
                          on_cancel, r)) < 0)
        return rc;
    if (o && o->timeout_ms &&
        (rc = loop_timer_add(r->loop, o->timeout_ms, on_timeout, r, NULL)) <
            0)
        return rc;
    if (!o)
        begin_terminate(r);
    /* An abort that raced with set-up, or a token raised before the run. */
    else if ((r->sh && atomic_exchange(&r->sh->abort_req, false)) ||
             rein_cancel_triggered(o->cancel))
        begin_kill(r, END_CANCEL);
    while (!r->done) {
        rc = loop_run_once(r->loop, -1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int run_init(struct shell_run *r, rein_shell_t *sh,
                    const rein_shell_run_opts_t *o, struct shell_sess *s,
                    bool persistent)
{
    memset(r, 0, sizeof *r);
    r->sh = sh;
    r->o = o;
    r->s = s;
    r->persistent = persistent;
    utf8_init(&r->dec);
    r->rbuf = malloc(SHELL_READ_BUF);
    if (!r->rbuf)
        return -ENOMEM;
    return loop_new(&r->loop);
}

static void run_free(struct shell_run *r)
{
    ptree_free(&r->tree);
    loop_free(r->loop);
    r->loop = NULL;
    buf_free(&r->req);
    buf_free(&r->out);
    free(r->rbuf);
    r->rbuf = NULL;
}

/* Runs the loop; on a loop failure never leaves bash behind. */
static int run_drive(struct shell_run *r)
{
    int rc = run_loop(r);
    if (rc < 0 && !r->reaped) {
        ptree_signal_group(r->s->pid, SIGKILL);
        reap(r);
        r->exited = true;
    }
    if (utf8_finish(&r->dec, &r->out) == 0)
        emit(r);
    return rc;
}

static void fill_result(const struct shell_run *r, rein_run_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->cancelled = r->end == END_CANCEL;
    res->timed_out = r->end == END_TIMEOUT;
    if (r->end == END_STATUS) {
        res->has_exit_code = true;
        res->exit_code = r->status_code;
    } else if (r->end == END_EXIT) {
        res->has_exit_code = true;
        res->exit_code = r->exit_code;
    }
}

/* ------------------------------------------------------------- spawn */

/* Spawns bash with out on 1+2 and the extra fds; maps spawn's errors. */
static int shell_spawn(const char *const *argv, const env_t *env,
                       const char *cwd, int out, const int *extra,
                       size_t n_extra, bool want_pidfd,
                       struct shell_sess *s)
{
    spawn_opts_t so;
    spawn_step_t step = SPAWN_STEP_NONE;
    spawn_opts_init(&so);
    so.file = shell_program;
    so.argv = argv;
    so.envp = (const char *const *)env->v;
    so.cwd = cwd;
    so.fd_out = so.fd_err = out;
    so.group = SPAWN_SESSION;
    so.want_pidfd = want_pidfd;
    so.extra_fds = extra;
    so.n_extra_fds = n_extra;
    int rc = spawn_start(&so, &s->pid, &s->pidfd, &step);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0)
        return step == SPAWN_STEP_CHDIR ? REIN_ECWD : REIN_ESHELL_INIT;
    return 0;
}

/* ---------------------------------------------------------- one-shot */

int rein_shell_exec(const rein_shell_opts_t *opts,
                    const rein_shell_run_opts_t *run,
                    rein_run_result_t *result)
{
    struct shell_run r;
    struct shell_sess s;
    env_t env = {NULL, 0};
    int pfd[2] = {-1, -1}, mfd[2] = {-1, -1}, rc;
    const char *snap = opts ? opts->snapshot_path : NULL;

    if (!run || !run->command || !result)
        return -EINVAL;
    memset(result, 0, sizeof *result);
    sess_init(&s);
    if ((rc = run_init(&r, NULL, run, &s, false)) < 0)
        goto out;
    if ((rc = shell_build_env(&env, opts ? opts->session_env : NULL,
                              run->env)) < 0)
        goto out;
    if (pipe2(pfd, O_CLOEXEC) < 0 ||
        (snap && pipe2(mfd, O_CLOEXEC) < 0)) {
        rc = -errno;
        goto out;
    }
    if (snap) /* ours only: bash's end stays blocking */
        fcntl(mfd[0], F_SETFL, fcntl(mfd[0], F_GETFL) | O_NONBLOCK);
    const char *plain[] = {shell_program, "--noprofile", "--norc", "-c",
                           run->command, NULL};
    const char *with_snap[] = {shell_program, "--noprofile", "--norc", "-c",
                               SHELL_ONESHOT_SNAPSHOT, shell_program, snap,
                               run->command, NULL};
    rc = shell_spawn(snap ? with_snap : plain, &env, run->cwd, pfd[1],
                     snap ? &mfd[1] : NULL, snap ? 1 : 0,
                     loop_uses_pidfd(r.loop), &s);
    close(pfd[1]);
    pfd[1] = -1;
    if (mfd[1] >= 0) {
        close(mfd[1]);
        mfd[1] = -1;
    }
    if (rc < 0)
        goto out;
    s.out = pfd[0];
    pfd[0] = -1;
    fcntl(s.out, F_SETFL, fcntl(s.out, F_GETFL) | O_NONBLOCK);

    rc = run_drive(&r);
    if (rc == 0 && r.err)
        rc = r.err;
    if (rc == 0 && snap && r.end == END_EXIT) {
        char c;
        if (read(mfd[0], &c, 1) != 1)
            rc = REIN_ESNAPSHOT;
    }
    if (rc == 0)
        fill_result(&r, result);
out:
    sess_close(&s);
    for (int i = 0; i < 2; i++) {
        if (pfd[i] >= 0)
            close(pfd[i]);
        if (mfd[i] >= 0)
            close(mfd[i]);
    }
    env_free(&env);
    run_free(&r);
    return rc;
}

/* -------------------------------------------------------- persistent */

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

int rein_shell_new(const rein_shell_opts_t *opts, rein_shell_t **out)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    rein_shell_t *sh = calloc(1, sizeof *sh);
    if (!sh)
        return -ENOMEM;
    int rc = -ENOMEM;
    sess_init(&sh->sess);
    sh->wake_fd = -1;
    const char *const *senv = opts ? opts->session_env : NULL;
    size_t n = 0;
    while (senv && senv[n]) {
        if (!env_valid(senv[n])) {
            rc = REIN_EENV;
            goto fail;
        }
        n++;
    }
    if (senv) {
        if (!(sh->session_env = calloc(n + 1, sizeof *sh->session_env)))
            goto fail;
        for (size_t i = 0; i < n; i++)
            if (!(sh->session_env[i] = strdup(senv[i])))
                goto fail;
    }
    if (opts && opts->snapshot_path &&
        !(sh->snapshot = strdup(opts->snapshot_path)))
        goto fail;
    sh->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sh->wake_fd < 0) {
        rc = -errno;
        goto fail;
    }
    pthread_mutex_init(&sh->mu, NULL);
    atomic_init(&sh->abort_req, false);
    *out = sh;
    return 0;
fail:
    strv_free(sh->session_env);
    free(sh->snapshot);
    free(sh);
    return rc;
}

/* Starts the session's bash running the driver. */
static int shell_start(rein_shell_t *sh, bool want_pidfd)
{
    env_t env = {NULL, 0};
    int pfd[2] = {-1, -1}, sv[2] = {-1, -1}, rc;
    struct shell_sess *s = &sh->sess;
    if ((rc = shell_build_env(&env, (const char *const *)sh->session_env,
                              NULL)) < 0)
        return rc;
    if (pipe2(pfd, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = -errno;
        goto out;
    }
    const char *argv[] = {shell_program, "--noprofile", "--norc", "-c",
                          SHELL_DRIVER, shell_program,
                          sh->snapshot ? sh->snapshot : "", NULL};
    rc = shell_spawn(argv, &env, NULL, pfd[1], &sv[1], 1, want_pidfd, s);
    if (rc < 0)
        goto out;
    s->out = pfd[0];
    s->chan = sv[0];
    pfd[0] = sv[0] = -1;
    fcntl(s->out, F_SETFL, fcntl(s->out, F_GETFL) | O_NONBLOCK);
    sh->live = true;
out:
    for (int i = 0; i < 2; i++) {
        if (pfd[i] >= 0)
            close(pfd[i]);
        if (sv[i] >= 0)
            close(sv[i]);
    }
    env_free(&env);
    return rc;
}

/* Terminates and reaps the session's bash and all it left; closes it. */
static int shell_drop(rein_shell_t *sh)
{
    struct shell_run r;
    int rc = 0;
    if (!sh->live)
        return 0;
    /* Not persistent for the engine: no status is expected any more, so
     * the control socket is not even watched. */
    if ((rc = run_init(&r, sh, NULL, &sh->sess, false)) == 0)
        rc = run_drive(&r);
    else if (sh->sess.pid > 0) {
        /* No loop to wait in: the hard way, still never leaving it. */
        ptree_signal_group(sh->sess.pid, SIGKILL);
        spawn_reap(sh->sess.pid, sh->sess.pidfd, NULL);
    }
    run_free(&r);
    sess_close(&sh->sess);
    sh->live = false;
    return rc;
}

/* True when the session's bash has exited (not reaped yet). */
static bool shell_exited(const struct shell_sess *s)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int rc;
    if (s->pidfd >= 0)
        rc = waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &info,
                    WEXITED | WNOHANG | WNOWAIT);
    else
        rc = waitid(P_PID, (id_t)s->pid, &info, WEXITED | WNOHANG | WNOWAIT);
    return rc == 0 && info.si_pid != 0;
}

/* cwd NUL count NUL entries... command NUL */
static int build_request(buf_t *b, const rein_shell_run_opts_t *run)
{
    size_t n = 0;
    while (run->env && run->env[n])
        n++;
    int rc = buf_append(b, run->cwd ? run->cwd : "",
                        (run->cwd ? strlen(run->cwd) : 0) + 1);
    if (rc == 0)
        rc = buf_printf(b, "%zu", n);
    if (rc == 0)
        rc = buf_append_byte(b, 0);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = buf_append(b, run->env[i], strlen(run->env[i]) + 1);
    if (rc == 0)
        rc = buf_append(b, run->command, strlen(run->command) + 1);
    return rc;
}

int rein_shell_run(rein_shell_t *sh, const rein_shell_run_opts_t *run,
                   rein_run_result_t *result)
{
    struct shell_run r;
    int rc;
    if (!sh || !run || !run->command || !result)
        return -EINVAL;
    memset(result, 0, sizeof *result);
    for (size_t i = 0; run->env && run->env[i]; i++)
        if (!shell_env_exportable(run->env[i]))
            return REIN_EENV;

    pthread_mutex_lock(&sh->mu);
    if (sh->running) {
        pthread_mutex_unlock(&sh->mu);
        return REIN_ESHELL_BUSY;
    }
    sh->running = true;
    pthread_mutex_unlock(&sh->mu);

    if ((rc = run_init(&r, sh, run, &sh->sess, true)) < 0)
        goto out;
    if (sh->live && shell_exited(&sh->sess)) {
        /* bash died between runs (killed from outside): its state is
         * gone, which the caller must hear about rather than find out. */
        shell_drop(sh);
        rc = REIN_ESHELL_EXEC;
        goto out;
    }
    if (!sh->live && (rc = shell_start(sh, loop_uses_pidfd(r.loop))) < 0)
        goto out;
    if ((rc = build_request(&r.req, run)) < 0)
        goto out;

    rc = run_drive(&r);
    if (rc == 0 && r.err)
        rc = r.err;
    if (rc == 0)
        fill_result(&r, result);
    /* Keep the session only after a status from a live bash.  Otherwise
     * the run has normally terminated and reaped everything already; if
     * not (bash exited right after its status), the drop does it. */
    if (r.end != END_STATUS || r.exited) {
        if (!r.reaped) {
            shell_drop(sh);
        } else {
            sess_close(&sh->sess);
            sh->live = false;
        }
    }
out:
    run_free(&r);
    pthread_mutex_lock(&sh->mu);
    sh->running = false;
    atomic_store(&sh->abort_req, false);
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

int rein_shell_abort(rein_shell_t *sh)
{
    int rc = 0;
    if (!sh)
        return -EINVAL;
    pthread_mutex_lock(&sh->mu);
    if (sh->running) {
        uint64_t one = 1;
        atomic_store(&sh->abort_req, true);
        if (write(sh->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
            rc = -errno;
    }
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

void rein_shell_free(rein_shell_t *sh)
{
    if (!sh)
        return;
    /* Freeing a shell that runs is a caller bug; we cannot stop the thread
     * inside run, so refuse to tear the mutex down under it. */
    pthread_mutex_lock(&sh->mu);
    bool running = sh->running;
    pthread_mutex_unlock(&sh->mu);
    if (running)
        return;
    shell_drop(sh);
    close(sh->wake_fd);
    pthread_mutex_destroy(&sh->mu);
    strv_free(sh->session_env);
    free(sh->snapshot);
    free(sh);
}
