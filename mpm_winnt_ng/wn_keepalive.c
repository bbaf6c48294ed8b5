/* Idle keep-alive connections wait on the completion port, not in a
 * thread: a zero-byte overlapped WSARecv completes when the client sends
 * its next request (or closes), and a worker picks the connection up.
 *
 * The connection's socket is associated with the port under its context as
 * the completion key.  APR's own overlapped calls on the socket (TransmitFile
 * for sendfile) then queue completions too; the worker tells ours by the
 * OVERLAPPED pointer and ignores the rest (APR waits on its own event).
 *
 * KeepAliveTimeout is ours to enforce: parked connections sit on a list in
 * parking order; the child's tick (every 250 ms) cancels the receives of
 * those past their time, and the cancelled completion closes them.  The
 * lock also orders a cancel before a worker re-parks the same context, so
 * a late cancel never hits the next wait. */
#include "wn.h"

static SRWLOCK lock = SRWLOCK_INIT;
static wn_ctx *head, *tail;           /* oldest first */
static volatile LONG parked;
static volatile LONG log_post;

static void link_tail(wn_ctx *ctx)
{
    ctx->ka_prev = tail;
    ctx->ka_next = NULL;
    if (tail)
        tail->ka_next = ctx;
    else
        head = ctx;
    tail = ctx;
    ctx->ka_linked = 1;
}

static void unlink_ctx(wn_ctx *ctx)
{
    if (ctx->ka_prev)
        ctx->ka_prev->ka_next = ctx->ka_next;
    else
        head = ctx->ka_next;
    if (ctx->ka_next)
        ctx->ka_next->ka_prev = ctx->ka_prev;
    else
        tail = ctx->ka_prev;
    ctx->ka_prev = ctx->ka_next = NULL;
    ctx->ka_linked = 0;
}

/* Test hook (WinNTNGTestHook keepalive-in-thread): the fallback, a worker
 * waiting for the next request as stock does. */
static int in_thread(void)
{
    return wn_conf.test_hooks & WN_HOOK_KEEPALIVE_IN_THREAD;
}

static int associate(wn_ctx *ctx)
{
    if (in_thread())
        return 0;
    if (ctx->on_port)
        return 1;
    if (!CreateIoCompletionPort((HANDLE)ctx->s, wn_port, (ULONG_PTR)ctx, 0))
        return 0;
    ctx->on_port = 1;
    return 1;
}

int wn_keepalive_park(wn_ctx *ctx, apr_interval_time_t timeout)
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
    memset(&ctx->idle.ov, 0, sizeof ctx->idle.ov);
    ctx->idle.kind = WN_OP_READABLE;
    /* Listed before the receive is posted: its completion may be taken
     * by another worker before WSARecv even returns. */
    AcquireSRWLockExclusive(&lock);
    ctx->ka_expires = apr_time_now() + timeout;
    link_tail(ctx);
    InterlockedIncrement(&parked);
    ReleaseSRWLockExclusive(&lock);

    if (WSARecv(ctx->s, &none, 1, NULL, &flags, &ctx->idle.ov, NULL) == 0
        || (err = WSAGetLastError()) == WSA_IO_PENDING)
        return 0;            /* the completion is queued either way */

    AcquireSRWLockExclusive(&lock);
    if (ctx->ka_linked) {
        unlink_ctx(ctx);
        InterlockedDecrement(&parked);
    }
    ReleaseSRWLockExclusive(&lock);
    if (err == WSAECONNRESET || err == WSAECONNABORTED)
        return 1;            /* the client is gone: close */
    wn_log_once(&log_post, APLOG_WARNING, APR_FROM_OS_ERROR(err), WN_TAG
                "a zero-byte WSARecv for a keep-alive wait failed; such "
                "connections keep their worker thread (logged once)");
    return -1;
}

int wn_keepalive_woken(wn_ctx *ctx)
{
    DWORD bytes = 0, flags = 0;

    AcquireSRWLockExclusive(&lock);
    if (ctx->ka_linked) {
        unlink_ctx(ctx);
        InterlockedDecrement(&parked);
    }
    ReleaseSRWLockExclusive(&lock);
    /* Data or the client's EOF: resume (a read then sees which).  An
     * error, cancelled by the timeout or a stop included: close. */
    return WSAGetOverlappedResult(ctx->s, &ctx->idle.ov, &bytes, FALSE, &flags)
           ? 0 : -1;
}

/* Cancels the waits of the first `n` connections on the list, or of those
 * past their time when n < 0. */
static void cancel_waits(apr_time_t now, int n)
{
    AcquireSRWLockExclusive(&lock);
    while (head && (n > 0 || (n < 0 && head->ka_expires <= now))) {
        wn_ctx *ctx = head;

        unlink_ctx(ctx);
        InterlockedDecrement(&parked);
        /* Not found (already completed) is fine: its worker resumes it. */
        CancelIoEx((HANDLE)ctx->s, &ctx->idle.ov);
        if (n > 0)
            n--;
    }
    ReleaseSRWLockExclusive(&lock);
}

void wn_keepalive_expire(apr_time_t now)
{
    cancel_waits(now, -1);
}

void wn_keepalive_close_all(void)
{
    cancel_waits(0, INT_MAX);
}

int wn_keepalive_count(void)
{
    return (int)parked;
}
