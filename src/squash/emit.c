/*
 * emit.c — marker formatting (see emit.h, docs/markers.md).
 *
 * Kept in one file so the syntax has one implementation: a test checks
 * every marker produced here against the documented regular expression.
 */
#include "squash/emit.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "squash/squash.h"

int emit_exit(buf_t *out, int exit_code, uint64_t duration_ms, uint64_t lines)
{
    /* 128+N is how a death by signal N reaches a status, as in the
     * shell's $?: the signal marker names it and still gives the status. */
    const char *sig = exit_code > 128 && exit_code < 128 + NSIG
                          ? sigabbrev_np(exit_code - 128)
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

/* "1-4, 7, 9" with at most EMIT_RANGES_MAX ranges, then ", +N more". */
static int emit_ranges(buf_t *out, const uint64_t *l, size_t n)
{
    size_t ranges = 0, i = 0;
    int rc = 0;
    while (i < n && rc == 0) {
        size_t j = i;
        while (j + 1 < n && l[j + 1] == l[j] + 1)
            j++;
        if (ranges == EMIT_RANGES_MAX)
            return buf_printf(out, ", +%zu more", n - i);
        rc = j > i ? buf_printf(out, "%s%" PRIu64 "-%" PRIu64, ranges ? ", " : "",
                                l[i], l[j])
                   : buf_printf(out, "%s%" PRIu64, ranges ? ", " : "", l[i]);
        ranges++;
        i = j + 1;
    }
    return rc;
}

int emit_repeat(buf_t *out, uint32_t count, const char *tmpl,
                const uint64_t *lines, size_t nlines)
{
    int rc = buf_printf(out, EMIT_PREFIX "repeat %u× \"%s\" (line%s ", count,
                        tmpl, nlines == 1 ? "" : "s");
    if (rc == 0)
        rc = emit_ranges(out, lines, nlines);
    if (rc == 0)
        rc = buf_append(out, ")\n", 2);
    return rc;
}

int emit_at(buf_t *out, const dedup_t *d, uint32_t group)
{
    int rc = buf_append_str(out, EMIT_PREFIX "at ");
    if (rc == 0)
        rc = dedup_locations(d, group, 0, out);
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

int emit_log(buf_t *out, const char *path)
{
    return buf_printf(out, EMIT_PREFIX "log %s\n", path);
}
