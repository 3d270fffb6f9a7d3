#!/usr/bin/env bash
# Attack (issue 32, "testing": true never enforced): the plugins that exist for tests and
# benchmarks (noop, sleep) ship in the same plugin directory as the real ones, and the sleep
# plugin writes where the task's config tells it (record_dir, exclusive_dir: the tenant's
# cluster config) and waits on files it names. A worker that loads every descriptor of its
# plugin directory ran them for any tenant whose entities name their types, so a tenant could
# make a worker write files on its host.
# Expected (docs/plugins.md "testing", docs/security.md "The host boundary"): unless the
# operator sets worker.testing_plugins = true (the tests' stack does), a worker skips every
# plugin whose descriptor says "testing": true (event=plugins-testing-skipped), so a task for
# one fails as served by no plugin and nothing is written; a worker whose worker.plugins names
# one does not start, saying why.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1 "engine.max_failures = 1"
setup_tenant # acme, with the test catalogue: its provider's type is the sleep plugin's

# A worker that names a testing plugin: refused at start.
write_worker_conf named "worker.tenant = acme" "worker.plugin_dir = $DROVER_BUILD_DIR/plugins" \
  "worker.plugins = sleep,sleep-provider" "worker.testing_plugins = false"
if "$BIN/drover-worker" --config "$T/named.conf" > "$T/named.log" 2>&1; then
  fail "a worker naming the sleep plugin started without worker.testing_plugins"
fi
grep -q 'worker.plugins names .*sleep' "$T/named.log" ||
  fail "the refusal does not name the plugin: $(tail -n 3 "$T/named.log")"
pass "a worker whose worker.plugins names a testing plugin does not start, naming it"

# A worker of every plugin of its directory, which holds the sleep plugins (as an installed
# plugin directory would, beside the real ones): the testing ones are skipped.
P="$T/tplugins"
mkdir -p "$P"
cp -r "$DROVER_BUILD_DIR/plugins/sleep" "$DROVER_BUILD_DIR/plugins/sleep-provider" "$P/"
chmod -R a+rX "$P"
write_worker_conf w1 "worker.tenant = acme" "worker.plugin_dir = $P" \
  "worker.testing_plugins = false" "secrets.tenant_key_file = $(tenant_key_file acme)"
start_proc w1 "$BIN/drover-worker"

# The tenant's cluster asks the sleep plugins to write into a directory of its choosing.
E="$T/evil"
mkdir -p "$E"
chmod 777 "$E"
r=$(api POST /v1/clusters "$(jq -cn --arg d "$E" '{name: "t1", template: "simple", nodes: 1,
  config: {sleep: {record_dir: $d, exclusive_dir: $d}}}')")
expect 202 "$r" '' "the cluster"
JID=$(body_of "$r" | jq -r .job.id)
refused() { job_status_field "$JID" '.error // ""' | grep -q 'no plugin serves provider type "sleep"'; }
wrote() { [ -n "$(ls -A "$E")" ]; }
settled() { refused || wrote || [ "$(job_status_field "$JID" .status)" = succeeded ]; }
poll_until 90 settled || fail "job $JID: $(job_status_field "$JID" .status) $(job_status_field "$JID" .error)"
! wrote || fail "attack succeeded: the sleep plugin ran for the tenant and wrote $(ls "$E")"
refused || fail "job $JID was not refused for want of a plugin: $(job_status_field "$JID" .status) $(job_status_field "$JID" .error)"
grep -q 'event=plugins-testing-skipped plugins=sleep,sleep-provider ' "$T/w1.log" ||
  fail "the worker did not say it skipped the testing plugins"
pass "the testing plugins were skipped: the tenant's task found no plugin and nothing was written"
