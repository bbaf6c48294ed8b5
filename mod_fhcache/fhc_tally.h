/* Cache counters of every child, summed for server-status.
 *
 * The parent lays out one table in shared memory per generation; each
 * child claims a slot by its pid, publishes a copy of its counters about
 * once a second, and folds its cumulative counters (hits, misses, ...)
 * into "retired" when it exits, so totals survive child recycling.  Gauges
 * (entries, descriptors, bytes, watches) count live children only.  A
 * child that died without retiring is folded in by whoever reclaims its
 * slot.
 *
 * Platform-neutral and lock-free (relaxed atomics: the numbers are
 * statistics, a reader may see one publish half-applied). */
#ifndef FHC_TALLY_H
#define FHC_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "fhc_cache.h"

enum fhc_field {
    /* cumulative */
    FHC_F_HITS, FHC_F_MISSES, FHC_F_INSERTS, FHC_F_EVICTIONS,
    FHC_F_EXPIRATIONS, FHC_F_INVALIDATIONS, FHC_F_FLUSHES, FHC_F_FILL_RACES,
    FHC_F_OVERFLOWS, FHC_F_EVENTS,
    FHC_F_GAUGES,
    /* gauges: the state of live children */
    FHC_F_ENTRIES = FHC_F_GAUGES, FHC_F_HANDLES, FHC_F_DEAD_PINNED,
    FHC_F_BYTES, FHC_F_WATCHES, FHC_F_POLLED,
    FHC_F_COUNT
};

/* Names as shown in server-status (FHCache<name> in ?auto). */
extern const char *const fhc_field_names[FHC_F_COUNT];

/* How a child learns of changes, for the status page. */
enum fhc_mode { FHC_MODE_NONE, FHC_MODE_NOTIFY, FHC_MODE_MIXED, FHC_MODE_POLL };
const char *fhc_mode_name(unsigned mode, const char *backend);

typedef struct fhc_tally_slot {
    int32_t pid;                    /* 0: free */
    uint32_t mode;
    uint64_t v[FHC_F_COUNT];
} fhc_tally_slot;

typedef struct fhc_tally {
    uint32_t nslots;
    uint32_t exited;                /* children that retired */
    uint64_t retired[FHC_F_GAUGES];
    fhc_tally_slot slot[];
} fhc_tally;

typedef struct fhc_totals {
    uint64_t v[FHC_F_COUNT];
    unsigned children;              /* live, publishing */
    unsigned polling;               /* of which revalidate (some) by stat */
    unsigned exited;
} fhc_totals;

/* The counter values of a cache plus the child's own numbers. */
void fhc_tally_values(uint64_t v[FHC_F_COUNT], const fhc_stats *st,
                      uint64_t events, uint64_t overflows, unsigned watches,
                      unsigned polled);

size_t fhc_tally_size(unsigned nslots);
void fhc_tally_init(fhc_tally *t, unsigned nslots);

/* A free slot for pid, or one whose owner alive() says is gone (its
 * cumulative counters are folded into retired first).  NULL: full. */
fhc_tally_slot *fhc_tally_claim(fhc_tally *t, int32_t pid,
                                int (*alive)(int32_t pid));
void fhc_tally_publish(fhc_tally_slot *s, const uint64_t v[FHC_F_COUNT],
                       unsigned mode);
/* The owner is leaving: keep its cumulative counters, free the slot. */
void fhc_tally_retire(fhc_tally *t, fhc_tally_slot *s);
void fhc_tally_sum(const fhc_tally *t, fhc_totals *out);

#endif
