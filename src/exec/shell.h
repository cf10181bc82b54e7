/*
 * shell.h — internals of the shell module shared with its tests.
 *
 * The public API is rein_shell_* in rein.h.  The one thing here is the
 * program the module runs: always /bin/bash in a build, swappable so a test
 * can see what happens when bash is missing without touching /bin.
 */
#ifndef REIN_EXEC_SHELL_H
#define REIN_EXEC_SHELL_H

/* The bash the shell module runs. */
#define SHELL_BASH_PATH "/bin/bash"

/* Makes later shells run path instead of SHELL_BASH_PATH (NULL restores
 * it).  For tests: not thread-safe, call it before any shell runs. */
void shell_set_program(const char *path);

#endif
