/*
 * codex.c — the `codex` tool profile (see codex.h).
 *
 * Today: the session-log resource template.  No session exists yet, so
 * every read answers "resource not found"; the template is advertised now
 * so clients (and the end-to-end tests) see the final resource surface.
 */
#include "mcp/codex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mcp_codex {
    mcp_server_t *srv;
    char *state_dir;
};

/* rein://session/{id}/log: the log of session id (tail by default, once
 * sessions exist). */
static int read_log(const char *uri, const json_t *vars, buf_t *text,
                    void *ud)
{
    (void)uri;
    (void)vars;
    (void)text;
    (void)ud;
    return -ENOENT;
}

int mcp_codex_new(mcp_server_t *srv, const mcp_codex_opts_t *opts,
                  mcp_codex_t **out)
{
    mcp_codex_t *cx = calloc(1, sizeof *cx);
    if (!cx)
        return -ENOMEM;
    cx->srv = srv;
    int rc = -ENOMEM;
    if (opts && opts->state_dir && !(cx->state_dir = strdup(opts->state_dir)))
        goto fail;
    rc = mcp_server_add_resource_template(
        srv, MCP_CODEX_LOG_TEMPLATE, "session-log",
        "The output log of a session, as text (its tail by default).",
        "text/plain", read_log, cx);
    if (rc < 0)
        goto fail;
    *out = cx;
    return 0;
fail:
    mcp_codex_free(cx);
    return rc;
}

void mcp_codex_shutdown(mcp_codex_t *cx, mcp_codex_done_fn done, void *data)
{
    (void)cx;
    /* No sessions yet: nothing to terminate. */
    if (done)
        done(data);
}

void mcp_codex_free(mcp_codex_t *cx)
{
    if (!cx)
        return;
    free(cx->state_dir);
    free(cx);
}
