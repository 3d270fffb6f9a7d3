/*
 * control: operators' requests to one running process, through ZooKeeper.
 *
 * An API call reaches whichever droverd the load balancer picked, yet
 * "drain droverd-2" or "drain worker-7" is about another process. The API
 * writes the request to a persistent znode named after the target,
 *
 *   /drover/control/<group>/<id>   {"want":"drain","by":"alice","at":<s>,
 *                                   "incarnation":"<host>/<pid>/<started>"}
 *
 * and the target watches that znode (coord_control_watch). The incarnation
 * names the very process the request was meant for (host, pid and start
 * time from its member znode), so a process restarted under the same id
 * ignores what was asked of its predecessor: a node drained, stopped and
 * started again comes back serving, and no znode has to be cleaned up.
 *
 * One znode per member id (the last request wins); they stay, a few hundred
 * bytes each, bounded by the ids ever used (docs/zookeeper-tree.md).
 *
 * Threads: the watcher's callbacks run on the session's loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord.h"
#include "xalloc.h"
#include "zkpath.h"

struct coord_control {
    struct coord_watcher *w;
    char *incarnation;
    coord_control_cb cb;
    void *arg;
    int64_t seen_mzxid; /* the last request told, so a re-read after a new session is quiet */
};

void coord_control_incarnation(char *buf, size_t n, const char *host, long long pid,
                               long long started)
{
    snprintf(buf, n, "%s/%lld/%lld", host ? host : "", pid, started);
}

int coord_control_incarnation_of(const char *member_json, char *buf, size_t n)
{
    json_error_t je;
    json_t *d = member_json ? json_loads(member_json, 0, &je) : NULL;
    if (!json_is_object(d) || !json_is_integer(json_object_get(d, "pid"))) {
        json_decref(d);
        return DRV_EINVAL;
    }
    coord_control_incarnation(buf, n, json_string_value(json_object_get(d, "host")),
                              (long long)json_integer_value(json_object_get(d, "pid")),
                              (long long)json_integer_value(json_object_get(d, "started")));
    json_decref(d);
    return 0;
}

static void on_data(int rc, const char *data, size_t len, const struct coord_stat *st, void *arg)
{
    struct coord_control *c = arg;
    if (rc != 0 || !st || st->mzxid == c->seen_mzxid)
        return;
    c->seen_mzxid = st->mzxid;
    json_error_t je;
    json_t *d = json_loadb(data, len, 0, &je);
    const char *inc = json_string_value(json_object_get(d, "incarnation"));
    const char *want = json_string_value(json_object_get(d, "want"));
    const char *by = json_string_value(json_object_get(d, "by"));
    if (inc && want && strcmp(inc, c->incarnation) == 0)
        c->cb(want, by ? by : "", c->arg);
    json_decref(d);
}

struct coord_control *coord_control_watch(struct coord_session *s, const char *group,
                                          const char *id, const char *incarnation,
                                          coord_control_cb cb, void *arg)
{
    struct coord_control *c = xcalloc(1, sizeof(*c));
    c->incarnation = xstrdup(incarnation);
    c->cb = cb;
    c->arg = arg;
    char *path = zkpath_control(NULL, 0, group, id);
    c->w = coord_watch_data(s, path, on_data, c);
    free(path);
    return c;
}

void coord_control_free(struct coord_control *c)
{
    if (!c)
        return;
    coord_watcher_free(c->w);
    free(c->incarnation);
    free(c);
}
