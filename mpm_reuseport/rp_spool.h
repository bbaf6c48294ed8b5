/* Request bodies read ahead beyond memory.
 *
 * The read-ahead holds up to 64 KiB of a request in memory; a body of
 * known length up to ReusePortBodyReadAhead bytes (default 1 MiB) is read
 * ahead too: in memory while it keeps arriving, and into the connection's
 * spool whenever it waits for the client (rp_inbuf.c spills it): one
 * unlinked temporary file in ReusePortBodyReadAheadDir (default: the
 * system's temporary directory), created when first needed.  httpd reads
 * those bytes back through buckets of the spool, so a slow upload waits
 * in the event loop, not in a worker, as a slow request head does.  The
 * file is closed once no bucket refers to its bytes, so an idle
 * connection holds none; a child keeps at most a
 * quarter of its open-files limit in spool files (more bodies are handed
 * over, logged once).
 *
 * Directive handlers and pre_config: rp_config.c; post_config:
 * mod_mpm_reuseport.c; the limit: rp_readahead.c.  The rest: rp_inbuf.c
 * only. */
#ifndef RP_SPOOL_H
#define RP_SPOOL_H

#include "httpd.h"
#include "http_config.h"
#include "apr_buckets.h"

typedef struct rp_spool rp_spool;

#define RP_SPOOL_DEFAULT_LIMIT (1024 * 1024)

/* ReusePortBodyReadAhead <bytes> (0: none beyond memory) and
 * ReusePortBodyReadAheadDir <directory>. */
const char *rp_spool_set_limit(cmd_parms *cmd, void *dummy, const char *arg);
const char *rp_spool_set_dir(cmd_parms *cmd, void *dummy, const char *arg);

/* Back to the defaults before the configuration is read. */
void rp_spool_pre_config(void);

/* Notes the smallest LimitRequestBody in the configuration: a body over
 * it is not read ahead, so httpd can refuse it (413) before it is sent,
 * as it does without read-ahead, to a client waiting for that answer. */
int rp_spool_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                         server_rec *s);

/* The longest body read ahead into a spool: ReusePortBodyReadAhead or the
 * smallest LimitRequestBody; 0 once spooling failed in this child (the
 * reason logged once). */
apr_uint64_t rp_spool_limit(void);

/* Writes the data buckets of bb to c's spool (*sp, created if NULL; its
 * file opened if it has none) and appends the bytes to held as spool
 * buckets; bb is emptied.  On failure bb and held are left as they were
 * and the reason is logged once. */
apr_status_t rp_spool_append(conn_rec *c, rp_spool **sp,
                             apr_bucket_brigade *bb, apr_bucket_brigade *held);

/* Whether b is a bucket of a spool. */
int rp_spool_bucket_is(const apr_bucket *b);

/* A spool bucket b becomes a heap bucket of its first 64 KiB (or all of
 * it), read in one go; the rest stays a spool bucket after it. */
apr_status_t rp_spool_bucket_load(apr_bucket *b);

#endif
