/* Binary upgrade (rp_upgrade.h).
 *
 * The hand-over travels through the environment of the new process:
 *   MPMNG_UPGRADE_LISTEN_FDS  listener socket numbers, comma-separated
 *   MPMNG_UPGRADE_READY_FD    write end of the pipe the old parent reads
 *   MPMNG_UPGRADE_FROM        the old parent's pid (for the logs)
 * The sockets go to rp_inherit.c, which rp_listen.c takes them from by
 * address.  The pipe also tells failure: once every copy of its write
 * end is gone without the byte (the new server ended), the old parent
 * reads end-of-file. */
#include "rp.h"
#include "rp_forkguard.h"
#include "rp_inherit.h"
#include "rp_sdnotify.h"
#include "rp_upgrade.h"

#include "apr_signal.h"
#include "apr_strings.h"
#include "mpm_common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENV_FDS "MPMNG_UPGRADE_LISTEN_FDS"
#define ENV_READY "MPMNG_UPGRADE_READY_FD"
#define ENV_FROM "MPMNG_UPGRADE_FROM"
#define RP_UPGRADE_SLOW apr_time_from_sec(120)

extern char **environ;

static struct {
    /* both sides */
    char binary[4096];          /* the path this server was started from */
    volatile sig_atomic_t asked;
    /* old side */
    pid_t started;              /* the process exec'ed (it may detach) */
    int ready_rd;               /* -1: no upgrade under way */
    apr_time_t since;
    int slow_logged;
    int ended;                  /* pipe closed; logged at the reap */
    int taken_over;
    char pidfile[4096];         /* PidFile; ours is at PidFile.oldbin
                                   while the new server starts (it
                                   refuses to start beside a running one) */
    /* new side */
    int ready_wr;               /* -1: not started by an upgrade */
    long from;
} up = { .ready_rd = -1, .ready_wr = -1 };

/* ---- new side: what the old server handed over ---------------------------- */

static int parse_fd(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);

    return (end != s && v >= 0 && v < 65536) ? (int)v : -1;
}

static void take_listen_fds(apr_pool_t *p, const char *list, const char *from)
{
    char *copy = apr_pstrdup(p, list), *tok, *last;
    const char *source = apr_psprintf(p, "pid %s", from ? from : "?");

    for (tok = apr_strtok(copy, ",", &last); tok; tok = apr_strtok(NULL, ",", &last)) {
        rp_inherit_give(p, parse_fd(tok), source, 1);
    }
}

void rp_upgrade_pre_config(apr_pool_t *process_pool)
{
    const char *fds = getenv(ENV_FDS), *ready = getenv(ENV_READY);
    const char *from = getenv(ENV_FROM);
    ssize_t n;

    if (!up.binary[0]
        && (n = readlink("/proc/self/exe", up.binary, sizeof(up.binary) - 1)) > 0) {
        up.binary[n] = '\0';
    }
    if (fds) {
        take_listen_fds(process_pool, fds, from);
    }
    if (ready && (up.ready_wr = parse_fd(ready)) >= 0) {
        (void)fcntl(up.ready_wr, F_SETFD, FD_CLOEXEC);
    }
    up.from = from ? atol(from) : 0;
    /* Not for CGI scripts, nor for this server's own upgrades. */
    unsetenv(ENV_FDS);
    unsetenv(ENV_READY);
    unsetenv(ENV_FROM);
}

/* New side: every bucket accepts; the old server may stop. */
static void tell_old_server(void)
{
    ssize_t n;

    /* Before the old server can exit: systemd then follows this one. */
    rp_sdnotify_main_pid();
    do {
        n = write(up.ready_wr, "R", 1);
    } while (n < 0 && errno == EINTR);
    close(up.ready_wr);
    up.ready_wr = -1;
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                 "binary upgrade: accepting in every bucket; the previous "
                 "server (pid %ld) finishes its requests and exits", up.from);
}

void rp_upgrade_close_in_child(void)
{
    if (up.ready_wr >= 0) {
        close(up.ready_wr);
        up.ready_wr = -1;
    }
}

/* ---- old side ------------------------------------------------------------- */

static void ask_for_upgrade(int sig)
{
    (void)sig;
    up.asked = 1;
}

void rp_upgrade_setup_signal(void)
{
    apr_signal(SIGUSR2, ask_for_upgrade);
}

/* Our arguments without `-k <command>`: the new server must not look for
 * a running one (this one) and refuse to start. */
static const char **new_argv(apr_pool_t *p)
{
    const process_rec *proc = ap_server_conf->process;
    const char **argv = apr_pcalloc(p, (proc->argc + 1) * sizeof(*argv));
    int i, n = 0;

    argv[n++] = up.binary;
    for (i = 1; i < proc->argc; i++) {
        if (!strcmp(proc->argv[i], "-k") && i + 1 < proc->argc) {
            i++;
            continue;
        }
        argv[n++] = proc->argv[i];
    }
    return argv;
}

static char **new_env(apr_pool_t *p, const apr_array_header_t *fds, int ready_wr)
{
    char *list = apr_pstrdup(p, "");
    int i, n = 0;
    char **env;

    for (i = 0; i < fds->nelts; i++) {
        list = apr_psprintf(p, "%s%s%d", list, i ? "," : "", APR_ARRAY_IDX(fds, i, int));
    }
    while (environ[n]) {
        n++;
    }
    env = apr_pcalloc(p, (n + 4) * sizeof(*env));
    memcpy(env, environ, n * sizeof(*env));
    env[n++] = apr_pstrcat(p, ENV_FDS "=", list, NULL);
    env[n++] = apr_psprintf(p, ENV_READY "=%d", ready_wr);
    env[n++] = apr_psprintf(p, ENV_FROM "=%ld", (long)getpid());
    return env;
}

/* In the forked process: only async-signal-safe calls until exec. */
static void exec_new_server(const char **argv, char **env,
                            const apr_array_header_t *fds, int ready_wr)
{
    sigset_t none;
    int i;

    for (i = 0; i < fds->nelts; i++) {
        (void)fcntl(APR_ARRAY_IDX(fds, i, int), F_SETFD, 0);
    }
    (void)fcntl(ready_wr, F_SETFD, 0);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(argv[0], (char *const *)argv, env);
    _exit(127);
}

static const char *oldbin(apr_pool_t *p)
{
    return apr_pstrcat(p, up.pidfile, ".oldbin", NULL);
}

/* Our PidFile moves aside for the new server, as nginx's does. */
static void pidfile_aside(apr_pool_t *p)
{
    const char *path = ap_pid_fname ? ap_runtime_dir_relative(p, ap_pid_fname) : NULL;

    up.pidfile[0] = '\0';
    if (path && strlen(path) < sizeof(up.pidfile) - 8) {
        strcpy(up.pidfile, path);
        if (rename(up.pidfile, oldbin(p)) != 0) {
            up.pidfile[0] = '\0';
        }
    }
}

/* The upgrade failed: our PidFile is the PidFile again. */
static void pidfile_back(void)
{
    apr_pool_t *p;

    if (up.pidfile[0]) {
        apr_pool_create(&p, ap_pglobal);
        (void)rename(oldbin(p), up.pidfile);
        apr_pool_destroy(p);
        up.pidfile[0] = '\0';
    }
}

void rp_upgrade_remove_oldbin(void)
{
    apr_pool_t *p;

    if (up.pidfile[0]) {
        apr_pool_create(&p, ap_pglobal);
        (void)unlink(oldbin(p));
        apr_pool_destroy(p);
    }
}

static void start_upgrade(apr_array_header_t *(*listen_fds)(apr_pool_t *))
{
    apr_pool_t *p;
    apr_array_header_t *fds;
    const char **argv;
    char **env;
    int pipefd[2];
    pid_t pid;

    if (up.ready_rd >= 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, RP_LOG_TAG
                     "binary upgrade: one is under way already (pid %ld); "
                     "signal again once it is done", (long)up.started);
        return;
    }
    if (!up.binary[0] || pipe2(pipefd, O_CLOEXEC) != 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, ap_server_conf, RP_LOG_TAG
                     "binary upgrade: cannot start one (no binary path or no "
                     "pipe); this server goes on serving");
        return;
    }
    apr_pool_create(&p, ap_pglobal);
    fds = listen_fds(p);
    argv = new_argv(p);
    env = new_env(p, fds, pipefd[1]);
    pidfile_aside(p);
    rp_forkguard_own_fork(1);    /* the new server keeps every socket */
    pid = fork();
    rp_forkguard_own_fork(0);
    if (pid == 0) {
        exec_new_server(argv, env, fds, pipefd[1]);
    }
    close(pipefd[1]);
    apr_pool_destroy(p);
    if (pid < 0) {
        close(pipefd[0]);
        pidfile_back();
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, ap_server_conf, RP_LOG_TAG
                     "binary upgrade: fork failed; this server goes on serving");
        return;
    }
    (void)fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    up.ready_rd = pipefd[0];
    up.started = pid;
    up.since = apr_time_now();
    up.slow_logged = 0;
    up.ended = 0;
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                 "binary upgrade: started %s (pid %ld) with %d listening "
                 "socket(s); this server serves until it accepts",
                 up.binary, (long)pid, fds->nelts);
}

static void end_waiting(void)
{
    close(up.ready_rd);
    up.ready_rd = -1;
}

static void failed(void)
{
    end_waiting();
    pidfile_back();
}

static void log_ended(void)
{
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, RP_LOG_TAG
                 "binary upgrade failed: the new server ended before it "
                 "accepted (see its error log); this server goes on serving");
}

/* 1: the new server accepts now. */
static int watch_new_server(void)
{
    char c;
    ssize_t n = read(up.ready_rd, &c, 1);

    if (n == 1) {
        end_waiting();
        up.taken_over = 1;
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                     "binary upgrade: the new server accepts in every bucket "
                     "after %" APR_TIME_T_FMT " ms; this one stops accepting, "
                     "finishes its requests and exits",
                     apr_time_as_msec(apr_time_now() - up.since));
        return 1;
    }
    if (n == 0) {
        failed();
        if (up.started) {
            up.ended = 1;       /* its exit status says more: at the reap */
        }
        else {
            log_ended();
        }
        return 0;
    }
    if (!up.slow_logged && apr_time_now() - up.since > RP_UPGRADE_SLOW) {
        up.slow_logged = 1;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ap_server_conf, RP_LOG_TAG
                     "binary upgrade: the new server has not accepted in "
                     "every bucket after %d s; this server goes on serving "
                     "meanwhile", (int)apr_time_sec(RP_UPGRADE_SLOW));
    }
    return 0;
}

int rp_upgrade_step(int (*accepting)(void),
                    apr_array_header_t *(*listen_fds)(apr_pool_t *))
{
    if (up.ready_wr >= 0 && accepting()) {
        tell_old_server();
    }
    if (up.asked) {
        up.asked = 0;
        start_upgrade(listen_fds);
    }
    return up.ready_rd >= 0 && watch_new_server();
}

int rp_upgrade_waiting(void)
{
    return up.ready_rd >= 0 || up.ready_wr >= 0;
}

int rp_upgrade_taken_over(void)
{
    return up.taken_over;
}

int rp_upgrade_reaped(pid_t pid, apr_exit_why_e why, int status)
{
    if (!up.started || pid != up.started) {
        return 0;
    }
    up.started = 0;
    if (why == APR_PROC_EXIT && status == 0) {
        if (up.ended) {         /* it had detached; the server it left died */
            log_ended();
        }
    }
    else {
        if (up.ready_rd >= 0) {
            failed();           /* the PidFile back before the line says so */
        }
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, ap_server_conf, RP_LOG_TAG
                     "binary upgrade failed: the new server %s %d before it "
                     "accepted (see its messages on the stderr of the process "
                     "that was signalled); this server goes on serving",
                     why == APR_PROC_EXIT ? "exited with status" : "was killed by signal",
                     status);
    }
    up.ended = 0;
    return 1;
}
