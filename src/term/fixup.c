/*
 * fixup.c — strips output caps an agent bolts onto its commands.
 *
 * Agents habitually end a command with `| head -50` or `2>&1`.  rein already
 * merges stderr into stdout, keeps every byte in a log and condenses what the
 * model sees, so a trailing head/tail only hides output the agent wanted and
 * a trailing 2>&1 does nothing.  rein_bash_fixup() removes both, and nothing
 * else, reporting what it removed so the caller can tell the model.
 *
 * The rules (the behaviour of oh-my-pi's pi-shell fixup, re-derived here):
 *
 *   - Only top-level pipelines are touched: the command is split on `;`,
 *     `&`, `&&` and `||`; anything inside quotes, ( ), $( ), ` `, ${ },
 *     $(( )), <( ), [[ ]], { }, if/for/while/until/select/case bodies is left
 *     alone, though a whole compound command may be a stage.
 *   - In each pipeline of two or more stages, a last stage that is exactly
 *     the word `head` or `tail` followed only by count/quiet/verbose options
 *     (-N, -n N, -nN, -n=N, -c N, -cN, -c=N, --lines[=N], --bytes[=N], -q,
 *     -v, --quiet, --verbose), with no assignment and no redirection, is cut
 *     together with the `|` or `|&` that feeds it and the blanks before it.
 *   - A pipeline that is (or, after that cut, has become) one simple command
 *     whose only redirection is a final literal `2>&1` loses it, unless the
 *     cut pipe was `|&` (that pipe itself duplicates stderr).
 *   - Input with a newline or carriage return, input the lexer sees bash
 *     would reject (unterminated quote, stray or doubled operator,
 *     unbalanced keyword, malformed case or for), input we choose not to understand
 *     (heredoc, function definition, extglob, array assignment, $[ ]), or
 *     input longer than FIXUP_MAX_INPUT is returned unchanged.
 *
 * Where this differs from the reference it is stricter: a bare number is
 * only accepted as the value of -n/-c/--lines/--bytes (`head 5` reads a file
 * named 5), an option that needs a value must have one, and digits are
 * ASCII.  The lexer bails out ("unchanged") whenever it is unsure.
 *
 * The reference parses with a real bash parser; here a small lexer does:
 * one pass, linear in the input, recursive only through nested
 * substitutions and subshells (bounded by FIXUP_MAX_DEPTH), tracking quotes,
 * operators, reserved words at command position and just enough grammar
 * (empty commands, case and for) to refuse what bash refuses.  It records,
 * for the pipeline being read at top level, a summary of its first and last
 * stage; when the pipeline ends the summary decides the cuts.  A cut only
 * removes whole tokens, a stage with its pipe or a redirection, so a
 * command bash accepts stays one it accepts (bash -n agreed on every
 * rewrite of the fuzz corpus).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rein.h"
#include "base/buf.h"
#include "term/fixup.h"

/* Lexer outcome besides 0 and -errno: "not sure this is shell we may
 * rewrite; return the command unchanged". */
#define FIXUP_BAIL 1

unsigned long fixup_fail_nth_alloc;
static unsigned long fixup_alloc_count;

enum fixup_tok_kind { TOK_END, TOK_WORD, TOK_REDIR, TOK_OP };

enum fixup_op {
    OP_PIPE,     /* |   */
    OP_PIPE_AMP, /* |&  */
    OP_AND,      /* &&  */
    OP_OR,       /* ||  */
    OP_SEMI,     /* ;   */
    OP_AMP,      /* &   */
    OP_DSEMI,    /* ;; ;& ;;& (case arms) */
    OP_LPAREN,
    OP_RPAREN,
};

/* Reserved words, and the compound constructs a command list can hold
 * open (the frames: KW_IF to KW_DBRACKET, each in the part it is reading). */
enum fixup_kw {
    KW_NONE,
    KW_IF,        /* the condition, up to then */
    KW_IF_THEN,   /* after then: elif, else or fi may come */
    KW_IF_ELSE,   /* after else: only fi */
    KW_LOOP,      /* for/select header or while/until condition, up to do */
    KW_LOOP_BODY, /* after do, up to done */
    KW_CASE,
    KW_BRACE,
    KW_DBRACKET,
    KW_THEN,
    KW_ELIF,
    KW_ELSE,
    KW_DO,
    KW_FI,
    KW_DONE,
    KW_ESAC,
    KW_RBRACE,
    KW_PREFIX,    /* ! and time: part of the pipeline, not a command */
    KW_REFUSE,    /* function, coproc, a stray in: not worth understanding */
};

/* The kinds of command list fixup_list reads. */
enum fixup_mode {
    LIST_TOP,      /* the whole input, the only one the rules look at */
    LIST_SUBST,    /* $( ), <( ), >( ): may be empty */
    LIST_SUBSHELL, /* ( ): must hold a command */
};

struct fixup_tok {
    enum fixup_tok_kind kind;
    enum fixup_op op;
    size_t start, end; /* byte range in the input */
};

/* What the rules need to know about one top-level pipeline stage. */
struct fixup_stage {
    size_t pipe_pos;   /* offset of the `|` that feeds this stage */
    bool pipe_amp;     /* ... and it was `|&` */
    bool compound;     /* ( ), { }, if, a loop, case, [[ ]] or (( )) */
    size_t n_tokens;   /* words and redirections seen at top level */
    size_t n_redirs;
    bool has_name;     /* a word that is not an assignment */
    bool cap_ok;       /* head/tail with only safe options so far */
    bool want_count;   /* the last option (-n, -c...) still needs its N */
    bool last_2to1;    /* the last token is the redirection `2>&1` */
    size_t last_start, last_end; /* the last token's range */
};

struct fixup_span {
    size_t start, end;
};

struct fixup_ctx {
    const char *s;
    size_t len;
    size_t pos;
    unsigned depth;          /* nesting of substitutions and subshells */
    size_t n_stages;         /* of the top-level pipeline being read */
    struct fixup_stage first, cur;
    bool need_pipeline;      /* after && or ||, a pipeline must follow */
    buf_t cuts;              /* struct fixup_span, ascending, disjoint */
    buf_t pieces;            /* struct fixup_span, in report order */
};

static int fixup_list(struct fixup_ctx *cx, enum fixup_mode mode);
static int fixup_word(struct fixup_ctx *cx);
static int fixup_dquote(struct fixup_ctx *cx);

/* ------------------------------------------------------------ allocation */

/* Every allocation asks here first, so a test can fail each one in turn. */
static bool fixup_alloc_fails(void)
{
    if (!fixup_fail_nth_alloc)
        return false;
    return ++fixup_alloc_count == fixup_fail_nth_alloc;
}

static int fixup_append(buf_t *b, const void *p, size_t n)
{
    if (fixup_alloc_fails())
        return -ENOMEM;
    return buf_append(b, p, n);
}

static char *fixup_strndup(const char *s, size_t n)
{
    if (fixup_alloc_fails())
        return NULL;
    return strndup(s, n);
}

static char **fixup_strv_new(size_t n)
{
    if (fixup_alloc_fails())
        return NULL;
    return calloc(n + 1, sizeof(char *));
}

/* ------------------------------------------------------------- characters */

static bool fixup_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Characters that end an unquoted word. */
static bool fixup_meta(char c)
{
    return fixup_blank(c) || c == '|' || c == '&' || c == ';' || c == '(' ||
           c == ')' || c == '<' || c == '>';
}

static bool fixup_digits(const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

static bool fixup_is(const char *p, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(p, lit, n) == 0;
}

/* --lines=20: the option spelled with its count attached. */
static bool fixup_long_count(const char *p, size_t n, const char *opt)
{
    size_t l = strlen(opt);
    return n > l && memcmp(p, opt, l) == 0 && fixup_digits(p + l, n - l);
}

/* NAME=, NAME+=: a word bash treats as an assignment before the command. */
static bool fixup_assignment(const char *p, size_t n)
{
    size_t i = 0;
    if (n == 0 || !(p[0] == '_' || (p[0] >= 'A' && p[0] <= 'Z') ||
                    (p[0] >= 'a' && p[0] <= 'z')))
        return false;
    while (i < n && (p[i] == '_' || (p[i] >= 'A' && p[i] <= 'Z') ||
                     (p[i] >= 'a' && p[i] <= 'z') ||
                     (p[i] >= '0' && p[i] <= '9')))
        i++;
    if (i < n && p[i] == '+')
        i++;
    return i < n && p[i] == '=';
}

/* ---------------------------------------------------------------- quoting */

/* '...': no escapes inside. */
static int fixup_squote(struct fixup_ctx *cx)
{
    const char *q = memchr(cx->s + cx->pos + 1, '\'', cx->len - cx->pos - 1);
    if (!q)
        return FIXUP_BAIL;
    cx->pos = (size_t)(q - cx->s) + 1;
    return 0;
}

/* $'...' (pos at the quote): backslash escapes the next byte. */
static int fixup_ansi_quote(struct fixup_ctx *cx)
{
    for (cx->pos++; cx->pos < cx->len; cx->pos++) {
        if (cx->s[cx->pos] == '\\')
            cx->pos++;
        else if (cx->s[cx->pos] == '\'') {
            cx->pos++;
            return 0;
        }
    }
    return FIXUP_BAIL;
}

/* `...`: the first unescaped backquote ends it.  What is inside is never at
 * top level, so it need not be understood, only skipped. */
static int fixup_backtick(struct fixup_ctx *cx)
{
    for (cx->pos++; cx->pos < cx->len; cx->pos++) {
        if (cx->s[cx->pos] == '\\')
            cx->pos++;
        else if (cx->s[cx->pos] == '`') {
            cx->pos++;
            return 0;
        }
    }
    return FIXUP_BAIL;
}

/* A nested command list up to its `)`: ( ), <( ), >( ). */
static int fixup_sub(struct fixup_ctx *cx, enum fixup_mode mode)
{
    if (cx->depth >= FIXUP_MAX_DEPTH)
        return FIXUP_BAIL;
    cx->depth++;
    int rc = fixup_list(cx, mode);
    cx->depth--;
    return rc;
}

static int fixup_dollar(struct fixup_ctx *cx, bool in_dquote);
static int fixup_step(struct fixup_ctx *cx);

/* $(( ... )) and (( ... )), pos after the two parens: balanced parens up to
 * a `))`.  `$((a) | b)` (a subshell in a substitution) does not end in `))`
 * where expected and bails: rare, and never worth the risk. */
static int fixup_arith(struct fixup_ctx *cx)
{
    unsigned open = 0;
    while (cx->pos < cx->len) {
        char c = cx->s[cx->pos];
        int rc = 0;
        if (c == '(') {
            open++;
            cx->pos++;
        } else if (c == ')') {
            if (open) {
                open--;
                cx->pos++;
            } else if (cx->pos + 1 < cx->len && cx->s[cx->pos + 1] == ')') {
                cx->pos += 2;
                return 0;
            } else {
                return FIXUP_BAIL;
            }
        } else {
            rc = fixup_step(cx);
        }
        if (rc)
            return rc;
    }
    return FIXUP_BAIL;
}

/* ${ ... }, pos after the brace.  Bash ends it at the first unquoted `}`
 * (braces do not nest), and honours quotes inside even within "...". */
static int fixup_param(struct fixup_ctx *cx)
{
    while (cx->pos < cx->len) {
        char c = cx->s[cx->pos];
        int rc = 0;
        if (c == '}') {
            cx->pos++;
            return 0;
        } else {
            rc = fixup_step(cx);
        }
        if (rc)
            return rc;
    }
    return FIXUP_BAIL;
}

/* pos at a `$`.  Every recursive path of the lexer passes through here or
 * fixup_sub, so the depth bound is checked in both. */
static int fixup_dollar(struct fixup_ctx *cx, bool in_dquote)
{
    const char *s = cx->s;
    size_t p = cx->pos + 1;
    char c = p < cx->len ? s[p] : '\0';
    int rc;

    if (c == '(' || c == '{') {
        if (cx->depth >= FIXUP_MAX_DEPTH)
            return FIXUP_BAIL;
        cx->depth++;
        if (c == '{') {
            cx->pos = p + 1;
            rc = fixup_param(cx);
        } else if (p + 1 < cx->len && s[p + 1] == '(') {
            cx->pos = p + 2;
            rc = fixup_arith(cx);
        } else {
            cx->pos = p + 1;
            rc = fixup_list(cx, LIST_SUBST);
        }
        cx->depth--;
        return rc;
    }
    if (in_dquote) { /* $' and $" are plain text inside "..." */
        cx->pos = p;
        return 0;
    }
    if (c == '\'') {
        cx->pos = p;
        return fixup_ansi_quote(cx);
    }
    if (c == '"') {
        cx->pos = p;
        return fixup_dquote(cx);
    }
    if (c == '[') /* $[ ] arithmetic: obsolete, bail */
        return FIXUP_BAIL;
    cx->pos = p;
    return 0;
}

/* "...", pos at the opening quote. */
static int fixup_dquote(struct fixup_ctx *cx)
{
    cx->pos++;
    while (cx->pos < cx->len) {
        char c = cx->s[cx->pos];
        int rc = 0;
        if (c == '"') {
            cx->pos++;
            return 0;
        } else if (c == '\\') {
            if (cx->pos + 1 >= cx->len)
                return FIXUP_BAIL;
            cx->pos += 2;
        } else if (c == '`') {
            rc = fixup_backtick(cx);
        } else if (c == '$') {
            rc = fixup_dollar(cx, true);
        } else {
            cx->pos++;
        }
        if (rc)
            return rc;
    }
    return FIXUP_BAIL;
}

/* Steps over the unit at pos outside double quotes — an escape, a quoted
 * string, a backquote or $ expansion, or one plain byte — so every
 * scanner (words, ${...}, $((...))) treats quoting the same way.
 * 0 or FIXUP_BAIL. */
static int fixup_step(struct fixup_ctx *cx)
{
    switch (cx->s[cx->pos]) {
    case '\\':
        if (cx->pos + 1 >= cx->len)
            return FIXUP_BAIL;
        cx->pos += 2;
        return 0;
    case '\'':
        return fixup_squote(cx);
    case '"':
        return fixup_dquote(cx);
    case '`':
        return fixup_backtick(cx);
    case '$':
        return fixup_dollar(cx, false);
    default:
        cx->pos++;
        return 0;
    }
}

/* ------------------------------------------------------------------ lexer */

/* One word, pos at its first byte (not a blank, not an operator, except the
 * `<(`/`>(` of a process substitution). */
static int fixup_word(struct fixup_ctx *cx)
{
    size_t start = cx->pos;
    int rc = 0;

    if (cx->pos + 1 < cx->len && (cx->s[cx->pos] == '<' || cx->s[cx->pos] == '>') &&
        cx->s[cx->pos + 1] == '(') {
        cx->pos += 2;
        rc = fixup_sub(cx, LIST_SUBST);
        if (rc)
            return rc;
    }
    while (cx->pos < cx->len && !fixup_meta(cx->s[cx->pos])) {
        /* A trailing lone backslash (a continuation with no next line)
         * bails inside fixup_step. */
        if ((rc = fixup_step(cx)) != 0)
            return rc;
    }
    return cx->pos > start ? 0 : FIXUP_BAIL;
}

/* A redirection operator at pos (any fd number already consumed), then its
 * target word. */
static int fixup_redirect(struct fixup_ctx *cx)
{
    const char *s = cx->s + cx->pos;
    size_t left = cx->len - cx->pos;
    bool dup = left >= 2 && (memcmp(s, "<&", 2) == 0 || memcmp(s, ">&", 2) == 0);

    if (left >= 3 && memcmp(s, "<<<", 3) == 0)
        cx->pos += 3;
    else if (left >= 2 && memcmp(s, "<<", 2) == 0)
        return FIXUP_BAIL; /* a heredoc needs lines we never rewrite */
    else if (left >= 3 && memcmp(s, "&>>", 3) == 0)
        cx->pos += 3;
    else if (left >= 2 && (memcmp(s, "<>", 2) == 0 || memcmp(s, "<&", 2) == 0 ||
                           memcmp(s, ">>", 2) == 0 || memcmp(s, ">|", 2) == 0 ||
                           memcmp(s, ">&", 2) == 0 || memcmp(s, "&>", 2) == 0))
        cx->pos += 2;
    else
        cx->pos += 1;
    while (cx->pos < cx->len && fixup_blank(cx->s[cx->pos]))
        cx->pos++;
    if (cx->pos >= cx->len || cx->s[cx->pos] == '#')
        return FIXUP_BAIL;
    if (fixup_meta(cx->s[cx->pos]) &&
        !(cx->pos + 1 < cx->len &&
          (cx->s[cx->pos] == '<' || cx->s[cx->pos] == '>') &&
          cx->s[cx->pos + 1] == '('))
        return FIXUP_BAIL;
    /* `>0>2`: bash reads 0> as the next redirection's fd, leaving the
     * first without a target (after >& and <& the digits are the target). */
    size_t d = cx->pos;
    while (d < cx->len && cx->s[d] >= '0' && cx->s[d] <= '9')
        d++;
    if (!dup && d > cx->pos && d < cx->len &&
        (cx->s[d] == '<' || cx->s[d] == '>'))
        return FIXUP_BAIL;
    return fixup_word(cx);
}

/* The next token.  A `#` where a token starts begins a comment, which (no
 * newlines here) runs to the end of the input. */
static int fixup_next(struct fixup_ctx *cx, struct fixup_tok *t)
{
    const char *s = cx->s;

    while (cx->pos < cx->len && fixup_blank(s[cx->pos]))
        cx->pos++;
    t->start = cx->pos;
    t->kind = TOK_OP;
    if (cx->pos >= cx->len || s[cx->pos] == '#') {
        cx->pos = cx->len;
        t->kind = TOK_END;
        t->end = cx->pos;
        return 0;
    }

    char c = s[cx->pos];
    char n1 = cx->pos + 1 < cx->len ? s[cx->pos + 1] : '\0';
    char n2 = cx->pos + 2 < cx->len ? s[cx->pos + 2] : '\0';
    int rc = 0;

    switch (c) {
    case '|':
        t->op = n1 == '|' ? OP_OR : n1 == '&' ? OP_PIPE_AMP : OP_PIPE;
        cx->pos += t->op == OP_PIPE ? 1 : 2;
        break;
    case '&':
        if (n1 == '>') {
            t->kind = TOK_REDIR;
            rc = fixup_redirect(cx);
        } else {
            t->op = n1 == '&' ? OP_AND : OP_AMP;
            cx->pos += t->op == OP_AND ? 2 : 1;
        }
        break;
    case ';':
        if (n1 == ';') {
            t->op = OP_DSEMI;
            cx->pos += n2 == '&' ? 3 : 2;
        } else if (n1 == '&') {
            t->op = OP_DSEMI;
            cx->pos += 2;
        } else {
            t->op = OP_SEMI;
            cx->pos += 1;
        }
        break;
    case '(':
        t->op = OP_LPAREN;
        cx->pos++;
        break;
    case ')':
        t->op = OP_RPAREN;
        cx->pos++;
        break;
    case '<':
    case '>':
        if (n1 == '(') {
            t->kind = TOK_WORD;
            rc = fixup_word(cx);
        } else {
            t->kind = TOK_REDIR;
            rc = fixup_redirect(cx);
        }
        break;
    default: {
        /* Digits right before < or > are the redirection's fd: `2>&1`. */
        size_t d = cx->pos;
        while (d < cx->len && s[d] >= '0' && s[d] <= '9')
            d++;
        if (d > cx->pos && d < cx->len && (s[d] == '<' || s[d] == '>') &&
            !(d + 1 < cx->len && s[d + 1] == '(')) {
            cx->pos = d;
            t->kind = TOK_REDIR;
            rc = fixup_redirect(cx);
        } else {
            t->kind = TOK_WORD;
            rc = fixup_word(cx);
        }
        break;
    }
    }
    t->end = cx->pos;
    return rc;
}

/* A word at command position that bash treats as a reserved word. */
static enum fixup_kw fixup_keyword(const char *p, size_t n)
{
    static const struct {
        const char *word;
        enum fixup_kw kw;
    } words[] = {
        {"if", KW_IF},         {"for", KW_LOOP},      {"select", KW_LOOP},
        {"while", KW_LOOP},    {"until", KW_LOOP},    {"case", KW_CASE},
        {"{", KW_BRACE},       {"[[", KW_DBRACKET},   {"fi", KW_FI},
        {"done", KW_DONE},     {"esac", KW_ESAC},     {"}", KW_RBRACE},
        {"then", KW_THEN},     {"else", KW_ELSE},     {"elif", KW_ELIF},
        {"do", KW_DO},         {"!", KW_PREFIX},      {"time", KW_PREFIX},
        {"function", KW_REFUSE}, {"coproc", KW_REFUSE}, {"in", KW_REFUSE},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (fixup_is(p, n, words[i].word))
            return words[i].kw;
    return KW_NONE;
}

/* --------------------------------------------------------------- the rules */

/*
 * One argument of a head/tail being considered for removal.  Only options
 * that merely limit or label output pass; anything else (a file, +N, -f,
 * --follow, --help, a quoted word) keeps the stage.
 */
static bool fixup_cap_arg(struct fixup_stage *st, const char *w, size_t n)
{
    if (st->want_count) {
        st->want_count = false;
        return fixup_digits(w, n);
    }
    if (fixup_is(w, n, "-n") || fixup_is(w, n, "-c") ||
        fixup_is(w, n, "--lines") || fixup_is(w, n, "--bytes")) {
        st->want_count = true;
        return true;
    }
    if (fixup_is(w, n, "-q") || fixup_is(w, n, "-v") ||
        fixup_is(w, n, "--quiet") || fixup_is(w, n, "--verbose"))
        return true;
    if (n >= 2 && w[0] == '-' && fixup_digits(w + 1, n - 1))
        return true; /* -20 */
    if (n >= 3 && w[0] == '-' && (w[1] == 'n' || w[1] == 'c')) {
        size_t skip = w[2] == '=' ? 3 : 2; /* -n20, -n=20 */
        return fixup_digits(w + skip, n - skip);
    }
    return fixup_long_count(w, n, "--lines=") ||
           fixup_long_count(w, n, "--bytes=");
}

static bool fixup_stage_empty(const struct fixup_stage *st)
{
    return st->n_tokens == 0 && !st->compound;
}

/* A word or redirection of the current top-level stage. */
static int fixup_stage_token(struct fixup_ctx *cx, const struct fixup_tok *t)
{
    struct fixup_stage *st = &cx->cur;
    const char *w = cx->s + t->start;
    size_t n = t->end - t->start;

    if (t->kind == TOK_WORD) {
        if (st->compound) /* `(a) b`, `{ a; } b`: not shell */
            return FIXUP_BAIL;
        if (st->n_tokens == 0)
            st->cap_ok = fixup_is(w, n, "head") || fixup_is(w, n, "tail");
        else if (st->cap_ok)
            st->cap_ok = fixup_cap_arg(st, w, n);
        if (!st->has_name && !fixup_assignment(w, n))
            st->has_name = true;
        st->last_2to1 = false;
    } else {
        st->n_redirs++;
        st->cap_ok = false;
        st->last_2to1 = fixup_is(w, n, "2>&1");
    }
    st->n_tokens++;
    st->last_start = t->start;
    st->last_end = t->end;
    return 0;
}

/* A compound command opens at top level: it must start its stage. */
static int fixup_stage_compound(struct fixup_ctx *cx)
{
    if (!fixup_stage_empty(&cx->cur))
        return FIXUP_BAIL;
    cx->cur.compound = true;
    return 0;
}

static void fixup_stage_reset(struct fixup_stage *st)
{
    memset(st, 0, sizeof *st);
    st->pipe_pos = SIZE_MAX;
}

/* Start of a cut: back over the blanks before pos, so the words on either
 * side close up. */
static size_t fixup_back_blanks(const struct fixup_ctx *cx, size_t pos)
{
    while (pos > 0 && fixup_blank(cx->s[pos - 1]))
        pos--;
    return pos;
}

static int fixup_span_push(buf_t *b, size_t start, size_t end)
{
    struct fixup_span sp = {start, end};
    return fixup_append(b, &sp, sizeof sp);
}

/* The top-level pipeline just ended: apply the two rules to it. */
static int fixup_pipeline_end(struct fixup_ctx *cx)
{
    struct fixup_stage *last = &cx->cur;
    const struct fixup_stage *target = NULL;
    bool cut_cap = false;
    int rc;

    if (cx->n_stages >= 2 && last->cap_ok && !last->want_count)
        cut_cap = true;

    /* 2>&1 is redundant only where nothing reads the pipe after it. */
    if (!cut_cap && cx->n_stages == 1)
        target = last;
    else if (cut_cap && cx->n_stages == 2 && !last->pipe_amp)
        target = &cx->first;
    if (target && !target->compound && target->has_name &&
        target->n_redirs == 1 && target->last_2to1 &&
        target->last_start > 0 && fixup_blank(cx->s[target->last_start - 1])) {
        /* Cuts are kept in source order: this one precedes the pipe's. */
        rc = fixup_span_push(&cx->cuts, fixup_back_blanks(cx, target->last_start),
                             target->last_end);
        if (rc < 0)
            return rc;
    } else {
        target = NULL;
    }

    if (cut_cap) {
        rc = fixup_span_push(&cx->cuts, fixup_back_blanks(cx, last->pipe_pos),
                             last->last_end);
        if (rc < 0)
            return rc;
        rc = fixup_span_push(&cx->pieces, last->pipe_pos, last->last_end);
        if (rc < 0)
            return rc;
    }
    if (target) {
        rc = fixup_span_push(&cx->pieces, target->last_start, target->last_end);
        if (rc < 0)
            return rc;
    }
    cx->n_stages = 1;
    fixup_stage_reset(&cx->first);
    fixup_stage_reset(&cx->cur);
    return 0;
}

/* A control operator at top level. */
static int fixup_operator(struct fixup_ctx *cx, const struct fixup_tok *t)
{
    if (fixup_stage_empty(&cx->cur)) /* `| a`, `a | | b`, `; a`, `a && ;` */
        return FIXUP_BAIL;
    if (t->op == OP_PIPE || t->op == OP_PIPE_AMP) {
        if (cx->n_stages == 1)
            cx->first = cx->cur;
        cx->n_stages++;
        fixup_stage_reset(&cx->cur);
        cx->cur.pipe_pos = t->start;
        cx->cur.pipe_amp = t->op == OP_PIPE_AMP;
        return 0;
    }
    cx->need_pipeline = t->op == OP_AND || t->op == OP_OR;
    return fixup_pipeline_end(cx);
}

static int fixup_end(struct fixup_ctx *cx)
{
    if (fixup_stage_empty(&cx->cur)) {
        /* Fine after `;` or `&` or for an empty command, not after
         * `|`, `&&` or `||`. */
        if (cx->n_stages > 1 || cx->need_pipeline)
            return FIXUP_BAIL;
        return 0;
    }
    return fixup_pipeline_end(cx);
}

/* What the grammar of case and for wants next:
 *   case WORD in [(] PATTERN [| PATTERN]... ) LIST ;; ... esac
 *   for NAME [in WORD... ;] do LIST done        (also for NAME; do) */
enum fixup_expect {
    EXPECT_NOTHING,
    EXPECT_CASE_WORD,
    EXPECT_CASE_IN,
    EXPECT_PATTERN_FIRST, /* a pattern, `(`, or esac */
    EXPECT_PATTERN_WORD,
    EXPECT_PATTERN_SEP,   /* | or ) */
    EXPECT_FOR_NAME,
    EXPECT_FOR_IN,        /* in, ; or do */
    EXPECT_FOR_WORDS,     /* words up to ; */
    EXPECT_DO,
};

/* `a[` at command position: bash reads an array subscript up to its `]`
 * across blanks and operators (`a[1 | 2]=x` is one word).  A word that
 * opens one without closing it is not understood here. */
static bool fixup_open_subscript(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == '_' || (p[i] >= 'A' && p[i] <= 'Z') ||
                     (p[i] >= 'a' && p[i] <= 'z') ||
                     (i > 0 && p[i] >= '0' && p[i] <= '9')))
        i++;
    return i > 0 && i < n && p[i] == '[' && !memchr(p + i, ']', n - i);
}

/* The next token while the grammar of case or for wants something
 * particular: 0 when consumed (continue), -1 when the token is to be read as
 * usual, FIXUP_BAIL when it is not what bash would accept. */
static int fixup_expected(enum fixup_expect *expect, const struct fixup_tok *t,
                          const char *w, size_t n, bool *body)
{
    bool word = t->kind == TOK_WORD;
    bool op = t->kind == TOK_OP;
    enum fixup_expect was = *expect;

    *expect = EXPECT_NOTHING;
    *body = false;
    switch (was) {
    case EXPECT_CASE_WORD:
        *expect = EXPECT_CASE_IN;
        return word ? 0 : FIXUP_BAIL;
    case EXPECT_CASE_IN:
        *expect = EXPECT_PATTERN_FIRST;
        return word && fixup_is(w, n, "in") ? 0 : FIXUP_BAIL;
    case EXPECT_PATTERN_FIRST:
        if (word && fixup_is(w, n, "esac"))
            return -1; /* the closer, read as usual */
        if (op && t->op == OP_LPAREN) {
            *expect = EXPECT_PATTERN_WORD;
            return 0;
        }
        __attribute__((fallthrough));
    case EXPECT_PATTERN_WORD:
        *expect = EXPECT_PATTERN_SEP;
        return word ? 0 : FIXUP_BAIL;
    case EXPECT_PATTERN_SEP:
        if (op && t->op == OP_PIPE) {
            *expect = EXPECT_PATTERN_WORD;
            return 0;
        }
        *body = true;
        return op && t->op == OP_RPAREN ? 0 : FIXUP_BAIL;
    case EXPECT_FOR_NAME:
        *expect = EXPECT_FOR_IN;
        return word ? 0 : FIXUP_BAIL;
    case EXPECT_FOR_IN:
        if (word && fixup_is(w, n, "in")) {
            *expect = EXPECT_FOR_WORDS;
            return 0;
        }
        break;
    case EXPECT_FOR_WORDS:
        if (word) {
            *expect = EXPECT_FOR_WORDS;
            return 0;
        }
        break;
    case EXPECT_DO:
    case EXPECT_NOTHING:
    default:
        break;
    }
    if (was == EXPECT_FOR_IN || was == EXPECT_FOR_WORDS) {
        if (op && t->op == OP_SEMI) {
            *expect = EXPECT_DO;
            return 0;
        }
    }
    if (was == EXPECT_FOR_IN || was == EXPECT_DO) {
        *body = true;
        return word && fixup_is(w, n, "do") ? 0 : FIXUP_BAIL;
    }
    return FIXUP_BAIL;
}

/*
 * A command list: the whole input (LIST_TOP) or the inside of ( ), $( ),
 * <( ) or >( ) (returns after consuming the closing paren).  Only the
 * outermost list with no compound keyword open feeds the rules; everything
 * else is lexed to find where it ends and to check it is well formed
 * enough, since input bash would reject is left alone.
 */
static int fixup_list(struct fixup_ctx *cx, enum fixup_mode mode)
{
    unsigned char kw[FIXUP_MAX_NEST]; /* open frames, enum fixup_kw */
    size_t nkw = 0;
    bool nested = mode != LIST_TOP;
    bool cmdpos = true;      /* the next word may be a reserved word */
    bool empty = true;       /* no command yet since the last operator */
    bool need_more = false;  /* and after |, &&, || one must come */
    bool after_pipe = false; /* the last token was | or |& */
    bool seen = false;       /* a command since the last frame keyword */
    enum fixup_expect expect = EXPECT_NOTHING;
    struct fixup_tok t;
    int rc;

    for (;;) {
        rc = fixup_next(cx, &t);
        if (rc)
            return rc;
        bool top = !nested && nkw == 0;
        enum fixup_kw open = nkw ? (enum fixup_kw)kw[nkw - 1] : KW_NONE;
        const char *w = cx->s + t.start;
        size_t n = t.end - t.start;

        if (expect != EXPECT_NOTHING) {
            bool body;
            rc = fixup_expected(&expect, &t, w, n, &body);
            if (rc > 0)
                return rc;
            if (body) { /* a case arm's or a loop's commands start */
                if (open == KW_LOOP)
                    kw[nkw - 1] = KW_LOOP_BODY;
                cmdpos = true;
                empty = true;
                seen = false;
            }
            if (rc == 0)
                continue;
            cmdpos = true; /* esac where a pattern could be */
        }
        bool was_pipe = after_pipe;
        after_pipe = t.kind == TOK_OP && (t.op == OP_PIPE || t.op == OP_PIPE_AMP);

        if (t.kind == TOK_END) {
            if (nested || nkw || (empty && need_more))
                return FIXUP_BAIL;
            return fixup_end(cx);
        }
        if (t.kind == TOK_REDIR) {
            /* A redirection may come before the command name, so the
             * command position stays as it was. */
            if (top && (rc = fixup_stage_token(cx, &t)))
                return rc;
            empty = need_more = false;
            seen = true;
            continue;
        }
        if (t.kind == TOK_OP) {
            switch (t.op) {
            case OP_LPAREN:
                /* A subshell, an arithmetic command or a [[ ]] group;
                 * anywhere else a `(` is a function definition, an array
                 * or an extglob: bail. */
                if (!cmdpos && open != KW_DBRACKET)
                    return FIXUP_BAIL;
                if (top && (rc = fixup_stage_compound(cx)))
                    return rc;
                if (cmdpos && cx->pos < cx->len && cx->s[cx->pos] == '(') {
                    cx->pos++;
                    if (cx->depth >= FIXUP_MAX_DEPTH)
                        return FIXUP_BAIL;
                    cx->depth++;
                    rc = fixup_arith(cx);
                    cx->depth--;
                } else {
                    rc = fixup_sub(cx, LIST_SUBSHELL);
                }
                if (rc)
                    return rc;
                cmdpos = false;
                empty = need_more = false;
                seen = true;
                continue;
            case OP_RPAREN:
                if (!nested || nkw || (empty && need_more) ||
                    (mode == LIST_SUBSHELL && !seen))
                    return FIXUP_BAIL;
                return 0;
            case OP_DSEMI:
                if (open != KW_CASE || need_more)
                    return FIXUP_BAIL;
                expect = EXPECT_PATTERN_FIRST;
                empty = true;
                continue;
            default: /* | |& && || ; & */
                if (empty)
                    return FIXUP_BAIL;
                if (top && (rc = fixup_operator(cx, &t)))
                    return rc;
                cmdpos = true;
                empty = true;
                need_more = t.op != OP_SEMI && t.op != OP_AMP;
                continue;
            }
        }

        /* A word. */
        if (open == KW_DBRACKET) { /* only ]] means anything in there */
            if (fixup_is(w, n, "]]")) {
                nkw--;
                seen = true;
            }
            cmdpos = false;
            continue;
        }
        enum fixup_kw k = cmdpos ? fixup_keyword(w, n) : KW_NONE;
        enum fixup_kw next = KW_NONE; /* what a middle keyword turns open into */
        switch (k) {
        case KW_IF:
        case KW_LOOP:
        case KW_CASE:
        case KW_BRACE:
        case KW_DBRACKET:
            if (nkw == FIXUP_MAX_NEST)
                return FIXUP_BAIL;
            if (top && (rc = fixup_stage_compound(cx)))
                return rc;
            kw[nkw++] = (unsigned char)k;
            /* if, while, until and { take a command next. */
            cmdpos = k == KW_IF || k == KW_BRACE ||
                     (k == KW_LOOP && (fixup_is(w, n, "while") ||
                                       fixup_is(w, n, "until")));
            if (k == KW_CASE)
                expect = EXPECT_CASE_WORD;
            else if (k == KW_LOOP && !cmdpos)
                expect = EXPECT_FOR_NAME;
            empty = k != KW_DBRACKET;
            need_more = false;
            seen = false;
            continue;
        case KW_THEN:
        case KW_ELIF:
        case KW_ELSE:
        case KW_DO:
            if (k == KW_THEN && open == KW_IF)
                next = KW_IF_THEN;
            else if (k == KW_ELIF && open == KW_IF_THEN)
                next = KW_IF;
            else if (k == KW_ELSE && open == KW_IF_THEN)
                next = KW_IF_ELSE;
            else if (k == KW_DO && open == KW_LOOP)
                next = KW_LOOP_BODY;
            /* `if then`, `while a && do`: each part needs a command. */
            if (next == KW_NONE || need_more || !seen)
                return FIXUP_BAIL;
            kw[nkw - 1] = (unsigned char)next;
            cmdpos = true;
            empty = true;
            seen = false;
            continue;
        case KW_FI:
        case KW_DONE:
        case KW_ESAC:
        case KW_RBRACE:
            if ((k == KW_FI && open != KW_IF_THEN && open != KW_IF_ELSE) ||
                (k == KW_DONE && open != KW_LOOP_BODY) ||
                (k == KW_ESAC && open != KW_CASE) ||
                (k == KW_RBRACE && open != KW_BRACE) || need_more)
                return FIXUP_BAIL;
            if (k != KW_ESAC && !seen) /* `do done`, `{ }` */
                return FIXUP_BAIL;
            nkw--;
            cmdpos = false;
            empty = false;
            seen = true;
            continue;
        case KW_PREFIX:
            /* `! a | b`, `time a | b`: they belong to the whole pipeline,
             * so only where one starts (bash takes `a | time b`, but it
             * is no cap we would remove). */
            if (!empty || (top && cx->n_stages > 1) ||
                (was_pipe && fixup_is(w, n, "!")))
                return FIXUP_BAIL;
            continue;
        case KW_REFUSE:
            return FIXUP_BAIL;
        case KW_NONE:
        default:
            break;
        }
        if (cmdpos && fixup_open_subscript(w, n))
            return FIXUP_BAIL;
        if (top && (rc = fixup_stage_token(cx, &t)))
            return rc;
        if (!fixup_assignment(w, n))
            cmdpos = false;
        empty = need_more = false;
        seen = true;
    }
}

/* ------------------------------------------------------------- the result */

/* out gets a copy of the input and an empty list. */
static int fixup_unchanged(const char *command, size_t len, rein_fixup_t *out)
{
    out->command = fixup_strndup(command, len);
    out->stripped = fixup_strv_new(0);
    if (!out->command || !out->stripped) {
        rein_fixup_free(out);
        return -ENOMEM;
    }
    return 0;
}

/* out gets the input minus the cuts, and the pieces as strings. */
static int fixup_build(const struct fixup_ctx *cx, rein_fixup_t *out)
{
    const struct fixup_span *cuts = (const struct fixup_span *)cx->cuts.p;
    const struct fixup_span *pieces = (const struct fixup_span *)cx->pieces.p;
    size_t n_cuts = cx->cuts.len / sizeof *cuts;
    size_t n_pieces = cx->pieces.len / sizeof *pieces;
    buf_t cmd = BUF_INIT;
    size_t at = 0;
    int rc;

    if (fixup_alloc_fails()) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = buf_reserve(&cmd, cx->len)) < 0)
        goto fail;
    for (size_t i = 0; i < n_cuts; i++) {
        /* Room is reserved: these appends cannot fail. */
        buf_append(&cmd, cx->s + at, cuts[i].start - at);
        at = cuts[i].end;
    }
    buf_append(&cmd, cx->s + at, cx->len - at);
    while (cmd.len > 0 && fixup_blank(cmd.p[cmd.len - 1]))
        cmd.len--;
    cmd.p[cmd.len] = '\0';

    out->stripped = fixup_strv_new(n_pieces);
    if (!out->stripped) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n_pieces; i++) {
        out->stripped[i] = fixup_strndup(cx->s + pieces[i].start,
                                         pieces[i].end - pieces[i].start);
        if (!out->stripped[i]) {
            rc = -ENOMEM;
            goto fail;
        }
        out->n_stripped++;
    }
    out->command = buf_detach(&cmd);
    return 0;

fail:
    buf_free(&cmd);
    rein_fixup_free(out);
    return rc;
}

/*
 * rein_bash_fixup — see rein.h and the top of this file for the rules.
 * On success *out holds the rewritten command (a copy of the input when
 * nothing applied) and the removed pieces, head/tail before 2>&1 within a
 * pipeline and pipelines in source order; release it with rein_fixup_free.
 * -EINVAL for a NULL argument, -ENOMEM when memory runs out; on failure
 * *out is zeroed.
 */
int rein_bash_fixup(const char *command, rein_fixup_t *out)
{
    struct fixup_ctx cx;
    int rc;

    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    if (!command)
        return -EINVAL;
    if (fixup_fail_nth_alloc) /* tests only: leave shared state alone */
        fixup_alloc_count = 0;

    size_t len = strlen(command);
    if (len > FIXUP_MAX_INPUT || strpbrk(command, "\r\n"))
        return fixup_unchanged(command, len, out);

    memset(&cx, 0, sizeof cx);
    cx.s = command;
    cx.len = len;
    cx.n_stages = 1;
    fixup_stage_reset(&cx.first);
    fixup_stage_reset(&cx.cur);

    rc = fixup_list(&cx, LIST_TOP);
    if (rc < 0)
        goto done;
    if (rc == FIXUP_BAIL || cx.pieces.len == 0)
        rc = fixup_unchanged(command, len, out);
    else
        rc = fixup_build(&cx, out);

done:
    buf_free(&cx.cuts);
    buf_free(&cx.pieces);
    return rc;
}

/* rein_fixup_free — releases what rein_bash_fixup handed out and zeroes *f.
 * NULL and a zeroed struct are fine. */
void rein_fixup_free(rein_fixup_t *f)
{
    if (!f)
        return;
    if (f->stripped)
        for (size_t i = 0; f->stripped[i]; i++)
            free(f->stripped[i]);
    free(f->stripped);
    free(f->command);
    memset(f, 0, sizeof *f);
}
