#!/usr/bin/env bash
# Attack (issue 32, a forged worker member): every tenant's workers may create in
# /drover/members/worker (they join there), and the creator picks a member's data and ACL.
# Tenant beta's workers' identity creates members/worker/fake-acme saying it is a worker of
# tenant acme serving class default, with an ACL that looks like a real member's (droverd's
# id, an entry "worker.acme:" with a made-up hash). Before the fix it showed in acme's
# GET /v1/workers, and it silenced acme's watchdog: acme's job, with no real worker, was
# "served", so it never said job-no-worker and never gave up.
# Expected (docs/security.md "ZooKeeper: who made it"): droverd believes a member's tenant
# only when the member's ACL, read with the rights every real member gives droverd, grants
# write to that tenant's exact worker id, which only its workers and droverd know: the forged
# member is unproven (event=member-unproven), not in acme's /v1/workers, not counted by the
# watchdog (job-no-worker is logged for acme's job), and granted nothing at droverd's start
# (event=acl-fixup-unproven). A real acme worker is proven, listed, and runs the job.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

zk_logins
ZK_DROVERD_ID=$DROVERD_ID # start_worker logs workers in as their tenant
ZK_READERS=$OPS_ID
ACL_CONF=("zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $OPS_ID"
  "engine.no_worker_timeout = 1h")
start_droverd 1 "${ACL_CONF[@]}"
setup_tenant # acme, $TOKEN its admin
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
BETA_ZK=$(worker_zk_file beta)

# Beta's forgery, held by a session of beta's identity until the test ends.
cat > "$T/forge.py" << 'PY'
import json, os, sys, time
from kazoo.client import KazooClient
from kazoo.security import ACL, Id
hosts, bfile, droverd_id, stop = sys.argv[1:5]
zk = KazooClient(hosts=hosts, auth_data=[("digest", open(bfile).read().strip())])
zk.start(timeout=30)
data = {"tenant": "acme", "classes": ["default"], "capacity": 4, "version": "x",
        "host": "forged", "pid": 1, "started": 1, "draining": False}
acl = [ACL(31, Id("digest", droverd_id)), ACL(3, Id("digest", "worker.acme:" + "A" * 27 + "=")),
       ACL(3, Id("world", "anyone"))]
zk.create("/drover/members/worker/fake-acme", json.dumps(data).encode(), acl=acl, ephemeral=True)
print("forged", flush=True)
while not os.path.exists(stop):
    time.sleep(0.2)
PY
/usr/bin/python3 "$T/forge.py" "$DROVER_ZK" "$BETA_ZK" "$DROVERD_ID" "$T/forge.stop" > "$T/forge.log" 2>&1 &
echo $! > "$T/pids/forge.pid"
forged() { grep -q forged "$T/forge.log"; }
wait_until 60 "beta's forged member" forged
unproven() { grep -q "event=member-unproven path=/drover/members/worker/fake-acme tenant=acme" "$T/droverd-1.log"; }
workers() { body_of "$(api GET /v1/workers)" | jq -r '[.workers[].id] | join(",")'; }
if ! poll_until 30 unproven; then
  [ -z "$(workers)" ] || fail "attack succeeded: acme's /v1/workers lists $(workers)"
  fail "droverd never found the forged member unproven"
fi
[ -z "$(workers)" ] || fail "attack succeeded: acme's /v1/workers lists $(workers)"
pass "the forged member is not in acme's /v1/workers"

# acme's job with no real worker: the watchdog must say so despite the forgery.
read -r _ JID <<< "$(create_cluster c1 1)"
no_worker() { grep -q "event=job-no-worker job=$JID tenant=acme class=default " "$T/droverd-1.log"; }
poll_until 30 no_worker ||
  fail "attack succeeded: the forged member silenced acme's watchdog (no job-no-worker for job $JID)"
pass "acme's job without a worker is unserved (job-no-worker) though the forged member names acme"

# droverd's start-up walk grants acme nothing on the forgery.
kill "$(pid_of droverd-1)"
wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not stop"
start_proc droverd-1 "$BIN/droverd"
wait_ready droverd-1 "${DPORTS[1]}" 60 || fail "droverd-1 did not come back"
grep -q "event=acl-fixup-unproven path=/drover/members/worker/fake-acme tenant=acme" "$T/droverd-1.log" ||
  fail "droverd's start did not find the forged member unproven"
pass "droverd's start found the forgery unproven and granted acme nothing on it"

# A real worker of acme: proven, listed, and it runs the job to the end.
start_worker worker-1
listed() { [ "$(workers)" = worker-1 ]; }
wait_until 60 "acme's /v1/workers to list worker-1 alone" listed
wait_job "$JID" succeeded 120
touch "$T/forge.stop"
pass "acme's real worker is listed alone and its job succeeded"
