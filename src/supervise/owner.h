/*
 * owner.h — whether a rein process that owns runs (an owner) is alive.
 *
 * An owner's record may outlive it: a SIGKILL, an OOM kill or a full disk
 * leaves its runs recorded `running` until reconciliation steals them.
 * Everything that reads the registry on an operator's behalf (ps, logs -f,
 * kill) and reconciliation itself asks the one question here, so what ps
 * calls orphaned is exactly what reconcile ends.
 *
 * The evidence, strongest first:
 *  - a different boot id: the owner cannot be running;
 *  - its process (pid plus start time, never the pid alone) gone or a
 *    zombie: dead, whoever holds its lock;
 *  - its lock file's flock free: dead (the kernel drops it at exit, even
 *    when the process is SIGKILLed);
 *  - the lock held: alive;
 *  - no lock file to look at (the owner removes it when it closes, and a
 *    process may host one owner after another): alive until its lease
 *    expires.
 * A live process never makes an owner alive by itself: it only proves
 * death when it is gone.
 */
#ifndef REIN_SUPERVISE_OWNER_H
#define REIN_SUPERVISE_OWNER_H

#include <stdbool.h>

#include "supervise/registry.h"

/* Opens o's lock file read-only (a probe never writes, and a read-only
 * state directory still answers), or returns -1 when it has none or it
 * cannot be opened; the caller closes it. */
int owner_lock_open(const owner_record_t *o);

/*
 * Whether owner o is alive now.  lock_fd is o's lock file from
 * owner_lock_open, or -1.  Never takes the lock for longer than the probe,
 * and never probes it when the process identity already says dead.
 */
bool owner_alive(const owner_record_t *o, int lock_fd);

/*
 * A pidfd for o's process, checked against its start time once open (so it
 * names that very process), or -1: no pidfds here, no identity recorded,
 * or the process is already gone.  It turns readable when the owner exits:
 * a wake-up a waiter cannot miss, unlike the close of the lock file, whose
 * inotify event the kernel sends before it releases the lock.
 */
int owner_pidfd_open(const owner_record_t *o);

/*
 * Reconciliation's form: whether o is dead, and when it is and its lock
 * was free, the lock taken exclusively and kept in *lock_fd (else -1), so
 * that its file can be removed under it.
 */
bool owner_dead_take_lock(const owner_record_t *o, int *lock_fd);

#endif
