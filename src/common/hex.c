/* hex: see hex.h. */
#include "hex.h"

#include <ctype.h>
#include <string.h>

#include "error.h"

void hex_encode(const void *data, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static unsigned nibble(unsigned char c)
{
    return isdigit(c) ? (unsigned)(c - '0') : (unsigned)(tolower(c) - 'a' + 10);
}

int hex_decode(const char *s, unsigned char *out, size_t max, size_t *n)
{
    size_t len = strlen(s);
    if (len % 2 || len / 2 > max)
        return DRV_EINVAL;
    for (size_t i = 0; i < len / 2; i++) {
        unsigned char hi = (unsigned char)s[2 * i], lo = (unsigned char)s[2 * i + 1];
        if (!isxdigit(hi) || !isxdigit(lo))
            return DRV_EINVAL;
        out[i] = (unsigned char)(nibble(hi) << 4 | nibble(lo));
    }
    *n = len / 2;
    return 0;
}
