/* Children sharing a bucket (several per bucket: StartServers above the
 * bucket count, or ReusePortChildrenPerBucket) share its connections: the
 * glue that feeds the pure rule (rp_balance_rule.h) with this child's and
 * its siblings' counts from the scoreboard (rp_balance.h). */
#include "rp.h"
#include "rp_balance.h"
#include "rp_balance_rule.h"

#include <limits.h>

/* After siblings left connections waiting, do not pause for this long. */
#define RP_BALANCE_HOLD apr_time_from_msec(200)

static struct {
    int slot, bucket;           /* this child's */
    int queue_waits;
    int sibling_conns;          /* at the previous look */
    apr_time_t hold_until;      /* no pausing before then */
} bal;

/* Current-generation siblings in this child's bucket that accept. */
static void look_at_siblings(rp_balance_view *v)
{
    int i;

    v->siblings = v->sibling_conns = 0;
    v->fewest = INT_MAX;
    if (rp_lim.daemons_limit <= rp_lim.num_buckets) {
        return;                 /* one child per bucket at most */
    }
    /* Children only take slots below daemons_limit (rp_parent.c). */
    for (i = 0; i < rp_lim.daemons_limit; i++) {
        process_score *ps = ap_get_scoreboard_process(i);
        if (i == bal.slot || ps->pid == 0
            || ps->bucket != bal.bucket
            || ps->generation != rp_state->mpm->my_generation
            || ps->quiescing || ps->not_accepting) {
            continue;
        }
        v->siblings++;
        v->sibling_conns += (int)ps->connections;
        if ((int)ps->connections < v->fewest) {
            v->fewest = (int)ps->connections;
        }
    }
}

static int queue_has_waiting(void)
{
    apr_uint32_t queued, limit;

    rp_bstats_queue_of(bal.bucket, &queued, &limit);
    return queued > 0;
}

void rp_balance_setup(int slot, int bucket)
{
    bal.slot = slot;
    bal.bucket = bucket;
}

void rp_balance_publish(apr_uint32_t conns)
{
    ap_get_scoreboard_process(bal.slot)->connections = conns;
}

int rp_balance_pause(int paused, int mine, apr_time_t now)
{
    rp_balance_view v;
    int pause;

    if (!paused && now < bal.hold_until) {
        return 0;
    }
    v.mine = mine;
    look_at_siblings(&v);
    /* Waiting connections while the siblings take none: they cannot. */
    bal.queue_waits = paused && v.sibling_conns <= bal.sibling_conns
                      && queue_has_waiting() ? bal.queue_waits + 1 : 0;
    bal.sibling_conns = v.sibling_conns;
    v.queue_waits = bal.queue_waits;
    pause = rp_balance_rule_pause(paused, &v);
    if (paused && !pause) {
        if (v.queue_waits >= RP_BALANCE_QUEUE_WAITS) {
            bal.hold_until = now + RP_BALANCE_HOLD;
        }
        bal.queue_waits = 0;
    }
    if (pause != paused) {
        ap_log_error(APLOG_MARK, APLOG_TRACE1, 0, ap_server_conf, RP_LOG_TAG
                     "%s accepting: %d connections here, %d in %d "
                     "siblings%s", pause ? "pausing" : "resuming", v.mine,
                     v.sibling_conns, v.siblings, v.queue_waits
                     >= RP_BALANCE_QUEUE_WAITS ? ", connections waiting" : "");
    }
    return pause;
}
