/*
 * ptyio.h — pseudo-terminal set-up shared by the PTY session API (pty.c)
 * and the CLI proxy (cli/run.c).
 *
 * Both open a master/slave pair sized for the child before it starts, and
 * both resize it later; keeping the open/resize steps here means the two
 * front ends cannot drift apart on flags (O_CLOEXEC, O_NOCTTY) or order
 * (the size is set on the slave before the child can query it).
 */
#ifndef REIN_TERM_PTYIO_H
#define REIN_TERM_PTYIO_H

#include <termios.h>

/* Opens a master/slave pair, both O_CLOEXEC and O_NOCTTY, with the window
 * size cols x rows set before anyone can read it.  tio (may be NULL): the
 * slave's initial termios.  0 or -errno; on failure nothing stays open. */
int ptyio_open(unsigned cols, unsigned rows, const struct termios *tio,
               int *master, int *slave);

/* Sets the window size through fd (master or slave); the kernel then sends
 * SIGWINCH to the terminal's foreground group.  0 or -errno. */
int ptyio_resize(int fd, unsigned cols, unsigned rows);

#endif
