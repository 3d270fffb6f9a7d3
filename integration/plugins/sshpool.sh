#!/usr/bin/env bash
# The ssh-pool provider: three loopback nodes (their own sshd, reachable with
# the pool's key only) stand in for a pool of existing hosts; claims live in the
# test stack's real ZooKeeper. Concurrent creates never claim one host twice; a
# claimed host takes the cluster's key; a deleted node's host is wiped, loses
# the cluster's key and is free again; bad input fails clearly.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"

export DROVER_ZK_HOSTS="$DROVER_ZK"
R="$T/resources"
mkdir -p "$R/pool"
export DROVER_RESOURCES="$R"
cat > "$R/pool/wipe.sh" <<'EOF'
#!/bin/sh
# Wipe a pool host: remove what a cluster left, count the wipes.
set -e
rm -rf "${DROVER_NODE_ROOT:?}/srv"
n=$(cat "$DROVER_NODE_ROOT/wipes" 2>/dev/null || echo 0)
echo $((n + 1)) > "$DROVER_NODE_ROOT/wipes"
echo "wiped for $DROVER_NODE_ID of cluster $DROVER_CLUSTER_ID in pool $DROVER_POOL"
EOF
chmod +x "$R/pool/wipe.sh"

# --- the pool's hosts: loopback nodes whose only authorised key is the pool's ---
pool_hosts h1 h2 h3

hosts=$(pool_hosts_json h1 h2 h3 | jq -c 'map(. + {hostname: ("pool-" + .address)})')
pool_provider() {
  # (wipe_script: the operator's script on this host, as worker.provider_settings gives it)
  jq -cn --argjson hosts "$hosts" --rawfile key "$T/pool_key" --arg pub "$(cat "$T/pool_key.pub")" \
    --arg wipe "$R/pool/wipe.sh" '{name: "rack-a", providertype: "ssh-pool", hosts: $hosts,
      private_key: $key, public_key: $pub, wipe_script: $wipe}'
}
# ptask TASK NODE [ATTEMPT [EXTRA]]: a task for the pool (cluster c9).
ptask() {
  CLUSTER_ID=c9 task "$1" "$2" "${3:-1}" 1 ".config.provider = $(pool_provider) | ${4:-.}"
}
# Claims of tenant acme's pool rack-a (a tenant's own namespace: docs/security.md).
A=/drover/pools/acme/rack-a/claims

# --- five concurrent creates for three hosts ---
nodes=(p-1 p-2 p-3 p-4 p-5)
for n in "${nodes[@]}"; do
  (ptask create "$n" | "$POOL" > "$T/create-$n.json" 2>> "$T/plugins.log") &
done
wait || true
ok=0
losers=()
for n in "${nodes[@]}"; do
  st=$(jq -r .status "$T/create-$n.json")
  if [ "$st" = ok ]; then
    ok=$((ok + 1))
    cp "$T/create-$n.json" "$T/last.json"
    merge "$n"
  else
    jq -r .message "$T/create-$n.json" | grep -q 'no free host in pool "rack-a" (3 hosts, all claimed)' ||
      fail "create $n: $(jq -r .message "$T/create-$n.json")"
    losers+=("$n")
    loser=$n
  fi
done
[ "$ok" = 3 ] || fail "$ok creates succeeded, expected 3"
ids=$(for n in "${nodes[@]}"; do jq -r '.result."provider-id" // empty' "$T/create-$n.json"; done | sort)
[ "$(echo "$ids" | uniq | wc -l)" = 3 ] || fail "two nodes got one host: $ids"
[ "$(claims "$A" | wc -l)" = 3 ] || fail "zookeeper holds $(claims "$A" | wc -l) claims"
pass "5 concurrent creates, 3 hosts: 3 claimed, each once; the others: no free host"

# A retried create finds its claim.
winner=
for n in "${nodes[@]}"; do
  [ -z "$winner" ] && [ "$(jq -r .status "$T/create-$n.json")" = ok ] && winner=$n
done
ptask create "$winner" 2 | run "$POOL" || fail "retried create: $(last .message)"
last .message | grep -q "found claimed" || fail "retry: $(last .message)"
[ "$(last '.result."provider-id"')" = "$(kv "$winner" '."provider-id"')" ] || fail "the retry moved"
pass "a retried create finds the node's claim"

# --- confirm: the cluster's key logs in, the pool's host key is checked ---
for n in "${nodes[@]}"; do
  case " ${losers[*]} " in *" $n "*) continue ;; esac
  ptask confirm "$n" | run "$POOL" || fail "confirm $n: $(last .message)"
  merge "$n"
  [ "$(kv "$n" .hostname)" = "pool-$(kv "$n" .ipaddresses.access_v4)" ] || fail "hostname"
done
# The automator works on a pool host with the cluster's key.
# shellcheck disable=SC2016 # the script's own variables, expanded when it runs
printf '#!/bin/sh\nmkdir -p "$DROVER_NODE_ROOT/srv"; echo "$DROVER_NODE_ID" > "$DROVER_NODE_ROOT/srv/owner"\n' > "$R/mark.sh"
chmod +x "$R/mark.sh"
SERVICE=app CLUSTER_ID=c9 task install "$winner" 1 2 \
  '.config.service = {name: "app", action: {type: "shell", fields: {script: "mark.sh"}}}' |
  run "$SSHA" || fail "automator on a pool host: $(last .message)"
host_of() { # NODE -> the loopback node standing in for its host
  local a h
  a=$(kv "$1" .ipaddresses.access_v4)
  for h in h1 h2 h3; do
    if [ "$(kv "$h" .ipaddresses.access_v4)" = "$a" ]; then echo "$h"; fi
  done
}
hroot=$(kv "$(host_of "$winner")" .node_root)
[ "$(cat "$hroot/srv/owner")" = "$winner" ] || fail "the action did not run on the pool host"
grep -q "drover:acme:c9:$winner" "$hroot/root/.ssh/authorized_keys" || fail "no marked key"
pass "confirm and an action with the cluster's key on a claimed host"

# --- delete: wiped, the cluster's key removed, released ---
ptask delete "$winner" | run "$POOL" || fail "delete: $(last .message)"
last .message | grep -q "wiped host" || fail "delete: $(last .message)"
[ -e "$hroot/srv" ] && fail "the wipe left the cluster's files"
[ "$(cat "$hroot/wipes")" = 1 ] || fail "wipe count $(cat "$hroot/wipes")"
grep -q "drover:acme:c9:$winner" "$hroot/root/.ssh/authorized_keys" && fail "the cluster's key stayed"
[ -e "$hroot/var/lib/drover" ] && fail "the automator's work directory stayed"
[ "$(claims "$A" | wc -l)" = 2 ] || fail "the claim was not released"
ptask confirm "$winner" | run "$POOL" && fail "a released host still confirms for the node"
pass "delete: wiped, key removed, claim released"

ptask delete "$winner" | run "$POOL" || fail "second delete: $(last .message)"
last .message | grep -q "already released" || fail "second delete: $(last .message)"
pass "deleting again: already released"

# The node that found no host gets the freed one.
ptask create "$loser" | run "$POOL" || fail "create after release: $(last .message)"
merge "$loser"
[ "$(kv "$loser" '."provider-id"')" = "$(kv "$winner" '."provider-id"')" ] ||
  fail "the freed host was not the one claimed"
pass "a freed host is claimed again"

# A delete of a node that does not hold the host never touches it (invariant 3).
wipes_before=$(cat "$hroot/wipes")
ptask delete "$winner" | run "$POOL" || fail "stale delete: $(last .message)"
last .message | grep -q "already released" || fail "stale delete: $(last .message)"
[ "$(cat "$hroot/wipes")" = "$wipes_before" ] || fail "a stale delete wiped another node's host"
pass "a stale delete leaves another node's host alone"

# Everything back: all claims released.
for n in "${nodes[@]}"; do
  [ "$n" = "$winner" ] && continue
  case " ${losers[*]} " in *" $n "*) [ "$n" != "$loser" ] && continue ;; esac
  ptask delete "$n" | run "$POOL" || fail "delete $n: $(last .message)"
done
[ -z "$(claims "$A")" ] || fail "claims left: $(claims "$A")"
pass "every host wiped and free again"

# --- a pool the operator declares and grants to two tenants ("shared": true comes only from
# worker.provider_settings, docs/security.md): one namespace, each host to one node at a time.
shared='.config.provider.shared = true | .config.provider.pool = "rack-s"'
S=/drover/pools/_operator/rack-s/claims
ptask create s-1 1 "$shared" | run "$POOL" || fail "acme in the shared pool: $(last .message)"
merge s-1
ptask create s-2 1 "$shared | .tenant = \"globex\"" | run "$POOL" || fail "globex in the shared pool: $(last .message)"
merge s-2
[ "$(claims "$S" | wc -l)" = 2 ] || fail "shared claims: $(claims "$S")"
[ "$(kv s-1 '.["provider-id"]')" != "$(kv s-2 '.["provider-id"]')" ] || fail "two tenants got one host"
ptask delete s-1 1 "$shared" | run "$POOL" || fail "delete s-1: $(last .message)"
ptask delete s-2 1 "$shared | .tenant = \"globex\"" | run "$POOL" || fail "delete s-2: $(last .message)"
[ -z "$(claims "$S")" ] || fail "shared claims left: $(claims "$S")"
pass "an operator's pool granted to two tenants: one namespace, two hosts, both released"

# --- a wipe that fails keeps the host claimed ---
ptask create p-1 3 | run "$POOL" || fail "create p-1: $(last .message)"
printf '#!/bin/sh\necho "cannot wipe: disk busy" >&2\nexit 7\n' > "$R/pool/wipe.sh"
ptask delete p-1 | run "$POOL" && fail "a failed wipe succeeded"
last .message | grep -q "exited with 7 (the host stays claimed)" || fail "failed wipe: $(last .message)"
[ "$(claims "$A" | wc -l)" = 1 ] || fail "a failed wipe released the host"
"$BIN/drover" zk get "/drover/pools/acme/rack-a/claims/$(claims "$A")" --zk "$DROVER_ZK" | grep -q '"wiping"' ||
  fail "the claim does not say wiping"
pass "a failed wipe keeps the host claimed (state wiping)"

# Attack (issue 20, point 5): tenant globex names acme's pool "rack-a" and its hosts, with a
# key of its own. Its claims are in its own namespace: acme's claims do not change (none of
# acme's hosts is taken or left wiping by globex), and its key logs in nowhere.
before=$(claims "$A")
"$KEYGEN" "$T/evil_key" "evil-key"
ptask create g-1 1 ".tenant = \"globex\" | .config.provider.private_key = $(jq -Rs . < "$T/evil_key")" |
  expect_fail "$POOL" "another tenant's hosts" "."
[ "$(claims "$A")" = "$before" ] || fail "globex changed acme's claims: $(claims "$A")"
"$BIN/drover" zk get "/drover/pools/acme/rack-a/claims/$(claims "$A")" --zk "$DROVER_ZK" | grep -q '"tenant":"acme"' ||
  fail "acme's claim changed hands"
pass "another tenant naming the same pool and hosts claims nothing of acme's"

# --- bad input ---
ptask create q-1 1 '.config.provider.hosts = []' | expect_fail "$POOL" "no hosts" 'field "hosts"'
ptask create q-1 1 '.config.provider.hosts[0].host_key = "nonsense"' | expect_fail "$POOL" "bad host key" 'host_key'
ptask create q-1 1 'del(.config.provider.private_key)' | expect_fail "$POOL" "no pool key" '"private_key"'
ptask create q-1 1 | DROVER_ZK_HOSTS='' expect_fail "$POOL" "no zookeeper" 'DROVER_ZK_HOSTS is not set'
TIMEOUT_MS=3000 ptask create q-1 1 | DROVER_ZK_HOSTS=127.0.0.1:1 expect_fail "$POOL" "zookeeper down" 'not connected'
ptask install q-1 | expect_fail "$POOL" "wrong task" 'serves create, confirm and delete'
# A host whose key is not the configured one: refused, before any login.
other=$(cut -d' ' -f1-2 "$(node_dir h1)/ssh/host_ed25519_key.pub")
ptask create q-1 1 ".config.provider.pool = \"rack-b\" | .config.provider.hosts = [.config.provider.hosts[1] | .host_key = \"$other\"]" |
  expect_fail "$POOL" "wrong host key" "does not match"
pass "bad input: clear errors"

# The pool's key and the cluster's never reach the log.
for k in "$T/pool_key" "$T/cluster_key"; do
  grep -qF "$(sed -n 2p "$k")" "$T/plugins.log" && fail "a private key reached the log"
done
pass "no private key in the log"
pass "ssh-pool provider"
