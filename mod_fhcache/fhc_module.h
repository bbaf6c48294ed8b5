/* Shared declarations of the httpd side of mod_fhcache: configuration,
 * per-child state and the hooks implemented in the fhc_*.c files. */
#ifndef FHC_MODULE_H
#define FHC_MODULE_H

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "apr_thread_mutex.h"
#include "apr_thread_proc.h"

#include "fhc_cache.h"
#include "fhc_watchset.h"
#include "fhc_tally.h"
#include "fhc_os.h"
#include "mpmng_httpd.h"

extern module AP_MODULE_DECLARE_DATA fhcache_module;

#define FHC_UNSET (-1)

/* Server-wide settings (main server only: the cache is per child). */
typedef struct fhc_server_conf {
    int max_entries;
    int max_fds;            /* FHC_UNSET: derived from RLIMIT_NOFILE */
    int idle_secs;
    int min_uses;
    apr_off_t mem_file_max; /* bodies up to this size are kept in memory */
    apr_off_t mem_total;
    int revalidate_secs;    /* FHCacheRevalidate, or FHC_UNSET (see
                               fhc_conf_revalidate_every) */
    int notify;             /* 1: change notification when possible; 0: poll */
    int max_watches;
} fhc_server_conf;

/* Per <Directory>/<Location>/server: FHCache on|off. */
typedef struct fhc_dir_conf {
    int enabled;            /* FHC_UNSET, 0, 1 */
} fhc_dir_conf;

/* Response headers made once per file version (fhc_meta.c). */
typedef struct fhc_meta {
    char last_modified[APR_RFC822_DATE_LEN];
    char content_length[24];
    char etag[64];                  /* strong form; valid if etag_ok */
    etag_components_t etag_bits;    /* the FileETag setting it was made for */
    int etag_ok;
} fhc_meta;

/* What one cache entry holds (the core's opaque payload). */
typedef struct fhc_payload {
    apr_finfo_t finfo;      /* from the open handle; fname = path */
    fhc_meta meta;
    apr_os_file_t fh;       /* FHC_NO_FILE for in-memory entries */
    char *body;             /* in-memory copy, or NULL */
    int watched;            /* holds fhc_watchset uses for path */
    int poll;               /* revalidate by stat (no notification) */
    int recheck;            /* revalidate by stat (poll, or the platform
                               wants it for notified entries too) */
    apr_interval_time_t recheck_every;  /* 0: on every request */
    apr_time_t checked;     /* last stat revalidation */
    char path[1];
} fhc_payload;

/* Per-child state. */
typedef struct fhc_child {
    apr_thread_mutex_t *lock;    /* serializes cache + watchset */
    fhc_cache *cache;
    fhc_watchset *ws;            /* NULL: no notification (poll mode) */
    const fhc_watch_backend *be;
    fhc_watcher *watcher;
    apr_thread_t *thread;
    server_rec *s;
    const fhc_server_conf *conf;
    unsigned max_fds;
    uint64_t events;             /* notifications received */
    uint64_t overflows;          /* notifications lost (all dropped) */
    fhc_tally_slot *slot;        /* this child's row for server-status */
    apr_time_t published;        /* last copy into slot */
    unsigned polled;             /* live entries in poll mode */
    int fallback_all;            /* every entry is polled */
    apr_uint32_t logged_emfile, logged_watch_limit, logged_fs; /* mpmng_once */
} fhc_child;

/* The child's cache; NULL in the parent or when the cache is off. */
extern fhc_child *fhc_the_child;
/* Some scope says FHCache on (set while reading the configuration). */
extern int fhc_any_enabled;

/* fhc_child.c */
void fhc_child_init(apr_pool_t *pchild, server_rec *s);
void fhc_lock(fhc_child *ch);
void fhc_unlock(fhc_child *ch);
/* Expiry and counters, about once a second; caller holds the lock. */
void fhc_housekeeping(fhc_child *ch, apr_time_t now);
/* Applies every change notification queued by now; caller does not hold
 * the lock.  A lookup calls it first, so a change whose system call
 * returned before the request arrived is never answered from the old
 * entry. */
void fhc_catch_up(fhc_child *ch);

/* fhc_serve.c */
apr_status_t fhc_dirwalk_stat(apr_finfo_t *finfo, request_rec *r,
                              apr_int32_t wanted);
int fhc_handler(request_rec *r);

/* fhc_fill.c */
fhc_entry *fhc_fill(fhc_child *ch, request_rec *r);
void fhc_payload_release(void *payload, void *ctx);

/* fhc_meta.c */
/* FileETag components in effect for a scope. */
etag_components_t fhc_etag_bits(const core_dir_config *d);
/* At fill: the headers for fi as httpd would make them for r. */
void fhc_meta_make(fhc_meta *m, request_rec *r, apr_finfo_t *fi);
/* Per response: Last-Modified, ETag, Accept-Ranges, Content-Length for
 * r->finfo, from m where httpd's answer would be the same. */
void fhc_meta_headers(request_rec *r, const fhc_meta *m);

/* fhc_bucket.c */
/* Takes over one pin of e that the caller holds; released with the last
 * copy of the bucket. */
apr_bucket *fhc_bucket_create(fhc_child *ch, fhc_entry *e, const char *base,
                              apr_size_t len, apr_bucket_alloc_t *list);
/* A body of len bytes in the cached descriptor fh, read at explicit
 * offsets (fhc_os_read_at), read_size bytes a read (0: 16 KiB); never
 * moves the descriptor's shared file offset.  sendfile_pool NULL: takes
 * over one pin of e, as above.  Else the request's pool, which must keep
 * e pinned: for sendfile, the bucket becomes a file bucket over fh right
 * above core (fhc_sendfile_filter_add). */
apr_bucket *fhc_fd_bucket_create(fhc_child *ch, fhc_entry *e, apr_os_file_t fh,
                                 apr_size_t len, apr_size_t read_size,
                                 apr_pool_t *sendfile_pool,
                                 apr_bucket_alloc_t *list);
/* register_hooks: the filter that does that. */
void fhc_sendfile_filter_register(void);
/* Once per connection that has a sendfile bucket of ours. */
void fhc_sendfile_filter_add(request_rec *r);

/* fhc_status.c */
int fhc_status_hook(request_rec *r, int flags);

/* fhc_publish.c */
/* post_config: the table children publish their counters in. */
void fhc_tally_setup(apr_pool_t *pconf, server_rec *s);
/* child_init: claim this child's row (ch->slot; NULL without a row). */
void fhc_tally_join(fhc_child *ch);
/* Copy the counters to the row if a second has passed (or force);
 * caller holds the child lock. */
void fhc_tally_update(fhc_child *ch, apr_time_t now, int force);
/* Last copy, and the row's cumulative counters folded into the totals;
 * caller holds the child lock. */
void fhc_tally_leave(fhc_child *ch);
/* The live counters and the mode's name; caller holds the child lock. */
void fhc_tally_read(fhc_child *ch, uint64_t v[FHC_F_COUNT], const char **mode);
/* This generation's table; NULL without shared memory. */
const fhc_tally *fhc_tally_table(void);

/* fhc_stopguard.c: a workaround for a stop race in mpm_event/worker;
 * register says whether httpd runs the child_stopping hook (2.4.49+) */
void fhc_stopguard_register(int has_child_stopping);
void fhc_stopguard_child_init(apr_pool_t *pchild, server_rec *s);
int fhc_stopguard_pre_connection(conn_rec *c, void *csd);
void fhc_stopguard_child_stopping(apr_pool_t *pchild, int graceful);

/* fhc_config.c */
extern const command_rec fhc_cmds[];
void *fhc_create_server_conf(apr_pool_t *p, server_rec *s);
void *fhc_create_dir_conf(apr_pool_t *p, char *dir);
void *fhc_merge_dir_conf(apr_pool_t *p, void *base, void *add);
int fhc_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp);
int fhc_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                    server_rec *s);
/* Limits for the core from the resolved configuration. */
void fhc_conf_limits(const fhc_server_conf *c, unsigned max_fds,
                     fhc_limits *out);
/* Descriptors the cache may hold: the directive, capped by RLIMIT_NOFILE. */
unsigned fhc_conf_max_fds(const fhc_server_conf *c);
/* How often an entry is revalidated by stat: FHCacheRevalidate if set;
 * unset, an entry no change notification watches on every request (never
 * stale), a watched one the platform rechecks anyway (Windows) every 2 s. */
apr_interval_time_t fhc_conf_revalidate_every(const fhc_server_conf *c,
                                              int watched);
/* The same in words, for log messages ("on every request", "every 2 s"). */
const char *fhc_conf_revalidate_words(const fhc_server_conf *c, int watched,
                                      apr_pool_t *p);

#endif
