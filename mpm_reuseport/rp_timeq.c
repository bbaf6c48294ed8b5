#include "rp_timeq.h"

#include <stdlib.h>

void rp_timeq_init(rp_timeq *q, rp_usec timeout)
{
    q->head.prev = q->head.next = &q->head;
    q->head.q = q;
    q->timeout = timeout;
    q->count = 0;
}

void rp_timer_init(rp_timer *t)
{
    t->prev = t->next = NULL;
    t->q = NULL;
    t->expires = 0;
}

int rp_timer_queued(const rp_timer *t)
{
    return t->q != NULL;
}

void rp_timeq_append(rp_timeq *q, rp_timer *t, rp_usec now)
{
    t->expires = now + q->timeout;
    t->q = q;
    t->next = &q->head;
    t->prev = q->head.prev;
    q->head.prev->next = t;
    q->head.prev = t;
    q->count++;
}

void rp_timer_remove(rp_timer *t)
{
    if (!t->q) {
        return;
    }
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->q->count--;
    t->prev = t->next = NULL;
    t->q = NULL;
}

rp_timer *rp_timeq_first(const rp_timeq *q)
{
    return q->head.next == &q->head ? NULL : q->head.next;
}

rp_timer *rp_timeq_pop_expired(rp_timeq *q, rp_usec now)
{
    rp_timer *t = rp_timeq_first(q);

    if (!t || t->expires > now) {
        return NULL;
    }
    rp_timer_remove(t);
    return t;
}

rp_usec rp_timeq_next_expiry(const rp_timeq *q)
{
    rp_timer *t = rp_timeq_first(q);

    return t ? t->expires : -1;
}

rp_timeq *rp_timeqs_get(rp_timeqs *s, rp_usec timeout)
{
    rp_timeq *q;
    int i;

    for (i = 0; i < s->n; i++) {
        if (s->qs[i]->timeout == timeout) {
            return s->qs[i];
        }
    }
    if (s->n == RP_TIMEQS_MAX || !(q = malloc(sizeof(*q)))) {
        return NULL;
    }
    rp_timeq_init(q, timeout);
    s->qs[s->n++] = q;
    return q;
}

rp_timeq *rp_timeqs_nearest(rp_timeqs *s, rp_usec timeout)
{
    rp_timeq *best = NULL, *smallest = NULL;
    int i;

    for (i = 0; i < s->n; i++) {
        rp_timeq *q = s->qs[i];
        if (!smallest || q->timeout < smallest->timeout) {
            smallest = q;
        }
        if (q->timeout <= timeout && (!best || q->timeout > best->timeout)) {
            best = q;
        }
    }
    return best ? best : smallest;
}

rp_usec rp_timeqs_next_expiry(const rp_timeqs *s)
{
    rp_usec next = -1;
    int i;

    for (i = 0; i < s->n; i++) {
        rp_usec e = rp_timeq_next_expiry(s->qs[i]);
        if (e >= 0 && (next < 0 || e < next)) {
            next = e;
        }
    }
    return next;
}

int rp_timeqs_count(const rp_timeqs *s)
{
    int i, n = 0;

    for (i = 0; i < s->n; i++) {
        n += s->qs[i]->count;
    }
    return n;
}

void rp_timeqs_free(rp_timeqs *s)
{
    int i;

    for (i = 0; i < s->n; i++) {
        free(s->qs[i]);
    }
    s->n = 0;
}

/* ---- deadline heap ------------------------------------------------------ */

void rp_dtimer_init(rp_dtimer *t)
{
    t->expires = 0;
    t->idx = -1;
}

static void put(rp_dheap *h, int i, rp_dtimer *t)
{
    h->v[i] = t;
    t->idx = i;
}

static void sift_up(rp_dheap *h, int i)
{
    rp_dtimer *t = h->v[i];

    while (i > 0 && h->v[(i - 1) / 2]->expires > t->expires) {
        put(h, i, h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    put(h, i, t);
}

static void sift_down(rp_dheap *h, int i)
{
    rp_dtimer *t = h->v[i];

    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) {
            break;
        }
        if (c + 1 < h->n && h->v[c + 1]->expires < h->v[c]->expires) {
            c++;
        }
        if (h->v[c]->expires >= t->expires) {
            break;
        }
        put(h, i, h->v[c]);
        i = c;
    }
    put(h, i, t);
}

int rp_dheap_add(rp_dheap *h, rp_dtimer *t, rp_usec expires)
{
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 64;
        rp_dtimer **v = realloc(h->v, (size_t)cap * sizeof(*v));
        if (!v) {
            return 0;
        }
        h->v = v;
        h->cap = cap;
    }
    t->expires = expires;
    put(h, h->n++, t);
    sift_up(h, t->idx);
    return 1;
}

void rp_dheap_remove(rp_dheap *h, rp_dtimer *t)
{
    int i = t->idx;
    rp_dtimer *last;

    if (i < 0) {
        return;
    }
    t->idx = -1;
    last = h->v[--h->n];
    if (last == t) {
        return;
    }
    put(h, i, last);
    if (i > 0 && h->v[(i - 1) / 2]->expires > last->expires) {
        sift_up(h, i);
    }
    else {
        sift_down(h, i);
    }
}

rp_dtimer *rp_dheap_first(const rp_dheap *h)
{
    return h->n ? h->v[0] : NULL;
}

void rp_dheap_free(rp_dheap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
