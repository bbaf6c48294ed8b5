/* Readiness seam.  Listeners are watched edge-triggered, each new
 * connection waking one waiter across all pollers that watch it (children
 * sharing a bucket); readiness present when watching starts gives an event
 * too, so watching again re-arms.  Connections are watched for good,
 * edge-triggered: each new readiness (data arrived, buffer space freed,
 * hang-up) is one event, and nothing has to be re-armed between requests;
 * the caller remembers what an event said if it could not act on it yet.  Several threads may wait
 * on one poller; each event goes to one.  Events carry a 64-bit token
 * given when watching.  One backend per OS: rp_poll_epoll.c (Linux);
 * kqueue (EV_CLEAR) fits the same contract. */
#ifndef RP_POLL_H
#define RP_POLL_H

#include "apr_pools.h"
#include "apr_errno.h"

#include <stdint.h>

typedef struct rp_poller rp_poller;

#define RP_POLL_IN   1
#define RP_POLL_OUT  2
#define RP_POLL_HUP  4          /* error or hang-up: read to find out */

typedef struct rp_poll_event {
    uint64_t token;             /* as given when watched or armed */
    int events;                 /* RP_POLL_* */
} rp_poll_event;

/* Descriptors are closed with the pool. */
apr_status_t rp_poller_create(rp_poller **out, apr_pool_t *p);

/* The caller accepts until the queue is empty after each event: an event
 * comes only for a connection that arrives, or when watching starts. */
apr_status_t rp_poller_watch_listener(rp_poller *pl, int fd, uint64_t token);

/* Watch connection fd for `events` (RP_POLL_IN, RP_POLL_OUT; hang-ups
 * always) from now on, with token; *watched is what the backend watches
 * already (start with 0): a call with more events widens it.  Readiness
 * present at the call gives an event too. */
apr_status_t rp_poller_watch_conn(rp_poller *pl, int fd, int events,
                                  uint64_t token, int *watched);

/* Stop watching fd (a listener, or a connection before it is closed). */
void rp_poller_forget(rp_poller *pl, int fd);

/* Wait up to timeout_ms (-1: no limit) and fill at most max events.
 * Returns their number (0 on timeout or interruption); *woken is set if
 * rp_poller_wakeup was called since the last wait. */
int rp_poller_wait(rp_poller *pl, int timeout_ms, rp_poll_event *ev,
                   int max, int *woken);

/* Make the current or next wait return (any thread; async-signal-safe). */
void rp_poller_wakeup(rp_poller *pl);

/* From now on every wait, in every thread, returns at once with *woken. */
void rp_poller_shutdown(rp_poller *pl);

#endif
