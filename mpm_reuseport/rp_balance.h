/* Children sharing a bucket share its connections.  Which child the kernel
 * wakes for a new connection is close to chance, so one child can end up
 * with far more connections than a sibling; each child runs on about one
 * thread at a time and the scheduler gives each the same CPU time, so that
 * child's clients wait longer.  A child about to accept while holding
 * clearly more than its share stops watching its listeners instead; its
 * siblings take the new connections until it is back at its share, or at
 * once if connections wait in the queue while the siblings take none
 * (stopped or busy: never a stall).  The loop thread looks every few
 * milliseconds while the child is paused.
 * rp_balance.c is the glue: it owns what it remembers between looks and
 * reads the scoreboard; the rule itself is rp_balance_rule.c (pure).
 * Callers: rp_child.c (setup), rp_accept.c (pause, under its lock only),
 * rp_conn_life.c (publish). */
#ifndef RP_BALANCE_H
#define RP_BALANCE_H

#include "apr.h"
#include "apr_time.h"

/* This child's scoreboard slot and bucket. */
void rp_balance_setup(int slot, int bucket);
/* Whether to pause (or stay paused) accepting, holding `mine` connections,
 * given the bucket's siblings. */
int rp_balance_pause(int paused, int mine, apr_time_t now);
/* Tell the siblings how many connections this child holds. */
void rp_balance_publish(apr_uint32_t conns);

#endif
