/* Files sent over TLS are read in whole TLS records, not mapped.
 *
 * Without TLS, core's output filter hands a file to the kernel (sendfile).
 * With TLS, mod_ssl reads the file to encrypt it: APR then maps it for each
 * response (EnableMMAP, the default) and unmaps it afterwards, and munmap
 * in a threaded child stops every CPU running one of its threads to flush
 * its TLB; or it reads 8,000 bytes at a time with a seek before each read
 * (EnableMMAP Off), one TLS record of 8,000 bytes per read.  A connection
 * output filter above mod_ssl gives the file buckets of TLS connections a
 * read of their own: pread() of up to one full TLS record (16 KiB) at the
 * bucket's offset, one system call per record, nothing mapped.  The
 * buckets stay file buckets in all else (split, copy, set aside, the
 * file's lifetime), so nothing between here and mod_ssl changes.
 * Added by rp_conn.c to connections that speak TLS. */
#include "rp.h"
#include "rp_tlsbody.h"

#include "apr_buckets.h"
#include "apr_portable.h"
#include "util_filter.h"

#include <errno.h>
#include <unistd.h>

/* TLS's largest record (RFC 8446, 5.1). */
#define RP_TLS_RECORD (16 * 1024)

static ap_filter_rec_t *tlsbody_filter;
static apr_bucket_type_t record_file_type;  /* set up at registration */

static apr_status_t read_record(apr_bucket *b, const char **str,
                                apr_size_t *len, apr_read_type_e block)
{
    apr_bucket_file *a = b->data;
    apr_size_t want = b->length < RP_TLS_RECORD ? b->length : RP_TLS_RECORD;
    apr_os_file_t fd;
    char *buf;
    ssize_t got;

    (void)block;
    if (want == 0) {  /* an empty file's bucket: nothing to read */
        apr_bucket_type_file.destroy(a);
        apr_bucket_immortal_make(b, "", 0);
        *str = "";
        *len = 0;
        return APR_SUCCESS;
    }
    if (apr_os_file_get(&fd, a->fd) != APR_SUCCESS) {
        return APR_EBADF;
    }
    buf = apr_bucket_alloc(want, b->list);
    do {
        got = pread(fd, buf, want, (off_t)b->start);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) {
        apr_bucket_free(buf);
        return got == 0 ? APR_EOF : APR_FROM_OS_ERROR(errno);
    }
    if ((apr_size_t)got < b->length) {
        /* The rest stays a file bucket of ours and takes over the file. */
        apr_bucket *rest = apr_bucket_alloc(sizeof(*rest), b->list);
        rest->type = b->type;
        rest->data = a;
        rest->start = b->start + (apr_off_t)got;
        rest->length = b->length - (apr_size_t)got;
        rest->free = apr_bucket_free;
        rest->list = b->list;
        APR_BUCKET_INSERT_AFTER(b, rest);
    }
    else {
        apr_bucket_type_file.destroy(a);
    }
    apr_bucket_heap_make(b, buf, (apr_size_t)got, apr_bucket_free);
    *str = buf;
    *len = (apr_size_t)got;
    return APR_SUCCESS;
}

static apr_status_t tlsbody_out(ap_filter_t *f, apr_bucket_brigade *bb)
{
    apr_bucket *b;

    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = APR_BUCKET_NEXT(b)) {
        if (APR_BUCKET_IS_FILE(b)) {
            b->type = &record_file_type;
        }
    }
    return ap_pass_brigade(f->next, bb);
}

void rp_tlsbody_add(conn_rec *c)
{
    ap_add_output_filter_handle(tlsbody_filter, NULL, NULL, c);
}

void rp_tlsbody_register(void)
{
    record_file_type = apr_bucket_type_file;
    record_file_type.name = "RP_TLS_RECORD_FILE";
    record_file_type.read = read_record;
    /* Above both of mod_ssl's output filters: its coalescing one (+ 4)
     * reads small files into its buffer, its TLS one (+ 5) the others. */
    tlsbody_filter = ap_register_output_filter("RP_TLS_BODY", tlsbody_out, NULL,
                                               AP_FTYPE_CONNECTION + 3);
}
