/* Request read timeouts of the read-ahead.  See rp_rtimeout.h. */
#include "rp_rtimeout.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USEC_PER_SEC INT64_C(1000000)

static const rp_rt_stage unset_stage = { RP_RT_UNSET, RP_RT_UNSET, RP_RT_UNSET };

/* mod_reqtimeout's defaults when the module is loaded. */
static const rp_rt_stage default_handshake = { 0, 0, 0 };
static const rp_rt_stage default_header = { 20, 40, 500 };
static const rp_rt_stage default_body = { 20, 0, 500 };

void rp_rt_unset(rp_rt_conf *c)
{
    c->handshake = c->header = c->body = unset_stage;
}

/* A non-negative decimal number making up all of [s, end). */
static const char *parse_count(const char *s, const char *end, int *out)
{
    long v = 0;

    if (s == end) {
        return "a number is missing";
    }
    for (; s < end; s++) {
        if (!isdigit((unsigned char)*s)) {
            return "not a non-negative number";
        }
        v = v * 10 + (*s - '0');
        if (v > INT_MAX) {
            return "number too large";
        }
    }
    *out = (int)v;
    return NULL;
}

static const char *find_nocase(const char *s, const char *end, const char *what)
{
    size_t n = strlen(what);

    for (; s + n <= end; s++) {
        if (!strncasecmp(s, what, n)) {
            return s;
        }
    }
    return NULL;
}

/* "T", or "T-M,MinRate=R", or "T,MinRate=R". */
static const char *parse_stage(rp_rt_stage *st, const char *v, const char *end)
{
    const char *rate = find_nocase(v, end, ",minrate=");
    const char *dash, *err;

    st->timeout = st->max_timeout = st->min_rate = 0;
    if (!rate) {
        if (memchr(v, '-', (size_t)(end - v))) {
            return "a range needs MinRate";
        }
        return parse_count(v, end, &st->timeout);
    }
    if ((err = parse_count(rate + 9, end, &st->min_rate))) {
        return err;
    }
    if (!st->min_rate) {
        return "MinRate must be above 0";
    }
    dash = memchr(v, '-', (size_t)(rate - v));
    if (dash && (err = parse_count(dash + 1, rate, &st->max_timeout))) {
        return err;
    }
    if ((err = parse_count(v, dash ? dash : rate, &st->timeout))) {
        return err;
    }
    if (st->max_timeout && st->timeout >= st->max_timeout) {
        return "the maximum must be above the initial timeout";
    }
    return NULL;
}

static rp_rt_stage *stage_named(rp_rt_conf *c, const char *k, size_t n)
{
    if (n == 9 && !strncasecmp(k, "handshake", n)) {
        return &c->handshake;
    }
    if (n == 6 && !strncasecmp(k, "header", n)) {
        return &c->header;
    }
    if (n == 4 && !strncasecmp(k, "body", n)) {
        return &c->body;
    }
    return NULL;
}

const char *rp_rt_parse(rp_rt_conf *c, const char *args)
{
    const char *p = args;

    for (;;) {
        const char *word, *end, *eq, *err;
        rp_rt_stage *st;
        while (isspace((unsigned char)*p) || *p == '"') {
            p++;
        }
        if (!*p) {
            return NULL;
        }
        word = p;
        while (*p && !isspace((unsigned char)*p) && *p != '"') {
            p++;
        }
        end = p;
        if (!(eq = memchr(word, '=', (size_t)(end - word)))) {
            return "arguments are key=value";
        }
        if (!(st = stage_named(c, word, (size_t)(eq - word)))) {
            return "unknown key (handshake, header, body)";
        }
        if ((err = parse_stage(st, eq + 1, end))) {
            return err;
        }
    }
}

static rp_rt_stage merged(rp_rt_stage base, rp_rt_stage add)
{
    return add.timeout != RP_RT_UNSET ? add : base;
}

void rp_rt_merge(rp_rt_conf *out, const rp_rt_conf *base,
                 const rp_rt_conf *add)
{
    out->handshake = merged(base->handshake, add->handshake);
    out->header = merged(base->header, add->header);
    out->body = merged(base->body, add->body);
}

int rp_rt_applies(const rp_rt_conf *c)
{
    /* As mod_reqtimeout decides at a connection's start: an unset
     * handshake is off, unset header and body take their defaults. */
    return c->handshake.timeout > 0 || c->header.timeout != 0
           || c->body.timeout != 0;
}

static void resolve(rp_rt_stage *st, const rp_rt_stage *def)
{
    if (st->timeout == RP_RT_UNSET) {
        *st = *def;
    }
}

void rp_rt_resolve(rp_rt_conf *c)
{
    resolve(&c->handshake, &default_handshake);
    resolve(&c->header, &default_header);
    resolve(&c->body, &default_body);
}

void rp_rt_begin(rp_rt_clock *k, const rp_rt_stage *st, int64_t idle,
                 int64_t now)
{
    memset(k, 0, sizeof(*k));
    if (st && st->timeout > 0) {
        k->stage_at = now + st->timeout * USEC_PER_SEC;
        if (st->max_timeout > 0) {
            k->max_at = now + st->max_timeout * USEC_PER_SEC;
        }
        if (st->min_rate > 0) {
            k->per_byte = USEC_PER_SEC / st->min_rate;
        }
    }
    k->idle = idle;
    k->idle_at = idle > 0 ? now + idle : 0;
}

void rp_rt_progress(rp_rt_clock *k, size_t bytes, int64_t now)
{
    if (k->stage_at && k->per_byte) {
        k->stage_at += (int64_t)bytes * k->per_byte;
        if (k->max_at && k->stage_at > k->max_at) {
            k->stage_at = k->max_at;
        }
    }
    if (k->idle > 0) {
        k->idle_at = now + k->idle;
    }
}

int64_t rp_rt_deadline(const rp_rt_clock *k)
{
    if (!k->stage_at) {
        return k->idle_at;
    }
    if (!k->idle_at) {
        return k->stage_at;
    }
    return k->stage_at < k->idle_at ? k->stage_at : k->idle_at;
}
