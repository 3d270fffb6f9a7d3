#!/usr/bin/env bash
# Issue 23: PostgreSQL under Patroni (scripts/with-stack --ha: three ZooKeeper servers,
# three PostgreSQL servers, synchronous replication in strict mode) while jobs of two
# tenants run on two droverd. droverd reaches PostgreSQL only through the stack's libpq
# multi-host string with target_session_attrs=read-write.
#
#   0. (and again after 1 and 3) Patroni's znodes are closed: every one carries x509 ACLs for
#      Patroni's certificate (all) and the operator's (read); with no credentials or with a
#      digest (droverd's kind) nothing under /patroni is read, listed or changed, and a
#      certificate of another CA gets no session (patroni_acl.py). Patroni elects, fails over
#      and switches over through ZooKeeper's TLS port all the same.
#   1. kill -9 of the primary's Patroni and of its postgres: a replica is promoted; every
#      API answer meanwhile is the right one or 503 "unavailable" (a job the API
#      acknowledged is never 404, a create is 202 or 503), and 503 stops once the new
#      primary serves; every job (acknowledged before or during the failover) succeeds,
#      no task runs twice or overlaps, and no acknowledged write is missing: each job's
#      row, its tasks' attempt rows, exactly one job.started and one job.succeeded audit
#      row (the start write settled, not repeated, when its COMMIT's answer was lost).
#   2. The old primary's Patroni started again: the server rejoins as a replica (pg_rewind
#      or a new clone, Patroni's choice) and holds every job the new primary has.
#   3. A planned switchover (patronictl switchover) during running jobs: the same answers
#      (every 503 with Retry-After), the jobs succeed, the old primary follows as a replica;
#      measured: no job pauses longer than the switchover's window plus the engine's retry
#      interval (below).
#
# pg_failover.sh split (engine_pg_split; the stack started with DROVER_HA_ZK_PROXY, so that
# each Patroni reaches ZooKeeper through proxies of its own): instead of the kill, the
# primary's Patroni is cut off from ZooKeeper (its proxies silenced): it demotes its postgres,
# which then takes no write (never two writable primaries at once: checked each time a new
# primary is seen), droverd's pool reaches the new primary, and the checks of 1 hold; then the
# network heals and the old primary rejoins as a replica (2). No switchover.
#   How long the old primary stays writable (not in recovery) once another is promoted is
#   Patroni's timing, with no margin in the stack's settings (loop_wait 2 + 2 x retry_timeout 3
#   = ttl 8): a Patroni stalled on a loaded machine demotes a little late. That is not a lost
#   write (in strict synchronous mode the old primary commits only what its standby confirms,
#   and that standby is the one promoted), so the test waits for the demotion (the event) and
#   reports an overlap instead of failing on it; what it asserts is that the old primary
#   demotes itself and that no acknowledged write is missing from the new one.
# pg_failover.sh netsplit (partition_pg_primary, on the multi-host stack: scripts/with-stack
# --hosts --ha): the same as split, but the cut is the network's: the primary's host is split
# from the three ZooKeeper hosts (scripts/netfault split, nft rules in the hosts' namespaces),
# droverd still reaching it; healed by removing that fault.
#   The test does nothing to ZooKeeper's servers (only Patroni's proxies): a ZooKeeper leader
#   change during it is the ensemble's own (tickTime 500 ms x syncLimit 10: a server stalled
#   5 s drops out), which the jobs survive like any; the epoch before and after is printed.
FAULT=${1:-kill}
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

[ "${DROVER_PG_HA:-0}" -ge 3 ] || fail "run me under scripts/with-stack --ha"
case $FAULT in
kill) ;;
split) [ -e "$T/pids/zkproxy-1-1.pid" ] || fail "split needs DROVER_HA_ZK_PROXY at the stack's start" ;;
netsplit) [ -n "${DROVER_HOSTS:-}" ] || fail "netsplit needs the multi-host stack (scripts/with-stack --hosts --ha)" ;;
*) fail "unknown fault $FAULT" ;;
esac

start_droverd 1
start_droverd 2
catalogue_json "$CATALOG" > "$T/catalog.json"
declare -A TOK
for t in acme beta; do
  expect 201 "$(api POST /v1/tenants "{\"name\":\"$t\"}" "$SUPER")" '' "tenant $t"
  TOK[$t]=$(body_of "$(api POST /v1/users "{\"name\":\"admin-$t\",\"role\":\"admin\",\"tenant\":\"$t\"}" "$SUPER")" | jq -r .token)
  expect 200 "$(api POST /v1/import "@$T/catalog.json" "${TOK[$t]}")" '' "import for $t"
  WORKER_TENANT=$t start_worker "worker-$t"
done

# patroni_closed WHEN: every znode under /patroni closed to all but Patroni and the operator.
patroni_closed() {
  "$(dirname "$0")/patroni_acl.py" "$T" > "$T/patroni_acl.out" 2>&1 ||
    fail "Patroni's znodes are open ($1): $(cat "$T/patroni_acl.out")"
  pass "Patroni's znodes closed ($1): $(tail -n 1 "$T/patroni_acl.out"); no credentials, a digest and a stranger's certificate refused"
}
patroni_closed "at the start"

# Jobs the API acknowledged (202), as "tenant:job".
jobs=()
c=0
# unavailable ANSWER WHAT: a 503 is the retry the client is told to make: "unavailable" with
# Retry-After (testlib/api.sh keeps the last answer's headers in $T/api.head).
unavailable() {
  echo "$1" | grep -q '"unavailable"' || fail "a $2 answered 503 without \"unavailable\": $1"
  grep -qi '^Retry-After: [0-9]' "$T/api.head" || fail "a $2 answered 503 without Retry-After: $(cat "$T/api.head")"
}

# create TENANT [DURATION_MS]: one 3-node create; prints the status code, records an acknowledged job.
create() {
  local t=$1 ms=${2:-200} body r
  c=$((c + 1))
  body=$(jq -cn --arg n "c$c" --argjson cfg "$(sleep_config "{\"duration_ms\": $ms, \"jitter_ms\": 200}")" \
    '{name: $n, template: "simple", nodes: 3, config: $cfg}')
  r=$(TOKEN=${TOK[$t]} api POST /v1/clusters "$body")
  case ${r%% *} in
  202) jobs+=("$t:$(body_of "$r" | jq -r .job.id)") ;;
  503) unavailable "$r" create ;;
  *) fail "a create answered neither 202 nor 503: $r" ;;
  esac
  echo "${r%% *}" >> "$T/codes"
  LAST=${r%% *}
}

# probe: a create for each tenant and a read of an acknowledged job on each droverd; every
# answer right or 503 "unavailable". LAST is the last create's status.
probe() {
  local tj t j r p
  create acme
  create beta
  for p in "${DPORTS[1]}" "${DPORTS[2]}"; do
    tj=${jobs[$((RANDOM % ${#jobs[@]}))]}
    t=${tj%%:*} j=${tj#*:}
    r=$(PORT=$p TOKEN=${TOK[$t]} api GET "/v1/jobs/$j?tasks=none")
    case ${r%% *} in
    200) [ "$(body_of "$r" | jq -r .id)" = "$j" ] || fail "job $j read as another: $r" ;;
    503) unavailable "$r" read ;;
    *) fail "job $j (acknowledged) read as: $r" ;;
    esac
    echo "${r%% *}" >> "$T/codes"
  done
}

# new_primary_serves: the failover is over: a server other than OLD is primary, and a
# create went through.
new_primary_serves() {
  pg_primary_is_not "$OLD" || return 1
  # Cut off from ZooKeeper, the old primary demoted itself before another was promoted.
  if [ "$FAULT" != kill ] && [ -z "$OVERLAP" ] && [ "$(pg_psql "$OLD" 'SELECT pg_is_in_recovery()' 2> /dev/null)" = f ]; then
    OVERLAP="pg$OLD not yet demoted when pg$(pg_primary) was first seen primary"
  fi
  probe && [ "$LAST" = 202 ]
}

# all_jobs_end: every acknowledged job succeeded.
all_jobs_end() {
  local tj
  for tj in "${jobs[@]}"; do
    TOKEN=${TOK[${tj%%:*}]} wait_job "${tj#*:}" succeeded 180
  done
}

# check_record: no acknowledged write missing.
check_record() {
  local tj j ids="" bad
  for tj in "${jobs[@]}"; do ids="$ids${ids:+,}${tj#*:}"; done
  bad=$(psql_q "SELECT string_agg(x::text, ' ') FROM unnest(ARRAY[$ids]::bigint[]) x
    WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = x AND status = 'succeeded')")
  [ -z "$bad" ] || fail "acknowledged jobs missing or not succeeded in PostgreSQL: $bad"
  bad=$(psql_q "SELECT string_agg(t.job_id || ':' || t.id, ' ') FROM tasks t WHERE t.job_id IN ($ids)
    AND t.status = 'succeeded' AND NOT EXISTS (SELECT 1 FROM task_attempts a WHERE a.job_id = t.job_id
    AND a.phase = t.phase AND a.task_id = t.id AND a.status = 'succeeded')")
  [ -z "$bad" ] || fail "succeeded tasks without their attempt row: $bad"
  bad=$(psql_q "SELECT string_agg(x::text || '=' || coalesce(s, 0) || '/' || coalesce(e, 0), ' ')
    FROM unnest(ARRAY[$ids]::bigint[]) x LEFT JOIN (SELECT entity_id,
      count(*) FILTER (WHERE action = 'job.started') s,
      count(*) FILTER (WHERE action = 'job.succeeded') e
      FROM audit_log WHERE entity_kind = 'job' GROUP BY entity_id) a ON a.entity_id = x::text
    WHERE coalesce(s, 0) <> 1 OR coalesce(e, 0) <> 1")
  [ -z "$bad" ] || fail "jobs without exactly one job.started and one job.succeeded audit row (job=started/succeeded): $bad"
  check_runs
  [ -z "$(zk ls /drover/jobs)" ] || fail "jobs left in /drover/jobs: $(zk ls /drover/jobs)"
}

OVERLAP=
# zk_epoch: the highest epoch among the ZooKeeper servers' zxids (a leader change raises it).
zk_epoch() {
  local hp z best=0
  for hp in ${DROVER_ZK//,/ }; do
    hp=${hp%%/*}
    z=$( ( (exec 3<> "/dev/tcp/${hp%:*}/${hp#*:}" && printf srvr >&3 && timeout 2 cat <&3) 2> /dev/null || true) |
      awk -F': ' '/^Zxid/ {print $2}')
    [ -n "$z" ] && [ $((z >> 32)) -gt "$best" ] && best=$((z >> 32))
  done
  echo "$best"
}
EPOCH0=$(zk_epoch)

# 1. kill -9 of the primary under running jobs.
for _ in 1 2; do create acme > /dev/null; create beta > /dev/null; done
[ "${#jobs[@]}" = 4 ] || fail "the first creates were refused: $(cat "$T/codes")"
progressing "${jobs[0]#*:}" 2
OLD=$(pg_primary)
[ -n "$OLD" ] || fail "no primary"
# Fencing across the promotion: each job's owner token, as the old primary acknowledged it.
psql_q "SELECT id || ':' || coalesce(owner_token, 0) FROM jobs ORDER BY id" > "$T/tokens.before"
: > "$T/codes"
t0=$(now_ms)
if [ "$FAULT" = kill ]; then
  pg_kill "$OLD"
  pass "kill -9 of pg$OLD's Patroni and postgres (the primary) under ${#jobs[@]} running jobs"
elif [ "$FAULT" = split ]; then
  for f in "$T"/pids/zkproxy-"$OLD"-*.pid; do kill -USR1 "$(cat "$f")"; done
  pass "pg$OLD's Patroni (the primary) cut off from ZooKeeper under ${#jobs[@]} running jobs"
else
  SPLIT=$("$DROVER_SOURCE_DIR/scripts/netfault" --dir "$T" split "pg$OLD" zk1,zk2,zk3)
  pass "pg$OLD (the primary) split from the ZooKeeper hosts, droverd still reaching it, under ${#jobs[@]} running jobs"
fi
poll_until -e 0.3 120 new_primary_serves ||
  fail "no new primary serving after 120 s (primary: '$(pg_primary)'; answers: $(sort "$T/codes" | uniq -c | tr '\n' ' '))"
t1=$(now_ms)
NEW=$(pg_primary)
# The window is over: nothing but right answers now.
for _ in 1 2 3; do probe; done
n503=$(grep -c '^503$' "$T/codes" || true)
late=$(tail -n 12 "$T/codes" | grep -vc '^20[02]$' || true)
[ "$late" = 0 ] || fail "503 after the new primary served: $(tail -n 12 "$T/codes" | tr '\n' ' ')"
pass "pg$NEW promoted; a create went through $(((t1 - t0) / 1000)) s after the $FAULT; $n503 answers of $(wc -l < "$T/codes") were 503 during the window, none after, none wrong"
all_jobs_end
check_record
# The tokens are on the new primary, none older: a stale owner's fenced write still fails there.
while IFS=: read -r id tok; do
  now=$(psql_q "SELECT coalesce(owner_token, 0) FROM jobs WHERE id = $id")
  [ -n "$now" ] && [ "$now" -ge "$tok" ] || fail "job $id's owner token went from $tok to '$now' on the new primary"
done < "$T/tokens.before"
pass "every one of ${#jobs[@]} acknowledged jobs (before and during the $FAULT) succeeded; rows, attempt rows, audit rows and owner tokens all there; no task ran twice"
patroni_closed "after the $FAULT, pg$NEW the leader"

if [ "$FAULT" != kill ]; then
  old_demoted() { [ "$(pg_psql "$OLD" 'SELECT pg_is_in_recovery()' 2> /dev/null)" != f ]; }
  wait_until 60 "pg$OLD, cut off from ZooKeeper, to demote itself" old_demoted
  [ -z "$OVERLAP" ] || echo "note: $OVERLAP (Patroni's demotion ran late; no acknowledged write is missing)"
  pg_psql "$OLD" "CREATE TABLE split_probe (i int)" > /dev/null 2>&1 && fail "pg$OLD, cut off, took a write"
  grep -q 'event=postgres-server-changed' "$T"/droverd-*.log || fail "no droverd logged its move to the new primary"
  pass "pg$OLD, cut off from ZooKeeper, demoted itself and takes no write; droverd moved to pg$NEW"
fi

# 2. The old primary rejoins as a replica.
if [ "$FAULT" = kill ]; then
  "$STACK" patroni-start "$OLD" --dir "$T"
elif [ "$FAULT" = split ]; then
  for f in "$T"/pids/zkproxy-"$OLD"-*.pid; do kill -USR2 "$(cat "$f")"; done
else
  "$DROVER_SOURCE_DIR/scripts/netfault" --dir "$T" heal "$SPLIT"
fi
wait_until 120 "pg$OLD to rejoin as a replica" pg_role_is "$OLD" replica
want=$(psql_q "SELECT count(*) FROM jobs")
has_all() { [ "$(pg_psql "$OLD" "SELECT count(*) FROM jobs" 2> /dev/null)" = "$want" ]; }
wait_until 60 "pg$OLD to hold the $want jobs of the primary" has_all
pass "pg$OLD rejoined as a replica ($(grep -c 'pg_rewind\|rewind' "$T/pg$OLD/patroni.log" || true) rewind lines in its log) and holds all $want jobs"

EPOCH1=$(zk_epoch)
if [ "$EPOCH1" = "$EPOCH0" ]; then
  echo "ZooKeeper's epoch: $EPOCH0 at the start and now: no leader election"
else
  echo "ZooKeeper's epoch: $EPOCH0 at the start, $EPOCH1 now: a leader election in the ensemble (not the test's doing: it touches only Patroni's proxies)"
fi
[ "$FAULT" = kill ] || exit 0

# 3. A planned switchover during running jobs, measured. The window: from patronictl's start
# to the candidate's first acknowledged write (a transaction holding an xid: in strict
# synchronous mode its COMMIT returns only once a synchronous standby has it). A job's pause:
# the longest gap between consecutive attempt starts and ends of its tasks (task_attempts) that
# overlaps the window. None may be longer than the window plus the engine's longest retry
# interval of a PostgreSQL write (commit.c's backoff, at most 5 s): a job waits for the new
# primary, never for anything else. The jobs here sleep 600-800 ms a task, to run across it, and
# two sleep 1.5-1.7 s: on a loaded machine the window (which starts at patronictl's start, while
# the old primary still takes writes) has lasted 14 s, longer than the short jobs (CI, 2026-11-29).
RETRY_MS=5000
n_before=${#jobs[@]}
for ms in 600 600 1500; do create acme $ms > /dev/null; create beta $ms > /dev/null; done
[ "${#jobs[@]}" = $((n_before + 6)) ] || fail "creates before the switchover were refused: $(cat "$T/codes")"
progressing "${jobs[$n_before]#*:}" 2
CUR=$(pg_primary)
CAND=
for n in $(seq 1 "$DROVER_PG_HA"); do
  [ "$n" != "$CUR" ] && pg_role_is "$n" sync && CAND=$n
done
[ -n "$CAND" ] || fail "no synchronous standby to switch over to"
read -r cand_port _ < "$T/pg$CAND.ports"
# writable_at: the time (ms) the candidate first acknowledges a write (polled from now).
writable_at() {
  local deadline=$((SECONDS + 120))
  until timeout 60 psql "host=127.0.0.1 port=$cand_port dbname=drover user=drover connect_timeout=2" \
    -qAtX -c 'SELECT txid_current()' > /dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.05
  done
  now_ms
}
: > "$T/codes"
OLD=$CUR
ts=$(now_ms)
writable_at > "$T/switchover.writable" &
wpid=$!
patronictl -c "$T/pg$CUR/patroni.yml" switchover --leader "pg$CUR" --candidate "pg$CAND" --force \
  > "$T/switchover.log" 2>&1 || fail "patronictl switchover: $(cat "$T/switchover.log")"
poll_until -e 0.3 60 new_primary_serves ||
  fail "pg$CAND not serving after the switchover (answers: $(sort "$T/codes" | uniq -c | tr '\n' ' '))"
[ "$(pg_primary)" = "$CAND" ] || fail "the primary is pg$(pg_primary), not the candidate pg$CAND"
wait "$wpid" || fail "pg$CAND took no write within 120 s of the switchover's start"
te=$(cat "$T/switchover.writable")
window=$((te - ts))
for _ in 1 2 3; do probe; done
late=$(tail -n 12 "$T/codes" | grep -vc '^20[02]$' || true)
[ "$late" = 0 ] || fail "503 after the switchover: $(tail -n 12 "$T/codes" | tr '\n' ' ')"
all_jobs_end
check_record
wait_until 60 "pg$CUR to follow as a replica" pg_role_is "$CUR" replica
ids=
for tj in "${jobs[@]:$n_before}"; do ids="$ids${ids:+,}${tj#*:}"; done
# Per job of this part: its longest gap across the window, its longest elsewhere, and whether
# it ran across the window (attempt events on both sides).
psql_q "WITH ev AS (SELECT job_id, e FROM task_attempts, LATERAL (VALUES (started_at), (ended_at)) v(e)
    WHERE job_id IN ($ids) AND e IS NOT NULL),
  g AS (SELECT job_id, e, lag(e) OVER (PARTITION BY job_id ORDER BY e) p FROM ev),
  w AS (SELECT to_timestamp($ts / 1000.0) s, to_timestamp($te / 1000.0) e)
  SELECT job_id, coalesce(round(extract(epoch FROM max(g.e - p) FILTER (WHERE p <= w.e AND g.e >= w.s)) * 1000), 0),
    coalesce(round(extract(epoch FROM max(g.e - p) FILTER (WHERE NOT (p <= w.e AND g.e >= w.s))) * 1000), 0),
    min(g.e) < w.s AND max(g.e) > w.e
  FROM g, w WHERE p IS NOT NULL GROUP BY job_id, w.s, w.e ORDER BY job_id" | tr '|' ' ' > "$T/pauses"
across=0 worst=0 worst_job='' calm=0
while read -r j pause other spans; do
  [ "$pause" -le $((window + RETRY_MS)) ] ||
    fail "job $j paused $pause ms across the switchover, longer than its window $window ms + the retry interval $RETRY_MS ms"
  [ "$spans" = t ] && across=$((across + 1))
  [ "$pause" -gt "$worst" ] && worst=$pause worst_job=$j
  [ "$other" -gt "$calm" ] && calm=$other
done < "$T/pauses"
[ "$across" -ge 1 ] || fail "no job ran across the switchover's window ($window ms): $(cat "$T/pauses")"
n503=$(grep -c '^503$' "$T/codes" || true)
pass "switchover pg$CUR -> pg$CAND under running jobs: window $window ms (patronictl's start to pg$CAND's first acknowledged write); $across jobs ran across it, the longest pause $worst ms (job $worst_job; at most window + $RETRY_MS ms; longest gap elsewhere $calm ms); $n503 answers of $(wc -l < "$T/codes") were 503 with Retry-After, none other; all $((${#jobs[@]} - n_before)) jobs of this part succeeded, pg$CUR follows"
patroni_closed "after the switchover, pg$CAND the leader"
