/* Timeout queues for parked connections.  Everything in one queue waits
 * with the same timeout, so appending in arrival order keeps the queue
 * sorted by expiry: append, remove and "what expires next" are O(1).  A set
 * holds one queue per distinct timeout (virtual hosts may differ).
 * Waits whose deadlines differ from one to the next (a request read ahead
 * under mod_reqtimeout's clocks) go on a deadline heap instead: O(log n).
 * Pure logic, no locking (the caller holds its lock); unit-tested in
 * test/unit/check_timeq.c. */
#ifndef RP_TIMEQ_H
#define RP_TIMEQ_H

#include <stdint.h>

typedef int64_t rp_usec;

typedef struct rp_timeq rp_timeq;

typedef struct rp_timer {
    struct rp_timer *prev, *next;
    rp_timeq *q;                /* NULL while not queued */
    rp_usec expires;
} rp_timer;

struct rp_timeq {
    rp_timer head;              /* sentinel of a circular list */
    rp_usec timeout;
    int count;
};

void rp_timeq_init(rp_timeq *q, rp_usec timeout);
void rp_timer_init(rp_timer *t);
int rp_timer_queued(const rp_timer *t);

/* Queue t (not queued yet) to expire at now + q->timeout. */
void rp_timeq_append(rp_timeq *q, rp_timer *t, rp_usec now);

/* Unqueue t; harmless if it is not queued. */
void rp_timer_remove(rp_timer *t);

/* The oldest timer, or NULL. */
rp_timer *rp_timeq_first(const rp_timeq *q);

/* Unqueue and return the oldest timer if it has expired at now, else NULL. */
rp_timer *rp_timeq_pop_expired(rp_timeq *q, rp_usec now);

/* When the oldest timer expires; -1 if the queue is empty. */
rp_usec rp_timeq_next_expiry(const rp_timeq *q);

/* A set of queues, one per timeout value. */
#define RP_TIMEQS_MAX 16

typedef struct rp_timeqs {
    rp_timeq *qs[RP_TIMEQS_MAX];
    int n;
} rp_timeqs;

/* The queue for timeout, created on first use (NULL if out of memory or
 * more than RP_TIMEQS_MAX distinct timeouts: the caller then uses
 * rp_timeqs_nearest). */
rp_timeq *rp_timeqs_get(rp_timeqs *s, rp_usec timeout);

/* The queue with the largest timeout not above timeout (or the smallest
 * queue), for when the set is full; NULL if the set is empty. */
rp_timeq *rp_timeqs_nearest(rp_timeqs *s, rp_usec timeout);

/* Earliest expiry over the set; -1 if all are empty. */
rp_usec rp_timeqs_next_expiry(const rp_timeqs *s);

/* Total number of queued timers. */
int rp_timeqs_count(const rp_timeqs *s);

void rp_timeqs_free(rp_timeqs *s);

/* A min-heap of deadlines. */
typedef struct rp_dtimer {
    rp_usec expires;
    int idx;                    /* in the heap; -1 while not queued */
} rp_dtimer;

typedef struct rp_dheap {
    rp_dtimer **v;
    int n, cap;
} rp_dheap;

void rp_dtimer_init(rp_dtimer *t);
/* Queue t (not queued yet) to expire at `expires`; 0 if out of memory. */
int rp_dheap_add(rp_dheap *h, rp_dtimer *t, rp_usec expires);
/* Unqueue t; harmless if it is not queued. */
void rp_dheap_remove(rp_dheap *h, rp_dtimer *t);
/* The earliest timer, or NULL. */
rp_dtimer *rp_dheap_first(const rp_dheap *h);
void rp_dheap_free(rp_dheap *h);

#endif
