#include "rp_settings.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void rp_settings_init(rp_settings *s)
{
    s->start_servers = RP_UNSET;
    s->server_limit = RP_UNSET;
    s->thread_limit = RP_UNSET;
    s->threads_per_child = RP_UNSET;
    s->max_workers = RP_UNSET;
    s->min_spare_threads = RP_UNSET;
    s->max_spare_threads = RP_UNSET;
    s->buckets = RP_BUCKETS_AUTO;
    s->reuseport = 1;
    s->per_bucket = RP_UNSET;
    s->stuck_timeout = RP_UNSET;
    s->cpu_affinity = 0;
}

/* The words first; numbers as every module parses them (mpmng_int.h). */
int rp_parse_buckets(const char *arg, int *out)
{
    if (arg && strcasecmp(arg, "auto") == 0) {
        *out = RP_BUCKETS_AUTO;
        return MPMNG_INT_OK;
    }
    return mpmng_int_parse(arg, 1, RP_MAX_BUCKETS, out);
}

int rp_parse_stuck_timeout(const char *arg, int *out)
{
    if (arg && strcasecmp(arg, "off") == 0) {
        *out = 0;
        return MPMNG_INT_OK;
    }
    return mpmng_int_parse(arg, 1, RP_MAX_STUCK_TIMEOUT, out);
}

static void note(rp_notes *notes, const char *fmt, ...)
{
    va_list ap;

    if (!notes || notes->count >= RP_MAX_NOTES) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(notes->text[notes->count++], sizeof(notes->text[0]), fmt, ap);
    va_end(ap);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int or_default(int v, int dflt)
{
    return v == RP_UNSET ? dflt : v;
}

/* Thread geometry: ThreadLimit, ThreadsPerChild, ServerLimit, MaxRequestWorkers. */
static int resolve_threads(const rp_settings *s, rp_limits *l, rp_notes *notes,
                           char *err, size_t errlen)
{
    l->server_limit = or_default(s->server_limit, RP_DEFAULT_SERVER_LIMIT);
    l->thread_limit = or_default(s->thread_limit, RP_DEFAULT_THREAD_LIMIT);
    l->threads_per_child = or_default(s->threads_per_child,
                                      RP_DEFAULT_THREADS_PER_CHILD);

    if (s->thread_limit == RP_UNSET
        && l->threads_per_child > l->thread_limit) {
        /* Only ThreadsPerChild was raised: let the limit follow it. */
        l->thread_limit = l->threads_per_child;
    }
    if (l->threads_per_child > l->thread_limit) {
        return fail(err, errlen,
                    "ThreadsPerChild %d exceeds ThreadLimit %d: raise "
                    "ThreadLimit or lower ThreadsPerChild",
                    l->threads_per_child, l->thread_limit);
    }

    l->max_workers = or_default(s->max_workers,
                                l->server_limit * l->threads_per_child);
    if (l->max_workers < l->threads_per_child) {
        note(notes, "MaxRequestWorkers %d is less than ThreadsPerChild %d; "
             "raised to %d", l->max_workers, l->threads_per_child,
             l->threads_per_child);
        l->max_workers = l->threads_per_child;
    }
    if (l->max_workers % l->threads_per_child) {
        int rounded = l->max_workers - l->max_workers % l->threads_per_child;
        note(notes, "MaxRequestWorkers %d is not a multiple of "
             "ThreadsPerChild %d; rounded down to %d",
             l->max_workers, l->threads_per_child, rounded);
        l->max_workers = rounded;
    }
    l->daemons_limit = l->max_workers / l->threads_per_child;
    if (l->daemons_limit > l->server_limit) {
        if (s->max_workers != RP_UNSET) {
            return fail(err, errlen,
                        "MaxRequestWorkers %d needs %d children of "
                        "ThreadsPerChild %d but ServerLimit is %d: raise "
                        "ServerLimit", l->max_workers, l->daemons_limit,
                        l->threads_per_child, l->server_limit);
        }
        l->daemons_limit = l->server_limit;
        l->max_workers = l->server_limit * l->threads_per_child;
    }
    return 0;
}

/* Buckets: "auto" follows the CPUs within what the limits allow; an explicit
 * count that cannot get its children per bucket is a configuration error. */
static int resolve_buckets(const rp_settings *s, int online_cpus,
                           int have_reuseport, rp_limits *l, rp_notes *notes,
                           char *err, size_t errlen)
{
    int per = l->per_bucket, most = l->daemons_limit / l->per_bucket;

    l->reuseport = s->reuseport && have_reuseport;
    if (per > l->daemons_limit) {
        return fail(err, errlen,
                    "ReusePortChildrenPerBucket %d is more than the %d children "
                    "allowed (MaxRequestWorkers %d / ThreadsPerChild %d, "
                    "ServerLimit %d)", per, l->daemons_limit, l->max_workers,
                    l->threads_per_child, l->server_limit);
    }
    if (s->buckets != RP_BUCKETS_AUTO && s->buckets > most) {
        return fail(err, errlen,
                    "ReusePortBuckets %d needs %d child%s per bucket but only "
                    "%d children are allowed (MaxRequestWorkers %d / "
                    "ThreadsPerChild %d, ServerLimit %d)",
                    s->buckets, per, per == 1 ? "" : "ren",
                    l->daemons_limit, l->max_workers,
                    l->threads_per_child, l->server_limit);
    }
    if (!l->reuseport) {
        if (s->buckets > 1) {
            note(notes, "ReusePortBuckets %d ignored: %s; using one shared "
                 "listener", s->buckets, s->reuseport
                 ? "SO_REUSEPORT is not available" : "ReusePort is off");
        }
        l->num_buckets = 1;
        return 0;
    }
    if (s->buckets != RP_BUCKETS_AUTO) {
        l->num_buckets = s->buckets;
        return 0;
    }
    l->num_buckets = online_cpus > 0 ? online_cpus : 1;
    if (l->num_buckets > RP_MAX_BUCKETS) {
        l->num_buckets = RP_MAX_BUCKETS;
    }
    if (l->num_buckets > most) {
        note(notes, "ReusePortBuckets auto: %d CPUs but only %d children "
             "allowed (%d per bucket); using %d buckets", online_cpus,
             l->daemons_limit, per, most);
        l->num_buckets = most;
    }
    return 0;
}

/* StartServers and spare threads, once buckets are known. */
static void resolve_spares(const rp_settings *s, rp_limits *l, rp_notes *notes)
{
    int nb = l->num_buckets, tpc = l->threads_per_child, floor_min, floor_max;
    int need = nb * l->per_bucket;

    l->start_servers = or_default(s->start_servers, need);
    if (l->start_servers < need) {
        note(notes, "StartServers %d raised to %d: every listener bucket "
             "needs %d child%s", l->start_servers, need, l->per_bucket,
             l->per_bucket == 1 ? "" : "ren");
        l->start_servers = need;
    }
    if (l->start_servers > l->daemons_limit) {
        note(notes, "StartServers %d lowered to %d (MaxRequestWorkers / "
             "ThreadsPerChild)", l->start_servers, l->daemons_limit);
        l->start_servers = l->daemons_limit;
    }

    l->min_spare_threads = or_default(s->min_spare_threads,
                                      RP_DEFAULT_MIN_SPARE_THREADS);
    l->max_spare_threads = or_default(s->max_spare_threads,
                                      RP_DEFAULT_MAX_SPARE_THREADS);
    /* Each bucket keeps at least one idle thread, and the spare window must
     * be wider than one child per bucket or children would flap. */
    floor_min = nb;
    if (l->min_spare_threads < floor_min) {
        if (s->min_spare_threads != RP_UNSET) {
            note(notes, "MinSpareThreads %d raised to %d (one per listener "
                 "bucket)", l->min_spare_threads, floor_min);
        }
        l->min_spare_threads = floor_min;
    }
    floor_max = l->min_spare_threads + (tpc + 1) * nb;
    if (l->max_spare_threads < floor_max) {
        if (s->max_spare_threads != RP_UNSET) {
            note(notes, "MaxSpareThreads %d raised to %d (MinSpareThreads + "
                 "one child per bucket)", l->max_spare_threads, floor_max);
        }
        l->max_spare_threads = floor_max;
    }
}

int rp_settings_resolve(const rp_settings *s, int online_cpus,
                        int have_reuseport, rp_limits *out, rp_notes *notes,
                        char *err, size_t errlen)
{
    rp_limits l;

    memset(&l, 0, sizeof(l));
    if (notes) {
        notes->count = 0;
    }
    l.per_bucket = or_default(s->per_bucket, 1);
    l.stuck_timeout = or_default(s->stuck_timeout, RP_DEFAULT_STUCK_TIMEOUT);
    l.cpu_affinity = s->cpu_affinity;
    if (resolve_threads(s, &l, notes, err, errlen)
        || resolve_buckets(s, online_cpus, have_reuseport, &l, notes, err,
                           errlen)) {
        return -1;
    }
    resolve_spares(s, &l, notes);
    *out = l;
    return 0;
}
