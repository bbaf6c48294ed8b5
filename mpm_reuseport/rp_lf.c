#include "rp_lf.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

/* Ticks the loop keeps ticking after the last worker went idle, so a
 * steady load does not start and stop it between requests. */
#define RP_LF_LINGER_TICKS 4

/* A follower sleeps on its own semaphore: a wake-up reaches exactly that
 * thread, with no lock to take again afterwards. */
typedef struct {
    sem_t sem;
    int busy;                   /* running an event or a job */
    int woken;                  /* posted, has not run yet */
    unsigned since;             /* tick at which it became busy */
} rp_follower;

struct rp_lf {
    pthread_mutex_t lock;
    int leader;                 /* id, or -1: leadership is free */
    int busy;                   /* workers running events or jobs */
    int woken;                  /* followers posted that have not run yet */
    int ticking;                /* the loop ticks: lazy hand-over is safe */
    int tick_asked;             /* a wake-up to start ticking is pending */
    int idle_ticks;             /* ticks since a worker was last busy */
    unsigned long progress;     /* bumped whenever work is taken or done */
    unsigned long seen;         /* progress at the previous tick */
    unsigned ticks;             /* ticks so far */
    int since_look;             /* jobs taken since a leader last looked at
                                   the poller */
    int young[2];               /* busy workers that started in this tick
                                   ([ticks & 1]) or the previous one */
    int shut;
    int nthreads;
    rp_follower *followers;
    int *stack;                 /* ids of sleeping followers, top = latest */
    int depth;
    rp_lf_job *queue;           /* ring of queued jobs */
    int qsize, qhead, qlen;
};

rp_lf *rp_lf_create(int nthreads)
{
    rp_lf *lf;
    int i;

    if (nthreads < 1 || !(lf = calloc(1, sizeof(*lf)))) {
        return NULL;
    }
    lf->followers = calloc((size_t)nthreads, sizeof(*lf->followers));
    lf->stack = calloc((size_t)nthreads, sizeof(*lf->stack));
    lf->qsize = nthreads + 2 * RP_LF_BATCH;
    lf->queue = calloc((size_t)lf->qsize, sizeof(*lf->queue));
    if (!lf->followers || !lf->stack || !lf->queue
        || pthread_mutex_init(&lf->lock, NULL)) {
        free(lf->followers);
        free(lf->stack);
        free(lf->queue);
        free(lf);
        return NULL;
    }
    for (i = 0; i < nthreads; i++) {
        sem_init(&lf->followers[i].sem, 0, 0);
    }
    lf->nthreads = nthreads;
    lf->leader = -1;
    return lf;
}

void rp_lf_destroy(rp_lf *lf)
{
    int i;

    if (!lf) {
        return;
    }
    for (i = 0; i < lf->nthreads; i++) {
        sem_destroy(&lf->followers[i].sem);
    }
    pthread_mutex_destroy(&lf->lock);
    free(lf->followers);
    free(lf->stack);
    free(lf->queue);
    free(lf);
}

/* Under the lock: pick the latest sleeping follower to wake (the caller
 * posts it after unlocking); it decides what to do once it runs. */
static rp_follower *wake_locked(rp_lf *lf)
{
    rp_follower *f;

    if (!lf->depth) {
        return NULL;
    }
    f = &lf->followers[lf->stack[--lf->depth]];
    f->woken = 1;
    lf->woken++;
    return f;
}

static void post(rp_follower *f)
{
    if (f) {
        sem_post(&f->sem);
    }
}

static void set_busy_locked(rp_lf *lf, rp_follower *me, int busy)
{
    if (me->busy != busy) {
        me->busy = busy;
        lf->busy += busy ? 1 : -1;
        if (busy) {
            me->since = lf->ticks;
            lf->young[me->since & 1]++;
        }
        else if (lf->ticks - me->since <= 1) {
            lf->young[me->since & 1]--;
        }
    }
    lf->progress++;
}

/* A worker just went idle, nothing is queued and leadership is free.  If
 * another worker started its work within the last tick, it will be back
 * in a moment and lead: this one sleeps, so a child that keeps up
 * settles on one running thread (the scheduler shares CPU time between
 * threads: a child running more of them than it needs would get more than
 * its share, and its siblings' connections would wait).  Workers busy for
 * longer (a CGI, a proxied request) do not count. */
static int others_back_soon_locked(rp_lf *lf)
{
    return lf->ticking && lf->young[0] + lf->young[1] > 0;
}

static int pop_locked(rp_lf *lf, rp_lf_job *job)
{
    if (!lf->qlen) {
        return 0;
    }
    *job = lf->queue[lf->qhead];
    lf->qhead = (lf->qhead + 1) % lf->qsize;
    lf->qlen--;
    return 1;
}

static int push_locked(rp_lf *lf, const rp_lf_job *job)
{
    if (lf->qlen >= lf->qsize) {
        return 0;
    }
    lf->queue[(lf->qhead + lf->qlen++) % lf->qsize] = *job;
    return 1;
}

/* Under the lock, after queueing: while the loop does not tick, nobody
 * would notice queued work waiting behind busy workers; wake one now and
 * have the loop tick.  Returns 1 if the caller must wake the loop. */
static int wake_unless_ticking_locked(rp_lf *lf, rp_follower **next)
{
    int want_tick;

    if (lf->ticking || lf->shut) {
        return 0;
    }
    *next = wake_locked(lf);
    want_tick = !lf->tick_asked;
    lf->tick_asked = 1;
    return want_tick;
}

/* Jobs that queue themselves again (a listener while new connections keep
 * coming) would keep every idle worker off the poller: nobody would take
 * the events of connections already open (a kept-alive client's next
 * request waited up to 2 s under a flood of new connections).  So after
 * RP_LF_BATCH jobs without a look, with leadership free, the next idle
 * worker looks first, without waiting. */
static int must_look_first_locked(rp_lf *lf)
{
    /* Room kept: a batch more, and a job more from every worker. */
    return lf->qlen && lf->qlen <= RP_LF_BATCH && lf->leader < 0
           && lf->since_look >= RP_LF_BATCH;
}

static void sleep_locked(rp_lf *lf, int id)
{
    rp_follower *me = &lf->followers[id];

    lf->stack[lf->depth++] = id;
    pthread_mutex_unlock(&lf->lock);
    while (sem_wait(&me->sem) != 0 && errno == EINTR) {
        continue;
    }
    pthread_mutex_lock(&lf->lock);
    if (me->woken) {
        me->woken = 0;
        lf->woken--;
    }
}

int rp_lf_next(rp_lf *lf, int id, rp_lf_job *job)
{
    rp_follower *me = &lf->followers[id];
    int what, just_idle = 0;

    pthread_mutex_lock(&lf->lock);
    if (me->busy) {
        set_busy_locked(lf, me, 0);
        just_idle = 1;
    }
    for (;;) {
        if (lf->shut) {
            what = RP_LF_SHUT;
            break;
        }
        if (must_look_first_locked(lf)) {
            lf->leader = id;
            what = RP_LF_PEEK;
            break;
        }
        if (pop_locked(lf, job)) {
            lf->since_look++;
            if (lf->leader == id) {
                lf->leader = -1;
            }
            set_busy_locked(lf, me, 1);
            what = RP_LF_JOB;
            break;
        }
        if (lf->leader == id || (lf->leader < 0
                                 && !(just_idle && others_back_soon_locked(lf)))) {
            lf->leader = id;
            what = RP_LF_LEAD;
            break;
        }
        just_idle = 0;
        sleep_locked(lf, id);
    }
    pthread_mutex_unlock(&lf->lock);
    return what;
}

int rp_lf_got(rp_lf *lf, int id, const rp_lf_job *jobs, int n)
{
    rp_follower *next = NULL;
    int want_tick, i;

    pthread_mutex_lock(&lf->lock);
    if (lf->leader == id) {
        lf->leader = -1;
    }
    lf->since_look = 0;
    if (!n) {                   /* a look that found nothing */
        pthread_mutex_unlock(&lf->lock);
        return 0;
    }
    set_busy_locked(lf, &lf->followers[id], 1);
    for (i = 1; i < n; i++) {
        push_locked(lf, &jobs[i]);
    }
    /* Nobody would notice if this worker got stuck: unless the loop
     * ticks, hand over now, and have it tick so later hand-overs wait. */
    want_tick = wake_unless_ticking_locked(lf, &next);
    pthread_mutex_unlock(&lf->lock);
    post(next);
    return want_tick;
}

int rp_lf_push(rp_lf *lf, const rp_lf_job *job)
{
    rp_follower *next = NULL;
    int want_tick;

    pthread_mutex_lock(&lf->lock);
    if (!push_locked(lf, job)) {
        pthread_mutex_unlock(&lf->lock);
        return -1;
    }
    want_tick = wake_unless_ticking_locked(lf, &next);
    pthread_mutex_unlock(&lf->lock);
    post(next);
    return want_tick;
}

int rp_lf_tick(rp_lf *lf)
{
    rp_follower *next = NULL;
    int ticking;

    pthread_mutex_lock(&lf->lock);
    if (!lf->shut && !lf->woken && (lf->leader < 0 || lf->qlen)
        && lf->progress == lf->seen) {
        next = wake_locked(lf);
    }
    lf->seen = lf->progress;
    lf->ticks++;
    lf->young[lf->ticks & 1] = 0;   /* started two ticks ago: not young */
    lf->idle_ticks = lf->busy || lf->qlen ? 0 : lf->idle_ticks + 1;
    ticking = lf->idle_ticks < RP_LF_LINGER_TICKS;
    lf->ticking = ticking;
    lf->tick_asked = 0;
    pthread_mutex_unlock(&lf->lock);
    post(next);
    return ticking;
}

void rp_lf_shutdown(rp_lf *lf)
{
    pthread_mutex_lock(&lf->lock);
    lf->shut = 1;
    while (lf->depth) {
        post(wake_locked(lf));
    }
    pthread_mutex_unlock(&lf->lock);
}

int rp_lf_waiting(rp_lf *lf)
{
    int n;

    pthread_mutex_lock(&lf->lock);
    n = lf->depth + (lf->leader >= 0);
    pthread_mutex_unlock(&lf->lock);
    return n;
}

int rp_lf_queued(rp_lf *lf)
{
    int n;

    pthread_mutex_lock(&lf->lock);
    n = lf->qlen;
    pthread_mutex_unlock(&lf->lock);
    return n;
}
