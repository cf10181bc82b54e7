/*
 * cli.h — the verbs of the rein command that live outside main.c, and the
 * exit codes they share.
 */
#ifndef REIN_CLI_CLI_H
#define REIN_CLI_CLI_H

#include <stdbool.h>

/* Exit codes of rein itself.  A proxied command's own status passes
 * through unchanged; these are used only when it did not run or rein
 * failed around it. */
#define CLI_EXIT_USAGE 2      /* bad usage of one of rein's own verbs */
#define CLI_EXIT_FAILURE 125  /* rein failed, or refused to run the command */
#define CLI_EXIT_NOEXEC 126   /* the command exists but cannot be executed */
#define CLI_EXIT_NOTFOUND 127 /* the command was not found */

/* `rein run [--raw|--json|--context] [--] CMD ARGS...`.  argv[0] is "run".
 * With shorthand, argv[0] is already the command (`rein CMD ARGS...`) and
 * no options are read.  Returns the process exit status. */
int cli_run(int argc, char **argv, bool shorthand);

#endif
