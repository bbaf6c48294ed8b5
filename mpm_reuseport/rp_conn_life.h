/* A connection's record and its life as its pool sees it: rp_conn_life.c
 * owns creating a connection (its pool from the stock, its socket
 * accepted into it), closing and releasing it, the count of live ones and
 * the stock of idle pools.
 * Callers: rp_child.c (setup, count, close what the loop timed out),
 * rp_accept.c (accept, under its lock; close what it could not park),
 * rp_conn.c (close), rp_callbacks.c (the record of a suspended one). */
#ifndef RP_CONN_LIFE_H
#define RP_CONN_LIFE_H

#include "rp.h"
#include "rp_loop.h"

struct rp_ra;

typedef struct rp_conn {
    conn_state_t pub;           /* c->cs */
    conn_rec *c;                /* NULL until a worker creates it */
    apr_pool_t *pool;           /* everything of the connection */
    apr_socket_t *sock;
    rp_parking parking;         /* the loop's: fd, slot, timers, why */
    int pre_closed;             /* pre_close_connection hooks ran */
    int last_request;           /* the client said it sends no more */
    ap_sb_handle_t *sbh;
    struct rp_ra *ra;           /* its read-ahead (after pre_connection) */
    int keepalive_wake;         /* resumed from a keep-alive wait */
    int trimmed;                /* its idle memory cut once (rp_trim.h) */
    int waited_to_write;        /* the client once made a response wait */
    int module_wait;            /* a module waits for the socket (ASYNC_WAITIO,
                                   or write completion wanting to read) */
    apr_time_t linger_until;    /* lingering close gives up then */
    struct rp_conn *next_suspended;    /* rp_callbacks.c */
} rp_conn;

/* The connection whose parking the loop handed back (a job's token). */
static APR_INLINE rp_conn *rp_conn_of(rp_parking *pk)
{
    return (rp_conn *)((char *)pk - APR_OFFSETOF(rp_conn, parking));
}

/* Connection pools come from p; at most max_pools kept for reuse. */
apr_status_t rp_conn_life_setup(apr_pool_t *p, int max_pools);
/* A new connection from `listener`, its socket accepted into a pool from
 * the stock; NULL with *rv saying why (the pool is back in the stock). */
rp_conn *rp_conn_accept(apr_socket_t *listener, apr_status_t *rv);
/* Close rc now (no lingering) and release it: its slot, its pool. */
void rp_conn_close(rp_conn *rc);
/* Connections accepted and not yet closed. */
apr_uint32_t rp_conn_life_count(void);

#endif
