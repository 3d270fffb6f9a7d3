#!/usr/bin/env bash
# A droverd cut from ZooKeeper but not from PostgreSQL (docs/operations.md "When the network
# fails"): its session expires on the server after the session timeout, its job locks with it;
# droverd-2 takes its jobs under a newer token (recorded in PostgreSQL), so whatever droverd-1
# still writes there is fenced (a row update carrying an older token changes nothing) and
# nothing runs twice. droverd-1's /readyz is 503 while it has no session. Healed, it gets a
# new session, rejoins the ring and answers 200.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

SESSION=4s
start_droverd 1
setup_tenant
start_worker worker-1
jobs=()
for i in 1 2 3 4; do jobs+=("$(long_job "c$i" 2 1000)"); done
start_droverd 2
mine() {
  local j
  for j in $(psql_q "SELECT id FROM jobs WHERE owner = 'droverd-1' AND status = 'running'"); do
    [ "$(done_of "$j")" -ge 1 ] && { JID=$j; return 0; }
  done
  return 1
}
wait_until 60 "a running job of droverd-1's with a task done" mine
PORT=${DPORTS[2]}
tok0=$(token_of "$JID")
t0=$(now_ms)
nf cut droverd-1 zk1 > /dev/null
pass "droverd-1 cut from ZooKeeper (PostgreSQL still reached) while it owns job $JID (token $tok0)"

wait_until 30 "droverd-1's /readyz to answer 503" ready_is droverd-1 503
wait_until 60 "job $JID to move to droverd-2" owner_is "$JID" droverd-2
t_moved=$(now_ms)
tok1=$(token_of "$JID")
[ "$tok1" -gt "$tok0" ] || fail "job $JID moved without a newer token ($tok0 -> $tok1)"
pass "job $JID on droverd-2 $(((t_moved - t0) / 1000)) s after the cut (session $SESSION), token $tok0 -> $tok1"
wait_job "$JID" succeeded 120

nf heal > /dev/null
wait_until 60 "droverd-1's /readyz to answer 200" ready_is droverd-1 200
not_draining() { [ "$(member_field droverd-1 draining)" = false ]; }
wait_until 30 "droverd-1 back in the members" not_draining
fenced=$(grep -c 'newer owner' "$T/droverd-1.log" || true)
# shellcheck disable=SC2068 # a list of ids
the_end ${jobs[@]}
pass "healed: droverd-1 rejoined; every job succeeded, none ran twice or overlapped ($fenced of droverd-1's writes refused by a newer token)"
