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
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static void say(const char *s)
{
    ssize_t n = write(1, s, strlen(s));
    (void)n;
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
    return 2;
}
