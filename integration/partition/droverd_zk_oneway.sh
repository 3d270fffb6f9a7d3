#!/usr/bin/env bash
# One-way loss each way between a droverd and ZooKeeper (docs/operations.md "When the network
# fails"). First what droverd-1 sends to ZooKeeper is dropped: the server hears no ping and
# expires its session. Then what ZooKeeper sends to droverd-1 is dropped: the client hears no
# answer, gives the connection up (its FIN still arrives) and cannot connect again, and the
# session expires the same way. Either way droverd-1's /readyz turns 503, its job moves to
# droverd-2 under a newer token, nothing runs twice; healed, droverd-1 rejoins.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

SESSION=4s
start_droverd 1
setup_tenant
start_worker worker-1
start_droverd 2
jobs=()
# a_job_of_1: new jobs until a running one of droverd-1's has a task done (JID).
a_job_of_1() {
  local j
  jobs+=("$(PORT=${DPORTS[2]} long_job "c${#jobs[@]}" 2 800)")
  for j in $(psql_q "SELECT id FROM jobs WHERE owner = 'droverd-1' AND status = 'running'"); do
    [ "$(done_of "$j")" -ge 1 ] && { JID=$j; return 0; }
  done
  return 1
}
PORT=${DPORTS[2]}
not_draining() { [ "$(member_field droverd-1 draining)" = false ]; }
for way in "droverd-1 zk1" "zk1 droverd-1"; do
  poll_until -e 1 90 a_job_of_1 || fail "no running job of droverd-1's"
  tok0=$(token_of "$JID")
  t0=$(now_ms)
  # shellcheck disable=SC2086 # "FROM TO"
  nf cut $way --oneway > /dev/null
  wait_until 30 "droverd-1's /readyz to answer 503 (${way/ / -> } dropped)" ready_is droverd-1 503
  wait_until 60 "job $JID to move to droverd-2 (${way/ / -> } dropped)" owner_is "$JID" droverd-2
  t1=$(now_ms)
  [ "$(token_of "$JID")" -gt "$tok0" ] || fail "job $JID moved without a newer token"
  nf heal > /dev/null
  wait_until 60 "droverd-1's /readyz to answer 200 (healed)" ready_is droverd-1 200
  wait_until 30 "droverd-1 back in the members" not_draining
  pass "${way/ / -> } dropped: droverd-1 503, job $JID on droverd-2 $(((t1 - t0) / 1000)) s after the cut (session $SESSION); healed, droverd-1 serves"
done
# shellcheck disable=SC2068 # a list of ids
the_end ${jobs[@]}
pass "both one-way losses: every job succeeded, none ran twice or overlapped, the tree is clean"
