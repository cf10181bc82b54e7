/*
 * main.c — the rein command: verb dispatch, --help, --version.
 *
 * rein is one binary with verbs (serve, run, ps, kill, logs, ...).  This file
 * only parses the first word and hands off; each verb lives in its own file
 * as it lands.  A first word that is not a verb (and not an option) is a
 * command to proxy: `rein make -j8` is `rein run -- make -j8`.  Exit codes:
 * 0 success, 2 bad usage of rein's own verbs, 125 rein's own failure (so a
 * proxied command's exit codes stay its own).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "rein.h"

#define EXIT_USAGE CLI_EXIT_USAGE

struct verb {
    const char *name;
    const char *usage;
    const char *summary;
    int (*fn)(int argc, char **argv);
};

static int verb_help(int argc, char **argv);

static int verb_run(int argc, char **argv)
{
    return cli_run(argc, argv, false);
}

static const struct verb verbs[] = {
    {"serve", "rein serve [--profile codex|mish] [--state-dir DIR]",
     "run the MCP server on stdin/stdout (JSON-RPC 2.0, one message a line)",
     cli_serve},
    {"ps", "rein ps [--json] [--all]",
     "list the runs of every rein process (--all: finished ones too)",
     cli_ps},
    {"logs", "rein logs ID [-f]",
     "print a run's full output (-f: follow until the run exits)", cli_logs},
    {"metrics", "rein metrics", "print the run counters (Prometheus text)",
     cli_metrics},
    {"kill", "rein kill ID [--signal S] [--grace-ms N]",
     "end a run: signal S (default TERM) to its whole tree, KILL after the "
     "grace",
     cli_kill},
    {"reconcile", "rein reconcile",
     "end what dead rein processes left running; record the rest lost",
     cli_reconcile},
    {"squash", CLI_SQUASH_USAGE,
     "condense captured output as rein would show it", cli_squash},
    {"grammar", CLI_GRAMMAR_USAGE,
     "validate a grammar file and show what it matches in a sample",
     cli_grammar},
    {"run", "rein run [--raw|--json|--context] [--] CMD [ARGS...]",
     "run a command in a PTY and print its condensed output",
     verb_run},
    {"help", "rein help [VERB]", "show help for rein or one of its verbs",
     verb_help},
};

#define NVERBS (sizeof verbs / sizeof verbs[0])

static const struct verb *find_verb(const char *name)
{
    for (size_t i = 0; i < NVERBS; i++)
        if (!strcmp(verbs[i].name, name))
            return &verbs[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f,
            "rein %s — the process runtime an AI coding agent stands on\n"
            "\n"
            "usage: rein VERB [ARGS...]\n"
            "       rein CMD [ARGS...]   (CMD not a verb: rein run -- CMD)\n"
            "       rein --help | --version\n"
            "\n"
            "verbs:\n",
            REIN_VERSION_STRING);
    for (size_t i = 0; i < NVERBS; i++)
        fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\n"
               "exit status: 0 on success, 2 for bad usage of a rein verb,\n"
               "125 when rein itself fails or refuses a dangerous command;\n"
               "a proxied command's own status otherwise.  See rein(1).\n");
}

static int verb_help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return 0;
    }
    if (argc > 2) {
        fprintf(stderr, "rein help: one verb at a time (usage: rein help "
                        "[VERB])\n");
        return EXIT_USAGE;
    }
    const struct verb *v = find_verb(argv[1]);
    if (!v) {
        fprintf(stderr, "rein help: unknown verb '%s'\n", argv[1]);
        return EXIT_USAGE;
    }
    printf("usage: %s\n\n%s\n", v->usage, v->summary);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("rein %s\n", REIN_VERSION_STRING);
        return 0;
    }
    const struct verb *v = find_verb(argv[1]);
    if (!v && argv[1][0] == '-') {
        fprintf(stderr, "rein: unknown option '%s' (try rein --help)\n",
                argv[1]);
        return EXIT_USAGE;
    }
    if (!v)
        return cli_run(argc - 1, argv + 1, true);
    if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
        char *hargv[] = {(char *)"help", argv[1], NULL};
        return verb_help(2, hargv);
    }
    return v->fn(argc - 1, argv + 1);
}
