/*
 * retention.c — pruning the run logs (see retention.h).
 *
 * One pass: list <id>.log files with their mtime and allocated size, drop
 * those past the age limit, then, oldest first, those that keep the total
 * over the size limit.  Only files named as run logs are touched: the
 * directory is ours, but nothing else in it is this module's to remove.
 * retention_pass wraps it for a supervisor's state dir: which runs are
 * live comes from the registry (every owner's), and the records of the
 * runs whose logs went are deleted after them.  rein_sup_prune is that
 * pass in the public API.
 */
#include "exec/retention.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/loop.h"
#include "base/spool.h"
#include "supervise/sup.h"

struct logfile {
    int64_t id;
    int64_t mtime_ms;
    uint64_t bytes;
};

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v || v[0] == '-')
        return dflt;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    return *end || errno ? dflt : x;
}

void retention_opts_from_env(retention_opts_t *o, unsigned default_days,
                             uint64_t default_bytes)
{
    uint64_t days = env_u64("REIN_LOG_MAX_AGE_DAYS", default_days);
    o->max_age_ms = days > UINT64_MAX / RETENTION_DAY_MS
                        ? UINT64_MAX
                        : days * RETENTION_DAY_MS;
    o->max_bytes = env_u64("REIN_LOG_MAX_BYTES", default_bytes);
}

static int by_age(const void *a, const void *b)
{
    const struct logfile *x = a, *y = b;
    if (x->mtime_ms != y->mtime_ms)
        return x->mtime_ms < y->mtime_ms ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* True for "<digits>.log", with the id in *id. */
static bool log_name(const char *name, int64_t *id)
{
    char *end;
    if (name[0] < '0' || name[0] > '9')
        return false;
    errno = 0;
    long long v = strtoll(name, &end, 10);
    if (errno || strcmp(end, ".log") != 0)
        return false;
    *id = v;
    return true;
}

static void remove_log(int dfd, int64_t id)
{
    char name[64];
    snprintf(name, sizeof name, "%lld.log", (long long)id);
    unlinkat(dfd, name, 0);
    snprintf(name, sizeof name, "%lld.log" SPOOL_NOTE_SUFFIX, (long long)id);
    unlinkat(dfd, name, 0);
}

int retention_prune(const char *dir, const retention_opts_t *o,
                    retention_stats_t *st)
{
    retention_stats_t dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    /* fdopendir takes the fd it is given only when it succeeds */
    int dfd2 = dup(dfd);
    DIR *d = dfd2 >= 0 ? fdopendir(dfd2) : NULL;
    if (!d) {
        int rc = -errno;
        if (dfd2 >= 0)
            close(dfd2);
        close(dfd);
        return rc;
    }
    struct logfile *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) && n < RETENTION_MAX_FILES) {
        int64_t id;
        struct stat sb;
        if (!log_name(e->d_name, &id) ||
            fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(sb.st_mode))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct logfile *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        v[n].id = id;
        v[n].mtime_ms = (int64_t)sb.st_mtim.tv_sec * 1000 +
                        sb.st_mtim.tv_nsec / 1000000;
        v[n].bytes = (uint64_t)sb.st_blocks * 512;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, by_age);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i].bytes;
    for (size_t i = 0; i < n; i++) {
        bool fresh = o->now_ms - v[i].mtime_ms < (int64_t)RETENTION_FRESH_MS;
        if (fresh || (o->keep && o->keep(v[i].id, o->keep_ud))) {
            st->kept_bytes += v[i].bytes;
            continue;
        }
        bool old = o->max_age_ms && o->max_age_ms <= (uint64_t)INT64_MAX &&
                   o->now_ms - v[i].mtime_ms > (int64_t)o->max_age_ms;
        bool over = o->max_bytes && total > o->max_bytes;
        if (!old && !over) {
            st->kept_bytes += v[i].bytes;
            continue;
        }
        remove_log(dfd, v[i].id);
        if (o->removed)
            o->removed(v[i].id, o->removed_ud);
        total -= v[i].bytes;
        st->removed++;
        st->removed_bytes += v[i].bytes;
    }
    free(v);
    close(dfd);
    return rc;
}

/* A pass's view: the runs not exited, and the ids of the logs it
 * removed. */
struct pass {
    const int64_t *live;
    size_t nlive;
    int64_t *gone;
    size_t ngone, cap;
};

/* Linear: the live runs are a few dozen (64 sessions a server at most). */
static bool pass_keep(int64_t id, void *ud)
{
    const struct pass *p = ud;
    for (size_t i = 0; i < p->nlive; i++)
        if (p->live[i] == id)
            return true;
    return false;
}

static void pass_removed(int64_t id, void *ud)
{
    struct pass *p = ud;
    if (p->ngone == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        int64_t *v = realloc(p->gone, cap * sizeof *v);
        if (!v)
            return; /* its record stays until the age limit takes it */
        p->gone = v;
        p->cap = cap;
    }
    p->gone[p->ngone++] = id;
}

/* Sets the stamp's times to now, creating it. */
static void stamp_touch(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" RETENTION_STAMP, dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    futimens(fd, NULL);
    close(fd);
}

int retention_pass(rein_sup_t *sup, const retention_opts_t *o,
                   retention_stats_t *st)
{
    retention_stats_t dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    const char *dir = sup_logs_dir(sup);
    if (!dir)
        return 0;
    int64_t *live = NULL;
    struct pass p = {NULL, 0, NULL, 0, 0};
    /* Without the live runs nothing can be removed safely. */
    int rc = sup_live_runs(sup, &live, &p.nlive);
    if (rc < 0)
        return rc;
    p.live = live;
    stamp_touch(dir);
    retention_opts_t po = *o;
    po.now_ms = loop_wall_ms();
    po.keep = pass_keep;
    po.keep_ud = &p;
    po.removed = pass_removed;
    po.removed_ud = &p;
    rc = retention_prune(dir, &po, st);
    /* A record lives as long as its log: gone with it, or past the age
     * limit however its log went. */
    int64_t before = po.max_age_ms && po.max_age_ms < (uint64_t)po.now_ms
                         ? po.now_ms - (int64_t)po.max_age_ms
                         : 0;
    size_t n;
    sup_forget_runs(sup, before, p.gone, p.ngone, &n);
    free(live);
    free(p.gone);
    return rc;
}

int retention_pass_due(rein_sup_t *sup, const retention_opts_t *o,
                       retention_stats_t *st)
{
    const char *dir = sup_logs_dir(sup);
    if (!dir)
        return 0;
    char path[PATH_MAX];
    struct stat sb;
    snprintf(path, sizeof path, "%s/" RETENTION_STAMP, dir);
    if (stat(path, &sb) == 0) {
        int64_t at = (int64_t)sb.st_mtim.tv_sec * 1000 +
                     sb.st_mtim.tv_nsec / 1000000;
        int64_t age = loop_wall_ms() - at;
        /* A stamp from the future (a clock set back) is due too. */
        if (age >= 0 && age < (int64_t)RETENTION_EVERY_MS)
            return 0;
    }
    stamp_touch(dir); /* before the pass: the others see it done */
    int rc = retention_pass(sup, o, st);
    return rc < 0 ? rc : 1;
}

int rein_sup_prune(rein_sup_t *s, int64_t max_age_ms, int64_t max_bytes,
                   rein_prune_stats_t *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || max_age_ms < REIN_PRUNE_DEFAULT || max_bytes < REIN_PRUNE_DEFAULT)
        return -EINVAL;
    retention_opts_t o;
    retention_opts_from_env(&o, RETENTION_DEFAULT_AGE_DAYS,
                            RETENTION_DEFAULT_MAX_BYTES);
    if (max_age_ms != REIN_PRUNE_DEFAULT)
        o.max_age_ms = (uint64_t)max_age_ms;
    if (max_bytes != REIN_PRUNE_DEFAULT)
        o.max_bytes = (uint64_t)max_bytes;
    retention_stats_t st;
    int rc = retention_pass(s, &o, &st);
    if (out) {
        out->logs_removed = st.removed;
        out->bytes_removed = st.removed_bytes;
        out->bytes_kept = st.kept_bytes;
    }
    return rc;
}
