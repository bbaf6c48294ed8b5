/* Worker threads: wait on the completion port (the port releases the
 * thread that blocked last first) and dispatch: an accepted connection, a
 * connection's wait (completion key: its context): its next request, or
 * its lingering close or socket reuse; quit. */
#include "wn.h"

#include "http_connection.h"
#include "http_core.h"
#include "mpm_common.h"
#include "apr_portable.h"
#include "ap_mpm.h"

typedef struct worker {
    HANDLE thread;
    int index;                /* scoreboard thread slot */
} worker;

static worker *workers;
static int nworkers;
static DWORD WINAPI worker_main(void *arg)
{
    worker *w = arg;
    int my_index = w->index;

    wn_conn_set_worker(my_index);
    for (;;) {
        DWORD bytes = 0;
        ULONG_PTR key = 0;
        OVERLAPPED *ov = NULL;
        BOOL ok;
        wn_op *op;

        ap_update_child_status_from_indexes(wn_slot, my_index, SERVER_READY,
                                            NULL);
        InterlockedIncrement(&wn_stats.workers_idle);
        ok = GetQueuedCompletionStatus(wn_port, &bytes, &key, &ov, INFINITE);
        InterlockedDecrement(&wn_stats.workers_idle);
        if (!ov) {
            if (!ok) {
                /* the port itself failed: nothing sensible to retry */
                ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(),
                             ap_server_conf, WN_TAG "waiting on the "
                             "completion port failed; worker exits");
                break;
            }
            continue;
        }
        if (key) {
            /* a connection socket's: our wait, or one of APR's own
             * overlapped calls (it waits on its event; ignore) */
            wn_ctx *ctx = (wn_ctx *)key;

            if (ov != &ctx->wait_op.ov)
                continue;
            if (ctx->wait_op.kind == WN_OP_READABLE) {
                ap_update_child_status_from_indexes(wn_slot, my_index,
                                                    SERVER_BUSY_READ, NULL);
                wn_conn_readable(ctx);
            }
            else
                wn_close_completed(ctx);
            continue;
        }
        op = (wn_op *)ov;
        if (op->kind == WN_OP_QUIT)
            break;
        ap_update_child_status_from_indexes(wn_slot, my_index, SERVER_BUSY_READ,
                                            NULL);
        if (op->kind == WN_OP_ACCEPTEX) {
            wn_ctx *accepted = wn_accept_completed((wn_ctx *)op);

            if (accepted)
                wn_serve(accepted);
        }
        else if (op->kind == WN_OP_ACCEPTED)
            wn_serve((wn_ctx *)op);
    }
    ap_update_child_status_from_indexes(wn_slot, my_index, SERVER_DEAD, NULL);
    return 0;
}

apr_status_t wn_workers_start(apr_pool_t *p, int n)
{
    int i;

    workers = apr_pcalloc(p, n * sizeof *workers);
    for (i = 0; i < n; i++) {
        workers[i].index = i;
        ap_update_child_status_from_indexes(wn_slot, i, SERVER_STARTING, NULL);
        workers[i].thread = CreateThread(NULL, ap_thread_stacksize,
                                         worker_main, &workers[i],
                                         wn_stack_flag, NULL);
        if (!workers[i].thread) {
            apr_status_t rv = apr_get_os_error();
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, ap_server_conf, WN_TAG
                         "created %d of %d worker threads (ThreadsPerChild); "
                         "lower ThreadsPerChild or ThreadStackSize", i, n);
            ap_update_child_status_from_indexes(wn_slot, i, SERVER_DEAD, NULL);
            nworkers = i;
            return rv;
        }
    }
    nworkers = n;
    return APR_SUCCESS;
}

/* Each idle worker takes one QUIT; busy ones finish their connection
 * first.  Waits at most `grace`; returns with workers still running if they
 * did not finish (the process exit ends them). */
int wn_workers_stop(apr_interval_time_t grace)
{
    static wn_op quit;
    apr_time_t until = apr_time_now() + grace;
    int i, left;

    quit.kind = WN_OP_QUIT;
    for (i = 0; i < nworkers; i++)
        PostQueuedCompletionStatus(wn_port, 0, 0, &quit.ov);
    for (i = 0; i < nworkers; i++) {
        apr_interval_time_t remain = until - apr_time_now();
        DWORD ms = remain > 0 ? (DWORD)apr_time_as_msec(remain) : 0;

        if (WaitForSingleObject(workers[i].thread, ms) != WAIT_OBJECT_0)
            break;
    }
    for (left = 0, i = 0; i < nworkers; i++)
        if (WaitForSingleObject(workers[i].thread, 0) != WAIT_OBJECT_0)
            left++;
    if (left)
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, WN_TAG
                     "%d workers still busy after %d s; their connections "
                     "are cut as the child exits", left,
                     (int)apr_time_sec(grace));
    return left;
}
