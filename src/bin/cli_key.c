/*
 * cli_key: `drover key zk-id DIGEST_FILE`: the ZooKeeper digest id of a
 * credentials file, for zookeeper.acl_readers (docs/zookeeper-tree.md, "ACLs").
 * `drover key derive TENANT --key-file FLEET`: a tenant's key, for
 * that tenant's workers (secrets.tenant_key_file; docs/security.md, "Sealed
 * values"). Prints 64 hex digits and a newline on standard output; write it
 * to a file of mode 0600 (`umask 077`). Offline: reads the fleet key file
 * (droverd's secrets.key_file) and nothing else.
 * `drover key worker-zk TENANT --key-file FLEET`: the ZooKeeper credentials
 * "worker.TENANT:<64 hex>" of that tenant's workers (their zookeeper.digest_file,
 * mode 0600), derived from the fleet key as droverd derives the id it grants
 * (seal_worker_zk; docs/zookeeper-tree.md, "ACLs").
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cli.h"
#include "config.h"
#include "coord.h"
#include "hex.h"
#include "seal.h"

static int usage(void)
{
    fprintf(stderr, "usage: drover key derive TENANT --key-file FLEET_KEY_FILE\n"
                    "  prints the tenant's key (HKDF-SHA256 of the fleet key) for its workers'\n"
                    "  secrets.tenant_key_file; store it with mode 0600\n"
                    "       drover key zk-id DIGEST_FILE\n"
                    "  prints the ZooKeeper digest id (user:base64(sha1(user:password))) of the\n"
                    "  credentials in DIGEST_FILE, for zookeeper.acl_readers\n"
                    "       drover key worker-zk TENANT --key-file FLEET_KEY_FILE\n"
                    "  prints the ZooKeeper credentials (user:password) of the tenant's workers\n"
                    "  for their zookeeper.digest_file; store it with mode 0600\n");
    return 2;
}

/* drover key zk-id FILE */
static int zk_id(const char *path)
{
    char cred[400], id[200];
    struct drv_err err;
    if (config_read_secret("digest file", path, cred, sizeof(cred), &err) != 0) {
        fprintf(stderr, "drover key: %s\n", err.msg);
        return 1;
    }
    char *colon = strchr(cred, ':');
    int rc = 1;
    if (!colon || colon == cred)
        fprintf(stderr, "drover key: \"%s\": expected one line \"user:password\"\n", path);
    else {
        *colon = '\0';
        rc = coord_acl_digest_id(cred, colon + 1, id, sizeof(id)) == 0 ? 0 : 1;
        if (rc == 0)
            printf("%s\n", id);
    }
    OPENSSL_cleanse(cred, sizeof(cred));
    return rc;
}

int cli_key_main(int argc, char **argv)
{
    static const struct option opts[] = {{"key-file", required_argument, NULL, 'k'},
                                         {NULL, 0, NULL, 0}};
    const char *file = NULL;
    int c;
    if (argc == 3 && strcmp(argv[1], "zk-id") == 0)
        return zk_id(argv[2]);
    optind = 1;
    while ((c = getopt_long(argc, argv, "k:", opts, NULL)) != -1) {
        if (c != 'k')
            return usage();
        file = optarg;
    }
    bool zk = argc - optind == 2 && strcmp(argv[optind], "worker-zk") == 0;
    if (!file || argc - optind != 2 || (!zk && strcmp(argv[optind], "derive") != 0) ||
        !*argv[optind + 1])
        return usage();
    unsigned char fleet[32], tkey[32];
    struct drv_err err;
    if (seal_key_load("--key-file", file, fleet, &err) != 0) {
        fprintf(stderr, "drover key: %s\n", err.msg);
        return 1;
    }
    if (zk) {
        char user[128], pw[65];
        seal_worker_zk(fleet, argv[optind + 1], user, sizeof(user), pw);
        printf("%s:%s\n", user, pw);
        OPENSSL_cleanse(fleet, sizeof(fleet));
        OPENSSL_cleanse(pw, sizeof(pw));
        return fflush(stdout) == 0 ? 0 : 1;
    }
    seal_tenant_key(fleet, argv[optind + 1], tkey);
    char hex[65];
    hex_encode(tkey, 32, hex);
    printf("%s\n", hex);
    OPENSSL_cleanse(fleet, sizeof(fleet));
    OPENSSL_cleanse(tkey, sizeof(tkey));
    OPENSSL_cleanse(hex, sizeof(hex));
    return fflush(stdout) == 0 ? 0 : 1;
}
