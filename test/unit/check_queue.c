/* Unit tests: listener -> worker hand-off with admission (rp_queue.c). */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "rp_queue.h"

static void wait_until_idle(rp_queue *q, int n)
{
    int i;
    for (i = 0; i < 2000 && rp_queue_idle_workers(q) < n; i++) {
        usleep(1000);
    }
}

typedef struct {
    rp_queue *q;
    int served;
    uintptr_t sum;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    void *conn, *pool, *recycled = NULL;

    while (rp_queue_pop(w->q, recycled, &conn, &pool) == RP_QUEUE_OK) {
        w->served++;
        w->sum += (uintptr_t)conn;
        recycled = pool;
    }
    return NULL;
}

START_TEST(pop_returns_items_in_order)
{
    rp_queue *q = rp_queue_create(4);
    pthread_t t;
    worker_arg w = { q, 0, 0 };

    pthread_create(&t, NULL, worker, &w);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)5, (void *)1), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)7, (void *)2), RP_QUEUE_OK);
    wait_until_idle(q, 1);
    rp_queue_terminate(q);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.served, 2);
    ck_assert_int_eq(w.sum, 12);
    rp_queue_destroy(q);
}
END_TEST

typedef struct {
    rp_queue *q;
    volatile int passed;
} waiter_arg;

static void *waiter(void *p)
{
    waiter_arg *a = p;
    a->passed = rp_queue_wait_for_idler(a->q) == RP_QUEUE_OK ? 1 : 2;
    return NULL;
}

/* With no idle worker, the listener must not be admitted. */
START_TEST(no_admission_without_idle_worker)
{
    rp_queue *q = rp_queue_create(2);
    pthread_t t, wt;
    waiter_arg a = { q, 0 };
    worker_arg w = { q, 0, 0 };

    pthread_create(&t, NULL, waiter, &a);
    usleep(50000);
    ck_assert_int_eq(a.passed, 0);
    pthread_create(&wt, NULL, worker, &w);
    pthread_join(t, NULL);
    ck_assert_int_eq(a.passed, 1);
    rp_queue_terminate(q);
    pthread_join(wt, NULL);
    rp_queue_destroy(q);
}
END_TEST

/* A worker that is busy with its item must not count as idle: one idle
 * worker admits exactly one connection. */
static volatile int release_worker;

static void *slow_worker(void *p)
{
    worker_arg *w = p;
    void *conn, *pool;

    while (rp_queue_pop(w->q, NULL, &conn, &pool) == RP_QUEUE_OK) {
        w->served++;
        while (!release_worker) {
            usleep(1000);
        }
    }
    return NULL;
}

START_TEST(one_idler_admits_one_connection)
{
    rp_queue *q = rp_queue_create(2);
    pthread_t wt, lt;
    worker_arg w = { q, 0, 0 };
    waiter_arg a = { q, 0 };

    release_worker = 0;
    pthread_create(&wt, NULL, slow_worker, &w);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)1, NULL), RP_QUEUE_OK);
    pthread_create(&lt, NULL, waiter, &a);
    usleep(50000);
    ck_assert_int_eq(a.passed, 0);      /* the only worker is busy */
    release_worker = 1;
    pthread_join(lt, NULL);
    ck_assert_int_eq(a.passed, 1);      /* admitted once it is idle again */
    rp_queue_terminate(q);
    pthread_join(wt, NULL);
    ck_assert_int_eq(w.served, 1);
    rp_queue_destroy(q);
}
END_TEST

START_TEST(terminate_drains_before_closing)
{
    rp_queue *q = rp_queue_create(3);
    void *conn, *pool;

    ck_assert_int_eq(rp_queue_push(q, (void *)1, NULL), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)2, NULL), RP_QUEUE_OK);
    rp_queue_terminate(q);
    ck_assert_int_eq(rp_queue_pop(q, NULL, &conn, &pool), RP_QUEUE_OK);
    ck_assert_ptr_eq(conn, (void *)1);
    ck_assert_int_eq(rp_queue_pop(q, NULL, &conn, &pool), RP_QUEUE_OK);
    ck_assert_ptr_eq(conn, (void *)2);
    ck_assert_int_eq(rp_queue_pop(q, NULL, &conn, &pool), RP_QUEUE_CLOSED);
    rp_queue_destroy(q);
}
END_TEST

/* A stop closes admission first: the listener, which may already be past
 * admission, can still hand over, and an idle worker must still be there to
 * serve it.  Only terminate releases workers; a hand-over after it fails
 * rather than being lost. */
START_TEST(closed_intake_keeps_workers_for_late_handover)
{
    rp_queue *q = rp_queue_create(2);
    pthread_t t;
    worker_arg w = { q, 0, 0 };

    pthread_create(&t, NULL, worker, &w);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    rp_queue_close_intake(q);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_CLOSED);
    usleep(20000);      /* a worker leaving now would lose the next item */
    ck_assert_int_eq(rp_queue_push(q, (void *)9, NULL), RP_QUEUE_OK);
    wait_until_idle(q, 1);
    rp_queue_terminate(q);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.served, 1);
    ck_assert_int_eq(rp_queue_push(q, (void *)3, NULL), RP_QUEUE_CLOSED);
    rp_queue_destroy(q);
}
END_TEST

START_TEST(push_beyond_capacity_fails)
{
    rp_queue *q = rp_queue_create(1);

    ck_assert_int_eq(rp_queue_push(q, (void *)1, NULL), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)2, NULL), RP_QUEUE_ERROR);
    ck_assert_int_eq(rp_queue_length(q), 1);
    rp_queue_destroy(q);
}
END_TEST

START_TEST(pools_are_recycled_lifo)
{
    rp_queue *q = rp_queue_create(4);
    void *conn, *pool;

    ck_assert_ptr_null(rp_queue_take_pool(q));
    rp_queue_push(q, (void *)1, NULL);
    rp_queue_pop(q, (void *)0xa, &conn, &pool);
    rp_queue_push(q, (void *)2, NULL);
    rp_queue_pop(q, (void *)0xb, &conn, &pool);
    ck_assert_ptr_eq(rp_queue_take_pool(q), (void *)0xb);
    ck_assert_ptr_eq(rp_queue_take_pool(q), (void *)0xa);
    ck_assert_ptr_null(rp_queue_take_pool(q));
    rp_queue_destroy(q);
}
END_TEST

/* Many items through several workers: none lost, none duplicated. */
START_TEST(concurrent_handoff_loses_nothing)
{
    enum { WORKERS = 4, ITEMS = 20000 };
    rp_queue *q = rp_queue_create(WORKERS);
    pthread_t t[WORKERS];
    worker_arg w[WORKERS];
    uintptr_t i, expect = 0, sum = 0;
    int served = 0, k;

    for (k = 0; k < WORKERS; k++) {
        w[k] = (worker_arg){ q, 0, 0 };
        pthread_create(&t[k], NULL, worker, &w[k]);
    }
    for (i = 1; i <= ITEMS; i++) {
        ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
        ck_assert_int_eq(rp_queue_push(q, (void *)i, NULL), RP_QUEUE_OK);
        expect += i;
    }
    wait_until_idle(q, WORKERS);
    rp_queue_terminate(q);
    for (k = 0; k < WORKERS; k++) {
        pthread_join(t[k], NULL);
        served += w[k].served;
        sum += w[k].sum;
    }
    ck_assert_int_eq(served, ITEMS);
    ck_assert(sum == expect);
    rp_queue_destroy(q);
}
END_TEST

static Suite *queue_suite(void)
{
    Suite *su = suite_create("rp_queue");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, pop_returns_items_in_order);
    tcase_add_test(tc, no_admission_without_idle_worker);
    tcase_add_test(tc, one_idler_admits_one_connection);
    tcase_add_test(tc, terminate_drains_before_closing);
    tcase_add_test(tc, closed_intake_keeps_workers_for_late_handover);
    tcase_add_test(tc, push_beyond_capacity_fails);
    tcase_add_test(tc, pools_are_recycled_lifo);
    tcase_add_test(tc, concurrent_handoff_loses_nothing);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(queue_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
