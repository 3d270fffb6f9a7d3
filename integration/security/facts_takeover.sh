#!/usr/bin/env bash
# Issue 32's attack, on the README's stack (container nodes): a second tenant names another
# tenant's machine. Tenant demo runs a 1-node zookeeper-ensemble; tenant evil, onboarded as
# docs/operations.md says (its own admin, tenant key, ZooKeeper identity and worker), tries
# to make the fleet act on demo's node:
#
#  1. its hardware and image types' container providermap entry names demo's node by its
#     provider-id, with and without its ipaddresses (create, replace, import): 422
#     reserved-key naming the field, nothing stored;
#  2. the same entry stored before that check (written into PostgreSQL as an older build
#     kept it): evil's create makes a node of its own (another id and address), the entry's
#     keys are left out (event=reserved-key-dropped), and evil's delete deletes its own;
#  3. a node result naming demo's machine: evil's service's script writes demo's provider-id
#     and address to $DROVER_RESULT: the install fails naming the key
#     (event=result-key-refused), the rollback deletes evil's own node only.
#
# After each, demo's ZooKeeper server answers ruok in its node, whose init is the same process.
# Before the fix, step 1 stored the entity, step 2's rollback deleted demo's node (the demo
# ZooKeeper stopped answering), step 3's install succeeded and its cluster's delete took
# demo's node.
SESSION=6s
. "$DROVER_SOURCE_DIR/testlib/container.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

# Each tenant's workers have their own resources; evil's service writes what the test puts in
# evil/target.json to $DROVER_RESULT.
for t in demo evil; do cp -r "$DROVER_SOURCE_DIR/conf/catalog/resources" "$T/res-$t"; done
mkdir -p "$T/res-evil/evil"
cat > "$T/res-evil/evil/install.sh" << 'EOF'
#!/bin/bash
# A tenant's script: its result claims another tenant's machine as this node's.
cat > /dev/null
cat evil/target.json > "$DROVER_RESULT"
EOF
chmod +x "$T/res-evil/evil/install.sh"

zk_logins
ZK_DROVERD_ID=$DROVERD_ID # each tenant's workers log in with their own ZooKeeper identity
start_droverd 1 "zookeeper.digest_file = $T/zk.digest" "engine.max_failures = 1"

# onboard TENANT: the tenant, its admin (token in TOKS[TENANT]), the shipped catalogue and
# the test's own entities, a worker of its own (its key, identity, resources).
onboard() {
  local t=$1 tok
  expect 201 "$(api POST /v1/tenants "{\"name\":\"$t\"}" "$SUPER")" '' "tenant $t"
  tok=$(body_of "$(api POST /v1/users "{\"name\":\"$t-admin\",\"role\":\"admin\",\"tenant\":\"$t\"}" "$SUPER")" | jq -r .token)
  TOKS[$t]=$tok
  catalogue_json "$DROVER_SOURCE_DIR/conf/catalog" | jq -c --slurpfile extra "$T/extra.json" \
    '.services += $extra[0].services | .clustertemplates += $extra[0].clustertemplates' > "$T/catalog-$t.json"
  TOKEN=$tok expect 200 "$(TOKEN=$tok api POST /v1/import "@$T/catalog-$t.json")" '' "$t's catalogue"
  WORKER_TENANT=$t WORKER_PLUGINS=container,ssh CONCURRENCY=4 start_worker "worker-$t" \
    "worker.resources_dir = $T/res-$t" "worker.host_conf = $T/host.conf"
}
# A template of base only, and one with evil's service (its install writes the result).
tmpl() { # NAME SERVICES
  jq -cn --arg n "$1" --argjson s "$2" '{name: $n, description: "test",
    defaults: {services: $s, provider: "container", hardwaretype: "small", imagetype: "debian12", config: {}},
    compatibility: {services: $s, hardwaretypes: ["small"], imagetypes: ["debian12"]},
    constraints: {layout: {mustcoexist: [], cantcoexist: []}, services: {}, size: {min: 1, max: 3}},
    administration: {leaseduration: {initial: 0, max: 0, step: 0}}}'
}
jq -cn --argjson a "$(tmpl bare '["base"]')" --argjson b "$(tmpl claims '["base", "evil"]')" '{
  services: [{name: "evil", description: "writes a result",
    dependencies: {conflicts: [], install: {requires: ["base"], uses: []}, provides: [],
                   runtime: {requires: ["base"], uses: []}},
    provisioner: {actions: {install: {type: "shell",
      fields: {script: "evil/install.sh", data: ["evil/target.json"]}}}}}],
  clustertemplates: [$a, $b]}' > "$T/extra.json"
declare -A TOKS
onboard demo
onboard evil

# --- demo's machine: a 1-node ZooKeeper ensemble
TOKEN=${TOKS[demo]}
r=$(api POST /v1/clusters '{"name":"zk","template":"zookeeper-ensemble","nodes":1,"provider":"container"}')
expect 202 "$r" '' "demo's zookeeper-ensemble"
DCID=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
node=$(body_of "$(api GET "/v1/clusters/$DCID")" | jq -c '.nodes[0].properties')
VID=$(jq -r '."provider-id"' <<< "$node")
VADDR=$(jq -r .ipaddresses.access_v4 <<< "$node")
VINIT=$(lxc-info -P "$CT_ROOT" -n "$VID" -pH)
[ -n "$VINIT" ] || fail "demo's node $VID is not running"
demo_answers() { # WHAT: demo's server answers ruok, its init the same process
  local said
  said=$(ct_four "$VID" "$VADDR" ruok)
  [ "$said" = imok ] || fail "$1: demo's ZooKeeper on $VADDR ($VID) says \"$said\", not imok"
  [ "$(lxc-info -P "$CT_ROOT" -n "$VID" -pH 2> /dev/null)" = "$VINIT" ] ||
    fail "$1: demo's node $VID was restarted or is gone"
}
demo_answers "before the attacks"
pass "demo's node $VID on $VADDR answers imok"
TOKEN=${TOKS[evil]}

# --- 1. the providermap entry names demo's machine
stolen() { # ENTRY-EXTRA: evil's hardware type "stolen" with the extra keys in its entry
  jq -cn --argjson x "$1" '{name: "stolen", providermap: {container: ({flavor: "container",
    cpus: "1", memory: "512M"} + $x)}}'
}
id_only=$(jq -cn --arg id "$VID" '{"provider-id": $id}')
with_ip=$(jq -cn --arg id "$VID" --arg a "$VADDR" '{"provider-id": $id, ipaddresses: {access_v4: $a, bind_v4: $a}}')
ip_only=$(jq -cn --arg a "$VADDR" '{ipaddresses: {access_v4: $a, bind_v4: $a}, ssh_host_key: "SHA256:x"}')
expect 422 "$(api POST /v1/hardwaretypes "$(stolen "$id_only")")" \
  '.error.code == "reserved-key" and .error.field == "providermap.container.provider-id"' "provider-id"
expect 422 "$(api POST /v1/hardwaretypes "$(stolen "$with_ip")")" \
  '.error.code == "reserved-key" and .error.field == "providermap.container.provider-id"' "provider-id and ipaddresses"
expect 422 "$(api POST /v1/hardwaretypes "$(stolen "$ip_only")")" \
  '.error.code == "reserved-key" and .error.field == "providermap.container.ipaddresses" and
   (.error.message | contains("written by its provider only"))' "ipaddresses"
expect 422 "$(api PUT /v1/hardwaretypes/small "$(stolen "$with_ip" | jq -c '.name = "small"')")" \
  '.error.field == "providermap.container.provider-id"' "replace small"
imp=$(jq -cn --argjson x "$with_ip" '{imagetypes: [{name: "img2", providermap: {container: ({image: "debian12"} + $x)}}]}')
expect 422 "$(api POST /v1/import "$imp")" '.error.field == "imagetypes[0].providermap.container.provider-id"' "import"
expect 404 "$(api GET /v1/hardwaretypes/stolen)" '' "nothing stored"
expect 200 "$(api GET /v1/hardwaretypes/small)" '.providermap.container | has("provider-id") | not' "small unchanged"
demo_answers "after step 1"
pass "1. a providermap entry naming demo's machine (with or without its addresses): 422 reserved-key, nothing stored"

# --- 2. the same entry as an older build stored it: the engine leaves it out
psql_q "UPDATE entities SET body = jsonb_set(body, '{providermap,container}',
  (body->'providermap'->'container') || '$with_ip'::jsonb)
  WHERE tenant_id = (SELECT id FROM tenants WHERE name = 'evil') AND kind = 'hardwaretype'
  AND name = 'small' AND deleted_at IS NULL" > /dev/null
r=$(api POST /v1/clusters '{"name":"grab","template":"bare","nodes":1,"provider":"container"}')
expect 202 "$r" '' "evil's create with the stored entry"
ECID=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
enode=$(body_of "$(api GET "/v1/clusters/$ECID")" | jq -c '.nodes[0].properties')
[ "$(jq -r '."provider-id"' <<< "$enode")" != "$VID" ] || fail "evil's node is demo's machine: $enode"
[ "$(jq -r .ipaddresses.access_v4 <<< "$enode")" != "$VADDR" ] || fail "evil's node has demo's address: $enode"
grep -qE 'event=reserved-key-dropped .* keys=2 first="small.providermap.container.(provider-id|ipaddresses)"' "$T/droverd-1.log" ||
  fail "droverd did not log the dropped keys"
demo_answers "after evil's create"
r=$(api DELETE "/v1/clusters/$ECID")
expect 202 "$r" '' "evil's delete"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
demo_answers "after evil's delete"
pass "2. the entry stored by an older build: evil's node is its own ($(jq -r '."provider-id"' <<< "$enode")), keys dropped and logged; its delete leaves demo's"
psql_q "UPDATE entities SET body = jsonb_set(body, '{providermap,container}',
  (body->'providermap'->'container') - 'provider-id' - 'ipaddresses')
  WHERE tenant_id = (SELECT id FROM tenants WHERE name = 'evil') AND kind = 'hardwaretype'
  AND name = 'small'" > /dev/null

# --- 3. a node's own result names demo's machine
jq -cn --arg id "$VID" --arg a "$VADDR" \
  '{"provider-id": $id, ipaddresses: {access_v4: $a, bind_v4: $a}}' > "$T/res-evil/evil/target.json"
r=$(api POST /v1/clusters '{"name":"claim","template":"claims","nodes":1,"provider":"container"}')
expect 202 "$r" '' "evil's create whose service claims demo's machine"
JID=$(body_of "$r" | jq -r .job.id)
wait_job "$JID" rolled-back 300
err=$(job_field "$JID" .error)
case $err in *'result key "provider-id" is reserved'*) ;; *) fail "the job's error does not name the key: $err" ;; esac
grep -q 'event=result-key-refused' "$T/worker-evil.log" || fail "the worker did not log the refused result"
[ -z "$(find "$CT_ROOT" -mindepth 1 -maxdepth 1 -name 'ct-*' ! -name "$VID")" ] ||
  fail "evil's node is left: $(ls "$CT_ROOT")"
demo_answers "after the refused result and its rollback"
pass "3. a node result naming demo's machine: \"$err\"; evil's node rolled back, demo's answers"
pass "a second tenant naming demo's container: refused at each step, demo's ZooKeeper still answers"
