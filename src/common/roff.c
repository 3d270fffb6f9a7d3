/* roff: see roff.h. */
#include "roff.h"

void roff_text(FILE *f, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
    }
}

void roff_para(FILE *f, const char *s)
{
    fputs(".PP\n", f);
    roff_text(f, s);
    fputc('\n', f);
}
