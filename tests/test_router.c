/*
 * test_router.c — the category router: every category for many commands,
 * segments at &&, || and ;, the built-in danger table, the policy file's
 * allow and forbid lists, the grammar hook, and the limits at their edges.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "harness.h"
#include "squash/router.h"

static router_t *mk(const char *policy)
{
    router_t *r = NULL;
    char err[512];
    int rc = router_new(policy, &r, err, sizeof err);
    if (rc < 0)
        test_fail(__FILE__, __LINE__, "router_new: %d %s", rc, err);
    return r;
}

static router_cat_t cat_of(router_t *r, const char *cmd)
{
    router_result_t res;
    ASSERT_OK(router_classify(r, cmd, &res));
    router_cat_t c = res.category;
    router_result_free(&res);
    return c;
}

#define ASSERT_CAT(r, cmd, want)                                            \
    do {                                                                    \
        router_cat_t got_ = cat_of((r), (cmd));                             \
        if (got_ != (want))                                                 \
            test_fail(__FILE__, __LINE__, "%s: %s, want %s", (cmd),         \
                      router_cat_name(got_), router_cat_name(want));        \
    } while (0)

TEST(router_categories_from_the_builtin_table)
{
    router_t *r = mk(NULL);
    const char *condense[] = {"npm install", "make -j8", "cargo build",
                              "python3 setup.py build", "bash -c 'make'",
                              "git clone x", "git pull --rebase",
                              "docker build .",
                              "ssh host uptime", "unknown-tool --flag",
                              "(cd x && make)", "node script.js",
                              "node --test", "node --test --test-reporter=tap",
                              "node --check app.js", "node --run build",
                              NULL};
    const char *narrate[] = {"cp a b", "cp -r dir dst", "mv a b", "rm f",
                             "mkdir -p a/b", "touch x", "chmod 755 f",
                             "ln -s a b", "sudo cp a /etc/b",
                             "/bin/rm -f x.o", NULL};
    const char *passthrough[] = {"cat f", "grep -rn foo .", "ls -la",
                                 "find . -name '*.c'", "jq . x.json",
                                 "diff a b", "sed -n 1,5p f", "env",
                                 "LANG=C ls", "time wc -l f", NULL};
    const char *structured[] = {"git status", "git log --oneline",
                                "git -C sub diff", "git --no-pager show",
                                "docker ps -a", "kubectl get pods",
                                "git stash list", NULL};
    const char *interactive[] = {"vim f", "less log", "top", "htop",
                                 "python3", "node", "python3 -i", "ssh host",
                                 "man ls", "git commit", "git rebase -i HEAD~3",
                                 "git add -p", "docker run -it ubuntu bash",
                                 "bash", "sqlite3", "tmux", NULL};
    for (const char **p = condense; *p; p++)
        ASSERT_CAT(r, *p, ROUTER_CONDENSE);
    for (const char **p = narrate; *p; p++)
        ASSERT_CAT(r, *p, ROUTER_NARRATE);
    for (const char **p = passthrough; *p; p++)
        ASSERT_CAT(r, *p, ROUTER_PASSTHROUGH);
    for (const char **p = structured; *p; p++)
        ASSERT_CAT(r, *p, ROUTER_STRUCTURED);
    for (const char **p = interactive; *p; p++)
        ASSERT_CAT(r, *p, ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "git commit -m 'x'", ROUTER_CONDENSE);
    /* Short options bundled or with their value glued on, and commands
     * that only print and exit, need no terminal (they were refused as
     * interactive on pipes). */
    const char *not_interactive[] = {
        "git commit -am 'fix'", "git commit -qm 'fix'", "git commit -m'fix'",
        "git commit -aF msg.txt", "vim --version", "less --help",
        "ssh -V", "top -b -n 1", "htop --version", NULL};
    for (const char **p = not_interactive; *p; p++) {
        router_cat_t c = cat_of(r, *p);
        if (c == ROUTER_INTERACTIVE)
            test_fail(__FILE__, __LINE__, "\"%s\" is interactive", *p);
    }
    /* A REPL whose input is redirected runs a script and ends (the
     * heredoc is how agents run one); a redirection of another fd, or of
     * a program that is not a REPL, changes nothing. */
    const char *fed[] = {"python3 <<'EOF'\nprint(1)\nEOF",
                         "python3 < script.py", "psql <<< 'select 1'",
                         "node 0<x.js", "bash <&3", "cd x && python3 <<EOF",
                         "FOO=1 python3 <<-EOF", NULL};
    for (const char **p = fed; *p; p++) {
        router_cat_t c = cat_of(r, *p);
        if (c == ROUTER_INTERACTIVE)
            test_fail(__FILE__, __LINE__, "\"%s\" is interactive", *p);
    }
    ASSERT_CAT(r, "python3 2>err.txt", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "python3 > out.txt", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "less < log", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "python3 | tee x <<EOF", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "git add -Ap", ROUTER_INTERACTIVE); /* -p in a bundle */
    ASSERT_CAT(r, "git commit -a", ROUTER_INTERACTIVE);
    router_free(r);
}

/* An interactive answer says what asks for a terminal and how to do
 * without one (router_seg_t.tty_why); others say nothing. */
TEST(router_interactive_answers_say_why)
{
    router_t *r = mk(NULL);
    router_ctx_t pipes = {.pipes = true};
    /* Each line is "WORDS IN THE REASON\tCOMMAND". */
    const char *const cases[] = {
        "full-screen editor; change files\tvim notes.txt",
        "full-screen editor\temacs -nw notes.txt",
        "full-screen monitor; take one snapshot\ttop",
        "watch redraws\twatch -n1 ls",
        "full-screen program\ttmux",
        "editor for the commit message; give the message with -m\t"
        "git commit -a",
        /* The commit's editor set to vim: still the commit's reason, not
         * vim's (the first reason given wins). */
        "editor for the commit message\tGIT_EDITOR=vim git commit",
        "rebase todo list; set GIT_SEQUENCE_EDITOR\tgit rebase -i HEAD~2",
        "each hunk or file\tgit add -p",
        "editor for the tag message\tgit tag -a v1",
        "-e or --edit opens an editor\tgit merge -e topic",
        "-t asks for a terminal\tdocker run -it debian bash",
        "-t asks for a terminal\tkubectl exec -it pod -- sh",
        "container's terminal\tdocker attach web",
        "login session; give the command\tssh -t host",
        "interactive prompt; give it a script\tpython3",
        "interactive shell; give the commands with -c\tbash -i",
        "crontab -e opens an editor\tcrontab -e",
        "crontab -i asks\tcrontab -i -r",
        "opens an editor; set EDITOR\tvisudo",
        /* A later segment, and a later pipeline stage, give theirs. */
        "full-screen editor\tcd src && vim x.c",
        NULL};
    for (const char *const *p = cases; *p; p++) {
        const char *tab = strchr(*p, '\t');
        char want[96];
        snprintf(want, sizeof want, "%.*s", (int)(tab - *p), *p);
        router_result_t res;
        ASSERT_OK(router_classify_ctx(r, tab + 1, &pipes, &res));
        if (res.category != ROUTER_INTERACTIVE || !res.tty_why ||
            !strstr(res.tty_why, want))
            test_fail(__FILE__, __LINE__, "%s: %s, why \"%s\", want \"%s\"",
                      tab + 1, router_cat_name(res.category),
                      res.tty_why ? res.tty_why : "(none)", want);
        router_result_free(&res);
    }
    /* On a terminal a pager and man page; on pipes they print. */
    router_result_t res;
    ASSERT_OK(router_classify(r, "git log | less", &res));
    ASSERT_TRUE(res.tty_why && strstr(res.tty_why, "a pager waits for keys"));
    router_result_free(&res);
    ASSERT_OK(router_classify(r, "man ls", &res));
    ASSERT_TRUE(res.tty_why && strstr(res.tty_why, "MANPAGER=cat"));
    router_result_free(&res);
    /* An argv running `sh -c STRING` gives the string's reason. */
    const char *argv[] = {"bash", "-c", "htop", NULL};
    ASSERT_OK(router_classify_argv_ctx(r, argv, &pipes, &res));
    ASSERT_TRUE(res.tty_why && strstr(res.tty_why, "full-screen monitor"));
    router_result_free(&res);
    /* Nothing interactive: no reason, even where a stage had one that a
     * later rule overruled. */
    const char *const quiet[] = {"make", "git commit -m x", "less f",
                                 "python3 <<'EOF'\nprint(1)\nEOF",
                                 "ssh host uptime", "vim -es -c wq f",
                                 "emacs --batch -l build.el", NULL};
    for (const char *const *p = quiet; *p; p++) {
        ASSERT_OK(router_classify_ctx(r, *p, &pipes, &res));
        if (res.category == ROUTER_INTERACTIVE || res.tty_why)
            test_fail(__FILE__, __LINE__, "%s: %s, why \"%s\"", *p,
                      router_cat_name(res.category),
                      res.tty_why ? res.tty_why : "(none)");
        for (size_t i = 0; i < res.nsegs; i++)
            ASSERT_TRUE(res.segs[i].tty_why == NULL);
        router_result_free(&res);
    }
    router_free(r);
}

static router_cat_t cat_in(router_t *r, const router_ctx_t *ctx,
                           const char *cmd)
{
    router_result_t res;
    ASSERT_OK(router_classify_ctx(r, cmd, ctx, &res));
    router_cat_t c = res.category;
    router_result_free(&res);
    return c;
}

/* Each line is "WANT\tCOMMAND", WANT a category name, routed in ctx. */
static void check_cats(router_t *r, const router_ctx_t *ctx,
                       const char *const *lines, const char *file, int line)
{
    for (const char *const *p = lines; *p; p++) {
        const char *tab = strchr(*p, '\t');
        char want_name[16];
        router_cat_t want;
        snprintf(want_name, sizeof want_name, "%.*s", (int)(tab - *p), *p);
        if (router_cat_parse(want_name, &want) < 0)
            test_fail(file, line, "bad category in \"%s\"", *p);
        router_cat_t got = cat_in(r, ctx, tab + 1);
        if (got != want)
            test_fail(file, line, "%s: %s, want %s", tab + 1,
                      router_cat_name(got), want_name);
    }
}

/* An editor set, on the line or in the environment, to a program that
 * needs no terminal makes the commands that open it need none; set to one
 * that does (or unset: vi) they still do.  Agents run these because they
 * are non-interactive; they were refused on pipes. */
TEST(router_editor_settings_decide_whether_editing_needs_a_terminal)
{
    router_t *r = mk(NULL);
    static const char *const lines[] = {
        /* git: GIT_EDITOR, -c core.editor, VISUAL, EDITOR, else vi. */
        "condense\tGIT_EDITOR=true git commit",
        "condense\tGIT_EDITOR=: git commit --amend",
        "condense\tenv GIT_EDITOR=true git commit",
        "condense\tgit -c core.editor=true rebase -i HEAD~3",
        "condense\tgit -c Core.Editor=true commit",
        "condense\tVISUAL=true git commit",
        "condense\tEDITOR='code --wait' git commit",
        "condense\tGIT_EDITOR=true git commit -e -m x",
        "interactive\tGIT_EDITOR=vim git commit",
        "interactive\tEDITOR='emacs -nw' git commit",
        "interactive\tgit -c core.editor=true -c core.editor=vim commit",
        "interactive\tGIT_EDITOR= git commit", /* empty is unset */
        "interactive\tTERM=dumb VISUAL=true git commit", /* git skips it */
        "condense\tTERM=dumb VISUAL=vim EDITOR=: git commit",
        /* The rebase todo list: the sequence editor, then git's editor. */
        "condense\tGIT_SEQUENCE_EDITOR=true git rebase -i HEAD~3",
        "condense\tGIT_SEQUENCE_EDITOR=\"sed -i 's/^pick/fixup/'\" "
        "git rebase -i --autosquash main",
        "condense\tgit -c sequence.editor=: rebase --interactive x",
        "interactive\tGIT_SEQUENCE_EDITOR=vim git rebase -i x",
        "interactive\tgit rebase --edit-todo",
        /* Message given another way, or the editor asked for. */
        "condense\tgit commit --no-edit", "condense\tgit commit -F msg.txt",
        "condense\tgit commit --amend --no-edit",
        "condense\tgit commit --fixup HEAD",
        "interactive\tgit commit -e -m x",
        "interactive\tgit commit --fixup=reword:HEAD",
        "interactive\tgit commit -c HEAD",
        "interactive\tgit add -e", "condense\tEDITOR=true git add -e",
        "interactive\tgit merge --edit topic",
        "interactive\tgit tag -a v1", "interactive\tgit tag -s v1 HEAD",
        "structured\tGIT_EDITOR=true git tag -a v1",
        "structured\tgit tag -am 'v1' v1", "structured\tgit tag -a v1 -F n",
        "structured\tgit tag v1", "structured\tgit tag -l",
        "structured\tgit tag -d v1",
        /* `export` earlier on the line is seen; a later one is not. */
        "condense\texport GIT_EDITOR=true && git commit",
        "condense\texport X=1 EDITOR=true; crontab -e",
        "interactive\texport EDITOR=vim; crontab -e",
        "interactive\tgit commit; export GIT_EDITOR=true",
        /* crontab and visudo open the editor only to edit. */
        "passthrough\tcrontab -l", "passthrough\tEDITOR=cat crontab -l",
        "condense\tcrontab -r", "condense\tcrontab jobs.txt",
        "condense\tEDITOR=cat crontab -e", "interactive\tcrontab -e",
        "interactive\tcrontab -ri", "condense\tvisudo -c",
        "condense\tSUDO_EDITOR=true visudo", "interactive\tvisudo",
        NULL};
    check_cats(r, NULL, lines, __FILE__, __LINE__);

    /* git merge (and a pull's merge) opens its editor by default when its
     * stdin and stdout are one terminal, git revert when its stdin is one:
     * on a PTY they do, unless told otherwise or given nothing to commit. */
    static const char *const on_term[] = {
        "interactive\tgit merge topic", "interactive\tgit pull",
        "interactive\tgit pull --rebase=false origin main",
        "interactive\tgit revert HEAD", "interactive\tgit revert HEAD > out",
        "interactive\tgit -C repo merge topic",
        "condense\tgit merge --no-edit topic",
        "condense\tgit merge -m 'Merge topic' topic",
        "condense\tgit merge --ff-only topic",
        "condense\tgit merge --squash topic", "condense\tgit merge --abort",
        "condense\tGIT_MERGE_AUTOEDIT=no git merge topic",
        "condense\tgit merge topic > merge.log",
        "condense\tgit merge topic < /dev/null",
        "condense\tgit merge topic | cat", "condense\tgit pull --rebase",
        "condense\tgit pull -r origin main", "condense\tgit pull --ff-only",
        "condense\tgit pull --no-edit", "condense\tgit revert --no-edit HEAD",
        "condense\tgit revert -n HEAD", "condense\tgit revert --abort",
        "condense\tgit revert HEAD < /dev/null",
        "condense\tGIT_EDITOR=true git revert HEAD",
        "condense\tEDITOR=true git merge topic",
        "condense\tgit cherry-pick HEAD~1",
        /* Resuming after conflicts commits in the editor, terminal or
         * not; a cherry-pick keeps its message. */
        "interactive\tgit rebase --continue",
        "interactive\tgit merge --continue",
        "condense\tGIT_EDITOR=true git rebase --continue",
        "condense\tgit -c core.editor=true merge --continue",
        "condense\tgit rebase --abort", "condense\tgit rebase --skip",
        "condense\tgit cherry-pick --continue", NULL};
    check_cats(r, NULL, on_term, __FILE__, __LINE__);
    /* On pipes (serve without tty) git sees no terminal and edits
     * nothing. */
    router_ctx_t no_term = {.pipes = true};
    static const char *const on_pipes[] = {
        "condense\tgit merge topic", "condense\tgit revert HEAD",
        "condense\tgit pull", "interactive\tgit rebase --continue",
        "interactive\tgit merge --continue", NULL};
    check_cats(r, &no_term, on_pipes, __FILE__, __LINE__);
    router_result_t why;
    ASSERT_OK(router_classify_ctx(r, "git rebase --continue", &no_term, &why));
    ASSERT_CONTAINS(why.tty_why, "set GIT_EDITOR=true to keep the message");
    router_result_free(&why);
    /* term_edit says which editor is there only for the terminal's sake
     * (GIT_EDITOR=true gives git's own message), not an editor asked for,
     * nor one a commit needs for its message. */
    static const struct {
        const char *cmd;
        bool term_edit;
    } flags[] = {{"git merge topic", true},
                 {"make && git revert HEAD", true},
                 {"git merge --edit topic", false},
                 {"git merge --no-edit topic", false},
                 {"git commit", false},
                 {"git rebase --continue", false},
                 {"GIT_EDITOR=true git revert HEAD", false}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        router_result_t res;
        ASSERT_OK(router_classify(r, flags[i].cmd, &res));
        if (res.term_edit != flags[i].term_edit)
            test_fail(__FILE__, __LINE__, "%s: term_edit %d", flags[i].cmd,
                      res.term_edit);
        router_result_free(&res);
    }

    /* The context's environment: what serve's `env` argument gives, over
     * the inherited one; the line's own assignments win over both. */
    static const char *const env[] = {"EDITOR=vim", "GIT_EDITOR=true",
                                      "GIT_SEQUENCE_EDITOR=vim", NULL};
    router_ctx_t ctx = {.env = env};
    static const char *const in_env[] = {
        "condense\tgit commit", "interactive\tGIT_EDITOR=vim git commit",
        "interactive\tcrontab -e", "condense\tEDITOR=: crontab -e",
        "interactive\tgit rebase -i x", NULL};
    check_cats(r, &ctx, in_env, __FILE__, __LINE__);
    static const char *const later[] = {"GIT_EDITOR=vim", "GIT_EDITOR=true",
                                        NULL};
    ctx.env = later; /* the last entry wins */
    ASSERT_EQ(cat_in(r, &ctx, "git commit"), ROUTER_CONDENSE);

    /* This process's environment, only when asked for. */
    unsetenv("VISUAL");
    unsetenv("GIT_EDITOR");
    ASSERT_OK(setenv("EDITOR", "true", 1));
    ASSERT_EQ(cat_in(r, NULL, "git commit"), ROUTER_INTERACTIVE);
    router_ctx_t inherit = {.inherit_env = true};
    ASSERT_EQ(cat_in(r, &inherit, "git commit"), ROUTER_CONDENSE);
    router_result_t res;
    const char *argv[] = {"git", "commit", NULL};
    ASSERT_OK(router_classify_argv_ctx(r, argv, &inherit, &res));
    ASSERT_EQ(res.category, ROUTER_CONDENSE);
    router_result_free(&res);
    ASSERT_OK(setenv("EDITOR", "vim", 1));
    ASSERT_EQ(cat_in(r, &inherit, "git commit"), ROUTER_INTERACTIVE);

    /* A setting that nests settings (GIT_EDITOR='GIT_EDITOR=... git
     * commit' ...) is routed ROUTER_MAX_NEST deep, then taken to need a
     * terminal. */
    for (int levels = ROUTER_MAX_NEST; levels <= ROUTER_MAX_NEST + 1;
         levels++) {
        buf_t cmd = BUF_INIT, inner = BUF_INIT;
        ASSERT_OK(buf_append_str(&cmd, "true"));
        for (int i = 0; i < levels; i++) {
            buf_reset(&inner);
            ASSERT_OK(buf_append_str(&inner, "GIT_EDITOR="));
            for (size_t k = 0; k < cmd.len; k++) { /* every byte escaped */
                ASSERT_OK(buf_append_byte(&inner, '\\'));
                ASSERT_OK(buf_append_byte(&inner, (unsigned char)cmd.p[k]));
            }
            ASSERT_OK(buf_append_str(&inner, " git commit"));
            buf_reset(&cmd);
            ASSERT_OK(buf_append(&cmd, inner.p, inner.len));
            ASSERT_OK(buf_append(&cmd, "", 0));
        }
        ASSERT_EQ(cat_in(r, NULL, cmd.p), levels <= ROUTER_MAX_NEST
                                              ? ROUTER_CONDENSE
                                              : ROUTER_INTERACTIVE);
        buf_free(&cmd);
        buf_free(&inner);
    }
    router_free(r);
}

/* Prompts per hunk or per file always need a terminal; the same letters
 * elsewhere do not (`git stash show -p` prints, `git clean -e` excludes). */
TEST(router_git_prompts_are_told_from_lookalike_options)
{
    router_t *r = mk(NULL);
    static const char *const lines[] = {
        "interactive\tgit add -p", "interactive\tgit add --interactive",
        "interactive\tGIT_EDITOR=true git add -p",
        "interactive\tgit commit -p -m x",
        "interactive\tgit commit --interactive",
        "condense\tgit commit -i f.c -m x", /* -i is --include */
        "interactive\tgit stash -p", "interactive\tgit stash push -p",
        "structured\tgit stash show -p", "interactive\tgit checkout -p",
        "interactive\tgit reset --patch", "interactive\tgit clean -i",
        "condense\tgit clean -n -e '*.log'", "structured\tgit log -p",
        NULL};
    check_cats(r, NULL, lines, __FILE__, __LINE__);
    router_free(r);
}

/* A pager pages only when its output is a terminal and its pager setting
 * needs one; a later pipeline stage that needs a terminal makes the line
 * need one, and one fed by the pipe is not a REPL. */
TEST(router_pagers_and_pipeline_stages)
{
    router_t *r = mk(NULL);
    static const char *const lines[] = {
        "passthrough\tman -P cat ls", "passthrough\tman -Pcat ls",
        "passthrough\tman --pager=cat ls", "passthrough\tMANPAGER=cat man ls",
        "passthrough\tPAGER=cat man ls", "passthrough\tman -k printf",
        "passthrough\tman -f ls", "interactive\tMANPAGER=less PAGER=cat man ls",
        "interactive\tman ls", "interactive\tman -P less ls",
        /* Output away from the terminal: to a pipe or a file. */
        "passthrough\tman ls | cat", "passthrough\tman ls > ls.txt",
        "passthrough\tman ls &> ls.txt", "passthrough\tless f 1>>out",
        "interactive\tman ls 2>err", "interactive\tman ls >&2",
        "interactive\tless -F log", "interactive\tless -X log",
        "interactive\tcat log | less -F",
        /* Later stages: git log's own pager is rein's business (PAGER=cat
         * and GIT_PAGER=cat), an explicit one is the line's. */
        "structured\tPAGER=cat git log", "structured\tgit --no-pager log",
        "structured\tgit log | cat", "structured\tgit log | head -5",
        "interactive\tgit log | less", "interactive\tcat f | vim -",
        "passthrough\techo 'print(1)' | python3",
        "condense\tyes | apt-get install foo",
        "interactive\tpython3 | tee x", "interactive\tls |& less",
        /* Batch editors and monitors. */
        "condense\tvim -es -c '%s/a/b/' -c wq f", "condense\tvim -E -s f",
        "condense\tex -sc '%s/a/b/|x' f", "condense\tnvim --headless -c q",
        "interactive\tvim -s keys.txt f", "interactive\tvim -e f",
        "condense\ttop -b -n1", "interactive\ttop", "interactive\thtop",
        NULL};
    check_cats(r, NULL, lines, __FILE__, __LINE__);
    router_free(r);
}

/* On pipes (serve without `tty`): pagers print like cat, a shell reads
 * commands from the pipe (a session driven with write_stdin), and so does
 * ssh's remote shell; a REPL still waits with no prompt, -i still asks
 * for a terminal, and editors and monitors still need one. */
TEST(router_on_pipes_pagers_print_and_shells_read_the_pipe)
{
    router_t *r = mk(NULL);
    router_ctx_t pipes = {.pipes = true};
    static const char *const lines[] = {
        "passthrough\tless log", "passthrough\tless -F log",
        "passthrough\tman ls", "passthrough\tmore f",
        "structured\tgit log | less", "condense\tbash", "condense\tsh",
        "condense\tzsh --norc", "condense\tssh host",
        "condense\tssh -o BatchMode=yes host", "condense\tssh -p22 host",
        "condense\tssh -o BatchMode=yes host cmd", "interactive\tssh -t host",
        "interactive\tssh -tt -o BatchMode=yes host", "interactive\tbash -i",
        "interactive\tbash -il", "interactive\tpython3",
        "interactive\tpython3 -i", "condense\tpython3 -", "condense\tnode -",
        "interactive\tvim f", "interactive\ttop", "interactive\thtop",
        "interactive\tgit commit", "interactive\tgit add -p",
        "condense\tdocker run ubuntu echo hi",
        "interactive\tdocker run -it ubuntu bash", NULL};
    check_cats(r, &pipes, lines, __FILE__, __LINE__);
    /* On a terminal, the same shells and logins are interactive. */
    ASSERT_CAT(r, "bash", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "ssh -o BatchMode=yes host", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "less log", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "bash -l", ROUTER_INTERACTIVE); /* a login, not a batch */
    ASSERT_CAT(r, "bash -lc make", ROUTER_CONDENSE);
    router_free(r);
}

TEST(router_dangerous_builtin_table)
{
    router_t *r = mk(NULL);
    /* Command lines only: the router classifies them, nothing runs them. */
    const char *bad[] = {"rm -rf /", "rm -rf /*", "sudo rm -rf --no-preserve-root /",
                         "rm -fr ~", "rm -r -f $HOME", "rm  -rf  '/'",
                         "rm -rf /usr", "rm -rf .", "rm -rf *",
                         "git push --force", "git push -f origin main",
                         "git push origin +main", "git -C x push --force-with-lease",
                         "git reset --hard", "git reset --hard HEAD~1",
                         "git clean -fdx", "mkfs.ext4 /dev/sda1", "mkfs /dev/sdb",
                         "dd if=/dev/zero of=/dev/sda bs=1M",
                         "echo x > /dev/sda", ":(){ :|:& };:",
                         "bomb(){ bomb|bomb& }; bomb", "chmod -R 777 /",
                         "shutdown -h now", "reboot",
                         "kill -9 " "-1", /* every process: a vector only */
                         "find / -name x -delete", NULL};
    const char *ok[] = {"rm -rf build", "rm -rf ./build/", "rm -f a.o",
                        "rm -r /tmp/x/y", "git push", "git push origin main",
                        "git push --follow-tags", "git reset HEAD~1",
                        "git reset --soft x", "git clean -n",
                        "dd if=/dev/zero of=/dev/null count=1",
                        "dd if=/dev/zero of=img bs=1M", "echo rm -rf /x",
                        "chmod -R 755 build", "kill -9 1234", "find . -delete",
                        "grep 'rm -rf /' notes.txt", NULL};
    for (const char **p = bad; *p; p++)
        ASSERT_CAT(r, *p, ROUTER_DANGEROUS);
    for (const char **p = ok; *p; p++) {
        router_cat_t c = cat_of(r, *p);
        if (c == ROUTER_DANGEROUS)
            test_fail(__FILE__, __LINE__, "%s: dangerous", *p);
    }
    router_result_t res;
    ASSERT_OK(router_classify(r, "rm -rf /", &res));
    ASSERT_EQ(res.danger, ROUTER_DANGER_ASK);
    ASSERT_STR(res.danger_id, "rm-root");
    ASSERT_TRUE(res.danger_what != NULL);
    router_result_free(&res);
    router_free(r);
}

TEST(router_segments_are_routed_separately)
{
    router_t *r = mk(NULL);
    router_result_t res;
    ASSERT_OK(router_classify(
        r, "make && cp a b || echo 'x && y' ; git status & ls | grep q",
        &res));
    ASSERT_EQ(res.nsegs, 5);
    ASSERT_STR(res.segs[0].text, "make");
    ASSERT_EQ(res.segs[0].op, ROUTER_OP_NONE);
    ASSERT_EQ(res.segs[0].category, ROUTER_CONDENSE);
    ASSERT_STR(res.segs[1].text, "cp a b");
    ASSERT_EQ(res.segs[1].op, ROUTER_OP_AND);
    ASSERT_EQ(res.segs[1].category, ROUTER_NARRATE);
    ASSERT_STR(res.segs[2].text, "echo 'x && y'");
    ASSERT_EQ(res.segs[2].op, ROUTER_OP_OR);
    ASSERT_STR(res.segs[2].argv[1], "x && y");
    ASSERT_EQ(res.segs[3].op, ROUTER_OP_SEQ);
    ASSERT_EQ(res.segs[3].category, ROUTER_STRUCTURED);
    ASSERT_EQ(res.segs[4].op, ROUTER_OP_BG);
    ASSERT_STR(res.segs[4].text, "ls | grep q");
    ASSERT_EQ(res.segs[4].category, ROUTER_PASSTHROUGH);
    ASSERT_EQ(res.category, ROUTER_CONDENSE); /* mixed */
    router_result_free(&res);

    /* One dangerous segment makes the whole line dangerous. */
    ASSERT_OK(router_classify(r, "cd repo && git reset --hard; make", &res));
    ASSERT_EQ(res.category, ROUTER_DANGEROUS);
    ASSERT_EQ(res.segs[0].category, ROUTER_CONDENSE);
    ASSERT_EQ(res.segs[1].category, ROUTER_DANGEROUS);
    ASSERT_STR(res.danger_id, "git-reset-hard");
    router_result_free(&res);

    /* All narrate: the line is narrate; redirections are not words. */
    ASSERT_OK(router_classify(r, "mkdir -p d && cp a d/ 2>&1 >/dev/null",
                              &res));
    ASSERT_EQ(res.category, ROUTER_NARRATE);
    ASSERT_EQ(res.segs[1].argc, 3);
    ASSERT_STR(res.segs[1].argv[2], "d/");
    router_result_free(&res);

    /* Nesting, quotes and escapes hide separators. */
    ASSERT_OK(router_classify(r, "echo $(a; b) \"c;d\" e\\;f {g;h} `i;j`",
                              &res));
    ASSERT_EQ(res.nsegs, 1);
    router_result_free(&res);
    ASSERT_OK(router_classify(r, "x 2>&1 && y &>log", &res));
    ASSERT_EQ(res.nsegs, 2);
    router_result_free(&res);
    /* Empty segments vanish; newlines separate. */
    ASSERT_OK(router_classify(r, ";; a\nb ;", &res));
    ASSERT_EQ(res.nsegs, 2);
    router_result_free(&res);
    router_free(r);
}

TEST(router_argv_mode_reads_no_shell_syntax)
{
    router_t *r = mk(NULL);
    router_result_t res;
    const char *cp[] = {"cp", "a&&b", "c;d", NULL};
    ASSERT_OK(router_classify_argv(r, cp, &res));
    ASSERT_EQ(res.nsegs, 1);
    ASSERT_EQ(res.category, ROUTER_NARRATE);
    ASSERT_STR(res.segs[0].argv[1], "a&&b");
    router_result_free(&res);
    const char *rm[] = {"sudo", "rm", "-rf", "/", NULL};
    ASSERT_OK(router_classify_argv(r, rm, &res));
    ASSERT_EQ(res.category, ROUTER_DANGEROUS);
    router_result_free(&res);
    /* sh -c STRING is routed as the string. */
    const char *sh[] = {"bash", "-c", "make && git push -f", NULL};
    ASSERT_OK(router_classify_argv(r, sh, &res));
    ASSERT_EQ(res.nsegs, 2);
    ASSERT_EQ(res.category, ROUTER_DANGEROUS);
    router_result_free(&res);
    /* ... also with -c in a cluster or after other options. */
    const char *lc[] = {"timeout", "9", "bash", "-o", "pipefail", "-lc",
                        "make && git push -f", NULL};
    ASSERT_OK(router_classify_argv(r, lc, &res));
    ASSERT_EQ(res.nsegs, 2);
    ASSERT_EQ(res.category, ROUTER_DANGEROUS);
    router_result_free(&res);
    router_free(r);
}

TEST(router_shell_string_finds_the_c_operand)
{
    static const struct {
        const char *argv[8];
        const char *want;
    } cases[] = {
        {{"sh", "-c", "make"}, "make"},
        {{"/bin/bash", "-lc", "make"}, "make"},
        {{"bash", "-e", "-c", "make", "arg0"}, "make"},
        {{"bash", "-o", "pipefail", "-c", "make"}, "make"},
        {{"bash", "--norc", "--rcfile", "f", "-c", "make"}, "make"},
        {{"zsh", "-c", "--", "make"}, "make"},
        {{"bash", "-c"}, NULL},
        {{"bash", "script.sh", "-c"}, NULL},
        {{"bash", "+o", "c", "x"}, NULL},
        {{"make", "-c", "x"}, NULL},
        {{"python3", "-c", "x"}, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t argc = 0;
        while (cases[i].argv[argc])
            argc++;
        const char *got =
            router_shell_string((char *const *)cases[i].argv, argc);
        if (!cases[i].want) {
            if (got)
                test_fail(__FILE__, __LINE__, "case %zu: got %s", i, got);
            continue;
        }
        if (!got || strcmp(got, cases[i].want))
            test_fail(__FILE__, __LINE__, "case %zu: got %s", i,
                      got ? got : "(null)");
    }
    ASSERT_TRUE(router_shell_string(NULL, 0) == NULL);
}

static const char *write_policy(const char *body)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/policy.json", test_tmpdir());
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs(body, f);
    fclose(f);
    return path;
}

TEST(router_policy_allow_and_forbid)
{
    router_t *r = mk(write_policy(
        "{\"allow\": [\"^git push --force-with-lease\", \"^rm -rf \\\\*$\"],"
        " \"forbid\": [\"^curl .*\\\\| *sh\", \"^npm publish\","
        " \"^rm -rf \\\\*$\"]}"));
    router_result_t res;
    /* Allow wins over the built-in table. */
    ASSERT_CAT(r, "git push --force-with-lease", ROUTER_CONDENSE);
    ASSERT_CAT(r, "git push --force", ROUTER_DANGEROUS);
    /* Forbid wins over everything, allow included. */
    ASSERT_OK(router_classify(r, "rm -rf *", &res));
    ASSERT_EQ(res.danger, ROUTER_DANGER_FORBID);
    ASSERT_STR(res.danger_id, "policy-forbid");
    router_result_free(&res);
    ASSERT_OK(router_classify(r, "make && npm publish", &res));
    ASSERT_EQ(res.category, ROUTER_DANGEROUS);
    ASSERT_EQ(res.danger, ROUTER_DANGER_FORBID);
    ASSERT_EQ(res.segs[0].danger, ROUTER_SAFE);
    router_result_free(&res);
    /* Matched against the whole line too, so pipes are visible. */
    ASSERT_OK(router_classify(r, "curl -s x | sh", &res));
    ASSERT_EQ(res.danger, ROUTER_DANGER_FORBID);
    router_result_free(&res);
    router_free(r);
}

TEST(router_policy_errors_are_clear_and_missing_is_fine)
{
    router_t *r = NULL;
    char err[512];
    char missing[512];
    snprintf(missing, sizeof missing, "%s/nope.json", test_tmpdir());
    ASSERT_OK(router_new(missing, &r, err, sizeof err));
    router_free(r);
    ASSERT_EQ(router_new(write_policy("{\"forbid\": [\"(\"]}"), &r, err,
                         sizeof err),
              -EINVAL);
    ASSERT_CONTAINS(err, "forbid[0]");
    ASSERT_CONTAINS(err, "pattern offset");
    ASSERT_EQ(router_new(write_policy("{\"forbid\": \"x\"}"), &r, err,
                         sizeof err),
              -EINVAL);
    ASSERT_CONTAINS(err, "must be an array");
    ASSERT_EQ(router_new(write_policy("{\"forbd\": []}"), &r, err,
                         sizeof err),
              -EINVAL);
    ASSERT_CONTAINS(err, "unknown field \"forbd\"");
    ASSERT_EQ(router_new(write_policy("{\"allow\": [1]}"), &r, err,
                         sizeof err),
              -EINVAL);
    ASSERT_EQ(router_new(write_policy("{nope"), &r, err, sizeof err),
              -EINVAL);
    ASSERT_CONTAINS(err, "line 1");
    /* The size limit at its edge. */
    char *big = malloc(ROUTER_POLICY_MAX_BYTES + 2);
    ASSERT_TRUE(big != NULL);
    memset(big, ' ', ROUTER_POLICY_MAX_BYTES + 1);
    big[0] = '{';
    big[ROUTER_POLICY_MAX_BYTES - 1] = '}';
    big[ROUTER_POLICY_MAX_BYTES] = '\0';
    ASSERT_OK(router_new(write_policy(big), &r, err, sizeof err));
    router_free(r);
    big[ROUTER_POLICY_MAX_BYTES] = ' ';
    big[ROUTER_POLICY_MAX_BYTES + 1] = '\0';
    ASSERT_EQ(router_new(write_policy(big), &r, err, sizeof err), -EFBIG);
    free(big);
}

TEST(router_policy_regex_blowup_is_no_match)
{
    /* A catastrophic pattern hits the match limit instead of stalling. */
    router_t *r = mk(write_policy("{\"forbid\": [\"^(a+)+$\"]}"));
    char cmd[64];
    memset(cmd, 'a', 40);
    strcpy(cmd + 40, "!");
    ASSERT_CAT(r, cmd, ROUTER_CONDENSE);
    router_free(r);
}

TEST(router_policy_path_order)
{
    char p[512];
    setenv("REIN_POLICY", "/x/p.json", 1);
    ASSERT_OK(router_policy_path(p, sizeof p));
    ASSERT_STR(p, "/x/p.json");
    unsetenv("REIN_POLICY");
    setenv("XDG_CONFIG_HOME", "/cfg", 1);
    ASSERT_OK(router_policy_path(p, sizeof p));
    ASSERT_STR(p, "/cfg/rein/policy.json");
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/home/u", 1);
    ASSERT_OK(router_policy_path(p, sizeof p));
    ASSERT_STR(p, "/home/u/.config/rein/policy.json");
    ASSERT_EQ(router_policy_path(p, 8), -ENAMETOOLONG);
}

static bool grammar_hook(const char *const *argv, size_t argc,
                         router_cat_t *cat, const char **name, void *data)
{
    (void)argc;
    (void)data;
    if (strcmp(argv[0], "mytool") && strcmp(argv[0], "git"))
        return false;
    *cat = ROUTER_STRUCTURED;
    *name = strcmp(argv[0], "git") ? "mytool" : "git-listing";
    return true;
}

TEST(router_grammar_hook_overrides_the_table_but_not_danger)
{
    router_t *r = mk(NULL);
    router_set_grammar_category_fn(r, grammar_hook, NULL);
    router_result_t res;
    ASSERT_OK(router_classify(r, "sudo mytool x", &res));
    ASSERT_EQ(res.category, ROUTER_STRUCTURED);
    ASSERT_STR(res.grammar, "mytool");
    router_result_free(&res);
    ASSERT_CAT(r, "ls", ROUTER_PASSTHROUGH);
    ASSERT_CAT(r, "rm -rf /", ROUTER_DANGEROUS);
    /* A grammar says how to show output, not whether the command needs
     * a terminal: the table's interactive wins (its grammar still named). */
    ASSERT_CAT(r, "git stash list", ROUTER_STRUCTURED);
    ASSERT_OK(router_classify(r, "git stash -p", &res));
    ASSERT_EQ(res.category, ROUTER_INTERACTIVE);
    ASSERT_STR(res.grammar, "git-listing");
    router_result_free(&res);
    router_set_grammar_category_fn(r, NULL, NULL);
    ASSERT_CAT(r, "mytool x", ROUTER_CONDENSE);
    router_free(r);
}

TEST(router_limits_at_their_edges)
{
    router_t *r = mk(NULL);
    router_result_t res;
    /* ROUTER_MAX_SEGMENTS: the last slot takes the rest, unsplit. */
    buf_t b = BUF_INIT;
    for (int i = 0; i < ROUTER_MAX_SEGMENTS; i++)
        buf_printf(&b, "%sx%d", i ? ";" : "", i);
    ASSERT_OK(router_classify(r, b.p, &res));
    ASSERT_EQ(res.nsegs, ROUTER_MAX_SEGMENTS);
    router_result_free(&res);
    buf_printf(&b, ";rm -rf /");
    ASSERT_OK(router_classify(r, b.p, &res));
    ASSERT_EQ(res.nsegs, ROUTER_MAX_SEGMENTS);
    ASSERT_CONTAINS(res.segs[ROUTER_MAX_SEGMENTS - 1].text, "x63;rm -rf /");
    router_result_free(&res);
    /* ROUTER_MAX_WORDS: words beyond are ignored. */
    buf_reset(&b);
    buf_printf(&b, "cp");
    for (int i = 1; i < ROUTER_MAX_WORDS + 5; i++)
        buf_printf(&b, " w%d", i);
    ASSERT_OK(router_classify(r, b.p, &res));
    ASSERT_EQ(res.segs[0].argc, ROUTER_MAX_WORDS);
    router_result_free(&res);
    /* ROUTER_MAX_INPUT: one condense segment, danger still judged raw. */
    buf_reset(&b);
    buf_printf(&b, ":(){ :|:& };: ;");
    while (b.len <= ROUTER_MAX_INPUT)
        buf_append_str(&b, "echo hi; ");
    ASSERT_OK(router_classify(r, b.p, &res));
    ASSERT_EQ(res.nsegs, 1);
    ASSERT_EQ(res.category, ROUTER_DANGEROUS);
    router_result_free(&res);
    buf_free(&b);
    router_free(r);
}

TEST(router_names_round_trip)
{
    for (int c = ROUTER_CONDENSE; c <= ROUTER_DANGEROUS; c++) {
        router_cat_t back;
        ASSERT_OK(router_cat_parse(router_cat_name((router_cat_t)c), &back));
        ASSERT_EQ(back, c);
    }
    router_cat_t x;
    ASSERT_EQ(router_cat_parse("bogus", &x), -EINVAL);
}

/* What a shell expands before the command sees its words, and what it
 * leaves alone. */
TEST(router_expands_tells_expanded_words_from_literal_ones)
{
    static const char *const yes[] = {
        "rm -rf $V", "cp \"$S\" bk/", "cp a bk/$(echo b)", "rm *.tmp",
        "rm a?", "rm [ab]", "mkdir -p ~/x", "cp a ~", "X=~/y cp a b",
        "echo `date`", "mkdir d{1,2}", "touch f{1..3}", "cp a:~/b c",
        "echo \"${X}\"", "rm \"a\"$b", "cp a >~/x"};
    static const char *const no[] = {
        "rm -rf victim", "cp 'a$b' c", "rm 'g*.txt'", "rm \\*.tmp",
        "echo \"a*b\"", "echo a~b", "touch {}", "echo '`x`'", "rm \"a\\$b\"",
        "{ cp a b; }", ""};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        printf("yes: %s\n", yes[i]);
        ASSERT_TRUE(router_expands(yes[i]));
    }
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        printf("no: %s\n", no[i]);
        ASSERT_FALSE(router_expands(no[i]));
    }
}

/* The lines of a heredoc are data the command reads, not commands: a file
 * written with `cat > f <<'EOF'` is not refused for the `git commit`, `top`
 * or `rm -rf` in it.  A shell's heredoc is its script, and is judged. */
TEST(router_heredoc_bodies_are_data_not_commands)
{
    router_t *r = mk(NULL);
    static const char *const data[] = {
        "cat > release.sh <<'EOF'\ngit add -A\ngit commit\nEOF\necho written",
        "cat > doc.txt <<EOF\ntop\nEOF",
        "cat > clean.sh <<'EOF'\n#!/bin/sh\nrm -rf \"$HOME\"\nEOF",
        "cat <<-EOF > x\n\tvim\n\tEOF\necho ok",
        "cat <<A <<\"B\" > x\nless\nA\nrm -rf /\nB\necho ok",
        "FOO=1 tee -a notes.md <<'EOF'\nvim\nEOF",
        "if true; then cat > f <<'EOF'\ngit commit\nEOF\nfi",
        "x=$(cat <<EOF\ngit commit\nEOF\n)",

        "cat > n.txt <<'E O'\ntop\nE O\n",
        NULL};
    for (const char *const *p = data; *p; p++) {
        router_result_t res;
        ASSERT_OK(router_classify(r, *p, &res));
        printf("%s -> %s %d\n", *p, router_cat_name(res.category),
               (int)res.danger);
        ASSERT_TRUE(res.category != ROUTER_INTERACTIVE);
        ASSERT_EQ(res.danger, ROUTER_SAFE);
        router_result_free(&res);
    }
    /* What follows the body is commands again. */
    ASSERT_CAT(r, "cat > f <<'EOF'\ntext\nEOF\ngit commit", ROUTER_INTERACTIVE);
    router_result_t res;
    ASSERT_OK(router_classify(r, "cat > f <<'EOF'\ntext\nEOF\nrm -rf /", &res));
    ASSERT_EQ(res.danger, ROUTER_DANGER_ASK);
    router_result_free(&res);
    /* Not heredocs: quoted, a here-string, arithmetic, a comment. */
    ASSERT_CAT(r, "echo \"<<EOF\"\ngit commit", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "grep x <<< 'a'\ngit commit", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "echo $((1<<2))\ngit commit", ROUTER_INTERACTIVE);
    ASSERT_CAT(r, "echo x # <<EOF\ngit commit", ROUTER_INTERACTIVE);
    /* Lines any command but cat or tee reads are judged as commands: a
     * shell's script, however it is started or fed (a safety check that
     * errs keeps them).  So are lines after text this scan is unsure of
     * ($'...' quoting), and after `<<` that is no heredoc (${...},
     * $[...]), or one that never ends. */
    static const char *const code[] = {
        "bash <<EOF\nrm -rf /\nEOF",
        "sudo sh -s <<'EOF'\nrm -rf /\nEOF",
        "X=1 /bin/bash <<-EOF\n\trm -rf /\n\tEOF",
        "if true; then bash <<'EOF'\nrm -rf /\nEOF\nfi",
        "while read l; do sh <<EOF\nrm -rf /\nEOF\ndone",
        "sudo -u root bash <<'EOF'\nrm -rf /\nEOF",
        "env -i bash <<EOF\nrm -rf /\nEOF",
        "timeout 5 bash <<EOF\nrm -rf /\nEOF",
        "! bash <<EOF\nrm -rf /\nEOF",
        "FOO=${HOME} bash <<'EOF'\nrm -rf /\nEOF",
        "FOO=${HOME} cat <<'EOF'\nrm -rf /\nEOF",
        "cat <<'EOF' | bash\nrm -rf /\nEOF",
        "cat <<'EOF' > f; $(cat f)\nrm -rf /\nEOF",
        "cat > f <<'EOF' && sh f\nrm -rf /\nEOF",
        "cat > f <<'EOF'; bash f\nrm -rf /\nEOF",
        "<<'EOF' bash\nrm -rf /\nEOF",
        "ssh host <<EOF\nrm -rf /\nEOF",
        "echo ${x:-<<EOF}\nrm -rf /\nEOF",
        "echo $[1<<2]\nrm -rf /",
        "echo $'\\' <<X ' #'\nrm -rf /\nX",
        "cat <<EOF\nrm -rf /",
        NULL};
    for (const char *const *p = code; *p; p++) {
        ASSERT_OK(router_classify(r, *p, &res));
        printf("%s -> %d\n", *p, (int)res.danger);
        ASSERT_EQ(res.danger, ROUTER_DANGER_ASK);
        router_result_free(&res);
    }
    router_free(r);
}

/* The danger verdict of a command line, in ctx (may be NULL). */
static router_danger_t danger_of(router_t *r, const char *cmd,
                                 const router_ctx_t *ctx)
{
    router_result_t res;
    ASSERT_OK(router_classify_ctx(r, cmd, ctx, &res));
    router_danger_t d = res.danger;
    router_result_free(&res);
    return d;
}

/* The same for an argv run directly. */
static router_danger_t argv_danger_of(router_t *r, const char *const *argv,
                                      const router_ctx_t *ctx)
{
    router_result_t res;
    ASSERT_OK(router_classify_argv_ctx(r, argv, ctx, &res));
    router_danger_t d = res.danger;
    router_result_free(&res);
    return d;
}

#define ASSERT_DANGER(r, cmd, ctx, want)                                    \
    do {                                                                    \
        router_danger_t got_ = danger_of((r), (cmd), (ctx));                \
        if (got_ != (want))                                                 \
            test_fail(__FILE__, __LINE__, "%s: danger %d, want %d", (cmd),  \
                      (int)got_, (int)(want));                              \
    } while (0)

/* Each argv in a list of them ends at a NULL; the list at an empty one. */
#define ARGV_MAX 8
static void assert_argv_danger(router_t *r, const char *const (*list)[ARGV_MAX],
                               const router_ctx_t *ctx, router_danger_t want,
                               int line)
{
    for (size_t i = 0; list[i][0]; i++) {
        router_danger_t got = argv_danger_of(r, list[i], ctx);
        if (got != want)
            test_fail(__FILE__, line, "argv %zu (%s %s ...): danger %d, "
                      "want %d", i, list[i][0], list[i][1] ? list[i][1] : "",
                      (int)got, (int)want);
    }
}

/* The command word is judged by its basename: a path to rm or git is rm
 * or git, for the built-in table and the policy alike. */
TEST(router_danger_sees_the_command_word_by_its_basename)
{
    router_t *r = mk(write_policy("{\"forbid\": [\"^npm publish\"]}"));
    static const char *const ask[] = {
        "/bin/rm -rf /", "/bin/rm -rf ~", "/usr/bin/rm -rf \"$HOME\"",
        "/usr/bin/git push --force", "/usr/bin/git reset --hard",
        "/sbin/reboot", "./rm -rf /", "../bin/git clean -fdx",
        "sudo /usr/bin/git -C x reset --hard", "env X=1 /sbin/mkfs.ext4 d",
        NULL};
    static const char *const forbid[] = {
        "/usr/bin/npm publish", "sudo /usr/local/bin/npm publish --tag x",
        "./node_modules/.bin/npm publish", NULL};
    static const char *const safe[] = {
        "/bin/rm -rf build", "/usr/bin/git push", "/usr/bin/git reset HEAD~1",
        "echo /bin/rm -rf /", "/usr/bin/npm install", "/bin/echo npm publish",
        "/usr/bin/git log --oneline", NULL};
    for (const char *const *p = ask; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_DANGER_ASK);
    for (const char *const *p = forbid; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_DANGER_FORBID);
    for (const char *const *p = safe; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_SAFE);

    static const char *const argv_ask[][ARGV_MAX] = {
        {"/bin/rm", "-rf", "/"}, {"/usr/bin/git", "push", "--force"},
        {"/usr/bin/git", "reset", "--hard"}, {"/sbin/reboot"},
        {"sudo", "/usr/bin/rm", "-rf", "$HOME"}, {NULL}};
    static const char *const argv_forbid[][ARGV_MAX] = {
        {"/usr/bin/npm", "publish"}, {"env", "/usr/bin/npm", "publish"},
        {NULL}};
    static const char *const argv_safe[][ARGV_MAX] = {
        {"/bin/rm", "-rf", "build"}, {"/usr/bin/git", "status"},
        {"/bin/echo", "rm", "-rf", "/"}, {"/usr/bin/npm", "install"},
        {NULL}};
    assert_argv_danger(r, argv_ask, NULL, ROUTER_DANGER_ASK, __LINE__);
    assert_argv_danger(r, argv_forbid, NULL, ROUTER_DANGER_FORBID, __LINE__);
    assert_argv_danger(r, argv_safe, NULL, ROUTER_SAFE, __LINE__);
    router_free(r);
}

/* What runs inside a group, a subshell, a compound command's body, a
 * substitution, a shell's -c string or eval's words is judged as a
 * command; the same text quoted as data is not. */
TEST(router_danger_reads_nested_and_compound_commands)
{
    router_t *r = mk(write_policy("{\"forbid\": [\"^npm publish\"]}"));
    static const char *const ask[] = {
        "(rm -rf /)", "{ rm -rf /; }", "(cd repo && git reset --hard)",
        "( cd repo; git push -f )", "make && (cd x; (git clean -fd))",
        "if [ -d .git ]; then git reset --hard; fi",
        "if true; then :; else git reset --hard; fi",
        "if false; then :; elif git reset --hard; then :; fi",
        "if ! git reset --hard; then :; fi",
        "for p in a b; do rm -rf /; done", "while true; do reboot; done",
        "until false; do git push --force; done",
        "case $x in y) git reset --hard;; esac",
        "case $x in\n  y) rm -rf ~ ;;\nesac",
        "case $x in (y) git reset --hard;; esac",
        "(case $x in y) git reset --hard;; esac)",
        "f() { rm -rf /; }; f", "time { git reset --hard; }",
        "echo $(rm -rf /)", "x=`git reset --hard`",
        "echo \"$(git reset --hard)\"", "echo \"`rm -rf /`\"",
        "diff <(rm -rf /) x", "echo ${x:-$(git reset --hard)}",
        "bash -c 'rm -rf /'", "sh -c \"git reset --hard\"",
        "sudo bash -lc 'rm -rf ~'", "bash -o pipefail -c 'make; rm -rf .'",
        "bash -c \"bash -c 'rm -rf /'\"", "eval 'rm -rf /'",
        "eval git reset --hard", "eval \"$(echo x)\"; eval 'git push -f'",
        "bash -c 'cat > f <<EOF\nx\nEOF\nrm -rf /'",
        NULL};
    static const char *const cont[] = {
        "git reset \\\n --hard", "git reset \\\n--hard", "rm -rf \\\n /",
        "git \\\n  push \\\n  --force", "git reset \"--ha\\\nrd\"",
        "sudo \\\n rm -rf /", NULL};
    static const char *const forbid[] = {
        "(cd pkg && npm publish)", "{ npm publish; }",
        "for p in a; do npm publish; done",
        "if true; then npm publish; fi", "npm \\\n publish",
        "bash -c 'npm publish'", "x=$(npm publish)", NULL};
    static const char *const safe[] = {
        "echo rm -rf /", "grep 'git push --force' notes.txt",
        "echo '(rm -rf /)'", "echo \"{ rm -rf /; }\"",
        "git commit -m 'if x; then git reset --hard; fi'",
        "git commit -m \"run (rm -rf /) never\"",
        "echo 'bash -c \"rm -rf /\"'", "echo 'eval rm -rf /'",
        "echo '$(rm -rf /)'", "echo \\$\\(rm -rf /\\)",
        "printf '%s\\n' '`git reset --hard`'", "bash -c 'echo rm -rf /'",
        "grep -r 'npm publish' .", "(cd repo && make)",
        "{ echo a; echo b; } > f", "if [ -d x ]; then echo ok; fi",
        "for f in *.c; do gcc -c \"$f\"; done", "echo \\\n rm -rf /",
        "echo 'a) rm -rf /'", "find . -name '*.o' -exec rm {} \\;",
        "echo $((1 + (2 * 3)))", "echo ${HOME}/x", "git log @{u}..",
        "x() { echo hi; }; x", "echo a # (rm -rf /)",
        "case $x in y) echo rm -rf /;; esac", "npm install",
        "git commit -m \"$(cat <<'EOF'\nDon't git reset --hard (or rm -rf /)"
        "\nEOF\n)\"",
        "files=(a b) && echo ${files[@]}", "(cd x && make) > log 2>&1",
        "[[ $x =~ ^(a|b)$ ]] && rm -rf build", "eval \"$(ssh-agent -s)\"",
        NULL};
    for (const char *const *p = ask; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_DANGER_ASK);
    for (const char *const *p = cont; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_DANGER_ASK);
    for (const char *const *p = forbid; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_DANGER_FORBID);
    for (const char *const *p = safe; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_SAFE);

    /* argv mode: no shell syntax in the words, but a shell's -c string is
     * shell text, judged with all of the above. */
    static const char *const argv_ask[][ARGV_MAX] = {
        {"bash", "-c", "rm -rf /"},
        {"sh", "-c", "(cd x && git reset --hard)"},
        {"sudo", "bash", "-lc", "if true; then rm -rf ~; fi"},
        {"sh", "-c", "bash -c 'git push --force'"},
        {"/bin/sh", "-c", "git reset \\\n --hard"}, {NULL}};
    static const char *const argv_forbid[][ARGV_MAX] = {
        {"sh", "-c", "(cd pkg && npm publish)"},
        {"bash", "-c", "for p in a; do npm publish; done"}, {NULL}};
    static const char *const argv_safe[][ARGV_MAX] = {
        {"echo", "(rm -rf /)"}, {"git", "commit", "-m", "$(rm -rf /)"},
        {"grep", "git push --force", "notes.txt"},
        {"bash", "-c", "echo rm -rf /"}, {"echo", "npm", "publish"},
        {NULL}};
    assert_argv_danger(r, argv_ask, NULL, ROUTER_DANGER_ASK, __LINE__);
    assert_argv_danger(r, argv_forbid, NULL, ROUTER_DANGER_FORBID, __LINE__);
    assert_argv_danger(r, argv_safe, NULL, ROUTER_SAFE, __LINE__);

    /* What a line continuation joins is one word, not a newline in it. */
    router_result_t res;
    ASSERT_OK(router_classify(r, "cp a \\\n b", &res));
    ASSERT_EQ(res.nsegs, 1);
    ASSERT_EQ(res.segs[0].argc, 3);
    ASSERT_STR(res.segs[0].argv[2], "b");
    router_result_free(&res);
    ASSERT_OK(router_classify(r, "echo \"a\\\nb\" 'c\\\nd'", &res));
    ASSERT_STR(res.segs[0].argv[1], "ab");
    ASSERT_STR(res.segs[0].argv[2], "c\\\nd"); /* literal in '...' */
    router_result_free(&res);
    router_free(r);
}

/* What a review of the nested reading found (find's -exec and ssh's
 * remote command are read too).  A heredoc's body inside a
 * substitution is no shell text: `git commit -m "$(cat <<'EOF'` with a
 * `1)` in the message ended the `$(` there, and the rest of the message
 * was read as commands.  A body fed to a program that reads data (git,
 * python, jq...) is data; an unquoted one's substitutions run, and are
 * judged.  `${...}` is a parameter, `command -v` runs nothing.  xargs,
 * setsid, chroot, strace run the command after them; su -c and fish -c
 * run a shell string.  An allow clears its own command's verdict only:
 * an allowed `git push --force-with-lease` on the line cleared the
 * `rm -rf /` after it. */
TEST(router_danger_reads_heredocs_and_wrappers_as_they_run)
{
    router_t *r = mk(write_policy(
        "{\"allow\": [\"^git push --force-with-lease\"]}"));
    static const char *const safe[] = {
        "git commit -m \"$(cat <<'EOF'\nhooks: stop resetting\n\nChanges:\n"
        "1) replace `git reset --hard` with `git stash`\n2) add tests\nEOF\n"
        ")\"",
        "gh pr create --title x --body \"$(cat <<'EOF'\nFixes #12 :)\n- "
        "`git push --force` is now refused\nEOF\n)\"",
        "git commit -m \"$(cat <<'EOF'\nfix: don't reboot the machine (it's "
        "a test)\nDon't run `rm -rf /`\nEOF\n)\"",
        "git commit -F - <<'EOF'\nhooks: no longer run `git reset --hard`\n"
        "\ngit reset --hard is no longer run.\nEOF",
        "python3 - <<'EOF'\nprint(\"reboot\")\nEOF",
        "jq . <<EOF\n{\"cmd\": \"rm -rf /\"}\nEOF",
        "echo ${reboot}", "echo ${halt:-0}", "command -v reboot",
        "command -V shutdown", "if command -v halt >/dev/null; then :; fi",
        "git push --force-with-lease", "xargs grep -l TODO",
        "find . -name '*.o' | xargs rm -f",
        "find . -type d -name __pycache__ -exec rm -rf {} +",
        "find . -exec echo rm -rf / \\;", "find build -type f -exec rm {} +",
        "ssh host ls -la", "ssh -i key u@h 'cd app && git pull'", "ssh host",
        NULL};
    static const char *const ask[] = {
        "cat > f <<EOF\nnow: $(rm -rf /)\nEOF",
        "git commit -F - <<EOF\nmsg `git reset --hard`\nEOF",
        "bash <<'EOF'\nrm -rf /\nEOF",
        "echo ${x:-$(git reset --hard)}",
        "xargs rm -rf /", "setsid rm -rf /", "chroot /mnt rm -rf /",
        "strace -o log rm -rf /", "exec -a x rm -rf /",
        "su -c 'rm -rf /'", "su root -c 'git reset --hard'",
        "su --command='rm -rf /'", "fish -c 'rm -rf /'",
        "git push --force-with-lease && rm -rf /",
        "git push --force-with-lease; git reset --hard",
        "git push --force-with-lease origin $(rm -rf /)",
        "find / -exec rm -rf {} +", "find ~ -execdir rm -rf {} \\;",
        "find . -exec rm -rf {} +", "ssh host rm -rf /",
        "ssh host 'rm -rf ~'", "ssh -p 22 host git push --force", NULL};
    for (const char *const *p = safe; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_SAFE);
    for (const char *const *p = ask; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_DANGER_ASK);
    /* An unquoted body's substitutions stand where they were, the rest
     * blanked: no segment is longer than the line (a fuzzed input, whose
     * unterminated backquote came out with a newline more). */
    static const char odd[] = "x=$(cat <<A ,8\"G\"\n`\nA\nb'\367\001";
    router_result_t res;
    ASSERT_OK(router_classify(r, odd, &res));
    for (size_t i = 0; i < res.nsegs; i++)
        ASSERT_TRUE(strlen(res.segs[i].text) <= strlen(odd));
    router_result_free(&res);
    router_free(r);
}

/* inner in d subshells, `((( inner )))`, into b (NUL-terminated). */
static void nest_in_parens(buf_t *b, int d, const char *inner)
{
    buf_reset(b);
    for (int i = 0; i < d; i++)
        buf_append_str(b, "(");
    buf_append_str(b, inner);
    for (int i = 0; i < d; i++)
        buf_append_str(b, ")");
    buf_append(b, "", 0);
}

/* Nested text is read ROUTER_MAX_DANGER_DEPTH deep; deeper, it is asked
 * about rather than passed unread. */
TEST(router_danger_depth_at_its_edge)
{
    router_t *r = mk(NULL);
    buf_t b = BUF_INIT;
    for (int d = ROUTER_MAX_DANGER_DEPTH; d <= ROUTER_MAX_DANGER_DEPTH + 1;
         d++) {
        nest_in_parens(&b, d, "make");
        router_result_t res;
        ASSERT_OK(router_classify(r, b.p, &res));
        if (d == ROUTER_MAX_DANGER_DEPTH) {
            ASSERT_EQ(res.danger, ROUTER_SAFE);
        } else {
            ASSERT_EQ(res.danger, ROUTER_DANGER_ASK);
            ASSERT_STR(res.danger_id, "too-deep");
        }
        router_result_free(&res);
    }
    /* The deepest text read is still judged. */
    nest_in_parens(&b, ROUTER_MAX_DANGER_DEPTH, "rm -rf /");
    router_result_t res;
    ASSERT_OK(router_classify(r, b.p, &res));
    ASSERT_STR(res.danger_id, "rm-root");
    router_result_free(&res);
    buf_free(&b);
    router_free(r);
}

/* `rein run -- rm -rf ~` reaches rein as the home's path: the home is
 * known by its value, the command's HOME's and the router's own (its
 * creator's $HOME); paths below it are not the home. */
TEST(router_danger_knows_the_home_by_its_value)
{
    ASSERT_OK(setenv("HOME", "/home/alice/", 1));
    router_t *r = mk(NULL);
    static const char *const ask[] = {
        "rm -rf /home/alice", "rm -rf /home/alice/", "rm -rf /home/alice//",
        "rm -rf /home/alice/*", "sudo rm -r -f /home/alice",
        "chmod -R 777 /home/alice", "find /home/alice -name x -delete",
        "(rm -rf /home/alice)", "bash -c 'rm -rf /home/alice/'", NULL};
    static const char *const safe[] = {
        "rm -rf /home/alice/build", "rm -rf /home/alice/src/",
        "rm -rf /home/alicex", "rm -rf home/alice", "ls /home/alice",
        "rm /home/alice", "echo rm -rf /home/alice", "rm -rf /home/bob",
        NULL};
    for (const char *const *p = ask; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_DANGER_ASK);
    for (const char *const *p = safe; *p; p++)
        ASSERT_DANGER(r, *p, NULL, ROUTER_SAFE);

    /* The command's own HOME, from its context, is known too. */
    static const char *const bob[] = {"PATH=/bin", "HOME=/home/bob", NULL};
    router_ctx_t ctx = {.env = bob};
    ASSERT_DANGER(r, "rm -rf /home/bob/", &ctx, ROUTER_DANGER_ASK);
    ASSERT_DANGER(r, "rm -rf /home/alice", &ctx, ROUTER_DANGER_ASK);
    ASSERT_DANGER(r, "rm -rf /home/bob/x", &ctx, ROUTER_SAFE);
    ASSERT_OK(setenv("HOME", "/srv/carol", 1));
    router_ctx_t inherit = {.inherit_env = true};
    ASSERT_DANGER(r, "rm -rf /srv/carol", &inherit, ROUTER_DANGER_ASK);
    ASSERT_DANGER(r, "rm -rf /srv/carol", NULL, ROUTER_SAFE);

    static const char *const argv_ask[][ARGV_MAX] = {
        {"rm", "-rf", "/home/alice"}, {"rm", "-rf", "/home/alice/"},
        {"sudo", "/bin/rm", "-fr", "/home/alice"},
        {"chown", "-R", "x", "/home/alice"}, {NULL}};
    static const char *const argv_safe[][ARGV_MAX] = {
        {"rm", "-rf", "/home/alice/build"}, {"ls", "/home/alice"},
        {"rm", "-rf", "/home/alicex"}, {NULL}};
    assert_argv_danger(r, argv_ask, NULL, ROUTER_DANGER_ASK, __LINE__);
    assert_argv_danger(r, argv_safe, NULL, ROUTER_SAFE, __LINE__);
    router_free(r);

    /* A home that is `/` or not absolute adds nothing (and no harm). */
    ASSERT_OK(setenv("HOME", "/", 1));
    r = mk(NULL);
    ASSERT_DANGER(r, "rm -rf /", NULL, ROUTER_DANGER_ASK);
    ASSERT_DANGER(r, "rm -rf /tmp/x", NULL, ROUTER_SAFE);
    router_free(r);
    ASSERT_OK(setenv("HOME", "alice", 1));
    r = mk(NULL);
    ASSERT_DANGER(r, "rm -rf alice", NULL, ROUTER_SAFE);
    router_free(r);
    ASSERT_OK(unsetenv("HOME"));
    r = mk(NULL);
    ASSERT_DANGER(r, "rm -rf ~", NULL, ROUTER_DANGER_ASK);
    router_free(r);
}
