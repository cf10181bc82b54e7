/*
 * test_jsonrpc.c — the JSON-RPC line transport: validation of every kind of
 * bad message, framing (split lines, many lines per read, CRLF, blank
 * lines, a last line without '\n'), the line limit at its edge, the output
 * queue (whole lines, order, a full pipe, EPIPE), input from a regular
 * file, and input paused while output backs up.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/loop.h"
#include "harness.h"
#include "mcp/jsonrpc.h"
#include "tutil.h"

/* ------------------------------------------------------------ validation */

struct parse_case {
    const char *line;
    int code;           /* 0: valid */
    jsonrpc_kind_t kind; /* when valid */
    const char *id;     /* the id echoed, as compact JSON; NULL: none */
};

static const struct parse_case parse_cases[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, JSONRPC_REQUEST,
     "1"},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"a\",\"params\":[1]}", 0,
     JSONRPC_REQUEST, "\"x\""},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 0,
     JSONRPC_NOTIFICATION, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", 0, JSONRPC_RESPONSE, "7"},
    {"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":1,\"message\":\"m\"}}", 0,
     JSONRPC_RESPONSE, NULL},
    /* malformed JSON: -32700, no id */
    {"{", JSONRPC_PARSE_ERROR, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing",
     JSONRPC_PARSE_ERROR, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", JSONRPC_PARSE_ERROR,
     0, NULL},
    /* valid JSON with an integer past 64 bits: -32602, echoing an id
     * that is exact (below 2^53), never a rounded one */
    {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
     "{\"arguments\":{\"timeout_ms\":9223372036854775808}}}",
     JSONRPC_INVALID_PARAMS, 0, "2"},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"m\",\"params\":"
     "[-9223372036854775809]}", JSONRPC_INVALID_PARAMS, 0, "\"s\""},
    /* valid JSON that jansson cannot hold (a real past a double's range,
     * a NUL in a key, nesting past its limit): -32602 with the id read
     * from the text, so the client is not left waiting */
    {"{\"jsonrpc\":\"2.0\",\"id\":9007199254740991,\"method\":\"m\","
     "\"params\":[1e999999999999999999]}", JSONRPC_INVALID_PARAMS, 0,
     "9007199254740991"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
     "{\"name\":\"exec_command\",\"arguments\":{\"cmd\":\"ls\","
     "\"yield_time_ms\":1e400}}}", JSONRPC_INVALID_PARAMS, 0, "1"},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"n\",\"method\":\"tools/call\",\"params\":"
     "{\"arguments\":{\"env\":{\"A\\u0000B\":\"x\"}}}}",
     JSONRPC_INVALID_PARAMS, 0, "\"n\""},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\\u0000\":1},"
     "\"id\":2,\"id\":3}", JSONRPC_INVALID_PARAMS, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":9007199254740991,\"method\":\"m\","
     "\"params\":[18446744073709551616]}", JSONRPC_INVALID_PARAMS, 0,
     "9007199254740991"},
    {"{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"m\","
     "\"params\":[18446744073709551616]}", JSONRPC_INVALID_PARAMS, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":10000000000000000000,\"method\":\"m\"}",
     JSONRPC_INVALID_PARAMS, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\",\"params\":"
     "[18446744073709551616} ", JSONRPC_PARSE_ERROR, 0, NULL},
    /* a lone surrogate escape (JSON.stringify of half a pair): valid
     * JSON that jansson refuses, so -32602 with the id, whichever side of
     * it the id is and whatever its type */
    {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
     "{\"name\":\"exec_command\",\"arguments\":{\"cmd\":\"echo \\ud800\"}}}",
     JSONRPC_INVALID_PARAMS, 0, "7"},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[\"\\udc00x\"],"
     "\"id\":\"after\"}", JSONRPC_INVALID_PARAMS, 0, "\"after\""},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"m\",\"params\":"
     "{\"\\ud800\\u0041\":1}}", JSONRPC_INVALID_PARAMS, 0, "\"q\""},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[\"\\udbff\\udbff\"],"
     "\"i\\u0064\":-3}", JSONRPC_INVALID_PARAMS, 0, "-3"},
    /* ... with no id when the id itself holds it (it could not be echoed
     * as sent), or when there is none */
    {"{\"jsonrpc\":\"2.0\",\"id\":\"a\\ud800\",\"method\":\"m\"}",
     JSONRPC_INVALID_PARAMS, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[\"\\ud800\"]}",
     JSONRPC_INVALID_PARAMS, 0, NULL},
    /* a whole pair is a character; a malformed escape is a parse error */
    {"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"m\",\"params\":"
     "[\"\\ud83d\\ude00\"]}", 0, JSONRPC_REQUEST, "8"},
    {"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"m\",\"params\":"
     "[\"\\ud800\\uzzzz\"]}", JSONRPC_PARSE_ERROR, 0, NULL},
    /* a key repeated: -32600 (not a parse error, which has no id), echoing
     * the id when it is certain: the client waits for that answer */
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}",
     JSONRPC_INVALID_REQUEST, 0, "1"},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"arguments\":"
     "{\"cmd\":\"ls\",\"cmd\":\"rm x\"}},\"id\":\"k\"}",
     JSONRPC_INVALID_REQUEST, 0, "\"k\""},
    {"{\"jsonrpc\":\"2.0\",\"params\":{\"id\":1,\"id\":2,\"s\":\"}{,\\\"id\\\":3\"},"
     " \"id\" : 6 ,\"method\":\"m\"}",
     JSONRPC_INVALID_REQUEST, 0, "6"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":1,\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, "1"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"i\\u0064\":1,\"id\":2,\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"a\",\"method\":\"b\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"method\":\"n\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    /* ... unless the line has another fault: that one is reported */
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"",
     JSONRPC_PARSE_ERROR, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"a\",\"method\":\"b\","
     "\"params\":[18446744073709551616]}", JSONRPC_INVALID_PARAMS, 0, "3"},
    /* batches and non-objects: -32600, no id */
    {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    {"[]", JSONRPC_INVALID_REQUEST, 0, NULL},
    {"42", JSONRPC_INVALID_REQUEST, 0, NULL},
    {"\"ping\"", JSONRPC_INVALID_REQUEST, 0, NULL},
    {"null", JSONRPC_INVALID_REQUEST, 0, NULL},
    /* bad ids: -32600, no id */
    {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
    /* good id, bad message: -32600 echoing the id */
    {"{\"id\":3,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST, 0, "3"},
    {"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}",
     JSONRPC_INVALID_REQUEST, 0, "3"},
    {"{\"jsonrpc\":2.0,\"id\":3,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST,
     0, "3"},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":7}",
     JSONRPC_INVALID_REQUEST, 0, "\"q\""},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"pi\\u0000ng\"}",
     JSONRPC_INVALID_REQUEST, 0, "\"q\""},
    {"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":\"x\"}",
     JSONRPC_INVALID_REQUEST, 0, "4"},
    {"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":null}",
     JSONRPC_INVALID_REQUEST, 0, "4"},
    {"{\"jsonrpc\":\"2.0\",\"id\":5}", JSONRPC_INVALID_REQUEST, 0, "5"},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":3}",
     JSONRPC_INVALID_REQUEST, 0, NULL},
};

TEST(jsonrpc_parse_validates_every_field)
{
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
        const struct parse_case *c = &parse_cases[i];
        jsonrpc_msg_t m;
        jsonrpc_error_t e;
        json_t *bad;
        int rc = jsonrpc_parse(c->line, strlen(c->line), &m, &e, &bad);
        if (rc != c->code)
            fprintf(stderr, "case %zu: %s\n", i, c->line);
        ASSERT_EQ(rc, c->code);
        json_t *id = rc == 0 ? m.id : e.id;
        char *got = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY)
                       : NULL;
        if (c->id)
            ASSERT_STR(got, c->id);
        else
            ASSERT_TRUE(got == NULL);
        free(got);
        if (rc == 0) {
            ASSERT_EQ(m.kind, c->kind);
            ASSERT_TRUE(bad == NULL);
            json_decref(m.root);
        } else {
            ASSERT_TRUE(e.message[0] != '\0');
            json_decref(bad);
        }
    }
}

/* Nesting past jansson's depth limit is valid JSON it cannot take: the id
 * is read from the text and answered, as for the cases above. */
TEST(jsonrpc_nesting_past_the_parser_limit_keeps_its_id)
{
    buf_t line = BUF_INIT;
    ASSERT_OK(buf_append_str(&line, "{\"jsonrpc\":\"2.0\",\"id\":8,"
                                    "\"method\":\"m\",\"params\":"));
    for (int i = 0; i < 5000; i++)
        ASSERT_OK(buf_append_byte(&line, '['));
    for (int i = 0; i < 5000; i++)
        ASSERT_OK(buf_append_byte(&line, ']'));
    ASSERT_OK(buf_append_str(&line, "}"));
    jsonrpc_msg_t m;
    jsonrpc_error_t e;
    json_t *bad;
    ASSERT_EQ(jsonrpc_parse(line.p, line.len, &m, &e, &bad),
              JSONRPC_INVALID_PARAMS);
    ASSERT_TRUE(json_is_integer(e.id));
    ASSERT_EQ(json_integer_value(e.id), 8);
    ASSERT_CONTAINS(e.message, "cannot take");
    json_decref(bad);
    buf_free(&line);
}

/* The refusal of a lone surrogate names the escape, says what to send
 * instead, and is not cut short with the escape at the largest byte
 * position a line can have. */
TEST(jsonrpc_lone_surrogate_message_names_the_escape)
{
    static const char head[] =
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\",\"params\":[\"";
    static const char tail[] = "\\udbff\\u0041\"]}";
    size_t len = JSONRPC_LINE_MAX;
    size_t pad = len - (sizeof head - 1) - (sizeof tail - 1);
    char *line = malloc(len);
    ASSERT_TRUE(line != NULL);
    memcpy(line, head, sizeof head - 1);
    memset(line + sizeof head - 1, 'a', pad);
    memcpy(line + len - (sizeof tail - 1), tail, sizeof tail - 1);
    jsonrpc_msg_t m;
    jsonrpc_error_t e;
    json_t *bad;
    ASSERT_EQ(jsonrpc_parse(line, len, &m, &e, &bad), JSONRPC_INVALID_PARAMS);
    ASSERT_EQ(json_integer_value(e.id), 3);
    ASSERT_CONTAINS(e.message, "invalid Unicode '\\uDBFF\\u0041'");
    ASSERT_CONTAINS(e.message, "surrogate");
    /* the closing quote, counted from 1: len - 2 */
    char at[64];
    snprintf(at, sizeof at, "ending at byte %zu:", len - 2);
    ASSERT_CONTAINS(e.message, at);
    ASSERT_CONTAINS(e.message, "U+FFFD (\\ufffd) in its place.");
    json_decref(bad);
    free(line);
}

/* ------------------------------------------------ the id, read from text */

struct text_id_case {
    const char *text;
    const char *id; /* the id, as compact JSON; NULL: none */
};

static const struct text_id_case text_id_cases[] = {
    {"{\"id\":1}", "1"},
    {" \t\r\n{ \"id\" : \"x\" } trailing", "\"x\""},
    {"{\"i\\u0064\":\"e\\\"s\\\\\"}", "\"e\\\"s\\\\\""},
    {"{\"\\u0069\\u0064\":9}", "9"},
    {"{\"\\u0069\\u0064\\u0020\":9}", NULL}, /* "id ": long, not decoded */
    {"{\"i\\\"d\":1}", NULL},
    {"{\"idx\":1,\"xid\":2}", NULL},
    {"{\"jsonrpc\":\"2.0\",\"params\":{\"id\":2,\"a\":[{\"id\":4}]},\"id\":3}",
     "3"},
    {"{\"params\":{\"id\":2}}", NULL},
    {"{\"a\":\"}\\\",\\\"id\\\":5\",\"id\":6}", "6"},
    {"{\"a\":\"\\\\\",\"id\":4}", "4"},
    {"{\"a\":[\"]\",{\"}\":\"[\"}],\"id\":-0}", "0"},
    {"{\"a\":true,\"b\":null,\"c\":-1.5e3,\"id\":\"t\"}", "\"t\""},
    {"{\"id\":1,\"id\":1}", "1"},
    {"{\"id\":1,\"id\":2}", NULL},
    {"{\"id\":1,\"i\\u0064\":\"1\"}", NULL},
    /* not an id */
    {"{\"id\":1.5}", NULL},
    {"{\"id\":null}", NULL},
    {"{\"id\":true}", NULL},
    {"{\"id\":[1]}", NULL},
    {"{\"id\":{}}", NULL},
    {"{\"id\":1e400}", NULL},
    {"{\"id\":18446744073709551616}", NULL},
    {"{\"id\":12abc}", NULL},
    {"{\"id\":\"\\ud800\"}", NULL},
    {"{\"id\":\"\xff\"}", NULL},
    /* not an object */
    {"", NULL},
    {"   ", NULL},
    {"[{\"id\":1}]", NULL},
    {"\"id\"", NULL},
    {"{}", NULL},
    {"{ }", NULL},
    {"{\"id\"1}", NULL},
    {"{\"a\" 1,\"id\":2}", NULL},
    {"{\"a\":1 \"id\":2}", NULL},
    {"{\"a\":1,,\"id\":2}", NULL},
    {"{\"a\":1,}", NULL},
    {"{'id':1}", NULL},
    {"{\"a\":,\"id\":2}", NULL},
    {"{\"id\":1, garbage", NULL},
    /* cut short: the id when its value ends within the text */
    {"{\"id\":12", NULL}, /* more digits may follow */
    {"{\"id\":12 ", "12"},
    {"{\"id\":12,", "12"},
    {"{\"id\":\"ab", NULL},
    {"{\"id\":\"ab\\", NULL},
    {"{\"id\":\"ab\"", "\"ab\""},
    {"{\"id\":", NULL},
    {"{\"id\"", NULL},
    {"{\"i", NULL},
    {"{", NULL},
    {"{\"id\":7,\"p\":\"unterminated", "7"},
    {"{\"id\":7,\"p\":[1,{\"q\":[", "7"},
    {"{\"id\":7,\"p\":tr", "7"},
    {"{\"id\":7,\"id\":", "7"}, /* a second id that cannot be seen */
    {"{\"p\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", NULL},
};

TEST(jsonrpc_text_id_walks_only_the_top_level_object)
{
    for (size_t i = 0; i < sizeof text_id_cases / sizeof text_id_cases[0];
         i++) {
        const struct text_id_case *c = &text_id_cases[i];
        json_t *id = jsonrpc_text_id(c->text, strlen(c->text));
        char *got = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY)
                       : NULL;
        if (c->id ? !got || strcmp(got, c->id) : got != NULL)
            fprintf(stderr, "case %zu: %s -> %s\n", i, c->text,
                    got ? got : "(none)");
        if (c->id)
            ASSERT_STR(got, c->id);
        else
            ASSERT_TRUE(got == NULL);
        free(got);
        json_decref(id);
    }
    /* Bytes past n are not read: cut before the '}', 123 may go on. */
    json_t *id = jsonrpc_text_id("{\"id\":123}", 9);
    ASSERT_TRUE(id == NULL);
    id = jsonrpc_text_id("{\"id\":123}", 10);
    ASSERT_EQ(json_integer_value(id), 123);
    json_decref(id);
}

/* Nesting deeper than any parser's stack costs the scan nothing: counted,
 * not recursed into. */
TEST(jsonrpc_text_id_after_deep_nesting)
{
    enum { DEPTH = 1000000 };
    buf_t t = BUF_INIT;
    ASSERT_OK(buf_append_str(&t, "{\"p\":"));
    for (int i = 0; i < DEPTH; i++)
        ASSERT_OK(buf_append_str(&t, "[{\"a\":"));
    ASSERT_OK(buf_append_str(&t, "0"));
    for (int i = 0; i < DEPTH; i++)
        ASSERT_OK(buf_append_str(&t, "}]"));
    ASSERT_OK(buf_append_str(&t, ",\"id\":\"deep\"}"));
    json_t *id = jsonrpc_text_id(t.p, t.len);
    ASSERT_STR(json_string_value(id), "deep");
    json_decref(id);
    buf_free(&t);
}

/* --------------------------------------------------------------- fixture */

struct fx {
    loop_t *loop;
    jsonrpc_t *rpc;
    int in[2];  /* test writes in[1]; transport reads in[0] */
    int out[2]; /* transport writes out[1]; test reads out[0] */
    buf_t acc;  /* output read but not yet consumed */
    json_t *seen; /* every message delivered, in order */
    int closed;   /* on_close calls */
    int close_err;
    size_t big_reply; /* > 0: answer each message with this many bytes */
};

static void fx_on_msg(jsonrpc_t *j, const jsonrpc_msg_t *m, void *data)
{
    struct fx *f = data;
    json_array_append(f->seen, m->root);
    if (f->big_reply) {
        char *s = malloc(f->big_reply + 1);
        memset(s, 'x', f->big_reply);
        s[f->big_reply] = '\0';
        jsonrpc_notify(j, "big", json_pack("{s:s}", "s", s));
        free(s);
    } else if (m->kind == JSONRPC_REQUEST) {
        jsonrpc_respond(j, m->id, json_pack("{s:s}", "method", m->method));
    }
}

static void fx_on_close(jsonrpc_t *j, int err, void *data)
{
    (void)j;
    struct fx *f = data;
    f->closed++;
    f->close_err = err;
}

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof *f);
    ASSERT_OK(loop_new(&f->loop));
    ASSERT_OK(pipe2(f->in, O_CLOEXEC));
    ASSERT_OK(pipe2(f->out, O_CLOEXEC));
    fcntl(f->in[0], F_SETFL, O_NONBLOCK);
    fcntl(f->out[1], F_SETFL, O_NONBLOCK);
    fcntl(f->out[0], F_SETFL, O_NONBLOCK);
    f->seen = json_array();
    ASSERT_OK(jsonrpc_new(f->loop, f->in[0], f->out[1], fx_on_msg,
                          fx_on_close, f, &f->rpc));
}

static void fx_fini(struct fx *f)
{
    jsonrpc_free(f->rpc);
    loop_free(f->loop);
    for (int i = 0; i < 2; i++) {
        if (f->in[i] >= 0)
            close(f->in[i]);
        if (f->out[i] >= 0)
            close(f->out[i]);
    }
    buf_free(&f->acc);
    json_decref(f->seen);
}

static void fx_write(struct fx *f, const char *s)
{
    ASSERT_EQ(write(f->in[1], s, strlen(s)), (ssize_t)strlen(s));
}

/* The next output line, parsed; fails the test after 5 s. */
static json_t *fx_next(struct fx *f)
{
    char *line = tu_loop_read_line(f->loop, f->out[0], &f->acc, 5000);
    ASSERT_TRUE(line != NULL);
    json_error_t err;
    json_t *j = json_loads(line, JSON_ALLOW_NUL, &err);
    if (!j)
        fprintf(stderr, "not JSON: %s\n", line);
    ASSERT_TRUE(j != NULL);
    free(line);
    return j;
}

static void run_until_seen(struct fx *f, size_t n)
{
    uint64_t deadline = loop_clock_ms() + 5000;
    while (json_array_size(f->seen) < n && loop_clock_ms() < deadline)
        loop_run_once(f->loop, 50);
    ASSERT_INT(json_array_size(f->seen), ==, n);
}

static long long error_code(const json_t *msg)
{
    return json_integer_value(
        json_object_get(json_object_get(msg, "error"), "code"));
}

/* --------------------------------------------------------------- framing */

TEST(jsonrpc_split_lines_many_per_read_crlf_and_blank_lines)
{
    struct fx f;
    fx_init(&f);
    /* One message a byte at a time, each byte its own read. */
    const char *one = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}\n";
    for (const char *p = one; *p; p++) {
        ASSERT_EQ(write(f.in[1], p, 1), 1);
        loop_run_once(f.loop, 0);
    }
    run_until_seen(&f, 1);
    /* Three in one write, one with CRLF, blank lines between. */
    fx_write(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"b\"}\r\n"
                 "\n   \n\r\n"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n"
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"c\"}\n");
    run_until_seen(&f, 4);
    for (int want = 1; want <= 3; want++) {
        json_t *r = fx_next(&f);
        ASSERT_EQ(json_integer_value(json_object_get(r, "id")), want);
        json_decref(r);
    }
    /* A last line without '\n' still counts at EOF, then on_close(0). */
    fx_write(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"d\"}");
    close(f.in[1]);
    f.in[1] = -1;
    run_until_seen(&f, 5);
    json_t *r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 4);
    json_decref(r);
    while (!f.closed)
        loop_run_once(f.loop, 1000);
    ASSERT_EQ(f.closed, 1);
    ASSERT_EQ(f.close_err, 0);
    ASSERT_EQ(jsonrpc_feed(f.rpc, "x\n", 2), -ESHUTDOWN);
    fx_fini(&f);
}

TEST(jsonrpc_junk_is_answered_and_the_stream_goes_on)
{
    struct fx f;
    fx_init(&f);
    fx_write(&f, "{oops\n"
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"b\"}]\n"
                 "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":5}\n"
                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ok\"}\n");
    json_t *r = fx_next(&f);
    ASSERT_EQ(error_code(r), JSONRPC_PARSE_ERROR);
    ASSERT_TRUE(json_object_get(r, "id") == NULL);
    json_decref(r);
    r = fx_next(&f);
    ASSERT_EQ(error_code(r), JSONRPC_INVALID_REQUEST);
    ASSERT_TRUE(json_object_get(r, "id") == NULL);
    ASSERT_CONTAINS(json_string_value(json_object_get(
                        json_object_get(r, "error"), "message")),
                    "batch");
    json_decref(r);
    r = fx_next(&f);
    ASSERT_EQ(error_code(r), JSONRPC_INVALID_REQUEST);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "s");
    json_decref(r);
    r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 9);
    json_decref(r);
    /* None of the batch's members reached the handler. */
    ASSERT_EQ(json_array_size(f.seen), 1);
    fx_fini(&f);
}

/* A valid request padded to exactly len bytes. */
static char *padded_request(size_t len, int id)
{
    char head[64];
    int hn = snprintf(head, sizeof head,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"big\","
                      "\"params\":{\"p\":\"", id);
    const char *tail = "\"}}";
    char *s = malloc(len + 2);
    memcpy(s, head, (size_t)hn);
    memset(s + hn, 'a', len - (size_t)hn - strlen(tail));
    memcpy(s + len - strlen(tail), tail, strlen(tail));
    s[len] = '\n';
    s[len + 1] = '\0';
    return s;
}

/* Feeds a long buffer in read-sized chunks, as the watcher would. */
static void feed_chunked(jsonrpc_t *j, const char *p, size_t n)
{
    for (size_t off = 0; off < n; off += JSONRPC_READ_CHUNK) {
        size_t k = n - off < JSONRPC_READ_CHUNK ? n - off
                                                : JSONRPC_READ_CHUNK;
        ASSERT_OK(jsonrpc_feed(j, p + off, k));
    }
}

static void feed_str(jsonrpc_t *j, const char *s)
{
    ASSERT_OK(jsonrpc_feed(j, s, strlen(s)));
}

TEST_T(jsonrpc_line_limit_at_its_edge, 120)
{
    struct fx f;
    fx_init(&f);
    /* Exactly JSONRPC_LINE_MAX bytes before the '\n': accepted. */
    char *at = padded_request(JSONRPC_LINE_MAX, 1);
    feed_chunked(f.rpc, at, JSONRPC_LINE_MAX + 1);
    free(at);
    ASSERT_EQ(json_array_size(f.seen), 1);
    json_t *r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 1);
    json_decref(r);
    /* One byte more: refused with -32600 (with the id its start shows),
     * skipped to its '\n', and the next line is served as usual. */
    char *over = padded_request(JSONRPC_LINE_MAX + 1, 2);
    feed_chunked(f.rpc, over, JSONRPC_LINE_MAX + 2);
    free(over);
    feed_str(f.rpc, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\"}\n");
    ASSERT_EQ(json_array_size(f.seen), 2);
    r = fx_next(&f);
    ASSERT_EQ(error_code(r), JSONRPC_INVALID_REQUEST);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 2);
    ASSERT_CONTAINS(json_string_value(json_object_get(
                        json_object_get(r, "error"), "message")),
                    "line limit");
    json_decref(r);
    r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 3);
    json_decref(r);
    /* The over-long line is refused once, even in tiny pieces, and its
     * tail (which could look like a message) is not parsed. */
    char *chunk = malloc(JSONRPC_LINE_MAX / 4);
    memset(chunk, ' ', JSONRPC_LINE_MAX / 4);
    for (int i = 0; i < 5; i++)
        feed_chunked(f.rpc, chunk, JSONRPC_LINE_MAX / 4);
    free(chunk);
    feed_str(f.rpc, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\"}\n");
    feed_str(f.rpc, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\"}\n");
    r = fx_next(&f);
    ASSERT_EQ(error_code(r), JSONRPC_INVALID_REQUEST);
    ASSERT_TRUE(json_object_get(r, "id") == NULL); /* blanks: no object */
    json_decref(r);
    r = fx_next(&f);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 5);
    json_decref(r);
    ASSERT_EQ(json_array_size(f.seen), 3);
    fx_fini(&f);
}

/* head, pad bytes of 'a', tail and '\n': *len bytes before the '\n'. */
static char *long_line(const char *head, size_t pad, const char *tail,
                       size_t *len)
{
    size_t hn = strlen(head), tn = strlen(tail);
    *len = hn + pad + tn;
    char *s = malloc(*len + 1);
    ASSERT_TRUE(s != NULL);
    memcpy(s, head, hn);
    memset(s + hn, 'a', pad);
    memcpy(s + hn + pad, tail, tn);
    s[*len] = '\n';
    return s;
}

/* Feeds s whole (first 0: in one call) or as a piece of first bytes and
 * then read-sized chunks, so that the chunk crossing the limit is only
 * part buffered; then a ping, and returns the over-long line's answer. */
static json_t *refusal_of(struct fx *f, char *s, size_t len, size_t first)
{
    if (first == 0) {
        ASSERT_OK(jsonrpc_feed(f->rpc, s, len + 1));
    } else {
        ASSERT_OK(jsonrpc_feed(f->rpc, s, first));
        feed_chunked(f->rpc, s + first, len + 1 - first);
    }
    free(s);
    feed_str(f->rpc, "{\"jsonrpc\":\"2.0\",\"id\":\"next\",\"method\":\"x\"}\n");
    json_t *r = fx_next(f);
    ASSERT_EQ(error_code(r), JSONRPC_INVALID_REQUEST);
    ASSERT_CONTAINS(json_string_value(json_object_get(
                        json_object_get(r, "error"), "message")),
                    "line limit");
    json_t *next = fx_next(f);
    ASSERT_STR(json_string_value(json_object_get(next, "id")), "next");
    json_decref(next);
    return r;
}

/* An over-long line is answered with the id in its first JSONRPC_LINE_MAX
 * bytes, an integer or a string, its key escaped or not, however the line
 * came in reads; an id past that start is not seen, and the answer goes
 * without one.  The edge: the id's closing quote as the last byte kept. */
TEST_T(jsonrpc_over_long_line_keeps_the_id_in_its_start, 180)
{
    static const char before[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"big\",\"params\":{\"p\":\"";
    static const char edge_tail[] = "\"},\"id\":\"e\"}";
    struct fx f;
    fx_init(&f);
    size_t len;
    char *s = long_line("{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"big\","
                        "\"params\":{\"p\":\"", JSONRPC_LINE_MAX, "\"}}",
                        &len);
    json_t *r = refusal_of(&f, s, len, JSONRPC_READ_CHUNK);
    ASSERT_EQ(json_integer_value(json_object_get(r, "id")), 21);
    json_decref(r);

    s = long_line("{\"jsonrpc\":\"2.0\",\"i\\u0064\":\"s\\\"1\","
                  "\"method\":\"big\",\"params\":{\"p\":\"",
                  JSONRPC_LINE_MAX, "\"}}", &len);
    r = refusal_of(&f, s, len, 0);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "s\"1");
    json_decref(r);

    s = long_line(before, JSONRPC_LINE_MAX, "\"},\"id\":23}", &len);
    r = refusal_of(&f, s, len, 1000);
    ASSERT_TRUE(json_object_get(r, "id") == NULL);
    json_decref(r);

    /* The line one byte over the limit, its last byte the '}' after the
     * id: the id's closing quote is the last byte kept. */
    size_t pad = JSONRPC_LINE_MAX + 1 - (sizeof before - 1) -
                 (sizeof edge_tail - 1);
    s = long_line(before, pad, edge_tail, &len);
    ASSERT_EQ(len, JSONRPC_LINE_MAX + 1);
    ASSERT_EQ(s[JSONRPC_LINE_MAX - 1], '"');
    r = refusal_of(&f, s, len, 1000);
    ASSERT_STR(json_string_value(json_object_get(r, "id")), "e");
    json_decref(r);
    /* One byte more and the quote is past it: no id. */
    s = long_line(before, pad + 1, edge_tail, &len);
    r = refusal_of(&f, s, len, 1000);
    ASSERT_TRUE(json_object_get(r, "id") == NULL);
    json_decref(r);
    s = long_line(before, pad + 1, edge_tail, &len);
    r = refusal_of(&f, s, len, 0);
    ASSERT_TRUE(json_object_get(r, "id") == NULL);
    json_decref(r);
    fx_fini(&f);
}

/* ----------------------------------------------------------------- output */

TEST(jsonrpc_output_is_whole_compact_lines_in_order_through_a_full_pipe)
{
    struct fx f;
    fx_init(&f);
    /* A small pipe so the queue has to wait for LOOP_WRITE. */
    fcntl(f.out[1], F_SETPIPE_SZ, 4096);
    enum { N = 200 };
    for (int i = 0; i < N; i++) {
        /* Newlines and NULs inside strings must not break the framing. */
        json_t *p = json_pack("{s:i, s:s, s:s#}", "i", i, "text",
                              "line one\nline two\r\n", "bin", "a\0b", 3);
        ASSERT_OK(jsonrpc_notify(f.rpc, "note", p));
    }
    ASSERT_INT(jsonrpc_out_pending(f.rpc), >, 0);
    for (int i = 0; i < N; i++) {
        json_t *r = fx_next(&f);
        ASSERT_STR(json_string_value(json_object_get(r, "method")), "note");
        json_t *p = json_object_get(r, "params");
        ASSERT_EQ(json_integer_value(json_object_get(p, "i")), i);
        ASSERT_STR(json_string_value(json_object_get(p, "text")),
                   "line one\nline two\r\n");
        json_decref(r);
    }
    ASSERT_EQ(jsonrpc_out_pending(f.rpc), 0);
    ASSERT_EQ(f.acc.len, 0);
    fx_fini(&f);
}

TEST(jsonrpc_broken_output_is_reported_once_and_sticky)
{
    struct fx f;
    fx_init(&f);
    signal(SIGPIPE, SIG_IGN);
    close(f.out[0]);
    f.out[0] = -1;
    ASSERT_EQ(jsonrpc_notify(f.rpc, "x", NULL), -EPIPE);
    ASSERT_EQ(f.closed, 1);
    ASSERT_EQ(f.close_err, -EPIPE);
    ASSERT_EQ(jsonrpc_notify(f.rpc, "y", NULL), -EPIPE);
    ASSERT_EQ(jsonrpc_out_pending(f.rpc), 0);
    ASSERT_EQ(f.closed, 1);
    fx_fini(&f);
}

TEST(jsonrpc_reads_a_regular_file_that_epoll_refuses)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/in.jsonl", test_tmpdir());
    FILE *fp = fopen(path, "w");
    ASSERT_TRUE(fp != NULL);
    for (int i = 0; i < 3; i++)
        fprintf(fp, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"m\"}\n", i);
    fclose(fp);
    struct fx f;
    memset(&f, 0, sizeof f);
    ASSERT_OK(loop_new(&f.loop));
    f.in[0] = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    f.in[1] = -1;
    ASSERT_OK(pipe2(f.out, O_CLOEXEC | O_NONBLOCK));
    f.seen = json_array();
    ASSERT_OK(jsonrpc_new(f.loop, f.in[0], f.out[1], fx_on_msg, fx_on_close,
                          &f, &f.rpc));
    while (!f.closed)
        ASSERT_INT(loop_run_once(f.loop, 1000), >, 0);
    ASSERT_EQ(json_array_size(f.seen), 3);
    ASSERT_EQ(f.close_err, 0);
    fx_fini(&f);
}

TEST(jsonrpc_input_pauses_while_output_backs_up)
{
    struct fx f;
    fx_init(&f);
    /* Each message is answered with 1 MiB nobody reads yet. */
    f.big_reply = 1024 * 1024;
    size_t over = JSONRPC_OUT_HIGH_WATER / f.big_reply + 1;
    for (size_t i = 0; i < over; i++)
        fx_write(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
    run_until_seen(&f, over);
    ASSERT_INT(jsonrpc_out_pending(f.rpc), >, JSONRPC_OUT_HIGH_WATER);
    /* The next line waits: input is no longer watched. */
    fx_write(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
    for (int i = 0; i < 5; i++)
        loop_run_once(f.loop, 10);
    ASSERT_EQ(json_array_size(f.seen), over);
    /* Reading the output drains the queue and input resumes. */
    for (size_t i = 0; i < over; i++)
        json_decref(fx_next(&f));
    f.big_reply = 0;
    run_until_seen(&f, over + 1);
    fx_fini(&f);
}
