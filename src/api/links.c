/*
 * links: a cluster's links (its template's "links", docs/model.md), with their
 * macros expanded against the cluster's nodes, for GET /v1/clusters/{id} and
 * the dashboard's cluster view.
 *
 * A template names where its cluster is reached ({"label": "Web", "url":
 * "http://%ip.access_v4.service.haproxy%/"}); only the live cluster knows the
 * addresses. The nodes map of macro.h is built from the nodes' rows (their
 * hostname and ipaddresses key-values, their services), and each url is
 * expanded leniently: a macro about a service no node has stays as written, a
 * node without its address yet leaves the link out (it is not reachable yet),
 * a url that does not parse is left out too. The template is the version the
 * cluster was made from (its "links" only; an "extends" parent's are not
 * followed).
 *
 * Pool-thread code (one query); O(nodes) to build the map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "macro.h"
#include "store.h"

json_t *api__links_expand(const json_t *links, const json_t *nodes)
{
    json_t *out = json_array();
    if (!json_is_array(links) || json_array_size(links) == 0)
        return out;
    json_t *map = json_object();
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        const char *id = json_string_value(json_object_get(n, "id"));
        if (!id)
            continue;
        json_t *props = json_object_get(n, "properties");
        json_t *e = json_object();
        json_t *host = json_object_get(props, "hostname"),
               *ip = json_object_get(props, "ipaddresses");
        if (json_is_string(host))
            json_object_set(e, "hostname", host);
        if (json_is_object(ip))
            json_object_set(e, "ipaddresses", ip);
        json_t *svcs = json_object_get(n, "services");
        json_object_set_new(e, "services", json_is_array(svcs) ? json_incref(svcs) : json_array());
        json_object_set_new(e, "confirmed", json_true());
        json_object_set_new(map, id, e);
    }
    struct macro_ctx ctx = {.nodes = map};
    json_t *l;
    json_array_foreach(links, i, l)
    {
        const char *url = json_string_value(json_object_get(l, "url"));
        if (!url)
            continue;
        char *x = NULL;
        struct drv_err err;
        drv_err_clear(&err);
        if (macro_expand_string(url, &ctx, 0, &x, &err) != 0 || !x)
            continue;
        const char *label = json_string_value(json_object_get(l, "label"));
        json_array_append_new(out, json_pack("{s:s, s:s}", "label", label ? label : "", "url", x));
        free(x);
    }
    json_decref(map);
    return out;
}

int api__cluster_links(PGconn *conn, const char *tenant_id, json_t *cluster, struct drv_err *err)
{
    json_t *tv = json_object_get(cluster, "template_version");
    const char *name = json_string_value(json_object_get(cluster, "template"));
    if (!name || !json_is_integer(tv))
        return 0;
    char ver[24];
    snprintf(ver, sizeof(ver), "%" JSON_INTEGER_FORMAT, json_integer_value(tv));
    json_t *row = NULL;
    int rc = store_entity_get_version(conn, tenant_id, "clustertemplate", name, ver, &row, err);
    if (rc == DRV_ENOENT) { /* a deleted template: no links, the cluster is still shown */
        drv_err_clear(err);
        json_object_set_new(cluster, "links", json_array());
        return 0;
    }
    if (rc)
        return rc;
    json_t *links = json_object_get(json_object_get(row, "body"), "links");
    json_object_set_new(cluster, "links",
                        api__links_expand(links, json_object_get(cluster, "nodes")));
    json_decref(row);
    return 0;
}
