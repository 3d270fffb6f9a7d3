#!/usr/bin/env bash
# Attack (issue 32, a forged pool claim): in an operator's pool shared by tenants acme and
# beta (zookeeper.pool_grants = rack-s:acme+beta), beta's workers' identity may create claims,
# with the data and the ACL it likes. Beta creates a claim of host h1 naming acme's node a-1
# (acme's tenant, cluster and node, "claimed"), readable by all and writable by beta, with an
# ACL entry that looks like acme's (worker.acme and a made-up hash). Before the fix acme's
# create found it and adopted h1 ("found claimed"): beta could then release it and claim the
# host acme's node uses.
# Expected (docs/security.md "ZooKeeper: who made it"): acme's plugin adopts only a claim
# whose ACL, read with the admin right its own claims give it, shows acme's exact digest id:
# the forgery is not adopted (event=claim-unproven) and acme claims a host of its own; beta
# releasing its forgery changes nothing of acme's; droverd's start-up walk does not grant acme
# the forged claim (event=acl-fixup-unproven). A claim acme made before this check (read and
# write for acme, no admin: a rolling upgrade) is refused by confirm with a clear error until a
# droverd start has proven it (and given acme admin), then found.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"
. "$DROVER_SOURCE_DIR/testlib/api.sh"
. "$DROVER_SOURCE_DIR/testlib/engine.sh"

pool_hosts h1 h2 h3
hosts=$(pool_hosts_json h1 h2 h3)

zk_logins
DCONF=("zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $OPS_ID"
  "zookeeper.pool_grants = rack-s:acme+beta")
start_droverd 1 "${DCONF[@]}"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
ACME_ZK=$(worker_zk_file acme)
BETA_ZK=$(worker_zk_file beta)
export DROVER_ZK_DIGEST_FILE="$T/ops.digest" # the zk helper reads as the operator

# stask TASK NODE TENANT: a task of TENANT's cluster c9 for the shared pool rack-s, with that
# tenant's workers' login on standard input, as the worker gives it.
stask() {
  local prov login
  [ "$3" = acme ] && login=$ACME_ZK || login=$BETA_ZK
  prov=$(jq -cn --argjson hosts "$hosts" --rawfile key "$T/pool_key" \
    '{name: "rack-s", providertype: "ssh-pool", hosts: $hosts, private_key: $key, shared: true}')
  CLUSTER_ID=c9 task "$1" "$2" 1 1 ".config.provider = $prov | .tenant = \"$3\" |
    .zookeeper = {hosts: \"$DROVER_ZK\", digest: \"$(cat "$login")\", acl_owner: \"$DROVERD_ID\",
                  acl_readers: \"$OPS_ID\"}"
}
pool() { DROVER_ZK_DIGEST_FILE='' DROVER_ZK_HOSTS='' run "$POOL"; }
S=/drover/pools/_operator/rack-s/claims
claim_of() { zk get "$S/$1" 2> /dev/null; }
host_of() { last .result.\"provider-id\" | sed 's/^pool:rack-s://'; }
H1=$(jq -r '.[0] | "\(.address):\(.port // 22)"' <<< "$hosts")
H3=$(jq -r '.[2] | "\(.address):\(.port // 22)"' <<< "$hosts")

# The claims directory exists once droverd granted the pool; beta forges a claim of h1 for
# acme's node a-1, and (as an older plugin would have made it) acme makes one of h3 for a-2.
cat > "$T/forge.py" << 'PY'
import json, sys
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, make_digest_acl, make_digest_acl_credential
hosts, afile, bfile, droverd_id, ops_id, S, h1, h3 = sys.argv[1:9]
def client(f):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", open(f).read().strip())])
    zk.start(timeout=30)
    return zk
acme_cred, beta_cred = (open(f).read().strip() for f in (afile, bfile))
beta, acme = client(bfile), client(afile)
claim = lambda node, h: json.dumps({"tenant": "acme", "cluster": "c9", "node": node,
                                    "state": "claimed", "provider-id": f"pool:rack-s:{h}"}).encode()
forged = [ACL(31, Id("digest", droverd_id)), make_digest_acl(*beta_cred.split(":", 1), read=True, write=True),
          ACL(3, Id("digest", "worker.acme:" + "A" * 27 + "=")), ACL(1, Id("world", "anyone"))]
beta.create(f"{S}/{h1}", claim("a-1", h1), acl=forged)
old = [ACL(31, Id("digest", droverd_id)), ACL(1, Id("digest", ops_id)),
       make_digest_acl(*acme_cred.split(":", 1), read=True, write=True)]
acme.create(f"{S}/{h3}", claim("a-2", h3), acl=old)
PY
/usr/bin/python3 "$T/forge.py" "$DROVER_ZK" "$ACME_ZK" "$BETA_ZK" "$DROVERD_ID" "$OPS_ID" "$S" "$H1" "$H3" ||
  fail "could not make the forged and the older claims"
FORGED=$(claim_of "$H1")

stask create a-1 acme | pool || fail "acme: create: $(last .message)"
HA=$(host_of)
[ "$HA" != "$H1" ] || fail "attack succeeded: acme adopted beta's forged claim of $H1 ($(last .message))"
grep -q "event=claim-unproven pool=_operator/rack-s host=$H1 tenant=acme node=a-1" "$T/plugins.log" ||
  fail "no claim-unproven for the forged claim of $H1"
[ "$(claims "$S" | wc -l)" = 3 ] && [ "$(claim_of "$H1")" = "$FORGED" ] || fail "claims: $(claims "$S")"
stask confirm a-1 acme | pool || fail "acme: confirm: $(last .message)"
pass "acme's create did not adopt beta's forged claim of $H1: it claimed $HA, which answers"

# Beta releases its forgery (it gave itself write): nothing of acme's moves.
A_CLAIM=$(claim_of "$HA")
/usr/bin/python3 - "$DROVER_ZK" "$BETA_ZK" "$S/$H1" << 'PY' || fail "beta could not release its forgery"
import json, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", open(sys.argv[2]).read().strip())])
zk.start(timeout=30)
d, st = zk.get(sys.argv[3])
c = json.loads(d); c["state"] = "released"
zk.set(sys.argv[3], json.dumps(c).encode(), version=st.version)
zk.create(sys.argv[3].replace("/claims/", "/released/") + "-", b"{}", sequence=True)
PY
h1_freed() { ! claims "$S" | grep -qx "$H1"; }
wait_until 60 "droverd to free beta's released forgery of $H1" h1_freed
[ "$(claim_of "$HA")" = "$A_CLAIM" ] || fail "acme's claim of $HA changed: $(claim_of "$HA")"
stask confirm a-1 acme | pool || fail "acme: confirm after beta's release: $(last .message)"
pass "beta's release of its forgery freed $H1 only; acme's node keeps $HA"

# An older claim (acme's, without admin): refused with a clear error, until droverd's start
# proves it; a forgery is never granted to acme.
stask delete a-2 acme | pool && fail "an unproven claim was adopted by delete"
last .message | grep -q "does not show that this tenant's workers made it" ||
  fail "delete of a-2: $(last .message)"
claims "$S" | grep -qx "$H3" || fail "the delete refused still touched $H3: $(claims "$S")"
/usr/bin/python3 - "$DROVER_ZK" "$BETA_ZK" "$S/$H1" "$DROVERD_ID" << 'PY' || fail "beta's second forgery"
import json, sys
from kazoo.client import KazooClient
from kazoo.security import ACL, Id
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", open(sys.argv[2]).read().strip())])
zk.start(timeout=30)
zk.create(sys.argv[3], json.dumps({"tenant": "acme", "cluster": "c9", "node": "a-3",
                                   "state": "claimed"}).encode(),
          acl=[ACL(31, Id("digest", sys.argv[4])), ACL(3, Id("world", "anyone"))])
PY
kill "$(pid_of droverd-1)"
wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not stop"
start_proc droverd-1 "$BIN/droverd"
wait_ready droverd-1 "${DPORTS[1]}" 60 || fail "droverd-1 did not come back"
grep -q "event=acl-fixup-unproven path=$S/$H1 tenant=acme" "$T/droverd-1.log" ||
  fail "droverd's start did not find the forged claim of $H1 unproven"
/usr/bin/python3 - "$DROVER_ZK" "$T/zk.digest" "$S/$H1" "$(cat "$ACME_ZK")" << 'PY' || fail "the forged claim's ACL (above)"
import sys
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl_credential
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", open(sys.argv[2]).read().strip())])
zk.start(timeout=30)
acme = make_digest_acl_credential(*sys.argv[4].split(":", 1))
ids = [a.id.id for a in zk.get_acls(sys.argv[3])[0]]
if acme in ids or "anyone" in ids:
    print(f"FAIL: the forged claim's ACL after droverd's start: {ids}")
    sys.exit(1)
PY
stask delete a-2 acme | pool || fail "acme: delete of its older claim after droverd's start: $(last .message)"
last .message | grep -q "released it to pool rack-s" || fail "delete of a-2: $(last .message)"
pass "an older claim of acme's is refused with a clear error, then proven at droverd's start; a forgery is granted to no one"
