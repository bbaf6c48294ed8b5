/* Directives of mpm_winnt_ng.  httpd's names where they exist
 * (ThreadsPerChild, ThreadLimit, GracefulShutdownTimeout; the core's
 * MaxConnectionsPerChild, AcceptFilter, EnableSendfile apply as for stock
 * mpm_winnt); new ones for new behaviour: AcceptExPending,
 * AcceptSocketReuse, ChildProcesses.  Bad values fail at start-up naming the directive. */
#include "wn.h"
#include "mpmng_int.h"

#include "http_core.h"
#include "mpm_common.h"
#include "apr_strings.h"

wn_settings wn_conf;
wn_limits wn_run;
wn_fixed wn_first;            /* zeros until the first start-up */

void wn_config_pre(void)
{
    wn_conf.test_hooks = 0;
    wn_conf.threads_per_child = WN_UNSET;
    wn_conf.thread_limit = WN_UNSET;
    wn_conf.accepts = WN_UNSET;
    wn_conf.reuse = WN_UNSET;
    wn_conf.children = WN_UNSET;
    ap_graceful_shutdown_timeout = 0;
}

static const char *set_count(cmd_parms *cmd, const char *arg, int min,
                             int max, int *slot)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    /* One message form for a bad number in every mpm-ng module. */
    return err ? err : mpmng_cmd_int(cmd, arg, min, max, NULL, slot);
}

static const char *set_threads_per_child(cmd_parms *cmd, void *d,
                                         const char *arg)
{
    return set_count(cmd, arg, 1, WN_MAX_THREAD_LIMIT,
                     &wn_conf.threads_per_child);
}

static const char *set_thread_limit(cmd_parms *cmd, void *d, const char *arg)
{
    return set_count(cmd, arg, 1, WN_MAX_THREAD_LIMIT, &wn_conf.thread_limit);
}

static const char *set_accepts(cmd_parms *cmd, void *d, const char *arg)
{
    return set_count(cmd, arg, 1, WN_MAX_ACCEPTS, &wn_conf.accepts);
}

static const char *set_children(cmd_parms *cmd, void *d, const char *arg)
{
    return set_count(cmd, arg, 1, WN_MAX_CHILDREN, &wn_conf.children);
}

static const char *set_reuse(cmd_parms *cmd, void *d, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    wn_reuse_mode mode;

    if (err)
        return err;
    if (wn_parse_reuse(arg, &mode) != 0)
        return apr_psprintf(cmd->pool, "%s: '%s' is not one of auto, "
                            "transmitfile, disconnectex, off",
                            cmd->cmd->name, arg);
    wn_conf.reuse = mode;
    return NULL;
}

/* For the test suite only: takes paths a production server takes only when
 * Windows refuses something (docs/mod_mpm_winnt_ng.md). */
static const char *set_test_hook(cmd_parms *cmd, void *d, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    int hook;

    if (err)
        return err;
    if (!(hook = wn_parse_test_hook(arg)))
        return apr_psprintf(cmd->pool, "%s: '%s' is not one of emulate-accept, "
                            "keepalive-in-thread, crash-at-exit",
                            cmd->cmd->name, arg);
    wn_conf.test_hooks |= hook;
    return NULL;
}

const command_rec wn_commands[] = {
    LISTEN_COMMANDS,
    AP_GRACEFUL_SHUTDOWN_TIMEOUT_COMMAND,
    AP_INIT_TAKE1("ThreadsPerChild", set_threads_per_child, NULL, RSRC_CONF,
                  "Worker threads in the child process"),
    AP_INIT_TAKE1("ThreadLimit", set_thread_limit, NULL, RSRC_CONF,
                  "Largest ThreadsPerChild allowed without a full restart"),
    AP_INIT_TAKE1("AcceptExPending", set_accepts, NULL, RSRC_CONF,
                  "AcceptEx calls kept posted on each listener (1-4096)"),
    AP_INIT_TAKE1("AcceptSocketReuse", set_reuse, NULL, RSRC_CONF,
                  "How accept sockets are recycled: auto, transmitfile, "
                  "disconnectex or off"),
    AP_INIT_TAKE1("ChildProcesses", set_children, NULL, RSRC_CONF,
                  "Child processes accepting in parallel (1-16)"),
    AP_INIT_ITERATE("WinNTNGTestHook", set_test_hook, NULL, RSRC_CONF,
                    "For tests only: emulate-accept, keepalive-in-thread, "
                    "crash-at-exit"),
    { NULL }
};

static void warn_kept(server_rec *s, int changed)
{
    if (changed & WN_CHANGED_THREAD_LIMIT)
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, WN_TAG
                     "changing ThreadLimit needs a full stop and start; "
                     "keeping %d until then", wn_run.thread_limit);
    if (changed & WN_CHANGED_CHILDREN)
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, WN_TAG
                     "ChildProcesses %d needs a full stop and start (the "
                     "scoreboard was sized for %d); keeping %d until then",
                     wn_conf.children, wn_run.process_slots / WN_SLOTS_PER_CHILD,
                     wn_run.children);
}

int wn_config_check(apr_pool_t *plog, server_rec *s)
{
    int changed;
    wn_fixed first = wn_first;
    const char *err;

    /* A child sizes its view of the scoreboard as the parent made it. */
    if (WN_IS_CHILD()) {
        first.thread_limit = wn_me.thread_limit;
        first.process_slots = wn_me.server_limit;
    }
    err = wn_resolve(&wn_conf, &first, &wn_run, &changed);
    if (err) {
        ap_log_error(APLOG_MARK, APLOG_CRIT | APLOG_STARTUP, 0, NULL,
                     WN_TAG "%s", err);
        return !OK;
    }
    if (changed && !WN_IS_CHILD())
        warn_kept(s, changed);
    if (!wn_first.thread_limit) {
        wn_first.thread_limit = wn_run.thread_limit;
        wn_first.process_slots = wn_run.process_slots;
    }
    return OK;
}
