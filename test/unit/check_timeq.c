/* Unit tests: timeout queues for parked connections (rp_timeq.c). */
#include <check.h>
#include <stdlib.h>

#include "rp_timeq.h"
#include "check_run.h"

START_TEST(expires_in_arrival_order)
{
    rp_timeq q;
    rp_timer a, b, c;

    rp_timeq_init(&q, 100);
    rp_timer_init(&a);
    rp_timer_init(&b);
    rp_timer_init(&c);
    rp_timeq_append(&q, &a, 10);
    rp_timeq_append(&q, &b, 20);
    rp_timeq_append(&q, &c, 30);
    ck_assert_int_eq(q.count, 3);
    ck_assert_int_eq(rp_timeq_next_expiry(&q), 110);
    ck_assert_ptr_null(rp_timeq_pop_expired(&q, 109));
    ck_assert_ptr_eq(rp_timeq_pop_expired(&q, 125), &a);
    ck_assert_ptr_eq(rp_timeq_pop_expired(&q, 125), &b);
    ck_assert_ptr_null(rp_timeq_pop_expired(&q, 125));
    ck_assert_int_eq(rp_timeq_next_expiry(&q), 130);
    ck_assert(!rp_timer_queued(&a));
    ck_assert(rp_timer_queued(&c));
}
END_TEST

START_TEST(remove_from_middle_and_twice)
{
    rp_timeq q;
    rp_timer t[3];
    int i;

    rp_timeq_init(&q, 5);
    for (i = 0; i < 3; i++) {
        rp_timer_init(&t[i]);
        rp_timeq_append(&q, &t[i], i);
    }
    rp_timer_remove(&t[1]);
    rp_timer_remove(&t[1]);         /* not queued any more: no effect */
    ck_assert_int_eq(q.count, 2);
    ck_assert_ptr_eq(rp_timeq_pop_expired(&q, 100), &t[0]);
    ck_assert_ptr_eq(rp_timeq_pop_expired(&q, 100), &t[2]);
    ck_assert_ptr_null(rp_timeq_first(&q));
    ck_assert_int_eq(rp_timeq_next_expiry(&q), -1);
    /* A removed timer can be queued again. */
    rp_timeq_append(&q, &t[1], 50);
    ck_assert_int_eq(rp_timeq_next_expiry(&q), 55);
}
END_TEST

START_TEST(set_keeps_one_queue_per_timeout)
{
    rp_timeqs s = { { 0 }, 0 };
    rp_timeq *five = rp_timeqs_get(&s, 5), *two = rp_timeqs_get(&s, 2);
    rp_timer a, b;

    ck_assert_ptr_nonnull(five);
    ck_assert_ptr_ne(five, two);
    ck_assert_ptr_eq(rp_timeqs_get(&s, 5), five);
    ck_assert_int_eq(rp_timeqs_next_expiry(&s), -1);
    rp_timer_init(&a);
    rp_timer_init(&b);
    rp_timeq_append(five, &a, 0);
    rp_timeq_append(two, &b, 1);
    ck_assert_int_eq(rp_timeqs_next_expiry(&s), 3);
    ck_assert_int_eq(rp_timeqs_count(&s), 2);
    rp_timer_remove(&b);
    ck_assert_int_eq(rp_timeqs_next_expiry(&s), 5);
    rp_timeqs_free(&s);
}
END_TEST

START_TEST(full_set_falls_back_to_nearest)
{
    rp_timeqs s = { { 0 }, 0 };
    int i;

    ck_assert_ptr_null(rp_timeqs_nearest(&s, 7));
    for (i = 1; i <= RP_TIMEQS_MAX; i++) {
        ck_assert_ptr_nonnull(rp_timeqs_get(&s, i * 10));
    }
    ck_assert_ptr_null(rp_timeqs_get(&s, 15));
    ck_assert_int_eq(rp_timeqs_nearest(&s, 15)->timeout, 10);
    ck_assert_int_eq(rp_timeqs_nearest(&s, 5)->timeout, 10);
    ck_assert_int_eq(rp_timeqs_nearest(&s, 100000)->timeout, RP_TIMEQS_MAX * 10);
    rp_timeqs_free(&s);
}
END_TEST

/* Timers leave the heap earliest first, whatever order they came and
 * whichever were removed. */
START_TEST(deadline_heap_orders_and_removes)
{
    rp_dheap h = { NULL, 0, 0 };
    rp_dtimer t[200];
    rp_usec last = -1;
    int i, left = 0;

    for (i = 0; i < 200; i++) {
        rp_dtimer_init(&t[i]);
        ck_assert(rp_dheap_add(&h, &t[i], (i * 7919) % 1000));
    }
    for (i = 0; i < 200; i += 3) {
        rp_dheap_remove(&h, &t[i]);
        rp_dheap_remove(&h, &t[i]);     /* twice: no effect */
        ck_assert_int_eq(t[i].idx, -1);
    }
    for (i = 0; i < 200; i++) {
        left += i % 3 != 0;
    }
    ck_assert_int_eq(h.n, left);
    while (rp_dheap_first(&h)) {
        rp_dtimer *f = rp_dheap_first(&h);
        ck_assert(f->expires >= last);
        last = f->expires;
        rp_dheap_remove(&h, f);
        left--;
    }
    ck_assert_int_eq(left, 0);
    /* Re-queued with a new deadline. */
    ck_assert(rp_dheap_add(&h, &t[5], 42));
    ck_assert(rp_dheap_add(&h, &t[6], 7));
    ck_assert_ptr_eq(rp_dheap_first(&h), &t[6]);
    rp_dheap_free(&h);
}
END_TEST

static Suite *timeq_suite(void)
{
    Suite *su = suite_create("rp_timeq");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, expires_in_arrival_order);
    tcase_add_test(tc, remove_from_middle_and_twice);
    tcase_add_test(tc, set_keeps_one_queue_per_timeout);
    tcase_add_test(tc, full_set_falls_back_to_nearest);
    tcase_add_test(tc, deadline_heap_orders_and_removes);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(timeq_suite());
}
