/* A child process: serves one listener bucket.  An event loop thread
 * (rp_loop.c) accepts and watches idle connections; workers run a
 * connection only while it has a request to process (rp_conn.c).  The main
 * thread waits on the bucket's pipe of death and stops the others. */
#include "rp_child.h"

#include "apr_atomic.h"
#include "apr_signal.h"
#include "http_connection.h"
#include "http_protocol.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

rp_child_state rp_child;

/* ---- exit ------------------------------------------------------------ */

static void child_exit(int code) __attribute__((noreturn));
static void child_exit(int code)
{
    rp_state->mpm->mpm_state = AP_MPMQ_STOPPING;
    if (rp_child.pchild) {
        ap_run_child_stopping(rp_child.pchild, rp_child.mode == RP_GRACEFUL);
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
        if (rp_child.loop_poller) {
            rp_loop_wakeup();   /* an eventfd write: signal-safe */
        }
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

/* Ask the main thread to stop this child (from any thread). */
void rp_child_request_stop(rp_stop_mode mode)
{
    if (rp_child.mode < mode) {
        rp_child.mode = mode;
    }
    kill(getpid(), SIGTERM);
}

int rp_child_post_read_request(request_rec *r)
{
    /* While draining, tell the client this connection ends after this
     * answer, so it never sends a request into a closing connection. */
    if (rp_child.draining) {
        r->connection->keepalive = AP_CONN_CLOSE;
    }
    rp_conn_note_request(r);
    rp_hold_add(r);
    return DECLINED;
}

/* ---- workers ----------------------------------------------------------- */

/* Each worker publishes only its own entry, so plain atomic stores do: no
 * lock shared by all workers on every request.  An ungraceful stop may
 * read a descriptor just as its connection closes and shut down whatever
 * reused the number: another connection being cut anyway, or a
 * non-socket (ENOTSOCK). */
void rp_child_publish_connection(int tid, conn_rec *c, apr_socket_t *sock)
{
    int fd = -1;

    if (sock) {
        apr_os_sock_get(&fd, sock);
    }
    __atomic_store_n(&rp_child.conns[tid], c, __ATOMIC_RELEASE);
    __atomic_store_n(&rp_child.conn_fds[tid], fd, __ATOMIC_RELEASE);
}

int rp_child_pre_close_connection(conn_rec *c)
{
    long tid = c->id - (long)rp_child.slot * rp_lim.thread_limit;

    if (rp_child.conns && tid >= 0 && tid < rp_lim.threads_per_child
        && __atomic_load_n(&rp_child.conns[tid], __ATOMIC_ACQUIRE) == c) {
        rp_child_publish_connection((int)tid, NULL, NULL);
    }
    return OK;
}

/* Ungraceful stop: cut the connections workers are running. */
static void shutdown_connections(void)
{
    int tid;

    for (tid = 0; tid < rp_lim.threads_per_child; tid++) {
        int fd = __atomic_load_n(&rp_child.conn_fds[tid], __ATOMIC_ACQUIRE);
        if (fd >= 0) {
            shutdown(fd, SHUT_RDWR);
        }
    }
}

/* The leader's wait: ready listeners and the connections that waited for
 * what happened (claimed now), as jobs.  A connection's job carries the
 * connection itself (user-space pointers never have the listener bit). */
static int take_events(rp_lf_job *jobs)
{
    rp_poll_event ev[RP_LF_BATCH];
    int n, i, out = 0, woken;

    n = rp_poller_wait(rp_child.conn_poller, -1, ev, RP_LF_BATCH, &woken);
    for (i = 0; i < n; i++) {
        rp_conn *rc;
        if (ev[i].token & RP_LISTENER_TOKEN) {
            jobs[out].token = ev[i].token;
            jobs[out++].events = ev[i].events;
        }
        else if ((rc = rp_loop_claim(ev[i].token, ev[i].events))) {
            jobs[out].token = (uint64_t)(apr_uintptr_t)rc;
            jobs[out++].events = ev[i].events;
        }
    }
    return out;
}

/* A listener job accepts one connection and, if it got one, queues itself
 * again behind the events already taken: a burst of new connections is
 * taken one per job, not one per wait (the poller reports the listener
 * once among all ready connections, which would starve it). */
static void run_job(const rp_lf_job *job, apr_thread_t *thd, int tid)
{
    rp_conn *rc;

    if (job->token & RP_LISTENER_TOKEN) {
        rc = rp_accept((int)(job->token & ~RP_LISTENER_TOKEN));
        if (rc && rp_lf_push(rp_child.lf, job) > 0) {
            rp_loop_wakeup();
        }
    }
    else if (job->token & RP_TIMER_TAG) {
        rp_callbacks_run(job->token, thd, tid);
        return;
    }
    else {
        rc = (rp_conn *)(apr_uintptr_t)job->token;
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
    while (rp_child.mode != RP_UNGRACEFUL && !rp_child.loop_done) {
        rp_lf_job jobs[RP_LF_BATCH], job;
        int what;

        ap_update_child_status_from_indexes(rp_child.slot, tid, SERVER_READY,
                                            NULL);
        what = rp_lf_next(rp_child.lf, tid, &job);
        if (what == RP_LF_SHUT) {
            break;
        }
        if (what == RP_LF_LEAD) {
            int n = take_events(jobs);
            if (!n) {
                continue;
            }
            if (rp_lf_got(rp_child.lf, tid, jobs, n)) {
                rp_loop_wakeup();
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

/* ---- start-up ---------------------------------------------------------- */

static void setup_runtime(void)
{
    apr_status_t rv = APR_ENOMEM;
    int n = rp_lim.threads_per_child;

    apr_pool_create(&rp_child.pruntime, rp_pconf);
    apr_pool_tag(rp_child.pruntime, "mpm_runtime");
    rp_child.lf = rp_lf_create(n);
    if (!rp_child.lf || (rv = rp_conn_life_setup(n)) != APR_SUCCESS
        || (rv = rp_loop_setup()) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv,
                     ap_server_conf, RP_LOG_TAG "cannot set up the child's "
                     "event loop: check memory and descriptor limits");
        child_exit(APEXIT_CHILDSICK);
    }
    rp_child.workers = apr_pcalloc(rp_child.pruntime, n * sizeof(apr_thread_t *));
    rp_child.conns = apr_pcalloc(rp_child.pruntime, n * sizeof(conn_rec *));
    rp_child.conn_fds = apr_palloc(rp_child.pruntime, n * sizeof(int));
    while (n--) {
        rp_child.conn_fds[n] = -1;
    }
    apr_atomic_set32(&rp_child.conns_left, ap_max_requests_per_child > 0
                     ? (apr_uint32_t)ap_max_requests_per_child : 0);
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
    if ((rv = ap_thread_create(&t, attr, fn, arg, rp_child.pruntime))) {
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
            rp_child.loop = spawn_thread(rp_loop_main, NULL);
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

/* Graceful: the loop stops listening and returns once every connection
 * is done (requests in progress finish, answers carry Connection: close,
 * idle keep-alive connections are closed).  Ungraceful (or the parent's
 * SIGTERM during a graceful stop, after GracefulShutdownTimeout): the loop
 * returns at once and connections in progress are cut. */
static void stop_threads(rp_stop_mode mode)
{
    int i;

    rp_child.starter_may_exit = 1;
    join(rp_child.starter);
    rp_child.mode = mode;
    rp_child.draining = 1;
    if (rp_child.loop) {
        rp_loop_wakeup();
        join(rp_child.loop);   /* it releases the workers when done */
    }
    else {
        rp_child.loop_done = 1;
        rp_poller_shutdown(rp_child.conn_poller);
        rp_lf_shutdown(rp_child.lf);
    }
    if (rp_child.mode == RP_UNGRACEFUL || rp_child.got_sigterm) {
        rp_child.mode = RP_UNGRACEFUL;
        shutdown_connections();
    }
    for (i = 0; i < rp_lim.threads_per_child; i++) {
        join(rp_child.workers[i]);
    }
}

static rp_stop_mode wait_for_stop(void)
{
    ap_pod_t *pod = rp_buckets[rp_child.bucket].pod;

    for (;;) {
        int rv = ap_mpm_podx_check(pod);
        if (rv == AP_MPM_PODX_GRACEFUL) {
            return RP_GRACEFUL;
        }
        if (rv == AP_MPM_PODX_RESTART) {
            return RP_UNGRACEFUL;
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
#if AP_HAS_THREAD_LOCAL
    if (!rp_one_process) {
        apr_thread_t *main_thd;
        ap_thread_main_create(&main_thd, rp_child.pchild);
    }
#endif
    rp_listen_close_other_buckets(bucket);
    rp_affinity_pin(bucket);    /* before any thread: they inherit it */
    close_other_pods();
    rp_gen_close_retiring_in_child();
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
        unblock(SIGTERM);
        mode = wait_for_stop();
    }
    stop_threads(mode);
    child_exit(0);
}

void rp_child_install_early_signals(void)
{
    apr_signal(SIGCHLD, SIG_DFL);   /* the parent's wake-up handler */
    apr_signal(SIGTERM, die_now);
}
