/* The read-ahead: when a request is whole, and how long to wait for it.
 * See rp_readahead.h; the bytes themselves: rp_inbuf.h. */
#include "rp.h"
#include "rp_inbuf.h"
#include "rp_readahead.h"
#include "rp_reqscan.h"
#include "rp_rtimeout.h"
#include "rp_spool.h"

#include "http_connection.h"
#include "http_protocol.h"

#include <string.h>

/* Most of one request held in memory: a longer head, or head and body,
 * goes to a worker, which reads the rest as httpd always does; unless the
 * body can be spooled (rp_spool.h). */
#define RP_RA_HOLD (64 * 1024)

enum {
    PH_HANDSHAKE,               /* before the connection's first request */
    PH_IDLE,                    /* between requests */
    PH_READING,                 /* a request begun, not whole yet */
    PH_READY,                   /* httpd reads the request now */
    PH_OFF                      /* not HTTP/1.x: httpd reads as it likes */
};

enum { STAGE_HANDSHAKE, STAGE_HEADER, STAGE_BODY };
static const char *const stage_names[] = { "handshake", "header", "body" };

struct rp_ra {
    conn_rec *c;
    rp_inbuf *in;
    int phase, stage;
    int nothing;                /* reads in a row that found nothing */
    const rp_rt_conf *rt;       /* NULL: mod_reqtimeout does not apply */
    rp_rt_clock clock;
    rp_reqscan scan;
};

/* ---- clocks --------------------------------------------------------------- */

static const rp_rt_stage *stage_of(const rp_rt_conf *rt, int stage)
{
    return !rt ? NULL : stage == STAGE_HANDSHAKE ? &rt->handshake
           : stage == STAGE_HEADER ? &rt->header : &rt->body;
}

static void start_stage(rp_ra *ra, int stage, apr_time_t now)
{
    ra->stage = stage;
    rp_rt_begin(&ra->clock, stage_of(ra->rt, stage),
                ra->c->base_server->timeout, now);
}

apr_time_t rp_ra_deadline(const rp_ra *ra)
{
    return rp_rt_deadline(&ra->clock);
}

/* ---- life of a connection ---------------------------------------------- */

rp_ra *rp_ra_attach(conn_rec *c)
{
    rp_ra *ra = apr_pcalloc(c->pool, sizeof(*ra));

    ra->c = c;
    ra->in = rp_inbuf_attach(c);
    ra->rt = rp_rtconf_for(c->base_server);
    /* Nothing but core below: no TLS handshake to drive. */
    ra->phase = rp_inbuf_core_only(ra->in) ? PH_IDLE : PH_HANDSHAKE;
    start_stage(ra, STAGE_HANDSHAKE, apr_time_now());
    return ra;
}

void rp_ra_finished(rp_ra *ra)
{
    if (ra->phase != PH_OFF) {
        ra->phase = PH_IDLE;
    }
    rp_inbuf_time_out(ra->in, 0);
}

static void feed(void *baton, const char *s, apr_size_t len)
{
    rp_ra *ra = baton;
    apr_size_t used;

    if (ra->scan.state == RP_SCAN_MORE) {
        rp_reqscan_feed(&ra->scan, s, len, &used);
    }
}

static void begin_request(rp_ra *ra)
{
    server_rec *s = ra->c->base_server;
    rp_scan_limits lim;

    lim.request_line = (size_t)s->limit_req_line;
    lim.field_size = (size_t)s->limit_req_fieldsize;
    lim.fields = (unsigned)s->limit_req_fields;
    lim.hold = RP_RA_HOLD;
    lim.body_hold = rp_spool_limit();
    rp_reqscan_start(&ra->scan, &lim);
    ra->rt = rp_rtconf_for(s);
    start_stage(ra, STAGE_HEADER, apr_time_now());
    ra->nothing = 0;
    ra->phase = PH_READING;
    rp_inbuf_look_below(ra->in);
    rp_inbuf_feed_held(ra->in, feed, ra);   /* pipelined bytes first */
}

static rp_ra_result ready(rp_ra *ra)
{
    ra->phase = PH_READY;
    return RP_RA_READY;
}

/* Out of time: httpd answers a late request as it does (408, logged), a
 * late handshake has nobody to answer. */
static rp_ra_result expire(rp_ra *ra)
{
    conn_rec *c = ra->c;

    ap_log_cerror(APLOG_MARK, APLOG_INFO, 0, c, RP_LOG_TAG
                  "request %s read timeout: the client was too slow (waited "
                  "in the event loop; Timeout, RequestReadTimeout)",
                  stage_names[ra->stage]);
    c->keepalive = AP_CONN_CLOSE;
    if (ra->phase == PH_HANDSHAKE) {
        return RP_RA_CLOSE;
    }
    rp_inbuf_time_out(ra->in, 1);
    return ready(ra);
}

static rp_ra_result wait_or_expire(rp_ra *ra)
{
    apr_time_t deadline = rp_rt_deadline(&ra->clock);

    ra->nothing = 0;
    if (deadline && apr_time_now() >= deadline) {
        return expire(ra);
    }
    if (rp_inbuf_compact(ra->in, rp_reqscan_spools(&ra->scan)) != APR_SUCCESS) {
        return ready(ra);       /* httpd reads the rest (logged once) */
    }
    return RP_RA_WAIT;
}

static int speaks_http1(conn_rec *c)
{
    return !strcmp(ap_get_protocol(c), AP_PROTOCOL_HTTP1);
}

/* TLS handshake (a no-op without TLS); -1 when done.  A "not yet" may hide
 * the end of the stream, which the next call tells: two in a row wait. */
static int handshake(rp_ra *ra)
{
    for (;;) {
        apr_status_t rv = rp_inbuf_handshake(ra->in);
        if (!APR_STATUS_IS_EAGAIN(rv)) {
            ra->nothing = 0;
            if (rv != APR_SUCCESS || !speaks_http1(ra->c)) {
                /* A failed handshake (httpd finds out as usual), or
                 * HTTP/2 and the like, which read for themselves. */
                ra->phase = PH_OFF;
                return RP_RA_READY;
            }
            ra->phase = PH_IDLE;
            return -1;
        }
        if (++ra->nothing >= 2) {
            return wait_or_expire(ra);
        }
    }
}

/* Nothing more now: wait (or, keep-alive, nothing came at all). */
static rp_ra_result nothing_more(rp_ra *ra, int keepalive)
{
    rp_inbuf_set_drained(ra->in);
    if (keepalive && !ra->scan.total) {
        ra->phase = PH_IDLE;
        ra->nothing = 0;
        return RP_RA_IDLE;
    }
    return wait_or_expire(ra);
}

static rp_in_for read_for(const rp_reqscan *scan)
{
    return !rp_reqscan_in_body(scan) ? RP_IN_HEAD
           : rp_reqscan_spools(scan) ? RP_IN_BODY_SPOOLED : RP_IN_BODY;
}

static rp_ra_result read_request(rp_ra *ra, int keepalive)
{
    for (;;) {
        apr_size_t got;
        int drained;
        if (ra->scan.state != RP_SCAN_MORE) {
            return ready(ra);
        }
        if (rp_reqscan_in_body(&ra->scan) && ra->stage != STAGE_BODY) {
            start_stage(ra, STAGE_BODY, apr_time_now());
        }
        switch (rp_inbuf_read(ra->in, read_for(&ra->scan), feed, ra, &got, &drained)) {
        case RP_IN_DATA_UNSPOOLED:
            return ready(ra);   /* httpd reads the rest (logged once) */
        case RP_IN_DATA:
            rp_rt_progress(&ra->clock, got, apr_time_now());
            ra->nothing = 0;
            if (drained && ra->scan.state == RP_SCAN_MORE) {
                return nothing_more(ra, keepalive);
            }
            break;
        case RP_IN_NONE:
            return nothing_more(ra, keepalive);
        case RP_IN_NONE_MAYBE:
            if (++ra->nothing >= 2) {
                return nothing_more(ra, keepalive);
            }
            break;
        default:                /* the end, or an error */
            /* httpd reads what came and meets the end itself. */
            return ra->scan.total ? ready(ra) : RP_RA_CLOSE;
        }
    }
}

rp_ra_result rp_ra_read(rp_ra *ra, int keepalive)
{
    int r;

    switch (ra->phase) {
    case PH_READY:
    case PH_OFF:
        return RP_RA_READY;
    case PH_HANDSHAKE:
        if ((r = handshake(ra)) >= 0) {
            return (rp_ra_result)r;
        }
        begin_request(ra);
        return read_request(ra, 0);
    case PH_IDLE:
        if (!speaks_http1(ra->c)) {
            ra->phase = PH_OFF;     /* switched, e.g. to HTTP/2 (h2c) */
            return RP_RA_READY;
        }
        begin_request(ra);
        break;
    default:
        break;
    }
    return read_request(ra, keepalive);
}
