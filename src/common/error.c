/* error: see error.h. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int drv_err_set(struct drv_err *e, int code, int lib_code, const char *fmt, ...)
{
    if (e) {
        e->code = code;
        e->lib_code = lib_code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

void drv_err_prefix(struct drv_err *e, const char *fmt, ...)
{
    if (!e)
        return;
    char prefix[256], old[sizeof(e->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof(old));
    snprintf(e->msg, sizeof(e->msg), "%s: %s", prefix, old);
}

void drv_err_clear(struct drv_err *e)
{
    if (e)
        memset(e, 0, sizeof(*e));
}

const char *drv_strerror(int code)
{
    switch (code) {
    case DRV_OK:
        return "ok";
    case DRV_EINVAL:
        return "invalid";
    case DRV_ENOENT:
        return "not-found";
    case DRV_EEXIST:
        return "exists";
    case DRV_EIO:
        return "io";
    case DRV_EZK:
        return "zookeeper";
    case DRV_EPG:
        return "database";
    case DRV_ETIMEDOUT:
        return "timeout";
    case DRV_ECONFLICT:
        return "conflict";
    case DRV_EUNSAT:
        return "unsatisfiable";
    case DRV_ECYCLE:
        return "cycle";
    case DRV_EAGAIN:
        return "unavailable";
    case DRV_ESSH:
        return "ssh";
    case DRV_ETLS:
        return "tls";
    case DRV_EPERM:
        return "forbidden";
    case DRV_ETOOBIG:
        return "too-large";
    }
    return "unknown";
}
