/*
 * fuzz_config: the config file parser on arbitrary bytes.
 *
 * Every input must either load or be refused with DRV_EINVAL and a message
 * that names the file; nothing may crash, leak or read out of bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
    char *s;
    char *addr;
    char *level;
    long n, ms, bytes;
    int flag;
};

static const struct config_key keys[] = {
    {"a.string", CONFIG_STRING, offsetof(struct fz, s), 0, "", 0, 0, NULL, "s"},
    {"a.addr", CONFIG_ADDR, offsetof(struct fz, addr), 0, "127.0.0.1:1", 0, 0, NULL, "addr"},
    {"a.level", CONFIG_ENUM, offsetof(struct fz, level), 0, "info", 0, 0, "debug|info", "level"},
    {"a.int", CONFIG_INT, offsetof(struct fz, n), 0, "1", -100, 100, NULL, "n"},
    {"a.ms", CONFIG_DURATION, offsetof(struct fz, ms), 0, "1s", 0, 3600000, NULL, "ms"},
    {"a.size", CONFIG_SIZE, offsetof(struct fz, bytes), 0, "1k", 0, 1L << 40, NULL, "bytes"},
    {"a.flag", CONFIG_BOOL, offsetof(struct fz, flag), 0, "false", 0, 0, NULL, "flag"},
    {NULL, 0, 0, 0, NULL, 0, 0, NULL, NULL},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = xstrndup((const char *)data, size);
    struct fz c;
    memset(&c, 0, sizeof(c));
    struct drv_err e;
    drv_err_clear(&e);
    int rc = config_load_string("fuzz.conf", text, keys, &c, &e);
    if (rc != 0 && (rc != DRV_EINVAL || strncmp(e.msg, "fuzz.conf", 9) != 0))
        abort();
    config_free(keys, &c);
    free(text);
    return 0;
}
