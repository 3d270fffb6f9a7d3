#!/usr/bin/env bash
# Slots in a rolling upgrade (issue 37; docs/engine.md "Tasks to slots"): droverd assigns a
# job's tasks to the workers' slots only while every droverd member and every live worker of
# the job's tenant and class says "slots"; otherwise it puts queue items, as the build before.
#  1. worker-1 is of the build before slots (DROVER_FAULT=worker-old-build: no slots, queue
#     items only), worker-2 of this one: a job's tasks all go to the queue, and both workers
#     take them.
#  2. worker-1 stops (drained): the next job's tasks all go to worker-2's slots.
#  3. droverd-2, of the build before slots (DROVER_FAULT=member-old-build), joins: the next
#     jobs' tasks go to the queue again, whichever droverd owns them.
# Every job succeeds, each task run once.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
DROVER_FAULT=worker-old-build CONCURRENCY=2 start_worker worker-1 "worker.slots = true"
CONCURRENCY=2 start_worker worker-2 "worker.slots = true"
setup_tenant
# mode_is N: droverd-1's last word on the queue acme/default says slots=N.
mode_is() {
  grep 'event=slots-queue node=droverd-1 queue=acme/default' "$T/droverd-1.log" | tail -n 1 |
    grep -q "slots=$1"
}
wait_until 30 "droverd-1 to see worker-1 (no slots)" mode_is 0

# via JOB: how its tasks reached the workers, "queue:N slot:M".
via() {
  local q s
  q=$(cat "$T"/worker-*.log | grep "event=task-ended" | grep -c "task=$1\\..*via=queue" || true)
  s=$(cat "$T"/worker-*.log | grep "event=task-ended" | grep -c "task=$1\\..*via=slot" || true)
  echo "queue:$q slot:$s"
}

read -r _ J1 <<< "$(create_cluster c1 2)"
wait_job "$J1" succeeded 120
v=$(via "$J1")
[[ $v == "queue:"[1-9]*" slot:0" ]] || fail "job 1 (a worker of the build before slots): $v"
grep -q "task=$J1\\..*via=queue" "$T/worker-1.log" || fail "the older worker took none of job 1's tasks"
pass "with a worker of the build before slots, every task went to the queue ($v)"

kill -TERM "$(pid_of worker-1)"
wait_exit worker-1 60 > /dev/null
wait_until 30 "droverd-1 to see every worker take slots" mode_is 1
read -r _ J2 <<< "$(create_cluster c2 2)"
wait_job "$J2" succeeded 120
v=$(via "$J2")
[[ $v == "queue:0 slot:"[1-9]* ]] || fail "job 2 (only workers of this build): $v"
pass "with only workers of this build, every task went to a slot ($v)"

DROVER_FAULT=member-old-build start_droverd 2
wait_until 30 "droverd-2 to join" grep -q 'event=slots-droverd node=droverd-1 all=0' "$T/droverd-1.log"
J3S=()
for i in 3 4 5; do
  read -r _ J <<< "$(create_cluster c$i 1)"
  J3S+=("$J")
done
for J in "${J3S[@]}"; do
  wait_job "$J" succeeded 120
  v=$(via "$J")
  [[ $v == "queue:"[1-9]*" slot:0" ]] || fail "job $J (a droverd of the build before slots): $v"
done
pass "with a droverd of the build before slots, every task went to the queue"
check_runs
check_tree_clean
