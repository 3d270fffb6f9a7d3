#!/usr/bin/env bash
# Operations that do what their names say, and a plan before every apply (issue 24), on the
# shipped catalogue's web-tier run by a noop worker (every task succeeds at once):
#
#   config      a create's config is merged over the template's defaults; configure
#               "mode": "merge" is an RFC 7396 patch over the current config, "replace"
#               the template's defaults with the config over them; {} with no mode is
#               refused and changes nothing (the CLI's --merge and --replace too)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/api_lib.sh"

start_api_node droverd-a
start_noop_worker worker-a acme
D="$BIN/drover"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
export DROVER_URL="http://127.0.0.1:$PORT" DROVER_TOKEN=$TOKEN
catalogue_json "$DROVER_SOURCE_DIR/conf/catalog" > "$T/catalog.json"
expect 200 "$(api POST /v1/import "@$T/catalog.json")" '' "import the shipped catalogue"

config_of() { body_of "$(api GET "/v1/clusters/$1")" | jq -c .config; }

# ---- config: merged over the defaults; merge and replace ----
r=$(api POST /v1/clusters '{"name":"web","template":"web-tier","nodes":3,"config":{"nginx":{"message":"hi"}}}')
expect 202 "$r" '' "create a web tier with a config of one key"
CID=$(body_of "$r" | jq -r .cluster.id)
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded
config_of "$CID" | jq -e '.nginx == {"port": 80, "message": "hi"} and (.haproxy.backends | test("service.nginx"))' > /dev/null ||
  fail "the create's config is not merged over the defaults: $(config_of "$CID")"
pass "create: the user's config is merged over the template's defaults"

expect 400 "$(api POST "/v1/clusters/$CID/configure" '{"config":{}}')" \
  '.error.field == "config" and (.error.message | test("replace"))' "configure {} with no mode"
"$D" cluster configure "$CID" --config <(echo '{}') > "$T/empty.out" 2>&1 && fail "the CLI's configure {} succeeded"
grep -q 'would reset' "$T/empty.out" || fail "configure {}: $(cat "$T/empty.out")"
expect 400 "$(api POST "/v1/clusters/$CID/configure" '{"config":{"a":1},"mode":"patch"}')" '.error.field == "mode"' "a bad mode"
config_of "$CID" | jq -e '.nginx.message == "hi"' > /dev/null || fail "a refused configure changed the config"

"$D" cluster configure "$CID" --merge --config <(echo '{"nginx":{"port":8080},"haproxy":{"backend_port":null}}') --json > "$T/merge.out" ||
  fail "configure --merge: $(cat "$T/merge.out")"
api_wait_job "$(jq -r .job.id "$T/merge.out")" succeeded
config_of "$CID" | jq -e '.nginx == {"port": 8080, "message": "hi"} and (.haproxy | has("backend_port") | not) and .haproxy.port == 80' > /dev/null ||
  fail "configure --merge: $(config_of "$CID")"
r=$(api POST "/v1/clusters/$CID/configure" '{"config":{"nginx":{"message":"replaced"}},"mode":"replace"}')
expect 202 "$r" '' "configure replace"
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded
config_of "$CID" | jq -e '.nginx == {"port": 80, "message": "replaced"} and .haproxy.backend_port == 80' > /dev/null ||
  fail "configure replace: $(config_of "$CID")"
pass "configure: merge patches the current config, replace starts from the defaults, {} alone is refused"

# ---- layout changes re-render their dependents ----
tasks_of() { body_of "$(api GET "/v1/jobs/$1")" | jq -c '[.tasks[] | select(.service == "haproxy") | .action] | sort'; }
r=$(api POST "/v1/clusters/$CID/expand" '{"nodes":1}')
expect 202 "$r" '' "expand"
J=$(body_of "$r" | jq -r .job.id)
api_wait_job "$J" succeeded
[ "$(tasks_of "$J")" = '["configure","start","stop"]' ] || fail "expand's haproxy tasks: $(tasks_of "$J")"
body_of "$(api GET "/v1/jobs/$J")" | jq -e '.request.target.reconfigure == [{"service": "haproxy", "on": ["nginx"], "restart": true}]' > /dev/null ||
  fail "the expand's request: $(body_of "$(api GET "/v1/jobs/$J")" | jq -c .request.target.reconfigure)"
pass "expand: haproxy (backends over the nginx nodes) configured and restarted in the same job"
