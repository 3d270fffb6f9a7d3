/*
 * fault: DROVER_FAULT's parser (fault.h has the grammar). Pure but for getenv.
 */
#include "fault.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

char *fault_arg_in(const char *spec, const char *name)
{
    size_t nl = strlen(name);
    const char *p = spec;
    while (p && *p) {
        size_t len = strcspn(p, ",");
        if (len >= nl && strncmp(p, name, nl) == 0 && (len == nl || p[nl] == ':' || p[nl] == '=')) {
            size_t off = len == nl ? nl : nl + 1;
            return xstrndup(p + off, len - off);
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return NULL;
}

char *fault_arg(const char *name)
{
    return fault_arg_in(getenv("DROVER_FAULT"), name);
}

unsigned fault_every(char *arg, unsigned dflt)
{
    char *colon = arg ? strrchr(arg, ':') : NULL;
    if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
        strlen(colon + 1) > 7)
        return dflt;
    unsigned long n = strtoul(colon + 1, NULL, 10);
    if (n < 1 || n > 1000000)
        return dflt;
    *colon = '\0';
    return (unsigned)n;
}
