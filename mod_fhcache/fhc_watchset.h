/* Which directories are watched, for which cached files, and what a
 * reported change invalidates.  Platform-neutral: talks to the notification
 * backend only through fhc_watch_backend, and to the cache through its
 * invalidation calls.  Same locking rule as the cache: the caller
 * serializes every call (mod_fhcache uses the cache's mutex).
 *
 * Every directory from a cached file's parent up to the root ("/", or
 * "C:/" with drive paths) is watched, so a
 * rename, removal, chmod or symlink swap of any path component is seen,
 * not only changes in the file's own directory. */
#ifndef FHC_WATCHSET_H
#define FHC_WATCHSET_H

#include "fhc_cache.h"
#include "fhc_watch.h"

typedef struct fhc_watchset fhc_watchset;

/* max_watches bounds the directories watched at once (>= 1). */
fhc_watchset *fhc_watchset_create(const fhc_watch_backend *be, fhc_watcher *w,
                                  unsigned max_watches);
/* Take "X:/..." paths as absolute, with root "X:/" (Windows). */
void fhc_watchset_drive_paths(fhc_watchset *ws, int on);
/* Length of the root of an absolute path: "/" (1), or with drive paths
 * only "X:/" (3); 0 for anything else (relative, UNC). */
size_t fhc_path_root_len(const char *path, int drive_paths);
/* Removes every watch it still holds. */
void fhc_watchset_destroy(fhc_watchset *ws);

/* Make sure changes to file (absolute path) and to every directory above it
 * are reported, counting one use of each.  0, or an errno value: ENOSPC
 * when our limit or the system's is reached; nothing is held then. */
int fhc_watchset_acquire(fhc_watchset *ws, const char *file);
/* Undo one acquire of file; watches nobody needs any more are removed. */
void fhc_watchset_release(fhc_watchset *ws, const char *file);

/* Apply one backend event to the cache. */
void fhc_watchset_route(fhc_watchset *ws, fhc_cache *c, long id,
                        const char *name, unsigned flags);

unsigned fhc_watchset_count(const fhc_watchset *ws);

#endif
