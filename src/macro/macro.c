/*
 * macro: expansion of %...% macros in JSON values (see macro.h for the forms).
 *
 * How a string is expanded: the text is copied up to a "%"; "%%" gives "%";
 * the body up to the next "%" is one macro, parsed by the grammar
 *
 *   expr  := "join" "(" list "," quoted ")" | list
 *   list  := "map" "(" basic "," quoted ")" | basic
 *   basic := name [ "[" digits "]" ]        name: [A-Za-z0-9_.-]+
 *
 * and evaluated at once against the cluster (struct cluster below: the nodes
 * in natural id order, built once per call). A value is a list of strings
 * (one string for a scalar), joined by join's separator or ",". Evaluation
 * yields one of:
 * resolved (text appended), unresolved (the macro is copied as written, or an
 * error under MACRO_STRICT), or an error (syntax, unknown name, missing node
 * data).
 *
 * Bounds: the output of one string is at most MACRO_MAX_OUTPUT bytes, a
 * quoted string at most 4 KiB, an index at most 9 digits.
 */
#include "macro.h"

#include <ctype.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "strmap.h"
#include "xalloc.h"

/* ---- the cluster: nodes in natural order ---- */

struct cnode {
    const char *id;
    const json_t *j;
};

/* The nodes having one service, as indices into the sorted nodes (ascending). */
struct svc_nodes {
    size_t *idx;
    size_t n, cap;
};

/* A cluster sorted once (macro_cluster_new), for callers that expand many values. */
struct macro_cluster {
    struct cnode *v;
    size_t n;
    struct strmap *by_id;      /* id -> 1 + index */
    struct strmap *by_service; /* service -> struct svc_nodes */
};

struct cluster {
    struct cnode *v;
    size_t n;
    const struct macro_ctx *ctx;
    const struct cnode *self; /* NULL when no self or not found */
    unsigned flags;
    const struct macro_cluster *mc; /* v is mc's: not freed, services indexed */
};

/* Natural order: runs of digits compare as numbers ("node-2" < "node-10"). */
static int natcmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la]))
                la++;
            while (isdigit((unsigned char)b[lb]))
                lb++;
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c)
                return c;
            a += la;
            b += lb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    if (*a || *b)
        return *a ? 1 : -1;
    return 0;
}

static int cnode_cmp(const void *x, const void *y)
{
    const struct cnode *a = x, *b = y;
    int c = natcmp(a->id, b->id);
    return c ? c : strcmp(a->id, b->id);
}

static void cluster_init(struct cluster *c, const struct macro_ctx *ctx, unsigned flags)
{
    memset(c, 0, sizeof(*c));
    c->ctx = ctx;
    c->flags = flags;
    if (ctx && ctx->cluster) {
        /* Sorted and indexed once by the caller: O(1) here. */
        c->mc = ctx->cluster;
        c->v = c->mc->v;
        c->n = c->mc->n;
        uintptr_t k = ctx->self ? (uintptr_t)strmap_get(c->mc->by_id, ctx->self) : 0;
        c->self = k ? &c->v[k - 1] : NULL;
        return;
    }
    const json_t *nodes = ctx ? ctx->nodes : NULL;
    if (json_is_object(nodes) && json_object_size(nodes) > 0) {
        c->v = xcalloc(json_object_size(nodes), sizeof(*c->v));
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)nodes, k, v)
        {
            if (!json_is_object(v))
                continue;
            c->v[c->n].id = k;
            c->v[c->n].j = v;
            c->n++;
        }
        qsort(c->v, c->n, sizeof(*c->v), cnode_cmp);
    }
    if (ctx && ctx->self)
        for (size_t i = 0; i < c->n; i++)
            if (strcmp(c->v[i].id, ctx->self) == 0)
                c->self = &c->v[i];
}

static void cluster_release(struct cluster *c)
{
    if (!c->mc)
        free(c->v);
}

static bool has_service(const struct cnode *n, const char *svc);

/*
 * Is node i of c among the nodes with svc? With a precompiled cluster the
 * service's own list is used, so callers iterate that list instead
 * (service_nodes); this is for the self checks.
 */
static const struct svc_nodes *service_nodes(const struct cluster *c, const char *svc)
{
    return c->mc ? strmap_get(c->mc->by_service, svc) : NULL;
}

struct macro_cluster *macro_cluster_new(const json_t *nodes)
{
    struct macro_ctx ctx = {.nodes = nodes};
    struct cluster c;
    cluster_init(&c, &ctx, 0);
    struct macro_cluster *mc = xcalloc(1, sizeof(*mc));
    mc->v = c.v;
    mc->n = c.n;
    mc->by_id = strmap_new();
    mc->by_service = strmap_new();
    for (size_t i = 0; i < mc->n; i++) {
        strmap_put(mc->by_id, mc->v[i].id, (void *)(uintptr_t)(i + 1));
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(mc->v[i].j, "services"), k, e)
        {
            if (!json_is_string(e))
                continue;
            struct svc_nodes *sn = strmap_get(mc->by_service, json_string_value(e));
            if (!sn) {
                sn = xcalloc(1, sizeof(*sn));
                strmap_put(mc->by_service, json_string_value(e), sn);
            }
            if (sn->n && sn->idx[sn->n - 1] == i)
                continue; /* a service named twice on a node */
            XGROW(sn->idx, sn->cap, sn->n + 1);
            sn->idx[sn->n++] = i;
        }
    }
    return mc;
}

void macro_cluster_free(struct macro_cluster *mc)
{
    if (!mc)
        return;
    size_t pos = 0;
    void *v;
    while (strmap_next(mc->by_service, &pos, NULL, &v)) {
        struct svc_nodes *sn = v;
        free(sn->idx);
        free(sn);
    }
    strmap_free(mc->by_service);
    strmap_free(mc->by_id);
    free(mc->v);
    free(mc);
}

static bool has_service(const struct cnode *n, const char *svc)
{
    json_t *s = json_object_get(n->j, "services");
    size_t i;
    json_t *e;
    json_array_foreach(s, i, e) if (json_is_string(e) &&
                                    strcmp(json_string_value(e), svc) == 0) return true;
    return false;
}

/* ---- strings and lists ---- */

/* A strbuf that takes nothing more once it would pass MACRO_MAX_OUTPUT, and says so. */
struct mbuf {
    struct strbuf sb;
    bool over; /* passed MACRO_MAX_OUTPUT */
};
/* clang-format off */
#define MBUF_INIT {.sb = STRBUF_INIT, .over = false}
/* clang-format on */

static void mb_add(struct mbuf *b, const char *s, size_t len)
{
    if (b->over || b->sb.len + len > MACRO_MAX_OUTPUT) {
        b->over = true;
        return;
    }
    strbuf_add(&b->sb, s, len);
}

static void mb_str(struct mbuf *b, const char *s)
{
    mb_add(b, s, strlen(s));
}

struct list {
    char **v;
    size_t n, cap;
};

static void list_add(struct list *l, const char *s)
{
    XGROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = xstrdup(s);
}

static void list_free(struct list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- parsing and evaluation of one macro body ---- */

enum res { RES_OK = 0, RES_UNRESOLVED = 1 };

struct parser {
    const char *s; /* the body, between the % signs */
    size_t pos, len;
    const char *whole; /* "%...%" for messages */
    struct cluster *c;
    struct drv_err *err;
    int rc; /* first error */
};

static int perr(struct parser *p, int code, const char *fmt, const char *detail)
{
    if (p->rc == 0) {
        char what[300];
        snprintf(what, sizeof(what), fmt, detail);
        p->rc = drv_err_set(p->err, code, 0, "macro \"%s\": %s", p->whole, what);
    }
    return p->rc;
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
        p->pos++;
}

static bool eat(struct parser *p, char ch)
{
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ch) {
        p->pos++;
        return true;
    }
    return false;
}

static bool name_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '-';
}

/* A name into out (size n); false when there is none. */
static bool parse_name(struct parser *p, char *out, size_t n)
{
    skip_ws(p);
    size_t st = p->pos;
    while (p->pos < p->len && name_char(p->s[p->pos]))
        p->pos++;
    size_t l = p->pos - st;
    if (l == 0 || l >= n)
        return false;
    memcpy(out, p->s + st, l);
    out[l] = '\0';
    return true;
}

static bool parse_quoted(struct parser *p, struct mbuf *out)
{
    skip_ws(p);
    if (p->pos >= p->len || (p->s[p->pos] != '\'' && p->s[p->pos] != '"'))
        return false;
    char q = p->s[p->pos++];
    while (p->pos < p->len && p->s[p->pos] != q) {
        char ch = p->s[p->pos++];
        if (ch == '\\' && p->pos < p->len) {
            ch = p->s[p->pos++];
            ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
        }
        if (out->sb.len >= 4096)
            return false;
        mb_add(out, &ch, 1);
    }
    if (p->pos >= p->len)
        return false;
    p->pos++;
    return true;
}

/* The address of a node: ipaddresses.type, or the default type. NULL when missing. */
static const char *node_ip(const struct cnode *n, const char *type)
{
    json_t *ips = json_object_get(n->j, "ipaddresses");
    if (type[0])
        return json_string_value(json_object_get(ips, type));
    const char *v = json_string_value(json_object_get(ips, "bind_v4"));
    return v ? v : json_string_value(json_object_get(ips, "access_v4"));
}

/* Append the node's hostname or address (ip = true) to l; an error when missing. */
static int node_value(struct parser *p, const struct cnode *n, bool ip, const char *type,
                      struct list *l)
{
    if (p->c->flags & MACRO_CHECK) {
        list_add(l, "");
        return 0;
    }
    const char *v = ip ? node_ip(n, type) : json_string_value(json_object_get(n->j, "hostname"));
    if (!v || !*v) {
        char what[300];
        snprintf(what, sizeof(what), "node \"%s\" has no %s%s", n->id,
                 ip ? "ipaddresses." : "hostname", ip ? (type[0] ? type : "bind_v4") : "");
        /* A confirmed node will not learn it any more: its provider gave none. */
        if (json_is_true(json_object_get(n->j, "confirmed")))
            return perr(p, DRV_EINVAL, "%s (its provider's confirm returned none)", what);
        return perr(p, DRV_EAGAIN, "%s yet", what);
    }
    list_add(l, v);
    return 0;
}

/* The value of a basic macro into l; RES_OK, RES_UNRESOLVED, or < 0. */
static int eval_basic(struct parser *p, struct list *l)
{
    char name[512];
    if (!parse_name(p, name, sizeof(name)))
        return perr(p, DRV_EINVAL, "%s", "expected a macro name");
    long index = -1;
    if (eat(p, '[')) {
        skip_ws(p);
        size_t st = p->pos;
        while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))
            p->pos++;
        if (p->pos == st || p->pos - st > 9 || !eat(p, ']'))
            return perr(p, DRV_EINVAL, "%s", "expected [<index>]");
        index = strtol(p->s + st, NULL, 10);
    }
    struct cluster *c = p->c;
    bool ip = false, self = false, svcform = false, num = false, inst = false;
    char type[64] = "";
    const char *svc = NULL;
    const char *rest;
    if (strcmp(name, "cluster.owner") == 0) {
        if (index >= 0)
            return perr(p, DRV_EINVAL, "%s", "cluster.owner takes no index");
        if (!c->ctx || !c->ctx->owner)
            return RES_UNRESOLVED;
        list_add(l, c->ctx->owner);
        return RES_OK;
    } else if (strncmp(name, "host.", 5) == 0) {
        rest = name + 5;
    } else if (strncmp(name, "ip.", 3) == 0) {
        ip = true;
        rest = name + 3;
        const char *dot = strchr(rest, '.');
        /* ip.<type>.self, ip.<type>.service.S, ip.<type>.self.service.S */
        if (strncmp(rest, "self", 4) != 0 && strncmp(rest, "service.", 8) != 0 && dot &&
            (size_t)(dot - rest) < sizeof(type)) {
            snprintf(type, sizeof(type), "%.*s", (int)(dot - rest), rest);
            rest = dot + 1;
        }
    } else if (strncmp(name, "num.", 4) == 0) {
        num = true;
        rest = name + 4;
    } else if (strncmp(name, "instance.self.", 14) == 0) {
        inst = true;
        self = true;
        rest = name + 14;
    } else {
        return perr(p, DRV_EINVAL, "%s", "unknown macro");
    }
    if (strcmp(rest, "self") == 0 && !num && !inst) {
        self = true;
    } else if (strncmp(rest, "self.service.", 13) == 0 && !num && !inst) {
        self = true;
        svcform = true;
        svc = rest + 13;
    } else if (strncmp(rest, "service.", 8) == 0) {
        svcform = true;
        svc = rest + 8;
    } else {
        return perr(p, DRV_EINVAL, "%s", "unknown macro");
    }
    if (svcform && !*svc)
        return perr(p, DRV_EINVAL, "%s", "no service name");
    if (index >= 0 && (self || num))
        return perr(p, DRV_EINVAL, "%s", "this macro takes no index");
    for (const char *t = type; *t; t++)
        if (!islower((unsigned char)*t) && !isdigit((unsigned char)*t) && *t != '_')
            return perr(p, DRV_EINVAL, "%s", "bad address type");

    if (self) {
        if (!c->ctx || !c->ctx->self)
            return RES_UNRESOLVED;
        if (!c->self)
            return perr(p, DRV_EINVAL, "node \"%s\" is not in the cluster", c->ctx->self);
        if (svcform && !has_service(c->self, svc))
            return RES_UNRESOLVED;
        if (inst) {
            size_t rank = 0;
            const struct svc_nodes *sn = service_nodes(c, svc);
            if (sn) {
                size_t me = (size_t)(c->self - c->v);
                while (rank < sn->n && sn->idx[rank] <= me)
                    rank++;
            } else {
                for (size_t i = 0; i < c->n; i++) {
                    if (has_service(&c->v[i], svc))
                        rank++;
                    if (&c->v[i] == c->self)
                        break;
                }
            }
            char buf[32];
            snprintf(buf, sizeof(buf), "%zu", rank);
            list_add(l, buf);
            return RES_OK;
        }
        return node_value(p, c->self, ip, type, l) ? p->rc : RES_OK;
    }
    size_t count = 0;
    const struct svc_nodes *sn = service_nodes(c, svc);
    if (sn)
        count = sn->n;
    else if (!c->mc)
        for (size_t i = 0; i < c->n; i++)
            count += has_service(&c->v[i], svc);
    if (num) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%zu", count);
        list_add(l, buf);
        return RES_OK;
    }
    if (count == 0 || (index >= 0 && (size_t)index >= count))
        return RES_UNRESOLVED;
    if (sn) {
        for (size_t k = 0; k < sn->n; k++)
            if (index < 0 || (size_t)index == k)
                if (node_value(p, &c->v[sn->idx[k]], ip, type, l) != 0)
                    return p->rc;
        return RES_OK;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!has_service(&c->v[i], svc))
            continue;
        if (index < 0 || (size_t)index == k)
            if (node_value(p, &c->v[i], ip, type, l) != 0)
                return p->rc;
        k++;
    }
    return RES_OK;
}

/* list := map(basic, 'fmt') | basic */
static int eval_list(struct parser *p, struct list *l)
{
    size_t save = p->pos;
    char word[8];
    if (parse_name(p, word, sizeof(word)) && strcmp(word, "map") == 0 && eat(p, '(')) {
        struct list in = {0};
        int r = eval_basic(p, &in);
        struct mbuf fmt = MBUF_INIT;
        if (r >= 0 && (!eat(p, ',') || !parse_quoted(p, &fmt) || !eat(p, ')')))
            r = perr(p, DRV_EINVAL, "%s", "expected map(<macro>, '<format>')");
        if (r == RES_OK) {
            for (size_t i = 0; i < in.n; i++) {
                struct mbuf one = MBUF_INIT;
                for (const char *f = fmt.sb.buf; *f; f++) {
                    if (f[0] == '$' && f[1] == '$') {
                        mb_add(&one, "$", 1);
                        f++;
                    } else if (f[0] == '$') {
                        mb_str(&one, in.v[i]);
                    } else {
                        mb_add(&one, f, 1);
                    }
                }
                if (one.over)
                    r = perr(p, DRV_EINVAL, "%s", "expansion too large");
                list_add(l, one.sb.buf);
                strbuf_release(&one.sb);
            }
        }
        strbuf_release(&fmt.sb);
        list_free(&in);
        return r;
    }
    p->pos = save;
    return eval_basic(p, l);
}

/* expr := join(list, 'sep') | list; the text appended to out. */
static int eval_expr(struct parser *p, struct mbuf *out)
{
    size_t save = p->pos;
    char word[8];
    struct list l = {0};
    const char *sep = ",";
    struct mbuf sepb = MBUF_INIT;
    int r;
    if (parse_name(p, word, sizeof(word)) && strcmp(word, "join") == 0 && eat(p, '(')) {
        r = eval_list(p, &l);
        if (r >= 0 && (!eat(p, ',') || !parse_quoted(p, &sepb) || !eat(p, ')')))
            r = perr(p, DRV_EINVAL, "%s", "expected join(<list>, '<separator>')");
        sep = sepb.sb.buf;
    } else {
        p->pos = save;
        r = eval_list(p, &l);
    }
    skip_ws(p);
    if (r >= 0 && p->pos != p->len)
        r = perr(p, DRV_EINVAL, "%s", "unexpected text after the macro");
    if (r == RES_OK)
        for (size_t i = 0; i < l.n; i++) {
            if (i)
                mb_str(out, sep);
            mb_str(out, l.v[i]);
        }
    list_free(&l);
    strbuf_release(&sepb.sb);
    return r;
}

static int expand_text(struct cluster *c, const char *in, struct mbuf *out, struct drv_err *err)
{
    const char *s = in;
    while (*s) {
        const char *pc = strchr(s, '%');
        if (!pc) {
            mb_str(out, s);
            break;
        }
        mb_add(out, s, (size_t)(pc - s));
        if (pc[1] == '%') {
            mb_add(out, "%", 1);
            s = pc + 2;
            continue;
        }
        const char *end = strchr(pc + 1, '%');
        if (!end) {
            mb_str(out, pc); /* a lone "%": copied as is */
            break;
        }
        size_t blen = (size_t)(end - pc - 1);
        char whole[200];
        snprintf(whole, sizeof(whole), "%%%.*s%%%s", (int)(blen > 150 ? 150 : blen), pc + 1,
                 blen > 150 ? "..." : "");
        struct parser p = {.s = pc + 1, .len = blen, .whole = whole, .c = c, .err = err};
        struct mbuf val = MBUF_INIT;
        int r = blen ? eval_expr(&p, &val) : perr(&p, DRV_EINVAL, "%s", "empty macro");
        if (r == RES_UNRESOLVED && (c->flags & MACRO_STRICT))
            r = perr(&p, DRV_ENOENT, "%s",
                     c->ctx && c->ctx->self ? "nothing on the cluster answers it"
                                            : "nothing on the cluster answers it (no node given "
                                              "for self macros)");
        if (r < 0) {
            strbuf_release(&val.sb);
            return r;
        }
        if (r == RES_UNRESOLVED)
            mb_add(out, pc, blen + 2);
        else
            mb_add(out, val.sb.buf, val.sb.len);
        strbuf_release(&val.sb);
        s = end + 1;
    }
    if (out->over)
        return drv_err_set(err, DRV_EINVAL, 0, "expansion larger than %u bytes", MACRO_MAX_OUTPUT);
    return 0;
}

static int walk(struct cluster *c, const json_t *in, struct mbuf *path, json_t **out,
                struct drv_err *err)
{
    if (json_is_string(in)) {
        const char *s = json_string_value(in);
        if (!strchr(s, '%')) {
            *out = json_incref((json_t *)in);
            return 0;
        }
        struct mbuf o = MBUF_INIT;
        int rc = expand_text(c, s, &o, err);
        if (rc != 0) {
            drv_err_prefix(err, "%s", path->sb.buf);
            strbuf_release(&o.sb);
            return rc;
        }
        *out = json_stringn(o.sb.buf, o.sb.len);
        strbuf_release(&o.sb);
        if (!*out)
            return drv_err_set(err, DRV_EINVAL, 0, "%s: expansion is not UTF-8", path->sb.buf);
        return 0;
    }
    size_t mark = path->sb.len;
    if (json_is_object(in)) {
        json_t *o = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)in, k, v)
        {
            json_t *x = NULL;
            if (path->sb.len)
                mb_add(path, ".", 1);
            mb_str(path, k);
            int rc = walk(c, v, path, &x, err);
            strbuf_setlen(&path->sb, mark);
            if (rc != 0) {
                json_decref(o);
                return rc;
            }
            json_object_set_new(o, k, x);
        }
        *out = o;
        return 0;
    }
    if (json_is_array(in)) {
        json_t *a = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(in, i, v)
        {
            json_t *x = NULL;
            char idx[32];
            snprintf(idx, sizeof(idx), "[%zu]", i);
            mb_str(path, idx);
            int rc = walk(c, v, path, &x, err);
            strbuf_setlen(&path->sb, mark);
            if (rc != 0) {
                json_decref(a);
                return rc;
            }
            json_array_append_new(a, x);
        }
        *out = a;
        return 0;
    }
    *out = json_incref((json_t *)in);
    return 0;
}

/* Does any string value of j hold a '%'? Without one there is nothing to expand. */
static bool any_percent(const json_t *j)
{
    if (json_is_string(j))
        return strchr(json_string_value(j), '%') != NULL;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) if (any_percent(v)) return true;
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) if (any_percent(v)) return true;
    }
    return false;
}

int macro_expand(const json_t *in, const struct macro_ctx *ctx, unsigned flags, const char *path,
                 json_t **out, struct drv_err *err)
{
    if (out)
        *out = NULL;
    if (!in)
        return drv_err_set(err, DRV_EINVAL, 0, "no value to expand");
    if (!any_percent(in)) {
        if (out)
            *out = json_deep_copy(in);
        return 0;
    }
    struct cluster c;
    cluster_init(&c, ctx, flags);
    struct mbuf pb = MBUF_INIT;
    mb_str(&pb, path ? path : "value");
    json_t *res = NULL;
    int rc = walk(&c, in, &pb, &res, err);
    strbuf_release(&pb.sb);
    cluster_release(&c);
    if (rc == 0 && (flags & MACRO_CHECK)) {
        json_decref(res);
        res = json_deep_copy(in);
    }
    if (rc == 0 && out)
        *out = res;
    else
        json_decref(res);
    return rc;
}

int macro_expand_string(const char *in, const struct macro_ctx *ctx, unsigned flags, char **out,
                        struct drv_err *err)
{
    if (out)
        *out = NULL;
    if (!in)
        return drv_err_set(err, DRV_EINVAL, 0, "no string to expand");
    struct cluster c;
    cluster_init(&c, ctx, flags);
    struct mbuf o = MBUF_INIT;
    int rc = expand_text(&c, in, &o, err);
    cluster_release(&c);
    if (rc == 0 && out && !(flags & MACRO_CHECK)) {
        *out = strbuf_detach(&o.sb, NULL);
        return 0;
    }
    if (rc == 0 && out)
        *out = xstrdup(in);
    strbuf_release(&o.sb);
    return rc;
}
