/* Children sharing a bucket share its connections: the rule that tells a
 * child to stop accepting for a while because it holds clearly more than
 * its share (then its siblings, waiting for connections, get the new
 * ones).  Pure; unit-tested in test/unit/check_balance_rule.c.  Its glue,
 * and only caller: rp_balance.c. */
#ifndef RP_BALANCE_RULE_H
#define RP_BALANCE_RULE_H

typedef struct rp_balance_view {
    int mine;                   /* this child's open connections */
    int siblings;               /* other accepting children of the bucket */
    int sibling_conns;          /* their open connections, together */
    int fewest;                 /* the least any of them holds */
    int queue_waits;            /* consecutive looks, while paused, that
                                   found connections waiting in the
                                   bucket's queue */
} rp_balance_view;

/* Below this many connections a child never pauses. */
#define RP_BALANCE_MIN 8
/* Looks with connections waiting after which a paused child accepts again
 * (its siblings are not taking them: stopped, or busy). */
#define RP_BALANCE_QUEUE_WAITS 4

/* 1: do not accept now.  paused: whether this child does not already. */
int rp_balance_rule_pause(int paused, const rp_balance_view *v);

#endif
