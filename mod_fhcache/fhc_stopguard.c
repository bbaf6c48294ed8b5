/* A guard against a race in httpd's own mpm_event and mpm_worker (not in
 * this module: it crashes as often without it), so that servers loading
 * mod_fhcache do not crash when they are stopped.
 *
 * On an ungraceful stop (apachectl stop or restart, SIGTERM, SIGHUP) the
 * child's main thread closes every worker's connection through the MPM's
 * table of sockets in use (close_worker_sockets()); it reads a worker's
 * entry, then the socket.  A worker that finishes its connection meanwhile
 * releases the connection's pool, and once the listener has freed the idle
 * pools (max_recycled_pools 0) that pool is destroyed at once and its
 * memory unmapped: the main thread then reads the socket from unmapped
 * memory and the child dies of SIGSEGV.  Seen in about 1 in 20 stops right
 * after a request (docs/mod_fhcache.md, "Stopping under mpm_event").
 *
 * The guard: a cleanup on every connection's pool, which runs in that
 * worker before the pool's memory goes.  While the child is stopping and
 * its main thread has not finished closing sockets (the MPM runs the
 * child_stopping hook right after close_worker_sockets()), it waits, so
 * no pool is unmapped while the main thread may still read from it.
 * httpd before 2.4.49 has no child_stopping hook: nothing tells when the
 * main thread is done, so the guard waits a short while from the first
 * sight of the stop instead. */
#include "fhc_module.h"

#include "ap_mpm.h"
#include "http_connection.h"
#include "apr_atomic.h"
#include "apr_time.h"

#include <string.h>

/* Longest wait per connection: the main thread needs microseconds; the
 * bound only keeps a child that never runs child_stopping from hanging. */
#define GUARD_MAX_WAIT_USEC (2 * APR_USEC_PER_SEC)
/* Without the hook: from the first connection that met the stop. */
#define GUARD_BLIND_WAIT_USEC (50 * 1000)
#define GUARD_POLL_USEC 1000

static int guard_on;                    /* the MPM has the race */
static int told_when_closed;            /* httpd runs child_stopping */
static volatile apr_uint32_t sockets_closed;   /* child_stopping ran */
static volatile apr_uint32_t first_seen_ms;    /* without the hook */

void fhc_stopguard_register(int has_child_stopping)
{
    told_when_closed = has_child_stopping;
}

/* Without child_stopping: the stop's first sighting (milliseconds, the
 * first thread's) plus a short while. */
static int blind_wait_over(void)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_as_msec(apr_time_now()) | 1;

    apr_atomic_cas32(&first_seen_ms, now, 0);
    return now - apr_atomic_read32(&first_seen_ms)
           >= GUARD_BLIND_WAIT_USEC / 1000;
}

static int stopping(void)
{
    int state = AP_MPMQ_RUNNING;
    return ap_mpm_query(AP_MPMQ_MPM_STATE, &state) == APR_SUCCESS
           && state == AP_MPMQ_STOPPING;
}

static apr_status_t wait_for_main_thread(void *data)
{
    apr_time_t waited = 0;

    while (stopping() && !apr_atomic_read32(&sockets_closed)
           && waited < GUARD_MAX_WAIT_USEC
           && (told_when_closed || !blind_wait_over())) {
        apr_sleep(GUARD_POLL_USEC);
        waited += GUARD_POLL_USEC;
    }
    return APR_SUCCESS;
}

void fhc_stopguard_child_init(apr_pool_t *pchild, server_rec *s)
{
    const char *mpm = ap_show_mpm();

    guard_on = strcmp(mpm, "event") == 0 || strcmp(mpm, "worker") == 0;
    apr_atomic_set32(&sockets_closed, 0);
    apr_atomic_set32(&first_seen_ms, 0);
}

int fhc_stopguard_pre_connection(conn_rec *c, void *csd)
{
    if (guard_on) {
        apr_pool_cleanup_register(c->pool, NULL, wait_for_main_thread,
                                  apr_pool_cleanup_null);
    }
    return OK;
}

void fhc_stopguard_child_stopping(apr_pool_t *pchild, int graceful)
{
    apr_atomic_set32(&sockets_closed, 1);
}
