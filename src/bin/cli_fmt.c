/*
 * cli_fmt: times and durations for people (see cli.h).
 *
 * The API gives PostgreSQL's text for a timestamptz ("2026-11-26
 * 19:39:58.123456+00", the offset that of the server's session time zone) or
 * ISO-8601; the client prints ISO-8601 to the second, in UTC
 * ("2026-11-26T19:39:58Z") unless asked for local time. Pure functions over
 * the process's one setting; single-threaded.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static int local_time = -1; /* -1: not decided yet, read DROVER_LOCAL_TIME */

void cli_fmt_set_local(bool local)
{
    local_time = local;
}

static bool is_local(void)
{
    if (local_time < 0) {
        const char *e = getenv("DROVER_LOCAL_TIME");
        local_time = e && *e && strcmp(e, "0") != 0;
    }
    return local_time;
}

/* n digits of s as a number; -1 when one is not a digit. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int64_t cli_parse_time(const char *text)
{
    if (!text || strlen(text) < 19)
        return -1;
    const char *s = text;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2), h = digits(s + 11, 2),
        mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        se < 0 || se > 60 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
        s[13] != ':' || s[16] != ':')
        return -1;
    const char *p = s + 19;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    long off = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh = digits(p + 1, 2), om = 0;
        if (oh < 0)
            return -1;
        p += 3;
        if (*p == ':')
            p++;
        if (*p >= '0' && *p <= '9') {
            om = digits(p, 2);
            if (om < 0)
                return -1;
            p += 2;
        }
        off = sign * (oh * 3600L + om * 60L);
    }
    if (*p)
        return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = se};
    return (int64_t)timegm(&tm) - off;
}

const char *cli_fmt_time(const char *text, char *buf, size_t n)
{
    int64_t t = cli_parse_time(text);
    if (t < 0) {
        snprintf(buf, n, "%s", text ? text : "-");
        return buf;
    }
    time_t tt = (time_t)t;
    struct tm tm;
    if (is_local()) {
        localtime_r(&tt, &tm);
        char z[8];
        strftime(z, sizeof(z), "%z", &tm); /* +0100 */
        char date[32];
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, n, "%s%.3s:%.2s", date, z, z + 3);
    } else {
        gmtime_r(&tt, &tm);
        strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    return buf;
}

const char *cli_fmt_duration(int64_t secs, char *buf, size_t n)
{
    if (secs < 0)
        secs = 0;
    if (secs < 60)
        snprintf(buf, n, "%llds", (long long)secs);
    else if (secs < 3600)
        snprintf(buf, n, "%lldm%02llds", (long long)(secs / 60), (long long)(secs % 60));
    else if (secs < 86400)
        snprintf(buf, n, "%lldh%02lldm", (long long)(secs / 3600), (long long)(secs % 3600 / 60));
    else
        snprintf(buf, n, "%lldd%02lldh", (long long)(secs / 86400),
                 (long long)(secs % 86400 / 3600));
    return buf;
}
