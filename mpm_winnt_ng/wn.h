/* mpm_winnt_ng internals shared between its files.
 *
 * Shape: the parent (wn_parent.c) keeps ChildProcesses children serving
 * and hands each the listeners (wn_handoff.c); they accept from the same
 * sockets in parallel.  The child (wn_child.c) keeps
 * AcceptExPending AcceptEx calls posted on every listener, all completing
 * on one I/O completion port (wn_accept.c).  Worker threads wait on the port
 * (wn_worker.c); the port wakes the most recently blocked thread first, so
 * a few hot threads do the work.  A worker that picks up an accepted
 * connection posts a replacement AcceptEx and serves it (wn_conn.c) one
 * request at a time; between requests the connection waits on the port,
 * not in a thread (wn_keepalive.c).  A connection that ends lingers for
 * the client's close and has its socket recycled on the port too
 * (wn_close.c, wn_recycle.c), then goes back to a LIFO context pool
 * (wn_ctx.c); a deadline list (wn_waits.c) ends waits past their time.
 * Every operation on the port is a wn_op whose OVERLAPPED is its first
 * member: one dispatch on completion (a connection socket's completions
 * carry its context as the key).
 *
 * Calls go down only: module > parent > child > worker > conn > close,
 * accept > recycle, keepalive, ctx, handoff > waits (owns the port),
 * tally (the counts every part adds to, which server-status shows),
 * config, control > pure logic.  A part below hands results up (an
 * accepted connection is returned to the worker, not served by accept). */
#ifndef WN_H
#define WN_H

#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_main.h"
#include "ap_listen.h"
#include "scoreboard.h"
#include "apr_thread_proc.h"

#include <winsock2.h>
#include <ws2tcpip.h>
#include <mswsock.h>

#include "wn_settings.h"
#include "mpmng_once.h"
#include "wn_reuse_policy.h"

/* Every log line of this module starts with this tag. */
#define WN_TAG "mpm_winnt_ng: "

extern module AP_MODULE_DECLARE_DATA mpm_winnt_ng_module;
/* Log lines name the module (wn_module.c declares it instead). */
#ifndef WN_MODULE_RECORD
APLOG_USE_MODULE(mpm_winnt_ng);
#endif

/* ---- process role and configuration (wn_module.c, wn_config.c) ---- */
extern DWORD wn_parent_pid;          /* == wn_my_pid in the parent */
extern DWORD wn_my_pid;
extern int wn_one_process;           /* -X / -DONE_PROCESS */
extern const char *wn_signal_arg;    /* -k argument or NULL */
extern int wn_injected_args;         /* argv[1..] we added (-d ServerRoot) */
extern volatile ap_generation_t wn_generation;
extern volatile int wn_mpm_state;    /* AP_MPMQ_STARTING/RUNNING/STOPPING */
extern apr_pool_t *wn_pconf;
extern wn_settings wn_conf;          /* as the configuration said */
extern wn_limits wn_run;             /* resolved */
extern wn_fixed wn_first;            /* the scoreboard's sizes */
extern DWORD wn_stack_flag;

extern const command_rec wn_commands[];
void wn_config_pre(void);
int wn_config_check(apr_pool_t *plog, server_rec *s);

#define WN_IS_CHILD() (wn_parent_pid != wn_my_pid)

/* ---- control events and -k (wn_control.c) ---- */
void wn_control_open(apr_pool_t *p, DWORD parent_pid, int create);
HANDLE wn_control_shutdown_event(void);
HANDLE wn_control_restart_event(void);
int wn_control_signal_server(int *exit_status, apr_pool_t *p);  /* -k */
void wn_control_console_handler(int in_parent);

/* ---- an unhandled exception reported in the error log (wn_crash.c) ---- */
void wn_crash_report_install(void);
void wn_crash_on_purpose(void);      /* WinNTNGTestHook crash-at-exit */

/* ---- -w: the console held open after a failed exit (wn_hold.c) ---- */
void wn_hold_console_on_error(void);

/* ---- Windows service (wn_service.c) ---- */
/* rewrite_args: what -k (k, or NULL) and -n (name, or NULL) ask for.
 * Service commands that need no configuration are done here (the process
 * exits); under the service manager the installed ConfigArgs are added to
 * args.  Returns the -k left for ap_signal_server, or NULL to serve. */
const char *wn_service_args(process_rec *process, apr_array_header_t *args,
                            const char *k, const char *name);
int wn_service_configuring(void);              /* -k install|config */
int wn_service_after_config(int *exit_status, apr_pool_t *p);
void wn_service_running(void);                 /* parent: a child accepts */

/* ---- parent to child hand-off (wn_handoff.c) ---- */
typedef struct wn_handoff {
    ap_generation_t generation;
    int slot;                 /* scoreboard process slot */
    int thread_limit;         /* the scoreboard's, not the config's */
    int server_limit;
    HANDLE started;           /* child -> parent: header read */
    HANDLE accepting;         /* child -> parent: AcceptEx calls posted */
    HANDLE retire;            /* child -> parent: MaxConnectionsPerChild */
    HANDLE exit_event;        /* parent -> child: stop accepting, finish */
    HANDLE scoreboard;        /* file mapping */
} wn_handoff;

extern wn_handoff wn_me;      /* in a child: what the parent said */
extern int wn_slot;           /* our scoreboard slot (set by the child) */

int wn_handoff_read_header(void);            /* child, rewrite_args */
void wn_handoff_attach_scoreboard(server_rec *s);
void wn_handoff_read_listeners(server_rec *s);

typedef struct wn_kid {
    HANDLE proc;
    DWORD pid;
    int slot;
    ap_generation_t generation;
    HANDLE exit_event;
    HANDLE accepting;
    HANDLE retire;
    int told;                 /* told to stop: finishing its connections */
} wn_kid;

int wn_handoff_spawn(apr_pool_t *p, int slot, wn_kid *kid);

/* ---- parent (wn_parent.c) ---- */
int wn_parent_run(server_rec *s);           /* 1: restart, 0: stop */

/* ---- child (wn_child.c) ---- */
void wn_child_main(apr_pool_t *pconf, HANDLE exit_event);
/* How long a stopping child serves its open connections (the parent
 * kills it 10 s after that). */
apr_interval_time_t wn_drain_time(void);

/* ---- operations on the port ---- */
typedef enum {
    WN_OP_ACCEPTEX = 1,       /* AcceptEx completed (or failed) */
    WN_OP_ACCEPTED,           /* accept() fallback thread got one */
    WN_OP_READABLE,           /* a parked connection's zero-byte WSARecv */
    WN_OP_LINGER,             /* a closing connection's read for the EOF */
    WN_OP_RECYCLE,            /* TransmitFile/DisconnectEx reuse done */
    WN_OP_QUIT                /* worker: exit */
} wn_op_kind;

typedef struct wn_op {
    OVERLAPPED ov;            /* first: CONTAINING_RECORD-free cast */
    wn_op_kind kind;
} wn_op;

/* ---- contexts (wn_ctx.c) ---- */
typedef struct wn_listener wn_listener;

/* Room AcceptEx needs per address: the largest sockaddr plus 16. */
#define WN_ADDR_ROOM (sizeof(SOCKADDR_STORAGE) + 16)

typedef struct wn_ctx {
    wn_op op;
    struct wn_ctx *next;      /* LIFO free list */
    wn_listener *listener;
    SOCKET s;                 /* INVALID_SOCKET until one is made */
    int recycled;             /* s served a connection before */
    int nonblocking;          /* s may be in non-blocking mode */
    apr_pool_t *ptrans;
    apr_socket_t *sock;       /* APR's view of s during a connection */
    struct sockaddr *local, *remote;
    int local_len, remote_len;
    DWORD data_len;           /* bytes AcceptEx received (always 0) */
    char *buf;                /* the two addresses AcceptEx writes */
    DWORD data_room;
    HANDLE event;             /* emulated completion, recycling waits */
    HANDLE wait;              /* RegisterWaitForSingleObject handle */
    int on_port;              /* s is associated with wn_port (key: ctx) */
    int skips_port;           /* ... and what completes at once queues
                                 nothing: the caller goes on (wn_waits.c) */

    /* the connection being served (wn_conn.c) */
    conn_rec *c;
    apr_thread_t *thd;        /* c->current_thread, in ptrans */
    apr_os_thread_t osthd;    /* the worker serving it now */
    conn_state_t cs;
    ap_sb_handle_t *sbh;
    apr_bucket_brigade *flush_bb;
    apr_interval_time_t ka_timeout;

    /* its one wait on the port: the next request (wn_keepalive.c) or the
     * end (wn_close.c); listed on a wn_waitq until it completes */
    wn_op wait_op;
    apr_time_t wait_until;
    struct wn_ctx *wait_prev, *wait_next;
    int wait_linked;
    apr_time_t linger_until;  /* lingering close: the last moment */
    int recycle_after;        /* recycle (not close) at the client's EOF */
    int fin_sent;             /* we shut down sending */
} wn_ctx;

wn_ctx *wn_ctx_get(wn_listener *l);           /* a free context or a new one */
void wn_ctx_put(wn_ctx *ctx);                 /* back on its listener's stack */
void wn_ctx_connection_ended(wn_ctx *ctx);    /* closed or reused: put, count */
void wn_ctx_drop_socket(wn_ctx *ctx);         /* close s */
SOCKET wn_ctx_new_socket(wn_listener *l);     /* overlapped, not inheritable */
/* Keeps a socket out of child processes (CGI, piped logs); 0 if Windows
 * refused (logged once): a connection's socket is then not served. */
int wn_no_inherit(SOCKET s);

/* ---- listeners and accepting (wn_accept.c) ---- */
typedef enum { WN_ACCF_CONNECT, WN_ACCF_NONE } wn_accf;

struct wn_listener {
    ap_listen_rec *lr;
    SOCKET s;
    int family;
    wn_accf accf;
    volatile LONG pending;    /* AcceptEx calls posted and not completed */
    volatile LONG errors;     /* failures in a row */
    volatile LONG stopping;
    SRWLOCK lock;             /* guards free */
    wn_ctx *free;
    HANDLE thread;            /* accept() fallback */
    int emulated;             /* completions posted from an event wait:
                                 the listener is associated with another
                                 process's port (a shared socket) */
    apr_pool_t *pool;
    wn_listener *next;
};

extern wn_listener *wn_listeners;

apr_status_t wn_accept_setup(apr_pool_t *p);
void wn_accept_fill(wn_listener *l);          /* post up to AcceptExPending */
void wn_accept_tick(void);                    /* housekeeping: back-off refill */
/* An AcceptEx completed: the next one is posted; returns the connection
 * to serve, or NULL (failed, cancelled, or given back). */
wn_ctx *wn_accept_completed(wn_ctx *ctx);
/* Cancels and drains the AcceptEx calls, calling tick every 20 ms. */
void wn_accept_stop(void (*tick)(void));

/* ---- waits on the port with a deadline (wn_waits.c) ---- */
/* A context is on at most one list at a time (its wait_* fields).  The
 * list's lock also orders a cancel before the context's next wait. */
typedef struct wn_waitq {
    SRWLOCK lock;
    wn_ctx *head, *tail;      /* in listing order */
    volatile LONG count;
} wn_waitq;

#define WN_WAITQ_INIT { SRWLOCK_INIT, NULL, NULL, 0 }
/* Lists ctx before its overlapped wait is posted (it may complete before
 * the post returns). */
void wn_waitq_add(wn_waitq *q, wn_ctx *ctx, apr_time_t until);
/* Unlists ctx; 1 if it was listed (not cancelled or already taken). */
int wn_waitq_remove(wn_waitq *q, wn_ctx *ctx);
/* Cancels ctx->wait_op of the listed contexts past their time (n < 0) or
 * of the first n; the cancelled completions end them.  For those past
 * their time, extend (if given) may return a later deadline instead: the
 * wait goes on, re-listed (called under the list's lock). */
void wn_waitq_expire(wn_waitq *q, apr_time_t now, int n,
                     apr_time_t (*extend)(wn_ctx *ctx, apr_time_t now));
/* Associates ctx->s with the port (key: ctx) once; 0 if Windows refused.
 * Where it can, it also sets FILE_SKIP_COMPLETION_PORT_ON_SUCCESS
 * (ctx->skips_port): an overlapped call on ctx->s that succeeds at once
 * then queues no completion and its caller handles the result. */
extern HANDLE wn_port;                       /* the completion port */
apr_status_t wn_waits_create_port(void);     /* the child, at start */
int wn_waits_associate(wn_ctx *ctx);

/* ---- recycling methods (wn_recycle.c) ---- */
extern LPFN_ACCEPTEX wn_AcceptEx;
extern LPFN_GETACCEPTEXSOCKADDRS wn_GetAcceptExSockaddrs;
extern LPFN_TRANSMITFILE wn_TransmitFile;
extern LPFN_DISCONNECTEX wn_DisconnectEx;

apr_status_t wn_recycle_setup(SOCKET any_listener, int family);
/* Before serving on a recycled socket: 0, or -1 when it cannot send (the
 * connection is dropped; recycling stops after a few). */
int wn_recycle_check_reused(wn_ctx *ctx);
const char *wn_recycle_method_name(void);
/* How this child may recycle a connection's socket now. */
typedef struct wn_recycle_plan {
    wn_reuse_method method;   /* WN_METHOD_CLOSE: never */
    int server_first;         /* while the client is still connected */
    int after_shutdown;       /* after our shutdown and the client's EOF */
    /* after the client's EOF: 0 never; 1 our shutdown first (a client
     * that only half-closed gets our FIN); 2 without it (a forced method
     * whose check failed: Wine's socket cannot send after a shutdown) */
    int after_client_eof;
} wn_recycle_plan;
wn_recycle_plan wn_recycle_current(void);
/* Posts the reuse of ctx->s (ctx->wait_op, WN_OP_RECYCLE, on the port);
 * 0 if it could not be posted, 2 if it completed at once and no
 * completion comes (ctx->skips_port). */
int wn_recycle_post(wn_ctx *ctx, wn_reuse_method m);
/* The posted reuse completed: 1 if ctx->s can accept again (counted). */
int wn_recycle_completed(wn_ctx *ctx);
/* The reuse failed: counted, logged once, ctx->s closed. */
void wn_recycle_failed(wn_ctx *ctx);
/* Reuse in this thread, waiting at most 5 s (when the port cannot be
 * used); 1 if ctx->s can accept again. */
int wn_recycle_now(wn_ctx *ctx, wn_reuse_method m);

/* ---- the end of a connection (wn_close.c) ---- */
/* Ends a served connection: runs httpd's pre-close hooks, flushes, takes
 * the socket from APR; then the caller clears the pool and calls
 * wn_close_finish, which lingers for the client's close and recycles or
 * closes the socket, on the port when it can. */
void wn_close_begin(wn_ctx *ctx, conn_rec *c);
void wn_close_finish(wn_ctx *ctx);
void wn_close_completed(wn_ctx *ctx);         /* ctx->wait_op completed */
void wn_close_expire(apr_time_t now);         /* linger and reuse limits */
void wn_close_cancel_all(void);               /* stopping */
int wn_close_count(void);                     /* connections closing */
/* 1 while a close waits 50 ms for the client: the tick must run more
 * often. */
int wn_close_tick_soon(void);
/* An event set when such a wait begins (wakes the tick), or NULL. */
HANDLE wn_close_setup(void);

/* ---- workers (wn_worker.c) ---- */
apr_status_t wn_workers_start(apr_pool_t *p, int n);
int wn_workers_stop(apr_interval_time_t grace);   /* still busy */

/* ---- connections (wn_conn.c) ---- */
void wn_conn_set_worker(int index);           /* this thread's scoreboard slot */
void wn_serve(wn_ctx *ctx);                   /* a new connection */
void wn_conn_readable(wn_ctx *ctx);           /* a parked one woke up */
void wn_conn_register_hooks(void);

/* ---- keep-alive waits on the port (wn_keepalive.c) ---- */
/* 0: parked (the port owns ctx now), 1: the client is gone, -1: cannot
 * park (wait in the thread instead), 2: the next request (or the
 * client's close) is there already: serve on. */
int wn_keepalive_park(wn_ctx *ctx, apr_interval_time_t timeout);
int wn_keepalive_park_reading(wn_ctx *ctx, apr_interval_time_t timeout);
int wn_keepalive_woken(wn_ctx *ctx);          /* 0: resume, -1: close */
void wn_keepalive_expire(apr_time_t now);     /* KeepAliveTimeout */
void wn_keepalive_close_all(void);            /* stopping: end every wait */
int wn_keepalive_count(void);
int wn_keepalive_reading_count(void);        /* ASYNC_WAITIO waits */

#ifdef _MSC_VER
#define WN_THREAD_LOCAL __declspec(thread)
#else
#define WN_THREAD_LOCAL __thread
#endif

/* ---- counts (wn_tally.c; shown by wn_status.c) ---- */
typedef struct wn_counters {
    volatile LONG64 accepted;
    volatile LONG64 sockets_created;
    volatile LONG64 sockets_recycled;
    volatile LONG64 recycle_failed;
    volatile LONG64 lingered;         /* closes that waited for the EOF */
    volatile LONG64 linger_timeouts;  /* ... and were cut by the limit */
    volatile LONG64 accept_errors;
    volatile LONG workers_busy;
    volatile LONG workers_idle;
    volatile LONG connections;        /* open, parked ones included */
} wn_counters;
extern wn_counters wn_stats;
/* MaxConnectionsPerChild: `event` (NULL: none) is set once when that many
 * connections have ended. */
void wn_tally_retire_by(HANDLE event);
void wn_tally_connection_ended(void);        /* open count down, ended up */
long wn_tally_connections_ended(void);
void wn_status_register(void);

#ifdef __GNUC__
#define WN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define WN_PRINTF(f, a)
#endif
/* Logs the first time only (mpmng_log_once: an apr_uint32_t flag goes
 * 0 -> 1 atomically), at the caller's file and line: runtime faults must
 * not flood the error log once per request. */
#define wn_log_once(flag, level, rv, ...)                                  \
    mpmng_log_once((flag), APLOG_MARK, (level), (rv), ap_server_conf,     \
                   __VA_ARGS__)

#endif
