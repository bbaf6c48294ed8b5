/* Unit tests: the stock of idle connection pools (rp_stock.c). */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "rp_stock.h"
#include "check_run.h"

START_TEST(take_give_lifo_and_limit)
{
    rp_stock *st = rp_stock_create(3);

    ck_assert_ptr_null(rp_stock_take(st));
    ck_assert_int_eq(rp_stock_give(st, (void *)0xa), 1);
    ck_assert_int_eq(rp_stock_give(st, (void *)0xb), 1);
    ck_assert_int_eq(rp_stock_give(st, (void *)0xc), 1);
    ck_assert_int_eq(rp_stock_give(st, (void *)0xd), 0);   /* full */
    ck_assert_ptr_eq(rp_stock_take(st), (void *)0xc);
    ck_assert_int_eq(rp_stock_give(st, (void *)0xf), 1);   /* room again */
    ck_assert_int_eq(rp_stock_give(st, (void *)0x10), 0);
    ck_assert_ptr_eq(rp_stock_take(st), (void *)0xf);
    ck_assert_ptr_eq(rp_stock_take(st), (void *)0xb);
    ck_assert_ptr_eq(rp_stock_take(st), (void *)0xa);
    ck_assert_ptr_null(rp_stock_take(st));
    rp_stock_destroy(st);
}
END_TEST

START_TEST(empty_stock_keeps_nothing)
{
    rp_stock *st = rp_stock_create(0);

    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(rp_stock_give(st, (void *)0xa), 0);
    ck_assert_ptr_null(rp_stock_take(st));
    rp_stock_destroy(st);
    ck_assert_ptr_null(rp_stock_create(-1));
}
END_TEST

/* Several threads take a pool (or "create" one) and give it back: every
 * pool given and kept comes out exactly once, and never more than max are
 * kept. */
enum { THREADS = 4, ROUNDS = 20000, STOCK = 3 };

typedef struct {
    rp_stock *st;
    uintptr_t base;
    int created;        /* made here, less those destroyed here */
    uintptr_t serial;   /* names made here: never reused (a pool made here
                           may be destroyed by another thread) */
} churn_arg;

static void *churn(void *p)
{
    churn_arg *a = p;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        void *pool = rp_stock_take(a->st);
        if (!pool) {
            pool = (void *)(a->base + ++a->serial);
            a->created++;
        }
        if (!rp_stock_give(a->st, pool)) {
            a->created--;       /* "destroyed": it must never come back */
        }
    }
    return NULL;
}

START_TEST(concurrent_use_loses_and_duplicates_nothing)
{
    rp_stock *st = rp_stock_create(STOCK);
    pthread_t t[THREADS];
    churn_arg a[THREADS];
    void *left[STOCK + 1];
    int k, n = 0, alive = 0, i, j;

    for (k = 0; k < THREADS; k++) {
        a[k] = (churn_arg){ st, (uintptr_t)(k + 1) << 24, 0, 0 };
        pthread_create(&t[k], NULL, churn, &a[k]);
    }
    for (k = 0; k < THREADS; k++) {
        pthread_join(t[k], NULL);
        alive += a[k].created;
    }
    while (n <= STOCK && (left[n] = rp_stock_take(st)) != NULL) {
        n++;
    }
    /* Every pool still alive is in the stock, once. */
    ck_assert_int_le(n, STOCK);
    ck_assert_int_eq(n, alive);
    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            ck_assert_ptr_ne(left[i], left[j]);
        }
    }
    rp_stock_destroy(st);
}
END_TEST

static Suite *stock_suite(void)
{
    Suite *su = suite_create("rp_stock");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, take_give_lifo_and_limit);
    tcase_add_test(tc, empty_stock_keeps_nothing);
    tcase_add_test(tc, concurrent_use_loses_and_duplicates_nothing);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(stock_suite());
}
