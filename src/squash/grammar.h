/*
 * grammar.h — tool grammars: JSON files of PCRE2 rules that say which lines
 * of a tool's output are hazards, outcomes and noise (docs/grammars.md).
 *
 * Grammars are untrusted input (a user drops files in ~/.config): every
 * file is size-checked, every field type-checked, unknown fields rejected,
 * every pattern compiled under a length limit and matched under a match and
 * depth limit, so a bad or hostile file costs an error message, never a
 * hang.  Errors read `FILE: rule ID: pattern offset N: MESSAGE`,
 * `FILE: line L col C: MESSAGE` or `FILE: rule ID: MESSAGE`.
 *
 * A grammar set holds every grammar found on the search path, later
 * directories replacing earlier files of the same grammar name, with
 * `include`s resolved.  Search order (grammar_default_dirs):
 *   1. $REIN_GRAMMAR_DIR, when set (the shipped grammars, e.g. a checkout);
 *   2. else <dir of the rein binary>/../share/rein/grammars (installed);
 *   3. else the first `grammars/` found beside or above the binary's
 *      directory, up to GRAMMAR_UP_LEVELS up (the build tree: build/rein,
 *      build/tests/rein-test);
 *   4. then $XDG_CONFIG_HOME/rein/grammars, else ~/.config/rein/grammars.
 * In each directory, the .json files and those of its _shared/ are read.
 */
#ifndef REIN_SQUASH_GRAMMAR_H
#define REIN_SQUASH_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Limits (docs/grammars.md), each tested at its edge. */
#define GRAMMAR_FILE_MAX (256u * 1024u)
#define GRAMMAR_RULES_MAX 256
#define GRAMMAR_PATTERN_MAX 4096
#define GRAMMAR_MATCH_LIMIT 100000
#define GRAMMAR_DEPTH_LIMIT 1000
#define GRAMMAR_MULTILINE_MAX 200
#define GRAMMAR_MULTILINE_DEFAULT 50
/* Includes nest at most this deep (a cycle is an error anyway). */
#define GRAMMAR_INCLUDE_DEPTH 8
/* The most grammar files read from one directory. */
#define GRAMMAR_DIR_FILES_MAX 1024
/* How many directories above the binary's own are searched for grammars/. */
#define GRAMMAR_UP_LEVELS 3
/* The most search directories grammar_default_dirs returns. */
#define GRAMMAR_DIRS_MAX 4
/* The most grammars one command line applies (grammar_set_detect_all):
 * `npm ci && make` is npm's and make's output.  A line that names more
 * tools keeps those of its last segments; each grammar costs every line
 * its rules, so the bound is the cost's. */
#define GRAMMAR_PER_COMMAND_MAX 4

typedef enum grammar_tier {
    GRAMMAR_HAZARD = 0,
    GRAMMAR_OUTCOME,
    GRAMMAR_NOISE,
    GRAMMAR_TIERS,
} grammar_tier_t;

typedef enum grammar_severity {
    GRAMMAR_ERROR = 0,
    GRAMMAR_WARNING,
} grammar_severity_t;

typedef enum grammar_action {
    GRAMMAR_STRIP = 0,
    GRAMMAR_DEDUP,
    GRAMMAR_LEAD,   /* a line that leads into the hazard below it (gcc's
                       `In file included from`): shown with that hazard,
                       noise when it leads to none (squash.c) */
} grammar_action_t;

typedef struct grammar grammar_t;
typedef struct grammar_rule grammar_rule_t;
typedef struct grammar_set grammar_set_t;
typedef struct grammar_ctx grammar_ctx_t;

/* What a line matched. */
typedef struct grammar_match {
    const grammar_t *grammar; /* the grammar the rule is in (maybe included) */
    const grammar_rule_t *rule;
    const char *id;
    grammar_tier_t tier;
    grammar_severity_t severity;
    grammar_action_t action;
    bool has_file;            /* named groups file / line / col matched */
    size_t file_off, file_len;
    long line, col;           /* -1 when absent */
    bool has_item;            /* a dedup rule's `item` group matched, not
                                 empty: the part its members vary in */
    size_t item_off, item_len;
} grammar_match_t;

/* Parses one grammar from JSON bytes; label names it in errors (a path).
 * On error, appends one line (no newline) to err when err is not NULL.
 * 0, -EINVAL (a bad grammar), -EFBIG (over GRAMMAR_FILE_MAX), -ENOMEM. */
int grammar_parse(const char *label, const void *json, size_t len,
                  grammar_t **out, buf_t *err);
/* Reads and parses a file.  As grammar_parse, plus -errno from reading. */
int grammar_load_file(const char *path, grammar_t **out, buf_t *err);
void grammar_free(grammar_t *g);

const char *grammar_name(const grammar_t *g);
const char *grammar_category(const grammar_t *g); /* "condense" default */
const char *grammar_label(const grammar_t *g);    /* file it came from */
/* Rules of one tier of this grammar's own (not included). */
size_t grammar_rule_count(const grammar_t *g, grammar_tier_t tier);
const grammar_rule_t *grammar_rule_at(const grammar_t *g, grammar_tier_t tier,
                                      size_t i);
const char *grammar_rule_id(const grammar_rule_t *r);
const char *grammar_rule_pattern(const grammar_rule_t *r);
/* A hazard rule's multiline capture: 0 when it has none. */
unsigned grammar_rule_max_lines(const grammar_rule_t *r);

/* Per-caller matching state (match data, limits). */
int grammar_ctx_new(grammar_ctx_t **out);
void grammar_ctx_free(grammar_ctx_t *ctx);
/* Number of matches abandoned at the match or depth limit. */
uint64_t grammar_ctx_limit_hits(const grammar_ctx_t *ctx);

/* Classifies one line (valid UTF-8, no newline) by g's rules then those of
 * its includes, tier by tier: every hazard rule first, then outcomes, then
 * noise, so an included hazard always beats the grammar's own noise.
 * 1 and *m filled on a match, 0 on none.  A match abandoned at a limit is
 * no match (counted in the ctx). */
int grammar_match(const grammar_t *g, grammar_ctx_t *ctx, const char *line,
                  size_t len, unsigned colours, grammar_match_t *m);
/* As grammar_match over n grammars at once (a compound command's, in
 * priority order): tier by tier, every grammar's hazard rules (each with
 * its includes) before any outcome rule, then noise; within a tier the
 * first grammar wins.  So when grammars disagree the most visible verdict
 * stands: a line one calls a hazard is never another's noise.  *which is
 * the index in gs of the grammar that matched. */
int grammar_match_any(const grammar_t *const *gs, size_t n,
                      grammar_ctx_t *ctx, const char *line, size_t len,
                      unsigned colours, grammar_match_t *m, size_t *which);
/* After a hazard matched rule r, whether the next line belongs to it.
 * 1: it does, and *last says it is the final one (an `until` match);
 * 0: it does not (the capture ends before it). */
int grammar_rule_continues(const grammar_rule_t *r, grammar_ctx_t *ctx,
                           const char *line, size_t len, bool *last);

/* Whether rule r's tool draws its source excerpt with no gutter (clang:
 * `multiline.excerpt`), so its capture also takes lines by position
 * (classify.c): the line after the hazard line, or after a line of the
 * capture that matches `excerpt` (a note of its own), is the excerpt. */
bool grammar_rule_has_excerpt(const grammar_rule_t *r);
/* 1 when line, a line of r's capture, matches `multiline.excerpt` (a
 * source excerpt follows it), else 0 (also when r has none). */
int grammar_rule_excerpt_after(const grammar_rule_t *r, grammar_ctx_t *ctx,
                               const char *line, size_t len);

/* Sets of grammars. */
int grammar_set_new(grammar_set_t **out);
void grammar_set_free(grammar_set_t *set);
/* Adds g (the set takes it), replacing a grammar of the same name. */
int grammar_set_add(grammar_set_t *set, grammar_t *g);
/* Loads dir/\*.json and dir/_shared/\*.json; a missing dir is no error.
 * Files that fail are skipped, each error appended to errs as a line. */
int grammar_set_load_dir(grammar_set_t *set, const char *dir, buf_t *errs);
/* Resolves every include; a grammar with an unknown include or a cycle
 * is dropped from the set with an error line.  0 or -ENOMEM. */
int grammar_set_resolve(grammar_set_t *set, buf_t *errs);
/* Loads dirs (NULL: grammar_default_dirs) and resolves. */
int grammar_set_load(grammar_set_t **out, const char *const *dirs,
                     buf_t *errs);
const grammar_t *grammar_set_find(const grammar_set_t *set, const char *name);
size_t grammar_set_count(const grammar_set_t *set);
const grammar_t *grammar_set_at(const grammar_set_t *set, size_t i);
/* The grammars for a command line (docs/grammars.md, Detection): wrappers
 * skipped as the router skips them, `sh -c STRING` and ( ) groups
 * followed, one grammar per segment that has one (a grammar whose `args`
 * pattern matched beats one without `args`), each grammar once.  Written
 * to out in priority order, the last segment's first (the tool the line
 * exists to run), at most GRAMMAR_PER_COMMAND_MAX of them: past that the
 * earliest segments' are left out.  Returns how many (0: none). */
size_t grammar_set_detect_all(const grammar_set_t *set, grammar_ctx_t *ctx,
                              const char *command,
                              const grammar_t *out[GRAMMAR_PER_COMMAND_MAX]);
/* The first of grammar_set_detect_all: the grammar of the last segment
 * that has one, or NULL. */
const grammar_t *grammar_set_detect(const grammar_set_t *set,
                                    grammar_ctx_t *ctx, const char *command);

/* The default search path, in order; writes up to GRAMMAR_DIRS_MAX
 * malloc'd strings to dirs, NULL-terminated (dirs has GRAMMAR_DIRS_MAX + 1
 * slots).  Free with grammar_dirs_free.  0 or -ENOMEM. */
int grammar_default_dirs(char **dirs);
void grammar_dirs_free(char **dirs);

#endif
