/* httpd 2.4's MPM services for modules beyond the connection states:
 * - ap_mpm_register_timed_callback: a function run by a worker once a
 *   delay has passed (mod_dialup paces a response with it).  The loop
 *   thread keeps the timers; a due one is queued for the next idle worker
 *   (rp_lf.h) like an event.
 * - CONN_STATE_SUSPENDED: a module's handler returned SUSPENDED and goes on
 *   with the connection from such callbacks.  The connection stays ours
 *   (counted, kept through a graceful stop), without a worker or a
 *   scoreboard slot; the suspend_connection and resume_connection hooks
 *   run as in mpm_event.  When the module has moved it on (c->cs->state no
 *   longer SUSPENDED once no callback runs), a worker takes it back: write
 *   completion, then keep-alive or close.  Stock mpm_event in 2.4 never
 *   takes such a connection back: it stays open until the client gives up.
 */
#include "rp_callbacks.h"

#include "apr_atomic.h"
#include "mpm_common.h"

#include <stdlib.h>

typedef struct rp_timed {
    struct rp_timed *next;
    apr_time_t when;
    ap_mpm_callback_fn_t *fn;
    void *baton;
} rp_timed;

static struct {
    pthread_mutex_t lock;
    rp_timed *timers;           /* sorted by when */
    rp_conn *suspended;         /* linked by next_suspended */
    int running;                /* callbacks running now */
    apr_uint32_t nsuspended;    /* how many (atomic) */
} cb = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0, 0 };

apr_status_t rp_callbacks_register(apr_time_t t, ap_mpm_callback_fn_t *fn,
                                   void *baton)
{
    rp_timed *te, **pp;
    int first;

    if (!rp_loop_serving()) {
        return APR_ENOTIMPL;    /* not in a serving child */
    }
    if (!(te = malloc(sizeof(*te)))) {
        return APR_ENOMEM;
    }
    te->when = apr_time_now() + t;
    te->fn = fn;
    te->baton = baton;
    pthread_mutex_lock(&cb.lock);
    for (pp = &cb.timers; *pp && (*pp)->when <= te->when; pp = &(*pp)->next) {
        continue;
    }
    te->next = *pp;
    *pp = te;
    first = cb.timers == te;
    pthread_mutex_unlock(&cb.lock);
    if (first) {
        rp_loop_wakeup();       /* it plans its wait by the first timer */
    }
    return APR_SUCCESS;
}

apr_time_t rp_callbacks_queue_due(apr_time_t now)
{
    apr_time_t next;
    int queued = 0;

    pthread_mutex_lock(&cb.lock);
    while (cb.timers && cb.timers->when <= now) {
        rp_timed *te = cb.timers;
        rp_lf_job job;
        job.token = (uint64_t)(apr_uintptr_t)te | RP_TIMER_TAG;
        job.events = 0;
        if (rp_loop_push_job(&job) < 0) {
            break;              /* the queue is full: next tick */
        }
        cb.timers = te->next;
        queued = 1;
    }
    next = !cb.timers ? 0 : cb.timers->when > now ? cb.timers->when
                                                   : now + 1000;
    pthread_mutex_unlock(&cb.lock);
    if (queued) {
        rp_loop_wake_leader();
    }
    return next;
}

/* Under cb.lock: unlink the suspended connections their module moved on. */
static rp_conn *take_moved_on_locked(void)
{
    rp_conn *moved = NULL, **pp = &cb.suspended;

    while (*pp) {
        rp_conn *rc = *pp;
        if (rc->pub.state != CONN_STATE_SUSPENDED) {
            *pp = rc->next_suspended;
            rc->next_suspended = moved;
            moved = rc;
        }
        else {
            pp = &rc->next_suspended;
        }
    }
    return moved;
}

rp_conn *rp_callbacks_run(uint64_t token)
{
    rp_timed *te = (rp_timed *)(apr_uintptr_t)(token & ~RP_TIMER_TAG);
    rp_conn *moved = NULL;

    pthread_mutex_lock(&cb.lock);
    cb.running++;
    pthread_mutex_unlock(&cb.lock);
    te->fn(te->baton);
    free(te);
    /* Only once no callback runs: one still running may be moving its
     * connection on right now. */
    pthread_mutex_lock(&cb.lock);
    if (--cb.running == 0) {
        moved = take_moved_on_locked();
    }
    pthread_mutex_unlock(&cb.lock);
    return moved;
}

rp_conn *rp_callbacks_resume_next(rp_conn **moved)
{
    rp_conn *rc = *moved;

    if (rc) {
        *moved = rc->next_suspended;
        apr_atomic_dec32(&cb.nsuspended);
        rc->c->sbh = rc->sbh;
        ap_run_resume_connection(rc->c, NULL);
    }
    return rc;
}

void rp_callbacks_suspend(rp_conn *rc)
{
    ap_run_suspend_connection(rc->c, NULL);
    rc->c->sbh = NULL;          /* no worker's slot while suspended */
    apr_atomic_inc32(&cb.nsuspended);
    pthread_mutex_lock(&cb.lock);
    rc->next_suspended = cb.suspended;
    cb.suspended = rc;
    pthread_mutex_unlock(&cb.lock);
}

apr_uint32_t rp_callbacks_suspended(void)
{
    return apr_atomic_read32(&cb.nsuspended);
}
