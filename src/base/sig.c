/*
 * sig.c — signal names (see sig.h).
 *
 * A fixed table rather than sigabbrev_np: the same answers everywhere, and
 * only the signals a person would send to a process tree.
 */
#include "base/sig.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name; /* without "SIG" */
    int signo;
} sig_table[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT},
    {"ILL", SIGILL},   {"TRAP", SIGTRAP},   {"ABRT", SIGABRT},
    {"BUS", SIGBUS},   {"FPE", SIGFPE},     {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},   {"TERM", SIGTERM},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},
    {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
    {"IO", SIGIO},     {"PWR", SIGPWR},     {"SYS", SIGSYS},
};

#define SIG_COUNT (sizeof sig_table / sizeof sig_table[0])

int sig_parse(const char *name, int *signo)
{
    if (!name || !*name)
        return -EINVAL;
    if (name[0] >= '0' && name[0] <= '9') {
        char *end;
        long v = strtol(name, &end, 10);
        if (*end || v <= 0 || v >= NSIG)
            return -EINVAL;
        *signo = (int)v;
        return 0;
    }
    const char *n = strncasecmp(name, "SIG", 3) ? name : name + 3;
    for (size_t i = 0; i < SIG_COUNT; i++)
        if (!strcasecmp(n, sig_table[i].name)) {
            *signo = sig_table[i].signo;
            return 0;
        }
    return -EINVAL;
}

const char *sig_name(int signo)
{
    static const char *const full[] = {
        [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT",
        [SIGILL] = "SIGILL",   [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
        [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",   [SIGKILL] = "SIGKILL",
        [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
        [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
        [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT", [SIGSTOP] = "SIGSTOP",
        [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN", [SIGTTOU] = "SIGTTOU",
        [SIGURG] = "SIGURG",   [SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ",
        [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
        [SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO", [SIGPWR] = "SIGPWR",
        [SIGSYS] = "SIGSYS",
    };
    if (signo > 0 && (size_t)signo < sizeof full / sizeof full[0] &&
        full[signo])
        return full[signo];
    return "SIG?";
}
