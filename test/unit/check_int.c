/* Unit tests: a directive's integer as every module parses and refuses it
 * (common/mpmng_int.c). */
#include <check.h>
#include <limits.h>
#include <string.h>

#include "mpmng_int.h"
#include "check_run.h"

static int v;

static int parse(const char *arg, int min, int max)
{
    return mpmng_int_parse(arg, min, max, &v);
}

static const char *explain(const char *name, const char *arg, int rc,
                           int min, int max, const char *alt)
{
    static char buf[256];
    return mpmng_int_explain(buf, sizeof buf, name, arg, rc, min, max, alt);
}

START_TEST(numbers_in_range_parse)
{
    ck_assert_int_eq(parse("25", 1, 100), MPMNG_INT_OK);
    ck_assert_int_eq(v, 25);
    ck_assert_int_eq(parse("1", 1, 100), MPMNG_INT_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(parse("100", 1, 100), MPMNG_INT_OK);
    ck_assert_int_eq(v, 100);
    ck_assert_int_eq(parse("0", 0, 100), MPMNG_INT_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(parse("+7", 0, 100), MPMNG_INT_OK);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(parse("-3", -5, 5), MPMNG_INT_OK);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(parse("007", 0, 100), MPMNG_INT_OK);
    ck_assert_int_eq(v, 7);
}
END_TEST

START_TEST(the_ends_of_int_parse)
{
    ck_assert_int_eq(parse("2147483647", 0, INT_MAX), MPMNG_INT_OK);
    ck_assert_int_eq(v, INT_MAX);
    ck_assert_int_eq(parse("-2147483648", INT_MIN, 0), MPMNG_INT_OK);
    ck_assert_int_eq(v, INT_MIN);
}
END_TEST

START_TEST(anything_but_digits_is_not_a_number)
{
    static const char *const bad[] = {
        "", " ", "abc", "12x", "1.5", "1e3", "0x10", " 12", "12 ", "\t3",
        "+", "-", "+-3", "- 3", "3 4", "12\n",
    };
    size_t i;

    v = 42;
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(parse(bad[i], 0, 100) == MPMNG_INT_NOT_A_NUMBER,
                      "'%s' was not refused as not a number", bad[i]);
    }
    ck_assert_int_eq(mpmng_int_parse(NULL, 0, 100, &v),
                     MPMNG_INT_NOT_A_NUMBER);
    ck_assert_int_eq(v, 42);              /* untouched on error */
}
END_TEST

START_TEST(outside_the_range_and_overflow_are_out_of_range)
{
    v = 42;
    ck_assert_int_eq(parse("0", 1, 100), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(parse("101", 1, 100), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(parse("-1", 0, 100), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(parse("2147483648", 0, INT_MAX), MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(parse("99999999999999999999", 1, 100),
                     MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(parse("-99999999999999999999", 1, 100),
                     MPMNG_INT_OUT_OF_RANGE);
    ck_assert_int_eq(v, 42);
}
END_TEST

START_TEST(messages_name_the_directive_the_value_and_the_range)
{
    ck_assert_str_eq(explain("ThreadsPerChild", "lots",
                             MPMNG_INT_NOT_A_NUMBER, 1, 15000, NULL),
                     "ThreadsPerChild: 'lots' is not a whole number; "
                     "use 1 to 15000");
    ck_assert_str_eq(explain("ChildProcesses", "0", MPMNG_INT_OUT_OF_RANGE,
                             1, 16, NULL),
                     "ChildProcesses: 0 is out of range; use 1 to 16");
    ck_assert_str_eq(explain("ReusePortBuckets", "", MPMNG_INT_NOT_A_NUMBER,
                             1, 1024, "'auto' or a count from "),
                     "ReusePortBuckets: '' is not a whole number; "
                     "use 'auto' or a count from 1 to 1024");
}
END_TEST

START_TEST(a_short_buffer_is_cut_and_terminated)
{
    char buf[12];

    memset(buf, 'x', sizeof buf);
    mpmng_int_explain(buf, sizeof buf, "ThreadsPerChild", "lots",
                      MPMNG_INT_NOT_A_NUMBER, 1, 15000, NULL);
    ck_assert_str_eq(buf, "ThreadsPerC");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mpmng_int");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, numbers_in_range_parse);
    tcase_add_test(tc, the_ends_of_int_parse);
    tcase_add_test(tc, anything_but_digits_is_not_a_number);
    tcase_add_test(tc, outside_the_range_and_overflow_are_out_of_range);
    tcase_add_test(tc, messages_name_the_directive_the_value_and_the_range);
    tcase_add_test(tc, a_short_buffer_is_cut_and_terminated);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
