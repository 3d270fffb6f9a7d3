# shellcheck shell=bash
# api.sh: the shell test library's API helpers (sourced after test-lib.sh, by the API's tests
# and through bench/lib.sh).
#
# start_api_node NAME [extra config lines...]: a droverd with a secrets key and a
# bootstrap token file in the stack dir; sets PORT_<NAME> (read by api_port NAME, dashes as
# underscores in the variable) and waits until ready.
# api METHOD PATH [BODY] [TOKEN]: prints "STATUS BODY" (body on one line).
# The superadmin token is in $SUPER after start_api_node.
# tenant_key_file TENANT: the tenant's key file for its workers (never the fleet key).

# api_port NAME: the port of the droverd start_api_node started as NAME (its PORT_<NAME>).
api_port() {
  local var="PORT_${1//-/_}"
  echo "${!var}"
}

KEYFILE="$T/secrets.key"
TOKFILE="$T/superadmin.token"
if [ ! -e "$KEYFILE" ]; then
  (umask 077 && openssl rand -hex 32 > "$KEYFILE")
fi

# tenant_key_file TENANT: prints the path of TENANT's key (derived once from $KEYFILE with
# `drover key derive`, mode 0600), for its workers' secrets.tenant_key_file.
tenant_key_file() {
  local f="$T/tenant-$1.key"
  if [ ! -e "$f" ]; then
    (umask 077 && "$BIN/drover" key derive "$1" --key-file "$KEYFILE" > "$f")
  fi
  echo "$f"
}

start_api_node() {
  local name=$1 port
  shift
  port=$(free_port)
  write_droverd_conf "$name" "$port" "secrets.key_file = $KEYFILE" \
    "api.bootstrap_token_file = $TOKFILE" "$@"
  start_proc "$name" "$BIN/droverd"
  wait_ready "$name" "$port" 60
  printf -v "PORT_${name//-/_}" '%s' "$port"
  PORT=${PORT:-$port}
  # shellcheck disable=SC2034 # the superadmin token, for the tests that source this file
  SUPER=$(cat "$TOKFILE")
}

# api METHOD PATH [BODY|@FILE] [TOKEN] -> "STATUS BODY"
api() {
  local method=$1 path=$2 body=${3:-} tok=${4-${TOKEN:-}} out code type
  # The headers of the last answer stay in $T/api.head (Retry-After, Location, ...).
  local args=(-s -o "$T/api.out" -D "$T/api.head" -w '%{http_code} %{content_type}' -X "$method" -H "Authorization: Bearer $tok")
  if [ -n "$body" ]; then
    args+=(-H 'Content-Type: application/json' --data-binary "$body")
  fi
  code=$(curl "${args[@]}" "http://$(at "$PORT"):$PORT$path") || code=000
  type=${code#* }
  code=${code%% *}
  [ -z "$OPENAPI_LOG" ] || openapi_record "$method" "$path" "$code" "$type"
  out=$(tr -d '\n' < "$T/api.out")
  echo "$code $out"
}

# The API tests (integration/api) check every answer api() gets against docs/openapi.yaml:
# each is recorded in $OPENAPI_LOG (method, path, status, content type, a copy of the body)
# and, when the test exits, tools/openapi/check-responses.js validates them all (status and
# body shape against the operation's response schema); an answer that does not fit fails the
# test. Other tests that source this file record nothing.
OPENAPI_LOG=
if [[ $0 == */integration/api/* ]]; then
  OPENAPI_LOG=$T/openapi-answers.jsonl
  mkdir -p "$T/openapi"
  : > "$OPENAPI_LOG"
  trap openapi_check EXIT
fi
openapi_record() { # METHOD PATH STATUS TYPE
  [ "$3" != 000 ] || return 0
  local n
  n=$(($(wc -l < "$OPENAPI_LOG") + 1))
  cp "$T/api.out" "$T/openapi/$n.body"
  jq -cn --arg m "$1" --arg p "$2" --argjson s "$3" --arg t "$4" --arg b "$T/openapi/$n.body" \
    '{method: $m, path: $p, status: $s, type: $t, body: $b}' >> "$OPENAPI_LOG"
}
openapi_check() {
  local rc=$?
  if [ -s "$OPENAPI_LOG" ]; then
    "$DROVER_SOURCE_DIR/tools/openapi/run" check-responses.js "$DROVER_SOURCE_DIR/docs/openapi.yaml" \
      "$OPENAPI_LOG" >&2 || rc=1
  fi
  exit "$rc"
}

# expect WANT_STATUS "STATUS BODY" [JQ-FILTER] [what]
expect() {
  local want=$1 got=$2 filter=${3:-} what=${4:-}
  local code=${got%% *} body=${got#* }
  [ "$code" = "$want" ] || fail "${what:-request}: expected $want, got $got"
  if [ -n "$filter" ]; then
    echo "$body" | jq -e "$filter" > /dev/null 2>&1 || fail "${what:-request}: $filter does not hold on $body"
  fi
}

body_of() { echo "${1#* }"; }

# catalogue_json DIR: the Coopr directory layout as one import body.
catalogue_json() {
  local dir=$1 kind
  for kind in providers hardwaretypes imagetypes services clustertemplates partialtemplates; do
    if [ -d "$dir/$kind" ] && ls "$dir/$kind"/*.json > /dev/null 2>&1; then
      jq -s --arg k "$kind" '{($k): .}' "$dir/$kind"/*.json
    else
      jq -n --arg k "$kind" '{($k): []}'
    fi
  done | jq -s 'add'
}

FIXTURES="$DROVER_SOURCE_DIR/../shared/fixtures/coopr-templates"
[ -d "$FIXTURES" ] || FIXTURES=/work/shared/fixtures/coopr-templates

# setup_acme: tenant acme with its admin alice ($ADMIN, also the default $TOKEN) and user bob
# ($USER), the Coopr catalogue ($FIXTURES) imported.
setup_acme() {
  expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant"
  ADMIN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
  # shellcheck disable=SC2034 # for the tests that source this file
  USER=$(body_of "$(api POST /v1/users '{"name":"bob","role":"user"}' "$ADMIN")" | jq -r .token)
  TOKEN=$ADMIN
  catalogue_json "$FIXTURES" > "$T/catalogue.json"
  expect 200 "$(api POST /v1/import "@$T/catalogue.json")" '' "import"
}

# start_noop_worker NAME TENANT: a worker running every task at once (the noop plugins).
start_noop_worker() {
  write_worker_conf "$1" "worker.tenant = $2" "worker.plugin_dir = $DROVER_BUILD_DIR/plugins" \
    "worker.plugins = noop,noop-provider" "worker.concurrency = 64"
  start_proc "$1" "$BIN/drover-worker"
}

# stop_worker NAME: SIGTERM, and wait until it is gone.
stop_worker() {
  kill "$(pid_of "$1")"
  wait_exit "$1" 20 > /dev/null || fail "$1 did not stop"
}

# api_wait_job JID STATUS [TOKEN] [SECONDS]: until the job has STATUS (the engine moves it).
api_wait_job() {
  local jid=$1 want=$2 tok=${3-${TOKEN:-}} limit=${4:-60} st=
  poll_until "$limit" api_job_is "$jid" "$want" "$tok" ||
    fail "job $jid is $st after $limit s, expected $want"
}
# api_job_is JID STATUS TOKEN: the job has STATUS (left in the caller's st); fails on another
# final status.
api_job_is() {
  st=$(body_of "$(api GET "/v1/jobs/$1?tasks=none" '' "$3")" | jq -r .status 2>/dev/null || echo "?")
  [ "$st" = "$2" ] && return 0
  case $st in succeeded | rolled-back | cancelled | failed | needs-operator)
    fail "job $1 ended $st, expected $2: $(body_of "$(api GET "/v1/jobs/$1" '' "$3")" | jq -c '.error')" ;;
  esac
  return 1
}
