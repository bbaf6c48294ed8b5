/* Which CPUs serve which bucket when ReusePortCPUAffinity is on.  The
 * server's allowed CPUs, in ascending order, are numbered 0..ncpu-1 ("CPU
 * index").  With no more buckets than CPUs, CPU index i serves bucket
 * i % nb (a bucket may get several CPUs); with more buckets than CPUs, each
 * bucket gets one CPU (index b % ncpu) and the buckets of a CPU share its
 * connections by flow hash.  Children of a bucket run on its CPUs, and a new
 * connection goes to a bucket of the CPU that received it, so the request
 * is served where its packets were processed.  Pure; unit-tested in
 * test/unit/check_cpumap.c; rp_steer.c turns it into a BPF program. */
#ifndef RP_CPUMAP_H
#define RP_CPUMAP_H

#include <stdint.h>

/* Above this many CPUs no steering program is built (classic BPF has at
 * most 4096 instructions; we use up to 6 per CPU). */
#define RP_CPUMAP_MAX 512

typedef struct rp_cpumap {
    int ncpu;
    int nb;
    int cpu[RP_CPUMAP_MAX];     /* CPU ids, ascending */
} rp_cpumap;

/* 0, or -1 when ncpu is 0 or above RP_CPUMAP_MAX or nb < 1.  `cpus` need
 * not be sorted. */
int rp_cpumap_init(rp_cpumap *m, const int *cpus, int ncpu, int nb);

/* The buckets CPU index i steers to: first, first + ncpu, ... (count). */
void rp_cpumap_buckets_of(const rp_cpumap *m, int i, int *first, int *count);

/* The bucket a connection received on CPU id `cpu` goes to (flow hash
 * `hash`); CPUs outside the map spread by hash over all buckets. */
int rp_cpumap_bucket_for(const rp_cpumap *m, int cpu, uint32_t hash);

/* Whether CPU index i serves bucket b. */
int rp_cpumap_serves(const rp_cpumap *m, int i, int b);

#endif
