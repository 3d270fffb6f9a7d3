/*
 * log: the one logger.
 *
 * Every line is `ts=... level=... module=... <fields>` where the fields are
 * key=value pairs written by the caller's format string, for example
 *   log_info("coord", "event=connected servers=%s", hosts);
 * Values that may hold spaces or quotes go through log_quote() so that a line
 * stays machine-readable. Lines are written with one write(2) each, so threads
 * (ZooKeeper's own among them) never interleave inside a line. Secrets never go
 * to the log: callers log ids, not credentials.
 *
 * ZooKeeper's and libevent's logs are routed here by log_route_libraries().
 */
#ifndef DROVER_LOG_H
#define DROVER_LOG_H

#include <stdarg.h>

#include "config.h"

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Set the minimum level and the output fd (default LOG_INFO, fd 2). */
void log_init(enum log_level level, int fd);
/* Parse "debug", "info", "warn", "error"; -1 when unknown. */
int log_level_parse(const char *s);
enum log_level log_get_level(void);

/* What a program's config file says of its logging: the log.* keys (log_config_keys) fill it. */
struct log_opts {
    const char *level; /* "debug", "info", "warn" or "error" (log_level_parse) */
};
extern const struct config_key log_config_keys[];

void log_write(enum log_level level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_vwrite(enum log_level level, const char *module, const char *fmt, va_list ap);

#define log_debug(mod, ...) log_write(LOG_DEBUG, mod, __VA_ARGS__)
#define log_info(mod, ...) log_write(LOG_INFO, mod, __VA_ARGS__)
#define log_warn(mod, ...) log_write(LOG_WARN, mod, __VA_ARGS__)
#define log_error(mod, ...) log_write(LOG_ERROR, mod, __VA_ARGS__)

/*
 * Quote s for a key=value value: returned as-is when it has no space, quote,
 * '=' or control character, else in double quotes with escapes. The result
 * lives in buf (truncated to n).
 */
const char *log_quote(const char *s, char *buf, unsigned n);

/*
 * Route libevent's logging into this logger and set ZooKeeper's level. Each
 * ZooKeeper handle must also be created with log_zk_callback as its log
 * callback (zookeeper_init2), since the client library has no global one.
 */
void log_route_libraries(void);
void log_zk_callback(const char *message);

#endif
