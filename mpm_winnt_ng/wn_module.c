/* mpm_winnt_ng: module record, the MPM hooks and what the MPM reports.
 * Which process we are (parent, child, or one process with -X) is decided
 * here; the work is done in wn_parent.c and wn_child.c. */
#define WN_MODULE_RECORD
#include "wn.h"

#include "http_main.h"
#include "mpm_common.h"
#include "ap_mpm.h"
#include "apr_strings.h"
#include "apr_file_info.h"
#include "apr_lib.h"
#include "apr_optional.h"
#include "http_core.h"

DWORD wn_parent_pid;
DWORD wn_my_pid;
int wn_one_process;
const char *wn_signal_arg;
volatile ap_generation_t wn_generation;
volatile int wn_mpm_state = AP_MPMQ_STARTING;
apr_pool_t *wn_pconf;
DWORD wn_stack_flag = STACK_SIZE_PARAM_IS_A_RESERVATION;

/* os/win32/os.h maps exit() through this; the stock MPM defines it (its
 * service code uses it to hold a console open on errors). */
AP_DECLARE_DATA int ap_real_exit_code = 1;

static int wn_query(int query_code, int *result, apr_status_t *rv)
{
    *rv = APR_SUCCESS;
    switch (query_code) {
    case AP_MPMQ_MAX_DAEMON_USED:
        /* children and their successors or retiring predecessors */
        *result = wn_run.process_slots;
        break;
    case AP_MPMQ_IS_THREADED:
        *result = AP_MPMQ_STATIC;
        break;
    case AP_MPMQ_IS_FORKED:
        *result = AP_MPMQ_NOT_SUPPORTED;
        break;
    case AP_MPMQ_IS_ASYNC:
        *result = 1;          /* keep-alive waits on the port (wn_keepalive.c) */
        break;
    case AP_MPMQ_CAN_WAITIO:
        *result = 1;          /* CONN_STATE_ASYNC_WAITIO too (wn_conn.c) */
        break;
    case AP_MPMQ_HARD_LIMIT_DAEMONS:
        *result = wn_run.process_slots;
        break;
    case AP_MPMQ_HARD_LIMIT_THREADS:
        *result = wn_run.thread_limit;
        break;
    case AP_MPMQ_MAX_THREADS:
        *result = wn_run.threads_per_child;
        break;
    case AP_MPMQ_MIN_SPARE_DAEMONS:
    case AP_MPMQ_MAX_SPARE_DAEMONS:
    case AP_MPMQ_MIN_SPARE_THREADS:
    case AP_MPMQ_MAX_SPARE_THREADS:
    case AP_MPMQ_MAX_REQUESTS_DAEMON:
        *result = 0;
        if (query_code == AP_MPMQ_MAX_REQUESTS_DAEMON)
            *result = ap_max_requests_per_child;
        break;
    case AP_MPMQ_MAX_DAEMONS:
        *result = wn_run.children;
        break;
    case AP_MPMQ_MPM_STATE:
        *result = wn_mpm_state;
        break;
    case AP_MPMQ_GENERATION:
        *result = (int)wn_generation;
        break;
    default:
        *rv = APR_ENOTIMPL;
        break;
    }
    return OK;
}

static const char *wn_get_name(void)
{
    return "WinNT-NG";
}

/* The optional function httpd's main() looks up by this name: what -k
 * asks for once the configuration is read. */
int ap_signal_server(int *exit_status, apr_pool_t *pconf)
{
    if (wn_service_configuring())      /* -k install|config */
        return wn_service_after_config(exit_status, pconf);
    return wn_control_signal_server(exit_status, pconf);
}

int wn_injected_args;

/* The ServerRoot a Windows httpd has by default, as stock mpm_winnt's: the
 * directory of httpd.exe, or the one above it when that is bin\
 * (C:\Apache24\bin\httpd.exe -> C:/Apache24), so that an unzipped
 * distribution runs wherever it is.  NULL if the path is unknown. */
static const char *default_server_root(apr_pool_t *p)
{
    char *path, *name, *root;

    if (ap_os_proc_filepath(&path, p) != APR_SUCCESS)
        return NULL;
    name = (char *)apr_filepath_name_get(path);
    if (name > path) {
        name[-1] = '\0';
        name = (char *)apr_filepath_name_get(path);
        if (name > path && !strcasecmp(name, "bin"))
            name[-1] = '\0';
    }
    if (apr_filepath_merge(&root, NULL, path, APR_FILEPATH_TRUENAME, p)
        != APR_SUCCESS)
        return path;
    return root;
}

static const char *lower_case(apr_pool_t *p, const char *s)
{
    char *out = apr_pstrdup(p, s), *c;

    for (c = out; *c; c++)
        *c = apr_tolower(*c);
    return out;
}

/* Runs before httpd parses its own arguments: takes -k and -n (the
 * service commands are wn_service.c's), puts the default ServerRoot first
 * (a -d given by the user comes later and wins) and, in a child, reads
 * the hand-off header from the parent. */
static void wn_rewrite_args(process_rec *process)
{
    const char *pid_env = getenv("AP_PARENT_PID");
    apr_array_header_t *args;
    const char *service_name = NULL, *root;
    int i;

    wn_crash_report_install();
    wn_pconf = process->pconf;
    wn_my_pid = GetCurrentProcessId();
    wn_parent_pid = pid_env ? (DWORD)strtoul(pid_env, NULL, 10) : wn_my_pid;

    if (WN_IS_CHILD()) {
        ap_real_exit_code = 0;
        /* The parent's pipe is our stdin; the header carries the
         * generation, which hooks may query from here on. */
        if (wn_handoff_read_header() != 0)
            exit(APEXIT_CHILDINIT);
        wn_generation = wn_me.generation;
        return;
    }

    args = apr_array_make(process->pool, process->argc + 3, sizeof(char *));
    *(const char **)apr_array_push(args) = process->argv[0];
    root = default_server_root(process->pool);
    if (root) {
        *(const char **)apr_array_push(args) = "-d";
        *(const char **)apr_array_push(args) = root;
        wn_injected_args = 2;
    }
    for (i = 1; i < process->argc; i++) {
        const char *a = process->argv[i];
        if (strcmp(a, "-w") == 0) {         /* not httpd's: ours to take */
            wn_hold_console_on_error();
            continue;
        }
        if (a[0] == '-' && (a[1] == 'k' || a[1] == 'n')) {
            /* "-k stop" or, as apr_getopt lets stock httpd take it, "-kstop" */
            const char *val = a[2] ? a + 2
                              : i + 1 < process->argc ? process->argv[++i] : NULL;
            if (!val) {
                fprintf(stderr, WN_TAG "%s needs a value\n", a);
                exit(APEXIT_INIT);
            }
            if (a[1] == 'n')
                service_name = val;
            else
                wn_signal_arg = lower_case(process->pool, val);   /* -k Stop too */
            continue;
        }
        *(const char **)apr_array_push(args) = a;
    }
    /* The service manager starts services in the system directory: like
     * stock httpd, work from the default ServerRoot instead. */
    if (root && wn_signal_arg && !strcmp(wn_signal_arg, "runservice"))
        apr_filepath_set(root, process->pool);
    /* Service commands are done here, or after the configuration is read;
     * what is left is -k for the console server. */
    wn_signal_arg = wn_service_args(process, args, wn_signal_arg,
                                    service_name);
    if (wn_signal_arg && strcmp(wn_signal_arg, "start") == 0)
        wn_signal_arg = NULL;
    *(const char **)apr_array_push(args) = NULL;
    process->argc = args->nelts - 1;
    process->argv = (const char * const *)args->elts;
    if (wn_signal_arg)
        APR_REGISTER_OPTIONAL_FN(ap_signal_server);
}

static int wn_pre_config(apr_pool_t *pconf, apr_pool_t *plog,
                         apr_pool_t *ptemp)
{
    wn_pconf = pconf;
    if (ap_exists_config_define("ONE_PROCESS")
        || ap_exists_config_define("DEBUG"))
        wn_one_process = 1;
    ap_sys_privileges_handlers(1);
    ap_listen_pre_config();
    wn_config_pre();
    return OK;
}

static int wn_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                           apr_pool_t *ptemp, server_rec *s)
{
    return wn_config_check(plog, s);
}

static int wn_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s)
{
    if (WN_IS_CHILD()) {
        wn_control_console_handler(0);
        return OK;
    }
    wn_control_open(s->process->pool, wn_parent_pid, 1);
    wn_control_console_handler(1);
    if (!wn_one_process)
        ap_log_pid(pconf, ap_pid_fname);
    return OK;
}

/* Before core's open_logs (which redirects stderr), so a failure to bind
 * is seen on the console. */
static int wn_open_logs(apr_pool_t *p, apr_pool_t *plog, apr_pool_t *ptemp,
                        server_rec *s)
{
    ap_listen_rec *lr;

    if (WN_IS_CHILD())
        return OK;
    if (ap_setup_listeners(s) < 1) {
        ap_log_error(APLOG_MARK, APLOG_ALERT | APLOG_STARTUP, 0, NULL,
                     WN_TAG "no listening sockets available, shutting down");
        return !OK;
    }
    /* Children get the listeners by WSADuplicateSocket only: never through
     * handle inheritance (CGI children must not hold them either). */
    for (lr = ap_listeners; lr; lr = lr->next) {
        apr_os_sock_t sd;
        if (lr->sd && apr_os_sock_get(&sd, lr->sd) == APR_SUCCESS)
            wn_no_inherit(sd);
    }
    return OK;
}

static void wn_child_init(apr_pool_t *pchild, server_rec *s)
{
    if (!WN_IS_CHILD())
        return;
    wn_handoff_attach_scoreboard(s);
    wn_handoff_read_listeners(s);
}

static int wn_mpm_run(apr_pool_t *pconf, apr_pool_t *plog, server_rec *s)
{
    static int started;
    int restart;

    if (!started && (!WN_IS_CHILD() || wn_one_process)) {
        if (ap_run_pre_mpm(s->process->pool, SB_SHARED) != OK)
            return !OK;
    }
    started = 1;

    if (WN_IS_CHILD() || wn_one_process) {
        if (wn_one_process)
            wn_control_open(s->process->pool, wn_parent_pid, 1);
        wn_child_main(pconf, wn_one_process ? wn_control_shutdown_event()
                                            : wn_me.exit_event);
        return DONE;
    }

    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf,
                 WN_TAG "%s configured -- resuming normal operations",
                 ap_get_server_description());
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf,
                 WN_TAG "Server built: %s", ap_get_server_built());
    ap_log_command_line(plog, s);
    ap_log_mpm_common(s);

    restart = wn_parent_run(s);
    if (!restart) {
        ap_remove_pid(pconf, ap_pid_fname);
        return DONE;
    }
    return OK;
}

static void wn_hooks(apr_pool_t *p)
{
    static const char *const before_core[] = { "core.c", NULL };

    ap_hook_pre_config(wn_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_check_config(wn_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(wn_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_open_logs(wn_open_logs, NULL, before_core, APR_HOOK_REALLY_FIRST);
    ap_hook_child_init(wn_child_init, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_mpm(wn_mpm_run, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_mpm_query(wn_query, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_mpm_get_name(wn_get_name, NULL, NULL, APR_HOOK_MIDDLE);
    wn_conn_register_hooks();
    wn_status_register();
}

AP_DECLARE_MODULE(mpm_winnt_ng) = {
    MPM20_MODULE_STUFF,
    wn_rewrite_args,
    NULL, NULL, NULL, NULL,
    wn_commands,
    wn_hooks
};
