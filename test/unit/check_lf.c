/* Unit tests: leader/followers for a child's workers (rp_lf.c). */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "rp_lf.h"

/* Shared flags and counters between the test and its threads. */
#define LOAD(x)     __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define INC(x)      __atomic_add_fetch(&(x), 1, __ATOMIC_SEQ_CST)
#define DEC(x)      __atomic_sub_fetch(&(x), 1, __ATOMIC_SEQ_CST)

/* Polling bound: 5 s in steps of 1 ms. */
#define POLL_STEPS 5000
/* How long to watch that something does NOT happen. */
#define QUIET_US   50000

static int wait_waiting(rp_lf *lf, int n)
{
    int i;
    for (i = 0; i < POLL_STEPS && rp_lf_waiting(lf) != n; i++) {
        usleep(1000);
    }
    return rp_lf_waiting(lf);
}

static int wait_ge(int *counter, int n)
{
    int i;
    for (i = 0; i < POLL_STEPS && LOAD(*counter) < n; i++) {
        usleep(1000);
    }
    return LOAD(*counter);
}

/* One rp_lf_lead call in a thread of its own: result stays -1 while it
 * blocks; order says when it returned (1 = first) among the threads that
 * share the same counter. */
typedef struct {
    rp_lf *lf;
    int id;
    int *returns;               /* atomic, shared between threads */
    int order;                  /* atomic */
    int result;                 /* atomic: -1 while blocked */
    pthread_t t;
} lead_arg;

static void *lead_thread(void *p)
{
    lead_arg *a = p;
    int r = rp_lf_lead(a->lf, a->id);

    STORE(a->order, INC(*a->returns));
    STORE(a->result, r);
    return NULL;
}

static void lead_async(lead_arg *a, rp_lf *lf, int id, int *returns)
{
    a->lf = lf;
    a->id = id;
    a->returns = returns;
    a->order = 0;
    a->result = -1;
    ck_assert_int_eq(pthread_create(&a->t, NULL, lead_thread, a), 0);
}

static int wait_result(lead_arg *a)
{
    int i;
    for (i = 0; i < POLL_STEPS && LOAD(a->result) == -1; i++) {
        usleep(1000);
    }
    return LOAD(a->result);
}

/* Start a follower and wait until it sleeps in rp_lf_lead (the count of
 * waiting threads goes from before to before + 1). */
static void follower_async(lead_arg *a, rp_lf *lf, int id, int *returns)
{
    int before = rp_lf_waiting(lf);

    lead_async(a, lf, id, returns);
    ck_assert_int_eq(wait_waiting(lf, before + 1), before + 1);
    ck_assert_int_eq(LOAD(a->result), -1);
}

START_TEST(first_leads_at_once_second_waits_for_handover)
{
    rp_lf *lf = rp_lf_create(2);
    int returns = 0;
    lead_arg b;

    ck_assert_ptr_null(rp_lf_create(0));
    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_waiting(lf), 0);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);

    follower_async(&b, lf, 1, &returns);
    ck_assert_int_eq(rp_lf_waiting(lf), 2);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(b.result), -1);       /* 0 still leads */

    /* Nobody else is busy: the hand-over is eager. */
    rp_lf_handover(lf, 0);
    ck_assert_int_eq(wait_result(&b), 1);
    pthread_join(b.t, NULL);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);     /* 1 leads, none waits */

    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* Followers that went idle in the order 1, 2, 3 lead in the order 3, 2, 1;
 * a follower arriving later jumps ahead of those still waiting. */
START_TEST(eager_handover_promotes_latest_follower)
{
    enum { N = 5 };
    rp_lf *lf = rp_lf_create(N);
    int returns = 0, i;
    lead_arg f[N];

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    for (i = 1; i <= 3; i++) {
        follower_async(&f[i], lf, i, &returns);
    }
    ck_assert_int_eq(rp_lf_waiting(lf), 4);

    /* The loop does not tick: every hand-over is eager, even though the
     * previous leaders stay busy. */
    rp_lf_handover(lf, 0);
    ck_assert_int_eq(wait_result(&f[3]), 1);
    ck_assert_int_eq(LOAD(f[3].order), 1);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f[1].result), -1);
    ck_assert_int_eq(LOAD(f[2].result), -1);

    /* 4 arrives after 1 and 2: it goes first. */
    follower_async(&f[4], lf, 4, &returns);
    rp_lf_handover(lf, 3);
    ck_assert_int_eq(wait_result(&f[4]), 1);
    ck_assert_int_eq(LOAD(f[4].order), 2);

    rp_lf_handover(lf, 4);
    ck_assert_int_eq(wait_result(&f[2]), 1);
    ck_assert_int_eq(LOAD(f[2].order), 3);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f[1].result), -1);

    rp_lf_handover(lf, 2);
    ck_assert_int_eq(wait_result(&f[1]), 1);
    ck_assert_int_eq(LOAD(f[1].order), 4);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);

    for (i = 1; i < N; i++) {
        pthread_join(f[i].t, NULL);
    }
    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* Many workers looping lead -> critical section -> hand-over -> work while
 * a loop ticks every millisecond: never two leaders, nobody stuck. */
typedef struct {
    rp_lf *lf;
    int stop;                   /* atomic */
    int ticks;
    int busy_ticks;
} ticker_arg;

static void *ticker(void *p)
{
    ticker_arg *a = p;

    while (!LOAD(a->stop)) {
        a->busy_ticks += rp_lf_tick(a->lf);
        a->ticks++;
        usleep(1000);
    }
    return NULL;
}

enum { MX_WORKERS = 8, MX_ITERS = 2000 };

typedef struct {
    rp_lf *lf;
    int *in_cs;                 /* atomic: leaders right now */
    int *violations;            /* atomic */
    int *done;                  /* atomic: iterations completed, all */
    int id;
    int iters;
    int refused;                /* lead returned 0 before shutdown */
    pthread_t t;
} mx_arg;

static void *mx_worker(void *p)
{
    mx_arg *a = p;
    unsigned seed = (unsigned)a->id * 2654435761u + 1;
    volatile int spin;
    int i, k;

    for (i = 0; i < MX_ITERS; i++) {
        if (!rp_lf_lead(a->lf, a->id)) {
            a->refused++;
            break;
        }
        if (INC(*a->in_cs) != 1) {
            INC(*a->violations);
        }
        for (spin = 0; spin < 50; spin++) {
            continue;
        }
        if (i % 16 == 0) {
            sched_yield();      /* let another thread try to get in */
        }
        if (LOAD(*a->in_cs) != 1) {
            INC(*a->violations);
        }
        DEC(*a->in_cs);
        rp_lf_handover(a->lf, a->id);

        /* Processing: short, of varying length, sometimes sleeping. */
        seed = seed * 1103515245u + 12345u;
        k = (int)((seed >> 16) % 8);
        if (k == 0) {
            usleep(100);
        }
        else if (k < 3) {
            sched_yield();
        }
        else {
            for (spin = 0; spin < k * 100; spin++) {
                continue;
            }
        }
        a->iters++;
        INC(*a->done);
    }
    return NULL;
}

START_TEST(one_leader_at_a_time_and_everybody_progresses)
{
    rp_lf *lf = rp_lf_create(MX_WORKERS);
    ticker_arg tk = { .lf = lf };
    pthread_t tt;
    mx_arg w[MX_WORKERS];
    int in_cs = 0, violations = 0, done = 0, k;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(pthread_create(&tt, NULL, ticker, &tk), 0);
    for (k = 0; k < MX_WORKERS; k++) {
        w[k] = (mx_arg){ .lf = lf, .in_cs = &in_cs,
                         .violations = &violations, .done = &done, .id = k };
        ck_assert_int_eq(pthread_create(&w[k].t, NULL, mx_worker, &w[k]), 0);
    }
    /* Bounded: a lost wake-up shows as a failure, not a hang (the bound is
     * generous for sanitizers; the loops take well under a second plain). */
    for (k = 0; k < 4 && LOAD(done) < MX_WORKERS * MX_ITERS; k++) {
        wait_ge(&done, MX_WORKERS * MX_ITERS);
    }
    ck_assert_int_eq(LOAD(done), MX_WORKERS * MX_ITERS);
    for (k = 0; k < MX_WORKERS; k++) {
        pthread_join(w[k].t, NULL);
        ck_assert_int_eq(w[k].refused, 0);
        ck_assert_int_eq(w[k].iters, MX_ITERS);
    }
    STORE(tk.stop, 1);
    pthread_join(tt, NULL);
    ck_assert_int_eq(LOAD(violations), 0);
    ck_assert_int_eq(LOAD(in_cs), 0);
    ck_assert_int_gt(tk.busy_ticks, 0);     /* the lazy path was possible */
    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* Worker 0 busy, worker 1 leading, follower 2 asleep, the loop ticking;
 * then 1 gets an event: the hand-over is lazy. */
static void setup_lazy(rp_lf *lf, lead_arg *f, int *returns)
{
    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    rp_lf_handover(lf, 0);                      /* nobody to promote */
    ck_assert_int_eq(rp_lf_waiting(lf), 0);
    ck_assert_int_eq(rp_lf_lead(lf, 1), 1);     /* free: leads at once */
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* 0 busy: ticking */
    follower_async(f, lf, 2, returns);
    ck_assert_int_eq(rp_lf_waiting(lf), 2);

    rp_lf_handover(lf, 1);                      /* 0 busy: lazy */
    ck_assert_int_eq(rp_lf_waiting(lf), 1);     /* leadership is free */
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f->result), -1);      /* follower not woken */
    ck_assert_int_eq(rp_lf_waiting(lf), 1);
}

START_TEST(lazy_handover_next_busy_worker_leads)
{
    rp_lf *lf = rp_lf_create(3);
    int returns = 0;
    lead_arg f, b;

    setup_lazy(lf, &f, &returns);

    /* Busy worker 0 finishes first: it takes leadership without waiting. */
    lead_async(&b, lf, 0, &returns);
    ck_assert_int_eq(wait_result(&b), 1);
    pthread_join(b.t, NULL);
    ck_assert_int_eq(LOAD(b.order), 1);
    ck_assert_int_eq(rp_lf_waiting(lf), 2);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f.result), -1);       /* still asleep */

    /* 0 gets an event while 1 is busy: lazy again; 1 takes over. */
    rp_lf_handover(lf, 0);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);
    lead_async(&b, lf, 1, &returns);
    ck_assert_int_eq(wait_result(&b), 1);
    pthread_join(b.t, NULL);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f.result), -1);

    rp_lf_shutdown(lf);
    ck_assert_int_eq(wait_result(&f), 0);
    pthread_join(f.t, NULL);
    rp_lf_destroy(lf);
}
END_TEST

START_TEST(lazy_handover_tick_promotes_follower)
{
    rp_lf *lf = rp_lf_create(3);
    int returns = 0;
    lead_arg f;

    setup_lazy(lf, &f, &returns);

    /* Nobody took leadership: the next tick wakes the follower. */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(wait_result(&f), 1);
    pthread_join(f.t, NULL);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);
    /* Leadership is taken: further ticks change nothing. */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);

    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

START_TEST(tick_reports_busy_workers)
{
    rp_lf *lf = rp_lf_create(2);
    int returns = 0;
    lead_arg f;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_tick(lf), 0);        /* nobody at all */
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    ck_assert_int_eq(rp_lf_tick(lf), 0);        /* a leader is not busy */
    rp_lf_handover(lf, 0);
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* until it comes back */
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    ck_assert_int_eq(rp_lf_tick(lf), 0);

    rp_lf_handover(lf, 0);
    ck_assert_int_eq(rp_lf_lead(lf, 1), 1);
    rp_lf_handover(lf, 1);                      /* two busy */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);     /* one back, leading */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    follower_async(&f, lf, 1, &returns);        /* the other back, waiting */
    ck_assert_int_eq(rp_lf_tick(lf), 0);
    ck_assert_int_eq(LOAD(f.result), -1);       /* leadership was taken */

    rp_lf_shutdown(lf);
    ck_assert_int_eq(wait_result(&f), 0);
    pthread_join(f.t, NULL);
    rp_lf_destroy(lf);
}
END_TEST

/* The loop ticks, but the leader is the only one processing: no tick is
 * due to come, so the hand-over is eager. */
START_TEST(handover_is_eager_when_nobody_else_is_busy)
{
    rp_lf *lf = rp_lf_create(2);
    int returns = 0;
    lead_arg f;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    rp_lf_handover(lf, 0);
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* ticking */
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);     /* nobody busy now */
    follower_async(&f, lf, 1, &returns);
    rp_lf_handover(lf, 0);
    ck_assert_int_eq(wait_result(&f), 1);
    pthread_join(f.t, NULL);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);
    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* A tick that found nobody busy means the loop stops ticking: hand-overs
 * are eager again even with another worker busy. */
START_TEST(handover_is_eager_once_loop_stops_ticking)
{
    rp_lf *lf = rp_lf_create(3);
    int returns = 0;
    lead_arg f;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    rp_lf_handover(lf, 0);
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* ticking */
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    ck_assert_int_eq(rp_lf_tick(lf), 0);        /* nobody busy: stops */
    rp_lf_handover(lf, 0);                      /* 0 busy */
    ck_assert_int_eq(rp_lf_lead(lf, 1), 1);
    follower_async(&f, lf, 2, &returns);
    rp_lf_handover(lf, 1);                      /* 0 busy, not ticking */
    ck_assert_int_eq(wait_result(&f), 1);
    pthread_join(f.t, NULL);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);
    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

START_TEST(shutdown_releases_followers_and_refuses_later_leads)
{
    enum { N = 4 };
    rp_lf *lf = rp_lf_create(N);
    int returns = 0, i;
    lead_arg f[N], late;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    for (i = 1; i < N; i++) {
        follower_async(&f[i], lf, i, &returns);
    }
    ck_assert_int_eq(rp_lf_waiting(lf), N);

    rp_lf_shutdown(lf);
    for (i = 1; i < N; i++) {
        ck_assert_int_eq(wait_result(&f[i]), 0);
        pthread_join(f[i].t, NULL);
    }
    /* The leader comes back, a follower comes back after processing: no
     * waiting any more, even while "leadership" looks taken. */
    lead_async(&late, lf, 0, &returns);
    ck_assert_int_eq(wait_result(&late), 0);
    pthread_join(late.t, NULL);
    rp_lf_handover(lf, 1);
    lead_async(&late, lf, 1, &returns);
    ck_assert_int_eq(wait_result(&late), 0);
    pthread_join(late.t, NULL);
    lead_async(&late, lf, 2, &returns);
    ck_assert_int_eq(wait_result(&late), 0);
    pthread_join(late.t, NULL);
    /* Ticks promote nobody after shutdown. */
    rp_lf_tick(lf);
    ck_assert_int_eq(rp_lf_lead(lf, 3), 0);
    rp_lf_destroy(lf);
}
END_TEST

/* A second busy worker while the loop is not ticking: the hand-over asks
 * (once) for the loop to start ticking; after a tick it asks no more. */
START_TEST(handover_asks_loop_to_tick_once)
{
    rp_lf *lf = rp_lf_create(3);

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    ck_assert_int_eq(rp_lf_handover(lf, 0), 0);     /* alone: no need */
    ck_assert_int_eq(rp_lf_lead(lf, 1), 1);
    ck_assert_int_eq(rp_lf_handover(lf, 1), 1);     /* two busy: ask */
    ck_assert_int_eq(rp_lf_lead(lf, 2), 1);
    ck_assert_int_eq(rp_lf_handover(lf, 2), 0);     /* asked already */
    ck_assert_int_eq(rp_lf_tick(lf), 1);            /* now ticking */
    ck_assert_int_eq(rp_lf_lead(lf, 0), 1);
    ck_assert_int_eq(rp_lf_handover(lf, 0), 0);     /* lazy, no ask */
    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

static Suite *lf_suite(void)
{
    Suite *su = suite_create("rp_lf");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, first_leads_at_once_second_waits_for_handover);
    tcase_add_test(tc, eager_handover_promotes_latest_follower);
    tcase_add_test(tc, one_leader_at_a_time_and_everybody_progresses);
    tcase_add_test(tc, lazy_handover_next_busy_worker_leads);
    tcase_add_test(tc, lazy_handover_tick_promotes_follower);
    tcase_add_test(tc, tick_reports_busy_workers);
    tcase_add_test(tc, handover_is_eager_when_nobody_else_is_busy);
    tcase_add_test(tc, handover_is_eager_once_loop_stops_ticking);
    tcase_add_test(tc, shutdown_releases_followers_and_refuses_later_leads);
    tcase_add_test(tc, handover_asks_loop_to_tick_once);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(lf_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
