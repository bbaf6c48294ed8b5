/* The child process: sets up the port, the listeners' AcceptEx calls and
 * the workers, tells the parent it accepts, then waits for its exit event
 * (restart, stop) or for MaxConnectionsPerChild, and stops in order:
 * no new accepts, serve what was accepted, workers finish, exit. */
#include "wn.h"

#include "http_main.h"
#include "http_connection.h"
#include "mpm_common.h"
#include "ap_mpm.h"

/* How long modules see STOPPING before pchild goes (let_modules_see_stopping). */
#define WN_STOPPING_SEEN_MS 500

/* How long stopping may wait for open connections: httpd's Timeout or
 * KeepAliveTimeout, whichever is longer (a connection that was promised
 * keep-alive gets its next request served), or GracefulShutdownTimeout
 * if set. */
apr_interval_time_t wn_drain_time(void)
{
    apr_interval_time_t t = ap_server_conf->timeout;

    if (ap_server_conf->keep_alive_timeout > t)
        t = ap_server_conf->keep_alive_timeout;
    if (ap_graceful_shutdown_timeout)
        t = apr_time_from_sec(ap_graceful_shutdown_timeout);
    return t + apr_time_from_sec(1);
}

static void fail_start(const char *what, apr_status_t rv)
{
    ap_log_error(APLOG_MARK, APLOG_CRIT, rv, ap_server_conf, WN_TAG
                 "child %lu: %s; exiting", (unsigned long)wn_my_pid, what);
    exit(APEXIT_CHILDINIT);
}

/* Ends keep-alive and closing waits past their time; publishes the
 * counts server-status shows for async MPMs. */
static void tick_connections(void)
{
    process_score *ps = &ap_scoreboard_image->parent[wn_slot];
    apr_time_t now = apr_time_now();

    wn_keepalive_expire(now);
    wn_close_expire(now);
    ps->keep_alive = (apr_uint32_t)wn_keepalive_count();
    ps->lingering_close = (apr_uint32_t)wn_close_count();
    ps->connections = (apr_uint32_t)wn_stats.connections;
}

/* Every few seconds of a drain: what its connections wait for, so that
 * a stop that takes long says why. */
static void log_draining(apr_time_t since)
{
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                 "child %lu still finishing %ld connections after %" APR_TIME_T_FMT
                 " s: %d waiting for a keep-alive request, %d for more of a "
                 "request, %d closing, %ld in a worker thread",
                 (unsigned long)wn_my_pid, (long)wn_stats.connections,
                 apr_time_sec(apr_time_now() - since), wn_keepalive_count(),
                 wn_keepalive_reading_count(), wn_close_count(),
                 (long)wn_stats.workers_busy);
}

/* Stopping: connections still open are served until they end (parked
 * ones get their next request, with Connection: close) or time runs out;
 * then the waits left are ended. */
static void drain_connections(apr_interval_time_t limit)
{
    apr_time_t since = apr_time_now(), until = since + limit;
    apr_time_t next_log = since + apr_time_from_sec(5);

    while (wn_stats.connections > 0 && apr_time_now() < until) {
        Sleep(wn_close_tick_soon() ? 25 : 50);
        tick_connections();
        if (apr_time_now() >= next_log && wn_stats.connections > 0) {
            log_draining(since);
            next_log += apr_time_from_sec(5);
        }
    }
    wn_keepalive_close_all();
    wn_close_cancel_all();
}

static DWORD tick_interval(void)
{
    return wn_close_tick_soon() ? 25 : 250;
}

/* Waits for the exit event, the parent's death or (in a child whose
 * parent we must tell) MaxConnectionsPerChild; ticks the accept back-off.
 * The tick runs every 250 ms, every 25 ms while a close waits for its
 * client (wn_close.c sets tick_event when one begins to). */
static void serve_until_told(HANDLE exit_event, HANDLE tick_event)
{
    HANDLE wait[3];
    int n = 0, tick_index;
    ULONGLONG due;

    wait[n++] = exit_event;
    if (WN_IS_CHILD()) {
        HANDLE parent = OpenProcess(SYNCHRONIZE, FALSE, wn_parent_pid);
        if (parent)
            wait[n++] = parent;
        else
            ap_log_error(APLOG_MARK, APLOG_WARNING, apr_get_os_error(),
                         ap_server_conf, WN_TAG "cannot watch the parent "
                         "process; this child will not notice if it dies");
    }
    tick_index = tick_event ? n : -1;
    if (tick_event)
        wait[n++] = tick_event;
    due = GetTickCount64() + tick_interval();
    for (;;) {
        ULONGLONG now = GetTickCount64();
        DWORD r = WaitForMultipleObjects(n, wait, FALSE,
                                         due > now ? (DWORD)(due - now) : 0);

        if (tick_index >= 0 && r == WAIT_OBJECT_0 + (DWORD)tick_index) {
            /* sooner, but never later than planned: waits that begin
             * often must not keep postponing the tick */
            if (due > now + tick_interval())
                due = now + tick_interval();
            continue;
        }
        if (r == WAIT_TIMEOUT) {
            wn_accept_tick();
            tick_connections();
            due = GetTickCount64() + tick_interval();
            continue;
        }
        if (r == WAIT_OBJECT_0 + 1)
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, ap_server_conf, WN_TAG
                         "the parent process died; this child stops");
        else if (r != WAIT_OBJECT_0)
            ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(),
                         ap_server_conf, WN_TAG "waiting for the exit event "
                         "failed; this child stops");
        return;
    }
}

/* pchild's cleanups stop modules' threads; a module's own thread may be
 * stopping itself at the same moment, having seen STOPPING.  mod_watchdog
 * then runs its STOPPING callbacks twice, from both threads at once, and
 * mod_proxy_hcheck's destroys its thread pool twice: a heap corrupted at
 * exit (seen under Wine in 1 of ~10 stops; never when the watchdog thread
 * had stopped itself first).  Its thread looks every 100 ms
 * (AP_WD_TM_SLICE): once it has, the cleanup only joins it.  Stock
 * mpm_winnt sleeps 1 s there. */
static void let_modules_see_stopping(apr_time_t since)
{
    apr_interval_time_t left = since + apr_time_from_msec(WN_STOPPING_SEEN_MS)
                               - apr_time_now();

    if (left > 0)
        Sleep((DWORD)apr_time_as_msec(left));
}

/* Workers still inside a handler (a backend that never answers, a CGI
 * that never ends) run on pchild's and the process's pools.  Returning
 * would let httpd free those under them: the worker wakes in freed memory
 * and the exit crashes (seen every time with a proxied request stuck at
 * the stop).  The process ends here instead, as a cut connection ends:
 * the modules' exit cleanups (buffered logs among them) do not run. */
static void exit_under_busy_workers(int busy)
{
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                 "child %lu ends without the modules' exit cleanups: %d "
                 "workers are still inside a handler (check ProxyTimeout, "
                 "CGI scripts that never end, GracefulShutdownTimeout)",
                 (unsigned long)wn_my_pid, busy);
    TerminateProcess(GetCurrentProcess(), 0);
}

void wn_child_main(apr_pool_t *pconf, HANDLE exit_event)
{
    apr_pool_t *pchild;
    apr_status_t rv;
    apr_time_t stopping_since;
    int busy;
    HANDLE tick_event = wn_close_setup();

    wn_slot = WN_IS_CHILD() ? wn_me.slot : 0;
    apr_pool_create(&pchild, pconf);
    apr_pool_tag(pchild, "pchild");
    ap_run_child_init(pchild, ap_server_conf);
    ap_scoreboard_image->parent[wn_slot].pid = wn_my_pid;
    ap_scoreboard_image->parent[wn_slot].generation = wn_generation;

    /* MaxConnectionsPerChild: a child tells its parent through the
     * handed-over event; a single process has nobody to tell. */
    wn_tally_retire_by(WN_IS_CHILD() ? wn_me.retire : NULL);
    if ((rv = wn_waits_create_port()) != APR_SUCCESS)
        fail_start("cannot create the completion port", rv);
    /* Workers first: AcceptEx completions need someone to take them. */
    if ((rv = wn_workers_start(pchild, wn_run.threads_per_child)) != APR_SUCCESS)
        fail_start("cannot start the worker threads", rv);
    if ((rv = wn_accept_setup(pchild)) != APR_SUCCESS)
        fail_start("cannot start accepting", rv);

    wn_mpm_state = AP_MPMQ_RUNNING;
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, WN_TAG
                 "child %lu accepting: %d worker threads, %d AcceptEx per "
                 "listener, accept sockets %s", (unsigned long)wn_my_pid,
                 wn_run.threads_per_child, wn_run.accepts,
                 wn_recycle_method_name());
    ap_scoreboard_image->parent[wn_slot].not_accepting = 0;
    if (WN_IS_CHILD())
        SetEvent(wn_me.accepting);

    serve_until_told(exit_event, tick_event);

    ap_scoreboard_image->parent[wn_slot].not_accepting = 1;
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                 "child %lu stops accepting; finishing %ld open connections "
                 "(%d waiting for a keep-alive request)",
                 (unsigned long)wn_my_pid, (long)wn_stats.connections,
                 wn_keepalive_count());
    wn_accept_stop(tick_connections);
    /* Only now: the AcceptEx calls still posted hand this child new
     * connections until wn_accept_stop returns, and a module told STOPPING
     * ends those at once (mod_http2 answered a new connection's first
     * stream with GOAWAY and closed it unanswered). */
    wn_mpm_state = AP_MPMQ_STOPPING;
    stopping_since = apr_time_now();
    drain_connections(wn_drain_time());
    busy = wn_workers_stop(apr_time_from_sec(2));
    let_modules_see_stopping(stopping_since);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                 "child %lu exiting after %ld connections",
                 (unsigned long)wn_my_pid, wn_tally_connections_ended());
    if (wn_conf.test_hooks & WN_HOOK_CRASH_AT_EXIT)
        wn_crash_on_purpose();
    if (busy)
        exit_under_busy_workers(busy);
    apr_pool_destroy(pchild);
}
