/* A bucket over a cached in-memory body.  It holds a pin of the cache
 * entry for as long as any copy of the bucket exists, so the body stays
 * valid however long the response sits in output buffers, even after the
 * entry was invalidated; no copy of the bytes is made. */
#include "fhc_module.h"

#include "apr_buckets.h"

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
