/* Unit tests: a bucket's children share its connections (rp_balance_rule.c). */
#include <check.h>
#include <stdlib.h>

#include "rp_balance_rule.h"
#include "check_run.h"

static rp_balance_view view(int mine, int siblings, int sibling_conns, int fewest)
{
    rp_balance_view v = { mine, siblings, sibling_conns, fewest, 0 };
    return v;
}

START_TEST(alone_in_its_bucket_never_pauses)
{
    rp_balance_view v = view(1000, 0, 0, 0);

    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 0);
    ck_assert_int_eq(rp_balance_rule_pause(1, &v), 0);
}
END_TEST

START_TEST(pauses_well_above_its_share_only)
{
    rp_balance_view v;

    /* 2 children, 300 connections: average 150, slack 18. */
    v = view(183, 1, 117, 117);
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 1);
    v = view(160, 1, 140, 140);         /* within the slack */
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 0);
    /* Few connections: never. */
    v = view(7, 1, 0, 0);
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 0);
    v = view(8, 1, 0, 0);               /* average 4, slack 4 */
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 0);
    v = view(10, 1, 0, 0);              /* average 5 */
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 1);
}
END_TEST

START_TEST(no_pause_without_a_sibling_with_room)
{
    /* 3 children: 200, 200 and one at 20: the average is 140, but pausing
     * is for the one far above (the others are not below it by slack). */
    rp_balance_view v = view(200, 2, 220, 20);

    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 1);
    v = view(150, 2, 150, 75);          /* 150/75/75: avg 125, slack 15 */
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 1);
    v = view(150, 2, 290, 140);         /* 150/150/140 */
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 0);
}
END_TEST

START_TEST(paused_child_resumes_at_its_share)
{
    rp_balance_view v = view(160, 1, 140, 140);   /* avg 150 */

    ck_assert_int_eq(rp_balance_rule_pause(1, &v), 1);
    v = view(151, 1, 149, 149);
    ck_assert_int_eq(rp_balance_rule_pause(1, &v), 0);
    v = view(152, 1, 148, 148);
    ck_assert_int_eq(rp_balance_rule_pause(1, &v), 1);
}
END_TEST

START_TEST(paused_child_resumes_when_connections_wait)
{
    rp_balance_view v = view(300, 1, 10, 10);

    v.queue_waits = 1;
    ck_assert_int_eq(rp_balance_rule_pause(1, &v), 1);
    v.queue_waits = RP_BALANCE_QUEUE_WAITS;
    ck_assert_int_eq(rp_balance_rule_pause(1, &v), 0);
    ck_assert_int_eq(rp_balance_rule_pause(0, &v), 0);
}
END_TEST

static Suite *balance_rule_suite(void)
{
    Suite *su = suite_create("rp_balance_rule");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, alone_in_its_bucket_never_pauses);
    tcase_add_test(tc, pauses_well_above_its_share_only);
    tcase_add_test(tc, no_pause_without_a_sibling_with_room);
    tcase_add_test(tc, paused_child_resumes_at_its_share);
    tcase_add_test(tc, paused_child_resumes_when_connections_wait);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(balance_rule_suite());
}
