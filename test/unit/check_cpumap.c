/* Unit tests: CPUs of each bucket under ReusePortCPUAffinity (rp_cpumap.c). */
#include <check.h>
#include <stdlib.h>

#include "rp_cpumap.h"
#include "check_run.h"

static rp_cpumap m;

/* Every connection a CPU steers goes to a bucket that CPU serves, and every
 * bucket is reachable and has a CPU. */
static void assert_consistent(void)
{
    int i, b, h, reached[64] = { 0 }, has_cpu[64] = { 0 };

    for (i = 0; i < m.ncpu; i++) {
        for (h = 0; h < 64; h++) {
            b = rp_cpumap_bucket_for(&m, m.cpu[i], (uint32_t)h * 2654435761u);
            ck_assert_int_ge(b, 0);
            ck_assert_int_lt(b, m.nb);
            ck_assert_msg(rp_cpumap_serves(&m, i, b),
                          "cpu index %d steers to bucket %d it does not serve", i, b);
            reached[b] = 1;
        }
        for (b = 0; b < m.nb; b++) {
            has_cpu[b] |= rp_cpumap_serves(&m, i, b);
        }
    }
    for (b = 0; b < m.nb; b++) {
        ck_assert_msg(reached[b], "bucket %d gets no connection", b);
        ck_assert_msg(has_cpu[b], "bucket %d has no CPU", b);
    }
}

START_TEST(one_bucket_per_cpu)
{
    int cpus[] = { 0, 1, 2, 3 };

    ck_assert_int_eq(rp_cpumap_init(&m, cpus, 4, 4), 0);
    ck_assert_int_eq(rp_cpumap_bucket_for(&m, 2, 12345), 2);
    ck_assert_int_eq(rp_cpumap_bucket_for(&m, 3, 1), 3);
    assert_consistent();
}
END_TEST

START_TEST(fewer_buckets_than_cpus_share_cpus_round_robin)
{
    int cpus[] = { 0, 1, 2, 3, 4, 5 };

    ck_assert_int_eq(rp_cpumap_init(&m, cpus, 6, 4), 0);
    ck_assert_int_eq(rp_cpumap_bucket_for(&m, 5, 7), 1);
    ck_assert(rp_cpumap_serves(&m, 1, 1) && rp_cpumap_serves(&m, 5, 1));
    ck_assert(!rp_cpumap_serves(&m, 2, 1));
    assert_consistent();
}
END_TEST

START_TEST(more_buckets_than_cpus_split_by_hash)
{
    int cpus[] = { 0, 1 };
    int seen[5] = { 0 }, h;

    ck_assert_int_eq(rp_cpumap_init(&m, cpus, 2, 5), 0);
    for (h = 0; h < 100; h++) {
        seen[rp_cpumap_bucket_for(&m, 0, (uint32_t)h)]++;
    }
    /* CPU 0 serves buckets 0, 2, 4, about a third each. */
    ck_assert_int_eq(seen[1] + seen[3], 0);
    ck_assert(seen[0] > 25 && seen[2] > 25 && seen[4] > 25);
    assert_consistent();
}
END_TEST

START_TEST(sparse_unsorted_cpu_ids)
{
    int cpus[] = { 7, 3 };             /* e.g. taskset -c 3,7 */

    ck_assert_int_eq(rp_cpumap_init(&m, cpus, 2, 2), 0);
    ck_assert_int_eq(m.cpu[0], 3);
    ck_assert_int_eq(rp_cpumap_bucket_for(&m, 3, 99), 0);
    ck_assert_int_eq(rp_cpumap_bucket_for(&m, 7, 99), 1);
    /* A CPU outside the set (another cgroup's softirq): by hash. */
    ck_assert_int_eq(rp_cpumap_bucket_for(&m, 5, 8), 0);
    ck_assert_int_eq(rp_cpumap_bucket_for(&m, 5, 9), 1);
    assert_consistent();
}
END_TEST

START_TEST(refuses_what_it_cannot_map)
{
    int cpus[1] = { 0 };

    ck_assert_int_eq(rp_cpumap_init(&m, cpus, 0, 2), -1);
    ck_assert_int_eq(rp_cpumap_init(&m, cpus, 1, 0), -1);
    ck_assert_int_eq(rp_cpumap_init(&m, cpus, RP_CPUMAP_MAX + 1, 2), -1);
}
END_TEST

static Suite *cpumap_suite(void)
{
    Suite *su = suite_create("rp_cpumap");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, one_bucket_per_cpu);
    tcase_add_test(tc, fewer_buckets_than_cpus_share_cpus_round_robin);
    tcase_add_test(tc, more_buckets_than_cpus_split_by_hash);
    tcase_add_test(tc, sparse_unsorted_cpu_ids);
    tcase_add_test(tc, refuses_what_it_cannot_map);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(cpumap_suite());
}
