/*
 * cli_plan: what `drover cluster OP` shows before and after it applies: the
 * plan of an operation as a readable diff (--dry-run), the apply of exactly
 * that plan (--yes, or a prompt on a terminal), the online preview's summary,
 * and the note that says what a deprecated --nodes did.
 *
 * Output goes to stdout (the plan) and stderr (notes, prompts); colour only
 * when stdout is a terminal and NO_COLOR is unset. Exit statuses as every
 * drover command: 0 ok, 1 API error or declined, 2 usage.
 */
#ifndef DROVER_CLI_PLAN_H
#define DROVER_CLI_PLAN_H

#include <jansson.h>
#include <stdbool.h>

#include "cli_http.h"

/*
 * After an accepted expand or shrink whose body counted nodes ("nodes", the
 * deprecated --nodes): say on stderr what it did and how to ask for a target,
 * "drover: --nodes is deprecated (it counts nodes to add): adding 4 nodes:
 * 3 -> 7; say --to 7". reply is the API's 202 answer; verb the operation.
 */
void cli_plan_scale_note(const char *verb, const json_t *body, const json_t *reply);

/*
 * --dry-run / --yes for an operation: POST body with "dry_run": true to path,
 * print the plan; then, with yes, or after a "yes" typed on a terminal when
 * ask, POST it again with "plan_revision" set to the plan's revision (409 if
 * the cluster changed in between). body is borrowed (changed in place).
 * Returns the exit status.
 */
int cli_plan_run(const struct cli_opts *o, const char *path, json_t *body, bool yes, bool ask);

/* A plan answer (a dry run's) for people: the diff with +, - and ~, the DAG's summary, the
 * rollback. */
void cli_plan_print(const json_t *plan, bool colour);

/* `drover preview`'s answer (POST /v1/plans) for people: the layout and the plan's summary;
 * with stages, the plan's stages as text. */
void cli_plan_preview_print(const json_t *reply, bool stages);

#endif
