/* Unit tests: directive parsing and resolution (rp_settings.c). */
#include <check.h>
#include <string.h>

#include "rp_settings.h"
#include "check_run.h"

static rp_settings s;
static rp_limits l;
static rp_notes notes;
static char err[512];

static void setup(void)
{
    rp_settings_init(&s);
    memset(&l, 0, sizeof(l));
    err[0] = '\0';
}

static int resolve(int cpus, int have)
{
    return rp_settings_resolve(&s, cpus, have, &l, &notes, err, sizeof(err));
}

static int notes_mention(const char *word)
{
    int i;
    for (i = 0; i < notes.count; i++) {
        if (strstr(notes.text[i], word)) {
            return 1;
        }
    }
    return 0;
}

/* Plain counts are mpmng_int_parse's (test/unit/check_int.c); here the
 * words each directive adds, and its range. */
START_TEST(parse_buckets_auto_and_counts)
{
    int v = -1;
    ck_assert_int_eq(rp_parse_buckets("auto", &v), MPMNG_INT_OK);
    ck_assert_int_eq(v, RP_BUCKETS_AUTO);
    ck_assert_int_eq(rp_parse_buckets("AUTO", &v), MPMNG_INT_OK);
    ck_assert_int_eq(rp_parse_buckets("8", &v), MPMNG_INT_OK);
    ck_assert_int_eq(v, 8);
    ck_assert_int_eq(rp_parse_buckets("1024", &v), MPMNG_INT_OK);
    ck_assert_int_eq(rp_parse_buckets("0", &v), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(rp_parse_buckets("1025", &v), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(rp_parse_buckets("many", &v), MPMNG_INT_NOT_A_NUMBER);
    ck_assert_int_eq(rp_parse_buckets("autox", &v), MPMNG_INT_NOT_A_NUMBER);
    ck_assert_int_eq(rp_parse_buckets("", &v), MPMNG_INT_NOT_A_NUMBER);
    ck_assert_int_eq(v, 1024);  /* untouched on error */
}
END_TEST

START_TEST(parse_stuck_timeout_off_and_millis)
{
    int v = -1;
    ck_assert_int_eq(rp_parse_stuck_timeout("off", &v), MPMNG_INT_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(rp_parse_stuck_timeout("Off", &v), MPMNG_INT_OK);
    ck_assert_int_eq(rp_parse_stuck_timeout("200", &v), MPMNG_INT_OK);
    ck_assert_int_eq(v, 200);
    ck_assert_int_eq(rp_parse_stuck_timeout("0", &v), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(rp_parse_stuck_timeout("-5", &v), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(rp_parse_stuck_timeout("60001", &v),
                     MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(rp_parse_stuck_timeout("50ms", &v),
                     MPMNG_INT_NOT_A_NUMBER);
    ck_assert_int_eq(rp_parse_stuck_timeout("", &v), MPMNG_INT_NOT_A_NUMBER);
    ck_assert_int_eq(v, 200);
}
END_TEST

START_TEST(defaults_follow_cpus)
{
    ck_assert_int_eq(resolve(4, 1), 0);
    ck_assert_int_eq(l.num_buckets, 4);
    ck_assert_int_eq(l.threads_per_child, RP_DEFAULT_THREADS_PER_CHILD);
    ck_assert_int_eq(l.server_limit, RP_DEFAULT_SERVER_LIMIT);
    ck_assert_int_eq(l.max_workers, RP_DEFAULT_SERVER_LIMIT * RP_DEFAULT_THREADS_PER_CHILD);
    ck_assert_int_eq(l.daemons_limit, RP_DEFAULT_SERVER_LIMIT);
    ck_assert_int_eq(l.start_servers, 4); /* one child per bucket */
    ck_assert_int_eq(l.stuck_timeout, RP_DEFAULT_STUCK_TIMEOUT);
    ck_assert_int_eq(l.reuseport, 1);
    ck_assert_int_eq(notes.count, 0);
}
END_TEST

START_TEST(threads_per_child_over_limit_is_an_error)
{
    s.threads_per_child = 100;
    s.thread_limit = 64;
    ck_assert_int_eq(resolve(2, 1), -1);
    ck_assert_ptr_nonnull(strstr(err, "ThreadsPerChild"));
    ck_assert_ptr_nonnull(strstr(err, "ThreadLimit"));
}
END_TEST

START_TEST(threads_per_child_alone_raises_thread_limit)
{
    s.threads_per_child = 100;
    ck_assert_int_eq(resolve(2, 1), 0);
    ck_assert_int_eq(l.thread_limit, 100);
}
END_TEST

START_TEST(max_workers_rounded_with_a_note)
{
    s.threads_per_child = 25;
    s.max_workers = 130;
    ck_assert_int_eq(resolve(2, 1), 0);
    ck_assert_int_eq(l.max_workers, 125);
    ck_assert_int_eq(l.daemons_limit, 5);
    ck_assert(notes_mention("MaxRequestWorkers"));
}
END_TEST

START_TEST(max_workers_below_one_child_raised_with_a_note)
{
    s.threads_per_child = 25;
    s.max_workers = 10;
    ck_assert_int_eq(resolve(1, 1), 0);
    ck_assert_int_eq(l.max_workers, 25);
    ck_assert(notes_mention("MaxRequestWorkers"));
}
END_TEST

START_TEST(max_workers_over_server_limit_is_an_error)
{
    s.server_limit = 2;
    s.threads_per_child = 25;
    s.max_workers = 200;
    ck_assert_int_eq(resolve(2, 1), -1);
    ck_assert_ptr_nonnull(strstr(err, "ServerLimit"));
}
END_TEST

START_TEST(explicit_buckets_beyond_children_is_an_error)
{
    s.server_limit = 4;
    s.buckets = 64;
    ck_assert_int_eq(resolve(2, 1), -1);
    ck_assert_ptr_nonnull(strstr(err, "ReusePortBuckets 64"));
}
END_TEST

START_TEST(auto_buckets_capped_by_children_with_a_note)
{
    s.server_limit = 3;
    ck_assert_int_eq(resolve(8, 1), 0);
    ck_assert_int_eq(l.num_buckets, 3);
    ck_assert(notes_mention("ReusePortBuckets auto"));
}
END_TEST

START_TEST(reuseport_off_means_one_bucket)
{
    s.reuseport = 0;
    s.buckets = 4;
    ck_assert_int_eq(resolve(8, 1), 0);
    ck_assert_int_eq(l.num_buckets, 1);
    ck_assert_int_eq(l.reuseport, 0);
    ck_assert(notes_mention("ReusePort is off"));
}
END_TEST

START_TEST(no_kernel_support_means_one_bucket)
{
    ck_assert_int_eq(resolve(8, 0), 0);
    ck_assert_int_eq(l.num_buckets, 1);
    ck_assert_int_eq(l.reuseport, 0);
}
END_TEST

START_TEST(start_servers_raised_to_bucket_count)
{
    s.start_servers = 1;
    s.buckets = 3;
    ck_assert_int_eq(resolve(2, 1), 0);
    ck_assert_int_eq(l.start_servers, 3);
    ck_assert(notes_mention("StartServers"));
}
END_TEST

START_TEST(start_servers_lowered_to_daemons_limit)
{
    s.start_servers = 50;
    s.server_limit = 4;
    ck_assert_int_eq(resolve(1, 1), 0);
    ck_assert_int_eq(l.start_servers, 4);
}
END_TEST

START_TEST(spare_window_wider_than_a_child_per_bucket)
{
    s.min_spare_threads = 10;
    s.max_spare_threads = 20;
    s.threads_per_child = 25;
    s.buckets = 2;
    ck_assert_int_eq(resolve(2, 1), 0);
    ck_assert_int_ge(l.max_spare_threads, l.min_spare_threads + 2 * 26);
    ck_assert(notes_mention("MaxSpareThreads"));
}
END_TEST

START_TEST(children_per_bucket_default_and_start_servers)
{
    s.buckets = 2;
    ck_assert_int_eq(resolve(4, 1), 0);
    ck_assert_int_eq(l.per_bucket, 1);
    ck_assert_int_eq(l.start_servers, 2);
    setup();
    s.buckets = 2;
    s.per_bucket = 2;
    ck_assert_int_eq(resolve(4, 1), 0);
    ck_assert_int_eq(l.per_bucket, 2);
    ck_assert_int_eq(l.start_servers, 4);
    setup();
    s.buckets = 2;
    s.per_bucket = 2;
    s.start_servers = 3;
    ck_assert_int_eq(resolve(4, 1), 0);
    ck_assert_int_eq(l.start_servers, 4);
    ck_assert(notes_mention("StartServers 3 raised to 4"));
}
END_TEST

START_TEST(children_per_bucket_limits_buckets)
{
    /* 4 children allowed (100 / 25). */
    s.max_workers = 100;
    s.per_bucket = 2;
    ck_assert_int_eq(resolve(8, 1), 0);
    ck_assert_int_eq(l.num_buckets, 2);
    ck_assert(notes_mention("2 per bucket"));
    setup();
    s.max_workers = 100;
    s.per_bucket = 2;
    s.buckets = 3;
    ck_assert_int_eq(resolve(8, 1), -1);
    ck_assert_ptr_nonnull(strstr(err, "ReusePortBuckets 3 needs 2 children"));
    setup();
    s.max_workers = 100;
    s.per_bucket = 5;
    ck_assert_int_eq(resolve(8, 1), -1);
    ck_assert_ptr_nonnull(strstr(err, "ReusePortChildrenPerBucket 5"));
}
END_TEST

static Suite *settings_suite(void)
{
    Suite *su = suite_create("rp_settings");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, parse_buckets_auto_and_counts);
    tcase_add_test(tc, parse_stuck_timeout_off_and_millis);
    tcase_add_test(tc, defaults_follow_cpus);
    tcase_add_test(tc, threads_per_child_over_limit_is_an_error);
    tcase_add_test(tc, threads_per_child_alone_raises_thread_limit);
    tcase_add_test(tc, max_workers_rounded_with_a_note);
    tcase_add_test(tc, max_workers_below_one_child_raised_with_a_note);
    tcase_add_test(tc, max_workers_over_server_limit_is_an_error);
    tcase_add_test(tc, explicit_buckets_beyond_children_is_an_error);
    tcase_add_test(tc, auto_buckets_capped_by_children_with_a_note);
    tcase_add_test(tc, reuseport_off_means_one_bucket);
    tcase_add_test(tc, no_kernel_support_means_one_bucket);
    tcase_add_test(tc, start_servers_raised_to_bucket_count);
    tcase_add_test(tc, start_servers_lowered_to_daemons_limit);
    tcase_add_test(tc, spare_window_wider_than_a_child_per_bucket);
    tcase_add_test(tc, children_per_bucket_default_and_start_servers);
    tcase_add_test(tc, children_per_bucket_limits_buckets);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(settings_suite());
}
