/* The parent process: keeps ChildProcesses children serving, replaces one
 * that dies while the others keep serving, hands over to new children on
 * restart without a gap, and stops.
 *
 * Every child accepts from the same listening sockets (one kernel accept
 * queue), so a new child can take connections while an old one still
 * does.  A restart replaces the children one at a time: a new child is
 * started, and only once it has its AcceptEx calls posted is one old child
 * told to stop; that one serves what it already accepted and exits.
 * MaxConnectionsPerChild retires just the child that reached it, the same
 * way.  Scoreboard process slots are twice the children: each child's
 * successor or retiring predecessor needs one too. */
#include "wn.h"

#include "http_main.h"
#include "mpm_common.h"
#include "ap_mpm.h"
#include "apr_strings.h"

#define WN_MAX_SLOTS (WN_MAX_CHILDREN * WN_SLOTS_PER_CHILD)

/* Indexed by scoreboard slot; they survive restarts (statics, not pconf). */
static wn_kid kids[WN_MAX_SLOTS];

/* After a replacement failed to start, when to try again. */
static apr_time_t next_fill;
#define WN_FILL_RETRY apr_time_from_sec(10)

static int is_serving(const wn_kid *kid)
{
    return kid->proc && !kid->told;
}

static int count_serving(void)
{
    int slot, n = 0;

    for (slot = 0; slot < wn_run.process_slots; slot++)
        n += is_serving(&kids[slot]);
    return n;
}

static void note_started(const wn_kid *kid)
{
    process_score *ps = &ap_scoreboard_image->parent[kid->slot];

    ps->pid = kid->pid;
    ps->generation = kid->generation;
    ps->quiescing = 0;
    ps->not_accepting = 1;    /* until the child says it accepts */
}

static void note_gone(wn_kid *kid)
{
    int i;

    if (kid->slot >= 0 && kid->slot < wn_run.process_slots) {
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

static int has_exited(const wn_kid *kid)
{
    return WaitForSingleObject(kid->proc, 0) == WAIT_OBJECT_0;
}

/* Milliseconds a told child may take to finish before it is killed:
 * its own drain bound plus slack. */
static DWORD stop_grace_ms(void)
{
    return (DWORD)apr_time_as_msec(wn_drain_time()) + 10000;
}

static void tell_to_stop(wn_kid *kid)
{
    if (!kid->proc || kid->told)
        return;
    kid->told = 1;
    ap_scoreboard_image->parent[kid->slot].quiescing = 1;
    SetEvent(kid->exit_event);
}

static void kill_late(wn_kid *kid, DWORD waited_ms)
{
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                 "child %lu did not finish within %lu ms; terminating it "
                 "(connections still open on it are cut)",
                 (unsigned long)kid->pid, (unsigned long)waited_ms);
    TerminateProcess(kid->proc, 1);
    WaitForSingleObject(kid->proc, 5000);
}

static void wait_or_kill(wn_kid *kid, DWORD ms)
{
    if (!kid->proc)
        return;
    if (WaitForSingleObject(kid->proc, ms) != WAIT_OBJECT_0)
        kill_late(kid, ms);
    note_gone(kid);
}

/* Forgets retiring children that have exited. */
static void reap_retired(void)
{
    int slot;

    for (slot = 0; slot < wn_run.process_slots; slot++)
        if (kids[slot].proc && kids[slot].told && has_exited(&kids[slot])) {
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                         "retired child %lu exited",
                         (unsigned long)kids[slot].pid);
            note_gone(&kids[slot]);
        }
}

/* A free scoreboard slot.  When retiring children hold all the spare
 * ones (restarts in quick succession), waits for one of them to finish,
 * and kills it when it takes longer than it may. */
static int free_slot(void)
{
    HANDLE wait[WN_MAX_SLOTS];
    int told[WN_MAX_SLOTS], n = 0, slot;
    DWORD r, ms = stop_grace_ms();

    reap_retired();
    for (slot = 0; slot < wn_run.process_slots; slot++) {
        if (!kids[slot].proc)
            return slot;
        if (kids[slot].told) {
            wait[n] = kids[slot].proc;
            told[n++] = slot;
        }
    }
    if (n == 0)
        return -1;
    r = WaitForMultipleObjects(n, wait, FALSE, ms);
    slot = r < WAIT_OBJECT_0 + (DWORD)n ? told[r - WAIT_OBJECT_0] : told[0];
    if (!has_exited(&kids[slot]))
        kill_late(&kids[slot], ms);
    note_gone(&kids[slot]);
    return slot;
}

/* Starts a child and waits until it accepts.  Returns it, or NULL. */
static wn_kid *start_child(void)
{
    HANDLE wait[2];
    wn_kid *kid;
    DWORD r;
    int slot = free_slot();

    if (slot < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, WN_TAG
                     "no free scoreboard slot for a new child");
        return NULL;
    }
    kid = &kids[slot];
    if (wn_handoff_spawn(wn_pconf, slot, kid) != 0)
        return NULL;
    note_started(kid);
    wait[0] = kid->accepting;
    wait[1] = kid->proc;
    r = WaitForMultipleObjects(2, wait, FALSE, 120000);
    if (r != WAIT_OBJECT_0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, WN_TAG
                     "child %lu %s while starting (exit code %lu)",
                     (unsigned long)kid->pid,
                     r == WAIT_OBJECT_0 + 1 ? "exited" : "did not accept "
                     "within 120 s", r == WAIT_OBJECT_0 + 1
                     ? (unsigned long)exit_code(kid) : 0UL);
        TerminateProcess(kid->proc, APEXIT_CHILDINIT);
        note_gone(kid);
        return NULL;
    }
    return kid;
}

/* Starts old's successor; old is told to stop once the successor accepts,
 * and keeps serving if it cannot start.  Returns 0 or -1. */
static int replace(wn_kid *old)
{
    apr_time_t t0 = apr_time_now();
    wn_kid *kid = start_child();

    if (!kid) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, WN_TAG
                     "the new child failed to start; child %lu keeps serving "
                     "(fix the cause and restart again)",
                     (unsigned long)old->pid);
        return -1;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, WN_TAG
                 "child %lu accepting after %d ms; child %lu stops "
                 "accepting and finishes its connections",
                 (unsigned long)kid->pid,
                 (int)apr_time_as_msec(apr_time_now() - t0),
                 (unsigned long)old->pid);
    tell_to_stop(old);
    return 0;
}

/* After a restart: every child of an earlier generation is replaced, one
 * at a time, so the others serve throughout.  Children beyond a lowered
 * ChildProcesses stop once the new ones accept; fill() starts those
 * beyond a raised one. */
static void replace_old_generation(void)
{
    wn_kid *old[WN_MAX_SLOTS];
    int n_old = 0, i, slot;

    for (slot = 0; slot < wn_run.process_slots; slot++)
        if (is_serving(&kids[slot]) && kids[slot].generation != wn_generation)
            old[n_old++] = &kids[slot];
    for (i = 0; i < n_old; i++) {
        if (i < wn_run.children) {
            if (replace(old[i]) != 0)
                return;           /* the rest keep serving */
            continue;
        }
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, WN_TAG
                     "ChildProcesses is now %d; child %lu stops accepting "
                     "and finishes its connections", wn_run.children,
                     (unsigned long)old[i]->pid);
        tell_to_stop(old[i]);
    }
}

/* Starts children until ChildProcesses serve.  Returns 0, or -1 when one
 * could not be started (tried again after WN_FILL_RETRY). */
static int fill(void)
{
    while (count_serving() < wn_run.children) {
        if (!start_child()) {
            next_fill = apr_time_now() + WN_FILL_RETRY;
            if (count_serving() > 0)
                ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, WN_TAG
                             "serving with %d of %d children; trying again "
                             "in %d s", count_serving(), wn_run.children,
                             (int)apr_time_sec(WN_FILL_RETRY));
            return -1;
        }
    }
    next_fill = 0;
    return 0;
}

static void stop_all(void)
{
    apr_time_t deadline = apr_time_now()
                          + apr_time_from_msec(stop_grace_ms());
    int slot;

    wn_mpm_state = AP_MPMQ_STOPPING;
    for (slot = 0; slot < wn_run.process_slots; slot++)
        tell_to_stop(&kids[slot]);
    /* They drain in parallel: one deadline for all. */
    for (slot = 0; slot < wn_run.process_slots; slot++) {
        apr_interval_time_t left = deadline - apr_time_now();
        wait_or_kill(&kids[slot], left > 0 ? (DWORD)apr_time_as_msec(left) : 0);
    }
}

static int is_fatal(DWORD code)
{
    return code == APEXIT_CHILDFATAL || code == APEXIT_CHILDINIT
           || code == APEXIT_INIT;
}

/* A serving child exited on its own.  Returns 0, or -1 to shut down. */
static int child_died(server_rec *s, wn_kid *kid)
{
    DWORD code = exit_code(kid);
    int fatal = is_fatal(code);
    int others = count_serving() - 1;
    char serving[48] = "";

    if (others)
        apr_snprintf(serving, sizeof serving,
                     " (other children serving: %d)", others);
    ap_log_error(APLOG_MARK, fatal ? APLOG_CRIT : APLOG_ERR, 0, s,
                 WN_TAG "child %lu exited with status %lu; %s%s",
                 (unsigned long)kid->pid, (unsigned long)code,
                 fatal ? "it cannot start, shutting down" : "starting another",
                 serving);
    note_gone(kid);
    if (fatal)
        return -1;
    return fill() != 0 && count_serving() == 0 ? -1 : 0;
}

/* A child reached MaxConnectionsPerChild: only it is replaced. */
static void child_retires(server_rec *s, wn_kid *kid)
{
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, WN_TAG
                 "child %lu reached MaxConnectionsPerChild; "
                 "starting its replacement", (unsigned long)kid->pid);
    if (replace(kid) != 0)
        ResetEvent(kid->retire);      /* serves on rather than retry hot */
}

enum { W_SHUTDOWN, W_RESTART, W_CHILD, W_RETIRE, W_OLD };

typedef struct wait_set {
    HANDLE h[MAXIMUM_WAIT_OBJECTS];
    int what[MAXIMUM_WAIT_OBJECTS];
    wn_kid *kid[MAXIMUM_WAIT_OBJECTS];
    int n;
} wait_set;

static void wait_add(wait_set *w, HANDLE h, int what, wn_kid *kid)
{
    if (w->n == MAXIMUM_WAIT_OBJECTS)
        return;               /* cannot happen with WN_MAX_CHILDREN; a
                                 retiring child left out is reaped on the
                                 next tick */
    w->h[w->n] = h;
    w->what[w->n] = what;
    w->kid[w->n++] = kid;
}

static void build_wait_set(wait_set *w)
{
    int slot;

    w->n = 0;
    wait_add(w, wn_control_shutdown_event(), W_SHUTDOWN, NULL);
    wait_add(w, wn_control_restart_event(), W_RESTART, NULL);
    for (slot = 0; slot < wn_run.process_slots; slot++) {
        wn_kid *kid = &kids[slot];
        if (!kid->proc)
            continue;
        if (kid->told) {
            wait_add(w, kid->proc, W_OLD, kid);
        } else {
            wait_add(w, kid->proc, W_CHILD, kid);
            wait_add(w, kid->retire, W_RETIRE, kid);
        }
    }
}

/* Once a second: retiring children that exited, and a replacement that
 * failed to start earlier. */
static int tick(void)
{
    reap_retired();
    if (next_fill && apr_time_now() >= next_fill)
        return fill() != 0 && count_serving() == 0 ? -1 : 0;
    return 0;
}

/* Starting the first children: a failed start is tried again a few times
 * before the server gives up (CreateProcess can fail for a moment: seen
 * under Wine as OS error 1359); later, tick() keeps trying. */
#define WN_FIRST_FILL_TRIES 3
static int first_fill(void)
{
    int i;

    for (i = 0; i < WN_FIRST_FILL_TRIES; i++) {
        if (fill() == 0 || count_serving() > 0)
            return 0;
        if (i + 1 < WN_FIRST_FILL_TRIES) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                         "no child started; trying again in 500 ms");
            Sleep(500);
        }
    }
    return -1;
}

int wn_parent_run(server_rec *s)
{
    ap_scoreboard_image->global->running_generation = wn_generation;
    replace_old_generation();
    if (first_fill() != 0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, WN_TAG
                     "no child could be started; shutting down");
        stop_all();
        return 0;
    }
    wn_mpm_state = AP_MPMQ_RUNNING;
    wn_service_running();

    for (;;) {
        wait_set w;
        DWORD r;
        int i;

        build_wait_set(&w);
        r = WaitForMultipleObjects(w.n, w.h, FALSE, 1000);
        if (r == WAIT_TIMEOUT) {
            if (tick() != 0)
                break;
            continue;
        }
        if (r >= WAIT_OBJECT_0 + (DWORD)w.n) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(), s,
                         WN_TAG "waiting for events failed; shutting down");
            break;
        }
        i = r - WAIT_OBJECT_0;
        switch (w.what[i]) {
        case W_SHUTDOWN:
            ResetEvent(w.h[i]);
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                         WN_TAG "shutdown requested; stopping");
            stop_all();
            return 0;
        case W_RESTART:
            ResetEvent(w.h[i]);
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, WN_TAG
                         "restart requested; reading the configuration, "
                         "%d children serve meanwhile", count_serving());
            wn_generation++;
            wn_mpm_state = AP_MPMQ_STARTING;
            return 1;
        case W_RETIRE:
            child_retires(s, w.kid[i]);
            break;
        case W_OLD:
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, WN_TAG
                         "retired child %lu exited",
                         (unsigned long)w.kid[i]->pid);
            note_gone(w.kid[i]);
            break;
        case W_CHILD:
            if (child_died(s, w.kid[i]) != 0) {
                stop_all();
                return 0;
            }
            break;
        }
    }
    stop_all();
    return 0;
}
