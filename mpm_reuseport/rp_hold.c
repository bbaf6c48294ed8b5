/* A response's headers held until its body comes, in place of core's
 * setaside.
 *
 * httpd's HTTP header filter passes a response's headers on their own and
 * the body right after them.  Core's output filter does not write so
 * little at once (under 4 KiB in memory, no file, no flush): it sets the
 * headers aside in a subpool it creates on the connection for that, and
 * the subpool (an APR memory node, one page of it touched) then stays with
 * the connection to its end, idle keep-alive included.  This request
 * filter, just after the header filter, holds the headers instead and
 * passes them down together with the body: core sees what it would have
 * seen after its own setaside (the same writes, the same system calls),
 * and the connection costs a page less while it waits for its next
 * request.
 *
 * Only the header filter's first brigade is held: the header filter always
 * passes the body next, so nothing held can be forgotten (tunnels and
 * other writers to the connection's filters never pass through here).
 * Chunked responses are left alone (the chunk filter, added after the
 * headers went down, sits between this filter and the network), and so
 * are responses without a body (their headers come with the end). */
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

/* The headers: hold them if core would only set them aside. */
static int hold_headers(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    apr_bucket_brigade *held;

    if (r->sent_bodyct || r->chunked || r->header_only
        || AP_STATUS_IS_HEADER_ONLY(r->status)
        || r->connection->data_in_output_filters
        || APR_BRIGADE_EMPTY(bb) || !core_would_wait(bb)
        || !setaside_all(bb, r->pool)) {
        return 0;
    }
    held = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    APR_BRIGADE_CONCAT(held, bb);
    f->ctx = held;
    return 1;
}

static apr_status_t hold_output(ap_filter_t *f, apr_bucket_brigade *bb)
{
    apr_bucket_brigade *held = f->ctx;

    if (!held) {
        if (hold_headers(f, bb)) {
            return APR_SUCCESS;
        }
    }
    else {
        APR_BRIGADE_PREPEND(bb, held);
    }
    /* One brigade held at most: from here on, out of the way. */
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
    /* After the header filter (protocol), before the chunk filter
     * (transcode). */
    hold_filter = ap_register_output_filter("RP_HOLD_HEADERS", hold_output,
                                            NULL, AP_FTYPE_PROTOCOL + 5);
}
