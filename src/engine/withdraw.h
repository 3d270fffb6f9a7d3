/*
 * withdraw: taking a job's queued items back (withdraw.c has the note). Its fields
 * (struct ewithdraw, j->withdraw) are withdraw.c's alone. Loop thread.
 */
#ifndef DROVER_ENGINE_WITHDRAW_H
#define DROVER_ENGINE_WITHDRAW_H

struct ejob;

/* Take the job's queued items back (cancel, pause, give-up), the retries not put yet
 * first (engine__commit_retries_withdraw). */
void engine__withdraw(struct ejob *j);
/* With the job. */
void engine__withdraw_free(struct ejob *j);

#endif
