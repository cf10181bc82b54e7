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
 * `exec 3>...`), and keeps scratch in two memfds at fds 4 and 5 (moved to
 * 61 and 62; see SHELL_DOOR_PROBE):
 *   request  fifo NUL cwd NUL tail NUL count NUL NAME=value NUL ...
 *            command NUL   (tail: "1" when the driver may append its
 *            status note to the command, see shell_tail_ok)
 *   status   "r\n" ready (after the snapshot) | "n\n" snapshot failed |
 *            "s <code>\n" command done | "c\n" cd failed |
 *            "f\n" the command could not be run (its FIFO did not open,
 *            or the session's functions leave no way to run it)
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

extern char **environ;

static const char *shell_program = SHELL_BASH_PATH;

void shell_set_program(const char *path)
{
    shell_program = path ? path : SHELL_BASH_PATH;
}

/*
 * The persistent driver.  $1 is the snapshot path ("" for none); fd 3 is
 * the control socket and fds 4 and 5 two empty memfds of ours, moved at
 * once to 60, 61 and 62, out of the way of scripts that use `exec 3>...`.
 * It is written against whatever a session's commands, and the scripts
 * they source, leave in the shell.  The rules: the driver depends on no
 * name a command can redefine, none of the user's settings applies to its
 * lines, and nothing of its own shows in a command's output or state.
 *
 *   Its lines.  All it does between two commands runs inside three
 * functions, __rein_step calling __rein_mid calling __rein_body, defined
 * afresh before each step and unset again before the command runs: a
 * command sees none of them, and an `unset -f` of every function cannot
 * remove them.  __rein_step runs with FUNCNEST empty in its temporary
 * environment, so a session's FUNCNEST cannot stop that nesting (nor can
 * a command-scoped POSIXLY_CORRECT or FUNCNEST be set under the driver's:
 * rein_shell_run refuses them, see shell_env_driver).  Calling a function
 * is what keeps the user's traps off the driver's lines: bash saves and
 * clears the DEBUG and RETURN traps for a
 * function's body unless set -T is on, and the ERR trap unless set -E is,
 * and puts them back when it returns; no trap text is ever read, quoted or
 * re-set.  __rein_mid switches -T and -E off, so __rein_body runs with no
 * trap of the user's.  __rein_mid runs with POSIXLY_CORRECT=y in its
 * temporary environment (unless the session is in posix mode already): in
 * posix mode bash finds the special builtins (set, export, unset, exit,
 * return, eval, `.`) before any function of that name, and when the
 * temporary variable goes it puts back the shopt options posix mode
 * changed.  __rein_mid switches -x off and __rein_body -e, -u, -a and -v,
 * for the driver's lines only: each is switched on again, as $SHELLOPTS
 * (which a command cannot set; saved in __rein_o with $BASHOPTS) said,
 * before the command.
 *
 *   The door.  The builtins that are not special (printf, mapfile, cd,
 * shopt) and eval itself are called through "${__rein_door[@]}": `builtin`,
 * or, if a function has that name, `command`.  If both are functions, the
 * one named builtin is copied out through a child bash ($0, exported to it
 * for that), unset while the driver runs and sourced back (expand_aliases
 * off, so its body is not expanded twice) before the command; the command
 * is then run by eval's own name.  `export -nf NAME` tells a function (it
 * fails for anything else); the export attribute it takes away is put back
 * from what `export -pf` wrote to the memfd at 61 just before.  If
 * builtin, command and eval are all functions, nothing can run a command
 * here without calling one of them: the run answers "f" and the session
 * ends.  No alias reaches the driver: its text is parsed once, as one { }
 * group, before any alias exists.  It never needs PATH (the child bash is
 * $0), IFS or TMOUT (mapfile -d '' neither splits nor times out), echo, or
 * any fd but 60..62, which the command runs without (bash restores them
 * after it, whatever the command did to those numbers).
 *
 *   The command.  At the top level, with the user's settings in force, run
 * only the loop's test and step, the step's call, the eval line and a line
 * noting its status, all in a { } group on /dev/null, so what they cause
 * (a DEBUG trap's output, set -x's trace of them, an ERR trap) is never
 * seen; the command's own output goes to the run's FIFO, element 1 of
 * __rein_out, through redirections on the eval line, which bash undoes
 * (closing its write end) as soon as the command returns.  The status
 * marks are elements of __rein_st, arrays because set -a exports none.
 *   A line that is neither a simple command nor traced can still note a
 * status: a { } group holding only a function definition (__rein_z, unset
 * by the next step) runs no DEBUG trap, no trace and no ERR trap, and its
 * redirection (SHELL_NOTE) evaluates an arithmetic expression on its way.
 *   Errexit as at a prompt.  bash exits under set -e for a failing command
 * only where errexit applies to it: not in an && or || list short of its
 * last command, not after `!`, whatever status the whole line ends with
 * (`false && true` ends with 1 and goes on).  But eval is a simple
 * command, and bash exits for a failed one; and run where its status is
 * ignored (after `!`, in a condition), eval switches set -e and the ERR
 * trap off for everything inside it.  So the eval runs plain, and a
 * command that parses on its own gets SHELL_TAIL as one more line: that
 * group, noting `$?` as __rein_st[4] and leaving the eval's status 0.
 * errexit and the ERR trap then apply inside the command exactly as at a
 * prompt (set -e in the command too, from its next line on), and the eval
 * ends the shell only when bash at a prompt would have.  Whether the tail
 * may go on is asked of bash's own parser: the step evals the command
 * inside a `case` that never matches (nothing of it runs; with any alias
 * defined, aliases are off for it, as one could close the `case`; the
 * command gets them when it runs), through `command`, so that a
 * syntax error is a status rather than, in posix mode, the end of the
 * shell; it parses only when complete, and the tail then starts a
 * command of its own rather than continuing an open here-document, quote
 * or `&&`.  rein leaves the tail out (request field
 * "tail" empty, shell_tail_ok) for a command ending in a backslash (which
 * would join the tail to its last line), holding the word `esac` (which
 * could close the `case` early and let the rest run), or that may switch
 * set -v on (bash would echo the tail); and the step does for a session
 * in set -v.  Such a command, or one that does not parse, runs as the bare
 * eval: its final status is the eval's, which under set -e ends the
 * session if not 0, and runs an ERR trap a second time.
 *   `$?` carries between runs as in a terminal: the step returns the
 * previous run's status (0 for the first command of a session, after a
 * snapshot too) through `return` in posix mode (found before a function
 * of that name), as the condition of an `if` whose two branches are the
 * same eval line, so the command starts with it whichever branch runs,
 * and a status not 0 neither stops the shell nor runs an ERR trap.
 * PIPESTATUS holds that one status.
 *   The eval line marks __rein_st[3] in an arithmetic expansion of the
 * redirection after the FIFO's, which bash evaluates only once the FIFO
 * opened; unmarked, the step answers "f" and bash exits.  The line after
 * it marks __rein_st[2] with the status (__rein_st[4], else the eval's):
 * `break` at the command's top level leaves the driver's loop (bash falls
 * off the end of the script and exits), `continue` skips the mark and the
 * step, finding it unset, exits; either way the session ends, as the seed
 * has it for loop control.
 *   The loop is an arithmetic `for` whose test takes one from
 * __rein_st[6], which only a step that ran to its end sets to 1, as it
 * sets __rein_st[7], which the mark after the eval clears: the eval line
 * writes to element __rein_st[7] of __rein_out, so after a step that did
 * not run its redirection fails and no stale command runs.  A step that did
 * not run (extdebug and a DEBUG trap that returns non-zero skip it) ends
 * the loop.  Under set -n bash executes nothing, not even a while loop's
 * test, but still evaluates an arithmetic `for`'s: so the loop is one, and
 * bash exits rather than spinning.
 *   A failed cd to the run's cwd answers "c" and bash exits (rein drops
 * the session anyway).  Command-scoped variables are exported after the
 * cd and put back by the next step, in reverse order: unset (u), exported
 * (x) or a plain shell variable with its old value; a read-only one is
 * left alone (posix mode would end the shell on an `export` of it).
 *
 *   What this does not defend against.  A command that means to break the
 * driver can: it runs in the driver's own bash, with everything the driver
 * has.  `60<&-` keeps fd 60 from it, but bash holds the socket's save copy
 * at some fd >= 10 while the command runs (close-on-exec, so the programs
 * it starts do not have it; its subshells do), and a command can find that
 * fd in /proc/self/fd and write "s 0" on it: the call then returns 0 at
 * once while the command goes on, and the session stays one command out
 * of step (each later call gets the previous command's status, and output
 * can be lost) until it is dropped.  It can also close those save copies
 * (the session then ends at the step), redefine the __rein_ functions or
 * make the __rein_ variables read-only, disable (`enable -n`) the builtins
 * the driver uses, make POSIXLY_CORRECT read-only (special builtins are
 * then looked up by name), or read the driver's requests.  No secret can
 * tell the driver's lines from such a one's, since the command can read
 * whatever the driver knows; only a process per command, a fork per run,
 * would keep them apart.  And some things are bash's.  A DEBUG trap runs,
 * unseen, four times per run for the driver's lines (with set -T a few
 * more): before the loop's test and its step (the arithmetic `for` is the
 * one loop set -n cannot make spin), before the call of the step (bash
 * clears the trap inside a function, but only a simple command calls one,
 * and it runs the trap first) and before the eval (the command must run at
 * the top level, and only a simple command turns text into commands
 * there).  Keeping it off those lines would mean taking the trap away and
 * putting it back around them, which needs its text; bash shows no trap
 * inside a function, and outside one reading it is a simple command too.
 * With BASH_XTRACEFD set,
 * set -x traces the lines after -x is back on to that fd, not to the
 * group's /dev/null (and PS4 is expanded for each); a command's trace is
 * one level deeper ("++"), as under any eval; and an expansion error
 * under set -u, like any error that ends a non-interactive bash, ends the
 * session.  The step costs about 0.1 ms more than a bare read-eval loop
 * (defining its functions is a fifth of it); parsing the command a second
 * time for the tail adds a few microseconds for a short one.
 */
/* Finds the door (see above) in posix mode: __rein_door, and __rein_fx
 * 1 when `builtin` is a function, 2 when `command` is one too (then
 * `builtin` is copied to the memfd at 62 and unset).  Needs __rein_bash. */
#define SHELL_DOOR_PROBE \
    "      __rein_door=(builtin) __rein_fx=\n" \
    "      [[ ! -w /proc/self/fd/61 ]] || export -pf >|/proc/self/fd/61\n" \
    "      if export -nf builtin 2>/dev/null; then\n" \
    "        __rein_fx=1 __rein_door=(command)\n" \
    "        if export -nf command 2>/dev/null; then\n" \
    "          [[ -w /proc/self/fd/62 ]] || exit 1\n" \
    "          export -f builtin\n" \
    "          BASH_ENV= ENV= \"$__rein_bash\" --norc --noprofile \\\n" \
    "            -c 'POSIXLY_CORRECT=y; unset -f declare; "                   \
    "declare -f builtin' \\\n"                                              \
    "            >|/proc/self/fd/62 2>/dev/null </dev/null \\\n"            \
    "            60<&- 61<&- 62<&-\n"                                        \
    "          unset -f builtin\n" \
    "          __rein_fx=2 __rein_door=(builtin)\n" \
    "        fi\n" \
    "      fi\n"

/* Puts back what SHELL_DOOR_PROBE moved aside, before the command: the
 * copy of `builtin`, the export attributes, expand_aliases (posix mode
 * puts it back itself when POSIXLY_CORRECT was temporary).  fail is the
 * text run when builtin, command and eval are all functions.  Needs
 * __rein_so and __rein_bo, the SHELLOPTS and BASHOPTS of the user. */
#define SHELL_DOOR_RESTORE(fail) \
    "      if [[ -n $__rein_fx ]]; then\n" \
    "        \"${__rein_door[@]}\" shopt -u expand_aliases\n" \
    "        if [[ $__rein_fx == 2 ]]; then\n" \
    "          if export -nf eval 2>/dev/null; then\n" \
    fail \
    "          fi\n" \
    "          . /proc/self/fd/62\n" \
    "          __rein_door=()\n" \
    "        fi\n" \
    "        [[ ! -s /proc/self/fd/61 ]] || . /proc/self/fd/61\n" \
    "        [[ :${__rein_o[0]}: != *:posix:* ||\n" \
    "           :${__rein_o[1]}: != *:expand_aliases:* ]] ||\n" \
    "          \"${__rein_door[@]}\" shopt -s expand_aliases\n" \
    "      fi\n"

/* The eval line: the command, its output to the run's FIFO (element
 * __rein_st[7] of __rein_out: none after a step that did not run), then
 * (only once that opened) the mark __rein_st[3]; no fd of ours. */
#define SHELL_EVAL_LINE \
    "\"${__rein_door[@]}\" eval \"$__rein_cmd\" " \
    ">\"${__rein_out[__rein_st[7]]-}\" 2>&1${__rein_st[__rein_st[3]=9]-} " \
    "60<&- 61<&- 62<&-\n"

/* A redirection that closes fd 59 (already closed or not: it never fails)
 * for the command it ends, and evaluates the arithmetic expr on its way:
 * how a line that is neither a simple command nor traced can note a
 * status.  The subscript ends on 9, an element never set, so it expands
 * to nothing whatever expr did. */
#define SHELL_NOTE(expr) "59<&\"-${__rein_st[" expr ", 9]-}\""

/* What the driver appends to a command that parses on its own (see
 * SHELL_DRIVER): a group holding a function definition, with a
 * SHELL_NOTE of `$?` as __rein_st[4]. */
#define SHELL_TAIL \
    "'{ __rein_z() { \\:; }; } " SHELL_NOTE("__rein_st[4]=$?") "'"

static const char SHELL_DRIVER[] =
    "{\n"
    "exec 60<&3 3<&- 61<&4 4<&- 62<&5 5<&-\n"
    "__rein_bash=$0 __rein_snap=$1 __rein_first=1 __rein_last=0 __rein_n=0\n"
    "__rein_st=([6]=1 [7]=0) __rein_door=(builtin) __rein_cmd= __rein_out=()\n"
    "__rein_o=() __rein_pre=$'case x in (y)\\n' __rein_post=$'\\n;; esac'\n"
    "__rein_tail=$'\\n'" SHELL_TAIL "\n"
    "builtin set --\n"
    "if [[ -n $__rein_snap ]]; then\n"
    "  if [[ -f $__rein_snap && -r $__rein_snap ]]; then\n"
    "    { builtin source \"$__rein_snap\"; } </dev/null >/dev/null 2>&1 \\\n"
    "      60<&- 61<&- 62<&-\n"
    "  else\n"
    "    builtin printf 'n\\n' >&60\n"
    "    builtin exit 1\n"
    "  fi\n"
    "fi\n"
    "{\n"
    "for (( ; __rein_st[6]-- > 0; )); do\n"
    "  if {\n"
    "    __rein_step() {\n"
    "      if [[ :$SHELLOPTS: == *:posix:* ]]; then __rein_mid\n"
    "      else POSIXLY_CORRECT=y __rein_mid; fi\n"
    "    }\n"
    "    __rein_mid() {\n"
    "      __rein_o=(\"$SHELLOPTS\" \"$BASHOPTS\")\n"
    "      set +o functrace +o errtrace +o xtrace\n"
    "      __rein_body\n"
    "      unset -f __rein_step __rein_mid __rein_body __rein_z\n"
    "      [[ :${__rein_o[0]}: != *:functrace:* ]] || set -o functrace\n"
    "      [[ :${__rein_o[0]}: != *:errtrace:* ]] || set -o errtrace\n"
    "      [[ :${__rein_o[0]}: != *:xtrace:* ]] || set -o xtrace\n"
    "      return \"$__rein_last\"\n"
    "    }\n"
    "    __rein_body() {\n"
    "      set +o errexit +o nounset +o allexport +o verbose\n"
    SHELL_DOOR_PROBE
    "      if [[ -n $__rein_first ]]; then\n"
    "        __rein_first=\n"
    "        \"${__rein_door[@]}\" printf 'r\\n' >&60 || exit 1\n"
    "      else\n"
    "        __rein_i=$__rein_n\n"
    "        while (( __rein_i > 0 )); do\n"
    "          __rein_i=$((__rein_i - 1))\n"
    "          __rein_v=${__rein_envs[__rein_i]%%=*}\n"
    "          if [[ ${!__rein_v@a} != *r* ]]; then\n"
    "            case ${__rein_how[__rein_i]} in\n"
    "            u) unset -v \"$__rein_v\" ;;\n"
    "            x) export \"$__rein_v=${__rein_olds[__rein_i]}\" ;;\n"
    "            *) export \"$__rein_v=${__rein_olds[__rein_i]}\"\n"
    "               export -n \"$__rein_v\" ;;\n"
    "            esac\n"
    "          fi\n"
    "        done\n"
    "        [[ -n ${__rein_st[2]-} ]] || exit 0\n"
    "        if [[ -z ${__rein_st[3]-} ]]; then\n"
    "          \"${__rein_door[@]}\" printf 'f\\n' >&60\n"
    "          exit 1\n"
    "        fi\n"
    "        __rein_last=${__rein_st[2]}\n"
    "        \"${__rein_door[@]}\" printf 's %d\\n' \"$__rein_last\" >&60 ||\n"
    "          exit 1\n"
    "      fi\n"
    "      \"${__rein_door[@]}\" mapfile -d '' -n 4 -t __rein_h <&60\n"
    "      (( ${#__rein_h[@]} == 4 )) || exit 1\n"
    "      __rein_out=([1]=\"${__rein_h[0]}\") __rein_n=${__rein_h[3]}\n"
    "      \"${__rein_door[@]}\" mapfile -d '' -n $((__rein_n + 1)) \\\n"
    "        -t __rein_envs <&60\n"
    "      (( ${#__rein_envs[@]} == __rein_n + 1 )) || exit 1\n"
    "      __rein_cmd=${__rein_envs[__rein_n]}\n"
    "      if [[ -n ${__rein_h[2]} && :${__rein_o[0]}: != *:verbose:* ]]\n"
    "      then\n"
    "        __rein_i=${#BASH_ALIASES[@]}\n"
    "        (( !__rein_i )) ||\n"
    "          \"${__rein_door[@]}\" shopt -u expand_aliases\n"
    "        ! \"${__rein_door[@]}\" command eval \\\n"
    "          \"$__rein_pre$__rein_cmd$__rein_post\" ||\n"
    "          __rein_cmd+=$__rein_tail\n"
    "        (( !__rein_i )) ||\n"
    "          [[ :${__rein_o[1]}: != *:expand_aliases:* ]] ||\n"
    "          \"${__rein_door[@]}\" shopt -s expand_aliases\n"
    "      fi\n"
    "      if [[ -n ${__rein_h[1]} ]] &&\n"
    "         ! \"${__rein_door[@]}\" cd -- \"${__rein_h[1]}\" \\\n"
    "           >/dev/null 2>&1; then\n"
    "        \"${__rein_door[@]}\" printf 'c\\n' >&60\n"
    "        exit 1\n"
    "      fi\n"
    "      __rein_olds=() __rein_how=() __rein_i=0\n"
    "      while (( __rein_i < __rein_n )); do\n"
    "        __rein_v=${__rein_envs[__rein_i]%%=*}\n"
    "        __rein_how[__rein_i]=u\n"
    "        if [[ -v $__rein_v ]]; then\n"
    "          __rein_olds[__rein_i]=${!__rein_v} __rein_how[__rein_i]=s\n"
    "          [[ ${!__rein_v@a} != *x* ]] || __rein_how[__rein_i]=x\n"
    "        fi\n"
    "        [[ ${!__rein_v@a} == *r* ]] ||\n"
    "          export \"${__rein_envs[__rein_i]}\"\n"
    "        __rein_i=$((__rein_i + 1))\n"
    "      done\n"
    "      __rein_st=()\n"
    SHELL_DOOR_RESTORE("          builtin printf 'f\\n' >&60\n"
                       "          exit 1\n")
    "      [[ :${__rein_o[0]}: != *:errexit:* ]] || set -o errexit\n"
    "      [[ :${__rein_o[0]}: != *:nounset:* ]] || set -o nounset\n"
    "      [[ :${__rein_o[0]}: != *:allexport:* ]] || set -o allexport\n"
    "      [[ :${__rein_o[0]}: != *:verbose:* ]] || set -o verbose\n"
    "      __rein_st[6]=1 __rein_st[7]=1\n"
    "    }\n"
    "  }; FUNCNEST= __rein_step; then\n"
    "    " SHELL_EVAL_LINE
    "  else\n"
    "    " SHELL_EVAL_LINE
    "  fi\n"
    "  { __rein_z() { \\:; }; } "
    SHELL_NOTE("__rein_st[2]=${__rein_st[4]-${PIPESTATUS[0]}}, "
               "__rein_st[7]=0") "\n"
    "done\n"
    "} >/dev/null 2>&1\n"
    "}\n";

/*
 * One-shot with a snapshot, or with a command too long for an argument
 * (SHELL_ARG_MAX).  $1 the snapshot ("" for none), $2 the command — or,
 * without $2, the command is read from a memfd, at fd 6 after a snapshot's
 * fds 3..5, else at fd 3, up to its NUL (a seekable fd, so bash reads it in
 * blocks).  With a snapshot, fd 3 is a pipe and fds 4 and 5 two memfds
 * (moved to 61 and 62, as for the driver): after the snapshot, __rein_go
 * finds the door (see the driver) and writes one byte to fd 3, which says
 * the snapshot was sourced; then it closes them all, so nothing of them is
 * inherited.  Its lines run with the snapshot's settings switched off and
 * its traps suspended, in a group on /dev/null; set -x is switched on
 * again by the command's first line, so the eval line itself is not
 * traced.  The command is expanded into eval's argument before __rein_c
 * and the others are unset (on the command's first line, which keeps its
 * line numbers), so the command sees neither them nor $1/$2.  Unlike the
 * driver's, the eval line is not in a group on /dev/null (the command
 * would see the fds bash saves for it), so a snapshot's DEBUG trap fires,
 * visibly, before the eval and the unset too.
 */
static const char SHELL_ONESHOT_WRAP[] =
    "{\n"
    "if (( $# < 2 )); then\n"
    "  __rein_fd=3\n"
    "  [[ -z $1 ]] || __rein_fd=6\n"
    "  IFS= builtin read -r -d '' __rein_c <&\"$__rein_fd\"\n"
    "  exec {__rein_fd}<&-\n"
    "  builtin unset -v __rein_fd\n"
    "fi\n"
    "(( $# < 2 )) || __rein_c=$2\n"
    "__rein_bash=$0 __rein_s=$1 __rein_door=(builtin) __rein_px=\n"
    "builtin set --\n"
    "if [[ -n $__rein_s ]]; then\n"
    "  exec 61<&4 4<&- 62<&5 5<&-\n"
    "  if [[ -f $__rein_s && -r $__rein_s ]]; then\n"
    "    { builtin source \"$__rein_s\"; } </dev/null >/dev/null 2>&1 \\\n"
    "      3>&- 61<&- 62<&-\n"
    "  else\n"
    "    builtin exit 1\n"
    "  fi\n"
    "  {\n"
    "    __rein_go() {\n"
    "      __rein_o=(\"$SHELLOPTS\" \"$BASHOPTS\")\n"
    "      set +o errexit +o nounset +o xtrace +o allexport +o verbose\n"
    SHELL_DOOR_PROBE
    SHELL_DOOR_RESTORE("          exit 1\n")
    "      \"${__rein_door[@]}\" printf r >&3\n"
    "      exec 3>&- 61>&- 62>&-\n"
    "      unset -f __rein_go\n"
    "      [[ :${__rein_o[0]}: != *:xtrace:* ]] ||\n"
    "        __rein_px=\"${__rein_door[*]} set -x; \"\n"
    "      [[ :${__rein_o[0]}: != *:errexit:* ]] || set -o errexit\n"
    "      [[ :${__rein_o[0]}: != *:nounset:* ]] || set -o nounset\n"
    "      [[ :${__rein_o[0]}: != *:allexport:* ]] || set -o allexport\n"
    "      [[ :${__rein_o[0]}: != *:verbose:* ]] || set -o verbose\n"
    "    }\n"
    "    if [[ :$SHELLOPTS: == *:posix:* ]]; then __rein_go\n"
    "    else POSIXLY_CORRECT=y __rein_go; fi\n"
    "  } >/dev/null 2>&1\n"
    "fi\n"
    "\"${__rein_door[@]}\" eval \"${__rein_door[*]} unset -v __rein_c \\\n"
    "__rein_s __rein_door __rein_bash __rein_fx __rein_o __rein_px; \\\n"
    "$__rein_px$__rein_c\"\n"
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

/*
 * The skip-list (the seed's: "PS1, PWD, SHLVL, bash function exports,
 * etc."): names that are the shell's own business, dropped wherever an
 * environment is built for it — the host's, the session env and a
 * command's env alike, as the reference drops them.  Three kinds:
 *   - what bash acts on as it starts or runs a line, which would steer the
 *     session itself: a startup file to source (BASH_ENV, ENV), options
 *     (SHELLOPTS, BASHOPTS, BASH_COMPAT), word splitting and globbing
 *     (IFS, GLOBIGNORE), cd's search (CDPATH), a read timeout (TMOUT),
 *     the trace fd (BASH_XTRACEFD), prompts and history;
 *   - what bash keeps itself and would take an imported value of as a
 *     seed or an offset: SECONDS, RANDOM, SRANDOM, OPTIND, OPTERR, SHLVL,
 *     PWD, OLDPWD, BASH_ARGV0 (which renames $0), the platform names;
 *   - what bash sets and never reads, dropped so that no stale copy is
 *     passed on: BASH_VERSION and the other BASH_* state, PPID, UID...
 * SHELL and HOSTNAME pass: programs read them, and bash exports neither
 * of its own accord.  So does FUNCNEST, which the session's own lines are
 * kept clear of (SHELL_DRIVER).  BASH_FUNC_*%% (exported functions) go.
 */
static const char *const shell_env_skip[] = {
    "BASH", "BASHOPTS", "BASHPID", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV",
    "BASH_ARGV0", "BASH_CMDS", "BASH_COMMAND", "BASH_COMPAT", "BASH_ENV",
    "BASH_EXECUTION_STRING", "BASH_LINENO", "BASH_REMATCH", "BASH_SOURCE",
    "BASH_SUBSHELL", "BASH_VERSINFO", "BASH_VERSION", "BASH_XTRACEFD",
    "CDPATH", "COMP_WORDBREAKS", "DIRSTACK", "ENV", "EPOCHREALTIME",
    "EPOCHSECONDS", "EUID", "FUNCNAME", "GLOBIGNORE", "GROUPS", "HISTCMD",
    "HISTFILE", "HISTTIMEFORMAT", "HOSTTYPE", "IFS", "LINENO", "MACHTYPE",
    "OLDPWD", "OPTERR", "OPTIND", "OSTYPE", "PIPESTATUS", "PPID",
    "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4", "PWD", "RANDOM",
    "SECONDS", "SHELLOPTS", "SHLVL", "SRANDOM", "TMOUT", "UID", NULL};

/* Whether entry ("NAME=value") is one the skip-list drops. */
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

/* Sets list's entries (NULL-terminated, may be NULL) in e but those the
 * skip-list drops.  REIN_EENV for a malformed entry, skipped or not. */
static int shell_env_put_kept(env_t *e, const char *const *list)
{
    for (size_t i = 0; list && list[i]; i++) {
        int rc;
        if (!env_valid(list[i]))
            return REIN_EENV;
        if (!shell_env_skipped(list[i]) && (rc = env_put(e, list[i])) < 0)
            return rc;
    }
    return 0;
}

/* environ, then each list in order (the later wins), each without what
 * the skip-list drops.  REIN_EENV for a malformed entry. */
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
    if ((rc = shell_env_put_kept(e, a)) < 0 ||
        (rc = shell_env_put_kept(e, b)) < 0) {
        env_free(e);
        return rc;
    }
    return 0;
}

/* Variables the driver sets in the temporary environment of its own
 * functions (see SHELL_DRIVER): a command-scoped value would be set, and
 * put back, under the driver's, not the session's. */
static const char *const shell_env_driver[] = {"POSIXLY_CORRECT",
                                               "FUNCNEST", NULL};

/* A command-scoped entry for a persistent session: the name must be one
 * bash can export, and not one of the driver's own. */
static bool shell_env_exportable(const char *entry)
{
    if (!env_valid(entry) || !strncmp(entry, SHELL_PRIVATE_PREFIX,
                                      strlen(SHELL_PRIVATE_PREFIX)))
        return false;
    size_t n = (size_t)(strchr(entry, '=') - entry);
    for (const char *const *k = shell_env_driver; *k; k++)
        if (strlen(*k) == n && !strncmp(entry, *k, n))
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
        /* The snapshot failed, or the command could not be run. */
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

/* The two empty memfds the driver (and a one-shot with a snapshot) keeps
 * its scratch in, at fds 61 and 62 (see SHELL_DOOR_PROBE).  bash reopens
 * them through /proc/self/fd to truncate them; close-on-exec here, the
 * spawn hands bash its own copies. */
static int shell_scratch_fds(int out[2])
{
    out[0] = out[1] = -1;
    for (int i = 0; i < 2; i++) {
        out[i] = memfd_create("rein-shell-scratch", MFD_CLOEXEC);
        if (out[i] < 0) {
            int rc = -errno;
            if (i)
                close(out[0]);
            out[0] = -1;
            return rc;
        }
    }
    return 0;
}

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
    int mfd[2] = {-1, -1}, scr[2] = {-1, -1}, cfd = -1, rc;
    /* An empty path is no snapshot, as for a session (the driver reads it
     * so too). */
    const char *snap = opts && opts->snapshot_path && *opts->snapshot_path
                           ? opts->snapshot_path
                           : NULL;

    if (!run || !run->command || !result)
        return -EINVAL;
    bool long_cmd = strlen(run->command) + 1 > SHELL_ARG_MAX;
    memset(result, 0, sizeof *result);
    run_init(&r, NULL, run);
    if ((rc = shell_build_env(&env, opts ? opts->session_env : NULL,
                              run->env)) < 0)
        goto out;
    /* A token raised before the call: cancelled, and nothing started (a
     * bash TERMed a moment after its spawn could already have run a
     * line). */
    if (rein_cancel_triggered(run->cancel)) {
        result->cancelled = true;
        goto out;
    }
    if (snap && pipe2(mfd, O_CLOEXEC) < 0) {
        rc = -errno;
        goto out;
    }
    if (snap) /* ours only: bash's end stays blocking */
        fcntl(mfd[0], F_SETFL, fcntl(mfd[0], F_GETFL) | O_NONBLOCK);
    if (snap && (rc = shell_scratch_fds(scr)) < 0)
        goto out;
    if (long_cmd && (rc = shell_command_fd(run->command, &cfd)) < 0)
        goto out;
    if ((rc = shell_sup_open(&r.sup)) < 0)
        goto out;
    const char *plain[] = {shell_program, "--noprofile", "--norc", "-c",
                           run->command, NULL};
    const char *wrap[] = {shell_program, "--noprofile", "--norc", "-c",
                          SHELL_ONESHOT_WRAP, shell_program, snap ? snap : "",
                          long_cmd ? NULL : run->command, NULL};
    int extra[4];
    size_t n_extra = 0;
    if (snap) {
        extra[n_extra++] = mfd[1];
        extra[n_extra++] = scr[0];
        extra[n_extra++] = scr[1];
    }
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
    for (int i = 0; i < 2; i++)
        if (scr[i] >= 0)
            close(scr[i]);
    scr[0] = scr[1] = -1;
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
    for (int i = 0; i < 2; i++) {
        if (mfd[i] >= 0)
            close(mfd[i]);
        if (scr[i] >= 0)
            close(scr[i]);
    }
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
    if (opts && opts->snapshot_path && *opts->snapshot_path &&
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
    int sv[2] = {-1, -1}, scr[2] = {-1, -1}, rc;
    if ((rc = shell_build_env(&env, (const char *const *)sh->session_env,
                              NULL)) < 0)
        return rc;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = -errno;
        goto out;
    }
    if ((rc = shell_scratch_fds(scr)) < 0)
        goto out;
    const char *argv[] = {shell_program, "--noprofile", "--norc", "-c",
                          SHELL_DRIVER, shell_program,
                          sh->snapshot ? sh->snapshot : "", NULL};
    const int extra[] = {sv[1], scr[0], scr[1]};
    rc = shell_spawn(sh->sup, argv, &env, NULL, 0, extra, 3, on_leader_exit,
                     &sh->cur, &sh->id);
    if (rc < 0)
        goto out;
    sh->chan = sv[0];
    sv[0] = -1;
out:
    for (int i = 0; i < 2; i++) {
        if (sv[i] >= 0)
            close(sv[i]);
        if (scr[i] >= 0)
            close(scr[i]);
    }
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

/* True when command may switch set -v on (`set -v`, `set -xv`, `set -o
 * verbose`, `shopt -so verbose`...): bash echoes each line it reads once
 * -v is on, so the line the driver appends to a command (SHELL_TAIL)
 * would be seen.  Such a command runs without it.  A false alarm only
 * costs the command what the tail is for (see SHELL_DRIVER); what a
 * script it sources or a function it calls switches on is not seen. */
static bool shell_may_set_verbose(const char *cmd)
{
    if (strstr(cmd, "verbose"))
        return true;
    for (const char *p = cmd; (p = strstr(p, "set")) != NULL; p += 3) {
        if (p > cmd && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        const char *q = p + 3;
        if (*q != ' ' && *q != '\t')
            continue;
        for (;;) { /* the option words after it */
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q != '-' && *q != '+')
                break;
            size_t n = strcspn(q, " \t\n;&|)");
            if (*q == '-' && memchr(q, 'v', n))
                return true;
            q += n;
        }
    }
    return false;
}

/* True when word (lowercase letters) occurs in s, a backslash-newline
 * (which bash removes before it splits words) anywhere within it. */
static bool shell_has_word(const char *s, const char *word)
{
    for (; *s; s++) {
        const char *p = s, *w = word;
        while (*w) {
            if (p[0] == '\\' && p[1] == '\n') {
                p += 2;
                continue;
            }
            if (*p != *w)
                break;
            p++;
            w++;
        }
        if (!*w)
            return true;
    }
    return false;
}

/* Whether the driver may append its status note (SHELL_TAIL) to command,
 * once bash's parser has found the command complete on its own (see
 * SHELL_DRIVER).  Not when the command ends in a backslash, which would
 * join the note to its last line; not when it holds the word esac, the
 * one word that could close the `case` the driver parses it in and let
 * the rest run; not when it may switch set -v on (bash would echo the
 * note).  Without the note the command runs as it is. */
static bool shell_tail_ok(const char *cmd)
{
    size_t n = strlen(cmd);
    return !(n && cmd[n - 1] == '\\') && !shell_has_word(cmd, "esac") &&
           !shell_may_set_verbose(cmd);
}

/* fifo NUL cwd NUL tail NUL count NUL entries... command NUL */
static int build_request(buf_t *b, const char *fifo,
                         const rein_shell_run_opts_t *run)
{
    size_t n = 0;
    for (size_t i = 0; run->env && run->env[i]; i++)
        n += !shell_env_skipped(run->env[i]);
    int rc = buf_append(b, fifo, strlen(fifo) + 1);
    /* A relative cwd as "./dir": cd would take "-" for $OLDPWD and look a
     * bare name up in the session's CDPATH, where the one-shot's chdir
     * takes the name as it is. */
    if (rc == 0 && run->cwd && run->cwd[0] != '/')
        rc = buf_append(b, "./", 2);
    if (rc == 0)
        rc = buf_append(b, run->cwd ? run->cwd : "",
                        (run->cwd ? strlen(run->cwd) : 0) + 1);
    if (rc == 0) {
        const char *tail = shell_tail_ok(run->command) ? "1" : "";
        rc = buf_append(b, tail, strlen(tail) + 1);
    }
    if (rc == 0)
        rc = buf_printf(b, "%zu", n);
    if (rc == 0)
        rc = buf_append_byte(b, 0);
    for (size_t i = 0; rc == 0 && run->env && run->env[i]; i++)
        if (!shell_env_skipped(run->env[i]))
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
    if (rein_cancel_triggered(run->cancel)) {
        /* Raised before the call: cancelled, nothing sent, and the
         * session, which ran nothing, is kept. */
        pthread_mutex_unlock(&sh->mu);
        result->cancelled = true;
        return 0;
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
