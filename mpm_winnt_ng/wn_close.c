/* The end of a connection, without a worker waiting for the client.
 *
 * A worker runs httpd's pre-close hooks and flushes (wn_close_begin),
 * clears the connection's pool, then either closes the socket, has it
 * reused at once (the client closed already, or the method's disconnect
 * delivers our FIN, wn_recycle.c), or shuts down sending and lingers: an
 * overlapped read on the completion port waits for the client's EOF, data
 * the client still sends is read and dropped, and the worker goes back to
 * the port.  At the EOF the socket is reused if the method passed the
 * check for that way of ending, else closed.  Limits as httpd's lingering
 * close: 2 s without data, 30 s in all (2 s with the
 * "short-lingering-close" note); reuse 5 s.  The child's tick enforces
 * them by cancelling the wait (wn_waits.c).
 *
 * Where the method passed only the check of clients that close first
 * (Wine 8: after our FIN the reuse fails), the read first waits 50 ms for
 * the client's close before our FIN goes out, as most clients close a
 * response they asked to close; the tick runs every 25 ms while such a
 * wait is on and sends the FIN of those that did not (the read goes on).
 * While recent waits all ended that way, most closes send the FIN at once
 * (wn_client_first_wait): waiting would only delay them.
 *
 * Where the socket cannot join the port, the worker waits as before. */
#include "wn.h"

#include "http_connection.h"
#include "util_filter.h"
#include "apr_portable.h"

#define WN_LINGER_READ_SECS 2
#define WN_LINGER_MAX_SECS 30
#define WN_REUSE_MAX_SECS 5
#define WN_WAIT_CLIENT_CLOSE_MS 50

static wn_waitq lingering = WN_WAITQ_INIT;
static wn_waitq reusing = WN_WAITQ_INIT;
static apr_uint32_t log_linger_post;

/* Closes waiting for the client's close before our FIN, and whether such
 * waits pay off (guarded by client_first_lock). */
static volatile LONG awaiting_client;
static wn_client_first client_first;
static SRWLOCK client_first_lock = SRWLOCK_INIT;
static HANDLE tick_event;     /* wakes the child's tick: a wait began */

typedef enum { END_CLOSE, END_REUSE, END_LINGER } end_way;

/* Has the client sent more (its data would turn our disconnect into a
 * reset)?  Does not wait. */
static int client_sent_more(SOCKET s)
{
    fd_set rs;
    struct timeval none = { 0, 0 };
    char c;

    FD_ZERO(&rs);
    FD_SET(s, &rs);
    return select(0, &rs, NULL, NULL, &none) > 0
           && recv(s, &c, 1, MSG_PEEK) > 0;
}

/* Gives the socket back from APR: the pool's cleanup must leave it open
 * for the lingering read or the reuse. */
static void take_socket(wn_ctx *ctx)
{
    apr_os_sock_t none = INVALID_SOCKET;
    apr_interval_time_t timeout;

    /* APR's timeout 0 is the socket's non-blocking mode. */
    apr_socket_timeout_get(ctx->sock, &timeout);
    ctx->nonblocking = timeout == 0;
    apr_os_sock_put(&ctx->sock, &none, ctx->ptrans);
}

static int client_first_worth_it(void)
{
    int wait;

    AcquireSRWLockExclusive(&client_first_lock);
    wait = wn_client_first_wait(&client_first);
    ReleaseSRWLockExclusive(&client_first_lock);
    return wait;
}

/* A close begins to wait for the client's close: the tick must run soon
 * (it may be sleeping its long interval). */
static void client_wait_begins(void)
{
    if (InterlockedIncrement(&awaiting_client) == 1 && tick_event)
        SetEvent(tick_event);
}

/* The wait ended: the client closed first, or not (our FIN goes out). */
static void client_wait_over(int closed_first)
{
    InterlockedDecrement(&awaiting_client);
    AcquireSRWLockExclusive(&client_first_lock);
    wn_client_first_note(&client_first, closed_first);
    ReleaseSRWLockExclusive(&client_first_lock);
}

static end_way choose_end(wn_ctx *ctx, conn_rec *c)
{
    wn_recycle_plan plan = wn_recycle_current();
    int reusable = plan.method != WN_METHOD_CLOSE
                   && ctx->listener->accf == WN_ACCF_CONNECT;

    if (c->aborted)
        return END_CLOSE;
    if (reusable && plan.server_first && !client_sent_more(ctx->s))
        return END_REUSE;
    if (reusable && !plan.server_first && !plan.after_shutdown
        && plan.after_client_eof && client_first_worth_it()) {
        ctx->fin_sent = 0;       /* the client's close first, or no reuse */
        ctx->recycle_after = 1;
        return END_LINGER;
    }
    if (shutdown(ctx->s, SD_SEND) != 0)
        return END_CLOSE;
    ctx->fin_sent = 1;
    ctx->recycle_after = reusable && plan.after_shutdown;
    return END_LINGER;
}

/* httpd's ap_flush_conn passes a FLUSH, then the end-of-connection
 * bucket.  A FLUSH makes the core output filter switch the socket to
 * non-blocking and back even with nothing to write: on Windows, APR's
 * four socket calls per close.  A request's end has flushed already, so
 * only what is still buffered, or what the end of the connection writes
 * (mod_ssl's close_notify), is flushed, in the same order. */
static void flush_for_close(conn_rec *c)
{
    apr_bucket_brigade *bb;

    if (c->data_in_output_filters) {
        ap_flush_conn(c);
        return;
    }
    ap_shutdown_conn(c, 0);
    if (!c->data_in_output_filters || c->aborted)
        return;
    bb = apr_brigade_create(c->pool, c->bucket_alloc);
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(c->bucket_alloc));
    ap_pass_brigade(c->output_filters, bb);
    apr_brigade_destroy(bb);
}

void wn_close_begin(wn_ctx *ctx, conn_rec *c)
{
    apr_time_t limit = apr_time_from_sec(
        apr_table_get(c->notes, "short-lingering-close")
        ? WN_LINGER_READ_SECS : WN_LINGER_MAX_SECS);

    ap_prep_lingering_close(c);
    flush_for_close(c);
    take_socket(ctx);
    ctx->recycle_after = 0;
    /* The way chosen waits in wait_op.kind for wn_close_finish. */
    ctx->wait_op.kind = 0;
    switch (choose_end(ctx, c)) {
    case END_REUSE:
        ctx->wait_op.kind = WN_OP_RECYCLE;
        break;
    case END_LINGER:
        ctx->wait_op.kind = WN_OP_LINGER;
        ctx->linger_until = apr_time_now() + limit;
        InterlockedIncrement64(&wn_stats.lingered);
        break;
    default:
        break;
    }
}

static void close_socket(wn_ctx *ctx)
{
    wn_ctx_drop_socket(ctx);
    wn_ctx_connection_ended(ctx);
}

/* ---- reuse ---- */

static void reuse(wn_ctx *ctx)
{
    wn_reuse_method m = wn_recycle_current().method;

    if (m != WN_METHOD_CLOSE && wn_waits_associate(ctx)) {
        int posted;

        wn_waitq_add(&reusing, ctx,
                     apr_time_now() + apr_time_from_sec(WN_REUSE_MAX_SECS));
        posted = wn_recycle_post(ctx, m);
        if (posted == 1)
            return;                  /* the port owns ctx now */
        wn_waitq_remove(&reusing, ctx);
        if (posted == 2)
            wn_recycle_completed(ctx);   /* done at once, no completion */
        else
            wn_recycle_failed(ctx);
    }
    else if (m != WN_METHOD_CLOSE)
        wn_recycle_now(ctx, m);
    else
        wn_ctx_drop_socket(ctx);
    wn_ctx_connection_ended(ctx);
}

/* ---- lingering ---- */

/* Reads and drops what the client sends until its EOF, in this thread:
 * the fallback when the socket cannot wait on the port.  1 at the EOF. */
static int linger_in_thread(wn_ctx *ctx)
{
    char buf[512];

    for (;;) {
        fd_set rs;
        struct timeval tv = { WN_LINGER_READ_SECS, 0 };
        int n;

        FD_ZERO(&rs);
        FD_SET(ctx->s, &rs);
        if (select(0, &rs, NULL, NULL, &tv) <= 0)
            return 0;
        n = recv(ctx->s, buf, sizeof buf, 0);
        if (n <= 0)
            return n == 0;
        if (apr_time_now() >= ctx->linger_until)
            return 0;
    }
}

static void linger_done(wn_ctx *ctx, int eof)
{
    if (eof && ctx->recycle_after)
        reuse(ctx);
    else
        close_socket(ctx);
}

/* Posts a read for the client's data or EOF.  ctx->buf, the accept
 * addresses' room, is free now and takes what the client still sends.
 * 1: it completed at once and no completion comes (the caller handles
 * it); 0: the port owns ctx now, or the socket was closed. */
static int post_linger_read(wn_ctx *ctx)
{
    WSABUF room;
    DWORD flags = 0, err;
    apr_time_t until = apr_time_now() + (ctx->fin_sent
                       ? apr_time_from_sec(WN_LINGER_READ_SECS)
                       : apr_time_from_msec(WN_WAIT_CLIENT_CLOSE_MS));

    if (until > ctx->linger_until)
        until = ctx->linger_until;
    room.buf = ctx->buf;
    room.len = (ULONG)(ctx->data_room + 2 * WN_ADDR_ROOM);
    memset(&ctx->wait_op.ov, 0, sizeof ctx->wait_op.ov);
    ctx->wait_op.kind = WN_OP_LINGER;
    if (!ctx->fin_sent)
        client_wait_begins();
    wn_waitq_add(&lingering, ctx, until);
    if (WSARecv(ctx->s, &room, 1, NULL, &flags, &ctx->wait_op.ov, NULL) == 0)
        return ctx->skips_port;
    if ((err = WSAGetLastError()) == WSA_IO_PENDING)
        return 0;                    /* the port owns ctx now */
    wn_waitq_remove(&lingering, ctx);
    if (!ctx->fin_sent)
        InterlockedDecrement(&awaiting_client);   /* no outcome to note */
    if (err != WSAECONNRESET && err != WSAECONNABORTED)
        wn_log_once(&log_linger_post, APLOG_WARNING, APR_FROM_OS_ERROR(err),
                    WN_TAG "a lingering close's WSARecv failed; the "
                    "connection is closed without waiting for the client "
                    "(logged once)");
    close_socket(ctx);
    return 0;
}

static int linger_read_completed(wn_ctx *ctx);

/* Lingering reads, and those that complete at once handled here, in a
 * loop (a client that keeps sending must not deepen the stack). */
static void linger_reads(wn_ctx *ctx)
{
    while (post_linger_read(ctx) && linger_read_completed(ctx))
        ;
}

/* Our FIN goes out now: the client did not close first (or sent more). */
static void send_fin(wn_ctx *ctx)
{
    ctx->fin_sent = 1;
    ctx->recycle_after = ctx->recycle_after
                         && wn_recycle_current().after_shutdown;
    if (shutdown(ctx->s, SD_SEND) != 0)
        ctx->linger_until = 0;       /* broken: close at the next step */
}

static void linger(wn_ctx *ctx)
{
    if (wn_waits_associate(ctx)) {
        linger_reads(ctx);
        return;
    }
    if (!ctx->fin_sent)
        send_fin(ctx);
    linger_done(ctx, linger_in_thread(ctx));
}

void wn_close_finish(wn_ctx *ctx)
{
    switch (ctx->wait_op.kind) {
    case WN_OP_RECYCLE:
        reuse(ctx);
        break;
    case WN_OP_LINGER:
        linger(ctx);
        break;
    default:
        close_socket(ctx);
    }
}

/* Before our FIN: the client's EOF means it closed first, or only its
 * sending half (it may wait for our FIN to end its read: httpd's
 * hostcheck.t does): our FIN goes out, then the socket is reused (a
 * forced method whose check failed reuses it without).  Its data sends
 * the FIN and lingers on.  1: read again. */
static int client_close_awaited(wn_ctx *ctx, int eof, int data,
                                int timed_out)
{
    client_wait_over(eof);
    if (eof) {
        if (wn_recycle_current().after_client_eof == 2) {
            linger_done(ctx, 1);
            return 0;
        }
        ctx->fin_sent = 1;
        linger_done(ctx, shutdown(ctx->s, SD_SEND) == 0);
        return 0;
    }
    if (data || timed_out) {
        send_fin(ctx);
        if (apr_time_now() < ctx->linger_until)
            return 1;
    }
    linger_done(ctx, 0);
    return 0;
}

/* A lingering read ended; 1: read again (the caller posts it). */
static int linger_read_completed(wn_ctx *ctx)
{
    DWORD bytes = 0, flags = 0;
    int listed = wn_waitq_remove(&lingering, ctx);
    BOOL ok = WSAGetOverlappedResult(ctx->s, &ctx->wait_op.ov, &bytes,
                                     FALSE, &flags);
    int eof = ok && bytes == 0, data = ok && bytes > 0;
    int timed_out = !ok && !listed;  /* cancelled by the tick */

    if (!ctx->fin_sent)
        return client_close_awaited(ctx, eof, data, timed_out);
    if (data && apr_time_now() < ctx->linger_until)
        return 1;
    if (timed_out)
        InterlockedIncrement64(&wn_stats.linger_timeouts);
    linger_done(ctx, eof);
    return 0;
}

void wn_close_completed(wn_ctx *ctx)
{
    if (ctx->wait_op.kind == WN_OP_LINGER) {
        if (linger_read_completed(ctx))
            linger_reads(ctx);
        return;
    }
    wn_waitq_remove(&reusing, ctx);
    wn_recycle_completed(ctx);
    wn_ctx_connection_ended(ctx);
}

/* The tick, for a lingering read past its time: if it was waiting for
 * the client to close first, our FIN goes out now and the same read waits
 * on for the EOF (no completion, no worker); else it is cancelled. */
static apr_time_t fin_due(wn_ctx *ctx, apr_time_t now)
{
    apr_time_t until = now + apr_time_from_sec(WN_LINGER_READ_SECS);

    if (ctx->fin_sent)
        return 0;
    client_wait_over(0);
    send_fin(ctx);
    return until < ctx->linger_until ? until : ctx->linger_until;
}

void wn_close_expire(apr_time_t now)
{
    wn_waitq_expire(&lingering, now, -1, fin_due);
    wn_waitq_expire(&reusing, now, -1, NULL);
}

void wn_close_cancel_all(void)
{
    wn_waitq_expire(&lingering, 0, INT_MAX, NULL);
}

int wn_close_tick_soon(void)
{
    return awaiting_client > 0;
}

HANDLE wn_close_setup(void)
{
    wn_client_first_init(&client_first);
    tick_event = CreateEventA(NULL, FALSE, FALSE, NULL);
    return tick_event;
}

int wn_close_count(void)
{
    return (int)(lingering.count + reusing.count);
}
