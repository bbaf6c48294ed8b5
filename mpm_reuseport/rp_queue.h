/* Hand-off of work from a child's event loop to its workers.  Items are new
 * connections (admitted only while a worker is idle for them, so a child
 * never takes a connection it cannot serve now; the rest stay in the
 * kernel queue, where a sibling may take them) and parked connections that
 * became ready (always queued: a busy child makes them wait, it never
 * closes them).  Also recycles connection pools.  Items are opaque
 * pointers, so this is pure pthreads logic, unit-tested in
 * test/unit/check_queue.c. */
#ifndef RP_QUEUE_H
#define RP_QUEUE_H

typedef struct rp_queue rp_queue;

typedef enum {
    RP_QUEUE_OK = 0,
    RP_QUEUE_CLOSED = 1,     /* terminated and (for pop) drained */
    RP_QUEUE_ERROR = 2       /* out of memory */
} rp_queue_status;

/* workers: expected number of workers (initial size; the queue grows);
 * pools: how many idle pools to keep for reuse. */
rp_queue *rp_queue_create(int workers, int pools);
void rp_queue_destroy(rp_queue *q);

/* Admission: is a worker idle and not yet promised an item? */
int rp_queue_has_idler(rp_queue *q);

/* Like has_idler; if not, arrange for notify(baton) to be called (once, from
 * a worker thread, under the queue's lock: keep it short) when one is. */
int rp_queue_has_idler_or_watch(rp_queue *q, void (*notify)(void *),
                                void *baton);

/* Blocking admission (for a dedicated acceptor): wait until has_idler. */
rp_queue_status rp_queue_wait_for_idler(rp_queue *q);

/* Hand over an item.  Still accepted after close_intake (the producer may
 * be past admission); CLOSED after terminate, when workers may be gone. */
rp_queue_status rp_queue_push(rp_queue *q, void *item);

/* Worker: become idle and wait for an item.  CLOSED once the queue is
 * terminated and empty. */
rp_queue_status rp_queue_pop(rp_queue *q, void **item);

/* Pools for reuse: take one (or NULL); give one back (0 if the stock is
 * full: the caller destroys it). */
void *rp_queue_take_pool(rp_queue *q);
int rp_queue_give_pool(rp_queue *q, void *pool);

/* Stop, step 1: wait_for_idler says CLOSED from now on; workers stay. */
void rp_queue_close_intake(rp_queue *q);

/* Stop, step 2, once the producer is done pushing: workers wake up; pop
 * drains queued items first, then says CLOSED. */
void rp_queue_terminate(rp_queue *q);

/* Inspection (for tests and status). */
int rp_queue_idle_workers(rp_queue *q);
int rp_queue_length(rp_queue *q);

#endif
