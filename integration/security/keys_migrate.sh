#!/usr/bin/env bash
# The one-off re-seal on droverd's start-up (docs/security.md, "Sealed values"): values
# sealed in the legacy format (enc:v1, enc:j1: one fleet-wide key, no place) in a provider,
# a template, a cluster's config and SSH key and a node's key-values are sealed again at
# their places under the tenant's key before droverd serves; the workers, which hold only
# the tenant's key, then open each one where it is; a second start finds nothing to do; a
# legacy value that does not open under the fleet key stops the start, naming the entity,
# and changes nothing.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

# legacy KEYFILE JSON_VALUE: the value sealed in the legacy format under that key.
legacy() {
  /usr/bin/python3 - "$1" "$2" << 'PY'
import base64, json, os, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
key = bytes.fromhex(open(sys.argv[1]).read().strip())
v = json.loads(sys.argv[2])
text, prefix = (v, "enc:v1:") if isinstance(v, str) else (json.dumps(v, separators=(",", ":")), "enc:j1:")
nonce = os.urandom(12)
print(prefix + base64.b64encode(nonce + AESGCM(key).encrypt(nonce, text.encode(), None)).decode())
PY
}
stop_droverd() {
  kill -TERM "$(pid_of droverd-1)"
  wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not stop"
}
restart_droverd() { # on a new port, which the API calls then use
  unset PORT
  start_droverd 1
}

start_droverd 1
start_worker worker-1
setup_tenant
read -r CID JID <<< "$(create_cluster c1 1)"
wait_job "$JID" succeeded 90
stop_droverd

# What an older droverd left: legacy values everywhere values are sealed.
P=$(legacy "$KEYFILE" '"s3cret-provider-password"')
TPL=$(legacy "$KEYFILE" '{"k":"TPL-PLAIN-51"}')
DBT=$(legacy "$KEYFILE" '"DBT-PLAIN-55"')
DB=$(legacy "$KEYFILE" '"DB-PLAIN-52"')
SSH=$(legacy "$KEYFILE" '"PEM-PLAIN-53"')
NODE=$(legacy "$KEYFILE" '"NODE-PLAIN-54"')
psql_q "UPDATE entities SET body = jsonb_set(body, '{provisioner,api_password}', to_jsonb('$P'::text))
        WHERE kind = 'provider' AND name = 'fake';
        UPDATE entities SET body = jsonb_set(jsonb_set(body, '{defaults,config,tpl_secret}', to_jsonb('$TPL'::text)),
        '{defaults,config,dbt}', jsonb_build_object('password', '$DBT'::text, 'host', 'h'))
        WHERE kind = 'clustertemplate' AND name = 'simple';
        UPDATE clusters SET config = jsonb_set(config, '{db}', jsonb_build_object('password', '$DB'::text)),
        secrets = jsonb_set(secrets, '{ssh,private_key}', to_jsonb('$SSH'::text)) WHERE id = $CID;
        UPDATE nodes SET properties = properties || jsonb_build_object('node_token', '$NODE'::text)
        WHERE cluster_id = $CID" > /dev/null
legacy_left() { psql_q "SELECT count(*) FROM (SELECT body::text t FROM entities UNION ALL SELECT config::text || secrets::text FROM clusters
                        UNION ALL SELECT properties::text FROM nodes UNION ALL SELECT request::text FROM jobs) x
                        WHERE t LIKE '%enc:v1:%' OR t LIKE '%enc:j1:%'"; }
[ "$(legacy_left)" = 4 ] || fail "the legacy values were not written (rows): $(legacy_left)"

restart_droverd
grep -q 'event=sealed-values-migrated count=6' "$T/droverd-1.log" || fail "no re-seal logged: $(grep reseal "$T/droverd-1.log")"
[ "$(legacy_left)" = 0 ] || fail "legacy values left after the start"
[ "$(psql_q "SELECT count(*) FROM entities WHERE body::text LIKE '%enc:v2:%' AND name IN ('fake', 'simple')")" -ge 2 ] ||
  fail "the entities' values were not sealed again"
pass "start-up: six legacy values sealed again at their places before serving"

# The worker (tenant key only) opens each where it is: the plugin checks the provider's
# password (clear_secret) and echoes the cluster's, the SSH key and the node's.
r=$(api POST "/v1/clusters/$CID/configure" "$(jq -cn --argjson c "$(sleep_config '{"echo":"cluster.db.password,ssh.private_key,node_token"}')" \
  '{config: ($c + {db: {password: "********"}})}')")
expect 202 "$r" '' "configure"
J=$(body_of "$r" | jq -r .job.id)
wait_job "$J" succeeded 90
said=$(psql_q "SELECT message FROM task_attempts WHERE job_id = $J AND message LIKE 'echo %' LIMIT 1")
[ "$said" = "echo cluster.db.password=DB-PLAIN-52 echo ssh.private_key=PEM-PLAIN-53 echo node_token=NODE-PLAIN-54" ] ||
  fail "the migrated values did not reach the plugin opened: \"$said\""
pass "the workers open the migrated values at their places (provider, cluster config, SSH key, node)"

# A create from the template takes its migrated defaults, sealed again for the cluster: a whole
# value, and one inside an object whose other fields the create changes.
body=$(jq -cn --argjson c "$(sleep_config '{"echo":"cluster.tpl_secret.k,cluster.dbt.password"}')" \
  '{name: "c2", template: "simple", nodes: 1, config: ($c + {tpl_secret: "********", dbt: {password: "********", host: "other"}})}')
r=$(api POST /v1/clusters "$body")
expect 202 "$r" '' "create c2 keeping the template's secret"
J2=$(body_of "$r" | jq -r .job.id)
wait_job "$J2" succeeded 90
[ "$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $J2 AND message = 'echo cluster.tpl_secret.k=TPL-PLAIN-51 echo cluster.dbt.password=DBT-PLAIN-55'")" -ge 1 ] ||
  fail "the template's migrated secrets did not reach c2's plugin: $(psql_q "SELECT message FROM task_attempts WHERE job_id = $J2 LIMIT 3")"
pass "a create keeping a template's secrets gets them sealed again at the cluster's place"

# A second start finds nothing to do.
stop_droverd
restart_droverd
[ "$(grep -c 'event=sealed-values-migrated' "$T/droverd-1.log")" = 1 ] || fail "the second start re-sealed again"
stop_droverd

# A legacy value under another key stops the start and changes nothing.
(umask 077 && openssl rand -hex 32 > "$T/other.key")
BAD=$(legacy "$T/other.key" '"x"')
psql_q "UPDATE entities SET body = jsonb_set(body, '{provisioner,token}', to_jsonb('$BAD'::text)) WHERE kind = 'provider' AND name = 'fake'" > /dev/null
before=$(psql_q "SELECT md5(string_agg(body::text, '' ORDER BY name, version)) FROM entities")
port=$(free_port)
write_droverd_conf droverd-x "$port" "secrets.key_file = $KEYFILE"
start_proc droverd-x "$BIN/droverd"
st=$(wait_exit droverd-x 60) || fail "droverd started with a value it cannot re-seal"
[ "$st" != 0 ] || fail "droverd exited 0"
grep -q 'event=reseal-failed.*provider.*fake.*acme.*provisioner.token' "$T/droverd-x.log" ||
  fail "the failure does not name the value: $(grep reseal "$T/droverd-x.log")"
[ "$(psql_q "SELECT md5(string_agg(body::text, '' ORDER BY name, version)) FROM entities")" = "$before" ] ||
  fail "a failed re-seal changed the entities"
pass "a legacy value that does not open stops the start, named, and nothing is changed"
