/* A child process: serves one listener bucket.  A listener thread accepts
 * only when a worker is idle (rp_queue), so connections a child cannot serve
 * stay queued in the kernel; workers run whole connections.  The main thread
 * waits on the bucket's pipe of death and stops the others. */
#include "rp.h"
#include "rp_queue.h"

#include "apr_atomic.h"
#include "apr_poll.h"
#include "apr_signal.h"
#include "apr_thread_proc.h"
#include "http_connection.h"
#include "http_protocol.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

typedef enum { RP_RUN, RP_GRACEFUL, RP_UNGRACEFUL } rp_stop_mode;

static struct {
    int slot, bucket;
    apr_pool_t *pchild;
    apr_pool_t *pruntime;         /* outlives connection pools */
    rp_queue *queue;
    apr_pollset_t *pollset;
    apr_thread_t *starter, *listener, **workers;
    apr_uint32_t workers_running;
    /* Per worker: its connection and socket, so a stop can end idle or all
     * connections; cleared before the socket closes, under conn_lock, so a
     * stale descriptor number is never shut down. */
    pthread_mutex_t conn_lock;
    conn_rec **conns;
    int *conn_fds;
    apr_pool_t *spare_pool;       /* listener's pool after a failed accept */
    volatile rp_stop_mode mode;   /* set by whoever decides to stop */
    volatile sig_atomic_t got_sigterm;
    volatile int draining;        /* answers carry Connection: close */
    volatile int starter_may_exit;
    apr_uint32_t conns_left;      /* MaxConnectionsPerChild budget */
    int accept_error_logged;
} child;

/* ---- exit ------------------------------------------------------------ */

static void child_exit(int code) __attribute__((noreturn));
static void child_exit(int code)
{
    rp_state->mpm->mpm_state = AP_MPMQ_STOPPING;
    if (child.pchild) {
        ap_run_child_stopping(child.pchild, child.mode == RP_GRACEFUL);
        apr_pool_destroy(child.pchild);
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
        child.got_sigterm = 1;
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
static void request_stop(rp_stop_mode mode)
{
    if (child.mode < mode) {
        child.mode = mode;
    }
    kill(getpid(), SIGTERM);
}

int rp_child_post_read_request(request_rec *r)
{
    /* While draining, tell the client this connection ends after this
     * answer, so it never sends a request into a closing connection. */
    if (child.draining) {
        r->connection->keepalive = AP_CONN_CLOSE;
    }
    return DECLINED;
}

/* ---- workers ----------------------------------------------------------- */

static void publish_connection(int tid, conn_rec *c, apr_socket_t *sock)
{
    int fd = -1;

    if (sock) {
        apr_os_sock_get(&fd, sock);
    }
    pthread_mutex_lock(&child.conn_lock);
    child.conns[tid] = c;
    child.conn_fds[tid] = fd;
    pthread_mutex_unlock(&child.conn_lock);
}

int rp_child_pre_close_connection(conn_rec *c)
{
    long tid = c->id - (long)child.slot * rp_lim.thread_limit;

    if (child.conns && tid >= 0 && tid < rp_lim.threads_per_child
        && child.conns[tid] == c) {
        publish_connection((int)tid, NULL, NULL);
    }
    return OK;
}

/* Shut down the reading side of connections: all of them, or those idle in
 * keep-alive for longer than min_idle.  Their workers then finish. */
static void shutdown_connections(int idle_only, apr_interval_time_t min_idle)
{
    apr_time_t now = apr_time_now();
    int tid;

    pthread_mutex_lock(&child.conn_lock);
    for (tid = 0; tid < rp_lim.threads_per_child; tid++) {
        worker_score *ws = &ap_scoreboard_image->servers[child.slot][tid];
        if (child.conn_fds[tid] < 0) {
            continue;
        }
        if (idle_only && (ws->status != SERVER_BUSY_KEEPALIVE
                          || now - ws->last_used < min_idle)) {
            continue;
        }
        shutdown(child.conn_fds[tid], idle_only ? SHUT_RD : SHUT_RDWR);
    }
    pthread_mutex_unlock(&child.conn_lock);
}

static void serve_connection(apr_thread_t *thd, apr_pool_t *p,
                             apr_socket_t *sock, int tid)
{
    long conn_id = (long)child.slot * rp_lim.thread_limit + tid;
    apr_bucket_alloc_t *ba = apr_bucket_alloc_create(p);
    ap_sb_handle_t *sbh;
    conn_rec *c;

    ap_create_sb_handle(&sbh, p, child.slot, tid);
    c = ap_run_create_connection(p, ap_server_conf, sock, conn_id, sbh, ba);
    if (c) {
        c->current_thread = thd;
        publish_connection(tid, c, sock);
        ap_process_connection(c, sock);
        ap_lingering_close(c);
        publish_connection(tid, NULL, NULL); /* if pre_close did not run */
    }
    else {
        apr_socket_close(sock);
    }
}

static void count_connection(void)
{
    if (ap_max_requests_per_child > 0
        && apr_atomic_dec32(&child.conns_left) == 0) {
        request_stop(RP_GRACEFUL);
    }
}

static void *APR_THREAD_FUNC worker_main(apr_thread_t *thd, void *arg)
{
    int tid = (int)(apr_uintptr_t)arg;
    worker_score *ws = &ap_scoreboard_image->servers[child.slot][tid];
    apr_pool_t *recycled = NULL;
    void *sock, *pool;

    ws->pid = getpid();
    ws->tid = apr_os_thread_current();
    ws->generation = rp_state->mpm->my_generation;
    while (child.mode != RP_UNGRACEFUL) {
        ap_update_child_status_from_indexes(child.slot, tid, SERVER_READY,
                                            NULL);
        if (rp_queue_pop(child.queue, recycled, &sock, &pool)
            != RP_QUEUE_OK) {
            break;
        }
        recycled = NULL;
        serve_connection(thd, pool, sock, tid);
        apr_pool_clear(pool);
        recycled = pool;
        count_connection();
    }
    ap_update_child_status_from_indexes(child.slot, tid,
                                        child.mode == RP_UNGRACEFUL
                                        ? SERVER_DEAD : SERVER_GRACEFUL, NULL);
    apr_atomic_dec32(&child.workers_running);
    return NULL;
}

/* ---- listener ---------------------------------------------------------- */

static apr_pool_t *connection_pool(void)
{
    apr_pool_t *p = child.spare_pool;
    apr_allocator_t *allocator;

    if (p) {
        child.spare_pool = NULL;
        return p;
    }
    if ((p = rp_queue_take_pool(child.queue))) {
        return p;
    }
    /* Own allocator per connection pool: no lock shared between workers. */
    apr_allocator_create(&allocator);
    apr_allocator_max_free_set(allocator, ap_max_mem_free);
    apr_pool_create_ex(&p, child.pruntime, NULL, allocator);
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

/* A failed accept is logged once per child; on resource shortage the
 * listener backs off briefly instead of spinning on a readable socket. */
static void accept_failed(ap_listen_rec *lr, apr_status_t rv)
{
    if (is_transient(rv)) {
        return;
    }
    if (!child.accept_error_logged) {
        child.accept_error_logged = 1;
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, ap_server_conf, RP_LOG_TAG
                     "accept on %pI failed%s (logged once per child)",
                     lr->bind_addr, is_resource_shortage(rv)
                     ? ": out of descriptors or memory, raise the open-files "
                       "limit (ulimit -n) or lower ThreadsPerChild" : "");
    }
    apr_sleep(apr_time_from_msec(is_resource_shortage(rv) ? 100 : 10));
}

/* Returns 1 if a connection was taken. */
static int accept_one(ap_listen_rec *lr)
{
    apr_pool_t *p = connection_pool();
    apr_socket_t *sock = NULL;
    apr_status_t rv = apr_socket_accept(&sock, lr->sd, p);

    if (rv != APR_SUCCESS) {
        child.spare_pool = p;
        accept_failed(lr, rv);
        return 0;
    }
    if (rp_queue_push(child.queue, sock, p) != RP_QUEUE_OK) {
        /* Cannot happen: we waited for an idler, and workers are released
         * only after we stop.  Never drop silently. */
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, ap_server_conf, RP_LOG_TAG
                     "no worker for a connection after admission (bug); "
                     "closing it");
        apr_socket_close(sock);
        apr_pool_clear(p);
        child.spare_pool = p;
    }
    return 1;
}

/* Under load the queue is rarely empty: after a successful accept, try the
 * same listener again before polling (a few times, so others get a turn). */
#define RP_ACCEPT_STREAK 16

static void *APR_THREAD_FUNC listener_main(apr_thread_t *thd, void *arg)
{
    apr_int32_t n;
    const apr_pollfd_t *ready;
    ap_listen_rec *hot = NULL;
    int next = 0, streak = 0;

    (void)thd;
    (void)arg;
    while (child.mode == RP_RUN) {
        if (rp_queue_wait_for_idler(child.queue) != RP_QUEUE_OK) {
            break;
        }
        if (child.mode != RP_RUN) {
            break;
        }
        if (hot && streak < RP_ACCEPT_STREAK && accept_one(hot)) {
            streak++;
            continue;
        }
        hot = NULL;
        streak = 0;
        if (apr_pollset_poll(child.pollset, -1, &n, &ready) != APR_SUCCESS) {
            continue; /* EINTR, or woken up to stop */
        }
        /* Rotate over ready listeners so none is starved. */
        hot = ready[next++ % n].client_data;
        if (!accept_one(hot)) {
            hot = NULL;
        }
    }
    /* Stop taking connections and drop our copies of the sockets: on a
     * restart the parent's copies keep the queues for the next children; on
     * a stop, new connections are refused at once rather than left queued. */
    ap_close_listeners_ex(rp_buckets[child.bucket].listeners);
    child.draining = 1;
    ap_scoreboard_image->parent[child.slot].quiescing = 1;
    ap_scoreboard_image->parent[child.slot].not_accepting = 1;
    rp_queue_terminate(child.queue);
    return NULL;
}

/* ---- start-up ---------------------------------------------------------- */

static void setup_runtime(void)
{
    ap_listen_rec *lr;
    apr_status_t rv;
    int n = 0;

    apr_pool_create(&child.pruntime, rp_pconf);
    apr_pool_tag(child.pruntime, "mpm_runtime");
    child.queue = rp_queue_create(rp_lim.threads_per_child);
    for (lr = rp_buckets[child.bucket].listeners; lr; lr = lr->next) {
        n++;
    }
    rv = apr_pollset_create(&child.pollset, n, child.pruntime,
                            APR_POLLSET_NOCOPY | APR_POLLSET_WAKEABLE);
    if (rv != APR_SUCCESS || !child.queue) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, ap_server_conf, RP_LOG_TAG
                     "cannot create the child's pollset or queue: check "
                     "system limits");
        child_exit(APEXIT_CHILDSICK);
    }
    for (lr = rp_buckets[child.bucket].listeners; lr; lr = lr->next) {
        apr_pollfd_t *pfd = apr_pcalloc(child.pruntime, sizeof(*pfd));
        pfd->desc_type = APR_POLL_SOCKET;
        pfd->desc.s = lr->sd;
        pfd->reqevents = APR_POLLIN;
        pfd->client_data = lr;
        if ((rv = apr_pollset_add(child.pollset, pfd)) != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_EMERG, rv, ap_server_conf,
                         RP_LOG_TAG "cannot poll listener %pI",
                         lr->bind_addr);
            child_exit(APEXIT_CHILDSICK);
        }
    }
    child.workers = apr_pcalloc(child.pruntime,
                                rp_lim.threads_per_child * sizeof(apr_thread_t *));
    child.conns = apr_pcalloc(child.pruntime,
                              rp_lim.threads_per_child * sizeof(conn_rec *));
    child.conn_fds = apr_palloc(child.pruntime,
                                rp_lim.threads_per_child * sizeof(int));
    for (n = 0; n < rp_lim.threads_per_child; n++) {
        child.conn_fds[n] = -1;
    }
    pthread_mutex_init(&child.conn_lock, NULL);
    apr_atomic_set32(&child.conns_left, ap_max_requests_per_child > 0
                     ? (apr_uint32_t)ap_max_requests_per_child : 0);
}

static apr_thread_t *spawn_thread(apr_thread_start_t fn, void *arg)
{
    apr_thread_t *t = NULL;
    apr_threadattr_t *attr;
    apr_status_t rv;

    apr_threadattr_create(&attr, child.pruntime);
    apr_threadattr_detach_set(attr, 0);
    if (ap_thread_stacksize) {
        apr_threadattr_stacksize_set(attr, ap_thread_stacksize);
    }
    if ((rv = ap_thread_create(&t, attr, fn, arg, child.pruntime))) {
        ap_log_error(APLOG_MARK, APLOG_ALERT, rv, ap_server_conf, RP_LOG_TAG
                     "cannot create a thread: check the process and memory "
                     "limits (ulimit -u, ThreadStackSize)");
        child_exit(APEXIT_CHILDSICK);
    }
    return t;
}

static int slot_free(int tid)
{
    int st = ap_scoreboard_image->servers[child.slot][tid].status;
    return st == SERVER_DEAD || st == SERVER_GRACEFUL;
}

/* Workers take their scoreboard entries as a previous occupant of this slot
 * (still finishing requests) releases them; the listener starts with the
 * first worker. */
static void *APR_THREAD_FUNC starter_main(apr_thread_t *thd, void *arg)
{
    int made = 0, tid;

    (void)thd;
    (void)arg;
    while (!child.starter_may_exit) {
        for (tid = 0; tid < rp_lim.threads_per_child; tid++) {
            if (child.workers[tid] || !slot_free(tid)) {
                continue;
            }
            ap_update_child_status_from_indexes(child.slot, tid,
                                                SERVER_STARTING, NULL);
            apr_atomic_inc32(&child.workers_running);
            child.workers[tid] = spawn_thread(worker_main,
                                              (void *)(apr_uintptr_t)tid);
            made++;
        }
        if (made && !child.listener) {
            child.listener = spawn_thread(listener_main, NULL);
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

/* Graceful: requests in progress finish, and connections sending requests
 * get their next answer with Connection: close; connections that sit idle
 * in keep-alive are closed rather than kept for KeepAliveTimeout.  The
 * grace period lets a client's next request, already on its way, arrive. */
#define RP_IDLE_GRACE apr_time_from_msec(250)

static void drain_connections(void)
{
    while (apr_atomic_read32(&child.workers_running) > 0) {
        if (child.got_sigterm) {
            /* The parent's patience ran out (GracefulShutdownTimeout). */
            child.mode = RP_UNGRACEFUL;
            shutdown_connections(0, 0);
            return;
        }
        shutdown_connections(1, RP_IDLE_GRACE);
        apr_sleep(apr_time_from_msec(50));
    }
}

static void stop_threads(rp_stop_mode mode)
{
    int i;

    child.starter_may_exit = 1;
    join(child.starter);
    child.mode = mode;
    child.draining = 1;
    /* Listener first: it marks us quiescing.  Workers are released only
     * after its last hand-over, or a connection it accepted while we were
     * stopping could find no worker left and be reset at exit. */
    rp_queue_close_intake(child.queue);
    if (child.listener) {
        apr_pollset_wakeup(child.pollset);
        join(child.listener);
    }
    rp_queue_terminate(child.queue);
    if (mode == RP_UNGRACEFUL) {
        shutdown_connections(0, 0);
    }
    else {
        drain_connections();
    }
    for (i = 0; i < rp_lim.threads_per_child; i++) {
        join(child.workers[i]);
    }
}

static rp_stop_mode wait_for_stop(void)
{
    ap_pod_t *pod = rp_buckets[child.bucket].pod;

    for (;;) {
        int rv = ap_mpm_podx_check(pod);
        if (rv == AP_MPM_PODX_GRACEFUL) {
            return RP_GRACEFUL;
        }
        if (rv == AP_MPM_PODX_RESTART) {
            return RP_UNGRACEFUL;
        }
        if (child.mode != RP_RUN) {
            return child.mode;          /* one of our threads asked */
        }
        if (child.got_sigterm) {
            return RP_UNGRACEFUL;       /* the parent's reclaim */
        }
    }
}

static void close_other_pods(void)
{
    int i;

    for (i = 0; i < rp_lim.num_buckets; i++) {
        if (i != child.bucket && rp_buckets[i].pod) {
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

    child.slot = slot;
    child.bucket = bucket;
    rp_state->mpm->mpm_state = AP_MPMQ_STARTING;
    ap_fatal_signal_child_setup(ap_server_conf);
    apr_pool_create(&child.pchild, rp_pconf);
    apr_pool_tag(child.pchild, "pchild");
#if AP_HAS_THREAD_LOCAL
    if (!rp_one_process) {
        apr_thread_t *main_thd;
        ap_thread_main_create(&main_thd, child.pchild);
    }
#endif
    rp_listen_close_other_buckets(bucket);
    close_other_pods();
    ap_reopen_scoreboard(child.pchild, NULL, 0);
    if (ap_run_drop_privileges(child.pchild, ap_server_conf)) {
        child_exit(APEXIT_CHILDFATAL);
    }
    /* Block signals in every thread we create; the main thread then
     * takes SIGTERM alone. */
    if ((rv = apr_setup_signal_thread()) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, ap_server_conf,
                     RP_LOG_TAG "cannot initialise the signal thread");
        child_exit(APEXIT_CHILDFATAL);
    }
    ap_run_child_init(child.pchild, ap_server_conf);
    setup_runtime();
    child.starter = spawn_thread(starter_main, NULL);
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
