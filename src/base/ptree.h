/*
 * ptree.h — signalling a process tree that rein owns, and only that.
 *
 * A tree is captured as (pid, start time) pairs; a signal goes to a member
 * only through a pidfd opened and then verified against the recorded start
 * time, so a pid that was reused in the meantime is never signalled.  Where
 * pidfds are unavailable (valgrind, old kernels) the start time is checked
 * right before kill(), leaving only the kernel's own reuse window.
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
} ptree_member_t;

typedef struct ptree {
    ptree_member_t *v; /* root first, then breadth-first descendants */
    size_t n;
} ptree_t;

/* Captures root (if alive) and its descendants.  0 or -ENOMEM; a root
 * that is gone gives an empty tree. */
int ptree_capture(pid_t root, ptree_t *out);
void ptree_free(ptree_t *t);
/* Adds what is alive in src to dst, skipping members already in dst. */
int ptree_merge(ptree_t *dst, const ptree_t *src);

/* Signals one process if it still is the one recorded.  0, -ESRCH when it
 * is gone or was replaced, or another -errno. */
int ptree_signal_one(pid_t pid, uint64_t start_time, int signo);
/* Signals every live member, children first (reverse capture order).
 * Returns how many were signalled. */
int ptree_signal(const ptree_t *t, int signo);
/* Signals process group pgid; -EPERM for pgid <= 1 or rein's own group. */
int ptree_signal_group(pid_t pgid, int signo);
/* Members still alive (not zombies, start time matching). */
size_t ptree_count_alive(const ptree_t *t);
/* True when a live (non-zombie) process has process group pgid. */
bool ptree_group_alive(pid_t pgid);

#endif
