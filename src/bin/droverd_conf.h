/*
 * droverd_conf: droverd's config file, composed of the keys of the modules
 * it runs (progconf.h). Each module's struct is filled by its own table.
 */
#ifndef DROVER_DROVERD_CONF_H
#define DROVER_DROVERD_CONF_H

#include "api.h"
#include "engine.h"
#include "progconf.h"
#include "store.h"

struct droverd_conf {
    struct prog_conf prog;     /* node.id, zookeeper.*, log.level */
    struct api_opts api;       /* http.*, secrets.key_file, api.*, ui.dir, autoscale.* */
    struct store_opts store;   /* postgres.* */
    struct engine_opts engine; /* engine.* */
    long shutdown_grace_ms;    /* shutdown.grace, droverd's own */
    long pg_lost_after_ms;     /* postgres.lost_after, droverd's own */
};

/*
 * The whole table, in --help-config's order: prog_conf_keys(), the API's,
 * the store's, the engine's, the API's autoscale.*, shutdown.grace and
 * postgres.lost_after. Built on
 * the first call (at start-up, on one thread); lives until exit.
 */
const struct config_key *droverd_conf_keys(void);

/* prog_start's check: the modules' checks that span keys (api_opts_check). */
int droverd_conf_check(const void *conf, struct drv_err *err);

#endif
