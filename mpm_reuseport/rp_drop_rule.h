/* Drops in server-status: connection attempts the kernel refused because a
 * bucket's accept queue was full, told from counters that each count more
 * or less than that.  This file owns the arithmetic: each bucket's share of
 * the network namespace's new refusals at one sample, and reading a
 * counter out of /proc/net/netstat's text.  Pure (no OS calls, no APR);
 * unit-tested in test/unit/check_drop_rule.c.  Its glue, and only caller:
 * rp_bstats.c, which reads the counters (SO_MEMINFO, TCP_DEFER_ACCEPT,
 * /proc/self/net/netstat) and keeps the result in the status table.
 *
 * No per-socket counter gives the number.  A listener's drop counter
 * (SO_MEMINFO's SK_MEMINFO_DROPS) also counts, under TCP_DEFER_ACCEPT
 * (httpd's default AcceptFilter http data), the bare handshake ACK of every
 * connection, which the kernel discards while it waits for the request
 * (TcpExt TCPDeferAcceptDrop: one per connection served), a refused ACK
 * twice, and other discarded segments.  The network namespace's TcpExt
 * ListenDrops counts exactly the refusals, of every listener in the
 * namespace, each of which also raised its own listener's drop counter.
 * So at each sample the caller reads both, and the rule hands the
 * namespace's new refusals to the buckets whose drop counter rose by more
 * than the discarded ACKs of the connections they queued explain (no more
 * of those in all than the namespace discarded): first to the buckets whose
 * queue was full, up to their excess, then up to their counter's whole
 * rise (the kernel refuses only where a queue is full), then to the others
 * up to their excess; in each round the bucket with the most room first.
 * Exact in total when the
 * refusing listeners are ours; the split between buckets refusing in the
 * same second is an estimate (docs/mod_mpm_reuseport.md, "Buckets in
 * server-status"). */
#ifndef RP_DROP_RULE_H
#define RP_DROP_RULE_H

#include <stdint.h>

/* One bucket, kept by the caller from sample to sample (one per bucket,
 * set up by rp_drop_rule_start). */
typedef struct rp_drop_bucket {
    /* At the last sample: */
    uint32_t sk_drops;          /* its sockets' drop counters, summed */
    uint64_t accepted;          /* connections its children had accepted */
    uint32_t queued;            /* connections waiting in its queue */
    int was_full;               /* its queue was full (or one short) */
    /* This sample (rp_drop_rule_bucket): */
    int defer;                  /* one of its sockets defers accepting */
    int full;                   /* its queue was full at this sample or
                                   the last: the kernel refuses only
                                   where a queue is full */
    uint32_t rise;              /* the drop counters' rise */
    uint32_t noise;             /* the part of it that the connections it
                                   queued explain (their discarded ACKs) */
    uint32_t excess;            /* the rest (rp_drop_rule_share) */
    uint32_t share;             /* out: refusals given to it */
} rp_drop_bucket;

/* The namespace's side, kept by the caller from sample to sample. */
typedef struct rp_drop_state {
    int first;                  /* the next sample only sets the baselines */
    int ns_valid;               /* the counters below were read then */
    uint64_t refused;           /* the namespace's TcpExt ListenDrops */
    uint64_t acks;              /* and TCPDeferAcceptDrop */
    uint64_t carry;             /* refusals no socket showed yet */
} rp_drop_state;

/* What rp_drop_rule_share tells: */
#define RP_DROP_KNOWN 1         /* each bucket's share */
#define RP_DROP_UNKNOWN 0       /* a socket's counter could not be read, or
                                   the first sample could not tell */
/* Unknown too: the sockets' counters count every connection
 * (TCP_DEFER_ACCEPT) and the namespace's could not be read; the caller
 * says so. */
#define RP_DROP_NO_NAMESPACE (-1)

/* Before the first sample (a new table): n buckets. */
void rp_drop_rule_start(rp_drop_state *s, rp_drop_bucket *b, int n);

/* One bucket at a sample, first: the sum of its sockets' drop counters
 * (they wrap), the connections its children have accepted, those waiting
 * in its queue, whether one of its sockets' queues is full (or one short:
 * the caller tells), and whether one of its sockets defers accepting.
 * Sets rise, noise and full, clears share. */
void rp_drop_rule_bucket(rp_drop_bucket *b, uint32_t sk_drops,
                         uint64_t accepted, uint32_t queued, int queue_full,
                         int defer);

/* Then the sample's refusals shared among the n buckets (b[].share).
 * sockets_ok: every socket's counter was read; ns_ok: then the namespace's
 * were too (never without sockets_ok), its TcpExt ListenDrops `refused`
 * and TCPDeferAcceptDrop `acks`.  Returns an RP_DROP_ value. */
int rp_drop_rule_share(rp_drop_state *s, rp_drop_bucket *b, int n,
                       int sockets_ok, int ns_ok, uint64_t refused,
                       uint64_t acks);

/* The value of `name` in the "prefix names..." / "prefix values..." line
 * pair of a /proc/net/netstat text (prefix e.g. "TcpExt:"); 0 if it is not
 * there. */
int rp_drop_rule_netstat_field(const char *text, const char *prefix,
                               const char *name, uint64_t *val);

#endif
