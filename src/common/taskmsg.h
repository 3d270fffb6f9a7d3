/*
 * taskmsg: the messages between the engine (droverd) and the workers.
 *
 * Two kinds travel through ZooKeeper (docs/engine.md, docs/zookeeper-tree.md):
 *
 *   - the queue item of one attempt of one task, put by the job's owner on
 *     /drover/queues/<tenant>/<class> under the key
 *     "<job>.<phase><task index>.<attempt>" ("42.f17.1": job 42, forward
 *     plan, task 17, first attempt; phase 'r' for the rollback plan). The key
 *     is also the plugin's taskId. Its JSON holds what the task needs and
 *     its node's key-values; the job-wide rest (cluster config, provider) is
 *     in jobs/<id>/ctx.
 *   - the run record of one delivery of an attempt, jobs/<id>/runs/<name>
 *     with name "<phase><index>.<attempt>.<worker>.<nonce>": the worker
 *     creates it before the plugin starts (invariant 3, docs/architecture.md:
 *     every attempt is recorded before it starts) and sets its outcome in the
 *     same multi-op that completes the queue item.
 *
 * Both carry "v": the format version. A build writes TASKMSG_VERSION and
 * reads it and the version before (rolling upgrades: workers and droverd of
 * versions N and N+1 work side by side).
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

#define TASKMSG_VERSION 1

/* The key of an attempt into buf (>= 64 bytes is plenty). DRV_EINVAL for a bad job id or phase. */
int taskmsg_key(char *buf, size_t n, const char *job, char phase, uint32_t idx, unsigned attempt);
/* Parse a key; job receives the job id (a number as text). 0 or DRV_EINVAL. */
int taskmsg_key_parse(const char *key, char job[24], char *phase, uint32_t *idx, unsigned *attempt);

/* The run record name of a delivery, and back (worker and nonce ignored). */
int taskmsg_run_name(char *buf, size_t n, char phase, uint32_t idx, unsigned attempt,
                     const char *worker, unsigned nonce);
int taskmsg_run_name_parse(const char *name, char *phase, uint32_t *idx, unsigned *attempt);

/*
 * A queue item to encode (taskmsg_item_encode). Strings and JSON values are
 * borrowed: the encoder copies the strings and takes its own references.
 * Optional fields (NULL, or timeout_ms <= 0) are left out of the item.
 */
struct taskmsg_item {
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
    json_t *props;           /* the node's key-values */
    json_t *nodeinfo;        /* what the provider said of the node */
    const char *avoid;       /* the worker the item should rather not go to (a retry) */
    int64_t timeout_ms;      /* the run's time limit */
};

/*
 * Encode a queue item as compact JSON, "v" TASKMSG_VERSION, the fields in
 * the order of struct taskmsg_item. A new string, the caller frees it. It
 * passes taskmsg_item_check() when the required strings are set and phase is
 * 'f' or 'r'; NULL when a required string is NULL.
 */
char *taskmsg_item_encode(const struct taskmsg_item *it);

/*
 * Check a queue item: a JSON object with "v" this build reads, "job",
 * "phase", "idx", "attempt", "task", "name" (the task name: create, install,
 * ...), "tenant", "cluster", "plugin" (the provider type or action type that
 * picks the plugin). 0 or DRV_EINVAL naming the field.
 */
int taskmsg_item_check(const json_t *item, struct drv_err *err);

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

#endif
