#!/usr/bin/env bash
# Rolling upgrade to the next format version (docs/operations.md "Rolling upgrade"):
#  - three droverd and four workers of the current build (format 1) run jobs of two tenants;
#  - each droverd in turn is drained (drover node drain --wait), stopped (SIGTERM) and
#    replaced by the next build (-DDROVER_FORMAT_VERSION=2), while new jobs keep coming;
#    then each worker the same way (drover worker drain, the next build's worker);
#  - every job succeeds; no task ran twice to success, none was retried (no job re-ran
#    anything from the start: every task has exactly one attempt);
#  - jobs started while any format-1 node was a member are format 1 in every record, jobs
#    started once all were upgraded are format 2; nodes of both builds owned format-1 jobs.
# The next build is made once into $DROVER_BUILD_DIR/format-next (or $DROVER_NEXT_BUILD_DIR).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

NEXT=${DROVER_NEXT_BUILD_DIR:-$DROVER_BUILD_DIR/format-next}
echo "building the next format into $NEXT"
cmake -S "$DROVER_SOURCE_DIR" -B "$NEXT" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDROVER_FORMAT_VERSION=2 \
  > "$T/next-build.log" 2>&1 || fail "cmake of the next build: $(tail -5 "$T/next-build.log")"
cmake --build "$NEXT" -j2 --target droverd drover-worker >> "$T/next-build.log" 2>&1 ||
  fail "build of the next build: $(tail -20 "$T/next-build.log")"
NEXT_BIN="$NEXT/src/bin"

for n in 1 2 3; do start_droverd $n; done
setup_tenant
ACME=$TOKEN
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
BETA=$(body_of "$(api POST /v1/users '{"name":"bob","role":"admin","tenant":"beta"}' "$SUPER")" | jq -r .token)
TOKEN=$BETA expect 200 "$(TOKEN=$BETA api POST /v1/import "@$T/catalog.json")" '' "beta's catalogue"
CONCURRENCY=4
WORKER_TENANT=acme start_worker worker-a1
WORKER_TENANT=acme start_worker worker-a2
WORKER_TENANT=beta start_worker worker-b1
WORKER_TENANT=beta start_worker worker-b2
LIVE=1 # a droverd that runs now, for API calls
url_of() { echo "http://127.0.0.1:${DPORTS[$1]}"; }

JOBS=()
JOB_TOK=() # the token of each job's tenant, to read it
c=0
# more_jobs K DURATION_MS: K clusters of 3 nodes per tenant, through a live node
more_jobs() {
  local k=$1 ms=$2 i tok
  for i in $(seq 1 "$k"); do
    for tok in "$ACME" "$BETA"; do
      c=$((c + 1))
      read -r _ J <<< "$(PORT=${DPORTS[$LIVE]} TOKEN=$tok create_cluster r$c 3 "{\"duration_ms\": $ms}")"
      JOBS+=("$J")
      JOB_TOK+=("$tok")
    done
  done
}
more_jobs 3 400
sleep 2

# --- droverd, one at a time: drain, stop, next build, start
for n in 1 2 3; do
  LIVE=$(((n % 3) + 1))
  t0=$(now_ms)
  DROVER_URL=$(url_of $LIVE) DROVER_TOKEN=$SUPER "$BIN/drover" node drain "droverd-$n" --wait 30 \
    > "$T/drain.out" || fail "drain of droverd-$n: $(cat "$T/drain.out")"
  t1=$(now_ms)
  kill -TERM "$(pid_of "droverd-$n")"
  wait_exit "droverd-$n" 20 > "$T/exit.status" || echo timeout > "$T/exit.status"
  [ "$(cat "$T/exit.status")" = 0 ] || fail "droverd-$n exited $(cat "$T/exit.status")"
  # the next build, same id, same port, same config
  BIN=$NEXT_BIN start_proc "droverd-$n" "$NEXT_BIN/droverd"
  wait_ready "droverd-$n" "${DPORTS[$n]}" 60
  echo "droverd-$n: drained in $((t1 - t0)) ms, next build ready after $(($(now_ms) - t0)) ms"
  more_jobs 1 300
done
LIVE=1
# all three are the next build now: new jobs are format 2
sleep 1
N_BEFORE=${#JOBS[@]}
more_jobs 2 300
J2=${JOBS[-1]}
state_format_2() { zk get "/drover/jobs/$1/state" 2> /dev/null | grep -q '"format":2'; }
poll_until -e 0.2 20 state_format_2 "$J2" ||
  fail "the state znode of job $J2 does not say format 2: $(zk get "/drover/jobs/$J2/state" 2>&1)"
zk get "/drover/jobs/$J2/log/f0" | grep -q '"format":2' || fail "the task log of job $J2 is not format 2"

# --- workers, one at a time: drain, next build
for w in worker-a1 worker-a2 worker-b1 worker-b2; do
  tok=$ACME
  [[ $w == worker-b* ]] && tok=$BETA
  DROVER_URL=$(url_of $LIVE) DROVER_TOKEN=$tok "$BIN/drover" worker drain "$w" > /dev/null ||
    fail "drover worker drain $w"
  wait_exit "$w" 60 > "$T/exit.status" || echo timeout > "$T/exit.status"
  [ "$(cat "$T/exit.status")" = 0 ] || fail "$w exited $(cat "$T/exit.status") after its drain"
  start_proc "$w" "$NEXT_BIN/drover-worker" # same config (the plugins are the same programs)
done

for i in "${!JOBS[@]}"; do TOKEN=${JOB_TOK[$i]} wait_job "${JOBS[$i]}" succeeded 120; done
ids=$(IFS=,; echo "${JOBS[*]}")

# --- nothing ran twice, nothing was retried
check_runs
again=$(psql_q "SELECT job_id || ' ' || task_id || ' attempt ' || attempt FROM task_attempts WHERE job_id IN ($ids) AND (attempt > 1 OR status <> 'succeeded') LIMIT 5")
[ -z "$again" ] || fail "tasks retried or re-run during the upgrade: $again"
tasks=$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id IN ($ids)")
pass "rolling upgrade: ${#JOBS[@]} jobs of two tenants succeeded, $tasks task attempts, each task once"

# --- formats: every record of a job in its format; old jobs 1, jobs after the upgrade 2
mismatch=$(psql_q "SELECT id FROM jobs WHERE id IN ($ids) AND (plan->>'format_version')::int <> format_version")
[ -z "$mismatch" ] || fail "jobs whose plan's format differs from the job's: $mismatch"
old=$(IFS=,; echo "${JOBS[*]:0:$N_BEFORE}")
new=$(IFS=,; echo "${JOBS[*]:$N_BEFORE}")
f_old=$(psql_q "SELECT string_agg(DISTINCT format_version::text, ',') FROM jobs WHERE id IN ($old)")
f_new=$(psql_q "SELECT string_agg(DISTINCT format_version::text, ',') FROM jobs WHERE id IN ($new)")
[ "$f_new" = 2 ] || fail "jobs started on the upgraded fleet are format $f_new, expected 2"
case $f_old in 1 | 1,2) ;; *) fail "jobs started during the upgrade are format $f_old" ;; esac
# format-1 jobs that a next-build process acquired (its log lines follow its
# engine-started line says "builds_up_to=2"), and that a current-build process had owned: N and N+1 on each other's jobs
v1jobs=$(psql_q "SELECT id FROM jobs WHERE id IN ($ids) AND format_version = 1")
for n in 1 2 3; do
  awk '/event=engine-started/ { next_build = /builds_up_to=2/ }
       /event=job-acquired/ { match($0, /job=[0-9]+/); print (next_build ? "N " : "O ") substr($0, RSTART + 4, RLENGTH - 4) }' \
    "$T/droverd-$n.log"
done > "$T/acquired"
shared=0
for J in $v1jobs; do
  grep -qx "N $J" "$T/acquired" && grep -qx "O $J" "$T/acquired" && shared=$((shared + 1))
done
[ "$shared" -ge 1 ] || fail "no format-1 job was owned by both builds"
grep -q "event=format-chosen node=droverd-1 format=2" "$T/droverd-1.log" || fail "droverd-1 never chose format 2"
handed=$(grep -h "event=job-handover" "$T"/droverd-*.log | grep -c . || true)
echo "formats: jobs started during the upgrade: $f_old, after it: $f_new; $shared format-1 jobs owned by both builds; $handed handovers"
pass "format versions: the upgraded fleet writes 2, format-1 jobs ran to the end on mixed nodes"
