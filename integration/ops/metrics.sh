#!/usr/bin/env bash
# Metrics (docs/operations.md "Metrics"): a stack that ran a job serves /metrics (no token,
# no tenant named in it) and /v1/metrics (a token; the caller's tenant only, every tenant for
# the superadmin), both accepted by `promtool check metrics`, with figures that match the job.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

command -v promtool > /dev/null || fail "promtool missing (scripts/deps installs prometheus)"
start_droverd 1
start_worker worker-1
setup_tenant
expect 201 "$(api POST /v1/tenants '{"name":"globex"}' "$SUPER")" '' "tenant globex"
OTHER=$(body_of "$(api POST /v1/users '{"name":"olga","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)
USER=$(body_of "$(api POST /v1/users '{"name":"bob","role":"user","tenant":"acme"}' "$SUPER")" | jq -r .token)

read -r _ JID <<< "$(create_cluster c1 3 '{"duration_ms": 20}')"
wait_job "$JID" succeeded 90
j=$(api GET "/v1/jobs/$JID")
succeeded=$(body_of "$j" | jq '[.tasks[] | select(.status == "succeeded")] | length')
attempts=$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID")
[ "$succeeded" -gt 10 ] || fail "job has $succeeded succeeded tasks"

# value FILE 'series{labels}': the sample's value (empty when absent).
value() { awk -v s="$2" '$1 == s { print $2 }' "$1"; }
scrape() { # PATH TOKEN OUT: status code on stdout
  curl -s -o "$3" -w '%{http_code}' ${2:+-H "Authorization: Bearer $2"} "http://127.0.0.1:$PORT$1"
}

[ "$(scrape /metrics '' "$T/public.prom")" = 200 ] || fail "/metrics"
promtool check metrics < "$T/public.prom" > "$T/promtool.out" 2>&1 || fail "promtool on /metrics: $(cat "$T/promtool.out")"
! grep -q 'tenant=' "$T/public.prom" || fail "/metrics names a tenant: $(grep -m3 'tenant=' "$T/public.prom")"
[ "$(value "$T/public.prom" 'drover_zookeeper_session_state{state="connected"}')" = 1 ] || fail "zookeeper state"
[ "$(value "$T/public.prom" 'drover_store_pool_size')" = 4 ] || fail "pool size"
[ "$(value "$T/public.prom" 'drover_engine_jobs_taken_total')" = 1 ] || fail "jobs taken"
[ "$(value "$T/public.prom" 'drover_engine_jobs_owned{node="droverd-1"}')" = 0 ] || fail "jobs owned"
n=$(value "$T/public.prom" 'drover_http_request_duration_seconds_count{route="/v1/jobs/*",method="GET",code="200"}')
[ "${n:-0}" -ge 1 ] || fail "request durations by route: $(grep -m5 request_duration_seconds_count "$T/public.prom")"
grep -q "route=\"/v1/jobs/$JID\"" "$T/public.prom" && fail "a raw path as a route label"
pass "/metrics: promtool accepts it; no tenant in it; engine, ZooKeeper, pool and routes shown"

[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/metrics")" = 405 ] || fail "POST /metrics"
[ "$(scrape /v1/metrics '' "$T/x.prom")" = 401 ] || fail "/v1/metrics without a token"
[ "$(scrape /v1/metrics "$USER" "$T/x.prom")" = 403 ] || fail "/v1/metrics as a user"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/metrics")" = 405 ] || fail "POST /v1/metrics"
pass "only GET; /v1/metrics needs an admin's or the superadmin's token"

[ "$(scrape /v1/metrics "$TOKEN" "$T/acme.prom")" = 200 ] || fail "/v1/metrics: $(cat "$T/acme.prom")"
promtool check metrics < "$T/acme.prom" > "$T/promtool.out" 2>&1 || fail "promtool on /v1/metrics: $(cat "$T/promtool.out")"
A='tenant="acme",class="default"'
[ "$(value "$T/acme.prom" "drover_tasks{tenant=\"acme\",status=\"succeeded\"}")" = "$succeeded" ] ||
  fail "tasks succeeded: $(grep drover_tasks "$T/acme.prom"), the job says $succeeded"
[ "$(value "$T/acme.prom" 'drover_jobs{tenant="acme",status="succeeded"}')" = 1 ] || fail "jobs succeeded"
[ "$(value "$T/acme.prom" "drover_queue_puts_total{$A}")" = "$attempts" ] ||
  fail "puts $(value "$T/acme.prom" "drover_queue_puts_total{$A}"), attempts $attempts"
[ "$(value "$T/acme.prom" "drover_queue_completes_total{$A}")" = "$attempts" ] || fail "completes"
[ "$(value "$T/acme.prom" "drover_queue_takes_total{$A}")" -ge "$attempts" ] || fail "takes"
[ "$(value "$T/acme.prom" "drover_queue_length{$A}")" = 0 ] || fail "queue length"
[ "$(value "$T/acme.prom" "drover_queue_recommended_workers{$A}")" = 0 ] || fail "recommended workers when idle"
[ "$(value "$T/acme.prom" "drover_task_duration_seconds_count{$A}")" = "$attempts" ] ||
  fail "task durations: $(grep duration_seconds_count "$T/acme.prom")"
[ "$(value "$T/acme.prom" "drover_task_queue_wait_seconds_count{$A}")" = "$attempts" ] || fail "queue waits"
pass "/v1/metrics: promtool accepts it; $succeeded tasks succeeded, $attempts puts, takes, completes and durations, as the job did"

[ "$(scrape /v1/metrics "$OTHER" "$T/globex.prom")" = 200 ] || fail "/v1/metrics of globex"
grep -q 'acme' "$T/globex.prom" && fail "globex sees acme: $(grep -m3 acme "$T/globex.prom")"
[ "$(scrape /v1/metrics "$SUPER" "$T/super.prom")" = 200 ] || fail "/v1/metrics of the superadmin"
promtool check metrics < "$T/super.prom" > "$T/promtool.out" 2>&1 || fail "promtool (superadmin): $(cat "$T/promtool.out")"
[ "$(value "$T/super.prom" "drover_queue_puts_total{$A}")" = "$attempts" ] || fail "superadmin: acme's queue"
expect 200 "$(api GET /v1/queues)" ".queues | map([.class, .puts, .completes, .recommended_workers]) == [[\"default\", $attempts, $attempts, 0]]" "GET /v1/queues"
pass "tenants see only their own figures; the superadmin (the operator's scrape) sees every tenant's"

# A loop that does not run (here the whole process, stopped for 1.5 s) is named: the log says
# loop-stalled with how late, /metrics counts it and its lateness is in the histogram.
stalls0=$(value "$T/public.prom" drover_loop_stalls_total)
[ -n "$stalls0" ] || fail "no drover_loop_stalls_total on /metrics"
kill -STOP "$(pid_of droverd-1)"
sleep 1.5
kill -CONT "$(pid_of droverd-1)"
sleep 0.5
[ "$(scrape /metrics '' "$T/after.prom")" = 200 ] || fail "/metrics after the stop"
promtool check metrics < "$T/after.prom" > "$T/promtool.out" 2>&1 || fail "promtool after the stop: $(cat "$T/promtool.out")"
[ "$(value "$T/after.prom" drover_loop_stalls_total)" -gt "$stalls0" ] || fail "stalls: $stalls0 -> $(value "$T/after.prom" drover_loop_stalls_total)"
[ "$(value "$T/after.prom" 'drover_loop_lag_seconds_bucket{le="1"}')" -lt "$(value "$T/after.prom" drover_loop_lag_seconds_count)" ] ||
  fail "no lateness over 1 s in the histogram: $(grep drover_loop_lag "$T/after.prom")"
late=$(grep -o 'event=loop-stalled late_ms=[0-9]*' "$T/droverd-1.log" | tail -1)
[ "${late#*late_ms=}" -ge 1000 ] 2> /dev/null || fail "no loop-stalled line: ${late:-none}"
pass "a stalled loop: $late logged, counted on /metrics"
