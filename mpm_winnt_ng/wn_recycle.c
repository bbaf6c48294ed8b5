/* Accept-socket recycling: after a connection ends, its socket is reset
 * with TransmitFile(TF_DISCONNECT | TF_REUSE_SOCKET) or
 * DisconnectEx(TF_REUSE_SOCKET) and goes back to AcceptEx instead of being
 * closed and a new one created.
 *
 * Each child checks the methods once at start-up on a loopback connection
 * (accept, send, end, recycle, accept again, send again): Wine 8, for one,
 * completes DisconnectEx reuse and then fails every send on the socket.  At
 * run time, recycled sockets that keep breaking while fresh ones work turn
 * recycling off (wn_reuse_policy.c).  When a connection ends is
 * wn_close.c's to decide; this file issues the reuse. */
#include "wn.h"

#include "http_connection.h"
#include "apr_portable.h"

LPFN_ACCEPTEX wn_AcceptEx;
LPFN_GETACCEPTEXSOCKADDRS wn_GetAcceptExSockaddrs;
LPFN_TRANSMITFILE wn_TransmitFile;
LPFN_DISCONNECTEX wn_DisconnectEx;

static wn_reuse_state reuse;
static int reuse_after_shutdown;       /* passed the third check */
static int reuse_after_client_eof;     /* wn_recycle_plan.after_client_eof */
static SRWLOCK reuse_lock = SRWLOCK_INIT;
static volatile LONG reuse_trusted;    /* no more checks: see wn_reuse_needs_check */
static apr_uint32_t log_disabled, log_failed;

static void *extension(SOCKET s, GUID id)
{
    void *fn = NULL;
    DWORD n;

    if (WSAIoctl(s, SIO_GET_EXTENSION_FUNCTION_POINTER, &id, sizeof id,
                 &fn, sizeof fn, &n, NULL, NULL) == SOCKET_ERROR)
        return NULL;
    return fn;
}

/* Resets s for another AcceptEx, waiting for it in this thread: the
 * start-up checks, and sockets that could not join the port. */
static int reuse_socket(SOCKET s, wn_reuse_method m, HANDLE event)
{
    OVERLAPPED ov;
    DWORD n = 0, flags = 0;
    BOOL ok;

    memset(&ov, 0, sizeof ov);
    /* Low bit set: never queue this completion to a port. */
    ov.hEvent = (HANDLE)((ULONG_PTR)event | 1);
    ResetEvent(event);
    if (m == WN_METHOD_TRANSMITFILE)
        ok = wn_TransmitFile(s, NULL, 0, 0, &ov, NULL,
                             TF_DISCONNECT | TF_REUSE_SOCKET);
    else if (m == WN_METHOD_DISCONNECTEX && wn_DisconnectEx)
        ok = wn_DisconnectEx(s, &ov, TF_REUSE_SOCKET, 0);
    else
        return 0;
    if (ok)
        return 1;
    if (WSAGetLastError() != WSA_IO_PENDING)
        return 0;
    if (WaitForSingleObject(event, 5000) != WAIT_OBJECT_0) {
        CancelIoEx((HANDLE)s, &ov);
        WSAGetOverlappedResult(s, &ov, &n, TRUE, &flags);
        return 0;
    }
    return WSAGetOverlappedResult(s, &ov, &n, FALSE, &flags) ? 1 : 0;
}

/* ---- start-up check ---- */

/* ov and the accept buffer are the caller's stack: a call given up on
 * (no connection in 2 s, or the client's connect failed) is cancelled and
 * waited for, or its completion would write into whatever that stack
 * holds next. */
static int give_up_accept(SOCKET lsn, OVERLAPPED *ov)
{
    DWORD n, flags;

    CancelIoEx((HANDLE)lsn, ov);
    WSAGetOverlappedResult(lsn, ov, &n, TRUE, &flags);
    return 0;
}

static int wait_accept(SOCKET lsn, OVERLAPPED *ov)
{
    DWORD n, flags;

    if (WaitForSingleObject(ov->hEvent, 2000) != WAIT_OBJECT_0)
        return give_up_accept(lsn, ov);
    return WSAGetOverlappedResult(lsn, ov, &n, FALSE, &flags) ? 1 : 0;
}

static int exchange_byte(SOCKET from, SOCKET to)
{
    char c = 'x';
    DWORD ms = 2000;

    setsockopt(to, SOL_SOCKET, SO_RCVTIMEO, (char *)&ms, sizeof ms);
    return send(from, &c, 1, 0) == 1 && recv(to, &c, 1, 0) == 1;
}

/* One loopback connection: accepted on acc, a byte each way is not needed,
 * server -> client proves sends work. */
static int probe_round(SOCKET lsn, SOCKET acc, struct sockaddr_in *at,
                       HANDLE event, SOCKET *cli_out)
{
    char buf[2 * WN_ADDR_ROOM];
    OVERLAPPED ov;
    DWORD n = 0;
    SOCKET cli = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);

    *cli_out = cli;
    if (cli == INVALID_SOCKET)
        return 0;
    memset(&ov, 0, sizeof ov);
    ov.hEvent = event;
    ResetEvent(event);
    if (!wn_AcceptEx(lsn, acc, buf, 0, WN_ADDR_ROOM, WN_ADDR_ROOM, &n, &ov)
        && WSAGetLastError() != ERROR_IO_PENDING)
        return 0;
    if (connect(cli, (struct sockaddr *)at, sizeof *at) == SOCKET_ERROR)
        return give_up_accept(lsn, &ov);
    if (!wait_accept(lsn, &ov))
        return 0;
    setsockopt(acc, SOL_SOCKET, SO_UPDATE_ACCEPT_CONTEXT, (char *)&lsn,
               sizeof lsn);
    return exchange_byte(acc, cli);
}

/* The ways a connection ends.  Client first: the client closes, we read
 * its EOF, then recycle.  Server first: we recycle while the client is
 * connected; the method's disconnect must deliver our FIN.  After
 * shutdown (lingering close): we shut down sending, the client sees our
 * FIN and closes, we read its EOF, then recycle.  After the client's EOF:
 * the client shuts down sending (it may still read: a half-close), we
 * read its EOF and shut down ours, it sees our FIN, then we recycle. */
typedef enum {
    END_CLIENT_FIRST, END_SERVER_FIRST, END_AFTER_SHUTDOWN, END_AFTER_CLIENT_EOF
} end_way;

static int probe_end_client_first(SOCKET acc, SOCKET cli)
{
    char c;
    DWORD ms = 2000;

    setsockopt(acc, SOL_SOCKET, SO_RCVTIMEO, (char *)&ms, sizeof ms);
    closesocket(cli);
    return recv(acc, &c, 1, 0) == 0;
}

static int probe_client_sees_eof(SOCKET cli)
{
    char c;

    /* cli has a 2 s receive timeout from exchange_byte() */
    return recv(cli, &c, 1, 0) == 0;
}

static int probe_end_after_shutdown(SOCKET acc, SOCKET cli)
{
    char c;
    /* cli has a 2 s receive timeout from exchange_byte() */
    int ok = shutdown(acc, SD_SEND) == 0 && recv(cli, &c, 1, 0) == 0;

    return probe_end_client_first(acc, cli) && ok;    /* closes cli */
}

static int probe_end_after_client_eof(SOCKET acc, SOCKET cli)
{
    char c;
    DWORD ms = 2000;
    int ok;

    setsockopt(acc, SOL_SOCKET, SO_RCVTIMEO, (char *)&ms, sizeof ms);
    /* cli has a 2 s receive timeout from exchange_byte() */
    ok = shutdown(cli, SD_SEND) == 0 && recv(acc, &c, 1, 0) == 0
         && shutdown(acc, SD_SEND) == 0 && recv(cli, &c, 1, 0) == 0;
    closesocket(cli);
    return ok;
}

static int probe_end(end_way way, SOCKET acc, SOCKET cli)
{
    switch (way) {
    case END_CLIENT_FIRST:
        return probe_end_client_first(acc, cli);
    case END_AFTER_SHUTDOWN:
        return probe_end_after_shutdown(acc, cli);
    default:
        return probe_end_after_client_eof(acc, cli);
    }
}

static int probe(wn_reuse_method m, end_way way)
{
    SOCKET lsn, acc, cli1 = INVALID_SOCKET, cli2 = INVALID_SOCKET;
    struct sockaddr_in at;
    int len = sizeof at, ok = 0;
    HANDLE event = CreateEventA(NULL, TRUE, FALSE, NULL);

    lsn = WSASocketW(AF_INET, SOCK_STREAM, IPPROTO_TCP, NULL, 0,
                     WSA_FLAG_OVERLAPPED);
    acc = WSASocketW(AF_INET, SOCK_STREAM, IPPROTO_TCP, NULL, 0,
                     WSA_FLAG_OVERLAPPED);
    memset(&at, 0, sizeof at);
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!event || lsn == INVALID_SOCKET || acc == INVALID_SOCKET
        || bind(lsn, (struct sockaddr *)&at, sizeof at) == SOCKET_ERROR
        || listen(lsn, 4) == SOCKET_ERROR
        || getsockname(lsn, (struct sockaddr *)&at, &len) == SOCKET_ERROR)
        goto done;
    if (!probe_round(lsn, acc, &at, event, &cli1))
        goto done;
    if (way == END_SERVER_FIRST)
        ok = reuse_socket(acc, m, event) && probe_client_sees_eof(cli1);
    else {
        ok = probe_end(way, acc, cli1) && reuse_socket(acc, m, event);
        cli1 = INVALID_SOCKET;   /* the probe closed it */
    }
    ok = ok && probe_round(lsn, acc, &at, event, &cli2);
done:
    if (cli1 != INVALID_SOCKET) closesocket(cli1);
    if (cli2 != INVALID_SOCKET) closesocket(cli2);
    if (acc != INVALID_SOCKET) closesocket(acc);
    if (lsn != INVALID_SOCKET) closesocket(lsn);
    if (event) CloseHandle(event);
    return ok;
}

static const char *method_name(wn_reuse_method m)
{
    return m == WN_METHOD_TRANSMITFILE ? "TransmitFile"
         : m == WN_METHOD_DISCONNECTEX ? "DisconnectEx" : "none";
}

const char *wn_recycle_method_name(void)
{
    return method_name(reuse.method);
}

apr_status_t wn_recycle_setup(SOCKET any_listener, int family)
{
    GUID acceptex = WSAID_ACCEPTEX, addrs = WSAID_GETACCEPTEXSOCKADDRS;
    GUID tf = WSAID_TRANSMITFILE, dx = WSAID_DISCONNECTEX;
    wn_reuse_mode mode = wn_run.reuse;
    int tf_ok = 0, dx_ok = 0;
    wn_reuse_method m;

    wn_AcceptEx = extension(any_listener, acceptex);
    wn_GetAcceptExSockaddrs = extension(any_listener, addrs);
    wn_TransmitFile = extension(any_listener, tf);
    wn_DisconnectEx = extension(any_listener, dx);
    if (!wn_AcceptEx || !wn_GetAcceptExSockaddrs)
        return APR_ENOTIMPL;

    if (wn_TransmitFile && (mode == WN_REUSE_AUTO
                            || mode == WN_REUSE_TRANSMITFILE))
        tf_ok = probe(WN_METHOD_TRANSMITFILE, END_CLIENT_FIRST);
    if (wn_DisconnectEx && (mode == WN_REUSE_DISCONNECTEX
                            || (mode == WN_REUSE_AUTO && !tf_ok)))
        dx_ok = probe(WN_METHOD_DISCONNECTEX, END_CLIENT_FIRST);
    m = wn_reuse_choose(mode, tf_ok, dx_ok);
    wn_reuse_init(&reuse, m, m != WN_METHOD_CLOSE
                             && probe(m, END_SERVER_FIRST));
    reuse_after_shutdown = m != WN_METHOD_CLOSE
                           && probe(m, END_AFTER_SHUTDOWN);
    /* A method forced by AcceptSocketReuse is trusted where its check
     * fails (Wine: our FIN then leaves only when the socket takes its next
     * connection, so a client that half-closed waits for that). */
    reuse_after_client_eof = m == WN_METHOD_CLOSE ? 0
                           : probe(m, END_AFTER_CLIENT_EOF) ? 1
                           : mode != WN_REUSE_AUTO ? 2 : 0;

    if (m != WN_METHOD_CLOSE && !reuse.server_first && !reuse_after_shutdown
        && !reuse_after_client_eof) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                     "accept sockets are closed after each connection: %s "
                     "reuses them, but no way of ending a connection passed "
                     "the start-up check (our FIN would leave late: Wine)",
                     method_name(m));
        m = WN_METHOD_CLOSE;
        wn_reuse_init(&reuse, m, 0);
    }
    else if (mode == WN_REUSE_OFF)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                     "accept sockets are closed after each connection "
                     "(AcceptSocketReuse off)");
    else if (m == WN_METHOD_CLOSE)
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                     "AcceptSocketReuse %s: no method passed the start-up "
                     "check (a recycled socket could not send); closing "
                     "sockets after each connection instead",
                     wn_reuse_name(mode));
    else
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                     "accept sockets are recycled with %s: when the server "
                     "closes %s, after a lingering close %s, after the "
                     "client's close %s",
                     method_name(m),
                     reuse.server_first ? "yes" : "no (check failed)",
                     reuse_after_shutdown ? "yes" : "no (check failed)",
                     reuse_after_client_eof == 1 ? "yes"
                     : reuse_after_client_eof == 2
                       ? "no (check failed; forced: reused without our FIN, "
                         "a client that half-closed waits for it)"
                       : "no (check failed)");
    return APR_SUCCESS;
}

/* ---- reusing a connection's socket ---- */

wn_recycle_plan wn_recycle_current(void)
{
    wn_recycle_plan p;

    AcquireSRWLockShared(&reuse_lock);
    p.method = reuse.method;
    p.server_first = reuse.server_first;
    p.after_shutdown = reuse.method != WN_METHOD_CLOSE && reuse_after_shutdown;
    p.after_client_eof = reuse.method != WN_METHOD_CLOSE ? reuse_after_client_eof : 0;
    ReleaseSRWLockShared(&reuse_lock);
    return p;
}

int wn_recycle_check_reused(wn_ctx *ctx)
{
    int broke, disabled_now;
    apr_status_t err;

    /* Once the method has proved itself, serve without the check (no
     * syscall, no lock per connection). */
    if (reuse_trusted)
        return 0;
    /* A zero-length send fails at once on a socket whose reuse left it
     * unable to send (Wine's DisconnectEx), and costs nothing otherwise. */
    broke = send(ctx->s, "", 0, 0) == SOCKET_ERROR;
    err = broke ? apr_get_netos_error() : APR_SUCCESS;
    AcquireSRWLockExclusive(&reuse_lock);
    disabled_now = wn_reuse_note(&reuse, 1, broke);
    if (!wn_reuse_needs_check(&reuse))
        InterlockedExchange(&reuse_trusted, 1);
    ReleaseSRWLockExclusive(&reuse_lock);
    if (disabled_now)
        wn_log_once(&log_disabled, APLOG_WARNING, err, WN_TAG
                    "%d recycled sockets in a row could not send; closing "
                    "sockets after each connection from now on in this child",
                    WN_REUSE_MAX_BROKEN);
    return broke ? -1 : 0;
}

int wn_recycle_post(wn_ctx *ctx, wn_reuse_method m)
{
    BOOL ok;

    memset(&ctx->wait_op.ov, 0, sizeof ctx->wait_op.ov);
    ctx->wait_op.kind = WN_OP_RECYCLE;
    if (m == WN_METHOD_TRANSMITFILE)
        ok = wn_TransmitFile(ctx->s, NULL, 0, 0, &ctx->wait_op.ov, NULL,
                             TF_DISCONNECT | TF_REUSE_SOCKET);
    else if (m == WN_METHOD_DISCONNECTEX && wn_DisconnectEx)
        ok = wn_DisconnectEx(ctx->s, &ctx->wait_op.ov, TF_REUSE_SOCKET, 0);
    else
        return 0;
    if (ok)
        return ctx->skips_port ? 2 : 1;
    return WSAGetLastError() == WSA_IO_PENDING;
}

void wn_recycle_failed(wn_ctx *ctx)
{
    InterlockedIncrement64(&wn_stats.recycle_failed);
    wn_log_once(&log_failed, APLOG_WARNING, apr_get_netos_error(), WN_TAG
                "recycling an accept socket with %s failed; it is closed "
                "(logged once; counted in server-status)",
                method_name(wn_recycle_current().method));
    wn_ctx_drop_socket(ctx);
}

static int recycled(wn_ctx *ctx, int ok)
{
    if (!ok) {
        wn_recycle_failed(ctx);
        return 0;
    }
    ctx->recycled = 1;
    InterlockedIncrement64(&wn_stats.sockets_recycled);
    return 1;
}

int wn_recycle_completed(wn_ctx *ctx)
{
    DWORD n = 0, flags = 0;

    return recycled(ctx, WSAGetOverlappedResult(ctx->s, &ctx->wait_op.ov, &n,
                                                FALSE, &flags));
}

int wn_recycle_now(wn_ctx *ctx, wn_reuse_method m)
{
    if (!ctx->event)
        ctx->event = CreateEventA(NULL, TRUE, FALSE, NULL);
    return recycled(ctx, ctx->event && reuse_socket(ctx->s, m, ctx->event));
}
