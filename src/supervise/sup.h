/*
 * sup.h — the supervisor's internal side, for front ends in this tree.
 *
 * The MCP server and the CLI run their own fds and timers on the loop the
 * supervisor already drives, so one epoll wait serves everything.  The CLI
 * proxy also sets its PTY's modes before the child starts and paces the
 * stdin it forwards by what the run has not taken yet.
 */
#ifndef REIN_SUPERVISE_SUP_H
#define REIN_SUPERVISE_SUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <termios.h>

#include "base/loop.h"
#include "base/spawn.h"
#include "rein.h"

/* The loop behind s (owned by s). */
loop_t *sup_loop(rein_sup_t *s);
/* The run's PTY master (tty runs) or -1; valid until the run is exited. */
int sup_run_fd(rein_sup_t *s, int64_t id);
/* Stdin bytes accepted by rein_sup_write but not yet taken by the run (its
 * terminal or pipe is full); 0 for an unknown run.  A front end forwarding
 * a stream stops reading its source past a bound, so a child that does not
 * read cannot make rein hold unbounded input. */
size_t sup_run_pending(rein_sup_t *s, int64_t id);

/* Adjusts a tty run's terminal modes: *t holds the modes the new PTY has. */
typedef void (*sup_tio_fn)(struct termios *t, void *data);
/* rein_sup_spawn, with fn (may be NULL) called on the PTY's modes before
 * the child starts, so its first read or write already sees them (the CLI
 * proxy copies the person's terminal, or turns echo off for piped input).
 * Ignored for pipe runs. */
int sup_spawn_tio(rein_sup_t *s, const rein_run_opts_t *o, sup_tio_fn fn,
                  void *data, int64_t *id);
/* What a front end may ask of a run beyond rein_run_opts_t (the shell
 * module runs bash with an environment of its own and a control socket,
 * and reads what a background job prints after bash exits). */
typedef struct sup_spawn_extra {
    /* The child's whole base environment ("NAME=value"..., NULL-terminated)
     * in place of ours; o->env is still laid over it.  NULL: environ. */
    const char *const *envp;
    /* Fds of ours the child gets at 3, 4, ... (spawn_opts_t.extra_fds);
     * the caller keeps and closes its own copies. */
    const int *extra_fds;
    size_t n_extra_fds;
    /* When the leader exits on its own, drain its output until EOF,
     * exit_drain_idle_ms without output, or exit_drain_max_ms in all
     * before its leftovers are ended.  0 (max): leftovers are ended at
     * once, as for every other run.  A cancel during the drain is a no-op:
     * the run already ends by exit. */
    uint32_t exit_drain_idle_ms, exit_drain_max_ms;
    /* With an exit drain: called (may be NULL) with o->data when the
     * leader exits on its own, just before the drain starts.  true holds
     * the end of the drain: the leftovers are not ended until
     * sup_run_release(s, id), so output channels the front end reads
     * itself (the persistent shell's per-command FIFO) get their own
     * drain while their writers live.  The supervisor's drain of its pipe
     * is unchanged; only what follows it waits. */
    bool (*on_leader_exit)(rein_sup_t *s, int64_t id, void *data);
} sup_spawn_extra_t;

/* sup_spawn_tio without a PTY hook and with x (may be NULL).  On a failed
 * spawn, *step (may be NULL) says which step of the child's set-up failed
 * (SPAWN_STEP_NONE when it was not the child's). */
int sup_spawn_ex(rein_sup_t *s, const rein_run_opts_t *o,
                 const sup_spawn_extra_t *x, int64_t *id,
                 spawn_step_t *step);
/* fstat of what run id's processes read as input: the PTY slave, or the
 * stdin pipe.  0, REIN_ENORUN, or -EPIPE when stdin is closed (or the
 * terminal already released). */
int sup_run_input(rein_sup_t *s, int64_t id, struct stat *st);
/* Whether a tty run's terminal holds input its processes can read now
 * without waiting: 1 (a complete line or an EOF in canonical mode, VMIN
 * bytes in raw mode), 0 (none: a reader would block), REIN_ENORUN,
 * -ENOTTY for a pipe run, -EPIPE once the terminal is released.  `rein
 * run` answers a blocked read with EOF only when nothing is queued, so
 * one EOF at most waits in the terminal. */
int sup_run_input_queued(rein_sup_t *s, int64_t id);
/* Reads (and hands to on_output) what the run's output fd holds now. */
void sup_run_drain(rein_sup_t *s, int64_t id);
/* Ends the hold sup_spawn_extra_t.on_leader_exit put on run id's exit
 * drain: its leftovers are ended now if the drain is over, or when it
 * ends.  May call the run's on_exit before it returns.  A no-op without a
 * hold; sup_run_detach and rein_sup_close release it too. */
void sup_run_release(rein_sup_t *s, int64_t id);
/* rein_sup_cancel for a reason of the front end's own: why is
 * REIN_REASON_MANUAL_CANCEL, REIN_REASON_NO_INPUT (`rein run` ending a
 * command that waits for keys after its input is over) or
 * REIN_REASON_SHUTDOWN (a front end ending its runs as it closes), so what the
 * registry, `rein ps` and the exit event say is why the run was ended.
 * -EINVAL for any other reason (the supervisor's own: timeouts, escapes,
 * reconcile) or a bad signal; REIN_ENORUN for an unknown run. */
int sup_run_cancel(rein_sup_t *s, int64_t id, rein_reason_t why, int signo,
                   int grace_ms);
/* The process group rein_sup_signal would signal now: the run's
 * terminal's foreground group if it is one of the run's, else the
 * leader's (whose id is the leader's pid).  REIN_ENORUN, REIN_ENOTRUNNING
 * as rein_sup_signal. */
pid_t sup_run_fg_group(rein_sup_t *s, int64_t id);
/* signo to process group pg if it is one of run id's (the leader's, or
 * one led from within its session); -ESRCH when it is not. */
int sup_run_signal_group(rein_sup_t *s, int64_t id, pid_t pg, int signo);
/* True when ending run id needed SIGKILL after the grace. */
bool sup_run_escalated(rein_sup_t *s, int64_t id);
/* Drops run id's callbacks (its owner is freed first); the run goes on
 * until it ends or rein_sup_close ends it. */
void sup_run_detach(rein_sup_t *s, int64_t id);
/* The directory holding <id>.log files; NULL for an ephemeral supervisor. */
const char *sup_logs_dir(const rein_sup_t *s);
/* A run's remembered members (every process seen in it: pid + start
 * time) are sifted for those gone once they number this many, then again
 * each time they double.  A watcher or a dev server that forks a child a
 * second for days would otherwise remember (and keep in the registry)
 * every one it ever had, and each scan, kill pass and adoption walks that
 * list.  Doubling keeps the sifting's /proc reads to a constant per member
 * seen, and the list below twice the members present at the last sift
 * (below this at least). */
#define SUP_KNOWN_SIFT_MIN 64
/* How many members (the leader, descendants) run id remembers now; 0 for
 * an unknown run: after each scan, below max(SUP_KNOWN_SIFT_MIN, twice
 * those present at the last sift), however many the run ever had. */
size_t sup_run_known(rein_sup_t *s, int64_t id);
/* Whether run id ran on a terminal: 1 (tty), 0 (pipes), from the run
 * itself while this supervisor holds it, else from its registry record;
 * REIN_ENORUN for a run known to neither. */
int sup_run_tty(rein_sup_t *s, int64_t id);
/* The ids of every run not exited: this supervisor's and, from the
 * registry, every other owner's (a log retention must leave theirs alone
 * too); one may be listed twice.  free() *ids. */
int sup_live_runs(rein_sup_t *s, int64_t **ids, size_t *n);
/* Retention of the registry: forgets the exited runs that ended before
 * ended_before_ms (0: none by age) and the exited ones among ids (whose
 * logs retention removed), with their descendants (registry_runs_forget).
 * *n: how many.  0 with *n = 0 for an ephemeral supervisor. */
int sup_forget_runs(rein_sup_t *s, int64_t ended_before_ms,
                    const int64_t *ids, size_t n_ids, size_t *n);

#endif
