/*
 * contain.h — containment: the boundary that holds everything a run starts.
 *
 * Detected once when a supervisor opens, best first, and recorded on every
 * run (REIN_CONTAINMENT=cgroup|subreaper|pgid forces a level; asking for a
 * level the machine lacks is an error, not a silent downgrade):
 *
 *   cgroup     a cgroup v2 leaf per run, under rein's own cgroup: the
 *              cgroup2 mount is found in /proc/self/mountinfo (it is not
 *              always /sys/fs/cgroup; here it is /sys/fs/cgroup/unified
 *              beside v1 hierarchies).  The child joins it before exec, so
 *              nothing it forks can be outside; cgroup.kill ends it all,
 *              setsid escapees included; cgroup.events says when it is empty.
 *   subreaper  PR_SET_CHILD_SUBREAPER on the supervisor: orphans of a run are
 *              re-parented to rein, not to init, and are attributed to the
 *              run that started them (remembered descendants, session id).
 *   pgid       the run's own session and process group only.
 *
 * Where a cgroup v1 `pids` controller is writable, each run also gets a pids
 * cgroup with pids.max, so a fork bomb is bounded at any level; being a
 * cgroup, it also lists (and lets contain_run_kill end) what the run
 * started below the cgroup level, setsid escapees included.
 *
 * Layout, in each hierarchy:
 *     <rein's own cgroup>/rein/<pid>.<start>.<n>/run-<id>
 * The middle directory is one contain_t's own (pid plus start time never
 * repeat within a boot; n counts the contain_t of one process), so rein
 * processes with colliding run ids never share a leaf.  contain_open sweeps
 * the empty leaves of instances whose process is gone; populated ones stay
 * for reconcile.
 */
#ifndef REIN_SUPERVISE_CONTAIN_H
#define REIN_SUPERVISE_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/ptree.h"
#include "base/spawn.h"

typedef enum contain_level {
    CONTAIN_PGID = 1,
    CONTAIN_SUBREAPER = 2,
    CONTAIN_CGROUP = 3,
} contain_level_t;

/* Default per-run task limit where a pids controller is writable. */
#define CONTAIN_DEFAULT_PIDS_MAX 4096
/* The most cgroup.procs fds a child writes itself into before exec (the
 * v1 pids cgroup; the v2 leaf it is born in, see contain_run_spawn_opts). */
#define CONTAIN_MAX_JOIN_FDS 1

typedef struct contain contain_t;
typedef struct contain_run contain_run_t;

/* Detects the best level (or the forced one: "cgroup", "subreaper",
 * "pgid"; NULL: $REIN_CONTAINMENT, else best).  Sets the subreaper flag at
 * the subreaper and cgroup levels (orphans come to us either way).  Below
 * the cgroup level the v2 hierarchy is looked up (nothing is made there)
 * when contain_run_attach first needs it. */
int contain_open(const char *force, contain_t **out);
/* The same; on failure why (when not NULL) names what is missing or what
 * was wrong ("cgroup: no cgroup2 mount ...", "unknown containment level"):
 * -EINVAL for a bad level name, -ENOTSUP for a level the machine lacks. */
int contain_open_why(const char *force, contain_t **out, char *why,
                     size_t why_size);
/* Removes rein's instance cgroups (once every run is freed) and turns the
 * subreaper flag off again if contain_open turned it on.  NULL: no-op. */
void contain_free(contain_t *c);
/* The level detected (or forced) at open, to record on every run. */
contain_level_t contain_level(const contain_t *c);
/* "cgroup", "subreaper", "pgid" ("unknown" for anything else). */
const char *contain_level_name(contain_level_t level);
/* The inverse of contain_level_name; -EINVAL for an unknown name. */
int contain_level_parse(const char *name, contain_level_t *out);
/* Whether a pids limit is applied per run. */
bool contain_has_pids_limit(const contain_t *c);
/* What detection found missing, "; "-separated ("" when nothing): why a
 * better level or the pids limit was not taken, for the log. */
const char *contain_note(const contain_t *c);
/* Where the cgroup2 hierarchy is mounted, or NULL below the cgroup level. */
const char *contain_cgroup2_mount(const contain_t *c);
/* The instance cgroups under which contain_run_new makes each run's leaf,
 * run-<id> (paths from the hierarchy's root, as contain_run_cgroup), or
 * NULL where runs get none: the v2 one at the cgroup level, the v1 pids
 * one wherever the pids limit is applied. */
const char *contain_instance_cgroup(const contain_t *c);
const char *contain_instance_pids_cgroup(const contain_t *c);

/* Prepares the boundary of run run_id (a leaf cgroup named after it, and a
 * pids cgroup with pids_max, 0: CONTAIN_DEFAULT_PIDS_MAX). */
int contain_run_new(contain_t *c, int64_t run_id, uint32_t pids_max,
                    contain_run_t **out);
/* Sets o up to start the child inside the run's cgroups: born in the v2
 * leaf (spawn_opts_t.cgroup_fd, with its cgroup.procs as the fallback),
 * and joining the v1 pids cgroup through join, which must outlive the
 * spawn (spawn_opts_t.join_fds).  Below the cgroup level and without a
 * pids limit, o is left as it was. */
void contain_run_spawn_opts(const contain_run_t *r, spawn_opts_t *o,
                            int join[CONTAIN_MAX_JOIN_FDS]);
/* Re-attaches to the cgroups run run_id of another (dead) rein instance
 * left, as the registry recorded them, so reconcile can end what is
 * inside.  Only a leaf shaped as rein makes them for that run
 * (.../rein/<pid>.<start>.<n>/run-<run_id>) is accepted, wherever it lies
 * in the hierarchy and whatever level c is at: reconcile may run in
 * another cgroup, or with a lower level forced, than the rein that made
 * it.  -ENOENT when neither exists any more.  The result has no join fds;
 * contain_run_free removes the leaves once they are empty. */
int contain_run_attach(contain_t *c, int64_t run_id, const char *v2_rel,
                       const char *pids_rel, contain_run_t **out);
/* The level the run was made at (the supervisor's, recorded per run). */
contain_level_t contain_run_level(const contain_run_t *r);
/* The v2 cgroup of the run, relative to the cgroup2 mount as
 * /proc/<pid>/cgroup names it, or NULL below the cgroup level. */
const char *contain_run_cgroup(const contain_run_t *r);
/* The run's v1 pids cgroup (same notation), or NULL without a pids limit. */
const char *contain_run_pids_cgroup(const contain_run_t *r);
/* cgroup.events of the run's v2 leaf, for poll(POLLPRI) / epoll(EPOLLPRI):
 * it fires on every change of "populated"; call contain_run_populated
 * after each wake-up (it reads the file, which re-arms the event).  -1
 * below the cgroup level. */
int contain_run_events_fd(const contain_run_t *r);
/* Ends every process in the run's cgroups: cgroup.kill on the v2 leaf
 * (REIN_CGROUP_KILL=0 or a kernel < 5.14: SIGKILL to every member, pass
 * after pass until a pass finds nobody new), then the same passes over
 * the pids cgroup.  Does not wait: watch contain_run_events_fd.  0,
 * -EAGAIN when members kept appearing, -ENOTSUP when the run has neither
 * cgroup (pgid or subreaper level without a pids controller). */
int contain_run_kill(contain_run_t *r);
/* Sends the pass's signal to every process in the run's cgroup(s) that
 * the pass has not reached yet (see ptree_pass_t), each checked to be a
 * member while pinned by a pidfd (never rein itself, never pid <= 1), and
 * notes it in the pass; returns the count sent now, or a negative
 * error. */
int contain_run_signal(contain_run_t *r, ptree_pass_t *pass);
/* True while any process is in the run's cgroups (cgroup.events, and
 * cgroup.procs of the pids cgroup). */
bool contain_run_populated(const contain_run_t *r);
/* The pids in the run's cgroups, ascending, each once; *out malloc'ed. */
int contain_run_pids(const contain_run_t *r, pid_t **out, size_t *n);
/* Removes the run's cgroups (they must be empty: a populated one stays,
 * for reconcile); frees r.  NULL: no-op. */
void contain_run_free(contain_run_t *r);

/* The v2 cgroup of pid, relative to the cgroup2 mount, as
 * /proc/<pid>/cgroup names it ("/rein/4242.1234567.0/run-1042").  -ESRCH
 * when pid is gone, -ENOENT on a machine without cgroup v2. */
int contain_cgroup_of(pid_t pid, char *out, size_t size);
/* True when pid, a descendant of a run with session sid, left the run's
 * boundary: another session (setsid) or another cgroup (the v2 leaf, or
 * the pids cgroup).  Job-control groups inside the session are not
 * escapes.  False when pid is gone, a zombie (its cgroup reads "/", as if
 * it had left: a short-lived child must not end its run) or, with a
 * start_time (0: unknown), another process that took the pid. */
bool contain_run_escaped(const contain_run_t *r, pid_t sid, pid_t pid,
                         uint64_t start_time);

#endif
