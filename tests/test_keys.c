/*
 * test_keys.c — the key parser (src/term/keys.c).
 *
 * Two sources of truth.  The recorded corpus (../shared/corpus/keys) holds
 * the reference parser's answers, and every row must agree.  The tables
 * below pin the rules derived from it one input at a time — legacy table,
 * ESC pairs, modifyOtherKeys, Kitty CSI u / ~ / letter forms, lock bits,
 * event types, malformed input — plus matching, Kitty field extraction and
 * encoding, and a round trip from every encodable id back through the
 * matcher.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "term/keys.h"

/* A byte string with its length (several vectors hold NUL bytes). */
#define BYTES(s) s, sizeof(s) - 1

#define KEYS_CORPUS "../shared/corpus/keys/vectors-sample.tsv"
#define KEYS_LINE_MAX 4096
#define KEYS_INPUT_MAX 512

/* ------------------------------------------------------------ the corpus */

static int keys_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool keys_unhex(const char *hex, unsigned char *out, size_t cap,
                       size_t *n)
{
    size_t len = strlen(hex), i;

    if (len % 2 || len / 2 > cap)
        return false;
    for (i = 0; i < len / 2; i++) {
        int hi = keys_hexval(hex[2 * i]), lo = keys_hexval(hex[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return false;
        out[i] = (unsigned char)(hi * 16 + lo);
    }
    *n = len / 2;
    return true;
}

/* Finds the end of the next "id=ab" item: the '=' followed by two 0/1
 * digits and then ';' or the end.  Ids may themselves hold ';' or '='. */
static char *keys_next_pair(char *p)
{
    char *q;

    for (q = p + 1; *q; q++) {
        if (q[0] == '=' && (q[1] == '0' || q[1] == '1') &&
            (q[2] == '0' || q[2] == '1') && (q[3] == ';' || q[3] == '\0'))
            return q;
    }
    return NULL;
}

static int keys_check_row(char *line, int lineno)
{
    char *cols[4], *p = line, *eq, *id;
    unsigned char in[KEYS_INPUT_MAX];
    size_t n, i;
    int bad = 0, m;

    for (i = 0; i < 4; i++) {
        cols[i] = p;
        p = strchr(p, '\t');
        if (i < 3 && !p) {
            fprintf(stderr, "corpus line %d: malformed\n", lineno);
            return 1;
        }
        if (p)
            *p++ = '\0';
    }
    if (!keys_unhex(cols[0], in, sizeof(in), &n)) {
        fprintf(stderr, "corpus line %d: bad hex\n", lineno);
        return 1;
    }
    for (m = 0; m < 2; m++) {
        char buf[REIN_KEY_ID_MAX];
        int rc = rein_key_parse(in, n, m == 1, buf, sizeof(buf));
        const char *got = rc > 0 ? buf : "null";

        if (rc < 0 || strcmp(got, cols[1 + m]) != 0) {
            fprintf(stderr, "MISMATCH %s kitty=%d: parse \"%s\", want \"%s\"\n",
                    cols[0], m, got, cols[1 + m]);
            bad++;
        }
    }
    if (strcmp(cols[3], "-") == 0)
        return bad;
    for (id = cols[3]; *id; id = eq + 4) {
        eq = keys_next_pair(id);
        if (!eq) {
            fprintf(stderr, "corpus line %d: bad match list\n", lineno);
            return bad + 1;
        }
        *eq = '\0';
        for (m = 0; m < 2; m++) {
            bool want = eq[1 + m] == '1';
            bool got = rein_key_matches(in, n, id, m == 1);

            if (got != want) {
                fprintf(stderr, "MISMATCH %s kitty=%d: matches(\"%s\") %d, want %d\n",
                        cols[0], m, id, got, want);
                bad++;
            }
        }
        if (eq[3] == '\0')
            break;
    }
    return bad;
}

TEST(keys_corpus_sample_agrees_with_reference)
{
    char line[KEYS_LINE_MAX];
    int lineno = 0, rows = 0, bad = 0;
    FILE *f = fopen(KEYS_CORPUS, "r");

    if (!f)
        SKIP("%s not found (run from the repo root)", KEYS_CORPUS);
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        rows++;
        bad += keys_check_row(line, lineno);
    }
    fclose(f);
    fprintf(stderr, "corpus: %d rows, %d mismatches\n", rows, bad);
    ASSERT_INT(rows, >, 0);
    ASSERT_INT(bad, ==, 0);
}

/* ----------------------------------------------------------- parse table */

struct keys_vec {
    const char *in;
    size_t len;
    const char *off; /* id with the Kitty flag off; NULL: not one key */
    const char *on;  /* with it on */
};

static const struct keys_vec keys_parse_vecs[] = {
    /* single bytes */
    {BYTES("\x03"), "ctrl+c", "ctrl+c"},
    {BYTES("\x01"), "ctrl+a", "ctrl+a"},
    {BYTES("\x1a"), "ctrl+z", "ctrl+z"},
    {BYTES("\r"), "enter", "enter"},
    {BYTES("\n"), "enter", "enter"},
    {BYTES("\t"), "tab", "tab"},
    {BYTES("\x7f"), "backspace", "backspace"},
    {BYTES("\x08"), "backspace", "backspace"},
    {BYTES("\x1b"), "escape", "escape"},
    {BYTES("\0"), "ctrl+space", "ctrl+space"},
    {BYTES(" "), "space", "space"},
    {BYTES("\x1c"), "ctrl+\\", "ctrl+\\"},
    {BYTES("\x1e"), "ctrl+^", "ctrl+^"},
    {BYTES("\x1f"), "ctrl+_", "ctrl+_"},
    {BYTES("a"), "a", "a"},
    {BYTES("Z"), "Z", "Z"},
    {BYTES("~"), "~", "~"},
    {BYTES("+"), "+", "+"},
    {BYTES("\x80"), NULL, NULL},
    {BYTES("\xff"), NULL, NULL},
    {BYTES(""), NULL, NULL},
    /* ESC + one byte: alt; only the ESC SP/B/F aliases depend on the flag */
    {BYTES("\x1bx"), "alt+x", "alt+x"},
    {BYTES("\x1bX"), "alt+shift+x", "alt+shift+x"},
    {BYTES("\x1b\x03"), "ctrl+alt+c", "ctrl+alt+c"},
    {BYTES("\x1b\x7f"), "alt+backspace", "alt+backspace"},
    {BYTES("\x1b\x08"), "alt+backspace", "alt+backspace"},
    {BYTES("\x1b\r"), "alt+enter", "alt+enter"},
    {BYTES("\x1b\n"), "alt+enter", "alt+enter"},
    {BYTES("\x1b\t"), "alt+tab", "alt+tab"},
    {BYTES("\x1b "), "alt+space", NULL},
    {BYTES("\x1b" "B"), "alt+left", "alt+shift+b"},
    {BYTES("\x1b" "F"), "alt+right", "alt+shift+f"},
    {BYTES("\x1b" "b"), "alt+b", "alt+b"},
    {BYTES("\x1bO"), "alt+shift+o", "alt+shift+o"},
    {BYTES("\x1b" "1"), NULL, NULL},
    {BYTES("\x1b."), NULL, NULL},
    {BYTES("\x1b["), NULL, NULL},
    {BYTES("\x1b\x1b"), NULL, NULL},
    {BYTES("\x1b\x1c"), NULL, NULL},
    /* the legacy table */
    {BYTES("\x1bOA"), "up", "up"},
    {BYTES("\x1b[D"), "left", "left"},
    {BYTES("\x1bOH"), "home", "home"},
    {BYTES("\x1b[4~"), "end", "end"},
    {BYTES("\x1b[8~"), "end", "end"},
    {BYTES("\x1b[7~"), "home", "home"},
    {BYTES("\x1b[E"), "clear", "clear"},
    {BYTES("\x1bOe"), "ctrl+clear", "ctrl+clear"},
    {BYTES("\x1b[e"), "shift+clear", "shift+clear"},
    {BYTES("\x1b[2$"), "shift+insert", "shift+insert"},
    {BYTES("\x1b[3^"), "ctrl+delete", "ctrl+delete"},
    {BYTES("\x1b[[5~"), "pageUp", "pageUp"},
    {BYTES("\x1b[6~"), "pageDown", "pageDown"},
    {BYTES("\x1b[d"), "shift+left", "shift+left"},
    {BYTES("\x1bOc"), "ctrl+right", "ctrl+right"},
    {BYTES("\x1b[8$"), "shift+end", "shift+end"},
    {BYTES("\x1b[5^"), "ctrl+pageUp", "ctrl+pageUp"},
    {BYTES("\x1bOS"), "f4", "f4"},
    {BYTES("\x1b[[E"), "f5", "f5"},
    {BYTES("\x1b[24~"), "f12", "f12"},
    {BYTES("\x1b[23~"), "f11", "f11"},
    {BYTES("\x1b[Z"), "shift+tab", "shift+tab"},
    {BYTES("\x1bOM"), "enter", "enter"},
    {BYTES("\x1b[22~"), NULL, NULL},
    {BYTES("\x1b[16~"), NULL, NULL},
    /* CSI 1;mod <letter> */
    {BYTES("\x1b[1;2A"), "shift+up", "shift+up"},
    {BYTES("\x1b[1;3B"), "alt+down", "alt+down"},
    {BYTES("\x1b[1;5C"), "ctrl+right", "ctrl+right"},
    {BYTES("\x1b[1;9D"), "super+left", "super+left"},
    {BYTES("\x1b[1;5H"), "ctrl+home", "ctrl+home"},
    {BYTES("\x1b[1;2F"), "shift+end", "shift+end"},
    {BYTES("\x1b[1;6P"), "shift+ctrl+f1", "shift+ctrl+f1"},
    {BYTES("\x1b[1;3S"), "alt+f4", "alt+f4"},
    {BYTES("\x1b[1;16A"), "shift+ctrl+alt+super+up", "shift+ctrl+alt+super+up"},
    {BYTES("\x1b[1;65A"), "up", "up"},           /* caps lock */
    {BYTES("\x1b[1;133A"), "ctrl+up", "ctrl+up"}, /* num lock + ctrl */
    {BYTES("\x1b[1;5:1A"), "ctrl+up", "ctrl+up"},
    {BYTES("\x1b[1;5:2A"), "ctrl+up", "ctrl+up"}, /* repeat */
    {BYTES("\x1b[1;5:3A"), NULL, NULL},           /* release */
    {BYTES("\x1b[1;0A"), NULL, NULL},
    {BYTES("\x1b[1;33A"), NULL, NULL}, /* meta: no name */
    {BYTES("\x1b[1;17A"), NULL, NULL}, /* hyper: no name */
    {BYTES("\x1b[1;5G"), NULL, NULL},
    {BYTES("\x1b[2;5A"), NULL, NULL},
    {BYTES("\x1b[1;5"), NULL, NULL},
    {BYTES("\x1b[1;5AB"), NULL, NULL},
    /* CSI n;mod ~ */
    {BYTES("\x1b[3;5~"), "ctrl+delete", "ctrl+delete"},
    {BYTES("\x1b[2;3~"), "alt+insert", "alt+insert"},
    {BYTES("\x1b[6;2~"), "shift+pageDown", "shift+pageDown"},
    {BYTES("\x1b[15;5~"), "ctrl+f5", "ctrl+f5"},
    {BYTES("\x1b[24;2~"), "shift+f12", "shift+f12"},
    {BYTES("\x1b[1;5~"), "ctrl+home", "ctrl+home"},
    {BYTES("\x1b[4;2~"), "shift+end", "shift+end"},
    {BYTES("\x1b[5;1~"), "pageUp", "pageUp"},
    {BYTES("\x1b[5;129~"), "pageUp", "pageUp"},
    {BYTES("\x1b[3;5:2~"), "ctrl+delete", "ctrl+delete"},
    {BYTES("\x1b[3:3~"), NULL, NULL},
    {BYTES("\x1b[3;5:3~"), NULL, NULL},
    {BYTES("\x1b[99999999999~"), NULL, NULL},
    {BYTES("\x1b[3;~"), NULL, NULL},
    /* Kitty CSI u */
    {BYTES("\x1b[97u"), "a", "a"},
    {BYTES("\x1b[97;5u"), "ctrl+a", "ctrl+a"},
    {BYTES("\x1b[65;5u"), "ctrl+A", "ctrl+A"},
    {BYTES("\x1b[97;2u"), "shift+a", "shift+a"},
    {BYTES("\x1b[97;3u"), "alt+a", "alt+a"},
    {BYTES("\x1b[97;9u"), "super+a", "super+a"},
    {BYTES("\x1b[97;10u"), "shift+super+a", "shift+super+a"},
    {BYTES("\x1b[97;16u"), "shift+ctrl+alt+super+a", "shift+ctrl+alt+super+a"},
    {BYTES("\x1b[97;17u"), NULL, NULL},
    {BYTES("\x1b[97;65u"), "a", "a"},
    {BYTES("\x1b[97;69u"), "ctrl+a", "ctrl+a"},
    {BYTES("\x1b[97;197u"), "ctrl+a", "ctrl+a"}, /* both locks + ctrl */
    {BYTES("\x1b[97;5:1u"), "ctrl+a", "ctrl+a"},
    {BYTES("\x1b[97;5:2u"), "ctrl+a", "ctrl+a"},
    {BYTES("\x1b[97;5:3u"), NULL, NULL},
    {BYTES("\x1b[97;1:3u"), NULL, NULL},
    {BYTES("\x1b[97;:2u"), "a", "a"},
    {BYTES("\x1b[97;0u"), NULL, NULL},
    {BYTES("\x1b[13u"), "enter", "enter"},
    {BYTES("\x1b[27u"), "escape", "escape"},
    {BYTES("\x1b[9;2u"), "shift+tab", "shift+tab"},
    {BYTES("\x1b[127;3u"), "alt+backspace", "alt+backspace"},
    {BYTES("\x1b[32;5u"), "ctrl+space", "ctrl+space"},
    {BYTES("\x1b[57414u"), "enter", "enter"},
    {BYTES("\x1b[57414;5u"), "ctrl+enter", "ctrl+enter"},
    {BYTES("\x1b[57399u"), "0", "0"},
    {BYTES("\x1b[57409u"), ".", "."},
    {BYTES("\x1b[57400;5u"), "ctrl+end", "ctrl+end"},
    {BYTES("\x1b[57400;129u"), "1", "1"},
    {BYTES("\x1b[57404;5u"), "ctrl+clear", "ctrl+clear"},
    {BYTES("\x1b[57411u"), "*", "*"},
    {BYTES("\x1b[57412;3u"), "alt+-", "alt+-"},
    {BYTES("\x1b[57415u"), "=", "="},
    {BYTES("\x1b[57417u"), NULL, NULL},
    {BYTES("\x1b[1089::99;5u"), "ctrl+c", "ctrl+c"}, /* Cyrillic, base c */
    {BYTES("\x1b[1089::99u"), NULL, NULL},           /* text, not ctrl+c */
    {BYTES("\x1b[1089u"), NULL, NULL},
    {BYTES("\x1b[99:67u"), "c", "c"},
    {BYTES("\x1b[99:67:99;5u"), "ctrl+c", "ctrl+c"},
    {BYTES("\x1b[99::97;5u"), "ctrl+c", "ctrl+c"}, /* a letter keeps its name */
    {BYTES("\x1b[49::50;5u"), "ctrl+2", "ctrl+2"},   /* digits take the base */
    {BYTES("\x1b[97;;65u"), "A", "A"},                /* text field wins */
    {BYTES("\x1b[97;1;65:66u"), "a", "a"},            /* two texts: none */
    {BYTES("\x1b[97;1;10u"), "a", "a"},               /* control text */
    {BYTES("\x1b[0;;229u"), NULL, NULL},
    {BYTES("\x1b[97:u"), "a", "a"},
    {BYTES("\x1b[97::u"), NULL, NULL},
    {BYTES("\x1b[u"), NULL, NULL},
    {BYTES("\x1b[97;5ux"), NULL, NULL},
    {BYTES("\x1b[2147483648u"), NULL, NULL},
    {BYTES("\x1b[97;4294967296u"), NULL, NULL},
    {BYTES("\x1b[27;5u"), "ctrl+escape", "ctrl+escape"},
    /* xterm modifyOtherKeys */
    {BYTES("\x1b[27;5;99~"), "ctrl+c", "ctrl+c"},
    {BYTES("\x1b[27;5;99"), "ctrl+c", "ctrl+c"},
    {BYTES("\x1b[27;2;65~"), "shift+A", "shift+A"},
    {BYTES("\x1b[27;5;13~"), "ctrl+enter", "ctrl+enter"},
    {BYTES("\x1b[27;1;9~"), "tab", "tab"},
    {BYTES("\x1b[27;69;99~"), "ctrl+c", "ctrl+c"},
    {BYTES("\x1b[27;17;97~"), "a", "a"},
    {BYTES("\x1b[27;5;57399~"), "ctrl+insert", "ctrl+insert"},
    {BYTES("\x1b[27;5;1089~"), NULL, NULL},
    {BYTES("\x1b[27;0;99~"), NULL, NULL},
    {BYTES("\x1b[27;5;~"), NULL, NULL},
    /* ESC before a CSI/SS3 sequence: alt */
    {BYTES("\x1b\x1b[A"), "alt+up", "alt+up"},
    {BYTES("\x1b\x1bOB"), "alt+down", "alt+down"},
    {BYTES("\x1b\x1b[1;5A"), "alt+ctrl+up", "alt+ctrl+up"},
    {BYTES("\x1b\x1b[97;5u"), "alt+ctrl+a", "alt+ctrl+a"},
    {BYTES("\x1b\x1b["), NULL, NULL},
    {BYTES("\x1b\x1bX"), NULL, NULL},
    {BYTES("\x1b\x1b\x1b[A"), NULL, NULL},
    /* more than one key, or trailing garbage */
    {BYTES("\x1b[Ax"), NULL, NULL},
    {BYTES("ab"), NULL, NULL},
    {BYTES("a\x1b"), NULL, NULL},
    {BYTES("\x1b[A\x1b[B"), NULL, NULL},
    {BYTES("\x03\x03"), NULL, NULL},
};

TEST(keys_parse_vectors)
{
    size_t i;
    int bad = 0, m;

    for (i = 0; i < sizeof(keys_parse_vecs) / sizeof(keys_parse_vecs[0]); i++) {
        const struct keys_vec *v = &keys_parse_vecs[i];

        for (m = 0; m < 2; m++) {
            char buf[REIN_KEY_ID_MAX];
            const char *want = m ? v->on : v->off;
            int rc = rein_key_parse(v->in, v->len, m == 1, buf, sizeof(buf));

            if (want ? (rc != (int)strlen(want) || strcmp(buf, want) != 0)
                     : rc != 0) {
                test_print_bytes("input", v->in, v->len);
                fprintf(stderr, "  kitty=%d: rc %d \"%s\", want \"%s\"\n", m,
                        rc, rc > 0 ? buf : "", want ? want : "(none)");
                bad++;
            }
        }
    }
    ASSERT_INT(i, >=, 100);
    ASSERT_INT(bad, ==, 0);
}

TEST(keys_parse_buffer_sizes)
{
    char buf[REIN_KEY_ID_MAX];
    char exact[sizeof("shift+ctrl+up")];

    /* too small: an error, never a truncated id */
    ASSERT_INT(rein_key_parse("\x1b[1;6A", 6, false, buf, 5), ==, REIN_ETOOSMALL);
    ASSERT_INT(rein_key_parse("\x1b[1;6A", 6, false, exact, sizeof(exact) - 1),
               ==, REIN_ETOOSMALL);
    ASSERT_INT(rein_key_parse("a", 1, false, buf, 1), ==, REIN_ETOOSMALL);
    ASSERT_INT(rein_key_parse("a", 1, false, NULL, 0), ==, REIN_ETOOSMALL);
    /* exactly the id and its NUL */
    ASSERT_INT(rein_key_parse("\x1b[1;6A", 6, false, exact, sizeof(exact)), ==,
               (int)strlen("shift+ctrl+up"));
    ASSERT_STR(exact, "shift+ctrl+up");
    ASSERT_INT(rein_key_parse("a", 1, false, buf, 2), ==, 1);
    ASSERT_STR(buf, "a");
    /* not a key: 0 with an empty string, whatever the size */
    strcpy(buf, "junk");
    ASSERT_INT(rein_key_parse("\x1b[Ax", 4, false, buf, sizeof(buf)), ==, 0);
    ASSERT_STR(buf, "");
    ASSERT_INT(rein_key_parse("\x1b[Ax", 4, false, NULL, 0), ==, 0);
    ASSERT_INT(rein_key_parse(NULL, 3, false, buf, sizeof(buf)), ==, 0);
}

/* ----------------------------------------------------------- match table */

struct keys_mvec {
    const char *in;
    size_t len;
    const char *id;
    int off, on; /* expected with the Kitty flag off / on */
};

static const struct keys_mvec keys_match_vecs[] = {
    /* a named key's legacy byte is that key, never ctrl+<letter> */
    {BYTES("\r"), "enter", 1, 1},
    {BYTES("\r"), "return", 1, 1},
    {BYTES("\r"), "ctrl+m", 0, 0},
    {BYTES("\n"), "enter", 1, 1},
    {BYTES("\n"), "ctrl+j", 0, 0},
    {BYTES("\t"), "ctrl+i", 0, 0},
    {BYTES("\x08"), "backspace", 1, 1},
    {BYTES("\x08"), "ctrl+h", 0, 0},
    {BYTES("\x1b"), "esc", 1, 1},
    {BYTES("\x1b"), "ESC", 1, 1},
    {BYTES("\x1b"), "escape", 1, 1},
    {BYTES("\x1b"), "ctrl+[", 0, 0},
    {BYTES("\x1bOM"), "enter", 1, 1},
    {BYTES("\x1b[Z"), "shift+tab", 1, 1},
    /* ...while enhanced encodings tell them apart */
    {BYTES("\x1b[109;5u"), "ctrl+m", 1, 1},
    {BYTES("\x1b[109;5u"), "enter", 0, 0},
    {BYTES("\x1b[27;5;109~"), "ctrl+m", 1, 1},
    {BYTES("\x1b[27;5;91~"), "ctrl+[", 1, 1},
    /* the reference compares a modifyOtherKeys modifier as sent, locks
     * included, and never matches an unmodified key through it */
    {BYTES("\x1b[27;69;109~"), "ctrl+m", 0, 0},
    {BYTES("\x1b[27;1;9~"), "tab", 0, 0},
    {BYTES("\x1b[27;5;9~"), "ctrl+tab", 1, 1},
    {BYTES("\x1b[9;5u"), "ctrl+tab", 1, 1},
    /* case, aliases, modifier order and spacing */
    {BYTES("\x03"), "ctrl+c", 1, 1},
    {BYTES("\x03"), "CTRL+C", 1, 1},
    {BYTES("\x03"), "ctrl+C", 1, 1},
    {BYTES("\x03"), " Ctrl + c ", 1, 1},
    {BYTES("\x03"), "c", 0, 0},
    {BYTES("\x03"), "shift+ctrl+c", 0, 0},
    {BYTES("\x1b[1;6A"), "ctrl+shift+up", 1, 1},
    {BYTES("\x1b[1;6A"), "shift+ctrl+up", 1, 1},
    {BYTES("\x1b[1;6A"), "Shift+Ctrl+UP", 1, 1},
    {BYTES("\x1b[1;6A"), "ctrl+up", 0, 0},
    {BYTES("\x1b[127;11u"), "super+alt+backspace", 1, 1},
    {BYTES("\x1b[127;11u"), "alt+super+backspace", 1, 1},
    {BYTES("\x1b[127;11u"), "alt+backspace", 0, 0},
    {BYTES("\x1b[57413;5u"), "ctrl+plus", 1, 1},
    {BYTES("\x1b[57413;5u"), "ctrl++", 1, 1},
    {BYTES("+"), "+", 1, 1},
    {BYTES("+"), "plus", 1, 1},
    {BYTES("+"), "++", 1, 1},
    {BYTES("\x1b[5~"), "pageup", 1, 1},
    {BYTES("\x1b[5~"), "PAGEUP", 1, 1},
    /* letters: the id's case does not matter; the byte's does */
    {BYTES("A"), "shift+a", 1, 1},
    {BYTES("A"), "a", 0, 0},
    {BYTES("a"), "a", 1, 1},
    {BYTES("a"), "A", 1, 1},
    {BYTES("\x1b[97;5u"), "ctrl+A", 1, 1},
    /* the ESC B/F/SP aliases hold only with the Kitty flag off */
    {BYTES("\x1b" "B"), "alt+left", 1, 0},
    {BYTES("\x1b" "B"), "alt+shift+b", 1, 1},
    {BYTES("\x1b" "F"), "alt+right", 1, 0},
    {BYTES("\x1b "), "alt+space", 1, 0},
    {BYTES("\x1b[1;3D"), "alt+left", 1, 1},
    {BYTES("\x1b[1;5D"), "ctrl+left", 1, 1},
    {BYTES("\x1bOd"), "ctrl+left", 1, 1},
    {BYTES("\x1bx"), "alt+x", 1, 1},
    {BYTES("\x1bx"), "alt+up", 0, 0},
    /* release events never match; repeats do; locks are ignored */
    {BYTES("\x1b[97;5:3u"), "ctrl+a", 0, 0},
    {BYTES("\x1b[97;5:2u"), "ctrl+a", 1, 1},
    {BYTES("\x1b[97;197u"), "ctrl+a", 1, 1},
    {BYTES("\x1b[127;1:3u"), "backspace", 0, 0},
    /* base layout: non-Latin keys with a modifier only */
    {BYTES("\x1b[1089::99;5u"), "ctrl+c", 1, 1},
    {BYTES("\x1b[1089::99u"), "c", 0, 0},
    {BYTES("\x1b[99::97;5u"), "ctrl+a", 0, 0},
    {BYTES("\x1b[99::97;5u"), "ctrl+c", 1, 1},
    /* keypad */
    {BYTES("\x1b[57400u"), "1", 1, 1},
    {BYTES("\x1b[57400u"), "end", 0, 0},
    {BYTES("\x1b[57400;5u"), "ctrl+end", 1, 1},
    {BYTES("\x1b[57400;5u"), "ctrl+1", 0, 0},
    {BYTES("\x1b[57414u"), "enter", 1, 1},
    {BYTES("\x1b[57410u"), "/", 1, 1},
    /* ESC-prefixed CSI/SS3 is alt */
    {BYTES("\x1b\x1b[A"), "alt+up", 1, 1},
    {BYTES("\x1b\x1b[A"), "up", 0, 0},
    {BYTES("\x1b\x1b[1;5A"), "ctrl+alt+up", 1, 1},
    /* legacy control bytes */
    {BYTES("\0"), "ctrl+space", 1, 1},
    {BYTES("\0"), "ctrl+@", 1, 1},
    {BYTES("\x1f"), "ctrl+-", 1, 1},
    {BYTES("\x1f"), "ctrl+_", 1, 1},
    {BYTES("\x1d"), "ctrl+]", 1, 1},
    {BYTES("\x1b\x01"), "ctrl+alt+a", 1, 1},
    {BYTES("\x1b\r"), "ctrl+alt+m", 0, 0},
    {BYTES("\x1b\r"), "alt+enter", 1, 1},
    {BYTES("\x1b\x7f"), "alt+backspace", 1, 1},
    {BYTES("\x1b\t"), "alt+tab", 1, 1},
    /* F-keys and escape answer for themselves in every form (see keys.c
     * key_match_named: where rein corrects the reference) */
    {BYTES("\x1b[15;2~"), "shift+f5", 1, 1},
    {BYTES("\x1b[15;2~"), "shift+clear", 0, 0},
    {BYTES("\x1b[1;2E"), "shift+clear", 1, 1},
    {BYTES("\x1b[1;2E"), "shift+f5", 0, 0},
    {BYTES("\x1b[18;5~"), "ctrl+f7", 1, 1},
    {BYTES("\x1b[1;5F"), "ctrl+f6", 0, 0}, /* the reference said 1 */
    {BYTES("\x1b[11;1~"), "f1", 1, 1},
    {BYTES("\x1b[15~"), "F5", 1, 1},
    {BYTES("\x1b[27;3u"), "alt+escape", 1, 1},
    {BYTES("\x1b[27;3u"), "esc", 0, 0},
    {BYTES("\x1b[32;2u"), "shift+space", 1, 1},
    /* ids that name nothing */
    {BYTES("a"), "", 0, 0},
    {BYTES("a"), "ctrl+", 0, 0},
    {BYTES("a"), "shift", 0, 0},
    {BYTES("a"), "nosuchkey", 0, 0},
    {BYTES(""), "esc", 0, 0},
};

TEST(keys_matches_vectors)
{
    size_t i;
    int bad = 0, m;

    for (i = 0; i < sizeof(keys_match_vecs) / sizeof(keys_match_vecs[0]); i++) {
        const struct keys_mvec *v = &keys_match_vecs[i];

        for (m = 0; m < 2; m++) {
            bool want = (m ? v->on : v->off) != 0;
            bool got = rein_key_matches(v->in, v->len, v->id, m == 1);

            if (got != want) {
                test_print_bytes("input", v->in, v->len);
                fprintf(stderr, "  kitty=%d: matches(\"%s\") %d, want %d\n", m,
                        v->id, got, want);
                bad++;
            }
        }
    }
    ASSERT_INT(bad, ==, 0);
    ASSERT_FALSE(rein_key_matches("a", 1, NULL, false));
    ASSERT_FALSE(rein_key_matches(NULL, 1, "a", false));
}

/* ----------------------------------------------------------------- kitty */

TEST(keys_kitty_parse_fields)
{
    rein_kitty_key_t k;

    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[97:65:1092;6:2u"), &k), ==, 1);
    ASSERT_INT(k.codepoint, ==, 97);
    ASSERT_INT(k.shifted_key, ==, 65);
    ASSERT_INT(k.base_layout_key, ==, 1092);
    ASSERT_INT(k.modifier, ==, REIN_KITTY_SHIFT | REIN_KITTY_CTRL);
    ASSERT_INT(k.event, ==, REIN_KITTY_REPEAT);

    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[97u"), &k), ==, 1);
    ASSERT_INT(k.codepoint, ==, 97);
    ASSERT_INT(k.shifted_key, ==, 0);
    ASSERT_INT(k.base_layout_key, ==, 0);
    ASSERT_INT(k.modifier, ==, 0);
    ASSERT_INT(k.event, ==, REIN_KITTY_PRESS);

    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[99::99;5u"), &k), ==, 1);
    ASSERT_INT(k.shifted_key, ==, 0);
    ASSERT_INT(k.base_layout_key, ==, 99);

    /* lock bits are reported as sent; releases are reported, not refused */
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[97;133:3u"), &k), ==, 1);
    ASSERT_INT(k.modifier, ==, REIN_KITTY_NUM_LOCK | REIN_KITTY_CTRL);
    ASSERT_INT(k.event, ==, REIN_KITTY_RELEASE);

    /* keys without a codepoint: kitty's functional-key numbers */
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[1;5A"), &k), ==, 1);
    ASSERT_INT(k.codepoint, ==, KEY_KITTY_UP);
    ASSERT_INT(k.modifier, ==, REIN_KITTY_CTRL);
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[15;2~"), &k), ==, 1);
    ASSERT_INT(k.codepoint, ==, KEY_KITTY_F1 + 4);
    ASSERT_INT(k.modifier, ==, REIN_KITTY_SHIFT);
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[3~"), &k), ==, 1);
    ASSERT_INT(k.codepoint, ==, KEY_KITTY_DELETE);
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[1;3E"), &k), ==, 1);
    ASSERT_INT(k.codepoint, ==, KEY_KITTY_KP_BEGIN);

    /* not Kitty sequences */
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[A"), &k), ==, 0);
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[27;5;99~"), &k), ==, 0);
    ASSERT_INT(rein_kitty_parse(BYTES("abcd"), &k), ==, 0);
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[97;0u"), &k), ==, 0);
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[97;5u "), &k), ==, 0);
    ASSERT_INT(rein_kitty_parse(BYTES("\x1b[97u"), NULL), ==, 0);
}

TEST(keys_kitty_matches)
{
    ASSERT_TRUE(rein_kitty_matches(BYTES("\x1b[97;5u"), 97, REIN_KITTY_CTRL));
    ASSERT_TRUE(rein_kitty_matches(BYTES("\x1b[97;5u"), 97,
                                   REIN_KITTY_CTRL | REIN_KITTY_CAPS_LOCK));
    ASSERT_TRUE(rein_kitty_matches(BYTES("\x1b[97;69u"), 97, REIN_KITTY_CTRL));
    ASSERT_FALSE(rein_kitty_matches(BYTES("\x1b[97;5u"), 97, 0));
    ASSERT_FALSE(rein_kitty_matches(BYTES("\x1b[97;5u"), 98, REIN_KITTY_CTRL));
    ASSERT_TRUE(rein_kitty_matches(BYTES("\x1b[1089::99;5u"), 99, REIN_KITTY_CTRL));
    ASSERT_TRUE(rein_kitty_matches(BYTES("\x1b[1089::99;5u"), 1089, REIN_KITTY_CTRL));
    ASSERT_FALSE(rein_kitty_matches(BYTES("\x1b[1089::99u"), 99, 0));
    ASSERT_FALSE(rein_kitty_matches(BYTES("\x1b[99::97;5u"), 97, REIN_KITTY_CTRL));
    ASSERT_TRUE(rein_kitty_matches(BYTES("\x1b[1;5A"), KEY_KITTY_UP, REIN_KITTY_CTRL));
    ASSERT_TRUE(rein_kitty_matches(BYTES("\x1b[97;5:3u"), 97, REIN_KITTY_CTRL));
    ASSERT_FALSE(rein_kitty_matches(BYTES("\x1b[A"), KEY_KITTY_UP, 0));
    ASSERT_FALSE(rein_kitty_matches(BYTES("a"), 97, 0));
}

TEST(keys_legacy_matches)
{
    ASSERT_TRUE(rein_legacy_matches(BYTES("\x1bOA"), "up"));
    ASSERT_TRUE(rein_legacy_matches(BYTES("\x1b[A"), "up"));
    ASSERT_TRUE(rein_legacy_matches(BYTES("\x1bOd"), "ctrl+left"));
    ASSERT_TRUE(rein_legacy_matches(BYTES("\x1b[5~"), "pageUp"));
    ASSERT_TRUE(rein_legacy_matches(BYTES("\x1b[5~"), "pageup"));
    ASSERT_TRUE(rein_legacy_matches(BYTES("\x1b[[A"), "f1"));
    ASSERT_TRUE(rein_legacy_matches(BYTES("\x1b[2$"), "shift+insert"));
    ASSERT_FALSE(rein_legacy_matches(BYTES("\x1b[5~"), "pageDown"));
    ASSERT_FALSE(rein_legacy_matches(BYTES("\x1b[1;5A"), "ctrl+up"));
    ASSERT_FALSE(rein_legacy_matches(BYTES("\x1b[A "), "up"));
    ASSERT_FALSE(rein_legacy_matches(BYTES("\r"), "enter"));
    ASSERT_FALSE(rein_legacy_matches(BYTES("\x1bOA"), NULL));
}

/* -------------------------------------------------------------- encoding */

struct keys_evec {
    const char *id;
    const char *out;
    size_t len;
};

static const struct keys_evec keys_encode_vecs[] = {
    /* the issue's examples */
    {"ctrl+c", BYTES("\x03")},
    {"up", BYTES("\x1b[A")},
    {"enter", BYTES("\r")},
    {"alt+x", BYTES("\x1bx")},
    {"f5", BYTES("\x1b[15~")},
    {"shift+up", BYTES("\x1b[1;2A")},
    {"ctrl+left", BYTES("\x1b[1;5D")},
    {"pageUp", BYTES("\x1b[5~")},
    {"tab", BYTES("\t")},
    {"backspace", BYTES("\x7f")},
    {"escape", BYTES("\x1b")},
    {"esc", BYTES("\x1b")},
    {"space", BYTES(" ")},
    /* every named key, unmodified */
    {"return", BYTES("\r")},
    {"down", BYTES("\x1b[B")},
    {"right", BYTES("\x1b[C")},
    {"left", BYTES("\x1b[D")},
    {"home", BYTES("\x1b[H")},
    {"end", BYTES("\x1b[F")},
    {"clear", BYTES("\x1b[E")},
    {"insert", BYTES("\x1b[2~")},
    {"delete", BYTES("\x1b[3~")},
    {"pageDown", BYTES("\x1b[6~")},
    {"pageup", BYTES("\x1b[5~")},
    {"f1", BYTES("\x1bOP")},
    {"f2", BYTES("\x1bOQ")},
    {"f3", BYTES("\x1bOR")},
    {"f4", BYTES("\x1bOS")},
    {"f6", BYTES("\x1b[17~")},
    {"f7", BYTES("\x1b[18~")},
    {"f8", BYTES("\x1b[19~")},
    {"f9", BYTES("\x1b[20~")},
    {"f10", BYTES("\x1b[21~")},
    {"f11", BYTES("\x1b[23~")},
    {"F12", BYTES("\x1b[24~")},
    /* modified named keys */
    {"shift+tab", BYTES("\x1b[Z")},
    {"alt+tab", BYTES("\x1b\t")},
    {"ctrl+tab", BYTES("\x1b[9;5u")},
    {"alt+enter", BYTES("\x1b\r")},
    {"shift+enter", BYTES("\x1b[13;2u")},
    {"ctrl+space", BYTES("\0")},
    {"alt+space", BYTES("\x1b ")},
    {"shift+space", BYTES("\x1b[32;2u")},
    {"alt+backspace", BYTES("\x1b\x7f")},
    {"ctrl+backspace", BYTES("\x1b[127;5u")},
    {"alt+escape", BYTES("\x1b[27;3u")},
    {"alt+left", BYTES("\x1b[1;3D")},
    {"ctrl+shift+up", BYTES("\x1b[1;6A")},
    {"ctrl+home", BYTES("\x1b[1;5H")},
    {"shift+end", BYTES("\x1b[1;2F")},
    {"ctrl+clear", BYTES("\x1b[1;5E")},
    {"ctrl+delete", BYTES("\x1b[3;5~")},
    {"shift+insert", BYTES("\x1b[2;2~")},
    {"shift+pageDown", BYTES("\x1b[6;2~")},
    {"alt+f1", BYTES("\x1b[1;3P")},
    {"ctrl+f5", BYTES("\x1b[15;5~")},
    {"shift+ctrl+alt+super+f12", BYTES("\x1b[24;16~")},
    {"super+up", BYTES("\x1b[1;9A")},
    /* printable characters */
    {"a", BYTES("a")},
    {"A", BYTES("A")},
    {"~", BYTES("~")},
    {"+", BYTES("+")},
    {"plus", BYTES("+")},
    {"ctrl+a", BYTES("\x01")},
    {"ctrl+A", BYTES("\x01")},
    {"ctrl+z", BYTES("\x1a")},
    {"ctrl+alt+a", BYTES("\x1b\x01")},
    {"alt+shift+a", BYTES("\x1b" "A")},
    {"alt+X", BYTES("\x1bx")},
    {"alt+.", BYTES("\x1b.")},
    {"shift+a", BYTES("A")},
    {"ctrl+shift+a", BYTES("\x1b[97;6u")},
    {"super+a", BYTES("\x1b[97;9u")},
    {"ctrl+[", BYTES("\x1b")},
    {"ctrl+]", BYTES("\x1d")},
    {"ctrl+-", BYTES("\x1f")},
    {"ctrl+@", BYTES("\0")},
    {"ctrl+/", BYTES("\x1b[47;5u")},
    {"ctrl+alt+]", BYTES("\x1b[93;7u")},
    {"shift+1", BYTES("\x1b[49;2u")},
    {"ctrl++", BYTES("\x1b[43;5u")},
    {"  Ctrl + C ", BYTES("\x03")},
};

TEST(keys_encode_vectors)
{
    char buf[KEY_ENCODE_MAX];
    size_t i;
    int bad = 0;

    for (i = 0; i < sizeof(keys_encode_vecs) / sizeof(keys_encode_vecs[0]); i++) {
        const struct keys_evec *v = &keys_encode_vecs[i];
        int rc = rein_key_encode(v->id, buf, sizeof(buf));

        if (rc != (int)v->len || memcmp(buf, v->out, v->len) != 0) {
            fprintf(stderr, "encode(\"%s\") rc %d\n", v->id, rc);
            if (rc > 0)
                test_print_bytes("  got", buf, (size_t)rc);
            test_print_bytes("  want", v->out, v->len);
            bad++;
        }
    }
    ASSERT_INT(bad, ==, 0);
}

TEST(keys_encode_errors_and_sizes)
{
    char buf[KEY_ENCODE_MAX];
    char exact[5];

    ASSERT_INT(rein_key_encode("", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("   ", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("ctrl+", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("shift", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("nosuchkey", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("f13", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("f0", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("\xc3\xa9", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode(NULL, buf, sizeof(buf)), ==, REIN_EKEY);
    /* Modifiers then exactly one key: a second key word or a word that is
     * no modifier would otherwise send other bytes (ctrl+d: an EOF). */
    ASSERT_INT(rein_key_encode("ctrl+c+d", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("hyper+q", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("meta+q", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("q+ctrl", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("a++", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("up+down", buf, sizeof(buf)), ==, REIN_EKEY);
    ASSERT_INT(rein_key_encode("ctrl+alt+c", buf, sizeof(buf)), ==, 2);
    ASSERT_MEM(buf, 2, "\x1b\x03", 2);
    ASSERT_INT(rein_key_encode("Shift + Ctrl + Up", buf, sizeof(buf)), ==, 6);
    ASSERT_MEM(buf, 6, "\x1b[1;6A", 6);
    ASSERT_INT(rein_key_encode("ctrl++", buf, sizeof(buf)), >, 0);
    ASSERT_INT(rein_key_encode("+", buf, sizeof(buf)), ==, 1);
    /* Matching stays lenient, as the reference: the last key word wins. */
    ASSERT_TRUE(rein_key_matches("\x04", 1, "ctrl+c+d", false));
    /* "f12" is ESC [ 2 4 ~: five bytes, exactly */
    ASSERT_INT(rein_key_encode("f12", exact, 4), ==, REIN_ETOOSMALL);
    ASSERT_INT(rein_key_encode("f12", exact, sizeof(exact)), ==, 5);
    ASSERT_MEM(exact, 5, "\x1b[24~", 5);
    ASSERT_INT(rein_key_encode("a", NULL, 0), ==, REIN_ETOOSMALL);
    ASSERT_INT(rein_key_encode("nosuchkey", NULL, 0), ==, REIN_EKEY);
}

/* ------------------------------------------------------------ round trip */

static const char *const keys_rt_named[] = {
    "escape", "tab",  "enter",  "space",    "backspace", "insert", "delete",
    "home",   "end",  "pageUp", "pageDown", "clear",     "up",     "down",
    "left",   "right", "f1",    "f2",       "f3",        "f4",     "f5",
    "f6",     "f7",   "f8",     "f9",       "f10",       "f11",    "f12",
};

static const char *const keys_rt_mods[] = {
    "",           "shift+",      "alt+",           "ctrl+",
    "super+",     "shift+ctrl+", "ctrl+alt+",      "alt+shift+",
    "shift+alt+super+", "ctrl+alt+shift+super+",
};

/*
 * Where the reference's own rules keep an encoded key from matching its id,
 * because the bytes a terminal really sends are ambiguous:
 *   - ctrl+h/i/j/m/[ are BS, TAB, LF, CR, ESC — the named keys;
 *   - ctrl+alt+h/i/j/m are ESC + those bytes — alt+backspace and friends;
 *   - alt+<digit or symbol> is ESC + it, which the reference does not name.
 */
static bool keys_rt_exception(const char *mods, char c)
{
    bool letter = c >= 'a' && c <= 'z';

    if (strcmp(mods, "ctrl+") == 0 && strchr("hijm[", c))
        return true;
    if (strcmp(mods, "ctrl+alt+") == 0 && strchr("hijm", c))
        return true;
    return strcmp(mods, "alt+") == 0 && !letter;
}

static int keys_rt_check(const char *id, bool kitty)
{
    char enc[KEY_ENCODE_MAX], parsed[REIN_KEY_ID_MAX];
    int n = rein_key_encode(id, enc, sizeof(enc));

    if (n <= 0) {
        fprintf(stderr, "round trip: encode(\"%s\") = %d\n", id, n);
        return 1;
    }
    if (rein_key_parse(enc, (size_t)n, kitty, parsed, sizeof(parsed)) <= 0 ||
        !rein_key_matches(enc, (size_t)n, id, kitty)) {
        test_print_bytes("round trip bytes", enc, (size_t)n);
        fprintf(stderr, "  id \"%s\" kitty=%d: does not come back\n", id, kitty);
        return 1;
    }
    return 0;
}

TEST(keys_round_trip_encode_parse_match)
{
    char id[REIN_KEY_ID_MAX];
    size_t i, j;
    int bad = 0, checked = 0, c;

    for (i = 0; i < sizeof(keys_rt_mods) / sizeof(keys_rt_mods[0]); i++) {
        const char *mods = keys_rt_mods[i];

        for (j = 0; j < sizeof(keys_rt_named) / sizeof(keys_rt_named[0]); j++) {
            snprintf(id, sizeof(id), "%s%s", mods, keys_rt_named[j]);
            bad += keys_rt_check(id, false);
            /* ESC SP is alt+space only without the Kitty flag */
            if (strcmp(id, "alt+space") != 0)
                bad += keys_rt_check(id, true);
            checked++;
        }
        for (c = '!'; c <= '~'; c++) {
            if ((c >= 'A' && c <= 'Z') || keys_rt_exception(mods, (char)c))
                continue;
            snprintf(id, sizeof(id), "%s%c", mods, c);
            bad += keys_rt_check(id, false) + keys_rt_check(id, true);
            checked++;
        }
    }
    fprintf(stderr, "round trip: %d ids\n", checked);
    ASSERT_INT(checked, >, 500);
    ASSERT_INT(bad, ==, 0);
}

/* Spellings of other tools, for the MCP `keys` argument: each is refused
 * as an id, respelled, and then sends exactly the bytes of rein's own id. */
static const struct {
    const char *spelled, *id;
} keys_respell_vectors[] = {
    {"C-c", "ctrl+c"},
    {"M-x", "alt+x"},
    {"S-Tab", "shift+Tab"},
    {"C-M-Left", "ctrl+alt+Left"},
    {"C--", "ctrl+-"},
    {"ctrl-c", "ctrl+c"},
    {"Ctrl-Shift-Up", "shift+ctrl+Up"},
    {"control-x", "ctrl+x"},
    {"Control+d", "ctrl+d"},
    {"meta-b", "alt+b"},
    {"super-l", "super+l"},
    {"^C", "ctrl+C"},
    {"^[", "ctrl+["},
    {" ^D ", "ctrl+D"},
    {"PgUp", "pageUp"},
    {"PPage", "pageUp"},
    {"pgdn", "pageDown"},
    {"NPage", "pageDown"},
    {"C-NPage", "ctrl+pageDown"},
    {"Del", "delete"},
    {"DC", "delete"},
    {"IC", "insert"},
    {"BSpace", "backspace"},
    {"M-BSpace", "alt+backspace"},
    {"BTab", "shift+tab"},
    {"ArrowUp", "up"},
    {"spc", "space"},
};

TEST(keys_respell_other_tools_spellings)
{
    char id[KEY_RESPELL_MAX + 32], a[KEY_ENCODE_MAX], b[KEY_ENCODE_MAX];
    size_t i;

    for (i = 0; i < sizeof(keys_respell_vectors) / sizeof(keys_respell_vectors[0]);
         i++) {
        const char *sp = keys_respell_vectors[i].spelled;
        const char *want = keys_respell_vectors[i].id;
        ASSERT_INT(rein_key_encode(sp, a, sizeof(a)), ==, REIN_EKEY);
        int n = keys_respell(sp, id, sizeof(id));
        ASSERT_INT(n, ==, (int)strlen(want));
        ASSERT_STR(id, want);
        int na = rein_key_encode(id, a, sizeof(a));
        int nb = rein_key_encode(want, b, sizeof(b));
        ASSERT_INT(na, >, 0);
        ASSERT_MEM(a, (size_t)na, b, (size_t)nb);
    }
    /* Nothing to respell: 0, so a caller does not retry in vain. */
    const char *same[] = {"ctrl+c", "hyper+q", "", "   ", "C-", "^", "^CC",
                          "cuddle", NULL};
    for (i = 0; same[i]; i++)
        ASSERT_INT(keys_respell(same[i], id, sizeof(id)), ==, 0);
    ASSERT_INT(keys_respell(NULL, id, sizeof(id)), ==, 0);
    /* Respelled but still no key: rein_key_encode says so. */
    ASSERT_INT(keys_respell("C-cuddle", id, sizeof(id)), ==, 11);
    ASSERT_INT(rein_key_encode(id, a, sizeof(a)), ==, REIN_EKEY);
    /* The buffer's edge: "ctrl+c" is 6 bytes and its NUL. */
    ASSERT_INT(keys_respell("C-c", id, 7), ==, 6);
    ASSERT_INT(keys_respell("C-c", id, 6), ==, REIN_ETOOSMALL);
    /* The word's edge: KEY_RESPELL_MAX - 1 bytes are read, no more. */
    char longid[KEY_RESPELL_MAX + 8];
    memcpy(longid, "C-", 2);
    memset(longid + 2, 'x', KEY_RESPELL_MAX - 1);
    longid[2 + KEY_RESPELL_MAX - 1] = '\0';
    ASSERT_INT(keys_respell(longid, id, sizeof(id)), ==,
               (int)strlen("ctrl+") + KEY_RESPELL_MAX - 1);
    memset(longid + 2, 'x', KEY_RESPELL_MAX);
    longid[2 + KEY_RESPELL_MAX] = '\0';
    ASSERT_INT(keys_respell(longid, id, sizeof(id)), ==, 0);
}
