/* The buckets of cached bodies: one over an in-memory body, one over a
 * cached descriptor (read at explicit offsets, below).
 *
 * The in-memory one holds a pin of the cache entry for as long as any copy
 * of the bucket exists, so the body stays valid however long the response
 * sits in output buffers, even after the entry was invalidated; no copy
 * of the bytes is made. */
#include "fhc_module.h"

#include "apr_buckets.h"
#include "util_filter.h"

typedef struct fhc_mem {
    apr_bucket_refcount refcount;   /* first: used by apr_bucket_shared_* */
    fhc_child *ch;
    fhc_entry *e;
    const char *base;
} fhc_mem;

static apr_status_t mem_read(apr_bucket *b, const char **str, apr_size_t *len,
                             apr_read_type_e block)
{
    fhc_mem *m = b->data;
    *str = m->base + b->start;
    *len = b->length;
    return APR_SUCCESS;
}

static void mem_destroy(void *data)
{
    fhc_mem *m = data;
    if (apr_bucket_shared_destroy(m)) {
        fhc_lock(m->ch);
        fhc_entry_unpin(m->ch->cache, m->e);
        fhc_unlock(m->ch);
        apr_bucket_free(m);
    }
}

static const apr_bucket_type_t fhc_bucket_type = {
    "FHCACHE", 5, APR_BUCKET_DATA,
    mem_destroy,
    mem_read,
    apr_bucket_setaside_noop,   /* the pin keeps the bytes alive */
    apr_bucket_shared_split,
    apr_bucket_shared_copy
};

apr_bucket *fhc_bucket_create(fhc_child *ch, fhc_entry *e, const char *base,
                              apr_size_t len, apr_bucket_alloc_t *list)
{
    apr_bucket *b = apr_bucket_alloc(sizeof(*b), list);
    fhc_mem *m = apr_bucket_alloc(sizeof(*m), list);

    APR_BUCKET_INIT(b);
    b->free = apr_bucket_free;
    b->list = list;
    m->ch = ch;
    m->e = e;
    m->base = base;
    b = apr_bucket_shared_make(b, m, 0, len);
    b->type = &fhc_bucket_type;
    return b;
}

/* A bucket over a cached descriptor, read at explicit offsets.
 *
 * The descriptor's open file description, and so its file offset, is
 * shared by every thread of the child.  APR's file bucket maps the file at
 * the bucket's offset and, when the map fails, seeks the descriptor and
 * reads; APR 1.7 maps only page-aligned offsets, and file buckets are
 * split anywhere (mod_ssl's coalescing filter after 8 KiB less the
 * headers, a Range request, mod_ratelimit), so two threads would read at
 * each other's offsets.  This bucket reads with fhc_os_read_at() (pread)
 * instead: one system call per FHC_READ_SIZE bytes (one full TLS record,
 * as mpm_reuseport's rp_tlsbody.c reads file buckets over TLS), nothing
 * mapped, no offset used.
 *
 * Lifetime: a bucket that owns a pin keeps it for as long as any copy of
 * it exists, so the descriptor stays open however long the response waits,
 * even after an invalidation.  A bucket for sendfile owns none: the
 * request's pin lasts as long as its pool, which core destroys only after
 * the response was written (EOR bucket), as it does with a file core's
 * default handler opened; that is what the file buckets it turns into
 * (below) need. */
#define FHC_READ_SIZE (16 * 1024)
/* core_filters.c's AP_MIN_SENDFILE_BYTES: core reads smaller file buckets. */
#define FHC_MIN_SENDFILE 256

typedef struct fhc_fd {
    apr_bucket_refcount refcount;   /* first: used by apr_bucket_shared_* */
    fhc_child *ch;
    fhc_entry *e;                   /* pinned by this bucket, or NULL */
    apr_os_file_t fh;
    apr_size_t read_size;
    apr_pool_t *sendfile_pool;      /* request pool if sendfile, else NULL */
    apr_file_t *sendfile_file;      /* its wrapper of fh, made when needed */
} fhc_fd;

static void fd_destroy(void *data)
{
    fhc_fd *d = data;
    if (apr_bucket_shared_destroy(d)) {
        if (d->e) {
            fhc_lock(d->ch);
            fhc_entry_unpin(d->ch->cache, d->e);
            fhc_unlock(d->ch);
        }
        apr_bucket_free(d);
    }
}

static apr_status_t fd_read(apr_bucket *b, const char **str, apr_size_t *len,
                            apr_read_type_e block)
{
    fhc_fd *d = b->data;
    apr_size_t want = b->length < d->read_size ? b->length : d->read_size;
    apr_size_t got = want;
    apr_status_t rv;
    char *buf;

    (void)block;
    if (want == 0) {    /* an empty file: nothing to read */
        fd_destroy(d);
        apr_bucket_immortal_make(b, "", 0);
        *str = "";
        *len = 0;
        return APR_SUCCESS;
    }
    buf = apr_bucket_alloc(want, b->list);
    rv = fhc_os_read_at(d->fh, buf, &got, b->start);
    if (rv != APR_SUCCESS) {
        apr_bucket_free(buf);
        *str = NULL;
        *len = 0;
        return rv;          /* APR_EOF: the file shrank since it was cached */
    }
    if (got < b->length) {
        /* The rest stays a bucket of ours, sharing the data. */
        apr_bucket *rest = apr_bucket_alloc(sizeof(*rest), b->list);
        *rest = *b;
        rest->start = b->start + (apr_off_t)got;
        rest->length = b->length - got;
        APR_BUCKET_INSERT_AFTER(b, rest);
    }
    else {
        fd_destroy(d);
    }
    apr_bucket_heap_make(b, buf, got, apr_bucket_free);
    *str = buf;
    *len = got;
    return APR_SUCCESS;
}

static const apr_bucket_type_t fhc_fd_bucket_type = {
    "FHCACHE_FILE", 5, APR_BUCKET_DATA,
    fd_destroy,
    fd_read,
    apr_bucket_setaside_noop,   /* a pin keeps the descriptor open */
    apr_bucket_shared_split,
    apr_bucket_shared_copy
};

apr_bucket *fhc_fd_bucket_create(fhc_child *ch, fhc_entry *e, apr_os_file_t fh,
                                 apr_size_t len, apr_size_t read_size,
                                 apr_pool_t *sendfile_pool,
                                 apr_bucket_alloc_t *list)
{
    apr_bucket *b = apr_bucket_alloc(sizeof(*b), list);
    fhc_fd *d = apr_bucket_alloc(sizeof(*d), list);

    APR_BUCKET_INIT(b);
    b->free = apr_bucket_free;
    b->list = list;
    d->ch = ch;
    d->e = sendfile_pool ? NULL : e;
    d->fh = fh;
    d->read_size = read_size ? read_size : FHC_READ_SIZE;
    d->sendfile_pool = sendfile_pool;
    d->sendfile_file = NULL;
    b = apr_bucket_shared_make(b, d, 0, len);
    b->type = &fhc_fd_bucket_type;
    return b;
}

/* Sendfile.  Core sends only real file buckets with sendfile, and every
 * filter above it could read one by seek + read: so our buckets travel
 * down as they are, and this connection filter, right above core (below
 * mod_ssl, which reads them all), turns those of sendfile requests into
 * file buckets over the shared descriptor, for sendfile (which takes an
 * explicit offset).  Not those under core's sendfile minimum: core would
 * read them.  What remains: a partial sendfile can leave core a tail under
 * that minimum, which it then reads through the shared offset. */
static ap_filter_rec_t *sendfile_filter;

static apr_status_t sendfile_out(ap_filter_t *f, apr_bucket_brigade *bb)
{
    apr_bucket *b, *next;

    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb); b = next) {
        fhc_fd *d = b->data;
        apr_bucket *fb;

        next = APR_BUCKET_NEXT(b);
        if (b->type != &fhc_fd_bucket_type || !d->sendfile_pool
            || b->length < FHC_MIN_SENDFILE) {
            continue;
        }
        /* No APR_FOPEN_XTHREAD (it would reopen by name, and there is
         * none); APR_FOPEN_NOCLEANUP is implied: never closes fh. */
        if (!d->sendfile_file
            && apr_os_file_put(&d->sendfile_file, &d->fh,
                               APR_FOPEN_READ | APR_FOPEN_BINARY
                               | APR_FOPEN_SENDFILE_ENABLED,
                               d->sendfile_pool) != APR_SUCCESS) {
            d->sendfile_file = NULL;
            continue;
        }
        fb = apr_bucket_file_create(d->sendfile_file, b->start, b->length,
                                    d->sendfile_pool, f->c->bucket_alloc);
        APR_BUCKET_INSERT_BEFORE(b, fb);
        apr_bucket_delete(b);
    }
    return ap_pass_brigade(f->next, bb);
}

void fhc_sendfile_filter_register(void)
{
    /* Below mod_ssl (+ 4, + 5) and mpm_reuseport's filters, above core
     * (AP_FTYPE_NETWORK). */
    sendfile_filter = ap_register_output_filter("FHCACHE_SENDFILE",
                                                sendfile_out, NULL,
                                                AP_FTYPE_NETWORK - 1);
}

void fhc_sendfile_filter_add(request_rec *r)
{
    conn_rec *c = r->connection;

    if (!ap_get_module_config(c->conn_config, &fhcache_module)) {
        /* With r: the chain of the request under way is linked to it. */
        ap_add_output_filter_handle(sendfile_filter, NULL, r, c);
        ap_set_module_config(c->conn_config, &fhcache_module,
                             sendfile_filter);
    }
}
