/*
 * ptree.h — signalling a process tree that rein owns, and only that.
 *
 * A tree is captured as (pid, start time) pairs; a signal goes to a member
 * only through a pidfd opened and then verified against the recorded start
 * time, so a pid that was reused in the meantime is never signalled.  Where
 * pidfds are unavailable (valgrind, old kernels) the start time is checked
 * right before kill(), leaving only the kernel's own reuse window.
 *   Start times count clock ticks (10 ms), so a member that died and whose
 * pid was given to a new process within the same tick (possible on purpose,
 * with ns_last_pid or clone3's set_tid) would pass that check.  A pinned
 * capture (ptree_capture_pinned) closes that window: it holds a pidfd on
 * each member from the moment it was seen, and signals and watches it
 * through that pidfd only.  It costs an fd per member for the tree's life,
 * so it is for trees held briefly (terminate, kill); the supervisor's
 * long-lived records stay unpinned.
 *
 * Process groups are signalled only when the caller owns them: never pgid
 * <= 1 and never rein's own group.
 */
#ifndef REIN_BASE_PTREE_H
#define REIN_BASE_PTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ptree_member {
    pid_t pid;
    uint64_t start_time;
    int pidfd; /* pinned: the member's own pidfd; else -1 */
} ptree_member_t;

/* An unpinned member. */
#define PTREE_MEMBER(pid, start) ((ptree_member_t){(pid), (start), -1})

typedef struct ptree {
    ptree_member_t *v; /* root first, then breadth-first descendants */
    size_t n;
} ptree_t;

/* Captures root (if alive) and its descendants.  0 or -ENOMEM; a root
 * that is gone gives an empty tree. */
int ptree_capture(pid_t root, ptree_t *out);
/* The same, each member pinned by a pidfd opened before its start time is
 * read, and each descendant kept only if its parent, read after the pidfd
 * pins it, is a member already (so a pid reused between the listing and
 * the pidfd is not taken in).  Where a pidfd cannot be had (no pidfd_open,
 * no fd left) the member is captured unpinned. */
int ptree_capture_pinned(pid_t root, ptree_t *out);
/* Frees t and closes its pidfds. */
void ptree_free(ptree_t *t);
/* Adds what is alive in src to dst, skipping members already in dst; a
 * pinned member stays pinned (its pidfd is duplicated). */
int ptree_merge(ptree_t *dst, const ptree_t *src);
/* Adds (pid, start_time) to t unpinned, unless it is a member already,
 * without the liveness check of ptree_merge: for a process the caller
 * knows is that one, such as its own child not yet reaped.  0 or
 * -ENOMEM. */
int ptree_add(ptree_t *t, pid_t pid, uint64_t start_time);

/* Signals one process if it still is the one recorded.  0, -ESRCH when it
 * is gone or was replaced, or another -errno. */
int ptree_signal_one(pid_t pid, uint64_t start_time, int signo);
/* Signals a member: through its own pidfd when pinned, else as
 * ptree_signal_one.  -EPERM for pid <= 1 and rein itself. */
int ptree_signal_member(const ptree_member_t *m, int signo);
/* Whether a member is still running (not exited, not a zombie). */
bool ptree_member_alive(const ptree_member_t *m);
/* Signals every live member, children first (reverse capture order).
 * Returns how many were signalled. */
int ptree_signal(const ptree_t *t, int signo);
/* Signals process group pgid; -EPERM for pgid <= 1 or rein's own group. */
int ptree_signal_group(pid_t pgid, int signo);

/*
 * A pass: one signal to a boundary that several routes reach (the
 * leader's process group, a cgroup, a remembered tree), each process
 * getting it once.  A second SIGTERM is no harmless repeat: bash, running
 * its EXIT trap for the first, dies of the second at once and the trap's
 * work is cut short.  The group goes first (one kill reaches each of its
 * members, and a fork in flight in it); then each route signals only what
 * ptree_pass_due says the pass has not reached: not in that group, not
 * sent to already.  A process that leaves the group between the kill and
 * that check is sent the signal twice; one that joins it then, not at all
 * (a terminator's KILL after the grace still finds it).
 */
typedef struct ptree_pass {
    int signo;
    pid_t pgid;  /* the group signalled whole, or 0 */
    pid_t *sent; /* pids signalled one by one, ascending */
    size_t n, cap;
} ptree_pass_t;

/* Begins a pass of signo: signals group pgid first when pgid > 0 (with
 * ptree_signal_group's guards; a group refused or empty is left to the
 * other routes, as if pgid were 0). */
void ptree_pass_begin(ptree_pass_t *p, int signo, pid_t pgid);
/* True while the pass has not reached pid: it is not in the group the
 * pass signalled (not looked at for SIGKILL, which a second time does
 * nothing) and was not noted as sent. */
bool ptree_pass_due(const ptree_pass_t *p, pid_t pid);
/* Notes pid as sent, by a route that verifies and signals it its own
 * way.  Without memory to note it, a later route may send it again. */
void ptree_pass_note(ptree_pass_t *p, pid_t pid);
/* Signals member m (ptree_signal_member) unless the pass reached it:
 * 0 when sent now, 1 when reached before, or the member's -errno. */
int ptree_pass_member(ptree_pass_t *p, const ptree_member_t *m);
/* ptree_pass_member for every member of t, children first (reverse
 * capture order); how many were sent the signal now. */
int ptree_pass_tree(ptree_pass_t *p, const ptree_t *t);
/* Frees what the pass noted. */
void ptree_pass_end(ptree_pass_t *p);

/* Members still alive (not zombies, start time matching). */
size_t ptree_count_alive(const ptree_t *t);
/* True when a live (non-zombie) process has process group pgid. */
bool ptree_group_alive(pid_t pgid);
/* The session of process group pgid, read from a live (non-zombie)
 * member, the group's leader or not (a group outlives its leader): 0 when
 * the session's leader is outside our pid namespace (as /proc says it);
 * -ESRCH when the group has no live member, or a negative error.  A scan
 * of every process. */
pid_t ptree_group_session(pid_t pgid);

#endif
