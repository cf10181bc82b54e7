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
 * writing).  A log's ".dropped" note goes with it.
 */
#ifndef REIN_EXEC_RETENTION_H
#define REIN_EXEC_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
