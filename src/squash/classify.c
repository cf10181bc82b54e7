/*
 * classify.c — the three-tier line classifier (see classify.h).
 *
 * The universal rules are written as scans rather than regexes because they
 * run on every line of every command and must keep the squasher above
 * 100 MB/s; each rule looks at a bounded prefix, and the keyword scans
 * check word boundaries so `liberror-perl`, `test_error_path` or
 * `-Werror` are not errors.  "Zero" counts (`0 errors`, `errors=0`,
 * `no warnings`) are not hazards either: a clean build says them.
 *
 * Multiline capture keeps state between lines: after a hazard that owns the
 * lines below it (a traceback, a compiler's caret lines), the next line is
 * first offered to the capture; a line the capture refuses ends it and is
 * classified afresh.
 */
#include "squash/classify.h"

#include <errno.h>
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
};

struct classify {
    const grammar_t *g;
    grammar_ctx_t *ctx;
    enum cls_ml ml;
    const grammar_rule_t *ml_rule;
    unsigned ml_left;
    bool ml_warning;
    const char *ml_source, *ml_id;
    uint64_t prev_hash;
    bool in_diff;
};

static const char *const cls_noise_names[CLS_NOISE_REASONS] = {
    "tool", "dedup", "progress", "blank", "decoration", "hint", "repeat",
};

const char *classify_noise_name(cls_noise_t n)
{
    return n < CLS_NOISE_REASONS ? cls_noise_names[n] : "other";
}

int classify_new(const grammar_t *g, classify_t **out)
{
    classify_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->g = g;
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
    const char *id;
    bool has_loc;
    size_t loc_off, loc_len;
};

/* `file:line[:col]: kind` at the start of the line (compilers, linters,
 * Python warnings).  Severity from the word after the location. */
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
    bool err = false, warn = false;
    if (kl >= 5 && !strncmp(k + kl - 5, "error", 5))
        err = true;
    else if (kl >= 5 && !strncmp(k + kl - 5, "Error", 5))
        err = true;
    else if (kl >= 7 && (!strncmp(k + kl - 7, "warning", 7) ||
                         !strncmp(k + kl - 7, "Warning", 7)))
        warn = true;
    else if (kl == 5 && !strncmp(k, "fatal", 5))
        err = true;
    else if (kl == 4 && !strncmp(k, "note", 4))
        return false;
    else if (col)
        warn = true; /* a linter's `file:line:col: E302 ...` */
    if (!err && !warn)
        return false;
    h->warning = warn;
    h->ml = CLS_ML_CC;
    h->ml_max = CLS_CC_CONTEXT_MAX;
    h->id = "location";
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

/* `SomeError: message`, `java.io.IOException`, `Uncaught TypeError: x`. */
static bool cls_exception(const char *s, size_t n, struct cls_hit *h)
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
    if (i < n && s[i] != ':')
        return false;
    size_t l = i - st;
    const char *e = s + i;
    if (l >= 5 && !strncmp(e - 5, "Error", 5))
        h->warning = false;
    else if (l >= 9 && !strncmp(e - 9, "Exception", 9))
        h->warning = false;
    else if (l >= 7 && !strncmp(e - 7, "Warning", 7) && i < n)
        h->warning = true;
    else
        return false;
    h->ml = CLS_ML_INDENTED;
    h->ml_max = CLS_TRACE_MAX;
    h->id = "exception";
    return true;
}

struct cls_word {
    const char *w;
    unsigned char len;
};
#define CLS_W(s) {s, sizeof(s) - 1}

/* Words that make a hazard anywhere in a line (at a word boundary). */
static const struct cls_word cls_err_anywhere[] = {
    CLS_W("ERROR"), CLS_W("FATAL"), CLS_W("FAIL"), CLS_W("FAILED"),
    CLS_W("FAILURE"), CLS_W("CRITICAL"), CLS_W("PANIC"), CLS_W("ERR!"),
    CLS_W("error:"), CLS_W("Error:"), CLS_W("fatal:"), CLS_W("Fatal:"),
    CLS_W("error["), CLS_W("FATAL:"), CLS_W("Segmentation fault"),
    CLS_W("core dumped"), CLS_W("Traceback"), CLS_W("command not found"),
    CLS_W("No such file or directory"), CLS_W("Permission denied"),
    CLS_W("Operation not permitted"), CLS_W("Cannot find module"),
    {NULL, 0},
};
static const struct cls_word cls_warn_anywhere[] = {
    CLS_W("WARN"), CLS_W("WARNING"), CLS_W("warning:"), CLS_W("Warning:"),
    CLS_W("WARN:"), {NULL, 0},
};
/* Words that make a hazard when they open a line (or follow a tool name:
 * `npm error`, `cargo warning`). */
static const struct cls_word cls_err_start[] = {
    CLS_W("error"), CLS_W("Error"), CLS_W("fatal"), CLS_W("Fatal"),
    CLS_W("E:"), CLS_W("panic:"), CLS_W("FAIL"), CLS_W("ERROR"),
    CLS_W("ERR!"), {NULL, 0},
};
static const struct cls_word cls_warn_start[] = {
    CLS_W("warning"), CLS_W("Warning"), CLS_W("warn"), CLS_W("WARN"),
    CLS_W("W:"), CLS_W("WARNING"), {NULL, 0},
};

/* Does word w open s[i..n) as a whole word? */
static bool cls_word_at(const char *s, size_t n, size_t i,
                        const struct cls_word *w)
{
    size_t l = w->len;
    if (n - i < l || s[i] != w->w[0] || memcmp(s + i, w->w, l))
        return false;
    char last = w->w[l - 1];
    if (last == ':' || last == '!' || last == '[')
        return true;
    return cls_right_ok(s, n, i + l);
}

static int cls_start_words(const char *s, size_t n, size_t i)
{
    for (const struct cls_word *w = cls_err_start; w->w; w++)
        if (cls_word_at(s, n, i, w) && !cls_zero(s, n, i, i + w->len))
            return 1;
    for (const struct cls_word *w = cls_warn_start; w->w; w++)
        if (cls_word_at(s, n, i, w) && !cls_zero(s, n, i, i + w->len))
            return 2;
    return 0;
}

/* An anywhere-word at i (a left boundary): 1 error, 2 warning, 0 none. */
static int cls_any_word(const char *s, size_t n, size_t i)
{
    for (const struct cls_word *w = cls_err_anywhere; w->w; w++)
        if (cls_word_at(s, n, i, w) && !cls_zero(s, n, i, i + w->len))
            return 1;
    /* make: `*** [all] Error 2` */
    if (n - i >= 7 && !memcmp(s + i, "Error ", 6) && s[i + 6] >= '1' &&
        s[i + 6] <= '9')
        return 1;
    for (const struct cls_word *w = cls_warn_anywhere; w->w; w++)
        if (cls_word_at(s, n, i, w) && !cls_zero(s, n, i, i + w->len))
            return 2;
    return 0;
}

/* Error / warning words: 1 error, 2 warning, 0 none.  One pass: only the
 * first letters of the words are looked at closely. */
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
    bool warn = false;
    for (size_t p = 0; p < n; p++) {
        switch (s[p]) {
        case 'E': case 'F': case 'C': case 'P': case 'S': case 'T':
        case 'W': case 'c': case 'e': case 'f': case 'w': case 'N':
        case 'O':
            break;
        default:
            continue;
        }
        if (!cls_left_ok(s, p))
            continue;
        int r = cls_any_word(s, n, p);
        if (r == 1)
            return 1;
        warn |= r == 2;
    }
    return warn ? 2 : 0;
}

static const char *const cls_red_words[] = {
    "error", "fail", "fatal", "panic", "exception", "denied", "refused",
    "invalid", "not found", "missing", "cannot", "could not", "unable",
    "abort", NULL,
};
static const char *const cls_yellow_words[] = {
    "warn", "deprecat", "caution", NULL,
};

static bool cls_universal_hazard(const char *s, size_t n, unsigned colours,
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
    /* an indented `file.ext:N: message`: a test's failure message (go test
     * prints them above their `--- FAIL`) */
    if (ind > 0 && ind <= 8 && cls_indented_location(t, tn)) {
        h->id = "indented-location";
        h->has_loc = true;
        h->loc_off = ind;
        const char *c1 = memchr(t, ':', tn);
        const char *c2 = memchr(c1 + 1, ':', tn - (size_t)(c1 + 1 - t));
        h->loc_len = (size_t)(c2 - t);
        return true;
    }
    if (ind == 0 && cls_exception(s, n, h))
        return true;
    size_t scan = n < CLS_SCAN_MAX ? n : CLS_SCAN_MAX;
    int k = cls_keywords(s, scan);
    if (k) {
        h->warning = k == 2;
        h->id = k == 2 ? "warning-word" : "error-word";
        /* rustc: `error[E0308]: ...` is followed by its excerpt */
        if (cls_prefix(t, tn, "error[") || cls_prefix(t, tn, "error:") ||
            cls_prefix(t, tn, "warning:") || cls_prefix(t, tn, "warning[")) {
            h->ml = CLS_ML_CC;
        } else if (ind == 0) {
            /* `--- FAIL: TestX` then `    x_test.go:8: got 3`; `npm ERR!`
             * blocks; a log line and its indented detail */
            h->ml = CLS_ML_INDENTED;
        }
        h->ml_max = CLS_CC_CONTEXT_MAX;
        return true;
    }
    if (colours & SQ_COLOUR_RED)
        for (size_t w = 0; cls_red_words[w]; w++)
            if (cls_has_ci(s, scan, cls_red_words[w])) {
                h->id = "red-keyword";
                return true;
            }
    if (colours & SQ_COLOUR_YELLOW)
        for (size_t w = 0; cls_yellow_words[w]; w++)
            if (cls_has_ci(s, scan, cls_yellow_words[w])) {
                h->warning = true;
                h->id = "yellow-keyword";
                return true;
            }
    return false;
}

/* Continuation of a built-in capture: 1 belongs, 0 ends before the line;
 * *last: the line belongs and ends it. */
static int cls_ml_builtin(enum cls_ml ml, const char *s, size_t n, bool *last)
{
    *last = false;
    bool blank = cls_blank(s, n);
    size_t ind = cls_indent(s, n);
    switch (ml) {
    case CLS_ML_PYTRACE:
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
        const char *t = s + ind;
        size_t tn = n - ind;
        if (ind && (t[0] == '^' || t[0] == '~' || cls_prefix(t, tn, "= ") ||
                    cls_prefix(t, tn, "--> ")))
            return 1;
        if (cls_has_ci(s, n < 512 ? n : 512, ": note: ") ||
            cls_prefix(s, n, "note: ") || cls_prefix(s, n, "help: "))
            return 1;
        return 0;
    }
    case CLS_ML_UNTIL_BLANK:
        return !blank;
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
    {NULL, 0},
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
    CLS_W("vulnerabilities"), {NULL, 0},
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

int classify_line(classify_t *c, const sq_line_t *line, cls_result_t *r)
{
    const char *s = line->text;
    size_t n = line->len;
    uint64_t prev = c->prev_hash;
    c->prev_hash = 0;

    if (line->kind == SQ_LINE_BINARY) {
        cls_set(r, CLS_BINARY, "structure", "binary");
        c->ml = CLS_ML_NONE;
        return 0;
    }
    /* 0. the capture of the hazard above */
    if (c->ml != CLS_ML_NONE && line->kind != SQ_LINE_PARTIAL) {
        bool last = false;
        int in = c->ml == CLS_ML_GRAMMAR
                     ? grammar_rule_continues(c->ml_rule, c->ctx, s, n, &last)
                     : cls_ml_builtin(c->ml, s, n, &last);
        if (in) {
            cls_set(r, CLS_HAZARD, c->ml_source, c->ml_id);
            r->cont = true;
            r->warning = c->ml_warning;
            if (last || --c->ml_left == 0)
                c->ml = CLS_ML_NONE;
            return 0;
        }
        c->ml = CLS_ML_NONE;
    }
    bool blank = cls_blank(s, n);
    /* 1. the tool's grammar */
    if (c->g) {
        grammar_match_t m;
        if (grammar_match(c->g, c->ctx, s, n, line->colours, &m) == 1) {
            static const cls_kind_t kinds[GRAMMAR_TIERS] = {
                CLS_HAZARD, CLS_OUTCOME, CLS_NOISE};
            cls_set(r, kinds[m.tier], grammar_name(m.grammar), m.id);
            if (m.tier == GRAMMAR_HAZARD) {
                r->warning = m.severity == GRAMMAR_WARNING;
                if (m.has_file) {
                    r->has_loc = true;
                    r->loc_off = m.file_off;
                    /* extend over :line[:col] when they follow the file */
                    size_t e = m.file_off + m.file_len;
                    for (int part = 0; part < 2 && e + 1 < n && s[e] == ':' &&
                                       s[e + 1] >= '0' && s[e + 1] <= '9'; part++) {
                        e++;
                        while (e < n && s[e] >= '0' && s[e] <= '9')
                            e++;
                    }
                    r->loc_len = e - m.file_off;
                }
                unsigned ml = grammar_rule_max_lines(m.rule);
                if (ml) {
                    c->ml = CLS_ML_GRAMMAR;
                    c->ml_rule = m.rule;
                    c->ml_left = ml;
                    c->ml_warning = r->warning;
                    c->ml_source = r->source;
                    c->ml_id = r->rule;
                }
            } else if (m.tier == GRAMMAR_NOISE) {
                r->noise = m.action == GRAMMAR_DEDUP ? CLS_NOISE_DEDUP
                                                     : CLS_NOISE_TOOL;
            }
            return 0;
        }
    }
    /* 2. universal rules */
    if (!blank) {
        struct cls_hit h;
        if (cls_universal_hazard(s, n, line->colours, &h)) {
            cls_set(r, CLS_HAZARD, "universal", h.id);
            r->warning = h.warning;
            r->has_loc = h.has_loc;
            r->loc_off = h.loc_off;
            r->loc_len = h.loc_len;
            if (h.ml != CLS_ML_NONE && line->kind != SQ_LINE_PARTIAL) {
                c->ml = h.ml;
                c->ml_left = h.ml_max;
                c->ml_warning = h.warning;
                c->ml_source = "universal";
                c->ml_id = h.id;
            }
            return 0;
        }
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
