/*
 * config: see config.h.
 *
 * Parsing is three passes over a key table: the table itself (each key's
 * type, field type and bounds must agree), defaults (so a default that does
 * not parse is a programming error reported as such), then the file, line by
 * line. A bit per key remembers which keys the file set, to reject repeats
 * and to report required keys that are missing.
 *
 * Fields are written and read with memcpy at the width of their C type (the
 * key's store), so a const char * field takes a copied string as well as a
 * char * one.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "roff.h"
#include "xalloc.h"

static size_t key_count(const struct config_key *keys)
{
    size_t n = 0;
    while (keys[n].name)
        n++;
    return n;
}

static const char *type_name(enum config_type t)
{
    switch (t) {
    case CONFIG_STRING:
        return "string";
    case CONFIG_INT:
        return "integer";
    case CONFIG_BOOL:
        return "boolean";
    case CONFIG_DURATION:
        return "duration";
    case CONFIG_SIZE:
        return "size";
    case CONFIG_ADDR:
        return "host:port";
    case CONFIG_ENUM:
        return "enum";
    }
    return "?";
}

/* Parse a non-negative integer with an optional unit suffix from units[]. */
struct unit {
    const char *suffix;
    long mult;
};

static int parse_scaled(const char *v, const struct unit *units, long *out)
{
    if (!isdigit((unsigned char)*v))
        return -1;
    errno = 0;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (errno)
        return -1;
    long mult = 1;
    if (*end) {
        const struct unit *u = units;
        while (u->suffix && strcmp(u->suffix, end) != 0)
            u++;
        if (!u->suffix)
            return -1;
        mult = u->mult;
    }
    if (n > LONG_MAX / mult)
        return -1;
    *out = (long)(n * mult);
    return 0;
}

int config_parse_duration(const char *s, long *ms)
{
    static const struct unit units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {NULL, 0}};
    return parse_scaled(s, units, ms) == 0 ? 0 : DRV_EINVAL;
}

int config_split_addr(const char *addr, char *host, size_t n, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= n)
        return DRV_EINVAL;
    const char *p = colon + 1;
    if (!*p || strlen(p) > 5)
        return DRV_EINVAL;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return DRV_EINVAL;
    int v = atoi(p);
    if (v < 1 || v > 65535)
        return DRV_EINVAL;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    *port = v;
    return 0;
}

static int in_choices(const char *choices, const char *v)
{
    size_t len = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t wl = bar ? (size_t)(bar - p) : strlen(p);
        if (wl == len && strncmp(p, v, len) == 0)
            return 1;
        if (!bar)
            break;
        p = bar + 1;
    }
    return 0;
}

/* Does k's store fit its type and bounds? On failure write the reason to why. */
static int check_store(const struct config_key *k, char *why, size_t n)
{
    bool text = k->type == CONFIG_STRING || k->type == CONFIG_ADDR || k->type == CONFIG_ENUM;
    bool ok;
    switch (k->store) {
    case CONFIG_STORE_STR:
        ok = text;
        break;
    case CONFIG_STORE_INT:
        ok = !text && (k->type == CONFIG_BOOL || (k->min >= INT_MIN && k->max <= INT_MAX));
        break;
    case CONFIG_STORE_UINT:
        ok = !text && k->type != CONFIG_BOOL && k->min >= 0 && (unsigned long)k->max <= UINT_MAX;
        break;
    case CONFIG_STORE_LONG:
        ok = !text && k->type != CONFIG_BOOL;
        break;
    case CONFIG_STORE_ULONG:
        ok = !text && k->type != CONFIG_BOOL && k->min >= 0;
        break;
    case CONFIG_STORE_BOOL:
    case CONFIG_STORE_NOT_BOOL:
        ok = k->type == CONFIG_BOOL;
        break;
    default:
        ok = false;
    }
    if (!ok)
        snprintf(why, n, "a %s key cannot fill this field (store %d, bounds %ld..%ld)",
                 type_name(k->type), (int)k->store, k->min, k->max);
    return ok ? 0 : -1;
}

/* Write num into k's field, at its width (the bounds were checked to fit). */
static void store_number(const struct config_key *k, char *field, long num)
{
    switch (k->store) {
    case CONFIG_STORE_INT: {
        int v = (int)num;
        memcpy(field, &v, sizeof(v));
        return;
    }
    case CONFIG_STORE_UINT: {
        unsigned v = (unsigned)num;
        memcpy(field, &v, sizeof(v));
        return;
    }
    case CONFIG_STORE_ULONG: {
        unsigned long v = (unsigned long)num;
        memcpy(field, &v, sizeof(v));
        return;
    }
    case CONFIG_STORE_BOOL:
    case CONFIG_STORE_NOT_BOOL: {
        bool v = k->store == CONFIG_STORE_BOOL ? num != 0 : num == 0;
        memcpy(field, &v, sizeof(v));
        return;
    }
    default: {
        memcpy(field, &num, sizeof(num));
        return;
    }
    }
}

/* Replace the string in a char * or const char * field by a copy of v (NULL: none). */
static void store_string(char *field, const char *v)
{
    char *old;
    memcpy(&old, field, sizeof(old));
    free(old);
    char *copy = v ? xstrdup(v) : NULL;
    memcpy(field, &copy, sizeof(copy));
}

/* Store value v for key k into cfg; on failure write the reason to why. */
static int set_value(const struct config_key *k, const char *v, void *cfg, char *why, size_t n)
{
    char *field = (char *)cfg + k->offset;
    static const struct unit dur_units[] = {{"ms", 1},      {"s", 1000},     {"m", 60000},
                                            {"h", 3600000}, {"d", 86400000}, {NULL, 0}};
    static const struct unit size_units[] = {{"k", 1L << 10}, {"K", 1L << 10}, {"m", 1L << 20},
                                             {"M", 1L << 20}, {"g", 1L << 30}, {"G", 1L << 30},
                                             {NULL, 0}};
    long num;
    switch (k->type) {
    case CONFIG_STRING:
    case CONFIG_ADDR:
    case CONFIG_ENUM:
        if (k->type == CONFIG_ADDR) {
            char host[256];
            int port;
            if (config_split_addr(v, host, sizeof(host), &port) != 0) {
                snprintf(why, n, "expected host:port with a port in 1..65535, got \"%s\"", v);
                return -1;
            }
        }
        if (k->type == CONFIG_ENUM && !in_choices(k->choices, v)) {
            snprintf(why, n, "expected one of %s, got \"%s\"", k->choices, v);
            return -1;
        }
        store_string(field, v);
        return 0;
    case CONFIG_BOOL: {
        static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
        for (int i = 0; i < 4; i++) {
            if (strcmp(v, yes[i]) == 0 || strcmp(v, no[i]) == 0) {
                store_number(k, field, strcmp(v, yes[i]) == 0);
                return 0;
            }
        }
        snprintf(why, n, "expected true or false, got \"%s\"", v);
        return -1;
    }
    case CONFIG_INT:
    case CONFIG_DURATION:
    case CONFIG_SIZE: {
        static const struct unit none[] = {{NULL, 0}};
        const struct unit *u = k->type == CONFIG_DURATION ? dur_units
                               : k->type == CONFIG_SIZE   ? size_units
                                                          : none;
        const char *digits = v;
        int neg = 0;
        if (k->type == CONFIG_INT && *v == '-') {
            neg = 1;
            digits = v + 1;
        }
        if (parse_scaled(digits, u, &num) != 0) {
            const char *what = k->type == CONFIG_DURATION ? "a duration such as 500ms, 5s or 2m"
                               : k->type == CONFIG_SIZE   ? "a size such as 512, 64k or 10m"
                                                          : "an integer";
            snprintf(why, n, "expected %s, got \"%s\"", what, v);
            return -1;
        }
        if (neg)
            num = -num;
        if (num < k->min || num > k->max) {
            snprintf(why, n, "%s %s out of range %ld..%ld", type_name(k->type), v, k->min, k->max);
            return -1;
        }
        store_number(k, field, num);
        return 0;
    }
    }
    snprintf(why, n, "unsupported type");
    return -1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        *--e = '\0';
    return s;
}

int config_load_string(const char *name, const char *text, const struct config_key *keys, void *cfg,
                       struct drv_err *err)
{
    size_t nkeys = key_count(keys);
    char why[300];
    for (size_t i = 0; i < nkeys; i++) {
        if (check_store(&keys[i], why, sizeof(why)) != 0)
            return drv_err_set(err, DRV_EINVAL, 0, "built-in key \"%s\": %s", keys[i].name, why);
    }
    for (size_t i = 0; i < nkeys; i++) {
        if (keys[i].deflt && set_value(&keys[i], keys[i].deflt, cfg, why, sizeof(why)) != 0)
            return drv_err_set(err, DRV_EINVAL, 0, "built-in default of key \"%s\": %s",
                               keys[i].name, why);
    }
    unsigned char *seen = xcalloc(nkeys ? nkeys : 1, 1);
    int rc = 0;
    int lineno = 0;
    const char *p = text;
    while (*p && rc == 0) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char *line = xstrndup(p, len);
        p += len + (eol ? 1 : 0);
        lineno++;
        char *s = trim(line);
        if (*s == '\0' || *s == '#') {
            free(line);
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s:%d: expected \"key = value\", got \"%s\"",
                             name, lineno, s);
            free(line);
            break;
        }
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        size_t vl = strlen(val);
        if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
            val[vl - 1] = '\0';
            val++;
        } else if (vl >= 1 && val[0] == '"') {
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s:%d: key \"%s\": unterminated quoted value",
                             name, lineno, key);
            free(line);
            break;
        }
        size_t i = 0;
        while (i < nkeys && strcmp(keys[i].name, key) != 0)
            i++;
        if (*key == '\0')
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s:%d: empty key", name, lineno);
        else if (i == nkeys)
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s:%d: unknown key \"%s\"", name, lineno, key);
        else if (seen[i])
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s:%d: key \"%s\": set twice", name, lineno, key);
        else if (set_value(&keys[i], val, cfg, why, sizeof(why)) != 0)
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s:%d: key \"%s\": %s", name, lineno, key, why);
        else
            seen[i] = 1;
        free(line);
    }
    for (size_t i = 0; i < nkeys && rc == 0; i++) {
        if (keys[i].required && !seen[i])
            rc = drv_err_set(err, DRV_EINVAL, 0, "%s: required key \"%s\" is missing (%s)", name,
                             keys[i].name, keys[i].help);
    }
    free(seen);
    return rc;
}

int config_load(const char *path, const struct config_key *keys, void *cfg, struct drv_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return drv_err_set(err, DRV_EIO, errno, "%s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        XGROW(text, cap, len + got + 1);
        memcpy(text + len, chunk, got);
        len += got;
    }
    int read_err = ferror(f);
    fclose(f);
    if (read_err) {
        free(text);
        return drv_err_set(err, DRV_EIO, 0, "%s: read error", path);
    }
    if (!text)
        text = xstrdup("");
    text[len] = '\0';
    if (strlen(text) != len) {
        free(text);
        return drv_err_set(err, DRV_EINVAL, 0, "%s: contains a NUL byte", path);
    }
    int rc = config_load_string(path, text, keys, cfg, err);
    free(text);
    return rc;
}

void config_free(const struct config_key *keys, void *cfg)
{
    for (const struct config_key *k = keys; k->name; k++) {
        if (k->store == CONFIG_STORE_STR)
            store_string((char *)cfg + k->offset, NULL);
    }
}

struct config_key *config_compose(const struct config_part *parts, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += key_count(parts[i].keys);
    struct config_key *all = xcalloc(total + 1, sizeof(*all));
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        for (const struct config_key *k = parts[i].keys; k->name; k++) {
            for (size_t j = 0; j < at; j++) {
                if (strcmp(all[j].name, k->name) == 0) {
                    fprintf(stderr, "config_compose: key \"%s\" is in two tables\n", k->name);
                    abort();
                }
            }
            all[at] = *k;
            all[at].offset += parts[i].offset;
            at++;
        }
    }
    return all;
}

const struct config_key *config_compose_once(struct config_key **cache,
                                             const struct config_part *parts, size_t n)
{
    if (!*cache)
        *cache = config_compose(parts, n);
    return *cache;
}

const char *const config_format_doc[] = {
    "One key = value setting a line. A line whose first non-blank character is # is a comment; "
    "blank lines are ignored. A value runs to the end of its line, without the blanks around it, "
    "and may be double-quoted to keep them. Every key may appear once.",
    "Durations take ms, s, m, h or d (a bare number is milliseconds); sizes take k, m or g. A key "
    "left out takes its default; a required key must be there.",
    "An unknown key, a repeated key, a bad value or a missing required key stops the program at "
    "once with the file, the line, the key and the reason; --check-config FILE reports the same "
    "without starting.",
    NULL,
};

/* The value's description after a key's name: its type, default and choices. */
static void man_key(FILE *f, const struct config_key *k)
{
    fputs(".TP\n.B ", f);
    roff_text(f, k->name);
    fprintf(f, "\n(\\fI%s\\fR", type_name(k->type));
    if (k->required) {
        fputs(", required", f);
    } else if (k->deflt) {
        fputs(", default \\fB", f);
        roff_text(f, *k->deflt ? k->deflt : "\"\"");
        fputs("\\fR", f);
    }
    fputs(") ", f);
    roff_text(f, k->help);
    if (k->type == CONFIG_ENUM) {
        fputs(": one of ", f);
        roff_text(f, k->choices);
    }
    fputc('\n', f);
}

void config_print_man(FILE *f, const struct config_key *keys)
{
    for (const struct config_key *k = keys; k->name; k++)
        man_key(f, k);
}

void config_print_help(const struct config_key *keys)
{
    for (const struct config_key *k = keys; k->name; k++) {
        printf("%-32s %-9s %s", k->name, type_name(k->type), k->help);
        if (k->type == CONFIG_ENUM)
            printf(" (%s)", k->choices);
        if (k->required)
            printf(" [required]");
        else if (k->deflt)
            printf(" [default: %s]", *k->deflt ? k->deflt : "\"\"");
        printf("\n");
    }
}

int config_read_secret(const char *key, const char *path, char *buf, size_t n, struct drv_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return drv_err_set(err, DRV_EIO, errno, "%s \"%s\": %s", key, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || (st.st_mode & 077)) {
        close(fd);
        return drv_err_set(err, DRV_EINVAL, 0, "%s \"%s\": readable by others (chmod 600 it)", key,
                           path);
    }
    ssize_t got = read(fd, buf, n - 1);
    int read_errno = errno;
    close(fd);
    if (got < 0) {
        buf[0] = '\0';
        return drv_err_set(err, DRV_EIO, read_errno, "%s \"%s\": %s", key, path,
                           strerror(read_errno));
    }
    buf[got] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}
