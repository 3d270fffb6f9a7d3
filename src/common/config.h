/*
 * config: Drover's configuration files.
 *
 * Format: one `key = value` per line; `#` starts a comment when it is the
 * first non-blank character of a line; blank lines are ignored; keys are
 * dotted (`zookeeper.hosts`); a value runs to the end of the line with the
 * surrounding blanks removed and may be double-quoted to keep them. Each key
 * may appear once.
 *
 * Keys are declared by the module that owns them, in the HAProxy manner: a
 * table of struct config_key (name, type, the field of the module's options
 * struct it fills, bounds, default, help) in the module's public header,
 * beside that struct (engine_config_keys beside struct engine_opts). A
 * program composes the tables of the modules it runs (config_compose) into
 * one table over its own config struct, which embeds the modules' structs.
 * The table is the documentation (`droverd --help-config` prints it) and the
 * validator. Unknown keys, repeated keys, bad values and missing required
 * keys are errors that name the file, the line, the key and the reason:
 * `conf/droverd.conf:7: key "http.listen": expected host:port`.
 *
 * Typed fields: CONFIG_KEY() records the C type of the field (char * or
 * const char *, int, unsigned, long, unsigned long/size_t, bool) next to its
 * offset, so a value is stored at the field's own width; a field of another
 * type does not compile, and bounds that do not fit the field are refused
 * when the table is loaded.
 *
 * Ownership: string values are copied with xstrdup into the target struct
 * (into const char * fields too); config_free() frees them (and only them)
 * using the same table.
 */
#ifndef DROVER_CONFIG_H
#define DROVER_CONFIG_H

#include <stddef.h>
#include <stdio.h>

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

/* The C type of the field a key fills (CONFIG_KEY works it out). */
enum config_store {
    CONFIG_STORE_NONE = 0, /* not set: a table not built with CONFIG_KEY, refused */
    CONFIG_STORE_STR,      /* char * or const char *: STRING, ADDR, ENUM */
    CONFIG_STORE_INT,      /* int: INT, DURATION, SIZE within int, or BOOL as 0/1 */
    CONFIG_STORE_UINT,     /* unsigned: INT, DURATION, SIZE with min >= 0 */
    CONFIG_STORE_LONG,     /* long: INT, DURATION, SIZE */
    CONFIG_STORE_ULONG,    /* unsigned long (size_t): INT, DURATION, SIZE with min >= 0 */
    CONFIG_STORE_BOOL,     /* bool: BOOL */
    CONFIG_STORE_NOT_BOOL, /* bool holding the opposite of the key (CONFIG_KEY_NOT) */
};

struct config_key {
    const char *name;
    enum config_type type;
    size_t offset;           /* of the field in the struct the table fills */
    enum config_store store; /* the field's C type */
    int required;            /* must appear in the file */
    const char *deflt;       /* default as text, parsed like a file value; NULL = none */
    long min, max;           /* bounds for INT, DURATION and SIZE */
    const char *choices;     /* for ENUM: "debug|info|warn|error" */
    const char *help;        /* one line, for --help-config and docs */
};

#define CONFIG_STORE_OF(lv)                                                                        \
    _Generic((lv),                                                                                 \
        char *: CONFIG_STORE_STR,                                                                  \
        const char *: CONFIG_STORE_STR,                                                            \
        int: CONFIG_STORE_INT,                                                                     \
        unsigned: CONFIG_STORE_UINT,                                                               \
        long: CONFIG_STORE_LONG,                                                                   \
        unsigned long: CONFIG_STORE_ULONG,                                                         \
        _Bool: CONFIG_STORE_BOOL)

/*
 * One table entry: key name_ of type type_ fills field_ of struct st_, e.g.
 *
 *     CONFIG_KEY("engine.max_failures", CONFIG_INT, struct engine_opts, max_failures,
 *                .deflt = "3", .min = 1, .max = 60, .help = "failed attempts of a task ..."),
 *
 * The rest (.required, .deflt, .min, .max, .choices, .help) is given by name.
 */
#define CONFIG_KEY(name_, type_, st_, field_, ...)                                                 \
    {                                                                                              \
        .name = (name_), .type = (type_), .offset = offsetof(st_, field_),                         \
        .store = CONFIG_STORE_OF(((st_ *)0)->field_), __VA_ARGS__                                  \
    }

/* The same for a bool field that holds the opposite of the key ("rollback" into no_rollback). */
#define CONFIG_KEY_NOT(name_, st_, field_, ...)                                                    \
    {                                                                                              \
        .name = (name_), .type = CONFIG_BOOL, .offset = offsetof(st_, field_),                     \
        .store = _Generic(((st_ *)0)->field_, _Bool                                                \
                          : CONFIG_STORE_NOT_BOOL),                                                \
        __VA_ARGS__                                                                                \
    }

/* A table ends with this. */
#define CONFIG_END                                                                                 \
    {                                                                                              \
        .name = NULL                                                                               \
    }

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

/*
 * A module's table inside a program's: keys fill the struct found at offset
 * in the program's config struct (offsetof(struct droverd_conf, engine)).
 */
struct config_part {
    const struct config_key *keys;
    size_t offset;
};

/*
 * One table of every part's keys, in order, each offset moved by its part's:
 * what config_load and --help-config take for a program. The caller owns the
 * result (free() it). A key named in two parts is a programming error: abort.
 */
struct config_key *config_compose(const struct config_part *parts, size_t n);

/*
 * A program's table made once: *cache, composed from parts on the first call
 * and kept until exit (call it at start-up, on one thread). For a function
 * that returns the program's table with its parts listed inside.
 */
const struct config_key *config_compose_once(struct config_key **cache,
                                             const struct config_part *parts, size_t n);

/* Print the keys, types, defaults and help to stdout (one key a line). */
void config_print_help(const struct config_key *keys);
/*
 * The same keys as a man page's list (roff: a .TP entry per key with its type,
 * default or "required", help and choices), for PROG.conf(5); and the file
 * format's description, paragraphs ending at NULL. Generated from the table,
 * so the page and --help-config cannot disagree.
 */
void config_print_man(FILE *f, const struct config_key *keys);
extern const char *const config_format_doc[];

/* Parse a duration ("250ms", "5s", "2m", "1h" or bare milliseconds) into *ms; 0 or DRV_EINVAL. */
int config_parse_duration(const char *s, long *ms);

/* Split "host:port" into host (copied into host, size n) and port; 0 or DRV_EINVAL. */
int config_split_addr(const char *addr, char *host, size_t n, int *port);

/*
 * Read the first line of a secret file that config key `key` names (a token,
 * a password, a key in hex) into buf (size n, NUL-terminated; the line end and
 * what follows are dropped, so is what does not fit). The file must not be
 * readable by group or others. Returns 0, DRV_EIO (cannot open or read it) or
 * DRV_EINVAL (its mode), with err->msg naming the key and the file:
 * `secrets.key_file "/etc/drover/key": readable by others (chmod 600 it)`.
 * The caller wipes buf when done.
 */
int config_read_secret(const char *key, const char *path, char *buf, size_t n, struct drv_err *err);

#endif
