#!/usr/bin/env bash
# An engine freed while one of its batched ZooKeeper multi-ops is in flight (batch.c, the
# orphaned zmulti; docs/engine.md "Batching across jobs"). droverd-1 holds the answer to its
# first multi-op of several jobs (DROVER_FAULT=hold-batch-answer): those jobs, and every later
# multi-op of the node, wait for it. SIGTERM then finds them mid-batch; the drain cannot end,
# the shutdown's grace runs out and the engine is freed with the multi-op flying; coord hands
# the answer over only while its session closes, after the engine is gone. droverd-1 must exit
# 0, without a crash or a sanitizer report, the orphaned answer only freeing its dead jobs'
# parts; the next owner finishes every job, each task run once.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

K=6
DROVER_FAULT=hold-batch-answer start_droverd 1 "shutdown.grace = 2s"
setup_tenant

# The jobs are all under way before any task runs (no worker yet), so that their rounds
# coincide once one runs their tasks, and go out in one multi-op. Since the jobs' starts are
# batched too, their first dispatch may already be that multi-op (held, so they never show
# dispatched): either will do.
held_or_dispatched() { grep -q "event=fault-injected fault=hold-batch-answer" "$T/droverd-1.log" || dispatched "$@"; }
ids=()
for ((i = 1; i <= K; i++)); do
  read -r _ J <<< "$(create_cluster "orphan-$i" 2)"
  ids+=("$J")
done
wait_until 120 "the $K jobs to dispatch, or their multi-op held" held_or_dispatched "${ids[@]}"
CONCURRENCY=8 start_worker worker-1
wait_until 120 "droverd-1 to hold the answer to a multi-op of several jobs" \
  grep -q "event=fault-injected fault=hold-batch-answer" "$T/droverd-1.log"
held=$(grep -o "fault=hold-batch-answer jobs=[0-9]*" "$T/droverd-1.log" | head -n 1)

kill -TERM "$(pid_of droverd-1)"
# (wait_exit in this shell, not in $(...): only the parent can wait for the exit status.)
wait_exit droverd-1 60 > "$T/exit.status" || fail "droverd-1 did not exit within 60 s of SIGTERM"
st=$(cat "$T/exit.status")
[ "$st" = 0 ] || fail "droverd-1 exited with status $st (a crash in the orphaned answer?)"
! grep -q 'AddressSanitizer\|runtime error:\|Segmentation' "$T/droverd-1.log" ||
  fail "droverd-1 reported a memory error"
grep -q "event=grace-over" "$T/droverd-1.log" ||
  fail "droverd-1 handed every job over: the held multi-op was not in flight when the engine stopped"
grep -q "event=batch-answer-orphaned jobs=${held##*=}" "$T/droverd-1.log" ||
  fail "the held answer never reached the orphaned multi-op ($held)"
pass "droverd-1 exited 0 with a multi-op of ${held##*=} jobs in flight; its answer came after the engine was freed"

start_droverd 2
PORT=${DPORTS[2]}
for J in "${ids[@]}"; do wait_job "$J" succeeded 180; done
check_runs
check_tree_clean
pass "the next owner finished the $K jobs, no task twice"
