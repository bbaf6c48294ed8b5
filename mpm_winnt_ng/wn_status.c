/* Counters of this child in server-status (?auto: "WinNTNG<Name>: N"). */
#include "wn.h"

#include "http_protocol.h"
#include "apr_optional.h"
#include "apr_strings.h"
#include "mod_status.h"

/* Pids of the children accepting now (not those still starting or
 * finishing after a restart), from the scoreboard. */
static void show_serving_pids(request_rec *r)
{
    int i;
    const char *sep = "";

    ap_rputs("WinNTNGServingPids: ", r);
    for (i = 0; i < wn_run.process_slots; i++) {
        process_score *ps = ap_get_scoreboard_process(i);
        if (ps && ps->pid && !ps->quiescing && !ps->not_accepting) {
            ap_rprintf(r, "%s%lu", sep, (unsigned long)ps->pid);
            sep = " ";
        }
    }
    ap_rputs("\n", r);
}

static int show_counters(request_rec *r, int flags)
{
    static const struct { const char *name; size_t off; } rows[] = {
        { "Accepted", offsetof(wn_counters, accepted) },
        { "SocketsCreated", offsetof(wn_counters, sockets_created) },
        { "SocketsRecycled", offsetof(wn_counters, sockets_recycled) },
        { "RecycleFailed", offsetof(wn_counters, recycle_failed) },
        { "Lingered", offsetof(wn_counters, lingered) },
        { "LingerTimeouts", offsetof(wn_counters, linger_timeouts) },
        { "AcceptErrors", offsetof(wn_counters, accept_errors) },
    };
    size_t i;
    int pending = 0, emulated = 0;
    wn_listener *l;

    if (flags & AP_STATUS_SHORT) {
        for (i = 0; i < sizeof rows / sizeof *rows; i++)
            ap_rprintf(r, "WinNTNG%s: %" APR_INT64_T_FMT "\n", rows[i].name,
                       (apr_int64_t)*(volatile LONG64 *)
                       ((char *)&wn_stats + rows[i].off));
        for (l = wn_listeners; l; l = l->next) {
            pending += l->pending;
            emulated += l->emulated;
            ap_rprintf(r, "WinNTNGAcceptExPending[%pI]: %ld\n",
                       l->lr->bind_addr, (long)l->pending);
        }
        ap_rprintf(r, "WinNTNGAcceptExPending: %d\n", pending);
        ap_rprintf(r, "WinNTNGListenersEmulated: %d\n", emulated);
        ap_rprintf(r, "WinNTNGRecycleMethod: %s\n", wn_recycle_method_name());
        ap_rprintf(r, "WinNTNGWorkersBusy: %ld\n", (long)wn_stats.workers_busy);
        ap_rprintf(r, "WinNTNGConnections: %ld\n", (long)wn_stats.connections);
        ap_rprintf(r, "WinNTNGKeepAliveParked: %d\n", wn_keepalive_count());
        ap_rprintf(r, "WinNTNGReadingParked: %d\n", wn_keepalive_reading_count());
        ap_rprintf(r, "WinNTNGClosing: %d\n", wn_close_count());
        ap_rprintf(r, "WinNTNGChildPid: %lu\n", (unsigned long)wn_my_pid);
        show_serving_pids(r);
        return OK;
    }
    ap_rputs("<h2>mpm_winnt_ng (this child)</h2>\n<table>\n", r);
    for (i = 0; i < sizeof rows / sizeof *rows; i++)
        ap_rprintf(r, "<tr><td>%s</td><td>%" APR_INT64_T_FMT "</td></tr>\n",
                   rows[i].name, (apr_int64_t)*(volatile LONG64 *)
                   ((char *)&wn_stats + rows[i].off));
    ap_rprintf(r, "<tr><td>RecycleMethod</td><td>%s</td></tr>\n</table>\n",
               wn_recycle_method_name());
    return OK;
}

void wn_status_register(void)
{
    APR_OPTIONAL_HOOK(ap, status_hook, show_counters, NULL, NULL,
                      APR_HOOK_MIDDLE);
}
