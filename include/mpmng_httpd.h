/* The httpd seam: every difference between the httpd 2.4 releases mpm-ng
 * builds against, from 2.4.37 (RHEL 8) to today's, lives here and in
 * common/mpmng_httpd.c, as fhc_os.h is the one place for platforms.  The
 * rest of the code uses today's names and these functions, and has no
 * version test of its own.
 *
 * Chosen at compile time by the module magic number of the headers built
 * against (MPMNG_HTTPD_MMN below: AP_MODULE_MAGIC_AT_LEAST, never the
 * release number, which breaks at 2.5): a module runs on the httpd whose
 * apxs built it, or a newer 2.4 (httpd's own rule for modules).  What the
 * newer httpd has in addition (a hook, a state) is then not used.
 *
 * Who may call it: our modules only (MPMNG_HIDDEN, include/README.md). */
#ifndef MPMNG_HTTPD_H
#define MPMNG_HTTPD_H

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "scoreboard.h"
#include "ap_mmn.h"
#include "apr_thread_proc.h"

#include "mpmng_common.h"

#define MPMNG_HTTPD_MMN(minor) AP_MODULE_MAGIC_AT_LEAST(20120211, minor)

#if !MPMNG_HTTPD_MMN(83)
#error "mpm-ng needs httpd 2.4.37 or newer (module magic 20120211.83)"
#endif

/* Each feature with the module magic number that brought it (ap_mmn.h). */
#define MPMNG_HAS_READ_BUF_SIZE   MPMNG_HTTPD_MMN(97)   /* 2.4.48 */
/* Core's output filter rewritten with ReadBufferSize (2.4.48): a brigade
 * holding a file bucket is written at once; before, below 4 KiB in all
 * it was set aside like memory. */
#define MPMNG_CORE_WRITES_FILES   MPMNG_HTTPD_MMN(97)   /* 2.4.48 */
#define MPMNG_HAS_ETAG_EX         MPMNG_HTTPD_MMN(101)  /* 2.4.48 */
#define MPMNG_HAS_HTTP_SSL        MPMNG_HTTPD_MMN(104)  /* 2.4.48 */
#define MPMNG_HAS_CHILD_STOPPING  MPMNG_HTTPD_MMN(110)  /* 2.4.49 */
#define MPMNG_HAS_PRE_CONNECTION  MPMNG_HTTPD_MMN(117)  /* 2.4.50 */
#define MPMNG_HAS_AP_THREAD       MPMNG_HTTPD_MMN(122)  /* 2.4.53 */
#define MPMNG_HAS_WAITIO_STATE    MPMNG_HTTPD_MMN(135)  /* 2.4.63 */
#define MPMNG_HAS_WAIT_IO_SCORE   MPMNG_HTTPD_MMN(136)  /* 2.4.63 */
#define MPMNG_HAS_CAN_WAITIO      MPMNG_HTTPD_MMN(137)  /* 2.4.63 */

/* ---- connection states ------------------------------------------------
 * 2.4.63 renamed the first two states (same values, 0 and 1): older httpd
 * gets the new names, so there is one spelling.  CONN_STATE_ASYNC_WAITIO
 * (a module waits for its socket, then its process_connection hook goes
 * on) exists from 2.4.63 only; no module of an older httpd returns it. */
#if !MPMNG_HAS_WAITIO_STATE
#define CONN_STATE_KEEPALIVE   CONN_STATE_CHECK_REQUEST_LINE_READABLE
#define CONN_STATE_PROCESSING  CONN_STATE_READ_REQUEST_LINE
#endif

static APR_INLINE int mpmng_state_is_waitio(conn_state_e state)
{
#if MPMNG_HAS_WAITIO_STATE
    return state == CONN_STATE_ASYNC_WAITIO;
#else
    (void)state;
    return 0;
#endif
}

/* ap_mpm_query codes only some releases have: 1 with *result set when
 * code is one (AP_MPMQ_CAN_WAITIO: an MPM that honours ASYNC_WAITIO says
 * so), 0 otherwise. */
MPMNG_HIDDEN int mpmng_mpm_query_new(int code, int *result);

/* ---- the scoreboard ---------------------------------------------------
 * process_score grew in 2.4.63 (wait_io): index it only through httpd's
 * ap_get_scoreboard_process(), never ap_scoreboard_image->parent[i]. */
static APR_INLINE void mpmng_score_set_wait_io(process_score *ps,
                                               apr_uint32_t n)
{
#if MPMNG_HAS_WAIT_IO_SCORE
    ps->wait_io = n;
#else
    (void)ps;
    (void)n;
#endif
}

/* ---- threads ----------------------------------------------------------
 * From 2.4.53 httpd's threads know their apr_thread_t (ap_thread_current,
 * which mod_http2 2.x uses): an MPM creates them with ap_thread_create,
 * the child's main thread with ap_thread_main_create, and a forked child
 * drops its parent's with ap_thread_current_after_fork.  Older httpd:
 * plain APR threads, nothing to set up. */
MPMNG_HIDDEN apr_status_t mpmng_thread_create(apr_thread_t **thd,
                                              apr_threadattr_t *attr,
                                              apr_thread_start_t fn,
                                              void *arg, apr_pool_t *p);
MPMNG_HIDDEN void mpmng_thread_main_create(apr_pool_t *p);
MPMNG_HIDDEN void mpmng_thread_after_fork(void);

/* ---- connections ------------------------------------------------------
 * The pre_connection hooks.  On an error c->aborted is set.  From 2.4.50
 * core's own set-up (socket, filters) is made up for when an earlier hook
 * failed; before, it may be missing: then ap_get_conn_socket(c) is NULL
 * and the caller closes the socket itself (no filter may be called). */
MPMNG_HIDDEN int mpmng_pre_connection(conn_rec *c, void *csd);

/* c (or its master) speaks TLS: ap_ssl_conn_is_ssl from 2.4.48, mod_ssl's
 * optional ssl_is_https before (found by mpmng_httpd_register_hooks'
 * post_config; 0 without mod_ssl). */
MPMNG_HIDDEN int mpmng_conn_is_ssl(conn_rec *c);

/* Modules that call mpmng_conn_is_ssl register this from their
 * register_hooks (it looks up optional functions after the configuration
 * is read). */
MPMNG_HIDDEN void mpmng_httpd_register_hooks(apr_pool_t *p);

/* ---- the child_stopping hook (2.4.49) ---------------------------------
 * Registered with mpmng_hook_child_stopping: 1 where httpd has the hook,
 * 0 where it does not (the caller needs another way to learn it).  An MPM
 * runs it with mpmng_run_child_stopping (nothing where there is none). */
typedef void mpmng_child_stopping_fn(apr_pool_t *pchild, int graceful);
MPMNG_HIDDEN int mpmng_hook_child_stopping(mpmng_child_stopping_fn *fn,
                                           int order);
MPMNG_HIDDEN void mpmng_run_child_stopping(apr_pool_t *pchild, int graceful);

/* ---- core's per-directory configuration ------------------------------- */
/* ReadBufferSize (2.4.48): 0 where unset or unknown. */
MPMNG_HIDDEN apr_size_t mpmng_read_buf_size(const core_dir_config *d);
/* FileETag Digest (2.4.48) is among bits: core reads the file for it. */
MPMNG_HIDDEN int mpmng_etag_reads_file(etag_components_t bits);

/* ---- ETags ------------------------------------------------------------
 * The strong ETag core gives file fi (its stat data) for a request late
 * enough after its mtime, made by core's own function, in r->pool; NULL
 * where it cannot be stored: a module asked r for strong ETags, or core
 * would read the file (FileETag Digest).  "" for FileETag None. */
MPMNG_HIDDEN const char *mpmng_etag_of_file(request_rec *r,
                                            const apr_finfo_t *fi);
/* Core's ETag for r now would be that strong form (r->mtime set by
 * ap_update_mtime): the request came late enough after the file's mtime,
 * by the rule of this httpd, and no module asked for strong ETags. */
MPMNG_HIDDEN int mpmng_etag_strong_now(const request_rec *r);

#endif
