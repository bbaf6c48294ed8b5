/* The parent process: keeps one serving child, hands over to a new child
 * on restart without a gap, and stops.
 *
 * A restart (or a child reaching MaxConnectionsPerChild) starts the new
 * child while the old one still accepts; both take connections from the
 * same listening sockets (one kernel accept queue), and the old child is
 * told to stop only once the new one has its AcceptEx calls posted.  The
 * old child then serves what it already accepted and exits.  Two
 * scoreboard slots: the serving child and the retiring one. */
#include "wn.h"

#include "http_main.h"
#include "mpm_common.h"
#include "ap_mpm.h"

static wn_kid current;        /* survive restarts: statics, not pconf */
static wn_kid retiring;

static void note_started(const wn_kid *kid)
{
    process_score *ps = &ap_scoreboard_image->parent[kid->slot];

    ps->pid = kid->pid;
    ps->generation = kid->generation;
    ps->quiescing = 0;
}

static void note_gone(wn_kid *kid)
{
    int i;

    if (kid->slot >= 0 && kid->slot < WN_PROCESS_SLOTS) {
        ap_scoreboard_image->parent[kid->slot].pid = 0;
        ap_scoreboard_image->parent[kid->slot].quiescing = 0;
        for (i = 0; i < wn_run.thread_limit; i++)
            ap_scoreboard_image->servers[kid->slot][i].status = SERVER_DEAD;
    }
    if (kid->proc) CloseHandle(kid->proc);
    if (kid->exit_event) CloseHandle(kid->exit_event);
    if (kid->accepting) CloseHandle(kid->accepting);
    if (kid->retire) CloseHandle(kid->retire);
    memset(kid, 0, sizeof *kid);
}

static DWORD exit_code(const wn_kid *kid)
{
    DWORD code;

    if (!GetExitCodeProcess(kid->proc, &code))
        code = APEXIT_CHILDFATAL;
    return code;
}

/* Milliseconds a told child may take to finish before it is killed:
 * its own drain bound plus slack. */
static DWORD stop_grace_ms(void)
{
    apr_interval_time_t t = ap_server_conf->timeout;

    if (ap_server_conf->keep_alive_timeout > t)
        t = ap_server_conf->keep_alive_timeout;
    if (ap_graceful_shutdown_timeout)
        t = apr_time_from_sec(ap_graceful_shutdown_timeout);
    return (DWORD)apr_time_as_msec(t) + 10000;
}

static void tell_to_stop(wn_kid *kid)
{
    if (!kid->proc)
        return;
    ap_scoreboard_image->parent[kid->slot].quiescing = 1;
    SetEvent(kid->exit_event);
}

static void wait_or_kill(wn_kid *kid, DWORD ms)
{
    if (!kid->proc)
        return;
    if (WaitForSingleObject(kid->proc, ms) != WAIT_OBJECT_0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                     "child %lu did not finish within %lu ms; terminating it "
                     "(connections still open on it are cut)",
                     (unsigned long)kid->pid, (unsigned long)ms);
        TerminateProcess(kid->proc, 1);
        WaitForSingleObject(kid->proc, 5000);
    }
    note_gone(kid);
}

static int free_slot(void)
{
    int slot;

    for (slot = 0; slot < WN_PROCESS_SLOTS; slot++)
        if ((!current.proc || current.slot != slot)
            && (!retiring.proc || retiring.slot != slot))
            return slot;
    return -1;
}

/* Starts `current` and waits until it accepts.  The previous serving child
 * (now `retiring`) is told to stop only then.  Returns 0, or -1 when no
 * child could be started and none is left serving. */
static int start_current(void)
{
    HANDLE wait[2];
    apr_time_t t0 = apr_time_now();
    DWORD r;
    int slot = free_slot();

    if (slot < 0 || wn_handoff_spawn(wn_pconf, slot, &current) != 0)
        goto failed;
    note_started(&current);
    wait[0] = current.accepting;
    wait[1] = current.proc;
    r = WaitForMultipleObjects(2, wait, FALSE, 120000);
    if (r != WAIT_OBJECT_0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, WN_TAG
                     "child %lu %s while starting (exit code %lu)",
                     (unsigned long)current.pid,
                     r == WAIT_OBJECT_0 + 1 ? "exited" : "did not accept "
                     "within 120 s", r == WAIT_OBJECT_0 + 1
                     ? (unsigned long)exit_code(&current) : 0UL);
        TerminateProcess(current.proc, APEXIT_CHILDINIT);
        note_gone(&current);
        goto failed;
    }
    if (retiring.proc) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, WN_TAG
                     "child %lu accepting after %d ms; child %lu stops "
                     "accepting and finishes its connections",
                     (unsigned long)current.pid,
                     (int)apr_time_as_msec(apr_time_now() - t0),
                     (unsigned long)retiring.pid);
        tell_to_stop(&retiring);
    }
    return 0;

failed:
    if (retiring.proc && WaitForSingleObject(retiring.proc, 0) != WAIT_OBJECT_0
        && WaitForSingleObject(retiring.exit_event, 0) != WAIT_OBJECT_0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, WN_TAG
                     "the new child failed to start; child %lu keeps serving "
                     "(fix the cause and restart again)",
                     (unsigned long)retiring.pid);
        current = retiring;
        memset(&retiring, 0, sizeof retiring);
        return 0;
    }
    return -1;
}

/* The serving child becomes the retiring one; a child still retiring from
 * an earlier hand-over must be gone first (two slots). */
static void retire_current(void)
{
    if (retiring.proc) {
        tell_to_stop(&retiring);
        wait_or_kill(&retiring, stop_grace_ms());
    }
    retiring = current;
    memset(&current, 0, sizeof current);
}

static void stop_all(void)
{
    DWORD ms = stop_grace_ms();

    wn_mpm_state = AP_MPMQ_STOPPING;
    tell_to_stop(&current);
    tell_to_stop(&retiring);
    wait_or_kill(&current, ms);
    wait_or_kill(&retiring, ms);
}

enum { W_SHUTDOWN, W_RESTART, W_CHILD, W_RETIRE, W_OLD, W_COUNT };

int wn_parent_run(server_rec *s)
{
    HANDLE shutdown_ev = wn_control_shutdown_event();
    HANDLE restart_ev = wn_control_restart_event();

    ap_scoreboard_image->global->running_generation = wn_generation;
    if (current.proc)
        retire_current();
    if (start_current() != 0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, WN_TAG
                     "no child could be started; shutting down");
        stop_all();
        return 0;
    }
    wn_mpm_state = AP_MPMQ_RUNNING;
    wn_service_running();

    for (;;) {
        HANDLE wait[W_COUNT];
        int map[W_COUNT], n = 0, which;
        DWORD r;

        wait[n] = shutdown_ev; map[n++] = W_SHUTDOWN;
        wait[n] = restart_ev; map[n++] = W_RESTART;
        wait[n] = current.proc; map[n++] = W_CHILD;
        wait[n] = current.retire; map[n++] = W_RETIRE;
        if (retiring.proc) {
            wait[n] = retiring.proc; map[n++] = W_OLD;
        }
        r = WaitForMultipleObjects(n, wait, FALSE, 1000);
        if (r == WAIT_TIMEOUT)
            continue;
        if (r >= WAIT_OBJECT_0 + (DWORD)n) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(), s,
                         WN_TAG "waiting for events failed; shutting down");
            stop_all();
            return 0;
        }
        which = map[r - WAIT_OBJECT_0];
        switch (which) {
        case W_SHUTDOWN:
            ResetEvent(shutdown_ev);
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                         WN_TAG "shutdown requested; stopping");
            stop_all();
            return 0;
        case W_RESTART:
            ResetEvent(restart_ev);
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, WN_TAG
                         "restart requested; reading the configuration, "
                         "child %lu serves meanwhile", (unsigned long)current.pid);
            wn_generation++;
            wn_mpm_state = AP_MPMQ_STARTING;
            return 1;
        case W_RETIRE:
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, WN_TAG
                         "child %lu reached MaxConnectionsPerChild; "
                         "starting its replacement", (unsigned long)current.pid);
            retire_current();
            if (start_current() != 0) {
                stop_all();
                return 0;
            }
            break;
        case W_OLD:
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, WN_TAG
                         "retired child %lu exited", (unsigned long)retiring.pid);
            note_gone(&retiring);
            break;
        case W_CHILD: {
            DWORD code = exit_code(&current);
            int fatal = code == APEXIT_CHILDFATAL || code == APEXIT_CHILDINIT
                        || code == APEXIT_INIT;

            ap_log_error(APLOG_MARK, fatal ? APLOG_CRIT : APLOG_ERR, 0, s,
                         WN_TAG "child %lu exited with status %lu; %s",
                         (unsigned long)current.pid, (unsigned long)code,
                         fatal ? "it cannot start, shutting down"
                               : "starting another");
            note_gone(&current);
            if (fatal || start_current() != 0) {
                stop_all();
                return 0;
            }
            break;
        }
        }
    }
}
