/*
 * fuzz_text_id.c — jsonrpc_text_id, the scanner that reads a message's id
 * from raw text (the start of an over-long line, a line jansson refused),
 * on untrusted bytes.  It is fuzzed directly: the framing only reaches it
 * with lines past JSONRPC_LINE_MAX, longer than any fuzz input.
 *
 * Checked, for the whole input and for prefixes of it: the answer is
 * NULL, a string or an integer.  Where jansson takes the whole input as
 * an object with no key repeated, the answer for the whole is exactly its
 * id (NULL when that is absent or not a string or an integer), and the
 * answer for every prefix is that id or NULL: a cut line never yields a
 * wrong id.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prefixes tried per input, spread over its length (all of them when it
 * is short): the scan is linear, so all of a long input's would be
 * quadratic. */
#define FUZZ_PREFIXES 64

/* What the scan should find in the whole text: jansson's reading of it,
 * or (void *)-1 when jansson does not take it as such an object.  A raw
 * NUL byte is JSON nowhere, but jansson takes one right after a number
 * (`"id":7\0,`) and the scan does not: no answer is expected there. */
static json_t *expected_id(const char *s, size_t n, json_t **root)
{
    *root = json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL |
                                 JSON_DECODE_ANY, NULL);
    if (!json_is_object(*root) || memchr(s, '\0', n))
        return (json_t *)-1;
    json_t *id = json_object_get(*root, "id");
    return json_is_string(id) || json_is_integer(id) ? id : NULL;
}

/* Scans s[0..n): the answer must be an id, and agree with want unless
 * want is unknown ((void *)-1); a prefix may also find nothing. */
static void check(const char *s, size_t n, const json_t *want, bool prefix)
{
    json_t *id = jsonrpc_text_id(s, n);
    if (id && !json_is_string(id) && !json_is_integer(id))
        abort();
    if (want != (json_t *)-1 && !(prefix && !id)) {
        if (!want != !id || (id && !json_equal(id, want)))
            abort();
    }
    json_decref(id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    json_t *root;
    json_t *want = expected_id(s, size, &root);
    check(s, size, want, false);
    size_t step = size / FUZZ_PREFIXES + 1;
    for (size_t k = 0; k < size; k += step)
        check(s, k, want, true);
    /* the last bytes are where a value is cut: each prefix there too */
    for (size_t k = size > 8 ? size - 8 : 0; k < size; k++)
        check(s, k, want, true);
    json_decref(root);
    return 0;
}
