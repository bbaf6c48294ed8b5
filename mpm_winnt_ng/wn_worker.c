/* Worker threads: wait on the completion port (the port releases the
 * thread that blocked last first), dispatch on the operation's kind, and
 * serve the connection an accept brought. */
#include "wn.h"

#include "http_connection.h"
#include "http_core.h"
#include "mpm_common.h"
#include "apr_portable.h"
#include "ap_mpm.h"

typedef struct worker {
    HANDLE thread;
    int index;                /* scoreboard thread slot */
} worker;

static worker *workers;
static int nworkers;
static WN_THREAD_LOCAL int my_index;   /* the running worker's scoreboard slot */

static void prepare_socket(wn_ctx *ctx)
{
    u_long off = 0;
    DWORD zero = 0;
    apr_os_sock_info_t info;

    /* APR assumes a blocking socket without timeouts; a recycled socket
     * still carries the last connection's settings. */
    ioctlsocket(ctx->s, FIONBIO, &off);
    setsockopt(ctx->s, SOL_SOCKET, SO_RCVTIMEO, (char *)&zero, sizeof zero);
    setsockopt(ctx->s, SOL_SOCKET, SO_SNDTIMEO, (char *)&zero, sizeof zero);
    info.os_sock = &ctx->s;
    info.local = ctx->local;
    info.remote = ctx->remote;
    info.family = ctx->local ? ctx->local->sa_family : ctx->listener->family;
    info.type = SOCK_STREAM;
    info.protocol = IPPROTO_TCP;
    ctx->sock = NULL;
    apr_os_sock_make(&ctx->sock, &info, ctx->ptrans);
}

/* httpd's keep-alive loop ends a connection as soon as the MPM says it is
 * stopping, even right after a response that promised keep-alive: the
 * client will send its next request on it.  Keep that promise: wait for
 * the next request as long as keep-alive allows and serve it (its response
 * then says Connection: close). */
static void finish_in_flight(wn_ctx *ctx, conn_rec *c)
{
    if (wn_mpm_state != AP_MPMQ_STOPPING || c->aborted
        || c->keepalive != AP_CONN_KEEPALIVE)
        return;
    apr_socket_timeout_set(ctx->sock, c->base_server->keep_alive_timeout);
    ap_run_process_connection(c);
}

void wn_serve(wn_ctx *ctx, int unused)
{
    apr_bucket_alloc_t *ba;
    ap_sb_handle_t *sbh;
    conn_rec *c;
    apr_thread_t *thd = NULL;
    apr_os_thread_t osthd = apr_os_thread_current();
    long conn_id = (long)wn_slot * wn_run.thread_limit + my_index;

    InterlockedIncrement(&wn_stats.workers_busy);
    prepare_socket(ctx);
    ba = apr_bucket_alloc_create(ctx->ptrans);
    ap_create_sb_handle(&sbh, ctx->ptrans, wn_slot, my_index);
    c = ap_run_create_connection(ctx->ptrans, ap_server_conf, ctx->sock,
                                 conn_id, sbh, ba);
    if (!c) {
        /* create_connection closed the socket */
        ctx->s = INVALID_SOCKET;
        ctx->recycled = 0;
    }
    else {
        apr_os_thread_put(&thd, &osthd, ctx->ptrans);
        c->current_thread = thd;
        ap_process_connection(c, ctx->sock);
        finish_in_flight(ctx, c);
        wn_recycle_end(ctx, c);
    }
    ctx->sock = NULL;
    apr_pool_clear(ctx->ptrans);
    wn_ctx_put(ctx);
    InterlockedDecrement(&wn_stats.workers_busy);
    wn_child_connection_done();
}

static DWORD WINAPI worker_main(void *arg)
{
    worker *w = arg;

    my_index = w->index;
    for (;;) {
        DWORD bytes = 0;
        ULONG_PTR key = 0;
        OVERLAPPED *ov = NULL;
        BOOL ok;
        wn_op *op;

        ap_update_child_status_from_indexes(wn_slot, my_index, SERVER_READY,
                                            NULL);
        InterlockedIncrement(&wn_stats.workers_idle);
        ok = GetQueuedCompletionStatus(wn_port, &bytes, &key, &ov, INFINITE);
        InterlockedDecrement(&wn_stats.workers_idle);
        if (!ov) {
            if (!ok) {
                /* the port itself failed: nothing sensible to retry */
                ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(),
                             ap_server_conf, WN_TAG "waiting on the "
                             "completion port failed; worker exits");
                break;
            }
            continue;
        }
        op = (wn_op *)ov;
        if (op->kind == WN_OP_QUIT)
            break;
        ap_update_child_status_from_indexes(wn_slot, my_index, SERVER_BUSY_READ,
                                            NULL);
        if (op->kind == WN_OP_ACCEPTEX)
            wn_accept_completed((wn_ctx *)op, ok ? 0 : GetLastError(), bytes);
        else if (op->kind == WN_OP_ACCEPTED)
            wn_serve((wn_ctx *)op, my_index);
    }
    ap_update_child_status_from_indexes(wn_slot, my_index, SERVER_DEAD, NULL);
    return 0;
}

apr_status_t wn_workers_start(apr_pool_t *p, int n)
{
    int i;

    workers = apr_pcalloc(p, n * sizeof *workers);
    for (i = 0; i < n; i++) {
        workers[i].index = i;
        ap_update_child_status_from_indexes(wn_slot, i, SERVER_STARTING, NULL);
        workers[i].thread = CreateThread(NULL, ap_thread_stacksize,
                                         worker_main, &workers[i],
                                         wn_stack_flag, NULL);
        if (!workers[i].thread) {
            apr_status_t rv = apr_get_os_error();
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, ap_server_conf, WN_TAG
                         "created %d of %d worker threads (ThreadsPerChild); "
                         "lower ThreadsPerChild or ThreadStackSize", i, n);
            ap_update_child_status_from_indexes(wn_slot, i, SERVER_DEAD, NULL);
            nworkers = i;
            return rv;
        }
    }
    nworkers = n;
    return APR_SUCCESS;
}

/* Each idle worker takes one QUIT; busy ones finish their connection
 * first.  Waits at most `grace`; returns with workers still running if they
 * did not finish (the process exit ends them). */
int wn_workers_stop(apr_interval_time_t grace)
{
    static wn_op quit;
    apr_time_t until = apr_time_now() + grace;
    int i, left;

    quit.kind = WN_OP_QUIT;
    for (i = 0; i < nworkers; i++)
        PostQueuedCompletionStatus(wn_port, 0, 0, &quit.ov);
    for (i = 0; i < nworkers; i++) {
        apr_interval_time_t remain = until - apr_time_now();
        DWORD ms = remain > 0 ? (DWORD)apr_time_as_msec(remain) : 0;

        if (WaitForSingleObject(workers[i].thread, ms) != WAIT_OBJECT_0)
            break;
    }
    for (left = 0, i = 0; i < nworkers; i++)
        if (WaitForSingleObject(workers[i].thread, 0) != WAIT_OBJECT_0)
            left++;
    if (left)
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                     "%d workers still busy after %d s; their connections "
                     "are cut as the child exits", left,
                     (int)apr_time_sec(grace));
    return left;
}
