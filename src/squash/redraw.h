/*
 * redraw.h — a row's last frame: the lines of rows a program may draw
 * again are held, and a frame drawn over is handed on as such.
 *
 * The stripper (vt.h) hands out a row each time the cursor leaves it
 * changed, so a program that goes back up and redraws its last rows
 * (docker's layer bars, BuildKit, pnpm, any Ink or log-update UI) gives
 * one line per row per frame: a pull of three layers, fifty lines of
 * `Downloading [==>  ]` for three the terminal ends up showing.  Only a
 * row's last frame is what the terminal shows; the earlier ones are
 * progress, as the frames of a carriage-return redraw inside one line are.
 *
 * So lines pass through here on their way to the classifier.  A line on a
 * row that a move back up may still reach is held (in line order, behind
 * any held before it); when that row is drawn again, the held line is
 * replaced: it is handed on at once, marked `redrawn` and out of line
 * order, unless the `keep` predicate wants it (a frame that says an
 * error), when it waits for its turn, marked all the same; the new frame
 * counts it (`frames`).  The other lines leave in the order they came,
 * each once its row is out of reach, once the hold passes its bounds, or
 * at a flush (the end of the stream, a skipped middle, a quiet spell or
 * a prompt in a streamed view).
 *
 * How far back is in reach: `reach` rows above the lowest row drawn,
 * where reach is the deepest redraw seen lately (a move back over three
 * rows makes it three) and at least the `base` it was made with; twice
 * as many rows with no redraw bring it back to the base.  A view that is
 * sent only at the end (squash.h: deferred) passes REDRAW_REACH, so that
 * a block printed once and redrawn afterwards (log-update draws its first
 * frame as plain lines) keeps only its last frame; a streamed view
 * passes 0, so that output which never redraws is not held at all and a
 * hazard line still goes out the moment it ends.  A row aside
 * (SQ_ROW_ASIDE: a status bar drawn at an absolute row) is held until as
 * many rows as `reach` came after it, or until it is drawn again, or an
 * erase from a status bar's row down takes it (a clear of the whole
 * screen does not: what it showed was shown).
 *
 * Rows are the stripper's: told the terminal's width (vt_set_cols), it
 * counts a line wider than it as the rows it wrapped to, as a program
 * redrawing them does; not told, a move over one goes a row too far, and
 * the line it lands on is taken for a frame of the block.
 */
#ifndef REIN_SQUASH_REDRAW_H
#define REIN_SQUASH_REDRAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "squash/squash.h"
#include "squash/vt.h"

/* The reach of a deferred view: every row a move of the stripper reaches
 * (the tallest terminal rein gives a program). */
#define REDRAW_REACH VT_ROWS_BACK
/* The most lines held at once (a power of two), frames replaced but not
 * yet out of the ring among them; at the bound, when those are half the
 * ring their places are closed up, else the oldest line leaves.  Above REDRAW_REACH, so that
 * a full screen of rows and the frames drawn over them wait together. */
#define REDRAW_MAX_LINES 512u
/* The most text bytes held at once, likewise.  A line of more than this
 * (it comes in pieces, vt.h) is never held: the lines before it leave,
 * then it passes. */
#define REDRAW_MAX_BYTES (256u * 1024u)

typedef struct redraw redraw_t;

/* How a line leaves the hold. */
typedef enum redraw_how {
    REDRAW_SHOWN = 0, /* no later frame of its row replaced it: in order */
    REDRAW_KEPT,      /* replaced, but `keep` wanted it (or the
                         stripper's did: sq_line_t frame): in line order */
    REDRAW_DROPPED,   /* replaced: the moment it is, out of line order */
} redraw_how_t;

/* Receives each line as it leaves, and how.  The text is valid only
 * during the call.  A negative return stops and is returned by
 * redraw_put/redraw_flush. */
typedef int (*redraw_fn)(const sq_line_t *line, redraw_how_t how,
                         void *data);
/* Whether a replaced frame must still come in line order (it says an
 * error); NULL: none. */
typedef bool (*redraw_keep_fn)(const sq_line_t *line, void *data);

/* A hold handing lines to fn, with `base` rows in reach from the start
 * (0 or REDRAW_REACH, see above; at most REDRAW_REACH).  0, -EINVAL or
 * -ENOMEM. */
int redraw_new(unsigned base, redraw_fn fn, redraw_keep_fn keep, void *data,
               redraw_t **out);
/* Takes the stripper's next line: it may replace a held one, be held, or
 * pass at once; lines that leave go to fn.  A frame the stripper kept
 * (sq_line_t frame, vt_set_keep) replaces nothing: it leaves as
 * REDRAW_KEPT in its turn.  0, -ENOMEM, or fn's negative
 * return. */
int redraw_put(redraw_t *rd, const sq_line_t *line);
/* Hands every held line to fn, in order.  0 or fn's negative return. */
int redraw_flush(redraw_t *rd);
/* Lines marked redrawn so far. */
uint64_t redraw_count(const redraw_t *rd);
void redraw_free(redraw_t *rd);

#endif
