#!/usr/bin/env bash
# A droverd cut from PostgreSQL but not from ZooKeeper (docs/operations.md "When the network
# fails"): it keeps its ZooKeeper session, so nothing else would take its jobs, and it can
# write none of them (a gray failure). Within a bound it gives them up: its /readyz turns 503
# (the store's ping goes unanswered: 5 s), after postgres.lost_after (3 s here) it steps out
# of the ring (event=postgres-lost; its writes in flight end by the store's bound on a silent
# connection, 10 s), and droverd-2, which reaches PostgreSQL, takes the job and finishes it;
# nothing runs twice. Healed: droverd-1 answers 200 again, leaves the drain
# (event=postgres-back) and serves.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

SESSION=4s
DROVERD_EXTRA=("postgres.lost_after = 3s")
start_droverd 1 "${DROVERD_EXTRA[@]}"
setup_tenant
start_worker worker-1
# Jobs until one is droverd-1's (the ring's choice), running long enough to cross the cut.
JID=
for i in 1 2 3 4 5 6; do
  j=$(long_job "c$i" 2 1500)
  [ -z "$JID" ] && JID=$j
done
start_droverd 2 "${DROVERD_EXTRA[@]}"
mine() {
  local j
  for j in $(psql_q "SELECT id FROM jobs WHERE owner = 'droverd-1' AND status = 'running'"); do
    [ "$(done_of "$j")" -ge 1 ] && { JID=$j; return 0; }
  done
  return 1
}
wait_until 60 "a running job of droverd-1's with a task done" mine
PORT=${DPORTS[2]}
t0=$(now_ms)
nf cut droverd-1 pg > /dev/null
pass "droverd-1 cut from PostgreSQL ($(nf list | wc -l) rules) while it owns job $JID"

wait_until 30 "droverd-1's /readyz to answer 503" ready_is droverd-1 503
t_unready=$(now_ms)
wait_until 60 "droverd-1 to step out (event=postgres-lost)" logged droverd-1 postgres-lost
t_out=$(now_ms)
wait_until 90 "job $JID to move to droverd-2" owner_is "$JID" droverd-2
t_moved=$(now_ms)
ready_is droverd-2 200 || fail "droverd-2, which reaches PostgreSQL, is not ready"
pass "droverd-1: /readyz 503 $(((t_unready - t0) / 1000)) s after the cut, stepped out at $(((t_out - t0) / 1000)) s, job $JID on droverd-2 at $(((t_moved - t0) / 1000)) s"

nf heal > /dev/null
[ -z "$(nf list)" ] || fail "rules left after heal: $(nf list)"
wait_until 60 "droverd-1 back (event=postgres-back)" logged droverd-1 postgres-back
wait_until 30 "droverd-1's /readyz to answer 200" ready_is droverd-1 200
not_draining() { [ "$(member_field droverd-1 draining)" = false ]; }
wait_until 30 "droverd-1's member to say draining false" not_draining

# Every job ends, none ran twice; jobs made now are served by both (droverd-1 in the ring).
jobs=$(psql_q "SELECT string_agg(id::text, ' ') FROM jobs")
# shellcheck disable=SC2086 # a list of ids
the_end $jobs
pass "healed: droverd-1 serves again; every job succeeded, no task ran twice or overlapped, the tree is clean"
