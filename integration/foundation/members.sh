#!/usr/bin/env bash
# A droverd and a drover-worker register ephemeral member znodes with JSON
# data, and SIGTERM removes them at once (not after the session timeout,
# which is 20 s here), with exit status 0.
. "$(dirname "$0")/../../testlib/test-lib.sh"

port=$(free_port)
write_droverd_conf droverd-a "$port"
write_worker_conf worker-a "worker.plugin_dir = $DROVER_BUILD_DIR/plugins"
start_proc droverd-a "$BIN/droverd"
start_proc worker-a "$BIN/drover-worker"

wait_ready droverd-a "$port" 30
curl -sf "http://127.0.0.1:$port/healthz" | jq -e '.status == "alive"' > /dev/null ||
  fail "/healthz is not alive"
curl -sf "http://127.0.0.1:$port/readyz" | jq -e '.checks.zookeeper and .checks.postgres' > /dev/null ||
  fail "/readyz does not report both dependencies"
pass "droverd ready on 127.0.0.1:$port"

# Both member znodes exist, are ephemeral, and hold JSON naming the member.
zk_get_to() { zk get "$2" > "$1" 2> /dev/null; } # FILE PATH
for m in droverd/droverd-a worker/worker-a; do
  wait_until 10 "member znode /drover/members/$m" zk_get_to "$T/member.out" "/drover/members/$m"
  grep -q '(ephemeral)' "$T/member.out" || fail "/drover/members/$m is not ephemeral"
  sed -e 's/^[^ ]*  //' -e 's/  (ephemeral)$//' "$T/member.out" | jq -e --arg id "${m#*/}" '.id == $id' \
    > /dev/null || fail "/drover/members/$m does not hold JSON with its id: $(cat "$T/member.out")"
  pass "/drover/members/$m: $(cat "$T/member.out")"
done

# SIGTERM: the znode goes at once. The session timeout is 20 s; anything under
# 5 s can only be the explicit leave.
for m in droverd/droverd-a worker/worker-a; do
  name=${m#*/}
  t0=$(now_ms)
  kill -TERM "$(pid_of "$name")"
  while zk get "/drover/members/$m" > /dev/null 2>&1; do
    [ $(($(now_ms) - t0)) -gt 5000 ] && fail "/drover/members/$m still there 5 s after SIGTERM"
    sleep 0.02
  done
  gone=$(($(now_ms) - t0))
  status=$(wait_exit "$name" 10) || fail "$name did not exit after SIGTERM"
  [ "$status" = 0 ] || fail "$name exited with status $status after SIGTERM"
  pass "$name: member znode gone ${gone} ms after SIGTERM, exit status 0"
done
