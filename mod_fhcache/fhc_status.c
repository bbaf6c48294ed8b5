/* mod_status section: this child's cache counters (server-status and its
 * ?auto form). */
#include "fhc_module.h"

#include "httpd.h"
#include "http_protocol.h"
#include "mod_status.h"

#include <unistd.h>

static const char *mode_name(const fhc_child *ch)
{
    if (ch->fallback_all || !ch->ws) {
        return "poll";
    }
    return ch->polled ? "notify+poll" : ch->be->name;
}

int fhc_status_hook(request_rec *r, int flags)
{
    fhc_child *ch = fhc_the_child;
    fhc_stats st;
    unsigned watches, polled;
    uint64_t events;
    const char *mode;
    int i;

    if (!ch) {
        return OK;
    }
    fhc_lock(ch);
    fhc_cache_stats(ch->cache, &st);
    watches = ch->ws ? fhc_watchset_count(ch->ws) : 0;
    polled = ch->polled;
    events = ch->events;
    mode = mode_name(ch);
    fhc_unlock(ch);

    {
        /* One table for both forms: name, value. */
        const struct { const char *k; apr_uint64_t v; } rows[] = {
            { "Hits", st.hits }, { "Misses", st.misses },
            { "Inserts", st.inserts }, { "Evictions", st.evictions },
            { "Expirations", st.expirations },
            { "Invalidations", st.invalidations },
            { "Flushes", st.flushes }, { "FillRaces", st.fill_races },
            { "Entries", st.entries }, { "OpenDescriptors", st.handles },
            { "InUseInvalidated", st.dead_pinned },
            { "MemoryBytes", st.bytes }, { "Watches", watches },
            { "PolledEntries", polled }, { "Events", events },
        };
        if (flags & AP_STATUS_SHORT) {
            ap_rprintf(r, "FHCachePid: %" APR_PID_T_FMT "\n", getpid());
            ap_rprintf(r, "FHCacheMode: %s\n", mode);
            for (i = 0; i < (int)(sizeof(rows) / sizeof(rows[0])); i++) {
                ap_rprintf(r, "FHCache%s: %" APR_UINT64_T_FMT "\n",
                           rows[i].k, rows[i].v);
            }
        }
        else {
            ap_rprintf(r, "<hr /><h2>mod_fhcache (process %" APR_PID_T_FMT
                       ", mode %s)</h2>\n<table>\n", getpid(), mode);
            for (i = 0; i < (int)(sizeof(rows) / sizeof(rows[0])); i++) {
                ap_rprintf(r, "<tr><td>%s</td><td>%" APR_UINT64_T_FMT
                           "</td></tr>\n", rows[i].k, rows[i].v);
            }
            ap_rputs("</table>\n", r);
        }
    }
    return OK;
}
