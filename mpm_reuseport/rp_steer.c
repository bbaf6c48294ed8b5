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
 * just drain.  Removed sockets are always the last ones of the group (they
 * stay open while a child may listen on them, and a bucket added back takes
 * its socket again: rp_listen.c), so the first n positions are the current
 * buckets.  With ReusePortCPUAffinity
 * the program picks by receiving CPU instead (still among the first n). */
#include "rp.h"
#include "rp_cpumap.h"

#ifdef __linux__
#include <errno.h>
#include <linux/filter.h>
#include <sys/socket.h>
#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

#define HASH_LOAD BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_RXHASH)

/* "A = flow hash % n; return A" (5 or 3 instructions with no offset). */
static int by_hash(struct sock_filter *code, unsigned n, unsigned mul,
                   unsigned add)
{
    int k = 0;

    code[k++] = (struct sock_filter)HASH_LOAD;
    code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n);
    if (mul != 1 || add != 0) {
        code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, mul);
        code[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, add);
    }
    code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
    return k;
}

/* ReusePortCPUAffinity: the receiving CPU picks the bucket (rp_cpumap.h):
 * per CPU of the map "if cpu == id: return its bucket (or one of its
 * buckets by hash)", then any other CPU by hash over all buckets. */
static int by_cpu(struct sock_filter *code, const rp_cpumap *m)
{
    int i, k = 0;

    code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             SKF_AD_OFF + SKF_AD_CPU);
    for (i = 0; i < m->ncpu; i++) {
        struct sock_filter block[5];
        int first, count, n = 0, j;

        rp_cpumap_buckets_of(m, i, &first, &count);
        if (count == 1) {
            block[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                                      (unsigned)first);
        }
        else {
            n = by_hash(block, (unsigned)count, (unsigned)m->ncpu,
                        (unsigned)first);
        }
        /* equal: fall into the block; else skip it */
        code[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                 (unsigned)m->cpu[i], 0,
                                                 (unsigned char)n);
        for (j = 0; j < n; j++) {
            code[k++] = block[j];
        }
    }
    return k + by_hash(code + k, (unsigned)m->nb, 1, 0);
}

static int attach_prog(int fd, struct sock_filter *code, int len)
{
    struct sock_fprog prog = { (unsigned short)len, code };

    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
                      sizeof(prog)) == 0 ? 0 : errno;
}
#endif

int rp_steer_buckets(int nb)
{
#ifdef __linux__
    /* 1 load + up to 6 per CPU + 3 */
    static struct sock_filter code[4 + 6 * RP_CPUMAP_MAX];
    const rp_cpumap *m = rp_affinity_map();
    ap_listen_rec *lr;
    static apr_uint32_t logged;
    int len, failed = 0;

    /* Either way the program returns one of the current nb positions. */
    len = m && m->nb == nb ? by_cpu(code, m) : by_hash(code, (unsigned)nb, 1, 0);
    for (lr = ap_listeners; lr; lr = lr->next) {
        int fd, err;
        apr_os_sock_get(&fd, lr->sd);
        if ((err = attach_prog(fd, code, len)) != 0) {
            failed = err;
            mpmng_log_once(&logged, APLOG_MARK, APLOG_NOTICE, err,
                           ap_server_conf, RP_LOG_TAG "cannot steer "
                           "connections to the current buckets "
                           "(SO_ATTACH_REUSEPORT_CBPF, Linux 4.5+); a graceful "
                           "restart that lowers ReusePortBuckets may reset "
                           "connections queued on the removed buckets%s",
                           m ? ", and ReusePortCPUAffinity cannot steer by "
                           "CPU" : "");
        }
    }
    return failed;
#else
    (void)nb;
    return APR_ENOTIMPL;
#endif
}
