/*
 * codex.h — the `codex` tool profile of rein serve.
 *
 * The profile is what the model sees: codex-style session tools
 * (exec_command, write_stdin, kill_session, list_sessions, read_output) and
 * each session's log as the resource rein://session/{id}/log.  It sits
 * between the MCP core (server.h), which knows nothing of sessions, and the
 * session store (exec/session.h) over the supervisor, which know nothing of
 * MCP.
 */
#ifndef REIN_MCP_CODEX_H
#define REIN_MCP_CODEX_H

#include "mcp/server.h"
#include "rein.h"

/* The URI template of a session's log. */
#define MCP_CODEX_LOG_TEMPLATE "rein://session/{id}/log"

/* Codex's constants (seed: pi-unified-exec), kept so models trained on
 * them meet the same behaviour. */
#define CODEX_MIN_YIELD_MS 250
#define CODEX_MAX_YIELD_MS 30000
#define CODEX_DEFAULT_EXEC_YIELD_MS 10000
#define CODEX_DEFAULT_WRITE_YIELD_MS 250
#define CODEX_MIN_EMPTY_YIELD_MS 5000
#define CODEX_DEFAULT_MAX_EMPTY_POLL_MS 1800000
/* An exec_command whose process exits within this long returns with its
 * exit; before it, the process is never reported as awaiting input. */
#define CODEX_EARLY_EXIT_GRACE_MS 150
#define CODEX_DEFAULT_MAX_OUTPUT_TOKENS 10000
#define CODEX_BYTES_PER_TOKEN 4
#define CODEX_DEFAULT_KILL_GRACE_MS 2000
/* The longest grace kill_session accepts: the call waits that long (plus
 * CODEX_KILL_WAIT_EXTRA_MS) for a process that ignores its signal. */
#define CODEX_MAX_KILL_GRACE_MS 60000
/* How long kill_session waits beyond the grace for the end. */
#define CODEX_KILL_WAIT_EXTRA_MS (REIN_SUP_KILL_BOUND_MS + 1000)
/* The default terminal of a tty session. */
#define CODEX_DEFAULT_COLS 120
#define CODEX_DEFAULT_ROWS 40
/* A result whose middle the 1 MiB buffer dropped is condensed from the
 * session's log, so that a hazard in that middle is still shown; this is
 * the most log a result reads for it (about a second of squashing here, on
 * the server's loop).  Past it the buffered head and tail are condensed
 * and the result says the middle was not read. */
#define CODEX_SCAN_MAX (64u << 20)
/* list_sessions shows at most this many bytes of each command (a heredoc
 * can make one megabytes long), cut on a character and marked with "…";
 * command_bytes then gives its whole length. */
#define CODEX_LIST_COMMAND_MAX 1024u
/* A resources/read of a session log gives its last bytes, this many. */
#define CODEX_RESOURCE_TAIL (64u * 1024u)
/* A call that carries a progressToken gets a notifications/progress this
 * often while it waits, output or not: progress is the milliseconds
 * waited, total the wait's yield, the message the bytes seen.  It is the
 * keep-alive for a client whose request timeout is shorter than a poll
 * (an empty write_stdin may wait up to REIN_MAX_EMPTY_POLL_MS). */
#define CODEX_PROGRESS_MS 1000
/* Log retention (exec/retention.h) runs at start and every
 * RETENTION_EVERY_MS. */

typedef struct mcp_codex mcp_codex_t;

typedef struct mcp_codex_opts {
    rein_sup_t *sup; /* required; the server must run on sup_loop(sup) */
    size_t max_sessions; /* 0: SESSION_MAX_LIVE (tests lower it) */
} mcp_codex_opts_t;

/* Runs when shutdown has finished (every session ended). */
typedef void (*mcp_codex_done_fn)(void *data);

/* Registers the profile's tools and resources on srv.  0 or a negative
 * code. */
int mcp_codex_new(mcp_server_t *srv, const mcp_codex_opts_t *opts,
                  mcp_codex_t **out);
/* Terminates every session (TERM, 1 s, KILL), then calls done (perhaps
 * before returning).  The server stays usable until mcp_codex_free. */
/* Answers every call still waiting on a session now, with what it has (as
 * if its yield time had passed); the sessions go on.  For a client that
 * closed its input: every request it sent still gets its response. */
void mcp_codex_answer_all(mcp_codex_t *cx);
void mcp_codex_shutdown(mcp_codex_t *cx, mcp_codex_done_fn done, void *data);
/* Frees the profile (after shutdown).  NULL is a no-op. */
void mcp_codex_free(mcp_codex_t *cx);

#endif
