/*
 * server.h — the MCP server core: lifecycle, tools and resources over the
 * JSON-RPC transport of jsonrpc.h.
 *
 * The protocol lives here, the tools do not: front ends register tools and
 * resource templates through this internal API and the server does the
 * rest — version negotiation, capabilities, ping, listing, argument
 * validation against each tool's input schema, cancellation, progress,
 * subscriptions.
 *
 * Tool calls are asynchronous.  A tool's function starts the work and
 * returns; the call is completed later, from any loop callback, with
 * mcp_call_result() or mcp_call_error().  Meanwhile the server keeps
 * answering other requests (a ping or tools/list while ten calls wait), so
 * waits must be loop timers and fd watchers, never blocking calls.
 *
 * Call lifetime: the server owns every mcp_call_t.  A call stays valid
 * until it is completed (result or error) or cancelled; after either, the
 * tool must not touch it again.  A cancellation (notifications/cancelled,
 * mcp_server_cancel_all, mcp_server_free) runs the call's cancel hook, in
 * which the tool stops its wait and drops its pointer; no response is sent.
 *
 * Errors: protocol faults are JSON-RPC errors (-32601 unknown method,
 * -32602 unknown tool or malformed params); a missing, mistyped or
 * conflicting argument and every execution failure are tool results with
 * isError true and one sentence the model can act on.
 */
#ifndef REIN_MCP_SERVER_H
#define REIN_MCP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/loop.h"

/* The protocol version we speak, and answer to versions we do not know. */
#define MCP_PROTOCOL_LATEST "2025-11-25"
/* Every version accepted and echoed, newest first (NULL-terminated). */
#define MCP_PROTOCOL_VERSIONS                                               \
    {MCP_PROTOCOL_LATEST, "2025-06-18", "2025-03-26", "2024-11-05", NULL}

/* MCP's error code for resources/read of a resource that does not exist. */
#define MCP_RESOURCE_NOT_FOUND (-32002)
/* Calls waiting at once; beyond, a call is refused (isError). */
#define MCP_MAX_CALLS_IN_FLIGHT 1024
/* Tools and resource templates a server may carry. */
#define MCP_MAX_TOOLS 64
#define MCP_MAX_TEMPLATES 16
/* Resources subscribed at once. */
#define MCP_MAX_SUBSCRIPTIONS 1024
/* notifications/resources/updated for one URI at most this often: a
 * session printing without pause must not flood the client. */
#define MCP_UPDATED_MIN_INTERVAL_MS 200
/* The one sentence of an isError result or a validation message. */
#define MCP_SENTENCE_MAX 512

typedef struct mcp_server mcp_server_t;
typedef struct mcp_call mcp_call_t;

/* Starts a tool call.  args is the validated arguments object (borrowed,
 * valid until return; json_incref to keep).  Returns 0 once the work is
 * started (or already completed); a negative code completes the call as
 * an isError result with rein_strerror's message, unless the function
 * completed it already. */
typedef int (*mcp_tool_fn)(mcp_call_t *call, json_t *args, void *ud);
/* The client cancelled the call: stop waiting, forget the call. */
typedef void (*mcp_cancel_fn)(mcp_call_t *call, void *data);

typedef struct mcp_tool {
    const char *name;          /* required, [A-Za-z0-9_-] */
    const char *title;         /* optional display name */
    const char *description;   /* required, one or two lines */
    const char *input_schema;  /* JSON text: {"type":"object",...} */
    const char *output_schema; /* JSON text: {"type":"object",...} */
    const char *annotations;   /* JSON text: {"readOnlyHint":...} */
    /* The arguments whose strings may hold NUL (bytes for a process's
     * input), NULL-terminated; NULL: none.  A NUL anywhere else (a value,
     * an array item, an object's value) is refused before fn runs: a C
     * string would silently end there.  Must outlive the server. */
    const char *const *nul_args;
    mcp_tool_fn fn;
    void *ud;
} mcp_tool_t;

/* Reads a resource matched by a template.  vars holds the template's
 * variables ({"id":"1000"}); the text goes into *text.  0, -ENOENT (→
 * "resource not found"), or another negative code. */
typedef int (*mcp_read_fn)(const char *uri, const json_t *vars, buf_t *text,
                           void *ud);
/* Appends the concrete resources that exist now to list (resources/list):
 * objects {uri, name, mimeType, ...}.  0 or a negative code. */
typedef int (*mcp_list_fn)(json_t *list, void *ud);

/* The peer is gone (input EOF, input or output failure).  The owner
 * decides what follows; usually it shuts down. */
typedef void (*mcp_close_fn)(mcp_server_t *srv, int err, void *data);

typedef struct mcp_server_opts {
    const char *name;         /* serverInfo.name, required */
    const char *version;      /* serverInfo.version, required */
    const char *instructions; /* optional, sent in the initialize result */
    mcp_close_fn on_close;
    void *data;
} mcp_server_opts_t;

/* Log levels of logging/setLevel, in rising severity (RFC 5424). */
typedef enum mcp_log_level {
    MCP_LOG_DEBUG = 0,
    MCP_LOG_INFO,
    MCP_LOG_NOTICE,
    MCP_LOG_WARNING,
    MCP_LOG_ERROR,
    MCP_LOG_CRITICAL,
    MCP_LOG_ALERT,
    MCP_LOG_EMERGENCY,
} mcp_log_level_t;

/* ---------------------------------------------------------------- server */

/* Creates a server on in_fd/out_fd (non-blocking; not closed by free; in_fd
 * may be -1 for mcp_server_feed only).  Strings of opts are copied.
 * 0, -EINVAL or -ENOMEM. */
int mcp_server_new(loop_t *l, int in_fd, int out_fd,
                   const mcp_server_opts_t *opts, mcp_server_t **out);
/* Cancels every call in flight (hooks run, no responses), stops both fds
 * and frees.  NULL is a no-op. */
void mcp_server_free(mcp_server_t *srv);

/* Registers a tool; every string is copied and both schemas checked:
 * "type":"object", every property typed, each required name a property,
 * no top-level $ref/oneOf/anyOf/allOf; annotations an object; a
 * description of one or two lines.  -EINVAL (bad tool), -EEXIST (name
 * taken), -ENOSPC (MCP_MAX_TOOLS) or -ENOMEM. */
int mcp_server_add_tool(mcp_server_t *srv, const mcp_tool_t *tool);

/* Registers a resource template (RFC 6570 level 1: literal text and {var}
 * matching one or more characters other than '/').  Strings are copied.
 * 0, -EINVAL, -ENOSPC or -ENOMEM. */
int mcp_server_add_resource_template(mcp_server_t *srv,
                                     const char *uri_template,
                                     const char *name,
                                     const char *description,
                                     const char *mime_type,
                                     mcp_read_fn read_fn, void *ud);
/* Sets the source of resources/list (without one the list is empty). */
void mcp_server_set_resource_lister(mcp_server_t *srv, mcp_list_fn fn,
                                    void *ud);
/* Tells subscribers of uri that it changed (new output): sends
 * notifications/resources/updated, at most once per
 * MCP_UPDATED_MIN_INTERVAL_MS per URI (later changes in the window are
 * folded into one notification at its end).  A no-op for a URI nobody
 * subscribed.  0 or a negative code. */
int mcp_server_notify_updated(mcp_server_t *srv, const char *uri);
/* Sends notifications/message when level reaches the client's
 * logging/setLevel (default: info) and the session is initialized. */
int mcp_server_log(mcp_server_t *srv, mcp_log_level_t level,
                   const char *logger, const char *message);

/* Shutdown, in order: stop reading input, then cancel every call in
 * flight (each hook runs, no responses are sent).  Output keeps draining
 * while the loop runs. */
void mcp_server_stop_input(mcp_server_t *srv);
void mcp_server_cancel_all(mcp_server_t *srv);
/* Bytes of output still queued (wait for 0 before exiting). */
size_t mcp_server_out_pending(const mcp_server_t *srv);
/* How many tools/call requests are still waiting for their response. */
size_t mcp_server_calls_pending(const mcp_server_t *srv);
/* Feeds bytes as if read from in_fd (tests, the fuzzer). */
int mcp_server_feed(mcp_server_t *srv, const void *p, size_t n);

/* The loop the server runs on (for tools arming timers). */
loop_t *mcp_server_loop(const mcp_server_t *srv);
/* True once initialize was answered. */
bool mcp_server_initialized(const mcp_server_t *srv);
/* The protocol version agreed by initialize, or NULL before it. */
const char *mcp_server_protocol_version(const mcp_server_t *srv);

/* ------------------------------------------------------------------ calls */

/* Completes the call with a success: structuredContent = structured
 * (stolen; must be an object), content = one text block holding text, or
 * the compact JSON of structured when text is NULL.  0, -EINVAL (not an
 * object: the call is completed as an internal error instead) or
 * -EALREADY (completed or cancelled: nothing is sent; structured is
 * released). */
int mcp_call_result(mcp_call_t *call, json_t *structured, const char *text);
/* The same with text of len bytes, which may hold NUL bytes (a command's
 * output does: the text must carry all of it, as structuredContent does). */
int mcp_call_result_n(mcp_call_t *call, json_t *structured, const char *text,
                      size_t len);
/* Completes the call with isError true and one sentence naming the
 * argument or the cause.  0 or -EALREADY. */
int mcp_call_error(mcp_call_t *call, const char *sentence);
/* printf-style mcp_call_error. */
int mcp_call_errorf(mcp_call_t *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sets the hook run if the client cancels the call (replaces any). */
void mcp_call_on_cancel(mcp_call_t *call, mcp_cancel_fn fn, void *data);
/* True when the request carried _meta.progressToken. */
bool mcp_call_wants_progress(const mcp_call_t *call);
/* Sends notifications/progress: progress must be above the last one sent
 * for this call; total <= 0 and message NULL are left out.  0 (also a no-op
 * without a progressToken), -EINVAL (not increasing) or -EALREADY. */
int mcp_call_progress(mcp_call_t *call, double progress, double total,
                      const char *message);
/* The request's id, exactly as sent (borrowed). */
const json_t *mcp_call_id_json(const mcp_call_t *call);
/* The called tool's name. */
const char *mcp_call_tool_name(const mcp_call_t *call);
mcp_server_t *mcp_call_server(const mcp_call_t *call);

/* ------------------------------------------------------------ validation */

/*
 * Checks args against an object schema of the subset tools use: required,
 * properties with "type" (a name or an array of names; "integer" takes an
 * integral real, which is rewritten to an integer in args), "enum",
 * "minimum"/"maximum", "items":{"type"} for arrays, and
 * additionalProperties:false.  Returns 0, or -EINVAL with one sentence in
 * msg naming the argument ("`yield_time_ms` must be an integer."), or
 * -ENOMEM (msg says so too).
 */
int mcp_schema_check(const json_t *schema, json_t *args, char *msg,
                     size_t cap);

#endif
