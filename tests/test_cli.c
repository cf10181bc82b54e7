/*
 * test_cli.c — the rein command's entry point: --help, --version, help
 * VERB, exit codes for bad usage, the run shorthand, serve's and squash's
 * option errors.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/spawn.h"
#include "harness.h"
#include "tutil.h"

static int rein3(const char *a1, const char *a2, const char *a3, buf_t *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rein", test_build_dir());
    const char *argv[] = {path, a1, a2, a3, NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = path;
    o.argv = argv;
    return tu_run(&o, out);
}

static int rein(const char *a1, const char *a2, buf_t *out)
{
    return rein3(a1, a2, NULL, out);
}

TEST(cli_help_and_version)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("--help", NULL, &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein VERB");
    ASSERT_CONTAINS(out.p, "serve");
    buf_reset(&out);
    ASSERT_EQ(rein("--version", NULL, &out), 0);
    ASSERT_STR(out.p, "rein " REIN_VERSION_STRING "\n");
    buf_reset(&out);
    ASSERT_EQ(rein("help", "serve", &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein serve");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--help", &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein serve");
    buf_free(&out);
}

TEST(cli_bad_usage_exits_2_with_one_clear_line)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("--frobnicate", NULL, &out), 2);
    ASSERT_STR(out.p,
               "rein: unknown option '--frobnicate' (try rein --help)\n");
    buf_reset(&out);
    /* A word that is not a verb is a command to proxy. */
    setenv("REIN_STATE_DIR", test_tmpdir(), 1);
    ASSERT_EQ(rein("frobnicate-no-such-command", NULL, &out), 127);
    ASSERT_CONTAINS(out.p, "frobnicate-no-such-command: command not found");
    buf_reset(&out);
    ASSERT_EQ(rein("help", "frobnicate", &out), 2);
    ASSERT_CONTAINS(out.p, "unknown verb 'frobnicate'");
    buf_reset(&out);
    ASSERT_EQ(rein3("help", "run", "extra", &out), 2);
    ASSERT_STR(out.p, "rein help: one verb at a time (usage: rein help "
                      "[VERB])\n");
    buf_reset(&out);
    ASSERT_EQ(rein(NULL, NULL, &out), 2);
    buf_free(&out);
}

TEST(cli_serve_bad_options_exit_2_with_one_clear_line)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("serve", "--profile=mish", &out), 2);
    ASSERT_CONTAINS(out.p, "mish profile is not available yet");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--profile=bash", &out), 2);
    ASSERT_CONTAINS(out.p, "unknown profile 'bash'");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--frob", &out), 2);
    ASSERT_CONTAINS(out.p, "unknown option '--frob'");
    buf_reset(&out);
    ASSERT_EQ(rein("serve", "--state-dir", &out), 2);
    ASSERT_CONTAINS(out.p, "--state-dir needs a value");
    buf_free(&out);
}

TEST(cli_squash_bad_options_name_what_was_wrong)
{
    buf_t out = BUF_INIT;
    ASSERT_EQ(rein("squash", "--frob", &out), 2);
    ASSERT_CONTAINS(out.p, "rein squash: unknown option '--frob' (usage: "
                           "rein squash [--as \"COMMAND\"]");
    buf_reset(&out);
    ASSERT_EQ(rein("squash", "--exit", &out), 2);
    ASSERT_CONTAINS(out.p, "rein squash: --exit needs a value");
    buf_reset(&out);
    /* help and the error show the same usage, every option in it. */
    ASSERT_EQ(rein("help", "squash", &out), 0);
    ASSERT_CONTAINS(out.p, "[--budget BYTES] [--stream] < output");
    buf_reset(&out);
    ASSERT_EQ(rein("help", "grammar", &out), 0);
    ASSERT_CONTAINS(out.p, "usage: rein grammar check FILE [SAMPLE]");
    buf_free(&out);
}
