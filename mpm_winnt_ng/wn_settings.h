/* Directive values of mpm_winnt_ng and the limits the server runs with.
 * Pure logic (no Win32, httpd or APR calls): unit-tested on Linux in
 * test/unit/check_wn.c. */
#ifndef WN_SETTINGS_H
#define WN_SETTINGS_H

#define WN_UNSET (-1)

/* Same defaults and ceilings as stock mpm_winnt. */
#define WN_DEFAULT_THREADS_PER_CHILD 64
#define WN_DEFAULT_THREAD_LIMIT 1920
#define WN_MAX_THREAD_LIMIT 15000

/* AcceptExPending: AcceptEx calls kept posted on each listener. */
#define WN_DEFAULT_ACCEPTS 32
#define WN_MAX_ACCEPTS 4096

/* ChildProcesses: serving children accepting from the same listeners.
 * Each has a scoreboard process slot and one more for its successor or a
 * retiring predecessor finishing its connections, so the slots are twice
 * the count.  The parent waits on two handles per serving child and one
 * per retiring child plus two control events: with 16 that is 50, inside
 * WaitForMultipleObjects' 64. */
#define WN_DEFAULT_CHILDREN 1
#define WN_MAX_CHILDREN 16
#define WN_SLOTS_PER_CHILD 2

/* AcceptSocketReuse: how a connection's socket is made ready for the next
 * AcceptEx instead of being closed. */
typedef enum {
    WN_REUSE_AUTO = 0,        /* the first method that passes the check */
    WN_REUSE_TRANSMITFILE,    /* TransmitFile(TF_DISCONNECT|TF_REUSE_SOCKET) */
    WN_REUSE_DISCONNECTEX,    /* DisconnectEx(TF_REUSE_SOCKET) */
    WN_REUSE_OFF              /* close every socket (stock behaviour) */
} wn_reuse_mode;

/* WinNTNGTestHook: paths the test suite takes on purpose (never needed
 * in production; documented as test-only). */
#define WN_HOOK_EMULATE_ACCEPT 1        /* the shared-listener accept path */
#define WN_HOOK_KEEPALIVE_IN_THREAD 2   /* keep-alive waits in a worker */
#define WN_HOOK_CRASH_AT_EXIT 4         /* a child faults as it exits */

typedef struct wn_settings {
    int threads_per_child;    /* WN_UNSET or the directive's value */
    int thread_limit;
    int accepts;              /* AcceptExPending */
    int reuse;                /* wn_reuse_mode, WN_UNSET: auto */
    int children;             /* ChildProcesses */
    int test_hooks;           /* WN_HOOK_* bits */
} wn_settings;

typedef struct wn_limits {
    int threads_per_child;
    int thread_limit;         /* fixed at first start-up, as stock */
    int accepts;
    wn_reuse_mode reuse;
    int children;             /* serving child processes */
    int process_slots;        /* scoreboard process slots, fixed at first
                                 start-up */
} wn_limits;

/* What the scoreboard was sized with at first start-up (zeros before). */
typedef struct wn_fixed {
    int thread_limit;
    int process_slots;
} wn_fixed;

/* Set in *changed by wn_resolve: a restart asked for more than the
 * scoreboard holds; the kept value is in the limits. */
#define WN_CHANGED_THREAD_LIMIT 1
#define WN_CHANGED_CHILDREN 2

/* "auto", "transmitfile", "disconnectex", "off" (any case).  Returns 0 or
 * -1 for anything else. */
int wn_parse_reuse(const char *arg, wn_reuse_mode *out);
const char *wn_reuse_name(wn_reuse_mode mode);

/* "emulate-accept", "keepalive-in-thread" or "crash-at-exit" (any case):
 * the WN_HOOK_* bit, or 0 for anything else. */
int wn_parse_test_hook(const char *arg);

/* Resolves settings into limits.  first holds what the scoreboard was
 * sized with (zeros at first start-up): ThreadLimit cannot change on a
 * restart, and ChildProcesses cannot rise above half the process slots.
 * Returns NULL, or a message naming the directive that is wrong (the
 * caller fails the start-up with it).  *changed gets WN_CHANGED_* bits for
 * values a restart could not take (kept, with a warning by the caller). */
const char *wn_resolve(const wn_settings *s, const wn_fixed *first,
                       wn_limits *out, int *changed);

#endif
