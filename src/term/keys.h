/*
 * keys.h — internal constants of the key parser (term/keys.c).
 *
 * The public functions are declared in rein.h.  What lives here is what the
 * tests and later tools need to talk about keys that have no Unicode
 * codepoint: the arrows, the editing block and F1..F12 reach us as legacy
 * CSI forms (CSI 1;5A, CSI 15;2~), and rein_kitty_parse() reports them with
 * the codepoints kitty assigns them in its functional-key table (the Private
 * Use Area block that starts at 57344), so one number names one key whichever
 * encoding carried it.
 */
#ifndef REIN_TERM_KEYS_H
#define REIN_TERM_KEYS_H

#include "rein.h"

/* Kitty's functional-key codepoints for keys sent in legacy CSI forms. */
#define KEY_KITTY_INSERT 57348u
#define KEY_KITTY_DELETE 57349u
#define KEY_KITTY_LEFT 57350u
#define KEY_KITTY_RIGHT 57351u
#define KEY_KITTY_UP 57352u
#define KEY_KITTY_DOWN 57353u
#define KEY_KITTY_PAGE_UP 57354u
#define KEY_KITTY_PAGE_DOWN 57355u
#define KEY_KITTY_HOME 57356u
#define KEY_KITTY_END 57357u
#define KEY_KITTY_F1 57364u /* F2..F12 follow in order */
#define KEY_KITTY_KP_BEGIN 57427u /* CSI 1;mod E, which rein names "clear" */

/* Keypad keys kitty reports as CSI-u codepoints. */
#define KEY_KITTY_KP_0 57399u /* KP_1..KP_9 follow in order */
#define KEY_KITTY_KP_DECIMAL 57409u
#define KEY_KITTY_KP_ENTER 57414u

/* The most bytes rein_key_encode() ever writes for one key. */
#define KEY_ENCODE_MAX 32

/* The longest key id keys_respell reads after its modifier prefixes. */
#define KEY_RESPELL_MAX 64

/*
 * Rewrites a key as other tools spell it into rein's key id, for callers
 * that take keys from people or models (the MCP `keys` argument) and try
 * it after rein_key_encode refused the id as given: tmux's and emacs's
 * `C-c`, `M-x`, `S-Tab`, `C-M-Left`; `ctrl-c`, `Control-x`, `meta-b`;
 * `^C`; and key names such as `PgUp`, `PPage`, `NPage`, `Del`, `DC`,
 * `IC`, `BSpace`, `BTab`, `ArrowUp`.  Writes the id NUL-terminated into
 * buf and returns its length; 0 when nothing in id is spelled that way
 * (retrying would change nothing); REIN_ETOOSMALL when buf is too small.
 * Whether the result names a key is rein_key_encode's to say.
 */
int keys_respell(const char *id, char *buf, size_t size);

#endif
