/* A child's cache counters published for server-status: the parent lays
 * out the shared table (fhc_tally.h) each generation, a child claims a row,
 * copies its counters there about once a second and retires it when it
 * exits.  Called by fhc_config.c (setup), fhc_child.c (join, update,
 * leave) and fhc_status.c (read, table); callers hold the child lock where
 * noted in fhc_module.h. */
#include "fhc_module.h"

#include "httpd.h"
#include "http_log.h"
#include "ap_mpm.h"
#include "apr_shm.h"

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

void fhc_tally_join(fhc_child *ch)
{
    if (!the_tally) {
        return;
    }
    ch->slot = fhc_tally_claim(the_tally, fhc_os_pid(), fhc_os_pid_alive);
    if (!ch->slot) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, ch->s, "mod_fhcache: more "
                     "than %u children; this one is left out of the totals "
                     "in server-status", the_tally->nslots);
    }
}

void fhc_tally_leave(fhc_child *ch)
{
    fhc_tally_update(ch, apr_time_now(), 1);
    fhc_tally_retire(the_tally, ch->slot);
    ch->slot = NULL;
}

const fhc_tally *fhc_tally_table(void)
{
    return the_tally;
}

void fhc_tally_read(fhc_child *ch, uint64_t v[FHC_F_COUNT], const char **mode)
{
    current_values(ch, v);
    *mode = fhc_mode_name(mode_of(ch), ch->be ? ch->be->name : NULL);
}
