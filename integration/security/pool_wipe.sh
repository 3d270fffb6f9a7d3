#!/usr/bin/env bash
# Attack (issue 32, the wipe script from a tenant): the ssh-pool provider runs its
# wipe_script on a host before the host goes back to the pool, where the next node, maybe
# another tenant's, gets it. The script came from the tenant's entity (a path in the tenant's
# resources), so a tenant could leave a backdoor on a shared host.
# Expected (docs/security.md "Pools of existing hosts"): wipe_script is the operator's, a host
# field: a tenant's provider that sets it is refused (422 host-field naming it) on create,
# replace and import, and nothing is stored; an entity that carries one anyway (written
# before this check, by an older droverd) does not pass it on: the worker drops it from the
# task and gives the operator's (worker.provider_settings). The plugin here is a probe with
# ssh-pool's own descriptor, which reports the wipe_script it was given.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
setup_tenant # acme, $TOKEN its admin

# 1. The API: refused, nothing stored.
pool() { jq -cn --argjson p "$1" '{name: "rack", providertype: "ssh-pool", provisioner: $p}'; }
expect 422 "$(api POST /v1/providers "$(pool '{"wipe_script": "/tmp/backdoor.sh"}')")" \
  '.error.code == "host-field" and .error.field == "provisioner.wipe_script"' \
  "attack succeeded? a tenant's ssh-pool provider with wipe_script"
expect 404 "$(api GET /v1/providers/rack)" '' "the refused provider"
expect 201 "$(api POST /v1/providers "$(pool '{}')")" '' "an ssh-pool provider without wipe_script"
expect 422 "$(api PUT /v1/providers/rack "$(pool '{"wipe_script": "pool/wipe.sh"}')")" \
  '.error.field == "provisioner.wipe_script"' "replace with wipe_script"
imp=$(jq -cn '{providers: [{name: "ok", providertype: "ssh-pool", provisioner: {}},
  {name: "evil", providertype: "ssh-pool", provisioner: {wipe_script: "pool/wipe.sh"}}]}')
expect 422 "$(api POST /v1/import "$imp")" '.error.field == "providers[1].provisioner.wipe_script"' \
  "import with wipe_script"
expect 404 "$(api GET /v1/providers/ok)" '' "the import's good provider (nothing partly written)"
body_of "$(api GET /v1/providers/rack)" | jq -e '.provisioner | has("wipe_script") | not' > /dev/null ||
  fail "the replace wrote wipe_script: $(body_of "$(api GET /v1/providers/rack)")"
pass "a tenant's wipe_script is refused (422 host-field) on create, replace and import; nothing stored"

# 2. The worker: an entity that carries one anyway.
P="$T/wplugins"
mkdir -p "$P/noop" "$P/ssh-pool"
cp "$DROVER_BUILD_DIR/plugins/noop/plugin.json" "$P/noop/"
jq '.executable = "probe.sh" | .wants = []' "$DROVER_BUILD_DIR/plugins/ssh-pool/plugin.json" > "$P/ssh-pool/plugin.json"
cat > "$P/ssh-pool/probe.sh" << 'SH'
#!/bin/sh
in=$(cat)
case $(printf '%s' "$in" | jq -r .taskName) in
confirm) echo '{"status":"ok","result":{"hostname":"h.invalid","ipaddresses":{"access_v4":"192.0.2.5"}}}' ;;
*) printf '%s' "$in" | jq -c '{status: "ok", result: {"provider-id": "pool:rack:h1",
     wipe: (.config.provider.wipe_script // "none")}}' ;;
esac
SH
chmod 755 "$P" "$P"/* "$P/ssh-pool/probe.sh"
printf '#!/bin/sh\n: the operator wipes\n' > "$T/operator-wipe.sh"
jq -n --arg w "$T/operator-wipe.sh" '{"ssh-pool": {wipe_script: $w}}' > "$T/provider-settings.json"
write_worker_conf w1 "worker.tenant = acme" "worker.plugin_dir = $P" "worker.privileged_plugins =" \
  "worker.provider_settings = $T/provider-settings.json" "secrets.tenant_key_file = $(tenant_key_file acme)"
start_proc w1 "$BIN/drover-worker"
# The catalogue's provider "fake" as an ssh-pool provider, then its stored body given a
# wipe_script as an older droverd kept it.
catalogue_json "$CATALOG" | jq '.providers |= map(.providertype = "ssh-pool" | .provisioner = {})' > "$T/cat.json"
expect 200 "$(api POST /v1/import "@$T/cat.json")" '' "the catalogue with an ssh-pool provider"
psql_q "UPDATE entities SET body = jsonb_set(body, '{provisioner,wipe_script}', '\"/tmp/backdoor.sh\"')
        WHERE kind = 'provider' AND name = 'fake'" > /dev/null
[ "$(psql_q "SELECT count(*) FROM entities WHERE kind = 'provider' AND name = 'fake' AND body->'provisioner' ? 'wipe_script'")" -ge 1 ] ||
  fail "could not give the stored provider a wipe_script"
r=$(api POST /v1/clusters '{"name": "w1", "template": "single", "nodes": 1}')
expect 202 "$r" '' "the cluster"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 120
got=$(body_of "$(api GET "/v1/clusters/$(body_of "$r" | jq -r .cluster.id)")" | jq -r '.nodes[0].properties.wipe')
[ "$got" = "$T/operator-wipe.sh" ] ||
  fail "attack succeeded: the plugin was given wipe_script \"$got\", not the operator's $T/operator-wipe.sh"
pass "a wipe_script an older entity carries is dropped by the worker: the plugin got the operator's"
