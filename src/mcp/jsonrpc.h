/*
 * jsonrpc.h — JSON-RPC 2.0 over newline-delimited streams (the MCP stdio
 * transport).
 *
 * One message per line in both directions.  Input comes from a non-blocking
 * fd watched by the loop: partial lines are buffered, many lines in one read
 * are all handled, and a line longer than JSONRPC_LINE_MAX is answered with
 * -32600 (with its id when the first JSONRPC_LINE_MAX bytes show it: see
 * jsonrpc_text_id) and discarded up to its newline, so one runaway client
 * cannot make the process hold unbounded memory.  Every line is validated here (jsonrpc
 * "2.0", id string|integer, method string, params object|array|absent);
 * what fails is answered here (-32700, -32600) and never reaches the caller,
 * so the layer above only ever sees well-formed requests, notifications and
 * responses.
 *
 * Output is a queue to a non-blocking fd: each message is serialised compact
 * (jansson escapes every newline inside strings) and queued whole with its
 * '\n', so a message is never split by another one; when the fd would block
 * the queue waits for LOOP_WRITE.  While more than JSONRPC_OUT_HIGH_WATER
 * bytes wait, input is paused: a client that stops reading its responses
 * stops being served instead of growing our memory.
 */
#ifndef REIN_MCP_JSONRPC_H
#define REIN_MCP_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/loop.h"

/* The longest line accepted, its '\n' not counted. */
#define JSONRPC_LINE_MAX (16u * 1024u * 1024u)
/* Bytes asked of read() at a time. */
#define JSONRPC_READ_CHUNK (64u * 1024u)
/* A line buffer grown past this is released after its line, not kept. */
#define JSONRPC_LINE_KEEP (1024u * 1024u)
/* Queued output above which input is paused until the queue drains. */
#define JSONRPC_OUT_HIGH_WATER (16u * 1024u * 1024u)
/* Room for the one sentence of an error message. */
#define JSONRPC_ERRMSG_MAX 256

/* The error codes JSON-RPC 2.0 reserves. */
#define JSONRPC_PARSE_ERROR (-32700)
#define JSONRPC_INVALID_REQUEST (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS (-32602)
#define JSONRPC_INTERNAL_ERROR (-32603)

typedef enum jsonrpc_kind {
    JSONRPC_REQUEST = 1, /* method and id: needs exactly one response */
    JSONRPC_NOTIFICATION, /* method, no id: never answered */
    JSONRPC_RESPONSE,     /* result or error: an answer to us */
} jsonrpc_kind_t;

/* A validated message.  All pointers borrow from root. */
typedef struct jsonrpc_msg {
    jsonrpc_kind_t kind;
    json_t *root;
    json_t *id;         /* string or integer; NULL for notifications */
    const char *method; /* NULL for responses */
    json_t *params;     /* object or array, or NULL when absent */
} jsonrpc_msg_t;

/* Why a line was refused: the code, the id to echo (borrowed from the
 * parsed line, NULL when unknown) and one sentence. */
typedef struct jsonrpc_error {
    int code;
    json_t *id;
    char message[JSONRPC_ERRMSG_MAX];
} jsonrpc_error_t;

typedef struct jsonrpc jsonrpc_t;

/* A valid message arrived.  m and what it points to live until return;
 * take a reference (json_incref) to keep any of it.  Must not free j. */
typedef void (*jsonrpc_msg_fn)(jsonrpc_t *j, const jsonrpc_msg_t *m,
                               void *data);
/* The peer is gone: input reached EOF (err 0) or failed, or output failed
 * (-EPIPE, ...).  Called once.  Must not free j. */
typedef void (*jsonrpc_close_fn)(jsonrpc_t *j, int err, void *data);

/*
 * Parses and validates one line (without its '\n').  Returns 0 and fills
 * *m, whose root the caller releases with json_decref; or returns the
 * JSON-RPC error code (< 0) with *e filled, holding a reference to the
 * parsed text in *root_out (NULL if it did not parse) that keeps e->id
 * alive, also released with json_decref.  Valid JSON holding an integer
 * past 64 bits is JSONRPC_INVALID_PARAMS with its id (when exact), not a
 * parse error without one; so is valid JSON that jansson cannot hold (a
 * NUL in a key, a real past a double's range, nesting past its limit, a
 * \u escape of half a surrogate pair), its id read by jsonrpc_text_id.
 * Pure: no I/O.
 */
int jsonrpc_parse(const char *line, size_t len, jsonrpc_msg_t *m,
                  jsonrpc_error_t *e, json_t **root_out);

/*
 * The id of the message whose text is s[0..n), or only starts there (the
 * kept start of an over-long line), read from the text without parsing it
 * whole: the value of the top-level object's "id" member, its key decoded
 * (so "i\u0064" is "id"; an "id" inside params is not it).  Returns a new
 * reference to a string or an integer, or NULL when the text is not a
 * JSON object as far as it goes, when no "id" member's value ends within
 * it, when that value is not a string or an integer jansson takes, or
 * when "id" is there twice with different values (that message names two
 * requests, and answering one would be a guess; a second "id" past the
 * end of the text cannot be seen).  Values other than the id are skipped,
 * not checked.  One pass over the bytes, no recursion, whatever n is
 * (s is untrusted, up to JSONRPC_LINE_MAX bytes).  Pure: no I/O.
 */
json_t *jsonrpc_text_id(const char *s, size_t n);

/*
 * Creates a transport reading in_fd and writing out_fd, both non-blocking
 * and left open by jsonrpc_free.  in_fd may be -1 when bytes come only
 * through jsonrpc_feed (tests, the fuzzer).  An in_fd epoll refuses (a
 * regular file, /dev/null) is read from zero-delay timers instead.
 * 0, -EINVAL, -ENOMEM or a loop error.
 */
int jsonrpc_new(loop_t *l, int in_fd, int out_fd, jsonrpc_msg_fn on_msg,
                jsonrpc_close_fn on_close, void *data, jsonrpc_t **out);
/* Stops watching both fds and frees j; unsent output is dropped.  NULL is
 * a no-op. */
void jsonrpc_free(jsonrpc_t *j);

/* Hands bytes read from the peer to the framing, as the input watcher
 * does: complete lines are validated and dispatched at once.  0, or
 * -ESHUTDOWN after jsonrpc_stop_input (the bytes are dropped). */
int jsonrpc_feed(jsonrpc_t *j, const void *p, size_t n);
/* End of input: a last line without '\n' is handled as a line. */
void jsonrpc_feed_eof(jsonrpc_t *j);
/* Stops reading for good (shutdown): buffered input is dropped, output
 * keeps draining. */
void jsonrpc_stop_input(jsonrpc_t *j);

/* Queues msg (borrowed) as one compact line.  0, -ENOMEM, or -EPIPE once
 * the output has failed (then everything is dropped). */
int jsonrpc_send(jsonrpc_t *j, const json_t *msg);
/* {"jsonrpc":"2.0","id":id,"result":result}; steals result. */
int jsonrpc_respond(jsonrpc_t *j, const json_t *id, json_t *result);
/* An error response; id NULL leaves the member out (parse errors). */
int jsonrpc_respond_error(jsonrpc_t *j, const json_t *id, int code,
                          const char *message);
/* {"jsonrpc":"2.0","method":method,"params":params}; steals params
 * (NULL: no params). */
int jsonrpc_notify(jsonrpc_t *j, const char *method, json_t *params);

/* Bytes queued and not yet written. */
size_t jsonrpc_out_pending(const jsonrpc_t *j);

#endif
