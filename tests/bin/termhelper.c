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
 */
#include <fcntl.h>
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
    return 2;
}
