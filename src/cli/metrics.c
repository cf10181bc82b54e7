/*
 * metrics.c — `rein metrics`: the registry's counters in Prometheus text.
 *
 * The counters live in the shared registry, so this is the total of every
 * rein process using the state directory, and it survives restarts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int cli_metrics(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr,
                "rein metrics: unexpected argument '%s' (usage: rein "
                "metrics)\n",
                argv[1]);
        return CLI_EXIT_USAGE;
    }
    registry_t *reg;
    int st = cli_registry_open("metrics", &reg);
    if (st != CLI_EXIT_OK)
        return st;
    char *text;
    int rc = registry_metrics_text(reg, &text);
    if (rc < 0) {
        fprintf(stderr, "rein metrics: %s\n", registry_errmsg(reg));
        registry_close(reg);
        return CLI_EXIT_FAILURE;
    }
    fputs(text, stdout);
    free(text);
    registry_close(reg);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}
