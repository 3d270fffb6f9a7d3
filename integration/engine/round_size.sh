#!/usr/bin/env bash
# Rounds that always fit (issue 37): the engine sizes a dispatch round by what coord will send
# (per put two creates with their ACLs at their largest and the key record, about 1 KB more
# than the item), so no round is refused as too large and retried for ever.
#   1. thousands of small items: a 1,000-node `single` create (5,000 noop tasks, 1,000 ready at
#      once) dispatches and succeeds, and no round is refused (before: its first rounds were
#      some 460 puts, 600 KB by coord's count over its 512 KB: txn-too-large; on the issue's
#      stack, every 3 s for ever);
#   2. large items: a service whose task fields are ~60 KB (an entity's limit is 64 KiB,
#      docs/security.md), on twelve nodes: a few of its items a round, and the job succeeds.
#      (An item alone over the session's limit, which an entity can no longer make, fails its
#      task at once with the sizes in the job's error: commit_zk.c put_task.)
# In both, droverd never logs txn-too-large.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

LOG_LEVEL=${LOG_LEVEL:-warn}
start_droverd 1
setup_tenant
# The test catalogue with one more service on the template `fat`: `fat` (fields of ~60 KB).
cp -r "$CATALOG" "$T/cat"
blob() { head -c "$1" /dev/zero | tr '\0' x; }
name=fat
blob 60000 | jq -Rs --arg n "$name" '{
  name: $n, description: "a service with large task fields",
  dependencies: {conflicts: [], install: {requires: ["base"], uses: []}, provides: [],
                 runtime: {requires: ["base"], uses: []}},
  provisioner: {actions: {install: {type: "noop", fields: {blob: .}}}}}' > "$T/cat/services/$name.json"
jq -n '{name: "fat", description: "base and a service with large fields",
  compatibility: {services: ["base", "fat"], hardwaretypes: ["small"], imagetypes: ["img"]},
  defaults: {services: ["base", "fat"], provider: "fake", hardwaretype: "small", imagetype: "img", config: {}}}' \
  > "$T/cat/clustertemplates/fat.json"
catalogue_json "$T/cat" > "$T/cat.json"
expect 200 "$(api POST /v1/import "@$T/cat.json")" '' "import the catalogue with large services"
expect 200 "$(api PUT /v1/tenants/acme/quotas '{"clusters": 0, "jobs": 0}' "$SUPER")" '' "lift acme's quotas"
WORKER_PLUGINS=noop,noop-provider CONCURRENCY=64 start_worker worker-1

# 1. Thousands of small items.
J=$(body_of "$(api POST /v1/clusters '{"name": "wide", "template": "single", "nodes": 1000}')" | jq -r .job.id)
[[ $J =~ ^[0-9]+$ ]] || fail "no job for the wide create"
# Its first round is dispatched soon (before the fix: never).
wait_until 60 "the wide job's first tasks to run" done_at_least "$J" 1
WAIT_JOB_POLL=1 wait_job "$J" succeeded 600
[ "$(done_of "$J")" -ge 5000 ] || fail "the wide job did $(done_of "$J") tasks"
pass "a 1,000-node create (5,000 tasks) dispatched and succeeded"
# (Before the fix this one recovered after two refused rounds here; on a stack of three
# droverd and four workers it was refused for ever: issue 37.)
! grep -q 'event=txn-too-large' "$T/droverd-1.log" || fail "droverd sent a round over the limit: $(grep -m1 'event=txn-too-large' "$T/droverd-1.log")"

# 2. Large items: a few a round.
body=$(jq -cn '{name: "fat", template: "fat", nodes: 12}')
J=$(body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id)
WAIT_JOB_POLL=0.5 wait_job "$J" succeeded 300
[ "$(psql_q "SELECT count(*) FROM tasks t JOIN task_attempts a ON a.job_id = t.job_id AND a.task_id = t.id
              WHERE t.job_id = $J AND t.service = 'fat' AND a.status = 'succeeded'")" = 12 ] ||
  fail "the fat service's twelve installs: $(psql_q "SELECT t.service, t.status FROM tasks t WHERE job_id = $J")"
pass "twelve items of ~60 KB dispatched and succeeded"

! grep -q 'event=txn-too-large' "$T/droverd-1.log" || fail "droverd sent a multi-op over the limit"
pass "no round over ZooKeeper's request limit"
