/* A connection's input for the read-ahead: see rp_inbuf.h. */
#include "rp.h"
#include "rp_inbuf.h"
#include "rp_spool.h"
#include "rp_stock.h"

#include "apr_atomic.h"
#include "apr_buckets.h"
#include "apr_optional.h"
#include "http_connection.h"
#include "http_core.h"
#include "util_filter.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

/* A heap buffer wasting more than this is copied down while it waits. */
#define RP_IN_SLACK 1024

/* A long body keeps arriving: this much of it may wait in memory before
 * it goes to the spool (a body up to the default ReusePortBodyReadAhead
 * that comes without a pause never touches the file). */
#define RP_IN_MEMORY_MAX (1024 * 1024)

/* One read of a body longer than memory holds: larger reads, fewer
 * calls.  Every read but the last of a turn fills its buffer (a shorter
 * one means the socket is empty: the turn ends, the bytes are spilled). */
#define RP_IN_LARGE_READ (64 * 1024)

/* A fast client's body often waits a moment (the worker read faster than
 * the client sent): after a turn that filled a whole read (a slow client
 * never does), the body may wait in memory, as long as the child's bodies
 * waiting so stay within RP_IN_PARKED_MAX.  Spilling 1 MB to a new file
 * and back cost up to 2.2x the server CPU of a 1 MB upload.  A slow
 * client's body goes to the spool at every wait. */
#define RP_IN_FAST_TURN RP_IN_LARGE_READ
#define RP_IN_PARKED_MAX (32 * 1024 * 1024)

static volatile apr_uint32_t parked_bytes;  /* of this child */

struct rp_inbuf {
    conn_rec *c;
    ap_filter_t *f;
    int fd;
    apr_bucket_brigade *held;   /* read ahead, not yet read by httpd */
    apr_bucket_brigade *tmp;
    rp_spool *spool;            /* bodies beyond memory; NULL until needed */
    int handshaken;             /* our handshake call returned */
    int core_only;              /* only core (and counting) below us */
    int core_gave_up;           /* core handed its socket away */
    int core_started;           /* core has read this connection once */
    int core_holds;             /* core may hold bytes it read itself */
    int counted;                /* mod_logio counts this connection */
    int drained;                /* the socket had no more at our last
                                   read, and nothing read below since */
    int timed_out;              /* reads that would wait time out */
    apr_size_t unspilled;       /* bytes of a long body in memory */
    apr_size_t turn;            /* of them, read since the last wait */
    apr_uint32_t parked;        /* of them, counted in parked_bytes */
    apr_status_t err;           /* of the last direct read that failed */
};

static ap_filter_rec_t *inbuf_filter;
static ap_filter_rec_t *reqtimeout_filter, *logio_filter;
static APR_OPTIONAL_FN_TYPE(ap_logio_add_bytes_in) *logio_add_bytes_in;

/* ---- reading below ------------------------------------------------------- */

/* mod_reqtimeout's clocks start in httpd's pre_read_request and
 * post_read_request hooks, when httpd reads the request (later); what its
 * filter would make of our reads now is the previous request's clock.  So
 * the read-ahead reads past it (and keeps the clocks itself). */
static apr_status_t read_past_reqtimeout(rp_inbuf *in, apr_bucket_brigade *bb,
                                         ap_input_mode_t mode, apr_off_t n)
{
    ap_filter_t *before = NULL, *skipped = NULL;
    apr_status_t rv;

    if (reqtimeout_filter) {
        for (before = in->f; before->next; before = before->next) {
            if (before->next->frec == reqtimeout_filter) {
                skipped = before->next;
                before->next = skipped->next;
                break;
            }
        }
    }
    rv = ap_get_brigade(in->f->next, bb, mode, APR_NONBLOCK_READ, n);
    if (skipped) {
        before->next = skipped;
    }
    return rv;
}

void rp_inbuf_look_below(rp_inbuf *in)
{
    ap_filter_t *f;

    in->core_only = in->counted = 0;
    for (f = in->f->next; f; f = f->next) {
        if (f->frec == ap_core_input_filter_handle) {
            in->core_only = in->fd >= 0 && !in->core_gave_up;
            return;
        }
        if (f->frec == logio_filter) {
            in->counted = 1;
        }
        else if (f->frec != reqtimeout_filter) {
            return;
        }
    }
}

int rp_inbuf_core_only(const rp_inbuf *in)
{
    return in->core_only;
}

/* After httpd read past us into core: may core hold bytes it read and did
 * not hand up?  Core hands up all it has when it gives fewer than asked
 * (READBYTES), and holds nothing after finding nothing. */
static void note_core_read(rp_inbuf *in, ap_input_mode_t mode, apr_off_t asked,
                           apr_bucket_brigade *bb, apr_status_t rv)
{
    apr_off_t len = 0;

    in->core_started = 1;
    if (mode == AP_MODE_EXHAUSTIVE) {
        in->core_only = 0;      /* core gave up its socket: leave it be */
        in->core_gave_up = 1;
        return;
    }
    if (rv != APR_SUCCESS || apr_brigade_length(bb, 0, &len) != APR_SUCCESS) {
        in->core_holds = rv == APR_SUCCESS || !APR_STATUS_IS_EAGAIN(rv);
        return;
    }
    in->core_holds = len > 0 && (mode != AP_MODE_READBYTES || len >= asked);
}

/* Buffers of large reads kept for reuse, shared by the child's threads:
 * a long body lives in memory until httpd has read it, so several at once
 * outgrow what the connections' allocator keeps (MaxMemFree), and fresh
 * pages cost their faults (81 per 1 MB body at worst: 1.6x the CPU). */
#define RP_IN_BUFS_KEPT 128     /* 8 MiB */
static rp_stock *large_bufs;

static char *large_buf_take(void)
{
    char *buf = rp_stock_take(large_bufs);

    return buf ? buf : malloc(RP_IN_LARGE_READ);
}

static void large_buf_give(void *buf)
{
    if (!rp_stock_give(large_bufs, buf)) {
        free(buf);
    }
}

/* One recv() of up to size bytes (core's buffer size, or a large read for
 * a long body), as a heap bucket at bb's end. */
static rp_in_read recv_direct(rp_inbuf *in, apr_bucket_brigade *bb,
                              apr_size_t size, apr_size_t *got)
{
    apr_bucket_alloc_t *ba = in->c->bucket_alloc;
    int large = size == RP_IN_LARGE_READ;
    char *buf = large ? large_buf_take() : apr_bucket_alloc(size, ba);
    void (*give)(void *) = large ? large_buf_give : apr_bucket_free;
    ssize_t n;

    if (!buf) {
        in->err = APR_ENOMEM;
        return RP_IN_ERROR;
    }
    do {
        n = recv(in->fd, buf, size, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        in->err = n < 0 ? APR_FROM_OS_ERROR(errno) : APR_SUCCESS;
        give(buf);
        return n == 0 ? RP_IN_EOF
               : APR_STATUS_IS_EAGAIN(in->err) ? RP_IN_NONE : RP_IN_ERROR;
    }
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_heap_create(buf, (apr_size_t)n, give, ba));
    if (in->counted && logio_add_bytes_in) {
        logio_add_bytes_in(in->c, n);
    }
    *got = (apr_size_t)n;
    return RP_IN_DATA;
}

/* Keep the data: metadata goes (an end of stream shows as eof: httpd finds
 * it again), data another filter may reuse (TLS returns its own buffer) is
 * copied. */
static apr_status_t keep_data_only(rp_inbuf *in, apr_bucket_brigade *bb,
                                   int *eof)
{
    apr_bucket *b = APR_BRIGADE_FIRST(bb);
    apr_status_t rv;

    while (b != APR_BRIGADE_SENTINEL(bb)) {
        apr_bucket *next = APR_BUCKET_NEXT(b);
        if (APR_BUCKET_IS_METADATA(b)) {
            *eof |= APR_BUCKET_IS_EOS(b);
            apr_bucket_delete(b);
        }
        else if ((rv = apr_bucket_setaside(b, in->c->pool)) != APR_SUCCESS) {
            return rv;
        }
        b = next;
    }
    return APR_SUCCESS;
}

static int ends_line(apr_bucket_brigade *bb)
{
    apr_bucket *b = APR_BRIGADE_LAST(bb);
    const char *s;
    apr_size_t len;

    return b != APR_BRIGADE_SENTINEL(bb)
           && apr_bucket_read(b, &s, &len, APR_NONBLOCK_READ) == APR_SUCCESS
           && len && s[len - 1] == '\n';
}

/* One read through the filters below: a line (core, the head of a
 * request: core reads the socket once and hands lines from what it got,
 * without trying for more), or up to a buffer (TLS decrypts; a body). */
static rp_in_read read_filtered(rp_inbuf *in, apr_bucket_brigade *bb,
                                int line, apr_size_t size, apr_size_t *got)
{
    ap_input_mode_t mode = line ? AP_MODE_GETLINE : AP_MODE_READBYTES;
    apr_status_t rv;
    apr_off_t len = 0;
    int eof = 0;

    rv = read_past_reqtimeout(in, bb, mode, (apr_off_t)size);
    if (rv == APR_SUCCESS) {
        rv = keep_data_only(in, bb, &eof);
    }
    if (rv != APR_SUCCESS) {
        apr_brigade_cleanup(bb);
        return APR_STATUS_IS_EAGAIN(rv) ? RP_IN_NONE_MAYBE
               : APR_STATUS_IS_EOF(rv) ? RP_IN_EOF : RP_IN_ERROR;
    }
    apr_brigade_length(bb, 1, &len);
    *got = (apr_size_t)len;
    if (in->core_only) {
        /* Core handed up all it had when it gave fewer bytes than asked,
         * or a line without its end (short of core's line limit); after a
         * whole line it may hold more. */
        in->core_started = 1;
        in->core_holds = line ? *got >= HUGE_STRING_LEN || ends_line(bb)
                              : *got >= size;
    }
    return *got ? RP_IN_DATA : eof ? RP_IN_EOF : RP_IN_NONE_MAYBE;
}

static void feed_brigade(apr_bucket_brigade *bb, rp_in_feed *feed, void *baton)
{
    apr_bucket *b;

    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = APR_BUCKET_NEXT(b)) {
        const char *s;
        apr_size_t len;
        if (apr_bucket_read(b, &s, &len, APR_NONBLOCK_READ) == APR_SUCCESS && len) {
            feed(baton, s, len);
        }
    }
}

/* The body no longer waits in memory (read on, handed over, closed). */
static apr_status_t unpark(void *data)
{
    rp_inbuf *in = data;

    if (in->parked) {
        apr_atomic_sub32(&parked_bytes, in->parked);
        in->parked = 0;
    }
    return APR_SUCCESS;
}

/* After a fast turn, within the child's budget: the body waits in memory. */
static int park_in_memory(rp_inbuf *in)
{
    apr_uint32_t n = (apr_uint32_t)in->unspilled;

    if (in->turn < RP_IN_FAST_TURN) {
        return 0;
    }
    if (apr_atomic_add32(&parked_bytes, n) + n > RP_IN_PARKED_MAX) {
        apr_atomic_sub32(&parked_bytes, n);     /* over the budget */
        return 0;
    }
    in->parked = n;
    return 1;
}

/* The first spool bucket held, or the end: what is in memory lies
 * before it. */
static apr_bucket *memory_end(apr_bucket_brigade *held)
{
    apr_bucket *b = APR_BRIGADE_FIRST(held);

    while (b != APR_BRIGADE_SENTINEL(held) && !rp_spool_bucket_is(b)) {
        b = APR_BUCKET_NEXT(b);
    }
    return b;
}

/* The bytes in memory after the last spool bucket (all of them before the
 * first spill) go to the spool: a body that waits holds no more memory
 * than a read.  A body that arrives while it is read never touches the
 * file (most uploads from fast clients). */
static apr_status_t spill(rp_inbuf *in)
{
    apr_bucket *b = APR_BRIGADE_LAST(in->held);
    apr_status_t rv;

    while (b != APR_BRIGADE_SENTINEL(in->held) && !rp_spool_bucket_is(b)) {
        b = APR_BUCKET_PREV(b);
    }
    apr_brigade_split_ex(in->held, APR_BUCKET_NEXT(b), in->tmp);
    rv = APR_BRIGADE_EMPTY(in->tmp) ? APR_SUCCESS
         : rp_spool_append(in->c, &in->spool, in->tmp, in->held);
    APR_BRIGADE_CONCAT(in->held, in->tmp);  /* empty, unless it failed */
    if (rv == APR_SUCCESS) {
        in->unspilled = 0;
    }
    return rv;
}

rp_in_read rp_inbuf_read(rp_inbuf *in, rp_in_for what, rp_in_feed *feed,
                         void *baton, apr_size_t *got, int *drained)
{
    int head = what == RP_IN_HEAD;
    apr_size_t size = what == RP_IN_BODY_SPOOLED ? RP_IN_LARGE_READ : APR_BUCKET_BUFF_SIZE;
    /* Directly only once core has been called: httpd, refusing a request,
     * cleans up core's buffer, which exists from core's first call on. */
    int direct = in->core_only && in->core_started && !in->core_holds;
    rp_in_read r;

    unpark(in);

    *got = 0;
    in->drained = 0;
    r = direct ? recv_direct(in, in->tmp, size, got)
               : read_filtered(in, in->tmp, head && in->core_only, size, got);
    if (r != RP_IN_DATA) {
        in->drained = r == RP_IN_NONE;
        *drained = in->drained;
        return r;
    }
    /* A recv() that did not fill its buffer emptied the socket; core that
     * handed up all it had tried once more, which may have met the end of
     * the stream (its next read tells). */
    *drained = direct && *got < size;
    in->drained = in->core_only && !in->core_holds;
    feed_brigade(in->tmp, feed, baton);
    APR_BRIGADE_CONCAT(in->held, in->tmp);
    if (what != RP_IN_BODY_SPOOLED) {
        in->unspilled = in->turn = 0;
    }
    else if ((in->turn += *got, in->unspilled += *got) > RP_IN_MEMORY_MAX
             && spill(in) != APR_SUCCESS) {
        return RP_IN_DATA_UNSPOOLED;
    }
    return RP_IN_DATA;
}

void rp_inbuf_feed_held(rp_inbuf *in, rp_in_feed *feed, void *baton)
{
    feed_brigade(in->held, feed, baton);
}

void rp_inbuf_set_drained(rp_inbuf *in)
{
    in->drained = 1;
}

apr_status_t rp_inbuf_handshake(rp_inbuf *in)
{
    apr_status_t rv = read_past_reqtimeout(in, in->tmp, AP_MODE_INIT, 0);

    apr_brigade_cleanup(in->tmp);
    in->handshaken = !APR_STATUS_IS_EAGAIN(rv);
    return rv;
}

apr_status_t rp_inbuf_compact(rp_inbuf *in, int spool)
{
    apr_bucket *b = APR_BRIGADE_FIRST(in->held), *end;
    apr_off_t len;
    apr_size_t n;
    char *buf;

    unpark(in);
    if (spool) {
        int keep = park_in_memory(in);
        in->turn = 0;
        return keep ? APR_SUCCESS : spill(in);
    }
    end = memory_end(in->held);
    if (b == end) {
        return APR_SUCCESS;
    }
    if (APR_BUCKET_NEXT(b) == end && APR_BUCKET_IS_HEAP(b)
        && ((apr_bucket_heap *)b->data)->alloc_len - b->length <= RP_IN_SLACK) {
        return APR_SUCCESS;
    }
    /* The spooled part waits in tmp (empty between reads) meanwhile. */
    apr_brigade_split_ex(in->held, end, in->tmp);
    if (apr_brigade_length(in->held, 1, &len) == APR_SUCCESS
        && (buf = malloc(len ? (apr_size_t)len : 1))) {
        n = (apr_size_t)len;
        if (apr_brigade_flatten(in->held, buf, &n) == APR_SUCCESS) {
            apr_brigade_cleanup(in->held);
            APR_BRIGADE_INSERT_TAIL(in->held, apr_bucket_heap_create(
                                        buf, n, free, in->c->bucket_alloc));
        }
        else {
            free(buf);          /* as it is, then */
        }
    }
    APR_BRIGADE_CONCAT(in->held, in->tmp);
    return APR_SUCCESS;
}

void rp_inbuf_time_out(rp_inbuf *in, int on)
{
    unpark(in);
    in->timed_out = on;
}

/* ---- the filter: httpd reads what was read ahead first ------------------ */

static void move_until(apr_bucket_brigade *to, apr_bucket_brigade *from,
                       apr_bucket *end)
{
    while (APR_BRIGADE_FIRST(from) != end) {
        apr_bucket *b = APR_BRIGADE_FIRST(from);
        APR_BUCKET_REMOVE(b);
        APR_BRIGADE_INSERT_TAIL(to, b);
    }
}

static apr_status_t copy_until(apr_bucket_brigade *to, apr_bucket_brigade *from,
                               apr_bucket *end)
{
    apr_bucket *b, *copy;
    apr_status_t rv;

    for (b = APR_BRIGADE_FIRST(from); b != end; b = APR_BUCKET_NEXT(b)) {
        if ((rv = apr_bucket_copy(b, &copy)) != APR_SUCCESS) {
            return rv;
        }
        APR_BRIGADE_INSERT_TAIL(to, copy);
    }
    return APR_SUCCESS;
}

static void eat_crlf(apr_bucket_brigade *held)
{
    while (!APR_BRIGADE_EMPTY(held)) {
        apr_bucket *b = APR_BRIGADE_FIRST(held);
        const char *s;
        apr_size_t len, i = 0;
        if (apr_bucket_read(b, &s, &len, APR_NONBLOCK_READ) != APR_SUCCESS) {
            return;
        }
        while (i < len && (s[i] == '\r' || s[i] == '\n')) {
            i++;
        }
        if (i < len) {
            apr_bucket_split(b, i);
            apr_bucket_delete(b);
            return;
        }
        apr_bucket_delete(b);
    }
}

/* Nothing left to serve (reading a line to its very end leaves an empty
 * bucket behind: gone). */
static int held_empty(rp_inbuf *in)
{
    while (!APR_BRIGADE_EMPTY(in->held)
           && APR_BRIGADE_FIRST(in->held)->length == 0) {
        apr_bucket_delete(APR_BRIGADE_FIRST(in->held));
    }
    return APR_BRIGADE_EMPTY(in->held);
}

/* Serve from the bytes held; they are all here, so no mode waits. */
static apr_status_t serve_held(ap_filter_t *f, rp_inbuf *in,
                               apr_bucket_brigade *bb, ap_input_mode_t mode,
                               apr_read_type_e block, apr_off_t n)
{
    apr_bucket *end;
    apr_status_t rv;

    switch (mode) {
    case AP_MODE_GETLINE:
        return apr_brigade_split_line(bb, in->held, APR_NONBLOCK_READ,
                                      HUGE_STRING_LEN);
    case AP_MODE_READBYTES:
    case AP_MODE_SPECULATIVE:
        if (rp_spool_bucket_is(APR_BRIGADE_FIRST(in->held))
            && (rv = rp_spool_bucket_load(APR_BRIGADE_FIRST(in->held))) != APR_SUCCESS) {
            return rv;
        }
        rv = apr_brigade_partition(in->held, n, &end);
        if (rv != APR_SUCCESS && rv != APR_INCOMPLETE) {
            return rv;
        }
        if (mode == AP_MODE_SPECULATIVE) {
            return copy_until(bb, in->held, end);
        }
        move_until(bb, in->held, end);
        return APR_SUCCESS;
    case AP_MODE_EXHAUSTIVE:
        APR_BRIGADE_CONCAT(bb, in->held);
        rv = ap_get_brigade(f->next, bb, mode, block, n);
        note_core_read(in, mode, n, bb, rv);
        return rv;
    case AP_MODE_EATCRLF:
        eat_crlf(in->held);
        return APR_SUCCESS;
    default:
        return APR_ENOTIMPL;
    }
}

/* A look at more bytes than were read ahead: mod_http2 looks for its
 * 24-byte preface where the head scanner saw a whole request line and
 * an empty line after 18.  What has arrived since is added to what is
 * held (read without waiting), so the look sees it as it would without
 * us. */
static void top_up_held(ap_filter_t *f, rp_inbuf *in, apr_off_t n)
{
    apr_off_t len = 0;
    apr_status_t rv;
    int eof = 0;

    if (apr_brigade_length(in->held, 1, &len) != APR_SUCCESS || len >= n) {
        return;
    }
    rv = ap_get_brigade(f->next, in->tmp, AP_MODE_READBYTES, APR_NONBLOCK_READ, n - len);
    if (in->core_only) {
        note_core_read(in, AP_MODE_READBYTES, n - len, in->tmp, rv);
    }
    if (rv == APR_SUCCESS && keep_data_only(in, in->tmp, &eof) == APR_SUCCESS) {
        APR_BRIGADE_CONCAT(in->held, in->tmp);
    }
    apr_brigade_cleanup(in->tmp);
}

/* Is a next request here (httpd asks after each response)?  Not since our
 * last read found the socket empty: a client that waits for each answer
 * cannot have sent its next request before this one's answer reached it,
 * which is, if at all, microseconds ago; a look would nearly always find
 * nothing (one recv() per request for answers core writes at once, from
 * 8 KiB up).  What arrives later is an event the loop sees.  Otherwise
 * look (directly, where core holds nothing), so httpd goes on at once. */
static apr_status_t peek_next(ap_filter_t *f, rp_inbuf *in,
                              apr_bucket_brigade *bb, apr_off_t n)
{
    apr_size_t got = 0;
    rp_in_read r;

    if (in->drained) {
        return APR_SUCCESS;
    }
    r = recv_direct(in, in->held, APR_BUCKET_BUFF_SIZE, &got);
    in->drained = r == RP_IN_NONE || (r == RP_IN_DATA && got < APR_BUCKET_BUFF_SIZE);
    switch (r) {
    case RP_IN_DATA:
        return serve_held(f, in, bb, AP_MODE_SPECULATIVE, APR_NONBLOCK_READ, n);
    case RP_IN_NONE:
        return APR_SUCCESS;
    case RP_IN_EOF:
        return APR_EOF;
    default:
        return in->err;
    }
}

/* Past us to the network, as httpd asked: late, a read that would wait
 * times out as httpd's blocking read would have. */
static apr_status_t read_on(ap_filter_t *f, rp_inbuf *in, apr_bucket_brigade *bb,
                            ap_input_mode_t mode, apr_read_type_e block,
                            apr_off_t n)
{
    int late = in->timed_out && block == APR_BLOCK_READ;
    apr_status_t rv;

    in->drained = 0;
    rv = ap_get_brigade(f->next, bb, mode, late ? APR_NONBLOCK_READ : block, n);
    if (in->core_only) {
        note_core_read(in, mode, n, bb, rv);
    }
    if (late && (APR_STATUS_IS_EAGAIN(rv)
                 || (rv == APR_SUCCESS && APR_BRIGADE_EMPTY(bb)))) {
        return APR_TIMEUP;
    }
    return rv;
}

static apr_status_t inbuf_input(ap_filter_t *f, apr_bucket_brigade *bb,
                                ap_input_mode_t mode, apr_read_type_e block,
                                apr_off_t n)
{
    rp_inbuf *in = f->ctx;

    if (mode == AP_MODE_INIT) {
        /* Once our handshake call returned, done or failed, it is not made
         * again: mod_ssl answers plain HTTP on its port with a made-up
         * request line, which its own INIT call (process_connection) would
         * take instead of httpd. */
        return in->handshaken ? APR_SUCCESS : ap_get_brigade(f->next, bb, mode, block, n);
    }
    if (!held_empty(in)) {
        if (mode == AP_MODE_SPECULATIVE) {
            top_up_held(f, in, n);
        }
        return serve_held(f, in, bb, mode, block, n);
    }
    if (mode == AP_MODE_SPECULATIVE && block == APR_NONBLOCK_READ
        && !in->timed_out && in->core_only && in->core_started && !in->core_holds) {
        return peek_next(f, in, bb, n);
    }
    return read_on(f, in, bb, mode, block, n);
}

/* ---- set-up ------------------------------------------------------------- */

rp_inbuf *rp_inbuf_attach(conn_rec *c)
{
    rp_inbuf *in = apr_pcalloc(c->pool, sizeof(*in));
    apr_socket_t *sock = ap_get_conn_socket(c);

    in->c = c;
    in->fd = -1;
    if (sock) {
        apr_os_sock_get(&in->fd, sock);
    }
    in->held = apr_brigade_create(c->pool, c->bucket_alloc);
    in->tmp = apr_brigade_create(c->pool, c->bucket_alloc);
    in->f = ap_add_input_filter_handle(inbuf_filter, in, NULL, c);
    apr_pool_cleanup_register(c->pool, in, unpark, apr_pool_cleanup_null);
    rp_inbuf_look_below(in);
    return in;
}

void rp_inbuf_register(void)
{
    /* Above TLS (AP_FTYPE_CONNECTION + 5) and mod_reqtimeout (+ 8): it
     * holds the bytes of the request itself. */
    inbuf_filter = ap_register_input_filter("RP_READ_AHEAD", inbuf_input, NULL,
                                            AP_FTYPE_CONNECTION + 4);
}

int rp_inbuf_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                         apr_pool_t *ptemp, server_rec *s)
{
    (void)pconf;
    (void)plog;
    (void)ptemp;
    (void)s;
    if (!large_bufs && !(large_bufs = rp_stock_create(RP_IN_BUFS_KEPT))) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    reqtimeout_filter = ap_get_input_filter_handle("reqtimeout");
    logio_filter = ap_get_input_filter_handle("log_input_output");
    logio_add_bytes_in = APR_RETRIEVE_OPTIONAL_FN(ap_logio_add_bytes_in);
    return OK;
}
