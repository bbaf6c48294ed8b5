/* mod_status section: the answering child's cache counters, live, and the
 * sum over all children of this generation (each child publishes its
 * counters into a shared table about once a second: fhc_publish.c). */
#include "fhc_module.h"

#include "httpd.h"
#include "http_log.h"
#include "http_protocol.h"
#include "mod_status.h"

APLOG_USE_MODULE(fhcache);

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
    const fhc_tally *table = fhc_tally_table();
    uint64_t v[FHC_F_COUNT];
    fhc_totals totals;
    const char *mode;

    if (!ch) {
        return OK;
    }
    fhc_lock(ch);
    fhc_tally_read(ch, v, &mode);
    fhc_tally_update(ch, apr_time_now(), 1);
    fhc_unlock(ch);
    if (table) {
        fhc_tally_sum(table, &totals);
    }
    if (flags & AP_STATUS_SHORT) {
        print_auto(r, mode, v, table ? &totals : NULL);
    }
    else {
        print_html(r, mode, v, table ? &totals : NULL);
    }
    return OK;
}
