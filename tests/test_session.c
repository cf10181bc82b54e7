/*
 * test_session.c — the session store of unified exec: the LRU rule at its
 * edges, awaiting-input detection against real processes (read, select,
 * poll, epoll on a PTY and on a pipe; sleep and a foreign pipe never),
 * output delivered once (a split UTF-8 character held back, not mangled)
 * with its raw bytes and the newlines before and in it (also past the
 * head+tail cap),
 * waits woken by a match, a deadline and an exit, pruning with small caps.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "exec/session.h"
#include "harness.h"
#include "supervise/sup.h"

/* The bound of every wait here. */
#define T_WAIT_MS 10000
/* How long a negative is watched to stay negative. */
#define T_NEGATIVE_MS 800

static rein_sup_t *open_sup(void)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/state", test_tmpdir());
    rein_sup_opts_t so = {.state_dir = dir};
    rein_sup_t *s;
    ASSERT_OK(rein_sup_open(&so, &s));
    return s;
}

static session_store_t *open_store(rein_sup_t *sup, size_t max, size_t prot)
{
    session_store_opts_t o = {.sup = sup, .max_live = max,
                              .protected_n = prot};
    session_store_t *st;
    ASSERT_OK(session_store_new(&o, &st));
    return st;
}

static session_t *spawn(session_store_t *st, const char *cmd, bool tty)
{
    const char *argv[] = {"/bin/bash", "--noprofile", "--norc", "-c", cmd,
                          NULL};
    session_spawn_opts_t o = {.argv = argv, .command = cmd,
                              .cwd = test_tmpdir(), .tty = tty};
    session_t *s;
    ASSERT_OK(session_spawn(st, &o, &s));
    return s;
}

static void pump(rein_sup_t *sup, int ms)
{
    rein_sup_run_once(sup, ms);
}

/* Runs the loop until check_input says yes, or fails after T_WAIT_MS. */
static void expect_awaiting(rein_sup_t *sup, session_t *s, const char *why)
{
    uint64_t t0 = test_now_ms();
    while (!session_check_input(s, NULL)) {
        if (test_now_ms() - t0 > T_WAIT_MS)
            test_fail(__FILE__, __LINE__, "never awaiting input: %s", why);
        pump(sup, 20);
    }
}

/* Watches for T_NEGATIVE_MS: never awaiting input. */
static void expect_not_awaiting(rein_sup_t *sup, session_t *s,
                                const char *why)
{
    uint64_t t0 = test_now_ms();
    while (test_now_ms() - t0 < T_NEGATIVE_MS) {
        if (session_check_input(s, NULL))
            test_fail(__FILE__, __LINE__, "taken for awaiting input: %s",
                      why);
        pump(sup, 20);
    }
}

TEST(session_lru_victim_rules_at_the_edges)
{
    session_lru_entry_t v[5] = {{5, false, false}, {1, false, false},
                                {4, true, false}, {2, false, false},
                                {3, false, false}};
    /* No more entries than protected: none may go. */
    ASSERT_EQ(session_lru_victim(v, 2, 2), -1);
    ASSERT_EQ(session_lru_victim(v, 0, 0), -1);
    /* Exited first: v[2] (used at 4) goes before the older live ones,
     * as long as it is not protected. */
    ASSERT_EQ(session_lru_victim(v, 5, 1), 2);
    /* With 2 protected (5 and 4), the exited one is protected: the least
     * recently used live one goes. */
    ASSERT_EQ(session_lru_victim(v, 5, 2), 1);
    /* protected_n = n - 1: only the oldest may go. */
    ASSERT_EQ(session_lru_victim(v, 5, 4), 1);
    ASSERT_EQ(session_lru_victim(v, 5, 5), -1);
    /* Nothing protected: the exited one still goes first. */
    ASSERT_EQ(session_lru_victim(v, 5, 0), 2);
    session_lru_entry_t all_live[3] = {{7, false, false}, {9, false, false},
                                       {8, false, false}};
    ASSERT_EQ(session_lru_victim(all_live, 3, 0), 0);
    ASSERT_EQ(session_lru_victim(all_live, 3, 2), 0);
    /* In use (a call in flight on it): never the victim, exited or the
     * oldest, yet it still counts among the most recently used. */
    v[2].in_use = true;
    ASSERT_EQ(session_lru_victim(v, 5, 0), 1);
    v[1].in_use = true;
    ASSERT_EQ(session_lru_victim(v, 5, 0), 3);
    ASSERT_EQ(session_lru_victim(v, 5, 3), 3); /* 5, 4 and 3 protected */
    ASSERT_EQ(session_lru_victim(v, 5, 4), -1); /* only 1 left: in use */
    for (size_t i = 0; i < 5; i++)
        v[i].in_use = true;
    ASSERT_EQ(session_lru_victim(v, 5, 0), -1);
}

/* The pruning warning comes as far below any cap as below the default,
 * and never later than one session before it. */
TEST(session_warns_of_pruning_below_its_own_cap)
{
    rein_sup_t *sup = open_sup();
    size_t caps[] = {0, 8, SESSION_MAX_LIVE - SESSION_WARN_LIVE + 1,
                     SESSION_MAX_LIVE - SESSION_WARN_LIVE, 1};
    size_t max[] = {SESSION_MAX_LIVE, 8, caps[2], caps[3], 1};
    size_t warn[] = {SESSION_WARN_LIVE, 8 - (SESSION_MAX_LIVE -
                                             SESSION_WARN_LIVE), 1, 1, 1};
    for (size_t i = 0; i < sizeof caps / sizeof *caps; i++) {
        session_store_t *st = open_store(sup, caps[i], 0);
        ASSERT_EQ(session_max_live(st), max[i]);
        ASSERT_EQ(session_warn_at(st), warn[i]);
        ASSERT_EQ(session_max_open(st), 2 * max[i]);
        session_store_free(st);
    }
    /* SESSION_MAX_LIVE is also the most a store may be opened with. */
    session_store_t *st;
    session_store_opts_t o = {.sup = sup, .max_live = SESSION_MAX_LIVE + 1};
    ASSERT_EQ(session_store_new(&o, &st), -EINVAL);
    o.max_live = SESSION_MAX_LIVE;
    ASSERT_OK(session_store_new(&o, &st));
    ASSERT_EQ(session_max_live(st), SESSION_MAX_LIVE);
    session_store_free(st);
    rein_sup_close(sup);
}

TEST(session_awaiting_input_tty_and_pipe)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    static const char *const readers[] = {
        "read x",
        "python3 -c 'import select,sys; select.select([sys.stdin],[],[])'",
        "python3 -c 'import select; p=select.poll(); "
        "p.register(0, select.POLLIN); p.poll()'",
        "python3 -c 'import select; e=select.epoll(); "
        "e.register(0, select.EPOLLIN); e.poll()'",
    };
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++)
        for (int tty = 0; tty < 2; tty++) {
            session_t *s = spawn(st, readers[i], tty);
            expect_awaiting(sup, s, readers[i]);
            rein_sup_cancel(sup, session_id(s), SIGKILL, 0);
        }
    session_store_free(st);
    rein_sup_close(sup);
}

TEST(session_sleep_and_foreign_pipes_are_not_awaiting_input)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    session_t *a = spawn(st, "sleep 30", false);
    session_t *b = spawn(st, "sleep 30", true);
    session_t *c = spawn(st, "sleep 30 | cat", false); /* cat reads sleep */
    session_t *d = spawn(st, "printf 'Password: '; sleep 30", true);
    expect_not_awaiting(sup, a, "sleep on pipes");
    expect_not_awaiting(sup, b, "sleep on a tty");
    expect_not_awaiting(sup, c, "cat reading another pipe");
    expect_not_awaiting(sup, d, "a prompt-looking line, then sleep");
    /* A closed stdin can never be read. */
    session_t *e = spawn(st, "read x", false);
    expect_awaiting(sup, e, "read");
    ASSERT_OK(rein_sup_close_stdin(sup, session_id(e)));
    ASSERT_FALSE(session_check_input(e, NULL));
    session_store_free(st);
    rein_sup_close(sup);
}

TEST(session_prompt_is_the_partial_line)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    session_t *s = spawn(st, "printf 'one\\n\\033[1mName:\\033[0m '; read x",
                         true);
    expect_awaiting(sup, s, "read after a prompt");
    buf_t p = BUF_INIT;
    ASSERT_TRUE(session_check_input(s, &p));
    ASSERT_STR(p.p, "Name: ");
    buf_free(&p);
    session_store_free(st);
    rein_sup_close(sup);
}

/* A full-screen program's screen is modelled from the moment it switches
 * to the alternate screen: its first full drawing stays on the screen
 * view however much it updates the screen after it (more than the
 * SESSION_SCREEN_REPLAY_MAX bytes a screen made later would replay). */
TEST(session_screen_of_a_full_screen_program_starts_at_its_switch)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    session_t *s = spawn(
        st,
        "printf 'before\\n'; python3 -c \"import sys; w = sys.stdout.write; "
        "w('\\033[?1049h\\033[H\\033[2JHEADER'); "
        "[w('\\033[5;3H%08d' % i) for i in range(200000)]\"; read x",
        true);
    ASSERT_FALSE(session_alt_screen(s));
    expect_awaiting(sup, s, "read after the drawing");
    ASSERT_TRUE(session_alt_screen(s));
    buf_t out = BUF_INIT, raw = BUF_INIT, scr = BUF_INIT;
    session_chunk_t ch;
    ASSERT_OK(session_take_output(s, &out, &raw, &ch));
    ASSERT_TRUE(ch.bytes > 2 * (uint64_t)SESSION_SCREEN_REPLAY_MAX);
    ASSERT_OK(session_screen(s, &scr));
    ASSERT_STR(scr.p, "HEADER\n\n\n\n  00199999\n");
    buf_free(&out);
    buf_free(&raw);
    buf_free(&scr);
    /* A pipe session has no screen. */
    session_t *p = spawn(st, "printf '\\033[?1049h'; read x", false);
    expect_awaiting(sup, p, "read on a pipe");
    ASSERT_FALSE(session_alt_screen(p));
    session_store_free(st);
    rein_sup_close(sup);
}

struct woke {
    int n;
    session_wake_t why;
};

static void on_woke(session_t *s, session_wake_t why, void *data)
{
    (void)s;
    struct woke *w = data;
    w->n++;
    w->why = why;
}

static void wait_woken(rein_sup_t *sup, struct woke *w)
{
    uint64_t t0 = test_now_ms();
    while (!w->n) {
        ASSERT_TRUE(test_now_ms() - t0 < T_WAIT_MS);
        pump(sup, 50);
    }
}

/* An event loop at rest (termhelper loop: epoll on the terminal, an
 * eventfd and a self-pipe, a second thread asleep) can only be woken by
 * input: a wait that detects input ends at once, though it prints no
 * prompt.  With a timer of its own pending (a timerfd in the set) it may
 * be working on a reply: the wait goes on, here until the timer ends it. */
TEST(session_event_loop_at_rest_wakes_a_wait_on_input)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "exec '%s/termhelper' loop", test_bin_dir());
    session_t *s = spawn(st, cmd, true);
    struct woke w = {0, 0};
    uint64_t t0 = test_now_ms();
    ASSERT_OK(session_wait(s, &(session_wait_opts_t){.timeout_ms = T_WAIT_MS,
                                                     .detect_input = true},
                           on_woke, &w));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_INPUT);
    ASSERT_TRUE(test_now_ms() - t0 < T_WAIT_MS / 2);
    rein_sup_cancel(sup, session_id(s), SIGKILL, 0);

    snprintf(cmd, sizeof cmd, "exec '%s/termhelper' loop timer %d",
             test_bin_dir(), 2 * T_NEGATIVE_MS);
    /* the clock starts before the spawn, as the helper's timer does: a
     * slow spawn (valgrind) took from the time measured */
    t0 = test_now_ms();
    s = spawn(st, cmd, true);
    w.n = 0;
    ASSERT_OK(session_wait(s, &(session_wait_opts_t){.timeout_ms = T_WAIT_MS,
                                                     .detect_input = true},
                           on_woke, &w));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_EXIT);
    ASSERT_TRUE(test_now_ms() - t0 >= 2 * T_NEGATIVE_MS);
    buf_t out = BUF_INIT;
    session_chunk_t c;
    ASSERT_OK(session_take_output(s, &out, NULL, &c));
    ASSERT_CONTAINS(out.p, "timer");
    buf_free(&out);
    session_store_free(st);
    rein_sup_close(sup);
}

TEST(session_output_once_and_utf8_held_across_polls)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    session_t *s = spawn(st, "cat", false);
    struct woke w = {0, 0};
    session_wait_opts_t wo = {.timeout_ms = T_WAIT_MS, .wait_for = "one"};
    ASSERT_OK(session_wait(s, &wo, on_woke, &w));
    ASSERT_OK(rein_sup_write(sup, session_id(s), "one\n", 4));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_MATCH);
    buf_t out = BUF_INIT, raw = BUF_INIT;
    session_chunk_t c;
    ASSERT_OK(session_take_output(s, &out, &raw, &c));
    ASSERT_STR(out.p, "one\n");
    ASSERT_STR(raw.p, "one\n");
    ASSERT_EQ(c.from, 0);
    ASSERT_EQ(c.bytes, 4);
    ASSERT_EQ(c.head, 4);
    ASSERT_EQ(c.lines_before, 0);
    ASSERT_EQ(c.newlines, 1);
    ASSERT_TRUE(c.ends_line);
    buf_reset(&out);
    buf_reset(&raw);
    ASSERT_OK(session_take_output(s, &out, &raw, &c));
    ASSERT_EQ(out.len, 0); /* nothing repeated */
    ASSERT_EQ(raw.len, 0);
    ASSERT_EQ(c.lines_before, 1);
    ASSERT_EQ(c.newlines, 0);
    /* é split across two writes: held back, then whole. */
    w.n = 0;
    wo.wait_for = "\\xc3";
    ASSERT_EQ(session_wait(s, &(session_wait_opts_t){.timeout_ms = 300},
                           on_woke, &w),
              0);
    ASSERT_OK(rein_sup_write(sup, session_id(s), "a\xc3", 2));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_DEADLINE);
    buf_reset(&out);
    buf_reset(&raw);
    ASSERT_OK(session_take_output(s, &out, &raw, &c));
    ASSERT_STR(out.p, "a");
    ASSERT_STR(raw.p, "a"); /* the held byte is in neither */
    ASSERT_EQ(c.from, 4);
    ASSERT_EQ(c.bytes, 1);
    ASSERT_FALSE(c.ends_line);
    w.n = 0;
    ASSERT_OK(session_wait(s, &(session_wait_opts_t){.timeout_ms = 300},
                           on_woke, &w));
    ASSERT_OK(rein_sup_write(sup, session_id(s), "\xa9", 1));
    wait_woken(sup, &w);
    buf_reset(&out);
    buf_reset(&raw);
    ASSERT_OK(session_take_output(s, &out, &raw, &c));
    ASSERT_STR(out.p, "\xc3\xa9");
    ASSERT_STR(raw.p, "\xc3\xa9");
    ASSERT_EQ(c.from, 5);
    ASSERT_EQ(c.bytes, 2);
    ASSERT_EQ(c.lines_before, 1);
    /* EOF: the exit wakes the waiter, with all output there. */
    w.n = 0;
    ASSERT_OK(session_wait(s, &(session_wait_opts_t){.timeout_ms = T_WAIT_MS},
                           on_woke, &w));
    ASSERT_OK(rein_sup_write(sup, session_id(s), "bye", 3));
    ASSERT_OK(rein_sup_close_stdin(sup, session_id(s)));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_EXIT);
    ASSERT_FALSE(session_running(s));
    buf_reset(&out);
    ASSERT_OK(session_take_output(s, &out, NULL, &c));
    ASSERT_STR(out.p, "bye");
    int code;
    session_exit_info(s, &code, NULL, NULL, NULL);
    ASSERT_EQ(code, 0);
    buf_free(&out);
    buf_free(&raw);
    session_release(s);
    ASSERT_TRUE(session_find(st, session_id(s)) == NULL);
    session_store_free(st);
    rein_sup_close(sup);
}

TEST(session_store_prunes_lru_with_small_caps)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 3, 1);
    session_t *a = spawn(st, "sleep 30", false);
    session_t *b = spawn(st, "sleep 30", false);
    session_t *c = spawn(st, "sleep 30", false);
    int64_t ida = session_id(a), idb = session_id(b);
    ASSERT_EQ(session_count(st), 3);
    session_touch(a); /* a is now the most recent: protected */
    session_t *d = spawn(st, "sleep 30", false);
    ASSERT_EQ(session_count(st), 3);
    int64_t ids[4];
    ASSERT_EQ(session_take_pruned(st, ids, 4), 1);
    ASSERT_EQ(ids[0], idb);
    ASSERT_EQ(session_take_pruned(st, ids, 4), 0);
    ASSERT_TRUE(session_find(st, idb) == NULL);
    ASSERT_TRUE(session_find(st, ida) == a);
    /* The list is most recently used first. */
    ASSERT_TRUE(session_at(st, 0) == d);
    ASSERT_TRUE(session_at(st, 1) == a);
    ASSERT_TRUE(session_at(st, 2) == c);
    ASSERT_TRUE(session_at(st, 3) == NULL);
    /* The pruned one is being ended. */
    uint64_t t0 = test_now_ms();
    rein_run_info_t info;
    while (rein_sup_info(sup, idb, &info) == 0 &&
           info.state != REIN_RUN_EXITED) {
        ASSERT_TRUE(test_now_ms() - t0 < T_WAIT_MS);
        pump(sup, 50);
    }
    /* A session a call waits on is in use: c, now the least recently
     * used, is spared, and d (a is protected) goes instead. */
    struct woke w = {0, 0};
    ASSERT_OK(session_wait(c, &(session_wait_opts_t){.timeout_ms = T_WAIT_MS},
                           on_woke, &w));
    session_touch(a);
    session_t *e = spawn(st, "sleep 30", false);
    ASSERT_EQ(session_take_pruned(st, ids, 4), 1);
    ASSERT_EQ(ids[0], session_id(d));
    ASSERT_TRUE(session_find(st, session_id(c)) == c);
    ASSERT_TRUE(session_find(st, session_id(e)) == e);
    session_wait_cancel(c);
    ASSERT_EQ(w.n, 0);
    ASSERT_EQ(session_id(a) < session_id(d), 1); /* ids grow */
    session_store_free(st);
    rein_sup_close(sup);
}

/* A spawn that fails (a working directory that does not exist) takes no
 * place, so it prunes nothing: the store was full, and every session in
 * it lives on. */
TEST(session_failed_spawn_prunes_nothing)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 2, 1);
    session_t *a = spawn(st, "sleep 30", false);
    session_t *b = spawn(st, "sleep 30", false);
    char nowhere[PATH_MAX];
    snprintf(nowhere, sizeof nowhere, "%s/no/such/dir", test_tmpdir());
    const char *argv[] = {"/bin/true", NULL};
    session_spawn_opts_t o = {.argv = argv, .command = "true",
                              .cwd = nowhere};
    session_t *c = NULL;
    ASSERT_INT(session_spawn(st, &o, &c), <, 0);
    ASSERT_EQ(session_count(st), 2);
    int64_t ids[2];
    ASSERT_EQ(session_take_pruned(st, ids, 2), 0);
    ASSERT_TRUE(session_find(st, session_id(a)) == a);
    ASSERT_TRUE(session_find(st, session_id(b)) == b);
    ASSERT_TRUE(session_running(a) && session_running(b));
    session_store_free(st);
    rein_sup_close(sup);
}

/* A starting session (exec_command's, until its first result) takes its
 * place only when settled: one that exits first prunes nothing, as in
 * Codex, where a command that exits within its yield never touches the
 * store. */
TEST(session_starting_session_prunes_only_once_settled)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 2, 1);
    session_t *a = spawn(st, "sleep 30", false);
    session_t *b = spawn(st, "sleep 30", false);
    int64_t ida = session_id(a);
    const char *argv[] = {"/bin/bash", "--noprofile", "--norc", "-c",
                          "sleep 30", NULL};
    session_spawn_opts_t o = {.argv = argv, .command = "sleep 30",
                              .cwd = test_tmpdir(), .starting = true};
    session_t *quick, *slow;
    int64_t ids[4];
    /* One that is released (its exit reported) without settling. */
    ASSERT_OK(session_spawn(st, &o, &quick));
    ASSERT_EQ(session_take_pruned(st, ids, 4), 0);
    ASSERT_TRUE(session_find(st, ida) == a);
    ASSERT_EQ(session_count(st), 3);
    rein_sup_cancel(sup, session_id(quick), SIGKILL, 0);
    session_release(quick);
    ASSERT_EQ(session_count(st), 2);
    ASSERT_EQ(session_take_pruned(st, ids, 4), 0);
    /* One still running at its first result: now a goes. */
    ASSERT_OK(session_spawn(st, &o, &slow));
    ASSERT_EQ(session_take_pruned(st, ids, 4), 0);
    session_settle(slow);
    ASSERT_EQ(session_take_pruned(st, ids, 4), 1);
    ASSERT_EQ(ids[0], ida);
    ASSERT_EQ(session_count(st), 2);
    ASSERT_TRUE(session_find(st, session_id(b)) == b);
    session_settle(slow); /* a no-op once settled */
    ASSERT_EQ(session_take_pruned(st, ids, 4), 0);
    /* Settling is a use: it never prunes the session being settled, even
     * when others were used since it started. */
    session_t *late;
    ASSERT_OK(session_spawn(st, &o, &late));
    session_touch(b);
    session_touch(slow);
    session_settle(late);
    ASSERT_EQ(session_take_pruned(st, ids, 4), 1);
    ASSERT_EQ(ids[0], session_id(b));
    ASSERT_TRUE(session_find(st, session_id(late)) == late);
    session_store_free(st);
    rein_sup_close(sup);
}

/* A session spawned for exec_command, with its first call in flight. */
static session_t *spawn_waited(session_store_t *st, struct woke *w)
{
    const char *argv[] = {"/bin/bash", "--noprofile", "--norc", "-c",
                          "exec sleep 30", NULL};
    session_spawn_opts_t o = {.argv = argv, .command = "sleep 30",
                              .cwd = test_tmpdir(), .starting = true};
    session_t *s;
    ASSERT_OK(session_spawn(st, &o, &s));
    ASSERT_OK(session_wait(s, &(session_wait_opts_t){.timeout_ms = T_WAIT_MS},
                           on_woke, w));
    return s;
}

/* A call on s returns, s still running, as codex_exec_result has it: its
 * wait ends, then it is settled (and takes the pruned ids). */
static void call_returns(rein_sup_t *sup, session_t *s, struct woke *w)
{
    session_wait_expire(s);
    wait_woken(sup, w);
    ASSERT_EQ(w->why, SESSION_WAKE_DEADLINE);
    ASSERT_TRUE(session_running(s));
    session_settle(s);
}

/* More exec_commands at once than max_live: those past max_live starting
 * are settled from their spawn, with their spawn time as their stamp,
 * while their first call is still in flight.  As the others return and
 * settle, the pruner must not take them (the bug: it took the oldest
 * stamp, and their results then named a session already ended); it takes
 * only a session no call uses, lets the store go over max_live meanwhile,
 * and prunes back as calls return.  At session_max_open a spawn prunes
 * one that may go, or is refused when none may. */
TEST(session_prunes_no_session_whose_call_is_in_flight)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 2, 1);
    ASSERT_EQ(session_max_open(st), 4);
    struct woke w[6];
    memset(w, 0, sizeof w);
    session_t *s[6];
    int64_t ids[8];
    /* s0, s1 start (max_live of them); s2, s3 are settled at spawn. */
    for (int i = 0; i < 4; i++)
        s[i] = spawn_waited(st, &w[i]);
    ASSERT_EQ(session_count(st), 4);
    ASSERT_EQ(session_take_pruned(st, ids, 8), 0);
    /* Open at session_max_open, every one in use: refused, nothing runs
     * and nothing is pruned. */
    const char *argv[] = {"/bin/true", NULL};
    session_spawn_opts_t o = {.argv = argv, .command = "true",
                              .cwd = test_tmpdir(), .starting = true};
    session_t *no = NULL;
    ASSERT_EQ(session_spawn(st, &o, &no), REIN_ESESSIONS_FULL);
    ASSERT_TRUE(no == NULL);
    ASSERT_EQ(session_count(st), 4);
    /* s0's first call returns: 3 held over a max_live of 2, but s2 and
     * s3 (the oldest stamps) are in use and s0 is the one returned. */
    call_returns(sup, s[0], &w[0]);
    ASSERT_EQ(session_take_pruned(st, ids, 8), 0);
    for (int i = 0; i < 4; i++)
        ASSERT_TRUE(session_find(st, session_id(s[i])) == s[i]);
    ASSERT_EQ(session_count(st), 4);
    /* s1's returns: s0, idle and no longer the most recent, goes; the
     * store stays one over while s2 and s3 are in use. */
    call_returns(sup, s[1], &w[1]);
    ASSERT_EQ(session_take_pruned(st, ids, 8), 1);
    ASSERT_EQ(ids[0], session_id(s[0]));
    ASSERT_TRUE(session_find(st, session_id(s[0])) == NULL);
    ASSERT_EQ(session_count(st), 3);
    /* Below session_max_open a starting session prunes nothing. */
    s[4] = spawn_waited(st, &w[4]);
    ASSERT_EQ(session_count(st), 4);
    ASSERT_EQ(session_take_pruned(st, ids, 8), 0);
    /* At it, one that may go is pruned for a starting one too: s1 once a
     * write_stdin on s2 (in use still) made s1 no longer the most
     * recent. */
    session_touch(s[2]);
    s[5] = spawn_waited(st, &w[5]);
    ASSERT_EQ(session_take_pruned(st, ids, 8), 1);
    ASSERT_EQ(ids[0], session_id(s[1]));
    ASSERT_EQ(session_count(st), 4);
    /* The calls in flight were never woken as pruned. */
    for (int i = 2; i < 6; i++) {
        ASSERT_EQ(w[i].n, 0);
        ASSERT_TRUE(session_find(st, session_id(s[i])) == s[i]);
    }
    /* s2's call returns: 2 held (s2, s3), no pruning; then s4's first
     * one: 3 held, and s2, idle and older, goes. */
    call_returns(sup, s[2], &w[2]);
    ASSERT_EQ(session_take_pruned(st, ids, 8), 0);
    call_returns(sup, s[4], &w[4]);
    ASSERT_EQ(session_take_pruned(st, ids, 8), 1);
    ASSERT_EQ(ids[0], session_id(s[2]));
    ASSERT_TRUE(session_find(st, session_id(s[3])) == s[3]);
    ASSERT_EQ(w[3].n, 0);
    session_store_free(st);
    rein_sup_close(sup);
}

TEST(session_prompt_keeps_its_last_bytes_at_the_cap)
{
    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    /* SESSION_PROMPT_MAX + 10 bytes without a newline: the last
     * SESSION_PROMPT_MAX are the prompt. */
    char cmd[128];
    snprintf(cmd, sizeof cmd,
             "printf 'x\\n'; printf '%%0%dd' 0; printf 'ABCDEFGHIJ'; read x",
             SESSION_PROMPT_MAX);
    session_t *s = spawn(st, cmd, false);
    expect_awaiting(sup, s, "read after a long prompt");
    buf_t p = BUF_INIT;
    ASSERT_TRUE(session_check_input(s, &p));
    ASSERT_EQ(p.len, SESSION_PROMPT_MAX);
    ASSERT_TRUE(p.len >= 10 && !memcmp(p.p + p.len - 10, "ABCDEFGHIJ", 10));
    ASSERT_EQ(p.p[0], '0');
    buf_free(&p);
    session_store_free(st);
    rein_sup_close(sup);
}

/* Past the head+tail cap the raw bytes are the head, then the tail, with
 * the omitted range between them only named by `head`; newlines are
 * counted as the output arrived, so the chunk knows how many lines the
 * dropped middle held, and the next chunk how many came before it. */
TEST(session_raw_output_and_newlines_past_the_cap)
{
    rein_sup_t *sup = open_sup();
    session_store_opts_t so = {.sup = sup, .headtail_cap = 16};
    session_store_t *st;
    ASSERT_OK(session_store_new(&so, &st));
    session_t *s = spawn(st, "seq 1 20; echo DONE; read x; printf 'tail'",
                         false);
    struct woke w = {0, 0};
    ASSERT_OK(session_wait(s, &(session_wait_opts_t){.timeout_ms = T_WAIT_MS,
                                                     .wait_for = "DONE"},
                           on_woke, &w));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_MATCH);
    buf_t out = BUF_INIT, raw = BUF_INIT;
    session_chunk_t c;
    ASSERT_OK(session_take_output(s, &out, &raw, &c));
    /* "1\n".."20\n" is 51 bytes, "DONE\n" 5 more. */
    ASSERT_EQ(c.from, 0);
    ASSERT_EQ(c.bytes, 56);
    ASSERT_EQ(c.omitted, 40);
    ASSERT_EQ(c.head, 8);
    ASSERT_MEM(raw.p, raw.len, "1\n2\n3\n4\n20\nDONE\n", 16);
    ASSERT_EQ(c.newlines, 21);
    ASSERT_EQ(c.lines_before, 0);
    ASSERT_TRUE(c.ends_line);
    ASSERT_CONTAINS(out.p, "[... 40 bytes omitted (bytes 8-48) ...]");
    w.n = 0;
    ASSERT_OK(session_wait(s, &(session_wait_opts_t){.timeout_ms = T_WAIT_MS},
                           on_woke, &w));
    ASSERT_OK(rein_sup_write(sup, session_id(s), "go\n", 3));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_EXIT);
    buf_reset(&out);
    buf_reset(&raw);
    ASSERT_OK(session_take_output(s, &out, &raw, &c));
    ASSERT_STR(raw.p, "tail");
    ASSERT_EQ(c.from, 56);
    ASSERT_EQ(c.lines_before, 21);
    ASSERT_EQ(c.newlines, 0);
    ASSERT_FALSE(c.ends_line);
    buf_free(&out);
    buf_free(&raw);
    session_release(s);
    session_store_free(st);
    rein_sup_close(sup);
}

/* --------------------------------------------- patterns under limits */

/* A pattern that backtracks without end on a line of a's ending in b, as
 * long as the wait_for window. */
#define CATASTROPHIC "(a+)+$"

static void catastrophic_line(buf_t *b)
{
    for (size_t i = 0; i + 1 < SESSION_MATCH_WINDOW; i++)
        ASSERT_OK(buf_append_byte(b, 'a'));
    ASSERT_OK(buf_append_str(b, "b\n"));
}

/* The match gives up at its limit with an error naming the pattern and
 * the limit, an ordinary pattern still matches the same text, and a wait
 * on such a pattern wakes at once with SESSION_WAKE_PATTERN instead of
 * re-running it on every read until its deadline. */
static void check_catastrophic(void)
{
    buf_t line = BUF_INIT;
    char err[SESSION_PATTERN_ERR_MAX];
    session_pattern_t *p;
    catastrophic_line(&line);
    ASSERT_OK(session_pattern_new(CATASTROPHIC, true, &p, err, sizeof err));
    uint64_t t0 = test_now_ms();
    ASSERT_EQ(session_pattern_match(p, line.p, line.len, err, sizeof err),
              REIN_EPATTERN_LIMIT);
    /* PCRE2's default limits take about 0.1 s here; the named ones a few
     * ms.  The bound is loose: valgrind and sanitizers are slow. */
    ASSERT_TRUE(test_now_ms() - t0 < 5000);
    ASSERT_TRUE(strstr(err, "`" CATASTROPHIC "`") != NULL);
    ASSERT_TRUE(strstr(err, "match limit") != NULL);
    session_pattern_free(p);
    ASSERT_OK(session_pattern_new("^a+b$", true, &p, err, sizeof err));
    ASSERT_EQ(session_pattern_match(p, line.p, line.len, err, sizeof err), 1);
    session_pattern_free(p);
    /* A long pattern is cut in the message, which stays one sentence. */
    char longpat[2 * SESSION_PATTERN_SHOWN];
    snprintf(longpat, sizeof longpat, "(?:%0*d)?%s",
             (int)(sizeof longpat - 8 - strlen(CATASTROPHIC)), 0,
             CATASTROPHIC);
    ASSERT_OK(session_pattern_new(longpat, true, &p, err, sizeof err));
    ASSERT_EQ(session_pattern_match(p, line.p, line.len, err, sizeof err),
              REIN_EPATTERN_LIMIT);
    ASSERT_TRUE(strstr(err, "`(?:000") != NULL);
    ASSERT_TRUE(strstr(err, "000...` reached") != NULL);
    session_pattern_free(p);

    rein_sup_t *sup = open_sup();
    session_store_t *st = open_store(sup, 0, 0);
    session_t *s = spawn(st, "cat", false);
    struct woke w = {0, 0};
    session_wait_opts_t wo = {.timeout_ms = T_WAIT_MS,
                              .wait_for = CATASTROPHIC};
    ASSERT_OK(session_wait(s, &wo, on_woke, &w));
    ASSERT_STR(session_wait_error(s), "");
    ASSERT_OK(rein_sup_write(sup, session_id(s), line.p, line.len));
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_PATTERN);
    ASSERT_TRUE(strstr(session_wait_error(s), CATASTROPHIC) != NULL);
    /* The next wait starts clean, and an ordinary pattern matches. */
    w.n = 0;
    wo.wait_for = "^a+b$";
    ASSERT_OK(session_wait(s, &wo, on_woke, &w));
    ASSERT_STR(session_wait_error(s), "");
    wait_woken(sup, &w);
    ASSERT_EQ(w.why, SESSION_WAKE_MATCH);
    buf_free(&line);
    session_store_free(st);
    rein_sup_close(sup);
}

TEST(session_pattern_that_backtracks_without_end_is_given_up_jit)
{
    /* Under valgrind (REIN_VALGRIND=1) the interpreter stays: memcheck
     * cannot follow JIT code. */
    const char *vg = getenv("REIN_VALGRIND");
    if (!(vg && !strcmp(vg, "1")))
        unsetenv("REIN_PCRE2_JIT");
    check_catastrophic();
}

TEST(session_pattern_that_backtracks_without_end_is_given_up_interpreted)
{
    ASSERT_OK(setenv("REIN_PCRE2_JIT", "0", 1));
    check_catastrophic();
}
