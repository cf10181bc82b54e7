/*
 * vt.h — the VT stripper and line buffer: raw terminal bytes in, lines out.
 *
 * A program writing to a terminal draws, it does not print: a spinner is a
 * glyph, a move back to column 1 and an erase, over and over; a progress bar
 * is a carriage return and a redraw.  Reading such output as bytes glues
 * every frame together.  This stripper keeps a column model of the current
 * line (cursor position, overwrite in place, erase) so each line comes out
 * as the terminal would have shown it at the moment it was finished:
 *
 *   CR, BS, CHA/HPA (ESC[nG), CUF/CUB, EL (ESC[K, 1K, 2K), ED (ESC[J...)
 *   act on the current line;
 *   CUU/CUD/CPL/CNL/VPR, RI (ESC M), IND and NEL (ESC D, ESC E) and the
 *   cursor's save and restore (ESC 7/8, ESC[s/u) move between rows: a
 *   program that redraws its last few lines (docker, pnpm, jest, any Ink
 *   or log-update UI) goes back up to rows it drew and writes over them,
 *   and each row it changes comes out again, whole, with its row number
 *   (sq_line_t.row), so a reader can put the new text where the old was.
 *   ED 0 (ESC[J) also blanks the rows below the cursor; ED 2 (ESC[2J)
 *   blanks none: the cursor's row comes out as it stood, and the text
 *   after the clear starts a new row at the cursor's column.  A move to an
 *   absolute row (CUP, HVP, VPA) goes aside (SQ_ROW_ASIDE): the screen's
 *   height, and so which counted row it names, is not known here; the
 *   row it named comes with each line drawn there (sq_line_t aside_at).
 *   Rows are lines while the terminal's width is unknown; told it
 *   (vt_set_cols), a relative move counts a line wider than the terminal
 *   as the rows it wrapped to, as the program moving does;
 *   IL (ESC[L) hands out the cursor's row and goes on on a new row at
 *   column 1; DL (ESC[M) erases it as EL 2 does, to column 1;
 *   the alternate screen's modes (ESC[?1049h/l, ?1047, ?47) end the
 *   row the cursor is on, and the text after the switch starts a new
 *   row, at the cursor's column (leaving 1049, the one it saved), that
 *   no move goes back above;
 *   SGR colour is kept as line metadata (red / yellow / green); OSC, DCS,
 *   APC, PM and SOS strings and every other escape are swallowed, and so
 *   are BEL, DEL and the charset shifts SO and SI (`tput sgr0` ends in SI
 *   under screen, tmux and the linux console).
 *
 * Lines come out through a callback as sq_line_t (squash.h):
 *   COMPLETE   ended by LF (CRLF is one ending, not an overwrite);
 *   OVERWRITE  a line that was redrawn (CR, CHA, BS, erase), or a row
 *              drawn again after a move back up to it: only its final
 *              frame comes out, `frames` counts the ones dropped;
 *   PARTIAL    text with no newline for SQ_PARTIAL_MS (vt_tick) or at the
 *              end of the stream: maybe a prompt.  A partial line reported
 *              by vt_tick is reported again, whole, when its LF arrives;
 *   BINARY     a line whose bytes are mostly not text (NUL, other C0
 *              controls, invalid UTF-8; a line of control bytes alone too,
 *              at the end of the stream): only its raw byte range, and no
 *              text when
 *              control bytes made it binary; when ill-formed UTF-8 alone
 *              did, its repaired text (U+FFFD for each bad byte) comes
 *              with it, so the classifier can still show a hazard in it.
 * A line longer than SQ_LINE_MAX bytes comes out in pieces with `cut` set,
 * each cut at a UTF-8 boundary, and `more` set on every piece but its
 * last (the squasher joins them into one line, squash.c).  Text is
 * always valid UTF-8 (ill-formed bytes become U+FFFD).
 */
#ifndef REIN_SQUASH_VT_H
#define REIN_SQUASH_VT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "squash/squash.h"

/* The most bytes of an OSC/DCS/APC/PM/SOS string swallowed before the
 * stripper gives up on its terminator and reads text again, so a stray
 * ESC ] in binary output cannot hide the rest of the stream. */
#define VT_STRING_MAX (64u * 1024u)
/* The most CSI parameters kept; later ones are parsed and ignored. */
#define VT_PARAMS_MAX 16
/* CSI parameter values are clamped here (cursor moves, colours). */
#define VT_PARAM_VALUE_MAX 65535u
/* The column a cursor move (or REP) stops at past the end of a line, as
 * a terminal stops it at its right margin: wider than any terminal rein
 * gives a program (REIN_PTY_MAX_COLS), so a real layout keeps its
 * columns, while `ESC[65535G` cannot fill a line with blanks, push its
 * text across a cut, and a flood of `x ESC[1000C` cannot make the view
 * outgrow the output a hundredfold. */
#define VT_PAD_MAX 1024u
/* A line is binary when more than 1/VT_BINARY_CTL_RATIO of its bytes are
 * control bytes (NUL included), or more than 1/VT_BINARY_BAD_RATIO of its
 * text is U+FFFD after decoding. */
#define VT_BINARY_CTL_RATIO 10
#define VT_BINARY_BAD_RATIO 4

/* The most rows a move up goes back: the tallest terminal rein gives a
 * program (REIN_PTY_MAX_ROWS); a move further stops at that row. */
#define VT_ROWS_BACK 200u
/* The screen rows (counted from 1) that each remember, past an absolute
 * move, whether they show text aside (a redraw there is an overwrite, an
 * erase blanks them): more than the tallest terminal rein gives; rows
 * below it share the last one's memory.  A multiple of 64. */
#define VT_ASIDE_ROWS 256u
/* The text of the rows drawn last is kept in this many bytes, so that a
 * move back onto a row resumes it as the terminal shows it (a program
 * that rewrites a number in the middle of a row keeps the rest).  A row
 * longer than VT_ROW_KEEP_MAX, or one whose bytes later rows took,
 * resumes blank. */
#define VT_ROWS_KEEP_BYTES (16u * 1024u)
#define VT_ROW_KEEP_MAX (2u * 1024u)
/* The most frames of one line drawn over that come out kept (vt_set_keep):
 * a spinner whose message says a warning and changes every frame is this
 * many lines, not one per frame; later frames of the line are counted. */
#define VT_KEPT_FRAMES_MAX 8u

typedef struct vt vt_t;

/* Receives each line; the text is valid only during the call.  A negative
 * return stops the feed and is returned by vt_feed/vt_tick/vt_finish. */
typedef int (*vt_line_fn)(const sq_line_t *line, void *data);
/* Whether a frame drawn over must still come out (it says an error). */
typedef bool (*vt_keep_fn)(const sq_line_t *line, void *data);

/* Creates a stripper that hands lines to fn.  0 or -ENOMEM. */
int vt_new(vt_line_fn fn, void *data, vt_t **out);
/* The terminal's width in columns, for relative moves over lines wider
 * than it; 0 (the default): unknown, every line is one row.  May change
 * at any time (a resize): a move counts every row at the width it has
 * then, the rows drawn before too. */
void vt_set_cols(vt_t *vt, unsigned cols);
/* Asks keep about every frame of the cursor's row that is destroyed
 * while it holds text not handed out yet: erased (EL, ED, DCH, ECH), or
 * written over after the cursor went back over it (CR, BS, CHA, CUB).
 * One keep wants comes out at once as a line with `frame` set (its own
 * line number, before the row's line); one it refuses is counted in the
 * row's `frames`, as every frame drawn over is.  What is left of a frame
 * after an erase, and a frame the same as the one offered before it on
 * the line, are not asked about again; a row resumed after a move back
 * up to it holds text handed out already until it changes.  keep NULL
 * (the default): no frame comes out.  Either may change at any time. */
void vt_set_keep(vt_t *vt, vt_keep_fn keep, void *data);
/* Feeds raw bytes, any chunking; now_ms dates the last byte for partial
 * lines.  0, -ENOMEM, or the callback's negative return. */
int vt_feed(vt_t *vt, const void *data, size_t len, uint64_t now_ms);
/* Reports the pending text as a PARTIAL line once it has waited
 * SQ_PARTIAL_MS since the last byte (once per wait).  0 or negative. */
int vt_tick(vt_t *vt, uint64_t now_ms);
/* Ends the stream: pending text becomes a PARTIAL line.  0 or negative. */
int vt_finish(vt_t *vt);
/* Steps over `bytes` raw bytes holding `lines` lines that are not fed
 * (squash_skip): pending text is delivered as a line first, the escape
 * state and colours start afresh, the next line is numbered after the
 * skipped ones, its offsets counted past them, and it starts a new row
 * that no move goes back above (what the skipped bytes drew is unknown).
 * 0 or the callback's negative return. */
int vt_skip(vt_t *vt, uint64_t bytes, uint64_t lines);
/* Stream totals: raw bytes fed or skipped, lines delivered or skipped
 * (pieces of a cut line count once) and the bytes of delivered text plus one newline each (the
 * size of the stripped output, the denominator of the token ratio). */
void vt_counts(const vt_t *vt, uint64_t *raw_bytes, uint64_t *lines,
               uint64_t *text_bytes);
/* The current line, not yet ended, as it stands: *text receives its
 * bytes (valid until the next feed; they may end inside a character and
 * are ill-formed where the output was) and *binary whether it would come
 * out BINARY if it ended now.  Returns its length. */
size_t vt_pending(const vt_t *vt, const char **text, bool *binary);
/* Where the line in progress stands: *row receives the cursor's row
 * (SQ_ROW_ASIDE after an absolute move, *at then which of the screen's
 * rows, as sq_line_t aside_at; 0 otherwise), *fresh whether no line came
 * from that row yet (it is below all that did).  Returns whether the row
 * shows something not handed out yet: text on a new row or one aside, or
 * a change to a row drawn before. */
bool vt_cursor_row(const vt_t *vt, uint64_t *row, uint32_t *at, bool *fresh);
/* Appends to out the text row `row` shows now, as the stripper keeps it
 * (VT_ROWS_KEEP_BYTES): its bytes as the line held them, which may be
 * ill-formed where the output was.  Returns 1; 0 when the row's text is
 * not kept (a row too long, one later rows' text took the place of, a
 * row aside, a binary one), or -ENOMEM. */
int vt_row_text(const vt_t *vt, uint64_t row, buf_t *out);
/* How often text was drawn over or erased so far, on any line: a
 * character written where one stood (after CR, BS or a cursor move back),
 * an erase that took text away, or a row drawn again. */
uint64_t vt_drawn_over(const vt_t *vt);
void vt_free(vt_t *vt);

#endif
