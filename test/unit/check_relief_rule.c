/* Unit tests: when a stuck bucket gets another child (rp_relief_rule.c). */
#include <check.h>
#include <stdlib.h>

#include "rp_relief_rule.h"
#include "check_run.h"

#define MS 1000
#define T0 5000000              /* any "now" that is not 0 */

START_TEST(an_empty_queue_is_never_stuck)
{
    rp_relief_watch w = { 0, 0, 0 };
    int64_t t;

    for (t = T0; t < T0 + 500 * MS; t += 25 * MS) {
        ck_assert_int_eq(rp_relief_rule_look(&w, 0, 7, t, 50 * MS), 0);
    }
    ck_assert_int_eq(rp_relief_rule_stalled_for(&w, t), 0);
}
END_TEST

START_TEST(a_queue_that_is_being_accepted_is_not_stuck)
{
    rp_relief_watch w = { 0, 0, 0 };
    uint64_t acc = 0;
    int64_t t;

    /* Busy: connections always wait, but every look finds progress. */
    for (t = T0; t < T0 + 500 * MS; t += 25 * MS) {
        ck_assert_int_eq(rp_relief_rule_look(&w, 40, acc += 3, t, 50 * MS), 0);
    }
}
END_TEST

START_TEST(waiting_without_progress_for_the_timeout_adds_a_child)
{
    rp_relief_watch w = { 0, 0, 0 };

    ck_assert_int_eq(rp_relief_rule_look(&w, 0, 10, T0, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 3, 10, T0 + 25 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 5, 10, T0 + 50 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_stalled_for(&w, T0 + 60 * MS), 35 * MS);
    /* 50 ms after it was first seen waiting. */
    ck_assert_int_eq(rp_relief_rule_look(&w, 6, 10, T0 + 75 * MS, 50 * MS), 1);
}
END_TEST

START_TEST(progress_restarts_the_clock)
{
    rp_relief_watch w = { 0, 0, 0 };

    ck_assert_int_eq(rp_relief_rule_look(&w, 3, 10, T0, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 3, 10, T0 + 40 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 3, 11, T0 + 45 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_stalled_for(&w, T0 + 45 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 3, 11, T0 + 60 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 3, 11, T0 + 100 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 3, 11, T0 + 110 * MS, 50 * MS), 1);
}
END_TEST

START_TEST(a_bucket_gets_at_most_one_child_per_hold)
{
    rp_relief_watch w = { 0, 0, 0 };
    int64_t t, added = 0;
    int n = 0;

    /* Stuck for 3 s (the new children block too): one child per hold. */
    for (t = T0; t <= T0 + 3000 * MS; t += 25 * MS) {
        if (rp_relief_rule_look(&w, 9, 10, t, 50 * MS)) {
            ck_assert(n == 0 || t - added >= RP_RELIEF_HOLD);
            added = t;
            n++;
        }
    }
    ck_assert_int_eq(n, 3);
}
END_TEST

START_TEST(a_new_episode_after_recovery_is_not_held_back_forever)
{
    rp_relief_watch w = { 0, 0, 0 };

    ck_assert_int_eq(rp_relief_rule_look(&w, 2, 1, T0, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 2, 1, T0 + 25 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 2, 1, T0 + 75 * MS, 50 * MS), 1);
    /* Recovers, then stalls again 2 s later: relieved again. */
    ck_assert_int_eq(rp_relief_rule_look(&w, 0, 9, T0 + 100 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 4, 9, T0 + 2000 * MS, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&w, 4, 9, T0 + 2050 * MS, 50 * MS), 1);
}
END_TEST

START_TEST(a_child_just_started_is_given_the_hold)
{
    rp_relief_watch fresh = { 0, 0, 0 }, other = { 0, 0, 0 };
    int64_t t;

    /* Its bucket's connections wait while it starts: not stuck within the
     * hold; a bucket whose child was not just started is, at 50 ms. */
    rp_relief_rule_child_started(&fresh, T0);
    for (t = T0; t < T0 + RP_RELIEF_HOLD; t += 25 * MS) {
        ck_assert_int_eq(rp_relief_rule_look(&fresh, 4, 0, t, 50 * MS), 0);
    }
    ck_assert_int_eq(rp_relief_rule_look(&fresh, 4, 0, t, 50 * MS), 1);
    ck_assert_int_eq(rp_relief_rule_look(&other, 4, 0, T0, 50 * MS), 0);
    ck_assert_int_eq(rp_relief_rule_look(&other, 4, 0, T0 + 50 * MS, 50 * MS), 1);
}
END_TEST

static Suite *relief_rule_suite(void)
{
    Suite *su = suite_create("rp_relief_watch");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, an_empty_queue_is_never_stuck);
    tcase_add_test(tc, a_queue_that_is_being_accepted_is_not_stuck);
    tcase_add_test(tc, waiting_without_progress_for_the_timeout_adds_a_child);
    tcase_add_test(tc, progress_restarts_the_clock);
    tcase_add_test(tc, a_bucket_gets_at_most_one_child_per_hold);
    tcase_add_test(tc, a_new_episode_after_recovery_is_not_held_back_forever);
    tcase_add_test(tc, a_child_just_started_is_given_the_hold);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(relief_rule_suite());
}
