#!/usr/bin/env bash
# engine_small: many small jobs through the API, and a lone one at rest (docs/benchmarks.md).
#
#   DROVER_BUILD_DIR=build-rel scripts/with-stack -- bench/engine/engine_small.sh
#   (or bench/run engine-small; N=200 bench/run engine-small is the short form)
#
# Knobs (environment): N jobs (default 1000) of 1 to 3 nodes of the Coopr `single` template
# (5 noop tasks a node), IN_FLIGHT unfinished at most (default 100, the default quota.jobs),
# CLIENTS submitting in parallel (default 16, spread over the three droverd), LONE lone
# 3-node jobs (default 3), BENCH_SMALL_WARMUP small jobs first, unmeasured (default N / 5,
# at most 100: a fresh ZooKeeper's JIT compiler, docs/benchmarks.md), API_HEAVY creates of
# the tenant solving at once on each droverd (default: droverd's own default, 1: the API's
# fair use, docs/api.md; API_HEAVY=K sets api.max_heavy_per_tenant and _per_user to K and
# api.heavy_threads to K + 1, to see the engine's bound past the API's).
#
# One ZooKeeper, PostgreSQL, three droverd and four workers (noop plugins, concurrency 64),
# as engine_bench.sh. Order: the warm-up, then the lone jobs one after the other with
# nothing else running, then the N jobs. bench/engine/small_load.py submits and measures
# (what each figure is: its header). Its lines start "lone:" and "small:".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"

N=${N:-1000}
IN_FLIGHT=${IN_FLIGHT:-100}
CLIENTS=${CLIENTS:-16}
LONE=${LONE:-3}
warm=$((N / 5 < 100 ? N / 5 : 100))
warm=${BENCH_SMALL_WARMUP:-$warm}

heavy=()
if [ -n "${API_HEAVY:-}" ]; then
  heavy=("api.heavy_threads = $((API_HEAVY + 1))" "api.max_heavy_per_tenant = $API_HEAVY"
    "api.max_heavy_per_user = $API_HEAVY")
fi
# droverd at info: the lone job's split reads its owner's event=first-dispatch (a few lines
# per job, none per task); the workers at warn.
for n in 1 2 3; do LOG_LEVEL=info start_droverd "$n" "postgres.pool_size = 4" "${heavy[@]}"; done
setup_tenant
catalogue_json "$FIXTURES" > "$T/coopr.json"
expect 200 "$(api POST /v1/import "@$T/coopr.json")" '' "import the Coopr catalogue"
# One cluster per job, and as many unfinished jobs as the bench asks.
expect 200 "$(api PUT /v1/tenants/acme/quotas '{"clusters": 0, "jobs": 0}' "$SUPER")" '' "lift acme's quotas"
for w in 1 2 3 4; do
  WORKER_PLUGINS=noop,noop-provider CONCURRENCY=64 LOG_LEVEL=warn start_worker "sw-$w"
done

load() { # PREFIX JOBS
  /usr/bin/python3 "$here/small_load.py" load --ports "${DPORTS[1]},${DPORTS[2]},${DPORTS[3]}" \
    --token "$TOKEN" --pg "$DROVER_PG" --zk "${DROVER_ZK%%,*}" --jobs "$2" \
    --in-flight "$IN_FLIGHT" --clients "$CLIENTS" --prefix "$1"
}

echo "small: durable $([ "${DROVER_DISK_SYNC:-1}" = 1 ] && echo yes || echo "no (--no-disk-sync)"), creates solving at once per droverd and tenant ${API_HEAVY:-1 (default)}, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
if [ "$warm" -gt 0 ]; then
  load warm "$warm" > "$T/warm.out" || { cat "$T/warm.out" >&2; fail "warm-up"; }
fi
/usr/bin/python3 "$here/small_load.py" lone --ports "${DPORTS[1]}" --token "$TOKEN" --pg "$DROVER_PG" \
  --logs "$T/droverd-*.log" --runs "$LONE" --prefix lone || fail "lone jobs"
load small "$N" || fail "small jobs"
echo "small: load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
