/*
 * loggrep.h — read_output's grep over a session's log file.
 *
 * A log is lines ending at '\n'; the last one may have none.  A capped
 * log has one dropped range [ha, hb) (spool.h) that holds no line: a line
 * cut by it ends where it starts, and lines go on from its end.  Of a line
 * at most LOG_GREP_LINE_MAX bytes are kept (the rest is read past, so a
 * line of gigabytes costs no memory), and '\r's at the end of what is kept
 * are dropped before it is matched.  Lines are numbered from 1 at the
 * log's start, the dropped ones not counted.  Nothing past `size` (the
 * log's size when the call began) is read, so a log still growing is
 * searched as it was.
 *
 * Two ways, with the same lines, the same numbers and so the same matches:
 * - forward (tail LOG_GREP_ALL): every match among the lines that start in
 *   [lo, hi), oldest first, until the budget is full;
 * - backward (a tail): the last `tail` matches among the lines that start
 *   before hi, found by reading the log back from there, a block at a
 *   time, and stopping at the tail-th match; they are given oldest first.
 *   The lines before the earliest match are then read once more, only to
 *   count them (buf_count, GBs a second) for the matches' numbers.
 *
 * Either way a grep searches at most time_ms (LOG_GREP_NO_TIME_LIMIT: no
 * limit; the clock starts at the first line searched, so counting lines
 * is not in it) and then stops at a line's start, having searched at
 * least one line: forward, every line before `stopped` was searched and none from
 * there; backward, every line from `stopped` up to hi and none before it.
 */
#ifndef REIN_EXEC_LOGGREP_H
#define REIN_EXEC_LOGGREP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* The bytes a grep reads at a time, forward and backward. */
#define LOG_GREP_BLOCK (64u * 1024u)
/* The bytes of one line kept and matched; the rest is read past. */
#define LOG_GREP_LINE_MAX (64u * 1024u)
/* log_grep_t.tail: every match, searched forward. */
#define LOG_GREP_ALL UINT64_MAX
/* log_grep_t.time_ms: no time limit. */
#define LOG_GREP_NO_TIME_LIMIT UINT64_MAX

typedef struct log_grep {
    /* In. */
    const char *pattern; /* PCRE2, as session_pattern_new takes it */
    uint64_t lo, hi;     /* forward: lines that start in [lo, hi); backward
                            (lo unused): lines that start before hi */
    uint64_t size;       /* nothing at or past it is read; hi <= size */
    uint64_t tail;       /* LOG_GREP_ALL, or the last `tail` matches */
    size_t budget;       /* the bytes of output at most */
    bool hole;           /* [ha, hb) was dropped from the log */
    uint64_t ha, hb;
    uint64_t time_ms; /* the most it runs; 0: one line a call */
    /* A terminal's log: each line is matched and shown as the terminal
     * showed it (squash/vt.h: escape sequences gone, a line drawn over at
     * its final frame), as results show it (vtview.h); a line of control
     * bytes matches nothing.  Numbers and offsets stay the log's. */
    bool as_shown;
    /* Out. */
    uint64_t from, to; /* the lines searched are those that start here */
    /* Where it stopped for time (0 when it did not): forward the first
     * line not searched, backward the earliest searched (byte, number). */
    uint64_t stopped, stopped_line;
    uint64_t found;  /* matches found (backward: at most tail) */
    bool truncated;  /* a match was left out for the budget */
} log_grep_t;

/*
 * Appends the matches of fd as "<line number>: <line>\n" to out, within
 * g->budget bytes: forward the first that fit, backward the last (the
 * newest that fit, oldest first).  0, -EINVAL (a bad pattern: why in err),
 * REIN_EPATTERN_LIMIT (a line cost the pattern its match limit: err says
 * so and names the line), -ENOMEM or a read's -errno.
 */
int log_grep(int fd, log_grep_t *g, buf_t *out, char *err, size_t errlen);

/*
 * The end (past its '\n', or `size`) of the line that holds byte at-1 —
 * the last line that starts before `at` — in *end; at itself when at is 0,
 * a line's start, or in the dropped range [ha, hb) (hole).  0 or -errno.
 */
int log_line_end(int fd, uint64_t size, bool hole, uint64_t ha, uint64_t hb,
                 uint64_t at, uint64_t *end);

#endif
