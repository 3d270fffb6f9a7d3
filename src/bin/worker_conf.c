/* worker_conf: see worker_conf.h. */
#include "worker_conf.h"

#include <stddef.h>

const struct config_key *worker_conf_keys(void)
{
    static struct config_key *keys;
    const struct config_part parts[] = {
        {prog_conf_keys(), offsetof(struct worker_conf, prog)},
        {worker_config_keys, offsetof(struct worker_conf, worker)},
    };
    return config_compose_once(&keys, parts, sizeof(parts) / sizeof(parts[0]));
}
