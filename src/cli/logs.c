/*
 * logs.c — `rein logs ID [-f]`: the full output of a run, from its log file.
 *
 * The registry says where the log is; the bytes come from the file, never
 * from SQLite.  -f follows: it prints what is there, then sleeps in
 * poll() on inotify — on the log file (it grew), its directory (it
 * appeared) and the state directory (a registry commit touched registry.db
 * or its -wal) — and on the run owner's pidfd, and stops once the registry
 * says the run has exited and the file has been read to its end.  It also
 * stops when the run's owner is gone (killed without a chance to record
 * the end, which only reconciliation records later): the owner wrote the
 * log, so nothing more can come.  Whether the owner lives is the question
 * ps and reconcile ask too (supervise/owner.h: its process by pid and
 * start time, and the flock on its lock file); its pidfd turns readable
 * when it exits, and where there are no pidfds the lock file is watched
 * for closes (the dead owner's fd is closed).  The watches are in place
 * before the first look at the file, the registry and the owner, so a
 * write, an exit or a death that happens in between still wakes us; and a
 * wake-up by a registry file waits for the writer's commit to be
 * published (registry_sync) before reading the run's state.  No sleeps, no
 * polling, no lost wake-up.
 *
 * A log that holds fewer bytes than the registry counted for an exited run
 * (truncated by someone, or cut short by a full disk or by its owner's
 * death) is printed, then named as incomplete; a log truncated while
 * followed is followed again from its start, with a note.  The range a
 * log's size cap punched out (1 GiB, supervise/sup.c) is skipped, not
 * printed as the zeros it reads as, and named.
 *
 * The supervisor flushes a run's spool before it records the exit, so the
 * end of the file at that point is the end of the output.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "base/spool.h"
#include "rein.h"
#include "supervise/owner.h"

/* Copy and inotify read sizes. */
#define LOGS_COPY_BUF (64u * 1024u)
#define LOGS_EVENT_BUF (16u * (sizeof(struct inotify_event) + NAME_MAX + 1))

/* Writes all of p to stdout.  0 or -errno (EPIPE when the reader left). */
static int logs_write_all(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Copies the log of run id (fd, at path) from where it is to its current
 * end.  The range its size cap punched out reads as zeros, which are no
 * output: it is skipped, and named on stderr. */
static int logs_copy(int fd, const char *path, int64_t id)
{
    static char buf[LOGS_COPY_BUF];
    uint64_t ha = 0, hb = 0;
    bool hole = spool_log_hole(path, &ha, &hb);
    for (;;) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        size_t want = sizeof buf;
        if (hole && at >= 0 && (uint64_t)at >= ha && (uint64_t)at < hb) {
            fprintf(stderr,
                    "rein logs: run %" PRId64 ": bytes %" PRIu64 "-%" PRIu64
                    " were dropped when the log passed its size cap\n",
                    id, ha, hb);
            if (lseek(fd, (off_t)hb, SEEK_SET) < 0)
                return -errno;
            continue;
        }
        if (hole && at >= 0 && (uint64_t)at < ha && ha - (uint64_t)at < want)
            want = (size_t)(ha - (uint64_t)at);
        ssize_t r = read(fd, buf, want);
        if (r == 0)
            return 0;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        int rc = logs_write_all(buf, (size_t)r);
        if (rc < 0)
            return rc;
    }
}

/* The state, owner and output byte count of run id now; -ENOENT if it
 * vanished (deleted). */
static int logs_state(registry_t *reg, int64_t id, int *state,
                      char owner[REGISTRY_OWNER_ID_LEN], uint64_t *bytes)
{
    run_record_t r;
    int rc = registry_run_get(reg, id, &r);
    if (rc < 0)
        return rc;
    *state = r.state;
    *bytes = r.bytes;
    memcpy(owner, r.owner, REGISTRY_OWNER_ID_LEN);
    run_record_clear(&r);
    return 0;
}

/* The owner of a followed run, for the whole follow; reconciliation may
 * hand the run to another owner. */
struct logs_owner {
    char id[REGISTRY_OWNER_ID_LEN];
    bool known; /* rec holds its record; without one it is gone */
    owner_record_t rec;
    int lock_fd; /* its lock file, watched for closes, or -1 */
    int pidfd;   /* its process, readable once it exits, or -1 */
};

static void logs_owner_clear(struct logs_owner *o)
{
    if (o->known)
        owner_record_clear(&o->rec);
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    if (o->pidfd >= 0)
        close(o->pidfd);
    o->known = false;
    o->lock_fd = o->pidfd = -1;
}

/* Makes o the owner owner_id: its record, its lock file watched for
 * closes, and a pidfd on its process. */
static int logs_owner_set(registry_t *reg, int ifd, const char *owner_id,
                          struct logs_owner *o)
{
    logs_owner_clear(o);
    memcpy(o->id, owner_id, REGISTRY_OWNER_ID_LEN);
    if (registry_owner_get(reg, owner_id, &o->rec) < 0)
        return 0; /* no record: gone */
    o->known = true;
    if (o->rec.lock_path &&
        inotify_add_watch(ifd, o->rec.lock_path, IN_CLOSE | IN_DELETE_SELF) <
            0 &&
        errno != ENOENT)
        return -errno;
    o->lock_fd = owner_lock_open(&o->rec);
    o->pidfd = owner_pidfd_open(&o->rec);
    return 0;
}

/* True while the owner lives; its pidfd, once readable, settles it. */
static bool logs_owner_alive(const struct logs_owner *o)
{
    if (!o->known)
        return false;
    struct pollfd p = {.fd = o->pidfd, .events = POLLIN};
    if (o->pidfd >= 0 && poll(&p, 1, 0) > 0)
        return false;
    return owner_alive(&o->rec, o->lock_fd);
}

/* When fd's file is now shorter than where we are in it, someone cut it:
 * says so and goes back to its start, since new output is appended at the
 * new end. */
static void logs_rewind_if_truncated(int fd, const char *path)
{
    struct stat st;
    off_t at = lseek(fd, 0, SEEK_CUR);
    if (at > 0 && fstat(fd, &st) == 0 && st.st_size < at) {
        fprintf(stderr,
                "rein logs: %s: truncated from %lld to %lld bytes; "
                "following from its start\n",
                path, (long long)at, (long long)st.st_size);
        lseek(fd, 0, SEEK_SET);
    }
}

/* For an exited run: CLI_EXIT_OK when its log (fd) holds every byte the
 * registry counted, else names what is missing and returns the failure
 * status. */
static int logs_check_whole(int fd, const char *path, int64_t id,
                            uint64_t bytes)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size >= bytes)
        return CLI_EXIT_OK;
    fprintf(stderr,
            "rein logs: run %" PRId64 ": %s holds %lld of the %" PRIu64
            " bytes of output recorded (truncated, or cut short by a full "
            "disk or a crash)\n",
            id, path, (long long)st.st_size, bytes);
    return CLI_EXIT_FAILURE;
}

/* The directory part of path ("." for a bare name). */
static void logs_dirname(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, size, ".");
    else if (slash == path)
        snprintf(out, size, "/");
    else
        snprintf(out, size, "%.*s", (int)(slash - path), path);
}

/* True when one of the n bytes of inotify events names a registry file
 * (registry.db, -wal, -shm) in the state directory (watch wd). */
static bool logs_touches_registry(const char *ebuf, size_t n, int wd)
{
    size_t flen = strlen(REGISTRY_FILE);
    for (size_t off = 0; off + sizeof(struct inotify_event) <= n;) {
        const struct inotify_event *e =
            (const struct inotify_event *)(const void *)(ebuf + off);
        if (e->wd == wd && e->len && !strncmp(e->name, REGISTRY_FILE, flen))
            return true;
        off += sizeof *e + e->len;
    }
    return false;
}

static int logs_follow(registry_t *reg, int64_t id, const char *log_path)
{
    char state_dir[PATH_MAX], log_dir[PATH_MAX];
    char owner[REGISTRY_OWNER_ID_LEN] = "";
    struct logs_owner ow = {.lock_fd = -1, .pidfd = -1};
    int fd = -1, ifd = -1, st = CLI_EXIT_FAILURE, rc, open_err = ENOENT;
    rc = registry_state_dir(state_dir, sizeof state_dir);
    if (rc < 0)
        goto fail;
    logs_dirname(log_path, log_dir, sizeof log_dir);
    ifd = inotify_init1(IN_CLOEXEC);
    if (ifd < 0) {
        rc = -errno;
        goto fail;
    }
    /* IN_MASK_ADD: the log may live in the state directory itself, and a
     * second watch on one inode would otherwise replace the first. */
    int state_wd = inotify_add_watch(
        ifd, state_dir, IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE);
    if (state_wd < 0 ||
        inotify_add_watch(ifd, log_dir, IN_CREATE | IN_MOVED_TO | IN_MASK_ADD) <
            0) {
        rc = -errno;
        goto fail;
    }
    bool registry_changed = false;
    for (;;) {
        if (fd < 0) {
            fd = open(log_path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                open_err = errno;
            } else if (inotify_add_watch(ifd, log_path, IN_MODIFY) < 0) {
                rc = -errno;
                goto fail;
            }
        }
        if (fd >= 0) {
            logs_rewind_if_truncated(fd, log_path);
            if ((rc = logs_copy(fd, log_path, id)) < 0)
                goto fail;
        }
        int state = RUN_STARTING;
        uint64_t bytes = 0;
        rc = registry_changed ? registry_sync(reg) : 0;
        if (rc == 0)
            rc = logs_state(reg, id, &state, owner, &bytes);
        if (rc < 0) {
            fprintf(stderr, "rein logs: %s\n", registry_errmsg(reg));
            st = CLI_EXIT_FAILURE;
            goto out;
        }
        if (state != RUN_EXITED && strcmp(owner, ow.id) &&
            (rc = logs_owner_set(reg, ifd, owner, &ow)) < 0)
            goto fail;
        bool orphaned = state != RUN_EXITED && !logs_owner_alive(&ow);
        if (state == RUN_EXITED || orphaned) {
            if (fd < 0) {
                /* It will never come now: its writer is done. */
                rc = -open_err;
                goto fail;
            }
            /* Whatever landed between the copy and the look. */
            if ((rc = logs_copy(fd, log_path, id)) < 0)
                goto fail;
            st = CLI_EXIT_OK;
            if (orphaned)
                fprintf(stderr,
                        "rein logs: run %" PRId64 ": its owner is gone, so "
                        "nothing more will be logged (`rein reconcile` "
                        "records how it ended)\n",
                        id);
            else
                st = logs_check_whole(fd, log_path, id, bytes);
            goto out;
        }
        /* Sleep until something changes; which change does not matter,
         * each pass re-reads the file, the registry and the owner. */
        struct pollfd pf[2] = {{.fd = ifd, .events = POLLIN},
                               {.fd = ow.pidfd, .events = POLLIN}};
        if (poll(pf, ow.pidfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) {
            rc = -errno;
            goto fail;
        }
        registry_changed = false;
        if (pf[0].revents & POLLIN) {
            char ebuf[LOGS_EVENT_BUF]
                __attribute__((aligned(__alignof__(struct inotify_event))));
            ssize_t r = read(ifd, ebuf, sizeof ebuf);
            if (r < 0 && errno != EINTR) {
                rc = -errno;
                goto fail;
            }
            registry_changed =
                logs_touches_registry(ebuf, r > 0 ? (size_t)r : 0, state_wd);
        }
    }
fail:
    if (rc == -EPIPE)
        st = CLI_EXIT_OK; /* the reader (head, a pager) has had enough */
    else
        fprintf(stderr, "rein logs: %s: %s\n", log_path, rein_strerror(rc));
out:
    if (fd >= 0)
        close(fd);
    logs_owner_clear(&ow);
    if (ifd >= 0)
        close(ifd);
    return st;
}

int cli_logs(int argc, char **argv)
{
    const char *usage = "usage: rein logs ID [-f]";
    bool follow = false;
    const char *id_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow")) {
            follow = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "rein logs: unknown option '%s' (%s)\n", argv[i],
                    usage);
            return CLI_EXIT_USAGE;
        } else if (id_arg) {
            fprintf(stderr, "rein logs: one run id only (%s)\n", usage);
            return CLI_EXIT_USAGE;
        } else {
            id_arg = argv[i];
        }
    }
    int64_t id;
    if (!id_arg) {
        fprintf(stderr, "rein logs: which run? (%s)\n", usage);
        return CLI_EXIT_USAGE;
    }
    if (!cli_parse_run_id(id_arg, &id)) {
        fprintf(stderr, "rein logs: '%s' is not a run id (%s)\n", id_arg,
                usage);
        return CLI_EXIT_USAGE;
    }
    registry_t *reg;
    int st = cli_registry_open("logs", &reg);
    if (st != CLI_EXIT_OK)
        return st;
    run_record_t r;
    int rc = registry_run_get(reg, id, &r);
    if (rc == -ENOENT) {
        fprintf(stderr, "rein logs: no run %" PRId64 " (see rein ps --all)\n",
                id);
        registry_close(reg);
        return CLI_EXIT_USAGE;
    }
    if (rc < 0) {
        fprintf(stderr, "rein logs: %s\n", registry_errmsg(reg));
        registry_close(reg);
        return CLI_EXIT_FAILURE;
    }
    if (!r.log_path || !*r.log_path) {
        fprintf(stderr, "rein logs: run %" PRId64 " has no log\n", id);
        st = CLI_EXIT_FAILURE;
    } else if (follow) {
        st = logs_follow(reg, id, r.log_path);
    } else {
        int fd = open(r.log_path, O_RDONLY | O_CLOEXEC);
        rc = fd < 0 ? -errno : logs_copy(fd, r.log_path, id);
        if (rc < 0 && rc != -EPIPE) {
            fprintf(stderr, "rein logs: %s: %s\n", r.log_path,
                    rein_strerror(rc));
            st = CLI_EXIT_FAILURE;
        } else if (rc == 0 && r.state == RUN_EXITED) {
            st = logs_check_whole(fd, r.log_path, id, r.bytes);
        }
        if (fd >= 0)
            close(fd);
    }
    run_record_clear(&r);
    registry_close(reg);
    return st;
}
