/*
 * router.c — the category router (see router.h).
 *
 * Three steps, each small enough to read in one sitting:
 *
 *   1. A shell-aware scanner finds top-level separators: `&&`, `||`, `;`,
 *      `&` and newlines between segments, `|` and `|&` between pipeline
 *      stages.  Quotes, backslashes, $( ), ( ), { } and backquotes hide
 *      what is inside them; `2>&1`, `&>` and `>&` are redirections, not
 *      operators.  It never executes or expands anything: routing is a
 *      guess about what a command is, made before it runs, so it must be
 *      cheap and must never fail on odd input (odd input is condensed).
 *   2. Each stage becomes words (quotes removed, redirections dropped);
 *      wrappers that only change how a command runs (sudo, env, time,
 *      nice, timeout, VAR=value...) are skipped to find the real command.
 *   3. Danger is judged on the words joined by single spaces, the command
 *      word by its basename (so `rm  -rf "/"`, `sudo rm -rf /` and
 *      `/bin/rm -rf /` look the same), of every command the line runs --
 *      nested ones too (groups, substitutions, compound commands' bodies,
 *      `sh -c` strings, eval; see struct router_judge) -- and on the raw
 *      line (for shapes like a fork bomb that the splitter would cut
 *      apart); then the grammar hook, then the built-in table.
 *
 * fixup.c has a full bash lexer, but it is built to refuse anything it does
 * not fully understand (its job is a safe rewrite), while the router must
 * give an answer for every input; so this is a separate, forgiving scanner.
 */
#include "squash/router.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>

#include "base/buf.h"

/* ------------------------------------------------------------- scanning */

/* A top-level separator found by router_scan. */
struct router_sep {
    size_t at, len; /* where it is; len 0 at the end of input */
    bool pipe;      /* `|` or `|&` (a stage boundary, not a segment one) */
    router_op_t op;
};

static bool router_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* True when position i starts a word (for `{`, `}` and `#`). */
static bool router_word_start(const char *s, size_t i)
{
    if (i == 0)
        return true;
    char p = s[i - 1];
    return router_blank(p) || p == '\n' || p == ';' || p == '&' ||
           p == '|' || p == '(';
}

/*
 * Finds the next top-level separator in s[i..n).  Nesting (( ), { }, $( ))
 * and quotes hide separators; an unbalanced closer is ignored rather than
 * trusted, and an unterminated quote runs to the end: both only make the
 * routing coarser, never wrong about danger, which also sees the raw line.
 */
static void router_scan(const char *s, size_t i, size_t n,
                        struct router_sep *sep)
{
    unsigned depth = 0;
    bool sq = false, dq = false, bq = false;
    for (; i < n; i++) {
        char c = s[i];
        if (sq) {
            if (c == '\'')
                sq = false;
            continue;
        }
        if (c == '\\') {
            i++; /* the next character is literal (or a line join) */
            continue;
        }
        if (dq) {
            if (c == '"')
                dq = false;
            else if (c == '`')
                bq = !bq;
            continue;
        }
        if (bq) {
            if (c == '`')
                bq = false;
            continue;
        }
        switch (c) {
        case '\'':
            sq = true;
            continue;
        case '"':
            dq = true;
            continue;
        case '`':
            bq = true;
            continue;
        case '(':
            depth++;
            continue;
        case ')':
            if (depth)
                depth--;
            continue;
        case '{':
            if (router_word_start(s, i) || (i && s[i - 1] == '$'))
                depth++;
            continue;
        case '}':
            if (depth)
                depth--;
            continue;
        case '#':
            if (depth == 0 && router_word_start(s, i)) {
                while (i + 1 < n && s[i + 1] != '\n')
                    i++; /* a comment hides everything to the newline */
            }
            continue;
        default:
            break;
        }
        if (depth)
            continue;
        sep->at = i;
        sep->pipe = false;
        if (c == '\n' || c == ';') {
            sep->len = 1;
            sep->op = ROUTER_OP_SEQ;
            return;
        }
        if (c == '|') {
            if (i + 1 < n && s[i + 1] == '|') {
                sep->len = 2;
                sep->op = ROUTER_OP_OR;
            } else {
                sep->len = (i + 1 < n && s[i + 1] == '&') ? 2 : 1;
                sep->pipe = true;
                sep->op = ROUTER_OP_NONE;
            }
            return;
        }
        if (c == '&') {
            /* `>&`, `<&` and `&>` are redirections. */
            if ((i && (s[i - 1] == '>' || s[i - 1] == '<')) ||
                (i + 1 < n && s[i + 1] == '>'))
                continue;
            if (i + 1 < n && s[i + 1] == '&') {
                sep->len = 2;
                sep->op = ROUTER_OP_AND;
            } else {
                sep->len = 1;
                sep->op = ROUTER_OP_BG;
            }
            return;
        }
    }
    sep->at = n;
    sep->len = 0;
    sep->pipe = false;
    sep->op = ROUTER_OP_NONE;
}

static char *router_trim_dup(const char *s, size_t n)
{
    while (n && (router_blank(*s) || *s == '\n')) {
        s++;
        n--;
    }
    while (n && (router_blank(s[n - 1]) || s[n - 1] == '\n'))
        n--;
    return strndup(s, n);
}

void router_segs_free(router_seg_t *segs, size_t n)
{
    if (!segs)
        return;
    for (size_t i = 0; i < n; i++) {
        free(segs[i].text);
        router_words_free(segs[i].argv);
    }
    free(segs);
}

/* ------------------------------------------------------------ heredocs */

static const char *router_base(const char *p);
static bool router_in(const char *w, const char *const *list);

struct router_heredoc {
    char delim[ROUTER_HEREDOC_DELIM_MAX + 1];
    bool tabs; /* <<-: the body's leading tabs go, the delimiter's too */
    bool data; /* read by a command that only writes it out: dropped */
    /* The delimiter was quoted (`'EOF'`, `"EOF"`, `\EOF`): the body is
     * taken as it is.  Else the shell expands it first, and the
     * substitutions in it run (`$(...)`, backquotes). */
    bool quoted;
};

/* Reads the delimiter word of a heredoc at s[i..n) (after `<<` or `<<-`
 * and blanks) into h, quotes removed; returns the index after it, or 0
 * when there is no word or it is too long. */
static size_t router_heredoc_word(const char *s, size_t i, size_t n,
                                  struct router_heredoc *h)
{
    size_t k = 0;
    h->quoted = false;
    while (i < n && !router_blank(s[i]) && !strchr("\n;|&<>()", s[i])) {
        char q = s[i];
        h->quoted = h->quoted || q == '\'' || q == '"' || q == '\\';
        if (q == '\'' || q == '"') {
            for (i++; i < n && s[i] != q; i++)
                if (k < ROUTER_HEREDOC_DELIM_MAX)
                    h->delim[k++] = s[i];
                else
                    return 0;
            i = i < n ? i + 1 : n;
            continue;
        }
        if (q == '\\' && i + 1 < n)
            i++;
        if (k >= ROUTER_HEREDOC_DELIM_MAX)
            return 0;
        h->delim[k++] = s[i++];
    }
    h->delim[k] = 0;
    return k ? i : 0;
}

/*
 * Whether the heredoc whose `<<` is at s[to] feeds a command that reads
 * its input as data, never as shell commands (`cat > f <<'EOF'`, `git
 * commit -F -`, `python3 -`, `psql`), so that its lines are data: the
 * simple command from s[from] is one of router_heredoc_readers (after
 * assignments and `!`, `then`, `do`, `else`), and no other command
 * follows on its line (`cat <<EOF | bash`, `cat > f <<EOF && sh f` run
 * the lines).  Anything else keeps its lines, judged as commands, as a
 * shell's (`bash <<EOF`, `sudo -u x sh`, `ssh host`, `kubectl exec -i pod
 * -- sh`) must be: a safety check that errs keeps them.  A program's own
 * language (python's, awk's, SQL) is not judged, as `python3 -c` is not.
 */
static bool router_heredoc_data(const char *s, size_t from, size_t to,
                                size_t n)
{
    static const char *const data[] = {
        "cat",    "tee",  "git",     "gh",     "python", "python3",
        "node",   "ruby", "perl",    "php",    "jq",     "yq",
        "sed",    "awk",  "gawk",    "mawk",   "grep",   "egrep",
        "fgrep",  "rg",   "sort",    "uniq",   "wc",     "tr",
        "head",   "tail", "cut",     "column", "base64", "xxd",
        "od",     "diff", "patch",   "envsubst", "psql", "mysql",
        "sqlite3", "wl-copy", "xclip", "pbcopy", NULL};
    static const char *const words[] = {"!", "then", "do", "else", NULL};
    char word[64];
    size_t i = from;
    for (;;) {
        while (i < to && router_blank(s[i]))
            i++;
        size_t e = i;
        while (e < to && !router_blank(s[e]) && s[e] != '<' && s[e] != '>')
            e++;
        if (e == i || e - i >= sizeof word)
            return false;
        memcpy(word, s + i, e - i);
        word[e - i] = 0;
        i = e;
        if (router_in(word, words) || (strchr(word, '=') &&
                                       !strpbrk(word, "$`'\"{")))
            continue;
        if (!router_in(router_base(word), data))
            return false;
        break;
    }
    /* the rest of its line: no other command (a pipe into a shell, `&&
     * bash f` running what it wrote, a substitution), quoted or not */
    for (i = to; i < n && s[i] != '\n'; i++)
        if (s[i] == '|' || s[i] == '&' || s[i] == ';' || s[i] == '`' ||
            (s[i] == '$' && i + 1 < n && s[i + 1] == '('))
            return false;
    return true;
}

/* The index after a heredoc's body that starts at s[i..n): after the line
 * that is h's delimiter (tabs first for <<-); 0 when no line is (bash
 * would read to the end: not what the text meant, most likely). */
static size_t router_heredoc_end(const char *s, size_t i, size_t n,
                                 const struct router_heredoc *h)
{
    size_t dl = strlen(h->delim);
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n, b = i;
        if (h->tabs)
            while (b < e && s[b] == '\t')
                b++;
        size_t next = nl ? e + 1 : n;
        if (e - b == dl && !memcmp(s + b, h->delim, dl))
            return next;
        i = next;
    }
    return 0;
}

static size_t router_group_end(const char *s, size_t i, size_t to,
                               char open, char close);
static size_t router_bq_end(const char *s, size_t i, size_t to);

/* An unquoted heredoc's body, s[from..to) with its delimiter line, into
 * out as its substitutions alone, each where it was: the shell runs them
 * as it expands the body (`now: $(rm -rf /)` is a body a data reader
 * gets, and an `rm -rf /` that runs).  Every other byte becomes a blank,
 * a newline stays one, and the delimiter line goes, so the text is never
 * longer than what it stands for. */
static int router_body_substitutions(const char *s, size_t from, size_t to,
                                     buf_t *out)
{
    /* the delimiter line: the last one of the range */
    size_t body = to;
    if (body > from && s[body - 1] == '\n')
        body--;
    while (body > from && s[body - 1] != '\n')
        body--;
    for (size_t i = from, end; i < body; i = end) {
        bool bq = s[i] == '`';
        if (bq || (s[i] == '$' && i + 1 < body && s[i + 1] == '(')) {
            end = bq ? router_bq_end(s, i, body)
                     : router_group_end(s, i + 1, body, '(', ')');
            end = end < body ? end + 1 : body;
            if (buf_append(out, s + i, end - i) < 0)
                return -ENOMEM;
            continue;
        }
        /* an escaped `$` or backquote is data */
        end = s[i] == '\\' && i + 1 < body ? i + 2 : i + 1;
        for (size_t k = i; k < end; k++)
            if (buf_append_byte(out, s[k] == '\n' ? '\n' : ' ') < 0)
                return -ENOMEM;
    }
    return 0;
}

/*
 * Shell text s[0..n) without the bodies of the heredocs that are data,
 * into out.  A `<<WORD` (`<<-WORD`, the word quoted or not) outside
 * quotes, `${ }`, arithmetic and comments makes the lines after its own,
 * up to the one that is WORD, what the command reads.  Read as commands,
 * a file an agent writes with `cat > f <<'EOF'` was refused for a `git
 * commit` or an `rm -rf` in it.  Only a body router_heredoc_data calls
 * data is dropped, and only when its delimiter line comes; any doubt (a
 * quoting this scan does not follow, more than ROUTER_MAX_HEREDOCS on a
 * line) leaves the text as it is.  0, or -ENOMEM; out is left empty
 * when nothing was dropped.
 */
static int router_drop_heredocs(const char *s, size_t n, buf_t *out)
{
    struct router_heredoc hd[ROUTER_MAX_HEREDOCS];
    size_t nhd = 0, cmd = 0, arith = 0, brace = 0;
    bool sq = false, dq = false, any = false;
    buf_reset(out);
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (sq) {
            sq = c != '\'';
        } else if (c == '\\') {
            if (i + 1 < n && buf_append_byte(out, (unsigned char)c) < 0)
                return -ENOMEM;
            i += i + 1 < n;
            c = s[i];
        } else if (dq) {
            dq = c != '"';
        } else if (c == '$' && i + 1 < n && s[i + 1] == '\'') {
            goto unsure; /* $'...': \' does not end it */
        } else if (c == '\'' || c == '"') {
            sq = c == '\'';
            dq = c == '"';
        } else if (c == '#' && router_word_start(s, i)) {
            const char *nl = memchr(s + i, '\n', n - i);
            size_t e = nl ? (size_t)(nl - s) : n;
            if (buf_append(out, s + i, e - i) < 0)
                return -ENOMEM;
            i = e - 1;
            continue;
        } else if (c == '$' && i + 1 < n &&
                   (s[i + 1] == '{' || s[i + 1] == '[')) {
            brace++; /* ${...}, $[...]: no heredoc inside */
        } else if ((c == '}' || c == ']') && brace) {
            brace--;
        } else if (c == '(' && i + 1 < n && s[i + 1] == '(') {
            arith++;
        } else if (c == ')' && i + 1 < n && s[i + 1] == ')' && arith) {
            arith--;
        } else if (c == ';' || c == '&' || c == '|' || c == '(' ||
                   (c == '{' && router_word_start(s, i))) {
            cmd = i + 1;
        } else if (c == '<' && !arith && !brace && i + 1 < n &&
                   s[i + 1] == '<' && (i + 2 >= n || s[i + 2] != '<') &&
                   (i == 0 || s[i - 1] != '<')) {
            size_t j = i + 2;
            bool tabs = j < n && s[j] == '-';
            j += tabs;
            while (j < n && router_blank(s[j]))
                j++;
            if (nhd == ROUTER_MAX_HEREDOCS)
                goto unsure;
            struct router_heredoc *h = &hd[nhd];
            size_t e = router_heredoc_word(s, j, n, h);
            if (e) {
                h->tabs = tabs;
                h->data = router_heredoc_data(s, cmd, i, n);
                nhd++;
                if (buf_append(out, s + i, e - i) < 0)
                    return -ENOMEM;
                i = e - 1;
                continue;
            }
        } else if (c == '\n') {
            if (buf_append_byte(out, '\n') < 0)
                return -ENOMEM;
            size_t at = i + 1;
            for (size_t k = 0; k < nhd; k++) {
                size_t end = router_heredoc_end(s, at, n, &hd[k]);
                if (!end)
                    goto unsure;
                if (!hd[k].data &&
                    buf_append(out, s + at, end - at) < 0)
                    return -ENOMEM;
                if (hd[k].data && !hd[k].quoted &&
                    router_body_substitutions(s, at, end, out) < 0)
                    return -ENOMEM;
                any = any || hd[k].data;
                at = end;
            }
            nhd = 0;
            i = at - 1;
            cmd = at;
            continue;
        }
        if (buf_append_byte(out, (unsigned char)c) < 0)
            return -ENOMEM;
    }
    if (nhd) /* a heredoc on the last line: no body to drop */
        any = false;
    if (!any)
        buf_reset(out);
    return 0;
unsure:
    buf_reset(out);
    return 0;
}

int router_split(const char *cmdline, router_seg_t **out, size_t *nout)
{
    size_t n = strlen(cmdline), i = 0, count = 0;
    router_op_t op = ROUTER_OP_NONE;
    /* Past the input limit the scan is skipped: one segment, whole. */
    bool whole = n > ROUTER_MAX_INPUT;
    buf_t text = BUF_INIT;
    if (!whole && memmem(cmdline, n, "<<", 2)) {
        if (router_drop_heredocs(cmdline, n, &text) < 0)
            return -ENOMEM;
        if (text.len) {
            cmdline = text.p;
            n = text.len;
        }
    }
    router_seg_t *segs = calloc(ROUTER_MAX_SEGMENTS, sizeof *segs);
    if (!segs) {
        buf_free(&text);
        return -ENOMEM;
    }
    while (i <= n) {
        struct router_sep sep;
        if (whole) {
            sep.at = n;
            sep.len = 0;
            sep.pipe = false;
            sep.op = ROUTER_OP_NONE;
        } else {
            /* Pipes stay inside a segment: keep scanning past them. */
            size_t j = i;
            do {
                router_scan(cmdline, j, n, &sep);
                j = sep.at + sep.len;
            } while (sep.pipe);
        }
        /* The last slot takes the rest of the line, unsplit. */
        if (count == ROUTER_MAX_SEGMENTS - 1) {
            sep.at = n;
            sep.len = 0;
        }
        char *seg = router_trim_dup(cmdline + i, sep.at - i);
        if (!seg) {
            router_segs_free(segs, count);
            buf_free(&text);
            return -ENOMEM;
        }
        if (*seg) {
            segs[count].text = seg;
            segs[count].op = count ? op : ROUTER_OP_NONE;
            count++;
        } else {
            free(seg);
        }
        if (sep.len == 0)
            break;
        op = sep.op;
        i = sep.at + sep.len;
    }
    buf_free(&text);
    *out = segs;
    *nout = count;
    return 0;
}

/* ---------------------------------------------------------------- words */

void router_words_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

/* Copies a $( ... ), ${ ... } or ` ... ` span as written; returns the
 * index after it. */
static size_t router_copy_nested(const char *s, size_t i, size_t n, buf_t *w)
{
    char open = s[i + 1] == '{' ? '{' : '(';
    char close = open == '{' ? '}' : ')';
    unsigned depth = 0;
    size_t start = i;
    for (i += 1; i < n; i++) {
        if (s[i] == '\\') {
            i++;
            continue;
        }
        if (s[i] == open)
            depth++;
        else if (s[i] == close && --depth == 0) {
            i++;
            break;
        }
    }
    if (i > n)
        i = n;
    buf_append(w, s + start, i - start);
    return i;
}

/*
 * Reads one word at s[i], unquoting into w.  Returns the index after it.
 * *redir is set when the word is a redirection operator (its target is
 * read and dropped by the caller).
 */
static size_t router_read_word(const char *s, size_t i, size_t n, buf_t *w,
                               bool *redir)
{
    *redir = false;
    /* A redirection: [n]>, >>, >|, >&, <, <<, <<<, <&, &>, &>>. */
    size_t j = i;
    while (j < n && s[j] >= '0' && s[j] <= '9')
        j++;
    if (j < n && (s[j] == '<' || s[j] == '>' ||
                  (j == i && s[j] == '&' && j + 1 < n && s[j + 1] == '>'))) {
        *redir = true;
        j++;
        while (j < n && (s[j] == '<' || s[j] == '>' || s[j] == '&' ||
                         s[j] == '|'))
            j++;
        /* >&2, <&-: the target is glued on. */
        if (s[j - 1] == '&')
            while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '-'))
                j++;
        return j;
    }
    while (i < n) {
        char c = s[i];
        if (router_blank(c) || c == '\n' || c == '|' || c == ';' ||
            c == '<' || c == '>' || c == '(' || c == ')')
            break;
        if (c == '&')
            break;
        if (c == '\\') {
            /* `\` and a newline join two lines: nothing of them stays */
            if (i + 1 < n && s[i + 1] != '\n')
                buf_append_byte(w, (unsigned char)s[i + 1]);
            i += 2;
            continue;
        }
        if (c == '\'') {
            size_t e = i + 1;
            while (e < n && s[e] != '\'')
                e++;
            buf_append(w, s + i + 1, e - i - 1);
            i = e < n ? e + 1 : n;
            continue;
        }
        if (c == '"') {
            for (i++; i < n && s[i] != '"'; i++) {
                bool esc = s[i] == '\\' && i + 1 < n &&
                           strchr("$`\"\\\n", s[i + 1]);
                i += esc; /* the escaped character stands for itself */
                if (esc && s[i] == '\n')
                    continue; /* a line continuation: nothing stays */
                buf_append_byte(w, (unsigned char)s[i]);
            }
            i = i < n ? i + 1 : n;
            continue;
        }
        if (c == '$' && i + 1 < n && (s[i + 1] == '(' || s[i + 1] == '{')) {
            i = router_copy_nested(s, i, n, w);
            continue;
        }
        if (c == '`') {
            size_t e = i + 1;
            while (e < n && s[e] != '`')
                e++;
            e = e < n ? e + 1 : n;
            buf_append(w, s + i, e - i);
            i = e;
            continue;
        }
        buf_append_byte(w, (unsigned char)c);
        i++;
    }
    return i;
}

/* Words of s[i..n) up to the end (the caller passes one stage). */
static int router_words_range(const char *s, size_t i, size_t n,
                              char ***argv, size_t *argc)
{
    char **v = calloc(ROUTER_MAX_WORDS + 1, sizeof *v);
    size_t k = 0;
    bool skip_target = false;
    buf_t w = BUF_INIT;
    if (!v)
        return -ENOMEM;
    while (i < n && k < ROUTER_MAX_WORDS) {
        if (router_blank(s[i]) || s[i] == '\n') {
            i++;
            continue;
        }
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
            i += 2; /* a line continuation between words */
            continue;
        }
        if (s[i] == '(' || s[i] == ')' || s[i] == '|' || s[i] == ';' ||
            s[i] == '&') {
            /* A subshell or a stray operator: not a plain command; its
             * marker word makes the segment condense. */
            if (k == 0 && (s[i] == '(')) {
                v[k] = strdup("(");
                if (!v[k])
                    goto nomem;
                k++;
                break;
            }
            i++;
            continue;
        }
        bool redir;
        buf_reset(&w);
        size_t e = router_read_word(s, i, n, &w, &redir);
        if (e == i) {
            i++;
            continue;
        }
        i = e;
        if (redir) {
            /* `>&2` carries its target; `> f` is followed by it. */
            skip_target = s[i - 1] != '&' &&
                          !(s[i - 1] >= '0' && s[i - 1] <= '9') &&
                          s[i - 1] != '-';
            continue;
        }
        if (skip_target) {
            skip_target = false;
            continue;
        }
        v[k] = strndup(w.p ? w.p : "", w.len);
        if (!v[k])
            goto nomem;
        k++;
    }
    buf_free(&w);
    *argv = v;
    *argc = k;
    return 0;
nomem:
    buf_free(&w);
    router_words_free(v);
    return -ENOMEM;
}

bool router_expands(const char *s)
{
    bool word_start = true;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        bool at_start = word_start;
        word_start = router_blank(c) || c == '\n' || c == ';' || c == '|' ||
                     c == '&' || c == '(' || c == ')' || c == '=' ||
                     c == ':' || c == '<' || c == '>';
        switch (c) {
        case '\\':
            if (s[i + 1])
                i++;
            break;
        case '\'':
            while (s[i + 1] && s[i + 1] != '\'')
                i++;
            if (s[i + 1])
                i++;
            break;
        case '"':
            for (i++; s[i] && s[i] != '"'; i++) {
                if (s[i] == '$' || s[i] == '`')
                    return true;
                if (s[i] == '\\' && s[i + 1])
                    i++;
            }
            if (!s[i])
                return false;
            break;
        case '$': case '`': case '*': case '?': case '[':
            return true;
        case '~':
            if (at_start)
                return true;
            break;
        case '{': {
            /* {a,b} and {1..3}; a lone { (a group) is no expansion */
            size_t j = i + 1;
            while (s[j] && s[j] != '}' && !router_blank(s[j]))
                if (s[j] == ',' || (s[j] == '.' && s[j + 1] == '.'))
                    return true;
                else
                    j++;
            break;
        }
        default:
            break;
        }
    }
    return false;
}

int router_words(const char *seg, char ***argv, size_t *argc)
{
    size_t n = strlen(seg);
    struct router_sep sep;
    router_scan(seg, 0, n, &sep);
    return router_words_range(seg, 0, sep.at, argv, argc);
}

/*
 * Where the pipeline stage s[from..to) reads and writes: *in when its input
 * is a redirection (`< f`, `<<EOF`, `<<< text`, `0< f`, `<&3`), *out when
 * its output goes to a file (`> f`, `>> f`, `1> f`, `&> f`, `>| f`; not
 * `>&2`, which only joins it to standard error).  A REPL so fed runs a
 * script and ends; a pager whose output is a file prints and ends.
 */
static void router_stage_redirs(const char *s, size_t from, size_t to,
                                bool *in, bool *out)
{
    buf_t w = BUF_INIT;
    *in = *out = false;
    for (size_t i = from; i < to;) {
        if (router_blank(s[i]) || s[i] == '\n' || s[i] == '(' ||
            s[i] == ')' || s[i] == '|' || s[i] == ';' || s[i] == '&') {
            if (s[i] == '&' && i + 1 < to && s[i + 1] == '>')
                *out = true; /* &> f, &>> f */
            i++;
            continue;
        }
        bool redir;
        buf_reset(&w);
        size_t e = router_read_word(s, i, to, &w, &redir);
        if (redir) {
            size_t d = i;
            while (d < e && s[d] >= '0' && s[d] <= '9')
                d++;
            bool fd0 = d == i || (d == i + 1 && s[i] == '0');
            bool fd1 = d == i || (d == i + 1 && s[i] == '1');
            if (s[d] == '<' && fd0)
                *in = true;
            else if (s[d] == '>' && fd1 &&
                     !(d + 1 < e && s[d + 1] == '&' && d + 2 < e))
                *out = true; /* `>&2` (a digit or `-` glued on) is not */
        }
        i = e > i ? e : i + 1;
    }
    buf_free(&w);
}

/* -------------------------------------------------------- the command */

static const char *router_base(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static bool router_in(const char *w, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(w, *list))
            return true;
    return false;
}

static bool router_assignment(const char *w)
{
    if (!((*w >= 'A' && *w <= 'Z') || (*w >= 'a' && *w <= 'z') || *w == '_'))
        return false;
    for (w++; *w && *w != '='; w++)
        if (!((*w >= 'A' && *w <= 'Z') || (*w >= 'a' && *w <= 'z') ||
              (*w >= '0' && *w <= '9') || *w == '_'))
            return false;
    return *w == '=';
}

/* A wrapper and its options that take a value. */
struct router_wrapper {
    const char *name;
    const char *const *valued; /* options followed by a value word */
    unsigned positional;       /* leading operands to skip (timeout: 1) */
};

static const char *const router_sudo_opts[] = {"-u", "-g", "-C", "-h", "-p",
                                               "-U", "-r", "-t", "-D", NULL};
static const char *const router_env_opts[] = {"-u", "-C", "-S", "--unset",
                                              "--chdir", NULL};
static const char *const router_nice_opts[] = {"-n", "--adjustment", NULL};
static const char *const router_ionice_opts[] = {"-c", "-n", "-p", NULL};
static const char *const router_timeout_opts[] = {"-s", "-k", "--signal",
                                                  "--kill-after", NULL};
static const char *const router_stdbuf_opts[] = {"-i", "-o", "-e", NULL};
static const char *const router_exec_opts[] = {"-a", NULL};
static const char *const router_xargs_opts[] = {
    "-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args",
    "--max-procs", "--max-lines", "--delimiter", "--arg-file", NULL};
static const char *const router_strace_opts[] = {"-o", "-e", "-p", "-s",
                                                 "-u", "-P", NULL};
static const char *const router_none[] = {NULL};

static const struct router_wrapper router_wrappers[] = {
    {"sudo", router_sudo_opts, 0},     {"doas", router_sudo_opts, 0},
    {"env", router_env_opts, 0},       {"time", router_none, 0},
    {"nohup", router_none, 0},         {"command", router_none, 0},
    {"exec", router_exec_opts, 0},     {"builtin", router_none, 0},
    {"nice", router_nice_opts, 0},     {"ionice", router_ionice_opts, 0},
    {"timeout", router_timeout_opts, 1},
    {"stdbuf", router_stdbuf_opts, 0}, {"!", router_none, 0},
    /* they run the command that follows, with its words (xargs adds
     * some from its input: `xargs rm -rf` is an rm -rf) */
    {"setsid", router_none, 0},        {"xargs", router_xargs_opts, 0},
    {"chroot", router_none, 1},        {"strace", router_strace_opts, 0},
};

/* The index of the real command in argv, past assignments and wrappers;
 * argc when there is none (`env` alone, `VAR=x`). */
static size_t router_skip_wrappers(char *const *argv, size_t argc)
{
    size_t i = 0;
    for (;;) {
        while (i < argc && router_assignment(argv[i]))
            i++;
        if (i >= argc)
            return argc;
        const struct router_wrapper *wr = NULL;
        for (size_t k = 0;
             k < sizeof router_wrappers / sizeof router_wrappers[0]; k++)
            if (!strcmp(router_base(argv[i]), router_wrappers[k].name))
                wr = &router_wrappers[k];
        if (!wr)
            return i;
        /* `env` or `time` alone is itself the command; so is `command -v
         * NAME` (-V too), which runs nothing: it says what NAME is. */
        if (i + 1 >= argc ||
            (!strcmp(wr->name, "command") &&
             (!strncmp(argv[i + 1], "-v", 2) ||
              !strncmp(argv[i + 1], "-V", 2))))
            return i;
        size_t save = i++;
        while (i < argc && argv[i][0] == '-' && argv[i][1]) {
            if (!strcmp(argv[i], "--")) {
                i++;
                break;
            }
            if (router_in(argv[i], wr->valued))
                i++;
            i++;
        }
        for (unsigned p = 0; p < wr->positional && i < argc; p++)
            i++;
        if (i >= argc)
            return save;
    }
}

size_t router_command_at(char *const *argv, size_t argc)
{
    return router_skip_wrappers(argv, argc);
}

/* ------------------------------------------------------- the category */

static const char *const router_narrate_cmds[] = {
    "cp", "mv", "rm", "mkdir", "rmdir", "touch", "chmod", "chown", "chgrp",
    "ln", "truncate", NULL};

static const char *const router_passthrough_cmds[] = {
    "cat", "tac", "grep", "egrep", "fgrep", "rg", "ag", "ls", "ll", "dir",
    "find", "fd", "fdfind", "jq", "yq", "diff", "sed", "awk", "gawk", "head",
    "tail", "wc", "echo", "printf", "pwd", "which", "type", "whoami", "stat",
    "file", "du", "df", "tree", "sort", "uniq", "cut", "tr", "env",
    "printenv", "date", "uname", "id", "hostname", "readlink", "realpath",
    "basename", "dirname", "md5sum", "sha1sum", "sha256sum", "sha512sum",
    "xxd", "hexdump", "od", "column", "nl", "paste", "join", "comm", "cmp",
    "true", "false", "test", "[", "seq", "base64", "strings", "ps", "free",
    "uptime", "nproc", "locate", NULL};

/* Always interactive: editors, monitors, terminal multiplexers.  (Pagers,
 * crontab and visudo have rules of their own below.) */
static const char *const router_interactive_cmds[] = {
    "vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "micro", "joe",
    "top", "htop", "btop", "atop", "iotop", "nmon", "info", "mosh",
    "telnet", "ftp", "tmux", "screen", "watch", "fzf", "mc", "ranger", "nnn",
    "tig", "lazygit", "nmtui", "alsamixer", "dialog", "whiptail", "ncdu",
    NULL};

/* Why a program of router_interactive_cmds (or emacs) needs a terminal,
 * and what does its job without one. */
static const char *router_fullscreen_why(const char *cmd)
{
    static const char *const editors[] = {
        "vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "micro",
        "joe", "emacs", NULL};
    static const char *const monitors[] = {
        "top", "htop", "btop", "atop", "iotop", "nmon", NULL};
    if (router_in(cmd, editors))
        return "a full-screen editor; change files with a command that "
               "needs no terminal (sed -i, a heredoc, patch)";
    if (router_in(cmd, monitors))
        return "a full-screen monitor; take one snapshot instead (ps, "
               "top -b -n 1)";
    if (!strcmp(cmd, "watch"))
        return "watch redraws the screen until stopped; run the command "
               "itself, or in a loop with sleep";
    return "a full-screen program that waits for keys";
}

/* Pagers: they page only when their output is a terminal; else (`man ls |
 * head`, `less f > out`, on pipes) they print and end, like cat. */
static const char *const router_pager_cmds[] = {"less", "more", "most",
                                                "pg", "man", NULL};

/* Interactive when run with no operand (a REPL or a login shell). */
static const char *const router_repl_cmds[] = {
    "python", "python2", "python3", "ipython", "node", "nodejs", "deno",
    "irb", "pry", "ghci", "lua", "luajit", "R", "julia", "sqlite3", "psql",
    "mysql", "mariadb", "redis-cli", "mongo", "mongosh", "bc", "dc", "sh",
    "bash", "zsh", "fish", "dash", "ksh", "gdb", "lldb", "ftp", "sftp",
    "php", "perl", "ruby", "scala", "clojure", "erl", "iex", "ocaml",
    "guile", "racket", "sbcl", NULL};

/* Shells whose `-c STRING` is routed as STRING. */
static const char *const router_shells[] = {"sh", "bash", "dash", "zsh",
                                            "ksh", "fish", NULL};

/* Shells that, given a pipe for input and no -i, read commands from it
 * without a prompt: a session driven with write_stdin. */
static const char *const router_pipe_shells[] = {"sh", "bash", "dash", "zsh",
                                                 "ksh", "fish", NULL};

const char *router_shell_string(char *const *argv, size_t argc)
{
    if (!argc || !router_in(router_base(argv[0]), router_shells))
        return NULL;
    bool c = false;
    size_t i = 1;
    /* Options up to the first operand: `-c` alone or in a cluster (`-lc`,
     * `-ec`); `-o`/`-O` (and `+o`) and --rcfile/--init-file take a value. */
    while (i < argc && (argv[i][0] == '-' || argv[i][0] == '+') &&
           argv[i][1]) {
        const char *w = argv[i++];
        if (!strcmp(w, "--"))
            break;
        if (w[1] == '-') {
            if ((!strcmp(w, "--rcfile") || !strcmp(w, "--init-file")) &&
                i < argc)
                i++;
            continue;
        }
        bool valued = false;
        for (const char *p = w + 1; *p; p++) {
            if (*p == 'c' && w[0] == '-')
                c = true;
            else if (*p == 'o' || *p == 'O')
                valued = true;
        }
        if (valued && i < argc)
            i++;
    }
    return c && i < argc ? argv[i] : NULL;
}

/* Options that make a REPL command non-interactive even without an
 * operand: a program on the command line or a batch mode. */
static const char *const router_batch_opts[] = {
    "-c", "-e", "-m", "-E", "--eval", "--batch", "-batch", "--script",
    "-b", "-f", "--file", "--command", "-x", "--version", "-V", "-h",
    "--help", "-v", "-p", "--print", "-l",
    /* node's runners: its test runner, a syntax check, a package.json
     * script (`node --test` with no file finds the tests itself) */
    "--test", "--check", "--run", NULL};

/* True when one of opts is among the words: `--name` or `--name=v`, and a
 * one-letter `-x` also in a bundle of short options or with its value
 * glued on (`git commit -am msg`, `-mfix`: both give -m). */
static bool router_has_opt(char *const *v, size_t argc,
                           const char *const *opts)
{
    for (size_t i = 1; i < argc; i++) {
        if (!strcmp(v[i], "--"))
            return false;
        bool shorts = v[i][0] == '-' && v[i][1] && v[i][1] != '-';
        for (const char *const *o = opts; *o; o++) {
            size_t n = strlen(*o);
            if (!strncmp(v[i], *o, n) && (!v[i][n] || v[i][n] == '='))
                return true;
            if (shorts && n == 2 && (*o)[0] == '-' && (*o)[1] != '-' &&
                strchr(v[i] + 1, (*o)[1]))
                return true;
        }
    }
    return false;
}

/* The value of an option that takes one: `-P VALUE`, `-PVALUE`, `--pager
 * VALUE` or `--pager=VALUE` (the last one given); NULL when absent.
 * Either name may be NULL. */
static const char *router_opt_value(char *const *v, size_t argc,
                                    const char *shrt, const char *lng)
{
    const char *val = NULL;
    for (size_t i = 1; i < argc; i++) {
        if (!strcmp(v[i], "--"))
            break;
        size_t n;
        if (shrt && !strncmp(v[i], shrt, 2)) {
            if (v[i][2])
                val = v[i] + 2;
            else if (i + 1 < argc)
                val = v[++i];
        } else if (lng && !strncmp(v[i], lng, n = strlen(lng))) {
            if (v[i][n] == '=')
                val = v[i] + n + 1;
            else if (!v[i][n] && i + 1 < argc)
                val = v[++i];
        }
    }
    return val;
}

/* True when some word after the command does not start with '-'. */
static bool router_has_operand(char *const *v, size_t argc)
{
    for (size_t i = 1; i < argc; i++)
        if (v[i][0] != '-' || !strcmp(v[i], "-"))
            return true;
    return false;
}

/* What the table knows of one pipeline stage beyond its words: where it
 * runs (router.h) and what the line around it sets. */
struct router_look {
    const router_ctx_t *ctx;  /* never NULL */
    char *const *assign;      /* the stage's words before its command: */
    size_t nassign;           /* its VAR=value (and its wrappers') */
    const router_seg_t *segs; /* the segments before this one, for */
    size_t nsegs;             /* their `export VAR=value` */
    bool fed;                 /* its input is a redirection or a pipe */
    bool out_away;            /* its output is a file or a pipe */
    unsigned depth;           /* of nested settings (ROUTER_MAX_NEST) */
    const char **why;         /* where an interactive answer says why, or
                                 NULL (a nested setting's answer) */
    bool *term_edit;          /* where router_git says so, or NULL */
};

/* The answer for a stage that needs a terminal, saying why (the first
 * reason given wins: later ones come from deeper rules). */
static router_cat_t router_tty(const struct router_look *lk, const char *why)
{
    if (lk->why && !*lk->why)
        *lk->why = why;
    return ROUTER_INTERACTIVE;
}

static const router_ctx_t router_no_ctx = {NULL, false, false};

/* name's value in env[0..n), the last entry winning; NULL when unset. */
static const char *router_env_find(const char *const *env, size_t n,
                                   const char *name)
{
    size_t len = strlen(name);
    for (size_t i = n; i-- > 0;)
        if (!strncmp(env[i], name, len) && env[i][len] == '=')
            return env[i] + len + 1;
    return NULL;
}

/* name's value in the stage's environment (see router_look); NULL when
 * unset or empty (an empty EDITOR or PAGER is no setting). */
static const char *router_getenv(const struct router_look *lk,
                                 const char *name)
{
    const char *v = router_env_find((const char *const *)lk->assign,
                                    lk->nassign, name);
    for (size_t s = lk->nsegs; !v && s-- > 0;) {
        const router_seg_t *seg = &lk->segs[s];
        if (seg->argc > 1 && !strcmp(seg->argv[0], "export"))
            v = router_env_find((const char *const *)seg->argv + 1,
                                seg->argc - 1, name);
    }
    if (!v && lk->ctx->env) {
        size_t n = 0;
        while (lk->ctx->env[n])
            n++;
        v = router_env_find(lk->ctx->env, n, name);
    }
    if (!v && lk->ctx->inherit_env)
        v = getenv(name);
    return v && *v ? v : NULL;
}

static router_cat_t router_table(char *const *v, size_t argc,
                                 const struct router_look *lk);

/*
 * Whether the program a setting names (an editor, a pager: `true`, `cat`,
 * `sed -i s/pick/fixup/`, `vim`) needs a terminal; NULL, no setting, is
 * the program's default (vi, less), which does.  The setting is routed as
 * a command of its own, on a terminal and with nothing of the line's
 * environment.
 */
static bool router_prog_needs_tty(const struct router_look *lk,
                                  const char *prog)
{
    char **v = NULL;
    size_t argc = 0;
    if (!prog || lk->depth >= ROUTER_MAX_NEST ||
        router_words(prog, &v, &argc) < 0)
        return true;
    size_t k = router_skip_wrappers(v, argc);
    struct router_look bare = {.ctx = &router_no_ctx,
                               .assign = v,
                               .nassign = k,
                               .depth = lk->depth + 1};
    bool tty = k < argc && router_table(v + k, argc - k, &bare) ==
                               ROUTER_INTERACTIVE;
    router_words_free(v);
    return tty;
}

/* The editor a program takes from the first of vars that is set. */
static bool router_editor_needs_tty(const struct router_look *lk,
                                    const char *const *vars)
{
    for (; *vars; vars++) {
        const char *e = router_getenv(lk, *vars);
        if (e)
            return router_prog_needs_tty(lk, e);
    }
    return true; /* vi */
}

/* git's subcommand, past global options (-C dir, -c k=v, --no-pager...). */
static size_t router_git_sub(char *const *v, size_t argc)
{
    size_t i = 1;
    while (i < argc && v[i][0] == '-') {
        if (!strcmp(v[i], "-C") || !strcmp(v[i], "-c") ||
            !strcmp(v[i], "--git-dir") || !strcmp(v[i], "--work-tree") ||
            !strcmp(v[i], "--namespace"))
            i++;
        i++;
    }
    return i;
}

/* The value of `git -c KEY=VALUE` among git's global options v[1..s) (the
 * last one given; the key is case-insensitive); NULL when absent or empty. */
static const char *router_git_config(char *const *v, size_t s,
                                     const char *key)
{
    const char *val = NULL;
    size_t n = strlen(key);
    for (size_t i = 1; i + 1 < s; i++)
        if (!strcmp(v[i], "-c")) {
            i++;
            if (!strncasecmp(v[i], key, n) && v[i][n] == '=')
                val = v[i] + n + 1;
        }
    return val && *val ? val : NULL;
}

/*
 * Whether the editor git would start needs a terminal: for the rebase todo
 * list (seq) GIT_SEQUENCE_EDITOR, then `-c sequence.editor`; then, as `git
 * var GIT_EDITOR` looks, GIT_EDITOR, `-c core.editor`, VISUAL (not when
 * TERM is dumb), EDITOR, else vi.  A core.editor in the repository's own
 * configuration is not seen: without one of these, git's default is taken.
 */
static bool router_git_editor_needs_tty(char *const *v, size_t s,
                                        const struct router_look *lk,
                                        bool seq)
{
    const char *e = NULL, *term = router_getenv(lk, "TERM");
    if (seq && !(e = router_getenv(lk, "GIT_SEQUENCE_EDITOR")))
        e = router_git_config(v, s, "sequence.editor");
    if (!e && !(e = router_getenv(lk, "GIT_EDITOR")) &&
        !(e = router_git_config(v, s, "core.editor")) &&
        !(term && !strcmp(term, "dumb") ? NULL
                                        : (e = router_getenv(lk, "VISUAL"))))
        e = router_getenv(lk, "EDITOR");
    return router_prog_needs_tty(lk, e);
}

/* `git commit --fixup=amend:X` or `reword:X` edits the message. */
static bool router_git_fixup_edits(char *const *v, size_t argc)
{
    for (size_t i = 1; i < argc; i++) {
        const char *f = !strncmp(v[i], "--fixup=", 8) ? v[i] + 8
                        : !strcmp(v[i], "--fixup") && i + 1 < argc ? v[i + 1]
                                                                   : NULL;
        if (f && (!strncmp(f, "amend:", 6) || !strncmp(f, "reword:", 7)))
            return true;
    }
    return false;
}

/*
 * Whether `git merge`, `git pull` or `git revert` (sub, its words rest)
 * opens an editor on its message by default, which git does only on a
 * terminal: merge (and the merge of a pull) when its stdin and stdout are
 * one terminal and GIT_MERGE_AUTOEDIT does not say no, revert when its
 * stdin is one.  Not when told otherwise (--no-edit), given the message
 * (merge -m, -F), or when nothing is committed or merged (--no-commit,
 * --squash, --ff-only, a pull that rebases, the sequencer's --abort and
 * kin).  A pull.rebase or pull.ff in git's configuration is not seen.
 */
static bool router_git_term_edits(const char *sub, char *const *rest,
                                  size_t nrest, const struct router_look *lk)
{
    static const char *const merge_no[] = {
        "--no-edit", "-m", "--message", "-F", "--file", "--no-commit",
        "--squash", "--ff-only", "--abort", "--quit", "--continue", NULL};
    static const char *const pull_no[] = {"--no-edit", "--no-commit",
                                          "--squash", "--ff-only", NULL};
    static const char *const rebase[] = {"-r", "--rebase", NULL};
    static const char *const revert_no[] = {
        "--no-edit", "-n", "--no-commit", "--abort", "--quit", "--skip",
        NULL};
    if (lk->ctx->pipes || lk->fed)
        return false; /* stdin is no terminal */
    if (!strcmp(sub, "revert"))
        return !router_has_opt(rest, nrest, revert_no);
    if (lk->out_away)
        return false; /* merge wants stdout on the terminal too */
    const char *auto_edit = router_getenv(lk, "GIT_MERGE_AUTOEDIT");
    if (auto_edit && !strcmp(auto_edit, "no"))
        return false;
    if (strcmp(sub, "pull") != 0)
        return !router_has_opt(rest, nrest, merge_no);
    /* A pull that rebases commits no merge (`--rebase=false` merges). */
    const char *rb = router_opt_value(rest, nrest, NULL, "--rebase");
    bool rebases = router_has_opt(rest, nrest, rebase) &&
                   !(rb && (!strcmp(rb, "false") || !strcmp(rb, "no")));
    return !rebases && !router_has_opt(rest, nrest, pull_no);
}

static router_cat_t router_git(char *const *v, size_t argc,
                               const struct router_look *lk)
{
    static const char *const structured[] = {
        "status", "log", "diff", "show", "branch", "shortlog", "reflog",
        "ls-files", "blame", "tag", "remote", "whatchanged", "stash", NULL};
    /* Options that ask at a prompt, per hunk or per file (`git commit -i`
     * is --include: only the long --interactive asks). */
    static const char *const patch[] = {"-p", "--patch", NULL};
    static const char *const add_ask[] = {"-p", "--patch", "-i",
                                          "--interactive", NULL};
    static const char *const commit_ask[] = {"-p", "--patch",
                                             "--interactive", NULL};
    static const char *const clean_ask[] = {"-i", "--interactive", NULL};
    /* Options that open the editor; commit opens it unless given the
     * message another way. */
    static const char *const edit[] = {"-e", "--edit", NULL};
    static const char *const commit_edit[] = {"-e", "--edit", "-c",
                                              "--reedit-message", NULL};
    static const char *const commit_msg[] = {
        "-m", "-F", "--message", "--file", "--no-edit", "-C",
        "--reuse-message", "--fixup", "--squash", NULL};
    static const char *const todo[] = {"-i", "--interactive", "--edit-todo",
                                       NULL};
    size_t s = router_git_sub(v, argc);
    if (s >= argc)
        return ROUTER_PASSTHROUGH; /* `git` alone prints its help */
    const char *sub = v[s];
    char *const *rest = v + s;
    size_t nrest = argc - s;
    static const char *const cont[] = {"--continue", NULL};
    bool ask = false, editor = false, seq = false, term_edit = false;
    bool resume = false; /* `merge/rebase --continue` commits, editing */
    if (!strcmp(sub, "commit")) {
        ask = router_has_opt(rest, nrest, commit_ask);
        editor = router_has_opt(rest, nrest, commit_edit) ||
                 !router_has_opt(rest, nrest, commit_msg) ||
                 router_git_fixup_edits(rest, nrest);
    } else if (!strcmp(sub, "add")) {
        ask = router_has_opt(rest, nrest, add_ask);
        editor = router_has_opt(rest, nrest, edit);
    } else if (!strcmp(sub, "checkout") || !strcmp(sub, "reset") ||
               !strcmp(sub, "restore")) {
        ask = router_has_opt(rest, nrest, patch);
    } else if (!strcmp(sub, "stash")) {
        /* `git stash -p` and `stash push -p` ask; `stash show -p` prints. */
        ask = (nrest == 1 || rest[1][0] == '-' || !strcmp(rest[1], "push") ||
               !strcmp(rest[1], "save")) &&
              router_has_opt(rest, nrest, patch);
    } else if (!strcmp(sub, "clean")) {
        ask = router_has_opt(rest, nrest, clean_ask);
    } else if (!strcmp(sub, "rebase")) {
        editor = seq = router_has_opt(rest, nrest, todo);
        /* Committing a step whose conflicts were resolved, on a terminal
         * or not. */
        resume = !editor && router_has_opt(rest, nrest, cont);
        editor = editor || resume;
    } else if (!strcmp(sub, "tag")) {
        /* An annotated or signed tag takes its message in the editor. */
        static const char *const annotated[] = {
            "-a", "--annotate", "-s", "--sign", "-u", "--local-user", NULL};
        static const char *const msg[] = {"-m", "-F", "--message", "--file",
                                          NULL};
        editor = router_has_opt(rest, nrest, edit) ||
                 (router_has_opt(rest, nrest, annotated) &&
                  !router_has_opt(rest, nrest, msg));
    } else if (!strcmp(sub, "merge") && router_has_opt(rest, nrest, cont)) {
        editor = resume = true; /* `git commit` of the merge, message open */
    } else if (!strcmp(sub, "merge") || !strcmp(sub, "pull") ||
               !strcmp(sub, "revert")) {
        editor = router_has_opt(rest, nrest, edit);
        term_edit = !editor && router_git_term_edits(sub, rest, nrest, lk);
        editor = editor || term_edit;
    } else if (!strcmp(sub, "cherry-pick")) {
        editor = router_has_opt(rest, nrest, edit);
    }
    if (ask)
        return router_tty(lk, "git asks about each hunk or file at a prompt; "
                              "name the paths instead of -p or -i");
    if (term_edit && router_git_editor_needs_tty(v, s, lk, false)) {
        if (lk->term_edit)
            *lk->term_edit = true;
        return router_tty(lk, "git opens an editor on the message because "
                              "it runs on a terminal; give --no-edit (or "
                              "set GIT_EDITOR=true) for its own message");
    }
    if (resume && router_git_editor_needs_tty(v, s, lk, false))
        return router_tty(lk, "git opens an editor on the message of the "
                              "commit it resumes; set GIT_EDITOR=true to "
                              "keep the message as it is");
    if (editor && router_git_editor_needs_tty(v, s, lk, seq))
        return router_tty(
            lk, seq ? "git opens an editor on the rebase todo list; set "
                      "GIT_SEQUENCE_EDITOR to a program that edits the file "
                      "in place (such as a sed -i script), or leave out -i"
                : !strcmp(sub, "commit") &&
                        !router_has_opt(rest, nrest, commit_edit)
                    ? "git opens an editor for the commit message; give the "
                      "message with -m or -F"
                : !strcmp(sub, "tag") && !router_has_opt(rest, nrest, edit)
                    ? "git opens an editor for the tag message; give the "
                      "message with -m"
                    : "-e or --edit opens an editor on the message; leave "
                      "it out, or set GIT_EDITOR to a program that needs no "
                      "terminal (true keeps the message as it is)");
    if (!strcmp(sub, "stash"))
        return nrest == 1 || !strcmp(rest[1], "list") ||
                       !strcmp(rest[1], "show")
                   ? ROUTER_STRUCTURED
                   : ROUTER_CONDENSE;
    if (router_in(sub, structured))
        return ROUTER_STRUCTURED;
    return ROUTER_CONDENSE;
}

static router_cat_t router_container(char *const *v, size_t argc,
                                     const struct router_look *lk)
{
    size_t i = 1;
    while (i < argc && v[i][0] == '-')
        i++;
    if (i >= argc)
        return ROUTER_CONDENSE;
    const char *sub = v[i];
    const char *sub2 = i + 1 < argc ? v[i + 1] : "";
    if (!strcmp(sub, "ps") || !strcmp(sub, "images") ||
        ((!strcmp(sub, "container") || !strcmp(sub, "image") ||
          !strcmp(sub, "volume") || !strcmp(sub, "network")) &&
         (!strcmp(sub2, "ls") || !strcmp(sub2, "list"))))
        return ROUTER_STRUCTURED;
    /* `docker run -it`, `docker exec -it`: a terminal session. */
    if (!strcmp(sub, "run") || !strcmp(sub, "exec") ||
        !strcmp(sub, "attach")) {
        if (!strcmp(sub, "attach"))
            return router_tty(lk, "attach joins the container's terminal; "
                                  "read its output with logs instead");
        for (size_t k = i + 1; k < argc && v[k][0] == '-'; k++)
            if (!strcmp(v[k], "-it") || !strcmp(v[k], "-ti") ||
                !strcmp(v[k], "--tty") || !strcmp(v[k], "-t"))
                return router_tty(lk, "-t asks for a terminal; leave it out "
                                      "(-i alone still passes input)");
    }
    return ROUTER_CONDENSE;
}

/* ssh HOST is a login session; ssh HOST CMD runs one command.  With a pipe
 * for input, ssh allocates no remote terminal unless told to (-t) and the
 * remote shell reads commands from the pipe, like a local one. */
static router_cat_t router_ssh(char *const *v, size_t argc,
                               const struct router_look *lk)
{
    static const char valued[] = "bcDEeFIiJLlmOopQRSWw";
    size_t operands = 0;
    bool tty = false;
    for (size_t i = 1; i < argc; i++) {
        if (v[i][0] != '-') {
            operands++;
            continue;
        }
        /* A bundle of flags, up to an option whose value is glued on or
         * is the next word (`-o BatchMode=yes`, `-p22`). */
        for (const char *p = v[i] + 1; *p && v[i][1] != '-'; p++) {
            if (*p == 't')
                tty = true;
            if (strchr(valued, *p)) {
                if (!p[1])
                    i++;
                break;
            }
        }
    }
    /* No host (`ssh -V`, a usage error) prints and exits. */
    if (operands != 1 || (lk->ctx->pipes && !tty))
        return ROUTER_CONDENSE;
    return router_tty(lk, "ssh with no remote command opens a login "
                          "session; give the command to run (ssh HOST CMD)");
}

/* man pages through -P, else MANPAGER, else PAGER, else less; its
 * listings (whatis, apropos, paths) are not paged. */
static router_cat_t router_man(char *const *v, size_t argc,
                               const struct router_look *lk)
{
    static const char *const lists[] = {
        "-f", "--whatis", "-k", "--apropos", "-w", "--where", "-W",
        "--where-cat", "--path", NULL};
    const char *pager = router_opt_value(v, argc, "-P", "--pager");
    if (!pager)
        pager = router_getenv(lk, "MANPAGER");
    if (!pager)
        pager = router_getenv(lk, "PAGER");
    if (router_has_opt(v, argc, lists) || !router_prog_needs_tty(lk, pager))
        return ROUTER_PASSTHROUGH;
    return router_tty(lk, "man shows the page in a pager; give -P cat or set "
                          "MANPAGER=cat");
}

/* vi's Ex mode made silent (`vim -es`, `ex -s`, `nvim --headless`) runs
 * its commands and ends: a batch editor. */
static bool router_vi_batch(const char *cmd, char *const *v, size_t argc)
{
    static const char *const ex[] = {"-e", "-E", NULL};
    static const char *const silent[] = {"-s", NULL};
    static const char *const headless[] = {"--headless", NULL};
    bool exmode = !strcmp(cmd, "ex") || router_has_opt(v, argc, ex);
    return (exmode && router_has_opt(v, argc, silent)) ||
           (!strcmp(cmd, "nvim") && router_has_opt(v, argc, headless));
}

/* The built-in table's answer for a command's words (wrappers skipped). */
static router_cat_t router_table(char *const *v, size_t argc,
                                 const struct router_look *lk)
{
    static const char *const visual[] = {"VISUAL", "EDITOR", NULL};
    static const char *const sudo_editor[] = {"SUDO_EDITOR", "VISUAL",
                                              "EDITOR", NULL};
    if (argc == 0)
        return ROUTER_CONDENSE;
    const char *cmd = router_base(v[0]);
    if (!strcmp(cmd, "(") || !strcmp(cmd, "{"))
        return ROUTER_CONDENSE;
    if (!strcmp(cmd, "git"))
        return router_git(v, argc, lk);
    if (!strcmp(cmd, "docker") || !strcmp(cmd, "podman"))
        return router_container(v, argc, lk);
    if (!strcmp(cmd, "kubectl"))
        return argc > 1 && !strcmp(v[1], "get") ? ROUTER_STRUCTURED
               : argc > 1 && !strcmp(v[1], "exec") &&
                       router_has_opt(v, argc, (const char *const[]){
                                                   "-it", "-ti", "-t",
                                                   "--tty", NULL})
                   ? router_tty(lk, "-t asks for a terminal; leave it out "
                                    "(-i alone still passes input)")
                   : ROUTER_CONDENSE;
    /* `vim --version`, `less --help`: they print and exit. */
    if (router_has_opt(v, argc, (const char *const[]){"--version", "--help",
                                                       NULL}))
        return ROUTER_PASSTHROUGH;
    if (!strcmp(cmd, "ssh"))
        return router_ssh(v, argc, lk);
    /* top's batch mode prints frames and exits after -n of them. */
    if ((!strcmp(cmd, "top") || !strcmp(cmd, "htop")) &&
        router_has_opt(v, argc, (const char *const[]){"-b", "--batch", NULL}))
        return ROUTER_CONDENSE;
    if (router_in(cmd, router_pager_cmds)) {
        if (lk->out_away || lk->ctx->pipes)
            return ROUTER_PASSTHROUGH;
        return !strcmp(cmd, "man")
                   ? router_man(v, argc, lk)
                   : router_tty(lk, "a pager waits for keys on a terminal; "
                                    "use cat, or pipe its output");
    }
    /* crontab and visudo open an editor only to edit (-e; visudo unless
     * it only checks); `crontab -i` asks before removing. */
    if (!strcmp(cmd, "crontab")) {
        static const char *const e[] = {"-e", NULL}, *const i[] = {"-i", NULL},
                                 *const l[] = {"-l", NULL};
        if (router_has_opt(v, argc, i))
            return router_tty(lk, "crontab -i asks before removing; leave "
                                  "out -i");
        if (router_has_opt(v, argc, e) && router_editor_needs_tty(lk, visual))
            return router_tty(lk, "crontab -e opens an editor; install a "
                                  "whole table with crontab FILE instead");
        return router_has_opt(v, argc, l) ? ROUTER_PASSTHROUGH
                                          : ROUTER_CONDENSE;
    }
    if (!strcmp(cmd, "visudo") || !strcmp(cmd, "vipw") ||
        !strcmp(cmd, "vigr")) {
        static const char *const check[] = {"-c", "--check", NULL};
        bool checks = !strcmp(cmd, "visudo") && router_has_opt(v, argc, check);
        return !checks && router_editor_needs_tty(
                              lk, !strcmp(cmd, "visudo") ? sudo_editor : visual)
                   ? router_tty(lk, "it opens an editor; set EDITOR to a "
                                    "program that edits the file in place "
                                    "and needs no terminal")
                   : ROUTER_CONDENSE;
    }
    if (router_in(cmd, router_narrate_cmds))
        return ROUTER_NARRATE;
    if (router_in(cmd, router_passthrough_cmds))
        return ROUTER_PASSTHROUGH;
    /* emacs edits its operands full-screen; only its batch mode ends on
     * its own. */
    if (!strcmp(cmd, "emacs"))
        return router_has_opt(v, argc, (const char *const[]){
                                           "--batch", "-batch", "--script",
                                           NULL})
                   ? ROUTER_CONDENSE
                   : router_tty(lk, router_fullscreen_why(cmd));
    if (router_in(cmd, router_interactive_cmds))
        return router_vi_batch(cmd, v, argc) ? ROUTER_CONDENSE
                                             : router_tty(lk, router_fullscreen_why(cmd));
    if (router_in(cmd, router_repl_cmds)) {
        /* A shell's only batch option is -c (`bash -l` is a login). */
        static const char *const ask[] = {"-i", "--interactive", NULL},
                                 *const shell_batch[] = {"-c", NULL};
        bool shell = router_in(cmd, router_pipe_shells);
        if (lk->fed || router_has_operand(v, argc) ||
            router_has_opt(v, argc, shell ? shell_batch : router_batch_opts))
            return ROUTER_CONDENSE;
        if (lk->ctx->pipes && shell && !router_has_opt(v, argc, ask))
            return ROUTER_CONDENSE;
        return router_tty(
            lk, shell ? "with no command it is an interactive shell; give "
                        "the commands with -c or as its input"
                      : "with no script or code it starts an interactive "
                        "prompt; give it a script, code (such as -c or -e), "
                        "or its input");
    }
    return ROUTER_CONDENSE;
}

/* ------------------------------------------------------------- danger */

/* Built-in danger: what the words look like joined by single spaces
 * (scope WORDS, per pipeline stage, wrappers skipped) or the raw command
 * line (scope RAW). */
enum router_scope { SCOPE_WORDS, SCOPE_RAW };

struct router_pattern {
    const char *id;
    enum router_scope scope;
    const char *regex;
    const char *what;
};

/* Targets whose recursive removal is a disaster: /, / *, a top-level
 * directory, the home directory, ., .., and everything here (*). */
#define ROUTER_RM_TARGET \
    "(?:/|/\\*|/[^/ ]+/?|~|~/|~/\\*|\\$HOME|\\$HOME/|\\$HOME/\\*|" \
    "\\$\\{HOME\\}/?|\\.|\\./|\\./\\*|\\.\\.|\\.\\./?|\\*)"

static const struct router_pattern router_builtin[] = {
    {"rm-root", SCOPE_WORDS,
     "^rm(?=.*(?: -[a-zA-Z]*[rR]| --recursive))(?: \\S+)* "
     ROUTER_RM_TARGET "(?: |$)",
     "recursive rm of /, a top-level directory, home, . or *"},
    {"rm-no-preserve-root", SCOPE_WORDS, "^rm .*--no-preserve-root",
     "rm --no-preserve-root"},
    {"git-push-force", SCOPE_WORDS,
     "^git(?: \\S+)*? push(?: \\S+)*? (?:--force\\S*|-[a-zA-Z]*f[a-zA-Z]*|"
     "\\+\\S+)(?: |$)",
     "git push --force rewrites the remote's history"},
    {"git-reset-hard", SCOPE_WORDS, "^git(?: \\S+)*? reset(?: \\S+)*? --hard(?: |$)",
     "git reset --hard discards uncommitted work"},
    {"git-clean-force", SCOPE_WORDS,
     "^git(?: \\S+)*? clean(?: \\S+)*? (?:-[a-zA-Z]*f[a-zA-Z]*|--force)(?: |$)",
     "git clean -f deletes untracked files"},
    {"mkfs", SCOPE_WORDS, "^(?:mkfs(?:\\.\\S+)?|mke2fs|mkswap|wipefs)(?: |$)",
     "formats or wipes a file system"},
    {"dd-device", SCOPE_WORDS, "^dd(?: \\S+)* of=/dev/(?!null(?: |$))",
     "dd onto a device"},
    {"write-device", SCOPE_RAW,
     ">\\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|dm-|md)",
     "redirects output onto a block device"},
    {"fork-bomb", SCOPE_RAW,
     "([A-Za-z_:][A-Za-z0-9_:]*)\\s*\\(\\)\\s*\\{\\s*\\1\\s*\\|\\s*\\1\\s*&"
     "\\s*;?\\s*\\}\\s*;\\s*\\1",
     "a fork bomb"},
    {"chmod-root", SCOPE_WORDS,
     "^(?:chmod|chown|chgrp)(?=.* (?:-[a-zA-Z]*R|--recursive))(?: \\S+)* "
     "(?:/|/\\*|/[^/ ]+/?|~|\\$HOME)(?: |$)",
     "recursive permission change from / or home"},
    {"shutdown", SCOPE_WORDS,
     "^(?:shutdown|reboot|halt|poweroff)(?: |$)|^systemctl (?:poweroff|"
     "reboot|halt|kexec)(?: |$)|^init [06]$",
     "shuts the machine down"},
    {"kill-all", SCOPE_WORDS, "^kill(?: -\\S+)* -1$",
     "signals every process the user owns"},
    {"find-delete-root", SCOPE_WORDS,
     "^find (?:/|~|\\$HOME)(?: \\S+)* -delete(?: |$)",
     "find -delete from / or home"},
};

#define ROUTER_NBUILTIN (sizeof router_builtin / sizeof router_builtin[0])

struct router_re {
    pcre2_code *code;
    const struct router_pattern *pat; /* NULL for policy regexes */
};

struct router {
    struct router_re builtin[ROUTER_NBUILTIN];
    struct router_re *forbid, *allow;
    size_t nforbid, nallow;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    router_grammar_fn grammar_fn;
    void *grammar_data;
    char *home; /* $HOME when the router was made, or NULL */
};

static int router_compile(const char *re, pcre2_code **out, char *err,
                          size_t errlen, const char *what)
{
    int ec;
    PCRE2_SIZE off;
    *out = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ec, &off,
                         NULL);
    if (*out)
        return 0;
    if (err && errlen) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        snprintf(err, errlen, "%s: pattern offset %zu: %s", what,
                 (size_t)off, (const char *)msg);
    }
    return -EINVAL;
}

static bool router_match(const router_t *r, pcre2_code *code,
                         const char *s)
{
    int rc = pcre2_match(code, (PCRE2_SPTR)s, strlen(s), 0, 0, r->md,
                         r->mctx);
    /* A match-limit error counts as no match: an untrusted regex that
     * blows up must not make every command dangerous. */
    return rc >= 0;
}

void router_free(router_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < ROUTER_NBUILTIN; i++)
        pcre2_code_free(r->builtin[i].code);
    for (size_t i = 0; i < r->nforbid; i++)
        pcre2_code_free(r->forbid[i].code);
    for (size_t i = 0; i < r->nallow; i++)
        pcre2_code_free(r->allow[i].code);
    free(r->forbid);
    free(r->allow);
    pcre2_match_data_free(r->md);
    pcre2_match_context_free(r->mctx);
    free(r->home);
    free(r);
}

/* Compiles the policy's array `key` into *res. */
static int router_policy_list(json_t *root, const char *key, const char *path,
                              struct router_re **res, size_t *n, char *err,
                              size_t errlen)
{
    json_t *arr = json_object_get(root, key);
    if (!arr)
        return 0;
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "%s: \"%s\" must be an array of regexes", path,
                 key);
        return -EINVAL;
    }
    size_t cnt = json_array_size(arr);
    *res = calloc(cnt ? cnt : 1, sizeof **res);
    if (!*res)
        return -ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        json_t *s = json_array_get(arr, i);
        char what[512];
        snprintf(what, sizeof what, "%s: %s[%zu]", path, key, i);
        if (!json_is_string(s)) {
            snprintf(err, errlen, "%s: not a string", what);
            return -EINVAL;
        }
        int rc = router_compile(json_string_value(s), &(*res)[i].code, err,
                                errlen, what);
        if (rc < 0)
            return rc;
        (*n)++;
    }
    return 0;
}

static int router_load_policy(router_t *r, const char *path, char *err,
                              size_t errlen)
{
    json_error_t je;
    FILE *f = fopen(path, "re");
    int rc;
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > ROUTER_POLICY_MAX_BYTES) {
        fclose(f);
        snprintf(err, errlen, "%s: larger than %d bytes", path,
                 ROUTER_POLICY_MAX_BYTES);
        return -EFBIG;
    }
    rewind(f);
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        snprintf(err, errlen, "%s: line %d col %d: %s", path, je.line,
                 je.column, je.text);
        return -EINVAL;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "%s: must be a JSON object", path);
        rc = -EINVAL;
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        (void)val;
        if (strcmp(key, "forbid") && strcmp(key, "allow")) {
            /* A typo must not silently drop a rule. */
            snprintf(err, errlen, "%s: unknown field \"%s\"", path, key);
            rc = -EINVAL;
            goto out;
        }
    }
    if ((rc = router_policy_list(root, "forbid", path, &r->forbid,
                                 &r->nforbid, err, errlen)) < 0)
        goto out;
    rc = router_policy_list(root, "allow", path, &r->allow, &r->nallow, err,
                            errlen);
out:
    json_decref(root);
    return rc;
}

int router_new(const char *policy_path, router_t **out, char *err,
               size_t errlen)
{
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    router_t *r = calloc(1, sizeof *r);
    int rc = -ENOMEM;
    if (!r)
        return -ENOMEM;
    r->md = pcre2_match_data_create(16, NULL);
    r->mctx = pcre2_match_context_create(NULL);
    if (!r->md || !r->mctx)
        goto fail;
    /* The home the danger check knows by value even when a command's
     * context gives none (what `~` became in the caller's shell). */
    const char *home = getenv("HOME");
    if (home && !(r->home = strdup(home)))
        goto fail;
    pcre2_set_match_limit(r->mctx, ROUTER_MATCH_LIMIT);
    pcre2_set_depth_limit(r->mctx, ROUTER_DEPTH_LIMIT);
    for (size_t i = 0; i < ROUTER_NBUILTIN; i++) {
        r->builtin[i].pat = &router_builtin[i];
        if ((rc = router_compile(router_builtin[i].regex,
                                 &r->builtin[i].code, err, errlen,
                                 router_builtin[i].id)) < 0)
            goto fail;
    }
    if (policy_path && (rc = router_load_policy(r, policy_path, err,
                                                errlen)) < 0)
        goto fail;
    *out = r;
    return 0;
fail:
    router_free(r);
    return rc;
}

int router_policy_path(char *out, size_t size)
{
    const char *p = getenv("REIN_POLICY");
    int n;
    if (p && *p)
        n = snprintf(out, size, "%s", p);
    else if ((p = getenv("XDG_CONFIG_HOME")) && *p == '/')
        n = snprintf(out, size, "%s/rein/policy.json", p);
    else if ((p = getenv("HOME")) && *p)
        n = snprintf(out, size, "%s/.config/rein/policy.json", p);
    else
        return -ENOENT;
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

void router_set_grammar_category_fn(router_t *r, router_grammar_fn fn,
                                    void *data)
{
    r->grammar_fn = fn;
    r->grammar_data = data;
}

/* -------------------------------------------------------------- routing */

static const char *const router_cat_names[] = {
    [ROUTER_CONDENSE] = "condense",       [ROUTER_NARRATE] = "narrate",
    [ROUTER_PASSTHROUGH] = "passthrough", [ROUTER_STRUCTURED] = "structured",
    [ROUTER_INTERACTIVE] = "interactive", [ROUTER_DANGEROUS] = "dangerous",
};

const char *router_cat_name(router_cat_t c)
{
    if ((unsigned)c >= sizeof router_cat_names / sizeof router_cat_names[0])
        return "condense";
    return router_cat_names[c];
}

int router_cat_parse(const char *name, router_cat_t *out)
{
    for (size_t i = 0;
         i < sizeof router_cat_names / sizeof router_cat_names[0]; i++)
        if (!strcmp(name, router_cat_names[i])) {
            *out = (router_cat_t)i;
            return 0;
        }
    return -EINVAL;
}

static bool router_any(const router_t *r, struct router_re *res, size_t n,
                       const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (router_match(r, res[i].code, s))
            return true;
    return false;
}

/* Words [from, argc) joined by single spaces into b. */
static int router_join(char *const *v, size_t from, size_t argc, buf_t *b)
{
    buf_reset(b);
    for (size_t i = from; i < argc; i++)
        if ((i > from && buf_append_byte(b, ' ') < 0) ||
            buf_append_str(b, v[i]) < 0)
            return -ENOMEM;
    return buf_append(b, "", 0);
}

/*
 * What the danger check found so far in one segment, and where it looks.
 * It reads the segment as a shell would run it: every pipeline stage, and
 * in each stage the commands nested in it -- a subshell or a group (`(cd
 * x && npm publish)`, `{ ...; }`), a command substitution (`$( )`, a
 * backquote, also in double quotes), a process substitution, the bodies
 * of compound commands (after `then`, `do`, `else`, a case item's `)`), a
 * shell's -c string, eval's words.  When in doubt it judges more words as
 * commands, not fewer: quoted text is data, but what runs is never missed.
 */
struct router_judge {
    router_t *r;
    const char *home[2];  /* the home directory by value, or NULL: the */
    size_t nhome[2];      /* command's HOME, the router's (router_new) */
    bool forbid;          /* a policy forbid matched */
    const struct router_pattern *hit; /* the first built-in match */
    buf_t plain, tilde;   /* a stage's normalised forms (scratch) */
};

/* Words that open a compound command or a part of one: the command is the
 * word after them (`then git reset --hard`, `do npm publish`). */
static const char *const router_reserved[] = {
    "if", "then", "else", "elif", "do", "while", "until", "{", "(",
    "coproc", NULL};

/* Text nested deeper than ROUTER_MAX_DANGER_DEPTH is not read: asked. */
static const struct router_pattern router_too_deep = {
    "too-deep", SCOPE_WORDS, NULL,
    "shell text nested too deep to be checked for danger"};

static int router_judge_text(struct router_judge *j, const char *s, size_t n,
                             unsigned depth);

/* The index of the command word in v, past reserved words (shell text
 * only), assignments and wrappers; argc when there is none. */
static size_t router_judge_command_at(char *const *v, size_t argc,
                                      bool shell)
{
    size_t k = 0;
    for (;;) {
        while (shell && k < argc && router_in(v[k], router_reserved))
            k++;
        if (k >= argc)
            return argc;
        size_t w = k + router_skip_wrappers(v + k, argc - k);
        if (w == k || w >= argc)
            return w;
        k = w;
    }
}

/* "~" when word w is the home directory by its value, with or without
 * trailing slashes (what `rm -rf ~` is once a shell expanded it), "~" and
 * a slash and a star for everything in it; else NULL.  Paths below the
 * home are not the home. */
static const char *router_home_word(const struct router_judge *j,
                                    const char *w)
{
    for (size_t h = 0; h < 2; h++) {
        if (!j->home[h] || strncmp(w, j->home[h], j->nhome[h]))
            continue;
        const char *t = w + j->nhome[h];
        if (!strcmp(t, "/*"))
            return "~/*";
        while (*t == '/')
            t++;
        if (!*t)
            return "~";
    }
    return NULL;
}

/* A stage's words v[k..argc) joined by single spaces into j->plain, the
 * command word by its basename (`/usr/bin/git` is `git`); and into
 * j->tilde, the same with any word that is the home directory by value
 * written `~`.  *differ says whether the two differ. */
static int router_judge_forms(struct router_judge *j, char *const *v,
                              size_t k, size_t argc, bool *differ)
{
    buf_reset(&j->plain);
    buf_reset(&j->tilde);
    *differ = false;
    for (size_t i = k; i < argc; i++) {
        const char *w = i == k ? router_base(v[i]) : v[i];
        const char *home = i > k ? router_home_word(j, w) : NULL;
        *differ = *differ || home;
        if ((i > k && (buf_append_byte(&j->plain, ' ') < 0 ||
                       buf_append_byte(&j->tilde, ' ') < 0)) ||
            buf_append_str(&j->plain, w) < 0 ||
            buf_append_str(&j->tilde, home ? home : w) < 0)
            return -ENOMEM;
    }
    if (buf_append(&j->plain, "", 0) < 0 || buf_append(&j->tilde, "", 0) < 0)
        return -ENOMEM;
    return 0;
}

/* The text a command runs as shell text: a shell's -c string, or eval's
 * words joined by spaces (into b); NULL when it runs none. */
static int router_judge_inner(char *const *v, size_t argc, buf_t *b,
                              const char **out)
{
    *out = router_shell_string(v, argc);
    if (!*out && argc >= 2 && !strcmp(router_base(v[0]), "su")) {
        for (size_t i = 1; i < argc && !*out; i++) { /* su [user] -c CMD */
            if ((!strcmp(v[i], "-c") || !strcmp(v[i], "--command")) &&
                i + 1 < argc)
                *out = v[i + 1];
            else if (!strncmp(v[i], "--command=", 10))
                *out = v[i] + 10;
        }
    }
    if (*out || argc < 2 || strcmp(router_base(v[0]), "eval"))
        return 0;
    if (router_join(v, 1, argc, b) < 0)
        return -ENOMEM;
    *out = b->p;
    return 0;
}

/*
 * Judges one command's words (shell: they were read from shell text, so
 * reserved words open it): the text it runs as a shell (-c, eval), then
 * its normalised forms against the policy and the built-in WORDS patterns.
 * A stage the policy allows is not looked up in the built-in table.
 */
static int router_judge_words(struct router_judge *j, char *const *v,
                              size_t argc, unsigned depth, bool shell);

/* ssh's options that take a value (ssh(1)); the word after them is the
 * host, the words after it the remote command. */
static const char *const router_ssh_opts[] = {
    "-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l",
    "-m", "-O", "-o", "-P", "-p", "-Q", "-R", "-S", "-W", "-w", NULL};

/*
 * The commands a command runs for it, judged one level deeper: find's
 * `-exec`, `-execdir`, `-ok` and `-okdir` command (up to its `;` or `+`),
 * its `{}` each of find's starting points in turn when nothing before the
 * -exec filters what it gets (`find / -exec rm -rf {} +` removes /; `find
 * . -name __pycache__ -exec rm -rf {} +` never gets `.`), and ssh's
 * remote command, shell text on the remote host (`ssh host 'rm -rf ~'`).
 * 0 or -ENOMEM.
 */
static int router_judge_runs(struct router_judge *j, char *const *v,
                             size_t argc, unsigned depth)
{
    const char *cmd = router_base(v[0]);
    int rc = 0;
    if (!strcmp(cmd, "ssh")) {
        size_t i = 1;
        while (i < argc && v[i][0] == '-' && strcmp(v[i], "--"))
            i += 1 + (router_in(v[i], router_ssh_opts) && i + 1 < argc);
        i += i < argc && !strcmp(v[i], "--");
        buf_t remote = BUF_INIT;
        if (i + 1 < argc && router_join(v, i + 1, argc, &remote) < 0)
            rc = -ENOMEM;
        else if (i + 1 < argc)
            rc = router_judge_text(j, remote.p, strlen(remote.p), depth + 1);
        buf_free(&remote);
        return rc;
    }
    if (strcmp(cmd, "find"))
        return 0;
    size_t nstart = 1;
    while (nstart < argc && v[nstart][0] != '-' && strcmp(v[nstart], "(") &&
           strcmp(v[nstart], "!"))
        nstart++;
    for (size_t e = nstart; e < argc && rc == 0; e++) {
        if (strcmp(v[e], "-exec") && strcmp(v[e], "-execdir") &&
            strcmp(v[e], "-ok") && strcmp(v[e], "-okdir"))
            continue;
        size_t t = e + 1;
        while (t < argc && strcmp(v[t], ";") && strcmp(v[t], "+"))
            t++;
        size_t n = t - e - 1;
        char **w = n ? calloc(n + 1, sizeof *w) : NULL;
        if (n && !w)
            return -ENOMEM;
        /* `find -exec` with no starting point starts at `.` */
        for (size_t p = 1; n && rc == 0 && p <= (nstart > 1 ? nstart - 1 : 1);
             p++) {
            const char *start = nstart > 1 ? v[p] : ".";
            for (size_t k = 0; k < n; k++)
                w[k] = strcmp(v[e + 1 + k], "{}") || e > nstart
                           ? v[e + 1 + k]
                           : (char *)start;
            rc = router_judge_words(j, w, n, depth + 1, false);
        }
        free(w);
        e = t;
    }
    return rc;
}

static int router_judge_words(struct router_judge *j, char *const *v,
                              size_t argc, unsigned depth, bool shell)
{
    if (depth > ROUTER_MAX_DANGER_DEPTH) {
        if (!j->hit)
            j->hit = &router_too_deep;
        return 0;
    }
    size_t k = router_judge_command_at(v, argc, shell);
    buf_t eval = BUF_INIT;
    bool differ, allow = false;
    int rc = 0;
    if (k >= argc)
        return 0;
    const char *inner = NULL;
    if ((rc = router_judge_inner(v + k, argc - k, &eval, &inner)) < 0 ||
        (inner && (rc = router_judge_text(j, inner, strlen(inner),
                                          depth + 1)) < 0))
        goto out;
    if ((rc = router_judge_forms(j, v, k, argc, &differ)) < 0)
        goto out;
    const char *forms[] = {j->plain.p, differ ? j->tilde.p : NULL};
    for (size_t f = 0; f < 2 && forms[f]; f++) {
        router_t *r = j->r;
        j->forbid = j->forbid || router_any(r, r->forbid, r->nforbid,
                                            forms[f]);
        allow = allow || router_any(r, r->allow, r->nallow, forms[f]);
    }
    for (size_t f = 0; f < 2 && forms[f] && !allow && !j->hit; f++)
        for (size_t b = 0; b < ROUTER_NBUILTIN; b++)
            if (router_builtin[b].scope == SCOPE_WORDS &&
                router_match(j->r, j->r->builtin[b].code, forms[f])) {
                j->hit = &router_builtin[b];
                break;
            }
    if (!j->forbid)
        rc = router_judge_runs(j, v + k, argc - k, depth);
out:
    buf_free(&eval);
    return rc;
}

/* The index of the `close` that ends the group whose `open` is at s[i],
 * quotes, escapes, comments and heredoc bodies respected (the commit
 * message of `git commit -m "$(cat <<'EOF'` ... `1) ...` ... `EOF )"`
 * ended the substitution at its `1)`, and the rest of it was read as
 * commands); `to` when it never ends (its body is then the rest: coarse,
 * never blind). */
static size_t router_group_end(const char *s, size_t i, size_t to,
                               char open, char close)
{
    struct router_heredoc hd[ROUTER_MAX_HEREDOCS];
    size_t nhd = 0;
    unsigned depth = 0;
    bool sq = false, dq = false;
    for (; i < to; i++) {
        char c = s[i];
        if (sq) {
            sq = c != '\'';
        } else if (c == '\\') {
            i++;
        } else if (dq) {
            dq = c != '"';
        } else if (c == '\'' || c == '"') {
            sq = c == '\'';
            dq = c == '"';
        } else if (c == '#' && router_word_start(s, i)) {
            const char *nl = memchr(s + i, '\n', to - i);
            i = nl ? (size_t)(nl - s) - 1 : to;
        } else if (c == '<' && i + 2 < to && s[i + 1] == '<' &&
                   s[i + 2] != '<' && (i == 0 || s[i - 1] != '<') &&
                   nhd < ROUTER_MAX_HEREDOCS) {
            size_t j = i + 2;
            bool tabs = s[j] == '-';
            j += tabs;
            while (j < to && router_blank(s[j]))
                j++;
            size_t e = router_heredoc_word(s, j, to, &hd[nhd]);
            if (e) {
                hd[nhd++].tabs = tabs;
                i = e - 1;
            }
        } else if (c == '\n' && nhd) {
            /* the bodies start on the next line, one after another */
            size_t at = i + 1;
            for (size_t k = 0; k < nhd && at; k++)
                at = router_heredoc_end(s, at, to, &hd[k]);
            if (!at)
                return to;
            nhd = 0;
            i = at - 1;
        } else if (c == open) {
            depth++;
        } else if (c == close && --depth == 0) {
            return i;
        }
    }
    return to;
}

/* The index of the backquote that ends the substitution opened at s[i];
 * `to` when none does. */
static size_t router_bq_end(const char *s, size_t i, size_t to)
{
    for (i++; i < to && s[i] != '`'; i++)
        if (s[i] == '\\')
            i++;
    return i < to ? i : to;
}

/*
 * Judges the commands nested in the stage s[from..to): the bodies of its
 * groups and substitutions, each as shell text one level deeper.  *item
 * is set past the last `)` that closes nothing here (a case item's
 * pattern, `a) rm -rf x`) or a subshell's (`(a) rm -rf x`, as a case
 * pattern may be written), from when there is none: the words after it
 * are a command of their own.
 */
static int router_judge_nested(struct router_judge *j, const char *s,
                               size_t from, size_t to, unsigned depth,
                               size_t *item)
{
    bool dq = false;
    *item = from;
    for (size_t i = from; i < to; i++) {
        char c = s[i];
        size_t open = to; /* a backquote, `(` or `{` that opens a body */
        bool subshell = false;
        if (c == '\\') {
            i++;
            continue;
        }
        if (dq) {
            if (c == '"')
                dq = false;
            else if (c == '`')
                open = i;
            else if (c == '$' && i + 1 < to && s[i + 1] == '(')
                open = i + 1;
        } else if (c == '\'') {
            const char *q = memchr(s + i + 1, '\'', to - i - 1);
            i = q ? (size_t)(q - s) : to;
        } else if (c == '"') {
            dq = true;
        } else if (c == '`') {
            open = i;
        } else if (c == '(') {
            open = i;
            /* Not a substitution (`$(`, `<(`) nor an array (`a=(`): a
             * subshell or a case pattern (`(a) rm -rf x`), where what
             * follows its `)` is a command. */
            subshell = !i || !strchr("$<>=", s[i - 1]);
        } else if (c == '{' && router_word_start(s, i)) {
            /* a group; `${...}` is a parameter: the scan goes on through
             * it, and a substitution in it (`${x:-$(...)}`) is found */
            open = i;
        } else if (c == ')') {
            *item = i + 1;
        } else if (c == '#' && router_word_start(s, i)) {
            const char *nl = memchr(s + i, '\n', to - i);
            i = nl ? (size_t)(nl - s) : to;
        }
        if (open == to)
            continue;
        size_t end = s[open] == '`'   ? router_bq_end(s, open, to)
                     : s[open] == '(' ? router_group_end(s, open, to, '(', ')')
                                      : router_group_end(s, open, to, '{', '}');
        if (subshell)
            *item = end < to ? end + 1 : to;
        int rc = router_judge_text(j, s + open + 1, end - open - 1,
                                   depth + 1);
        if (rc < 0)
            return rc;
        i = end;
    }
    return 0;
}

/* Judges the words of shell text s[from..to) as one command. */
static int router_judge_range(struct router_judge *j, const char *s,
                              size_t from, size_t to, unsigned depth)
{
    char **v = NULL;
    size_t argc = 0;
    int rc = router_words_range(s, from, to, &v, &argc);
    if (rc < 0)
        return rc;
    rc = router_judge_words(j, v, argc, depth, true);
    router_words_free(v);
    return rc;
}

/* Judges one pipeline stage of shell text, s[from..to): what is nested
 * in it, its words, and a case item's command after its pattern. */
static int router_judge_stage(struct router_judge *j, const char *s,
                              size_t from, size_t to, unsigned depth)
{
    size_t item;
    int rc = router_judge_nested(j, s, from, to, depth, &item);
    if (rc == 0)
        rc = router_judge_range(j, s, from, to, depth);
    if (rc == 0 && item > from)
        rc = router_judge_range(j, s, item, to, depth);
    return rc;
}

/*
 * Judges shell text s[0..n) at nesting depth: every pipeline stage of
 * every segment (heredoc bodies that are data left out, as router_split
 * does).  Past ROUTER_MAX_DANGER_DEPTH nothing is read and the text is
 * asked about: text nobody reads must not pass for safe.
 */
static int router_judge_text(struct router_judge *j, const char *s, size_t n,
                             unsigned depth)
{
    buf_t text = BUF_INIT;
    int rc = 0;
    if (depth > ROUTER_MAX_DANGER_DEPTH) {
        if (!j->hit)
            j->hit = &router_too_deep;
        return 0;
    }
    if (depth && n <= ROUTER_MAX_INPUT && memmem(s, n, "<<", 2)) {
        if ((rc = router_drop_heredocs(s, n, &text)) < 0)
            goto out;
        if (text.len) {
            s = text.p;
            n = text.len;
        }
    }
    for (size_t i = 0; i <= n && !j->forbid;) {
        struct router_sep sep;
        router_scan(s, i, n, &sep);
        if ((rc = router_judge_stage(j, s, i, sep.at, depth)) < 0 ||
            sep.len == 0)
            break;
        i = sep.at + sep.len;
    }
out:
    buf_free(&text);
    return rc;
}

/* The home directory by value for the danger check: the command's HOME
 * (ctx's environment, else this process's when it inherits it) and the
 * router's (router_new); one that is not absolute, or `/`, is none. */
static void router_judge_homes(struct router_judge *j, const router_ctx_t *ctx)
{
    const char *h[2] = {NULL, j->r->home};
    if (ctx && ctx->env) {
        size_t n = 0;
        while (ctx->env[n])
            n++;
        h[0] = router_env_find(ctx->env, n, "HOME");
    }
    if (!h[0] && ctx && ctx->inherit_env)
        h[0] = getenv("HOME");
    for (size_t i = 0; i < 2; i++) {
        size_t len = h[i] && h[i][0] == '/' ? strlen(h[i]) : 0;
        while (len && h[i][len - 1] == '/')
            len--;
        j->home[i] = len ? h[i] : NULL;
        j->nhome[i] = len;
    }
}

/* Checks a segment for danger (its text as shell text, or in argv mode
 * its words, run directly) against the policy and the built-in table;
 * sets the segment's danger fields.  whole is the command line. */
static int router_danger_seg(router_t *r, router_seg_t *seg, bool argv_mode,
                             const char *whole, const router_ctx_t *ctx)
{
    struct router_judge j = {.r = r, .plain = BUF_INIT, .tilde = BUF_INIT};
    int rc = 0;
    router_judge_homes(&j, ctx);
    j.forbid = router_any(r, r->forbid, r->nforbid, seg->text) ||
               router_any(r, r->forbid, r->nforbid, whole);
    /* An allow of the segment's text clears a verdict on that text alone
     * (a fork bomb's raw shape).  A command's verdict is cleared only by
     * an allow of that command (router_judge_words): an allowed `git push
     * --force-with-lease` on the line cleared the `rm -rf /` after it. */
    bool allow = router_any(r, r->allow, r->nallow, seg->text);
    if (!j.forbid)
        rc = argv_mode ? router_judge_words(&j, seg->argv, seg->argc, 0, false)
                       : router_judge_text(&j, seg->text, strlen(seg->text),
                                           0);
    buf_free(&j.plain);
    buf_free(&j.tilde);
    if (rc < 0)
        return rc;
    if (!j.hit && !j.forbid)
        for (size_t b = 0; b < ROUTER_NBUILTIN; b++)
            if (router_builtin[b].scope == SCOPE_RAW &&
                router_match(r, r->builtin[b].code, seg->text)) {
                j.hit = &router_builtin[b];
                break;
            }
    if (j.forbid) {
        seg->danger = ROUTER_DANGER_FORBID;
        seg->danger_id = "policy-forbid";
        seg->danger_what = "forbidden by the policy file";
    } else if (j.hit && !(j.hit->scope == SCOPE_RAW && allow)) {
        seg->danger = ROUTER_DANGER_ASK;
        seg->danger_id = j.hit->id;
        seg->danger_what = j.hit->what;
    }
    return 0;
}

/*
 * A segment's category: its first pipeline stage's (a grammar's when the
 * hook knows the command, unless the table says it needs a terminal), or
 * interactive when any later stage needs a terminal (`git log | less`).
 * before[0..nbefore) are the segments ahead of it on the line, for their
 * exports.  words_only: seg->argv is all there is to read (an argv run
 * directly, or a line too long to scan).
 */
static int router_seg_category(router_t *r, router_seg_t *seg,
                               const router_seg_t *before, size_t nbefore,
                               const router_ctx_t *ctx, bool words_only)
{
    struct router_look lk = {.ctx = ctx ? ctx : &router_no_ctx,
                             .segs = before,
                             .nsegs = nbefore,
                             .why = &seg->tty_why,
                             .term_edit = &seg->term_edit};
    size_t n = strlen(seg->text);
    struct router_sep sep = {.at = n, .len = 0};
    bool in = false, out = false;
    if (seg->danger != ROUTER_SAFE) {
        seg->category = ROUTER_DANGEROUS;
        return 0;
    }
    if (!words_only) {
        router_scan(seg->text, 0, n, &sep);
        router_stage_redirs(seg->text, 0, sep.at, &in, &out);
    }
    size_t k = router_skip_wrappers(seg->argv, seg->argc);
    lk.assign = seg->argv;
    lk.nassign = k;
    lk.fed = in;
    lk.out_away = out || (sep.len && sep.pipe);
    router_cat_t cat = router_table(seg->argv + k, seg->argc - k, &lk),
                 gcat = ROUTER_CONDENSE;
    const char *name = NULL;
    if (seg->argc > k && r->grammar_fn &&
        r->grammar_fn((const char *const *)seg->argv + k, seg->argc - k,
                      &gcat, &name, r->grammar_data)) {
        seg->grammar = name;
        if (cat != ROUTER_INTERACTIVE)
            cat = gcat;
    }
    /* The later stages read the pipe: only whether one needs a terminal
     * matters (`cat f | python3` runs a script; `| less` pages). */
    while (sep.len && sep.pipe && cat != ROUTER_INTERACTIVE) {
        size_t from = sep.at + sep.len;
        char **v = NULL;
        size_t argc = 0;
        router_scan(seg->text, from, n, &sep);
        int rc = router_words_range(seg->text, from, sep.at, &v, &argc);
        if (rc < 0)
            return rc;
        router_stage_redirs(seg->text, from, sep.at, &in, &out);
        k = router_skip_wrappers(v, argc);
        lk.assign = v;
        lk.nassign = k;
        lk.fed = true;
        lk.out_away = out || (sep.len && sep.pipe);
        if (router_table(v + k, argc - k, &lk) == ROUTER_INTERACTIVE)
            cat = ROUTER_INTERACTIVE;
        router_words_free(v);
    }
    seg->category = cat;
    if (cat != ROUTER_INTERACTIVE)
        seg->tty_why = NULL; /* a stage's reason, overruled */
    return 0;
}

/* The whole line's category from its segments'. */
static void router_combine(router_result_t *res)
{
    res->category = ROUTER_CONDENSE;
    res->danger = ROUTER_SAFE;
    bool same = res->nsegs > 0, inter = false;
    for (size_t i = 0; i < res->nsegs; i++) {
        router_seg_t *s = &res->segs[i];
        if (s->danger > res->danger) {
            if (res->danger == ROUTER_SAFE || s->danger ==
                                                  ROUTER_DANGER_FORBID) {
                res->danger_id = s->danger_id;
                res->danger_what = s->danger_what;
            }
            res->danger = s->danger;
        }
        if (s->category == ROUTER_INTERACTIVE && !inter) {
            inter = true;
            res->tty_why = s->tty_why;
        }
        res->term_edit = res->term_edit || s->term_edit;
        if (s->category != res->segs[0].category)
            same = false;
    }
    if (res->nsegs)
        res->grammar = res->segs[0].grammar;
    if (res->danger != ROUTER_SAFE)
        res->category = ROUTER_DANGEROUS;
    else if (inter)
        res->category = ROUTER_INTERACTIVE;
    else if (same)
        res->category = res->segs[0].category;
}

void router_result_free(router_result_t *res)
{
    if (!res)
        return;
    router_segs_free(res->segs, res->nsegs);
    memset(res, 0, sizeof *res);
}

int router_classify(router_t *r, const char *cmdline, router_result_t *out)
{
    return router_classify_ctx(r, cmdline, NULL, out);
}

int router_classify_ctx(router_t *r, const char *cmdline,
                        const router_ctx_t *ctx, router_result_t *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    if (!r || !cmdline)
        return -EINVAL;
    if ((rc = router_split(cmdline, &out->segs, &out->nsegs)) < 0)
        return rc;
    out->shell_text = true;
    bool whole = strlen(cmdline) > ROUTER_MAX_INPUT;
    for (size_t i = 0; i < out->nsegs; i++) {
        router_seg_t *s = &out->segs[i];
        if (whole) {
            /* Too long to read into: condense, but still judge danger. */
            if (!(s->argv = calloc(1, sizeof *s->argv))) {
                rc = -ENOMEM;
                goto fail;
            }
        } else if ((rc = router_words(s->text, &s->argv, &s->argc)) < 0)
            goto fail;
        if ((rc = router_danger_seg(r, s, false, cmdline, ctx)) < 0 ||
            (rc = router_seg_category(r, s, out->segs, i, ctx, whole)) < 0)
            goto fail;
    }
    /* Shapes that span segments (a fork bomb) are seen on the raw line. */
    if (out->nsegs) {
        for (size_t b = 0; b < ROUTER_NBUILTIN; b++)
            if (router_builtin[b].scope == SCOPE_RAW &&
                out->segs[0].danger == ROUTER_SAFE &&
                router_match(r, r->builtin[b].code, cmdline) &&
                !router_any(r, r->allow, r->nallow, cmdline)) {
                out->segs[0].danger = ROUTER_DANGER_ASK;
                out->segs[0].danger_id = router_builtin[b].id;
                out->segs[0].danger_what = router_builtin[b].what;
                out->segs[0].category = ROUTER_DANGEROUS;
                break;
            }
    }
    router_combine(out);
    return 0;
fail:
    router_result_free(out);
    return rc;
}

int router_classify_argv(router_t *r, const char *const *argv,
                         router_result_t *out)
{
    return router_classify_argv_ctx(r, argv, NULL, out);
}

int router_classify_argv_ctx(router_t *r, const char *const *argv,
                             const router_ctx_t *ctx, router_result_t *out)
{
    buf_t line = BUF_INIT;
    size_t argc = 0;
    int rc = -ENOMEM;
    memset(out, 0, sizeof *out);
    if (!r || !argv || !argv[0])
        return -EINVAL;
    while (argv[argc])
        argc++;
    /* `sh -c STRING` (after wrappers) is routed as the string it runs. */
    size_t k = router_skip_wrappers((char *const *)argv, argc);
    const char *str = router_shell_string((char *const *)argv + k, argc - k);
    if (str)
        return router_classify_ctx(r, str, ctx, out);
    out->segs = calloc(1, sizeof *out->segs);
    if (!out->segs)
        goto fail;
    out->nsegs = 1;
    router_seg_t *s = &out->segs[0];
    size_t keep = argc < ROUTER_MAX_WORDS ? argc : ROUTER_MAX_WORDS;
    s->argv = calloc(keep + 1, sizeof *s->argv);
    if (!s->argv)
        goto fail;
    for (size_t i = 0; i < keep; i++) {
        if (!(s->argv[i] = strdup(argv[i])))
            goto fail;
        s->argc++;
    }
    if (router_join(s->argv, 0, s->argc, &line) < 0)
        goto fail;
    s->text = buf_detach(&line);
    if (!s->text)
        goto fail;
    if ((rc = router_danger_seg(r, s, true, s->text, ctx)) < 0 ||
        (rc = router_seg_category(r, s, NULL, 0, ctx, true)) < 0)
        goto fail;
    router_combine(out);
    return 0;
fail:
    buf_free(&line);
    router_result_free(out);
    return rc;
}
