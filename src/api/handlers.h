/*
 * handlers: the handlers of /v1 and the helpers they share. Not public.
 *
 * Every api__h_* is an api_handler (api_int.h): it runs on a store pool
 * thread after authentication, with the caller in c->who; it reads
 * c->seg/c->body, runs its queries, and leaves the reply in c->status and
 * c->out (or an error through call_fail or a DRV code). Writes run in one
 * transaction with their audit entry: a handler that fails after BEGIN
 * returns non-zero and the caller rolls back.
 *
 * Tenant isolation: every query takes the caller's tenant id (and, for role
 * user, its user id as the owner), so what another tenant owns is simply not
 * found. A superadmin has no tenant and no route into tenant data.
 *
 * Files: handlers_entities.c (entities, import, export), handlers_admin.c
 * (whoami, audit, tenants, users), handlers_tokens.c (tokens),
 * handlers_create.c (create, preview), handlers_clusters.c (clusters,
 * operations), handlers_jobs.c (jobs), handlers_fleet.c (members, workers,
 * queues), handlers_resources.c (resources), handlers_util.c (the helpers below), routes.c (the
 * table).
 *
 * Handlers that solve or plan come in parts (api_int.h: c->heavy, c->then):
 * the database part here, the computing part on the heavy workpool.
 */
#ifndef DROVER_API_HANDLERS_H
#define DROVER_API_HANDLERS_H

#include <jansson.h>
#include <libpq-fe.h>

#include "api_int.h"

struct model_catalog;
struct model_catset;
struct model_template;
struct model_layout;
/* ---- hostfields.c: what a tenant's provider entity may not say ---- */

/* True when api.loopback_tenants names tenant (or is "*"). */
bool api__loopback_allowed(const struct api_opts *o, const char *tenant);
/*
 * 0 when provider (an entity of kind provider, already valid) sets no host field and
 * is not a loopback provider of a tenant the operator did not enable; else call_fail
 * 422 ("host-field", "provider-not-allowed") naming the field, prefixed by where
 * ("" or "providers[2]").
 */
int api__provider_policy(struct call *c, const json_t *provider, const char *where);

/* ---- tenantvals.c: what a tenant's entity may say of its nodes, and how much ---- */

#define API_ENTITY_BYTES (64 * 1024) /* an entity's compact JSON */
#define API_PMAP_ENTRY_BYTES 4096    /* a providermap entry's */
#define API_PMAP_KEY_BYTES 64        /* a key of a providermap entry */
/*
 * 0 when e (an entity of kind, already valid) is within the size limits and its
 * providermap entries name no reserved key (facts.h); else call_fail 422
 * ("too-large" with err_detail {limit, size}, "reserved-key") naming the field,
 * prefixed by where ("" or "hardwaretypes[2]").
 */
int api__entity_limits(struct call *c, int kind, const json_t *e, const char *where);

/* ---- quota.c: what one tenant may take ---- */

enum api_quota {
    API_QUOTA_CLUSTERS,
    API_QUOTA_NODES,
    API_QUOTA_JOBS,
    API_QUOTA_RESOURCE_VERSIONS,
    API_QUOTA_RESOURCE_BYTES,
    API_QUOTA_COUNT
};
/*
 * Inside the caller's transaction, before its writes: lock the caller's tenant row
 * (store_tenant_lock_quota) and check that its use plus asked[q] stays within each quota q. 0, or
 * call_fail 422/429 "quota-exceeded" with {"quota", "limit", "used", "asked"} in the error (the
 * caller returns it and its transaction rolls back).
 */
int api__quota_check(PGconn *conn, struct call *c, const long asked[API_QUOTA_COUNT],
                     struct drv_err *err);
/* The same, after the caller's writes instead of before: its own rows (asked[q] of quota
 * q) are counted already, so its use stays within each quota q. The lock is then held
 * only from here to the caller's commit; writes before it hold no tenant lock (their
 * foreign keys' FOR KEY SHARE does not conflict with it). */
int api__quota_check_after(PGconn *conn, struct call *c, const long asked[API_QUOTA_COUNT],
                           struct drv_err *err);
/*
 * A create's check, after its writes, that does not serialise the tenant's creates while
 * they are far from every limit (docs/api.md "Quotas"). The tenant row is share-locked
 * (FOR SHARE: a quota's change, the tenant's deletion and api__quota_check's lock wait for
 * it; other creates do not). No limit on what asked adds: 0, nothing counted. Else, when
 * each asked[q] is small (1 cluster, 1 job, 100 nodes at most), one of the tenant's 8 lanes
 * is taken (a transaction advisory lock) and the use counted: within each limit less 7 times
 * that most (room for the creates in the other lanes, uncounted), 0. Otherwise
 * API_QUOTA_SLOW: the caller rolls its transaction back and makes it again with
 * api__quota_check_after, which decides exactly. Safe: a create's count misses at most one
 * create per other lane, each within the most, and api__quota_check_after's lock waits for
 * every create that holds the share lock.
 */
#define API_QUOTA_SLOW 1
int api__quota_check_fast(PGconn *conn, struct call *c, const long asked[API_QUOTA_COUNT],
                          struct drv_err *err);
/* The same lock alone, for a write checked after it (a resources push). */
int api__quota_lock(PGconn *conn, struct call *c, struct drv_err *err);
/* After a resources version of size bytes was inserted (under api__quota_lock): prune the
   unpinned versions beyond resource_versions, then check versions and bytes as above. */
int api__quota_after_push(PGconn *conn, struct call *c, long size, struct drv_err *err);
int api__h_quota_get(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_quota_put(PGconn *conn, struct call *c, struct drv_err *err);

/* ---- helpers (handlers_util.c) ---- */

/* A tenant or user name (lower_only) or a cluster name: 1 to 63 of [A-Za-z0-9_-.], alnum first. */
int api__name_ok(const char *s, int lower_only);
/* An entity name from a catalogue: 1 to 128 letters, digits and . _ -, but not "." or "..". */
int api__entity_name_ok(const char *s);
/* Append the caller's audit entry; steals detail (may be NULL). */
int api__audit(PGconn *conn, struct call *c, const char *action, const char *kind, const char *id,
               json_t *detail, struct drv_err *err);
/* 0 when the call has a body, else call_fail 400 malformed. */
int api__need_body(struct call *c);
/* The field path inside a model error ("... field \"a.b\": ..."), with prefix, into out. */
void api__model_field(const char *msg, const char *prefix, char *out, size_t n);
/* 1 when j is an array of strings. */
int api__string_list_ok(const json_t *j);
/* The entity kind (enum model_kind) of a collection name ("providers"), or -1. */
int api__kind_of(const char *seg);

/* ---- plans of operations (handlers_plan.c) ---- */

/* A cluster's revision: a digest of what an operation is judged on (size, services, layout,
 * template version, status, config, updated_at), hex, API_REVISION_LEN characters. */
#define API_REVISION_LEN 16
void api__cluster_revision(const json_t *cluster, char out[API_REVISION_LEN + 1]);

/* What a dry run is made of; everything borrowed. */
struct api_plan_in {
    const char *op;     /* the API's operation name */
    const json_t *body; /* the request */
    const json_t *cluster;
    const struct model_catalog *cat;
    const struct model_template *t;
    const struct model_layout *existing; /* NULL: none (a recreate) */
    const struct model_layout *target;   /* solved; NULL: the layout stays */
    const json_t *target_json;           /* the job's request.target, or NULL */
    const json_t *config;                /* a configure's config as applied, or NULL */
    const json_t *durations;             /* [{service, action, secs, n}] */
    const char *revision;
};
/* A plan's summary: {operation, tasks, by_action, stages, critical_path, estimated_seconds,
 * estimate: {known, unknown}} with durations (may be NULL) [{service, action, secs}]. New. */
struct planner_plan;
json_t *api__plan_summary(const struct planner_plan *p, const json_t *durations,
                          struct drv_err *err);
/* Plan the operation as the engine would and answer 200 with its diff, summary, rollback and
 * revision (docs/api.md "Plans"); 422 when it cannot be planned. Heavy-pool code. */
int api__plan_answer(struct call *c, const struct api_plan_in *in, struct drv_err *err);

/* A configure's whole config, as the job applies it (handlers_clusters.c). New in *out. */
int api__configure_config(PGconn *conn, struct call *c, const json_t *cluster, json_t **out,
                          struct drv_err *err);
/* The caller's tenant's catalogue now (its head version's, from this node's cache when it
 * has it), a new reference. */
int api__load_catalog(PGconn *conn, struct call *c, struct model_catset **out, struct drv_err *err);
/* Pin s's version (store_catalog_pin) inside the caller's transaction, unless it is known
 * pinned; the caller marks it pinned (model_catset_set_pinned) once that transaction
 * committed. */
int api__pin_catalog(PGconn *conn, struct model_catset *s, struct drv_err *err);
/* The version of an entity among rows, 0 when absent. */
int api__entity_version(const json_t *rows, const char *kind, const char *name);

/* Where an entity's sealed values live (seal.h's places, but the tenant: the caller's). */
struct api__place {
    const char *kind;  /* "provider", "clustertemplate", "partialtemplate", "cluster" */
    const char *name;  /* the entity's name */
    const char *field; /* j's path in the entity: "provisioner", "defaults.config", "config" */
};

/*
 * seal.c: seal, in place, the sensitive values inside j (any JSON; objects and arrays are
 * walked): those under a sensitive key name at any depth, and those whose dotted path from
 * j is in marked (an array of strings, may be NULL), each under the caller's tenant key at
 * its place (at, plus its path inside j). "********" keeps the value at the same place in
 * prev (may be NULL; prev must be the stored value of the same entity and field). where
 * names j in errors ("config", "providers[2].provisioner").
 * 0, or call_fail: 400 invalid ("********" with nothing stored), 422 no-secrets-key.
 */
int api__seal(struct call *c, json_t *j, const json_t *prev, const json_t *marked,
              const struct api__place *at, const char *where);

struct model_catalog;
/*
 * seal.c: a create's config (an object, in place) after api__seal: each sealed value
 * that is not this cluster's (one "********" or a missing config took from the template
 * tname of cat, its parents or its includes) is opened at that template's place and sealed
 * again at cluster/<cluster>'s config.<path>. 0, or call_fail 422 sealed-input.
 */
int api__seal_rebind(struct call *c, json_t *cfg, const struct model_catalog *cat,
                     const char *tname, const char *cluster);

/* seal.c: 0, or call_fail 422 sealed-input naming the first string in body that looks
   sealed ("enc:..."): only the API seals. */
int api__refuse_sealed(struct call *c, const json_t *body);

#define API_PAGE_DEFAULT 1000 /* tasks in a page of a plan, unless ?limit= says */
#define API_PAGE_MAX 10000    /* the most a page (or a DOT graph) holds */
/* ?offset= (>= 0, default 0) and ?limit= (1 to API_PAGE_MAX, default API_PAGE_DEFAULT);
   0 or call_fail 400 naming the parameter. */
int api__page_params(struct call *c, long *offset, long *limit);

/* ---- handlers ---- */

int api__h_entity_list(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_entity_get(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_entity_create(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_entity_replace(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_entity_delete(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_import(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_export(PGconn *conn, struct call *c, struct drv_err *err);

int api__h_whoami(PGconn *conn, struct call *c, struct drv_err *err);
/* GET /v1/version: {"version", "commit", "format"} of the node that answers. */
int api__h_version(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_token_new(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_token_list(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_token_revoke(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_audit(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_tenant_list(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_tenant_create(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_user_create(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_user_list(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_user_delete(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_tenant_delete(PGconn *conn, struct call *c, struct drv_err *err);

int api__h_cluster_create(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_preview(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_cluster_list(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_cluster_get(PGconn *conn, struct call *c, struct drv_err *err);
/* GET /v1/clusters/{id}/snapshots[/{job}]: the list, or one with its state. */
int api__h_cluster_snapshots(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_cluster_op(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_cluster_delete(PGconn *conn, struct call *c, struct drv_err *err);

int api__h_job_list(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_job_get(PGconn *conn, struct call *c, struct drv_err *err);
/* handlers_tasks.c: large jobs: the streamed full read, a page of tasks, groups of tasks. */
int api__h_job_get_full(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_job_tasks(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_job_task_groups(PGconn *conn, struct call *c, struct drv_err *err);
/* handlers_tasks.c, pure: a task cursor "f.12" / "r.3" (0, or -1 when malformed), one from a
   task row (out: 16 bytes), and a PostgreSQL array "{a,b}" from "a,b" when every name is a
   task state (NULL otherwise; the caller frees). */
int api__task_cursor_parse(const char *s, char phase[2], long *idx);
void api__task_cursor_format(const json_t *task, char out[16]);
char *api__task_states(const char *list);
int api__h_job_plan(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_job_attempts(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_job_action(PGconn *conn, struct call *c, struct drv_err *err);

int api__h_members(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_workers(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_metrics(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_queues(PGconn *conn, struct call *c, struct drv_err *err);
/* handlers_drain.c: POST /v1/members/{id}/drain|undrain, POST /v1/workers/{id}/drain. */
int api__h_member_action(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_worker_action(PGconn *conn, struct call *c, struct drv_err *err);

int api__h_resources_push(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_resources_list(PGconn *conn, struct call *c, struct drv_err *err);
int api__h_resources_get(PGconn *conn, struct call *c, struct drv_err *err);

#endif
