/* test_err.c — the error table: every code has a name and a message. */
#include <errno.h>

#include "harness.h"

TEST(err_rein_codes_have_names_and_messages)
{
    ASSERT_STR(rein_err_name(REIN_EPTY_RUNNING), "EPTY_RUNNING");
    ASSERT_STR(rein_strerror(REIN_EPTY_RUNNING), "PTY session already running");
    ASSERT_STR(rein_strerror(REIN_EPTY_IDLE), "PTY session is not running");
    ASSERT_STR(rein_err_name(REIN_ETOOSMALL), "ETOOSMALL");
}

TEST(err_errno_codes_map_through)
{
    ASSERT_STR(rein_err_name(-ENOENT), "ENOENT");
    ASSERT_STR(rein_strerror(-ENOENT), "No such file or directory");
    ASSERT_STR(rein_err_name(-99999), "EUNKNOWN");
    ASSERT_STR(rein_strerror(-99999), "unknown error");
}
