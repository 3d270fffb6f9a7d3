#!/usr/bin/env bash
# A worker's record of an attempt refused (NOAUTH): the job's runs/ made by an older droverd,
# which did not grant the job's tenant create on it, met by a worker of this build that logs in
# as its tenant (a rolling upgrade's mixed fleet; docs/operations.md gives the order). The
# worker must keep its claim and send the record again (every 2 s, event=record-refused),
# never drop the item: dropped, the task would show running for ever (issue 33 item 1). Here
# runs/'s ACL is set to droverd's identity alone while the job's first tasks wait in the
# queue, then put back once the worker has been refused twice: the record goes through, the
# job succeeds, each task once.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

PY=/usr/bin/python3
zk_logins
ZK_DROVERD_ID=$DROVERD_ID # workers: tenant acme's identity
start_droverd 1 "zookeeper.digest_file = $T/zk.digest"
setup_tenant
read -r _ JID <<< "$(create_cluster c1 1)"
wait_until 60 "job $JID's first tasks to be queued" job_has_queued "$JID" 1

acl() { # close|open: runs/ of the job for droverd alone (as an older droverd made it), or back
  "$PY" - "$DROVER_ZK" "$T/zk.digest" "/drover/jobs/$JID/runs" "$1" "$T/runs.acl" << 'PY'
import json, sys
from kazoo.client import KazooClient
from kazoo.security import ACL, Id
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", open(sys.argv[2]).read().strip())])
zk.start(timeout=30)
path, what, keep = sys.argv[3], sys.argv[4], sys.argv[5]
if what == "close":
    acls, _ = zk.get_acls(path)
    json.dump([[a.perms, a.id.scheme, a.id.id] for a in acls], open(keep, "w"))
    mine = [a for a in acls if a.id.scheme == "digest" and a.id.id.startswith("drover:")]
    zk.set_acls(path, mine)
else:
    zk.set_acls(path, [ACL(p, Id(s, i)) for p, s, i in json.load(open(keep))])
zk.stop()
PY
}
acl close
start_worker worker-1
refused() { [ "$(grep -c "event=record-refused worker=worker-1 task=$JID\." "$T/worker-1.log" || true)" -ge 2 ]; }
wait_until 60 "worker-1's record to be refused twice" refused
grep -q "event=task-dropped" "$T/worker-1.log" && fail "the worker dropped an item"
acl open
wait_job "$JID" succeeded 120
grep -q "event=task-dropped" "$T/worker-1.log" && fail "the worker dropped an item"
pass "the record refused $(grep -c "event=record-refused" "$T/worker-1.log") times went through once runs/ was open; the job succeeded"
check_runs
check_tree_clean
