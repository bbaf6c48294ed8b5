/* Small complete responses are written at once.
 *
 * Core's output filter writes at once only 4 KiB or more, or a response
 * with a file bucket (from httpd 2.4.48; before, a small file too waits);
 * anything smaller (a 304, an error page, a PHP page through
 * mod_proxy_fcgi, a small file from mod_fhcache's memory) is kept
 * for later, and the first time that happens core gives the connection a
 * pool for it: a third 8 KiB node that the connection keeps, resident,
 * through every keep-alive wait from then on.  A connection output filter
 * above mod_ssl ends such a response with a flush when the whole of it
 * comes down in one pass (EOS in the brigade, below 4 KiB, nothing of the
 * connection still waiting for the client), so core writes it now, with
 * the same one write it would have made at the end of the request.
 * A flush makes core wait for the socket if it must (blocking, up to
 * Timeout), so: not when output is still pending (pipelined answers keep
 * being gathered into one write), and never again on a connection whose
 * client once made a response wait (a full socket buffer is what could
 * hold the worker there; for the others under 4 KiB always fits).
 * Added by rp_conn.c to every connection (HTTP/2 frames carry no EOS). */
#include "rp.h"
#include "rp_smallflush.h"

#include "apr_buckets.h"
#include "util_filter.h"

/* core_filters.c's THRESHOLD_MIN_WRITE. */
#define RP_CORE_MIN_WRITE 4096

static ap_filter_rec_t *smallflush_filter;

/* The brigade's EOS if the brigade is a whole response short of core's
 * threshold, else NULL. */
static apr_bucket *small_response_end(apr_bucket_brigade *bb)
{
    apr_size_t total = 0;
    apr_bucket *b;

    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = APR_BUCKET_NEXT(b)) {
        if (APR_BUCKET_IS_EOS(b)) {
            return total < RP_CORE_MIN_WRITE ? b : NULL;
        }
        if (APR_BUCKET_IS_FLUSH(b) || b->length == (apr_size_t)-1
            || (APR_BUCKET_IS_FILE(b) && MPMNG_CORE_WRITES_FILES)) {
            return NULL;    /* core writes at once anyway, or must read */
        }
        total += b->length;
        if (total >= RP_CORE_MIN_WRITE) {
            return NULL;
        }
    }
    return NULL;
}

static apr_status_t smallflush_out(ap_filter_t *f, apr_bucket_brigade *bb)
{
    const int *waited_to_write = f->ctx;
    apr_bucket *eos;

    if (!f->c->data_in_output_filters && !*waited_to_write
        && (eos = small_response_end(bb))) {
        APR_BUCKET_INSERT_BEFORE(eos, apr_bucket_flush_create(f->c->bucket_alloc));
    }
    return ap_pass_brigade(f->next, bb);
}

void rp_smallflush_add(conn_rec *c, const int *waited_to_write)
{
    ap_add_output_filter_handle(smallflush_filter, (void *)waited_to_write, NULL, c);
}

void rp_smallflush_register(void)
{
    /* Above mod_ssl (+ 4, + 5) and rp_tlsbody (+ 3): the response as HTTP. */
    smallflush_filter = ap_register_output_filter("RP_SMALL_FLUSH", smallflush_out, NULL,
                                                  AP_FTYPE_CONNECTION + 2);
}
