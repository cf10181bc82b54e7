/*
 * test_shell_driver.c — a persistent session against what agents'
 * commands, and the scripts they source, really leave in a shell:
 * functions and aliases named like the words the driver uses (builtin,
 * command, eval, cd as rvm and nvm define it...), DEBUG, ERR, RETURN and
 * EXIT traps, shell options, IFS, PATH, umask, the command's fds,
 * incomplete commands, background jobs.  Each case asks the same three
 * things of real bash: the command sees its own settings and nothing of
 * the driver's, the driver neither breaks nor shows in the output, and
 * the session lives or ends as the seed says (an error or an exit of the
 * shell ends it; a failing command does not).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "harness.h"

static void gather(const char *s, size_t n, void *data)
{
    buf_append(data, s, n);
}

/* Runs o in sh with its output gathered in *out (reset first); the call's
 * return code. */
static int drive(rein_shell_t *sh, rein_shell_run_opts_t *o, buf_t *out,
                 rein_run_result_t *res)
{
    buf_reset(out);
    o->on_chunk = gather;
    o->data = out;
    return rein_shell_run(sh, o, res);
}

/* Runs cmd in sh, which must not fail; its output (never NULL). */
static const char *out_of(rein_shell_t *sh, buf_t *out, const char *cmd,
                          rein_run_result_t *res)
{
    rein_shell_run_opts_t o = {.command = cmd};
    ASSERT_OK(drive(sh, &o, out, res));
    return out->p ? out->p : "";
}

/* Runs a command with a cwd and a command-scoped variable, and checks the
 * driver applied both and carried `$?` (want_status), and that the
 * variable is gone afterwards.  The command's own settings may add to its
 * output (a DEBUG trap's), so the line is looked for, not the whole; it
 * is /bin/echo so that no alias or function of the session's changes it. */
static void check_plumbing(rein_shell_t *sh, buf_t *out, int want_status)
{
    char want[64];
    const char *env[] = {"CV=cv", NULL};
    rein_shell_run_opts_t o = {.command = "/bin/echo \"[$? $CV $PWD]\"",
                               .cwd = "/", .env = env};
    rein_run_result_t res;
    ASSERT_OK(drive(sh, &o, out, &res));
    snprintf(want, sizeof want, "[%d cv /]\n", want_status);
    ASSERT_CONTAINS(out->p ? out->p : "", want);
    ASSERT_EQ(res.exit_code, 0);
    ASSERT_CONTAINS(out_of(sh, out, "/bin/echo \"[${CV-popped}]\"", &res),
                    "[popped]\n");
}

TEST(shell_driver_survives_a_function_named_builtin)
{
    /* The driver used to reach every builtin through `builtin`: a
     * function of that name ran instead of all of them. */
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    out_of(sh, &out, "builtin() { echo \"FN $*\"; }; export -f builtin; false",
           &res);
    ASSERT_EQ(res.exit_code, 1);
    check_plumbing(sh, &out, 1);
    /* The command still gets its function, exported as it left it. */
    ASSERT_STR(out_of(sh, &out, "builtin echo x; bash -c 'type -t builtin'",
                      &res),
               "FN echo x\nfunction\n");
    /* `command` a function too: the driver copies `builtin` out of its
     * way and back. */
    out_of(sh, &out, "command() { echo \"CFN $*\"; }; (exit 3)", &res);
    check_plumbing(sh, &out, 3);
    ASSERT_STR(out_of(sh, &out,
                      "builtin echo x; command echo y; "
                      "bash -c 'type -t builtin command'",
                      &res),
               "FN echo x\nCFN echo y\nfunction\nbuiltin\n");
    ASSERT_STR(out_of(sh, &out, "declare -F | grep -c __rein_", &res),
               "0\n");
    ASSERT_STR(out_of(sh, &out,
                      "unset -f builtin command; builtin echo real", &res),
               "real\n");
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_builtin_command_and_eval_all_functions_end_it)
{
    /* With builtin, command and eval all functions no line can run a
     * command without calling one of them: the run is an error and the
     * session ends, cleanly, instead of handing commands to them. */
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    out_of(sh, &out,
           "K=1; builtin() { :; }; command() { :; }; eval() { :; }", &res);
    rein_shell_run_opts_t o = {.command = "echo ran"};
    ASSERT_EQ(drive(sh, &o, &out, &res), REIN_ESHELL_EXEC);
    ASSERT_STR(out_of(sh, &out, "echo ${K-gone}", &res), "gone\n");
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_user_traps_fire_for_the_command_only)
{
    /* A DEBUG trap fires before the command's own lines, an ERR trap once
     * per failure, RETURN (set -T) and ERR (set -E) for the command's
     * functions: as in a terminal.  They used to fire on the driver's
     * lines too, into the output. */
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    out_of(sh, &out, "trap 'echo \"DBG $BASH_COMMAND\"' DEBUG", &res);
    ASSERT_STR(out_of(sh, &out, "echo hi", &res), "DBG echo hi\nhi\n");
    check_plumbing(sh, &out, 0);
    out_of(sh, &out, "trap - DEBUG; n=0; trap 'echo ERR $?; n=$((n + 1))' ERR",
           &res);
    ASSERT_STR(out_of(sh, &out, "false", &res), "ERR 1\n");
    ASSERT_EQ(res.exit_code, 1);
    ASSERT_STR(out_of(sh, &out, "(exit 4); echo \"n=$n\"", &res),
               "ERR 4\nn=2\n");
    check_plumbing(sh, &out, 0);
    out_of(sh, &out, "trap - ERR; set -T; trap 'echo RET $FUNCNAME' RETURN; "
           "f() { :; }", &res);
    ASSERT_STR(out_of(sh, &out, "f; echo x", &res), "RET f\nx\n");
    check_plumbing(sh, &out, 0);
    out_of(sh, &out, "trap - RETURN; set +T -E; trap 'echo ERR' ERR; "
           "g() { false; return 0; }", &res);
    ASSERT_STR(out_of(sh, &out, "g; echo y", &res), "ERR\ny\n");
    check_plumbing(sh, &out, 0);
    /* extdebug: a DEBUG trap that returns non-zero skips the command it
     * was run for, and only that. */
    out_of(sh, &out, "trap - ERR; set +E; shopt -s extdebug; "
           "trap '[[ $BASH_COMMAND != *skip* ]]' DEBUG", &res);
    ASSERT_STR(out_of(sh, &out, "echo a; echo skip; echo b", &res),
               "a\nb\n");
    check_plumbing(sh, &out, 0);
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_a_trap_that_skips_everything_ends_it)
{
    /* extdebug and a DEBUG trap that always fails skip every line, the
     * driver's too: the session ends rather than spinning or hanging. */
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    out_of(sh, &out, "K=1; shopt -s extdebug; trap false DEBUG", &res);
    ASSERT_TRUE(res.has_exit_code);
    ASSERT_STR(out_of(sh, &out, "echo ${K-gone}", &res), "gone\n");
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_aliases_and_functions_named_like_its_words)
{
    /* Aliases (expand_aliases on) and functions over the names the driver
     * and eval use: the driver is never steered by them, the command is
     * (an rvm-style `cd` function runs for the command's cd, not for the
     * run's cwd). */
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    out_of(sh, &out,
           "shopt -s expand_aliases; for w in builtin command eval printf "
           "mapfile cd unset return export set shopt exit . declare echo "
           "read trap local; do alias \"$w=echo ALIAS\"; done; "
           "alias hi='/bin/echo hello'",
           &res);
    ASSERT_EQ(res.exit_code, 0);
    check_plumbing(sh, &out, 0);
    ASSERT_STR(out_of(sh, &out, "hi", &res), "hello\n");
    out_of(sh, &out, "unalias -a", &res);
    static const char *const words[] = {
        "printf", "echo",  "read",  "command", "type",    "unset",
        "exec",   "eval",  "return", "export", "set",     "trap",
        "mapfile", "local", "declare", "shopt", "source", "enable"};
    char defs[2048] = "cd() { builtin cd \"$@\" && builtin echo rvm-cd; }";
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t len = strlen(defs);
        snprintf(defs + len, sizeof defs - len,
                 "; %s() { builtin echo FN-%s; }", words[i], words[i]);
    }
    out_of(sh, &out, defs, &res);
    ASSERT_EQ(res.exit_code, 0);
    check_plumbing(sh, &out, 0);
    rein_shell_run_opts_t o = {.command = "pwd", .cwd = "/tmp"};
    ASSERT_OK(drive(sh, &o, &out, &res));
    ASSERT_STR(out.p, "/tmp\n");
    ASSERT_STR(out_of(sh, &out, "cd /; echo x; pwd", &res),
               "rvm-cd\nFN-echo\n/\n");
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_settings_the_command_leaves)
{
    /* Shell options, IFS, PATH and umask the command changes are its own
     * and persist; none of them changes what the driver does. */
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    const char *leave[] = {
        "IFS=$'x\\n'; PATH=",
        "unset PATH",
        "PATH=/usr/bin:/bin; IFS=$' \\t\\n'; readonly IFS PATH",
        "enable -n echo; PROMPT_COMMAND='echo PC'; TMOUT=1; FUNCNEST=1",
        "shopt -s nocasematch extglob nullglob failglob globstar dotglob "
        "lastpipe xpg_echo; set -o noclobber -o pipefail -f -k",
        "set -o posix",
        "set +o posix; umask 077; set -a",
        "set -u",
    };
    for (size_t i = 0; i < sizeof leave / sizeof *leave; i++) {
        out_of(sh, &out, leave[i], &res);
        ASSERT_EQ(res.exit_code, 0);
        check_plumbing(sh, &out, 0);
    }
    ASSERT_STR(out_of(sh, &out,
                      "umask; echo \"$-\"; shopt -q nocasematch && echo nc; "
                      "env | grep -c ^__rein_",
                      &res),
               "0077\nafhkuBCc\nnc\n0\n");
    /* set -e in the command itself: `false && true` goes on, as in a
     * terminal (set -e before the command: see the header of shell.c). */
    ASSERT_STR(out_of(sh, &out, "set +u; set -e; false && true; echo on",
                      &res),
               "on\n");
    check_plumbing(sh, &out, 0);
    /* A read-only POSIXLY_CORRECT keeps the driver out of posix mode: it
     * then finds special builtins by name, which still works here. */
    out_of(sh, &out, "set +e; declare -r POSIXLY_CORRECT", &res);
    check_plumbing(sh, &out, 0);
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_what_ends_bash_ends_the_session)
{
    /* Whatever ends a non-interactive bash ends the session: the call
     * returns (an exit code, or an error when the driver could not even
     * answer), never hangs, and the next run gets a fresh bash.  The last
     * three are a command breaking the driver on purpose. */
    static const char *const cmds[] = {
        "set -u; echo $REIN_UNSET_VAR",
        "echo ${REIN_UNSET_VAR?}",
        "exec true",
        "set -e; false",
        "readonly __rein_door",
        "enable -n printf",
        "unset -v __rein_st",
    };
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        out_of(sh, &out, "K=1", &res);
        rein_shell_run_opts_t o = {.command = cmds[i]};
        int rc = drive(sh, &o, &out, &res);
        ASSERT_TRUE(rc == 0 || rc == REIN_ESHELL_EXEC);
        ASSERT_STR(out_of(sh, &out, "echo ${K-gone}", &res), "gone\n");
    }
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_fds_the_command_plays_with)
{
    /* exec redirections last for the command's own run; the driver's fds
     * are its own again after the command, whatever it did to them. */
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(out_of(sh, &out, "exec >/dev/null; echo hidden", &res), "");
    ASSERT_STR(out_of(sh, &out, "exec 2>&1; echo err >&2", &res), "err\n");
    ASSERT_STR(out_of(sh, &out,
                      "exec 3>&- 60>&- 61>/dev/null 62<&-; echo closed",
                      &res),
               "closed\n");
    check_plumbing(sh, &out, 0);
    ASSERT_STR(out_of(sh, &out, "exec 3>/dev/null; echo kept >&3; echo ok",
                      &res),
               "ok\n");
    ASSERT_STR(out_of(sh, &out, "[ -e /proc/$$/fd/3 ] && echo three",
                      &res),
               "three\n");
    /* Closing bash's own saved copies of them (fds >= 10) leaves it no
     * way to talk: the session ends, and the call returns. */
    out_of(sh, &out,
           "K=1; for f in /proc/$$/fd/*; do n=${f##*/}; "
           "[ \"$n\" -ge 10 ] && eval \"exec $n>&-\"; done",
           &res);
    ASSERT_STR(out_of(sh, &out, "echo ${K-gone}", &res), "gone\n");
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_incomplete_commands_are_syntax_errors)
{
    /* What a terminal would wait for more lines for (an open quote, a
     * trailing operator, an open heredoc or group) is bash's syntax error
     * or warning, and the session goes on; nothing hangs. */
    static const struct {
        const char *cmd, *says;
        int code;
    } cases[] = {
        {"echo 'open", "unexpected EOF while looking for matching", 2},
        {"echo \"open", "unexpected EOF while looking for matching", 2},
        {"echo a &&", "syntax error: unexpected end of file", 2},
        {"echo a |", "syntax error: unexpected end of file", 2},
        {"{ echo a", "syntax error: unexpected end of file", 2},
        {"if true; then", "syntax error: unexpected end of file", 2},
        {"cat <<EOF\nbody", "here-document at line", 0},
        {"echo tail \\", "tail \\", 0},
        {"return 3", "can only `return' from a function", 2},
    };
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    out_of(sh, &out, "K=1", &res);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ASSERT_CONTAINS(out_of(sh, &out, cases[i].cmd, &res), cases[i].says);
        ASSERT_EQ(res.exit_code, cases[i].code);
        ASSERT_STR(out_of(sh, &out, "echo $K", &res), "1\n");
    }
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_sources_an_activate_script)
{
    /* A virtualenv-style activate: PATH, PS1, a deactivate function,
     * `hash -r`; it applies to the next commands and undoes itself. */
    char dir[512], script[600], cmd[1024];
    snprintf(dir, sizeof dir, "%s/venv/bin", test_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
    snprintf(script, sizeof script, "%s/activate", dir);
    FILE *f = fopen(script, "we");
    ASSERT_TRUE(f != NULL);
    fprintf(f, "deactivate() { PATH=$_OLD_PATH; unset VIRTUAL_ENV; "
               "PS1=$_OLD_PS1; unset -f deactivate; hash -r; }\n"
               "_OLD_PATH=$PATH; _OLD_PS1=${PS1-}\n"
               "VIRTUAL_ENV='%s'; export VIRTUAL_ENV\n"
               "PATH=\"$VIRTUAL_ENV:$PATH\"; export PATH\n"
               "PS1=\"(venv) ${PS1-}\"; hash -r 2>/dev/null\n",
            dir);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/tool", dir);
    f = fopen(cmd, "we");
    ASSERT_TRUE(f != NULL);
    fputs("#!/bin/sh\necho venv-tool\n", f);
    fclose(f);
    ASSERT_OK(chmod(cmd, 0755) < 0 ? -errno : 0);

    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    snprintf(cmd, sizeof cmd, "source '%s'", script);
    ASSERT_STR(out_of(sh, &out, cmd, &res), "");
    ASSERT_STR(out_of(sh, &out, "tool; echo \"$PS1\"", &res),
               "venv-tool\n(venv) \n");
    check_plumbing(sh, &out, 0);
    ASSERT_STR(out_of(sh, &out,
                      "deactivate; tool 2>/dev/null || echo gone; "
                      "echo ${VIRTUAL_ENV-unset}",
                      &res),
               "gone\nunset\n");
    rein_shell_free(sh);
    buf_free(&out);
}

TEST(shell_driver_stdin_is_empty_and_jobs_end_with_the_session)
{
    /* The command's stdin is /dev/null: a read ends at once.  `wait`
     * waits for the session's jobs; jobs still running (job control on
     * or off) end when the session is freed, and an EXIT trap runs. */
    char mark[512], cmd[1024];
    snprintf(mark, sizeof mark, "%s/exit-trap", test_tmpdir());
    rein_shell_t *sh;
    buf_t out = BUF_INIT;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_new(NULL, &sh));
    ASSERT_STR(out_of(sh, &out, "read x; echo \"rc=$?\"; cat; echo done",
                      &res),
               "rc=1\ndone\n");
    ASSERT_STR(out_of(sh, &out, "(sleep 0.1; exit 5) & wait $!; echo $?",
                      &res),
               "5\n");
    pid_t plain = (pid_t)atol(out_of(
        sh, &out, "sleep 300 >/dev/null 2>&1 & echo $!", &res));
    pid_t monitored = (pid_t)atol(out_of(
        sh, &out, "set -m; sleep 300 >/dev/null 2>&1 & echo $!", &res));
    snprintf(cmd, sizeof cmd, "trap 'echo bye > \"%s\"' EXIT", mark);
    out_of(sh, &out, cmd, &res);
    ASSERT_TRUE(test_pid_alive(plain));
    ASSERT_TRUE(test_pid_alive(monitored));
    rein_shell_free(sh);
    ASSERT_TRUE(test_wait_gone(plain));
    ASSERT_TRUE(test_wait_gone(monitored));
    char got[64];
    FILE *f = fopen(mark, "re");
    ASSERT_TRUE(f != NULL);
    ASSERT_TRUE(fgets(got, sizeof got, f) != NULL);
    fclose(f);
    ASSERT_STR(got, "bye\n");
    buf_free(&out);
}

TEST(shell_driver_one_shot_snapshot_with_hostile_functions)
{
    /* A snapshot (a dump of a user's shell) that defines builtin and
     * command and turns on set -x: the one-shot still sources it, runs
     * the command with them, and traces only the command. */
    char snap[512];
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    FILE *f = fopen(snap, "we");
    ASSERT_TRUE(f != NULL);
    fputs("builtin() { echo \"FN $*\"; }\ncommand() { echo CFN; }\n"
          "export -f builtin\nSNAPV=1\nset -x\n", f);
    fclose(f);
    rein_shell_opts_t so = {.snapshot_path = snap};
    rein_shell_run_opts_t o = {
        .command = "echo \"v=$SNAPV\"; builtin echo x; "
                   "bash -c 'type -t builtin'",
        .on_chunk = gather};
    buf_t out = BUF_INIT;
    o.data = &out;
    rein_run_result_t res;
    ASSERT_OK(rein_shell_exec(&so, &o, &res));
    ASSERT_STR(out.p, "++ echo v=1\nv=1\n++ builtin echo x\n"
                      "++ echo 'FN echo x'\nFN echo x\n"
                      "++ bash -c 'type -t builtin'\nfunction\n");
    ASSERT_EQ(res.exit_code, 0);
    buf_free(&out);
}
