#!/usr/bin/env bash
# Attack (issue 32, one tenant fills ZooKeeper): everything in flight of a tenant's jobs is a
# queue item in ZooKeeper, which holds its whole tree in memory; a tenant with many nodes or
# large entity values could fill it for everyone. Expected (docs/security.md "ZooKeeper
# quotas"): droverd sets a hard quota on each tenant's queues/<t> and pools/<t> when it lets
# the tenant in (zookeeper.tenant_quota_*; the stack's servers enforce quotas); the quota's
# znodes and /zookeeper/quota itself are droverd's alone, so another tenant's identity can
# neither lift nor delete one; a tenant whose job would pass its quota gets no more into
# ZooKeeper than the quota, and another tenant's job still runs to the end.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

zk_logins
ZK_DROVERD_ID=$DROVERD_ID
ZK_READERS=$OPS_ID
# 60 znodes: the queue's own directories (about 22) and some 19 tasks' items and keys.
start_droverd 1 "zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $OPS_ID" \
  "zookeeper.tenant_quota_znodes = 60" "zookeeper.tenant_quota_bytes = 1m"
setup_tenant # acme
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
BETA=$(body_of "$(api POST /v1/users '{"name":"bea","role":"admin","tenant":"beta"}' "$SUPER")" | jq -r .token)
expect 200 "$(api POST /v1/import "@$T/catalog.json" "$BETA")" '' "beta's catalogue"
for t in acme beta; do
  set_() { grep -q "event=zk-quota-set tenant=$t subtree=pools znodes=60 bytes=1048576" "$T/droverd-1.log"; }
  wait_until 30 "droverd to set $t's quota" set_
done

/usr/bin/python3 - "$DROVER_ZK" "$T/zk.digest" "$(worker_zk_file beta)" "$OPS_ID" << 'PY' || fail "the quota znodes (above)"
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl_credential
hosts, dfile, bfile, ops_id = sys.argv[1:5]
def client(f):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", open(f).read().strip())])
    zk.start(timeout=30)
    return zk
drover, beta = client(dfile), client(bfile)
D = make_digest_acl_credential(*open(dfile).read().strip().split(":", 1))
bad = []
Q = "/zookeeper/quota/drover/queues/acme"
limits = drover.get(f"{Q}/zookeeper_limits")[0].decode()
if "countHardLimit=60" not in limits or "byteHardLimit=1048576" not in limits:
    bad.append(f"acme's limits: {limits}")
for p in ("/zookeeper/quota", "/zookeeper/quota/drover", Q, f"{Q}/zookeeper_limits"):
    have = sorted((a.id.scheme, a.id.id, a.perms) for a in drover.get_acls(p)[0])
    if have != sorted([("digest", D, 31), ("digest", ops_id, 1)]):
        bad.append(f"{p}: acl {have}")
for what, f in [("lift acme's quota", lambda: beta.set(f"{Q}/zookeeper_limits", b"count=-1,bytes=-1")),
                ("delete acme's quota", lambda: beta.delete(f"{Q}/zookeeper_limits")),
                ("delete its own quota", lambda: beta.delete("/zookeeper/quota/drover/queues/beta/zookeeper_limits")),
                ("make a quota", lambda: beta.create("/zookeeper/quota/x", b""))]:
    try:
        f()
        bad.append(f"beta may {what}")
    except NoAuthError:
        pass
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
pass "each tenant's quota is set and droverd's alone: beta can neither lift, delete nor make one"

# acme's first job puts 40 creates (80 znodes) with no worker to take them: ZooKeeper checks
# a quota against what it holds before a request, so the multi-op that crosses it gets in
# whole; every write after is refused.
count() { DROVER_ZK_DIGEST_FILE="$T/ops.digest" zk get /zookeeper/quota/drover/queues/acme/zookeeper_stats | sed 's/.*count=\([0-9]*\).*/\1/'; }
read -r _ AJOB1 <<< "$(create_cluster big 40)"
over() { [ "$(count)" -gt 60 ] || grep -q "event=job-zk-write-failed job=$AJOB1 .*zrc=-125" "$T/droverd-1.log"; }
wait_until 60 "acme's first job to reach its quota" over
n1=$(count)
read -r _ AJOB2 <<< "$(create_cluster more 3)"
refused() { grep -q "event=job-zk-write-failed job=$AJOB2 .*zrc=-125" "$T/droverd-1.log"; }
wait_until 60 "ZooKeeper to refuse acme's second job's items (quota exceeded, -125)" refused
[ "$(count)" = "$n1" ] || fail "acme's queue subtree grew past its quota: $n1, then $(count) znodes"
pass "acme's first job reached its quota of 60 ($n1 znodes: a multi-op is checked against the tree before it); its second job's items were refused"

# beta's job, with beta's own worker, runs to the end meanwhile.
WORKER_TENANT=beta WORKER_PLUGINS=noop,noop-provider start_worker wb
r=$(api POST /v1/clusters '{"name": "b1", "template": "single", "nodes": 2}' "$BETA")
expect 202 "$r" '' "beta's cluster"
TOKEN=$BETA wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 120
[ "$(count)" = "$n1" ] || fail "acme's queue subtree: $n1, then $(count) znodes"
pass "beta's job succeeded while acme was over its quota; acme's subtree did not grow"
