/*
 * retention.h — how long run logs stay on disk.
 *
 * Every byte of every run is kept in its log (<state>/logs/<id>.log), so
 * the logs directory must be pruned or it grows without end.  After a run
 * ends its log is kept until it is older than max_age (by modification
 * time: the last byte written) or until the directory's logs together pass
 * max_bytes, oldest first.  Disk use is counted in allocated blocks, so a
 * capped log with a hole (spool.h) counts what it really holds.  Logs of
 * runs still going (the keep callback says so) are never removed, nor are
 * logs modified within RETENTION_FRESH_MS (a run another server is still
 * writing).  A log's ".dropped" note goes with it, and so does the run's
 * registry record (retention_pass), which otherwise goes once the run
 * ended longer ago than max_age: neither the logs nor the registry grow
 * without end.
 */
#ifndef REIN_EXEC_RETENTION_H
#define REIN_EXEC_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rein.h"

/* The defaults of REIN_LOG_MAX_AGE_DAYS and REIN_LOG_MAX_BYTES. */
#define RETENTION_DEFAULT_AGE_DAYS 7
#define RETENTION_DEFAULT_MAX_BYTES (2ull << 30)
/* A state dir gets a pass at most this often: `rein serve` on a timer,
 * `rein run` when the stamp (RETENTION_STAMP in the logs dir) is older. */
#define RETENTION_EVERY_MS (3600u * 1000u)
#define RETENTION_STAMP ".retention"
/* Logs written to this recently are left alone whatever their age. */
#define RETENTION_FRESH_MS (60u * 1000u)
/* Logs looked at per pass at most. */
#define RETENTION_MAX_FILES 100000
#define RETENTION_DAY_MS (24ull * 3600ull * 1000ull)

typedef struct retention_opts {
    uint64_t max_age_ms; /* 0: no age limit */
    uint64_t max_bytes;  /* 0: no size limit */
    int64_t now_ms;      /* wall clock of this pass */
    bool (*keep)(int64_t id, void *ud); /* run id still live? (optional) */
    void *keep_ud;
    /* Called (optional) with each id whose log was removed, so its
     * registry record can go with it. */
    void (*removed)(int64_t id, void *ud);
    void *removed_ud;
} retention_opts_t;

typedef struct retention_stats {
    size_t removed;
    uint64_t removed_bytes, kept_bytes;
} retention_stats_t;

/* Fills o from REIN_LOG_MAX_AGE_DAYS and REIN_LOG_MAX_BYTES (unset or
 * invalid: the defaults given; 0 disables that limit). */
void retention_opts_from_env(retention_opts_t *o, unsigned default_days,
                             uint64_t default_bytes);
/* One pass over dir/<id>.log.  0 or -errno (dir unreadable). */
int retention_prune(const char *dir, const retention_opts_t *o,
                    retention_stats_t *st);
/* One pass over sup's state dir: its logs (retention_prune, keeping those
 * of the runs not exited of every owner, from the registry), then the
 * registry records of the runs whose logs went, and of those that ended
 * longer ago than max_age however their logs went.  o's limits are used;
 * now_ms, keep and removed are the pass's own.  0 (nothing to do for an
 * ephemeral supervisor), or the error that stopped it before anything
 * was removed. */
int retention_pass(rein_sup_t *sup, const retention_opts_t *o,
                   retention_stats_t *st);
/* retention_pass if the state dir had none for RETENTION_EVERY_MS, by the
 * stamp's mtime, which is moved first: of several rein processes ending
 * at once, one makes the pass.  1 when it ran, 0 when not due. */
int retention_pass_due(rein_sup_t *sup, const retention_opts_t *o,
                       retention_stats_t *st);

#endif
