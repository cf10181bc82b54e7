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
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static void say(const char *s)
{
    ssize_t n = write(1, s, strlen(s));
    (void)n;
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

int main(int argc, char **argv)
{
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
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        char b[64];
        while (fd >= 0 && read(fd, b, sizeof b) > 0)
            ;
        say("done\n");
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
    return 2;
}
