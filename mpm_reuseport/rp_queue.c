#include "rp_queue.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct rp_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty;   /* workers wait here */
    pthread_cond_t idler;       /* a blocking acceptor waits here */
    int capacity;               /* grows on demand */
    int head, count;
    int idle;                   /* workers blocked in pop */
    int intake_closed;          /* no more admissions */
    int terminated;             /* workers drain, then leave */
    void **items;               /* ring of capacity entries */
    void (*notify)(void *);     /* one-shot "a worker is idle" watch */
    void *notify_baton;
    void **pools;               /* stack of reusable pools */
    int npools, max_pools;
};

rp_queue *rp_queue_create(int workers, int pools)
{
    rp_queue *q;

    if (workers < 1 || pools < 0 || !(q = calloc(1, sizeof(*q)))) {
        return NULL;
    }
    q->items = calloc((size_t)workers, sizeof(*q->items));
    q->pools = calloc((size_t)pools + 1, sizeof(*q->pools));
    if (!q->items || !q->pools || pthread_mutex_init(&q->lock, NULL)) {
        free(q->items);
        free(q->pools);
        free(q);
        return NULL;
    }
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->idler, NULL);
    q->capacity = workers;
    q->max_pools = pools;
    return q;
}

void rp_queue_destroy(rp_queue *q)
{
    if (!q) {
        return;
    }
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->idler);
    pthread_mutex_destroy(&q->lock);
    free(q->items);
    free(q->pools);
    free(q);
}

/* Each queued item already has an idle worker promised to it. */
static int has_idler_locked(const rp_queue *q)
{
    return q->idle > q->count;
}

int rp_queue_has_idler(rp_queue *q)
{
    int yes;

    pthread_mutex_lock(&q->lock);
    yes = has_idler_locked(q);
    pthread_mutex_unlock(&q->lock);
    return yes;
}

int rp_queue_has_idler_or_watch(rp_queue *q, void (*notify)(void *),
                                void *baton)
{
    int yes;

    pthread_mutex_lock(&q->lock);
    yes = has_idler_locked(q);
    if (!yes) {
        q->notify = notify;
        q->notify_baton = baton;
    }
    pthread_mutex_unlock(&q->lock);
    return yes;
}

rp_queue_status rp_queue_wait_for_idler(rp_queue *q)
{
    rp_queue_status st;

    pthread_mutex_lock(&q->lock);
    while (!has_idler_locked(q) && !q->intake_closed && !q->terminated) {
        pthread_cond_wait(&q->idler, &q->lock);
    }
    st = q->intake_closed || q->terminated ? RP_QUEUE_CLOSED : RP_QUEUE_OK;
    pthread_mutex_unlock(&q->lock);
    return st;
}

/* Double the ring, unwrapping it so head is 0. */
static int grow_locked(rp_queue *q)
{
    int cap = q->capacity * 2, i;
    void **items = malloc((size_t)cap * sizeof(*items));

    if (!items) {
        return 0;
    }
    for (i = 0; i < q->count; i++) {
        items[i] = q->items[(q->head + i) % q->capacity];
    }
    free(q->items);
    q->items = items;
    q->capacity = cap;
    q->head = 0;
    return 1;
}

rp_queue_status rp_queue_push(rp_queue *q, void *item)
{
    pthread_mutex_lock(&q->lock);
    if (q->terminated) {
        /* Workers may all have left: nobody would serve it. */
        pthread_mutex_unlock(&q->lock);
        return RP_QUEUE_CLOSED;
    }
    if (q->count == q->capacity && !grow_locked(q)) {
        pthread_mutex_unlock(&q->lock);
        return RP_QUEUE_ERROR;
    }
    q->items[(q->head + q->count) % q->capacity] = item;
    q->count++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
    return RP_QUEUE_OK;
}

static void become_idle_locked(rp_queue *q)
{
    q->idle++;
    if (has_idler_locked(q)) {
        pthread_cond_signal(&q->idler);
        if (q->notify) {
            void (*notify)(void *) = q->notify;
            q->notify = NULL;
            notify(q->notify_baton);
        }
    }
}

rp_queue_status rp_queue_pop(rp_queue *q, void **item)
{
    pthread_mutex_lock(&q->lock);
    become_idle_locked(q);
    while (q->count == 0 && !q->terminated) {
        pthread_cond_wait(&q->not_empty, &q->lock);
    }
    q->idle--;
    if (q->count == 0) {
        pthread_mutex_unlock(&q->lock);
        return RP_QUEUE_CLOSED;
    }
    *item = q->items[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    pthread_mutex_unlock(&q->lock);
    return RP_QUEUE_OK;
}

void *rp_queue_take_pool(rp_queue *q)
{
    void *pool = NULL;

    pthread_mutex_lock(&q->lock);
    if (q->npools) {
        pool = q->pools[--q->npools];
    }
    pthread_mutex_unlock(&q->lock);
    return pool;
}

int rp_queue_give_pool(rp_queue *q, void *pool)
{
    int kept = 0;

    pthread_mutex_lock(&q->lock);
    if (q->npools < q->max_pools) {
        q->pools[q->npools++] = pool;
        kept = 1;
    }
    pthread_mutex_unlock(&q->lock);
    return kept;
}

void rp_queue_close_intake(rp_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->intake_closed = 1;
    pthread_cond_broadcast(&q->idler);
    pthread_mutex_unlock(&q->lock);
}

void rp_queue_terminate(rp_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->terminated = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->idler);
    pthread_mutex_unlock(&q->lock);
}

int rp_queue_idle_workers(rp_queue *q)
{
    int n;

    pthread_mutex_lock(&q->lock);
    n = q->idle;
    pthread_mutex_unlock(&q->lock);
    return n;
}

int rp_queue_length(rp_queue *q)
{
    int n;

    pthread_mutex_lock(&q->lock);
    n = q->count;
    pthread_mutex_unlock(&q->lock);
    return n;
}
