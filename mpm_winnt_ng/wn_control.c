/* How the parent is told to stop or restart: two named events per parent
 * ("ap<pid>_shutdown", "ap<pid>_restart", the names stock mpm_winnt uses),
 * set by `httpd -k stop|restart|graceful` (which finds the pid in PidFile)
 * or by Ctrl+C / Ctrl+Break on the parent's console. */
#include "wn.h"

#include "http_main.h"
#include "mpm_common.h"
#include "apr_strings.h"

static HANDLE shutdown_event;
static HANDLE restart_event;

static HANDLE named_event(const char *name, int create)
{
    if (create)
        return CreateEventA(NULL, TRUE, FALSE, name);
    return OpenEventA(EVENT_MODIFY_STATE, FALSE, name);
}

void wn_control_open(apr_pool_t *p, DWORD parent_pid, int create)
{
    if (shutdown_event)
        return;               /* once per process; kept over restarts */
    shutdown_event = named_event(
        apr_psprintf(p, "ap%lu_shutdown", (unsigned long)parent_pid), create);
    restart_event = named_event(
        apr_psprintf(p, "ap%lu_restart", (unsigned long)parent_pid), create);
    if (!shutdown_event || !restart_event)
        ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(), NULL,
                     WN_TAG "cannot create the control events; "
                     "-k stop/restart will not reach this server");
}

HANDLE wn_control_shutdown_event(void)
{
    return shutdown_event;
}

HANDLE wn_control_restart_event(void)
{
    return restart_event;
}

/* -k stop|restart|graceful|graceful-stop: runs after the configuration
 * is read (so PidFile is known), signals the running parent, exits. */
int wn_control_signal_server(int *exit_status, apr_pool_t *p)
{
    pid_t pid = 0;
    apr_status_t rv = ap_read_pid(p, ap_pid_fname, &pid);
    int stop = !strcmp(wn_signal_arg, "stop")
               || !strcmp(wn_signal_arg, "shutdown")
               || !strcmp(wn_signal_arg, "graceful-stop");
    HANDLE ev;

    *exit_status = 0;
    if (rv != APR_SUCCESS || pid <= 0) {
        fprintf(stderr, WN_TAG "httpd (pid file %s) is not running\n",
                ap_server_root_relative(p, ap_pid_fname));
        *exit_status = stop ? 1 : 0;
        if (!stop) {
            /* restart of a stopped server: start it, as httpd does */
            wn_signal_arg = NULL;
            return 0;
        }
        return 1;
    }
    ev = named_event(apr_psprintf(p, "ap%lu_%s", (unsigned long)pid,
                                  stop ? "shutdown" : "restart"), 0);
    if (!ev || !SetEvent(ev)) {
        rv = apr_get_os_error();
        fprintf(stderr, WN_TAG "cannot signal httpd pid %lu (stale pid file "
                "%s?): error %d\n", (unsigned long)pid, ap_pid_fname, rv);
        *exit_status = 1;
    }
    if (ev)
        CloseHandle(ev);
    return 1;
}

static BOOL WINAPI parent_console(DWORD type)
{
    switch (type) {
    case CTRL_C_EVENT:
    case CTRL_BREAK_EVENT:
    case CTRL_CLOSE_EVENT:
    case CTRL_SHUTDOWN_EVENT:
        if (shutdown_event)
            SetEvent(shutdown_event);
        return TRUE;
    default:
        return FALSE;
    }
}

static BOOL WINAPI child_console(DWORD type)
{
    /* The parent decides; a child ignores console signals. */
    return type == CTRL_C_EVENT || type == CTRL_BREAK_EVENT;
}

void wn_control_console_handler(int in_parent)
{
    SetConsoleCtrlHandler(in_parent ? parent_console : child_console, TRUE);
}
