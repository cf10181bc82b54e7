/* tutil.c — see tutil.h. */
#include "tutil.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int tu_read_all(int fd, buf_t *out)
{
    char tmp[4096];
    for (;;) {
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n > 0) {
            if (buf_append(out, tmp, (size_t)n) < 0)
                return -ENOMEM;
            continue;
        }
        if (n == 0 || errno == EIO)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

int tu_run(spawn_opts_t *o, buf_t *out)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    o->fd_out = o->fd_err = p[1];
    pid_t pid;
    int pidfd, code;
    int rc = spawn_start(o, &pid, &pidfd, NULL);
    close(p[1]);
    if (rc < 0) {
        close(p[0]);
        return rc;
    }
    tu_read_all(p[0], out);
    close(p[0]);
    rc = spawn_reap(pid, pidfd, &code);
    if (pidfd >= 0)
        close(pidfd);
    return rc < 0 ? rc : code;
}
