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
 *   order-tree    root -> child -> grandchild, each printing
 *                 "ready <role> <pid>".  USR1 stays blocked in all three,
 *                 so once sent it stays pending (visible in /proc) for
 *                 good.  When its own USR1 is pending, each process looks
 *                 whether its child's already is, and prints
 *                 "<role> got USR1, child pending <0|1>" (the grandchild:
 *                 "grandchild got USR1").  A sender that signals children
 *                 first makes every such line say 1, whatever the
 *                 scheduling; one that signals a parent first lets the
 *                 parent look before its child was sent anything.
 *   sig-report SIGNO [member]
 *                 blocks the common termination signals and reads them
 *                 from a signalfd, printing "root sig <n>" for each; on
 *                 SIGNO it prints what else was pending with it (so any
 *                 signal sent before SIGNO is printed before it dies),
 *                 then dies of SIGNO.  With "member", first leaves a
 *                 second such process ("member") in its process group
 *                 that is no descendant (its parent exits); prints
 *                 "ready member <pid>" then "ready" (or "ready" alone).
 *                 The member is set up from its first instruction: it
 *                 inherits the blocked mask and the signalfd.
 *   sig-count SIGNO
 *                 counts how often each process is sent SIGNO, a
 *                 real-time signal (each one sent is queued, where a
 *                 second TERM pending would merge with the first).
 *                 Three processes, SIGNO and SIGCONT blocked in each:
 *                 "root", "child" (in root's process group) and "loner"
 *                 (a child in a group of its own).  Each prints
 *                 "ready <role> <pid>", the root last.  On SIGCONT each
 *                 takes every SIGNO pending and prints "<role> got <n>";
 *                 a sender that sends SIGNO, then SIGCONT (as a
 *                 terminator does) has queued each SIGNO before its first
 *                 SIGCONT arrives.  The root then waits for the two and
 *                 exits 0.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
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

/* Blocks until sfd has a signal pending; never dequeues it. */
static void wait_pending(int sfd)
{
    struct pollfd pfd = {.fd = sfd, .events = POLLIN};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
}

/* 1 when sig is pending for pid (shared or on its main thread), 0 when
 * not, -1 when its status cannot be read. */
static int pending_in(pid_t pid, int sig)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    unsigned long long mask = 0;
    bool seen = false;
    while (fgets(buf, sizeof buf, f)) {
        if (!strncmp(buf, "SigPnd:", 7) || !strncmp(buf, "ShdPnd:", 7)) {
            mask |= strtoull(buf + 7, NULL, 16);
            seen = true;
        }
    }
    fclose(f);
    return seen ? (int)((mask >> (sig - 1)) & 1) : -1;
}

/* order-tree: root, child and grandchild, each forking the next. */
static void order_tree(int sfd)
{
    static const char *const roles[] = {"root", "child", "grandchild"};
    const size_t nroles = sizeof roles / sizeof roles[0];
    size_t r = 0;
    pid_t kid = 0;
    for (;;) {
        if (r + 1 == nroles)
            break;
        pid_t self = getpid();
        kid = fork();
        if (kid < 0)
            _exit(1);
        if (kid > 0)
            break;
        /* Dies with its parent, so a failed test leaves nothing. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
            getppid() != self)
            _exit(1);
        r++;
    }
    dprintf(1, "ready %s %ld\n", roles[r], (long)getpid());
    wait_pending(sfd);
    if (r + 1 < nroles)
        dprintf(1, "%s got USR1, %s pending %d\n", roles[r], roles[r + 1],
                pending_in(kid, SIGUSR1));
    else
        dprintf(1, "%s got USR1\n", roles[r]);
    for (;;)
        pause();
}

/* The signals sig-report watches: what a terminator would send. */
static void report_set(sigset_t *set)
{
    static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1,
                               SIGUSR2, SIGTERM, SIGCONT};
    sigemptyset(set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(set, sigs[i]);
}

/* Reports every watched signal until signo, then dies of it. */
static void report_loop(const char *role, int signo, int sfd)
{
    for (;;) {
        wait_pending(sfd);
        /* One read takes every signal pending now: each sent before
         * signo is among them if signo is. */
        struct signalfd_siginfo si[16];
        ssize_t n = read(sfd, si, sizeof si);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            _exit(1);
        bool done = false;
        for (size_t i = 0; i < (size_t)n / sizeof si[0]; i++) {
            dprintf(1, "%s sig %d\n", role, (int)si[i].ssi_signo);
            if ((int)si[i].ssi_signo == signo)
                done = true;
        }
        if (done) {
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, signo);
            signal(signo, SIG_DFL);
            sigprocmask(SIG_UNBLOCK, &one, NULL);
            raise(signo);
            _exit(1); /* not reached: signo's default action ends us */
        }
    }
}

static int sig_report(int argc, char **argv)
{
    int signo = argc > 2 ? atoi(argv[2]) : 0;
    bool member = argc > 3 && !strcmp(argv[3], "member");
    if (signo <= 0 || signo == SIGCONT)
        return 2;
    sigset_t set;
    report_set(&set);
    if (!sigismember(&set, signo))
        return 2;
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        return 1;
    if (member) {
        /* The mask and the signalfd are inherited: the member catches
         * whatever reaches it from its first instruction on. */
        pid_t mid = fork();
        if (mid < 0)
            return 1;
        if (mid == 0) {
            pid_t m = fork();
            if (m == 0)
                report_loop("member", signo, sfd);
            if (m > 0)
                dprintf(1, "ready member %ld\n", (long)m);
            _exit(m < 0);
        }
        int st;
        if (waitpid(mid, &st, 0) != mid || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            return 1;
    }
    dprintf(1, "ready\n");
    report_loop("root", signo, sfd);
    return 1;
}

/* sig-count's role: "ready", then the count once SIGCONT comes. */
static void count_role(const char *role, int signo, int ready_fd)
{
    sigset_t cont, one;
    sigemptyset(&cont);
    sigaddset(&cont, SIGCONT);
    sigemptyset(&one);
    sigaddset(&one, signo);
    dprintf(1, "ready %s %ld\n", role, (long)getpid());
    if (ready_fd >= 0 && (write(ready_fd, "r", 1) != 1 || close(ready_fd)))
        _exit(1);
    while (sigwaitinfo(&cont, NULL) < 0)
        if (errno != EINTR)
            _exit(1);
    struct timespec now = {0, 0};
    int n = 0;
    while (sigtimedwait(&one, NULL, &now) == signo)
        n++;
    dprintf(1, "%s got %d\n", role, n);
}

static int sig_count(int argc, char **argv)
{
    int signo = argc > 2 ? atoi(argv[2]) : 0;
    if (signo < SIGRTMIN || signo > SIGRTMAX)
        return 2;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    sigaddset(&set, SIGCONT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int ready[2];
    if (pipe(ready) < 0)
        return 1;
    static const char *const roles[] = {"child", "loner"};
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        pid_t self = getpid();
        kids[i] = fork();
        if (kids[i] < 0)
            return 1;
        if (kids[i] == 0) {
            /* Dies with the root, so a failed test leaves nothing. */
            if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
                getppid() != self || (i == 1 && setpgid(0, 0) < 0))
                _exit(1);
            close(ready[0]);
            count_role(roles[i], signo, ready[1]);
            _exit(0);
        }
    }
    close(ready[1]);
    char c;
    for (int i = 0; i < 2; i++)
        if (read(ready[0], &c, 1) != 1)
            return 1;
    close(ready[0]);
    count_role("root", signo, -1);
    for (int i = 0; i < 2; i++) {
        int st;
        if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            return 1;
    }
    return 0;
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
    if (!strcmp(argv[1], "order-tree")) {
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_BLOCK, &usr1, NULL);
        int sfd = signalfd(-1, &usr1, SFD_CLOEXEC);
        if (sfd < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
            return 1;
        order_tree(sfd);
    }
    if (!strcmp(argv[1], "sig-report"))
        return sig_report(argc, argv);
    if (!strcmp(argv[1], "sig-count"))
        return sig_count(argc, argv);
    return 2;
}
