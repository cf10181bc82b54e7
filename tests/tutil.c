/* tutil.c — see tutil.h. */
#include "tutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
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

static void tu_on_readable(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    *(bool *)data = true;
}

char *tu_loop_read_line(loop_t *l, int fd, buf_t *acc, uint64_t timeout_ms)
{
    uint64_t deadline = loop_clock_ms() + timeout_ms;
    for (;;) {
        char *nl = acc->len ? memchr(acc->p, '\n', acc->len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - acc->p);
            char *line = strndup(acc->p, n);
            buf_consume(acc, n + 1);
            return line;
        }
        char tmp[65536];
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r > 0) {
            buf_append(acc, tmp, (size_t)r);
            continue;
        }
        if (r == 0)
            return NULL;
        uint64_t now = loop_clock_ms();
        if (now >= deadline)
            return NULL;
        /* Nothing yet: run the loop (the server is in this thread) until
         * fd is readable or the time is up. */
        bool ready = false;
        if (loop_io_add(l, fd, LOOP_READ, tu_on_readable, &ready) < 0)
            return NULL;
        while (!ready && (now = loop_clock_ms()) < deadline)
            loop_run_once(l, (int)(deadline - now));
        loop_io_del(l, fd);
    }
}
