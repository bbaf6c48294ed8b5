/* Is an HTTP/1.x request here whole?  See rp_reqscan.h. */
#include "rp_reqscan.h"

#include <string.h>
#include <strings.h>

enum { PH_REQUEST_LINE, PH_FIELDS, PH_BODY, PH_DONE };

/* What the head said about the body. */
#define F_LENGTH    1u          /* a Content-Length */
#define F_CHUNKED   2u          /* a Transfer-Encoding */
#define F_EXPECT    4u          /* an Expect */
#define F_ODD       8u          /* framing httpd refuses, or we cannot read */
#define F_LAST_OURS 16u         /* the last field was one of the above */

/* httpd skips this many empty lines before a request line. */
#define RP_SCAN_BLANKS 10

void rp_reqscan_start(rp_reqscan *s, const rp_scan_limits *lim)
{
    memset(s, 0, sizeof(*s));
    s->lim = *lim;
}

int rp_reqscan_in_body(const rp_reqscan *s)
{
    return s->phase == PH_BODY;
}

/* Head and body within what memory holds (head: its bytes). */
static int fits_in_memory(const rp_reqscan *s, size_t head)
{
    return s->length <= s->lim.hold && head + s->length <= s->lim.hold;
}

int rp_reqscan_spools(const rp_reqscan *s)
{
    return s->phase == PH_BODY
           && !fits_in_memory(s, s->total - (size_t)(s->length - s->body_left));
}

static rp_scan_state finish(rp_reqscan *s, rp_scan_state st, rp_scan_why why)
{
    s->state = st;
    s->why = why;
    s->phase = PH_DONE;
    return st;
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Request line: count its words across pieces. */
static void count_words(rp_reqscan *s, const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        int word = !is_blank(p[i]) && p[i] != '\r' && p[i] != '\n';
        if (word && !s->in_word) {
            s->words++;
        }
        s->in_word = word;
    }
}

/* Field lines: keep the start of the line to parse it at its end. */
static void keep_start(rp_reqscan *s, const char *p, size_t n)
{
    size_t room = sizeof(s->start) - s->start_len;

    if (n > room) {
        n = room;
    }
    memcpy(s->start + s->start_len, p, n);
    s->start_len += n;
}

/* Length of a complete line without its LF and a CR before it. */
static size_t content_length_of_line(const rp_reqscan *s, const char *last)
{
    size_t n = s->line - 1;     /* without LF */

    if (n > 0 && last[-1] == '\r') {
        n--;
    }
    return n;
}

static void trim(const char **v, const char **end)
{
    while (*v < *end && is_blank(**v)) {
        (*v)++;
    }
    while (*end > *v && (is_blank((*end)[-1]) || (*end)[-1] == '\r'
                         || (*end)[-1] == '\n')) {
        (*end)--;
    }
}

static int parse_length(const char *v, const char *end, uint64_t *out)
{
    uint64_t n = 0;

    if (v == end || end - v > 18) {
        return 0;
    }
    for (; v < end; v++) {
        if (*v < '0' || *v > '9') {
            return 0;
        }
        n = n * 10 + (uint64_t)(*v - '0');
    }
    *out = n;
    return 1;
}

static int name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && !strncasecmp(name, want, len);
}

/* A complete field line (not a continuation): note what it says about the
 * body.  Only the fields that frame the body matter here. */
static void parse_field(rp_reqscan *s, int truncated)
{
    const char *colon = memchr(s->start, ':', s->start_len);
    const char *v, *end = s->start + s->start_len;
    size_t nlen;
    unsigned flag;

    s->flags &= ~F_LAST_OURS;
    if (!colon) {
        if (!truncated) {
            s->flags |= F_ODD;  /* no colon at all: httpd refuses it */
        }
        return;                 /* or a name too long to be ours */
    }
    nlen = (size_t)(colon - s->start);
    flag = name_is(s->start, nlen, "content-length") ? F_LENGTH
           : name_is(s->start, nlen, "transfer-encoding") ? F_CHUNKED
           : name_is(s->start, nlen, "expect") ? F_EXPECT : 0;
    if (!flag) {
        return;
    }
    s->flags |= F_LAST_OURS;
    if (truncated || (flag == F_LENGTH && (s->flags & F_LENGTH))) {
        s->flags |= F_ODD;      /* value cut, or a second length */
    }
    s->flags |= flag;
    if (flag == F_LENGTH) {
        v = colon + 1;
        trim(&v, &end);
        if (!parse_length(v, end, &s->length)) {
            s->flags |= F_ODD;
        }
    }
}

/* The empty line after the fields: whole, body to come, or handover. */
static rp_scan_state end_of_head(rp_reqscan *s)
{
    if (s->flags & (F_ODD | F_CHUNKED)) {
        return finish(s, RP_SCAN_HANDOVER, (s->flags & F_ODD)
                      ? RP_SCAN_WHY_FRAMING : RP_SCAN_WHY_STREAMED);
    }
    if (!(s->flags & F_LENGTH) || s->length == 0) {
        return finish(s, RP_SCAN_WHOLE, RP_SCAN_WHY_NONE);
    }
    if (s->flags & F_EXPECT) {
        /* The client waits for our 100 Continue before sending it. */
        return finish(s, RP_SCAN_HANDOVER, RP_SCAN_WHY_STREAMED);
    }
    if (!fits_in_memory(s, s->total) && s->length > s->lim.body_hold) {
        return finish(s, RP_SCAN_HANDOVER, RP_SCAN_WHY_SIZE);
    }
    s->body_left = s->length;
    s->phase = PH_BODY;
    return RP_SCAN_MORE;
}

/* A complete line ("last" points at its LF). */
static rp_scan_state end_of_line(rp_reqscan *s, const char *last)
{
    size_t n = content_length_of_line(s, last);
    int truncated = s->line > sizeof(s->start);

    if (s->phase == PH_REQUEST_LINE) {
        if (!s->words) {
            if (++s->blanks > RP_SCAN_BLANKS) {
                return finish(s, RP_SCAN_HANDOVER, RP_SCAN_WHY_BLANKS);
            }
            return RP_SCAN_MORE;
        }
        if (s->words < 3) {
            /* HTTP/0.9 (no fields follow) or a line httpd refuses. */
            return finish(s, RP_SCAN_WHOLE, RP_SCAN_WHY_NONE);
        }
        s->phase = PH_FIELDS;
        return RP_SCAN_MORE;
    }
    if (n == 0) {
        return end_of_head(s);
    }
    if (is_blank(s->start[0])) {
        if (s->flags & F_LAST_OURS) {
            s->flags |= F_ODD;  /* a folded framing field */
        }
        return RP_SCAN_MORE;
    }
    if (s->lim.fields && ++s->fields > s->lim.fields) {
        return finish(s, RP_SCAN_HANDOVER, RP_SCAN_WHY_FIELDS);
    }
    parse_field(s, truncated);
    return RP_SCAN_MORE;
}

static size_t line_limit(const rp_reqscan *s)
{
    return (s->phase == PH_REQUEST_LINE ? s->lim.request_line
                                        : s->lim.field_size) + 2;
}

/* Take the bytes of p up to the end of the current line. */
static rp_scan_state take_line(rp_reqscan *s, const char *p, size_t len,
                               size_t *took)
{
    const char *lf = memchr(p, '\n', len);
    size_t n = lf ? (size_t)(lf - p) + 1 : len;

    if (s->phase == PH_REQUEST_LINE) {
        count_words(s, p, n);
    }
    else {
        keep_start(s, p, n);
    }
    s->line += n;
    s->total += n;
    *took = n;
    if (s->line > line_limit(s)) {
        return finish(s, RP_SCAN_HANDOVER, RP_SCAN_WHY_LINE);
    }
    if (s->total > s->lim.hold) {
        return finish(s, RP_SCAN_HANDOVER, RP_SCAN_WHY_SIZE);
    }
    if (!lf) {
        return RP_SCAN_MORE;
    }
    {
        rp_scan_state st = end_of_line(s, lf);
        s->line = 0;
        s->start_len = 0;
        s->in_word = 0;
        return st;
    }
}

static size_t take_body(rp_reqscan *s, size_t len)
{
    size_t n = s->body_left < len ? (size_t)s->body_left : len;

    s->body_left -= n;
    s->total += n;
    if (!s->body_left) {
        finish(s, RP_SCAN_WHOLE, RP_SCAN_WHY_NONE);
    }
    return n;
}

rp_scan_state rp_reqscan_feed(rp_reqscan *s, const char *p, size_t len,
                              size_t *used)
{
    size_t pos = 0;

    while (pos < len && s->phase != PH_DONE) {
        size_t took;
        if (s->phase == PH_BODY) {
            pos += take_body(s, len - pos);
            continue;
        }
        take_line(s, p + pos, len - pos, &took);
        pos += took;
    }
    *used = pos;
    return s->state;
}
