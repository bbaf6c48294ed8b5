/* Counters of every child in one shared table; see fhc_tally.h. */
#include "fhc_tally.h"

#include <string.h>

const char *const fhc_field_names[FHC_F_COUNT] = {
    "Hits", "Misses", "Inserts", "Evictions", "Expirations",
    "Invalidations", "Flushes", "FillRaces", "Overflows", "Events",
    "Entries", "OpenDescriptors", "InUseInvalidated", "MemoryBytes",
    "Watches", "PolledEntries",
};

const char *fhc_mode_name(unsigned mode, const char *backend)
{
    switch (mode) {
    case FHC_MODE_NOTIFY: return backend ? backend : "notify";
    case FHC_MODE_MIXED:  return "notify+poll";
    case FHC_MODE_POLL:   return "poll";
    default:              return "none";
    }
}

void fhc_tally_values(uint64_t v[FHC_F_COUNT], const fhc_stats *st,
                      uint64_t events, uint64_t overflows, unsigned watches,
                      unsigned polled)
{
    v[FHC_F_HITS] = st->hits;
    v[FHC_F_MISSES] = st->misses;
    v[FHC_F_INSERTS] = st->inserts;
    v[FHC_F_EVICTIONS] = st->evictions;
    v[FHC_F_EXPIRATIONS] = st->expirations;
    v[FHC_F_INVALIDATIONS] = st->invalidations;
    v[FHC_F_FLUSHES] = st->flushes;
    v[FHC_F_FILL_RACES] = st->fill_races;
    v[FHC_F_OVERFLOWS] = overflows;
    v[FHC_F_EVENTS] = events;
    v[FHC_F_ENTRIES] = st->entries;
    v[FHC_F_HANDLES] = st->handles;
    v[FHC_F_DEAD_PINNED] = st->dead_pinned;
    v[FHC_F_BYTES] = st->bytes;
    v[FHC_F_WATCHES] = watches;
    v[FHC_F_POLLED] = polled;
}

#define LOAD(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, x) __atomic_store_n((p), (x), __ATOMIC_RELAXED)
#define ADD(p, x)   ((void)__atomic_fetch_add((p), (x), __ATOMIC_RELAXED))

size_t fhc_tally_size(unsigned nslots)
{
    return sizeof(fhc_tally) + (size_t)nslots * sizeof(fhc_tally_slot);
}

void fhc_tally_init(fhc_tally *t, unsigned nslots)
{
    memset(t, 0, fhc_tally_size(nslots));
    t->nslots = nslots;
}

static int take(fhc_tally_slot *s, int32_t from, int32_t pid)
{
    return __atomic_compare_exchange_n(&s->pid, &from, pid, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Cumulative counters into retired; the slot's numbers start again. */
static void fold(fhc_tally *t, fhc_tally_slot *s)
{
    int i;
    for (i = 0; i < FHC_F_GAUGES; i++) {
        ADD(&t->retired[i], LOAD(&s->v[i]));
    }
    for (i = 0; i < FHC_F_COUNT; i++) {
        STORE(&s->v[i], 0);
    }
    STORE(&s->mode, FHC_MODE_NONE);
    ADD(&t->exited, 1);
}

fhc_tally_slot *fhc_tally_claim(fhc_tally *t, int32_t pid,
                                int (*alive)(int32_t pid))
{
    unsigned i;

    for (i = 0; i < t->nslots; i++) {
        if (LOAD(&t->slot[i].pid) == 0 && take(&t->slot[i], 0, pid)) {
            return &t->slot[i];
        }
    }
    for (i = 0; alive && i < t->nslots; i++) {
        int32_t owner = LOAD(&t->slot[i].pid);
        if (owner != 0 && owner != pid && !alive(owner)
            && take(&t->slot[i], owner, pid)) {
            fold(t, &t->slot[i]);
            return &t->slot[i];
        }
    }
    return NULL;
}

void fhc_tally_publish(fhc_tally_slot *s, const uint64_t v[FHC_F_COUNT],
                       unsigned mode)
{
    int i;
    for (i = 0; i < FHC_F_COUNT; i++) {
        STORE(&s->v[i], v[i]);
    }
    STORE(&s->mode, mode);
}

void fhc_tally_retire(fhc_tally *t, fhc_tally_slot *s)
{
    fold(t, s);
    __atomic_store_n(&s->pid, 0, __ATOMIC_RELEASE);
}

void fhc_tally_sum(const fhc_tally *t, fhc_totals *out)
{
    unsigned i;
    int f;

    memset(out, 0, sizeof(*out));
    for (f = 0; f < FHC_F_GAUGES; f++) {
        out->v[f] = LOAD(&t->retired[f]);
    }
    out->exited = LOAD(&t->exited);
    for (i = 0; i < t->nslots; i++) {
        const fhc_tally_slot *s = &t->slot[i];
        unsigned mode;
        if (LOAD(&s->pid) == 0) {
            continue;
        }
        out->children++;
        for (f = 0; f < FHC_F_COUNT; f++) {
            out->v[f] += LOAD(&s->v[f]);
        }
        mode = LOAD(&s->mode);
        if (mode == FHC_MODE_MIXED || mode == FHC_MODE_POLL) {
            out->polling++;
        }
    }
}
