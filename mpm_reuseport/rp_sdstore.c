/* systemd's file descriptor store (rp_sdstore.h).  The notification
 * protocol is a datagram per message on the AF_UNIX socket named by
 * NOTIFY_SOCKET ("@" for the abstract namespace), descriptors attached as
 * SCM_RIGHTS; the passing back is LISTEN_PID, LISTEN_FDS (from fd 3 on)
 * and LISTEN_FDNAMES (colon-separated). */
#include "rp.h"
#include "rp_sdstore.h"
#include "rp_upgrade.h"

#include "apr_strings.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SD_FDNAME "mpmng-listen"
#define SD_LISTEN_FDS_START 3
#define SD_FDS_PER_MESSAGE 200      /* the kernel takes at most 253 */
#define SD_SOURCE "systemd's file descriptor store (systemctl restart)"

static int warned;

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
                rp_upgrade_inherit_fd(process_pool, fd, SD_SOURCE);
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

static int notify_address(struct sockaddr_un *sun, socklen_t *len)
{
    const char *path = getenv("NOTIFY_SOCKET");
    size_t n = path ? strlen(path) : 0;

    if (n < 2 || n >= sizeof(sun->sun_path) || (path[0] != '/' && path[0] != '@')) {
        return -1;
    }
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    memcpy(sun->sun_path, path, n);
    if (path[0] == '@') {
        sun->sun_path[0] = '\0';
    }
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    return 0;
}

static int send_message(int sock, const struct sockaddr_un *sun, socklen_t len,
                        const char *text, const int *fds, int nfds)
{
    union {                     /* aligned as a cmsghdr must be */
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * SD_FDS_PER_MESSAGE)];
    } control;
    struct iovec iov = { (void *)text, strlen(text) };
    struct msghdr msg;
    ssize_t sent;

    memset(&msg, 0, sizeof(msg));
    msg.msg_name = (void *)sun;
    msg.msg_namelen = len;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (nfds > 0) {
        struct cmsghdr *c;

        memset(&control, 0, sizeof(control));
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    do {
        sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return sent < 0 ? errno : 0;
}

void rp_sdstore_keep(const apr_array_header_t *fds)
{
    const int *fd = (const int *)fds->elts;
    struct sockaddr_un sun;
    socklen_t len;
    int sock, rv, i;

    if (!asked()) {
        return;
    }
    if (notify_address(&sun, &len) < 0) {
        rv = EINVAL;
    }
    else if ((sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
        rv = errno;
    }
    else {
        /* The previous generation's set goes first: a Listen that left
         * the configuration is not kept; systemd keeps one copy of a
         * socket sent again. */
        rv = send_message(sock, &sun, len, "FDSTOREREMOVE=1\nFDNAME=" SD_FDNAME, NULL, 0);
        for (i = 0; !rv && i < fds->nelts; i += SD_FDS_PER_MESSAGE) {
            int n = fds->nelts - i < SD_FDS_PER_MESSAGE ? fds->nelts - i : SD_FDS_PER_MESSAGE;

            rv = send_message(sock, &sun, len, "FDSTORE=1\nFDNAME=" SD_FDNAME, fd + i, n);
        }
        close(sock);
    }
    if (rv && !warned) {
        warned = 1;
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, ap_server_conf, RP_LOG_TAG
                     "cannot hand the listening sockets to systemd (NOTIFY_SOCKET "
                     "%s): systemctl restart will refuse connections while the "
                     "server restarts; check NotifyAccess= in the unit",
                     getenv("NOTIFY_SOCKET"));
    }
    else if (!rv) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ap_server_conf, RP_LOG_TAG
                     "%d listening socket(s) kept in systemd's file descriptor store",
                     fds->nelts);
    }
}
