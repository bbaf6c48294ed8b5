/* Unit tests: each bucket's share of the connections the kernel refused,
 * and reading /proc/net/netstat (rp_drop_rule.c).  The cases are those of
 * test/integration/test_status_numbers.py and of the commit that made the
 * rule (issue #38), as counters a test moves by hand. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rp_drop_rule.h"
#include "check_run.h"

#define NB 2
/* ListenBacklog 8: the kernel's queue holds 9; full or one short counts
 * as full (one listener per bucket here, as rp_bstats.c tells it). */
#define LIMIT 8

/* The counters the glue reads (rp_bstats.c), which a test moves as the
 * kernel would, and what server-status has shown so far: one per test
 * (a new table with defer-accept, its baselines set, before each). */
static struct world {
    uint32_t sk[NB];            /* each bucket's sockets' drop counters */
    uint64_t accepted[NB];      /* connections its children accepted */
    uint32_t queued[NB];        /* waiting in its queue */
    int defer[NB];              /* AcceptFilter data (TCP_DEFER_ACCEPT) */
    uint64_t refused;           /* the namespace's TcpExt ListenDrops */
    uint64_t acks;              /* and TCPDeferAcceptDrop */
    int sockets_ok, ns_ok;      /* whether the glue could read them */
    rp_drop_state st;
    rp_drop_bucket b[NB];
    uint64_t shown[NB];         /* Drops, summed over the samples */
} w;

/* A new table; its first sample only sets the baselines. */
static void start(int defer)
{
    int i;

    memset(&w, 0, sizeof(w));
    for (i = 0; i < NB; i++) {
        w.defer[i] = defer;
    }
    w.sockets_ok = w.ns_ok = 1;
    rp_drop_rule_start(&w.st, w.b, NB);
}

/* One sample, as rp_bstats.c takes it: the sockets, then the namespace
 * (passed as 0 where it was not read). */
static int look(void)
{
    int ns_ok = w.sockets_ok && w.ns_ok, i, known;

    for (i = 0; i < NB; i++) {
        rp_drop_rule_bucket(&w.b[i], w.sk[i], w.accepted[i], w.queued[i],
                            w.queued[i] > 0 && w.queued[i] >= LIMIT, w.defer[i]);
    }
    known = rp_drop_rule_share(&w.st, w.b, NB, w.sockets_ok, ns_ok,
                               ns_ok ? w.refused : 0, ns_ok ? w.acks : 0);
    for (i = 0; known == RP_DROP_KNOWN && i < NB; i++) {
        w.shown[i] += w.b[i].share;
    }
    return known;
}

/* n connections enter bucket b's queue: under defer-accept the kernel
 * discards each one's bare handshake ACK, on the socket's counter and the
 * namespace's TCPDeferAcceptDrop. */
static void enter(int b, uint32_t n)
{
    w.queued[b] += n;
    if (w.defer[b]) {
        w.sk[b] += n;
        w.acks += n;
    }
}

/* ... and its children take n of those waiting. */
static void take(int b, uint32_t n)
{
    w.queued[b] -= n;
    w.accepted[b] += n;
}

static void serve(int b, uint32_t n)
{
    enter(b, n);
    take(b, n);
}

/* n handshake-completing ACKs refused by bucket b's full queue: ListenDrops
 * counts each once, the socket's counter twice. */
static void refuse(int b, uint32_t n)
{
    w.refused += n;
    w.sk[b] += 2 * n;
}

/* One sample, after which the drops are known, bucket 0 was given s0
 * refusals, bucket 1 s1, and `carry` are kept for the next sample. */
static void gives(uint32_t s0, uint32_t s1, uint64_t carry)
{
    ck_assert_int_eq(look(), RP_DROP_KNOWN);
    ck_assert_uint_eq(w.b[0].share, s0);
    ck_assert_uint_eq(w.b[1].share, s1);
    ck_assert_uint_eq(w.st.carry, carry);
}

/* ... the two were given `total` between them. */
static void gives_in_all(uint32_t total, uint64_t carry)
{
    ck_assert_int_eq(look(), RP_DROP_KNOWN);
    ck_assert_uint_eq(w.b[0].share + w.b[1].share, total);
    ck_assert_uint_eq(w.st.carry, carry);
}

static void begin(void)
{
    start(1);
    gives(0, 0, 0);
}

START_TEST(an_idle_server_with_defer_accept_noise_shows_no_drops)
{
    int t;

    /* 10,000 connections in 10 s, a few other segments discarded: the
     * sockets' counters rose by more than 10,000, nothing was refused. */
    for (t = 0; t < 10; t++) {
        serve(0, 480 + t);
        serve(1, 520 - t);
        w.sk[t % 2] += 1 + t % 3;
        gives(0, 0, 0);
    }
    ck_assert_uint_gt(w.sk[0] + w.sk[1], 10000);
}
END_TEST

START_TEST(a_stopped_bucket_gets_exactly_the_refusals_the_running_one_none)
{
    uint32_t t;

    /* Bucket 1's only child is stopped: its queue fills (ListenBacklog 8
     * queues 9), then it refuses; bucket 0 serves one at a time, with a
     * stray discarded segment now and then. */
    enter(1, 9);
    for (t = 0; t < 6; t++) {
        serve(0, 10);
        w.sk[0] += t % 2;
        refuse(1, 3 + 2 * t);
        gives(0, 3 + 2 * t, 0);
    }
    ck_assert_uint_eq(w.refused, 48);
    ck_assert_uint_eq(w.shown[1], 48);
}
END_TEST

START_TEST(two_buckets_refusing_at_once_share_the_exact_total)
{
    enter(0, 9);
    enter(1, 9);
    refuse(0, 15);
    refuse(1, 25);
    gives_in_all(40, 0);
    ck_assert_uint_le(w.b[0].share, w.b[0].excess);
    ck_assert_uint_le(w.b[1].share, w.b[1].excess);
    /* More than the largest excess holds (SYNs refused, once each on
     * the counters): the largest gets all its excess, the next the rest. */
    w.sk[0] += 20;
    w.sk[1] += 30;
    w.refused += 50;
    gives(20, 30, 0);
}
END_TEST

START_TEST(another_servers_refusals_are_carried_one_sample_then_dropped)
{
    /* Another listener in the namespace refuses 7: no bucket's counter
     * rose by more than its connections explain. */
    serve(0, 20);
    serve(1, 20);
    w.refused += 7;
    gives(0, 0, 7);
    serve(0, 20);
    gives(0, 0, 0);
    /* Then bucket 1 refuses 5 of its own: 5, the 7 are gone. */
    enter(1, 9);
    refuse(1, 5);
    gives(0, 5, 0);
}
END_TEST

START_TEST(a_refusal_read_before_its_socket_shows_it_is_given_next_sample)
{
    /* The glue reads the sockets, then the namespace: 3 refusals came in
     * between (in ListenDrops, on no socket read yet). */
    serve(0, 20);
    w.refused += 3;
    gives(0, 0, 3);
    w.sk[1] += 6;
    gives(0, 3, 0);
}
END_TEST

START_TEST(retransmitted_acks_do_not_take_a_lagging_refusal)
{
    /* Bucket 0 serves 20 clients slow to send their requests: the kernel
     * discarded their ACK again at each SYN-ACK retransmit, 10 more in
     * all (on its counter and in TCPDeferAcceptDrop).  Bucket 1 refused 5
     * between the glue's reads (in ListenDrops, not yet on its socket).
     * The 10 are noise, not room for the 5: carried, then bucket 1's. */
    serve(0, 20);
    w.sk[0] += 10;
    w.acks += 10;
    w.refused += 5;
    gives(0, 0, 5);
    w.sk[1] += 10;
    gives(0, 5, 0);
}
END_TEST

START_TEST(a_queue_draining_after_its_child_resumed_keeps_its_refusals)
{
    /* make check, a loaded machine: the stopped bucket 1 was given 19 of
     * 25 refusals, the running bucket 0 (its queue never full) 6.  Bucket
     * 1 is full; in one interval it refuses 5 more, then its child resumes
     * and takes its 9, and 11 retries enter and are taken, each ACK
     * discarded.  Bucket 0 serves 10, whose clients were slow: 20
     * more ACKs discarded.  The noise fitted to the namespace's 50 leaves
     * bucket 1 no excess and bucket 0 some: the 5 are still bucket 1's. */
    enter(1, 9);
    gives(0, 0, 0);
    refuse(1, 5);
    take(1, 9);
    serve(1, 11);
    serve(0, 10);
    w.sk[0] += 20;
    w.acks += 20;
    gives(0, 5, 0);
    /* The queue empty two samples on: a refusal now is bucket 0's. */
    serve(1, 5);
    gives(0, 0, 0);
    w.sk[0] += 4;
    w.refused += 2;
    gives(2, 0, 0);
}
END_TEST

START_TEST(noise_is_no_more_than_the_acks_the_namespace_discarded)
{
    /* Bucket 1 queued 50 with syncookies (no ACK discarded) and refused
     * 30 SYNs (once each): its counter rose by 30, less than its
     * connections would explain if each had discarded an ACK. */
    w.queued[1] += 50;
    w.refused += 30;
    w.sk[1] += 30;
    gives(0, 30, 0);
    /* Again, while bucket 0 serves 40 (their ACKs discarded): the noise
     * scaled down to the 40 leaves the 30 in the excess of the two, and
     * the full bucket 1 takes them (by excess alone bucket 0, which
     * refused nothing, was given 18). */
    take(1, 50);
    w.queued[1] += 50;
    w.refused += 30;
    w.sk[1] += 30;
    serve(0, 40);
    gives(0, 30, 0);
}
END_TEST

START_TEST(counters_that_wrap_or_go_back_count_what_rose)
{
    start(1);
    w.sk[1] = 0xfffffff0u;
    w.refused = 1000;
    w.acks = 5000;
    gives(0, 0, 0);
    /* The socket's 32-bit counter wraps past 0. */
    enter(1, 9);
    refuse(1, 16);
    ck_assert_uint_lt(w.sk[1], 0x100);
    gives(0, 16, 0);
    /* The namespace's counters never go back; should they, nothing is
     * given (not 2^64 - 1), though a bucket has excess. */
    w.sk[0] += 4;
    w.refused -= 20;
    w.acks -= 20;
    gives(0, 0, 0);
}
END_TEST

START_TEST(a_queue_emptied_before_its_accepts_are_counted_explains_nothing)
{
    start(1);
    enter(1, 9);
    gives(0, 0, 0);
    /* 9 left bucket 1's queue, its children have counted 5 of them; it
     * refused 6 SYNs meanwhile.  Bucket 0 served 50. */
    w.queued[1] = 0;
    w.accepted[1] += 5;
    w.refused += 6;
    w.sk[1] += 6;
    serve(0, 50);
    w.acks += 5;
    gives(0, 6, 0);
    ck_assert_uint_eq(w.b[1].noise, 0);
}
END_TEST

START_TEST(accept_filter_none_shows_the_sockets_rise_exactly)
{
    start(0);
    gives(0, 0, 0);
    /* Nothing discards ACKs on our sockets, while another server's
     * defer-accept discards 100 in the namespace. */
    serve(0, 60);
    enter(1, 9);
    refuse(1, 23);
    w.acks += 100;
    gives(0, 23, 0);
    ck_assert_uint_eq(w.b[1].noise, 0);
    /* Without /proc: the sockets' own counters (a refused ACK counted
     * twice there). */
    w.ns_ok = 0;
    refuse(1, 10);
    gives(0, 20, 0);
}
END_TEST

START_TEST(without_the_namespace_defer_accept_drops_are_unknown)
{
    start(1);
    w.refused = 500;
    w.acks = 8000;
    w.ns_ok = 0;
    ck_assert_int_eq(look(), RP_DROP_UNKNOWN);
    serve(0, 10);
    ck_assert_int_eq(look(), RP_DROP_NO_NAMESPACE);
    /* /proc readable again: a new baseline, then known. */
    w.ns_ok = 1;
    gives(0, 0, 0);
    enter(1, 9);
    refuse(1, 4);
    gives(0, 4, 0);
    /* A socket's counter unreadable: unknown, with or without defer. */
    w.sockets_ok = 0;
    ck_assert_int_eq(look(), RP_DROP_UNKNOWN);
    w.defer[0] = w.defer[1] = 0;
    w.ns_ok = 0;
    ck_assert_int_eq(look(), RP_DROP_UNKNOWN);
}
END_TEST

START_TEST(a_new_table_starts_from_the_counters_as_they_are)
{
    /* Sockets kept across a restart and a namespace that has been busy:
     * the first sample only takes them as the baselines. */
    start(1);
    w.sk[0] = 123456;
    w.sk[1] = 7890;
    w.refused = 4242;
    w.acks = 999999;
    gives(0, 0, 0);
    enter(0, 9);
    refuse(0, 2);
    gives(2, 0, 0);
}
END_TEST

/* /proc/net/netstat in a network namespace after a defer-accept listener
 * served 37 connections and a listener with backlog 2 that accepts
 * nothing was sent 12 (Linux 6.18; its first four lines). */
static const char netstat_sample[] =
    "TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed "
    "EmbryonicRsts PruneCalled RcvPruned OfoPruned OutOfWindowIcmps "
    "LockDroppedIcmps ArpFilter TW TWRecycled TWKilled PAWSActive "
    "PAWSEstab BeyondWindow TSEcrRejected PAWSOldAck PAWSTimewait "
    "DelayedACKs DelayedACKLocked DelayedACKLost ListenOverflows "
    "ListenDrops TCPHPHits TCPPureAcks TCPHPAcks TCPRenoRecovery "
    "TCPSackRecovery TCPSACKReneging TCPSACKReorder TCPRenoReorder "
    "TCPTSReorder TCPFullUndo TCPPartialUndo TCPDSACKUndo "
    "TCPLossUndo TCPLostRetransmit TCPRenoFailures TCPSackFailures "
    "TCPLossFailures TCPFastRetrans TCPSlowStartRetrans TCPTimeouts "
    "TCPLossProbes TCPLossProbeRecovery TCPRenoRecoveryFail "
    "TCPSackRecoveryFail TCPRcvCollapsed TCPBacklogCoalesce "
    "TCPDSACKOldSent TCPDSACKOfoSent TCPDSACKRecv TCPDSACKOfoRecv "
    "TCPAbortOnData TCPAbortOnClose TCPAbortOnMemory "
    "TCPAbortOnTimeout TCPAbortOnLinger TCPAbortFailed "
    "TCPMemoryPressures TCPMemoryPressuresChrono TCPSACKDiscard "
    "TCPDSACKIgnoredOld TCPDSACKIgnoredNoUndo TCPSpuriousRTOs "
    "TCPMD5NotFound TCPMD5Unexpected TCPMD5Failure TCPSackShifted "
    "TCPSackMerged TCPSackShiftFallback TCPBacklogDrop "
    "PFMemallocDrop TCPMinTTLDrop TCPDeferAcceptDrop "
    "IPReversePathFilter TCPTimeWaitOverflow TCPReqQFullDoCookies "
    "TCPReqQFullDrop TCPRetransFail TCPRcvCoalesce TCPOFOQueue "
    "TCPOFODrop TCPOFOMerge TCPChallengeACK TCPSYNChallenge "
    "TCPFastOpenActive TCPFastOpenActiveFail TCPFastOpenPassive "
    "TCPFastOpenPassiveFail TCPFastOpenListenOverflow "
    "TCPFastOpenCookieReqd TCPFastOpenBlackhole "
    "TCPSpuriousRtxHostQueues BusyPollRxPackets TCPAutoCorking "
    "TCPFromZeroWindowAdv TCPToZeroWindowAdv TCPWantZeroWindowAdv "
    "TCPSynRetrans TCPOrigDataSent TCPHystartTrainDetect "
    "TCPHystartTrainCwnd TCPHystartDelayDetect TCPHystartDelayCwnd "
    "TCPACKSkippedSynRecv TCPACKSkippedPAWS TCPACKSkippedSeq "
    "TCPACKSkippedFinWait2 TCPACKSkippedTimeWait "
    "TCPACKSkippedChallenge TCPWinProbe TCPKeepAlive TCPMTUPFail "
    "TCPMTUPSuccess TCPDelivered TCPDeliveredCE TCPAckCompressed "
    "TCPZeroWindowDrop TCPRcvQDrop TCPWqueueTooBig "
    "TCPFastOpenPassiveAltKey TcpTimeoutRehash "
    "TcpDuplicateDataRehash TCPDSACKRecvSegs TCPDSACKIgnoredDubious "
    "TCPMigrateReqSuccess TCPMigrateReqFailure TCPPLBRehash "
    "TCPAORequired TCPAOBad TCPAOKeyNotFound TCPAOGood "
    "TCPAODroppedIcmps\n"
    "TcpExt: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 27 27 0 40 "
    "0 0 0 0 0 0 0 0 0 0 0 9 0 0 0 0 0 18 0 0 0 0 0 0 0 0 0 0 0 37 "
    "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 37 0 0 0 0 0 0 0 0 0 0 0 "
    "0 0 0 0 0 0 0 0 0 0 0 0 0 18 37 0 0 0 0 0 0 0 0 0 0 0 0 0 0 77 "
    "0 0 0 0 0 0 18 0 0 0 0 0 0 0 0 0 0 0\n"
    "IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts "
    "InBcastPkts OutBcastPkts InOctets OutOctets InMcastOctets "
    "OutMcastOctets InBcastOctets OutBcastOctets InCsumErrors "
    "InNoECTPkts InECT1Pkts InECT0Pkts InCEPkts ReasmOverlaps\n"
    "IpExt: 0 0 0 0 0 0 14938 14938 0 0 0 0 0 258 0 0 0 0\n";

START_TEST(netstat_field_reads_a_real_proc_net_netstat)
{
    /* Refusals and discarded ACKs; a name that begins another's; the
     * first and last of the line; the next pair. */
    static const struct {
        const char *prefix, *name;
        uint64_t val;
    } fields[] = {
        { "TcpExt:", "ListenDrops", 27 },
        { "TcpExt:", "TCPDeferAcceptDrop", 37 },
        { "TcpExt:", "TCPDelivered", 77 },
        { "TcpExt:", "TCPDeliveredCE", 0 },
        { "TcpExt:", "SyncookiesSent", 0 },
        { "TcpExt:", "TCPAODroppedIcmps", 0 },
        { "IpExt:", "InOctets", 14938 },
    };
    size_t i;

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        uint64_t v = 12345;
        ck_assert(rp_drop_rule_netstat_field(netstat_sample, fields[i].prefix,
                                             fields[i].name, &v));
        ck_assert_uint_eq(v, fields[i].val);
    }
}
END_TEST

START_TEST(netstat_field_without_the_field_is_0)
{
    uint64_t v = 5;

    ck_assert(!rp_drop_rule_netstat_field(netstat_sample, "TcpExt:",
                                          "NoSuchCounter", &v));
    /* Only a longer name begins with it. */
    ck_assert(!rp_drop_rule_netstat_field("TcpExt: ListenDropsOld\nTcpExt: 3\n",
                                          "TcpExt:", "ListenDrops", &v));
    /* IpExt's, not TcpExt's. */
    ck_assert(!rp_drop_rule_netstat_field(netstat_sample, "TcpExt:",
                                          "InOctets", &v));
    ck_assert(!rp_drop_rule_netstat_field(netstat_sample, "UdpExt:",
                                          "ListenDrops", &v));
    ck_assert(!rp_drop_rule_netstat_field("", "TcpExt:", "ListenDrops", &v));
    ck_assert_uint_eq(v, 5);
}
END_TEST

START_TEST(netstat_field_in_a_malformed_pair_is_0)
{
    uint64_t v = 5;

    /* Values cut short (a truncated read): the names past them. */
    ck_assert(!rp_drop_rule_netstat_field(
        "TcpExt: A B ListenDrops C\nTcpExt: 1 2\n", "TcpExt:",
        "ListenDrops", &v));
    ck_assert(rp_drop_rule_netstat_field(
        "TcpExt: A B ListenDrops C\nTcpExt: 1 2\n", "TcpExt:", "B", &v));
    ck_assert_uint_eq(v, 2);
    v = 5;
    /* Names without their values line. */
    ck_assert(!rp_drop_rule_netstat_field(
        "TcpExt: A ListenDrops\nIpExt: InOctets\nIpExt: 9\n", "TcpExt:",
        "ListenDrops", &v));
    ck_assert(!rp_drop_rule_netstat_field("TcpExt: A ListenDrops\n",
                                          "TcpExt:", "ListenDrops", &v));
    ck_assert(!rp_drop_rule_netstat_field("TcpExt: A ListenDrops",
                                          "TcpExt:", "ListenDrops", &v));
    ck_assert_uint_eq(v, 5);
}
END_TEST

static Suite *drop_rule_suite(void)
{
    const TTest *tests[] = {
        an_idle_server_with_defer_accept_noise_shows_no_drops,
        a_stopped_bucket_gets_exactly_the_refusals_the_running_one_none,
        two_buckets_refusing_at_once_share_the_exact_total,
        another_servers_refusals_are_carried_one_sample_then_dropped,
        a_refusal_read_before_its_socket_shows_it_is_given_next_sample,
        retransmitted_acks_do_not_take_a_lagging_refusal,
        a_queue_draining_after_its_child_resumed_keeps_its_refusals,
        noise_is_no_more_than_the_acks_the_namespace_discarded,
        counters_that_wrap_or_go_back_count_what_rose,
        a_queue_emptied_before_its_accepts_are_counted_explains_nothing,
        accept_filter_none_shows_the_sockets_rise_exactly,
        without_the_namespace_defer_accept_drops_are_unknown,
        a_new_table_starts_from_the_counters_as_they_are,
        netstat_field_reads_a_real_proc_net_netstat,
        netstat_field_without_the_field_is_0,
        netstat_field_in_a_malformed_pair_is_0,
    };
    Suite *su = suite_create("rp_drop_rule");
    TCase *tc = tcase_create("core");
    size_t i;

    tcase_add_checked_fixture(tc, begin, NULL);
    for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        tcase_add_test(tc, tests[i]);
    }
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return check_run(drop_rule_suite());
}
