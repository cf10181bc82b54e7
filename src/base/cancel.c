/*
 * cancel.c — cancel tokens (rein.h: rein_cancel_*).
 *
 * A token is an atomic flag and an eventfd.  Triggering stores the flag and
 * writes the eventfd, both async-signal-safe, so a signal handler or
 * another thread can stop a call blocked in a loop that watches the fd.
 * The eventfd is never drained: once raised, a token stays readable, which
 * is what every later waiter on it should see.
 */
#include "base/cancel.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct rein_cancel {
    atomic_bool triggered;
    int efd;
};

int rein_cancel_new(rein_cancel_t **out)
{
    if (!out)
        return -EINVAL;
    rein_cancel_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->efd < 0) {
        int e = -errno;
        free(c);
        return e;
    }
    atomic_init(&c->triggered, false);
    *out = c;
    return 0;
}

void rein_cancel_trigger(rein_cancel_t *c)
{
    if (!c || atomic_exchange(&c->triggered, true))
        return;
    uint64_t one = 1;
    int saved = errno; /* keep a signal handler from clobbering errno */
    ssize_t w = write(c->efd, &one, sizeof one);
    (void)w;
    errno = saved;
}

bool rein_cancel_triggered(const rein_cancel_t *c)
{
    return c && atomic_load(&((rein_cancel_t *)c)->triggered);
}

int cancel_fd(const rein_cancel_t *c)
{
    return c ? c->efd : -1;
}

void rein_cancel_free(rein_cancel_t *c)
{
    if (!c)
        return;
    close(c->efd);
    free(c);
}
