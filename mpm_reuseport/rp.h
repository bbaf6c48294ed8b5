/* mpm_reuseport's internals.  Every file of mpm_reuseport/, what it owns:
 *   mod_mpm_reuseport.c  module record, hooks, ap_mpm_query; the globals below
 *   rp.h                 this file: the parent's and shared declarations
 *   rp_config.c          directives, pre_config/check_config
 *   rp_settings.c/.h     pure resolution of directive values into limits
 *   rp_listen.c          per-bucket SO_REUSEPORT listeners kept across restarts
 *   rp_inherit.c/.h      listening sockets handed to this start (an upgrade,
 *                        systemd's store), taken by address
 *   rp_forkguard.c/.h    others' forks of the parent let go of our sockets
 *   rp_steer.c           which bucket socket the kernel gives a connection
 *   rp_affinity.c        ReusePortCPUAffinity: pinning, the locality sample
 *   rp_cpumap.c/.h       which CPUs serve which bucket (pure)
 *   rp_generation.c      graceful restart: hand-over between generations
 *   rp_upgrade.c/.h      binary upgrade: a new server takes the sockets over
 *   rp_sdstore.c/.h      systemd's file descriptor store (systemctl restart)
 *   rp_sdnotify.c/.h     systemd's notification socket: the store's
 *                        transport, the main pid after an upgrade
 *   rp_parent.c          the parent: children per bucket, maintenance, restarts
 *   rp_crash.c/.h        a fatal signal's report in the error log
 *   rp_relief.c          which stuck bucket needs another child (the parent
 *                        starts it): the glue of rp_relief_rule
 *   rp_relief_rule.c/.h  when a bucket is stuck (pure)
 *   rp_bstats.c          per-bucket numbers: server-status, progress (a leaf:
 *                        it calls no other file of ours but its rule)
 *   rp_drop_rule.c/.h    each bucket's share of the refused connections
 *                        (pure): the rule of rp_bstats
 *   rp_child.c           a child: set-up order, its threads (workers, the
 *                        loop thread's turns), signals, stopping
 *   rp_loop.c/.h         the event loop: pollers, slots, parking, timer
 *                        queues
 *   rp_accept.c/.h       accepting, by the leading worker
 *   rp_refuse.c/.h       a graceful stop refuses new connections before
 *                        the last copies of the listeners close
 *   rp_balance.c/.h      children of a bucket share it: when to pause (the
 *                        glue of rp_balance_rule)
 *   rp_balance_rule.c/.h a child's share of its bucket (pure)
 *   rp_conn_life.c/.h    a connection's record, creation, close and
 *                        release, its pool stock
 *   rp_conn.c/.h         a connection's state machine, run by workers
 *   rp_callbacks.c/.h    timed callbacks, suspended connections
 *   rp_hold.c            a small response held until it is whole
 *   rp_readahead.c/.h    reading a request whole before a worker runs it
 *   rp_inbuf.c/.h        the bytes read ahead: the filter that holds them
 *   rp_spool.c/.h        request bodies read ahead beyond memory, in a file
 *   rp_tlsbody.c/.h      files over TLS read in whole records, not mapped
 *   rp_smallflush.c/.h   small complete responses written at once
 *   rp_reqscan.c/.h      is a request whole? (pure)
 *   rp_rtimeout.c/.h     how long to wait for it (pure)
 *   rp_rtconf.c          RequestReadTimeout per server, for rp_rtimeout
 *   rp_poll.h            readiness seam; rp_poll_epoll.c: epoll backend
 *   rp_timeq.c/.h        timeout queues of parked connections
 *   rp_lf.c/.h           leader/followers among a child's workers
 *   rp_stock.c/.h        a bounded stock of idle connection pools
 *   rp_trim.c/.h         an idle connection's memory cut to what it uses
 * Below, each declaration stands under the file that defines it, with who
 * may call it. */
#ifndef RP_H
#define RP_H

#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_main.h"
#include "http_core.h"
#include "ap_listen.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "scoreboard.h"
#include "unixd.h"

#include "rp_settings.h"
#include "mpmng_httpd.h"
#include "mpmng_once.h"

#define RP_LOG_TAG "mpm_reuseport: "

/* A full restart or stop (the pipe of death's "restart"): children go on
 * for at most this long, answering with Connection: close a request that
 * was already on its way on a kept-alive connection, then cut what is left;
 * the parent's reclaim (SIGTERM) waits for them that long. */
#define RP_BRIEF_GRACE apr_time_from_msec(250)

#ifndef RP_MODULE_FILE /* AP_DECLARE_MODULE declares it there */
APLOG_USE_MODULE(mpm_reuseport);
#endif
extern module AP_MODULE_DECLARE_DATA mpm_reuseport_module;

/* One listener bucket of the current generation. */
typedef struct rp_bucket {
    ap_listen_rec *listeners;   /* one socket per Listen address */
    ap_pod_t *pod;              /* parent -> this bucket's children */
} rp_bucket;

typedef struct rp_dup rp_dup;   /* rp_listen.c: retained bucket sockets */

#define RP_TAKEN_OVER_MAX 64

/* Kept across generations (restarts), in the process pool. */
typedef struct rp_retained {
    ap_unixd_mpm_retained_data *mpm;
    int first_server_limit;
    int first_thread_limit;
    int max_daemons_limit;       /* highest slot in use + 1 */
    apr_uint32_t maxclients_reported;
    int sick_child_detected;
    int spawn_rate_size;
    int *idle_spawn_rate;        /* per bucket */
    apr_time_t *reap_hold_until; /* per bucket: a child was just told to go */
    int hold_off_on_exponential_spawning;
    rp_dup *dups;                /* bucket sockets 1..n-1 per primary */
    /* rp_generation.c: pipes of death of the current generation, and of
     * the previous one while it still accepts during a graceful restart. */
    apr_pool_t *pods_pool;
    ap_pod_t **pods;
    int num_pods;
    apr_pool_t *retiring_pool;   /* NULL: no hand-over in progress */
    ap_pod_t **retiring;
    int num_retiring;
    int retiring_children;       /* the old generation's ServerLimit */
    apr_time_t retiring_since;
    int slot_taken_over;         /* a new child waits for an old one's slot */
    /* rp_parent.c: old children whose slot a new child took while they
     * still listened (pid 0: free; bucket -1: the list was full). */
    struct {
        pid_t pid;
        int bucket;
    } taken_over[RP_TAKEN_OVER_MAX];
} rp_retained;

/* Global state of the running generation, defined in mod_mpm_reuseport.c
 * (set by it, rp_config.c and rp_listen.c); any file reads it. */
extern rp_retained *rp_state;
extern rp_settings rp_conf;     /* as read from the configuration */
extern rp_limits rp_lim;        /* as resolved by check_config */
extern rp_bucket *rp_buckets;   /* rp_lim.num_buckets entries, in pconf */
extern apr_pool_t *rp_pconf;
extern int rp_one_process;

/* rp_config.c: the configuration phases (mod_mpm_reuseport.c hooks them) */
extern const command_rec rp_directives[];
int rp_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp);
int rp_check_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                    server_rec *s);

/* rp_listen.c: the buckets' sockets, the one owner of the set of
 * listeners: it takes those handed to this start (rp_inherit.c) before it
 * binds any, hands them to systemd's store (rp_sdstore.c) and guards them
 * from others' forks (rp_forkguard.c).  Callers: mod_mpm_reuseport.c
 * (open_logs), rp_parent.c (close_all, stop_deferring, fds for an
 * upgrade), rp_child.c (close_other_buckets). */
int rp_listen_open(apr_pool_t *pconf, server_rec *s, int startup);
/* Every listener socket's number (ints in p): all addresses, all buckets,
 * retired ones too, in the kernel's order. */
apr_array_header_t *rp_listen_fds(apr_pool_t *p);
void rp_listen_close_other_buckets(int keep_bucket);
/* Parent: closes removed buckets' sockets on which listened_on(bucket) says
 * no child listens any more. */
void rp_listen_release_retired(int (*listened_on)(int bucket));
void rp_listen_close_all(void);
void rp_listen_stop_deferring(void);
extern const char *rp_listen_note;   /* why fewer buckets, if so */

/* rp_steer.c: new connections go to the current generation's buckets.
 * Caller: rp_listen.c, once the buckets are open.  0, or the error of a
 * socket that could not be steered (logged once). */
int rp_steer_buckets(int nb);

/* rp_affinity.c: ReusePortCPUAffinity, and the locality sample.  Callers:
 * rp_listen.c (setup), rp_steer.c (map), rp_child.c (pin), rp_conn.c
 * (sample). */
void rp_affinity_setup(int nb);         /* parent, per generation */
const struct rp_cpumap *rp_affinity_map(void);  /* NULL: not in use */
void rp_affinity_pin(int bucket);       /* child, before its threads; its
                                           samples count for bucket */
void rp_affinity_sample(apr_socket_t *sock);    /* worker, per request */

/* rp_generation.c: graceful restart hand-over.  Callers: rp_parent.c;
 * rp_relief.c (retiring); rp_child.c (close_retiring_in_child). */
int rp_gen_open_pods(void);
void rp_gen_retire_current(void);
void rp_gen_stop_retiring(ap_podx_restart_t how);
int rp_gen_retiring(void);
void rp_gen_hand_over_when_ready(void);
/* Every bucket has a ready child of the current generation. */
int rp_gen_accepting_everywhere(void);
void rp_gen_close_retiring_in_child(void);
int rp_gen_config_ok(void);

/* rp_parent.c: the parent's main loop (mod_mpm_reuseport.c's mpm hook). */
int rp_run(apr_pool_t *pconf, apr_pool_t *plog, server_rec *s);

/* rp_relief.c: stuck buckets get another child (ReusePortStuckTimeout).
 * It decides; the parent starts the child.  Caller: rp_parent.c only. */
void rp_relief_setup(void);
/* A bucket that needs another child: connections have waited in its queue
 * for `stalled` (`queued` now) while its children accepted none. */
typedef struct rp_relief_need {
    int bucket;
    apr_uint32_t queued;
    apr_time_t stalled;
} rp_relief_need;
/* One look at the buckets, from *next on: 1 with *need filled in and *next
 * moved past it when a bucket needs another child (the caller starts one,
 * reports with rp_relief_started() and looks on); 0 when none (further)
 * does. */
int rp_relief_look(apr_time_t now, int *next, rp_relief_need *need);
/* The child started for need->bucket: its pid, 0 when no slot was free,
 * -1 when fork failed. */
void rp_relief_started(const rp_relief_need *need, pid_t pid);
/* The parent started a child for bucket b (any reason): it gets time to
 * start accepting before the bucket can be found stuck. */
void rp_relief_child_started(int b, apr_time_t now);
/* 1 when bucket b has been fine long enough to give back a child it was
 * given; rp_relief_child_going() when one of its children is told to go. */
int rp_relief_surplus(int b, apr_time_t now);
void rp_relief_child_going(int b);
/* How often the parent should look, or 0 when relief is off. */
apr_interval_time_t rp_relief_interval(void);

/* rp_bstats.c: per-bucket numbers for server-status.  Callers: rp_parent.c
 * (setup, sample), rp_accept.c (accepted), mod_mpm_reuseport.c (status,
 * request_done hooks), rp_balance.c (queue_of), rp_relief.c (progress),
 * rp_child.c (child_started), rp_affinity.c (locality).  A leaf but for
 * rp_drop_rule.c (the drops' arithmetic). */
void rp_bstats_setup(apr_pool_t *pconf);
void rp_bstats_accepted(int bucket);
void rp_bstats_sample(void);
int rp_bstats_status(request_rec *r, int flags);
/* Connections waiting in a bucket's queue, and the queue's limit (any
 * process holding the bucket's sockets). */
void rp_bstats_queue_of(int bucket, apr_uint32_t *queued,
                        apr_uint32_t *limit);

/* Children of `bucket` have accepted `*accepted` connections in all (this
 * generation); `*queued` wait in its queue.  Returns 0 without statistics. */
int rp_bstats_progress(int bucket, apr_uint32_t *queued,
                       apr_uint64_t *accepted);

/* Requests served per child: reset at a child's start (which tells this
 * process its slot); counted by a log_transaction hook. */
void rp_bstats_child_started(int slot);
int rp_bstats_request_done(request_rec *r);

/* One request looked at: run on the CPU that received it, or not. */
void rp_bstats_locality(int bucket, int local);

/* rp_child.c: a child's life.  Callers: rp_parent.c (main,
 * install_early_signals right after fork), mod_mpm_reuseport.c (the
 * post_read_request hook). */
void rp_child_main(int slot, int bucket) __attribute__((noreturn));
int rp_child_post_read_request(request_rec *r);
void rp_child_install_early_signals(pid_t parent); /* right after fork */

/* rp_conn.c: a worker's connection is forgotten before it closes (the
 * pre_close_connection hook, registered by mod_mpm_reuseport.c). */
int rp_conn_pre_close_connection(conn_rec *c);

/* rp_callbacks.c: the mpm_register_timed_callback hook (registered by
 * mod_mpm_reuseport.c). */
apr_status_t rp_callbacks_register(apr_time_t t, ap_mpm_callback_fn_t *fn,
                                   void *baton);

/* rp_hold.c: its output filter (mod_mpm_reuseport.c's register_hooks),
 * added to each request (rp_child.c's post_read_request). */
void rp_hold_register(void);
void rp_hold_add(request_rec *r);

/* rp_rtconf.c: mod_reqtimeout's stages per server (rp_rtimeout.h); NULL
 * where mod_reqtimeout does not apply.  Callers: mod_mpm_reuseport.c (the
 * server config and post_config hooks), rp_readahead.c (for). */
struct rp_rt_conf;
void *rp_rtconf_create_server(apr_pool_t *p, server_rec *s);
void *rp_rtconf_merge_server(apr_pool_t *p, void *base, void *add);
int rp_rtconf_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s);
const struct rp_rt_conf *rp_rtconf_for(const server_rec *s);

#endif
