#!/usr/bin/env bash
# The loopback provider against real sshd processes: create, confirm and
# delete; idempotent and concurrent creates; nothing of a deleted node left
# (no process in its namespace, no file, no address in use); bad input.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"

# --- create and confirm: a node that answers with its own host key ---
lb_create node-1
addr=$(kv node-1 .ipaddresses.access_v4)
case "$addr" in "$NET_PREFIX".*) ;; *) fail "address $addr is not in $NET" ;; esac
[ "$(kv node-1 .hostname)" = "$addr" ] || fail "hostname is not the address"
dir=$(node_dir node-1)
[ "$(kv node-1 .ssh_host_key)" = "$(ssh-keygen -lf "$dir/ssh/host_ed25519_key.pub" | awk '{print $2}')" ] ||
  fail "ssh_host_key is not the fingerprint of the node's host key"
listening "$addr:22" || fail "nothing listens on $addr:22"
pass "create + confirm: node-1 on $addr with host key $(kv node-1 .ssh_host_key)"

# Secrets: no file of the node readable by others holds a private key, and
# nothing the plugin logged holds the cluster's key.
bad=$(find "$dir" -type f -perm /044 -exec grep -l "PRIVATE KEY" {} + 2>/dev/null || true)
[ -z "$bad" ] || fail "readable by others and holding a private key: $bad"
keyline=$(sed -n 2p "$T/cluster_key")
grep -qF "$keyline" "$T/plugins.log" && fail "the cluster's private key reached the log"
pass "no private key readable by others or logged"

# The cluster's key (sshkey_generate) is what OpenSSH itself makes of it, and
# libssh2 authenticated with it: confirm logs in with the cluster's key.
[ "$(ssh-keygen -y -f "$T/cluster_key" | cut -d' ' -f1-2)" = "$(cut -d' ' -f1-2 "$T/cluster_key.pub")" ] ||
  fail "ssh-keygen derives another public key from sshkey_generate's private key"
[ "$(ssh-keygen -lf "$T/cluster_key" | awk '{print $2}')" = "$(ssh-keygen -lf "$T/cluster_key.pub" | awk '{print $2}')" ] ||
  fail "fingerprints of the private and public key differ"
task confirm node-1 | run "$LB" || fail "confirm: $(last .message)"
last .message | grep -q "the cluster's key logs in" || fail "libssh2 did not authenticate: $(last .message)"
grep -q "Accepted publickey for root .* ED25519" "$dir/sshd.log" || fail "sshd logged no ED25519 key login"
pass "sshkey_generate's key: OpenSSH reads it, libssh2 authenticates with it against sshd"

# A second client (OpenSSH) with the cluster's key, checking the same host key.
known_host node-1
# shellcheck disable=SC2016 # expanded by the node's shell
[ "$(on node-1 'echo $DROVER_NODE_ROOT')" = "$dir/root" ] || fail "DROVER_NODE_ROOT on the node"
# The node's processes see their own namespace: its PID 1 is the node's sshd.
on node-1 'cat /proc/1/cmdline | tr "\0" " "' | grep -qF "$dir/ssh/sshd_config" ||
  fail "PID 1 on the node is not its sshd"
pass "OpenSSH logs in with the cluster's key; the node has its own PID namespace"

# --- idempotent create: a retry finds what the first attempt made ---
sshd_pid=$(jq -r .sshd_pid "$dir/node.json")
task create node-1 2 | run "$LB" || fail "second create: $(last .message)"
[ "$(last '.result."provider-id"')" = "$(kv node-1 '."provider-id"')" ] || fail "another provider-id"
last .message | grep -q "found running" || fail "second create did not find the node: $(last .message)"
[ "$(jq -r .sshd_pid "$dir/node.json")" = "$sshd_pid" ] || fail "second create restarted sshd"
task confirm node-1 2 | run "$LB" || fail "confirm after retry"
[ "$(last .result.ipaddresses.access_v4)" = "$addr" ] || fail "the retry moved the node"
pass "a retried create finds the running node (same id, address, sshd)"

# A create whose sshd died (a crash half-way): the retry resumes with the same
# address and host key.
hk=$(kv node-1 .ssh_host_key)
kill -KILL "$sshd_pid"
for _ in $(seq 100); do listening "$addr:22" || break; sleep 0.05; done
task create node-1 3 | run "$LB" || fail "resuming create: $(last .message)"
last .message | grep -q "resumed" || fail "not resumed: $(last .message)"
task confirm node-1 3 | run "$LB" || fail "confirm after resume: $(last .message)"
[ "$(last .result.ipaddresses.access_v4)" = "$addr" ] && [ "$(last .result.ssh_host_key)" = "$hk" ] ||
  fail "the resumed node changed address or host key"
record_node node-1
pass "a create after a crash resumes: same address, same host key"

# cleanup: true (a retried create in the seeds' delete-then-create) starts afresh.
# shellcheck disable=SC2016 # expanded by the node's shell
on node-1 'touch $DROVER_NODE_ROOT/leftover'
task create node-1 4 1 '.cleanup = true' | run "$LB" || fail "create with cleanup: $(last .message)"
last .message | grep -q "^created" || fail "cleanup create: $(last .message)"
[ -e "$dir/root/leftover" ] && fail "cleanup left the earlier attempt's files"
task confirm node-1 4 | run "$LB" || fail "confirm after cleanup"
merge node-1
record_node node-1
[ "$(kv node-1 .ssh_host_key)" != "$hk" ] || fail "cleanup kept the old host key"
known_host node-1
pass "cleanup: true removes the earlier attempt and creates afresh"

# --- concurrent creates: never two live nodes on one address ---
many=(n-a n-b n-c n-d n-e n-f n-g n-h)
lb_create "${many[@]}"
addrs=$(for n in node-1 "${many[@]}"; do kv "$n" .ipaddresses.access_v4; done | sort)
[ "$(echo "$addrs" | uniq | wc -l)" = 9 ] || fail "two nodes share an address: $addrs"
for n in "${many[@]}"; do
  listening "$(kv "$n" .ipaddresses.access_v4):22" || fail "$n does not listen"
done
pass "8 concurrent creates: 9 nodes, 9 distinct addresses, all listening"

# --- delete: no process, no file, no address left ---
# shellcheck disable=SC2016 # expanded by the node's shell
on node-1 'setsid sleep 3000 </dev/null >/dev/null 2>&1 & nohup sleep 3001 >/dev/null 2>&1 &
  mkdir -p $DROVER_NODE_ROOT/srv && echo data > $DROVER_NODE_ROOT/srv/file'
ns=$(jq -r .pidns "$dir/node.json")
[ "$(ns_procs "$ns")" -ge 3 ] || fail "expected sshd and two daemons in the node's namespace"
lb_delete node-1
last .message | grep -q "^deleted" || fail "delete: $(last .message)"
[ "$(ns_procs "$ns")" = 0 ] || fail "processes left in the deleted node's namespace"
[ -e "$dir" ] && fail "the node directory is left"
listening "$addr:22" && fail "$addr:22 still in use"
[ -e "$NODES/.addresses/$addr" ] && fail "the address claim is left"
pass "delete: daemons killed with the namespace, directory and claim gone, address free"

task delete node-1 | run "$LB" || fail "second delete failed"
last .message | grep -q "already gone" || fail "second delete: $(last .message)"
pass "delete of a deleted node succeeds (already gone)"

# The freed address is taken again by the next create.
lb_create node-2
[ "$(kv node-2 .ipaddresses.access_v4)" = "$addr" ] || fail "the freed address was not re-used"
pass "a freed address is allocated again"

for n in "${many[@]}" node-2; do lb_delete "$n"; done
left=$(find "$NODES" -mindepth 1 -maxdepth 1 ! -name .lock ! -name .addresses | wc -l)
[ "$left" = 0 ] || fail "$left entries left in the provider root"
[ -z "$(ls -A "$NODES/.addresses")" ] || fail "claims left: $(ls "$NODES/.addresses")"
pass "every node deleted: the provider root is empty"

# --- another port, for machines whose own sshd listens on *:22 ---
task create n-port 1 1 '.config.provider.port = 2222' | run "$LB" || fail "create on 2222: $(last .message)"
merge n-port
record_node n-port
task confirm n-port 1 1 '.config.provider.port = 2222' | run "$LB" || fail "confirm on 2222: $(last .message)"
merge n-port
[ "$(kv n-port .ssh_port)" = 2222 ] || fail "confirm did not return ssh_port 2222"
listening "$(kv n-port .ipaddresses.access_v4):2222" || fail "nothing listens on port 2222"
task bootstrap n-port 1 1 '.config.service = {action: {type: "bootstrap", fields: {automators: ["shell"]}}}' |
  run "$SSHA" || fail "the automator on port 2222: $(last .message)"
task delete n-port 1 1 '.config.provider.port = 2222' | run "$LB" || fail "delete on 2222: $(last .message)"
rm -f "$T/pids/lbnode-n-port.pid"
pass "provider field port: a node on 2222, reached by the automator through ssh_port"

# --- bad input: clear errors ---
lb_fails() { # WHAT PATTERN: expect_fail, and the result says status failed
  expect_fail "$LB" "$1" "$2"
  [ "$(last .status)" = failed ] || fail "$1: status $(last .status)"
}
printf 'not json' | lb_fails "garbage" "bad task JSON: 1:[0-9]+: .* expected"
printf '' | lb_fails "no input" "bad task JSON: no input"
printf '{"taskId": "1.2.3"}' | lb_fails "no taskName" 'field "taskName"'
printf '{"taskId": "1;rm", "taskName": "create", "config": {}}' | lb_fails "bad id" 'field "taskId"'
task create n-x 1 1 'del(.config.provider)' | lb_fails "no provider" 'no "provider" object'
task create n-x 1 1 '.config.provider.root = "relative/dir"' | lb_fails "bad root" 'field "root"'
task create n-x 1 1 '.config.provider.network = "10.0.0.0/24"' | lb_fails "bad net" 'inside 127.0.0.0/8'
task create n-x 1 1 '.config.ssh.public_key = "ssh-ed25519 garbage"' | lb_fails "bad key" 'public_key'
task install n-x | lb_fails "wrong task" 'serves create, confirm and delete'
task confirm n-x | lb_fails "confirm unknown" 'does not exist'
[ -z "$(ls -A "$NODES/.addresses")" ] || fail "a failed create left a claim"
pass "bad input: clear errors, nothing claimed"

# Recorded pids are all gone (nothing for the reaper to do).
ls "$T"/pids/lbnode-*.pid > /dev/null 2>&1 && fail "node pids left in the stack's pid directory"
pass "loopback provider"
