/* Idle connections' unused pages given back (rp_trim.h).
 *
 * APR places a pool, and apr-util a bucket allocator, at the start of the
 * first memory node it takes for it, right after the node's header
 * (apr_memnode_t, public in apr_allocator.h); the node's first_avail is
 * where its next allocation goes and endp its end.  Everything between is
 * free space no pointer refers to, so its whole pages may be dropped.  The
 * header is checked first: with another layout (a debugging APR) nothing
 * is touched. */
#include "rp.h"
#include "rp_trim.h"

#include "apr_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

/* Nodes are a multiple of 4 KiB (APR's BOUNDARY_SIZE), 8 KiB at least;
 * one larger than this is not a connection's first node. */
#define RP_TRIM_NODE_MAX (1024 * 1024)

static apr_size_t page_size(void)
{
    static apr_size_t size;

    if (!size) {
        long n = sysconf(_SC_PAGESIZE);
        size = n > 0 ? (apr_size_t)n : 4096;
    }
    return size;
}

/* The node whose first object is `first`, or NULL if what lies before it
 * does not look like a node holding it. */
static apr_memnode_t *node_of(const void *first)
{
    apr_memnode_t *node = (apr_memnode_t *)((char *)first - APR_MEMNODE_T_SIZE);
    apr_size_t size = (apr_size_t)(node->endp - (char *)node);

    if (size < 8192 || size > RP_TRIM_NODE_MAX || size % 4096
        || node->first_avail <= (char *)first || node->first_avail > node->endp) {
        return NULL;
    }
    return node;
}

/* Drops the whole pages of node's free space; returns the bytes dropped. */
static apr_size_t drop_free_pages(const apr_memnode_t *node)
{
    apr_size_t pg = page_size();
    apr_uintptr_t from = ((apr_uintptr_t)node->first_avail + pg - 1) & ~(pg - 1);
    apr_uintptr_t to = (apr_uintptr_t)node->endp & ~(pg - 1);

    if (to <= from || madvise((void *)from, to - from, MADV_DONTNEED) != 0) {
        return 0;
    }
    return to - from;
}

static apr_size_t trim_first_node(const void *first)
{
    apr_memnode_t *node = first ? node_of(first) : NULL;

    return node ? drop_free_pages(node) : 0;
}

apr_size_t rp_trim_idle(conn_rec *c)
{
    return trim_first_node(c->pool) + trim_first_node(c->bucket_alloc);
}
