/*
 * plugin: task input, result output and the time limit of a plugin (see plugin.h).
 *
 * The task is read whole (bounded by PLUGIN_MAX_TASK) before anything is
 * checked, so a truncated or garbage input fails with one clear message and
 * nothing half-done. Names that end up in file paths, znode names or remote
 * shell commands (taskId, nodeId, clusterId, tenant, service) are restricted to
 * [A-Za-z0-9_.-] here, once, so that no plugin has to quote them.
 */
#include "plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "xalloc.h"

#define MOD "plugin"

/* JSON strings may be secrets (the cluster's key): wipe every block jansson frees. */
static void wiping_free(void *p)
{
    if (p) {
        explicit_bzero(p, malloc_usable_size(p));
        free(p);
    }
}

void plugin_init(void)
{
    const char *lv = getenv("DROVER_LOG_LEVEL");
    int level = lv ? log_level_parse(lv) : -1;
    log_init(level < 0 ? LOG_INFO : (enum log_level)level, 2);
    signal(SIGPIPE, SIG_IGN);
    json_set_alloc_funcs(xmalloc, wiping_free);
    /* The task holds opened secrets and the cluster's key: not dumpable, so that no other
       process of this uid (the tenant's other plugins) traces this one or reads its
       memory, environment or standard input, and no core file keeps them. The kernel
       makes every exec dumpable again, so this is the plugin's own call (docs/security.md
       "Plugins of different tenants"). */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

bool plugin_name_ok(const char *s, size_t max)
{
    if (!s || !*s || strlen(s) > max)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static const char *opt_name(json_t *root, const char *key, bool *bad)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
        return "";
    if (json_is_integer(v)) {
        /* Ids given as numbers are accepted: keep a string form in the task. */
        char buf[32];
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        json_object_set_new(root, key, json_string(buf));
        v = json_object_get(root, key);
    }
    if (!json_is_string(v) || !plugin_name_ok(json_string_value(v), 128)) {
        *bad = true;
        return NULL;
    }
    return json_string_value(v);
}

int plugin_task_parse(const char *text, size_t len, struct plugin_task *t, struct drv_err *err)
{
    memset(t, 0, sizeof(*t));
    t->started_ms = clock_mono_ms();
    if (len == 0)
        return drv_err_set(err, DRV_EINVAL, 0, "bad task JSON: no input");
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return drv_err_set(err, DRV_EINVAL, 0, "bad task JSON: %d:%d: %s", je.line, je.column,
                           je.text);
    t->root = root;
    if (!json_is_object(root)) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0, "bad task JSON: not an object");
    }
    json_t *id = json_object_get(root, "taskId");
    if (!json_is_string(id) || !plugin_name_ok(json_string_value(id), 200)) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "bad task JSON: field \"taskId\": expected <job>.<index>.<attempt>");
    }
    t->task_id = json_string_value(id);
    const char *dot = strrchr(t->task_id, '.');
    char *end = NULL;
    long att = dot ? strtol(dot + 1, &end, 10) : 0;
    if (!dot || dot == t->task_id || !end || *end || att < 1) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "bad task JSON: field \"taskId\": \"%s\" is not <job>.<index>.<attempt>",
                           json_string_value(id));
    }
    t->task_key = xstrndup(t->task_id, (size_t)(dot - t->task_id));
    t->attempt = (int)att;
    json_t *a = json_object_get(root, "attempt");
    if (a && (!json_is_integer(a) || json_integer_value(a) != att)) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "bad task JSON: field \"attempt\": expected %ld, the taskId's last part",
                           att);
    }
    json_t *tn = json_object_get(root, "taskName");
    if (!json_is_string(tn) || !plugin_name_ok(json_string_value(tn), 64)) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "bad task JSON: field \"taskName\": expected a name");
    }
    t->task_name = json_string_value(tn);
    t->config = json_object_get(root, "config");
    if (!json_is_object(t->config)) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "bad task JSON: field \"config\": expected an object");
    }
    static const char *const names[] = {"jobId", "clusterId", "tenant", "nodeId", "service"};
    const char **dst[] = {&t->job_id, &t->cluster_id, &t->tenant, &t->node_id, &t->service};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        bool bad = false;
        *dst[i] = opt_name(root, names[i], &bad);
        if (bad) {
            plugin_task_free(t);
            return drv_err_set(err, DRV_EINVAL, 0,
                               "bad task JSON: field \"%s\": expected [A-Za-z0-9_.-], at most 128",
                               names[i]);
        }
    }
    json_t *cl = json_object_get(root, "cleanup");
    if (cl && !json_is_boolean(cl)) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "bad task JSON: field \"cleanup\": expected a boolean");
    }
    t->cleanup = json_is_true(cl);
    json_t *to = json_object_get(root, "timeout_ms");
    if (to && (!json_is_integer(to) || json_integer_value(to) < 0)) {
        plugin_task_free(t);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "bad task JSON: field \"timeout_ms\": expected a non-negative integer");
    }
    t->timeout_ms = to ? json_integer_value(to) : 0;
    return 0;
}

int plugin_task_read(int fd, struct plugin_task *t, struct drv_err *err)
{
    size_t cap = 65536, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= PLUGIN_MAX_TASK) {
                explicit_bzero(buf, cap);
                free(buf);
                memset(t, 0, sizeof(*t));
                return drv_err_set(err, DRV_EINVAL, 0, "bad task JSON: larger than %u bytes",
                                   PLUGIN_MAX_TASK);
            }
            char *nb = xmalloc(cap * 2);
            memcpy(nb, buf, n);
            explicit_bzero(buf, cap);
            free(buf);
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            memset(t, 0, sizeof(*t));
            return drv_err_set(err, DRV_EIO, e, "reading the task: %s", strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    int rc = plugin_task_parse(buf, n, t, err);
    explicit_bzero(buf, n); /* it held the cluster's private key */
    free(buf);
    return rc;
}

void plugin_task_free(struct plugin_task *t)
{
    json_decref(t->root);
    free((char *)t->task_key);
    memset(t, 0, sizeof(*t));
}

json_t *plugin_cfg(const struct plugin_task *t, const char *path)
{
    json_t *cur = t->config;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (!json_is_object(cur))
            return NULL;
        char key[128];
        if (len >= sizeof(key))
            return NULL;
        memcpy(key, p, len);
        key[len] = '\0';
        cur = json_object_get(cur, key);
        p += len + (dot ? 1 : 0);
    }
    return cur;
}

const char *plugin_cfg_str(const struct plugin_task *t, const char *path)
{
    json_t *v = plugin_cfg(t, path);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int64_t plugin_cfg_int(const struct plugin_task *t, const char *path, int64_t def)
{
    json_t *v = plugin_cfg(t, path);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v)) {
        char *end = NULL;
        errno = 0;
        long long x = strtoll(json_string_value(v), &end, 10);
        if (end && *end == '\0' && end != json_string_value(v) && errno == 0)
            return x;
    }
    return def;
}

static void fact_path(char *buf, size_t n, const char *path)
{
    snprintf(buf, n, "facts.%s", path);
}

json_t *plugin_fact(const struct plugin_task *t, const char *path)
{
    char p[200];
    fact_path(p, sizeof(p), path);
    return plugin_cfg(t, p);
}

const char *plugin_fact_str(const struct plugin_task *t, const char *path)
{
    char p[200];
    fact_path(p, sizeof(p), path);
    return plugin_cfg_str(t, p);
}

int64_t plugin_fact_int(const struct plugin_task *t, const char *path, int64_t def)
{
    char p[200];
    fact_path(p, sizeof(p), path);
    return plugin_cfg_int(t, p, def);
}

/* A limit less its margin (see plugin_deadline_ms). */
static int64_t within(int64_t limit_ms)
{
    int64_t margin = limit_ms / 10;
    if (margin > 5000)
        margin = 5000;
    if (margin < 1000)
        margin = 1000;
    if (margin > limit_ms / 2)
        margin = limit_ms / 2;
    int64_t d = limit_ms - margin;
    return d < 100 ? 100 : d;
}

int64_t plugin_deadline_ms(const struct plugin_task *t, int64_t def_ms)
{
    if (t->timeout_ms <= 0)
        return t->started_ms + def_ms;
    return t->started_ms + within(t->timeout_ms);
}

#define WORKER_DEFAULT_LIMIT_MS (30 * 60 * 1000) /* src/worker/plugin.c: no "timeout" */

int64_t plugin_limit_ms(const struct plugin_task *t, const char *dir)
{
    if (t->timeout_ms > 0)
        return t->timeout_ms;
    char *path = xasprintf("%s/plugin.json", dir ? dir : plugin_self_dir());
    json_t *d = json_load_file(path, 0, NULL);
    free(path);
    long ms = WORKER_DEFAULT_LIMIT_MS;
    const char *tmo = json_string_value(json_object_get(d, "timeout"));
    if (tmo && (config_parse_duration(tmo, &ms) != 0 || ms <= 0))
        ms = WORKER_DEFAULT_LIMIT_MS; /* the worker refuses such a descriptor */
    json_decref(d);
    return ms;
}

int plugin_ssh_timeout_ms(const struct plugin_task *t, int def_ms, int *out_ms, struct drv_err *err)
{
    *out_ms = def_ms;
    json_t *v = plugin_cfg(t, "cluster.ssh.command_timeout");
    if (!v || json_is_null(v))
        return 0;
    long ms = -1;
    if (json_is_integer(v))
        ms = (long)json_integer_value(v);
    else if (json_is_string(v) && config_parse_duration(json_string_value(v), &ms) != 0)
        ms = -1;
    if (ms < 1000 || ms > 3600000)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "config cluster.ssh.command_timeout: not a duration from 1s to 1h "
                           "(\"90s\", \"2m\", or milliseconds)");
    *out_ms = (int)ms;
    return 0;
}

int64_t plugin_deadline_limit_ms(const struct plugin_task *t, const char *dir)
{
    return t->started_ms + within(plugin_limit_ms(t, dir));
}

const char *plugin_self_dir(void)
{
    static char dir[4096];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    if (n <= 0)
        return ".";
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return ".";
    *slash = '\0';
    return dir;
}

void plugin_result_init(struct plugin_result *r)
{
    memset(r, 0, sizeof(*r));
    r->result = json_object();
    r->sensitive = json_array();
    snprintf(r->message, sizeof(r->message), "no result");
}

void plugin_result_set(struct plugin_result *r, const char *key, json_t *v)
{
    json_object_set_new(r->result, key, v);
}

static void set_message(struct plugin_result *r, const char *fmt, va_list ap)
{
    vsnprintf(r->message, sizeof(r->message), fmt, ap);
    for (char *p = r->message; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
}

void plugin_result_ok(struct plugin_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(r, fmt, ap);
    va_end(ap);
    r->ok = true;
}

void plugin_result_fail(struct plugin_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(r, fmt, ap);
    va_end(ap);
    r->ok = false;
}

int plugin_result_emit(struct plugin_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(r->ok ? "ok" : "failed"));
    json_object_set(o, "result", r->result);
    json_object_set_new(o, "message", json_string(r->message));
    json_object_set(o, "sensitive", r->sensitive);
    char *s = json_dumps(o, JSON_COMPACT);
    fputs(s, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(s);
    json_decref(o);
    char q[1100];
    if (r->ok)
        log_info(MOD, "event=done message=%s", log_quote(r->message, q, sizeof(q)));
    else
        log_error(MOD, "event=failed message=%s", log_quote(r->message, q, sizeof(q)));
    json_decref(r->result);
    json_decref(r->sensitive);
    r->result = r->sensitive = NULL;
    return r->ok ? 0 : 1;
}

int plugin_fail_now(const char *fmt, ...)
{
    struct plugin_result r;
    plugin_result_init(&r);
    va_list ap;
    va_start(ap, fmt);
    set_message(&r, fmt, ap);
    va_end(ap);
    r.ok = false;
    return plugin_result_emit(&r);
}

char *plugin_sh_quote(const char *s)
{
    size_t n = 3;
    for (const char *p = s; *p; p++)
        n += *p == '\'' ? 4 : 1;
    char *out = xmalloc(n);
    char *w = out;
    *w++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(w, "'\\''", 4);
            w += 4;
        } else {
            *w++ = *p;
        }
    }
    *w++ = '\'';
    *w = '\0';
    return out;
}

char *plugin_read_file(const char *path, size_t max, size_t *len, struct drv_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        drv_err_set(err, e == ENOENT ? DRV_ENOENT : DRV_EIO, e, "%s: %s", path, strerror(e));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                close(fd);
                free(buf);
                drv_err_set(err, DRV_EINVAL, 0, "%s: larger than %zu bytes", path, max);
                return NULL;
            }
            cap = cap * 2 > max ? max : cap * 2;
            buf = xrealloc(buf, cap + 1);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            drv_err_set(err, DRV_EIO, e, "%s: %s", path, strerror(e));
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int plugin_write_file(const char *path, const void *data, size_t len, unsigned mode,
                      struct drv_err *err)
{
    char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    int fd =
        open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, (mode_t)(mode & 0700));
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return drv_err_set(err, DRV_EIO, e, "%s: %s", path, strerror(e));
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            return drv_err_set(err, DRV_EIO, e, "%s: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    bool bad = fchmod(fd, (mode_t)mode) != 0 || fsync(fd) != 0;
    int e = errno;
    if (close(fd) != 0 && !bad) {
        bad = true;
        e = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = true;
        e = errno;
    }
    if (bad) {
        unlink(tmp);
        free(tmp);
        return drv_err_set(err, DRV_EIO, e, "%s: %s", path, strerror(e));
    }
    free(tmp);
    return 0;
}

/* ---- main() ---- */

/* "<plugin> serves a, b and c, not "x"": the names of the table, as people list them. */
static void refuse(const struct plugin_def *def, const struct plugin_task *t,
                   struct plugin_result *r)
{
    char list[512] = "";
    size_t n = 0, len = 0;
    while (def->actions && def->actions[n].name)
        n++;
    for (size_t i = 0; i < n && len < sizeof(list); i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
        int w = snprintf(list + len, sizeof(list) - len, "%s%s", sep, def->actions[i].name);
        len += w > 0 ? (size_t)w : 0;
    }
    plugin_result_fail(r, "%s serves %s, not \"%s\"", def->name, n ? list : "nothing",
                       t->task_name);
}

void plugin_serve(const struct plugin_def *def, void *ctx, struct plugin_task *t,
                  struct plugin_result *r)
{
    if (!def->check || def->check(t, ctx, r) == 0) {
        plugin_run_fn run = def->other;
        for (const struct plugin_action *a = def->actions; a && a->name; a++)
            if (strcmp(a->name, t->task_name) == 0) {
                run = a->run;
                break;
            }
        if (!run)
            refuse(def, t, r);
        else if (!def->open || def->open(t, ctx, r) == 0)
            run(t, ctx, r);
    }
    if (def->close)
        def->close(ctx);
}

int plugin_main(const struct plugin_def *def, void *ctx)
{
    plugin_init();
    struct plugin_task t;
    struct drv_err err;
    drv_err_clear(&err);
    if (plugin_task_read(0, &t, &err) != 0)
        return plugin_fail_now("%s", err.msg);
    struct plugin_result r;
    plugin_result_init(&r);
    plugin_serve(def, ctx, &t, &r);
    plugin_task_free(&t);
    return plugin_result_emit(&r);
}
