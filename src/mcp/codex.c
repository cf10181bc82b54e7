/*
 * codex.c — the `codex` tool profile (see codex.h): exec_command,
 * write_stdin, kill_session, list_sessions, read_output, and the session
 * log resources.
 *
 * Each call that waits (exec_command, write_stdin, kill_session) owns a
 * small context: its MCP call, its session, when it began.  The session
 * store wakes it (exit, wait_for match, awaiting input, deadline); the
 * context then turns the session's undelivered output into a result and
 * frees itself.  A client cancellation ends the wait and leaves the
 * session running.
 *
 * Result text starts with Codex's own lines (Chunk ID, Wall time, Process
 * exited with code N | Process running with session ID N, Original token
 * count), so models trained on Codex read it unchanged; rein's extra
 * `Key: value` lines follow, then `Output:` and the text, which is exactly
 * structuredContent.output.
 *
 * Over max_output_tokens the model sees the squasher's condensed view
 * (hazards first, counts for the rest, the log path) rather than a blind
 * middle cut; the result is never over the budget.  The view is made from
 * the raw bytes, never the decoded text (whose U+FFFD and gap line would
 * shift every offset), so its markers give the log's byte offsets and,
 * from the newlines the session counted before the chunk, its line
 * numbers, whichever way the chunk was read: from memory, from the log
 * (past the 1 MiB buffer), or as the buffer's head and tail around a
 * middle not read (past CODEX_SCAN_MAX).  A view with markers in it
 * shows a line of the command's that could pass for one escaped (`[raw]
 * [rein] ...`, docs/markers.md), the tail-only view too.
 */
#include "mcp/codex.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/sig.h"
#include "base/spool.h"
#include "base/utf8.h"
#include "exec/loggrep.h"
#include "exec/shell.h"
#include "exec/retention.h"
#include "exec/session.h"
#include "squash/emit.h"
#include "squash/grammar.h"
#include "squash/router.h"
#include "squash/squash.h"
#include "supervise/sup.h"
#include "term/answer.h"
#include "term/keys.h"

/* Bytes of the random chunk id (6 hex digits). */
#define CODEX_CHUNK_ID_BYTES 3
/* A session URI: "rein://session/<int64>/log". */
#define CODEX_URI_MAX 64
/* A tail-only view or a cut screen has its marker only in a budget of at
 * least this many times the marker's length: in a smaller one the marker
 * would take the room of what it is about. */
#define CODEX_MARKER_BUDGET_FACTOR 4
/* The marker of a tail-only view, when even the condensed one is too big:
 * a line of its own, so no line of the command's is glued to it. */
#define CODEX_TAIL_MARKER "[rein] output over budget; the tail follows.\n"
/* After the rows of a full-screen program's screen that fit the budget:
 * the first row left out, the last, the rows in all. */
#define CODEX_SCREEN_MARKER                                                  \
    "[rein] rows %u-%u of %u of the screen not shown; read_output "         \
    "view=screen shows them\n"
/* In place of a full-screen program's drawing, in a poll in which it left
 * the alternate screen: the log bytes it took. */
#define CODEX_LEFT_SCREEN_MARKER                                             \
    "[rein] a full-screen program's display, log bytes %" PRIu64           \
    "-%" PRIu64 ", left out\n"
/* Between the text before a full-screen program's switch to the
 * alternate screen, in the same poll, and the rows of that screen: the
 * log bytes the screen was drawn with. */
#define CODEX_SCREEN_FOLLOWS_MARKER                                          \
    "[rein] a full-screen program's display, log bytes %" PRIu64           \
    "-%" PRIu64 ", rendered:\n"
/* Ids named in one `pruned` list. */
#define CODEX_PRUNED_MAX 64
/* The `Background:` line of a result whose command exited leaving
 * processes running: a session ends with its command, so `server &`
 * does not outlive it, and the model is told how to keep one. */
#define CODEX_KEEP_TEXT                                                       \
    "to keep a server running, start it in the foreground of its own "       \
    "exec_command and poll it with write_stdin"
#define CODEX_LEFTOVERS_TEXT                                                  \
    "processes the command left running (`cmd &`, nohup, setsid) were "      \
    "ended with it; " CODEX_KEEP_TEXT
/* The same when the terminal's hangup killed them as the command exited
 * (tty: true; rein_run_info_t.leftovers_hung_up), and when both happened. */
#define CODEX_HUNG_UP_TEXT                                                    \
    "processes the command left running (`cmd &`) were killed by the "       \
    "terminal's hangup as it exited, as in any terminal; " CODEX_KEEP_TEXT
#define CODEX_HUNG_UP_AND_LEFTOVERS_TEXT                                      \
    "processes the command left running (`cmd &`) were killed by the "       \
    "terminal's hangup as it exited, as in any terminal, and the others "    \
    "(nohup, setsid) were ended with it; " CODEX_KEEP_TEXT
/* The "Omitted:" line names CODEX_SCAN_MAX in MiB. */
_Static_assert(CODEX_SCAN_MAX == 64u << 20, "the Omitted: text says 64 MiB");
/* The block a log is read in for a condensed view. */
#define CODEX_SCAN_BLOCK (64u * 1024u)
/* The longest one read_output grep runs (REIN_GREP_TIME_MS overrides it):
 * the server's loop waits for it, and every other call with it.  Past it
 * the grep stops at a line's start and says where, so the next call goes
 * on from there (offset; with tail_lines, which searches back from the
 * end, before).  A plain pattern reads hundreds of MB a second. */
#define CODEX_DEFAULT_GREP_TIME_MS 5000u
/* Stdin bytes a session may hold that its process has not read yet: once
 * this many wait, write_stdin writes nothing more (write_error says so),
 * so a process that never reads cannot make rein hold unbounded input.
 * One write may go past it, by at most its own size. */
#define CODEX_STDIN_PENDING_MAX (1024u * 1024u)
/* The longest line a terminal in canonical mode takes: its line buffer
 * (N_TTY_BUF_SIZE, 4096) less the byte its line end needs.  The kernel
 * drops the rest of a longer line as it comes, so a write with one is
 * said to have been cut (write_error): a tty is the wrong session for a
 * long line, a pipe takes it whole. */
#define CODEX_CANON_LINE_MAX 4095u

struct mcp_codex {
    mcp_server_t *srv;
    rein_sup_t *sup;
    loop_t *loop;
    session_store_t *store;
    router_t *router;
    grammar_set_t *grammars; /* loaded on the first condensed view */
    bool grammars_tried;
    uint64_t max_empty_poll_ms;
    uint64_t grep_time_ms; /* CODEX_DEFAULT_GREP_TIME_MS, REIN_GREP_TIME_MS */
    char cwd[PATH_MAX];
    retention_opts_t retention;
    uint64_t t_retention;
    /* shutdown */
    bool shutting_down;
    mcp_codex_done_fn done;
    void *done_data;
    uint64_t t_shutdown;
};

/* A call waiting on a session. */
enum xkind { X_EXEC, X_WRITE, X_KILL };

struct xcall {
    mcp_codex_t *cx;
    mcp_call_t *call;
    session_t *s;
    enum xkind kind;
    uint64_t t0;
    size_t budget;
    unsigned yield_ms;
    bool yield_clamped;
    bool size_clamped; /* cols or rows given were out of range */
    char write_error[256];
    /* kill_session */
    char signame[16];
    bool found;
    bool signalled; /* the session was running: the signal was sent */
};

/* ------------------------------------------------------------- schemas */

static const char exec_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"cmd\"],\"properties\":{"
    "\"cmd\":{\"type\":\"string\",\"description\":\"Shell command to "
    "run.\"},"
    "\"workdir\":{\"type\":\"string\",\"description\":\"Working directory; "
    "relative paths resolve against the server's cwd.\"},"
    "\"shell\":{\"type\":\"string\",\"description\":\"Shell binary (default "
    "/bin/bash).\"},"
    "\"login\":{\"type\":\"boolean\",\"description\":\"Run as a login shell "
    "(<shell> -lc).\"},"
    "\"tty\":{\"type\":\"boolean\",\"description\":\"Run on a "
    "pseudo-terminal: REPLs, TUIs, password prompts; the output is the "
    "text the terminal shows (no escape codes, redrawn lines at their last "
    "frame), a full-screen program's its rendered screen.\"},"
    "\"yield_time_ms\":{\"type\":\"number\",\"description\":\"Return after "
    "at most this long (250..30000, default 10000).\"},"
    "\"max_output_tokens\":{\"type\":\"integer\",\"minimum\":0,"
    "\"description\":\"Output budget in tokens of 4 bytes (default "
    "10000).\"},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
    "\"string\"},\"description\":\"Environment variables for the "
    "command.\"},"
    "\"stdin\":{\"type\":\"string\",\"description\":\"Text written to the "
    "command's input, then EOF.\"},"
    "\"wait_for\":{\"type\":\"string\",\"description\":\"Return as soon as "
    "the output matches this regular expression.\"},"
    "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":0,\"description\":"
    "\"Kill the session after this long in all (0: never).\"},"
    "\"idle_timeout_ms\":{\"type\":\"integer\",\"minimum\":0,"
    "\"description\":\"Kill the session after this long without output "
    "(0: never).\"},"
    "\"cols\":{\"type\":\"integer\",\"description\":\"Terminal columns "
    "(tty; default 120).\"},"
    "\"rows\":{\"type\":\"integer\",\"description\":\"Terminal rows (tty; "
    "default 40).\"},"
    "\"confirm_dangerous\":{\"type\":\"boolean\",\"description\":\"Run a "
    "command the danger check flagged.\"}}}";

static const char write_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"session_id\"],\"properties\":{"
    "\"session_id\":{\"type\":\"integer\",\"description\":\"The session, "
    "from exec_command.\"},"
    "\"chars\":{\"type\":\"string\",\"description\":\"Text to write; C "
    "escapes decoded (\\\\x03 is Ctrl-C, \\\\x04 EOF, \\\\e ESC). Empty: "
    "poll.\"},"
    "\"chars_b64\":{\"type\":\"string\",\"description\":\"Bytes to write, "
    "base64 (instead of chars).\"},"
    "\"keys\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"Named keys to send after chars: ctrl+c, up, enter, "
    "f5, ...\"},"
    "\"yield_time_ms\":{\"type\":\"number\",\"description\":\"Return after "
    "at most this long (default 250, 30000 with wait_for; an empty poll "
    "5000 up to 1800000).\"},"
    "\"max_output_tokens\":{\"type\":\"integer\",\"minimum\":0,"
    "\"description\":\"Output budget in tokens of 4 bytes (default "
    "10000).\"},"
    "\"wait_for\":{\"type\":\"string\",\"description\":\"Return as soon as "
    "the output matches this regular expression.\"},"
    "\"close_stdin\":{\"type\":\"boolean\",\"description\":\"Close the "
    "input (EOF) after writing.\"},"
    "\"cols\":{\"type\":\"integer\",\"description\":\"Resize the terminal "
    "to this many columns.\"},"
    "\"rows\":{\"type\":\"integer\",\"description\":\"Resize the terminal "
    "to this many rows.\"}}}";

static const char exec_output_schema[] =
    "{\"type\":\"object\",\"required\":[\"output\"],\"properties\":{"
    "\"chunk_id\":{\"type\":\"string\"},"
    "\"wall_time_seconds\":{\"type\":\"number\"},"
    "\"exit_code\":{\"type\":\"integer\"},"
    "\"signal\":{\"type\":\"string\"},"
    "\"reason\":{\"type\":\"string\"},"
    "\"session_id\":{\"type\":\"integer\"},"
    "\"original_token_count\":{\"type\":\"integer\"},"
    "\"output\":{\"type\":\"string\"},"
    "\"log_path\":{\"type\":\"string\"},"
    "\"cwd\":{\"type\":\"string\"},"
    "\"tty\":{\"type\":\"boolean\"},"
    "\"yield_time_ms\":{\"type\":\"integer\"},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"omitted_bytes\":{\"type\":\"integer\"},"
    "\"awaiting_input\":{\"type\":\"boolean\"},"
    "\"prompt\":{\"type\":\"string\"},"
    "\"pruned\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
    "\"open_sessions\":{\"type\":\"integer\"},"
    "\"write_error\":{\"type\":\"string\"},"
    "\"wait_for_error\":{\"type\":\"string\"},"
    "\"dangerous\":{\"type\":\"boolean\"},"
    "\"danger\":{\"type\":\"string\"},"
    "\"ran\":{\"type\":\"boolean\"},"
    "\"background_ended\":{\"type\":\"boolean\"},"
    "\"background_hung_up\":{\"type\":\"boolean\"},"
    "\"screen\":{\"type\":\"boolean\"}}}";

static const char kill_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"session_id\"],\"properties\":{"
    "\"session_id\":{\"type\":\"integer\",\"description\":\"The session to "
    "end.\"},"
    "\"signal\":{\"type\":\"string\",\"description\":\"First signal "
    "(default SIGTERM; term, INT, sigkill...).\"},"
    "\"grace_ms\":{\"type\":\"integer\",\"minimum\":0,\"description\":"
    "\"Wait this long before SIGKILL (0..60000, default 2000).\"}}}";

_Static_assert(CODEX_MAX_KILL_GRACE_MS == 60000,
               "kill_session's grace_ms description says 60000");

static const char kill_output_schema[] =
    "{\"type\":\"object\",\"required\":[\"session_id\",\"found\"],"
    "\"properties\":{"
    "\"session_id\":{\"type\":\"integer\"},"
    "\"found\":{\"type\":\"boolean\"},"
    "\"signal\":{\"type\":\"string\"},"
    "\"signalled\":{\"type\":\"boolean\"},"
    "\"escalated\":{\"type\":\"boolean\"},"
    "\"exit_code\":{\"type\":[\"integer\",\"null\"]},"
    "\"cleanup_incomplete\":{\"type\":\"boolean\"}}}";

static const char list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"properties\":{}}";

static const char list_output_schema[] =
    "{\"type\":\"object\",\"required\":[\"sessions\"],\"properties\":{"
    "\"sessions\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{"
    "\"session_id\":{\"type\":\"integer\"},"
    "\"pid\":{\"type\":\"integer\"},"
    "\"command\":{\"type\":\"string\"},"
    "\"command_bytes\":{\"type\":\"integer\",\"description\":\"The "
    "whole command's length, when command is cut short.\"},"
    "\"cwd\":{\"type\":\"string\"},"
    "\"tty\":{\"type\":\"boolean\"},"
    "\"running\":{\"type\":\"boolean\"},"
    "\"exit_code\":{\"type\":[\"integer\",\"null\"]},"
    "\"signal\":{\"type\":[\"string\",\"null\"]},"
    "\"started_at\":{\"type\":\"string\"},"
    "\"last_output_at\":{\"type\":[\"string\",\"null\"]},"
    "\"bytes\":{\"type\":\"integer\"},"
    "\"log_path\":{\"type\":[\"string\",\"null\"]}}}}}}";

static const char read_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"session_id\"],\"properties\":{"
    "\"session_id\":{\"type\":\"integer\",\"description\":\"The session "
    "(running or exited).\"},"
    "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"First "
    "byte of the log to read.\"},"
    "\"length\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Bytes "
    "to read from offset (0 when offset is not given).\"},"
    "\"tail_lines\":{\"type\":\"integer\",\"minimum\":0,\"description\":"
    "\"Only the last N lines (with grep: the last N matches, searched back "
    "from the end); not with offset/length.\"},"
    "\"before\":{\"type\":\"integer\",\"minimum\":0,\"description\":"
    "\"With tail_lines: only lines that start before this byte (a grep's "
    "grep_stopped_at, to search on back).\"},"
    "\"grep\":{\"type\":\"string\",\"description\":\"Only lines matching "
    "this regular expression, numbered; within offset/length when given.\"},"
    "\"view\":{\"type\":\"string\",\"enum\":[\"log\",\"text\",\"screen\"],"
    "\"description\":\"log: the bytes (default for pipes); text: the lines "
    "as the terminal showed them (default for a tty); screen: the rendered "
    "terminal of a tty session.\"},"
    "\"max_output_tokens\":{\"type\":\"integer\",\"minimum\":0,"
    "\"description\":\"Output budget in tokens of 4 bytes (default "
    "10000).\"}}}";

static const char read_output_schema[] =
    "{\"type\":\"object\",\"required\":[\"session_id\",\"output\"],"
    "\"properties\":{"
    "\"session_id\":{\"type\":\"integer\"},"
    "\"output\":{\"type\":\"string\"},"
    "\"offset\":{\"type\":\"integer\"},"
    "\"length\":{\"type\":\"integer\"},"
    "\"total_bytes\":{\"type\":\"integer\"},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"grep_stopped_at\":{\"type\":\"integer\"},"
    "\"log_path\":{\"type\":\"string\"},"
    "\"view\":{\"type\":\"string\"},"
    "\"dropped\":{\"type\":\"string\"}}}";

/* -------------------------------------------------------------- helpers */

/* An ISO 8601 UTC time with milliseconds. */
static json_t *iso_time(int64_t ms)
{
    char b[40];
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(b + n, sizeof b - n, ".%03dZ", (int)(ms % 1000));
    return json_string(b);
}

/* "SIGTERM" for 15; "SIG<n>" for a signal without a name. */
static const char *codex_sig_name(int signo, char *buf, size_t n)
{
    const char *name = sig_name(signo);
    if (strcmp(name, "SIG?"))
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "SIG%d", signo);
    return buf;
}

/* A signal by name, normalised ("term", "SIGTERM", "sigterm", "15");
 * 0 when unknown. */
static int codex_sig_parse(const char *name)
{
    int signo;
    return sig_parse(name, &signo) == 0 ? signo : 0;
}

static void chunk_id(char out[2 * CODEX_CHUNK_ID_BYTES + 1])
{
    unsigned char raw[CODEX_CHUNK_ID_BYTES] = {0};
    if (getrandom(raw, sizeof raw, GRND_NONBLOCK) != (ssize_t)sizeof raw) {
        uint64_t t = loop_clock_ms() ^ (uint64_t)getpid();
        memcpy(raw, &t, sizeof raw);
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* A JSON string of text that should be UTF-8 already; anything else is
 * made valid rather than lost. */
static json_t *json_utf8(const char *p, size_t n)
{
    json_t *j = json_stringn(p ? p : "", n);
    if (j)
        return j;
    buf_t raw = {(char *)p, n, n}, clean = BUF_INIT;
    utf8_dec_t d;
    utf8_init(&d);
    if (utf8_decode(&d, raw.p, raw.len, &clean) == 0)
        utf8_finish(&d, &clean);
    j = json_stringn(clean.p ? clean.p : "", clean.len);
    buf_free(&clean);
    return j ? j : json_string("");
}

static size_t budget_of(json_t *args)
{
    json_t *v = json_object_get(args, "max_output_tokens");
    json_int_t t = json_is_integer(v) ? json_integer_value(v)
                                      : CODEX_DEFAULT_MAX_OUTPUT_TOKENS;
    if (t < 0)
        t = 0;
    if ((uint64_t)t > SIZE_MAX / CODEX_BYTES_PER_TOKEN)
        return SIZE_MAX;
    return (size_t)t * CODEX_BYTES_PER_TOKEN;
}

/* The longest prefix of p[0..n) that ends on a UTF-8 boundary within max. */
static size_t utf8_cut(const char *p, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t k = max;
    while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80)
        k--;
    return k;
}

/* Skips continuation bytes so a suffix starts on a character. */
static size_t utf8_start(const char *p, size_t n, size_t from)
{
    while (from < n && ((unsigned char)p[from] & 0xC0) == 0x80)
        from++;
    return from;
}

static void codex_load_grammars(mcp_codex_t *cx)
{
    if (cx->grammars_tried)
        return;
    cx->grammars_tried = true;
    buf_t errs = BUF_INIT;
    if (grammar_set_load(&cx->grammars, NULL, &errs) < 0)
        cx->grammars = NULL; /* the universal rules still apply */
    buf_free(&errs);
}

/* How many lines of p[0..n) a view shows escaped (emit_raw_escaped). */
static size_t codex_escapes(const char *p, size_t n)
{
    size_t count = 0;
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t l = nl ? (size_t)(nl - p) : n;
        count += emit_raw_escaped(p, l);
        l += nl != NULL;
        p += l;
        n -= l;
    }
    return count;
}

/* Appends the lines of p[0..n) to out, each escaped when it could pass
 * for a marker (emit_raw_escaped); the last may lack its newline. */
static void codex_escape_lines(buf_t *out, const char *p, size_t n)
{
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t l = nl ? (size_t)(nl - p) : n;
        if (emit_raw_escaped(p, l))
            buf_append_str(out, EMIT_ESCAPE);
        l += nl != NULL;
        buf_append(out, p, l);
        p += l;
        n -= l;
    }
}

/* The tail of text that fits budget bytes, starting on a line when one
 * starts inside it, after a marker when there is room: the view when even
 * the condensed one does not fit (tiny budgets).  Its lines are escaped as
 * the condensed view's are: the escapes take room, so the tail starts a
 * line later (or, in one long line, a few bytes later) until it fits. */
static void codex_tail_only(buf_t *text, size_t budget)
{
    size_t mlen = strlen(CODEX_TAIL_MARKER), esc = strlen(EMIT_ESCAPE);
    bool marker = budget >= CODEX_MARKER_BUDGET_FACTOR * mlen;
    size_t room = marker ? budget - mlen : budget;
    if (room > text->len)
        room = text->len;
    size_t from = utf8_start(text->p, text->len, text->len - room);
    const char *nl = memchr(text->p + from, '\n', text->len - from);
    if (nl && (size_t)(nl + 1 - text->p) < text->len)
        from = (size_t)(nl + 1 - text->p);
    size_t extra = esc * codex_escapes(text->p + from, text->len - from);
    while (text->len - from + extra > room) {
        const char *s = text->p + from;
        size_t left = text->len - from;
        nl = memchr(s, '\n', left);
        if (nl && (size_t)(nl + 1 - s) < left) {
            extra -= emit_raw_escaped(s, (size_t)(nl - s)) ? esc : 0;
            from += (size_t)(nl + 1 - s);
        } else {
            size_t over = left + extra - room;
            from = over < left ? utf8_start(text->p, text->len, from + over)
                               : text->len;
            extra = esc * codex_escapes(text->p + from, text->len - from);
        }
    }
    buf_t t = BUF_INIT;
    if (marker)
        buf_append_str(&t, CODEX_TAIL_MARKER);
    codex_escape_lines(&t, text->p + from, text->len - from);
    buf_free(text);
    *text = t;
}

/*
 * The output of a poll that left a full-screen program's display up
 * (session_alt_screen: vim, less, watch, fzf): its bytes are cursor moves
 * and fragments of redraws that read as nothing, so the view is the screen
 * it shows, rendered, its rows escaped as raw lines are (emit_raw_escaped).
 * Over budget, the rows from the top that fit before a marker naming the
 * rest.  Replaces *out and returns the bytes of rows left out (*rows and
 * *cut_from receive the rendered rows and the first left out, 1-based), or
 * a negative code with *out untouched.
 */
static long codex_screen_view(session_t *s, size_t budget, buf_t *out,
                              unsigned *rows, unsigned *cut_from)
{
    buf_t scr = BUF_INIT, v = BUF_INIT;
    int rc = session_screen(s, &scr);
    if (rc < 0) {
        buf_free(&scr);
        return rc;
    }
    unsigned n = (unsigned)buf_count(scr.p, scr.len, '\n');
    codex_escape_lines(&v, scr.p ? scr.p : "", scr.len);
    *rows = n;
    *cut_from = 0;
    long left_out = 0;
    if (v.len > budget) {
        /* Whole rows while they and the marker for the rest fit; in a
         * budget too small to spend on a marker, the rows alone. */
        int m = snprintf(NULL, 0, CODEX_SCREEN_MARKER, n, n, n);
        size_t mlen = m > 0 && budget >= CODEX_MARKER_BUDGET_FACTOR * (size_t)m
                          ? (size_t)m
                          : 0;
        size_t at = 0;
        unsigned kept = 0;
        while (kept < n) {
            const char *nl = memchr(v.p + at, '\n', v.len - at);
            size_t next = nl ? (size_t)(nl - v.p) + 1 : v.len;
            if (next + mlen > budget)
                break;
            at = next;
            kept++;
        }
        left_out = (long)(v.len - at);
        v.len = at;
        if (v.p)
            v.p[v.len] = 0;
        if (mlen)
            buf_printf(&v, CODEX_SCREEN_MARKER, kept + 1, n, n);
        *cut_from = kept + 1;
    }
    buf_free(&scr);
    buf_free(out);
    *out = v;
    return left_out;
}

/*
 * The output of a TTY poll whose bytes are all at hand (raw, nothing over
 * the buffer), as the terminal shows it: the session's view (vtview.h)
 * fed the poll's bytes, colours and other escape sequences gone, a line
 * drawn over in its final frame.  *drawn says whether any of them drew
 * over or erased text, of which the view has only the last frame.  Where
 * a full-screen program left its screen in this poll (vim after :wq, less
 * after q), what it drew there, cursor moves and fragments of redraws, is
 * stepped over for a marker naming its log bytes (cuts[i], *ncuts of
 * them, at most TERM_ANSWER_ALT_SPANS), and the text between is kept; a
 * stay that began in an earlier poll is cut from this poll's first byte.
 * Every byte of the poll is fed to the view or stepped over; the last
 * poll (last: the program's output is over) ends the view.  0 or
 * -ENOMEM.
 */
static int codex_tty_text(session_t *s, const buf_t *raw,
                          const session_chunk_t *ch, bool last, buf_t *out,
                          bool *drawn, uint64_t (*cuts)[2], size_t *ncuts)
{
    vtview_t *v = session_view(s);
    const char *p = raw->p ? raw->p : "";
    uint64_t at = vtview_offset(v), end = ch->from + raw->len;
    size_t pos = 0;
    int rc = 0;
    *drawn = false;
    /* Bytes no result took are stepped over, so offsets stay the log's. */
    if (at < ch->from)
        rc = vtview_skip(v, ch->from - at, 0);
    size_t n = session_alt_spans(s, ch->from, cuts, TERM_ANSWER_ALT_SPANS);
    *ncuts = 0;
    for (size_t i = 0; rc == 0 && i < n && cuts[i][1] <= end; i++) {
        uint64_t a = cuts[i][0] > ch->from + pos ? cuts[i][0]
                                                 : ch->from + pos;
        size_t before = (size_t)(a - ch->from);
        size_t after = (size_t)(cuts[i][1] - ch->from);
        bool h = false;
        rc = vtview_feed(v, p + pos, before - pos);
        if (rc == 0)
            rc = vtview_take(v, out, &h);
        if (rc == 0 && out->len && out->p[out->len - 1] != '\n')
            rc = buf_append_byte(out, '\n');
        if (rc == 0)
            rc = buf_printf(out, CODEX_LEFT_SCREEN_MARKER, a, cuts[i][1]);
        if (rc == 0)
            rc = vtview_skip(v, after - before,
                             buf_count(p + before, after - before, '\n'));
        cuts[(*ncuts)++][0] = a;
        pos = after;
        *drawn = *drawn || h;
    }
    if (rc == 0) {
        bool h = false;
        rc = vtview_feed(v, p + pos, raw->len - pos);
        if (rc == 0 && last) /* a last line a binary file left unended */
            rc = vtview_finish(v);
        if (rc == 0)
            rc = vtview_take(v, out, &h);
        *drawn = *drawn || h;
    }
    return rc;
}

/* The width a session's output is drawn at: its terminal's, 0 on pipes
 * (squash.h: sq_opts_t cols). */
static unsigned codex_cols(const session_t *s)
{
    unsigned cols = 0, rows = 0;
    if (session_tty(s))
        session_size(s, &cols, &rows);
    return cols;
}

/*
 * Fits text (raw: the same output as it was, log bytes from ch->from)
 * into budget bytes.  Within it: unchanged.  Over it: the squasher's
 * condensed view of the raw bytes with that budget, its byte ranges and
 * line numbers the log's; if even that does not fit (tiny budgets), the
 * tail that does.  Returns whether anything was left out.
 */
static bool codex_fit(mcp_codex_t *cx, const session_t *s, int exit_code,
                      uint64_t dur_ms, const buf_t *raw,
                      const session_chunk_t *ch, buf_t *text, size_t budget)
{
    if (text->len <= budget)
        return false;
    buf_t cond = BUF_INIT;
    codex_load_grammars(cx);
    sq_opts_t so = {.command = session_command(s),
                    .log_path = session_log_path(s), .cols = codex_cols(s),
                    .budget_bytes = budget ? budget : 1,
                    .grammars = cx->grammars, .raw_base = ch->from,
                    .line_base = ch->lines_before};
    /* No raw bytes for a text (an -ENOMEM taking them): the text itself,
     * its offsets shifted by its repairs, beats showing nothing. */
    const buf_t *src = raw->len || !text->len ? raw : text;
    int rc = budget ? squash_buffer(&so, src->p ? src->p : "", src->len,
                                    exit_code, dur_ms, &cond)
                    : -EINVAL;
    if (rc == 0 && cond.len <= budget && cond.len > 0) {
        buf_free(text);
        *text = cond;
        return true;
    }
    buf_free(&cond);
    codex_tail_only(text, budget);
    return true;
}

static void codex_collect(const char *text, size_t len, void *data)
{
    buf_append(data, text, len);
}

static int codex_read_range(int fd, uint64_t off, uint64_t len, bool hole,
                            uint64_t ha, uint64_t hb, buf_t *out);
static void to_utf8(buf_t *raw, buf_t *out);

/* The signal the session's command died of, for the view's exit marker
 * (an `exit 130` is no SIGINT); nothing while it runs. */
static void codex_exit_signal(const session_t *s, squash_t *sq)
{
    int signo = 0;
    if (!session_running(s)) {
        session_exit_info(s, NULL, &signo, NULL, NULL);
        squash_set_signal(sq, signo);
    }
}

/*
 * What a result shows when the 1 MiB buffer dropped the middle of its
 * output: log bytes [from, from + len) of session s, read from the log
 * instead of the buffered head and tail.  When they fit in budget they are
 * given whole (1); otherwise their condensed view, made from every byte,
 * so a hazard in the middle is shown (0).  -EFBIG past CODEX_SCAN_MAX;
 * -ENOENT without a log or budget; -ENODATA when the log's size cap punched
 * out part of the range; -EIO when the log is shorter than the output (a
 * spool write failed); -ENOSPC when the view is over budget (its facts
 * alone are); another negative code for a failed read.  On
 * failure *cond is empty and the caller condenses the buffered text.
 */
static int codex_from_log(mcp_codex_t *cx, session_t *s, uint64_t from,
                          uint64_t len, uint64_t lines_before, int exit_code,
                          uint64_t dur_ms, size_t budget, buf_t *cond)
{
    const char *path = session_log_path(s);
    uint64_t ha, hb;
    if (!path || !budget)
        return -ENOENT;
    if (len > CODEX_SCAN_MAX)
        return -EFBIG;
    if (spool_log_hole(path, &ha, &hb) && ha < from + len && hb > from)
        return -ENODATA;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = 0;
    squash_t *sq = NULL;
    char *blk = NULL;
    if (len <= budget) {
        buf_t raw = BUF_INIT;
        rc = codex_read_range(fd, from, len, false, 0, 0, &raw);
        if (rc == 0 && raw.len != len)
            rc = -EIO; /* the log is shorter than the stream */
        if (rc == 0)
            to_utf8(&raw, cond);
        buf_free(&raw);
        if (rc == 0 && cond->len <= budget) {
            rc = 1;
            goto done;
        }
        cond->len = 0; /* U+FFFD made it longer: condense it after all */
        if (rc < 0)
            goto done;
    }
    codex_load_grammars(cx);
    sq_opts_t so = {.command = session_command(s), .log_path = path,
                    .cols = codex_cols(s),
                    .budget_bytes = budget, .grammars = cx->grammars,
                    .raw_base = from, .line_base = lines_before};
    if (!(blk = malloc(CODEX_SCAN_BLOCK))) {
        rc = -ENOMEM;
        goto done;
    }
    if ((rc = squash_new(&so, codex_collect, cond, &sq)) < 0)
        goto done;
    for (uint64_t off = from; rc == 0 && off < from + len;) {
        size_t n = from + len - off < CODEX_SCAN_BLOCK
                       ? (size_t)(from + len - off)
                       : CODEX_SCAN_BLOCK;
        ssize_t got = pread(fd, blk, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) { /* the log is shorter than the stream */
            rc = got < 0 ? -errno : -EIO;
            break;
        }
        rc = squash_feed(sq, blk, (size_t)got, 0);
        off += (uint64_t)got;
    }
    if (rc == 0) {
        codex_exit_signal(s, sq);
        rc = squash_finish(sq, exit_code, dur_ms, 0);
    }
    /* The facts alone over a tiny budget: the caller shows the tail that
     * fits, as for an output held whole (codex_fit), never more. */
    if (rc == 0 && cond->len > budget)
        rc = -ENOSPC;
done:
    squash_free(sq);
    free(blk);
    close(fd);
    if (rc < 0)
        cond->len = 0;
    return rc;
}

/* Why a result was not made from its log (codex_from_log). */
static const char *codex_scan_error(int rc)
{
    switch (rc) {
    case -EFBIG:
        return "the output is over the 64 MiB a condensed view reads from "
               "the log";
    case -ENODATA:
        return "the log's size cap dropped part of them";
    case -ENOENT:
        return "the session has no log";
    case -EIO:
        return "the log does not hold all of them";
    case -ENOSPC:
        return "max_output_tokens is too small even for the condensed view";
    default:
        return rein_strerror(rc);
    }
}

/*
 * The view of an output whose middle is neither in memory nor read from
 * the log (past CODEX_SCAN_MAX, or in a range the log's cap dropped): the
 * head and the tail the buffer kept (raw, split at ch->head), cut back to
 * whole lines, condensed around one `not scanned` marker for everything
 * between them, with log offsets and log line numbers.  The newlines of
 * the middle were counted as it streamed past, so the marker gives its
 * lines exactly.  0 (the view in *cond, within budget) or negative.
 */
static int codex_headtail_view(mcp_codex_t *cx, session_t *s,
                               const buf_t *raw, const session_chunk_t *ch,
                               int exit_code, uint64_t dur_ms, size_t budget,
                               buf_t *cond)
{
    const char *p = raw->p ? raw->p : "";
    size_t len = raw->len, head = ch->head < len ? ch->head : len;
    if (!budget)
        return -ENOSPC;
    /* The middle takes the head's last partial line and the tail's first:
     * each side then starts and ends a line, and the marker's lines are
     * whole ones. */
    const char *nl = memrchr(p, '\n', head);
    size_t hcut = nl ? (size_t)(nl - p) + 1 : 0;
    nl = memchr(p + head, '\n', len - head);
    size_t tcut = nl ? (size_t)(nl - p) + 1 : len;
    uint64_t gap = ch->omitted + (tcut - hcut);
    uint64_t kept_nl = buf_count(p, hcut, '\n') +
                       buf_count(p + tcut, len - tcut, '\n');
    if (kept_nl > ch->newlines)
        return -EIO; /* not the bytes the newlines were counted in */
    uint64_t gap_nl = ch->newlines - kept_nl;
    /* It ends on a line end unless it runs to the end of an output that
     * stops mid-line. */
    uint64_t gap_lines = gap_nl + (tcut == len && !ch->ends_line);
    codex_load_grammars(cx);
    sq_opts_t so = {.command = session_command(s),
                    .log_path = session_log_path(s), .cols = codex_cols(s),
                    .budget_bytes = budget,
                    .grammars = cx->grammars, .raw_base = ch->from,
                    .line_base = ch->lines_before};
    squash_t *sq = NULL;
    int rc = squash_new(&so, codex_collect, cond, &sq);
    if (rc == 0)
        rc = squash_feed(sq, p, hcut, 0);
    if (rc == 0)
        rc = squash_skip(sq, gap, gap_lines);
    if (rc == 0)
        rc = squash_feed(sq, p + tcut, len - tcut, 0);
    if (rc == 0) {
        codex_exit_signal(s, sq);
        rc = squash_finish(sq, exit_code, dur_ms, 0);
    }
    squash_free(sq);
    if (rc == 0 && (cond->len == 0 || cond->len > budget))
        rc = -ENOSPC; /* the facts alone are over a tiny budget */
    if (rc < 0)
        cond->len = 0;
    return rc;
}

/* ------------------------------------------------------------- results */

static void xcall_free(struct xcall *x)
{
    free(x);
}

/* Why rein ended a session, for the agent that would otherwise read a
 * SIGTERM as the program's own failure; NULL when it ended by itself. */
/* The longest line in p: the bytes between line ends (NL, or CR, which a
 * terminal turns into one). */
static size_t codex_longest_line(const char *p, size_t n)
{
    size_t longest = 0, cur = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n' || p[i] == '\r')
            cur = 0;
        else if (++cur > longest)
            longest = cur;
    }
    return longest;
}

/* After data went to session sid's terminal: says in x's write_error that
 * the terminal cut a line of it, when it reads lines (canonical mode) and
 * one is longer than CODEX_CANON_LINE_MAX. */
static void codex_note_cut_line(mcp_codex_t *cx, int64_t sid,
                                struct xcall *x, const char *p,
                                size_t n)
{
    struct termios t;
    int fd = sup_run_fd(cx->sup, sid);
    size_t longest = codex_longest_line(p, n);
    if (longest <= CODEX_CANON_LINE_MAX || x->write_error[0] || fd < 0 ||
        tcgetattr(fd, &t) < 0 || !(t.c_lflag & ICANON))
        return;
    snprintf(x->write_error, sizeof x->write_error,
             "a line of %zu bytes was cut to %u: the terminal reads lines "
             "(canonical mode) and keeps at most %u bytes of one; start "
             "the command with tty: false to give it long lines whole",
             longest, CODEX_CANON_LINE_MAX, CODEX_CANON_LINE_MAX);
}

static const char *codex_reason_text(rein_reason_t r)
{
    switch (r) {
    case REIN_REASON_OVERALL_TIMEOUT:
        return "timeout_ms reached; rein ended the session";
    case REIN_REASON_NO_OUTPUT_TIMEOUT:
        return "no output for idle_timeout_ms; rein ended the session";
    case REIN_REASON_MANUAL_CANCEL:
        return "killed through kill_session";
    case REIN_REASON_NO_INPUT:
        return "waited for keys with its input over; rein ended the session";
    case REIN_REASON_SHUTDOWN:
        return "rein was shutting down; it ended the session";
    case REIN_REASON_OWNERSHIP_ESCAPE:
        return "a process left the session's boundary; rein ended it";
    default:
        return NULL;
    }
}

/* Builds and sends the result of an exec_command/write_stdin wait. */
static void codex_exec_result(struct xcall *x, session_wake_t why)
{
    mcp_codex_t *cx = x->cx;
    session_t *s = x->s;
    buf_t out = BUF_INIT, raw = BUF_INIT, prompt = BUF_INIT, text = BUF_INIT;
    session_chunk_t ch;
    memset(&ch, 0, sizeof ch);
    /* The input check drains what the process printed before blocking,
     * so it comes before taking the output. */
    bool awaiting = session_running(s) && session_check_input(s, &prompt);
    session_take_output(s, &out, &raw, &ch);
    bool running = session_running(s);
    int code, signo;
    bool incomplete;
    session_exit_info(s, &code, &signo, &incomplete, NULL);
    double wall = (double)(loop_now(cx->loop) - x->t0) / 1000.0;
    size_t before = out.len;
    uint64_t omitted = ch.omitted;
    bool truncated;
    vtview_t *view = session_view(s);
    uint64_t cuts[TERM_ANSWER_ALT_SPANS][2];
    size_t ncuts = 0;
    bool drawn = false, as_shown = false;
    buf_t vtext = BUF_INIT, lead = BUF_INIT;
    /* A full-screen program's display: the screen, not its bytes.  When
     * the program switched to it in this poll, the text before the switch
     * (`cmd; vim f`, the echo of `less f` at a shell's prompt) comes first,
     * as the terminal showed it, when it leaves room for the screen. */
    unsigned rows = 0, cut_from = 0;
    bool on_screen = session_tty(s) && ch.bytes && session_alt_screen(s);
    uint64_t since = on_screen ? session_alt_since(s) : UINT64_MAX;
    bool led = false;
    if (on_screen && since > ch.from && since < ch.from + ch.bytes &&
        !ch.omitted && raw.len == ch.bytes) {
        buf_t pre = raw;
        pre.len = (size_t)(since - ch.from);
        led = codex_tty_text(s, &pre, &ch, false, &lead, &drawn, cuts,
                             &ncuts) == 0 &&
              lead.len;
        if (led && lead.p[lead.len - 1] != '\n')
            buf_append_byte(&lead, '\n');
        if (led)
            buf_printf(&lead, CODEX_SCREEN_FOLLOWS_MARKER, since,
                       ch.from + ch.bytes);
        led = led && lead.len < x->budget;
    }
    size_t room = led ? x->budget - lead.len : x->budget;
    long screen_cut = on_screen ? codex_screen_view(s, room, &out, &rows,
                                                    &cut_from)
                                : -ENOENT;
    bool screen = screen_cut >= 0;
    if (screen && led) {
        buf_append(&lead, out.p ? out.p : "", out.len);
        buf_free(&out);
        out = lead;
        lead = (buf_t)BUF_INIT;
    }
    led = led && screen;
    /* A terminal's output as the text it shows, when the poll's bytes
     * are all at hand and that text fits; else the usual views, and the
     * terminal's view steps over the bytes. */
    if (view && !screen && !ch.omitted && raw.len == ch.bytes)
        as_shown = codex_tty_text(s, &raw, &ch, !session_running(s), &vtext,
                                  &drawn, cuts, &ncuts) == 0 &&
                   vtext.len <= x->budget;
    else if (view && vtview_offset(view) < ch.from + ch.bytes)
        vtview_skip(view, ch.from + ch.bytes - vtview_offset(view),
                    ch.newlines);
    /* The text before a screen was shown, with what it drew over. */
    if (!led && !as_shown && view) {
        ncuts = 0;
        drawn = false;
        vtview_unshow(view); /* the line in progress was not seen */
    }
    /* The buffer dropped a middle: take every byte from the log instead,
     * so a hazard there is not lost with it. */
    buf_t cond = BUF_INIT;
    int scan = ch.omitted && !screen
                   ? codex_from_log(cx, s, ch.from, ch.bytes, ch.lines_before,
                                    running ? -1 : code,
                                    (uint64_t)(wall * 1000), x->budget, &cond)
                   : -ENOENT;
    /* Past what a view reads from the log, the head and tail it kept are
     * condensed around a marker for the middle; the buffered text (its
     * gap line is not a marker) is shown only when that fails. */
    bool headtail = !screen && scan < 0 && ch.omitted &&
                    codex_headtail_view(cx, s, &raw, &ch, running ? -1 : code,
                                        (uint64_t)(wall * 1000), x->budget,
                                        &cond) == 0;
    if (screen) {
        truncated = screen_cut > 0;
        omitted = (uint64_t)screen_cut;
    } else if (scan == 1) { /* the whole output, from the log */
        buf_free(&out);
        out = cond;
        truncated = false;
        omitted = 0;
    } else if (scan == 0 || headtail) {
        buf_free(&out);
        out = cond;
        truncated = true;
        omitted = ch.bytes > out.len ? ch.bytes - out.len : 1;
    } else if (as_shown) {
        buf_free(&cond);
        buf_free(&out);
        out = vtext;
        vtext = (buf_t)BUF_INIT;
        truncated = false;
    } else if (ch.omitted) {
        /* Not even that (a budget too small for the facts alone, or no
         * memory): the raw head and tail are not contiguous, so no view
         * is made of them as if they were; the tail that fits. */
        buf_free(&cond);
        truncated = out.len > x->budget;
        if (truncated)
            codex_tail_only(&out, x->budget);
        if (truncated && before > out.len)
            omitted += before - out.len;
    } else {
        buf_free(&cond);
        truncated = codex_fit(cx, s, running ? -1 : code,
                              (uint64_t)(wall * 1000), &raw, &ch, &out,
                              x->budget);
        if (truncated && before > out.len)
            omitted += before - out.len;
    }
    if (truncated && omitted == 0)
        omitted = 1; /* something was condensed away */
    /* Counted in text, which repairs made longer (an invalid byte is a
     * 3-byte U+FFFD): never more than the output had. */
    if (omitted > ch.bytes && ch.bytes)
        omitted = ch.bytes;
    /* The call's whole time, what it took to condense included (a long
     * output's view read from the log takes a moment). */
    wall = (double)(loop_clock_ms() - x->t0) / 1000.0;
    char cid[2 * CODEX_CHUNK_ID_BYTES + 1];
    chunk_id(cid);
    uint64_t tokens = (ch.bytes + CODEX_BYTES_PER_TOKEN - 1) /
                      CODEX_BYTES_PER_TOKEN;
    /* Still running: it takes its place in the store now (a command that
     * exited never did), perhaps pruning another, named below -- never s,
     * whose id this result hands out, nor one another call is using. */
    if (running)
        session_settle(s);
    int64_t pruned[CODEX_PRUNED_MAX];
    size_t npruned = session_take_pruned(cx->store, pruned, CODEX_PRUNED_MAX);
    char sb[24];

    buf_printf(&text, "Chunk ID: %s\nWall time: %.4f seconds\n", cid, wall);
    if (!running)
        buf_printf(&text, "Process exited with code %d\n", code);
    else
        buf_printf(&text, "Process running with session ID %" PRId64 "\n",
                   session_id(s));
    buf_printf(&text, "Original token count: %" PRIu64 "\n", tokens);
    if (!running && signo)
        buf_printf(&text, "Signal: %s\n", codex_sig_name(signo, sb, sizeof sb));
    rein_reason_t reason = session_exit_reason(s);
    const char *ended = running ? NULL : codex_reason_text(reason);
    if (ended)
        buf_printf(&text, "Ended: %s\n", ended);
    /* `server &` in cmd: the model would think the server still runs. */
    bool leftovers = !running && session_leftovers_ended(s);
    bool hung_up = !running && session_leftovers_hung_up(s);
    if (leftovers || hung_up)
        buf_printf(&text, "Background: %s\n",
                   !hung_up     ? CODEX_LEFTOVERS_TEXT
                   : leftovers ? CODEX_HUNG_UP_AND_LEFTOVERS_TEXT
                               : CODEX_HUNG_UP_TEXT);
    if (session_log_path(s))
        buf_printf(&text, "Log: %s\n", session_log_path(s));
    if (x->yield_clamped)
        buf_printf(&text, "Yield time: %u ms (clamped)\n", x->yield_ms);
    if (x->size_clamped) {
        unsigned c, r;
        session_size(s, &c, &r);
        buf_printf(&text, "Terminal size: %ux%u (clamped to %u..%u columns, "
                          "%u..%u rows)\n",
                   c, r, REIN_PTY_MIN_COLS, REIN_PTY_MAX_COLS,
                   REIN_PTY_MIN_ROWS, REIN_PTY_MAX_ROWS);
    }
    if (screen) {
        uint64_t at = led ? since : ch.from;
        buf_printf(&text,
                   "Screen: a full-screen program's display (the "
                   "alternate screen), rendered; its %" PRIu64 " bytes are "
                   "log bytes %" PRIu64 "-%" PRIu64,
                   ch.from + ch.bytes - at, at, ch.from + ch.bytes);
        if (led)
            buf_printf(&text, ", after the output before it (log bytes "
                              "%" PRIu64 "-%" PRIu64 ")",
                       ch.from, since);
        if (screen_cut > 0)
            buf_printf(&text, "; rows %u-%u not shown (over "
                              "max_output_tokens)", cut_from, rows);
        buf_printf(&text, "\n");
    } else if (ncuts == 1) {
        buf_printf(&text,
                   "Screen: a full-screen program left the alternate "
                   "screen; its display, log bytes %" PRIu64 "-%" PRIu64
                   ", is left out\n",
                   cuts[0][0], cuts[0][1]);
    } else if (ncuts) {
        buf_printf(&text,
                   "Screen: full-screen programs left the alternate screen "
                   "%zu times; their displays, log bytes",
                   ncuts);
        for (size_t i = 0; i < ncuts; i++)
            buf_printf(&text, "%s %" PRIu64 "-%" PRIu64, i ? "," : "",
                       cuts[i][0], cuts[i][1]);
        buf_printf(&text, ", are left out\n");
    } else if (truncated) {
        buf_printf(&text,
                   "Truncated: %" PRIu64 " bytes not shown (over "
                   "max_output_tokens); this output covers log bytes "
                   "%" PRIu64 "-%" PRIu64 ", from log line %" PRIu64 "\n",
                   omitted, ch.from, ch.from + ch.bytes,
                   ch.lines_before + 1);
    }
    if (drawn)
        buf_printf(&text,
                   "Terminal: text drawn over (a progress bar, a redrawn "
                   "line) is shown at its last frame; log bytes %" PRIu64
                   "-%" PRIu64 " hold every frame\n",
                   ch.from, ch.from + ch.bytes);
    if (ch.omitted && scan == 0)
        buf_printf(&text,
                   "Omitted: %" PRIu64 " bytes over the 1 MiB buffer; the "
                   "condensed output was made from the log and covers "
                   "them\n",
                   ch.omitted);
    else if (ch.omitted && scan < 0)
        buf_printf(&text,
                   "Omitted: %" PRIu64 " bytes held in the log only (over "
                   "the 1 MiB buffer); hazards among them are not shown "
                   "(%s): read_output with grep searches them\n",
                   ch.omitted, codex_scan_error(scan));
    if (awaiting)
        buf_printf(&text, "Awaiting input: yes\n");
    if (why == SESSION_WAKE_PATTERN)
        buf_printf(&text, "Wait for: %s\n", session_wait_error(s));
    if (x->write_error[0])
        buf_printf(&text, "Stdin: %s\n", x->write_error);
    if (npruned) {
        buf_printf(&text, "Pruned sessions:");
        for (size_t i = 0; i < npruned; i++)
            buf_printf(&text, "%s %" PRId64, i ? "," : "", pruned[i]);
        buf_printf(&text, "\n");
    }
    /* Near the cap, before a session the model still needs is pruned. */
    size_t open = session_count(cx->store);
    bool crowded = running && open >= session_warn_at(cx->store);
    if (crowded)
        buf_printf(&text,
                   "Sessions: %zu open; at %zu the least recently used one "
                   "is pruned (ended): end those you no longer need with "
                   "kill_session\n",
                   open, session_max_live(cx->store));
    buf_printf(&text, "Output:\n");
    buf_append(&text, out.p ? out.p : "", out.len);

    json_t *sc = json_object();
    json_t *jp = json_array();
    for (size_t i = 0; i < npruned; i++)
        json_array_append_new(jp, json_integer(pruned[i]));
    json_object_set_new(sc, "chunk_id", json_string(cid));
    json_object_set_new(sc, "wall_time_seconds", json_real(wall));
    if (!running) {
        json_object_set_new(sc, "exit_code", json_integer(code));
        if (signo)
            json_object_set_new(sc, "signal",
                                json_string(codex_sig_name(signo, sb, sizeof sb)));
        json_object_set_new(sc, "reason",
                            json_string(rein_reason_name(reason)));
        if (leftovers)
            json_object_set_new(sc, "background_ended", json_true());
        if (hung_up)
            json_object_set_new(sc, "background_hung_up", json_true());
    } else {
        json_object_set_new(sc, "session_id", json_integer(session_id(s)));
    }
    json_object_set_new(sc, "original_token_count",
                        json_integer((json_int_t)tokens));
    json_object_set_new(sc, "output", json_utf8(out.p, out.len));
    if (session_log_path(s))
        json_object_set_new(sc, "log_path",
                            json_string(session_log_path(s)));
    if (session_cwd(s))
        json_object_set_new(sc, "cwd", json_string(session_cwd(s)));
    json_object_set_new(sc, "tty", json_boolean(session_tty(s)));
    json_object_set_new(sc, "yield_time_ms", json_integer(x->yield_ms));
    json_object_set_new(sc, "truncated", json_boolean(truncated));
    if (screen)
        json_object_set_new(sc, "screen", json_true());
    json_object_set_new(sc, "omitted_bytes",
                        json_integer((json_int_t)omitted));
    json_object_set_new(sc, "awaiting_input", json_boolean(awaiting));
    if (awaiting)
        json_object_set_new(sc, "prompt", json_utf8(prompt.p, prompt.len));
    json_object_set_new(sc, "pruned", jp);
    if (crowded)
        json_object_set_new(sc, "open_sessions", json_integer((json_int_t)open));
    if (x->write_error[0])
        json_object_set_new(sc, "write_error", json_string(x->write_error));
    if (why == SESSION_WAKE_PATTERN)
        json_object_set_new(sc, "wait_for_error",
                            json_utf8(session_wait_error(s),
                                      strlen(session_wait_error(s))));

    mcp_call_result_n(x->call, sc, text.p ? text.p : "", text.len);
    buf_free(&out);
    buf_free(&vtext);
    buf_free(&lead);
    buf_free(&raw);
    buf_free(&prompt);
    buf_free(&text);
    if (running)
        session_touch(s);
    else
        session_release(s); /* its exit is reported: done with it */
}

/* kill_session's answer; why SESSION_WAKE_PREEMPTED when a later
 * kill_session took its place (it answers once the session has ended). */
static void codex_kill_result(struct xcall *x, session_wake_t why)
{
    session_t *s = x->s;
    int code = -1, signo = 0;
    bool incomplete = false, escalated = false;
    bool running = s && session_running(s);
    if (s)
        session_exit_info(s, &code, &signo, &incomplete, &escalated);
    json_t *sc = json_object();
    json_object_set_new(sc, "session_id",
                        json_integer(s ? session_id(s) : 0));
    json_object_set_new(sc, "found", json_boolean(x->found));
    json_object_set_new(sc, "signal", json_string(x->signame));
    json_object_set_new(sc, "signalled", json_boolean(x->signalled));
    /* KILL asked for is no escalation: nothing milder came first. */
    json_object_set_new(sc, "escalated",
                        json_boolean(escalated &&
                                     strcmp(x->signame, "SIGKILL") != 0));
    json_object_set_new(sc, "exit_code",
                        s && !running && code >= 0 ? json_integer(code)
                                                   : json_null());
    json_object_set_new(sc, "cleanup_incomplete",
                        json_boolean(incomplete || running));
    char text[160];
    bool said = true;
    if (why == SESSION_WAKE_PREEMPTED && running)
        snprintf(text, sizeof text,
                 "Superseded by a later kill_session of session %" PRId64
                 ", which answers once it has ended; it is still ending.",
                 session_id(s));
    else if (s && !x->signalled)
        snprintf(text, sizeof text,
                 "Session %" PRId64 " had already exited (its exit not "
                 "reported yet); nothing was signalled.",
                 session_id(s));
    else
        said = false;
    mcp_call_result(x->call, sc, said ? text : NULL);
    if (s && !running)
        session_release(s);
}

static void on_wake(session_t *s, session_wake_t why, void *data)
{
    (void)s;
    struct xcall *x = data;
    if (x->kind == X_KILL)
        codex_kill_result(x, why);
    else
        codex_exec_result(x, why);
    xcall_free(x);
}

static void on_call_cancel(mcp_call_t *call, void *data)
{
    (void)call;
    struct xcall *x = data;
    /* The wait ends; the session lives on for the next call, in its
     * place in the store (settled first: without its waiter, a session
     * already released is freed). */
    session_settle(x->s);
    session_wait_cancel(x->s);
    xcall_free(x);
}

/* A wait's progress is its time against its deadline, so that it moves
 * while the session is silent: a client that keeps a request alive on
 * progress (the TypeScript SDK's resetTimeoutOnProgress) must not give up
 * on a long empty poll.  The bytes seen so far go in the message. */
static void on_progress(session_t *s, uint64_t bytes, uint64_t waited_ms,
                        void *data)
{
    (void)s;
    struct xcall *x = data;
    char msg[96];
    if (bytes)
        snprintf(msg, sizeof msg, "%" PRIu64 " bytes of output so far",
                 bytes);
    else
        snprintf(msg, sizeof msg, "no output yet, %" PRIu64 " s waited",
                 waited_ms / 1000);
    mcp_call_progress(x->call, (double)waited_ms, (double)x->yield_ms, msg);
}

/* Starts the wait of x on its session. */
static int codex_wait(struct xcall *x, const char *wait_for, bool detect,
                      uint64_t first_check)
{
    session_wait_opts_t wo = {
        .timeout_ms = x->yield_ms,
        .wait_for = wait_for,
        .detect_input = detect,
        .first_check_ms = first_check,
        .progress = mcp_call_wants_progress(x->call) ? on_progress : NULL,
        .progress_ms = CODEX_PROGRESS_MS,
    };
    int rc = session_wait(x->s, &wo, on_wake, x);
    if (rc < 0)
        return rc;
    mcp_call_on_cancel(x->call, on_call_cancel, x);
    return 0;
}

/* --------------------------------------------------------- exec_command */

/* Resolves workdir against the server's cwd into out (absolute, real). */
static int codex_workdir(mcp_codex_t *cx, const char *wd, char *out)
{
    char joined[PATH_MAX];
    if (!wd || !*wd)
        wd = ".";
    int n = wd[0] == '/' ? snprintf(joined, sizeof joined, "%s", wd)
                         : snprintf(joined, sizeof joined, "%s/%s", cx->cwd,
                                    wd);
    if (n < 0 || (size_t)n >= sizeof joined)
        return -ENAMETOOLONG;
    if (!realpath(joined, out))
        return -errno;
    struct stat st;
    if (stat(out, &st) < 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* True when shell names an executable file (a path, or a name on the
 * server's PATH); a name is resolved into found (PATH_MAX), so that a PATH
 * in the command's `env` changes where its commands are found, not which
 * shell was checked here (it made a valid shell fail to start with a bare
 * "No such file or directory"). */
static bool codex_shell_ok(const char *shell, char *found)
{
    struct stat st;
    if (!*shell)
        return false;
    if (strchr(shell, '/')) {
        snprintf(found, PATH_MAX, "%s", shell);
        return stat(shell, &st) == 0 && S_ISREG(st.st_mode) &&
               access(shell, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char cand[PATH_MAX];
    while (*path) {
        const char *c = strchr(path, ':');
        size_t len = c ? (size_t)(c - path) : strlen(path);
        int n = snprintf(cand, sizeof cand, "%.*s/%s", (int)len, path, shell);
        if (n > 0 && (size_t)n < sizeof cand && stat(cand, &st) == 0 &&
            S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
            memcpy(found, cand, (size_t)n + 1);
            return true;
        }
        if (!c)
            break;
        path = c + 1;
    }
    return false;
}

static unsigned clamp_u(json_int_t v, unsigned lo, unsigned hi)
{
    return v < (json_int_t)lo ? lo : v > (json_int_t)hi ? hi : (unsigned)v;
}

/* A yield_time_ms argument (a number, as the seed types it: 1000.5 is
 * 1000 ms), or dflt when absent.  Negative is 0 and a huge one stays
 * within json_int_t, for clamp_u to bound either way. */
static json_int_t codex_ms_arg(const json_t *v, json_int_t dflt)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (!json_is_real(v))
        return dflt;
    double d = json_real_value(v);
    return d <= 0 ? 0 : d >= (double)UINT32_MAX ? UINT32_MAX : (json_int_t)d;
}

/* The danger check's answer when the command must not run (yet). */
static int codex_dangerous(mcp_call_t *call, const router_result_t *rr)
{
    const char *what = rr->danger_what ? rr->danger_what : "a risky command";
    const char *id = rr->danger_id ? rr->danger_id : "dangerous";
    if (rr->danger == ROUTER_DANGER_FORBID)
        return mcp_call_errorf(call,
                               "Not run: the policy forbids this command "
                               "(%s).", id);
    buf_t t = BUF_INIT;
    buf_printf(&t,
               "Not run: this command looks dangerous (%s: %s). Nothing was "
               "executed. If it is really intended, call exec_command again "
               "with confirm_dangerous: true.",
               id, what);
    json_t *sc = json_pack("{s:s, s:b, s:s, s:b}", "output", t.p,
                           "dangerous", 1, "danger", id, "ran", 0);
    int rc = mcp_call_result(call, sc, t.p);
    buf_free(&t);
    return rc;
}

/*
 * A command longer than an exec argument may be (SHELL_ARG_MAX: a large
 * heredoc writing a file is a usual one) reaches a POSIX shell in pieces,
 * each an argument of its own, which this script joins and evals; whole,
 * exec would refuse it (E2BIG).  The pieces together are still bounded by
 * the system's ARG_MAX, with the environment.
 */
static const char CODEX_JOIN_SCRIPT[] =
    "__rein_c=; for __rein_p do __rein_c=$__rein_c$__rein_p; done; set --; "
    "eval \"unset __rein_c __rein_p\n$__rein_c\"";

/* Whether shell (a path or a name) is one of the POSIX shells that run
 * CODEX_JOIN_SCRIPT. */
static bool codex_shell_posix(const char *shell)
{
    static const char *const posix[] = {"sh",  "bash", "dash", "zsh", "ksh",
                                        "mksh", "ksh93", "ash", "yash",
                                        NULL};
    const char *base = strrchr(shell, '/');
    base = base ? base + 1 : shell;
    for (const char *const *p = posix; *p; p++)
        if (!strcmp(base, *p))
            return true;
    return false;
}

/* The argv of a command too long for one argument: shell, -c or -lc,
 * CODEX_JOIN_SCRIPT, $0, then the pieces (in *pieces, to free with the
 * array).  0 or -ENOMEM. */
static int codex_join_argv(const char *shell, bool login, const char *cmd,
                           const char ***argv, char ***pieces)
{
    size_t len = strlen(cmd), step = SHELL_ARG_MAX - 1;
    size_t n = (len + step - 1) / step;
    const char **v = calloc(n + 5, sizeof *v);
    char **p = calloc(n + 1, sizeof *p);
    if (!v || !p)
        goto fail;
    v[0] = shell;
    v[1] = login ? "-lc" : "-c";
    v[2] = CODEX_JOIN_SCRIPT;
    v[3] = shell;
    for (size_t i = 0; i < n; i++) {
        size_t off = i * step;
        if (!(p[i] = strndup(cmd + off, len - off < step ? len - off : step)))
            goto fail;
        v[4 + i] = p[i];
    }
    *argv = v;
    *pieces = p;
    return 0;
fail:
    for (size_t i = 0; p && i < n; i++)
        free(p[i]);
    free(p);
    free(v);
    return -ENOMEM;
}

/* A terminal dimension asked for: absent, the fallback; otherwise at least
 * 1, so that session_resize and spawn clamp it to their range (0 would
 * mean the default, and -5 must be the smallest size, not the default). */
static unsigned codex_dim(const json_t *v, unsigned fallback)
{
    if (!json_is_integer(v))
        return fallback;
    return (unsigned)clamp_u(json_integer_value(v), 1, UINT16_MAX);
}

/* Whether the cols or rows asked for (args') are not session s's size:
 * out of range, clamped. */
static bool codex_size_clamped(const session_t *s, const json_t *args)
{
    json_t *jc = json_object_get(args, "cols");
    json_t *jr = json_object_get(args, "rows");
    unsigned c = 0, r = 0;
    if (!session_tty(s))
        return false;
    session_size(s, &c, &r);
    return (json_is_integer(jc) && json_integer_value(jc) != (json_int_t)c) ||
           (json_is_integer(jr) && json_integer_value(jr) != (json_int_t)r);
}

static int tool_exec(mcp_call_t *call, json_t *args, void *ud)
{
    mcp_codex_t *cx = ud;
    const char *cmd = json_string_value(json_object_get(args, "cmd"));
    const char *wd = json_string_value(json_object_get(args, "workdir"));
    const char *shell = json_string_value(json_object_get(args, "shell"));
    const char *stdin_text = json_string_value(json_object_get(args, "stdin"));
    const char *wait_for = json_string_value(json_object_get(args,
                                                             "wait_for"));
    bool tty = json_is_true(json_object_get(args, "tty"));
    bool login = json_is_true(json_object_get(args, "login"));
    bool confirm = json_is_true(json_object_get(args, "confirm_dangerous"));
    json_t *env_obj = json_object_get(args, "env");
    char dir[PATH_MAX], shell_path[PATH_MAX], err[256];
    const char **envv = NULL;
    const char **joined = NULL; /* the argv of a long command */
    char **pieces = NULL;
    struct xcall *x = NULL;
    int rc;

    if (cx->shutting_down)
        return mcp_call_error(call, "The server is shutting down.");
    /* A command of only blanks runs nothing and exits 0: a model that sent
     * one meant something else, and success would hide that. */
    if (cmd[strspn(cmd, " \t\r\n")] == '\0')
        return mcp_call_error(call, "`cmd` is empty: give the command to "
                                    "run.");
    if (!shell)
        shell = "/bin/bash";
    if ((rc = codex_workdir(cx, wd, dir)) < 0)
        return mcp_call_errorf(call,
                               "`workdir` %s is not a usable directory (%s; "
                               "relative paths resolve against %s).",
                               wd ? wd : ".", rein_strerror(rc), cx->cwd);
    if (!codex_shell_ok(shell, shell_path))
        return mcp_call_errorf(call,
                               "`shell` %s was not found or is not "
                               "executable.", shell);
    if (wait_for && session_pattern_check(wait_for, err, sizeof err) < 0)
        return mcp_call_errorf(call, "`wait_for` is not a valid regular "
                                     "expression (%s).", err);
    size_t cmd_len = strlen(cmd);
    if (cmd_len + 1 > SHELL_ARG_MAX && !codex_shell_posix(shell))
        return mcp_call_errorf(call,
                               "`cmd` is %zu bytes: a command over %u KiB "
                               "runs only under a POSIX shell (sh, bash, "
                               "zsh, dash, ksh), not %s. Split it into "
                               "several commands.",
                               cmd_len, SHELL_ARG_MAX / 1024, shell);

    /* The environment: quiet, pager-free pipes; a real terminal on a PTY;
     * the caller's entries last, so they win. */
    static const char *const pipe_env[] = {"NO_COLOR=1", "TERM=dumb",
                                           "PAGER=cat", "GIT_PAGER=cat",
                                           "LANG=C.UTF-8"};
    static const char *const tty_env[] = {"TERM=xterm-256color",
                                          "PAGER=cat"};
    size_t nbase = tty ? 2 : 5, nenv = json_object_size(env_obj);
    envv = calloc(nbase + nenv + 1, sizeof *envv);
    char **owned = calloc(nenv + 1, sizeof *owned);
    if (!envv || !owned) {
        free(envv);
        free(owned);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nbase; i++)
        envv[i] = tty ? tty_env[i] : pipe_env[i];
    size_t k = 0;
    const char *key;
    json_t *val;
    rc = 0;
    json_object_foreach(env_obj, key, val)
    {
        if (!json_is_string(val)) {
            rc = mcp_call_errorf(call, "`env.%.64s` must be a string.", key);
            goto out;
        }
        /* "A=B": x would silently set A to "B=x". */
        if (!*key || strchr(key, '=')) {
            rc = mcp_call_errorf(call, "`env` name `%.64s` is not a valid "
                                       "variable name (it is empty or holds "
                                       "'=').", key);
            goto out;
        }
        if (asprintf(&owned[k], "%s=%s", key, json_string_value(val)) < 0) {
            owned[k] = NULL;
            rc = -ENOMEM;
            goto out;
        }
        envv[nbase + k] = owned[k];
        k++;
    }

    /* Routed in the environment it will run in: `GIT_EDITOR=true` there
     * or the PAGER=cat above make `git commit` or `man ls` need no
     * terminal; on pipes a pager prints and a shell reads the pipe. */
    router_result_t rr;
    router_ctx_t rctx = {.env = envv, .inherit_env = true, .pipes = !tty};
    if (cx->router &&
        router_classify_ctx(cx->router, cmd, &rctx, &rr) == 0) {
        bool stop = false;
        if (rr.danger != ROUTER_SAFE && (!confirm ||
                                         rr.danger == ROUTER_DANGER_FORBID)) {
            codex_dangerous(call, &rr);
            stop = true;
        } else if (rr.category == ROUTER_INTERACTIVE && !tty &&
                   !stdin_text) {
            /* With `stdin` the program reads that text, then EOF: it
             * cannot wait at a prompt nobody answers. */
            if (rr.tty_why)
                mcp_call_errorf(call,
                                "Not run: `%.80s` needs a terminal: %s. Or "
                                "call exec_command again with tty: true, "
                                "then drive it with write_stdin.",
                                cmd, rr.tty_why);
            else
                mcp_call_errorf(call,
                                "Not run: `%.80s` is an interactive program "
                                "and needs a terminal. Call exec_command "
                                "again with tty: true, then drive it with "
                                "write_stdin.",
                                cmd);
            stop = true;
        }
        router_result_free(&rr);
        if (stop) {
            rc = 0;
            goto out;
        }
    }

    json_t *jy = json_object_get(args, "yield_time_ms");
    json_int_t asked = codex_ms_arg(jy, CODEX_DEFAULT_EXEC_YIELD_MS);
    const char *one[] = {shell_path, login ? "-lc" : "-c", cmd, NULL};
    if (cmd_len + 1 > SHELL_ARG_MAX &&
        (rc = codex_join_argv(shell_path, login, cmd, &joined, &pieces)) < 0)
        goto out;
    const char **argv = joined ? joined : one;
    session_spawn_opts_t so = {
        .argv = argv,
        .command = cmd,
        .cwd = dir,
        .env = envv,
        .tty = tty,
        .cols = codex_dim(json_object_get(args, "cols"), CODEX_DEFAULT_COLS),
        .rows = codex_dim(json_object_get(args, "rows"), CODEX_DEFAULT_ROWS),
        .timeout_ms = clamp_u(json_integer_value(json_object_get(args,
                                                                 "timeout_ms")),
                              0, UINT32_MAX),
        .idle_timeout_ms = clamp_u(json_integer_value(json_object_get(
                                       args, "idle_timeout_ms")),
                                   0, UINT32_MAX),
        .starting = true,
    };
    if (!(x = calloc(1, sizeof *x))) {
        rc = -ENOMEM;
        goto out;
    }
    x->cx = cx;
    x->call = call;
    x->kind = X_EXEC;
    x->t0 = loop_now(cx->loop);
    x->budget = budget_of(args);
    x->yield_ms = clamp_u(asked, CODEX_MIN_YIELD_MS, CODEX_MAX_YIELD_MS);
    x->yield_clamped = json_is_number(jy) && (json_int_t)x->yield_ms != asked;
    rc = session_spawn(cx->store, &so, &x->s);
    if (rc == -E2BIG) {
        rc = mcp_call_errorf(call,
                             "Could not start `%.80s`: the command (%zu "
                             "bytes) and its environment are over what the "
                             "system passes to a program (ARG_MAX, %ld "
                             "bytes). Split it into several commands.",
                             cmd, cmd_len, sysconf(_SC_ARG_MAX));
        goto out;
    }
    if (rc == REIN_ESESSIONS_FULL) {
        /* Every session is held for a call still in flight (or is among
         * the most recently used): pruning one would end a session the
         * model is driving, so nothing is started. */
        rc = mcp_call_errorf(call,
                             "Not run: `%.80s`: %zu sessions are open, the "
                             "most there may be (twice the %zu held), and "
                             "none may be pruned to make room: each is in "
                             "use by a call still in flight or among the "
                             "most recently used. Call again once some of "
                             "those calls have returned, or end sessions "
                             "you no longer need with kill_session.",
                             cmd, session_count(cx->store),
                             session_max_live(cx->store));
        goto out;
    }
    if (rc < 0) {
        rc = mcp_call_errorf(call, "Could not start `%.80s`: %s.", cmd,
                             rein_strerror(rc));
        goto out;
    }
    x->size_clamped = codex_size_clamped(x->s, args);
    if (stdin_text) {
        /* Bytes for the process: a NUL in them is data (nul_args). */
        size_t len = json_string_length(json_object_get(args, "stdin"));
        int wr = len ? rein_sup_write(cx->sup, session_id(x->s), stdin_text,
                                      len)
                     : 0;
        if (wr < 0)
            snprintf(x->write_error, sizeof x->write_error,
                     "stdin write failed: %s", rein_strerror(wr));
        else if (session_tty(x->s))
            codex_note_cut_line(cx, session_id(x->s), x, stdin_text, len);
        rein_sup_close_stdin(cx->sup, session_id(x->s));
    }
    rc = codex_wait(x, wait_for, true, CODEX_EARLY_EXIT_GRACE_MS);
    if (rc == 0) {
        x = NULL; /* the wait owns it now */
    } else {
        /* It runs on, for write_stdin to poll: in its place in the store
         * now, since no first result will settle it. */
        session_settle(x->s);
        rc = mcp_call_errorf(call, "Session %" PRId64 " started, but "
                                   "waiting on it failed: %s.",
                             session_id(x->s), rein_strerror(rc));
    }
out:
    free(x);
    for (size_t i = 0; i <= nenv; i++)
        free(owned[i]);
    free(owned);
    free(envv);
    for (size_t i = 0; pieces && pieces[i]; i++)
        free(pieces[i]);
    free(pieces);
    free(joined);
    return rc;
}

/* ---------------------------------------------------------- write_stdin */

static int tool_write(mcp_call_t *call, json_t *args, void *ud)
{
    mcp_codex_t *cx = ud;
    json_int_t id = json_integer_value(json_object_get(args, "session_id"));
    json_t *jc = json_object_get(args, "chars");
    json_t *jb = json_object_get(args, "chars_b64");
    json_t *keys = json_object_get(args, "keys");
    const char *wait_for = json_string_value(json_object_get(args,
                                                             "wait_for"));
    bool close_in = json_is_true(json_object_get(args, "close_stdin"));
    json_t *jcols = json_object_get(args, "cols");
    json_t *jrows = json_object_get(args, "rows");
    buf_t data = BUF_INIT;
    char err[256];
    int rc = 0;

    session_t *s = session_find(cx->store, id);
    if (!s)
        return mcp_call_errorf(call,
                               "Unknown session_id %" JSON_INTEGER_FORMAT
                               ": it never existed, was pruned, or its exit "
                               "was already reported (read_output still "
                               "reads its log).",
                               id);
    struct xcall *kill = session_waiter(s, on_wake);
    if (kill && kill->kind == X_KILL)
        /* Its wait would take the kill's place and answer it early. */
        return mcp_call_errorf(call,
                               "Session %" JSON_INTEGER_FORMAT " is being "
                               "ended by kill_session, which answers once "
                               "it has ended; nothing was written "
                               "(read_output reads its output meanwhile).",
                               id);
    /* Both default to "": an empty one is no input, as the seed has it
     * ("Empty = pure poll"); only two that carry bytes contradict. */
    if (json_is_string(jc) && json_string_length(jc) == 0)
        jc = NULL;
    if (json_is_string(jb) && json_string_length(jb) == 0)
        jb = NULL;
    if (jc && jb)
        return mcp_call_error(call, "Pass `chars` or `chars_b64`, not both.");
    if (wait_for && session_pattern_check(wait_for, err, sizeof err) < 0)
        return mcp_call_errorf(call, "`wait_for` is not a valid regular "
                                     "expression (%s).", err);
    if (jc) {
        char *dec;
        size_t n;
        const char *c = json_string_value(jc);
        if ((rc = rein_unescape(c, json_string_length(jc), &dec, &n)) < 0)
            return rc;
        buf_append(&data, dec, n);
        rein_free(dec);
    } else if (jb) {
        unsigned char *dec;
        size_t n;
        rc = rein_base64_decode(json_string_value(jb), json_string_length(jb),
                                &dec, &n);
        if (rc == REIN_EBASE64)
            return mcp_call_error(call, "`chars_b64` is not valid base64.");
        if (rc < 0)
            return rc;
        buf_append(&data, dec, n);
        rein_free(dec);
    }
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        char enc[KEY_ENCODE_MAX];
        const char *name = json_string_value(k);
        int n = rein_key_encode(name, enc, sizeof enc);
        char respelled[KEY_RESPELL_MAX + 32];
        if (n == REIN_EKEY &&
            keys_respell(name, respelled, sizeof respelled) > 0)
            n = rein_key_encode(respelled, enc, sizeof enc); /* `C-c` */
        if (n < 0) {
            buf_free(&data);
            return mcp_call_errorf(call,
                                   "Unknown key name `%.40s` in `keys`: a "
                                   "key id is modifiers (shift, ctrl, alt, "
                                   "super) and then one key, joined by + "
                                   "(try ctrl+c, enter, up, escape, f5, "
                                   "alt+x).",
                                   name);
        }
        /* On pipes Enter is a newline: no terminal turns CR into one. */
        if (!session_tty(s) && n == 1 && enc[0] == '\r')
            enc[0] = '\n';
        buf_append(&data, enc, (size_t)n);
    }

    struct xcall *x = calloc(1, sizeof *x);
    if (!x) {
        buf_free(&data);
        return -ENOMEM;
    }
    x->cx = cx;
    x->call = call;
    x->s = s;
    x->kind = X_WRITE;
    x->t0 = loop_now(cx->loop);
    x->budget = budget_of(args);
    int64_t sid = session_id(s);
    bool acted = data.len || close_in || jcols || jrows;
    if (data.len && session_running(s)) {
        int wr = 0;
        size_t waiting;
        if (!session_tty(s) && data.len == 1 && data.p[0] == 3)
            wr = rein_sup_signal(cx->sup, sid, SIGINT); /* Ctrl-C */
        else if (!session_tty(s) && data.len == 1 && data.p[0] == 4)
            wr = rein_sup_close_stdin(cx->sup, sid); /* Ctrl-D: EOF */
        else if ((waiting = sup_run_pending(cx->sup, sid)) >=
                 CODEX_STDIN_PENDING_MAX)
            snprintf(x->write_error, sizeof x->write_error,
                     "stdin write refused: the process has not read %zu "
                     "bytes sent earlier (at most %u may wait), so this "
                     "write (%zu bytes) was not sent",
                     waiting, CODEX_STDIN_PENDING_MAX, data.len);
        else if ((wr = rein_sup_write(cx->sup, sid, data.p, data.len)) == 0 &&
                 session_tty(s))
            codex_note_cut_line(cx, sid, x, data.p, data.len);
        if (wr < 0)
            snprintf(x->write_error, sizeof x->write_error,
                     "stdin write failed: %s%s", rein_strerror(wr),
                     wr == -EPIPE ? " (the process closed its input)"
                     : wr == REIN_EINPUT_CLOSED
                         ? " (by an earlier \\x04 or close_stdin), so "
                           "this write was not sent"
                         : "");
    } else if (data.len) {
        /* It exited since the last call: the result shows the exit, and
         * says the input was not delivered. */
        snprintf(x->write_error, sizeof x->write_error,
                 "not written: the process had already exited, so these "
                 "%zu bytes went nowhere",
                 data.len);
    }
    if (close_in && session_running(s))
        rein_sup_close_stdin(cx->sup, sid);
    if ((jcols || jrows) && session_running(s)) {
        /* The one not given stays as it is. */
        unsigned cols, rows;
        session_size(s, &cols, &rows);
        int rr = session_resize(s, codex_dim(jcols, cols),
                                codex_dim(jrows, rows));
        if (rr == -ENOTTY && !x->write_error[0])
            snprintf(x->write_error, sizeof x->write_error,
                     "resize ignored: not a tty session");
        x->size_clamped = rr == 0 && codex_size_clamped(s, args);
    }
    buf_free(&data);

    json_t *jy = json_object_get(args, "yield_time_ms");
    json_int_t asked;
    /* With wait_for and no yield_time_ms the call waits for the match,
     * as long as a call may: 250 ms would end it before most matches
     * (a prompt or an exit still ends it at once). */
    if (acted) {
        asked = codex_ms_arg(jy, wait_for ? CODEX_MAX_YIELD_MS
                                          : CODEX_DEFAULT_WRITE_YIELD_MS);
        x->yield_ms = clamp_u(asked, CODEX_MIN_YIELD_MS, CODEX_MAX_YIELD_MS);
    } else {
        asked = codex_ms_arg(jy, wait_for ? CODEX_MAX_YIELD_MS
                                          : CODEX_MIN_EMPTY_YIELD_MS);
        x->yield_ms = clamp_u(asked, CODEX_MIN_EMPTY_YIELD_MS,
                              (unsigned)cx->max_empty_poll_ms);
    }
    x->yield_clamped = json_is_number(jy) && (json_int_t)x->yield_ms != asked;
    session_touch(s);
    rc = codex_wait(x, wait_for, true, SESSION_INPUT_CHECK_MS);
    if (rc < 0) {
        free(x);
        return rc;
    }
    return 0;
}

/* --------------------------------------------------------- kill_session */

static int tool_kill(mcp_call_t *call, json_t *args, void *ud)
{
    mcp_codex_t *cx = ud;
    json_int_t id = json_integer_value(json_object_get(args, "session_id"));
    const char *name = json_string_value(json_object_get(args, "signal"));
    json_t *jg = json_object_get(args, "grace_ms");
    int signo = name ? codex_sig_parse(name) : SIGTERM;
    if (!signo)
        return mcp_call_errorf(call,
                               "Unknown signal `%.32s` (try TERM, INT, KILL, "
                               "HUP); nothing was signalled.",
                               name);
    if (json_is_integer(jg) &&
        json_integer_value(jg) > CODEX_MAX_KILL_GRACE_MS)
        return mcp_call_errorf(call,
                               "`grace_ms` must be at most %d; nothing was "
                               "signalled.",
                               CODEX_MAX_KILL_GRACE_MS);
    int grace = json_is_integer(jg) ? (int)json_integer_value(jg)
                                    : CODEX_DEFAULT_KILL_GRACE_MS;
    struct xcall *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    x->cx = cx;
    x->call = call;
    x->kind = X_KILL;
    x->t0 = loop_now(cx->loop);
    codex_sig_name(signo, x->signame, sizeof x->signame);
    x->s = session_find(cx->store, id);
    x->found = x->s != NULL;
    if (!x->s || !session_running(x->s)) {
        if (!x->s) {
            json_t *sc = json_pack("{s:I, s:b, s:s, s:b, s:b, s:n, s:b}",
                                   "session_id", id, "found", 0, "signal",
                                   x->signame, "signalled", 0, "escalated",
                                   0, "exit_code", "cleanup_incomplete", 0);
            mcp_call_result(call, sc, NULL);
        } else {
            codex_kill_result(x, SESSION_WAKE_EXIT);
        }
        free(x);
        return 0;
    }
    int rc = rein_sup_cancel(cx->sup, id, signo,
                             signo == SIGKILL ? 0 : grace);
    if (rc < 0) {
        free(x);
        return rc;
    }
    x->signalled = true;
    x->yield_ms = (unsigned)grace + CODEX_KILL_WAIT_EXTRA_MS;
    rc = codex_wait(x, NULL, false, 0);
    if (rc < 0)
        free(x);
    return rc;
}

/* -------------------------------------------------------- list_sessions */

/* Sets e's command: whole, or its first CODEX_LIST_COMMAND_MAX bytes cut
 * on a character boundary, "…" and command_bytes. */
static void codex_list_command(json_t *e, const char *cmd)
{
    size_t len = strlen(cmd);
    if (len <= CODEX_LIST_COMMAND_MAX) {
        json_object_set_new(e, "command", json_utf8(cmd, len));
        return;
    }
    size_t cut = CODEX_LIST_COMMAND_MAX;
    while (cut > 0 && ((unsigned char)cmd[cut] & 0xC0) == 0x80)
        cut--;
    buf_t b = BUF_INIT;
    buf_append(&b, cmd, cut);
    buf_append_str(&b, "\u2026");
    json_object_set_new(e, "command", json_utf8(b.p ? b.p : "", b.len));
    json_object_set_new(e, "command_bytes", json_integer((json_int_t)len));
    buf_free(&b);
}

static int tool_list(mcp_call_t *call, json_t *args, void *ud)
{
    (void)args;
    mcp_codex_t *cx = ud;
    json_t *list = json_array();
    session_t *done[SESSION_MAX_LIVE * 2];
    size_t ndone = 0;
    char sb[24];
    for (size_t i = 0;; i++) {
        session_t *s = session_at(cx->store, i);
        if (!s)
            break;
        int code, signo;
        session_exit_info(s, &code, &signo, NULL, NULL);
        bool running = session_running(s);
        json_t *e = json_object();
        json_object_set_new(e, "session_id", json_integer(session_id(s)));
        json_object_set_new(e, "pid", json_integer(session_pid(s)));
        codex_list_command(e, session_command(s));
        json_object_set_new(e, "cwd", json_string(session_cwd(s)
                                                      ? session_cwd(s)
                                                      : ""));
        json_object_set_new(e, "tty", json_boolean(session_tty(s)));
        json_object_set_new(e, "running", json_boolean(running));
        json_object_set_new(e, "exit_code",
                            !running && code >= 0 ? json_integer(code)
                                                  : json_null());
        json_object_set_new(e, "signal",
                            !running && signo
                                ? json_string(codex_sig_name(signo, sb, sizeof sb))
                                : json_null());
        json_object_set_new(e, "started_at",
                            iso_time(session_started_ms(s)));
        json_object_set_new(e, "last_output_at",
                            session_last_output_ms(s)
                                ? iso_time(session_last_output_ms(s))
                                : json_null());
        json_object_set_new(e, "bytes",
                            json_integer((json_int_t)session_bytes(s)));
        json_object_set_new(e, "log_path",
                            session_log_path(s)
                                ? json_string(session_log_path(s))
                                : json_null());
        json_array_append_new(list, e);
        /* Being listed counts as seeing the exit: reported once. */
        if (!running && ndone < sizeof done / sizeof done[0])
            done[ndone++] = s;
    }
    for (size_t i = 0; i < ndone; i++)
        session_release(done[i]);
    return mcp_call_result(call, json_pack("{s:o}", "sessions", list), NULL);
}

/* ---------------------------------------------------------- read_output */

/* The log of session id: the stored session's, or <logs>/<id>.log. */
static int codex_log_of(mcp_codex_t *cx, int64_t id, char *path, size_t n)
{
    session_t *s = session_find(cx->store, id);
    if (s && session_log_path(s)) {
        snprintf(path, n, "%s", session_log_path(s));
        return 0;
    }
    const char *dir = sup_logs_dir(cx->sup);
    if (!dir || id < 0)
        return -ENOENT;
    snprintf(path, n, "%s/%" PRId64 ".log", dir, id);
    struct stat st;
    return stat(path, &st) == 0 ? 0 : -ENOENT;
}

/* Reads [off, off+len) of the log into out (raw), naming a dropped range
 * instead of its zeros. */
static int codex_read_range(int fd, uint64_t off, uint64_t len, bool hole,
                            uint64_t ha, uint64_t hb, buf_t *out)
{
    uint64_t end = off + len;
    while (off < end) {
        if (hole && off >= ha && off < hb) {
            buf_printf(out, "\n[... bytes %" PRIu64 "-%" PRIu64
                            " dropped: the log passed its size cap ...]\n",
                       ha, hb);
            off = hb;
            continue;
        }
        uint64_t stop = hole && off < ha && end > ha ? ha : end;
        size_t n = (size_t)(stop - off);
        int rc = buf_reserve(out, n);
        if (rc < 0)
            return rc;
        ssize_t got = pread(fd, out->p + out->len, n, (off_t)off);
        if (got <= 0)
            break;
        out->len += (size_t)got;
        out->p[out->len] = 0;
        off += (uint64_t)got;
    }
    return 0;
}

static void to_utf8(buf_t *raw, buf_t *out)
{
    utf8_dec_t d;
    utf8_init(&d);
    if (utf8_decode(&d, raw->p, raw->len, out) == 0)
        utf8_finish(&d, out);
}

static int tool_read(mcp_call_t *call, json_t *args, void *ud)
{
    mcp_codex_t *cx = ud;
    json_int_t id = json_integer_value(json_object_get(args, "session_id"));
    const char *view = json_string_value(json_object_get(args, "view"));
    const char *grep = json_string_value(json_object_get(args, "grep"));
    json_t *joff = json_object_get(args, "offset");
    json_t *jlen = json_object_get(args, "length");
    json_t *jtail = json_object_get(args, "tail_lines");
    json_t *jbefore = json_object_get(args, "before");
    size_t budget = budget_of(args);
    char path[PATH_MAX], err[SESSION_PATTERN_ERR_MAX + 64];
    buf_t raw = BUF_INIT, text = BUF_INIT;
    bool truncated = false;
    uint64_t off = 0, len = 0, grep_stopped = 0, grep_stopped_line = 0;
    uint64_t grep_found = 0;
    int rc;

    if (view && !strcmp(view, "screen")) {
        session_t *s = session_find(cx->store, id);
        if (!s || !session_tty(s))
            return mcp_call_errorf(call,
                                   "view=screen needs a tty session that is "
                                   "still known; session %" JSON_INTEGER_FORMAT
                                   " is not one (use view=log).",
                                   id);
        if ((rc = session_screen(s, &raw)) < 0) {
            buf_free(&raw);
            return rc;
        }
        to_utf8(&raw, &text);
        buf_free(&raw);
        if (text.len > budget) {
            text.len = utf8_cut(text.p, text.len, budget);
            text.p[text.len] = 0;
            truncated = true;
        }
        json_t *sc = json_pack("{s:I, s:s%, s:s, s:b}", "session_id", id,
                               "output", text.p ? text.p : "",
                               text.len, "view", "screen", "truncated",
                               truncated);
        rc = mcp_call_result_n(call, sc, text.p ? text.p : "", text.len);
        buf_free(&text);
        return rc;
    }
    if ((rc = codex_log_of(cx, id, path, sizeof path)) < 0)
        return mcp_call_errorf(call,
                               "No log for session %" JSON_INTEGER_FORMAT
                               " (unknown session).",
                               id);
    /* A terminal's log reads as the terminal showed it, as its results
     * did, unless the bytes are asked for. */
    bool as_text = view ? !strcmp(view, "text")
                        : sup_run_tty(cx->sup, id) == 1;
    if (grep && session_pattern_check(grep, err, sizeof err) < 0)
        return mcp_call_errorf(call, "`grep` is not a valid regular "
                                     "expression (%s).", err);
    if (json_is_integer(jtail) &&
        (json_is_integer(joff) || json_is_integer(jlen)))
        return mcp_call_error(call, "Pass `tail_lines` or `offset`/`length`, "
                                    "not both (`grep` goes with either).");
    if (json_is_integer(jbefore) && !json_is_integer(jtail))
        return mcp_call_error(call, "`before` goes with `tail_lines` (the "
                                    "last lines that start before a byte); "
                                    "a byte range is `offset`/`length`.");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mcp_call_errorf(call, "Cannot read the log %s: %s.", path,
                               strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    uint64_t size = (uint64_t)st.st_size, ha = 0, hb = 0;
    bool hole = spool_log_hole(path, &ha, &hb);
    /* The byte range asked for, clamped to the log: offset defaults to 0,
     * length to the rest. */
    bool ranged = json_is_integer(joff) || json_is_integer(jlen);
    uint64_t lo = json_is_integer(joff) ? (uint64_t)json_integer_value(joff)
                                        : 0;
    lo = lo > size ? size : lo;
    uint64_t hi = json_is_integer(jlen)
                      ? lo + (uint64_t)json_integer_value(jlen)
                      : size;
    hi = hi > size || hi < lo ? size : hi;
    /* tail_lines counts back from the end, or from `before` (clamped to
     * the log, as offset is). */
    uint64_t before = json_is_integer(jbefore)
                          ? (uint64_t)json_integer_value(jbefore)
                          : size;
    before = before > size ? size : before;

    if (grep) {
        /* Within the byte range (the whole log without one); the last
         * tail_lines matches, searched back from `before`, when that is
         * given. */
        bool back = json_is_integer(jtail);
        log_grep_t g = {
            .pattern = grep,
            .lo = back ? 0 : lo,
            .hi = back ? before : hi,
            .size = size,
            .tail = back ? (uint64_t)json_integer_value(jtail) : LOG_GREP_ALL,
            .budget = budget,
            .hole = hole,
            .ha = ha,
            .hb = hb,
            .time_ms = cx->grep_time_ms,
            .as_shown = as_text,
        };
        err[0] = '\0';
        if ((rc = log_grep(fd, &g, &raw, err, sizeof err)) < 0) {
            close(fd);
            buf_free(&raw);
            if (rc == REIN_EPATTERN_LIMIT)
                return mcp_call_errorf(call, "`grep`: %s.", err);
            return rc;
        }
        off = g.from;
        len = g.to - g.from;
        truncated = g.truncated;
        grep_stopped = g.stopped;
        grep_stopped_line = g.stopped_line;
        grep_found = g.found;
    } else if (json_is_integer(jtail)) {
        /* The last N lines that start before `before`: scan back from the
         * end of the last of them. */
        uint64_t want = (uint64_t)json_integer_value(jtail);
        uint64_t end = size;
        if (before < size &&
            (rc = log_line_end(fd, size, hole, ha, hb, before, &end)) < 0) {
            close(fd);
            return rc;
        }
        uint64_t from = end, lines = 0;
        char blk[4096];
        bool last_nl_skipped = false;
        /* No further back than the budget shows: what lies before is cut
         * below anyway, and a scan of a log of gigabytes for a large
         * tail_lines would hold the whole server up. */
        while (from > 0 && lines <= want && end - from <= budget) {
            size_t n = from > sizeof blk ? sizeof blk : (size_t)from;
            if (pread(fd, blk, n, (off_t)(from - n)) != (ssize_t)n)
                break;
            size_t i = n;
            while (i > 0) {
                i--;
                if (blk[i] != '\n')
                    continue;
                if (from - n + i == end - 1 && !last_nl_skipped) {
                    last_nl_skipped = true; /* the final line's own end */
                    continue;
                }
                if (++lines >= want) {
                    from = from - n + i + 1;
                    goto found;
                }
            }
            from -= n;
        }
    found:
        if (want == 0)
            from = end;
        off = from;
        len = end - from;
    } else if (ranged) {
        off = lo;
        len = hi - lo;
    } else {
        /* Default: the tail that fits. */
        off = size > budget ? size - budget : 0;
        len = size - off;
    }
    if (!grep) {
        if (len > budget) {
            /* A tail_lines read keeps its end; a range keeps its start. */
            if (json_is_integer(jtail) && !json_is_integer(joff))
                off += len - budget;
            len = budget;
            truncated = true;
        }
        if (off > 0 && !json_is_integer(joff) && !json_is_integer(jtail)) {
            truncated = true;
        }
        codex_read_range(fd, off, len, hole, ha, hb, &raw);
        if (off > 0 && !json_is_integer(joff)) {
            /* A tail cut where it fits may land inside a character: start
             * on the next one rather than show U+FFFD the log has not. */
            size_t k = utf8_start(raw.p ? raw.p : "", raw.len, 0);
            if (k > 0 && k < UTF8_SEQ_MAX) {
                buf_consume(&raw, k);
                off += k;
                len -= k;
            }
        }
        if (raw.len > budget) { /* a hole marker added bytes */
            raw.len = budget;
            raw.p[raw.len] = 0;
            truncated = true;
        }
    }
    close(fd);
    vtview_t *tv = NULL;
    if (as_text && !grep) {
        /* The lines of the range as shown, from a terminal's ground state:
         * a range that starts inside an escape sequence shows its rest. */
        const session_t *known = session_find(cx->store, id);
        if ((rc = vtview_new(&tv)) == 0 && known)
            vtview_set_cols(tv, codex_cols(known));
        if (rc < 0 ||
            (rc = vtview_feed(tv, raw.p ? raw.p : "", raw.len)) < 0 ||
            (rc = vtview_take(tv, &text, NULL)) < 0) {
            vtview_free(tv);
            buf_free(&raw);
            buf_free(&text);
            return rc;
        }
        vtview_free(tv);
    } else {
        to_utf8(&raw, &text);
    }
    buf_free(&raw);
    if (text.len > budget) { /* U+FFFD is longer than the byte it replaces */
        text.len = utf8_cut(text.p, text.len, budget);
        text.p[text.len] = 0;
        truncated = true;
    }
    json_t *sc = json_pack("{s:I, s:s%, s:I, s:I, s:I, s:b, s:s, s:s}",
                           "session_id", id, "output",
                           text.p ? text.p : "", text.len, "offset",
                           (json_int_t)off, "length", (json_int_t)len,
                           "total_bytes", (json_int_t)size, "truncated",
                           truncated, "log_path", path, "view",
                           as_text ? "text" : "log");
    if (sc && hole) {
        char d[64];
        snprintf(d, sizeof d, "%" PRIu64 "-%" PRIu64, ha, hb);
        json_object_set_new(sc, "dropped", json_string(d));
    }
    if (sc && grep_stopped)
        json_object_set_new(sc, "grep_stopped_at",
                            json_integer((json_int_t)grep_stopped));
    buf_t t = BUF_INIT;
    buf_printf(&t, "Log: %s\nRange: bytes %" PRIu64 "-%" PRIu64 " of %" PRIu64
                   "%s\n",
               path, off, off + len, size, truncated ? " (truncated)" : "");
    if (as_text)
        buf_printf(&t, "View: text, the lines as the terminal showed them "
                       "(view=log gives the bytes)\n");
    /* The dropped lines were never counted, so a match past them has the
     * number of the lines kept, not of the stream: say so (of a grep, also
     * when it searched only lines after them). */
    if (hole && ha < off + len && (grep || hb > off))
        buf_printf(&t, "Dropped: bytes %" PRIu64 "-%" PRIu64 " (past the "
                       "log's size cap)%s\n",
                   ha, hb, grep ? "; matches after them are numbered "
                                  "without their lines" : "");
    if (grep_stopped && !json_is_integer(jtail))
        buf_printf(&t, "Grep: stopped after %" PRIu64 " ms at line %" PRIu64
                       " (byte %" PRIu64 "): the rest was not searched; "
                       "call again with offset: %" PRIu64 " to go on\n",
                   cx->grep_time_ms, grep_stopped_line, grep_stopped,
                   grep_stopped);
    else if (grep_stopped) /* searching back: the matches shown are the
                              last of the log, lines before them unsearched */
        buf_printf(&t, "Grep: stopped after %" PRIu64 " ms searching back, "
                       "at line %" PRIu64 " (byte %" PRIu64 "): the lines "
                       "before it were not searched, and %" PRIu64 " of the "
                       "%" JSON_INTEGER_FORMAT " matches asked for were "
                       "found; call again with before: %" PRIu64
                       " and tail_lines: %" PRIu64 " to go on\n",
                   cx->grep_time_ms, grep_stopped_line, grep_stopped,
                   grep_found, json_integer_value(jtail), grep_stopped,
                   (uint64_t)json_integer_value(jtail) - grep_found);
    buf_printf(&t, "Output:\n");
    buf_append(&t, text.p ? text.p : "", text.len);
    rc = mcp_call_result_n(call, sc, t.p, t.len);
    buf_free(&t);
    buf_free(&text);
    return rc;
}

/* ------------------------------------------------------------ resources */

static int parse_id(const json_t *vars, int64_t *id)
{
    const char *v = json_string_value(json_object_get(vars, "id"));
    char *end;
    if (!v || !*v)
        return -ENOENT;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno || x < 0)
        return -ENOENT;
    *id = x;
    return 0;
}

/* rein://session/{id}/log: the log's last CODEX_RESOURCE_TAIL bytes. */
static int read_log(const char *uri, const json_t *vars, buf_t *text,
                    void *ud)
{
    (void)uri;
    mcp_codex_t *cx = ud;
    int64_t id;
    char path[PATH_MAX];
    if (parse_id(vars, &id) < 0 || codex_log_of(cx, id, path, sizeof path) < 0)
        return -ENOENT;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -ENOENT;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    uint64_t size = (uint64_t)st.st_size, ha = 0, hb = 0;
    bool hole = spool_log_hole(path, &ha, &hb);
    uint64_t off = size > CODEX_RESOURCE_TAIL ? size - CODEX_RESOURCE_TAIL : 0;
    buf_t raw = BUF_INIT;
    if (off)
        buf_printf(&raw, "[rein] the last %u bytes of %" PRIu64 "; "
                         "read_output reads any range\n",
                   CODEX_RESOURCE_TAIL, size);
    int rc = codex_read_range(fd, off, size - off, hole, ha, hb, &raw);
    close(fd);
    if (rc == 0)
        to_utf8(&raw, text);
    buf_free(&raw);
    return rc;
}

static int list_logs(json_t *list, void *ud)
{
    mcp_codex_t *cx = ud;
    for (size_t i = 0;; i++) {
        session_t *s = session_at(cx->store, i);
        if (!s)
            break;
        char uri[CODEX_URI_MAX], name[48];
        snprintf(uri, sizeof uri, "rein://session/%" PRId64 "/log",
                 session_id(s));
        snprintf(name, sizeof name, "session-%" PRId64 "-log", session_id(s));
        json_array_append_new(list,
                              json_pack("{s:s, s:s, s:s, s:s}", "uri", uri,
                                        "name", name, "mimeType",
                                        "text/plain", "description",
                                        session_command(s)));
    }
    return 0;
}

static void on_session_output(session_t *s, const void *data, size_t n,
                              void *ud)
{
    (void)data;
    (void)n;
    mcp_codex_t *cx = ud;
    char uri[CODEX_URI_MAX];
    snprintf(uri, sizeof uri, "rein://session/%" PRId64 "/log",
             session_id(s));
    mcp_server_notify_updated(cx->srv, uri);
}

/* ------------------------------------------------------------ retention */

static void on_retention(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    mcp_codex_t *cx = data;
    cx->t_retention = 0;
    retention_pass(cx->sup, &cx->retention, NULL);
    loop_timer_add(l, RETENTION_EVERY_MS, on_retention, cx, &cx->t_retention);
}

/* ------------------------------------------------------------- lifetime */

/* The arguments that carry bytes for a process's input, NUL included. */
static const char *const exec_nul_args[] = {"stdin", NULL};
static const char *const write_nul_args[] = {"chars", NULL};

static const struct {
    const char *name, *title, *desc, *in, *out, *ann;
    mcp_tool_fn fn;
    const char *const *nul_args;
} codex_tools[] = {
    {"exec_command", "Run a command",
     "Runs a shell command in a new session and returns its output after at "
     "most yield_time_ms;\nstill running, it answers with a session_id for "
     "write_stdin.",
     exec_schema, exec_output_schema,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":"
     "true}",
     tool_exec, exec_nul_args},
    {"write_stdin", "Write to a session",
     "Writes chars (C escapes), chars_b64 or named keys to a session's "
     "input, then returns its new output;\nwith nothing to write it is a "
     "poll.",
     write_schema, exec_output_schema,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":"
     "true}",
     tool_write, write_nul_args},
    {"kill_session", "Kill a session",
     "Ends a session and everything it started: the signal (default "
     "SIGTERM), then SIGKILL after grace_ms.",
     kill_schema, kill_output_schema,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":"
     "true,\"openWorldHint\":false}",
     tool_kill, NULL},
    {"list_sessions", "List sessions",
     "Lists the sessions: running ones, and each exited one once (with its "
     "exit code).",
     list_schema, list_output_schema,
     "{\"readOnlyHint\":true,\"openWorldHint\":false}", tool_list,
     NULL},
    {"read_output", "Read a session's log",
     "Reads any part of a session's full log (byte range, last lines, grep) "
     "or the rendered screen of a tty session;\nworks after the session "
     "exited.",
     read_schema, read_output_schema,
     "{\"readOnlyHint\":true,\"openWorldHint\":false}", tool_read,
     NULL},
};

/* REIN_MAX_EMPTY_POLL_MS: unset or invalid gives the default; a positive
 * value below the minimum empty poll is raised to it. */
static uint64_t max_empty_poll(void)
{
    const char *v = getenv("REIN_MAX_EMPTY_POLL_MS");
    char *end;
    if (!v || !*v)
        return CODEX_DEFAULT_MAX_EMPTY_POLL_MS;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno || x == 0 || v[0] == '-')
        return CODEX_DEFAULT_MAX_EMPTY_POLL_MS;
    if (x < CODEX_MIN_EMPTY_YIELD_MS)
        return CODEX_MIN_EMPTY_YIELD_MS;
    return x > UINT32_MAX ? UINT32_MAX : x;
}

/* REIN_GREP_TIME_MS: unset or invalid (not a positive integer) gives the
 * default. */
static uint64_t grep_time(void)
{
    const char *v = getenv("REIN_GREP_TIME_MS");
    char *end;
    if (!v || !*v || v[0] == '-')
        return CODEX_DEFAULT_GREP_TIME_MS;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno || x == 0)
        return CODEX_DEFAULT_GREP_TIME_MS;
    return x > UINT32_MAX ? UINT32_MAX : x;
}

int mcp_codex_new(mcp_server_t *srv, const mcp_codex_opts_t *opts,
                  mcp_codex_t **out)
{
    if (!opts || !opts->sup)
        return -EINVAL;
    mcp_codex_t *cx = calloc(1, sizeof *cx);
    if (!cx)
        return -ENOMEM;
    cx->srv = srv;
    cx->sup = opts->sup;
    cx->loop = sup_loop(opts->sup);
    cx->max_empty_poll_ms = max_empty_poll();
    cx->grep_time_ms = grep_time();
    if (!getcwd(cx->cwd, sizeof cx->cwd))
        snprintf(cx->cwd, sizeof cx->cwd, "/");
    session_store_opts_t so = {.sup = opts->sup,
                               .max_live = opts->max_sessions};
    int rc = session_store_new(&so, &cx->store);
    if (rc < 0)
        goto fail;
    session_store_set_output_hook(cx->store, on_session_output, cx);
    char err[256], policy[PATH_MAX];
    if (router_new(router_policy_path(policy, sizeof policy) == 0 ? policy
                                                                  : NULL,
                   &cx->router, err, sizeof err) < 0) {
        /* A broken policy file must not take the tools down: run with
         * the built-in tables and say so. */
        fprintf(stderr, "rein serve: %s; using the built-in danger table\n",
                err);
        if ((rc = router_new(NULL, &cx->router, err, sizeof err)) < 0)
            goto fail;
    }
    for (size_t i = 0; i < sizeof codex_tools / sizeof codex_tools[0]; i++) {
        mcp_tool_t t = {
            .name = codex_tools[i].name,
            .title = codex_tools[i].title,
            .description = codex_tools[i].desc,
            .input_schema = codex_tools[i].in,
            .output_schema = codex_tools[i].out,
            .annotations = codex_tools[i].ann,
            .nul_args = codex_tools[i].nul_args,
            .fn = codex_tools[i].fn,
            .ud = cx,
        };
        if ((rc = mcp_server_add_tool(srv, &t)) < 0)
            goto fail;
    }
    rc = mcp_server_add_resource_template(
        srv, MCP_CODEX_LOG_TEMPLATE, "session-log",
        "The output log of a session, as text (its tail).", "text/plain",
        read_log, cx);
    if (rc < 0)
        goto fail;
    mcp_server_set_resource_lister(srv, list_logs, cx);
    retention_opts_from_env(&cx->retention, RETENTION_DEFAULT_AGE_DAYS,
                            RETENTION_DEFAULT_MAX_BYTES);
    on_retention(cx->loop, 0, cx); /* at start, then hourly */
    *out = cx;
    return 0;
fail:
    mcp_codex_free(cx);
    return rc;
}

static bool any_running(mcp_codex_t *cx)
{
    for (size_t i = 0;; i++) {
        session_t *s = session_at(cx->store, i);
        if (!s)
            return false;
        if (session_running(s))
            return true;
    }
}

static void on_shutdown_check(loop_t *l, uint64_t id, void *data)
{
    (void)id;
    mcp_codex_t *cx = data;
    cx->t_shutdown = 0;
    if (any_running(cx)) {
        loop_timer_add(l, SESSION_INPUT_CHECK_MS / 5, on_shutdown_check, cx,
                       &cx->t_shutdown);
        return;
    }
    mcp_codex_done_fn done = cx->done;
    cx->done = NULL;
    if (done)
        done(cx->done_data);
}

void mcp_codex_answer_all(mcp_codex_t *cx)
{
    for (size_t i = 0;; i++) {
        session_t *s = session_at(cx->store, i);
        if (!s)
            break;
        session_wait_expire(s);
    }
}

void mcp_codex_shutdown(mcp_codex_t *cx, mcp_codex_done_fn done, void *data)
{
    cx->shutting_down = true;
    cx->done = done;
    cx->done_data = data;
    /* Every session: TERM now, KILL after a second (pruned ones are
     * already ending; rein_sup_close catches anything left). */
    for (size_t i = 0;; i++) {
        session_t *s = session_at(cx->store, i);
        if (!s)
            break;
        if (session_running(s))
            sup_run_cancel(cx->sup, session_id(s), REIN_REASON_SHUTDOWN,
                           SIGTERM, REIN_SUP_GRACE_MS / 2);
    }
    on_shutdown_check(cx->loop, 0, cx);
}

void mcp_codex_free(mcp_codex_t *cx)
{
    if (!cx)
        return;
    loop_timer_del(cx->loop, cx->t_retention);
    loop_timer_del(cx->loop, cx->t_shutdown);
    session_store_free(cx->store);
    router_free(cx->router);
    grammar_set_free(cx->grammars);
    free(cx);
}
