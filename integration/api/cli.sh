#!/usr/bin/env bash
# The `drover` client over the API: DROVER_URL/DROVER_TOKEN and flags, tables
# and --json, import of a catalogue directory, clusters and jobs, `job watch`
# until the job ends, exit codes (0 ok, 1 API error, 2 usage), and HTTPS
# with a certificate from the config.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
D="$BIN/drover"
export DROVER_URL="http://127.0.0.1:$PORT" DROVER_TOKEN=$SUPER

"$D" whoami | grep -q 'superadmin (superadmin)' || fail "whoami: $("$D" whoami 2>&1)"
"$D" tenant create acme > /dev/null || fail "tenant create"
ADMIN=$("$D" user create alice --role admin --tenant acme --json | jq -r .token)
[ -n "$ADMIN" ] && [ "$ADMIN" != null ] || fail "user create gave no token"
"$D" tenant list | grep -q '^[0-9]* *acme' || fail "tenant list table: $("$D" tenant list)"
pass "superadmin: tenant and admin through the client"

export DROVER_TOKEN=$ADMIN
"$D" import "$FIXTURES" > "$T/import.out" || fail "import: $(cat "$T/import.out")"
grep -q '^imported 15 clustertemplates$' "$T/import.out" || fail "import output: $(cat "$T/import.out")"
"$D" clustertemplates list | awk 'NR == 1 {print $1, $2}' | grep -q '^NAME DESCRIPTION$' || fail "table header"
"$D" clustertemplates list | grep -q '^hadoop-distributed ' || fail "templates table"
[ "$("$D" clustertemplates get lamp --json | jq -r .name)" = lamp ] || fail "get --json"
"$D" export | jq -e '.services | length == 53' > /dev/null || fail "export"
echo '{"name":"s1","provisioner":{"actions":{}}}' | "$D" services create - > /dev/null || fail "create from stdin"
"$D" services delete s1 > /dev/null || fail "delete"
"$D" audit --limit 3 | awk 'NR == 1 {print $1, $2, $3}' | grep -q '^AT ACTOR ACTION$' || fail "audit table"
"$D" audit --limit 3 --json | jq -e '.items[0].action == "delete" and .items[0].entity_id == "s1"' > /dev/null ||
  fail "audit: $("$D" audit --limit 3 --json)"
tok=$("$D" token create --json)
tid=$(echo "$tok" | jq -r .id)
"$D" --token "$(echo "$tok" | jq -r .token)" whoami > /dev/null || fail "a new token"
"$D" token revoke "$tid" | grep -q revoked || fail "token revoke"
"$D" --token "$(echo "$tok" | jq -r .token)" whoami > /dev/null 2>&1 && fail "a revoked token still works"
"$D" token create --expires-in 3600 --label ci --json | jq -e '.label == "ci" and .expires_at' > /dev/null ||
  fail "token create --expires-in --label"
"$D" token list | awk 'NR == 1 {print $1, $2}' | grep -q '^ID LABEL$' || fail "token list table: $("$D" token list)"
"$D" token list --json | jq -e '[.items[] | select(.label == "ci")] | length == 1' > /dev/null || fail "token list"
"$D" user create temp --role user > /dev/null || fail "user create temp"
"$D" user delete temp | grep -q 'user temp deleted' || fail "user delete"
"$D" user list | grep -q '^[0-9]* *temp' && fail "a deleted user is listed"
pass "entities, import of a directory, export, tables and --json, audit, tokens, user delete"

out=$("$D" cluster create --name web1 --template lamp --nodes 2 --provider rackspace) ||
  fail "cluster create: $out"
echo "$out" | grep -q 'job [0-9]* create pending' || fail "cluster create output: $out"
CID=$("$D" cluster list --json | jq -r '.items[0].id')
JID=$("$D" job list --cluster "$CID" --json | jq -r '.items[0].id')
"$D" cluster list | grep -Eq "^$CID *web1 *lamp *2 *(pending|creating)" || fail "cluster table: $("$D" cluster list)"
"$D" job get "$JID" | grep -Eq "create of cluster $CID, (pending|running)" || fail "job get: $("$D" job get "$JID")"
# No worker here: the job runs and waits; a waiting task says why.
explains_wait() { "$D" job get "$JID" | grep -q "waits for node-1/create"; }
poll_until -e 0.2 20 explains_wait || fail "job get explains nothing: $("$D" job get "$JID")"

# Human output by default, the API's JSON with --json.
"$D" cluster get "$CID" > "$T/cget" || fail "cluster get"
grep -Eq "^cluster $CID \(web1\): (pending|creating), 2 nodes, template lamp version 1$" "$T/cget" ||
  fail "cluster get: $(cat "$T/cget")"
grep -Eq "^owner alice, created [0-9-]+T[0-9:]+Z, updated [0-9-]+T[0-9:]+Z$" "$T/cget" || fail "cluster get's times: $(cat "$T/cget")"
[ "$("$D" cluster get "$CID" --json | jq -r .name)" = web1 ] || fail "cluster get --json"
"$D" providers get rackspace | grep -q '^name: rackspace$' || fail "providers get: $("$D" providers get rackspace)"
"$D" preview --template lamp --nodes 2 > "$T/preview" || fail "preview: $(cat "$T/preview")"
grep -Eq '^\+ node node-2  ' "$T/preview" || fail "preview's nodes: $(head -5 "$T/preview")"
grep -Eq '^plan: 2 nodes, [0-9]+ tasks \(.*confirm 2, create 2.*\), [0-9]+ stages, critical path [0-9]+ tasks$' "$T/preview" ||
  fail "preview's summary: $(tr "\n" "|" < "$T/preview")"
"$D" preview --template lamp --nodes 2 --json | jq -e '.plan.tasks | length > 0' > /dev/null || fail "preview --json"
"$D" job list | grep -Eq "^$JID +$CID +create +(pending|running) +[0-9-]+T[0-9:]+Z +" || fail "job list: $("$D" job list)"
TZ=Asia/Kolkata "$D" job list --local-time | grep -Eq "^$JID +.* [0-9-]+T[0-9:]+\+05:30 " ||
  fail "job list --local-time: $(TZ=Asia/Kolkata "$D" job list --local-time)"
"$D" workers | grep -q '^ID  *HOST  *CLASSES  *STATE  *STARTED_AT  *CURRENT_TASK$' || fail "workers: $("$D" workers)"
pass "human output: cluster get, providers get, preview, ISO-8601 times (UTC or local), workers' columns"

# job watch follows the job until it ends; here it ends by cancel.
"$D" job watch "$JID" > "$T/watch.out" 2>&1 &
watch=$!
wait_until 20 "job watch to print the job running" grep -q running "$T/watch.out"
"$D" job cancel "$JID" | grep -q 'cancel asked' || fail "job cancel"
wait "$watch" && fail "job watch exited 0 for a cancelled job"
grep -q 'cancelled' "$T/watch.out" || fail "job watch output: $(cat "$T/watch.out")"
pass "cluster create, job get, job watch until the job ends (cancelled: exit 1)"

# Exit codes and messages.
set +e
"$D" cluster create --name web1 --template lamp --nodes 2 --provider rackspace 2> "$T/err" > /dev/null
rc=$?
set -e
[ $rc = 1 ] && grep -q 'already exists (409 conflict, field name)' "$T/err" || fail "API error: rc $rc, $(cat "$T/err")"
set +e
"$D" cluster create --name x --nodes many > /dev/null 2>&1; rc1=$?
"$D" job > /dev/null 2>&1; rc2=$?
"$D" nonsense > /dev/null 2>&1; rc3=$?
DROVER_URL=http://127.0.0.1:1 "$D" whoami > /dev/null 2>&1; rc4=$?
"$D" --token wrong whoami 2> "$T/err" > /dev/null; rc5=$?
set -e
[ "$rc1 $rc2 $rc3 $rc4 $rc5" = "2 2 2 1 1" ] || fail "exit codes: $rc1 $rc2 $rc3 $rc4 $rc5"
grep -q '401 unauthenticated' "$T/err" || fail "bad token message: $(cat "$T/err")"
pass "exit codes: 0 ok, 1 API error with its message, 2 usage"

# scripts/run's hint (on success and on failure) works as printed, in a shell with no DROVER_*.
(
  # shellcheck source=../../scripts/run
  . "$DROVER_SOURCE_DIR/scripts/run" # the functions only
  dir="$T/run-hint"
  mkdir -p "$dir"
  echo "$ADMIN" > "$dir/demo-admin.token"
  api_hint "$D whoami" "$D job get $JID" > "$T/hint" # DROVER_URL: this test's droverd
)
env -i PATH="$PATH" HOME="$HOME" bash -e "$T/hint" > "$T/hint.out" 2>&1 || fail "scripts/run's hint: $(cat "$T/hint" "$T/hint.out")"
grep -q '^alice (admin)' "$T/hint.out" && grep -q "^job $JID: create of cluster" "$T/hint.out" ||
  fail "scripts/run's hint printed: $(cat "$T/hint.out")"
pass "scripts/run's hint sets the environment the client needs, and works as printed"

# Conventions answered locally, with no server at all (DROVER_URL points at a closed port):
# --help at every level, unknown words refused with a suggestion, usage and exit status 2.
(
  # shellcheck disable=SC2031 # (scripts/run, sourced in a subshell above, sets it too)
  export DROVER_URL=http://127.0.0.1:1
  set +e
  "$D" > /dev/null 2>&1; rc1=$?
  "$D" cluster delete --help > "$T/help" 2>&1; rc2=$?
  "$D" cluster dleete 3 2> "$T/unknown" > /dev/null; rc3=$?
  "$D" clustr list 2> "$T/unknown2" > /dev/null; rc4=$?
  "$D" job --help > "$T/jobhelp" 2>&1; rc5=$?
  "$D" help cluster expand > "$T/help2" 2>&1; rc6=$?
  set -e
  [ "$rc1 $rc2 $rc3 $rc4 $rc5 $rc6" = "2 0 2 2 0 0" ] || fail "local exit codes: $rc1 $rc2 $rc3 $rc4 $rc5 $rc6"
  grep -q '^usage: drover cluster delete ID' "$T/help" || fail "cluster delete --help: $(cat "$T/help")"
  grep -q 'unknown subcommand "dleete" of cluster; did you mean "delete"' "$T/unknown" ||
    fail "unknown subcommand: $(cat "$T/unknown")"
  grep -q 'unknown command "clustr"; did you mean "cluster"' "$T/unknown2" || fail "unknown command: $(cat "$T/unknown2")"
  grep -q 'drover job logs ID' "$T/jobhelp" || fail "job --help: $(cat "$T/jobhelp")"
  grep -q '^usage: drover cluster expand ID' "$T/help2" || fail "help cluster expand: $(cat "$T/help2")"
  "$D" --version | grep -Eq '^drover [0-9]+\.[0-9]+\.[0-9]+' || fail "drover --version: $("$D" --version)"
  "$BIN/droverd" --version | grep -Eq '^droverd [0-9]+\.' || fail "droverd --version"
  "$BIN/drover-worker" --version | grep -Eq '^drover-worker [0-9]+\.' || fail "drover-worker --version"
  "$D" completion bash > "$T/drover.bash"
  # shellcheck disable=SC1091,SC2034 # the generated completion; COMP_* are its input
  compl=$(. "$T/drover.bash" && COMP_WORDS=(drover cluster exp) && COMP_CWORD=2 && _drover &&
    echo "${COMPREPLY[*]}" && COMP_WORDS=(drover cluster create --te) && COMP_CWORD=3 && _drover &&
    echo "${COMPREPLY[*]}")
  [ "$compl" = "$(printf 'expand\n--template')" ] || fail "bash completion: $compl"
  "$D" completion zsh | zsh -n || fail "the zsh completion does not parse"
  "$D" man > "$T/drover.1" && grep -q '^\.TH DROVER 1' "$T/drover.1" || fail "drover man"
)
"$D" version | grep -Eq '^server: droverd [0-9]+\.[0-9]+\.[0-9]+' || fail "drover version: $("$D" version)"
expect 200 "$(api GET /v1/version '' "$ADMIN")" '.version | test("^[0-9]+[.][0-9]+[.][0-9]+$")' "GET /v1/version"
pass "help at every level without a server, unknown words refused with a suggestion, versions"

# HTTPS: a second node with a certificate; the client verifies it.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/tls.key" -out "$T/tls.crt" -days 1 \
  -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" > /dev/null 2>&1
chmod 600 "$T/tls.key"
tport=$(free_port)
write_droverd_conf droverd-tls "$tport" "http.tls_cert = $T/tls.crt" "http.tls_key = $T/tls.key" \
  "secrets.key_file = $KEYFILE"
start_proc droverd-tls "$BIN/droverd"
wait_until -e 0.2 30 "the TLS droverd to be ready" \
  curl -sf -o /dev/null --cacert "$T/tls.crt" "https://127.0.0.1:$tport/readyz"
DROVER_CA_FILE="$T/tls.crt" "$D" --url "https://127.0.0.1:$tport" whoami | grep -q '^alice (admin)' ||
  fail "drover over https"
curl -s -o /dev/null "http://127.0.0.1:$tport/healthz" && fail "plain HTTP accepted on the TLS port"
set +e
"$D" --url "https://127.0.0.1:$tport" whoami > /dev/null 2>&1; rc=$?
set -e
[ $rc = 1 ] || fail "an unverified certificate was accepted"
pass "HTTPS with the configured certificate; the client verifies it"
