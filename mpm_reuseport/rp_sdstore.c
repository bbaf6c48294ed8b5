/* systemd's file descriptor store (rp_sdstore.h).  The messages go
 * through rp_sdnotify.c; the passing back is LISTEN_PID, LISTEN_FDS (from
 * fd 3 on) and LISTEN_FDNAMES (colon-separated). */
#include "rp.h"
#include "rp_inherit.h"
#include "rp_sdnotify.h"
#include "rp_sdstore.h"

#include "apr_strings.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SD_FDNAME "mpmng-listen"
#define SD_LISTEN_FDS_START 3
#define SD_SOURCE "systemd's file descriptor store (systemctl restart)"

static int warned;
static int kept;        /* the store holds this generation's sockets */

static int asked(void)
{
    const char *v = getenv("MPMNG_SYSTEMD_FDSTORE");

    return v && !strcmp(v, "1") && getenv("NOTIFY_SOCKET");
}

static int passed_to_us(void)
{
    const char *pid = getenv("LISTEN_PID");
    long v = pid ? atol(pid) : 0;

    /* apachectl runs httpd as its child: systemd names the script. */
    return v > 0 && (v == (long)getpid() || v == (long)getppid());
}

void rp_sdstore_pre_config(apr_pool_t *process_pool)
{
    const char *nfds = getenv("LISTEN_FDS"), *names = getenv("LISTEN_FDNAMES");
    char *copy, *name, *last;
    int n, i;

    if (nfds && names && passed_to_us() && (n = atoi(nfds)) > 0) {
        copy = apr_pstrdup(process_pool, names);
        for (i = 0, name = apr_strtok(copy, ":", &last); i < n;
             i++, name = name ? apr_strtok(NULL, ":", &last) : NULL) {
            int fd = SD_LISTEN_FDS_START + i;

            if (name && !strcmp(name, SD_FDNAME)) {
                rp_inherit_give(process_pool, fd, SD_SOURCE, 0);
            }
            else {
                (void)fcntl(fd, F_SETFD, FD_CLOEXEC);   /* not ours: not for CGI */
            }
        }
    }
    /* Not for CGI scripts, nor a later binary upgrade's new server. */
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
}

void rp_sdstore_keep(const apr_array_header_t *fds)
{
    const int *fd = (const int *)fds->elts;
    int rv, i;

    if (!asked()) {
        return;
    }
    /* The previous generation's set goes first: a Listen that left the
     * configuration is not kept; systemd keeps one copy of a socket sent
     * again. */
    rv = rp_sdnotify_send("FDSTOREREMOVE=1\nFDNAME=" SD_FDNAME, NULL, 0);
    for (i = 0; !rv && i < fds->nelts; i += RP_SDNOTIFY_MAX_FDS) {
        int n = fds->nelts - i < RP_SDNOTIFY_MAX_FDS ? fds->nelts - i : RP_SDNOTIFY_MAX_FDS;

        rv = rp_sdnotify_send("FDSTORE=1\nFDNAME=" SD_FDNAME, fd + i, n);
    }
    if (rv && !warned) {
        warned = 1;
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, ap_server_conf, RP_LOG_TAG
                     "cannot hand the listening sockets to systemd (NOTIFY_SOCKET "
                     "%s): systemctl restart will refuse connections while the "
                     "server restarts; check NotifyAccess= in the unit",
                     getenv("NOTIFY_SOCKET"));
    }
    kept = !rv;
    if (!rv) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ap_server_conf, RP_LOG_TAG
                     "%d listening socket(s) kept in systemd's file descriptor store",
                     fds->nelts);
    }
}

int rp_sdstore_keeps_copies(void)
{
    return kept;
}
