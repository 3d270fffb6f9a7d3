#!/usr/bin/env bash
# Taking back many queued items is linear (run.c engine__withdraw, coord_queue_key_item):
# a cancel of a job with SMALL, then 10 x SMALL tasks queued (no worker runs, so every
# node's create stays queued) takes every item back, the owner keeps its lock, the job
# ends cancelled; and the time per item taken back of the large job is within a few times
# the small one's (a find per item, which read the whole queue each time, made it grow with
# the queue's length: quadratic).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

SMALL=${SMALL:-200}
# 10 x SMALL queued at once: above the default engine.max_in_flight (1,000).
start_droverd 1 "engine.max_in_flight = 0"
setup_tenant

queued_of() { psql_q "SELECT count(*) FROM tasks WHERE job_id = $1 AND status = 'queued'"; }
all_queued() { [ "$(queued_of "$1")" -ge "$2" ]; }
# withdraw NAME NODES: create, wait for NODES queued creates, cancel; prints "ITEMS TAKEN MS".
withdraw() {
  local jid line
  read -r _ jid <<< "$(create_cluster "$1" "$2")"
  wait_until 300 "job $jid's $2 creates to be queued" all_queued "$jid" "$2"
  expect 202 "$(api POST "/v1/jobs/$jid/cancel")" '.control == "cancel"' "cancel job $jid" >&2
  wait_job "$jid" cancelled 300
  line=$(grep "event=job-withdrawn job=$jid " "$T/droverd-1.log" | head -1)
  [ -n "$line" ] || fail "job $jid: no withdrawal logged"
  grep -q "event=job-lost job=$jid " "$T/droverd-1.log" && fail "job $jid: the owner lost it while withdrawing"
  [ "$(grep -c "event=job-acquired job=$jid " "$T/droverd-1.log")" = 1 ] || fail "job $jid was taken more than once"
  [[ $line =~ items=([0-9]+)\ taken=([0-9]+)\ ms=([0-9]+) ]] || fail "job $jid: bad withdrawal line: $line"
  echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
}

read -r n1 k1 ms1 <<< "$(withdraw small "$SMALL")"
[ "$n1" -ge "$SMALL" ] && [ "$k1" = "$n1" ] || fail "small job: $k1 of $n1 items taken back, expected $SMALL"
read -r n2 k2 ms2 <<< "$(withdraw large $((SMALL * 10)))"
[ "$n2" -ge $((SMALL * 10)) ] && [ "$k2" = "$n2" ] || fail "large job: $k2 of $n2 items taken back, expected $((SMALL * 10))"
# Time per item, large over small, in hundredths (ms of at least 1: a fast small run).
[ "$ms1" -ge 1 ] || ms1=1
ratio=$((ms2 * n1 * 100 / (ms1 * n2)))
echo "withdraw: $n1 items in $ms1 ms, $n2 items in $ms2 ms: per item x$((ratio / 100)).$((ratio % 100))"
[ "$ratio" -le 400 ] || fail "withdrawing grew faster than the items: per item x$((ratio / 100)).$((ratio % 100)) for 10 x the items"
check_tree_clean
pass "$n2 queued items taken back linearly, the owner kept the job, the job was cancelled"
