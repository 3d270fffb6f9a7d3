#!/usr/bin/env bash
# Re-attachable remote work: a worker's death in the middle of a long install
# costs no second run. The plugin is killed with SIGKILL (its whole process
# group, as the worker's death does), the same attempt is delivered again, and
# the install script, which counts its runs on the node, ran once. Also: a new
# attempt stops an older one still running, a late delivery of the older one is
# refused, a run that vanished from the node is reported, and no command line
# on this machine shows a secret meanwhile.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"

R="$T/resources"
mkdir -p "$R"
export DROVER_RESOURCES="$R"
cat > "$R/install.sh" <<'EOF'
#!/bin/sh
cat > /dev/null
n=$(cat "$DROVER_NODE_ROOT/runs" 2>/dev/null || echo 0)
echo $((n + 1)) > "$DROVER_NODE_ROOT/runs"
echo "task $DROVER_TASK_ID started" >> "$DROVER_NODE_ROOT/log"
sleep "$DROVER_CFG_CLUSTER_INSTALL_SECONDS"
# A gate the test may hold closed (install.gate), so that a re-delivery finds the run
# still running however slow the machine is.
i=0
while [ -e "$DROVER_NODE_ROOT/install.gate" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
echo "task $DROVER_TASK_ID done" >> "$DROVER_NODE_ROOT/log"
echo '{"installed": "yes"}' > "$DROVER_RESULT"
EOF
chmod +x "$R/install.sh"

lb_create node-1
root=$(kv node-1 .node_root)
export SERVICE=zookeeper-server
export CLUSTER_CONFIG='{"install": {"seconds": 4}, "secret": "zz-s3cr3t-99"}'

# inst INDEX ATTEMPT: the install task (taskId 7.INDEX.ATTEMPT).
inst() {
  task install node-1 "$2" "$1" \
    '.config.service = {name: "zookeeper-server", action: {type: "shell", fields: {script: "install.sh"}}}'
}
runs() { cat "$root/runs" 2>/dev/null || echo 0; }

# start_and_kill INDEX ATTEMPT: start the plugin, wait until the script runs
# on the node, then SIGKILL the plugin's process group.
start_and_kill() {
  local want=$(($(runs) + 1)) pid
  inst "$1" "$2" > "$T/task.json"
  setsid "$SSHA" < "$T/task.json" > "$T/killed.json" 2>> "$T/plugins.log" &
  pid=$!
  for _ in $(seq 600); do
    [ "$(runs)" -ge "$want" ] && break
    sleep 0.05
  done
  [ "$(runs)" -ge "$want" ] || fail "the install script never started"
  check_cmdlines
  kill -KILL -- "-$pid"
  wait "$pid" 2> /dev/null || true
  [ -s "$T/killed.json" ] && fail "the killed plugin printed a result"
  return 0
}

# No process on this machine carries a secret in its command line.
check_cmdlines() {
  local keyline p
  keyline=$(sed -n 2p "$T/cluster_key")
  for p in /proc/[0-9]*/cmdline; do
    tr '\0' ' ' < "$p" 2> /dev/null | grep -qF -e zz-s3cr3t-99 -e "$keyline" &&
      fail "a command line shows a secret: $p"
  done
  return 0
}

# --- the plugin dies mid-install; the same attempt is delivered again ---
# The run is held on the node (install.gate) until the re-delivery has found it running
# (its log says event=handle ... state=running): on a loaded machine a re-delivery slower than the script
# would find it finished and harvest it instead, which proves nothing about re-attaching.
touch "$root/install.gate"
start_and_kill 1 1
inst 1 1 > "$T/task.json"
"$SSHA" < "$T/task.json" > "$T/last.json" 2>> "$T/plugins.log" &
redelivery=$!
reattached() { grep -q "event=handle task_id=7.1.1 state=running" "$T/plugins.log"; }
poll_until 120 reattached || { rm -f "$root/install.gate"; fail "the re-delivery never found the run: $(tail -n 3 "$T/plugins.log")"; }
rm -f "$root/install.gate"
wait "$redelivery" || fail "re-delivery: $(last .message)"
last .message | grep -q "re-attached" || fail "re-delivery did not re-attach: $(last .message)"
[ "$(last .result.installed)" = yes ] || fail "the re-attached run's result is missing"
[ "$(runs)" = 1 ] || fail "the install script ran $(runs) times"
grep -qx "task 7.1.1 done" "$root/log" || fail "the first run did not finish"
pass "SIGKILL mid-install, re-delivered: re-attached, the install script ran once"

inst 1 1 | run "$SSHA" || fail "third delivery: $(last .message)"
last .message | grep -q "harvested" || fail "third delivery: $(last .message)"
[ "$(runs)" = 1 ] || fail "the install script ran $(runs) times"
pass "delivered again after it finished: harvested, still one run"

# --- a new attempt stops an older one that still runs on the node ---
CLUSTER_CONFIG='{"install": {"seconds": 30}, "secret": "zz-s3cr3t-99"}'
start_and_kill 2 1
CLUSTER_CONFIG='{"install": {"seconds": 1}, "secret": "zz-s3cr3t-99"}'
inst 2 2 | run "$SSHA" || fail "attempt 2: $(last .message)"
last .message | grep -q "ran it" || fail "attempt 2 did not run: $(last .message)"
[ "$(runs)" = 3 ] || fail "expected 3 runs in all, got $(runs)"
grep -qx "task 7.2.1 done" "$root/log" && fail "attempt 1 was not stopped"
[ "$(cat "$root/var/lib/drover/runs/7.2/1/exit")" = superseded ] || fail "attempt 1 not marked superseded"
known_host node-1
on node-1 'ps -e -o stat= -o args=' | grep -v '^Z' | grep -q "sleep 30$" &&
  fail "attempt 1's script still runs: $(on node-1 'ps -e -o stat= -o args=')"
inst 2 1 | run "$SSHA" && fail "a late delivery of attempt 1 ran"
last .message | grep -q "is stale: attempt 2 exists" || fail "late attempt 1: $(last .message)"
[ "$(runs)" = 3 ] || fail "the stale attempt ran"
pass "a new attempt kills the older one still running; a late delivery of the older one is refused"

# --- a run that vanished from the node (a reboot) is reported, not re-run ---
CLUSTER_CONFIG='{"install": {"seconds": 30}, "secret": "zz-s3cr3t-99"}'
start_and_kill 3 1
pg=$(cat "$root/var/lib/drover/runs/7.3/1/pid")
on node-1 "kill -KILL -$pg"
inst 3 1 | run "$SSHA" && fail "a lost run succeeded"
last .message | grep -q "died on the node without an exit status" || fail "lost run: $(last .message)"
[ "$(runs)" = 4 ] || fail "the lost run was started again"
pass "a run killed on the node: $(last .message)"
pass "re-attachable remote work"
