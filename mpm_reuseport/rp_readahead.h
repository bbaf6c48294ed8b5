/* The read-ahead: a request's bytes are read by whichever worker the event
 * loop hands a readiness event to, without waiting, and kept until the
 * request is whole (rp_reqscan.h); only then does a worker run httpd's
 * process_connection hooks for it.  A client that sends its request
 * slowly, or never finishes its TLS handshake, costs memory while it
 * waits, not a thread.
 * The bytes wait in a connection input filter above TLS (mod_ssl), so
 * httpd later reads them as if they had just arrived; below it, httpd
 * reads the socket as usual (rp_inbuf.h).  While reading ahead, it keeps
 * the clocks httpd's blocking reads would have kept (Timeout per read,
 * and mod_reqtimeout's stages when it is loaded: rp_rtimeout.h); when one
 * runs out, httpd gets the request with the rest of its reads timing out,
 * so it answers and logs as it does for a client that was too slow.
 * Used by rp_conn.c (a connection's life); the filter is registered from
 * mod_mpm_reuseport.c. */
#ifndef RP_READAHEAD_H
#define RP_READAHEAD_H

#include "httpd.h"

typedef struct rp_ra rp_ra;

typedef enum {
    RP_RA_READY,                /* run the request now */
    RP_RA_WAIT,                 /* wait for readability until rp_ra_deadline */
    RP_RA_IDLE,                 /* keep-alive: nothing came after all */
    RP_RA_CLOSE                 /* the client left (or its handshake failed,
                                   or timed out) before a request */
} rp_ra_result;

/* A new connection, after its pre_connection hooks. */
rp_ra *rp_ra_attach(conn_rec *c);

/* Read what has arrived of the next request, without waiting.  keepalive:
 * the connection waited for its next request and something arrived (a
 * read that finds nothing then is RP_RA_IDLE).  Once RP_RA_READY, it stays
 * so until rp_ra_finished. */
rp_ra_result rp_ra_read(rp_ra *ra, int keepalive);

/* When the wait for the rest must end (RP_RA_WAIT); 0: never. */
apr_time_t rp_ra_deadline(const rp_ra *ra);

/* httpd has read the request: the next rp_ra_read begins the next one. */
void rp_ra_finished(rp_ra *ra);

#endif
