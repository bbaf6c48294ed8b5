/* Is an HTTP/1.x request here whole?  The read-ahead (rp_readahead.c)
 * hands a request to a worker only when httpd can read it without waiting
 * for the client: its head is complete, and so is a body of known length
 * that fits what the read-ahead holds; or httpd would stop reading anyway
 * (a line over its limit, too many fields, too many blank lines); or the
 * rest is not ours to wait for (a body of unknown length, Expect:
 * 100-continue, more than the read-ahead holds, framing httpd will
 * refuse).  Incremental: bytes may arrive in any pieces.
 * Pure C, no httpd or APR; unit-tested in test/unit/check_reqscan.c.
 * Only rp_readahead.c uses it. */
#ifndef RP_REQSCAN_H
#define RP_REQSCAN_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    RP_SCAN_MORE = 0,           /* incomplete: wait for more bytes */
    RP_SCAN_WHOLE,              /* head and body are here */
    RP_SCAN_HANDOVER            /* httpd reads on from here (rp_scan_why) */
} rp_scan_state;

typedef enum {
    RP_SCAN_WHY_NONE = 0,
    RP_SCAN_WHY_LINE,           /* a line over httpd's limit */
    RP_SCAN_WHY_FIELDS,         /* more header fields than httpd takes */
    RP_SCAN_WHY_BLANKS,         /* too many empty lines before a request */
    RP_SCAN_WHY_SIZE,           /* more than the read-ahead holds */
    RP_SCAN_WHY_STREAMED,       /* body of unknown length, or 100-continue */
    RP_SCAN_WHY_FRAMING         /* body framing httpd will refuse */
} rp_scan_why;

/* httpd's limits for the connection's server (LimitRequestLine,
 * LimitRequestFieldSize, LimitRequestFields; 0 fields: no limit), how much
 * of one request the read-ahead holds in memory, and the longest body of
 * known length it waits for beyond that (kept in a file, rp_spool.h; 0:
 * none). */
typedef struct rp_scan_limits {
    size_t request_line;
    size_t field_size;
    unsigned fields;
    size_t hold;
    uint64_t body_hold;
} rp_scan_limits;

#define RP_SCAN_LINE_START 64   /* bytes of a field line kept to parse it */

typedef struct rp_reqscan {
    rp_scan_limits lim;
    rp_scan_state state;
    rp_scan_why why;
    int phase;                  /* private: where in the request */
    size_t total;               /* bytes of this request looked at */
    size_t line;                /* bytes of the current line so far */
    unsigned blanks, fields;
    int words, in_word;         /* request line: words seen */
    unsigned flags;             /* private: what the head said */
    uint64_t length;            /* Content-Length */
    uint64_t body_left;
    size_t start_len;
    char start[RP_SCAN_LINE_START];
} rp_reqscan;

/* Begin a request. */
void rp_reqscan_start(rp_reqscan *s, const rp_scan_limits *lim);

/* Look at the next len bytes of the connection.  Returns the state; *used
 * says how many of the bytes belong to this request (the rest begin the
 * next one).  Once the state is not MORE, calls use no bytes. */
rp_scan_state rp_reqscan_feed(rp_reqscan *s, const char *p, size_t len,
                              size_t *used);

/* The head is complete and the body is being read (for timeouts). */
int rp_reqscan_in_body(const rp_reqscan *s);

/* The body being read does not fit in memory with its head: its bytes go
 * to the spool (lim.body_hold). */
int rp_reqscan_spools(const rp_reqscan *s);

#endif
