/* Children sharing a bucket (several per bucket: StartServers above the
 * bucket count, or ReusePortChildrenPerBucket) share its connections.
 * Which child the kernel wakes for a new connection is close to chance, so
 * one child can end up with far more connections than a sibling; each
 * child runs on about one thread at a time and the scheduler gives each
 * the same CPU time, so that child's clients wait longer.  A child about
 * to accept while holding clearly more than its share (rp_share.h) stops
 * watching its listeners instead; its siblings take the new connections
 * until it is back at its share, or at once if connections wait in the
 * queue while the siblings take none (stopped or busy: never a stall).  The loop thread
 * looks every few milliseconds while the child is paused.
 * rp_balance_pause is called under rp_accept.c's lock only. */
#include "rp_child.h"
#include "rp_share.h"

#include "apr_atomic.h"

#include <limits.h>

/* After siblings left connections waiting, do not pause for this long. */
#define RP_BALANCE_HOLD apr_time_from_msec(200)

static struct {
    int queue_waits;
    int sibling_conns;          /* at the previous look */
    apr_time_t hold_until;      /* no pausing before then */
} bal;

/* Current-generation siblings in this child's bucket that accept. */
static void look_at_siblings(rp_share_view *v)
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
        if (i == rp_child.slot || ps->pid == 0
            || ps->bucket != rp_child.bucket
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

    rp_bstats_queue_of(rp_child.bucket, &queued, &limit);
    return queued > 0;
}

void rp_balance_publish(void)
{
    ap_scoreboard_image->parent[rp_child.slot].connections =
        apr_atomic_read32(&rp_child.live_conns);
}

int rp_balance_pause(int paused, apr_time_t now)
{
    rp_share_view v;
    int pause;

    if (!paused && now < bal.hold_until) {
        return 0;
    }
    v.mine = (int)apr_atomic_read32(&rp_child.live_conns);
    look_at_siblings(&v);
    /* Waiting connections while the siblings take none: they cannot. */
    bal.queue_waits = paused && v.sibling_conns <= bal.sibling_conns
                      && queue_has_waiting() ? bal.queue_waits + 1 : 0;
    bal.sibling_conns = v.sibling_conns;
    v.queue_waits = bal.queue_waits;
    pause = rp_share_pause(paused, &v);
    if (paused && !pause) {
        if (v.queue_waits >= RP_SHARE_QUEUE_WAITS) {
            bal.hold_until = now + RP_BALANCE_HOLD;
        }
        bal.queue_waits = 0;
    }
    if (pause != paused) {
        ap_log_error(APLOG_MARK, APLOG_TRACE1, 0, ap_server_conf, RP_LOG_TAG
                     "%s accepting: %d connections here, %d in %d "
                     "siblings%s", pause ? "pausing" : "resuming", v.mine,
                     v.sibling_conns, v.siblings, v.queue_waits
                     >= RP_SHARE_QUEUE_WAITS ? ", connections waiting" : "");
    }
    return pause;
}
