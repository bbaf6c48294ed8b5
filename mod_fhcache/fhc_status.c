/* mod_status section: the answering child's cache counters, live, and the
 * sum over all children of this generation (each child publishes its
 * counters into a shared table about once a second; see fhc_tally.h). */
#include "fhc_module.h"

#include "httpd.h"
#include "http_log.h"
#include "http_protocol.h"
#include "ap_mpm.h"
#include "apr_shm.h"
#include "mod_status.h"

APLOG_USE_MODULE(fhcache);

/* Rows for this many children at most (prefork's ServerLimit can be far
 * larger than anyone runs); children beyond it are left out of totals. */
#define MAX_ROWS 8192

static fhc_tally *the_tally;    /* set in the parent, inherited by children */

void fhc_tally_setup(apr_pool_t *pconf, server_rec *s)
{
    apr_shm_t *shm;
    int limit = 0;
    unsigned rows;
    apr_status_t rv;

    the_tally = NULL;
    if (ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &limit) != APR_SUCCESS
        || limit <= 0) {
        limit = 256;
    }
    rows = limit > MAX_ROWS ? MAX_ROWS : (unsigned)limit;
    /* Anonymous: lives with pconf, so each generation counts afresh. */
    rv = apr_shm_create(&shm, fhc_tally_size(rows), NULL, pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "mod_fhcache: no "
                     "shared memory for counters; server-status shows only "
                     "the answering process");
        return;
    }
    the_tally = apr_shm_baseaddr_get(shm);
    fhc_tally_init(the_tally, rows);
}

static unsigned mode_of(const fhc_child *ch)
{
    if (ch->fallback_all || !ch->ws) {
        return FHC_MODE_POLL;
    }
    return ch->polled ? FHC_MODE_MIXED : FHC_MODE_NOTIFY;
}

/* Caller holds the lock. */
static void current_values(fhc_child *ch, uint64_t v[FHC_F_COUNT])
{
    fhc_stats st;
    fhc_cache_stats(ch->cache, &st);
    fhc_tally_values(v, &st, ch->events, ch->overflows,
                     ch->ws ? fhc_watchset_count(ch->ws) : 0, ch->polled);
}

void fhc_tally_update(fhc_child *ch, apr_time_t now, int force)
{
    uint64_t v[FHC_F_COUNT];

    if (!ch->slot || (!force && now - ch->published < APR_USEC_PER_SEC)) {
        return;
    }
    current_values(ch, v);
    fhc_tally_publish(ch->slot, v, mode_of(ch));
    ch->published = now;
}

static apr_status_t leave_tally(void *data)
{
    fhc_child *ch = data;
    fhc_lock(ch);
    fhc_tally_update(ch, apr_time_now(), 1);
    fhc_tally_retire(the_tally, ch->slot);
    ch->slot = NULL;
    fhc_unlock(ch);
    return APR_SUCCESS;
}

void fhc_tally_join(fhc_child *ch, apr_pool_t *pchild)
{
    if (!the_tally) {
        return;
    }
    ch->slot = fhc_tally_claim(the_tally, fhc_os_pid(), fhc_os_pid_alive);
    if (!ch->slot) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, ch->s, "mod_fhcache: more "
                     "than %u children; this one is left out of the totals "
                     "in server-status", the_tally->nslots);
        return;
    }
    apr_pool_cleanup_register(pchild, ch, leave_tally, apr_pool_cleanup_null);
}

static void print_auto(request_rec *r, const char *mode,
                       const uint64_t *v, const fhc_totals *t)
{
    int i;

    ap_rprintf(r, "FHCachePid: %d\n", (int)fhc_os_pid());
    ap_rprintf(r, "FHCacheMode: %s\n", mode);
    for (i = 0; i < FHC_F_COUNT; i++) {
        ap_rprintf(r, "FHCache%s: %" APR_UINT64_T_FMT "\n",
                   fhc_field_names[i], v[i]);
    }
    if (!t) {
        return;
    }
    ap_rprintf(r, "FHCacheChildren: %u\nFHCacheChildrenPolling: %u\n"
               "FHCacheChildrenExited: %u\n", t->children, t->polling,
               t->exited);
    for (i = 0; i < FHC_F_COUNT; i++) {
        ap_rprintf(r, "FHCacheTotal%s: %" APR_UINT64_T_FMT "\n",
                   fhc_field_names[i], t->v[i]);
    }
}

static void print_html(request_rec *r, const char *mode,
                       const uint64_t *v, const fhc_totals *t)
{
    int i;

    ap_rputs("<hr /><h2>mod_fhcache</h2>\n", r);
    if (t) {
        ap_rprintf(r, "<p>%u processes publishing (%u revalidating by "
                   "stat), %u exited since the last restart; totals are at "
                   "most a second old, gauges count live processes.</p>\n",
                   t->children, t->polling, t->exited);
    }
    ap_rprintf(r, "<table border=\"0\"><tr><th></th><th>process %"
               "d (%s)</th>%s</tr>\n", (int)fhc_os_pid(), mode,
               t ? "<th>all processes</th>" : "");
    for (i = 0; i < FHC_F_COUNT; i++) {
        ap_rprintf(r, "<tr><td>%s</td><td>%" APR_UINT64_T_FMT "</td>",
                   fhc_field_names[i], v[i]);
        if (t) {
            ap_rprintf(r, "<td>%" APR_UINT64_T_FMT "</td>", t->v[i]);
        }
        ap_rputs("</tr>\n", r);
    }
    ap_rputs("</table>\n", r);
}

int fhc_status_hook(request_rec *r, int flags)
{
    fhc_child *ch = fhc_the_child;
    uint64_t v[FHC_F_COUNT];
    fhc_totals totals;
    const char *mode;

    if (!ch) {
        return OK;
    }
    fhc_lock(ch);
    current_values(ch, v);
    mode = fhc_mode_name(mode_of(ch), ch->be ? ch->be->name : NULL);
    fhc_tally_update(ch, apr_time_now(), 1);
    fhc_unlock(ch);
    if (the_tally) {
        fhc_tally_sum(the_tally, &totals);
    }
    if (flags & AP_STATUS_SHORT) {
        print_auto(r, mode, v, the_tally ? &totals : NULL);
    }
    else {
        print_html(r, mode, v, the_tally ? &totals : NULL);
    }
    return OK;
}
