/*
 * conf: coord's configuration keys (coord.h). The table is the documentation
 * and the validator; it fills a struct coord_conf and needs nothing but
 * src/common.
 */
#include <stddef.h>

#include "coord.h"

const struct config_key coord_config_keys[] = {
    CONFIG_KEY("zookeeper.hosts", CONFIG_STRING, struct coord_conf, session.hosts, .required = 1,
               .help = "ZooKeeper connection string, host:port[,host:port...]"),
    CONFIG_KEY("zookeeper.chroot", CONFIG_STRING, struct coord_conf, session.chroot, .deflt = "",
               .help = "path under which Drover keeps its tree (empty: /)"),
    CONFIG_KEY("zookeeper.digest_file", CONFIG_STRING, struct coord_conf, digest_file, .deflt = "",
               .help = "file holding user:password for ZooKeeper digest auth and ACLs"),
    CONFIG_KEY("zookeeper.acl_readers", CONFIG_STRING, struct coord_conf, session.acl_readers,
               .deflt = "",
               .help = "digest ids (user:base64(sha1(user:password)); drover key zk-id) that may "
                       "read every znode this process creates, comma-separated: the operator's "
                       "read-only identity; never world read"),
    CONFIG_KEY("zookeeper.acl_owner", CONFIG_STRING, struct coord_conf, session.acl_owner,
               .deflt = "",
               .help = "a worker with its tenant's credentials (drover key worker-zk): droverd's "
                       "digest id (drover key zk-id), given all permissions on every znode the "
                       "worker creates; empty: the process's own identity"),
    CONFIG_KEY("zookeeper.pool_grants", CONFIG_STRING, struct coord_conf, session.acl_pool_grants,
               .deflt = "",
               .help = "droverd: the operator's ssh-pool pools (\"shared\": true) and the "
                       "tenants granted each, POOL:TENANT+TENANT,...; only their workers reach "
                       "pools/_operator/POOL"),
    CONFIG_KEY("zookeeper.tenant_quota_znodes", CONFIG_INT, struct coord_conf,
               session.tenant_quota_znodes, .deflt = "250000", .min = 0, .max = 100000000,
               .help = "droverd: ZooKeeper's hard quota of znodes in each tenant's queues/<t> "
                       "and pools/<t> (0: none; enforced by servers run with "
                       "-Dzookeeper.enforceQuota=true)"),
    CONFIG_KEY("zookeeper.tenant_quota_bytes", CONFIG_SIZE, struct coord_conf,
               session.tenant_quota_bytes, .deflt = "64m", .min = 0, .max = 1L << 40,
               .help = "droverd: ZooKeeper's hard quota of data bytes in each tenant's "
                       "queues/<t> and pools/<t> (0: none)"),
    CONFIG_KEY("zookeeper.session_timeout", CONFIG_DURATION, struct coord_conf,
               session.session_timeout_ms, .deflt = "10s", .min = 1000, .max = 60000,
               .help = "ZooKeeper session timeout"),
    CONFIG_END,
};

int coord_conf_check(const struct coord_conf *c, struct drv_err *err)
{
    const char *chroot = c->session.chroot;
    if (chroot && *chroot && (chroot[0] != '/' || chroot[1] == '\0'))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "key \"zookeeper.chroot\": \"%s\" must be an absolute path below /",
                           chroot);
    if (coord_acl_pool_grants_check(c->session.acl_pool_grants, err) != 0)
        return err->code;
    return 0;
}
