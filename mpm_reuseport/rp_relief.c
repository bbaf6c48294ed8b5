/* Stuck buckets get another child.  The kernel queues each new connection
 * on one bucket's socket, so with one child per bucket a child that stops
 * taking connections (stopped, blocked in a module, every worker busy)
 * would hold up every connection hashed to its bucket.  The parent holds
 * every bucket's sockets and looks at their queues often (the pure rule,
 * rp_relief_rule.c, says when one is stuck); a stuck bucket gets a child in an empty slot, which
 * accepts what waits there and what comes next.  When the stuck child
 * resumes, the bucket's children share it (rp_balance.c); once the bucket
 * has been fine for a while, the parent lets one child go per child added,
 * since more busy children than CPUs only queue for the CPU.
 * This file decides and logs; the parent (rp_parent.c), the only one that
 * forks, starts the child and reports how it went. */
#include "rp.h"
#include "rp_relief_rule.h"

/* A bucket fine for this long gives back a child it was given. */
#define SURPLUS_AFTER apr_time_from_sec(10)

typedef struct {
    rp_relief_watch watch;
    int added;                  /* children started for it, not yet gone */
    apr_time_t last_stall;      /* last look that found it stalled */
} relief;

static relief *buckets;         /* rp_lim.num_buckets, this generation */
static int num_buckets;
static apr_uint32_t no_slot_logged;

void rp_relief_setup(void)
{
    /* Per generation: the accepted counters start again at zero. */
    num_buckets = rp_lim.num_buckets;
    buckets = apr_pcalloc(rp_pconf, num_buckets * sizeof(*buckets));
    no_slot_logged = 0;
}

/* A child just forked can take over 50 ms to accept: under 2 CPU hogs 4
 * of 50 server starts (8 GETs at once right away) logged a stuck bucket
 * and forked a needless child before the hold counted from here. */
void rp_relief_child_started(int b, apr_time_t now)
{
    if (buckets && b >= 0 && b < num_buckets) {
        rp_relief_rule_child_started(&buckets[b].watch, now);
    }
}

int rp_relief_surplus(int b, apr_time_t now)
{
    return buckets && b < num_buckets && buckets[b].added > 0
           && now - buckets[b].last_stall >= SURPLUS_AFTER;
}

void rp_relief_child_going(int b)
{
    if (buckets && b < num_buckets && buckets[b].added > 0) {
        buckets[b].added--;
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                     "bucket %d: one of its children goes (the one added "
                     "for it is no longer needed, or an idle one)", b);
    }
}

apr_interval_time_t rp_relief_interval(void)
{
    apr_interval_time_t t = apr_time_from_msec(rp_lim.stuck_timeout) / 2;

    if (rp_lim.stuck_timeout == 0 || !rp_lim.reuseport || rp_one_process) {
        return 0;
    }
    return t < apr_time_from_msec(5) ? apr_time_from_msec(5) : t;
}

void rp_relief_started(const rp_relief_need *need, pid_t pid)
{
    int b = need->bucket;

    if (pid > 0) {
        buckets[b].added++;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, RP_LOG_TAG
                     "bucket %d: %u connection(s) waited %" APR_TIME_T_FMT
                     " ms while its children accepted none (stopped, blocked "
                     "in a module, or all workers busy?); started child %ld "
                     "for it", b, need->queued,
                     apr_time_as_msec(need->stalled), (long)pid);
    }
    else if (pid == 0) {
        mpmng_log_once(&no_slot_logged, APLOG_MARK, APLOG_WARNING, 0,
                       ap_server_conf, RP_LOG_TAG "bucket %d: connections "
                       "wait while its children accept none, and no slot is "
                       "free for another child: raise ServerLimit and "
                       "MaxRequestWorkers (logged once)", b);
    }
}

int rp_relief_look(apr_time_t now, int *next, rp_relief_need *need)
{
    int b;

    /* During a hand-over the old generation accepts for the new one. */
    if (!rp_relief_interval() || rp_gen_retiring() || !buckets) {
        return 0;
    }
    for (b = *next; b < num_buckets && b < rp_lim.num_buckets; b++) {
        relief *rl = &buckets[b];
        apr_uint32_t queued;
        apr_uint64_t accepted;
        apr_time_t stalled;
        int stuck;

        if (!rp_bstats_progress(b, &queued, &accepted)) {
            return 0;
        }
        stalled = rp_relief_rule_stalled_for(&rl->watch, now);
        stuck = rp_relief_rule_look(&rl->watch, queued, accepted, now,
                                    apr_time_from_msec(rp_lim.stuck_timeout));
        if (rp_relief_rule_stalled_for(&rl->watch, now)) {
            rl->last_stall = now;
        }
        if (stuck) {
            need->bucket = b;
            need->queued = queued;
            need->stalled = stalled;
            *next = b + 1;
            return 1;
        }
    }
    return 0;
}
