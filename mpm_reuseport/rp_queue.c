#include "rp_queue.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    void *conn;
    void *pool;
} rp_item;

struct rp_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty;   /* workers wait here */
    pthread_cond_t idler;       /* the listener waits here */
    int capacity;
    int head, count;
    int idle;                   /* workers blocked in pop */
    int intake_closed;          /* the listener takes no more */
    int terminated;             /* workers drain, then leave */
    rp_item *items;
    void **pools;               /* recycled pool stack */
    int npools;
};

rp_queue *rp_queue_create(int capacity)
{
    rp_queue *q;

    if (capacity < 1 || !(q = calloc(1, sizeof(*q)))) {
        return NULL;
    }
    q->items = calloc((size_t)capacity, sizeof(*q->items));
    q->pools = calloc((size_t)capacity, sizeof(*q->pools));
    if (!q->items || !q->pools
        || pthread_mutex_init(&q->lock, NULL)) {
        free(q->items);
        free(q->pools);
        free(q);
        return NULL;
    }
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->idler, NULL);
    q->capacity = capacity;
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

rp_queue_status rp_queue_wait_for_idler(rp_queue *q)
{
    rp_queue_status st;

    pthread_mutex_lock(&q->lock);
    /* Each queued item already has an idle worker promised to it. */
    while (q->idle <= q->count && !q->intake_closed && !q->terminated) {
        pthread_cond_wait(&q->idler, &q->lock);
    }
    st = q->intake_closed || q->terminated ? RP_QUEUE_CLOSED : RP_QUEUE_OK;
    pthread_mutex_unlock(&q->lock);
    return st;
}

rp_queue_status rp_queue_push(rp_queue *q, void *conn, void *pool)
{
    rp_item *slot;

    pthread_mutex_lock(&q->lock);
    if (q->terminated) {
        /* Workers may all have left: nobody would serve it. */
        pthread_mutex_unlock(&q->lock);
        return RP_QUEUE_CLOSED;
    }
    if (q->count == q->capacity) {
        pthread_mutex_unlock(&q->lock);
        return RP_QUEUE_ERROR;
    }
    slot = &q->items[(q->head + q->count) % q->capacity];
    slot->conn = conn;
    slot->pool = pool;
    q->count++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
    return RP_QUEUE_OK;
}

static void recycle_pool_locked(rp_queue *q, void *pool)
{
    if (pool && q->npools < q->capacity) {
        q->pools[q->npools++] = pool;
    }
}

rp_queue_status rp_queue_pop(rp_queue *q, void *recycled_pool, void **conn,
                             void **pool)
{
    rp_item *item;

    pthread_mutex_lock(&q->lock);
    recycle_pool_locked(q, recycled_pool);
    q->idle++;
    pthread_cond_signal(&q->idler);
    while (q->count == 0 && !q->terminated) {
        pthread_cond_wait(&q->not_empty, &q->lock);
    }
    q->idle--;
    if (q->count == 0) {
        pthread_mutex_unlock(&q->lock);
        return RP_QUEUE_CLOSED;
    }
    item = &q->items[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    *conn = item->conn;
    *pool = item->pool;
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
