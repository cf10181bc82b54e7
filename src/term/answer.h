/*
 * answer.h — rein as the terminal: replies to the queries a program writes
 * to its terminal and then waits on (where is the cursor, what terminal is
 * this), where nobody else can answer them.
 *
 * A program on a PTY that rein holds has no terminal emulator behind it:
 * IPython (prompt_toolkit) asks for the cursor position (CSI 6 n) before
 * every prompt and waits about a second for a reply that never comes;
 * fish, neovim, crossterm and bubbletea programs ask for the device
 * attributes (CSI c) and more.  A term_answer_t watches the program's
 * output and, like tmux, answers the queries a real terminal answers,
 * from a screen model of its own (libvterm's state layer, fed every byte
 * up to the query, so a cursor report says where the output before it
 * left the cursor).
 *
 * What is answered, and with what identity (docs/serve.md says it too):
 *
 *   CSI 5 n        status          CSI 0 n (ready)
 *   CSI 6 n        cursor position CSI row ; col R, 1-based, relative to
 *                                  the scroll region's top in origin mode
 *   CSI c, CSI 0 c primary DA      CSI ? 1 ; 2 c (VT100 with advanced
 *                                  video, as tmux and libvterm answer)
 *   CSI > c        secondary DA    CSI > 0 ; 0 ; 0 c
 *   CSI > q        XTVERSION       DCS > | rein VERSION ST
 *   CSI 18 t       text area size  CSI 8 ; rows ; cols t
 *   OSC 10 ; ?     foreground      OSC 10 ; rgb:f0f0/f0f0/f0f0, then the
 *   OSC 11 ; ?     background      OSC 11 ; rgb:0000/0000/0000  query's own
 *                                  terminator (the screen model's
 *                                  defaults: light text on black)
 *
 * Everything else goes unanswered, as on a terminal without the feature:
 * kitty keyboard flags (CSI ? u: rein sends keys in the legacy encoding,
 * rein_key_encode), DECRQM, DECRQSS, XTGETTCAP, other OSC colours.
 * Programs that ask those follow them with a primary DA and take its
 * reply, coming first, for "not supported".
 *
 * At most TERM_ANSWER_BURST replies go out per TERM_ANSWER_WINDOW_MS: a
 * program printing queries in a loop (or `cat` of a binary file) cannot
 * make rein flood its input.  Replies are handed to the callback in the
 * order of the queries; the caller writes each one whole, after whatever
 * input is already queued, so a reply never lands inside other input.
 */
#ifndef REIN_TERM_ANSWER_H
#define REIN_TERM_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vterm.h>

/* Replies at most per window; queries past them are dropped. */
#define TERM_ANSWER_BURST 64
#define TERM_ANSWER_WINDOW_MS 1000
/* Parameter bytes of a control sequence kept; a longer one is no query,
 * and the screen model never gets it (csi_end in answer.c). */
#define TERM_ANSWER_CSI_MAX 64
/* Bytes of an OSC string kept: "11;?" fits; longer ones (titles,
 * hyperlinks, clipboard) are skipped to their end. */
#define TERM_ANSWER_OSC_MAX 16
/* Bytes of printed text held back from the screen model until the next
 * output or read, so that a combining mark that comes in the next read
 * reaches it with its character: a character and the marks a libvterm
 * cell takes (6 code points of at most 4 bytes). */
#define TERM_ANSWER_TAIL_MAX 24
/* The most a REP (CSI n b) repeats; a row is shorter. */
#define TERM_ANSWER_REP_MAX 65535u
/* Stays on the alternate screen remembered (term_answer_alt_spans): more
 * than a model's poll sees in any real session (a pager or an editor
 * opened and closed this many times between two reads). */
#define TERM_ANSWER_ALT_SPANS 64
/* The longest reply. */
#define TERM_ANSWER_REPLY_MAX 64

typedef struct term_answer term_answer_t;

/* Writes one whole reply to the program's terminal. */
typedef void (*term_answer_fn)(const void *reply, size_t n, void *data);

/* A responder for a terminal of cols x rows.  fn NULL: no replies, only
 * the screen model (term_answer_vterm).  0, -EINVAL or -ENOMEM. */
int term_answer_new(unsigned cols, unsigned rows, term_answer_fn fn,
                    void *data, term_answer_t **out);
/* NULL is a no-op. */
void term_answer_free(term_answer_t *a);
/* Reads the program's output (any split: a query may span calls) and
 * answers the queries in it through the callback, in order. */
void term_answer_feed(term_answer_t *a, const void *data, size_t n);
/* The terminal's new size. */
void term_answer_resize(term_answer_t *a, unsigned cols, unsigned rows);
/* The screen model, fed the output so far with what would crash or hang
 * libvterm 0.1.4 left out or made here (a CSI of more than 16 arguments,
 * REP, C1 controls: answer.c).  A caller may obtain its screen layer
 * before the first feed, and read it; feed it only through
 * term_answer_feed.  Call it again before each read: the model is handed
 * the last text printed only then (TERM_ANSWER_TAIL_MAX), or with the next
 * output. */
VTerm *term_answer_vterm(term_answer_t *a);
/* Whether the program's output so far left the terminal on its alternate
 * screen (DECSET 47, 1047 or 1049, not reset since): the screen full-screen
 * programs (vim, less, watch, fzf) draw on and leave when they end. */
bool term_answer_alt(const term_answer_t *a);
/* Where the stay on the alternate screen still going began (the ESC of
 * the switch, an output offset); UINT64_MAX when that screen is not up. */
uint64_t term_answer_alt_since(const term_answer_t *a);
/* The stays on the alternate screen that ended after output offset
 * `after` (byte offsets from the first byte fed), oldest first, into
 * spans[i][0] (the ESC of the switch to it) and spans[i][1] (the byte
 * after the switch back): at most max, and only the last
 * TERM_ANSWER_ALT_SPANS of them are kept.  Returns how many. */
size_t term_answer_alt_spans(const term_answer_t *a, uint64_t after,
                             uint64_t (*spans)[2], size_t max);
/* Replies given so far; *dropped (may be NULL): queries left unanswered
 * because the burst was spent. */
uint64_t term_answer_count(const term_answer_t *a, uint64_t *dropped);

#endif
