/*
 * events.c — the JSONL event log (see events.h).
 *
 * The line is built in full before the one write(): a partial line in a
 * shared file would corrupt the next writer's line as well as ours.
 */
#include "supervise/events.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/loop.h"
#include "supervise/registry.h"

struct events {
    int fd;
    char owner[REGISTRY_OWNER_ID_LEN];
    char path[PATH_MAX];
};

static const char *const events_names[EVENTS_TYPE_COUNT] = {
    [EVENTS_SPAWN] = "spawn",         [EVENTS_OUTPUT] = "output",
    [EVENTS_CANCEL] = "cancel",       [EVENTS_EXIT] = "exit",
    [EVENTS_CLEANUP] = "cleanup",     [EVENTS_RECONCILE] = "reconcile",
    [EVENTS_LEASE_STEAL] = "lease_steal",
    [EVENTS_DESCENDANT] = "descendant",
    [EVENTS_ESCAPE] = "ownership_escape",
    [EVENTS_REGISTRY_ERROR] = "registry_error",
    [EVENTS_STRAY] = "stray",
};

const char *events_type_name(events_type_t type)
{
    if ((unsigned)type >= EVENTS_TYPE_COUNT)
        return "unknown";
    return events_names[type];
}

static int events_open_path(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                  EVENTS_FILE_MODE);
    return fd < 0 ? -errno : fd;
}

/*
 * Makes ev->fd the file at ev->path with room in it: rotates a full one
 * (rename to EVENTS_OLD_SUFFIX, new file), or follows another writer's
 * rotation (our file is no longer at the path).  Under an flock on our
 * file, which every writer that could rename it takes first: a writer
 * that waited finds the path moved on and only reopens.  On failure the
 * old fd is kept: an event is better written to a full file than lost.
 */
static void events_roll(events_t *ev)
{
    struct stat fst, pst;
    if (fstat(ev->fd, &fst) < 0)
        return;
    if (fst.st_nlink > 0 && fst.st_size < (off_t)EVENTS_MAX_BYTES &&
        stat(ev->path, &pst) == 0 && pst.st_ino == fst.st_ino &&
        pst.st_dev == fst.st_dev)
        return; /* the common case: ours, with room */
    while (flock(ev->fd, LOCK_EX) < 0)
        if (errno != EINTR)
            return;
    bool ours = stat(ev->path, &pst) == 0 && pst.st_ino == fst.st_ino &&
                pst.st_dev == fst.st_dev;
    if (ours && fst.st_size >= (off_t)EVENTS_MAX_BYTES) {
        char old[PATH_MAX + sizeof EVENTS_OLD_SUFFIX];
        snprintf(old, sizeof old, "%s%s", ev->path, EVENTS_OLD_SUFFIX);
        ours = rename(ev->path, old) < 0;
    }
    /* Ours and not renamed: the size check above raced a rotation of
     * another name; nothing to do.  Otherwise the path is a new file. */
    int fd = ours ? -1 : events_open_path(ev->path);
    flock(ev->fd, LOCK_UN);
    if (fd >= 0) {
        close(ev->fd);
        ev->fd = fd;
    }
}

int events_open(const char *dir, const char *owner_id, events_t **out)
{
    *out = NULL;
    events_t *ev = calloc(1, sizeof *ev);
    if (!ev)
        return -ENOMEM;
    /* Room for the rotated name too. */
    if ((size_t)snprintf(ev->path, sizeof ev->path, "%s/%s", dir,
                         EVENTS_FILE) >=
        sizeof ev->path - sizeof EVENTS_OLD_SUFFIX) {
        free(ev);
        return -ENAMETOOLONG;
    }
    ev->fd = events_open_path(ev->path);
    if (ev->fd < 0) {
        int rc = -errno;
        free(ev);
        return rc;
    }
    snprintf(ev->owner, sizeof ev->owner, "%s", owner_id ? owner_id : "");
    *out = ev;
    return 0;
}

void events_close(events_t *ev)
{
    if (!ev)
        return;
    close(ev->fd);
    free(ev);
}

int events_emit(events_t *ev, events_type_t type, int64_t run_id,
                json_t *extra)
{
    int rc;
    char *line = NULL;
    json_t *o = NULL;
    if ((unsigned)type >= EVENTS_TYPE_COUNT ||
        (extra && !json_is_object(extra))) {
        rc = -EINVAL;
        goto out;
    }
    o = json_pack("{s:I, s:s, s:I, s:s}", "ts", (json_int_t)loop_wall_ms(),
                  "type", events_names[type], "run", (json_int_t)run_id,
                  "owner", ev->owner);
    if (!o || (extra && json_object_update_missing(o, extra) < 0)) {
        rc = -ENOMEM;
        goto out;
    }
    /* jansson escapes control characters inside strings and compact
     * output puts none between members: the dump is one line. */
    line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!line) {
        rc = -ENOMEM;
        goto out;
    }
    size_t len = strlen(line);
    if (len + 1 > EVENTS_MAX_LINE) {
        rc = -E2BIG;
        goto out;
    }
    line[len] = '\n'; /* over the NUL: json_dumps' buffer ends there */
    events_roll(ev);
    ssize_t w;
    do
        w = write(ev->fd, line, len + 1);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        rc = -errno;
    else
        rc = (size_t)w == len + 1 ? 0 : -ENOSPC; /* short: the disk filled */
out:
    free(line);
    json_decref(o);
    json_decref(extra);
    return rc;
}

int events_output(events_t *ev, events_heartbeat_t *hb, int64_t run_id,
                  uint64_t bytes, int64_t now_ms)
{
    if (hb->emitted && now_ms - hb->last_ms < EVENTS_HEARTBEAT_MS)
        return 0;
    json_t *x = json_pack("{s:I, s:I}", "bytes", (json_int_t)bytes,
                          "new_bytes", (json_int_t)(bytes - hb->last_bytes));
    if (!x)
        return -ENOMEM;
    int rc = events_emit(ev, EVENTS_OUTPUT, run_id, x);
    if (rc < 0)
        return rc;
    hb->emitted = true;
    hb->last_ms = now_ms;
    hb->last_bytes = bytes;
    return 1;
}
