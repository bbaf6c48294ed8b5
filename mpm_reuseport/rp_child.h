/* A child process's internals, shared by its parts:
 *   rp_child.c      process life: start-up, worker threads, signals,
 *                   stopping
 *   rp_loop.c       parking (timer queues, the slot table) and the loop
 *                   thread: timeouts, draining
 *   rp_accept.c     accepting, by the leading worker
 *   rp_conn_life.c  a connection's creation and release, and the stock of
 *                   connection pools
 *   rp_conn.c       a connection's state machine, run by workers
 * Idle workers take turns waiting on the connection poller (rp_lf.h), so a
 * ready connection is run by the worker that saw it (no hand-off between
 * threads).
 * Ownership: a connection keeps its slot from its first wait to its close,
 * and the poller watches it all that time (edge-triggered).  A parked
 * connection (on a timer queue, its slot marked parked) belongs to
 * whoever claims its slot first under park_lock: the worker that got an
 * event it waits for, or the loop when its timer expires.  An event for a
 * connection that is running, or that waits for something else, is
 * remembered in its slot (pending) and looked at when it parks next.
 * Events carry slot and generation (bumped when the slot is freed), so a
 * stale event never touches a later connection. */
#ifndef RP_CHILD_H
#define RP_CHILD_H

#include "rp.h"
#include "rp_lf.h"
#include "rp_poll.h"
#include "rp_timeq.h"

#include "apr_thread_proc.h"

#include <pthread.h>
#include <signal.h>

typedef enum { RP_RUN, RP_GRACEFUL, RP_UNGRACEFUL } rp_stop_mode;

typedef struct rp_listener {
    ap_listen_rec *lr;
    int fd;
} rp_listener;

/* Why a connection is parked. */
typedef enum {
    RP_PARK_NONE = 0,
    RP_PARK_KEEPALIVE,          /* waiting for the next request */
    RP_PARK_IO,                 /* write completion or a module's wait */
    RP_PARK_LINGER,             /* lingering close: reading to EOF */
    RP_PARK_NEW,                /* taken from the queue while stopping,
                                   waiting for its first request */
    RP_PARK_READ                /* a request read ahead, not whole yet
                                   (rp_readahead.h): until its deadline */
} rp_park;

typedef struct rp_ra rp_ra;

typedef struct rp_conn {
    conn_state_t pub;           /* c->cs */
    conn_rec *c;                /* NULL until a worker creates it */
    apr_pool_t *pool;           /* everything of the connection */
    apr_socket_t *sock;
    int fd;
    int watched;                /* RP_POLL_* the poller watches */
    int pre_closed;             /* pre_close_connection hooks ran */
    int last_request;           /* the client said it sends no more */
    ap_sb_handle_t *sbh;
    rp_park park;               /* why it is (or was last) parked */
    rp_timer timer;             /* on a timer queue while parked */
    rp_dtimer deadline;         /* RP_PARK_READ: on the deadline heap */
    rp_ra *ra;                  /* its read-ahead (after pre_connection) */
    int keepalive_wake;         /* resumed from a keep-alive wait */
    int module_wait;            /* parked in CONN_STATE_ASYNC_WAITIO */
    int slot;                   /* in the slot table; -1 before parking */
    apr_time_t linger_until;    /* lingering close gives up then */
    struct rp_conn *next_suspended;    /* rp_callbacks.c */
} rp_conn;

/* Slot table entry (permanent memory: stale events may look at it). */
typedef struct rp_slot {
    rp_conn *rc;                /* NULL: free */
    apr_uint32_t gen;           /* bumped when the slot is freed */
    int parked;
    int want;                   /* RP_POLL_* it waits for, while parked */
    int pending;                /* RP_POLL_* seen while it could not act */
    int peer_closed;            /* the client's FIN was seen (RP_POLL_HUP) */
    int reruns_after_fin;       /* waits to read skipped since then */
} rp_slot;

typedef struct rp_child_state {
    int slot, bucket;
    apr_pool_t *pchild;
    apr_pool_t *pruntime;       /* outlives connection pools */
    rp_poller *conn_poller;     /* parked connections; idle workers wait */
    rp_lf *lf;                  /* ... one at a time, latest idle first */
    rp_poller *loop_poller;     /* the loop waits here (timers, wake-ups) */
    rp_listener *listeners;
    int nlisteners;

    /* Parking: timers and slots, under park_lock.  loop_wake_at: when the
     * loop's current wait ends (0: not before a wake-up), so a worker
     * parking an earlier timer wakes it. */
    pthread_mutex_t park_lock;
    rp_timeqs keepalive_qs, io_qs, linger_qs;
    rp_dheap read_heap;         /* requests read ahead (RP_PARK_READ) */
    apr_time_t loop_wake_at;
    rp_slot *slots;
    int nslots;
    int *free_list, nfree;      /* stack of free slot indexes */


    apr_thread_t *starter, *loop, **workers;
    apr_uint32_t workers_running;
    apr_uint32_t live_conns;    /* accepted and not yet closed */
    apr_uint32_t suspended;

    /* Per worker: the connection it runs and its socket (atomic stores
     * by that worker), so an ungraceful stop can cut them. */
    conn_rec **conns;
    int *conn_fds;

    volatile rp_stop_mode mode; /* set by whoever decides to stop */
    volatile sig_atomic_t got_sigterm;
    volatile int draining;      /* answers carry Connection: close */
    volatile int loop_done;     /* nobody watches parked connections */
    volatile int starter_may_exit;
    apr_uint32_t conns_left;    /* MaxConnectionsPerChild budget */
} rp_child_state;

extern rp_child_state rp_child;

/* rp_child.c */
void rp_child_request_stop(rp_stop_mode mode);
void rp_child_publish_connection(int tid, conn_rec *c, apr_socket_t *sock);

/* rp_conn.c: workers */
void rp_conn_dispatch(rp_conn *rc, apr_thread_t *thd, int tid);
void rp_conn_note_request(request_rec *r);    /* post_read_request */
/* rp_conn.c: closing (any owner) */
void rp_conn_close(rp_conn *rc);       /* now, no lingering */

/* rp_conn_life.c: a connection's pool, creation and release.  Callers:
 * rp_child.c (setup, before rp_loop_setup), rp_accept.c (accept, under its
 * lock), rp_conn.c (release). */
apr_status_t rp_conn_life_setup(int max_pools);  /* pools kept for reuse */
/* A new connection from `listener`, its socket accepted into a pool from
 * the stock; NULL with *rv saying why (the pool is back in the stock). */
rp_conn *rp_conn_accept(apr_socket_t *listener, apr_status_t *rv);
void rp_conn_release(rp_conn *rc);     /* socket already closed */

/* rp_hold.c: response headers held until the body (no core setaside) */
void rp_hold_add(request_rec *r);      /* post_read_request */

/* rp_accept.c (listener tokens have the top bit set; slot tokens not) */
#define RP_LISTENER_TOKEN (UINT64_C(1) << 63)
apr_status_t rp_accept_setup(void);
rp_conn *rp_accept(int listener);      /* the leader, on its event */
void rp_accept_stop(void);
int rp_accept_listening(void);
apr_time_t rp_accept_rest_until(void); /* 0, or when to rp_accept_retry */
void rp_accept_retry(void);
/* The loop, while accepting is paused (rp_balance.c): look again; returns
 * when to look next (0: not paused). */
apr_time_t rp_accept_balance(apr_time_t now);

/* rp_balance.c, under the accept lock: whether to pause (or stay paused)
 * accepting, given the bucket's siblings; and publish our count. */
int rp_balance_pause(int paused, apr_time_t now);
void rp_balance_publish(void);

/* rp_callbacks.c: timed callbacks and suspended connections.  Timer jobs
 * carry the timer with this bit set (user-space pointers are aligned). */
#define RP_TIMER_TAG UINT64_C(1)
apr_time_t rp_callbacks_queue_due(apr_time_t now); /* loop: next due, or 0 */
void rp_callbacks_run(uint64_t token, apr_thread_t *thd, int tid);
void rp_callbacks_suspend(rp_conn *rc);

/* rp_loop.c */
apr_status_t rp_loop_setup(void);
void *APR_THREAD_FUNC rp_loop_main(apr_thread_t *thd, void *arg);
void rp_loop_wakeup(void);
/* Park rc (a worker's): watched, on a timer queue (RP_PARK_READ: on the
 * deadline heap, timeout from now).  Returns 1 if it is ready already (an
 * event came while it ran): the caller runs it again, rc->park saying
 * what it waited for.  Else 0: rc may be gone.  When its time is up, the
 * loop closes it, or, RP_PARK_READ, hands it to a worker (rp_conn.c
 * finds out it is late). */
int rp_loop_park(rp_conn *rc, rp_park why, int events,
                 apr_interval_time_t timeout);
/* Park a connection the poller never watched, waiting for its first
 * request, from the loop thread (which cannot run it). */
void rp_loop_park_fresh(rp_conn *rc, apr_interval_time_t timeout);
/* The connection an event names, now ours if it waited for that event;
 * else NULL (stale, or remembered for its next park). */
rp_conn *rp_loop_claim(uint64_t token, int events);
/* Give back rc's slot (when it is closed). */
void rp_loop_unslot(rp_conn *rc);

#endif
