/* systemd's notification socket (rp_sdnotify.h). */
#include "rp.h"
#include "rp_sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int main_pid_warned;

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

static int send_on(int sock, const struct sockaddr_un *sun, socklen_t len,
                   const char *text, const int *fds, int nfds)
{
    union {                     /* aligned as a cmsghdr must be */
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * RP_SDNOTIFY_MAX_FDS)];
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

int rp_sdnotify_send(const char *text, const int *fds, int nfds)
{
    struct sockaddr_un sun;
    socklen_t len;
    int sock, rv;

    if (nfds < 0 || nfds > RP_SDNOTIFY_MAX_FDS || notify_address(&sun, &len) < 0) {
        return EINVAL;
    }
    /* A socket per message: a few messages per generation at most. */
    if ((sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
        return errno;
    }
    rv = send_on(sock, &sun, len, text, fds, nfds);
    close(sock);
    return rv;
}

void rp_sdnotify_main_pid(void)
{
    char text[64];
    int rv;

    if (!getenv("NOTIFY_SOCKET")) {
        return;                 /* not run by systemd */
    }
    snprintf(text, sizeof(text), "MAINPID=%ld", (long)getpid());
    rv = rp_sdnotify_send(text, NULL, 0);
    if (rv && !main_pid_warned) {
        main_pid_warned = 1;
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, ap_server_conf, RP_LOG_TAG
                     "binary upgrade: cannot tell systemd the new main process "
                     "(NOTIFY_SOCKET %s); it follows the PidFile when the old "
                     "one exits: wait for that before the next upgrade",
                     getenv("NOTIFY_SOCKET"));
    }
    else if (!rv) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ap_server_conf, RP_LOG_TAG
                     "binary upgrade: told systemd this is the main process now");
    }
}
