/*
 * fuzz_grammar.c — the grammar loader on untrusted bytes.
 *
 * Any input either fails with an error message or loads; a loaded grammar
 * is then matched against a few lines (under its match limits), detected
 * against a command line, and freed.  ASan and UBSan do the checking.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "squash/grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const lines[] = {
        "src/a.c:1:2: error: x", "Traceback (most recent call last):",
        "added 12 packages", "", "\xe2\x94\x80\xe2\x94\x80 aaaaaaaaaaaaaaaaaaaaaaaaaaaa!",
    };
    grammar_t *g;
    buf_t err = BUF_INIT;
    int rc = grammar_parse("fuzz.json", data, size, &g, &err);
    if (rc < 0) {
        if (!err.len)
            abort(); /* every failure says why */
        buf_free(&err);
        return 0;
    }
    grammar_set_t *set;
    grammar_ctx_t *ctx;
    if (grammar_set_new(&set) < 0 || grammar_ctx_new(&ctx) < 0)
        abort();
    if (grammar_set_add(set, g) < 0 || grammar_set_resolve(set, &err) < 0)
        abort();
    for (size_t i = 0; i < grammar_set_count(set); i++) {
        const grammar_t *h = grammar_set_at(set, i);
        for (size_t l = 0; l < sizeof lines / sizeof lines[0]; l++) {
            grammar_match_t m;
            if (grammar_match(h, ctx, lines[l], strlen(lines[l]), 3, &m) == 1) {
                bool last;
                if (m.rule && grammar_rule_max_lines(m.rule))
                    (void)grammar_rule_continues(m.rule, ctx, "  x", 3, &last);
                if (m.has_file && m.file_off + m.file_len > strlen(lines[l]))
                    abort();
            }
        }
    }
    (void)grammar_set_detect(set, ctx, "sudo env A=1 gcc -c x.c");
    const grammar_t *gs[GRAMMAR_PER_COMMAND_MAX];
    size_t ng = grammar_set_detect_all(set, ctx, "npm ci && sh -c 'make; gcc x.c'", gs);
    if (ng > GRAMMAR_PER_COMMAND_MAX)
        abort();
    grammar_ctx_free(ctx);
    grammar_set_free(set);
    buf_free(&err);
    return 0;
}
