/*
 * shell.h — internals of the shell module shared with its tests.
 *
 * The public API is rein_shell_* in rein.h.  Here: the program the module
 * runs (always /bin/bash in a build, swappable so a test can see what
 * happens when bash is missing without touching /bin), the bound on a
 * session's lingering output channels and the length past which a
 * one-shot command leaves argv, which tests probe at their edges.
 */
#ifndef REIN_EXEC_SHELL_H
#define REIN_EXEC_SHELL_H

/* The most output channels a persistent session keeps open for background
 * jobs still holding them after their run (see shell.c, "Output").  Each
 * costs one fd of the host; past this the oldest is closed, and a job
 * still writing to it gets EPIPE (SIGPIPE) like any writer whose reader is
 * gone.  Eight covers a handful of servers and watchers started with `&`
 * while 64 sessions stay within half of the usual 1024-fd soft limit. */
#define SHELL_LINGER_MAX 8

/* The longest argument Linux passes to exec, its NUL included
 * (MAX_ARG_STRLEN: 32 pages of 4 KiB).  A one-shot command longer than
 * this with its NUL reaches bash through a memfd instead of its argv,
 * where exec would refuse it with E2BIG. */
#define SHELL_ARG_MAX (128u * 1024u)

/* The bash the shell module runs. */
#define SHELL_BASH_PATH "/bin/bash"

/* Makes later shells run path instead of SHELL_BASH_PATH (NULL restores
 * it).  For tests: not thread-safe, call it before any shell runs. */
void shell_set_program(const char *path);

#endif
