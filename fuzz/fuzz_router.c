/*
 * fuzz_router.c — libFuzzer target for the category router's reading of a
 * command line (router_classify: segments, words, heredocs, the danger
 * table) and router_expands.
 *
 * The input is untrusted text from a model: the scan must never read out
 * of bounds, loop or leak, whatever quotes, nesting or heredocs it holds
 * or leaves open.  Each run checks the shape of the result and aborts on
 * the first violation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "squash/router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(int cond)
{
    if (!cond)
        abort();
}

/*
 * LLVMFuzzerTestOneInput — classifies one input (a NUL-terminated copy)
 * and checks: success; at least one segment for a line with a word, at
 * most ROUTER_MAX_SEGMENTS; each segment's text non-empty and no longer
 * than the input, its words NULL-terminated and counted, at most
 * ROUTER_MAX_WORDS; a category and a danger within their ranges.  The
 * router is made once (no policy), as rein serve makes it.  Returns 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static router_t *r;
    if (!r) {
        char err[256];
        fuzz_check(router_new(NULL, &r, err, sizeof err) == 0);
    }
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t len = strlen(s);
    (void)router_expands(s);

    router_result_t res;
    fuzz_check(router_classify(r, s, &res) == 0);
    fuzz_check(res.nsegs <= ROUTER_MAX_SEGMENTS);
    fuzz_check(res.category >= ROUTER_CONDENSE &&
               res.category <= ROUTER_DANGEROUS);
    fuzz_check(res.danger >= ROUTER_SAFE &&
               res.danger <= ROUTER_DANGER_FORBID);
    for (size_t i = 0; i < res.nsegs; i++) {
        const router_seg_t *g = &res.segs[i];
        fuzz_check(g->text != NULL && *g->text);
        fuzz_check(strlen(g->text) <= len);
        fuzz_check(g->argv != NULL && g->argc <= ROUTER_MAX_WORDS);
        for (size_t k = 0; k < g->argc; k++)
            fuzz_check(g->argv[k] != NULL);
        fuzz_check(g->argv[g->argc] == NULL);
        (void)router_expands(g->text);
    }
    router_result_free(&res);
    free(s);
    return 0;
}
