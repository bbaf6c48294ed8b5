/* The httpd seam (include/mpmng_httpd.h): each function as this httpd
 * release offers it.  Every version test of mpm-ng is in this file and its
 * header. */
#include "mpmng_httpd.h"

#include "ap_mpm.h"
#include "mpm_common.h"
#include "http_connection.h"
#include "http_protocol.h"
#include "apr_optional.h"
#include "apr_tables.h"

#include <string.h>

#if MPMNG_HAS_HTTP_SSL
#include "http_ssl.h"
#endif

int mpmng_mpm_query_new(int code, int *result)
{
#if MPMNG_HAS_CAN_WAITIO
    if (code == AP_MPMQ_CAN_WAITIO) {
        *result = 1;
        return 1;
    }
#endif
    (void)code;
    (void)result;
    return 0;
}

/* ---- threads ---------------------------------------------------------- */

apr_status_t mpmng_thread_create(apr_thread_t **thd, apr_threadattr_t *attr,
                                 apr_thread_start_t fn, void *arg,
                                 apr_pool_t *p)
{
#if MPMNG_HAS_AP_THREAD
    return ap_thread_create(thd, attr, fn, arg, p);
#else
    return apr_thread_create(thd, attr, fn, arg, p);
#endif
}

void mpmng_thread_main_create(apr_pool_t *p)
{
#if MPMNG_HAS_AP_THREAD && AP_HAS_THREAD_LOCAL
    apr_thread_t *main_thd;

    ap_thread_main_create(&main_thd, p);
#else
    (void)p;
#endif
}

void mpmng_thread_after_fork(void)
{
#if MPMNG_HAS_AP_THREAD && AP_HAS_THREAD_LOCAL
    ap_thread_current_after_fork();
#endif
}

/* ---- connections ------------------------------------------------------ */

int mpmng_pre_connection(conn_rec *c, void *csd)
{
#if MPMNG_HAS_PRE_CONNECTION
    return ap_pre_connection(c, csd);
#else
    int rv = ap_run_pre_connection(c, csd);

    if (rv != OK && rv != DONE) {
        c->aborted = 1;
    }
    return rv;
#endif
}

#if !MPMNG_HAS_HTTP_SSL
APR_DECLARE_OPTIONAL_FN(int, ssl_is_https, (conn_rec *));
static APR_OPTIONAL_FN_TYPE(ssl_is_https) *found_ssl_is_https;
#endif

int mpmng_conn_is_ssl(conn_rec *c)
{
#if MPMNG_HAS_HTTP_SSL
    return ap_ssl_conn_is_ssl(c);
#else
    return found_ssl_is_https && found_ssl_is_https(c);
#endif
}

/* After every module's register_hooks: optional functions are there. */
static int find_optional_fns(apr_pool_t *pconf, apr_pool_t *plog,
                             apr_pool_t *ptemp, server_rec *s)
{
#if !MPMNG_HAS_HTTP_SSL
    found_ssl_is_https = APR_RETRIEVE_OPTIONAL_FN(ssl_is_https);
#endif
    return OK;
}

void mpmng_httpd_register_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_post_config(find_optional_fns, NULL, NULL, APR_HOOK_REALLY_FIRST);
}

/* ---- child_stopping --------------------------------------------------- */

int mpmng_hook_child_stopping(mpmng_child_stopping_fn *fn, int order)
{
#if MPMNG_HAS_CHILD_STOPPING
    ap_hook_child_stopping(fn, NULL, NULL, order);
    return 1;
#else
    (void)fn;
    (void)order;
    return 0;
#endif
}

void mpmng_run_child_stopping(apr_pool_t *pchild, int graceful)
{
#if MPMNG_HAS_CHILD_STOPPING
    ap_run_child_stopping(pchild, graceful);
#else
    (void)pchild;
    (void)graceful;
#endif
}

/* ---- core's per-directory configuration ------------------------------- */

apr_size_t mpmng_read_buf_size(const core_dir_config *d)
{
#if MPMNG_HAS_READ_BUF_SIZE
    return d->read_buf_size;
#else
    (void)d;
    return 0;
#endif
}

int mpmng_etag_reads_file(etag_components_t bits)
{
#if MPMNG_HAS_ETAG_EX
    return (bits & ETAG_DIGEST) != 0;
#else
    (void)bits;
    return 0;
#endif
}

/* ---- ETags ------------------------------------------------------------ */

static int strong_etag_asked(const request_rec *r)
{
#if MPMNG_HAS_ETAG_EX
    return AP_REQUEST_IS_STRONG_ETAG(r) != 0;
#else
    (void)r;
    return 0;
#endif
}

#define MPMNG_ETAG_LATE (2 * APR_USEC_PER_SEC)  /* strong by every rule */

const char *mpmng_etag_of_file(request_rec *r, const apr_finfo_t *fi)
{
    const core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    etag_components_t bits = (d->etag_bits & ~d->etag_remove) | d->etag_add;
#if MPMNG_HAS_ETAG_EX
    etag_rec er;
#else
    request_rec late;
#endif

    if (strong_etag_asked(r) || mpmng_etag_reads_file(bits)) {
        return NULL;
    }
#if MPMNG_HAS_ETAG_EX
    memset(&er, 0, sizeof(er));
    er.finfo = (apr_finfo_t *)fi;
    er.pathname = r->filename;
    er.request_time = fi->mtime + MPMNG_ETAG_LATE;
    return ap_make_etag_ex(r, &er);
#else
    /* ap_make_etag() takes the file and the time from the request: a copy
     * with this file's, and notes of its own (FileETag None notes there). */
    late = *r;
    late.finfo = *fi;
    late.mtime = fi->mtime;
    late.request_time = fi->mtime + MPMNG_ETAG_LATE;
    late.notes = apr_table_make(r->pool, 1);
    return ap_make_etag(&late, 0);
#endif
}

int mpmng_etag_strong_now(const request_rec *r)
{
#if MPMNG_HAS_ETAG_EX
    /* ap_make_etag_ex: weak while less than a second after the mtime. */
    return !strong_etag_asked(r)
           && r->request_time - r->finfo.mtime >= APR_USEC_PER_SEC;
#else
    /* ap_make_etag: strong only more than a second after r->mtime, which
     * is also the mtime in the tag. */
    return r->mtime == r->finfo.mtime
           && r->request_time - r->mtime > APR_USEC_PER_SEC;
#endif
}
