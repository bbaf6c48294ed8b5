/* inotify backend (Linux) for the fhc_watch interface.  One inotify
 * instance per child; run() blocks in poll() on it and on a wake-up pipe
 * (stop), and turns inotify masks into FHC_EV_* flags.  Every read of the
 * queue and the delivery of what it read happen under one mutex, so a
 * catch_up() that finds the queue empty knows nothing read before it is
 * still undelivered. */
#ifdef __linux__

#include "fhc_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

/* Everything that can make a cached descriptor, its stat data or the path
 * leading to it wrong.  IN_MODIFY rather than only IN_CLOSE_WRITE: a writer
 * that keeps the file open must still invalidate at once. */
#define WATCH_MASK (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE     \
                    | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO              \
                    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR           \
                    | IN_EXCL_UNLINK)

#define TICK_MS 1000

struct fhc_watcher {
    int fd;
    int wake[2];                /* stop() writes, run() returns */
    fhc_event_fn fn;
    void *ctx;
    pthread_mutex_t reading;    /* a read and its delivery */
};

static int ino_open(fhc_watcher **out, fhc_event_fn fn, void *ctx)
{
    fhc_watcher *w = calloc(1, sizeof(*w));
    int rv;

    if (!w) {
        return ENOMEM;
    }
    w->fn = fn;
    w->ctx = ctx;
    /* CLOEXEC: nothing of ours may leak into CGI children. */
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0) {
        rv = errno;
        free(w);
        return rv;
    }
    if (pipe2(w->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        rv = errno;
        close(w->fd);
        free(w);
        return rv;
    }
    pthread_mutex_init(&w->reading, NULL);
    *out = w;
    return 0;
}

static int ino_add(fhc_watcher *w, const char *dir, long *id)
{
    int wd = inotify_add_watch(w->fd, dir, WATCH_MASK);
    if (wd < 0) {
        return errno;
    }
    *id = wd;
    return 0;
}

static void ino_remove(fhc_watcher *w, long id)
{
    /* EINVAL when the kernel already dropped it (IN_IGNORED): fine. */
    (void)inotify_rm_watch(w->fd, (int)id);
}

static unsigned flags_of(uint32_t mask)
{
    unsigned f = 0;
    if (mask & IN_Q_OVERFLOW) {
        f |= FHC_EV_OVERFLOW;
    }
    if (mask & (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE)) {
        f |= FHC_EV_CHANGED;
    }
    if (mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) {
        f |= FHC_EV_MOVED;
    }
    if (mask & IN_ISDIR) {
        f |= FHC_EV_ISDIR;
    }
    if (mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        f |= FHC_EV_SELF;
    }
    if (mask & (IN_IGNORED | IN_UNMOUNT)) {
        f |= FHC_EV_GONE | FHC_EV_SELF;
    }
    return f;
}

static void ino_catch_up(fhc_watcher *w)
{
    /* Aligned for struct inotify_event, big enough for many events. */
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;

    pthread_mutex_lock(&w->reading);
    while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
        char *p = buf;
        while (p < buf + n) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            w->fn(w->ctx, ev->wd, ev->len ? ev->name : NULL, flags_of(ev->mask));
            p += sizeof(*ev) + ev->len;
        }
    }
    pthread_mutex_unlock(&w->reading);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Ticks come about once a second even while events never stop. */
static void ino_run(fhc_watcher *w)
{
    int64_t next_tick = now_ms() + TICK_MS;

    for (;;) {
        struct pollfd p[2] = { { w->fd, POLLIN, 0 }, { w->wake[0], POLLIN, 0 } };
        int64_t wait = next_tick - now_ms();
        int n = poll(p, 2, wait < 0 ? 0 : (int)wait);

        if (n < 0 && errno != EINTR) {
            /* Cannot wait for events any more: say so, as if lost. */
            w->fn(w->ctx, -1, NULL, FHC_EV_OVERFLOW);
            return;
        }
        if (n > 0 && p[1].revents) {
            return;
        }
        if (n > 0 && p[0].revents) {
            /* A lookup may have caught up first: then nothing is read. */
            ino_catch_up(w);
        }
        if (now_ms() >= next_tick) {
            w->fn(w->ctx, -1, NULL, FHC_EV_TICK);
            next_tick = now_ms() + TICK_MS;
        }
    }
}

static void ino_stop(fhc_watcher *w)
{
    char c = 0;
    (void)!write(w->wake[1], &c, 1);
}

static void ino_close(fhc_watcher *w)
{
    close(w->fd);
    close(w->wake[0]);
    close(w->wake[1]);
    pthread_mutex_destroy(&w->reading);
    free(w);
}

const fhc_watch_backend fhc_watch_inotify = {
    "inotify", ino_open, ino_add, ino_remove, ino_run, ino_catch_up, ino_stop,
    ino_close
};

#endif /* __linux__ */
