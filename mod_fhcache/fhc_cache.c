/* The file-handle cache core (see fhc_cache.h).  A chained hash table over
 * live entries, one doubly linked LRU list (head = most recently used), and
 * a short list of fills in progress.  Entries leave the table when dropped;
 * their payload is released once no request pins them any more. */
#include "fhc_cache.h"

#include <stdlib.h>
#include <string.h>

#define USE_SLOTS 1024          /* min-uses table; power of two */

struct fhc_entry {
    fhc_entry *hnext;           /* hash chain (live only) */
    fhc_entry *lprev, *lnext;   /* LRU list (live only) */
    uint64_t hash;
    void *payload;
    uint64_t bytes;
    unsigned handles;
    unsigned pins;
    int live;
    int64_t last_used;
    size_t keylen;
    char key[];                 /* NUL-terminated */
};

struct fhc_ticket {
    fhc_ticket *next;
    int dirty;
    size_t keylen;
    char key[];
};

typedef struct use_slot {
    uint64_t hash;
    unsigned count;
} use_slot;

struct fhc_cache {
    fhc_limits lim;
    fhc_release_fn release;
    void *release_ctx;
    fhc_entry **table;
    size_t mask;                /* table size - 1 */
    fhc_entry *lru_head, *lru_tail;
    fhc_ticket *pending;
    use_slot uses[USE_SLOTS];
    fhc_stats st;
};

/* FNV-1a: small, good enough for paths, no dependencies. */
static uint64_t hash_key(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    size_t i;
    for (i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

fhc_cache *fhc_cache_create(const fhc_limits *limits,
                            fhc_release_fn release, void *release_ctx)
{
    fhc_cache *c;
    size_t size = 16;

    if (!limits || limits->max_entries == 0) {
        return NULL;
    }
    /* Load factor <= 0.5 at the entry limit. */
    while (size < (size_t)limits->max_entries * 2) {
        size <<= 1;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    c->table = calloc(size, sizeof(*c->table));
    if (!c->table) {
        free(c);
        return NULL;
    }
    c->lim = *limits;
    if (c->lim.min_uses == 0) {
        c->lim.min_uses = 1;
    }
    c->mask = size - 1;
    c->release = release;
    c->release_ctx = release_ctx;
    return c;
}

/* ---- lists ---------------------------------------------------------- */

static void lru_unlink(fhc_cache *c, fhc_entry *e)
{
    if (e->lprev) {
        e->lprev->lnext = e->lnext;
    }
    else {
        c->lru_head = e->lnext;
    }
    if (e->lnext) {
        e->lnext->lprev = e->lprev;
    }
    else {
        c->lru_tail = e->lprev;
    }
    e->lprev = e->lnext = NULL;
}

static void lru_push_front(fhc_cache *c, fhc_entry *e)
{
    e->lprev = NULL;
    e->lnext = c->lru_head;
    if (c->lru_head) {
        c->lru_head->lprev = e;
    }
    c->lru_head = e;
    if (!c->lru_tail) {
        c->lru_tail = e;
    }
}

static fhc_entry **chain_of(fhc_cache *c, uint64_t hash)
{
    return &c->table[hash & c->mask];
}

static fhc_entry *find_live(fhc_cache *c, const char *key, size_t len,
                            uint64_t hash)
{
    fhc_entry *e;
    for (e = *chain_of(c, hash); e; e = e->hnext) {
        if (e->hash == hash && e->keylen == len && memcmp(e->key, key, len) == 0) {
            return e;
        }
    }
    return NULL;
}

/* ---- lifetime ------------------------------------------------------- */

/* The payload goes once the entry is neither cached nor used. */
static void maybe_free(fhc_cache *c, fhc_entry *e)
{
    if (e->live || e->pins) {
        return;
    }
    c->st.handles -= e->handles;
    c->st.bytes -= e->bytes;
    if (c->release) {
        c->release(e->payload, c->release_ctx);
    }
    free(e);
}

/* Take a live entry out of the table and the LRU list. */
static void drop(fhc_cache *c, fhc_entry *e)
{
    fhc_entry **pp = chain_of(c, e->hash);
    while (*pp != e) {
        pp = &(*pp)->hnext;
    }
    *pp = e->hnext;
    e->hnext = NULL;
    lru_unlink(c, e);
    e->live = 0;
    c->st.entries--;
    if (e->pins) {
        c->st.dead_pinned++;
    }
    maybe_free(c, e);
}

void fhc_entry_unpin(fhc_cache *c, fhc_entry *e)
{
    if (--e->pins == 0 && !e->live) {
        c->st.dead_pinned--;
        maybe_free(c, e);
    }
}

void *fhc_entry_payload(const fhc_entry *e)
{
    return e->payload;
}

const char *fhc_entry_key(const fhc_entry *e)
{
    return e->key;
}

int fhc_entry_live(const fhc_entry *e)
{
    return e->live;
}

void fhc_cache_destroy(fhc_cache *c)
{
    fhc_ticket *t, *tn;
    if (!c) {
        return;
    }
    while (c->lru_head) {
        drop(c, c->lru_head);
    }
    for (t = c->pending; t; t = tn) {
        tn = t->next;
        free(t);
    }
    free(c->table);
    /* Pinned entries hold c for their unpin; the module destroys the
     * cache only when no request can be running (child exit). */
    free(c);
}

/* ---- lookup --------------------------------------------------------- */

fhc_entry *fhc_cache_lookup(fhc_cache *c, const char *key, int64_t now)
{
    size_t len = strlen(key);
    fhc_entry *e = find_live(c, key, len, hash_key(key, len));

    if (!e) {
        c->st.misses++;
        return NULL;
    }
    c->st.hits++;
    e->last_used = now;
    if (c->lru_head != e) {
        lru_unlink(c, e);
        lru_push_front(c, e);
    }
    e->pins++;
    return e;
}

int fhc_cache_count_use(fhc_cache *c, const char *key)
{
    uint64_t h = hash_key(key, strlen(key));
    use_slot *s = &c->uses[h & (USE_SLOTS - 1)];

    if (c->lim.min_uses <= 1) {
        return 1;
    }
    if (s->hash != h) {
        s->hash = h;
        s->count = 0;
    }
    if (++s->count >= c->lim.min_uses) {
        s->count = 0;
        return 1;
    }
    return 0;
}

/* ---- filling -------------------------------------------------------- */

fhc_ticket *fhc_cache_begin(fhc_cache *c, const char *key)
{
    size_t len = strlen(key);
    fhc_ticket *t = malloc(sizeof(*t) + len + 1);

    if (!t) {
        return NULL;
    }
    memcpy(t->key, key, len + 1);
    t->keylen = len;
    t->dirty = 0;
    t->next = c->pending;
    c->pending = t;
    c->st.pending++;
    return t;
}

static void ticket_unlink(fhc_cache *c, fhc_ticket *t)
{
    fhc_ticket **pp = &c->pending;
    while (*pp && *pp != t) {
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = t->next;
        c->st.pending--;
    }
}

void fhc_cache_abandon(fhc_cache *c, fhc_ticket *t)
{
    if (t) {
        ticket_unlink(c, t);
        free(t);
    }
}

/* Evict least recently used, unpinned-or-not, live entries until `fits`
 * says the new entry fits.  Pinned entries can be dropped from the table
 * (they die when unpinned) but their descriptors and bytes stay counted,
 * so only entries whose removal actually frees something are useful. */
static int fits(const fhc_cache *c, unsigned handles, uint64_t bytes)
{
    return c->st.entries + 1 <= c->lim.max_entries
        && c->st.handles + handles <= c->lim.max_handles
        && c->st.bytes + bytes <= c->lim.max_bytes;
}

static int make_room(fhc_cache *c, unsigned handles, uint64_t bytes)
{
    fhc_entry *e = c->lru_tail;

    while (!fits(c, handles, bytes) && e) {
        fhc_entry *prev = e->lprev;
        drop(c, e);
        c->st.evictions++;
        e = prev;
    }
    return fits(c, handles, bytes);
}

int fhc_cache_commit(fhc_cache *c, fhc_ticket *t, void *payload,
                     unsigned handles, uint64_t bytes, int64_t now,
                     fhc_entry **out)
{
    fhc_entry *e, *old;
    uint64_t h;

    *out = NULL;
    ticket_unlink(c, t);
    if (t->dirty) {
        c->st.fill_races++;
        free(t);
        return FHC_COMMIT_STALE;
    }
    h = hash_key(t->key, t->keylen);
    /* Another thread filled the same key meanwhile: the newer fill wins
     * (both saw the file after every reported change). */
    old = find_live(c, t->key, t->keylen, h);
    if (old) {
        drop(c, old);
    }
    if (handles > c->lim.max_handles || bytes > c->lim.max_bytes
        || !make_room(c, handles, bytes)) {
        free(t);
        return FHC_COMMIT_FULL;
    }
    e = malloc(sizeof(*e) + t->keylen + 1);
    if (!e) {
        free(t);
        return FHC_COMMIT_FULL;
    }
    memcpy(e->key, t->key, t->keylen + 1);
    e->keylen = t->keylen;
    free(t);
    e->hash = h;
    e->payload = payload;
    e->bytes = bytes;
    e->handles = handles;
    e->pins = 1;
    e->live = 1;
    e->last_used = now;
    e->hnext = *chain_of(c, h);
    *chain_of(c, h) = e;
    lru_push_front(c, e);
    c->st.entries++;
    c->st.handles += handles;
    c->st.bytes += bytes;
    c->st.inserts++;
    *out = e;
    return FHC_COMMIT_OK;
}

/* ---- invalidation --------------------------------------------------- */

/* Is key `dir` itself or below it? */
static int under(const char *key, size_t keylen, const char *dir, size_t dirlen)
{
    if (dirlen == 1 && dir[0] == '/') {
        return 1;
    }
    if (keylen < dirlen || memcmp(key, dir, dirlen) != 0) {
        return 0;
    }
    return keylen == dirlen || key[dirlen] == '/';
}

static void dirty_pending(fhc_cache *c, const char *dir, size_t len, int tree)
{
    fhc_ticket *t;
    for (t = c->pending; t; t = t->next) {
        if (tree ? under(t->key, t->keylen, dir, len)
                 : (t->keylen == len && memcmp(t->key, dir, len) == 0)) {
            t->dirty = 1;
        }
    }
}

unsigned fhc_cache_invalidate(fhc_cache *c, const char *path)
{
    size_t len = strlen(path);
    fhc_entry *e = find_live(c, path, len, hash_key(path, len));

    dirty_pending(c, path, len, 0);
    if (!e) {
        return 0;
    }
    drop(c, e);
    c->st.invalidations++;
    return 1;
}

unsigned fhc_cache_invalidate_tree(fhc_cache *c, const char *dir)
{
    size_t len = strlen(dir);
    fhc_entry *e = c->lru_head;
    unsigned n = 0;

    /* Trailing slashes do not change which tree is meant. */
    while (len > 1 && dir[len - 1] == '/') {
        len--;
    }
    dirty_pending(c, dir, len, 1);
    while (e) {
        fhc_entry *next = e->lnext;
        if (under(e->key, e->keylen, dir, len)) {
            drop(c, e);
            n++;
        }
        e = next;
    }
    c->st.invalidations += n;
    return n;
}

unsigned fhc_cache_invalidate_all(fhc_cache *c)
{
    unsigned n = fhc_cache_invalidate_tree(c, "/");
    c->st.flushes++;
    return n;
}

unsigned fhc_cache_expire(fhc_cache *c, int64_t now)
{
    unsigned n = 0;

    if (c->lim.idle_usec <= 0) {
        return 0;
    }
    while (c->lru_tail && now - c->lru_tail->last_used >= c->lim.idle_usec) {
        drop(c, c->lru_tail);
        n++;
    }
    c->st.expirations += n;
    return n;
}

unsigned fhc_cache_expire_handles(fhc_cache *c, int64_t now, int64_t idle_usec)
{
    fhc_entry *e = c->lru_tail;
    unsigned n = 0;

    /* The list is in use order: stop at the first entry used recently. */
    while (e && now - e->last_used >= idle_usec) {
        fhc_entry *prev = e->lprev;
        if (e->handles) {
            drop(c, e);
            n++;
        }
        e = prev;
    }
    c->st.expirations += n;
    return n;
}

unsigned fhc_cache_shed(fhc_cache *c, unsigned n)
{
    fhc_entry *e = c->lru_tail;
    unsigned done = 0;

    while (e && done < n) {
        fhc_entry *prev = e->lprev;
        if (e->handles) {
            drop(c, e);
            done++;
        }
        e = prev;
    }
    c->st.evictions += done;
    return done;
}

void fhc_cache_stats(const fhc_cache *c, fhc_stats *out)
{
    *out = c->st;
}
