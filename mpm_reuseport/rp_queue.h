/* Hand-off of accepted connections from a child's listener thread to its
 * workers, with admission control: the listener only accepts when a worker is
 * idle for it, so a child never takes a connection it cannot serve now and
 * the rest stay in the kernel queue (where a sibling may take them).
 * Also recycles per-connection pools.  Items are opaque pointers, so this is
 * pure pthreads logic, unit-tested in test/unit/check_queue.c. */
#ifndef RP_QUEUE_H
#define RP_QUEUE_H

typedef struct rp_queue rp_queue;

typedef enum {
    RP_QUEUE_OK = 0,
    RP_QUEUE_CLOSED = 1,     /* terminated and (for pop) drained */
    RP_QUEUE_ERROR = 2
} rp_queue_status;

/* capacity: number of workers; at most this many items wait at once. */
rp_queue *rp_queue_create(int capacity);
void rp_queue_destroy(rp_queue *q);

/* Listener: block until a worker is idle and not yet promised an item. */
rp_queue_status rp_queue_wait_for_idler(rp_queue *q);

/* Listener: hand over an item (after wait_for_idler said OK).  Still
 * accepted after close_intake (the listener may be past admission); CLOSED
 * after terminate, when workers may be gone. */
rp_queue_status rp_queue_push(rp_queue *q, void *conn, void *pool);

/* Worker: give back a recycled pool (may be NULL), become idle, wait for an
 * item.  CLOSED once the queue is terminated and empty. */
rp_queue_status rp_queue_pop(rp_queue *q, void *recycled_pool, void **conn,
                             void **pool);

/* Listener: a recycled pool, or NULL. */
void *rp_queue_take_pool(rp_queue *q);

/* Stop, step 1: wait_for_idler says CLOSED from now on; workers stay. */
void rp_queue_close_intake(rp_queue *q);

/* Stop, step 2, once the listener is done pushing: workers wake up; pop
 * drains queued items first, then says CLOSED. */
void rp_queue_terminate(rp_queue *q);

/* Inspection (for tests and status). */
int rp_queue_idle_workers(rp_queue *q);
int rp_queue_length(rp_queue *q);

#endif
