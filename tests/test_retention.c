/* test_retention.c — pruning run logs: the age limit at its edge, the size
 * limit oldest first, live and fresh logs kept, other files untouched; and
 * rein_sup_prune, the library's pass over a supervisor's state dir. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exec/retention.h"
#include "harness.h"
#include "rein.h"
#include "supervise/registry.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* dir/name with size bytes, modified at mtime_ms. */
static void make_log(const char *dir, const char *name, size_t size,
                     int64_t mtime_ms)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    char *b = calloc(1, size ? size : 1);
    ASSERT_EQ(write(fd, b, size), (ssize_t)size);
    free(b);
    struct timespec ts[2] = {{mtime_ms / 1000, (mtime_ms % 1000) * 1000000},
                             {mtime_ms / 1000, (mtime_ms % 1000) * 1000000}};
    ASSERT_EQ(futimens(fd, ts), 0);
    close(fd);
}

static bool exists(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static bool keep_1005(int64_t id, void *ud)
{
    (void)ud;
    return id == 1005;
}

/* The ids a pass reports removed, in order. */
struct gone {
    int64_t id[8];
    size_t n;
};

static void note_gone(int64_t id, void *ud)
{
    struct gone *g = ud;
    ASSERT_TRUE(g->n < 8);
    g->id[g->n++] = id;
}

TEST(retention_age_limit_at_its_edge)
{
    const char *d = test_tmpdir();
    int64_t now = now_ms();
    retention_opts_t o = {.max_age_ms = 7 * RETENTION_DAY_MS, .now_ms = now};
    make_log(d, "1001.log", 10, now - (int64_t)o.max_age_ms - 1000); /* past */
    make_log(d, "1001.log.dropped", 10, now);
    make_log(d, "1002.log", 10, now - (int64_t)o.max_age_ms + 1000); /* not yet */
    make_log(d, "1003.log", 10, now - 2 * (int64_t)o.max_age_ms);
    make_log(d, "1005.log", 10, now - 2 * (int64_t)o.max_age_ms); /* live */
    make_log(d, "notes.txt", 10, now - 2 * (int64_t)o.max_age_ms);
    make_log(d, "12x.log", 10, now - 2 * (int64_t)o.max_age_ms);
    o.keep = keep_1005;
    struct gone g = {{0}, 0};
    o.removed = note_gone;
    o.removed_ud = &g;
    retention_stats_t st;
    ASSERT_OK(retention_prune(d, &o, &st));
    ASSERT_EQ(st.removed, 2);
    /* Named, oldest first, so their registry records can go with them. */
    ASSERT_EQ(g.n, 2);
    ASSERT_EQ(g.id[0], 1003);
    ASSERT_EQ(g.id[1], 1001);
    ASSERT_FALSE(exists(d, "1001.log"));
    ASSERT_FALSE(exists(d, "1001.log.dropped"));
    ASSERT_TRUE(exists(d, "1002.log"));
    ASSERT_FALSE(exists(d, "1003.log"));
    ASSERT_TRUE(exists(d, "1005.log"));
    ASSERT_TRUE(exists(d, "notes.txt"));
    ASSERT_TRUE(exists(d, "12x.log"));
}

TEST(retention_size_limit_oldest_first_fresh_kept)
{
    const char *d = test_tmpdir();
    int64_t now = now_ms();
    const size_t sz = 64 * 1024;
    make_log(d, "2001.log", sz, now - 50000000);
    make_log(d, "2002.log", sz, now - 40000000);
    make_log(d, "2003.log", sz, now - 30000000);
    make_log(d, "2004.log", sz, now); /* fresh: never removed */
    struct stat s1;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/2001.log", d);
    ASSERT_EQ(stat(p, &s1), 0);
    uint64_t each = (uint64_t)s1.st_blocks * 512;
    /* Exactly three logs' worth: at the limit, nothing goes. */
    retention_opts_t o = {.max_bytes = 4 * each, .now_ms = now};
    retention_stats_t st;
    ASSERT_OK(retention_prune(d, &o, &st));
    ASSERT_EQ(st.removed, 0);
    /* One byte under: the oldest goes, and only it. */
    o.max_bytes = 4 * each - 1;
    ASSERT_OK(retention_prune(d, &o, &st));
    ASSERT_EQ(st.removed, 1);
    ASSERT_FALSE(exists(d, "2001.log"));
    ASSERT_TRUE(exists(d, "2002.log"));
    /* A tiny limit removes every old log but keeps the fresh one. */
    o.max_bytes = 1;
    ASSERT_OK(retention_prune(d, &o, &st));
    ASSERT_FALSE(exists(d, "2002.log"));
    ASSERT_FALSE(exists(d, "2003.log"));
    ASSERT_TRUE(exists(d, "2004.log"));
}

TEST(retention_env_and_missing_dir)
{
    retention_opts_t o;
    setenv("REIN_LOG_MAX_AGE_DAYS", "2", 1);
    setenv("REIN_LOG_MAX_BYTES", "12345", 1);
    retention_opts_from_env(&o, 7, 99);
    ASSERT_EQ(o.max_age_ms, 2 * RETENTION_DAY_MS);
    ASSERT_EQ(o.max_bytes, 12345);
    setenv("REIN_LOG_MAX_AGE_DAYS", "x", 1);
    setenv("REIN_LOG_MAX_BYTES", "-5", 1);
    retention_opts_from_env(&o, 7, 99);
    ASSERT_EQ(o.max_age_ms, 7 * RETENTION_DAY_MS);
    ASSERT_EQ(o.max_bytes, 99);
    unsetenv("REIN_LOG_MAX_AGE_DAYS");
    unsetenv("REIN_LOG_MAX_BYTES");
    o.now_ms = now_ms();
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/nope", test_tmpdir());
    ASSERT_EQ(retention_prune(p, &o, NULL), -ENOENT);
}

static void on_exited(rein_sup_t *s, int64_t id, const rein_run_info_t *info,
                      void *ud)
{
    (void)s;
    (void)id;
    (void)info;
    *(int *)ud = 1;
}

/* Sets the mtime of the log at path to at_ms. */
static void age_log(const char *path, int64_t at_ms)
{
    struct timespec ts[2] = {{at_ms / 1000, (at_ms % 1000) * 1000000},
                             {at_ms / 1000, (at_ms % 1000) * 1000000}};
    ASSERT_EQ(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* rein_sup_prune: a finished run's log older than the limit goes with its
 * record; a live run's log as old stays, and so does its record; limits
 * below REIN_PRUNE_DEFAULT are refused; an ephemeral supervisor has
 * nothing to prune. */
TEST(retention_rein_sup_prune_takes_old_runs_and_keeps_live_ones)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/state", test_tmpdir());
    rein_sup_opts_t so = {.state_dir = dir};
    rein_sup_t *s;
    ASSERT_OK(rein_sup_open(&so, &s));
    const char *done_argv[] = {"/bin/echo", "hi", NULL};
    const char *live_argv[] = {"/bin/sleep", "300", NULL};
    int done = 0;
    rein_run_opts_t o = {.argv = done_argv, .grace_ms = -1,
                         .on_exit = on_exited, .data = &done};
    int64_t old_id, live_id;
    ASSERT_OK(rein_sup_spawn(s, &o, &old_id));
    while (!done)
        ASSERT_INT(rein_sup_run_once(s, 1000), >=, 0);
    rein_run_opts_t lo = {.argv = live_argv, .grace_ms = -1};
    ASSERT_OK(rein_sup_spawn(s, &lo, &live_id));
    rein_run_info_t a, b;
    ASSERT_OK(rein_sup_info(s, old_id, &a));
    ASSERT_OK(rein_sup_info(s, live_id, &b));
    ASSERT_TRUE(a.log_path && b.log_path);
    char old_log[PATH_MAX], live_log[PATH_MAX];
    snprintf(old_log, sizeof old_log, "%s", a.log_path);
    snprintf(live_log, sizeof live_log, "%s", b.log_path);
    int64_t two_days_ago = now_ms() - 2 * (int64_t)RETENTION_DAY_MS;
    age_log(old_log, two_days_ago);
    age_log(live_log, two_days_ago);

    rein_prune_stats_t st;
    ASSERT_EQ(rein_sup_prune(s, -2, REIN_PRUNE_DEFAULT, &st), -EINVAL);
    ASSERT_EQ(rein_sup_prune(s, REIN_PRUNE_DEFAULT, -5, &st), -EINVAL);
    ASSERT_EQ(st.logs_removed, 0);
    ASSERT_TRUE(access(old_log, F_OK) == 0);
    /* Three days: neither is past the limit. */
    ASSERT_OK(rein_sup_prune(s, 3 * (int64_t)RETENTION_DAY_MS,
                             REIN_PRUNE_DEFAULT, &st));
    ASSERT_EQ(st.logs_removed, 0);
    ASSERT_OK(rein_sup_prune(s, (int64_t)RETENTION_DAY_MS, REIN_PRUNE_DEFAULT,
                             &st));
    ASSERT_EQ(st.logs_removed, 1);
    ASSERT_INT(st.bytes_removed, >, 0);
    ASSERT_EQ(access(old_log, F_OK), -1);
    ASSERT_TRUE(access(live_log, F_OK) == 0);

    registry_t *reg;
    run_record_t rec;
    ASSERT_OK(registry_open(dir, &reg));
    run_record_init(&rec);
    ASSERT_EQ(registry_run_get(reg, old_id, &rec), -ENOENT);
    ASSERT_OK(registry_run_get(reg, live_id, &rec));
    run_record_clear(&rec);
    registry_close(reg);
    rein_sup_close(s); /* ends the live run */

    rein_sup_opts_t eo = {.ephemeral = true};
    ASSERT_OK(rein_sup_open(&eo, &s));
    ASSERT_OK(rein_sup_prune(s, 0, 0, &st));
    ASSERT_EQ(st.logs_removed, 0);
    rein_sup_close(s);
    ASSERT_EQ(rein_sup_prune(NULL, 0, 0, NULL), -EINVAL);
}
