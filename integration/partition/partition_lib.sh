# shellcheck shell=bash
# partition_lib.sh: the fleet of the partition tests (sourced after testlib's test-lib.sh, api.sh
# and engine.sh), on the multi-host stack (scripts/with-stack --hosts): every
# server and process on a host of its own, the faults made by scripts/netfault inside the
# hosts' namespaces (docs/operations.md "When the network fails": one test per row).
#
# Each test starts what it needs with start_droverd / start_worker (testlib/engine.sh): on hosts,
# each goes on a host named after it (testlib/test-lib.sh start_proc). nf runs scripts/netfault on the
# test's stack; the stack's teardown removes every rule however the test ends.

on_hosts || fail "run me under scripts/with-stack --hosts"
NETFAULT="$DROVER_SOURCE_DIR/scripts/netfault"

# nf ARGS...: scripts/netfault on this stack (a fault's id on stdout).
nf() { "$NETFAULT" --dir "$T" "$@"; }

# zk_hosts: the stack's ZooKeeper hosts (zk1, zk2, zk3), comma-separated.
zk_hosts() {
  local n out=""
  for n in 1 2 3; do [ -f "$T/hosts/zk$n" ] && out="$out${out:+,}zk$n"; done
  echo "$out"
}

# owner_is JID NAME: PostgreSQL says NAME owns the job.
owner_is() { [ "$(owner_of "$1")" = "$2" ]; }

# token_of JID: the job's owner token in PostgreSQL.
token_of() { psql_q "SELECT coalesce(owner_token, 0) FROM jobs WHERE id = $1"; }

# ready_is NAME CODE: droverd NAME's /readyz answers CODE.
ready_is() { http_code_is "${DPORTS[${1#droverd-}]}" /readyz "$2"; }

# logged NAME EVENT: NAME's log has "event=EVENT".
logged() { grep -q "event=$2\b" "$T/$1.log"; }

# member_field NAME FIELD: droverd NAME's member data field, as ZooKeeper has it.
# (zk get prints "PATH  DATA  (ephemeral)".)
member_field() {
  zk get "/drover/members/droverd/$1" 2> /dev/null | sed 's/^[^ ]*  //; s/  (ephemeral)$//' |
    jq -r ".$2" 2> /dev/null
}

# long_job NAME NODES MS: a cluster whose tasks each sleep MS: prints its job id.
long_job() {
  local jid
  read -r _ jid <<< "$(create_cluster "$1" "$2" "{\"duration_ms\": $3, \"jitter_ms\": 100}")"
  echo "$jid"
}

# fleet N W: droverd-1..N, the tenant (acme, its catalogue), W workers worker-1..W.
fleet() {
  local n
  for n in $(seq 1 "$1"); do start_droverd "$n" "${DROVERD_EXTRA[@]}"; done
  setup_tenant
  for n in $(seq 1 "$2"); do start_worker "worker-$n"; done
}
DROVERD_EXTRA=()

# the_end JID...: every job succeeded, no two attempts of a task overlapped, no task was
# recorded succeeded twice, the tree is clean; and no task ran to success twice at all,
# unless RERUN_OK is set: a fault that keeps a worker from writing an outcome its plugin
# reached (no ZooKeeper quorum) makes that attempt lost, and the task runs again (at least
# once, never at the same time: docs/engine.md).
RERUN_OK=
the_end() {
  local j
  for j in "$@"; do wait_job "$j" succeeded 180; done
  if [ -n "$RERUN_OK" ]; then
    check_overlaps
    check_attempts
  else
    check_runs
  fi
  check_tree_clean
}
