/* Listening sockets handed to this start (rp_inherit.h).  They are matched
 * by the address they are bound to (getsockname), so a Listen that left
 * the configuration is not taken and one that came is bound anew. */
#include "rp.h"
#include "rp_inherit.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RP_INHERIT_MAX_FDS 1024

static struct {
    int *fds;                   /* given, -1 once taken or closed */
    int nfds;
    const char *source;         /* the last giver's name */
    int upgrade;                /* given by a binary upgrade's old server */
    int taken, closed;          /* counted at start-up, logged once logs are open */
} in;

void rp_inherit_give(apr_pool_t *process_pool, int fd, const char *source,
                     int upgrade)
{
    if (!in.fds) {
        in.fds = apr_pcalloc(process_pool, RP_INHERIT_MAX_FDS * sizeof(int));
    }
    if (fd < 0 || in.nfds >= RP_INHERIT_MAX_FDS) {
        return;
    }
    /* Not into CGI scripts or piped loggers until taken. */
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    in.fds[in.nfds++] = fd;
    in.source = source;
    in.upgrade = upgrade;
}

static int same_address(const struct sockaddr_storage *ss, const apr_sockaddr_t *sa)
{
    if (ss->ss_family != sa->family) {
        return 0;
    }
    if (sa->family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        return a->sin_port == sa->sa.sin.sin_port
               && a->sin_addr.s_addr == sa->sa.sin.sin_addr.s_addr;
    }
#if APR_HAVE_IPV6
    if (sa->family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        return a->sin6_port == sa->sa.sin6.sin6_port
               && !memcmp(&a->sin6_addr, &sa->sa.sin6.sin6_addr, sizeof(a->sin6_addr));
    }
#endif
    return 0;
}

static int is_listening_at(int fd, const apr_sockaddr_t *sa,
                           struct sockaddr_storage *ss)
{
    socklen_t len = sizeof(*ss);
    int on = 0;
    socklen_t olen = sizeof(on);

    return getsockname(fd, (struct sockaddr *)ss, &len) == 0
           && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) == 0 && on
           && same_address(ss, sa);
}

apr_socket_t *rp_inherit_take(const apr_sockaddr_t *sa, apr_pool_t *p)
{
    int i;

    for (i = 0; i < in.nfds; i++) {
        struct sockaddr_storage ss;
        apr_os_sock_info_t info;
        apr_socket_t *sd = NULL;
        int fd = in.fds[i];

        if (fd < 0 || !is_listening_at(fd, sa, &ss)) {
            continue;
        }
        memset(&info, 0, sizeof(info));
        info.os_sock = &fd;
        info.local = (struct sockaddr *)&ss;
        info.family = ss.ss_family;
        info.type = SOCK_STREAM;
        info.protocol = APR_PROTO_TCP;
        if (apr_os_sock_make(&sd, &info, p) != APR_SUCCESS) {
            continue;
        }
        in.fds[i] = -1;
        return sd;
    }
    return NULL;
}

void rp_inherit_close_rest(void)
{
    int i, closed = 0;

    for (i = 0; i < in.nfds; i++) {
        if (in.fds[i] >= 0) {
            close(in.fds[i]);
            in.fds[i] = -1;
            closed++;
        }
    }
    in.taken = in.nfds - closed;
    in.closed = closed;
    in.nfds = 0;
}

void rp_inherit_log(void)
{
    const char *why = in.closed ? "; the others' addresses left the configuration" : "";

    if (!in.taken && !in.closed) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ap_server_conf, RP_LOG_TAG
                 "%stook over %d listening socket(s) from %s%s",
                 in.upgrade ? "binary upgrade: " : "", in.taken,
                 in.source ? in.source : "a previous server", why);
    in.taken = in.closed = 0;
}
