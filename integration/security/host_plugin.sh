#!/usr/bin/env bash
# Attack (issue 20, point 1): a tenant's code in a plugin process reads the fleet's secrets.
# A hostile provider plugin runs one real job of tenant acme through a real worker (root)
# and tries, as a tenant's code would: its own uid; /proc/<worker>/environ; the worker's
# config, the fleet's secrets key, the ZooKeeper digest file and the worker's API token;
# DROVER_ZK_DIGEST_FILE or anything else of the worker's in its environment; a provider
# field naming a host program (sshd = /bin/sh) and a host path (root = /) set in the
# tenant's entity. It also reports how the synced resources it was given are owned.
# Expected (docs/security.md "The host boundary"): it runs as its tenant's own uid (the
# owner of its home in worker.plugin_homes, not root), reads
# nothing of the above, finds no fleet variable, gets the operator's root and no sshd,
# and its resources are 0700/0600 and its own.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

(umask 077 && echo "drover:$(openssl rand -hex 12)" > "$T/zk.digest")
start_droverd 1 "zookeeper.digest_file = $T/zk.digest"
setup_tenant
URL="http://127.0.0.1:$PORT"
body_of "$(api POST /v1/users '{"name":"wtok","role":"user"}')" | jq -r .token > "$T/worker.token"
chmod 600 "$T/worker.token"

# The hostile plugin, in a plugin directory of the test's own (with the builtin noop for
# the services' actions).
P="$T/hplugins"
mkdir -p "$P/noop" "$P/evil"
cp "$DROVER_BUILD_DIR/plugins/noop/plugin.json" "$P/noop/"
cat > "$P/evil/plugin.json" <<'JSON'
{"name": "evil", "type": "provider", "executable": "evil.sh", "providertypes": ["evil"],
 "fields": {"sshd": {"type": "string", "host": true}, "root": {"type": "string", "host": true}},
 "timeout": "1m", "wants": [], "description": "a hostile tenant's code (security_host_plugin)"}
JSON
cat > "$P/evil/evil.sh" <<'SH'
#!/bin/sh
in=$(cat)
task=$(printf '%s' "$in" | jq -r .taskName)
case $task in
confirm)
  echo '{"status":"ok","result":{"hostname":"evil.invalid","ipaddresses":{"access_v4":"192.0.2.7"}}}'
  exit 0 ;;
create) ;;
*) echo '{"status":"ok"}'; exit 0 ;;
esac
guard=$(awk '/^PPid:/ {print $2}' /proc/$$/status)
worker=$(awk '/^PPid:/ {print $2}' "/proc/$guard/status")
readable=""
for f in "/proc/$worker/environ" $(printf '%s' "$in" | jq -r '.config.cluster.probe[]'); do
  head -c 1 "$f" > /dev/null 2>&1 && readable="$readable $f"
done
caps=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
fleet_env=$(env | grep -c '^DROVER_ZK_DIGEST_FILE=\|^DROVER_PG\|^DROVER_TOKEN\|^PGPASSWORD' || true)
res=$(cd "$DROVER_RESOURCES" 2>/dev/null && stat -c '%n %u %a' . hello.txt bin bin/run.sh | tr '\n' ';')
printf '%s' "$in" | jq -c --arg uid "$(id -u)" --arg gid "$(id -g)" --arg r "$readable" \
  --arg e "$fleet_env" --arg res "$res" --arg worker "$worker" --arg caps "$caps" \
  '{status: "ok", result: {"provider-id": "evil-\(.nodeId)", probe: {uid: $uid, gid: $gid,
    readable: $r, fleet_env: $e, resources: $res, worker_pid: $worker, caps: $caps,
    provider: .config.provider}}}'
SH
chmod 755 "$P" "$P/noop" "$P/evil" "$P/evil/evil.sh"
echo '{"evil": {"root": "/srv/operator-root"}}' > "$T/provider-settings.json"

WKEY=$(tenant_key_file acme) # the worker's only key (docs/security.md "Sealed values")
write_worker_conf w1 "worker.tenant = acme" "worker.plugin_dir = $P" "worker.concurrency = 2" \
  "worker.privileged_plugins =" "worker.provider_settings = $T/provider-settings.json" \
  "secrets.tenant_key_file = $WKEY" "zookeeper.digest_file = $T/zk.digest" \
  "worker.state_dir = $T/w1.state" "worker.api_url = $URL" "worker.api_token_file = $T/worker.token"
# The worker's own environment holds a token and a database password: none may pass on.
DROVER_TOKEN=$(cat "$T/worker.token") PGPASSWORD=fleet-secret start_proc w1 "$BIN/drover-worker"

# The tenant's resources, synced to the worker.
files=$(jq -cn --arg h "$(printf hello | base64)" --arg r "$(printf '#!/bin/sh\n' | base64)" \
  '{files: {"hello.txt": $h, "bin/run.sh": {data: $r, exec: true}}}')
expect 201 "$(api POST /v1/resources "$files")" '' "push resources"

# The tenant's provider names a host program and a host path: the API does not know the
# providertype "evil", so only the worker stands between them and the plugin.
catalogue_json "$CATALOG" |
  jq '.providers |= map(.providertype = "evil" | .provisioner += {sshd: "/bin/sh", root: "/"})' > "$T/cat.json"
expect 200 "$(api POST /v1/import "@$T/cat.json")" '' "import the hostile catalogue"
probe=$(jq -cn --arg c "$T/w1.conf" --arg k "$WKEY" --arg d "$T/zk.digest" --arg t "$T/worker.token" \
  '{probe: [$c, $k, $d, $t]}')
r=$(api POST /v1/clusters "$(jq -cn --argjson c "$probe" '{name: "e1", template: "single", nodes: 1, config: $c}')")
expect 202 "$r" '' "create the cluster"
CID=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 120
p=$(body_of "$(api GET "/v1/clusters/$CID")" | jq -c '.nodes[0].properties.probe')
echo "the plugin reported: $p"
[ "$(echo "$p" | jq -r .worker_pid)" = "$(pid_of w1)" ] || fail "the probe did not find the worker's pid: $p"
# The tenant's uid: the owner of its home, in the range, its own group (src/worker/uidmap.c).
ACME_UID=$(stat -c %u "$T/plugin-homes/acme")
[ "$(stat -c %g "$T/plugin-homes/acme")" = "$ACME_UID" ] && [ "$ACME_UID" -ge 2000000 ] ||
  fail "acme's plugin home: $(stat -c '%u:%g' "$T/plugin-homes/acme")"
[ "$(echo "$p" | jq -r .uid)" = "$ACME_UID" ] && [ "$(echo "$p" | jq -r .gid)" = "$ACME_UID" ] ||
  fail "the plugin ran as $(echo "$p" | jq -r '"\(.uid):\(.gid)"'), not acme's $ACME_UID"
[ -z "$(echo "$p" | jq -r .readable)" ] || fail "the plugin read the worker's files:$(echo "$p" | jq -r .readable)"
[ "$(echo "$p" | jq -r .fleet_env)" = 0 ] || fail "the plugin's environment holds fleet variables"
pass "the plugin ran as acme's uid $ACME_UID: /proc/<worker>/environ, config, key, digest and token unreadable; no fleet variable"
echo "$p" | jq -e '.provider.root == "/srv/operator-root" and (.provider | has("sshd") | not)' > /dev/null ||
  fail "host fields of the tenant's entity reached the plugin: $(echo "$p" | jq -c .provider)"
pass "the tenant's sshd = /bin/sh and root = / were dropped; the operator's root was given"
want=". $ACME_UID 700;hello.txt $ACME_UID 600;bin $ACME_UID 700;bin/run.sh $ACME_UID 700;"
[ "$(echo "$p" | jq -r .resources)" = "$want" ] ||
  fail "synced resources: $(echo "$p" | jq -r .resources), expected $want"
pass "synced resources are the plugin user's, 0700/0600"

# The same from a worker that is not root but holds CAP_SETUID, CAP_SETGID and CAP_CHOWN, as
# the systemd unit runs it (User=drover, AmbientCapabilities): here as nobody, its files its
# own and 0600. Its plugin must still be acme's uid, read none of them, and keep no
# capability (ambient ones would pass through execve).
kill "$(pid_of w1)"
wait_exit w1 30 > /dev/null || fail "worker w1 did not stop"
cp "$WKEY" "$T/w2.secrets.key"
cp "$T/zk.digest" "$T/w2.zk.digest"
write_worker_conf w2 "worker.tenant = acme" "worker.plugin_dir = $P" "worker.concurrency = 2" \
  "worker.privileged_plugins =" "worker.provider_settings = $T/provider-settings.json" \
  "secrets.tenant_key_file = $T/w2.secrets.key" "zookeeper.digest_file = $T/w2.zk.digest"
chown nobody:nogroup "$T/w2.conf" "$T/w2.secrets.key" "$T/w2.zk.digest"
chmod 600 "$T/w2.secrets.key" "$T/w2.zk.digest"
cat > "$T/w2-run" <<RUN
#!/bin/sh
exec setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+setuid,+setgid,+chown \
  --ambient-caps=+setuid,+setgid,+chown "$BIN/drover-worker" "\$@"
RUN
chmod 755 "$T/w2-run"
start_proc w2 "$T/w2-run"
probe=$(jq -cn --arg c "$T/w2.conf" --arg k "$T/w2.secrets.key" --arg d "$T/w2.zk.digest" '{probe: [$c, $k, $d]}')
r=$(api POST /v1/clusters "$(jq -cn --argjson c "$probe" '{name: "e2", template: "single", nodes: 1, config: $c}')")
expect 202 "$r" '' "create the cluster for w2"
CID=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 120
p=$(body_of "$(api GET "/v1/clusters/$CID")" | jq -c '.nodes[0].properties.probe')
echo "the plugin of w2 reported: $p"
[ "$(echo "$p" | jq -r .worker_pid)" = "$(pid_of w2)" ] || fail "the probe did not run under w2: $p"
[ "$(echo "$p" | jq -r .uid)" = "$ACME_UID" ] || fail "w2's plugin ran as $(echo "$p" | jq -r .uid)"
[ -z "$(echo "$p" | jq -r .readable)" ] || fail "w2's plugin read:$(echo "$p" | jq -r .readable)"
[ "$(echo "$p" | jq -r .caps)" = 0000000000000000 ] || fail "w2's plugin kept capabilities $(echo "$p" | jq -r .caps)"
pass "a worker with CAP_SETUID and CAP_SETGID (not root): its plugin is acme's uid, reads nothing, keeps no capability"
