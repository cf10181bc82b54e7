/*
 * test_mcp_server.c — the MCP server core driven in-process over pipes.
 *
 * The tests register their own tools through the internal API (none of
 * them ship): `echo` answers at once, `wait` answers when a loop timer
 * fires (and reports progress on another), `fail` returns an error code,
 * `strict` carries a schema for the argument-validation messages.  They
 * cover the lifecycle (pre-initialize ping, version negotiation), every
 * error code, ids of both types, concurrency (ping and tools/list while
 * calls wait, calls finishing out of order), cancellation, progress, the
 * schema rules at registration, and resources.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/loop.h"
#include "harness.h"
#include "mcp/jsonrpc.h"
#include "mcp/server.h"
#include "tutil.h"

/* How long a test waits for one line before failing. */
#define LINE_WAIT_MS 5000

struct fx;

/* One `wait` call in progress. */
struct waiter {
    struct fx *f;
    mcp_call_t *call;
    uint64_t done_timer, tick_timer;
    double progress;
    char *tag;
};

struct fx {
    loop_t *loop;
    mcp_server_t *srv;
    int in[2], out[2];
    buf_t acc;
    int cancelled;       /* cancel hooks run */
    int closed;          /* on_close calls */
    int progress_after;  /* mcp_call_progress after completion: its rc */
    int progress_repeat; /* mcp_call_progress with the same value: its rc */
};

/* ------------------------------------------------------------------ tools */

static const char any_object[] = "{\"type\":\"object\"}";
static const char read_only[] = "{\"readOnlyHint\":true}";

static int tool_echo(mcp_call_t *call, json_t *args, void *ud)
{
    struct fx *f = ud;
    mcp_call_progress(call, 1, 0, NULL); /* no token: a no-op */
    json_t *s = json_pack("{s:O}", "args", args);
    int rc = mcp_call_result(call, s, NULL);
    /* Still inside the function, the call is done: nothing more goes out. */
    f->progress_after = mcp_call_progress(call, 2, 0, NULL);
    return rc;
}

static void waiter_free(struct waiter *w)
{
    loop_timer_del(w->f->loop, w->done_timer);
    loop_timer_del(w->f->loop, w->tick_timer);
    free(w->tag);
    free(w);
}

static void on_wait_done(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    struct waiter *w = data;
    w->done_timer = 0;
    mcp_call_result(w->call, json_pack("{s:s}", "tag", w->tag), w->tag);
    waiter_free(w);
}

static void on_wait_tick(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    struct waiter *w = data;
    w->progress += 1;
    ASSERT_OK(mcp_call_progress(w->call, w->progress, 1000, "waiting"));
    w->f->progress_repeat = mcp_call_progress(w->call, w->progress, 0, NULL);
    ASSERT_OK(loop_timer_add(l, 5, on_wait_tick, w, &w->tick_timer));
}

static void on_wait_cancel(mcp_call_t *call, void *data)
{
    struct waiter *w = data;
    ASSERT_TRUE(call == w->call);
    /* The call is over: completing it now must send nothing. */
    ASSERT_EQ(mcp_call_error(call, "too late"), -EALREADY);
    w->f->cancelled++;
    waiter_free(w);
}

static int tool_wait(mcp_call_t *call, json_t *args, void *ud)
{
    struct fx *f = ud;
    struct waiter *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->f = f;
    w->call = call;
    w->tag = strdup(json_string_value(json_object_get(args, "tag")));
    json_int_t ms = json_integer_value(json_object_get(args, "ms"));
    int rc = loop_timer_add(mcp_server_loop(mcp_call_server(call)),
                            (uint64_t)ms, on_wait_done, w, &w->done_timer);
    if (rc == 0 && mcp_call_wants_progress(call))
        rc = loop_timer_add(f->loop, 5, on_wait_tick, w, &w->tick_timer);
    if (rc < 0) {
        waiter_free(w);
        return rc;
    }
    mcp_call_on_cancel(call, on_wait_cancel, w);
    return 0;
}

static int tool_fail(mcp_call_t *call, json_t *args, void *ud)
{
    (void)call;
    (void)args;
    (void)ud;
    return -ENOENT;
}

static int tool_strict(mcp_call_t *call, json_t *args, void *ud)
{
    (void)ud;
    /* A conflict the schema cannot say: the tool's own sentence. */
    if (json_object_get(args, "chars") && json_object_get(args, "chars_b64"))
        return mcp_call_error(call, "Pass `chars` or `chars_b64`, not both.");
    json_t *y = json_object_get(args, "yield_time_ms");
    return mcp_call_result(call,
                           json_pack("{s:b, s:I}", "yield_is_integer",
                                     json_is_integer(y), "yield",
                                     json_integer_value(y)),
                           "ok");
}

static const char strict_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"properties\":{"
    "\"cmd\":{\"type\":\"string\"},"
    "\"yield_time_ms\":{\"type\":\"integer\",\"minimum\":250,"
    "\"maximum\":30000},"
    "\"tty\":{\"type\":\"boolean\"},"
    "\"signal\":{\"type\":\"string\",\"enum\":[\"TERM\",\"KILL\"]},"
    "\"workdir\":{\"type\":[\"string\",\"null\"]},"
    "\"env\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"chars\":{\"type\":\"string\"},"
    "\"chars_b64\":{\"type\":\"string\"}},"
    "\"required\":[\"cmd\"]}";

static const char wait_schema[] =
    "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"},"
    "\"tag\":{\"type\":\"string\"}},\"required\":[\"ms\",\"tag\"]}";

/* The one argument of `echo` that may carry NUL bytes. */
static const char *const echo_nul_args[] = {"bytes", NULL};

static void add_tools(struct fx *f)
{
    const mcp_tool_t tools[] = {
        {"echo", NULL, "Answers with its arguments.", any_object, any_object,
         read_only, echo_nul_args, tool_echo, f},
        {"wait", "Wait", "Answers after ms milliseconds.\nReports progress.",
         wait_schema,
         "{\"type\":\"object\",\"properties\":{\"tag\":{\"type\":"
         "\"string\"}},\"required\":[\"tag\"]}",
         read_only, NULL, tool_wait, f},
        {"fail", NULL, "Always fails.", any_object, any_object, read_only,
         NULL, tool_fail, f},
        {"strict", NULL, "Checks its arguments.", strict_schema, any_object,
         "{\"readOnlyHint\":false,\"destructiveHint\":true}", NULL,
         tool_strict, f},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        ASSERT_OK(mcp_server_add_tool(f->srv, &tools[i]));
}

/* -------------------------------------------------------------- resources */

static int read_item(const char *uri, const json_t *vars, buf_t *text,
                     void *ud)
{
    (void)uri;
    (void)ud;
    const char *id = json_string_value(json_object_get(vars, "id"));
    if (!strcmp(id, "missing"))
        return -ENOENT;
    if (!strcmp(id, "broken"))
        return -EIO;
    if (!strcmp(id, "binary"))
        return buf_append(text, "a\xff" "b", 3);
    return buf_printf(text, "log of %s\n", id);
}

static int list_items(json_t *list, void *ud)
{
    (void)ud;
    return json_array_append_new(list,
                                 json_pack("{s:s, s:s}", "uri",
                                           "test://item/7/log", "name",
                                           "item 7"));
}

/* ---------------------------------------------------------------- fixture */

static void on_close(mcp_server_t *srv, int err, void *data)
{
    (void)srv;
    (void)err;
    ((struct fx *)data)->closed++;
}

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof *f);
    ASSERT_OK(loop_new(&f->loop));
    ASSERT_OK(pipe2(f->in, O_CLOEXEC | O_NONBLOCK));
    ASSERT_OK(pipe2(f->out, O_CLOEXEC | O_NONBLOCK));
    mcp_server_opts_t o = {.name = "rein-test", .version = "9.9",
                           .instructions = "Be nice.", .on_close = on_close,
                           .data = f};
    ASSERT_OK(mcp_server_new(f->loop, f->in[0], f->out[1], &o, &f->srv));
    add_tools(f);
    ASSERT_OK(mcp_server_add_resource_template(
        f->srv, "test://item/{id}/log", "item-log", "An item's log.",
        "text/plain", read_item, f));
    mcp_server_set_resource_lister(f->srv, list_items, f);
}

static void fx_fini(struct fx *f)
{
    mcp_server_free(f->srv);
    loop_free(f->loop);
    for (int i = 0; i < 2; i++) {
        if (f->in[i] >= 0)
            close(f->in[i]);
        if (f->out[i] >= 0)
            close(f->out[i]);
    }
    buf_free(&f->acc);
}

/* Writes all of p; while the pipe is full, the server (in this thread)
 * runs to empty it. */
static void fx_write_all(struct fx *f, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(f->in[1], p, n);
        if (k < 0) {
            ASSERT_EQ(errno, EAGAIN);
            ASSERT_INT(loop_run_once(f->loop, 1000), >=, 0);
            continue;
        }
        p += k;
        n -= (size_t)k;
    }
}

static void fx_send(struct fx *f, const char *line)
{
    fx_write_all(f, line, strlen(line));
    fx_write_all(f, "\n", 1);
}

__attribute__((format(printf, 2, 3)))
static void fx_sendf(struct fx *f, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fx_send(f, line);
}

/* The next line the server wrote, as text (caller frees). */
static char *fx_line(struct fx *f)
{
    char *line = tu_loop_read_line(f->loop, f->out[0], &f->acc, LINE_WAIT_MS);
    ASSERT_TRUE(line != NULL);
    return line;
}

static json_t *fx_next(struct fx *f)
{
    char *line = fx_line(f);
    /* As a client must: a result may carry NUL bytes (\u0000). */
    json_t *j = json_loads(line, JSON_ALLOW_NUL, NULL);
    if (!j)
        fprintf(stderr, "not JSON: %s\n", line);
    free(line);
    ASSERT_TRUE(j != NULL);
    return j;
}

/* Sends one request and returns the one message that follows. */
static json_t *fx_rpc(struct fx *f, const char *line)
{
    fx_send(f, line);
    return fx_next(f);
}

static void fx_initialize(struct fx *f)
{
    json_t *r = fx_rpc(f, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
                          "\"initialize\",\"params\":{\"protocolVersion\":"
                          "\"2025-11-25\",\"capabilities\":{},"
                          "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    ASSERT_TRUE(json_object_get(r, "result") != NULL);
    json_decref(r);
    fx_send(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* Everything sent so far has been answered: a ping round trip is a fence,
 * since requests are handled in order.  Progress notifications may come
 * before its answer (a wait's timer can fire between a cancel and the
 * ping), and are passed over. */
static void fx_fence(struct fx *f, int id)
{
    fx_sendf(f, "{\"jsonrpc\":\"2.0\",\"id\":\"fence%d\",\"method\":\"ping\"}",
             id);
    json_t *r;
    while ((r = fx_next(f)) &&
           json_is_string(json_object_get(r, "method")) &&
           !strcmp(json_string_value(json_object_get(r, "method")),
                   "notifications/progress"))
        json_decref(r);
    char want[32];
    snprintf(want, sizeof want, "fence%d", id);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), want);
    json_decref(r);
}

static long long err_code(const json_t *r)
{
    return json_integer_value(
        json_object_get(json_object_get(r, "error"), "code"));
}

static const char *err_msg(const json_t *r)
{
    return json_string_value(
        json_object_get(json_object_get(r, "error"), "message"));
}

static const json_t *result(const json_t *r)
{
    const json_t *res = json_object_get(r, "result");
    if (!res)
        fprintf(stderr, "no result in %s\n", json_dumps(r, JSON_COMPACT));
    ASSERT_TRUE(res != NULL);
    return res;
}

/* A tool result's one text block. */
static const char *result_text(const json_t *r)
{
    const json_t *c = json_array_get(json_object_get(result(r), "content"),
                                     0);
    ASSERT_STR(json_string_value(json_object_get(c, "type")), "text");
    return json_string_value(json_object_get(c, "text"));
}

static bool is_error_result(const json_t *r)
{
    return json_is_true(json_object_get(result(r), "isError"));
}

/* Runs the loop until a timer of ms fires: lets due work happen. */
static void on_flag(loop_t *l, uint64_t id, void *data)
{
    (void)l;
    (void)id;
    *(bool *)data = true;
}

static void fx_run_for(struct fx *f, uint64_t ms)
{
    bool fired = false;
    ASSERT_OK(loop_timer_add(f->loop, ms, on_flag, &fired, NULL));
    while (!fired)
        ASSERT_INT(loop_run_once(f->loop, -1), >=, 0);
}

/* No bytes wait on the output pipe (and none are buffered). */
static void fx_assert_quiet(struct fx *f)
{
    char c;
    ASSERT_EQ(f->acc.len, 0);
    ASSERT_EQ(read(f->out[0], &c, 1), -1);
    ASSERT_EQ(errno, EAGAIN);
}

/* -------------------------------------------------------------- lifecycle */

TEST(mcp_ping_works_before_initialize_and_nothing_else_does)
{
    struct fx f;
    fx_init(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 1);
    ASSERT_TRUE(json_is_object(result(r)));
    ASSERT_EQ(json_object_size(result(r)), 0);
    json_decref(r);
    ASSERT_FALSE(mcp_server_initialized(f.srv));
    static const char *const gated[] = {
        "tools/list", "tools/call", "resources/list",
        "resources/templates/list", "resources/read", "resources/subscribe",
        "logging/setLevel"};
    for (size_t i = 0; i < sizeof gated / sizeof gated[0]; i++) {
        fx_sendf(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"g%zu\",\"method\":\"%s\"}",
                 i, gated[i]);
        r = fx_next(&f);
        ASSERT_EQ(err_code(r), JSONRPC_INVALID_REQUEST);
        ASSERT_CONTAINS(err_msg(r), "not initialized");
        json_decref(r);
    }
    /* Unknown methods stay unknown before initialize too. */
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}");
    ASSERT_EQ(err_code(r), JSONRPC_METHOD_NOT_FOUND);
    json_decref(r);
    fx_fini(&f);
}

static json_t *initialize_with(const char *version)
{
    struct fx f;
    fx_init(&f);
    fx_sendf(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                 "\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":{},"
                 "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
             version);
    json_t *r = fx_next(&f);
    ASSERT_TRUE(mcp_server_initialized(f.srv));
    ASSERT_STR(mcp_server_protocol_version(f.srv),
               json_string_value(json_object_get(result(r),
                                                 "protocolVersion")));
    fx_fini(&f);
    return r;
}

TEST(mcp_initialize_echoes_each_supported_version_and_answers_latest_else)
{
    static const char *const supported[] = {"2025-11-25", "2025-06-18",
                                            "2025-03-26", "2024-11-05"};
    for (size_t i = 0; i < 4; i++) {
        json_t *r = initialize_with(supported[i]);
        const json_t *res = result(r);
        ASSERT_STR(json_string_value(json_object_get(res, "protocolVersion")),
                   supported[i]);
        const json_t *caps = json_object_get(res, "capabilities");
        ASSERT_TRUE(json_is_object(json_object_get(caps, "tools")));
        ASSERT_TRUE(json_is_true(json_object_get(
            json_object_get(caps, "resources"), "subscribe")));
        ASSERT_TRUE(json_is_false(json_object_get(
            json_object_get(caps, "resources"), "listChanged")));
        ASSERT_TRUE(json_is_object(json_object_get(caps, "logging")));
        ASSERT_STR(json_string_value(json_object_get(
                       json_object_get(res, "serverInfo"), "name")),
                   "rein-test");
        ASSERT_STR(json_string_value(json_object_get(res, "instructions")),
                   "Be nice.");
        json_decref(r);
    }
    static const char *const unknown[] = {"1999-01-01", "2024-10-07",
                                          "2026-99-99", ""};
    for (size_t i = 0; i < 4; i++) {
        json_t *r = initialize_with(unknown[i]);
        ASSERT_STR(json_string_value(
                       json_object_get(result(r), "protocolVersion")),
                   MCP_PROTOCOL_LATEST);
        json_decref(r);
    }
}

TEST(mcp_initialize_twice_or_without_version_is_refused)
{
    struct fx f;
    fx_init(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                           "\"initialize\",\"params\":{}}");
    ASSERT_EQ(err_code(r), JSONRPC_INVALID_PARAMS);
    ASSERT_CONTAINS(err_msg(r), "protocolVersion");
    json_decref(r);
    ASSERT_FALSE(mcp_server_initialized(f.srv));
    fx_initialize(&f);
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\","
                   "\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
    ASSERT_EQ(err_code(r), JSONRPC_INVALID_REQUEST);
    ASSERT_STR(mcp_server_protocol_version(f.srv), "2025-11-25");
    json_decref(r);
    fx_fini(&f);
}

/* ---------------------------------------------------------------- errors */

TEST(mcp_ids_of_both_types_are_echoed_exactly)
{
    struct fx f;
    fx_init(&f);
    static const char *const ids[] = {
        "0", "-5", "9007199254740993", "\"abc\"", "\"\"", "\"1\"",
        "\"\\u00e9t\\u00e9 \\\"q\\\"\""};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        fx_sendf(&f, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
                 ids[i]);
        json_t *r = fx_next(&f);
        json_t *want = json_loads(ids[i], JSON_DECODE_ANY, NULL);
        ASSERT_TRUE(json_equal(json_object_get(r, "id"), want));
        json_decref(want);
        json_decref(r);
        /* Errors echo the id the same way. */
        fx_sendf(&f, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"x/y\"}",
                 ids[i]);
        r = fx_next(&f);
        want = json_loads(ids[i], JSON_DECODE_ANY, NULL);
        ASSERT_EQ(err_code(r), JSONRPC_METHOD_NOT_FOUND);
        ASSERT_TRUE(json_equal(json_object_get(r, "id"), want));
        json_decref(want);
        json_decref(r);
    }
    /* The string "1" and the integer 1 stay what they were. */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"ping\"}");
    char *line = fx_line(&f);
    ASSERT_CONTAINS(line, "\"id\":\"1\"");
    free(line);
    fx_fini(&f);
}

TEST(mcp_error_codes_for_unknown_methods_tools_and_bad_params)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    struct {
        const char *line;
        long long code;
        const char *says;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}",
         JSONRPC_METHOD_NOT_FOUND, "server/discover"},
        {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/list\"}",
         JSONRPC_METHOD_NOT_FOUND, "prompts/list"},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
         "\"params\":{\"name\":\"nope\",\"arguments\":{}}}",
         JSONRPC_INVALID_PARAMS, "Unknown tool: nope"},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
         "\"params\":{\"name\":\"echo\\u0000x\"}}",
         JSONRPC_INVALID_PARAMS, "Unknown tool: echo"},
        {"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
         "\"params\":{\"arguments\":{}}}",
         JSONRPC_INVALID_PARAMS, "name"},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
         "\"params\":{\"name\":\"echo\",\"arguments\":[1]}}",
         JSONRPC_INVALID_PARAMS, "arguments"},
        {"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\","
         "\"params\":[1]}",
         JSONRPC_INVALID_PARAMS, "params"},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/read\","
         "\"params\":{}}",
         JSONRPC_INVALID_PARAMS, "uri"},
        {"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"logging/setLevel\","
         "\"params\":{\"level\":\"loud\"}}",
         JSONRPC_INVALID_PARAMS, "level"},
        {"[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
         "\"params\":{\"name\":\"echo\"}}]",
         JSONRPC_INVALID_REQUEST, "batch"},
        {"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":", JSONRPC_PARSE_ERROR,
         "Parse error"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = fx_rpc(&f, cases[i].line);
        ASSERT_EQ(err_code(r), cases[i].code);
        ASSERT_CONTAINS(err_msg(r), cases[i].says);
        json_decref(r);
    }
    /* Notifications are never answered, known or not. */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}");
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}");
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
    fx_fence(&f, 1);
    fx_assert_quiet(&f);
    fx_fini(&f);
}

/* A name or URI the error message echoes is cut at MCP_ECHO_MAX bytes on
 * a character's start: cut inside one, the message was no UTF-8, JSON
 * refused it, and no answer was sent at all.  "a" and 150 two-byte
 * characters put the cut inside one; 150 of them alone, on a boundary. */
TEST(mcp_echoed_names_are_cut_on_a_character)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    /* each request around the name: what goes before it, and after */
    static const char *const shapes[][2] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"", "\"}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\","
         "\"params\":{\"name\":\"", "\"}}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"resources/read\","
         "\"params\":{\"uri\":\"", "\"}}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":"
         "\"resources/subscribe\",\"params\":{\"uri\":\"", "\"}}"},
    };
    static const long long codes[] = {JSONRPC_METHOD_NOT_FOUND,
                                      JSONRPC_INVALID_PARAMS,
                                      MCP_RESOURCE_NOT_FOUND,
                                      MCP_RESOURCE_NOT_FOUND};
    for (int odd = 0; odd < 2; odd++) {
        buf_t name = BUF_INIT, want = BUF_INIT, line = BUF_INIT;
        if (odd)
            ASSERT_OK(buf_append_str(&name, "a"));
        for (int i = 0; i < 150; i++)
            ASSERT_OK(buf_append_str(&name, "\xc3\xa9"));
        /* what the message holds: the most whole characters in 200 bytes */
        ASSERT_OK(buf_append(&want, name.p, odd ? 199 : 200));
        ASSERT_OK(buf_append_str(&want, "."));
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            buf_reset(&line);
            ASSERT_OK(buf_printf(&line, "%s%s%s", shapes[k][0], name.p,
                                 shapes[k][1]));
            json_t *r = fx_rpc(&f, line.p);
            ASSERT_EQ(err_code(r), codes[k]);
            ASSERT_CONTAINS(err_msg(r), want.p);
            json_decref(r);
        }
        buf_free(&name);
        buf_free(&want);
        buf_free(&line);
    }
    fx_fini(&f);
}

/* ------------------------------------------------------------------ tools */

TEST(mcp_tools_list_carries_schemas_annotations_and_descriptions)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                           "\"tools/list\",\"params\":{\"cursor\":\"x\"}}");
    const json_t *tools = json_object_get(result(r), "tools");
    ASSERT_EQ(json_array_size(tools), 4);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        ASSERT_TRUE(json_is_string(json_object_get(t, "name")));
        ASSERT_TRUE(json_is_string(json_object_get(t, "description")));
        ASSERT_STR(json_string_value(json_object_get(
                       json_object_get(t, "inputSchema"), "type")),
                   "object");
        ASSERT_STR(json_string_value(json_object_get(
                       json_object_get(t, "outputSchema"), "type")),
                   "object");
        ASSERT_TRUE(json_is_object(json_object_get(t, "annotations")));
    }
    ASSERT_STR(json_string_value(json_object_get(json_array_get(tools, 1),
                                                 "title")),
               "Wait");
    ASSERT_TRUE(json_object_get(result(r), "nextCursor") == NULL);
    json_decref(r);
    fx_fini(&f);
}

TEST(mcp_add_tool_enforces_the_schema_rules)
{
    struct fx f;
    fx_init(&f);
    mcp_tool_t t = {"t", NULL, "One line.", any_object, any_object,
                    read_only, NULL, tool_echo, &f};
    static const char *const bad_schemas[] = {
        "{\"type\":\"array\"}",
        "{\"properties\":{}}",
        "{\"type\":\"object\",\"oneOf\":[]}",
        "{\"type\":\"object\",\"$ref\":\"#/x\"}",
        "{\"type\":\"object\",\"anyOf\":[]}",
        "{\"type\":\"object\",\"properties\":{\"a\":{}}}",
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
        "\"required\":[\"b\"]}",
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
        "\"required\":[\"a\",\"a\"]}",
        "not json",
    };
    for (size_t i = 0; i < sizeof bad_schemas / sizeof bad_schemas[0]; i++) {
        t.input_schema = bad_schemas[i];
        ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EINVAL);
        t.input_schema = any_object;
        t.output_schema = bad_schemas[i];
        ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EINVAL);
        t.output_schema = any_object;
    }
    t.description = "One.\nTwo.\nThree.";
    ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EINVAL);
    t.description = "";
    ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EINVAL);
    t.description = "One.\nTwo.\n";
    t.annotations = NULL;
    ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EINVAL);
    t.annotations = "[]";
    ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EINVAL);
    t.annotations = read_only;
    t.name = "bad name";
    ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EINVAL);
    t.name = "echo";
    ASSERT_EQ(mcp_server_add_tool(f.srv, &t), -EEXIST);
    t.name = "t";
    ASSERT_OK(mcp_server_add_tool(f.srv, &t));
    fx_fini(&f);
}

TEST(mcp_call_success_has_structured_content_and_text)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                           "\"tools/call\",\"params\":{\"name\":\"echo\","
                           "\"arguments\":{\"a\":[1,2]}}}");
    ASSERT_FALSE(is_error_result(r));
    const json_t *sc = json_object_get(result(r), "structuredContent");
    ASSERT_EQ(json_integer_value(json_array_get(
                  json_object_get(json_object_get(sc, "args"), "a"), 1)),
              2);
    /* Without text from the tool, the text is the structured JSON. */
    ASSERT_STR(result_text(r), "{\"args\":{\"a\":[1,2]}}");
    json_decref(r);
    /* Done inside its own function: progress after is refused. */
    ASSERT_EQ(f.progress_after, -EALREADY);
    /* No arguments at all is an empty object. */
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"echo\"}}");
    ASSERT_STR(result_text(r), "{\"args\":{}}");
    json_decref(r);
    fx_fini(&f);
}

TEST(mcp_call_failure_is_an_iserror_result_with_one_sentence)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                           "\"tools/call\",\"params\":{\"name\":\"fail\"}}");
    ASSERT_TRUE(is_error_result(r));
    ASSERT_STR(result_text(r), "No such file or directory.");
    ASSERT_TRUE(json_object_get(result(r), "structuredContent") == NULL);
    json_decref(r);
    fx_fini(&f);
}

static void expect_arg_error(struct fx *f, const char *args, const char *want)
{
    fx_sendf(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                "\"params\":{\"name\":\"strict\",\"arguments\":%s}}",
             args);
    json_t *r = fx_next(f);
    if (!is_error_result(r) || strcmp(result_text(r), want) != 0)
        fprintf(stderr, "args %s\n", args);
    ASSERT_TRUE(is_error_result(r));
    ASSERT_STR(result_text(r), want);
    json_decref(r);
}

TEST(mcp_argument_errors_name_the_argument)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    expect_arg_error(&f, "{}", "Missing required argument `cmd`.");
    expect_arg_error(&f, "{\"cmd\":1}", "`cmd` must be a string.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"yield_time_ms\":\"5\"}",
                     "`yield_time_ms` must be an integer.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"yield_time_ms\":2.5}",
                     "`yield_time_ms` must be an integer.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"yield_time_ms\":10}",
                     "`yield_time_ms` must be at least 250.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"yield_time_ms\":30001}",
                     "`yield_time_ms` must be at most 30000.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"tty\":\"yes\"}",
                     "`tty` must be a boolean.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"signal\":\"HUP\"}",
                     "`signal` must be one of [\"TERM\",\"KILL\"].");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"workdir\":3}",
                     "`workdir` must be a string or null.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"env\":[\"A=1\",2]}",
                     "`env` must be an array whose items are each a string "
                     "(item 1 is not).");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"bogus\":1}",
                     "Unknown argument `bogus`; the accepted arguments are: "
                     "cmd, yield_time_ms, tty, signal, workdir, env, chars, "
                     "chars_b64.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"chars\":\"a\",\"chars_b64\":\"YQ==\"}",
                     "Pass `chars` or `chars_b64`, not both.");
    /* A NUL byte would silently end a C string: refused wherever it is
     * (strict names no argument that may carry one). */
    expect_arg_error(&f, "{\"cmd\":\"echo a\\u0000; rm x\"}",
                     "`cmd` contains a NUL byte (\\u0000), which no command, "
                     "path or environment string can hold.");
    expect_arg_error(&f, "{\"cmd\":\"x\",\"env\":[\"A=1\",\"B=\\u0000\"]}",
                     "`env` contains a NUL byte (\\u0000), which no command, "
                     "path or environment string can hold.");
    /* An integral real is an integer, and reaches the tool as one. */
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                           "\"tools/call\",\"params\":{\"name\":\"strict\","
                           "\"arguments\":{\"cmd\":\"x\",\"yield_time_ms\":"
                           "1000.0,\"workdir\":null}}}");
    ASSERT_FALSE(is_error_result(r));
    const json_t *sc = json_object_get(result(r), "structuredContent");
    ASSERT_TRUE(json_is_true(json_object_get(sc, "yield_is_integer")));
    ASSERT_EQ(json_integer_value(json_object_get(sc, "yield")), 1000);
    json_decref(r);
    fx_fini(&f);
}

TEST(mcp_nul_bytes_reach_only_the_arguments_named_for_them)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    /* echo names `bytes`: a NUL there reaches the tool whole. */
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                           "\"tools/call\",\"params\":{\"name\":\"echo\","
                           "\"arguments\":{\"bytes\":\"a\\u0000b\"}}}");
    ASSERT_FALSE(is_error_result(r));
    const json_t *got = json_object_get(
        json_object_get(json_object_get(result(r), "structuredContent"),
                        "args"),
        "bytes");
    ASSERT_MEM(json_string_value(got), json_string_length(got), "a\0b", 3);
    json_decref(r);
    /* Anywhere else, even nested in an object, it is refused. */
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                   "\"tools/call\",\"params\":{\"name\":\"echo\","
                   "\"arguments\":{\"env\":{\"A\":\"\\u0000\"}}}}");
    ASSERT_TRUE(is_error_result(r));
    ASSERT_STR(result_text(r), "`env` contains a NUL byte (\\u0000), which no "
                               "command, path or environment string can "
                               "hold.");
    json_decref(r);
    fx_fini(&f);
}

/* A lone surrogate escape (half of a pair, as JavaScript writes one) is
 * refused before any tool runs, with the request's id, the reply naming
 * it; a whole pair reaches the tool as its UTF-8 character. */
TEST(mcp_lone_surrogate_is_refused_with_the_id_and_a_pair_is_not)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":"
                           "\"tools/call\",\"params\":{\"name\":\"echo\","
                           "\"arguments\":{\"bytes\":\"a\\ud800\"}}}");
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "s1");
    ASSERT_EQ(err_code(r), JSONRPC_INVALID_PARAMS);
    ASSERT_CONTAINS(err_msg(r), "invalid Unicode '\\uD800'");
    ASSERT_CONTAINS(err_msg(r), "surrogate");
    json_decref(r);
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
                   "\"tools/call\",\"params\":{\"name\":\"echo\","
                   "\"arguments\":{\"bytes\":\"\\ud83d\\ude00\"}}}");
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 5);
    ASSERT_FALSE(is_error_result(r));
    const json_t *got = json_object_get(
        json_object_get(json_object_get(result(r), "structuredContent"),
                        "args"),
        "bytes");
    ASSERT_STR(json_string_value(got), "\xf0\x9f\x98\x80");
    json_decref(r);
    fx_fini(&f);
}

TEST(mcp_schema_check_direct)
{
    json_t *schema = json_loads(strict_schema, 0, NULL);
    json_t *args = json_pack("{s:s}", "cmd", "ls");
    char msg[MCP_SENTENCE_MAX];
    ASSERT_OK(mcp_schema_check(schema, args, msg, sizeof msg));
    json_t *bad = json_pack("[]");
    ASSERT_EQ(mcp_schema_check(schema, bad, msg, sizeof msg), -EINVAL);
    ASSERT_STR(msg, "The arguments must be a JSON object.");
    json_decref(bad);
    json_decref(args);
    json_decref(schema);
}

/* ------------------------------------------------------------ concurrency */

static void call_wait(struct fx *f, const char *id, int ms, const char *tag,
                      const char *token)
{
    char meta[128] = "";
    if (token)
        snprintf(meta, sizeof meta, ",\"_meta\":{\"progressToken\":%s}",
                 token);
    fx_sendf(f, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"tools/call\","
                "\"params\":{\"name\":\"wait\",\"arguments\":{\"ms\":%d,"
                "\"tag\":\"%s\"}%s}}",
             id, ms, tag, meta);
}

TEST(mcp_ping_and_tools_list_are_answered_while_calls_wait)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    uint64_t t0 = loop_clock_ms();
    call_wait(&f, "\"long1\"", 20000, "L1", NULL);
    call_wait(&f, "\"long2\"", 20000, "L2", NULL);
    call_wait(&f, "\"short\"", 30, "S", NULL);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":"
                           "\"ping\"}");
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "p");
    json_decref(r);
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":\"l\",\"method\":"
                   "\"tools/list\"}");
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "l");
    json_decref(r);
    /* The short call, sent last, finishes first. */
    r = fx_next(&f);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "short");
    ASSERT_STR(result_text(r), "S");
    json_decref(r);
    ASSERT_INT(loop_clock_ms() - t0, <, 20000);
    /* The long ones end by cancellation (and say nothing). */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                "\"params\":{\"requestId\":\"long1\",\"reason\":\"bored\"}}");
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                "\"params\":{\"requestId\":\"long2\"}}");
    fx_fence(&f, 1);
    ASSERT_EQ(f.cancelled, 2);
    fx_assert_quiet(&f);
    fx_fini(&f);
}

TEST(mcp_cancel_suppresses_the_response_and_runs_the_hook)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    call_wait(&f, "7", 50, "A", NULL);
    call_wait(&f, "\"7\"", 20000, "B", NULL);
    /* Cancel the integer 7: the string "7" is another call. */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                "\"params\":{\"requestId\":7}}");
    /* Unknown and malformed cancellations are ignored. */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                "\"params\":{\"requestId\":12345}}");
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}");
    fx_fence(&f, 1);
    ASSERT_EQ(f.cancelled, 1);
    /* Past the cancelled call's deadline: still no response to it. */
    fx_run_for(&f, 100);
    fx_assert_quiet(&f);
    /* The id is free again, and the server is fine. */
    call_wait(&f, "7", 1, "C", NULL);
    json_t *r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 7);
    ASSERT_STR(result_text(r), "C");
    json_decref(r);
    /* A second call reusing the id of one in flight is refused. */
    call_wait(&f, "\"7\"", 1, "D", NULL);
    r = fx_next(&f);
    ASSERT_EQ(err_code(r), JSONRPC_INVALID_REQUEST);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "7");
    json_decref(r);
    fx_fini(&f);
    /* Freeing the server cancelled the call still waiting. */
    ASSERT_EQ(f.cancelled, 2);
}

TEST(mcp_progress_is_strictly_increasing_and_stops_at_the_response)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    call_wait(&f, "1", 60, "P", "\"tok\"");
    double last = 0;
    int notes = 0;
    json_t *r;
    for (;;) {
        r = fx_next(&f);
        const char *method = json_string_value(json_object_get(r, "method"));
        if (!method)
            break;
        ASSERT_STR(method, "notifications/progress");
        const json_t *p = json_object_get(r, "params");
        ASSERT_STR(json_string_value(json_object_get(p, "progressToken")),
                   "tok");
        double v = json_number_value(json_object_get(p, "progress"));
        ASSERT_TRUE(v > last);
        last = v;
        ASSERT_EQ(json_integer_value(json_object_get(p, "total")), 1000);
        ASSERT_STR(json_string_value(json_object_get(p, "message")),
                   "waiting");
        notes++;
        json_decref(r);
    }
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 1);
    ASSERT_STR(result_text(r), "P");
    json_decref(r);
    ASSERT_INT(notes, >=, 1);
    /* A repeated value was refused, not sent. */
    ASSERT_EQ(f.progress_repeat, -EINVAL);
    /* Nothing after the response. */
    fx_run_for(&f, 50);
    fx_assert_quiet(&f);
    /* An integer token is echoed as an integer; no token, no progress. */
    call_wait(&f, "2", 30, "Q", "42");
    r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(
                  json_object_get(r, "params"), "progressToken")),
              42);
    json_decref(r);
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                "\"params\":{\"requestId\":2}}");
    fx_fence(&f, 1);
    /* Progress sent before the fence was read may still be in the pipe;
     * drain it, then nothing more may come. */
    fx_run_for(&f, 30);
    for (;;) {
        char *line = tu_loop_read_line(f.loop, f.out[0], &f.acc, 0);
        if (!line)
            break;
        ASSERT_CONTAINS(line, "notifications/progress");
        free(line);
    }
    fx_run_for(&f, 30);
    fx_assert_quiet(&f);
    call_wait(&f, "3", 20, "R", NULL);
    r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 3);
    json_decref(r);
    fx_fini(&f);
}

TEST(mcp_calls_in_flight_are_bounded)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    for (int i = 0; i < MCP_MAX_CALLS_IN_FLIGHT; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i);
        call_wait(&f, id, 20000, "W", NULL);
    }
    call_wait(&f, "\"one too many\"", 1, "X", NULL);
    json_t *r = fx_next(&f);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "one too many");
    ASSERT_TRUE(is_error_result(r));
    ASSERT_CONTAINS(result_text(r), "Too many calls in progress");
    json_decref(r);
    /* One ends, and there is room again. */
    fx_send(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                "\"params\":{\"requestId\":0}}");
    call_wait(&f, "\"fits\"", 1, "Y", NULL);
    r = fx_next(&f);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "fits");
    ASSERT_STR(result_text(r), "Y");
    json_decref(r);
    fx_fini(&f);
    ASSERT_EQ(f.cancelled, MCP_MAX_CALLS_IN_FLIGHT);
}

/* -------------------------------------------------------------- resources */

TEST(mcp_resources_templates_read_list_subscribe_and_updates)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                           "\"resources/templates/list\"}");
    const json_t *t = json_array_get(
        json_object_get(result(r), "resourceTemplates"), 0);
    ASSERT_STR(json_string_value(json_object_get(t, "uriTemplate")),
               "test://item/{id}/log");
    ASSERT_STR(json_string_value(json_object_get(t, "mimeType")),
               "text/plain");
    json_decref(r);

    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                   "\"resources/read\",\"params\":{\"uri\":"
                   "\"test://item/42/log\"}}");
    const json_t *c = json_array_get(json_object_get(result(r), "contents"),
                                     0);
    ASSERT_STR(json_string_value(json_object_get(c, "uri")),
               "test://item/42/log");
    ASSERT_STR(json_string_value(json_object_get(c, "text")), "log of 42\n");
    ASSERT_STR(json_string_value(json_object_get(c, "mimeType")),
               "text/plain");
    json_decref(r);

    /* Invalid UTF-8 from a reader becomes U+FFFD, not a lost response. */
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                   "\"resources/read\",\"params\":{\"uri\":"
                   "\"test://item/binary/log\"}}");
    c = json_array_get(json_object_get(result(r), "contents"), 0);
    ASSERT_STR(json_string_value(json_object_get(c, "text")),
               "a\xef\xbf\xbd" "b");
    json_decref(r);

    static const char *const not_found[] = {
        "test://item/missing/log", "test://item//log", "test://item/1/2/log",
        "test://item/1/logs", "other://x"};
    for (size_t i = 0; i < sizeof not_found / sizeof not_found[0]; i++) {
        fx_sendf(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":"
                     "\"resources/read\",\"params\":{\"uri\":\"%s\"}}",
                 not_found[i]);
        r = fx_next(&f);
        ASSERT_EQ(err_code(r), MCP_RESOURCE_NOT_FOUND);
        json_decref(r);
    }
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
                   "\"resources/read\",\"params\":{\"uri\":"
                   "\"test://item/broken/log\"}}");
    ASSERT_EQ(err_code(r), JSONRPC_INTERNAL_ERROR);
    json_decref(r);

    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":"
                   "\"resources/list\"}");
    ASSERT_STR(json_string_value(json_object_get(json_array_get(
                   json_object_get(result(r), "resources"), 0), "uri")),
               "test://item/7/log");
    json_decref(r);

    /* Not subscribed: a change says nothing. */
    ASSERT_OK(mcp_server_notify_updated(f.srv, "test://item/7/log"));
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
                   "\"resources/subscribe\",\"params\":{\"uri\":"
                   "\"test://item/7/log\"}}");
    ASSERT_EQ(json_object_size(result(r)), 0);
    json_decref(r);
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":"
                   "\"resources/subscribe\",\"params\":{\"uri\":"
                   "\"nothing://here\"}}");
    ASSERT_EQ(err_code(r), MCP_RESOURCE_NOT_FOUND);
    json_decref(r);

    /* Subscribed: the first change is sent at once; a burst right after
     * is folded into one more notification. */
    ASSERT_OK(mcp_server_notify_updated(f.srv, "test://item/7/log"));
    r = fx_next(&f);
    ASSERT_STR(json_string_value(json_object_get(r, "method")),
               "notifications/resources/updated");
    ASSERT_STR(json_string_value(json_object_get(
                   json_object_get(r, "params"), "uri")),
               "test://item/7/log");
    json_decref(r);
    uint64_t t0 = loop_clock_ms();
    for (int i = 0; i < 10; i++)
        ASSERT_OK(mcp_server_notify_updated(f.srv, "test://item/7/log"));
    fx_assert_quiet(&f);
    r = fx_next(&f);
    ASSERT_STR(json_string_value(json_object_get(r, "method")),
               "notifications/resources/updated");
    json_decref(r);
    ASSERT_INT(loop_clock_ms() - t0, >=, MCP_UPDATED_MIN_INTERVAL_MS / 2);
    fx_run_for(&f, MCP_UPDATED_MIN_INTERVAL_MS + 50);
    fx_assert_quiet(&f);

    /* Unsubscribed: silence again. */
    r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
                   "\"resources/unsubscribe\",\"params\":{\"uri\":"
                   "\"test://item/7/log\"}}");
    ASSERT_EQ(json_object_size(result(r)), 0);
    json_decref(r);
    ASSERT_OK(mcp_server_notify_updated(f.srv, "test://item/7/log"));
    fx_fence(&f, 1);
    fx_assert_quiet(&f);
    fx_fini(&f);
}

/* ------------------------------------------------------------ the rest */

TEST(mcp_logging_set_level_filters_messages)
{
    struct fx f;
    fx_init(&f);
    ASSERT_OK(mcp_server_log(f.srv, MCP_LOG_ERROR, "t", "before init"));
    fx_initialize(&f);
    json_t *r = fx_rpc(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                           "\"logging/setLevel\",\"params\":{\"level\":"
                           "\"warning\"}}");
    ASSERT_EQ(json_object_size(result(r)), 0);
    json_decref(r);
    ASSERT_OK(mcp_server_log(f.srv, MCP_LOG_INFO, "t", "too quiet"));
    ASSERT_OK(mcp_server_log(f.srv, MCP_LOG_ERROR, "t", "loud"));
    r = fx_next(&f);
    ASSERT_STR(json_string_value(json_object_get(r, "method")),
               "notifications/message");
    const json_t *p = json_object_get(r, "params");
    ASSERT_STR(json_string_value(json_object_get(p, "level")), "error");
    ASSERT_STR(json_string_value(json_object_get(p, "data")), "loud");
    ASSERT_STR(json_string_value(json_object_get(p, "logger")), "t");
    json_decref(r);
    fx_fence(&f, 1);
    fx_assert_quiet(&f);
    fx_fini(&f);
}

TEST(mcp_stdin_eof_calls_on_close_and_cancel_all_runs_hooks)
{
    struct fx f;
    fx_init(&f);
    fx_initialize(&f);
    call_wait(&f, "1", 20000, "A", NULL);
    call_wait(&f, "2", 20000, "B", NULL);
    close(f.in[1]);
    f.in[1] = -1;
    while (!f.closed)
        ASSERT_INT(loop_run_once(f.loop, 5000), >, 0);
    ASSERT_EQ(f.closed, 1);
    ASSERT_EQ(f.cancelled, 0);
    mcp_server_stop_input(f.srv);
    mcp_server_cancel_all(f.srv);
    ASSERT_EQ(f.cancelled, 2);
    ASSERT_EQ(mcp_server_out_pending(f.srv), 0);
    fx_assert_quiet(&f);
    fx_fini(&f);
}
