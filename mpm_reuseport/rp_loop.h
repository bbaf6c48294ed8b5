/* The child's event loop: rp_loop.c owns the connection poller (where idle
 * workers take turns waiting, rp_lf.h) and the loop thread's own poller,
 * the slot table, the park lock and the timer queues of parked
 * connections.  It knows a connection only by its rp_parking, and never
 * closes one: what it cannot park, or what timed out, goes back to its
 * caller.
 * Callers: rp_child.c (set-up, the leader's wait, the loop thread's
 * turns, shutdown), rp_conn.c (park), rp_conn_life.c (parking_init,
 * unslot), rp_accept.c (listeners, park_fresh, wakeup), rp_callbacks.c
 * (jobs, serving, wakeup).
 * Ownership: a connection keeps its slot from its first wait to its close,
 * and the poller watches it all that time (edge-triggered).  A parked
 * connection (on a timer queue, its slot marked parked) belongs to
 * whoever claims its slot first under the park lock: the worker that got
 * an event it waits for, or the loop thread when its timer expires.  An
 * event for a connection that is running, or that waits for something
 * else, is remembered in its slot (pending) and looked at when it parks
 * next.  Events carry slot and generation (bumped when the slot is freed),
 * so a stale event never touches a later connection. */
#ifndef RP_LOOP_H
#define RP_LOOP_H

#include "rp_lf.h"
#include "rp_poll.h"             /* RP_POLL_*: what a parked one waits for */
#include "rp_timeq.h"

#include "apr_pools.h"
#include "apr_time.h"

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

/* What the loop keeps in each connection (rp_conn_life.h embeds it). */
typedef struct rp_parking {
    int fd;
    int slot;                   /* in the slot table; -1 before parking */
    int watched;                /* RP_POLL_* the poller watches */
    rp_park why;                /* why it is (or was last) parked */
    rp_timer timer;             /* on a timer queue while parked */
    rp_dtimer deadline;         /* RP_PARK_READ: on the deadline heap */
} rp_parking;

void rp_parking_init(rp_parking *pk, int fd);

/* The child's slot (its scoreboard counts) and its workers' turns. */
apr_status_t rp_loop_setup(apr_pool_t *p, int slot, rp_lf *lf);
/* Set up and not shut down: parked connections are watched. */
int rp_loop_serving(void);
/* Nobody watches parked connections from now on; waiting workers leave. */
void rp_loop_shutdown(void);
/* Make the loop thread's wait return (any thread; async-signal-safe;
 * nothing before set-up). */
void rp_loop_wakeup(void);

/* Listeners on the connection poller: their jobs carry this bit and the
 * listener's index; slot tokens never have it. */
#define RP_LISTENER_TOKEN (UINT64_C(1) << 63)
apr_status_t rp_loop_watch_listener(int fd, int idx);
void rp_loop_forget_listener(int fd);

/* What rp_loop_park and rp_loop_park_fresh report. */
#define RP_LOOP_PARKED 0        /* the connection may be gone now */
#define RP_LOOP_READY 1         /* it is ready already: run it again */
#define RP_LOOP_REFUSED (-1)    /* not parked (no memory, poller error,
                                   or shut down): the caller closes it */

/* Park pk (a worker's): watched, on a timer queue (RP_PARK_READ: on the
 * deadline heap, timeout from now).  RP_LOOP_READY when an event came
 * while it ran, pk->why saying what it waited for.  When its time is up,
 * the loop thread takes it (rp_loop_take_expired), or, RP_PARK_READ,
 * hands it to a worker (rp_conn.c finds out it is late). */
int rp_loop_park(rp_parking *pk, rp_park why, int events,
                 apr_interval_time_t timeout);
/* Park a connection the poller never watched, waiting for its first
 * request, from the loop thread (which cannot run it). */
int rp_loop_park_fresh(rp_parking *pk, apr_interval_time_t timeout);
/* Give back pk's slot (when it is closed). */
void rp_loop_unslot(rp_parking *pk);

/* The leader's wait (or, wait 0, a look without waiting): ready listeners
 * and the connections that waited for what happened (claimed now: the
 * job's token is their rp_parking), at most RP_LF_BATCH jobs. */
int rp_loop_take_jobs(rp_lf_job *jobs, int wait);
/* Queue a job for the next idle worker (rp_lf_push's result), then
 * rp_loop_wake_leader so a leader in its wait takes it. */
int rp_loop_push_job(const rp_lf_job *job);
void rp_loop_wake_leader(void);

/* The loop thread's turn: wait until the next timer, or `also_at` (0:
 * none), or a wake-up; the parking counts go to the scoreboard first. */
void rp_loop_wait(apr_time_t now, apr_time_t also_at);
/* Claim up to max parked connections whose time is up (with idle_for,
 * also keep-alive ones idle that long, but for those spare() says to
 * leave to their timeout; spare may be NULL), oldest first; the caller
 * ends them.  A keep-alive one whose next request came meanwhile is not
 * claimed: it goes to a worker.  spare runs under the park lock. */
int rp_loop_take_expired(apr_time_t idle_for, int (*spare)(rp_parking *),
                         rp_parking **out, int max);
/* Requests read ahead whose deadline passed go to a worker. */
void rp_loop_hand_over_late_reads(void);

#endif
