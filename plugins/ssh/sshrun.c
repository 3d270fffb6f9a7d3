/*
 * sshrun: the node side of a re-attachable run (see sshrun.h for the files).
 *
 * States of a handle, as the node's files show them, and who moves them:
 *
 *                 probe (mkdir)        start (runner writes pid)
 *   (no handle) ---------------> NEW/PREPARED ---------------> RUNNING
 *                                                                |  |
 *                          runner writes exit (script returned)  |  | kill on timeout or
 *                                     +--------------------------+  | a newer attempt
 *                                     v                             v
 *                                 FINISHED <--- exit = "timeout" / "superseded"
 *
 *   RUNNING with its process group gone and no exit: LOST (the node rebooted,
 *   or someone killed the runner).
 *
 * Invariants:
 *   1. The script of one handle starts at most once: start writes the runner
 *      only while there is no pid file, and the runner writes pid before it
 *      runs anything.
 *   2. exit is written last, by rename, so a reader that sees it sees the
 *      complete outputs and result.
 *   3. Before a new attempt's handle is made, every older attempt of the task
 *      is over on the node (killed, exit "superseded").
 *
 * Every remote command is `sh -c '<fixed script>' drover <args>`, its
 * arguments single-quoted: nothing from a task is ever parsed by a remote
 * shell except the action's own command line (the Coopr "args" semantics).
 */
#include "sshrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "plugin.h"
#include "xalloc.h"

#define MOD "ssh"

/* Is process group $1 alive (zombies do not count)? For the scripts below. */
#define SH_ALIVE                                                                                   \
    "alive() { if command -v ps >/dev/null 2>&1; then "                                            \
    "ps -e -o pgid= -o stat= | awk -v p=\"$1\" '$1==p && $2 !~ /^Z/ {f=1} END {exit !f}'; "        \
    "else kill -0 \"-$1\" 2>/dev/null; fi; }\n"

static const char probe_sh[] =
    "umask 077\n" SH_ALIVE "W=\"${DROVER_NODE_ROOT-}/var/lib/drover\"\n"
    "T=\"$W/runs/$1\"; H=\"$T/$2\"\n"
    "find \"$W/runs\" -mindepth 1 -maxdepth 1 -type d -mtime +7 -exec rm -rf {} + 2>/dev/null\n"
    "mkdir -p \"$T\" || exit 3\n"
    "for d in \"$T\"/*; do\n"
    "  [ -d \"$d\" ] || continue\n"
    "  a=${d##*/}\n"
    "  case \"$a\" in *[!0-9]*|'') continue;; esac\n"
    "  if [ \"$a\" -gt \"$2\" ]; then echo \"stale $W $a\"; exit 0; fi\n"
    "  [ \"$a\" -lt \"$2\" ] && [ -f \"$d/pid\" ] && [ ! -f \"$d/exit\" ] || continue\n"
    "  pg=$(cat \"$d/pid\"); kill -KILL \"-$pg\" 2>/dev/null\n"
    "  i=0; while alive \"$pg\" && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n"
    "  echo superseded > \"$d/exit.tmp\" && mv \"$d/exit.tmp\" \"$d/exit\"\n"
    "  echo \"superseded attempt $a\" >&2\n"
    "done\n"
    "if mkdir \"$H\" 2>/dev/null; then s=new\n"
    "elif [ -f \"$H/exit\" ]; then s=finished\n"
    "elif [ -f \"$H/pid\" ]; then if alive \"$(cat \"$H/pid\")\"; then s=running; "
    "elif [ -f \"$H/exit\" ]; then s=finished; else s=lost; fi\n"
    "else s=prepared; fi\n"
    "echo \"$s $W\"\n";

static const char bootstrap_sh[] = "umask 077\n"
                                   "W=\"${DROVER_NODE_ROOT-}/var/lib/drover\"\n"
                                   "mkdir -p \"$W/runs\" || exit 3\n"
                                   "for t in sh setsid ps awk mkdir mv cat tail head; do\n"
                                   "  command -v $t >/dev/null 2>&1 || { echo \"missing $t\" >&2; "
                                   "exit 4; }\n"
                                   "done\n"
                                   "echo \"$W\"\n";

static const char start_sh[] =
    "H=\"$1\"\n"
    "cd \"$H\" || exit 3\n"
    "if [ ! -f pid ]; then setsid sh \"$H/run.sh\" \"$H\" </dev/null >/dev/null 2>&1 & fi\n"
    "i=0; while [ ! -f \"$H/pid\" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done\n"
    "[ -f \"$H/pid\" ] || { echo \"the runner did not start\" >&2; exit 4; }\n";

/*
 * Wait up to $2 seconds of the node's own clock, not a count of turns: under load one turn
 * (a ps and an awk) can take far longer than its 0.1 s sleep, and 200 turns then outlasted
 * the command's time limit, which killed a healthy run ("timed out").
 */
static const char wait_sh[] =
    SH_ALIVE "H=\"$1\"; end=$(( $(date +%s) + $2 ))\n"
             "while [ ! -f \"$H/exit\" ]; do\n"
             "  pg=$(cat \"$H/pid\" 2>/dev/null)\n"
             "  if [ -z \"$pg\" ] || ! alive \"$pg\"; then\n"
             "    [ -f \"$H/exit\" ] && break\n"
             "    echo lost; exit 0\n"
             "  fi\n"
             "  [ \"$(date +%s)\" -ge \"$end\" ] && { echo running; exit 0; }\n"
             "  sleep 0.1\n"
             "done\n"
             "echo finished\n";

static const char kill_sh[] =
    SH_ALIVE "H=\"$1\"\n"
             "pg=$(cat \"$H/pid\" 2>/dev/null) || exit 0\n"
             "kill -KILL \"-$pg\" 2>/dev/null\n"
             "i=0; while alive \"$pg\" && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n"
             "alive \"$pg\" && { echo \"process group $pg survived SIGKILL\" >&2; exit 5; }\n"
             "[ -f \"$H/exit\" ] || { echo timeout > \"$H/exit.tmp\" && mv \"$H/exit.tmp\" "
             "\"$H/exit\"; }\n";

const char *sshrun_state_name(enum sshrun_state s)
{
    static const char *const n[] = {"new", "prepared", "running", "finished", "lost", "stale"};
    return (unsigned)s < sizeof(n) / sizeof(*n) ? n[s] : "unknown";
}

/* `sh -c '<script>' drover 'a1' 'a2' ...` (owned). */
static char *sh_line(const char *script, const char *const *args, size_t n)
{
    char *q = plugin_sh_quote(script);
    size_t len = strlen(q) + 32;
    char **qa = xcalloc(n ? n : 1, sizeof(*qa));
    for (size_t i = 0; i < n; i++) {
        qa[i] = plugin_sh_quote(args[i]);
        len += strlen(qa[i]) + 1;
    }
    char *out = xmalloc(len);
    int w = snprintf(out, len, "sh -c %s drover", q);
    for (size_t i = 0; i < n; i++) {
        w += snprintf(out + w, len - (size_t)w, " %s", qa[i]);
        free(qa[i]);
    }
    free(qa);
    free(q);
    return out;
}

/* Run a fixed script; its stdout (trimmed) into out (owned) when asked. */
static int run_sh(struct sshc *c, const char *script, const char *const *args, size_t n,
                  int timeout_ms, char **out, struct drv_err *err, const char *what)
{
    char *line = sh_line(script, args, n);
    struct sshc_out o;
    int rc = sshc_exec(c, line, NULL, 0, 16384, timeout_ms, &o, err);
    free(line);
    if (rc != 0) {
        drv_err_prefix(err, "%s", what);
        return rc;
    }
    if (o.status != 0) {
        size_t l = o.err_len;
        while (l > 0 && (o.err[l - 1] == '\n' || o.err[l - 1] == '\r'))
            o.err[--l] = '\0';
        rc = drv_err_set(err, DRV_ESSH, o.status, "%s on %s: exit %d%s%s%s", what, sshc_peer(c),
                         o.status, o.signal[0] ? " signal " : "", o.signal, l ? ": " : "");
        if (l && err) {
            size_t used = strlen(err->msg);
            snprintf(err->msg + used, sizeof(err->msg) - used, "%s", o.err);
        }
        sshc_out_free(&o);
        return rc;
    }
    if (o.err_len)
        log_info(MOD, "event=remote-note what=\"%s\" stderr_bytes=%zu", what, o.err_len);
    if (out) {
        size_t l = o.out_len;
        while (l > 0 && (o.out[l - 1] == '\n' || o.out[l - 1] == '\r'))
            o.out[--l] = '\0';
        *out = xstrdup(o.out);
    }
    sshc_out_free(&o);
    return 0;
}

/* The bound of one of the run's own commands (cluster config ssh.command_timeout). */
static int cmd_tmo(const struct sshrun *r)
{
    return r->cmd_timeout_ms > 0 ? r->cmd_timeout_ms : 60000;
}

int sshrun_probe(struct sshrun *r, struct drv_err *err)
{
    char att[16];
    snprintf(att, sizeof(att), "%d", r->attempt);
    const char *args[] = {r->key, att};
    char *out = NULL;
    int rc = run_sh(r->c, probe_sh, args, 2, cmd_tmo(r), &out, err, "looking for the run's handle");
    if (rc != 0)
        return rc;
    char st[16] = "", w[1024] = "";
    int newer = 0;
    if (sscanf(out, "%15s %1023s %d", st, w, &newer) < 2) {
        rc = drv_err_set(err, DRV_ESSH, 0,
                         "looking for the run's handle: unexpected answer \"%.80s\"", out);
        free(out);
        return rc;
    }
    free(out);
    snprintf(r->work, sizeof(r->work), "%s", w);
    snprintf(r->handle, sizeof(r->handle), "%s/runs/%s/%d", r->work, r->key, r->attempt);
    static const struct {
        const char *n;
        enum sshrun_state s;
    } map[] = {{"new", SSHRUN_NEW},         {"prepared", SSHRUN_PREPARED},
               {"running", SSHRUN_RUNNING}, {"finished", SSHRUN_FINISHED},
               {"lost", SSHRUN_LOST},       {"stale", SSHRUN_STALE}};
    for (size_t i = 0; i < sizeof(map) / sizeof(*map); i++)
        if (strcmp(st, map[i].n) == 0) {
            r->state = map[i].s;
            if (r->state == SSHRUN_STALE)
                return drv_err_set(err, DRV_ECONFLICT, 0,
                                   "attempt %d of task %s is stale: attempt %d exists on the node",
                                   r->attempt, r->key, newer);
            return 0;
        }
    return drv_err_set(err, DRV_ESSH, 0, "looking for the run's handle: unknown state \"%s\"", st);
}

int sshrun_bootstrap(struct sshc *c, int timeout_ms, char *work, size_t work_len,
                     struct drv_err *err)
{
    char *out = NULL;
    int rc = run_sh(c, bootstrap_sh, NULL, 0, timeout_ms > 0 ? timeout_ms : 60000, &out, err,
                    "bootstrap");
    if (rc == 0) {
        snprintf(work, work_len, "%s", out);
        free(out);
    }
    return rc;
}

int sshrun_upload(struct sshrun *r, const char *resources, const char *rel, size_t *bytes,
                  struct drv_err *err)
{
    char *remote = xasprintf("%s/res", r->handle);
    int rc = sshc_mkdir(r->c, remote, 0700, err);
    /* The directories on the way: "a/b/c.sh" needs res/a and res/a/b. */
    for (const char *p = rel; rc == 0 && (p = strchr(p, '/')); p++) {
        char *dir = xasprintf("%s/res/%.*s", r->handle, (int)(p - rel), rel);
        rc = sshc_mkdir(r->c, dir, 0700, err);
        free(dir);
    }
    free(remote);
    if (rc != 0)
        return rc;
    char *local = xasprintf("%s/%s", resources, rel);
    remote = xasprintf("%s/res/%s", r->handle, rel);
    rc = sshc_put_tree(r->c, local, remote, bytes, err);
    free(local);
    free(remote);
    return rc;
}

int sshrun_start(struct sshrun *r, const char *stdin_json, const char *env_sh, const char *command,
                 struct drv_err *err)
{
    char *p = xasprintf("%s/stdin.json", r->handle);
    int rc = sshc_put(r->c, p, stdin_json, strlen(stdin_json), 0600, err);
    free(p);
    if (rc != 0)
        return rc;
    p = xasprintf("%s/env.sh", r->handle);
    rc = sshc_put(r->c, p, env_sh, strlen(env_sh), 0600, err);
    free(p);
    if (rc != 0)
        return rc;
    /* The runner: pid first (invariant 1), exit last (invariant 2). */
    char *runner = xasprintf(
        "# Drover runner of task %s, attempt %d (written by the ssh automator)\n"
        "H=\"$1\"\n"
        "fin() { echo \"$1\" > \"$H/exit.tmp\" && mv \"$H/exit.tmp\" \"$H/exit\"; exit 0; }\n"
        "echo $$ > \"$H/pid.tmp\" && mv \"$H/pid.tmp\" \"$H/pid\" || exit 1\n"
        "exec 3< \"$H/stdin.json\" || fin 126\n"
        "rm -f \"$H/stdin.json\"\n"
        ". \"$H/env.sh\" || fin 126\n"
        "rm -f \"$H/env.sh\"\n"
        "mkdir -p \"$H/res\" && cd \"$H/res\" || fin 126\n"
        "PATH=\"$H/res:$PATH\"; export PATH\n"
        "DROVER_RESULT=\"$H/result.json\"; export DROVER_RESULT\n"
        "%s <&3 3<&- >\"$H/stdout\" 2>\"$H/stderr\"\n"
        "fin $?\n",
        r->key, r->attempt, command);
    p = xasprintf("%s/run.sh", r->handle);
    rc = sshc_put(r->c, p, runner, strlen(runner), 0700, err);
    free(p);
    free(runner);
    if (rc != 0)
        return rc;
    const char *args[] = {r->handle};
    rc = run_sh(r->c, start_sh, args, 1, cmd_tmo(r), NULL, err, "starting the run");
    if (rc == 0)
        r->state = SSHRUN_RUNNING;
    return rc;
}

int sshrun_wait(struct sshrun *r, int64_t deadline_ms, struct drv_err *err)
{
    for (;;) {
        int64_t left = deadline_ms - clock_mono_ms();
        if (left <= 0)
            return drv_err_set(err, DRV_ETIMEDOUT, 0, "the run did not finish in time");
        int secs = (int)(left > 20000 ? 20 : left / 1000);
        char n[16];
        snprintf(n, sizeof(n), "%d", secs);
        const char *args[] = {r->handle, n};
        char *out = NULL;
        int rc =
            run_sh(r->c, wait_sh, args, 2, secs * 1000 + 30000, &out, err, "waiting for the run");
        if (rc != 0)
            return rc;
        bool fin = strcmp(out, "finished") == 0, lost = strcmp(out, "lost") == 0;
        free(out);
        if (fin) {
            r->state = SSHRUN_FINISHED;
            return 0;
        }
        if (lost) {
            r->state = SSHRUN_LOST;
            return 0;
        }
    }
}

int sshrun_kill(struct sshrun *r, struct drv_err *err)
{
    const char *args[] = {r->handle};
    log_info(MOD, "event=kill-run handle=%s", r->handle);
    return run_sh(r->c, kill_sh, args, 1, cmd_tmo(r), NULL, err, "killing the run");
}

/* `cmd` with the handle as $1, its whole stdout (owned), bounded by cap. */
static int fetch(struct sshrun *r, const char *script, size_t cap, char **out, size_t *len,
                 bool *cut, struct drv_err *err)
{
    const char *args[] = {r->handle};
    char *line = sh_line(script, args, 1);
    struct sshc_out o;
    int rc = sshc_exec(r->c, line, NULL, 0, cap, cmd_tmo(r), &o, err);
    free(line);
    if (rc != 0)
        return rc;
    *out = o.out;
    *len = o.out_len;
    if (cut)
        *cut = o.out_cut;
    o.out = NULL;
    sshc_out_free(&o);
    return 0;
}

int sshrun_harvest(struct sshrun *r, struct sshrun_outcome *o, struct drv_err *err)
{
    memset(o, 0, sizeof(*o));
    char *ex = NULL, *res = NULL;
    size_t len = 0, rlen = 0;
    int rc = fetch(r, "cat \"$1/exit\"", 64, &ex, &len, NULL, err);
    if (rc != 0)
        return rc;
    while (len > 0 && (ex[len - 1] == '\n' || ex[len - 1] == ' '))
        ex[--len] = '\0';
    snprintf(o->exit, sizeof(o->exit), "%s", len ? ex : "none");
    free(ex);
    /* One byte more than kept tells whether the file was longer. */
    const char *streams[] = {"stdout", "stderr"};
    char **dst[] = {&o->out, &o->err};
    bool *cut[] = {&o->out_cut, &o->err_cut};
    for (int i = 0; i < 2; i++) {
        char cmd[64];
        size_t n = 0;
        snprintf(cmd, sizeof(cmd), "tail -c %u \"$1/%s\" 2>/dev/null", SSHRUN_OUTPUT_CAP + 1,
                 streams[i]);
        if ((rc = fetch(r, cmd, SSHRUN_OUTPUT_CAP + 1, dst[i], &n, cut[i], err)) != 0)
            return rc;
        if (n > SSHRUN_OUTPUT_CAP) {
            memmove(*dst[i], *dst[i] + (n - SSHRUN_OUTPUT_CAP), SSHRUN_OUTPUT_CAP + 1);
            *cut[i] = true;
        }
    }
    /* One byte over the cap tells a too-big result from one exactly at it. */
    char rcmd[96];
    snprintf(rcmd, sizeof(rcmd), "[ -f \"$1/result.json\" ] && head -c %u \"$1/result.json\"",
             SSHRUN_RESULT_CAP + 1);
    if ((rc = fetch(r, rcmd, SSHRUN_RESULT_CAP + 1, &res, &rlen, NULL, err)) != 0)
        return rc;
    if (rlen > SSHRUN_RESULT_CAP) {
        snprintf(o->result_error, sizeof(o->result_error), "larger than %u bytes",
                 SSHRUN_RESULT_CAP);
    } else if (rlen > 0) {
        json_error_t je;
        json_t *j = json_loadb(res, rlen, 0, &je);
        if (!json_is_object(j)) {
            snprintf(o->result_error, sizeof(o->result_error), "%s",
                     j ? "not a JSON object" : je.text);
            json_decref(j);
        } else {
            o->result = j;
        }
    }
    free(res);
    return 0;
}

void sshrun_outcome_free(struct sshrun_outcome *o)
{
    free(o->out);
    free(o->err);
    json_decref(o->result);
    memset(o, 0, sizeof(*o));
}
