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
#include "tutil.h"

/* One session of a test, with the output and result of its last run. */
struct sess {
    rein_shell_t *sh;
    buf_t out;
    rein_run_result_t res;
};

static void gather(const char *s, size_t n, void *data)
{
    buf_append(data, s, n);
}

static void sess_open(struct sess *s)
{
    memset(s, 0, sizeof *s);
    ASSERT_OK(rein_shell_new(NULL, &s->sh));
}

static void sess_close(struct sess *s)
{
    rein_shell_free(s->sh);
    buf_free(&s->out);
}

/* Runs o in the session, its output gathered in s->out (reset first); the
 * call's return code. */
static int drive(struct sess *s, rein_shell_run_opts_t *o)
{
    buf_reset(&s->out);
    o->on_chunk = gather;
    o->data = &s->out;
    return rein_shell_run(s->sh, o, &s->res);
}

/* Runs cmd in the session, which must not fail; its output (never NULL). */
static const char *out_of(struct sess *s, const char *cmd)
{
    rein_shell_run_opts_t o = {.command = cmd};
    ASSERT_OK(drive(s, &o));
    return s->out.p ? s->out.p : "";
}

/* Runs a command with a cwd and a command-scoped variable, and checks the
 * driver applied both and carried `$?` (want_status), and that the
 * variable is gone afterwards.  The command's own settings may add to its
 * output (a DEBUG trap's), so the line is looked for, not the whole; it
 * is /bin/echo so that no alias or function of the session's changes it. */
static void check_plumbing(struct sess *s, int want_status)
{
    char want[64];
    const char *env[] = {"CV=cv", NULL};
    rein_shell_run_opts_t o = {.command = "/bin/echo \"[$? $CV $PWD]\"",
                               .cwd = "/", .env = env};
    ASSERT_OK(drive(s, &o));
    snprintf(want, sizeof want, "[%d cv /]\n", want_status);
    ASSERT_CONTAINS(s->out.p ? s->out.p : "", want);
    ASSERT_EQ(s->res.exit_code, 0);
    ASSERT_CONTAINS(out_of(s, "/bin/echo \"[${CV-popped}]\""), "[popped]\n");
}

/* Runs prep, then cmd, which must end the session: the call returns (0
 * with an exit code, or rc), and a variable set with prep is gone in the
 * next run. */
static void check_ends_session(struct sess *s, const char *prep,
                               const char *cmd, int rc)
{
    char first[256];
    snprintf(first, sizeof first, "K=1; %s", prep);
    out_of(s, first);
    rein_shell_run_opts_t o = {.command = cmd};
    int got = drive(s, &o);
    ASSERT_TRUE(got == 0 || got == rc);
    ASSERT_TRUE(got < 0 || s->res.has_exit_code);
    ASSERT_STR(out_of(s, "echo ${K-gone}"), "gone\n");
}

/* Writes text to path (mode, for a script). */
static void put_file(const char *path, const char *text, mode_t mode)
{
    buf_t b = BUF_INIT;
    ASSERT_OK(buf_append(&b, text, strlen(text)));
    FILE *f = fopen(path, "we");
    ASSERT_TRUE(f != NULL);
    ASSERT_EQ(fwrite(b.p, 1, b.len, f), b.len);
    ASSERT_OK(fclose(f) ? -errno : 0);
    ASSERT_OK(chmod(path, mode) < 0 ? -errno : 0);
    buf_free(&b);
}

TEST(shell_driver_survives_a_function_named_builtin)
{
    /* The driver used to reach every builtin through `builtin`: a
     * function of that name ran instead of all of them. */
    struct sess s;
    sess_open(&s);
    out_of(&s, "builtin() { echo \"FN $*\"; }; export -f builtin; false");
    ASSERT_EQ(s.res.exit_code, 1);
    check_plumbing(&s, 1);
    /* The command still gets its function, exported as it left it. */
    ASSERT_STR(out_of(&s, "builtin echo x; bash -c 'type -t builtin'"),
               "FN echo x\nfunction\n");
    /* `command` a function too: the driver copies `builtin` out of its
     * way and back. */
    out_of(&s, "command() { echo \"CFN $*\"; }; (exit 3)");
    check_plumbing(&s, 3);
    ASSERT_STR(out_of(&s, "builtin echo x; command echo y; "
                      "bash -c 'type -t builtin command'"),
               "FN echo x\nCFN echo y\nfunction\nbuiltin\n");
    ASSERT_STR(out_of(&s, "declare -F | grep -c __rein_"),
               "0\n");
    ASSERT_STR(out_of(&s, "unset -f builtin command; builtin echo real"),
               "real\n");
    sess_close(&s);
}

TEST(shell_driver_builtin_command_and_eval_all_functions_end_it)
{
    /* With builtin, command and eval all functions no line can run a
     * command without calling one of them: the run is an error and the
     * session ends, cleanly, instead of handing commands to them. */
    struct sess s;
    sess_open(&s);
    check_ends_session(&s, "builtin() { :; }; command() { :; }; eval() { :; }",
                       "echo ran", REIN_ESHELL_EXEC);
    sess_close(&s);
}

TEST(shell_driver_user_traps_fire_for_the_command_only)
{
    /* A DEBUG trap fires before the command's own lines, an ERR trap once
     * per failure, RETURN (set -T) and ERR (set -E) for the command's
     * functions: as in a terminal.  They used to fire on the driver's
     * lines too, into the output. */
    struct sess s;
    sess_open(&s);
    out_of(&s, "trap 'echo \"DBG $BASH_COMMAND\"' DEBUG");
    ASSERT_STR(out_of(&s, "echo hi"), "DBG echo hi\nhi\n");
    check_plumbing(&s, 0);
    out_of(&s, "trap - DEBUG; n=0; trap 'echo ERR $?; n=$((n + 1))' ERR");
    ASSERT_STR(out_of(&s, "false"), "ERR 1\n");
    ASSERT_EQ(s.res.exit_code, 1);
    ASSERT_STR(out_of(&s, "(exit 4); echo \"n=$n\""),
               "ERR 4\nn=2\n");
    check_plumbing(&s, 0);
    out_of(&s, "trap - ERR; set -T; trap 'echo RET $FUNCNAME' RETURN; "
           "f() { :; }");
    ASSERT_STR(out_of(&s, "f; echo x"), "RET f\nx\n");
    check_plumbing(&s, 0);
    out_of(&s, "trap - RETURN; set +T -E; trap 'echo ERR' ERR; "
           "g() { false; return 0; }");
    ASSERT_STR(out_of(&s, "g; echo y"), "ERR\ny\n");
    check_plumbing(&s, 0);
    /* extdebug: a DEBUG trap that returns non-zero skips the command it
     * was run for, and only that. */
    out_of(&s, "trap - ERR; set +E; shopt -s extdebug; "
           "trap '[[ $BASH_COMMAND != *skip* ]]' DEBUG");
    ASSERT_STR(out_of(&s, "echo a; echo skip; echo b"),
               "a\nb\n");
    check_plumbing(&s, 0);
    sess_close(&s);
}

TEST(shell_driver_a_trap_that_skips_everything_ends_it)
{
    /* extdebug and a DEBUG trap that always fails skip every line, the
     * driver's too: the session ends rather than spinning or hanging. */
    struct sess s;
    sess_open(&s);
    check_ends_session(&s, "", "shopt -s extdebug; trap false DEBUG", 0);
    sess_close(&s);
}

TEST(shell_driver_aliases_and_functions_named_like_its_words)
{
    /* Aliases (expand_aliases on) and functions over the names the driver
     * and eval use: the driver is never steered by them, the command is
     * (an rvm-style `cd` function runs for the command's cd, not for the
     * run's cwd). */
    struct sess s;
    sess_open(&s);
    out_of(&s, "shopt -s expand_aliases; for w in builtin command eval printf "
           "mapfile cd unset return export set shopt exit . declare echo "
           "read trap local; do alias \"$w=echo ALIAS\"; done; "
           "alias hi='/bin/echo hello'");
    ASSERT_EQ(s.res.exit_code, 0);
    check_plumbing(&s, 0);
    ASSERT_STR(out_of(&s, "hi"), "hello\n");
    out_of(&s, "unalias -a");
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
    out_of(&s, defs);
    ASSERT_EQ(s.res.exit_code, 0);
    check_plumbing(&s, 0);
    rein_shell_run_opts_t o = {.command = "pwd", .cwd = "/tmp"};
    ASSERT_OK(drive(&s, &o));
    ASSERT_STR(s.out.p, "/tmp\n");
    ASSERT_STR(out_of(&s, "cd /; echo x; pwd"),
               "rvm-cd\nFN-echo\n/\n");
    sess_close(&s);
}

TEST(shell_driver_settings_the_command_leaves)
{
    /* Shell options, IFS, PATH and umask the command changes are its own
     * and persist; none of them changes what the driver does. */
    struct sess s;
    sess_open(&s);
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
        out_of(&s, leave[i]);
        ASSERT_EQ(s.res.exit_code, 0);
        check_plumbing(&s, 0);
    }
    ASSERT_STR(out_of(&s, "umask; echo \"$-\"; "
                          "shopt -q nocasematch && echo nc; "
                          "env | grep -c ^__rein_"),
               "0077\nafhkuBCc\nnc\n0\n");
    /* set -e in the command itself: `false && true` goes on, as in a
     * terminal (set -e before the command: see the header of shell.c). */
    ASSERT_STR(out_of(&s, "set +u; set -e; false && true; echo on"),
               "on\n");
    check_plumbing(&s, 0);
    /* A read-only POSIXLY_CORRECT keeps the driver out of posix mode: it
     * then finds special builtins by name, which still works here. */
    out_of(&s, "set +e; declare -r POSIXLY_CORRECT");
    check_plumbing(&s, 0);
    sess_close(&s);
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
    struct sess s;
    sess_open(&s);
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        check_ends_session(&s, "", cmds[i], REIN_ESHELL_EXEC);
    sess_close(&s);
}

TEST(shell_driver_fds_the_command_plays_with)
{
    /* exec redirections last for the command's own run; the driver's fds
     * are its own again after the command, whatever it did to them. */
    struct sess s;
    sess_open(&s);
    ASSERT_STR(out_of(&s, "exec >/dev/null; echo hidden"), "");
    ASSERT_STR(out_of(&s, "exec 2>&1; echo err >&2"), "err\n");
    ASSERT_STR(out_of(&s, "exec 3>&- 60>&- 61>/dev/null 62<&-; echo closed"),
               "closed\n");
    check_plumbing(&s, 0);
    ASSERT_STR(out_of(&s, "exec 3>/dev/null; echo kept >&3; echo ok"),
               "ok\n");
    ASSERT_STR(out_of(&s, "[ -e /proc/$$/fd/3 ] && echo three"),
               "three\n");
    /* Closing bash's own saved copies of them (fds >= 10) leaves it no
     * way to talk: the session ends, and the call returns. */
    check_ends_session(&s, "",
                       "for f in /proc/$$/fd/*; do n=${f##*/}; "
                       "[ \"$n\" -ge 10 ] && eval \"exec $n>&-\"; done",
                       0);
    sess_close(&s);
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
    struct sess s;
    sess_open(&s);
    out_of(&s, "K=1");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ASSERT_CONTAINS(out_of(&s, cases[i].cmd), cases[i].says);
        ASSERT_EQ(s.res.exit_code, cases[i].code);
        ASSERT_STR(out_of(&s, "echo $K"), "1\n");
    }
    sess_close(&s);
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
    snprintf(cmd, sizeof cmd,
             "deactivate() { PATH=$_OLD_PATH; unset VIRTUAL_ENV; "
             "PS1=$_OLD_PS1; unset -f deactivate; hash -r; }\n"
             "_OLD_PATH=$PATH; _OLD_PS1=${PS1-}\n"
             "VIRTUAL_ENV='%s'; export VIRTUAL_ENV\n"
             "PATH=\"$VIRTUAL_ENV:$PATH\"; export PATH\n"
             "PS1=\"(venv) ${PS1-}\"; hash -r 2>/dev/null\n",
             dir);
    put_file(script, cmd, 0644);
    snprintf(cmd, sizeof cmd, "%s/tool", dir);
    put_file(cmd, "#!/bin/sh\necho venv-tool\n", 0755);

    struct sess s;
    sess_open(&s);
    snprintf(cmd, sizeof cmd, "source '%s'", script);
    ASSERT_STR(out_of(&s, cmd), "");
    ASSERT_STR(out_of(&s, "tool; echo \"$PS1\""),
               "venv-tool\n(venv) \n");
    check_plumbing(&s, 0);
    ASSERT_STR(out_of(&s, "deactivate; tool 2>/dev/null || echo gone; "
                      "echo ${VIRTUAL_ENV-unset}"),
               "gone\nunset\n");
    sess_close(&s);
}

TEST(shell_driver_stdin_is_empty_and_jobs_end_with_the_session)
{
    /* The command's stdin is /dev/null: a read ends at once.  `wait`
     * waits for the session's jobs; jobs still running (job control on
     * or off) end when the session is freed, and an EXIT trap runs. */
    char mark[512], cmd[1024];
    snprintf(mark, sizeof mark, "%s/exit-trap", test_tmpdir());
    struct sess s;
    sess_open(&s);
    ASSERT_STR(out_of(&s, "read x; echo \"rc=$?\"; cat; echo done"),
               "rc=1\ndone\n");
    ASSERT_STR(out_of(&s, "(sleep 0.1; exit 5) & wait $!; echo $?"),
               "5\n");
    pid_t plain = (pid_t)atol(out_of(&s, "sleep 300 >/dev/null & echo $!"));
    pid_t monitored =
        (pid_t)atol(out_of(&s, "set -m; sleep 300 >/dev/null & echo $!"));
    snprintf(cmd, sizeof cmd, "trap 'echo bye > \"%s\"' EXIT", mark);
    out_of(&s, cmd);
    ASSERT_TRUE(test_pid_alive(plain));
    ASSERT_TRUE(test_pid_alive(monitored));
    sess_close(&s);
    ASSERT_TRUE(test_wait_gone(plain));
    ASSERT_TRUE(test_wait_gone(monitored));
    buf_t got = BUF_INIT;
    ASSERT_TRUE(tu_read_file(mark, &got));
    ASSERT_STR(got.p, "bye\n");
    buf_free(&got);
}

TEST(shell_driver_one_shot_snapshot_with_hostile_functions)
{
    /* A snapshot (a dump of a user's shell) that defines builtin and
     * command and turns on set -x: the one-shot still sources it, runs
     * the command with them, and traces only the command. */
    char snap[512];
    snprintf(snap, sizeof snap, "%s/snap.sh", test_tmpdir());
    put_file(snap,
             "builtin() { echo \"FN $*\"; }\ncommand() { echo CFN; }\n"
             "export -f builtin\nSNAPV=1\nset -x\n",
             0644);
    rein_shell_opts_t so = {.snapshot_path = snap};
    buf_t out = BUF_INIT;
    rein_shell_run_opts_t o = {
        .command = "echo \"v=$SNAPV\"; builtin echo x; "
                   "bash -c 'type -t builtin'",
        .on_chunk = gather,
        .data = &out};
    rein_run_result_t res;
    ASSERT_OK(rein_shell_exec(&so, &o, &res));
    ASSERT_STR(out.p, "++ echo v=1\nv=1\n++ builtin echo x\n"
                      "++ echo 'FN echo x'\nFN echo x\n"
                      "++ bash -c 'type -t builtin'\nfunction\n");
    ASSERT_EQ(res.exit_code, 0);
    buf_free(&out);
}

TEST(shell_driver_set_e_goes_on_where_bash_would)
{
    /* Under set -e bash exits for a failing command only where errexit
     * applies to it (not in an && or || list short of its last command,
     * not after `!`), whatever the status the line ends with.  The
     * session used to end for any command whose status was not 0 (`false
     * && true`, `[ -f x ] && ...`), since the eval running it failed. */
    struct sess s;
    sess_open(&s);
    out_of(&s, "set -euo pipefail; K=1; n=0; trap 'n=$((n + 1))' ERR");
    static const char *const goes_on[] = {
        "false && true",
        "[ -f /nonexistent-rein ] && echo yes",
        "false | true && true",
        "echo a\n! true",
        "f() { return 3; }\nf || (exit 4) || false && true",
    };
    for (size_t i = 0; i < sizeof goes_on / sizeof *goes_on; i++) {
        rein_shell_run_opts_t o = {.command = goes_on[i]};
        ASSERT_OK(drive(&s, &o));
        ASSERT_TRUE(s.res.has_exit_code);
        ASSERT_EQ(s.res.exit_code, 1);
        /* Kept, `$?` carried, and no ERR trap ran (none would in bash). */
        ASSERT_STR(out_of(&s, "echo \"$? $K $n\""), "1 1 0\n");
    }
    /* An unterminated heredoc (bash's warning) is the command's too. */
    ASSERT_CONTAINS(out_of(&s, "cat <<EOF\nbody"), "body\n");
    ASSERT_EQ(s.res.exit_code, 0);
    /* Where errexit applies, the session ends at that point, as bash. */
    ASSERT_STR(out_of(&s, "echo a\nfalse\necho not-reached"), "a\n");
    ASSERT_EQ(s.res.exit_code, 1);
    ASSERT_STR(out_of(&s, "echo ${K-gone}"), "gone\n");
    /* set -e in the command itself applies from the next line on. */
    out_of(&s, "K=1");
    ASSERT_STR(out_of(&s, "set -e; false && true; echo on; (exit 5); "
                          "echo not-reached"),
               "on\n");
    ASSERT_EQ(s.res.exit_code, 5);
    ASSERT_STR(out_of(&s, "echo ${K-gone}"), "gone\n");
    sess_close(&s);
}

TEST(shell_driver_a_command_that_does_not_parse_runs_nothing_early)
{
    /* Whether the driver may add its status line to a command is asked
     * of bash's parser without running the command: words that close
     * what the parse is wrapped in must not let the rest run then. */
    static const char *const cmds[][2] = {
        {"echo a; }; fi; done; echo x >'", "'"},
        {"echo a\n;; esac; echo x >'", "'; case y in (z)"},
        /* An alias of the session's (below): expanded when the command
         * runs, not in the parse the driver asks for. */
        {"zz", NULL},
    };
    char mark[512], cmd[1024];
    snprintf(mark, sizeof mark, "%s/leaked", test_tmpdir());
    struct sess s;
    sess_open(&s);
    snprintf(cmd, sizeof cmd,
             "K=1; shopt -s expand_aliases; "
             "alias zz=\"esac; echo x >'%s'; case y in (z)\"",
             mark);
    out_of(&s, cmd);
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        if (cmds[i][1])
            snprintf(cmd, sizeof cmd, "%s%s%s", cmds[i][0], mark,
                     cmds[i][1]);
        else
            snprintf(cmd, sizeof cmd, "%s", cmds[i][0]);
        ASSERT_CONTAINS(out_of(&s, cmd), "syntax error");
        ASSERT_EQ(s.res.exit_code, 2);
        ASSERT_TRUE(access(mark, F_OK) < 0);
        ASSERT_STR(out_of(&s, "echo $K"), "1\n");
    }
    sess_close(&s);
}

TEST(shell_driver_set_v_echoes_the_command_only)
{
    /* set -v echoes each line bash reads: switched on by a command, it
     * must not echo a line of the driver's after it. */
    struct sess s;
    sess_open(&s);
    ASSERT_STR(out_of(&s, "set -v"), "");
    ASSERT_STR(out_of(&s, "echo v"), "echo v\nv\n");
    ASSERT_STR(out_of(&s, "set +v"), "set +v\n");
    ASSERT_STR(out_of(&s, "set -o verbose"), "");
    ASSERT_STR(out_of(&s, "set +o verbose"), "set +o verbose\n");
    ASSERT_STR(out_of(&s, "shopt -so verbose"), "");
    ASSERT_STR(out_of(&s, "set -x +v"), "set -x +v\n");
    ASSERT_STR(out_of(&s, "set -v"), "++ set -v\n");
    ASSERT_STR(out_of(&s, "set +xv"), "set +xv\n++ set +xv\n");
    ASSERT_STR(out_of(&s, "echo q"), "q\n");
    sess_close(&s);
}

/* DEBUG trap runs bash makes for the driver's own lines in each run, on
 * top of the command's: the arithmetic `for` test and step, the call of
 * the step and the eval (see the comment above SHELL_DRIVER). */
#define DRIVER_DEBUG_RUNS 4

TEST(shell_driver_debug_trap_runs_per_run)
{
    /* A DEBUG trap that counts: per run, one for each simple command of
     * the command's, as in a terminal, and DRIVER_DEBUG_RUNS of the
     * driver's, which used to be seven. */
    struct sess s;
    sess_open(&s);
    out_of(&s, "trap 'n=$((n + 1))' DEBUG; n=0");
    out_of(&s, ":");
    out_of(&s, "x=1; :; : | :");
    char want[32];
    /* After n=0: `:`, then x=1, `:` and the pipeline's two, then the
     * echo, in three runs. */
    snprintf(want, sizeof want, "%d\n", 1 + 4 + 1 + 3 * DRIVER_DEBUG_RUNS);
    ASSERT_STR(out_of(&s, "echo $n"), want);
    sess_close(&s);
}
