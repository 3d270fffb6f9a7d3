#!/usr/bin/env bash
# A test that dies hard leaves no container behind. An inner test (this script with
# "inner", under its own scripts/with-stack in a session of its own) makes a container node
# and waits; then it is killed with SIGKILL, its stack's owner (with-stack) with it:
#
#   reaper   only the test's process group is killed (a ctest timeout): with-stack's
#            reaper takes the stack down, and `stack down` deletes the node;
#   sweep    the reaper is SIGKILLed first as well (nothing of the stack's own is left
#            to clean up): the node stays until `scripts/stack sweep` (which every
#            `stack up` runs too) finds the stack's owner gone and takes it down. (Under
#            ctest -j another test's `stack up` may sweep it first; either way it is gone
#            when `stack sweep` returns: a sweep in progress holds the stack's down lock.)
#
# Each time it is checked from the host that nothing of the node is left: no container
# (lxc-ls), process, mount, veth, cgroup, file or address claim, no bridge, no address-range
# reservation, and no process of the dead stack (its ZooKeeper).
if [ "${1:-}" = inner ]; then
  . "$DROVER_SOURCE_DIR/testlib/container.sh"
  ct_create node-1
  # What the outer test needs to look for, written last (its signal that all is up).
  jq -n --arg dir "$T" --arg root "$CT_ROOT" --arg bridge "$CT_BRIDGE" --arg prefix "$CT_NET_PREFIX" \
    --arg id "$(kv node-1 '."provider-id"')" --arg addr "$(kv node-1 .ipaddresses.access_v4)" \
    --arg lock "$(cat "$T/ct-net.lock")" \
    '{dir: $dir, root: $root, bridge: $bridge, prefix: $prefix, id: $id, addr: $addr, lock: $lock}' \
    > "$2.tmp"
  mv "$2.tmp" "$2"
  sleep 600
  exit 0
fi

. "$DROVER_SOURCE_DIR/testlib/container.sh"

# inner NAME: start an inner test in a session of its own; waits until its node is up.
# Sets INNER (its process group) and I_DIR, I_ROOT, I_ID, ... from what it wrote.
inner() {
  local info="$T/$1.json"
  setsid "$DROVER_SOURCE_DIR/scripts/with-stack" --no-pg --no-disk-sync -- "$0" inner "$info" \
    > "$T/$1.log" 2>&1 &
  INNER=$!
  echo "$INNER" > "$T/pids/inner-$1.pid"
  wait_until 180 "the inner test $1 to make its node" test -s "$info"
  I_DIR=$(jq -r .dir "$info")
  I_ROOT=$(jq -r .root "$info")
  I_BRIDGE=$(jq -r .bridge "$info")
  I_PREFIX=$(jq -r .prefix "$info")
  I_ID=$(jq -r .id "$info")
  I_ADDR=$(jq -r .addr "$info")
  I_LOCK=$(jq -r .lock "$info")
  I_ZK=$(cat "$I_DIR/pids/zk1.pid")
  [ "$(lxc-ls -P "$I_ROOT" --running)" = "$I_ID" ] || fail "$1: the inner node does not run"
}
# leftovers: what is left of the inner test on the host, one line each.
leftovers() {
  (
    CT_ROOT=$I_ROOT CT_BRIDGE=$I_BRIDGE CT_NET_PREFIX=$I_PREFIX
    ct_root_leftovers
    [ -e "$I_ROOT/.addresses/$I_ADDR" ] && echo "claim $I_ADDR"
    lxc-ls -P "$I_ROOT" 2> /dev/null | tr -s ' ' '\n' | grep . | sed 's/^/container /'
    ip link show "$I_BRIDGE" > /dev/null 2>&1 && echo "bridge $I_BRIDGE"
    [ -e "$I_LOCK" ] && echo "reservation $I_LOCK"
    gone "$I_ZK" || echo "zookeeper $I_ZK"
    true
  )
}
nothing_left() { [ -z "$(leftovers)" ]; }
# reaper_of PID: the pid of with-stack PID's reaper (its command line watches PID).
reaper_of() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' 2> /dev/null < "$p/cmdline" | grep -qF "while kill -0 $1 2>/dev/null" && echo "${p#/proc/}"
  done
  return 0
}

# --- reaper: the test's process group SIGKILLed, with-stack's reaper cleans up ---
inner reaper
kill -KILL -- "-$INNER"
poll_until 120 nothing_left || fail "reaper: left after the test's SIGKILL: $(leftovers)"
pass "reaper: the SIGKILLed test's node, bridge, reservation and stack are gone"

# --- sweep: the reaper SIGKILLed too; the next sweep finds the owner gone ---
inner sweep
reaper=$(reaper_of "$INNER")
[ -n "$reaper" ] || fail "sweep: no reaper found for with-stack $INNER"
kill -KILL "$reaper"
kill -KILL -- "-$INNER"
wait_until 30 "the inner with-stack to go" gone "$INNER"
[ -n "$(leftovers)" ] || fail "sweep: nothing left before the sweep (who cleaned up?)"
"$STACK" sweep 2> "$T/sweep.log" || fail "stack sweep: $(cat "$T/sweep.log")"
# (The dead stack's ZooKeeper may take a moment to exit after its SIGTERM or SIGKILL.)
poll_until 30 nothing_left || fail "sweep: left after stack sweep: $(leftovers) ($(cat "$T/sweep.log"))"
[ ! -e "/tmp/drover-stacks/$(basename "$I_DIR")" ] || fail "sweep: the dead stack is still registered"
rm -rf "$I_DIR"
pass "sweep: the dead stack's node, bridge, reservation and ZooKeeper are gone, its registration too"
