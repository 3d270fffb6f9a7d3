/*
 * drover-test-keygen: write a new cluster-style key pair for tests.
 *
 *   drover-test-keygen FILE [COMMENT]   writes FILE (private, 0600) and FILE.pub
 *
 * The keys come from sshkey_generate(), the function the engine calls when a
 * cluster is created, so tests exercise the same keys a real cluster gets.
 */
#include <stdio.h>
#include <string.h>

#include "plugin.h"
#include "sshkey.h"
#include "xalloc.h"

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: drover-test-keygen FILE [COMMENT]\n");
        return 2;
    }
    struct sshkey_pair kp;
    struct drv_err err;
    if (sshkey_generate(argc == 3 ? argv[2] : "drover-test", &kp, &err) != 0) {
        fprintf(stderr, "drover-test-keygen: %s\n", err.msg);
        return 1;
    }
    char *pub = xasprintf("%s.pub", argv[1]);
    char *line = xasprintf("%s\n", kp.public_line);
    int rc = plugin_write_file(argv[1], kp.private_pem, strlen(kp.private_pem), 0600, &err);
    if (rc == 0)
        rc = plugin_write_file(pub, line, strlen(line), 0644, &err);
    if (rc != 0)
        fprintf(stderr, "drover-test-keygen: %s\n", err.msg);
    free(pub);
    free(line);
    sshkey_pair_clear(&kp);
    return rc ? 1 : 0;
}
