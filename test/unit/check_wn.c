/* Unit tests: mpm_winnt_ng's directive parsing, limits, and the accept
 * socket recycling policy (pure parts, built natively). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "wn_settings.h"
#include "wn_reuse_policy.h"
#include "check_run.h"

static wn_settings unset(void)
{
    wn_settings s = { WN_UNSET, WN_UNSET, WN_UNSET, WN_UNSET, WN_UNSET, 0 };
    return s;
}

static const wn_fixed first_start = { 0, 0 };

START_TEST(test_hooks_parse_by_name)
{
    ck_assert_int_eq(wn_parse_test_hook("emulate-accept"), WN_HOOK_EMULATE_ACCEPT);
    ck_assert_int_eq(wn_parse_test_hook("KeepAlive-In-Thread"),
                     WN_HOOK_KEEPALIVE_IN_THREAD);
    ck_assert_int_eq(wn_parse_test_hook("Crash-At-Exit"), WN_HOOK_CRASH_AT_EXIT);
    ck_assert_int_eq(wn_parse_test_hook("emulate"), 0);
    ck_assert_int_eq(wn_parse_test_hook(""), 0);
}
END_TEST

START_TEST(reuse_modes_parse_in_any_case)
{
    wn_reuse_mode m = WN_REUSE_OFF;

    ck_assert_int_eq(wn_parse_reuse("TransmitFile", &m), 0);
    ck_assert_int_eq(m, WN_REUSE_TRANSMITFILE);
    ck_assert_int_eq(wn_parse_reuse("disconnectex", &m), 0);
    ck_assert_int_eq(m, WN_REUSE_DISCONNECTEX);
    ck_assert_int_eq(wn_parse_reuse("OFF", &m), 0);
    ck_assert_int_eq(m, WN_REUSE_OFF);
    ck_assert_int_eq(wn_parse_reuse("auto", &m), 0);
    ck_assert_int_eq(m, WN_REUSE_AUTO);
    ck_assert_int_eq(wn_parse_reuse("on", &m), -1);
    ck_assert_int_eq(wn_parse_reuse("autox", &m), -1);
    ck_assert_int_eq(wn_parse_reuse("aut", &m), -1);
    ck_assert_str_eq(wn_reuse_name(WN_REUSE_DISCONNECTEX), "disconnectex");
}
END_TEST

START_TEST(defaults_are_stock_mpm_winnt_s)
{
    wn_settings s = unset();
    wn_limits l;
    int changed = 1;

    ck_assert_ptr_null(wn_resolve(&s, &first_start, &l, &changed));
    ck_assert_int_eq(l.threads_per_child, 64);
    ck_assert_int_eq(l.thread_limit, 1920);
    ck_assert_int_eq(l.accepts, WN_DEFAULT_ACCEPTS);
    ck_assert_int_eq(l.reuse, WN_REUSE_AUTO);
    ck_assert_int_eq(l.children, 1);
    ck_assert_int_eq(l.process_slots, 2);
    ck_assert_int_eq(changed, 0);
}
END_TEST

START_TEST(threads_above_the_limit_fail_naming_both)
{
    wn_settings s = unset();
    wn_limits l;
    int changed;
    const char *err;

    s.threads_per_child = 200;
    s.thread_limit = 100;
    err = wn_resolve(&s, &first_start, &l, &changed);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "ThreadsPerChild"));
    ck_assert_ptr_nonnull(strstr(err, "ThreadLimit"));
    /* a small ThreadLimit alone lowers the default ThreadsPerChild */
    s.threads_per_child = WN_UNSET;
    s.thread_limit = 10;
    ck_assert_ptr_null(wn_resolve(&s, &first_start, &l, &changed));
    ck_assert_int_eq(l.threads_per_child, 10);
}
END_TEST

START_TEST(thread_limit_is_kept_over_a_restart)
{
    wn_settings s = unset();
    wn_limits l;
    int changed;
    wn_fixed first = { 300, 2 };

    s.thread_limit = 500;
    ck_assert_ptr_null(wn_resolve(&s, &first, &l, &changed));
    ck_assert_int_eq(l.thread_limit, 300);
    ck_assert_int_eq(changed, WN_CHANGED_THREAD_LIMIT);
    s.threads_per_child = 400;            /* fits 500, not the kept 300 */
    ck_assert_ptr_nonnull(wn_resolve(&s, &first, &l, &changed));
    s.thread_limit = 300;
    s.threads_per_child = 300;
    ck_assert_ptr_null(wn_resolve(&s, &first, &l, &changed));
    ck_assert_int_eq(changed, 0);
}
END_TEST

START_TEST(process_slots_are_twice_the_children)
{
    wn_settings s = unset();
    wn_limits l;
    int changed;

    s.children = 4;
    ck_assert_ptr_null(wn_resolve(&s, &first_start, &l, &changed));
    ck_assert_int_eq(l.children, 4);
    ck_assert_int_eq(l.process_slots, 8);
    s.children = WN_MAX_CHILDREN;
    ck_assert_ptr_null(wn_resolve(&s, &first_start, &l, &changed));
    ck_assert_int_eq(l.process_slots, WN_MAX_CHILDREN * 2);
    ck_assert_int_eq(changed, 0);
}
END_TEST

START_TEST(children_may_fall_but_not_rise_above_the_first_start)
{
    wn_settings s = unset();
    wn_limits l;
    int changed;
    wn_fixed first = { WN_DEFAULT_THREAD_LIMIT, 6 };    /* started with 3 */

    s.children = 2;                       /* lowered: fits, nothing kept */
    ck_assert_ptr_null(wn_resolve(&s, &first, &l, &changed));
    ck_assert_int_eq(l.children, 2);
    ck_assert_int_eq(l.process_slots, 6);
    ck_assert_int_eq(changed, 0);
    s.children = 3;                       /* back up to the first count */
    ck_assert_ptr_null(wn_resolve(&s, &first, &l, &changed));
    ck_assert_int_eq(l.children, 3);
    ck_assert_int_eq(changed, 0);
    s.children = 5;                       /* more than the slots hold */
    ck_assert_ptr_null(wn_resolve(&s, &first, &l, &changed));
    ck_assert_int_eq(l.children, 3);
    ck_assert_int_eq(l.process_slots, 6);
    ck_assert_int_eq(changed, WN_CHANGED_CHILDREN);
    s.thread_limit = 10;                  /* both at once */
    ck_assert_ptr_null(wn_resolve(&s, &first, &l, &changed));
    ck_assert_int_eq(changed, WN_CHANGED_CHILDREN | WN_CHANGED_THREAD_LIMIT);
}
END_TEST

START_TEST(the_wait_set_fits_wait_for_multiple_objects)
{
    /* two control events, two handles per serving child, one per retiring
     * child: every slot filled is the most the parent waits on */
    int most = 2 + WN_MAX_CHILDREN * 2
               + (WN_MAX_CHILDREN * WN_SLOTS_PER_CHILD - WN_MAX_CHILDREN);

    ck_assert_int_le(most, 64);
}
END_TEST

START_TEST(auto_prefers_transmitfile_then_disconnectex)
{
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_AUTO, 1, 1), WN_METHOD_TRANSMITFILE);
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_AUTO, 0, 1), WN_METHOD_DISCONNECTEX);
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_AUTO, 0, 0), WN_METHOD_CLOSE);
}
END_TEST

START_TEST(a_forced_method_that_failed_its_check_closes)
{
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_DISCONNECTEX, 1, 0), WN_METHOD_CLOSE);
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_DISCONNECTEX, 0, 1), WN_METHOD_DISCONNECTEX);
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_TRANSMITFILE, 0, 1), WN_METHOD_CLOSE);
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_TRANSMITFILE, 1, 0), WN_METHOD_TRANSMITFILE);
    ck_assert_int_eq(wn_reuse_choose(WN_REUSE_OFF, 1, 1), WN_METHOD_CLOSE);
}
END_TEST

START_TEST(recycled_sockets_breaking_in_a_row_turn_recycling_off)
{
    wn_reuse_state st;
    int i;

    wn_reuse_init(&st, WN_METHOD_DISCONNECTEX, 1);
    for (i = 1; i < WN_REUSE_MAX_BROKEN; i++)
        ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 0);
    ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 1);     /* reported once */
    ck_assert_int_eq(st.method, WN_METHOD_CLOSE);
    ck_assert_int_eq(st.server_first, 0);
    ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 0);
    ck_assert_int_eq(st.disabled, 1);
}
END_TEST

START_TEST(closing_never_claims_the_server_first_path)
{
    wn_reuse_state st;

    wn_reuse_init(&st, WN_METHOD_CLOSE, 1);
    ck_assert_int_eq(st.server_first, 0);
    ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 0);  /* nothing to disable */
    wn_reuse_init(&st, WN_METHOD_TRANSMITFILE, 1);
    ck_assert_int_eq(st.server_first, 1);
}
END_TEST

START_TEST(a_method_that_keeps_working_is_trusted_and_no_longer_checked)
{
    wn_reuse_state st;
    int i;

    wn_reuse_init(&st, WN_METHOD_TRANSMITFILE, 1);
    for (i = 0; i < WN_REUSE_TRUST_AFTER - 1; i++)
        ck_assert_int_eq(wn_reuse_note(&st, 1, 0), 0);
    ck_assert_int_eq(wn_reuse_needs_check(&st), 1);
    ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 0);      /* a break resets */
    for (i = 0; i < WN_REUSE_TRUST_AFTER - 1; i++)
        ck_assert_int_eq(wn_reuse_note(&st, 1, 0), 0);
    ck_assert_int_eq(wn_reuse_needs_check(&st), 1);
    ck_assert_int_eq(wn_reuse_note(&st, 1, 0), 0);
    ck_assert_int_eq(wn_reuse_needs_check(&st), 0);

    /* Turned off: sockets recycled before that are still checked. */
    wn_reuse_init(&st, WN_METHOD_DISCONNECTEX, 0);
    for (i = 0; i < WN_REUSE_MAX_BROKEN; i++)
        wn_reuse_note(&st, 1, 1);
    ck_assert_int_eq(st.method, WN_METHOD_CLOSE);
    ck_assert_int_eq(wn_reuse_needs_check(&st), 1);
}
END_TEST

START_TEST(breaks_interleaved_with_successes_or_fresh_breaks_do_not)
{
    wn_reuse_state st;
    int i;

    wn_reuse_init(&st, WN_METHOD_TRANSMITFILE, 0);
    for (i = 0; i < 50; i++) {
        ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 0);
        ck_assert_int_eq(wn_reuse_note(&st, 1, 0), 0);  /* recycled, fine */
    }
    for (i = 0; i < 50; i++) {
        ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 0);
        ck_assert_int_eq(wn_reuse_note(&st, 0, 1), 0);  /* fresh broke too */
    }
    /* fresh sockets working do not reset a recycled streak */
    for (i = 1; i < WN_REUSE_MAX_BROKEN; i++) {
        ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 0);
        ck_assert_int_eq(wn_reuse_note(&st, 0, 0), 0);
    }
    ck_assert_int_eq(wn_reuse_note(&st, 1, 1), 1);
}
END_TEST

static int waits_in(wn_client_first *cf, int closes)
{
    int i, n = 0;
    for (i = 0; i < closes; i++) {
        if (wn_client_first_wait(cf)) {
            n++;
            wn_client_first_note(cf, 0);
        }
    }
    return n;
}

START_TEST(closes_wait_for_the_client_until_clients_stop_closing_first)
{
    wn_client_first cf;
    int i;

    wn_client_first_init(&cf);
    for (i = 0; i < 32; i++) {      /* every close waits at first */
        ck_assert_int_eq(wn_client_first_wait(&cf), 1);
        wn_client_first_note(&cf, 0);
    }
    /* 32 waits in a row saw our FIN go first: probes only */
    ck_assert_int_eq(waits_in(&cf, 16 * WN_CLIENT_FIRST_PROBE),
                     16);
}
END_TEST

START_TEST(one_client_closing_first_makes_every_close_wait_again)
{
    wn_client_first cf;
    int i;

    wn_client_first_init(&cf);
    waits_in(&cf, 32);
    for (i = 1; i < WN_CLIENT_FIRST_PROBE; i++) {
        ck_assert_int_eq(wn_client_first_wait(&cf), 0);
    }
    ck_assert_int_eq(wn_client_first_wait(&cf), 1);   /* the probe */
    wn_client_first_note(&cf, 1);                      /* client went first */
    for (i = 0; i < 31; i++) {
        ck_assert_int_eq(wn_client_first_wait(&cf), 1);
        wn_client_first_note(&cf, 0);
    }
    /* that one outcome has left the last 32 now */
    ck_assert_int_eq(wn_client_first_wait(&cf), 1);
    wn_client_first_note(&cf, 0);
    ck_assert_int_eq(wn_client_first_wait(&cf), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wn");
    TCase *tc = tcase_create("settings");

    tcase_add_test(tc, closes_wait_for_the_client_until_clients_stop_closing_first);
    tcase_add_test(tc, one_client_closing_first_makes_every_close_wait_again);
    tcase_add_test(tc, reuse_modes_parse_in_any_case);
    tcase_add_test(tc, test_hooks_parse_by_name);
    tcase_add_test(tc, defaults_are_stock_mpm_winnt_s);
    tcase_add_test(tc, threads_above_the_limit_fail_naming_both);
    tcase_add_test(tc, thread_limit_is_kept_over_a_restart);
    tcase_add_test(tc, process_slots_are_twice_the_children);
    tcase_add_test(tc, children_may_fall_but_not_rise_above_the_first_start);
    tcase_add_test(tc, the_wait_set_fits_wait_for_multiple_objects);
    tcase_add_test(tc, auto_prefers_transmitfile_then_disconnectex);
    tcase_add_test(tc, a_forced_method_that_failed_its_check_closes);
    tcase_add_test(tc, recycled_sockets_breaking_in_a_row_turn_recycling_off);
    tcase_add_test(tc, closing_never_claims_the_server_first_path);
    tcase_add_test(tc, breaks_interleaved_with_successes_or_fresh_breaks_do_not);
    tcase_add_test(tc, a_method_that_keeps_working_is_trusted_and_no_longer_checked);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
