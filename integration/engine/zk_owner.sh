#!/usr/bin/env bash
# The owner's ZooKeeper requests per small job, as counts (issue 25: at most 40 per small
# job). One droverd, one noop worker, a warm-up job, then JOBS lone `single` jobs of 3 nodes
# (15 tasks) one after the other; droverd's own counters by kind and path class (/metrics,
# drover_zk_requests_total) before and after. docs/engine.md "What a job costs" has the
# round trips this checks:
#   - the sweep deletes the subtree by the names the owner made: no listing of the job's
#     znode or its children (it listed the root and each of its five children);
#   - the lock: its directory's parents are not created again for each job, and a new lock
#     (its contender the directory's first child) is held without listing the contenders;
#   - the control znode's watch (absent but for a user's pause, resume or cancel) looks with
#     one exists, not a failed read and then the exists;
#   - run records are kept after their rows (up to ENGINE_RUNS_KEEP) and go with the subtree:
#     no delete of a record, so the owner's runs/ watch fires only for the workers' records
#     (a listing per record at most, and the first; the old code listed again after each
#     round that deleted records: 1.3 listings per record in a lone job).
# The total per job is printed, not asserted: the reads of the records (one or two each, as
# the outcome is there at the first read or not) and the rounds depend on timing.
# Then a job paused and resumed (the API's control znode is a name the owner did not make):
# its sweep falls back to listing, and the tree is clean.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

JOBS=${JOBS:-3}
LOG_LEVEL=info start_droverd 1
setup_tenant
WORKER_PLUGINS=noop,noop-provider CONCURRENCY=16 start_worker worker-1

owned() { curl -s "http://127.0.0.1:${DPORTS[1]}/metrics" | awk '$1 == "drover_engine_jobs_owned{node=\"droverd-1\"}" { print $2 }'; }
none_owned() { [ "$(owned)" = 0 ]; }
# by_path: droverd-1's requests so far, "kind path count" a line
by_path() {
  curl -s "http://127.0.0.1:${DPORTS[1]}/metrics" |
    sed -n 's/^drover_zk_requests_total{kind="\([^"]*\)",path="\([^"]*\)"} \([0-9]*\)$/\1 \2 \3/p'
}
# delta KIND PATH: requests of that kind and path class between the two snapshots
delta() {
  awk -v k="$1" -v p="$2" 'NR == FNR { if ($1 == k && $2 == p) b = $3; next }
    $1 == k && $2 == p { a = $3 } END { print a - b }' "$T/reqs0" "$T/reqs1"
}

wait_job "$(submit warm-up)" succeeded 120
wait_until 30 "droverd-1 to let go of the warm-up job" none_owned
by_path > "$T/reqs0"
ids=()
for ((i = 1; i <= JOBS; i++)); do
  J=$(submit "lone-$i")
  ids+=("$J")
  wait_job "$J" succeeded 120
  wait_until 30 "droverd-1 to let go of job $J" none_owned
done
by_path > "$T/reqs1"
total=$(awk 'NR == FNR { b[$1 " " $2] = $3; next } { s += $3 - b[$1 " " $2] } END { print s }' "$T/reqs0" "$T/reqs1")
echo "droverd-1's requests for $JOBS lone jobs: $total; by kind and path:"
awk 'NR == FNR { b[$1 " " $2] = $3; next } $3 > b[$1 " " $2] { print "  " $3 - b[$1 " " $2], $1, $2 }' \
  "$T/reqs0" "$T/reqs1" | sort -rn

for p in '/drover/jobs/{}' '/drover/jobs/{}/state' '/drover/jobs/{}/ctx' '/drover/jobs/{}/nodes' '/drover/jobs/{}/log'; do
  [ "$(delta children "$p")" = 0 ] || fail "the sweep listed $p $(delta children "$p") times"
done
pass "the sweep deleted each job's subtree by its names, listing nothing"
for p in /drover /drover/locks /drover/locks/jobs; do
  [ "$(delta create "$p")" = 0 ] || fail "the lock created $p again $(delta create "$p") times"
done
[ "$(delta children '/drover/locks/jobs/{}')" = 0 ] ||
  fail "uncontended new locks were listed $(delta children '/drover/locks/jobs/{}') times"
[ "$(delta create '/drover/locks/jobs/{}/{}')" = "$JOBS" ] ||
  fail "contenders created $(delta create '/drover/locks/jobs/{}/{}') times for $JOBS jobs"
pass "each job's lock: its directory and one contender created, no parents, no listing"
[ "$(delta get '/drover/jobs/{}/control')" = 0 ] && [ "$(delta exists '/drover/jobs/{}/control')" = "$JOBS" ] ||
  fail "the control znode's watch: $(delta get '/drover/jobs/{}/control') reads and $(delta exists '/drover/jobs/{}/control') exists for $JOBS jobs"
pass "each job's control watch: one exists, no read of the absent znode"
# A record's delete is in a multi-op (counted by its first op); no record deleted means the
# runs/ watch fired only for the records the worker made (one each, every task ran once), and
# once when set (twice when runs/ was not there yet: the exists that waits for it).
tasks=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = ${ids[0]} AND action <> 'anchor'")
runs_lists=$(delta children '/drover/jobs/{}/runs')
[ "$runs_lists" -le $((JOBS * (tasks + 2))) ] ||
  fail "runs/ listed $runs_lists times for $JOBS jobs of $tasks tasks: more than one per record and two to set"
pass "droverd-1: $total requests for $JOBS lone jobs of $tasks tasks, runs/ listed $runs_lists times"

# Every job did its work, and the run records went with the subtree.
check_attempt_rows "$tasks" "${ids[@]}"
check_tree_clean

# A name the owner did not make: the control znode of a job paused and resumed. The first
# sweep's multi-op fails whole, the sweep lists, and nothing is left.
kill "$(pid_of worker-1)"
wait_exit worker-1 30 > /dev/null
JP=$(submit paused)
expect 202 "$(api POST "/v1/jobs/$JP/pause")" '' "pause job $JP"
wait_until 60 "job $JP paused" job_is "$JP" paused
expect 202 "$(api POST "/v1/jobs/$JP/resume")" '' "resume job $JP"
WORKER_PLUGINS=noop,noop-provider CONCURRENCY=16 start_worker worker-2
wait_job "$JP" succeeded 120
wait_until 30 "droverd-1 to let go of job $JP" none_owned
grep -q "event=job-sweep-listing job=$JP" "$T/droverd-1.log" ||
  fail "job $JP's sweep did not fall back to listing (its control znode)"
grep -q "event=job-swept job=$JP" "$T/droverd-1.log" || fail "job $JP was not swept"
check_tree_clean
pass "a job with a control znode: the sweep listed, and the tree is clean"

# A rolling upgrade: a member of an older build (its data without "keeps_runs", which merges
# the records it finds on resume in the listing's order) makes every owner delete each record
# once its row is written, as before; kept again once it has left. The member is a stand-in
# (draining: the ring steps over it, it takes no job).
member() { # create|delete
  /usr/bin/python3 - "$DROVER_ZK" "$1" << 'PY'
import json, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start(timeout=30)
path = "/drover/members/droverd/old-build"
if sys.argv[2] == "create":
    d = json.loads(zk.get("/drover/members/droverd/droverd-1")[0])
    d.pop("keeps_runs", None)
    d.update(id="old-build", draining=True, owned=0)
    zk.create(path, json.dumps(d).encode())
else:
    zk.delete(path)
zk.stop()
PY
}
kept_is() { [ "$(grep -c "event=run-records-kept node=droverd-1 kept=$1" "$T/droverd-1.log")" -ge "$2" ]; }
kept_is 1 1 || fail "droverd-1 never said it keeps run records"
member create
wait_until 30 "droverd-1 to see the older member" kept_is 0 1
wait_job "$(submit mixed)" succeeded 120
wait_until 30 "droverd-1 to let go of the mixed job" none_owned
member delete
wait_until 30 "droverd-1 to keep records again" kept_is 1 2
check_tree_clean
pass "an older member in the group: records deleted at once, the job succeeded, the tree is clean"
