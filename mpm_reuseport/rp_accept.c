/* Accepting, done by the leading worker itself.  Listeners are watched on
 * the connection poller next to the parked connections, so only an idle
 * worker (the leader) ever takes a connection, and runs it at once; while
 * every worker is busy, new connections stay in the kernel's queue, where
 * another child of the bucket can take them (EPOLLEXCLUSIVE wakes one
 * child per connection). */
#include "rp_accept.h"
#include "rp_balance.h"
#include "rp_refuse.h"

#include "apr_atomic.h"

#include <errno.h>
#include <pthread.h>

typedef struct rp_listener {
    ap_listen_rec *lr;
    int fd;
    volatile apr_uint32_t job_queued;   /* a job for it waits or runs */
} rp_listener;

static struct {
    pthread_mutex_t lock;       /* accepting vs. closing the listeners */
    int slot, bucket;           /* the child's */
    rp_listener *listeners;
    int nlisteners;
    int listening;
    apr_time_t rest_until;      /* unwatched after an accept error */
    int paused;                 /* unwatched: more than our share */
    apr_uint32_t conns_left;    /* MaxConnectionsPerChild budget */
    apr_uint32_t error_logged;
} acc = { .lock = PTHREAD_MUTEX_INITIALIZER };

static apr_status_t watch_all(int on)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < acc.nlisteners; i++) {
        rp_listener *l = &acc.listeners[i];
        if (on) {
            rv = rp_loop_watch_listener(l->fd, i);
            if (rv != APR_SUCCESS) {
                return rv;
            }
        }
        else {
            rp_loop_forget_listener(l->fd);
        }
    }
    return rv;
}

/* Listeners are watched while listening, not resting after an error and
 * not paused; call with the state before a change to apply it. */
static int watching_locked(void)
{
    return acc.listening && !acc.rest_until && !acc.paused;
}

static void rewatch_locked(int was)
{
    int now = watching_locked();

    if (now != was) {
        watch_all(now);
    }
}

apr_status_t rp_accept_setup(apr_pool_t *p, int slot, int bucket)
{
    ap_listen_rec *lr;
    int i = 0;

    acc.slot = slot;
    acc.bucket = bucket;
    apr_atomic_set32(&acc.conns_left, ap_max_requests_per_child > 0
                     ? (apr_uint32_t)ap_max_requests_per_child : 0);
    for (lr = rp_buckets[bucket].listeners; lr; lr = lr->next) {
        acc.nlisteners++;
    }
    acc.listeners = apr_pcalloc(p, acc.nlisteners * sizeof(*acc.listeners));
    for (lr = rp_buckets[bucket].listeners; lr; lr = lr->next, i++) {
        acc.listeners[i].lr = lr;
        apr_os_sock_get(&acc.listeners[i].fd, lr->sd);
    }
    acc.listening = 1;
    return watch_all(1);
}

static rp_conn *accept_locked(rp_listener *l, apr_status_t *why);

/* Before our copies close, take every connection the kernel already
 * completed: if ours is the last copy (a graceful stop), closing would
 * reset them.  Each waits parked for its first request, served as usual.
 * Twice, a moment apart: with TCP_DEFER_ACCEPT (core's AcceptFilter) a
 * connection enters the queue only once its request data arrives. */
#define RP_DRAIN_MAX 4096
#define RP_DRAIN_PAUSE apr_time_from_msec(20)

/* Returns how many connections it took. */
static int drain_once_locked(void)
{
    int i, n, taken = 0;

    for (i = 0; i < acc.nlisteners; i++) {
        for (n = 0; n < RP_DRAIN_MAX; n++) {
            apr_status_t why;
            rp_conn *rc = accept_locked(&acc.listeners[i], &why);
            if (!rc) {
                break;
            }
            taken++;
            if (rp_loop_park_fresh(&rc->parking, ap_server_conf->timeout)
                == RP_LOOP_REFUSED) {
                rp_conn_close(rc);
            }
        }
    }
    return taken;
}

static void drain_twice_locked(int (*may_take)(void))
{
    if (may_take()) {
        drain_once_locked();
        apr_sleep(RP_DRAIN_PAUSE);
    }
    if (may_take()) {
        drain_once_locked();
    }
}

/* New connections are refused (rp_refuse.c: ours are the last copies):
 * what is queued and the handshakes under way are all that will come.
 * Take them, looking again while handshakes are pending (an RTT, or a
 * deferred accept's request data), for at most RP_HANDSHAKES_WAIT. */
#define RP_HANDSHAKES_WAIT apr_time_from_sec(1)
#define RP_HANDSHAKES_LOOK apr_time_from_msec(5)

static int handshakes_pending_locked(void)
{
    int fds[64], i, n = acc.nlisteners < 64 ? acc.nlisteners : 64;

    for (i = 0; i < n; i++) {
        fds[i] = acc.listeners[i].fd;
    }
    return rp_refuse_handshakes_pending(fds, n);
}

static void drain_refused_locked(int (*may_take)(void))
{
    apr_time_t t0 = apr_time_now(), end = t0 + RP_HANDSHAKES_WAIT;
    int taken = 0, pending = 0, looks = 0;

    while (may_take()) {
        taken += drain_once_locked();
        pending = handshakes_pending_locked();
        looks++;
        if (pending == 0) {
            taken += drain_once_locked();   /* those that finished since */
            break;
        }
        if (pending < 0 || apr_time_now() >= end) {
            apr_sleep(RP_DRAIN_PAUSE);  /* cannot tell, or too long: as before */
            taken += drain_once_locked();
            break;
        }
        apr_sleep(RP_HANDSHAKES_LOOK);
    }
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ap_server_conf, RP_LOG_TAG
                 "graceful stop: took %d connection(s) the kernel had accepted "
                 "in %" APR_TIME_T_FMT " ms; handshakes under way at the last of "
                 "%d look(s): %d%s", taken, apr_time_as_msec(apr_time_now() - t0),
                 looks, pending, pending < 0 ? " (cannot be told here)" : "");
}

static void drain_locked(int (*may_take)(void))
{
    if (rp_refuse_in_effect()) {
        drain_refused_locked(may_take);
    }
    else {
        drain_twice_locked(may_take);
    }
}

/* Our copies of the sockets go; on a restart the parent's and the next
 * generation's copies keep the queues; on a stop, new connections are
 * refused at once rather than left queued. */
static void stop_locked(int (*may_take)(void))
{
    process_score *ps = ap_get_scoreboard_process(acc.slot);

    if (!acc.listening) {
        return;
    }
    if (watching_locked()) {
        watch_all(0);
    }
    if (may_take) {
        drain_locked(may_take);
    }
    acc.listening = 0;
    ap_close_listeners_ex(rp_buckets[acc.bucket].listeners);
    ps->quiescing = 1;
    ps->not_accepting = 1;
}

void rp_accept_stop(int (*may_take)(void))
{
    pthread_mutex_lock(&acc.lock);
    stop_locked(may_take);
    pthread_mutex_unlock(&acc.lock);
}

int rp_accept_listening(void)
{
    int on;

    pthread_mutex_lock(&acc.lock);
    on = acc.listening;
    pthread_mutex_unlock(&acc.lock);
    return on;
}

apr_time_t rp_accept_rest_until(void)
{
    return acc.rest_until;      /* read by the loop; a stale value is fine */
}

void rp_accept_retry(void)
{
    pthread_mutex_lock(&acc.lock);
    if (acc.rest_until && apr_time_now() >= acc.rest_until) {
        int was = watching_locked();
        acc.rest_until = 0;
        rewatch_locked(was);
    }
    pthread_mutex_unlock(&acc.lock);
}

#define RP_BALANCE_EVERY apr_time_from_msec(5)

static void set_paused_locked(int on)
{
    if (acc.paused != on) {
        int was = watching_locked();
        acc.paused = on;
        rewatch_locked(was);
    }
}

apr_time_t rp_accept_balance(apr_time_t now)
{
    apr_time_t next = 0;

    pthread_mutex_lock(&acc.lock);
    if (acc.paused) {
        set_paused_locked(acc.listening
                          && rp_balance_pause(1, (int)rp_conn_life_count(),
                                              now));
        next = acc.paused ? now + RP_BALANCE_EVERY : 0;
    }
    pthread_mutex_unlock(&acc.lock);
    return next;
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

/* Logged once per child; the listeners rest a moment (the loop watches
 * them again) instead of waking every idle worker for nothing. */
static void failed_locked(ap_listen_rec *lr, apr_status_t rv)
{
    mpmng_log_once(&acc.error_logged, APLOG_MARK, APLOG_ERR, rv,
                   ap_server_conf, RP_LOG_TAG "accept on %pI failed%s "
                   "(logged once per child)", lr->bind_addr,
                   is_resource_shortage(rv)
                   ? ": out of descriptors or memory, raise the open-files "
                     "limit (ulimit -n) or lower ThreadsPerChild" : "");
    if (watching_locked()) {
        watch_all(0);
    }
    acc.rest_until = apr_time_now()
                     + apr_time_from_msec(is_resource_shortage(rv) ? 100 : 10);
    rp_loop_wakeup();           /* so it plans the retry */
}

/* MaxConnectionsPerChild: the last one allowed stops the accepting now;
 * 1 then (the caller stops the child). */
static int count_locked(void)
{
    if (ap_max_requests_per_child > 0
        && apr_atomic_dec32(&acc.conns_left) == 0) {
        stop_locked(NULL);  /* the parent's copies keep the queue */
        return 1;
    }
    return 0;
}

/* Caller holds acc.lock and checked acc.listening (else the descriptor may
 * have been reused).  NULL: *why says why. */
static rp_conn *accept_locked(rp_listener *l, apr_status_t *why)
{
    rp_conn *rc = rp_conn_accept(l->lr->sd, why);

    if (!rc) {
        if (!is_transient(*why)) {
            failed_locked(l->lr, *why);
        }
        return NULL;
    }
    rp_bstats_accepted(acc.bucket);
    return rc;
}

/* Listeners are edge-triggered (rp_poll.h): watching one again gives an
 * event now for the connections it holds, which would otherwise wait for
 * the next one to arrive.  If that fails, every listener rests a moment
 * and the loop watches them all again. */
static void rearm_locked(int idx)
{
    rp_listener *l = &acc.listeners[idx];
    apr_status_t rv;

    rp_loop_forget_listener(l->fd);
    rv = rp_loop_watch_listener(l->fd, idx);
    if (rv != APR_SUCCESS) {
        failed_locked(l->lr, rv);
    }
}

int rp_accept_job_wanted(int idx)
{
    return idx >= 0 && idx < acc.nlisteners
           && apr_atomic_cas32(&acc.listeners[idx].job_queued, 1, 0) == 0;
}

void rp_accept_job_dropped(int idx)
{
    apr_atomic_set32(&acc.listeners[idx].job_queued, 0);
    pthread_mutex_lock(&acc.lock);
    if (watching_locked()) {
        rearm_locked(idx);
    }
    pthread_mutex_unlock(&acc.lock);
}

rp_conn *rp_accept(int idx, int *last, int *more)
{
    rp_conn *rc = NULL;
    apr_status_t why = APR_SUCCESS;

    *last = *more = 0;
    /* Running: a connection that comes from now on needs a job again. */
    apr_atomic_set32(&acc.listeners[idx].job_queued, 0);
    pthread_mutex_lock(&acc.lock);
    if (acc.listening && !acc.paused
        && rp_balance_pause(0, (int)rp_conn_life_count(), apr_time_now())) {
        set_paused_locked(1);       /* a sibling takes it */
        rp_loop_wakeup();           /* the loop looks again soon */
    }
    else if (acc.listening && !acc.paused) {
        rc = accept_locked(&acc.listeners[idx], &why);
        if (rc) {
            *last = count_locked();
        }
        /* Until the queue is empty: an aborted handshake is no sign. */
        *more = rc ? !*last : is_transient(why) && !APR_STATUS_IS_EAGAIN(why);
    }
    pthread_mutex_unlock(&acc.lock);
    return rc;
}
