/* How long the read-ahead (rp_readahead.c) may wait for a request.  httpd
 * would wait in a worker's blocking reads: Timeout for each read, and, with
 * mod_reqtimeout loaded, its stages (RequestReadTimeout handshake=, header=,
 * body=: a time from the stage's start, extended by MinRate per byte
 * received, up to a maximum).  The read-ahead waits in the event loop
 * instead, so it keeps the same clocks here; its deadline is the earlier
 * of the two.
 * rp_rt_parse reads RequestReadTimeout's arguments (rp_rtconf.c finds them
 * in the configuration, as mod_reqtimeout keeps its values private).
 * Pure C, times in microseconds; unit-tested in test/unit/check_rtimeout.c. */
#ifndef RP_RTIMEOUT_H
#define RP_RTIMEOUT_H

#include <stddef.h>
#include <stdint.h>

#define RP_RT_UNSET (-1)

typedef struct rp_rt_stage {
    int timeout;                /* seconds; 0: off; RP_RT_UNSET */
    int max_timeout;            /* seconds; 0: no maximum */
    int min_rate;               /* bytes per second; 0: no extension */
} rp_rt_stage;

typedef struct rp_rt_conf {
    rp_rt_stage handshake, header, body;
} rp_rt_conf;

/* Every stage unset (what a server without the directive has). */
void rp_rt_unset(rp_rt_conf *c);

/* Apply one RequestReadTimeout line's arguments ("header=20-40,MinRate=500
 * body=20"); NULL, or why they are wrong (c is then partly changed). */
const char *rp_rt_parse(rp_rt_conf *c, const char *args);

/* A virtual host's stages: its own where set, else its main server's. */
void rp_rt_merge(rp_rt_conf *out, const rp_rt_conf *base,
                 const rp_rt_conf *add);

/* mod_reqtimeout applies to a connection unless every stage is off. */
int rp_rt_applies(const rp_rt_conf *c);

/* Unset stages take mod_reqtimeout's defaults. */
void rp_rt_resolve(rp_rt_conf *c);

/* One stage's clock, with the per-read Timeout (idle; 0: none). */
typedef struct rp_rt_clock {
    int64_t stage_at;           /* stage deadline; 0: none */
    int64_t max_at;             /* the stage may not extend past; 0: none */
    int64_t per_byte;           /* extension per byte received */
    int64_t idle;
    int64_t idle_at;            /* last progress + idle; 0: none */
} rp_rt_clock;

/* st: NULL when mod_reqtimeout does not apply. */
void rp_rt_begin(rp_rt_clock *k, const rp_rt_stage *st, int64_t idle,
                 int64_t now);
void rp_rt_progress(rp_rt_clock *k, size_t bytes, int64_t now);
/* When waiting must end; 0: never. */
int64_t rp_rt_deadline(const rp_rt_clock *k);

#endif
