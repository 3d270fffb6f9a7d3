/*
 * conf: the store's configuration keys (store.h). The table is the
 * documentation and the validator; it fills a struct store_opts and needs
 * nothing but src/common.
 */
#include <stddef.h>

#include "store.h"

const struct config_key store_config_keys[] = {
    CONFIG_KEY("postgres.conninfo", CONFIG_STRING, struct store_opts, conninfo, .required = 1,
               .help = "libpq connection string of the system-of-record database"),
    CONFIG_KEY("postgres.pool_size", CONFIG_INT, struct store_opts, pool_size, .deflt = "4",
               .min = 1, .max = 64, .help = "database connections (one thread each)"),
    CONFIG_END,
};
