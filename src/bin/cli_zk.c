/*
 * cli_zk: `drover zk ls|get|tree PATH`, ZooKeeper inspection for operators.
 *
 * A command-line tool may block, so this uses the ZooKeeper client's
 * synchronous calls on one short-lived handle. Every znode Drover writes is
 * JSON; `get` and `tree` print it as is (tree: one znode a line, indented).
 * The connection string comes from --zk or DROVER_ZK; credentials (a file
 * holding "user:password", mode 0600: the operator's read-only identity,
 * docs/zookeeper-tree.md "ACLs") from --digest-file or DROVER_ZK_DIGEST_FILE.
 * Without them a tree written with credentials reads as "not authorized".
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "cli.h"
#include "config.h"
#include "log.h"
#include "xalloc.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: drover zk ls PATH [--zk HOSTS]    children of PATH\n"
               "       drover zk get PATH [--zk HOSTS]   data of PATH\n"
               "       drover zk tree PATH [--zk HOSTS]  PATH and everything under it, with data\n"
               "HOSTS defaults to $DROVER_ZK. --digest-file FILE (or $DROVER_ZK_DIGEST_FILE):\n"
               "a file holding user:password, the identity to read with.\n");
}

static zhandle_t *connect_zk(const char *hosts)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init2(hosts, NULL, 10000, NULL, NULL, 0, log_zk_callback);
    if (!zh)
        return NULL;
    /* Wait up to 10 s for the connection. */
    for (int i = 0; i < 200 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        usleep(50 * 1000);
    if (zoo_state(zh) != ZOO_CONNECTED_STATE) {
        zookeeper_close(zh);
        return NULL;
    }
    return zh;
}

/* Read "user:password" from path (one line, mode 0600) into cred. 0 or 1 (told). */
static int read_digest(const char *path, char *cred, size_t n)
{
    struct drv_err err;
    if (config_read_secret("--digest-file", path, cred, n, &err) != 0) {
        fprintf(stderr, "drover: %s\n", err.msg);
        return 1;
    }
    if (!strchr(cred, ':') || cred[0] == ':') {
        fprintf(stderr, "drover: --digest-file \"%s\": expected one line \"user:password\"\n",
                path);
        return 1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int print_data(zhandle_t *zh, const char *path, int indent)
{
    static char buf[1024 * 1024];
    int len = sizeof(buf) - 1;
    struct Stat st;
    int rc = zoo_get(zh, path, 0, buf, &len, &st);
    if (rc != ZOK)
        return rc;
    const char *name = indent ? strrchr(path, '/') + 1 : path;
    printf("%*s%s", indent * 2, "", name);
    if (len > 0) {
        buf[len] = '\0';
        printf("  %s", buf);
    }
    printf("%s\n", st.ephemeralOwner ? "  (ephemeral)" : "");
    return ZOK;
}

static int walk(zhandle_t *zh, const char *path, int indent)
{
    int rc = print_data(zh, path, indent);
    if (rc != ZOK)
        return rc;
    struct String_vector kids = {0, NULL};
    rc = zoo_get_children(zh, path, 0, &kids);
    if (rc != ZOK)
        return rc;
    qsort(kids.data, (size_t)kids.count, sizeof(char *), cmp_str);
    for (int i = 0; i < kids.count && rc == ZOK; i++) {
        char *child = xasprintf("%s/%s", strcmp(path, "/") == 0 ? "" : path, kids.data[i]);
        rc = walk(zh, child, indent + 1);
        if (rc == ZNONODE) /* gone meanwhile: an ephemeral member that left */
            rc = ZOK;
        free(child);
    }
    deallocate_String_vector(&kids);
    return rc;
}

int cli_zk_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *verb = argv[1];
    static const struct option opts[] = {{"zk", required_argument, NULL, 'z'},
                                         {"digest-file", required_argument, NULL, 'd'},
                                         {NULL, 0, NULL, 0}};
    const char *hosts = getenv("DROVER_ZK"), *digest = getenv("DROVER_ZK_DIGEST_FILE");
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'z')
            hosts = optarg;
        else if (c == 'd')
            digest = optarg;
        else {
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1 || (strcmp(verb, "ls") && strcmp(verb, "get") && strcmp(verb, "tree"))) {
        usage(stderr);
        return 2;
    }
    const char *path = argv[optind];
    if (!hosts || !*hosts) {
        fprintf(stderr, "drover: no ZooKeeper given (--zk HOSTS or DROVER_ZK)\n");
        return 2;
    }
    if (path[0] != '/') {
        fprintf(stderr, "drover: path \"%s\" must start with /\n", path);
        return 2;
    }
    char cred[400] = "";
    if (digest && *digest && read_digest(digest, cred, sizeof(cred)) != 0)
        return 1;
    zhandle_t *zh = connect_zk(hosts);
    if (!zh) {
        fprintf(stderr, "drover: cannot connect to zookeeper at \"%s\"\n", hosts);
        return 1;
    }
    if (*cred) /* requests after it are served with the identity (or fail: auth failed) */
        zoo_add_auth(zh, "digest", cred, (int)strlen(cred), NULL, NULL);
    explicit_bzero(cred, sizeof(cred));
    int rc;
    if (strcmp(verb, "get") == 0) {
        rc = print_data(zh, path, 0);
    } else if (strcmp(verb, "tree") == 0) {
        rc = walk(zh, path, 0);
    } else {
        struct String_vector kids = {0, NULL};
        rc = zoo_get_children(zh, path, 0, &kids);
        if (rc == ZOK) {
            qsort(kids.data, (size_t)kids.count, sizeof(char *), cmp_str);
            for (int i = 0; i < kids.count; i++)
                printf("%s\n", kids.data[i]);
            deallocate_String_vector(&kids);
        }
    }
    zookeeper_close(zh);
    if (rc != ZOK) {
        fprintf(stderr, "drover: zookeeper: \"%s\": %s\n", path, zerror(rc));
        return 1;
    }
    return 0;
}
