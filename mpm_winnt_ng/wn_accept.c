/* Accepting: AcceptExPending AcceptEx calls posted on every listener.
 *
 * Completions reach the child's port directly when the listener could be
 * associated with it.  A listener is one socket shared by every child
 * (WSADuplicateSocket), and Windows ties a socket to one completion port
 * for its lifetime, so after the first child the association fails: then
 * each AcceptEx carries an event, and a thread-pool wait posts the context
 * to the port when it fires.  Either way a worker picks it up.
 *
 * AcceptFilter none (or a listener AcceptEx refuses, e.g. under some
 * layered providers) uses a thread per listener calling accept(). */
#include "wn.h"

#include "http_core.h"
#include "apr_strings.h"
#include "apr_portable.h"

wn_listener *wn_listeners;

/* Failures in a row after which a listener waits for the next tick (a
 * quarter second) before posting again: never spin on a broken provider. */
#define WN_ACCEPT_BACKOFF 8

static apr_uint32_t log_no_ctx, log_no_socket, log_post, log_fail,
                     log_sync_fail, log_mfile;

static wn_accf accf_for(ap_listen_rec *lr, server_rec *s)
{
    core_server_config *conf = ap_get_core_module_config(s->module_config);
    const char *name = apr_table_get(conf->accf_map,
                                     lr->protocol ? lr->protocol : "http");

    if (!name || !strcasecmp(name, "connect"))
        return WN_ACCF_CONNECT;
    if (!strcasecmp(name, "data")) {
        /* A client that connects and sends nothing holds a receiving
         * AcceptEx (the DoS behind stock's default of connect), and such
         * calls lost connections under Wine: served as connect. */
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, WN_TAG "AcceptFilter %s "
                     "data is served as connect (AcceptEx without waiting "
                     "for data)", lr->protocol);
        return WN_ACCF_CONNECT;
    }
    if (!strcasecmp(name, "none"))
        return WN_ACCF_NONE;
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, WN_TAG "AcceptFilter %s %s "
                 "is not known on Windows (use data, connect or none); "
                 "using connect", lr->protocol, name);
    return WN_ACCF_CONNECT;
}

static void CALLBACK accept_signalled(void *arg, BOOLEAN timed_out)
{
    wn_ctx *ctx = arg;

    PostQueuedCompletionStatus(wn_port, 0, 0, &ctx->op.ov);
}

static void give_back(wn_ctx *ctx, int drop_socket)
{
    if (drop_socket)
        wn_ctx_drop_socket(ctx);
    wn_ctx_put(ctx);
}

/* Takes one of the AcceptExPending slots; 0 if all are taken.  The tick's
 * refill and a completion's replacement run in different threads: a check
 * and a later increment would let both post for the same free slot, and
 * the count would stay above the configured one. */
static int reserve_slot(wn_listener *l)
{
    for (;;) {
        LONG n = l->pending;

        if (n >= wn_run.accepts)
            return 0;
        /* compare-and-swap: the count is never seen above the limit,
         * not even for a moment (server-status reports it) */
        if (InterlockedCompareExchange(&l->pending, n + 1, n) == n)
            return 1;
    }
}

/* Posts one AcceptEx.  Returns 0 (also when every slot is taken), or -1
 * when nothing could be posted. */
static int post_one(wn_listener *l)
{
    wn_ctx *ctx;
    DWORD bytes = 0, err;

    if (!reserve_slot(l))
        return 0;
    ctx = wn_ctx_get(l);
    if (!ctx) {
        InterlockedDecrement(&l->pending);
        wn_log_once(&log_no_ctx, APLOG_ERR, APR_ENOMEM, WN_TAG
                    "out of memory for connection contexts; accepting less");
        return -1;
    }
    if (ctx->s == INVALID_SOCKET) {
        ctx->on_port = 0;
        ctx->skips_port = 0;
        ctx->nonblocking = 0;     /* a new socket blocks */
    }
    if (ctx->s == INVALID_SOCKET && (ctx->s = wn_ctx_new_socket(l))
                                    == INVALID_SOCKET) {
        wn_log_once(&log_no_socket, APLOG_ERR, apr_get_netos_error(), WN_TAG
                    "cannot create accept sockets (out of sockets or "
                    "memory?); retrying every 250 ms");
        InterlockedDecrement(&l->pending);
        give_back(ctx, 0);
        InterlockedIncrement(&l->errors);
        return -1;
    }
    ctx->op.kind = WN_OP_ACCEPTEX;
    memset(&ctx->op.ov, 0, sizeof ctx->op.ov);
    if (l->emulated) {
        if (!ctx->event && !(ctx->event = CreateEventA(NULL, FALSE, FALSE, NULL)))
            goto failed_early;
        ResetEvent(ctx->event);
        /* The low bit keeps the completion off the port the shared socket
         * is associated with: that port belongs to another child, which
         * would take our OVERLAPPED pointer for one of its own. */
        ctx->op.ov.hEvent = (HANDLE)((ULONG_PTR)ctx->event | 1);
        if (!RegisterWaitForSingleObject(&ctx->wait, ctx->event,
                                         accept_signalled, ctx, INFINITE,
                                         WT_EXECUTEONLYONCE
                                         | WT_EXECUTEINWAITTHREAD))
            goto failed_early;
    }
    if (wn_AcceptEx(l->s, ctx->s, ctx->buf, ctx->data_room, WN_ADDR_ROOM,
                    WN_ADDR_ROOM, &bytes, &ctx->op.ov)
        || (err = WSAGetLastError()) == ERROR_IO_PENDING)
        return 0;            /* its completion will come, also on success */

    InterlockedDecrement(&l->pending);
    if (ctx->wait) {
        UnregisterWaitEx(ctx->wait, INVALID_HANDLE_VALUE);
        ctx->wait = NULL;
    }
    if (err == WSAECONNRESET) {
        give_back(ctx, 1);   /* that client is gone; try again */
        return 0;
    }
    wn_log_once(&log_post, APLOG_ERR, APR_FROM_OS_ERROR(err), WN_TAG
                "AcceptEx on %pI failed; backing off (a layered network "
                "provider may not support it: AcceptFilter %s none "
                "avoids AcceptEx)", l->lr->bind_addr, l->lr->protocol);
    InterlockedIncrement64(&wn_stats.accept_errors);
    InterlockedIncrement(&l->errors);
    give_back(ctx, 1);
    return -1;

failed_early:
    InterlockedDecrement(&l->pending);
    wn_log_once(&log_post, APLOG_ERR, apr_get_os_error(), WN_TAG
                "cannot set up an accept wait; backing off");
    InterlockedIncrement(&l->errors);
    give_back(ctx, 0);
    return -1;
}

void wn_accept_fill(wn_listener *l)
{
    if (l->accf == WN_ACCF_NONE)
        return;
    while (!l->stopping && l->pending < wn_run.accepts
           && l->errors < WN_ACCEPT_BACKOFF)
        if (post_one(l) != 0)
            break;       /* post_one also stops at the count (races) */
}

void wn_accept_tick(void)
{
    wn_listener *l;

    for (l = wn_listeners; l; l = l->next) {
        if (l->errors >= WN_ACCEPT_BACKOFF)
            InterlockedExchange(&l->errors, WN_ACCEPT_BACKOFF - 1);
        wn_accept_fill(l);
    }
}

static int client_gone(DWORD err)
{
    return err == WSAECONNRESET || err == ERROR_NETNAME_DELETED
        || err == ERROR_CONNECTION_ABORTED || err == WSAECONNABORTED;
}

wn_ctx *wn_accept_completed(wn_ctx *ctx)
{
    wn_listener *l = ctx->listener;
    DWORD bytes = 0, flags = 0, err = 0;

    /* The operation's own status, for direct and emulated completions. */
    if (!WSAGetOverlappedResult(l->s, &ctx->op.ov, &bytes, FALSE, &flags))
        err = WSAGetLastError();
    if (ctx->wait) {
        UnregisterWait(ctx->wait);
        ctx->wait = NULL;
    }
    InterlockedDecrement(&l->pending);

    if (err) {
        if (err == ERROR_OPERATION_ABORTED || err == WSA_OPERATION_ABORTED) {
            give_back(ctx, 1);           /* cancelled: we are stopping */
            return NULL;
        }
        InterlockedIncrement64(&wn_stats.accept_errors);
        if (!client_gone(err)) {
            InterlockedIncrement(&l->errors);
            wn_log_once(&log_fail, APLOG_WARNING, APR_FROM_OS_ERROR(err),
                        WN_TAG "AcceptEx on %pI completed with an error "
                        "(logged once; counted in server-status)",
                        l->lr->bind_addr);
        }
        give_back(ctx, 1);
        if (!l->stopping && l->errors < WN_ACCEPT_BACKOFF)
            post_one(l);
        return NULL;
    }
    InterlockedExchange(&l->errors, 0);
    /* Replace this AcceptEx before serving, so accepting never waits for
     * a connection to finish. */
    if (!l->stopping)
        post_one(l);

    /* Without this, shutdown() and getpeername() fail on the socket; the
     * connection can still be served, so a failure is not fatal. */
    setsockopt(ctx->s, SOL_SOCKET, SO_UPDATE_ACCEPT_CONTEXT,
               (char *)&l->s, sizeof l->s);
    wn_GetAcceptExSockaddrs(ctx->buf, ctx->data_room, WN_ADDR_ROOM,
                            WN_ADDR_ROOM, &ctx->local, &ctx->local_len,
                            &ctx->remote, &ctx->remote_len);
    ctx->data_len = bytes;
    InterlockedIncrement64(&wn_stats.accepted);
    if (ctx->recycled && wn_recycle_check_reused(ctx) != 0) {
        InterlockedIncrement64(&wn_stats.accept_errors);
        give_back(ctx, 1);
        return NULL;
    }
    return ctx;
}

/* ---- accept() fallback ---- */

static DWORD WINAPI accept_thread(void *arg)
{
    wn_listener *l = arg;
    u_long on = 1;
    static apr_uint32_t log_blocking;

    /* Non-blocking, so a client gone between select() and accept() does
     * not stop this thread; without it, that case waits for the next. */
    if (ioctlsocket(l->s, FIONBIO, &on) != 0)
        wn_log_once(&log_blocking, APLOG_WARNING, apr_get_netos_error(),
                    WN_TAG "cannot make the listener on %pI non-blocking for "
                    "the accept() fallback; going on (logged once)",
                    l->lr->bind_addr);
    while (!l->stopping) {
        fd_set rs;
        struct timeval tv = { 0, 250000 };
        wn_ctx *ctx;
        SOCKET s;
        int rlen = WN_ADDR_ROOM, llen = WN_ADDR_ROOM;

        FD_ZERO(&rs);
        FD_SET(l->s, &rs);
        if (select(0, &rs, NULL, NULL, &tv) <= 0)
            continue;
        if (!(ctx = wn_ctx_get(l))) {
            Sleep(100);
            continue;
        }
        ctx->local = (struct sockaddr *)ctx->buf;
        ctx->remote = (struct sockaddr *)(ctx->buf + WN_ADDR_ROOM);
        s = accept(l->s, ctx->remote, &rlen);
        if (s == INVALID_SOCKET) {
            DWORD err = WSAGetLastError();
            wn_ctx_put(ctx);
            if (err == WSAEWOULDBLOCK || client_gone(err))
                continue;
            InterlockedIncrement64(&wn_stats.accept_errors);
            wn_log_once(err == WSAEMFILE || err == WSAENOBUFS ? &log_mfile
                        : &log_sync_fail, APLOG_ERR, APR_FROM_OS_ERROR(err),
                        WN_TAG "accept() on %pI failed; retrying in 100 ms "
                        "(logged once)", l->lr->bind_addr);
            Sleep(100);
            continue;
        }
        if (!wn_no_inherit(s)) {
            closesocket(s);
            wn_ctx_put(ctx);
            continue;
        }
        InterlockedIncrement64(&wn_stats.sockets_created);
        getsockname(s, ctx->local, &llen);
        ctx->s = s;
        ctx->nonblocking = 1;     /* inherited from the listener */
        ctx->on_port = 0;
        ctx->skips_port = 0;
        ctx->recycled = 0;
        ctx->local_len = llen;
        ctx->remote_len = rlen;
        ctx->op.kind = WN_OP_ACCEPTED;
        InterlockedIncrement64(&wn_stats.accepted);
        PostQueuedCompletionStatus(wn_port, 0, 0, &ctx->op.ov);
    }
    return 0;
}

static int start_accept_thread(wn_listener *l)
{
    l->accf = WN_ACCF_NONE;
    l->thread = CreateThread(NULL, 0, accept_thread, l, 0, NULL);
    return l->thread ? 0 : -1;
}

apr_status_t wn_accept_setup(apr_pool_t *p)
{
    ap_listen_rec *lr;
    wn_listener **tail = &wn_listeners;
    int have_ext = -1;
    int force = wn_conf.test_hooks & WN_HOOK_EMULATE_ACCEPT;

    for (lr = ap_listeners; lr; lr = lr->next) {
        wn_listener *l = apr_pcalloc(p, sizeof *l);
        apr_os_sock_t sd;

        apr_os_sock_get(&sd, lr->sd);
        l->lr = lr;
        l->s = sd;
        l->family = lr->bind_addr->family;
        l->accf = accf_for(lr, ap_server_conf);
        InitializeSRWLock(&l->lock);
        apr_pool_create(&l->pool, p);
        *tail = l;
        tail = &l->next;

        if (l->accf != WN_ACCF_NONE && have_ext < 0)
            have_ext = wn_recycle_setup(l->s, l->family) == APR_SUCCESS;
        if (l->accf != WN_ACCF_NONE && !have_ext) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                         "AcceptEx is not available for %pI; using accept()",
                         lr->bind_addr);
            l->accf = WN_ACCF_NONE;
        }
        if (l->accf == WN_ACCF_NONE) {
            if (start_accept_thread(l) != 0)
                return apr_get_os_error();
            continue;
        }
        /* Test hook (WinNTNGTestHook emulate-accept): the shared-socket
         * path even where the association would succeed (Wine). */
        /* Key 0: its operations say what they are (connection sockets
         * carry their context as the key, wn_keepalive.c). */
        if (force
            || !CreateIoCompletionPort((HANDLE)l->s, wn_port, 0, 0))
            l->emulated = 1;
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ap_server_conf, WN_TAG
                     "%pI: %d AcceptEx pending, completions %s",
                     lr->bind_addr, wn_run.accepts,
                     l->emulated ? "by event wait" : "on the port");
    }
    for (wn_listener *l = wn_listeners; l; l = l->next)
        wn_accept_fill(l);
    return APR_SUCCESS;
}

static LONG pending_total(void)
{
    wn_listener *l;
    LONG left = 0;

    for (l = wn_listeners; l; l = l->next)
        left += l->pending;
    return left;
}

/* Waits up to `ms` while calls are posted, or until none has completed
 * for `quiet_ms` (0: no such limit): with no client coming, the calls are
 * not waited out.  tick: the child's timers go on meanwhile (a closing
 * connection may be waiting for its FIN from them). */
static void wait_pending(int ms, int quiet_ms, void (*tick)(void))
{
    int waited, still = 0;
    long last = pending_total(), now;

    for (waited = 0; waited < ms && last; waited += 10) {
        Sleep(10);
        if (waited % 20 == 0)
            tick();
        now = pending_total();
        still = now == last ? still + 10 : 0;
        last = now;
        if (quiet_ms && still >= quiet_ms)
            break;
    }
}

void wn_accept_stop(void (*tick)(void))
{
    wn_listener *l;

    for (l = wn_listeners; l; l = l->next)
        InterlockedExchange(&l->stopping, 1);
    /* Under load the posted calls complete with connections within
     * moments (nothing is reposted): serve those rather than cancel them.
     * Cancelling races a connection being attached to the call, and Wine
     * then drops that connection.  Once none has completed for 300 ms no
     * client is coming: a stop or restart of a quiet server took 10 s. */
    wait_pending(10000, 300, tick);
    for (l = wn_listeners; l; l = l->next)
        if (l->accf != WN_ACCF_NONE && l->pending)
            CancelIoEx((HANDLE)l->s, NULL);
    /* Workers dequeue the cancelled (or just-completed) calls: a call that
     * completed with a connection before the cancel is served. */
    wait_pending(5000, 0, tick);
    for (l = wn_listeners; l; l = l->next) {
        if (l->thread) {
            WaitForSingleObject(l->thread, 2000);
            CloseHandle(l->thread);
            l->thread = NULL;
        }
    }
}
