/*
 * test_runstate.c — the lifecycle table, enumerated: every (state, event)
 * pair, the happy paths, repeats as no-ops, first reason wins.
 */
#include "harness.h"
#include "supervise/runstate.h"

/* The whole table as the tests expect it: next state and action. */
static const struct {
    rein_run_state_t from;
    run_event_t ev;
    rein_run_state_t to;
    run_action_t act;
} expect[] = {
    {REIN_RUN_STARTING, RUN_EV_SPAWNED, REIN_RUN_RUNNING, RUN_ACT_START},
    {REIN_RUN_STARTING, RUN_EV_SPAWN_FAILED, REIN_RUN_EXITED, RUN_ACT_FINALIZE},
    {REIN_RUN_STARTING, RUN_EV_CANCEL, REIN_RUN_STARTING, RUN_ACT_NONE},
    {REIN_RUN_STARTING, RUN_EV_CHILD_EXIT, REIN_RUN_STARTING, RUN_ACT_NONE},
    {REIN_RUN_STARTING, RUN_EV_CLEANED, REIN_RUN_STARTING, RUN_ACT_NONE},
    {REIN_RUN_RUNNING, RUN_EV_SPAWNED, REIN_RUN_RUNNING, RUN_ACT_NONE},
    {REIN_RUN_RUNNING, RUN_EV_SPAWN_FAILED, REIN_RUN_RUNNING, RUN_ACT_NONE},
    {REIN_RUN_RUNNING, RUN_EV_CANCEL, REIN_RUN_EXITING, RUN_ACT_TERMINATE},
    {REIN_RUN_RUNNING, RUN_EV_CHILD_EXIT, REIN_RUN_EXITING, RUN_ACT_CLEANUP},
    {REIN_RUN_RUNNING, RUN_EV_CLEANED, REIN_RUN_RUNNING, RUN_ACT_NONE},
    {REIN_RUN_EXITING, RUN_EV_SPAWNED, REIN_RUN_EXITING, RUN_ACT_NONE},
    {REIN_RUN_EXITING, RUN_EV_SPAWN_FAILED, REIN_RUN_EXITING, RUN_ACT_NONE},
    {REIN_RUN_EXITING, RUN_EV_CANCEL, REIN_RUN_EXITING, RUN_ACT_NONE},
    {REIN_RUN_EXITING, RUN_EV_CHILD_EXIT, REIN_RUN_EXITING, RUN_ACT_NONE},
    {REIN_RUN_EXITING, RUN_EV_CLEANED, REIN_RUN_EXITED, RUN_ACT_FINALIZE},
    {REIN_RUN_EXITED, RUN_EV_SPAWNED, REIN_RUN_EXITED, RUN_ACT_NONE},
    {REIN_RUN_EXITED, RUN_EV_SPAWN_FAILED, REIN_RUN_EXITED, RUN_ACT_NONE},
    {REIN_RUN_EXITED, RUN_EV_CANCEL, REIN_RUN_EXITED, RUN_ACT_NONE},
    {REIN_RUN_EXITED, RUN_EV_CHILD_EXIT, REIN_RUN_EXITED, RUN_ACT_NONE},
    {REIN_RUN_EXITED, RUN_EV_CLEANED, REIN_RUN_EXITED, RUN_ACT_NONE},
};

TEST(runstate_table_every_pair)
{
    size_t n = sizeof expect / sizeof expect[0];
    ASSERT_EQ(n, 4 * RUN_EV_COUNT); /* the whole table, nothing missing */
    for (size_t i = 0; i < n; i++) {
        rein_run_state_t s = expect[i].from;
        run_action_t a = runstate_step(&s, expect[i].ev);
        if (s != expect[i].to || a != expect[i].act)
            test_fail(__FILE__, __LINE__, "%s + %s: got %s/%s, want %s/%s",
                      rein_run_state_name(expect[i].from),
                      run_event_name(expect[i].ev), rein_run_state_name(s),
                      run_action_name(a), rein_run_state_name(expect[i].to),
                      run_action_name(expect[i].act));
    }
}

TEST(runstate_duplicate_cancel_and_finalize_are_noops)
{
    rein_run_state_t s = REIN_RUN_STARTING;
    ASSERT_EQ(runstate_step(&s, RUN_EV_SPAWNED), RUN_ACT_START);
    ASSERT_EQ(runstate_step(&s, RUN_EV_CANCEL), RUN_ACT_TERMINATE);
    ASSERT_EQ(runstate_step(&s, RUN_EV_CANCEL), RUN_ACT_NONE);
    /* exit racing the cancel: noted, no second action */
    ASSERT_EQ(runstate_step(&s, RUN_EV_CHILD_EXIT), RUN_ACT_NONE);
    ASSERT_EQ(runstate_step(&s, RUN_EV_CLEANED), RUN_ACT_FINALIZE);
    ASSERT_EQ(runstate_step(&s, RUN_EV_CLEANED), RUN_ACT_NONE);
    ASSERT_EQ(s, REIN_RUN_EXITED);
}

TEST(runstate_first_reason_wins)
{
    rein_reason_t r = REIN_REASON_NONE;
    ASSERT_FALSE(runstate_set_reason(&r, REIN_REASON_NONE));
    ASSERT_TRUE(runstate_set_reason(&r, REIN_REASON_OVERALL_TIMEOUT));
    ASSERT_FALSE(runstate_set_reason(&r, REIN_REASON_EXIT));
    ASSERT_FALSE(runstate_set_reason(&r, REIN_REASON_MANUAL_CANCEL));
    ASSERT_EQ(r, REIN_REASON_OVERALL_TIMEOUT);
    ASSERT_STR(rein_reason_name(r), "overall-timeout");
    ASSERT_STR(rein_reason_name(REIN_REASON_NO_OUTPUT_TIMEOUT),
               "no-output-timeout");
    ASSERT_STR(rein_reason_name(REIN_REASON_OWNERSHIP_ESCAPE),
               "ownership-escape");
    ASSERT_STR(rein_reason_name(REIN_REASON_NO_INPUT), "no-input");
    ASSERT_STR(rein_run_state_name(REIN_RUN_EXITING), "exiting");
}

TEST(runstate_out_of_range_is_a_noop)
{
    rein_run_state_t s = (rein_run_state_t)7;
    ASSERT_EQ(runstate_step(&s, RUN_EV_CANCEL), RUN_ACT_NONE);
    s = REIN_RUN_RUNNING;
    ASSERT_EQ(runstate_step(&s, RUN_EV_COUNT), RUN_ACT_NONE);
    ASSERT_EQ(s, REIN_RUN_RUNNING);
}
