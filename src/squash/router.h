/*
 * router.h — the category router: what kind of command is this, before it
 * runs?
 *
 * Every command rein runs (the CLI proxy, the MCP tools) is routed first,
 * because the right view of its output depends on what it is: `cp a b`
 * prints nothing and should be narrated from stat(); `cat f` should be
 * shown verbatim; `git status` keeps every path line; `vim` needs a real
 * terminal; `rm -rf /` must not run without a decision.  Everything else is
 * condensed by the squasher.
 *
 * A command line is split into segments at top-level `&&`, `||`, `;` and
 * `&` (quotes, escapes, $( ), ( ), { } and backquotes respected); each
 * segment is routed on its own, then the whole takes the most demanding
 * category (dangerous > interactive > the common category of all segments
 * > condense).  Within a segment, a pipeline takes the category of its
 * first stage, or interactive when any stage is; danger is looked for in
 * every stage.
 *
 * Interactive means "needs a terminal", and what a program needs depends on
 * where it runs (router_ctx_t): an editor or pager set to a program that
 * needs none (`GIT_EDITOR=true git commit`, `man -P cat ls`, `MANPAGER=cat`,
 * `export EDITOR=cat && crontab -e`) needs none; a pager whose output is not
 * a terminal (`man ls | head`, `less f > out`, any pager on pipes) prints
 * and ends; a shell whose input is a pipe reads commands from it.  The
 * environment seen is the stage's own `VAR=value` words, then `export
 * VAR=value` segments earlier on the line, then the context's.
 *
 * Categories come from, first match wins: the policy file's forbid list,
 * the built-in danger table (unless the policy's allow list matches), the
 * built-in command table when it says interactive, a grammar's declared
 * category (router_set_grammar_category_fn), then the built-in command
 * table, else condense.
 *
 * Danger is judged on every command a segment runs, the way a shell runs
 * it: every pipeline stage, what is nested in one (subshells, groups,
 * command and process substitutions), compound commands' bodies (after
 * `then`, `do`, `else`...), a shell's -c string and eval's words, read
 * recursively up to ROUTER_MAX_DANGER_DEPTH.  Each command's words are
 * normalised (quotes removed, wrappers skipped, the command word by its
 * basename) and a word that is the home directory by value is also seen
 * as `~`.  Routing may be coarse, but never wrong about danger: when in
 * doubt, more words are judged as commands, not fewer.
 *
 * The policy file (docs/policy.md) is `{"forbid": [regex...], "allow":
 * [regex...]}`; regexes are PCRE2, matched against each segment's text (as
 * written, trimmed), against the whole command line, and against each
 * command's normalised words.
 */
#ifndef REIN_SQUASH_ROUTER_H
#define REIN_SQUASH_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

typedef enum router_cat {
    ROUTER_CONDENSE = 0,
    ROUTER_NARRATE,
    ROUTER_PASSTHROUGH,
    ROUTER_STRUCTURED,
    ROUTER_INTERACTIVE,
    ROUTER_DANGEROUS,
} router_cat_t;

/* How a segment is joined to the one before it. */
typedef enum router_op {
    ROUTER_OP_NONE = 0, /* the first segment */
    ROUTER_OP_AND,      /* && */
    ROUTER_OP_OR,       /* || */
    ROUTER_OP_SEQ,      /* ; or a newline */
    ROUTER_OP_BG,       /* & */
} router_op_t;

/* What the danger check decided. */
typedef enum router_danger {
    ROUTER_SAFE = 0,
    ROUTER_DANGER_ASK,    /* built-in pattern: ask the person / the caller */
    ROUTER_DANGER_FORBID, /* the policy forbids it: never run */
} router_danger_t;

/* Limits: a command line longer than this is routed as one condense
 * segment (and still checked for danger as a whole); more segments than
 * this and the rest are folded into the last; more words than this in a
 * segment and the rest are ignored for routing. */
#define ROUTER_MAX_INPUT (64 * 1024)
#define ROUTER_MAX_SEGMENTS 64
#define ROUTER_MAX_WORDS 256
/* Heredocs pending on one line that the router reads past (`cat <<A <<B`);
 * a line with more is left as it is, its bodies routed as commands. */
#define ROUTER_MAX_HEREDOCS 8
/* The longest heredoc delimiter the router reads past. */
#define ROUTER_HEREDOC_DELIM_MAX 256
/* A policy file larger than this is refused. */
#define ROUTER_POLICY_MAX_BYTES (256 * 1024)
/* How deep an editor or pager setting is itself routed (`EDITOR='git -c
 * core.editor=... commit'`): past this, it is taken to need a terminal. */
#define ROUTER_MAX_NEST 4

/* How deep the danger check reads shell text nested in a command (a
 * subshell, a group, a substitution, `sh -c STRING`, eval's words, each
 * inside another): text nested deeper is not read, and asked about
 * (danger id "too-deep"). */
#define ROUTER_MAX_DANGER_DEPTH 16

/* Match limits for policy regexes, which are untrusted input. */
#define ROUTER_MATCH_LIMIT 100000
#define ROUTER_DEPTH_LIMIT 1000

typedef struct router_seg {
    char *text;          /* the segment as written, trimmed */
    char **argv;         /* its first pipeline stage's words, unquoted;
                            NULL-terminated */
    size_t argc;
    router_op_t op;      /* joins it to the previous segment */
    router_cat_t category;
    router_danger_t danger;
    const char *danger_id;   /* "rm-root", "policy-forbid", ... or NULL */
    const char *danger_what; /* a few words of why, or NULL */
    const char *grammar;     /* from the grammar hook, or NULL */
    const char *tty_why;     /* when interactive: what asks for a terminal
                                and how to run it without one, a sentence
                                (static); else NULL */
    bool term_edit;          /* git (merge, pull, revert) opens an editor on
                                its message only because it runs on a
                                terminal; with GIT_EDITOR=true it keeps its
                                own message, as without a terminal */
} router_seg_t;

typedef struct router_result {
    router_cat_t category;  /* of the whole command line */
    router_danger_t danger; /* the worst of the segments */
    const char *danger_id;  /* of the first dangerous segment */
    const char *danger_what;
    const char *grammar;    /* the first segment's grammar, or NULL */
    const char *tty_why;    /* of the first interactive segment, or NULL */
    bool term_edit;         /* of any segment (router_seg_t.term_edit) */
    bool shell_text;        /* the segments were read from shell text (a
                               command line, or `sh -c STRING`'s string):
                               their words are as written, before the
                               shell expands them (router_expands) */
    router_seg_t *segs;
    size_t nsegs;
} router_result_t;

typedef struct router router_t;

/* Where the command will run, for the rules that depend on it (see the top
 * of this file).  A NULL context is {NULL, false, false}: a terminal, and no
 * environment but what the line itself sets. */
typedef struct router_ctx {
    const char *const *env; /* NAME=value entries the command gets over the
                               inherited ones, later ones winning; or NULL */
    bool inherit_env;       /* under env: this process's own (getenv) */
    bool pipes;             /* its stdin and stdout are pipes, not a
                               terminal (`rein serve` without `tty`) */
} router_ctx_t;

/* The grammar hook: given a segment's words (after wrappers such as sudo,
 * env, time are skipped), says whether a grammar detects it, and if so its
 * category and name.  Installed by the grammar loader; without it the
 * built-in table decides. */
typedef bool (*router_grammar_fn)(const char *const *argv, size_t argc,
                                  router_cat_t *cat, const char **name,
                                  void *data);

/* Creates a router with the built-in tables and, when policy_path is not
 * NULL, that policy file (a missing file is not an error; a malformed one
 * is, with a message in err of size errlen naming the file and what is
 * wrong).  It keeps this process's $HOME, which the danger check knows by
 * value besides the HOME of a command's context.  0, -EINVAL (malformed
 * policy), -EFBIG, -ENOMEM or -errno. */
int router_new(const char *policy_path, router_t **out, char *err,
               size_t errlen);
void router_free(router_t *r);

/* The default policy path: $REIN_POLICY, else $XDG_CONFIG_HOME/rein/
 * policy.json, else ~/.config/rein/policy.json.  0 or -ENAMETOOLONG/-ENOENT
 * (no home). */
int router_policy_path(char *out, size_t size);

/* Installs (or with fn NULL removes) the grammar category hook. */
void router_set_grammar_category_fn(router_t *r, router_grammar_fn fn,
                                    void *data);

/* Routes a shell command line (as `sh -c` would run it). */
int router_classify(router_t *r, const char *cmdline, router_result_t *out);
/* Routes an argv that is executed directly: one segment, no shell syntax. */
int router_classify_argv(router_t *r, const char *const *argv,
                         router_result_t *out);

/* The same, for a command that runs in ctx (may be NULL). */
int router_classify_ctx(router_t *r, const char *cmdline,
                        const router_ctx_t *ctx, router_result_t *out);
int router_classify_argv_ctx(router_t *r, const char *const *argv,
                             const router_ctx_t *ctx, router_result_t *out);
void router_result_free(router_result_t *res);

/* The index of the real command in argv, past VAR=value assignments and
 * wrappers (sudo, env, time, nice, timeout, stdbuf, ...); argc when there
 * is none. */
size_t router_command_at(char *const *argv, size_t argc);

/* When argv (its wrappers already skipped, see router_command_at) runs a
 * shell's command string -- `sh -c STRING`, `bash -lc STRING`, `bash -o
 * pipefail -c STRING` (sh, bash, dash, zsh, ksh) -- that STRING (a word of
 * argv, not a copy); else NULL. */
const char *router_shell_string(char *const *argv, size_t argc);

/* The category's name ("condense", "narrate", ...), and back: -EINVAL
 * for an unknown name. */
const char *router_cat_name(router_cat_t c);
int router_cat_parse(const char *name, router_cat_t *out);

/* Splits a command line into segments (text and op only).  Exposed for
 * tests and for the MCP front end, which reports per-segment categories.
 * *out is an array of *n segments; free with router_segs_free. */
int router_split(const char *cmdline, router_seg_t **out, size_t *n);
void router_segs_free(router_seg_t *segs, size_t n);

/* Splits one segment's first pipeline stage into unquoted words (quotes
 * and backslashes removed; $vars left as written).  NULL-terminated;
 * free with router_words_free. */
int router_words(const char *seg, char ***argv, size_t *argc);
/* Whether a shell would expand anything in command text s before the
 * command sees its words: a parameter, command or arithmetic expansion
 * (`$`, a backquote, also within double quotes), a glob (`*`, `?`, `[`),
 * a tilde opening a word or an assignment's value, a brace expansion
 * (`{a,b}`, `{1..3}`).  Quoted and escaped characters are literal.  The
 * words router_words gives for such text are not what the command gets. */
bool router_expands(const char *s);
void router_words_free(char **argv);

#endif
