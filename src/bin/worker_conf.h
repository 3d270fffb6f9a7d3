/*
 * worker_conf: drover-worker's config file, composed of the keys of the
 * modules it runs (progconf.h). Each module's struct is filled by its own
 * table.
 */
#ifndef DROVER_WORKER_CONF_H
#define DROVER_WORKER_CONF_H

#include "progconf.h"
#include "worker.h"

struct worker_conf {
    struct prog_conf prog;     /* node.id, zookeeper.*, log.level */
    struct worker_opts worker; /* worker.*, secrets.key_file */
};

/*
 * The whole table, in --help-config's order: prog_conf_keys(), then the
 * worker's. Built on the first call (at start-up, on one thread); lives
 * until exit.
 */
const struct config_key *worker_conf_keys(void);

#endif
