/* Unit tests: listener -> worker hand-off with admission (rp_queue.c). */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "rp_queue.h"

/* Shared flags and counters between the test and its threads. */
#define LOAD(x)     __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define INC(x)      __atomic_add_fetch(&(x), 1, __ATOMIC_SEQ_CST)

/* Polling bound: 5 s in steps of 1 ms. */
#define POLL_STEPS 5000

static int wait_until_idle(rp_queue *q, int n)
{
    int i;
    for (i = 0; i < POLL_STEPS && rp_queue_idle_workers(q) != n; i++) {
        usleep(1000);
    }
    return rp_queue_idle_workers(q);
}

static int wait_until_ge(int *counter, int n)
{
    int i;
    for (i = 0; i < POLL_STEPS && LOAD(*counter) < n; i++) {
        usleep(1000);
    }
    return LOAD(*counter);
}

/* A worker records what it served, in order (the first MAX_SEEN). */
enum { MAX_SEEN = 64 };

typedef struct {
    rp_queue *q;
    int served;                 /* atomic */
    uintptr_t sum;
    uintptr_t seen[MAX_SEEN];
    int *marks;                 /* optional: marks[item]++ (atomic) */
    int out_of_order;           /* items not increasing for this worker */
    uintptr_t last;
    int gate;                   /* atomic, for gated_worker */
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    void *item;

    while (rp_queue_pop(w->q, &item) == RP_QUEUE_OK) {
        uintptr_t v = (uintptr_t)item;
        int n = LOAD(w->served);

        if (n < MAX_SEEN) {
            w->seen[n] = v;
        }
        if (w->marks) {
            INC(w->marks[v]);
        }
        if (v <= w->last) {
            w->out_of_order++;
        }
        w->last = v;
        w->sum += v;
        INC(w->served);
    }
    return NULL;
}

START_TEST(pop_returns_items_in_order)
{
    rp_queue *q = rp_queue_create(4, 0);
    pthread_t t;
    worker_arg w = { .q = q };

    ck_assert_ptr_nonnull(q);
    pthread_create(&t, NULL, worker, &w);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)5), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)7), RP_QUEUE_OK);
    /* Parked connections are queued without admission. */
    ck_assert_int_eq(rp_queue_push(q, (void *)8), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)11), RP_QUEUE_OK);
    ck_assert_int_eq(wait_until_ge(&w.served, 4), 4);
    ck_assert_int_eq(wait_until_idle(q, 1), 1);
    rp_queue_terminate(q);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.served, 4);
    ck_assert_uint_eq(w.seen[0], 5);
    ck_assert_uint_eq(w.seen[1], 7);
    ck_assert_uint_eq(w.seen[2], 8);
    ck_assert_uint_eq(w.seen[3], 11);
    ck_assert_uint_eq(w.sum, 31);
    ck_assert_int_eq(rp_queue_length(q), 0);
    ck_assert_int_eq(rp_queue_idle_workers(q), 0);
    rp_queue_destroy(q);
}
END_TEST

typedef struct {
    rp_queue *q;
    int passed;                 /* atomic: 0 waiting, 1 OK, 2 CLOSED */
} waiter_arg;

static void *waiter(void *p)
{
    waiter_arg *a = p;
    STORE(a->passed, rp_queue_wait_for_idler(a->q) == RP_QUEUE_OK ? 1 : 2);
    return NULL;
}

/* With no idle worker, the listener must not be admitted. */
START_TEST(no_admission_without_idle_worker)
{
    rp_queue *q = rp_queue_create(2, 0);
    pthread_t t, wt;
    waiter_arg a = { q, 0 };
    worker_arg w = { .q = q };

    ck_assert_int_eq(rp_queue_has_idler(q), 0);
    pthread_create(&t, NULL, waiter, &a);
    usleep(50000);      /* give a wrong admission the time to happen */
    ck_assert_int_eq(LOAD(a.passed), 0);
    ck_assert_int_eq(rp_queue_has_idler(q), 0);
    pthread_create(&wt, NULL, worker, &w);
    pthread_join(t, NULL);
    ck_assert_int_eq(a.passed, 1);
    ck_assert_int_eq(rp_queue_has_idler(q), 1);
    ck_assert_int_eq(rp_queue_idle_workers(q), 1);
    rp_queue_terminate(q);
    pthread_join(wt, NULL);
    ck_assert_int_eq(w.served, 0);
    rp_queue_destroy(q);
}
END_TEST

/* A worker that, after its n-th item, stays busy until gate >= n (bounded
 * at a few seconds so that a failing test cannot hang). */
static void *gated_worker(void *p)
{
    worker_arg *w = p;
    void *item;
    int n, i;

    while (rp_queue_pop(w->q, &item) == RP_QUEUE_OK) {
        n = LOAD(w->served);
        if (n < MAX_SEEN) {
            w->seen[n] = (uintptr_t)item;
        }
        n = INC(w->served);
        for (i = 0; i < POLL_STEPS && LOAD(w->gate) < n; i++) {
            usleep(1000);
        }
    }
    return NULL;
}

/* A worker that is busy with its item must not count as idle: one idle
 * worker admits exactly one connection. */
START_TEST(one_idler_admits_one_connection)
{
    rp_queue *q = rp_queue_create(2, 0);
    pthread_t wt, lt;
    worker_arg w = { .q = q };
    waiter_arg a = { q, 0 };

    pthread_create(&wt, NULL, gated_worker, &w);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_has_idler(q), 1);
    ck_assert_int_eq(rp_queue_push(q, (void *)1), RP_QUEUE_OK);
    /* The idler is promised to that item, taken or not. */
    ck_assert_int_eq(rp_queue_has_idler(q), 0);
    pthread_create(&lt, NULL, waiter, &a);
    ck_assert_int_eq(wait_until_ge(&w.served, 1), 1);
    usleep(50000);
    ck_assert_int_eq(LOAD(a.passed), 0);        /* the only worker is busy */
    ck_assert_int_eq(rp_queue_has_idler(q), 0);
    STORE(w.gate, 1);
    pthread_join(lt, NULL);
    ck_assert_int_eq(a.passed, 1);      /* admitted once it is idle again */
    ck_assert_int_eq(rp_queue_has_idler(q), 1);
    rp_queue_terminate(q);
    pthread_join(wt, NULL);
    ck_assert_int_eq(w.served, 1);
    rp_queue_destroy(q);
}
END_TEST

START_TEST(terminate_drains_before_closing)
{
    rp_queue *q = rp_queue_create(3, 0);
    void *item = NULL;

    ck_assert_int_eq(rp_queue_push(q, (void *)1), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)2), RP_QUEUE_OK);
    rp_queue_terminate(q);
    ck_assert_int_eq(rp_queue_length(q), 2);
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_OK);
    ck_assert_ptr_eq(item, (void *)1);
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_OK);
    ck_assert_ptr_eq(item, (void *)2);
    item = (void *)0x77;
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_CLOSED);
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_CLOSED);
    ck_assert_int_eq(rp_queue_length(q), 0);
    ck_assert_int_eq(rp_queue_idle_workers(q), 0);
    rp_queue_destroy(q);
}
END_TEST

/* Terminate also wakes workers already blocked in pop. */
START_TEST(terminate_releases_blocked_workers)
{
    enum { WORKERS = 3 };
    rp_queue *q = rp_queue_create(WORKERS, 0);
    pthread_t t[WORKERS];
    worker_arg w[WORKERS];
    int k;

    for (k = 0; k < WORKERS; k++) {
        w[k] = (worker_arg){ .q = q };
        pthread_create(&t[k], NULL, worker, &w[k]);
    }
    ck_assert_int_eq(wait_until_idle(q, WORKERS), WORKERS);
    rp_queue_terminate(q);
    for (k = 0; k < WORKERS; k++) {
        pthread_join(t[k], NULL);
        ck_assert_int_eq(w[k].served, 0);
    }
    ck_assert_int_eq(rp_queue_idle_workers(q), 0);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_CLOSED);
    rp_queue_destroy(q);
}
END_TEST

/* A stop closes admission first: the listener, which may already be past
 * admission, can still hand over, and an idle worker must still be there to
 * serve it.  Only terminate releases workers; a hand-over after it fails
 * rather than being lost. */
START_TEST(closed_intake_keeps_workers_for_late_handover)
{
    rp_queue *q = rp_queue_create(2, 0);
    pthread_t t;
    worker_arg w = { .q = q };

    pthread_create(&t, NULL, worker, &w);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    rp_queue_close_intake(q);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_CLOSED);
    usleep(20000);      /* a worker leaving now would lose the next item */
    ck_assert_int_eq(rp_queue_idle_workers(q), 1);
    ck_assert_int_eq(rp_queue_push(q, (void *)9), RP_QUEUE_OK);
    ck_assert_int_eq(wait_until_ge(&w.served, 1), 1);
    ck_assert_int_eq(wait_until_idle(q, 1), 1);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_CLOSED);
    rp_queue_terminate(q);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.served, 1);
    ck_assert_uint_eq(w.seen[0], 9);
    ck_assert_int_eq(rp_queue_push(q, (void *)3), RP_QUEUE_CLOSED);
    ck_assert_int_eq(rp_queue_length(q), 0);
    rp_queue_destroy(q);
}
END_TEST

/* A blocking acceptor waiting for an idler is released by close_intake. */
START_TEST(close_intake_releases_waiting_acceptor)
{
    rp_queue *q = rp_queue_create(1, 0);
    pthread_t t;
    waiter_arg a = { q, 0 };
    int i;

    pthread_create(&t, NULL, waiter, &a);
    usleep(20000);
    ck_assert_int_eq(LOAD(a.passed), 0);
    rp_queue_close_intake(q);
    for (i = 0; i < POLL_STEPS && !LOAD(a.passed); i++) {
        usleep(1000);
    }
    ck_assert_int_eq(LOAD(a.passed), 2);
    pthread_join(t, NULL);
    /* Intake closed, not terminated: pushes are still taken. */
    ck_assert_int_eq(rp_queue_push(q, (void *)4), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_length(q), 1);
    rp_queue_destroy(q);
}
END_TEST

START_TEST(push_after_terminate_is_closed)
{
    rp_queue *q = rp_queue_create(2, 0);
    void *item = NULL;

    ck_assert_int_eq(rp_queue_push(q, (void *)1), RP_QUEUE_OK);
    rp_queue_terminate(q);
    ck_assert_int_eq(rp_queue_push(q, (void *)2), RP_QUEUE_CLOSED);
    ck_assert_int_eq(rp_queue_push(q, (void *)3), RP_QUEUE_CLOSED);
    ck_assert_int_eq(rp_queue_length(q), 1);    /* rejected items not kept */
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_CLOSED);
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_OK);
    ck_assert_ptr_eq(item, (void *)1);
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_CLOSED);
    rp_queue_destroy(q);

    /* Also on an empty queue, and after close_intake then terminate. */
    q = rp_queue_create(1, 0);
    rp_queue_close_intake(q);
    ck_assert_int_eq(rp_queue_push(q, (void *)5), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_OK);
    ck_assert_ptr_eq(item, (void *)5);
    rp_queue_terminate(q);
    ck_assert_int_eq(rp_queue_push(q, (void *)6), RP_QUEUE_CLOSED);
    ck_assert_int_eq(rp_queue_length(q), 0);
    ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_CLOSED);
    rp_queue_destroy(q);
}
END_TEST

/* Pops everything queued (single thread: the queue must be non-empty or
 * terminated) and checks it is first..last in order. */
static void pop_expect_range(rp_queue *q, uintptr_t first, uintptr_t last)
{
    uintptr_t v;
    void *item;

    for (v = first; v <= last; v++) {
        item = NULL;
        ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_OK);
        ck_assert_uint_eq((uintptr_t)item, v);
    }
}

START_TEST(push_beyond_capacity_grows)
{
    rp_queue *q = rp_queue_create(1, 0);
    uintptr_t i;

    for (i = 1; i <= 100; i++) {
        ck_assert_int_eq(rp_queue_push(q, (void *)i), RP_QUEUE_OK);
        ck_assert_int_eq(rp_queue_length(q), (int)i);
    }
    pop_expect_range(q, 1, 100);
    ck_assert_int_eq(rp_queue_length(q), 0);
    rp_queue_terminate(q);
    ck_assert_int_eq(rp_queue_pop(q, &(void *){ NULL }), RP_QUEUE_CLOSED);
    rp_queue_destroy(q);
}
END_TEST

/* Growth while the ring has wrapped (head not at 0, items across the end
 * of the array) must keep FIFO order. */
START_TEST(grow_keeps_order_when_wrapped)
{
    enum { CAP = 4 };
    rp_queue *q = rp_queue_create(CAP, 0);
    uintptr_t i;

    /* head moves to 3: push 1..3, pop 1..3. */
    for (i = 1; i <= 3; i++) {
        ck_assert_int_eq(rp_queue_push(q, (void *)i), RP_QUEUE_OK);
    }
    pop_expect_range(q, 1, 3);
    ck_assert_int_eq(rp_queue_length(q), 0);
    /* 4 fills the last slot, 5..7 wrap to slots 0..2: the ring is full
     * and wrapped; 8..30 make it grow (more than once). */
    for (i = 4; i <= 30; i++) {
        ck_assert_int_eq(rp_queue_push(q, (void *)i), RP_QUEUE_OK);
    }
    ck_assert_int_eq(rp_queue_length(q), 27);
    pop_expect_range(q, 4, 30);
    ck_assert_int_eq(rp_queue_length(q), 0);
    rp_queue_destroy(q);
}
END_TEST

/* Interleaved pushes and pops against a reference counter: growth happens
 * at many head positions of rings of several sizes. */
START_TEST(grow_mixed_push_pop_keeps_order)
{
    rp_queue *q = rp_queue_create(3, 0);
    uintptr_t next_in = 1, next_out = 1;
    int round, k;

    for (round = 0; round < 200; round++) {
        int pushes = 1 + (round * 7) % 11;
        int pops = (round * 5) % 9;

        for (k = 0; k < pushes; k++) {
            ck_assert_int_eq(rp_queue_push(q, (void *)next_in), RP_QUEUE_OK);
            next_in++;
        }
        for (k = 0; k < pops && next_out < next_in; k++) {
            void *item = NULL;
            ck_assert_int_eq(rp_queue_pop(q, &item), RP_QUEUE_OK);
            ck_assert_uint_eq((uintptr_t)item, next_out);
            next_out++;
        }
        ck_assert_int_eq(rp_queue_length(q), (int)(next_in - next_out));
    }
    ck_assert_uint_gt(next_in - next_out, 3);   /* it did have to grow */
    pop_expect_range(q, next_out, next_in - 1);
    ck_assert_int_eq(rp_queue_length(q), 0);
    rp_queue_destroy(q);
}
END_TEST

START_TEST(pools_take_give_lifo_and_limit)
{
    rp_queue *q = rp_queue_create(1, 3);

    ck_assert_ptr_null(rp_queue_take_pool(q));
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0xa), 1);
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0xb), 1);
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0xc), 1);
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0xd), 0);   /* full */
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0xe), 0);
    ck_assert_ptr_eq(rp_queue_take_pool(q), (void *)0xc);
    /* Room for one again. */
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0xf), 1);
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0x10), 0);
    ck_assert_ptr_eq(rp_queue_take_pool(q), (void *)0xf);
    ck_assert_ptr_eq(rp_queue_take_pool(q), (void *)0xb);
    ck_assert_ptr_eq(rp_queue_take_pool(q), (void *)0xa);
    ck_assert_ptr_null(rp_queue_take_pool(q));
    ck_assert_ptr_null(rp_queue_take_pool(q));
    /* Pools are independent of items. */
    ck_assert_int_eq(rp_queue_length(q), 0);
    rp_queue_destroy(q);

    /* A stock of 0 keeps nothing. */
    q = rp_queue_create(1, 0);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(rp_queue_give_pool(q, (void *)0xa), 0);
    ck_assert_ptr_null(rp_queue_take_pool(q));
    rp_queue_destroy(q);
}
END_TEST

/* Pools given and taken from several threads: none lost or duplicated. */
typedef struct {
    rp_queue *q;
    uintptr_t base;
    int kept, rounds;
} pool_arg;

static void *pool_churner(void *p)
{
    pool_arg *a = p;
    int i;

    for (i = 0; i < a->rounds; i++) {
        void *pool = rp_queue_take_pool(a->q);

        if (!pool) {
            pool = (void *)(a->base + (uintptr_t)i);   /* "create" one */
        }
        if (rp_queue_give_pool(a->q, pool)) {
            a->kept++;
        }
    }
    return NULL;
}

START_TEST(pools_concurrent_stock_bounded)
{
    enum { THREADS = 4, ROUNDS = 5000, STOCK = 2 };
    rp_queue *q = rp_queue_create(1, STOCK);
    pthread_t t[THREADS];
    pool_arg a[THREADS];
    void *left[STOCK + 1];
    int k, n = 0, kept = 0;

    for (k = 0; k < THREADS; k++) {
        a[k] = (pool_arg){ q, (uintptr_t)(k + 1) << 20, 0, ROUNDS };
        pthread_create(&t[k], NULL, pool_churner, &a[k]);
    }
    for (k = 0; k < THREADS; k++) {
        pthread_join(t[k], NULL);
        kept += a[k].kept;
    }
    ck_assert_int_ge(kept, STOCK);
    while (n <= STOCK && (left[n] = rp_queue_take_pool(q)) != NULL) {
        n++;
    }
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, STOCK);
    if (n == 2) {
        ck_assert_ptr_ne(left[0], left[1]);
    }
    rp_queue_destroy(q);
}
END_TEST

/* Watch: records each call and the thread it ran in. */
typedef struct {
    int calls;                  /* atomic */
    pthread_t thread;
    int served_then;            /* the worker's count when notified */
    worker_arg *w;
} watch_arg;

static void on_idler(void *baton)
{
    watch_arg *a = baton;

    a->thread = pthread_self();
    if (a->w) {
        a->served_then = LOAD(a->w->served);
    }
    INC(a->calls);
}

START_TEST(watch_without_idler_notifies_once_from_worker)
{
    rp_queue *q = rp_queue_create(2, 0);
    pthread_t t;
    worker_arg w = { .q = q };
    watch_arg a = { 0 };

    ck_assert_int_eq(rp_queue_has_idler_or_watch(q, on_idler, &a), 0);
    usleep(20000);
    ck_assert_int_eq(LOAD(a.calls), 0);     /* nobody idle yet */
    pthread_create(&t, NULL, worker, &w);
    ck_assert_int_eq(wait_until_ge(&a.calls, 1), 1);
    ck_assert(pthread_equal(a.thread, t));  /* called from the worker */
    ck_assert(!pthread_equal(a.thread, pthread_self()));
    ck_assert_int_eq(rp_queue_has_idler(q), 1);

    /* One-shot: the worker becoming idle again does not call it again. */
    ck_assert_int_eq(rp_queue_push(q, (void *)1), RP_QUEUE_OK);
    ck_assert_int_eq(wait_until_ge(&w.served, 1), 1);
    ck_assert_int_eq(wait_until_idle(q, 1), 1);
    ck_assert_int_eq(rp_queue_push(q, (void *)2), RP_QUEUE_OK);
    ck_assert_int_eq(wait_until_ge(&w.served, 2), 2);
    ck_assert_int_eq(wait_until_idle(q, 1), 1);
    usleep(10000);
    ck_assert_int_eq(LOAD(a.calls), 1);

    rp_queue_terminate(q);
    pthread_join(t, NULL);
    ck_assert_int_eq(LOAD(a.calls), 1);
    rp_queue_destroy(q);
}
END_TEST

START_TEST(watch_with_idler_returns_1_and_does_not_arm)
{
    rp_queue *q = rp_queue_create(2, 0);
    pthread_t t, t2;
    worker_arg w = { .q = q }, w2 = { .q = q };
    watch_arg a = { 0 };

    pthread_create(&t, NULL, worker, &w);
    ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_has_idler_or_watch(q, on_idler, &a), 1);
    ck_assert_int_eq(LOAD(a.calls), 0);
    /* Events that would fire an armed watch: the worker idles again after
     * an item, and a second worker becomes idle. */
    ck_assert_int_eq(rp_queue_push(q, (void *)1), RP_QUEUE_OK);
    ck_assert_int_eq(wait_until_ge(&w.served, 1), 1);
    ck_assert_int_eq(wait_until_idle(q, 1), 1);
    pthread_create(&t2, NULL, worker, &w2);
    ck_assert_int_eq(wait_until_idle(q, 2), 2);
    usleep(10000);
    ck_assert_int_eq(LOAD(a.calls), 0);
    rp_queue_terminate(q);
    pthread_join(t, NULL);
    pthread_join(t2, NULL);
    ck_assert_int_eq(LOAD(a.calls), 0);
    rp_queue_destroy(q);
}
END_TEST

/* An idle worker already promised to a queued item does not fire the
 * watch: it fires only once a worker is free beyond the queued items.  And
 * the watch can be armed again once it has fired. */
START_TEST(watch_fires_only_when_worker_is_free_for_new_item)
{
    rp_queue *q = rp_queue_create(2, 0);
    pthread_t t;
    worker_arg w = { .q = q, .gate = 1000 };
    watch_arg a = { 0 };

    a.w = &w;
    ck_assert_int_eq(rp_queue_push(q, (void *)1), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_push(q, (void *)2), RP_QUEUE_OK);
    ck_assert_int_eq(rp_queue_has_idler_or_watch(q, on_idler, &a), 0);
    pthread_create(&t, NULL, gated_worker, &w);
    ck_assert_int_eq(wait_until_ge(&a.calls, 1), 1);
    ck_assert_int_eq(a.served_then, 2);     /* only after both items */
    ck_assert(pthread_equal(a.thread, t));
    ck_assert_int_eq(rp_queue_length(q), 0);

    /* The worker now stays busy with its 3rd item until gate >= 3. */
    STORE(w.gate, 2);
    ck_assert_int_eq(rp_queue_has_idler(q), 1);
    ck_assert_int_eq(rp_queue_push(q, (void *)3), RP_QUEUE_OK);
    ck_assert_int_eq(wait_until_ge(&w.served, 3), 3);
    ck_assert_int_eq(rp_queue_has_idler_or_watch(q, on_idler, &a), 0);
    usleep(20000);
    ck_assert_int_eq(LOAD(a.calls), 1);     /* still busy */
    STORE(w.gate, 3);
    ck_assert_int_eq(wait_until_ge(&a.calls, 2), 2);
    ck_assert_int_eq(a.served_then, 3);
    ck_assert(pthread_equal(a.thread, t));

    rp_queue_terminate(q);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.served, 3);
    ck_assert_uint_eq(w.seen[0], 1);
    ck_assert_uint_eq(w.seen[1], 2);
    ck_assert_uint_eq(w.seen[2], 3);
    ck_assert_int_eq(LOAD(a.calls), 2);
    rp_queue_destroy(q);
}
END_TEST

/* Many items through several workers: none lost, none duplicated, and each
 * worker sees its items in queue order. */
START_TEST(concurrent_handoff_loses_nothing)
{
    enum { WORKERS = 4, ITEMS = 20000 };
    rp_queue *q = rp_queue_create(WORKERS, 0);
    pthread_t t[WORKERS];
    worker_arg w[WORKERS];
    int *marks = calloc(ITEMS + 1, sizeof(*marks));
    uintptr_t i, expect = 0, sum = 0;
    int served = 0, k;

    ck_assert_ptr_nonnull(marks);
    for (k = 0; k < WORKERS; k++) {
        w[k] = (worker_arg){ .q = q, .marks = marks };
        pthread_create(&t[k], NULL, worker, &w[k]);
    }
    for (i = 1; i <= ITEMS; i++) {
        ck_assert_int_eq(rp_queue_wait_for_idler(q), RP_QUEUE_OK);
        ck_assert_int_eq(rp_queue_push(q, (void *)i), RP_QUEUE_OK);
        expect += i;
    }
    rp_queue_terminate(q);
    for (k = 0; k < WORKERS; k++) {
        pthread_join(t[k], NULL);
        served += w[k].served;
        sum += w[k].sum;
        ck_assert_int_eq(w[k].out_of_order, 0);
    }
    ck_assert_int_eq(served, ITEMS);
    ck_assert(sum == expect);
    for (i = 1; i <= ITEMS; i++) {
        ck_assert_int_eq(marks[i], 1);
    }
    ck_assert_int_eq(rp_queue_length(q), 0);
    free(marks);
    rp_queue_destroy(q);
}
END_TEST

/* Several producers pushing without admission (parked connections) while
 * workers pop: the ring grows under contention and loses nothing. */
typedef struct {
    rp_queue *q;
    uintptr_t first, count;
    int failed;
} producer_arg;

static void *producer(void *p)
{
    producer_arg *a = p;
    uintptr_t i;

    for (i = 0; i < a->count; i++) {
        if (rp_queue_push(a->q, (void *)(a->first + i)) != RP_QUEUE_OK) {
            a->failed++;
        }
    }
    return NULL;
}

START_TEST(concurrent_producers_grow_and_lose_nothing)
{
    enum { WORKERS = 3, PRODUCERS = 3, PER = 20000 };
    rp_queue *q = rp_queue_create(1, 0);
    pthread_t wt[WORKERS], pt[PRODUCERS];
    worker_arg w[WORKERS];
    producer_arg pa[PRODUCERS];
    int *marks = calloc(PRODUCERS * PER + 1, sizeof(*marks));
    int served = 0, k, i;

    ck_assert_ptr_nonnull(marks);
    for (k = 0; k < WORKERS; k++) {
        w[k] = (worker_arg){ .q = q, .marks = marks };
        pthread_create(&wt[k], NULL, worker, &w[k]);
    }
    for (k = 0; k < PRODUCERS; k++) {
        pa[k] = (producer_arg){ q, 1 + (uintptr_t)k * PER, PER, 0 };
        pthread_create(&pt[k], NULL, producer, &pa[k]);
    }
    for (k = 0; k < PRODUCERS; k++) {
        pthread_join(pt[k], NULL);
        ck_assert_int_eq(pa[k].failed, 0);
    }
    rp_queue_terminate(q);
    for (k = 0; k < WORKERS; k++) {
        pthread_join(wt[k], NULL);
        served += w[k].served;
    }
    ck_assert_int_eq(served, PRODUCERS * PER);
    for (i = 1; i <= PRODUCERS * PER; i++) {
        ck_assert_int_eq(marks[i], 1);
    }
    ck_assert_int_eq(rp_queue_length(q), 0);
    free(marks);
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
    tcase_add_test(tc, terminate_releases_blocked_workers);
    tcase_add_test(tc, closed_intake_keeps_workers_for_late_handover);
    tcase_add_test(tc, close_intake_releases_waiting_acceptor);
    tcase_add_test(tc, push_after_terminate_is_closed);
    tcase_add_test(tc, push_beyond_capacity_grows);
    tcase_add_test(tc, grow_keeps_order_when_wrapped);
    tcase_add_test(tc, grow_mixed_push_pop_keeps_order);
    tcase_add_test(tc, pools_take_give_lifo_and_limit);
    tcase_add_test(tc, pools_concurrent_stock_bounded);
    tcase_add_test(tc, watch_without_idler_notifies_once_from_worker);
    tcase_add_test(tc, watch_with_idler_returns_1_and_does_not_arm);
    tcase_add_test(tc, watch_fires_only_when_worker_is_free_for_new_item);
    tcase_add_test(tc, concurrent_handoff_loses_nothing);
    tcase_add_test(tc, concurrent_producers_grow_and_lose_nothing);
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
