/* Unit tests: leader/followers for a child's workers (rp_lf.c). */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "rp_lf.h"
#include "check_run.h"

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

/* One rp_lf_next call in a thread of its own: result stays -1 while it
 * blocks; order says when it returned (1 = first) among the threads that
 * share the same counter. */
typedef struct {
    rp_lf *lf;
    int id;
    int *returns;               /* atomic, shared between threads */
    int order;                  /* atomic */
    int result;                 /* atomic: -1 while blocked, else RP_LF_* */
    rp_lf_job job;              /* with RP_LF_JOB */
    pthread_t t;
} lead_arg;

static void *lead_thread(void *p)
{
    lead_arg *a = p;
    int r = rp_lf_next(a->lf, a->id, &a->job);

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

/* Start a follower and wait until it sleeps in rp_lf_next (the count of
 * waiting threads goes from before to before + 1). */
static void follower_async(lead_arg *a, rp_lf *lf, int id, int *returns)
{
    int before = rp_lf_waiting(lf);

    lead_async(a, lf, id, returns);
    ck_assert_int_eq(wait_waiting(lf, before + 1), before + 1);
    ck_assert_int_eq(LOAD(a->result), -1);
}

/* End a test: shut down, the sleeping follower f leaves, free. */
static void shut_down(rp_lf *lf, lead_arg *f)
{
    rp_lf_shutdown(lf);
    ck_assert_int_eq(wait_result(f), RP_LF_SHUT);
    pthread_join(f->t, NULL);
    rp_lf_destroy(lf);
}

static rp_lf_job job(uint64_t token)
{
    rp_lf_job j = { token, 1 };
    return j;
}

/* got() with one event, token t. */
static int got1(rp_lf *lf, int id, uint64_t t)
{
    rp_lf_job j = job(t);
    return rp_lf_got(lf, id, &j, 1);
}

/* Make the loop tick until it says it ticks (a worker must be busy). */
static void start_ticking(rp_lf *lf)
{
    ck_assert_int_eq(rp_lf_tick(lf), 1);
}

START_TEST(first_leads_at_once_second_waits_for_handover)
{
    rp_lf *lf = rp_lf_create(2);
    int returns = 0;
    rp_lf_job j;
    lead_arg b;

    ck_assert_ptr_null(rp_lf_create(0));
    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_waiting(lf), 0);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);
    /* A leader whose wait brought nothing leads on. */
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);

    follower_async(&b, lf, 1, &returns);
    ck_assert_int_eq(rp_lf_waiting(lf), 2);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(b.result), -1);       /* 0 still leads */

    /* The loop does not tick: the hand-over is eager. */
    ck_assert_int_eq(got1(lf, 0, 7), 1);        /* and asks for ticks */
    ck_assert_int_eq(wait_result(&b), RP_LF_LEAD);
    pthread_join(b.t, NULL);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);     /* 1 leads, none waits */

    rp_lf_shutdown(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_SHUT);
    rp_lf_destroy(lf);
}
END_TEST

/* Followers that went idle in the order 1, 2, 3 lead in the order 3, 2, 1;
 * a follower arriving later jumps ahead of those still waiting. */
START_TEST(eager_handover_wakes_latest_follower)
{
    enum { N = 5 };
    rp_lf *lf = rp_lf_create(N);
    int returns = 0, i;
    rp_lf_job j;
    lead_arg f[N];

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    for (i = 1; i <= 3; i++) {
        follower_async(&f[i], lf, i, &returns);
    }
    ck_assert_int_eq(rp_lf_waiting(lf), 4);

    /* The loop never ticks here: every hand-over is eager. */
    got1(lf, 0, 1);
    ck_assert_int_eq(wait_result(&f[3]), RP_LF_LEAD);
    ck_assert_int_eq(LOAD(f[3].order), 1);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f[1].result), -1);
    ck_assert_int_eq(LOAD(f[2].result), -1);

    /* 4 arrives after 1 and 2: it goes first. */
    follower_async(&f[4], lf, 4, &returns);
    got1(lf, 3, 2);
    ck_assert_int_eq(wait_result(&f[4]), RP_LF_LEAD);
    ck_assert_int_eq(LOAD(f[4].order), 2);

    got1(lf, 4, 3);
    ck_assert_int_eq(wait_result(&f[2]), RP_LF_LEAD);
    ck_assert_int_eq(LOAD(f[2].order), 3);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f[1].result), -1);

    got1(lf, 2, 4);
    ck_assert_int_eq(wait_result(&f[1]), RP_LF_LEAD);
    ck_assert_int_eq(LOAD(f[1].order), 4);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);

    for (i = 1; i < N; i++) {
        pthread_join(f[i].t, NULL);
    }
    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* Many workers looping next -> (lead: critical section, got 1-3 events) or
 * (job) while a loop ticks every millisecond: never two leaders, every
 * event run exactly once, nobody stuck. */
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

enum { MX_WORKERS = 8, MX_LEADS = 1500 };

typedef struct {
    rp_lf *lf;
    int *in_cs;                 /* atomic: leaders right now */
    int *violations;            /* atomic */
    int *leads;                 /* atomic: leaderships, all workers */
    unsigned long *made;        /* atomic: sum of tokens handed out */
    unsigned long *ran;         /* atomic: sum of tokens run */
    int *events;                /* atomic: next token */
    int id;
    pthread_t t;
} mx_arg;

static void work(unsigned *seed)
{
    volatile int spin;
    int k;

    *seed = *seed * 1103515245u + 12345u;
    k = (int)((*seed >> 16) % 8);
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
}

static void *mx_worker(void *p)
{
    mx_arg *a = p;
    unsigned seed = (unsigned)a->id * 2654435761u + 1;
    rp_lf_job jobs[RP_LF_BATCH], j;
    int r, n, i;

    while ((r = rp_lf_next(a->lf, a->id, &j)) != RP_LF_SHUT) {
        if (r == RP_LF_JOB) {
            __atomic_add_fetch(a->ran, j.token, __ATOMIC_SEQ_CST);
            work(&seed);
            continue;
        }
        if (INC(*a->in_cs) != 1) {
            INC(*a->violations);
        }
        if (INC(*a->leads) > MX_LEADS * MX_WORKERS) {
            DEC(*a->in_cs);
            continue;           /* enough: lead idle until shut down */
        }
        seed = seed * 1103515245u + 12345u;
        n = 1 + (int)((seed >> 16) % 3);
        for (i = 0; i < n; i++) {
            jobs[i].token = (uint64_t)INC(*a->events);
            jobs[i].events = 1;
            __atomic_add_fetch(a->made, jobs[i].token, __ATOMIC_SEQ_CST);
        }
        if ((seed >> 8) % 16 == 0) {
            sched_yield();      /* let another thread try to get in */
        }
        if (LOAD(*a->in_cs) != 1) {
            INC(*a->violations);
        }
        DEC(*a->in_cs);
        rp_lf_got(a->lf, a->id, jobs, n);
        __atomic_add_fetch(a->ran, jobs[0].token, __ATOMIC_SEQ_CST);
        work(&seed);
    }
    return NULL;
}

START_TEST(one_leader_at_a_time_and_every_event_runs_once)
{
    rp_lf *lf = rp_lf_create(MX_WORKERS);
    ticker_arg tk = { .lf = lf };
    pthread_t tt;
    mx_arg w[MX_WORKERS];
    int in_cs = 0, violations = 0, leads = 0, events = 0, k;
    unsigned long made = 0, ran = 0;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(pthread_create(&tt, NULL, ticker, &tk), 0);
    for (k = 0; k < MX_WORKERS; k++) {
        w[k] = (mx_arg){ .lf = lf, .in_cs = &in_cs, .violations = &violations,
                         .leads = &leads, .made = &made, .ran = &ran,
                         .events = &events, .id = k };
        ck_assert_int_eq(pthread_create(&w[k].t, NULL, mx_worker, &w[k]), 0);
    }
    /* Bounded: a lost wake-up shows as a failure, not a hang. */
    for (k = 0; k < 4 && LOAD(leads) <= MX_WORKERS * MX_LEADS; k++) {
        wait_ge(&leads, MX_WORKERS * MX_LEADS + 1);
    }
    ck_assert_int_gt(LOAD(leads), MX_WORKERS * MX_LEADS);
    for (k = 0; k < 500 && (rp_lf_queued(lf)
                            || LOAD(ran) != LOAD(made)); k++) {
        usleep(1000);
    }
    ck_assert_int_eq(rp_lf_queued(lf), 0);
    ck_assert_uint_eq(LOAD(ran), LOAD(made));
    rp_lf_shutdown(lf);
    for (k = 0; k < MX_WORKERS; k++) {
        pthread_join(w[k].t, NULL);
    }
    STORE(tk.stop, 1);
    pthread_join(tt, NULL);
    ck_assert_int_eq(LOAD(violations), 0);
    ck_assert_int_gt(tk.busy_ticks, 0);     /* the lazy path was possible */
    rp_lf_destroy(lf);
}
END_TEST

/* Worker 0 leads, follower 1 sleeps, the loop ticks. */
static void setup_ticking(rp_lf *lf, lead_arg *f, int *returns)
{
    rp_lf_job j;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    ck_assert_int_eq(got1(lf, 0, 1), 1);        /* nobody to wake; ask */
    start_ticking(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    follower_async(f, lf, 1, returns);
}

/* While the loop ticks, a worker that keeps up runs every event itself:
 * nobody is woken, and it leads again without sleeping. */
START_TEST(ticking_child_runs_on_one_thread)
{
    rp_lf *lf = rp_lf_create(2);
    int returns = 0, i;
    rp_lf_job j;
    lead_arg f;

    setup_ticking(lf, &f, &returns);
    for (i = 0; i < 100; i++) {
        ck_assert_int_eq(got1(lf, 0, 10 + i), 0);
        ck_assert_int_eq(rp_lf_waiting(lf), 1);     /* only the follower */
        if (i % 10 == 0) {
            ck_assert_int_eq(rp_lf_tick(lf), 1);    /* progress: no wake */
        }
        ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    }
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f.result), -1);

    shut_down(lf, &f);
}
END_TEST

/* A worker stuck in a long request while the loop ticks: the first tick
 * sees progress (it took its event), the second wakes the follower. */
START_TEST(tick_wakes_follower_when_nobody_progresses)
{
    rp_lf *lf = rp_lf_create(3);
    int returns = 0;
    lead_arg f;

    setup_ticking(lf, &f, &returns);
    ck_assert_int_eq(got1(lf, 0, 5), 0);        /* lazy */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f.result), -1);
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(wait_result(&f), RP_LF_LEAD);
    pthread_join(f.t, NULL);
    /* Leadership is taken: further ticks change nothing. */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);

    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* A batch: the leader runs the first event; the others go, in order, to
 * the next idle worker (here the leader itself, back from the first). */
START_TEST(batch_is_queued_for_next_idle_worker)
{
    rp_lf *lf = rp_lf_create(2);
    rp_lf_job in[3] = { { 1, 1 }, { 2, 2 }, { 3, 4 } }, j;
    int returns = 0;
    lead_arg f;

    setup_ticking(lf, &f, &returns);
    ck_assert_int_eq(rp_lf_got(lf, 0, in, 3), 0);
    ck_assert_int_eq(rp_lf_queued(lf), 2);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);     /* leadership free */
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_JOB);
    ck_assert_uint_eq(j.token, 2);
    ck_assert_int_eq(j.events, 2);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_JOB);
    ck_assert_uint_eq(j.token, 3);
    ck_assert_int_eq(j.events, 4);
    ck_assert_int_eq(rp_lf_queued(lf), 0);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f.result), -1);

    shut_down(lf, &f);
}
END_TEST

/* Queued events behind a stuck worker: a tick without progress wakes a
 * follower, which takes the queued job (not leadership). */
START_TEST(tick_wakes_follower_for_queued_jobs)
{
    rp_lf *lf = rp_lf_create(2);
    rp_lf_job in[2] = { { 1, 1 }, { 2, 1 } };
    int returns = 0;
    lead_arg f;

    setup_ticking(lf, &f, &returns);
    ck_assert_int_eq(rp_lf_got(lf, 0, in, 2), 0);
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* progress since last */
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f.result), -1);
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* none: wake */
    ck_assert_int_eq(wait_result(&f), RP_LF_JOB);
    ck_assert_uint_eq(f.job.token, 2);
    pthread_join(f.t, NULL);
    ck_assert_int_eq(rp_lf_queued(lf), 0);
    ck_assert_int_eq(rp_lf_waiting(lf), 0);     /* both busy, nobody leads */

    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* The loop ticks while a worker is busy and a few ticks more, then stops;
 * after that a hand-over is eager again and asks for ticks once. */
START_TEST(loop_ticks_while_busy_and_a_little_longer)
{
    rp_lf *lf = rp_lf_create(3);
    int returns = 0, i;
    rp_lf_job j;
    lead_arg f;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    ck_assert_int_eq(got1(lf, 0, 1), 1);        /* not ticking: ask */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* still busy */
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);   /* idle now */
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(rp_lf_tick(lf), 1);    /* lingers */
    }
    ck_assert_int_eq(rp_lf_tick(lf), 0);        /* stops */
    ck_assert_int_eq(rp_lf_tick(lf), 0);

    follower_async(&f, lf, 1, &returns);
    ck_assert_int_eq(got1(lf, 0, 2), 1);        /* eager, and asks once */
    ck_assert_int_eq(wait_result(&f), RP_LF_LEAD);
    pthread_join(f.t, NULL);
    ck_assert_int_eq(got1(lf, 1, 3), 0);        /* asked already */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_next(lf, 2, &j), RP_LF_LEAD);
    ck_assert_int_eq(got1(lf, 2, 4), 0);        /* ticking: lazy */

    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

START_TEST(shutdown_releases_followers_and_refuses_later_work)
{
    enum { N = 4 };
    rp_lf *lf = rp_lf_create(N);
    rp_lf_job in[2] = { { 1, 1 }, { 2, 1 } }, j;
    int returns = 0, i;
    lead_arg f[N];

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    for (i = 1; i < N; i++) {
        follower_async(&f[i], lf, i, &returns);
    }
    ck_assert_int_eq(rp_lf_waiting(lf), N);

    rp_lf_shutdown(lf);
    for (i = 1; i < N; i++) {
        ck_assert_int_eq(wait_result(&f[i]), RP_LF_SHUT);
        pthread_join(f[i].t, NULL);
    }
    /* The leader comes back with events; queued jobs are not handed out. */
    rp_lf_got(lf, 0, in, 2);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_SHUT);
    ck_assert_int_eq(rp_lf_next(lf, 1, &j), RP_LF_SHUT);
    rp_lf_tick(lf);                             /* wakes nobody */
    ck_assert_int_eq(rp_lf_next(lf, 3, &j), RP_LF_SHUT);
    rp_lf_destroy(lf);
}
END_TEST

/* Two workers running while the loop ticks: the first back sleeps, since
 * the other started within the last tick and comes back to lead; so a
 * child that keeps up settles on one running thread. */
START_TEST(idle_worker_sleeps_while_a_fresh_one_runs)
{
    rp_lf *lf = rp_lf_create(3);
    int returns = 0;
    rp_lf_job j;
    lead_arg a;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    ck_assert_int_eq(got1(lf, 0, 1), 1);
    start_ticking(lf);
    ck_assert_int_eq(rp_lf_next(lf, 1, &j), RP_LF_LEAD);
    ck_assert_int_eq(got1(lf, 1, 2), 0);        /* lazy: both run */

    follower_async(&a, lf, 0, &returns);        /* 0 back: sleeps */
    ck_assert_int_eq(rp_lf_waiting(lf), 1);     /* leadership still free */
    ck_assert_int_eq(rp_lf_next(lf, 1, &j), RP_LF_LEAD);   /* 1 back: leads */
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    ck_assert_int_eq(rp_lf_tick(lf), 1);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(a.result), -1);       /* nobody needs 0 */

    shut_down(lf, &a);
}
END_TEST

/* A worker busy for longer than a tick (a CGI, say) does not keep others
 * from leading. */
START_TEST(idle_worker_leads_while_others_run_long)
{
    rp_lf *lf = rp_lf_create(3);
    rp_lf_job j;

    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    got1(lf, 0, 1);                             /* 0: a long request */
    start_ticking(lf);
    ck_assert_int_eq(rp_lf_next(lf, 1, &j), RP_LF_LEAD);
    ck_assert_int_eq(rp_lf_tick(lf), 1);        /* 0 is two ticks old */
    got1(lf, 1, 2);
    ck_assert_int_eq(rp_lf_next(lf, 1, &j), RP_LF_LEAD);   /* at once */

    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* A busy worker queues more work (a listener to accept from again): the
 * next idle worker takes it before leading; while the loop does not tick,
 * a follower is woken for it at once. */
START_TEST(pushed_job_goes_to_next_idle_worker)
{
    rp_lf *lf = rp_lf_create(3);
    rp_lf_job more = { 42, 1 }, j;
    int returns = 0;
    lead_arg f;

    setup_ticking(lf, &f, &returns);
    got1(lf, 0, 1);                             /* 0 busy, lazy */
    ck_assert_int_eq(rp_lf_push(lf, &more), 0); /* ticking: no wake-up */
    ck_assert_int_eq(rp_lf_queued(lf), 1);
    usleep(QUIET_US);
    ck_assert_int_eq(LOAD(f.result), -1);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_JOB);
    ck_assert_uint_eq(j.token, 42);
    shut_down(lf, &f);

    /* Not ticking: the push wakes a follower, which takes the job. */
    lf = rp_lf_create(3);
    ck_assert_ptr_nonnull(lf);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    ck_assert_int_eq(got1(lf, 0, 1), 1);        /* asks for ticks */
    ck_assert_int_eq(rp_lf_next(lf, 1, &j), RP_LF_LEAD);
    follower_async(&f, lf, 2, &returns);
    ck_assert_int_eq(rp_lf_push(lf, &more), 0); /* asked already */
    ck_assert_int_eq(wait_result(&f), RP_LF_JOB);
    ck_assert_uint_eq(f.job.token, 42);
    pthread_join(f.t, NULL);
    rp_lf_shutdown(lf);
    rp_lf_destroy(lf);
}
END_TEST

/* A job that queues itself again (a listener under a flood of new
 * connections) must not keep the workers off the poller: after
 * RP_LF_BATCH jobs with nobody looking, the next idle worker looks first
 * (leads without waiting); a look that found nothing lets it take the job,
 * and the count starts again.  While a leader waits, nobody needs to. */
START_TEST(a_job_that_queues_itself_lets_the_poller_be_looked_at)
{
    rp_lf *lf = rp_lf_create(2);
    rp_lf_job more = { 42, 1 }, j, none[1];
    int i;

    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_LEAD);
    got1(lf, 0, 7);
    ck_assert_int_ge(rp_lf_push(lf, &more), 0);
    for (i = 0; i < RP_LF_BATCH; i++) {
        ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_JOB);
        ck_assert_uint_eq(j.token, 42);
        ck_assert_int_ge(rp_lf_push(lf, &more), 0);
    }
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_PEEK);
    ck_assert_int_eq(rp_lf_waiting(lf), 1);     /* it leads meanwhile */
    ck_assert_int_eq(rp_lf_got(lf, 0, none, 0), 0);
    ck_assert_int_eq(rp_lf_waiting(lf), 0);
    ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_JOB);
    /* Another worker leads (waits on the poller): no look is needed. */
    ck_assert_int_eq(rp_lf_next(lf, 1, &j), RP_LF_LEAD);
    for (i = 0; i < 2 * RP_LF_BATCH; i++) {
        ck_assert_int_ge(rp_lf_push(lf, &more), 0);
        ck_assert_int_eq(rp_lf_next(lf, 0, &j), RP_LF_JOB);
        ck_assert_uint_eq(j.token, 42);
    }

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
    tcase_add_test(tc, eager_handover_wakes_latest_follower);
    tcase_add_test(tc, one_leader_at_a_time_and_every_event_runs_once);
    tcase_add_test(tc, ticking_child_runs_on_one_thread);
    tcase_add_test(tc, tick_wakes_follower_when_nobody_progresses);
    tcase_add_test(tc, batch_is_queued_for_next_idle_worker);
    tcase_add_test(tc, tick_wakes_follower_for_queued_jobs);
    tcase_add_test(tc, loop_ticks_while_busy_and_a_little_longer);
    tcase_add_test(tc, idle_worker_sleeps_while_a_fresh_one_runs);
    tcase_add_test(tc, idle_worker_leads_while_others_run_long);
    tcase_add_test(tc, pushed_job_goes_to_next_idle_worker);
    tcase_add_test(tc, a_job_that_queues_itself_lets_the_poller_be_looked_at);
    tcase_add_test(tc, shutdown_releases_followers_and_refuses_later_work);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(lf_suite());
}
