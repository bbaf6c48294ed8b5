/* Directory watches with use counts, and event routing (see fhc_watchset.h).
 * Two small chained hash tables over the same records: by path (acquire,
 * release) and by backend id (routing). */
#include "fhc_watchset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 256
#define NO_ID (-1L)

typedef struct dir_rec dir_rec;
struct dir_rec {
    dir_rec *pnext;     /* by-path chain */
    dir_rec *inext;     /* by-id chain (only while id != NO_ID) */
    long id;
    unsigned refs;
    char path[];
};

struct fhc_watchset {
    const fhc_watch_backend *be;
    fhc_watcher *w;
    unsigned max;
    unsigned count;
    int drive_paths;
    dir_rec *by_path[NBUCKETS];
    dir_rec *by_id[NBUCKETS];
};

static unsigned path_slot(const char *s, size_t len)
{
    unsigned h = 2166136261u;
    size_t i;
    for (i = 0; i < len; i++) {
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    }
    return h % NBUCKETS;
}

static unsigned id_slot(long id)
{
    return (unsigned)((unsigned long)id % NBUCKETS);
}

fhc_watchset *fhc_watchset_create(const fhc_watch_backend *be, fhc_watcher *w,
                                  unsigned max_watches)
{
    fhc_watchset *ws = calloc(1, sizeof(*ws));
    if (ws) {
        ws->be = be;
        ws->w = w;
        ws->max = max_watches ? max_watches : 1;
    }
    return ws;
}

void fhc_watchset_drive_paths(fhc_watchset *ws, int on)
{
    ws->drive_paths = on;
}

size_t fhc_path_root_len(const char *path, int drive_paths)
{
    if (!drive_paths) {
        return path[0] == '/' ? 1 : 0;
    }
    /* Windows: "/x" is relative to the current drive; UNC is not ours. */
    if (((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z'))
        && path[1] == ':' && path[2] == '/') {
        return 3;
    }
    return 0;
}

static dir_rec *find_path(fhc_watchset *ws, const char *dir, size_t len)
{
    dir_rec *d;
    for (d = ws->by_path[path_slot(dir, len)]; d; d = d->pnext) {
        if (strlen(d->path) == len && memcmp(d->path, dir, len) == 0) {
            return d;
        }
    }
    return NULL;
}

static dir_rec *find_id(fhc_watchset *ws, long id)
{
    dir_rec *d;
    for (d = ws->by_id[id_slot(id)]; d; d = d->inext) {
        if (d->id == id) {
            return d;
        }
    }
    return NULL;
}

static void unlink_id(fhc_watchset *ws, dir_rec *d)
{
    dir_rec **pp;
    if (d->id == NO_ID) {
        return;
    }
    for (pp = &ws->by_id[id_slot(d->id)]; *pp; pp = &(*pp)->inext) {
        if (*pp == d) {
            *pp = d->inext;
            break;
        }
    }
    d->id = NO_ID;
}

static int start_watch(fhc_watchset *ws, dir_rec *d)
{
    long id;
    int rv = ws->be->add(ws->w, d->path, &id);
    if (rv == 0) {
        /* A backend may hand out an id again for the same directory
         * (inotify does): one record per id. */
        dir_rec *other = find_id(ws, id);
        if (other && other != d) {
            unlink_id(ws, other);
        }
        d->id = id;
        d->inext = ws->by_id[id_slot(id)];
        ws->by_id[id_slot(id)] = d;
    }
    return rv;
}

static void put_dir(fhc_watchset *ws, dir_rec *d)
{
    dir_rec **pp;
    if (--d->refs) {
        return;
    }
    if (d->id != NO_ID) {
        ws->be->remove(ws->w, d->id);
        unlink_id(ws, d);
    }
    for (pp = &ws->by_path[path_slot(d->path, strlen(d->path))]; *pp;
         pp = &(*pp)->pnext) {
        if (*pp == d) {
            *pp = d->pnext;
            break;
        }
    }
    ws->count--;
    free(d);
}

static int get_dir(fhc_watchset *ws, const char *dir, size_t len)
{
    dir_rec *d = find_path(ws, dir, len);
    int rv;

    if (d) {
        /* Its watch ended (directory replaced): watch the new one. */
        if (d->id == NO_ID && (rv = start_watch(ws, d)) != 0) {
            return rv;
        }
        d->refs++;
        return 0;
    }
    if (ws->count >= ws->max) {
        return ENOSPC;
    }
    d = malloc(sizeof(*d) + len + 1);
    if (!d) {
        return ENOMEM;
    }
    memcpy(d->path, dir, len);
    d->path[len] = '\0';
    d->id = NO_ID;
    d->refs = 1;
    d->inext = NULL;
    if ((rv = start_watch(ws, d)) != 0) {
        free(d);
        return rv;
    }
    d->pnext = ws->by_path[path_slot(dir, len)];
    ws->by_path[path_slot(dir, len)] = d;
    ws->count++;
    return 0;
}

/* Length of the parent directory of path[0..len), whose root is
 * path[0..root) ("/a/b" -> 2 for "/a", "/a" -> 1 for "/", "C:/a" -> 3 for
 * "C:/"); 0 when there is none. */
static size_t parent_len(const char *path, size_t len, size_t root)
{
    if (len <= root) {
        return 0;
    }
    while (len > root && path[len - 1] != '/') {
        len--;
    }
    return len > root ? len - 1 : root;
}

int fhc_watchset_acquire(fhc_watchset *ws, const char *file)
{
    size_t root = fhc_path_root_len(file, ws->drive_paths);
    size_t len = strlen(file), done_to = len;
    int rv = 0;

    if (!root) {
        return EINVAL;
    }
    while ((len = parent_len(file, len, root)) != 0) {
        if ((rv = get_dir(ws, file, len)) != 0) {
            break;
        }
        done_to = len;
    }
    if (rv == 0) {
        return 0;
    }
    /* Give back what this call took (directories longer than done_to-1). */
    len = strlen(file);
    while ((len = parent_len(file, len, root)) != 0 && len >= done_to) {
        put_dir(ws, find_path(ws, file, len));
    }
    return rv;
}

void fhc_watchset_release(fhc_watchset *ws, const char *file)
{
    size_t root = fhc_path_root_len(file, ws->drive_paths);
    size_t len = strlen(file);

    if (!root) {
        return;
    }
    while ((len = parent_len(file, len, root)) != 0) {
        dir_rec *d = find_path(ws, file, len);
        if (d) {
            put_dir(ws, d);
        }
    }
}

void fhc_watchset_route(fhc_watchset *ws, fhc_cache *c, long id,
                        const char *name, unsigned flags)
{
    dir_rec *d;
    char *path;
    size_t dlen, nlen;

    if (flags & FHC_EV_OVERFLOW) {
        fhc_cache_invalidate_all(c);
        return;
    }
    d = find_id(ws, id);
    if (!d) {
        return;                 /* a watch we already gave up */
    }
    dlen = strlen(d->path);
    nlen = name ? strlen(name) : 0;
    /* Copied: invalidating may release the last use of d. */
    path = malloc(dlen + nlen + 2);
    if (!path) {
        fhc_cache_invalidate_all(c);
        return;
    }
    memcpy(path, d->path, dlen + 1);
    if (flags & FHC_EV_GONE) {
        unlink_id(ws, d);
    }
    if (!name || (flags & (FHC_EV_SELF | FHC_EV_GONE))) {
        fhc_cache_invalidate_tree(c, path);
    }
    if (name && *name) {
        /* A root ("/", "C:/") already ends in the separator. */
        size_t at = d->path[dlen - 1] == '/' ? dlen : dlen + 1;
        path[dlen] = '/';
        memcpy(path + at, name, nlen + 1);
        /* A renamed, removed or replaced name may be a directory or a
         * symlink to one on the way to cached files: drop the subtree.
         * Only a directory we watch can have cached files below it, which
         * keeps churn in busy directories (/tmp) cheap. */
        if ((flags & (FHC_EV_MOVED | FHC_EV_ISDIR))
            && find_path(ws, path, at + nlen)) {
            fhc_cache_invalidate_tree(c, path);
        }
        else {
            fhc_cache_invalidate(c, path);
        }
    }
    free(path);
}

void fhc_watchset_destroy(fhc_watchset *ws)
{
    unsigned i;
    if (!ws) {
        return;
    }
    for (i = 0; i < NBUCKETS; i++) {
        while (ws->by_path[i]) {
            dir_rec *d = ws->by_path[i];
            d->refs = 1;
            put_dir(ws, d);
        }
    }
    free(ws);
}

unsigned fhc_watchset_count(const fhc_watchset *ws)
{
    return ws->count;
}
