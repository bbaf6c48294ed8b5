/* A connection's life as its pool sees it: the pool comes from a stock of
 * idle ones (rp_stock.h) and the accepted socket is made in it, the
 * connection lives in it, and its release clears it and gives it back.
 * Creating and releasing a connection, the count of live ones and the
 * stock are this file's: rp_accept.c says when to accept, rp_conn.c runs
 * and closes connections, and neither takes or gives back a pool. */
#include "rp_child.h"
#include "rp_stock.h"

#include "apr_atomic.h"

/* Idle connection pools for reuse, at most one per worker. */
static rp_stock *stock;

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
                                         rp_child.pruntime))) {
        return rv;
    }
    apr_allocator_max_free_set(conn_allocator, ap_max_mem_free);
    apr_allocator_mutex_set(conn_allocator, mutex);
    return APR_SUCCESS;
}

apr_status_t rp_conn_life_setup(int max_pools)
{
    stock = rp_stock_create(max_pools);
    if (!stock) {
        return APR_ENOMEM;
    }
    return create_conn_allocator();
}

static apr_pool_t *connection_pool(void)
{
    apr_pool_t *p = rp_stock_take(stock);

    if (!p) {
        apr_pool_create_ex(&p, rp_child.pruntime, NULL, conn_allocator);
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

    rc->pool = p;
    rc->sock = sock;
    rc->slot = -1;
    apr_os_sock_get(&rc->fd, sock);
    rp_timer_init(&rc->timer);
    rp_dtimer_init(&rc->deadline);
    apr_atomic_inc32(&rp_child.live_conns);
    rp_balance_publish();
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

void rp_conn_release(rp_conn *rc)
{
    apr_pool_t *p = rc->pool;

    rp_loop_unslot(rc);
    apr_atomic_dec32(&rp_child.live_conns);
    rp_balance_publish();
    apr_pool_clear(p);          /* rc lives in p */
    give_pool(p);
}
