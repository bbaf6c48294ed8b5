/* Unit tests: counters of all children summed for server-status
 * (fhc_tally.c). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fhc_tally.h"
#include "check_run.h"

static int dead_pid;

static int alive_unless_dead(int32_t pid)
{
    return pid != dead_pid;
}

static fhc_tally *new_tally(unsigned rows)
{
    fhc_tally *t = malloc(fhc_tally_size(rows));
    fhc_tally_init(t, rows);
    return t;
}

static void values(uint64_t v[FHC_F_COUNT], uint64_t hits, unsigned entries)
{
    fhc_stats st;
    memset(&st, 0, sizeof(st));
    st.hits = hits;
    st.misses = 1;
    st.entries = entries;
    fhc_tally_values(v, &st, 7, 0, 3, 0);
}

START_TEST(sums_live_children)
{
    fhc_tally *t = new_tally(4);
    fhc_tally_slot *a = fhc_tally_claim(t, 100, NULL);
    fhc_tally_slot *b = fhc_tally_claim(t, 101, NULL);
    uint64_t v[FHC_F_COUNT];
    fhc_totals tot;

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_ne(a, b);
    values(v, 10, 2);
    fhc_tally_publish(a, v, FHC_MODE_NOTIFY);
    values(v, 5, 1);
    fhc_tally_publish(b, v, FHC_MODE_MIXED);
    fhc_tally_sum(t, &tot);
    ck_assert_uint_eq(tot.children, 2);
    ck_assert_uint_eq(tot.polling, 1);
    ck_assert_uint_eq(tot.v[FHC_F_HITS], 15);
    ck_assert_uint_eq(tot.v[FHC_F_MISSES], 2);
    ck_assert_uint_eq(tot.v[FHC_F_ENTRIES], 3);
    ck_assert_uint_eq(tot.v[FHC_F_EVENTS], 14);
    ck_assert_uint_eq(tot.v[FHC_F_WATCHES], 6);
    free(t);
}
END_TEST

START_TEST(retired_keeps_counters_not_gauges)
{
    fhc_tally *t = new_tally(2);
    fhc_tally_slot *a = fhc_tally_claim(t, 100, NULL);
    fhc_tally_slot *b;
    uint64_t v[FHC_F_COUNT];
    fhc_totals tot;

    values(v, 10, 4);
    fhc_tally_publish(a, v, FHC_MODE_NOTIFY);
    fhc_tally_retire(t, a);
    fhc_tally_sum(t, &tot);
    ck_assert_uint_eq(tot.children, 0);
    ck_assert_uint_eq(tot.exited, 1);
    ck_assert_uint_eq(tot.v[FHC_F_HITS], 10);
    ck_assert_uint_eq(tot.v[FHC_F_ENTRIES], 0);
    /* The freed row is reused and starts from zero. */
    b = fhc_tally_claim(t, 102, NULL);
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(b->v[FHC_F_HITS], 0);
    values(v, 1, 1);
    fhc_tally_publish(b, v, FHC_MODE_POLL);
    fhc_tally_sum(t, &tot);
    ck_assert_uint_eq(tot.v[FHC_F_HITS], 11);
    ck_assert_uint_eq(tot.v[FHC_F_ENTRIES], 1);
    ck_assert_uint_eq(tot.polling, 1);
    free(t);
}
END_TEST

START_TEST(full_table_reclaims_only_dead_rows)
{
    fhc_tally *t = new_tally(2);
    fhc_tally_slot *a = fhc_tally_claim(t, 100, NULL);
    fhc_tally_slot *c;
    uint64_t v[FHC_F_COUNT];
    fhc_totals tot;

    ck_assert_ptr_nonnull(fhc_tally_claim(t, 101, NULL));
    ck_assert_ptr_null(fhc_tally_claim(t, 102, NULL));
    dead_pid = 0;
    ck_assert_ptr_null(fhc_tally_claim(t, 102, alive_unless_dead));
    /* 100 was killed without retiring: its counters are kept. */
    values(v, 9, 3);
    fhc_tally_publish(a, v, FHC_MODE_NOTIFY);
    dead_pid = 100;
    c = fhc_tally_claim(t, 102, alive_unless_dead);
    ck_assert_ptr_eq(c, a);
    ck_assert_int_eq(c->pid, 102);
    fhc_tally_sum(t, &tot);
    ck_assert_uint_eq(tot.children, 2);
    ck_assert_uint_eq(tot.exited, 1);
    ck_assert_uint_eq(tot.v[FHC_F_HITS], 9);
    ck_assert_uint_eq(tot.v[FHC_F_ENTRIES], 0);
    free(t);
}
END_TEST

START_TEST(names_cover_every_field)
{
    int i;
    for (i = 0; i < FHC_F_COUNT; i++) {
        ck_assert_ptr_nonnull(fhc_field_names[i]);
        ck_assert_int_gt((int)strlen(fhc_field_names[i]), 0);
    }
    ck_assert_str_eq(fhc_field_names[FHC_F_ENTRIES], "Entries");
    ck_assert_str_eq(fhc_mode_name(FHC_MODE_NOTIFY, "inotify"), "inotify");
    ck_assert_str_eq(fhc_mode_name(FHC_MODE_MIXED, "inotify"), "notify+poll");
}
END_TEST

static Suite *tally_suite(void)
{
    Suite *su = suite_create("fhc_tally");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, sums_live_children);
    tcase_add_test(tc, retired_keeps_counters_not_gauges);
    tcase_add_test(tc, full_table_reclaims_only_dead_rows);
    tcase_add_test(tc, names_cover_every_field);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(tally_suite());
}
