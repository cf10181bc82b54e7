/*
 * classify.h — what each line of output is: hazard, outcome, noise,
 * prompt, or unknown.  First match wins, in three tiers:
 *
 *   1. the tool's grammar (hazard → outcome → noise, grammar.h), with its
 *      `multiline` capture of the lines that belong to a hazard; a
 *      compound command's several grammars tier by tier
 *      (grammar_match_any).  A noise verdict cannot hide a line the
 *      universal rules call an error (a rule for `ok N` does not swallow
 *      `not ok N`): that line is the universal hazard; with several
 *      grammars not a universal warning either (a noise rule is written
 *      for one tool's lines, and in `npm ci && make` it may be looking at
 *      the other tool's), while a single grammar's noise may quiet one;
 *      an outcome rule keeps its line an outcome, marked a `failure` when
 *      the universal rules call it an error;
 *   2. universal rules, built in (they run on every line of every command,
 *      so they are hand-written scans, not regexes):
 *        - stack traces: Python tracebacks, Go panics and goroutine dumps,
 *          Rust panics, Java `Exception in thread` and `Caused by`, Node and
 *          other `SomeError: message` lines with their indented frames;
 *        - compiler diagnostics `file:line[:col]: error|warning: ...` with
 *          their source excerpt and caret lines (gcc, clang, rustc), and
 *          gcc's and clang's lines that lead into one (the include chain,
 *          `In function`: unknown, marked `lead`);
 *        - what a process or tool says as it fails, in its own form: a
 *          death by signal as the shell reports it (`Killed`, `Aborted
 *          (core dumped)`), `terminate called ...`, dash's `sh: 1: x: not
 *          found`, make's `make: *** ...`, Ruby's `file:N:in ...
 *          (NameError)`, `curl: (6) ...`, mocha's `1 failing`;
 *        - what test runners, checkers and git print as a test or step
 *          fails: TAP's `not ok N` (not `# TODO` / `# SKIP`) owning its
 *          `#` diagnostics and YAML block, Test::More's `#   Failed
 *          test`, `Bail out!`; failure marks `✕ ✖ ✗ ✘ ×` opening a line
 *          with the test's name, owning the deeper lines; jest's `  ●`
 *          block; `Failed` opening a line, PHPUnit's `FAILURES!`,
 *          rspec's `Failure/Error:` and `rspec ./x_spec.rb:12 #`, ctest's
 *          `***Failed` and `1 - name (Failed)`; git's `CONFLICT (...):`,
 *          `Automatic merge failed`, `! [rejected]`; ShellCheck's `^--
 *          SC2086 (info):` and `In x.sh line 3:` with the source line
 *          under it; HCL diagnostics (terraform, OpenTofu): `Error:` or
 *          `Warning:` owning its `on main.tf line 7` block and message,
 *          in a `│` box up to its `╵`, or plain up to the blank after
 *          the message; valgrind's errors and
 *          nonzero counts (`==N== Invalid read`, `ERROR SUMMARY: 3
 *          errors`, not `0 errors`) owning their `==N==` stacks; the
 *          sanitizers' reports up to their `SUMMARY:`; `exit status 1`,
 *          `exit code 1`, `exited with code 1`;
 *        - glog's and klog's level letter (`E1124 07:51:39.309454 21704
 *          x.go:265] ...`: E and F errors, W a warning);
 *        - error / warning words at line start (`error:`, `E:`, `FAIL`)
 *          and anywhere (`ERROR`, `WARN`, `fatal:`, `Error 2`, the
 *          linker's `undefined reference to`, shells' `syntax error near
 *          unexpected token`, errno texts such as `Connection refused`),
 *          skipping "0 errors", identifiers and paths, in the first and
 *          last CLS_SCAN_MAX bytes of a line;
 *        - all of these after a BuildKit step prefix (`#8 0.345 `) too;
 *        - red / yellow SGR colour plus an error / warning keyword;
 *        - none of the words or colours in a test its runner marks passed
 *          (`✓ handles connection refused`, `ok 3 - returns ERROR`);
 *        - the final frame of a progress line (kept), and summary lines
 *          (`added 125 packages`, `Ran 241 tests`, `3 passed, 1 failed`);
 *        - prompts, on partial lines;
 *   A line the stripper judged binary only for its ill-formed UTF-8
 *   (vt.h) is a hazard when these rules, colour aside, find one in its
 *   repaired text; any other binary line stays binary.
 *   3. structure: blank lines, decorative rules (`=====`), indented
 *      parenthesised hints, near-duplicates of the line before (skipped in
 *      diffs and high-entropy output); anything else is unknown.
 */
#ifndef REIN_SQUASH_CLASSIFY_H
#define REIN_SQUASH_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "squash/grammar.h"
#include "squash/squash.h"

/* Context lines a universal compiler diagnostic captures (source excerpt,
 * carets, fix-its, notes). */
#define CLS_CC_CONTEXT_MAX 8
/* Lines a universal stack trace captures at most. */
#define CLS_TRACE_MAX 100
/* Lines node's throw site captures under it: its source excerpt and the
 * caret line. */
#define CLS_THROW_SITE_LINES 2
/* A summary (outcome) line is at most this long; longer ones are prose. */
#define CLS_OUTCOME_LEN_MAX 200
/* Keyword scans look at the first and the last CLS_SCAN_MAX bytes of a
 * line: a message may follow a long payload (a JSON record, a row of
 * dots), but the middle of a longer line (a minified bundle, a base64
 * blob) is not read, so a stray `ERROR` token there cannot make the whole
 * line a hazard, and the cost per line stays bounded. */
#define CLS_SCAN_MAX 4096
/* An indented line is still read as a `file:N:` location or an exception
 * line (a test runner's failure detail) up to this indentation. */
#define CLS_INDENT_MAX 8
/* Lines a failed test's detail capture takes at most: the `#` diagnostics
 * and YAML block under a TAP `not ok`, the deeper-indented lines under a
 * failure mark (`✕ name`), jest's `●` block.  A failure's diff or stack
 * fits; a capture that never meets its end cannot own a whole run. */
#define CLS_TEST_DETAIL_MAX 60
/* Lines an HCL diagnostic captures at most (terraform's and OpenTofu's
 * `Error: ...` with its `on main.tf line 7` block and message, in a box
 * or plain): one ends at its box's `╵` or the blank after its message
 * long before; the bound is for a box that never closes. */
#define CLS_HCL_MAX 60

typedef enum cls_kind {
    CLS_UNKNOWN = 0,
    CLS_HAZARD,
    CLS_OUTCOME,
    CLS_NOISE,
    CLS_PROMPT,
    CLS_BINARY,
} cls_kind_t;

/* Why a line is noise; the names are the `noise` marker's reasons. */
typedef enum cls_noise {
    CLS_NOISE_TOOL = 0, /* a grammar noise rule, action strip (or lead,
                           when it leads to no hazard) */
    CLS_NOISE_DEDUP,    /* a grammar noise rule, action dedup */
    CLS_NOISE_PROGRESS, /* redrawn frames, erased spinners */
    CLS_NOISE_BLANK,
    CLS_NOISE_DECOR,    /* ===== ----- and box drawing */
    CLS_NOISE_HINT,     /* an indented, parenthesised aside */
    CLS_NOISE_REPEAT,   /* a near-duplicate of the line before */
    CLS_NOISE_REASONS,
} cls_noise_t;

typedef struct cls_result {
    cls_kind_t kind;
    bool cont;            /* a line of the hazard above (multiline) */
    bool pending;         /* held: this line (its verdict its own, unknown
                             or structure noise) is the source excerpt of
                             the hazard above when the next line has
                             `confirms` (a grammar's `multiline.excerpt`:
                             clang's gutterless excerpt, known by the caret
                             line under it) */
    bool confirms;        /* cont: a caret line that makes the line held
                             before it (pending) a line of its hazard */
    size_t margin;        /* cont: the bytes of a margin drawn before the
                             line's own text (a Python exception group's
                             `    | `), which weighing it skips */
    bool warning;         /* hazard severity: warning, else error */
    cls_noise_t noise;
    bool lead;            /* a line that leads into the hazard below it
                             (gcc's `In file included from`, `In
                             function`): a grammar's `lead` rule (kind
                             noise, reason tool), or the universal tier's
                             (kind unknown).  The squasher shows it with
                             that hazard; when none follows it stays what
                             its kind says */
    const char *source;   /* grammar name, "universal" or "structure" */
    const grammar_t *grammar; /* which of the grammars given matched (its
                                 rule may be an include's); NULL when a
                                 built-in rule decided */
    const char *rule;     /* rule id */
    bool has_loc;         /* file:line[:col] within the line */
    bool failure;         /* an outcome the universal rules call an error
                             (go's `FAIL\tpkg`): a verdict the squasher
                             folds only with identical copies */
    size_t loc_off, loc_len;
    bool has_item;        /* noise of a grammar's dedup rule: the span its
                             `item` group matched, which varies between
                             the members of one group (a package name) */
    size_t item_off, item_len;
} cls_result_t;

typedef struct classify classify_t;

/* g: the tool's grammar, or NULL for universal rules only (not owned). */
int classify_new(const grammar_t *g, classify_t **out);
/* The n grammars of a command line, in priority order (as
 * grammar_set_detect_all gives them; not owned), n at most
 * GRAMMAR_PER_COMMAND_MAX: -EINVAL past it. */
int classify_new_set(const grammar_t *const *gs, size_t n, classify_t **out);
void classify_free(classify_t *c);
/* Classifies the next line of the stream (lines must come in order: the
 * multiline and near-duplicate rules look at what came before).  0 or
 * -ENOMEM. */
int classify_line(classify_t *c, const sq_line_t *line, cls_result_t *out);
/* The name of a noise reason ("progress", "blank", ...). */
const char *classify_noise_name(cls_noise_t n);
/* Whether a partial line (no newline yet) looks like a prompt: it ends in
 * `:` `?` `>` `$` `#` `]` `)`, or asks for a password or a yes/no. */
bool classify_prompt(const char *s, size_t n);
/* Whether a line of SGR colours `colours` (SQ_COLOUR_*), judged alone by
 * the universal rules with no grammar, is a hazard, an error or a
 * warning: what a frame that a redraw replaced may say that the view must
 * not lose (squash.c).  Its colours count as they do for a line shown (a
 * bold red `Compilation aborted`), so a frame is kept whenever the same
 * line shown would be a hazard by those rules. */
bool classify_hazard_line(const char *s, size_t n, unsigned colours);
/* Matches abandoned at a grammar's limits so far. */
uint64_t classify_limit_hits(const classify_t *c);

#endif
