/*
 * grammar.c — the grammar loader and matcher (see grammar.h).
 *
 * Loading is strict because the files are untrusted and because a grammar
 * that silently half-loads is worse than one that fails loudly: a typo'd
 * field name would otherwise just turn a rule off.  Each pattern is compiled
 * with PCRE2_UTF (the lines are valid UTF-8, so matching skips the check)
 * and JIT-compiled when the platform allows; the interpreter is the
 * fallback.  Matching runs under a match context with the match and depth
 * limits of docs/grammars.md.
 *
 * A grammar's includes are flattened at resolve time into `chain`: the
 * grammar itself, then each include depth-first, each grammar once.  The
 * matcher walks the chain once per tier.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "squash/grammar.h"
#include "squash/router.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Enough ovector pairs for any location groups we read; a pattern with
 * more groups still matches (PCRE2 returns 0 for a short ovector). */
#define GRAMMAR_OVECTOR_PAIRS 32

struct grammar_rule {
    char *id;
    char *pattern;
    pcre2_code *re;
    grammar_tier_t tier;
    grammar_severity_t severity;
    grammar_action_t action;
    unsigned colour;       /* SQ_COLOUR_* bits required (0: any) */
    pcre2_code *cont;      /* multiline.continue */
    pcre2_code *until;     /* multiline.until */
    pcre2_code *excerpt;   /* multiline.excerpt: lines followed by a
                              source excerpt drawn without a gutter */
    char *cont_pat;        /* their source, kept until compiled */
    char *until_pat;
    char *excerpt_pat;
    bool broken;           /* a lazy compile failed: the rule never matches */
    unsigned max_lines;    /* 0: no multiline */
    int g_file, g_line, g_col; /* group numbers, or -1 */
    int g_item;                /* a dedup rule's `item` group, or -1 */
    const grammar_t *owner;
};

struct grammar {
    char *name;
    char *label;
    char *category;
    char **commands;
    size_t ncommands;
    pcre2_code *args;
    char **includes;
    size_t nincludes;
    grammar_rule_t *rules[GRAMMAR_TIERS];
    size_t nrules[GRAMMAR_TIERS];
    const grammar_t **chain; /* self + includes, flattened; NULL: self only */
    size_t nchain;
    bool lazy;     /* patterns compile on first use (grammar_prepare) */
    bool prepared; /* compiled and JIT-compiled (grammar_prepare) */
};

struct grammar_set {
    grammar_t **g;
    size_t n, cap;
};

struct grammar_ctx {
    pcre2_match_data *md;
    pcre2_match_context *mc;
    uint64_t limit_hits;
};

static const char *const grammar_categories[] = {
    "condense", "narrate", "passthrough", "structured", "interactive",
    "dangerous",
};

static const char *const grammar_tier_names[GRAMMAR_TIERS] = {
    "hazard", "outcome", "noise",
};

/* ---------------------------------------------------------------- free */

static void grammar_rule_clear(grammar_rule_t *r)
{
    free(r->id);
    free(r->pattern);
    pcre2_code_free(r->re);
    pcre2_code_free(r->cont);
    pcre2_code_free(r->until);
    pcre2_code_free(r->excerpt);
    free(r->cont_pat);
    free(r->until_pat);
    free(r->excerpt_pat);
}

void grammar_free(grammar_t *g)
{
    if (!g)
        return;
    free(g->name);
    free(g->label);
    free(g->category);
    for (size_t i = 0; i < g->ncommands; i++)
        free(g->commands[i]);
    free(g->commands);
    pcre2_code_free(g->args);
    for (size_t i = 0; i < g->nincludes; i++)
        free(g->includes[i]);
    free(g->includes);
    for (int t = 0; t < GRAMMAR_TIERS; t++) {
        for (size_t i = 0; i < g->nrules[t]; i++)
            grammar_rule_clear(&g->rules[t][i]);
        free(g->rules[t]);
    }
    free(g->chain);
    free(g);
}

/* -------------------------------------------------------------- errors */

__attribute__((format(printf, 2, 3)))
static void grammar_err(buf_t *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (err->len && err->p[err->len - 1] != '\n')
        buf_append_byte(err, '\n');
    buf_append_str(err, tmp);
}

/* ------------------------------------------------------------- compile */

/* Compiles pattern; on error reports `LABEL: rule ID: pattern offset N:`. */
static int grammar_compile(const char *label, const char *rule,
                           const char *field, const char *pattern,
                           pcre2_code **out, buf_t *err)
{
    size_t plen = strlen(pattern);
    if (plen > GRAMMAR_PATTERN_MAX) {
        grammar_err(err, "%s: rule %s: %s is %zu bytes (limit %u)", label,
                    rule, field, plen, GRAMMAR_PATTERN_MAX);
        return -EINVAL;
    }
    int ec;
    PCRE2_SIZE eoff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, plen,
                                   PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C, &ec,
                                   &eoff, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        grammar_err(err, "%s: rule %s: %s offset %zu: %s", label, rule,
                    strcmp(field, "pattern") ? field : "pattern", (size_t)eoff,
                    (const char *)msg);
        return ec == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -EINVAL;
    }
    /* JIT comes later, for the grammars a command actually uses
     * (grammar_jit): compiling every rule of every grammar to machine code
     * at start costs more than a short command's whole run. */
    *out = re;
    return 0;
}

/* Compiles rule r's patterns (kept as source until now) and finds its
 * location groups.  Errors name the file, rule and pattern offset. */
static int grammar_rule_compile(const grammar_t *g, grammar_rule_t *r,
                                buf_t *err)
{
    int rc = 0;
    if (!r->re &&
        (rc = grammar_compile(g->label, r->id, "pattern", r->pattern, &r->re,
                              err)) < 0)
        return rc;
    if (r->cont_pat && !r->cont &&
        (rc = grammar_compile(g->label, r->id, "multiline.continue",
                              r->cont_pat, &r->cont, err)) < 0)
        return rc;
    if (r->until_pat && !r->until &&
        (rc = grammar_compile(g->label, r->id, "multiline.until",
                              r->until_pat, &r->until, err)) < 0)
        return rc;
    if (r->excerpt_pat && !r->excerpt &&
        (rc = grammar_compile(g->label, r->id, "multiline.excerpt",
                              r->excerpt_pat, &r->excerpt, err)) < 0)
        return rc;
    uint32_t idx;
    (void)pcre2_pattern_info(r->re, PCRE2_INFO_NAMECOUNT, &idx);
    if (idx) {
        int n;
        if ((n = pcre2_substring_number_from_name(r->re, (PCRE2_SPTR) "file")) > 0)
            r->g_file = n;
        if ((n = pcre2_substring_number_from_name(r->re, (PCRE2_SPTR) "line")) > 0)
            r->g_line = n;
        if ((n = pcre2_substring_number_from_name(r->re, (PCRE2_SPTR) "col")) > 0)
            r->g_col = n;
        if ((n = pcre2_substring_number_from_name(r->re, (PCRE2_SPTR) "item")) > 0)
            r->g_item = n;
    }
    return 0;
}

/* JIT-compiles a pattern where the platform has JIT; the interpreter runs
 * it (under the same limits) where not. */
static void grammar_jit_one(pcre2_code *re)
{
    if (re)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
}

/*
 * Makes g ready to match, once: a lazily loaded grammar compiles its
 * patterns now (a grammar set holds every tool's grammar, and a command
 * uses one or two of them — compiling all at start costs more than a short
 * command's whole run), then every pattern of it and of what it includes
 * gets machine code where PCRE2 has JIT.  A pattern that fails to compile
 * here is reported on stderr (file, rule, offset, as `rein grammar check`
 * would) and its rule never matches.  The code objects change but not what
 * they match, so this stays invisible behind the const grammars callers
 * hold.
 */
static void grammar_prepare(const grammar_t *cg)
{
    grammar_t *g = (grammar_t *)cg;
    if (g->prepared)
        return;
    g->prepared = true;
    /* REIN_PCRE2_JIT=0 keeps the interpreter: valgrind cannot follow
     * JIT-generated code and reports its reads as uninitialised. */
    const char *env = getenv("REIN_PCRE2_JIT");
    bool jit = !(env && !strcmp(env, "0"));
    for (int t = 0; t < GRAMMAR_TIERS; t++)
        for (size_t i = 0; i < g->nrules[t]; i++) {
            grammar_rule_t *r = &g->rules[t][i];
            if (!r->re) {
                buf_t err = BUF_INIT;
                if (grammar_rule_compile(g, r, &err) < 0) {
                    r->broken = true;
                    fprintf(stderr, "rein: %s\n", err.p ? err.p : "grammar");
                }
                buf_free(&err);
            }
            if (jit) {
                grammar_jit_one(r->re);
                grammar_jit_one(r->cont);
                grammar_jit_one(r->until);
                grammar_jit_one(r->excerpt);
            }
        }
    for (size_t i = 0; i < g->nchain; i++)
        if (g->chain[i] != cg)
            grammar_prepare(g->chain[i]);
}

/* --------------------------------------------------------------- parse */

static int grammar_strdup(const char *s, char **out)
{
    *out = strdup(s);
    return *out ? 0 : -ENOMEM;
}

/* Checks obj has only the listed keys. */
static int grammar_only_keys(json_t *obj, const char *const *keys,
                             const char *label, const char *where, buf_t *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        bool ok = false;
        for (size_t i = 0; keys[i]; i++)
            if (!strcmp(k, keys[i]))
                ok = true;
        if (!ok) {
            grammar_err(err, "%s: %s: unknown field '%s'", label, where, k);
            return -EINVAL;
        }
    }
    return 0;
}

static int grammar_parse_rule(grammar_t *g, grammar_tier_t tier, json_t *jr,
                              grammar_rule_t *r, buf_t *err)
{
    static const char *const keys[] = {"id", "pattern", "severity", "action",
                                       "multiline", "colour", NULL};
    const char *label = g->label;
    r->g_file = r->g_line = r->g_col = r->g_item = -1;
    r->tier = tier;
    r->owner = g;
    if (!json_is_object(jr)) {
        grammar_err(err, "%s: %s: each rule must be an object", label,
                    grammar_tier_names[tier]);
        return -EINVAL;
    }
    json_t *id = json_object_get(jr, "id");
    if (!json_is_string(id) || !json_string_length(id)) {
        grammar_err(err, "%s: %s rule: 'id' must be a non-empty string",
                    label, grammar_tier_names[tier]);
        return -EINVAL;
    }
    const char *rid = json_string_value(id);
    char where[160];
    snprintf(where, sizeof where, "rule %s", rid);
    int rc = grammar_only_keys(jr, keys, label, where, err);
    if (rc < 0)
        return rc;
    if ((rc = grammar_strdup(rid, &r->id)) < 0)
        return rc;
    json_t *pat = json_object_get(jr, "pattern");
    if (!json_is_string(pat)) {
        grammar_err(err, "%s: rule %s: 'pattern' must be a string", label, rid);
        return -EINVAL;
    }
    if ((rc = grammar_strdup(json_string_value(pat), &r->pattern)) < 0)
        return rc;
    if (strlen(r->pattern) != json_string_length(pat)) {
        grammar_err(err, "%s: rule %s: 'pattern' holds a NUL", label, rid);
        return -EINVAL;
    }
    if (strlen(r->pattern) > GRAMMAR_PATTERN_MAX) {
        grammar_err(err, "%s: rule %s: pattern is %zu bytes (limit %u)",
                    label, rid, strlen(r->pattern), GRAMMAR_PATTERN_MAX);
        return -EINVAL;
    }

    json_t *sev = json_object_get(jr, "severity");
    if (sev) {
        const char *s = json_string_value(sev);
        if (tier != GRAMMAR_HAZARD || !s ||
            (strcmp(s, "error") && strcmp(s, "warning"))) {
            grammar_err(err, "%s: rule %s: 'severity' is for hazards: "
                        "\"error\" or \"warning\"", label, rid);
            return -EINVAL;
        }
        r->severity = strcmp(s, "error") ? GRAMMAR_WARNING : GRAMMAR_ERROR;
    }
    json_t *act = json_object_get(jr, "action");
    if (act) {
        const char *s = json_string_value(act);
        if (tier != GRAMMAR_NOISE || !s ||
            (strcmp(s, "strip") && strcmp(s, "dedup") && strcmp(s, "lead"))) {
            grammar_err(err, "%s: rule %s: 'action' is for noise: "
                        "\"strip\", \"dedup\" or \"lead\"", label, rid);
            return -EINVAL;
        }
        r->action = !strcmp(s, "strip")   ? GRAMMAR_STRIP
                    : !strcmp(s, "dedup") ? GRAMMAR_DEDUP
                                          : GRAMMAR_LEAD;
    }
    json_t *col = json_object_get(jr, "colour");
    if (col) {
        const char *s = json_string_value(col);
        if (!s || (strcmp(s, "red") && strcmp(s, "yellow") && strcmp(s, "any"))) {
            grammar_err(err, "%s: rule %s: 'colour' must be \"red\", "
                        "\"yellow\" or \"any\"", label, rid);
            return -EINVAL;
        }
        r->colour = !strcmp(s, "red") ? 1u : !strcmp(s, "yellow") ? 2u : 0u;
    }
    json_t *ml = json_object_get(jr, "multiline");
    if (ml) {
        static const char *const mkeys[] = {"continue", "until", "max_lines",
                                            "excerpt", NULL};
        if (tier != GRAMMAR_HAZARD || !json_is_object(ml)) {
            grammar_err(err, "%s: rule %s: 'multiline' is an object, for "
                        "hazards", label, rid);
            return -EINVAL;
        }
        snprintf(where, sizeof where, "rule %s: multiline", rid);
        if ((rc = grammar_only_keys(ml, mkeys, label, where, err)) < 0)
            return rc;
        json_t *c = json_object_get(ml, "continue");
        json_t *u = json_object_get(ml, "until");
        if ((c && u) || (!c && !u) || (c && !json_is_string(c)) ||
            (u && !json_is_string(u))) {
            grammar_err(err, "%s: rule %s: multiline needs one of "
                        "'continue' or 'until' (a string)", label, rid);
            return -EINVAL;
        }
        rc = grammar_strdup(json_string_value(c ? c : u),
                            c ? &r->cont_pat : &r->until_pat);
        if (rc < 0)
            return rc;
        /* A gutterless excerpt is a `continue` capture's: an `until`
         * capture takes every line anyway. */
        json_t *x = json_object_get(ml, "excerpt");
        if (x && (!c || !json_is_string(x))) {
            grammar_err(err, "%s: rule %s: multiline.excerpt is a string, "
                        "with 'continue'", label, rid);
            return -EINVAL;
        }
        if (x && (rc = grammar_strdup(json_string_value(x),
                                      &r->excerpt_pat)) < 0)
            return rc;
        r->max_lines = GRAMMAR_MULTILINE_DEFAULT;
        json_t *mx = json_object_get(ml, "max_lines");
        if (mx) {
            json_int_t v = json_is_integer(mx) ? json_integer_value(mx) : 0;
            if (v < 1 || v > GRAMMAR_MULTILINE_MAX) {
                grammar_err(err, "%s: rule %s: multiline.max_lines must be "
                            "an integer 1..%d", label, rid,
                            GRAMMAR_MULTILINE_MAX);
                return -EINVAL;
            }
            r->max_lines = (unsigned)v;
        }
    }
    return 0;
}

static int grammar_parse_strings(json_t *arr, const char *label,
                                 const char *field, char ***out, size_t *n,
                                 buf_t *err)
{
    if (!json_is_array(arr)) {
        grammar_err(err, "%s: '%s' must be an array of strings", label, field);
        return -EINVAL;
    }
    size_t cnt = json_array_size(arr);
    if (cnt > GRAMMAR_RULES_MAX) {
        grammar_err(err, "%s: '%s' has %zu entries (limit %d)", label, field,
                    cnt, GRAMMAR_RULES_MAX);
        return -EINVAL;
    }
    *out = calloc(cnt ? cnt : 1, sizeof **out);
    if (!*out)
        return -ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        json_t *s = json_array_get(arr, i);
        if (!json_is_string(s) || !json_string_length(s)) {
            grammar_err(err, "%s: '%s' must be an array of strings", label,
                        field);
            return -EINVAL;
        }
        if (grammar_strdup(json_string_value(s), &(*out)[i]) < 0)
            return -ENOMEM;
        (*n)++;
    }
    return 0;
}

static int grammar_parse_detect(grammar_t *g, json_t *d, buf_t *err)
{
    static const char *const keys[] = {"commands", "args", NULL};
    if (!json_is_object(d)) {
        grammar_err(err, "%s: 'detect' must be an object", g->label);
        return -EINVAL;
    }
    int rc = grammar_only_keys(d, keys, g->label, "detect", err);
    if (rc < 0)
        return rc;
    json_t *c = json_object_get(d, "commands");
    if (c && (rc = grammar_parse_strings(c, g->label, "detect.commands",
                                         &g->commands, &g->ncommands, err)) < 0)
        return rc;
    json_t *a = json_object_get(d, "args");
    if (a && !json_is_null(a)) {
        if (!json_is_string(a)) {
            grammar_err(err, "%s: 'detect.args' must be a string or null",
                        g->label);
            return -EINVAL;
        }
        rc = grammar_compile(g->label, "detect", "detect.args",
                             json_string_value(a), &g->args, err);
    }
    return rc;
}

static int grammar_parse_obj(grammar_t *g, json_t *root, buf_t *err)
{
    static const char *const keys[] = {"name", "description", "detect",
                                       "category", "include", "hazard",
                                       "outcome", "noise", "$schema",
                                       "comment", NULL};
    const char *label = g->label;
    int rc;
    if (!json_is_object(root)) {
        grammar_err(err, "%s: line 1 col 1: a grammar is a JSON object", label);
        return -EINVAL;
    }
    if ((rc = grammar_only_keys(root, keys, label, "grammar", err)) < 0)
        return rc;
    json_t *name = json_object_get(root, "name");
    if (!json_is_string(name) || !json_string_length(name)) {
        grammar_err(err, "%s: 'name' must be a non-empty string", label);
        return -EINVAL;
    }
    if ((rc = grammar_strdup(json_string_value(name), &g->name)) < 0)
        return rc;
    json_t *desc = json_object_get(root, "description");
    if (desc && !json_is_string(desc)) {
        grammar_err(err, "%s: 'description' must be a string", label);
        return -EINVAL;
    }
    json_t *cat = json_object_get(root, "category");
    const char *cs = "condense";
    if (cat) {
        cs = json_string_value(cat);
        bool ok = false;
        for (size_t i = 0; cs && i < sizeof grammar_categories /
                                         sizeof grammar_categories[0]; i++)
            if (!strcmp(cs, grammar_categories[i]))
                ok = true;
        if (!ok) {
            grammar_err(err, "%s: 'category' must be one of condense, "
                        "narrate, passthrough, structured, interactive, "
                        "dangerous", label);
            return -EINVAL;
        }
    }
    if ((rc = grammar_strdup(cs, &g->category)) < 0)
        return rc;
    json_t *det = json_object_get(root, "detect");
    if (det && !json_is_null(det) && (rc = grammar_parse_detect(g, det, err)) < 0)
        return rc;
    json_t *inc = json_object_get(root, "include");
    if (inc && (rc = grammar_parse_strings(inc, label, "include", &g->includes,
                                           &g->nincludes, err)) < 0)
        return rc;

    size_t total = 0;
    for (int t = 0; t < GRAMMAR_TIERS; t++) {
        json_t *arr = json_object_get(root, grammar_tier_names[t]);
        if (!arr)
            continue;
        if (!json_is_array(arr)) {
            grammar_err(err, "%s: '%s' must be an array of rules", label,
                        grammar_tier_names[t]);
            return -EINVAL;
        }
        total += json_array_size(arr);
    }
    if (total > GRAMMAR_RULES_MAX) {
        grammar_err(err, "%s: %zu rules (limit %d)", label, total,
                    GRAMMAR_RULES_MAX);
        return -EINVAL;
    }
    for (int t = 0; t < GRAMMAR_TIERS; t++) {
        json_t *arr = json_object_get(root, grammar_tier_names[t]);
        size_t n = arr ? json_array_size(arr) : 0;
        if (!n)
            continue;
        g->rules[t] = calloc(n, sizeof *g->rules[t]);
        if (!g->rules[t])
            return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
            rc = grammar_parse_rule(g, (grammar_tier_t)t,
                                    json_array_get(arr, i), &g->rules[t][i], err);
            g->nrules[t]++;
            /* Eager loads (a single file: tests, `rein grammar check`)
             * compile now so every pattern error is reported here. */
            if (rc == 0 && !g->lazy)
                rc = grammar_rule_compile(g, &g->rules[t][i], err);
            if (rc < 0)
                return rc;
            /* ids are unique across the whole grammar */
            for (int u = 0; u <= t; u++)
                for (size_t j = 0; j + (u == t) < g->nrules[u]; j++)
                    if (!strcmp(g->rules[u][j].id, g->rules[t][i].id)) {
                        grammar_err(err, "%s: rule %s: duplicate id", label,
                                    g->rules[t][i].id);
                        return -EINVAL;
                    }
        }
    }
    return 0;
}

static int grammar_parse_ex(const char *label, const void *json, size_t len,
                            bool lazy, grammar_t **out, buf_t *err);

int grammar_parse(const char *label, const void *json, size_t len,
                  grammar_t **out, buf_t *err)
{
    return grammar_parse_ex(label, json, len, false, out, err);
}

static int grammar_parse_ex(const char *label, const void *json, size_t len,
                            bool lazy, grammar_t **out, buf_t *err)
{
    *out = NULL;
    if (len > GRAMMAR_FILE_MAX) {
        grammar_err(err, "%s: %zu bytes (limit %u)", label, len,
                    GRAMMAR_FILE_MAX);
        return -EFBIG;
    }
    grammar_t *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->lazy = lazy;
    int rc = grammar_strdup(label, &g->label);
    if (rc < 0)
        goto fail;
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        grammar_err(err, "%s: line %d col %d: %s", label, je.line, je.column,
                    je.text);
        rc = -EINVAL;
        goto fail;
    }
    rc = grammar_parse_obj(g, root, err);
    json_decref(root);
    if (rc < 0)
        goto fail;
    *out = g;
    return 0;
fail:
    grammar_free(g);
    return rc;
}

static int grammar_load_file_ex(const char *path, bool lazy, grammar_t **out,
                                buf_t *err);

int grammar_load_file(const char *path, grammar_t **out, buf_t *err)
{
    return grammar_load_file_ex(path, false, out, err);
}

static int grammar_load_file_ex(const char *path, bool lazy, grammar_t **out,
                                buf_t *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        grammar_err(err, "%s: %s", path, strerror(e));
        return -e;
    }
    buf_t b = BUF_INIT;
    int rc = 0;
    for (;;) {
        if (b.len > GRAMMAR_FILE_MAX) {
            grammar_err(err, "%s: over %u bytes", path, GRAMMAR_FILE_MAX);
            rc = -EFBIG;
            goto out;
        }
        if ((rc = buf_reserve(&b, 16384)) < 0)
            goto out;
        ssize_t n = read(fd, b.p + b.len, b.cap - b.len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            grammar_err(err, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        b.len += (size_t)n;
    }
    rc = grammar_parse_ex(path, b.p ? b.p : "", b.len, lazy, out, err);
out:
    close(fd);
    buf_free(&b);
    return rc;
}

/* ------------------------------------------------------------- access */

const char *grammar_name(const grammar_t *g) { return g->name; }
const char *grammar_category(const grammar_t *g) { return g->category; }
const char *grammar_label(const grammar_t *g) { return g->label; }

size_t grammar_rule_count(const grammar_t *g, grammar_tier_t tier)
{
    return tier < GRAMMAR_TIERS ? g->nrules[tier] : 0;
}

const grammar_rule_t *grammar_rule_at(const grammar_t *g, grammar_tier_t tier,
                                      size_t i)
{
    return tier < GRAMMAR_TIERS && i < g->nrules[tier] ? &g->rules[tier][i]
                                                       : NULL;
}

const char *grammar_rule_id(const grammar_rule_t *r) { return r->id; }
const char *grammar_rule_pattern(const grammar_rule_t *r) { return r->pattern; }
unsigned grammar_rule_max_lines(const grammar_rule_t *r) { return r->max_lines; }

/* ------------------------------------------------------------ matching */

int grammar_ctx_new(grammar_ctx_t **out)
{
    grammar_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->md = pcre2_match_data_create(GRAMMAR_OVECTOR_PAIRS, NULL);
    c->mc = pcre2_match_context_create(NULL);
    if (!c->md || !c->mc) {
        grammar_ctx_free(c);
        return -ENOMEM;
    }
    pcre2_set_match_limit(c->mc, GRAMMAR_MATCH_LIMIT);
    pcre2_set_depth_limit(c->mc, GRAMMAR_DEPTH_LIMIT);
    *out = c;
    return 0;
}

void grammar_ctx_free(grammar_ctx_t *ctx)
{
    if (!ctx)
        return;
    pcre2_match_data_free(ctx->md);
    pcre2_match_context_free(ctx->mc);
    free(ctx);
}

uint64_t grammar_ctx_limit_hits(const grammar_ctx_t *ctx)
{
    return ctx->limit_hits;
}

/* 1 match, 0 none (a limit or other matching error counts as none). */
static int grammar_run(const pcre2_code *re, grammar_ctx_t *ctx,
                       const char *s, size_t len)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, PCRE2_NO_UTF_CHECK,
                         ctx->md, ctx->mc);
    if (rc >= 0)
        return 1;
    if (rc != PCRE2_ERROR_NOMATCH)
        ctx->limit_hits++;
    return 0;
}

static void grammar_fill(const grammar_rule_t *r, grammar_ctx_t *ctx,
                         const char *s, grammar_match_t *m)
{
    memset(m, 0, sizeof *m);
    m->grammar = r->owner;
    m->rule = r;
    m->id = r->id;
    m->tier = r->tier;
    m->severity = r->severity;
    m->action = r->action;
    m->line = m->col = -1;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(ctx->md);
    uint32_t pairs = pcre2_get_ovector_count(ctx->md);
    if (r->g_file > 0 && (uint32_t)r->g_file < pairs &&
        ov[2 * r->g_file] != PCRE2_UNSET) {
        m->has_file = true;
        m->file_off = ov[2 * r->g_file];
        m->file_len = ov[2 * r->g_file + 1] - ov[2 * r->g_file];
    }
    if (r->g_line > 0 && (uint32_t)r->g_line < pairs &&
        ov[2 * r->g_line] != PCRE2_UNSET)
        m->line = strtol(s + ov[2 * r->g_line], NULL, 10);
    if (r->g_col > 0 && (uint32_t)r->g_col < pairs &&
        ov[2 * r->g_col] != PCRE2_UNSET)
        m->col = strtol(s + ov[2 * r->g_col], NULL, 10);
    if (r->g_item > 0 && (uint32_t)r->g_item < pairs &&
        ov[2 * r->g_item] != PCRE2_UNSET &&
        ov[2 * r->g_item + 1] > ov[2 * r->g_item]) {
        m->has_item = true;
        m->item_off = ov[2 * r->g_item];
        m->item_len = ov[2 * r->g_item + 1] - ov[2 * r->g_item];
    }
}

/* The first rule of tier t in g's chain (g, then its includes) that
 * matches: 1 and *m filled, else 0. */
static int grammar_match_tier(const grammar_t *g, grammar_tier_t t,
                              grammar_ctx_t *ctx, const char *line,
                              size_t len, unsigned colours, grammar_match_t *m)
{
    const grammar_t *self[1] = {g};
    const grammar_t *const *chain = g->chain ? g->chain : self;
    size_t nchain = g->chain ? g->nchain : 1;
    for (size_t c = 0; c < nchain; c++) {
        const grammar_t *h = chain[c];
        for (size_t i = 0; i < h->nrules[t]; i++) {
            const grammar_rule_t *r = &h->rules[t][i];
            if (r->broken || (r->colour && !(colours & r->colour)))
                continue;
            if (grammar_run(r->re, ctx, line, len)) {
                grammar_fill(r, ctx, line, m);
                return 1;
            }
        }
    }
    return 0;
}

int grammar_match_any(const grammar_t *const *gs, size_t n,
                      grammar_ctx_t *ctx, const char *line, size_t len,
                      unsigned colours, grammar_match_t *m, size_t *which)
{
    for (size_t k = 0; k < n; k++)
        grammar_prepare(gs[k]);
    for (int t = 0; t < GRAMMAR_TIERS; t++)
        for (size_t k = 0; k < n; k++)
            if (grammar_match_tier(gs[k], (grammar_tier_t)t, ctx, line, len,
                                   colours, m)) {
                *which = k;
                return 1;
            }
    return 0;
}

int grammar_match(const grammar_t *g, grammar_ctx_t *ctx, const char *line,
                  size_t len, unsigned colours, grammar_match_t *m)
{
    size_t which;
    return grammar_match_any(&g, 1, ctx, line, len, colours, m, &which);
}

int grammar_rule_continues(const grammar_rule_t *r, grammar_ctx_t *ctx,
                           const char *line, size_t len, bool *last)
{
    *last = false;
    if (r->cont)
        return grammar_run(r->cont, ctx, line, len);
    if (r->until) {
        *last = grammar_run(r->until, ctx, line, len) == 1;
        return 1;
    }
    return 0;
}

bool grammar_rule_has_excerpt(const grammar_rule_t *r)
{
    return r->excerpt_pat != NULL;
}

int grammar_rule_excerpt_after(const grammar_rule_t *r, grammar_ctx_t *ctx,
                               const char *line, size_t len)
{
    return r->excerpt ? grammar_run(r->excerpt, ctx, line, len) : 0;
}

/* ----------------------------------------------------------------- sets */

int grammar_set_new(grammar_set_t **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void grammar_set_free(grammar_set_t *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++)
        grammar_free(set->g[i]);
    free(set->g);
    free(set);
}

int grammar_set_add(grammar_set_t *set, grammar_t *g)
{
    for (size_t i = 0; i < set->n; i++)
        if (!strcmp(set->g[i]->name, g->name)) {
            grammar_free(set->g[i]);
            set->g[i] = g;
            return 0;
        }
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        grammar_t **p = realloc(set->g, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        set->g = p;
        set->cap = cap;
    }
    set->g[set->n++] = g;
    return 0;
}

static int grammar_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Loads every *.json of one directory (not recursing). */
static int grammar_set_load_one(grammar_set_t *set, const char *dir,
                                buf_t *errs)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[GRAMMAR_DIR_FILES_MAX] = {NULL};
    size_t n = 0;
    int rc = 0;
    const struct dirent *e;
    while ((e = readdir(d)) && n < GRAMMAR_DIR_FILES_MAX) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") || e->d_name[0] == '.')
            continue;
        if (!(names[n] = strdup(e->d_name))) {
            rc = -ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    /* Sorted, so which file wins a duplicate name never depends on readdir. */
    qsort(names, n, sizeof names[0], grammar_name_cmp);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        grammar_t *g;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        if (rc < 0)
            continue;
        /* A set is what a run loads: patterns compile when used. */
        int r = grammar_load_file_ex(path, true, &g, errs);
        if (r == -ENOMEM)
            rc = r;
        else if (r == 0 && (r = grammar_set_add(set, g)) < 0) {
            grammar_free(g);
            rc = r;
        }
    }
    return rc;
}

int grammar_set_load_dir(grammar_set_t *set, const char *dir, buf_t *errs)
{
    int rc = grammar_set_load_one(set, dir, errs);
    if (rc < 0)
        return rc;
    char shared[4096];
    snprintf(shared, sizeof shared, "%s/_shared", dir);
    return grammar_set_load_one(set, shared, errs);
}

const grammar_t *grammar_set_find(const grammar_set_t *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (!strcmp(set->g[i]->name, name))
            return set->g[i];
    return NULL;
}

size_t grammar_set_count(const grammar_set_t *set) { return set->n; }

const grammar_t *grammar_set_at(const grammar_set_t *set, size_t i)
{
    return i < set->n ? set->g[i] : NULL;
}

/* Appends g's includes to chain depth-first.  -EINVAL with an error line
 * for an unknown include, a cycle or too deep a nest. */
static int grammar_flatten(const grammar_set_t *set, const grammar_t *root,
                           const grammar_t *g, unsigned depth,
                           const grammar_t **chain, size_t *n, size_t cap,
                           buf_t *errs)
{
    if (depth > GRAMMAR_INCLUDE_DEPTH) {
        grammar_err(errs, "%s: include: nested deeper than %d (a cycle?)",
                    root->label, GRAMMAR_INCLUDE_DEPTH);
        return -EINVAL;
    }
    for (size_t i = 0; i < g->nincludes; i++) {
        const grammar_t *h = grammar_set_find(set, g->includes[i]);
        if (!h) {
            grammar_err(errs, "%s: include: unknown grammar '%s'", root->label,
                        g->includes[i]);
            return -EINVAL;
        }
        if (h == root) {
            grammar_err(errs, "%s: include: '%s' includes itself", root->label,
                        g->includes[i]);
            return -EINVAL;
        }
        bool seen = false;
        for (size_t j = 0; j < *n; j++)
            seen |= chain[j] == h;
        if (seen)
            continue;
        if (*n == cap) {
            grammar_err(errs, "%s: include: too many grammars", root->label);
            return -EINVAL;
        }
        chain[(*n)++] = h;
        int rc = grammar_flatten(set, root, h, depth + 1, chain, n, cap, errs);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int grammar_set_resolve(grammar_set_t *set, buf_t *errs)
{
    size_t cap = set->n + 1;
    for (size_t i = 0; i < set->n;) {
        grammar_t *g = set->g[i];
        free(g->chain);
        g->chain = NULL;
        g->nchain = 0;
        if (!g->nincludes) {
            i++;
            continue;
        }
        const grammar_t **chain = calloc(cap, sizeof *chain);
        if (!chain)
            return -ENOMEM;
        size_t n = 0;
        chain[n++] = g;
        if (grammar_flatten(set, g, g, 1, chain, &n, cap, errs) < 0) {
            free(chain);
            /* Drop it: a grammar missing its includes would misclassify.
             * Grammars already resolved may point at it: start again. */
            grammar_free(g);
            memmove(&set->g[i], &set->g[i + 1], (set->n - i - 1) * sizeof *set->g);
            set->n--;
            i = 0;
            continue;
        }
        g->chain = chain;
        g->nchain = n;
        i++;
    }
    return 0;
}

int grammar_default_dirs(char **dirs)
{
    size_t n = 0;
    char exe[4096], path[4096 + 64];
    const char *env = getenv("REIN_GRAMMAR_DIR");
    memset(dirs, 0, (GRAMMAR_DIRS_MAX + 1) * sizeof *dirs);
    if (env && *env) {
        if (!(dirs[n++] = strdup(env)))
            goto fail;
    } else {
        ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (l > 0) {
            exe[l] = '\0';
            char *slash = strrchr(exe, '/');
            if (slash)
                *slash = '\0';
            struct stat st;
            snprintf(path, sizeof path, "%s/../share/rein/grammars", exe);
            bool found = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
            for (int up = 0; !found && up <= GRAMMAR_UP_LEVELS; up++) {
                size_t o = (size_t)snprintf(path, sizeof path, "%s", exe);
                for (int k = 0; k < up && o < sizeof path; k++)
                    o += (size_t)snprintf(path + o, sizeof path - o, "/..");
                if (o < sizeof path)
                    snprintf(path + o, sizeof path - o, "/grammars");
                found = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
            }
            if (found && !(dirs[n++] = realpath(path, NULL)))
                n--;
        }
    }
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(path, sizeof path, "%s/rein/grammars", xdg);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/.config/rein/grammars", home);
    else
        path[0] = '\0';
    if (path[0] && !(dirs[n++] = strdup(path)))
        goto fail;
    return 0;
fail:
    grammar_dirs_free(dirs);
    return -ENOMEM;
}

void grammar_dirs_free(char **dirs)
{
    for (size_t i = 0; dirs && i < GRAMMAR_DIRS_MAX; i++) {
        free(dirs[i]);
        dirs[i] = NULL;
    }
}

int grammar_set_load(grammar_set_t **out, const char *const *dirs, buf_t *errs)
{
    grammar_set_t *set;
    char *defaults[GRAMMAR_DIRS_MAX + 1];
    int rc = grammar_set_new(&set);
    if (rc < 0)
        return rc;
    if (!dirs) {
        if ((rc = grammar_default_dirs(defaults)) < 0)
            goto fail;
        dirs = (const char *const *)defaults;
    }
    for (size_t i = 0; dirs[i] && rc == 0; i++)
        rc = grammar_set_load_dir(set, dirs[i], errs);
    if (dirs == (const char *const *)defaults)
        grammar_dirs_free(defaults);
    if (rc < 0 || (rc = grammar_set_resolve(set, errs)) < 0)
        goto fail;
    *out = set;
    return 0;
fail:
    grammar_set_free(set);
    return rc;
}

/* ------------------------------------------------------------ detection */

/*
 * Which tool's output is this?  The command line is read the way the
 * router reads it (router.h), so the two never disagree about what runs:
 *
 *   - it is split into segments at top-level && || ; & and newlines;
 *   - each segment's first pipeline stage becomes words, redirections
 *     dropped, and the router's wrappers (VAR=x, sudo, env, time, nice,
 *     timeout, stdbuf, nohup, command, exec, ...) are skipped with their
 *     options and operands (router_command_at);
 *   - then the launchers that only this step knows: `sh -c STRING` (any
 *     shell the router knows; STRING is detected as a command line of its
 *     own), `npx [opts] X`, `python -m X`, and a subshell or group `( ... )`
 *     / `{ ...; }` (detected as its inside).
 *
 * A compound line gets the grammar of every segment that has one: in
 * `npm ci && make` each tool prints its own lines, and which line is
 * whose cannot be told from the output, so every line is offered to all
 * of them (grammar_match_any, tier by tier: a hazard in any grammar beats
 * another's outcome or noise).  They come in priority order, the LAST
 * segment's first: in `cd sub && make` or `source env.sh && cargo build`
 * the last is the command the line exists to run, it usually prints most
 * of the output, and its status is the line's; it wins a tie (two
 * hazard rules, two noise rules on one line) and gives a line that no
 * grammar matched its category (`structured`).  At most
 * GRAMMAR_PER_COMMAND_MAX grammars, each once: every grammar costs every
 * line its rules.  Past the bound the earliest segments' grammars are
 * left out: a long line's first steps are usually its setup.
 *
 * Only the command word is looked up, never an argument: `echo make`,
 * `grep make f` and `timeout 5 echo make` detect nothing.
 */

/* How deep `sh -c` strings and ( ) groups are followed. */
#define GRAMMAR_DETECT_DEPTH 4

static const char *grammar_base(const char *w)
{
    const char *s = strrchr(w, '/');
    return s ? s + 1 : w;
}

static bool grammar_is_python(const char *b)
{
    return !strncmp(b, "python", 6) &&
           strspn(b + 6, "0123456789.") == strlen(b + 6);
}

/* The grammar whose commands name argv0; rest (the arguments joined by
 * single spaces) picks one with an `args` pattern over one without. */
static const grammar_t *grammar_lookup(const grammar_set_t *set,
                                       grammar_ctx_t *ctx, const char *argv0,
                                       const char *rest)
{
    const grammar_t *plain = NULL;
    for (size_t k = 0; k < set->n; k++) {
        const grammar_t *g = set->g[k];
        bool hit = false;
        for (size_t c = 0; c < g->ncommands && !hit; c++)
            hit = !strcmp(g->commands[c], argv0);
        if (!hit)
            continue;
        if (!g->args) {
            if (!plain)
                plain = g;
            continue;
        }
        if (grammar_run(g->args, ctx, rest, strlen(rest)))
            return g;
    }
    return plain;
}

/* What detection has found so far: distinct grammars in priority order,
 * at most max of them. */
struct grammar_found {
    const grammar_t **g;
    size_t n, max;
};

static void grammar_found_add(struct grammar_found *f, const grammar_t *g)
{
    if (!g || f->n == f->max)
        return;
    for (size_t i = 0; i < f->n; i++)
        if (f->g[i] == g)
            return;
    f->g[f->n++] = g;
}

static void grammar_detect_line(const grammar_set_t *set, grammar_ctx_t *ctx,
                                const char *line, unsigned depth,
                                struct grammar_found *f);

/* A `( ... )` or `{ ...; }` segment: its inside, as a new string (the last
 * closer ends it; what follows, a redirection or a pipe, is dropped). */
static char *grammar_group_inside(const char *text)
{
    char open = text[0], close = open == '(' ? ')' : '}';
    if (open != '(' && !(open == '{' && (text[1] == ' ' || text[1] == '\t' ||
                                         text[1] == '\n')))
        return NULL;
    const char *end = strrchr(text, close);
    if (!end || end == text)
        return NULL;
    return strndup(text + 1, (size_t)(end - text - 1));
}

/* Adds one segment's grammars: its own, or those of the line inside it. */
static void grammar_detect_seg(const grammar_set_t *set, grammar_ctx_t *ctx,
                               const char *text, unsigned depth,
                               struct grammar_found *f)
{
    char *inside = grammar_group_inside(text);
    if (inside) {
        grammar_detect_line(set, ctx, inside, depth + 1, f);
        free(inside);
        return;
    }
    char **argv;
    size_t argc;
    if (router_words(text, &argv, &argc) < 0)
        return;
    size_t i = router_command_at(argv, argc);
    buf_t rest = BUF_INIT;
    if (i >= argc)
        goto out;
    const char *str = router_shell_string(argv + i, argc - i);
    if (str) {
        grammar_detect_line(set, ctx, str, depth + 1, f);
        goto out;
    }
    const char *b = grammar_base(argv[i]);
    if (!strcmp(b, "npx") && i + 1 < argc) {
        /* npx [--yes] [-p PKG] X: X runs. */
        for (i++; i + 1 < argc && argv[i][0] == '-'; i++)
            if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--package"))
                i++;
        i = i + router_command_at(argv + i, argc - i);
        if (i >= argc)
            goto out;
    } else if (grammar_is_python(b)) {
        /* python [-u] [-W arg] -m X: module X runs, detected as X. */
        for (size_t k = i + 1; k + 1 < argc && argv[k][0] == '-'; k++) {
            if (!strcmp(argv[k], "-m")) {
                i = k + 1;
                break;
            }
            if (!strcmp(argv[k], "-c"))
                break;
            if (!strcmp(argv[k], "-W") || !strcmp(argv[k], "-X"))
                k++;
        }
    }
    for (size_t k = i + 1; k < argc; k++)
        if ((k > i + 1 && buf_append_byte(&rest, ' ') < 0) ||
            buf_append(&rest, argv[k], strlen(argv[k])) < 0)
            goto out;
    grammar_found_add(f, grammar_lookup(set, ctx, grammar_base(argv[i]),
                                        rest.p ? rest.p : ""));
out:
    buf_free(&rest);
    router_words_free(argv);
}

/* Adds the grammars of a command line's segments, the last segment's
 * first, until f is full. */
static void grammar_detect_line(const grammar_set_t *set, grammar_ctx_t *ctx,
                                const char *line, unsigned depth,
                                struct grammar_found *f)
{
    router_seg_t *segs;
    size_t n;
    if (depth > GRAMMAR_DETECT_DEPTH || router_split(line, &segs, &n) < 0)
        return;
    for (size_t i = n; i-- > 0 && f->n < f->max;)
        grammar_detect_seg(set, ctx, segs[i].text, depth, f);
    router_segs_free(segs, n);
}

size_t grammar_set_detect_all(const grammar_set_t *set, grammar_ctx_t *ctx,
                              const char *command,
                              const grammar_t *out[GRAMMAR_PER_COMMAND_MAX])
{
    struct grammar_found f = {.g = out, .max = GRAMMAR_PER_COMMAND_MAX};
    if (set && command)
        grammar_detect_line(set, ctx, command, 0, &f);
    return f.n;
}

const grammar_t *grammar_set_detect(const grammar_set_t *set,
                                    grammar_ctx_t *ctx, const char *command)
{
    const grammar_t *g = NULL;
    struct grammar_found f = {.g = &g, .max = 1};
    if (set && command)
        grammar_detect_line(set, ctx, command, 0, &f);
    return g;
}
