/* The miss path: open the file as the child user (so file permissions
 * decide), take its stat data from the descriptor, copy small bodies into
 * memory, and store the result unless a change was reported meanwhile. */
#include "fhc_module.h"
#include "mpmng_once.h"

#include "http_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

APLOG_USE_MODULE(fhcache);

/* Called by the core (under the child lock) once an entry is gone and no
 * request uses it any more. */
void fhc_payload_release(void *payload, void *ctx)
{
    fhc_child *ch = ctx;
    fhc_payload *pl = payload;

    if (pl->fh != FHC_NO_FILE) {
        fhc_os_close(pl->fh);
    }
    if (pl->watched && ch->ws) {
        fhc_watchset_release(ch->ws, pl->path);
    }
    if (pl->poll) {
        ch->polled--;
    }
    free(pl->body);
    free(pl);
}

/* The open file's stat data, as core's stat by name would give it. */
static apr_status_t describe(apr_os_file_t h, apr_finfo_t *fi, apr_pool_t *p)
{
    apr_file_t *f;
    apr_status_t rv = apr_os_file_put(&f, &h, APR_FOPEN_READ, p);

    if (rv == APR_SUCCESS) {
        rv = apr_file_info_get(fi, APR_FINFO_MIN, f);
        fi->valid &= ~fhc_os_fields_not_by_name;
    }
    return rv;
}

/* Open and describe r->filename; fills pl (handle, finfo, body).  APR
 * status. */
static apr_status_t load(fhc_child *ch, request_rec *r, fhc_payload *pl)
{
    apr_status_t rv = fhc_os_open(r->filename, &pl->fh);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (describe(pl->fh, &pl->finfo, r->pool) != APR_SUCCESS
        || pl->finfo.filetype != APR_REG) {
        return APR_EGENERAL;
    }
    pl->finfo.fname = pl->path;
    fhc_meta_make(&pl->meta, r, &pl->finfo);
    pl->poll = ch->fallback_all || !pl->watched
               || fhc_os_remote_fs(pl->fh, pl->path);
    pl->recheck = pl->poll || fhc_os_revalidate_notified;
    pl->recheck_every = fhc_conf_revalidate_every(ch->conf, !pl->poll);
    pl->checked = apr_time_now();
    if (pl->finfo.size <= ch->conf->mem_file_max) {
        pl->body = malloc(pl->finfo.size ? (size_t)pl->finfo.size : 1);
        if (!pl->body
            || fhc_os_read_all(pl->fh, pl->body, pl->finfo.size) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
        /* The body is all we serve: keep no handle. */
        fhc_os_close(pl->fh);
        pl->fh = FHC_NO_FILE;
    }
    return APR_SUCCESS;
}

static fhc_payload *new_payload(const char *path)
{
    size_t len = strlen(path);
    fhc_payload *pl = calloc(1, sizeof(*pl) + len);
    if (pl) {
        memcpy(pl->path, path, len + 1);
        pl->fh = FHC_NO_FILE;
    }
    return pl;
}

/* Free a payload that never made it into the cache (lock held). */
static void discard(fhc_child *ch, fhc_payload *pl)
{
    if (pl->poll) {
        ch->polled++;   /* release() counts it down again */
    }
    fhc_payload_release(pl, ch);
}

/* Returns the new entry, pinned, or NULL: then the caller declines and
 * httpd serves the request itself. */
fhc_entry *fhc_fill(fhc_child *ch, request_rec *r)
{
    fhc_payload *pl = new_payload(r->filename);
    fhc_ticket *t = NULL;
    fhc_entry *e = NULL;
    apr_status_t rv;
    int wrv = 0;

    if (!pl) {
        return NULL;
    }
    fhc_lock(ch);
    if (!fhc_cache_count_use(ch->cache, r->filename)) {
        fhc_unlock(ch);
        free(pl);
        return NULL;
    }
    /* Watch first, then open: a change after the watch is reported, and
     * one before it is what the open sees. */
    if (ch->ws && (wrv = fhc_watchset_acquire(ch->ws, pl->path)) == 0) {
        pl->watched = 1;
    }
    t = fhc_cache_begin(ch->cache, pl->path);
    fhc_unlock(ch);
    if (wrv == ENOSPC) {
        mpmng_log_once(&ch->logged_watch_limit, APLOG_MARK, APLOG_WARNING,
                       wrv, ch->s, "mod_fhcache: directory watch limit "
                       "reached; files in further directories are "
                       "revalidated by stat instead. %s",
                       fhc_os_hint_watch_limit);
    }

    rv = t ? load(ch, r, pl) : APR_ENOMEM;

    fhc_lock(ch);
    if (rv == APR_SUCCESS) {
        int crv = fhc_cache_commit(ch->cache, t, pl, pl->fh != FHC_NO_FILE ? 1 : 0,
                                   pl->body ? (uint64_t)pl->finfo.size : 0,
                                   apr_time_now(), &e);
        t = NULL;
        if (crv == FHC_COMMIT_OK) {
            if (pl->poll) {
                ch->polled++;
            }
            pl = NULL;
        }
    }
    else if (APR_STATUS_IS_EMFILE(rv) || APR_STATUS_IS_ENFILE(rv)) {
        fhc_stats st;
        fhc_cache_stats(ch->cache, &st);
        fhc_cache_shed(ch->cache, st.handles / 4 + 8);
    }
    fhc_cache_abandon(ch->cache, t);
    if (pl) {
        discard(ch, pl);
    }
    fhc_unlock(ch);
    if (APR_STATUS_IS_EMFILE(rv) || APR_STATUS_IS_ENFILE(rv)) {
        mpmng_log_once(&ch->logged_emfile, APLOG_MARK, APLOG_WARNING, rv,
                       ch->s, "mod_fhcache: out of file descriptors; evicted "
                       "cached files and served uncached. %s",
                       fhc_os_hint_handles);
    }
    if (e && ((fhc_payload *)fhc_entry_payload(e))->poll && !pl
        && !ch->fallback_all && ch->ws) {
        mpmng_log_once(&ch->logged_fs, APLOG_MARK, APLOG_NOTICE, 0, ch->s,
                       "mod_fhcache: some cached files are on a network or "
                       "FUSE filesystem (or could not be watched); they are "
                       "revalidated by stat %s (FHCacheRevalidate)",
                       fhc_conf_revalidate_words(ch->conf, 0, r->pool));
    }
    return e;
}
