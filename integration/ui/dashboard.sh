#!/usr/bin/env bash
# The web dashboard in a real browser against a real stack (docs/ui.md): ZooKeeper and
# PostgreSQL (scripts/with-stack), one droverd serving /ui/, a worker running the sleep
# plugin, tenant acme (admin alice, user bob) with clusters: one done, one of 30 nodes (a
# 335-task job, grouped), one rolled back (an install that always fails), one whose tasks
# take 2.5 s each (its DAG changes while the browser watches) and one of 8 s tasks (still
# running for the fleet view and the long-poll checks); tenant globex with a cluster that
# acme must not reach. First the HTTP side with curl (types, CSP, ETag and 304, traversal
# refused, JSON errors, attempts), then integration/ui/dashboard.mjs drives headless
# Chromium (stopped by its pid), then the long-poll with curl.
#
# Screenshots: $DROVER_KEEP_LOGS/ui-dashboard/ when set (where CI keeps logs), else
# $DROVER_UI_SHOTS, else build/ui-screenshots.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || fail "no $CHROMIUM (scripts/deps installs the chromium package)"
command -v node > /dev/null || fail "no node (scripts/deps installs nodejs)"
SHOTS=${DROVER_UI_SHOTS:-$DROVER_BUILD_DIR/ui-screenshots}
[ -n "${DROVER_KEEP_LOGS:-}" ] && SHOTS="$DROVER_KEEP_LOGS/ui-dashboard"
rm -rf "$SHOTS" && mkdir -p "$SHOTS"

start_droverd 1
CONCURRENCY=8 start_worker worker-1
setup_tenant
U="http://127.0.0.1:$PORT"

# ---- the HTTP side
hdr() { curl -s -o /dev/null -D - "$@" | tr -d '\r'; }
h=$(hdr "$U/ui/")
grep -q '^HTTP/1.1 200' <<< "$h" || fail "GET /ui/: $h"
grep -qi '^content-type: text/html; charset=utf-8$' <<< "$h" || fail "index.html type: $h"
grep -qi "^content-security-policy: default-src 'none'; script-src 'self';" <<< "$h" || fail "no CSP: $h"
grep -qi '^x-content-type-options: nosniff$' <<< "$h" || fail "no nosniff: $h"
etag=$(grep -i '^etag:' <<< "$h" | cut -d' ' -f2)
[ -n "$etag" ] || fail "no ETag: $h"
grep -q '^HTTP/1.1 304' <<< "$(hdr -H "If-None-Match: $etag" "$U/ui/")" || fail "If-None-Match: no 304"
grep -qi '^content-type: text/javascript; charset=utf-8$' <<< "$(hdr "$U/ui/app.js")" || fail "app.js type"
grep -qi '^content-type: text/css; charset=utf-8$' <<< "$(hdr "$U/ui/app.css")" || fail "app.css type"
grep -qi '^location: /ui/$' <<< "$(hdr "$U/ui")" || fail "/ui does not redirect to /ui/"
for p in /ui/../v1/whoami /ui/%2e%2e/%2e%2e/etc/passwd /ui/..%2Fapp.js; do
  code=$(curl -s --path-as-is -o "$T/ui.out" -w '%{http_code}' "$U$p")
  [ "$code" = 400 ] && jq -e '.error.code == "malformed"' "$T/ui.out" > /dev/null ||
    fail "$p: $code $(cat "$T/ui.out")"
done
code=$(curl -s -o "$T/ui.out" -w '%{http_code}' "$U/ui/nothing.js")
[ "$code" = 404 ] && jq -e '.error.code == "not-found"' "$T/ui.out" > /dev/null || fail "/ui/nothing.js: $code"
code=$(curl -s -o "$T/ui.out" -w '%{http_code}' -X POST "$U/ui/")
[ "$code" = 405 ] && jq -e '.error.code == "method-not-allowed"' "$T/ui.out" > /dev/null || fail "POST /ui/: $code"
pass "/ui/: content types, CSP, ETag and 304, redirect; traversal 400, unknown 404, POST 405 as JSON"

# ---- data: three clusters of acme, one of globex
read -r CID JID <<< "$(create_cluster "done" 3)"
wait_job "$JID" succeeded 90
read -r _ BJID <<< "$(create_cluster big 30)"
wait_job "$BJID" succeeded 240
# bob, a user of acme: sees his own clusters only, and no fleet or audit
UTOKEN=$(body_of "$(api POST /v1/users '{"name":"bob","role":"user"}')" | jq -r .token)
[ -n "$UTOKEN" ] && [ "$UTOKEN" != null ] || fail "user bob"
# a create whose install fails on every attempt: the job rolls back
read -r _ FJID <<< "$(create_cluster doomed 2 '{"fail_on": {"node": "node-2", "task": "install", "service": "app"}}')"
wait_job "$FJID" rolled-back 120
expect 400 "$(api GET "/v1/jobs/$FJID/attempts")" '.error.field == "task"' "attempts without a task"
expect 200 "$(api GET "/v1/jobs/$FJID/attempts?task=node-2/app/install")" '.items | length >= 1 and all(.status == "failed")' "a failed task's attempts"
expect 201 "$(api POST /v1/tenants '{"name":"globex"}' "$SUPER")" '' "tenant globex"
GTOKEN=$(body_of "$(api POST /v1/users '{"name":"gina","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)
expect 200 "$(api POST /v1/import "@$T/catalog.json" "$GTOKEN")" '' "globex's catalogue"
r=$(api POST /v1/clusters "$(jq -cn '{name: "other-secret", template: "simple", nodes: 1}')" "$GTOKEN")
expect 202 "$r" '' "globex's cluster"
OCID=$(body_of "$r" | jq -r .cluster.id)
read -r _ LJID <<< "$(create_cluster live 2 '{"duration_ms": 2500}')"
# still running when the browser reaches the fleet view (its owner is shown there), and
# for the long-poll checks after it
read -r _ SJID <<< "$(create_cluster slow 1 '{"duration_ms": 8000}')"

DROVER_URL=$U ADMIN_TOKEN=$TOKEN SHOTS=$SHOTS CLUSTER=$CID JOB_RUNNING=$LJID JOB_BIG=$BJID JOB_SLOW=$SJID JOB_FAILED=$FJID USER_TOKEN=$UTOKEN \
  OTHER_CLUSTER=$OCID CHROMIUM=$CHROMIUM CHROMIUM_PIDFILE=$T/pids/chromium.pid timeout -k 10 400 \
  node "$DROVER_SOURCE_DIR/integration/ui/dashboard.mjs" || fail "the browser's checks (screenshots in $SHOTS)"
rm -rf "$SHOTS/.profile"
pass "dashboard: every view rendered from the stack in Chromium; screenshots in $SHOTS"

# ---- long-polling a job's summary
expect 400 "$(api GET "/v1/jobs/$SJID?tasks=none&wait=0&revision=x")" '.error.field == "wait"' "wait=0"
expect 400 "$(api GET "/v1/jobs/$SJID?tasks=none&wait=26&revision=x")" '.error.field == "wait"' "wait=26"
expect 400 "$(api GET "/v1/jobs/$SJID?wait=5&revision=x")" '.error.field == "wait"' "wait without tasks=none"
r1=$(body_of "$(api GET "/v1/jobs/$SJID?tasks=none")" | jq -r .revision)
[ ${#r1} = 32 ] || fail "no revision in a job summary: $r1"
t0=$(now_ms)
r=$(api GET "/v1/jobs/$SJID?tasks=none&wait=20&revision=$r1")
t1=$(now_ms)
expect 200 "$r" ".revision != \"$r1\" and (.progress.states | type == \"object\")" "a held summary"
held=$((t1 - t0))
[ "$held" -lt 15000 ] || fail "the held summary came after $held ms, the job changes every 8 s"
r=$(api GET "/v1/jobs/$JID?tasks=none")
rd=$(body_of "$r" | jq -r .revision)
t0=$(now_ms)
expect 200 "$(api GET "/v1/jobs/$JID?tasks=none&wait=20&revision=$rd")" ".revision == \"$rd\"" "a finished job's summary"
[ $(($(now_ms) - t0)) -lt 2000 ] || fail "a finished job's summary was held"
expect 404 "$(api GET "/v1/jobs/$(body_of "$(api GET "/v1/jobs?cluster=$OCID" "$GTOKEN")" | jq -r '.items[0].id')?tasks=none&wait=5&revision=x")" '' "another tenant's job, held"
expect 404 "$(api GET "/v1/jobs/$FJID/attempts?task=node-2/app/install" '' "$GTOKEN")" '' "another tenant's attempts"
pass "long-poll: held until the job changed ($held ms), a finished job at once, bad waits 400, another tenant's job 404"
