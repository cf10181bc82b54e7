/*
 * shell.c — bash for an agent, one-shot or persistent (rein.h: rein_shell_*).
 *
 * Both modes run `/bin/bash --noprofile --norc` as a run of the supervisor
 * (sup.c), like pty.c: spawning it in a session of its own, watching its
 * exit, and ending it and everything it started (TERM + CONT to the whole
 * run, REIN_SHELL_GRACE_MS, KILL, rescans, every signal verified) are the
 * supervisor's, so a shell run has the same lifecycle, ownership and
 * cleanup as every other run.  Each rein_shell_t keeps one ephemeral
 * supervisor (no registry, no log) for its whole life, and each one-shot
 * call opens its own, at the `pgid` containment level: a library call must
 * not turn its host into a child subreaper.  stdin is /dev/null, stdout and
 * stderr are ONE pipe (for a persistent command, one FIFO: "Output" below)
 * so the output keeps the order the command wrote it in; it reaches the
 * caller as UTF-8 chunks.
 *
 * Environment: the current environ minus the variables that would change
 * how bash itself behaves (prompts, PWD/OLDPWD/SHLVL, exported functions,
 * BASH_ENV/ENV, SHELLOPTS/BASHOPTS, IFS, CDPATH; see shell_env_skip), then
 * the session env laid over it — handed to the supervisor as the run's
 * whole environment (sup_spawn_extra_t.envp).
 *
 * One-shot (rein_shell_exec): `bash -c <command>` with the command-scoped
 * env simply in its environment, the cwd set by spawn and timeout_ms the
 * run's own.  With a snapshot, a small fixed script sources it first (stdio
 * on /dev/null) and reports success with one byte on fd 3 before eval'ing
 * the command; the paths and the command travel in argv, never pasted into
 * script text.  rein_shell_exec of `true` must stay within 1.3x of a bare
 * spawn+wait of `bash -c true`.
 *   After bash exits, the supervisor drains the pipe until EOF,
 * REIN_SHELL_DRAIN_IDLE_MS without output, or REIN_SHELL_DRAIN_MAX_MS in all
 * (sup_spawn_extra_t.exit_drain_*), so what a background job prints just
 * after the command is kept; then, because rein leaves nothing running, it
 * ends whatever is left of the run.  bash stays an unreaped zombie until
 * that is done, so its pid cannot be reused while its group is signalled.
 *
 * Persistent (rein_shell_t): bash runs a driver loop (SHELL_DRIVER) that
 * keeps cwd, variables and functions between runs; the supervisor's run
 * lives as long as the session, and is only driven while a call runs.  It
 * talks to us over a socketpair placed at its fd 3 (sup_spawn_extra_t
 * extra_fds; moved to fd 60 at once, out of the way of scripts that use
 * `exec 3>...`):
 *   request  fifo NUL cwd NUL count NUL NAME=value NUL ... command NUL
 *   status   "r\n" ready (after the snapshot) | "n\n" snapshot failed |
 *            "s <code>\n" command done | "c\n" cd failed |
 *            "f\n" the FIFO could not be opened
 * A socket rather than the two pipes one might expect: writing to a pipe
 * whose reader died raises SIGPIPE in the host, while send(MSG_NOSIGNAL)
 * only fails; and one socket carries both directions.  Paths, cwd, env and
 * command travel as data, never pasted into script text.
 *
 * Output (persistent).  bash holds the supervisor's pipe open between
 * runs, so that pipe never reaches EOF at the end of a command and cannot
 * say when the command's output is complete.  So each run gets a channel
 * of its own: a FIFO (0600) in a private 0700 directory of the session
 * (mkdtemp under $TMPDIR or /tmp, made on the first run, removed at free).
 * We open its read end (non-blocking) before sending the request; the
 * driver redirects the command's stdout and stderr, and nothing else of
 * its own, to it; background jobs the command starts inherit the write
 * end.  Then, exactly as the one-shot:
 *   - the run's output is everything read from its channel (and from the
 *     pipe, where bash's own messages go) until the channel's EOF — every
 *     writer gone — or REIN_SHELL_DRAIN_IDLE_MS without output after the
 *     status line, or REIN_SHELL_DRAIN_MAX_MS after it in all;
 *   - a plain command pays nothing: bash closes its write end before it
 *     writes the status, so EOF is there when the status arrives.
 * A job still holding its channel after the drain neither gets SIGPIPE
 * nor loses output: the channel stays open as one of the session's
 * lingering channels, watched on the loop and read while later calls run
 * (what is read belongs to the call it is read in), closed at its EOF, when
 * the session is dropped, or — the fd budget, SHELL_LINGER_MAX in shell.h
 * — oldest first when a newer one would exceed the bound (what it holds
 * is read first; its job's next write fails with EPIPE).  Each channel
 * has its own UTF-8 decoder.  The FIFO's name is unlinked when its call is
 * over; whoever holds it open keeps it.
 *   When bash exits in the middle of a run (`exit` in the command), the
 * supervisor's exit drain reads the pipe as for the one-shot, and holds
 * the leftovers (sup_spawn_extra_t.on_leader_exit) until the command's
 * channel is drained the same way, so a job's late output is kept there
 * too before the job is ended.
 *   bash keeps a duplicate of the control socket while the command runs
 * (the save copy behind `{ ... } 60<&-`, close-on-exec), so the command's
 * subshells may hold it; no decision here depends on that socket's EOF,
 * only on bash's exit.  The command itself can write on it: see the
 * comment above SHELL_DRIVER for what that can and cannot do.
 *
 * How a run ends, first reason wins:
 *   status   (persistent) the driver reports the command's status; after
 *            the drain the call returns and the session is kept.  A cwd
 *            that cannot be entered ("c": REIN_ECWD) is an error instead:
 *            like every run that returns an error, it drops the session.
 *   exit     bash exits: `exit`, break/continue out of the driver, or the
 *            end of a one-shot.  The supervisor drains, ends leftovers and
 *            reaps.  A persistent session is dropped; one killed by a
 *            signal from outside is REIN_ESHELL_EXEC.
 *   cancel / timeout   rein_shell_abort(), the token or timeout_ms: the
 *            supervisor cancels the run with REIN_SHELL_GRACE_MS of grace;
 *            the session is dropped.  No exit code.  Once the status came
 *            (or bash exited on its own) the command is over: a cancel
 *            during the drain changes nothing.
 * Anything else that ends the run (the supervisor ends a run whose process
 * left its session: an ownership escape) is REIN_ESHELL_EXEC.
 */
#include "exec/shell.h"

#include "rein.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cancel.h"
#include "base/env.h"
#include "base/loop.h"
#include "base/spawn.h"
#include "base/utf8.h"
#include "supervise/sup.h"

/* The longest status line the driver writes ("s 255\n" and the like). */
#define SHELL_LINE_MAX 64
/* How bash exports functions through the environment. */
#define SHELL_FUNC_EXPORT_PREFIX "BASH_FUNC_"
/* Command-scoped variables the driver keeps to itself. */
#define SHELL_PRIVATE_PREFIX "__rein_"
/* The containment of shell runs started through the library (as pty.c). */
#define SHELL_CONTAINMENT "pgid"
/* Events handled before a persistent run, at most: output of background
 * jobs waiting in the pipe or in lingering channels, and the news of a
 * bash that died between runs. */
#define SHELL_PUMP_MAX 64
/* Bytes asked for per read of a persistent session's output channels. */
#define SHELL_READ_BUF 65536
/* Reads of one channel per wake-up, at most: a job that writes as fast as
 * we read must not keep the loop from its timers (the drain's bounds). */
#define SHELL_READS_MAX 16
/* The session's private directory of FIFOs, under $TMPDIR or /tmp. */
#define SHELL_DIR_TEMPLATE "rein-shell-XXXXXX"
/* The driver's read timeout while TMOUT is set (a user's, or a snapshot's
 * `readonly TMOUT`): `read` takes TMOUT as its default timeout, and a
 * timed-out read would end the session.  About three years. */
#define SHELL_READ_FOREVER_S "99999999"

extern char **environ;

static const char *shell_program = SHELL_BASH_PATH;

void shell_set_program(const char *path)
{
    shell_program = path ? path : SHELL_BASH_PATH;
}

/*
 * The persistent driver.  $1 is the snapshot path ("" for none).  Written
 * against a hostile session: every builtin goes through `builtin` (a
 * snapshot may define functions named cd, read or :) — except `exec`, which
 * makes redirections permanent only when it is the command word itself, and
 * runs before any function can exist — the whole script is one
 * { } group so it is parsed before a snapshot can enable aliases, it never
 * lets a plain command fail (the user may have said set -e or set -u), and
 * its variables share the SHELL_PRIVATE_PREFIX.
 *   A `set -x` or `set -a` of the user's applies to their commands only:
 * each is switched off (silently, stderr on /dev/null) right after the
 * snapshot and after each command, and back on right before the next (as
 * __rein_flags, the `$-` it left, says), so the driver's own lines are
 * never traced into the output and its variables never reach a child's
 * environment; only the `eval` line itself shows in a trace.
 *   `$?` carries, as in a terminal: each command starts with it set to the
 * status of the session's previous command (__rein_last).  The first
 * command of a session sees 0, as `bash -c` does, also after a snapshot
 * (sourcing it is setting up, not a command), and so does the first after
 * anything that drops the session (a failed cd included: rein drops the
 * session on "c", so the next command starts a fresh bash).  bash cannot
 * assign `$?`, and `(exit N)` would fork a subshell per command, so a
 * function sets it: __rein_status returns its argument, unsetting itself
 * first so the command never sees it (defined again for every command, it
 * also survives an `unset -f` of every function).  It is called in an &&
 * list, where a non-zero status neither stops a set -e shell nor runs an
 * ERR trap, and the list ends in `builtin :` because `:` may be a
 * function.  It runs after set -x/-a are back on, but in a { } group on
 * /dev/null, so its trace and whatever a DEBUG or RETURN trap prints from
 * those lines is not seen (unless BASH_XTRACEFD sends traces to a file of
 * the user's: there it shows, like the driver's lines after the command);
 * a DEBUG trap before the `eval` keeps `$?`.  PIPESTATUS then holds that
 * one status: the statuses of a pipeline's stages cannot be set again
 * without running a pipeline.  Under set -e a command whose status is not
 * 0 ends the shell even when bash would let it pass at the top level
 * (`false && true`): its status is eval's, a simple command, and bash
 * exits on it as `bash -c 'set -e; eval "false && true"'` does; so set -e
 * is on at that && list only when something after the command (a DEBUG
 * trap) switched it on.
 *   The command runs in `for ... in 1` so break/continue at its top level
 * land there: __rein_done stays empty and the driver exits, which drops
 * the session (the seed drops a session whose command ends in loop
 * control).  A `break N` or `continue N` reaching past that loop lands on
 * the driver's own loop: the first leaves it, and the second finds
 * __rein_busy still set in its condition and leaves it too, so the driver
 * exits either way.  The loop is an `until` for the sake of `set -n`:
 * bash then executes nothing, a skipped condition counts as the last
 * status (that of `set -n`, 0), and `until` stops on 0 where `while` would
 * spin; the driver falls off its end and bash exits.
 *   The reads take an explicit timeout (SHELL_READ_FOREVER_S) only while
 * TMOUT is set, since with one bash polls before each byte it reads.
 * DEBUG and ERR traps of the user's fire on the driver's lines too (an
 * ERR trap once more for a failed command as a whole): bash 5.2 has no
 * way to save and restore a trap without a subshell per command.  Those
 * on the lines before the command print to /dev/null (see `$?` above).
 *   Its stdout and stderr (and the xtrace lines) go to the
 * run's FIFO, $__rein_out, for the command only: the redirection is on a
 * { } group, so bash undoes it, closing its write end, as soon as the
 * command returns, and only the command's own processes can hold the FIFO
 * open after that.  A redirection that fails (__rein_open stays empty)
 * is "f", and the driver exits: no command ran.  A failed cd is "c" and
 * the driver waits for the next request, but rein drops the session.
 * Command-scoped variables are exported after the cd and put back
 * afterwards, in reverse order: unset (u), exported (x) or a plain shell
 * variable (s) with its old value.
 *   What this does not defend against: a command that means to lie to
 * rein.  The command runs in the driver's own bash, with everything the
 * driver has.  `60<&-` keeps fd 60 from it, but bash holds the socket's
 * save copy at some fd >= 10 while the command runs (close-on-exec, so
 * the programs it starts do not have it; its subshells do), and a command
 * can find that fd in /proc/self/fd and write "s 0" on it: the call then
 * returns 0 at once while the command goes on, and the session stays one
 * command out of step (each later call gets the previous command's status,
 * and output can be lost) until it is dropped.  No secret can tell the
 * driver's lines from such a one, since the command can read whatever the
 * driver knows (its variables, its fds, the requests still in the socket)
 * and even replace the driver's every step (a function named `builtin`);
 * only a process per command, a fork per run, would keep them apart.  A
 * command can end with any status it likes and leave jobs running past
 * its call anyway; what lying gains it is a confused session of its own.
 */
static const char SHELL_DRIVER[] =
    "{\n"
    "exec 60<&3 3<&-\n"
    "__rein_flags=\n"
    "if [[ -n $1 ]]; then\n"
    "  if [[ -f $1 && -r $1 ]]; then\n"
    "    { builtin source \"$1\"; __rein_flags=$-; builtin set +xa\n"
    "      builtin export -n __rein_flags; } </dev/null >/dev/null 2>&1 60<&-\n"
    "  else\n"
    "    builtin printf 'n\\n' >&60\n"
    "    builtin exit 1\n"
    "  fi\n"
    "fi\n"
    "builtin set --\n"
    "__rein_busy= __rein_rc=0\n"
    "builtin printf 'r\\n' >&60\n"
    "until [[ -n $__rein_busy ]] || {\n"
    "        __rein_t=()\n"
    "        [[ ! -v TMOUT ]] || __rein_t=(-t " SHELL_READ_FOREVER_S ")\n"
    "        ! { IFS= builtin read -r \"${__rein_t[@]}\" -d '' __rein_out <&60 &&\n"
    "            IFS= builtin read -r \"${__rein_t[@]}\" -d '' __rein_cwd <&60 &&\n"
    "            IFS= builtin read -r \"${__rein_t[@]}\" -d '' __rein_n <&60; }\n"
    "      }; do\n"
    "  __rein_envs=() __rein_olds=() __rein_how=() __rein_i=0\n"
    "  while [[ $__rein_i -lt $__rein_n ]]; do\n"
    "    IFS= builtin read -r \"${__rein_t[@]}\" -d '' __rein_e <&60 ||\n"
    "      builtin exit 1\n"
    "    __rein_envs[__rein_i]=$__rein_e\n"
    "    __rein_i=$((__rein_i + 1))\n"
    "  done\n"
    "  IFS= builtin read -r \"${__rein_t[@]}\" -d '' __rein_cmd <&60 ||\n"
    "    builtin exit 1\n"
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
    "    builtin export \"$__rein_e\" 2>/dev/null || builtin :\n"
    "    __rein_i=$((__rein_i + 1))\n"
    "  done\n"
    "  __rein_done= __rein_open= __rein_last=$__rein_rc __rein_rc=0\n"
    "  __rein_busy=1\n"
    "  for __rein_once in 1; do\n"
    "    {\n"
    "      __rein_open=1\n"
    "      { __rein_status() {\n"
    "          builtin unset -f __rein_status\n"
    "          builtin return \"$1\"\n"
    "        } || builtin :\n"
    "        [[ $__rein_flags != *a* ]] || builtin set -a\n"
    "        [[ $__rein_flags != *x* ]] || builtin set -x\n"
    "        __rein_status \"$__rein_last\" && builtin :; } >/dev/null 2>&1\n"
    "      builtin eval \"$__rein_cmd\"\n"
    "      { __rein_rc=$? __rein_done=1 __rein_flags=$-; builtin set +xa\n"
    "        builtin export -n __rein_rc __rein_done __rein_flags; } 2>/dev/null\n"
    "    } >\"$__rein_out\" 2>&1 60<&-\n"
    "  done\n"
    "  if [[ -z $__rein_open ]]; then\n"
    "    builtin printf 'f\\n' >&60\n"
    "    builtin exit 1\n"
    "  fi\n"
    "  [[ -n $__rein_done ]] || builtin exit \"$__rein_rc\"\n"
    "  __rein_busy=\n"
    "  __rein_i=$__rein_n\n"
    "  while [[ $__rein_i -gt 0 ]]; do\n"
    "    __rein_i=$((__rein_i - 1))\n"
    "    __rein_e=${__rein_envs[__rein_i]}\n"
    "    __rein_v=${__rein_e%%=*}\n"
    "    case ${__rein_how[__rein_i]} in\n"
    "    u) builtin unset -v \"$__rein_v\" || builtin : ;;\n"
    "    x) builtin export \"$__rein_v=${__rein_olds[__rein_i]}\""
    " || builtin : ;;\n"
    "    *) builtin export -n \"$__rein_v\" || builtin :\n"
    "       builtin printf -v \"$__rein_v\" %s \"${__rein_olds[__rein_i]}\""
    " || builtin : ;;\n"
    "    esac\n"
    "  done 2>/dev/null\n"
    "  builtin printf 's %d\\n' \"$__rein_rc\" >&60\n"
    "done\n"
    "builtin exit \"$__rein_rc\"\n"
    "}\n";

/*
 * One-shot with a snapshot, or with a command too long for an argument
 * (SHELL_ARG_MAX).  $1 the snapshot ("" for none), $2 the command — or,
 * without $2, the command is read from a memfd, at fd 4 after a snapshot's
 * fd 3, else at fd 3, up to its NUL (a seekable fd, so bash reads it in
 * blocks).  The byte on fd 3 says the snapshot was sourced.  Both fds are
 * closed before the command so nothing of them is inherited.  The command
 * is expanded into eval's argument before __rein_c is unset, so the
 * command sees neither it nor $1/$2.
 */
static const char SHELL_ONESHOT_WRAP[] =
    "{\n"
    "if (( $# < 2 )); then\n"
    "  __rein_fd=3\n"
    "  [[ -z $1 ]] || __rein_fd=4\n"
    "  IFS= builtin read -r -d '' __rein_c <&\"$__rein_fd\"\n"
    "  exec {__rein_fd}<&-\n"
    "  builtin unset -v __rein_fd\n"
    "fi\n"
    "if [[ -n $1 ]]; then\n"
    "  if [[ -f $1 && -r $1 ]]; then\n"
    "    builtin source \"$1\" </dev/null >/dev/null 2>&1 3>&-\n"
    "  else\n"
    "    builtin exit 1\n"
    "  fi\n"
    "  builtin printf r >&3\n"
    "  exec 3>&-\n"
    "fi\n"
    "(( $# < 2 )) || __rein_c=$2\n"
    "builtin set --\n"
    "builtin eval \"builtin unset -v __rein_c\n$__rein_c\"\n"
    "}\n";

/* --------------------------------------------------------- the objects */

struct shell_run;

/* An output channel of a persistent session: our read end of one run's
 * FIFO.  Each has its own decoder, so a character split across two reads
 * of one channel is never broken by bytes of another in between. */
struct shell_chan {
    rein_shell_t *sh;
    int fd;
    bool eof; /* every writer is gone */
    utf8_dec_t dec;
};

struct rein_shell {
    pthread_mutex_t mu; /* guards running */
    bool running;
    int wake_fd; /* eventfd: rein_shell_abort wakes the running loop */
    atomic_bool abort_req;
    char **session_env; /* NULL-terminated copy, or NULL */
    char *snapshot;     /* or NULL */
    rein_sup_t *sup;    /* made on the first run, kept until free */
    int64_t id;         /* the session's run (its bash), or 0 */
    int chan;           /* our end of the control socket, or -1 */
    bool ready;         /* its bash said "r": the snapshot was sourced */
    /* The call being driven, which the run's callbacks report to; NULL
     * between calls and while the session is dropped. */
    struct shell_run *cur;
    char *dir;         /* private 0700 directory of the FIFOs, or NULL */
    uint64_t fifo_seq; /* names the next run's FIFO */
    char *rbuf;        /* SHELL_READ_BUF bytes for channel reads */
    /* Channels of finished runs that background jobs still hold, oldest
     * first, watched on the loop: read during later runs. */
    struct shell_chan *linger[SHELL_LINGER_MAX];
    size_t n_linger;
};

enum shell_end { END_NONE, END_STATUS, END_EXIT, END_CANCEL, END_TIMEOUT };

/* The state of one call. */
struct shell_run {
    rein_shell_t *sh; /* NULL for one-shot */
    const rein_shell_run_opts_t *o;
    rein_sup_t *sup;
    int64_t id;
    enum shell_end end;
    bool done;   /* stop driving: a status arrived, or the run exited */
    bool exited; /* the supervisor's run is over; info says how */
    rein_run_info_t info;
    int status_code; /* the command's, from the driver */
    int err;         /* the first error */
    uint64_t t_timeout;
    buf_t req; /* request bytes; req_off of them sent */
    size_t req_off;
    char line[SHELL_LINE_MAX];
    size_t line_len;
    utf8_dec_t dec; /* of the supervisor's pipe */
    buf_t out;
    /* Persistent: the command's own channel and the drain after it. */
    struct shell_chan *own; /* or NULL (one-shot, or handed on) */
    char *fifo;             /* its path, unlinked when the call is over */
    bool own_watched;
    bool draining, drained; /* the drain runs / is over */
    bool holding;           /* the supervisor waits for our drain */
    uint64_t t_idle, t_max;
};

/* ------------------------------------------------------- environment */

/* Variables bash would act on at start, which the host's values must not
 * steer (the seed's skip-list); BASH_FUNC_* (exported functions) too. */
static const char *const shell_env_skip[] = {
    "PS1",    "PS2",      "PS3",      "PS4",     "PROMPT_COMMAND",
    "PWD",    "OLDPWD",   "SHLVL",    "BASH_ENV", "ENV",
    "SHELLOPTS", "BASHOPTS", "CDPATH", "IFS",    "BASH_XTRACEFD",
    "TMOUT",  NULL};

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

/* ------------------------------------------------------------ output */

static void emit(struct shell_run *r)
{
    if (r->out.len && r->o->on_chunk)
        r->o->on_chunk(r->out.p, r->out.len, r->o->data);
    buf_reset(&r->out);
}

/* Hands n bytes of a stream whose decoder is d to the run, at once (valid
 * UTF-8 without a copy): a fast writer must not make us buffer its whole
 * output. */
static void deliver(struct shell_run *r, utf8_dec_t *d, const void *p,
                    size_t n)
{
    if (utf8_forward(d, p, n, &r->out, r->o->on_chunk, r->o->data) < 0 &&
        !r->err)
        r->err = -ENOMEM;
}

/* The run's callbacks get a slot holding the call they report to (the
 * one-shot's own, or rein_shell_t.cur), so a session's run, which outlives
 * each call, never reaches a call that is over. */
static void on_output(rein_sup_t *s, int64_t id, const void *data, size_t n,
                      void *ud)
{
    (void)s;
    (void)id;
    struct shell_run *r = *(struct shell_run **)ud;
    if (!r)
        return; /* a session being dropped: no one to hand it to */
    deliver(r, &r->dec, data, n);
}

/* Persistent sessions: the command's output reaches us through a FIFO of
 * its own per run (a channel); see the header comment, "Output". */

/* Reads what channel c holds now, handing it to r (NULL: the session is
 * going, the bytes with it).  At EOF, marks c and hands on the held tail
 * of its decoder; the caller stops watching and closes it.  True when any
 * byte came. */
static bool chan_read(struct shell_chan *c, struct shell_run *r)
{
    bool got = false;
    for (int k = 0; k < SHELL_READS_MAX && !c->eof; k++) {
        ssize_t n = read(c->fd, c->sh->rbuf, SHELL_READ_BUF);
        if (n > 0) {
            got = true;
            if (r)
                deliver(r, &c->dec, c->sh->rbuf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        /* EOF: every writer is gone (we read only once one came; see
         * own_open).  Any other error: nothing more will come either. */
        c->eof = true;
        if (r && utf8_finish(&c->dec, &r->out) == 0)
            emit(r);
        utf8_init(&c->dec);
    }
    return got;
}

static void chan_close(struct shell_chan *c, loop_t *l)
{
    if (!c)
        return;
    if (l)
        loop_io_del(l, c->fd); /* a no-op when not watched */
    close(c->fd);
    free(c);
}

static void drain_end(struct shell_run *r);
static void on_drain_timer(loop_t *l, uint64_t id, void *data);

/* Reads the run's own channel; output during the drain restarts its idle
 * window, EOF ends it. */
static void own_read(struct shell_run *r)
{
    struct shell_chan *c = r->own;
    if (!c || c->eof)
        return;
    bool got = chan_read(c, r);
    loop_t *l = sup_loop(r->sup);
    if (c->eof) {
        if (r->own_watched)
            loop_io_del(l, c->fd);
        r->own_watched = false;
        drain_end(r);
        return;
    }
    if (got && r->t_idle) {
        loop_timer_del(l, r->t_idle);
        r->t_idle = 0;
        int rc = loop_timer_add(l, REIN_SHELL_DRAIN_IDLE_MS, on_drain_timer,
                                r, &r->t_idle);
        if (rc < 0) {
            if (!r->err)
                r->err = rc;
            drain_end(r);
        }
    }
}

static void on_own(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    own_read(data);
}

/* The foreground command is over (its status came, or bash exited): the
 * command's output goes on until its channel's EOF, REIN_SHELL_DRAIN_IDLE_MS
 * without any, or REIN_SHELL_DRAIN_MAX_MS in all — the one-shot's drain. */
static void drain_begin(struct shell_run *r)
{
    if (r->draining || r->drained)
        return;
    r->draining = true;
    own_read(r);
    if (!r->draining)
        return; /* EOF already: no writer was left */
    if (!r->own || r->own->eof) {
        drain_end(r);
        return;
    }
    loop_t *l = sup_loop(r->sup);
    int rc = loop_timer_add(l, REIN_SHELL_DRAIN_IDLE_MS, on_drain_timer, r,
                            &r->t_idle);
    if (rc == 0)
        rc = loop_timer_add(l, REIN_SHELL_DRAIN_MAX_MS, on_drain_timer, r,
                            &r->t_max);
    if (rc < 0) {
        if (!r->err)
            r->err = rc;
        drain_end(r);
    }
}

/* The drain is over.  After a status the call is; after bash's exit the
 * supervisor may now end the leftovers, and the call ends with the run. */
static void drain_end(struct shell_run *r)
{
    if (!r->draining)
        return;
    loop_t *l = sup_loop(r->sup);
    r->draining = false;
    r->drained = true;
    loop_timer_del(l, r->t_idle);
    loop_timer_del(l, r->t_max);
    r->t_idle = r->t_max = 0;
    if (r->holding) {
        r->holding = false;
        if (!r->exited)
            sup_run_release(r->sup, r->id); /* may run on_exit_run now */
        return;
    }
    if (r->end == END_STATUS)
        r->done = true;
}

static void on_drain_timer(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    struct shell_run *r = data;
    if (id == r->t_idle)
        r->t_idle = 0;
    else if (id == r->t_max)
        r->t_max = 0;
    own_read(r); /* what came last is still the run's */
    drain_end(r);
}

/* sup_spawn_extra_t.on_leader_exit: bash exited on its own (an `exit` in
 * the command, or killed while we drained after a status).  What the
 * command's jobs write to its channel still belongs to the run, so the
 * supervisor leaves them alone until our drain is over. */
static bool on_leader_exit(rein_sup_t *s, int64_t id, void *ud)
{
    (void)s;
    (void)id;
    struct shell_run *r = *(struct shell_run **)ud;
    if (!r || !r->own || r->drained)
        return false; /* between calls, or the drain is done */
    drain_begin(r);
    if (!r->draining)
        return false;
    r->holding = true;
    return true;
}

/* Drops session sh's lingering channel at index k (closing it). */
static void linger_remove(rein_shell_t *sh, size_t k)
{
    chan_close(sh->linger[k], sh->sup ? sup_loop(sh->sup) : NULL);
    memmove(&sh->linger[k], &sh->linger[k + 1],
            (sh->n_linger - k - 1) * sizeof *sh->linger);
    sh->n_linger--;
}

/* A lingering channel has output or reached EOF: what it holds belongs to
 * the call being driven, if any (otherwise the session is being dropped). */
static void on_linger(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    struct shell_chan *c = data;
    rein_shell_t *sh = c->sh;
    chan_read(c, sh->cur);
    if (!c->eof)
        return;
    for (size_t k = 0; k < sh->n_linger; k++)
        if (sh->linger[k] == c) {
            linger_remove(sh, k);
            break;
        }
}

/* Keeps channel c, which background jobs still hold after run r's drain,
 * open: neither is a job that writes to it killed by SIGPIPE, nor is its
 * output lost; later runs read it.  Past SHELL_LINGER_MAX the oldest is
 * closed first, after what it holds is handed to r. */
static void linger_add(rein_shell_t *sh, struct shell_chan *c,
                       struct shell_run *r)
{
    loop_t *l = sup_loop(sh->sup);
    if (sh->n_linger == SHELL_LINGER_MAX) {
        struct shell_chan *old = sh->linger[0];
        chan_read(old, r);
        if (!old->eof && utf8_finish(&old->dec, &r->out) == 0)
            emit(r);
        linger_remove(sh, 0);
    }
    if (loop_io_add(l, c->fd, LOOP_READ, on_linger, c) < 0) {
        chan_close(c, NULL); /* cannot watch it: as if over the bound */
        return;
    }
    sh->linger[sh->n_linger++] = c;
}

/* Closes every lingering channel: the session's processes are ended. */
static void linger_clear(rein_shell_t *sh)
{
    while (sh->n_linger)
        linger_remove(sh, sh->n_linger - 1);
}

/* ----------------------------------------------------------- the run */

static void read_chan(struct shell_run *r);

static void on_exit_run(rein_sup_t *s, int64_t id, const rein_run_info_t *i,
                        void *ud)
{
    (void)s;
    (void)id;
    struct shell_run *r = *(struct shell_run **)ud;
    if (!r)
        return;
    /* A last status line (a failed snapshot) may still be in the socket. */
    if (r->sh)
        read_chan(r);
    r->info = *i;
    r->exited = true;
    /* What the command's processes wrote before they ended; they are all
     * gone, unless one escaped, which we do not wait for. */
    own_read(r);
    if (r->draining) {
        r->holding = false;
        drain_end(r);
    }
    r->done = true;
    if (r->end != END_NONE)
        return; /* ours: cancel, timeout, or a status that came first */
    switch (i->reason) {
    case REIN_REASON_EXIT:
    case REIN_REASON_SIGNAL:
        r->end = END_EXIT;
        if (r->sh && !r->sh->ready && !r->err)
            /* Before "r": the snapshot exited the shell (`exit`, `set -e`
             * and a failure, `${x?}`), so no command ran. */
            r->err = r->sh->snapshot ? REIN_ESNAPSHOT : REIN_ESHELL_INIT;
        if (r->sh && i->reason == REIN_REASON_SIGNAL && !r->err)
            r->err = REIN_ESHELL_EXEC; /* killed from outside */
        break;
    case REIN_REASON_OVERALL_TIMEOUT:
        r->end = END_TIMEOUT; /* the one-shot's timeout_ms */
        break;
    default:
        r->end = END_CANCEL; /* the supervisor ended it on its own */
        if (!r->err)
            r->err = REIN_ESHELL_EXEC;
        break;
    }
}

/* Cancels the run: the supervisor's TERM + CONT, grace, KILL.  Nothing to
 * do once the run ends by itself (bash exited: it is draining or ending
 * leftovers already). */
static void begin_kill(struct shell_run *r, enum shell_end why)
{
    rein_run_info_t i;
    if (r->end != END_NONE)
        return; /* the first reason wins */
    if (rein_sup_info(r->sup, r->id, &i) < 0 || i.state != REIN_RUN_RUNNING)
        return;
    r->end = why;
    rein_sup_cancel(r->sup, r->id, SIGTERM, REIN_SHELL_GRACE_MS);
}

/* Handles one status line of the driver. */
static void on_line(struct shell_run *r, const char *line)
{
    if (!strcmp(line, "r")) {
        r->sh->ready = true; /* the request is already queued behind it */
        return;
    }
    if (!strcmp(line, "n") || !strcmp(line, "f")) {
        /* The snapshot, or the redirection to the run's FIFO, failed. */
        if (!r->err)
            r->err = line[0] == 'n' ? REIN_ESNAPSHOT : REIN_ESHELL_EXEC;
        return; /* bash exits next */
    }
    if (r->end != END_NONE)
        return;
    if (!strcmp(line, "c")) {
        /* Nothing ran; rein_shell_run drops the session (an error). */
        r->end = END_STATUS;
        if (!r->err)
            r->err = REIN_ECWD;
        r->drained = true;
        r->done = true;
    } else if (line[0] == 's' && line[1] == ' ') {
        r->end = END_STATUS;
        r->status_code = atoi(line + 2);
        /* The command has returned: what bash itself wrote is in the pipe
         * by now, and the command's channel is drained until its writers
         * are gone. */
        sup_run_drain(r->sup, r->id);
        drain_begin(r);
    } else {
        if (!r->err)
            r->err = REIN_EINTERNAL;
        begin_kill(r, END_CANCEL); /* a confused driver: drop it */
    }
}

/* Reads status lines from the control socket. */
static void read_chan(struct shell_run *r)
{
    char tmp[SHELL_LINE_MAX];
    for (;;) {
        ssize_t n = recv(r->sh->chan, tmp, sizeof tmp, MSG_DONTWAIT);
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
        ssize_t n = send(r->sh->chan, r->req.p + r->req_off,
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
    loop_io_mod(sup_loop(r->sup), r->sh->chan, LOOP_READ);
}

static void on_chan(loop_t *l, int fd, unsigned ev, void *data)
{
    struct shell_run *r = data;
    if (ev & LOOP_WRITE)
        write_chan(r);
    if (ev & (LOOP_READ | LOOP_HUP))
        read_chan(r);
    if (ev & LOOP_HUP)
        loop_io_del(l, fd); /* level-triggered HUP: watch bash's exit */
}

static void on_timeout(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct shell_run *r = data;
    r->t_timeout = 0;
    begin_kill(r, END_TIMEOUT);
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

/* Drives the supervisor until the call is over: a status (persistent) or
 * the run's end.  0, or the loop's error (the run may then still live). */
static int run_drive(struct shell_run *r)
{
    const rein_shell_run_opts_t *o = r->o;
    loop_t *l = sup_loop(r->sup);
    int cfd = cancel_fd(o->cancel), rc = 0;
    bool chan = false, wake = false, cancel = false;
    if (r->sh) {
        if ((rc = loop_io_add(l, r->sh->chan,
                              LOOP_READ | (r->req.len ? LOOP_WRITE : 0),
                              on_chan, r)) < 0)
            goto out;
        chan = true;
        if ((rc = loop_io_add(l, r->sh->wake_fd, LOOP_READ, on_wake, r)) < 0)
            goto out;
        wake = true;
        if (r->own) {
            if ((rc = loop_io_add(l, r->own->fd, LOOP_READ, on_own, r)) < 0)
                goto out;
            r->own_watched = true;
        }
        /* A command's timeout is ours: the session's run outlives it. */
        if (o->timeout_ms &&
            (rc = loop_timer_add(l, o->timeout_ms, on_timeout, r,
                                 &r->t_timeout)) < 0)
            goto out;
    }
    if (cfd >= 0) {
        if ((rc = loop_io_add(l, cfd, LOOP_READ, on_cancel, r)) < 0)
            goto out;
        cancel = true;
    }
    /* An abort that raced with set-up, or a token raised before the run. */
    if ((r->sh && atomic_exchange(&r->sh->abort_req, false)) ||
        rein_cancel_triggered(o->cancel))
        begin_kill(r, END_CANCEL);
    while (!r->done) {
        rc = rein_sup_run_once(r->sup, -1);
        if (rc < 0)
            break;
        rc = 0;
    }
out:
    if (chan)
        loop_io_del(l, r->sh->chan); /* may be gone already (HUP) */
    if (wake)
        loop_io_del(l, r->sh->wake_fd);
    if (cancel)
        loop_io_del(l, cfd);
    if (r->own_watched)
        loop_io_del(l, r->own->fd);
    r->own_watched = false;
    loop_timer_del(l, r->t_timeout);
    loop_timer_del(l, r->t_idle);
    loop_timer_del(l, r->t_max);
    r->t_timeout = r->t_idle = r->t_max = 0;
    r->draining = false;
    if (utf8_finish(&r->dec, &r->out) == 0)
        emit(r);
    return rc;
}

static void run_init(struct shell_run *r, rein_shell_t *sh,
                     const rein_shell_run_opts_t *o)
{
    memset(r, 0, sizeof *r);
    r->sh = sh;
    r->o = o;
    utf8_init(&r->dec);
}

static void run_free(struct shell_run *r)
{
    chan_close(r->own, NULL); /* unless handed on to the session */
    r->own = NULL;
    if (r->fifo)
        unlink(r->fifo); /* whoever holds it keeps it: no one opens it */
    free(r->fifo);
    buf_free(&r->req);
    buf_free(&r->out);
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
        res->exit_code = r->info.exit_code;
    }
}

/* ------------------------------------------------------------- spawn */

static int shell_sup_open(rein_sup_t **out)
{
    rein_sup_opts_t so = {.ephemeral = true,
                          .containment = SHELL_CONTAINMENT,
                          .no_reconcile = true};
    return rein_sup_open(&so, out);
}

/* Starts bash as a run of s: argv, the whole environment env, extra on
 * fds 3.., the exit drain (held by hold, may be NULL, when bash exits);
 * the callbacks report to *slot.  Maps a failed spawn: a cwd that cannot be
 * entered is REIN_ECWD, any other failure to start bash REIN_ESHELL_INIT. */
static int shell_spawn(rein_sup_t *s, const char *const *argv,
                       const env_t *env, const char *cwd, uint32_t timeout_ms,
                       const int *extra, size_t n_extra,
                       bool (*hold)(rein_sup_t *, int64_t, void *),
                       struct shell_run **slot, int64_t *id)
{
    rein_run_opts_t ro = {
        .argv = argv,
        .cwd = cwd,
        .timeout_ms = timeout_ms,
        .grace_ms = REIN_SHELL_GRACE_MS,
        .on_output = on_output,
        .on_exit = on_exit_run,
        .data = slot,
    };
    sup_spawn_extra_t x = {
        .envp = (const char *const *)env->v,
        .extra_fds = extra,
        .n_extra_fds = n_extra,
        .exit_drain_idle_ms = REIN_SHELL_DRAIN_IDLE_MS,
        .exit_drain_max_ms = REIN_SHELL_DRAIN_MAX_MS,
        .on_leader_exit = hold,
    };
    spawn_step_t step = SPAWN_STEP_NONE;
    int rc = sup_spawn_ex(s, &ro, &x, id, &step);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0)
        return step == SPAWN_STEP_CHDIR ? REIN_ECWD : REIN_ESHELL_INIT;
    return 0;
}

/* ---------------------------------------------------------- one-shot */

/* A memfd holding command and its NUL, at offset 0: how a command too long
 * for an argument reaches bash (SHELL_ONESHOT_WRAP). */
static int shell_command_fd(const char *command, int *out)
{
    int fd = memfd_create("rein-shell-command", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(command) + 1, off = 0;
    while (off < len) {
        ssize_t n = write(fd, command + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int rc = -errno;
            close(fd);
            return rc;
        }
        off += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

int rein_shell_exec(const rein_shell_opts_t *opts,
                    const rein_shell_run_opts_t *run,
                    rein_run_result_t *result)
{
    struct shell_run r;
    struct shell_run *slot = &r;
    env_t env = {NULL, 0};
    int mfd[2] = {-1, -1}, cfd = -1, rc;
    const char *snap = opts ? opts->snapshot_path : NULL;

    if (!run || !run->command || !result)
        return -EINVAL;
    bool long_cmd = strlen(run->command) + 1 > SHELL_ARG_MAX;
    memset(result, 0, sizeof *result);
    run_init(&r, NULL, run);
    if ((rc = shell_build_env(&env, opts ? opts->session_env : NULL,
                              run->env)) < 0)
        goto out;
    if (snap && pipe2(mfd, O_CLOEXEC) < 0) {
        rc = -errno;
        goto out;
    }
    if (snap) /* ours only: bash's end stays blocking */
        fcntl(mfd[0], F_SETFL, fcntl(mfd[0], F_GETFL) | O_NONBLOCK);
    if (long_cmd && (rc = shell_command_fd(run->command, &cfd)) < 0)
        goto out;
    if ((rc = shell_sup_open(&r.sup)) < 0)
        goto out;
    const char *plain[] = {shell_program, "--noprofile", "--norc", "-c",
                           run->command, NULL};
    const char *wrap[] = {shell_program, "--noprofile", "--norc", "-c",
                          SHELL_ONESHOT_WRAP, shell_program, snap ? snap : "",
                          long_cmd ? NULL : run->command, NULL};
    int extra[2];
    size_t n_extra = 0;
    if (snap)
        extra[n_extra++] = mfd[1];
    if (long_cmd)
        extra[n_extra++] = cfd;
    rc = shell_spawn(r.sup, snap || long_cmd ? wrap : plain, &env, run->cwd,
                     run->timeout_ms, n_extra ? extra : NULL, n_extra, NULL,
                     &slot, &r.id);
    if (mfd[1] >= 0) {
        close(mfd[1]);
        mfd[1] = -1;
    }
    if (cfd >= 0) {
        close(cfd);
        cfd = -1;
    }
    if (rc < 0)
        goto out;

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
    /* Ends the run too if the loop failed before it was over. */
    slot = NULL;
    rein_sup_close(r.sup);
    for (int i = 0; i < 2; i++)
        if (mfd[i] >= 0)
            close(mfd[i]);
    if (cfd >= 0)
        close(cfd);
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
    sh->chan = -1;
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
    if (!(sh->rbuf = malloc(SHELL_READ_BUF)))
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
    free(sh->rbuf);
    free(sh);
    return rc;
}

/* Starts the session's bash running the driver. */
static int shell_start(rein_shell_t *sh)
{
    env_t env = {NULL, 0};
    int sv[2] = {-1, -1}, rc;
    if ((rc = shell_build_env(&env, (const char *const *)sh->session_env,
                              NULL)) < 0)
        return rc;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = -errno;
        goto out;
    }
    const char *argv[] = {shell_program, "--noprofile", "--norc", "-c",
                          SHELL_DRIVER, shell_program,
                          sh->snapshot ? sh->snapshot : "", NULL};
    rc = shell_spawn(sh->sup, argv, &env, NULL, 0, &sv[1], 1, on_leader_exit,
                     &sh->cur, &sh->id);
    if (rc < 0)
        goto out;
    sh->chan = sv[0];
    sv[0] = -1;
out:
    for (int i = 0; i < 2; i++)
        if (sv[i] >= 0)
            close(sv[i]);
    env_free(&env);
    return rc;
}

/* Forgets the session (its run already exited), closes its socket and
 * its lingering channels. */
static void shell_forget(rein_shell_t *sh)
{
    linger_clear(sh);
    if (sh->id && sh->sup)
        rein_sup_forget(sh->sup, sh->id);
    sh->id = 0;
    sh->ready = false;
    if (sh->chan >= 0)
        close(sh->chan);
    sh->chan = -1;
}

/* Ends the session's bash and all it left (the supervisor's cancel), waits
 * for the run to be over, forgets it.  sh->cur must be NULL. */
static void shell_drop(rein_shell_t *sh)
{
    rein_run_info_t i;
    if (sh->id) {
        rein_sup_cancel(sh->sup, sh->id, SIGTERM, REIN_SHELL_GRACE_MS);
        while (rein_sup_info(sh->sup, sh->id, &i) == 0 &&
               i.state != REIN_RUN_EXITED) {
            if (rein_sup_run_once(sh->sup, -1) < 0) {
                /* No loop to wait in: closing the supervisor still ends
                 * the run, so nothing is left behind. */
                rein_sup_close(sh->sup);
                sh->sup = NULL;
                break;
            }
        }
    }
    shell_forget(sh);
}

/* Makes the session's private directory: 0700 (mkdtemp), under $TMPDIR
 * when that is an absolute path that works, else /tmp. */
static int shell_dir_make(rein_shell_t *sh)
{
    const char *bases[] = {getenv("TMPDIR"), "/tmp"};
    for (size_t i = 0; i < 2; i++) {
        buf_t b = BUF_INIT;
        if (!bases[i] || bases[i][0] != '/')
            continue;
        if (buf_printf(&b, "%s/" SHELL_DIR_TEMPLATE, bases[i]) < 0)
            return -ENOMEM;
        if (mkdtemp(b.p)) {
            sh->dir = buf_detach(&b);
            return 0;
        }
        buf_free(&b);
    }
    return REIN_ESHELL_INIT;
}

/* Makes run r's channel: a FIFO in the session's directory, with our read
 * end open (non-blocking) before the request goes out.  So bash's open of
 * the write end never blocks, and the channel reads only once bash has
 * opened it: epoll reports a FIFO neither readable nor hung up before its
 * first writer came, and we read it only when epoll says so or once the
 * command is over. */
static int own_open(rein_shell_t *sh, struct shell_run *r)
{
    int rc;
    buf_t b = BUF_INIT;
    for (int tries = 0;; tries++) {
        if (!sh->dir && (rc = shell_dir_make(sh)) < 0)
            return rc;
        b.len = 0;
        if (buf_printf(&b, "%s/%" PRIu64, sh->dir, ++sh->fifo_seq) < 0) {
            buf_free(&b);
            return -ENOMEM;
        }
        if (mkfifo(b.p, 0600) == 0)
            break;
        rc = -errno;
        if (rc != -ENOENT || tries) {
            buf_free(&b);
            return rc;
        }
        /* A command removed the directory (it cleaned $TMPDIR): make
         * another, once.  The FIFOs still open keep their own. */
        free(sh->dir);
        sh->dir = NULL;
    }
    r->fifo = buf_detach(&b);
    if (!(r->own = calloc(1, sizeof *r->own)))
        return -ENOMEM;
    r->own->sh = sh;
    utf8_init(&r->own->dec);
    r->own->fd = open(r->fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (r->own->fd < 0) {
        rc = -errno;
        free(r->own);
        r->own = NULL;
        return rc;
    }
    return 0;
}

/* fifo NUL cwd NUL count NUL entries... command NUL */
static int build_request(buf_t *b, const char *fifo,
                         const rein_shell_run_opts_t *run)
{
    size_t n = 0;
    while (run->env && run->env[n])
        n++;
    int rc = buf_append(b, fifo, strlen(fifo) + 1);
    /* A relative cwd as "./dir": cd would take "-" for $OLDPWD and look a
     * bare name up in the session's CDPATH, where the one-shot's chdir
     * takes the name as it is. */
    if (rc == 0 && run->cwd && run->cwd[0] != '/')
        rc = buf_append(b, "./", 2);
    if (rc == 0)
        rc = buf_append(b, run->cwd ? run->cwd : "",
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

/* Handles what happened since the last call: late output of background
 * jobs goes to this run, and a bash that died between runs (killed from
 * outside) is noticed.  True when the session's run is still running. */
static bool shell_alive(rein_shell_t *sh)
{
    rein_run_info_t i;
    for (int k = 0; k < SHELL_PUMP_MAX; k++)
        if (rein_sup_run_once(sh->sup, 0) <= 0)
            break;
    return rein_sup_info(sh->sup, sh->id, &i) == 0 &&
           i.state == REIN_RUN_RUNNING;
}

int rein_shell_run(rein_shell_t *sh, const rein_shell_run_opts_t *run,
                   rein_run_result_t *result)
{
    struct shell_run r;
    int rc;
    if (!sh || !run || !run->command || !result)
        return -EINVAL;
    memset(result, 0, sizeof *result);
    if (run->cwd && !*run->cwd)
        return REIN_ECWD; /* as the one-shot's chdir("") */
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

    run_init(&r, sh, run);
    if (!sh->sup && (rc = shell_sup_open(&sh->sup)) < 0)
        goto out;
    r.sup = sh->sup;
    sh->cur = &r;
    if (sh->id && !shell_alive(sh)) {
        /* Its state is gone, which the caller must hear about rather
         * than find out. */
        sh->cur = NULL;
        shell_drop(sh);
        rc = REIN_ESHELL_EXEC;
        goto out;
    }
    if (!sh->id && (rc = shell_start(sh)) < 0)
        goto out;
    r.id = sh->id;
    if ((rc = own_open(sh, &r)) < 0 ||
        (rc = build_request(&r.req, r.fifo, run)) < 0) {
        sh->cur = NULL;
        shell_drop(sh); /* an errored run drops the session */
        goto out;
    }

    rc = run_drive(&r);
    sh->cur = NULL;
    if (rc < 0) {
        /* The loop failed: closing the supervisor ends the run. */
        rein_sup_close(sh->sup);
        sh->sup = NULL;
        shell_forget(sh);
        goto out;
    }
    if (r.err)
        rc = r.err;
    else
        fill_result(&r, result);
    /* The session lives on only after a status from a running bash and
     * no error; every other end waited for the run to be over, or drops
     * it now.  A channel still held by the command's jobs stays open. */
    if (r.exited)
        shell_forget(sh);
    else if (rc < 0)
        shell_drop(sh);
    else if (r.own && !r.own->eof) {
        linger_add(sh, r.own, &r);
        r.own = NULL;
    }
out:
    sh->cur = NULL;
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
    rein_sup_close(sh->sup);
    if (sh->dir)
        rmdir(sh->dir); /* each FIFO went with its call */
    free(sh->dir);
    free(sh->rbuf);
    close(sh->wake_fd);
    pthread_mutex_destroy(&sh->mu);
    strv_free(sh->session_env);
    free(sh->snapshot);
    free(sh);
}
