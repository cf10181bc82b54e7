/*
 * cli.h — the verbs of the rein command that live outside main.c.
 *
 * Each takes the verb's own argv (argv[0] is the verb) and returns the exit
 * status: 0, EXIT_USAGE for bad usage, EXIT_REIN_FAILURE when rein fails.
 */
#ifndef REIN_CLI_CLI_H
#define REIN_CLI_CLI_H

#define EXIT_USAGE 2
#define EXIT_REIN_FAILURE 125

/* rein serve [--profile codex|mish] [--state-dir DIR]: the MCP server on
 * stdin/stdout until stdin ends or SIGTERM/SIGINT/SIGHUP; then 0. */
int cli_serve(int argc, char **argv);

#endif
