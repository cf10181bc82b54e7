/*
 * fuzz_fixup.c — libFuzzer target for rein_bash_fixup.
 *
 * The input is untrusted text from a model, so the lexer must never read
 * out of bounds, recurse without limit or leak, and a rewrite must only ever
 * delete: the result is the input with pieces cut out, never anything new.
 * Each run checks those invariants and aborts on the first violation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rein.h"
#include "term/fixup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(int cond)
{
    if (!cond)
        abort();
}

/* True when every byte of sub appears in s in order (s with bytes
 * deleted can give sub). */
static int fuzz_subsequence(const char *sub, const char *s)
{
    for (; *sub; sub++) {
        s = strchr(s, *sub);
        if (!s)
            return 0;
        s++;
    }
    return 1;
}

/*
 * LLVMFuzzerTestOneInput — runs one input (a NUL-terminated copy, so an
 * embedded NUL ends the command early) through rein_bash_fixup and checks:
 * success; a NULL-terminated list whose length is n_stripped; an unchanged
 * copy when nothing was stripped (always so with a newline, a CR or an
 * over-long input); otherwise a result that is a subsequence of the input
 * with no trailing blank, pieces that occur in the input and are either
 * "2>&1" or a pipe into head/tail, and no more bytes reported than removed.
 * The result, fed back, must be accepted too.  Returns 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t len = strlen(s);

    rein_fixup_t f;
    fuzz_check(rein_bash_fixup(s, &f) == 0);
    fuzz_check(f.command != NULL && f.stripped != NULL);
    fuzz_check(f.stripped[f.n_stripped] == NULL);
    for (size_t i = 0; i < f.n_stripped; i++)
        fuzz_check(f.stripped[i] != NULL);

    if (f.n_stripped == 0) {
        fuzz_check(strcmp(f.command, s) == 0);
    } else {
        size_t out_len = strlen(f.command), removed = 0;
        fuzz_check(len <= FIXUP_MAX_INPUT && !strpbrk(s, "\r\n"));
        fuzz_check(out_len < len);
        fuzz_check(fuzz_subsequence(f.command, s));
        fuzz_check(out_len > 0 && f.command[out_len - 1] != ' ' &&
                   f.command[out_len - 1] != '\t');
        for (size_t i = 0; i < f.n_stripped; i++) {
            const char *p = f.stripped[i];
            size_t pl = strlen(p);
            fuzz_check(strstr(s, p) != NULL);
            fuzz_check(strcmp(p, "2>&1") == 0 ||
                       (p[0] == '|' && (strstr(p, "head") || strstr(p, "tail")) &&
                        p[pl - 1] != ' ' && p[pl - 1] != '\t'));
            removed += pl;
        }
        fuzz_check(removed <= len - out_len);

        rein_fixup_t again;
        fuzz_check(rein_bash_fixup(f.command, &again) == 0);
        rein_fixup_free(&again);
    }
    rein_fixup_free(&f);
    free(s);
    return 0;
}
