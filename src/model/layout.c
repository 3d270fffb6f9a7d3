/*
 * layout: a cluster layout (node layouts with counts) and its JSON codec.
 * See model.h for the format; docs/model.md for an example.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_util.h"
#include "model.h"
#include "xalloc.h"

struct model_layout *model_layout_new(void)
{
    return xcalloc(1, sizeof(struct model_layout));
}

static void node_free(struct model_node_layout *n)
{
    for (size_t i = 0; i < n->n_services; i++)
        free(n->services[i]);
    free(n->services);
    free(n->hardwaretype);
    free(n->imagetype);
    free(n->id);
}

void model_layout_free(struct model_layout *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n_nodes; i++)
        node_free(&l->nodes[i]);
    free(l->nodes);
    free(l);
}

unsigned model_layout_size(const struct model_layout *l)
{
    unsigned n = 0;
    for (size_t i = 0; i < l->n_nodes; i++)
        n += l->nodes[i].count;
    return n;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void model_layout_add(struct model_layout *l, const char *const *services, size_t n,
                      const char *hardwaretype, const char *imagetype, unsigned count,
                      const char *id)
{
    l->nodes = xrealloc(l->nodes, (l->n_nodes + 1) * sizeof(*l->nodes));
    struct model_node_layout *nl = &l->nodes[l->n_nodes++];
    memset(nl, 0, sizeof(*nl));
    nl->services = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        nl->services[i] = xstrdup(services[i]);
    qsort(nl->services, n, sizeof(char *), str_cmp);
    /* unique */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && strcmp(nl->services[k - 1], nl->services[i]) == 0)
            free(nl->services[i]);
        else
            nl->services[k++] = nl->services[i];
    }
    nl->n_services = k;
    nl->hardwaretype = xstrdup(hardwaretype);
    nl->imagetype = xstrdup(imagetype);
    nl->count = count;
    nl->id = id ? xstrdup(id) : NULL;
}

int model_layout_from_json(const json_t *j, struct model_layout **out, struct drv_err *err)
{
    struct model__pctx p = {.kind = "layout", .err = err};
    *out = NULL;
    json_t *nodes = model__member(j, "nodes");
    if (!json_is_object(j) || !json_is_array(nodes))
        return model__fail(&p, "nodes", "an array of node layouts");
    struct model_layout *l = model_layout_new();
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *e = json_array_get(nodes, i);
        char path[64], field[96];
        snprintf(path, sizeof(path), "nodes[%zu]", i);
        struct model_strlist svcs = {0};
        char *hw = NULL, *img = NULL, *id = NULL;
        int count = 1, rc;
        if (!json_is_object(e)) {
            rc = model__fail(&p, path, "an object");
            goto bad;
        }
        snprintf(field, sizeof(field), "%s.services", path);
        if ((rc = model__strlist(&p, model__member(e, "services"), field, &svcs)) < 0)
            goto bad;
        snprintf(field, sizeof(field), "%s.hardwaretype", path);
        if ((rc = model__str(&p, e, "hardwaretype", field, true, NULL, &hw)) < 0)
            goto bad;
        snprintf(field, sizeof(field), "%s.imagetype", path);
        if ((rc = model__str(&p, e, "imagetype", field, true, NULL, &img)) < 0)
            goto bad;
        snprintf(field, sizeof(field), "%s.id", path);
        if ((rc = model__str(&p, e, "id", field, false, NULL, &id)) < 0)
            goto bad;
        snprintf(field, sizeof(field), "%s.count", path);
        json_t *c = model__member(e, "count");
        if (c) {
            if (!json_is_integer(c) || json_integer_value(c) < 1 ||
                json_integer_value(c) > 10000000) {
                rc = model__fail(&p, field, "an integer from 1 to 10000000");
                goto bad;
            }
            count = (int)json_integer_value(c);
        }
        if (id && count != 1) {
            rc = model__fail(&p, field, "1 (or no count) with an \"id\"");
            goto bad;
        }
        model_layout_add(l, (const char *const *)svcs.v, svcs.n, hw, img, (unsigned)count, id);
        model__strlist_free(&svcs);
        free(hw);
        free(img);
        free(id);
        if (model_layout_size(l) > 10000000) {
            rc = model__fail(&p, "nodes", "at most 10000000 nodes in all");
            model_layout_free(l);
            return rc;
        }
        continue;
    bad:
        model__strlist_free(&svcs);
        free(hw);
        free(img);
        free(id);
        model_layout_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

json_t *model_layout_to_json(const struct model_layout *l, bool per_node)
{
    json_t *nodes = json_array();
    for (size_t i = 0; i < l->n_nodes; i++) {
        const struct model_node_layout *n = &l->nodes[i];
        unsigned reps = per_node ? n->count : 1;
        for (unsigned r = 0; r < reps; r++) {
            json_t *o = json_object();
            if (n->id)
                json_object_set_new(o, "id", json_string(n->id));
            json_t *s = json_array();
            for (size_t k = 0; k < n->n_services; k++)
                json_array_append_new(s, json_string(n->services[k]));
            json_object_set_new(o, "services", s);
            json_object_set_new(o, "hardwaretype", json_string(n->hardwaretype));
            json_object_set_new(o, "imagetype", json_string(n->imagetype));
            if (!per_node)
                json_object_set_new(o, "count", json_integer(n->count));
            json_array_append_new(nodes, o);
        }
    }
    return json_pack("{s:o}", "nodes", nodes);
}
