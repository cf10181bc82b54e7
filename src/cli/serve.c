/*
 * serve.c — `rein serve`: the MCP server on stdio.
 *
 * stdout carries protocol only.  So before anything else the protocol fds
 * are made private: stdin and stdout are duplicated to close-on-exec fds
 * the server alone uses, fd 1 is pointed at stderr and fd 0 at /dev/null.
 * A stray printf, a library's chatter or a child process (which never
 * inherits the private fds) can then write nothing but log lines, and no
 * child can swallow protocol bytes from stdin.
 *
 * Everything runs on the supervisor's loop (sup_loop): session output,
 * protocol I/O, timers and signals share one epoll wait.
 *
 * The server runs until stdin ends (or the output breaks) or SIGTERM,
 * SIGINT or SIGHUP arrives; then input stops, calls in flight are cancelled,
 * the profile terminates its sessions (TERM, 1 s, KILL), the output queue
 * drains, the supervisor closes (anything left is killed, the registry is
 * finalized) and rein exits 0 — within SERVE_EXIT_BUDGET_MS plus the
 * supervisor's close.  A server that dies without stopping (SIGKILL, the
 * OOM killer, a crash) leaves its runs to its watchman (watchman.c), which
 * reconciles the state directory as soon as the server is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/loop.h"
#include "cli/cli.h"
#include "cli/watchman.h"
#include "mcp/codex.h"
#include "mcp/server.h"
#include "rein.h"
#include "supervise/sup.h"

/* Time from the shutdown trigger to exit, under the 3 s rein promises so
 * process teardown after it still fits. */
#define SERVE_EXIT_BUDGET_MS 2500
/* After stdin ends: how long calls in flight may still finish on their own
 * (inside the exit budget: sessions still need their TERM, 1 s, KILL). */
#define SERVE_EOF_GRACE_MS 800
/* Loop passes that deliver the answers of calls woken at stdin's end. */
#define SERVE_ANSWER_PASSES 8

struct serve {
    rein_sup_t *sup;
    loop_t *loop; /* the supervisor's */
    mcp_server_t *srv;
    mcp_codex_t *codex;
    int in_fd, out_fd;       /* the private protocol fds */
    int in_flags, out_flags; /* their flags before O_NONBLOCK */
    watchman_t watchman;
    bool stopping;
    bool input_ended; /* stdin reached EOF (not a signal, not EPIPE) */
    bool sessions_done;
    char why[512]; /* rein_sup_open's step that failed, or "" */
};

static const char serve_instructions[] =
    "rein runs shell commands as sessions it owns; each session's full "
    "output log is the resource rein://session/{id}/log.";

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "rein serve: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try rein serve --help)\n");
    return CLI_EXIT_USAGE;
}

/* "--name VALUE" or "--name=VALUE"; advances *i past a separate value. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}

/* Makes the protocol fds private (see the top of this file). */
static int take_stdio(struct serve *sv)
{
    sv->in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    if (sv->in_fd < 0)
        return -errno;
    sv->out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (sv->out_fd < 0)
        return -errno;
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0)
        return -errno;
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        dup2(nul, STDOUT_FILENO); /* no stderr: then nowhere */
    dup2(nul, STDIN_FILENO);
    close(nul);
    sv->in_flags = fcntl(sv->in_fd, F_GETFL);
    sv->out_flags = fcntl(sv->out_fd, F_GETFL);
    if (sv->in_flags < 0 || sv->out_flags < 0 ||
        fcntl(sv->in_fd, F_SETFL, sv->in_flags | O_NONBLOCK) < 0 ||
        fcntl(sv->out_fd, F_SETFL, sv->out_flags | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

/* O_NONBLOCK lives on the open file description, shared with whoever
 * started us (a terminal, say): give it back as it was. */
static void give_back_stdio(struct serve *sv)
{
    if (sv->in_fd >= 0) {
        if (sv->in_flags >= 0)
            fcntl(sv->in_fd, F_SETFL, sv->in_flags);
        close(sv->in_fd);
    }
    if (sv->out_fd >= 0) {
        if (sv->out_flags >= 0)
            fcntl(sv->out_fd, F_SETFL, sv->out_flags);
        close(sv->out_fd);
    }
}

static void on_peer_gone(mcp_server_t *srv, int err, void *data)
{
    (void)srv;
    struct serve *sv = data;
    if (err < 0)
        fprintf(stderr, "rein serve: stdio failed: %s\n", rein_strerror(err));
    else
        sv->input_ended = true; /* EOF: the client is done sending */
    sv->stopping = true;
}

static void on_signal(loop_t *l, int signo, void *data)
{
    (void)l;
    (void)signo;
    struct serve *sv = data;
    sv->stopping = true;
}

static void on_sessions_done(void *data)
{
    struct serve *sv = data;
    sv->sessions_done = true;
}

/* Stops, ends what runs and drains the output, within the budget.  When
 * the client closed its input (rather than a signal), every request it sent
 * still gets a response: calls waiting on a session have
 * SERVE_EOF_GRACE_MS to finish on their own (a command that exits is
 * answered with its exit), then are answered with what they have. */
static void shut_down(struct serve *sv)
{
    uint64_t deadline = loop_clock_ms() + SERVE_EXIT_BUDGET_MS;
    mcp_server_stop_input(sv->srv);
    if (sv->input_ended) {
        uint64_t grace = loop_clock_ms() + SERVE_EOF_GRACE_MS;
        uint64_t now;
        while (mcp_server_calls_pending(sv->srv) &&
               (now = loop_clock_ms()) < grace)
            if (loop_run_once(sv->loop, (int)(grace - now)) < 0)
                break;
        mcp_codex_answer_all(sv->codex);
        /* The answers go out from zero-delay timers: let them run. */
        for (int i = 0; i < SERVE_ANSWER_PASSES &&
                        mcp_server_calls_pending(sv->srv);
             i++)
            loop_run_once(sv->loop, 0);
    }
    mcp_server_cancel_all(sv->srv);
    mcp_codex_shutdown(sv->codex, on_sessions_done, sv);
    for (;;) {
        uint64_t now = loop_clock_ms();
        if ((sv->sessions_done && mcp_server_out_pending(sv->srv) == 0) ||
            now >= deadline)
            break;
        if (loop_run_once(sv->loop, (int)(deadline - now)) < 0)
            break;
    }
}

/* Everything before the first message: private stdio, SIGPIPE ignored,
 * the loop with its signals, the server and the profile.  On failure *what
 * names the part that failed. */
static int set_up(struct serve *sv, const char *state_dir, const char **what)
{
    *what = "stdio";
    int rc = take_stdio(sv);
    if (rc < 0)
        return rc;
    /* A client that hangs up must not kill us mid-write: EPIPE instead. */
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGPIPE, &ign, NULL) < 0)
        return -errno;
    /* Before the supervisor, which may make us a subreaper: the watchman
     * must not end up our child.  Without one the server still serves;
     * only a crash would leave its runs to the next reconcile. */
    rc = watchman_start(state_dir, &sv->watchman);
    if (rc < 0)
        fprintf(stderr, "rein serve: no watchman (runs outlive a crash of "
                        "this server until the next reconcile): %s\n",
                rein_strerror(rc));
    *what = "supervisor";
    rein_sup_opts_t so = {.state_dir = state_dir, .errmsg = sv->why,
                          .errlen = sizeof sv->why};
    rc = rein_sup_open(&so, &sv->sup);
    if (rc < 0)
        return rc;
    sv->loop = sup_loop(sv->sup);
    static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        if ((rc = loop_signal_add(sv->loop, stop_signals[i], on_signal,
                                  sv)) < 0)
            return rc;
    *what = "MCP server";
    mcp_server_opts_t opts = {
        .name = "rein",
        .version = REIN_VERSION_STRING,
        .instructions = serve_instructions,
        .on_close = on_peer_gone,
        .data = sv,
    };
    rc = mcp_server_new(sv->loop, sv->in_fd, sv->out_fd, &opts, &sv->srv);
    if (rc < 0)
        return rc;
    *what = "codex profile";
    mcp_codex_opts_t copts = {.sup = sv->sup};
    return mcp_codex_new(sv->srv, &copts, &sv->codex);
}

int cli_serve(int argc, char **argv)
{
    const char *profile = "codex", *state_dir = NULL, *v;
    for (int i = 1; i < argc; i++) {
        if ((v = opt_value(argc, argv, &i, "--profile")))
            profile = v;
        else if ((v = opt_value(argc, argv, &i, "--state-dir")))
            state_dir = v;
        else
            return usage_error("unknown option '%s'", argv[i]);
        if (!*v)
            return usage_error("%s needs a value", argv[i]);
    }
    if (!strcmp(profile, "mish"))
        return usage_error("the %s profile is not available yet; use "
                           "--profile codex", profile);
    if (strcmp(profile, "codex") != 0)
        return usage_error("unknown profile '%s' (codex or mish)", profile);

    struct serve sv = {.in_fd = -1, .out_fd = -1, .in_flags = -1,
                       .out_flags = -1, .watchman = WATCHMAN_INIT};
    const char *what = NULL;
    int rc = set_up(&sv, state_dir, &what);
    if (rc < 0) {
        fprintf(stderr, "rein serve: cannot set up the %s: %s\n", what,
                sv.why[0] ? sv.why : rein_strerror(rc));
        goto out;
    }

    while (!sv.stopping) {
        rc = loop_run_once(sv.loop, -1);
        if (rc < 0) {
            fprintf(stderr, "rein serve: event loop failed: %s\n",
                    rein_strerror(rc));
            break;
        }
    }
    shut_down(&sv);
out:
    /* The profile detaches from runs still going; the supervisor then ends
     * them and frees the loop, so it goes last. */
    mcp_codex_free(sv.codex);
    mcp_server_free(sv.srv);
    rein_sup_close(sv.sup);
    watchman_bye(&sv.watchman); /* every run is ended: a clean stop */
    give_back_stdio(&sv);
    return rc < 0 ? CLI_EXIT_FAILURE : 0;
}
