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
    CONFIG_KEY("a.string", CONFIG_STRING, struct fz, s, .deflt = "", .help = "s"),
    CONFIG_KEY("a.addr", CONFIG_ADDR, struct fz, addr, .deflt = "127.0.0.1:1", .help = "addr"),
    CONFIG_KEY("a.level", CONFIG_ENUM, struct fz, level, .deflt = "info", .choices = "debug|info",
               .help = "level"),
    CONFIG_KEY("a.int", CONFIG_INT, struct fz, n, .deflt = "1", .min = -100, .max = 100,
               .help = "n"),
    CONFIG_KEY("a.ms", CONFIG_DURATION, struct fz, ms, .deflt = "1s", .min = 0, .max = 3600000,
               .help = "ms"),
    CONFIG_KEY("a.size", CONFIG_SIZE, struct fz, bytes, .deflt = "1k", .min = 0, .max = 1L << 40,
               .help = "bytes"),
    CONFIG_KEY("a.flag", CONFIG_BOOL, struct fz, flag, .deflt = "false", .help = "flag"),
    CONFIG_END,
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
