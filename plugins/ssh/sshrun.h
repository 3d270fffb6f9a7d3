/*
 * sshrun: re-attachable runs of an action's script on a node (internal to
 * the ssh automator).
 *
 * A run is one attempt of one task, detached on the node under a handle
 * directory named by the task and the attempt:
 *
 *   ${DROVER_NODE_ROOT}/var/lib/drover/runs/<job>.<task index>/<attempt>/
 *       run.sh       the runner (written by the automator)
 *       res/         the script and data files, from $DROVER_RESOURCES
 *       stdin.json   the task's config; unlinked by the runner once opened
 *       env.sh       the config as environment variables; unlinked once read
 *       pid          the runner's pid = its process group (setsid)
 *       stdout, stderr
 *       result.json  key-values the script wrote to $DROVER_RESULT (optional)
 *       exit         the exit status, or "timeout" / "superseded" (last: the run is over)
 *
 * A later delivery of the same attempt (the same taskId: the worker died)
 * finds the handle and harvests or waits instead of running the script again.
 * A new attempt of the task first kills older attempts still running, so two
 * attempts never run on the node at once; an older attempt arriving after a
 * newer one started is refused.
 */
#ifndef DROVER_SSHRUN_H
#define DROVER_SSHRUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "sshc.h"

/* What a probe finds under the handle. */
enum sshrun_state {
    SSHRUN_NEW,      /* no handle before: this delivery made it */
    SSHRUN_PREPARED, /* handle made, runner never started: upload and start again */
    SSHRUN_RUNNING,  /* started, not finished: wait */
    SSHRUN_FINISHED, /* exit written: harvest */
    SSHRUN_LOST,     /* started, gone without an exit status */
    SSHRUN_STALE,    /* a newer attempt of the task exists: refuse */
};

const char *sshrun_state_name(enum sshrun_state s);

struct sshrun {
    struct sshc *c;
    char key[256]; /* "<job>.<task index>" */
    int attempt;
    char work[1024]; /* remote ${DROVER_NODE_ROOT}/var/lib/drover */
    char handle[1400];
    enum sshrun_state state;
    int cmd_timeout_ms; /* bound of each of the run's own commands on the node; 0: 60 s */
};

/* Bounds of what comes back from a node. */
#define SSHRUN_OUTPUT_CAP (64u << 10)
#define SSHRUN_RESULT_CAP (1u << 20)

/* Find (or make) the handle of key/attempt; fills r->work, r->handle, r->state. */
int sshrun_probe(struct sshrun *r, struct drv_err *err);

/*
 * Make the node's work directory and check the tools a run needs (sh, setsid,
 * ps, mkdir): the bootstrap task. *work gets the remote work directory.
 */
int sshrun_bootstrap(struct sshc *c, int timeout_ms, char *work, size_t work_len,
                     struct drv_err *err);

/*
 * Upload one resource (a file or directory, relative to resources) to the
 * handle's res/ directory, making the directories on its path.
 */
int sshrun_upload(struct sshrun *r, const char *resources, const char *rel, size_t *bytes,
                  struct drv_err *err);

/*
 * Write the run's inputs and start it detached: stdin_json (the config),
 * env_sh (export lines), and the runner for command (a line for sh, run in
 * res/). On return the runner has written its pid.
 */
int sshrun_start(struct sshrun *r, const char *stdin_json, const char *env_sh, const char *command,
                 struct drv_err *err);

/*
 * Wait until the run ends or deadline_ms (clock_mono_ms clock). Sets r->state
 * to FINISHED or LOST; DRV_ETIMEDOUT when the deadline passed first.
 */
int sshrun_wait(struct sshrun *r, int64_t deadline_ms, struct drv_err *err);

/* Kill the run's process group, wait for it to go, and record "timeout" as its exit. */
int sshrun_kill(struct sshrun *r, struct drv_err *err);

struct sshrun_outcome {
    char exit[32];   /* "0", "3", "timeout", "superseded", ... */
    char *out, *err; /* the last SSHRUN_OUTPUT_CAP bytes of each (owned) */
    bool out_cut, err_cut;
    json_t *result;         /* result.json when present and an object (owned), else NULL */
    char result_error[200]; /* why result.json was refused, "" when fine or absent */
};

/* Read a finished run's exit, outputs and result. */
int sshrun_harvest(struct sshrun *r, struct sshrun_outcome *o, struct drv_err *err);

void sshrun_outcome_free(struct sshrun_outcome *o);

#endif
