/* test_err.c — the error table: every code has a name and a message; a
 * NULL handle or output is -EINVAL everywhere in the public API. */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"

TEST(err_rein_codes_have_names_and_messages)
{
    ASSERT_STR(rein_err_name(REIN_EPTY_RUNNING), "EPTY_RUNNING");
    ASSERT_STR(rein_strerror(REIN_EPTY_RUNNING), "PTY session already running");
    ASSERT_STR(rein_strerror(REIN_EPTY_IDLE), "PTY session is not running");
    ASSERT_STR(rein_err_name(REIN_ETOOSMALL), "ETOOSMALL");
    ASSERT_STR(rein_err_name(REIN_ESESSIONS_FULL), "ESESSIONS_FULL");
    ASSERT_STR(rein_strerror(REIN_ESESSIONS_FULL),
               "the session store is full; none may be pruned");
}

TEST(err_errno_codes_map_through)
{
    ASSERT_STR(rein_err_name(-ENOENT), "ENOENT");
    ASSERT_STR(rein_strerror(-ENOENT), "No such file or directory");
    ASSERT_STR(rein_err_name(-99999), "EUNKNOWN");
    ASSERT_STR(rein_strerror(-99999), "unknown error");
    ASSERT_STR(rein_strerror(0), "success");
    ASSERT_STR(rein_err_name(0), "OK");
}

/* Every public call that returns an error code refuses a NULL handle or
 * out-parameter with -EINVAL, instead of crashing or asserting. */
TEST(err_null_handles_and_outputs_are_einval)
{
    rein_run_info_t info;
    rein_reconcile_stats_t rs;
    rein_run_result_t res;
    rein_proc_t **list;
    size_t n;
    pid_t pgid;
    char **argv;
    bool exited;
    ASSERT_EQ(rein_cancel_new(NULL), -EINVAL);
    ASSERT_EQ(rein_pty_new(NULL), -EINVAL);
    ASSERT_EQ(rein_pty_start(NULL, NULL, &res), -EINVAL);
    ASSERT_EQ(rein_pty_write(NULL, "x", 1), -EINVAL);
    ASSERT_EQ(rein_pty_resize(NULL, 80, 24), -EINVAL);
    ASSERT_EQ(rein_pty_kill(NULL), -EINVAL);
    ASSERT_EQ(rein_shell_new(NULL, NULL), -EINVAL);
    ASSERT_EQ(rein_shell_run(NULL, NULL, &res), -EINVAL);
    ASSERT_EQ(rein_shell_abort(NULL), -EINVAL);
    ASSERT_EQ(rein_shell_exec(NULL, NULL, &res), -EINVAL);
    ASSERT_EQ(rein_proc_from_pid(getpid(), NULL), -EINVAL);
    ASSERT_EQ(rein_proc_from_path(NULL, &list, &n), -EINVAL);
    ASSERT_EQ(rein_proc_ppid(NULL), -EINVAL);
    ASSERT_EQ(rein_proc_group_id(NULL, &pgid), -EINVAL);
    ASSERT_EQ(rein_proc_args(NULL, &argv), -EINVAL);
    ASSERT_EQ(rein_proc_children(NULL, &list, &n), -EINVAL);
    ASSERT_EQ(rein_proc_kill_tree(NULL, SIGTERM), -EINVAL);
    ASSERT_EQ(rein_proc_terminate(NULL, NULL, &exited), -EINVAL);
    ASSERT_EQ(rein_proc_wait_for_exit(NULL, 0, NULL, &exited), -EINVAL);
    /* those that return a pid, a status or nothing */
    ASSERT_EQ(rein_proc_pid(NULL), -EINVAL);
    ASSERT_EQ(rein_proc_status(NULL), REIN_PROC_EXITED);
    rein_proc_terminate_opts_init(NULL);
    ASSERT_EQ(rein_sup_open(NULL, NULL), -EINVAL);
    ASSERT_EQ(rein_sup_fd(NULL), -EINVAL);
    ASSERT_EQ(rein_sup_run_once(NULL, 0), -EINVAL);
    ASSERT_EQ(rein_sup_spawn(NULL, NULL, NULL), -EINVAL);
    ASSERT_EQ(rein_sup_write(NULL, 1, "x", 1), -EINVAL);
    ASSERT_EQ(rein_sup_close_stdin(NULL, 1), -EINVAL);
    ASSERT_EQ(rein_sup_resize(NULL, 1, 80, 24), -EINVAL);
    ASSERT_EQ(rein_sup_signal(NULL, 1, SIGTERM), -EINVAL);
    ASSERT_EQ(rein_sup_cancel(NULL, 1, SIGTERM, 0), -EINVAL);
    ASSERT_EQ(rein_sup_info(NULL, 1, &info), -EINVAL);
    ASSERT_EQ(rein_sup_forget(NULL, 1), -EINVAL);
    ASSERT_EQ(rein_sup_reconcile(NULL, &rs), -EINVAL);
    /* A live supervisor still refuses a NULL output. */
    rein_sup_opts_t so = {.ephemeral = true, .containment = "pgid"};
    rein_sup_t *s;
    ASSERT_OK(rein_sup_open(&so, &s));
    ASSERT_EQ(rein_sup_info(s, 1, NULL), -EINVAL);
    ASSERT_EQ(rein_sup_write(s, 1, NULL, 4), -EINVAL);
    /* A spawn that fails leaves no id a caller could act on. */
    int64_t id = 12345;
    rein_run_opts_t bad = {.argv = NULL};
    ASSERT_TRUE(rein_sup_spawn(s, &bad, &id) < 0);
    ASSERT_EQ(id, 0);
    rein_sup_close(s);
}
