/*
 * tenantvals: what a tenant's entity may say of its nodes, and how much of it
 * (issue 32, docs/security.md "Three writers").
 *
 * A hardware or image type's providermap entry reaches the config of every task
 * of every node of that type (the plugin's config top level, docs/plugins.md).
 * It is the tenant's value, so it may not name a reserved key (src/common/facts.h):
 * a provider's fact of the machine (provider-id, hostname, ipaddresses, ssh_host_key,
 * ssh_user, ssh_port, ...) or a part of the task's config the engine or the worker
 * writes (cluster, provider, ssh, nodes, ...). Such an entity is refused with
 * 422 "reserved-key" naming the field; nothing is stored. The engine and the worker
 * leave such keys out again (entities stored before this check).
 *
 * Sizes: an entity's JSON is at most API_ENTITY_BYTES, a providermap entry's at
 * most API_PMAP_ENTRY_BYTES and its keys at most API_PMAP_KEY_BYTES; over a limit is
 * 422 "too-large" naming the field, with "limit" and "size" beside it. An entry is
 * copied into the queue item of every task of every node of its type, so its bound
 * is what keeps those items small (invariant 7).
 *
 * Pool-thread code, pure: no state.
 */
#include <string.h>

#include "api_int.h"
#include "facts.h"
#include "handlers.h"
#include "model.h"

static size_t json_size(const json_t *v)
{
    return json_dumpb(v, NULL, 0, JSON_COMPACT);
}

static int too_large(struct call *c, const char *field, size_t size, size_t limit, const char *what)
{
    json_decref(c->err_detail);
    c->err_detail = json_pack("{s:I, s:I}", "limit", (json_int_t)limit, "size", (json_int_t)size);
    return call_fail(c, 422, "too-large", field, "field \"%s\": %s is %zu bytes, at most %zu",
                     field, what, size, limit);
}

static void path(char *buf, size_t n, const char *where, const char *rest)
{
    snprintf(buf, n, "%s%s%s", where, *where ? "." : "", rest);
}

int api__entity_limits(struct call *c, int kind, const json_t *e, const char *where)
{
    char field[400];
    size_t size = json_size(e);
    if (size > API_ENTITY_BYTES) {
        snprintf(field, sizeof(field), "%s", *where ? where : "body");
        return too_large(c, field, size, API_ENTITY_BYTES, "the entity");
    }
    if (kind != MODEL_HARDWARETYPE && kind != MODEL_IMAGETYPE)
        return 0;
    const char *prov, *k;
    json_t *entry, *v;
    json_object_foreach(json_object_get(e, "providermap"), prov, entry)
    {
        char at[300];
        snprintf(at, sizeof(at), "providermap.%.200s", prov);
        path(field, sizeof(field), where, at);
        size = json_size(entry);
        if (size > API_PMAP_ENTRY_BYTES)
            return too_large(c, field, size, API_PMAP_ENTRY_BYTES, "a providermap entry");
        json_object_foreach(entry, k, v)
        {
            char kat[400];
            snprintf(kat, sizeof(kat), "%s.%.64s", at, k);
            path(field, sizeof(field), where, kat);
            if (strlen(k) > API_PMAP_KEY_BYTES)
                return too_large(c, field, strlen(k), API_PMAP_KEY_BYTES, "a key");
            if (facts_is_reserved(k))
                return call_fail(c, 422, "reserved-key", field,
                                 "field \"%s\": \"%s\" is reserved: %s, never a tenant's value (a "
                                 "providermap entry reaches every task of the type's nodes)",
                                 field, k,
                                 facts_is_fact(k)
                                     ? "a machine's facts (its id, addresses, host key, login) "
                                       "are written by its provider only"
                                     : "that part of a task's config is written by the engine");
        }
    }
    return 0;
}
