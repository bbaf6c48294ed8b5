/* A connection's life as its pool sees it (rp_conn_life.h): the pool
 * comes from a stock of idle ones (rp_stock.h) and the accepted socket is
 * made in it, the connection lives in it, and its release clears it and
 * gives it back.  rp_accept.c says when to accept, rp_conn.c runs
 * connections, and neither takes or gives back a pool. */
#include "rp_conn_life.h"
#include "rp_balance.h"
#include "rp_stock.h"

#include "apr_atomic.h"
#include "http_connection.h"

/* Idle connection pools for reuse, at most one per worker. */
static rp_stock *stock;
static apr_pool_t *parent_pool;
static apr_uint32_t live_conns;

/* All connections of the child share one allocator (locked): memory a
 * request frees is reused by the next request on any connection, so an
 * idle keep-alive connection holds only its live pools (per-connection
 * allocators would each keep their own free blocks). */
static apr_allocator_t *conn_allocator;

static apr_status_t create_conn_allocator(void)
{
    apr_thread_mutex_t *mutex;
    apr_status_t rv;

    if ((rv = apr_allocator_create(&conn_allocator))
        || (rv = apr_thread_mutex_create(&mutex, APR_THREAD_MUTEX_DEFAULT,
                                         parent_pool))) {
        return rv;
    }
    apr_allocator_max_free_set(conn_allocator, ap_max_mem_free);
    apr_allocator_mutex_set(conn_allocator, mutex);
    return APR_SUCCESS;
}

apr_status_t rp_conn_life_setup(apr_pool_t *p, int max_pools)
{
    parent_pool = p;
    stock = rp_stock_create(max_pools);
    if (!stock) {
        return APR_ENOMEM;
    }
    return create_conn_allocator();
}

apr_uint32_t rp_conn_life_count(void)
{
    return apr_atomic_read32(&live_conns);
}

static apr_pool_t *connection_pool(void)
{
    apr_pool_t *p = rp_stock_take(stock);

    if (!p) {
        apr_pool_create_ex(&p, parent_pool, NULL, conn_allocator);
        apr_pool_tag(p, "transaction");
    }
    return p;
}

/* A cleared connection pool: kept for the next connection, or destroyed
 * when the stock is full. */
static void give_pool(apr_pool_t *p)
{
    if (!rp_stock_give(stock, p)) {
        apr_pool_destroy(p);
    }
}

static rp_conn *new_conn(apr_pool_t *p, apr_socket_t *sock)
{
    rp_conn *rc = apr_pcalloc(p, sizeof(*rc));
    int fd;

    rc->pool = p;
    rc->sock = sock;
    apr_os_sock_get(&fd, sock);
    rp_parking_init(&rc->parking, fd);
    apr_atomic_inc32(&live_conns);
    rp_balance_publish(rp_conn_life_count());
    return rc;
}

rp_conn *rp_conn_accept(apr_socket_t *listener, apr_status_t *rv)
{
    apr_pool_t *p = connection_pool();
    apr_socket_t *sock = NULL;

    *rv = apr_socket_accept(&sock, listener, p);
    if (*rv != APR_SUCCESS) {
        give_pool(p);
        return NULL;
    }
    return new_conn(p, sock);
}

/* The socket is closed already. */
static void release(rp_conn *rc)
{
    apr_pool_t *p = rc->pool;

    rp_loop_unslot(&rc->parking);
    apr_atomic_dec32(&live_conns);
    rp_balance_publish(rp_conn_life_count());
    apr_pool_clear(p);          /* rc lives in p */
    give_pool(p);
}

void rp_conn_close(rp_conn *rc)
{
    /* No need to unregister: closing the descriptor does (even if a CGI
     * forked meanwhile still holds it, its event's token is stale). */
    if (rc->c && !rc->pre_closed) {
        rc->pre_closed = 1;
        ap_prep_lingering_close(rc->c);
    }
    apr_socket_close(rc->sock);
    release(rc);
}
