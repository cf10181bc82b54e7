/*
 * fuzz_keys.c — libFuzzer target for the key parser (src/term/keys.c).
 *
 * The parser reads bytes straight from a PTY, so every entry point must
 * stay inside its input and its buffers whatever arrives.  The input is fed
 * to each function as key bytes, and (NUL-terminated) as a key id.  Beyond
 * memory safety it checks the contracts that hold for every input: parse
 * answers the same with a big and an exact buffer, never writes more than
 * it says, and encode's bytes fit what it returns.  The id also goes
 * through keys_respell (the MCP `keys` argument's other spellings).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rein.h"
#include "term/keys.h"

/* Ids are short; longer inputs only exercise the same paths slower. */
#define FUZZ_ID_MAX 256
/* Too small for most ids, so the REIN_ETOOSMALL path runs. */
#define FUZZ_TINY 3

static void fuzz_parse(const uint8_t *data, size_t size, bool kitty)
{
    char big[REIN_KEY_ID_MAX], tiny[FUZZ_TINY], exact[REIN_KEY_ID_MAX];
    int n = rein_key_parse(data, size, kitty, big, sizeof(big));
    int t = rein_key_parse(data, size, kitty, tiny, sizeof(tiny));

    if (n < 0)
        abort(); /* REIN_KEY_ID_MAX must hold every id */
    if (n == 0 ? t != 0 : (t != n && t != REIN_ETOOSMALL))
        abort();
    if (n > 0) {
        if (strlen(big) != (size_t)n)
            abort();
        /* exactly id + NUL fits; one byte less does not */
        if (rein_key_parse(data, size, kitty, exact, (size_t)n + 1) != n ||
            strcmp(exact, big) != 0)
            abort();
        if (rein_key_parse(data, size, kitty, exact, (size_t)n) != REIN_ETOOSMALL)
            abort();
        (void)rein_key_matches(data, size, big, kitty);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char id[FUZZ_ID_MAX + 1], out[KEY_ENCODE_MAX];
    size_t idlen = size < FUZZ_ID_MAX ? size : FUZZ_ID_MAX;
    rein_kitty_key_t k;
    int n;

    fuzz_parse(data, size, false);
    fuzz_parse(data, size, true);

    if (rein_kitty_parse(data, size, &k) == 1)
        (void)rein_kitty_matches(data, size, k.codepoint, k.modifier);
    (void)rein_kitty_matches(data, size, 'a', REIN_KITTY_CTRL);

    memcpy(id, data, idlen);
    id[idlen] = '\0';
    (void)rein_key_matches(data, size, id, false);
    (void)rein_key_matches(data, size, id, true);
    (void)rein_legacy_matches(data, size, id);

    n = rein_key_encode(id, out, sizeof(out));
    if (n > (int)sizeof(out))
        abort();
    if (n > 0) {
        char tiny[FUZZ_TINY];

        /* the encoded key reads back as some key or as nothing, safely */
        fuzz_parse((const uint8_t *)out, (size_t)n, false);
        if (rein_key_encode(id, tiny, sizeof(tiny)) !=
            (n <= FUZZ_TINY ? n : REIN_ETOOSMALL))
            abort();
    } else if (n != REIN_EKEY) {
        abort();
    }

    /* A respelled id is a NUL-terminated string of the length returned,
     * and the same with an exact buffer; one byte less is too small. */
    char re[KEY_RESPELL_MAX + 32], exact_re[KEY_RESPELL_MAX + 32];
    n = keys_respell(id, re, sizeof(re));
    if (n < 0 || (n > 0 && strlen(re) != (size_t)n))
        abort();
    if (n > 0) {
        if (keys_respell(id, exact_re, (size_t)n + 1) != n ||
            strcmp(exact_re, re) != 0 ||
            keys_respell(id, exact_re, (size_t)n) != REIN_ETOOSMALL)
            abort();
        int e = rein_key_encode(re, out, sizeof(out));
        if (e > (int)sizeof(out) || (e <= 0 && e != REIN_EKEY))
            abort();
    }
    return 0;
}
