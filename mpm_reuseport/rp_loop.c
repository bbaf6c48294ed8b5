/* Parking and the loop thread.
 * Parking (any worker): a connection waiting for readiness goes on a timer
 * queue; at its first wait it gets a slot and the poller (conn_poller,
 * where the leading worker waits) starts watching it, edge-triggered,
 * until it closes: later waits cost no system call.  The first to claim a
 * parked connection (a worker on its event, or the loop on its timer) owns
 * it.
 * The loop thread closes what times out, promotes a leader when nobody
 * took over (rp_lf.h), queues modules' timed callbacks when due
 * (rp_callbacks.c), re-watches listeners after an accept error, and when
 * the child stops, stops listening, closes idle keep-alive connections and
 * returns once none is left (at once if the stop is ungraceful). */
#include "rp_child.h"

#include "apr_atomic.h"
#include "http_connection.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#define RP_MAX_EVENTS 16
/* While draining: check every so often, and give a keep-alive connection
 * this long to send the request that may already be on its way. */
#define RP_DRAIN_TICK apr_time_from_msec(50)
#define RP_IDLE_GRACE apr_time_from_msec(250)
/* While workers are busy: how soon a free leadership gets a leader. */
#define RP_LF_TICK apr_time_from_msec(1)

void rp_loop_wakeup(void)
{
    rp_poller_wakeup(rp_child.loop_poller);
}

/* ---- set-up ------------------------------------------------------------ */

apr_status_t rp_loop_setup(void)
{
    apr_status_t rv;

    if ((rv = rp_poller_create(&rp_child.loop_poller, rp_child.pruntime))
        || (rv = rp_poller_create(&rp_child.conn_poller, rp_child.pruntime))) {
        return rv;
    }
    pthread_mutex_init(&rp_child.park_lock, NULL);
    return rp_accept_setup();
}

/* ---- slots (under park_lock) ---------------------------------------------- */

static int slot_alloc_locked(rp_conn *rc)
{
    int idx;

    if (!rp_child.nfree) {
        int n = rp_child.nslots ? rp_child.nslots * 2 : 64, i;
        rp_slot *slots = realloc(rp_child.slots, n * sizeof(*slots));
        int *free_list = slots ? realloc(rp_child.free_list,
                                         n * sizeof(*free_list)) : NULL;
        if (slots) {
            rp_child.slots = slots;
        }
        if (!free_list) {
            return -1;
        }
        rp_child.free_list = free_list;
        for (i = n - 1; i >= rp_child.nslots; i--) {
            slots[i].rc = NULL;
            slots[i].gen = 0;
            slots[i].parked = 0;
            slots[i].want = 0;
            slots[i].pending = 0;
            slots[i].peer_closed = 0;
            slots[i].reruns_after_fin = 0;
            free_list[rp_child.nfree++] = i;
        }
        rp_child.nslots = n;
    }
    idx = rp_child.free_list[--rp_child.nfree];
    rp_child.slots[idx].rc = rc;
    rp_child.slots[idx].parked = 0;
    rp_child.slots[idx].pending = 0;
    rp_child.slots[idx].peer_closed = 0;
    rp_child.slots[idx].reruns_after_fin = 0;
    return idx;
}

void rp_loop_unslot(rp_conn *rc)
{
    if (rc->slot < 0) {
        return;
    }
    pthread_mutex_lock(&rp_child.park_lock);
    rp_child.slots[rc->slot].rc = NULL;
    rp_child.slots[rc->slot].gen++;     /* its events are stale from now */
    rp_child.slots[rc->slot].parked = 0;
    rp_child.slots[rc->slot].pending = 0;
    rp_child.free_list[rp_child.nfree++] = rc->slot;
    pthread_mutex_unlock(&rp_child.park_lock);
    rc->slot = -1;
}

/* Take a parked connection out of the parking (under park_lock). */
static void unpark_locked(rp_conn *rc)
{
    rp_slot *s = &rp_child.slots[rc->slot];

    s->parked = 0;
    rp_timer_remove(&rc->timer);
    rp_dheap_remove(&rp_child.read_heap, &rc->deadline);
}

/* ---- parking (worker side) --------------------------------------------- */

static rp_timeq *queue_for(rp_park why, apr_interval_time_t timeout)
{
    /* New connections go with I/O waits: they are not idle keep-alive
     * connections that a graceful stop may close early. */
    rp_timeqs *set = why == RP_PARK_KEEPALIVE ? &rp_child.keepalive_qs
                     : why == RP_PARK_IO || why == RP_PARK_NEW ? &rp_child.io_qs
                     : &rp_child.linger_qs;
    rp_timeq *q = rp_timeqs_get(set, timeout);

    return q ? q : rp_timeqs_nearest(set, timeout);
}

static void log_park_failure(apr_status_t rv)
{
    static apr_uint32_t logged;

    mpmng_log_once(&logged, APLOG_MARK, APLOG_ERR, rv, ap_server_conf,
                   RP_LOG_TAG "cannot wait for a connection (poller or "
                   "memory): closing it; check memory and descriptor limits "
                   "(logged once per child)");
}

static uint64_t token_of(int slot, apr_uint32_t gen)
{
    return ((uint64_t)(apr_uint32_t)slot << 32) | gen;
}

/* Under park_lock: start rc's timer; when it expires. */
static apr_time_t start_timer_locked(rp_conn *rc, rp_park why,
                                     apr_interval_time_t timeout)
{
    apr_time_t now = apr_time_now();
    rp_timeq *q;

    if (why == RP_PARK_READ) {
        return rp_dheap_add(&rp_child.read_heap, &rc->deadline, now + timeout)
               ? rc->deadline.expires : 0;
    }
    if (!(q = queue_for(why, timeout))) {
        return 0;
    }
    rp_timeq_append(q, &rc->timer, now);
    return rc->timer.expires;
}

/* Under park_lock: put rc on its timer queue, marked parked. */
static int park_locked(rp_conn *rc, rp_park why, int events,
                       apr_interval_time_t timeout, int *wake)
{
    rp_slot *s = &rp_child.slots[rc->slot];
    apr_time_t expires = start_timer_locked(rc, why, timeout);

    if (!expires) {
        return 0;
    }
    s->parked = 1;
    s->want = events;
    rc->park = why;
    if (!rp_child.loop_wake_at || expires < rp_child.loop_wake_at) {
        rp_child.loop_wake_at = expires;
        *wake = 1;
    }
    return 1;
}

/* An event said "readable" while rc ran: true, or already consumed?  The
 * next step (reading a request) would block on a consumed one. */
static int readable_now(const rp_conn *rc)
{
    char byte;
    ssize_t n = recv(rc->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* Under park_lock: after the client's FIN, a wait to read is not waited:
 * the poller reports edges, and the read that took the FIN's edge may have
 * told its reader nothing (core hands up an empty brigade for a
 * non-blocking read at the end of the stream and says APR_EOF only at the
 * next read; mod_http2 takes the first as "nothing yet" and returns to
 * wait).  A level-triggered poll would report the socket readable again;
 * so run the connection again, a few times at most (a module that ignores
 * the end then waits for its timeout, as it would anyway). */
#define RP_RERUNS_AFTER_FIN 2

static int rerun_after_fin_locked(rp_conn *rc, rp_park why, int events)
{
    rp_slot *s = &rp_child.slots[rc->slot];

    if (!s->peer_closed || !(events & RP_POLL_IN) || why == RP_PARK_LINGER
        || s->reruns_after_fin >= RP_RERUNS_AFTER_FIN) {
        return 0;
    }
    s->reruns_after_fin++;
    return 1;
}

/* Under park_lock: take what was remembered for rc that it waits for now;
 * 1 if that makes it ready. */
static int take_pending_locked(rp_conn *rc, int events)
{
    rp_slot *s = &rp_child.slots[rc->slot];
    int got = s->pending & (events | RP_POLL_HUP);

    s->pending &= ~got;
    return got != 0;
}

static void park_failed(rp_conn *rc, apr_status_t rv)
{
    log_park_failure(rv);
    rp_conn_close(rc);
}

int rp_loop_park(rp_conn *rc, rp_park why, int events,
                 apr_interval_time_t timeout)
{
    apr_status_t rv;
    uint64_t token = 0;
    int wake = 0, parked;

    if (rp_child.loop_done) {
        rp_conn_close(rc);      /* ungraceful stop: nobody would watch it */
        return 0;
    }
    pthread_mutex_lock(&rp_child.park_lock);
    if (rc->slot < 0) {
        rc->slot = slot_alloc_locked(rc);
    }
    if (rc->slot >= 0) {        /* the table may move: read it locked */
        token = token_of(rc->slot, rp_child.slots[rc->slot].gen);
    }
    pthread_mutex_unlock(&rp_child.park_lock);
    if (rc->slot < 0) {
        park_failed(rc, APR_ENOMEM);
        return 0;
    }
    /* Still ours: an event from here on is remembered as pending. */
    if (events & ~rc->watched) {
        rv = rp_poller_watch_conn(rp_child.conn_poller, rc->fd, events,
                                  token, &rc->watched);
        if (rv != APR_SUCCESS) {
            park_failed(rc, rv);
            return 0;
        }
    }
    /* A module waiting to read (mod_http2's main connection, blocked on
     * the client's flow-control window) may have left unread bytes that
     * came while it ran, maybe after an event we woke it for: the poller
     * reports edges, so look, as a level-triggered poll would. */
    if (why == RP_PARK_IO && events == RP_POLL_IN && readable_now(rc)) {
        rc->park = why;
        return 1;
    }
    for (;;) {
        pthread_mutex_lock(&rp_child.park_lock);
        if (rerun_after_fin_locked(rc, why, events)) {
            pthread_mutex_unlock(&rp_child.park_lock);
            rc->park = why;
            return 1;
        }
        if (take_pending_locked(rc, events)) {
            pthread_mutex_unlock(&rp_child.park_lock);
            rc->park = why;
            if (events != RP_POLL_IN || why == RP_PARK_LINGER
                || readable_now(rc)) {
                return 1;
            }
            continue;           /* consumed meanwhile: park after all */
        }
        parked = park_locked(rc, why, events, timeout, &wake);
        pthread_mutex_unlock(&rp_child.park_lock);
        break;
    }
    /* From here on a worker or the loop may own rc. */
    if (!parked) {
        park_failed(rc, APR_ENOMEM);
    }
    else if (wake) {
        rp_loop_wakeup();
    }
    return 0;
}

void rp_loop_park_fresh(rp_conn *rc, apr_interval_time_t timeout)
{
    apr_status_t rv;
    uint64_t token = 0;
    int wake = 0, parked = 0, fd = rc->fd;

    pthread_mutex_lock(&rp_child.park_lock);
    if ((rc->slot = slot_alloc_locked(rc)) >= 0) {
        token = token_of(rc->slot, rp_child.slots[rc->slot].gen);
        rc->watched = RP_POLL_IN;
        parked = park_locked(rc, RP_PARK_NEW, RP_POLL_IN, timeout, &wake);
    }
    pthread_mutex_unlock(&rp_child.park_lock);
    if (!parked) {
        park_failed(rc, APR_ENOMEM);
        return;
    }
    /* Parked before watched: the poller's first event (readiness present
     * at this call included) finds it waiting.  Only this thread's timers
     * could claim it meanwhile, so rc is still here. */
    rv = rp_poller_watch_conn(rp_child.conn_poller, fd, RP_POLL_IN, token,
                              &(int){ 0 });
    if (rv != APR_SUCCESS && (rc = rp_loop_claim(token, RP_POLL_IN))) {
        park_failed(rc, rv);
    }
    if (wake) {
        rp_loop_wakeup();
    }
}

rp_conn *rp_loop_claim(uint64_t token, int events)
{
    unsigned idx = (unsigned)(token >> 32);
    apr_uint32_t gen = (apr_uint32_t)token;
    rp_conn *rc = NULL;

    pthread_mutex_lock(&rp_child.park_lock);
    if (idx < (unsigned)rp_child.nslots && rp_child.slots[idx].rc
        && rp_child.slots[idx].gen == gen) {
        rp_slot *s = &rp_child.slots[idx];
        if (events & RP_POLL_HUP) {
            s->peer_closed = 1;
        }
        if (s->parked && (events & (s->want | RP_POLL_HUP))) {
            rc = s->rc;
            unpark_locked(rc);
        }
        else {
            s->pending |= events;
        }
    }
    pthread_mutex_unlock(&rp_child.park_lock);
    return rc;
}

/* ---- timers -------------------------------------------------------------- */

static rp_conn *conn_of(rp_timer *t)
{
    return (rp_conn *)((char *)t - APR_OFFSETOF(rp_conn, timer));
}

/* Claim up to max connections of q that expired (or, with idle_for, have
 * been parked that long), oldest first. */
static int take_expired(rp_timeqs *set, apr_time_t now, apr_time_t idle_for,
                        rp_conn **out, int max)
{
    int n = 0, i;
    rp_timer *t;

    for (i = 0; i < set->n && n < max; i++) {
        rp_timeq *q = set->qs[i];
        while (n < max && (t = rp_timeq_first(q))) {
            apr_time_t parked_at = t->expires - q->timeout;
            if (t->expires > now && (!idle_for || now - parked_at < idle_for)) {
                break;
            }
            out[n] = conn_of(t);
            unpark_locked(out[n++]);
        }
    }
    return n;
}

/* Requests read ahead whose deadline passed go to a worker: httpd answers
 * them as too slow (rp_readahead.h).  One that finds the job queue full
 * waits a little longer. */
#define RP_READ_RETRY apr_time_from_msec(10)

static void hand_over_late_reads(void)
{
    apr_time_t now = apr_time_now();
    int queued = 0;
    rp_dtimer *t;

    pthread_mutex_lock(&rp_child.park_lock);
    while ((t = rp_dheap_first(&rp_child.read_heap)) && t->expires <= now) {
        rp_conn *rc = (rp_conn *)((char *)t - APR_OFFSETOF(rp_conn, deadline));
        rp_lf_job job;
        job.token = (uint64_t)(apr_uintptr_t)rc;
        job.events = 0;
        unpark_locked(rc);
        if (rp_lf_push(rp_child.lf, &job) < 0) {
            /* Parked again (its slot still says so for events). */
            rp_child.slots[rc->slot].parked = 1;
            rp_dheap_add(&rp_child.read_heap, t, now + RP_READ_RETRY);
            break;
        }
        queued = 1;
    }
    pthread_mutex_unlock(&rp_child.park_lock);
    if (queued) {
        rp_poller_wakeup(rp_child.conn_poller);  /* the leader takes jobs */
    }
}

/* Close what expired; with idle_for (draining) also keep-alive
 * connections idle that long. */
static void expire(apr_time_t idle_for)
{
    rp_conn *batch[64];
    int n, i, more = 1;

    while (more) {
        apr_time_t now = apr_time_now();
        pthread_mutex_lock(&rp_child.park_lock);
        n = take_expired(&rp_child.keepalive_qs, now, idle_for, batch, 64);
        n += take_expired(&rp_child.io_qs, now, 0, batch + n, 64 - n);
        n += take_expired(&rp_child.linger_qs, now, 0, batch + n, 64 - n);
        pthread_mutex_unlock(&rp_child.park_lock);
        more = n == 64;
        for (i = 0; i < n; i++) {
            rp_conn_close(batch[i]);
        }
    }
}

static void publish_counts(void)
{
    process_score *ps = &ap_scoreboard_image->parent[rp_child.slot];

    ps->connections = apr_atomic_read32(&rp_child.live_conns);
    ps->keep_alive = (apr_uint32_t)rp_timeqs_count(&rp_child.keepalive_qs);
    ps->write_completion = (apr_uint32_t)rp_timeqs_count(&rp_child.io_qs);
    ps->lingering_close = (apr_uint32_t)rp_timeqs_count(&rp_child.linger_qs);
    ps->wait_io = (apr_uint32_t)rp_child.read_heap.n;
    ps->suspended = apr_atomic_read32(&rp_child.suspended);
}

static apr_time_t earliest(apr_time_t a, apr_time_t b)
{
    return a <= 0 ? b : b <= 0 ? a : a < b ? a : b;
}

/* How long to wait: until the next timer (or retry, or drain tick). */
static int plan_wait(int draining)
{
    apr_time_t now = apr_time_now(), next;
    int busy = rp_lf_tick(rp_child.lf);
    /* Not under park_lock: they take their own locks. */
    apr_time_t balance_at = draining ? 0 : rp_accept_balance(now);
    apr_time_t timer_at = rp_callbacks_queue_due(now);

    pthread_mutex_lock(&rp_child.park_lock);
    next = earliest(rp_timeqs_next_expiry(&rp_child.keepalive_qs),
                    rp_timeqs_next_expiry(&rp_child.io_qs));
    next = earliest(next, rp_timeqs_next_expiry(&rp_child.linger_qs));
    if (rp_dheap_first(&rp_child.read_heap)) {
        next = earliest(next, rp_dheap_first(&rp_child.read_heap)->expires);
    }
    next = earliest(next, rp_accept_rest_until());
    next = earliest(next, balance_at);
    next = earliest(next, timer_at);
    if (draining) {
        next = earliest(next, now + RP_DRAIN_TICK);
    }
    if (busy) {
        next = earliest(next, now + RP_LF_TICK);
    }
    rp_child.loop_wake_at = next > 0 ? next : 0;
    publish_counts();
    pthread_mutex_unlock(&rp_child.park_lock);
    if (next <= 0) {
        return -1;
    }
    return next <= now ? 0 : (int)((next - now + 999) / 1000);
}

/* ---- the loop ----------------------------------------------------------- */

void *APR_THREAD_FUNC rp_loop_main(apr_thread_t *thd, void *arg)
{
    rp_poll_event ev[RP_MAX_EVENTS];
    int listening = 1;

    (void)thd;
    (void)arg;
    for (;;) {
        int woken;

        if (rp_child.mode == RP_UNGRACEFUL || rp_child.got_sigterm) {
            break;
        }
        if (rp_child.mode != RP_RUN && listening) {
            rp_accept_stop();
        }
        listening = rp_accept_listening();
        if (!listening && !apr_atomic_read32(&rp_child.live_conns)) {
            break;
        }
        /* Only wake-ups arrive here: the loop watches no descriptor. */
        rp_poller_wait(rp_child.loop_poller, plan_wait(!listening), ev,
                       RP_MAX_EVENTS, &woken);
        rp_accept_retry();
        expire(listening ? 0 : RP_IDLE_GRACE);
        hand_over_late_reads();
    }
    rp_accept_stop();
    rp_child.loop_done = 1;
    rp_poller_shutdown(rp_child.conn_poller);   /* workers leave */
    rp_lf_shutdown(rp_child.lf);
    return NULL;
}
