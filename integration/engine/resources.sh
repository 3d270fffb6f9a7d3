#!/usr/bin/env bash
# Tenant resources synced to workers (docs/worker.md "Resources"): one droverd, two
# workers that sync /drover/resources/acme into their state directories, and the sleep
# automator behind a wrapper that records what each task saw of $DROVER_RESOURCES (the
# content of x and sub/y and a checksum of the whole directory, at the start and at the
# end of the task).
#
# Checks: bad pushes get clear errors (non-admin 403, absolute path and ".." 400, too
# large 413, a symbolic link refused by the CLI); before any push the configured
# worker.resources_dir serves; a job running while a new version is pushed finishes with
# the version it pinned, the next job uses the new one; every task saw a complete version
# that did not change under it; old versions go once no job uses them.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

export RES_LOG="$RUNS/resources.log"
: > "$RES_LOG"

# ---- the plugins: sleep-provider as built, the sleep automator behind the recorder.
PDIR="$T/plugins"
mkdir -p "$PDIR/sleep"
cp -r "$DROVER_BUILD_DIR/plugins/sleep-provider" "$PDIR/"
cp "$DROVER_BUILD_DIR/plugins/sleep/sleep" "$PDIR/sleep/sleep"
jq '.executable = "record"' "$DROVER_BUILD_DIR/plugins/sleep/plugin.json" > "$PDIR/sleep/plugin.json"
cat > "$PDIR/sleep/record" << 'EOF'
#!/bin/sh
# One line per task: job task dir x y checksum x y checksum (at the start, at the end) start-ms
r=${DROVER_RESOURCES:-none}
t0=$(($(date +%s%N) / 1000000))
look() {
  x=$(cat "$r/x" 2> /dev/null || echo missing)
  y=$(cat "$r/sub/y" 2> /dev/null || echo missing)
  sum=$(cd "$r" 2> /dev/null && find . -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
}
look
x0=$x y0=$y s0=$sum
# Held while the test's gate exists: the task is running, its files already read.
while [ -e "$GATE" ]; do
  echo "$DROVER_JOB_ID" >> "$GATE.held"
  sleep 0.05
done
./sleep
rc=$?
look
echo "$DROVER_JOB_ID $DROVER_TASK_ID $r $x0 $y0 $s0 $x $y $sum $t0" >> "$RES_LOG"
exit $rc
EOF
# Plugins get an allow-listed environment (docs/security.md), never the test's: the log's
# path is written into the recorder.
GATE="$T/gate"
sed -i "s|\"\$RES_LOG\"|\"$RES_LOG\"|; s|\"\$GATE|\"$GATE|g" "$PDIR/sleep/record"
chmod +x "$PDIR/sleep/record"

dirsum() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16); }

start_droverd 1
setup_tenant
URL="http://127.0.0.1:$PORT"
D() { DROVER_URL="$URL" DROVER_TOKEN="$TOKEN" "$BIN/drover" "$@"; }

# ---- bad pushes
USER_TOKEN=$(body_of "$(api POST /v1/users '{"name":"wk","role":"user"}')" | jq -r .token)
expect 403 "$(api POST /v1/resources '{"files":{"x":"aGk="}}' "$USER_TOKEN")" '.error.code == "forbidden"' "a user's push"
expect 400 "$(api POST /v1/resources '{"files":{"../x":"aGk="}}')" '.error.field == "files" and (.error.message | contains(".."))' "a path with .."
expect 400 "$(api POST /v1/resources '{"files":{"a/../../x":"aGk="}}')" '.error.field == "files"' "a path that climbs out"
expect 400 "$(api POST /v1/resources '{"files":{"/etc/passwd":"aGk="}}')" '.error.field == "files"' "an absolute path"
expect 400 "$(api POST /v1/resources '{"files":{"x":"not base64!"}}')" '.error.field == "files"' "content that is not base64"
expect 400 "$(api POST /v1/resources '{"nofiles":{}}')" '.error.field == "files"' "no files"
{ printf '{"files":{"big":"'; head -c 3300000 /dev/zero | base64 -w0; printf '"}}'; } > "$T/big.json"
expect 413 "$(api POST /v1/resources "@$T/big.json")" '.error.code == "too-large"' "too large"
{ printf '{"files":{"a":"'; head -c 1600000 /dev/zero | base64 -w0; printf '","b":"'; head -c 1600000 /dev/zero | base64 -w0; printf '"}}'; } > "$T/big2.json"
mkdir -p "$T/bad"
echo hi > "$T/bad/x"
ln -s /etc/passwd "$T/bad/link"
if D resources push "$T/bad" 2> "$T/cli.err"; then fail "the CLI pushed a symbolic link"; fi
grep -q "symbolic link" "$T/cli.err" || fail "the CLI's error: $(cat "$T/cli.err")"
expect 200 "$(api GET /v1/resources)" '.items == []' "nothing was stored"
expect 404 "$(api GET /v1/resources/1 '' "$USER_TOKEN")" '' "no version 1 yet"
expect 400 "$(api GET /v1/resources/abc)" '' "a version that is not a number"
pass "bad pushes: 403 for a user, 400 for .., absolute paths, bad content, 413 too large, CLI refuses links"

# ---- workers that sync; before any push they use worker.resources_dir
echo "$USER_TOKEN" > "$T/worker.token"
chmod 600 "$T/worker.token"
mkdir -p "$T/fallback/sub"
echo fallback > "$T/fallback/x"
echo fallback > "$T/fallback/sub/y"
# start_res_worker NAME: a worker that syncs into $T/NAME.state.
start_res_worker() {
  local w=$1
  write_worker_conf "$w" "worker.tenant = acme" "worker.plugin_dir = $PDIR" \
    "worker.plugins = sleep,sleep-provider" "worker.concurrency = 4" "secrets.tenant_key_file = $(tenant_key_file acme)" \
    "log.level = ${LOG_LEVEL:-info}" "worker.resources_dir = $T/fallback" \
    "worker.state_dir = $T/$w.state" "worker.api_url = $URL" \
    "worker.api_token_file = $T/worker.token" "worker.resources_keep = 3s"
  sed -i "s/^zookeeper.session_timeout = 20s/zookeeper.session_timeout = $SESSION/" "$T/$w.conf"
  start_proc "$w" "$BIN/drover-worker"
}
start_res_worker worker-1
start_res_worker worker-2

read -r _ J0 <<< "$(create_cluster c0 1)"
wait_job "$J0" succeeded 90
n0=$(grep -c "^$J0 " "$RES_LOG" || true)
[ "$n0" -gt 0 ] || fail "job $J0 recorded no task"
grep "^$J0 " "$RES_LOG" | awk -v d="$T/fallback" '$3 != d || $4 != "fallback" || $7 != "fallback"' | head -3 | grep . &&
  fail "before any push a task did not use worker.resources_dir"
pass "no version pushed: $n0 tasks used worker.resources_dir"

# ---- version 1
mkdir -p "$T/res/sub"
echo v1 > "$T/res/x"
echo v1 > "$T/res/sub/y"
printf '#!/bin/sh\necho v1\n' > "$T/res/run.sh"
chmod +x "$T/res/run.sh"
D resources push "$T/res" > "$T/push1.out" || fail "push 1: $(cat "$T/push1.out")"
grep -q "resources version 1:" "$T/push1.out" || fail "push 1 said: $(cat "$T/push1.out")"
SUM1=$(dirsum "$T/res")
ann=$(zk get /drover/resources/acme | sed "s/^[^{]*//")
echo "$ann" | jq -e '.version == 1 and (.sha256 | length == 64)' > /dev/null || fail "announcement: $ann"
[ ${#ann} -lt 200 ] || fail "the announcement is large: $ann"
for w in worker-1 worker-2; do
  wait_until 60 "$w to fetch version 1" test -d "$T/$w.state/resources/1"
  [ "$(dirsum "$T/$w.state/resources/1")" = "$SUM1" ] || fail "$w's version 1 differs"
  [ -x "$T/$w.state/resources/1/run.sh" ] || fail "$w: run.sh lost its executable bit"
done
pass "push 1: announced as {version, sha256} only, both workers fetched it in the background"

# ---- a job runs while version 2 is pushed
# Its first tasks are held at the gate, running, while the push is made; then it is paused
# (what runs finishes), the workers that have version 1 are stopped, and it is resumed: the
# rest of it can only go to a new worker with an empty state directory, which fetches version
# 2 (announced) in the background and version 1 (pinned by job 1) when a task needs it.
touch "$GATE"
read -r _ J1 <<< "$(create_cluster c1 3 '{"duration_ms": 150}')"
wait_until 120 "a task of job $J1 to be held at the gate" grep -qx "$J1" "$GATE.held"
echo v2 > "$T/res/x"
echo v2 > "$T/res/sub/y"
echo extra > "$T/res/sub/z"
PUSH2_MS=$(now_ms)
D resources push "$T/res" > "$T/push2.out" || fail "push 2: $(cat "$T/push2.out")"
grep -q "resources version 2:" "$T/push2.out" || fail "push 2 said: $(cat "$T/push2.out")"
SUM2=$(dirsum "$T/res")
[ "$(job_field "$J1" .status)" = running ] || fail "job $J1 is not running during push 2: $(job_field "$J1" .status)"
expect 202 "$(api POST "/v1/jobs/$J1/pause")" '.control == "pause"' "pause job $J1"
rm -f "$GATE"
wait_job "$J1" paused 120
start_res_worker worker-3
stop_worker worker-1
stop_worker worker-2
expect 202 "$(api POST "/v1/jobs/$J1/resume")" '.control == "resume"' "resume job $J1"
wait_job "$J1" succeeded 120
read -r _ J2 <<< "$(create_cluster c2 2)"
wait_job "$J2" succeeded 90

n1=$(grep -c "^$J1 " "$RES_LOG")
w3=$(grep "^$J1 " "$RES_LOG" | grep -c "/worker-3.state/resources/1 " || true)
[ "$w3" -gt 0 ] || fail "worker-3 ran no task of job $J1"
grep -q "event=task-waits-for-resources .* version=1" "$T/worker-3.log" ||
  fail "no task of worker-3 waited for version 1 (fetched on demand only)"
bad=$(grep "^$J1 " "$RES_LOG" | awk -v s="$SUM1" '$3 !~ /\/resources\/1$/ || $4 != "v1" || $5 != "v1" || $6 != s || $7 != "v1" || $8 != "v1" || $9 != s' | head -3)
[ -z "$bad" ] || fail "job $J1 (pinned to version 1) saw: $bad"
after=$(grep "^$J1 " "$RES_LOG" | awk -v p="$PUSH2_MS" '$10 > p' | wc -l)
[ "$after" -gt 0 ] || fail "no task of job $J1 started after push 2: the test proves nothing"
n2=$(grep -c "^$J2 " "$RES_LOG")
bad=$(grep "^$J2 " "$RES_LOG" | awk -v s="$SUM2" '$3 !~ /\/resources\/2$/ || $4 != "v2" || $5 != "v2" || $6 != s || $7 != "v2" || $8 != "v2" || $9 != s' | head -3)
[ -z "$bad" ] || fail "job $J2 (after push 2) saw: $bad"
grep -q '\.tmp' "$RES_LOG" && fail "a task ran in a directory being unpacked"
pass "job $J1 ran its $n1 tasks ($after started after push 2) on version 1 to the end ($w3 on a worker that fetched it on demand); job $J2 ran $n2 tasks on version 2; every task saw one whole version, unchanged while it ran"

# ---- listing, and old versions removed once unused
expect 200 "$(api GET /v1/resources '' "$USER_TOKEN")" '(.items | length == 2) and .items[0].version == 2 and .items[0].created_by == "alice" and .items[1].files == 3 and (.items[0].sha256 | length == 64)' "list versions"
D resources list | grep -q '^2 ' || fail "drover resources list"
r=$(curl -s -H "Authorization: Bearer $USER_TOKEN" "$URL/v1/resources/2")
[ "$(printf '%s' "$r" | sha256sum | cut -c1-64)" = "$(body_of "$(api GET /v1/resources)" | jq -r '.items[0].sha256')" ] ||
  fail "the fetched body's digest is not the version's sha256"
w=worker-3
poll_until 120 test ! -e "$T/$w.state/resources/1" || fail "$w kept version 1: $(ls "$T/$w.state/resources")"
[ -d "$T/$w.state/resources/2" ] || fail "$w removed version 2"
[ "$(psql_q "SELECT count(*) FROM audit_log WHERE action = 'resources.push'")" = 2 ] || fail "audit of pushes"
pass "versions listed (who, when, sha256); the fetch is the checksummed body; version 1 removed once unused, 2 kept"

# A restarted worker keeps its complete versions (the directory and its checksum beside it) and
# removes what an interrupted run left.
stop_worker worker-3
mkdir -p "$T/worker-3.state/resources/7.tmp" "$T/worker-3.state/resources/8"
mv "$T/worker-3.log" "$T/worker-3.first.log"
start_proc worker-3 "$BIN/drover-worker"
for _ in $(seq 100); do grep -q "event=worker-ready" "$T/worker-3.log" && break; sleep 0.1; done
sleep 1
# shellcheck disable=SC2012 # the worker's own file names, compared as ls lists them
[ "$(ls "$T/worker-3.state/resources" | tr '\n' ' ')" = "2 2.sha256 " ] ||
  fail "worker-3's state after a restart: $(ls "$T/worker-3.state/resources")"
grep -q "event=resources-fetch " "$T/worker-3.log" && fail "worker-3 fetched again what it had"
pass "a restarted worker keeps its verified versions and removes partial ones"
check_runs
