/* A response held while it is small, in place of core's setaside.
 *
 * Core's output filter does not write little at once (under 4 KiB in
 * memory, no file, no flush): it sets it aside in a pool it creates on the
 * connection for that, and the pool (an APR memory node, one page of it
 * touched, more when recycled) then stays with the connection to its end,
 * idle keep-alive included.  httpd's header filter passes a response's
 * headers on their own, and handlers such as mod_proxy_fcgi pass a small
 * body and its end (EOS) separately: each of those passes would be set
 * aside.  This request filter, below the header and chunk filters, holds
 * such passes instead (plain memory only, which needs no pool to be kept)
 * and passes them down together with the next pass that is not small
 * plain memory: core sees what it would have seen after its own setaside
 * (the same writes), and a small whole response reaches the connection
 * with its EOS, which rp_smallflush.c then has core write at once.
 *
 * Nothing held can be forgotten: a request always passes its EOS, and
 * anything but plain memory data (EOS, FLUSH, a file, an error) releases
 * what is held.  A response without a body (HEAD, 304, 204) is never held:
 * its headers are the whole of it.  httpd before 2.4.39 passes them
 * without the EOS, which its header filter drops: it is added here, so
 * that the connection's filters see the response end (rp_smallflush.c) as
 * from later releases, which pass the two together.  Tunnels and other writers to the connection's filters
 * never pass through here; HTTP/2 streams and subrequests do not get it. */
#include "rp.h"

#include "util_filter.h"

/* Core writes at once from this many bytes in memory (its
 * THRESHOLD_MIN_WRITE); less waits for more data or a flush. */
#define RP_HOLD_MAX 4096

static ap_filter_rec_t *hold_filter;

/* Memory-only data whose setaside needs no pool that outlives it: heap
 * and immortal buckets stay as they are, transient ones are copied to the
 * heap, pool buckets turn into heap buckets when their pool goes. */
static int is_plain_memory(const apr_bucket *b)
{
    return APR_BUCKET_IS_HEAP(b) || APR_BUCKET_IS_TRANSIENT(b)
           || APR_BUCKET_IS_POOL(b) || APR_BUCKET_IS_IMMORTAL(b);
}

/* Would core set this brigade aside without writing any of it? */
static int core_would_wait(apr_bucket_brigade *bb)
{
    apr_size_t total = 0;
    apr_bucket *b;

    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = APR_BUCKET_NEXT(b)) {
        if (!is_plain_memory(b)) {
            return 0;
        }
        total += b->length;
        if (total >= RP_HOLD_MAX) {
            return 0;
        }
    }
    return 1;
}

static int setaside_all(apr_bucket_brigade *bb, apr_pool_t *p)
{
    apr_bucket *b;

    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = APR_BUCKET_NEXT(b)) {
        if (apr_bucket_setaside(b, p) != APR_SUCCESS) {
            return 0;
        }
    }
    return 1;
}

static int without_body(const request_rec *r)
{
    return r->header_only || AP_STATUS_IS_HEADER_ONLY(r->status);
}

static void end_with_eos(apr_bucket_brigade *bb)
{
    apr_bucket *b = APR_BRIGADE_LAST(bb);

    if (b == APR_BRIGADE_SENTINEL(bb) || !APR_BUCKET_IS_EOS(b)) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    }
}

/* Hold bb (what was held already is in it) if core would only set it
 * aside; 1 if held. */
static int hold(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    apr_bucket_brigade *held = f->ctx;

    if (without_body(r) && !APR_BRIGADE_EMPTY(bb)) {
        end_with_eos(bb);
        return 0;
    }
    if (r->connection->data_in_output_filters || APR_BRIGADE_EMPTY(bb)
        || !core_would_wait(bb) || !setaside_all(bb, r->pool)) {
        return 0;
    }
    if (!held) {
        f->ctx = held = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    }
    APR_BRIGADE_CONCAT(held, bb);
    return 1;
}

static apr_status_t hold_output(ap_filter_t *f, apr_bucket_brigade *bb)
{
    apr_bucket_brigade *held = f->ctx;

    if (held) {
        APR_BRIGADE_PREPEND(bb, held);
    }
    if (hold(f, bb)) {
        return APR_SUCCESS;
    }
    /* Once more than a little went down, out of the way. */
    ap_remove_output_filter(f);
    return ap_pass_brigade(f->next, bb);
}

void rp_hold_add(request_rec *r)
{
    if (!r->main && !r->connection->master) {
        ap_add_output_filter_handle(hold_filter, NULL, r, r->connection);
    }
}

void rp_hold_register(void)
{
    /* After the chunk filter (transcode): what it holds is the response
     * as it goes to the connection, chunk framing included, and the
     * headers (passed before the header filter adds the chunk filter) are
     * never framed as a chunk. */
    hold_filter = ap_register_output_filter("RP_HOLD", hold_output, NULL,
                                            AP_FTYPE_TRANSCODE + 1);
}
