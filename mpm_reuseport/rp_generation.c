/* Seamless graceful restart: the hand-over between generations.
 *
 * Stock MPMs tell the old children to stop accepting as soon as the restart
 * signal arrives, then read the configuration and start new children: for
 * that whole time nobody accepts.  Here the old children go on accepting
 * (the parent keeps the listener sockets, so both generations of a bucket
 * share one accept queue) until the new generation has a ready worker in
 * every bucket; only then are they told to stop, through their own pipes of
 * death, which therefore outlive the old configuration pool.
 *
 * The configuration is also tested (httpd -t, same command line) before a
 * restart, so a broken file leaves the running generation serving. */
#include "rp.h"

#include "apr_strings.h"
#include "apr_thread_proc.h"
#include "http_main.h"

#include <unistd.h>

#define CONFTEST_OUTPUT_MAX 8192

/* ---- pipes of death per generation ------------------------------------- */

static void signal_pods(ap_pod_t **pods, int n, int children,
                        ap_podx_restart_t how)
{
    int b;

    for (b = 0; b < n; b++) {
        if (pods[b]) {
            ap_mpm_podx_killpg(pods[b], children, how);
        }
    }
}

int rp_gen_open_pods(void)
{
    int b, n = rp_lim.num_buckets;

    /* Pods not handed to a retiring set belonged to children that are
     * all gone (ungraceful restart) or to the first generation. */
    if (rp_state->pods_pool) {
        apr_pool_destroy(rp_state->pods_pool);
    }
    apr_pool_create(&rp_state->pods_pool, ap_pglobal);
    apr_pool_tag(rp_state->pods_pool, "mpm_reuseport_pods");
    rp_state->pods = apr_pcalloc(rp_state->pods_pool, n * sizeof(ap_pod_t *));
    rp_state->num_pods = n;
    for (b = 0; b < n; b++) {
        apr_status_t rv = ap_mpm_podx_open(rp_state->pods_pool,
                                           &rp_state->pods[b]);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, ap_server_conf,
                         RP_LOG_TAG "cannot open the pipe of death for "
                         "bucket %d: check the open-files limit", b);
            return -1;
        }
        rp_buckets[b].pod = rp_state->pods[b];
    }
    return 0;
}

int rp_gen_retiring(void)
{
    return rp_state->retiring_pool != NULL;
}

void rp_gen_stop_retiring(ap_podx_restart_t how)
{
    if (!rp_gen_retiring()) {
        return;
    }
    signal_pods(rp_state->retiring, rp_state->num_retiring,
                rp_state->retiring_children, how);
    /* Our ends close; the old children hold theirs until they exit. */
    apr_pool_destroy(rp_state->retiring_pool);
    rp_state->retiring_pool = NULL;
    rp_state->retiring = NULL;
}

void rp_gen_retire_current(void)
{
    /* Restarts faster than children start: the generation before last
     * stops now, so at most two generations accept at once. */
    rp_gen_stop_retiring(AP_MPM_PODX_GRACEFUL);
    rp_state->retiring_pool = rp_state->pods_pool;
    rp_state->retiring = rp_state->pods;
    rp_state->num_retiring = rp_state->num_pods;
    rp_state->retiring_children = rp_lim.daemons_limit;
    rp_state->retiring_since = apr_time_now();
    rp_state->pods_pool = NULL;
    rp_state->pods = NULL;
    rp_state->slot_taken_over = 0;
}

void rp_gen_close_retiring_in_child(void)
{
    int b;

    for (b = 0; rp_gen_retiring() && b < rp_state->num_retiring; b++) {
        ap_mpm_podx_close(rp_state->retiring[b]);
    }
}

/* ---- is the new generation ready? --------------------------------------- */

static int child_ready(int slot)
{
    process_score *ps = ap_get_scoreboard_process(slot);
    int t;

    if (ps->pid == 0 || ps->quiescing
        || ps->generation != rp_state->mpm->my_generation) {
        return 0;
    }
    for (t = 0; t < rp_lim.threads_per_child; t++) {
        worker_score *ws = &ap_scoreboard_image->servers[slot][t];
        if (ws->status == SERVER_READY
            && ws->generation == rp_state->mpm->my_generation) {
            return 1;
        }
    }
    return 0;
}

static int bucket_ready(int b)
{
    int i;

    for (i = b; i < rp_lim.daemons_limit; i += rp_lim.num_buckets) {
        if (child_ready(i)) {
            return 1;
        }
    }
    return 0;
}

int rp_gen_accepting_everywhere(void)
{
    int b;

    for (b = 0; b < rp_lim.num_buckets; b++) {
        if (!bucket_ready(b)) {
            return 0;
        }
    }
    return 1;
}

void rp_gen_hand_over_when_ready(void)
{
    if (!rp_gen_retiring()) {
        return;
    }
    /* A new child sharing a slot with an old one only starts its workers
     * as the old one leaves: waiting would never end. */
    if (!rp_state->slot_taken_over && !rp_gen_accepting_everywhere()) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                 "new generation %s after %" APR_TIME_T_FMT " ms; the "
                 "previous children stop accepting now",
                 rp_state->slot_taken_over
                 ? "needs slots of the previous one (ServerLimit leaves no "
                   "room for both)"
                 : "accepting in every bucket",
                 apr_time_as_msec(apr_time_now() - rp_state->retiring_since));
    rp_gen_stop_retiring(AP_MPM_PODX_GRACEFUL);
}

/* ---- configuration test before a restart --------------------------------- */

static const char **conftest_argv(apr_pool_t *p)
{
    const process_rec *proc = ap_server_conf->process;
    const char **argv = apr_pcalloc(p, (proc->argc + 2) * sizeof(*argv));
    int i;

    for (i = 0; i < proc->argc; i++) {
        argv[i] = proc->argv[i];
    }
    argv[i] = "-t";
    return argv;
}

/* This very binary: argv[0] may be relative, and the parent has since
 * changed directory. */
static const char *own_binary(apr_pool_t *p, const char *argv0)
{
#ifdef __linux__
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n > 0) {
        return apr_pstrmemdup(p, buf, (apr_size_t)n);
    }
#endif
    return argv0;
}

/* Runs `httpd <same arguments> -t`; its output goes to *out. */
static apr_status_t run_conftest(apr_pool_t *p, int *code, char **out)
{
    const char **argv = conftest_argv(p);
    const char *binary = own_binary(p, argv[0]);
    apr_procattr_t *attr;
    apr_file_t *rd, *wr;
    apr_proc_t proc;
    apr_exit_why_e why;
    apr_size_t len = 0;
    apr_status_t rv;
    char *buf = apr_pcalloc(p, CONFTEST_OUTPUT_MAX + 1);

    if ((rv = apr_file_pipe_create_ex(&rd, &wr, APR_FULL_BLOCK, p))
        || (rv = apr_procattr_create(&attr, p))
        || (rv = apr_procattr_child_out_set(attr, wr, NULL))
        || (rv = apr_procattr_child_err_set(attr, wr, NULL))
        || (rv = apr_procattr_cmdtype_set(attr, APR_PROGRAM_PATH))
        || (rv = apr_procattr_error_check_set(attr, 1))
        || (rv = apr_proc_create(&proc, binary, argv, NULL, attr, p))) {
        return rv;
    }
    apr_file_close(wr);
    /* Not niced: under autogroup scheduling a niced test competes with the
     * busy children of its own session and starved for 10-20 s under load
     * (the parent waits for it); at their priority it costs what the
     * parent's own reading of the configuration costs. */
    for (;;) {
        apr_size_t n = CONFTEST_OUTPUT_MAX - len;
        if (n == 0 || apr_file_read(rd, buf + len, &n) != APR_SUCCESS) {
            break;
        }
        len += n;
    }
    apr_file_close(rd);
    apr_proc_wait(&proc, code, &why, APR_WAIT);
    if (why != APR_PROC_EXIT) {
        *code = 128 + *code;
    }
    *out = buf;
    return APR_SUCCESS;
}

int rp_gen_config_ok(void)
{
    apr_pool_t *p;
    char *out = NULL, *line, *last;
    int code = 0, ok;
    apr_status_t rv;

    if (rp_one_process) {
        return 1;
    }
    apr_pool_create(&p, ap_pglobal);
    rv = run_conftest(p, &code, &out);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, ap_server_conf,
                     RP_LOG_TAG "could not test the configuration before "
                     "restarting; restarting without the test");
        apr_pool_destroy(p);
        return 1;
    }
    ok = code == 0;
    if (!ok) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, RP_LOG_TAG
                     "restart refused: the configuration test failed (exit "
                     "%d); the running configuration goes on serving. Fix "
                     "the error below and restart again:", code);
        for (line = apr_strtok(out, "\n", &last); line;
             line = apr_strtok(NULL, "\n", &last)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf,
                         RP_LOG_TAG "  %s", line);
        }
    }
    apr_pool_destroy(p);
    return ok;
}
