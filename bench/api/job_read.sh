#!/usr/bin/env bash
# job_read.sh: reading a 140,007-task job (run under scripts/with-stack): the serving
# droverd's resident memory while it answers the full read, a page, and the summary.
#
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel -j2
#   DROVER_BUILD_DIR=$PWD/build-rel DROVER_SOURCE_DIR=$PWD \
#     scripts/with-stack -- bench/api/job_read.sh [TASKS]      # or: bench/run job-read
#
# One droverd, a tenant and a cluster made through the API; then a job of TASKS tasks
# (default 140,007: 10,000 nodes x 14 tasks and 7 more, the size of a 10,000-node
# hadoop-distributed create, docs/benchmarks.md) written straight into PostgreSQL as the
# engine writes its rows (ids, node, service, action, deps, strategy, attempts, worker,
# times; all succeeded): the engine is not what is measured, and a real create takes
# minutes. For each read, the droverd's peak RSS is reset first (/proc/PID/clear_refs,
# "5") and read after (VmHWM): the growth is the peak minus the RSS before.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
ntasks=${1:-140007}

start_api_node droverd-1 "log.level = warn"
PID=$(pid_of droverd-1)
api POST /v1/tenants '{"name":"bench"}' "$SUPER" > /dev/null
TOKEN=$(body_of "$(api POST /v1/users '{"name":"b","role":"admin","tenant":"bench"}' "$SUPER")" | jq -r .token)
catalogue_json "$FIXTURES" > "$T/catalogue.json"
api POST /v1/import "@$T/catalogue.json" > /dev/null
CID=$(body_of "$(api POST /v1/clusters '{"name":"big","template":"lamp","nodes":3,"provider":"rackspace"}')" | jq -r .cluster.id)
[ -n "$CID" ] && [ "$CID" != null ] || fail "no cluster"

t0=$(now_ms)
JID=$(psql_q "INSERT INTO jobs (tenant_id, cluster_id, operation, status, request, phase,
  created_at, started_at, ended_at)
  SELECT tenant_id, id, 'create', 'succeeded', '{\"size\": 10000}', 'succeeded', now(), now(), now()
  FROM clusters WHERE id = $CID RETURNING id" | head -1)
psql_q "INSERT INTO tasks (job_id, phase, idx, id, node_id, service, action, status, attempts,
  worker, deps, strategy, started_at, ended_at)
  SELECT $JID, 'f', i,
    CASE WHEN i < $ntasks - 7 THEN 'node-' || (i / 14 + 1) || '/' ||
      (ARRAY['', '', '', 'hadoop-hdfs-datanode/', 'hadoop-yarn-nodemanager/', 'base/',
             'hadoop-hdfs-datanode/', 'hadoop-yarn-nodemanager/', 'base/', 'hadoop-hdfs-datanode/',
             'hadoop-yarn-nodemanager/', 'base/', 'hadoop-hdfs-datanode/', 'hadoop-yarn-nodemanager/'])[i % 14 + 1] ||
      (ARRAY['create', 'confirm', 'bootstrap', 'install', 'install', 'install', 'configure',
             'configure', 'configure', 'initialize', 'initialize', 'start', 'start', 'start'])[i % 14 + 1]
    ELSE 'anchor-' || i END,
    CASE WHEN i < $ntasks - 7 THEN 'node-' || (i / 14 + 1) END,
    CASE WHEN i < $ntasks - 7 AND i % 14 >= 3 THEN
      (ARRAY['hadoop-hdfs-datanode', 'hadoop-yarn-nodemanager', 'base'])[i % 3 + 1] END,
    CASE WHEN i < $ntasks - 7 THEN
      (ARRAY['create', 'confirm', 'bootstrap', 'install', 'install', 'install', 'configure',
             'configure', 'configure', 'initialize', 'initialize', 'start', 'start', 'start'])[i % 14 + 1]
    ELSE 'anchor' END,
    'succeeded', 1, 'bw-' || (i % 4 + 1),
    CASE WHEN i % 14 = 0 THEN '[]'::jsonb ELSE jsonb_build_array(i - 1) END,
    CASE WHEN i % 14 = 11 THEN 'one-by-one' END,
    now() - interval '1 minute', now()
  FROM generate_series(0, $ntasks - 1) AS i" > /dev/null
echo "job $JID: $ntasks task rows written in $(($(now_ms) - t0)) ms"

kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$PID/status"; }
# measure WHAT URL: prints the read's size, time and the droverd's RSS growth (peak - before)
# on stderr, and the growth in kB on stdout
measure() {
  local what=$1 url=$2 before peak ms bytes
  before=$(kb VmRSS)
  echo 5 > "/proc/$PID/clear_refs"
  t0=$(now_ms)
  bytes=$(curl -s -H "Authorization: Bearer $TOKEN" -o "$T/read.out" -w '%{size_download}' "http://127.0.0.1:$PORT$url")
  ms=$(($(now_ms) - t0))
  peak=$(kb VmHWM)
  printf '%-30s %9s bytes %6s ms  RSS before %5.1f MB, peak %5.1f MB: growth %5.1f MB\n' \
    "$what" "$bytes" "$ms" "$(bc -l <<< "$before / 1024")" "$(bc -l <<< "$peak / 1024")" \
    "$(bc -l <<< "($peak - $before) / 1024")" >&2
  echo $((peak - before))
}
worst=0
for round in 1 2 3; do
  g=$(measure "full read (round $round)" "/v1/jobs/$JID")
  n=$(jq '.tasks | length' "$T/read.out")
  [ "$n" = "$ntasks" ] || fail "the full read has $n tasks, not $ntasks"
  [ "$g" -gt "$worst" ] && worst=$g
done
measure "summary (tasks=none)" "/v1/jobs/$JID?tasks=none" > /dev/null
measure "a page of 1000 tasks" "/v1/jobs/$JID/tasks?limit=1000&cursor=f.70000" > /dev/null
measure "groups by node (60)" "/v1/jobs/$JID/tasks/groups?by=node" > /dev/null
echo "full read of $ntasks tasks: the serving droverd's RSS grew by at most $((worst / 1024)) MB (bound: 50 MB)"
[ "$worst" -lt $((50 * 1024)) ] || fail "the full read grew droverd's RSS by $((worst / 1024)) MB"
