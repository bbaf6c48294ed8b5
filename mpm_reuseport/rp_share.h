/* Children sharing a bucket share its connections: the rule that tells a
 * child to stop accepting for a while because it holds clearly more than
 * its share (then its siblings, waiting for connections, get the new
 * ones).  Pure; unit-tested in test/unit/check_share.c. */
#ifndef RP_SHARE_H
#define RP_SHARE_H

typedef struct rp_share_view {
    int mine;                   /* this child's open connections */
    int siblings;               /* other accepting children of the bucket */
    int sibling_conns;          /* their open connections, together */
    int fewest;                 /* the least any of them holds */
    int queue_waits;            /* consecutive looks, while paused, that
                                   found connections waiting in the
                                   bucket's queue */
} rp_share_view;

/* Below this many connections a child never pauses. */
#define RP_SHARE_MIN 8
/* Looks with connections waiting after which a paused child accepts again
 * (its siblings are not taking them: stopped, or busy). */
#define RP_SHARE_QUEUE_WAITS 4

/* 1: do not accept now.  paused: whether this child does not already. */
int rp_share_pause(int paused, const rp_share_view *v);

#endif
