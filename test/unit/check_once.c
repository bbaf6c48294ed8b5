/* Unit tests: log-once (common/mpmng_once.c), against a stand-in for
 * httpd's ap_log_error_ that records what would have been logged. */
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "mpmng_once.h"
#include "http_log.h"
#include "apr_strings.h"
#include "check_run.h"

static int logged;
static char last[256];
static int last_level, last_module, last_line;
static apr_status_t last_rv;

/* httpd's function, replaced here: counts calls, keeps the last line. */
void ap_log_error_(const char *file, int line, int module_index, int level,
                   apr_status_t status, const server_rec *s,
                   const char *fmt, ...)
{
    va_list ap;

    (void)file;
    (void)s;
    __atomic_add_fetch(&logged, 1, __ATOMIC_SEQ_CST);
    va_start(ap, fmt);
    apr_vsnprintf(last, sizeof last, fmt, ap);
    va_end(ap);
    last_line = line;
    last_module = module_index;
    last_level = level;
    last_rv = status;
}

static void setup(void)
{
    logged = 0;
    last[0] = '\0';
}

START_TEST(once_is_true_for_the_first_caller_only)
{
    apr_uint32_t flag = 0;

    ck_assert_int_eq(mpmng_once(&flag), 1);
    ck_assert_int_eq(mpmng_once(&flag), 0);
    ck_assert_int_eq(mpmng_once(&flag), 0);
    flag = 0;                                 /* re-armed */
    ck_assert_int_eq(mpmng_once(&flag), 1);
}
END_TEST

START_TEST(logs_the_first_time_with_the_callers_mark)
{
    static apr_uint32_t flag;

    mpmng_log_once(&flag, "x.c", 42, 7, APLOG_WARNING, 13, NULL,
                   "bucket %d: %s", 3, "stuck");
    mpmng_log_once(&flag, "x.c", 43, 7, APLOG_WARNING, 13, NULL,
                   "bucket %d: %s", 4, "again");
    ck_assert_int_eq(logged, 1);
    ck_assert_str_eq(last, "bucket 3: stuck");
    ck_assert_int_eq(last_line, 42);
    ck_assert_int_eq(last_module, 7);
    ck_assert_int_eq(last_level, APLOG_WARNING);
    ck_assert_int_eq(last_rv, 13);
}
END_TEST

START_TEST(flags_are_independent)
{
    apr_uint32_t a = 0, b = 0;

    mpmng_log_once(&a, APLOG_MARK, APLOG_ERR, 0, NULL, "a");
    mpmng_log_once(&b, APLOG_MARK, APLOG_ERR, 0, NULL, "b");
    mpmng_log_once(&a, APLOG_MARK, APLOG_ERR, 0, NULL, "a");
    ck_assert_int_eq(logged, 2);
    ck_assert_str_eq(last, "b");
}
END_TEST

#define RACERS 8
static apr_uint32_t race_flag;

static void *race(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < 1000; i++) {
        mpmng_log_once(&race_flag, APLOG_MARK, APLOG_ERR, 0, NULL, "raced");
    }
    return NULL;
}

START_TEST(threads_meeting_the_fault_together_log_one_line)
{
    pthread_t t[RACERS];
    int i;

    for (i = 0; i < RACERS; i++) {
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, NULL), 0);
    }
    for (i = 0; i < RACERS; i++) {
        pthread_join(t[i], NULL);
    }
    ck_assert_int_eq(logged, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mpmng_once");
    TCase *tc = tcase_create("once");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, once_is_true_for_the_first_caller_only);
    tcase_add_test(tc, logs_the_first_time_with_the_callers_mark);
    tcase_add_test(tc, flags_are_independent);
    tcase_add_test(tc, threads_meeting_the_fault_together_log_one_line);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
