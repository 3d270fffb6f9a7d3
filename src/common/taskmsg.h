/*
 * taskmsg: the messages between the engine (droverd) and the workers.
 *
 * Three kinds travel through ZooKeeper (docs/engine.md, docs/zookeeper-tree.md):
 *
 *   - the queue item of one attempt of one task, put by the job's owner on
 *     /drover/queues/<tenant>/<class> under the key
 *     "<job>.<phase><task index>.<attempt>" ("42.f17.1": job 42, forward
 *     plan, task 17, first attempt; phase 'r' for the rollback plan). The key
 *     is also the plugin's taskId. Its JSON holds what the task needs: its
 *     names, fields and its own node's parts (below), never another node's;
 *     the job-wide rest (cluster config, provider) is in jobs/<id>/ctx.
 *   - the run record of one delivery of an attempt, jobs/<id>/runs/<name>
 *     with name "<phase><index>.<attempt>.<worker>.<nonce>": the worker
 *     creates it before the plugin starts (invariant 3, docs/architecture.md:
 *     every attempt is recorded before it starts) and sets its outcome in the
 *     same multi-op that completes the queue item.
 *   - the job's context, jobs/<id>/ctx (one znode, or a head {"parts": n}
 *     and ctx/p<i> when it is large): what every task of the job shares,
 *     written by the job's first owner, read by every worker once per job.
 *
 * The node a task runs for travels in three parts, one per writer (facts.h,
 * docs/security.md "Three writers"): "facts", what its provider reported of
 * the machine (its id, addresses, host key, login); "values", the results of
 * its other tasks (the tenant's); "entries", its hardware and image types'
 * providermap entries for the job's provider (the tenant's). A value of the
 * tenant's never names a fact's key, so no part shadows another.
 *
 * Each message carries "v", its format version; each kind has its own
 * (TASKMSG_ITEM_VERSION, TASKMSG_RUN_VERSION, TASKMSG_CTX_VERSION). A build
 * reads its versions and the ones before (rolling upgrades: N reads N-1,
 * docs/operations.md). Queue items are written in the version every live
 * worker reads: the engine takes the lowest "taskmsg" any worker's member
 * znode says (none: 1), so droverd of version N feeds workers of N-1 while
 * they are upgraded after it.
 *
 * Version history:
 *   item 1: the node's key-values merged in "props" and its types, services
 *           and providermap entries merged in "nodeinfo".
 *   item 2: "facts", "values", "entries", "hardwaretype", "imagetype",
 *           "services" apart. Read back from 1, "props" splits into facts and
 *           values by key (facts.h) and "nodeinfo" into entries and types;
 *           reserved keys in a tenant's part are dropped and counted.
 *   run 1, ctx 1: as taskmsg_run_start/taskmsg_run_end and taskmsg_ctx_encode
 *           write them.
 *
 * Pure functions, any thread.
 */
#ifndef DROVER_TASKMSG_H
#define DROVER_TASKMSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TASKMSG_ITEM_VERSION 2 /* queue items: written up to, read from 1 */
#define TASKMSG_RUN_VERSION 1  /* run records */
#define TASKMSG_CTX_VERSION 1  /* job contexts */

/* The key of an attempt into buf (>= 64 bytes is plenty). DRV_EINVAL for a bad job id or phase. */
int taskmsg_key(char *buf, size_t n, const char *job, char phase, uint32_t idx, unsigned attempt);
/* Parse a key; job receives the job id (a number as text). 0 or DRV_EINVAL. */
int taskmsg_key_parse(const char *key, char job[24], char *phase, uint32_t *idx, unsigned *attempt);

/* The run record name of a delivery, and back (worker and nonce ignored). */
int taskmsg_run_name(char *buf, size_t n, char phase, uint32_t idx, unsigned attempt,
                     const char *worker, unsigned nonce);
int taskmsg_run_name_parse(const char *name, char *phase, uint32_t *idx, unsigned *attempt);
/* Do two run record names name one attempt of one task on one worker (they differ at most
   in the nonce)? false when either is not a run record name. */
bool taskmsg_run_same_delivery(const char *a, const char *b);

/*
 * A queue item. To encode: strings and JSON values are borrowed (the encoder
 * copies the strings and takes its own references); optional fields (NULL,
 * or timeout_ms <= 0) are left out. Read back (taskmsg_item_decode): root
 * holds the item, strings are borrowed from it, JSON values are references
 * the struct owns (taskmsg_item_clear).
 */
struct taskmsg_item {
    json_t *root;        /* decoded: the item as read; NULL when encoding */
    int version;         /* decoded: the item's "v" */
    const char *job;     /* the job id */
    char phase;          /* 'f' forward, 'r' rollback */
    uint32_t idx;        /* the task's index in its plan */
    unsigned attempt;    /* from 1 */
    const char *task;    /* the task id ("node-1/create") */
    const char *name;    /* the task name: create, install, ... (planner_action_name) */
    const char *tenant;  /* the tenant's name */
    const char *cluster; /* the cluster id */
    const char *plugin;  /* the provider or action type that picks the plugin ("bootstrap") */
    bool cleanup;        /* a retried create: remove what the last attempt left first */
    int64_t nodes_rev;   /* the revision of jobs/<id>/nodes the item was made with */
    /* optional */
    const char *node;        /* the node the task runs for */
    const char *service;     /* the service, for service tasks */
    json_t *fields;          /* the task's fields, macros expanded */
    json_t *config_override; /* the cluster config to run with instead of the job's */
    /* the node, by writer (facts.h). The encoder takes the fact keys of facts and the keys
       of values and entries that are not reserved, so the node's whole key-values may be
       given as both facts and values. */
    json_t *facts;            /* the provider's facts of the machine */
    json_t *values;           /* the node's own key-values that are not facts (the tenant's) */
    json_t *entries;          /* its hardware and image types' providermap entries (the tenant's) */
    const char *hardwaretype; /* its types' names */
    const char *imagetype;
    json_t *services;     /* its services, an array of names */
    const char *avoid;    /* the worker the item should rather not go to (a retry) */
    int64_t timeout_ms;   /* the run's time limit */
    size_t dropped;       /* decoded: reserved keys dropped from the tenant's parts */
    char dropped_key[64]; /* decoded: the first of them */
};

/*
 * Encode a queue item as compact JSON in format version (1 up to
 * TASKMSG_ITEM_VERSION; anything else: the latest), the fields in the order
 * of struct taskmsg_item. Version 1 merges the node's parts as a build of
 * that version reads them: "props" is values then facts, "nodeinfo" entries
 * then the names and services; reserved keys of the tenant's parts are left
 * out of both versions. A new string, the caller frees it; NULL when a
 * required string is NULL. It passes taskmsg_item_check() when phase is 'f'
 * or 'r'.
 */
char *taskmsg_item_encode(const struct taskmsg_item *it, int version);

/*
 * Check a queue item: a JSON object with "v" this build reads, "job",
 * "phase", "idx", "attempt", "task", "name" (the task name: create, install,
 * ...), "tenant", "cluster", "plugin" (the provider type or action type that
 * picks the plugin). 0 or DRV_EINVAL naming the field.
 */
int taskmsg_item_check(const json_t *item, struct drv_err *err);

/*
 * Read a queue item of any version this build reads into it (checked first:
 * taskmsg_item_check). Its facts, values and entries are always objects and
 * services an array; reserved keys of the tenant's parts are dropped and
 * counted (it->dropped). 0 or DRV_EINVAL; on success clear it with
 * taskmsg_item_clear.
 */
int taskmsg_item_decode(json_t *item, struct taskmsg_item *it, struct drv_err *err);
void taskmsg_item_clear(struct taskmsg_item *it);

/* A run record as read back. Strings and JSON values are borrowed from root. */
struct taskmsg_run {
    json_t *root;
    const char *worker;  /* worker id */
    const char *session; /* the worker's ZooKeeper session, hex */
    const char *item;    /* the queue item id */
    int64_t start_ms;
    bool ended;          /* the outcome is there */
    bool ok;             /* when ended */
    int64_t end_ms;      /* when ended */
    json_t *result;      /* when ended and ok: key-values (object), may be empty */
    json_t *undo;        /* may be NULL */
    const char *message; /* "" when none */
    const char *how;     /* how the plugin ended: "exit 0", "timed out after 30000 ms" */
    const char *tail;    /* the last bytes of its standard error */
};

/* Parse data; r->root is a new reference (taskmsg_run_clear). 0 or DRV_EINVAL. */
int taskmsg_run_parse(const char *data, size_t len, struct taskmsg_run *r, struct drv_err *err);
/* The same from a parsed record: r->root takes a new reference to j (j stays the caller's). */
int taskmsg_run_of(json_t *j, struct taskmsg_run *r, struct drv_err *err);
void taskmsg_run_clear(struct taskmsg_run *r);

/*
 * Writing a run record (the worker). The start: a new object, "v"
 * TASKMSG_RUN_VERSION, created before the plugin runs. The outcome is set
 * into it (taskmsg_run_end) and the whole record written again in the
 * complete's multi-op. Borrowed inputs; result and undo get new references.
 */
json_t *taskmsg_run_start(const char *worker, const char *session, const char *item,
                          int64_t start_ms);
struct taskmsg_outcome {
    bool ok;
    int64_t end_ms;
    const char *message; /* one line for people */
    const char *how;     /* how the plugin ended */
    const char *tail;    /* NULL: none (a task not run) */
    json_t *result;      /* NULL: none */
    json_t *undo;        /* NULL: none */
};
void taskmsg_run_end(json_t *rec, const struct taskmsg_outcome *o);

/*
 * The job's context. To encode, JSON values and strings are borrowed; read
 * back (taskmsg_ctx_decode), they are borrowed from the context's object.
 */
struct taskmsg_ctx {
    int version;             /* decoded: its "v" */
    const char *clustername; /* the cluster's name */
    const char *template;    /* its template's */
    json_t *cluster;         /* the cluster's config, an object */
    json_t *provider;        /* the provider: its fields, "name", "providertype" */
    const char *tenant;
    const char *job;
    int64_t nodes_chunks; /* the nodes map's znodes (jobs/<id>/nodes/n<k>) */
    json_t *ssh;          /* optional: the cluster's key pair, its private part sealed */
    json_t *resources;    /* optional: the pinned resources {"version", "sha256"} */
};

/* The context as a new object, "v" TASKMSG_CTX_VERSION (NULL values: empty objects). */
json_t *taskmsg_ctx_encode(const struct taskmsg_ctx *c);
/* Read one (an object of a version this build reads). 0 or DRV_EINVAL. */
int taskmsg_ctx_decode(const json_t *j, struct taskmsg_ctx *c, struct drv_err *err);

#endif
