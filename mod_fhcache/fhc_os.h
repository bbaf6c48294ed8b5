/* The platform seam of mod_fhcache: how a cached file is opened, read,
 * judged (can its notifications be trusted?) and handed to one request;
 * the handle budget; process ids; the watcher thread; the notification
 * backend.  Twins: fhc_os_unix.c and fhc_os_win32.c.  Everything else in
 * the module is the same on every platform. */
#ifndef FHC_OS_H
#define FHC_OS_H

#include "apr_file_io.h"
#include "apr_portable.h"
#include "apr_thread_proc.h"

#include <stdint.h>

#include "fhc_watch.h"

/* No handle held (an in-memory entry). */
#ifdef _WIN32
#define FHC_NO_FILE INVALID_HANDLE_VALUE
#else
#define FHC_NO_FILE (-1)
#endif

/* Open path for reading as the child's user, for serving from any thread:
 * no inheritance into CGI children; on Windows overlapped (TransmitFile and
 * reads at explicit offsets from many threads) and shared so that other
 * processes may overwrite, rename and delete the file meanwhile. */
apr_status_t fhc_os_open(const char *path, apr_os_file_t *h);
void fhc_os_close(apr_os_file_t h);
/* Stat fields of a handle that core's apr_stat() by name does not give
 * (cleared, so headers match whether or not a response came from the
 * cache; Windows: the volume serial and file index). */
extern const apr_int32_t fhc_os_fields_not_by_name;
/* Read size bytes from offset 0; APR_EOF if the file shrank. */
apr_status_t fhc_os_read_all(apr_os_file_t h, char *buf, apr_off_t size);

/* Changes to this file may happen where no notification reaches us
 * (network and FUSE filesystems): revalidate by stat. */
int fhc_os_remote_fs(apr_os_file_t h, const char *path);
/* Even notified entries are revalidated by stat (every FHCacheRevalidate
 * seconds, 2 unset; Windows: a watcher may miss timestamp-only changes). */
extern const int fhc_os_revalidate_notified;
/* A held handle keeps a file from being replaced or deleted for good
 * (Windows: a delete stays pending until the last handle closes; Wine
 * refuses to rename over an open file whatever its share mode): handles
 * are re-opened instead of revalidated, and closed after FHCacheRevalidate
 * seconds unused (2 unset). */
extern const int fhc_os_recycle_handles;

/* How one request reads the shared handle.  Any reader may read a file
 * bucket through its apr_file_t with seek + read: APR does whenever it
 * cannot map the bucket (EnableMMAP Off, and on Unix at any offset that is
 * not page-aligned, which mod_ssl's coalescing filter, Range requests and
 * mod_ratelimit make), so that apr_file_t must never share a file offset
 * with other threads.
 *
 * fhc_os_reads_at_offsets: 1 where the platform reads at explicit offsets
 * (Unix: pread), for fhc_fd_bucket_create(), used unless EnableMMAP is
 * Off; else fhc_os_request_file().  fhc_os_read_at() reads up to *len
 * bytes at off (APR_EOF at the end of the file). */
extern const int fhc_os_reads_at_offsets;
apr_status_t fhc_os_read_at(apr_os_file_t h, char *buf, apr_size_t *len,
                            apr_off_t off);
/* An apr_file_t for one request over the shared handle with a file offset
 * of its own (Unix: a new open file description of the same inode;
 * Windows: a wrapper with APR_FOPEN_XTHREAD), or NULL when this request
 * must be left to core.  sendfile: the request may use sendfile; mmap:
 * EnableMMAP is on. */
apr_file_t *fhc_os_request_file(apr_os_file_t h, int sendfile, int mmap,
                                apr_pool_t *p);

/* Handles the cache may hold per child when FHCacheMaxDescriptors is auto,
 * and the cap on an explicit value. */
unsigned fhc_os_handle_budget(void);

int32_t fhc_os_pid(void);
int fhc_os_pid_alive(int32_t pid);

/* A thread that never takes the MPM's signals. */
apr_status_t fhc_os_thread_create(apr_thread_t **t, apr_thread_start_t fn,
                                  void *data, apr_pool_t *p);

/* The change-notification backend, or NULL. */
const fhc_watch_backend *fhc_os_watch_backend(void);
/* Paths like "C:/dir" are absolute (watchset and cache keys). */
extern const int fhc_os_drive_paths;

/* What an operator can do about a limit, for log messages. */
extern const char *const fhc_os_hint_overflow;
extern const char *const fhc_os_hint_watch_limit;
extern const char *const fhc_os_hint_no_notify;
extern const char *const fhc_os_hint_handles;
extern const char *const fhc_os_hint_budget;

#endif
