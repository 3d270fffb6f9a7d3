#!/usr/bin/env bash
# `drover job logs` and `job get`'s first failure, on a job that fails for real (droverd,
# a worker and the sleep plugin): app's install fails on both nodes, node-1's at once and
# node-2's 3 s later. `job logs --follow`, started with the job, prints each
# attempt as it ends (its message and stderr tail) and exits 1 when the job ends
# rolled-back; `job logs JOB TASK --attempt N` prints that attempt; `job get` names the
# task that failed first with its own error and stderr; droverd's task-gave-up line of each
# task carries that task's own error, not the job's first one. Also `workers` (what each runs)
# and `job plan` (stage by stage) while the job runs.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1 "engine.max_failures = 1"
start_worker worker-1
setup_tenant
D="$BIN/drover"
export DROVER_URL="http://127.0.0.1:$PORT" DROVER_TOKEN=$TOKEN

# Both app installs wait at a gate until both run, so that both fail (and give up) whatever the
# machine's load; then node-1's fails at once and node-2's 3 s later.
read -r CID JID <<< "$(create_cluster broken 2 "$(jq -cn --arg g "$T/gate" '{
  fail_on: {task: "install", service: "app"},
  durations: {"node-2/app/install": 3000},
  hold_on: {task: "install", service: "app", file: $g}}')")"
[ -n "$CID" ] || fail "no cluster"
"$D" job logs "$JID" --follow > "$T/follow.out" 2> "$T/follow.err" &
follow=$!
installs_held() { [ "$("$D" job get "$JID" | grep -Ec '^f +node-[12]/app/install +running')" = 2 ]; }
wait_until 30 "both app installs to start and wait at the gate" installs_held
"$D" workers > "$T/workers"
grep -Eq "^worker-1 +[^ ]+ +default +serving +[0-9-]+T[0-9:]+Z +.*$JID:node-1/app/install" "$T/workers" &&
  grep -q "$JID:node-2/app/install" "$T/workers" || fail "workers: $(cat "$T/workers")"
"$D" job plan "$JID" > "$T/plan"
grep -Eq '^create: [0-9]+ tasks in [0-9]+ stages$' "$T/plan" && grep -q '^  node-1/create$' "$T/plan" ||
  fail "job plan: $(head "$T/plan")"
"$D" job plan "$JID" --json | jq -e '.operation == "create"' > /dev/null || fail "job plan --json"
gone "$follow" && fail "job logs --follow ended before the job: $(cat "$T/follow.err")"
touch "$T/gate"
wait_job "$JID" rolled-back 120
wait_until 30 "job logs --follow to end with the job" gone "$follow"
set +e
wait "$follow"
rc=$?
set -e
[ $rc = 1 ] || fail "job logs --follow of a rolled-back job: status $rc"
grep -q "^==> node-1/app/install attempt 1 on worker-1: failed" "$T/follow.out" ||
  fail "follow: no failed attempt of node-1/app/install: $(cat "$T/follow.out")"
grep -q "^    | sleep: failing node-1/app/install as asked" "$T/follow.out" || fail "follow: no stderr: $(cat "$T/follow.out")"
grep -q "^==> node-1/create attempt 1 on worker-1: succeeded" "$T/follow.out" ||
  fail "follow: node-1/create's attempt: $(cat "$T/follow.out")"
grep -q "^==> node-1/delete attempt 1 (rollback) on worker-1: succeeded" "$T/follow.out" ||
  fail "follow: the rollback's attempts: $(cat "$T/follow.out")"
[ "$(grep -c '^==> node-1/app/install attempt 1 ' "$T/follow.out")" = 1 ] || fail "follow printed an attempt twice"
grep -q "rolled-back" "$T/follow.err" || fail "follow's last word: $(cat "$T/follow.err")"
pass "job logs --follow prints each attempt as it ends, with its stderr, and ends with the job"

"$D" job logs "$JID" node-2/app/install --attempt 1 > "$T/one.out" || fail "job logs TASK --attempt"
grep -q "^==> node-2/app/install attempt 1 on worker-1: failed" "$T/one.out" || fail "job logs TASK: $(cat "$T/one.out")"
grep -q "message: failed as asked (sleep plugin)" "$T/one.out" || fail "job logs: no message: $(cat "$T/one.out")"
[ "$(grep -c '^==> ' "$T/one.out")" = 1 ] || fail "job logs TASK printed other tasks: $(cat "$T/one.out")"
set +e
"$D" job logs "$JID" node-9/nothing > /dev/null 2> "$T/err"; rc=$?
"$D" job logs "$JID" --attempt zero > /dev/null 2>&1; rc2=$?
set -e
[ "$rc $rc2" = "1 2" ] && grep -q 'has no task "node-9/nothing"' "$T/err" || fail "an unknown task: $rc $rc2 $(cat "$T/err")"
pass "job logs JOB TASK --attempt N: that attempt only; an unknown task is an error"

"$D" job get "$JID" > "$T/get.out"
grep -q "^first failure: node-1/app/install (attempt 1 on worker-1, [0-9T:-]*Z): failed as asked" "$T/get.out" ||
  fail "job get's first failure: $(cat "$T/get.out")"
grep -q "^  | sleep: failing node-1/app/install as asked" "$T/get.out" || fail "job get: no stderr: $(cat "$T/get.out")"
grep -Eq "^created [0-9-]+T[0-9:]+Z by alice, took [0-9]+(s|m[0-9]+s)$" "$T/get.out" || fail "job get's times: $(cat "$T/get.out")"
"$D" job list | grep -Eq "^$JID +$CID +create +rolled-back +[0-9-]+T[0-9:]+Z +[0-9]+(s|m[0-9]+s) +alice" ||
  fail "job list: $("$D" job list)"
set +e
"$D" job watch "$JID" > /dev/null 2> "$T/watch.err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "(drover job get $JID: its first failure; drover job logs $JID: " "$T/watch.err" ||
  fail "job watch of a failed job: $rc $(cat "$T/watch.err")"
pass "job get names the task that failed first, with its own error and stderr; job list: ISO times, durations"

# Each task's give-up line carries its own error (both installs gave up).
for n in 1 2; do
  grep -q "event=task-gave-up job=$JID task=node-$n/app/install error=\"task node-$n/app/install failed" "$T/droverd-1.log" ||
    fail "node-$n's task-gave-up line: $(grep task-gave-up "$T/droverd-1.log")"
done
pass "droverd's task-gave-up lines carry each task's own error"
