/*
 * export: a plan as JSON (complete, read back by planner_plan_from_json after
 * a failover), as Graphviz DOT, and its stages as JSON or text.
 *
 * The JSON form, format version 1:
 *   {"format_version": 1, "operation": "create", "max_per_node": 1,
 *    ["rollback_of": "create",]
 *    "tasks": [{"id": "n1/hbase-master/start", "node": "n1",
 *               "service": "hbase-master", "action": "start",
 *               "type": "chef-solo", "fields": {...},
 *               "strategy": {"type": "parallel"[, "amount": 5]},
 *               "deps": ["n1/hbase-master/initialize", "* /zookeeper-server/start"],
 *               ["inverse_of": "...", "restore": "previous-config"]}, ...]}
 * Anchors have "action": "anchor" and no node, type or fields. Keys come out
 * in this order, tasks in plan order: same plan, same bytes.
 */
#include <stdio.h>
#include <string.h>

#include "planner_int.h"
#include "strbuf.h"
#include "xalloc.h"

/* ---- escapes on a strbuf ---- */

/* DOT string body: quotes and backslashes escaped. */
static void sb_dotstr(struct strbuf *b, const char *s)
{
    size_t n = strlen(s);
    strbuf_grow(b, 2 * n);
    char *o = b->buf + b->len;
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            *o++ = '\\';
        *o++ = *s;
    }
    strbuf_setlen(b, (size_t)(o - b->buf));
}

/* A JSON string, escaped as jansson escapes it (so that the two writers agree). */
static void sb_jstr(struct strbuf *b, const char *s)
{
    size_t n = strlen(s);
    strbuf_grow(b, n * 6 + 2);
    char *o = b->buf + b->len;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = (char)ch;
        } else if (ch < 0x20) {
            *o++ = '\\';
            switch (ch) {
            case '\b':
                *o++ = 'b';
                break;
            case '\f':
                *o++ = 'f';
                break;
            case '\n':
                *o++ = 'n';
                break;
            case '\r':
                *o++ = 'r';
                break;
            case '\t':
                *o++ = 't';
                break;
            default:
                o += sprintf(o, "u%04X", ch);
            }
        } else {
            *o++ = (char)ch;
        }
    }
    *o++ = '"';
    strbuf_setlen(b, (size_t)(o - b->buf));
}

static json_t *strategy_json(const struct planner_strategy *s)
{
    json_t *o = json_object();
    json_object_set_new(
        o, "type", json_string(s->type == PLANNER_STRAT_ONE_BY_ONE ? "one-by-one" : "parallel"));
    if (s->type == PLANNER_STRAT_PARALLEL && s->amount > 0)
        json_object_set_new(o, "amount", json_integer(s->amount));
    return o;
}

json_t *planner_task_to_json(const struct planner_plan *plan, const struct planner_task *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(t->id));
    if (t->node)
        json_object_set_new(o, "node", json_string(t->node));
    if (t->service)
        json_object_set_new(o, "service", json_string(t->service));
    json_object_set_new(o, "action", json_string(planner_action_name(t->action)));
    if (t->type)
        json_object_set_new(o, "type", json_string(t->type));
    if (t->fields)
        json_object_set(o, "fields", t->fields);
    if (t->action != PLANNER_ACT_ANCHOR)
        json_object_set_new(o, "strategy", strategy_json(&t->strategy));
    json_t *deps = json_array();
    for (uint32_t d = 0; d < t->n_deps; d++)
        json_array_append_new(deps, json_string(plan->tasks[t->deps[d]].id));
    json_object_set_new(o, "deps", deps);
    if (t->inverse_of)
        json_object_set_new(o, "inverse_of", json_string(t->inverse_of));
    if (t->restore)
        json_object_set_new(o, "restore", json_string(t->restore));
    return o;
}

json_t *planner_plan_to_json(const struct planner_plan *plan)
{
    json_t *root = json_object();
    json_object_set_new(root, "format_version", json_integer(plan->format_version));
    json_object_set_new(root, "operation", json_string(planner_op_name(plan->op)));
    if (plan->rollback_of >= 0)
        json_object_set_new(root, "rollback_of", json_string(planner_op_name(plan->rollback_of)));
    json_object_set_new(root, "max_per_node", json_integer(plan->max_per_node));
    json_t *tasks = json_array();
    for (size_t i = 0; i < plan->n_tasks; i++)
        json_array_append_new(tasks, planner_task_to_json(plan, &plan->tasks[i]));
    json_object_set_new(root, "tasks", tasks);
    return root;
}

static const char *opt_str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int planner_plan_from_json(const json_t *json, struct planner_plan **out, struct drv_err *err)
{
    *out = NULL;
    if (!json_is_object(json))
        return drv_err_set(err, DRV_EINVAL, 0, "plan: not an object");
    json_int_t ver = json_integer_value(json_object_get(json, "format_version"));
    if (ver < 1 || ver > PLANNER_FORMAT_VERSION)
        return drv_err_set(err, DRV_EINVAL, 0, "plan: unsupported format_version %lld",
                           (long long)ver);
    int op = planner_op_parse(opt_str(json, "operation"));
    if (op < 0)
        return drv_err_set(err, DRV_EINVAL, 0, "plan: bad operation");
    const json_t *tasks = json_object_get(json, "tasks");
    if (!json_is_array(tasks))
        return drv_err_set(err, DRV_EINVAL, 0, "plan: no tasks array");

    struct planner_plan *p = planner__plan_new((enum planner_op)op);
    const char *rb = opt_str(json, "rollback_of");
    p->rollback_of = rb ? planner_op_parse(rb) : -1;
    json_int_t mpn = json_integer_value(json_object_get(json, "max_per_node"));
    p->max_per_node = mpn > 0 ? (int)mpn : 1;
    int rc = 0;
    size_t n = json_array_size(tasks);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const json_t *o = json_array_get(tasks, i);
        const char *id = opt_str(o, "id");
        int act = planner_action_parse(opt_str(o, "action"));
        if (id == NULL || act < 0) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "plan: task %zu: missing id or bad action", i);
            break;
        }
        const char *node = opt_str(o, "node"), *type = opt_str(o, "type");
        if (act != PLANNER_ACT_ANCHOR && (node == NULL || type == NULL)) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "plan: task \"%s\": missing node or type", id);
            break;
        }
        json_t *fields = json_object_get(o, "fields");
        if (fields && !json_is_object(fields)) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "plan: task \"%s\": fields not an object", id);
            break;
        }
        struct planner_strategy st = {PLANNER_STRAT_PARALLEL, 0, 0};
        const json_t *so = json_object_get(o, "strategy");
        if (so) {
            const char *sty = opt_str(so, "type");
            if (sty && strcmp(sty, "one-by-one") == 0) {
                st.type = PLANNER_STRAT_ONE_BY_ONE;
            } else if (sty == NULL || strcmp(sty, "parallel") != 0) {
                rc = drv_err_set(err, DRV_EINVAL, 0, "plan: task \"%s\": bad strategy", id);
                break;
            }
            json_int_t amount = json_integer_value(json_object_get(so, "amount"));
            st.amount = amount > 0 ? (unsigned)amount : 0;
        }
        uint32_t x = planner__add_task(p, id, planner__arena_strdup(p->arena, node),
                                       planner__arena_strdup(p->arena, opt_str(o, "service")),
                                       (enum planner_action)act,
                                       planner__arena_strdup(p->arena, type), fields, st);
        p->tasks[x].inverse_of = planner__arena_strdup(p->arena, opt_str(o, "inverse_of"));
        p->tasks[x].restore = planner__arena_strdup(p->arena, opt_str(o, "restore"));
    }
    struct planner__map ids;
    planner__map_init(&ids, p->n_tasks);
    for (size_t i = 0; i < p->n_tasks && rc == 0; i++)
        if (planner__map_put(&ids, p->tasks[i].id, (uint32_t)i) >= 0)
            rc = drv_err_set(err, DRV_EINVAL, 0, "plan: duplicate task id \"%s\"", p->tasks[i].id);
    uint32_t *stamp = xcalloc(p->n_tasks + 1, sizeof(*stamp)); /* dep seen for task i + 1 */
    for (size_t i = 0; i < p->n_tasks && rc == 0; i++) {
        const json_t *deps = json_object_get(json_array_get(tasks, i), "deps");
        if (deps && !json_is_array(deps)) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "plan: task \"%s\": deps not an array",
                             p->tasks[i].id);
            break;
        }
        for (size_t k = 0; k < json_array_size(deps); k++) {
            const char *d = json_string_value(json_array_get(deps, k));
            long di = d ? planner__map_get(&ids, d) : -1;
            if (di < 0) {
                rc = drv_err_set(err, DRV_EINVAL, 0, "plan: task \"%s\": unknown dependency \"%s\"",
                                 p->tasks[i].id, d ? d : "");
                break;
            }
            if (stamp[di] != i + 1) {
                stamp[di] = (uint32_t)i + 1;
                planner__add_dep_new(p, (uint32_t)i, (uint32_t)di);
            }
        }
    }
    free(stamp);
    planner__map_free(&ids);
    if (rc == 0)
        rc = planner_toposort(p, NULL, err);
    if (rc == 0)
        *out = p;
    else
        planner_plan_free(p);
    return rc;
}

/* ---- DOT ---- */

static const char *const state_colour[PLANNER_TS_COUNT] = {
    "white", "lightblue", "yellow", "palegreen", "tomato", "orange",
};

char *planner_plan_to_dot(const struct planner_plan *plan, const enum planner_task_state *states)
{
    struct strbuf b = STRBUF_INIT;
    strbuf_addf(&b, "digraph plan {\n  rankdir=LR;\n  node [shape=box, style=filled, "
                    "fillcolor=white, fontname=\"Helvetica\"];\n");
    strbuf_addf(&b, "  label=\"%s\";\n", planner_op_name(plan->op));
    for (size_t i = 0; i < plan->n_tasks; i++) {
        const struct planner_task *t = &plan->tasks[i];
        strbuf_addstr(&b, "  \"");
        sb_dotstr(&b, t->id);
        if (t->action == PLANNER_ACT_ANCHOR) {
            strbuf_addstr(&b, "\" [shape=diamond, label=\"");
            sb_dotstr(&b, t->id);
            strbuf_addstr(&b, "\"");
        } else {
            strbuf_addf(&b, "\" [label=\"%s", planner_action_name(t->action));
            if (t->service) {
                strbuf_addstr(&b, "\\n");
                sb_dotstr(&b, t->service);
            }
            strbuf_addstr(&b, "\\n");
            sb_dotstr(&b, t->node);
            strbuf_addstr(&b, "\"");
        }
        if (states && (unsigned)states[i] < PLANNER_TS_COUNT)
            strbuf_addf(&b, ", fillcolor=%s, tooltip=\"%s\"", state_colour[states[i]],
                        planner_state_name(states[i]));
        strbuf_addstr(&b, "];\n");
    }
    for (size_t i = 0; i < plan->n_tasks; i++) {
        const struct planner_task *t = &plan->tasks[i];
        for (uint32_t d = 0; d < t->n_deps; d++) {
            strbuf_addstr(&b, "  \"");
            sb_dotstr(&b, plan->tasks[t->deps[d]].id);
            strbuf_addstr(&b, "\" -> \"");
            sb_dotstr(&b, t->id);
            strbuf_addstr(&b, "\";\n");
        }
    }
    strbuf_addstr(&b, "}\n");
    return strbuf_detach(&b, NULL);
}

/* ---- JSON text, written directly ---- */

/*
 * The same bytes as json_dumps(planner_plan_to_json(plan), JSON_COMPACT)
 * without building a tree: a 10,000-node plan is 40 MB of text and a jansson
 * tree of it ten times that. Fields objects are shared between tasks; each
 * distinct one is dumped once (a small cache by pointer).
 */
static char *json_text(const struct planner_plan *plan, size_t *len, int lines)
{
    struct strbuf b = STRBUF_INIT;
    enum { NCACHE = 64 };
    const json_t *ck[NCACHE] = {0};
    char *cv[NCACHE] = {0};
    size_t cn = 0, cnext = 0;
    strbuf_addf(&b, "{\"format_version\":%d,\"operation\":\"%s\",", plan->format_version,
                planner_op_name(plan->op));
    if (plan->rollback_of >= 0)
        strbuf_addf(&b, "\"rollback_of\":\"%s\",", planner_op_name(plan->rollback_of));
    strbuf_addf(&b, "\"max_per_node\":%d,\"tasks\":[", plan->max_per_node);
    for (size_t i = 0; i < plan->n_tasks; i++) {
        const struct planner_task *t = &plan->tasks[i];
        if (i)
            strbuf_addstr(&b, ",");
        strbuf_addstr(&b, lines ? "\n{\"id\":" : "{\"id\":");
        sb_jstr(&b, t->id);
        if (t->node) {
            strbuf_addstr(&b, ",\"node\":");
            sb_jstr(&b, t->node);
        }
        if (t->service) {
            strbuf_addstr(&b, ",\"service\":");
            sb_jstr(&b, t->service);
        }
        strbuf_addstr(&b, ",\"action\":\"");
        strbuf_addstr(&b, planner_action_name(t->action));
        strbuf_addstr(&b, "\"");
        if (t->type) {
            strbuf_addstr(&b, ",\"type\":");
            sb_jstr(&b, t->type);
        }
        if (t->fields) {
            const char *f = NULL;
            for (size_t k = 0; k < cn && !f; k++)
                if (ck[k] == t->fields)
                    f = cv[k];
            if (f == NULL) {
                char *d = json_dumps(t->fields, JSON_COMPACT);
                if (cn < NCACHE) {
                    cn++;
                } else {
                    free(cv[cnext]);
                }
                ck[cnext] = t->fields;
                cv[cnext] = d;
                f = d;
                cnext = (cnext + 1) % NCACHE;
            }
            strbuf_addstr(&b, ",\"fields\":");
            strbuf_addstr(&b, f);
        }
        if (t->action != PLANNER_ACT_ANCHOR) {
            if (t->strategy.type == PLANNER_STRAT_ONE_BY_ONE)
                strbuf_addstr(&b, ",\"strategy\":{\"type\":\"one-by-one\"}");
            else if (t->strategy.amount > 0)
                strbuf_addf(&b, ",\"strategy\":{\"type\":\"parallel\",\"amount\":%u}",
                            t->strategy.amount);
            else
                strbuf_addstr(&b, ",\"strategy\":{\"type\":\"parallel\"}");
        }
        strbuf_addstr(&b, ",\"deps\":[");
        for (uint32_t d = 0; d < t->n_deps; d++) {
            if (d)
                strbuf_addstr(&b, ",");
            sb_jstr(&b, plan->tasks[t->deps[d]].id);
        }
        strbuf_addstr(&b, "]");
        if (t->inverse_of) {
            strbuf_addstr(&b, ",\"inverse_of\":");
            sb_jstr(&b, t->inverse_of);
        }
        if (t->restore) {
            strbuf_addstr(&b, ",\"restore\":");
            sb_jstr(&b, t->restore);
        }
        strbuf_addstr(&b, "}");
    }
    strbuf_addstr(&b, lines ? "\n]}\n" : "]}");
    for (size_t k = 0; k < cn; k++)
        free(cv[k]);
    return strbuf_detach(&b, len);
}

char *planner_plan_to_json_text(const struct planner_plan *plan, size_t *len)
{
    return json_text(plan, len, 0);
}

char *planner_plan_to_json_lines(const struct planner_plan *plan, size_t *len)
{
    return json_text(plan, len, 1);
}

/* ---- stages ---- */

json_t *planner_stages_to_json(const struct planner_plan *plan, const struct planner_stages *st)
{
    json_t *arr = json_array();
    for (size_t s = 0; s < st->n_stages; s++) {
        json_t *stage = json_array();
        for (size_t k = st->start[s]; k < st->start[s + 1]; k++)
            json_array_append_new(stage, json_string(plan->tasks[st->tasks[k]].id));
        json_array_append_new(arr, stage);
    }
    return arr;
}

char *planner_stages_to_text(const struct planner_plan *plan, const struct planner_stages *st)
{
    struct strbuf b = STRBUF_INIT;
    strbuf_addf(&b, "%s: %zu tasks in %zu stages\n", planner_op_name(plan->op), plan->n_tasks,
                st->n_stages);
    for (size_t s = 0; s < st->n_stages; s++) {
        strbuf_addf(&b, "stage %zu (%zu tasks)\n", s + 1, st->start[s + 1] - st->start[s]);
        for (size_t k = st->start[s]; k < st->start[s + 1]; k++) {
            strbuf_addstr(&b, "  ");
            strbuf_addstr(&b, plan->tasks[st->tasks[k]].id);
            strbuf_addstr(&b, "\n");
        }
    }
    return strbuf_detach(&b, NULL);
}
