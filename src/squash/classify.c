/*
 * classify.c — the three-tier line classifier (see classify.h).
 *
 * The universal rules are written as scans rather than regexes because they
 * run on every line of every command and must keep the squasher above
 * 100 MB/s; the keyword scans read bounded windows (the first and the
 * last CLS_SCAN_MAX bytes of a line), look closely only where a word of
 * theirs could start (an index by first byte), and check word boundaries
 * so `liberror-perl`, `test_error_path` or `-Werror` are not errors.
 * "Zero" counts (`0 errors`, `errors=0`, `no warnings`) are not hazards
 * either: a clean build says them.  Words that make a hazard anywhere are
 * only those that never appear in a clean run's output; phrases that can
 * (`Killed`, `not found`, `***`) count only in the form the tool that
 * prints them uses.
 *
 * Test runners, checkers and git report a failure in forms of their own
 * (a TAP `not ok`, a `✕` mark, `CONFLICT (content):`, valgrind's `==N==
 * Invalid read`): cls_test_report knows them by the first byte after the
 * indentation, so a line pays for one form at most, and each is matched
 * in its exact shape so the look-alikes of a clean run (`ok 3 - not ok in
 * name`, `ERROR SUMMARY: 0 errors`, `2 × 3`) are not hazards.  A failed
 * test owns the lines that explain it (its `#` diagnostics, the lines
 * indented under its mark) and a failed test's head is never the detail
 * of the hazard above it.
 *
 * A grammar's rules come first, but its noise rules cannot hide a line
 * these rules call an error; it may count a universal warning as noise.
 *
 * Multiline capture keeps state between lines: after a hazard that owns the
 * lines below it (a traceback, a compiler's caret lines), the next line is
 * first offered to the capture; a line the capture refuses ends it and is
 * classified afresh.
 */
#include "squash/classify.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "squash/dedup.h"

enum cls_ml {
    CLS_ML_NONE = 0,
    CLS_ML_GRAMMAR,     /* the grammar rule's continue / until */
    CLS_ML_PYTRACE,     /* indented frames, then the exception line */
    CLS_ML_INDENTED,    /* indented frames, Caused by:, ... N more */
    CLS_ML_CC,          /* source excerpt, carets, notes */
    CLS_ML_UNTIL_BLANK, /* everything up to a blank line */
    CLS_ML_TAP,         /* a failed test point's `#` and deeper lines */
    CLS_ML_DEEPER,      /* lines indented deeper than the hazard */
    CLS_ML_DEEPER_GAPS, /* the same, and blank lines between them */
    CLS_ML_VALGRIND,    /* `==N==` lines with something after the prefix */
    CLS_ML_SANITIZER,   /* everything up to its `SUMMARY: ` line */
    CLS_ML_BOX,         /* an HCL diagnostic's `│` lines, to its `╵` */
    CLS_ML_HCL,         /* a plain HCL diagnostic, by steps (cls_ml_hcl) */
    CLS_ML_ASSERT,      /* a failed assertion's report: to a blank line or
                           a line opening with '[' (GoogleTest's own) */
    CLS_ML_MOCHA,       /* a mocha failure's report, blank lines and all,
                           to the next one's head */
    CLS_ML_THROW,       /* node's throw site: its source line, then the
                           caret line under it (cls_throw_site) */
};

/* Where a grammar capture with a gutterless excerpt (multiline.excerpt,
 * clang's) stands: what the next line is, by position. */
enum cls_expect {
    CLS_EX_NONE = 0,
    CLS_EX_EXCERPT, /* after the hazard line or a note: its source line */
    CLS_EX_CARET,   /* after a line held as the excerpt: the caret line
                       that makes it one */
    CLS_EX_FIXIT,   /* after a caret line: the fix-it under it */
};

struct classify {
    const grammar_t *gs[GRAMMAR_PER_COMMAND_MAX];
    size_t ng;
    grammar_ctx_t *ctx;
    enum cls_ml ml;
    const grammar_rule_t *ml_rule;
    unsigned ml_left;
    size_t ml_indent;   /* the hazard's indentation (TAP, DEEPER) */
    size_t ml_margin;   /* the margin its hazard line is drawn in (an
                           exception group's, cls_pymargin), 0: none */
    bool ml_tap_failed; /* a TAP capture holds a `#   Failed test` line */
    bool ml_excerpt;           /* the capture takes a gutterless excerpt
                                  (a grammar's multiline.excerpt, or a
                                  universal `file:line:col:` diagnostic) */
    enum cls_expect ml_expect; /* ... and where it stands */
    size_t ml_caret_indent;    /* CLS_EX_FIXIT: the caret line's */
    unsigned ml_step;          /* CLS_ML_HCL, CLS_ML_THROW: where it
                                  stands */
    bool ml_warning;
    const char *ml_source, *ml_id;
    uint64_t prev_hash;
    bool in_diff;
    bool mocha; /* past mocha's `N failing`: its reports follow */
};

/* The index of the anywhere-words and the start words' first bytes, built
 * once by the first classify_new. */
static pthread_once_t cls_any_once = PTHREAD_ONCE_INIT;
static void cls_any_build(void);

static const char *const cls_noise_names[CLS_NOISE_REASONS] = {
    "tool", "dedup", "progress", "blank", "decoration", "hint", "repeat",
};

const char *classify_noise_name(cls_noise_t n)
{
    return n < CLS_NOISE_REASONS ? cls_noise_names[n] : "other";
}

int classify_new(const grammar_t *g, classify_t **out)
{
    return classify_new_set(&g, g ? 1 : 0, out);
}

int classify_new_set(const grammar_t *const *gs, size_t n, classify_t **out)
{
    if (n > GRAMMAR_PER_COMMAND_MAX)
        return -EINVAL;
    pthread_once(&cls_any_once, cls_any_build);
    classify_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        c->gs[i] = gs[i];
    c->ng = n;
    int rc = grammar_ctx_new(&c->ctx);
    if (rc < 0) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void classify_free(classify_t *c)
{
    if (!c)
        return;
    grammar_ctx_free(c->ctx);
    free(c);
}

uint64_t classify_limit_hits(const classify_t *c)
{
    return grammar_ctx_limit_hits(c->ctx);
}

/* ------------------------------------------------------------ helpers */

static inline bool cls_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

static inline bool cls_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static inline bool cls_space(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static inline unsigned char cls_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

static bool cls_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!cls_space((unsigned char)s[i]))
            return false;
    return true;
}

static size_t cls_indent(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && cls_space((unsigned char)s[i]))
        i++;
    return i;
}

static bool cls_prefix(const char *s, size_t n, const char *p)
{
    size_t l = strlen(p);
    return n >= l && !memcmp(s, p, l);
}

/* A word character for keyword boundaries: identifiers, paths, flags and
 * package names continue through these. */
static inline bool cls_wordish(unsigned char c)
{
    return cls_alnum(c) || c == '_' || c == '-' || c == '/' || c >= 0x80;
}

static bool cls_left_ok(const char *s, size_t at)
{
    if (at == 0)
        return true;
    unsigned char p = (unsigned char)s[at - 1];
    return !cls_wordish(p) && p != '.' && p != '$' && p != '%';
}

static bool cls_right_ok(const char *s, size_t n, size_t end)
{
    if (end >= n)
        return true;
    unsigned char c = (unsigned char)s[end];
    if (c == '.' && end + 1 < n && cls_alnum((unsigned char)s[end + 1]))
        return false;
    return !cls_wordish(c) && c != '=';
}

/* "0 errors", "no errors", "errors: 0", "error(s)=0", "without errors". */
static bool cls_zero(const char *s, size_t n, size_t at, size_t end)
{
    size_t i = at;
    while (i > 0 && cls_space((unsigned char)s[i - 1]))
        i--;
    if (i > 0 && s[i - 1] == '0' && (i == 1 || !cls_alnum((unsigned char)s[i - 2])))
        return true;
    if (i >= 2 && cls_lower((unsigned char)s[i - 2]) == 'n' &&
        cls_lower((unsigned char)s[i - 1]) == 'o' &&
        (i == 2 || !cls_alnum((unsigned char)s[i - 3])))
        return true;
    if (i >= 7 && !strncmp(s + i - 7, "without", 7))
        return true;
    size_t j = end;
    if (j < n && s[j] == 's')
        j++;
    if (j + 2 < n && !strncmp(s + j, "(s)", 3))
        j += 3;
    if (j < n && (s[j] == ':' || s[j] == '='))
        j++;
    else
        return false;
    while (j < n && cls_space((unsigned char)s[j]))
        j++;
    return j < n && s[j] == '0' && (j + 1 >= n || !cls_alnum((unsigned char)s[j + 1]));
}

/* Case-insensitive substring. */
static bool cls_has_ci(const char *s, size_t n, const char *w)
{
    size_t wl = strlen(w);
    for (size_t i = 0; i + wl <= n; i++) {
        if (cls_lower((unsigned char)s[i]) != (unsigned char)w[0])
            continue;
        size_t k = 1;
        while (k < wl && cls_lower((unsigned char)s[i + k]) == (unsigned char)w[k])
            k++;
        if (k == wl)
            return true;
    }
    return false;
}

/* ------------------------------------------------------ universal rules */

struct cls_hit {
    bool warning;
    enum cls_ml ml;
    unsigned ml_max;
    size_t ml_indent;
    const char *id;
    bool has_loc;
    size_t loc_off, loc_len;
    bool excerpt;   /* CLS_ML_CC of a `file:line:col:` diagnostic: takes a
                       gutterless excerpt by its place (cls_ml_excerpt) */
};

/* ShellCheck's code closing a line: `... splitting. [SC2086]`. */
static bool cls_shellcheck_tail(const char *s, size_t n)
{
    size_t e = n;
    while (e > 0 && cls_space((unsigned char)s[e - 1]))
        e--;
    if (e < 8 || s[e - 1] != ']' || memcmp(s + e - 8, "[SC", 3))
        return false;
    for (size_t i = e - 5; i < e - 1; i++)
        if (!cls_digit((unsigned char)s[i]))
            return false;
    return true;
}

/* Node's throw site, the line it prints above an uncaught exception's
 * source excerpt and caret: a script's absolute path (node prints no
 * other) and the line, and nothing else (`/app/build.js:3`,
 * `file:///app/x.mjs:9`).  A relative `src/a.js:3` is `grep -c`'s count,
 * which node's own grammar (throw-location) tells apart by the command. */
static bool cls_throw_site(const char *s, size_t n)
{
    static const char *const ext[] = {".js", ".mjs", ".cjs", ".ts", ".mts",
                                      ".cts", ".jsx", ".tsx", NULL};
    /* cheap refusals first: this runs on every unknown line */
    if (n < 4 || (s[0] != '/' && s[0] != 'f') ||
        !cls_digit((unsigned char)s[n - 1]))
        return false;
    size_t d = n - 1;
    while (d > 0 && cls_digit((unsigned char)s[d - 1]))
        d--;
    if (d < 2 || s[d - 1] != ':')
        return false;
    size_t plen = d - 1, from = 0;
    if (s[0] != '/') {
        if (!cls_prefix(s, plen, "file:///"))
            return false;
        from = strlen("file:");
    }
    /* one word, no colon but the url's */
    for (size_t i = from; i < plen; i++)
        if (s[i] == ' ' || s[i] == '\t' || s[i] == ':')
            return false;
    if (s[plen - 1] == '/')
        return false;
    for (const char *const *e = ext; *e; e++) {
        size_t el = strlen(*e);
        if (plen > el && !memcmp(s + plen - el, *e, el))
            return true;
    }
    return false;
}

/* `file:line[:col]: kind` at the start of the line (compilers, linters,
 * Python warnings).  Severity from the word after the location: a
 * sanitizer's `runtime error:` is an error; a `note:` is no hazard unless
 * it is a ShellCheck finding (`-f gcc` prints its info level so).  A test
 * framework's failed assertion is one too, with its report (CLS_ML_ASSERT):
 * GoogleTest's `x_test.cc:42: Failure` (then `Expected equality of
 * these values:` and the values), Catch2's `x.cpp:42: FAILED:` (then the
 * assertion and `with expansion:`). */
static bool cls_location(const char *s, size_t n, struct cls_hit *h)
{
    size_t i = 0;
    bool dot = false;
    while (i < n && s[i] != ':' && !cls_space((unsigned char)s[i]) &&
           s[i] != '(' && s[i] != '"' && s[i] != '\'') {
        dot |= s[i] == '.' || s[i] == '/';
        i++;
    }
    if (i == 0 || i >= n || !dot)
        return false;
    bool col = false;
    size_t le;
    if (s[i] == '(') {
        /* tsc / MSVC: `file(line[,col]): error TS2322: ...` */
        size_t ds = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == ds || i >= n)
            return false;
        if (s[i] == ',') {
            size_t cs = ++i;
            while (i < n && s[i] >= '0' && s[i] <= '9')
                i++;
            col = i > cs;
        }
        if (i + 1 >= n || s[i] != ')' || s[i + 1] != ':')
            return false;
        le = ++i;
        i++;
    } else {
        if (s[i] != ':')
            return false;
        size_t ds = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == ds || i >= n || s[i] != ':')
            return false;
        le = i;
        i++;
        size_t cs = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i > cs && i < n && s[i] == ':') {
            col = true;
            le = i;
            i++;
        } else {
            i = cs;
        }
    }
    while (i < n && cls_space((unsigned char)s[i]))
        i++;
    /* The kind word: up to ':' or space. */
    size_t ks = i;
    while (i < n && s[i] != ':' && !cls_space((unsigned char)s[i]) && s[i] != '[')
        i++;
    size_t kl = i - ks;
    const char *k = s + ks;
    bool err = false, warn = false, assertion = false;
    if (kl >= 5 && !strncmp(k + kl - 5, "error", 5))
        err = true;
    else if (kl >= 5 && !strncmp(k + kl - 5, "Error", 5))
        err = true;
    else if (kl >= 7 && (!strncmp(k + kl - 7, "warning", 7) ||
                         !strncmp(k + kl - 7, "Warning", 7)))
        warn = true;
    else if (kl == 5 && !strncmp(k, "fatal", 5))
        err = true;
    else if (kl == 7 && !strncmp(k, "runtime", 7) &&
             cls_prefix(k + kl, n - ks - kl, " error:"))
        err = true;
    else if (kl == 4 && !strncmp(k, "note", 4)) {
        if (!cls_shellcheck_tail(s, n))
            return false;
        warn = true;
    } else if ((kl == 7 && !strncmp(k, "Failure", 7) &&
                cls_blank(k + kl, n - ks - kl)) ||
               (kl == 6 && !strncmp(k, "FAILED", 6) && ks + kl < n &&
                k[kl] == ':' && cls_blank(k + kl + 1, n - ks - kl - 1))) {
        err = assertion = true;
    } else if (col)
        warn = true; /* a linter's `file:line:col: E302 ...` */
    if (!err && !warn)
        return false;
    h->warning = warn;
    h->ml = assertion ? CLS_ML_ASSERT : CLS_ML_CC;
    h->ml_max = assertion ? CLS_TRACE_MAX : CLS_CC_CONTEXT_MAX;
    h->excerpt = col && !assertion;
    h->id = assertion ? "test-assertion" : "location";
    h->has_loc = true;
    h->loc_off = 0;
    h->loc_len = le;
    return true;
}

/* `name.ext:N: text`: a file token with a dot and no slash-free spaces,
 * a line number, then a space. */
static bool cls_indented_location(const char *s, size_t n)
{
    size_t i = 0;
    bool dot = false;
    while (i < n && (cls_alnum((unsigned char)s[i]) || s[i] == '_' ||
                     s[i] == '-' || s[i] == '.' || s[i] == '/')) {
        dot |= s[i] == '.';
        i++;
    }
    if (!dot || i == 0 || i + 3 > n || s[i] != ':' || s[i - 1] == '.')
        return false;
    size_t d = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    return i > d && i + 1 < n && s[i] == ':' && s[i + 1] == ' ';
}

/* A passed test as its runner marks it: `✓ name` (jest, vitest), `✔
 * name` (node's spec reporter, mocha), `√ name`, TAP's `ok 3 - name`. */
static bool cls_passed_test(const char *t, size_t tn)
{
    if (cls_prefix(t, tn, "\xe2\x9c\x93 ") || cls_prefix(t, tn, "\xe2\x9c\x94 ") ||
        cls_prefix(t, tn, "\xe2\x88\x9a "))
        return true;
    return cls_prefix(t, tn, "ok ") && tn > 3 &&
           (cls_digit((unsigned char)t[3]) || t[3] == '-');
}

/* The left side of the box terraform and OpenTofu draw a diagnostic in
 * (`╷`, then `│ Error: ...` and its lines, then `╵`). */
#define CLS_BOX_SIDE "\xe2\x94\x82" /* │ U+2502 */
#define CLS_BOX_END "\xe2\x95\xb5"  /* ╵ U+2575 */

/* The bytes of a box's side opening a line, with the blank after it: 4,
 * or 3 for the side alone (a blank line of the box); 0: none. */
static size_t cls_box_side(const char *s, size_t n)
{
    if (!cls_prefix(s, n, CLS_BOX_SIDE))
        return 0;
    return n > 3 && s[3] == ' ' ? 4 : 3;
}

/* An HCL diagnostic's head: `Error: ` or `Warning: `, then its summary. */
static bool cls_hcl_head(const char *s, size_t n)
{
    return cls_prefix(s, n, "Error: ") || cls_prefix(s, n, "Warning: ");
}

/* Where an HCL diagnostic is: `  on main.tf line 7, in resource "a" "b":`
 * (indented; `on`, a path, ` line `, a number). */
static bool cls_hcl_on(const char *s, size_t n)
{
    size_t i = cls_indent(s, n);
    if (!i || !cls_prefix(s + i, n - i, "on "))
        return false;
    for (i += 3; i + 7 <= n; i++)
        if (!memcmp(s + i, " line ", 6) && cls_digit((unsigned char)s[i + 6]))
            return true;
    return false;
}

/* `SomeError: message`, `java.io.IOException`, `Uncaught TypeError: x`,
 * node's `AssertionError [ERR_ASSERTION]: 4 == -1`.  An indented one (a
 * test runner's failure detail) must have its colon: a bare indented
 * `Error` may be any word. */
static bool cls_exception(const char *s, size_t n, bool indented,
                          struct cls_hit *h)
{
    size_t i = 0;
    if (cls_prefix(s, n, "Uncaught "))
        i = 9;
    size_t st = i;
    if (i >= n || !((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                    s[i] == '_'))
        return false;
    while (i < n && (cls_alnum((unsigned char)s[i]) || s[i] == '_' ||
                     s[i] == '.' || s[i] == '$'))
        i++;
    size_t l = i - st;
    const char *e = s + i;
    if (n - i > 3 && s[i] == ' ' && s[i + 1] == '[') {
        /* node's error code: ` [ERR_X]:` */
        i += 2;
        while (i < n && s[i] != ']' && !cls_space((unsigned char)s[i]))
            i++;
        if (i + 1 >= n || s[i] != ']' || s[i + 1] != ':')
            return false;
        i++;
    }
    if (i < n ? s[i] != ':' : indented)
        return false;
    if (l >= 5 && !strncmp(e - 5, "Error", 5))
        h->warning = false;
    else if (l >= 9 && !strncmp(e - 9, "Exception", 9))
        h->warning = false;
    else if (l >= 7 && !strncmp(e - 7, "Warning", 7) && i < n)
        h->warning = true;
    else
        return false;
    /* a bare `Error: ` may open an HCL diagnostic (cls_ml_hcl), which
     * takes a stack's frames under it as CLS_ML_INDENTED does */
    h->ml = !indented && cls_hcl_head(s, n) ? CLS_ML_HCL : CLS_ML_INDENTED;
    h->ml_max = CLS_TRACE_MAX;
    h->id = "exception";
    return true;
}

/* What a sanitizer's closing line starts with. */
#define CLS_SUMMARY_PREFIX "SUMMARY: "

struct cls_word {
    const char *w;
    unsigned char len;
    bool open;  /* what follows is part of it: no right boundary */
    bool count; /* a count follows, and only a nonzero one makes it */
};
#define CLS_W(s) {s, sizeof(s) - 1, false, false}
#define CLS_WO(s) {s, sizeof(s) - 1, true, false}
#define CLS_WN(s) {s, sizeof(s) - 1, true, true}

/* Words that make a hazard anywhere in a line (at a word boundary). */
static const struct cls_word cls_err_anywhere[] = {
    CLS_W("ERROR"), CLS_W("FATAL"), CLS_W("FAIL"), CLS_W("FAILED"),
    CLS_W("FAILURE"), CLS_W("CRITICAL"), CLS_W("PANIC"), CLS_W("ERR!"),
    CLS_W("error:"), CLS_W("Error:"), CLS_W("fatal:"), CLS_W("Fatal:"),
    CLS_W("error["), CLS_W("FATAL:"), CLS_W("Segmentation fault"),
    /* java.util.logging's level line, `SEVERE: Servlet.service() ...` */
    CLS_W("SEVERE:"),
    CLS_W("core dumped"), CLS_W("Traceback"), CLS_W("command not found"),
    CLS_W("Cannot find module"),
    /* the linker: `main.c:(.text+0x1a): undefined reference to `f'` */
    CLS_W("undefined reference to"), CLS_W("multiple definition of"),
    CLS_WO("cannot find -l"), CLS_W("Undefined symbols for architecture"),
    /* gcc's verdict on -Werror, bash's and dash's parse errors */
    CLS_W("warnings being treated as errors"),
    CLS_W("syntax error near unexpected token"),
    CLS_W("syntax error: unexpected end of file"),
    CLS_W("unexpected EOF while looking for matching"), CLS_W("Syntax error:"),
    /* musl's and glibc's assert(): `Assertion failed: n == 3 (t.c: ...)`,
     * `prog: t.c:42: f: Assertion `n == 3' failed.` */
    CLS_W("Assertion failed"), CLS_WO("Assertion `"),
    /* a request turned down: kubectl's `The connection to the server
     * localhost:8080 was refused - did you specify the right host or
     * port?`, `Connection refused`, `request refused` */
    CLS_W("refused"),
    /* a child's nonzero status as a runner reports it: go's `exit status
     * 1`, `Command failed with exit code 1`, `[0] x exited with code 1` */
    CLS_WN("exit status"), CLS_WN("exit code"), CLS_WN("exited with code"),
    /* docker's classic builder: `The command '/bin/sh -c make' returned a
     * non-zero code: 2` */
    CLS_W("returned a non-zero code"),
    /* glibc's heap checks as the process dies of them: `free(): double
     * free detected in tcache 2`, `*** Error in `./a': double free or
     * corruption (fasttop)`, `malloc(): corrupted top size` */
    CLS_W("double free"), CLS_WO("free(): invalid"), CLS_WO("malloc(): "),
    CLS_W("corrupted size vs. prev_size"),
    /* coreutils' timeout, systemd's unit that did not start */
    CLS_W("dumped core"), CLS_W("Active: failed"), CLS_W("failed because"),
    /* TLS: Go's `x509: certificate signed by unknown authority`, OpenSSL's
     * `certificate verify failed` */
    CLS_W("certificate signed by unknown authority"),
    CLS_W("certificate verify failed"),
    /* a registry's refusal: `denied: requested access to the resource is
     * denied` */
    CLS_W("requested access to the resource is denied"),
    {NULL, 0, false, false},
};
/* strerror() texts (and resolver failures) that only ever report a call
 * that failed, so a line quoting one is an error wherever it says it:
 * `touch: cannot touch 'x': Read-only file system`.  Their first letter
 * matches in either case (cls_any_build): Go and node quote them in lower
 * case, `dial tcp 127.0.0.1:8080: connect: connection refused`, `open x:
 * no such file or directory`. */
static const struct cls_word cls_err_errno[] = {
    CLS_W("No such file or directory"), CLS_W("Permission denied"),
    CLS_W("Operation not permitted"),
    CLS_W("Read-only file system"), CLS_W("No space left on device"),
    CLS_W("Disk quota exceeded"), CLS_W("Connection refused"),
    CLS_W("Connection timed out"), CLS_W("Connection reset by peer"),
    CLS_W("Network is unreachable"), CLS_W("No route to host"),
    CLS_W("Address already in use"), CLS_W("Too many open files"),
    CLS_W("Cannot allocate memory"), CLS_W("Out of memory"),
    CLS_W("Exec format error"), CLS_W("Argument list too long"),
    CLS_W("Text file busy"), CLS_W("Device or resource busy"),
    CLS_W("Could not resolve host"), CLS_W("Name or service not known"),
    CLS_W("Temporary failure in name resolution"),
    /* Go's own: `lookup x on 10.0.0.53:53: no such host`, `read tcp
     * 10.0.0.2:443: i/o timeout` */
    CLS_W("No such host"), CLS_W("I/o timeout"),
    {NULL, 0, false, false},
};
static const struct cls_word cls_warn_anywhere[] = {
    CLS_W("WARN"), CLS_W("WARNING"), CLS_W("warning:"), CLS_W("Warning:"),
    CLS_W("WARN:"), {NULL, 0, false, false},
};
/* Words that make a hazard when they open a line (or follow a tool name:
 * `npm error`, `cargo warning`).  `Failed` opens a failure's report
 * (`Failed 1/30 subtests`, dotnet's `  Failed Calc.Add [12 ms]`, PHPUnit's
 * `Failed asserting that ...`, `Failed to start x.service`); a count of
 * none (`Failed: 0`) is not one.  `rake aborted!`. */
static const struct cls_word cls_err_start[] = {
    CLS_W("error"), CLS_W("Error"), CLS_W("fatal"), CLS_W("Fatal"),
    CLS_W("E:"), CLS_W("panic:"), CLS_W("FAIL"), CLS_W("ERROR"),
    CLS_W("ERR!"), CLS_W("Failed"), CLS_W("aborted!"),
    {NULL, 0, false, false},
};
static const struct cls_word cls_warn_start[] = {
    CLS_W("warning"), CLS_W("Warning"), CLS_W("warn"), CLS_W("WARN"),
    CLS_W("W:"), CLS_W("WARNING"), {NULL, 0, false, false},
};

/* A count that is not zero at s[i..n): an optional ':', blanks, digits not
 * all '0', and the number ends there (`exit status 2`, `lost: 40 bytes`). */
static bool cls_nonzero_count(const char *s, size_t n, size_t i)
{
    if (i < n && s[i] == ':')
        i++;
    size_t b = i;
    while (i < n && s[i] == ' ')
        i++;
    size_t d = i;
    bool nonzero = false;
    while (i < n && cls_digit((unsigned char)s[i]))
        nonzero |= s[i++] != '0';
    return i > b && i > d && nonzero && (i == n || !cls_alnum((unsigned char)s[i]));
}

/* cls_word_at past the first byte, which the caller has matched: the
 * index of anywhere-words (cls_any_tab) holds each word under its first
 * byte, and a word of the errno list under that byte's other case too. */
static inline bool cls_word_rest(const char *s, size_t n, size_t i,
                                 const struct cls_word *w)
{
    size_t l = w->len;
    if (n - i < l || s[i + 1] != w->w[1] || memcmp(s + i + 2, w->w + 2, l - 2))
        return false;
    if (w->count)
        return cls_nonzero_count(s, n, i + l);
    char last = w->w[l - 1];
    if (w->open || last == ':' || last == '!' || last == '[')
        return true;
    return cls_right_ok(s, n, i + l);
}

/* Does word w open s[i..n) as a whole word?  Every line meets a few
 * dozen of these tests, so the first two bytes are compared before the
 * call to memcmp, which most candidates never reach (each word has two
 * bytes at least). */
static inline bool cls_word_at(const char *s, size_t n, size_t i,
                               const struct cls_word *w)
{
    return n - i >= w->len && s[i] == w->w[0] && cls_word_rest(s, n, i, w);
}

/* The first bytes of the start words, filled by cls_any_build with the
 * index below: where the byte at i is none of them (most lines open with
 * a digit, a path or a lowercase word), no start word is tried. */
static bool cls_start_first[256];
/* The bytes a level field may open with: the first letters of
 * cls_level_keys, '['. */
static const bool cls_level_first[256] = {['l'] = true, ['s'] = true,
                                          ['['] = true};
/* The bytes cls_scan_words looks at more closely: those a word of the
 * index or a level field opens with (filled by cls_any_build). */
static bool cls_scan_first[256];

static int cls_start_words(const char *s, size_t n, size_t i)
{
    if (i >= n || !cls_start_first[(unsigned char)s[i]])
        return 0;
    for (const struct cls_word *w = cls_err_start; w->w; w++)
        if (cls_word_at(s, n, i, w) && !cls_zero(s, n, i, i + w->len))
            return 1;
    for (const struct cls_word *w = cls_warn_start; w->w; w++)
        if (cls_word_at(s, n, i, w) && !cls_zero(s, n, i, i + w->len))
            return 2;
    return 0;
}

/* The anywhere-words of every list above by their first byte, so the
 * scan looks closely only where a word could start, and then only at the
 * words that start so: built once (cls_any_build), errors before warnings
 * within each byte. */
struct cls_any {
    const struct cls_word *w;
    bool warning;
};
#define CLS_NWORDS(a) (sizeof(a) / sizeof((a)[0]) - 1)
#define CLS_ANY_MAX                                                          \
    (CLS_NWORDS(cls_err_anywhere) + 2 * CLS_NWORDS(cls_err_errno) +          \
     CLS_NWORDS(cls_warn_anywhere))
static struct cls_any cls_any_tab[CLS_ANY_MAX];
static uint8_t cls_any_start[257]; /* byte c: entries [start[c], start[c+1]) */
_Static_assert(CLS_ANY_MAX <= UINT8_MAX, "cls_any_start holds uint8_t");

/* A letter's other case; the errno words all open with one. */
static unsigned char cls_other_case(char c)
{
    return (unsigned char)(c ^ 0x20);
}

static void cls_any_build(void)
{
    static const struct {
        const struct cls_word *list;
        bool warning;
        bool fold; /* under the other case of its first letter too */
    } lists[] = {
        {cls_err_anywhere, false, false}, {cls_err_errno, false, true},
        {cls_warn_anywhere, true, false},
    };
    unsigned count[256] = {0};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        for (const struct cls_word *w = lists[l].list; w->w; w++) {
            count[(unsigned char)w->w[0]]++;
            if (lists[l].fold)
                count[cls_other_case(w->w[0])]++;
        }
    unsigned at = 0, fill[256];
    for (unsigned c = 0; c < 256; c++) {
        cls_any_start[c] = (uint8_t)at;
        fill[c] = at;
        at += count[c];
    }
    cls_any_start[256] = (uint8_t)at;
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        for (const struct cls_word *w = lists[l].list; w->w; w++) {
            struct cls_any a = {w, lists[l].warning};
            cls_any_tab[fill[(unsigned char)w->w[0]]++] = a;
            if (lists[l].fold)
                cls_any_tab[fill[cls_other_case(w->w[0])]++] = a;
        }
    for (unsigned c = 0; c < 256; c++)
        cls_scan_first[c] = count[c] > 0 || cls_level_first[c];
    for (const struct cls_word *w = cls_err_start; w->w; w++)
        cls_start_first[(unsigned char)w->w[0]] = true;
    for (const struct cls_word *w = cls_warn_start; w->w; w++)
        cls_start_first[(unsigned char)w->w[0]] = true;
}

/* ------------------------------------------- a structured log's level */

/* The severity names a level field may hold, in lower case: 1 error,
 * 2 warning. */
static const struct {
    const char *w;
    int kind;
} cls_level_names[] = {
    {"error", 1}, {"err", 1},      {"fatal", 1},     {"critical", 1},
    {"crit", 1},  {"alert", 1},    {"emerg", 1},     {"emergency", 1},
    {"panic", 1}, {"severe", 1},   {"warn", 2},      {"warning", 2},
    {NULL, 0},
};

/* The kind of the level name that makes the whole word at s[i..n) (any
 * case), or 0. */
static int cls_level_name(const char *s, size_t n, size_t i)
{
    size_t e = i;
    while (e < n && e - i < 10 && cls_alnum((unsigned char)s[e]))
        e++;
    if (e < n && cls_alnum((unsigned char)s[e]))
        return 0;
    for (size_t k = 0; cls_level_names[k].w; k++) {
        const char *w = cls_level_names[k].w;
        size_t l = strlen(w), j = 0;
        if (l != e - i)
            continue;
        while (j < l && cls_lower((unsigned char)s[i + j]) == w[j])
            j++;
        if (j == l)
            return cls_level_names[k].kind;
    }
    return 0;
}

/* A numeric level as pino and bunyan write it: 40 warn, 50 error, 60
 * fatal. */
static int cls_level_number(const char *s, size_t n, size_t i)
{
    if (n - i < 2 || !cls_digit((unsigned char)s[i]) || s[i + 1] != '0' ||
        (n - i > 2 && cls_digit((unsigned char)s[i + 2])))
        return 0;
    return s[i] == '4' ? 2 : s[i] == '5' || s[i] == '6' ? 1 : 0;
}

/* After a level key that ends at i: its value, in a JSON line (`"level":
 * "error"`, `"level":50`) or in logfmt (`level=error`, `level="warn"`). */
static int cls_level_value(const char *s, size_t n, size_t i)
{
    bool json = i < n && s[i] == '"';
    if (json) {
        i++;
        while (i < n && s[i] == ' ')
            i++;
        if (i >= n || s[i] != ':')
            return 0;
        i++;
        while (i < n && s[i] == ' ')
            i++;
    } else if (i >= n || s[i] != '=') {
        return 0;
    } else {
        i++;
    }
    if (i < n && s[i] == '"')
        return cls_level_name(s, n, i + 1);
    return json ? cls_level_number(s, n, i) : cls_level_name(s, n, i);
}

/* The keys that name a line's level; a longer one sharing a start with a
 * shorter one comes first. */
static const char *const cls_level_keys[] = {
    "levelname", "level", "log_level", "loglevel", "lvl", "severity", NULL,
};

/*
 * The severity a structured log line states in a field of its own, where
 * no error word need appear, if one opens at s[i] (the scan of
 * cls_scan_words tries each byte that cls_level_first marks): zap's,
 * logrus's, pino's and Python's JSON lines (`{"level":"error", ...}`,
 * `"level":50`, Google Cloud's `"severity":"ERROR"`), logfmt (`time=...
 * level=error msg="sync failed"`), and a level in brackets as nginx and
 * Apache write it (`2024/05/01 10:00:00 [emerg] 1#1: unknown directive`,
 * `[core:crit]`).  1 error, 2 warning, 0 none.
 */
static int cls_level_at(const char *s, size_t n, size_t i)
{
    if (s[i] == '[') {
        size_t v = i + 1, e = v;
        if (v >= n || !cls_alnum((unsigned char)s[v]))
            return 0;
        /* Apache's `[module:level]` */
        while (e < n && e - v < 24 && (cls_alnum((unsigned char)s[e]) ||
                                       s[e] == '_'))
            e++;
        if (e < n && s[e] == ':')
            v = e + 1;
        int k = cls_level_name(s, n, v);
        size_t end = v;
        while (end < n && cls_alnum((unsigned char)s[end]))
            end++;
        return k && end < n && s[end] == ']' ? k : 0;
    }
    /* most words that open with 'l' or 's' are no key: `le`, `lo`, `lv`
     * and `sev` are (the scan takes only a word's start) */
    if ((i > 0 && s[i - 1] == '_') || n - i < 4 ||
        (s[i] == 'l' ? s[i + 1] != 'e' && s[i + 1] != 'o' && s[i + 1] != 'v'
                     : s[i + 1] != 'e' || s[i + 2] != 'v'))
        return 0;
    for (size_t k = 0; cls_level_keys[k]; k++) {
        size_t l = strlen(cls_level_keys[k]);
        if (n - i > l && !memcmp(s + i, cls_level_keys[k], l))
            return cls_level_value(s, n, i + l);
    }
    return 0;
}

/* Anywhere-words starting in s[from, to) (s[0, n) is the whole text, for
 * the boundaries), and a level field (cls_level_at): 1 error word, 2
 * warning word, 3 an error level with no error word, 4 a warning level
 * with no word, 0 none. */
static int cls_scan_words(const char *s, size_t n, size_t from, size_t to)
{
    bool warn = false;
    int level = 0;
    for (size_t p = from; p < to; p++) {
        unsigned char c = (unsigned char)s[p];
        /* one load for most bytes: no word and no level field opens so */
        if (!cls_scan_first[c] || !cls_left_ok(s, p))
            continue;
        if (cls_level_first[c] && !level)
            level = cls_level_at(s, n, p);
        for (unsigned e = cls_any_start[c]; e < cls_any_start[c + 1]; e++) {
            const struct cls_word *w = cls_any_tab[e].w;
            if (!cls_word_rest(s, n, p, w) || cls_zero(s, n, p, p + w->len))
                continue;
            if (!cls_any_tab[e].warning)
                return 1;
            warn = true;
        }
        /* make: `*** [all] Error 2` */
        if (c == 'E' && n - p >= 7 && !memcmp(s + p, "Error ", 6) &&
            s[p + 6] >= '1' && s[p + 6] <= '9')
            return 1;
    }
    return level == 1 ? 3 : warn ? 2 : level == 2 ? 4 : 0;
}

/* Error / warning words: 1 error, 2 warning, 0 none; 3 and 4 for an
 * error and a warning level field (cls_scan_words). */
static int cls_keywords(const char *s, size_t n)
{
    size_t i = cls_indent(s, n);
    while (i < n && (s[i] == '[' || s[i] == '*' || s[i] == '!'))
        i++;
    int k = cls_start_words(s, n, i);
    if (k)
        return k;
    /* pytest's failure detail: `E       assert 6 == 7` */
    if (i == 0 && n > 3 && s[0] == 'E' && s[1] == ' ' && s[2] == ' ' &&
        !cls_blank(s, n))
        return 1;
    /* a linter's `  12:5  error  message  rule` (eslint, stylelint) */
    size_t d = i;
    while (d < n && s[d] >= '0' && s[d] <= '9')
        d++;
    if (d > i && d < n && s[d] == ':') {
        size_t c = ++d;
        while (d < n && s[d] >= '0' && s[d] <= '9')
            d++;
        if (d > c && d < n && cls_space((unsigned char)s[d])) {
            while (d < n && cls_space((unsigned char)s[d]))
                d++;
            if (n - d > 5 && !memcmp(s + d, "error", 5))
                return 1;
            if (n - d > 7 && !memcmp(s + d, "warning", 7))
                return 2;
        }
    }
    /* second word after a short tool name: `npm error`, `cargo warning:` */
    size_t j = i;
    while (j < n && j - i < 24 && (cls_alnum((unsigned char)s[j]) ||
                                   s[j] == '-' || s[j] == '_' || s[j] == '.'))
        j++;
    if (j > i && j < n && (s[j] == ' ' || s[j] == ':')) {
        if (s[j] == ':')
            j++;
        while (j < n && s[j] == ' ')
            j++;
        if ((k = cls_start_words(s, n, j)))
            return k;
    }
    return cls_scan_words(s, n, 0, n);
}

static const char *const cls_red_words[] = {
    "error", "fail", "fatal", "panic", "exception", "denied", "refused",
    "invalid", "not found", "missing", "cannot", "could not", "unable",
    "abort", NULL,
};
static const char *const cls_yellow_words[] = {
    "warn", "deprecat", "caution", NULL,
};

/* ------------------------------------ deaths and tools' own error forms */

static size_t cls_trim_end(const char *s, size_t n)
{
    while (n > 0 && cls_space((unsigned char)s[n - 1]))
        n--;
    return n;
}

/* How a shell words a death by signal (strsignal). */
static const struct cls_word cls_deaths[] = {
    CLS_W("Killed"), CLS_W("Terminated"), CLS_W("Aborted"),
    CLS_W("Segmentation fault"), CLS_W("Bus error"),
    CLS_W("Illegal instruction"), CLS_W("Floating point exception"),
    CLS_W("Trace/breakpoint trap"), CLS_W("CPU time limit exceeded"),
    CLS_W("File size limit exceeded"), {NULL, 0, false, false},
};

/* A death word at i that ends the line (before e), ends it with
 * ` (core dumped)`, or is padded as bash pads its job column. */
static bool cls_death_at(const char *s, size_t e, size_t i)
{
    static const char core[] = " (core dumped)";
    for (const struct cls_word *w = cls_deaths; w->w; w++) {
        size_t j = i + w->len;
        if (e - i < w->len || s[i] != w->w[0] || memcmp(s + i, w->w, w->len))
            continue;
        if (j == e || (e - j >= 2 && s[j] == ' ' && s[j + 1] == ' ') ||
            (e - j == sizeof core - 1 && !memcmp(s + j, core, sizeof core - 1)))
            return true;
    }
    return false;
}

/* A death by signal as the shell reports it: the word alone on its line
 * (`Killed` after the OOM killer, `Aborted (core dumped)`), or after the
 * pid in bash's report (`./x.sh: line 3:  4242 Killed   sleep 9`).  Not
 * the word in prose: `Killed 3 stale workers` is a log line. */
static bool cls_death(const char *s, size_t n)
{
    size_t e = cls_trim_end(s, n), i = cls_indent(s, e);
    if (cls_death_at(s, e, i))
        return true;
    for (const char *c = s + i; (c = memchr(c, ':', e - (size_t)(c - s)));
         c++) {
        size_t q = (size_t)(c - s) + 1;
        if (q >= e || s[q] != ' ')
            continue;
        while (q < e && s[q] == ' ')
            q++;
        size_t d = q;
        while (q < e && cls_digit((unsigned char)s[q]))
            q++;
        if (q == d || q >= e || s[q] != ' ')
            continue;
        while (q < e && s[q] == ' ')
            q++;
        if (cls_death_at(s, e, q))
            return true;
    }
    return false;
}

/* dash and busybox sh on a missing command: `/bin/sh: 1: cmake: not
 * found` (bash says `command not found`, an anywhere-word). */
static bool cls_sh_not_found(const char *s, size_t n)
{
    static const char nf[] = ": not found";
    size_t e = cls_trim_end(s, n), l = sizeof nf - 1;
    return e > l && !memcmp(s + e - l, nf, l);
}

/* ctest's verdicts on a test, after its row of dots: `1/3 Test #1: add
 * ....***Failed  0.01 sec`, `***Exception: SegFault`, `***Timeout`,
 * `***Not Run`. */
static const struct cls_word cls_ctest_stars[] = {
    CLS_W("***Failed"), CLS_W("***Exception"), CLS_W("***Timeout"),
    CLS_W("***Not Run"), {NULL, 0, false, false},
};

/* The `***` forms: GNU make's fatal errors put `***` after a make or
 * makefile name (`make: *** No rule to make target 'x'.  Stop.`,
 * `make[1]: *** [all] Error 2`, `Makefile:5: *** missing separator.
 * Stop.`), ctest its verdicts (cls_ctest_stars).  The rule's id, or
 * NULL. */
static const char *cls_stars(const char *s, size_t n)
{
    /* `*` is rare in output: memchr finds each quickly */
    for (const char *p = s; (p = memchr(p, '*', n - (size_t)(p - s))); p++) {
        size_t at = (size_t)(p - s);
        for (const struct cls_word *w = cls_ctest_stars; w->w; w++)
            if (cls_word_at(s, n, at, w))
                return "ctest-failed";
        if (at < 2 || n - at < 4 || memcmp(p - 2, ": *** ", 6))
            continue;
        at -= 2;
        size_t b = at;
        while (b > 0 && !cls_space((unsigned char)s[b - 1]))
            b--;
        if (cls_has_ci(s + b, at - b, "make") || cls_has_ci(s + b, at - b, ".mk"))
            return "make-fatal";
    }
    return NULL;
}

/* Ruby's uncaught exception: `app.rb:3:in `<main>': message (NameError)`
 * (3.4 quotes it 'like this'), its frames below as `\tfrom app.rb:1:in`. */
static bool cls_ruby_exception(const char *s, size_t n)
{
    size_t e = cls_trim_end(s, n);
    if (e < 2 || s[e - 1] != ')')
        return false; /* the cheap test first: most lines end otherwise */
    size_t i = 0;
    while (i < n && s[i] != ':' && !cls_space((unsigned char)s[i]))
        i++;
    if (i == 0 || i >= n)
        return false;
    size_t d = ++i;
    while (i < n && cls_digit((unsigned char)s[i]))
        i++;
    if (i == d || !cls_prefix(s + i, n - i, ":in ") || e < i + 2)
        return false;
    size_t b = e - 1;
    while (b > i && (cls_alnum((unsigned char)s[b - 1]) || s[b - 1] == '_' ||
                     s[b - 1] == ':'))
        b--;
    size_t l = e - 1 - b;
    return s[b - 1] == '(' &&
           ((l >= 5 && !memcmp(s + e - 6, "Error", 5)) ||
            (l >= 9 && !memcmp(s + e - 10, "Exception", 9)));
}

/* curl's failures: `curl: (6) Could not resolve host: x`, `curl: (7)
 * Failed to connect ...`: the exit code in parentheses. */
static bool cls_curl_error(const char *s, size_t n)
{
    if (!cls_prefix(s, n, "curl: ("))
        return false;
    size_t i = 7, d = i;
    while (i < n && cls_digit((unsigned char)s[i]))
        i++;
    return i > d && i < n && s[i] == ')';
}

/* mocha's summary `  1 failing` (it prints no `0 failing`, but that would
 * not be one either). */
static bool cls_failing_count(const char *s, size_t n)
{
    static const char w[] = " failing";
    size_t i = cls_indent(s, n), d = i;
    bool nonzero = false;
    while (i < n && cls_digit((unsigned char)s[i]))
        nonzero |= s[i++] != '0';
    size_t e = i + sizeof w - 1;
    return i > d && nonzero && cls_prefix(s + i, n - i, w) &&
           (e == n || !cls_wordish((unsigned char)s[e]));
}

/* The severity of a glog / klog line (Kubernetes, kubectl, many Go and
 * C++ servers): its prefix (dedup_glog_len), then `file:line]`, as in
 * `E1124 07:51:39.309454   21704 memcache.go:265] msg`.  'E', 'F' or 'W'
 * when the line is one, else 0 (Info says nothing). */
static char cls_glog_level(const char *s, size_t n)
{
    size_t g = dedup_glog_len(s, n);
    if (!g || s[0] == 'I')
        return 0;
    const char *b = memchr(s + g, ']', n - g < 256 ? n - g : 256);
    return b && b > s + g && cls_digit((unsigned char)b[-1]) ? s[0] : 0;
}

/* The rules for what a process or a tool says as it fails, in its own
 * form rather than with an error word. */
static bool cls_tool_report(const char *s, size_t n, size_t scan,
                            struct cls_hit *h)
{
    size_t ind = cls_indent(s, n);
    char lv = ind ? 0 : cls_glog_level(s, n);
    if (lv) {
        h->id = "glog";
        h->warning = lv == 'W';
        return true;
    }
    if (cls_death(s, scan)) {
        h->id = "signal";
        return true;
    }
    if (cls_prefix(s + ind, n - ind, "terminate called ")) {
        h->id = "cxx-terminate"; /* std::terminate, before its abort */
        return true;
    }
    if (cls_sh_not_found(s, n)) {
        h->id = "sh-not-found";
        return true;
    }
    if ((h->id = cls_stars(s, scan)))
        return true;
    if (ind == 0 && cls_ruby_exception(s, n)) {
        h->id = "ruby-exception";
        h->ml = CLS_ML_INDENTED;
        h->ml_max = CLS_TRACE_MAX;
        return true;
    }
    if (cls_curl_error(s, n)) {
        h->id = "curl-error";
        return true;
    }
    if (cls_failing_count(s, n)) {
        h->id = "failing-count";
        return true;
    }
    return false;
}

/* ------------------------------------- test runners' and checkers' forms */

/* TAP's failed test point (`not ok 3 - name`, bats' `not ok 3 name`, a
 * subtest's indented one): `not ok`, then the end, a number or ` - `, so
 * `not ok to merge` is prose.  Not one with a `# TODO` or `# SKIP`
 * directive: TAP counts those as expected, not as failures. */
static bool cls_tap_not_ok(const char *t, size_t tn)
{
    if (!cls_prefix(t, tn, "not ok"))
        return false;
    size_t i = 6;
    if (i < tn) {
        if (t[i] != ' ')
            return false;
        while (i < tn && t[i] == ' ')
            i++;
        if (i < tn && !cls_digit((unsigned char)t[i]) && t[i] != '-')
            return false;
    }
    for (; i + 1 < tn; i++) {
        if (t[i] != '#' || !cls_space((unsigned char)t[i - 1]))
            continue;
        size_t d = i + 1;
        while (d < tn && cls_space((unsigned char)t[d]))
            d++;
        if (tn - d >= 4 && (cls_has_ci(t + d, 4, "todo") || cls_has_ci(t + d, 4, "skip")))
            return false;
    }
    return true;
}

/* Test::More's diagnostic of a failed test, `#   Failed test 'name'` (on
 * stderr: prove shows it while it reads the `not ok` line itself).  Not
 * `#   Failed (TODO) test`. */
static bool cls_tap_failed_diag(const char *t, size_t tn)
{
    static const char w[] = "Failed test";
    if (tn < 2 || t[0] != '#' || !cls_space((unsigned char)t[1]))
        return false;
    size_t i = 1;
    while (i < tn && cls_space((unsigned char)t[i]))
        i++;
    size_t e = i + sizeof w - 1;
    return cls_prefix(t + i, tn - i, w) && (e == tn || t[e] == ' ');
}

/* The length of a test runner's failure mark opening t, or 0: ✕ (jest),
 * ✖ (node's spec reporter), ✗ (bats), ✘ (ava), × (vitest). */
static size_t cls_fail_mark(const char *t, size_t tn)
{
    const unsigned char *u = (const unsigned char *)t;
    if (tn >= 3 && u[0] == 0xE2 && u[1] == 0x9C && u[2] >= 0x95 && u[2] <= 0x98)
        return 3;
    if (tn >= 2 && u[0] == 0xC3 && u[1] == 0x97)
        return 2;
    return 0;
}

/* jest's failed test's block head, `  ● suite › test name` (indented:
 * systemctl's `● unit.service` opens a line), but not its `● Console`. */
static bool cls_jest_block(const char *t, size_t tn)
{
    size_t e = cls_trim_end(t, tn);
    return e > 4 && !memcmp(t, "\xe2\x97\x8f ", 4) && !cls_space((unsigned char)t[4]) &&
           !(e == 11 && !memcmp(t + 4, "Console", 7));
}

/* git's merge conflicts: `CONFLICT (content): Merge conflict in x`,
 * `CONFLICT (modify/delete): x deleted in HEAD and modified in y.`. */
static bool cls_git_conflict(const char *s, size_t n)
{
    static const char w[] = "CONFLICT (";
    size_t l = sizeof w - 1;
    if (!cls_prefix(s, n, w))
        return false;
    const char *c = memchr(s + l, ')', n - l);
    return c && c > s + l && (size_t)(c - s) + 1 < n && c[1] == ':';
}

/* rspec's list of failed examples, each a command to rerun it: `rspec
 * ./spec/calc_spec.rb:12 # Calc adds` (or `[1:2:1]` for an id). */
static bool cls_rspec_rerun(const char *s, size_t n)
{
    if (!cls_prefix(s, n, "rspec ./"))
        return false;
    const char *sp = memchr(s + 8, ' ', n - 8);
    size_t e = sp ? (size_t)(sp - s) : n;
    if (e + 2 > n || s[e + 1] != '#')
        return false;
    if (s[e - 1] == ']')
        return memchr(s + 8, '[', e - 8) != NULL;
    size_t d = e;
    while (d > 8 && cls_digit((unsigned char)s[d - 1]))
        d--;
    return d < e && s[d - 1] == ':';
}

/* ShellCheck's finding under its caret, `  ^-- SC2086 (info): Double
 * quote ...` or `^----^ SC2086 ...`: 1 for `(error)`, 2 for `(warning)`,
 * `(info)` and `(style)` (each makes shellcheck exit 1), 0 for none. */
static int cls_shellcheck_finding(const char *t, size_t tn)
{
    size_t i = 1;
    while (i < tn && (t[i] == '-' || t[i] == '^'))
        i++;
    if (i < 3 || !cls_prefix(t + i, tn - i, " SC"))
        return 0;
    i += 3;
    size_t d = i;
    while (i < tn && cls_digit((unsigned char)t[i]))
        i++;
    if (i == d || !cls_prefix(t + i, tn - i, " ("))
        return 0;
    i += 2;
    if (cls_prefix(t + i, tn - i, "error):"))
        return 1;
    if (cls_prefix(t + i, tn - i, "warning):") || cls_prefix(t + i, tn - i, "info):") ||
        cls_prefix(t + i, tn - i, "style):"))
        return 2;
    return 0;
}

/* ShellCheck's head of its findings in one line: `In deploy.sh line 3:`.
 * The length of `deploy.sh line 3` (from offset 3), or 0. */
static size_t cls_shellcheck_head(const char *s, size_t n)
{
    size_t e = cls_trim_end(s, n), i = 3;
    if (e < 11 || !cls_prefix(s, e, "In ") || s[e - 1] != ':')
        return 0;
    while (i < e && !cls_space((unsigned char)s[i]))
        i++;
    if (i == 3 || !cls_prefix(s + i, e - i, " line "))
        return 0;
    i += 6;
    size_t d = i;
    while (i < e && cls_digit((unsigned char)s[i]))
        i++;
    return i > d && i + 1 == e ? i - 3 : 0;
}

/* ctest's states of a test that did not pass, as its closing list shows
 * them under `The following tests FAILED:`. */
static const char *const cls_ctest_states[] = {
    "Failed", "Timeout", "SEGFAULT", "Not Run", "Subprocess aborted",
    "Exception", "Child aborted", "ILLEGAL", "OTHER_FAULT", NULL,
};

/* That list's lines: `\t  1 - calc_add (Failed)`. */
static bool cls_ctest_listed(const char *t, size_t tn)
{
    size_t e = cls_trim_end(t, tn), i = 0;
    if (e < 8 || t[e - 1] != ')')
        return false; /* the cheap test first: most lines end otherwise */
    while (i < e && cls_digit((unsigned char)t[i]))
        i++;
    if (i == 0 || !cls_prefix(t + i, e - i, " - "))
        return false;
    for (size_t k = 0; cls_ctest_states[k]; k++) {
        size_t l = strlen(cls_ctest_states[k]);
        if (e >= i + 3 + l + 3 && !memcmp(t + e - l - 3, " (", 2) &&
            !memcmp(t + e - l - 1, cls_ctest_states[k], l))
            return true;
    }
    return false;
}

/* valgrind's and the sanitizers' `==1234==` prefix: its length, or 0. */
static size_t cls_pid_prefix(const char *s, size_t n)
{
    if (n < 5 || s[0] != '=' || s[1] != '=')
        return 0;
    size_t i = 2;
    while (i < n && cls_digit((unsigned char)s[i]))
        i++;
    return i > 2 && i + 1 < n && s[i] == '=' && s[i + 1] == '=' ? i + 2 : 0;
}

/* Whether t opens with a sanitizer's name and a colon:
 * `AddressSanitizer:`, `UndefinedBehaviorSanitizer:`, ... */
static bool cls_sanitizer_named(const char *t, size_t tn)
{
    static const char san[] = "Sanitizer";
    size_t i = 0, l = sizeof san - 1;
    while (i < tn && cls_alnum((unsigned char)t[i]))
        i++;
    return i > l && i < tn && t[i] == ':' && !memcmp(t + i - l, san, l);
}

/* A sanitizer's report opening, after its pid prefix when it has one:
 * `ERROR: AddressSanitizer: heap-use-after-free ...` (also LeakSanitizer,
 * MemorySanitizer), `WARNING: ThreadSanitizer: data race`: 1 for ERROR,
 * 2 for WARNING, 0 for none. */
static int cls_sanitizer_head(const char *t, size_t tn)
{
    if (cls_prefix(t, tn, "ERROR: "))
        return cls_sanitizer_named(t + 7, tn - 7) ? 1 : 0;
    if (cls_prefix(t, tn, "WARNING: "))
        return cls_sanitizer_named(t + 9, tn - 9) ? 2 : 0;
    return 0;
}

/* memcheck's (and helgrind's) errors, each with its stack below it. */
static const struct cls_word cls_valgrind_errors[] = {
    CLS_WO("Invalid read of size"), CLS_WO("Invalid write of size"),
    CLS_WO("Invalid free()"), CLS_WO("Mismatched free()"),
    CLS_WO("Conditional jump or move depends on uninitialised"),
    CLS_WO("Use of uninitialised value"), CLS_WO("Syscall param "),
    CLS_WO("Source and destination overlap"),
    CLS_WO("Process terminating with default action of signal"),
    CLS_WO("Possible data race"), CLS_WO("Argument 'size' of function"),
    {NULL, 0, false, false},
};
/* memcheck's counts: a hazard when they are not zero. */
static const struct cls_word cls_valgrind_counts[] = {
    CLS_WN("ERROR SUMMARY"), CLS_WN("definitely lost"), CLS_WN("possibly lost"),
    {NULL, 0, false, false},
};

/* A line after valgrind's prefix (its text r, blanks skipped): 1 a
 * hazard, -1 none whatever its words say (`ERROR SUMMARY: 0 errors`), 0
 * for the other rules to judge.  *ml: it owns the `==N==` lines below. */
static int cls_valgrind(const char *r, size_t rn, bool *ml)
{
    *ml = false;
    for (const struct cls_word *w = cls_valgrind_errors; w->w; w++)
        if (cls_word_at(r, rn, 0, w)) {
            *ml = true;
            return 1;
        }
    /* a leak's record: `40 bytes in 1 blocks are definitely lost in ...` */
    if (cls_digit((unsigned char)r[0]) &&
        (cls_has_ci(r, rn, " are definitely lost") || cls_has_ci(r, rn, " are possibly lost"))) {
        *ml = true;
        return 1;
    }
    for (const struct cls_word *w = cls_valgrind_counts; w->w; w++)
        if (cls_prefix(r, rn, w->w))
            return cls_word_at(r, rn, 0, w) ? 1 : -1;
    return 0;
}

/* A sanitizer's report (cls_sanitizer_head's k) owns its lines up to its
 * `SUMMARY:`: the access, the stacks, where the memory came from. */
static int cls_sanitizer_hit(struct cls_hit *h, int k)
{
    h->id = "sanitizer";
    h->warning = k == 2;
    h->ml = CLS_ML_SANITIZER;
    h->ml_max = CLS_TRACE_MAX;
    return 1;
}

/* What test runners, checkers and git say as a test or a step fails, in
 * their own forms rather than with an error word.  1 a hazard (in h), -1
 * no hazard whatever the line's words say, 0 for the other rules.  It
 * dispatches on the first byte after the indentation, so a line pays for
 * one form at most. */
static int cls_test_report(const char *s, size_t n, size_t ind, struct cls_hit *h)
{
    const char *t = s + ind;
    size_t tn = n - ind, m, l;
    int k;
    bool ml;
    if (!tn)
        return 0;
    switch ((unsigned char)t[0]) {
    case 'n':
        if (!ind && cls_prefix(t, tn, "ninja: build stopped: subcommand failed")) {
            h->id = "ninja-stopped";
            return 1;
        }
        /* TAP at any depth: subtests nest by indentation */
        if (!cls_tap_not_ok(t, tn))
            return 0;
        h->id = "tap-not-ok";
        h->ml = CLS_ML_TAP;
        break;
    case '#':
        if (!cls_tap_failed_diag(t, tn))
            return 0;
        h->id = "tap-failed-diag";
        h->ml = CLS_ML_TAP;
        break;
    case 'B':
        if (ind || !cls_prefix(t, tn, "Bail out!"))
            return 0;
        h->id = "tap-bail-out";
        return 1;
    case 0xC3:
    case 0xE2:
        /* marks at any depth: runners nest them by suite */
        if ((m = cls_fail_mark(t, tn)) && m + 1 < tn && t[m] == ' ' &&
            !cls_space((unsigned char)t[m + 1])) {
            h->id = "test-fail-mark";
            h->ml = CLS_ML_DEEPER;
            break;
        }
        if (ind && ind <= CLS_INDENT_MAX && cls_jest_block(t, tn)) {
            h->id = "test-fail-block";
            h->ml = CLS_ML_DEEPER_GAPS;
            break;
        }
        return 0;
    case 'A':
        if (ind || !cls_prefix(t, tn, "Automatic merge failed"))
            return 0;
        h->id = "git-merge-failed";
        return 1;
    case 'C':
        if (ind || !cls_git_conflict(t, tn))
            return 0;
        h->id = "git-conflict";
        return 1;
    case 'D':
        if (!cls_prefix(t, tn, "Direct leak of "))
            return 0;
        h->id = "sanitizer-leak";
        return 1;
    case 'F':
        /* rspec's `Failure/Error: expect(x)...` under its example;
         * PHPUnit's verdict */
        if (cls_prefix(t, tn, "Failure/Error:"))
            h->id = "rspec-failure";
        else if (!ind && cls_prefix(t, tn, "FAILURES!"))
            h->id = "phpunit-failures";
        else
            return 0;
        return 1;
    case 'S':
        /* `SUMMARY: UndefinedBehaviorSanitizer: ...` when no report of
         * the sanitizer's owns it */
        if (ind || !cls_prefix(t, tn, CLS_SUMMARY_PREFIX) ||
            !cls_sanitizer_named(t + strlen(CLS_SUMMARY_PREFIX),
                                 tn - strlen(CLS_SUMMARY_PREFIX)))
            return 0;
        h->id = "sanitizer-summary";
        return 1;
    case '!':
        if (ind > 1 || !(cls_prefix(t, tn, "! [rejected] ") ||
                         cls_prefix(t, tn, "! [remote rejected] ")))
            return 0;
        h->id = "git-rejected";
        return 1;
    case 'r':
        if (ind || !cls_rspec_rerun(t, tn))
            return 0;
        h->id = "rspec-rerun";
        return 1;
    case '^':
        if (!(k = cls_shellcheck_finding(t, tn)))
            return 0;
        h->id = "shellcheck";
        h->warning = k == 2;
        return 1;
    case 'I':
        if (cls_prefix(t, tn, "Indirect leak of ")) {
            h->id = "sanitizer-leak";
            return 1;
        }
        if (ind || !(l = cls_shellcheck_head(t, tn)))
            return 0;
        h->id = "shellcheck-head";
        h->warning = true;
        h->has_loc = true;
        h->loc_off = 3;
        h->loc_len = l;
        /* the source line it names, under it; the findings below that
         * are hazards of their own */
        h->ml = CLS_ML_UNTIL_BLANK;
        h->ml_max = 1;
        return 1;
    case '=':
        if (ind || !(m = cls_pid_prefix(t, tn)))
            return 0;
        if ((k = cls_sanitizer_head(t + m, tn - m)))
            return cls_sanitizer_hit(h, k);
        while (m < tn && cls_space((unsigned char)t[m]))
            m++;
        if (m == tn)
            return 0;
        if ((k = cls_valgrind(t + m, tn - m, &ml)) <= 0)
            return k;
        h->id = "valgrind";
        if (ml) {
            h->ml = CLS_ML_VALGRIND;
            h->ml_max = CLS_TRACE_MAX;
        }
        return 1;
    case 'E':
    case 'W':
        if (ind)
            return 0;
        /* PHPUnit's verdict on errors, ctest's closing line */
        if (cls_prefix(t, tn, "ERRORS!")) {
            h->id = "phpunit-errors";
            return 1;
        }
        if (cls_prefix(t, tn, "Errors while running CTest")) {
            h->id = "ctest-failed";
            return 1;
        }
        /* a sanitizer's `ERROR: AddressSanitizer: ...` without a prefix */
        if (!(k = cls_sanitizer_head(t, tn)))
            return 0;
        return cls_sanitizer_hit(h, k);
    default:
        if (!cls_digit((unsigned char)t[0]) || !cls_ctest_listed(t, tn))
            return 0;
        h->id = "ctest-failed";
        return 1;
    }
    /* a failed test: it owns its detail below it */
    h->ml_max = CLS_TEST_DETAIL_MAX;
    h->ml_indent = ind;
    return 1;
}

/* Whether a line opens a failed test of its own (a TAP `not ok`, a
 * failure mark, jest's `●` block): it ends the capture of the hazard
 * above it (`FAIL src/a.test.js` owns its indented lines) rather than
 * being one of that hazard's lines. */
static bool cls_failure_head(const char *s, size_t n)
{
    size_t ind = cls_indent(s, n);
    if (ind == n)
        return false;
    unsigned char c = (unsigned char)s[ind];
    struct cls_hit h;
    memset(&h, 0, sizeof h);
    return (c == 'n' || c == 0xE2 || c == 0xC3) && cls_test_report(s, n, ind, &h) == 1;
}

/* A BuildKit step prints its output as `#8 0.345 text` (step, seconds),
 * its own lines as `#8 ERROR: ...`: the prefix's length, or 0. */
static size_t cls_step_prefix(const char *s, size_t n)
{
    if (n < 3 || s[0] != '#')
        return 0;
    size_t i = 1;
    while (i < n && cls_digit((unsigned char)s[i]))
        i++;
    if (i == 1 || i >= n || s[i] != ' ')
        return 0;
    size_t step = ++i;
    while (i < n && cls_digit((unsigned char)s[i]))
        i++;
    if (i == step || i >= n || s[i] != '.')
        return step;
    size_t f = ++i;
    while (i < n && cls_digit((unsigned char)s[i]))
        i++;
    return i > f && i < n && s[i] == ' ' ? i + 1 : step;
}

/* Case-insensitive substring in the scanned windows (CLS_SCAN_MAX). */
static bool cls_window_has_ci(const char *s, size_t n, const char *w)
{
    if (n <= CLS_SCAN_MAX)
        return cls_has_ci(s, n, w);
    return cls_has_ci(s, CLS_SCAN_MAX, w) ||
           cls_has_ci(s + n - CLS_SCAN_MAX, CLS_SCAN_MAX, w);
}

/* The margin Python draws around the tracebacks of an exception group
 * (`  + Exception Group Traceback ...`, then `  |   File ...`, `    |
 * ValueError: ...` for a nested one): blanks, `|` or `+`, and a space.
 * Its length, or 0 for a line without one. */
static size_t cls_pymargin(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    return i + 1 < n && (s[i] == '|' || s[i] == '+') && s[i + 1] == ' '
               ? i + 2
               : 0;
}

static bool cls_universal_line(const char *s, size_t n, unsigned colours,
                               struct cls_hit *h)
{
    memset(h, 0, sizeof *h);
    size_t ind = cls_indent(s, n);
    const char *t = s + ind;
    size_t tn = n - ind;
    if (cls_prefix(t, tn, "Traceback (most recent call last)")) {
        h->ml = CLS_ML_PYTRACE;
        h->ml_max = CLS_TRACE_MAX;
        h->id = "python-traceback";
        return true;
    }
    /* A traceback inside an exception group's margin: its frames and its
     * exception line carry the margin too (cls_ml_builtin). */
    size_t m = cls_pymargin(s, n);
    if (m && (cls_prefix(s + m, n - m, "Traceback (most recent call last)") ||
              cls_prefix(s + m, n - m,
                         "Exception Group Traceback (most recent call last)"))) {
        h->ml = CLS_ML_PYTRACE;
        h->ml_max = CLS_TRACE_MAX;
        h->id = "python-traceback";
        return true;
    }
    if (ind == 0 && (cls_prefix(s, n, "panic: ") || cls_prefix(s, n, "fatal error: ") ||
                     (cls_prefix(s, n, "goroutine ") && n > 10 && s[10] >= '0' &&
                      s[10] <= '9'))) {
        h->ml = CLS_ML_UNTIL_BLANK;
        h->ml_max = CLS_TRACE_MAX;
        h->id = "go-panic";
        return true;
    }
    if (cls_prefix(s, n, "thread '") && cls_has_ci(s, n, "' panicked at")) {
        h->ml = CLS_ML_UNTIL_BLANK;
        h->ml_max = CLS_CC_CONTEXT_MAX;
        h->id = "rust-panic";
        return true;
    }
    if (cls_prefix(s, n, "Exception in thread ")) {
        h->ml = CLS_ML_INDENTED;
        h->ml_max = CLS_TRACE_MAX;
        h->id = "java-exception";
        return true;
    }
    if (ind == 0 && cls_location(s, n, h))
        return true;
    /* node's throw site, with its excerpt and caret under it (taken by
     * their place, as a compiler's) */
    if (ind == 0 && cls_throw_site(s, n)) {
        h->id = "throw-site";
        h->ml = CLS_ML_THROW;
        h->ml_max = CLS_THROW_SITE_LINES;
        h->has_loc = true;
        h->loc_len = n;
        return true;
    }
    /* an indented `file.ext:N: message`: a test's failure message (go test
     * prints them above their `--- FAIL`) */
    if (ind > 0 && ind <= CLS_INDENT_MAX && cls_indented_location(t, tn)) {
        h->id = "indented-location";
        h->has_loc = true;
        h->loc_off = ind;
        const char *c1 = memchr(t, ':', tn);
        const char *c2 = memchr(c1 + 1, ':', tn - (size_t)(c1 + 1 - t));
        h->loc_len = (size_t)(c2 - t);
        return true;
    }
    if (ind <= CLS_INDENT_MAX && cls_exception(t, tn, ind > 0, h))
        return true;
    int tr = cls_test_report(s, n, ind, h);
    if (tr)
        return tr > 0;
    size_t scan = n < CLS_SCAN_MAX ? n : CLS_SCAN_MAX;
    if (cls_tool_report(s, n, scan, h))
        return true;
    /* a test its runner says passed: the words of its name are no
     * failure (`✓ handles connection refused`, `ok 3 - returns ERROR`) */
    if (cls_passed_test(t, tn))
        return false;
    int k = cls_keywords(s, scan);
    /* the end of a long line too: a message after a long payload; from a
     * little before the head's end when they overlap, so a word across
     * the head's edge is seen whole */
    if (!k && n > CLS_SCAN_MAX)
        k = cls_scan_words(s, n, n - CLS_SCAN_MAX, n);
    if (k >= 3) {
        /* the line's own severity: its continuation lines are its own
         * fields, or the next entry */
        h->warning = k == 4;
        h->id = k == 4 ? "warning-level" : "error-level";
        return true;
    }
    if (k) {
        h->warning = k == 2;
        h->id = k == 2 ? "warning-word" : "error-word";
        h->ml_max = CLS_CC_CONTEXT_MAX;
        /* rustc: `error[E0308]: ...` is followed by its excerpt */
        if (cls_prefix(t, tn, "error[") || cls_prefix(t, tn, "error:") ||
            cls_prefix(t, tn, "warning:") || cls_prefix(t, tn, "warning[")) {
            h->ml = CLS_ML_CC;
        } else if (cls_box_side(s, n) == 4 && cls_hcl_head(s + 4, n - 4)) {
            /* terraform's diagnostic in its box: the box is its */
            h->ml = CLS_ML_BOX;
            h->ml_max = CLS_HCL_MAX;
        } else if (ind == 0) {
            /* `--- FAIL: TestX` then `    x_test.go:8: got 3`; `npm ERR!`
             * blocks; a log line and its indented detail */
            h->ml = CLS_ML_INDENTED;
        }
        return true;
    }
    if (colours & SQ_COLOUR_RED)
        for (size_t w = 0; cls_red_words[w]; w++)
            if (cls_window_has_ci(s, n, cls_red_words[w])) {
                h->id = "red-keyword";
                return true;
            }
    if (colours & SQ_COLOUR_YELLOW)
        for (size_t w = 0; cls_yellow_words[w]; w++)
            if (cls_window_has_ci(s, n, cls_yellow_words[w])) {
                h->warning = true;
                h->id = "yellow-keyword";
                return true;
            }
    return false;
}

/* The universal rules, after a BuildKit step prefix when there is one.
 * A prefixed hazard captures nothing below it: its lines carry the
 * prefix too, so indentation says nothing; each is judged on its own. */
static bool cls_universal_hazard(const char *s, size_t n, unsigned colours,
                                 struct cls_hit *h)
{
    size_t pre = cls_step_prefix(s, n);
    if (!pre)
        return cls_universal_line(s, n, colours, h);
    if (!cls_universal_line(s + pre, n - pre, colours, h))
        return false;
    h->ml = CLS_ML_NONE;
    h->loc_off += pre;
    return true;
}

/*
 * The plain form of an HCL diagnostic (terraform -no-color):
 *
 *   Error: Reference to undeclared input variable
 *
 *     on main.tf line 7, in resource "terraform_data" "a":
 *      7:     x = var.undefined_var
 *
 *   An input variable with the name "undefined_var" has not been declared.
 *
 * taken by steps: the blank under the head, the `on` line and the source
 * lines indented under it, a blank, then the message up to the blank
 * after it (or the next diagnostic's head).  Without its `on` line after
 * the blank it is not one, and the capture ends there.  Lines indented
 * right under the head are a stack's frames (node's `Error: x` then
 * `    at f (a.js:1:2)`): from there the capture is CLS_ML_INDENTED.
 */
static int cls_ml_hcl(classify_t *c, const char *s, size_t n, bool blank,
                      size_t ind)
{
    switch (c->ml_step) {
    case 0: /* under the head */
        if (!blank && ind) {
            c->ml = CLS_ML_INDENTED;
            return 1;
        }
        c->ml_step = 1;
        return blank;
    case 1: /* after the blank: where it is */
        c->ml_step = 2;
        return cls_hcl_on(s, n);
    case 2: /* the source lines under it */
        if (blank) {
            c->ml_step = 3;
            return 1;
        }
        if (ind)
            return 1;
        c->ml_step = 4; /* a message with no blank before it */
        return !cls_hcl_head(s, n);
    case 3: /* after the source lines: the message */
        c->ml_step = 4;
        return !blank && !ind && !cls_hcl_head(s, n);
    default: /* the message, up to the blank after it */
        return !blank && !cls_hcl_head(s, n);
    }
}

/* ------------------------------------------------- mocha's failure list */

/* mocha's count of failed tests, `  2 failing`, after which it reports
 * each failure under a numbered head. */
static bool cls_mocha_failing(const char *s, size_t n)
{
    n = cls_trim_end(s, n);
    size_t i = cls_indent(s, n), d = i;
    while (d < n && cls_digit((unsigned char)s[d]))
        d++;
    return d > i && n - d == 8 && !memcmp(s + d, " failing", 8);
}

/* A failure's head in mocha's list, `  1) Cart` (the suite; the test's
 * title follows, deeper, then the error, its diff and its stack, some of
 * it at no indentation at all: an assertion's message lines after its
 * first). */
static bool cls_mocha_head(const char *s, size_t n)
{
    if (n < 5 || s[0] != ' ' || s[1] != ' ' || !cls_digit((unsigned char)s[2]))
        return false;
    size_t d = 2;
    while (d < n && cls_digit((unsigned char)s[d]))
        d++;
    return d + 2 < n && s[d] == ')' && s[d + 1] == ' ' &&
           !cls_space((unsigned char)s[d + 2]);
}

/* Continuation of a built-in capture: 1 belongs, 0 ends before the line;
 * *last: the line belongs and ends it.  A line that opens a failed test
 * of its own is never another hazard's (cls_failure_head). */
static bool cls_caret_line(const char *s, size_t n);

static int cls_ml_builtin(classify_t *c, const char *s, size_t n, bool *last)
{
    *last = false;
    bool blank = cls_blank(s, n);
    size_t ind = cls_indent(s, n);
    if (!blank && c->ml != CLS_ML_SANITIZER && cls_failure_head(s, n))
        return 0;
    switch (c->ml) {
    case CLS_ML_PYTRACE:
        if (c->ml_margin) {
            /* in a group's margin: the same column, `|` now (the header
             * has `+`), then the frames indented, the exception not */
            size_t m = c->ml_margin;
            if (cls_pymargin(s, n) != m || s[m - 2] != '|' ||
                cls_blank(s + m, n - m))
                return 0;
            *last = !cls_space((unsigned char)s[m]);
            return 1;
        }
        if (blank)
            return 0;
        if (ind == 0)
            *last = true;
        return 1;
    case CLS_ML_INDENTED:
        if (blank)
            return 0;
        return ind > 0 || cls_prefix(s, n, "Caused by: ") ||
               cls_prefix(s, n, "Suppressed: ");
    case CLS_ML_CC: {
        if (blank)
            return 0;
        size_t i = ind;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        while (i < n && cls_space((unsigned char)s[i]))
            i++;
        if (i < n && s[i] == '|')
            return 1;
        /* indented: a caret, rustc's `= note` and `-->`, and the lines
         * of compilers that draw no gutter: clang's and javac's source
         * excerpt, javac's `  symbol:   variable x` and `  location:` */
        if (ind)
            return 1;
        if (cls_has_ci(s, n < 512 ? n : 512, ": note: ") ||
            cls_prefix(s, n, "note: ") || cls_prefix(s, n, "help: "))
            return 1;
        return 0;
    }
    case CLS_ML_THROW:
        /* the source line (whatever it holds: code at column 0 too), then
         * the caret under it, which ends the capture */
        if (blank)
            return 0;
        if (c->ml_step++ == 0) {
            /* no excerpt printed: a diagnostic of its own stays one */
            struct cls_hit own;
            return !cls_universal_line(s, n, 0, &own);
        }
        *last = true;
        return cls_caret_line(s, n);
    case CLS_ML_UNTIL_BLANK:
        return !blank;
    case CLS_ML_ASSERT:
        return !blank && s[0] != '[';
    case CLS_ML_MOCHA:
        return !cls_mocha_head(s, n);
    case CLS_ML_TAP:
        /* the YAML block indented under it, its `#` diagnostics (bats'
         * `# (in test file x.bats, line 12)`, Test::More's `#   at t/x.t
         * line 12.`), but not the next subtest's `# Subtest:` nor a second
         * failed test's `#   Failed test` (prove prints them in a row) */
        if (blank || ind < c->ml_indent)
            return 0;
        if (ind > c->ml_indent)
            return 1;
        if (s[ind] != '#' || cls_prefix(s + ind, n - ind, "# Subtest:"))
            return 0;
        if (cls_tap_failed_diag(s + ind, n - ind)) {
            if (c->ml_tap_failed)
                return 0;
            c->ml_tap_failed = true;
        }
        return 1;
    case CLS_ML_DEEPER:
        return !blank && ind > c->ml_indent;
    case CLS_ML_DEEPER_GAPS:
        return blank || ind > c->ml_indent;
    case CLS_ML_BOX:
        if (cls_prefix(s, n, CLS_BOX_END)) {
            *last = true;
            return 1;
        }
        return cls_box_side(s, n) > 0;
    case CLS_ML_HCL:
        return cls_ml_hcl(c, s, n, blank, ind);
    case CLS_ML_VALGRIND: {
        size_t p = cls_pid_prefix(s, n);
        return p && !cls_blank(s + p, n - p);
    }
    case CLS_ML_SANITIZER:
        *last = cls_prefix(s, n, CLS_SUMMARY_PREFIX);
        return 1;
    default:
        return 0;
    }
}

/* Progress: "42%", "[#####   ]", "12/40". */
static bool cls_progressish(const char *s, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (s[i] == '%' && s[i - 1] >= '0' && s[i - 1] <= '9')
            return true;
        if (s[i] == '/' && s[i - 1] >= '0' && s[i - 1] <= '9' && i + 1 < n &&
            s[i + 1] >= '0' && s[i + 1] <= '9')
            return true;
        if (s[i - 1] == '[' && (s[i] == '#' || s[i] == '=' || s[i] == ' '))
            return true;
    }
    return false;
}

static const struct cls_word cls_summary_start[] = {
    CLS_W("added"), CLS_W("removed"), CLS_W("changed"), CLS_W("updated"),
    CLS_W("installed"), CLS_W("uninstalled"), CLS_W("upgraded"), CLS_W("ran"),
    CLS_W("built"), CLS_W("compiled"), CLS_W("finished"), CLS_W("done"),
    CLS_W("completed"), CLS_W("total"), CLS_W("totals"), CLS_W("summary"),
    CLS_W("success"), CLS_W("successfully"), CLS_W("passed"), CLS_W("failed"),
    CLS_W("tests"), CLS_W("test result"), CLS_W("collected"), CLS_W("fetched"),
    CLS_W("downloaded"), CLS_W("created"), CLS_W("deleted"), CLS_W("wrote"),
    CLS_W("generated"), CLS_W("audited"), CLS_W("up to date"), CLS_W("ok"),
    {NULL, 0, false, false},
};
static const struct cls_word cls_count_words[] = {
    CLS_W("passed"), CLS_W("failed"), CLS_W("skipped"), CLS_W("error"),
    CLS_W("errors"), CLS_W("warning"), CLS_W("warnings"), CLS_W("test"),
    CLS_W("tests"), CLS_W("package"), CLS_W("packages"), CLS_W("file"),
    CLS_W("files"), CLS_W("upgraded"), CLS_W("installed"), CLS_W("removed"),
    CLS_W("added"), CLS_W("changed"), CLS_W("ok"), CLS_W("succeeded"),
    CLS_W("deselected"), CLS_W("xfailed"), CLS_W("xpassed"),
    CLS_W("insertions"), CLS_W("insertion"), CLS_W("deletions"),
    CLS_W("deletion"), CLS_W("modules"), CLS_W("crates"), CLS_W("newly"),
    CLS_W("vulnerabilities"), CLS_W("failure"), CLS_W("failures"),
    CLS_W("example"), CLS_W("examples"), {NULL, 0, false, false},
};

static bool cls_summary(const char *s, size_t n)
{
    if (n > CLS_OUTCOME_LEN_MAX)
        return false;
    bool digit = false;
    for (size_t i = 0; i < n && !digit; i++)
        digit = s[i] >= '0' && s[i] <= '9';
    if (!digit)
        return false;
    size_t i = cls_indent(s, n);
    while (i < n && !cls_alnum((unsigned char)s[i]))
        i++;
    unsigned char first = i < n ? cls_lower((unsigned char)s[i]) : 0;
    for (const struct cls_word *w = cls_summary_start; w->w; w++) {
        size_t l = w->len;
        /* the word alone: `tests/test_a.py` does not start with "tests" */
        if ((unsigned char)w->w[0] != first || n - i < l ||
            (i + l < n && s[i + l] != ' ' && s[i + l] != ':' && s[i + l] != ','))
            continue;
        size_t m = 1;
        while (m < l && cls_lower((unsigned char)s[i + m]) == (unsigned char)w->w[m])
            m++;
        if (m == l)
            return true;
    }
    /* a count and a counted word: "3 passed", "135 newly installed" */
    for (size_t j = 0; j < n; j++) {
        if (!(s[j] >= '0' && s[j] <= '9') || (j && cls_wordish((unsigned char)s[j - 1]) &&
                                              s[j - 1] != '-'))
            continue;
        size_t e = j;
        while (e < n && ((s[e] >= '0' && s[e] <= '9') || s[e] == ',' || s[e] == '.'))
            e++;
        if (e >= n || s[e] != ' ')
            continue;
        e++;
        for (const struct cls_word *w = cls_count_words; w->w; w++) {
            size_t l = w->len;
            if (n - e >= l && s[e] == w->w[0] && !memcmp(s + e, w->w, l) &&
                (e + l == n || !cls_alnum((unsigned char)s[e + l])))
                return true;
        }
        j = e - 1;
    }
    return false;
}

/* `src/util.h: In function 'f':`, `x.cc: In member function ...:`, `x.c:
 * At top level:`: gcc's line naming the function (or none) of the
 * diagnostic below it.  The file is the text before the first colon. */
static bool cls_cc_in_function(const char *s, size_t n)
{
    static const char *const what[] = {
        "In function ", "In member function ", "In static member function ",
        "In constructor ", "In destructor ", "In instantiation of ",
        "In lambda function", "At top level:", "At global scope:",
    };
    if (n < 2 || s[n - 1] != ':' || cls_space((unsigned char)s[0]) ||
        s[0] == ':')
        return false;
    const char *c = memchr(s, ':', n);
    if (!c || (size_t)(c - s) + 2 >= n || c[1] != ' ')
        return false;
    const char *t = c + 2;
    size_t m = n - (size_t)(t - s);
    for (size_t i = 0; i < sizeof what / sizeof what[0]; i++) {
        size_t l = strlen(what[i]);
        /* "At top level:" is the whole rest; the others go on to a name */
        if (m >= l && !memcmp(t, what[i], l) &&
            (what[i][l - 1] != ':' || m == l))
            return true;
    }
    return false;
}

/* gcc's and clang's lines that lead into the diagnostic below them: the
 * include chain (`In file included from src/vec.h:3,` and gcc's
 * `                 from src/main.c:1:` under it) and the function
 * (cls_cc_in_function).  The same lines as the gcc grammar's `lead`
 * rules, for a build no grammar is detected for (ninja, a script). */
static bool cls_cc_lead(const char *s, size_t n)
{
    static const char inc[] = "In file included from ";
    static const char from[] = "                 from ";
    size_t i = sizeof inc - 1; /* both are 22 bytes */
    if (!cls_prefix(s, n, inc) && !cls_prefix(s, n, from))
        return cls_cc_in_function(s, n);
    /* PATH:LINE then ':' (the last) or ',' (more follow) */
    if (n < i + 4 || (s[n - 1] != ':' && s[n - 1] != ','))
        return false;
    size_t d = n - 1;
    while (d > i && cls_digit((unsigned char)s[d - 1]))
        d--;
    if (d == n - 1 || d < i + 2 || s[d - 1] != ':')
        return false;
    for (size_t k = i; k < d - 1; k++)
        if (cls_space((unsigned char)s[k]))
            return false;
    return true;
}

bool classify_prompt(const char *s, size_t n)
{
    size_t e = n;
    while (e > 0 && cls_space((unsigned char)s[e - 1]))
        e--;
    if (!e)
        return false;
    char c = s[e - 1];
    if (c == ':' || c == '?' || c == '>' || c == '$' || c == '#' || c == ']' ||
        c == ')')
        return true;
    return cls_has_ci(s, n, "password") || cls_has_ci(s, n, "passphrase") ||
           cls_has_ci(s, n, "[y/n]") || cls_has_ci(s, n, "(yes/no");
}

/* Only rule characters: ====, ----, ****, ~~~~, box drawing. */
static bool cls_decor(const char *s, size_t n)
{
    size_t marks = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (cls_space(c))
            continue;
        if (strchr("=-*#_~+|.:<>", c) && c) {
            marks++;
            continue;
        }
        /* U+2500..U+259F: box drawing and block elements */
        if (c == 0xE2 && i + 2 < n && ((unsigned char)s[i + 1] == 0x94 ||
                                       (unsigned char)s[i + 1] == 0x95 ||
                                       (unsigned char)s[i + 1] == 0x96)) {
            marks++;
            i += 2;
            continue;
        }
        return false;
    }
    return marks >= 3;
}

static bool cls_hint(const char *s, size_t n)
{
    size_t i = cls_indent(s, n), e = n;
    while (e > i && cls_space((unsigned char)s[e - 1]))
        e--;
    return i > 0 && e - i >= 2 && s[i] == '(' && s[e - 1] == ')';
}

/* -------------------------------------------------------------- driver */

static void cls_set(cls_result_t *r, cls_kind_t k, const char *source,
                    const char *rule)
{
    memset(r, 0, sizeof *r);
    r->kind = k;
    r->source = source;
    r->rule = rule;
}

static void cls_noise(cls_result_t *r, cls_noise_t why, const char *source)
{
    cls_set(r, CLS_NOISE, source, classify_noise_name(why));
    r->noise = why;
}

static void cls_set_hit(cls_result_t *r, const struct cls_hit *h)
{
    cls_set(r, CLS_HAZARD, "universal", h->id);
    r->warning = h->warning;
    r->has_loc = h->has_loc;
    r->loc_off = h->loc_off;
    r->loc_len = h->loc_len;
}

bool classify_hazard_line(const char *s, size_t n, unsigned colours)
{
    struct cls_hit h;
    return n && !cls_blank(s, n) && cls_universal_hazard(s, n, colours, &h);
}

/* A line the stripper judged binary only for its ill-formed UTF-8 keeps
 * its repaired text (vt.h): a compiler message with a few Latin-1 bytes
 * is mostly ASCII and still says what broke.  It is shown when the
 * universal rules, colour aside, find a hazard in it on their own (it
 * starts no capture: what follows is judged afresh); otherwise it stays
 * in its binary run. */
static bool cls_binary_hazard(const char *s, size_t n, cls_result_t *r)
{
    struct cls_hit h;
    if (n == 0 || cls_blank(s, n) || !cls_universal_hazard(s, n, 0, &h))
        return false;
    cls_set_hit(r, &h);
    return true;
}

/* A grammar's verdict on a line into r, and the capture a hazard rule
 * with `multiline` starts.  g: the detected grammar that matched. */
static void cls_set_grammar(classify_t *c, const grammar_match_t *m,
                            const grammar_t *g, const char *s, size_t n,
                            cls_result_t *r)
{
    static const cls_kind_t kinds[GRAMMAR_TIERS] = {CLS_HAZARD, CLS_OUTCOME,
                                                    CLS_NOISE};
    cls_set(r, kinds[m->tier], grammar_name(m->grammar), m->id);
    r->grammar = g;
    if (m->tier == GRAMMAR_NOISE) {
        r->noise = m->action == GRAMMAR_DEDUP ? CLS_NOISE_DEDUP
                                              : CLS_NOISE_TOOL;
        r->lead = m->action == GRAMMAR_LEAD;
        if (m->action == GRAMMAR_DEDUP && m->has_item) {
            r->has_item = true;
            r->item_off = m->item_off;
            r->item_len = m->item_len;
        }
        return;
    }
    if (m->tier != GRAMMAR_HAZARD)
        return;
    r->warning = m->severity == GRAMMAR_WARNING;
    if (m->has_file) {
        r->has_loc = true;
        r->loc_off = m->file_off;
        /* extend over :line[:col] when they follow the file */
        size_t e = m->file_off + m->file_len;
        for (int part = 0; part < 2 && e + 1 < n && s[e] == ':' &&
                           s[e + 1] >= '0' && s[e + 1] <= '9'; part++) {
            e++;
            while (e < n && s[e] >= '0' && s[e] <= '9')
                e++;
        }
        r->loc_len = e - m->file_off;
    }
    unsigned ml = grammar_rule_max_lines(m->rule);
    if (ml) {
        c->ml = CLS_ML_GRAMMAR;
        c->ml_rule = m->rule;
        c->ml_left = ml;
        c->ml_margin = cls_pymargin(s, n);
        c->ml_warning = r->warning;
        c->ml_source = r->source;
        c->ml_id = r->rule;
        c->ml_excerpt = grammar_rule_has_excerpt(m->rule);
        c->ml_expect = c->ml_excerpt ? CLS_EX_EXCERPT : CLS_EX_NONE;
    }
}

/* A caret line: spaces, `~` and at least one `^` (clang's `^~~~~~~`,
 * `    ~~~     ^~~~~~~~~~~~~~`); a gutter's `  |  ^` is not one. */
static bool cls_caret_line(const char *s, size_t n)
{
    bool caret = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '^')
            caret = true;
        else if (s[i] != '~' && s[i] != ' ' && s[i] != '\t')
            return false;
    }
    return caret;
}

/* Whether a line has a verdict of its own, which a capture taking lines
 * by position must leave it: a grammar's rule (a hazard, an outcome such
 * as `1 error generated.`, make's noise), a universal hazard (`make: ***
 * ...`), an include chain's line, a summary. */
static bool cls_claimed(classify_t *c, const char *s, size_t n,
                        unsigned colours)
{
    grammar_match_t m;
    size_t which;
    struct cls_hit h;
    if (c->ng && grammar_match_any(c->gs, c->ng, c->ctx, s, n, colours, &m,
                                   &which) == 1)
        return true;
    return cls_universal_hazard(s, n, colours, &h) || cls_cc_lead(s, n) ||
           cls_summary(s, n);
}

/* The universal tier's `excerpt` (the gcc grammar's, as a scan): a line of
 * a compiler diagnostic's capture after which a source excerpt comes: a
 * note (`x.h:3:1: note: ...`), or a message wrapped 6 columns in (clang
 * on a terminal), not a gutter's `      |`. */
static bool cls_cc_excerpt_after(const char *s, size_t n)
{
    size_t ind = cls_indent(s, n);
    if (ind == 6)
        return n > 6 && s[6] != '|';
    return ind == 0 && cls_has_ci(s, n < 512 ? n : 512, ": note: ");
}

/* A grammar capture whose tool draws its source excerpt with no gutter
 * and no indentation (clang: `size_tt f(void);` under the error, `^~~~~~~`
 * under it, the fix-it `size_t` under that, then `x.h:3:1: note: ...` with
 * an excerpt of its own).  No pattern tells such a line from any other, so
 * it is known by its place and by the line after it: the line after the
 * hazard line or after a note (a line matching `excerpt`) is held
 * (*pending: it keeps its own verdict meanwhile), and is the excerpt when
 * the next line is a caret line (*confirms); anything else there ends the
 * capture before the held line.  The line after a caret line is its
 * fix-it when it starts no further left than the carets (clang draws a
 * fix-it under what it replaces).  A line is held or taken as a fix-it
 * only when nothing else claims it (cls_claimed): the next diagnostic, `N
 * errors generated.`, make's lines stay what they are.  in: whether
 * `continue` took the line.  1 belongs, 0 ends the capture before it. */
static int cls_ml_excerpt(classify_t *c, const sq_line_t *line, int in,
                          bool *pending, bool *confirms)
{
    const char *s = line->text;
    size_t n = line->len;
    enum cls_expect ex = c->ml_expect;
    c->ml_expect = CLS_EX_NONE;
    if (cls_caret_line(s, n)) {
        c->ml_expect = CLS_EX_FIXIT;
        c->ml_caret_indent = cls_indent(s, n);
        *confirms = ex == CLS_EX_CARET;
        return 1;
    }
    if (ex == CLS_EX_CARET) /* the held line was no excerpt */
        return 0;
    if (in) {
        if (c->ml == CLS_ML_GRAMMAR
                ? grammar_rule_excerpt_after(c->ml_rule, c->ctx, s, n) == 1
                : cls_cc_excerpt_after(s, n))
            c->ml_expect = CLS_EX_EXCERPT;
        return 1;
    }
    if (ex == CLS_EX_NONE || line->kind != SQ_LINE_COMPLETE ||
        cls_blank(s, n) || cls_claimed(c, s, n, line->colours))
        return 0;
    if (ex == CLS_EX_FIXIT)
        return cls_indent(s, n) >= c->ml_caret_indent;
    c->ml_expect = CLS_EX_CARET;
    *pending = true;
    return 0;
}

/* A universal hazard: the result, and the capture it starts. */
static void cls_take_hit(classify_t *c, const sq_line_t *line,
                         const struct cls_hit *h, cls_result_t *r)
{
    cls_set_hit(r, h);
    if (h->ml != CLS_ML_NONE && line->kind != SQ_LINE_PARTIAL) {
        c->ml = h->ml;
        c->ml_left = h->ml_max;
        c->ml_indent = h->ml_indent;
        c->ml_margin = cls_pymargin(line->text, line->len);
        c->ml_tap_failed = !strcmp(h->id, "tap-failed-diag");
        c->ml_warning = h->warning;
        c->ml_source = "universal";
        c->ml_id = h->id;
        c->ml_excerpt = h->excerpt;
        c->ml_expect = h->excerpt ? CLS_EX_EXCERPT : CLS_EX_NONE;
        c->ml_step = 0;
    }
}

static int cls_line(classify_t *c, const sq_line_t *line, cls_result_t *r,
                    bool *pending);

int classify_line(classify_t *c, const sq_line_t *line, cls_result_t *r)
{
    bool pending = false;
    int rc = cls_line(c, line, r, &pending);
    r->pending = pending;
    return rc;
}

/* classify_line; *pending: the line is held as a capture's excerpt (kept
 * open past it), its verdict its own meanwhile. */
static int cls_line(classify_t *c, const sq_line_t *line, cls_result_t *r,
                    bool *pending)
{
    const char *s = line->text;
    size_t n = line->len;
    uint64_t prev = c->prev_hash;
    c->prev_hash = 0;

    if (line->kind == SQ_LINE_BINARY) {
        c->ml = CLS_ML_NONE;
        if (!cls_binary_hazard(s, n, r))
            cls_set(r, CLS_BINARY, "structure", "binary");
        return 0;
    }
    /* 0. the capture of the hazard above */
    if (c->ml != CLS_ML_NONE && line->kind != SQ_LINE_PARTIAL) {
        bool last = false;
        int in = c->ml == CLS_ML_GRAMMAR
                     ? grammar_rule_continues(c->ml_rule, c->ctx, s, n, &last)
                     : cls_ml_builtin(c, s, n, &last);
        bool confirms = false;
        if ((c->ml == CLS_ML_GRAMMAR || c->ml == CLS_ML_CC) && c->ml_excerpt)
            in = cls_ml_excerpt(c, line, in, pending, &confirms);
        if (in) {
            cls_set(r, CLS_HAZARD, c->ml_source, c->ml_id);
            r->cont = true;
            r->confirms = confirms;
            /* a line drawn in its hazard's margin is weighed past it,
             * and a box's line past the box's side */
            if (c->ml_margin && cls_pymargin(s, n) == c->ml_margin)
                r->margin = c->ml_margin;
            else if (c->ml == CLS_ML_BOX)
                r->margin = cls_box_side(s, n);
            r->warning = c->ml_warning;
            if (last || --c->ml_left == 0)
                c->ml = CLS_ML_NONE;
            return 0;
        }
        /* a held line is judged afresh below; the capture waits for the
         * line after it (its room too: the held line takes one) */
        if (!*pending || --c->ml_left == 0) {
            c->ml = CLS_ML_NONE;
            *pending = false;
        }
    }
    bool blank = cls_blank(s, n);
    struct cls_hit hit;
    /* 0b. mocha's failure reports, once it has counted them: each owns
     * its lines to the next (a grammar, npm's under `npm test`, would
     * take them one by one) */
    if (!blank && line->kind == SQ_LINE_COMPLETE) {
        if (c->mocha && cls_mocha_head(s, n)) {
            memset(&hit, 0, sizeof hit);
            hit.ml = CLS_ML_MOCHA;
            hit.ml_max = CLS_TRACE_MAX;
            hit.id = "mocha-failure";
            cls_take_hit(c, line, &hit, r);
            return 0;
        }
        c->mocha = c->mocha || cls_mocha_failing(s, n);
    }
    /* 1. the tool's grammars */
    grammar_match_t m;
    size_t which;
    if (c->ng &&
        grammar_match_any(c->gs, c->ng, c->ctx, s, n, line->colours, &m,
                          &which) == 1) {
        /* A noise verdict yields to a hazard the universal rules see, when
         * it would take out an error (a rule for `ok N` must not hide `not
         * ok N`) or, with several grammars, any hazard: a noise rule is
         * written for its own tool's lines, and which tool printed this
         * one cannot be told.  A single grammar may count a warning as
         * noise (npm's deprecation notices in `npm ci` alone). */
        if (m.tier == GRAMMAR_NOISE && !blank &&
            cls_universal_hazard(s, n, line->colours, &hit) &&
            (!hit.warning || c->ng > 1)) {
            cls_take_hit(c, line, &hit, r);
            return 0;
        }
        cls_set_grammar(c, &m, c->gs[which], s, n, r);
        /* An outcome stays one, marked a failure when the universal rules
         * call it an error, which no template folds (`FAIL\tpkg/c` is not
         * a copy of `FAIL\tpkg/a`); a structured grammar's outcomes fold
         * not at all. */
        if (m.tier == GRAMMAR_OUTCOME && !blank &&
            strcmp(grammar_category(c->gs[which]), "structured") != 0)
            r->failure = cls_universal_hazard(s, n, line->colours, &hit) &&
                         !hit.warning;
        return 0;
    }
    /* 2. universal rules */
    if (!blank && cls_universal_hazard(s, n, line->colours, &hit)) {
        cls_take_hit(c, line, &hit, r);
        return 0;
    }
    if (line->kind == SQ_LINE_COMPLETE && cls_cc_lead(s, n)) {
        /* unknown, unless the squasher finds a hazard after it */
        cls_set(r, CLS_UNKNOWN, "universal", "cc-lead");
        r->lead = true;
        return 0;
    }
    if (line->kind == SQ_LINE_PARTIAL && !blank && classify_prompt(s, n)) {
        cls_set(r, CLS_PROMPT, "universal", "prompt");
        return 0;
    }
    if (line->kind == SQ_LINE_OVERWRITE && line->frames) {
        if (blank) {
            cls_noise(r, CLS_NOISE_PROGRESS, "structure");
            return 0;
        }
        if (cls_progressish(s, n)) {
            cls_set(r, CLS_OUTCOME, "universal", "progress-final");
            return 0;
        }
    }
    if (!blank && cls_summary(s, n)) {
        cls_set(r, CLS_OUTCOME, "universal", "summary");
        return 0;
    }
    /* 3. structure */
    if (blank) {
        cls_noise(r, CLS_NOISE_BLANK, "structure");
        return 0;
    }
    if (cls_prefix(s, n, "diff --git ") || cls_prefix(s, n, "@@ -"))
        c->in_diff = true;
    if (cls_decor(s, n)) {
        cls_noise(r, CLS_NOISE_DECOR, "structure");
        return 0;
    }
    if (cls_hint(s, n)) {
        cls_noise(r, CLS_NOISE_HINT, "structure");
        return 0;
    }
    bool entropy = false;
    uint64_t h = c->in_diff ? 0 : dedup_template_ex(s, n, NULL, &entropy);
    if (!c->in_diff && !entropy) {
        c->prev_hash = h;
        if (h == prev) {
            cls_noise(r, CLS_NOISE_REPEAT, "structure");
            return 0;
        }
    }
    cls_set(r, CLS_UNKNOWN, "structure", "unknown");
    return 0;
}
