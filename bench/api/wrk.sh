#!/usr/bin/env bash
# wrk.sh: API load check through three droverd (run under scripts/with-stack).
#
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel -j
#   DROVER_BUILD_DIR=$PWD/build-rel DROVER_SOURCE_DIR=$PWD \
#     scripts/with-stack -- bench/api/wrk.sh [SECONDS] [CONNECTIONS-PER-NODE]
#
# Starts three droverd on one private stack, creates a tenant, an admin and a
# cluster, then for each path runs one wrk per node at the same time (the
# load balancer's view: every node serves every request) and prints each
# node's requests per second and the sum. Figures: bench/api/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
secs=${1:-10}
conns=${2:-32}

for n in 1 2 3; do
  start_api_node "droverd-$n" "log.level = warn" "postgres.pool_size = 4" "http.max_connections = 4096"
done
ports=("$PORT_droverd_1" "$PORT_droverd_2" "$PORT_droverd_3")
PORT=${ports[0]}
api POST /v1/tenants '{"name":"bench"}' "$SUPER" > /dev/null
TOKEN=$(body_of "$(api POST /v1/users '{"name":"b","role":"admin","tenant":"bench"}' "$SUPER")" | jq -r .token)
catalogue_json "$FIXTURES" > "$T/catalogue.json"
api POST /v1/import "@$T/catalogue.json" > /dev/null
CID=$(body_of "$(api POST /v1/clusters '{"name":"c1","template":"lamp","nodes":3,"provider":"rackspace"}')" | jq -r .cluster.id)
expect 200 "$(api GET "/v1/clusters/$CID")" '.name == "c1"' "bench cluster"

run() { # PATH AUTH?
  local path=$1 auth=${2:-} total=0 i pids=()
  for i in 0 1 2; do
    if [ -n "$auth" ]; then
      wrk -t1 -c"$conns" -d"${secs}s" -H "Authorization: Bearer $TOKEN" \
        "http://127.0.0.1:${ports[$i]}$path" > "$T/wrk.$i" 2>&1 &
    else
      wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:${ports[$i]}$path" > "$T/wrk.$i" 2>&1 &
    fi
    pids+=($!)
  done
  wait "${pids[@]}"
  echo "== GET $path: 3 nodes x wrk -t1 -c$conns -d${secs}s"
  for i in 0 1 2; do
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$T/wrk.$i")
    lat=$(awk '/^    Latency/ {print $2}' "$T/wrk.$i")
    non2xx=$(awk '/Non-2xx/ {print $5}' "$T/wrk.$i")
    echo "node $((i + 1)): $rps req/s, mean latency $lat${non2xx:+, non-2xx: $non2xx}"
    total=$(echo "$total + $rps" | bc)
  done
  echo "total: $total req/s"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
run /healthz
run "/v1/clusters/$CID" auth
