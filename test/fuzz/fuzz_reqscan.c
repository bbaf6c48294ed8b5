/* libFuzzer target: the read-ahead's request scanner (rp_reqscan.c), which
 * looks at every byte a client sends before httpd does.
 *
 * Input: 3 bytes of settings (limits, how to cut the stream), then the
 * bytes of a connection.  The stream is scanned request after request,
 * once at a time and once in pieces; the scanner is incremental, so both
 * must find the same requests, whole ones with the same lengths, and hand
 * over to httpd at the same request.  Besides
 * the sanitizers' checks: a request never uses more bytes than it was
 * given, a finished scan uses none, MORE never comes with a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_reqscan.h"

#define MAX_REQUESTS 64

typedef struct outcome {
    rp_scan_state state;
    rp_scan_why why;
    size_t used;
} outcome;

static void must(int cond)
{
    if (!cond) {
        abort();
    }
}

static void pick_limits(rp_scan_limits *lim, uint8_t a, uint8_t b)
{
    static const size_t lines[] = { 8190, 16, 40, 1 << 16 };
    static const unsigned fields[] = { 100, 0, 1, 3 };
    static const size_t holds[] = { 65536, 32, 200, 4096 };
    static const uint64_t body_holds[] = { 0, 100, 1 << 20, 64 };

    lim->request_line = lines[a & 3];
    lim->field_size = lines[(a >> 2) & 3];
    lim->fields = fields[(a >> 4) & 3];
    lim->hold = holds[b & 3];
    lim->body_hold = body_holds[(b >> 2) & 3];
}

/* Scan data as consecutive requests, fed in pieces of at most `piece`
 * bytes (0: all at once); records each finished request's outcome. */
static size_t scan_all(const rp_scan_limits *lim, const uint8_t *data, size_t len,
                       size_t piece, outcome *out)
{
    size_t pos = 0, n = 0;
    rp_reqscan s;

    while (pos < len && n < MAX_REQUESTS) {
        size_t req_used = 0, at = pos;
        rp_scan_state st = RP_SCAN_MORE;

        rp_reqscan_start(&s, lim);
        while (at < len && st == RP_SCAN_MORE) {
            size_t give = piece && piece < len - at ? piece : len - at, used = 0;
            st = rp_reqscan_feed(&s, (const char *)data + at, give, &used);
            must(used <= give);
            must(st != RP_SCAN_MORE || used == give);
            must(st != RP_SCAN_MORE || s.why == RP_SCAN_WHY_NONE);
            /* Only a body of known length within body_hold is spooled. */
            must(!rp_reqscan_spools(&s) || (rp_reqscan_in_body(&s)
                                             && s.length <= lim->body_hold));
            req_used += used;
            at += used;
        }
        if (st == RP_SCAN_MORE) {
            size_t used = 1;
            must(rp_reqscan_feed(&s, "", 0, &used) == RP_SCAN_MORE && used == 0);
            break;              /* the rest is an unfinished request */
        }
        {
            size_t used = 1;    /* a finished scan takes nothing more */
            must(rp_reqscan_feed(&s, "x", 1, &used) == st && used == 0);
        }
        out[n].state = st;
        out[n].why = s.why;
        out[n].used = req_used;
        n++;
        if (st != RP_SCAN_WHOLE) {
            break;              /* httpd reads on from here */
        }
        pos += req_used;
        if (req_used == 0) {
            break;
        }
    }
    return n;
}

/* A handover for a line over its limit or a request over the hold is
 * decided where the bytes so far cross it, which depends on the pieces
 * (and so does how many bytes it used): either may come first. */
static int cut_short(rp_scan_why why)
{
    return why == RP_SCAN_WHY_LINE || why == RP_SCAN_WHY_SIZE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    outcome whole[MAX_REQUESTS], pieces[MAX_REQUESTS];
    rp_scan_limits lim;
    size_t n1, n2, i, piece;

    if (size < 3) {
        return 0;
    }
    pick_limits(&lim, data[0], data[1]);
    piece = 1 + data[2] % 23;
    data += 3;
    size -= 3;
    n1 = scan_all(&lim, data, size, 0, whole);
    n2 = scan_all(&lim, data, size, piece, pieces);
    must(n1 == n2);
    for (i = 0; i < n1; i++) {
        must(whole[i].state == pieces[i].state);
        if (whole[i].state == RP_SCAN_WHOLE) {
            must(whole[i].used == pieces[i].used);
        }
        else if (!cut_short(whole[i].why) && !cut_short(pieces[i].why)) {
            must(whole[i].why == pieces[i].why);
        }
    }
    return 0;
}
