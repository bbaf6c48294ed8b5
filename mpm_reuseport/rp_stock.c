#include "rp_stock.h"

#include <pthread.h>
#include <stdlib.h>

struct rp_stock {
    pthread_mutex_t lock;
    void **items;
    int n, max;
};

rp_stock *rp_stock_create(int max)
{
    rp_stock *st;

    if (max < 0 || !(st = calloc(1, sizeof(*st)))) {
        return NULL;
    }
    st->items = calloc((size_t)max + 1, sizeof(*st->items));
    if (!st->items || pthread_mutex_init(&st->lock, NULL)) {
        free(st->items);
        free(st);
        return NULL;
    }
    st->max = max;
    return st;
}

void rp_stock_destroy(rp_stock *st)
{
    if (st) {
        pthread_mutex_destroy(&st->lock);
        free(st->items);
        free(st);
    }
}

void *rp_stock_take(rp_stock *st)
{
    void *pool = NULL;

    pthread_mutex_lock(&st->lock);
    if (st->n) {
        pool = st->items[--st->n];
    }
    pthread_mutex_unlock(&st->lock);
    return pool;
}

int rp_stock_give(rp_stock *st, void *pool)
{
    int kept = 0;

    pthread_mutex_lock(&st->lock);
    if (st->n < st->max) {
        st->items[st->n++] = pool;
        kept = 1;
    }
    pthread_mutex_unlock(&st->lock);
    return kept;
}
