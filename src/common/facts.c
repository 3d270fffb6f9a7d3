/*
 * facts: the key classes of a node's key-values and the merges that keep them apart
 * (facts.h has the rule and its writers).
 */
#include <stdio.h>
#include <string.h>

#include "facts.h"

static const char *const fact_keys[] = {FACTS_KEYS, NULL};
static const char *const part_keys[] = {FACTS_PARTS, NULL};

static bool listed(const char *const *list, const char *key)
{
    for (const char *const *k = list; *k; k++)
        if (strcmp(*k, key) == 0)
            return true;
    return false;
}

bool facts_is_fact(const char *key)
{
    return key && listed(fact_keys, key);
}

bool facts_is_reserved(const char *key)
{
    return key && (listed(fact_keys, key) || listed(part_keys, key));
}

const char *facts_first_reserved(const json_t *o)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (facts_is_reserved(k))
            return k;
    }
    return NULL;
}

void facts_split(const json_t *flat, json_t **facts, json_t **values)
{
    *facts = json_object();
    *values = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)flat, k, v)
    {
        if (facts_is_fact(k))
            json_object_set(*facts, k, v);
        else if (!facts_is_reserved(k))
            json_object_set(*values, k, v);
    }
}

static void note(char *first, size_t n, size_t count, const char *k)
{
    if (first && n && count == 0)
        snprintf(first, n, "%s", k);
}

size_t facts_drop_reserved(json_t *o, char *first, size_t n)
{
    if (first && n)
        first[0] = '\0';
    size_t count = 0;
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, k, v)
    {
        if (!facts_is_reserved(k))
            continue;
        note(first, n, count++, k);
        json_object_del(o, k);
    }
    return count;
}

size_t facts_merge_result(json_t *flat, const json_t *result, bool from_provider, char *first,
                          size_t n)
{
    if (first && n)
        first[0] = '\0';
    if (!json_is_object(flat) || !json_is_object(result))
        return 0;
    size_t count = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)result, k, v)
    {
        bool ok = !facts_is_reserved(k) || (from_provider && facts_is_fact(k));
        if (!ok) {
            note(first, n, count++, k);
            continue;
        }
        if (json_is_null(v))
            json_object_del(flat, k);
        else
            json_object_set(flat, k, v);
    }
    return count;
}
