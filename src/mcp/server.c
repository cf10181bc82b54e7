/*
 * server.c — the MCP server core (see server.h).
 *
 * Requests are dispatched through one method table; each handler returns
 * the result object, or NULL with a JSON-RPC error, or NULL with no error
 * when the response is deferred (tools/call).  Calls in flight sit on a
 * doubly linked list, found by id for notifications/cancelled; a call is
 * unlinked the moment it completes or is cancelled, and freed once no code
 * of ours or the tool's is still running on it (the tool function or the
 * cancel hook), so a tool may complete its call from inside its own
 * function without the server touching freed memory afterwards.
 */
#include "mcp/server.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "mcp/jsonrpc.h"
#include "rein.h"

/* The longest tool name (MCP's SEP-986 limit). */
#define MCP_TOOL_NAME_MAX 64
/* Lines a tool description may take. */
#define MCP_TOOL_DESC_LINES 2
/* Integers up to 2^53 survive a trip through a double (and JavaScript). */
#define MCP_SAFE_INT 9007199254740992.0
/* How much of a client's string (a method, a tool, a URI) an error echoes:
 * enough to recognise it, never a megabyte. */
#define MCP_ECHO_MAX 200
/* Room for "a string, an integer or null". */
#define MCP_TYPE_PHRASE_MAX 128

struct tool_entry {
    char *name;
    json_t *def;          /* the tools/list entry */
    json_t *input_schema; /* borrowed from def */
    const char *const *nul_args;
    mcp_tool_fn fn;
    void *ud;
};

struct template_entry {
    char *uri_template;
    char *mime_type;
    mcp_read_fn read_fn;
    void *ud;
};

struct sub {
    mcp_server_t *srv;
    char *uri;
    uint64_t last_sent; /* loop ms of the last notification, 0: none */
    uint64_t timer;     /* a folded notification is due */
    struct sub *next;
};

struct mcp_call {
    mcp_server_t *srv;
    json_t *id;
    json_t *progress_token; /* NULL: no progress wanted */
    double last_progress;
    bool progressed;
    const char *tool_name; /* the tool entry's: tools are never removed */
    mcp_cancel_fn cancel_fn;
    void *cancel_data;
    bool running;  /* inside the tool function: free when it returns */
    bool finished; /* completed or cancelled; unlinked */
    struct mcp_call *prev, *next;
};

struct mcp_server {
    loop_t *loop;
    jsonrpc_t *rpc;
    char *name, *version, *instructions;
    mcp_close_fn on_close;
    void *data;

    const char *protocol; /* agreed version; NULL before initialize */
    bool client_ready;    /* notifications/initialized received */
    mcp_log_level_t log_level;

    struct tool_entry tools[MCP_MAX_TOOLS];
    size_t ntools;
    json_t *tools_list;
    struct template_entry templates[MCP_MAX_TEMPLATES];
    size_t ntemplates;
    json_t *templates_list;
    mcp_list_fn list_fn;
    void *list_ud;

    struct sub *subs;
    size_t nsubs;
    struct mcp_call *calls;
    size_t ncalls;
};

/* A JSON-RPC error a handler reports. */
struct rpc_err {
    int code; /* 0: none (a NULL result then means "deferred") */
    char message[JSONRPC_ERRMSG_MAX];
};

static const char *const protocol_versions[] = MCP_PROTOCOL_VERSIONS;

static const char *const log_level_names[] = {
    "debug", "info", "notice", "warning", "error", "critical", "alert",
    "emergency",
};

__attribute__((format(printf, 3, 4)))
static json_t *fail(struct rpc_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    e->code = code;
    va_start(ap, fmt);
    int n = vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    /* A message cut short may end inside a character, and JSON refuses
     * that: it would not be sent at all. */
    if (n >= (int)sizeof e->message)
        e->message[utf8_valid_prefix(e->message, sizeof e->message - 1)] = 0;
    return NULL;
}

/* How much of a client's string an error message echoes: at most
 * MCP_ECHO_MAX bytes, cut at a character's start (the string is valid
 * UTF-8: the parser checked it). */
static int echo_len(const char *s)
{
    size_t n = strnlen(s, MCP_ECHO_MAX + 1);
    if (n > MCP_ECHO_MAX) {
        n = MCP_ECHO_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return (int)n;
}

/* A number as JSON: an integer when it is one, so progress 3 reads "3". */
static json_t *json_num(double v)
{
    if (v == floor(v) && fabs(v) < MCP_SAFE_INT)
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* A JSON string from bytes that may not be valid UTF-8 (jansson refuses
 * those): invalid sequences become U+FFFD. */
static json_t *json_text(const char *p, size_t n)
{
    json_t *s = json_stringn(p, n);
    if (s)
        return s;
    buf_t clean = BUF_INIT;
    utf8_dec_t d;
    utf8_init(&d);
    if (utf8_decode(&d, p, n, &clean) == 0 && utf8_finish(&d, &clean) == 0)
        s = json_stringn(clean.p ? clean.p : "", clean.len);
    buf_free(&clean);
    return s;
}

/* ------------------------------------------------------------------ calls */

static void call_free(mcp_call_t *c)
{
    json_decref(c->id);
    json_decref(c->progress_token);
    free(c);
}

static void call_unlink(mcp_call_t *c)
{
    mcp_server_t *s = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    s->ncalls--;
}

/* Sends the response and retires the call.  Steals result. */
static int call_finish(mcp_call_t *c, json_t *result)
{
    if (c->finished) {
        json_decref(result);
        return -EALREADY;
    }
    c->finished = true;
    call_unlink(c);
    /* Out of memory building the result: the request still gets its one
     * response, an error. */
    int rc = result ? jsonrpc_respond(c->srv->rpc, c->id, result)
                    : jsonrpc_respond_error(c->srv->rpc, c->id,
                                            JSONRPC_INTERNAL_ERROR,
                                            "Internal error: out of memory.");
    if (!c->running)
        call_free(c);
    return rc == -ENOMEM ? rc : 0;
}

/* Ends a call without a response: the hook runs, then the call is gone. */
static void call_cancel(mcp_call_t *c)
{
    if (c->finished)
        return;
    c->finished = true;
    call_unlink(c);
    if (c->cancel_fn)
        c->cancel_fn(c, c->cancel_data);
    if (!c->running)
        call_free(c);
}

int mcp_call_result(mcp_call_t *call, json_t *structured, const char *text)
{
    return mcp_call_result_n(call, structured, text, text ? strlen(text) : 0);
}

int mcp_call_result_n(mcp_call_t *call, json_t *structured, const char *text,
                      size_t len)
{
    if (call->finished) {
        json_decref(structured);
        return -EALREADY;
    }
    if (!json_is_object(structured)) {
        json_decref(structured);
        mcp_call_error(call, "Internal error: the tool produced no "
                             "structured result.");
        return -EINVAL;
    }
    char *dumped = NULL;
    if (!text) {
        dumped = json_dumps(structured, JSON_COMPACT);
        text = dumped ? dumped : "";
        len = strlen(text);
    }
    json_t *t = json_text(text, len);
    free(dumped);
    /* json_pack takes both references ("o"), also when it fails. */
    json_t *result = json_pack("{s:[{s:s, s:o}], s:o, s:b}", "content",
                               "type", "text", "text", t,
                               "structuredContent", structured, "isError",
                               0);
    int rc = call_finish(call, result);
    return result ? rc : -ENOMEM;
}

int mcp_call_error(mcp_call_t *call, const char *sentence)
{
    if (call->finished)
        return -EALREADY;
    json_t *t = json_text(sentence, strlen(sentence));
    return call_finish(call, json_pack("{s:[{s:s, s:o}], s:b}", "content",
                                       "type", "text", "text", t, "isError",
                                       1));
}

int mcp_call_errorf(mcp_call_t *call, const char *fmt, ...)
{
    char sentence[MCP_SENTENCE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    return mcp_call_error(call, sentence);
}

void mcp_call_on_cancel(mcp_call_t *call, mcp_cancel_fn fn, void *data)
{
    call->cancel_fn = fn;
    call->cancel_data = data;
}

bool mcp_call_wants_progress(const mcp_call_t *call)
{
    return call->progress_token != NULL;
}

int mcp_call_progress(mcp_call_t *call, double progress, double total,
                      const char *message)
{
    if (call->finished)
        return -EALREADY;
    if (!call->progress_token)
        return 0;
    if (isnan(progress) || (call->progressed && !(progress > call->last_progress)))
        return -EINVAL;
    json_t *p = json_pack("{s:O, s:o}", "progressToken", call->progress_token,
                          "progress", json_num(progress));
    if (p && total > 0)
        json_object_set_new(p, "total", json_num(total));
    if (p && message)
        json_object_set_new(p, "message", json_text(message, strlen(message)));
    if (!p)
        return -ENOMEM;
    call->progressed = true;
    call->last_progress = progress;
    return jsonrpc_notify(call->srv->rpc, "notifications/progress", p);
}

const json_t *mcp_call_id_json(const mcp_call_t *call)
{
    return call->id;
}

const char *mcp_call_tool_name(const mcp_call_t *call)
{
    return call->tool_name;
}

mcp_server_t *mcp_call_server(const mcp_call_t *call)
{
    return call->srv;
}

/* ------------------------------------------------------------ validation */

static const char *type_phrase(const char *t)
{
    if (!strcmp(t, "integer"))
        return "an integer";
    if (!strcmp(t, "array"))
        return "an array";
    if (!strcmp(t, "object"))
        return "an object";
    if (!strcmp(t, "string"))
        return "a string";
    if (!strcmp(t, "number"))
        return "a number";
    if (!strcmp(t, "boolean"))
        return "a boolean";
    return t; /* "null" */
}

/* Does v have JSON Schema type t?  An integral real is an integer (JSON
 * Schema says 1.0 is one), reported through *as_int for rewriting. */
static bool type_is(const char *t, const json_t *v, bool *as_int)
{
    if (!strcmp(t, "string"))
        return json_is_string(v);
    if (!strcmp(t, "integer")) {
        if (json_is_integer(v))
            return true;
        if (!json_is_real(v))
            return false;
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < MCP_SAFE_INT) {
            *as_int = true;
            return true;
        }
        return false;
    }
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v);
    if (!strcmp(t, "object"))
        return json_is_object(v);
    if (!strcmp(t, "array"))
        return json_is_array(v);
    if (!strcmp(t, "null"))
        return json_is_null(v);
    return false;
}

/* Checks v against a type (a name or an array of names); on failure
 * writes what v must be ("an integer or null") into want. */
static bool check_type(const json_t *type, const json_t *v, bool *as_int,
                       char *want, size_t cap)
{
    if (json_is_string(type)) {
        if (type_is(json_string_value(type), v, as_int))
            return true;
        snprintf(want, cap, "%s", type_phrase(json_string_value(type)));
        return false;
    }
    size_t i, n = json_array_size(type);
    json_t *t;
    json_array_foreach(type, i, t)
    {
        if (json_is_string(t) && type_is(json_string_value(t), v, as_int))
            return true;
    }
    size_t off = 0;
    want[0] = '\0';
    json_array_foreach(type, i, t)
    {
        int k = snprintf(want + off, cap - off, "%s%s",
                         i == 0 ? "" : (i + 1 == n ? " or " : ", "),
                         type_phrase(json_string_value(t)
                                         ? json_string_value(t)
                                         : "?"));
        if (k < 0 || (size_t)k >= cap - off)
            break;
        off += (size_t)k;
    }
    return false;
}

__attribute__((format(printf, 3, 4)))
static int bad_arg(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* Lists the accepted argument names, for the unknown-argument sentence. */
static void list_names(const json_t *props, char *out, size_t cap)
{
    const char *k;
    json_t *v;
    size_t off = 0;
    out[0] = '\0';
    json_object_foreach((json_t *)props, k, v)
    {
        int n = snprintf(out + off, cap - off, "%s%s", off ? ", " : "", k);
        if (n < 0 || (size_t)n >= cap - off)
            break;
        off += (size_t)n;
    }
}

static int check_value(const char *name, const json_t *spec, json_t *args,
                       json_t *v, char *msg, size_t cap)
{
    char want[MCP_TYPE_PHRASE_MAX];
    bool as_int = false;
    const json_t *type = json_object_get(spec, "type");
    if (type && !check_type(type, v, &as_int, want, sizeof want))
        return bad_arg(msg, cap, "`%s` must be %s.", name, want);
    if (as_int) {
        /* Tools read integers with json_integer_value: give them one. */
        v = json_integer((json_int_t)json_real_value(v));
        if (!v || json_object_set_new(args, name, v) < 0) {
            snprintf(msg, cap, "Internal error: out of memory.");
            return -ENOMEM;
        }
    }
    const json_t *en = json_object_get(spec, "enum");
    if (json_is_array(en)) {
        size_t i;
        json_t *e;
        bool found = false;
        json_array_foreach(en, i, e)
        {
            found = found || json_equal(e, v);
        }
        if (!found) {
            char *all = json_dumps(en, JSON_COMPACT);
            int rc = bad_arg(msg, cap, "`%s` must be one of %s.", name,
                             all ? all : "the listed values");
            free(all);
            return rc;
        }
    }
    if (json_is_number(v)) {
        double d = json_number_value(v);
        const json_t *lo = json_object_get(spec, "minimum");
        const json_t *hi = json_object_get(spec, "maximum");
        if (json_is_number(lo) && d < json_number_value(lo))
            return bad_arg(msg, cap, "`%s` must be at least %.15g.", name,
                           json_number_value(lo));
        if (json_is_number(hi) && d > json_number_value(hi))
            return bad_arg(msg, cap, "`%s` must be at most %.15g.", name,
                           json_number_value(hi));
    }
    const json_t *items = json_object_get(json_object_get(spec, "items"),
                                          "type");
    if (json_is_array(v) && items) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
        {
            bool ignored = false;
            if (!check_type(items, e, &ignored, want, sizeof want))
                return bad_arg(msg, cap,
                               "`%s` must be an array whose items are each "
                               "%s (item %zu is not).", name, want, i);
        }
    }
    return 0;
}

/* Whether v holds a string with a NUL byte, at any depth. */
static bool holds_nul(json_t *v)
{
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_string(v))
        return strlen(json_string_value(v)) != json_string_length(v);
    if (json_is_array(v)) {
        json_array_foreach(v, i, e)
        {
            if (holds_nul(e))
                return true;
        }
    } else if (json_is_object(v)) {
        json_object_foreach(v, k, e)
        {
            if (holds_nul(e))
                return true;
        }
    }
    return false;
}

/* -EINVAL with a sentence when an argument other than nul_args holds a
 * NUL byte (JSON's \u0000; keys with one are refused by the parser). */
static int check_nul(const char *const *nul_args, json_t *args, char *msg,
                     size_t cap)
{
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v)
    {
        bool allowed = false;
        for (const char *const *a = nul_args; a && *a && !allowed; a++)
            allowed = !strcmp(*a, k);
        if (!allowed && holds_nul(v))
            return bad_arg(msg, cap,
                           "`%s` contains a NUL byte (\\u0000), which no "
                           "command, path or environment string can hold.",
                           k);
    }
    return 0;
}

int mcp_schema_check(const json_t *schema, json_t *args, char *msg,
                     size_t cap)
{
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    const char *k;
    json_t *v;
    if (!json_is_object(args))
        return bad_arg(msg, cap, "The arguments must be a JSON object.");
    json_object_foreach(args, k, v)
    {
        const json_t *spec = json_object_get(props, k);
        if (!spec) {
            if (!json_is_false(extra))
                continue;
            char names[MCP_SENTENCE_MAX / 2];
            list_names(props, names, sizeof names);
            if (!names[0])
                return bad_arg(msg, cap,
                               "Unknown argument `%s`; this tool takes no "
                               "arguments.", k);
            return bad_arg(msg, cap,
                           "Unknown argument `%s`; the accepted arguments "
                           "are: %s.", k, names);
        }
        int rc = check_value(k, spec, args, v, msg, cap);
        if (rc < 0)
            return rc;
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(schema, "required"), i, r)
    {
        const char *name = json_string_value(r);
        if (name && !json_object_get(args, name))
            return bad_arg(msg, cap, "Missing required argument `%s`.",
                           name);
    }
    return 0;
}

/* Registration-time rules for a tool's schemas (server.h). */
static const char *schema_problem(const json_t *s)
{
    static const char *const banned[] = {"$ref", "oneOf", "anyOf", "allOf",
                                         "not"};
    if (!json_is_object(s))
        return "not a JSON object";
    const json_t *type = json_object_get(s, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "object"))
        return "type is not \"object\"";
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
        if (json_object_get(s, banned[i]))
            return "top-level $ref/oneOf/anyOf/allOf/not";
    const json_t *props = json_object_get(s, "properties");
    if (props && !json_is_object(props))
        return "properties is not an object";
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v)
    {
        const json_t *t = json_object_get(v, "type");
        if (!json_is_string(t) && !(json_is_array(t) && json_array_size(t)))
            return "a property has no type";
    }
    const json_t *req = json_object_get(s, "required");
    if (req && !json_is_array(req))
        return "required is not an array";
    size_t i, j;
    json_t *r, *r2;
    json_array_foreach(req, i, r)
    {
        if (!json_is_string(r) || !json_object_get(props, json_string_value(r)))
            return "a required name is not a property";
        json_array_foreach(req, j, r2)
        {
            if (j < i && json_equal(r, r2))
                return "a required name is listed twice";
        }
    }
    return NULL;
}

static bool valid_tool_name(const char *n)
{
    size_t len = n ? strlen(n) : 0;
    if (len == 0 || len > MCP_TOOL_NAME_MAX)
        return false;
    return strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_-.") == len;
}

static bool valid_description(const char *d)
{
    if (!d || !d[0])
        return false;
    size_t len = strlen(d), lines = 1;
    while (len && d[len - 1] == '\n')
        len--;
    for (size_t i = 0; i < len; i++)
        lines += d[i] == '\n';
    return len > 0 && lines <= MCP_TOOL_DESC_LINES;
}

int mcp_server_add_tool(mcp_server_t *srv, const mcp_tool_t *t)
{
    if (!t || !t->fn || !valid_tool_name(t->name) ||
        !valid_description(t->description) || !t->input_schema ||
        !t->output_schema || !t->annotations)
        return -EINVAL;
    for (size_t i = 0; i < srv->ntools; i++)
        if (!strcmp(srv->tools[i].name, t->name))
            return -EEXIST;
    if (srv->ntools == MCP_MAX_TOOLS)
        return -ENOSPC;
    int rc = -EINVAL;
    json_t *in = json_loads(t->input_schema, 0, NULL);
    json_t *out = json_loads(t->output_schema, 0, NULL);
    json_t *ann = json_loads(t->annotations, 0, NULL);
    json_t *def = NULL;
    if (schema_problem(in) || schema_problem(out) || !json_is_object(ann))
        goto fail;
    rc = -ENOMEM;
    def = json_pack("{s:s, s:s, s:O, s:O, s:O}", "name", t->name,
                    "description", t->description, "inputSchema", in,
                    "outputSchema", out, "annotations", ann);
    if (!def || (t->title && json_object_set_new(def, "title",
                                                 json_string(t->title)) < 0))
        goto fail;
    struct tool_entry *e = &srv->tools[srv->ntools];
    e->name = strdup(t->name);
    if (!e->name || json_array_append(srv->tools_list, def) < 0) {
        free(e->name);
        goto fail;
    }
    e->def = def;
    e->input_schema = json_object_get(def, "inputSchema");
    e->nul_args = t->nul_args;
    e->fn = t->fn;
    e->ud = t->ud;
    srv->ntools++;
    rc = 0;
    def = NULL;
fail:
    json_decref(def);
    json_decref(in);
    json_decref(out);
    json_decref(ann);
    return rc;
}

/* ------------------------------------------------------------- resources */

/* Matches uri against an RFC 6570 level-1 template, collecting the
 * variables into vars.  A variable takes one or more characters up to the
 * template's next literal character, never a '/'. */
static bool template_match(const char *tpl, const char *uri, json_t *vars)
{
    while (*tpl) {
        if (*tpl != '{') {
            if (*tpl++ != *uri++)
                return false;
            continue;
        }
        const char *close = strchr(tpl, '}');
        if (!close)
            return false;
        char stop = close[1];
        size_t n = 0;
        while (uri[n] && uri[n] != stop && uri[n] != '/')
            n++;
        if (n == 0 || (stop && uri[n] != stop) || (!stop && uri[n]))
            return false;
        char *name = strndup(tpl + 1, (size_t)(close - tpl - 1));
        json_t *val = json_stringn(uri, n);
        int rc = name && val ? json_object_set_new(vars, name, val) : -1;
        if (!name || !val)
            json_decref(val);
        free(name);
        if (rc < 0)
            return false;
        tpl = close + 1;
        uri += n;
    }
    return *uri == '\0';
}

/* The template uri belongs to, with its variables; NULL if none. */
static struct template_entry *find_template(mcp_server_t *s, const char *uri,
                                            json_t *vars)
{
    for (size_t i = 0; i < s->ntemplates; i++) {
        json_object_clear(vars);
        if (template_match(s->templates[i].uri_template, uri, vars))
            return &s->templates[i];
    }
    return NULL;
}

int mcp_server_add_resource_template(mcp_server_t *srv,
                                     const char *uri_template,
                                     const char *name,
                                     const char *description,
                                     const char *mime_type,
                                     mcp_read_fn read_fn, void *ud)
{
    if (!uri_template || !name || !read_fn || !strchr(uri_template, '{'))
        return -EINVAL;
    if (srv->ntemplates == MCP_MAX_TEMPLATES)
        return -ENOSPC;
    json_t *def = json_pack("{s:s, s:s}", "uriTemplate", uri_template, "name",
                            name);
    if (def && description)
        json_object_set_new(def, "description", json_string(description));
    if (def && mime_type)
        json_object_set_new(def, "mimeType", json_string(mime_type));
    struct template_entry *e = &srv->templates[srv->ntemplates];
    e->uri_template = strdup(uri_template);
    e->mime_type = mime_type ? strdup(mime_type) : NULL;
    if (!def || !e->uri_template || (mime_type && !e->mime_type) ||
        json_array_append_new(srv->templates_list, def) < 0) {
        free(e->uri_template);
        free(e->mime_type);
        return -ENOMEM;
    }
    e->read_fn = read_fn;
    e->ud = ud;
    srv->ntemplates++;
    return 0;
}

void mcp_server_set_resource_lister(mcp_server_t *srv, mcp_list_fn fn,
                                    void *ud)
{
    srv->list_fn = fn;
    srv->list_ud = ud;
}

static struct sub *find_sub(mcp_server_t *s, const char *uri)
{
    for (struct sub *u = s->subs; u; u = u->next)
        if (!strcmp(u->uri, uri))
            return u;
    return NULL;
}

static void sub_free(mcp_server_t *s, struct sub *u)
{
    loop_timer_del(s->loop, u->timer);
    free(u->uri);
    free(u);
}

static int send_updated(struct sub *u)
{
    u->last_sent = loop_now(u->srv->loop);
    if (!u->last_sent)
        u->last_sent = 1; /* 0 means "never" */
    return jsonrpc_notify(u->srv->rpc, "notifications/resources/updated",
                          json_pack("{s:s}", "uri", u->uri));
}

static void on_updated_due(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct sub *u = data;
    u->timer = 0;
    send_updated(u);
}

int mcp_server_notify_updated(mcp_server_t *srv, const char *uri)
{
    struct sub *u = find_sub(srv, uri);
    if (!u || u->timer)
        return 0; /* nobody listens, or one is already due */
    uint64_t now = loop_clock_ms();
    if (!u->last_sent || now - u->last_sent >= MCP_UPDATED_MIN_INTERVAL_MS)
        return send_updated(u);
    return loop_timer_add(srv->loop,
                          MCP_UPDATED_MIN_INTERVAL_MS - (now - u->last_sent),
                          on_updated_due, u, &u->timer);
}

int mcp_server_log(mcp_server_t *srv, mcp_log_level_t level,
                   const char *logger, const char *message)
{
    if (!srv->protocol || level < srv->log_level || level > MCP_LOG_EMERGENCY)
        return 0;
    json_t *p = json_pack("{s:s, s:o}", "level", log_level_names[level],
                          "data", json_text(message, strlen(message)));
    if (p && logger)
        json_object_set_new(p, "logger", json_string(logger));
    return jsonrpc_notify(srv->rpc, "notifications/message", p);
}

/* -------------------------------------------------------------- handlers */

static json_t *h_ping(mcp_server_t *s, const jsonrpc_msg_t *m,
                      struct rpc_err *e)
{
    (void)s;
    (void)m;
    (void)e;
    return json_object();
}

static json_t *h_initialize(mcp_server_t *s, const jsonrpc_msg_t *m,
                            struct rpc_err *e)
{
    if (s->protocol)
        return fail(e, JSONRPC_INVALID_REQUEST,
                    "Invalid Request: initialize was already received.");
    const char *asked = json_string_value(json_object_get(m->params,
                                                          "protocolVersion"));
    if (!asked)
        return fail(e, JSONRPC_INVALID_PARAMS,
                    "Invalid params: protocolVersion must be a string.");
    /* Echo a version we speak; answer our latest to any other, and the
     * client decides whether it can live with it. */
    s->protocol = protocol_versions[0];
    for (size_t i = 0; protocol_versions[i]; i++)
        if (!strcmp(asked, protocol_versions[i]))
            s->protocol = protocol_versions[i];
    json_t *r = json_pack(
        "{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{}}, s:{s:s, s:s}}",
        "protocolVersion", s->protocol, "capabilities", "tools",
        "listChanged", 0, "resources", "subscribe", 1, "listChanged", 0,
        "logging", "serverInfo", "name", s->name, "version", s->version);
    if (r && s->instructions)
        json_object_set_new(r, "instructions", json_string(s->instructions));
    return r;
}

static json_t *h_tools_list(mcp_server_t *s, const jsonrpc_msg_t *m,
                            struct rpc_err *e)
{
    (void)m;
    (void)e;
    /* One page: a cursor from the client is accepted and ignored. */
    return json_pack("{s:O}", "tools", s->tools_list);
}

static json_t *h_tools_call(mcp_server_t *s, const jsonrpc_msg_t *m,
                            struct rpc_err *e)
{
    const json_t *jname = json_object_get(m->params, "name");
    const char *name = json_string_value(jname);
    if (name && strlen(name) != json_string_length(jname))
        return fail(e, JSONRPC_INVALID_PARAMS, "Unknown tool: %.*s.",
                    echo_len(name), name); /* NUL inside: no such name */
    if (!name)
        return fail(e, JSONRPC_INVALID_PARAMS,
                    "Invalid params: name must be a string.");
    struct tool_entry *t = NULL;
    for (size_t i = 0; i < s->ntools && !t; i++)
        if (!strcmp(s->tools[i].name, name))
            t = &s->tools[i];
    if (!t)
        return fail(e, JSONRPC_INVALID_PARAMS, "Unknown tool: %.*s.",
                    echo_len(name), name);
    json_t *args = json_object_get(m->params, "arguments");
    if (args && !json_is_object(args))
        return fail(e, JSONRPC_INVALID_PARAMS,
                    "Invalid params: arguments must be an object.");
    for (mcp_call_t *c = s->calls; c; c = c->next)
        if (json_equal(c->id, m->id))
            return fail(e, JSONRPC_INVALID_REQUEST,
                        "Invalid Request: this id is already in use by a "
                        "call in progress.");

    mcp_call_t *c = calloc(1, sizeof *c);
    if (!c)
        return fail(e, JSONRPC_INTERNAL_ERROR, "Internal error: out of "
                                               "memory.");
    c->srv = s;
    c->id = json_incref(m->id);
    c->tool_name = t->name;
    json_t *tok = json_object_get(json_object_get(m->params, "_meta"),
                                  "progressToken");
    if (json_is_string(tok) || json_is_integer(tok))
        c->progress_token = json_incref(tok);
    c->next = s->calls;
    if (s->calls)
        s->calls->prev = c;
    s->calls = c;
    s->ncalls++;

    char msg[MCP_SENTENCE_MAX];
    args = args ? json_incref(args) : json_object();
    if (!args) {
        mcp_call_error(c, "Internal error: out of memory.");
    } else if (s->ncalls > MCP_MAX_CALLS_IN_FLIGHT) {
        mcp_call_errorf(c, "Too many calls in progress (%d); wait for one "
                           "to finish.", MCP_MAX_CALLS_IN_FLIGHT);
    } else if (mcp_schema_check(t->input_schema, args, msg, sizeof msg) < 0 ||
               check_nul(t->nul_args, args, msg, sizeof msg) < 0) {
        mcp_call_error(c, msg);
    } else {
        c->running = true;
        int rc = t->fn(c, args, t->ud);
        c->running = false;
        if (c->finished)
            call_free(c);
        else if (rc < 0)
            mcp_call_errorf(c, "%s.", rein_strerror(rc));
    }
    json_decref(args);
    return NULL; /* answered by the call */
}

static json_t *h_templates_list(mcp_server_t *s, const jsonrpc_msg_t *m,
                                struct rpc_err *e)
{
    (void)m;
    (void)e;
    return json_pack("{s:O}", "resourceTemplates", s->templates_list);
}

static json_t *h_resources_list(mcp_server_t *s, const jsonrpc_msg_t *m,
                                struct rpc_err *e)
{
    (void)m;
    json_t *list = json_array();
    if (!list)
        return fail(e, JSONRPC_INTERNAL_ERROR, "Internal error: out of "
                                               "memory.");
    int rc = s->list_fn ? s->list_fn(list, s->list_ud) : 0;
    if (rc < 0) {
        json_decref(list);
        return fail(e, JSONRPC_INTERNAL_ERROR, "Internal error: %s.",
                    rein_strerror(rc));
    }
    return json_pack("{s:o}", "resources", list);
}

/* The uri parameter of resources/read, subscribe and unsubscribe. */
static const char *param_uri(const jsonrpc_msg_t *m, struct rpc_err *e)
{
    const char *uri = json_string_value(json_object_get(m->params, "uri"));
    if (!uri)
        fail(e, JSONRPC_INVALID_PARAMS,
             "Invalid params: uri must be a string.");
    return uri;
}

static json_t *h_resources_read(mcp_server_t *s, const jsonrpc_msg_t *m,
                                struct rpc_err *e)
{
    const char *uri = param_uri(m, e);
    if (!uri)
        return NULL;
    json_t *vars = json_object(), *r = NULL;
    buf_t text = BUF_INIT;
    struct template_entry *t = vars ? find_template(s, uri, vars) : NULL;
    int rc = t ? t->read_fn(uri, vars, &text, t->ud) : -ENOENT;
    if (rc == -ENOENT)
        fail(e, MCP_RESOURCE_NOT_FOUND, "Resource not found: %.*s.",
             echo_len(uri), uri);
    else if (rc < 0)
        fail(e, JSONRPC_INTERNAL_ERROR, "Internal error: %s.",
             rein_strerror(rc));
    else
        r = json_pack("{s:[{s:s, s:o}]}", "contents", "uri", uri, "text",
                      json_text(text.p ? text.p : "", text.len));
    if (r && t->mime_type)
        json_object_set_new(json_array_get(json_object_get(r, "contents"), 0),
                            "mimeType", json_string(t->mime_type));
    buf_free(&text);
    json_decref(vars);
    return r;
}

static json_t *h_subscribe(mcp_server_t *s, const jsonrpc_msg_t *m,
                           struct rpc_err *e)
{
    const char *uri = param_uri(m, e);
    if (!uri)
        return NULL;
    json_t *vars = json_object();
    bool known = vars && find_template(s, uri, vars);
    json_decref(vars);
    if (!known)
        return fail(e, MCP_RESOURCE_NOT_FOUND, "Resource not found: %.*s.",
                    echo_len(uri), uri);
    if (find_sub(s, uri))
        return json_object();
    if (s->nsubs == MCP_MAX_SUBSCRIPTIONS)
        return fail(e, JSONRPC_INVALID_PARAMS,
                    "Invalid params: too many subscriptions (%d).",
                    MCP_MAX_SUBSCRIPTIONS);
    struct sub *u = calloc(1, sizeof *u);
    if (!u || !(u->uri = strdup(uri))) {
        free(u);
        return fail(e, JSONRPC_INTERNAL_ERROR, "Internal error: out of "
                                               "memory.");
    }
    u->srv = s;
    u->next = s->subs;
    s->subs = u;
    s->nsubs++;
    return json_object();
}

static json_t *h_unsubscribe(mcp_server_t *s, const jsonrpc_msg_t *m,
                             struct rpc_err *e)
{
    const char *uri = param_uri(m, e);
    if (!uri)
        return NULL;
    for (struct sub **pp = &s->subs; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->uri, uri)) {
            struct sub *u = *pp;
            *pp = u->next;
            s->nsubs--;
            sub_free(s, u);
            break;
        }
    return json_object();
}

static json_t *h_set_level(mcp_server_t *s, const jsonrpc_msg_t *m,
                           struct rpc_err *e)
{
    const char *level = json_string_value(json_object_get(m->params,
                                                          "level"));
    for (size_t i = 0; level && i <= MCP_LOG_EMERGENCY; i++)
        if (!strcmp(level, log_level_names[i])) {
            s->log_level = (mcp_log_level_t)i;
            return json_object();
        }
    return fail(e, JSONRPC_INVALID_PARAMS,
                "Invalid params: level must be one of debug, info, notice, "
                "warning, error, critical, alert, emergency.");
}

static const struct method {
    const char *name;
    json_t *(*fn)(mcp_server_t *s, const jsonrpc_msg_t *m, struct rpc_err *e);
    bool before_init; /* allowed before initialize */
} methods[] = {
    {"ping", h_ping, true},
    {"initialize", h_initialize, true},
    {"tools/list", h_tools_list, false},
    {"tools/call", h_tools_call, false},
    {"resources/list", h_resources_list, false},
    {"resources/templates/list", h_templates_list, false},
    {"resources/read", h_resources_read, false},
    {"resources/subscribe", h_subscribe, false},
    {"resources/unsubscribe", h_unsubscribe, false},
    {"logging/setLevel", h_set_level, false},
};

static void on_request(mcp_server_t *s, const jsonrpc_msg_t *m)
{
    struct rpc_err e = {0, ""};
    const struct method *h = NULL;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0] && !h; i++)
        if (!strcmp(methods[i].name, m->method))
            h = &methods[i];
    /* Anything unknown — server/discover included — is refused at once. */
    if (!h) {
        fail(&e, JSONRPC_METHOD_NOT_FOUND, "Method not found: %.*s.",
             echo_len(m->method), m->method);
        jsonrpc_respond_error(s->rpc, m->id, e.code, e.message);
        return;
    }
    if (!h->before_init && !s->protocol) {
        jsonrpc_respond_error(s->rpc, m->id, JSONRPC_INVALID_REQUEST,
                              "Invalid Request: the server is not "
                              "initialized; send initialize first.");
        return;
    }
    if (m->params && !json_is_object(m->params)) {
        jsonrpc_respond_error(s->rpc, m->id, JSONRPC_INVALID_PARAMS,
                              "Invalid params: params must be an object.");
        return;
    }
    json_t *r = h->fn(s, m, &e);
    if (r)
        jsonrpc_respond(s->rpc, m->id, r);
    else if (e.code)
        jsonrpc_respond_error(s->rpc, m->id, e.code, e.message);
}

static void on_notification(mcp_server_t *s, const jsonrpc_msg_t *m)
{
    if (!strcmp(m->method, "notifications/initialized")) {
        s->client_ready = true;
    } else if (!strcmp(m->method, "notifications/cancelled")) {
        /* An id we do not know (already answered, never sent) is fine:
         * the race is inherent and the spec says to ignore it. */
        const json_t *id = json_object_get(m->params, "requestId");
        for (mcp_call_t *c = s->calls; id && c; c = c->next)
            if (json_equal(c->id, id)) {
                call_cancel(c);
                break;
            }
    }
    /* Other notifications (roots/list_changed, ...) need nothing. */
}

static void on_msg(jsonrpc_t *j, const jsonrpc_msg_t *m, void *data)
{
    (void)j;
    mcp_server_t *s = data;
    if (m->kind == JSONRPC_REQUEST)
        on_request(s, m);
    else if (m->kind == JSONRPC_NOTIFICATION)
        on_notification(s, m);
    /* Responses: we send no requests, so there is nothing to match. */
}

static void on_rpc_close(jsonrpc_t *j, int err, void *data)
{
    (void)j;
    mcp_server_t *s = data;
    if (s->on_close)
        s->on_close(s, err, s->data);
}

/* -------------------------------------------------------------- lifetime */

int mcp_server_new(loop_t *l, int in_fd, int out_fd,
                   const mcp_server_opts_t *opts, mcp_server_t **out)
{
    if (!l || !opts || !opts->name || !opts->version || !out)
        return -EINVAL;
    int rc = -ENOMEM;
    mcp_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->loop = l;
    s->log_level = MCP_LOG_INFO;
    s->on_close = opts->on_close;
    s->data = opts->data;
    s->name = strdup(opts->name);
    s->version = strdup(opts->version);
    s->instructions = opts->instructions ? strdup(opts->instructions) : NULL;
    s->tools_list = json_array();
    s->templates_list = json_array();
    if (!s->name || !s->version || !s->tools_list || !s->templates_list ||
        (opts->instructions && !s->instructions))
        goto fail;
    rc = jsonrpc_new(l, in_fd, out_fd, on_msg, on_rpc_close, s, &s->rpc);
    if (rc < 0)
        goto fail;
    *out = s;
    return 0;
fail:
    mcp_server_free(s);
    return rc;
}

void mcp_server_cancel_all(mcp_server_t *srv)
{
    /* The head each time: a hook may end other calls too. */
    while (srv->calls)
        call_cancel(srv->calls);
}

void mcp_server_stop_input(mcp_server_t *srv)
{
    jsonrpc_stop_input(srv->rpc);
}

void mcp_server_free(mcp_server_t *srv)
{
    if (!srv)
        return;
    mcp_server_cancel_all(srv);
    while (srv->subs) {
        struct sub *u = srv->subs;
        srv->subs = u->next;
        sub_free(srv, u);
    }
    jsonrpc_free(srv->rpc);
    for (size_t i = 0; i < srv->ntools; i++) {
        free(srv->tools[i].name);
        json_decref(srv->tools[i].def);
    }
    for (size_t i = 0; i < srv->ntemplates; i++) {
        free(srv->templates[i].uri_template);
        free(srv->templates[i].mime_type);
    }
    json_decref(srv->tools_list);
    json_decref(srv->templates_list);
    free(srv->name);
    free(srv->version);
    free(srv->instructions);
    free(srv);
}

size_t mcp_server_out_pending(const mcp_server_t *srv)
{
    return jsonrpc_out_pending(srv->rpc);
}

int mcp_server_feed(mcp_server_t *srv, const void *p, size_t n)
{
    return jsonrpc_feed(srv->rpc, p, n);
}

loop_t *mcp_server_loop(const mcp_server_t *srv)
{
    return srv->loop;
}

bool mcp_server_initialized(const mcp_server_t *srv)
{
    return srv->protocol != NULL;
}

const char *mcp_server_protocol_version(const mcp_server_t *srv)
{
    return srv->protocol;
}

size_t mcp_server_calls_pending(const mcp_server_t *srv)
{
    return srv->ncalls;
}
