#!/usr/bin/env bash
# Operations that do what their names say, and a plan before every apply (issue 24), on the
# shipped catalogue's web-tier run by a noop worker (every task succeeds at once):
#
#   config      a create's config is merged over the template's defaults; configure
#               "mode": "merge" is an RFC 7396 patch over the current config, "replace"
#               the template's defaults with the config over them; {} with no mode is
#               refused and changes nothing (the CLI's --merge and --replace too)
#   dependents  an expand configures and restarts haproxy (backends over nginx) in its job
#   targets     expand/shrink "size" (--to N) sets the node count; --nodes K still counts,
#               and says what it did; a stop of everything reads stopped, a start active
#   plans       "dry_run": true answers the layout diff, config keys with secrets masked,
#               the DAG's summary with an estimate from past tasks, the rollback, and the
#               revision; nothing is written; an apply with a stale plan_revision is 409;
#               the CLI's --dry-run diff and --yes; drover preview's summary and stages
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

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

# ---- targets: --to N; --nodes K says what it did; stopped is not active ----
"$D" cluster expand "$CID" --to 6 --json > "$T/to.out" 2> "$T/to.err" || fail "expand --to 6: $(cat "$T/to.err")"
api_wait_job "$(jq -r .job.id "$T/to.out")" succeeded
expect 200 "$(api GET "/v1/clusters/$CID")" '.size == 6' "expand --to 6 from 4"
[ -s "$T/to.err" ] && fail "expand --to printed a note: $(cat "$T/to.err")"
"$D" cluster shrink "$CID" --nodes 1 --json > "$T/nodes.out" 2> "$T/nodes.err" || fail "shrink --nodes 1: $(cat "$T/nodes.err")"
api_wait_job "$(jq -r .job.id "$T/nodes.out")" succeeded
grep -q 'deprecated.*removing 1 node: 6 -> 5; say --to 5' "$T/nodes.err" || fail "the --nodes note: $(cat "$T/nodes.err")"
expect 400 "$(api POST "/v1/clusters/$CID/expand" '{"nodes":1,"size":7}')" '.error.field == "size"' "size and nodes"
expect 422 "$(api POST "/v1/clusters/$CID/shrink" '{"size":5}')" '.error.field == "size" and (.error.message | test("has 5 nodes"))' "shrink to the same size"
expect 422 "$(api POST "/v1/clusters/$CID/expand" '{"size":2}')" '.error.field == "size"' "expand to fewer"
r=$(api POST "/v1/clusters/$CID/stop" '{}')
expect 202 "$r" '' "stop"
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "stopped"' "a stopped cluster reads stopped"
r=$(api POST "/v1/clusters/$CID/start" '{}')
expect 202 "$r" '' "start"
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "active"' "started again: active"
pass "expand --to 6: 4 -> 6; shrink --nodes 1 says \"removing 1 node: 6 -> 5\"; stopped, then active"

# ---- plans: a dry run of every operation, then exactly that plan applied ----
jobs() { psql_q "SELECT count(*) FROM jobs"; }
before=$(jobs)
r=$(api POST "/v1/clusters/$CID/expand" '{"size":6,"dry_run":true}')
expect 200 "$r" '.dry_run and .operation == "expand" and (.revision | length == 16) and .diff.size == {"old": 5, "new": 6}
  and (.diff.nodes.added | length == 1) and (.diff.nodes.added[0].services | index("nginx"))
  and (.diff.nodes.removed | length == 0) and .diff.reconfigure[0].service == "haproxy"
  and .plan.by_action.create == 1 and .plan.by_action.configure >= 2 and .plan.critical_path >= 8
  and .plan.estimate.known > 0 and (.plan.estimated_seconds | type == "number")
  and .rollback.by_action.delete == 1 and .rollback.tasks > 1' "expand dry run"
REV=$(body_of "$r" | jq -r .revision)
for op in 'shrink {"size":3}' 'configure {"config":{"nginx":{"port":81}},"mode":"merge","restart":true}' \
  'addservices {"services":["zookeeper-server"]}' 'stop {}' 'start {"services":["nginx"]}' 'restart {}' 'delete {}'; do
  read -r name body <<< "$op"
  r=$(api POST "/v1/clusters/$CID/$name" "$(jq -c '. + {dry_run: true}' <<< "$body")")
  expect 200 "$r" ".operation == \"$name\" and .revision == \"$REV\" and .plan.tasks > 0" "$name dry run"
done
[ "$(jobs)" = "$before" ] || fail "dry runs wrote jobs: $before -> $(jobs)"
expect 200 "$(api POST "/v1/clusters/$CID/delete" '{"dry_run":true}')" '(.diff.nodes.removed | length == 5) and .diff.size.new == 0' "delete dry run"
r=$(api POST "/v1/clusters/$CID/configure" '{"config":{"nginx":{"port":81,"password":"s3cret"}},"mode":"merge","dry_run":true}')
expect 200 "$r" '.diff.config == [{"key": "nginx.password", "new": "********", "secret": true}, {"key": "nginx.port", "old": 80, "new": 81}]' "configure dry run: keys, the secret masked"
grep -q s3cret <<< "$r" && fail "the dry run shows the secret"
jq '.description = "version 2"' "$DROVER_SOURCE_DIR/conf/catalog/clustertemplates/web-tier.json" > "$T/web2.json"
expect 200 "$(api PUT /v1/clustertemplates/web-tier "@$T/web2.json")" '' "web-tier version 2"
expect 200 "$(api POST "/v1/clusters/$CID/upgrade" '{"dry_run":true}')" \
  '.diff.template_version == {"old": 1, "new": 2} and .plan.by_action.stop > 0 and .plan.by_action.install > 0' "upgrade dry run"
[ "$(jobs)" = "$before" ] || fail "dry runs wrote jobs: $before -> $(jobs)"
pass "dry runs: diff, summary with an estimate, rollback, revision; nothing written"

# Apply exactly the plan: a stale revision is refused; the current one applies.
r=$(api POST "/v1/clusters/$CID/restart" '{}')
expect 202 "$r" '' "something else changes the cluster"
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded
expect 409 "$(api POST "/v1/clusters/$CID/expand" "{\"size\":6,\"plan_revision\":\"$REV\"}")" \
  '.error.field == "plan_revision" and (.error.message | test("changed since the plan"))' "a stale plan"
"$D" cluster expand "$CID" --to 6 --dry-run > "$T/dry.out" || fail "--dry-run: $(cat "$T/dry.out")"
grep -q '^~ size 5 -> 6$' "$T/dry.out" && grep -q '^+ node node-[0-9]*  small/debian12  base, nginx$' "$T/dry.out" &&
  grep -q '^~ service haproxy reconfigured and restarted (reads nginx)$' "$T/dry.out" &&
  grep -q '^plan: [0-9]* tasks (.*create 1' "$T/dry.out" && grep -q '^rollback if it fails at its end: ' "$T/dry.out" ||
  fail "the --dry-run diff: $(cat "$T/dry.out")"
grep -q $'\033' "$T/dry.out" && fail "colour when not on a terminal"
expect 200 "$(api GET "/v1/clusters/$CID")" '.size == 5' "--dry-run changed nothing"
"$D" cluster expand "$CID" --to 6 --yes > "$T/yes.out" || fail "--yes: $(cat "$T/yes.out")"
grep -q '^applied: job [0-9]* expand pending$' "$T/yes.out" || fail "--yes: $(cat "$T/yes.out")"
api_wait_job "$(awk '/^applied/ {print $3}' "$T/yes.out")" succeeded
expect 200 "$(api GET "/v1/clusters/$CID")" '.size == 6' "--yes applied the plan"
pass "apply: a stale plan_revision is 409; --dry-run prints the diff, --yes applies it"

# On a terminal (script(1) gives the client a pty) an operation shows its plan in colour and
# asks: anything but "yes" applies nothing.
on_tty() { # ANSWER CMD: run CMD on a pty, typing ANSWER
  { sleep 1; printf '%s\n' "$1"; sleep 2; } | script -qec "$2" /dev/null
}
before=$(jobs)
on_tty no "$D cluster expand $CID --to 8" > "$T/tty-no.out" 2>&1 && fail "a declined plan exited 0: $(cat "$T/tty-no.out")"
grep -q 'apply this plan?' "$T/tty-no.out" && grep -q 'not applied' "$T/tty-no.out" && grep -q $'\033\[' "$T/tty-no.out" ||
  fail "the prompt on a terminal: $(cat -v "$T/tty-no.out")"
[ "$(jobs)" = "$before" ] || fail "a declined plan made a job"
on_tty yes "$D cluster restart $CID" > "$T/tty-yes.out" 2>&1 || fail "an accepted plan: $(cat -v "$T/tty-yes.out")"
grep -q 'applied: job [0-9]* restart' "$T/tty-yes.out" || fail "an accepted plan: $(cat -v "$T/tty-yes.out")"
api_wait_job "$(grep -o 'applied: job [0-9]*' "$T/tty-yes.out" | awk '{print $3}')" succeeded
pass "on a terminal: the plan in colour, then a prompt; only yes applies it"

"$D" preview --template web-tier --nodes 3 > "$T/preview.out" || fail "preview: $(cat "$T/preview.out")"
grep -q '^plan: 3 nodes, [0-9]* tasks (' "$T/preview.out" || fail "preview summary: $(cat "$T/preview.out")"
[ "$(wc -l < "$T/preview.out")" -lt 10 ] || fail "preview is not a summary: $(wc -l < "$T/preview.out") lines"
"$D" preview --template web-tier --nodes 3 --format stages > "$T/stages.out" || fail "preview --format stages: $(cat "$T/stages.out")"
grep -q '^stage 1: node-1/create node-2/create node-3/create$' "$T/stages.out" || fail "preview stages: $(cat "$T/stages.out")"
"$D" preview --template web-tier --nodes 3 --json | jq -e '.plan.tasks | length > 0' > /dev/null || fail "preview --json"
"$D" cluster create --name zk --template zookeeper-ensemble --nodes 3 --dry-run > "$T/create.out" ||
  fail "create --dry-run: $(cat "$T/create.out")"
[ "$(grep -c '^+ node node-[123]  small/debian12  base, zookeeper-server$' "$T/create.out")" = 3 ] &&
  grep -q '^plan: 3 nodes, [0-9]* tasks (' "$T/create.out" || fail "create --dry-run: $(cat "$T/create.out")"
expect 200 "$(api GET /v1/clusters)" '[.items[] | select(.name == "zk")] | length == 0' "a create's dry run made nothing"
pass "drover preview: a summary by default, --format stages, --json; create --dry-run: a + line a node"
