/*
 * assign: tasks handed to workers' slots (assign.c has the design note; docs/engine.md "Tasks
 * to slots", docs/coord.md "Slots"). The node's slots (struct eassign, in struct engine) and
 * each job's (struct ejassign, in struct ejob) are assign.c's alone; commit_zk.c calls it
 * while it builds and settles a round, run.c when an outcome comes, jobresume.c when a
 * resume finds a task running in a slot, engine.c when the members change. Loop thread.
 */
#ifndef DROVER_ENGINE_ASSIGN_H
#define DROVER_ENGINE_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engine;
struct ejob;
struct eplan;
struct engine__zpart;
struct coord_member_info;

void engine__assign_init(struct engine *e);
void engine__assign_free(struct engine *e);

/* The droverd members (every one must say "slots") and the workers (their sessions, who
   drains, and per tenant and class whether every live worker serving it says "slots"). */
void engine__assign_members(struct engine *e, const struct coord_member_info *m, size_t n);
void engine__assign_workers(struct engine *e, const struct coord_member_info *m, size_t n);

/* Do the job's tasks go to slots now (else to its queue, as items)? */
bool engine__assign_on(const struct ejob *j);

/* ---- a round (commit_zk.c) ---- */

/* The bytes the ops of one assignment of item at most add to a round. */
size_t engine__assign_bytes(const struct ejob *j, const char *item);
/* A new round is being built: its slot table starts empty. */
void engine__assign_round_begin(struct ejob *j);
/* Task idx of p (its item's JSON) into a slot: the ops added to z (the job's own idle slot,
   or an offer taken), 0. DRV_EAGAIN: no slot now (the job is kicked when one is offered). */
int engine__assign_task(struct ejob *j, struct engine__zpart *z, struct eplan *p, uint32_t idx,
                        const char *item, const char *avoid);
/* The round's last ops: the job's idle slots freed (or handed to a job of this node that
   waits for one), the key records of lost attempts deleted. */
void engine__assign_round_end(struct ejob *j, struct engine__zpart *z);
/* The round applied, or not (its ops are to be made again: assignments back to the
   retries, slots as they were). */
void engine__assign_settled(struct ejob *j, bool applied);
/* Op i of z failed: when it is a slot's, that slot's ops are dropped from z (and its task
   goes back to the retries): true, send the rest. false: not a slot's op. */
bool engine__assign_op_failed(struct ejob *j, struct engine__zpart *z, size_t i);

/* ---- outcomes, resumes, the job's end ---- */

/* run.c: an outcome of (phase, idx, attempt) was read: its slot may take the next task. */
void engine__assign_outcome(struct ejob *j, char phase, uint32_t idx, unsigned attempt);
/* Is task idx of phase running in a slot of the job's? */
bool engine__assign_running(const struct ejob *j, char phase, uint32_t idx);
/* jobresume.c: a slot found holding the job's task (phase, idx, attempt) at version. */
void engine__assign_adopt(struct ejob *j, const char *slot, int version, char phase, uint32_t idx,
                          unsigned attempt);
/* jobresume.c: the job is ACTIVE: slots adopted dead are looked at. */
void engine__assign_resumed(struct ejob *j);
/* The job left this node (lost, released, finished): its slots are forgotten, unwritten. */
void engine__assign_job_gone(struct ejob *j);

/* Tasks of tenant/class the jobs here hold back for want of a slot (metrics). */
size_t engine__assign_waiting(const struct engine *e, const char *tenant, const char *cls);

#endif
