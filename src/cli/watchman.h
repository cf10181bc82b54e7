/*
 * watchman.h — the process that ends an owner's runs (`rein serve`, `rein
 * run`) when the owner dies without stopping (watchman.c says how and why).
 */
#ifndef REIN_CLI_WATCHMAN_H
#define REIN_CLI_WATCHMAN_H

#include <sys/types.h>

/* After end of file, the longest the watchman waits for the owner to be
 * gone before it reconciles anyway (reconciling early is safe: a live
 * owner's runs are never touched, they would only be left running). */
#define WATCHMAN_EXIT_WAIT_MS 5000

/* A watchman being started: its first process and the pipe. */
typedef struct watchman {
    pid_t pid;  /* the first process, until watchman_settle reaps it; or -1 */
    int bye_fd; /* the pipe's write end (close-on-exec), or -1 */
} watchman_t;

/* No watchman (yet): what a watchman_t starts as. */
#define WATCHMAN_INIT {.pid = -1, .bye_fd = -1}

/* Starts the watchman for this process, which will reconcile state_dir
 * (NULL: the default, as REIN_STATE_DIR says) once this process dies,
 * without waiting for it: other work may overlap its start.  Call
 * watchman_settle before the supervisor opens.  0, or a negative error
 * with w->pid and w->bye_fd -1. */
int watchman_spawn(const char *state_dir, watchman_t *w);

/* Waits until the watchman holds this process's identity, reaping its
 * first process (so call it before the supervisor may make this process
 * a subreaper: the watchman must not become our child).  0 when it
 * watches; a negative error (it said why on stderr) with w->bye_fd
 * closed and -1. */
int watchman_settle(watchman_t *w);

/* watchman_spawn, then watchman_settle. */
int watchman_start(const char *state_dir, watchman_t *w);

/* Tells the watchman this process stops cleanly (its runs are ended), and
 * closes the pipe; settles first if needed, nothing when there is none. */
void watchman_bye(watchman_t *w);

/* The watchman itself: `rein reconcile --watch FD --pid PID [--state-dir
 * DIR]`, argv[0] "reconcile".  Returns the exit status. */
int watchman_main(int argc, char **argv);

#endif
