/* The change-notification backend interface.  One backend per platform
 * (inotify, ReadDirectoryChangesW; kqueue later), each in its own
 * file, all behind this table so that the routing (fhc_watchset.c) and the
 * cache core stay platform-neutral.
 *
 * A backend watches directories: changes to the directory itself and to
 * its direct entries.  It reports them through one callback; ids are the
 * backend's own watch ids.  run() delivers from its own thread; with
 * catch_up() a lookup can first have every change the system has queued
 * delivered, which closes the window between a writer's system call and
 * the run() thread getting the CPU. */
#ifndef FHC_WATCH_H
#define FHC_WATCH_H

/* Event flags (a report may carry several). */
#define FHC_EV_CHANGED   0x01  /* dir/name: content or attributes changed */
#define FHC_EV_MOVED     0x02  /* dir/name: created, deleted, renamed to/from */
#define FHC_EV_ISDIR     0x04  /* dir/name is a directory */
#define FHC_EV_SELF      0x08  /* the watched directory itself changed */
#define FHC_EV_GONE      0x10  /* the watch ended (directory deleted or
                                  unmounted); id is no longer valid */
#define FHC_EV_OVERFLOW  0x20  /* events were lost: trust nothing */
#define FHC_EV_TICK      0x40  /* about once a second, for housekeeping */

typedef struct fhc_watcher fhc_watcher;

/* name is NULL for events on the directory itself and for OVERFLOW/TICK. */
typedef void (*fhc_event_fn)(void *ctx, long id, const char *name,
                             unsigned flags);

typedef struct fhc_watch_backend {
    const char *name;
    /* 0, or an errno value (then nothing was allocated). */
    int (*open)(fhc_watcher **w, fhc_event_fn fn, void *ctx);
    /* Start watching dir: 0 and *id, or an errno value; ENOSPC means a
     * system limit on watches was reached. */
    int (*add)(fhc_watcher *w, const char *dir, long *id);
    void (*remove)(fhc_watcher *w, long id);
    /* Deliver events until stop() is called; run in a dedicated thread. */
    void (*run)(fhc_watcher *w);
    /* NULL, or: from any thread, without waiting for new events, return
     * once every event queued before the call has been delivered (by this
     * thread or by another that had already read it). */
    void (*catch_up)(fhc_watcher *w);
    /* Make run() return soon; callable from any thread. */
    void (*stop)(fhc_watcher *w);
    /* After run() returned (or was never called). */
    void (*close)(fhc_watcher *w);
} fhc_watch_backend;

#ifdef __linux__
extern const fhc_watch_backend fhc_watch_inotify;
#endif
#ifdef _WIN32
extern const fhc_watch_backend fhc_watch_rdcw;
#endif

#endif
