/*
 * plugin: read plugin descriptors and pick the plugin of a task.
 *
 * A plugin is a directory <plugin_dir>/<name> with a plugin.json descriptor
 * (docs/plugins.md lists the fields). The worker reads them all once, at
 * start, and refuses to start on a bad one: a worker that silently lacks a
 * plugin would fail every task of that type instead.
 *
 * Selection: providers serve provider types, automators action types; a
 * plugin naming the type exactly wins over a "*" plugin, and two plugins
 * naming one type exactly is an error (which one runs would depend on the
 * order of a directory listing).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "worker_int.h"
#include "xalloc.h"

static bool good_name(const char *s)
{
    if (!s || !*s || strlen(s) > 64 || !((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
            return false;
    return true;
}

static void plugin_clear(struct worker__plugin *p)
{
    free(p->name);
    free(p->dir);
    free(p->exec);
    free(p->builtin);
    for (size_t i = 0; i < p->n_serves; i++)
        free(p->serves[i]);
    free(p->serves);
    json_decref(p->fields);
    memset(p, 0, sizeof(*p));
}

void worker__plugins_free(struct worker__plugins *ps)
{
    if (!ps)
        return;
    for (size_t i = 0; i < ps->n; i++)
        plugin_clear(&ps->v[i]);
    free(ps->v);
    free(ps);
}

static int bad(struct drv_err *err, const char *file, const char *field, const char *what)
{
    return drv_err_set(err, DRV_EINVAL, 0, "%s: field \"%s\": %s", file, field, what);
}

/* Parse one descriptor into p (cleared on failure). */
static int parse_one(const char *dir, const char *file, struct worker__plugin *p,
                     struct drv_err *err)
{
    json_error_t je;
    json_t *j = json_load_file(file, 0, &je);
    if (!j)
        return drv_err_set(err, DRV_EINVAL, 0, "%s:%d: %s", file, je.line, je.text);
    int rc = 0;
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *exe = json_string_value(json_object_get(j, "executable"));
    const char *key = NULL;
    json_t *serves = NULL, *fields = json_object_get(j, "fields");
    if (!json_is_object(j))
        rc = drv_err_set(err, DRV_EINVAL, 0, "%s: expected a JSON object", file);
    else if (!good_name(name))
        rc = bad(err, file, "name", "expected [a-z0-9][a-z0-9_-]* (at most 64 characters)");
    else if (!type || (strcmp(type, "provider") != 0 && strcmp(type, "automator") != 0))
        rc = bad(err, file, "type", "expected \"provider\" or \"automator\"");
    else if (!exe || !*exe)
        rc = bad(err, file, "executable", "expected a path or \"builtin:noop\"");
    else if (fields && !json_is_object(fields))
        rc = bad(err, file, "fields", "expected an object");
    if (rc == 0) {
        key = strcmp(type, "provider") == 0 ? "providertypes" : "actiontypes";
        serves = json_object_get(j, key);
        if (!json_is_array(serves) || json_array_size(serves) == 0)
            rc = bad(err, file, key, "expected a non-empty array of strings");
    }
    memset(p, 0, sizeof(*p));
    if (rc == 0) {
        p->name = xstrdup(name);
        p->type = strcmp(type, "provider") == 0 ? WORKER__PROVIDER : WORKER__AUTOMATOR;
        p->dir = xstrdup(dir);
        p->fields = fields ? json_incref(fields) : json_object();
        p->serves = xcalloc(json_array_size(serves), sizeof(char *));
        size_t i;
        json_t *v;
        json_array_foreach(serves, i, v)
        {
            if (!json_is_string(v) || !*json_string_value(v)) {
                rc = bad(err, file, key, "expected a non-empty array of strings");
                break;
            }
            p->serves[p->n_serves++] = xstrdup(json_string_value(v));
        }
    }
    if (rc == 0) {
        if (strncmp(exe, "builtin:", 8) == 0) {
            if (strcmp(exe + 8, "noop") != 0)
                rc = bad(err, file, "executable", "the only builtin is \"builtin:noop\"");
            else
                p->builtin = xstrdup(exe + 8);
        } else if (exe[0] == '/' || strstr(exe, "..")) {
            rc = bad(err, file, "executable", "expected a path inside the plugin's directory");
        } else {
            p->exec = xasprintf("%s/%s", dir, exe);
            if (access(p->exec, X_OK) != 0)
                rc = drv_err_set(err, DRV_EINVAL, 0,
                                 "%s: field \"executable\": %s is not executable", file, p->exec);
        }
    }
    if (rc == 0) {
        const char *t = json_string_value(json_object_get(j, "timeout"));
        p->timeout_ms = 30 * 60 * 1000;
        if (t && config_parse_duration(t, &p->timeout_ms) != 0)
            rc = bad(err, file, "timeout", "expected a duration such as 30s or 10m");
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(j, "wants"), i, v)
        {
            if (json_is_string(v) && strcmp(json_string_value(v), "nodes") == 0)
                p->wants_nodes = true;
            else if (json_is_string(v) && strcmp(json_string_value(v), "zookeeper") == 0)
                p->wants_zookeeper = true;
            else
                rc = bad(err, file, "wants", "expected an array of \"nodes\", \"zookeeper\"");
        }
        p->testing = json_is_true(json_object_get(j, "testing"));
    }
    json_decref(j);
    if (rc)
        plugin_clear(p);
    return rc;
}

static int cmp_plugin(const void *a, const void *b)
{
    return strcmp(((const struct worker__plugin *)a)->name,
                  ((const struct worker__plugin *)b)->name);
}

int worker__plugins_load(const char *dir, struct worker__plugins **out, struct drv_err *err)
{
    *out = NULL;
    char abs[PATH_MAX];
    if (!realpath(dir, abs))
        return drv_err_set(err, DRV_ENOENT, 0, "plugin directory %s: not found", dir);
    DIR *d = opendir(abs);
    if (!d)
        return drv_err_set(err, DRV_ENOENT, 0, "plugin directory %s: cannot be read", dir);
    struct worker__plugins *ps = xcalloc(1, sizeof(*ps));
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *pdir = xasprintf("%s/%s", abs, e->d_name);
        char *file = xasprintf("%s/plugin.json", pdir);
        struct stat st;
        if (stat(file, &st) == 0) {
            XGROW(ps->v, cap, ps->n + 1);
            rc = parse_one(pdir, file, &ps->v[ps->n], err);
            if (rc == 0)
                ps->n++;
        }
        free(pdir);
        free(file);
    }
    closedir(d);
    if (rc == 0)
        qsort(ps->v, ps->n, sizeof(*ps->v), cmp_plugin);
    /* Names unique; a type named exactly by one plugin of a kind at most. */
    for (size_t i = 0; rc == 0 && i < ps->n; i++)
        for (size_t k = i + 1; rc == 0 && k < ps->n; k++) {
            struct worker__plugin *a = &ps->v[i], *b = &ps->v[k];
            if (strcmp(a->name, b->name) == 0)
                rc = drv_err_set(err, DRV_EINVAL, 0, "two plugins are named \"%s\"", a->name);
            if (a->type != b->type)
                continue;
            for (size_t x = 0; rc == 0 && x < a->n_serves; x++)
                for (size_t y = 0; rc == 0 && y < b->n_serves; y++)
                    if (strcmp(a->serves[x], b->serves[y]) == 0 && strcmp(a->serves[x], "*") != 0)
                        rc = drv_err_set(
                            err, DRV_EINVAL, 0,
                            "plugins \"%s\" and \"%s\" both serve %s type \"%s\"", a->name, b->name,
                            a->type == WORKER__PROVIDER ? "provider" : "action", a->serves[x]);
        }
    if (rc) {
        worker__plugins_free(ps);
        return rc;
    }
    *out = ps;
    return 0;
}

const struct worker__plugin *worker__plugins_find(const struct worker__plugins *ps,
                                                  enum worker__plugin_type type, const char *what)
{
    const struct worker__plugin *any = NULL;
    for (size_t i = 0; ps && i < ps->n; i++) {
        const struct worker__plugin *p = &ps->v[i];
        if (p->type != type)
            continue;
        for (size_t k = 0; k < p->n_serves; k++) {
            if (what && strcmp(p->serves[k], what) == 0)
                return p;
            if (strcmp(p->serves[k], "*") == 0 && !any)
                any = p;
        }
    }
    return any;
}

bool worker__plugin_sensitive(const struct worker__plugin *p, const char *field)
{
    json_t *f = json_object_get(p->fields, field);
    return json_is_true(json_object_get(f, "sensitive"));
}

bool worker__is_provider_task(const char *task_name)
{
    return task_name && (strcmp(task_name, "create") == 0 || strcmp(task_name, "confirm") == 0 ||
                         strcmp(task_name, "delete") == 0);
}

/* Is name in the comma-separated list (blanks around names allowed)? */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        while (len && *p == ' ')
            p++, len--;
        while (len && p[len - 1] == ' ')
            len--;
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!c)
            break;
        p = c + 1;
    }
    return false;
}

void worker__plugins_filter(struct worker__plugins *ps, const char *allow)
{
    if (!allow || !*allow)
        return;
    size_t keep = 0;
    for (size_t i = 0; i < ps->n; i++) {
        if (listed(allow, ps->v[i].name))
            ps->v[keep++] = ps->v[i];
        else
            plugin_clear(&ps->v[i]);
    }
    ps->n = keep;
}

int worker__plugins_testing(struct worker__plugins *ps, const char *allow, bool allowed,
                            char *dropped, size_t n, struct drv_err *err)
{
    if (n)
        dropped[0] = '\0';
    if (allowed)
        return 0;
    size_t keep = 0;
    int rc = 0;
    for (size_t i = 0; i < ps->n; i++) {
        if (!ps->v[i].testing) {
            ps->v[keep++] = ps->v[i];
            continue;
        }
        if (rc == 0 && allow && *allow && listed(allow, ps->v[i].name))
            rc = drv_err_set(err, DRV_EINVAL, 0,
                             "worker.plugins names \"%s\", a plugin for tests and benchmarks only "
                             "(\"testing\": true in %s/plugin.json): it runs only where "
                             "worker.testing_plugins = true",
                             ps->v[i].name, ps->v[i].dir);
        size_t len = strlen(dropped);
        if (len + strlen(ps->v[i].name) + 2 < n)
            snprintf(dropped + len, n - len, "%s%s", len ? "," : "", ps->v[i].name);
        plugin_clear(&ps->v[i]);
    }
    ps->n = keep;
    return rc;
}
