/* Accept-socket recycling: after a connection ends, its socket is reset
 * with TransmitFile(TF_DISCONNECT | TF_REUSE_SOCKET) or
 * DisconnectEx(TF_REUSE_SOCKET) and goes back to AcceptEx instead of being
 * closed and a new one created.
 *
 * Each child checks the methods once at start-up on a loopback connection
 * (accept, send, end, recycle, accept again, send again): Wine 8, for one,
 * completes DisconnectEx reuse and then fails every send on the socket.  At
 * run time, recycled sockets that keep breaking while fresh ones work turn
 * recycling off (wn_reuse_policy.c). */
#include "wn.h"

#include "http_connection.h"
#include "apr_portable.h"

LPFN_ACCEPTEX wn_AcceptEx;
LPFN_GETACCEPTEXSOCKADDRS wn_GetAcceptExSockaddrs;
LPFN_TRANSMITFILE wn_TransmitFile;
LPFN_DISCONNECTEX wn_DisconnectEx;

static wn_reuse_state reuse;
static SRWLOCK reuse_lock = SRWLOCK_INIT;
static volatile LONG reuse_trusted;    /* no more checks: see wn_reuse_needs_check */
static volatile LONG log_disabled, log_failed;

static void *extension(SOCKET s, GUID id)
{
    void *fn = NULL;
    DWORD n;

    if (WSAIoctl(s, SIO_GET_EXTENSION_FUNCTION_POINTER, &id, sizeof id,
                 &fn, sizeof fn, &n, NULL, NULL) == SOCKET_ERROR)
        return NULL;
    return fn;
}

/* Resets s for another AcceptEx.  event: a manual wait for completion
 * (accept sockets are not on the port). */
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

static int wait_accept(SOCKET lsn, OVERLAPPED *ov)
{
    DWORD n, flags;

    if (WaitForSingleObject(ov->hEvent, 2000) != WAIT_OBJECT_0) {
        CancelIoEx((HANDLE)lsn, ov);
        return 0;
    }
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
        return 0;
    if (!wait_accept(lsn, &ov))
        return 0;
    setsockopt(acc, SOL_SOCKET, SO_UPDATE_ACCEPT_CONTEXT, (char *)&lsn,
               sizeof lsn);
    return exchange_byte(acc, cli);
}

/* The two ways a connection ends.  Client first: the client closes, we
 * read its EOF, then recycle.  Server first: we recycle while the client
 * is connected; the method's disconnect must deliver our FIN. */
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

static int probe(wn_reuse_method m, int server_first)
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
    if (server_first)
        ok = reuse_socket(acc, m, event) && probe_client_sees_eof(cli1);
    else {
        ok = probe_end_client_first(acc, cli1) && reuse_socket(acc, m, event);
        cli1 = INVALID_SOCKET;
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
        tf_ok = probe(WN_METHOD_TRANSMITFILE, 0);
    if (wn_DisconnectEx && (mode == WN_REUSE_DISCONNECTEX
                            || (mode == WN_REUSE_AUTO && !tf_ok)))
        dx_ok = probe(WN_METHOD_DISCONNECTEX, 0);
    m = wn_reuse_choose(mode, tf_ok, dx_ok);
    wn_reuse_init(&reuse, m, m != WN_METHOD_CLOSE && probe(m, 1));

    if (mode == WN_REUSE_OFF)
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
                     "accept sockets are recycled with %s%s", method_name(m),
                     reuse.server_first ? "" : " when the client closes "
                     "first (the check of connections the server closes "
                     "failed: those sockets are closed)");
    return APR_SUCCESS;
}

/* ---- end of a connection ---- */

/* Reads until the client's EOF, as lingering close does, so the socket
 * ends cleanly (no RST) and can be reused.  0 if the client did not
 * close in time. */
static int drain_to_eof(apr_socket_t *sock)
{
    char buf[512];
    apr_time_t until = apr_time_now() + apr_time_from_sec(30);

    apr_socket_timeout_set(sock, apr_time_from_sec(2));
    for (;;) {
        apr_size_t n = sizeof buf;
        apr_status_t rv = apr_socket_recv(sock, buf, &n);

        if (APR_STATUS_IS_EOF(rv) || (rv == APR_SUCCESS && n == 0))
            return 1;
        if (rv != APR_SUCCESS || apr_time_now() > until)
            return 0;
    }
}

static wn_reuse_method current_method(int *server_first)
{
    wn_reuse_method m;

    AcquireSRWLockShared(&reuse_lock);
    m = reuse.method;
    *server_first = reuse.server_first;
    ReleaseSRWLockShared(&reuse_lock);
    return m;
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

typedef enum { PEER_OPEN, PEER_CLOSED, PEER_SENT } peer_state;

/* Has the client closed (EOF waiting), sent more, or neither?  Waits up
 * to wait_ms for it to close. */
static peer_state peer(SOCKET s, int wait_ms)
{
    fd_set rs;
    struct timeval tv;
    char c;
    int n;

    FD_ZERO(&rs);
    FD_SET(s, &rs);
    tv.tv_sec = 0;
    tv.tv_usec = wait_ms * 1000;
    if (select(0, &rs, NULL, NULL, &tv) <= 0)
        return PEER_OPEN;
    n = recv(s, &c, 1, MSG_PEEK);
    return n == 0 ? PEER_CLOSED : PEER_SENT;
}

/* What a client-side close costs us before the server would send its
 * FIN anyway: lingering close waits for the client's EOF too. */
#define WN_WAIT_CLIENT_CLOSE_MS 50

static void close_lingering(wn_ctx *ctx)
{
    if (apr_socket_shutdown(ctx->sock, APR_SHUTDOWN_WRITE) == APR_SUCCESS)
        drain_to_eof(ctx->sock);
    apr_socket_close(ctx->sock);
    ctx->s = INVALID_SOCKET;
    ctx->recycled = 0;
}

void wn_recycle_end(wn_ctx *ctx, conn_rec *c)
{
    int server_first;
    wn_reuse_method m = current_method(&server_first);
    apr_os_sock_t none = INVALID_SOCKET;
    apr_interval_time_t timeout;
    peer_state st;

    if (m == WN_METHOD_CLOSE || c->aborted
        || ctx->listener->accf != WN_ACCF_CONNECT) {
        ap_lingering_close(c);             /* closes ctx->s */
        ctx->s = INVALID_SOCKET;
        ctx->recycled = 0;
        return;
    }
    ap_prep_lingering_close(c);
    ap_flush_conn(c);
    if (c->aborted) {
        apr_socket_close(ctx->sock);
        ctx->s = INVALID_SOCKET;
        ctx->recycled = 0;
        return;
    }
    st = peer(ctx->s, server_first ? 0 : WN_WAIT_CLIENT_CLOSE_MS);
    if (st == PEER_SENT || (st == PEER_OPEN && !server_first)) {
        close_lingering(ctx);
        return;
    }
    /* Take the socket back from APR so the pool cleanup leaves it open;
     * APR's timeout 0 is the socket's non-blocking mode. */
    apr_socket_timeout_get(ctx->sock, &timeout);
    ctx->nonblocking = timeout == 0;
    apr_os_sock_put(&ctx->sock, &none, ctx->ptrans);
    if (!ctx->event)
        ctx->event = CreateEventA(NULL, TRUE, FALSE, NULL);
    if (ctx->event && reuse_socket(ctx->s, m, ctx->event)) {
        ctx->recycled = 1;
        InterlockedIncrement64(&wn_stats.sockets_recycled);
        return;
    }
    InterlockedIncrement64(&wn_stats.recycle_failed);
    wn_log_once(&log_failed, APLOG_WARNING, apr_get_netos_error(), WN_TAG
                "recycling an accept socket with %s failed; it is closed "
                "(logged once; counted in server-status)", method_name(m));
    wn_ctx_drop_socket(ctx);
}
