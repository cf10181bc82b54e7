/*
 * codex.h — the `codex` tool profile of rein serve.
 *
 * The profile is what the model sees: codex-style session tools
 * (exec_command, write_stdin, kill_session, list_sessions, read_output) and
 * each session's log as the resource rein://session/{id}/log.  It sits
 * between the MCP core (server.h), which knows nothing of sessions, and the
 * supervisor, which knows nothing of MCP.
 *
 * For now it carries the log resource template only; the session tools
 * plug in here (mcp_server_add_tool in mcp_codex_new, their sessions
 * terminated in mcp_codex_shutdown) when the supervisor lands.
 */
#ifndef REIN_MCP_CODEX_H
#define REIN_MCP_CODEX_H

#include "mcp/server.h"

/* The URI template of a session's log. */
#define MCP_CODEX_LOG_TEMPLATE "rein://session/{id}/log"

typedef struct mcp_codex mcp_codex_t;

typedef struct mcp_codex_opts {
    const char *state_dir; /* NULL: the default state directory */
} mcp_codex_opts_t;

/* Runs when shutdown has finished (every session ended). */
typedef void (*mcp_codex_done_fn)(void *data);

/* Registers the profile's tools and resources on srv.  0 or a negative
 * code. */
int mcp_codex_new(mcp_server_t *srv, const mcp_codex_opts_t *opts,
                  mcp_codex_t **out);
/* Terminates every session, then calls done (perhaps before returning).
 * The server stays usable until mcp_codex_free. */
void mcp_codex_shutdown(mcp_codex_t *cx, mcp_codex_done_fn done, void *data);
/* Frees the profile (after shutdown).  NULL is a no-op. */
void mcp_codex_free(mcp_codex_t *cx);

#endif
