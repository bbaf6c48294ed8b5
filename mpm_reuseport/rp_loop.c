/* A child's event loop thread.  It owns every connection that is not being
 * processed: it accepts (only while a worker is idle for the connection),
 * waits for parked connections to become ready and hands them to workers,
 * enforces their timeouts, and does lingering closes by itself.  When the
 * child stops it stops listening, closes idle keep-alive connections and
 * returns once no connection is left (at once if the stop is ungraceful). */
#include "rp_child.h"

#include "apr_atomic.h"
#include "http_connection.h"

#include <errno.h>
#include <sys/socket.h>

#define RP_ACCEPT_STREAK 16            /* accepts per readiness event */
#define RP_MAX_EVENTS 256
/* While draining: check every so often, and give a keep-alive connection
 * this long to send the request that may already be on its way. */
#define RP_DRAIN_TICK apr_time_from_msec(50)
#define RP_IDLE_GRACE apr_time_from_msec(250)
#define RP_LINGER_READS 16             /* reads per event: no starvation */

static struct {
    int paused;                 /* listeners not polled (no idle worker) */
    apr_time_t resume_at;       /* after an accept error: retry then */
    int listening;
    int accept_error_logged;
} loop;

void rp_loop_wakeup(void)
{
    rp_poller_wakeup(rp_child.poller);
}

static void wakeup_cb(void *baton)
{
    (void)baton;
    rp_loop_wakeup();
}

/* ---- set-up ------------------------------------------------------------ */

apr_status_t rp_loop_setup(void)
{
    ap_listen_rec *lr;
    apr_status_t rv;
    int i = 0;

    if ((rv = rp_poller_create(&rp_child.poller, rp_child.pruntime))) {
        return rv;
    }
    for (lr = rp_buckets[rp_child.bucket].listeners; lr; lr = lr->next) {
        rp_child.nlisteners++;
    }
    rp_child.listeners = apr_pcalloc(rp_child.pruntime, rp_child.nlisteners
                                     * sizeof(*rp_child.listeners));
    for (lr = rp_buckets[rp_child.bucket].listeners; lr; lr = lr->next) {
        rp_listener *l = &rp_child.listeners[i++];
        l->kind = RP_POLL_LISTENER;
        l->lr = lr;
        apr_os_sock_get(&l->fd, lr->sd);
        if ((rv = rp_poller_watch_listener(rp_child.poller, l->fd, l))) {
            return rv;
        }
    }
    pthread_mutex_init(&rp_child.timers_lock, NULL);
    rp_timeq_init(&rp_child.linger_q, 0); /* timeout set per park */
    loop.listening = 1;
    return APR_SUCCESS;
}

/* ---- parking (worker side) --------------------------------------------- */

static rp_timeq *queue_for(rp_park why, apr_interval_time_t timeout)
{
    rp_timeqs *set = why == RP_PARK_KEEPALIVE ? &rp_child.keepalive_qs
                                              : &rp_child.io_qs;
    rp_timeq *q;

    if (why == RP_PARK_LINGER) {
        rp_child.linger_q.timeout = timeout;
        return &rp_child.linger_q;
    }
    q = rp_timeqs_get(set, timeout);
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

void rp_loop_park(rp_conn *rc, rp_park why, int events,
                  apr_interval_time_t timeout)
{
    apr_status_t rv;
    rp_timeq *q;
    int wake = 0;

    if (rp_child.loop_done) {
        rp_conn_close(rc);      /* ungraceful stop: nobody would watch it */
        return;
    }
    pthread_mutex_lock(&rp_child.timers_lock);
    q = queue_for(why, timeout);
    if (q) {
        rc->park = why;
        rp_timeq_append(q, &rc->timer, apr_time_now());
        if (!rp_child.loop_wake_at
            || rc->timer.expires < rp_child.loop_wake_at) {
            rp_child.loop_wake_at = rc->timer.expires;
            wake = 1;
        }
    }
    pthread_mutex_unlock(&rp_child.timers_lock);
    if (!q) {
        log_park_failure(APR_ENOMEM);
        rp_conn_close(rc);
        return;
    }
    /* From here on the loop may own rc. */
    rv = rp_poller_arm(rp_child.poller, rc->fd, events, rc, &rc->registered);
    if (rv != APR_SUCCESS) {
        pthread_mutex_lock(&rp_child.timers_lock);
        rp_timer_remove(&rc->timer);
        pthread_mutex_unlock(&rp_child.timers_lock);
        log_park_failure(rv);
        rp_conn_close(rc);
    }
    if (wake) {
        rp_loop_wakeup();
    }
}

static void stop_listening(void);

/* ---- accepting ----------------------------------------------------------- */

/* MaxConnectionsPerChild: the last one allowed stops the accepting now. */
static void count_connection(void)
{
    if (ap_max_requests_per_child > 0
        && apr_atomic_dec32(&rp_child.conns_left) == 0) {
        rp_child_request_stop(RP_GRACEFUL);
        stop_listening();
    }
}

static void pause_listeners(int paused)
{
    int i;

    if (loop.paused == paused || !loop.listening) {
        return;
    }
    for (i = 0; i < rp_child.nlisteners; i++) {
        rp_listener *l = &rp_child.listeners[i];
        rp_poller_pause_listener(rp_child.poller, l->fd, l, paused);
    }
    loop.paused = paused;
}

static apr_pool_t *connection_pool(void)
{
    apr_pool_t *p = rp_queue_take_pool(rp_child.queue);
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

static void hand_to_worker(rp_conn *rc)
{
    if (rp_queue_push(rp_child.queue, rc) != RP_QUEUE_OK) {
        log_park_failure(APR_ENOMEM);
        rp_conn_close(rc);
    }
}


/* 0 when the listener is drained (or we must not take more). */
static int accept_one(rp_listener *l)
{
    apr_pool_t *p;
    apr_socket_t *sock = NULL;
    apr_status_t rv;
    rp_conn *rc;

    if (!rp_queue_has_idler_or_watch(rp_child.queue, wakeup_cb, NULL)) {
        pause_listeners(1);     /* the next idle worker wakes us */
        return 0;
    }
    p = connection_pool();
    rv = apr_socket_accept(&sock, l->lr->sd, p);
    if (rv != APR_SUCCESS) {
        if (!rp_queue_give_pool(rp_child.queue, p)) {
            apr_pool_destroy(p);
        }
        if (!is_transient(rv)) {
            accept_failed(l->lr, rv);
        }
        return 0;
    }
    rc = apr_pcalloc(p, sizeof(*rc));
    rc->kind = RP_POLL_CONN;
    rc->pool = p;
    rc->sock = sock;
    apr_os_sock_get(&rc->fd, sock);
    rp_timer_init(&rc->timer);
    apr_atomic_inc32(&rp_child.live_conns);
    count_connection();
    hand_to_worker(rc);
    return 1;
}

static void accept_ready(rp_listener *l)
{
    int n = 0;

    while (loop.listening && n < RP_ACCEPT_STREAK && accept_one(l)) {
        n++;
    }
}

/* ---- parked connections ------------------------------------------------- */

static void unqueue(rp_conn *rc)
{
    pthread_mutex_lock(&rp_child.timers_lock);
    rp_timer_remove(&rc->timer);
    pthread_mutex_unlock(&rp_child.timers_lock);
}

/* Lingering close: discard what the client still sends until EOF. */
static void linger_read(rp_conn *rc)
{
    char buf[512];
    int i;

    for (i = 0; i < RP_LINGER_READS; i++) {
        ssize_t n = recv(rc->fd, buf, sizeof(buf), 0);
        if (n > 0) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK
                      || errno == EINTR)) {
            break;
        }
        unqueue(rc);            /* EOF or error: done */
        rp_conn_close(rc);
        return;
    }
    if (rp_poller_arm(rp_child.poller, rc->fd, RP_POLL_IN, rc,
                      &rc->registered) != APR_SUCCESS) {
        unqueue(rc);
        rp_conn_close(rc);
    }
}

static void conn_ready(rp_conn *rc)
{
    rp_park why = rc->park;

    if (why == RP_PARK_LINGER) {
        linger_read(rc);        /* its timer keeps running */
        return;
    }
    unqueue(rc);
    rc->park = RP_PARK_NONE;
    if (why == RP_PARK_KEEPALIVE || rc->pub.state == CONN_STATE_ASYNC_WAITIO) {
        rc->pub.state = CONN_STATE_PROCESSING;
    }
    hand_to_worker(rc);
}

static void dispatch(const rp_poll_event *ev)
{
    if (*(rp_poll_kind *)ev->data == RP_POLL_LISTENER) {
        accept_ready(ev->data);
    }
    else {
        conn_ready(ev->data);
    }
}

/* ---- timers -------------------------------------------------------------- */

static rp_conn *conn_of(rp_timer *t)
{
    return (rp_conn *)((char *)t - APR_OFFSETOF(rp_conn, timer));
}

/* Take up to max timers that satisfy the test off q (oldest first). */
static int take_expired(rp_timeq *q, apr_time_t now, apr_time_t idle_for,
                        rp_conn **out, int max)
{
    int n = 0;
    rp_timer *t;

    while (n < max && (t = rp_timeq_first(q))) {
        apr_time_t parked_at = t->expires - q->timeout;
        if (t->expires > now && now - parked_at < idle_for) {
            break;
        }
        rp_timer_remove(t);
        out[n++] = conn_of(t);
    }
    return n;
}

/* Close what expired; with idle_for > 0 (draining) also keep-alive
 * connections idle that long. */
static void expire(apr_time_t idle_for)
{
    rp_conn *batch[64];
    int n, i, more = 1;

    while (more) {
        apr_time_t now = apr_time_now();
        apr_time_t never = APR_INT64_MAX;
        n = 0;
        pthread_mutex_lock(&rp_child.timers_lock);
        for (i = 0; i < rp_child.keepalive_qs.n && n < 64; i++) {
            n += take_expired(rp_child.keepalive_qs.qs[i], now,
                              idle_for ? idle_for : never, batch + n, 64 - n);
        }
        for (i = 0; i < rp_child.io_qs.n && n < 64; i++) {
            n += take_expired(rp_child.io_qs.qs[i], now, never, batch + n,
                              64 - n);
        }
        n += take_expired(&rp_child.linger_q, now, never, batch + n, 64 - n);
        pthread_mutex_unlock(&rp_child.timers_lock);
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
    ps->lingering_close = (apr_uint32_t)rp_child.linger_q.count;
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

    pthread_mutex_lock(&rp_child.timers_lock);
    next = earliest(rp_timeqs_next_expiry(&rp_child.keepalive_qs),
                    rp_timeqs_next_expiry(&rp_child.io_qs));
    next = earliest(next, rp_timeq_next_expiry(&rp_child.linger_q));
    next = earliest(next, loop.resume_at);
    if (draining) {
        next = earliest(next, now + RP_DRAIN_TICK);
    }
    rp_child.loop_wake_at = next > 0 ? next : 0;
    publish_counts();
    pthread_mutex_unlock(&rp_child.timers_lock);
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

    for (i = 0; i < rp_child.nlisteners; i++) {
        rp_poller_forget(rp_child.poller, rp_child.listeners[i].fd);
    }
    loop.listening = 0;
    ap_close_listeners_ex(rp_buckets[rp_child.bucket].listeners);
    rp_child.draining = 1;
    ps->quiescing = 1;
    ps->not_accepting = 1;
}

static void on_wakeup(void)
{
    if (loop.paused && !loop.resume_at
        && rp_queue_has_idler(rp_child.queue)) {
        pause_listeners(0);
    }
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
        if (rp_child.mode != RP_RUN && loop.listening) {
            stop_listening();
        }
        if (!loop.listening && !apr_atomic_read32(&rp_child.live_conns)) {
            break;
        }
        n = rp_poller_wait(rp_child.poller, plan_wait(!loop.listening), ev,
                           RP_MAX_EVENTS, &woken);
        for (i = 0; i < n; i++) {
            dispatch(&ev[i]);
        }
        if (woken) {
            on_wakeup();
        }
        retry_listeners();
        expire(loop.listening ? 0 : RP_IDLE_GRACE);
    }
    if (loop.listening) {
        stop_listening();
    }
    rp_child.loop_done = 1;
    rp_queue_terminate(rp_child.queue);
    return NULL;
}
