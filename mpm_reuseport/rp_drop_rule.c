/* Each bucket's share of the refusals the kernel counted, and the
 * /proc/net/netstat parser (see rp_drop_rule.h). */
#include "rp_drop_rule.h"

#include <stdlib.h>
#include <string.h>

void rp_drop_rule_start(rp_drop_state *s, rp_drop_bucket *b, int n)
{
    memset(s, 0, sizeof(*s));
    memset(b, 0, n * sizeof(*b));
    s->first = 1;
}

/* Each bucket's noise: under TCP_DEFER_ACCEPT every connection entering
 * its accept queue had its bare handshake ACK discarded, and those entered
 * are the ones accepted since plus the queue's growth. */
void rp_drop_rule_bucket(rp_drop_bucket *b, uint32_t sk_drops,
                         uint64_t accepted, uint32_t queued, int full_now,
                         int defer)
{
    uint64_t entered = accepted - b->accepted + queued;
    uint32_t rise = sk_drops - b->sk_drops;     /* wraps as the counter does */

    /* A connection accepted before its child counted it has left the
     * queue uncounted for a moment: never below nothing. */
    entered = entered > b->queued ? entered - b->queued : 0;
    if (!defer) {
        entered = 0;
    }
    b->sk_drops = sk_drops;
    b->accepted = accepted;
    b->queued = queued;
    b->defer = defer;
    b->full = full_now || b->was_full;
    b->was_full = full_now;
    b->rise = rise;
    b->noise = entered < rise ? (uint32_t)entered : rise;
    b->share = 0;
}

/* The buckets' noise made to add up to the ACKs the namespace discarded:
 * scaled down when it is more (connections queued with syncookies, or
 * queued again after a refusal, discarded none this time), up when it is
 * less (a client slow to send its request has its ACK discarded again at
 * each SYN-ACK retransmit; as room, such noise took refusals that the
 * refusing bucket's counter showed a sample later: a bucket that refused
 * nothing was given 7 of 30 on a loaded machine), never above a bucket's
 * rise.  What is left of the buckets' rises holds every refusal of ours,
 * but where the scaling moved noise onto a full queue's many connections
 * (hand_out's FULL_RISE round). */
static void fit_noise(rp_drop_bucket *b, int n, uint64_t acks)
{
    uint64_t total = 0, scaled;
    int i;

    for (i = 0; i < n; i++) {
        total += b[i].noise;
    }
    for (i = 0; i < n; i++) {
        if (total > 0 && total != acks) {
            scaled = (uint64_t)b[i].noise * acks / total;
            b[i].noise = (uint32_t)(scaled < b[i].rise ? scaled : b[i].rise);
        }
        b[i].excess = b[i].rise - b[i].noise;
    }
}

/* Who may take refusals in a round of hand_out, and up to what. */
enum hand_out_to {
    FULL_EXCESS,        /* buckets whose queue was full, up to their excess */
    FULL_RISE,          /* ... up to their counter's whole rise */
    ANY_EXCESS          /* every bucket, up to its excess */
};

/* What bucket b may still take in that round. */
static uint32_t room_of(const rp_drop_bucket *b, enum hand_out_to to)
{
    uint32_t cap = to == FULL_RISE ? b->rise : b->excess;

    if (to != ANY_EXCESS && !b->full) {
        return 0;
    }
    return cap > b->share ? cap - b->share : 0;
}

/* Hand out up to `refusals` to the buckets the round allows, the one with
 * the most room first.  Returns what is left. */
static uint64_t hand_out(rp_drop_bucket *b, int n, uint64_t refusals,
                         enum hand_out_to to)
{
    while (refusals > 0) {
        uint32_t best_room = 0;
        int i, best = -1;

        for (i = 0; i < n; i++) {
            uint32_t room = room_of(&b[i], to);
            if (room > best_room) {
                best_room = room;
                best = i;
            }
        }
        if (best < 0) {
            break;
        }
        if (best_room > refusals) {
            best_room = (uint32_t)refusals;
        }
        b[best].share += best_room;
        refusals -= best_room;
    }
    return refusals;
}

int rp_drop_rule_share(rp_drop_state *s, rp_drop_bucket *b, int n,
                       int sockets_ok, int ns_ok, uint64_t refused,
                       uint64_t acks)
{
    uint64_t new_refused;
    int i, defer = 0;

    for (i = 0; i < n; i++) {
        defer |= b[i].defer;
    }
    if (s->first || (ns_ok && !s->ns_valid)) {
        s->first = 0;
        s->ns_valid = ns_ok;
        s->refused = refused;
        s->acks = acks;
        s->carry = 0;
        return sockets_ok && (ns_ok || !defer);
    }
    s->ns_valid = ns_ok;
    if (ns_ok) {
        new_refused = refused >= s->refused ? refused - s->refused : 0;
        fit_noise(b, n, acks >= s->acks ? acks - s->acks : 0);
        s->refused = refused;
        s->acks = acks;
        /* A full queue's excess first; then its whole rise, where the
         * noise fitted to the namespace took the refusals' place (a queue
         * draining after its stopped child resumed enters many connections
         * at once); only then a queue with room (the kernel refuses there
         * only with its SYN queue full or memory short).  What none holds
         * was another server's (the namespace's other listeners) or is on
         * its way to a socket: kept for one sample. */
        s->carry = hand_out(b, n, new_refused + s->carry, FULL_EXCESS);
        s->carry = hand_out(b, n, s->carry, FULL_RISE);
        s->carry = hand_out(b, n, s->carry, ANY_EXCESS);
        if (s->carry > new_refused) {
            s->carry = new_refused;
        }
        return RP_DROP_KNOWN;
    }
    if (sockets_ok && !defer) {
        /* No discarded ACKs: the sockets' own counters are the drops. */
        for (i = 0; i < n; i++) {
            b[i].share = b[i].rise;
        }
        return RP_DROP_KNOWN;
    }
    return sockets_ok ? RP_DROP_NO_NAMESPACE : RP_DROP_UNKNOWN;
}

int rp_drop_rule_netstat_field(const char *text, const char *prefix,
                               const char *name, uint64_t *val)
{
    size_t plen = strlen(prefix), nlen = strlen(name);
    const char *line = text;

    while (line && *line) {
        const char *next = strchr(line, '\n');
        if (next && !strncmp(line, prefix, plen)
            && !strncmp(next + 1, prefix, plen)) {
            const char *n = line + plen, *v = next + 1 + plen;
            for (;;) {
                size_t nl, vl;
                n += strspn(n, " ");
                v += strspn(v, " ");
                nl = strcspn(n, " \n");
                vl = strcspn(v, " \n");
                if (!nl || !vl) {
                    return 0;
                }
                if (nl == nlen && !strncmp(n, name, nlen)) {
                    *val = strtoull(v, NULL, 10);
                    return 1;
                }
                n += nl;
                v += vl;
            }
        }
        line = next ? next + 1 : NULL;
    }
    return 0;
}
