/* When a bucket needs another child: connections wait in its queue and its
 * children accepted none for a while (see rp_relief_rule.h). */
#include "rp_relief_rule.h"

int rp_relief_rule_look(rp_relief_watch *w, uint32_t queued,
                        uint64_t accepted, int64_t now, int64_t timeout)
{
    if (queued == 0 || accepted != w->seen) {
        w->seen = accepted;
        w->waiting_since = 0;
        return 0;
    }
    if (!w->waiting_since) {
        w->waiting_since = now;
        return 0;
    }
    if (now - w->waiting_since < timeout
        || (w->child_started_at && now - w->child_started_at < RP_RELIEF_HOLD)) {
        return 0;
    }
    w->child_started_at = now;
    return 1;
}

void rp_relief_rule_child_started(rp_relief_watch *w, int64_t now)
{
    w->child_started_at = now;
}

int64_t rp_relief_rule_stalled_for(const rp_relief_watch *w, int64_t now)
{
    return w->waiting_since ? now - w->waiting_since : 0;
}
