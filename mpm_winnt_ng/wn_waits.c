/* A connection's waits on the completion port and their deadlines: the
 * keep-alive wait (wn_keepalive.c) and the lingering close and socket
 * reuse (wn_close.c) each keep a list of contexts in listing order; the
 * child's tick cancels the overlapped waits of those past their time (or
 * lets a wait go on with a new deadline), and the cancelled completion
 * ends them in a worker.
 *
 * The list's lock orders a cancel against the completion's unlisting: a
 * context taken off its list by a worker is never cancelled afterwards, so
 * a late cancel cannot hit the context's next wait. */
#include "wn.h"

HANDLE wn_port;

apr_status_t wn_waits_create_port(void)
{
    wn_port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
    return wn_port ? APR_SUCCESS : apr_get_os_error();
}

static void link_tail(wn_waitq *q, wn_ctx *ctx)
{
    ctx->wait_prev = q->tail;
    ctx->wait_next = NULL;
    if (q->tail)
        q->tail->wait_next = ctx;
    else
        q->head = ctx;
    q->tail = ctx;
    ctx->wait_linked = 1;
    InterlockedIncrement(&q->count);
}

static void unlink_ctx(wn_waitq *q, wn_ctx *ctx)
{
    if (ctx->wait_prev)
        ctx->wait_prev->wait_next = ctx->wait_next;
    else
        q->head = ctx->wait_next;
    if (ctx->wait_next)
        ctx->wait_next->wait_prev = ctx->wait_prev;
    else
        q->tail = ctx->wait_prev;
    ctx->wait_prev = ctx->wait_next = NULL;
    ctx->wait_linked = 0;
    InterlockedDecrement(&q->count);
}

void wn_waitq_add(wn_waitq *q, wn_ctx *ctx, apr_time_t until)
{
    AcquireSRWLockExclusive(&q->lock);
    ctx->wait_until = until;
    link_tail(q, ctx);
    ReleaseSRWLockExclusive(&q->lock);
}

int wn_waitq_remove(wn_waitq *q, wn_ctx *ctx)
{
    int was;

    AcquireSRWLockExclusive(&q->lock);
    was = ctx->wait_linked;
    if (was)
        unlink_ctx(q, ctx);
    ReleaseSRWLockExclusive(&q->lock);
    return was;
}

/* The list is in listing order, not deadline order (waits of different
 * lengths mix): stop at the first one not due, as a late expiry costs at
 * most one wait's length. */
void wn_waitq_expire(wn_waitq *q, apr_time_t now, int n,
                     apr_time_t (*extend)(wn_ctx *ctx, apr_time_t now))
{
    AcquireSRWLockExclusive(&q->lock);
    while (q->head && (n > 0 || (n < 0 && q->head->wait_until <= now))) {
        wn_ctx *ctx = q->head;
        apr_time_t until = n < 0 && extend ? extend(ctx, now) : 0;

        unlink_ctx(q, ctx);
        if (until > now) {           /* the same wait goes on, re-listed */
            ctx->wait_until = until;
            link_tail(q, ctx);
            continue;
        }
        /* Not found (already completed) is fine: its worker goes on. */
        CancelIoEx((HANDLE)ctx->s, &ctx->wait_op.ov);
        if (n > 0)
            n--;
    }
    ReleaseSRWLockExclusive(&q->lock);
}

/* Whether the sockets' provider gives IFS handles (asked once): a
 * non-IFS layered provider may lose completions of calls that skip the
 * port, so skipping is used only without one. */
static int skip_allowed(SOCKET s)
{
    static volatile LONG known;          /* 0: not asked, 1: yes, 2: no */
    WSAPROTOCOL_INFOW info;
    int len = sizeof info;

    if (!known) {
        int ifs = getsockopt(s, SOL_SOCKET, SO_PROTOCOL_INFOW, (char *)&info,
                             &len) == 0
                  && (info.dwServiceFlags1 & XP1_IFS_HANDLES);
        InterlockedExchange(&known, ifs ? 1 : 2);
    }
    return known == 1;
}

int wn_waits_associate(wn_ctx *ctx)
{
    if (ctx->on_port)
        return 1;
    if (!CreateIoCompletionPort((HANDLE)ctx->s, wn_port, (ULONG_PTR)ctx, 0))
        return 0;
    ctx->on_port = 1;
    /* Under Wine a completion through the port costs several wineserver
     * calls (the worker that takes it and often another it woke for
     * nothing); a lingering read after our FIN mostly finds the client's
     * EOF there already. */
    ctx->skips_port = skip_allowed(ctx->s)
        && SetFileCompletionNotificationModes((HANDLE)ctx->s,
                                              FILE_SKIP_COMPLETION_PORT_ON_SUCCESS);
    return 1;
}
