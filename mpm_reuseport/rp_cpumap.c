/* CPUs of each bucket (see rp_cpumap.h). */
#include "rp_cpumap.h"

#include <stdlib.h>

static int by_id(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int rp_cpumap_init(rp_cpumap *m, const int *cpus, int ncpu, int nb)
{
    int i;

    if (ncpu < 1 || ncpu > RP_CPUMAP_MAX || nb < 1) {
        return -1;
    }
    for (i = 0; i < ncpu; i++) {
        m->cpu[i] = cpus[i];
    }
    qsort(m->cpu, ncpu, sizeof(int), by_id);
    m->ncpu = ncpu;
    m->nb = nb;
    return 0;
}

void rp_cpumap_buckets_of(const rp_cpumap *m, int i, int *first, int *count)
{
    if (m->nb <= m->ncpu) {
        *first = i % m->nb;
        *count = 1;
        return;
    }
    *first = i;
    *count = (m->nb - 1 - i) / m->ncpu + 1;
}

int rp_cpumap_bucket_for(const rp_cpumap *m, int cpu, uint32_t hash)
{
    int i, first, count;

    for (i = 0; i < m->ncpu; i++) {
        if (m->cpu[i] == cpu) {
            rp_cpumap_buckets_of(m, i, &first, &count);
            return first + m->ncpu * (int)(hash % (uint32_t)count);
        }
    }
    return (int)(hash % (uint32_t)m->nb);
}

int rp_cpumap_serves(const rp_cpumap *m, int i, int b)
{
    return m->nb <= m->ncpu ? i % m->nb == b : i == b % m->ncpu;
}
