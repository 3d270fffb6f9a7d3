/* droverd_conf: see droverd_conf.h. */
#include "droverd_conf.h"

#include <stddef.h>

static const struct config_key droverd_keys[] = {
    CONFIG_KEY("shutdown.grace", CONFIG_DURATION, struct droverd_conf, shutdown_grace_ms,
               .deflt = "10s", .min = 0, .max = 600000,
               .help = "on SIGTERM: how long to hand jobs over before exiting anyway"),
    CONFIG_KEY("postgres.lost_after", CONFIG_DURATION, struct droverd_conf, pg_lost_after_ms,
               .deflt = "10s", .min = 0, .max = 600000,
               .help = "PostgreSQL unreachable this long while another droverd reaches it: step "
                       "out of the ring and hand the jobs over until it is back (0: never)"),
    CONFIG_END,
};

const struct config_key *droverd_conf_keys(void)
{
    static struct config_key *keys;
    const struct config_part parts[] = {
        {prog_conf_keys(), offsetof(struct droverd_conf, prog)},
        {api_config_keys, offsetof(struct droverd_conf, api)},
        {store_config_keys, offsetof(struct droverd_conf, store)},
        {engine_config_keys, offsetof(struct droverd_conf, engine)},
        {api_autoscale_config_keys, offsetof(struct droverd_conf, api)},
        {droverd_keys, 0},
    };
    return config_compose_once(&keys, parts, sizeof(parts) / sizeof(parts[0]));
}

int droverd_conf_check(const void *conf, struct drv_err *err)
{
    const struct droverd_conf *c = conf;
    return api_opts_check(&c->api, err);
}
