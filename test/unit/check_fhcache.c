/* Unit tests: the platform-neutral cache core (fhc_cache.c) and the watch
 * set / event routing (fhc_watchset.c) with a fake notification backend. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fhc_cache.h"
#include "fhc_watchset.h"
#include "check_run.h"

/* ---- a payload that records its release ------------------------------- */
static int released;
static char released_key[256];

static void rel(void *payload, void *ctx)
{
    released++;
    strncpy(released_key, payload, sizeof(released_key) - 1);
    free(payload);
}

static fhc_cache *mk(unsigned entries, unsigned handles, uint64_t bytes,
                     int64_t idle, unsigned min_uses)
{
    fhc_limits l = { entries, handles, bytes, idle, min_uses };
    released = 0;
    released_key[0] = '\0';
    return fhc_cache_create(&l, rel, NULL);
}

/* Fill key and unpin: returns commit result. */
static int put(fhc_cache *c, const char *key, unsigned handles, uint64_t bytes,
               int64_t now)
{
    fhc_entry *e;
    fhc_ticket *t = fhc_cache_begin(c, key);
    int rv = fhc_cache_commit(c, t, strdup(key), handles, bytes, now, &e);
    if (rv == FHC_COMMIT_OK) {
        fhc_entry_unpin(c, e);
    }
    return rv;
}

static int has(fhc_cache *c, const char *key)
{
    fhc_entry *e = fhc_cache_lookup(c, key, 0);
    if (e) {
        fhc_entry_unpin(c, e);
    }
    return e != NULL;
}

START_TEST(create_rejects_zero_entries)
{
    fhc_limits l = { 0, 1, 1, 0, 1 };
    ck_assert_ptr_null(fhc_cache_create(&l, rel, NULL));
}
END_TEST

START_TEST(miss_then_hit_counts)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_stats st;
    ck_assert(!has(c, "/a"));
    ck_assert_int_eq(put(c, "/a", 1, 0, 1), FHC_COMMIT_OK);
    ck_assert(has(c, "/a"));
    ck_assert(!has(c, "/b"));
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.hits, 1);
    ck_assert_uint_eq(st.misses, 2);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert_uint_eq(st.handles, 1);
    fhc_cache_destroy(c);
    ck_assert_int_eq(released, 1);
}
END_TEST

START_TEST(lru_evicts_least_recent)
{
    fhc_cache *c = mk(2, 10, 1000, 0, 1);
    put(c, "/a", 0, 0, 1);
    put(c, "/b", 0, 0, 2);
    ck_assert(has(c, "/a"));           /* /b is now the oldest */
    put(c, "/c", 0, 0, 3);
    ck_assert(has(c, "/a"));
    ck_assert(!has(c, "/b"));
    ck_assert(has(c, "/c"));
    ck_assert_str_eq(released_key, "/b");
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(handle_and_byte_limits_evict)
{
    fhc_cache *c = mk(100, 2, 100, 0, 1);
    fhc_stats st;
    put(c, "/a", 1, 0, 1);
    put(c, "/b", 1, 0, 2);
    put(c, "/c", 1, 0, 3);             /* evicts /a for its descriptor */
    ck_assert(!has(c, "/a"));
    put(c, "/m1", 0, 60, 4);
    put(c, "/m2", 0, 60, 5);           /* evicts LRU until 60 bytes fit */
    fhc_cache_stats(c, &st);
    ck_assert_uint_le(st.handles, 2);
    ck_assert_uint_le(st.bytes, 100);
    ck_assert(has(c, "/m2"));
    /* Bigger than the whole budget: refused, payload stays the caller's. */
    {
        fhc_entry *e;
        fhc_ticket *t = fhc_cache_begin(c, "/huge");
        char *pl = strdup("/huge");
        ck_assert_int_eq(fhc_cache_commit(c, t, pl, 0, 1000, 6, &e), FHC_COMMIT_FULL);
        ck_assert_ptr_null(e);
        free(pl);
    }
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(pinned_entry_outlives_invalidation)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_entry *e;
    fhc_stats st;
    put(c, "/a", 1, 0, 1);
    e = fhc_cache_lookup(c, "/a", 2);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(fhc_cache_invalidate(c, "/a"), 1);
    ck_assert_int_eq(released, 0);     /* still being sent */
    ck_assert(!fhc_entry_live(e));
    ck_assert_str_eq(fhc_entry_payload(e), "/a");
    ck_assert(!has(c, "/a"));
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.dead_pinned, 1);
    ck_assert_uint_eq(st.handles, 1);  /* its descriptor is still open */
    fhc_entry_unpin(c, e);
    ck_assert_int_eq(released, 1);
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.dead_pinned, 0);
    ck_assert_uint_eq(st.handles, 0);
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(two_pins_release_once)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_entry *e1, *e2;
    put(c, "/a", 1, 0, 1);
    e1 = fhc_cache_lookup(c, "/a", 2);
    e2 = fhc_cache_lookup(c, "/a", 3);
    ck_assert_ptr_eq(e1, e2);
    fhc_cache_invalidate_all(c);
    fhc_entry_unpin(c, e1);
    ck_assert_int_eq(released, 0);
    fhc_entry_unpin(c, e2);
    ck_assert_int_eq(released, 1);
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(change_during_fill_refuses_commit)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_entry *e;
    fhc_ticket *t = fhc_cache_begin(c, "/d/f");
    char *pl = strdup("/d/f");
    fhc_stats st;
    fhc_cache_invalidate(c, "/d/f");
    ck_assert_int_eq(fhc_cache_commit(c, t, pl, 1, 0, 1, &e), FHC_COMMIT_STALE);
    free(pl);
    /* A tree change above the key too. */
    t = fhc_cache_begin(c, "/d/f");
    pl = strdup("/d/f");
    fhc_cache_invalidate_tree(c, "/d");
    ck_assert_int_eq(fhc_cache_commit(c, t, pl, 1, 0, 1, &e), FHC_COMMIT_STALE);
    free(pl);
    /* Unrelated changes do not matter. */
    t = fhc_cache_begin(c, "/d/f");
    fhc_cache_invalidate(c, "/d/g");
    fhc_cache_invalidate_tree(c, "/dx");
    ck_assert_int_eq(fhc_cache_commit(c, t, strdup("/d/f"), 1, 0, 1, &e), FHC_COMMIT_OK);
    fhc_entry_unpin(c, e);
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.fill_races, 2);
    ck_assert_uint_eq(st.pending, 0);
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(abandon_forgets_ticket)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_stats st;
    fhc_cache_abandon(c, fhc_cache_begin(c, "/x"));
    fhc_cache_abandon(c, NULL);
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.pending, 0);
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(tree_invalidation_respects_components)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    put(c, "/a/b", 0, 0, 1);
    put(c, "/a/b/c", 0, 0, 1);
    put(c, "/a/bc", 0, 0, 1);
    put(c, "/z", 0, 0, 1);
    ck_assert_uint_eq(fhc_cache_invalidate_tree(c, "/a/b/"), 2);
    ck_assert(has(c, "/a/bc"));
    ck_assert(has(c, "/z"));
    ck_assert_uint_eq(fhc_cache_invalidate_all(c), 2);
    ck_assert(!has(c, "/z"));
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(idle_entries_expire)
{
    fhc_cache *c = mk(10, 10, 1000, 100, 1);
    put(c, "/old", 0, 0, 0);
    put(c, "/new", 0, 0, 150);
    ck_assert_uint_eq(fhc_cache_expire(c, 120), 1);
    ck_assert_str_eq(released_key, "/old");
    ck_assert_uint_eq(fhc_cache_expire(c, 200), 0);
    ck_assert_uint_eq(fhc_cache_expire(c, 250), 1);
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(idle_handles_expire_before_memory_entries)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_stats st;
    put(c, "/f-old", 1, 0, 10);
    put(c, "/m-old", 0, 10, 20);
    put(c, "/f-new", 1, 0, 100);
    /* Idle 50 at 105: only the old descriptor holder goes. */
    ck_assert_uint_eq(fhc_cache_expire_handles(c, 105, 50), 1);
    ck_assert_str_eq(released_key, "/f-old");
    ck_assert_uint_eq(fhc_cache_expire_handles(c, 140, 50), 0);
    ck_assert_uint_eq(fhc_cache_expire_handles(c, 150, 50), 1);
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.handles, 0);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert(has(c, "/m-old"));
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(shed_drops_descriptor_holders)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_stats st;
    put(c, "/m", 0, 10, 1);
    put(c, "/f1", 1, 0, 2);
    put(c, "/f2", 1, 0, 3);
    ck_assert_uint_eq(fhc_cache_shed(c, 1), 1);
    ck_assert(!has(c, "/f1"));
    ck_assert(has(c, "/m"));
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.handles, 1);
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(min_uses_delays_caching)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 3);
    ck_assert(!fhc_cache_count_use(c, "/a"));
    ck_assert(!fhc_cache_count_use(c, "/a"));
    ck_assert(fhc_cache_count_use(c, "/a"));
    fhc_cache_destroy(c);
    c = mk(10, 10, 1000, 0, 1);
    ck_assert(fhc_cache_count_use(c, "/a"));
    fhc_cache_destroy(c);
}
END_TEST

START_TEST(refill_replaces_old_entry)
{
    fhc_cache *c = mk(10, 10, 1000, 0, 1);
    fhc_stats st;
    put(c, "/a", 1, 0, 1);
    put(c, "/a", 1, 0, 2);
    fhc_cache_stats(c, &st);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert_uint_eq(st.handles, 1);
    ck_assert_int_eq(released, 1);
    fhc_cache_destroy(c);
}
END_TEST

/* ---- watch set with a fake backend ----------------------------------- */
#define MAXW 64
static char *watched[MAXW];
static int next_id, fail_add;

static int fake_add(fhc_watcher *w, const char *dir, long *id)
{
    if (fail_add) {
        return fail_add;
    }
    watched[next_id] = strdup(dir);
    *id = next_id++;
    return 0;
}

static void fake_remove(fhc_watcher *w, long id)
{
    free(watched[id]);
    watched[id] = NULL;
}

static const fhc_watch_backend fake = { .name = "fake", .add = fake_add,
                                        .remove = fake_remove };

static long id_of(const char *dir)
{
    int i;
    for (i = 0; i < next_id; i++) {
        if (watched[i] && !strcmp(watched[i], dir)) {
            return i;
        }
    }
    return -1;
}

static void ws_setup(void)
{
    int i;
    for (i = 0; i < MAXW; i++) {
        free(watched[i]);
        watched[i] = NULL;
    }
    next_id = 0;
    fail_add = 0;
}

START_TEST(acquire_watches_every_ancestor)
{
    fhc_watchset *ws = fhc_watchset_create(&fake, NULL, 100);
    ck_assert_int_eq(fhc_watchset_acquire(ws, "/srv/www/a.html"), 0);
    ck_assert_int_eq(fhc_watchset_acquire(ws, "/srv/www/b.html"), 0);
    ck_assert_uint_eq(fhc_watchset_count(ws), 3);
    ck_assert_int_ge(id_of("/srv/www"), 0);
    ck_assert_int_ge(id_of("/srv"), 0);
    ck_assert_int_ge(id_of("/"), 0);
    fhc_watchset_release(ws, "/srv/www/a.html");
    ck_assert_uint_eq(fhc_watchset_count(ws), 3);
    fhc_watchset_release(ws, "/srv/www/b.html");
    ck_assert_uint_eq(fhc_watchset_count(ws), 0);
    ck_assert_int_eq(id_of("/"), -1);      /* removed from the backend */
    fhc_watchset_destroy(ws);
}
END_TEST

START_TEST(acquire_limit_undoes_partial_work)
{
    fhc_watchset *ws = fhc_watchset_create(&fake, NULL, 2);
    ck_assert_int_eq(fhc_watchset_acquire(ws, "/a/b/c/f"), ENOSPC);
    ck_assert_uint_eq(fhc_watchset_count(ws), 0);
    ck_assert_int_eq(fhc_watchset_acquire(ws, "/a/f"), 0);
    fail_add = ENOSPC;
    ck_assert_int_eq(fhc_watchset_acquire(ws, "/b/f"), ENOSPC);
    ck_assert_uint_eq(fhc_watchset_count(ws), 2);
    fhc_watchset_destroy(ws);
    ck_assert_int_eq(id_of("/a"), -1);
}
END_TEST

START_TEST(route_events_to_invalidations)
{
    fhc_cache *c = mk(100, 100, 1000, 0, 1);
    fhc_watchset *ws = fhc_watchset_create(&fake, NULL, 100);
    const char *files[] = { "/w/d/a", "/w/d/b", "/w/e/c", "/w/top" };
    unsigned i;
    for (i = 0; i < 4; i++) {
        fhc_watchset_acquire(ws, files[i]);
        put(c, files[i], 1, 0, 1);
    }
    /* Content change of one file. */
    fhc_watchset_route(ws, c, id_of("/w/d"), "a", FHC_EV_CHANGED);
    ck_assert(!has(c, "/w/d/a"));
    ck_assert(has(c, "/w/d/b"));
    /* A directory on the way renamed away. */
    fhc_watchset_route(ws, c, id_of("/w"), "d", FHC_EV_MOVED | FHC_EV_ISDIR);
    ck_assert(!has(c, "/w/d/b"));
    ck_assert(has(c, "/w/e/c"));
    /* A symlink replacing a component: MOVED without ISDIR. */
    fhc_watchset_route(ws, c, id_of("/w"), "e", FHC_EV_MOVED);
    ck_assert(!has(c, "/w/e/c"));
    ck_assert(has(c, "/w/top"));
    /* Unknown id: ignored. */
    fhc_watchset_route(ws, c, 999, "top", FHC_EV_CHANGED);
    ck_assert(has(c, "/w/top"));
    /* Overflow drops everything. */
    fhc_watchset_route(ws, c, -1, NULL, FHC_EV_OVERFLOW);
    ck_assert(!has(c, "/w/top"));
    fhc_cache_destroy(c);
    fhc_watchset_destroy(ws);
}
END_TEST

START_TEST(route_self_and_gone)
{
    fhc_cache *c = mk(100, 100, 1000, 0, 1);
    fhc_watchset *ws = fhc_watchset_create(&fake, NULL, 100);
    long id;
    fhc_watchset_acquire(ws, "/r/x/f");
    put(c, "/r/x/f", 1, 0, 1);
    fhc_watchset_acquire(ws, "/r/y");
    put(c, "/r/y", 1, 0, 1);
    id = id_of("/r/x");
    fhc_watchset_route(ws, c, id, NULL, FHC_EV_SELF | FHC_EV_GONE);
    ck_assert(!has(c, "/r/x/f"));
    ck_assert(has(c, "/r/y"));
    /* The directory came back: acquiring watches it anew. */
    ck_assert_int_eq(fhc_watchset_acquire(ws, "/r/x/g"), 0);
    ck_assert_int_ne(id_of("/r/x"), -1);
    fhc_cache_destroy(c);
    fhc_watchset_destroy(ws);
}
END_TEST

START_TEST(drive_paths_watch_up_to_the_drive_root)
{
    fhc_cache *c = mk(100, 100, 1000, 0, 1);
    fhc_watchset *ws = fhc_watchset_create(&fake, NULL, 100);

    /* Not absolute until drive paths are on (Unix). */
    ck_assert_int_eq(fhc_watchset_acquire(ws, "C:/www/a.txt"), EINVAL);
    ck_assert_uint_eq(fhc_watchset_count(ws), 0);
    fhc_watchset_drive_paths(ws, 1);
    ck_assert_int_eq(fhc_watchset_acquire(ws, "C:/www/a.txt"), 0);
    ck_assert_int_eq(fhc_watchset_acquire(ws, "C:/b.txt"), 0);
    ck_assert_uint_eq(fhc_watchset_count(ws), 2);
    ck_assert_int_ge(id_of("C:/www"), 0);
    ck_assert_int_ge(id_of("C:/"), 0);
    ck_assert_int_eq(id_of("C:"), -1);
    put(c, "C:/www/a.txt", 1, 0, 1);
    put(c, "C:/b.txt", 1, 0, 1);
    /* A name in the root: no doubled separator in the key. */
    fhc_watchset_route(ws, c, id_of("C:/"), "b.txt", FHC_EV_CHANGED);
    ck_assert(!has(c, "C:/b.txt"));
    ck_assert(has(c, "C:/www/a.txt"));
    fhc_watchset_route(ws, c, id_of("C:/"), "www", FHC_EV_MOVED);
    ck_assert(!has(c, "C:/www/a.txt"));
    fhc_watchset_release(ws, "C:/www/a.txt");
    fhc_watchset_release(ws, "C:/b.txt");
    ck_assert_uint_eq(fhc_watchset_count(ws), 0);
    /* UNC and relative paths are never watched. */
    ck_assert_int_eq(fhc_watchset_acquire(ws, "//srv/share/f"), EINVAL);
    ck_assert_int_eq(fhc_watchset_acquire(ws, "/f"), EINVAL);
    ck_assert_uint_eq(fhc_watchset_count(ws), 0);
    ck_assert_uint_eq(fhc_path_root_len("//srv/share/f", 1), 0);
    ck_assert_uint_eq(fhc_path_root_len("/f", 0), 1);
    ck_assert_uint_eq(fhc_path_root_len("C:f", 1), 0);
    ck_assert_uint_eq(fhc_path_root_len("rel/f", 1), 0);
    ck_assert_uint_eq(fhc_path_root_len("d:/f", 1), 3);
    ck_assert_uint_eq(fhc_path_root_len("d:/f", 0), 0);
    fhc_cache_destroy(c);
    fhc_watchset_destroy(ws);
}
END_TEST

START_TEST(route_root_paths)
{
    fhc_cache *c = mk(100, 100, 1000, 0, 1);
    fhc_watchset *ws = fhc_watchset_create(&fake, NULL, 100);
    fhc_watchset_acquire(ws, "/f");
    put(c, "/f", 1, 0, 1);
    fhc_watchset_route(ws, c, id_of("/"), "f", FHC_EV_CHANGED);
    ck_assert(!has(c, "/f"));
    fhc_cache_destroy(c);
    fhc_watchset_destroy(ws);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fhcache");
    TCase *tc = tcase_create("core");
    TCase *tw = tcase_create("watchset");

    tcase_add_test(tc, create_rejects_zero_entries);
    tcase_add_test(tc, miss_then_hit_counts);
    tcase_add_test(tc, lru_evicts_least_recent);
    tcase_add_test(tc, handle_and_byte_limits_evict);
    tcase_add_test(tc, pinned_entry_outlives_invalidation);
    tcase_add_test(tc, two_pins_release_once);
    tcase_add_test(tc, change_during_fill_refuses_commit);
    tcase_add_test(tc, abandon_forgets_ticket);
    tcase_add_test(tc, tree_invalidation_respects_components);
    tcase_add_test(tc, idle_entries_expire);
    tcase_add_test(tc, shed_drops_descriptor_holders);
    tcase_add_test(tc, idle_handles_expire_before_memory_entries);
    tcase_add_test(tc, min_uses_delays_caching);
    tcase_add_test(tc, refill_replaces_old_entry);
    suite_add_tcase(s, tc);

    tcase_add_checked_fixture(tw, ws_setup, NULL);
    tcase_add_test(tw, acquire_watches_every_ancestor);
    tcase_add_test(tw, acquire_limit_undoes_partial_work);
    tcase_add_test(tw, route_events_to_invalidations);
    tcase_add_test(tw, route_self_and_gone);
    tcase_add_test(tw, route_root_paths);
    tcase_add_test(tw, drive_paths_watch_up_to_the_drive_root);
    suite_add_tcase(s, tw);
    return s;
}

int main(void)
{
    return check_run(suite());
}
