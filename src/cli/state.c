/*
 * state.c — the operator tools' way into the state directory's registry.
 *
 * ps, logs and metrics only read.  They still open read-write first, so a
 * fresh machine gets an empty registry instead of an error, and fall back
 * to a read-only open when the registry cannot be written: looking at runs
 * must keep working exactly when something is wrong with the disk.
 *
 * Also what they share about the registry's contents: how a run id is
 * written, and whether a run's owner is still there to record its end.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "rein.h"
#include "supervise/owner.h"

void cli_state_dir_error(const char *verb, const char *dir, int err)
{
    if (dir && dir[0])
        fprintf(stderr, "rein %s: state directory %s: %s\n", verb, dir,
                rein_strerror(err));
    else
        fprintf(stderr, "rein %s: state directory: %s\n", verb,
                rein_strerror(err));
}

int cli_registry_open(const char *verb, registry_t **out)
{
    char dir[PATH_MAX] = "";
    char msg[REGISTRY_ERRMSG_LEN];
    /* The lookup fills in the path before it creates the directory. */
    int rc = registry_state_dir(dir, sizeof dir);
    if (rc < 0) {
        cli_state_dir_error(verb, rc == -ENAMETOOLONG ? NULL : dir, rc);
        return CLI_EXIT_FAILURE;
    }
    rc = registry_open_ex(dir, false, out, msg, sizeof msg);
    if (rc < 0 && registry_err_unwritable(rc))
        rc = registry_open_ex(dir, true, out, msg, sizeof msg);
    if (rc < 0) {
        fprintf(stderr, "rein %s: %s\n", verb, msg);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

bool cli_parse_run_id(const char *s, int64_t *id)
{
    if (!s || *s < '1' || *s > '9')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *id = v;
    return true;
}

cli_owner_t cli_owner_check(registry_t *reg, const char *owner_id)
{
    owner_record_t o;
    if (registry_owner_get(reg, owner_id, &o) < 0)
        return CLI_OWNER_UNKNOWN;
    int fd = owner_lock_open(&o);
    bool alive = owner_alive(&o, fd);
    if (fd >= 0)
        close(fd);
    owner_record_clear(&o);
    return alive ? CLI_OWNER_ALIVE : CLI_OWNER_GONE;
}
