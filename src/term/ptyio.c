/*
 * ptyio.c — opening and resizing pseudo-terminals (see ptyio.h).
 */
#include "term/ptyio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

int ptyio_resize(int fd, unsigned cols, unsigned rows)
{
    struct winsize ws = {.ws_row = (unsigned short)rows,
                         .ws_col = (unsigned short)cols};
    if (ioctl(fd, TIOCSWINSZ, &ws) < 0)
        return -errno;
    return 0;
}

int ptyio_open(unsigned cols, unsigned rows, const struct termios *tio,
               int *master, int *slave)
{
    char name[128];
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), s = -1, rc;
    if (m < 0)
        return -errno;
    if (grantpt(m) < 0 || unlockpt(m) < 0 ||
        ptsname_r(m, name, sizeof name) != 0) {
        rc = -errno;
        goto fail;
    }
    s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) {
        rc = -errno;
        goto fail;
    }
    if (tio && tcsetattr(s, TCSANOW, tio) < 0) {
        rc = -errno;
        goto fail;
    }
    if ((rc = ptyio_resize(s, cols, rows)) < 0)
        goto fail;
    *master = m;
    *slave = s;
    return 0;
fail:
    if (s >= 0)
        close(s);
    close(m);
    return rc;
}
