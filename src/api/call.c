/*
 * call: one API call's own helpers, shared by the request flow (api.c) and the
 * handlers: its error (call_fail, the DRV code's status), its query
 * parameters, its caller's owner filter, its reply's text, and its release.
 *
 * A struct call is made by api.c when a request's head arrives and freed by
 * api__reply; in between it belongs to exactly one thread at a time (loop,
 * then a pool thread, then the loop again: api.h), so none of these lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "log.h"
#include "xalloc.h"

#define MODULE "api"

int call_fail(struct call *c, int status, const char *code, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
    va_end(ap);
    c->status = status;
    snprintf(c->code, sizeof(c->code), "%s", code);
    snprintf(c->field, sizeof(c->field), "%s", field ? field : "");
    return DRV_EINVAL;
}

char *call_query(struct call *c, const char *key)
{
    const char *v = json_string_value(json_object_get(c->query, key));
    return v ? xstrdup(v) : NULL;
}

const char *call_owner(const struct call *c)
{
    return c->who.role == ROLE_USER ? c->who.user_id : NULL;
}

void api__call_free(struct call *c)
{
    if (c->work && c->work_free)
        c->work_free(c->work);
    free(c->path);
    free(c->raw);
    free(c->text);
    free(c->segbuf);
    json_decref(c->query);
    json_decref(c->body);
    json_decref(c->out);
    json_decref(c->loop_data);
    json_decref(c->err_detail);
    free(c);
}

void api__call_map_error(struct call *c, int rc, const struct drv_err *err)
{
    if (c->status >= 400)
        return;
    const char *msg = err && err->msg[0] ? err->msg : drv_strerror(rc);
    switch (rc) {
    case DRV_ENOENT:
        call_fail(c, 404, "not-found", NULL, "%s", msg);
        break;
    case DRV_EEXIST:
        call_fail(c, 409, "conflict", "name", "%s", msg);
        break;
    case DRV_ECONFLICT:
        call_fail(c, 409, "conflict", NULL, "%s", msg);
        break;
    case DRV_EAGAIN:
        call_fail(c, 503, "unavailable", NULL, "database unavailable, try again");
        break;
    case DRV_ETIMEDOUT:
        call_fail(c, 503, "unavailable", NULL, "the database took too long, try again");
        break;
    case DRV_EPERM:
        call_fail(c, 403, "forbidden", NULL, "%s", msg);
        break;
    case DRV_EINVAL:
        call_fail(c, 400, "invalid", NULL, "%s", msg);
        break;
    case DRV_EUNSAT:
        call_fail(c, 422, "unsatisfiable", NULL, "%s", msg);
        break;
    default: {
        char q[600];
        log_error(MODULE, "event=internal-error path=%s error=%s", c->path,
                  log_quote(msg, q, sizeof(q)));
        call_fail(c, 500, "internal", NULL, "internal error (see the server log)");
    }
    }
}

char *api__call_serialise(json_t *out, size_t *len)
{
    api_redact(out);
    char *s = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
    size_t n = strlen(s);
    s = xrealloc(s, n + 2);
    s[n] = '\n';
    s[n + 1] = '\0';
    *len = n + 1;
    return s;
}
