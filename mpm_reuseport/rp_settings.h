/* Directive values of mpm_reuseport and how they resolve into the limits the
 * parent and children run with.  Pure logic: no httpd or APR calls, so it is
 * unit-tested on its own (test/unit/check_settings.c). */
#ifndef RP_SETTINGS_H
#define RP_SETTINGS_H

#include <stddef.h>

#include "mpmng_int.h"

#define RP_UNSET (-1)
#define RP_BUCKETS_AUTO 0

/* Compile-time ceilings, as in the stock threaded MPMs. */
#define RP_MAX_SERVER_LIMIT 20000
#define RP_MAX_THREAD_LIMIT 100000
#define RP_MAX_BUCKETS 1024

#define RP_DEFAULT_SERVER_LIMIT 16
#define RP_DEFAULT_THREAD_LIMIT 64
#define RP_DEFAULT_THREADS_PER_CHILD 25
#define RP_DEFAULT_MIN_SPARE_THREADS 75
#define RP_DEFAULT_MAX_SPARE_THREADS 250
/* ReusePortStuckTimeout, milliseconds (0: off) */
#define RP_DEFAULT_STUCK_TIMEOUT 50
#define RP_MAX_STUCK_TIMEOUT 60000

/* What the configuration said; RP_UNSET where it said nothing. */
typedef struct rp_settings {
    int start_servers;
    int server_limit;
    int thread_limit;
    int threads_per_child;
    int max_workers;          /* MaxRequestWorkers */
    int min_spare_threads;
    int max_spare_threads;
    int buckets;              /* RP_BUCKETS_AUTO or a count */
    int reuseport;            /* 1 on (default), 0 off */
    int per_bucket;           /* ReusePortChildrenPerBucket (RP_UNSET: 1) */
    int stuck_timeout;        /* ReusePortStuckTimeout ms, 0 off (RP_UNSET:
                                 RP_DEFAULT_STUCK_TIMEOUT) */
    int cpu_affinity;         /* ReusePortCPUAffinity: 1 on, 0 off (default) */
} rp_settings;

/* What the server runs with. */
typedef struct rp_limits {
    int num_buckets;
    int server_limit;
    int thread_limit;
    int threads_per_child;
    int max_workers;
    int daemons_limit;        /* max children at once = max_workers / tpc */
    int start_servers;
    int min_spare_threads;
    int max_spare_threads;
    int reuseport;            /* effective: configured on and available */
    int per_bucket;           /* accepting children kept in each bucket */
    int stuck_timeout;        /* ms a bucket's queue may wait with nothing
                                 accepted before it gets a child; 0: never */
    int cpu_affinity;         /* pin children, steer connections by CPU */
} rp_limits;

/* Adjustments made while resolving, each worth one log line. */
#define RP_MAX_NOTES 16
typedef struct rp_notes {
    int count;
    char text[RP_MAX_NOTES][200];
} rp_notes;

void rp_settings_init(rp_settings *s);

/* "auto" or a bucket count from 1 to RP_MAX_BUCKETS.  Counts are parsed
 * as every module parses a directive's integer (mpmng_int_parse); returns
 * one of its MPMNG_INT_* results. */
int rp_parse_buckets(const char *arg, int *out);

/* "off" (0) or milliseconds from 1 to RP_MAX_STUCK_TIMEOUT for
 * ReusePortStuckTimeout; MPMNG_INT_* as above. */
int rp_parse_stuck_timeout(const char *arg, int *out);

/* Resolve settings into limits.  online_cpus: CPUs the system has online;
 * have_reuseport: whether the kernel accepts SO_REUSEPORT.  Returns 0, or -1
 * with err holding a message that names the offending directive.  Harmless
 * adjustments (rounding, raising a spare count) are reported in notes. */
int rp_settings_resolve(const rp_settings *s, int online_cpus,
                        int have_reuseport, rp_limits *out, rp_notes *notes,
                        char *err, size_t errlen);

#endif
