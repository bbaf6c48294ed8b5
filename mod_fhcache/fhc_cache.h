/* The file-handle cache core: keys (absolute paths), bounded LRU, entry
 * lifetime (pins), invalidation and statistics.
 *
 * Platform-neutral on purpose: no httpd, APR or OS file calls.  What an entry
 * holds (descriptor, stat data, a copy of a small body) is an opaque payload
 * owned by the caller, handed back through the release callback once the
 * entry is both out of the cache and no longer pinned by any request.  That
 * is what keeps a descriptor open while a response is still being sent from
 * it after the file changed.
 *
 * Not thread-safe by itself: the caller serializes every call (one mutex per
 * child in mod_fhcache), which keeps this file trivially unit-testable.
 */
#ifndef FHC_CACHE_H
#define FHC_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct fhc_cache fhc_cache;
typedef struct fhc_entry fhc_entry;
typedef struct fhc_ticket fhc_ticket;

typedef struct fhc_limits {
    unsigned max_entries;   /* live entries kept (>= 1) */
    unsigned max_handles;   /* descriptors held, live and pinned-dead */
    uint64_t max_bytes;     /* bytes of in-memory bodies held */
    int64_t idle_usec;      /* unused that long: expired (0 = never) */
    unsigned min_uses;      /* misses of a key before it is cached (>= 1) */
} fhc_limits;

typedef struct fhc_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t inserts;
    uint64_t evictions;      /* pushed out by a limit (LRU) or by shedding */
    uint64_t expirations;    /* idle too long */
    uint64_t invalidations;  /* entries dropped because their file changed */
    uint64_t fill_races;     /* fills refused: the file changed meanwhile */
    uint64_t flushes;        /* invalidate-everything events */
    unsigned entries;        /* live entries */
    unsigned handles;        /* descriptors held (live + dead but pinned) */
    unsigned dead_pinned;    /* out of the cache, still used by requests */
    unsigned pending;        /* fills in progress */
    uint64_t bytes;          /* in-memory body bytes held */
} fhc_stats;

/* Called exactly once per payload, when its entry is gone and unpinned. */
typedef void (*fhc_release_fn)(void *payload, void *ctx);

/* NULL on allocation failure or max_entries == 0. */
fhc_cache *fhc_cache_create(const fhc_limits *limits,
                            fhc_release_fn release, void *release_ctx);

/* Drops every entry; payloads of pinned entries are released when their
 * last pin goes (so destroy only once no request can still unpin). */
void fhc_cache_destroy(fhc_cache *c);

/* Hit: the entry, pinned (caller must fhc_entry_unpin it).  Miss: NULL. */
fhc_entry *fhc_cache_lookup(fhc_cache *c, const char *key, int64_t now);

void *fhc_entry_payload(const fhc_entry *e);
const char *fhc_entry_key(const fhc_entry *e);
/* Still in the cache (not invalidated/evicted since it was pinned)? */
int fhc_entry_live(const fhc_entry *e);
void fhc_entry_unpin(fhc_cache *c, fhc_entry *e);

/* Counts one use of key that missed; true once key has been asked for
 * min_uses times (approximate: a small table, collisions forget). */
int fhc_cache_count_use(fhc_cache *c, const char *key);

/* Filling an entry is done without the lock (open, fstat, read), so a
 * change can be reported while it runs.  begin() registers the key; any
 * invalidation touching it marks the ticket dirty, and commit() then
 * refuses, so a fill never stores what a reported change made stale.
 * The caller must make sure changes are watched before it begins. */
fhc_ticket *fhc_cache_begin(fhc_cache *c, const char *key);
void fhc_cache_abandon(fhc_cache *c, fhc_ticket *t);

/* Result of commit. */
#define FHC_COMMIT_OK     0  /* stored; *out is the entry, pinned */
#define FHC_COMMIT_STALE  1  /* a change was reported during the fill */
#define FHC_COMMIT_FULL   2  /* limits reached and nothing could be evicted */
/* Consumes the ticket.  On anything but OK the payload stays the caller's.
 * handles: descriptors the payload holds (0 or 1); bytes: memory it holds. */
int fhc_cache_commit(fhc_cache *c, fhc_ticket *t, void *payload,
                     unsigned handles, uint64_t bytes, int64_t now,
                     fhc_entry **out);

/* Invalidation; each returns how many live entries were dropped. */
unsigned fhc_cache_invalidate(fhc_cache *c, const char *path);
/* dir itself and everything below it ("/a/b" drops "/a/b/x", not "/a/bc"). */
unsigned fhc_cache_invalidate_tree(fhc_cache *c, const char *dir);
unsigned fhc_cache_invalidate_all(fhc_cache *c);

/* Drops entries unused for idle_usec; returns how many. */
unsigned fhc_cache_expire(fhc_cache *c, int64_t now);

/* Drops entries that hold a descriptor and were unused for idle_usec
 * (in-memory entries stay); returns how many. */
unsigned fhc_cache_expire_handles(fhc_cache *c, int64_t now, int64_t idle_usec);

/* Out of descriptors (EMFILE/ENFILE): evict up to n least recently used
 * live entries that hold a descriptor; returns how many were evicted. */
unsigned fhc_cache_shed(fhc_cache *c, unsigned n);

void fhc_cache_stats(const fhc_cache *c, fhc_stats *out);

#endif
