/* rp_poll.h on Linux: epoll, with an eventfd for wake-ups. */
#ifdef __linux__
#include "rp_poll.h"

#include "apr_strings.h"

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct rp_poller {
    int epfd;
    int wakefd;
    volatile int shut;          /* wake-ups are no longer consumed */
};

/* The eventfd's token: no listener or connection token takes it. */
#define RP_WAKE_TOKEN UINT64_MAX

static apr_status_t close_poller(void *data)
{
    rp_poller *pl = data;

    close(pl->epfd);
    close(pl->wakefd);
    return APR_SUCCESS;
}

apr_status_t rp_poller_create(rp_poller **out, apr_pool_t *p)
{
    rp_poller *pl = apr_pcalloc(p, sizeof(*pl));
    struct epoll_event ev = { 0 };

    pl->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (pl->epfd < 0) {
        return errno;
    }
    pl->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (pl->wakefd < 0) {
        apr_status_t rv = errno;
        close(pl->epfd);
        return rv;
    }
    ev.events = EPOLLIN;
    ev.data.u64 = RP_WAKE_TOKEN;
    if (epoll_ctl(pl->epfd, EPOLL_CTL_ADD, pl->wakefd, &ev) < 0) {
        apr_status_t rv = errno;
        close_poller(pl);
        return rv;
    }
    apr_pool_cleanup_register(p, pl, close_poller, apr_pool_cleanup_null);
    *out = pl;
    return APR_SUCCESS;
}

apr_status_t rp_poller_watch_listener(rp_poller *pl, int fd, uint64_t token)
{
    struct epoll_event ev = { 0 };

    /* Children sharing a bucket: wake one of them per connection.  Edge
     * triggered: a listener has one job at a time, which accepts until the
     * queue is empty (rp_accept.h); level triggered, a leader would find
     * the listener ready again and again while that job waited, and spin. */
    ev.events = EPOLLIN | EPOLLET | EPOLLEXCLUSIVE;
    ev.data.u64 = token;
    if (epoll_ctl(pl->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
        return APR_SUCCESS;
    }
    if (errno != EINVAL) {
        return errno;
    }
    ev.events = EPOLLIN | EPOLLET;      /* kernels before 4.5 */
    return epoll_ctl(pl->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? errno
                                                           : APR_SUCCESS;
}

apr_status_t rp_poller_watch_conn(rp_poller *pl, int fd, int events,
                                  uint64_t token, int *watched)
{
    struct epoll_event ev = { 0 };
    int all = *watched | events;

    ev.events = EPOLLET | EPOLLRDHUP | (all & RP_POLL_IN ? EPOLLIN : 0)
                | (all & RP_POLL_OUT ? EPOLLOUT : 0);
    ev.data.u64 = token;
    if (epoll_ctl(pl->epfd, *watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd,
                  &ev) < 0) {
        return errno;
    }
    *watched = all;
    return APR_SUCCESS;
}

void rp_poller_forget(rp_poller *pl, int fd)
{
    struct epoll_event ev = { 0 };

    epoll_ctl(pl->epfd, EPOLL_CTL_DEL, fd, &ev);
}

static void drain_wakeups(rp_poller *pl)
{
    uint64_t n;

    while (read(pl->wakefd, &n, sizeof(n)) == (ssize_t)sizeof(n)) {
        continue;
    }
}

int rp_poller_wait(rp_poller *pl, int timeout_ms, rp_poll_event *ev,
                   int max, int *woken)
{
    struct epoll_event raw[256];
    int n, i, out = 0;

    if (max > (int)(sizeof(raw) / sizeof(raw[0]))) {
        max = (int)(sizeof(raw) / sizeof(raw[0]));
    }
    *woken = 0;
    n = epoll_wait(pl->epfd, raw, max, timeout_ms);
    for (i = 0; i < n; i++) {
        uint32_t e = raw[i].events;
        if (raw[i].data.u64 == RP_WAKE_TOKEN) {
            if (!pl->shut) {
                drain_wakeups(pl);
            }
            *woken = 1;
            continue;
        }
        ev[out].token = raw[i].data.u64;
        ev[out].events = (e & EPOLLIN ? RP_POLL_IN : 0)
                         | (e & EPOLLOUT ? RP_POLL_OUT : 0)
                         | (e & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)
                            ? RP_POLL_HUP : 0);
        out++;
    }
    return out;
}

void rp_poller_wakeup(rp_poller *pl)
{
    uint64_t one = 1;
    ssize_t ignored = write(pl->wakefd, &one, sizeof(one));

    (void)ignored;
}

void rp_poller_shutdown(rp_poller *pl)
{
    pl->shut = 1;               /* level-triggered: every waiter sees it */
    rp_poller_wakeup(pl);
}
#endif /* __linux__ */
