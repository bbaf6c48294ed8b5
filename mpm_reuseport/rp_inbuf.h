/* A connection's input as the read-ahead (rp_readahead.c) handles it: a
 * connection input filter above TLS that holds the bytes read ahead and
 * gives them to httpd first, and the reads without waiting that fill it.
 * httpd's own reads go past the filter to the network once nothing is
 * held, as usual.
 * Where only core's input filter lies below (plain HTTP: no TLS, no PROXY
 * protocol), the socket is read directly while core holds nothing it read
 * itself: the same bytes in the same order, one recv() per arrival (core's
 * own read would ask the socket once more).  Bytes read so are counted for
 * mod_logio as its filter would.  Until core has been called once (it
 * sets up its buffer then, which httpd expects when it refuses a request)
 * and while it holds bytes, a head is read through core a line at a time:
 * core reads the socket once and hands lines from that.
 * Only rp_readahead.c calls these. */
#ifndef RP_INBUF_H
#define RP_INBUF_H

#include "httpd.h"

typedef struct rp_inbuf rp_inbuf;

typedef enum {
    RP_IN_DATA,                 /* bytes came (and were fed) */
    RP_IN_DATA_UNSPOOLED,       /* bytes came; a long body's memory was
                                   full and the spool failed (logged):
                                   httpd should read the rest itself */
    RP_IN_NONE,                 /* nothing there now, for sure */
    RP_IN_NONE_MAYBE,           /* nothing, or the end of the stream: the
                                   next read tells (TLS, core) */
    RP_IN_EOF,                  /* the client closed */
    RP_IN_ERROR
} rp_in_read;

/* Bytes as they arrive, for the scanner. */
typedef void rp_in_feed(void *baton, const char *s, apr_size_t len);

/* register_hooks: the filter; post_config: the filters it reads past. */
void rp_inbuf_register(void);
int rp_inbuf_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                         apr_pool_t *ptemp, server_rec *s);

/* A new connection, after its pre_connection hooks. */
rp_inbuf *rp_inbuf_attach(conn_rec *c);

/* The TLS handshake, without waiting (a no-op without TLS): APR_SUCCESS
 * when done, EAGAIN while it waits for the client, else it failed.  Once
 * this returned anything but EAGAIN, httpd's own handshake calls (mod_ssl's
 * process_connection) find it done. */
apr_status_t rp_inbuf_handshake(rp_inbuf *in);

/* Whether only core reads below (direct socket reads possible; no TLS to
 * shake hands for); looked at again at each request. */
void rp_inbuf_look_below(rp_inbuf *in);
int rp_inbuf_core_only(const rp_inbuf *in);

/* What a read is for. */
typedef enum {
    RP_IN_HEAD,                 /* a request head, which core may hand up a
                                   line at a time */
    RP_IN_BODY,                 /* a body that fits in memory */
    RP_IN_BODY_SPOOLED          /* a longer body: in memory while it comes
                                   (up to 1 MiB), in the spool while it
                                   waits */
} rp_in_for;

/* One read without waiting; new bytes are fed, then held.  *drained: the
 * socket is known to have had no more right after. */
rp_in_read rp_inbuf_read(rp_inbuf *in, rp_in_for what, rp_in_feed *feed,
                         void *baton, apr_size_t *got, int *drained);

/* Feed what is held already (bytes of the next request read with the
 * previous one). */
void rp_inbuf_feed_held(rp_inbuf *in, rp_in_feed *feed, void *baton);

/* The socket had no more at the last read and nothing read it since. */
void rp_inbuf_set_drained(rp_inbuf *in);

/* While the request waits: its bytes in memory in one buffer of their
 * size, or, for a body longer than memory holds (spool), in the spool
 * (rp_spool.h).  APR_SUCCESS, or the spool failed (logged once): the bytes
 * stay in memory and httpd should read the rest itself. */
apr_status_t rp_inbuf_compact(rp_inbuf *in, int spool);

/* The request ran out of time: httpd's reads that would wait time out
 * (on), until the next request (off). */
void rp_inbuf_time_out(rp_inbuf *in, int on);

#endif
