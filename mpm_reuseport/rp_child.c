/* A child process: serves one listener bucket.  Its parts, each behind
 * its own header, and none calling back up into this file:
 *   rp_loop.h       the event loop: pollers, slots, parking, timer queues
 *   rp_accept.h     accepting, by the leading worker
 *   rp_conn_life.h  a connection's creation, close and release; pool stock
 *   rp_conn.h       a connection's state machine, run by workers
 *   rp_callbacks.h  timed callbacks and suspended connections
 *   rp_balance.h    sharing the bucket with sibling children
 * This file sets them up in order and runs the threads: idle workers take
 * turns waiting on the connection poller (rp_lf.h), so a ready connection
 * is run by the worker that saw it (no hand-off between threads); the
 * loop thread closes what timed out, retries and balances accepting,
 * queues due callbacks and, when the child stops, stops accepting and
 * returns once no connection is left.  The main thread waits on the
 * bucket's pipe of death and stops the others. */
#include "rp.h"
#include "rp_accept.h"
#include "rp_balance.h"
#include "rp_callbacks.h"
#include "rp_conn.h"
#include "rp_conn_life.h"
#include "rp_lf.h"
#include "rp_loop.h"
#include "rp_upgrade.h"

#include "apr_atomic.h"
#include "apr_signal.h"
#include "apr_thread_proc.h"
#include "http_connection.h"
#include "http_protocol.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* RP_BRIEF: graceful for RP_BRIEF_GRACE (rp.h), then ungraceful. */
typedef enum { RP_RUN, RP_GRACEFUL, RP_BRIEF, RP_UNGRACEFUL } rp_stop_mode;

static struct {
    int slot, bucket;
    apr_pool_t *pchild;
    apr_pool_t *pruntime;       /* outlives connection pools */
    rp_lf *lf;                  /* idle workers take turns */
    apr_thread_t *starter, *loop, **workers;
    apr_uint32_t workers_running;
    volatile rp_stop_mode mode; /* set by whoever decides to stop */
    volatile sig_atomic_t got_sigterm;
    volatile apr_time_t cut_at; /* RP_BRIEF: what is left is cut then */
    volatile apr_time_t stopping_at; /* modules are told then (loop) */
    volatile apr_time_t retired_at; /* a stop began then (0: not yet) */
    volatile int draining;      /* answers carry Connection: close */
    volatile int starter_may_exit;
    pid_t parent;               /* the parent that forked this child */
    volatile sig_atomic_t parent_gone;
} rp_child;

/* ---- exit ------------------------------------------------------------ */

static void child_exit(int code) __attribute__((noreturn));
static void child_exit(int code)
{
    rp_state->mpm->mpm_state = AP_MPMQ_STOPPING;
    if (rp_child.pchild) {
        mpmng_run_child_stopping(rp_child.pchild,
                                 rp_child.mode == RP_GRACEFUL);
        apr_pool_destroy(rp_child.pchild);
    }
    exit(code);
}

static void die_now(int sig)
{
    (void)sig;
    child_exit(0);
}

/* SIGTERM wakes the main thread from its pipe-of-death read.  From the
 * parent it means "stop now"; from this process it is only our own
 * threads' wake-up call (request_stop), which must not cut connections. */
static void note_sigterm(int sig, siginfo_t *info, void *uctx)
{
    (void)sig;
    (void)uctx;
    if (!info || info->si_pid != getpid()) {
        rp_child.got_sigterm = 1;
        rp_loop_wakeup();       /* an eventfd write: signal-safe */
    }
}

static void catch_sigterm(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = note_sigterm;
    sa.sa_flags = SA_SIGINFO;   /* no SA_RESTART: the pod read must return */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

/* When the stop began, set before the mode says so: retiring() counts its
 * RP_RETIRING_KEEP from it. */
static void note_stop_began(void)
{
    if (!rp_child.retired_at) {
        rp_child.retired_at = apr_time_now();
    }
}

/* Ask the main thread to stop this child (from any thread).  The loop
 * thread acts on the mode at once, before the main thread wakes. */
static void request_stop(rp_stop_mode mode)
{
    if (rp_child.mode < mode) {
        note_stop_began();
        rp_child.mode = mode;
    }
    kill(getpid(), SIGTERM);
}

int rp_child_post_read_request(request_rec *r)
{
    /* While draining, tell the client this connection ends after this
     * answer, so it never sends a request into a closing connection.  Said
     * as the answer's "Connection: close" (ap_set_keepalive honours it), not
     * by closing the connection beforehand (c->keepalive): then httpd
     * would end a body of unknown length by closing instead of chunking
     * it, which clients such as wrk count as a failed read. */
    if (rp_child.draining && !r->connection->master) {
        apr_table_mergen(r->err_headers_out, "Connection", "close");
    }
    rp_conn_note_request(r);
    rp_hold_add(r);
    return DECLINED;
}

/* ---- workers ----------------------------------------------------------- */

/* A listener job accepts one connection and, while the queue may hold
 * more, queues itself again behind the events already taken: a burst of
 * new connections is taken one per job, not one per wait (the poller
 * reports the listener once among all ready connections, which would
 * starve it). */
static rp_conn *accept_job(const rp_lf_job *job)
{
    int idx = (int)(job->token & ~RP_LISTENER_TOKEN), last, more, queued;
    rp_conn *rc = rp_accept(idx, &last, &more);

    if (last) {                 /* MaxConnectionsPerChild */
        rp_child.draining = 1;
        request_stop(RP_GRACEFUL);
    }
    if (more && rp_accept_job_wanted(idx)) {
        queued = rp_lf_push(rp_child.lf, job);
        if (queued < 0) {       /* watched again: its event queues it */
            rp_accept_job_dropped(idx);
        }
        else if (queued > 0) {
            rp_loop_wakeup();
        }
    }
    return rc;
}

/* A listener's event while its job is queued already adds none. */
static int drop_listeners_queued(rp_lf_job *jobs, int n)
{
    int i, out = 0;

    for (i = 0; i < n; i++) {
        if (!(jobs[i].token & RP_LISTENER_TOKEN)
            || rp_accept_job_wanted((int)(jobs[i].token
                                          & ~RP_LISTENER_TOKEN))) {
            jobs[out++] = jobs[i];
        }
    }
    return out;
}

/* A timed callback, then the connections its module moved on. */
static void run_callback(uint64_t token, apr_thread_t *thd, int tid)
{
    rp_conn *moved = rp_callbacks_run(token), *rc;

    while ((rc = rp_callbacks_resume_next(&moved))) {
        rp_conn_dispatch(rc, thd, tid);
    }
}

static void run_job(const rp_lf_job *job, apr_thread_t *thd, int tid)
{
    rp_conn *rc;

    if (job->token & RP_LISTENER_TOKEN) {
        rc = accept_job(job);
    }
    else if (job->token & RP_TIMER_TAG) {
        run_callback(job->token, thd, tid);
        return;
    }
    else {
        rc = rp_conn_of((rp_parking *)(apr_uintptr_t)job->token);
    }
    if (rc) {
        rp_conn_dispatch(rc, thd, tid);
    }
}

/* Idle workers take turns waiting on the connection poller (rp_lf.h): the
 * leader takes a batch of events, runs the first and leaves the rest to
 * whichever worker is idle next, itself included. */
static void *APR_THREAD_FUNC worker_main(apr_thread_t *thd, void *arg)
{
    int tid = (int)(apr_uintptr_t)arg;
    worker_score *ws = &ap_scoreboard_image->servers[rp_child.slot][tid];

    ws->pid = getpid();
    ws->tid = apr_os_thread_current();
    ws->generation = rp_state->mpm->my_generation;
    while (rp_child.mode != RP_UNGRACEFUL && rp_loop_serving()) {
        rp_lf_job jobs[RP_LF_BATCH], job;
        int what;

        ap_update_child_status_from_indexes(rp_child.slot, tid, SERVER_READY,
                                            NULL);
        what = rp_lf_next(rp_child.lf, tid, &job);
        if (what == RP_LF_SHUT) {
            break;
        }
        if (what == RP_LF_LEAD || what == RP_LF_PEEK) {
            int n = drop_listeners_queued(
                jobs, rp_loop_take_jobs(jobs, what == RP_LF_LEAD));
            if (rp_lf_got(rp_child.lf, tid, jobs, n)) {
                rp_loop_wakeup();
            }
            if (!n) {
                continue;
            }
            job = jobs[0];
        }
        run_job(&job, thd, tid);
    }
    ap_update_child_status_from_indexes(rp_child.slot, tid,
                                        rp_child.mode == RP_UNGRACEFUL
                                        ? SERVER_DEAD : SERVER_GRACEFUL, NULL);
    apr_atomic_dec32(&rp_child.workers_running);
    return NULL;
}

/* ---- the loop thread ------------------------------------------------------ */

/* While draining: check every so often, and give a keep-alive connection
 * this long to send the request that may already be on its way. */
#define RP_DRAIN_TICK apr_time_from_msec(50)
#define RP_IDLE_GRACE apr_time_from_msec(250)
#define RP_STOPPING_DELAY apr_time_from_sec(1)
/* While workers are busy: how soon a free leadership gets a leader. */
#define RP_LF_TICK apr_time_from_msec(1)
#define RP_EXPIRED_BATCH 64

static apr_time_t earliest(apr_time_t a, apr_time_t b)
{
    return a <= 0 ? b : b <= 0 ? a : a < b ? a : b;
}

/* When the loop thread must look again, besides the parking's timers:
 * accepting's retry or balance look, the next callback, the drain tick, a
 * leadership tick; 0: none.  Due callbacks are queued now. */
static apr_time_t next_look(apr_time_t now, int draining)
{
    int busy = rp_lf_tick(rp_child.lf);
    apr_time_t next = earliest(draining ? 0 : rp_accept_balance(now),
                               rp_callbacks_queue_due(now));

    next = earliest(next, rp_accept_rest_until());
    if (rp_child.mode == RP_BRIEF) {
        next = earliest(next, rp_child.cut_at);
    }
    next = earliest(next, rp_child.stopping_at);
    if (draining) {
        next = earliest(next, now + RP_DRAIN_TICK);
    }
    if (busy) {
        next = earliest(next, now + RP_LF_TICK);
    }
    return next;
}

static void publish_counts(void)
{
    process_score *ps = ap_get_scoreboard_process(rp_child.slot);

    ps->connections = rp_conn_life_count();
    ps->suspended = rp_callbacks_suspended();
}

/* Told to go while the server goes on with this generation (spare
 * threads, MaxConnectionsPerChild): nobody waits for this child, so its
 * HTTP/1 clients keep their connections until their next answer (with
 * Connection: close) or KeepAliveTimeout, as in any child, but for
 * RP_RETIRING_KEEP at most (a long KeepAliveTimeout would keep retired
 * children, and their scoreboard slots, for that long).  Closed early,
 * one crossing its next request would fail (a client at 1,000
 * connections pausing 330 ms between requests lost hundreds per
 * benchmark).  A restart or a stop moves running_generation on
 * (rp_parent.c): then this generation's clients are moved on at once. */
#define RP_RETIRING_KEEP apr_time_from_sec(5)

static int retiring(void)
{
    /* 0 when read before the time its writer set first: just begun */
    apr_time_t began = rp_child.retired_at;

    return rp_child.mode == RP_GRACEFUL && !rp_child.got_sigterm
           && !rp_child.parent_gone
           && (!began || apr_time_now() < began + RP_RETIRING_KEEP)
           && ap_scoreboard_image->global->running_generation
              == rp_state->mpm->my_generation;
}

static int spare_http1(rp_parking *pk)
{
    return rp_conn_speaks_http1(rp_conn_of(pk));
}

/* End what timed out; with idle_for (draining) also keep-alive
 * connections idle that long, but a retiring child's HTTP/1 ones. */
static void close_expired(apr_time_t idle_for)
{
    rp_parking *batch[RP_EXPIRED_BATCH];
    int (*spare)(rp_parking *) = idle_for && retiring() ? spare_http1 : NULL;
    int n, i;

    do {
        n = rp_loop_take_expired(idle_for, spare, batch, RP_EXPIRED_BATCH);
        for (i = 0; i < n; i++) {
            rp_conn_end_waiting(rp_conn_of(batch[i]));
        }
    } while (n == RP_EXPIRED_BATCH);
}

/* Modules that keep connections of their own learn that the child stops
 * (mod_http2 sends GOAWAY on its busy connections) only after a graceful
 * stop's first RP_STOPPING_DELAY: told at once, mod_http2 shuts down a
 * connection whose client sends new streams after its notice (a batch
 * just begun: all its streams lost, under stock MPMs too).  Meanwhile
 * its idle connections end at the loop's idle close, with a GOAWAY that
 * names the last stream served. */
static void tell_modules_when_due(apr_time_t now)
{
    if (rp_child.stopping_at && now >= rp_child.stopping_at) {
        rp_child.stopping_at = 0;
        rp_state->mpm->mpm_state = AP_MPMQ_STOPPING;
    }
}

static int stop_is_graceful(void)
{
    return rp_child.mode < RP_BRIEF && !rp_child.got_sigterm;
}

/* Whether what is left must be cut now: an ungraceful stop, the parent's
 * SIGTERM, or a brief one's time is up. */
static int must_cut(apr_time_t now)
{
    return rp_child.mode == RP_UNGRACEFUL || rp_child.got_sigterm
           || (rp_child.mode == RP_BRIEF && now >= rp_child.cut_at);
}

/* A graceful stop takes what the kernel queued already (ours may be the
 * last copies of the listeners); a brief or ungraceful one leaves it
 * queued: the child could not serve those connections in time, where
 * after a full restart the parent's copies keep them for the next
 * generation (mpm_event's children, which never take more than their idle
 * workers can run, cut none of them either). */
static void stop_accepting(void)
{
    rp_accept_stop(stop_is_graceful() ? stop_is_graceful : NULL);
    rp_child.draining = 1;
}

/* Nobody watches parked connections from now on: the workers leave. */
static void release_workers(void)
{
    rp_loop_shutdown();
    rp_lf_shutdown(rp_child.lf);
}

/* The loop thread: timeouts, accepting's retries and balance looks, due
 * callbacks and late reads; when the child stops, it stops accepting,
 * closes idle keep-alive connections and returns once none is left (at
 * once if the stop is ungraceful). */
static void *APR_THREAD_FUNC loop_main(apr_thread_t *thd, void *arg)
{
    int listening = 1;

    (void)thd;
    (void)arg;
    for (;;) {
        apr_time_t now;

        now = apr_time_now();
        if (must_cut(now)) {
            break;
        }
        if (rp_child.mode != RP_RUN && listening) {
            stop_accepting();
        }
        listening = rp_accept_listening();
        if (!listening && !rp_conn_life_count()) {
            break;
        }
        tell_modules_when_due(now);
        publish_counts();
        rp_loop_wait(now, next_look(now, !listening));
        rp_accept_retry();
        close_expired(listening ? 0 : RP_IDLE_GRACE);
        rp_loop_hand_over_late_reads();
    }
    stop_accepting();
    release_workers();
    return NULL;
}

/* ---- start-up ---------------------------------------------------------- */

/* The parts in order: connections before the loop (nothing parks yet),
 * the loop before accepting (its poller watches the listeners). */
static apr_status_t setup_parts(int n)
{
    apr_status_t rv;

    if (!(rp_child.lf = rp_lf_create(n))) {
        return APR_ENOMEM;
    }
    if ((rv = rp_conn_life_setup(rp_child.pruntime, n)) != APR_SUCCESS) {
        return rv;
    }
    rp_conn_setup(rp_child.pruntime, rp_child.slot, n);
    rp_balance_setup(rp_child.slot, rp_child.bucket);
    if ((rv = rp_loop_setup(rp_child.pruntime, rp_child.slot, rp_child.lf))
        != APR_SUCCESS) {
        return rv;
    }
    return rp_accept_setup(rp_child.pruntime, rp_child.slot, rp_child.bucket);
}

static void setup_runtime(void)
{
    apr_status_t rv;
    int n = rp_lim.threads_per_child;

    apr_pool_create(&rp_child.pruntime, rp_pconf);
    apr_pool_tag(rp_child.pruntime, "mpm_runtime");
    if ((rv = setup_parts(n)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv,
                     ap_server_conf, RP_LOG_TAG "cannot set up the child's "
                     "event loop: check memory and descriptor limits");
        child_exit(APEXIT_CHILDSICK);
    }
    rp_child.workers = apr_pcalloc(rp_child.pruntime,
                                   n * sizeof(apr_thread_t *));
}

static apr_thread_t *spawn_thread(apr_thread_start_t fn, void *arg)
{
    apr_thread_t *t = NULL;
    apr_threadattr_t *attr;
    apr_status_t rv;

    apr_threadattr_create(&attr, rp_child.pruntime);
    apr_threadattr_detach_set(attr, 0);
    if (ap_thread_stacksize) {
        apr_threadattr_stacksize_set(attr, ap_thread_stacksize);
    }
    if ((rv = mpmng_thread_create(&t, attr, fn, arg, rp_child.pruntime))) {
        ap_log_error(APLOG_MARK, APLOG_ALERT, rv, ap_server_conf, RP_LOG_TAG
                     "cannot create a thread: check the process and memory "
                     "limits (ulimit -u, ThreadStackSize)");
        child_exit(APEXIT_CHILDSICK);
    }
    return t;
}

static int slot_free(int tid)
{
    int st = ap_scoreboard_image->servers[rp_child.slot][tid].status;
    return st == SERVER_DEAD || st == SERVER_GRACEFUL;
}

/* Workers take their scoreboard entries as a previous occupant of this slot
 * (still finishing requests) releases them; the event loop starts with the
 * first worker. */
static void *APR_THREAD_FUNC starter_main(apr_thread_t *thd, void *arg)
{
    int made = 0, tid;

    (void)thd;
    (void)arg;
    while (!rp_child.starter_may_exit) {
        for (tid = 0; tid < rp_lim.threads_per_child; tid++) {
            if (rp_child.workers[tid] || !slot_free(tid)) {
                continue;
            }
            ap_update_child_status_from_indexes(rp_child.slot, tid,
                                                SERVER_STARTING, NULL);
            apr_atomic_inc32(&rp_child.workers_running);
            rp_child.workers[tid] = spawn_thread(worker_main,
                                              (void *)(apr_uintptr_t)tid);
            made++;
        }
        if (made && !rp_child.loop) {
            rp_child.loop = spawn_thread(loop_main, NULL);
        }
        if (made == rp_lim.threads_per_child) {
            break;
        }
        apr_sleep(apr_time_from_msec(100));
    }
    return NULL;
}

/* ---- stop -------------------------------------------------------------- */

static void join(apr_thread_t *t)
{
    apr_status_t ignored;

    if (t) {
        apr_thread_join(&ignored, t);
    }
}

/* A full restart or stop cuts what its grace did not finish, as stock
 * MPMs do at once: said, so that a client's failed request (a slow one, or
 * a child starved of CPU) can be told from a fault. */
static void log_cut_after_grace(void)
{
    apr_uint32_t left = rp_conn_life_count();

    if (rp_child.mode == RP_BRIEF && left) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                     "full restart or stop: %u connection(s) not done within "
                     "%d ms are cut (requests in progress or just arrived)",
                     left, (int)apr_time_as_msec(RP_BRIEF_GRACE));
    }
}

/* Graceful: the loop stops listening and returns once every connection
 * is done (requests in progress finish, answers carry Connection: close,
 * idle keep-alive connections are closed).  Brief (a full restart or
 * stop): the same for RP_BRIEF_GRACE, so a request already on its way on
 * a kept-alive connection is answered rather than reset; then, or at once
 * if ungraceful (or on the parent's SIGTERM), connections in progress are
 * cut. */
static void stop_threads(rp_stop_mode mode)
{
    int i;

    rp_child.starter_may_exit = 1;
    join(rp_child.starter);
    rp_child.cut_at = apr_time_now() + RP_BRIEF_GRACE;
    note_stop_began();
    rp_child.mode = mode;
    rp_child.draining = 1;
    /* Modules ask this to end their connections: mod_http2 sends GOAWAY
     * (a busy HTTP/2 connection would otherwise keep the child). */
    if (mode == RP_GRACEFUL && rp_child.loop) {
        rp_child.stopping_at = apr_time_now() + RP_STOPPING_DELAY;
    }
    else {
        rp_state->mpm->mpm_state = AP_MPMQ_STOPPING;
    }
    if (rp_child.loop) {
        rp_loop_wakeup();
        join(rp_child.loop);   /* it releases the workers when done */
    }
    else {
        release_workers();
    }
    if (rp_child.mode >= RP_BRIEF || rp_child.got_sigterm) {
        log_cut_after_grace();
        rp_child.mode = RP_UNGRACEFUL;
        rp_conn_cut_running();
    }
    for (i = 0; i < rp_lim.threads_per_child; i++) {
        join(rp_child.workers[i]);
    }
}

/* ---- a parent that is gone ---------------------------------------------
 * Killed or crashed, it no longer maintains or stops this child, whose
 * listening sockets would go on sharing the port with the next server's
 * (SO_REUSEPORT: the kernel would give them a share of its connections,
 * old code and configuration serving them).  The kernel tells us
 * (PR_SET_PDEATHSIG, reset by the change of user, so set after it): the
 * child stops as for a graceful stop. */
#define RP_PARENT_GONE_SIGNAL SIGUSR2

static void note_parent_gone(int sig)
{
    (void)sig;
    rp_child.parent_gone = 1;
    rp_loop_wakeup();           /* an eventfd write: signal-safe */
}

static void watch_parent(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = note_parent_gone;   /* no SA_RESTART: the pod read returns */
    sigemptyset(&sa.sa_mask);
    sigaction(RP_PARENT_GONE_SIGNAL, &sa, NULL);
#ifdef PR_SET_PDEATHSIG
    (void)prctl(PR_SET_PDEATHSIG, RP_PARENT_GONE_SIGNAL);
#endif
    if (getppid() != rp_child.parent) {
        rp_child.parent_gone = 1;       /* before the line above */
    }
}

static void log_parent_gone(void)
{
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, RP_LOG_TAG
                 "the parent (pid %" APR_PID_T_FMT ") is gone: this child "
                 "(slot %d) stops accepting and ends once its connections "
                 "are done; start the server again", rp_child.parent,
                 rp_child.slot);
}

static rp_stop_mode wait_for_stop(void)
{
    ap_pod_t *pod = rp_buckets[rp_child.bucket].pod;

    for (;;) {
        int rv;

        if (rp_child.parent_gone) {
            log_parent_gone();
            return RP_GRACEFUL;
        }
        rv = ap_mpm_podx_check(pod);
        if (rv == AP_MPM_PODX_GRACEFUL) {
            return RP_GRACEFUL;
        }
        if (rv == AP_MPM_PODX_RESTART) {
            return RP_BRIEF;
        }
        if (rp_child.mode != RP_RUN) {
            return rp_child.mode;          /* one of our threads asked */
        }
        if (rp_child.got_sigterm) {
            return RP_UNGRACEFUL;       /* the parent's reclaim */
        }
    }
}

static void close_other_pods(void)
{
    int i;

    for (i = 0; i < rp_lim.num_buckets; i++) {
        if (i != rp_child.bucket && rp_buckets[i].pod) {
            ap_mpm_podx_close(rp_buckets[i].pod);
        }
    }
}

static void unblock(int sig)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static int one_process_signal(int signum)
{
    return signum == SIGTERM || signum == SIGINT;
}

void rp_child_main(int slot, int bucket)
{
    rp_stop_mode mode;
    apr_status_t rv;

    rp_child.slot = slot;
    rp_child.bucket = bucket;
    rp_bstats_child_started(slot);
    rp_state->mpm->mpm_state = AP_MPMQ_STARTING;
    ap_fatal_signal_child_setup(ap_server_conf);
    apr_pool_create(&rp_child.pchild, rp_pconf);
    apr_pool_tag(rp_child.pchild, "pchild");
    if (!rp_one_process) {
        mpmng_thread_main_create(rp_child.pchild);
    }
    rp_listen_close_other_buckets(bucket);
    rp_affinity_pin(bucket);    /* before any thread: they inherit it */
    close_other_pods();
    rp_gen_close_retiring_in_child();
    rp_upgrade_close_in_child();
    ap_reopen_scoreboard(rp_child.pchild, NULL, 0);
    if (ap_run_drop_privileges(rp_child.pchild, ap_server_conf)) {
        child_exit(APEXIT_CHILDFATAL);
    }
    /* Block signals in every thread we create; the main thread then
     * takes SIGTERM alone. */
    if ((rv = apr_setup_signal_thread()) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, ap_server_conf,
                     RP_LOG_TAG "cannot initialise the signal thread");
        child_exit(APEXIT_CHILDFATAL);
    }
    ap_run_child_init(rp_child.pchild, ap_server_conf);
    setup_runtime();
    rp_child.starter = spawn_thread(starter_main, NULL);
    rp_state->mpm->mpm_state = AP_MPMQ_RUNNING;

    if (rp_one_process) {
        apr_signal_thread(one_process_signal);
        mode = RP_UNGRACEFUL;
    }
    else {
        catch_sigterm();
        watch_parent();
        unblock(SIGTERM);
        unblock(RP_PARENT_GONE_SIGNAL);
        mode = wait_for_stop();
    }
    stop_threads(mode);
    child_exit(0);
}

void rp_child_install_early_signals(pid_t parent)
{
    rp_child.parent = parent;
    apr_signal(SIGCHLD, SIG_DFL);   /* the parent's wake-up handler */
    apr_signal(SIGTERM, die_now);
}
