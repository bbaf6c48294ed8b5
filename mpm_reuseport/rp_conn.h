/* A connection's state machine, run by workers: rp_conn.c owns what
 * happens to a connection between its waits (create its conn_rec, read
 * its request ahead, run httpd's hooks, flush, then park or close it),
 * and which connection each worker runs now (so an ungraceful stop can
 * cut them).  Creating, closing and releasing a connection are
 * rp_conn_life.h's; waiting is rp_loop.h's.
 * Callers: rp_child.c (setup, dispatch, note_request, cut_running,
 * end_waiting, speaks_http1);
 * mod_mpm_reuseport.c hooks rp_conn_pre_close_connection (rp.h). */
#ifndef RP_CONN_H
#define RP_CONN_H

#include "rp_conn_life.h"

#include "apr_thread_proc.h"

/* slot: the child's; nworkers: workers 0 .. nworkers-1. */
void rp_conn_setup(apr_pool_t *p, int slot, int nworkers);
/* Worker tid runs rc (a new one, or one whose wait is over) until it
 * waits or closes. */
void rp_conn_dispatch(rp_conn *rc, apr_thread_t *thd, int tid);
void rp_conn_note_request(request_rec *r);    /* post_read_request */
/* Ungraceful stop: cut the connections workers are running. */
void rp_conn_cut_running(void);
/* The loop thread ends rc, whose wait it took (rp_loop_take_expired): an
 * idle connection of another protocol than HTTP/1 gets a lingering close,
 * so its module's goodbye (mod_http2's GOAWAY) is read, not reset. */
void rp_conn_end_waiting(rp_conn *rc);
/* Whether rc, parked or taken by the loop thread, speaks HTTP/1. */
int rp_conn_speaks_http1(rp_conn *rc);

#endif
