/*
 * loop.h — the event loop: fd watchers, timers, child exits, signals.
 *
 * One single-threaded epoll loop drives everything rein does: output reads,
 * deadlines, child exits and signals.  Child exit comes from a pidfd, which
 * cannot be fooled by pid reuse; where pidfd_open() returns ENOSYS (old
 * kernels, valgrind) or REIN_PIDFD=0 is set, a signalfd for SIGCHLD plus a
 * waitid() per watched child takes its place.
 *
 * Child watchers never reap: they report the exit with the child still a
 * zombie, so its pid and process group stay reserved while the owner kills
 * what is left of the group.  The owner reaps with spawn_reap() when done.
 *
 * Watchers may be added and removed from inside any callback.
 */
#ifndef REIN_BASE_LOOP_H
#define REIN_BASE_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct loop loop_t;

/* Event bits for fd watchers. */
#define LOOP_READ 1u
#define LOOP_WRITE 2u
#define LOOP_HUP 4u /* hang-up or error; always reported */

typedef void (*loop_io_fn)(loop_t *l, int fd, unsigned events, void *data);
typedef void (*loop_timer_fn)(loop_t *l, uint64_t id, void *data);
/* info: from waitid(WNOWAIT): si_code CLD_EXITED/KILLED/DUMPED, si_status. */
typedef void (*loop_child_fn)(loop_t *l, pid_t pid, const siginfo_t *info,
                              void *data);
typedef void (*loop_signal_fn)(loop_t *l, int signo, void *data);

/* Creates a loop.  Detects pidfd support once (honouring REIN_PIDFD=0). */
int loop_new(loop_t **out);
/* Frees the loop; watchers still registered are dropped without callbacks;
 * restores the signal mask it changed. */
void loop_free(loop_t *l);

/* The epoll fd: readable when loop_run_once has something to dispatch, so
 * a host can embed the loop in its own poll. */
int loop_fd(const loop_t *l);

/* True when child exits are watched through pidfds. */
bool loop_uses_pidfd(const loop_t *l);
/* Monotonic milliseconds, refreshed before each dispatch. */
uint64_t loop_now(loop_t *l);
/* Monotonic milliseconds, read now (not cached). */
uint64_t loop_clock_ms(void);
/* Wall-clock milliseconds since the epoch, read now: for what is recorded
 * (registry rows, events, leases), never for measuring an interval. */
int64_t loop_wall_ms(void);
/* Timers armed, and fds watched (io, children, the signalfd): a loop that
 * serves a session for hours must come back to the same counts once the
 * work it took on is over, or it grows with every command. */
size_t loop_timer_count(const loop_t *l);
size_t loop_watch_count(const loop_t *l);

/* Watches fd for events (LOOP_READ | LOOP_WRITE).  -EEXIST if watched. */
int loop_io_add(loop_t *l, int fd, unsigned events, loop_io_fn fn,
                void *data);
int loop_io_mod(loop_t *l, int fd, unsigned events);
/* Stops watching fd; safe for an fd already closed by the caller only if
 * called before close (epoll forgets closed fds on its own). */
int loop_io_del(loop_t *l, int fd);

/* One-shot timer after ms; *id (optional) names it for loop_timer_del.
 * Ids are never 0 and never reused within a loop. */
int loop_timer_add(loop_t *l, uint64_t ms, loop_timer_fn fn, void *data,
                   uint64_t *id);
/* Cancels a pending timer; a no-op for 0 or an id that already fired. */
void loop_timer_del(loop_t *l, uint64_t id);

/* Watches child pid (a child of this process, unreaped).  pidfd is the
 * child's pidfd or -1; the loop does not take ownership of it.  fn runs
 * once, after which the watcher is gone. */
int loop_child_add(loop_t *l, pid_t pid, int pidfd, loop_child_fn fn,
                   void *data);
void loop_child_del(loop_t *l, pid_t pid);

/* Calls fn after every SIGCHLD, once the watched children were checked, so
 * a subreaper can look for re-parented orphans (which no watcher names).
 * Routes SIGCHLD through the signalfd from then on, in pidfd mode too. */
typedef void (*loop_orphan_fn)(loop_t *l, void *data);
int loop_orphan_watch(loop_t *l, loop_orphan_fn fn, void *data);

/* Delivers signo through a signalfd; blocks it in the calling thread for
 * the loop's lifetime. */
int loop_signal_add(loop_t *l, int signo, loop_signal_fn fn, void *data);
void loop_signal_del(loop_t *l, int signo);

/* Waits up to timeout_ms (-1: until an event) and dispatches what is ready.
 * Returns the number of callbacks run, or a negative error. */
int loop_run_once(loop_t *l, int timeout_ms);
/* Runs until loop_stop() is called from a callback.  0 or an error. */
int loop_run(loop_t *l);
void loop_stop(loop_t *l);

#endif
