/*
 * vtview.h — a terminal's output as the text it shows, poll by poll.
 *
 * A program on a terminal colours its words, redraws its progress bar in
 * place and hides the cursor while it works; rein gives it a real terminal
 * type, so the bytes it writes are full of escape sequences that a
 * terminal acts on and a reader of the bytes has to see through.  A view
 * feeds those bytes through the VT stripper (vt.h) and gives, at each
 * take, what they put on the terminal since the last one:
 *
 *   - each line ended since, as the terminal showed it when it ended:
 *     colours and other escape sequences gone, a line drawn over (CR, BS,
 *     erase, a cursor move) only in its final frame, CRLF as one ending;
 *   - each row a program went back up to and drew again (vt.h) in its
 *     place, at its last frame, once: a take gives the rows that changed
 *     since a take gave them as one piece of the screen, from the first
 *     to the last in screen order, the rows between them as they stand
 *     (kept by the stripper, vt_row_text), and nothing of the rows drawn
 *     the same around them; blank rows at and below the cursor (a frame
 *     erased to be drawn again) wait until written, or passed by the
 *     cursor;
 *   - the line still being written, as it stands: a prompt, a progress
 *     bar at its latest frame.  When the next take finds that line grown
 *     from what was shown (more text after a prompt, the echo of what was
 *     typed), it gives only the new text, so each character is read once;
 *     when the line was drawn over, it gives the line again whole;
 *   - a line that is mostly control bytes (a binary file on the
 *     terminal) as the squasher's binary marker, `[rein] binary N bytes
 *     (bytes A-B)`, never as the bytes.
 *
 * Lines that could pass for a marker are shown after `[raw] `
 * (emit_raw_escaped).  Byte offsets are the stream's: a view must be fed,
 * or stepped over (vtview_skip), every byte of the stream in order, from
 * its first.  A program that draws a whole screen belongs to libvterm
 * (term/answer.h).
 */
#ifndef REIN_SQUASH_VTVIEW_H
#define REIN_SQUASH_VTVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Bytes of room a view keeps between takes for the lines it collects:
 * a take of more (a flood between two polls) gives its memory back, so
 * that 64 idle sessions do not each hold their largest poll. */
#define VTVIEW_KEEP_BYTES (64u * 1024u)

typedef struct vtview vtview_t;

/* A view of a stream from its first byte.  0 or -ENOMEM. */
int vtview_new(vtview_t **out);
/* The terminal's width the output is drawn at (vt.h: vt_set_cols); 0,
 * the default: unknown. */
void vtview_set_cols(vtview_t *v, unsigned cols);
/* NULL is a no-op. */
void vtview_free(vtview_t *v);
/* Feeds the stream's next n bytes.  0 or -ENOMEM. */
int vtview_feed(vtview_t *v, const void *data, size_t n);
/* Steps over the stream's next `bytes` bytes, holding `lines` newlines,
 * that the reader saw another way (a screen, a condensed view): nothing
 * of them, nor of the line in progress before them, is shown; the line
 * after them starts afresh.  0 or -ENOMEM. */
int vtview_skip(vtview_t *v, uint64_t bytes, uint64_t lines);
/* Ends the stream: the line in progress ends where it stands, for the
 * next take (a binary one as its marker, the rest of a cut line; no line
 * end is added).  0 or -ENOMEM. */
int vtview_finish(vtview_t *v);
/* The stream offset of the next byte to feed. */
uint64_t vtview_offset(const vtview_t *v);
/* Appends to out what the bytes fed since the last take show (above);
 * *drawn_over (may be NULL) receives whether any of them drew over or
 * erased text (vt_drawn_over): the view shows only the last frame of what
 * they drew.  0 or -ENOMEM. */
int vtview_take(vtview_t *v, buf_t *out, bool *drawn_over);

/* The bytes a view holds between takes for the lines it collects: at
 * most VTVIEW_KEEP_BYTES. */
size_t vtview_held(const vtview_t *v);
/* The last take was not shown to the reader (a condensed view was):
 * the next one gives the line in progress whole, not only what it grew. */
void vtview_unshow(vtview_t *v);

#endif
