/*
 * squash.h — the squasher: raw output in, condensed output out.
 *
 * rein's rule: elide, never fabricate, never drop a hazard, always say what
 * was dropped and where the full output is.  The pipeline:
 *
 *   raw bytes → UTF-8 (base/utf8) → VT stripper with a column model (vt.h)
 *     → line buffer: complete / overwrite / partial lines (vt.h)
 *     → classifier: grammar → universal rules → structure (classify.h)
 *     → dedup by template (dedup.h) → emit: hazards at once, outcomes,
 *       noise as counts, last lines as a fallback (emit.h)
 *
 * Output is a sequence of lines, each either a raw (VT-stripped) line of
 * the command's output or a marker in the syntax of docs/markers.md.
 *
 * This header is the boundary the front ends use (the CLI proxy, `rein
 * squash`, the MCP server when output is over budget); the stages have
 * their own headers beside it.
 */
#ifndef REIN_SQUASH_SQUASH_H
#define REIN_SQUASH_SQUASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* A line after VT stripping, as the stages pass it along. */
typedef enum sq_line_kind {
    SQ_LINE_COMPLETE = 0, /* ended by LF */
    SQ_LINE_OVERWRITE,    /* the final frame of a line redrawn with CR/EL */
    SQ_LINE_PARTIAL,      /* no newline for SQ_PARTIAL_MS: maybe a prompt */
    SQ_LINE_BINARY,       /* non-text bytes: the raw range; text only when
                             ill-formed UTF-8 alone made it binary (vt.h) */
} sq_line_kind_t;

/* SGR colours seen on a line (bits), for the classifier. */
#define SQ_COLOUR_RED 1u
#define SQ_COLOUR_YELLOW 2u
#define SQ_COLOUR_GREEN 4u

typedef struct sq_line {
    const char *text;     /* VT-stripped UTF-8, no line terminator */
    size_t len;
    sq_line_kind_t kind;
    unsigned colours;     /* SQ_COLOUR_* */
    uint64_t lineno;      /* 1-based, in the stripped stream */
    uint64_t raw_start;   /* byte offset in the raw stream where it began */
    uint64_t raw_end;     /* ... and where it ended (exclusive) */
    uint32_t frames;      /* overwrite frames collapsed into this line */
    /* The terminal row it stands on, counted from the stream's first
     * (vt.h): a line on a row that already gave one redraws it; rows
     * reached by an absolute move are all SQ_ROW_ASIDE. */
    uint64_t row;
    /* For a row aside, which of the screen's rows the move named
     * (1-based: ESC[5;1H is 5), so that lines drawn at different ones
     * are told apart; 0 for every other row, and for an erase of the rows
     * aside (ESC[J, ESC[2J: an empty line), which blanks those from
     * screen row aside_from down (1: all of them). */
    uint32_t aside_at;
    uint32_t aside_from;
    bool cut;             /* a line longer than SQ_LINE_MAX, or (from the
                             stripper, vt.h) a piece of one */
    bool more;            /* a piece with more of its line to come */
    /* A frame of the cursor's row that later output erased or wrote over
     * before the row was handed out, and that the stripper's keep wanted
     * (vt_set_keep): it comes before the row's own line, replaces no
     * line of its row and no later one replaces it. */
    bool frame;
    /* A line longer than SQ_LINE_MAX as the squasher holds it: `text` is
     * its first `split` bytes then its last len - split, of `full` text
     * bytes in all (its middle is counted, not kept).  split 0: text is
     * the whole line. */
    size_t split;
    uint64_t full;
} sq_line_t;

/* A line longer than this leaves the VT stripper in pieces (vt.h), which
 * the squasher joins into one line again as it is shown: its first and
 * last SQ_LINE_SHOW_EDGE bytes (split, full): all the classifier reads of
 * it and, past its first piece, all that is held of it, however long it
 * is (docs/markers.md). */
#define SQ_LINE_MAX (64u * 1024u)
/* The row of text drawn after an absolute cursor move (a status bar at
 * the bottom of the screen, text after a clear): the stripper does not
 * know the screen's rows, so these stand aside from the rows it counts. */
#define SQ_ROW_ASIDE UINT64_MAX
/* A line shown longer than SQ_LINE_SHOW_MAX (or over SQ_LINE_MAX) is shown
 * as its first and its last SQ_LINE_SHOW_EDGE bytes (at UTF-8
 * boundaries), each after a `cut` marker, with an `omitted part of line`
 * marker between them naming the bytes of the middle (docs/markers.md):
 * the start of a long line says what it is (`Error: ...`, `{"error":`),
 * its end often how it ended, and its middle (a minified bundle, a JSON
 * payload) costs an agent tokens for nothing.  The edge is the
 * classifier's scan window (CLS_SCAN_MAX, which squash.c checks): every
 * error word it found in a line is in what is shown of it (but for a
 * hazard a budget shows the start of alone: SQ_HAZARD_PART_MIN).  The limit
 * leaves at least 2 KiB out of any line it cuts, more than the markers
 * cost. */
#define SQ_LINE_SHOW_EDGE (4u * 1024u)
#define SQ_LINE_SHOW_MAX (10u * 1024u)
/* Under an explicit budget (budget_bytes), a hazard line the budget has
 * no room for as the view would show it otherwise is shown as its first
 * bytes alone, after a `cut` marker and followed by an `omitted part`
 * marker naming the rest (docs/markers.md), when the view has room for at
 * least this many of them (fewer by up to 3 when a character would
 * straddle the cut); else it is only counted.  The start of a diagnostic
 * is its location and its message (`src/a/b.c:12:5: error: ...`, `Error:
 * request failed: ...`): 256 bytes hold those for all but the longest
 * paths, and are 64 tokens, small beside any budget an agent asks for.
 * A line whose cut copy would cost no less than the line is never cut. */
#define SQ_HAZARD_PART_MIN 256u
/* No newline for this long: the pending text is a partial line. */
#define SQ_PARTIAL_MS 500

/* The squasher's knobs. */
typedef struct sq_opts {
    const char *command;       /* the command line, for grammar detection */
    unsigned cols;             /* the terminal's width the output was drawn
                                  at, 0: unknown or not a terminal (vt.h:
                                  vt_set_cols) */
    const char *log_path;      /* named in the `log` marker; may be NULL */
    size_t budget_bytes;       /* 0: no budget (stream everything condensed)*/
    unsigned tail_lines;       /* fallback tail when nothing classified;
                                  0: SQ_TAIL_DEFAULT */
    const char *const *grammar_dirs; /* NULL: the default search path */
    const struct grammar_set *grammars; /* shared, loaded set (not owned);
                                           NULL: load from grammar_dirs */
    bool deferred;      /* hold everything until finish: the exit marker
                           heads the output and omissions are marked in
                           place.  Implied by budget_bytes and cap_to_input.
                           Otherwise hazards stream out as they complete. */
    bool cap_to_input;  /* budget = the VT-stripped input's size: the
                           condensed view is never larger than the output
                           it condenses (rein squash, squash_buffer) */
    uint64_t raw_base;  /* the log offset of the first byte fed: byte
                           ranges in markers are offsets in the log named
                           by log_path, for a view of a later part of it */
    uint64_t line_base; /* the lines of that log before the first byte
                           fed (its newlines): line numbers in markers,
                           and the exit marker's count, are the log's */
} sq_opts_t;

/* Copies of one hazard line (the same text) shown; more are counted in a
 * `repeat` marker (and an `at` marker names the group's distinct
 * locations when they differ).  Hazards that differ are all shown: a name
 * or a location is a fact. */
#define SQ_HAZARD_SHOW 3
/* Lines that lead into a hazard (a grammar's `lead` rule, or the
 * universal tier's: gcc's `In file included from` chain) kept for the
 * hazard line below them: the first SQ_LEAD_MAX - 1
 * and the last, so a chain keeps both its ends (gcc's last line names the
 * file compiled); the lines between are counted as noise.  An include
 * chain 32 deep is deeper than real C needs; the bound keeps a stream of
 * nothing but such lines from holding them all. */
#define SQ_LEAD_MAX 32
/* Outcome lines shown per template (progress bars, per-file summaries);
 * a grammar of category `structured` (git status/log/diff, docker ps)
 * shows every one, as the tool printed it. */
#define SQ_OUTCOME_SHOW 2
/* An output of at most this many lines in which nothing was classified is
 * shown whole (minus noise); a longer one shows its last tail_lines.  A
 * streamed view shows the whole of an output of at most this many lines
 * (and SQ_WHOLE_BYTES_MAX bytes), noise aside, whatever was classified:
 * the lines not streamed at once wait for the next line streamed, for
 * SQ_QUIET_MS without output, or for the end, and go out in their order,
 * before it (rein run's five-line traceback keeps the lines above it). */
#define SQ_SMALL_LINES 40
/* No output for this long: the lines a streamed view of a small output
 * holds go out (a server's `Listening on :3000` before it waits). */
#define SQ_QUIET_MS 2000
/* The fallback tail when opts.tail_lines is 0. */
#define SQ_TAIL_DEFAULT 5
/* A deferred view of an output of at most this many bytes (VT-stripped,
 * a newline per line) is compared with the whole output under its exit
 * marker, and the whole is shown when it is no larger: in a small output
 * the markers can cost more than the lines they stand for. */
#define SQ_WHOLE_BYTES_MAX (16u * 1024u)

typedef struct squash squash_t;

/* Receives condensed output as it is decided: one or more whole lines,
 * each ending in '\n'.  Hazards arrive as soon as their line is complete,
 * or, in output that redraws its last rows, once no move back up can
 * reach their row any more (redraw.h). */
typedef void (*sq_emit_fn)(const char *text, size_t len, void *data);

/* Creates a squasher for one command's output. */
int squash_new(const sq_opts_t *opts, sq_emit_fn emit, void *data,
               squash_t **out);
/* Feeds raw bytes (any chunking).  now_ms: a monotonic clock, so partial
 * lines and silence are judged on the caller's time (tests pass their own). */
int squash_feed(squash_t *sq, const void *data, size_t len, uint64_t now_ms);
/* Lets time pass without bytes (partial-line and silence flushes). */
int squash_tick(squash_t *sq, uint64_t now_ms);
/* Steps over `bytes` bytes of the stream, holding `lines` lines, that are
 * not fed (the middle of an output too large to read): byte and line
 * numbers go on past them, and the view marks them in place with an
 * `omitted` marker that says they were not scanned, whatever the budget.
 * Text pending on an unfinished line is ended as a line first, and what
 * follows is classified afresh (no hazard above it owns it).  A deferred
 * view only; bytes and lines are both 0 (nothing) or both positive (every
 * byte is on a line).  0, -EINVAL or -ENOMEM. */
int squash_skip(squash_t *sq, uint64_t bytes, uint64_t lines);
/* Says that lost bytes of the output never reached the log (a full disk):
 * the `log` marker then names the log as incomplete.  Before finish. */
void squash_log_lost(squash_t *sq, uint64_t lost);
/* Says what signal the command died of (0: it exited), for the exit
 * marker; without it a status of 128 + a signal is read as a death by it
 * (emit_exit).  Before finish. */
void squash_set_signal(squash_t *sq, int signo);
/* The terminal's width changed (a resize): the output after it was drawn
 * at cols (vt_set_cols). */
void squash_set_cols(squash_t *sq, unsigned cols);
/* Ends the stream: flushes everything and emits the summary (exit marker,
 * counts, log path).  exit_code: status or 128+signal, or negative for a
 * command still running (`exit ?`); duration_ms. */
int squash_finish(squash_t *sq, int exit_code, uint64_t duration_ms,
                  uint64_t now_ms);
/* Counters for --json and structuredContent. */
typedef struct sq_stats {
    uint64_t raw_bytes, raw_lines, out_bytes, out_lines;
    uint64_t hazards, errors, warnings, outcomes, noise, omitted;
} sq_stats_t;
void squash_stats(const squash_t *sq, sq_stats_t *out);
void squash_free(squash_t *sq);

/* One call for a whole captured output (rein squash, tests): deferred,
 * and capped to the input's size unless opts sets a budget. */
int squash_buffer(const sq_opts_t *opts, const void *data, size_t len,
                  int exit_code, uint64_t duration_ms, buf_t *out);

#endif
