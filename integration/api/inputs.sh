#!/usr/bin/env bash
# Inputs checked against what they would produce (issue 14, items 5, 7, 8):
# an upgrade to a template version that does not exist (or that cannot hold
# the cluster), an expand past 10,000 nodes, services an operation cannot
# add, remove or start, entity names "." and "..": each a 4xx naming the
# field, and nothing written. Also: the bearer scheme in any case, and an
# unknown service in addservices is unknown-reference as in a create.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
start_noop_worker worker-a acme
start_noop_worker worker-b acme
start_noop_worker worker-c acme # the 9,999-node create below is 139,993 tasks
start_noop_worker worker-d acme
setup_acme
counts() { psql_q "SELECT (SELECT count(*) FROM clusters) || '/' || (SELECT count(*) FROM jobs) || '/' || (SELECT count(*) FROM entities)"; }

# Item 8: the scheme is case-insensitive.
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: bearer $USER" "http://127.0.0.1:$PORT/v1/whoami")
[ "$code" = 200 ] || fail "Authorization: bearer (lowercase): $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: BEARER $USER" "http://127.0.0.1:$PORT/v1/whoami")
[ "$code" = 200 ] || fail "Authorization: BEARER: $code"
pass "the bearer scheme in any case"

# Item 7: names "." and ".." are refused like "../x", through every door.
before=$(counts)
for n in . .. ../x; do
  expect 400 "$(api POST /v1/services "{\"name\":\"$n\",\"provisioner\":{\"actions\":{}}}")" '.error.field == "name"' "service named $n"
  expect 400 "$(api POST /v1/import "{\"services\":[{\"name\":\"$n\",\"provisioner\":{\"actions\":{}}}]}")" \
    '.error.code == "invalid"' "import of a service named $n"
done
code=$(curl -s --path-as-is -o "$T/dots.out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ADMIN" \
  --data-binary '{"name":"..","provisioner":{"actions":{}}}' "http://127.0.0.1:$PORT/v1/services/..")
[ "$code" = 400 ] && jq -e '.error.code == "malformed"' "$T/dots.out" > /dev/null || fail "PUT /v1/services/..: $code"
[ "$(counts)" = "$before" ] || fail "refused names wrote: $before -> $(counts)"
pass "entity names \".\" and \"..\": 400, nothing written"

# A cluster to operate on: lamp, 3 nodes, idle (made by the engine with the noop plugins).
idle() { api_wait_job "$(body_of "$1" | jq -r .job.id)" succeeded "$USER" "${2:-60}"; }
r=$(api POST /v1/clusters '{"name":"web","template":"lamp","nodes":3,"provider":"rackspace"}' "$USER")
expect 202 "$r" '.cluster.template_version == 1' "lamp cluster"
CID=$(body_of "$r" | jq -r .cluster.id)
idle "$r"

# bad OP BODY CODE FIELD WHAT: 4xx with code and field, nothing written.
bad() {
  local before
  before=$(counts)
  expect "$3" "$(api POST "/v1/clusters/$CID/$1" "$2" "$USER")" ".error.code == \"$4\" and .error.field == \"$5\"" "$6"
  [ "$(counts)" = "$before" ] || fail "$6 wrote rows: $before -> $(counts)"
}
# Item 8: an unknown service is unknown-reference, as in a create.
bad addservices '{"services":["no-such-service"]}' 422 unknown-reference services "addservices of an unknown service"
bad addservices '{"services":["php"]}' 422 unsatisfiable services "addservices of a service it has"
bad addservices '{"services":["hadoop-hdfs-namenode"]}' 422 unsatisfiable services "addservices of a service the template forbids"
bad removeservices '{"services":["memcached"]}' 422 unsatisfiable services "removeservices of a service it lacks"
bad start '{"services":["memcached"]}' 422 unsatisfiable services "start of a service it lacks"
bad configure '{"config":{},"mode":"merge","services":["memcached"]}' 422 unsatisfiable services "configure of a service it lacks"
bad configure '{"config":{},"mode":"merge","restart":"yes"}' 400 invalid restart "configure with a restart that is not a boolean"
# Item 5: an upgrade to a version that does not exist, or to the version it has.
bad upgrade '{"template_version":99}' 422 unknown-reference template_version "upgrade to version 99"
bad upgrade '{}' 422 unsatisfiable template_version "upgrade to the version it has"
# A second lamp that no longer allows mysql-server: the cluster cannot move to it.
lamp2=$(body_of "$(api GET /v1/clustertemplates/lamp)" | jq -c '.compatibility.services -= ["mysql-server"] | .defaults.services -= ["mysql-server"]')
expect 200 "$(api PUT /v1/clustertemplates/lamp "$lamp2")" '' "lamp version 2"
bad upgrade '{}' 422 unsatisfiable template_version "upgrade to a version that forbids one of its services"
lamp3=$(body_of "$(api GET /v1/clustertemplates/lamp)" | jq -c '.compatibility.services += ["mysql-server"] | .description = "third"')
expect 200 "$(api PUT /v1/clustertemplates/lamp "$lamp3")" '' "lamp version 3"
r=$(api POST "/v1/clusters/$CID/upgrade" '{}' "$USER")
expect 202 "$r" '.job.request.target.template_version == 3 and (.job.request.target.layout.nodes | map(.count) | add) == 3' "upgrade to version 3 (solved)"
idle "$r"
expect 200 "$(api GET "/v1/clusters/$CID" '' "$USER")" '.template_version == 3' "the upgraded cluster is at version 3"
pass "addservices/removeservices/start/configure checked against the cluster and catalogue; upgrade only to an existing version that can hold the cluster"

# Item 5: expand past the 10,000-node cap.
r=$(api POST /v1/clusters '{"name":"big","template":"hadoop-distributed","nodes":9999,"provider":"rackspace"}' "$USER")
expect 202 "$r" '.cluster.size == 9999' "a 9,999-node cluster"
CID=$(body_of "$r" | jq -r .cluster.id)
idle "$r" 900 # 139,993 tasks through the engine
bad expand '{"nodes":2}' 422 unsatisfiable nodes "expand to 10,001 nodes"
r=$(api POST "/v1/clusters/$CID/expand" '{"nodes":1}' "$USER")
expect 202 "$r" '.job.request.target.size == 10000' "expand to exactly 10,000"
# Starting this job once took the owner's loop a quadratic scan of the cluster's nodes
# (seconds at 10,000, past the session timeout on a busy machine: lost, taken again, for
# ever); its final write a subquery per node. Both are linear now: it must end.
idle "$r" 300
expect 200 "$(api GET "/v1/clusters/$CID" '' "$USER")" '.size == 10000 and .status == "active"' "the cluster has 10,000 nodes"
[ "$(psql_q "SELECT count(*) FROM nodes WHERE cluster_id = $CID AND status = 'active'")" = 10000 ] ||
  fail "active node rows after the expand: $(psql_q "SELECT count(*) FROM nodes WHERE cluster_id = $CID AND status = 'active'")"
pass "expand: the result may not pass 10,000 nodes, and an expand to exactly 10,000 runs"
