/*
 * hostfields: what a tenant's provider entity may not say (issue 20, docs/security.md
 * "The host boundary").
 *
 * A provider entity is the tenant admin's; the worker that runs its tasks is the
 * operator's. Fields that name host programs, host paths or address ranges of the
 * workers' hosts (the loopback provider's root, network, port, sshd and unshare), or
 * that act on what other tenants get next (ssh-pool's shared and wipe_script) are
 * the operator's to set, in the workers' worker.provider_settings (sandbox.c); a
 * tenant entity that sets one is refused with 422 "host-field" naming it. The check
 * looks at the field's name only, never at the path it names, so the answer says
 * nothing about the host (no oracle of which paths exist or are executable).
 *
 * The loopback provider gives root on the workers' hosts by design: a provider entity
 * of providertype "loopback" is refused (422 "provider-not-allowed", field
 * "providertype") unless droverd's api.loopback_tenants names the tenant (or is "*").
 *
 * The table below mirrors the "host": true fields of the shipped descriptors
 * (plugins/<name>/plugin.json); the worker drops those again before a task runs.
 * Pool-thread code, pure: no state.
 */
#include <string.h>

#include "api_int.h"
#include "handlers.h"

struct host_fields {
    const char *providertype;
    const char *const fields[8];
};

static const struct host_fields host_fields[] = {
    {"loopback", {"root", "network", "port", "sshd", "unshare", NULL}},
    /* shared: an operator's pool; wipe_script: a program run on hosts other tenants get
       next (issue 32): worker.provider_settings only */
    {"ssh-pool", {"shared", "wipe_script", NULL}},
};

bool api__loopback_allowed(const struct api_opts *o, const char *tenant)
{
    const char *list = o->loopback_tenants ? o->loopback_tenants : "";
    size_t tl = strlen(tenant);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if ((n == 1 && *p == '*') || (n == tl && tl && strncmp(p, tenant, n) == 0))
            return true;
        p += n;
    }
    return false;
}

int api__provider_policy(struct call *c, const json_t *provider, const char *where)
{
    const char *type = json_string_value(json_object_get(provider, "providertype"));
    const json_t *prov = json_object_get(provider, "provisioner");
    char field[200];
    if (!type)
        return 0;
    if (strcmp(type, "loopback") == 0 && !api__loopback_allowed(c->opts, c->who.tenant)) {
        snprintf(field, sizeof(field), "%s%sprovidertype", where, *where ? "." : "");
        return call_fail(c, 422, "provider-not-allowed", field,
                         "field \"%s\": providertype \"loopback\" runs machines as root on the "
                         "workers' hosts and is not enabled for tenant \"%s\" (the operator "
                         "enables it in droverd's api.loopback_tenants)",
                         field, c->who.tenant);
    }
    for (size_t i = 0; i < sizeof(host_fields) / sizeof(host_fields[0]); i++) {
        if (strcmp(host_fields[i].providertype, type) != 0)
            continue;
        for (const char *const *f = host_fields[i].fields; *f; f++) {
            if (!json_object_get(prov, *f))
                continue;
            snprintf(field, sizeof(field), "%s%sprovisioner.%s", where, *where ? "." : "", *f);
            return call_fail(c, 422, "host-field", field,
                             "field \"%s\": names a host program, path or address range of the "
                             "workers' hosts; only the operator sets it (the workers' "
                             "worker.provider_settings)",
                             field);
        }
    }
    return 0;
}
