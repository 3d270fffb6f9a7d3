#!/usr/bin/env bash
# The owner's delete of a run record refused (NOAUTH: a runs/ that does not let droverd delete,
# e.g. an ACL set by hand) is not a record already gone (issue 33 item 6). droverd runs as a
# member of an older build (DROVER_FAULT=member-old-build: each record deleted once its row is
# written), and the job's runs/ loses droverd's delete permission while its first tasks wait.
# Each refused delete is logged (event=run-record-delete-refused), the record kept and the job
# goes on; at the end the sweep is refused too and waits with backoff (event=job-sweep-refused),
# holding the job, instead of sweeping again at once until it gives up (job-sweep-failed). Once
# runs/ is open again the sweep goes through and the tree is clean. Before the fix the refused
# delete was taken as done: nothing was logged and the sweep looped.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

PY=/usr/bin/python3
zk_logins
ZK_DROVERD_ID=$DROVERD_ID # workers: tenant acme's identity
DROVER_FAULT=member-old-build start_droverd 1 "zookeeper.digest_file = $T/zk.digest"
setup_tenant
read -r _ JID <<< "$(create_cluster c1 2 '{"duration_ms": 100}')"
wait_until 60 "job $JID's first tasks to be queued" job_has_queued "$JID" 1

acl() { # close|open: droverd's delete permission on the job's runs/, taken away or given back
  "$PY" - "$DROVER_ZK" "$T/zk.digest" "/drover/jobs/$JID/runs" "$1" "$T/runs.acl" << 'PY'
import json, sys
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", open(sys.argv[2]).read().strip())])
zk.start(timeout=30)
path, what, keep = sys.argv[3], sys.argv[4], sys.argv[5]
if what == "close":
    acls, _ = zk.get_acls(path)
    json.dump([[a.perms, a.id.scheme, a.id.id] for a in acls], open(keep, "w"))
    zk.set_acls(path, [ACL(a.perms & ~Permissions.DELETE, a.id) for a in acls])
else:
    zk.set_acls(path, [ACL(p, Id(s, i)) for p, s, i in json.load(open(keep))])
zk.stop()
PY
}
acl close
start_worker worker-1
count() { grep -c "event=$1 job=$JID " "$T/droverd-1.log" || true; }
refused() { [ "$(count run-record-delete-refused)" -ge 2 ]; }
wait_until 60 "two of the job's record deletes to be refused" refused
wait_job "$JID" succeeded 120
sweep_waits() { [ "$(count job-sweep-refused)" -ge 2 ]; }
wait_until 60 "the job's sweep to be refused twice" sweep_waits
[ "$(count job-sweep-failed)" = 0 ] || fail "the sweep gave up while refused"
sweeps=$(count job-sweep-refused)
acl open
swept() { grep -q "event=job-swept job=$JID " "$T/droverd-1.log"; }
wait_until 60 "the job's sweep to go through" swept
pass "$(count run-record-delete-refused) record deletes refused, kept; the sweep waited ($sweeps refusals) and went through once runs/ was open"
check_runs
check_tree_clean
