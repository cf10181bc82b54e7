/*
 * test_corpus.c — the condensation corpus (../shared/corpus/condense, or
 * $REIN_CORPUS_DIR): every case through squash_buffer, judged as the issue
 * judges it: every must_keep regex matches, every raw line matching
 * keep_all_matching is kept verbatim, the exit code is shown, every line
 * is a raw (VT-stripped) line or a marker, and the token ratio (ceil(bytes
 * / 4) out over in, after VT stripping) is at most 1.0 per case with a
 * geometric mean at most CORPUS_GEOMEAN_MAX over the cases above
 * CORPUS_BIG_TOKENS raw tokens.  One case also goes through the `rein
 * squash` binary, so the CLI path is judged the same way.
 */
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/spawn.h"
#include "harness.h"
#include "squash/squash.h"
#include "tutil.h"

#define CORPUS_GEOMEAN_MAX 0.25
#define CORPUS_BIG_TOKENS 2000
#define CORPUS_CASES_MAX 256

static bool corpus_dir(char *out, size_t cap)
{
    const char *env = getenv("REIN_CORPUS_DIR");
    if (env && *env)
        snprintf(out, cap, "%s", env);
    else
        snprintf(out, cap, "%s/../../shared/corpus/condense", test_build_dir());
    struct stat st;
    return stat(out, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Judges one case's condensed output (tu_judge); fails the test on any
 * broken rule, else returns the token ratio. */
static double corpus_judge(const char *name, json_t *cs, const buf_t *raw,
                           const buf_t *out, uint64_t *in_tokens)
{
    buf_t why = BUF_INIT;
    tu_verdict_t v;
    if (!tu_judge(cs, raw, out, &v, &why))
        test_fail(__FILE__, __LINE__, "%s:\n%s-- output:\n%s", name, why.p,
                  out->p ? out->p : "");
    buf_free(&why);
    *in_tokens = v.in_tokens;
    return v.ratio;
}

/* Is the product of r[i] / x over i at most 1?  (The geometric mean of r
 * is at most x.)  Scaled as it goes: no libm, no underflow. */
static bool corpus_gm_le(const double *r, size_t n, double x)
{
    double p = 1;
    long e = 0;
    for (size_t i = 0; i < n; i++) {
        p *= (r[i] > 0 ? r[i] : 1e-9) / x;
        while (p > 2) {
            p /= 2;
            e++;
        }
        while (p < 0.5) {
            p *= 2;
            e--;
        }
    }
    return e < 0 || (e == 0 && p <= 1);
}

/* The geometric mean, by bisection on corpus_gm_le. */
static double corpus_geomean(const double *r, size_t n)
{
    double lo = 0, hi = 1e6;
    for (int i = 0; i < 200; i++) {
        double mid = (lo + hi) / 2;
        if (corpus_gm_le(r, n, mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

static int corpus_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

TEST_T(corpus_condense_every_case, 120)
{
    char dir[PATH_MAX];
    if (!corpus_dir(dir, sizeof dir))
        SKIP("no corpus at %s (set REIN_CORPUS_DIR)", dir);
    DIR *d = opendir(dir);
    ASSERT_TRUE(d != NULL);
    char *names[CORPUS_CASES_MAX] = {NULL};
    size_t nn = 0;
    const struct dirent *e;
    while ((e = readdir(d)) && nn < CORPUS_CASES_MAX) {
        char p[PATH_MAX + 300];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s/case.json", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(p, &st) == 0)
            names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof names[0], corpus_name_cmp);
    ASSERT_TRUE(nn > 0);
    double ratios[CORPUS_CASES_MAX];
    size_t big = 0;
    for (size_t i = 0; i < nn; i++) {
        char p[PATH_MAX + 300], cmd[4096];
        snprintf(p, sizeof p, "%s/%s/case.json", dir, names[i]);
        json_error_t je;
        json_t *cs = json_load_file(p, 0, &je);
        ASSERT_TRUE(cs != NULL);
        buf_t raw = BUF_INIT, out = BUF_INIT;
        snprintf(p, sizeof p, "%s/%s/output", dir, names[i]);
        ASSERT_TRUE(tu_read_file(p, &raw));
        tu_case_command(cs, cmd, sizeof cmd);
        sq_opts_t o;
        memset(&o, 0, sizeof o);
        o.command = cmd;
        o.log_path = p;
        int code = (int)json_integer_value(json_object_get(cs, "exit_code"));
        ASSERT_OK(squash_buffer(&o, raw.p, raw.len, code, 0, &out));
        uint64_t tin;
        double ratio = corpus_judge(names[i], cs, &raw, &out, &tin);
        fprintf(stderr, "corpus %-28s tokens in %7llu  ratio %.4f\n",
                names[i], (unsigned long long)tin, ratio);
        if (ratio > 1.0)
            test_fail(__FILE__, __LINE__, "%s: ratio %.3f above 1.0:\n%s",
                      names[i], ratio, out.p);
        if (tin > CORPUS_BIG_TOKENS) {
            ratios[big++] = ratio;
        }
        buf_free(&raw);
        buf_free(&out);
        json_decref(cs);
        free(names[i]);
    }
    if (big) {
        fprintf(stderr, "corpus geometric mean ratio %.4f over %zu cases\n",
                corpus_geomean(ratios, big), big);
        ASSERT_TRUE(corpus_gm_le(ratios, big, CORPUS_GEOMEAN_MAX));
    }
}

TEST(corpus_case_through_the_rein_squash_binary)
{
    char dir[PATH_MAX];
    if (!corpus_dir(dir, sizeof dir))
        SKIP("no corpus at %s (set REIN_CORPUS_DIR)", dir);
    char p[PATH_MAX + 64], out_path[PATH_MAX], cmd[4096], bin[PATH_MAX];
    snprintf(p, sizeof p, "%s/01_gcc_errors/case.json", dir);
    json_error_t je;
    json_t *cs = json_load_file(p, 0, &je);
    if (!cs)
        SKIP("no 01_gcc_errors case");
    snprintf(p, sizeof p, "%s/01_gcc_errors/output", dir);
    tu_case_command(cs, cmd, sizeof cmd);
    snprintf(bin, sizeof bin, "%s/rein", test_build_dir());
    snprintf(out_path, sizeof out_path, "%s/out", test_tmpdir());
    char code[16];
    snprintf(code, sizeof code, "%lld",
             (long long)json_integer_value(json_object_get(cs, "exit_code")));
    /* rein squash --as CMD --exit N < output, through sh for the redirect */
    char script[PATH_MAX * 3];
    snprintf(script, sizeof script, "exec \"$0\" squash --as \"$1\" --exit \"$2\" < \"$3\"");
    const char *argv[] = {"/bin/sh", "-c", script, bin, cmd, code, p, NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = "/bin/sh";
    o.argv = argv;
    buf_t out = BUF_INIT, raw = BUF_INIT;
    ASSERT_EQ(tu_run(&o, &out), 0);
    ASSERT_TRUE(tu_read_file(p, &raw));
    uint64_t tin;
    double ratio = corpus_judge("01_gcc_errors (binary)", cs, &raw, &out, &tin);
    ASSERT_TRUE(ratio <= 1.0);
    ASSERT_CONTAINS(out.p, "[rein] log ");
    ASSERT_CONTAINS(out.p, "01_gcc_errors/output");
    buf_free(&out);
    buf_free(&raw);
    json_decref(cs);
}
