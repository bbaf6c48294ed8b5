/* Per-child state: the cache, its lock, and the thread that receives
 * change notifications and turns them into invalidations. */
#include "fhc_module.h"

#include "http_log.h"
#include "apr_strings.h"

#include <errno.h>

APLOG_USE_MODULE(fhcache);

fhc_child *fhc_the_child;

void fhc_lock(fhc_child *ch)
{
    apr_thread_mutex_lock(ch->lock);
}

void fhc_unlock(fhc_child *ch)
{
    apr_thread_mutex_unlock(ch->lock);
}

void fhc_housekeeping(fhc_child *ch, apr_time_t now)
{
    fhc_cache_expire(ch->cache, now);
    if (fhc_os_recycle_handles) {
        fhc_cache_expire_handles(ch->cache, now,
                                 fhc_conf_revalidate_every(ch->conf, 1));
    }
    fhc_tally_update(ch, now, 0);
}

/* Runs in the watcher thread, or in a request's catch-up. */
static void on_event(void *ctx, long id, const char *name, unsigned flags)
{
    fhc_child *ch = ctx;
    int lost = (flags & FHC_EV_OVERFLOW) && id == -1 && !name;
    int first_loss;

    fhc_lock(ch);
    if (flags & FHC_EV_TICK) {
        fhc_housekeeping(ch, apr_time_now());
    }
    else {
        ch->events++;
        ch->overflows += lost;
        fhc_watchset_route(ch->ws, ch->cache, id, name, flags);
    }
    first_loss = lost && ch->overflows == 1;
    fhc_unlock(ch);
    if (first_loss) {
        /* Degrades to a cold cache, not to stale content: say it once. */
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ch->s,
                     "mod_fhcache: change notifications were lost (queue "
                     "overflow); dropped every cached file. If this repeats "
                     "(FHCacheOverflows in server-status), %s",
                     fhc_os_hint_overflow);
    }
}

void fhc_catch_up(fhc_child *ch)
{
    if (ch->ws && ch->be->catch_up) {
        ch->be->catch_up(ch->watcher);
    }
}

static void *APR_THREAD_FUNC watcher_main(apr_thread_t *t, void *data)
{
    fhc_child *ch = data;
    ch->be->run(ch->watcher);
    return NULL;
}

/* Child exit: stop and join the watcher.  The cache itself is left to the
 * process exit: responses still being written may hold entries until
 * their connection pools go, which can be after pchild. */
static apr_status_t stop_watcher(void *data)
{
    fhc_child *ch = data;
    apr_status_t rv;

    if (ch->thread) {
        ch->be->stop(ch->watcher);
        apr_thread_join(&rv, ch->thread);
        ch->thread = NULL;
    }
    return APR_SUCCESS;
}

static void start_notification(fhc_child *ch, apr_pool_t *pchild)
{
    int err = ENOSYS;

    if (!ch->conf->notify) {
        ch->fallback_all = 1;
        return;
    }
    ch->be = fhc_os_watch_backend();
    if (ch->be) {
        err = ch->be->open(&ch->watcher, on_event, ch);
    }
    if (err == 0) {
        ch->ws = fhc_watchset_create(ch->be, ch->watcher,
                                     (unsigned)ch->conf->max_watches);
        if (ch->ws) {
            fhc_watchset_drive_paths(ch->ws, fhc_os_drive_paths);
        }
        if (ch->ws && fhc_os_thread_create(&ch->thread, watcher_main, ch,
                                           pchild) == APR_SUCCESS) {
            apr_pool_cleanup_register(pchild, ch, stop_watcher,
                                      apr_pool_cleanup_null);
            return;
        }
        fhc_watchset_destroy(ch->ws);
        ch->ws = NULL;
        ch->be->close(ch->watcher);
        ch->watcher = NULL;
        err = ENOMEM;
    }
    ch->fallback_all = 1;
    ch->be = NULL;
    ap_log_error(APLOG_MARK, APLOG_WARNING, err, ch->s,
                 "mod_fhcache: change notification unavailable; cached files "
                 "are revalidated by stat %s instead (FHCacheRevalidate). %s",
                 fhc_conf_revalidate_words(ch->conf, 0, pchild),
                 fhc_os_hint_no_notify);
}

static apr_status_t leave_tally(void *data)
{
    fhc_child *ch = data;
    fhc_lock(ch);
    fhc_tally_leave(ch);
    fhc_unlock(ch);
    return APR_SUCCESS;
}

void fhc_child_init(apr_pool_t *pchild, server_rec *s)
{
    fhc_server_conf *conf = ap_get_module_config(s->module_config,
                                                 &fhcache_module);
    apr_pool_t *p;
    fhc_child *ch;
    fhc_limits lim;

    if (!fhc_any_enabled) {
        return;
    }
    /* Never destroyed: entries may be unpinned by buckets destroyed after
     * pchild (see stop_watcher). */
    if (apr_pool_create_unmanaged_ex(&p, NULL, NULL) != APR_SUCCESS) {
        return;
    }
    ch = apr_pcalloc(p, sizeof(*ch));
    ch->s = s;
    ch->conf = conf;
    ch->max_fds = fhc_conf_max_fds(conf);
    fhc_conf_limits(conf, ch->max_fds, &lim);
    if (apr_thread_mutex_create(&ch->lock, APR_THREAD_MUTEX_DEFAULT, p)
        != APR_SUCCESS
        || !(ch->cache = fhc_cache_create(&lim, fhc_payload_release, ch))) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "mod_fhcache: cannot "
                     "create the cache (out of memory?); serving uncached");
        return;
    }
    start_notification(ch, pchild);
    fhc_tally_join(ch);
    if (ch->slot) {
        apr_pool_cleanup_register(pchild, ch, leave_tally,
                                  apr_pool_cleanup_null);
    }
    /* Published at once, so server-status counts a child that polls
     * before it has served anything (prefork children beyond the inotify
     * instance limit). */
    fhc_lock(ch);
    fhc_tally_update(ch, apr_time_now(), 1);
    fhc_unlock(ch);
    fhc_the_child = ch;
}
