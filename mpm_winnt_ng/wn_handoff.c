/* Parent to child hand-off over the child's stdin pipe.
 *
 * The parent starts httpd.exe again with AP_PARENT_PID set and writes:
 *   1. a header: magic, generation, scoreboard slot and thread limit, and
 *      the handles the child needs (duplicated into it): the scoreboard
 *      mapping and four events (started, accepting, retire, exit);
 *   2. after the child has set `started`: each listener as a
 *      WSAPROTOCOL_INFOW from WSADuplicateSocketW, tagged with its address
 *      so the child matches it to its own Listen lines (not by order: the
 *      configuration may have been edited between the two reads).
 * The child reads 1 in rewrite_args (hooks may query the generation
 * early) and 2 in child_init. */
#include "wn.h"

#include "http_main.h"
#include "mpm_common.h"
#include "apr_strings.h"
#include "apr_shm.h"
#include "apr_portable.h"

/* scoreboard.c exports this on Windows for the MPM (no header has it). */
extern apr_shm_t *ap_scoreboard_shm;

#define WN_HANDOFF_MAGIC 0x574e4e47u   /* "WNNG" */

typedef struct wire_header {
    unsigned int magic;
    unsigned int listeners;
    wn_handoff h;
} wire_header;

typedef struct wire_listener {
    char addr[96];
    WSAPROTOCOL_INFOW info;
} wire_listener;

wn_handoff wn_me;
int wn_slot;                  /* wn_me.slot in a child, 0 in one process */
static HANDLE parent_pipe = INVALID_HANDLE_VALUE;
static unsigned int listener_count;

static int read_all(HANDLE h, void *buf, DWORD len)
{
    char *p = buf;
    DWORD got;

    while (len) {
        if (!ReadFile(h, p, len, &got, NULL) || got == 0)
            return -1;
        p += got;
        len -= got;
    }
    return 0;
}

static const char *listener_name(apr_pool_t *p, ap_listen_rec *lr)
{
    return apr_psprintf(p, "%pI", lr->bind_addr);
}

/* ---------------- child side ---------------- */

/* Keeps the pipe for ourselves and gives stdin to NUL, so CGI children
 * never inherit the parent's pipe. */
static void take_stdin_pipe(void)
{
    HANDLE self = GetCurrentProcess();
    HANDLE in = GetStdHandle(STD_INPUT_HANDLE);
    HANDLE nul;

    if (!DuplicateHandle(self, in, self, &parent_pipe, 0, FALSE,
                         DUPLICATE_SAME_ACCESS))
        parent_pipe = in;
    else
        CloseHandle(in);
    nul = CreateFileA("NUL", GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE,
                      NULL, OPEN_EXISTING, 0, NULL);
    if (nul != INVALID_HANDLE_VALUE)
        SetStdHandle(STD_INPUT_HANDLE, nul);
}

int wn_handoff_read_header(void)
{
    wire_header w;

    take_stdin_pipe();
    if (read_all(parent_pipe, &w, sizeof w) != 0
        || w.magic != WN_HANDOFF_MAGIC) {
        fprintf(stderr, WN_TAG "child %lu: no hand-off from the parent "
                "(error %lu); exiting\n", (unsigned long)GetCurrentProcessId(),
                (unsigned long)GetLastError());
        return -1;
    }
    wn_me = w.h;
    listener_count = w.listeners;
    SetEvent(wn_me.started);
    return 0;
}

void wn_handoff_attach_scoreboard(server_rec *s)
{
    apr_os_shm_t os = wn_me.scoreboard;
    apr_status_t rv;
    void *base = NULL;

    /* ap_reopen_scoreboard works on the global, as the stock MPM uses it */
    rv = apr_os_shm_put(&ap_scoreboard_shm, &os, s->process->pool);
    if (rv == APR_SUCCESS)
        rv = ap_reopen_scoreboard(s->process->pool, &ap_scoreboard_shm, 1);
    if (rv != APR_SUCCESS || !ap_scoreboard_shm
        || !(base = apr_shm_baseaddr_get(ap_scoreboard_shm))) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, WN_TAG
                     "child: cannot map the parent's scoreboard; exiting");
        exit(APEXIT_CHILDINIT);
    }
    ap_init_scoreboard(base);
}

static ap_listen_rec *find_listener(apr_pool_t *p, const char *addr)
{
    ap_listen_rec *lr;

    for (lr = ap_listeners; lr; lr = lr->next)
        if (strcmp(listener_name(p, lr), addr) == 0)
            return lr;
    return NULL;
}

void wn_handoff_read_listeners(server_rec *s)
{
    apr_pool_t *p = s->process->pool;
    unsigned int i;

    for (i = 0; i < listener_count; i++) {
        wire_listener w;
        ap_listen_rec *lr;
        SOCKET sd;
        apr_os_sock_t old;

        if (read_all(parent_pipe, &w, sizeof w) != 0) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(), s, WN_TAG
                         "child: listener %u of %u did not arrive; exiting",
                         i + 1, listener_count);
            exit(APEXIT_CHILDINIT);
        }
        w.addr[sizeof w.addr - 1] = '\0';
        lr = find_listener(p, w.addr);
        if (!lr) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, WN_TAG "child: the "
                         "parent listens on %s but this configuration does "
                         "not; was the file edited during a restart? exiting",
                         w.addr);
            exit(APEXIT_CHILDINIT);
        }
        sd = WSASocketW(FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO,
                        FROM_PROTOCOL_INFO, &w.info, 0, WSA_FLAG_OVERLAPPED);
        if (sd == INVALID_SOCKET) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_netos_error(), s,
                         WN_TAG "child: cannot open the listener for %s "
                         "from the parent; exiting", w.addr);
            exit(APEXIT_CHILDINIT);
        }
        wn_no_inherit(sd);
        /* Listen made a placeholder socket while reading the config. */
        if (lr->sd && apr_os_sock_get(&old, lr->sd) == APR_SUCCESS
            && old != INVALID_SOCKET)
            closesocket(old);
        apr_os_sock_put(&lr->sd, &sd, p);
        lr->active = 1;
    }
    CloseHandle(parent_pipe);
    parent_pipe = INVALID_HANDLE_VALUE;
}

/* ---------------- parent side ---------------- */

static int dup_to(HANDLE child, HANDLE h, DWORD access, HANDLE *out)
{
    return DuplicateHandle(GetCurrentProcess(), h, child, out, access,
                           FALSE, 0) ? 0 : -1;
}

static HANDLE new_event(void)
{
    return CreateEventA(NULL, TRUE, FALSE, NULL);
}

static int write_listeners(apr_pool_t *p, apr_file_t *pipe, DWORD pid)
{
    ap_listen_rec *lr;

    for (lr = ap_listeners; lr; lr = lr->next) {
        wire_listener w;
        apr_os_sock_t sd;

        memset(&w, 0, sizeof w);
        apr_cpystrn(w.addr, listener_name(p, lr), sizeof w.addr);
        apr_os_sock_get(&sd, lr->sd);
        if (WSADuplicateSocketW(sd, pid, &w.info) == SOCKET_ERROR) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_netos_error(),
                         ap_server_conf, WN_TAG "WSADuplicateSocket of %s "
                         "for child %lu failed", w.addr, (unsigned long)pid);
            return -1;
        }
        if (apr_file_write_full(pipe, &w, sizeof w, NULL) != APR_SUCCESS)
            return -1;
    }
    return 0;
}

static char **child_argv(apr_pool_t *p)
{
    static char **argv;          /* the same for the parent's lifetime */
    const char *self;
    int n = ap_server_conf->process->argc;

    if (argv)
        return argv;
    if (ap_os_proc_filepath((char **)&self, p) != APR_SUCCESS)
        self = ap_server_conf->process->argv[0];
    argv = malloc((n + 1) * sizeof *argv);
    argv[0] = strdup(self);
    memcpy(argv + 1, ap_server_conf->process->argv + 1,
           (n - 1) * sizeof *argv);
    argv[n] = NULL;
    return argv;
}

static const char **child_env(apr_pool_t *p)
{
    int n = 0, i;
    const char **env;

    while (_environ[n])
        n++;
    env = apr_palloc(p, (n + 2) * sizeof *env);
    for (i = 0; i < n; i++)
        env[i] = _environ[i];
    env[n] = apr_psprintf(p, "AP_PARENT_PID=%lu",
                          (unsigned long)GetCurrentProcessId());
    env[n + 1] = NULL;
    return env;
}

static void close_kid_events(wn_kid *kid, HANDLE started)
{
    if (started)
        CloseHandle(started);
    if (kid->exit_event) CloseHandle(kid->exit_event);
    if (kid->accepting) CloseHandle(kid->accepting);
    if (kid->retire) CloseHandle(kid->retire);
    kid->exit_event = kid->accepting = kid->retire = NULL;
}

int wn_handoff_spawn(apr_pool_t *pool, int slot, wn_kid *kid)
{
    apr_pool_t *p;
    apr_procattr_t *attr;
    apr_proc_t proc;
    wire_header w;
    HANDLE started, wait[2];
    apr_os_shm_t sb;
    char *cwd;
    apr_status_t rv;
    DWORD r;
    ap_listen_rec *lr;

    memset(kid, 0, sizeof *kid);
    apr_pool_create(&p, pool);
    started = new_event();
    kid->exit_event = new_event();
    kid->accepting = new_event();
    kid->retire = new_event();
    if (!started || !kid->exit_event || !kid->accepting || !kid->retire) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(),
                     ap_server_conf, WN_TAG "cannot create child events");
        goto fail;
    }

    apr_procattr_create(&attr, p);
    apr_procattr_cmdtype_set(attr, APR_PROGRAM);
    apr_procattr_detach_set(attr, 1);
    if (apr_filepath_get(&cwd, 0, p) == APR_SUCCESS)
        apr_procattr_dir_set(attr, cwd);
    apr_procattr_io_set(attr, APR_FULL_BLOCK, APR_NO_PIPE, APR_NO_PIPE);
    rv = apr_proc_create(&proc, child_argv(pool)[0],
                         (const char * const *)child_argv(pool),
                         child_env(p), attr, p);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, ap_server_conf,
                     WN_TAG "cannot start a child process");
        goto fail;
    }
    kid->proc = proc.hproc;
    kid->pid = proc.pid;
    kid->slot = slot;
    kid->generation = wn_generation;

    memset(&w, 0, sizeof w);
    w.magic = WN_HANDOFF_MAGIC;
    for (lr = ap_listeners; lr; lr = lr->next)
        w.listeners++;
    w.h.generation = wn_generation;
    w.h.slot = slot;
    w.h.thread_limit = wn_run.thread_limit;
    w.h.server_limit = wn_run.process_slots;
    apr_os_shm_get(&sb, ap_scoreboard_shm);
    if (dup_to(kid->proc, started, EVENT_MODIFY_STATE, &w.h.started)
        || dup_to(kid->proc, kid->accepting, EVENT_MODIFY_STATE, &w.h.accepting)
        || dup_to(kid->proc, kid->retire, EVENT_MODIFY_STATE, &w.h.retire)
        || dup_to(kid->proc, kid->exit_event, SYNCHRONIZE, &w.h.exit_event)
        || dup_to(kid->proc, sb, FILE_MAP_READ | FILE_MAP_WRITE,
                  &w.h.scoreboard)) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, apr_get_os_error(),
                     ap_server_conf, WN_TAG "cannot pass handles to child %lu",
                     (unsigned long)kid->pid);
        goto kill;
    }
    if (apr_file_write_full(proc.in, &w, sizeof w, NULL) != APR_SUCCESS)
        goto kill;

    /* Duplicate the listeners only once the child runs (a socket
     * duplicated for a process that has not initialised Winsock can end
     * up inherited). */
    wait[0] = started;
    wait[1] = kid->proc;
    r = WaitForMultipleObjects(2, wait, FALSE, 120000);
    if (r != WAIT_OBJECT_0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, ap_server_conf, WN_TAG
                     "child %lu %s before reading its hand-off",
                     (unsigned long)kid->pid,
                     r == WAIT_OBJECT_0 + 1 ? "exited" : "hung");
        goto kill;
    }
    if (write_listeners(p, proc.in, kid->pid) != 0)
        goto kill;
    apr_file_close(proc.in);
    CloseHandle(started);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, WN_TAG
                 "started child %lu (slot %d, generation %d)",
                 (unsigned long)kid->pid, slot, (int)wn_generation);
    apr_pool_destroy(p);
    return 0;

kill:
    TerminateProcess(kid->proc, APEXIT_CHILDINIT);
    CloseHandle(kid->proc);
    kid->proc = NULL;
fail:
    close_kid_events(kid, started);
    apr_pool_destroy(p);
    return -1;
}
