/*
 * config: Drover's configuration files.
 *
 * Format: one `key = value` per line; `#` starts a comment when it is the
 * first non-blank character of a line; blank lines are ignored; keys are
 * dotted (`zookeeper.hosts`); a value runs to the end of the line with the
 * surrounding blanks removed and may be double-quoted to keep them. Each key
 * may appear once.
 *
 * Keys are declared by the program that owns them in a table of struct
 * config_key (name, type, where to store it, bounds, default, help), in the
 * HAProxy manner: the table is the documentation (`droverd --help-config`
 * prints it) and the validator. Unknown keys, repeated keys, bad values and
 * missing required keys are errors that name the file, the line, the key and
 * the reason: `conf/droverd.conf:7: key "http.listen": expected host:port`.
 *
 * Ownership: string values are copied with xstrdup into the target struct;
 * config_free() frees them (and only them) using the same table.
 */
#ifndef DROVER_CONFIG_H
#define DROVER_CONFIG_H

#include <stddef.h>

#include "error.h"

enum config_type {
    CONFIG_STRING,   /* char *, any text (empty allowed unless required) */
    CONFIG_INT,      /* long, decimal, within [min, max] */
    CONFIG_BOOL,     /* int, true/false/yes/no/on/off/1/0 */
    CONFIG_DURATION, /* long milliseconds: "250ms", "5s", "2m", "1h", "90d" or bare ms, in [min,
                      * max]
                      */
    CONFIG_SIZE,     /* long bytes: "512", "64k", "10m", "1g", within [min, max] */
    CONFIG_ADDR,     /* char *, "host:port" with a port in 1..65535 */
    CONFIG_ENUM,     /* char *, one of the '|'-separated words in .choices */
};

struct config_key {
    const char *name;
    enum config_type type;
    size_t offset;       /* offsetof(struct your_config, field) */
    int required;        /* must appear in the file */
    const char *deflt;   /* default as text, parsed like a file value; NULL = none */
    long min, max;       /* bounds for INT, DURATION and SIZE */
    const char *choices; /* for ENUM: "debug|info|warn|error" */
    const char *help;    /* one line, for --help-config and docs */
};

/*
 * Apply the defaults of keys to cfg, then read path into it. Returns 0, or
 * DRV_EINVAL / DRV_EIO with err->msg naming file, line, key and reason.
 * On error cfg holds what was read so far; free it with config_free.
 */
int config_load(const char *path, const struct config_key *keys, void *cfg, struct drv_err *err);

/* Same, from a string; `name` stands for the file in messages. */
int config_load_string(const char *name, const char *text, const struct config_key *keys, void *cfg,
                       struct drv_err *err);

/* Free the strings that config_load stored into cfg. */
void config_free(const struct config_key *keys, void *cfg);

/* Print the keys, types, defaults and help to stdout (one key a line). */
void config_print_help(const struct config_key *keys);

/* Parse a duration ("250ms", "5s", "2m", "1h" or bare milliseconds) into *ms; 0 or DRV_EINVAL. */
int config_parse_duration(const char *s, long *ms);

/* Split "host:port" into host (copied into host, size n) and port; 0 or DRV_EINVAL. */
int config_split_addr(const char *addr, char *host, size_t n, int *port);

#endif
