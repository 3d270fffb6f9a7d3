# shellcheck shell=bash
# engine.sh: the shell test library's fleet for the engine's tests and the benchmarks
# (sourced after test-lib.sh and api.sh, by the engine's tests and through bench/lib.sh):
# droverd nodes, workers running the sleep plugin, a tenant with the test catalogue
# (integration/engine/catalog), submitting small jobs and waiting on them, the checks of
# what jobs left, and ZooKeeper's own counters (four-letter words).
#
# SESSION (default 4s) is every process's ZooKeeper session timeout: failover waits for it.

SESSION=${SESSION:-4s}
RUNS="$T/runs"
mkdir -p "$RUNS"
CATALOG="$DROVER_SOURCE_DIR/integration/engine/catalog"
DPORTS=()

# start_droverd N [extra config lines...]: droverd-N on a free port; waits until ready.
start_droverd() {
  local n=$1 port
  shift
  port=$(free_port)
  # shellcheck disable=SC2034 # droverd N's port, for the tests that source this file
  DPORTS[n]=$port
  write_droverd_conf "droverd-$n" "$port" "secrets.key_file = $KEYFILE" \
    "api.bootstrap_token_file = $TOKFILE" "zookeeper.session_timeout = $SESSION" \
    "log.level = ${LOG_LEVEL:-info}" "$@"
  # (write_droverd_conf's own session line comes first; the last one would be refused as a
  # repeat, so it is taken out.)
  sed -i '0,/zookeeper.session_timeout = 20s/{/zookeeper.session_timeout = 20s/d}' "$T/droverd-$n.conf"
  start_proc "droverd-$n" "$BIN/droverd"
  wait_ready "droverd-$n" "$port" 60
  PORT=${PORT:-$port}
  SUPER=$(cat "$TOKFILE")
}

# zk_logins [NAME...]: new ZooKeeper logins (mode 0600): droverd's ($T/zk.digest, its id in
# DROVERD_ID), the operator's read-only one ($T/ops.digest, OPS_ID), and $T/NAME.digest for
# each NAME. A test that wants start_worker to log workers in as their tenant sets
# ZK_DROVERD_ID=$DROVERD_ID.
# shellcheck disable=SC2120 # the NAMEs are optional
zk_logins() {
  local n
  (umask 077 && echo "drover:$(openssl rand -hex 16)" > "$T/zk.digest" &&
    for n in ops "$@"; do echo "$n:$(openssl rand -hex 16)" > "$T/$n.digest"; done)
  DROVERD_ID=$("$BIN/drover" key zk-id "$T/zk.digest")
  OPS_ID=$("$BIN/drover" key zk-id "$T/ops.digest")
  [[ $DROVERD_ID == drover:* && $OPS_ID == ops:* ]] || fail "no digest ids: $DROVERD_ID $OPS_ID"
}

# worker_zk_file TENANT: prints the path of TENANT's workers' ZooKeeper credentials (derived
# once from $KEYFILE with `drover key worker-zk`, mode 0600), for their zookeeper.digest_file.
worker_zk_file() {
  local f="$T/zk-worker-$1.digest"
  [ -e "$f" ] || (umask 077 && "$BIN/drover" key worker-zk "$1" --key-file "$KEYFILE" > "$f")
  echo "$f"
}

# held_tasks QUEUE: "<znode> <session>" for each task held in QUEUE (/drover/queues/<t>/<c>),
# whichever way the workers take them: a claim of a queue item (the session in its data) or a
# slot holding an assignment (the session in its name, <worker>.<session hex>.<i>:
# docs/coord.md "Slots").
held_tasks() {
  local q=$1 c s
  for c in $(zk ls "$q/claims" 2> /dev/null); do
    s=$(zk get "$q/claims/$c" 2> /dev/null | grep -o '"session":"0x[0-9a-f]*"' | cut -d'"' -f4)
    echo "$c $s"
  done
  for c in $(zk ls "$q/slots" 2> /dev/null); do
    zk get "$q/slots/$c" 2> /dev/null | grep -q '"key"' || continue
    s=${c%.*}
    echo "$c 0x${s##*.}"
  done
}

# start_worker NAME [extra config lines...]: serving tenant $WORKER_TENANT (default acme).
# When droverd runs with ZooKeeper credentials (ZK_DROVERD_ID: its digest id; ZK_READERS:
# the operator's), the worker logs in with its tenant's own identity (docs/zookeeper-tree.md
# "ACLs") unless an extra line sets zookeeper.digest_file. WORKER_SLOTS: write_worker_conf.
start_worker() {
  local name=$1 zk=()
  shift
  if [ -n "${ZK_DROVERD_ID:-}" ] && ! conf_sets zookeeper.digest_file "$@"; then
    zk=("zookeeper.digest_file = $(worker_zk_file "${WORKER_TENANT:-acme}")"
      "zookeeper.acl_owner = $ZK_DROVERD_ID" "zookeeper.acl_readers = ${ZK_READERS:-}")
  fi
  write_worker_conf "$name" "worker.tenant = ${WORKER_TENANT:-acme}" "worker.plugin_dir = ${WORKER_PLUGIN_DIR:-$DROVER_BUILD_DIR/plugins}" \
    "worker.plugins = ${WORKER_PLUGINS:-sleep,sleep-provider}" "worker.concurrency = ${CONCURRENCY:-4}" \
    "secrets.tenant_key_file = $(tenant_key_file "${WORKER_TENANT:-acme}")" "log.level = ${LOG_LEVEL:-info}" \
    "${zk[@]}" "$@"
  sed -i "s/^zookeeper.session_timeout = 20s/zookeeper.session_timeout = $SESSION/" "$T/$name.conf"
  start_proc "$name" "$BIN/drover-worker"
}

# setup_tenant: tenant acme, its admin ($TOKEN), the test catalogue imported.
setup_tenant() { setup_tenant_from "$CATALOG"; }

# setup_tenant_from DIR: the same with the catalogue of DIR (the shipped one:
# $DROVER_SOURCE_DIR/conf/catalog).
setup_tenant_from() {
  expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
  # shellcheck disable=SC2034 # api's default token, for the tests that source this file
  TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
  catalogue_json "$1" > "$T/catalog.json"
  expect 200 "$(api POST /v1/import "@$T/catalog.json")" '' "import the catalogue of $1"
}

# sleep_config [extra jq object]: the cluster config that points the sleep plugin at $RUNS.
sleep_config() {
  jq -cn --arg d "$RUNS" --argjson extra "${1:-{\}}" \
    '{sleep: ({duration_ms: 0, record_dir: $d, exclusive_dir: $d, clear_secret: true} + $extra)}'
}

# create_cluster NAME NODES [sleep extras]: prints "CLUSTER_ID JOB_ID".
create_cluster() {
  local body r
  body=$(jq -cn --arg n "$1" --argjson k "$2" --argjson c "$(sleep_config "${3:-{\}}")" \
    '{name: $n, template: "simple", nodes: $k, config: $c}')
  r=$(api POST /v1/clusters "$body")
  expect 202 "$r" '' "create cluster $1"
  body_of "$r" | jq -r '.cluster.id + " " + .job.id'
}

job_field() { body_of "$(api GET "/v1/jobs/$1")" | jq -r "$2"; }
# The same without the tasks (a watcher's poll: cheap for a job of 140,000 tasks too).
job_status_field() { body_of "$(api GET "/v1/jobs/$1?tasks=none")" | jq -r "$2"; }

# submit NAME [NODES]: a cluster NAME of NODES nodes (default 3) of the `single` template
# created through the API; prints its job's id.
submit() {
  local body
  body=$(jq -cn --arg n "$1" --argjson k "${2:-3}" '{name: $n, template: "single", nodes: $k}')
  body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id
}

# dispatched JOB...: every job has a task on the queue (its first dispatch went out).
dispatched() {
  local J
  for J in "$@"; do
    job_has_queued "$J" 1 || return 1
  done
}

# wait_job JID STATUS [SECONDS]: until the job has STATUS; fails on another final status.
wait_job() {
  local jid=$1 want=$2 limit=${3:-120} st=
  # Benchmarks poll less (WAIT_JOB_POLL): curl and jq share the machine.
  poll_until -e "${WAIT_JOB_POLL:-0.2}" "$limit" job_is "$jid" "$want" ||
    fail "job $jid is $st after $limit s, expected $want"
}
# job_is JID STATUS: the job has STATUS (left in the caller's st); fails on another final status.
job_is() {
  st=$(job_status_field "$1" .status 2>/dev/null || echo "?")
  [ "$st" = "$2" ] && return 0
  case $st in
  succeeded | rolled-back | cancelled | failed | needs-operator)
    fail "job $1 ended $st, expected $2: $(job_status_field "$1" .error)" ;;
  esac
  return 1
}

# The ZooKeeper tree holds nothing of finished jobs: no announcement, lock, queue item or claim.
check_tree_clean() {
  local jobs items claims
  jobs=$(zk ls /drover/jobs 2>/dev/null | grep -c . || true)
  [ "$jobs" = 0 ] || fail "jobs left in /drover/jobs: $(zk ls /drover/jobs)"
  items=0
  for s in $(zk ls /drover/queues/acme/default/items 2>/dev/null); do
    items=$((items + $(zk ls "/drover/queues/acme/default/items/$s" | grep -c . || true)))
  done
  [ "$items" = 0 ] || fail "$items queue items left"
  claims=$(zk ls /drover/queues/acme/default/claims 2>/dev/null | grep -c . || true)
  [ "$claims" = 0 ] || fail "$claims claims left"
}

# No two attempts of one task overlapped in time: the sleep plugin's flock caught none, and
# the start and end of every run (the plugin's own record) say so too.
check_overlaps() {
  [ ! -s "$RUNS/overlaps" ] || fail "overlapping attempts: $(cat "$RUNS/overlaps")"
  local dup
  dup=$(awk '{ split($1, k, "."); print k[1] "." k[2], $3, $4 }' "$RUNS/runs.log" |
    sort -k1,1 -k2,2n | awk '$1 == last && $2 < last_end { print $1 } { last = $1; last_end = $3 }' | head -5)
  [ -z "$dup" ] || fail "attempts that overlapped in time: $dup"
}

# No task succeeded twice, as the engine recorded the attempts.
check_attempts() {
  local dup
  dup=$(psql_q "SELECT job_id || ' ' || phase || ' ' || task_id FROM task_attempts WHERE status = 'succeeded' GROUP BY 1 HAVING count(*) > 1 LIMIT 5")
  [ -z "$dup" ] || fail "tasks recorded as succeeded twice: $dup"
}

# All of it, and no task ran twice to success at all (the plugin's record): true when no
# worker died between a plugin's end and its outcome being written.
check_runs() {
  check_overlaps
  check_attempts
  local dup
  dup=$(awk '$5 == "ok" { split($1, k, "."); print k[1] "." k[2] }' "$RUNS/runs.log" | sort | uniq -d | head -5)
  [ -z "$dup" ] || fail "tasks that ran to success twice: $dup"
}

# check_attempt_rows N JOB...: every job has N succeeded attempt rows in PostgreSQL (all its
# tasks' work, one row a task when none was retried).
check_attempt_rows() {
  local n=$1 J
  shift
  for J in "$@"; do
    [ "$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $J AND status = 'succeeded'")" = "$n" ] ||
      fail "job $J: attempt rows $(psql_q "SELECT status, count(*) FROM task_attempts WHERE job_id = $J GROUP BY 1")"
  done
}

# zk_4lw WORD: the first server of $DROVER_ZK's answer to a four-letter word (mntr, srvr...).
zk_4lw() {
  local hp=${DROVER_ZK%%,*}
  hp=${hp%%/*}
  exec 9<> "/dev/tcp/${hp%:*}/${hp#*:}"
  printf '%s' "$1" >&9
  cat <&9
  exec 9<&-
}

# zk_requests: ZooKeeper's count of requests received, from every client (mntr's
# zk_packets_received).
zk_requests() { zk_4lw mntr | awk '$1 == "zk_packets_received" { print $2 }'; }

# queued_job_orphaned NAME: droverd-1 started, the tenant set up, a 2-node cluster NAME asked
# for, and droverd-1 stopped (SIGTERM) once the job's first tasks are queued: the job (JID)
# then has items on acme's default queue (Q) and nobody owns it. queue_items and queue_keys
# then list the queue's item and key record paths (in items and keys).
queued_job_orphaned() {
  Q=/drover/queues/acme/default
  start_droverd 1
  setup_tenant
  read -r _ JID <<< "$(create_cluster "$1" 2)"
  wait_until 60 "job $JID's first tasks to be queued" job_has_queued "$JID" 2
  kill -TERM "$(pid_of droverd-1)"
  wait_exit droverd-1 60 > /dev/null || fail "droverd-1 did not stop"
}
# job_has_queued JID N: the job has N or more tasks queued (PostgreSQL).
job_has_queued() { [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $1 AND status = 'queued'")" -ge "$2" ]; }
queue_items() {
  local s i
  items=()
  for s in $(zk ls "$Q/items"); do
    for i in $(zk ls "$Q/items/$s"); do items+=("$Q/items/$s/$i"); done
  done
}
queue_keys() {
  local k
  keys=()
  for k in $(zk ls "$Q/keys"); do keys+=("$Q/keys/$k"); done
}
