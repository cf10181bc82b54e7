/*
 * proc_helper.c — processes with awkward signal behaviour for test_proc.
 *
 * Each mode prints one line on stdout once it is set up, so a test
 * synchronises on that line instead of sleeping, then waits for signals
 * for ever:
 *
 *   stubborn      ignores TERM, forks a grandchild that ignores it too
 *                 (the disposition is inherited); prints "ready <child>".
 *   fork-on-term  on each TERM forks a child that ignores TERM and prints
 *                 "forked <child>"; the root itself survives TERM.  Only a
 *                 rescan after the graceful phase can find that child.
 *   term-exit     exits 42 on TERM (from a handler, so a stopped process
 *                 only does so after SIGCONT); prints "ready".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The code term-exit leaves with, for the test to recognise. */
#define HELPER_TERM_EXIT_CODE 42

static volatile sig_atomic_t g_term;

static void on_term(int sig)
{
    (void)sig;
    g_term = 1;
}

static void on_term_exit(int sig)
{
    (void)sig;
    _exit(HELPER_TERM_EXIT_CODE);
}

/* A child that only SIGKILL ends. */
static pid_t fork_sleeper(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGTERM, SIG_IGN);
        for (;;)
            pause();
    }
    return pid;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "stubborn")) {
        signal(SIGTERM, SIG_IGN);
        pid_t kid = fork_sleeper();
        if (kid < 0)
            return 1;
        dprintf(1, "ready %ld\n", (long)kid);
        for (;;)
            pause();
    }
    if (!strcmp(argv[1], "fork-on-term")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        /* TERM stays blocked except inside sigsuspend, so one arriving
         * right after "ready" is not lost before the wait begins. */
        sigset_t term, none;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigemptyset(&none);
        sigprocmask(SIG_BLOCK, &term, NULL);
        dprintf(1, "ready\n");
        for (;;) {
            sigsuspend(&none);
            if (g_term) {
                g_term = 0;
                pid_t kid = fork_sleeper();
                if (kid > 0)
                    dprintf(1, "forked %ld\n", (long)kid);
            }
        }
    }
    if (!strcmp(argv[1], "term-exit")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term_exit;
        sigaction(SIGTERM, &sa, NULL);
        dprintf(1, "ready\n");
        for (;;)
            pause();
    }
    return 2;
}
