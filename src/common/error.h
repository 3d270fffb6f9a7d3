/*
 * error: how Drover functions report failure.
 *
 * Functions return 0 on success or a negative DRV_E* code. A caller that needs
 * detail passes a struct drv_err; the callee fills it with the code, the
 * underlying library's own code (ZooKeeper rc, SQLSTATE as an int of its class,
 * libssh2 or OpenSSL error) and a lowercase message without a full stop, in the
 * git style: `unknown key "foo"`. Passing NULL for the struct is allowed.
 */
#ifndef DROVER_ERROR_H
#define DROVER_ERROR_H

enum drv_errcode {
    DRV_OK = 0,
    DRV_EINVAL = -1,    /* bad input: a parse error, a value out of range */
    DRV_ENOENT = -2,    /* no such entity, file or znode */
    DRV_EEXIST = -3,    /* already exists */
    DRV_EIO = -4,       /* an operating system call failed */
    DRV_EZK = -5,       /* ZooKeeper said no; lib_code holds the ZOO_* rc */
    DRV_EPG = -6,       /* PostgreSQL said no */
    DRV_ETIMEDOUT = -7, /* a deadline passed */
    DRV_ECONFLICT = -8, /* a version check or a lock was lost: stop acting */
    DRV_EUNSAT = -9,    /* constraints cannot be met (solver, planner) */
    DRV_ECYCLE = -10,   /* a dependency loop */
    DRV_EAGAIN = -11,   /* try again later: not connected, busy */
    DRV_ESSH = -12,     /* ssh session or command failed */
    DRV_ETLS = -13,     /* OpenSSL failed */
    DRV_EPERM = -14,    /* not allowed */
    /* -15 is reserved (another module's code) */
    DRV_ETOOBIG = -16, /* a request or value over a size limit */
};

struct drv_err {
    int code;      /* one of enum drv_errcode */
    int lib_code;  /* the library's own code, 0 when none */
    char msg[512]; /* lowercase, no full stop */
};

/* Fill e (when not NULL) and return code, so that `return drv_err_set(...)` reads well. */
int drv_err_set(struct drv_err *e, int code, int lib_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prefix e->msg with "context: " (for example a file and line). */
void drv_err_prefix(struct drv_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void drv_err_clear(struct drv_err *e);

/* Short name of a code: "invalid", "not-found", ... (stable, used in API error codes). */
const char *drv_strerror(int code);

#endif
