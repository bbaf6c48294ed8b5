/* The request side: answer core's directory-walk stat from the cache (a hit
 * skips stat, open and close), and serve the response exactly as core's
 * default handler would, from the cached descriptor or in-memory body.
 *
 * Security is not ours to decide: the directory walk still runs (with its
 * symlink Options checks, which lstat path components themselves when
 * FollowSymLinks is off), access hooks still run, and an entry only exists
 * for a file this child could open as its own user; changes to
 * permissions or paths invalidate the entry before the next request. */
#include "fhc_module.h"

#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"

APLOG_USE_MODULE(fhcache);

#define SWEEP_USEC APR_USEC_PER_SEC

/* The entry a request got from the cache, pinned until its pool goes (the
 * pool of the request the default handler would have opened the file in). */
typedef struct fhc_req {
    fhc_child *ch;
    fhc_entry *e;
} fhc_req;

static apr_status_t unpin_note(void *data)
{
    fhc_req *n = data;
    if (n->e) {
        fhc_lock(n->ch);
        fhc_entry_unpin(n->ch->cache, n->e);
        fhc_unlock(n->ch);
        n->e = NULL;
    }
    return APR_SUCCESS;
}

static fhc_req *note_of(request_rec *r, int create)
{
    fhc_req *n = ap_get_module_config(r->request_config, &fhcache_module);
    if (!n && create) {
        n = apr_pcalloc(r->pool, sizeof(*n));
        n->ch = fhc_the_child;
        ap_set_module_config(r->request_config, &fhcache_module, n);
        apr_pool_cleanup_register(r->pool, n, unpin_note, apr_pool_cleanup_null);
    }
    return n;
}

static void attach(request_rec *r, fhc_entry *e)
{
    fhc_req *n = note_of(r, 1);
    unpin_note(n);      /* a second walk of the same request */
    n->e = e;
}

/* The request's pin, for a bucket to own from now on (one lock less). */
static void detach(request_rec *r)
{
    note_of(r, 0)->e = NULL;
}

/* Would a fresh stat describe the same file as the cached one?  Only what
 * both describe is compared (Windows' stat by name has no file index). */
static int same_file(const apr_finfo_t *a, const apr_finfo_t *b)
{
    apr_int32_t both = a->valid & b->valid;

    return a->filetype == b->filetype && a->size == b->size
        && a->mtime == b->mtime
        && (!(both & APR_FINFO_CTIME) || a->ctime == b->ctime)
        && (!(both & APR_FINFO_DEV) || a->device == b->device)
        && (!(both & APR_FINFO_INODE) || a->inode == b->inode)
        && (!(both & APR_FINFO_PROT) || a->protection == b->protection)
        && (!(both & APR_FINFO_USER) || a->user == b->user)
        && (!(both & APR_FINFO_GROUP) || a->group == b->group);
}

/* Revalidation: a stat every pl->recheck_every (fhc_conf_revalidate_every).
 * Returns 1 if the entry may be used; else *fresh holds the stat just made. */
static int revalidate(fhc_child *ch, request_rec *r, fhc_payload *pl,
                      apr_time_t now, apr_finfo_t *fresh, apr_status_t *rv)
{
    *rv = apr_stat(fresh, r->filename, APR_FINFO_MIN, r->pool);
    if (*rv == APR_SUCCESS && same_file(fresh, &pl->finfo)) {
        if (pl->recheck_every) {      /* 0: checked on every request anyway */
            fhc_lock(ch);
            pl->checked = now;
            fhc_unlock(ch);
        }
        return 1;
    }
    return 0;
}

apr_status_t fhc_dirwalk_stat(apr_finfo_t *finfo, request_rec *r,
                              apr_int32_t wanted)
{
    fhc_child *ch = fhc_the_child;
    fhc_entry *e;
    fhc_payload *pl = NULL;
    apr_time_t now;
    int check = 0, recycle = 0;

    /* Only the walk's first, symlink-following stat of the whole path. */
    if (!ch || finfo != &r->finfo || (wanted & APR_FINFO_LINK)
        || !r->filename || !fhc_path_root_len(r->filename, fhc_os_drive_paths)) {
        return AP_DECLINED;
    }
    now = r->request_time;     /* no clock read per request */
    fhc_catch_up(ch);
    fhc_lock(ch);
    e = fhc_cache_lookup(ch->cache, r->filename, now);
    if (e) {
        pl = fhc_entry_payload(e);
        /* Every request: a request_time earlier than the last check
         * (another thread's request, or the fill) must not skip it. */
        check = pl->recheck
            && (!pl->recheck_every || now - pl->checked >= pl->recheck_every);
        recycle = check && pl->fh != FHC_NO_FILE && fhc_os_recycle_handles;
        if (recycle) {
            /* Closed before anything re-opens the path: a delete left
             * pending by our handle completes now (see fhc_os.h). */
            fhc_cache_invalidate(ch->cache, r->filename);
            fhc_entry_unpin(ch->cache, e);
        }
    }
    if (!ch->ws) {
        /* No watcher thread ticking: its housekeeping happens here. */
        fhc_housekeeping(ch, now);
    }
    fhc_unlock(ch);
    if (!e) {
        return AP_DECLINED;
    }
    if (recycle) {
        return AP_DECLINED;
    }
    if (check) {
        apr_finfo_t fresh;
        apr_status_t rv;
        if (!revalidate(ch, r, pl, now, &fresh, &rv)) {
            fhc_lock(ch);
            if (fhc_entry_live(e)) {
                fhc_cache_invalidate(ch->cache, r->filename);
            }
            fhc_entry_unpin(ch->cache, e);
            fhc_unlock(ch);
            *finfo = fresh;
            return rv;
        }
    }
    *finfo = pl->finfo;
    finfo->fname = r->filename;     /* as apr_stat() would */
    attach(r, e);
    return APR_SUCCESS;
}

/* Configurations whose response core computes by reading the file through
 * the descriptor (FileETag Digest, ContentDigest): left to core, as a
 * shared descriptor's file offset must never be used. */
static int core_reads_file(const core_dir_config *d)
{
    /* core.c's private AP_CONTENT_MD5_ON is 1. */
    return d->content_md5 == 1 || mpmng_etag_reads_file(fhc_etag_bits(d));
}

/* The request's entry if it still describes r->filename as walked. */
static fhc_entry *usable_entry(request_rec *r)
{
    fhc_req *n = note_of(r, 0);
    fhc_payload *pl;

    if (!n || !n->e) {
        return NULL;
    }
    pl = fhc_entry_payload(n->e);
    if (strcmp(pl->path, r->filename) != 0
        || !same_file(&pl->finfo, &r->finfo)) {
        return NULL;
    }
    return n->e;
}

/* The body as buckets, or NULL if this request must be left to core. */
static apr_bucket *body_bucket(fhc_child *ch, request_rec *r, fhc_entry *e,
                               const core_dir_config *d, apr_bucket_brigade *bb)
{
    fhc_payload *pl = fhc_entry_payload(e);
    /* mod_http2 moves a stream's file buckets to its main connection with
     * mmap turned off, to be read there with seek + read: a stream
     * (r->connection->master set) is served as without mmap. */
    int mmap = d->enable_mmap != ENABLE_MMAP_OFF && !r->connection->master;
    int sendfile = d->enable_sendfile == ENABLE_SENDFILE_ON;
    apr_file_t *f;
    apr_bucket *b;

    if (pl->body) {
        b = fhc_bucket_create(ch, e, pl->body, (apr_size_t)pl->finfo.size,
                              r->connection->bucket_alloc);
        detach(r);
        APR_BRIGADE_INSERT_TAIL(bb, b);
        return b;
    }
    /* The descriptor is shared by every thread of the child, and with it
     * its file offset: nothing may read it with seek + read, which APR's
     * file bucket does whenever it cannot map (fhc_os.h).  So it goes out
     * in a bucket of ours that reads at explicit offsets (pread), and for
     * sendfile becomes a file bucket right above core.  With EnableMMAP
     * Off (HTTP/2 streams too), whose file buckets core leaves to write
     * completion, the request gets a file of its own instead. */
    if (fhc_os_reads_at_offsets && mmap
        && (apr_off_t)(apr_size_t)pl->finfo.size == pl->finfo.size) {
        b = fhc_fd_bucket_create(ch, e, pl->fh, (apr_size_t)pl->finfo.size,
                                 mpmng_read_buf_size(d),
                                 sendfile ? r->pool : NULL,
                                 r->connection->bucket_alloc);
        if (sendfile) {
            fhc_sendfile_filter_add(r);     /* the request keeps its pin */
        }
        else {
            detach(r);
        }
        APR_BRIGADE_INSERT_TAIL(bb, b);
        return b;
    }
    /* Otherwise a file bucket over an apr_file_t with an offset of its own
     * (Unix: its own open file description). */
    f = fhc_os_request_file(pl->fh, sendfile, mmap, r->pool);
    if (!f) {
        return NULL;
    }
    b = apr_brigade_insert_file(bb, f, 0, pl->finfo.size, r->pool);
    if (!mmap) {
        (void)apr_bucket_file_enable_mmap(b, 0);
    }
    if (mpmng_read_buf_size(d)) {
        apr_bucket_file_set_buf_size(b, mpmng_read_buf_size(d));
    }
    return b;
}

/* What core's default handler does after opening the file, with our
 * descriptor (or body) instead of its own. */
static int send_entry(fhc_child *ch, request_rec *r, fhc_entry *e,
                      const core_dir_config *d)
{
    conn_rec *c = r->connection;
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, c->bucket_alloc);
    apr_bucket *eos;
    apr_status_t status;
    int errstatus;

    fhc_meta_headers(r, &((fhc_payload *)fhc_entry_payload(e))->meta);
    if ((errstatus = ap_meets_conditions(r)) != OK) {
        r->status = errstatus;
    }
    else if (!body_bucket(ch, r, e, d, bb)) {
        return DECLINED;    /* nothing sent yet: core serves it */
    }
    eos = apr_bucket_eos_create(c->bucket_alloc);
    APR_BRIGADE_INSERT_TAIL(bb, eos);
    status = ap_pass_brigade(r->output_filters, bb);
    apr_brigade_cleanup(bb);
    if (status == APR_SUCCESS || r->status != HTTP_OK || c->aborted) {
        return OK;
    }
    return AP_FILTER_ERROR;
}

/* Runs just before core's default handler, i.e. only when every other
 * handler declined; declines whenever core would not simply send the file. */
int fhc_handler(request_rec *r)
{
    fhc_child *ch = fhc_the_child;
    const fhc_dir_conf *dc;
    const core_dir_config *d;
    fhc_entry *e;
    int errstatus;

    if (!ch || r->method_number != M_GET || r->finfo.filetype != APR_REG
        || (r->path_info && *r->path_info)) {
        return DECLINED;
    }
    dc = ap_get_module_config(r->per_dir_config, &fhcache_module);
    d = ap_get_core_module_config(r->per_dir_config);
    if (dc->enabled != 1 || core_reads_file(d)) {
        return DECLINED;
    }
    e = usable_entry(r);
    if (!e) {
        fhc_payload *pl;
        if (!(e = fhc_fill(ch, r))) {
            return DECLINED;
        }
        attach(r, e);
        pl = fhc_entry_payload(e);
        /* Headers and body must describe the descriptor we send. */
        r->finfo = pl->finfo;
        r->finfo.fname = r->filename;
    }
    /* LogLevel fhcache:trace1 shows what the cache answered (the
     * regression suite's runs with the cache count these). */
    ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r, "mod_fhcache: serving %s",
                  r->filename);
    ap_allow_standard_methods(r, MERGE_ALLOW, M_GET, M_OPTIONS, M_POST, -1);
    if ((errstatus = ap_discard_request_body(r)) != OK) {
        return errstatus;
    }
    return send_entry(ch, r, e, d);
}
