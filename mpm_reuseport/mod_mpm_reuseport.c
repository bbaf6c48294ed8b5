/* mpm_reuseport: a Unix MPM whose parent creates per-CPU SO_REUSEPORT
 * listener buckets before forking; each child serves one bucket. */
#define RP_MODULE_FILE
#include "rp.h"
#include "rp_inbuf.h"
#include "rp_spool.h"
#include "rp_smallflush.h"
#include "rp_tlsbody.h"

#include "http_protocol.h"
#include "http_request.h"
#include "http_connection.h"
#include "mod_status.h"

#include <dlfcn.h>

rp_retained *rp_state;
rp_settings rp_conf;
rp_limits rp_lim;
rp_bucket *rp_buckets;
apr_pool_t *rp_pconf;
int rp_one_process;

static int rp_query(int code, int *result, apr_status_t *rv)
{
    *rv = APR_SUCCESS;
    if (mpmng_mpm_query_new(code, result)) {
        return OK;      /* asked only of newer httpd (AP_MPMQ_CAN_WAITIO) */
    }
    switch (code) {
    case AP_MPMQ_MAX_DAEMON_USED:     *result = rp_state->max_daemons_limit; break;
    case AP_MPMQ_IS_THREADED:         *result = AP_MPMQ_STATIC; break;
    case AP_MPMQ_IS_FORKED:           *result = AP_MPMQ_DYNAMIC; break;
    case AP_MPMQ_IS_ASYNC:            *result = 1; break;
    case AP_MPMQ_HAS_SERF:            *result = 0; break;
    case AP_MPMQ_HARD_LIMIT_DAEMONS:  *result = rp_lim.server_limit; break;
    case AP_MPMQ_HARD_LIMIT_THREADS:  *result = rp_lim.thread_limit; break;
    case AP_MPMQ_MAX_THREADS:         *result = rp_lim.threads_per_child; break;
    case AP_MPMQ_MIN_SPARE_DAEMONS:   *result = 0; break;
    case AP_MPMQ_MIN_SPARE_THREADS:   *result = rp_lim.min_spare_threads; break;
    case AP_MPMQ_MAX_SPARE_DAEMONS:   *result = 0; break;
    case AP_MPMQ_MAX_SPARE_THREADS:   *result = rp_lim.max_spare_threads; break;
    case AP_MPMQ_MAX_REQUESTS_DAEMON: *result = ap_max_requests_per_child; break;
    case AP_MPMQ_MAX_DAEMONS:         *result = rp_lim.daemons_limit; break;
    case AP_MPMQ_MPM_STATE:           *result = rp_state->mpm->mpm_state; break;
    case AP_MPMQ_GENERATION:          *result = rp_state->mpm->my_generation; break;
    default:
        *rv = APR_ENOTIMPL;
        break;
    }
    return OK;
}

static const char *rp_name(void)
{
    return "reuseport";
}

static int rp_open_logs(apr_pool_t *p, apr_pool_t *plog, apr_pool_t *ptemp,
                        server_rec *s)
{
    (void)plog;
    (void)ptemp;
    rp_pconf = p;
    return rp_listen_open(p, s, rp_state->mpm->module_loads == 1) ? !OK : OK;
}

/* httpd unloads DSOs on every restart, but the parent keeps a SIGCHLD
 * handler and a fork handler that point into this module: keep it mapped
 * (a reload then finds the same copy). */
static void rp_pin_module(void)
{
    Dl_info info;

    if (dladdr((void *)rp_pin_module, &info) && info.dli_fname) {
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    }
}

static void rp_register_hooks(apr_pool_t *p)
{
    /* open_logs before core's, so start-up errors still reach stderr. */
    static const char *const before_core[] = { "core.c", NULL };

    rp_pin_module();
    mpmng_httpd_register_hooks(p);
    ap_hook_open_logs(rp_open_logs, NULL, before_core, APR_HOOK_REALLY_FIRST);
    /* MPM state must be set before other pre_config hooks query it. */
    ap_hook_pre_config(rp_pre_config, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_check_config(rp_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_mpm(rp_run, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_mpm_query(rp_query, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_mpm_get_name(rp_name, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_mpm_register_timed_callback(rp_callbacks_register, NULL, NULL,
                                        APR_HOOK_MIDDLE);
    ap_hook_post_read_request(rp_child_post_read_request, NULL, NULL,
                              APR_HOOK_REALLY_FIRST);
    ap_hook_log_transaction(rp_bstats_request_done, NULL, NULL,
                            APR_HOOK_REALLY_LAST);
    ap_hook_pre_close_connection(rp_conn_pre_close_connection, NULL, NULL,
                                 APR_HOOK_REALLY_LAST);
    rp_hold_register();
    rp_inbuf_register();
    rp_tlsbody_register();
    rp_smallflush_register();
    ap_hook_post_config(rp_rtconf_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(rp_inbuf_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(rp_spool_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, rp_bstats_status, NULL, NULL,
                      APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(mpm_reuseport) = {
    MPM20_MODULE_STUFF,
    NULL,               /* hook to run before apache parses args */
    NULL,               /* create per-directory config structure */
    NULL,               /* merge per-directory config structures */
    rp_rtconf_create_server, /* create per-server config structure */
    rp_rtconf_merge_server, /* merge per-server config structures */
    rp_directives,      /* command apr_table_t */
    rp_register_hooks,  /* register hooks */
    AP_MODULE_FLAG_ALWAYS_MERGE
};
