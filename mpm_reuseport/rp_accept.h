/* Accepting: rp_accept.c owns the child's copies of its bucket's listeners
 * (watched on the loop's connection poller, rp_loop.h), whether they are
 * watched (listening, resting after an error, paused for the siblings,
 * rp_balance.h), and the MaxConnectionsPerChild budget.  It only hands
 * sockets over: a connection it accepts goes to its caller, and one it
 * takes while stopping waits parked for its first request.
 * Callers: rp_child.c only (setup; accept from the leading worker; the
 * rest from the loop thread). */
#ifndef RP_ACCEPT_H
#define RP_ACCEPT_H

#include "rp_conn_life.h"

/* The listeners of `bucket`, watched from now on; slot: the child's, for
 * the scoreboard. */
apr_status_t rp_accept_setup(apr_pool_t *p, int slot, int bucket);
/* The leader, on listener's job: a new connection, or NULL.  *last is
 * set when it was the last that MaxConnectionsPerChild allows (accepting
 * has stopped; the caller stops the child).  *more is set while the
 * kernel's queue may hold more: the job must then be queued again, as the
 * listener (edge-triggered) gives no event for them. */
rp_conn *rp_accept(int listener, int *last, int *more);
/* Whether a job for listener should be queued (a poller event, or the
 * job queueing itself again while there is more): one at a time, so
 * looking at the poller while it waits adds none (from the call that says
 * 1 until its job runs, or rp_accept_job_dropped when it could not be
 * queued: then the listener is watched again, which gives an event). */
int rp_accept_job_wanted(int listener);
void rp_accept_job_dropped(int listener);
/* Stop accepting: our copies of the listeners close.  With a `may_take`,
 * what the kernel completed already is first taken and parked, in passes
 * each of which runs only while may_take() says so (a graceful stop that
 * turns ungraceful must not take connections only to cut them).  NULL: an
 * ungraceful stop, the queues stay with the parent's copies (the next
 * generation serves them after a full restart). */
void rp_accept_stop(int (*may_take)(void));
int rp_accept_listening(void);
/* 0, or when to call rp_accept_retry after an accept error. */
apr_time_t rp_accept_rest_until(void);
void rp_accept_retry(void);
/* While accepting is paused (rp_balance.h): look again; returns when to
 * look next (0: not paused). */
apr_time_t rp_accept_balance(apr_time_t now);

#endif
