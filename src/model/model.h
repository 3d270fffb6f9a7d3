/*
 * model: the entities an operator defines (providers, hardware types, image
 * types, services, cluster templates), the catalogue that holds them, and the
 * cluster layout that the solver produces and the planner consumes.
 *
 * The JSON format is the one of the public Coopr catalogue
 * (../shared/fixtures/coopr-templates); docs/model.md lists every field.
 *
 * Ownership, everywhere in this header:
 *  - Every struct returned through an `out` parameter or by a *_new / *_copy
 *    function is owned by the caller and freed with the matching *_free.
 *  - Every `char *` and array inside a struct is owned by that struct.
 *  - Every `json_t *` inside a struct holds one reference owned by the struct
 *    (released by *_free); borrow it, or json_incref() to keep it longer.
 *  - *_to_json returns a new reference (the caller json_decref()s it).
 *  - *_from_json only borrows its json_t argument.
 *  - Lookups on a catalogue (model_catalog_service(), ...) return borrowed
 *    pointers, valid until the catalogue changes (put, remove) or is freed.
 *  - model_catalog_put_*() steal the entity they are given.
 *
 * Errors: functions return 0 or a negative DRV_E* code and fill a struct
 * drv_err with a message naming the entity, the field and what was expected:
 *   service "hbase-master": field "dependencies.install.requires[1]": expected a string
 * The directory loader prefixes the file: `services/x.json: service "x": ...`.
 *
 * Nothing here keeps global state; a catalogue is not thread-safe (one thread
 * at a time, or a lock held by the caller), but lookups change nothing, so a
 * catalogue nobody changes any more (a catset's, below) is read from any thread.
 */
#ifndef DROVER_MODEL_H
#define DROVER_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* A list of owned strings (names). Order as in the JSON. */
struct model_strlist {
    char **v;
    size_t n;
};

bool model_strlist_has(const struct model_strlist *l, const char *s);

enum model_kind {
    MODEL_PROVIDER = 0,
    MODEL_HARDWARETYPE,
    MODEL_IMAGETYPE,
    MODEL_SERVICE,
    MODEL_TEMPLATE,        /* cluster template ("clustertemplates") */
    MODEL_PARTIALTEMPLATE, /* partial template, for extends/includes ("partialtemplates") */
    MODEL_KIND_COUNT
};

/* "provider", "hardwaretype", ..., "partialtemplate". */
const char *model_kind_name(enum model_kind k);
/* Directory (and API collection) name: "providers", ..., "clustertemplates", "partialtemplates". */
const char *model_kind_dir(enum model_kind k);
/* Parse either form ("service" or "services"); -1 when unknown. */
int model_kind_parse(const char *s);

/* ---- providers ---------------------------------------------------------- */

struct model_provider {
    char *name;
    char *description;   /* "" when absent */
    char *providertype;  /* plugin name, for example "aws"; "" when absent */
    json_t *provisioner; /* object: plugin fields (may hold secrets); never NULL */
    json_t *extra;       /* object: unknown top-level fields, kept for round trips */
};

/* ---- hardware and image types ----------------------------------------- */

/* One entry of a "providermap": the provider's own fields for this type. */
struct model_providermap_entry {
    char *provider;
    json_t *fields; /* object, for example {"flavor": "m1.large", "cost": "0.175"} */
    double cost;    /* parsed from fields.cost (number or numeric string); 0 when absent */
    bool has_cost;
};

struct model_hardwaretype {
    char *name;
    char *description;
    struct model_providermap_entry *providermap; /* sorted by provider name */
    size_t n_providermap;
    json_t *extra;
};

struct model_imagetype {
    char *name;
    char *description;
    struct model_providermap_entry *providermap; /* sorted by provider name */
    size_t n_providermap;
    json_t *extra;
};

/* The providermap entry for provider, or NULL. Borrowed. */
const struct model_providermap_entry *
model_hardwaretype_provider(const struct model_hardwaretype *h, const char *provider);
const struct model_providermap_entry *model_imagetype_provider(const struct model_imagetype *i,
                                                               const char *provider);

/* ---- services ---------------------------------------------------------- */

/*
 * Optional task-based-deployment extension of an action: how many nodes may
 * run it at once. JSON: "strategy": "one-by-one" | "parallel" or
 * {"type": "parallel", "amount": 6}; the object form may add "max_down": N,
 * how many nodes a rolling stop-then-start of the service may have down at
 * once (docs/catalog.md "Rolling restarts").
 */
enum model_strategy {
    MODEL_STRATEGY_NONE = 0, /* not given: the planner's default */
    MODEL_STRATEGY_PARALLEL,
    MODEL_STRATEGY_ONE_BY_ONE,
};

struct model_action {
    char *name;     /* "install", "configure", "initialize", "start", "stop", ... */
    char *type;     /* automator plugin, for example "chef-solo" */
    json_t *fields; /* object, never NULL (empty when absent) */
    enum model_strategy strategy;
    unsigned amount;   /* with MODEL_STRATEGY_PARALLEL: at most this many at once; 0 = no limit */
    unsigned max_down; /* nodes down at once in a rolling restart; 0 = not given */
};

struct model_service {
    char *name;
    char *description;
    /* dependencies */
    struct model_strlist provides;
    struct model_strlist conflicts;
    struct model_strlist install_requires;
    struct model_strlist install_uses;
    struct model_strlist runtime_requires;
    struct model_strlist runtime_uses;
    /* provisioner.actions, sorted by action name */
    struct model_action *actions;
    size_t n_actions;
    json_t *extra; /* unknown top-level fields */
};

/* The action by name, or NULL. Borrowed. */
const struct model_action *model_service_action(const struct model_service *s, const char *name);

/* ---- cluster templates ------------------------------------------------- */

/* constraints.services.<service> */
struct model_service_constraint {
    char *service;
    struct model_strlist hardwaretypes; /* empty: any */
    struct model_strlist imagetypes;    /* empty: any */
    int qmin;                           /* quantities.min, -1 when absent */
    int qmax;                           /* quantities.max, -1 when absent */
};

struct model_template {
    char *name;
    char *description;
    bool partial; /* a partial template (only for extends/includes) */
    /* extends: one parent template; includes: partial templates merged in */
    char *extends; /* NULL when absent */
    struct model_strlist includes;
    /* compatibility */
    struct model_strlist compat_services;
    struct model_strlist compat_hardwaretypes;
    struct model_strlist compat_imagetypes;
    /* defaults */
    struct model_strlist default_services;
    char *default_provider;     /* NULL when absent */
    char *default_hardwaretype; /* NULL when absent */
    char *default_imagetype;    /* NULL when absent */
    json_t *default_config;     /* object, never NULL */
    /* constraints */
    struct model_strlist *mustcoexist; /* groups */
    size_t n_mustcoexist;
    struct model_strlist *cantcoexist;
    size_t n_cantcoexist;
    struct model_service_constraint *svc_constraints; /* sorted by service */
    size_t n_svc_constraints;
    int size_min;           /* constraints.size.min, -1 when absent */
    int size_max;           /* constraints.size.max, -1 when absent */
    json_t *administration; /* object or NULL when absent */
    json_t *links;          /* array or NULL when absent */
    json_t *extra;
};

/* The constraint for service, or NULL. Borrowed. */
const struct model_service_constraint *model_template_constraint(const struct model_template *t,
                                                                 const char *service);

/* ---- codec: one entity from / to JSON ----------------------------------- */

int model_provider_from_json(const json_t *j, struct model_provider **out, struct drv_err *err);
int model_hardwaretype_from_json(const json_t *j, struct model_hardwaretype **out,
                                 struct drv_err *err);
int model_imagetype_from_json(const json_t *j, struct model_imagetype **out, struct drv_err *err);
int model_service_from_json(const json_t *j, struct model_service **out, struct drv_err *err);
/* partial: parse as a partial template (kind MODEL_PARTIALTEMPLATE). */
int model_template_from_json(const json_t *j, bool partial, struct model_template **out,
                             struct drv_err *err);

json_t *model_provider_to_json(const struct model_provider *p);
json_t *model_hardwaretype_to_json(const struct model_hardwaretype *h);
json_t *model_imagetype_to_json(const struct model_imagetype *i);
json_t *model_service_to_json(const struct model_service *s);
json_t *model_template_to_json(const struct model_template *t);

void model_provider_free(struct model_provider *p);
void model_hardwaretype_free(struct model_hardwaretype *h);
void model_imagetype_free(struct model_imagetype *i);
void model_service_free(struct model_service *s);
void model_template_free(struct model_template *t);

/*
 * Parse text (a JSON document of the given kind), serialise it, parse and
 * serialise again; the fuzz target and the corpus replay test drive the
 * codec through this. Returns 0 or DRV_EINVAL with err filled; err->lib_code
 * is 1 when the codec itself is at fault (its own output does not parse, or
 * the second round changed it), 0 when the input was bad.
 */
int model_codec_roundtrip(enum model_kind kind, const char *text, size_t len, struct drv_err *err);

/* ---- catalogue ------------------------------------------------------------ */

struct model_catalog; /* opaque; entities kept sorted by name per kind */

struct model_catalog *model_catalog_new(void);
void model_catalog_free(struct model_catalog *c);

/*
 * Load every *.json file under dir/<kind dir>/ (providers, hardwaretypes,
 * imagetypes, services, clustertemplates, partialtemplates; a missing folder
 * is empty). Files are read in name order; a file whose entity name is
 * already loaded replaces it. Stops at the first bad file: err names the
 * file, the entity and the field.
 */
int model_catalog_load_dir(struct model_catalog *c, const char *dir, struct drv_err *err);

/* Lookups: borrowed, NULL when absent. */
const struct model_provider *model_catalog_provider(const struct model_catalog *c,
                                                    const char *name);
const struct model_hardwaretype *model_catalog_hardwaretype(const struct model_catalog *c,
                                                            const char *name);
const struct model_imagetype *model_catalog_imagetype(const struct model_catalog *c,
                                                      const char *name);
const struct model_service *model_catalog_service(const struct model_catalog *c, const char *name);
/* A cluster template (partial = false) or a partial template (partial = true). */
const struct model_template *model_catalog_template(const struct model_catalog *c, const char *name,
                                                    bool partial);

/*
 * Number of entities of a kind, and the i-th in name order (borrowed; cast it
 * to the kind's struct: every entity struct starts with `char *name`).
 */
size_t model_catalog_count(const struct model_catalog *c, enum model_kind k);
const void *model_catalog_at(const struct model_catalog *c, enum model_kind k, size_t i);

/* Add or replace by name; the catalogue takes ownership of the entity. */
void model_catalog_put_provider(struct model_catalog *c, struct model_provider *p);
void model_catalog_put_hardwaretype(struct model_catalog *c, struct model_hardwaretype *h);
void model_catalog_put_imagetype(struct model_catalog *c, struct model_imagetype *i);
void model_catalog_put_service(struct model_catalog *c, struct model_service *s);
/* By t->partial, into the templates or the partial templates. */
void model_catalog_put_template(struct model_catalog *c, struct model_template *t);

/*
 * Parse j as an entity of kind k and add or replace it. *replaced (when not
 * NULL) says whether an entity of that name existed. For the HTTP API.
 */
int model_catalog_put_json(struct model_catalog *c, enum model_kind k, const json_t *j,
                           bool *replaced, struct drv_err *err);
/* The entity of kind k named name as new JSON, or NULL when absent. */
json_t *model_catalog_get_json(const struct model_catalog *c, enum model_kind k, const char *name);
/* Remove (and free) by name: 0, or DRV_ENOENT. */
int model_catalog_remove(struct model_catalog *c, enum model_kind k, const char *name,
                         struct drv_err *err);

/*
 * The template named name with its extends chain and includes merged in, as a
 * new template owned by the caller (extends and includes cleared). A child's
 * scalars (defaults, size) override its parent's; lists (compatibility,
 * default services, coexist groups) are the union, parent first; a child's
 * service constraint replaces the parent's for that service. Errors: unknown
 * template or partial, a loop.
 */
int model_template_resolve(const struct model_catalog *c, const char *name,
                           struct model_template **out, struct drv_err *err);

/* ---- a catalogue shared: one version of a tenant's, and a cache of them ------ */

/*
 * A tenant's catalogue at one version (docs/schema.md, version 9: a version names one
 * catalogue), parsed once and shared by reference between threads: its rows and its
 * catalogue never change after model_catset_new, so they may be read from any number of
 * threads at once (the catalogue's lookups and model_template_resolve change nothing).
 * Only the reference count and "pinned" (the version is in the catalogs table: a job may
 * name it) change, atomically.
 *
 * model_catset_new steals rows ([{kind, name, version, body}], the entities as stored; not
 * an array: none) and parses each body with the codec; a row it refuses is left out and
 * counted (model_catset_refused). The catset starts with one reference, the caller's;
 * model_catset_ref adds one, model_catset_unref drops one and frees at the last. The
 * accessors borrow.
 */
struct model_catset;
struct model_catset *model_catset_new(const char *tenant_id, long long version, json_t *rows,
                                      bool pinned);
struct model_catset *model_catset_ref(struct model_catset *s);
void model_catset_unref(struct model_catset *s);
const struct model_catalog *model_catset_catalog(const struct model_catset *s);
const json_t *model_catset_rows(const struct model_catset *s);
long long model_catset_version(const struct model_catset *s);
const char *model_catset_tenant(const struct model_catset *s);
size_t model_catset_refused(const struct model_catset *s);
bool model_catset_pinned(const struct model_catset *s);
void model_catset_set_pinned(struct model_catset *s);

/*
 * The catsets a process has parsed, by (tenant, version), at most cap of them (the least
 * recently used goes). Thread-safe (one mutex, held for a short search). _get returns a new
 * reference (the caller's) or NULL; _put keeps a reference of its own (a catset of the
 * same tenant and version already there is replaced, its "pinned" carried over).
 */
struct model_catcache;
struct model_catcache *model_catcache_new(size_t cap);
void model_catcache_free(struct model_catcache *c);
struct model_catset *model_catcache_get(struct model_catcache *c, const char *tenant_id,
                                        long long version);
void model_catcache_put(struct model_catcache *c, struct model_catset *s);
/* Lookups that found a catset, and those that did not, since the cache was made. */
void model_catcache_stats(struct model_catcache *c, unsigned long long *hits,
                          unsigned long long *misses);

/* ---- cluster layout --------------------------------------------------------- */

/*
 * A cluster layout: node layouts, each with a count. JSON (the `drover solve
 * --json` output, also accepted by --existing):
 *   {"nodes": [{"services": ["a", "b"], "hardwaretype": "h", "imagetype": "i",
 *               "count": 3}, ...]}
 * "count" defaults to 1; an entry may carry "id" (a node id, count 1 only).
 * Services are kept sorted and unique.
 */
struct model_node_layout {
    char **services; /* sorted, unique */
    size_t n_services;
    char *hardwaretype;
    char *imagetype;
    unsigned count;
    char *id; /* NULL when absent */
};

struct model_layout {
    struct model_node_layout *nodes;
    size_t n_nodes;
};

/* Total node count (sum of counts). */
unsigned model_layout_size(const struct model_layout *l);
int model_layout_from_json(const json_t *j, struct model_layout **out, struct drv_err *err);
/* per_node: one entry per node (count omitted) instead of counts. */
json_t *model_layout_to_json(const struct model_layout *l, bool per_node);
/* Append a node layout (services copied and sorted). */
void model_layout_add(struct model_layout *l, const char *const *services, size_t n,
                      const char *hardwaretype, const char *imagetype, unsigned count,
                      const char *id);
struct model_layout *model_layout_new(void);
void model_layout_free(struct model_layout *l);

#endif
