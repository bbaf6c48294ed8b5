/* Stuck buckets: the kernel queues each new connection on one bucket's
 * socket whatever the children behind it are doing, so a bucket whose only
 * child is stopped, blocked in a module or has every worker busy holds up
 * every connection hashed to it.  The parent looks at each bucket often;
 * this is the rule that says when a bucket needs another child.  Pure;
 * unit-tested in test/unit/check_relief_rule.c.  Its glue, and only
 * caller: rp_relief.c. */
#ifndef RP_RELIEF_RULE_H
#define RP_RELIEF_RULE_H

#include <stdint.h>

typedef struct rp_relief_watch {
    uint64_t seen;              /* accepted count at the last look */
    int64_t waiting_since;      /* us; 0: nothing waits without progress */
    int64_t child_started_at;   /* us; when its last child started */
} rp_relief_watch;

/* After a child started for the bucket, another waits this long (us): a
 * child needs tens of milliseconds to start accepting (hundreds on a
 * loaded machine), and a module that blocks every child must not make the
 * parent fork as fast as it looks. */
#define RP_RELIEF_HOLD 1000000

/* One look at a bucket: `queued` connections wait in its kernel queue, its
 * children have accepted `accepted` in total, now is `now` (us).  Returns 1
 * when connections have waited for `timeout` (us, > 0) with nothing
 * accepted meanwhile and no child of the bucket started within the hold:
 * the caller adds one. */
int rp_relief_rule_look(rp_relief_watch *w, uint32_t queued,
                        uint64_t accepted, int64_t now, int64_t timeout);

/* The parent started a child for the bucket at `now` (us), for this rule
 * or another reason (start-up, a restart, a replacement): until it could
 * accept, connections that wait do not make the bucket stuck. */
void rp_relief_rule_child_started(rp_relief_watch *w, int64_t now);

/* How long (us) the bucket has had connections waiting with no progress,
 * at `now`; 0 when it has not. */
int64_t rp_relief_rule_stalled_for(const rp_relief_watch *w, int64_t now);

#endif
