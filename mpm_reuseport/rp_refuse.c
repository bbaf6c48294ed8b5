/* A graceful stop that closes the listening sockets for good refuses new
 * connections first (rp_refuse.h).
 *
 * The children take what the kernel queued before they close their copies
 * of the sockets, but the kernel goes on completing handshakes until the
 * very last copy closes, and that close resets whatever arrived after the
 * last accept (inet_csk_listen_stop: 12-64 resets in 4 of 80 stops under
 * load here).  So the parent, before it tells the children to stop,
 * attaches to each address's SO_REUSEPORT group a program that drops every
 * new connection (BPF_PROG_TYPE_SK_REUSEPORT returning SK_DROP: the kernel
 * answers the SYN with a reset, the client sees "connection refused", as
 * after the close), and says so in a shared flag.  A child that sees the
 * flag takes what is queued, then waits for the handshakes already under
 * way (their SYN arrived before the program; an RTT, or a deferred
 * accept's request data) and takes those, then closes.
 *
 * Only where nobody else keeps the sockets: not when a binary upgrade's
 * new server shares them, nor systemd's file descriptor store (the next
 * start takes them with their queues); a graceful restart never closes
 * them.  Needs Linux 4.19 and CAP_NET_ADMIN or CAP_BPF (the parent runs as
 * root); otherwise the stop is as before, and that is logged once.
 * Handshakes finished by SYN cookies after the program is attached (a SYN
 * flood) are refused too. */
#include "rp.h"
#include "rp_refuse.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/bpf.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <linux/version.h>
#include <sys/syscall.h>
/* The headers know SK_REUSEPORT programs (an enum: no macro to test). */
#if defined(__NR_bpf) && LINUX_VERSION_CODE >= KERNEL_VERSION(4, 19, 0)
#define RP_HAVE_REFUSE 1
#endif
#endif
#ifndef SO_ATTACH_REUSEPORT_EBPF
#define SO_ATTACH_REUSEPORT_EBPF 52
#endif

#define RP_TCP_SYN_RECV 3       /* the kernel's TCP_SYN_RECV state */

/* Shared with every child the parent forks: created once per process. */
static volatile int *refusing;

void rp_refuse_setup(void)
{
    void *m;

    if (refusing) {
        return;
    }
    m = mmap(NULL, sizeof(*refusing), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
        refusing = m;
        *refusing = 0;
    }
}

int rp_refuse_in_effect(void)
{
    return refusing && *refusing;
}

#ifdef RP_HAVE_REFUSE
/* "return SK_DROP": an SK_REUSEPORT program of two instructions. */
static int load_drop_program(void)
{
    struct bpf_insn code[2];
    union bpf_attr attr;

    memset(code, 0, sizeof(code));
    code[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
    code[0].dst_reg = BPF_REG_0;
    code[0].imm = SK_DROP;
    code[1].code = BPF_JMP | BPF_EXIT;
    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_SK_REUSEPORT;
    attr.insns = (apr_uint64_t)(apr_uintptr_t)code;
    attr.insn_cnt = 2;
    attr.license = (apr_uint64_t)(apr_uintptr_t)"GPL";
    return (int)syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}
#endif

void rp_refuse_new_connections(void)
{
    static apr_uint32_t logged;
    apr_status_t err = APR_ENOTIMPL;
#ifdef RP_HAVE_REFUSE
    ap_listen_rec *lr;
    int prog = refusing ? load_drop_program() : -1;

    err = prog < 0 ? (refusing ? errno : APR_ENOMEM) : 0;
    /* One program per group: core's record (bucket 0) stands for it. */
    for (lr = ap_listeners; lr && !err; lr = lr->next) {
        int fd;
        apr_os_sock_get(&fd, lr->sd);
        if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &prog,
                       sizeof(prog)) < 0) {
            err = errno;
        }
    }
    if (prog >= 0) {
        close(prog);            /* the groups keep it */
    }
    if (!err) {
        *refusing = 1;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, ap_server_conf, RP_LOG_TAG
                     "new connections are refused from now on; the children "
                     "take those the kernel accepted");
        return;
    }
#endif
    mpmng_log_once(&logged, APLOG_MARK, APLOG_NOTICE, err, ap_server_conf,
                   RP_LOG_TAG "cannot refuse new connections before the "
                   "listening sockets close (an SK_REUSEPORT program: Linux "
                   "4.19+, CAP_NET_ADMIN or CAP_BPF, ReusePort on): a "
                   "connection the kernel completes between the children's "
                   "last accept and their close is reset at this stop");
}

#ifdef RP_HAVE_REFUSE
typedef struct {
    int family;
    unsigned short port;        /* network order */
} rp_local;

static int local_of(int fd, rp_local *l)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        return -1;
    }
    l->family = ss.ss_family;
    if (ss.ss_family == AF_INET) {
        l->port = ((struct sockaddr_in *)&ss)->sin_port;
    }
    else if (ss.ss_family == AF_INET6) {
        l->port = ((struct sockaddr_in6 *)&ss)->sin6_port;
    }
    else {
        return -1;
    }
    return 0;
}

/* Count one netlink dump's SYN_RECV sockets on the ports of `locals`. */
static int count_reply(int nl, const rp_local *locals, int n, int family)
{
    char buf[16384];
    int count = 0;

    for (;;) {
        struct nlmsghdr *h;
        ssize_t len = recv(nl, buf, sizeof(buf), 0);

        if (len <= 0) {
            return -1;
        }
        for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
             h = NLMSG_NEXT(h, len)) {
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            int i;

            if (h->nlmsg_type == NLMSG_DONE) {
                return count;
            }
            if (h->nlmsg_type == NLMSG_ERROR) {
                return -1;
            }
            for (i = 0; i < n; i++) {
                if (locals[i].family == family
                    && locals[i].port == m->id.idiag_sport) {
                    count++;
                    break;
                }
            }
        }
    }
}

static int syn_recv_on(const rp_local *locals, int n, int family)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } q;
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    int count;

    if (nl < 0) {
        return -1;
    }
    memset(&q, 0, sizeof(q));
    q.nlh.nlmsg_len = sizeof(q);
    q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    q.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    q.req.sdiag_family = (unsigned char)family;
    q.req.sdiag_protocol = IPPROTO_TCP;
    q.req.idiag_states = 1U << RP_TCP_SYN_RECV;
    count = send(nl, &q, sizeof(q), 0) == (ssize_t)sizeof(q)
            ? count_reply(nl, locals, n, family) : -1;
    close(nl);
    return count;
}
#endif

int rp_refuse_handshakes_pending(const int *fds, int n)
{
#ifdef RP_HAVE_REFUSE
    rp_local locals[64];
    int i, k = 0, v4 = 0, v6 = 0, total = 0, c;

    if (n > (int)(sizeof(locals) / sizeof(locals[0]))) {
        return -1;              /* that many Listen addresses: unknown */
    }
    for (i = 0; i < n; i++) {
        if (local_of(fds[i], &locals[k]) == 0) {
            v4 |= locals[k].family == AF_INET;
            v6 |= locals[k].family == AF_INET6;
            k++;
        }
    }
    if (v4) {
        if ((c = syn_recv_on(locals, k, AF_INET)) < 0) {
            return -1;
        }
        total += c;
    }
    if (v6) {
        if ((c = syn_recv_on(locals, k, AF_INET6)) < 0) {
            return -1;
        }
        total += c;
    }
    return total;
#else
    (void)fds;
    (void)n;
    return -1;
#endif
}
