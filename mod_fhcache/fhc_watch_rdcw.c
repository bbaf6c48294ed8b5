/* ReadDirectoryChangesW backend (Windows) for the fhc_watch interface.
 * Each watched directory has one overlapped ReadDirectoryChangesW pending
 * on a completion port that run() drains; the completion key is the
 * watch, so one dispatch finds everything.  A watch's memory belongs to
 * its pending read: remove() cancels the read and the watcher frees the
 * watch when the cancelled read completes. */
#ifdef _WIN32

#include "fhc_watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

/* Everything that can make a cached handle, its stat data or the path to
 * it wrong: names (create, delete, rename) of files and directories,
 * size, write time, attributes, security descriptors. */
#define WATCH_FILTER (FILE_NOTIFY_CHANGE_FILE_NAME | FILE_NOTIFY_CHANGE_DIR_NAME \
                      | FILE_NOTIFY_CHANGE_ATTRIBUTES | FILE_NOTIFY_CHANGE_SIZE \
                      | FILE_NOTIFY_CHANGE_LAST_WRITE | FILE_NOTIFY_CHANGE_CREATION \
                      | FILE_NOTIFY_CHANGE_SECURITY)

#define BUF_BYTES 16384
#define TICK_MS 1000
#define STOP_KEY ((ULONG_PTR)1)

typedef struct dir_watch dir_watch;
struct dir_watch {
    OVERLAPPED ov;              /* of the pending read */
    dir_watch *prev, *next;     /* in the live list (until removed) */
    HANDLE dir;
    long id;
    int removed;                /* remove() was called: free on completion */
    DWORD buf[BUF_BYTES / sizeof(DWORD)];  /* DWORD-aligned, as required */
};

struct fhc_watcher {
    HANDLE port;
    fhc_event_fn fn;
    void *ctx;
    CRITICAL_SECTION lock;      /* next_id, the list, removed flags */
    long next_id;
    dir_watch *live;            /* watches not removed; few (FHCacheMaxWatches),
                                   and only remove() searches them */
};

static dir_watch *find_watch(fhc_watcher *w, long id)
{
    dir_watch *d;
    for (d = w->live; d && d->id != id; d = d->next) {
    }
    return d;
}

static void put_watch(fhc_watcher *w, dir_watch *d)
{
    d->prev = NULL;
    d->next = w->live;
    if (w->live) {
        w->live->prev = d;
    }
    w->live = d;
}

static void drop_watch(fhc_watcher *w, dir_watch *d)
{
    if (d->prev) {
        d->prev->next = d->next;
    }
    else {
        w->live = d->next;
    }
    if (d->next) {
        d->next->prev = d->prev;
    }
    d->prev = d->next = NULL;
}

static int rdcw_open(fhc_watcher **out, fhc_event_fn fn, void *ctx)
{
    fhc_watcher *w = calloc(1, sizeof(*w));

    if (!w) {
        return ENOMEM;
    }
    w->port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
    if (!w->port) {
        free(w);
        return EIO;
    }
    InitializeCriticalSection(&w->lock);
    w->fn = fn;
    w->ctx = ctx;
    w->next_id = 1;
    *out = w;
    return 0;
}

/* Issue the next read; FALSE if the directory cannot be watched any more. */
static BOOL arm(dir_watch *d)
{
    memset(&d->ov, 0, sizeof(d->ov));
    return ReadDirectoryChangesW(d->dir, d->buf, sizeof(d->buf), FALSE,
                                 WATCH_FILTER, NULL, &d->ov, NULL);
}

static int errno_of(DWORD err)
{
    switch (err) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
        return ENOENT;
    case ERROR_ACCESS_DENIED:
        return EACCES;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_NO_SYSTEM_RESOURCES:
        return ENOSPC;
    default:
        return EIO;
    }
}

/* Called from request threads; the first read is issued here, so a change
 * made after add() returns is reported (the fill opens the file after). */
static int rdcw_add(fhc_watcher *w, const char *dir, long *id)
{
    WCHAR wdir[MAX_PATH];
    dir_watch *d;
    int rv = 0;

    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, dir, -1, wdir,
                            MAX_PATH) <= 0) {
        return ENAMETOOLONG;
    }
    d = calloc(1, sizeof(*d));
    if (!d) {
        return ENOMEM;
    }
    /* Shared for delete: a watched directory may still be renamed. */
    d->dir = CreateFileW(wdir, FILE_LIST_DIRECTORY,
                         FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                         NULL, OPEN_EXISTING,
                         FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OVERLAPPED, NULL);
    if (d->dir == INVALID_HANDLE_VALUE) {
        rv = errno_of(GetLastError());
        free(d);
        return rv;
    }
    EnterCriticalSection(&w->lock);
    d->id = w->next_id++;
    if (!CreateIoCompletionPort(d->dir, w->port, (ULONG_PTR)d, 0)) {
        rv = EIO;
    }
    else if (!arm(d)) {
        rv = errno_of(GetLastError());
    }
    else {
        put_watch(w, d);
    }
    LeaveCriticalSection(&w->lock);
    if (rv != 0) {
        CloseHandle(d->dir);    /* no read is pending */
        free(d);
        return rv;
    }
    *id = d->id;
    return 0;
}

static void rdcw_remove(fhc_watcher *w, long id)
{
    dir_watch *d;

    EnterCriticalSection(&w->lock);
    d = find_watch(w, id);
    if (d) {
        drop_watch(w, d);
        d->removed = 1;
        /* Its completion (aborted) frees it in run(). */
        CancelIoEx(d->dir, &d->ov);
    }
    LeaveCriticalSection(&w->lock);
}

/* Names ReadDirectoryChangesW may give in 8.3 form cannot be matched
 * against cache keys: report them as a change of the whole directory. */
static int maybe_short_name(const char *name)
{
    return strchr(name, '~') != NULL;
}

static void report(fhc_watcher *w, dir_watch *d, DWORD bytes)
{
    const char *p = (const char *)d->buf;

    if (bytes == 0) {
        /* The system's buffer overflowed: the changes are lost. */
        w->fn(w->ctx, -1, NULL, FHC_EV_OVERFLOW);
        return;
    }
    for (;;) {
        const FILE_NOTIFY_INFORMATION *fi = (const FILE_NOTIFY_INFORMATION *)p;
        char name[MAX_PATH * 3];
        int n = WideCharToMultiByte(CP_UTF8, 0, fi->FileName,
                                    (int)(fi->FileNameLength / sizeof(WCHAR)),
                                    name, sizeof(name) - 1, NULL, NULL);
        unsigned flags = fi->Action == FILE_ACTION_MODIFIED ? FHC_EV_CHANGED
                                                            : FHC_EV_MOVED;
        name[n > 0 ? n : 0] = '\0';
        if (n <= 0 || maybe_short_name(name)) {
            w->fn(w->ctx, d->id, NULL, FHC_EV_CHANGED);
        }
        else {
            w->fn(w->ctx, d->id, name, flags);
        }
        if (!fi->NextEntryOffset) {
            break;
        }
        p += fi->NextEntryOffset;
    }
}

/* Whether d was removed; if so it is freed (no read of it is pending:
 * either this was its cancelled read or remove() came while reporting). */
static int freed_if_removed(fhc_watcher *w, dir_watch *d)
{
    int removed;

    EnterCriticalSection(&w->lock);
    removed = d->removed;
    LeaveCriticalSection(&w->lock);
    if (removed) {
        CloseHandle(d->dir);
        free(d);
    }
    return removed;
}

/* One completed read: report it and read again, or end the watch. */
static void on_completion(fhc_watcher *w, dir_watch *d, BOOL ok, DWORD bytes)
{
    int readable = ok || GetLastError() == ERROR_NOTIFY_ENUM_DIR;
    int rearmed = 0, removed;

    if (freed_if_removed(w, d)) {
        return;
    }
    if (readable) {
        /* May remove this very watch (an invalidation releases it). */
        report(w, d, ok ? bytes : 0);
    }
    EnterCriticalSection(&w->lock);
    /* Under the lock: a remove() from now on cancels the read armed. */
    removed = d->removed;
    if (!removed) {
        rearmed = readable && arm(d);
        if (!rearmed) {
            drop_watch(w, d);
        }
    }
    LeaveCriticalSection(&w->lock);
    if (rearmed) {
        return;
    }
    if (!removed) {
        /* The directory is gone or cannot be read. */
        w->fn(w->ctx, d->id, NULL, FHC_EV_GONE | FHC_EV_SELF);
    }
    CloseHandle(d->dir);
    free(d);
}

static void rdcw_run(fhc_watcher *w)
{
    DWORD next_tick = GetTickCount() + TICK_MS;

    for (;;) {
        DWORD bytes = 0, now = GetTickCount();
        ULONG_PTR key = 0;
        OVERLAPPED *ov = NULL;
        DWORD wait = (LONG)(next_tick - now) > 0 ? next_tick - now : 0;
        BOOL ok = GetQueuedCompletionStatus(w->port, &bytes, &key, &ov, wait);

        if (ov) {
            on_completion(w, (dir_watch *)key, ok, bytes);
        }
        else if (ok && key == STOP_KEY) {
            return;
        }
        else if (!ok && GetLastError() != WAIT_TIMEOUT) {
            /* The port itself failed: say so, as if events were lost. */
            w->fn(w->ctx, -1, NULL, FHC_EV_OVERFLOW);
            return;
        }
        if ((LONG)(GetTickCount() - next_tick) >= 0) {
            w->fn(w->ctx, -1, NULL, FHC_EV_TICK);
            next_tick = GetTickCount() + TICK_MS;
        }
    }
}

static void rdcw_stop(fhc_watcher *w)
{
    PostQueuedCompletionStatus(w->port, 0, STOP_KEY, NULL);
}

/* After run() returned: reads still pending keep their memory (the
 * process is ending); their handles are closed, which ends the reads. */
static void rdcw_close(fhc_watcher *w)
{
    dir_watch *d;
    for (d = w->live; d; d = d->next) {
        CloseHandle(d->dir);
    }
    CloseHandle(w->port);
    DeleteCriticalSection(&w->lock);
    free(w);
}

const fhc_watch_backend fhc_watch_rdcw = {
    /* No catch_up(): on Windows every entry is revalidated by stat too. */
    "ReadDirectoryChangesW", rdcw_open, rdcw_add, rdcw_remove, rdcw_run,
    NULL, rdcw_stop, rdcw_close
};

#endif /* _WIN32 */
