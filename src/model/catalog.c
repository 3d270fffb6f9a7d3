/*
 * catalog: the entities of one tenant, by kind, sorted by name (binary
 * search for lookups, insertion keeps the order), and the loader that reads
 * them from a directory laid out like the Coopr catalogue.
 *
 * The loader is the only code in this module that does I/O.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_util.h"
#include "model.h"
#include "xalloc.h"

struct table {
    void **v; /* entities, sorted by name */
    size_t n, cap;
};

struct model_catalog {
    struct table t[MODEL_KIND_COUNT];
};

static const char *const kind_names[MODEL_KIND_COUNT] = {
    "provider", "hardwaretype", "imagetype", "service", "clustertemplate", "partialtemplate"};
static const char *const kind_dirs[MODEL_KIND_COUNT] = {
    "providers", "hardwaretypes", "imagetypes", "services", "clustertemplates", "partialtemplates"};

const char *model_kind_name(enum model_kind k)
{
    return (unsigned)k < MODEL_KIND_COUNT ? kind_names[k] : "unknown";
}

const char *model_kind_dir(enum model_kind k)
{
    return (unsigned)k < MODEL_KIND_COUNT ? kind_dirs[k] : "unknown";
}

int model_kind_parse(const char *s)
{
    for (int k = 0; k < MODEL_KIND_COUNT; k++)
        if (strcmp(s, kind_names[k]) == 0 || strcmp(s, kind_dirs[k]) == 0)
            return k;
    if (strcmp(s, "template") == 0 || strcmp(s, "templates") == 0)
        return MODEL_TEMPLATE;
    return -1;
}

/* Every entity struct starts with `char *name`. */
static const char *entity_name(const void *e)
{
    return *(char *const *)e;
}

static void entity_free(enum model_kind k, void *e)
{
    switch (k) {
    case MODEL_PROVIDER:
        model_provider_free(e);
        break;
    case MODEL_HARDWARETYPE:
        model_hardwaretype_free(e);
        break;
    case MODEL_IMAGETYPE:
        model_imagetype_free(e);
        break;
    case MODEL_SERVICE:
        model_service_free(e);
        break;
    case MODEL_TEMPLATE:
    case MODEL_PARTIALTEMPLATE:
        model_template_free(e);
        break;
    default:
        break;
    }
}

/* Index of name in t, or -(insertion point) - 1. */
static long table_find(const struct table *t, const char *name)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(entity_name(t->v[mid]), name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

static bool table_put(struct model_catalog *c, enum model_kind k, void *e)
{
    struct table *t = &c->t[k];
    long i = table_find(t, entity_name(e));
    if (i >= 0) {
        entity_free(k, t->v[i]);
        t->v[i] = e;
        return true;
    }
    size_t at = (size_t)(-i - 1);
    XGROW(t->v, t->cap, t->n + 1);
    memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof(void *));
    t->v[at] = e;
    t->n++;
    return false;
}

static const void *table_get(const struct model_catalog *c, enum model_kind k, const char *name)
{
    if (!name)
        return NULL;
    long i = table_find(&c->t[k], name);
    return i >= 0 ? c->t[k].v[i] : NULL;
}

struct model_catalog *model_catalog_new(void)
{
    return xcalloc(1, sizeof(struct model_catalog));
}

void model_catalog_free(struct model_catalog *c)
{
    if (!c)
        return;
    for (int k = 0; k < MODEL_KIND_COUNT; k++) {
        for (size_t i = 0; i < c->t[k].n; i++)
            entity_free(k, c->t[k].v[i]);
        free(c->t[k].v);
    }
    free(c);
}

const struct model_provider *model_catalog_provider(const struct model_catalog *c, const char *name)
{
    return table_get(c, MODEL_PROVIDER, name);
}

const struct model_hardwaretype *model_catalog_hardwaretype(const struct model_catalog *c,
                                                            const char *name)
{
    return table_get(c, MODEL_HARDWARETYPE, name);
}

const struct model_imagetype *model_catalog_imagetype(const struct model_catalog *c,
                                                      const char *name)
{
    return table_get(c, MODEL_IMAGETYPE, name);
}

const struct model_service *model_catalog_service(const struct model_catalog *c, const char *name)
{
    return table_get(c, MODEL_SERVICE, name);
}

const struct model_template *model_catalog_template(const struct model_catalog *c, const char *name,
                                                    bool partial)
{
    return table_get(c, partial ? MODEL_PARTIALTEMPLATE : MODEL_TEMPLATE, name);
}

size_t model_catalog_count(const struct model_catalog *c, enum model_kind k)
{
    return (unsigned)k < MODEL_KIND_COUNT ? c->t[k].n : 0;
}

const void *model_catalog_at(const struct model_catalog *c, enum model_kind k, size_t i)
{
    return (unsigned)k < MODEL_KIND_COUNT && i < c->t[k].n ? c->t[k].v[i] : NULL;
}

void model_catalog_put_provider(struct model_catalog *c, struct model_provider *p)
{
    table_put(c, MODEL_PROVIDER, p);
}

void model_catalog_put_hardwaretype(struct model_catalog *c, struct model_hardwaretype *h)
{
    table_put(c, MODEL_HARDWARETYPE, h);
}

void model_catalog_put_imagetype(struct model_catalog *c, struct model_imagetype *i)
{
    table_put(c, MODEL_IMAGETYPE, i);
}

void model_catalog_put_service(struct model_catalog *c, struct model_service *s)
{
    table_put(c, MODEL_SERVICE, s);
}

void model_catalog_put_template(struct model_catalog *c, struct model_template *t)
{
    table_put(c, t->partial ? MODEL_PARTIALTEMPLATE : MODEL_TEMPLATE, t);
}

static int entity_from_json(enum model_kind k, const json_t *j, void **out, struct drv_err *err)
{
    switch (k) {
    case MODEL_PROVIDER:
        return model_provider_from_json(j, (struct model_provider **)out, err);
    case MODEL_HARDWARETYPE:
        return model_hardwaretype_from_json(j, (struct model_hardwaretype **)out, err);
    case MODEL_IMAGETYPE:
        return model_imagetype_from_json(j, (struct model_imagetype **)out, err);
    case MODEL_SERVICE:
        return model_service_from_json(j, (struct model_service **)out, err);
    case MODEL_TEMPLATE:
    case MODEL_PARTIALTEMPLATE:
        return model_template_from_json(j, k == MODEL_PARTIALTEMPLATE,
                                        (struct model_template **)out, err);
    default:
        break;
    }
    return drv_err_set(err, DRV_EINVAL, 0, "unknown entity kind %d", (int)k);
}

static json_t *entity_to_json(enum model_kind k, const void *e)
{
    switch (k) {
    case MODEL_PROVIDER:
        return model_provider_to_json(e);
    case MODEL_HARDWARETYPE:
        return model_hardwaretype_to_json(e);
    case MODEL_IMAGETYPE:
        return model_imagetype_to_json(e);
    case MODEL_SERVICE:
        return model_service_to_json(e);
    case MODEL_TEMPLATE:
    case MODEL_PARTIALTEMPLATE:
        return model_template_to_json(e);
    default:
        break;
    }
    return NULL;
}

int model_catalog_put_json(struct model_catalog *c, enum model_kind k, const json_t *j,
                           bool *replaced, struct drv_err *err)
{
    void *e;
    int rc = entity_from_json(k, j, &e, err);
    if (rc < 0)
        return rc;
    bool r = table_put(c, k, e);
    if (replaced)
        *replaced = r;
    return 0;
}

json_t *model_catalog_get_json(const struct model_catalog *c, enum model_kind k, const char *name)
{
    if ((unsigned)k >= MODEL_KIND_COUNT)
        return NULL;
    const void *e = table_get(c, k, name);
    return e ? entity_to_json(k, e) : NULL;
}

int model_catalog_remove(struct model_catalog *c, enum model_kind k, const char *name,
                         struct drv_err *err)
{
    if ((unsigned)k >= MODEL_KIND_COUNT)
        return drv_err_set(err, DRV_EINVAL, 0, "unknown entity kind %d", (int)k);
    struct table *t = &c->t[k];
    long i = table_find(t, name);
    if (i < 0)
        return drv_err_set(err, DRV_ENOENT, 0, "no %s \"%s\"", kind_names[k], name);
    entity_free(k, t->v[i]);
    memmove(&t->v[i], &t->v[i + 1], (t->n - (size_t)i - 1) * sizeof(void *));
    t->n--;
    return 0;
}

int model_codec_roundtrip(enum model_kind kind, const char *text, size_t len, struct drv_err *err)
{
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j)
        return drv_err_set(err, DRV_EINVAL, 0, "line %d column %d: %s", jerr.line, jerr.column,
                           jerr.text);
    void *e;
    int rc = entity_from_json(kind, j, &e, err);
    json_decref(j);
    if (rc < 0)
        return rc;
    /* Serialise, parse again: the second parse must succeed and give the same JSON. */
    json_t *a = entity_to_json(kind, e);
    void *e2;
    rc = entity_from_json(kind, a, &e2, err);
    if (rc < 0 && err)
        err->lib_code = 1; /* its own output must parse */
    if (rc == 0) {
        json_t *b = entity_to_json(kind, e2);
        if (!json_equal(a, b))
            rc = drv_err_set(err, DRV_EINVAL, 1, "%s: round trip changed the entity",
                             kind_names[kind]);
        json_decref(b);
        entity_free(kind, e2);
    }
    json_decref(a);
    entity_free(kind, e);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_kind(struct model_catalog *c, const char *dir, enum model_kind k,
                     struct drv_err *err)
{
    char *path = xasprintf("%s/%s", dir, kind_dirs[k]);
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        free(path);
        if (e == ENOENT)
            return 0;
        return drv_err_set(err, DRV_EIO, e, "%s/%s: %s", dir, kind_dirs[k], strerror(e));
    }
    char **files = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0 && de->d_name[0] != '.') {
            XGROW(files, cap, n + 1);
            files[n++] = xstrdup(de->d_name);
        }
    }
    closedir(d);
    if (n)
        qsort(files, n, sizeof(char *), name_cmp);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *file = xasprintf("%s/%s", path, files[i]);
        json_error_t jerr;
        json_t *j = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
        if (!j) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s/%s:%d:%d: %s", kind_dirs[k], files[i],
                             jerr.line, jerr.column, jerr.text);
        } else {
            rc = model_catalog_put_json(c, k, j, NULL, err);
            if (rc < 0)
                drv_err_prefix(err, "%s/%s", kind_dirs[k], files[i]);
            json_decref(j);
        }
        free(file);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    free(path);
    return rc;
}

int model_catalog_load_dir(struct model_catalog *c, const char *dir, struct drv_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return drv_err_set(err, errno == ENOENT ? DRV_ENOENT : DRV_EIO, errno, "%s: %s", dir,
                           strerror(errno));
    closedir(d);
    for (int k = 0; k < MODEL_KIND_COUNT; k++) {
        int rc = load_kind(c, dir, k, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}
