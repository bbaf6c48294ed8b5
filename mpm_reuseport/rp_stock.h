/* A bounded stock of idle connection pools for reuse, shared by a child's
 * threads (rp_conn_life.c takes one per accepted connection and gives it
 * back when the connection is released).  LIFO, so the warmest pool is
 * reused.  Items are opaque pointers: pure pthreads, unit-tested in
 * test/unit/check_stock.c. */
#ifndef RP_STOCK_H
#define RP_STOCK_H

typedef struct rp_stock rp_stock;

/* max: how many pools to keep (0 keeps none). */
rp_stock *rp_stock_create(int max);
void rp_stock_destroy(rp_stock *st);

/* The latest pool given back, or NULL. */
void *rp_stock_take(rp_stock *st);

/* 1 if kept; 0 if the stock is full (the caller destroys the pool). */
int rp_stock_give(rp_stock *st, void *pool);

#endif
