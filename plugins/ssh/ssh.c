/*
 * ssh: the automator plugin that runs services' actions on nodes over SSH
 * (libssh2), for the action type "shell" of the Coopr catalogue, and the
 * bootstrap task (docs/plugins.md, "ssh").
 *
 * One run, step by step:
 *
 *   read the task -> check the action's fields and find its files in
 *   $DROVER_RESOURCES -> connect to the node's access_v4 address, checking
 *   the host key against the node's ssh_host_key (no trust on first use),
 *   authenticating with the cluster's key -> probe the run's handle:
 *
 *     new, prepared   upload script and data files (SFTP), the config as
 *                     stdin.json and env.sh, start the runner detached
 *     running         (an earlier delivery of this attempt started it) wait
 *     finished        harvest: no second run
 *     lost, stale     fail
 *
 *   -> wait until the run ends or the time limit nears (then kill its process
 *   group on the node) -> harvest exit status, output tails, result.json.
 *
 * What reaches the node: the task's config without the cluster's private key
 * and without the provider's fields (credentials stay on the worker). The
 * script's output tails go to this plugin's standard error (the task log).
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "log.h"
#include "plugin.h"
#include "sshc.h"
#include "sshrun.h"
#include "xalloc.h"

#define MOD "ssh"
#define ENV_VALUE_MAX (64u << 10)
#define ENV_TOTAL_MAX (512u << 10)

/* A path inside the resources: relative, no "..", no empty part. */
static bool rel_ok(const char *s)
{
    if (!s || !*s || s[0] == '/' || strlen(s) > 400)
        return false;
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += n + (e ? 1 : 0);
        if (e && !*p)
            return false;
    }
    return strpbrk(s, "\n\r") == NULL;
}

/* The config as the node sees it: no private key, the provider reduced to its name and type. */
static json_t *node_config(json_t *config)
{
    json_t *c = json_deep_copy(config);
    json_t *ssh = json_object_get(c, "ssh");
    if (json_is_object(ssh))
        json_object_del(ssh, "private_key");
    json_t *prov = json_object_get(c, "provider");
    if (json_is_object(prov)) {
        json_t *keep = json_object();
        json_t *v;
        if ((v = json_object_get(prov, "name")))
            json_object_set(keep, "name", v);
        if ((v = json_object_get(prov, "providertype")))
            json_object_set(keep, "providertype", v);
        json_object_set_new(c, "provider", keep);
    }
    return c;
}

struct envbuf {
    char *p;
    size_t n, cap;
    size_t skipped;
};

static void env_add(struct envbuf *b, const char *name, const char *value)
{
    if (strlen(value) > ENV_VALUE_MAX || b->n + strlen(value) > ENV_TOTAL_MAX) {
        b->skipped++;
        return;
    }
    char *q = plugin_sh_quote(value);
    char *line = xasprintf("export %s=%s\n", name, q);
    free(q);
    size_t l = strlen(line);
    if (b->n + l + 1 > b->cap) {
        b->cap = (b->n + l + 1) * 2;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, line, l + 1);
    b->n += l;
    free(line);
}

/* A scalar as text; arrays of scalars space-separated (as Coopr's lookup gave them). */
static char *scalar_text(json_t *v)
{
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    if (json_is_integer(v))
        return xasprintf("%lld", (long long)json_integer_value(v));
    if (json_is_real(v))
        return xasprintf("%.17g", json_real_value(v));
    if (json_is_boolean(v))
        return xstrdup(json_is_true(v) ? "true" : "false");
    if (json_is_null(v))
        return xstrdup("");
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        char *acc = xstrdup("");
        json_array_foreach(v, i, e)
        {
            if (json_is_object(e) || json_is_array(e)) {
                free(acc);
                return NULL;
            }
            char *t = scalar_text(e);
            char *n = xasprintf("%s%s%s", acc, i ? " " : "", t);
            free(t);
            free(acc);
            acc = n;
        }
        return acc;
    }
    return NULL;
}

/* DROVER_CFG_<PATH>: every scalar leaf of the config, the path upper-cased, [^A-Z0-9] -> '_'. */
static void env_flatten(struct envbuf *b, json_t *v, const char *prefix)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            if (strcmp(prefix, "DROVER_CFG") == 0 && strcmp(k, "nodes") == 0)
                continue; /* the cluster's nodes: on standard input only */
            char *name = xasprintf("%s_%s", prefix, k);
            for (char *p = name + strlen(prefix) + 1; *p; p++)
                *p = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
            if (strlen(name) < 200)
                env_flatten(b, x, name);
            free(name);
        }
        return;
    }
    char *t = scalar_text(v);
    if (t) {
        env_add(b, prefix, t);
        free(t);
    }
}

static char *env_script(const struct plugin_task *t, json_t *ncfg)
{
    struct envbuf b = {0};
    env_add(&b, "DROVER_TASK_ID", t->task_id);
    env_add(&b, "DROVER_TASK", t->task_name);
    env_add(&b, "DROVER_JOB_ID", t->job_id);
    env_add(&b, "DROVER_CLUSTER_ID", t->cluster_id);
    env_add(&b, "DROVER_NODE_ID", t->node_id);
    env_add(&b, "DROVER_SERVICE", t->service);
    char att[16];
    snprintf(att, sizeof(att), "%d", t->attempt);
    env_add(&b, "DROVER_ATTEMPT", att);
    const char *h = plugin_fact_str(t, "hostname");
    const char *ip = plugin_fact_str(t, "ipaddresses.access_v4");
    env_add(&b, "DROVER_HOSTNAME", h ? h : "");
    env_add(&b, "DROVER_IP", ip ? ip : "");
    env_flatten(&b, ncfg, "DROVER_CFG");
    if (b.skipped)
        log_warn(MOD, "event=env-skipped values=%zu why=too-large", b.skipped);
    if (!b.p)
        b.p = xstrdup("");
    return b.p;
}

/*
 * Split a Coopr "args" string into words as a shell would split a plain command line,
 * with none of its other syntax: blanks separate words; '...' keeps everything; "..."
 * keeps everything but a backslash before " or \; a backslash elsewhere keeps the next
 * character. $, `, ;, |, &, <, >, globs and the like are ordinary characters. A newline
 * or an unterminated quote is DRV_EINVAL. *out: a new array of strings.
 */
static int split_words(const char *s, json_t **out, struct drv_err *err)
{
    if (strpbrk(s, "\n\r"))
        return drv_err_set(err, DRV_EINVAL, 0, "\"args\": a newline in a command line");
    json_t *words = json_array();
    char *w = xmalloc(strlen(s) + 1);
    size_t n = 0;
    bool in_word = false;
    for (const char *p = s; *p; p++) {
        if (*p == ' ' || *p == '\t') {
            if (in_word)
                json_array_append_new(words, json_stringn(w, n));
            n = 0;
            in_word = false;
            continue;
        }
        in_word = true;
        if (*p == '\'') {
            const char *e = strchr(p + 1, '\'');
            if (!e)
                goto unterminated;
            memcpy(w + n, p + 1, (size_t)(e - p - 1));
            n += (size_t)(e - p - 1);
            p = e;
        } else if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                    p++;
                w[n++] = *p;
            }
            if (!*p)
                goto unterminated;
        } else if (*p == '\\' && p[1]) {
            w[n++] = *++p;
        } else {
            w[n++] = *p;
        }
    }
    if (in_word)
        json_array_append_new(words, json_stringn(w, n));
    free(w);
    *out = words;
    return 0;
unterminated:
    free(w);
    json_decref(words);
    return drv_err_set(err, DRV_EINVAL, 0, "\"args\": an unterminated quote");
}

/* The command line for the runner: ./script or a node command, then args. */
static int build_command(json_t *fields, const char *resources, char **cmd, bool *upload,
                         struct drv_err *err)
{
    const char *script = json_string_value(json_object_get(fields, "script"));
    if (!script || !*script)
        return drv_err_set(err, DRV_EINVAL, 0, "the action has no \"script\" field");
    *upload = false;
    char *head = NULL;
    struct stat st;
    char *local = resources && rel_ok(script) ? xasprintf("%s/%s", resources, script) : NULL;
    if (local && stat(local, &st) == 0 && S_ISREG(st.st_mode)) {
        char *rel = xasprintf("./%s", script);
        head = plugin_sh_quote(rel);
        free(rel);
        *upload = true;
    } else if (script[0] == '/' || !strchr(script, '/')) {
        /* A command of the node's own (Coopr: "a standard shell command"). */
        if (strpbrk(script, " \t\n'\"`$;&|<>()\\")) {
            free(local);
            return drv_err_set(err, DRV_EINVAL, 0,
                               "\"script\": \"%.80s\" is not a file name (put arguments in "
                               "\"args\")",
                               script);
        }
        head = plugin_sh_quote(script);
    } else {
        int rc = drv_err_set(err, DRV_ENOENT, 0, "script \"%s\" not found in resources \"%s\"",
                             script, resources ? resources : "(DROVER_RESOURCES unset)");
        free(local);
        return rc;
    }
    free(local);
    json_t *args = json_object_get(fields, "args");
    json_t *words = NULL;
    char *line = head;
    if (json_is_string(args)) {
        /* Coopr's command line, split into words here (blanks, quotes, backslash) and each
         * passed quoted: nothing of it reaches the node's shell as syntax (issue 20). */
        if (split_words(json_string_value(args), &words, err) != 0) {
            free(line);
            return err->code;
        }
        args = words;
    }
    if (json_is_array(args)) {
        size_t i;
        json_t *a;
        json_array_foreach(args, i, a)
        {
            char *s = scalar_text(a);
            if (!s || json_is_array(a)) {
                free(s);
                free(line);
                json_decref(words);
                return drv_err_set(err, DRV_EINVAL, 0, "\"args\"[%zu]: expected a scalar", i);
            }
            char *q = plugin_sh_quote(s);
            char *n = xasprintf("%s %s", line, q);
            free(q);
            free(s);
            free(line);
            line = n;
        }
    } else if (args && !json_is_null(args)) {
        free(line);
        return drv_err_set(err, DRV_EINVAL, 0, "\"args\": expected a string or an array");
    }
    json_decref(words);
    *cmd = line;
    return 0;
}

/* Check "data": an array of paths in the resources. */
static int check_data(json_t *fields, const char *resources, struct drv_err *err)
{
    json_t *data = json_object_get(fields, "data");
    if (!data || json_is_null(data))
        return 0;
    if (!json_is_array(data))
        return drv_err_set(err, DRV_EINVAL, 0, "\"data\": expected an array of resource paths");
    size_t i;
    json_t *d;
    json_array_foreach(data, i, d)
    {
        const char *rel = json_string_value(d);
        if (!rel_ok(rel))
            return drv_err_set(err, DRV_EINVAL, 0, "\"data\"[%zu]: not a relative path", i);
        char *local = resources ? xasprintf("%s/%s", resources, rel) : NULL;
        struct stat st;
        bool ok = local && lstat(local, &st) == 0 && !S_ISLNK(st.st_mode);
        free(local);
        if (!ok)
            return drv_err_set(err, DRV_ENOENT, 0, "data file \"%s\" not found in resources \"%s\"",
                               rel, resources ? resources : "(DROVER_RESOURCES unset)");
    }
    return 0;
}

/* Log the tail of a stream to standard error, line by line, for the task log. */
static void show_tail(const char *name, const char *text, bool cut)
{
    if (!text || !*text)
        return;
    fprintf(stderr, "--- %s%s\n", name, cut ? " (last 64 KiB)" : "");
    fputs(text, stderr);
    if (text[strlen(text) - 1] != '\n')
        fputc('\n', stderr);
}

/* The last non-empty line of text, for a failure's one-line message. */
static void last_line(const char *text, char *out, size_t n)
{
    out[0] = '\0';
    if (!text)
        return;
    size_t l = strlen(text);
    while (l > 0 && (text[l - 1] == '\n' || text[l - 1] == '\r' || text[l - 1] == ' '))
        l--;
    size_t s = l;
    while (s > 0 && text[s - 1] != '\n')
        s--;
    snprintf(out, n, "%.*s", (int)(l - s), text + s);
}

static struct sshc *connect_node(const struct plugin_task *t, struct drv_err *err)
{
    const char *host = plugin_fact_str(t, "ipaddresses.access_v4");
    const char *hk = plugin_fact_str(t, "ssh_host_key");
    const char *key = plugin_cfg_str(t, "ssh.private_key");
    if (!host) {
        drv_err_set(err, DRV_EINVAL, 0,
                    "the node has no \"facts.ipaddresses.access_v4\" from its provider (was it "
                    "confirmed?)");
        return NULL;
    }
    if (!hk) {
        drv_err_set(
            err, DRV_EPERM, 0,
            "the node has no \"facts.ssh_host_key\" from its provider (no trust on first use)");
        return NULL;
    }
    if (!key) {
        drv_err_set(err, DRV_EINVAL, 0,
                    "config \"ssh.private_key\" (the cluster's key) is missing");
        return NULL;
    }
    char fp[SSHKEY_FP_LEN], ty[40];
    if (sshc_host_key_parse(hk, fp, ty, sizeof(ty), err) != 0)
        return NULL;
    const char *type = plugin_fact_str(t, "ssh_host_key_type");
    const char *user = plugin_fact_str(t, "ssh_user");
    if (!user)
        user = plugin_cfg_str(t, "ssh.user");
    if (!user)
        user = plugin_cfg_str(t, "sshuser");
    struct sshc_opts o = {
        .host = host,
        .port = (int)plugin_fact_int(t, "ssh_port", 22),
        .user = user ? user : "root",
        .private_key = key,
        .public_key = plugin_cfg_str(t, "ssh.public_key"),
        .host_key = fp,
        .host_key_type = type ? type : (ty[0] ? ty : NULL),
        .timeout_ms = 15000,
        .nodes_only = true, /* the facts' address only, never this host's (issue 32) */
    };
    if (plugin_ssh_timeout_ms(t, 15000, &o.timeout_ms, err) != 0)
        return NULL;
    return sshc_connect(&o, err);
}

static void run_action(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct drv_err err;
    drv_err_clear(&err);
    json_t *action = plugin_cfg(t, "service.action");
    json_t *fields = json_object_get(action, "fields");
    const char *type = json_string_value(json_object_get(action, "type"));
    const char *svc = t->service[0] ? t->service : "?";
    if (!json_is_object(fields)) {
        plugin_result_fail(r, "%s of %s: the task has no \"config.service.action.fields\"",
                           t->task_name, svc);
        return;
    }
    if (type && strcmp(type, "shell") != 0) {
        plugin_result_fail(r, "%s of %s: action type \"%s\" is not \"shell\"", t->task_name, svc,
                           type);
        return;
    }
    const char *resources = getenv("DROVER_RESOURCES");
    char *cmd = NULL;
    bool upload = false;
    if (build_command(fields, resources, &cmd, &upload, &err) != 0 ||
        check_data(fields, resources, &err) != 0) {
        free(cmd);
        plugin_result_fail(r, "%s of %s: %s", t->task_name, svc, err.msg);
        return;
    }
    /* The worker's limit: the task's timeout_ms, else the descriptor's "timeout" (30m). */
    int64_t deadline = plugin_deadline_limit_ms(t, NULL);
    struct sshc *c = connect_node(t, &err);
    if (!c) {
        free(cmd);
        plugin_result_fail(r, "%s of %s on %s: %s", t->task_name, svc, t->node_id, err.msg);
        return;
    }
    struct sshrun run = {.c = c, .attempt = t->attempt};
    (void)plugin_ssh_timeout_ms(t, 0, &run.cmd_timeout_ms, NULL); /* connect_node checked it */
    snprintf(run.key, sizeof(run.key), "%s", t->task_key);
    const char *how = "ran it";
    if (sshrun_probe(&run, &err) != 0)
        goto fail;
    log_info(MOD, "event=handle task_id=%s state=%s handle=%s", t->task_id,
             sshrun_state_name(run.state), run.handle);
    if (run.state == SSHRUN_LOST) {
        drv_err_set(&err, DRV_ESSH, 0,
                    "the run of attempt %d died on the node without an exit status (%s)",
                    t->attempt, run.handle);
        goto fail;
    }
    if (run.state == SSHRUN_NEW || run.state == SSHRUN_PREPARED) {
        size_t bytes = 0;
        const char *script = json_string_value(json_object_get(fields, "script"));
        if (upload && sshrun_upload(&run, resources, script, &bytes, &err) != 0)
            goto fail;
        json_t *data = json_object_get(fields, "data");
        size_t i;
        json_t *d;
        json_array_foreach(data, i, d)
        {
            if (sshrun_upload(&run, resources, json_string_value(d), &bytes, &err) != 0)
                goto fail;
        }
        json_t *ncfg = node_config(t->config);
        char *in = json_dumps(ncfg, JSON_COMPACT);
        char *env = env_script(t, ncfg);
        json_decref(ncfg);
        int rc = sshrun_start(&run, in, env, cmd, &err);
        explicit_bzero(in, strlen(in));
        explicit_bzero(env, strlen(env));
        free(in);
        free(env);
        if (rc != 0)
            goto fail;
        log_info(MOD, "event=run-started task_id=%s uploaded_bytes=%zu", t->task_id, bytes);
    } else if (run.state == SSHRUN_RUNNING) {
        how = "re-attached: an earlier delivery started it";
    } else {
        how = "harvested: an earlier delivery ran it";
    }
    if (run.state != SSHRUN_FINISHED) {
        int rc = sshrun_wait(&run, deadline, &err);
        if (rc == DRV_ETIMEDOUT) {
            struct drv_err kerr;
            if (sshrun_kill(&run, &kerr) != 0) {
                drv_err_set(&err, DRV_ETIMEDOUT, 0, "timed out; killing it failed: %s", kerr.msg);
                goto fail;
            }
            int64_t ran = clock_mono_ms() - t->started_ms;
            drv_err_set(&err, DRV_ETIMEDOUT, 0,
                        "timed out after %lld ms; its process group on the node was killed",
                        (long long)ran);
            goto fail;
        }
        if (rc != 0)
            goto fail;
        if (run.state == SSHRUN_LOST) {
            drv_err_set(&err, DRV_ESSH, 0, "the run died on the node without an exit status");
            goto fail;
        }
    }
    struct sshrun_outcome o;
    if (sshrun_harvest(&run, &o, &err) != 0)
        goto fail;
    show_tail("stdout", o.out, o.out_cut);
    show_tail("stderr", o.err, o.err_cut);
    char last[300];
    last_line(o.err && *o.err ? o.err : o.out, last, sizeof(last));
    if (strcmp(o.exit, "0") == 0 && o.result_error[0]) {
        plugin_result_fail(r, "%s of %s on %s: the script's result (DROVER_RESULT): %s",
                           t->task_name, svc, t->node_id, o.result_error);
    } else if (strcmp(o.exit, "0") == 0) {
        if (o.result) {
            const char *k;
            json_t *v;
            json_object_foreach(o.result, k, v) plugin_result_set(r, k, json_incref(v));
        }
        plugin_result_ok(r, "%s of %s on %s: exit 0 (%s, %s)", t->task_name, svc, t->node_id,
                         t->task_id, how);
    } else if (strcmp(o.exit, "timeout") == 0) {
        plugin_result_fail(r, "%s of %s on %s: an earlier delivery of %s timed out and was killed",
                           t->task_name, svc, t->node_id, t->task_id);
    } else if (strcmp(o.exit, "superseded") == 0) {
        plugin_result_fail(r, "%s of %s on %s: %s was superseded by a later attempt", t->task_name,
                           svc, t->node_id, t->task_id);
    } else {
        plugin_result_fail(r, "%s of %s on %s: exit %s%s%s (%s, %s)", t->task_name, svc, t->node_id,
                           o.exit, last[0] ? ": " : "", last, t->task_id, how);
    }
    sshrun_outcome_free(&o);
    sshc_close(c);
    free(cmd);
    return;
fail:
    plugin_result_fail(r, "%s of %s on %s: %s", t->task_name, svc, t->node_id, err.msg);
    sshc_close(c);
    free(cmd);
}

/* bootstrap: fields {"automators": [...]}; only nodes that use "shell" need anything. */
static void run_bootstrap(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    json_t *autos = plugin_cfg(t, "service.action.fields.automators");
    if (!autos)
        autos = json_object_get(json_object_get(t->root, "fields"), "automators");
    if (json_is_array(autos)) {
        bool mine = false;
        size_t i;
        json_t *a;
        json_array_foreach(autos, i, a) mine =
            mine || (json_is_string(a) && strcmp(json_string_value(a), "shell") == 0);
        if (!mine) {
            plugin_result_ok(r, "bootstrap of %s: no shell actions, nothing to do", t->node_id);
            return;
        }
    }
    struct drv_err err;
    drv_err_clear(&err);
    struct sshc *c = connect_node(t, &err);
    char work[1024];
    int tmo = 0;
    (void)plugin_ssh_timeout_ms(t, 0, &tmo, NULL); /* connect_node checked it */
    if (!c || sshrun_bootstrap(c, tmo, work, sizeof(work), &err) != 0) {
        sshc_close(c);
        plugin_result_fail(r, "bootstrap of %s: %s", t->node_id, err.msg);
        return;
    }
    plugin_result_ok(r, "bootstrap of %s: %s answers as %s, work directory %s", t->node_id,
                     sshc_peer(c), sshc_host_key(c), work);
    sshc_close(c);
}

/* Every task is logged before it runs. */
static int log_task(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    log_info(MOD, "event=task task=%s service=%s node=%s task_id=%s", t->task_name, t->service,
             t->node_id, t->task_id);
    return 0;
}

static void refuse_provider_task(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    plugin_result_fail(r, "the ssh automator does not serve provider tasks (\"%s\")", t->task_name);
}

/* Bootstrap, and every other task name is a service action (run_action). */
static const struct plugin_action actions[] = {
    {"create", refuse_provider_task},
    {"confirm", refuse_provider_task},
    {"delete", refuse_provider_task},
    {"bootstrap", run_bootstrap},
    {NULL, NULL},
};

static const struct plugin_def ssh = {
    .name = "ssh", .actions = actions, .other = run_action, .check = log_task};

int main(void)
{
    return plugin_main(&ssh, NULL);
}
