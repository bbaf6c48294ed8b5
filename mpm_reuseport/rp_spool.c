/* Request bodies read ahead beyond memory: see rp_spool.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* O_TMPFILE, mkostemp */
#endif
#include "rp.h"
#include "rp_spool.h"

#include "apr_atomic.h"
#include "apr_file_info.h"
#include "apr_strings.h"
#include "http_config.h"
#include "mpmng_int.h"
#include "mpmng_once.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct rp_spool {
    apr_pool_t *pool;           /* the connection's */
    int fd;                     /* -1: no file open */
    apr_off_t end;              /* bytes written */
    unsigned refs;              /* spool_refs alive */
};

/* Shared by a bucket and its splits and copies. */
typedef struct spool_ref {
    apr_bucket_refcount rc;
    rp_spool *sp;
} spool_ref;

static apr_uint64_t limit = RP_SPOOL_DEFAULT_LIMIT;
static apr_uint64_t body_limit;  /* smallest LimitRequestBody; 0: none */
static const char *dir;         /* NULL: the system's temporary directory */
static const char *dir_used;    /* dir, or that one (from post_config) */
/* A directory the child cannot create files in is tried again after
 * this long (it may be fixed meanwhile). */
#define RP_SPOOL_RETRY apr_time_from_sec(60)

static volatile apr_time_t unusable_until;   /* 0: usable */
static volatile apr_uint32_t files_open;     /* spool files of this child */
static apr_uint32_t files_max;               /* a quarter of its descriptors
                                                (post_config) */
static apr_uint32_t said_unusable, said_write, said_busy;

/* ---- directives ------------------------------------------------------ */

const char *rp_spool_set_limit(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    int v;

    (void)dummy;
    if (err || (err = mpmng_cmd_int(cmd, arg, 0, INT_MAX, NULL, &v))) {
        return err;
    }
    limit = (apr_uint64_t)v;
    return NULL;
}

const char *rp_spool_set_dir(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    const char *path;
    struct stat st;

    (void)dummy;
    if (err) {
        return err;
    }
    path = ap_server_root_relative(cmd->pool, arg);
    if (!path || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a directory; name an "
                            "existing directory the server's User may write "
                            "to", cmd->cmd->name, arg);
    }
    dir = path;
    return NULL;
}

void rp_spool_pre_config(void)
{
    limit = RP_SPOOL_DEFAULT_LIMIT;
    dir = NULL;
}

/* The smallest nonzero LimitRequestBody below d. */
static apr_uint64_t smallest_body_limit(const ap_directive_t *d, apr_uint64_t least)
{
    for (; d; d = d->next) {
        apr_off_t v;
        char *end;
        if (d->directive && !strcasecmp(d->directive, "LimitRequestBody") && d->args
            && apr_strtoff(&v, d->args, &end, 10) == APR_SUCCESS && v > 0
            && (!least || (apr_uint64_t)v < least)) {
            least = (apr_uint64_t)v;
        }
        least = smallest_body_limit(d->first_child, least);
    }
    return least;
}

/* Children inherit the parent's limit (at least 16, at most 65536). */
static apr_uint32_t quarter_of_open_files(void)
{
    struct rlimit rl;
    rlim_t q = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
               ? rl.rlim_cur / 4 : 65536;

    return q < 16 ? 16 : q > 65536 ? 65536 : (apr_uint32_t)q;
}

int rp_spool_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                         server_rec *s)
{
    const char *tmp = NULL;

    (void)plog;
    (void)ptemp;
    (void)s;
    body_limit = smallest_body_limit(ap_conftree, 0);
    files_max = quarter_of_open_files();
    dir_used = dir ? dir : apr_temp_dir_get(&tmp, pconf) == APR_SUCCESS ? tmp : "/tmp";
    return OK;
}

apr_uint64_t rp_spool_limit(void)
{
    if (unusable_until) {
        if (apr_time_now() < unusable_until) {
            return 0;
        }
        unusable_until = 0;
    }
    return body_limit && body_limit < limit ? body_limit : limit;
}

/* ---- the file ------------------------------------------------------------ */

/* An unlinked file only this process can reach, not inherited by CGI
 * children. */
static int open_unlinked(const char *where, apr_pool_t *p)
{
    char *path;
    int fd = open(where, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) {
        return fd;
    }
    /* A file system without O_TMPFILE. */
    path = apr_pstrcat(p, where, "/mpm-reuseport-body.XXXXXX", NULL);
    if ((fd = mkostemp(path, O_CLOEXEC)) >= 0) {
        unlink(path);
    }
    return fd;
}

/* Each waiting upload holds a file besides its socket: at most a quarter
 * of the child's descriptors go to them, so accepting never runs out. */
static int take_file_slot(const server_rec *s)
{
    if (apr_atomic_inc32(&files_open) < files_max) {
        return 1;
    }
    apr_atomic_dec32(&files_open);
    mpmng_log_once(&said_busy, APLOG_MARK, APLOG_WARNING, 0, s,
                   RP_LOG_TAG "%u request bodies wait in spool files in this child, "
                   "a quarter of its open-files limit; more wait in workers meanwhile "
                   "(raise the limit, ulimit -n, for more)", files_max);
    return 0;
}

static void close_file(rp_spool *sp)
{
    if (sp->fd >= 0) {
        close(sp->fd);
        sp->fd = -1;
        apr_atomic_dec32(&files_open);
    }
    sp->end = 0;
}

static apr_status_t spool_close(void *data)
{
    close_file(data);
    return APR_SUCCESS;
}

/* The connection's spool file, opened if it has none now. */
static apr_status_t open_file(rp_spool *sp, conn_rec *c)
{
    const char *where = dir_used;
    apr_status_t rv;

    if (sp->fd >= 0) {
        return APR_SUCCESS;
    }
    if (!take_file_slot(c->base_server)) {
        return APR_EMFILE;
    }
    if ((sp->fd = open_unlinked(where, c->pool)) >= 0) {
        return APR_SUCCESS;
    }
    rv = APR_FROM_OS_ERROR(errno);
    apr_atomic_dec32(&files_open);
    if (errno == EACCES || errno == ENOENT || errno == ENOTDIR || errno == EROFS) {
        unusable_until = apr_time_now() + RP_SPOOL_RETRY;
        mpmng_log_once(&said_unusable, APLOG_MARK, APLOG_WARNING, rv, c->base_server,
                       RP_LOG_TAG "cannot create a file in %s for request bodies read "
                       "ahead (ReusePortBodyReadAheadDir); bodies over 64 KiB wait "
                       "in a worker until this is fixed: make the directory writable "
                       "by the server's User, or name another", where);
    }
    return rv;
}

static rp_spool *spool_create(conn_rec *c)
{
    rp_spool *sp = apr_pcalloc(c->pool, sizeof(*sp));

    sp->pool = c->pool;
    sp->fd = -1;
    apr_pool_cleanup_register(c->pool, sp, spool_close, apr_pool_cleanup_null);
    return sp;
}

/* All of iov (cnt entries) at offset at; iov is used up on the way. */
static apr_status_t write_at(rp_spool *sp, struct iovec *iov, int cnt, apr_off_t at)
{
    while (cnt) {
        ssize_t n = pwritev(sp->fd, iov, cnt, at);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            return n < 0 ? APR_FROM_OS_ERROR(errno) : APR_EGENERAL;
        }
        at += n;
        while (cnt && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return APR_SUCCESS;
}

static apr_status_t read_at(rp_spool *sp, char *buf, apr_size_t len, apr_off_t at)
{
    while (len) {
        ssize_t n = pread(sp->fd, buf, len, at);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            return n < 0 ? APR_FROM_OS_ERROR(errno) : APR_EOF;
        }
        buf += n;
        len -= (apr_size_t)n;
        at += n;
    }
    return APR_SUCCESS;
}

/* ---- the bucket type --------------------------------------------------- */

static void spool_bucket_destroy(void *data)
{
    spool_ref *ref = data;
    rp_spool *sp = ref->sp;

    if (apr_bucket_shared_destroy(ref)) {
        apr_bucket_free(ref);
        /* Nothing refers to the bytes any more: the file goes (a spooled
         * body waited for a slow client, so opening another costs little
         * beside it), and an idle connection holds neither disk nor
         * descriptor. */
        if (--sp->refs == 0) {
            close_file(sp);
        }
    }
}

/* Bytes read back at once: a few large reads rather than many small ones
 * (httpd takes a body 8 KiB at a time; those pieces are cut from memory). */
#define RP_SPOOL_LOAD (64 * 1024)

/* b becomes a heap bucket of its first len bytes, read from the file. */
static apr_status_t to_heap(apr_bucket *b, apr_size_t len)
{
    spool_ref *ref = b->data;
    char *buf = apr_bucket_alloc(len ? len : 1, b->list);
    apr_status_t rv;

    if ((rv = read_at(ref->sp, buf, len, b->start)) != APR_SUCCESS) {
        apr_bucket_free(buf);
        return rv;
    }
    if (b->length > len) {
        apr_bucket_split(b, len);
    }
    spool_bucket_destroy(ref);
    apr_bucket_heap_make(b, buf, len, apr_bucket_free);
    return APR_SUCCESS;
}

static apr_status_t spool_bucket_read(apr_bucket *b, const char **str, apr_size_t *len,
                                      apr_read_type_e block)
{
    apr_status_t rv;

    (void)block;
    if ((rv = rp_spool_bucket_load(b)) != APR_SUCCESS) {
        return rv;
    }
    return apr_bucket_read(b, str, len, APR_BLOCK_READ);
}

apr_status_t rp_spool_bucket_load(apr_bucket *b)
{
    return to_heap(b, b->length < RP_SPOOL_LOAD ? b->length : RP_SPOOL_LOAD);
}

/* Kept past the connection (its pool is not an ancestor of p): the bytes
 * move to memory. */
static apr_status_t spool_bucket_setaside(apr_bucket *b, apr_pool_t *p)
{
    spool_ref *ref = b->data;

    return apr_pool_is_ancestor(ref->sp->pool, p) ? APR_SUCCESS : to_heap(b, b->length);
}

static const apr_bucket_type_t spool_bucket_type = {
    "RP_SPOOL", 5, APR_BUCKET_DATA,
    spool_bucket_destroy,
    spool_bucket_read,
    spool_bucket_setaside,
    apr_bucket_shared_split,
    apr_bucket_shared_copy
};

int rp_spool_bucket_is(const apr_bucket *b)
{
    return b->type == &spool_bucket_type;
}

static void add_bytes(rp_spool *sp, apr_bucket_brigade *held, apr_off_t at, apr_size_t len)
{
    apr_bucket *last = APR_BRIGADE_LAST(held);
    spool_ref *ref;
    apr_bucket *b;

    if (!APR_BRIGADE_EMPTY(held) && rp_spool_bucket_is(last)
        && ((spool_ref *)last->data)->sp == sp && last->start + (apr_off_t)last->length == at) {
        last->length += len;    /* the bytes right after it */
        return;
    }
    ref = apr_bucket_alloc(sizeof(*ref), held->bucket_alloc);
    ref->sp = sp;
    sp->refs++;
    b = apr_bucket_alloc(sizeof(*b), held->bucket_alloc);
    APR_BUCKET_INIT(b);
    b->free = apr_bucket_free;
    b->list = held->bucket_alloc;
    b = apr_bucket_shared_make(b, ref, at, len);
    b->type = &spool_bucket_type;
    APR_BRIGADE_INSERT_TAIL(held, b);
}

/* Up to this many buckets' bytes go in one pwritev(). */
#define RP_SPOOL_IOV 64

static void log_write_failed(conn_rec *c, apr_status_t rv)
{
    mpmng_log_once(&said_write, APLOG_MARK, APLOG_WARNING, rv, c->base_server,
                   RP_LOG_TAG "writing a request body read ahead to %s failed "
                   "(ReusePortBodyReadAheadDir: full?); such bodies wait in a "
                   "worker meanwhile", dir_used);
}

apr_status_t rp_spool_append(conn_rec *c, rp_spool **spp, apr_bucket_brigade *bb,
                             apr_bucket_brigade *held)
{
    rp_spool *sp = *spp;
    apr_status_t rv = APR_SUCCESS;
    struct iovec iov[RP_SPOOL_IOV];
    apr_bucket *b = APR_BRIGADE_FIRST(bb);
    apr_off_t at;

    if (!sp) {
        sp = *spp = spool_create(c);
    }
    if ((rv = open_file(sp, c)) != APR_SUCCESS) {
        return rv;
    }
    at = sp->end;
    while (b != APR_BRIGADE_SENTINEL(bb)) {
        apr_off_t from = at;
        int cnt = 0;
        for (; b != APR_BRIGADE_SENTINEL(bb) && cnt < RP_SPOOL_IOV; b = APR_BUCKET_NEXT(b)) {
            const char *s;
            apr_size_t len;
            if ((rv = apr_bucket_read(b, &s, &len, APR_BLOCK_READ)) != APR_SUCCESS) {
                return rv;      /* bytes in memory: cannot fail */
            }
            iov[cnt].iov_base = (void *)s;
            iov[cnt++].iov_len = len;
            at += (apr_off_t)len;
        }
        if ((rv = write_at(sp, iov, cnt, from)) != APR_SUCCESS) {
            log_write_failed(c, rv);
            if (!sp->refs) {
                close_file(sp);
            }
            return rv;
        }
    }
    if (at > sp->end) {
        add_bytes(sp, held, sp->end, (apr_size_t)(at - sp->end));
        sp->end = at;
    }
    apr_brigade_cleanup(bb);
    return APR_SUCCESS;
}
