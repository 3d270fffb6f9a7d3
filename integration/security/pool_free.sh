#!/usr/bin/env bash
# An operator's ssh-pool pool shared by two tenants (issue 20; docs/security.md "Pools of
# existing hosts", docs/zookeeper-tree.md "pools"). The attack: tenant beta's workers (the
# ssh-pool plugin runs with their identity) delete tenant acme's claim in the shared pool,
# then claim acme's host while acme's node still uses it; or forge a release of acme's claim.
# droverd grants rack-s to both (zookeeper.pool_grants = rack-s:acme+beta); each tenant's
# plugin runs with its own workers' login only. What must hold:
#   1. no tenant deletes a claim there, another's or its own (NOAUTH), nor sets another's;
#   2. a release marker beta forges for acme's claim is removed by droverd
#      (event=pool-release-forged) and acme's claim stays as it was; so is a marker whose name
#      names no claim (event=pool-marker-bad);
#   3. acme's real release (the plugin's delete: wipe, then "released" and a marker) makes
#      droverd delete the claim, and beta can then claim the host;
#   4. a claim released while no droverd runs counts as taken (a create gets no host) and is
#      deleted when droverd starts.
# Two droverd nodes run, each with its pool janitor: every marker is handled by exactly one of
# them (the other finds it gone), never twice.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"
. "$DROVER_SOURCE_DIR/testlib/api.sh"
. "$DROVER_SOURCE_DIR/testlib/engine.sh"

R="$T/resources"
mkdir -p "$R/pool"
export DROVER_RESOURCES="$R"
printf '#!/bin/sh\n: wiped\n' > "$R/pool/wipe.sh"
chmod +x "$R/pool/wipe.sh"

pool_hosts h1 h2
hosts=$(pool_hosts_json h1 h2)

zk_logins
DCONF=("zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $OPS_ID"
  "zookeeper.pool_grants = rack-s:acme+beta")
start_droverd 1 "${DCONF[@]}"
start_droverd 2 "${DCONF[@]}"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
ACME_ZK=$(worker_zk_file acme)
BETA_ZK=$(worker_zk_file beta)
export DROVER_ZK_DIGEST_FILE="$T/ops.digest" # the zk helper reads as the operator

# stask TASK NODE TENANT: a task of tenant TENANT's cluster c9 for the shared pool rack-s, with
# that tenant's workers' ZooKeeper login on standard input, as the worker gives it.
stask() {
  local prov login
  [ "$3" = acme ] && login=$ACME_ZK || login=$BETA_ZK
  prov=$(jq -cn --argjson hosts "$hosts" --rawfile key "$T/pool_key" --arg wipe "$R/pool/wipe.sh" \
    '{name: "rack-s", providertype: "ssh-pool", hosts: $hosts, private_key: $key,
      wipe_script: $wipe, shared: true}')
  CLUSTER_ID=c9 task "$1" "$2" 1 1 ".config.provider = $prov | .tenant = \"$3\" |
    .zookeeper = {hosts: \"$DROVER_ZK\", digest: \"$(cat "$login")\", acl_owner: \"$DROVERD_ID\",
                  acl_readers: \"$OPS_ID\"}"
}
pool() { DROVER_ZK_DIGEST_FILE='' DROVER_ZK_HOSTS='' run "$POOL"; }
S=/drover/pools/_operator/rack-s/claims
REL=/drover/pools/_operator/rack-s/released
markers() { zk ls "$REL" 2> /dev/null; }
claim_of() { zk get "$S/$1" 2> /dev/null; }
# logged EVENT HOST: how many times the droverd nodes logged EVENT for HOST, both together.
logged() { cat "$T"/droverd-[12].log | grep -c "event=$1 pool=_operator/rack-s host=$2 "; }
host_of() { last .result.\"provider-id\" | sed 's/^pool:rack-s://'; }

stask create a-1 acme | pool || fail "acme: create: $(last .message)"
HA=$(host_of)
stask create b-1 beta | pool || fail "beta: create: $(last .message)"
HB=$(host_of)
[ -n "$HA" ] && [ -n "$HB" ] && [ "$HA" != "$HB" ] && [ "$(claims "$S" | wc -l)" = 2 ] ||
  fail "two claims, one a tenant: $(claims "$S")"
A_BEFORE=$(claim_of "$HA")

# 1. and the forgery of 2., with each tenant's own login.
cat > "$T/tries.py" << 'PY'
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
hosts, afile, bfile, S, REL, ha, hb = sys.argv[1:8]
def client(f):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", open(f).read().strip())])
    zk.start(timeout=30)
    return zk
acme, beta = client(afile), client(bfile)
bad = []
for what, f in [("beta deletes acme's claim", lambda: beta.delete(f"{S}/{ha}")),
                ("beta sets acme's claim", lambda: beta.set(f"{S}/{ha}", b'{"state":"released"}')),
                ("beta deletes its own claim", lambda: beta.delete(f"{S}/{hb}")),
                ("acme deletes its own claim", lambda: acme.delete(f"{S}/{ha}")),
                ("acme deletes beta's claim", lambda: acme.delete(f"{S}/{hb}"))]:
    try:
        f()
        bad.append(f"{what}: allowed")
    except NoAuthError:
        pass
    except Exception as e:
        bad.append(f"{what}: {type(e).__name__} instead of NOAUTH")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
if bad:
    sys.exit(1)
# beta may create in released (so that its own releases reach droverd): a forged marker, and
# one whose name names no claim
beta.create(f"{REL}/evil", b"{}")
print(beta.create(f"{REL}/{ha}-", b"{}", sequence=True))
PY
MARK=$(/usr/bin/python3 "$T/tries.py" "$DROVER_ZK" "$ACME_ZK" "$BETA_ZK" "$S" "$REL" "$HA" "$HB") ||
  fail "a tenant deleted or changed a claim of the shared pool, or could not make a marker (above)"
[ "$(claims "$S" | wc -l)" = 2 ] || fail "claims changed: $(claims "$S")"
pass "no tenant deletes a claim of the shared pool, its own included, nor sets another's (NOAUTH)"

marker_gone() { ! markers | grep -qx "${MARK##*/}"; }
wait_until 60 "droverd to remove beta's forged marker $MARK" marker_gone
[ "$(claim_of "$HA")" = "$A_BEFORE" ] || fail "acme's claim changed: $(claim_of "$HA")"
no_markers() { [ -z "$(markers)" ]; }
wait_until 60 "droverd to remove beta's marker that names no claim" no_markers
[ "$(cat "$T"/droverd-[12].log | grep -c 'event=pool-marker-bad pool=_operator/rack-s marker=evil')" = 1 ] ||
  fail "no pool-marker-bad for the marker that names no claim"
[ "$(claims "$S" | wc -l)" = 2 ] || fail "claims changed: $(claims "$S")"
[ "$(logged pool-release-forged "$HA")" = 1 ] ||
  fail "pool-release-forged logged $(logged pool-release-forged "$HA") times, not once"
pass "a release beta forges for acme's claim, and a marker naming no claim, are removed and logged; acme's claim stays"

# 3. acme's own release, through the plugin: droverd deletes the claim, beta may claim it.
stask delete a-1 acme | pool || fail "acme: delete: $(last .message)"
last .message | grep -q "released it to pool rack-s" || fail "acme: delete: $(last .message)"
claim_gone() { ! claims "$S" | grep -qx "$1"; }
wait_until 60 "droverd to free acme's released claim" claim_gone "$HA"
[ "$(logged pool-claim-freed "$HA")" = 1 ] ||
  fail "pool-claim-freed logged $(logged pool-claim-freed "$HA") times, not once"
grep -q "event=pool-claim-freed pool=_operator/rack-s host=$HA tenant=acme" "$T"/droverd-[12].log ||
  fail "pool-claim-freed does not name acme"
# (Not asserted: the latency from the plugin's multi-op to droverd's delete, from the logs.)
ts_ms() { date -d "$(sed -n "s/^ts=\([^ ]*\) .*$1.*/\1/p" "${@:2}" | head -1)" +%s%3N; }
echo "measured: release to freed $(($(ts_ms "event=pool-claim-freed.*host=$HA " "$T"/droverd-[12].log) -
  $(ts_ms "event=claim-released.*host=$HA " "$T/plugins.log"))) ms"
stask create b-2 beta | pool || fail "beta: create after acme's release: $(last .message)"
[ "$(host_of)" = "$HA" ] || fail "beta got $(host_of), not the host acme released ($HA)"
[ -z "$(markers)" ] || fail "markers left: $(markers)"
pass "acme's release through the plugin frees its host (droverd deletes the claim); beta claims it"

# 4. A release while no droverd runs: the claim stays "released", its host taken, until
# droverd starts.
kill "$(pid_of droverd-1)" "$(pid_of droverd-2)"
wait_exit droverd-1 > /dev/null
wait_exit droverd-2 > /dev/null
stask delete b-1 beta | pool || fail "beta: delete without droverd: $(last .message)"
claim_of "$HB" | grep -q '"state":"released"' || fail "beta's claim: $(claim_of "$HB")"
[ "$(markers | wc -l)" = 1 ] || fail "markers: $(markers)"
stask create a-2 acme | pool && fail "a released claim not yet deleted was claimed again"
last .message | grep -q 'no free host in pool "rack-s"' || fail "acme: create: $(last .message)"
start_droverd 1 "${DCONF[@]}"
start_droverd 2 "${DCONF[@]}"
wait_until 60 "droverd's start to free the claim released while it was down" claim_gone "$HB"
[ -z "$(markers)" ] || fail "markers left: $(markers)"
[ "$(logged pool-claim-freed "$HB")" = 1 ] ||
  fail "pool-claim-freed logged $(logged pool-claim-freed "$HB") times, not once"
! grep -q "event=pool-release-stuck" "$T"/droverd-[12].log || fail "a release got stuck"
stask create a-3 acme | pool || fail "acme: create after droverd's start: $(last .message)"
[ "$(host_of)" = "$HB" ] || fail "acme got $(host_of), not $HB"
pass "a claim released while droverd was down counts as taken, and droverd's start frees it"
pass "shared pool: claims freed by droverd only"
