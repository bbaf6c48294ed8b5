/* Connection contexts: an accept socket, its AcceptEx buffer and a
 * transaction pool.  Free contexts wait on their listener's stack (LIFO:
 * the most recently used context, its pool pages and socket, are warm).
 * A context stays with one listener because a recycled socket can only
 * accept again on a listener of its own address family. */
#include "wn.h"

#include "mpm_common.h"

#ifndef WSA_FLAG_NO_HANDLE_INHERIT
#define WSA_FLAG_NO_HANDLE_INHERIT 0x80
#endif

/* 1 while sockets can be created non-inheritable (Windows 7 SP1 and
 * later, Wine): that saves the two calls of SetHandleInformation per
 * socket (a query and a set, each a wineserver round trip under Wine). */
static volatile LONG create_no_inherit = 1;
static volatile LONG create_checked;

/* The flag's first socket is checked once: a layered provider could
 * ignore the flag, and then SetHandleInformation is used from now on. */
static int created_no_inherit(SOCKET s)
{
    DWORD flags = 0;

    if (create_checked)
        return 1;
    if (GetHandleInformation((HANDLE)s, &flags)
        && !(flags & HANDLE_FLAG_INHERIT)) {
        InterlockedExchange(&create_checked, 1);
        return 1;
    }
    InterlockedExchange(&create_no_inherit, 0);
    return wn_no_inherit(s);
}

static SOCKET socket_no_inherit(int family)
{
    SOCKET s;

    if (create_no_inherit) {
        s = WSASocketW(family, SOCK_STREAM, IPPROTO_TCP, NULL, 0,
                       WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
        if (s != INVALID_SOCKET) {
            if (created_no_inherit(s))
                return s;
            closesocket(s);
            return INVALID_SOCKET;
        }
        if (WSAGetLastError() != WSAEINVAL)
            return INVALID_SOCKET;
        InterlockedExchange(&create_no_inherit, 0);  /* flag unknown */
    }
    s = WSASocketW(family, SOCK_STREAM, IPPROTO_TCP, NULL, 0,
                   WSA_FLAG_OVERLAPPED);
    if (s != INVALID_SOCKET && !wn_no_inherit(s)) {
        closesocket(s);
        return INVALID_SOCKET;
    }
    return s;
}

SOCKET wn_ctx_new_socket(wn_listener *l)
{
    /* Never inherited by CGI or piped-log children. */
    SOCKET s = socket_no_inherit(l->family);

    if (s != INVALID_SOCKET)
        InterlockedIncrement64(&wn_stats.sockets_created);
    return s;
}

int wn_no_inherit(SOCKET s)
{
    static apr_uint32_t logged;

    if (SetHandleInformation((HANDLE)s, HANDLE_FLAG_INHERIT, 0))
        return 1;
    wn_log_once(&logged, APLOG_ERR, apr_get_os_error(), WN_TAG
                "SetHandleInformation cannot keep a socket out of child "
                "processes (CGI): connection sockets are closed instead of "
                "served, listeners kept; check the system's handle limits "
                "(logged once)");
    return 0;
}

static wn_ctx *ctx_create(wn_listener *l)
{
    apr_pool_t *ptrans;
    apr_allocator_t *allocator;
    wn_ctx *ctx;
    DWORD data = 0;           /* AcceptEx never waits for data */

    /* Each context owns an allocator: a transaction pool never contends
     * with another thread's. */
    if (apr_allocator_create(&allocator) != APR_SUCCESS)
        return NULL;
    apr_allocator_max_free_set(allocator, ap_max_mem_free);
    if (apr_pool_create_ex(&ptrans, l->pool, NULL, allocator) != APR_SUCCESS) {
        apr_allocator_destroy(allocator);
        return NULL;
    }
    apr_allocator_owner_set(allocator, ptrans);
    apr_pool_tag(ptrans, "transaction");
    ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        apr_pool_destroy(ptrans);
        return NULL;
    }
    ctx->buf = malloc(data + 2 * WN_ADDR_ROOM);
    if (!ctx->buf) {
        free(ctx);
        apr_pool_destroy(ptrans);
        return NULL;
    }
    ctx->data_room = data;
    ctx->listener = l;
    ctx->s = INVALID_SOCKET;
    ctx->ptrans = ptrans;
    return ctx;
}

wn_ctx *wn_ctx_get(wn_listener *l)
{
    wn_ctx *ctx;

    AcquireSRWLockExclusive(&l->lock);
    ctx = l->free;
    if (ctx)
        l->free = ctx->next;
    ReleaseSRWLockExclusive(&l->lock);
    if (!ctx)
        ctx = ctx_create(l);
    if (ctx) {
        ctx->next = NULL;
        memset(&ctx->op.ov, 0, sizeof ctx->op.ov);
        ctx->sock = NULL;
        ctx->data_len = 0;
    }
    return ctx;
}

void wn_ctx_put(wn_ctx *ctx)
{
    wn_listener *l = ctx->listener;

    AcquireSRWLockExclusive(&l->lock);
    ctx->next = l->free;
    l->free = ctx;
    ReleaseSRWLockExclusive(&l->lock);
}

/* The connection is over (its socket closed or handed to the next
 * AcceptEx): its context is free, and it counts as ended. */
void wn_ctx_connection_ended(wn_ctx *ctx)
{
    wn_ctx_put(ctx);
    wn_tally_connection_ended();
}

void wn_ctx_drop_socket(wn_ctx *ctx)
{
    if (ctx->s != INVALID_SOCKET)
        closesocket(ctx->s);
    ctx->s = INVALID_SOCKET;
    ctx->recycled = 0;
}
