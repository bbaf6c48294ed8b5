/* Response metadata made once per file version: the Last-Modified, ETag
 * and Content-Length values that core's default handler formats for every
 * request are made by the same httpd functions when an entry is filled,
 * and each hit copies them (no date or number formatting, no clock read:
 * gmtime_r even takes a process-wide lock in glibc).
 *
 * Wherever httpd's answer could differ from the stored one, a request
 * takes httpd's functions as before: the file changed less than a second
 * before the request (weak ETag), an mtime not before the request
 * (Last-Modified is capped at the current time), a negotiated response (its
 * variant list validator goes into the ETag), a module asking for strong
 * ETags, or a scope with other FileETag settings than the filling one. */
#include "fhc_module.h"

#include "http_core.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"

#include <string.h>

etag_components_t fhc_etag_bits(const core_dir_config *d)
{
    return (d->etag_bits & ~d->etag_remove) | d->etag_add;
}

static void make_etag(fhc_meta *m, request_rec *r, apr_finfo_t *fi)
{
    const core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const char *etag;

    m->etag_ok = 0;
    m->etag_bits = fhc_etag_bits(d);
    /* The strong form, used only by requests made late enough after the
     * mtime (httpd makes it weak before); none where digests read the
     * file or a module asks for strong ETags. */
    etag = mpmng_etag_of_file(r, fi);
    if (etag && *etag && strlen(etag) < sizeof(m->etag)) {
        strcpy(m->etag, etag);
        m->etag_ok = 1;
    }
}

void fhc_meta_make(fhc_meta *m, request_rec *r, apr_finfo_t *fi)
{
    apr_rfc822_date(m->last_modified, fi->mtime);
    apr_snprintf(m->content_length, sizeof(m->content_length),
                 "%" APR_OFF_T_FMT, fi->size);
    make_etag(m, r, fi);
}

static int etag_applies(const fhc_meta *m, request_rec *r)
{
    const core_dir_config *d = ap_get_core_module_config(r->per_dir_config);

    return m->etag_ok && !r->vlist_validator && mpmng_etag_strong_now(r)
           && fhc_etag_bits(d) == m->etag_bits;
}

static void set_copy(request_rec *r, const char *name, const char *value)
{
    apr_table_setn(r->headers_out, name, apr_pstrdup(r->pool, value));
}

void fhc_meta_headers(request_rec *r, const fhc_meta *m)
{
    ap_update_mtime(r, r->finfo.mtime);
    /* httpd reads the clock only for an mtime at or after the request. */
    if (r->mtime == r->finfo.mtime && r->mtime < r->request_time) {
        if (!r->assbackwards) {
            set_copy(r, "Last-Modified", m->last_modified);
        }
    }
    else {
        ap_set_last_modified(r);
    }
    if (etag_applies(m, r)) {
        set_copy(r, "ETag", m->etag);
    }
    else {
        ap_set_etag(r);
    }
    ap_set_accept_ranges(r);
    r->clength = r->finfo.size;
    set_copy(r, "Content-Length", m->content_length);
}
