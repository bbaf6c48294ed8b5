/* Per-bucket numbers for server-status: children, connections accepted,
 * and the kernel's accept queue of the bucket's sockets.
 *
 * Only the parent holds every bucket's sockets (each child closes the
 * others), so the parent samples the queues (TCP_INFO on a listening
 * socket: tcpi_unacked is the queue length, tcpi_sacked its limit) on
 * every pass of its main loop; children count what they accept.  Both go
 * to a small table in shared memory, one per generation, that whichever
 * child answers server-status reads.  A bucket whose queue grows while its
 * children accept nothing is thereby visible (and logged by the parent).
 *
 * Drops: connection attempts the kernel refused because a bucket's queue
 * was full.  At each sample the parent reads the counters that tell them
 * (each bucket's sockets' drop counters, and the network namespace's
 * TcpExt ListenDrops and TCPDeferAcceptDrop) and rp_drop_rule.c works out
 * each bucket's share (why those counters: rp_drop_rule.h). */
#include "rp.h"
#include "rp_drop_rule.h"

#include "apr_shm.h"
#include "apr_strings.h"
#include "http_protocol.h"
#include "mod_status.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#ifdef __linux__
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/sock_diag.h>    /* SK_MEMINFO_DROPS */
#endif

/* Rows and counters are written by different children on different CPUs:
 * one cache line each, so they do not bounce a shared line per request. */
#define RP_CACHE_LINE 64

typedef struct rp_bstat {
    apr_uint64_t accepted;      /* children: connections taken */
    apr_uint32_t queued;        /* parent: waiting in the kernel */
    apr_uint32_t queue_limit;   /* parent: the listen backlog */
    apr_uint32_t stuck_since;   /* parent: seconds (apr time / 1e6) */
    apr_uint32_t stuck_logged;
    apr_uint64_t seen_accepted; /* parent: accepted at the last sample */
    apr_uint64_t drops;         /* parent: connection attempts refused
                                   because the queue was full */
    apr_uint32_t drops_known;   /* parent: 0 where drops cannot be told */
    apr_uint64_t sampled;       /* children: worker turns looked at (1 in 16) */
    apr_uint64_t local;         /* ... run on the CPU that received them */
} __attribute__((aligned(RP_CACHE_LINE))) rp_bstat;

typedef struct rp_served {
    apr_uint64_t n;             /* requests this slot's child served */
} __attribute__((aligned(RP_CACHE_LINE))) rp_served;

static rp_bstat *table;         /* rp_lim.num_buckets rows, or NULL */
static int table_rows;
/* Requests each scoreboard slot's child has served (ExtendedStatus, which
 * the scoreboard's counts need, may be off). */
static rp_served *served;
static int served_slots;
/* This process's slot once it is a child (rp_bstats_child_started), so
 * counting a request asks no one: -1 in the parent. */
static int own_slot = -1;

/* The parent's drop counting (count_drops), per table: the rule's state
 * (rp_drop_rule.h), one rp_drop_bucket per row. */
static rp_drop_bucket *dbucket;
static rp_drop_state dstate;
static apr_uint32_t drops_unknown_logged;

void rp_bstats_setup(apr_pool_t *pconf)
{
    apr_shm_t *shm;
    apr_size_t rows = rp_lim.num_buckets * sizeof(rp_bstat);
    apr_size_t size = rows + rp_lim.server_limit * sizeof(rp_served);
    apr_uintptr_t base;

    table = NULL;
    table_rows = 0;
    served = NULL;
    served_slots = 0;
    /* apr_shm's base is not line-aligned (it keeps a header): room to
     * round it up. */
    if (apr_shm_create(&shm, size + RP_CACHE_LINE, NULL, pconf)
        != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, RP_LOG_TAG
                     "no shared memory for per-bucket statistics; "
                     "server-status will not show them");
        return;
    }
    base = (apr_uintptr_t)apr_shm_baseaddr_get(shm);
    table = (rp_bstat *)((base + RP_CACHE_LINE - 1)
                         & ~(apr_uintptr_t)(RP_CACHE_LINE - 1));
    memset(table, 0, size);
    table_rows = rp_lim.num_buckets;
    served = (rp_served *)((char *)table + rows);
    served_slots = rp_lim.server_limit;
    dbucket = apr_palloc(pconf, table_rows * sizeof(*dbucket));
    rp_drop_rule_start(&dstate, dbucket, table_rows);
    rp_bstats_sample();
}

void rp_bstats_child_started(int slot)
{
    own_slot = slot;
    if (served && slot >= 0 && slot < served_slots) {
        __atomic_store_n(&served[slot].n, 0, __ATOMIC_RELAXED);
    }
}

int rp_bstats_request_done(request_rec *r)
{
    int slot = own_slot;

    (void)r;
    if (served && slot >= 0 && slot < served_slots) {
        __atomic_fetch_add(&served[slot].n, 1, __ATOMIC_RELAXED);
    }
    return DECLINED;
}

void rp_bstats_accepted(int bucket)
{
    if (table && bucket < table_rows) {
        __atomic_fetch_add(&table[bucket].accepted, 1, __ATOMIC_RELAXED);
    }
}

void rp_bstats_locality(int bucket, int local)
{
    if (table && bucket < table_rows) {
        __atomic_fetch_add(&table[bucket].sampled, 1, __ATOMIC_RELAXED);
        if (local) {
            __atomic_fetch_add(&table[bucket].local, 1, __ATOMIC_RELAXED);
        }
    }
}

/* One listener's accept queue (TCP_INFO of a listening socket: unacked
 * is the queue, sacked its limit); 0 where it cannot be read. */
static int listener_queue(ap_listen_rec *lr, apr_uint32_t *queued,
                          apr_uint32_t *limit)
{
#ifdef TCP_INFO
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    int fd;

    apr_os_sock_get(&fd, lr->sd);
    if (fd >= 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
        *queued = ti.tcpi_unacked;
        *limit = ti.tcpi_sacked;
        return 1;
    }
#endif
    (void)lr;
    *queued = *limit = 0;
    return 0;
}

void rp_bstats_queue_of(int bucket, apr_uint32_t *queued, apr_uint32_t *limit)
{
    ap_listen_rec *lr;
    apr_uint32_t q, lim;

    *queued = *limit = 0;
    for (lr = rp_buckets[bucket].listeners; lr; lr = lr->next) {
        if (listener_queue(lr, &q, &lim)) {
            *queued += q;
            *limit += lim;
        }
    }
}

/* The sum of the drop counters of the bucket's sockets (SO_MEMINFO), and
 * whether one of them defers accepting until data (TCP_DEFER_ACCEPT, the
 * AcceptFilter); 0 where the counters cannot be read. */
static int drops_of(int bucket, apr_uint32_t *sum, int *defer)
{
    *sum = 0;
    *defer = 0;
#if defined(SO_MEMINFO) && defined(__linux__)
    ap_listen_rec *lr;

    for (lr = rp_buckets[bucket].listeners; lr; lr = lr->next) {
        apr_uint32_t mi[SK_MEMINFO_VARS];
        socklen_t len = sizeof(mi);
        int fd, secs = 0;
        socklen_t slen = sizeof(secs);
        apr_os_sock_get(&fd, lr->sd);
        if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) != 0
            || len <= SK_MEMINFO_DROPS * sizeof(mi[0])) {
            return 0;
        }
        *sum += mi[SK_MEMINFO_DROPS];
        if (getsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, &slen) == 0
            && secs > 0) {
            *defer = 1;
        }
    }
    return 1;
#else
    (void)bucket;
    return 0;
#endif
}

/* Counters of the parent's network namespace (what `nstat` shows):
 * TcpExt ListenDrops, connection attempts refused by one of its listeners
 * (an accept queue full: ListenOverflows; a SYN queue full without
 * syncookies; no memory for a new socket), and TCPDeferAcceptDrop, bare
 * handshake ACKs discarded under TCP_DEFER_ACCEPT.  0 where they cannot be
 * read. */
static int namespace_drops(uint64_t *refused, uint64_t *acks)
{
#ifdef __linux__
    static char buf[32768];     /* TcpExt comes first, ~3 KB */
    size_t len = 0;
    int fd = open("/proc/self/net/netstat", O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return 0;
    }
    while (len < sizeof(buf) - 1) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += n;
    }
    close(fd);
    buf[len] = '\0';
    return rp_drop_rule_netstat_field(buf, "TcpExt:", "ListenDrops", refused)
           && rp_drop_rule_netstat_field(buf, "TcpExt:", "TCPDeferAcceptDrop",
                                         acks);
#else
    (void)refused;
    (void)acks;
    return 0;
#endif
}

/* Whether one of the bucket's listeners has its accept queue full or one
 * short (the kernel's holds backlog + 1; a burst between two samples fills
 * the last place): only a full queue refuses (rp_drop_rule.h).  Per
 * listener: beside an idle Listen, a full one's sum would not show it. */
static int queue_full(int bucket)
{
    ap_listen_rec *lr;
    apr_uint32_t q, lim;

    for (lr = rp_buckets[bucket].listeners; lr; lr = lr->next) {
        if (listener_queue(lr, &q, &lim) && q > 0 && q >= lim) {
            return 1;
        }
    }
    return 0;
}

/* Read every bucket's drop counters into the rule (rp_drop_rule_bucket);
 * 0 if one could not be read. */
static int read_socket_drops(void)
{
    int b, ok = 1;

    for (b = 0; b < table_rows; b++) {
        apr_uint64_t acc = __atomic_load_n(&table[b].accepted,
                                           __ATOMIC_RELAXED);
        apr_uint32_t sk;
        int defer;

        ok &= drops_of(b, &sk, &defer);
        rp_drop_rule_bucket(&dbucket[b], sk, acc, table[b].queued,
                            queue_full(b), defer);
    }
    return ok;
}

/* Drops since the last sample, shared among the buckets
 * (dbucket[].share); 0 when they cannot be told. */
static int share_drops(void)
{
    uint64_t refused = 0, acks = 0;
    int ok, ns_ok, known;

    /* The sockets first, the namespace after: a refusal between the two
     * reads (the kernel counts it on the socket first) is in the
     * namespace's rise but on no socket yet, and is carried to the next
     * sample. */
    ok = read_socket_drops();
    ns_ok = ok && namespace_drops(&refused, &acks);
    known = rp_drop_rule_share(&dstate, dbucket, table_rows, ok, ns_ok,
                               refused, acks);
    if (known == RP_DROP_NO_NAMESPACE) {
        mpmng_log_once(&drops_unknown_logged, APLOG_MARK, APLOG_WARNING, 0,
                       ap_server_conf, RP_LOG_TAG "cannot read TcpExt "
                       "ListenDrops from /proc/self/net/netstat: with "
                       "AcceptFilter data (TCP_DEFER_ACCEPT) the listeners' "
                       "own drop counters count every connection, so "
                       "server-status shows no drops");
        return 0;
    }
    return known;
}

/* Add the drops since the last sample to each bucket's count. */
static void count_drops(void)
{
    int b, known = share_drops();

    for (b = 0; b < table_rows; b++) {
        rp_bstat *st = &table[b];
        if (known) {
            __atomic_store_n(&st->drops, st->drops + dbucket[b].share,
                             __ATOMIC_RELAXED);
        }
        __atomic_store_n(&st->drops_known, (apr_uint32_t)known,
                         __ATOMIC_RELAXED);
    }
}

int rp_bstats_progress(int bucket, apr_uint32_t *queued,
                       apr_uint64_t *accepted)
{
    apr_uint32_t limit;

    if (!table || bucket >= table_rows) {
        return 0;
    }
    rp_bstats_queue_of(bucket, queued, &limit);
    *accepted = __atomic_load_n(&table[bucket].accepted, __ATOMIC_RELAXED);
    return 1;
}

/* A bucket with connections waiting and nothing accepted since the last
 * look (at least a second ago) is stuck: say so once until it recovers. */
static void watch_stuck(int b, rp_bstat *st, apr_uint64_t accepted)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());

    if (st->queued == 0 || accepted != st->seen_accepted) {
        st->stuck_since = 0;
        st->stuck_logged = 0;
        st->seen_accepted = accepted;
        return;
    }
    if (!st->stuck_since) {
        st->stuck_since = now;
    }
    else if (now - st->stuck_since >= 2) {
        mpmng_log_once(&st->stuck_logged, APLOG_MARK, APLOG_WARNING, 0,
                       ap_server_conf, RP_LOG_TAG "bucket %d: %u connections "
                       "waiting and none accepted for %u s: its children are "
                       "stuck (a blocked module, a stopped process?) or all "
                       "busy; see server-status", b, st->queued,
                       now - st->stuck_since);
    }
}

void rp_bstats_sample(void)
{
    int b;

    for (b = 0; table && b < table_rows; b++) {
        rp_bstat *st = &table[b];
        apr_uint32_t q, lim;
        rp_bstats_queue_of(b, &q, &lim);
        __atomic_store_n(&st->queued, q, __ATOMIC_RELAXED);
        __atomic_store_n(&st->queue_limit, lim, __ATOMIC_RELAXED);
        watch_stuck(b, st, __atomic_load_n(&st->accepted, __ATOMIC_RELAXED));
    }
    if (table) {
        count_drops();
    }
}

/* Current-generation children of each bucket: running, accepting. */
static void count_children(int b, int *running, int *accepting)
{
    int i;

    *running = *accepting = 0;
    for (i = 0; i < rp_lim.daemons_limit; i++) {
        process_score *ps = ap_get_scoreboard_process(i);
        if (ps->pid == 0 || ps->bucket != b
            || ps->generation != rp_state->mpm->my_generation) {
            continue;
        }
        (*running)++;
        if (!ps->quiescing && !ps->not_accepting) {
            (*accepting)++;
        }
    }
}

static const char *bucket_addresses(request_rec *r, int b)
{
    ap_listen_rec *lr;
    const char *out = "";

    for (lr = rp_buckets[b].listeners; lr; lr = lr->next) {
        out = apr_psprintf(r->pool, "%s%s%pI", out, *out ? " " : "",
                           lr->bind_addr);
    }
    return out;
}

/* Requests each current child has served, for fairness across children. */
static void children_status(request_rec *r, int flags)
{
    int i;

    for (i = 0; served && i < rp_lim.daemons_limit && i < served_slots; i++) {
        process_score *ps = ap_get_scoreboard_process(i);

        if (ps->pid == 0 || ps->generation != rp_state->mpm->my_generation) {
            continue;
        }
        if (flags & AP_STATUS_SHORT) {
            ap_rprintf(r, "ReusePortChild%d: pid %ld bucket %d requests %"
                       APR_UINT64_T_FMT "\n", i, (long)ps->pid, ps->bucket,
                       __atomic_load_n(&served[i].n, __ATOMIC_RELAXED));
        }
    }
}

int rp_bstats_status(request_rec *r, int flags)
{
    int b;

    if (!table || !rp_buckets) {
        return OK;
    }
    if (flags & AP_STATUS_SHORT) {
        ap_rprintf(r, "ReusePortBuckets: %d\n", table_rows);
    }
    else {
        ap_rputs("<hr /><h2>mpm_reuseport buckets</h2>\n<table border=\"0\">"
                 "<tr><th>bucket</th><th>listeners</th><th>children "
                 "(accepting)</th><th>accepted</th><th>waiting in the "
                 "kernel / limit</th><th>refused (queue full)</th><th>served "
                 "on the receiving CPU</th></tr>\n", r);
    }
    for (b = 0; b < table_rows; b++) {
        rp_bstat *st = &table[b];
        apr_uint64_t acc = __atomic_load_n(&st->accepted, __ATOMIC_RELAXED);
        apr_uint32_t q = __atomic_load_n(&st->queued, __ATOMIC_RELAXED);
        apr_uint32_t lim = __atomic_load_n(&st->queue_limit, __ATOMIC_RELAXED);
        apr_uint64_t drops = __atomic_load_n(&st->drops, __ATOMIC_RELAXED);
        int known = __atomic_load_n(&st->drops_known, __ATOMIC_RELAXED);
        apr_uint64_t n = __atomic_load_n(&st->sampled, __ATOMIC_RELAXED);
        apr_uint64_t loc = __atomic_load_n(&st->local, __ATOMIC_RELAXED);
        const char *dropped = known ? apr_psprintf(r->pool, "%"
                                                   APR_UINT64_T_FMT, drops)
                                    : NULL;
        int running, accepting;

        count_children(b, &running, &accepting);
        if (flags & AP_STATUS_SHORT) {
            /* Monitoring clients read a number per key: where drops cannot
             * be told, no Drops key rather than a 0 that would lie. */
            ap_rprintf(r, "ReusePortBucket%dChildren: %d\n"
                       "ReusePortBucket%dAccepting: %d\n"
                       "ReusePortBucket%dAccepted: %" APR_UINT64_T_FMT "\n"
                       "ReusePortBucket%dQueued: %u\n"
                       "ReusePortBucket%dQueueLimit: %u\n",
                       b, running, b, accepting, b, acc, b, q, b, lim);
            if (dropped) {
                ap_rprintf(r, "ReusePortBucket%dDrops: %s\n", b, dropped);
            }
            ap_rprintf(r, "ReusePortBucket%dSampled: %" APR_UINT64_T_FMT "\n"
                       "ReusePortBucket%dLocal: %" APR_UINT64_T_FMT "\n",
                       b, n, b, loc);
        }
        else {
            ap_rprintf(r, "<tr><td>%d</td><td>%s</td><td>%d (%d)</td><td>%"
                       APR_UINT64_T_FMT "</td><td>%u / %u</td><td>%s</td>"
                       "<td>%s</td></tr>\n", b,
                       ap_escape_html(r->pool, bucket_addresses(r, b)),
                       running, accepting, acc, q, lim,
                       dropped ? dropped : "-",
                       n ? apr_psprintf(r->pool, "%d%%", (int)(loc * 100 / n))
                         : "-");
        }
    }
    children_status(r, flags);
    if (!(flags & AP_STATUS_SHORT)) {
        ap_rputs("</table>\n<p>Waiting: connections the kernel completed "
                 "that no child has accepted yet (sampled by the parent "
                 "about once a second). Refused: connection attempts the "
                 "kernel turned away because the bucket's queue was full "
                 "(a client may retry and get in). Served on the receiving "
                 "CPU: share "
                 "of requests (one in 16 looked at) that ran on the CPU "
                 "that processed their packets.</p>\n", r);
    }
    return OK;
}
