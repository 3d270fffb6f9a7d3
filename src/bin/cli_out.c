/*
 * cli_out: the helpers the `drover` subcommands share (cli_int.h): cells,
 * tables and JSON for output, one API call with its failure told, and
 * taking options out of argv. Single-threaded, like the rest of the client.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "cli.h"
#include "cli_int.h"

const char *cli__str(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    static char buf[8][64];
    static int i;
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        i = (i + 1) % 8;
        snprintf(buf[i], sizeof(buf[i]), "%lld", (long long)json_integer_value(v));
        return buf[i];
    }
    if (json_is_real(v)) {
        i = (i + 1) % 8;
        snprintf(buf[i], sizeof(buf[i]), "%.3g", json_real_value(v));
        return buf[i];
    }
    if (json_is_true(v))
        return "true";
    if (json_is_false(v))
        return "false";
    return "-";
}

void cli__print_json(const json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    printf("%s\n", s ? s : "null");
    free(s);
}

static bool is_time_column(const char *col)
{
    size_t n = strlen(col);
    return strcmp(col, "at") == 0 || (n > 3 && strcmp(col + n - 3, "_at") == 0);
}

/* The cell of row r, column c: the text, or a time reformatted into buf. */
static const char *cell(const json_t *r, const char *col, char *buf, size_t n)
{
    const char *v = cli__str(r, col);
    if (is_time_column(col) && strcmp(v, "-") != 0)
        return cli_fmt_time(v, buf, n);
    return v;
}

void cli__table(const json_t *items, const char *const *cols)
{
    size_t ncols = 0, w[16] = {0};
    while (cols[ncols] && ncols < 16)
        ncols++;
    for (size_t c = 0; c < ncols; c++)
        w[c] = strlen(cols[c]);
    size_t i;
    json_t *r;
    char buf[64];
    json_array_foreach(items, i, r) for (size_t c = 0; c < ncols; c++)
    {
        size_t l = strlen(cell(r, cols[c], buf, sizeof(buf)));
        if (l > w[c])
            w[c] = l > 60 ? 60 : l;
    }
    for (size_t c = 0; c < ncols; c++) {
        for (const char *p = cols[c]; *p; p++)
            putchar(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        printf("%*s", c + 1 < ncols ? (int)(w[c] - strlen(cols[c]) + 2) : 0, "");
    }
    putchar('\n');
    json_array_foreach(items, i, r)
    {
        for (size_t c = 0; c < ncols; c++)
            printf("%-*.60s%s", c + 1 < ncols ? (int)w[c] : 0, cell(r, cols[c], buf, sizeof(buf)),
                   c + 1 < ncols ? "  " : "");
        putchar('\n');
    }
}

int cli__call(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
              json_t **out)
{
    int st = cli_call(o, method, path, body, out, NULL);
    if (st < 0)
        return 1;
    if (st >= 400) {
        int rc = cli_api_error(st, *out);
        json_decref(*out);
        *out = NULL;
        return rc;
    }
    return 0;
}

const char *cli__flag(int *argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < *argc; i++)
        if (strcmp(argv[i], name) == 0) {
            const char *v = argv[i + 1];
            for (int j = i; j + 2 <= *argc; j++)
                argv[j] = argv[j + 2];
            *argc -= 2;
            return v;
        }
    return NULL;
}

bool cli__switch(int *argc, char **argv, const char *name)
{
    for (int i = 1; i < *argc; i++)
        if (strcmp(argv[i], name) == 0) {
            for (int j = i; j + 1 <= *argc; j++)
                argv[j] = argv[j + 1];
            *argc -= 1;
            return true;
        }
    return false;
}

int cli__parse_int(const char *s, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end)
        return -1;
    *out = v;
    return 0;
}

char *cli__uri_encode(const char *s)
{
    return evhttp_uriencode(s, -1, 0);
}
