/*
 * progconf: what droverd and drover-worker share at start-up.
 *
 * Each module declares its own configuration keys beside its options struct
 * (coord_config_keys beside struct coord_session_opts, engine_config_keys
 * beside struct engine_opts, ...; see src/common/config.h). A program's table
 * only composes the tables of the modules it runs, over a config struct that
 * embeds their structs: droverd_conf.h, worker_conf.h. Here are the part both
 * programs share (identity, ZooKeeper, logging) and the start of their main().
 * `droverd --help-config` and `drover-worker --help-config` print the
 * composed tables; docs/configuration.md lists them. conf/ holds an example
 * of each file.
 */
#ifndef DROVER_PROGCONF_H
#define DROVER_PROGCONF_H

#include <stdio.h>

#include "config.h"
#include "coord.h"
#include "log.h"

/* Settings both programs share: identity, ZooKeeper, logging. */
struct prog_conf {
    char *node_id; /* unique among members; default: <prefix>-hostname-pid */
    struct coord_conf zk;
    struct log_opts log;
};

/*
 * node.id, zookeeper.* and log.level over a struct prog_conf, in this order:
 * the first part of each program's table. Built on the first call (at
 * start-up, on one thread); lives until exit.
 */
const struct config_key *prog_conf_keys(void);

/*
 * Fill in what defaults cannot express (node id from host and pid) and check
 * what a table cannot: a node id must be usable as a znode name, a chroot an
 * absolute path.
 */
int prog_conf_finish(struct prog_conf *c, const char *prefix, struct drv_err *err);

/* A term and its explanation, for a man page's SIGNALS and FILES. */
struct prog_doc_item {
    const char *term;
    const char *text;
};

/*
 * What a daemon says about itself beyond its tables, for its man page PROG(8)
 * and PROG.conf(5): the NAME line's summary, the description's paragraphs,
 * what each signal does and the files it uses (arrays end at NULL). The
 * options and keys come from the tables that --help and --help-config print.
 */
struct prog_doc {
    const char *summary;
    const char *const *description;
    const struct prog_doc_item *signals;
    const struct prog_doc_item *files;
    const char *conf_summary; /* PROG.conf(5)'s NAME line */
    const char *conf_path;    /* where the packages put the example: /etc/drover/PROG.conf */
};

/* prog's usage (--help) and its man pages, from the option table and doc. */
void prog_print_usage(FILE *f, const char *prog);
void prog_print_man(FILE *f, const char *prog, const struct prog_doc *doc);
void prog_print_conf_man(FILE *f, const char *prog, const struct prog_doc *doc,
                         const struct config_key *keys);

/*
 * The start of both daemons' main(): parse --config FILE, --check-config FILE,
 * --help, --help-config, --man, --man-config and --version; load FILE into conf with keys; finish
 * the common part (id_prefix names a default node id), then run check (NULL: none) for what spans
 * keys (api.max_heavy_per_tenant below api.heavy_threads); with
 * --check-config, report and stop. Then set up the process: logger, libraries' logs, SIGPIPE
 * ignored, libevent's pthread support (before any event_base is made).
 *
 * Returns -1 when the program should go on and run, else the exit status
 * main() should return (0 after --help, --man, --version or a good --check-config, 1 for a bad
 * file, 2 for bad arguments); conf is then already freed.
 */
int prog_start(int argc, char **argv, const char *prog, const char *id_prefix,
               const struct prog_doc *doc, const struct config_key *keys, void *conf,
               struct prog_conf *common, int (*check)(const void *conf, struct drv_err *err));

/* ZooKeeper digest credentials read from zookeeper.digest_file ("user:password"). */
struct zk_digest {
    char user[128];
    char password[256];
};

/*
 * Read path (empty: no credentials, both fields empty). The file must not be
 * readable by group or others, since it holds a secret.
 */
int zk_digest_read(const char *path, struct zk_digest *d, struct drv_err *err);
/* Wipe the secret from memory. */
void zk_digest_clear(struct zk_digest *d);

/*
 * The options of the program's ZooKeeper session: c's, with an empty chroot
 * as none and d's credentials (borrowed: keep d until coord_session_new returns).
 */
void prog_zk_opts(const struct prog_conf *c, const struct zk_digest *d,
                  struct coord_session_opts *o);

struct event_base;
/*
 * The daemon's ZooKeeper session, as both daemons open it at start: the
 * credentials read from zookeeper.digest_file (wiped once the session has
 * them), the session made on base and connected within 15 s. Exactly one of:
 * 0 (*zk connected); 1 after logging why under module, event=config_failed
 * (the digest file) or event=zookeeper_failed (no session, or not connected
 * in time). *zk receives the session whenever one was made, connected or
 * not: the caller frees it (coord_session_free) either way.
 */
int prog_zk_connect(struct event_base *base, const struct prog_conf *c, const char *module,
                    struct coord_session **zk);

#endif
