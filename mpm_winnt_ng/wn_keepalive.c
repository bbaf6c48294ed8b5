/* Idle keep-alive connections wait on the completion port, not in a
 * thread: a zero-byte overlapped WSARecv completes when the client sends
 * its next request (or closes), and a worker picks the connection up.
 *
 * The connection's socket is associated with the port under its context as
 * the completion key.  APR's own overlapped calls on the socket (TransmitFile
 * for sendfile) then queue completions too; the worker tells ours by the
 * OVERLAPPED pointer and ignores the rest (APR waits on its own event).
 *
 * KeepAliveTimeout is ours to enforce: parked connections are listed on
 * a wn_waitq (wn_waits.c) whose expiry cancels their receives.  The same
 * wait serves CONN_STATE_ASYNC_WAITIO (a module waiting to read more of a
 * request, e.g. mod_http2), bounded by Timeout. */
#include "wn.h"

static wn_waitq parked = WN_WAITQ_INIT;   /* keep-alive: KeepAliveTimeout */
/* CONN_STATE_ASYNC_WAITIO (mod_http2 waiting for the client mid-stream):
 * Timeout.  A list of its own: a list expires in listing order, so waits
 * of such different lengths would hold each other up. */
static wn_waitq reading = WN_WAITQ_INIT;
static apr_uint32_t log_post;

/* Test hook (WinNTNGTestHook keepalive-in-thread): the fallback, a worker
 * waiting for the next request as stock does. */
static int in_thread(void)
{
    return wn_conf.test_hooks & WN_HOOK_KEEPALIVE_IN_THREAD;
}

static int associate(wn_ctx *ctx)
{
    return !in_thread() && wn_waits_associate(ctx);
}

static int park_on(wn_waitq *q, wn_ctx *ctx, apr_interval_time_t timeout)
{
    WSABUF none = { 0, NULL };
    DWORD flags = 0, err;

    if (!associate(ctx)) {
        if (in_thread())
            return -1;
        wn_log_once(&log_post, APLOG_WARNING, apr_get_os_error(), WN_TAG
                    "cannot wait for keep-alive requests on the completion "
                    "port; such connections keep their worker thread "
                    "(logged once)");
        return -1;
    }
    memset(&ctx->wait_op.ov, 0, sizeof ctx->wait_op.ov);
    ctx->wait_op.kind = WN_OP_READABLE;
    /* Listed before the receive is posted: its completion may be taken
     * by another worker before WSARecv even returns. */
    wn_waitq_add(q, ctx, apr_time_now() + timeout);

    if (WSARecv(ctx->s, &none, 1, NULL, &flags, &ctx->wait_op.ov, NULL) == 0) {
        if (!ctx->skips_port)
            return 0;        /* its completion is queued all the same */
        wn_waitq_remove(q, ctx);
        return 2;            /* no completion comes: serve on */
    }
    if ((err = WSAGetLastError()) == WSA_IO_PENDING)
        return 0;

    wn_waitq_remove(q, ctx);
    if (err == WSAECONNRESET || err == WSAECONNABORTED)
        return 1;            /* the client is gone: close */
    wn_log_once(&log_post, APLOG_WARNING, APR_FROM_OS_ERROR(err), WN_TAG
                "a zero-byte WSARecv for a keep-alive wait failed; such "
                "connections keep their worker thread (logged once)");
    return -1;
}

int wn_keepalive_park(wn_ctx *ctx, apr_interval_time_t timeout)
{
    return park_on(&parked, ctx, timeout);
}

int wn_keepalive_park_reading(wn_ctx *ctx, apr_interval_time_t timeout)
{
    return park_on(&reading, ctx, timeout);
}

int wn_keepalive_woken(wn_ctx *ctx)
{
    DWORD bytes = 0, flags = 0;

    if (!wn_waitq_remove(&parked, ctx))
        wn_waitq_remove(&reading, ctx);
    /* Data or the client's EOF: resume (a read then sees which).  An
     * error, cancelled by the timeout or a stop included: close. */
    return WSAGetOverlappedResult(ctx->s, &ctx->wait_op.ov, &bytes, FALSE, &flags)
           ? 0 : -1;
}

void wn_keepalive_expire(apr_time_t now)
{
    wn_waitq_expire(&parked, now, -1, NULL);
    wn_waitq_expire(&reading, now, -1, NULL);
}

void wn_keepalive_close_all(void)
{
    wn_waitq_expire(&parked, 0, INT_MAX, NULL);
    wn_waitq_expire(&reading, 0, INT_MAX, NULL);
}

int wn_keepalive_count(void)
{
    return (int)parked.count;
}

int wn_keepalive_reading_count(void)
{
    return (int)reading.count;
}
