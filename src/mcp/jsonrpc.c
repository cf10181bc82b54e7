/*
 * jsonrpc.c — JSON-RPC 2.0 line framing, validation and the output queue
 * (see jsonrpc.h).
 *
 * Input: bytes are scanned once for '\n' as they arrive (never rescanned),
 * a line with no '\n' yet is kept in `line`, and a line that would pass
 * JSONRPC_LINE_MAX is refused as soon as it does (its kept start read once
 * more, for the id to answer on: jsonrpc_text_id), then skipped up to its
 * newline.  Output: one buffer written from `out_off`, compacted when the
 * written prefix is the larger half, so partial writes cost no memmove each.
 */
#include "mcp/jsonrpc.h"

#include <errno.h>
#include <stdint.h>
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

/* Parses s[a..b) (one JSON value, whitespace around allowed); NULL when it
 * does not parse. */
static json_t *load_span(const char *s, size_t a, size_t b)
{
    return json_loadb(s + a, b - a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

/* ------------------------------------------------ the id, read from text */

/* What the scan below returns instead of an index: the text ended before
 * the thing scanned did (SCAN_END), or it is not JSON (SCAN_FAIL).  Both
 * are past any index of a real buffer. */
#define SCAN_END SIZE_MAX
#define SCAN_FAIL (SIZE_MAX - 1)
/* The longest key text that can decode to "id", quotes included: both
 * letters escaped, "\u0069\u0064".  Longer keys are not decoded at all. */
#define SCAN_ID_KEY_MAX 14

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
                     s[i] == '\r'))
        i++;
    return i;
}

/* s[i] is '"': the index past its closing quote.  An escape is stepped
 * over, not checked: the one string decoded (the id) is checked by
 * jansson. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '"')
            return i + 1;
        if (s[i] == '\\' && ++i == n)
            break;
    }
    return SCAN_END;
}

/* s[i] opens an object or an array: the index past its close.  Brackets
 * are counted, not paired (a skipped value need only end where JSON's
 * would), and counted in a size_t, not recursed into: nesting as deep as
 * the text is long costs nothing more. */
static size_t skip_container(const char *s, size_t n, size_t i)
{
    size_t depth = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"') {
            i = skip_string(s, n, i);
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return i + 1;
        i++;
    }
    return SCAN_END;
}

/* The bytes a number or a literal (true, false, null) is made of, and
 * then some: what they spell is left to jansson, when it matters. */
static bool scalar_byte(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') || c == '+' || c == '-' || c == '.';
}

/* The value at s[i] (i < n): the index past it.  A number running to the
 * end of the text is SCAN_END: more digits may follow. */
static size_t skip_value(const char *s, size_t n, size_t i)
{
    if (s[i] == '"')
        return skip_string(s, n, i);
    if (s[i] == '{' || s[i] == '[')
        return skip_container(s, n, i);
    size_t j = i;
    while (j < n && scalar_byte(s[j]))
        j++;
    if (j == i)
        return SCAN_FAIL;
    return j == n ? SCAN_END : j;
}

/* Whether the key text s[a..b), quotes included, decodes to "id". */
static bool key_is_id(const char *s, size_t a, size_t b)
{
    if (b - a == 4 && !memcmp(s + a, "\"id\"", 4))
        return true;
    if (b - a > SCAN_ID_KEY_MAX)
        return false;
    json_t *k = load_span(s, a, b);
    bool yes = json_is_string(k) && json_string_length(k) == 2 &&
               !memcmp(json_string_value(k), "id", 2);
    json_decref(k);
    return yes;
}

/* An "id" member's value s[a..b) into *id: false when it cannot be the one
 * id (a container, what jansson does not take, or a second value unlike
 * the first). */
static bool take_id(json_t **id, const char *s, size_t a, size_t b)
{
    if (s[a] == '{' || s[a] == '[')
        return false; /* never an id, and not worth decoding */
    json_t *v = load_span(s, a, b);
    bool ok = v && (!*id || json_equal(*id, v));
    if (ok && !*id)
        *id = v;
    else
        json_decref(v);
    return ok;
}

/* One member of the top-level object, its key at s[i] (i < n): the index
 * of the next member's key, SCAN_END at the end of the object or of the
 * text, SCAN_FAIL when the text is not JSON or the id cannot be one. */
static size_t scan_member(const char *s, size_t n, size_t i, json_t **id)
{
    if (s[i] != '"')
        return SCAN_FAIL;
    size_t k = skip_string(s, n, i);
    if (k == SCAN_END)
        return SCAN_END;
    bool is_id = key_is_id(s, i, k);
    i = skip_ws(s, n, k);
    if (i == n)
        return SCAN_END;
    if (s[i] != ':')
        return SCAN_FAIL;
    size_t v = skip_ws(s, n, i + 1);
    if (v == n)
        return SCAN_END;
    i = skip_value(s, n, v);
    if (i >= SCAN_FAIL)
        return i;
    if (is_id && !take_id(id, s, v, i))
        return SCAN_FAIL;
    i = skip_ws(s, n, i);
    if (i == n || s[i] == '}')
        return SCAN_END; /* what follows the object is not ours to judge */
    if (s[i] != ',')
        return SCAN_FAIL;
    return skip_ws(s, n, i + 1);
}

json_t *jsonrpc_text_id(const char *s, size_t n)
{
    size_t i = skip_ws(s, n, 0);
    if (i == n || s[i] != '{')
        return NULL;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == '}')
        return NULL;
    json_t *id = NULL;
    while (i < n) /* SCAN_END and SCAN_FAIL end it too */
        i = scan_member(s, n, i, &id);
    if (i == SCAN_FAIL || !valid_id(id)) {
        json_decref(id);
        return NULL;
    }
    return id;
}

/* ------------------------------------------------ what jansson refused */

/* Whether jansson refused valid JSON, for something it cannot hold: a NUL
 * in an object's key (`"env":{"A\u0000B":"x"}`), a real past a double's
 * range (`1e400`), nesting deeper than its limit. */
static bool jansson_limit(const json_error_t *j)
{
    enum json_error_code c = json_error_code(j);
    return c == json_error_null_byte_in_key ||
           c == json_error_numeric_overflow || c == json_error_stack_overflow;
}

/* How jansson's error text starts for a \u escape of half a surrogate pair
 * without its other half ("invalid Unicode '\uD800'", or with the escape
 * after it when that is not the other half).  A malformed escape is
 * "invalid escape" or "invalid Unicode escape", without the quote. */
#define JANSSON_LONE_SURROGATE "invalid Unicode '"

/*
 * Whether jansson refused a lone surrogate escape, "\ud800" with no
 * "\udc00".."\udfff" after it, or one of those alone.  RFC 8259's grammar
 * allows it (JavaScript's JSON.stringify writes one for a string holding
 * half a pair: an emoji cut in two), but it names no character, and text
 * here is UTF-8.  Refused as invalid params with the id, not taken with
 * U+FFFD in its place: replacing would run a command, write stdin or set
 * an environment other than the one sent, quietly; it would make distinct
 * strings equal ("\ud800" and "\ud801", so two keys of one object could
 * become one); and an id holding one could not be echoed as sent.  A
 * client whose string broke is better told where, while it can still
 * repair it.  jansson gives this the code of any syntax error, so its
 * words are matched (a test pins them).
 */
static bool lone_surrogate(const json_error_t *j)
{
    return json_error_code(j) == json_error_invalid_syntax &&
           !strncmp(j->text, JANSSON_LONE_SURROGATE,
                    sizeof JANSSON_LONE_SURROGATE - 1);
}

/* Valid JSON that jansson would not hold (j2): -32602, with the id read
 * from the text (kept alive by a root of its own in *root_out). */
static int refuse_unheld(const char *line, size_t len, const json_error_t *j2,
                         jsonrpc_error_t *e, json_t **root_out)
{
    json_t *id = jsonrpc_text_id(line, len);
    if (id) {
        *root_out = json_pack("{s:o}", "id", id);
        id = *root_out ? json_object_get(*root_out, "id") : NULL;
    }
    e->code = JSONRPC_INVALID_PARAMS;
    e->id = id;
    if (lone_surrogate(j2)) {
        /* jansson's text without its " near '...'": that quotes the
         * client's string, which could fill the message or be cut
         * inside a character. */
        const char *near = strstr(j2->text, " near ");
        int keep = near ? (int)(near - j2->text) : (int)strlen(j2->text);
        snprintf(e->message, sizeof e->message,
                 "Invalid params: %.*s in the string ending at byte %d: "
                 "an escape of half a UTF-16 surrogate pair is valid JSON "
                 "but no character, and this server cannot take it; send "
                 "U+FFFD (\\ufffd) in its place.", keep, j2->text,
                 j2->position);
    } else {
        snprintf(e->message, sizeof e->message,
                 "Invalid params: %s at byte %d (valid JSON that this "
                 "server cannot take).", j2->text, j2->position);
    }
    return e->code;
}

/* A line jansson refused.  Valid JSON with an integer past 64 bits (a
 * client's 1e19 goes out as 10000000000000000000) fails too, and a reply
 * without an id would leave that client waiting for its answer: such a
 * line is parsed again with every number as a real, only to find its id,
 * and refused as invalid params naming the number.  Valid JSON that
 * jansson cannot hold at all (jansson_limit, lone_surrogate) has its id
 * read from the text.  Anything else is a parse error, which has no id to
 * give. */
static int refuse_unparsed(const char *line, size_t len, size_t flags,
                           const json_error_t *jerr, jsonrpc_error_t *e,
                           json_t **root_out)
{
    json_error_t j2;
    json_t *reals = json_loadb(line, len, flags | JSON_DECODE_INT_AS_REAL,
                               &j2);
    if (!reals && (jansson_limit(&j2) || lone_surrogate(&j2)))
        return refuse_unheld(line, len, &j2, e, root_out);
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
    json_t *id = jsonrpc_text_id(line, len);
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

/* The id in the start of an over-long line: the part buffered, topped up
 * from the chunk p[0..n) at hand to JSONRPC_LINE_MAX bytes, so that the
 * answer does not hang on how the line was cut into reads.  A new
 * reference, or NULL. */
static json_t *long_line_id(jsonrpc_t *j, const char *p, size_t n)
{
    if (j->line.len == 0) /* the whole start is in this chunk: no copy */
        return jsonrpc_text_id(p, n < JSONRPC_LINE_MAX ? n
                                                       : JSONRPC_LINE_MAX);
    size_t room = JSONRPC_LINE_MAX - j->line.len;
    /* Out of memory, the id is looked for in what is buffered. */
    if (n && room)
        (void)buf_append(&j->line, p, n < room ? n : room);
    return jsonrpc_text_id(j->line.p, j->line.len);
}

/* Refuses the line buffered plus p[0..n), which passes JSONRPC_LINE_MAX
 * (or found no memory), and drops it.  Answered with its id when its kept
 * start shows one: the client is waiting on that id. */
static void refuse_long_line(jsonrpc_t *j, const char *p, size_t n)
{
    char msg[JSONRPC_ERRMSG_MAX];
    snprintf(msg, sizeof msg,
             "Invalid Request: the message exceeds the line limit of %u "
             "bytes and was discarded.", JSONRPC_LINE_MAX);
    json_t *id = long_line_id(j, p, n);
    jsonrpc_respond_error(j, id, JSONRPC_INVALID_REQUEST, msg);
    json_decref(id);
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
            refuse_long_line(j, p, take);
            j->discarding = !nl;
        } else if (!nl) {
            if (buf_append(&j->line, p, take) < 0) {
                refuse_long_line(j, NULL, 0); /* no memory: do not die */
                j->discarding = true;
            }
        } else if (j->line.len == 0) {
            handle_line(j, p, take); /* the common case: no copy */
        } else if (buf_append(&j->line, p, take) < 0) {
            refuse_long_line(j, NULL, 0);
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
