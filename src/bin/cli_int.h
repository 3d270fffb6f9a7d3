/*
 * cli_int: helpers the `drover` subcommands share (cli_out.c). Internal to
 * src/bin: the module's public header is cli.h.
 */
#ifndef DROVER_CLI_INT_H
#define DROVER_CLI_INT_H

#include <stdbool.h>

#include <jansson.h>

#include "cli_http.h"

/*
 * o[k] as text for a table cell: strings as they are, numbers and booleans
 * printed, "-" when absent. Numbers are printed into one of 8 rotating
 * static buffers: use the result before 8 more calls.
 */
const char *cli__str(const json_t *o, const char *k);

/* j as indented JSON with sorted keys, and a newline. */
void cli__print_json(const json_t *j);

/*
 * Rows of items (an array of objects) as a table of the given columns (NULL
 * ended): headers are the keys upper-cased, cells cut at 60 characters. A
 * column named "at" or ending in "_at" holds a time and prints as ISO-8601
 * (cli_fmt_time).
 */
void cli__table(const json_t *items, const char *const *cols);

/*
 * One API call: 0 with the reply in *out (the caller's; NULL for an empty
 * body), or 1 once the failure has been told on stderr (*out NULL).
 */
int cli__call(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
              json_t **out);

/* Take "--flag VALUE" out of argv; the value, or NULL when absent. */
const char *cli__flag(int *argc, char **argv, const char *name);

/* Take a "--switch" out of argv; whether it was there. */
bool cli__switch(int *argc, char **argv, const char *name);

/* s as a whole decimal number into *out: 0, or -1 (nothing stored). */
int cli__parse_int(const char *s, long *out);

/* s percent-encoded for a URL's path or query (caller frees). */
char *cli__uri_encode(const char *s);

/* ---- readable views (cli_view.c) ---- */

/* An object as "key: value" lines, nested objects indented, lists joined with ", ". */
void cli__show_object(const json_t *o, int indent);

/* GET /v1/clusters/{id}: headline, config, and the nodes as a table. */
void cli__show_cluster(const json_t *c);

/*
 * GET /v1/workers as a table: id, host, classes, state, start and the task
 * each runs now (read from the tenant's unfinished jobs, at most 20 of them).
 */
void cli__show_workers(const struct cli_opts *o, const json_t *reply);

#endif
