#!/usr/bin/env bash
# Attacks of a hostile tenant admin against the API's side of the host boundary (issue 20,
# points 1, 4 and 6; docs/security.md), each on real servers:
#  1. a loopback provider whose sshd is /bin/sh (a host program: root shell on the worker);
#     the same through import, beside good entities (nothing partly written); root, network,
#     port and unshare too;
#  2. the host-path oracle: sshd naming a path that exists and one that does not get the same
#     answer, which names the field, never the path's state;
#  3. the loopback provider itself, for a tenant the operator did not enable;
#  4. a resources bundle with ".." and absolute paths (a link cannot even be expressed);
#  5. GET /v1/members as a tenant admin: the fleet's hosts, pids and addresses;
#  6. a drain of another tenant's worker: refused, and no entry in the caller's audit log;
#  7. api.max_heavy_per_tenant at api.heavy_threads: refused at start.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a "api.loopback_tenants = acme"
for t in acme globex; do
  expect 201 "$(api POST /v1/tenants "{\"name\":\"$t\"}" "$SUPER")" '' "tenant $t"
done
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
OLGA=$(body_of "$(api POST /v1/users '{"name":"olga","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)

# 1. Host fields in a tenant's provider.
lb() { jq -cn --argjson p "$1" '{name: "lb", providertype: "loopback", provisioner: $p}'; }
for f in '{"sshd": "/bin/sh"}' '{"unshare": "/bin/sh"}' '{"root": "/"}' '{"network": "127.0.0.0/8"}' '{"port": 2222}'; do
  k=$(echo "$f" | jq -r 'keys[0]')
  expect 422 "$(api POST /v1/providers "$(lb "$f")")" \
    ".error.code == \"host-field\" and .error.field == \"provisioner.$k\"" "provider field $k"
done
# An ssh-pool provider may not declare itself the operator's shared pool (issue 20, point 5).
expect 422 "$(api POST /v1/providers '{"name":"p","providertype":"ssh-pool","provisioner":{"shared":true}}')" \
  '.error.code == "host-field" and .error.field == "provisioner.shared"' "an ssh-pool provider claiming to be shared"
expect 201 "$(api POST /v1/providers "$(lb '{}')")" '' "a loopback provider without host fields"
expect 422 "$(api PUT /v1/providers/lb "$(lb '{"sshd": "/bin/sh"}')")" \
  '.error.field == "provisioner.sshd"' "replace with sshd"
imp=$(jq -cn '{hardwaretypes: [{name: "hw1", providermap: {lb: {flavor: "x"}}}],
  providers: [{name: "ok", providertype: "ssh-pool", provisioner: {}},
              {name: "evil", providertype: "loopback", provisioner: {sshd: "/bin/sh"}}]}')
expect 422 "$(api POST /v1/import "$imp")" '.error.field == "providers[1].provisioner.sshd"' "import with sshd"
expect 200 "$(api GET /v1/providers)" '[.items[].name] == ["lb"]' "the refused import wrote nothing"
expect 200 "$(api GET /v1/hardwaretypes)" '.items == []' "the refused import wrote no hardware type"
expect 200 "$(api GET /v1/providers/lb)" '.provisioner == {}' "the refused replace changed nothing"
pass "host fields (sshd, unshare, root, network, port) refused with 422 naming the field; nothing written"

# 2. No oracle: an existing executable and a missing path get the same answer but for the path.
a=$(body_of "$(api POST /v1/providers "$(lb '{"sshd": "/usr/sbin/sshd"}')")" | jq -c .error)
b=$(body_of "$(api POST /v1/providers "$(lb '{"sshd": "/nonexistent/x"}')")" | jq -c .error)
[ "$a" = "$b" ] || fail "the answers differ by the path's existence: $a / $b"
case $a in *sshd\"*) ;; *) fail "the answer does not name the field: $a" ;; esac
case $a in *usr/sbin*) fail "the answer echoes the path: $a" ;; esac
pass "no host-path oracle: $a"

# 3. Loopback is enabled for acme only (api.loopback_tenants = acme).
expect 422 "$(api POST /v1/providers "$(lb '{}')" "$OLGA")" \
  '.error.code == "provider-not-allowed" and .error.field == "providertype"' "loopback for globex"
pass "the loopback provider is refused to a tenant the operator did not enable"

# 4. Bundles that would write outside their directory.
for path in '../x' '/etc/cron.d/x' 'a/../../x' 'a/./b' ''; do
  expect 400 "$(api POST /v1/resources "$(jq -cn --arg p "$path" '{files: {($p): "aGk="}}')")" '' "path \"$path\""
done
expect 200 "$(api GET /v1/resources)" '.items == []' "no version stored"
pass "resources paths with .., absolute or empty refused (400), nothing stored"

# 5. The fleet view of a tenant admin.
expect 200 "$(api GET /v1/members)" \
  '(.members | length) == 1 and ([.members[].data | has("host") or has("pid") or has("http")] | any | not)' \
  "members for a tenant admin"
expect 200 "$(api GET /v1/members '' "$SUPER")" '.members[0].data | has("host") and has("pid") and has("http")' \
  "members for the superadmin"
pass "GET /v1/members: no host, pid or address for a tenant admin; all for the superadmin"

# 6. A drain of another tenant's worker.
write_worker_conf wg "worker.tenant = globex" "worker.plugin_dir = $DROVER_BUILD_DIR/plugins" \
  "worker.plugins = noop,noop-provider"
start_proc wg "$BIN/drover-worker"
have_worker() { api GET /v1/workers '' "$OLGA" | grep -q '"wg"'; }
wait_until 30 "worker wg registered" have_worker
expect 404 "$(api POST /v1/workers/wg/drain '{}')" '' "acme drains globex's worker"
expect 200 "$(api GET '/v1/audit?limit=100')" '[.items[] | select(.action == "worker.drain")] == []' \
  "no audit entry for the refused drain"
expect 202 "$(api POST /v1/workers/wg/drain '{}' "$OLGA")" '' "globex drains its own worker"
expect 200 "$(api GET '/v1/audit?limit=100' '' "$OLGA")" '[.items[] | select(.action == "worker.drain")] | length == 1' \
  "the allowed drain is audited"
pass "a refused worker drain: 404 and no audit entry; the allowed one audited"

# 7. One tenant may not hold every heavy thread of a node.
write_droverd_conf bad 1 "api.heavy_threads = 2" "api.max_heavy_per_tenant = 2"
if out=$("$BIN/droverd" --check-config "$T/bad.conf" 2>&1); then fail "accepted: $out"; fi
case $out in *'"api.max_heavy_per_tenant": 2 must be below api.heavy_threads (2)'*) ;; *) fail "said: $out" ;; esac
pass "api.max_heavy_per_tenant at api.heavy_threads refused at load"
