#include "rp_lf.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

/* A follower sleeps on its own semaphore: a promotion wakes exactly that
 * thread, with no lock to take again afterwards. */
typedef struct {
    sem_t sem;
    int busy;                   /* between handover and its next lead */
} rp_follower;

struct rp_lf {
    pthread_mutex_t lock;
    int has_leader;
    int busy;                   /* workers processing */
    int ticking;                /* the loop ticks: lazy hand-over is safe */
    int tick_asked;             /* a wake-up to start ticking is pending */
    int shut;
    int nthreads;
    rp_follower *followers;
    int *stack;                 /* ids of waiting followers, top = latest */
    int depth;
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
    if (!lf->followers || !lf->stack || pthread_mutex_init(&lf->lock, NULL)) {
        free(lf->followers);
        free(lf->stack);
        free(lf);
        return NULL;
    }
    for (i = 0; i < nthreads; i++) {
        sem_init(&lf->followers[i].sem, 0, 0);
    }
    lf->nthreads = nthreads;
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
    free(lf);
}

/* Under the lock: wake the latest follower as the new leader. */
static rp_follower *promote_locked(rp_lf *lf)
{
    if (!lf->depth) {
        lf->has_leader = 0;
        return NULL;
    }
    lf->has_leader = 1;
    return &lf->followers[lf->stack[--lf->depth]];
}

int rp_lf_lead(rp_lf *lf, int id)
{
    rp_follower *me = &lf->followers[id];
    int shut;

    pthread_mutex_lock(&lf->lock);
    if (me->busy) {
        me->busy = 0;
        lf->busy--;
    }
    if (lf->shut || !lf->has_leader) {
        lf->has_leader |= !lf->shut;
        shut = lf->shut;
        pthread_mutex_unlock(&lf->lock);
        return !shut;
    }
    lf->stack[lf->depth++] = id;
    pthread_mutex_unlock(&lf->lock);
    while (sem_wait(&me->sem) != 0 && errno == EINTR) {
        continue;
    }
    pthread_mutex_lock(&lf->lock);
    shut = lf->shut;
    pthread_mutex_unlock(&lf->lock);
    return !shut;
}

int rp_lf_handover(rp_lf *lf, int id)
{
    rp_follower *next = NULL;
    int want_tick = 0;

    pthread_mutex_lock(&lf->lock);
    lf->followers[id].busy = 1;
    lf->busy++;
    if (lf->busy > 1 && lf->ticking) {
        lf->has_leader = 0;     /* the next to finish leads, or the tick */
    }
    else {
        next = promote_locked(lf);
        want_tick = lf->busy > 1 && !lf->tick_asked;
        lf->tick_asked |= want_tick;
    }
    pthread_mutex_unlock(&lf->lock);
    if (next) {
        sem_post(&next->sem);
    }
    return want_tick;
}

int rp_lf_tick(rp_lf *lf)
{
    rp_follower *next = NULL;
    int busy;

    pthread_mutex_lock(&lf->lock);
    if (!lf->has_leader && !lf->shut) {
        next = promote_locked(lf);
    }
    busy = lf->busy > 0;
    lf->ticking = busy;
    lf->tick_asked = 0;
    pthread_mutex_unlock(&lf->lock);
    if (next) {
        sem_post(&next->sem);
    }
    return busy;
}

void rp_lf_shutdown(rp_lf *lf)
{
    pthread_mutex_lock(&lf->lock);
    lf->shut = 1;
    while (lf->depth) {
        sem_post(&lf->followers[lf->stack[--lf->depth]].sem);
    }
    pthread_mutex_unlock(&lf->lock);
}

int rp_lf_waiting(rp_lf *lf)
{
    int n;

    pthread_mutex_lock(&lf->lock);
    n = lf->depth + lf->has_leader;
    pthread_mutex_unlock(&lf->lock);
    return n;
}
