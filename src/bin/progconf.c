/* progconf: see progconf.h. */
#include "progconf.h"

#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/thread.h>

#include "drover_version.h"
#include "log.h"
#include "xalloc.h"

static const struct config_key prog_keys[] = {
    CONFIG_KEY("node.id", CONFIG_STRING, struct prog_conf, node_id, .deflt = "",
               .help = "this process's id among members (default: hostname-pid)"),
    CONFIG_END,
};

const struct config_key *prog_conf_keys(void)
{
    static struct config_key *keys;
    const struct config_part parts[] = {
        {prog_keys, 0},
        {coord_config_keys, offsetof(struct prog_conf, zk)},
        {log_config_keys, offsetof(struct prog_conf, log)},
    };
    return config_compose_once(&keys, parts, sizeof(parts) / sizeof(parts[0]));
}

int prog_conf_finish(struct prog_conf *c, const char *prefix, struct drv_err *err)
{
    if (!c->node_id || !*c->node_id) {
        char host[256] = "localhost";
        gethostname(host, sizeof(host) - 1);
        free(c->node_id);
        c->node_id = xasprintf("%s-%s-%ld", prefix, host, (long)getpid());
    }
    size_t len = strlen(c->node_id);
    if (len > 128)
        return drv_err_set(err, DRV_EINVAL, 0, "key \"node.id\": longer than 128 characters");
    for (const char *p = c->node_id; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return drv_err_set(err, DRV_EINVAL, 0,
                               "key \"node.id\": \"%s\" may hold only letters, digits, '-', "
                               "'_' and '.'",
                               c->node_id);
    }
    if (strcmp(c->node_id, ".") == 0 || strcmp(c->node_id, "..") == 0)
        return drv_err_set(err, DRV_EINVAL, 0, "key \"node.id\": \"%s\" is reserved", c->node_id);
    return coord_conf_check(&c->zk, err);
}

int zk_digest_read(const char *path, struct zk_digest *d, struct drv_err *err)
{
    memset(d, 0, sizeof(*d));
    if (!path || !*path)
        return 0;
    char buf[400];
    int rc = config_read_secret("zookeeper.digest_file", path, buf, sizeof(buf), err);
    if (rc != 0)
        return rc;
    char *colon = strchr(buf, ':');
    if (!colon || colon == buf || !colon[1] || (size_t)(colon - buf) >= sizeof(d->user) ||
        strlen(colon + 1) >= sizeof(d->password)) {
        explicit_bzero(buf, sizeof(buf));
        return drv_err_set(err, DRV_EINVAL, 0,
                           "zookeeper.digest_file \"%s\": expected one line \"user:password\"",
                           path);
    }
    *colon = '\0';
    snprintf(d->user, sizeof(d->user), "%s", buf);
    snprintf(d->password, sizeof(d->password), "%s", colon + 1);
    explicit_bzero(buf, sizeof(buf));
    return 0;
}

void zk_digest_clear(struct zk_digest *d)
{
    explicit_bzero(d, sizeof(*d));
}

void prog_zk_opts(const struct prog_conf *c, const struct zk_digest *d,
                  struct coord_session_opts *o)
{
    *o = c->zk.session;
    if (o->chroot && !*o->chroot)
        o->chroot = NULL;
    o->digest_user = d->user[0] ? d->user : NULL;
    o->digest_password = d->user[0] ? d->password : NULL;
}

int prog_zk_connect(struct event_base *base, const struct prog_conf *c, const char *module,
                    struct coord_session **zk)
{
    struct drv_err err;
    drv_err_clear(&err);
    char q[600];
    struct zk_digest digest;
    if (zk_digest_read(c->zk.digest_file, &digest, &err) != 0) {
        log_error(module, "event=config_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    struct coord_session_opts zo;
    prog_zk_opts(c, &digest, &zo);
    *zk = coord_session_new(base, &zo, &err);
    zk_digest_clear(&digest);
    if (!*zk || coord_session_wait_connected(*zk, 15000, &err) != 0) {
        log_error(module, "event=zookeeper_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    return 0;
}

static void prog_usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s --config FILE\n"
            "       %s --check-config FILE   validate a config file and exit\n"
            "       %s --help-config         list the config keys\n"
            "       %s --version             the version (and the commit it was built from)\n",
            prog, prog, prog, prog);
}

int prog_start(int argc, char **argv, const char *prog, const char *id_prefix,
               const struct config_key *keys, void *conf, struct prog_conf *common,
               int (*check)(const void *conf, struct drv_err *err))
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"check-config", required_argument, NULL, 'k'},
        {"help-config", no_argument, NULL, 'H'},  {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    int check_only = 0, c;
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            path = optarg;
            break;
        case 'k':
            path = optarg;
            check_only = 1;
            break;
        case 'H':
            config_print_help(keys);
            return 0;
        case 'h':
            prog_usage(stdout, prog);
            return 0;
        case 'V':
            printf("%s %s\n", prog, DROVER_VERSION_FULL);
            return 0;
        default:
            prog_usage(stderr, prog);
            return 2;
        }
    }
    if (!path || optind != argc) {
        prog_usage(stderr, prog);
        return 2;
    }
    struct drv_err err;
    drv_err_clear(&err);
    int rc = config_load(path, keys, conf, &err);
    if (rc == 0 && prog_conf_finish(common, id_prefix, &err) != 0) {
        drv_err_prefix(&err, "%s", path);
        rc = DRV_EINVAL;
    }
    if (rc == 0 && check && check(conf, &err) != 0) {
        drv_err_prefix(&err, "%s", path);
        rc = DRV_EINVAL;
    }
    if (rc != 0 || check_only) {
        if (rc != 0)
            fprintf(stderr, "%s: %s\n", prog, err.msg);
        else
            printf("%s: %s: ok\n", prog, path);
        config_free(keys, conf);
        return rc != 0;
    }
    log_init((enum log_level)log_level_parse(common->log.level), 2);
    log_route_libraries();
    signal(SIGPIPE, SIG_IGN);
    evthread_use_pthreads();
    return -1;
}
