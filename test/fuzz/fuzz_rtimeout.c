/* libFuzzer target: RequestReadTimeout's arguments as the read-ahead
 * reads them from the configuration (rp_rtimeout.c), and the clocks made
 * from what it accepts.  Input: the argument text (up to a NUL).  Checks,
 * besides the sanitizers': accepted values are in range, and a clock's
 * deadline never lies before its start or overflows, however many bytes
 * arrive. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_rtimeout.h"

static void must(int cond)
{
    if (!cond) {
        abort();
    }
}

static void check_stage(const rp_rt_stage *st)
{
    if (st->timeout == RP_RT_UNSET) {
        return;
    }
    must(st->timeout >= 0 && st->max_timeout >= 0 && st->min_rate >= 0);
    must(!st->max_timeout || st->max_timeout > st->timeout);
}

/* A stage's clock under load: it starts at `now`, bytes arrive; a set
 * deadline is never before the start. */
static void run_clock(const rp_rt_stage *st, const uint8_t *more, size_t n)
{
    const int64_t start = INT64_C(1800000000) * 1000000;
    rp_rt_clock k;
    int64_t now = start, d;
    size_t i;

    rp_rt_begin(&k, st, (int64_t)60 * 1000000, now);
    for (i = 0; i < n; i++) {
        now += more[i];
        rp_rt_progress(&k, (size_t)more[i] << (more[i] & 15), now);
        d = rp_rt_deadline(&k);
        must(d == 0 || d >= start);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rp_rt_conf c, vhost, merged;
    char *text = malloc(size + 1);
    size_t n = 0;

    if (!text) {
        return 0;
    }
    while (n < size && data[n]) {
        n++;
    }
    memcpy(text, data, n);
    text[n] = '\0';
    rp_rt_unset(&c);
    if (!rp_rt_parse(&c, text)) {
        check_stage(&c.handshake);
        check_stage(&c.header);
        check_stage(&c.body);
        rp_rt_unset(&vhost);
        rp_rt_merge(&merged, &c, &vhost);
        if (rp_rt_applies(&merged)) {
            rp_rt_resolve(&merged);
            run_clock(&merged.header, data + n, size - n);
            run_clock(&merged.body, data + n, size - n);
        }
    }
    free(text);
    return 0;
}
