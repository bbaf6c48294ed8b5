/* ReusePortCPUAffinity: children of a bucket run on that bucket's CPUs
 * (rp_cpumap.h), and rp_steer.c sends each new connection to a bucket of
 * the CPU that received it, so a request is served where the kernel
 * processed its packets (warm caches, no cross-CPU wake-up).  Also the
 * locality sample every child takes, on or off, so server-status shows
 * the share of requests served on the receiving CPU. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* sched_getcpu, CPU_SET */
#endif
#include "rp.h"
#include "rp_cpumap.h"

#ifdef __linux__
#include <sched.h>
#include <sys/socket.h>
#ifndef SO_INCOMING_CPU
#define SO_INCOMING_CPU 49
#endif
#endif

#define SAMPLE_EVERY 16

static rp_cpumap cpumap;
static int cpumap_ok;

#ifdef __linux__
static int allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    int c, n = 0;

    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return 0;
    }
    for (c = 0; c < CPU_SETSIZE && n < max; c++) {
        if (CPU_ISSET(c, &set)) {
            cpus[n++] = c;
        }
    }
    return n;
}
#endif

void rp_affinity_setup(int nb)
{
    cpumap_ok = 0;
#ifdef __linux__
    if (rp_lim.cpu_affinity) {
        int cpus[RP_CPUMAP_MAX + 1];
        int n = allowed_cpus(cpus, RP_CPUMAP_MAX + 1);
        cpumap_ok = rp_cpumap_init(&cpumap, cpus, n, nb) == 0;
        if (!cpumap_ok) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf,
                         RP_LOG_TAG "ReusePortCPUAffinity: cannot map %d "
                         "CPUs (at most %d); children are not pinned", n,
                         RP_CPUMAP_MAX);
        }
    }
#else
    (void)nb;
#endif
}

const rp_cpumap *rp_affinity_map(void)
{
    return cpumap_ok ? &cpumap : NULL;
}

/* The bucket this process serves (a child's), for its samples. */
static int served_bucket;

void rp_affinity_pin(int bucket)
{
    served_bucket = bucket;
#ifdef __linux__
    cpu_set_t set;
    int i;

    if (!cpumap_ok) {
        return;
    }
    CPU_ZERO(&set);
    for (i = 0; i < cpumap.ncpu; i++) {
        if (rp_cpumap_serves(&cpumap, i, bucket)) {
            CPU_SET(cpumap.cpu[i], &set);
        }
    }
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, errno, ap_server_conf,
                     RP_LOG_TAG "ReusePortCPUAffinity: cannot pin the "
                     "children of bucket %d; they run on any CPU", bucket);
    }
#else
    (void)bucket;
#endif
}

void rp_affinity_sample(apr_socket_t *sock)
{
#ifdef __linux__
    static __thread unsigned int countdown;
    int fd, rcpu = -1, mine;
    socklen_t len = sizeof(rcpu);

    if (countdown--) {
        return;
    }
    countdown = SAMPLE_EVERY - 1;
    if (apr_os_sock_get(&fd, sock) != APR_SUCCESS
        || getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &rcpu, &len) != 0
        || rcpu < 0 || (mine = sched_getcpu()) < 0) {
        return;
    }
    rp_bstats_locality(served_bucket, rcpu == mine);
#else
    (void)sock;
#endif
}
