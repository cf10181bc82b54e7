/*
 * loop.c — the event loop (see loop.h).
 *
 * epoll for fds; a binary min-heap of timers, dispatched after I/O in each
 * iteration; pidfds (or a SIGCHLD signalfd) for child exits; a signalfd for
 * other signals.  Watcher structs removed during a dispatch are only marked
 * dead and freed at the end of the iteration, so an epoll event already
 * fetched for them in the same batch is ignored instead of touching freed
 * memory.
 */
#include "base/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Events fetched per epoll_wait call. */
#define LOOP_MAX_EVENTS 64

enum watcher_kind { W_IO, W_CHILD, W_SIGNALFD };

struct watcher {
    enum watcher_kind kind;
    int fd;
    unsigned events;
    bool dead;
    loop_io_fn io_fn;
    loop_child_fn child_fn;
    void *data;
    pid_t pid;            /* W_CHILD */
    struct watcher *next; /* all watchers, or the dead list */
};

struct timer {
    uint64_t deadline;
    uint64_t id;
    loop_timer_fn fn;
    void *data;
};

struct sig_handler {
    int signo;
    loop_signal_fn fn;
    void *data;
};

struct loop {
    int epfd;
    bool use_pidfd;
    bool stop;
    uint64_t now;
    struct watcher *watchers; /* live, singly linked */
    struct watcher *dead;     /* removed this iteration */
    struct timer *timers;     /* min-heap on deadline */
    size_t ntimers, captimers;
    uint64_t next_timer_id;
    /* signalfd: SIGCHLD in fallback mode plus the signals of loop_signal_add */
    int sigfd;
    struct watcher *sigw;
    sigset_t sigmask;     /* signals routed to sigfd */
    sigset_t saved_mask;  /* the thread's mask before we blocked anything */
    bool mask_saved;
    struct sig_handler *sigs;
    size_t nsigs;
    bool check_children; /* fallback: poll watched children next iteration */
    loop_orphan_fn orphan_fn;
    void *orphan_data;
};

uint64_t loop_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t loop_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool pidfd_supported(void)
{
    const char *e = getenv("REIN_PIDFD");
    if (e && !strcmp(e, "0"))
        return false;
    int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (fd < 0)
        return errno != ENOSYS && errno != EINVAL;
    close(fd);
    return true;
}

int loop_new(loop_t **out)
{
    loop_t *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->sigfd = -1;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        int e = -errno;
        free(l);
        return e;
    }
    l->use_pidfd = pidfd_supported();
    sigemptyset(&l->sigmask);
    l->now = loop_clock_ms();
    l->next_timer_id = 1;
    *out = l;
    return 0;
}

static void free_list(struct watcher *w)
{
    while (w) {
        struct watcher *n = w->next;
        free(w);
        w = n;
    }
}

void loop_free(loop_t *l)
{
    if (!l)
        return;
    free_list(l->watchers);
    free_list(l->dead);
    if (l->sigfd >= 0)
        close(l->sigfd);
    if (l->mask_saved)
        pthread_sigmask(SIG_SETMASK, &l->saved_mask, NULL);
    close(l->epfd);
    free(l->timers);
    free(l->sigs);
    free(l);
}

int loop_fd(const loop_t *l)
{
    return l->epfd;
}

bool loop_uses_pidfd(const loop_t *l)
{
    return l->use_pidfd;
}

uint64_t loop_now(loop_t *l)
{
    return l->now;
}

size_t loop_timer_count(const loop_t *l)
{
    return l->ntimers;
}

size_t loop_watch_count(const loop_t *l)
{
    size_t n = 0;
    for (const struct watcher *w = l->watchers; w; w = w->next)
        n++;
    return n;
}

/* ------------------------------------------------------------- watchers */

static uint32_t to_epoll(unsigned ev)
{
    uint32_t e = 0;
    if (ev & LOOP_READ)
        e |= EPOLLIN;
    if (ev & LOOP_WRITE)
        e |= EPOLLOUT;
    return e;
}

static struct watcher *find_fd(loop_t *l, int fd)
{
    for (struct watcher *w = l->watchers; w; w = w->next)
        if (w->fd == fd && (w->kind == W_IO || w->kind == W_SIGNALFD ||
                            (w->kind == W_CHILD && fd >= 0)))
            return w;
    return NULL;
}

static int watch(loop_t *l, struct watcher *w)
{
    if (w->fd >= 0) {
        struct epoll_event ev = {.events = to_epoll(w->events), .data.ptr = w};
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
            return -errno;
    }
    w->next = l->watchers;
    l->watchers = w;
    return 0;
}

/* Unlinks w from the live list and parks it on the dead list. */
static void unwatch(loop_t *l, struct watcher *w)
{
    struct watcher **pp = &l->watchers;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (!*pp)
        return;
    *pp = w->next;
    if (w->fd >= 0)
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    w->dead = true;
    w->next = l->dead;
    l->dead = w;
}

int loop_io_add(loop_t *l, int fd, unsigned events, loop_io_fn fn,
                void *data)
{
    if (fd < 0 || !fn)
        return -EINVAL;
    if (find_fd(l, fd))
        return -EEXIST;
    struct watcher *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->kind = W_IO;
    w->fd = fd;
    w->events = events;
    w->io_fn = fn;
    w->data = data;
    int rc = watch(l, w);
    if (rc < 0)
        free(w);
    return rc;
}

int loop_io_mod(loop_t *l, int fd, unsigned events)
{
    struct watcher *w = find_fd(l, fd);
    if (!w || w->kind != W_IO)
        return -ENOENT;
    struct epoll_event ev = {.events = to_epoll(events), .data.ptr = w};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        return -errno;
    w->events = events;
    return 0;
}

int loop_io_del(loop_t *l, int fd)
{
    struct watcher *w = find_fd(l, fd);
    if (!w || w->kind != W_IO)
        return -ENOENT;
    unwatch(l, w);
    return 0;
}

/* --------------------------------------------------------------- timers */

static void heap_swap(struct timer *a, struct timer *b)
{
    struct timer t = *a;
    *a = *b;
    *b = t;
}

static void heap_up(struct timer *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].deadline <= h[i].deadline)
            break;
        heap_swap(&h[p], &h[i]);
        i = p;
    }
}

static void heap_down(struct timer *h, size_t n, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, m = i;
        if (c < n && h[c].deadline < h[m].deadline)
            m = c;
        if (c + 1 < n && h[c + 1].deadline < h[m].deadline)
            m = c + 1;
        if (m == i)
            return;
        heap_swap(&h[m], &h[i]);
        i = m;
    }
}

static void heap_remove(loop_t *l, size_t i)
{
    l->ntimers--;
    if (i == l->ntimers)
        return;
    l->timers[i] = l->timers[l->ntimers];
    heap_down(l->timers, l->ntimers, i);
    heap_up(l->timers, i);
}

int loop_timer_add(loop_t *l, uint64_t ms, loop_timer_fn fn, void *data,
                   uint64_t *id)
{
    if (!fn)
        return -EINVAL;
    if (l->ntimers == l->captimers) {
        size_t cap = l->captimers ? l->captimers * 2 : 16;
        struct timer *t = realloc(l->timers, cap * sizeof *t);
        if (!t)
            return -ENOMEM;
        l->timers = t;
        l->captimers = cap;
    }
    /* Measured from now, not from the cached iteration time, so a timer
     * added late in a long dispatch does not fire early. */
    struct timer *t = &l->timers[l->ntimers];
    t->deadline = loop_clock_ms() + ms;
    t->id = l->next_timer_id++;
    t->fn = fn;
    t->data = data;
    if (id)
        *id = t->id;
    heap_up(l->timers, l->ntimers++);
    return 0;
}

void loop_timer_del(loop_t *l, uint64_t id)
{
    if (!id)
        return;
    /* Linear: a loop holds a handful of timers per session. */
    for (size_t i = 0; i < l->ntimers; i++)
        if (l->timers[i].id == id) {
            heap_remove(l, i);
            return;
        }
}

/* -------------------------------------------------------------- signals */

/* Routes signo to the loop's signalfd, creating it on first use. */
static int sigfd_add(loop_t *l, int signo)
{
    sigset_t one;
    if (sigismember(&l->sigmask, signo) == 1)
        return 0;
    if (!l->mask_saved) {
        pthread_sigmask(SIG_SETMASK, NULL, &l->saved_mask);
        l->mask_saved = true;
    }
    sigaddset(&l->sigmask, signo);
    sigemptyset(&one);
    sigaddset(&one, signo);
    pthread_sigmask(SIG_BLOCK, &one, NULL);
    int fd = signalfd(l->sigfd, &l->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        int e = -errno;
        sigdelset(&l->sigmask, signo);
        return e;
    }
    if (l->sigfd < 0) {
        l->sigfd = fd;
        struct watcher *w = calloc(1, sizeof *w);
        if (!w)
            return -ENOMEM;
        w->kind = W_SIGNALFD;
        w->fd = fd;
        w->events = LOOP_READ;
        int rc = watch(l, w);
        if (rc < 0) {
            free(w);
            return rc;
        }
        l->sigw = w;
    }
    return 0;
}

int loop_signal_add(loop_t *l, int signo, loop_signal_fn fn, void *data)
{
    if (signo <= 0 || signo >= NSIG || signo == SIGCHLD || !fn)
        return -EINVAL;
    for (size_t i = 0; i < l->nsigs; i++)
        if (l->sigs[i].signo == signo)
            return -EEXIST;
    struct sig_handler *s = realloc(l->sigs, (l->nsigs + 1) * sizeof *s);
    if (!s)
        return -ENOMEM;
    l->sigs = s;
    int rc = sigfd_add(l, signo);
    if (rc < 0)
        return rc;
    l->sigs[l->nsigs++] = (struct sig_handler){signo, fn, data};
    return 0;
}

void loop_signal_del(loop_t *l, int signo)
{
    for (size_t i = 0; i < l->nsigs; i++)
        if (l->sigs[i].signo == signo) {
            l->sigs[i] = l->sigs[--l->nsigs];
            /* The signal stays blocked and routed until loop_free; a later
             * delivery is read and dropped. */
            return;
        }
}

/* --------------------------------------------------------------- children */

int loop_orphan_watch(loop_t *l, loop_orphan_fn fn, void *data)
{
    if (!fn)
        return -EINVAL;
    int rc = sigfd_add(l, SIGCHLD);
    if (rc < 0)
        return rc;
    l->orphan_fn = fn;
    l->orphan_data = data;
    return 0;
}

int loop_child_add(loop_t *l, pid_t pid, int pidfd, loop_child_fn fn,
                   void *data)
{
    if (pid <= 0 || !fn)
        return -EINVAL;
    struct watcher *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->kind = W_CHILD;
    w->pid = pid;
    w->child_fn = fn;
    w->data = data;
    w->events = LOOP_READ;
    w->fd = l->use_pidfd ? pidfd : -1;
    if (!l->use_pidfd || pidfd < 0) {
        /* Fallback: SIGCHLD through the signalfd.  The child may already
         * have exited (its SIGCHLD came before we blocked it), so poll the
         * watched children once on the next iteration too. */
        w->fd = -1;
        int rc = sigfd_add(l, SIGCHLD);
        if (rc < 0) {
            free(w);
            return rc;
        }
        l->check_children = true;
    }
    int rc = watch(l, w);
    if (rc < 0)
        free(w);
    return rc;
}

void loop_child_del(loop_t *l, pid_t pid)
{
    for (struct watcher *w = l->watchers; w; w = w->next)
        if (w->kind == W_CHILD && w->pid == pid) {
            unwatch(l, w);
            return;
        }
}

/* Peeks at w's child without reaping it; fires and removes w if exited. */
static int child_poll(loop_t *l, struct watcher *w)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int rc;
    rc = w->fd >= 0 ? waitid((idtype_t)P_PIDFD, (id_t)w->fd, &info,
                             WEXITED | WNOHANG | WNOWAIT)
                    : -1;
    /* Linux 5.3 has pidfd_open and pidfds that poll, but not P_PIDFD
     * (5.4): EINVAL.  The pid, which nobody reaped yet, names the same
     * child; without it the readable pidfd would spin the loop. */
    if (w->fd < 0 || (rc < 0 && errno == EINVAL))
        rc = waitid(P_PID, (id_t)w->pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc < 0 && errno != ECHILD)
        return 0;
    if (rc == 0 && info.si_pid == 0)
        return 0; /* still running */
    if (rc < 0) {
        /* ECHILD: someone else reaped it; report an unknown exit. */
        info.si_code = CLD_KILLED;
        info.si_status = SIGKILL;
        info.si_pid = w->pid;
    }
    pid_t pid = w->pid;
    loop_child_fn fn = w->child_fn;
    void *data = w->data;
    unwatch(l, w);
    fn(l, pid, &info, data);
    return 1;
}

static int poll_children(loop_t *l)
{
    int ran = 0;
    /* Restart after each firing: the callback may have changed the list. */
    for (bool again = true; again;) {
        again = false;
        for (struct watcher *w = l->watchers; w; w = w->next)
            if (w->kind == W_CHILD && w->fd < 0 && child_poll(l, w)) {
                ran++;
                again = true;
                break;
            }
    }
    return ran;
}

static int drain_sigfd(loop_t *l)
{
    struct signalfd_siginfo si;
    int ran = 0;
    bool chld = false;
    while (read(l->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if ((int)si.ssi_signo == SIGCHLD) {
            chld = true;
            continue;
        }
        for (size_t i = 0; i < l->nsigs; i++)
            if (l->sigs[i].signo == (int)si.ssi_signo) {
                l->sigs[i].fn(l, l->sigs[i].signo, l->sigs[i].data);
                ran++;
                break;
            }
    }
    if (chld) {
        ran += poll_children(l);
        if (l->orphan_fn) {
            l->orphan_fn(l, l->orphan_data);
            ran++;
        }
    }
    return ran;
}

/* -------------------------------------------------------------- dispatch */

static int next_timeout(loop_t *l, int timeout_ms)
{
    if (!l->ntimers)
        return timeout_ms;
    uint64_t now = loop_clock_ms();
    uint64_t d = l->timers[0].deadline;
    int t = d <= now ? 0 : (d - now > INT32_MAX ? INT32_MAX : (int)(d - now));
    return (timeout_ms < 0 || t < timeout_ms) ? t : timeout_ms;
}

static int run_timers(loop_t *l)
{
    int ran = 0;
    while (l->ntimers && l->timers[0].deadline <= l->now) {
        struct timer t = l->timers[0];
        heap_remove(l, 0);
        t.fn(l, t.id, t.data);
        ran++;
    }
    return ran;
}

int loop_run_once(loop_t *l, int timeout_ms)
{
    struct epoll_event evs[LOOP_MAX_EVENTS];
    int ran = 0;
    if (l->check_children) {
        l->check_children = false;
        ran += poll_children(l);
        if (ran)
            timeout_ms = 0;
    }
    int n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS,
                       next_timeout(l, timeout_ms));
    if (n < 0 && errno != EINTR)
        return -errno;
    l->now = loop_clock_ms();
    for (int i = 0; i < n; i++) {
        struct watcher *w = evs[i].data.ptr;
        if (w->dead)
            continue;
        unsigned ev = 0;
        if (evs[i].events & EPOLLIN)
            ev |= LOOP_READ;
        if (evs[i].events & EPOLLOUT)
            ev |= LOOP_WRITE;
        if (evs[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
            ev |= LOOP_HUP;
        switch (w->kind) {
        case W_IO:
            w->io_fn(l, w->fd, ev, w->data);
            ran++;
            break;
        case W_CHILD:
            ran += child_poll(l, w);
            break;
        case W_SIGNALFD:
            ran += drain_sigfd(l);
            break;
        }
    }
    l->now = loop_clock_ms();
    ran += run_timers(l);
    free_list(l->dead);
    l->dead = NULL;
    return ran;
}

int loop_run(loop_t *l)
{
    l->stop = false;
    while (!l->stop) {
        int rc = loop_run_once(l, -1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void loop_stop(loop_t *l)
{
    l->stop = true;
}
