/*
 * termhelper.c — a child for the CLI proxy tests, with behaviour a shell
 * one-liner cannot give deterministically.
 *
 *   termhelper raw     puts its terminal in raw mode, prints READY, then
 *                      echoes every byte it reads as <hex> until 'q';
 *                      restores the terminal and exits 0.
 *   termhelper sig     blocks SIGINT, prints ready, waits for SIGINT and
 *                      prints "got SIGINT", exits 5.
 *   termhelper hazard FIFO
 *                      prints an error line, then blocks reading FIFO until
 *                      the test opens and closes it, prints done, exits 0.
 *   termhelper quiet FIFO
 *                      prints two plain lines, then blocks reading FIFO
 *                      as hazard does, then prints an error line and one
 *                      more, exits 1.
 *   termhelper slow N MS
 *                      prints "step I" N times, MS ms apart, exits 0.
 *   termhelper rawpoll FIFO
 *                      puts its terminal in raw mode, prints READY, then
 *                      polls the terminal and FIFO together, with no
 *                      timeout (as ssh polls its terminal and its socket);
 *                      prints "fifo" and exits 0 when FIFO has data,
 *                      "tty" and exits 3 when the terminal does.
 *   termhelper ask [-tMS] PRE QUERY...
 *                      puts its terminal in raw mode, writes PRE, then
 *                      each QUERY (C escapes: \e \a \r \n \\) and reads
 *                      one reply to it (a whole CSI, OSC or DCS) within
 *                      MS ms (default 5000): prints "reply: <it>" with
 *                      ESC as \e and BEL as \a, or "noreply"; then
 *                      restores the terminal and exits 0.
 *   termhelper flood N writes N status queries (CSI 5 n) at once, in raw
 *                      mode, and prints "replies: K", K counted until the
 *                      terminal stays silent for a second.
 *   termhelper loop [thread | sockpair | fifo FIFO | both FIFO | child MS |
 *                    timer MS | threads N | highfd FD | sigwait]
 *                      puts its terminal in raw mode, prints READY, and
 *                      waits as an event loop's runtime does (node's
 *                      libuv): epoll, no timeout, on the terminal, an
 *                      eventfd and a self-pipe, while a second thread
 *                      sleeps on a condition variable.  Then:
 *                        thread: the second thread reads the terminal
 *                                (blocking) and the first joins it, as a
 *                                TUI's input thread;
 *                        sockpair: the self-pipe is a socketpair, as
 *                                asyncio's is;
 *                        fifo:   the second thread reads FIFO (blocking)
 *                                and on data writes the eventfd;
 *                        both:   no loop: one thread reads the terminal,
 *                                another polls the terminal and FIFO, and
 *                                the first thread joins the second (which
 *                                says "fifo" and exits 0 on FIFO data);
 *                        child:  a child sleeps MS ms and exits, and the
 *                                SIGCHLD handler writes the self-pipe;
 *                        timer:  a timerfd in the set fires after MS ms;
 *                        threads: N more threads sleep beside the second;
 *                        highfd: the self-pipe's write end is on fd FD;
 *                        sigwait: the second thread waits for a signal
 *                                (sigwaitinfo, SIGUSR1 blocked), as
 *                                glibc's timer thread does in vim.
 *                      Prints what woke it: "tty" (exit 3), "fifo",
 *                      "child" or "timer" (exit 0).
 *
 * Its terminal is its controlling one: where its stdin is not a terminal
 * (rein run passes a file or pipe to the command as its own stdin), it
 * reads /dev/tty as fd 0, as a program that wants keys does.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static void say(const char *s)
{
    ssize_t n = write(1, s, strlen(s));
    (void)n;
}

/* Blocks until the FIFO at path has been opened for writing and closed
 * again: the test's word that the command may go on. */
static void wait_fifo(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char b[64];
    while (fd >= 0 && read(fd, b, sizeof b) > 0)
        ;
    if (fd >= 0)
        close(fd);
}

/* s with its C escapes decoded into out (at most size - 1 bytes). */
static size_t unescape(const char *s, char *out, size_t size)
{
    size_t n = 0;
    for (; *s && n + 1 < size; s++) {
        char c = *s;
        if (c == '\\' && s[1]) {
            s++;
            c = *s == 'e' ? 0x1b : *s == 'a' ? 7 : *s == 'r' ? '\r'
                : *s == 'n' ? '\n' : *s;
        }
        out[n++] = c;
    }
    out[n] = 0;
    return n;
}

/* Reads one byte within ms; -1 on timeout or error. */
static int read_byte(int ms)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    unsigned char c;
    if (poll(&p, 1, ms) <= 0 || read(0, &c, 1) != 1)
        return -1;
    return c;
}

/* Reads a whole CSI, OSC or DCS reply into r; false on timeout. */
static bool read_reply(char *r, size_t size, int ms)
{
    size_t n = 0;
    int c;
    while (n + 1 < size && (c = read_byte(ms)) >= 0) {
        r[n++] = (char)c;
        r[n] = 0;
        if (n < 3 || r[0] != 0x1b)
            continue;
        if (r[1] == '[' && c >= 0x40 && c <= 0x7e)
            return true;
        if (r[1] != '[' && (c == 7 || (c == '\\' && r[n - 2] == 0x1b)))
            return true;
    }
    return false;
}

static int ask(int argc, char **argv)
{
    struct termios saved, t;
    int ms = 5000, i = 2;
    char b[512], line[1200];
    if (i < argc && !strncmp(argv[i], "-t", 2))
        ms = atoi(argv[i++] + 2);
    if (i >= argc || tcgetattr(0, &saved) < 0)
        return 2;
    t = saved;
    cfmakeraw(&t);
    tcsetattr(0, TCSANOW, &t);
    size_t n = unescape(argv[i++], b, sizeof b);
    if (write(1, b, n) != (ssize_t)n)
        return 2;
    for (; i < argc; i++) {
        n = unescape(argv[i], b, sizeof b);
        if (write(1, b, n) != (ssize_t)n)
            return 2;
        if (!read_reply(b, sizeof b, ms)) {
            say("noreply\r\n");
            continue;
        }
        size_t k = 0;
        k += (size_t)snprintf(line, sizeof line, "reply: ");
        for (const char *q = b; *q && k + 8 < sizeof line; q++)
            k += (size_t)snprintf(line + k, sizeof line - k, "%s",
                                  *q == 0x1b ? "\\e" : *q == 7 ? "\\a"
                                  : (char[]){*q, 0});
        snprintf(line + k, sizeof line - k, "\r\n");
        say(line);
    }
    tcsetattr(0, TCSANOW, &saved);
    return 0;
}

static int flood(int n)
{
    struct termios saved, t;
    if (n <= 0 || n > 100000 || tcgetattr(0, &saved) < 0)
        return 2;
    t = saved;
    cfmakeraw(&t);
    tcsetattr(0, TCSANOW, &t);
    char *q = malloc((size_t)n * 4);
    if (!q)
        return 2;
    for (int i = 0; i < n; i++)
        memcpy(q + 4 * i, "\033[5n", 4);
    size_t off = 0, len = (size_t)n * 4;
    while (off < len) {
        ssize_t w = write(1, q + off, len - off);
        if (w <= 0)
            return 2;
        off += (size_t)w;
    }
    free(q);
    /* Replies, each "ESC [ 0 n": count the final bytes. */
    int replies = 0, c;
    while ((c = read_byte(1000)) >= 0)
        replies += c == 'n';
    tcsetattr(0, TCSANOW, &saved);
    char line[64];
    snprintf(line, sizeof line, "replies: %d\r\n", replies);
    say(line);
    return 0;
}

/* The loop mode's wake-up fds, for its threads and its signal handler. */
static int lp_efd = -1, lp_pipe[2] = {-1, -1};
static const char *lp_fifo;

static void *lp_sleep(void *arg)
{
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&m);
    for (;;)
        pthread_cond_wait(&c, &m);
    return arg;
}

static void *lp_read_tty(void *arg)
{
    char c;
    ssize_t n = read(0, &c, 1);
    (void)n;
    return arg;
}

static void *lp_read_fifo(void *arg)
{
    /* Read-write: the open does not wait for a writer. */
    int fd = open(lp_fifo, O_RDWR | O_CLOEXEC);
    char b[8];
    uint64_t one = 1;
    if (fd >= 0 && read(fd, b, sizeof b) > 0 &&
        write(lp_efd, &one, sizeof one) < 0)
        return arg;
    return arg;
}

static void *lp_poll_both(void *arg)
{
    struct pollfd p[2] = {{.fd = 0, .events = POLLIN},
                          {.fd = open(lp_fifo, O_RDWR | O_CLOEXEC),
                           .events = POLLIN}};
    while (poll(p, 2, -1) < 0)
        ;
    return arg;
}

static void *lp_sigwait(void *arg)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    while (sigwaitinfo(&s, NULL) < 0)
        ;
    return arg;
}

static void lp_on_child(int sig)
{
    (void)sig;
    char c = 'c';
    ssize_t n = write(lp_pipe[1], &c, 1);
    (void)n;
}

static int loop(int argc, char **argv)
{
    const char *how = argc >= 3 ? argv[2] : "";
    struct termios saved, t;
    pthread_t th;
    if (tcgetattr(0, &saved) < 0)
        return 2;
    t = saved;
    cfmakeraw(&t);
    tcsetattr(0, TCSANOW, &t);
    lp_efd = eventfd(0, EFD_CLOEXEC);
    if (lp_efd < 0 ||
        (!strcmp(how, "sockpair")
             ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, lp_pipe)
             : pipe2(lp_pipe, O_CLOEXEC)) < 0)
        return 2;
    bool both = !strcmp(how, "both") && argc >= 4;
    if (!strcmp(how, "thread") || both) {
        /* No loop: the first thread joins one that reads or polls. */
        pthread_t reader;
        lp_fifo = both ? argv[3] : NULL;
        pthread_create(&reader, NULL, lp_read_tty, NULL);
        if (both)
            pthread_create(&th, NULL, lp_poll_both, NULL);
        say("READY\r\n");
        pthread_join(both ? th : reader, NULL);
        tcsetattr(0, TCSANOW, &saved);
        say(both ? "fifo\n" : "tty\n");
        return both ? 0 : 3;
    }
    if (!strcmp(how, "fifo") && argc >= 4) {
        lp_fifo = argv[3];
        pthread_create(&th, NULL, lp_read_fifo, NULL);
    } else if (!strcmp(how, "sigwait")) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &s, NULL); /* the thread inherits it */
        pthread_create(&th, NULL, lp_sigwait, NULL);
    } else {
        pthread_create(&th, NULL, lp_sleep, NULL);
    }
    for (int i = 0; !strcmp(how, "threads") && argc >= 4 && i < atoi(argv[3]);
         i++)
        if (pthread_create(&th, NULL, lp_sleep, NULL) != 0)
            return 2;
    if (!strcmp(how, "highfd") && argc >= 4) {
        int fd = atoi(argv[3]);
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max <= (rlim_t)fd)
            return 2;
        if (rl.rlim_cur <= (rlim_t)fd) {
            rl.rlim_cur = (rlim_t)fd + 1;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (dup3(lp_pipe[1], fd, O_CLOEXEC) != fd)
            return 2;
        close(lp_pipe[1]);
        lp_pipe[1] = fd;
    }
    if (!strcmp(how, "child") && argc >= 4) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = lp_on_child;
        sigaction(SIGCHLD, &sa, NULL);
        pid_t pid = fork();
        if (pid == 0) {
            usleep((useconds_t)atoi(argv[3]) * 1000);
            _exit(0);
        }
    }
    int tfd = -1;
    if (!strcmp(how, "timer") && argc >= 4) {
        long ms = atol(argv[3]);
        struct itimerspec its = {.it_value = {ms / 1000, ms % 1000 * 1000000}};
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0)
            return 2;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int fds[4] = {0, lp_efd, lp_pipe[0], tfd};
    for (int i = 0; i < 4 && fds[i] >= 0; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
    }
    say("READY\r\n");
    struct epoll_event ev;
    while (epoll_wait(ep, &ev, 1, -1) < 1)
        ; /* EINTR: the SIGCHLD */
    tcsetattr(0, TCSANOW, &saved);
    if (ev.data.fd == 0) {
        say("tty\n");
        return 3;
    }
    say(ev.data.fd == lp_efd ? "fifo\n"
        : ev.data.fd == tfd  ? "timer\n"
                             : "child\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (!isatty(0)) {
        int t = open("/dev/tty", O_RDWR | O_CLOEXEC);
        if (t > 0) {
            dup2(t, 0);
            close(t);
        }
    }
    if (argc >= 2 && !strcmp(argv[1], "raw")) {
        struct termios saved, t;
        if (tcgetattr(0, &saved) < 0)
            return 2;
        t = saved;
        cfmakeraw(&t);
        tcsetattr(0, TCSANOW, &t);
        say("READY\r\n");
        unsigned char c;
        while (read(0, &c, 1) == 1 && c != 'q') {
            char hex[8];
            snprintf(hex, sizeof hex, "<%02x>", c);
            say(hex);
        }
        tcsetattr(0, TCSANOW, &saved);
        say("\r\nBYE\r\n");
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "sig")) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGINT);
        sigprocmask(SIG_BLOCK, &s, NULL);
        say("ready\n");
        int sig = 0;
        sigwait(&s, &sig);
        say("got SIGINT\n");
        return 5;
    }
    if (argc >= 3 && !strcmp(argv[1], "hazard")) {
        say("error: boom\n");
        wait_fifo(argv[2]);
        say("done\n");
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "quiet")) {
        say("starting\nlistening on 3000\n");
        wait_fifo(argv[2]);
        say("x.c:1:1: error: boom\nafter\n");
        return 1;
    }
    if (argc >= 4 && !strcmp(argv[1], "slow")) {
        int n = atoi(argv[2]), ms = atoi(argv[3]);
        for (int i = 1; i <= n; i++) {
            char line[32];
            snprintf(line, sizeof line, "step %d\n", i);
            say(line);
            struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) < 0)
                ;
        }
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "rawpoll")) {
        struct termios saved, t;
        /* Read-write: the FIFO never reports a hang-up of its writers. */
        int fd = open(argv[2], O_RDWR | O_CLOEXEC);
        if (fd < 0 || tcgetattr(0, &saved) < 0)
            return 2;
        t = saved;
        cfmakeraw(&t);
        tcsetattr(0, TCSANOW, &t);
        say("READY\r\n");
        struct pollfd p[2] = {{.fd = 0, .events = POLLIN},
                              {.fd = fd, .events = POLLIN}};
        while (poll(p, 2, -1) < 0)
            ;
        tcsetattr(0, TCSANOW, &saved);
        say(p[1].revents & POLLIN ? "fifo\n" : "tty\n");
        return p[1].revents & POLLIN ? 0 : 3;
    }
    if (argc >= 3 && !strcmp(argv[1], "ask"))
        return ask(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "flood"))
        return flood(atoi(argv[2]));
    if (argc >= 2 && !strcmp(argv[1], "loop"))
        return loop(argc, argv);
    return 2;
}
