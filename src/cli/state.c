/*
 * state.c — the operator tools' way into the state directory's registry.
 *
 * ps, logs and metrics only read.  They still open read-write first, so a
 * fresh machine gets an empty registry instead of an error, and fall back
 * to a read-only open when the registry cannot be written: looking at runs
 * must keep working exactly when something is wrong with the disk.
 */
#include <limits.h>
#include <stdio.h>

#include "cli/cli.h"
#include "rein.h"

int cli_registry_open(const char *verb, registry_t **out)
{
    char dir[PATH_MAX];
    char msg[REGISTRY_ERRMSG_LEN];
    int rc = registry_state_dir(dir, sizeof dir);
    if (rc < 0) {
        fprintf(stderr, "rein %s: state directory: %s\n", verb,
                rein_strerror(rc));
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
