/* A child's share of its bucket's connections (rp_balance_rule.h). */
#include "rp_balance_rule.h"

/* How far above the average a child may go before it pauses: an eighth,
 * at least 4 connections, so that children do not take turns pausing. */
static int slack(int avg)
{
    return avg / 8 > 4 ? avg / 8 : 4;
}

int rp_balance_rule_pause(int paused, const rp_balance_view *v)
{
    int total, avg;

    if (v->siblings <= 0 || v->queue_waits >= RP_BALANCE_QUEUE_WAITS) {
        return 0;
    }
    total = v->mine + v->sibling_conns;
    avg = (total + v->siblings) / (v->siblings + 1);    /* rounded up */
    if (paused) {
        return v->mine > avg + 1;       /* until back at its share */
    }
    return v->mine >= RP_BALANCE_MIN && v->mine > avg + slack(avg)
           && v->fewest < v->mine - slack(avg);
}
