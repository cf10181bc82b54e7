/*
 * watchman.h — the process that ends a `rein serve` server's runs when the
 * server dies without stopping (watchman.c says how and why).
 */
#ifndef REIN_CLI_WATCHMAN_H
#define REIN_CLI_WATCHMAN_H

/* After end of file, the longest the watchman waits for the server to be
 * gone before it reconciles anyway (reconciling early is safe: a live
 * owner's runs are never touched, they would only be left running). */
#define WATCHMAN_EXIT_WAIT_MS 5000

/* Starts the watchman for this process, reconciling state_dir (NULL: the
 * default) once this process dies.  Call it before the supervisor opens:
 * it reaps a child of its own.  0 with *bye_fd the pipe's write end
 * (close-on-exec), or a negative error with *bye_fd -1. */
int watchman_start(const char *state_dir, int *bye_fd);

/* Tells the watchman this process stops cleanly (its runs are ended), and
 * closes bye_fd; nothing for -1. */
void watchman_bye(int bye_fd);

/* The watchman itself: `rein reconcile --watch FD --pid PID [--state-dir
 * DIR]`, argv[0] "reconcile".  Returns the exit status. */
int watchman_main(int argc, char **argv);

#endif
