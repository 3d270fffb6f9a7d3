/*
 * facts: which writer owns which key of a node (docs/security.md "Three writers").
 *
 * A task's plugin acts on values from three writers:
 *
 *   - the operator (and the worker it configures): host programs, paths, address and id
 *     ranges (worker.provider_settings, worker.host_conf). Never a node key.
 *   - the provider: the facts of a machine it made, FACTS_KEYS below (its id, addresses,
 *     host key, hostname, login user and port). Written only from the results of the
 *     provider plugin's own tasks for that node (create, confirm, delete).
 *   - the tenant: its hardware and image types' providermap entries, and the results of
 *     every other task of its node (automators: the scripts of its services).
 *
 * A node's key-values are kept as one object (the engine's props, nodes.properties in
 * PostgreSQL, the nodes map) in which the fact keys are written by the provider only:
 * every other writer is refused a reserved key (a fact's, or a part of the task's
 * config that the engine or the worker writes: cluster, provider, ssh, ...). So in
 * every copy the fact keys are facts, and a task carries them apart (taskmsg.h item
 * "facts", the plugin's config.facts). Who refuses: the API (an entity's providermap
 * entry, 422 "reserved-key"), the worker (an automator's result: the task fails,
 * event=result-key-refused), the engine (a result merged: event=result-key-refused;
 * a providermap entry stored before the rule: dropped).
 *
 * Pure; any thread. Keys are compared exactly.
 */
#ifndef DROVER_FACTS_H
#define DROVER_FACTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The facts a provider reports of a machine, and the parts of a task's config. */
#define FACTS_KEYS                                                                                 \
    "provider-id", "hostname", "ipaddresses", "ssh_host_key", "ssh_host_key_type", "ssh_user",     \
        "ssh_port", "node_hostname", "node_root"
#define FACTS_PARTS                                                                                \
    "clustername", "cluster", "provider", "ssh", "service", "nodes", "facts", "hardwaretype",      \
        "imagetype", "services"

/* A fact of a machine: written by its provider only. */
bool facts_is_fact(const char *key);
/* A fact or a part of the task's config: no tenant value may name it. */
bool facts_is_reserved(const char *key);
/* The first reserved key of object o (in its order), or NULL; borrowed from o. */
const char *facts_first_reserved(const json_t *o);

/*
 * A node's key-values split by writer: *facts gets the fact keys, *values the keys that
 * are not reserved (a reserved part is in neither). New objects; flat is not changed
 * (NULL or not an object: two empty objects).
 */
void facts_split(const json_t *flat, json_t **facts, json_t **values);

/*
 * Remove the reserved keys of o (an object) in place. Returns how many; the first one's
 * name goes to first (n bytes, "" when none) when first is not NULL.
 */
size_t facts_drop_reserved(json_t *o, char *first, size_t n);

/*
 * Merge a task's result into a node's key-values (flat, an object): a null value deletes
 * the key. from_provider: the result is a provider task's of this node, whose fact keys
 * apply; otherwise a fact key is refused. A part of the config is refused from anyone.
 * Refused keys change nothing; returns how many were refused, the first one's name in
 * first (n bytes, "" when none). Returns 0 with nothing changed when result is not an
 * object.
 */
size_t facts_merge_result(json_t *flat, const json_t *result, bool from_provider, char *first,
                          size_t n);

#endif
