#!/usr/bin/env bash
# Coordinator and database outages (docs/operations.md "Outages"), the real servers stopped
# and started by pid while a job runs:
#  - ZooKeeper down: reads from PostgreSQL keep working (cluster, job); a request that needs
#    ZooKeeper (the queues) answers 503 saying so; a create and a pause, recorded in
#    PostgreSQL, are accepted and take effect once ZooKeeper is back (the janitor announces
#    the job, and gives the owner the pause); /readyz 503; the
#    engine dispatches nothing; when ZooKeeper is back the job goes on where it was.
#  - PostgreSQL down: the same the other way round: /metrics and the probes answer, requests
#    answer 503 "database unavailable", the engine dispatches nothing; when it is back the job
#    goes on and succeeds.
# Either way no task runs twice to success and none is lost.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
start_worker worker-1
setup_tenant

attempts() { psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $1"; }
# wait_progress JID N: until N attempts of the job are in PostgreSQL.
wait_progress() { poll_until -e 0.2 60 attempts_at_least "$1" "$2" || fail "job $1: $(attempts "$1") attempts after 60 s"; }
attempts_at_least() { [ "$(attempts "$1")" -ge "$2" ]; }

# --- ZooKeeper down (a job long enough to outlast the janitor's 5 s period once ZooKeeper is
# back: the pause made meanwhile must find it running)
read -r CID JID <<< "$(create_cluster c1 6 '{"duration_ms": 800}')"
wait_progress "$JID" 6
zk_stop 1
wait_http "$PORT" /readyz 503 15 || fail "/readyz still 200 with ZooKeeper down"
expect 200 "$(api GET "/v1/clusters/$CID")" ".id == \"$CID\"" "a cluster read with ZooKeeper down"
expect 200 "$(api GET "/v1/jobs/$JID")" '.status == "running"' "a job read with ZooKeeper down"
expect 503 "$(api GET /v1/queues)" '.error.code == "unavailable" and (.error.message | test("zookeeper"))' "queues with ZooKeeper down"
# A write that only ZooKeeper can carry (a drain is a control znode) is refused, not queued.
expect 503 "$(api POST /v1/members/droverd-1/drain '' "$SUPER")" '.error.code == "unavailable" and (.error.message | test("zookeeper"))' "a drain with ZooKeeper down"
# A create needs PostgreSQL only: recorded, announced by the janitor once ZooKeeper is back.
read -r _ JID3 <<< "$(create_cluster c3 2 '{"duration_ms": 10}')"
# So does a pause: recorded in jobs.control; its znode write fails, and the owner, whose
# session may well survive the outage, learns of it from the janitor's scan.
expect 202 "$(api POST "/v1/jobs/$JID/pause")" '' "pause with ZooKeeper down"
sleep 1
d1=$(metric "$PORT" drover_engine_tasks_dispatched_total)
sleep 3
d2=$(metric "$PORT" drover_engine_tasks_dispatched_total)
[ "$d1" = "$d2" ] || fail "the engine dispatched with ZooKeeper down: $d1 -> $d2"
pass "ZooKeeper down: reads from PostgreSQL answered, ZooKeeper's requests 503, nothing dispatched ($d2)"
zk_start 1
wait_ready droverd-1 "$PORT" 60
wait_job "$JID" paused 60
if grep -q "event=job-control-from-db job=$JID want=pause" "$T/droverd-1.log"; then
  echo "the owner kept its session; the pause came from the janitor's scan"
else
  echo "the owner's session expired; the pause came with the job's new lock (jobs.control)"
fi
expect 202 "$(api POST "/v1/jobs/$JID/resume")" '' "resume"
wait_job "$JID" succeeded 180
wait_job "$JID3" succeeded 180
check_attempts
check_overlaps
pass "ZooKeeper back: the pause made meanwhile took effect, the job resumed and succeeded, the create made meanwhile ran; no task ran twice"

# --- PostgreSQL down
read -r _ JID2 <<< "$(create_cluster c2 4 '{"duration_ms": 300}')"
wait_progress "$JID2" 6
pg_stop
wait_http "$PORT" /readyz 503 15 || fail "/readyz still 200 with PostgreSQL down"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics")" = 200 ] || fail "/metrics with PostgreSQL down"
expect 503 "$(api GET "/v1/jobs/$JID2")" '.error.code == "unavailable" and (.error.message | test("database"))' "a read with PostgreSQL down"
expect 503 "$(api POST "/v1/jobs/$JID2/pause")" '.error.code == "unavailable"' "a write with PostgreSQL down"
sleep 2
d1=$(metric "$PORT" drover_engine_tasks_dispatched_total)
sleep 3
d2=$(metric "$PORT" drover_engine_tasks_dispatched_total)
[ "$d1" = "$d2" ] || fail "the engine dispatched with PostgreSQL down: $d1 -> $d2"
[ "$(metric "$PORT" 'drover_zookeeper_session_state{state="connected"}')" = 1 ] || fail "zookeeper session"
pass "PostgreSQL down: probes and /metrics answered, requests 503, nothing dispatched ($d2)"
pg_start
wait_ready droverd-1 "$PORT" 60
wait_job "$JID2" succeeded 180
check_attempts
check_overlaps
pass "PostgreSQL back: the job went on and succeeded, no task ran twice"
