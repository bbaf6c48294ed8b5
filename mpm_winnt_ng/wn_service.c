/* Running httpd as a Windows service.
 *
 * Commands (rewrite_args):
 *   -k install [-n NAME] [args]   the configuration is read first; then the
 *                                 service is created (auto start) and args
 *                                 are stored as its ConfigArgs
 *   -k config [-n NAME] [args]    the same for an installed service
 *   -k uninstall [-n NAME]        stops it if it runs, removes it
 *   -n NAME -k start|stop|restart|graceful|graceful-stop
 *                                 asks the service manager
 *   -k runservice                 the service's own command line: the
 *                                 service manager starts httpd this way
 * NAME defaults to "Apache2.4": as with stock httpd, -k start|stop|restart
 * without -n control that service when it is installed.  When it is not,
 * -k start runs httpd in the console and -k stop/restart/graceful signal
 * the PidFile's server (wn_control.c).
 *
 * Registry (the layout stock httpd uses, so tools that know it work):
 *   HKLM\SYSTEM\CurrentControlSet\Services\NAME\Parameters\ConfigArgs
 *     REG_MULTI_SZ, the arguments given at install, added to
 *     "-k runservice" when the service starts
 *   ...\Services\EventLog\Application\NAME: the event log source.
 *
 * Under the service manager the parent is unchanged: stop and shutdown
 * controls set its shutdown event, control code 128 its restart event.
 * Until ErrorLog opens, whatever httpd writes to stderr goes to the event
 * log; so do "started", "stopped" and "failed". */
#include "wn.h"

#include "http_main.h"
#include "mpm_common.h"
#include "apr_strings.h"

#include <fcntl.h>
#include <io.h>

#define WN_SERVICE_DEFAULT_NAME "Apache2.4"
#define WN_SERVICE_CONTROL_RESTART 128   /* user control code, as stock */
#define WN_SERVICES_KEY "SYSTEM\\CurrentControlSet\\Services\\"
#define WN_EVENTLOG_KEY WN_SERVICES_KEY "EventLog\\Application\\"
#define WN_WAIT_START_S 180  /* a child may take 120 s to accept */
#define WN_WAIT_STOP_S 180

static const char *command;       /* -k install|config while configuring */
static char service_name[257];

/* ---- small helpers ---------------------------------------------------- */

static void vsay(const char *fmt, va_list ap)
{
    fputs(WN_TAG, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void say(const char *fmt, ...) WN_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

static void die(const char *fmt, ...) WN_PRINTF(1, 2);
static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    exit(APEXIT_INIT);
}

static const char *os_error(DWORD err)
{
    static char buf[256];
    DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM
                             | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, err, 0,
                             buf, sizeof buf, NULL);

    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == '.'))
        buf[--n] = 0;
    if (!n)
        apr_snprintf(buf, sizeof buf, "error %lu", (unsigned long)err);
    return buf;
}

static void set_name(const char *name)
{
    if (!name)
        name = WN_SERVICE_DEFAULT_NAME;
    if (!*name || strlen(name) >= sizeof service_name
        || strpbrk(name, "/\\"))
        die("-n %s: a service name is 1 to 256 characters without / or \\",
            name);
    strcpy(service_name, name);
}

/* ---- the event log ---------------------------------------------------- */

static HANDLE event_source;

/* Event 3299 of netmsg.dll is "%1 %2 ... %9": any text shows as written,
 * without a message DLL of our own. */
static void event_log(WORD type, const char *fmt, ...) WN_PRINTF(2, 3);
static void event_log(WORD type, const char *fmt, ...)
{
    char msg[2048];
    const char *strings[9] = { msg, "", "", "", "", "", "", "", "" };
    va_list ap;

    if (!event_source)
        return;
    va_start(ap, fmt);
    apr_vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ReportEventA(event_source, type, 0, 3299, NULL, 9, 0, strings, NULL);
}

static void register_event_source(const char *name)
{
    HKEY key;
    DWORD types = EVENTLOG_ERROR_TYPE | EVENTLOG_WARNING_TYPE
                  | EVENTLOG_INFORMATION_TYPE;
    static const char file[] = "%SystemRoot%\\System32\\netmsg.dll";

    if (RegCreateKeyExA(HKEY_LOCAL_MACHINE,
                        apr_pstrcat(wn_pconf, WN_EVENTLOG_KEY, name, NULL), 0,
                        NULL, 0, KEY_SET_VALUE, NULL, &key, NULL)
        != ERROR_SUCCESS) {
        say("cannot register the event log source '%s'; the service's "
            "event log entries will lack their text", name);
        return;
    }
    RegSetValueExA(key, "EventMessageFile", 0, REG_EXPAND_SZ,
                   (const BYTE *)file, sizeof file);
    RegSetValueExA(key, "TypesSupported", 0, REG_DWORD,
                   (const BYTE *)&types, sizeof types);
    RegCloseKey(key);
}

/* Until ErrorLog opens (core then points stderr at it), stderr is a pipe
 * whose lines this thread reports: a service has no console to show
 * "Syntax error on line 12" on. */
static HANDLE stderr_pipe;
static volatile LONG stderr_busy;

static DWORD WINAPI stderr_to_event_log(LPVOID unused)
{
    char buf[4096], *line, *nl;
    size_t used = 0;
    DWORD n;

    while (ReadFile(stderr_pipe, buf + used, (DWORD)(sizeof buf - 1 - used),
                    &n, NULL) && n) {
        InterlockedExchange(&stderr_busy, 1);
        used += n;
        buf[used] = 0;
        line = buf;
        while ((nl = strchr(line, '\n')) || used == sizeof buf - 1) {
            if (nl) {
                *nl = 0;
                if (nl > line && nl[-1] == '\r')
                    nl[-1] = 0;
            }
            if (*line)
                event_log(EVENTLOG_ERROR_TYPE, "%s", line);
            if (!nl) {
                line = buf + used;
                break;
            }
            line = nl + 1;
        }
        used -= line - buf;
        memmove(buf, line, used);
        InterlockedExchange(&stderr_busy, 0);
    }
    return 0;
}

static void route_stderr_to_event_log(apr_pool_t *p)
{
    HANDLE wr, wr2;
    int fd;

    if (!CreatePipe(&stderr_pipe, &wr, NULL, 0))
        return;
    DuplicateHandle(GetCurrentProcess(), wr, GetCurrentProcess(), &wr2, 0,
                    FALSE, DUPLICATE_SAME_ACCESS);
    SetStdHandle(STD_ERROR_HANDLE, wr);
    fd = _open_osfhandle((intptr_t)wr2, _O_TEXT | _O_WRONLY);
    if (fd >= 0 && fd != 2) {
        _dup2(fd, 2);
        _close(fd);
    }
    setvbuf(stderr, NULL, _IONBF, 0);
    ap_open_stderr_log(p);           /* httpd's logger took the old handle */
    CloseHandle(CreateThread(NULL, 0, stderr_to_event_log, NULL, 0, NULL));
}

/* At exit: let the reader report what was just written. */
static void drain_stderr(void)
{
    DWORD avail = 0;
    int i;

    if (!stderr_pipe)
        return;
    fflush(stderr);
    for (i = 0; i < 40; i++) {
        if (!PeekNamedPipe(stderr_pipe, NULL, 0, NULL, &avail, NULL))
            return;                   /* closed: core took stderr over */
        if (!avail && !stderr_busy)
            return;
        Sleep(50);
    }
}

/* ---- the service manager's side (-k runservice) ----------------------- */

static SERVICE_STATUS_HANDLE status_handle;
static SERVICE_STATUS status;
static CRITICAL_SECTION status_lock;
static HANDLE main_entered;       /* ServiceMain ran (or the dispatcher failed) */
static HANDLE process_ending;     /* ServiceMain may return */
static DWORD dispatcher_error;
static volatile LONG stop_requested;
static int reported_running;

static void report(DWORD state, DWORD service_exit_code)
{
    EnterCriticalSection(&status_lock);
    status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
    status.dwCurrentState = state;
    status.dwControlsAccepted = state == SERVICE_STOPPED ? 0
        : SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN;
    status.dwWin32ExitCode = service_exit_code ? ERROR_SERVICE_SPECIFIC_ERROR
                                               : NO_ERROR;
    status.dwServiceSpecificExitCode = service_exit_code;
    if (state == SERVICE_START_PENDING || state == SERVICE_STOP_PENDING) {
        status.dwCheckPoint++;
        status.dwWaitHint = 10000;
    }
    else {
        status.dwCheckPoint = 0;
        status.dwWaitHint = 0;
    }
    if (status_handle)
        SetServiceStatus(status_handle, &status);
    LeaveCriticalSection(&status_lock);
}

/* While starting or stopping, a new checkpoint every 2 s tells the service
 * manager we are alive; after the longest a start or stop may take, the
 * checkpoints stop and the manager may call the service hung. */
static DWORD WINAPI checkpoints(LPVOID unused)
{
    DWORD last = 0;
    int ticks = 0;

    for (;;) {
        Sleep(2000);
        EnterCriticalSection(&status_lock);
        if (status.dwCurrentState != last)
            ticks = 0;                 /* a new pending phase (or none) */
        last = status.dwCurrentState;
        if ((last == SERVICE_START_PENDING || last == SERVICE_STOP_PENDING)
            && ++ticks <= WN_WAIT_START_S / 2)
            report(last, 0);
        LeaveCriticalSection(&status_lock);
    }
    return 0;
}

static DWORD WINAPI control_handler(DWORD control, DWORD type, LPVOID data,
                                    LPVOID context)
{
    switch (control) {
    case SERVICE_CONTROL_STOP:
    case SERVICE_CONTROL_SHUTDOWN:
        InterlockedExchange(&stop_requested, 1);
        report(SERVICE_STOP_PENDING, 0);
        SetEvent(wn_control_shutdown_event());
        return NO_ERROR;
    case WN_SERVICE_CONTROL_RESTART:
        SetEvent(wn_control_restart_event());
        return NO_ERROR;
    case SERVICE_CONTROL_INTERROGATE:
        report(status.dwCurrentState, status.dwServiceSpecificExitCode);
        return NO_ERROR;
    default:
        return ERROR_CALL_NOT_IMPLEMENTED;
    }
}

static void WINAPI service_main(DWORD argc, LPSTR *argv)
{
    if (argc > 0 && argv[0] && strlen(argv[0]) < sizeof service_name)
        strcpy(service_name, argv[0]);
    status_handle = RegisterServiceCtrlHandlerExA(service_name,
                                                  control_handler, NULL);
    if (!status_handle)
        dispatcher_error = GetLastError();
    else
        report(SERVICE_START_PENDING, 0);
    SetEvent(main_entered);
    /* Returning would tell the manager we are done: wait for the end. */
    WaitForSingleObject(process_ending, INFINITE);
}

static DWORD WINAPI dispatcher(LPVOID unused)
{
    static char any_name[] = "";      /* own process: the name is not used */
    SERVICE_TABLE_ENTRYA table[] = { { any_name, service_main },
                                     { NULL, NULL } };

    if (!StartServiceCtrlDispatcherA(table)) {
        dispatcher_error = GetLastError();
        SetEvent(main_entered);
    }
    return 0;
}

/* The process ends: after a stop that was asked for, the service stopped;
 * otherwise it failed (start-up error, or no child could be started). */
static void service_exit(void)
{
    drain_stderr();
    if (stop_requested) {
        event_log(EVENTLOG_INFORMATION_TYPE, WN_TAG "the %s service stopped",
                  service_name);
        report(SERVICE_STOPPED, 0);
    }
    else {
        event_log(EVENTLOG_ERROR_TYPE, WN_TAG "the %s service stopped %s; "
                  "see the event log entries before this one and the "
                  "ErrorLog, fix the cause and start it again", service_name,
                  reported_running ? "unexpectedly" : "during start-up");
        report(SERVICE_STOPPED, 1);
    }
    SetEvent(process_ending);
}

static void read_config_args(apr_pool_t *p, apr_array_header_t *args)
{
    const char *key = apr_pstrcat(p, WN_SERVICES_KEY, service_name,
                                  "\\Parameters", NULL);
    DWORD type, size = 0;
    char *buf = NULL, *a;
    HKEY h;

    if (RegOpenKeyExA(HKEY_LOCAL_MACHINE, key, 0, KEY_QUERY_VALUE, &h)
        != ERROR_SUCCESS)
        return;                        /* none stored: httpd's defaults */
    if (RegQueryValueExA(h, "ConfigArgs", NULL, &type, NULL, &size)
        == ERROR_SUCCESS && type == REG_MULTI_SZ) {
        buf = apr_pcalloc(p, size + 2);   /* room for missing terminators */
        if (RegQueryValueExA(h, "ConfigArgs", NULL, &type, (BYTE *)buf,
                             &size) != ERROR_SUCCESS)
            buf = NULL;
    }
    RegCloseKey(h);
    if (!buf)
        return;
    for (a = buf; *a; a += strlen(a) + 1)
        *(const char **)apr_array_push(args) = a;
}

static void run_as_service(process_rec *process, apr_array_header_t *args)
{
    InitializeCriticalSection(&status_lock);
    main_entered = CreateEventA(NULL, TRUE, FALSE, NULL);
    process_ending = CreateEventA(NULL, TRUE, FALSE, NULL);
    CloseHandle(CreateThread(NULL, 0, dispatcher, NULL, 0, NULL));
    if (WaitForSingleObject(main_entered, 60000) != WAIT_OBJECT_0
        || dispatcher_error)
        die("-k runservice is the command line the service manager starts "
            "an installed service with (%s); start the service with "
            "httpd -k start -n NAME, or run httpd without -k in a console",
            dispatcher_error ? os_error(dispatcher_error) : "no start request");
    event_source = RegisterEventSourceA(NULL, service_name);
    route_stderr_to_event_log(process->pool);
    atexit(service_exit);
    /* The control handler may set these before post_config runs. */
    wn_control_open(process->pool, wn_my_pid, 1);
    read_config_args(process->pool, args);
    CloseHandle(CreateThread(NULL, 0, checkpoints, NULL, 0, NULL));
}

void wn_service_running(void)
{
    if (!status_handle || reported_running || stop_requested)
        return;
    reported_running = 1;
    report(SERVICE_RUNNING, 0);
    event_log(EVENTLOG_INFORMATION_TYPE, WN_TAG "the %s service is running: "
              "%s", service_name, ap_get_server_description());
}

/* ---- talking to the service manager (the -k commands) ---------------- */

static SC_HANDLE open_manager(DWORD access)
{
    SC_HANDLE scm = OpenSCManagerA(NULL, NULL, access);

    if (!scm)
        die("cannot open the service manager: %s (run as an administrator)",
            os_error(GetLastError()));
    return scm;
}

static SC_HANDLE open_service(SC_HANDLE scm, DWORD access)
{
    SC_HANDLE svc = OpenServiceA(scm, service_name, access);
    DWORD err;

    if (svc)
        return svc;
    err = GetLastError();
    if (err == ERROR_SERVICE_DOES_NOT_EXIST)
        die("no service named '%s' is installed (install it with "
            "httpd -k install -n \"%s\" -f CONF)", service_name, service_name);
    die("cannot open the service '%s': %s", service_name, os_error(err));
    return NULL;
}

static DWORD state_of(SC_HANDLE svc, SERVICE_STATUS *st)
{
    if (!QueryServiceStatus(svc, st))
        die("cannot query the service '%s': %s", service_name,
            os_error(GetLastError()));
    return st->dwCurrentState;
}

/* Waits while the service is in `pending`; returns the state it left to. */
static DWORD wait_while(SC_HANDLE svc, DWORD pending, int seconds,
                        SERVICE_STATUS *st)
{
    int i;

    for (i = 0; i < seconds * 4 && state_of(svc, st) == pending; i++)
        Sleep(250);
    return st->dwCurrentState;
}

static int start_service(SC_HANDLE svc)
{
    SERVICE_STATUS st;
    DWORD state;

    if (!StartServiceA(svc, 0, NULL)) {
        DWORD err = GetLastError();
        if (err == ERROR_SERVICE_ALREADY_RUNNING) {
            say("the %s service is already running", service_name);
            return 1;
        }
        say("cannot start the %s service: %s", service_name, os_error(err));
        return 1;
    }
    state = wait_while(svc, SERVICE_START_PENDING, WN_WAIT_START_S, &st);
    if (state == SERVICE_RUNNING) {
        say("the %s service is running", service_name);
        return 0;
    }
    say("the %s service did not start (state %lu, exit code %lu); its "
        "messages are in the event log and the ErrorLog", service_name,
        (unsigned long)state, (unsigned long)st.dwServiceSpecificExitCode);
    return 1;
}

static int stop_service(SC_HANDLE svc, int quiet_if_stopped)
{
    SERVICE_STATUS st;
    DWORD state = state_of(svc, &st);

    if (state == SERVICE_STOPPED) {
        if (!quiet_if_stopped)
            say("the %s service is not running", service_name);
        return quiet_if_stopped ? 0 : 1;
    }
    if (state != SERVICE_STOP_PENDING
        && !ControlService(svc, SERVICE_CONTROL_STOP, &st)) {
        say("cannot stop the %s service: %s", service_name,
            os_error(GetLastError()));
        return 1;
    }
    state = wait_while(svc, SERVICE_STOP_PENDING, WN_WAIT_STOP_S, &st);
    if (state != SERVICE_STOPPED) {
        say("the %s service did not stop within %d s (state %lu)",
            service_name, WN_WAIT_STOP_S, (unsigned long)state);
        return 1;
    }
    say("the %s service stopped", service_name);
    return 0;
}

static int restart_service(SC_HANDLE svc)
{
    SERVICE_STATUS st;

    if (state_of(svc, &st) == SERVICE_STOPPED)
        return start_service(svc);     /* as -k restart of a stopped server */
    if (!ControlService(svc, WN_SERVICE_CONTROL_RESTART, &st)) {
        say("cannot restart the %s service: %s", service_name,
            os_error(GetLastError()));
        return 1;
    }
    say("the %s service is restarting (a new child takes over)",
        service_name);
    return 0;
}

static int uninstall_service(void)
{
    SC_HANDLE scm = open_manager(SC_MANAGER_CONNECT);
    SC_HANDLE svc = open_service(scm, SERVICE_STOP | SERVICE_QUERY_STATUS
                                      | DELETE);
    int rc = stop_service(svc, 1);

    if (rc == 0 && !DeleteService(svc)) {
        say("cannot remove the %s service: %s", service_name,
            os_error(GetLastError()));
        rc = 1;
    }
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    if (rc == 0) {
        RegDeleteKeyA(HKEY_LOCAL_MACHINE,
                      apr_pstrcat(wn_pconf, WN_EVENTLOG_KEY, service_name,
                                  NULL));
        say("the %s service is removed", service_name);
    }
    return rc;
}

static int service_installed(const char *name)
{
    SC_HANDLE scm = OpenSCManagerA(NULL, NULL, SC_MANAGER_CONNECT);
    SC_HANDLE svc = scm ? OpenServiceA(scm, name, SERVICE_QUERY_STATUS) : NULL;

    if (svc)
        CloseServiceHandle(svc);
    if (scm)
        CloseServiceHandle(scm);
    return svc != NULL;
}

static int control_service(const char *k)
{
    SC_HANDLE scm = open_manager(SC_MANAGER_CONNECT);
    SC_HANDLE svc = open_service(scm, SERVICE_START | SERVICE_STOP
                                      | SERVICE_QUERY_STATUS
                                      | SERVICE_USER_DEFINED_CONTROL);
    int rc;

    if (!strcmp(k, "start"))
        rc = start_service(svc);
    else if (!strcmp(k, "restart") || !strcmp(k, "graceful"))
        rc = restart_service(svc);
    else
        rc = stop_service(svc, 0);
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    return rc;
}

/* ---- -k install / -k config: after the configuration parsed ----------- */

static const char *binary_path(apr_pool_t *p)
{
    char self[MAX_PATH * 2];
    DWORD n = GetModuleFileNameA(NULL, self, sizeof self);

    if (!n || n >= sizeof self)
        die("cannot find httpd.exe's own path: %s", os_error(GetLastError()));
    return apr_psprintf(p, "\"%s\" -k runservice", self);
}

static int store_config_args(apr_pool_t *p, int argc, const char *const *argv)
{
    const char *key = apr_pstrcat(p, WN_SERVICES_KEY, service_name,
                                  "\\Parameters", NULL);
    apr_size_t size = 1;
    char *buf, *at;
    HKEY h;
    LONG rv;
    int i;

    /* the user's arguments only: the default -d is worked out again at
     * each start, so a moved installation still finds itself */
    for (i = 1 + wn_injected_args; i < argc; i++)
        size += strlen(argv[i]) + 1;
    at = buf = apr_pcalloc(p, size + 1);
    for (i = 1 + wn_injected_args; i < argc; i++) {
        size_t n = strlen(argv[i]) + 1;
        memcpy(at, argv[i], n);
        at += n;
    }
    rv = RegCreateKeyExA(HKEY_LOCAL_MACHINE, key, 0, NULL, 0, KEY_SET_VALUE,
                         NULL, &h, NULL);
    if (rv == ERROR_SUCCESS) {
        rv = RegSetValueExA(h, "ConfigArgs", 0, REG_MULTI_SZ,
                            (const BYTE *)buf, (DWORD)(at - buf + 1));
        RegCloseKey(h);
    }
    if (rv != ERROR_SUCCESS) {
        say("cannot store the arguments of the %s service in HKLM\\%s: %s",
            service_name, key, os_error(rv));
        return 1;
    }
    return 0;
}

static int install_service(apr_pool_t *p, int argc, const char *const *argv)
{
    SC_HANDLE scm = open_manager(SC_MANAGER_CREATE_SERVICE);
    SC_HANDLE svc;
    SERVICE_DESCRIPTIONA desc;
    char text[] = "Apache HTTP Server (mpm_winnt_ng)";

    svc = CreateServiceA(scm, service_name, service_name, SERVICE_ALL_ACCESS,
                         SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START,
                         SERVICE_ERROR_NORMAL, binary_path(p), NULL, NULL,
                         NULL, NULL, NULL);
    if (!svc) {
        DWORD err = GetLastError();
        CloseServiceHandle(scm);
        if (err == ERROR_SERVICE_EXISTS || err == ERROR_DUPLICATE_SERVICE_NAME)
            say("the %s service is already installed; change its arguments "
                "with -k config -n \"%s\" ..., or -k uninstall it first",
                service_name, service_name);
        else
            say("cannot install the %s service: %s", service_name,
                os_error(err));
        return 1;
    }
    desc.lpDescription = text;
    ChangeServiceConfig2A(svc, SERVICE_CONFIG_DESCRIPTION, &desc);
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    if (store_config_args(p, argc, argv) != 0)
        return 1;
    register_event_source(service_name);
    say("the %s service is installed (auto start); start it with "
        "httpd -k start -n \"%s\"", service_name, service_name);
    return 0;
}

static int reconfigure_service(apr_pool_t *p, int argc,
                               const char *const *argv)
{
    SC_HANDLE scm = open_manager(SC_MANAGER_CONNECT);
    SC_HANDLE svc = open_service(scm, SERVICE_CHANGE_CONFIG);
    int ok = ChangeServiceConfigA(svc, SERVICE_NO_CHANGE, SERVICE_NO_CHANGE,
                                  SERVICE_NO_CHANGE, binary_path(p), NULL,
                                  NULL, NULL, NULL, NULL, NULL);
    DWORD err = GetLastError();

    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    if (!ok) {
        say("cannot change the %s service: %s", service_name, os_error(err));
        return 1;
    }
    if (store_config_args(p, argc, argv) != 0)
        return 1;
    register_event_source(service_name);
    say("the %s service's arguments are updated; they apply at its next "
        "start", service_name);
    return 0;
}

int wn_service_configuring(void)
{
    return command != NULL;
}

int wn_service_after_config(int *exit_status, apr_pool_t *p)
{
    const process_rec *proc = ap_server_conf->process;

    if (!strcmp(command, "install"))
        *exit_status = install_service(p, proc->argc, proc->argv);
    else
        *exit_status = reconfigure_service(p, proc->argc, proc->argv);
    return 1;
}

/* ---- what -k and -n ask for ------------------------------------------- */

static int is_one_of(const char *k, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(k, *set))
            return 1;
    return 0;
}

const char *wn_service_args(process_rec *process, apr_array_header_t *args,
                            const char *k, const char *name)
{
    static const char *const console[] = { "start", "stop", "shutdown",
        "restart", "graceful", "graceful-stop", NULL };
    static const char *const configuring[] = { "install", "config", NULL };

    if (!k) {
        if (name)
            die("-n %s needs -k: install, config, uninstall, start, stop "
                "or restart", name);
        return NULL;
    }
    if (!strcmp(k, "runservice")) {
        run_as_service(process, args);
        return NULL;
    }
    if (is_one_of(k, configuring)) {
        set_name(name);
        command = k;
        return k;                     /* wn_service_after_config */
    }
    if (!strcmp(k, "uninstall")) {
        set_name(name);
        exit(uninstall_service());
    }
    if (!is_one_of(k, console))
        die("-k %s: unknown; use start, stop, restart, graceful, "
            "graceful-stop, or for a service install, config, uninstall",
            k);
    /* As stock httpd: without -n, -k acts on the default service when it
     * is installed.  Without one, it acts on the console server whose
     * PidFile the configuration names (stock httpd would fail). */
    if (!name && !service_installed(WN_SERVICE_DEFAULT_NAME))
        return k;
    set_name(name);
    exit(control_service(k));
    return NULL;
}
