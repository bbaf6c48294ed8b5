/* Directives and the configuration phases (pre_config, check_config). */
#include "rp.h"
#include "rp_forkguard.h"
#include "rp_sdstore.h"
#include "rp_upgrade.h"
#include "rp_spool.h"

#include "apr_strings.h"
#include "http_main.h"
#include "util_mutex.h"

#include <stdlib.h>
#include <unistd.h>

#define RP_RETAINED_KEY "mpm_reuseport_module"

/* Directive handlers: parse strictly, store, and let check_config judge
 * combinations.  Errors name the directive and the value (mpmng_int.h;
 * httpd prefixes the line). */
static const char *set_count(cmd_parms *cmd, int *slot, const char *arg,
                             int min, int max)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    return err ? err : mpmng_cmd_int(cmd, arg, min, max, NULL, slot);
}

#define COUNT_SETTER(fn, field, min, max)                                    \
    static const char *fn(cmd_parms *cmd, void *dummy, const char *arg)     \
    {                                                                       \
        (void)dummy;                                                        \
        return set_count(cmd, &rp_conf.field, arg, min, max);               \
    }

COUNT_SETTER(set_start_servers, start_servers, 1, RP_MAX_SERVER_LIMIT)
COUNT_SETTER(set_server_limit, server_limit, 1, RP_MAX_SERVER_LIMIT)
COUNT_SETTER(set_thread_limit, thread_limit, 1, RP_MAX_THREAD_LIMIT)
COUNT_SETTER(set_threads_per_child, threads_per_child, 1, RP_MAX_THREAD_LIMIT)
COUNT_SETTER(set_max_workers, max_workers, 1, INT_MAX / 2)
COUNT_SETTER(set_min_spare_threads, min_spare_threads, 0, INT_MAX / 2)
COUNT_SETTER(set_max_spare_threads, max_spare_threads, 0, INT_MAX / 2)
COUNT_SETTER(set_per_bucket, per_bucket, 1, RP_MAX_SERVER_LIMIT)

static const char *set_buckets(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dummy;
    return err ? err : mpmng_cmd_int_error(cmd, arg,
                                           rp_parse_buckets(arg,
                                                            &rp_conf.buckets),
                                           1, RP_MAX_BUCKETS,
                                           "'auto' or a count from ");
}

static const char *set_stuck_timeout(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    (void)dummy;
    return err ? err : mpmng_cmd_int_error(cmd, arg,
                                           rp_parse_stuck_timeout(
                                               arg, &rp_conf.stuck_timeout),
                                           1, RP_MAX_STUCK_TIMEOUT,
                                           "'off' or milliseconds from ");
}

#define FLAG_SETTER(fn, field)                                              \
    static const char *fn(cmd_parms *cmd, void *dummy, int on)              \
    {                                                                       \
        const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);           \
        (void)dummy;                                                        \
        if (!err) {                                                         \
            rp_conf.field = on;                                             \
        }                                                                   \
        return err;                                                         \
    }

FLAG_SETTER(set_cpu_affinity, cpu_affinity)
FLAG_SETTER(set_reuseport, reuseport)

/* mpm_event's knob for connections per worker; accepted so an event
 * configuration works unchanged, with no effect: here a child accepts only
 * when a worker is idle, and parked connections are not limited. */
static const char *set_async_factor(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    char *end;
    double v;

    (void)dummy;
    if (err) {
        return err;
    }
    v = strtod(arg, &end);
    if (end == arg || *end || !(v > 0)) {
        return apr_psprintf(cmd->pool, "AsyncRequestWorkerFactor '%s': "
                            "must be a positive number", arg);
    }
    return NULL;
}

const command_rec rp_directives[] = {
    LISTEN_COMMANDS,
    AP_GRACEFUL_SHUTDOWN_TIMEOUT_COMMAND,
    AP_INIT_TAKE1("StartServers", set_start_servers, NULL, RSRC_CONF,
                  "Number of child processes created at startup "
                  "(default: one per listener bucket)"),
    AP_INIT_TAKE1("MinSpareThreads", set_min_spare_threads, NULL, RSRC_CONF,
                  "Minimum number of idle threads, across all buckets"),
    AP_INIT_TAKE1("MaxSpareThreads", set_max_spare_threads, NULL, RSRC_CONF,
                  "Maximum number of idle threads, across all buckets"),
    AP_INIT_TAKE1("MaxRequestWorkers", set_max_workers, NULL, RSRC_CONF,
                  "Maximum number of threads serving connections at once"),
    AP_INIT_TAKE1("MaxClients", set_max_workers, NULL, RSRC_CONF,
                  "Deprecated name of MaxRequestWorkers"),
    AP_INIT_TAKE1("ThreadsPerChild", set_threads_per_child, NULL, RSRC_CONF,
                  "Number of worker threads in each child process"),
    AP_INIT_TAKE1("ServerLimit", set_server_limit, NULL, RSRC_CONF,
                  "Maximum value of MaxRequestWorkers / ThreadsPerChild for "
                  "the lifetime of the server"),
    AP_INIT_TAKE1("ThreadLimit", set_thread_limit, NULL, RSRC_CONF,
                  "Maximum value of ThreadsPerChild for the lifetime of the "
                  "server"),
    AP_INIT_TAKE1("ReusePortBuckets", set_buckets, NULL, RSRC_CONF,
                  "Listener buckets (SO_REUSEPORT sockets per Listen "
                  "address): 'auto' (one per online CPU) or a count"),
    AP_INIT_TAKE1("ReusePortChildrenPerBucket", set_per_bucket, NULL,
                  RSRC_CONF, "Accepting children kept in every bucket; 2 or "
                  "more keep a bucket served while one child is stopped or "
                  "blocked"),
    AP_INIT_TAKE1("ReusePortStuckTimeout", set_stuck_timeout, NULL,
                  RSRC_CONF, "Milliseconds a bucket's connections may wait "
                  "while its children accept none before the parent starts "
                  "another child for it, or 'off'"),
    AP_INIT_FLAG("ReusePortCPUAffinity", set_cpu_affinity, NULL, RSRC_CONF,
                 "'on' runs each bucket's children on that bucket's CPUs "
                 "and sends each new connection to a bucket of the CPU "
                 "that received it"),
    AP_INIT_TAKE1("AsyncRequestWorkerFactor", set_async_factor, NULL,
                  RSRC_CONF, "Accepted for mpm_event compatibility; no "
                  "effect (admission is by idle workers)"),
    AP_INIT_TAKE1("ReusePortBodyReadAhead", rp_spool_set_limit, NULL, RSRC_CONF,
                  "Bytes of a request body of known length read before a "
                  "worker takes the request, beyond 64 KiB into a temporary "
                  "file (default 1048576; 0: up to 64 KiB with the head)"),
    AP_INIT_TAKE1("ReusePortBodyReadAheadDir", rp_spool_set_dir, NULL, RSRC_CONF,
                  "Directory of the temporary files of request bodies read "
                  "ahead (default: the system's temporary directory)"),
    AP_INIT_FLAG("ReusePort", set_reuseport, NULL, RSRC_CONF,
                 "'off' uses one shared listener per address instead of "
                 "per-bucket SO_REUSEPORT sockets"),
    { NULL }
};

static void detach_once(apr_pool_t *pconf)
{
    int foreground = ap_exists_config_define("FOREGROUND");
    int no_detach = ap_exists_config_define("NO_DETACH");
    apr_status_t rv;

    /* Only on the second load: the first is the config test pass. */
    if (rp_state->mpm->module_loads != 2 || rp_one_process || foreground) {
        return;
    }
    ap_fatal_signal_setup(ap_server_conf, pconf);
    rv = apr_proc_detach(no_detach ? APR_PROC_DETACH_FOREGROUND
                                   : APR_PROC_DETACH_DAEMONIZE);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, NULL,
                     RP_LOG_TAG "apr_proc_detach failed");
    }
}

int rp_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    (void)plog;
    (void)ptemp;
    rp_one_process = ap_exists_config_define("ONE_PROCESS")
                     || ap_exists_config_define("DEBUG");

    rp_state = ap_retained_data_get(RP_RETAINED_KEY);
    if (!rp_state) {
        rp_state = ap_retained_data_create(RP_RETAINED_KEY, sizeof(*rp_state));
        rp_state->mpm = ap_unixd_mpm_get_retained_data();
    }
    rp_state->mpm->mpm_state = AP_MPMQ_STARTING;
    if (rp_state->mpm->baton != rp_state) {
        /* Another MPM ran the previous generation. */
        rp_state->mpm->was_graceful = 0;
        rp_state->mpm->baton = rp_state;
    }
    ++rp_state->mpm->module_loads;
    if (rp_state->mpm->module_loads == 1) {
        rp_upgrade_pre_config(ap_pglobal);
        rp_sdstore_pre_config(ap_pglobal);
    }
    rp_forkguard_disarm();
    detach_once(pconf);

    /* Never used (no accept lock is needed), but configurations written for
     * the stock MPMs may name it in a Mutex directive. */
    ap_mutex_register(pconf, AP_ACCEPT_MUTEX_TYPE, NULL, APR_LOCK_DEFAULT, 0);
    ap_listen_pre_config();
    rp_settings_init(&rp_conf);
    rp_spool_pre_config();
    ap_extended_status = 0;
    return OK;
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ServerLimit and ThreadLimit size the scoreboard, which lives for the whole
 * server: the first configuration's values are kept by every restart. */
static void remember_first_limits(void)
{
    if (!rp_state->first_server_limit) {
        rp_state->first_server_limit = rp_lim.server_limit;
        rp_state->first_thread_limit = rp_lim.thread_limit;
    }
}

/* A restart's limit: the running one; a different configured value waits
 * for a stop and start (said once per restart). */
static int keep_limit(const char *name, int configured, int running,
                      server_rec *s)
{
    if (configured != RP_UNSET && configured != running) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, RP_LOG_TAG
                     "%s %d needs a stop and start; keeping %d until then",
                     name, configured, running);
    }
    return running;
}

/* On a restart, what no longer fits under the kept limits is lowered with
 * a warning, as stock MPMs do: failing here would stop a running server
 * over a value -t accepted. */
static void fit_first_limits(rp_settings *conf, server_rec *s)
{
    int sl = keep_limit("ServerLimit", conf->server_limit,
                        rp_state->first_server_limit, s);
    int tl = keep_limit("ThreadLimit", conf->thread_limit,
                        rp_state->first_thread_limit, s);
    int tpc = conf->threads_per_child != RP_UNSET
              ? conf->threads_per_child : RP_DEFAULT_THREADS_PER_CHILD;

    conf->server_limit = sl;
    conf->thread_limit = tl;
    if (tpc > tl) {
        if (conf->threads_per_child != RP_UNSET) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, RP_LOG_TAG
                         "ThreadsPerChild %d lowered to the running "
                         "ThreadLimit %d until a stop and start", tpc, tl);
        }
        conf->threads_per_child = tpc = tl;
    }
    if (conf->max_workers != RP_UNSET && conf->max_workers > sl * tpc) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, RP_LOG_TAG
                     "MaxRequestWorkers %d lowered to %d (the running "
                     "ServerLimit %d x ThreadsPerChild %d) until a stop and "
                     "start", conf->max_workers, sl * tpc, sl, tpc);
        conf->max_workers = sl * tpc;
    }
}

int rp_check_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                    server_rec *s)
{
    int startup = rp_state->mpm->module_loads == 1;
    int have = ap_have_so_reuseport > 0;
    rp_settings conf = rp_conf;
    rp_notes notes;
    char err[512];
    int i;

    (void)pconf;
    (void)plog;
    (void)ptemp;
    if (rp_state->first_server_limit) {
        fit_first_limits(&conf, s);
    }
    if (rp_one_process) {
        conf.buckets = 1;
    }
    if (rp_settings_resolve(&conf, online_cpus(), have, &rp_lim, &notes, err,
                            sizeof(err))) {
        ap_log_error(APLOG_MARK, APLOG_CRIT | (startup ? APLOG_STARTUP : 0),
                     0, startup ? NULL : s, RP_LOG_TAG "%s", err);
        return !OK;
    }
    for (i = 0; i < notes.count; i++) {
        ap_log_error(APLOG_MARK, APLOG_WARNING | (startup ? APLOG_STARTUP : 0),
                     0, startup ? NULL : s, RP_LOG_TAG "%s", notes.text[i]);
    }
    remember_first_limits();
    return OK;
}
