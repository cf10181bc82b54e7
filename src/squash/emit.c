/*
 * emit.c — marker formatting (see emit.h, docs/markers.md).
 *
 * Kept in one file so the syntax has one implementation: a test checks
 * every marker produced here against the documented regular expression.
 * The escape of raw lines that could pass for a marker lives here too,
 * beside the prefix it protects.
 */
#include "squash/emit.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "squash/squash.h"

int emit_exit(buf_t *out, int exit_code, int signo, uint64_t duration_ms,
              uint64_t lines)
{
    /* 128+N is how a death by signal N reaches a status, as in the
     * shell's $?: the signal marker names it and still gives the status.
     * Where the status is all that is known, that is how it is read. */
    if (signo < 0)
        signo = exit_code > 128 && exit_code < 128 + NSIG ? exit_code - 128
                                                          : 0;
    const char *sig = signo > 0 && signo < NSIG && exit_code >= 0
                          ? sigabbrev_np(signo)
                          : NULL;
    int rc;
    if (sig)
        rc = buf_printf(out, EMIT_PREFIX "signal SIG%s · exit %d", sig,
                        exit_code);
    else if (exit_code < 0) /* still running: no status yet */
        rc = buf_printf(out, EMIT_PREFIX "exit ?");
    else
        rc = buf_printf(out, EMIT_PREFIX "exit %d", exit_code);
    if (rc == 0 && duration_ms)
        rc = buf_printf(out, " · %" PRIu64 ".%02" PRIu64 "s",
                        duration_ms / 1000, (duration_ms % 1000) / 10);
    if (rc == 0)
        rc = buf_printf(out, " · %" PRIu64 " line%s\n", lines,
                        lines == 1 ? "" : "s");
    return rc;
}

int emit_omitted(buf_t *out, uint64_t n, uint64_t first, uint64_t last,
                 const uint64_t *bytes, uint64_t hazards)
{
    int rc = first == last
                 ? buf_printf(out, EMIT_PREFIX "omitted %" PRIu64 " line%s (line %" PRIu64,
                              n, n == 1 ? "" : "s", first)
                 : buf_printf(out, EMIT_PREFIX "omitted %" PRIu64 " lines (lines %" PRIu64
                              "-%" PRIu64, n, first, last);
    if (rc == 0 && bytes)
        rc = buf_printf(out, ", bytes %" PRIu64 "-%" PRIu64, bytes[0], bytes[1]);
    if (rc == 0 && hazards)
        rc = buf_printf(out, "; %" PRIu64 " hazard%s", hazards,
                        hazards == 1 ? "" : "s");
    if (rc == 0)
        rc = buf_append(out, ")\n", 2);
    return rc;
}

int emit_omitted_total(buf_t *out, uint64_t n)
{
    return buf_printf(out, EMIT_PREFIX "omitted %" PRIu64 " line%s\n", n,
                      n == 1 ? "" : "s");
}

int emit_omitted_part(buf_t *out, uint64_t lineno, uint64_t a, uint64_t b)
{
    return buf_printf(out,
                      EMIT_PREFIX "omitted part of line %" PRIu64
                                  " (bytes %" PRIu64 "-%" PRIu64 ")\n",
                      lineno, a, b);
}

int emit_omitted_unscanned(buf_t *out, uint64_t n, uint64_t first,
                           uint64_t last, uint64_t a, uint64_t b)
{
    int rc = first == last
                 ? buf_printf(out, EMIT_PREFIX "omitted %" PRIu64 " line%s (line %" PRIu64,
                              n, n == 1 ? "" : "s", first)
                 : buf_printf(out, EMIT_PREFIX "omitted %" PRIu64 " lines (lines %" PRIu64
                              "-%" PRIu64, n, first, last);
    /* Without the clause, a range with no `; N hazards` would say that
     * none were there; nobody looked. */
    if (rc == 0)
        rc = buf_printf(out, ", bytes %" PRIu64 "-%" PRIu64 "; not scanned)\n",
                        a, b);
    return rc;
}

int emit_noise(buf_t *out, const uint64_t counts[CLS_NOISE_REASONS])
{
    uint64_t total = 0;
    for (int i = 0; i < CLS_NOISE_REASONS; i++)
        total += counts[i];
    int rc = buf_printf(out, EMIT_PREFIX "noise %" PRIu64 " line%s (", total,
                        total == 1 ? "" : "s");
    const char *sep = "";
    for (int i = 0; rc == 0 && i < CLS_NOISE_REASONS; i++)
        if (counts[i]) {
            rc = buf_printf(out, "%s%s %" PRIu64, sep,
                            classify_noise_name((cls_noise_t)i), counts[i]);
            sep = ", ";
        }
    if (rc == 0)
        rc = buf_append(out, ")\n", 2);
    return rc;
}

/* "1-4, 7, 9" with at most EMIT_RANGES_MAX ranges, then ", +N more"
 * (members, not ranges).  O(ranges): a group keeps no more runs than a
 * marker lists, and counts the members past them. */
static int emit_ranges(buf_t *out, const dedup_run_t *r, size_t n,
                       uint64_t more)
{
    int rc = 0;
    size_t i = 0;
    for (; i < n && rc == 0; i++) {
        if (i == EMIT_RANGES_MAX)
            break;
        rc = r[i].last > r[i].first
                 ? buf_printf(out, "%s%" PRIu64 "-%" PRIu64, i ? ", " : "",
                              r[i].first, r[i].last)
                 : buf_printf(out, "%s%" PRIu64, i ? ", " : "", r[i].first);
    }
    for (size_t j = i; j < n; j++)
        more += r[j].last - r[j].first + 1;
    if (rc == 0 && more)
        rc = buf_printf(out, ", +%" PRIu64 " more", more);
    return rc;
}

int emit_repeat(buf_t *out, uint32_t count, const char *tmpl,
                const dedup_run_t *runs, size_t nruns, uint64_t more)
{
    bool one = more == 0 && nruns == 1 && runs[0].first == runs[0].last;
    int rc = buf_printf(out, EMIT_PREFIX "repeat %u× \"%s\" (line%s ", count,
                        tmpl, one ? "" : "s");
    if (rc == 0)
        rc = emit_ranges(out, runs, nruns, more);
    if (rc == 0)
        rc = buf_append(out, ")\n", 2);
    return rc;
}

int emit_at(buf_t *out, const dedup_t *d, uint32_t group)
{
    int rc = buf_append_str(out, EMIT_PREFIX "at ");
    if (rc == 0)
        rc = dedup_locations(d, group, 0, out);
    uint64_t more = dedup_locations_more(d, group);
    if (rc == 0 && more)
        rc = buf_printf(out, ", +%" PRIu64 " more", more);
    if (rc == 0)
        rc = buf_append_byte(out, '\n');
    return rc;
}

int emit_binary(buf_t *out, uint64_t start, uint64_t end)
{
    return buf_printf(out, EMIT_PREFIX "binary %" PRIu64 " bytes (bytes %" PRIu64
                      "-%" PRIu64 ")\n", end - start, start, end);
}

int emit_cut(buf_t *out, uint64_t lineno, size_t at)
{
    return buf_printf(out, EMIT_PREFIX "cut line %" PRIu64 " at %zu bytes\n",
                      lineno, at);
}

int emit_prompt(buf_t *out)
{
    return buf_printf(out, EMIT_PREFIX "prompt (no newline for %dms)\n",
                      SQ_PARTIAL_MS);
}

int emit_hangup(buf_t *out, int signo, uint64_t waited_ms,
                uint64_t kill_after_ms)
{
    const char *sig = signo > 0 && signo < NSIG ? sigabbrev_np(signo) : NULL;
    int rc = buf_printf(out, EMIT_PREFIX "hangup SIG%s · ", sig ? sig : "?");
    /* The first hang-up is the terminal going away; a second one, with
     * the supervisor's grace before KILL, is rein ending the run. */
    if (rc == 0 && !kill_after_ms)
        rc = buf_printf(out,
                        "terminal read in raw mode for %" PRIu64
                        ".%02" PRIu64 "s, stdin at its end\n",
                        waited_ms / 1000, (waited_ms % 1000) / 10);
    else if (rc == 0)
        rc = buf_printf(out,
                        "terminal read in raw mode %" PRIu64 ".%02" PRIu64
                        "s after SIGHUP; SIGKILL after %" PRIu64
                        ".%02" PRIu64 "s\n",
                        waited_ms / 1000, (waited_ms % 1000) / 10,
                        kill_after_ms / 1000, (kill_after_ms % 1000) / 10);
    return rc;
}

int emit_background(buf_t *out)
{
    return buf_append_str(out, EMIT_PREFIX "background processes the "
                               "command left running were ended with it\n");
}

int emit_background_hangup(buf_t *out)
{
    return buf_append_str(out, EMIT_PREFIX "background processes the "
                               "command left running were killed by the "
                               "terminal's hangup as it exited\n");
}

int emit_ended(buf_t *out, const char *why)
{
    return buf_printf(out, EMIT_PREFIX "ended · %s\n", why);
}

int emit_running(buf_t *out, uint64_t elapsed_ms, uint64_t lines)
{
    uint64_t s = elapsed_ms / 1000;
    int rc = s < 60     ? buf_printf(out, EMIT_PREFIX "running · %" PRIu64 "s", s)
             : s < 3600 ? buf_printf(out, EMIT_PREFIX "running · %" PRIu64
                                              "m%02" PRIu64 "s", s / 60, s % 60)
                        : buf_printf(out, EMIT_PREFIX "running · %" PRIu64
                                              "h%02" PRIu64 "m", s / 3600,
                                     s / 60 % 60);
    if (rc == 0)
        rc = buf_printf(out, " · %" PRIu64 " line%s", lines,
                        lines == 1 ? "" : "s");
    return rc;
}

int emit_danger(buf_t *out, const char *command, const char *pattern,
                const char *decision)
{
    int rc = buf_append_str(out, EMIT_PREFIX "danger ");
    /* One line whatever the command holds: a newline in it would end the
     * marker and start a line that is neither raw output nor a marker,
     * and an escape would act on the terminal it is shown on. */
    for (const char *c = command; rc == 0 && *c; c++) {
        unsigned char b = (unsigned char)*c;
        rc = buf_append_byte(out, b < 0x20 || b == 0x7f ? ' ' : b);
    }
    if (rc == 0)
        rc = buf_printf(out, " (pattern: %s) — %s\n", pattern, decision);
    return rc;
}

void emit_size(uint64_t bytes, char *out, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) {
        snprintf(out, size, "%" PRIu64 " B", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, size, "%.1f %s", v, units[u]);
}

/* What a narrate marker says of a path's size: "4.2 KiB", "3 files,
 * 12.0 KiB" (a directory, "at least" when its walk stopped early), or
 * "symlink".  96 bytes hold the longest (two 20-digit counts). */
#define EMIT_FILE_DESC_MAX 96

static void emit_file_desc(const emit_file_t *f, char *out, size_t size)
{
    char sz[32];
    emit_size(f->bytes, sz, sizeof sz);
    if (f->dir)
        snprintf(out, size, "%s%" PRIu64 " file%s, %s",
                 f->partial ? "at least " : "", f->files,
                 f->files == 1 ? "" : "s", sz);
    else if (f->symlink)
        snprintf(out, size, "symlink");
    else
        snprintf(out, size, "%s", sz);
}

/* The words of a narrate marker after its prefix, through its newline. */
static int emit_narrate_words(buf_t *out, const emit_narrate_t *n)
{
    char d[EMIT_FILE_DESC_MAX], d0[EMIT_FILE_DESC_MAX];
    const emit_file_t *a = &n->after, *b = &n->before;
    emit_file_desc(a, d, sizeof d);
    emit_file_desc(b, d0, sizeof d0);
    switch (n->kind) {
    case EMIT_NARRATE_COPIED:
        return buf_printf(out, "%s → %s%s (%s%s%s)\n", n->src, n->path,
                          a->exists && a->dir ? "/" : "", d,
                          b->exists ? ", replaced" : "",
                          n->source_removed ? ", source removed" : "");
    case EMIT_NARRATE_LINKED:
        return buf_printf(out, "%s → %s (%s)\n", n->path, n->src,
                          n->symbolic ? "symlink" : "hard link");
    case EMIT_NARRATE_UNCHANGED:
        return buf_printf(out, "%s → %s: unchanged\n", n->src, n->path);
    case EMIT_NARRATE_NOT_CREATED:
        if (n->src)
            return buf_printf(out, "%s → %s: not created\n", n->src,
                              n->path);
        return buf_printf(out, "%s not created\n", n->path);
    case EMIT_NARRATE_REMOVED:
        return buf_printf(out, "removed %s%s (%s)\n", n->path,
                          b->dir ? "/" : "", d0);
    case EMIT_NARRATE_ABSENT:
        return buf_printf(out, "%s did not exist\n", n->path);
    case EMIT_NARRATE_KEPT:
        return buf_printf(out, "%s still exists\n", n->path);
    case EMIT_NARRATE_MISSING:
        return buf_printf(out, "%s does not exist\n", n->path);
    case EMIT_NARRATE_DIR_MADE:
        return buf_printf(out, "created %s/\n", n->path);
    case EMIT_NARRATE_DIR_EXISTED:
        return buf_printf(out, "%s/ already existed\n", n->path);
    case EMIT_NARRATE_TOUCHED:
        return buf_printf(out, "%s %s (%s)\n",
                          b->exists ? "updated" : "created", n->path, d);
    case EMIT_NARRATE_MODE:
        return buf_printf(out, "%s %04o → %04o\n", n->path, b->mode,
                          a->mode);
    case EMIT_NARRATE_OWNER:
        return buf_printf(out, "%s %u:%u → %u:%u\n", n->path, b->uid, b->gid,
                          a->uid, a->gid);
    case EMIT_NARRATE_RESIZED:
        return buf_printf(out, "%s %s → %s\n", n->path, b->exists ? d0 : "new",
                          d);
    }
    return -EINVAL; /* not reached: emit_narrate checked the kind */
}

/* Each control character in out->p[from, out->len - 1), the marker's
 * text before its newline, becomes a space: a path may hold a newline
 * (`touch $'a\n[rein] exit 0'`), which would end the marker and start a
 * line that passes for one, or an escape that acts on the terminal it is
 * shown on. */
static void emit_one_line(buf_t *out, size_t from)
{
    for (size_t i = from; i + 1 < out->len; i++) {
        unsigned char b = (unsigned char)out->p[i];
        if (b < 0x20 || b == 0x7f)
            out->p[i] = ' ';
    }
}

int emit_narrate(buf_t *out, const emit_narrate_t *n)
{
    /* Checked before the prefix goes out: no marker is left half written. */
    if ((unsigned)n->kind > EMIT_NARRATE_RESIZED)
        return -EINVAL;
    size_t from = out->len;
    int rc = buf_printf(out, EMIT_PREFIX "narrate %s: ", n->cmd);
    if (rc == 0)
        rc = emit_narrate_words(out, n);
    if (rc == 0)
        emit_one_line(out, from);
    return rc;
}

int emit_narrate_more(buf_t *out, const char *cmd, size_t more)
{
    return buf_printf(out, EMIT_PREFIX "narrate %s: %zu more operands not "
                                       "narrated\n",
                      cmd, more);
}

int emit_log(buf_t *out, const char *path, uint64_t lost)
{
    if (lost)
        return buf_printf(out,
                          EMIT_PREFIX "log %s (incomplete: %" PRIu64
                                      " bytes lost)\n",
                          path, lost);
    return buf_printf(out, EMIT_PREFIX "log %s\n", path);
}

/* ------------------------------------------------- raw lines, escaped */

/* Code points that print nothing: the Unicode White_Space characters
 * above ASCII and the Default_Ignorable_Code_Point ranges (zero-width
 * spaces and joiners, bidi controls, variation selectors, tags), with the
 * C1 controls.  Inclusive ranges, sorted. */
static const uint32_t emit_blank_cps[][2] = {
    {0x0080, 0x00A0}, {0x00AD, 0x00AD}, {0x034F, 0x034F},
    {0x061C, 0x061C}, {0x115F, 0x1160}, {0x1680, 0x1680},
    {0x17B4, 0x17B5}, {0x180B, 0x180F}, {0x2000, 0x200F},
    {0x2028, 0x202F}, {0x205F, 0x206F}, {0x3000, 0x3000},
    {0x3164, 0x3164}, {0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF},
    {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3},
    {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
};

static bool emit_blank_cp(uint32_t cp)
{
    for (size_t i = 0; i < sizeof emit_blank_cps / sizeof emit_blank_cps[0];
         i++)
        if (cp >= emit_blank_cps[i][0] && cp <= emit_blank_cps[i][1])
            return true;
    return false;
}

/* The length of an escape sequence at s[0] == ESC: CSI (ESC [ params
 * final), a string (OSC, DCS, SOS, PM, APC: up to BEL or ST, or the end
 * of the line), else ESC, its intermediates and its final byte. */
static size_t emit_esc_len(const unsigned char *s, size_t n)
{
    size_t j = 1;
    if (j >= n)
        return j;
    if (s[j] == '[') {
        for (j++; j < n && s[j] >= 0x20 && s[j] <= 0x3F; j++)
            ;
        return j < n && s[j] >= 0x40 && s[j] <= 0x7E ? j + 1 : j;
    }
    if (s[j] && strchr("]PX^_", s[j])) {
        for (j++; j < n; j++) {
            if (s[j] == 0x07)
                return j + 1;
            if (s[j] == 0x1b && j + 1 < n && s[j + 1] == '\\')
                return j + 2;
        }
        return j;
    }
    for (; j < n && s[j] >= 0x20 && s[j] <= 0x2F; j++)
        ;
    return j < n ? j + 1 : j;
}

/* Bytes at s that print nothing (a blank, a control character, an escape
 * sequence, a code point of emit_blank_cps); 0 when s starts with
 * something visible.  Ill-formed UTF-8 counts as visible: it would be
 * shown as U+FFFD. */
static size_t emit_invisible(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c == 0x1b)
        return emit_esc_len(s, n);
    if (c <= 0x20 || c == 0x7f)
        return 1;
    if (c < 0xC2 || c > 0xF4)
        return 0;
    size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (len > n)
        return 0;
    uint32_t cp = c & (0xFFu >> (len + 1));
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3Fu);
    }
    return emit_blank_cp(cp) ? len : 0;
}

bool emit_raw_escaped(const char *str, size_t n)
{
    static const char mark[] = "[rein]";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, esc = strlen(EMIT_ESCAPE), k;
    for (;;) {
        while (i < n && (k = emit_invisible(s + i, n - i)) > 0)
            i += k;
        if (n - i >= esc && !memcmp(s + i, EMIT_ESCAPE, esc))
            i += esc;
        else
            break;
    }
    return n - i >= sizeof mark - 1 && !memcmp(s + i, mark, sizeof mark - 1);
}

int emit_raw(buf_t *out, const char *s, size_t n)
{
    int rc = emit_raw_escaped(s, n) ? buf_append_str(out, EMIT_ESCAPE) : 0;
    if (rc == 0)
        rc = buf_append(out, s, n);
    return rc ? rc : buf_append_byte(out, '\n');
}
