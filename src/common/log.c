/*
 * log: see log.h.
 *
 * Thread safety: the level and fd are set once at start-up; each line is
 * formatted into a stack buffer and written with a single write(2).
 */
#include "log.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <zookeeper/zookeeper.h>

#include "clock.h"

static enum log_level min_level = LOG_INFO;
static int out_fd = 2;

static const char *level_names[] = {"debug", "info", "warn", "error"};

void log_init(enum log_level level, int fd)
{
    min_level = level;
    out_fd = fd;
}

enum log_level log_get_level(void)
{
    return min_level;
}

const struct config_key log_config_keys[] = {
    CONFIG_KEY("log.level", CONFIG_ENUM, struct log_opts, level, .deflt = "info",
               .choices = "debug|info|warn|error", .help = "minimum level of log lines"),
    CONFIG_END,
};

int log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

const char *log_quote(const char *s, char *buf, unsigned n)
{
    int plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        if (*p == ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p < 0x20)
            plain = 0;
    if (plain)
        return s;
    unsigned j = 0;
    if (n < 3)
        return "\"\"";
    buf[j++] = '"';
    for (const char *p = s; *p && j + 3 < n; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            buf[j++] = '\\';
            buf[j++] = (char)c;
        } else if (c == '\n') {
            buf[j++] = '\\';
            buf[j++] = 'n';
        } else if (c < 0x20) {
            buf[j++] = '?';
        } else {
            buf[j++] = (char)c;
        }
    }
    buf[j++] = '"';
    buf[j] = '\0';
    return buf;
}

void log_vwrite(enum log_level level, const char *module, const char *fmt, va_list ap)
{
    if (level < min_level)
        return;
    char line[4096];
    int64_t now = clock_wall_ms();
    time_t sec = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    int n =
        snprintf(line, sizeof(line), "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s module=%s ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (long)(now % 1000), level_names[level], module);
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    while (len > 0 && line[len - 1] == '\n')
        len--;
    line[len++] = '\n';
    ssize_t w;
    do {
        w = write(out_fd, line, len);
    } while (w < 0 && errno == EINTR);
}

void log_write(enum log_level level, const char *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(level, module, fmt, ap);
    va_end(ap);
}

static void libevent_log(int severity, const char *msg)
{
    enum log_level l = severity == EVENT_LOG_DEBUG  ? LOG_DEBUG
                       : severity == EVENT_LOG_MSG  ? LOG_INFO
                       : severity == EVENT_LOG_WARN ? LOG_WARN
                                                    : LOG_ERROR;
    char q[1024];
    log_write(l, "libevent", "msg=%s", log_quote(msg, q, sizeof(q)));
}

void log_zk_callback(const char *message)
{
    /* ZooKeeper's lines look like "date:pid(0xtid):ZOO_LEVEL@func@line: text". */
    enum log_level l = strstr(message, "ZOO_ERROR")  ? LOG_ERROR
                       : strstr(message, "ZOO_WARN") ? LOG_WARN
                       : strstr(message, "ZOO_INFO") ? LOG_INFO
                                                     : LOG_DEBUG;
    const char *text = strstr(message, "@");
    text = text ? strchr(text + 1, '@') : NULL;
    text = text ? strchr(text, ':') : NULL;
    text = text ? text + 1 : message;
    while (*text == ' ')
        text++;
    char q[1024];
    log_write(l, "zookeeper", "msg=%s", log_quote(text, q, sizeof(q)));
}

void log_route_libraries(void)
{
    event_set_log_callback(libevent_log);
    zoo_set_debug_level(min_level == LOG_DEBUG ? ZOO_LOG_LEVEL_DEBUG : ZOO_LOG_LEVEL_WARN);
}
