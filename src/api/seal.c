/*
 * seal: sensitive values in request bodies, sealed at their place before
 * they are stored (docs/security.md, "Sealed values"; the format: seal.h).
 *
 * A value is sensitive when its key's name says so (api_field_sensitive:
 * password, secret, token, credential, private_key, api_key), at any depth,
 * or when its dotted path is listed by the entity (a provider's "sensitive"
 * array, paths relative to its provisioner object). The whole value is
 * sealed, whatever its JSON type, under the caller's tenant key, bound to the
 * tenant, the entity (kind and name) and the field's path. null and "" are
 * left alone. "********" (what the API shows in place of a sealed value)
 * keeps the value stored at the same place before; where there is none, it
 * is refused.
 *
 * Where it applies (handlers): a provider's provisioner (provider/<name>,
 * provisioner.<path>), a cluster or partial template's defaults.config
 * (<kind>/<name>, defaults.config.<path>), a create's, a preview's and a
 * configure's config (cluster/<name>, config.<path>). A create whose config
 * takes values from its template ("********", or no config at all) has them
 * opened at the template's place and sealed again at the cluster's
 * (api__seal_rebind).
 *
 * Input that looks sealed ("enc:...") is refused anywhere in a body
 * (api__refuse_sealed, 422 sealed-input): only the API seals, so a value
 * sealed elsewhere (another tenant's, another field's) never gets in.
 *
 * Pool or heavy thread code, on the call's own data; the fleet key is
 * read-only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "api_int.h"
#include "handlers.h"
#include "model.h"
#include "seal.h"
#include "xalloc.h"

static bool listed(const json_t *marked, const char *path)
{
    size_t i;
    json_t *v;
    json_array_foreach(marked, i, v) if (strcmp(json_string_value(v), path) == 0) return true;
    return false;
}

struct sealer {
    struct call *c;
    const json_t *marked;
    unsigned char tkey[32];
    const char *kind, *name;
};

/* One sensitive value at key k of object obj; at: its path in the entity. */
static int seal_one(struct sealer *s, json_t *obj, const char *k, json_t *v, const json_t *prev,
                    const char *field, const char *at)
{
    struct call *c = s->c;
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
        return 0;
    if (json_is_string(v) && strcmp(json_string_value(v), API_REDACTED) == 0) {
        json_t *old = json_is_object(prev) ? json_object_get(prev, k) : NULL;
        if (!seal_looks_sealed(json_string_value(old)))
            return call_fail(c, 400, "invalid", field,
                             "field \"%s\": \"%s\" keeps a stored value, and there is none", field,
                             API_REDACTED);
        json_object_set(obj, k, old); /* the same place: it opens here as it did */
        return 0;
    }
    if (!c->key)
        return call_fail(c, 422, "no-secrets-key", field,
                         "field \"%s\" is sensitive and secrets.key_file is not configured", field);
    struct seal_place pl = {c->who.tenant, s->kind, s->name, at};
    char *enc = seal_value_at(s->tkey, &pl, v);
    json_object_set_new(obj, k, json_string(enc));
    free(enc);
    return 0;
}

/* path: j's path relative to the marked list's root; at: j's path in the entity. */
static int walk(struct sealer *s, json_t *j, const json_t *prev, const char *path, const char *at,
                const char *where)
{
    char sub[512], field[640], at2[640];
    if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            snprintf(field, sizeof(field), "%s[%zu]", where, i);
            snprintf(at2, sizeof(at2), "%s[%zu]", at, i);
            int rc =
                walk(s, v, json_is_array(prev) ? json_array_get(prev, i) : NULL, path, at2, field);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (!json_is_object(j))
        return 0;
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(j, tmp, k, v)
    {
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
        snprintf(field, sizeof(field), "%s%s%s", where, *where ? "." : "", k);
        snprintf(at2, sizeof(at2), "%s%s%s", at, *at ? "." : "", k);
        const json_t *pv = json_is_object(prev) ? json_object_get(prev, k) : NULL;
        int rc = api_field_sensitive(k) || listed(s->marked, sub)
                     ? seal_one(s, j, k, v, prev, field, at2)
                     : walk(s, v, pv, sub, at2, field);
        if (rc)
            return rc;
    }
    return 0;
}

int api__seal(struct call *c, json_t *j, const json_t *prev, const json_t *marked,
              const struct api__place *at, const char *where)
{
    struct sealer s = {.c = c, .marked = marked, .kind = at->kind, .name = at->name};
    if (c->key)
        seal_tenant_key(c->key, c->who.tenant, s.tkey);
    int rc = walk(&s, j, prev, "", at->field, where ? where : "");
    OPENSSL_cleanse(s.tkey, sizeof(s.tkey));
    return rc;
}

/* ---- a create's values taken from its template ------------------------------------- */

/* Does v hold, somewhere, a sealed string that own holds at the same path? */
static bool shares_sealed(const json_t *own, const json_t *v)
{
    if (json_is_string(v))
        return seal_looks_sealed(json_string_value(v)) && json_equal(own, v);
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
        {
            if (shares_sealed(json_object_get(own, k), x))
                return true;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            if (shares_sealed(json_array_get(own, i), x))
                return true;
        }
    }
    return false;
}

/*
 * The template that gave the create's config the sealed values under its
 * top-level key k (value v): the one, among the create's template, its
 * parents (extends) and their includes, depth first, whose own
 * defaults.config holds one of v's sealed strings at the same path. A
 * template's config merges key by key (model_template_resolve), so every
 * value under k that a "********" took comes from that one template; a
 * sealed value is unique (its nonce), so equality names its origin.
 */
static const struct model_template *source_of(const struct model_catalog *cat, const char *name,
                                              bool partial, const char *k, const json_t *v,
                                              int depth)
{
    const struct model_template *t = model_catalog_template(cat, name, partial);
    if (!t && !partial)
        t = model_catalog_template(cat, name, true);
    if (!t || depth > 32)
        return NULL;
    if (shares_sealed(json_object_get(t->default_config, k), v))
        return t;
    const struct model_template *found = NULL;
    if (t->extends)
        found = source_of(cat, t->extends, false, k, v, depth + 1);
    for (size_t i = 0; !found && i < t->includes.n; i++)
        found = source_of(cat, t->includes.v[i], true, k, v, depth + 1);
    return found;
}

struct rebind {
    const unsigned char *tkey;
    const char *tenant, *cluster;
    const struct model_catalog *cat;
    const char *tname;
};

/* Re-seal the sealed values under one top-level key k of a create's config: those this
   request sealed stay; those taken from a template open at its place and move here. */
static int rebind_key(struct call *c, struct rebind *r, json_t *cfg, const char *k)
{
    json_t *v = json_object_get(cfg, k);
    if (!json_is_string(v) && !json_is_object(v) && !json_is_array(v))
        return 0;
    const struct model_template *t = source_of(r->cat, r->tname, false, k, v, 0);
    struct seal_place from = {r->tenant, "", "", "defaults.config"};
    if (t) {
        from.kind = t->partial ? "partialtemplate" : "clustertemplate";
        from.name = t->name;
    }
    struct seal_place to = {r->tenant, "cluster", r->cluster, "config"};
    json_t *one = json_pack("{s:O}", k, v);
    struct drv_err err;
    int rc = seal_rebind_tree(r->tkey, &from, &to, one, &err);
    if (rc == 0)
        json_object_set(cfg, k, json_object_get(one, k));
    json_decref(one);
    if (rc)
        return call_fail(c, 422, "sealed-input", "config", "%s", err.msg);
    return 0;
}

int api__seal_rebind(struct call *c, json_t *cfg, const struct model_catalog *cat,
                     const char *tname, const char *cluster)
{
    if (!c->key || !json_is_object(cfg))
        return 0;
    struct rebind r = {.tenant = c->who.tenant, .cluster = cluster, .cat = cat, .tname = tname};
    unsigned char tkey[32];
    seal_tenant_key(c->key, c->who.tenant, tkey);
    r.tkey = tkey;
    const char *k;
    json_t *v;
    void *tmp;
    int rc = 0;
    json_object_foreach_safe(cfg, tmp, k, v)
    {
        if ((rc = rebind_key(c, &r, cfg, k)) != 0)
            break;
    }
    OPENSSL_cleanse(tkey, sizeof(tkey));
    return rc;
}

/* ---- input that looks sealed ------------------------------------------------------- */

static int refuse(struct call *c, const json_t *j, char *path, size_t cap)
{
    size_t len = strlen(path);
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(j)) {
        json_object_foreach((json_t *)j, k, v)
        {
            snprintf(path + len, cap - len, "%s%s", len ? "." : "", k);
            int rc = refuse(c, v, path, cap);
            if (rc)
                return rc;
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            snprintf(path + len, cap - len, "[%zu]", i);
            int rc = refuse(c, v, path, cap);
            if (rc)
                return rc;
        }
    } else if (json_is_string(j) && seal_looks_sealed(json_string_value(j))) {
        return call_fail(c, 422, "sealed-input", path,
                         "field \"%s\": a value that looks sealed (\"enc:...\") is not accepted; "
                         "send the secret itself and the API seals it",
                         path);
    }
    path[len] = '\0';
    return 0;
}

int api__refuse_sealed(struct call *c, const json_t *body)
{
    char path[1024] = "";
    return refuse(c, body, path, sizeof(path));
}
