#!/usr/bin/env bash
# The container provider with real unprivileged LXC containers: create, confirm and
# delete; a retried create; the hardware type's limits seen from inside the node;
# isolation from the host and from another node; root in the node is not root on the
# host; delete, and a create killed half-way then rolled back, leave nothing on the
# host (process, mount, veth, cgroup, file, claim); bad input.
. "$DROVER_SOURCE_DIR/testlib/container.sh"

# --- create and confirm: two nodes, each answering with its own host key ---
HW='{"image": "debian12", "cpus": "1", "memory": "512M"}' ct_create node-1
HW='{"image": "debian12", "cpus": "2", "memory": "1024M"}' ct_create node-2
a1=$(kv node-1 .ipaddresses.access_v4)
a2=$(kv node-2 .ipaddresses.access_v4)
case "$a1 $a2" in "$CT_NET_PREFIX".*" $CT_NET_PREFIX".*) ;; *) fail "addresses $a1 $a2 are not in $CT_NET" ;; esac
[ "$a1" != "$a2" ] || fail "two nodes got $a1"
[ "$(kv node-1 .ssh_host_key)" = "$(ssh-keygen -lf "$(ct_dir node-1)/ssh/host_ed25519_key.pub" | awk '{print $2}')" ] ||
  fail "ssh_host_key is not the fingerprint of the node's host key"
[ "$(on node-1 hostname)" = "node-1" ] || fail "node-1's hostname is $(on node-1 hostname)"
pass "create + confirm: node-1 on $a1, node-2 on $a2, each with its own host key and hostname"

# --- a retried create finds the running node ---
init1=$(lxc-info -P "$CT_ROOT" -n "$(kv node-1 '."provider-id"')" -pH)
ct_task create node-1 2 | run "$CT" || fail "second create: $(last .message)"
last .message | grep -q "found running" || fail "second create: $(last .message)"
[ "$(lxc-info -P "$CT_ROOT" -n "$(kv node-1 '."provider-id"')" -pH)" = "$init1" ] || fail "the retry restarted node-1"
ct_task confirm node-1 2 | run "$CT" || fail "confirm after retry: $(last .message)"
[ "$(last .result.ipaddresses.access_v4)" = "$a1" ] || fail "the retry moved node-1"
pass "a retried create finds the running node (same init, same address)"

# The node outlives its creator: LXC's monitor and the node's init are in sessions of
# their own, not in the plugin's process group, which the worker kills when it dies or
# restarts.
mon=$(pgrep -f -x "\[lxc monitor\] $CT_ROOT $(kv node-1 '."provider-id"')")
[ -n "$mon" ] || fail "no LXC monitor for node-1"
for p in "$mon" "$init1"; do
  [ "$(ps -o sid= -p "$p" | tr -d ' ')" != "$(ps -o sid= -p $$ | tr -d ' ')" ] || fail "process $p of node-1 is in the test's session"
done
[ "$(ps -o sid= -p "$mon" | tr -d ' ')" = "$mon" ] || fail "node-1's monitor does not lead a session of its own"
pass "node-1's monitor ($mon) and init ($init1) are in sessions of their own: a worker's death leaves the node running"

# --- the hardware type, from inside: nproc and the memory cgroup's limit ---
mem() { on "$1" 'cat /sys/fs/cgroup/memory.max 2> /dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes'; }
[ "$(on node-1 nproc)" = 1 ] || fail "node-1 (1 cpu) has nproc $(on node-1 nproc)"
[ "$(mem node-1)" = $((512 << 20)) ] || fail "node-1's memory limit is $(mem node-1), not 512 MiB"
[ "$(on node-2 nproc)" = 2 ] || fail "node-2 (2 cpus) has nproc $(on node-2 nproc)"
[ "$(mem node-2)" = $((1024 << 20)) ] || fail "node-2's memory limit is $(mem node-2), not 1 GiB"
pass "cgroup limits seen inside: node-1 nproc 1 and 512 MiB, node-2 nproc 2 and 1 GiB"

# --- isolation ---
# The host's processes: the node's PID 1 is its sshd, and it sees no process of the host
# (this test's shell, the stack's ZooKeeper).
on node-1 'cat /proc/1/cmdline | tr "\0" " "' | grep -q 'sshd -D' || fail "PID 1 of node-1 is not its sshd"
on node-1 'ps -e -o args' | grep -qE "java|with-stack|$$" && fail "node-1 sees a process of the host"
# The host's files: neither this test's directory nor the host's /work.
on node-1 "test -e '$T' || test -e /work || test -e '$DROVER_SOURCE_DIR'" && fail "node-1 sees the host's files"
# Another node's processes and files.
on node-2 'setsid sleep 4242 > /dev/null 2>&1 < /dev/null & echo secret > /root/node-2-only'
on node-1 'ps -e -o args' | grep -q 'sleep 4242' && fail "node-1 sees node-2's processes"
on node-1 'test -e /root/node-2-only' && fail "node-1 sees node-2's files"
# The network: node-1 reaches node-2 on the stack's bridge, and has no default route.
on node-1 "timeout 5 bash -c 'exec 3<> /dev/tcp/$a2/22'" || fail "node-1 cannot reach node-2's sshd"
on node-1 'ip route' | grep -q default && fail "node-1 has a default route: $(on node-1 'ip route')"
pass "isolation: no host process or file, no process or file of node-2, no route off the machine"

# Root in the node is not root on the host: its user namespace maps uid 0 to an
# unprivileged host uid, what it writes is owned by that uid, the kernel's settings are
# read-only, and the node's processes run as that uid on the host.
base=$(on node-1 'cat /proc/self/uid_map' | awk '$1 == 0 {print $2}')
[ -n "$base" ] && [ "$base" -ge 65536 ] || fail "uid 0 in the node is host uid \"$base\""
on node-1 'echo x > /root/mine'
[ "$(stat -c %u "$(ct_dir node-1)/upper/root/mine")" = "$base" ] || fail "a file root wrote in the node is not owned by host uid $base"
on node-1 'echo 1 > /proc/sys/kernel/sysrq' 2> /dev/null && fail "root in node-1 wrote a kernel setting"
on node-1 'mknod /tmp/sda b 8 0 && head -c1 /tmp/sda' 2> /dev/null && fail "root in node-1 read a host disk"
[ "$(ps -o uid= -p "$init1" | tr -d ' ')" = "$base" ] || fail "node-1's init runs as host uid $(ps -o uid= -p "$init1"), not $base"
pass "root in the node is host uid $base: no kernel setting, no device, its files and processes are $base's"

# --- delete leaves nothing ---
id1=$(kv node-1 '."provider-id"')
ct_task delete node-1 | run "$CT" || fail "delete node-1: $(last .message)"
left=$(ct_leftovers "$id1" "$a1")
[ -z "$left" ] || fail "delete left: $left"
kill -0 "$init1" 2> /dev/null && fail "node-1's init $init1 survived"
ct_task delete node-1 | run "$CT" || fail "a second delete: $(last .message)"
last .message | grep -q "already gone" || fail "second delete: $(last .message)"
pass "delete: no process, mount, veth, cgroup, file or claim left; a second delete is a no-op"

# --- a create killed half-way (its worker SIGKILLed it), then rolled back ---
# The worker kills the plugin's process group; a rollback's delete must then find and
# remove whatever the create had made by then.
ct3=$(ct_id node-3)
for stage in claim mount; do
  rm -f "$T/last.json"
  setsid bash -c "jq -c '. * {config: $HW}' <<< '$(task create node-3 1 3)' | '$CT' > '$T/kill.json' 2>> '$T/plugins.log'" &
  pid=$!
  case $stage in
    claim) poll_until -e 0.01 60 bash -c "grep -qx $ct3 '$CT_ROOT'/.addresses/* 2> /dev/null" ||
      fail "the create made no claim" ;;
    mount) poll_until -e 0.01 60 bash -c "grep -qF '$CT_ROOT/$ct3/rootfs' /proc/self/mountinfo" ||
      fail "the create mounted nothing" ;;
  esac
  kill -KILL -- "-$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  a3=$(grep -lx "$ct3" "$CT_ROOT"/.addresses/* 2> /dev/null | head -n1 | xargs -r basename)
  [ -n "$a3" ] || fail "killed at $stage: no claim is left to find"
  task delete node-3 1 4 ".config.facts = {\"provider-id\": \"$ct3\"}" | run "$CT" ||
    fail "rollback delete after a kill at $stage: $(last .message)"
  left=$(ct_leftovers "$ct3" "$a3")
  [ -z "$left" ] || fail "killed at $stage, rolled back, left: $left"
done
pass "a create SIGKILLed after its claim, or after its mount, then rolled back: nothing left"

# --- bad input: a clear error, nothing made ---
ct_task create node-4 1 5 '.config.memory = "lots"' | expect_fail "$CT" "bad memory" 'memory "lots" is not like 512M'
ct_task create node-4 1 5 '.config.cpus = "99"' | expect_fail "$CT" "too many cpus" 'asks for 99 cpus; this host has'
ct_task create node-4 1 5 '.config.image = "nope"' | expect_fail "$CT" "no image" 'image "nope" is not built'
ct_task create node-4 1 5 '.config.image = "../../etc"' | expect_fail "$CT" "bad image" 'is not an image name'
ct_task create node-4 1 5 '.config.ssh.public_key = "hello"' | expect_fail "$CT" "bad key" 'not one public key line'
ct_task create node-4 1 5 '.nodeId = "a/b"' | expect_fail "$CT" "bad node" 'must be \[A-Za-z0-9_.-\]'
ct_task confirm node-4 1 5 | expect_fail "$CT" "no such node" 'does not exist here'
[ -n "$(find "$CT_ROOT" -maxdepth 1 -name 'ct-*-node-4')" ] && fail "a refused create left a directory"
sed 's#^container.network = .*#container.network = 8.8.8.0/24#' "$T/host.conf" > "$T/public.conf"
ct_task create node-4 1 5 | DROVER_HOST_CONF="$T/public.conf" expect_fail "$CT" "public range" 'not in a private range'
pass "bad input: memory, cpus, image, key, node id, unknown node, a public range: clear errors, nothing made"
pass "container provider"
