/* A connection's life in a worker: create it, run httpd's
 * process_connection hooks for one request at a time (the async contract:
 * they return with c->cs->state saying what the connection waits for),
 * write what is left, then park it for its next request (wn_keepalive.c)
 * or end it (wn_close.c).  No worker waits for a client between
 * requests, unless parking is impossible: then it waits as stock does. */
#include "wn.h"

#include "http_connection.h"
#include "http_core.h"
#include "http_vhost.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mpm_common.h"
#include "apr_portable.h"
#include "apr_poll.h"
#include "ap_mpm.h"

static WN_THREAD_LOCAL int my_index;   /* the running worker's scoreboard slot */

void wn_conn_set_worker(int index)
{
    my_index = index;
}

/* APR takes the socket as blocking without timeouts.  Only the blocking
 * mode is restored, and only when it may be off: a recycled socket's
 * stale SO_RCVTIMEO/SO_SNDTIMEO are replaced by core's pre_connection,
 * whose positive Timeout APR always applies to a socket it believes has
 * none, before httpd reads or writes (until then they bound a blocking
 * call in another module's pre_connection, which Timeout bounds anyway).
 * Each option set is a wineserver round trip under Wine. */
static int prepare_socket(wn_ctx *ctx)
{
    static apr_uint32_t log_blocking;
    apr_os_sock_info_t info;
    int ok = 1;

    if (ctx->nonblocking) {
        u_long off = 0;

        /* APR reads it as a blocking socket with a timeout: one left
         * non-blocking would fail its reads, so it is not served. */
        if (ioctlsocket(ctx->s, FIONBIO, &off) != 0) {
            wn_log_once(&log_blocking, APLOG_ERR, apr_get_netos_error(),
                        WN_TAG "cannot make an accepted socket blocking "
                        "again (ioctlsocket); such connections are closed "
                        "(logged once)");
            ok = 0;
        }
        else
            ctx->nonblocking = 0;
    }
    info.os_sock = &ctx->s;
    info.local = ctx->local;
    info.remote = ctx->remote;
    info.family = ctx->local ? ctx->local->sa_family : ctx->listener->family;
    info.type = SOCK_STREAM;
    info.protocol = IPPROTO_TCP;
    ctx->sock = NULL;
    apr_os_sock_make(&ctx->sock, &info, ctx->ptrans);
    return ok;
}

/* The conn_rec's apr_thread_t is made once per connection and pointed at
 * each worker that resumes it (no allocation per request).  APR keeps a
 * pointer to the handle: it lives in ctx, not on this stack. */
static void attach_thread(wn_ctx *ctx)
{
    ctx->osthd = apr_os_thread_current();
    apr_os_thread_put(&ctx->thd, &ctx->osthd, ctx->ptrans);
    ctx->c->current_thread = ctx->thd;
}

/* Creates the conn_rec and runs the pre_connection hooks; 0 if there is
 * no connection to serve (create_connection closed the socket). */
static int open_connection(wn_ctx *ctx)
{
    apr_bucket_alloc_t *ba;
    conn_rec *c;
    int rv, usable;

    usable = prepare_socket(ctx);
    ba = apr_bucket_alloc_create(ctx->ptrans);
    ap_create_sb_handle(&ctx->sbh, ctx->ptrans, wn_slot, my_index);
    c = ap_run_create_connection(ctx->ptrans, ap_server_conf, ctx->sock,
                                 (long)wn_slot * wn_run.thread_limit + my_index,
                                 ctx->sbh, ba);
    if (!c) {
        ctx->s = INVALID_SOCKET;
        ctx->recycled = 0;
        return 0;
    }
    ctx->c = c;
    ctx->thd = NULL;
    memset(&ctx->cs, 0, sizeof ctx->cs);
    ctx->cs.state = CONN_STATE_PROCESSING;
    c->cs = &ctx->cs;
    ctx->ka_timeout = c->base_server->keep_alive_timeout;
    ctx->flush_bb = NULL;
    attach_thread(ctx);
    ap_update_vhost_given_ip(c);
    rv = ap_pre_connection(c, ctx->sock);
    if ((rv != OK && rv != DONE) || !usable)
        ctx->cs.state = CONN_STATE_LINGER;
    return 1;
}

/* Runs the process_connection hooks; afterwards the state is one we
 * handle, or LINGER. */
static void process(wn_ctx *ctx)
{
    conn_rec *c = ctx->c;
    int rv = ap_run_process_connection(c);

    if ((rv != OK && rv != DONE) || c->aborted
        || (ctx->cs.state != CONN_STATE_WRITE_COMPLETION
            && ctx->cs.state != CONN_STATE_ASYNC_WAITIO))
        ctx->cs.state = CONN_STATE_LINGER;
}

/* Writes what the output filters set aside (blocking, bounded by
 * Timeout); 0 if the connection broke. */
static int flush_output(wn_ctx *ctx)
{
    conn_rec *c = ctx->c;

    if (!c->data_in_output_filters)
        return !c->aborted;
    if (!ctx->flush_bb)       /* once per connection: no growth per request */
        ctx->flush_bb = apr_brigade_create(c->pool, c->bucket_alloc);
    APR_BRIGADE_INSERT_TAIL(ctx->flush_bb,
                            apr_bucket_flush_create(c->bucket_alloc));
    if (ap_pass_brigade(c->output_filters, ctx->flush_bb) != APR_SUCCESS)
        c->aborted = 1;
    apr_brigade_cleanup(ctx->flush_bb);
    return !c->aborted;
}

/* After a response: read the next request now (pipelined), wait for it
 * (keep-alive), or close. */
static void after_response(wn_ctx *ctx)
{
    conn_rec *c = ctx->c;

    ap_update_child_status(ctx->sbh, SERVER_BUSY_WRITE, NULL);
    if (!flush_output(ctx) || c->keepalive != AP_CONN_KEEPALIVE)
        ctx->cs.state = CONN_STATE_LINGER;
    else if (c->data_in_input_filters)
        ctx->cs.state = CONN_STATE_PROCESSING;
    else
        ctx->cs.state = CONN_STATE_KEEPALIVE;
}

/* What a park (wn_keepalive_park*) returned: 0, the port has the
 * connection now; otherwise the state to go on with is set: served on
 * (bytes are there), `fallback` (the port cannot be used: wait in this
 * thread), or closed. */
static int park(wn_ctx *ctx, int parked, conn_state_e fallback)
{
    if (parked == 0)
        return 0;
    if (parked < 0)
        ctx->cs.state = fallback;
    else if (parked == 2)
        ctx->cs.state = CONN_STATE_PROCESSING;
    else
        ctx->cs.state = CONN_STATE_LINGER;
    return 1;
}

/* Where the port cannot be used: wait in this thread until the client
 * sends, within Timeout, then run the hooks again. */
static void wait_readable_in_thread(wn_ctx *ctx)
{
    apr_pollfd_t pfd = { 0 };
    apr_int32_t n = 0;

    pfd.p = ctx->ptrans;
    pfd.desc_type = APR_POLL_SOCKET;
    pfd.desc.s = ctx->sock;
    pfd.reqevents = APR_POLLIN;
    ctx->cs.state = apr_poll(&pfd, 1, &n, ctx->c->base_server->timeout) == APR_SUCCESS
                    && n == 1 ? CONN_STATE_PROCESSING : CONN_STATE_LINGER;
}

/* CONN_STATE_ASYNC_WAITIO (mod_http2 between a stream's DATA frames, the
 * client's WINDOW_UPDATE awaited): flush, then wait on the port within
 * Timeout (not KeepAliveTimeout) and run the process_connection hooks
 * again when the client sends.  No worker waits meanwhile. */
static int wait_io(wn_ctx *ctx)
{
    if (!flush_output(ctx)) {
        ctx->cs.state = CONN_STATE_LINGER;
        return 1;
    }
    if (ctx->c->data_in_input_filters) {
        ctx->cs.state = CONN_STATE_PROCESSING;
        return 1;
    }
    if (park(ctx, wn_keepalive_park_reading(ctx, ctx->c->base_server->timeout),
             CONN_STATE_ASYNC_WAITIO) == 0)
        return 0;
    if (ctx->cs.state == CONN_STATE_ASYNC_WAITIO)
        wait_readable_in_thread(ctx);
    return 1;
}

/* Waits for the next request in this thread, as the stock MPM does. */
static void wait_in_thread(wn_ctx *ctx)
{
    ap_update_child_status(ctx->sbh, SERVER_BUSY_KEEPALIVE, NULL);
    apr_socket_timeout_set(ctx->sock, ctx->ka_timeout);
    ctx->cs.state = CONN_STATE_PROCESSING;
}

/* httpd's part ends here; the socket's end may wait on the port. */
static void end_connection(wn_ctx *ctx)
{
    wn_close_begin(ctx, ctx->c);
    ctx->c = NULL;
    ctx->sock = NULL;
    apr_pool_clear(ctx->ptrans);
    wn_close_finish(ctx);
}

/* Advances the connection until it is parked or ended. */
static void run(wn_ctx *ctx)
{
    for (;;) {
        switch (ctx->cs.state) {
        case CONN_STATE_PROCESSING:
            process(ctx);
            break;
        case CONN_STATE_WRITE_COMPLETION:
            after_response(ctx);
            break;
        case CONN_STATE_KEEPALIVE:
            if (ctx->c->clogging_input_filters) {
                /* they read blocking: nothing to wait for on the port */
                wait_in_thread(ctx);
                break;
            }
            if (park(ctx, wn_keepalive_park(ctx, ctx->ka_timeout),
                     CONN_STATE_KEEPALIVE) == 0)
                return;          /* ctx belongs to the port now */
            if (ctx->cs.state == CONN_STATE_KEEPALIVE)
                wait_in_thread(ctx);
            break;
        case CONN_STATE_ASYNC_WAITIO:
            if (wait_io(ctx) == 0)
                return;          /* ctx belongs to the port now */
            break;
        default:
            end_connection(ctx);
            return;
        }
    }
}

void wn_serve(wn_ctx *ctx)
{
    InterlockedIncrement(&wn_stats.workers_busy);
    InterlockedIncrement(&wn_stats.connections);
    if (open_connection(ctx))
        run(ctx);
    else {
        apr_pool_clear(ctx->ptrans);
        wn_ctx_connection_ended(ctx);
    }
    InterlockedDecrement(&wn_stats.workers_busy);
}

void wn_conn_readable(wn_ctx *ctx)
{
    InterlockedIncrement(&wn_stats.workers_busy);
    /* This worker's slot and thread, also for a close: httpd marks the
     * handle's slot closing, and the slot of the worker that parked the
     * connection (idle since, or serving another) would show it. */
    ap_update_sb_handle(ctx->sbh, wn_slot, my_index);
    attach_thread(ctx);
    if (wn_keepalive_woken(ctx) != 0) {
        ctx->cs.state = CONN_STATE_LINGER;
        ctx->c->aborted = 1;     /* timed out or reset: nothing to flush */
    }
    else
        ctx->cs.state = CONN_STATE_PROCESSING;
    run(ctx);
    InterlockedDecrement(&wn_stats.workers_busy);
}

/* The keep-alive wait a request's server asks for: its own
 * KeepAliveTimeout if it set one, else that of the address's base server
 * (as httpd's synchronous loop does). */
static int note_request(request_rec *r)
{
    conn_rec *c = r->connection;
    wn_ctx *ctx;

    if (c->master || c->cs == NULL)
        return DECLINED;
    ctx = (wn_ctx *)((char *)c->cs - APR_OFFSETOF(wn_ctx, cs));
    ctx->ka_timeout = r->server->keep_alive_timeout_set
                      ? r->server->keep_alive_timeout
                      : c->base_server->keep_alive_timeout;
    return DECLINED;
}

void wn_conn_register_hooks(void)
{
    ap_hook_post_read_request(note_request, NULL, NULL, APR_HOOK_REALLY_FIRST);
}
