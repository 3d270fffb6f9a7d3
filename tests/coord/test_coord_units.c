/*
 * Unit tests of coord's pure pieces: the hash table, the watch and listener
 * registry (routing by path and event type, removal and addition from inside
 * a callback), backoff with jitter, name prefixes unique per session object,
 * encoded sizes, queue item names. No server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "coord_int.h"
#include "queue_int.h"
#include "xalloc.h"

/* ---- hash table ----------------------------------------------------------------- */

struct ent {
    struct coord__hnode hn;
    int key;
};

static uint64_t hash_int(int k, bool collide)
{
    return collide ? (uint64_t)(k % 7) : coord__hash_ptr((void *)(intptr_t)(k + 1));
}

static struct ent *lookup(struct coord__htab *t, int k, bool collide)
{
    for (struct coord__hnode *n = coord__htab_find(t, hash_int(k, collide)); n;
         n = coord__htab_next(n)) {
        struct ent *e = COORD__CONTAINER_OF(n, struct ent, hn);
        if (e->key == k)
            return e;
    }
    return NULL;
}

static void htab_roundtrip(bool collide)
{
    enum { N = 10000 };
    struct coord__htab t = {0};
    struct ent *e = xcalloc(N, sizeof(*e));
    for (int i = 0; i < N; i++) {
        e[i].key = i;
        coord__htab_add(&t, &e[i].hn, hash_int(i, collide));
    }
    assert_int_equal(t.n, N);
    assert_true(t.nb >= N); /* the load stays at most 1 */
    for (int i = 0; i < N; i++)
        assert_ptr_equal(lookup(&t, i, collide), &e[i]);
    for (int i = 0; i < N; i += 2)
        coord__htab_del(&t, &e[i].hn);
    assert_int_equal(t.n, N / 2);
    for (int i = 0; i < N; i++)
        assert_ptr_equal(lookup(&t, i, collide), i % 2 ? &e[i] : NULL);
    size_t n;
    struct coord__hnode **all = coord__htab_all(&t, &n);
    assert_int_equal(n, N / 2);
    free(all);
    coord__htab_free(&t);
    free(e);
}

static void test_htab(void **state)
{
    htab_roundtrip(false);
    htab_roundtrip(true); /* 7 distinct hashes: long chains, same answers */
}

/* ---- registry --------------------------------------------------------------------- */

static struct coord__registry reg;
static char calls[1024];
static struct coord__watch *victim;
static void *adder_owner;

static void note(void *owner, int type, const char *path)
{
    char b[64];
    snprintf(b, sizeof(b), "%s:%d:%s;", (const char *)owner, type, path);
    strncat(calls, b, sizeof(calls) - strlen(calls) - 1);
}

static void remover(void *owner, int type, const char *path)
{
    note(owner, type, path);
    coord__reg_watch_del(&reg, victim);   /* an entry of the same dispatch */
    coord__reg_watch_remove(&reg, owner); /* and itself */
}

static void adder(void *owner, int type, const char *path)
{
    note(owner, type, path);
    coord__reg_watch_add(&reg, path, COORD__WM_ANY, adder_owner, note);
}

static void test_registry_routes(void **state)
{
    memset(&reg, 0, sizeof(reg));
    coord__reg_watch_add(&reg, "/a", COORD__WM_DATA, "d", note);
    coord__reg_watch_add(&reg, "/a", COORD__WM_CHILD, "c", note);
    coord__reg_watch_add(&reg, "/b", COORD__WM_ANY, "x", note);
    coord__reg_watch_add(&reg, "/a", COORD__WM_DATA, "d", note); /* once */
    assert_int_equal(reg.n_watches, 3);
    calls[0] = '\0';
    coord__reg_dispatch(&reg, ZOO_CHANGED_EVENT, "/a");
    assert_string_equal(calls, "d:3:/a;");
    calls[0] = '\0';
    coord__reg_dispatch(&reg, ZOO_CHILD_EVENT, "/a");
    assert_string_equal(calls, "c:4:/a;");
    calls[0] = '\0';
    coord__reg_dispatch(&reg, ZOO_DELETED_EVENT, "/a");
    assert_true(strstr(calls, "d:2:/a;") && strstr(calls, "c:2:/a;") && strlen(calls) == 14);
    calls[0] = '\0';
    coord__reg_dispatch(&reg, ZOO_CHANGED_EVENT, "/nobody");
    assert_string_equal(calls, "");
    coord__reg_watch_remove(&reg, "d");
    assert_int_equal(reg.n_watches, 2);
    coord__registry_check(&reg);
    coord__registry_free(&reg);
}

static void test_registry_reentrant(void **state)
{
    memset(&reg, 0, sizeof(reg));
    /* One callback removes another registration of the same event: it is not called. */
    victim = coord__reg_watch_add(&reg, "/p", COORD__WM_ANY, "v", note);
    coord__reg_watch_add(&reg, "/p", COORD__WM_ANY, "r", remover);
    calls[0] = '\0';
    coord__reg_dispatch(&reg, ZOO_CHANGED_EVENT, "/p");
    /* Chains are LIFO: whichever ran first, the other one must not run after its removal. */
    assert_true(strcmp(calls, "r:3:/p;") == 0 || strcmp(calls, "v:3:/p;r:3:/p;") == 0);
    assert_int_equal(reg.n_watches, 0);
    coord__registry_check(&reg);

    /* One callback adds a registration for the same path: it hears the next event only. */
    adder_owner = "late";
    coord__reg_watch_add(&reg, "/q", COORD__WM_ANY, "a", adder);
    calls[0] = '\0';
    coord__reg_dispatch(&reg, ZOO_CHANGED_EVENT, "/q");
    assert_string_equal(calls, "a:3:/q;");
    calls[0] = '\0';
    coord__reg_watch_remove(&reg, "a");
    coord__reg_dispatch(&reg, ZOO_CHANGED_EVENT, "/q");
    assert_string_equal(calls, "late:3:/q;");
    coord__registry_free(&reg);
}

static int told;
static void *drop_owner;

static void on_ev(void *owner, enum coord__session_event ev)
{
    told++;
    if (drop_owner)
        coord__reg_listener_remove(&reg, drop_owner);
}

static void test_listeners(void **state)
{
    enum { N = 5000 };
    memset(&reg, 0, sizeof(reg));
    char *owners = xcalloc(N, 1);
    for (int i = 0; i < N; i++)
        coord__reg_listener_add(&reg, owners + i, on_ev);
    assert_int_equal(reg.n_listeners, N);
    told = 0;
    coord__reg_tell(&reg, COORD__LOST);
    assert_int_equal(told, N);
    for (int i = 0; i < N; i += 2)
        coord__reg_listener_remove(&reg, owners + i);
    assert_int_equal(reg.n_listeners, N / 2);
    /* The first one told removes the last one: it is not told. */
    drop_owner = owners + N - 1;
    told = 0;
    coord__reg_tell(&reg, COORD__SUSPECT);
    assert_int_equal(told, N / 2 - 1);
    drop_owner = NULL;
    coord__registry_check(&reg);
    coord__registry_free(&reg);
    free(owners);
}

/* ---- backoff, prefixes ---------------------------------------------------------------- */

static void test_backoff(void **state)
{
    struct coord_session s = {0};
    s.rng = 12345;
    int lo[12], hi[12];
    for (unsigned t = 0; t < 12; t++) {
        lo[t] = 1 << 30;
        hi[t] = 0;
        for (int i = 0; i < 200; i++) {
            int d = coord__backoff_ms(&s, t);
            lo[t] = d < lo[t] ? d : lo[t];
            hi[t] = d > hi[t] ? d : hi[t];
        }
    }
    assert_true(lo[0] >= 50 && hi[0] <= 100 && hi[0] > lo[0]); /* jittered */
    assert_true(lo[1] >= 100 && hi[1] <= 200);
    assert_true(lo[11] >= 2500 && hi[11] <= 5000); /* capped */
    /* Doubling until the cap: each range starts where the previous one ends. */
    for (unsigned t = 1; t <= 5; t++)
        assert_true(lo[t] >= hi[t - 1]);
}

static void test_prefixes(void **state)
{
    /* Two session objects before any connection (session id 0): different prefixes. */
    struct coord_session a = {0}, b = {0};
    a.nonce = a.rng = coord__random_seed();
    b.nonce = b.rng = coord__random_seed();
    char pa[96], pb[96], pa2[96];
    coord__unique_prefix(&a, pa, sizeof(pa));
    coord__unique_prefix(&b, pb, sizeof(pb));
    coord__unique_prefix(&a, pa2, sizeof(pa2));
    assert_string_not_equal(pa, pb);
    assert_string_not_equal(pa, pa2);
    assert_int_equal(strncmp(pa, "0000000000000000-", 17), 0);
}

/* ---- sizes and names ------------------------------------------------------------------ */

static void test_sizes(void **state)
{
    struct coord_txn *t = coord_txn_new();
    assert_int_equal(coord_txn_bytes(t), 0);
    coord_txn_check(t, "/a", -1);
    assert_int_equal(coord_txn_bytes(t), 9 + 4 + 2 + 4);
    coord_txn_set(t, "/a", "{}", 3);
    assert_int_equal(coord_txn_bytes(t), (9 + 6 + 4) + (9 + 6 + 6 + 4));
    size_t before = coord_txn_bytes(t);
    char *big = xcalloc(1, 100001);
    memset(big, 'x', 100000);
    coord_txn_create(t, "/b", big, 0);
    assert_true(coord_txn_bytes(t) > before + 100000);
    /* the ACL counted at its largest: the owner's all, a tenant's grant and two readers
       (zkops.c) */
    assert_true(coord_txn_bytes(t) < before + 100000 + 500);
    coord_txn_free(t);
    free(big);
}

/* The per-path table of docs/zookeeper-tree.md, "ACLs": what a tenant's workers may do. */
static void test_acl_grant(void **state)
{
    char t[128];
    const int rwcd = ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_CREATE | ZOO_PERM_DELETE;
    assert_int_equal(coord_acl_grant("/drover/queues/acme", NULL, NULL, t, sizeof(t)), rwcd);
    assert_string_equal(t, "acme");
    assert_int_equal(
        coord_acl_grant("/drover/queues/acme/default/claims/s01-i4", NULL, NULL, t, sizeof(t)),
        rwcd);
    assert_int_equal(coord_acl_grant("/drover/queues", NULL, NULL, t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/drover/resources/acme", NULL, NULL, t, sizeof(t)),
                     ZOO_PERM_READ);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/ctx", "acme", NULL, t, sizeof(t)),
                     ZOO_PERM_READ);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/ctx/p0", "acme", NULL, t, sizeof(t)),
                     ZOO_PERM_READ);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/nodes/n0", "acme", NULL, t, sizeof(t)),
                     ZOO_PERM_READ);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/runs", "acme", NULL, t, sizeof(t)),
                     ZOO_PERM_READ | ZOO_PERM_CREATE);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/runs/f0.1.w.1", "acme", NULL, t, sizeof(t)),
                     ZOO_PERM_READ | ZOO_PERM_WRITE);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/ctx", NULL, NULL, t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/drover/jobs/42", "acme", NULL, t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/state", "acme", NULL, t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/log/f0", "acme", NULL, t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/drover/jobs/42/control", "acme", NULL, t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/drover/members/worker/w1", NULL, "acme", t, sizeof(t)),
                     ZOO_PERM_READ | ZOO_PERM_WRITE);
    assert_int_equal(coord_acl_grant("/drover/members/worker", NULL, "acme", t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/drover/members/droverd/d1", "acme", "acme", t, sizeof(t)),
                     0);
    assert_int_equal(coord_acl_grant("/drover/control/worker/w1", NULL, "acme", t, sizeof(t)),
                     ZOO_PERM_READ);
    assert_int_equal(coord_acl_grant("/drover/locks/jobs/42", "acme", "acme", t, sizeof(t)), 0);
    assert_int_equal(coord_acl_grant("/droverx/queues/acme", NULL, NULL, t, sizeof(t)), 0);
    /* ssh-pool: a tenant's own pools; an operator's pool is the fix-up's (acl_pool_grants) */
    assert_int_equal(coord_acl_grant("/drover/pools/acme", NULL, NULL, t, sizeof(t)), rwcd);
    assert_string_equal(t, "acme");
    assert_int_equal(
        coord_acl_grant("/drover/pools/acme/rack-a/claims/10.0.0.5:22", NULL, NULL, t, sizeof(t)),
        rwcd);
    assert_int_equal(coord_acl_grant("/drover/pools", NULL, NULL, t, sizeof(t)), 0);
    assert_int_equal(
        coord_acl_grant("/drover/pools/_operator/rack-s/claims", NULL, NULL, t, sizeof(t)), 0);
}

static void test_pool_grants(void **state)
{
    (void)state;
    struct drv_err err;
    char who[COORD__POOL_MAX][COORD__POOL_NAME + 1];
    const char *g = "rack-s:acme+globex, rack-t:acme,rack-s:acme";
    assert_int_equal(coord_acl_pool_grants_check(g, &err), 0);
    assert_int_equal(coord_acl_pool_grants_check("", &err), 0);
    assert_int_equal(coord_acl_pool_grants_check(NULL, &err), 0);
    assert_int_equal(coord__pool_grantees(g, "rack-s", who, COORD__POOL_MAX), 2);
    assert_string_equal(who[0], "acme");
    assert_string_equal(who[1], "globex");
    assert_int_equal(coord__pool_grantees(g, "rack-t", who, COORD__POOL_MAX), 1);
    assert_int_equal(coord__pool_grantees(g, "rack", who, COORD__POOL_MAX), 0);
    assert_int_equal(coord__pool_names(g, who, COORD__POOL_MAX), 2);
    assert_string_equal(who[1], "rack-t");
    /* bad: no tenant, a tenant of the operator's namespace, a path, no colon */
    const char *bad[] = {"rack-s:",   "rack-s:acme+", "rack-s:_operator", "rack-s:a/b", "rack-s",
                         "../x:acme", ":acme"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(coord_acl_pool_grants_check(bad[i], &err), DRV_EINVAL);
        assert_non_null(strstr(err.msg, "zookeeper.pool_grants"));
    }
}

/* pool_free.c: which markers name a host, and which claims say they are released. */
static void test_pool_release_marker(void **state)
{
    (void)state;
    char host[64], t[32], st[32];
    assert_int_equal(coord__pool_marker_host("10.0.0.5:22-0000000007", host, sizeof(host)), 0);
    assert_string_equal(host, "10.0.0.5:22");
    assert_int_equal(coord__pool_marker_host("db-1.rack:2222-0000000000", host, sizeof(host)), 0);
    assert_string_equal(host, "db-1.rack:2222");
    /* not "<host>-<10 digits>", a host that would leave the claims directory, too long */
    const char *bad[] = {"10.0.0.5:22",    "10.0.0.5:22-000000007",  "10.0.0.5:22x0000000007",
                         "-0000000007",    "..-0000000001",          "a/b-0000000001",
                         "a b-0000000001", "10.0.0.5:22-00000000x7", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(coord__pool_marker_host(bad[i], host, sizeof(host)), DRV_EINVAL);
    assert_int_equal(coord__pool_marker_host("10.0.0.5:22-0000000007", host, 11), DRV_EINVAL);
    assert_true(coord__pool_claim_released("{\"tenant\":\"acme\",\"state\":\"released\"}", t,
                                           sizeof(t), st, sizeof(st)));
    assert_string_equal(t, "acme");
    assert_string_equal(st, "released");
    assert_false(coord__pool_claim_released("{\"tenant\":\"acme\",\"state\":\"claimed\"}", t,
                                            sizeof(t), st, sizeof(st)));
    assert_string_equal(st, "claimed");
    assert_false(
        coord__pool_claim_released("{\"state\":\"wiping\"}", t, sizeof(t), st, sizeof(st)));
    assert_false(coord__pool_claim_released("{}", t, sizeof(t), st, sizeof(st)));
    assert_false(coord__pool_claim_released("released", t, sizeof(t), st, sizeof(st)));
    assert_false(coord__pool_claim_released(NULL, NULL, 0, NULL, 0));
    assert_false(
        coord__pool_claim_released("{\"state\":[\"released\"]}", t, sizeof(t), st, sizeof(st)));
}

static void test_item_names(void **state)
{
    assert_true(coord__q_name_ok("i4-18c2f3a4b5c-kj1.2.3"));
    assert_false(coord__q_name_ok("x4-18c2f3a4b5c-kj1.2.3"));
    assert_int_equal(coord__q_name_time("i4-18c2f3a4b5c-kj1.2.3"), 0x18c2f3a4b5cLL);
    assert_int_equal(coord__q_name_time("i4-zzzzzzzzzzz-kj"), -1);
    /* Queue order: priority first (rank 0 = priority 9), then age. */
    char *names[] = {"i5-18c2f3a4b5d-ka", "i0-18c2f3a4b5e-kb", "i5-18c2f3a4b5c-kc"};
    qsort(names, 3, sizeof(char *), coord__q_cmp_item);
    assert_string_equal(names[0], "i0-18c2f3a4b5e-kb");
    assert_string_equal(names[1], "i5-18c2f3a4b5c-kc");
    assert_string_equal(names[2], "i5-18c2f3a4b5d-ka");
}

/* coord_path_class: instances (a digit, '.', '-', or over 12 characters) past the second
   component written "{}", the rest kept, cut at COORD_PATH_CLASS_MAX - 1. */
static void test_path_class(void **state)
{
    (void)state;
    char c[COORD_PATH_CLASS_MAX];
    coord_path_class("/drover/jobs/42/runs/f3.1.worker-1.9a", c);
    assert_string_equal(c, "/drover/jobs/{}/runs/{}");
    coord_path_class("/drover/locks/jobs/7/c-0100-aa-1-0000000000", c);
    assert_string_equal(c, "/drover/locks/jobs/{}/{}");
    coord_path_class("/drover/members/droverd/droverd-1", c);
    assert_string_equal(c, "/drover/members/droverd/{}");
    coord_path_class("/drover/queues/acme/default/items/s03", c);
    assert_string_equal(c, "/drover/queues/acme/default/items/{}");
    coord_path_class("/drover-1/x", c); /* the first two components are kept as they are */
    assert_string_equal(c, "/drover-1/x");
    coord_path_class("/drover/jobs/averyveryverylongname", c);
    assert_string_equal(c, "/drover/jobs/{}");
    coord_path_class("/", c);
    assert_string_equal(c, "/");
    coord_path_class(NULL, c);
    assert_string_equal(c, "-");
    coord_path_class("", c);
    assert_string_equal(c, "-");
    char long_path[200];
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = 0;
    coord_path_class(long_path, c);
    assert_int_equal(strlen(c), COORD_PATH_CLASS_MAX - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_htab),
        cmocka_unit_test(test_registry_routes),
        cmocka_unit_test(test_registry_reentrant),
        cmocka_unit_test(test_listeners),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_acl_grant),
        cmocka_unit_test(test_pool_grants),
        cmocka_unit_test(test_pool_release_marker),
        cmocka_unit_test(test_item_names),
        cmocka_unit_test(test_path_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
