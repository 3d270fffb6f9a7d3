#!/usr/bin/env bash
# A worker killed with SIGKILL and restarted at once serves again without waiting for its
# dead session to expire (docs/worker.md "Restarts"). The worker runs with its tenant's own
# ZooKeeper identity, which may not delete its stale member znode, and keeps its session in
# worker.session_file. The dead one's installs are held (claimed by its session); the
# restarted worker proves it dead (the file's lock is free) and closes that session, then
# joins and claims one of those very items with its new session (with slots, worker.slots:
# the owner sees the member back with another session and writes the task into a slot of
# the new one). Asserted by event order: when the new session holds the task, ZooKeeper has
# logged no expiry of the old session (before the fix the item stays claimed until that
# expiry). The plugins of the dead worker
# are dead (the sleep plugin's flock: no overlap), the job succeeds. A second worker given
# the same session file while the first runs finds it busy and touches nothing.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
PY=/usr/bin/python3 # the system's, with python3-kazoo
SESSION=20s # long: an expiry cannot hide inside the test's own steps
. "$(dirname "$0")/../../testlib/engine.sh"

zk_logins
ZK_DROVERD_ID=$DROVERD_ID # workers: tenant acme's identity
start_droverd 1 "zookeeper.digest_file = $T/zk.digest"
setup_tenant
SF="$T/worker-1.session"
start_worker worker-1 "worker.session_file = $SF"
export DROVER_ZK_DIGEST_FILE="$T/zk.digest"
Q=/drover/queues/acme/default
held() { [ "$(held_tasks "$Q" | grep -c .)" = 2 ]; }
read -r _ JID <<< "$(create_cluster c1 2 '{"hold_on":{"task":"install","file":"'"$T/gate"'"}}')"
wait_until 60 "worker-1 to hold both installs" held
[ "$(stat -c %a "$SF")" = 600 ] || fail "the session file is $(stat -c %a "$SF")"
old=$(awk '{print $1}' "$SF")
held=$(held_tasks "$Q")
while read -r c s; do
  [ "$((s))" = "$((old))" ] || fail "$c is not held by worker-1's session $old: $s"
done <<< "$held"

# A second process given the same file while worker-1 lives: busy, nothing closed.
start_worker worker-1b "worker.session_file = $SF"
busy() { grep -q 'event=session-file-busy' "$T/worker-1b.log"; }
wait_until 60 "worker-1b to find the session file busy" busy
grep -q 'previous-session-closed' "$T/worker-1b.log" && fail "worker-1b closed a live worker's session"
kill "$(pid_of worker-1b)"
wait_exit worker-1b > /dev/null
[ "$(held_tasks "$Q")" = "$held" ] || fail "worker-1b changed worker-1's claims or slots"
pass "a session file held by a live worker: busy, its session left alone"

kill -9 "$(pid_of worker-1)"
wait_exit worker-1 > /dev/null
start_worker worker-1 "worker.session_file = $SF"
# taken_again: one of the dead session's tasks (only the installs run: the gate holds them)
# is held by worker-1's new session.
taken_again() {
  local c s
  while read -r c s; do
    [ -n "$s" ] && [ "$((s))" != "$((old))" ] && return 0
  done <<< "$(held_tasks "$Q")"
  return 1
}
wait_until 60 "the restarted worker-1 to claim a dead session's item" taken_again
expired=$(grep -c "Expiring session 0x$(printf '%x' "$((old))")" "$T"/zk*/zookeeper.log || true)
[ "$expired" = 0 ] || fail "the item was taken only after the old session expired"
grep -q "event=previous-session-closed session=$(printf '0x%x' "$((old))")" "$T/worker-1.log" ||
  fail "no previous-session-closed: $(grep -E 'previous-session|session-file' "$T/worker-1.log")"
new=$(awk '{print $1}' "$SF")
[ "$((new))" != "$((old))" ] || fail "the session file still names the old session"
owner=$("$PY" - "$DROVER_ZK" "$T/zk.digest" << 'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", open(sys.argv[2]).read().strip())])
zk.start(timeout=30)
print(hex(zk.exists("/drover/members/worker/worker-1").ephemeralOwner))
PY
)
[ "$((owner))" = "$((new))" ] || fail "worker-1's member znode is owned by $owner, not its new session $new"
pass "restarted at once: the dead session closed, the member rejoined and a dead item claimed before any expiry"

touch "$T/gate"
wait_job "$JID" succeeded 120
check_runs
pass "the job succeeded; no overlap of the dead worker's plugins with the new attempts"
