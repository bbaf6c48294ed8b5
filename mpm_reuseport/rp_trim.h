/* What an idle connection holds in memory, cut to what it uses.
 *
 * A keep-alive connection waiting for its next request holds two APR
 * memory nodes of 8 KiB: its pool's first node and its bucket allocator's.
 * It uses about one page of each, but nodes are recycled (the child's
 * shared allocator, the stock of cleared connection pools): a node that a
 * request or an earlier connection used whole keeps both pages resident
 * (10,000 idle connections held 11.9 KiB each; 8.1 with nodes fresh from
 * the kernel).  rp_trim_idle() gives the whole pages past what each of
 * the two nodes has handed out back to the kernel; a later allocation
 * there gets a zeroed page.
 *
 * Only rp_conn.c calls it, from the worker that parks the connection,
 * before the park (nobody else can allocate from the connection then). */
#ifndef RP_TRIM_H
#define RP_TRIM_H

#include "httpd.h"

/* Bytes given back (0 when the nodes do not look as expected). */
apr_size_t rp_trim_idle(conn_rec *c);

#endif
