/* This child's counts: the counters server-status shows (wn_status.c)
 * and connections that ended, which tell the child to retire once
 * MaxConnectionsPerChild is reached.  A leaf: every part counts here. */
#include "wn.h"

#include "mpm_common.h"

wn_counters wn_stats;

static volatile LONG ended;
static HANDLE retire_event;
static volatile LONG retire_told;

void wn_tally_retire_by(HANDLE event)
{
    retire_event = event;
}

void wn_tally_connection_ended(void)
{
    LONG n = InterlockedIncrement(&ended);

    InterlockedDecrement(&wn_stats.connections);
    if (ap_max_requests_per_child && n >= ap_max_requests_per_child
        && retire_event && InterlockedExchange(&retire_told, 1) == 0)
        SetEvent(retire_event);
}

long wn_tally_connections_ended(void)
{
    return (long)ended;
}
