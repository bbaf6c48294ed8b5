/* Listener buckets.  The parent owns every socket; for each Listen address it
 * binds core's record (bucket 0) itself, with SO_REUSEPORT, before core's
 * ap_setup_listeners() sees it (core skips records already active, and still
 * closes listeners dropped from the configuration), then adds one more socket
 * per extra bucket.  Extra sockets are retained across restarts so a graceful
 * restart never closes a socket that has connections queued.
 *
 * A restart that lowers the bucket count keeps the removed buckets' sockets
 * open too ("retired"), while a child of an older generation may still
 * listen on them: the kernel's SO_REUSEPORT group keeps its sockets in the
 * order they were opened and rp_steer.c picks among the first n, so a socket
 * opened for a bucket added back behind a retired one still held by such a
 * child (slow to stop) would leave the retired one in the group's first n,
 * and the new connections the kernel gave it would wait there until that
 * child closed it, then be reset.  A bucket added back takes its retired
 * socket again; the parent closes retired sockets, the highest first, once
 * no child listens on them (rp_listen_release_retired). */
#include "rp.h"
#include "rp_forkguard.h"
#include "rp_inherit.h"
#include "rp_sdstore.h"

#include "apr_strings.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

const char *rp_listen_note;

struct rp_dup {
    rp_dup *next;
    ap_listen_rec *primary;     /* core's record; survives restarts */
    apr_pool_t *pool;           /* owns the sockets below */
    int count;                  /* sockets for buckets 1..count */
    int active;                 /* of them the current ones, 1..active; the
                                   rest retired */
    apr_socket_t **socks;
};

/* ListenBacklog, SendBufferSize, ReceiveBufferSize are core directives whose
 * values core keeps private; read them from the parsed configuration. */
static int conftree_int(const char *name, int dflt)
{
    ap_directive_t *d;

    for (d = ap_conftree; d; d = d->next) {
        if (!strcasecmp(d->directive, name) && d->args) {
            int v = atoi(d->args);
            return v > 0 ? v : dflt;
        }
    }
    return dflt;
}

static apr_status_t set_int_opt(int fd, int level, int opt, int val)
{
    if (setsockopt(fd, level, opt, &val, sizeof(val)) < 0) {
        return apr_get_netos_error();
    }
    return APR_SUCCESS;
}

/* Socket options, bind and listen for one listener socket. */
static apr_status_t bind_listener(apr_socket_t *sd, apr_sockaddr_t *sa,
                                  int reuseport)
{
    int fd, sndbuf, rcvbuf;
    apr_status_t rv;

    apr_os_sock_get(&fd, sd);
    if ((rv = set_int_opt(fd, SOL_SOCKET, SO_REUSEADDR, 1))
        || (rv = set_int_opt(fd, SOL_SOCKET, SO_KEEPALIVE, 1))) {
        return rv;
    }
#ifdef SO_REUSEPORT
    if (reuseport && (rv = set_int_opt(fd, SOL_SOCKET, SO_REUSEPORT, 1))) {
        return rv;
    }
#endif
    /* Accepted sockets inherit TCP_NODELAY on Linux; set through APR so it
     * knows, and core does not set it again on every connection. */
    apr_socket_opt_set(sd, APR_TCP_NODELAY, 1);
    if ((sndbuf = conftree_int("SendBufferSize", 0)) > 0) {
        set_int_opt(fd, SOL_SOCKET, SO_SNDBUF, sndbuf);
    }
    if ((rcvbuf = conftree_int("ReceiveBufferSize", 0)) > 0) {
        set_int_opt(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf);
    }
#if APR_HAVE_IPV6
    /* Separate IPv4 and IPv6 sockets, so both families get their buckets. */
    if (sa->family == APR_INET6
        && (rv = set_int_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1))) {
        return rv;
    }
#endif
    if ((rv = apr_socket_bind(sd, sa)) != APR_SUCCESS) {
        return rv;
    }
    return apr_socket_listen(sd, conftree_int("ListenBacklog",
                                              DEFAULT_LISTENBACKLOG));
}

/* Bind core's records that are new in this generation. */
static int bind_primaries(apr_pool_t *p, int reuseport)
{
    ap_listen_rec *lr;
    apr_status_t rv;

    for (lr = ap_listeners; lr; lr = lr->next) {
        apr_socket_t *adopted;
        if (lr->active) {
            continue; /* inherited from the previous generation */
        }
        if ((adopted = rp_inherit_take(lr->bind_addr, p))) {
            apr_socket_close(lr->sd);   /* made unbound by core */
            lr->sd = adopted;           /* a server before us bound it */
            lr->active = 1;
            continue;
        }
        if ((rv = bind_listener(lr->sd, lr->bind_addr, reuseport))) {
            ap_log_perror(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, rv, p,
                          RP_LOG_TAG "could not bind to address %pI: "
                          "check that no other server uses it",
                          lr->bind_addr);
            return -1;
        }
        lr->active = 1;
    }
    return 0;
}

static int has_reuseport(apr_socket_t *sd)
{
#ifdef SO_REUSEPORT
    int fd, on = 0;
    socklen_t len = sizeof(on);

    apr_os_sock_get(&fd, sd);
    return getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, &len) == 0 && on;
#else
    return 0;
#endif
}

/* The accept filter core applied to the primary (TCP_DEFER_ACCEPT). */
static void copy_defer_accept(apr_socket_t *from, apr_socket_t *to)
{
#ifdef TCP_DEFER_ACCEPT
    int ffd, tfd, val = 0;
    socklen_t len = sizeof(val);

    apr_os_sock_get(&ffd, from);
    apr_os_sock_get(&tfd, to);
    if (getsockopt(ffd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &val, &len) == 0
        && val > 0) {
        set_int_opt(tfd, IPPROTO_TCP, TCP_DEFER_ACCEPT, val);
    }
#endif
}

static rp_dup *find_dup(ap_listen_rec *primary)
{
    rp_dup *d;

    for (d = rp_state->dups; d; d = d->next) {
        if (d->primary == primary) {
            return d;
        }
    }
    return NULL;
}

static rp_dup *get_dup(apr_pool_t *process_pool, ap_listen_rec *primary)
{
    rp_dup *d = find_dup(primary);

    if (!d) {
        apr_pool_t *pool;
        apr_pool_create(&pool, process_pool);
        apr_pool_tag(pool, "mpm_reuseport_buckets");
        d = apr_pcalloc(pool, sizeof(*d));
        d->pool = pool;
        d->primary = primary;
        d->next = rp_state->dups;
        rp_state->dups = d;
    }
    return d;
}

/* Make sure `d` has sockets for buckets 1..want-1, the current ones; any
 * beyond stay open, retired. */
static apr_status_t size_dup(rp_dup *d, int want)
{
    apr_status_t rv;
    int i;

    if (want - 1 > d->count) {
        apr_socket_t **socks = apr_pcalloc(d->pool, (want - 1) * sizeof(*socks));
        if (d->count) {
            memcpy(socks, d->socks, d->count * sizeof(*socks));
        }
        d->socks = socks;
        for (i = d->count; i < want - 1; i++) {
            apr_sockaddr_t *sa = d->primary->bind_addr;
            if ((socks[i] = rp_inherit_take(sa, d->pool))) {
                continue;   /* a server before us bound it */
            }
            if ((rv = apr_socket_create(&socks[i], sa->family, SOCK_STREAM,
                                        APR_PROTO_TCP, d->pool))
                || (rv = bind_listener(socks[i], sa, 1))) {
                if (socks[i]) {
                    apr_socket_close(socks[i]);
                }
                d->count = i;
                return rv;
            }
            copy_defer_accept(d->primary->sd, socks[i]);
        }
        d->count = want - 1;
    }
    d->active = want - 1;
    return APR_SUCCESS;
}

/* Close d's sockets for buckets from+1 on, the highest first: those before
 * keep their places in the kernel's group.  Children that still hold one
 * keep it open until they close their copy. */
static void close_dup_from(rp_dup *d, int from)
{
    while (d->count > from) {
        apr_socket_close(d->socks[--d->count]);
    }
    if (d->active > d->count) {
        d->active = d->count;
    }
}

static void close_retired(void)
{
    rp_dup *d;

    for (d = rp_state->dups; d; d = d->next) {
        close_dup_from(d, d->active);
    }
}

static apr_array_header_t *listen_fds(apr_pool_t *p, int with_retired);

/* Close retained sockets whose Listen address left the configuration. */
static void drop_stale_dups(void)
{
    rp_dup **pd = &rp_state->dups;

    while (*pd) {
        ap_listen_rec *lr;
        for (lr = ap_listeners; lr && lr != (*pd)->primary; lr = lr->next)
            ;
        if (!lr) {
            rp_dup *gone = *pd;
            *pd = gone->next;
            apr_pool_destroy(gone->pool);
        }
        else {
            pd = &(*pd)->next;
        }
    }
}

/* Extra buckets are possible only if every primary really has SO_REUSEPORT
 * and the kernel lets us bind siblings to it.  Returns the bucket count that
 * could be set up, logging once why it is less than asked. */
static int create_extra_buckets(apr_pool_t *pconf, server_rec *s, int want)
{
    ap_listen_rec *lr;
    apr_status_t rv = APR_SUCCESS;
    const char *why = NULL;

    for (lr = ap_listeners; lr && !why; lr = lr->next) {
        if (want == 1) {
            rp_dup *d = find_dup(lr);
            if (d) {
                size_dup(d, 1);     /* fewer buckets than last generation */
            }
        }
        else if (!has_reuseport(lr->sd)) {
            why = apr_psprintf(pconf, "listener %pI was bound without "
                               "SO_REUSEPORT (a restart, not a graceful "
                               "one, picks the new setting up)",
                               lr->bind_addr);
        }
        else if ((rv = size_dup(get_dup(s->process->pool, lr), want))) {
            why = apr_psprintf(pconf, "binding a second socket to %pI "
                               "failed (%pm)", lr->bind_addr, &rv);
        }
    }
    if (!why) {
        return want;
    }
    for (lr = ap_listeners; lr; lr = lr->next) {
        rp_dup *d = find_dup(lr);
        if (d) {
            close_dup_from(d, 0);
        }
    }
    rp_listen_note = apr_psprintf(pconf, "SO_REUSEPORT unusable: %s; "
                                  "falling back to one shared listener per "
                                  "address", why);
    return 1;
}

static ap_listen_rec *bucket_record(apr_pool_t *p, ap_listen_rec *primary,
                                    apr_socket_t *sd)
{
    ap_listen_rec *lr = apr_pmemdup(p, primary, sizeof(*lr));

    lr->sd = sd;
    lr->next = NULL;
    lr->accept_func = NULL;
    lr->active = 1;
    return lr;
}

static void build_buckets(apr_pool_t *pconf, int nb)
{
    ap_listen_rec *lr, **tails;
    int i;

    rp_buckets = apr_pcalloc(pconf, nb * sizeof(*rp_buckets));
    tails = apr_pcalloc(pconf, nb * sizeof(*tails));
    for (lr = ap_listeners; lr; lr = lr->next) {
        rp_dup *d = find_dup(lr);
        for (i = 0; i < nb; i++) {
            apr_socket_t *sd = i == 0 ? lr->sd : d->socks[i - 1];
            ap_listen_rec *rec = bucket_record(pconf, lr, sd);
            if (tails[i]) {
                tails[i]->next = rec;
            }
            else {
                rp_buckets[i].listeners = rec;
            }
            tails[i] = rec;
        }
    }
}

static int set_nonblocking(apr_pool_t *p)
{
    int i;
    ap_listen_rec *lr;

    /* Siblings may take a connection between poll and accept. */
    for (i = 0; i < rp_lim.num_buckets; i++) {
        for (lr = rp_buckets[i].listeners; lr; lr = lr->next) {
            apr_status_t rv = apr_socket_opt_set(lr->sd, APR_SO_NONBLOCK, 1);
            if (rv) {
                ap_log_perror(APLOG_MARK, APLOG_CRIT, rv, p, RP_LOG_TAG
                              "cannot make listener %pI non-blocking",
                              lr->bind_addr);
                return -1;
            }
        }
    }
    return 0;
}

/* Our bucket sockets, which forks of the parent other than ours let go
 * (rp_forkguard.c). */
static void guard_dup_fds(apr_pool_t *pconf)
{
    apr_array_header_t *fds = apr_array_make(pconf, 8, sizeof(int));
    rp_dup *d;
    int i, fd;

    for (d = rp_state->dups; d; d = d->next) {
        for (i = 0; i < d->count; i++) {
            if (apr_os_sock_get(&fd, d->socks[i]) == APR_SUCCESS) {
                APR_ARRAY_PUSH(fds, int) = fd;
            }
        }
    }
    rp_forkguard_arm(pconf, fds);
}

int rp_listen_open(apr_pool_t *pconf, server_rec *s, int startup)
{
    int nb = rp_lim.num_buckets;

    rp_listen_note = NULL;

    if (bind_primaries(s->process->pool, rp_lim.reuseport)) {
        return -1;
    }
    if (ap_setup_listeners(s) < 1) {
        ap_log_error(APLOG_MARK, APLOG_ALERT | (startup ? APLOG_STARTUP : 0),
                     0, startup ? NULL : s,
                     RP_LOG_TAG "no listening sockets available, shutting "
                     "down: add a Listen directive");
        return -1;
    }
    drop_stale_dups();
    nb = create_extra_buckets(pconf, s, rp_lim.reuseport ? nb : 1);
    if (nb != rp_lim.num_buckets) {
        rp_lim.num_buckets = nb;
    }
    build_buckets(pconf, nb);
    rp_affinity_setup(rp_lim.reuseport ? nb : 1);
    if (!(rp_lim.reuseport && nb > 0 && !rp_listen_note
          && rp_steer_buckets(nb) == 0)) {
        close_retired();    /* unsteered, the kernel would give them some */
    }
    if (set_nonblocking(pconf)) {
        return -1;
    }
    if (!rp_lim.reuseport) {
        rp_listen_note = rp_conf.reuseport
            ? "SO_REUSEPORT is not supported by this kernel: one shared "
              "listener per address"
            : "ReusePort off: one shared listener per address";
    }
    guard_dup_fds(pconf);
    if (startup) {
        rp_inherit_close_rest();
    }
    /* A start from systemd's store wants the current buckets only. */
    rp_sdstore_keep(listen_fds(pconf, 0));
    return 0;
}

/* In the order of the kernel's groups: a binary upgrade's new server takes
 * them by address in this order, retired ones too, so that a bucket it
 * adds takes the socket at that place. */
apr_array_header_t *rp_listen_fds(apr_pool_t *p)
{
    return listen_fds(p, 1);
}

static apr_array_header_t *listen_fds(apr_pool_t *p, int with_retired)
{
    apr_array_header_t *fds = apr_array_make(p, 8, sizeof(int));
    ap_listen_rec *lr;
    rp_dup *d;
    int i, fd;

    for (lr = ap_listeners; lr; lr = lr->next) {
        if (apr_os_sock_get(&fd, lr->sd) == APR_SUCCESS && fd >= 0) {
            APR_ARRAY_PUSH(fds, int) = fd;
        }
    }
    for (d = rp_state->dups; d; d = d->next) {
        for (i = 0; i < (with_retired ? d->count : d->active); i++) {
            if (apr_os_sock_get(&fd, d->socks[i]) == APR_SUCCESS && fd >= 0) {
                APR_ARRAY_PUSH(fds, int) = fd;
            }
        }
    }
    return fds;
}

void rp_listen_close_other_buckets(int keep_bucket)
{
    int i;

    for (i = 0; i < rp_lim.num_buckets; i++) {
        if (i != keep_bucket) {
            ap_close_listeners_ex(rp_buckets[i].listeners);
        }
    }
    close_retired();
}

void rp_listen_release_retired(int (*listened_on)(int bucket))
{
    rp_dup *d;

    for (d = rp_state->dups; d; d = d->next) {
        while (d->count > d->active && !listened_on(d->count)) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ap_server_conf, RP_LOG_TAG
                         "%pI: closing the socket of removed bucket %d (no "
                         "child listens on it any more)", d->primary->bind_addr,
                         d->count);
            close_dup_from(d, d->count - 1);
        }
    }
}

void rp_listen_stop_deferring(void)
{
#ifdef TCP_DEFER_ACCEPT
    int i, off = 0;
    ap_listen_rec *lr;

    /* A graceful stop: the children take what is queued before the last
     * copies close; with TCP_DEFER_ACCEPT a finished handshake would wait
     * outside the queue for its data, and be reset by that close. */
    for (i = 0; i < rp_lim.num_buckets; i++) {
        for (lr = rp_buckets[i].listeners; lr; lr = lr->next) {
            int fd;
            apr_os_sock_get(&fd, lr->sd);
            (void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &off,
                             sizeof(off));
        }
    }
#endif
}

void rp_listen_close_all(void)
{
    rp_dup *d;

    ap_close_listeners();
    for (d = rp_state->dups; d; d = d->next) {
        close_dup_from(d, 0);
    }
    rp_forkguard_disarm();  /* those numbers may be reused from now on */
}
