/* Which bucket socket the kernel hands a new connection to.
 *
 * The sockets of one address form a SO_REUSEPORT group, in the order they
 * were bound: bucket 0 (core's record), then buckets 1..n-1.  Without a
 * program the kernel spreads connections over every socket in the group,
 * including those of buckets a graceful restart just removed, which are
 * still open in the previous generation's children until they leave; a
 * connection queued there when they close would be reset.  So each
 * generation attaches a classic BPF program that picks among its own n
 * buckets only (by the connection's flow hash), and removed buckets' queues
 * just drain.  Removed sockets are always the last ones of the group, so the
 * first n positions are the current buckets. */
#include "rp.h"

#ifdef __linux__
#include <errno.h>
#include <linux/filter.h>
#include <sys/socket.h>
#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

static int attach_prog(int fd, int nb)
{
    struct sock_filter code[] = {
        /* A = flow hash of the incoming SYN */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_RXHASH),
        /* A %= number of current buckets; return A (group position) */
        BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, (unsigned)nb),
        BPF_STMT(BPF_RET | BPF_A, 0),
    };
    struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };

    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
                      sizeof(prog)) == 0 ? 0 : errno;
}
#endif

void rp_steer_buckets(int nb)
{
#ifdef __linux__
    ap_listen_rec *lr;
    static int logged;

    for (lr = ap_listeners; lr; lr = lr->next) {
        int fd, err;
        apr_os_sock_get(&fd, lr->sd);
        if ((err = attach_prog(fd, nb)) != 0 && !logged) {
            logged = 1;
            ap_log_error(APLOG_MARK, APLOG_NOTICE, err, ap_server_conf,
                         RP_LOG_TAG "cannot steer connections to the "
                         "current buckets (SO_ATTACH_REUSEPORT_CBPF, Linux "
                         "4.5+); a graceful restart that lowers "
                         "ReusePortBuckets may reset connections queued on "
                         "the removed buckets");
        }
    }
#else
    (void)nb;
#endif
}
