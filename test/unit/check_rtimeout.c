/* Unit tests: request read timeouts of the read-ahead (rp_rtimeout.c). */
#include <check.h>

#include "rp_rtimeout.h"
#include "check_run.h"

#define S INT64_C(1000000)

START_TEST(parse_like_mod_reqtimeout)
{
    rp_rt_conf c;

    rp_rt_unset(&c);
    ck_assert_ptr_null(rp_rt_parse(&c, "header=20-40,MinRate=500 body=10"));
    ck_assert_int_eq(c.header.timeout, 20);
    ck_assert_int_eq(c.header.max_timeout, 40);
    ck_assert_int_eq(c.header.min_rate, 500);
    ck_assert_int_eq(c.body.timeout, 10);
    ck_assert_int_eq(c.body.min_rate, 0);
    ck_assert_int_eq(c.handshake.timeout, RP_RT_UNSET);
    /* Case of keys and of MinRate does not matter; a later line adds. */
    ck_assert_ptr_null(rp_rt_parse(&c, "HandShake=5,minrate=100"));
    ck_assert_int_eq(c.handshake.timeout, 5);
    ck_assert_int_eq(c.handshake.max_timeout, 0);
    ck_assert_int_eq(c.handshake.min_rate, 100);
    ck_assert_int_eq(c.header.timeout, 20);
    ck_assert_ptr_null(rp_rt_parse(&c, "  header=0  "));
    ck_assert_int_eq(c.header.timeout, 0);
}
END_TEST

START_TEST(parse_errors)
{
    static const char *bad[] = {
        "header", "head=10", "header=ten", "header=10-20", "header=20-10,MinRate=1",
        "header=10,MinRate=0", "header=-1", "header=10,MinRate=", "body=99999999999",
    };
    unsigned i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rp_rt_conf c;
        rp_rt_unset(&c);
        ck_assert_msg(rp_rt_parse(&c, bad[i]) != NULL, "accepted %s", bad[i]);
    }
}
END_TEST

START_TEST(merge_applies_and_defaults)
{
    rp_rt_conf main, vhost, m;

    rp_rt_unset(&main);
    rp_rt_unset(&vhost);
    ck_assert_ptr_null(rp_rt_parse(&main, "header=10 body=30"));
    ck_assert_ptr_null(rp_rt_parse(&vhost, "header=5"));
    rp_rt_merge(&m, &main, &vhost);
    ck_assert_int_eq(m.header.timeout, 5);
    ck_assert_int_eq(m.body.timeout, 30);
    ck_assert(rp_rt_applies(&m));
    rp_rt_resolve(&m);
    ck_assert_int_eq(m.handshake.timeout, 0);

    /* Nothing configured: mod_reqtimeout's defaults. */
    rp_rt_unset(&m);
    ck_assert(rp_rt_applies(&m));
    rp_rt_resolve(&m);
    ck_assert_int_eq(m.header.timeout, 20);
    ck_assert_int_eq(m.header.max_timeout, 40);
    ck_assert_int_eq(m.header.min_rate, 500);
    ck_assert_int_eq(m.body.timeout, 20);

    /* Every stage off: the module leaves the connection alone. */
    rp_rt_unset(&m);
    ck_assert_ptr_null(rp_rt_parse(&m, "header=0 body=0"));
    ck_assert(!rp_rt_applies(&m));
}
END_TEST

START_TEST(clock_without_reqtimeout_is_timeout_per_read)
{
    rp_rt_clock k;

    rp_rt_begin(&k, NULL, 60 * S, 1000);
    ck_assert_int_eq(rp_rt_deadline(&k), 1000 + 60 * S);
    rp_rt_progress(&k, 10, 5 * S);
    ck_assert_int_eq(rp_rt_deadline(&k), 65 * S);
    rp_rt_begin(&k, NULL, 0, 1000);
    ck_assert_int_eq(rp_rt_deadline(&k), 0);
}
END_TEST

START_TEST(clock_stage_extends_by_rate_up_to_max)
{
    rp_rt_stage header = { 20, 40, 500 };
    rp_rt_clock k;

    rp_rt_begin(&k, &header, 60 * S, 0);
    ck_assert_int_eq(rp_rt_deadline(&k), 20 * S);
    rp_rt_progress(&k, 1000, 1 * S);         /* 1000 B at 500 B/s: +2 s */
    ck_assert_int_eq(rp_rt_deadline(&k), 22 * S);
    rp_rt_progress(&k, 1000000, 2 * S);      /* capped at 40 s */
    ck_assert_int_eq(rp_rt_deadline(&k), 40 * S);
}
END_TEST

START_TEST(clock_earlier_of_stage_and_timeout)
{
    rp_rt_stage body = { 20, 0, 0 };
    rp_rt_stage off = { 0, 0, 0 };
    rp_rt_clock k;

    rp_rt_begin(&k, &body, 5 * S, 0);
    ck_assert_int_eq(rp_rt_deadline(&k), 5 * S);    /* Timeout 5 first */
    rp_rt_progress(&k, 1, 18 * S);
    ck_assert_int_eq(rp_rt_deadline(&k), 20 * S);   /* then the stage */
    rp_rt_begin(&k, &off, 7 * S, 0);
    ck_assert_int_eq(rp_rt_deadline(&k), 7 * S);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rtimeout");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, parse_like_mod_reqtimeout);
    tcase_add_test(tc, parse_errors);
    tcase_add_test(tc, merge_applies_and_defaults);
    tcase_add_test(tc, clock_without_reqtimeout_is_timeout_per_read);
    tcase_add_test(tc, clock_stage_extends_by_rate_up_to_max);
    tcase_add_test(tc, clock_earlier_of_stage_and_timeout);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
