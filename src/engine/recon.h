/*
 * recon: what a resuming owner does about each task and run record it finds (recon.c has
 * the rules; docs/engine.md "Reconciliation on resume"). Pure: jobresume.c gathers the
 * facts and acts; test_recon checks every row.
 */
#ifndef DROVER_ENGINE_RECON_H
#define DROVER_ENGINE_RECON_H

#include <stdbool.h>
#include <stdint.h>

#include "engine_int.h"

/* What a resuming owner knows of one task of the current plan. */
struct engine_recon_facts {
    enum engine_phase phase; /* the job's */
    uint8_t state;           /* the task log's (enum engine_task_state; 'q' reads QUEUED) */
    bool item;               /* its current attempt's queue item is there (claimed or not) */
    bool rec_ended;          /* a run record of its current attempt has its outcome */
    bool rec_open;           /* a run record of its current attempt has none */
};

enum engine_recon_action {
    ENGINE_RECON_NONE = 0,  /* nothing to do: not in flight, or followed as it is */
    ENGINE_RECON_PUT,       /* its item is gone: put the same attempt again (fenced multi-op) */
    ENGINE_RECON_WITHDRAWN, /* its item is gone and the phase does not dispatch: back to
                               pending (ENGINE_TEV_WITHDRAWN) */
    ENGINE_RECON_LOST,      /* its worker is gone mid-attempt: a failed attempt (ENGINE_TEV_FAIL) */
};

enum engine_recon_action engine_recon_task(const struct engine_recon_facts *f);

/* One run record with what the task log says of its task. */
struct engine_recon_run {
    uint8_t state;  /* its task's state in the log */
    bool current;   /* the record is of the task's current attempt */
    bool ended, ok; /* its outcome */
    bool is_create; /* the task is a provider's create */
};

/* Merge the record's result into its node's key-values again (PostgreSQL may lack it)? */
bool engine_recon_merge(const struct engine_recon_run *r);
const char *engine_recon_name(enum engine_recon_action a);

/* A run record to merge again: its name, the zxid of its last write (the worker's outcome,
 * ZooKeeper's mzxid), and its data (the caller's). */
struct engine_recon_written {
    const char *name;
    int64_t mzxid;
    void *data;
};

/*
 * The records in the order their outcomes were written in ZooKeeper (mzxid; by name for
 * equal ones): the order the last owner merged them in, so the later of two results of one
 * node writing one key wins again. Not the workers' "end": wall clocks of different hosts,
 * which a skew reverses (issue 33 item 5).
 */
void engine_recon_merge_order(struct engine_recon_written *w, size_t n);

#endif
