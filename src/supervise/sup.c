/*
 * sup.c — the supervisor (rein.h: rein_sup_*).
 *
 * Owns every run it starts.  A run is a process started in its own session
 * (PTY or pipes) inside a containment boundary (contain.h), recorded in the
 * registry (registry.h) before it counts as running, its output spooled to
 * its own log file, driven through one lifecycle (runstate.h).  Ending a run
 * is always the same procedure, whatever asked for it:
 *
 *   TERM + CONT to the boundary (the cgroup, the session's members, every
 *   remembered descendant, the leader's group) -> grace -> cgroup.kill or
 *   KILL, rescanning the tree on every pass -> done only when the leader's
 *   exit was seen and the boundary is empty; bounded by
 *   REIN_SUP_KILL_BOUND_MS, after which the survivors are recorded and the
 *   run is flagged cleanup_incomplete.
 *
 * The leader stays an unreaped zombie until its boundary is empty, so its
 * pid, and with it the process group and session ids we signal, cannot be
 * reused underneath us.  Every member signalled is verified by start time
 * (ptree.h).
 *
 * Members are found by scans, each new one recorded in the registry before
 * anything else is done about it: on output, on every pass of an end, and,
 * with a registry, every REIN_SUP_SCAN_MS on the loop however quiet the
 * run (on_scan_tick), so that what left a run's session is on record
 * before a crash could orphan it, and its escape ends the run at once.
 *
 * When the leader exits on its own, whatever it left in its boundary
 * (background jobs, daemons) is ended the same way: rein leaves nothing
 * running.  The reason stays `exit`.  On a terminal, the kernel's hangup
 * may have killed such jobs first: they are counted apart (see "the
 * terminal's hangup" below).  A front end may first have the output
 * drained for a while (sup_spawn_ex's exit drain: the shell module keeps
 * what a background job prints just after bash exits), and may hold the
 * leftovers until it has drained an output channel of its own, bounded by
 * its own windows (on_leader_exit, sup_run_release).
 *
 * An orphan re-parented to us that no run can claim (several runs were
 * live and it left their sessions: a double-fork daemon whose parent
 * exited before any scan saw it) is a stray: ours, but no run's.  It is
 * recorded under the owner (never under a run: ending one run must not end
 * another's daemon), ended at rein_sup_close, and, after a crash, by the
 * reconcile of the dead owner, if it is still the same process.
 *
 * Several supervisors may share one state dir.  Each is an owner with an
 * flock'ed lock file and a lease renewed every REIN_SUP_HEARTBEAT_MS; a
 * supervisor reconciles only runs whose owner is dead (owner.h: its lock
 * free or its process gone), stealing them atomically before any signal
 * is sent.
 */
#include "rein.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/env.h"
#include "base/loop.h"
#include "base/procfs.h"
#include "base/ptree.h"
#include "base/spawn.h"
#include "base/spool.h"
#include "supervise/contain.h"
#include "supervise/events.h"
#include "supervise/owner.h"
#include "supervise/registry.h"
#include "supervise/runstate.h"
#include "supervise/sup.h"
#include "term/ptyio.h"

/* Bytes asked for per read of a run's output. */
#define SUP_READ_BUF 65536
/* Reads of a run's output per wake-up of the loop: then the loop's other
 * events get their turn (the fd is level-triggered, so what is left is
 * read on the next pass).  A command that writes faster than rein
 * condenses (`yes` under a view, under ASan) never lets a read find the
 * fd empty, and read until then, the loop never saw a timeout fire, a
 * cancel, or rein's own reader go away.  At a PTY's 4 KiB per read, 64
 * KiB a pass; a pipe's, up to 1 MiB. */
#define SUP_READS_PER_WAKE 16
/* How often the boundary is checked while a run is being ended. */
#define SUP_CHECK_MS 20
/* After the leader is reaped: drain output until EOF or this long. */
#define SUP_DRAIN_MS 300
/* How long a process left behind with a blocked hangup pending is given
 * to die of it, or to show it lives on, before it counts as a leftover
 * (end_leftovers).  A shell between vfork and exec, the one such process
 * met in practice, unblocks within a millisecond or so. */
#define SUP_HANGUP_SETTLE_MS 300
/* The grace rein_sup_close gives every live run. */
#define SUP_CLOSE_GRACE_MS 1000
/* Reconcile: grace between TERM and KILL for orphans of a dead owner. */
#define SUP_RECONCILE_GRACE_MS 500
/* Room for a counter's name with its label ("run_exit_total{reason=
 * \"no-output-timeout\"}" is the longest). */
#define SUP_COUNTER_NAME_MAX 96
/* First id of an ephemeral supervisor (no registry). */
#define SUP_EPHEMERAL_FIRST_ID 1000
/* One log past this keeps its first SUP_LOG_HEAD bytes and a rolling
 * tail; the dropped range is noted beside it (<id>.log.dropped). */
#define SUP_LOG_CAP (1ull << 30)
#define SUP_LOG_HEAD (64ull << 20)

struct run {
    rein_sup_t *sup;
    struct run *next;
    int64_t id;
    rein_run_state_t state;
    rein_reason_t reason;
    rein_output_fn on_output;
    rein_exit_fn on_exit;
    void *data;
    bool tty;
    uint64_t log_lost; /* bytes that never reached the log */
    int log_err;       /* the first error writing it, or 0 */
    pid_t pid;
    int pidfd;
    uint64_t start_time;
    int out_fd; /* PTY master or the pipe's read end */
    int slave;  /* PTY slave, held until the leader is reaped */
    int in_fd;  /* pipes: stdin's write end, or -1 */
    buf_t pending_in; /* stdin bytes waiting for room */
    bool close_in;    /* close stdin once pending_in is written (its EOF) */
    bool in_eof;      /* rein_sup_close_stdin was called on the pipe */
    contain_run_t *cr;
    spool_t *log;
    run_record_t rec; /* the registry row, kept in step */
    bool exited, reaped, eof, killed, in_registry;
    bool exit_recorded; /* the leader's exit is in the registry (record_exit) */
    bool leftovers_ended; /* rein_run_info_t.leftovers_ended */
    size_t hung_up;       /* rein_run_info_t.leftovers_hung_up */
    int exit_code, exit_signal;
    int grace_ms;
    uint32_t no_output_ms;
    uint64_t t_overall, t_noout, t_grace, t_check, t_drain;
    /* end_leftovers' wait for a blocked hangup to land, since when. */
    uint64_t t_settle, settle_start_mono;
    /* sup_spawn_extra_t.exit_drain_*: the drain after the leader's own
     * exit, before its leftovers are ended (0: none). */
    uint32_t xdrain_idle_ms, xdrain_max_ms;
    bool xdraining;
    /* sup_spawn_extra_t.on_leader_exit, and its hold: the front end still
     * drains a channel of its own (xhold); the drain ended meanwhile, so
     * the leftovers wait for the release (xheld). */
    bool (*on_leader_exit)(rein_sup_t *s, int64_t id, void *data);
    bool xhold, xheld;
    uint64_t t_xidle, t_xmax;
    uint64_t last_output_mono, last_scan_mono, kill_start_mono;
    uint64_t grace_end_mono; /* when t_grace fires */
    ptree_t known; /* every descendant seen and not yet gone */
    size_t known_sift_at; /* sift_known when known.n reaches this */
    ptree_t unsaved;   /* known members whose registry row a write failed to
                          add: the heartbeat tries again */
    events_heartbeat_t hb;
    pid_t *survivors;
    size_t n_survivors;
    const char *kill_mode; /* for run_cleanup_kill_total{mode} */
};

/* An orphan re-parented to us (a subreaper) that no run could claim when
 * it was adopted (see attribute): ours, but no run's. */
struct stray {
    pid_t pid;
    uint64_t start_time;
    bool recorded; /* its registry row is written (else: retried) */
};

struct rein_sup {
    loop_t *loop;
    registry_t *reg;
    events_t *ev;
    contain_t *contain;
    char *state_dir, *logs_dir, *lock_path;
    char owner[REGISTRY_OWNER_ID_LEN];
    char boot_id[PROCFS_BOOT_ID_LEN]; /* "" when ephemeral */
    int lock_fd;
    struct run *runs;
    int64_t next_ephemeral_id;
    uint64_t t_heartbeat;
    uint64_t t_scan; /* the periodic scan (on_scan_tick), while armed */
    char *rbuf;
    struct stray *strays; /* adopted orphans no run could claim */
    size_t n_strays;
};

/* Output bytes of the run so far (the spool counts them; ephemeral runs
 * count in the record). */
static uint64_t log_bytes(const struct run *r)
{
    return r->log ? spool_bytes(r->log) : r->rec.bytes;
}

static struct run *find_run(rein_sup_t *s, int64_t id)
{
    for (struct run *r = s->runs; r; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

/* ------------------------------------------------------- registry, events */

/* Writes the run's row; a failure is remembered in an event, never fatal
 * for a run already going (an unwritable registry refuses new runs only). */
static void record(struct run *r)
{
    rein_sup_t *s = r->sup;
    if (!s->reg || !r->in_registry)
        return;
    r->rec.state = (int)r->state;
    r->rec.reason = (int)r->reason;
    if (r->exited) {
        /* Recorded as soon as the leader ends: a rein that dies while the
         * run is exiting (its leftovers in their grace) must not take the
         * command's own status with it. */
        r->rec.exit_code = r->exit_code;
        r->rec.signal = r->exit_signal;
    }
    r->rec.bytes = log_bytes(r);
    r->rec.updated_ms = loop_wall_ms();
    int rc = registry_run_update(s->reg, &r->rec);
    if (rc < 0 && s->ev) {
        json_t *x = json_pack("{s:s}", "error", rein_strerror(rc));
        events_emit(s->ev, EVENTS_REGISTRY_ERROR, r->id, x);
    }
    /* Its row is gone or another rein's now (a reconcile that judged us
     * dead took it over): it is not written again, once said. */
    if (rc == -ENOENT)
        r->in_registry = false;
}

/* Writes the leader's exit to the registry once, before anything that
 * waits (the exit drain, the hang-up settle, the leftovers' grace, the
 * output drain): a rein that dies meanwhile must not take the command's
 * own status with it.  A run that winds up at once has its exit in its
 * final row instead: one transaction fewer on every run's path. */
static void record_exit(struct run *r)
{
    if (r->exit_recorded || !r->exited)
        return;
    r->exit_recorded = true;
    record(r);
}

static void counter(rein_sup_t *s, const char *name)
{
    if (s->reg)
        registry_counter_add(s->reg, name, 1);
}

static void event(rein_sup_t *s, events_type_t type, int64_t id, json_t *x)
{
    if (s->ev)
        events_emit(s->ev, type, id, x);
    else
        json_decref(x);
}

/* ---------------------------------------------------------- the boundary */

/* Adds (pid, start) to the run's remembered descendants; true if new. */
static bool remember(struct run *r, pid_t pid, uint64_t start)
{
    for (size_t i = 0; i < r->known.n; i++)
        if (r->known.v[i].pid == pid && r->known.v[i].start_time == start)
            return false;
    ptree_t one = {&PTREE_MEMBER(pid, start), 1};
    /* The leader is our child, not reaped: (pid, start) is it for sure,
     * and a second read of its stat would only cost the spawn path. */
    if ((pid == r->pid && !r->reaped ? ptree_add(&r->known, pid, start)
                                      : ptree_merge(&r->known, &one)) < 0)
        return false;
    if (r->sup->reg && pid != r->pid) {
        int rc = registry_descendant_add(r->sup->reg, r->id, pid, start);
        if (rc < 0) {
            /* Best-effort, as a run's row: a member not on record is one
             * a crash would leave to no one, so it is tried again. */
            ptree_merge(&r->unsaved, &one);
            event(r->sup, EVENTS_REGISTRY_ERROR, r->id,
                  json_pack("{s:s,s:i}", "error", rein_strerror(rc),
                            "descendant", (int)pid));
        }
    }
    if (pid != r->pid)
        event(r->sup, EVENTS_DESCENDANT, r->id,
              json_pack("{s:i,s:I}", "pid", (int)pid, "start_time",
                        (json_int_t)start));
    return true;
}

/* Forgets the remembered members that are gone (no process has their pid
 * and start time; a zombie is still there, and a scan would only find it
 * again), in memory and in the registry.  A gone member can never come
 * back (the start time names one process of this boot), so nothing that
 * would be signalled, adopted or recorded is lost. */
static void sift_known(struct run *r)
{
    registry_t *reg = r->sup->reg;
    /* One transaction for the lot; without it (busy) the rows stay: they
     * name processes that are gone, which reconcile verifies anyway. */
    bool batch = reg && registry_begin(reg) == 0;
    size_t k = 0;
    for (size_t i = 0; i < r->known.n; i++) {
        ptree_member_t *m = &r->known.v[i];
        uint64_t start;
        if (m->pid == r->pid ||
            (procfs_start_time(m->pid, &start) == 0 &&
             start == m->start_time)) {
            r->known.v[k++] = *m;
            continue;
        }
        if (batch)
            registry_descendant_delete(reg, r->id, m->pid, m->start_time);
        if (m->pidfd >= 0)
            close(m->pidfd);
    }
    r->known.n = k;
    if (batch)
        registry_commit(reg);
    r->known_sift_at = 2 * k > SUP_KNOWN_SIFT_MIN ? 2 * k : SUP_KNOWN_SIFT_MIN;
}

static void cancel_run(struct run *r, rein_reason_t why, int signo,
                       int grace_ms);

/* A member that left the run's session or cgroup is an ownership escape,
 * which ends the run. */
static void check_escape(struct run *r, pid_t p, uint64_t start)
{
    if (r->cr && contain_run_escaped(r->cr, r->pid, p, start)) {
        counter(r->sup, "run_ownership_escape_total");
        event(r->sup, EVENTS_ESCAPE, r->id, json_pack("{s:i}", "pid", (int)p));
        cancel_run(r, REIN_REASON_OWNERSHIP_ESCAPE, SIGTERM, r->grace_ms);
    }
}

/* Remembers (pid, start) for the run; a new member is checked for an
 * escape. */
static void consider(struct run *r, pid_t p, uint64_t start)
{
    if (remember(r, p, start) && p != r->pid)
        check_escape(r, p, start);
}

static void on_orphans(loop_t *l, void *data);

/* Every process's stat, read in one pass over /proc.  The session members
 * of a run can be found only this way (nothing lists a session), and the
 * pass reads every process on the machine, most of a scan's cost (see
 * REIN_SUP_SCAN_MS): the periodic scan reads it once for all runs. */
typedef struct proc_table {
    bool read; /* false: not read yet (scan_members reads it) */
    procfs_stat_t *v;
    size_t n;
} proc_table_t;

#define PROC_TABLE_INIT {false, NULL, 0}

/* Fills t (empty on failure: the scan then relies on its other sources). */
static void proc_table_read(proc_table_t *t)
{
    pid_t *all;
    size_t n;
    t->read = true;
    t->v = NULL;
    t->n = 0;
    if (procfs_list_all(&all, &n) < 0)
        return;
    if ((t->v = malloc((n ? n : 1) * sizeof *t->v)))
        for (size_t i = 0; i < n; i++)
            if (procfs_read_stat(all[i], &t->v[t->n]) == 0)
                t->n++;
    free(all);
}

static void proc_table_free(proc_table_t *t)
{
    free(t->v);
    *t = (proc_table_t)PROC_TABLE_INIT;
}

/* Remembers every live descendant of the leader, every member of its
 * session (from tab, read here if it was not yet; NULL: not looked for)
 * and of its cgroups. */
static void scan_members(struct run *r, proc_table_t *tab)
{
    ptree_t t = {NULL, 0};
    r->last_scan_mono = loop_now(r->sup->loop);
    if (!r->reaped && ptree_capture(r->pid, &t) == 0) {
        for (size_t i = 0; i < t.n; i++)
            consider(r, t.v[i].pid, t.v[i].start_time);
        ptree_free(&t);
    }
    /* Members of the run's session that are no longer descendants
     * (re-parented after their parent died) are still the run's.  Read
     * after the tree: one re-parented between the two is seen by one. */
    if (tab && !tab->read)
        proc_table_read(tab);
    for (size_t i = 0; tab && i < tab->n; i++)
        if (tab->v[i].session == r->pid && tab->v[i].state != 'Z')
            consider(r, tab->v[i].pid, tab->v[i].start_time);
    pid_t *all;
    size_t n;
    if (r->cr && contain_run_pids(r->cr, &all, &n) == 0) {
        for (size_t i = 0; i < n; i++) {
            uint64_t st;
            if (procfs_start_time(all[i], &st) == 0)
                consider(r, all[i], st);
        }
        free(all);
    }
    if (r->known.n >= r->known_sift_at)
        sift_known(r);
}

/* Remembers every live descendant of the leader, every member of its
 * session and of its cgroups, and (as a subreaper) the orphans re-parented
 * to us, which no SIGCHLD announces. */
static void scan(struct run *r)
{
    rein_sup_t *s = r->sup;
    proc_table_t tab = PROC_TABLE_INIT;
    scan_members(r, &tab);
    proc_table_free(&tab);
    if (contain_level(s->contain) >= CONTAIN_SUBREAPER)
        on_orphans(s->loop, s);
}

/* Whether the run is held by a cgroup of its own (a v2 leaf or a v1 pids
 * cgroup: either keeps every descendant, setsid or not). */
static bool run_in_cgroup(const struct run *r)
{
    return r->cr &&
           (contain_run_cgroup(r->cr) || contain_run_pids_cgroup(r->cr));
}

/* Whether the run needs the periodic scan: it is not over, and there is
 * a registry (an owner: `rein serve`, `rein run`, not a library's
 * ephemeral PTY or shell, which is scanned on output alone).  Without the
 * scan a quiet run's member that left the session would be recorded only
 * if some output or the run's end happened to scan while it could still
 * be found.  A cgroup keeps such a member for reconcile, but leaving the
 * session is still an escape, which ends the run: the scan sees it
 * however quiet the run (scan_cgroup), not just when it next prints. */
static bool needs_periodic_scan(const struct run *r)
{
    return r->sup->reg && r->state != REIN_RUN_EXITED && r->cr;
}

/* The periodic scan of a run a cgroup holds: the kernel lists its members
 * (no pass over /proc, no walk of the tree), one stat read each.  Each is
 * remembered, and checked for having left the run's session, the one way
 * out a cgroup does not stop; one already remembered too, since setsid(2)
 * keeps the pid (`setsid cmd` in sh: the child forked before it is
 * setsid may have been seen by a scan). */
static void scan_cgroup(struct run *r)
{
    pid_t *all;
    size_t n;
    r->last_scan_mono = loop_now(r->sup->loop);
    if (contain_run_pids(r->cr, &all, &n) < 0)
        return;
    for (size_t i = 0; i < n && r->state == REIN_RUN_RUNNING; i++) {
        procfs_stat_t st;
        if (all[i] == r->pid || procfs_read_stat(all[i], &st) < 0)
            continue;
        if (remember(r, all[i], st.start_time) || st.session != r->pid)
            check_escape(r, all[i], st.start_time);
    }
    free(all);
    if (r->known.n >= r->known_sift_at)
        sift_known(r);
}

static void on_scan_tick(loop_t *l, uint64_t id, void *data);

/* Arms the periodic scan if a run needs it and it is not armed. */
static void arm_scan_tick(rein_sup_t *s)
{
    if (s->t_scan)
        return;
    for (struct run *r = s->runs; r; r = r->next)
        if (needs_periodic_scan(r)) {
            loop_timer_add(s->loop, REIN_SUP_SCAN_MS, on_scan_tick, s,
                           &s->t_scan);
            return;
        }
}

/* The periodic scan: every run that needs it (needs_periodic_scan) is
 * scanned, however quiet, so what left its boundary is in the registry,
 * and an escape ends its run, within REIN_SUP_SCAN_MS.  A run that talks
 * is scanned on its output too (read_output).  A run in a cgroup is
 * scanned through it (scan_cgroup).
 *   As a subreaper, the pass over /proc for session members is left out:
 * it is most of a scan's cost (it reads every process on the machine),
 * and it finds nothing more there.  A live member of a run is below its
 * leader, or was re-parented to the nearest subreaper above it: one below
 * the leader (still below it), or rein, where on_orphans finds it.  At the
 * pgid level orphans go to init, so their session is the only trace. */
static void on_scan_tick(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    rein_sup_t *s = data;
    s->t_scan = 0;
    bool subreaper = contain_level(s->contain) >= CONTAIN_SUBREAPER;
    proc_table_t tab = PROC_TABLE_INIT;
    bool any = false;
    for (struct run *r = s->runs; r; r = r->next) {
        if (!needs_periodic_scan(r))
            continue;
        if (run_in_cgroup(r))
            scan_cgroup(r);
        else
            scan_members(r, subreaper ? NULL : &tab);
        any = true;
    }
    proc_table_free(&tab);
    if (any && subreaper)
        on_orphans(s->loop, s);
    arm_scan_tick(s);
}

/* ------------------------------------------------ the terminal's hangup
 *
 * When the leader of a terminal's session exits, the kernel sends SIGHUP
 * to the terminal's foreground process group (disassociate_ctty), before
 * the leader's exit is reported: `sh -c 'server & echo started'` on a PTY
 * loses its `server`, which is in sh's group, unless it ignores, catches
 * or blocks SIGHUP.  rein cannot be there first, but it can know: each
 * such job has SIGKILL pending from that moment (the kernel turns a fatal
 * signal into one at once), so it is no leftover for rein to end
 * (leftovers_now); and, as a subreaper, rein is handed each one that has
 * no live parent left in the run (its parent was the leader, or died of
 * the same hangup), reaps it and reads how it died (note_reaped).  The
 * run is not reported before every child of rein in its session has been
 * reaped (session_children_pending), so the count is whole when the run
 * ends: at least one for every job the hangup killed.  Not counted: a
 * process reaped by a parent of its own, one that survived the hangup
 * (rein ends that parent, a leftover) or one dying of it too (a subshell
 * waiting in wait4 reaps its child as both die: the subshell, the job, is
 * counted); anything at the pgid level, where orphans go to init. */

/* Whether the run's leader has begun to exit (PF_EXITING, set before its
 * terminal is hung up) or has exited.  Until wind_up it is our unreaped
 * child: its pid is still its own. */
static bool leader_exiting(const struct run *r)
{
    procfs_stat_t st;
    if (r->exited)
        return true;
    return !r->reaped && procfs_read_stat(r->pid, &st) == 0 &&
           (st.state == 'Z' || (st.flags & PROCFS_PF_EXITING));
}

/* st, a zombie just reaped with info: if SIGHUP killed it as the leader
 * of its terminal's session exited on its own (no cancel: a run rein
 * ends takes its jobs with it, whatever signal gets there first), it is
 * counted on that run. */
static void note_reaped(rein_sup_t *s, const procfs_stat_t *st,
                        const siginfo_t *info)
{
    if ((info->si_code != CLD_KILLED && info->si_code != CLD_DUMPED) ||
        info->si_status != SIGHUP)
        return;
    for (struct run *r = s->runs; r; r = r->next) {
        if (!r->tty || r->state == REIN_RUN_EXITED ||
            st->session != r->pid || st->pid == r->pid)
            continue;
        if ((r->reason == REIN_REASON_NONE || r->reason == REIN_REASON_EXIT ||
             r->reason == REIN_REASON_SIGNAL) &&
            leader_exiting(r))
            r->hung_up++;
        return;
    }
}

static struct stray *find_stray(rein_sup_t *s, pid_t pid, uint64_t start);
static void drop_stray(rein_sup_t *s, size_t i);

/* Reaps st, our zombie child (its pid is not reused before the waitid, so
 * the stray it may have been is gone for sure), and tells its run how it
 * died.  False if it was not ours to reap after all. */
static bool reap_zombie(rein_sup_t *s, const procfs_stat_t *st)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    bool reaped = waitid(P_PID, (id_t)st->pid, &info, WEXITED | WNOHANG) == 0 &&
                  info.si_pid == st->pid;
    if (reaped)
        note_reaped(s, st, &info);
    struct stray *x = find_stray(s, st->pid, st->start_time);
    if (x)
        drop_stray(s, (size_t)(x - s->strays));
    return reaped;
}

/* After a terminal's leader exited: reaps our zombie children of its
 * session (the jobs its hangup killed among them), and says whether one
 * has not finished exiting.  Until then the run is not over: a process
 * leaves its cgroup (cgroup_exit) a little before it is a zombie, and its
 * death would be read after the run was reported.  Repeated until a pass
 * reaps nothing: a child that died handed us its own children first. */
static bool session_children_pending(struct run *r)
{
    for (;;) {
        pid_t *kids;
        size_t n;
        bool reaped = false, pending = false;
        if (procfs_children(getpid(), &kids, &n) < 0)
            return false;
        for (size_t i = 0; i < n; i++) {
            procfs_stat_t st;
            if (kids[i] == r->pid || procfs_read_stat(kids[i], &st) < 0 ||
                st.session != r->pid)
                continue;
            if (st.state == 'Z') {
                /* One that will not be reaped is no reason to wait. */
                reaped = reap_zombie(r->sup, &st) || reaped;
            } else {
                pending = true;
            }
        }
        free(kids);
        if (pending || !reaped)
            return pending;
    }
}

/* True while anything of the run other than its (exited) leader lives. */
static bool boundary_alive(struct run *r)
{
    if (!r->exited)
        return true;
    bool alive = false;
    if (run_in_cgroup(r)) {
        alive = contain_run_populated(r->cr); /* the kernel's own count */
    } else {
        scan(r);
        for (size_t i = 0; i < r->known.n && !alive; i++)
            alive = r->known.v[i].pid != r->pid &&
                    procfs_alive(r->known.v[i].pid, r->known.v[i].start_time);
    }
    return alive || (r->tty &&
                     contain_level(r->sup->contain) >= CONTAIN_SUBREAPER &&
                     session_children_pending(r));
}

/* What the exited leader left in its boundary, as far as the kernel says
 * now (procfs_fate of each member). */
typedef enum leftovers {
    LEFT_NONE,    /* nothing but processes on their way out */
    LEFT_UNSURE,  /* and some with a blocked hangup pending, no other */
    LEFT_RUNNING, /* something runs that nothing is ending */
} leftovers_t;

/* A job the terminal's hangup killed, or one the command killed as it
 * exited, ends by itself, and is no leftover that rein ended. */
static leftovers_t leftovers_now(struct run *r)
{
    leftovers_t left = LEFT_NONE;
    if (run_in_cgroup(r))
        scan(r); /* boundary_alive, just before, scanned the others */
    for (size_t i = 0; i < r->known.n; i++) {
        const ptree_member_t *m = &r->known.v[i];
        if (m->pid == r->pid)
            continue;
        procfs_fate_t f = procfs_fate(m->pid, m->start_time);
        if (f == PROCFS_FATE_RUNNING)
            return LEFT_RUNNING;
        if (f == PROCFS_FATE_HUP_BLOCKED)
            left = LEFT_UNSURE;
    }
    return left;
}

/* One signal to everything in the boundary, each process once (a second
 * TERM cuts a shell's EXIT trap short; see ptree_pass_t): the leader's
 * group while the leader pins it, then the cgroup and the remembered
 * members (verified) that the group did not hold. */
static void signal_boundary(struct run *r, int signo)
{
    ptree_pass_t p;
    ptree_pass_begin(&p, signo, r->reaped ? 0 : r->pid);
    if (r->cr)
        contain_run_signal(r->cr, &p);
    ptree_pass_tree(&p, &r->known);
    ptree_pass_end(&p);
}

/* ------------------------------------------------------------ finishing */

static void on_drain_end(loop_t *l, uint64_t id, void *data);
static void read_output(struct run *r);

static void finalize(struct run *r)
{
    rein_sup_t *s = r->sup;
    if (runstate_step(&r->state, RUN_EV_CLEANED) != RUN_ACT_FINALIZE)
        return;
    loop_timer_del(s->loop, r->t_overall);
    loop_timer_del(s->loop, r->t_noout);
    loop_timer_del(s->loop, r->t_grace);
    loop_timer_del(s->loop, r->t_check);
    loop_timer_del(s->loop, r->t_drain);
    loop_timer_del(s->loop, r->t_xidle);
    loop_timer_del(s->loop, r->t_xmax);
    loop_timer_del(s->loop, r->t_settle);
    r->t_overall = r->t_noout = r->t_grace = r->t_check = r->t_drain = 0;
    r->t_xidle = r->t_xmax = r->t_settle = 0;
    r->xdraining = false;
    if (r->out_fd >= 0) {
        loop_io_del(s->loop, r->out_fd);
        close(r->out_fd);
        r->out_fd = -1;
    }
    if (r->in_fd >= 0) {
        loop_io_del(s->loop, r->in_fd);
        close(r->in_fd);
        r->in_fd = -1;
    }
    if (r->log) {
        r->rec.bytes = spool_bytes(r->log);
        int ferr = spool_flush(r->log);
        r->log_lost = spool_dropped(r->log);
        int cerr = spool_close(r->log);
        r->log_err = ferr ? ferr : cerr;
        r->log = NULL;
    }
    r->rec.ended_ms = loop_wall_ms();
    r->rec.exit_code = r->exited ? r->exit_code : -1;
    r->rec.signal = r->exit_signal;
    r->rec.cleanup_incomplete = r->n_survivors > 0;
    r->rec.background_ended = r->leftovers_ended;
    r->rec.background_hung_up = (uint32_t)r->hung_up;
    /* The final row and its counters land together. */
    bool batch = s->reg && registry_begin(s->reg) == 0;
    record(r);
    char name[SUP_COUNTER_NAME_MAX];
    snprintf(name, sizeof name, "run_exit_total{reason=\"%s\"}",
             rein_reason_name(r->reason));
    counter(s, name);
    if (r->killed) {
        snprintf(name, sizeof name, "run_cleanup_kill_total{mode=\"%s\"}",
                 r->kill_mode ? r->kill_mode : "pgid");
        counter(s, name);
    }
    if (batch && registry_commit(s->reg) < 0)
        event(s, EVENTS_REGISTRY_ERROR, r->id,
              json_pack("{s:s}", "error", registry_errmsg(s->reg)));
    event(s, EVENTS_EXIT, r->id,
          json_pack("{s:s,s:i,s:i,s:I,s:b,s:b,s:I}", "reason",
                    rein_reason_name(r->reason), "exit_code",
                    r->rec.exit_code, "signal", r->exit_signal, "bytes",
                    (json_int_t)r->rec.bytes, "cleanup_incomplete",
                    r->n_survivors > 0, "background_ended",
                    r->leftovers_ended, "background_hung_up",
                    (json_int_t)r->hung_up));
    if (r->cr) {
        contain_run_free(r->cr);
        r->cr = NULL;
    }
    if (r->on_exit) {
        rein_run_info_t info;
        rein_sup_info(s, r->id, &info);
        r->on_exit(s, r->id, &info, r->data);
    }
}

/* The boundary is empty (or we gave up): reap, drain, finalize. */
static void wind_up(struct run *r)
{
    rein_sup_t *s = r->sup;
    loop_timer_del(s->loop, r->t_check);
    loop_timer_del(s->loop, r->t_grace);
    r->t_check = r->t_grace = 0;
    if (!r->reaped && r->exited) {
        spawn_reap(r->pid, r->pidfd, NULL);
        r->reaped = true;
    }
    if (r->slave >= 0) {
        close(r->slave);
        r->slave = -1;
    }
    if (r->pidfd >= 0) {
        close(r->pidfd);
        r->pidfd = -1;
    }
    read_output(r);
    if (r->eof) {
        finalize(r);
        return;
    }
    /* Every writer should be gone; a survivor may still hold the pipe or
     * terminal, so the drain is bounded. */
    record_exit(r);
    if (!r->t_drain)
        loop_timer_add(s->loop, SUP_DRAIN_MS, on_drain_end, r, &r->t_drain);
}

static void on_drain_end(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct run *r = data;
    r->t_drain = 0;
    read_output(r);
    finalize(r);
}

static void give_up(struct run *r)
{
    /* The bound passed with members alive (uninterruptible sleep, or a
     * process we may not signal): record them and stop waiting. */
    free(r->survivors);
    r->survivors = NULL;
    r->n_survivors = 0;
    /* The record names each by pid and start time, so that whoever reads
     * it later can tell the survivor from a process given its pid since. */
    buf_t b = BUF_INIT;
    for (size_t i = 0; i < r->known.n; i++) {
        const ptree_member_t *m = &r->known.v[i];
        if (!procfs_alive(m->pid, m->start_time))
            continue;
        pid_t *v = realloc(r->survivors, (r->n_survivors + 1) * sizeof *v);
        if (!v)
            break;
        r->survivors = v;
        buf_printf(&b, "%s%d:%" PRIu64, r->n_survivors ? "," : "",
                   (int)m->pid, m->start_time);
        r->survivors[r->n_survivors++] = m->pid;
    }
    free(r->rec.survivors);
    r->rec.survivors = r->n_survivors ? buf_detach(&b) : NULL;
    buf_free(&b);
    event(r->sup, EVENTS_CLEANUP, r->id,
          json_pack("{s:b,s:i}", "incomplete", 1, "survivors",
                    (int)r->n_survivors));
    if (!r->exited) {
        /* The leader itself survived: we cannot reap it without blocking. */
        r->reaped = true;
    }
    wind_up(r);
}

static void on_check(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    r->t_check = 0;
    if (r->exited && !boundary_alive(r)) {
        if (r->killed || r->t_grace)
            event(r->sup, EVENTS_CLEANUP, r->id,
                  json_pack("{s:b,s:s}", "incomplete", 0, "mode",
                            r->kill_mode ? r->kill_mode : "pgid"));
        wind_up(r);
        return;
    }
    if (r->killed && loop_now(l) - r->kill_start_mono >=
                         (uint64_t)REIN_SUP_KILL_BOUND_MS) {
        give_up(r);
        return;
    }
    if (r->killed) /* rescan and KILL again: new forks, stopped ones */
        signal_boundary(r, SIGKILL);
    loop_timer_add(l, SUP_CHECK_MS, on_check, r, &r->t_check);
}

static void on_grace_end(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    r->t_grace = 0;
    scan(r);
    r->killed = true;
    r->kill_start_mono = loop_now(l);
    if (r->cr && contain_run_kill(r->cr) == 0)
        r->kill_mode = "cgroup";
    else
        r->kill_mode = r->known.n > 1 ? "pid" : "pgid";
    signal_boundary(r, SIGKILL);
    loop_timer_del(l, r->t_check);
    loop_timer_add(l, 0, on_check, r, &r->t_check);
}

/* Starts ending the run's boundary: signo + CONT, grace, KILL. */
static void terminate(struct run *r, int signo, int grace_ms)
{
    rein_sup_t *s = r->sup;
    scan(r);
    signal_boundary(r, signo ? signo : SIGTERM);
    signal_boundary(r, SIGCONT);
    loop_timer_del(s->loop, r->t_grace);
    uint64_t grace = grace_ms < 0 ? 0 : (uint64_t)grace_ms;
    r->grace_end_mono = loop_now(s->loop) + grace;
    loop_timer_add(s->loop, grace, on_grace_end, r, &r->t_grace);
    loop_timer_del(s->loop, r->t_check);
    loop_timer_add(s->loop, SUP_CHECK_MS, on_check, r, &r->t_check);
}

/* Brings the KILL of a run in its grace forward to ms from now, if it
 * was due later: a grace given earlier (up to a minute, from kill_session)
 * must not outlast the close, which frees what is still running once its
 * own bound has passed, nor a second cancel that asks for KILL now. */
static void hasten_grace(struct run *r, int ms)
{
    rein_sup_t *s = r->sup;
    uint64_t in = ms < 0 ? 0 : (uint64_t)ms, by = loop_now(s->loop) + in;
    if (!r->t_grace || r->grace_end_mono <= by)
        return;
    loop_timer_del(s->loop, r->t_grace);
    r->grace_end_mono = by;
    loop_timer_add(s->loop, in, on_grace_end, r, &r->t_grace);
}

static void cancel_run(struct run *r, rein_reason_t why, int signo,
                       int grace_ms)
{
    if (r->state != REIN_RUN_RUNNING)
        return; /* repeated cancels, or exiting already: no-ops */
    runstate_set_reason(&r->reason, why);
    if (runstate_step(&r->state, RUN_EV_CANCEL) != RUN_ACT_TERMINATE)
        return;
    record(r);
    if (why == REIN_REASON_OVERALL_TIMEOUT)
        counter(r->sup, "run_timeout_total{type=\"overall\"}");
    else if (why == REIN_REASON_NO_OUTPUT_TIMEOUT)
        counter(r->sup, "run_timeout_total{type=\"no_output\"}");
    event(r->sup, EVENTS_CANCEL, r->id,
          json_pack("{s:s,s:i,s:i}", "reason", rein_reason_name(why),
                    "signal", signo ? signo : SIGTERM, "grace_ms", grace_ms));
    terminate(r, signo, grace_ms);
}

/* ---------------------------------------------------------- run events */

static void on_xdrain(loop_t *l, uint64_t id, void *data);

/* Reads the run's output: at most max_reads reads, or until the fd is
 * empty or at its end. */
static void read_output_max(struct run *r, unsigned max_reads)
{
    rein_sup_t *s = r->sup;
    if (r->eof || r->out_fd < 0)
        return;
    bool got = false;
    for (unsigned reads = 0; reads < max_reads; reads++) {
        ssize_t n = read(r->out_fd, s->rbuf, SUP_READ_BUF);
        if (n > 0) {
            got = true;
            if (r->log)
                spool_write(r->log, s->rbuf, (size_t)n);
            else
                r->rec.bytes += (uint64_t)n;
            if (r->on_output)
                r->on_output(s, r->id, s->rbuf, (size_t)n, r->data);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        r->eof = true; /* EOF, or EIO: every writer of the terminal gone */
        loop_io_del(s->loop, r->out_fd);
        break;
    }
    if (!got)
        return;
    if (r->xdraining && !r->eof) {
        /* Output keeps the exit drain going, up to its overall bound. */
        loop_timer_del(s->loop, r->t_xidle);
        loop_timer_add(s->loop, r->xdrain_idle_ms, on_xdrain, r,
                       &r->t_xidle);
    }
    r->last_output_mono = loop_now(s->loop);
    r->rec.last_output_ms = loop_wall_ms();
    if (s->ev)
        events_output(s->ev, &r->hb, r->id, log_bytes(r),
                      (int64_t)loop_now(s->loop));
    if (r->state == REIN_RUN_RUNNING &&
        loop_now(s->loop) - r->last_scan_mono >= REIN_SUP_SCAN_MS)
        scan(r);
}

/* Reads all the run's output fd holds now: at its end, in a drain window,
 * for a caller that must have it all before it goes on. */
static void read_output(struct run *r)
{
    read_output_max(r, UINT_MAX);
}

static void on_settle(loop_t *l, uint64_t id, void *data);

/* The leader exited on its own: end what it left in its boundary, or wind
 * up at once when nothing is left.  What is on its way out is ended the
 * same way (TERM, grace, KILL: bounded even if it hangs), but is no
 * leftover (rein_run_info_t.leftovers_ended).  A member with a blocked
 * hangup pending (a shell between vfork and exec: it dies as it unblocks)
 * is looked at again every SUP_CHECK_MS for SUP_HANGUP_SETTLE_MS, until
 * it died or shows it lives on (it took the signal through a signalfd);
 * after that it is a leftover. */
static void end_leftovers(struct run *r)
{
    rein_sup_t *s = r->sup;
    if (!boundary_alive(r)) {
        wind_up(r);
        return;
    }
    leftovers_t left = leftovers_now(r);
    if (left == LEFT_UNSURE && !r->settle_start_mono)
        r->settle_start_mono = loop_now(s->loop);
    record_exit(r); /* what follows waits */
    if (left == LEFT_UNSURE &&
        loop_now(s->loop) - r->settle_start_mono < SUP_HANGUP_SETTLE_MS) {
        loop_timer_add(s->loop, SUP_CHECK_MS, on_settle, r, &r->t_settle);
        return;
    }
    r->leftovers_ended = left != LEFT_NONE;
    terminate(r, SIGTERM, r->grace_ms); /* leftovers of the run */
}

static void on_settle(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct run *r = data;
    r->t_settle = 0;
    end_leftovers(r);
}

/* The exit drain is over (EOF, idle, or its bound): on to the leftovers. */
static void xdrain_end(struct run *r)
{
    rein_sup_t *s = r->sup;
    if (!r->xdraining)
        return;
    r->xdraining = false;
    loop_timer_del(s->loop, r->t_xidle);
    loop_timer_del(s->loop, r->t_xmax);
    r->t_xidle = r->t_xmax = 0;
    if (r->xhold) {
        r->xheld = true; /* sup_run_release goes on from here */
        return;
    }
    end_leftovers(r);
}

/* Lets a held exit drain go on to the leftovers. */
static void xhold_release(struct run *r)
{
    if (!r->xhold)
        return;
    r->xhold = false;
    if (r->xheld) {
        r->xheld = false;
        end_leftovers(r);
    }
}

static void on_xdrain(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    struct run *r = data;
    if (id == r->t_xidle)
        r->t_xidle = 0;
    else if (id == r->t_xmax)
        r->t_xmax = 0;
    else
        return; /* not a window of this drain */
    read_output(r);
    xdrain_end(r);
}

static void flush_stdin(struct run *r);

static void on_io(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    struct run *r = data;
    if (fd == r->out_fd && (ev & (LOOP_READ | LOOP_HUP)))
        read_output_max(r, SUP_READS_PER_WAKE);
    if (r->xdraining && r->eof)
        xdrain_end(r);
    if ((ev & LOOP_WRITE) && r->pending_in.len)
        flush_stdin(r);
    if (r->eof && r->reaped && r->state == REIN_RUN_EXITING && !r->t_check &&
        !r->t_grace)
        finalize(r);
}

static void on_child(loop_t *l, pid_t pid, const siginfo_t *info, void *data)
{
    (void)l;
    (void)pid;
    struct run *r = data;
    r->exited = true;
    if (info->si_code == CLD_EXITED) {
        r->exit_code = info->si_status;
    } else {
        r->exit_signal = info->si_status;
        r->exit_code = 128 + info->si_status;
    }
    runstate_set_reason(&r->reason, info->si_code == CLD_EXITED
                                        ? REIN_REASON_EXIT
                                        : REIN_REASON_SIGNAL);
    run_action_t act = runstate_step(&r->state, RUN_EV_CHILD_EXIT);
    if (act == RUN_ACT_CLEANUP) {
        loop_timer_del(r->sup->loop, r->t_overall);
        loop_timer_del(r->sup->loop, r->t_noout);
        r->t_overall = r->t_noout = 0;
        if (r->xdrain_max_ms) {
            /* What a background job still prints belongs to the run:
             * read it before its writers are ended.  The leader stays
             * an unreaped zombie meanwhile, pinning its ids. */
            r->xdraining = true;
            record_exit(r);
            if (r->on_leader_exit &&
                r->on_leader_exit(r->sup, r->id, r->data))
                r->xhold = true;
            /* The windows first: output read now restarts the idle one
             * (read_output), which must not leave a second behind. */
            loop_timer_add(r->sup->loop, r->xdrain_idle_ms, on_xdrain, r,
                           &r->t_xidle);
            loop_timer_add(r->sup->loop, r->xdrain_max_ms, on_xdrain, r,
                           &r->t_xmax);
            read_output(r);
            if (r->eof)
                xdrain_end(r);
            return;
        }
        end_leftovers(r);
    }
    /* While exiting, the check timer sees the exit on its next pass. */
}

static void on_overall(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct run *r = data;
    r->t_overall = 0;
    cancel_run(r, REIN_REASON_OVERALL_TIMEOUT, SIGTERM, r->grace_ms);
}

static void on_noout(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct run *r = data;
    r->t_noout = 0;
    /* One timer per run, re-armed lazily: output only moves a timestamp,
     * so a chatty run costs no timer churn. */
    uint64_t idle = loop_now(l) - r->last_output_mono;
    if (idle >= r->no_output_ms) {
        cancel_run(r, REIN_REASON_NO_OUTPUT_TIMEOUT, SIGTERM, r->grace_ms);
        return;
    }
    loop_timer_add(l, r->no_output_ms - idle, on_noout, r, &r->t_noout);
}

/* --------------------------------------------------------------- spawn */

static void run_free(struct run *r)
{
    if (!r)
        return;
    if (r->t_xidle)
        loop_timer_del(r->sup->loop, r->t_xidle);
    if (r->t_xmax)
        loop_timer_del(r->sup->loop, r->t_xmax);
    if (r->t_settle)
        loop_timer_del(r->sup->loop, r->t_settle);
    if (r->out_fd >= 0)
        close(r->out_fd);
    if (r->in_fd >= 0)
        close(r->in_fd);
    if (r->slave >= 0)
        close(r->slave);
    if (r->pidfd >= 0)
        close(r->pidfd);
    spool_close(r->log);
    contain_run_free(r->cr);
    ptree_free(&r->known);
    ptree_free(&r->unsaved);
    buf_free(&r->pending_in);
    run_record_clear(&r->rec);
    free(r->survivors);
    free(r);
}

static char *join_argv(const char *const *argv)
{
    buf_t b = BUF_INIT;
    for (size_t i = 0; argv[i]; i++)
        buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
    return buf_detach(&b);
}

static char *env_names(const char *const *env)
{
    buf_t b = BUF_INIT;
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        size_t len = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
        if (i)
            buf_append_byte(&b, ',');
        buf_append(&b, env[i], len); /* names only: values never stored */
    }
    return b.len ? buf_detach(&b) : (buf_free(&b), NULL);
}

/* Opens the run's I/O: a PTY (its modes adjusted by tio_fn, if given),
 * or a pipe for output (+ one for stdin). */
static int open_io(struct run *r, const rein_run_opts_t *o, sup_tio_fn tio_fn,
                   void *tio_data, int *child_in, int *child_out)
{
    if (o->tty) {
        unsigned cols = ptyio_clamp_cols(o->cols);
        unsigned rows = ptyio_clamp_rows(o->rows);
        int rc = ptyio_open(cols, rows, NULL, &r->out_fd, &r->slave);
        if (rc < 0)
            return rc;
        if (tio_fn) {
            /* Before the spawn: the child's first read or write already
             * sees the modes its front end wants. */
            struct termios t;
            if (tcgetattr(r->slave, &t) < 0)
                return -errno;
            tio_fn(&t, tio_data);
            if (tcsetattr(r->slave, TCSANOW, &t) < 0)
                return -errno;
        }
        *child_in = *child_out = r->slave;
        if (o->inherit_stdin)
            *child_in = STDIN_FILENO;
        return 0;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    r->out_fd = p[0];
    *child_out = p[1];
    *child_in = -1;
    if (o->keep_stdin) {
        int q[2];
        if (pipe2(q, O_CLOEXEC) < 0) {
            int e = -errno;
            close(p[1]);
            return e;
        }
        r->in_fd = q[1];
        *child_in = q[0];
    }
    return 0;
}

static int spawn_run(rein_sup_t *s, const rein_run_opts_t *o,
                     sup_tio_fn tio_fn, void *tio_data,
                     const sup_spawn_extra_t *x, int64_t *id,
                     spawn_step_t *stepp);

int rein_sup_spawn(rein_sup_t *s, const rein_run_opts_t *o, int64_t *id)
{
    if (id)
        *id = 0; /* no run: never an id a caller could act on */
    return spawn_run(s, o, NULL, NULL, NULL, id, NULL);
}

int sup_spawn_tio(rein_sup_t *s, const rein_run_opts_t *o, sup_tio_fn tio_fn,
                  void *tio_data, int64_t *id)
{
    return spawn_run(s, o, tio_fn, tio_data, NULL, id, NULL);
}

int sup_spawn_ex(rein_sup_t *s, const rein_run_opts_t *o,
                 const sup_spawn_extra_t *x, int64_t *id, spawn_step_t *step)
{
    return spawn_run(s, o, NULL, NULL, x, id, step);
}

static int spawn_run(rein_sup_t *s, const rein_run_opts_t *o,
                     sup_tio_fn tio_fn, void *tio_data,
                     const sup_spawn_extra_t *x, int64_t *id,
                     spawn_step_t *stepp)
{
    int rc, child_in = -1, child_out = -1;
    env_t env = {NULL, 0};
    spawn_step_t step = SPAWN_STEP_NONE;

    if (stepp)
        *stepp = SPAWN_STEP_NONE;

    if (!s || !o || !o->argv || !o->argv[0] || !id)
        return -EINVAL;
    struct run *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->sup = s;
    r->out_fd = r->slave = r->in_fd = r->pidfd = -1;
    r->state = REIN_RUN_STARTING;
    r->tty = o->tty;
    r->on_output = o->on_output;
    r->on_exit = o->on_exit;
    r->data = o->data;
    r->grace_ms = o->grace_ms < 0 ? REIN_SUP_GRACE_MS : o->grace_ms;
    r->no_output_ms = o->no_output_timeout_ms;
    r->exit_code = -1;
    r->known_sift_at = SUP_KNOWN_SIFT_MIN;
    if (x && x->exit_drain_max_ms) {
        r->xdrain_max_ms = x->exit_drain_max_ms;
        r->xdrain_idle_ms = x->exit_drain_idle_ms ? x->exit_drain_idle_ms
                                                  : x->exit_drain_max_ms;
    }
    if (x)
        r->on_leader_exit = x->on_leader_exit;

    /* The registry row first: a run that cannot be recorded is refused. */
    run_record_t *rec = &r->rec;
    rec->exit_code = -1;
    memcpy(rec->owner, s->owner, sizeof rec->owner);
    memcpy(rec->boot_id, s->boot_id, sizeof rec->boot_id);
    snprintf(rec->containment, sizeof rec->containment, "%s",
             contain_level_name(contain_level(s->contain)));
    rec->tty = o->tty;
    rec->state = REIN_RUN_STARTING;
    rec->created_ms = loop_wall_ms();
    rec->command = join_argv(o->argv);
    rec->env_names = env_names(o->env);
    char cwd[PATH_MAX];
    rec->cwd = strdup(o->cwd ? o->cwd : (getcwd(cwd, sizeof cwd) ? cwd : "?"));
    if (!rec->command || !rec->cwd) {
        rc = -ENOMEM;
        goto fail;
    }
    if (s->reg) {
        rc = registry_run_insert(s->reg, rec);
        if (rc < 0) {
            rc = REIN_EREGISTRY;
            goto fail;
        }
        r->in_registry = true;
    } else {
        rec->id = s->next_ephemeral_id++;
    }
    r->id = rec->id;

    if ((rc = contain_run_new(s->contain, r->id, o->pids_max, &r->cr)) < 0)
        goto spawn_failed;
    if (contain_run_cgroup(r->cr))
        rec->cgroup = strdup(contain_run_cgroup(r->cr));
    if (contain_run_pids_cgroup(r->cr))
        rec->pids_cgroup = strdup(contain_run_pids_cgroup(r->cr));
    if (s->logs_dir) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%lld.log", s->logs_dir,
                 (long long)r->id);
        /* Write-through: each chunk is in the file before anyone is
         * shown it, so rein's own SIGKILL loses no byte of the log. */
        if ((rc = spool_open(path, SPOOL_OPEN_WRITE_THROUGH, &r->log)) < 0)
            goto spawn_failed;
        rec->log_path = strdup(path);
        char note[PATH_MAX + 16];
        snprintf(note, sizeof note, "%s" SPOOL_NOTE_SUFFIX, path);
        spool_set_cap(r->log, SUP_LOG_CAP, SUP_LOG_HEAD, note);
    }
    if ((rc = open_io(r, o, tio_fn, tio_data, &child_in, &child_out)) < 0)
        goto spawn_failed;
    if ((rc = env_init(&env, x ? x->envp : NULL)) < 0 ||
        (rc = env_put_all(&env, o->env)) < 0)
        goto spawn_failed;
    if (o->tty && (rc = env_default(&env, "TERM", "xterm-256color")) < 0)
        goto spawn_failed;

    spawn_opts_t so;
    spawn_opts_init(&so);
    so.file = o->argv[0];
    so.argv = o->argv;
    so.envp = (const char *const *)env.v;
    so.cwd = o->cwd;
    so.fd_in = child_in;
    so.fd_out = so.fd_err = child_out;
    so.ctty_fd = o->tty ? r->slave : -1;
    so.group = SPAWN_SESSION;
    so.want_pidfd = loop_uses_pidfd(s->loop);
    int join[CONTAIN_MAX_JOIN_FDS];
    contain_run_spawn_opts(r->cr, &so, join);
    if (x) {
        so.extra_fds = x->extra_fds;
        so.n_extra_fds = x->n_extra_fds;
    }
    rc = spawn_start(&so, &r->pid, &r->pidfd, &step);
    if (!o->tty) {
        if (child_out >= 0)
            close(child_out);
        if (child_in >= 0)
            close(child_in);
    }
    if (rc < 0)
        goto spawn_failed;

    /* Our own child, not yet reaped: only a lack of fds or memory fails
     * this, and without its start time nothing could verify it later
     * (rein kill, reconcile), so it is not run at all. */
    if ((rc = procfs_start_time(r->pid, &r->start_time)) < 0)
        goto kill_child;
    rec->pid = r->pid;
    rec->start_time = r->start_time;
    rec->pgid = rec->sid = r->pid;
    rec->started_ms = loop_wall_ms();
    remember(r, r->pid, r->start_time);

    /* `running` only once the registry has it. */
    if (runstate_step(&r->state, RUN_EV_SPAWNED) != RUN_ACT_START) {
        rc = REIN_EINTERNAL;
        goto kill_child;
    }
    if (s->reg) {
        /* One transaction for the row and its counter: every commit is a
         * WAL append and an fsync-free but real cost on the spawn path. */
        rec->state = REIN_RUN_RUNNING;
        rec->updated_ms = loop_wall_ms();
        int brc = registry_begin(s->reg);
        if (brc == 0) {
            registry_run_update(s->reg, rec);
            registry_counter_add(s->reg, "run_spawn_total", 1);
            brc = registry_commit(s->reg);
        }
        if (brc < 0) {
            rc = REIN_EREGISTRY;
            goto kill_child;
        }
    }
    fcntl(r->out_fd, F_SETFL, fcntl(r->out_fd, F_GETFL) | O_NONBLOCK);
    if (r->in_fd >= 0)
        fcntl(r->in_fd, F_SETFL, fcntl(r->in_fd, F_GETFL) | O_NONBLOCK);
    r->last_output_mono = r->last_scan_mono = loop_clock_ms();
    if ((rc = loop_io_add(s->loop, r->out_fd, LOOP_READ, on_io, r)) < 0 ||
        (rc = loop_child_add(s->loop, r->pid, r->pidfd, on_child, r)) < 0)
        goto kill_child;
    if (o->timeout_ms)
        loop_timer_add(s->loop, o->timeout_ms, on_overall, r, &r->t_overall);
    if (o->no_output_timeout_ms)
        loop_timer_add(s->loop, o->no_output_timeout_ms, on_noout, r,
                       &r->t_noout);
    if (!s->reg)
        counter(s, "run_spawn_total");
    event(s, EVENTS_SPAWN, r->id,
          json_pack("{s:i,s:s,s:s,s:b,s:s?}", "pid", (int)r->pid, "command",
                    rec->command, "containment", rec->containment, "tty",
                    o->tty, "cgroup", rec->cgroup));
    env_free(&env);
    r->next = s->runs;
    s->runs = r;
    arm_scan_tick(s);
    *id = r->id;
    return 0;

kill_child:
    /* Spawned, but it cannot be owned properly: end it at once. */
    ptree_signal_group(r->pid, SIGKILL);
    if (r->cr)
        contain_run_kill(r->cr);
    spawn_reap(r->pid, r->pidfd, NULL);
    r->reaped = true;
    goto fail_recorded;
spawn_failed:
    runstate_step(&r->state, RUN_EV_SPAWN_FAILED);
fail_recorded:
    r->state = REIN_RUN_EXITED;
    r->reason = REIN_REASON_SPAWN_ERROR;
    rec->ended_ms = loop_wall_ms();
    record(r);
    counter(s, "run_exit_total{reason=\"spawn-error\"}");
    event(s, EVENTS_EXIT, r->id,
          json_pack("{s:s,s:s,s:s}", "reason", "spawn-error", "error",
                    rein_strerror(rc), "step", spawn_step_name(step)));
fail:
    if (stepp)
        *stepp = step;
    env_free(&env);
    run_free(r);
    return rc;
}

/* ------------------------------------------------------------ controls */

static void flush_stdin(struct run *r)
{
    int fd = r->tty ? r->out_fd : r->in_fd;
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    /* A closed reader must come back as EPIPE, never kill the host. */
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    while (r->pending_in.len) {
        ssize_t n = write(fd, r->pending_in.p, r->pending_in.len);
        if (n > 0) {
            buf_consume(&r->pending_in, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EPIPE) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_set, NULL, &zero);
            buf_reset(&r->pending_in);
        }
        break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    unsigned want = LOOP_READ | (r->pending_in.len ? LOOP_WRITE : 0);
    if (r->tty) {
        loop_io_mod(r->sup->loop, fd, want);
    } else if (!r->pending_in.len && r->close_in) {
        /* The EOF asked for while input waited: every byte is out. */
        loop_io_del(r->sup->loop, fd);
        close(fd);
        r->in_fd = -1;
        r->close_in = false;
    } else if (r->pending_in.len) {
        if (loop_io_add(r->sup->loop, fd, LOOP_WRITE, on_io, r) == -EEXIST)
            loop_io_mod(r->sup->loop, fd, LOOP_WRITE);
    } else {
        loop_io_del(r->sup->loop, fd);
    }
}

int rein_sup_write(rein_sup_t *s, int64_t id, const void *data, size_t len)
{
    if (!s || (!data && len))
        return -EINVAL;
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    if (r->state != REIN_RUN_RUNNING)
        return REIN_ENOTRUNNING;
    int fd = r->tty ? r->out_fd : r->in_fd;
    if (!r->tty && r->in_eof)
        return REIN_EINPUT_CLOSED; /* closed, or closing once all is out */
    if (fd < 0)
        return -EPIPE;
    if (!r->pending_in.len) {
        /* Write what fits now; the rest waits for room on the loop. */
        sigset_t pipe_set, old;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        ssize_t n;
        do
            n = write(fd, data, len);
        while (n < 0 && errno == EINTR);
        int e = errno;
        if (n < 0 && e == EPIPE) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_set, NULL, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (n < 0 && e != EAGAIN)
            return -e;
        size_t done = n > 0 ? (size_t)n : 0;
        data = (const char *)data + done;
        len -= done;
    }
    if (len) {
        if (buf_append(&r->pending_in, data, len) < 0)
            return -ENOMEM;
        flush_stdin(r);
    }
    return 0;
}

int rein_sup_close_stdin(rein_sup_t *s, int64_t id)
{
    if (!s)
        return -EINVAL;
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    if (r->tty) {
        /* A terminal has no EOF of its own: send the EOF character. */
        struct termios t;
        char eof = 4;
        if (tcgetattr(r->out_fd, &t) == 0 && t.c_cc[VEOF])
            eof = (char)t.c_cc[VEOF];
        return rein_sup_write(s, id, &eof, 1);
    }
    if (r->in_fd < 0)
        return 0;
    r->in_eof = true;
    if (r->pending_in.len) {
        /* Input still waits for room: the EOF comes after it, when
         * flush_stdin has written the last byte (closing now lost it). */
        r->close_in = true;
        return 0;
    }
    loop_io_del(s->loop, r->in_fd);
    close(r->in_fd);
    r->in_fd = -1;
    return 0;
}

int rein_sup_resize(rein_sup_t *s, int64_t id, unsigned cols, unsigned rows)
{
    if (!s)
        return -EINVAL;
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    if (!r->tty || r->out_fd < 0)
        return -ENOTTY;
    return ptyio_resize(r->out_fd, ptyio_clamp_cols(cols),
                        ptyio_clamp_rows(rows));
}

/* Run id, if it is running and its leader not reaped (so that its
 * session's id is still its own), in *out. */
static int signal_target(rein_sup_t *s, int64_t id, struct run **out)
{
    if (!s)
        return -EINVAL;
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    if (r->state != REIN_RUN_RUNNING || r->reaped)
        return REIN_ENOTRUNNING;
    *out = r;
    return 0;
}

/* Whether process group pg is one of run r's: the leader's own, or one
 * in the run's session (the session's id is the run leader's pid, ours
 * while the leader is not reaped).  The group's own leader says so at
 * once; a group whose leader has exited (the later stages of a pipeline
 * whose first has ended: `cat list | xargs slow`) is asked of any member,
 * or Ctrl-C and Ctrl-Z would miss the job in the terminal's foreground. */
static bool run_group(const struct run *r, pid_t pg)
{
    procfs_stat_t st;
    if (pg == r->pid)
        return true;
    if (pg <= 1)
        return false;
    if (procfs_read_stat(pg, &st) == 0 && st.pgrp == pg &&
        st.state != 'Z' && st.state != 'X')
        return st.session == r->pid;
    return ptree_group_session(pg) == r->pid;
}

pid_t sup_run_fg_group(rein_sup_t *s, int64_t id)
{
    struct run *r;
    int rc = signal_target(s, id, &r);
    if (rc < 0)
        return rc;
    /* The terminal's foreground group, if it is one of the run's. */
    pid_t fg = r->tty ? tcgetpgrp(r->out_fd) : r->pid;
    return run_group(r, fg) ? fg : r->pid;
}

int rein_sup_signal(rein_sup_t *s, int64_t id, int signo)
{
    pid_t pg = sup_run_fg_group(s, id);
    return pg < 0 ? pg : ptree_signal_group(pg, signo);
}

int sup_run_signal_group(rein_sup_t *s, int64_t id, pid_t pg, int signo)
{
    struct run *r;
    int rc = signal_target(s, id, &r);
    if (rc < 0)
        return rc;
    return run_group(r, pg) ? ptree_signal_group(pg, signo) : -ESRCH;
}

int sup_run_cancel(rein_sup_t *s, int64_t id, rein_reason_t why, int signo,
                   int grace_ms)
{
    if (!s || (why != REIN_REASON_MANUAL_CANCEL &&
               why != REIN_REASON_NO_INPUT && why != REIN_REASON_SHUTDOWN))
        return -EINVAL;
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    if (signo < 0 || signo >= NSIG)
        return -EINVAL;
    int grace = grace_ms < 0 ? r->grace_ms : grace_ms;
    /* A run already in its grace is not signalled again (a second TERM
     * cuts a shell's EXIT trap short); a cancel may only hasten its KILL:
     * at once for SIGKILL, else when its own grace ends, if sooner. */
    if (r->state == REIN_RUN_EXITING)
        hasten_grace(r, signo == SIGKILL ? 0 : grace);
    else
        cancel_run(r, why, signo ? signo : SIGTERM, grace);
    return 0;
}

int rein_sup_cancel(rein_sup_t *s, int64_t id, int signo, int grace_ms)
{
    return sup_run_cancel(s, id, REIN_REASON_MANUAL_CANCEL, signo, grace_ms);
}

int rein_sup_info(rein_sup_t *s, int64_t id, rein_run_info_t *out)
{
    if (!s || !out)
        return -EINVAL;
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    memset(out, 0, sizeof *out);
    out->id = r->id;
    out->pid = r->pid;
    out->pgid = out->sid = r->pid;
    out->state = r->state;
    out->reason = r->reason;
    out->exit_code = r->exited ? r->exit_code : -1;
    out->signal = r->exit_signal;
    out->tty = r->tty;
    out->containment = r->rec.containment;
    out->cgroup = r->rec.cgroup;
    out->log_path = r->rec.log_path;
    out->bytes = r->log ? spool_bytes(r->log) : r->rec.bytes;
    out->log_lost = r->log ? spool_dropped(r->log) : r->log_lost;
    out->log_error = r->log_err;
    out->started_ms = r->rec.started_ms;
    out->ended_ms = r->rec.ended_ms;
    out->last_output_ms = r->rec.last_output_ms;
    out->cleanup_incomplete = r->n_survivors > 0;
    out->n_survivors = r->n_survivors;
    out->survivors = r->survivors;
    out->leftovers_ended = r->leftovers_ended;
    out->leftovers_hung_up = r->hung_up;
    return 0;
}

int rein_sup_forget(rein_sup_t *s, int64_t id)
{
    if (!s)
        return -EINVAL;
    for (struct run **pp = &s->runs; *pp; pp = &(*pp)->next) {
        struct run *r = *pp;
        if (r->id != id)
            continue;
        if (r->state != REIN_RUN_EXITED)
            return -EBUSY;
        *pp = r->next;
        run_free(r);
        return 0;
    }
    return REIN_ENORUN;
}

/* ------------------------------------------------------ adopted orphans */

/* Which run an adopted orphan belongs to: one that remembers it, shares
 * its session, or holds it in its cgroup. */
static struct run *attribute(rein_sup_t *s, pid_t pid, const procfs_stat_t *st)
{
    char cg[PATH_MAX];
    bool have_cg = contain_cgroup_of(pid, cg, sizeof cg) == 0;
    for (struct run *r = s->runs; r; r = r->next) {
        if (r->state == REIN_RUN_EXITED)
            continue;
        for (size_t i = 0; i < r->known.n; i++)
            if (r->known.v[i].pid == pid &&
                r->known.v[i].start_time == st->start_time)
                return r;
        if (st->session == r->pid)
            return r;
        if (have_cg && r->rec.cgroup && !strcmp(cg, r->rec.cgroup))
            return r;
    }
    /* An orphan comes to a subreaper only from its own descendants: with
     * one live run, it is that run's (a fast double fork, seen by no scan
     * and in no cgroup).  With several, it is a stray: recorded under the
     * owner (adopt_stray), ended at close, or by reconcile after a crash. */
    struct run *only = NULL;
    for (struct run *r = s->runs; r; r = r->next)
        if (r->state != REIN_RUN_EXITED) {
            if (only)
                return NULL;
            only = r;
        }
    return only;
}

static bool is_leader(rein_sup_t *s, pid_t pid)
{
    for (struct run *r = s->runs; r; r = r->next)
        if (r->pid == pid && !r->reaped)
            return true;
    return false;
}

static struct stray *find_stray(rein_sup_t *s, pid_t pid, uint64_t start)
{
    for (size_t i = 0; i < s->n_strays; i++)
        if (s->strays[i].pid == pid && s->strays[i].start_time == start)
            return &s->strays[i];
    return NULL;
}

/* The registry's identity of stray x, as this owner records it. */
static stray_record_t stray_row(const rein_sup_t *s, const struct stray *x)
{
    stray_record_t row;
    memset(&row, 0, sizeof row);
    memcpy(row.owner, s->owner, sizeof row.owner);
    memcpy(row.boot_id, s->boot_id, sizeof row.boot_id);
    row.pid = x->pid;
    row.start_time = x->start_time;
    return row;
}

/* Writes the stray's row if it is not written yet.  Best-effort, as for
 * a run's row: a failure is an event, and the heartbeat tries again, so
 * that a stray is on record before a crash if the registry allows it at
 * all. */
static void stray_record(rein_sup_t *s, struct stray *x)
{
    if (!s->reg || x->recorded)
        return;
    stray_record_t row = stray_row(s, x);
    int rc = registry_stray_add(s->reg, &row);
    if (rc == 0)
        x->recorded = true;
    else
        event(s, EVENTS_REGISTRY_ERROR, 0,
              json_pack("{s:s,s:i}", "error", rein_strerror(rc), "stray",
                        (int)x->pid));
}

/* Keeps (pid, start) as a stray and records it before anything else. */
static void adopt_stray(rein_sup_t *s, pid_t pid, uint64_t start)
{
    struct stray *v = realloc(s->strays, (s->n_strays + 1) * sizeof *v);
    if (!v)
        return;
    s->strays = v;
    struct stray *x = &s->strays[s->n_strays++];
    *x = (struct stray){pid, start, false};
    stray_record(s, x);
    event(s, EVENTS_STRAY, 0,
          json_pack("{s:i,s:I}", "pid", (int)pid, "start_time",
                    (json_int_t)start));
}

/* Forgets stray i (it is gone): from memory, and its row.  A row that
 * cannot be deleted now is found by a later reconcile, which sees the
 * process gone and deletes it then. */
static void drop_stray(rein_sup_t *s, size_t i)
{
    if (s->reg) {
        stray_record_t row = stray_row(s, &s->strays[i]);
        registry_stray_delete(s->reg, &row);
    }
    s->strays[i] = s->strays[--s->n_strays];
}

/* After SIGCHLD: children of ours that are no run's leader are orphans a
 * run's process left behind (we are a subreaper).  Claim them for their
 * run (an escape if they left its session), keep the rest as strays, reap
 * the dead ones. */
static void on_orphans(loop_t *l, void *data)
{
    (void)l;
    rein_sup_t *s = data;
    pid_t *kids;
    size_t n;
    if (procfs_children(getpid(), &kids, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        pid_t p = kids[i];
        procfs_stat_t st;
        /* Runs live in sessions of their own: a child in our session is
         * the host's own business, never touched here. */
        if (is_leader(s, p) || procfs_read_stat(p, &st) < 0 ||
            st.session == getsid(0))
            continue;
        struct stray *x = find_stray(s, p, st.start_time);
        if (st.state == 'Z') {
            reap_zombie(s, &st);
            continue;
        }
        /* A stray stays one: no run can have come to remember it since,
         * it cannot rejoin a session, and "the only live run" (attribute's
         * last rule) says nothing of an orphan adopted while others
         * lived. */
        if (x)
            continue;
        struct run *r = attribute(s, p, &st);
        if (r)
            consider(r, p, st.start_time);
        else
            adopt_stray(s, p, st.start_time);
    }
    free(kids);
}

/* Captures every stray that is still the process adopted, with what it
 * started, each member pinned. */
static void capture_strays(rein_sup_t *s, ptree_t *t)
{
    t->v = NULL;
    t->n = 0;
    for (size_t i = 0; i < s->n_strays; i++) {
        ptree_t one;
        if (ptree_capture_pinned(s->strays[i].pid, &one) < 0)
            continue;
        /* The capture's own read must still be the stray adopted. */
        if (one.n && one.v[0].start_time == s->strays[i].start_time)
            ptree_merge(t, &one);
        ptree_free(&one);
    }
}

/* Reaps the members of t that are our zombie children (a stray, or a
 * stray's child re-parented to us when the stray died first): the pid of
 * an unreaped zombie cannot be reused, so pid + start time is still it. */
static void reap_members(const ptree_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        procfs_stat_t st;
        siginfo_t info;
        if (procfs_read_stat(t->v[i].pid, &st) == 0 && st.state == 'Z' &&
            st.ppid == getpid() && st.start_time == t->v[i].start_time)
            waitid(P_PID, (id_t)t->v[i].pid, &info, WEXITED | WNOHANG);
    }
}

/* rein_sup_close, once every run is over: KILL every stray and what it
 * started (each verified by its start time, then pinned), reap them, and
 * delete the rows of those gone.  No orphan is adopted here: a child of
 * the host's in a session of its own that no scan took for an orphan
 * stays the host's.  One that outlives REIN_SUP_KILL_BOUND_MS keeps its
 * row, for the reconcile that follows our death. */
static void end_strays(rein_sup_t *s)
{
    if (!s->n_strays)
        return;
    ptree_t t;
    capture_strays(s, &t);
    int killed = ptree_signal(&t, SIGKILL);
    uint64_t t0 = loop_clock_ms();
    while (ptree_count_alive(&t) &&
           loop_clock_ms() - t0 < (uint64_t)REIN_SUP_KILL_BOUND_MS)
        poll(NULL, 0, SUP_CHECK_MS);
    reap_members(&t);
    size_t survivors = 0;
    for (size_t i = s->n_strays; i-- > 0;) {
        if (procfs_alive(s->strays[i].pid, s->strays[i].start_time))
            survivors++;
        else
            drop_stray(s, i); /* gone (reaped, or not that process) */
    }
    event(s, EVENTS_CLEANUP, 0,
          json_pack("{s:b,s:i,s:i}", "incomplete", survivors > 0,
                    "strays_killed", killed, "survivors", (int)survivors));
    ptree_free(&t);
}

/* --------------------------------------------------------- owner, lease */

/* Writes the rows of members whose first write failed; those written, or
 * gone (nothing left to end), leave the list.  After a failure the rest
 * wait for the next heartbeat: each failure may have cost the registry's
 * busy timeout, on the loop. */
static void save_descendants(struct run *r)
{
    size_t k = 0;
    bool failed = false;
    for (size_t i = 0; i < r->unsaved.n; i++) {
        ptree_member_t *m = &r->unsaved.v[i];
        if (ptree_member_alive(m) &&
            (failed || registry_descendant_add(r->sup->reg, r->id, m->pid,
                                               m->start_time) < 0)) {
            failed = true;
            r->unsaved.v[k++] = *m;
            continue;
        }
        if (m->pidfd >= 0)
            close(m->pidfd);
    }
    r->unsaved.n = k;
}

static void on_heartbeat(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    rein_sup_t *s = data;
    s->t_heartbeat = 0;
    if (s->reg) {
        registry_owner_renew(s->reg, s->owner, loop_wall_ms() + REIN_SUP_LEASE_MS);
        for (struct run *r = s->runs; r; r = r->next) {
            if (r->state == REIN_RUN_RUNNING)
                record(r); /* bytes and last output, at heartbeat pace */
            save_descendants(r); /* failed writes, again */
        }
        for (size_t i = 0; i < s->n_strays; i++)
            stray_record(s, &s->strays[i]); /* a failed write, again */
    }
    loop_timer_add(l, REIN_SUP_HEARTBEAT_MS, on_heartbeat, s,
                   &s->t_heartbeat);
}

static int make_owner_id(char out[REGISTRY_OWNER_ID_LEN])
{
    unsigned char raw[(REGISTRY_OWNER_ID_LEN - 1) / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return -errno;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* Creates and locks this owner's lock file; the lock lives as long as the
 * process (or until close), which is how others know we are alive. */
static int take_lock(rein_sup_t *s)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int n = snprintf(dir, sizeof dir, "%s/owners", s->state_dir);
    if (n < 0 || (size_t)n >= sizeof dir)
        return -ENAMETOOLONG;
    int rc = spool_mkdir_private(dir);
    if (rc < 0)
        return rc;
    n = snprintf(path, sizeof path, "%s/%s.lock", dir, s->owner);
    if (n < 0 || (size_t)n >= sizeof path)
        return -ENAMETOOLONG;
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s->lock_fd < 0)
        return -errno;
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0)
        return -errno;
    s->lock_path = strdup(path);
    return s->lock_path ? 0 : -ENOMEM;
}

/* ------------------------------------------------------------ reconcile */

/* What reconcile is about to end: verified processes and the cgroups of
 * dead owners' runs. */
struct doomed {
    ptree_t tree;
    contain_run_t **cgs;
    size_t ncg;
};

static bool doomed_alive(struct doomed *d)
{
    if (ptree_count_alive(&d->tree))
        return true;
    for (size_t i = 0; i < d->ncg; i++)
        if (contain_run_populated(d->cgs[i]))
            return true;
    return false;
}

/* Waits (bounded) for everything doomed to be gone.  Polled: these are
 * not our children, and a pidfd per member would be no simpler. */
static void doomed_wait(struct doomed *d, uint64_t limit_ms)
{
    uint64_t t0 = loop_clock_ms();
    while (doomed_alive(d) && loop_clock_ms() - t0 < limit_ms)
        poll(NULL, 0, SUP_CHECK_MS);
}

static void doomed_end(struct doomed *d)
{
    for (int sig = 0; sig < 3; sig++) {
        int signo = sig == 0 ? SIGTERM : sig == 1 ? SIGCONT : SIGKILL;
        if (signo == SIGKILL)
            doomed_wait(d, SUP_RECONCILE_GRACE_MS);
        ptree_pass_t p; /* each process once: see ptree_pass_t */
        ptree_pass_begin(&p, signo, 0);
        ptree_pass_tree(&p, &d->tree);
        for (size_t i = 0; i < d->ncg; i++) {
            if (signo == SIGKILL)
                contain_run_kill(d->cgs[i]);
            else
                contain_run_signal(d->cgs[i], &p);
        }
        ptree_pass_end(&p);
    }
    doomed_wait(d, REIN_SUP_KILL_BOUND_MS);
    for (size_t i = 0; i < d->ncg; i++)
        contain_run_free(d->cgs[i]); /* removes the emptied leaves */
    free(d->cgs);
    ptree_free(&d->tree);
}

/* Whether member m is the run's leader or a descendant it recorded. */
static bool doom_known(const run_record_t *rec, const ptree_t *desc,
                       const ptree_member_t *m)
{
    if (m->pid == rec->pid && m->start_time == rec->start_time)
        return true;
    for (size_t i = 0; i < desc->n; i++)
        if (desc->v[i].pid == m->pid && desc->v[i].start_time == m->start_time)
            return true;
    return false;
}

/*
 * Adds to d the live members of session rec->sid started no earlier than
 * the run (pinned); true when there were any.
 *   A session's id is its leader's pid, and the kernel keeps that pid
 * number allocated while any process is in the session.  So a session of
 * that id is the run's own only while one of its members is known to be
 * the run's (the leader, or a descendant recorded with its start time):
 * once every member of the run's session is gone, the pid may go to a new
 * process that calls setsid and forks, and the session of the same id is
 * then someone else's, all of it started after the run.  The members are
 * taken only when such an anchor was among them and is still alive after
 * the scan, so the number stayed the run's session throughout.
 */
static bool doom_session(const run_record_t *rec, const ptree_t *desc,
                         struct doomed *d)
{
    pid_t *all;
    size_t n;
    ptree_t found = {NULL, 0}, anchor = {NULL, 0};
    if (procfs_list_all(&all, &n) < 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        procfs_stat_t st;
        ptree_t t;
        if (procfs_read_stat(all[i], &st) < 0 || st.session != rec->sid ||
            st.state == 'Z' || st.start_time < rec->start_time ||
            ptree_capture_pinned(all[i], &t) < 0)
            continue;
        /* The capture's own read must still be that member. */
        if (t.n && t.v[0].start_time == st.start_time) {
            ptree_merge(&found, &t);
            if (!anchor.n && doom_known(rec, desc, &t.v[0]))
                ptree_merge(&anchor, &(ptree_t){t.v, 1});
        }
        ptree_free(&t);
    }
    free(all);
    bool ours = anchor.n && ptree_member_alive(&anchor.v[0]);
    if (ours)
        ptree_merge(&d->tree, &found);
    ptree_free(&anchor);
    ptree_free(&found);
    return ours;
}

/* Collects the verified remains of a dead owner's run into d.  True when
 * anything of it matched (and so it was ours to end). */
static bool doom_orphan_run(rein_sup_t *s, const run_record_t *rec,
                            struct doomed *d)
{
    if (strcmp(rec->boot_id, s->boot_id) != 0)
        return false;
    /* A `starting` row has no pid (its owner died before the commit after
     * the spawn): only its leaves, named by the steal, can hold its
     * child. */
    bool has_pid = rec->pid > 1;
    uint64_t st;
    bool leader = has_pid && procfs_start_time(rec->pid, &st) == 0 &&
                  st == rec->start_time;
    ptree_t desc = {NULL, 0};
    if (s->reg)
        registry_descendants(s->reg, rec->id, &desc);
    bool any = leader || ptree_count_alive(&desc) > 0;
    contain_run_t *cr;
    if (contain_run_attach(s->contain, rec->id, rec->cgroup, rec->pids_cgroup,
                           &cr) == 0) {
        /* The run's own cgroup: everything inside it is the run's. */
        contain_run_t **v = realloc(d->cgs, (d->ncg + 1) * sizeof *v);
        if (v) {
            d->cgs = v;
            d->cgs[d->ncg++] = cr;
            any = any || contain_run_populated(cr);
        } else {
            contain_run_free(cr);
        }
    }
    if (leader) {
        ptree_t t;
        /* The capture reads the root again: it must still be the leader. */
        if (ptree_capture_pinned(rec->pid, &t) == 0 && t.n &&
            t.v[0].start_time == rec->start_time)
            ptree_merge(&d->tree, &t);
        ptree_free(&t);
    }
    /* The members of the run's own session that are no longer below its
     * leader (re-parented when their parent died), as the live scan finds
     * them: see doom_session for when a session of that id is the run's. */
    if (has_pid && rec->sid == rec->pid)
        any = doom_session(rec, &desc, d) || any;
    ptree_merge(&d->tree, &desc);
    ptree_free(&desc);
    return any;
}

/* Adds to d the tree of a dead owner's stray if it is still the process
 * recorded: the same boot, and its pid pinned with the start time
 * recorded.  True when it was. */
static bool doom_stray(rein_sup_t *s, const stray_record_t *x,
                       struct doomed *d)
{
    if (strcmp(x->boot_id, s->boot_id) != 0 || x->pid <= 1)
        return false;
    ptree_t t;
    if (ptree_capture_pinned(x->pid, &t) < 0)
        return false;
    bool ours = t.n && t.v[0].start_time == x->start_time;
    if (ours)
        ptree_merge(&d->tree, &t);
    ptree_free(&t);
    return ours;
}

/* Reads the strays now ours in the registry into *v; those not in memory
 * are a dead owner's, taken over by the steal: (*theirs)[i] says which,
 * (*doomed_i)[i] which of them are still the process recorded (their trees
 * added to d).  On failure nothing is allocated (*v NULL, *n 0). */
static int doom_strays(rein_sup_t *s, struct doomed *d, stray_record_t **v,
                       size_t *n, bool **theirs, bool **doomed_i)
{
    *theirs = *doomed_i = NULL;
    int rc = registry_strays(s->reg, s->owner, v, n);
    if (rc < 0)
        return rc; /* registry_strays leaves *v NULL, *n 0 */
    *theirs = calloc(*n ? *n : 1, sizeof **theirs);
    *doomed_i = calloc(*n ? *n : 1, sizeof **doomed_i);
    if (!*theirs || !*doomed_i) {
        free(*theirs);
        free(*doomed_i);
        free(*v);
        *v = NULL;
        *n = 0;
        *theirs = *doomed_i = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < *n; i++) {
        const stray_record_t *x = &(*v)[i];
        /* Our own strays (this boot, adopted by this supervisor) are
         * ended at our close, not here. */
        if (!strcmp(x->boot_id, s->boot_id) &&
            find_stray(s, x->pid, x->start_time))
            continue;
        (*theirs)[i] = true;
        (*doomed_i)[i] = doom_stray(s, x, d);
    }
    return 0;
}

/* After doomed_end: forgets the dead owners' strays that are gone and
 * counts them.  One that outlived the kill keeps its row (and is not
 * counted): the next reconcile tries again. */
static void settle_strays(rein_sup_t *s, stray_record_t *v, size_t n,
                          const bool *theirs, const bool *doomed_i,
                          rein_reconcile_stats_t *st)
{
    for (size_t i = 0; i < n; i++) {
        if (!theirs[i])
            continue;
        const char *decision;
        if (doomed_i[i] && procfs_alive(v[i].pid, v[i].start_time)) {
            decision = "stray-survived";
        } else {
            registry_stray_delete(s->reg, &v[i]);
            if (doomed_i[i]) {
                decision = "stray-reaped";
                st->strays_reaped++;
                counter(s, "run_reconcile_strays_total");
            } else {
                decision = "stray-lost";
                st->strays_lost++;
            }
        }
        event(s, EVENTS_RECONCILE, 0,
              json_pack("{s:s,s:i,s:I}", "decision", decision, "pid",
                        (int)v[i].pid, "start_time",
                        (json_int_t)v[i].start_time));
    }
}

/* A dead owner's run row holds its byte count and last output as of its
 * last heartbeat; the log holds every byte it read (written as read), so
 * the log's size and time are the truth about what came after. */
static void reconcile_log_facts(run_record_t *rec)
{
    struct stat st;
    if (!rec->log_path || stat(rec->log_path, &st) < 0 ||
        (uint64_t)st.st_size <= rec->bytes)
        return;
    rec->bytes = (uint64_t)st.st_size;
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000 +
                    st.st_mtim.tv_nsec / 1000000;
    /* The kernel stamps files from a clock that lags the wall clock by up
     * to a tick: output read just after the start may look earlier. */
    if (mtime < rec->started_ms)
        mtime = rec->started_ms;
    if (mtime > rec->last_output_ms)
        rec->last_output_ms = mtime;
}

int rein_sup_reconcile(rein_sup_t *s, rein_reconcile_stats_t *out)
{
    if (!s)
        return -EINVAL;
    rein_reconcile_stats_t st;
    memset(&st, 0, sizeof st);
    stray_record_t *strays = NULL;
    size_t n_strays = 0;
    bool *stray_theirs = NULL, *stray_doomed = NULL;
    owner_record_t *owners = NULL;
    size_t n_owners = 0;
    struct doomed doomed = {{NULL, 0}, NULL, 0};
    int rc;
    if (!s->reg)
        goto done;
    if ((rc = registry_owner_list(s->reg, &owners, &n_owners)) < 0)
        return rc;
    for (size_t i = 0; i < n_owners; i++) {
        owner_record_t *o = &owners[i];
        int lockfd;
        if (!strcmp(o->id, s->owner))
            continue;
        if (!owner_dead_take_lock(o, &lockfd)) {
            st.skipped_alive++;
            event(s, EVENTS_RECONCILE, 0,
                  json_pack("{s:s,s:s}", "owner", o->id, "decision",
                            "owner-alive"));
            continue;
        }
        st.owners_dead++;
        size_t moved = 0, moved_strays = 0;
        /* The steal is recorded before any signal is sent; the owner's
         * strays go with its runs, in the same transaction. */
        if (registry_steal(s->reg, o->id, s->owner, &moved, &moved_strays) ==
                0 &&
            (moved || moved_strays)) {
            st.runs_stolen += moved;
            event(s, EVENTS_LEASE_STEAL, 0,
                  json_pack("{s:s,s:s,s:i,s:i}", "from", o->id, "to",
                            s->owner, "runs", (int)moved, "strays",
                            (int)moved_strays));
        }
        /* Its runs and strays are ours now: nothing needs its row any
         * more, and a row kept for every rein that ever died would pile
         * up (one that still holds something keeps it). */
        registry_owner_forget(s->reg, o->id);
        if (lockfd >= 0) {
            unlink(o->lock_path);
            close(lockfd);
        }
    }

    /* Every non-exited run now ours but not in memory was a dead owner's. */
    run_record_t *runs = NULL;
    size_t n = 0;
    if ((rc = registry_run_list(s->reg, false, &runs, &n)) < 0)
        goto fail;
    bool *orphan = calloc(n ? n : 1, sizeof *orphan);
    if (!orphan) {
        run_record_list_free(runs, n);
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(runs[i].owner, s->owner) && !find_run(s, runs[i].id))
            orphan[i] = doom_orphan_run(s, &runs[i], &doomed);
    /* And every stray now ours but not in memory: a dead owner's.  Where
     * they cannot be read, the runs are still reconciled; the strays stay
     * on record, ours now, for the next reconcile. */
    if ((rc = doom_strays(s, &doomed, &strays, &n_strays, &stray_theirs,
                          &stray_doomed)) < 0)
        event(s, EVENTS_REGISTRY_ERROR, 0,
              json_pack("{s:s,s:s}", "error", rein_strerror(rc), "strays",
                        "not read"));
    /* One grace for all of them: TERM + CONT, wait, KILL what is left,
     * wait until it is gone. */
    doomed_end(&doomed);
    settle_strays(s, strays, n_strays, stray_theirs, stray_doomed, &st);
    for (size_t i = 0; i < n; i++) {
        run_record_t *rec = &runs[i];
        if (strcmp(rec->owner, s->owner) != 0 || find_run(s, rec->id))
            continue;
        /* A run that was already ending keeps the reason it was ending
         * for (the first reason wins): its leader's exit or signal, a
         * cancel, a timeout, an escape.  Reconcile only finished it. */
        bool ended = rec->state == REIN_RUN_EXITING &&
                     rec->reason != REIN_REASON_NONE;
        rec->state = REIN_RUN_EXITED;
        if (!ended)
            rec->reason = orphan[i] ? REIN_REASON_ORPHAN_REAPED
                                    : REIN_REASON_LOST;
        rec->ended_ms = rec->updated_ms = loop_wall_ms();
        reconcile_log_facts(rec);
        registry_run_update(s->reg, rec);
        if (orphan[i]) {
            st.orphans_reaped++;
            counter(s, "run_reconcile_orphans_total");
        } else {
            st.lost++;
        }
        /* By the reason recorded, which a run that was ending keeps: the
         * counter and `rein ps` tell one story.  The dead owner counted
         * no exit: it never finished the run. */
        char name[SUP_COUNTER_NAME_MAX];
        snprintf(name, sizeof name, "run_exit_total{reason=\"%s\"}",
                 rein_reason_name((rein_reason_t)rec->reason));
        counter(s, name);
        event(s, EVENTS_RECONCILE, rec->id,
              json_pack("{s:s,s:i}", "decision",
                        rein_reason_name((rein_reason_t)rec->reason), "pid",
                        (int)rec->pid));
    }
    free(orphan);
    run_record_list_free(runs, n);
    free(strays);
    free(stray_theirs);
    free(stray_doomed);
done:
    for (size_t i = 0; i < n_owners; i++)
        owner_record_clear(&owners[i]);
    free(owners);
    if (out)
        *out = st;
    return 0;
fail:
    for (size_t i = 0; i < n_owners; i++)
        owner_record_clear(&owners[i]);
    free(owners);
    doomed_end(&doomed);
    return rc;
}

/* ------------------------------------------------------- open and close */

/* The step rein_sup_open failed at, for the caller's errmsg. */
__attribute__((format(printf, 2, 3))) static void
sup_open_msg(const rein_sup_opts_t *o, const char *fmt, ...)
{
    if (!o->errmsg || !o->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->errmsg, o->errlen, fmt, ap);
    va_end(ap);
}

int rein_sup_open(const rein_sup_opts_t *o, rein_sup_t **out)
{
    rein_sup_opts_t dflt = {.state_dir = NULL};
    int rc;
    if (!out)
        return -EINVAL;
    if (!o)
        o = &dflt;
    if (o->errmsg && o->errlen)
        o->errmsg[0] = '\0';
    rein_sup_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->lock_fd = -1;
    s->next_ephemeral_id = SUP_EPHEMERAL_FIRST_ID;
    if (!(s->rbuf = malloc(SUP_READ_BUF))) {
        rc = -ENOMEM;
        goto fail;
    }
    /* The boot id is for what outlives this process: registry rows, and
     * the reconcile that reads them.  An ephemeral supervisor has neither,
     * and a one-shot rein_shell_exec opens one per call. */
    if ((rc = loop_new(&s->loop)) < 0 ||
        (!o->ephemeral && (rc = procfs_boot_id(s->boot_id)) < 0) ||
        (rc = make_owner_id(s->owner)) < 0)
        goto fail;
    if ((rc = contain_open(o->containment, &s->contain)) < 0) {
        rc = rc == -ENOTSUP ? REIN_ECONTAIN : rc;
        goto fail;
    }
    if (contain_level(s->contain) >= CONTAIN_SUBREAPER &&
        (rc = loop_orphan_watch(s->loop, on_orphans, s)) < 0)
        goto fail;
    if (!o->ephemeral) {
        char dir[PATH_MAX];
        if (o->state_dir)
            rc = registry_dir_absolute(o->state_dir, dir, sizeof dir);
        else
            rc = registry_state_dir(dir, sizeof dir);
        if (rc < 0)
            goto fail; /* the code says it all: the caller names the dir */
        if (!(s->state_dir = strdup(dir))) {
            rc = -ENOMEM;
            goto fail;
        }
        char logs[PATH_MAX];
        snprintf(logs, sizeof logs, "%s/logs", s->state_dir);
        if ((rc = spool_mkdir_private(logs)) < 0) {
            sup_open_msg(o, "logs dir %s: %s", logs, rein_strerror(rc));
            goto fail;
        }
        if (!(s->logs_dir = strdup(logs))) {
            rc = -ENOMEM;
            goto fail;
        }
        char rmsg[256] = "";
        if ((rc = registry_open_ex(s->state_dir, false, &s->reg, rmsg,
                                   sizeof rmsg)) < 0) {
            sup_open_msg(o, "%s", rmsg[0] ? rmsg : rein_strerror(rc));
            goto fail;
        }
        if ((rc = take_lock(s)) < 0) {
            sup_open_msg(o, "owner lock in %s/owners: %s", s->state_dir,
                         rein_strerror(rc));
            goto fail;
        }
        if ((rc = events_open(s->state_dir, s->owner, &s->ev)) < 0) {
            sup_open_msg(o, "event log %s/events.jsonl: %s", s->state_dir,
                         rein_strerror(rc));
            goto fail;
        }
        owner_record_t me;
        memset(&me, 0, sizeof me);
        memcpy(me.id, s->owner, sizeof me.id);
        me.pid = getpid();
        procfs_start_time(me.pid, &me.start_time);
        procfs_pid_ns(&me.pid_ns); /* stays 0 (unknown) on failure */
        /* Where our runs' leaves are made: a `starting` row a crash left
         * is found through these (registry_steal). */
        me.cgroup = (char *)contain_instance_cgroup(s->contain);
        me.pids_cgroup = (char *)contain_instance_pids_cgroup(s->contain);
        memcpy(me.boot_id, s->boot_id, sizeof me.boot_id);
        me.lock_path = s->lock_path;
        me.started_ms = loop_wall_ms();
        me.lease_expires_ms = me.started_ms + REIN_SUP_LEASE_MS;
        if ((rc = registry_owner_add(s->reg, &me)) < 0)
            goto fail;
        loop_timer_add(s->loop, REIN_SUP_HEARTBEAT_MS, on_heartbeat, s,
                       &s->t_heartbeat);
        if (!o->no_reconcile && (rc = rein_sup_reconcile(s, NULL)) < 0)
            goto fail;
    }
    *out = s;
    return 0;
fail:
    rein_sup_close(s);
    return rc;
}

int rein_sup_fd(const rein_sup_t *s)
{
    if (!s)
        return -EINVAL;
    return loop_fd(s->loop);
}

int rein_sup_run_once(rein_sup_t *s, int timeout_ms)
{
    if (!s)
        return -EINVAL;
    return loop_run_once(s->loop, timeout_ms);
}

static bool any_live(rein_sup_t *s)
{
    for (struct run *r = s->runs; r; r = r->next)
        if (r->state != REIN_RUN_EXITED)
            return true;
    return false;
}

void rein_sup_close(rein_sup_t *s)
{
    if (!s)
        return;
    if (s->loop) {
        for (struct run *r = s->runs; r; r = r->next) {
            /* A held exit drain must not keep leftovers alive. */
            r->on_leader_exit = NULL;
            xhold_release(r);
            cancel_run(r, REIN_REASON_SHUTDOWN, SIGTERM,
                       SUP_CLOSE_GRACE_MS);
            hasten_grace(r, SUP_CLOSE_GRACE_MS);
        }
        uint64_t t0 = loop_clock_ms();
        while (any_live(s) &&
               loop_clock_ms() - t0 <
                   (uint64_t)(SUP_CLOSE_GRACE_MS + REIN_SUP_KILL_BOUND_MS +
                              SUP_DRAIN_MS))
            loop_run_once(s->loop, SUP_CHECK_MS);
        /* Strays no run claimed are still ours: nothing outlives rein. */
        end_strays(s);
    }
    while (s->runs) {
        struct run *r = s->runs;
        s->runs = r->next;
        run_free(r);
    }
    /* Every rein process is an owner: its row goes when it closes, unless
     * a run outlived the kill bound or a stray survived (reconcile finds
     * those through it). */
    if (s->reg)
        registry_owner_forget(s->reg, s->owner);
    free(s->strays);
    if (s->lock_fd >= 0) {
        if (s->lock_path)
            unlink(s->lock_path);
        close(s->lock_fd);
    }
    events_close(s->ev);
    registry_close(s->reg);
    contain_free(s->contain);
    loop_free(s->loop);
    free(s->state_dir);
    free(s->logs_dir);
    free(s->lock_path);
    free(s->rbuf);
    free(s);
}

/* The loop behind a supervisor, for front ends (the MCP server) that add
 * their own fds and timers to it. */
loop_t *sup_loop(rein_sup_t *s)
{
    return s->loop;
}

int sup_run_fd(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    return r && r->tty ? r->out_fd : -1;
}

size_t sup_run_pending(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    return r ? r->pending_in.len : 0;
}

/* The object the run's processes read as input: the PTY slave (a char
 * device) or the stdin pipe (our write end shares its inode). */
int sup_run_input(rein_sup_t *s, int64_t id, struct stat *st)
{
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    int fd = r->tty ? r->slave : r->in_fd;
    if (fd < 0)
        return -EPIPE;
    return fstat(fd, st) < 0 ? -errno : 0;
}

/* poll(2) on the slave we hold answers for the line discipline: in
 * canonical mode POLLIN means a complete line or an EOF is queued, in raw
 * mode that VMIN bytes are.  The kernel moves what the master wrote into
 * the line discipline before it answers (n_tty_poll flushes the PTY's
 * buffer work), so bytes written a moment ago are counted. */
int sup_run_input_queued(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    if (!r)
        return REIN_ENORUN;
    if (!r->tty)
        return -ENOTTY;
    if (r->slave < 0)
        return -EPIPE;
    struct pollfd p = {.fd = r->slave, .events = POLLIN};
    int n = poll(&p, 1, 0);
    if (n < 0)
        return -errno;
    return n > 0 && (p.revents & POLLIN) ? 1 : 0;
}

/* Reads what the run's output fd holds now, without waiting: a caller that
 * learned the run is blocked (awaiting input) gets everything it printed
 * before answering. */
void sup_run_drain(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    if (r && r->state != REIN_RUN_EXITED)
        read_output(r);
}

/* True once the run's end needed SIGKILL (the grace ran out). */
bool sup_run_escalated(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    return r && r->killed;
}

/* Stops calling the run's callbacks: its owner is going away before the
 * run ends (rein_sup_close still ends it). */
void sup_run_detach(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    if (r) {
        r->on_output = NULL;
        r->on_exit = NULL;
        r->on_leader_exit = NULL;
        r->data = NULL;
        xhold_release(r); /* no one is left to release it */
    }
}

/* The front end's own drain is over: the leftovers may be ended. */
void sup_run_release(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    if (r)
        xhold_release(r);
}

/* The directory of the run logs, or NULL (ephemeral). */
const char *sup_logs_dir(const rein_sup_t *s)
{
    return s->logs_dir;
}

size_t sup_run_known(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    return r ? r->known.n : 0;
}

int sup_run_tty(rein_sup_t *s, int64_t id)
{
    struct run *r = find_run(s, id);
    if (r)
        return r->tty;
    run_record_t rec;
    run_record_init(&rec);
    int rc = s->reg ? registry_run_get(s->reg, id, &rec) : REIN_ENORUN;
    if (rc == 0)
        rc = rec.tty;
    run_record_clear(&rec);
    return rc < 0 ? REIN_ENORUN : rc;
}

int sup_live_runs(rein_sup_t *s, int64_t **ids, size_t *n)
{
    run_record_t *recs = NULL;
    size_t nrec = 0, nmem = 0, k = 0;
    *ids = NULL;
    *n = 0;
    int rc = s->reg ? registry_run_list(s->reg, false, &recs, &nrec) : 0;
    if (rc < 0)
        return rc;
    for (struct run *r = s->runs; r; r = r->next)
        nmem++;
    int64_t *v = malloc((nrec + nmem + 1) * sizeof *v);
    if (!v) {
        run_record_list_free(recs, nrec);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nrec; i++)
        v[k++] = recs[i].id;
    /* Ours too: a run whose registry write failed is live all the same. */
    for (struct run *r = s->runs; r; r = r->next)
        if (r->state != REIN_RUN_EXITED)
            v[k++] = r->id;
    run_record_list_free(recs, nrec);
    *ids = v;
    *n = k;
    return 0;
}

int sup_forget_runs(rein_sup_t *s, int64_t ended_before_ms,
                    const int64_t *ids, size_t n_ids, size_t *n)
{
    *n = 0;
    if (!s->reg)
        return 0;
    return registry_runs_forget(s->reg, ended_before_ms, ids, n_ids, n);
}
