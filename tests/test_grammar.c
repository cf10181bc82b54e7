/*
 * test_grammar.c — the grammar loader and matcher: the documented format,
 * every error form (JSON, field, PCRE2 offset, include), every limit at its
 * edge, match limits on a pathological pattern, sets with overrides and
 * includes, command detection (every grammar of a compound line, at most
 * GRAMMAR_PER_COMMAND_MAX of them), and `rein grammar check`.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/spawn.h"
#include "harness.h"
#include "squash/grammar.h"
#include "tutil.h"

static const char gcc_json[] =
    "{\"name\":\"gcc\",\"description\":\"GCC\","
    "\"detect\":{\"commands\":[\"gcc\",\"cc\"],\"args\":null},"
    "\"category\":\"condense\",\"include\":[\"_shared/t\"],"
    "\"hazard\":[{\"id\":\"diag\",\"pattern\":"
    "\"^(?<file>[^:\\\\s]+):(?<line>\\\\d+):(?:(?<col>\\\\d+):)? error: \","
    "\"severity\":\"error\",\"multiline\":{\"continue\":\"^ \",\"max_lines\":3}}],"
    "\"outcome\":[{\"id\":\"gen\",\"pattern\":\"^\\\\d+ errors? generated\"}],"
    "\"noise\":[{\"id\":\"inc\",\"pattern\":\"^In file included\",\"action\":\"strip\"}]}";

static const char shared_json[] =
    "{\"name\":\"_shared/t\",\"hazard\":[{\"id\":\"tb\",\"pattern\":\"^Traceback\","
    "\"multiline\":{\"until\":\"^\\\\S\"}}],"
    "\"noise\":[{\"id\":\"warnred\",\"pattern\":\"warn\",\"colour\":\"yellow\","
    "\"action\":\"dedup\"}]}";

static int parse(const char *json, grammar_t **g, buf_t *err)
{
    return grammar_parse("t.json", json, strlen(json), g, err);
}

/* A command line and the grammars detection must pick, their names in
 * priority order separated by spaces (NULL: none). */
struct det {
    const char *cmd, *want;
};

static void check_detect(const grammar_set_t *set, grammar_ctx_t *ctx,
                         const struct det *det, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const grammar_t *gs[GRAMMAR_PER_COMMAND_MAX];
        size_t ng = grammar_set_detect_all(set, ctx, det[i].cmd, gs);
        buf_t got = BUF_INIT;
        for (size_t k = 0; k < ng; k++)
            buf_printf(&got, "%s%s", k ? " " : "", grammar_name(gs[k]));
        const char *g = got.p ? got.p : "";
        if (strcmp(g, det[i].want ? det[i].want : ""))
            test_fail(__FILE__, __LINE__, "%s: detected \"%s\", want \"%s\"",
                      det[i].cmd, g, det[i].want ? det[i].want : "");
        /* the single grammar is the first of them */
        const grammar_t *one = grammar_set_detect(set, ctx, det[i].cmd);
        if (one != (ng ? gs[0] : NULL))
            test_fail(__FILE__, __LINE__, "%s: grammar_set_detect is %s",
                      det[i].cmd, one ? grammar_name(one) : "none");
        buf_free(&got);
    }
}

TEST(grammar_parses_the_documented_format)
{
    grammar_t *g;
    buf_t err = BUF_INIT;
    ASSERT_OK(parse(gcc_json, &g, &err));
    ASSERT_STR(grammar_name(g), "gcc");
    ASSERT_STR(grammar_category(g), "condense");
    ASSERT_EQ(grammar_rule_count(g, GRAMMAR_HAZARD), 1);
    ASSERT_EQ(grammar_rule_count(g, GRAMMAR_OUTCOME), 1);
    ASSERT_EQ(grammar_rule_count(g, GRAMMAR_NOISE), 1);
    ASSERT_EQ(grammar_rule_max_lines(grammar_rule_at(g, GRAMMAR_HAZARD, 0)), 3);
    grammar_ctx_t *ctx;
    ASSERT_OK(grammar_ctx_new(&ctx));
    grammar_match_t m;
    const char *l = "src/a.c:12:5: error: boom";
    ASSERT_EQ(grammar_match(g, ctx, l, strlen(l), 0, &m), 1);
    ASSERT_STR(m.id, "diag");
    ASSERT_EQ(m.tier, GRAMMAR_HAZARD);
    ASSERT_TRUE(m.has_file);
    ASSERT_EQ(m.file_off, 0);
    ASSERT_EQ(m.file_len, 7);
    ASSERT_EQ(m.line, 12);
    ASSERT_EQ(m.col, 5);
    bool last;
    ASSERT_EQ(grammar_rule_continues(m.rule, ctx, "  | x", 5, &last), 1);
    ASSERT_EQ(grammar_rule_continues(m.rule, ctx, "next", 4, &last), 0);
    l = "2 errors generated.";
    ASSERT_EQ(grammar_match(g, ctx, l, strlen(l), 0, &m), 1);
    ASSERT_EQ(m.tier, GRAMMAR_OUTCOME);
    l = "In file included from x.h";
    ASSERT_EQ(grammar_match(g, ctx, l, strlen(l), 0, &m), 1);
    ASSERT_EQ(m.action, GRAMMAR_STRIP);
    ASSERT_EQ(grammar_match(g, ctx, "nothing", 7, 0, &m), 0);
    grammar_ctx_free(ctx);
    grammar_free(g);
    buf_free(&err);
}

static void expect_err(const char *json, const char *needle)
{
    grammar_t *g = NULL;
    buf_t err = BUF_INIT;
    int rc = parse(json, &g, &err);
    if (rc >= 0)
        test_fail(__FILE__, __LINE__, "accepted: %s", json);
    ASSERT_TRUE(g == NULL);
    ASSERT_CONTAINS(err.p, needle);
    buf_free(&err);
}

TEST(grammar_errors_name_file_rule_and_offset)
{
    expect_err("{\"name\":", "t.json: line 1 col");
    expect_err("[1]", "t.json: line 1 col 1: a grammar is a JSON object");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"bad\",\"pattern\":\"a(b\"}]}",
               "t.json: rule bad: pattern offset 3: ");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"r\",\"pattern\":\"a\","
               "\"multiline\":{\"until\":\"[\"}}]}",
               "t.json: rule r: multiline.until offset 1: ");
    expect_err("{\"name\":\"x\",\"nosie\":[]}", "t.json: grammar: unknown field 'nosie'");
    expect_err("{\"name\":\"x\",\"noise\":[{\"id\":\"n\",\"pattern\":\"a\",\"sevrity\":1}]}",
               "t.json: rule n: unknown field 'sevrity'");
    expect_err("{\"name\":\"x\",\"noise\":[{\"id\":\"n\",\"pattern\":\"a\","
               "\"severity\":\"error\"}]}", "t.json: rule n: 'severity' is for hazards");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"d\",\"pattern\":\"a\"},"
               "{\"id\":\"d\",\"pattern\":\"b\"}]}", "t.json: rule d: duplicate id");
    expect_err("{\"name\":\"x\",\"outcome\":[{\"id\":\"d\",\"pattern\":\"a\"}],"
               "\"noise\":[{\"id\":\"d\",\"pattern\":\"b\"}]}", "rule d: duplicate id");
    expect_err("{\"name\":\"x\",\"category\":\"loud\"}", "'category' must be one of");
    expect_err("{\"name\":3}", "'name' must be a non-empty string");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"pattern\":\"a\"}]}", "'id' must be");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"m\",\"pattern\":\"a\","
               "\"multiline\":{\"continue\":\"a\",\"until\":\"b\"}}]}",
               "rule m: multiline needs one of");
    /* a gutterless excerpt is a `continue` capture's, and a regex */
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"e\",\"pattern\":\"a\","
               "\"multiline\":{\"until\":\"b\",\"excerpt\":\"c\"}}]}",
               "rule e: multiline.excerpt is a string, with 'continue'");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"e\",\"pattern\":\"a\","
               "\"multiline\":{\"continue\":\"b\",\"excerpt\":1}}]}",
               "rule e: multiline.excerpt is a string");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"e\",\"pattern\":\"a\","
               "\"multiline\":{\"continue\":\"b\",\"excerpt\":\"(\"}}]}",
               "t.json: rule e: multiline.excerpt offset 1: ");
    expect_err("{\"name\":\"x\",\"name\":\"y\"}", "duplicate");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"c\",\"pattern\":\"a\","
               "\"colour\":\"blue\"}]}", "rule c: 'colour'");
    expect_err("{\"name\":\"x\",\"detect\":{\"commands\":[1]}}", "detect.commands");
    expect_err("{\"name\":\"x\",\"noise\":[{\"id\":\"n\",\"pattern\":\"a\","
               "\"action\":\"keep\"}]}",
               "rule n: 'action' is for noise: \"strip\", \"dedup\" or \"lead\"");
    expect_err("{\"name\":\"x\",\"hazard\":[{\"id\":\"h\",\"pattern\":\"a\","
               "\"action\":\"lead\"}]}", "rule h: 'action' is for noise");
}

/* A noise rule's third action: lines that lead into the hazard below
 * them (docs/grammars.md); the squasher decides what becomes of them. */
TEST(grammar_noise_rule_action_lead)
{
    grammar_t *g = NULL;
    grammar_ctx_t *ctx = NULL;
    buf_t err = BUF_INIT;
    grammar_match_t m;
    ASSERT_OK(parse("{\"name\":\"x\",\"noise\":[{\"id\":\"inc\","
                    "\"pattern\":\"^In file included from \",\"action\":\"lead\"},"
                    "{\"id\":\"blank\",\"pattern\":\"^$\"}]}", &g, &err));
    ASSERT_OK(grammar_ctx_new(&ctx));
    const char *l = "In file included from a.c:1:";
    ASSERT_EQ(grammar_match(g, ctx, l, strlen(l), 0, &m), 1);
    ASSERT_EQ(m.tier, GRAMMAR_NOISE);
    ASSERT_EQ(m.action, GRAMMAR_LEAD);
    ASSERT_EQ(grammar_match(g, ctx, "", 0, 0, &m), 1);
    ASSERT_EQ(m.action, GRAMMAR_STRIP);
    grammar_ctx_free(ctx);
    grammar_free(g);
    buf_free(&err);
}

TEST(grammar_multiline_max_lines_edges)
{
    char json[256];
    grammar_t *g;
    buf_t err = BUF_INIT;
    static const int ok[] = {1, GRAMMAR_MULTILINE_MAX};
    static const int bad[] = {0, GRAMMAR_MULTILINE_MAX + 1};
    for (size_t i = 0; i < 2; i++) {
        snprintf(json, sizeof json, "{\"name\":\"x\",\"hazard\":[{\"id\":\"m\","
                 "\"pattern\":\"a\",\"multiline\":{\"continue\":\"b\","
                 "\"max_lines\":%d}}]}", ok[i]);
        ASSERT_OK(parse(json, &g, &err));
        ASSERT_EQ(grammar_rule_max_lines(grammar_rule_at(g, GRAMMAR_HAZARD, 0)),
                  ok[i]);
        grammar_free(g);
        snprintf(json, sizeof json, "{\"name\":\"x\",\"hazard\":[{\"id\":\"m\","
                 "\"pattern\":\"a\",\"multiline\":{\"continue\":\"b\","
                 "\"max_lines\":%d}}]}", bad[i]);
        ASSERT_INT(parse(json, &g, &err), <, 0);
        ASSERT_CONTAINS(err.p, "max_lines must be an integer 1..200");
    }
    buf_free(&err);
}

/* A grammar with n noise rules. */
static void rules_json(buf_t *b, size_t n)
{
    buf_reset(b);
    buf_append_str(b, "{\"name\":\"many\",\"noise\":[");
    for (size_t i = 0; i < n; i++)
        buf_printf(b, "%s{\"id\":\"r%zu\",\"pattern\":\"^x%zu$\"}", i ? "," : "", i, i);
    buf_append_str(b, "]}");
}

TEST(grammar_rule_count_limit_at_its_edge)
{
    buf_t b = BUF_INIT, err = BUF_INIT;
    grammar_t *g;
    rules_json(&b, GRAMMAR_RULES_MAX);
    ASSERT_OK(grammar_parse("t.json", b.p, b.len, &g, &err));
    grammar_free(g);
    rules_json(&b, GRAMMAR_RULES_MAX + 1);
    ASSERT_INT(grammar_parse("t.json", b.p, b.len, &g, &err), <, 0);
    ASSERT_CONTAINS(err.p, "257 rules (limit 256)");
    buf_free(&b);
    buf_free(&err);
}

TEST(grammar_pattern_and_file_size_limits_at_their_edges)
{
    buf_t b = BUF_INIT, err = BUF_INIT;
    grammar_t *g;
    for (int over = 0; over < 2; over++) {
        buf_reset(&b);
        buf_append_str(&b, "{\"name\":\"p\",\"noise\":[{\"id\":\"long\",\"pattern\":\"");
        for (size_t i = 0; i < GRAMMAR_PATTERN_MAX + (size_t)over; i++)
            buf_append_byte(&b, 'a');
        buf_append_str(&b, "\"}]}");
        int rc = grammar_parse("t.json", b.p, b.len, &g, &err);
        if (!over) {
            ASSERT_OK(rc);
            grammar_free(g);
        } else {
            ASSERT_INT(rc, <, 0);
            ASSERT_CONTAINS(err.p, "rule long: pattern is 4097 bytes (limit 4096)");
        }
    }
    /* file size: pad with whitespace to exactly the limit, then one more */
    for (int over = 0; over < 2; over++) {
        buf_reset(&b);
        buf_append_str(&b, "{\"name\":\"f\"}");
        while (b.len < GRAMMAR_FILE_MAX + (size_t)over)
            buf_append_byte(&b, ' ');
        int rc = grammar_parse("t.json", b.p, b.len, &g, &err);
        if (!over) {
            ASSERT_OK(rc);
            grammar_free(g);
        } else {
            ASSERT_EQ(rc, -EFBIG);
        }
    }
    buf_free(&b);
    buf_free(&err);
}

TEST(grammar_match_limit_stops_a_pathological_pattern)
{
    grammar_t *g;
    buf_t err = BUF_INIT;
    ASSERT_OK(parse("{\"name\":\"evil\",\"hazard\":[{\"id\":\"rx\","
                    "\"pattern\":\"^(a+)+$\"}]}", &g, &err));
    grammar_ctx_t *ctx;
    ASSERT_OK(grammar_ctx_new(&ctx));
    char line[64];
    memset(line, 'a', sizeof line - 1);
    line[sizeof line - 1] = 'b';
    grammar_match_t m;
    uint64_t t0 = test_now_ms();
    ASSERT_EQ(grammar_match(g, ctx, line, sizeof line, 0, &m), 0);
    ASSERT_INT(test_now_ms() - t0, <, 2000);
    ASSERT_EQ(grammar_ctx_limit_hits(ctx), 1);
    grammar_ctx_free(ctx);
    grammar_free(g);
    buf_free(&err);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ASSERT_TRUE(f != NULL);
    fputs(text, f);
    fclose(f);
}

TEST(grammar_sets_include_override_and_detect)
{
    char a[PATH_MAX], b[PATH_MAX], sh[PATH_MAX + 16];
    snprintf(a, sizeof a, "%s/shipped", test_tmpdir());
    snprintf(b, sizeof b, "%s/user", test_tmpdir());
    snprintf(sh, sizeof sh, "%s/_shared", a);
    ASSERT_EQ(mkdir(a, 0700), 0);
    ASSERT_EQ(mkdir(b, 0700), 0);
    ASSERT_EQ(mkdir(sh, 0700), 0);
    write_file(a, "gcc.json", gcc_json);
    write_file(sh, "t.json", shared_json);
    write_file(a, "npm.json", "{\"name\":\"npm\",\"detect\":{\"commands\":[\"npm\"]}}");
    write_file(a, "npmi.json", "{\"name\":\"npm-install\",\"detect\":{\"commands\":"
                               "[\"npm\"],\"args\":\"^(install|ci|i)\\\\b\"}}");
    write_file(a, "broken.json", "{\"name\":\"broken\",\"include\":[\"nope\"]}");
    write_file(a, "bad.json", "{ nope");
    /* the user's file of the same name replaces the shipped one */
    write_file(b, "npm.json", "{\"name\":\"npm\",\"category\":\"passthrough\","
                              "\"detect\":{\"commands\":[\"npm\"]}}");
    const char *dirs[] = {a, b, NULL};
    grammar_set_t *set;
    buf_t errs = BUF_INIT;
    ASSERT_OK(grammar_set_load(&set, dirs, &errs));
    ASSERT_CONTAINS(errs.p, "bad.json: line 1 col");
    ASSERT_CONTAINS(errs.p, "broken.json: include: unknown grammar 'nope'");
    ASSERT_TRUE(grammar_set_find(set, "broken") == NULL);
    ASSERT_EQ(grammar_set_count(set), 4);
    ASSERT_STR(grammar_category(grammar_set_find(set, "npm")), "passthrough");

    grammar_ctx_t *ctx;
    ASSERT_OK(grammar_ctx_new(&ctx));
    static const struct det det[] = {
        {"gcc -c x.c", "gcc"},
        {"/usr/bin/gcc -c x.c", "gcc"},
        {"sudo -E env CC=1 time nice -n 5 gcc x.c", "gcc"},
        {"FOO=bar cc x.c && make", "gcc"},
        {"npm install express", "npm-install"},
        {"npm ci", "npm-install"},
        {"npm run build", "npm"},
        {"npx npm i", "npm-install"},
        {"python3 -m gcc x", "gcc"},
        {"make", NULL},
        {"", NULL},
        {"'gcc' x", "gcc"},
    };
    check_detect(set, ctx, det, sizeof det / sizeof det[0]);
    /* an included grammar's rules apply, hazards before own noise */
    const grammar_t *gcc = grammar_set_find(set, "gcc");
    grammar_match_t m;
    ASSERT_EQ(grammar_match(gcc, ctx, "Traceback (x)", 13, 0, &m), 1);
    ASSERT_STR(m.id, "tb");
    ASSERT_STR(grammar_name(m.grammar), "_shared/t");
    bool last;
    ASSERT_EQ(grammar_rule_continues(m.rule, ctx, "  frame", 7, &last), 1);
    ASSERT_FALSE(last);
    ASSERT_EQ(grammar_rule_continues(m.rule, ctx, "KeyError: x", 11, &last), 1);
    ASSERT_TRUE(last);
    ASSERT_EQ(grammar_match(gcc, ctx, "a warn", 6, 0, &m), 0); /* not yellow */
    ASSERT_EQ(grammar_match(gcc, ctx, "a warn", 6, 2, &m), 1);
    ASSERT_EQ(m.action, GRAMMAR_DEDUP);
    grammar_ctx_free(ctx);
    grammar_set_free(set);
    buf_free(&errs);
}

TEST(grammar_include_cycle_is_rejected)
{
    grammar_set_t *set;
    grammar_t *g;
    buf_t errs = BUF_INIT;
    ASSERT_OK(grammar_set_new(&set));
    ASSERT_OK(parse("{\"name\":\"a\",\"include\":[\"b\"]}", &g, &errs));
    ASSERT_OK(grammar_set_add(set, g));
    ASSERT_OK(parse("{\"name\":\"b\",\"include\":[\"a\"]}", &g, &errs));
    ASSERT_OK(grammar_set_add(set, g));
    ASSERT_OK(parse("{\"name\":\"c\"}", &g, &errs));
    ASSERT_OK(grammar_set_add(set, g));
    ASSERT_OK(grammar_set_resolve(set, &errs));
    ASSERT_CONTAINS(errs.p, "includes itself");
    ASSERT_TRUE(grammar_set_find(set, "c") != NULL);
    ASSERT_TRUE(grammar_set_find(set, "a") == NULL || grammar_set_find(set, "b") == NULL);
    grammar_set_free(set);
    buf_free(&errs);
}

TEST(grammar_default_dirs_follow_the_documented_order)
{
    char *dirs[GRAMMAR_DIRS_MAX + 1];
    setenv("REIN_GRAMMAR_DIR", "/x/grammars", 1);
    setenv("XDG_CONFIG_HOME", "/cfg", 1);
    ASSERT_OK(grammar_default_dirs(dirs));
    ASSERT_STR(dirs[0], "/x/grammars");
    ASSERT_STR(dirs[1], "/cfg/rein/grammars");
    ASSERT_TRUE(dirs[2] == NULL);
    grammar_dirs_free(dirs);
    unsetenv("REIN_GRAMMAR_DIR");
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/home/u", 1);
    ASSERT_OK(grammar_default_dirs(dirs));
    /* the build tree's grammars/ (this checkout has one) */
    size_t i = 0;
    if (dirs[1]) {
        ASSERT_CONTAINS(dirs[0], "grammars");
        i = 1;
    }
    ASSERT_STR(dirs[i], "/home/u/.config/rein/grammars");
    grammar_dirs_free(dirs);
}

static int rein_grammar(const char *file, const char *sample, buf_t *out)
{
    char bin[PATH_MAX];
    snprintf(bin, sizeof bin, "%s/rein", test_build_dir());
    const char *argv[] = {bin, "grammar", "check", file, sample, NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = bin;
    o.argv = argv;
    return tu_run(&o, out);
}

TEST(grammar_check_cli_shows_rules_and_what_they_match)
{
    const char *d = test_tmpdir();
    char gpath[PATH_MAX], spath[PATH_MAX], bpath[PATH_MAX];
    snprintf(gpath, sizeof gpath, "%s/g.json", d);
    snprintf(spath, sizeof spath, "%s/sample", d);
    snprintf(bpath, sizeof bpath, "%s/bad.json", d);
    write_file(d, "g.json", "{\"name\":\"demo\",\"hazard\":[{\"id\":\"boom\","
                            "\"pattern\":\"^boom\"}],\"outcome\":[{\"id\":\"fin\","
                            "\"pattern\":\"^finished\"}],\"noise\":[{\"id\":\"at\","
                            "\"pattern\":\"^at \",\"action\":\"lead\"}]}");
    write_file(d, "sample", "hello\nat top:\nboom here\nfinished\n"
                            "error: universal\n");
    write_file(d, "bad.json", "{\"name\":\"b\",\"hazard\":[{\"id\":\"r1\","
                              "\"pattern\":\"(x\"}]}");
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein_grammar(gpath, spath, &out), 0);
    ASSERT_CONTAINS(out.p, "grammar demo (category condense): ok");
    ASSERT_CONTAINS(out.p, "hazard   boom");
    ASSERT_CONTAINS(out.p, "error     demo/boom");
    ASSERT_CONTAINS(out.p, "outcome   demo/fin");
    ASSERT_CONTAINS(out.p, "universal/error-word");
    ASSERT_CONTAINS(out.p, "| boom here");
    ASSERT_CONTAINS(out.p, "lead      demo/at");
    buf_reset(&out);
    ASSERT_EQ(rein_grammar(bpath, NULL, &out), 1);
    ASSERT_CONTAINS(out.p, "bad.json: rule r1: pattern offset 2: ");
    buf_free(&out);
}

TEST(grammar_set_compiles_patterns_on_first_use_and_reports_broken_ones)
{
    /* A set (what runs load) compiles a grammar's patterns only when the
     * grammar is first used; a bad one is then named on stderr, as `rein
     * grammar check` names it, and its rule never matches — the others do,
     * with their location groups. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/g", test_tmpdir());
    ASSERT_EQ(mkdir(dir, 0700), 0);
    write_file(dir, "t.json",
               "{\"name\":\"t\",\"detect\":{\"commands\":[\"t\"]},"
               "\"hazard\":[{\"id\":\"bad\",\"pattern\":\"^(unclosed\"},"
               "{\"id\":\"good\",\"pattern\":\"^(?<file>[a-z.]+):(?<line>\\\\d+): "
               "error\"}]}");
    const char *dirs[] = {dir, NULL};
    grammar_set_t *set;
    buf_t errs = BUF_INIT;
    ASSERT_OK(grammar_set_load(&set, dirs, &errs));
    ASSERT_TRUE(errs.p == NULL || !strstr(errs.p, "unclosed"));
    const grammar_t *g = grammar_set_find(set, "t");
    ASSERT_TRUE(g != NULL);
    /* stderr goes to the test's output; capture it through a pipe. */
    int p[2];
    ASSERT_OK(pipe(p));
    int saved = dup(2);
    dup2(p[1], 2);
    grammar_ctx_t *ctx;
    grammar_match_t m;
    ASSERT_OK(grammar_ctx_new(&ctx));
    static const char line[] = "x.c:12: error boom";
    ASSERT_EQ(grammar_match(g, ctx, line, sizeof line - 1, 0, &m), 1);
    dup2(saved, 2);
    close(saved);
    close(p[1]);
    buf_t said = BUF_INIT;
    tu_read_all(p[0], &said);
    close(p[0]);
    ASSERT_STR(m.id, "good");
    ASSERT_EQ(m.line, 12);
    ASSERT_CONTAINS(said.p, "t.json: rule bad: pattern offset");
    /* The single-file parse (grammar check) still fails at once. */
    grammar_t *eager;
    buf_t e2 = BUF_INIT;
    ASSERT_INT(grammar_parse("t.json",
                             "{\"name\":\"t\",\"hazard\":[{\"id\":\"bad\","
                             "\"pattern\":\"^(unclosed\"}]}",
                             strlen("{\"name\":\"t\",\"hazard\":[{\"id\":\"bad\","
                                    "\"pattern\":\"^(unclosed\"}]}"),
                             &eager, &e2),
               <, 0);
    ASSERT_CONTAINS(e2.p, "rule bad: pattern offset");
    grammar_ctx_free(ctx);
    grammar_set_free(set);
    buf_free(&errs);
    buf_free(&e2);
    buf_free(&said);
}

/* Detection through wrappers, compound lines, shell strings and script
 * runners, on the shipped grammars: the tool that runs is found the way
 * the router finds it, and a tool's name as an argument is never taken. */
TEST(grammar_detects_wrapped_and_compound_commands)
{
    grammar_set_t *set = tu_shipped_set();
    grammar_ctx_t *ctx;
    ASSERT_OK(grammar_ctx_new(&ctx));
    static const struct det det[] = {
        /* wrappers the router knows, with their options and operands */
        {"timeout 600 make", "make"},
        {"timeout -s KILL 10 make", "make"},
        {"timeout --kill-after=5 -s TERM 60 make -j4", "make"},
        {"nice -n 5 make", "make"},
        {"env FOO=1 make", "make"},
        {"env -u HOME -C /tmp make", "make"},
        {"stdbuf -oL make", "make"},
        {"stdbuf -o L -e L make", "make"},
        {"time make", "make"},
        {"sudo make", "make"},
        {"sudo -u build timeout 60 nice make", "make"},
        {"command make", "make"},
        {"exec make", "make"},
        {"nohup make", "make"},
        {"ionice -c 3 make", "make"},
        {"make >build.log 2>&1", "make"},
        {"make 2>&1 | tail -50", "make"},
        /* compound lines: the grammar of each segment that has one, the
         * last segment's first, each grammar once */
        {"cd sub && make", "make"},
        {"./configure && make", "make"},
        {"make clean; make", "make"},
        {"source env.sh && cargo build", "cargo"},
        {"make && echo done", "make"},
        {"make || true", "make"},
        {"cd web\nnpm test", "npm-run"},
        {"git pull && make", "make git"},
        {"(cd sub && make) 2>&1", "make"},
        {"{ make; } 2>&1", "make"},
        {"npm ci && make", "make npm"},
        {"npm ci | tee ci.log && make -k 2>&1 | tail", "make npm"},
        {"cd x && cargo build; pytest", "pytest cargo"},
        {"make; make install", "make"},
        {"make && npm test && make check", "make npm-run"},
        {"(npm ci && make) && pytest -x", "pytest make npm"},
        {"echo make && cargo test", "cargo"},
        {"npm ci || echo failed", "npm"},
        /* the command inside a shell's -c */
        {"bash -c 'make'", "make"},
        {"sh -c \"make -j4\"", "make"},
        {"bash -lc 'cd sub && make'", "make"},
        {"bash -o pipefail -c 'make | tee log'", "make"},
        {"timeout 60 sh -c 'cargo test'", "cargo"},
        {"sh -c 'npm test; go test ./...'", "go npm-run"},
        {"bash -c 'cargo build' && npm test", "npm-run cargo"},
        {"make && sh -c 'pytest && make'", "make pytest"},
        /* script runners: their own grammars, which include the tools the
         * usual scripts run */
        {"npm run build", "npm-run"},
        {"npm test", "npm-run"},
        {"npm install", "npm"},
        {"timeout 300 npm run build", "npm-run"},
        {"npx jest", "jest"},
        {"npx --yes -p jest jest --ci", "jest"},
        {"yarn test", "yarn"},
        {"pnpm test", "pnpm"},
        {"cd app && yarn test", "yarn"},
        {"python3 -m pytest -x", "pytest"},
        {"python3 -u -m pytest", "pytest"},
        {"python3 -c 'import x'", "python"},
        /* a tool's name as an argument is not the tool */
        {"echo make", NULL},
        {"grep make Makefile", NULL},
        {"timeout 5 echo make", NULL},
        {"timeout 600", NULL},
        {"env", NULL},
        {"FOO=make", NULL},
        {"cat make.log | grep error", NULL},
        {"bash -c 'echo make'", NULL},
        {"bash make.sh", NULL},
        {"sh -c", NULL},
        {"cd make", NULL},
        {"ls; echo make", NULL},
        {"makefile-lint x", NULL},
        {"git commit -m 'make it work'", "git"},
    };
    check_detect(set, ctx, det, sizeof det / sizeof det[0]);
    /* shell strings nest, but only so deep */
    ASSERT_STR(grammar_name(grammar_set_detect(
                   set, ctx, "sh -c \"bash -c 'timeout 9 make'\"")),
               "make");
    ASSERT_TRUE(grammar_set_detect(set, ctx, NULL) == NULL);
    grammar_ctx_free(ctx);
    grammar_set_free(set);
}

/* GRAMMAR_PER_COMMAND_MAX at its edge: a line of that many tools gets
 * every one's grammar; one tool more and the earliest segment's is the
 * one left out.  A grammar named twice counts once. */
TEST(grammar_detects_at_most_grammar_per_command_max_per_line)
{
    grammar_set_t *set = tu_shipped_set();
    grammar_ctx_t *ctx;
    ASSERT_OK(grammar_ctx_new(&ctx));
    /* distinct tools, each with its own grammar */
    static const char *const tools[][2] = {
        {"go test ./...", "go"}, {"npm ci", "npm"},  {"make -k", "make"},
        {"cargo build", "cargo"}, {"pytest -x", "pytest"}, {"tsc", "tsc"},
    };
    _Static_assert(sizeof tools / sizeof tools[0] > GRAMMAR_PER_COMMAND_MAX,
                   "one tool more than the bound");
    for (size_t k = GRAMMAR_PER_COMMAND_MAX - 1; k <= GRAMMAR_PER_COMMAND_MAX + 1;
         k++) {
        /* the last k tools, and each again (repeats add no grammar) */
        size_t first = sizeof tools / sizeof tools[0] - k;
        buf_t cmd = BUF_INIT;
        for (int twice = 0; twice < 2; twice++)
            for (size_t i = first; i < first + k; i++)
                buf_printf(&cmd, "%s%s", cmd.len ? " && " : "", tools[i][0]);
        const grammar_t *gs[GRAMMAR_PER_COMMAND_MAX];
        size_t n = grammar_set_detect_all(set, ctx, cmd.p, gs);
        size_t want = k < GRAMMAR_PER_COMMAND_MAX ? k : GRAMMAR_PER_COMMAND_MAX;
        if (n != want)
            test_fail(__FILE__, __LINE__, "%s: %zu grammars, want %zu", cmd.p,
                      n, want);
        /* the last segment's first, back to the earliest kept */
        for (size_t j = 0; j < n; j++)
            ASSERT_STR(grammar_name(gs[j]), tools[first + k - 1 - j][1]);
        buf_free(&cmd);
    }
    grammar_ctx_free(ctx);
    grammar_set_free(set);
}
