/* The miss path: open the file as the child user (so file permissions
 * decide), take its stat data from the descriptor, copy small bodies into
 * memory, and store the result unless a change was reported meanwhile. */
#include "fhc_module.h"

#include "http_log.h"
#include "apr_portable.h"
#include "apr_strings.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#include <linux/magic.h>
#endif

APLOG_USE_MODULE(fhcache);

/* Called by the core (under the child lock) once an entry is gone and no
 * request uses it any more. */
void fhc_payload_release(void *payload, void *ctx)
{
    fhc_child *ch = ctx;
    fhc_payload *pl = payload;

    if (pl->fd >= 0) {
        close(pl->fd);
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

/* Filesystems whose change notifications do not cover changes made
 * elsewhere (other clients, the FUSE daemon): revalidate by stat. */
static int untrusted_fs(int fd)
{
#ifdef __linux__
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0) {
        return 1;
    }
    switch ((unsigned long)sf.f_type) {
    case NFS_SUPER_MAGIC:
    case SMB_SUPER_MAGIC:
    case 0xFF534D42UL:      /* CIFS */
    case 0xFE534D42UL:      /* SMB2 */
    case 0x65735546UL:      /* FUSE */
    case 0x00C36400UL:      /* Ceph */
    case V9FS_MAGIC:
    case AFS_SUPER_MAGIC:
    case CODA_SUPER_MAGIC:
        return 1;
    }
    return 0;
#else
    return 1;
#endif
}

static int read_all(int fd, char *buf, apr_off_t size)
{
    apr_off_t got = 0;
    while (got < size) {
        ssize_t n = pread(fd, buf + got, (size_t)(size - got), got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return 0;   /* error, or the file shrank under us */
        }
        got += n;
    }
    return 1;
}

static void log_once(fhc_child *ch, int *flag, int level, int err,
                     const char *msg)
{
    if (!*flag) {
        *flag = 1;
        ap_log_error(APLOG_MARK, level, err, ch->s, "%s", msg);
    }
}

/* Open and describe r->filename; fills pl (fd, finfo, body).  APR status. */
static apr_status_t load(fhc_child *ch, request_rec *r, fhc_payload *pl)
{
    apr_file_t *f;
    int fd;

    /* O_NONBLOCK: never hang on a FIFO swapped in after the stat. */
    fd = open(r->filename, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        return errno;
    }
    pl->fd = fd;
    if (apr_os_file_put(&f, &fd, APR_FOPEN_READ, r->pool) != APR_SUCCESS
        || apr_file_info_get(&pl->finfo, APR_FINFO_MIN, f) != APR_SUCCESS
        || pl->finfo.filetype != APR_REG) {
        return APR_EGENERAL;
    }
    pl->finfo.fname = pl->path;
    pl->poll = ch->fallback_all || !pl->watched || untrusted_fs(fd);
    pl->checked = apr_time_now();
    if (pl->finfo.size <= ch->conf->mem_file_max) {
        pl->body = malloc(pl->finfo.size ? (size_t)pl->finfo.size : 1);
        if (!pl->body || !read_all(fd, pl->body, pl->finfo.size)) {
            return APR_EGENERAL;
        }
        /* The body is all we serve: keep no descriptor. */
        close(pl->fd);
        pl->fd = -1;
    }
    return APR_SUCCESS;
}

static fhc_payload *new_payload(const char *path)
{
    size_t len = strlen(path);
    fhc_payload *pl = calloc(1, sizeof(*pl) + len);
    if (pl) {
        memcpy(pl->path, path, len + 1);
        pl->fd = -1;
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
        log_once(ch, &ch->logged_watch_limit, APLOG_WARNING, wrv,
                 "mod_fhcache: directory watch limit reached; files in "
                 "further directories are revalidated by stat instead. "
                 "Raise FHCacheMaxWatches or fs.inotify.max_user_watches");
    }

    rv = t ? load(ch, r, pl) : APR_ENOMEM;

    fhc_lock(ch);
    if (rv == APR_SUCCESS) {
        int crv = fhc_cache_commit(ch->cache, t, pl, pl->fd >= 0 ? 1 : 0,
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
    else if (rv == EMFILE || rv == ENFILE) {
        fhc_stats st;
        fhc_cache_stats(ch->cache, &st);
        fhc_cache_shed(ch->cache, st.handles / 4 + 8);
    }
    fhc_cache_abandon(ch->cache, t);
    if (pl) {
        discard(ch, pl);
    }
    fhc_unlock(ch);
    if (rv == EMFILE || rv == ENFILE) {
        log_once(ch, &ch->logged_emfile, APLOG_WARNING, rv,
                 "mod_fhcache: out of file descriptors; evicted cached files "
                 "and served uncached. Lower FHCacheMaxDescriptors or raise "
                 "the open-file limit");
    }
    if (e && ((fhc_payload *)fhc_entry_payload(e))->poll && !pl
        && !ch->fallback_all && ch->ws) {
        log_once(ch, &ch->logged_fs, APLOG_NOTICE, 0,
                 "mod_fhcache: some cached files are on a network or FUSE "
                 "filesystem (or could not be watched); they are revalidated "
                 "by stat every FHCacheRevalidate seconds");
    }
    return e;
}
