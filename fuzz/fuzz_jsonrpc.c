/*
 * fuzz_jsonrpc.c — untrusted bytes into the JSON-RPC framing, validation
 * and, for half the inputs, the MCP server behind it.
 *
 * The first byte is a knob: its low bits cut the rest into chunks of a
 * data-derived size (lines split anywhere), its top bit routes the bytes
 * through an initialized mcp_server with one tool instead of a bare
 * transport.  Checked: every message handed up is well-formed (a request
 * has a string or integer id and a method; params are an object, an array
 * or absent), and everything written out is whole lines, each one JSON-RPC
 * 2.0 object.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/loop.h"
#include "mcp/jsonrpc.h"
#include "mcp/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_msg(jsonrpc_t *j, const jsonrpc_msg_t *m, void *data)
{
    (void)data;
    if (!json_is_object(m->root))
        abort();
    if (m->params && !json_is_object(m->params) && !json_is_array(m->params))
        abort();
    switch (m->kind) {
    case JSONRPC_REQUEST:
        if (!m->method || !(json_is_string(m->id) || json_is_integer(m->id)))
            abort();
        jsonrpc_respond(j, m->id, json_object());
        break;
    case JSONRPC_NOTIFICATION:
        if (!m->method || m->id)
            abort();
        break;
    case JSONRPC_RESPONSE:
        if (m->method)
            abort();
        break;
    default:
        abort();
    }
}

static int echo(mcp_call_t *call, json_t *args, void *ud)
{
    (void)ud;
    return mcp_call_result(call, json_pack("{s:O}", "args", args), NULL);
}

static int read_x(const char *uri, const json_t *vars, buf_t *text,
                  void *ud)
{
    (void)uri;
    (void)ud;
    /* The variable's bytes, as they came: may be anything but '/'. */
    const json_t *x = json_object_get(vars, "x");
    return buf_append(text, json_string_value(x), json_string_length(x));
}

/* Every byte written is whole lines of JSON-RPC 2.0 objects. */
static void check_output(int fd)
{
    off_t n = lseek(fd, 0, SEEK_END);
    if (n <= 0)
        return;
    char *p = malloc((size_t)n);
    if (!p || pread(fd, p, (size_t)n, 0) != n)
        abort();
    if (p[n - 1] != '\n')
        abort();
    for (char *line = p; line < p + n;) {
        char *nl = memchr(line, '\n', (size_t)(p + n - line));
        json_t *j = json_loadb(line, (size_t)(nl - line), JSON_ALLOW_NUL,
                               NULL);
        const char *v = json_string_value(json_object_get(j, "jsonrpc"));
        if (!j || !v || strcmp(v, "2.0") != 0)
            abort();
        json_decref(j);
        line = nl + 1;
    }
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned knob = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    size_t step = 1 + (size_t)(knob & 0x3f) * 7;

    loop_t *l;
    if (loop_new(&l) < 0)
        abort();
    int out = memfd_create("fuzz_jsonrpc", MFD_CLOEXEC);
    if (out < 0)
        abort();

    if (knob & 0x80) {
        mcp_server_t *srv;
        mcp_server_opts_t o = {.name = "fuzz", .version = "0"};
        mcp_tool_t t = {
            .name = "echo",
            .description = "Echoes.",
            .input_schema = "{\"type\":\"object\",\"properties\":{\"a\":"
                            "{\"type\":\"integer\",\"minimum\":0}}}",
            .output_schema = "{\"type\":\"object\"}",
            .annotations = "{}",
            .fn = echo,
        };
        static const char init[] =
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
            "\"params\":{\"protocolVersion\":\"2025-11-25\"}}\n";
        if (mcp_server_new(l, -1, out, &o, &srv) < 0 ||
            mcp_server_add_tool(srv, &t) < 0 ||
            mcp_server_add_resource_template(srv, "f://{x}/y", "f", NULL,
                                             "text/plain", read_x, NULL) < 0)
            abort();
        mcp_server_feed(srv, init, sizeof init - 1);
        for (size_t i = 0; i < n; i += step)
            mcp_server_feed(srv, p + i, n - i < step ? n - i : step);
        mcp_server_free(srv);
    } else {
        jsonrpc_t *j;
        if (jsonrpc_new(l, -1, out, check_msg, NULL, NULL, &j) < 0)
            abort();
        for (size_t i = 0; i < n; i += step)
            jsonrpc_feed(j, p + i, n - i < step ? n - i : step);
        jsonrpc_feed_eof(j);
        jsonrpc_free(j);
    }
    check_output(out);
    close(out);
    loop_free(l);
    return 0;
}
