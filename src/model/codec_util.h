/*
 * codec_util: helpers shared by the model's JSON codecs (internal).
 *
 * A struct model__pctx carries what an error message needs: the entity kind,
 * its name once known, and the error out-parameter. Every helper that fails
 * fills the error as `<kind> "<name>": field "<path>": expected <what>`.
 */
#ifndef DROVER_MODEL_CODEC_UTIL_H
#define DROVER_MODEL_CODEC_UTIL_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "model.h"

struct model__pctx {
    const char *kind;
    const char *name; /* NULL until parsed */
    struct drv_err *err;
};

int model__fail(struct model__pctx *p, const char *field, const char *expected);
/* Object member key of o (o may be NULL); absent and JSON null both give NULL. */
json_t *model__member(const json_t *o, const char *key);
/* String field: required fails when absent; optional gives def (copied, may be NULL). */
int model__str(struct model__pctx *p, const json_t *o, const char *key, const char *path,
               bool required, const char *def, char **out);
/* Array of strings (absent or null: empty). */
int model__strlist(struct model__pctx *p, const json_t *v, const char *path,
                   struct model_strlist *out);
/* An object (absent or null: new empty object when make_empty, else NULL). */
int model__object(struct model__pctx *p, const json_t *o, const char *key, const char *path,
                  bool make_empty, json_t **out);
/* Non-negative integer from a number or a numeric string; absent gives -1. */
int model__count(struct model__pctx *p, const json_t *v, const char *path, int *out);
/* Copy of o without the listed keys (NULL-terminated); NULL when nothing is left. */
json_t *model__extra(const json_t *o, const char *const *known);
void model__strlist_free(struct model_strlist *l);
void model__strlist_copy(struct model_strlist *dst, const struct model_strlist *src);
/* Append s (copied) when not yet present. */
void model__strlist_add_unique(struct model_strlist *l, const char *s);
json_t *model__strlist_json(const struct model_strlist *l);
/* Merge extra members (unknown fields) into o. */
void model__put_extra(json_t *o, const json_t *extra);

#endif
