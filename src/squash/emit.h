/*
 * emit.h — rein's markers: the only lines of condensed output that are not
 * the command's own (docs/markers.md is their specification).
 *
 * Every emit_<kind> function appends exactly one marker line, ending in
 * '\n', to out.  A marker carries counts, line and byte ranges, templates
 * with their count, durations, exit statuses and paths, and nothing else:
 * no prose about the output, so it can never misreport it.
 *
 * A marker is trusted only if no raw line can pass for one, so the raw
 * lines shown beside markers go through emit_raw, which escapes a line
 * that begins, visibly, with `[rein]`.
 */
#ifndef REIN_SQUASH_EMIT_H
#define REIN_SQUASH_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "squash/classify.h"
#include "squash/dedup.h"

/* Every marker starts with this. */
#define EMIT_PREFIX "[rein] "
/* A raw line that could be read as a marker is shown after this prefix
 * (emit_raw_escaped, docs/markers.md "Raw lines that look like markers"). */
#define EMIT_ESCAPE "[raw] "
/* A list of line numbers shows at most this many ranges, then "+N more":
 * the runs a dedup group keeps. */
#define EMIT_RANGES_MAX DEDUP_RUNS_MAX

/* [rein] exit N · 2.31s · 1400 lines   (duration left out when 0),
 * [rein] signal SIGKILL · exit 137 · ... when the command died of a
 * signal, or [rein] exit ? · ... when N is negative: the command is still
 * running.  signo: the signal it died of, 0 when it exited (an `exit 130`
 * is no SIGINT), or negative when unknown: then a status of 128 + a
 * signal is taken for a death by it, as the shell's $? is read. */
int emit_exit(buf_t *out, int exit_code, int signo, uint64_t duration_ms,
              uint64_t lines);
/* [rein] omitted N lines (lines A-B[, bytes X-Y][; H hazards]) */
int emit_omitted(buf_t *out, uint64_t n, uint64_t first, uint64_t last,
                 const uint64_t *bytes, uint64_t hazards);
/* [rein] omitted N lines   (a stream's total, when ranges are unknown) */
int emit_omitted_total(buf_t *out, uint64_t n);
/* "[rein] omitted part of line N (bytes A-B)": the part of a long line
 * not shown (its middle, between its first and last bytes shown, or the
 * rest of a line a piece of it was shown of; raw offsets, half-open). */
int emit_omitted_part(buf_t *out, uint64_t lineno, uint64_t a, uint64_t b);
/* [rein] omitted N lines (lines A-B, bytes X-Y; not scanned): a range of
 * the log the view did not read (squash_skip), so whether it holds a
 * hazard is unknown. */
int emit_omitted_unscanned(buf_t *out, uint64_t n, uint64_t first,
                           uint64_t last, uint64_t a, uint64_t b);
/* [rein] noise N lines (progress a, blank b, ...) */
int emit_noise(buf_t *out, const uint64_t counts[CLS_NOISE_REASONS]);
/* [rein] repeat N× "template" (lines 1-4, 7, 9[, +M more]): the runs of
 * member line numbers (at most EMIT_RANGES_MAX are listed), and `more`
 * members past them. */
int emit_repeat(buf_t *out, uint32_t count, const char *tmpl,
                const dedup_run_t *runs, size_t nruns, uint64_t more);
/* [rein] at f:1:2, f:3:4[, +K more] — the distinct locations of a hazard
 * group (DEDUP_LOCATIONS_MAX at most), and the members at others */
int emit_at(buf_t *out, const dedup_t *d, uint32_t group);
/* [rein] binary N bytes (bytes A-B) */
int emit_binary(buf_t *out, uint64_t start, uint64_t end);
/* [rein] cut line L at N bytes — the pieces follow as raw text */
int emit_cut(buf_t *out, uint64_t lineno, size_t at);
/* [rein] prompt (no newline for 500ms) */
int emit_prompt(buf_t *out);
/* [rein] hangup SIGHUP · terminal read in raw mode for 1.00s, stdin at
 * its end — `rein run` hung up the command's terminal: its input is over
 * and it waits for keys nobody can press (signo SIGHUP, kill_after_ms 0);
 * or, when that did not end the wait, [rein] hangup SIGTERM · terminal
 * read in raw mode 1.00s after SIGHUP; SIGKILL after 2.00s. */
int emit_hangup(buf_t *out, int signo, uint64_t waited_ms,
                uint64_t kill_after_ms);
/* [rein] background processes the command left running were ended with
 * it — `rein run`: the command exited and rein ended what it had left
 * running (`server &`, nohup, setsid), as it ends whatever a run leaves. */
int emit_background(buf_t *out);
/* [rein] background processes the command left running were killed by
 * the terminal's hangup as it exited — `rein run` on a terminal: the
 * kernel's SIGHUP to the terminal's foreground group, as the command (its
 * session's leader) exited, killed jobs of it that did not ignore it
 * (`server &` in `sh -c`). */
int emit_background_hangup(buf_t *out);
/* [rein] ended · WHY — `rein run`: rein ended the run for a reason that was
 * neither the command's doing nor the proxy's own answer to a signal or a
 * wait (an escape from the run's boundary); why says which. */
int emit_ended(buf_t *out, const char *why);
/* [rein] running · 1m05s · 1400 lines — `rein run`'s status line on a
 * terminal (rewritten in place, erased before anything else is written):
 * how long the command has run and the lines it wrote.  No newline: the
 * caller draws it.  The time is whole seconds: `42s`, `3m05s`, `2h07m`. */
int emit_running(buf_t *out, uint64_t elapsed_ms, uint64_t lines);
/* [rein] danger CMD (pattern: ID) — DECISION — a dangerous command line
 * and what was decided (`not run`, `confirmed, running`, ...; or, in the
 * question `rein run` asks on the terminal, what the pattern means).  The
 * command is shown whole, on the marker's one line: each control
 * character in it (a newline of a shell script, an escape) is shown as a
 * space, as `rein ps` shows commands. */
int emit_danger(buf_t *out, const char *command, const char *pattern,
                const char *decision);
/* What stat() saw of one path a narrated command names (narrate.c
 * gathers it, before and after the command): the facts a `narrate`
 * marker may state. */
typedef struct emit_file {
    bool exists;
    bool dir, symlink;
    uint64_t bytes;    /* a file's size; a directory's: of the regular
                          files under it */
    uint64_t files;    /* a directory's regular files */
    bool partial;      /* the walk under a directory stopped early: the
                          counts are "at least" */
    unsigned mode;     /* permission bits (07777) */
    unsigned uid, gid;
} emit_file_t;

/* What a narrated command did to one path, as narrate.c judged it from
 * the before and after of emit_file_t; each is one wording of the marker
 * (docs/markers.md). */
typedef enum emit_narrate_kind {
    EMIT_NARRATE_COPIED,      /* cp, mv: SRC → PATH[/] (SIZE[, replaced]
                                 [, source removed]) */
    EMIT_NARRATE_LINKED,      /* ln: PATH → SRC (symlink | hard link) */
    EMIT_NARRATE_UNCHANGED,   /* cp, mv, ln: SRC → PATH: unchanged */
    EMIT_NARRATE_NOT_CREATED, /* SRC → PATH: not created (with a source),
                                 PATH not created (mkdir, touch, truncate) */
    EMIT_NARRATE_REMOVED,     /* rm, rmdir: removed PATH[/] (SIZE) */
    EMIT_NARRATE_ABSENT,      /* rm, rmdir: PATH did not exist */
    EMIT_NARRATE_KEPT,        /* rm, rmdir: PATH still exists */
    EMIT_NARRATE_MISSING,     /* chmod, chown, chgrp: PATH does not exist */
    EMIT_NARRATE_DIR_MADE,    /* mkdir: created PATH/ */
    EMIT_NARRATE_DIR_EXISTED, /* mkdir: PATH/ already existed */
    EMIT_NARRATE_TOUCHED,     /* touch: created | updated PATH (SIZE) */
    EMIT_NARRATE_MODE,        /* chmod: PATH 0644 → 0600 */
    EMIT_NARRATE_OWNER,       /* chown, chgrp: PATH U:G → U:G */
    EMIT_NARRATE_RESIZED,     /* truncate: PATH SIZE | new → SIZE */
} emit_narrate_kind_t;

typedef struct emit_narrate {
    emit_narrate_kind_t kind;
    const char *cmd;     /* the command's name: "cp", "rmdir", "chgrp" */
    const char *src;     /* cp, mv, ln: the source operand as written */
    const char *path;    /* the path changed, as written (DIR/NAME for an
                            operand copied into a directory) */
    bool symbolic;       /* ln -s */
    bool source_removed; /* mv: the source was there before */
    emit_file_t before, after;
} emit_narrate_t;

/* [rein] narrate CMD: ... — one wording of emit_narrate_kind_t for one
 * path.  SIZE is "4.2 KiB" (emit_size), "3 files, 12.0 KiB" for a
 * directory ("at least 3 files, ..." when its walk stopped early), or
 * "symlink".  One line whatever the paths hold: each control character
 * in them (a newline in a file name, an escape) is shown as a space, as
 * emit_danger shows a command. */
int emit_narrate(buf_t *out, const emit_narrate_t *n);
/* [rein] narrate CMD: N more operands not narrated */
int emit_narrate_more(buf_t *out, const char *cmd, size_t more);
/* Formats a byte count the way markers do: "812 B", "4.2 KiB", "1.0 MiB"
 * (binary units, one decimal, up to TiB). */
void emit_size(uint64_t bytes, char *out, size_t size);
/* [rein] log PATH, or [rein] log PATH (incomplete: N bytes lost) when
 * lost bytes of the output never reached it */
int emit_log(buf_t *out, const char *path, uint64_t lost);

/* Whether a raw line of n bytes must be shown after EMIT_ESCAPE: its
 * first visible text, past any EMIT_ESCAPE prefixes, is `[rein]`.  What
 * is not visible: blanks, control characters, escape sequences (CSI,
 * OSC, DCS and the like, for text not yet VT-stripped) and the Unicode
 * spaces and format characters that print nothing (U+00A0, U+200B,
 * U+FEFF, ...).  The prefixes count so that the escape can be undone:
 * `[raw] [rein] x` printed by a command is shown `[raw] [raw] [rein] x`. */
bool emit_raw_escaped(const char *s, size_t n);
/* Appends a raw line of the command's output and '\n' (the line has
 * none): as it is, or after EMIT_ESCAPE when emit_raw_escaped says so.
 * The only way a raw line reaches a view that has markers in it. */
int emit_raw(buf_t *out, const char *s, size_t n);

#endif
