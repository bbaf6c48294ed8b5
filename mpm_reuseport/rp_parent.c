/* The parent: keeps every bucket served by at least one child, adjusts the
 * number of children per bucket to the idle-thread targets, replaces dead
 * children at once, and runs restarts and stops. */
#include "rp.h"
#include "rp_crash.h"
#include "rp_forkguard.h"
#include "rp_inherit.h"
#include "rp_refuse.h"
#include "rp_sdstore.h"
#include "rp_upgrade.h"

#include "apr_signal.h"
#include "http_main.h"

#include <signal.h>
#include <unistd.h>

#define MAX_SPAWN_RATE 32
#define REAP_HOLD_SEC 3

static int child_fatal;

#define SLOT_PID(i) (ap_get_scoreboard_process(i)->pid)

static int bucket_of(int slot)
{
    return slot % rp_lim.num_buckets;
}

/* ---- children that may listen on a removed bucket ---------------------
 * A restart that lowers the bucket count retires the removed buckets'
 * sockets (rp_listen.c), closed once no child listens on them: a child of
 * an older generation, in the scoreboard until it says it stopped
 * accepting, or out of it once a new child took its slot, then counted
 * until it exits (its state is no longer seen). */
static void note_slot_taken_over(const process_score *ps)
{
    int i;

    if (ps->not_accepting) {
        return;
    }
    for (i = 0; i < RP_TAKEN_OVER_MAX; i++) {
        if (rp_state->taken_over[i].pid == 0) {
            rp_state->taken_over[i].pid = ps->pid;
            rp_state->taken_over[i].bucket = ps->bucket;
            return;
        }
    }
    /* Full (many stuck children): every removed bucket counts as listened
     * on until the last one noted exits. */
    rp_state->taken_over[RP_TAKEN_OVER_MAX - 1].bucket = -1;
}

static void note_taken_over_gone(pid_t pid)
{
    int i;

    for (i = 0; i < RP_TAKEN_OVER_MAX; i++) {
        if (rp_state->taken_over[i].pid == pid) {
            rp_state->taken_over[i].pid = 0;
        }
    }
}

static int old_child_listens_on(int bucket)
{
    int i;

    for (i = 0; i < RP_TAKEN_OVER_MAX; i++) {
        int b = rp_state->taken_over[i].bucket;
        if (rp_state->taken_over[i].pid && (b == bucket || b < 0)) {
            return 1;
        }
    }
    for (i = 0; i < ap_scoreboard_image->global->server_limit; i++) {
        process_score *ps = ap_get_scoreboard_process(i);
        if (ps->pid != 0 && ps->bucket == bucket && !ps->not_accepting) {
            return 1;
        }
    }
    return 0;
}

/* ---- scoreboard bookkeeping ------------------------------------------- */

static void note_child_killed(int slot, pid_t pid, ap_generation_t gen)
{
    if (slot != -1) {
        process_score *ps = ap_get_scoreboard_process(slot);
        ap_run_child_status(ap_server_conf, ps->pid, ps->generation, slot,
                            MPM_CHILD_EXITED);
        ps->pid = 0;
    }
    else {
        /* One whose slot was taken over: reaped here, or by a stop's reclaim. */
        note_taken_over_gone(pid);
        ap_run_child_status(ap_server_conf, pid, gen, -1, MPM_CHILD_EXITED);
    }
}

static void note_child_started(int slot, pid_t pid, int bucket)
{
    process_score *ps = ap_get_scoreboard_process(slot);

    if (ps->pid != 0) {
        /* Taking over from an old-generation child still finishing its
         * connections: keep tracking it so it is reaped. */
        if (!ps->quiescing && rp_gen_retiring()) {
            rp_state->slot_taken_over = 1;
        }
        note_slot_taken_over(ps);
        ap_run_child_status(ap_server_conf, ps->pid, ps->generation, slot,
                            MPM_CHILD_LOST_SLOT);
        ap_register_extra_mpm_process(ps->pid, ps->generation);
    }
    ps->pid = pid;
    ps->generation = rp_state->mpm->my_generation;
    ps->quiescing = 0;
    ps->not_accepting = 0;
    ps->bucket = bucket;
    rp_relief_child_started(bucket, apr_time_now());
    ap_run_child_status(ap_server_conf, pid, ps->generation, slot,
                        MPM_CHILD_STARTED);
}

static int make_child(int slot, int bucket)
{
    pid_t pid, parent;

    if (slot + 1 > rp_state->max_daemons_limit) {
        rp_state->max_daemons_limit = slot + 1;
    }
    if (rp_one_process) {
        note_child_started(slot, getpid(), 0);
        rp_child_main(slot, 0);
    }
    rp_forkguard_own_fork(1);
    parent = getpid();
    pid = fork();
    rp_forkguard_own_fork(0);
    if (pid == -1) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, ap_server_conf, RP_LOG_TAG
                     "fork failed: check memory and the process limit");
        apr_sleep(apr_time_from_sec(1)); /* don't spin on fork */
        return -1;
    }
    if (pid == 0) {
        rp_crash_in_child(slot);
        mpmng_thread_after_fork();
        rp_child_install_early_signals(parent);
        rp_child_main(slot, bucket);
    }
    note_child_started(slot, pid, bucket);
    return 0;
}

/* ---- slot choice ------------------------------------------------------- */

static int is_current(const process_score *ps)
{
    return ps->pid != 0 && ps->generation == rp_state->mpm->my_generation;
}

/* A slot for a new child of `bucket`: an empty one, else one whose child is
 * of an older generation or leaving (it keeps running, tracked elsewhere). */
static int free_slot(int bucket)
{
    int i, fallback = -1;

    for (i = bucket; i < rp_lim.daemons_limit; i += rp_lim.num_buckets) {
        process_score *ps = ap_get_scoreboard_process(i);
        if (ps->pid == 0) {
            return i;
        }
        if (fallback < 0 && (!is_current(ps) || ps->quiescing)) {
            fallback = i;
        }
    }
    return fallback;
}

/* Another child for a bucket, in an empty slot: its pid, 0 when no slot is
 * free, -1 when fork failed. */
static pid_t add_child(int bucket)
{
    int slot = free_slot(bucket);

    if (slot < 0 || SLOT_PID(slot) != 0) {
        return 0;               /* only empty slots: none is taken over */
    }
    return make_child(slot, bucket) < 0 ? -1 : SLOT_PID(slot);
}

static void start_children(int count)
{
    int k;

    /* Round-robin over buckets so each gets its share. */
    for (k = 0; k < count; k++) {
        int b = k % rp_lim.num_buckets, slot = free_slot(b);
        if (slot < 0 || make_child(slot, b) < 0) {
            break;
        }
    }
}

/* ---- idle-thread maintenance, per bucket ------------------------------- */

typedef struct {
    int idle;          /* idle threads in accepting current children */
    int accepting;     /* current-generation children still accepting */
    int busy;          /* threads serving */
} bucket_census;

static void count_bucket(int b, bucket_census *c)
{
    int i, t;

    c->idle = c->accepting = c->busy = 0;
    for (i = b; i < rp_lim.daemons_limit; i += rp_lim.num_buckets) {
        process_score *ps = ap_get_scoreboard_process(i);
        if (!is_current(ps) || ps->quiescing) {
            continue;
        }
        c->accepting++;
        for (t = 0; t < rp_lim.threads_per_child; t++) {
            int st = ap_scoreboard_image->servers[i][t].status;
            if (st <= SERVER_READY) {
                c->idle++;   /* starting counts: it will be idle soon */
            }
            else if (st < SERVER_GRACEFUL) {
                c->busy++;
            }
        }
    }
}

static void spawn_for_bucket(int b, const bucket_census *c)
{
    int *rate = &rp_state->idle_spawn_rate[b], n;

    for (n = 0; n < *rate; n++) {
        int slot = free_slot(b);
        if (slot < 0 || ap_get_scoreboard_process(slot)->pid != 0) {
            break;      /* only empty slots for growth */
        }
        make_child(slot, b);
    }
    if (n == 0 && c->idle == 0) {
        mpmng_log_once(&rp_state->maxclients_reported, APLOG_MARK, APLOG_ERR,
                       0, ap_server_conf, RP_LOG_TAG "bucket %d reached its "
                       "share of MaxRequestWorkers: consider raising "
                       "MaxRequestWorkers (logged once)", b);
    }
    if (rp_state->hold_off_on_exponential_spawning) {
        --rp_state->hold_off_on_exponential_spawning;
    }
    else if (*rate < MAX_SPAWN_RATE) {
        *rate *= 2;
    }
}

static void maintain_bucket(int b)
{
    int nb = rp_lim.num_buckets;
    bucket_census c;

    count_bucket(b, &c);
    if (c.accepting < rp_lim.per_bucket) {
        int slot = free_slot(b);
        if (slot >= 0) {
            make_child(slot, b);    /* a bucket is never left unserved */
        }
    }
    else if (c.accepting > rp_lim.per_bucket
             && (c.idle > rp_lim.max_spare_threads / nb
                 || rp_relief_surplus(b, apr_time_now()))) {
        /* The child told to go counts as accepting until it gets to it:
         * tell no other one meanwhile, or the bucket could lose them all. */
        if (apr_time_now() >= rp_state->reap_hold_until[b]) {
            ap_mpm_podx_signal(rp_buckets[b].pod, AP_MPM_PODX_GRACEFUL);
            rp_relief_child_going(b);
            rp_state->reap_hold_until[b] = apr_time_now()
                                           + apr_time_from_sec(REAP_HOLD_SEC);
        }
        rp_state->idle_spawn_rate[b] = 1;
    }
    else if (c.idle < rp_lim.min_spare_threads / nb || c.idle == 0) {
        spawn_for_bucket(b, &c);
    }
    else {
        rp_state->idle_spawn_rate[b] = 1;
    }
}

static void update_max_daemons_used(void)
{
    int i, last = -1;

    for (i = 0; i < rp_state->max_daemons_limit; i++) {
        if (SLOT_PID(i) != 0) {
            last = i;
        }
    }
    rp_state->max_daemons_limit = last + 1;
}

static void size_spawn_rates(void)
{
    int i;

    if (rp_state->spawn_rate_size < rp_lim.num_buckets) {
        rp_state->idle_spawn_rate = apr_palloc(ap_pglobal,
                                               rp_lim.num_buckets * sizeof(int));
        rp_state->reap_hold_until = apr_palloc(ap_pglobal, rp_lim.num_buckets
                                               * sizeof(apr_time_t));
        rp_state->spawn_rate_size = rp_lim.num_buckets;
    }
    for (i = 0; i < rp_lim.num_buckets; i++) {
        rp_state->idle_spawn_rate[i] = 1;
        rp_state->reap_hold_until[i] = 0;
    }
}

/* ---- the main loop ------------------------------------------------------ */

/* A child exited: update the scoreboard; replace it at once if its bucket
 * would otherwise be left without an accepting child.  Returns -1 when the
 * server must stop (a child of this generation could not start at all). */
static int child_exited(apr_proc_t *proc, apr_exit_why_e why, int status,
                        int *successive_kills)
{
    int outcome, slot, t;
    ap_generation_t old_gen;

    if (rp_upgrade_reaped(proc->pid, why, status)) {
        return 0;       /* the process started for a binary upgrade */
    }
    outcome = ap_process_child_status(proc, why, status);
    slot = ap_find_child_by_pid(proc);

    if (outcome == APEXIT_CHILDFATAL
        && (slot < 0 || ap_get_scoreboard_process(slot)->generation
                        == rp_state->mpm->my_generation)) {
        child_fatal = 1;
        rp_state->mpm->shutdown_pending = 1;
        return -1;
    }
    if (outcome == APEXIT_CHILDSICK) {
        rp_state->sick_child_detected = 1;
    }
    if (slot < 0) {
        if (ap_unregister_extra_mpm_process(proc->pid, &old_gen) == 1) {
            note_child_killed(-1, proc->pid, old_gen);
        }
#if APR_HAS_OTHER_CHILD
        else {
            apr_proc_other_child_alert(proc, APR_OC_REASON_DEATH, status);
        }
#endif
        return 0;
    }
    for (t = 0; t < rp_lim.threads_per_child; t++) {
        ap_update_child_status_from_indexes(slot, t, SERVER_DEAD, NULL);
    }
    note_child_killed(slot, 0, 0);
    ap_get_scoreboard_process(slot)->quiescing = 0;
    if (outcome != APEXIT_CHILDSICK && slot < rp_lim.daemons_limit) {
        bucket_census c;
        count_bucket(bucket_of(slot), &c);
        /* Crash loops: after 3 quick deaths wait for the next tick. */
        if (c.accepting < rp_lim.per_bucket && ++*successive_kills <= 3) {
            make_child(slot, bucket_of(slot));
        }
    }
    return 0;
}

/* Each bucket relief finds stuck gets a child (rp_relief.c decides). */
static void relieve_stuck_buckets(apr_time_t now)
{
    rp_relief_need need;
    int next = 0;

    while (rp_relief_look(now, &next, &need)) {
        rp_relief_started(&need, add_child(need.bucket));
    }
}

/* Wait for a child to exit: about a second (running the monitor hook every
 * tenth time, as ap_wait_or_timeout does), or 20 ms while the previous
 * generation still accepts (its hand-over is watched closely).  Meanwhile
 * look at the buckets' queues every relief interval.  A handled SIGCHLD cuts
 * the sleep short and returns with no child, as ap_wait_or_timeout does, so
 * the main loop's maintenance runs before the exit is reaped. */
static void wait_step(apr_exit_why_e *why, int *status, apr_proc_t *proc)
{
    static int monitor_countdown = 10;
    int retiring = rp_gen_retiring() || rp_upgrade_waiting();
    apr_interval_time_t look = rp_relief_interval();
    apr_time_t end = apr_time_now() + (retiring ? apr_time_from_msec(20)
                                                : apr_time_from_sec(1));

    if (!retiring && --monitor_countdown == 0) {
        monitor_countdown = 10;
        ap_run_monitor(rp_pconf, ap_server_conf);
    }
    ap_update_global_status();
    for (;;) {
        apr_time_t now, nap;
        apr_status_t rv = apr_proc_wait_all_procs(proc, status, why,
                                                  APR_NOWAIT, rp_pconf);
        if (APR_STATUS_IS_CHILD_DONE(rv)) {
            return;
        }
        proc->pid = -1;
        now = apr_time_now();
        if (APR_STATUS_IS_EINTR(rv) || now >= end) {
            return;
        }
        relieve_stuck_buckets(now);
        nap = end - now;
        if (look && look < nap) {
            nap = look;
        }
        apr_sleep(nap);
        if (apr_time_now() + apr_time_from_msec(1) < now + nap) {
            return;     /* a signal (SIGCHLD): the main loop looks first */
        }
    }
}

/* A restart goes ahead only with a configuration that passes the test. */
static int restart_accepted(void)
{
    if (rp_gen_config_ok()) {
        return 1;
    }
    rp_state->mpm->restart_pending = 0;
    rp_state->mpm->is_ungraceful = 0;
    return 0;
}

static void server_main_loop(void)
{
    int successive_kills = 0, b;

    while (!rp_state->mpm->shutdown_pending
           && !(rp_state->mpm->restart_pending && restart_accepted())) {
        apr_exit_why_e why;
        int status;
        apr_proc_t proc;

        wait_step(&why, &status, &proc);
        if (proc.pid != -1) {
            if (child_exited(&proc, why, status, &successive_kills) < 0) {
                return;
            }
            continue;
        }
        successive_kills = 0;
        if (rp_state->sick_child_detected) {
            /* Resource shortage: grow slowly until it passes. */
            for (b = 0; b < rp_lim.num_buckets; b++) {
                rp_state->idle_spawn_rate[b] = 1;
            }
            rp_state->sick_child_detected = 0;
        }
        for (b = 0; b < rp_lim.num_buckets; b++) {
            maintain_bucket(b);
        }
        update_max_daemons_used();
        rp_gen_hand_over_when_ready();
        rp_listen_release_retired(old_child_listens_on);
        if (rp_upgrade_step(rp_gen_accepting_everywhere, rp_listen_fds)) {
            /* Taken over by a new server: stop as SIGWINCH would. */
            rp_state->mpm->shutdown_pending = 1;
            rp_state->mpm->is_ungraceful = 0;
        }
        rp_bstats_sample();
    }
}

/* ---- stop and restart ---------------------------------------------------- */

static void signal_all_buckets(ap_podx_restart_t how)
{
    int b;

    for (b = 0; b < rp_lim.num_buckets; b++) {
        ap_mpm_podx_killpg(rp_buckets[b].pod, rp_lim.daemons_limit, how);
    }
}

static int any_child_alive(void)
{
    int i;

    for (i = 0; i < rp_lim.daemons_limit; i++) {
        if (SLOT_PID(i) && ap_mpm_safe_kill(SLOT_PID(i), 0) == APR_SUCCESS) {
            return 1;
        }
    }
    return 0;
}

/* A full restart or stop: the children get RP_BRIEF_GRACE (rp.h) to end
 * on their own before the reclaim's SIGTERM, which at once cuts what they
 * were still answering. */
static void stop_children_briefly(void)
{
    apr_time_t end = apr_time_now() + RP_BRIEF_GRACE + apr_time_from_msec(100);

    rp_gen_stop_retiring(AP_MPM_PODX_RESTART);
    signal_all_buckets(AP_MPM_PODX_RESTART);
    do {
        apr_sleep(apr_time_from_msec(5));
        ap_relieve_child_processes(note_child_killed);
    } while (any_child_alive() && apr_time_now() < end);
    ap_reclaim_child_processes(1, note_child_killed);
}

static int stop_now(void)
{
    stop_children_briefly();
    if (!child_fatal) {
        ap_remove_pid(rp_pconf, ap_pid_fname);
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf,
                     RP_LOG_TAG "caught SIGTERM, shutting down");
    }
    return DONE;
}

/* Whether another process keeps the listening sockets after this server:
 * a binary upgrade's new server (taking over, or started and not yet
 * ready), or systemd's file descriptor store. */
static int sockets_outlive_us(int taken_over)
{
    return taken_over || rp_upgrade_waiting() || rp_sdstore_keeps_copies();
}

static int stop_gracefully(void)
{
    apr_time_t cutoff = ap_graceful_shutdown_timeout
        ? apr_time_now() + apr_time_from_sec(ap_graceful_shutdown_timeout) : 0;
    int taken_over = rp_upgrade_taken_over();

    /* Taken over: the sockets and the PidFile are the new server's. */
    if (!taken_over) {
        rp_listen_stop_deferring();
    }
    if (!sockets_outlive_us(taken_over)) {
        rp_refuse_new_connections();    /* the children's closes are the last */
    }
    rp_listen_close_all();
    /* No generation runs on: the children move their clients on at once
     * rather than as for a retirement (rp_child.c retiring). */
    ap_scoreboard_image->global->running_generation =
        rp_state->mpm->my_generation + 1;
    rp_gen_stop_retiring(AP_MPM_PODX_GRACEFUL);
    signal_all_buckets(AP_MPM_PODX_GRACEFUL);
    ap_relieve_child_processes(note_child_killed);
    if (taken_over) {
        rp_upgrade_remove_oldbin();
    }
    else if (!child_fatal) {
        ap_remove_pid(rp_pconf, ap_pid_fname);
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                     "caught " AP_SIG_GRACEFUL_STOP_STRING
                     ", shutting down gracefully");
    }
    rp_state->mpm->shutdown_pending = 0;
    do {
        apr_sleep(apr_time_from_msec(200));
        ap_relieve_child_processes(note_child_killed);
    } while (!rp_state->mpm->shutdown_pending && any_child_alive()
             && (!cutoff || apr_time_now() < cutoff));
    signal_all_buckets(AP_MPM_PODX_RESTART);
    ap_reclaim_child_processes(1, note_child_killed);
    return DONE;
}

static int restart(void)
{
    /* Next generation; the parent keeps all listener sockets. */
    ++rp_state->mpm->my_generation;
    ap_scoreboard_image->global->running_generation =
        rp_state->mpm->my_generation;
    if (!rp_state->mpm->is_ungraceful) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                     AP_SIG_GRACEFUL_STRING " received, doing graceful "
                     "restart");
        /* The current children go on accepting until the next generation
         * is ready (rp_generation.c). */
        rp_gen_retire_current();
    }
    else {
        stop_children_briefly();
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                     "SIGHUP received, restarting");
    }
    return OK;
}

/* wait_step() sleeps between reaps; a handled SIGCHLD cuts that sleep
 * short, so a dead child is replaced at once. */
static void wake_on_child_exit(int sig)
{
    (void)sig;
}

/* The signals an operator sends through the PidFile (apachectl graceful,
 * mpmng-upgrade, ...) are handled before the PidFile names this process:
 * until then SIGUSR1, SIGUSR2 or SIGWINCH would end it with their default
 * action, silently (stock MPMs write it first: a graceful restart sent
 * right after a start killed 17 of 20 parents here, mpm_event's too). */
static void set_signals(void)
{
    ap_unixd_mpm_set_signals(rp_pconf, rp_one_process);
    if (!rp_one_process) {
        apr_signal(SIGCHLD, wake_on_child_exit);
        rp_upgrade_setup_signal();
        rp_crash_install();
    }
}

int rp_run(apr_pool_t *pconf, apr_pool_t *plog, server_rec *s)
{
    (void)pconf;
    set_signals();
    rp_refuse_setup();
    ap_log_pid(rp_pconf, ap_pid_fname);
    if (!rp_state->mpm->was_graceful) {
        if (ap_run_pre_mpm(s->process->pool, SB_SHARED) != OK) {
            rp_state->mpm->mpm_state = AP_MPMQ_STOPPING;
            return !OK;
        }
        ap_scoreboard_image->global->running_generation =
            rp_state->mpm->my_generation;
    }
    if (!rp_one_process && rp_gen_open_pods()) {
        return !OK;
    }
    size_spawn_rates();
    /* New children start at once; on a graceful restart the previous
     * generation accepts until they are ready. */
    if (rp_state->mpm->was_graceful) {
        rp_state->hold_off_on_exponential_spawning = 10;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf,
                 "%s configured -- resuming normal operations",
                 ap_get_server_description());
    rp_inherit_log();
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, RP_LOG_TAG
                 "%d bucket(s), %d children at start, %d threads each, at "
                 "most %d children", rp_lim.num_buckets, rp_lim.start_servers,
                 rp_lim.threads_per_child, rp_lim.daemons_limit);
    if (rp_listen_note) {
        ap_log_error(APLOG_MARK, rp_conf.reuseport ? APLOG_WARNING : APLOG_INFO,
                     0, ap_server_conf, RP_LOG_TAG "%s", rp_listen_note);
    }
    ap_log_command_line(plog, s);
    ap_log_mpm_common(s);
    rp_state->mpm->mpm_state = AP_MPMQ_RUNNING;
    rp_bstats_setup(rp_pconf);
    rp_relief_setup();
    start_children(rp_lim.start_servers);

    server_main_loop();
    rp_state->mpm->mpm_state = AP_MPMQ_STOPPING;

    if (child_fatal
        || (rp_state->mpm->shutdown_pending && rp_state->mpm->is_ungraceful)) {
        return stop_now();
    }
    if (rp_state->mpm->shutdown_pending) {
        return stop_gracefully();
    }
    if (rp_one_process) {
        return DONE;
    }
    return restart();
}
