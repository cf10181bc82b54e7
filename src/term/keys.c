/*
 * keys.c — terminal input bytes to key ids ("ctrl+c", "shift+up", "f5") and
 * key ids back to the bytes a terminal sends.
 *
 * An agent drives interactive programs by name ("press ctrl+c", "press up"),
 * and rein must both read keys the way a terminal writes them and write them
 * the way a program expects them.  Terminals disagree, so the parser layers
 * every encoding in use, most specific last:
 *
 *   - single bytes: control characters, DEL/BS, printable ASCII;
 *   - ESC + one byte: the Meta/Alt convention (ESC x = alt+x);
 *   - the legacy table: SS3 and CSI sequences of xterm, rxvt, the Linux
 *     console (ESC O A, ESC [ 5 ~, ESC [ 7 $, ESC [ [ A ...);
 *   - xterm modifyOtherKeys: CSI 27 ; mod ; code ~;
 *   - the Kitty keyboard protocol: CSI code:shifted:base ; mod:event ; text u,
 *     CSI n ; mod ~ and CSI 1 ; mod <letter>;
 *   - ESC in front of a CSI/SS3 sequence: that key with alt.
 *
 * The ids and the matching rules follow oh-my-pi's natives key parser
 * (parseKey / matchesKey), whose answers for a corpus of inputs rein is held
 * to.  Where that parser's answer is a plain slip that no caller could want
 * (modified F-keys compared against the wrong key; F-keys and escape in
 * their CSI forms never matching their own ids) rein answers what the key
 * is; see key_match_named().  Everything is pure, allocation-free and bounded
 * by the input length: these functions see untrusted bytes from a PTY.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rein.h"
#include "term/keys.h"

#define KEY_ESC 0x1b
#define KEY_DEL 0x7f

/* Modifier bits, as in the Kitty protocol (the wire value is 1 + bits). */
#define KEY_MOD_SHIFT REIN_KITTY_SHIFT
#define KEY_MOD_ALT REIN_KITTY_ALT
#define KEY_MOD_CTRL REIN_KITTY_CTRL
#define KEY_MOD_SUPER REIN_KITTY_SUPER
/* The modifiers an id can spell; hyper and meta have no name. */
#define KEY_MODS_NAMED (KEY_MOD_SHIFT | KEY_MOD_ALT | KEY_MOD_CTRL | KEY_MOD_SUPER)
/* Caps Lock and Num Lock are state, not part of the key pressed. */
#define KEY_MODS_LOCK (REIN_KITTY_CAPS_LOCK | REIN_KITTY_NUM_LOCK)

/* The Kitty event type that parse and match refuse: a key going up. */
#define KEY_EVENT_RELEASE 3u
/* The smallest Kitty CSI sequence: ESC [ <digit> <final>. */
#define KEY_KITTY_MIN_LEN 4
/* The smallest modifyOtherKeys sequence: ESC [ 2 7 ; m ; c. */
#define KEY_MOK_MIN_LEN 7
/* What the CSI forms start with; lengths via KEY_PREFIX_LEN. */
#define KEY_CSI_PREFIX "\033["
#define KEY_CSI1_PREFIX "\033[1;"
#define KEY_MOK_PREFIX "\033[27;"
#define KEY_PREFIX_LEN(p) (sizeof(p) - 1)
/* Control bytes 1..26 are Ctrl+A..Ctrl+Z. */
#define KEY_CTRL_A 1
#define KEY_CTRL_Z 26
/* The first codepoint a Kitty text field may carry (below: controls). */
#define KEY_TEXT_MIN 32
#define KEY_UNICODE_MAX 0x10ffffu
#define KEY_SURROGATE_LO 0xd800u
#define KEY_SURROGATE_HI 0xdfffu
/* Room for any id this file builds ("alt+shift+ctrl+alt+super+pageDown"). */
#define KEY_ID_CAP REIN_KEY_ID_MAX

/*
 * Internal key codes.  A key with a Unicode codepoint is that codepoint
 * (0..INT32_MAX, the range a CSI-u sequence may carry); a key without one is
 * a negative code, so no CSI-u number can ever be mistaken for an arrow.
 * The public Kitty functions translate these to kitty's PUA codepoints.
 */
enum key_code {
    KEY_UP = -1,
    KEY_DOWN = -2,
    KEY_RIGHT = -3,
    KEY_LEFT = -4,
    KEY_DELETE = -10,
    KEY_INSERT = -11,
    KEY_PAGE_UP = -12,
    KEY_PAGE_DOWN = -13,
    KEY_HOME = -14,
    KEY_END = -15,
    KEY_CLEAR = -16,
    KEY_F1 = -20,
    KEY_F2 = -21,
    KEY_F3 = -22,
    KEY_F4 = -23,
    KEY_F5 = -24,
    KEY_F6 = -25,
    KEY_F7 = -26,
    KEY_F8 = -27,
    KEY_F9 = -28,
    KEY_F10 = -29,
    KEY_F11 = -30,
    KEY_F12 = -31,
    KEY_NONE = INT32_MIN, /* "no such key": matches nothing */
};

#define KEY_CP_TAB 9
#define KEY_CP_ENTER 13
#define KEY_CP_ESCAPE 27
#define KEY_CP_SPACE 32
#define KEY_CP_BACKSPACE 127
#define KEY_CP_KP_ENTER ((int32_t)KEY_KITTY_KP_ENTER)

/* A byte string with its length, for tables that hold NUL bytes. */
#define KEY_SEQ(s) s, sizeof(s) - 1

/* ------------------------------------------------------------------ tables */

/*
 * Keys without a codepoint: their id, how kitty numbers them, and how they
 * are written.  Modified, a key with a CSI final letter is CSI 1;mod <final>,
 * any other CSI <tilde>;mod ~ (xterm's scheme, which every decoder reads).
 */
struct key_func {
    const char *name;
    int32_t code;
    uint32_t kitty;
    char csi_final; /* 0: the tilde form */
    unsigned tilde;
    const char *plain; /* unmodified */
};

static const struct key_func key_funcs[] = {
    {"up", KEY_UP, KEY_KITTY_UP, 'A', 0, "\033[A"},
    {"down", KEY_DOWN, KEY_KITTY_DOWN, 'B', 0, "\033[B"},
    {"right", KEY_RIGHT, KEY_KITTY_RIGHT, 'C', 0, "\033[C"},
    {"left", KEY_LEFT, KEY_KITTY_LEFT, 'D', 0, "\033[D"},
    {"clear", KEY_CLEAR, KEY_KITTY_KP_BEGIN, 'E', 0, "\033[E"},
    {"end", KEY_END, KEY_KITTY_END, 'F', 0, "\033[F"},
    {"home", KEY_HOME, KEY_KITTY_HOME, 'H', 0, "\033[H"},
    {"insert", KEY_INSERT, KEY_KITTY_INSERT, 0, 2, "\033[2~"},
    {"delete", KEY_DELETE, KEY_KITTY_DELETE, 0, 3, "\033[3~"},
    {"pageUp", KEY_PAGE_UP, KEY_KITTY_PAGE_UP, 0, 5, "\033[5~"},
    {"pageDown", KEY_PAGE_DOWN, KEY_KITTY_PAGE_DOWN, 0, 6, "\033[6~"},
    {"f1", KEY_F1, KEY_KITTY_F1 + 0, 'P', 0, "\033OP"},
    {"f2", KEY_F2, KEY_KITTY_F1 + 1, 'Q', 0, "\033OQ"},
    {"f3", KEY_F3, KEY_KITTY_F1 + 2, 'R', 0, "\033OR"},
    {"f4", KEY_F4, KEY_KITTY_F1 + 3, 'S', 0, "\033OS"},
    {"f5", KEY_F5, KEY_KITTY_F1 + 4, 0, 15, "\033[15~"},
    {"f6", KEY_F6, KEY_KITTY_F1 + 5, 0, 17, "\033[17~"},
    {"f7", KEY_F7, KEY_KITTY_F1 + 6, 0, 18, "\033[18~"},
    {"f8", KEY_F8, KEY_KITTY_F1 + 7, 0, 19, "\033[19~"},
    {"f9", KEY_F9, KEY_KITTY_F1 + 8, 0, 20, "\033[20~"},
    {"f10", KEY_F10, KEY_KITTY_F1 + 9, 0, 21, "\033[21~"},
    {"f11", KEY_F11, KEY_KITTY_F1 + 10, 0, 23, "\033[23~"},
    {"f12", KEY_F12, KEY_KITTY_F1 + 11, 0, 24, "\033[24~"},
};

/* CSI <n> [; mod] ~ : the numbers terminals use, with both home/end pairs
 * (1/4 from the VT220 editing block, 7/8 from rxvt). */
static const struct key_tilde {
    unsigned num;
    int32_t code;
} key_tildes[] = {
    {1, KEY_HOME},   {2, KEY_INSERT},    {3, KEY_DELETE}, {4, KEY_END},
    {5, KEY_PAGE_UP}, {6, KEY_PAGE_DOWN}, {7, KEY_HOME},   {8, KEY_END},
    {11, KEY_F1},    {12, KEY_F2},       {13, KEY_F3},    {14, KEY_F4},
    {15, KEY_F5},    {17, KEY_F6},       {18, KEY_F7},    {19, KEY_F8},
    {20, KEY_F9},    {21, KEY_F10},      {23, KEY_F11},   {24, KEY_F12},
};

/* Codepoints with a name of their own.  Keypad Enter is Enter. */
static const struct key_cpname {
    int32_t code;
    const char *name;
} key_cpnames[] = {
    {KEY_CP_ESCAPE, "escape"},       {KEY_CP_TAB, "tab"},
    {KEY_CP_ENTER, "enter"},         {KEY_CP_KP_ENTER, "enter"},
    {KEY_CP_SPACE, "space"},         {KEY_CP_BACKSPACE, "backspace"},
};

/*
 * Kitty's keypad digits: unmodified they are the digit they type; with a
 * modifier held they are the navigation key printed on them (Ctrl+KP_1 is
 * ctrl+end), which is what an application binds.
 */
static const struct key_keypad {
    int32_t code;
    int32_t nav;
    char text;
} key_keypads[] = {
    {(int32_t)KEY_KITTY_KP_0 + 0, KEY_INSERT, '0'},
    {(int32_t)KEY_KITTY_KP_0 + 1, KEY_END, '1'},
    {(int32_t)KEY_KITTY_KP_0 + 2, KEY_DOWN, '2'},
    {(int32_t)KEY_KITTY_KP_0 + 3, KEY_PAGE_DOWN, '3'},
    {(int32_t)KEY_KITTY_KP_0 + 4, KEY_LEFT, '4'},
    {(int32_t)KEY_KITTY_KP_0 + 5, KEY_CLEAR, '5'},
    {(int32_t)KEY_KITTY_KP_0 + 6, KEY_RIGHT, '6'},
    {(int32_t)KEY_KITTY_KP_0 + 7, KEY_HOME, '7'},
    {(int32_t)KEY_KITTY_KP_0 + 8, KEY_UP, '8'},
    {(int32_t)KEY_KITTY_KP_0 + 9, KEY_PAGE_UP, '9'},
    {(int32_t)KEY_KITTY_KP_DECIMAL, KEY_DELETE, '.'},
};

/* Keypad operators always mean the character they type. */
static const struct key_kpop {
    int32_t code;
    char text;
} key_kpops[] = {
    {(int32_t)KEY_KITTY_KP_DECIMAL + 1, '/'}, /* KP_DIVIDE */
    {(int32_t)KEY_KITTY_KP_DECIMAL + 2, '*'}, /* KP_MULTIPLY */
    {(int32_t)KEY_KITTY_KP_DECIMAL + 3, '-'}, /* KP_SUBTRACT */
    {(int32_t)KEY_KITTY_KP_DECIMAL + 4, '+'}, /* KP_ADD */
    {(int32_t)KEY_KITTY_KP_ENTER + 1, '='},   /* KP_EQUAL */
};

/* The legacy escape sequences of xterm, rxvt and the Linux console. */
static const struct key_legacy {
    const char *seq;
    size_t len;
    uint32_t mods;
    const char *name;
} key_legacies[] = {
    {KEY_SEQ("\033OA"), 0, "up"},
    {KEY_SEQ("\033OB"), 0, "down"},
    {KEY_SEQ("\033OC"), 0, "right"},
    {KEY_SEQ("\033OD"), 0, "left"},
    {KEY_SEQ("\033[A"), 0, "up"},
    {KEY_SEQ("\033[B"), 0, "down"},
    {KEY_SEQ("\033[C"), 0, "right"},
    {KEY_SEQ("\033[D"), 0, "left"},
    {KEY_SEQ("\033OH"), 0, "home"},
    {KEY_SEQ("\033OF"), 0, "end"},
    {KEY_SEQ("\033[H"), 0, "home"},
    {KEY_SEQ("\033[F"), 0, "end"},
    {KEY_SEQ("\033[1~"), 0, "home"},
    {KEY_SEQ("\033[7~"), 0, "home"},
    {KEY_SEQ("\033[4~"), 0, "end"},
    {KEY_SEQ("\033[8~"), 0, "end"},
    {KEY_SEQ("\033[E"), 0, "clear"},
    {KEY_SEQ("\033OE"), 0, "clear"},
    {KEY_SEQ("\033Oe"), KEY_MOD_CTRL, "clear"},
    {KEY_SEQ("\033[e"), KEY_MOD_SHIFT, "clear"},
    {KEY_SEQ("\033[2~"), 0, "insert"},
    {KEY_SEQ("\033[2$"), KEY_MOD_SHIFT, "insert"},
    {KEY_SEQ("\033[2^"), KEY_MOD_CTRL, "insert"},
    {KEY_SEQ("\033[3~"), 0, "delete"},
    {KEY_SEQ("\033[3$"), KEY_MOD_SHIFT, "delete"},
    {KEY_SEQ("\033[3^"), KEY_MOD_CTRL, "delete"},
    {KEY_SEQ("\033[5~"), 0, "pageUp"},
    {KEY_SEQ("\033[6~"), 0, "pageDown"},
    {KEY_SEQ("\033[[5~"), 0, "pageUp"},
    {KEY_SEQ("\033[[6~"), 0, "pageDown"},
    {KEY_SEQ("\033[a"), KEY_MOD_SHIFT, "up"},
    {KEY_SEQ("\033[b"), KEY_MOD_SHIFT, "down"},
    {KEY_SEQ("\033[c"), KEY_MOD_SHIFT, "right"},
    {KEY_SEQ("\033[d"), KEY_MOD_SHIFT, "left"},
    {KEY_SEQ("\033Oa"), KEY_MOD_CTRL, "up"},
    {KEY_SEQ("\033Ob"), KEY_MOD_CTRL, "down"},
    {KEY_SEQ("\033Oc"), KEY_MOD_CTRL, "right"},
    {KEY_SEQ("\033Od"), KEY_MOD_CTRL, "left"},
    {KEY_SEQ("\033[5$"), KEY_MOD_SHIFT, "pageUp"},
    {KEY_SEQ("\033[6$"), KEY_MOD_SHIFT, "pageDown"},
    {KEY_SEQ("\033[7$"), KEY_MOD_SHIFT, "home"},
    {KEY_SEQ("\033[8$"), KEY_MOD_SHIFT, "end"},
    {KEY_SEQ("\033[5^"), KEY_MOD_CTRL, "pageUp"},
    {KEY_SEQ("\033[6^"), KEY_MOD_CTRL, "pageDown"},
    {KEY_SEQ("\033[7^"), KEY_MOD_CTRL, "home"},
    {KEY_SEQ("\033[8^"), KEY_MOD_CTRL, "end"},
    {KEY_SEQ("\033OP"), 0, "f1"},
    {KEY_SEQ("\033OQ"), 0, "f2"},
    {KEY_SEQ("\033OR"), 0, "f3"},
    {KEY_SEQ("\033OS"), 0, "f4"},
    {KEY_SEQ("\033[11~"), 0, "f1"},
    {KEY_SEQ("\033[12~"), 0, "f2"},
    {KEY_SEQ("\033[13~"), 0, "f3"},
    {KEY_SEQ("\033[14~"), 0, "f4"},
    {KEY_SEQ("\033[[A"), 0, "f1"},
    {KEY_SEQ("\033[[B"), 0, "f2"},
    {KEY_SEQ("\033[[C"), 0, "f3"},
    {KEY_SEQ("\033[[D"), 0, "f4"},
    {KEY_SEQ("\033[[E"), 0, "f5"},
    {KEY_SEQ("\033[15~"), 0, "f5"},
    {KEY_SEQ("\033[17~"), 0, "f6"},
    {KEY_SEQ("\033[18~"), 0, "f7"},
    {KEY_SEQ("\033[19~"), 0, "f8"},
    {KEY_SEQ("\033[20~"), 0, "f9"},
    {KEY_SEQ("\033[21~"), 0, "f10"},
    {KEY_SEQ("\033[23~"), 0, "f11"},
    {KEY_SEQ("\033[24~"), 0, "f12"},
};

/* Sequences tried last, after the ESC-prefix rule: xterm's back-tab and
 * keypad Enter in application mode.  Not legacy-table entries, so
 * rein_legacy_matches does not claim them. */
static const struct key_fixed {
    const char *seq;
    size_t len;
    const char *id;
} key_fixeds[] = {
    {KEY_SEQ("\033[Z"), "shift+tab"},
    {KEY_SEQ("\033OM"), "enter"},
};

/* Single bytes with a name; other controls 1..26 are ctrl+<letter>. */
static const struct key_byte {
    unsigned char byte;
    const char *id;
} key_bytes[] = {
    {KEY_ESC, "escape"}, {'\t', "tab"},         {'\r', "enter"},
    {'\n', "enter"},     {0x00, "ctrl+space"},  {' ', "space"},
    {KEY_DEL, "backspace"}, {0x08, "backspace"}, {0x1c, "ctrl+\\"},
    {0x1d, "ctrl+]"},    {0x1e, "ctrl+^"},      {0x1f, "ctrl+_"},
};

/*
 * ESC + one byte with a fixed meaning.  Alt+Backspace/Enter/Tab stay
 * ESC-prefixed even under Kitty's disambiguate mode.  ESC SP, ESC B and
 * ESC F are old Alt+Space/Alt+Left/Alt+Right aliases; with the Kitty
 * protocol on, the terminal would have sent those keys as CSI sequences, so
 * ESC B really is Alt+Shift+B and ESC SP is nothing we name.
 */
static const struct key_pair {
    unsigned char byte;
    bool legacy_only;
    const char *id;
} key_pairs[] = {
    {KEY_DEL, false, "alt+backspace"}, {0x08, false, "alt+backspace"},
    {'\r', false, "alt+enter"},        {'\n', false, "alt+enter"},
    {'\t', false, "alt+tab"},          {' ', true, "alt+space"},
    {'B', true, "alt+left"},           {'F', true, "alt+right"},
};

/*
 * Fixed byte forms of the named codepoint keys (and the two ESC-letter
 * arrow aliases), for matching and encoding.  The first emit-able form of a
 * (name, mods) pair is what rein_key_encode sends.
 */
#define KEY_FORM_LEGACY_ONLY 1u /* matches only with the Kitty flag off */
#define KEY_FORM_NO_EMIT 2u     /* accepted, never sent */

static const struct key_form {
    const char *name;
    uint32_t mods;
    const char *seq;
    size_t len;
    unsigned flags;
} key_forms[] = {
    {"escape", 0, KEY_SEQ("\033"), 0},
    {"tab", 0, KEY_SEQ("\t"), 0},
    {"tab", KEY_MOD_SHIFT, KEY_SEQ("\033[Z"), 0},
    {"tab", KEY_MOD_ALT, KEY_SEQ("\033\t"), 0},
    {"enter", 0, KEY_SEQ("\r"), 0},
    {"enter", 0, KEY_SEQ("\n"), KEY_FORM_NO_EMIT},
    {"enter", 0, KEY_SEQ("\033OM"), KEY_FORM_NO_EMIT},
    {"enter", KEY_MOD_ALT, KEY_SEQ("\033\r"), 0},
    {"enter", KEY_MOD_ALT, KEY_SEQ("\033\n"), KEY_FORM_NO_EMIT},
    {"space", 0, KEY_SEQ(" "), 0},
    {"space", KEY_MOD_CTRL, KEY_SEQ("\0"), 0},
    {"space", KEY_MOD_ALT, KEY_SEQ("\033 "), KEY_FORM_LEGACY_ONLY},
    {"backspace", 0, KEY_SEQ("\177"), 0},
    {"backspace", 0, KEY_SEQ("\010"), KEY_FORM_NO_EMIT},
    {"backspace", KEY_MOD_ALT, KEY_SEQ("\033\177"), 0},
    {"backspace", KEY_MOD_ALT, KEY_SEQ("\033\010"), KEY_FORM_NO_EMIT},
    {"left", KEY_MOD_ALT, KEY_SEQ("\033B"),
     KEY_FORM_LEGACY_ONLY | KEY_FORM_NO_EMIT},
    {"right", KEY_MOD_ALT, KEY_SEQ("\033F"),
     KEY_FORM_LEGACY_ONLY | KEY_FORM_NO_EMIT},
};

/* Legacy Ctrl+symbol bytes (Ctrl+letter is letter & 0x1f). */
static const struct key_ctrlsym {
    char sym;
    unsigned char byte;
} key_ctrlsyms[] = {
    {'@', 0x00}, {'[', 0x1b}, {'\\', 0x1c}, {']', 0x1d},
    {'^', 0x1e}, {'_', 0x1f}, {'-', 0x1f},
};

/* Id spellings that name another key. */
static const struct key_alias {
    const char *alias;
    const char *name;
} key_aliases[] = {
    {"esc", "escape"},
    {"return", "enter"},
    {"plus", "+"},
};

/* Modifier words in an id, any case, any order. */
static const struct key_modword {
    const char *word;
    uint32_t bit;
} key_modwords[] = {
    {"shift", KEY_MOD_SHIFT},
    {"ctrl", KEY_MOD_CTRL},
    {"alt", KEY_MOD_ALT},
    {"super", KEY_MOD_SUPER},
};

#define KEY_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------- small helpers */

/* ASCII only: ids and sequences are ASCII, and the locale must not matter. */
static unsigned char key_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

static unsigned char key_upper(unsigned char c)
{
    return (c >= 'a' && c <= 'z') ? (unsigned char)(c - 'a' + 'A') : c;
}

static bool key_is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool key_is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static bool key_is_graphic(unsigned char c)
{
    return c > ' ' && c < KEY_DEL;
}

static bool key_is_lower(unsigned char c)
{
    return c >= 'a' && c <= 'z';
}

/* Case-insensitive: does the n bytes at s spell word exactly? */
static bool key_ieq(const char *s, size_t n, const char *word)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (word[i] == '\0' ||
            key_lower((unsigned char)s[i]) != key_lower((unsigned char)word[i]))
            return false;
    }
    return word[n] == '\0';
}

/* An ASCII letter or punctuation mark: a key whose codepoint already says
 * which key it is, so a layout's base key must not override it. */
static bool key_is_ascii_key(int32_t cp)
{
    return cp > ' ' && cp < KEY_DEL && !key_is_digit((unsigned char)cp);
}

/* Controls that are also named keys: as legacy bytes they are the named key
 * (Enter), never Ctrl+<letter> (Ctrl+M), because nothing tells them apart. */
static bool key_is_named_byte(unsigned char c)
{
    return c == 0x08 || c == '\t' || c == '\n' || c == '\r' || c == KEY_ESC ||
           c == KEY_DEL;
}

static bool key_ctrl_symbol(unsigned char sym, unsigned char *byte)
{
    size_t i;

    for (i = 0; i < KEY_COUNT(key_ctrlsyms); i++) {
        if ((unsigned char)key_ctrlsyms[i].sym == sym) {
            *byte = key_ctrlsyms[i].byte;
            return true;
        }
    }
    return false;
}

/*
 * Reads decimal digits at b[*i..end): at least one, no overflow of 32 bits.
 * On success *i is past the digits.
 */
static bool key_digits(const unsigned char *b, size_t *i, size_t end,
                       uint32_t *out)
{
    uint64_t v = 0;
    size_t j = *i;

    if (j >= end || !key_is_digit(b[j]))
        return false;
    while (j < end && key_is_digit(b[j])) {
        v = v * 10 + (uint64_t)(b[j] - '0');
        if (v > UINT32_MAX)
            return false;
        j++;
    }
    *i = j;
    *out = (uint32_t)v;
    return true;
}

static const struct key_func *key_func_by_code(int32_t code)
{
    size_t i;

    for (i = 0; i < KEY_COUNT(key_funcs); i++)
        if (key_funcs[i].code == code)
            return &key_funcs[i];
    return NULL;
}

static const struct key_keypad *key_keypad_find(int32_t code)
{
    size_t i;

    for (i = 0; i < KEY_COUNT(key_keypads); i++)
        if (key_keypads[i].code == code)
            return &key_keypads[i];
    return NULL;
}

/* The character a keypad operator types, or 0. */
static int32_t key_kpop_text(int32_t code)
{
    size_t i;

    for (i = 0; i < KEY_COUNT(key_kpops); i++)
        if (key_kpops[i].code == code)
            return (unsigned char)key_kpops[i].text;
    return 0;
}

/* The navigation key printed on a keypad key, or code itself. */
static int32_t key_keypad_nav(int32_t code)
{
    const struct key_keypad *kp = key_keypad_find(code);

    return kp ? kp->nav : code;
}

static const struct key_legacy *key_legacy_find(const unsigned char *b,
                                                size_t len)
{
    size_t i;

    for (i = 0; i < KEY_COUNT(key_legacies); i++)
        if (key_legacies[i].len == len && memcmp(key_legacies[i].seq, b, len) == 0)
            return &key_legacies[i];
    return NULL;
}

/* --------------------------------------------------------------- id text */

/* A key id being built.  KEY_ID_CAP holds the longest id this file makes;
 * overflow is latched rather than trusted, so a slip can never write past. */
struct key_id {
    char s[KEY_ID_CAP];
    size_t n;
    bool overflow;
};

static void key_id_put(struct key_id *id, const char *s, size_t n)
{
    if (id->overflow || n >= sizeof(id->s) - id->n) {
        id->overflow = true;
        return;
    }
    memcpy(id->s + id->n, s, n);
    id->n += n;
    id->s[id->n] = '\0';
}

static void key_id_str(struct key_id *id, const char *s)
{
    key_id_put(id, s, strlen(s));
}

/* The modifier prefixes in the one order ids use: shift, ctrl, alt, super. */
static void key_id_mods(struct key_id *id, uint32_t mods)
{
    if (mods & KEY_MOD_SHIFT)
        key_id_str(id, "shift+");
    if (mods & KEY_MOD_CTRL)
        key_id_str(id, "ctrl+");
    if (mods & KEY_MOD_ALT)
        key_id_str(id, "alt+");
    if (mods & KEY_MOD_SUPER)
        key_id_str(id, "super+");
}

/*
 * The name of a key code: "escape", "up", "f5", or the ASCII character.
 * Keypad digits name their navigation key here; callers that want the digit
 * ask key_keypad_find() first.  false when the code has no name.
 */
static bool key_id_code(struct key_id *id, int32_t code)
{
    const struct key_keypad *kp;
    const struct key_func *f;
    size_t i;
    char c;

    if (code < 0) {
        f = key_func_by_code(code);
        if (!f)
            return false;
        key_id_str(id, f->name);
        return true;
    }
    for (i = 0; i < KEY_COUNT(key_cpnames); i++) {
        if (key_cpnames[i].code == code) {
            key_id_str(id, key_cpnames[i].name);
            return true;
        }
    }
    kp = key_keypad_find(code);
    if (kp)
        return key_id_code(id, kp->nav);
    if (code > ' ' && code < KEY_DEL) {
        c = (char)code;
        key_id_put(id, &c, 1);
        return true;
    }
    return false;
}

/* -------------------------------------------------------- CSI sequences */

/* One Kitty-style CSI sequence (CSI ... u, CSI n ~, CSI 1;m <letter>). */
struct key_csi {
    int32_t code; /* a codepoint, or a negative KEY_* code */
    int32_t shifted;
    int32_t base;
    int32_t text;
    bool has_shifted, has_base, has_text;
    uint32_t mods;  /* wire value - 1, lock bits included */
    uint32_t event; /* 0 when absent */
};

/* A Unicode scalar value: what a text field may hold. */
static bool key_is_scalar(uint32_t cp)
{
    return cp <= KEY_UNICODE_MAX &&
           (cp < KEY_SURROGATE_LO || cp > KEY_SURROGATE_HI);
}

/*
 * CSI code[:shifted[:base]] [; [mods][:event]] [; text[:text...]] u
 * Every field after the code is optional; the modifier may be empty when a
 * text field follows ("CSI 0;;229u").  Only the first text codepoint is
 * kept, and only when it is the sole one: several mean a composed string,
 * not one key's text.
 */
static bool key_csi_u(const unsigned char *b, size_t len, struct key_csi *k)
{
    size_t end = len - 1, i = KEY_PREFIX_LEN(KEY_CSI_PREFIX);
    uint32_t v, mod = 1, count = 0;

    if (!key_digits(b, &i, end, &v) || v > INT32_MAX)
        return false;
    k->code = (int32_t)v;
    if (i < end && b[i] == ':') {
        i++;
        if (i < end && key_is_digit(b[i])) {
            if (!key_digits(b, &i, end, &v))
                return false;
            /* A shifted key past 31 bits is read as absent, not an error. */
            k->has_shifted = v <= INT32_MAX;
            k->shifted = k->has_shifted ? (int32_t)v : 0;
        }
        if (i < end && b[i] == ':') {
            i++;
            if (!key_digits(b, &i, end, &v) || v > INT32_MAX)
                return false;
            k->has_base = true;
            k->base = (int32_t)v;
        }
    }
    if (i < end && b[i] == ';') {
        i++;
        if (i < end && key_is_digit(b[i]) && !key_digits(b, &i, end, &mod))
            return false;
        if (i < end && b[i] == ':') {
            i++;
            if (!key_digits(b, &i, end, &k->event))
                return false;
        }
    }
    if (i < end && b[i] == ';') {
        i++;
        while (i < end) {
            if (b[i] == ':') {
                i++;
                continue;
            }
            if (!key_digits(b, &i, end, &v))
                return false;
            count++;
            if (count == 1) {
                k->has_text = v >= KEY_TEXT_MIN && key_is_scalar(v);
                k->text = k->has_text ? (int32_t)v : 0;
            } else {
                k->has_text = false;
            }
            if (i < end && b[i] == ':')
                i++;
        }
    }
    if (i != end || mod == 0)
        return false;
    k->mods = mod - 1;
    return true;
}

/* CSI 1 ; mods[:event] <letter>: arrows, home/end/clear, F1..F4. */
static bool key_csi_letter(const unsigned char *b, size_t len,
                           struct key_csi *k)
{
    size_t i = KEY_PREFIX_LEN(KEY_CSI1_PREFIX), j;
    uint32_t mod;

    if (memcmp(b, KEY_CSI1_PREFIX, KEY_PREFIX_LEN(KEY_CSI1_PREFIX)) != 0)
        return false;
    if (!key_digits(b, &i, len, &mod))
        return false;
    if (i < len && b[i] == ':') {
        i++;
        if (!key_digits(b, &i, len, &k->event))
            return false;
    }
    if (i + 1 != len || mod == 0)
        return false;
    for (j = 0; j < KEY_COUNT(key_funcs); j++) {
        if (key_funcs[j].csi_final && (unsigned char)key_funcs[j].csi_final == b[i]) {
            k->code = key_funcs[j].code;
            k->mods = mod - 1;
            return true;
        }
    }
    return false;
}

/* CSI n [; mods] [:event] ~ : the editing block and F-keys. */
static bool key_csi_tilde(const unsigned char *b, size_t len,
                          struct key_csi *k)
{
    size_t end = len - 1, i = KEY_PREFIX_LEN(KEY_CSI_PREFIX), j;
    uint32_t num, mod = 1;

    if (!key_digits(b, &i, end, &num))
        return false;
    if (i < end && b[i] == ';') {
        i++;
        if (!key_digits(b, &i, end, &mod))
            return false;
    }
    if (i < end && b[i] == ':') {
        i++;
        if (!key_digits(b, &i, end, &k->event))
            return false;
    }
    if (i != end || mod == 0)
        return false;
    for (j = 0; j < KEY_COUNT(key_tildes); j++) {
        if (key_tildes[j].num == num) {
            k->code = key_tildes[j].code;
            k->mods = mod - 1;
            return true;
        }
    }
    return false;
}

/* Any of the three Kitty-style CSI forms, chosen by the final byte. */
static bool key_kitty_seq(const unsigned char *b, size_t len, struct key_csi *k)
{
    unsigned char last;

    memset(k, 0, sizeof(*k));
    if (len < KEY_KITTY_MIN_LEN ||
        memcmp(b, KEY_CSI_PREFIX, KEY_PREFIX_LEN(KEY_CSI_PREFIX)) != 0)
        return false;
    last = b[len - 1];
    if (last == 'u')
        return key_csi_u(b, len, k);
    if (last == '~')
        return key_csi_tilde(b, len, k);
    /* any other final: CSI 1;m <letter>, the letter looked up in key_funcs */
    return key_csi_letter(b, len, k);
}

/*
 * xterm modifyOtherKeys: CSI 27 ; mods ; code ~ (some terminals leave off
 * the '~').  *mods is the wire value - 1, lock bits included.
 */
static bool key_mok_seq(const unsigned char *b, size_t len, uint32_t *mods,
                        int32_t *code)
{
    size_t end = len, i = KEY_PREFIX_LEN(KEY_MOK_PREFIX);
    uint32_t mod, v;

    if (len < KEY_MOK_MIN_LEN ||
        memcmp(b, KEY_MOK_PREFIX, KEY_PREFIX_LEN(KEY_MOK_PREFIX)) != 0)
        return false;
    if (b[len - 1] == '~')
        end--;
    if (!key_digits(b, &i, end, &mod) || i >= end || b[i] != ';')
        return false;
    i++;
    if (!key_digits(b, &i, end, &v) || i != end || mod == 0 || v > INT32_MAX)
        return false;
    *mods = mod - 1;
    *code = (int32_t)v;
    return true;
}

/* ------------------------------------------------------------- parsing */

/*
 * The id of a Kitty sequence.  Unmodified, a key is the text it types (its
 * text field, or a keypad digit); modified, a key from a non-Latin layout is
 * named by its base-layout key (Ctrl+С on a Russian layout is ctrl+c), but
 * an ASCII letter or symbol is always itself, so a remapped Latin layout
 * cannot turn one shortcut into another.
 */
static bool key_kitty_id(const struct key_csi *k, struct key_id *id)
{
    uint32_t mods = k->mods & ~KEY_MODS_LOCK;
    int32_t code = k->code, op;
    const struct key_keypad *kp;

    if (mods & ~KEY_MODS_NAMED)
        return false; /* hyper/meta: no id can spell it */
    op = key_kpop_text(code);
    if (op)
        code = op;
    else if (mods != 0 && !key_is_ascii_key(code) && k->has_base)
        code = k->base;

    if (mods == 0) {
        if (k->has_text && key_id_code(id, k->text))
            return true;
        kp = key_keypad_find(k->code);
        if (kp) {
            key_id_put(id, &kp->text, 1);
            return true;
        }
        return key_id_code(id, code);
    }
    key_id_mods(id, mods);
    return key_id_code(id, code);
}

static bool key_parse_byte(unsigned char c, struct key_id *id)
{
    size_t i;
    char ch;

    for (i = 0; i < KEY_COUNT(key_bytes); i++) {
        if (key_bytes[i].byte == c) {
            key_id_str(id, key_bytes[i].id);
            return true;
        }
    }
    if (c >= KEY_CTRL_A && c <= KEY_CTRL_Z) {
        ch = (char)('a' + c - KEY_CTRL_A);
        key_id_str(id, "ctrl+");
        key_id_put(id, &ch, 1);
        return true;
    }
    if (key_is_graphic(c)) {
        ch = (char)c;
        key_id_put(id, &ch, 1);
        return true;
    }
    return false;
}

/*
 * ESC + one byte: alt+<key>.  Only letters and control letters are read
 * this way; ESC + a digit or punctuation is left unnamed (ESC [ in
 * particular is a CSI cut short, not Alt+[).
 */
static bool key_parse_pair(unsigned char c, bool kitty, struct key_id *id)
{
    size_t i;
    char ch;

    for (i = 0; i < KEY_COUNT(key_pairs); i++) {
        if (key_pairs[i].byte == c && !(key_pairs[i].legacy_only && kitty)) {
            key_id_str(id, key_pairs[i].id);
            return true;
        }
    }
    if (c >= KEY_CTRL_A && c <= KEY_CTRL_Z) {
        key_id_str(id, "ctrl+alt+");
        ch = (char)('a' + c - KEY_CTRL_A);
    } else if (key_is_lower(c)) {
        key_id_str(id, "alt+");
        ch = (char)c;
    } else if (c >= 'A' && c <= 'Z') {
        key_id_str(id, "alt+shift+");
        ch = (char)key_lower(c);
    } else {
        return false;
    }
    key_id_put(id, &ch, 1);
    return true;
}

static bool key_parse(const unsigned char *b, size_t len, bool kitty,
                      struct key_id *id)
{
    const struct key_legacy *leg;
    struct key_csi k;
    uint32_t mods;
    int32_t code;
    size_t i;

    if (len == 1)
        return key_parse_byte(b[0], id);
    if (len == 0 || b[0] != KEY_ESC)
        return false;
    if (len == 2 && key_parse_pair(b[1], kitty, id))
        return true;

    leg = key_legacy_find(b, len);
    if (leg) {
        key_id_mods(id, leg->mods);
        key_id_str(id, leg->name);
        return true;
    }
    if (key_mok_seq(b, len, &mods, &code)) {
        /* Unnamed modifier bits are dropped here, as the reference does. */
        key_id_mods(id, mods & ~KEY_MODS_LOCK);
        return key_id_code(id, code);
    }
    if (key_kitty_seq(b, len, &k))
        return k.event != KEY_EVENT_RELEASE && key_kitty_id(&k, id);

    /* ESC before a CSI/SS3 sequence: Meta-sends-Escape terminals (iTerm2's
     * "Option as Meta") adding alt.  The inner sequence is read with the
     * Kitty flag on because terminals mix this form into Kitty mode too. */
    if (len > 2 && b[1] == KEY_ESC && (b[2] == '[' || b[2] == 'O')) {
        struct key_id inner = {.n = 0};

        if (!key_parse(b + 1, len - 1, true, &inner) || inner.overflow)
            return false;
        key_id_str(id, "alt+");
        key_id_put(id, inner.s, inner.n);
        return true;
    }
    for (i = 0; i < KEY_COUNT(key_fixeds); i++) {
        if (key_fixeds[i].len == len && memcmp(key_fixeds[i].seq, b, len) == 0) {
            key_id_str(id, key_fixeds[i].id);
            return true;
        }
    }
    return false;
}

/* See rein.h. */
int rein_key_parse(const void *data, size_t len, bool kitty_active, char *buf,
                   size_t size)
{
    struct key_id id = {.n = 0};

    if ((!data && len) || !key_parse(data, len, kitty_active, &id) ||
        id.overflow) {
        if (buf && size)
            buf[0] = '\0';
        return 0;
    }
    if (!buf || size < id.n + 1)
        return REIN_ETOOSMALL;
    memcpy(buf, id.s, id.n + 1);
    return (int)id.n;
}

/* ------------------------------------------------------------ key ids */

/* A key id taken apart: the key (aliases resolved) and its modifiers. */
struct key_spec {
    const char *key;
    size_t key_len;
    uint32_t mods;
    /* For the strict reading of an id to encode: how many words were not
     * modifiers, and whether a modifier came after one of them. */
    unsigned key_words;
    bool mod_after_key;
};

static void key_spec_token(struct key_spec *sp, const char *s, size_t n)
{
    size_t i;

    while (n && key_is_space((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && key_is_space((unsigned char)s[n - 1]))
        n--;
    if (n == 0)
        return;
    for (i = 0; i < KEY_COUNT(key_modwords); i++) {
        if (key_ieq(s, n, key_modwords[i].word)) {
            sp->mods |= key_modwords[i].bit;
            sp->mod_after_key |= sp->key_words > 0;
            return;
        }
    }
    sp->key = s; /* the last non-modifier word is the key */
    sp->key_len = n;
    sp->key_words++;
}

/*
 * "ctrl+shift+up", "Ctrl+C", "ctrl++", "ctrl+plus", " esc ".  '+' joins
 * words, so the '+' key is written "+", "plus", or as the "++" that ends an
 * id.  false when no key word is left.
 */
static bool key_spec_parse(const char *id, struct key_spec *sp)
{
    const char *s = id, *e = id + strlen(id), *p, *q;
    size_t i;
    bool plus = false;

    memset(sp, 0, sizeof(*sp));
    while (s < e && key_is_space((unsigned char)*s))
        s++;
    while (e > s && key_is_space((unsigned char)e[-1]))
        e--;
    if (s == e)
        return false;
    if (e - s == 1 && *s == '+') {
        e = s;
        sp->key = "+";
        sp->key_len = 1;
        plus = true;
    } else if (e - s >= 2 && e[-1] == '+' && e[-2] == '+') {
        e -= 2;
        sp->key = "+";
        sp->key_len = 1;
        plus = true;
    }
    for (p = s; p < e; p = q + 1) {
        q = memchr(p, '+', (size_t)(e - p));
        if (!q)
            q = e;
        key_spec_token(sp, p, (size_t)(q - p));
    }
    if (plus) /* the '+' key, after every word (a later word overrode it) */
        sp->key_words++;
    if (!sp->key)
        return false;
    for (i = 0; i < KEY_COUNT(key_aliases); i++) {
        if (key_ieq(sp->key, sp->key_len, key_aliases[i].alias)) {
            sp->key = key_aliases[i].name;
            sp->key_len = strlen(sp->key);
            break;
        }
    }
    return true;
}

/* A named key: its canonical name and its code(s). */
struct key_named {
    const char *name;
    int32_t code, code2; /* code2: Enter's keypad twin, else KEY_NONE */
    const struct key_func *func;
};

static bool key_named_find(const struct key_spec *sp, struct key_named *nk)
{
    size_t i;

    nk->name = NULL;
    nk->code = nk->code2 = KEY_NONE;
    nk->func = NULL;
    for (i = 0; i < KEY_COUNT(key_cpnames); i++) {
        if (!key_ieq(sp->key, sp->key_len, key_cpnames[i].name))
            continue;
        if (!nk->name) {
            nk->name = key_cpnames[i].name;
            nk->code = key_cpnames[i].code;
        } else {
            nk->code2 = key_cpnames[i].code;
        }
    }
    if (nk->name)
        return true;
    for (i = 0; i < KEY_COUNT(key_funcs); i++) {
        if (key_ieq(sp->key, sp->key_len, key_funcs[i].name)) {
            nk->name = key_funcs[i].name;
            nk->code = key_funcs[i].code;
            nk->func = &key_funcs[i];
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------ matching */

/* The input, with its enhanced encodings decoded once. */
struct key_input {
    const unsigned char *b;
    size_t len;
    bool kitty_active;
    bool has_csi, has_mok;
    struct key_csi csi;
    uint32_t mok_mods;
    int32_t mok_code;
};

static void key_input_init(struct key_input *in, const unsigned char *b,
                           size_t len, bool kitty_active)
{
    memset(in, 0, sizeof(*in));
    in->b = b;
    in->len = len;
    in->kitty_active = kitty_active;
    in->has_csi = key_kitty_seq(b, len, &in->csi);
    in->has_mok = key_mok_seq(b, len, &in->mok_mods, &in->mok_code);
}

static bool key_input_is(const struct key_input *in, const char *seq,
                         size_t len)
{
    return in->len == len && memcmp(in->b, seq, len) == 0;
}

/*
 * Is the input a Kitty-style sequence for code with exactly mods (locks
 * aside)?  Releases never match.  Keypad keys are read as for parsing: the
 * operators and (unmodified) digits as their text, modified digits as their
 * navigation key.  A base-layout key stands in only for a modified key that
 * is not already an ASCII letter or symbol (see key_kitty_id).
 */
static bool key_kitty_hit(const struct key_input *in, int32_t code,
                          uint32_t mods)
{
    const struct key_csi *k = &in->csi;
    uint32_t actual = k->mods & ~KEY_MODS_LOCK;
    int32_t cp = k->code, base = k->base, op;
    bool has_base = k->has_base;
    const struct key_keypad *kp;

    if (code == KEY_NONE || !in->has_csi || k->event == KEY_EVENT_RELEASE ||
        actual != (mods & ~KEY_MODS_LOCK))
        return false;
    if (!k->has_text) {
        op = key_kpop_text(cp);
        kp = key_keypad_find(cp);
        if (op) {
            cp = op;
            has_base = false;
        } else if (actual == 0 && kp) {
            cp = (unsigned char)kp->text;
            has_base = false;
        } else if (actual != 0) {
            cp = key_keypad_nav(cp);
            base = key_keypad_nav(base);
        }
    }
    if (cp == code)
        return true;
    return actual != 0 && has_base && base == code && !key_is_ascii_key(cp);
}

/* Is the input modifyOtherKeys for code with mods?  The modifier is compared
 * as sent, lock bits included — the reference's rule, kept so ctrl+m and
 * friends answer as it does (the parser still names such input, locks
 * aside). */
static bool key_mok_hit(const struct key_input *in, int32_t code, uint32_t mods)
{
    return in->has_mok && in->mok_code == code && in->mok_mods == mods;
}

/*
 * A named key (escape, tab, enter, space, backspace, the editing block,
 * arrows, F-keys): one of its fixed byte forms, its legacy sequence, a Kitty
 * sequence, or (modified) modifyOtherKeys.  Unmodified keys never match
 * modifyOtherKeys, as in the reference.
 *
 * Two deliberate departures from the reference, both only ever turning a
 * "no" into the right "yes": a modified F-key is compared with that F-key
 * (the reference's arithmetic sent shift+f5 to shift+clear and ctrl+f2 to
 * nothing), and escape and the F-keys accept their own CSI forms (the
 * reference named "\e[27;3u" alt+escape and "\e[15;1~" f5 but never matched
 * them).
 */
static bool key_match_named(const struct key_input *in,
                            const struct key_named *nk, uint32_t mods)
{
    const struct key_legacy *leg;
    const struct key_form *f;
    size_t i;

    for (i = 0; i < KEY_COUNT(key_forms); i++) {
        f = &key_forms[i];
        if (f->mods == mods && strcmp(f->name, nk->name) == 0 &&
            !((f->flags & KEY_FORM_LEGACY_ONLY) && in->kitty_active) &&
            key_input_is(in, f->seq, f->len))
            return true;
    }
    leg = key_legacy_find(in->b, in->len);
    if (leg && leg->mods == mods && strcmp(leg->name, nk->name) == 0)
        return true;
    if (key_kitty_hit(in, nk->code, mods) || key_kitty_hit(in, nk->code2, mods))
        return true;
    return mods != 0 &&
           (key_mok_hit(in, nk->code, mods) || key_mok_hit(in, nk->code2, mods));
}

/*
 * A single printable character key.  The id's letter case does not matter
 * (ids are case-insensitive): "A" and "a" are the key a, which is the byte
 * 'a'; the byte 'A' is shift+a.  Legacy forms come first (ESC+letter for
 * alt, control bytes for ctrl, the capital for shift), then the enhanced
 * encodings.  A control byte that is also a named key (CR, TAB, BS, ESC) is
 * that named key, never ctrl+<letter>.
 */
static bool key_match_char(const struct key_input *in, unsigned char c,
                           uint32_t mods)
{
    unsigned char ch = key_lower(c), ctrl = 0;
    bool letter = key_is_lower(ch), has_ctrl;
    int32_t cp = ch;
    const unsigned char *b = in->b;

    if (letter) {
        ctrl = (unsigned char)(ch - 'a' + KEY_CTRL_A);
        has_ctrl = true;
    } else {
        has_ctrl = key_ctrl_symbol(ch, &ctrl);
    }
    if (in->len == 2 && b[0] == KEY_ESC && letter) {
        if (mods == (KEY_MOD_CTRL | KEY_MOD_ALT) && b[1] == ctrl &&
            !key_is_named_byte(ctrl))
            return true;
        if (mods == KEY_MOD_ALT && b[1] == ch)
            return true;
        if (mods == (KEY_MOD_ALT | KEY_MOD_SHIFT) && b[1] == key_upper(ch))
            return true;
    }
    if (mods == KEY_MOD_CTRL && has_ctrl && in->len == 1 && b[0] == ctrl &&
        !key_is_named_byte(ctrl))
        return true;
    if (mods == KEY_MOD_SHIFT && letter && in->len == 1 && b[0] == key_upper(ch))
        return true;
    if (mods == 0 && in->len == 1 && b[0] == ch)
        return true;
    return key_kitty_hit(in, cp, mods) || (mods != 0 && key_mok_hit(in, cp, mods));
}

static bool key_match(const unsigned char *b, size_t len,
                      const struct key_spec *sp, bool kitty_active)
{
    struct key_input in;
    struct key_named nk;

    /* ESC + CSI/SS3 is alt + that key: match the rest without alt.  Like the
     * reference, only shift and ctrl carry over to the inner key. */
    if ((sp->mods & KEY_MOD_ALT) && len > 2 && b[0] == KEY_ESC &&
        b[1] == KEY_ESC && (b[2] == '[' || b[2] == 'O')) {
        struct key_spec inner = *sp;

        inner.mods = sp->mods & (KEY_MOD_SHIFT | KEY_MOD_CTRL);
        return key_match(b + 1, len - 1, &inner, true);
    }
    key_input_init(&in, b, len, kitty_active);
    if (key_named_find(sp, &nk))
        return key_match_named(&in, &nk, sp->mods);
    if (sp->key_len == 1 && key_is_graphic((unsigned char)sp->key[0]))
        return key_match_char(&in, (unsigned char)sp->key[0], sp->mods);
    return false;
}

/* See rein.h.  Modifiers may come in any order; ids are case-insensitive. */
bool rein_key_matches(const void *data, size_t len, const char *key_id,
                      bool kitty_active)
{
    struct key_spec sp;

    if ((!data && len) || !key_id || !key_spec_parse(key_id, &sp))
        return false;
    return key_match(data, len, &sp, kitty_active);
}

/* ---------------------------------------------------------------- kitty */

/* The codepoint the public API reports: keys without one get kitty's. */
static uint32_t key_kitty_public(int32_t code)
{
    const struct key_func *f;

    if (code >= 0)
        return (uint32_t)code;
    f = key_func_by_code(code);
    return f ? f->kitty : 0;
}

/*
 * See rein.h.  Arrows, the editing block and F1..F12 (sent as CSI 1;m A or
 * CSI n;m ~) report kitty's functional-key codepoints (KEY_KITTY_* in
 * term/keys.h).  The modifier is as sent, lock bits included; an absent or
 * unknown event type reads as a press.  Releases are reported, not refused.
 */
int rein_kitty_parse(const void *data, size_t len, rein_kitty_key_t *out)
{
    struct key_csi k;

    if (!data || !out || !key_kitty_seq(data, len, &k))
        return 0;
    out->codepoint = key_kitty_public(k.code);
    out->shifted_key = k.has_shifted ? (uint32_t)k.shifted : 0;
    out->base_layout_key = k.has_base ? (uint32_t)k.base : 0;
    out->modifier = k.mods;
    switch (k.event) {
    case REIN_KITTY_REPEAT:
        out->event = REIN_KITTY_REPEAT;
        break;
    case REIN_KITTY_RELEASE:
        out->event = REIN_KITTY_RELEASE;
        break;
    default:
        out->event = REIN_KITTY_PRESS;
        break;
    }
    return 1;
}

/*
 * See rein.h.  True when data is a Kitty sequence for codepoint (or, for a
 * modified key that is not an ASCII letter or symbol, whose base-layout key
 * is codepoint) with exactly modifier, lock bits ignored.  Any event type
 * matches; rein_key_matches is the one that refuses releases.
 */
bool rein_kitty_matches(const void *data, size_t len, uint32_t codepoint,
                        uint32_t modifier)
{
    struct key_csi k;
    uint32_t actual;

    if (!data || !key_kitty_seq(data, len, &k))
        return false;
    actual = k.mods & ~KEY_MODS_LOCK;
    if (actual != (modifier & ~KEY_MODS_LOCK))
        return false;
    if (key_kitty_public(k.code) == codepoint)
        return true;
    return actual != 0 && k.has_base && (uint32_t)k.base == codepoint &&
           !key_is_ascii_key(k.code);
}

/* See rein.h.  key_name is compared case-insensitively ("pageup"). */
bool rein_legacy_matches(const void *data, size_t len, const char *key_name)
{
    const struct key_legacy *leg;
    struct key_id id = {.n = 0};

    if (!data || !key_name)
        return false;
    leg = key_legacy_find(data, len);
    if (!leg)
        return false;
    key_id_mods(&id, leg->mods);
    key_id_str(&id, leg->name);
    return key_ieq(key_name, strlen(key_name), id.s);
}

/* ------------------------------------------------------------- encoding */

/* The bytes for a named key: its fixed form, else xterm's modified CSI
 * forms for keys without a codepoint, else a Kitty CSI-u sequence. */
static int key_encode_named(const struct key_named *nk, uint32_t mods,
                            char *out, size_t cap)
{
    const struct key_form *f;
    size_t i;
    int n;

    for (i = 0; i < KEY_COUNT(key_forms); i++) {
        f = &key_forms[i];
        if (f->mods == mods && !(f->flags & KEY_FORM_NO_EMIT) &&
            strcmp(f->name, nk->name) == 0) {
            memcpy(out, f->seq, f->len);
            return (int)f->len;
        }
    }
    if (nk->func && mods == 0)
        n = snprintf(out, cap, "%s", nk->func->plain);
    else if (nk->func && nk->func->csi_final)
        n = snprintf(out, cap, "\033[1;%u%c", (unsigned)mods + 1,
                     nk->func->csi_final);
    else if (nk->func)
        n = snprintf(out, cap, "\033[%u;%u~", nk->func->tilde,
                     (unsigned)mods + 1);
    else
        n = snprintf(out, cap, "\033[%d;%uu", (int)nk->code, (unsigned)mods + 1);
    return (n < 0 || (size_t)n >= cap) ? REIN_EINTERNAL : n;
}

/*
 * The bytes for a printable character key, as a terminal without
 * extensions sends them where one exists (the character, its capital,
 * ESC + it, a control byte), otherwise the Kitty CSI-u form.  Letters with
 * a modifier are case-insensitive; unmodified, a character is itself.
 */
static int key_encode_char(unsigned char c, uint32_t mods, char *out,
                           size_t cap)
{
    unsigned char lc = key_lower(c), ctrl = 0;
    bool letter = key_is_lower(lc), has_ctrl;
    int n;

    if (letter) {
        ctrl = (unsigned char)(lc - 'a' + KEY_CTRL_A);
        has_ctrl = true;
    } else {
        has_ctrl = key_ctrl_symbol(lc, &ctrl);
    }
    switch (mods) {
    case 0:
        out[0] = (char)c;
        return 1;
    case KEY_MOD_CTRL:
        if (!has_ctrl)
            break;
        out[0] = (char)ctrl;
        return 1;
    case KEY_MOD_ALT:
        out[0] = KEY_ESC;
        out[1] = (char)(letter ? lc : c);
        return 2;
    case KEY_MOD_CTRL | KEY_MOD_ALT:
        /* Only letters: ESC + a symbol's control byte is read by no one. */
        if (!letter)
            break;
        out[0] = KEY_ESC;
        out[1] = (char)ctrl;
        return 2;
    case KEY_MOD_SHIFT:
        if (!letter)
            break;
        out[0] = (char)key_upper(lc);
        return 1;
    case KEY_MOD_ALT | KEY_MOD_SHIFT:
        if (!letter)
            break;
        out[0] = KEY_ESC;
        out[1] = (char)key_upper(lc);
        return 2;
    default:
        break;
    }
    n = snprintf(out, cap, "\033[%u;%uu", (unsigned)(letter ? lc : c),
                 (unsigned)mods + 1);
    return (n < 0 || (size_t)n >= cap) ? REIN_EINTERNAL : n;
}

/* ------------------------------------------------------------ respelling */

/* Key names other tools use (tmux's send-keys, emacs, browsers' KeyboardEvent
 * names, common abbreviations), and the id rein reads for each. */
static const struct key_alias key_respellings[] = {
    {"pgup", "pageUp"},      {"ppage", "pageUp"},     {"prior", "pageUp"},
    {"pgdn", "pageDown"},    {"pgdown", "pageDown"},  {"npage", "pageDown"},
    {"next", "pageDown"},    {"del", "delete"},       {"dc", "delete"},
    {"ins", "insert"},       {"ic", "insert"},        {"bs", "backspace"},
    {"bspace", "backspace"}, {"bksp", "backspace"},   {"ret", "enter"},
    {"cr", "enter"},         {"spc", "space"},        {"arrowup", "up"},
    {"arrowdown", "down"},   {"arrowleft", "left"},   {"arrowright", "right"},
    {"btab", "shift+tab"},
};

/* Modifier prefixes other tools write: tmux's and emacs's "C-", "M-", "S-"
 * (case as written there), and words joined by '-' (any case), with the
 * synonyms "control" and "meta". */
static const struct key_prefix {
    const char *prefix;
    bool exact_case;
    uint32_t bit;
} key_prefixes[] = {
    {"C-", true, KEY_MOD_CTRL},         {"M-", true, KEY_MOD_ALT},
    {"S-", true, KEY_MOD_SHIFT},        {"ctrl-", false, KEY_MOD_CTRL},
    {"control-", false, KEY_MOD_CTRL},  {"control+", false, KEY_MOD_CTRL},
    {"alt-", false, KEY_MOD_ALT},       {"meta-", false, KEY_MOD_ALT},
    {"meta+", false, KEY_MOD_ALT},      {"shift-", false, KEY_MOD_SHIFT},
    {"super-", false, KEY_MOD_SUPER},
};

/* The length of the prefix of s (n bytes) that p names, or 0. */
static size_t key_prefix_at(const char *s, size_t n,
                            const struct key_prefix *p)
{
    size_t len = strlen(p->prefix);
    if (n <= len) /* a key must follow */
        return 0;
    if (p->exact_case)
        return memcmp(s, p->prefix, len) == 0 ? len : 0;
    return key_ieq(s, len, p->prefix) ? len : 0;
}

int keys_respell(const char *id, char *buf, size_t size)
{
    const char *s, *e;
    uint32_t mods = 0;
    bool changed = false;
    char word[KEY_RESPELL_MAX];
    const char *name;
    size_t i, n;

    if (!id)
        return 0;
    s = id;
    e = id + strlen(id);
    while (s < e && key_is_space((unsigned char)*s))
        s++;
    while (e > s && key_is_space((unsigned char)e[-1]))
        e--;
    if (e - s == 2 && s[0] == '^' && key_is_graphic((unsigned char)s[1])) {
        mods |= KEY_MOD_CTRL; /* ^C, as a terminal shows it */
        s++;
        changed = true;
    }
    for (bool more = true; more;) {
        more = false;
        for (i = 0; i < KEY_COUNT(key_prefixes); i++) {
            size_t len = key_prefix_at(s, (size_t)(e - s), &key_prefixes[i]);
            if (len) {
                mods |= key_prefixes[i].bit;
                s += len;
                changed = more = true;
                break;
            }
        }
    }
    n = (size_t)(e - s);
    if (n == 0)
        return 0;
    name = NULL;
    for (i = 0; i < KEY_COUNT(key_respellings) && !name; i++)
        if (key_ieq(s, n, key_respellings[i].alias))
            name = key_respellings[i].name;
    if (name)
        changed = true;
    if (!changed)
        return 0;
    if (!name) {
        /* The key as written after the prefixes: whether it names a key is
         * rein_key_encode's to say. */
        if (n >= sizeof word)
            return 0;
        memcpy(word, s, n);
        word[n] = '\0';
        name = word;
    }
    int w = snprintf(buf, size, "%s%s%s%s%s",
                     mods & KEY_MOD_SHIFT ? "shift+" : "",
                     mods & KEY_MOD_CTRL ? "ctrl+" : "",
                     mods & KEY_MOD_ALT ? "alt+" : "",
                     mods & KEY_MOD_SUPER ? "super+" : "", name);
    return (w < 0 || (size_t)w >= size) ? REIN_ETOOSMALL : w;
}

/*
 * See rein.h.  The bytes are not NUL-terminated (ctrl+space is a NUL).
 * Named keys: "enter" is CR, "backspace" DEL, "tab" TAB, "escape" ESC,
 * arrows and the editing block as ESC [ A / ESC [ 5 ~ (modified: ESC [ 1;5D,
 * ESC [ 5;5 ~), F1..F4 as ESC O P.., F5.. as ESC [ 15 ~.
 */
int rein_key_encode(const char *key_id, char *buf, size_t size)
{
    char out[KEY_ENCODE_MAX];
    struct key_spec sp;
    struct key_named nk;
    int n;

    if (!key_id || !key_spec_parse(key_id, &sp))
        return REIN_EKEY;
    /* Matching reads an id leniently, as the reference does (the last
     * word that is not a modifier is the key).  Bytes sent to a program
     * are another matter: "ctrl+c+d" would send ctrl+d, an EOF, and
     * "hyper+q" a bare q, so an id to encode is modifiers, then one key. */
    if (sp.key_words != 1 || sp.mod_after_key)
        return REIN_EKEY;
    if (key_named_find(&sp, &nk))
        n = key_encode_named(&nk, sp.mods, out, sizeof(out));
    else if (sp.key_len == 1 && key_is_graphic((unsigned char)sp.key[0]))
        n = key_encode_char((unsigned char)sp.key[0], sp.mods, out, sizeof(out));
    else
        return REIN_EKEY;
    if (n < 0)
        return n;
    if (!buf || size < (size_t)n)
        return REIN_ETOOSMALL;
    memcpy(buf, out, (size_t)n);
    return n;
}
