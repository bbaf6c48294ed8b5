/* A connection's life in a worker: create it, read its next request ahead
 * until it is whole (rp_readahead.h: parked meanwhile), run httpd's
 * process_connection hooks for it (the async contract: they return with
 * c->cs->state saying what the connection waits for), flush what is left
 * to write, then park it (rp_loop_park) or close it.  Workers never wait
 * for a client between requests, nor for the rest of a request. */
#include "rp_callbacks.h"
#include "rp_conn.h"
#include "rp_readahead.h"
#include "rp_smallflush.h"
#include "rp_tlsbody.h"
#include "rp_trim.h"

#include "apr_atomic.h"
#include "http_connection.h"
#include "http_protocol.h"
#include "http_vhost.h"
#include "util_filter.h"

#include "mpmng_httpd.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

/* After our FIN we read what the client still sends: until 2 s pass
 * without data, 30 s at most. */
#define RP_LINGER_TIMEOUT apr_time_from_sec(2)
#define RP_LINGER_MAX apr_time_from_sec(30)
#define RP_LINGER_READS 16             /* reads per event: no monopoly */

typedef enum {
    RP_NEXT_KEEPALIVE,          /* park: wait for the next request */
    RP_NEXT_READ_AHEAD,         /* park: wait for the rest of a request */
    RP_NEXT_WAIT_IO,            /* park: write completion or a module's wait */
    RP_NEXT_LINGER,             /* park: read until EOF, then close */
    RP_NEXT_CLOSE,              /* close now */
    RP_NEXT_SUSPENDED           /* a module owns it now */
} rp_next;

/* Per worker: the connection it runs and its socket (atomic stores by
 * that worker), so an ungraceful stop can cut them. */
static struct {
    int slot;                   /* the child's */
    int nworkers;
    conn_rec **conns;
    int *conn_fds;
} running;

void rp_conn_setup(apr_pool_t *p, int slot, int nworkers)
{
    int n = nworkers;

    running.slot = slot;
    running.conns = apr_pcalloc(p, n * sizeof(conn_rec *));
    running.conn_fds = apr_palloc(p, n * sizeof(int));
    while (n--) {
        running.conn_fds[n] = -1;
    }
    running.nworkers = nworkers;
}

static long conn_id(int tid)
{
    return (long)running.slot * rp_lim.thread_limit + tid;
}

/* Each worker publishes only its own entry, so plain atomic stores do: no
 * lock shared by all workers on every request.  An ungraceful stop may
 * read a descriptor just as its connection closes and shut down whatever
 * reused the number: another connection being cut anyway, or a
 * non-socket (ENOTSOCK). */
static void publish_running(int tid, conn_rec *c, apr_socket_t *sock)
{
    int fd = -1;

    if (sock) {
        apr_os_sock_get(&fd, sock);
    }
    __atomic_store_n(&running.conns[tid], c, __ATOMIC_RELEASE);
    __atomic_store_n(&running.conn_fds[tid], fd, __ATOMIC_RELEASE);
}

int rp_conn_pre_close_connection(conn_rec *c)
{
    long tid = c->id - (long)running.slot * rp_lim.thread_limit;

    if (running.conns && tid >= 0 && tid < running.nworkers
        && __atomic_load_n(&running.conns[tid], __ATOMIC_ACQUIRE) == c) {
        publish_running((int)tid, NULL, NULL);
    }
    return OK;
}

void rp_conn_cut_running(void)
{
    int tid;

    for (tid = 0; tid < running.nworkers; tid++) {
        int fd = __atomic_load_n(&running.conn_fds[tid], __ATOMIC_ACQUIRE);
        if (fd >= 0) {
            shutdown(fd, SHUT_RDWR);
        }
    }
}

/* Park rc; 1 if its wait is over already (run it again).  What the loop
 * cannot park is closed here. */
static int park(rp_conn *rc, rp_park why, int events,
                apr_interval_time_t timeout)
{
    int got = rp_loop_park(&rc->parking, why, events, timeout);

    if (got == RP_LOOP_REFUSED) {
        rp_conn_close(rc);
        return 0;
    }
    return got == RP_LOOP_READY;
}

/* ---- states ------------------------------------------------------------ */

/* Its first keep-alive wait: what it holds in memory cut to what it uses
 * (rp_trim.h), once, so a busy keep-alive connection pays nothing more.
 * HTTP/1 only: another protocol's module may still use the connection's
 * memory from threads of its own. */
static void trim_once(rp_conn *rc)
{
    if (!rc->trimmed && !strcmp(ap_get_protocol(rc->c), AP_PROTOCOL_HTTP1)) {
        rc->trimmed = 1;
        rp_trim_idle(rc->c);
    }
}

/* A new connection: create its conn_rec and run pre_connection hooks. */
static int open_connection(rp_conn *rc, apr_thread_t *thd, int tid)
{
    apr_bucket_alloc_t *ba = apr_bucket_alloc_create(rc->pool);
    conn_rec *c;
    int rv;

    ap_create_sb_handle(&rc->sbh, rc->pool, running.slot, tid);
    c = ap_run_create_connection(rc->pool, ap_server_conf, rc->sock,
                                 conn_id(tid), rc->sbh, ba);
    if (!c) {
        rp_conn_close(rc);
        return 0;
    }
    rc->c = c;
    c->current_thread = thd;
    c->cs = &rc->pub;
    ap_update_vhost_given_ip(c);
    rc->pub.state = CONN_STATE_PROCESSING;
    rc->pub.sense = CONN_SENSE_DEFAULT;
    rv = mpmng_pre_connection(c, rc->sock);
    if (rv != OK && rv != DONE) {
        if (!ap_get_conn_socket(c)) {
            /* Core's hook never ran (httpd before 2.4.50): no filters,
             * so no pre_close hook may run either. */
            rc->pre_closed = 1;
            rp_conn_close(rc);
            return 0;
        }
        rc->pub.state = CONN_STATE_LINGER;
    }
    else {
        rc->ra = rp_ra_attach(c);
        rp_smallflush_add(c, &rc->waited_to_write);
        if (mpmng_conn_is_ssl(c)) {
            rp_tlsbody_add(c);
        }
    }
    return 1;
}

static void resume_connection(rp_conn *rc, apr_thread_t *thd, int tid)
{
    ap_update_sb_handle(rc->sbh, running.slot, tid);
    rc->c->current_thread = thd;
    rc->c->id = conn_id(tid);
}

static int is_parking_state(conn_state_e st)
{
    return st == CONN_STATE_LINGER || mpmng_state_is_waitio(st)
           || st == CONN_STATE_WRITE_COMPLETION
           || st == CONN_STATE_SUSPENDED;
}

/* Run the process_connection hooks; afterwards the state is one we handle
 * (anything unexpected, like a module that did not set it, means close). */
static void process(rp_conn *rc)
{
    int rv = ap_run_process_connection(rc->c);

    if (rv == OK || rv == DONE) {
        if (rc->pub.state == CONN_STATE_PROCESSING) {
            rc->pub.state = CONN_STATE_LINGER;
        }
        else if (rc->pub.state == CONN_STATE_KEEPALIVE) {
            rc->pub.state = CONN_STATE_WRITE_COMPLETION;
        }
    }
    if ((rv != OK && rv != DONE) || !is_parking_state(rc->pub.state)
        || rc->c->aborted) {
        rc->pub.state = CONN_STATE_LINGER;
    }
}

/* Write what the output filters still hold, without blocking: the core
 * output filter takes a NULL brigade as "continue pending writes". */
static int flush_pending(conn_rec *c)
{
    ap_filter_t *f = c->output_filters;

    while (f->next) {
        f = f->next;
    }
    return f->frec->filter_func.out_func(f, NULL) == APR_SUCCESS;
}

/* After a response: wait to write more, read the next request now
 * (pipelined), park for keep-alive, or close. */
static void after_response(rp_conn *rc)
{
    conn_rec *c = rc->c;

    ap_update_child_status(rc->sbh, SERVER_BUSY_WRITE, NULL);
    if (!flush_pending(c)) {
        rc->pub.state = CONN_STATE_LINGER;
    }
    else if (c->data_in_output_filters
             || rc->pub.sense == CONN_SENSE_WANT_READ) {
        rc->waited_to_write |= c->data_in_output_filters;
        return;                 /* stays in WRITE_COMPLETION */
    }
    else if (c->keepalive != AP_CONN_KEEPALIVE || c->aborted) {
        rc->pub.state = CONN_STATE_LINGER;
    }
    else if (c->data_in_input_filters) {
        rc->pub.state = CONN_STATE_PROCESSING;
    }
    else {
        rc->pub.state = CONN_STATE_KEEPALIVE;
    }
}

static int says_last_request(request_rec *r)
{
    const char *conn = apr_table_get(r->headers_in, "Connection");

    if (!conn) {
        return r->proto_num < HTTP_VERSION(1, 1);
    }
    return ap_find_token(r->pool, conn, "close")
           || (r->proto_num < HTTP_VERSION(1, 1)
               && !ap_find_token(r->pool, conn, "keep-alive"));
}

static int has_body(request_rec *r)
{
    const char *cl = apr_table_get(r->headers_in, "Content-Length");

    return apr_table_get(r->headers_in, "Transfer-Encoding")
           || (cl && strcmp(cl, "0"));
}

/* The client said this request is its last (Connection: close, or
 * HTTP/1.0 without keep-alive) and it has no body (one we answer early may
 * still be on its way): the client sends nothing after it (RFC 9112, 9.6),
 * so nothing can arrive after our close to make the kernel reset the
 * connection, and lingering is not needed unless data is already here. */
void rp_conn_note_request(request_rec *r)
{
    conn_rec *c = r->connection;

    if (c->master || !c->cs) {
        return;                 /* not one of our connections */
    }
    ((rp_conn *)((char *)c->cs - APR_OFFSETOF(rp_conn, pub)))->last_request =
        says_last_request(r) && !has_body(r);
}

/* Nothing unread and nothing more to come: close at once. */
static int nothing_more_to_read(rp_conn *rc)
{
    char byte;
    ssize_t n;

    if (!rc->last_request || rc->c->data_in_input_filters) {
        return 0;
    }
    n = recv(rc->parking.fd, &byte, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* Flush, then either close at once (close() sends our FIN) or send the
 * FIN now and read what the client still sends; 1 to close at once. */
static int start_lingering(rp_conn *rc)
{
    conn_rec *c = rc->c;

    rc->pre_closed = 1;
    if (ap_prep_lingering_close(c)) {
        return 1;
    }
    ap_flush_conn(c);
    if (c->aborted || nothing_more_to_read(rc)
        || apr_socket_shutdown(rc->sock, APR_SHUTDOWN_WRITE) != APR_SUCCESS) {
        return 1;
    }
    apr_socket_timeout_set(rc->sock, 0);
    rc->linger_until = apr_time_now() + RP_LINGER_MAX;
    return 0;
}

/* Before httpd reads a request: is it here whole?  Returns 1 to run it. */
static int request_here(rp_conn *rc, rp_next *next)
{
    int keepalive = rc->keepalive_wake;

    rc->keepalive_wake = 0;
    if (!rc->ra || rc->c->clogging_input_filters) {
        return 1;
    }
    switch (rp_ra_read(rc->ra, keepalive)) {
    case RP_RA_READY:
        return 1;
    case RP_RA_WAIT:
        *next = RP_NEXT_READ_AHEAD;
        return 0;
    case RP_RA_IDLE:
        rc->pub.state = CONN_STATE_KEEPALIVE;
        *next = RP_NEXT_KEEPALIVE;
        return 0;
    case RP_RA_CLOSE:
    default:                    /* gone, or too late before any request */
        *next = RP_NEXT_CLOSE;
        return 0;
    }
}

static rp_next advance(rp_conn *rc)
{
    rp_next next;

    for (;;) {
        if (mpmng_state_is_waitio(rc->pub.state)) {
            return RP_NEXT_WAIT_IO;
        }
        switch (rc->pub.state) {
        case CONN_STATE_PROCESSING:
            if (!request_here(rc, &next)) {
                return next;
            }
            process(rc);
            if (rc->ra && !mpmng_state_is_waitio(rc->pub.state)) {
                rp_ra_finished(rc->ra);     /* a module's wait goes on */
            }
            break;
        case CONN_STATE_WRITE_COMPLETION:
            after_response(rc);
            if (rc->pub.state == CONN_STATE_WRITE_COMPLETION) {
                return RP_NEXT_WAIT_IO;
            }
            break;
        case CONN_STATE_KEEPALIVE:
            if (rc->c->clogging_input_filters) {
                /* Such filters read blocking: no readiness to wait for. */
                rc->pub.state = CONN_STATE_PROCESSING;
                break;
            }
            return RP_NEXT_KEEPALIVE;
        case CONN_STATE_SUSPENDED:
            return RP_NEXT_SUSPENDED;
        default:                /* CONN_STATE_LINGER* */
            return start_lingering(rc) ? RP_NEXT_CLOSE : RP_NEXT_LINGER;
        }
    }
}

/* What a waiting connection needs: the module's sense, else by state. */
static int wanted_events(const rp_conn *rc)
{
    if (rc->pub.sense == CONN_SENSE_WANT_READ) {
        return RP_POLL_IN;
    }
    if (rc->pub.sense == CONN_SENSE_WANT_WRITE) {
        return RP_POLL_OUT;
    }
    return rc->pub.state == CONN_STATE_WRITE_COMPLETION ? RP_POLL_OUT
                                                        : RP_POLL_IN;
}

static apr_interval_time_t keepalive_timeout(const conn_rec *c)
{
    return c->base_server->keep_alive_timeout;
}

/* Until the read-ahead's deadline (passed: at once, a worker finds out). */
static apr_interval_time_t read_ahead_timeout(const rp_ra *ra)
{
    apr_time_t deadline = rp_ra_deadline(ra), now = apr_time_now();

    if (!deadline) {
        return apr_time_from_sec(86400);    /* Timeout 0: no limit */
    }
    return deadline > now ? deadline - now : 0;
}

/* Wait for the socket with Timeout.  The module's sense counts for this
 * wait only, as in mpm_event.  A module that wants to read with nothing
 * left to write (mod_http2, blocked on the client's flow-control window,
 * says so in write completion: every mod_http2 before 2.0.27, and later
 * ones on httpd before 2.4.63) goes back to its process_connection hook
 * when bytes come, as after CONN_STATE_ASYNC_WAITIO: waiting for them
 * again as keep-alive would miss them (the poller reports edges). */
static int park_io(rp_conn *rc)
{
    conn_rec *c = rc->c;
    int events = wanted_events(rc);

    /* Kept apart from c->cs: mod_http2's streams share their main
     * connection's conn_state_t and write its state from their own
     * threads, also while it waits here. */
    rc->module_wait = mpmng_state_is_waitio(rc->pub.state)
        || (rc->pub.state == CONN_STATE_WRITE_COMPLETION
            && rc->pub.sense == CONN_SENSE_WANT_READ
            && !c->data_in_output_filters
            && c->keepalive == AP_CONN_KEEPALIVE && !c->aborted);
    rc->pub.sense = CONN_SENSE_DEFAULT;
    return park(rc, RP_PARK_IO, events, c->base_server->timeout);
}

/* Run rc until it waits or closes; 1 if its wait is over already (run
 * it again). */
static int run(rp_conn *rc, apr_thread_t *thd, int tid)
{
    rp_next next;

    if (!rc->c) {
        if (!open_connection(rc, thd, tid)) {
            return 0;
        }
    }
    else {
        resume_connection(rc, thd, tid);
    }
    rp_affinity_sample(rc->sock);
    publish_running(tid, rc->c, rc->sock);
    next = advance(rc);
    /* Unpublish before another thread may own it again. */
    publish_running(tid, NULL, NULL);
    switch (next) {
    case RP_NEXT_KEEPALIVE:
        rc->pub.sense = CONN_SENSE_DEFAULT;
        trim_once(rc);
        return park(rc, RP_PARK_KEEPALIVE, RP_POLL_IN,
                    keepalive_timeout(rc->c));
    case RP_NEXT_READ_AHEAD:
        return park(rc, RP_PARK_READ, RP_POLL_IN,
                    read_ahead_timeout(rc->ra));
    case RP_NEXT_WAIT_IO:
        return park_io(rc);
    case RP_NEXT_LINGER:
        return park(rc, RP_PARK_LINGER, RP_POLL_IN, RP_LINGER_TIMEOUT);
    case RP_NEXT_CLOSE:
        rp_conn_close(rc);
        break;
    case RP_NEXT_SUSPENDED:
        rp_callbacks_suspend(rc);
        break;
    }
    return 0;
}

/* Lingering close: discard what the client still sends until EOF; 1 to
 * read again at once. */
static int linger_read(rp_conn *rc)
{
    char buf[4096];
    int i;

    for (i = 0; i < RP_LINGER_READS; i++) {
        ssize_t n = recv(rc->parking.fd, buf, sizeof(buf), 0);
        if (n > 0) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK
                      || errno == EINTR)) {
            break;
        }
        rp_conn_close(rc);      /* EOF or error: done */
        return 0;
    }
    if (apr_time_now() >= rc->linger_until) {
        rp_conn_close(rc);
        return 0;
    }
    return park(rc, RP_PARK_LINGER, RP_POLL_IN, RP_LINGER_TIMEOUT);
}

/* rc's wait (rc->parking.why) is over: carry on where it stopped. */
static int resume(rp_conn *rc, apr_thread_t *thd, int tid)
{
    switch (rc->parking.why) {
    case RP_PARK_LINGER:
        return linger_read(rc);
    case RP_PARK_KEEPALIVE:
        rc->pub.state = CONN_STATE_PROCESSING;
        rc->keepalive_wake = 1;
        break;
    case RP_PARK_READ:          /* more of the request, or its deadline */
        break;
    case RP_PARK_IO:
        /* A module's wait is over: its process_connection hook goes on.
         * Clogging input filters ask for that from any state (mod_http2
         * waits so, in write completion wanting to read, where the MPM
         * cannot tell it CONN_STATE_ASYNC_WAITIO is there). */
        if (rc->module_wait
            || (rc->c->clogging_input_filters && !rc->c->aborted)) {
            rc->pub.state = CONN_STATE_PROCESSING;
        }
        rc->module_wait = 0;
        break;
    default:                    /* just accepted (RP_PARK_NEW: earlier) */
        break;
    }
    rc->parking.why = RP_PARK_NONE;
    return run(rc, thd, tid);
}

int rp_conn_speaks_http1(rp_conn *rc)
{
    return !rc->c || !strcmp(ap_get_protocol(rc->c), AP_PROTOCOL_HTTP1);
}

/* An HTTP/1 client that finds its idle connection closed knows what to do
 * (RFC 9112, 9.3.1), and a reset tells it as well as our FIN: closed at
 * once.  An HTTP/2 client learns from the GOAWAY that mod_http2's
 * pre_close hook sends which of its streams were refused (it may send
 * new ones meanwhile): a reset could destroy that unread. */
void rp_conn_end_waiting(rp_conn *rc)
{
    if (rc->parking.why != RP_PARK_KEEPALIVE || rp_conn_speaks_http1(rc)) {
        rp_conn_close(rc);
        return;
    }
    rc->pub.state = CONN_STATE_LINGER;
    if (start_lingering(rc)) {
        rp_conn_close(rc);
        return;
    }
    if (park(rc, RP_PARK_LINGER, RP_POLL_IN, RP_LINGER_TIMEOUT)) {
        while (linger_read(rc)) {
            continue;
        }
    }
}

void rp_conn_dispatch(rp_conn *rc, apr_thread_t *thd, int tid)
{
    while (resume(rc, thd, tid)) {
        continue;
    }
}
