/* Timed callbacks and suspended connections: rp_callbacks.c owns the
 * timers modules registered (ap_mpm_register_timed_callback, declared in
 * rp.h) and the list of connections a module suspended, with their count.
 * A due timer is queued as a job for the next idle worker; a connection
 * its module moved on is handed back to the worker that ran the callback,
 * which runs it (this file never runs a connection).
 * Callers: rp_child.c (queue_due from the loop thread; run, resume_next
 * from workers; suspended for the scoreboard), rp_conn.c (suspend). */
#ifndef RP_CALLBACKS_H
#define RP_CALLBACKS_H

#include "rp_conn_life.h"

/* Timer jobs carry the timer with this bit set (user-space pointers are
 * aligned, so no connection's job has it). */
#define RP_TIMER_TAG UINT64_C(1)

/* Queue the timers due by now; returns when the next is due, or 0. */
apr_time_t rp_callbacks_queue_due(apr_time_t now);
/* Run a timer job's callback.  Returns the suspended connections that
 * their module moved on meanwhile (linked by next_suspended), for
 * rp_callbacks_resume_next. */
rp_conn *rp_callbacks_run(uint64_t token);
/* Take the first of *moved back from its module (resume hooks run); the
 * caller runs it.  NULL when none is left. */
rp_conn *rp_callbacks_resume_next(rp_conn **moved);
/* A module's handler suspended rc: it waits here, without a worker. */
void rp_callbacks_suspend(rp_conn *rc);
apr_uint32_t rp_callbacks_suspended(void);

#endif
