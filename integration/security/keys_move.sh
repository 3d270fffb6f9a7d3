#!/usr/bin/env bash
# Sealed values bound to their place (docs/security.md, "Sealed values"): a hostile tenant's
# attacks on another tenant's secrets, and their next variants, each refused with a clear
# error and no plaintext anywhere (API answers, job messages, logs, the database):
#   A1 input that looks sealed: another tenant's sealed value (read from ZooKeeper or a
#      backup) sent as a provider field, a nested field or a cluster config value -> 422
#      sealed-input naming the field, nothing stored;
#   A2 a sealed value copied between tenants behind the API's back (a database write): the
#      worker refuses to open it, the job fails, the other tenant's secret is nowhere;
#   A3 between two fields of one tenant (the provider's password into a field the plugin
#      echoes): refused, the password is nowhere;
#   A4 between two entities of one tenant (provider fake's password into fake2's): refused.
# A worker holds its tenant's key only: one configured with the fleet key does not start.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
start_worker worker-a
setup_tenant # acme, its admin in $TOKEN, provider fake with api_password s3cret-provider-password
ACME=$TOKEN
expect 201 "$(api POST /v1/tenants '{"name":"globex"}' "$SUPER")" '' "tenant globex"
GLOBEX=$(body_of "$(api POST /v1/users '{"name":"gus","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)
catalogue_json "$CATALOG" | jq -c '.providers[0].provisioner.api_password = "globex-PLAIN-7781"' > "$T/globex.json"
expect 200 "$(api POST /v1/import "@$T/globex.json" "$GLOBEX")" '' "globex's catalogue"
sealed_of() { # TENANT PROVIDER FIELD: the stored sealed value
  psql_q "SELECT e.body->'provisioner'->>'$3' FROM entities e JOIN tenants t ON t.id = e.tenant_id
          WHERE t.name = '$1' AND e.kind = 'provider' AND e.name = '$2' ORDER BY version DESC LIMIT 1"
}
G_PW=$(sealed_of globex fake api_password)
A_PW=$(sealed_of acme fake api_password)
[[ $G_PW == enc:v2:* && $A_PW == enc:v2:* ]] || fail "passwords not sealed: $G_PW $A_PW"

# A1: input that looks sealed is refused wherever it is, naming the field.
prov=$(body_of "$(api GET /v1/providers/fake "" "$ACME")")
for f in .provisioner.api_password .provisioner.region .description; do
  body=$(jq -c --arg v "$G_PW" "$f = \$v" <<< "$prov")
  expect 422 "$(api PUT /v1/providers/fake "$body" "$ACME")" \
    ".error.code == \"sealed-input\" and .error.field == \"${f#.}\"" "A1: $f that looks sealed"
done
[ "$(sealed_of acme fake api_password)" = "$A_PW" ] || fail "A1: a refused PUT changed the provider"
body=$(jq -cn --arg v "$G_PW" --argjson c "$(sleep_config)" '{name: "x", template: "single", nodes: 1, config: ($c + {db: {password: $v}})}')
expect 422 "$(api POST /v1/clusters "$body" "$ACME")" '.error.code == "sealed-input" and .error.field == "config.db.password"' "A1: a create's config value that looks sealed"
expect 422 "$(api POST /v1/clusters '{"name":"y","template":"single","nodes":1,"config":{"a":["enc:v1:AAAA"]}}' "$ACME")" \
  '.error.code == "sealed-input" and .error.field == "config.a[0]"' "A1: the legacy form too"
[ "$(psql_q "SELECT count(*) FROM clusters")" = 0 ] || fail "A1: a refused create left a cluster"
pass "A1: input that looks sealed gets 422 sealed-input naming the field; nothing stored"

# set_field TENANT PROVIDER FIELD VALUE: a write behind the API's back (a database write).
set_field() {
  psql_q "UPDATE entities e SET body = jsonb_set(e.body, '{provisioner,$3}', to_jsonb('$4'::text))
          FROM tenants t WHERE t.id = e.tenant_id AND t.name = '$1' AND e.kind = 'provider'
          AND e.name = '$2'" > /dev/null
}
# refused NAME PROVIDER FIELD SECRET: a cluster of acme's on PROVIDER fails, its job saying the
# value at FIELD (an extended regular expression) does not open there; SECRET is in no answer, log or table.
refused() {
  local name=$1 prov=$2 field=$3 secret=$4 body r jid msg
  body=$(jq -cn --arg n "$name" --arg p "$prov" --argjson c "$(sleep_config '{"echo":"provider.region"}')" \
    '{name: $n, template: "single", nodes: 1, provider: $p, config: $c}')
  r=$(api POST /v1/clusters "$body" "$ACME")
  expect 202 "$r" '' "create $name"
  jid=$(body_of "$r" | jq -r .job.id)
  poll_until 90 job_ended "$jid" || fail "$name: job $jid did not end"
  r=$(api GET "/v1/jobs/$jid" "" "$ACME")
  msg=$(body_of "$r" | jq -r .error)
  grep -Eq "cannot open a secret: field \"provisioner\.($field)\": sealed value does not open here" <<< "$msg" ||
    fail "$name: the job does not say why: $msg"
  grep -q "$secret" <<< "$r" && fail "$name: the secret is in the job's answer"
  grep -l "$secret" "$T"/*.log "$RUNS"/* 2> /dev/null && fail "$name: the secret is in a log"
  grep -q "$secret" <<< "$(pg_dump "$DROVER_PG" 2> /dev/null)" && fail "$name: the secret is in the database in clear"
  grep -q 'event=secret-refused' "$T/worker-a.log" || fail "$name: the worker did not log the refusal"
  return 0
}
job_ended() {
  case $(job_status_field "$1" .status) in failed | rolled-back | needs-operator | cancelled) return 0 ;; esac
  return 1
}

# A2: globex's sealed password copied into acme's provider.
set_field acme fake api_password "$G_PW"
refused a2 fake api_password globex-PLAIN-7781
set_field acme fake api_password "$A_PW"
pass "A2: another tenant's sealed value does not open for this tenant; its text is nowhere"

# A3: acme's own password moved to a field the plugin echoes (region).
set_field acme fake region "$A_PW"
refused a3 fake region s3cret-provider-password
set_field acme fake region test
pass "A3: a sealed value moved to another field of the same entity does not open"

# A4: provider fake's password copied into provider fake2's.
jq -c '.name = "fake2" | .provisioner.api_password = "fake2-PLAIN-3319"' <<< "$prov" > "$T/fake2.json"
expect 201 "$(api POST /v1/providers "@$T/fake2.json" "$ACME")" '' "provider fake2"
for k in hardwaretypes/small imagetypes/img; do # fake2 offers what fake does
  body=$(body_of "$(api GET "/v1/$k" "" "$ACME")" | jq -c '.providermap.fake2 = .providermap.fake')
  expect 200 "$(api PUT "/v1/$k" "$body" "$ACME")" '' "$k on fake2"
done
set_field acme fake2 api_password "$A_PW"
set_field acme fake2 region "$A_PW"
refused a4 fake2 'api_password|region' s3cret-provider-password
pass "A4: a sealed value copied to another entity of the same tenant does not open"

# The control: the same cluster with the values in their places runs, the password opened.
set_field acme fake2 api_password "$(sealed_of acme fake2 api_password)"
body=$(jq -cn --argjson c "$(sleep_config)" '{name: "ok", template: "single", nodes: 1, config: $c}')
r=$(api POST /v1/clusters "$body" "$ACME")
expect 202 "$r" '' "create ok"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 90
pass "control: values at their places open for the plugin (clear_secret checked it)"

# A worker given the fleet key refuses to start: it holds its tenant's key only.
write_worker_conf bad "worker.tenant = acme" "worker.plugin_dir = $DROVER_BUILD_DIR/plugins" "secrets.key_file = $KEYFILE"
timeout 60 "$BIN/drover-worker" --config "$T/bad.conf" > "$T/bad.out" 2>&1 && fail "a worker started with the fleet key"
grep -q "a worker never holds the fleet key" "$T/bad.out" || fail "no reason given: $(cat "$T/bad.out")"
pass "a worker configured with the fleet key does not start, saying why"
