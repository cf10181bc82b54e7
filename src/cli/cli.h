/*
 * cli.h — what the verb files of the rein command share: the exit codes
 * and the verbs that live outside main.c.
 *
 * Each verb lives in its own file and is entered as fn(argc, argv) with
 * argv[0] the verb's name; it returns the process exit status.
 */
#ifndef REIN_CLI_CLI_H
#define REIN_CLI_CLI_H

#include <stdbool.h>

#include "supervise/registry.h"

/* Exit codes of rein itself.  A proxied command's own status passes
 * through unchanged; these are used only when it did not run or rein
 * failed around it. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_USAGE 2      /* bad usage of one of rein's own verbs */
#define CLI_EXIT_FAILURE 125  /* rein failed, or refused to run the command */
#define CLI_EXIT_NOEXEC 126   /* the command exists but cannot be executed */
#define CLI_EXIT_NOTFOUND 127 /* the command was not found */

/* How long rein kill waits for a live owner's `starting` run to be
 * recorded running (or ended).  Its owner commits right after the spawn,
 * or, the registry held by another writer, gives up after the busy
 * timeout and ends the child itself; the second more covers that end. */
#define CLI_KILL_STARTING_WAIT_MS (REGISTRY_BUSY_TIMEOUT_MS + 1000)

/* `rein run` once its own stdin has ended (not a terminal; run.c): how
 * long the command's terminal foreground may wait for keys in raw mode,
 * on the terminal alone, before rein hangs it up.  Nothing can end such a
 * wait, so any delay is pure loss; the second is there because the
 * terminal's mode and the wait are read at two instants, and a program
 * may flip to raw mode for a moment (a shell's line editor between
 * commands) without meaning to wait in it: several looks have to agree
 * first. */
#define RUN_NO_INPUT_HANGUP_MS 1000
/* The same for a wait with a timeout of its own (select, poll, epoll, or a
 * read with VMIN 0): longer than a terminal query waits for its answer
 * (termenv, behind many Go CLIs, waits 5 s for a colour report), so a
 * program that asks and goes on is not cut short, while one that keeps
 * waiting for keys by timeouts (top's refresh) is still hung up. */
#define RUN_NO_INPUT_HANGUP_TIMED_MS 10000

/*
 * Opens the registry of the state directory for an operator tool: read-write
 * when possible (creating an empty one on first use), else read-only, so a
 * registry on a read-only file system can still be looked at.  On failure
 * prints one line naming verb and returns the exit status to use.
 */
int cli_registry_open(const char *verb, registry_t **out);
/* Prints one line for verb: the state directory dir (NULL or "" when its
 * path is not known) could not be set up, err saying why. */
void cli_state_dir_error(const char *verb, const char *dir, int err);

/* A run id as the operator verbs take it: a positive decimal number with
 * no sign, no leading zero, no space, nothing after it, that fits. */
bool cli_parse_run_id(const char *s, int64_t *id);

/* Whether a run's owner (the rein process that started it) lives. */
typedef enum cli_owner {
    CLI_OWNER_UNKNOWN = 0, /* no record of it: the registry never had one */
    CLI_OWNER_ALIVE,
    CLI_OWNER_GONE, /* dead: its runs are orphaned until reconciled */
} cli_owner_t;

/* The liveness of owner_id by the one test reconciliation uses
 * (supervise/owner.h), so that a run shown as orphaned is one `rein
 * reconcile` ends. */
cli_owner_t cli_owner_check(registry_t *reg, const char *owner_id);

/* Reconciles state_dir (NULL: the default) for verb: CLI_EXIT_OK with
 * *st, or the exit status after one line on stderr naming what failed. */
int cli_reconcile_state(const char *verb, const char *state_dir,
                        rein_reconcile_stats_t *st);

/* rein ps [--json] [--all] */
int cli_ps(int argc, char **argv);
/* rein logs ID [-f] */
int cli_logs(int argc, char **argv);
/* rein metrics */
int cli_metrics(int argc, char **argv);
/* rein squash --as "COMMAND" [--exit N] ... < output */
/* The usage lines of verbs whose help and errors must agree. */
#define CLI_SQUASH_USAGE                                                   \
    "rein squash [--as \"COMMAND\"] [--exit N] [--duration MS] "           \
    "[--log PATH] [--budget BYTES] [--cols N] [--stream] < output"
#define CLI_GRAMMAR_USAGE "rein grammar check FILE [SAMPLE]"

int cli_squash(int argc, char **argv);
/* rein grammar check FILE [SAMPLE] */
int cli_grammar(int argc, char **argv);
/* `rein run [--raw|--json|--context] [--] CMD ARGS...`.  argv[0] is "run".
 * With shorthand, argv[0] is already the command (`rein CMD ARGS...`) and
 * no options are read.  Returns the process exit status. */
int cli_run(int argc, char **argv, bool shorthand);
/* rein kill ID [--signal S] [--grace-ms N] */
int cli_kill(int argc, char **argv);
/* rein reconcile */
int cli_reconcile(int argc, char **argv);
/* rein serve [--profile codex|mish] [--state-dir DIR] */
int cli_serve(int argc, char **argv);

#endif
