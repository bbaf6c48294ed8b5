/* mod_fhcache: per-child cache of open file handles and stat data for
 * static files, invalidated by change notification.  This file only wires
 * the pieces into httpd; see README.md for the design. */
#include "fhc_module.h"

#include "http_request.h"
#include "mod_status.h"
#include "mpm_common.h"
#include "http_connection.h"

static void fhc_register_hooks(apr_pool_t *p)
{
    ap_hook_pre_config(fhc_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(fhc_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(fhc_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(fhc_stopguard_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    /* First: the guard's pool cleanup then runs after most others. */
    ap_hook_pre_connection(fhc_stopguard_pre_connection, NULL, NULL,
                           APR_HOOK_REALLY_FIRST);
    fhc_stopguard_register(
        mpmng_hook_child_stopping(fhc_stopguard_child_stopping,
                                  APR_HOOK_REALLY_FIRST));
    /* Before core's stat (REALLY_LAST), so a hit replaces it. */
    ap_hook_dirwalk_stat(fhc_dirwalk_stat, NULL, NULL, APR_HOOK_MIDDLE);
    /* Right before core's default handler (REALLY_LAST): we only take what
     * every other handler declined, as it does. */
    ap_hook_handler(fhc_handler, NULL, NULL, APR_HOOK_REALLY_LAST - 1);
    fhc_sendfile_filter_register();
    APR_OPTIONAL_HOOK(ap, status_hook, fhc_status_hook, NULL, NULL,
                      APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(fhcache) = {
    STANDARD20_MODULE_STUFF,
    fhc_create_dir_conf,
    fhc_merge_dir_conf,
    fhc_create_server_conf,
    NULL,
    fhc_cmds,
    fhc_register_hooks,
    AP_MODULE_FLAG_NONE
};
