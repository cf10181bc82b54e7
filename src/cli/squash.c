/*
 * squash.c (cli) — `rein squash` and `rein grammar check`.
 *
 * `rein squash --as "<command line>" [--exit N] < raw` condenses output
 * captured elsewhere, so a log can be piped through rein and a grammar
 * tried on real output.  The condensed view names where the full output
 * is: --log PATH, else stdin's own file when stdin is a regular file, else
 * a copy rein writes under its state directory (logs/).
 *
 * `rein grammar check FILE [SAMPLE]` validates one grammar file (errors
 * name the file, the rule and the offset) and, given a sample, prints each
 * VT-stripped line with the tier and rule that classified it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "cli/cli.h"
#include "squash/classify.h"
#include "squash/grammar.h"
#include "squash/squash.h"
#include "squash/vt.h"

/* stdin is read in chunks of this size. */
#define CLI_READ_CHUNK (64u * 1024u)

/* Parses v as a whole decimal number of at most max into *out. */
static bool cli_number(const char *v, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *v == '-' || *end || errno || x > max)
        return false;
    *out = x;
    return true;
}

int cli_squash(int argc, char **argv);
int cli_grammar(int argc, char **argv);

static void cli_out(const char *text, size_t len, void *data)
{
    (void)data;
    fwrite(text, 1, len, stdout);
}

/* mkdir -p for the state dir's logs/, 0700. */
static int cli_mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc < 0 && errno != EEXIST)
            return -errno;
    }
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Opens a fresh log file for a copy of stdin; path receives its name. */
static int cli_log_open(char *path, size_t cap)
{
    const char *st = getenv("REIN_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[PATH_MAX - 64];
    if (st && *st)
        snprintf(dir, sizeof dir, "%s/logs", st);
    else if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/rein/logs", xdg);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.local/state/rein/logs", home);
    else
        return -ENOENT;
    int rc = cli_mkdirs(dir);
    if (rc < 0)
        return rc;
    if ((size_t)snprintf(path, cap, "%.*s/squash-%ld-%d.log",
                         (int)(sizeof dir - 1), dir, (long)time(NULL),
                         (int)getpid()) >= cap)
        return -ENAMETOOLONG;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

/* One line naming what was wrong with the arguments, then the usage. */
__attribute__((format(printf, 1, 2))) static int cli_squash_usage(
    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rein squash: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (usage: " CLI_SQUASH_USAGE ")\n");
    return CLI_EXIT_USAGE;
}

int cli_squash(int argc, char **argv)
{
    sq_opts_t o;
    memset(&o, 0, sizeof o);
    int exit_code = 0;
    uint64_t duration = 0;
    const char *log = NULL;
    bool stream = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--as") && v) {
            o.command = v;
            i++;
        } else if (!strcmp(a, "--exit") && v) {
            uint64_t x;
            if (!cli_number(v, 255, &x))
                return cli_squash_usage("--exit takes a status 0..255, not "
                                        "'%s'", v);
            exit_code = (int)x;
            i++;
        } else if (!strcmp(a, "--duration") && v) {
            if (!cli_number(v, UINT64_MAX, &duration))
                return cli_squash_usage("--duration takes milliseconds, not "
                                        "'%s'", v);
            i++;
        } else if (!strcmp(a, "--log") && v) {
            log = v;
            i++;
        } else if (!strcmp(a, "--budget") && v) {
            uint64_t x;
            if (!cli_number(v, SIZE_MAX, &x))
                return cli_squash_usage("--budget takes bytes, not '%s'", v);
            o.budget_bytes = (size_t)x;
            i++;
        } else if (!strcmp(a, "--cols") && v) {
            uint64_t x;
            if (!cli_number(v, REIN_PTY_MAX_COLS, &x) ||
                x < REIN_PTY_MIN_COLS)
                return cli_squash_usage("--cols takes the terminal's width, "
                                        "%d..%d columns, not '%s'",
                                        REIN_PTY_MIN_COLS, REIN_PTY_MAX_COLS,
                                        v);
            o.cols = (unsigned)x;
            i++;
        } else if (!strcmp(a, "--stream")) {
            stream = true;
        } else if (!v && (!strcmp(a, "--as") || !strcmp(a, "--exit") ||
                          !strcmp(a, "--duration") || !strcmp(a, "--log") ||
                          !strcmp(a, "--budget") || !strcmp(a, "--cols"))) {
            return cli_squash_usage("%s needs a value", a);
        } else {
            return cli_squash_usage("unknown option '%s'", a);
        }
    }
    char logpath[PATH_MAX];
    int logfd = -1;
    struct stat st;
    if (!log && fstat(0, &st) == 0 && S_ISREG(st.st_mode) &&
        realpath("/proc/self/fd/0", logpath))
        log = logpath;
    if (!log) {
        logfd = cli_log_open(logpath, sizeof logpath);
        if (logfd >= 0)
            log = logpath;
    }
    o.log_path = log;
    o.deferred = !stream;
    o.cap_to_input = !stream && !o.budget_bytes;
    squash_t *sq;
    int rc = squash_new(&o, cli_out, NULL, &sq);
    if (rc < 0) {
        fprintf(stderr, "rein squash: %s\n", strerror(-rc));
        if (logfd >= 0)
            close(logfd);
        return CLI_EXIT_FAILURE;
    }
    char *chunk = malloc(CLI_READ_CHUNK);
    if (!chunk)
        rc = -ENOMEM;
    while (rc == 0) {
        ssize_t n = read(0, chunk, CLI_READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        if (logfd >= 0 && write(logfd, chunk, (size_t)n) != n) {
            close(logfd);
            logfd = -1;
        }
        if ((rc = squash_feed(sq, chunk, (size_t)n, 0)) < 0)
            break;
    }
    free(chunk);
    if (logfd >= 0)
        close(logfd);
    if (rc == 0)
        rc = squash_finish(sq, exit_code, duration, 0);
    squash_free(sq);
    fflush(stdout);
    if (rc < 0) {
        fprintf(stderr, "rein squash: %s\n", strerror(-rc));
        return CLI_EXIT_FAILURE;
    }
    return 0;
}

/* ----------------------------------------------------- grammar check */

struct cli_check {
    classify_t *cls;
    int rc;
    /* a line held as an excerpt (cls_result_t.pending), printed when the
     * next line says what it is */
    buf_t held;
    uint64_t held_lineno;
    cls_result_t held_r;
    bool held_valid;
};

static const char *cli_kind(const cls_result_t *r)
{
    switch (r->kind) {
    case CLS_HAZARD:
        return r->warning ? "warning" : "error";
    case CLS_OUTCOME:
        return "outcome";
    case CLS_NOISE:
        return r->lead ? "lead" : "noise";
    case CLS_PROMPT:
        return "prompt";
    case CLS_BINARY:
        return "binary";
    default:
        return "unknown";
    }
}

static void cli_check_print(uint64_t lineno, const cls_result_t *r,
                            const char *text, size_t len)
{
    char rule[160];
    snprintf(rule, sizeof rule, "%s/%s", r->source, r->rule);
    printf("%6" PRIu64 " %-8s %s%-28s | %.*s\n", lineno, cli_kind(r),
           r->cont ? "+" : " ", rule, (int)len, text);
}

static int cli_check_line(const sq_line_t *l, void *data)
{
    struct cli_check *c = data;
    cls_result_t r;
    int rc = classify_line(c->cls, l, &r);
    if (rc < 0)
        return rc;
    if (c->held_valid) {
        /* a held line is the excerpt of the hazard above when this line
         * confirms it, else what it was judged */
        c->held_valid = false;
        cli_check_print(c->held_lineno, r.confirms ? &r : &c->held_r,
                        c->held.p, c->held.len);
    }
    if (r.pending) {
        buf_reset(&c->held);
        if ((rc = buf_append(&c->held, l->text, l->len)) < 0)
            return rc;
        c->held_lineno = l->lineno;
        c->held_r = r;
        c->held_valid = true;
        return 0;
    }
    cli_check_print(l->lineno, &r, l->text, l->len);
    return 0;
}

static int cli_grammar_check(const char *file, const char *sample)
{
    buf_t err = BUF_INIT;
    grammar_t *g;
    int rc = grammar_load_file(file, &g, &err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err.p ? err.p : file);
        buf_free(&err);
        return 1;
    }
    /* Resolve its includes against everything installed. */
    grammar_set_t *set = NULL;
    buf_reset(&err);
    rc = grammar_set_load(&set, NULL, &err);
    if (rc == 0)
        rc = grammar_set_add(set, g);
    else
        grammar_free(g);
    g = NULL;
    buf_t rerr = BUF_INIT;
    if (rc == 0)
        rc = grammar_set_resolve(set, &rerr);
    const grammar_t *mine = NULL;
    for (size_t i = 0; set && i < grammar_set_count(set); i++)
        if (!strcmp(grammar_label(grammar_set_at(set, i)), file))
            mine = grammar_set_at(set, i);
    if (rc < 0 || !mine) {
        fprintf(stderr, "%s\n", rerr.p ? rerr.p : "rein grammar check: failed");
        grammar_set_free(set);
        buf_free(&err);
        buf_free(&rerr);
        return 1;
    }
    static const char *const tiers[GRAMMAR_TIERS] = {"hazard", "outcome", "noise"};
    printf("%s: grammar %s (category %s): ok\n", file, grammar_name(mine),
           grammar_category(mine));
    for (int t = 0; t < GRAMMAR_TIERS; t++)
        for (size_t i = 0; i < grammar_rule_count(mine, (grammar_tier_t)t); i++) {
            const grammar_rule_t *r = grammar_rule_at(mine, (grammar_tier_t)t, i);
            printf("  %-8s %-24s %s\n", tiers[t], grammar_rule_id(r),
                   grammar_rule_pattern(r));
        }
    int status = 0;
    if (sample) {
        FILE *f = fopen(sample, "rb");
        if (!f) {
            fprintf(stderr, "%s: %s\n", sample, strerror(errno));
            status = 1;
        } else {
            struct cli_check c = {0};
            vt_t *vt = NULL;
            if (classify_new(mine, &c.cls) < 0 || vt_new(cli_check_line, &c, &vt) < 0) {
                status = CLI_EXIT_FAILURE;
            } else {
                printf("\n");
                size_t n;
                char chunk[4096];
                while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
                    if (vt_feed(vt, chunk, n, 0) < 0)
                        status = CLI_EXIT_FAILURE;
                if (vt_finish(vt) < 0)
                    status = CLI_EXIT_FAILURE;
                if (c.held_valid)
                    cli_check_print(c.held_lineno, &c.held_r, c.held.p,
                                    c.held.len);
                if (classify_limit_hits(c.cls))
                    printf("note: %" PRIu64 " matches stopped at the match/depth limit\n",
                           classify_limit_hits(c.cls));
            }
            vt_free(vt);
            classify_free(c.cls);
            buf_free(&c.held);
            fclose(f);
        }
    }
    grammar_set_free(set);
    buf_free(&err);
    buf_free(&rerr);
    return status;
}

int cli_grammar(int argc, char **argv)
{
    if (argc >= 3 && argc <= 4 && !strcmp(argv[1], "check"))
        return cli_grammar_check(argv[2], argc == 4 ? argv[3] : NULL);
    fprintf(stderr, "usage: " CLI_GRAMMAR_USAGE "\n");
    return CLI_EXIT_USAGE;
}
