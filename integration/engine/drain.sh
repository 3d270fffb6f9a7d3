#!/usr/bin/env bash
# An operator's drain of a droverd and of a worker (docs/operations.md "Drain"):
#  - `drover node drain ID` sent to ANOTHER node reaches the named one (through
#    /drover/control/droverd/<id>): its /readyz turns 503, it hands every job over at once
#    (no session timeout), its member znode says drained with 0 owned, it still answers
#    API requests, and every job succeeds with no task run twice;
#  - `drover members` shows the states and owned counts;
#  - `drover node undrain ID` puts it back: /readyz 200, it takes its share of new jobs;
#  - a drain asked of one incarnation does not touch the next process under the same id;
#  - `drover worker drain ID` makes that worker stop taking, finish and exit 0.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

for n in 1 2 3; do start_droverd $n; done
CONCURRENCY=6
for w in 1 2 3; do start_worker worker-$w; done
setup_tenant
D="$BIN/drover"
member_field() { # ID JQ: a field of the member's znode, as GET /v1/members shows it
  body_of "$(api GET /v1/members)" | jq -r --arg id "$1" ".members[] | select(.id == \$id) | .data | $2"
}
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${DPORTS[$1]}/readyz"; }

# --- drain the owner of running jobs, asked through another node
jobs=()
for c in 1 2 3 4 5 6; do
  read -r _ J <<< "$(create_cluster d$c 3 '{"duration_ms": 1000}')"
  jobs+=("$J")
done
# a node that owns at least one of them
# find_victim: VICTIM is the owner of the first job that has one.
find_victim() {
  local j o
  for j in "${jobs[@]}"; do
    o=$(owner_of "$j")
    [ -n "$o" ] && VICTIM=$o && return 0
  done
  return 1
}
VICTIM=
wait_until -e 0.2 30 "a job to get an owner" find_victim
V=${VICTIM#droverd-}
OTHER=$(((V % 3) + 1))
export DROVER_URL="http://127.0.0.1:${DPORTS[$OTHER]}" DROVER_TOKEN=$TOKEN
owned_before=$(member_field "$VICTIM" .owned)
# A droverd serves every tenant: a tenant's admin may not drain one, a superadmin may.
expect 403 "$(api POST "/v1/members/$VICTIM/drain" '' "$TOKEN")" '.error.code == "forbidden"' "a tenant's admin drains a droverd"
[ "$(member_field "$VICTIM" .draining)" != true ] || fail "a refused drain drained $VICTIM"
t_drain=$(now_ms)
DROVER_TOKEN=$SUPER "$D" node drain "$VICTIM" --wait 20 > "$T/drain.out" || fail "drover node drain: $(cat "$T/drain.out")"
t_drained=$(now_ms)
# PostgreSQL's clock at the end of the drain: a job the victim owned may have ended before it
# (on a loaded machine some do), none after it.
drained_at=$(psql_q "SELECT now()")
grep -q "drained" "$T/drain.out" || fail "drain did not report drained: $(cat "$T/drain.out")"
[ "$(readyz "$V")" = 503 ] || fail "$VICTIM /readyz is not 503 while drained"
[ "$(member_field "$VICTIM" .drained)" = true ] || fail "$VICTIM member data does not say drained"
[ "$(member_field "$VICTIM" .owned)" = 0 ] || fail "$VICTIM still owns jobs"
echo "drain: $VICTIM owned $owned_before jobs, owned none $((t_drained - t_drain)) ms after the request"
[ $((t_drained - t_drain)) -lt 4000 ] || fail "the drain waited for a session timeout"
# It keeps serving requests sent to it directly.
PORT=${DPORTS[$V]} expect 200 "$(PORT=${DPORTS[$V]} api GET /v1/jobs)" '' "GET /v1/jobs on the drained node"
"$D" members > "$T/members.out"
grep -E "^$VICTIM +.* drained +[0-9]+ +0 " "$T/members.out" > /dev/null || fail "drover members: $(cat "$T/members.out")"
for J in "${jobs[@]}"; do wait_job "$J" succeeded 120; done
moved=0
for J in "${jobs[@]}"; do
  after=$(psql_q "SELECT ended_at > '$drained_at'::timestamptz FROM jobs WHERE id = $J")
  [ "$after" = t ] || continue
  [ "$(owner_of "$J")" != "$VICTIM" ] || fail "job $J ended after the drain, owned by the drained $VICTIM"
  moved=$((moved + 1))
done
echo "drain: $moved of ${#jobs[@]} jobs ended after the drain, none owned by $VICTIM"
check_runs
pass "node drain through another node: $VICTIM out of the ring, 503, jobs handed over and succeeded"

# --- undrain, by the superadmin (who sees the members too)
DROVER_TOKEN=$SUPER "$D" members > "$T/members.out" || fail "drover members as the superadmin"
grep -qE "^$VICTIM +.* drained " "$T/members.out" || fail "superadmin's drover members: $(cat "$T/members.out")"
DROVER_TOKEN=$SUPER "$D" node undrain "$VICTIM" > /dev/null || fail "drover node undrain"
wait_http "${DPORTS[$V]}" /readyz 200 10 || fail "$VICTIM /readyz not 200 after undrain"
[ "$(member_field "$VICTIM" .draining)" = false ] || fail "$VICTIM still says draining"
more=()
for c in 1 2 3 4 5 6 7 8 9; do
  read -r _ J <<< "$(create_cluster u$c 1)"
  more+=("$J")
done
for J in "${more[@]}"; do wait_job "$J" succeeded 120; done
took=0
for J in "${more[@]}"; do [ "$(owner_of "$J")" = "$VICTIM" ] && took=$((took + 1)); done
[ "$took" -ge 1 ] || fail "$VICTIM took none of 9 new jobs after undrain"
pass "node undrain: $VICTIM ready again and owned $took of 9 new jobs"

# --- a drain asked of one incarnation does not reach the next one
DROVER_TOKEN=$SUPER "$D" node drain "$VICTIM" --wait 20 > /dev/null || fail "second drain"
kill -TERM "$(pid_of "$VICTIM")"
# (not in $(...): only this shell, the parent, can wait for the exit status)
wait_exit "$VICTIM" 20 > "$T/exit.status" || echo timeout > "$T/exit.status"
[ "$(cat "$T/exit.status")" = 0 ] || fail "$VICTIM exited $(cat "$T/exit.status") after SIGTERM while drained"
start_droverd "$V"
sleep 1
[ "$(readyz "$V")" = 200 ] || fail "the restarted $VICTIM obeyed its predecessor's drain"
pass "a restarted node ignores the drain of its predecessor"

# --- worker drain
read -r _ JW <<< "$(create_cluster w1 4 '{"duration_ms": 500}')"
sleep 1
"$D" worker drain worker-1 > /dev/null || fail "drover worker drain"
wait_exit worker-1 40 > "$T/exit.status" || fail "worker-1 did not exit after drover worker drain"
[ "$(cat "$T/exit.status")" = 0 ] || fail "worker-1 exited $(cat "$T/exit.status")"
grep -q "event=draining" "$T/worker-1.log" || fail "worker-1 did not log its drain"
# Its last line says what it took, what it cost ZooKeeper by kind, and what its queue takes
# did (docs/worker.md "Costs").
grep -Eq "event=worker-stopped worker=worker-1 taken=[0-9]+ (too_new=[0-9]+ )?zk_create=[1-9][0-9]* .*zk_children=[1-9][0-9]* .*zk_multi=[0-9]+ q_listings=[1-9][0-9]* .*q_delivered=[0-9]+ " "$T/worker-1.log" ||
  fail "worker-1's stop line: $(grep event=worker-stopped "$T/worker-1.log")"
wait_job "$JW" succeeded 120
expect 404 "$(api POST /v1/workers/worker-1/drain '')" '' "drain of a worker that left"
expect 404 "$(api POST /v1/members/nosuch/drain '' "$SUPER")" '' "drain of no member"
check_runs
check_tree_clean
pass "worker drain: worker-1 stopped taking, finished and exited 0; the job succeeded"
