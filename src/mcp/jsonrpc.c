/*
 * jsonrpc.c — JSON-RPC 2.0 line framing, validation and the output queue
 * (see jsonrpc.h).
 *
 * Input: bytes are scanned once for '\n' as they arrive (never rescanned),
 * a line with no '\n' yet is kept in `line`, and a line that would pass
 * JSONRPC_LINE_MAX is refused as soon as it does, then skipped up to its
 * newline.  Output: one buffer written from `out_off`, compacted when the
 * written prefix is the larger half, so partial writes cost no memmove each.
 */
#include "mcp/jsonrpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"

struct jsonrpc {
    loop_t *loop;
    int in_fd, out_fd;
    jsonrpc_msg_fn on_msg;
    jsonrpc_close_fn on_close;
    void *data;

    buf_t line;       /* the partial line so far */
    bool discarding;  /* skipping the rest of an over-long line */
    bool in_watched;  /* in_fd is registered with the loop */
    bool in_polled;   /* in_fd refused by epoll: read from timers */
    uint64_t in_timer;
    bool paused;      /* output above the high water mark */
    bool in_done;     /* EOF seen or input stopped */

    buf_t out;
    size_t out_off;   /* bytes of out already written */
    bool out_watched; /* waiting for LOOP_WRITE */
    int out_err;      /* sticky output failure */
    bool closed;      /* on_close already called */
};

/* ------------------------------------------------------------ validation */

/* 2^53: every integer below it in magnitude is exact as a double. */
#define JSONRPC_EXACT_REAL 9007199254740992.0

static int refuse(jsonrpc_error_t *e, int code, json_t *id, const char *msg)
{
    e->code = code;
    e->id = id;
    snprintf(e->message, sizeof e->message, "%s", msg);
    return code;
}

/* Request ids are strings or integers: null, reals and booleans are not
 * (the MCP schema says so, and an id we cannot echo exactly is useless). */
static bool valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* An integer id as the reals-only parse gives it back (2 as 2.0), or
 * NULL when it was not a whole number we could echo exactly. */
static json_t *id_from_real(const json_t *id)
{
    double v = json_real_value(id);
    /* Below 2^53 in magnitude the double is the integer the client sent;
     * past it, it may be a neighbour rounded to it. */
    if (!(v > -JSONRPC_EXACT_REAL && v < JSONRPC_EXACT_REAL) ||
        v != (double)(int64_t)v)
        return NULL;
    return json_integer((json_int_t)v);
}

static json_t *repeated_key_id(const char *s, size_t n);

/* Whether jansson refused valid JSON, for something it cannot hold: a NUL
 * in an object's key (`"env":{"A\u0000B":"x"}`), a real past a double's
 * range (`1e400`), nesting deeper than its limit. */
static bool jansson_limit(const json_error_t *j)
{
    enum json_error_code c = json_error_code(j);
    return c == json_error_null_byte_in_key ||
           c == json_error_numeric_overflow || c == json_error_stack_overflow;
}

/* A line jansson refused.  Valid JSON with an integer past 64 bits (a
 * client's 1e19 goes out as 10000000000000000000) fails too, and a reply
 * without an id would leave that client waiting for its answer: such a
 * line is parsed again with every number as a real, only to find its id,
 * and refused as invalid params naming the number.  Valid JSON that
 * jansson cannot hold at all (jansson_limit) has its id read from the
 * text.  Anything else is a parse error, which has no id to give. */
static int refuse_unparsed(const char *line, size_t len, size_t flags,
                           const json_error_t *jerr, jsonrpc_error_t *e,
                           json_t **root_out)
{
    json_error_t j2;
    json_t *reals = json_loadb(line, len, flags | JSON_DECODE_INT_AS_REAL,
                               &j2);
    if (!reals && jansson_limit(&j2)) {
        /* the id is kept alive by a root of its own */
        json_t *id = repeated_key_id(line, len);
        if (id) {
            *root_out = json_pack("{s:o}", "id", id);
            id = *root_out ? json_object_get(*root_out, "id") : NULL;
        }
        e->code = JSONRPC_INVALID_PARAMS;
        e->id = id;
        snprintf(e->message, sizeof e->message,
                 "Invalid params: %s at byte %d (valid JSON that this "
                 "server cannot take).", j2.text, j2.position);
        return e->code;
    }
    if (!reals) {
        e->code = JSONRPC_PARSE_ERROR;
        e->id = NULL;
        snprintf(e->message, sizeof e->message,
                 "Parse error: %s at byte %d.", jerr->text, jerr->position);
        return e->code;
    }
    json_t *id = json_is_object(reals) ? json_object_get(reals, "id") : NULL;
    if (json_is_real(id)) {
        if ((id = id_from_real(id)))
            json_object_set_new(reals, "id", id); /* reals keeps it alive */
    } else if (!json_is_string(id)) {
        id = NULL;
    }
    *root_out = reals;
    e->code = JSONRPC_INVALID_PARAMS;
    e->id = id;
    snprintf(e->message, sizeof e->message,
             "Invalid params: an integer is out of range (%s at byte %d); "
             "integers here are 64-bit.", jerr->text, jerr->position);
    return e->code;
}

/* Parses s[a..b) (one JSON value, whitespace around allowed); NULL when it
 * does not parse. */
static json_t *load_span(const char *s, size_t a, size_t b)
{
    return json_loadb(s + a, b - a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

/*
 * The id of a well-formed message that jansson would not take whole (it
 * repeats a key, or holds what jansson cannot: jansson_limit), when it
 * has one to answer with: the value of the top-level "id" member, read
 * from the text (its key decoded, so "i\u0064" is "id"; an "id" inside
 * params is not it).  NULL when there is none, or when "id" itself is
 * repeated with different values: that message names two requests, and
 * answering one of them would be a guess.  A new reference.
 */
static json_t *repeated_key_id(const char *s, size_t n)
{
    json_t *id = NULL;
    unsigned depth = 0;
    bool key_next = false, is_id = false, ambiguous = false;
    size_t vstart = 0;
    for (size_t i = 0; i < n && !ambiguous; i++) {
        char c = s[i];
        if (c == '"') {
            size_t start = i;
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++;
            if (i >= n)
                break; /* jansson parsed it: not reached */
            if (depth == 1 && key_next) {
                json_t *k = load_span(s, start, i + 1);
                is_id = json_is_string(k) && json_string_length(k) == 2 &&
                        !memcmp(json_string_value(k), "id", 2);
                json_decref(k);
                key_next = false;
            }
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth == 1)
                key_next = c == '{';
            continue;
        }
        if (depth != 1) {
            if ((c == '}' || c == ']') && depth)
                depth--;
            continue;
        }
        if (c == ':' && is_id)
            vstart = i + 1;
        if (c != ',' && c != '}' && c != ']')
            continue;
        if (is_id) { /* the end of an "id" member's value */
            json_t *v = load_span(s, vstart, i);
            is_id = false;
            if (!v || (id && !json_equal(id, v)))
                ambiguous = true;
            if (!id)
                id = v;
            else
                json_decref(v);
        }
        if (c == ',')
            key_next = true;
        else
            depth--;
    }
    if (ambiguous || !valid_id(id)) {
        json_decref(id);
        return NULL;
    }
    return id;
}

/*
 * A line jansson refused for a repeated key.  Two values for one key could
 * mean different things to us and to a proxy in between (one that reads
 * the first and vets `"cmd": "ls"` while we would run the last), so the
 * message is refused, but as an invalid request answered with its id when
 * that is certain: a parse error has no id, and the client would wait for
 * its answer forever.  A line with another fault too is refused for that.
 */
static int refuse_repeated(const char *line, size_t len, size_t flags,
                           const json_error_t *jerr, jsonrpc_error_t *e,
                           json_t **root_out)
{
    json_error_t j2;
    flags &= ~(size_t)JSON_REJECT_DUPLICATES;
    json_t *all = json_loadb(line, len, flags, &j2);
    if (!all)
        return refuse_unparsed(line, len, flags, &j2, e, root_out);
    json_t *id = json_is_object(all) ? repeated_key_id(line, len) : NULL;
    if (id)
        json_object_set_new(all, "id", id); /* all keeps it alive */
    *root_out = all;
    e->code = JSONRPC_INVALID_REQUEST;
    e->id = id;
    snprintf(e->message, sizeof e->message,
             "Invalid Request: %s at byte %d; a key may appear only once in "
             "an object.", jerr->text, jerr->position);
    return e->code;
}

/* A JSON string holding NUL (allowed with JSON_ALLOW_NUL) is not a method
 * name: strcmp would see a different name than the client sent. */
static bool plain_string(const json_t *s)
{
    return json_is_string(s) &&
           strlen(json_string_value(s)) == json_string_length(s);
}

int jsonrpc_parse(const char *line, size_t len, jsonrpc_msg_t *m,
                  jsonrpc_error_t *e, json_t **root_out)
{
    json_error_t jerr;
    memset(m, 0, sizeof *m);
    *root_out = NULL;
    /* Duplicate keys are refused (refuse_repeated): two ids or two
     * methods in one message could mean different things to us and to a
     * proxy in between.  NUL
     * inside strings is allowed: stdin writes may carry it.  Any value
     * parses, so a bare 42 is an invalid request, not a parse error. */
    const size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL |
                         JSON_DECODE_ANY;
    json_t *root = json_loadb(line, len, flags, &jerr);
    if (!root)
        return json_error_code(&jerr) == json_error_duplicate_key
                   ? refuse_repeated(line, len, flags, &jerr, e, root_out)
                   : refuse_unparsed(line, len, flags, &jerr, e, root_out);
    *root_out = root;
    if (json_is_array(root))
        return refuse(e, JSONRPC_INVALID_REQUEST, NULL,
                      "Invalid Request: batch arrays are not supported; send "
                      "one message per line.");
    if (!json_is_object(root))
        return refuse(e, JSONRPC_INVALID_REQUEST, NULL,
                      "Invalid Request: a message must be a JSON object.");

    json_t *id = json_object_get(root, "id");
    if (id && !valid_id(id))
        return refuse(e, JSONRPC_INVALID_REQUEST, NULL,
                      "Invalid Request: id must be a string or an integer.");
    const json_t *ver = json_object_get(root, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
        return refuse(e, JSONRPC_INVALID_REQUEST, id,
                      "Invalid Request: jsonrpc must be \"2.0\".");

    json_t *method = json_object_get(root, "method");
    if (!method) {
        /* An answer to a request of ours: result or error, with an id
         * (an error about an unreadable message of ours may lack it). */
        bool has_result = json_object_get(root, "result") != NULL;
        bool has_error = json_is_object(json_object_get(root, "error"));
        if ((has_result && id) || (has_error && !has_result)) {
            m->kind = JSONRPC_RESPONSE;
            m->root = root;
            m->id = id;
            *root_out = NULL;
            return 0;
        }
        return refuse(e, JSONRPC_INVALID_REQUEST, id,
                      "Invalid Request: method is missing.");
    }
    if (!plain_string(method))
        return refuse(e, JSONRPC_INVALID_REQUEST, id,
                      "Invalid Request: method must be a string.");
    json_t *params = json_object_get(root, "params");
    if (params && !json_is_object(params) && !json_is_array(params))
        return refuse(e, JSONRPC_INVALID_REQUEST, id,
                      "Invalid Request: params must be an object or an "
                      "array.");
    m->kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
    m->root = root;
    m->id = id;
    m->method = json_string_value(method);
    m->params = params;
    *root_out = NULL;
    return 0;
}

/* ----------------------------------------------------------------- output */

static void notify_close(jsonrpc_t *j, int err)
{
    if (j->closed)
        return;
    j->closed = true;
    if (j->on_close)
        j->on_close(j, err, j->data);
}

static void input_resume(jsonrpc_t *j);
static void on_writable(loop_t *l, int fd, unsigned ev, void *data);

/* Writes what the fd takes now.  0, or the sticky error. */
static int flush_out(jsonrpc_t *j)
{
    while (!j->out_err && j->out_off < j->out.len) {
        ssize_t n = write(j->out_fd, j->out.p + j->out_off,
                          j->out.len - j->out_off);
        if (n > 0) {
            j->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        j->out_err = n < 0 ? -errno : -EPIPE;
    }
    if (j->out_err || j->out_off == j->out.len) {
        buf_reset(&j->out);
        j->out_off = 0;
    } else if (j->out_off > j->out.len / 2) {
        buf_consume(&j->out, j->out_off);
        j->out_off = 0;
    }
    bool want = !j->out_err && j->out.len > 0;
    if (want != j->out_watched) {
        if (want)
            want = loop_io_add(j->loop, j->out_fd, LOOP_WRITE, on_writable,
                               j) == 0;
        else
            loop_io_del(j->loop, j->out_fd);
        j->out_watched = want;
    }
    if (j->out_err) {
        notify_close(j, j->out_err);
        return j->out_err;
    }
    if (j->paused && j->out.len == 0)
        input_resume(j);
    return 0;
}

static void on_writable(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    flush_out(data);
}

int jsonrpc_send(jsonrpc_t *j, const json_t *msg)
{
    if (j->out_err)
        return j->out_err;
    size_t need = json_dumpb(msg, NULL, 0, JSON_COMPACT);
    if (need == 0)
        return -EINVAL;
    int rc = buf_reserve(&j->out, need + 1);
    if (rc < 0)
        return rc;
    /* Serialised straight into the queue, '\n' after: a whole line. */
    json_dumpb(msg, j->out.p + j->out.len, need, JSON_COMPACT);
    j->out.len += need;
    j->out.p[j->out.len++] = '\n';
    j->out.p[j->out.len] = '\0';
    if (j->out_watched)
        return 0; /* the writable callback will carry it */
    return flush_out(j);
}

static int send_owned(jsonrpc_t *j, json_t *msg)
{
    if (!msg)
        return -ENOMEM;
    int rc = jsonrpc_send(j, msg);
    json_decref(msg);
    return rc;
}

int jsonrpc_respond(jsonrpc_t *j, const json_t *id, json_t *result)
{
    if (!result)
        return -ENOMEM;
    return send_owned(j, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
                                   id, "result", result));
}

int jsonrpc_respond_error(jsonrpc_t *j, const json_t *id, int code,
                          const char *message)
{
    /* Members in the usual order (jsonrpc, id, error): people read these. */
    json_t *msg = json_pack("{s:s}", "jsonrpc", "2.0");
    if (msg && id && json_object_set(msg, "id", (json_t *)id) < 0) {
        json_decref(msg);
        return -ENOMEM;
    }
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
    /* A message JSON cannot hold (not UTF-8): the answer still goes, so
     * that the client is not left waiting on its id. */
    if (!err)
        err = json_pack("{s:i, s:s}", "code", code, "message",
                        "(the error's message is not valid UTF-8)");
    if (msg && json_object_set_new(msg, "error", err) < 0) {
        json_decref(msg);
        return -ENOMEM;
    }
    return send_owned(j, msg);
}

int jsonrpc_notify(jsonrpc_t *j, const char *method, json_t *params)
{
    json_t *msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (msg && params && json_object_set(msg, "params", params) < 0) {
        json_decref(msg);
        msg = NULL;
    }
    json_decref(params);
    return send_owned(j, msg);
}

size_t jsonrpc_out_pending(const jsonrpc_t *j)
{
    return j->out.len - j->out_off;
}

/* ------------------------------------------------------------------ input */

static void handle_line(jsonrpc_t *j, const char *p, size_t n)
{
    if (n && p[n - 1] == '\r')
        n--; /* CRLF clients */
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
        i++;
    if (i == n)
        return; /* blank lines are keep-alives, not messages */
    jsonrpc_msg_t m;
    jsonrpc_error_t e;
    json_t *bad;
    if (jsonrpc_parse(p, n, &m, &e, &bad) < 0) {
        jsonrpc_respond_error(j, e.id, e.code, e.message);
        json_decref(bad);
        return;
    }
    j->on_msg(j, &m, j->data);
    json_decref(m.root);
}

static void refuse_long_line(jsonrpc_t *j)
{
    char msg[JSONRPC_ERRMSG_MAX];
    snprintf(msg, sizeof msg,
             "Invalid Request: the message exceeds the line limit of %u "
             "bytes and was discarded.", JSONRPC_LINE_MAX);
    jsonrpc_respond_error(j, NULL, JSONRPC_INVALID_REQUEST, msg);
    if (j->line.cap > JSONRPC_LINE_KEEP)
        buf_free(&j->line);
    else
        buf_reset(&j->line);
}

int jsonrpc_feed(jsonrpc_t *j, const void *data, size_t n)
{
    const char *p = data;
    if (j->in_done)
        return -ESHUTDOWN;
    while (n > 0 && !j->in_done) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        size_t step = nl ? take + 1 : n;
        if (j->discarding) {
            j->discarding = !nl;
        } else if (take > JSONRPC_LINE_MAX - j->line.len) {
            refuse_long_line(j);
            j->discarding = !nl;
        } else if (!nl) {
            if (buf_append(&j->line, p, take) < 0) {
                refuse_long_line(j); /* no memory: refuse, do not die */
                j->discarding = true;
            }
        } else if (j->line.len == 0) {
            handle_line(j, p, take); /* the common case: no copy */
        } else if (buf_append(&j->line, p, take) < 0) {
            refuse_long_line(j);
        } else {
            handle_line(j, j->line.p, j->line.len);
            if (j->line.cap > JSONRPC_LINE_KEEP)
                buf_free(&j->line);
            else
                buf_reset(&j->line);
        }
        p += step;
        n -= step;
    }
    return 0;
}

void jsonrpc_feed_eof(jsonrpc_t *j)
{
    if (!j->in_done && !j->discarding && j->line.len) {
        /* Handled from a copy: the handler may stop input, which frees
         * the line buffer. */
        buf_t last = j->line;
        j->line = (buf_t)BUF_INIT;
        handle_line(j, last.p, last.len);
        buf_free(&last);
    }
    jsonrpc_stop_input(j);
}

static void input_unwatch(jsonrpc_t *j)
{
    if (j->in_watched)
        loop_io_del(j->loop, j->in_fd);
    j->in_watched = false;
    loop_timer_del(j->loop, j->in_timer);
    j->in_timer = 0;
}

void jsonrpc_stop_input(jsonrpc_t *j)
{
    input_unwatch(j);
    j->in_done = true;
    j->discarding = false;
    buf_free(&j->line);
}

/* One read: EOF and errors end input and tell the owner. */
static void read_some(jsonrpc_t *j)
{
    char chunk[JSONRPC_READ_CHUNK];
    ssize_t n = read(j->in_fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n > 0) {
        jsonrpc_feed(j, chunk, (size_t)n);
        if (!j->in_done && jsonrpc_out_pending(j) > JSONRPC_OUT_HIGH_WATER) {
            input_unwatch(j);
            j->paused = true;
        }
        return;
    }
    int err = n < 0 ? -errno : 0;
    jsonrpc_feed_eof(j);
    notify_close(j, err);
}

static void on_readable(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    read_some(data);
}

static void on_read_timer(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    jsonrpc_t *j = data;
    j->in_timer = 0;
    read_some(j);
    if (!j->in_done && !j->paused && !j->in_timer)
        loop_timer_add(j->loop, 0, on_read_timer, j, &j->in_timer);
}

static int input_watch(jsonrpc_t *j)
{
    if (j->in_fd < 0 || j->in_done)
        return 0;
    if (j->in_polled)
        return loop_timer_add(j->loop, 0, on_read_timer, j, &j->in_timer);
    int rc = loop_io_add(j->loop, j->in_fd, LOOP_READ, on_readable, j);
    if (rc == -EPERM) {
        /* A regular file or /dev/null: always readable, epoll refuses it.
         * Read it a chunk per loop iteration instead. */
        j->in_polled = true;
        return loop_timer_add(j->loop, 0, on_read_timer, j, &j->in_timer);
    }
    if (rc == 0)
        j->in_watched = true;
    return rc;
}

static void input_resume(jsonrpc_t *j)
{
    j->paused = false;
    input_watch(j);
}

/* -------------------------------------------------------------- lifetime */

int jsonrpc_new(loop_t *l, int in_fd, int out_fd, jsonrpc_msg_fn on_msg,
                jsonrpc_close_fn on_close, void *data, jsonrpc_t **out)
{
    if (!l || out_fd < 0 || !on_msg || !out)
        return -EINVAL;
    jsonrpc_t *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->loop = l;
    j->in_fd = in_fd;
    j->out_fd = out_fd;
    j->on_msg = on_msg;
    j->on_close = on_close;
    j->data = data;
    int rc = input_watch(j);
    if (rc < 0) {
        free(j);
        return rc;
    }
    *out = j;
    return 0;
}

void jsonrpc_free(jsonrpc_t *j)
{
    if (!j)
        return;
    input_unwatch(j);
    if (j->out_watched)
        loop_io_del(j->loop, j->out_fd);
    buf_free(&j->line);
    buf_free(&j->out);
    free(j);
}
