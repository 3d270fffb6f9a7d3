#!/usr/bin/env bash
# ssh-pool with tenant identities (issue 20, points 3 and 5; docs/zookeeper-tree.md "ACLs",
# docs/plugins.md "ssh-pool"). The attack: a tenant's workers reaching another tenant's pool
# hosts in ZooKeeper, or an operator's pool they are not granted. droverd runs with digest
# credentials and the fleet key; the ssh-pool plugin gets, as the worker gives it on standard
# input, the login of tenant acme's workers (worker.acme, drover key worker-zk) and nothing
# else: it claims a host of acme's own pool (under pools/acme, which droverd made when it let
# acme in), and of the operator's pool rack-s that zookeeper.pool_grants grants acme, then
# wipes and frees them. Tenant beta's identity gets NOAUTH on acme's pool and its claims
# (read, list, write, delete, create), a task naming acme run with beta's login is refused,
# beta is refused the operator's pool it is not granted, and no tenant may create in pools/
# itself (no squatting another's name); each time nothing changes.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"
. "$DROVER_SOURCE_DIR/testlib/api.sh"
. "$DROVER_SOURCE_DIR/testlib/engine.sh"

R="$T/resources"
mkdir -p "$R/pool"
export DROVER_RESOURCES="$R"
cat > "$R/pool/wipe.sh" << 'SH'
#!/bin/sh
# Wipe a pool host: count the wipes.
n=$(cat "$DROVER_NODE_ROOT/wipes" 2>/dev/null || echo 0)
echo $((n + 1)) > "$DROVER_NODE_ROOT/wipes"
SH
chmod +x "$R/pool/wipe.sh"

# --- two pool hosts: loopback nodes whose only authorised key is the pool's ---
pool_hosts h1 h2
hosts=$(pool_hosts_json h1 h2)

# --- droverd with credentials; tenants acme and beta let in ---
zk_logins
start_droverd 1 "zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $OPS_ID" \
  "zookeeper.pool_grants = rack-s:acme"
grep -q 'event=acl-pool-granted pool=_operator/rack-s' "$T/droverd-1.log" ||
  fail "the operator's pool was not made: $(grep acl- "$T/droverd-1.log")"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
ACME_ZK=$(worker_zk_file acme)
BETA_ZK=$(worker_zk_file beta)
export DROVER_ZK_DIGEST_FILE="$T/ops.digest" # the zk helper reads as the operator
let_in() { zk ls /drover/pools 2> /dev/null | grep -qx beta; }
wait_until 60 "droverd to make the tenants' pools" let_in

# ptask TASK NODE LOGIN [EXTRA]: a task of cluster c9 for pool rack-a, with the worker's
# ZooKeeper login LOGIN (a credentials file) and its zookeeper.acl_owner and acl_readers on
# standard input, as the worker gives them ("wants": ["zookeeper"]); no DROVER_ZK_* in the
# plugin's environment.
ptask() {
  local prov
  prov=$(jq -cn --argjson hosts "$hosts" --rawfile key "$T/pool_key" --arg wipe "$R/pool/wipe.sh" \
    '{name: "rack-a", providertype: "ssh-pool", hosts: $hosts, private_key: $key,
      wipe_script: $wipe}')
  CLUSTER_ID=c9 task "$1" "$2" 1 1 ".config.provider = $prov |
    .zookeeper = {hosts: \"$DROVER_ZK\", digest: \"$(cat "$3")\", acl_owner: \"$DROVERD_ID\",
                  acl_readers: \"$OPS_ID\"} | ${4:-.}"
}
pool() { DROVER_ZK_DIGEST_FILE='' DROVER_ZK_HOSTS='' run "$POOL"; }
A=/drover/pools/acme/rack-a/claims
S=/drover/pools/_operator/rack-s/claims
shared='.config.provider.shared = true | .config.provider.pool = "rack-s"'

ptask create p-1 "$ACME_ZK" | pool || fail "acme's worker identity: create: $(last .message)"
merge p-1
[ "$(claims $A | wc -l)" = 1 ] || fail "acme's claims: $(claims $A)"
ptask create s-1 "$ACME_ZK" "$shared" | pool || fail "acme in the operator's pool: $(last .message)"
merge s-1
[ "$(claims $S | wc -l)" = 1 ] || fail "the operator's pool: $(claims $S)"
pass "acme's worker identity alone claims a host of its own pool and of the operator's pool granted it"

# Every znode of both pools: droverd all, the operator read, acme's workers read, write, create,
# delete in its own pool, and in the shared one read the pool, read and create claims, create
# release markers, read, write and admin its own claim, never delete (docs/zookeeper-tree.md "ACLs");
# no one else (beta included). Then beta's identity against them.
/usr/bin/python3 - "$DROVER_ZK" "$T/zk.digest" "$OPS_ID" "$ACME_ZK" "$BETA_ZK" << 'PY' || fail "beta reached acme's pools (above)"
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl_credential
hosts, dfile, ops_id, afile, bfile = sys.argv[1:6]
cred = {k: open(f).read().strip() for k, f in (("d", dfile), ("a", afile), ("b", bfile))}
def client(c):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", c)])
    zk.start(timeout=30)
    return zk
drover, beta = client(cred["d"]), client(cred["b"])
D, A = (make_digest_acl_credential(*cred[k].split(":", 1)) for k in ("d", "a"))
bad = []
shared = "/drover/pools/_operator/rack-s"
perms = {shared: 1, f"{shared}/claims": 5, f"{shared}/released": 4}
for top in ("/drover/pools/acme", shared):
    todo = [top]
    while todo:
        p = todo.pop()
        todo += [f"{p}/{k}" for k in drover.get_children(p)]
        # a claim of the shared pool: read, write and admin (its ACL shows acme its own id)
        own = 19 if p.startswith(f"{shared}/claims/") else 3
        a_perms = perms.get(p, own) if p.startswith(shared) else 15
        want = sorted([("digest", D, 31), ("digest", ops_id, 1), ("digest", A, a_perms)])
        have = sorted((a.id.scheme, a.id.id, a.perms) for a in drover.get_acls(p)[0])
        if have != want:
            bad.append(f"{p}: acl {have}, want {want}")
for p in ("/drover/pools", "/drover/pools/_operator"):
    have = sorted((a.id.scheme, a.id.id, a.perms) for a in drover.get_acls(p)[0])
    if have != sorted([("digest", D, 31), ("digest", ops_id, 1)]):
        bad.append(f"{p}: acl {have}: no tenant may create there")
A_, S_ = "/drover/pools/acme/rack-a/claims", "/drover/pools/_operator/rack-s/claims"
host, shost = drover.get_children(A_)[0], drover.get_children(S_)[0]
before = {p: drover.get(p)[0] for p in (f"{A_}/{host}", f"{S_}/{shost}")}
kids = {p: drover.get_children(p) for p in (A_, S_, "/drover/pools", "/drover/pools/acme")}
tries = [("read acme's claim", lambda: beta.get(f"{A_}/{host}")),
         ("list acme's claims", lambda: beta.get_children(A_)),
         ("mark acme's claim wiping", lambda: beta.set(f"{A_}/{host}", b'{"state":"wiping"}')),
         ("delete acme's claim", lambda: beta.delete(f"{A_}/{host}")),
         ("claim a host in acme's pool", lambda: beta.create(f"{A_}/10.9.9.9:22", b"{}")),
         ("make a pool under acme's name", lambda: beta.create("/drover/pools/acme/evil", b"{}")),
         ("squat a tenant's name in pools/", lambda: beta.create("/drover/pools/gamma", b"{}")),
         ("read the operator's pool", lambda: beta.get_children(S_)),
         ("claim in the operator's pool", lambda: beta.create(f"{S_}/10.9.9.9:22", b"{}")),
         ("delete a claim of the operator's pool", lambda: beta.delete(f"{S_}/{shost}"))]
for what, f in tries:
    try:
        f()
        bad.append(f"beta may {what}")
    except NoAuthError:
        pass
    except Exception as e:
        bad.append(f"{what}: {type(e).__name__} instead of NOAUTH")
if {p: drover.get(p)[0] for p in before} != before or \
        {p: drover.get_children(p) for p in kids} != kids:
    bad.append("beta's attempts changed the pools")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
pass "acme's pools: droverd all, the operator read, acme's workers their part; beta NOAUTH each, nothing changed"

# A beta worker handed a task in acme's name, and a beta task for the pool not granted to beta:
# refused by ZooKeeper, nothing claimed.
before_a=$(claims $A) before_s=$(claims $S)
ptask create b-1 "$BETA_ZK" '.tenant = "acme"' | pool && fail "beta's login claimed in acme's pool"
last .message | grep -q 'not authenticated' || fail "beta as acme: $(last .message)"
ptask create b-2 "$BETA_ZK" "$shared | .tenant = \"beta\"" | pool &&
  fail "beta claimed in the operator's pool not granted to it"
last .message | grep -q 'zookeeper.pool_grants\|not granted' || fail "beta, rack-s: $(last .message)"
[ "$(claims $A)" = "$before_a" ] && [ "$(claims $S)" = "$before_s" ] || fail "beta's tries changed claims"
pass "beta's login: refused acme's pool and the operator's pool it is not granted, nothing changed"

# acme's workers wipe and free their hosts: in their own pool by deleting the claim, in the
# operator's by releasing it, which droverd then deletes (security_pool_free).
ptask delete p-1 "$ACME_ZK" | pool || fail "acme: delete: $(last .message)"
ptask delete s-1 "$ACME_ZK" "$shared" | pool || fail "acme: delete in rack-s: $(last .message)"
[ -z "$(claims $A)" ] || fail "claims left: $(claims $A)"
no_shared_claims() { [ -z "$(claims $S)" ]; }
wait_until 60 "droverd to delete the released claim of rack-s" no_shared_claims
[ "$(cat "$(kv h1 .node_root)/wipes")$(cat "$(kv h2 .node_root)/wipes")" = 11 ] ||
  fail "the hosts were not each wiped once"
pass "acme's workers wipe and free their hosts with their own identity"

# Without the grant, the operator's pool loses acme at droverd's next start.
kill "$(pid_of droverd-1)"
wait_exit droverd-1 > /dev/null
start_droverd 1 "zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $OPS_ID"
ptask create s-2 "$ACME_ZK" "$shared" | pool && fail "a revoked grant still claims"
[ -z "$(claims $S)" ] || fail "a revoked grant claimed: $(claims $S)"
pass "a grant taken out of zookeeper.pool_grants is revoked at droverd's next start"
# Hosts claimed under the former layout (pools/<tenant>.<pool>, droverd's credentials) stay
# claimed: acme's identity cannot read them, but sees that they exist.
/usr/bin/python3 - "$DROVER_ZK" "$T/zk.digest" "$hosts" << 'PY'
import json, sys
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl
user, pw = open(sys.argv[2]).read().strip().split(":", 1)
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", f"{user}:{pw}")])
zk.start(timeout=30)
for h in json.loads(sys.argv[3]):
    zk.create(f"/drover/pools/acme.rack-a/claims/{h['address']}:{h['port']}", b'{"tenant":"acme"}',
              acl=[make_digest_acl(user, pw, all=True)], makepath=True)
zk.stop()
PY
ptask create p-2 "$ACME_ZK" | pool && fail "a host claimed under the former layout was claimed again"
last .message | grep -q 'no free host in pool "rack-a"' || fail "former layout: $(last .message)"
[ -z "$(claims $A)" ] || fail "claimed: $(claims $A)"
pass "hosts claimed under the former layout stay claimed"
pass "ssh-pool with tenant identities"
