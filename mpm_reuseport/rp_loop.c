/* Parking and the loop thread.
 * Parking (any worker): a connection waiting for readiness goes on a timer
 * queue, gets a slot and generation, and is armed one-shot on conn_poller,
 * where idle workers wait; the first to claim it (a worker on its event,
 * or the loop on its timer) owns it.
 * The loop thread: accepts (only while a worker is idle for the new
 * connection, else the listeners are paused and connections stay in the
 * kernel's queue for a sibling), closes what times out, and when the child
 * stops, stops listening, closes idle keep-alive connections and returns
 * once none is left (at once if the stop is ungraceful). */
#include "rp_child.h"

#include "apr_atomic.h"
#include "http_connection.h"

#include <errno.h>
#include <stdlib.h>

#define RP_ACCEPT_STREAK 16            /* accepts per readiness event */
#define RP_MAX_EVENTS 64
/* While draining: check every so often, and give a keep-alive connection
 * this long to send the request that may already be on its way. */
#define RP_DRAIN_TICK apr_time_from_msec(50)
#define RP_IDLE_GRACE apr_time_from_msec(250)
/* While workers are busy: how soon a free leadership gets a leader. */
#define RP_LF_TICK apr_time_from_msec(1)

static struct {
    int paused;                 /* listeners not polled */
    apr_time_t resume_at;       /* after an accept error: retry then */
    int listening;
    int accept_error_logged;
} loop;

void rp_loop_wakeup(void)
{
    rp_poller_wakeup(rp_child.loop_poller);
}

/* ---- set-up ------------------------------------------------------------ */

apr_status_t rp_loop_setup(void)
{
    ap_listen_rec *lr;
    apr_status_t rv;
    int i = 0;

    if ((rv = rp_poller_create(&rp_child.loop_poller, rp_child.pruntime))
        || (rv = rp_poller_create(&rp_child.conn_poller, rp_child.pruntime))) {
        return rv;
    }
    for (lr = rp_buckets[rp_child.bucket].listeners; lr; lr = lr->next) {
        rp_child.nlisteners++;
    }
    rp_child.listeners = apr_pcalloc(rp_child.pruntime, rp_child.nlisteners
                                     * sizeof(*rp_child.listeners));
    for (lr = rp_buckets[rp_child.bucket].listeners; lr; lr = lr->next, i++) {
        rp_listener *l = &rp_child.listeners[i];
        l->lr = lr;
        apr_os_sock_get(&l->fd, lr->sd);
        if ((rv = rp_poller_watch_listener(rp_child.loop_poller, l->fd, i))) {
            return rv;
        }
    }
    pthread_mutex_init(&rp_child.park_lock, NULL);
    loop.listening = 1;
    return APR_SUCCESS;
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
            free_list[rp_child.nfree++] = i;
        }
        rp_child.nslots = n;
    }
    idx = rp_child.free_list[--rp_child.nfree];
    rp_child.slots[idx].rc = rc;
    rp_child.slots[idx].parked = 0;
    return idx;
}

void rp_loop_unslot(rp_conn *rc)
{
    if (rc->slot < 0) {
        return;
    }
    pthread_mutex_lock(&rp_child.park_lock);
    rp_child.slots[rc->slot].rc = NULL;
    rp_child.slots[rc->slot].gen++;
    rp_child.free_list[rp_child.nfree++] = rc->slot;
    pthread_mutex_unlock(&rp_child.park_lock);
    rc->slot = -1;
}

/* Take a parked connection out of the parking (under park_lock). */
static void unpark_locked(rp_conn *rc)
{
    rp_slot *s = &rp_child.slots[rc->slot];

    s->parked = 0;
    s->gen++;
    rp_timer_remove(&rc->timer);
    if (rc->park == RP_PARK_NEW) {
        apr_atomic_dec32(&rp_child.pending_new);
    }
}

/* ---- parking (worker side) --------------------------------------------- */

static rp_timeq *queue_for(rp_park why, apr_interval_time_t timeout)
{
    rp_timeqs *set = why == RP_PARK_NEW ? &rp_child.new_qs
                     : why == RP_PARK_KEEPALIVE ? &rp_child.keepalive_qs
                     : why == RP_PARK_IO ? &rp_child.io_qs
                     : &rp_child.linger_qs;
    rp_timeq *q = rp_timeqs_get(set, timeout);

    return q ? q : rp_timeqs_nearest(set, timeout);
}

static void log_park_failure(apr_status_t rv)
{
    static int logged;

    if (!logged) {
        logged = 1;
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, ap_server_conf, RP_LOG_TAG
                     "cannot wait for a connection (poller or memory): "
                     "closing it; check memory and descriptor limits "
                     "(logged once per child)");
    }
}

static uint64_t token_of(int slot, apr_uint32_t gen)
{
    return ((uint64_t)(apr_uint32_t)slot << 32) | gen;
}

void rp_loop_park(rp_conn *rc, rp_park why, int events,
                  apr_interval_time_t timeout)
{
    apr_status_t rv;
    rp_timeq *q = NULL;
    uint64_t token = 0;
    int wake = 0;

    if (rp_child.loop_done) {
        rp_conn_close(rc);      /* ungraceful stop: nobody would watch it */
        return;
    }
    pthread_mutex_lock(&rp_child.park_lock);
    if (rc->slot < 0) {
        rc->slot = slot_alloc_locked(rc);
    }
    if (rc->slot >= 0 && (q = queue_for(why, timeout))) {
        rp_slot *s = &rp_child.slots[rc->slot];
        s->parked = 1;
        token = token_of(rc->slot, ++s->gen);
        rc->park = why;
        if (why == RP_PARK_NEW) {
            apr_atomic_inc32(&rp_child.pending_new);
        }
        rp_timeq_append(q, &rc->timer, apr_time_now());
        if (!rp_child.loop_wake_at
            || rc->timer.expires < rp_child.loop_wake_at) {
            rp_child.loop_wake_at = rc->timer.expires;
            wake = 1;
        }
    }
    pthread_mutex_unlock(&rp_child.park_lock);
    if (!q) {
        log_park_failure(APR_ENOMEM);
        rp_conn_close(rc);
        return;
    }
    /* From here on a worker or the loop may own rc. */
    rv = rp_poller_arm(rp_child.conn_poller, rc->fd, events, token,
                       &rc->registered);
    if (rv != APR_SUCCESS && (rc = rp_loop_claim(token))) {
        log_park_failure(rv);
        rp_conn_close(rc);
    }
    if (wake) {
        rp_loop_wakeup();
    }
}

rp_conn *rp_loop_claim(uint64_t token)
{
    unsigned idx = (unsigned)(token >> 32);
    apr_uint32_t gen = (apr_uint32_t)token;
    rp_conn *rc = NULL;

    pthread_mutex_lock(&rp_child.park_lock);
    if (idx < (unsigned)rp_child.nslots && rp_child.slots[idx].parked
        && rp_child.slots[idx].gen == gen) {
        rc = rp_child.slots[idx].rc;
        unpark_locked(rc);
    }
    pthread_mutex_unlock(&rp_child.park_lock);
    return rc;
}

/* ---- admission ------------------------------------------------------------ */

static void pause_listeners(int paused)
{
    int i;

    if (loop.paused == paused || !loop.listening) {
        return;
    }
    for (i = 0; i < rp_child.nlisteners; i++) {
        rp_poller_pause_listener(rp_child.loop_poller,
                                 rp_child.listeners[i].fd, i, paused);
    }
    loop.paused = paused;
}

static int worker_available(void)
{
    return apr_atomic_read32(&rp_child.idle_workers)
           > apr_atomic_read32(&rp_child.pending_new);
}

/* Workers and the loop pair up with full barriers (apr_atomic_* are):
 * either the worker sees listeners_paused and wakes the loop, or the loop
 * sees the idle worker after pausing. */
void rp_loop_worker_idle(void)
{
    apr_atomic_inc32(&rp_child.idle_workers);
    if (apr_atomic_cas32(&rp_child.listeners_paused, 0, 0)) {
        rp_loop_wakeup();
    }
}

void rp_loop_worker_busy(void)
{
    apr_atomic_dec32(&rp_child.idle_workers);
}

static void no_worker_available(void)
{
    pause_listeners(1);
    apr_atomic_set32(&rp_child.listeners_paused, 1);
    apr_atomic_cas32(&rp_child.listeners_paused, 1, 1); /* full barrier */
    if (worker_available()) {
        apr_atomic_set32(&rp_child.listeners_paused, 0);
        pause_listeners(0);
    }
}

static void resume_if_worker_available(void)
{
    if (loop.paused && !loop.resume_at && worker_available()) {
        apr_atomic_set32(&rp_child.listeners_paused, 0);
        pause_listeners(0);
    }
}

/* ---- accepting ----------------------------------------------------------- */

static void stop_listening(void);

static apr_pool_t *connection_pool(void)
{
    apr_pool_t *p = rp_stock_take(rp_child.pools);
    apr_allocator_t *allocator;

    if (p) {
        return p;
    }
    /* Own allocator per connection: no lock shared between workers. */
    apr_allocator_create(&allocator);
    apr_allocator_max_free_set(allocator, ap_max_mem_free);
    apr_pool_create_ex(&p, rp_child.pruntime, NULL, allocator);
    apr_allocator_owner_set(allocator, p);
    apr_pool_tag(p, "transaction");
    return p;
}

static int is_resource_shortage(apr_status_t rv)
{
    return rv == EMFILE || rv == ENFILE || rv == ENOBUFS || rv == ENOMEM;
}

static int is_transient(apr_status_t rv)
{
    return APR_STATUS_IS_EAGAIN(rv) || APR_STATUS_IS_EINTR(rv)
           || rv == ECONNABORTED || rv == ECONNRESET || rv == EPROTO
           || rv == ETIMEDOUT || rv == EHOSTUNREACH || rv == ENETUNREACH;
}

/* Logged once per child; listeners rest a moment instead of spinning on a
 * readable socket we cannot accept from. */
static void accept_failed(ap_listen_rec *lr, apr_status_t rv)
{
    if (!loop.accept_error_logged) {
        loop.accept_error_logged = 1;
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, ap_server_conf, RP_LOG_TAG
                     "accept on %pI failed%s (logged once per child)",
                     lr->bind_addr, is_resource_shortage(rv)
                     ? ": out of descriptors or memory, raise the open-files "
                       "limit (ulimit -n) or lower ThreadsPerChild" : "");
    }
    pause_listeners(1);
    loop.resume_at = apr_time_now()
                     + apr_time_from_msec(is_resource_shortage(rv) ? 100 : 10);
}

/* MaxConnectionsPerChild: the last one allowed stops the accepting now. */
static void count_connection(void)
{
    if (ap_max_requests_per_child > 0
        && apr_atomic_dec32(&rp_child.conns_left) == 0) {
        rp_child_request_stop(RP_GRACEFUL);
        stop_listening();
    }
}

/* 0 when the listener is drained (or we must not take more). */
static int accept_one(rp_listener *l)
{
    apr_pool_t *p;
    apr_socket_t *sock = NULL;
    apr_status_t rv;
    rp_conn *rc;

    if (!worker_available()) {
        no_worker_available();
        return 0;
    }
    p = connection_pool();
    rv = apr_socket_accept(&sock, l->lr->sd, p);
    if (rv != APR_SUCCESS) {
        if (!rp_stock_give(rp_child.pools, p)) {
            apr_pool_destroy(p);
        }
        if (!is_transient(rv)) {
            accept_failed(l->lr, rv);
        }
        return 0;
    }
    rc = apr_pcalloc(p, sizeof(*rc));
    rc->pool = p;
    rc->sock = sock;
    rc->slot = -1;
    apr_os_sock_get(&rc->fd, sock);
    rp_timer_init(&rc->timer);
    apr_atomic_inc32(&rp_child.live_conns);
    count_connection();
    /* A worker takes it once its first bytes are in (at once, with the
     * default AcceptFilter); until then it holds no thread. */
    rp_loop_park(rc, RP_PARK_NEW, RP_POLL_IN, ap_server_conf->timeout);
    return 1;
}

static void accept_ready(rp_listener *l)
{
    int n = 0;

    while (loop.listening && n < RP_ACCEPT_STREAK && accept_one(l)) {
        n++;
    }
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
        n += take_expired(&rp_child.new_qs, now, 0, batch + n, 64 - n);
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

    pthread_mutex_lock(&rp_child.park_lock);
    next = earliest(rp_timeqs_next_expiry(&rp_child.keepalive_qs),
                    rp_timeqs_next_expiry(&rp_child.io_qs));
    next = earliest(next, rp_timeqs_next_expiry(&rp_child.new_qs));
    next = earliest(next, rp_timeqs_next_expiry(&rp_child.linger_qs));
    next = earliest(next, loop.resume_at);
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

/* ---- stopping ------------------------------------------------------------ */

/* Our copies of the sockets go; on a restart the parent's copies keep the
 * queues for the next children; on a stop, new connections are refused at
 * once rather than left queued. */
static void stop_listening(void)
{
    process_score *ps = &ap_scoreboard_image->parent[rp_child.slot];
    int i;

    if (!loop.listening) {
        return;
    }
    for (i = 0; i < rp_child.nlisteners; i++) {
        rp_poller_forget(rp_child.loop_poller, rp_child.listeners[i].fd);
    }
    loop.listening = 0;
    ap_close_listeners_ex(rp_buckets[rp_child.bucket].listeners);
    rp_child.draining = 1;
    ps->quiescing = 1;
    ps->not_accepting = 1;
}

static void retry_listeners(void)
{
    if (loop.resume_at && apr_time_now() >= loop.resume_at) {
        loop.resume_at = 0;
        pause_listeners(0);
    }
}

void *APR_THREAD_FUNC rp_loop_main(apr_thread_t *thd, void *arg)
{
    rp_poll_event ev[RP_MAX_EVENTS];

    (void)thd;
    (void)arg;
    for (;;) {
        int n, i, woken;

        if (rp_child.mode == RP_UNGRACEFUL || rp_child.got_sigterm) {
            break;
        }
        if (rp_child.mode != RP_RUN) {
            stop_listening();
        }
        if (!loop.listening && !apr_atomic_read32(&rp_child.live_conns)) {
            break;
        }
        n = rp_poller_wait(rp_child.loop_poller, plan_wait(!loop.listening),
                           ev, RP_MAX_EVENTS, &woken);
        for (i = 0; i < n; i++) {
            accept_ready(&rp_child.listeners[ev[i].token]);
        }
        if (woken) {
            resume_if_worker_available();
        }
        retry_listeners();
        expire(loop.listening ? 0 : RP_IDLE_GRACE);
    }
    stop_listening();
    rp_child.loop_done = 1;
    rp_poller_shutdown(rp_child.conn_poller);   /* workers leave */
    rp_lf_shutdown(rp_child.lf);
    return NULL;
}
