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

struct model_catalog;
/* The tenant's catalogue as the model sees it (*out, caller frees) and its rows (*rows:
   [{kind, name, version, body}], caller decrefs). */
int api__load_catalog(PGconn *conn, struct call *c, struct model_catalog **out, json_t **rows,
                      struct drv_err *err);
/* The version of an entity among rows, 0 when absent. */
int api__entity_version(const json_t *rows, const char *kind, const char *name);

/*
 * seal.c: seal, in place, the sensitive values inside j (any JSON; objects and arrays are
 * walked): those under a sensitive key name at any depth, and those whose dotted path from
 * j is in marked (an array of strings, may be NULL). "********" keeps the value at the same
 * place in prev (may be NULL). where names j in errors ("config", "providers[2].provisioner").
 * 0, or call_fail: 400 invalid ("********" with nothing stored), 422 no-secrets-key.
 */
int api__seal(struct call *c, json_t *j, const json_t *prev, const json_t *marked,
              const char *where);

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
