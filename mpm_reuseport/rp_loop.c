/* The event loop's state (rp_loop.h): the pollers, slots, parking and the
 * timer queues.
 * Parking (any worker): a connection waiting for readiness goes on a timer
 * queue; at its first wait it gets a slot and the connection poller (where
 * the leading worker waits) starts watching it, edge-triggered, until it
 * closes: later waits cost no system call.  The first to claim a parked
 * connection (a worker on its event, or the loop thread on its timer)
 * owns it.
 * The loop thread (rp_child.c runs it) waits here for the next timer or a
 * wake-up, and takes what timed out; it watches no descriptor. */
#include "rp.h"
#include "rp_loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

/* Slot table entry (permanent memory: stale events may look at it). */
typedef struct rp_slot {
    rp_parking *pk;             /* NULL: free */
    apr_uint32_t gen;           /* bumped when the slot is freed */
    int parked;
    int want;                   /* RP_POLL_* it waits for, while parked */
    int pending;                /* RP_POLL_* seen while it could not act */
    int peer_closed;            /* the client's FIN was seen (RP_POLL_HUP) */
    int reruns_after_fin;       /* waits to read skipped since then */
} rp_slot;

/* Timers and slots are under park_lock.  wake_at: when the loop thread's
 * current wait ends (0: not before a wake-up), so a worker parking an
 * earlier timer wakes it. */
static struct {
    int slot;                   /* the child's, in the scoreboard */
    rp_lf *lf;
    rp_poller *conn_poller;     /* parked connections; idle workers wait */
    rp_poller *loop_poller;     /* the loop thread waits here */
    volatile int done;          /* nobody watches parked connections */
    pthread_mutex_t park_lock;
    rp_timeqs keepalive_qs, io_qs, linger_qs;
    rp_dheap read_heap;         /* requests read ahead (RP_PARK_READ) */
    apr_time_t wake_at;
    rp_slot *slots;
    int nslots;
    int *free_list, nfree;      /* stack of free slot indexes */
} loop;

void rp_parking_init(rp_parking *pk, int fd)
{
    pk->fd = fd;
    pk->slot = -1;
    pk->watched = 0;
    pk->why = RP_PARK_NONE;
    rp_timer_init(&pk->timer);
    rp_dtimer_init(&pk->deadline);
}

/* ---- set-up and shutdown ------------------------------------------------ */

apr_status_t rp_loop_setup(apr_pool_t *p, int slot, rp_lf *lf)
{
    apr_status_t rv;

    loop.slot = slot;
    loop.lf = lf;
    pthread_mutex_init(&loop.park_lock, NULL);
    if ((rv = rp_poller_create(&loop.conn_poller, p))) {
        return rv;
    }
    /* Last: its presence says "set up" to rp_loop_wakeup and serving. */
    return rp_poller_create(&loop.loop_poller, p);
}

int rp_loop_serving(void)
{
    return loop.loop_poller && !loop.done;
}

void rp_loop_shutdown(void)
{
    loop.done = 1;
    rp_poller_shutdown(loop.conn_poller);   /* workers leave */
}

void rp_loop_wakeup(void)
{
    if (loop.loop_poller) {
        rp_poller_wakeup(loop.loop_poller);
    }
}

apr_status_t rp_loop_watch_listener(int fd, int idx)
{
    return rp_poller_watch_listener(loop.conn_poller, fd,
                                    RP_LISTENER_TOKEN | (uint64_t)idx);
}

void rp_loop_forget_listener(int fd)
{
    rp_poller_forget(loop.conn_poller, fd);
}

/* ---- slots (under park_lock) ---------------------------------------------- */

static int grow_slots_locked(void)
{
    int n = loop.nslots ? loop.nslots * 2 : 64, i;
    rp_slot *slots = realloc(loop.slots, n * sizeof(*slots));
    int *free_list = slots ? realloc(loop.free_list, n * sizeof(*free_list))
                           : NULL;

    if (slots) {
        loop.slots = slots;
    }
    if (!free_list) {
        return 0;
    }
    loop.free_list = free_list;
    for (i = n - 1; i >= loop.nslots; i--) {
        slots[i].pk = NULL;
        slots[i].gen = 0;
        slots[i].parked = 0;
        slots[i].want = 0;
        slots[i].pending = 0;
        slots[i].peer_closed = 0;
        slots[i].reruns_after_fin = 0;
        free_list[loop.nfree++] = i;
    }
    loop.nslots = n;
    return 1;
}

static int slot_alloc_locked(rp_parking *pk)
{
    int idx;

    if (!loop.nfree && !grow_slots_locked()) {
        return -1;
    }
    idx = loop.free_list[--loop.nfree];
    loop.slots[idx].pk = pk;
    loop.slots[idx].parked = 0;
    loop.slots[idx].pending = 0;
    loop.slots[idx].peer_closed = 0;
    loop.slots[idx].reruns_after_fin = 0;
    return idx;
}

void rp_loop_unslot(rp_parking *pk)
{
    if (pk->slot < 0) {
        return;
    }
    pthread_mutex_lock(&loop.park_lock);
    loop.slots[pk->slot].pk = NULL;
    loop.slots[pk->slot].gen++;     /* its events are stale from now */
    loop.slots[pk->slot].parked = 0;
    loop.slots[pk->slot].pending = 0;
    loop.free_list[loop.nfree++] = pk->slot;
    pthread_mutex_unlock(&loop.park_lock);
    pk->slot = -1;
}

/* Take a parked connection out of the parking (under park_lock). */
static void unpark_locked(rp_parking *pk)
{
    loop.slots[pk->slot].parked = 0;
    rp_timer_remove(&pk->timer);
    rp_dheap_remove(&loop.read_heap, &pk->deadline);
}

/* ---- parking (worker side) --------------------------------------------- */

static rp_timeq *queue_for(rp_park why, apr_interval_time_t timeout)
{
    /* New connections go with I/O waits: they are not idle keep-alive
     * connections that a graceful stop may close early. */
    rp_timeqs *set = why == RP_PARK_KEEPALIVE ? &loop.keepalive_qs
                     : why == RP_PARK_IO || why == RP_PARK_NEW ? &loop.io_qs
                     : &loop.linger_qs;
    rp_timeq *q = rp_timeqs_get(set, timeout);

    return q ? q : rp_timeqs_nearest(set, timeout);
}

/* Logged here, where the cause is known; the caller closes. */
static int refuse(apr_status_t rv)
{
    static apr_uint32_t logged;

    mpmng_log_once(&logged, APLOG_MARK, APLOG_ERR, rv, ap_server_conf,
                   RP_LOG_TAG "cannot wait for a connection (poller or "
                   "memory): closing it; check memory and descriptor limits "
                   "(logged once per child)");
    return RP_LOOP_REFUSED;
}

static uint64_t token_of(int slot, apr_uint32_t gen)
{
    return ((uint64_t)(apr_uint32_t)slot << 32) | gen;
}

/* Under park_lock: start pk's timer; when it expires. */
static apr_time_t start_timer_locked(rp_parking *pk, rp_park why,
                                     apr_interval_time_t timeout)
{
    apr_time_t now = apr_time_now();
    rp_timeq *q;

    if (why == RP_PARK_READ) {
        return rp_dheap_add(&loop.read_heap, &pk->deadline, now + timeout)
               ? pk->deadline.expires : 0;
    }
    if (!(q = queue_for(why, timeout))) {
        return 0;
    }
    rp_timeq_append(q, &pk->timer, now);
    return pk->timer.expires;
}

/* Under park_lock: put pk on its timer queue, marked parked. */
static int park_locked(rp_parking *pk, rp_park why, int events,
                       apr_interval_time_t timeout, int *wake)
{
    rp_slot *s = &loop.slots[pk->slot];
    apr_time_t expires = start_timer_locked(pk, why, timeout);

    if (!expires) {
        return 0;
    }
    s->parked = 1;
    s->want = events;
    pk->why = why;
    if (!loop.wake_at || expires < loop.wake_at) {
        loop.wake_at = expires;
        *wake = 1;
    }
    return 1;
}

/* An event said "readable" while it ran: true, or already consumed?  The
 * next step (reading a request) would block on a consumed one. */
static int readable_now(const rp_parking *pk)
{
    char byte;
    ssize_t n = recv(pk->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

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

static int rerun_after_fin_locked(rp_parking *pk, rp_park why, int events)
{
    rp_slot *s = &loop.slots[pk->slot];

    if (!s->peer_closed || !(events & RP_POLL_IN) || why == RP_PARK_LINGER
        || s->reruns_after_fin >= RP_RERUNS_AFTER_FIN) {
        return 0;
    }
    s->reruns_after_fin++;
    return 1;
}

/* Under park_lock: take what was remembered for pk that it waits for now;
 * 1 if that makes it ready. */
static int take_pending_locked(rp_parking *pk, int events)
{
    rp_slot *s = &loop.slots[pk->slot];
    int got = s->pending & (events | RP_POLL_HUP);

    s->pending &= ~got;
    return got != 0;
}

/* Slot pk (at its first wait) and say what its events carry; 0 when no
 * slot could be had. */
static uint64_t slot_token(rp_parking *pk)
{
    uint64_t token = 0;

    pthread_mutex_lock(&loop.park_lock);
    if (pk->slot < 0) {
        pk->slot = slot_alloc_locked(pk);
    }
    if (pk->slot >= 0) {        /* the table may move: read it locked */
        token = token_of(pk->slot, loop.slots[pk->slot].gen);
    }
    pthread_mutex_unlock(&loop.park_lock);
    return token;
}

/* Ready already (remembered or rerun), else parked: RP_LOOP_READY,
 * RP_LOOP_PARKED, or 0 with *failed when no timer could be had. */
static int park_or_ready(rp_parking *pk, rp_park why, int events,
                         apr_interval_time_t timeout, int *failed)
{
    int wake = 0, parked;

    for (;;) {
        pthread_mutex_lock(&loop.park_lock);
        if (rerun_after_fin_locked(pk, why, events)) {
            pthread_mutex_unlock(&loop.park_lock);
            pk->why = why;
            return RP_LOOP_READY;
        }
        if (take_pending_locked(pk, events)) {
            pthread_mutex_unlock(&loop.park_lock);
            pk->why = why;
            if (events != RP_POLL_IN || why == RP_PARK_LINGER
                || readable_now(pk)) {
                return RP_LOOP_READY;
            }
            continue;           /* consumed meanwhile: park after all */
        }
        parked = park_locked(pk, why, events, timeout, &wake);
        pthread_mutex_unlock(&loop.park_lock);
        break;
    }
    /* From here on a worker or the loop thread may own it. */
    if (!parked) {
        *failed = 1;
    }
    else if (wake) {
        rp_loop_wakeup();
    }
    return RP_LOOP_PARKED;
}

int rp_loop_park(rp_parking *pk, rp_park why, int events,
                 apr_interval_time_t timeout)
{
    apr_status_t rv;
    uint64_t token;
    int failed = 0, got;

    if (loop.done) {
        return RP_LOOP_REFUSED; /* ungraceful stop: nobody would watch it */
    }
    token = slot_token(pk);
    if (pk->slot < 0) {
        return refuse(APR_ENOMEM);
    }
    /* Still ours: an event from here on is remembered as pending. */
    if (events & ~pk->watched) {
        rv = rp_poller_watch_conn(loop.conn_poller, pk->fd, events, token,
                                  &pk->watched);
        if (rv != APR_SUCCESS) {
            return refuse(rv);
        }
    }
    /* A module waiting to read (mod_http2's main connection, blocked on
     * the client's flow-control window) may have left unread bytes that
     * came while it ran, maybe after an event we woke it for: the poller
     * reports edges, so look, as a level-triggered poll would. */
    if (why == RP_PARK_IO && events == RP_POLL_IN && readable_now(pk)) {
        pk->why = why;
        return RP_LOOP_READY;
    }
    got = park_or_ready(pk, why, events, timeout, &failed);
    return failed ? refuse(APR_ENOMEM) : got;
}

/* The connection an event names, now ours if it waited for that event;
 * else NULL (stale, or remembered for its next park). */
static rp_parking *claim(uint64_t token, int events)
{
    unsigned idx = (unsigned)(token >> 32);
    apr_uint32_t gen = (apr_uint32_t)token;
    rp_parking *pk = NULL;

    pthread_mutex_lock(&loop.park_lock);
    if (idx < (unsigned)loop.nslots && loop.slots[idx].pk
        && loop.slots[idx].gen == gen) {
        rp_slot *s = &loop.slots[idx];
        if (events & RP_POLL_HUP) {
            s->peer_closed = 1;
        }
        if (s->parked && (events & (s->want | RP_POLL_HUP))) {
            pk = s->pk;
            unpark_locked(pk);
        }
        else {
            s->pending |= events;
        }
    }
    pthread_mutex_unlock(&loop.park_lock);
    return pk;
}

int rp_loop_park_fresh(rp_parking *pk, apr_interval_time_t timeout)
{
    apr_status_t rv;
    uint64_t token = 0;
    int wake = 0, parked = 0, refused = 0;

    pthread_mutex_lock(&loop.park_lock);
    if ((pk->slot = slot_alloc_locked(pk)) >= 0) {
        token = token_of(pk->slot, loop.slots[pk->slot].gen);
        pk->watched = RP_POLL_IN;
        parked = park_locked(pk, RP_PARK_NEW, RP_POLL_IN, timeout, &wake);
    }
    pthread_mutex_unlock(&loop.park_lock);
    if (!parked) {
        return refuse(APR_ENOMEM);
    }
    /* Parked before watched: the poller's first event (readiness present
     * at this call included) finds it waiting.  Only this thread's timers
     * could claim it meanwhile, so pk is still here. */
    rv = rp_poller_watch_conn(loop.conn_poller, pk->fd, RP_POLL_IN, token,
                              &(int){ 0 });
    if (rv != APR_SUCCESS && claim(token, RP_POLL_IN)) {
        refused = 1;
    }
    if (wake) {
        rp_loop_wakeup();
    }
    return refused ? refuse(rv) : RP_LOOP_PARKED;
}

/* ---- the leader's wait and the job queue --------------------------------- */

/* A connection's job carries its rp_parking (user-space pointers never
 * have the listener bit). */
int rp_loop_take_jobs(rp_lf_job *jobs, int wait)
{
    rp_poll_event ev[RP_LF_BATCH];
    int n, i, out = 0, woken;

    n = rp_poller_wait(loop.conn_poller, wait ? -1 : 0, ev, RP_LF_BATCH,
                       &woken);
    for (i = 0; i < n; i++) {
        rp_parking *pk;
        if (ev[i].token & RP_LISTENER_TOKEN) {
            jobs[out].token = ev[i].token;
            jobs[out++].events = ev[i].events;
        }
        else if ((pk = claim(ev[i].token, ev[i].events))) {
            jobs[out].token = (uint64_t)(apr_uintptr_t)pk;
            jobs[out++].events = ev[i].events;
        }
    }
    return out;
}

int rp_loop_push_job(const rp_lf_job *job)
{
    return rp_lf_push(loop.lf, job);
}

/* The leader may sit in its wait with nothing to wake it: it takes queued
 * jobs first when it comes back. */
void rp_loop_wake_leader(void)
{
    rp_poller_wakeup(loop.conn_poller);
}

/* ---- the loop thread's turn ---------------------------------------------- */

static rp_parking *parking_of(rp_timer *t)
{
    return (rp_parking *)((char *)t - APR_OFFSETOF(rp_parking, timer));
}

/* Under park_lock: a keep-alive connection about to be closed as idle (its
 * KeepAliveTimeout over, or a stop's idle grace) whose next request has
 * come, its event not yet taken because every worker was busy, is not
 * idle: closed, it would reset that request.  It goes to a worker, as the
 * leader would have sent it (*handed set).  With the job queue full, one
 * not yet due stays parked for the leader or a later look; a due one is
 * closed (its timer would fire again at once).  1: leave it. */
static int request_came_locked(rp_parking *pk, int due, int *handed)
{
    rp_lf_job job;

    if (!readable_now(pk)) {
        return 0;
    }
    job.token = (uint64_t)(apr_uintptr_t)pk;
    job.events = RP_POLL_IN;
    if (rp_lf_push(loop.lf, &job) < 0) {
        return !due;
    }
    unpark_locked(pk);          /* a worker that runs it waits for the lock */
    *handed = 1;
    return 1;
}

/* Claim up to max connections of set that expired (or, with idle_for,
 * have been parked that long, unless spare() keeps them), oldest first: a
 * queue is in parking order, so the first one parked too recently ends
 * the look.  With handed (keep-alive ones), those whose next request came
 * go to a worker instead. */
static int take_expired_locked(rp_timeqs *set, apr_time_t now,
                               apr_time_t idle_for,
                               int (*spare)(rp_parking *),
                               rp_parking **out, int max, int *handed)
{
    int n = 0, i;

    for (i = 0; i < set->n && n < max; i++) {
        rp_timeq *q = set->qs[i];
        rp_timer *t = rp_timeq_first(q);
        while (n < max && t) {
            rp_timer *next = t->next == &q->head ? NULL : t->next;
            rp_parking *pk = parking_of(t);
            apr_time_t parked_at = t->expires - q->timeout;
            int due = t->expires <= now;
            if (!due && (!idle_for || now - parked_at < idle_for)) {
                break;
            }
            if ((!due && spare && spare(pk))
                || (handed && request_came_locked(pk, due, handed))) {
                t = next;
                continue;
            }
            out[n++] = pk;
            unpark_locked(pk);
            t = next;
        }
    }
    return n;
}

int rp_loop_take_expired(apr_time_t idle_for, int (*spare)(rp_parking *),
                         rp_parking **out, int max)
{
    apr_time_t now = apr_time_now();
    int n, handed = 0;

    pthread_mutex_lock(&loop.park_lock);
    n = take_expired_locked(&loop.keepalive_qs, now, idle_for, spare, out,
                            max, &handed);
    n += take_expired_locked(&loop.io_qs, now, 0, NULL, out + n, max - n,
                             NULL);
    n += take_expired_locked(&loop.linger_qs, now, 0, NULL, out + n,
                             max - n, NULL);
    pthread_mutex_unlock(&loop.park_lock);
    if (handed) {
        rp_loop_wake_leader();  /* the leader takes jobs */
    }
    return n;
}

/* Requests read ahead whose deadline passed go to a worker: httpd answers
 * them as too slow (rp_readahead.h).  One that finds the job queue full
 * waits a little longer. */
#define RP_READ_RETRY apr_time_from_msec(10)

void rp_loop_hand_over_late_reads(void)
{
    apr_time_t now = apr_time_now();
    int queued = 0;
    rp_dtimer *t;

    pthread_mutex_lock(&loop.park_lock);
    while ((t = rp_dheap_first(&loop.read_heap)) && t->expires <= now) {
        rp_parking *pk = (rp_parking *)((char *)t
                                        - APR_OFFSETOF(rp_parking, deadline));
        rp_lf_job job;
        job.token = (uint64_t)(apr_uintptr_t)pk;
        job.events = 0;
        unpark_locked(pk);
        if (rp_lf_push(loop.lf, &job) < 0) {
            /* Parked again (its slot still says so for events). */
            loop.slots[pk->slot].parked = 1;
            rp_dheap_add(&loop.read_heap, t, now + RP_READ_RETRY);
            break;
        }
        queued = 1;
    }
    pthread_mutex_unlock(&loop.park_lock);
    if (queued) {
        rp_loop_wake_leader();  /* the leader takes jobs */
    }
}

static void publish_counts_locked(void)
{
    process_score *ps = ap_get_scoreboard_process(loop.slot);

    ps->keep_alive = (apr_uint32_t)rp_timeqs_count(&loop.keepalive_qs);
    ps->write_completion = (apr_uint32_t)rp_timeqs_count(&loop.io_qs);
    ps->lingering_close = (apr_uint32_t)rp_timeqs_count(&loop.linger_qs);
    mpmng_score_set_wait_io(ps, (apr_uint32_t)loop.read_heap.n);
}

static apr_time_t earliest(apr_time_t a, apr_time_t b)
{
    return a <= 0 ? b : b <= 0 ? a : a < b ? a : b;
}

/* Milliseconds until the next timer or also_at (-1: none). */
static int plan_wait(apr_time_t now, apr_time_t also_at)
{
    apr_time_t next;

    pthread_mutex_lock(&loop.park_lock);
    next = earliest(rp_timeqs_next_expiry(&loop.keepalive_qs),
                    rp_timeqs_next_expiry(&loop.io_qs));
    next = earliest(next, rp_timeqs_next_expiry(&loop.linger_qs));
    if (rp_dheap_first(&loop.read_heap)) {
        next = earliest(next, rp_dheap_first(&loop.read_heap)->expires);
    }
    next = earliest(next, also_at);
    loop.wake_at = next > 0 ? next : 0;
    publish_counts_locked();
    pthread_mutex_unlock(&loop.park_lock);
    if (next <= 0) {
        return -1;
    }
    return next <= now ? 0 : (int)((next - now + 999) / 1000);
}

#define RP_MAX_EVENTS 16

void rp_loop_wait(apr_time_t now, apr_time_t also_at)
{
    rp_poll_event ev[RP_MAX_EVENTS];
    int woken;

    /* Only wake-ups arrive here: the loop thread watches no descriptor. */
    rp_poller_wait(loop.loop_poller, plan_wait(now, also_at), ev,
                   RP_MAX_EVENTS, &woken);
}
