/*
 * owner.c — whether a rein process that owns runs is alive (see owner.h).
 *
 * Two witnesses: the process itself, named by boot id, pid and start time
 * as the owner recorded them, and the flock on its lock file, which the
 * kernel releases when the process's files are closed.  Either one saying
 * "dead" is believed: a pid may be reused, but not with the same start
 * time, and a dead process holds no lock.  Where there is no lock file to
 * probe (the owner removes it when it closes, and its process may live on
 * and host another owner), the lease it renewed says how long it counts
 * as alive.  The process is read first because reading /proc disturbs
 * nothing, while a probe of the lock holds it for an instant, and
 * reconciliation must not find a dead owner's lock taken by a passing
 * `rein ps`.  The process is a witness only in the owner's own pid
 * namespace (recorded with it): from another one, its pid names another
 * process or none, and the lock and the lease speak alone.
 */
#include "supervise/owner.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/loop.h"
#include "base/procfs.h"

/* What the owner's process says: -1 dead, 1 alive, 0 unknown (no boot id,
 * pid or start time recorded: a pid alone proves nothing; or the owner is
 * in another pid namespace, where its pid names another process or none,
 * so that only its lock and its lease can speak for it). */
static int owner_identity(const owner_record_t *o)
{
    char boot[PROCFS_BOOT_ID_LEN];
    uint64_t ns;
    if (!o->boot_id[0] || procfs_boot_id(boot) < 0)
        return 0;
    if (strcmp(boot, o->boot_id) != 0)
        return -1;
    if (o->pid <= 0 || o->start_time == 0)
        return 0;
    if (o->pid_ns && (procfs_pid_ns(&ns) < 0 || ns != o->pid_ns))
        return 0;
    return procfs_alive(o->pid, o->start_time) ? 1 : -1;
}

/* Without a lock to look at, and no proof of death: the lease. */
static bool owner_lease_live(const owner_record_t *o)
{
    return o->lease_expires_ms > loop_wall_ms();
}

int owner_lock_open(const owner_record_t *o)
{
    if (!o->lock_path || !*o->lock_path)
        return -1;
    return open(o->lock_path, O_RDONLY | O_CLOEXEC);
}

bool owner_alive(const owner_record_t *o, int lock_fd)
{
    int identity = owner_identity(o);
    if (identity < 0)
        return false;
    if (lock_fd >= 0) {
        if (flock(lock_fd, LOCK_SH | LOCK_NB) == 0) {
            flock(lock_fd, LOCK_UN);
            return false;
        }
        if (errno == EWOULDBLOCK)
            return true;
        /* Any other error says nothing about the holder. */
    }
    return owner_lease_live(o);
}

int owner_pidfd_open(const owner_record_t *o)
{
    if (owner_identity(o) <= 0)
        return -1;
    int fd = (int)syscall(SYS_pidfd_open, o->pid, 0);
    if (fd < 0)
        return -1;
    /* The pid may have been reused between the look and the open. */
    if (!procfs_alive(o->pid, o->start_time)) {
        close(fd);
        return -1;
    }
    return fd;
}

bool owner_dead_take_lock(const owner_record_t *o, int *lock_fd)
{
    *lock_fd = -1;
    int identity = owner_identity(o);
    int fd = owner_lock_open(o);
    if (fd >= 0) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            *lock_fd = fd;
            return true;
        }
        int err = errno;
        close(fd);
        if (err == EWOULDBLOCK)
            return identity < 0; /* held, by the owner unless it is gone */
    }
    return identity < 0 || !owner_lease_live(o);
}
