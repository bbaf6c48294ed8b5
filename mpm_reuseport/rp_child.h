/* A child process's internals, shared by its parts:
 *   rp_child.c   process life: start-up, threads, signals, stopping
 *   rp_loop.c    the event loop thread: accepts, waits on parked
 *                connections and their timers, lingering reads
 *   rp_conn.c    a connection's state machine, run by workers
 * Ownership: a connection belongs to exactly one thread at a time: a
 * worker while it runs it, else the loop (parked: one-shot armed in the
 * poller and on a timer queue). */
#ifndef RP_CHILD_H
#define RP_CHILD_H

#include "rp.h"
#include "rp_poll.h"
#include "rp_queue.h"
#include "rp_timeq.h"

#include "apr_thread_proc.h"

#include <pthread.h>
#include <signal.h>

typedef enum { RP_RUN, RP_GRACEFUL, RP_UNGRACEFUL } rp_stop_mode;

/* What the poller's data pointer designates. */
typedef enum { RP_POLL_LISTENER = 1, RP_POLL_CONN } rp_poll_kind;

typedef struct rp_listener {
    rp_poll_kind kind;          /* RP_POLL_LISTENER; first */
    ap_listen_rec *lr;
    int fd;
} rp_listener;

/* Why a connection is parked with the loop. */
typedef enum {
    RP_PARK_NONE = 0,
    RP_PARK_KEEPALIVE,          /* waiting for the next request */
    RP_PARK_IO,                 /* write completion or a module's wait */
    RP_PARK_LINGER              /* lingering close: reading to EOF */
} rp_park;

typedef struct rp_conn {
    rp_poll_kind kind;          /* RP_POLL_CONN; first */
    conn_state_t pub;           /* c->cs */
    conn_rec *c;                /* NULL until a worker creates it */
    apr_pool_t *pool;           /* everything of the connection */
    apr_socket_t *sock;
    int fd;
    int registered;             /* known to the poller */
    int pre_closed;             /* pre_close_connection hooks ran */
    ap_sb_handle_t *sbh;
    rp_park park;
    rp_timer timer;             /* on a timer queue while parked */
} rp_conn;

typedef struct rp_child_state {
    int slot, bucket;
    apr_pool_t *pchild;
    apr_pool_t *pruntime;       /* outlives connection pools */
    rp_queue *queue;
    rp_poller *poller;
    rp_listener *listeners;
    int nlisteners;

    /* Parked connections' timers; lock taken by workers parking and by
     * the loop.  loop_wake_at: when the loop's current wait ends (0: not
     * before a wake-up), so a worker parking an earlier timer wakes it. */
    pthread_mutex_t timers_lock;
    rp_timeqs keepalive_qs, io_qs;
    rp_timeq linger_q;
    apr_time_t loop_wake_at;

    apr_thread_t *starter, *loop, **workers;
    apr_uint32_t workers_running;
    apr_uint32_t live_conns;    /* accepted and not yet closed */
    apr_uint32_t suspended;

    /* Per worker: its connection and socket, so a stop can cut connections
     * in progress; cleared before the socket closes, under conn_lock. */
    pthread_mutex_t conn_lock;
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
void rp_conn_run(rp_conn *rc, apr_thread_t *thd, int tid);
/* rp_conn.c: closing (any owner) */
void rp_conn_close(rp_conn *rc);       /* now, no lingering */
void rp_conn_release(rp_conn *rc);     /* socket already closed */

/* rp_loop.c */
apr_status_t rp_loop_setup(void);
void *APR_THREAD_FUNC rp_loop_main(apr_thread_t *thd, void *arg);
void rp_loop_wakeup(void);
/* Park: put rc on the right timer queue and arm it (worker side). */
void rp_loop_park(rp_conn *rc, rp_park why, int events,
                  apr_interval_time_t timeout);

#endif
