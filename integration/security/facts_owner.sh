#!/usr/bin/env bash
# Issue 32, below the engine: the root container provider acts only on its own record's
# node. Tenant acme's node-1 runs (the victim); tasks of tenant evil's cluster 9 (its node-2) name it by
# its provider-id, with and without its addresses, as a task could if anything upstream let
# a tenant's value through (the plugin is run directly, as a worker runs it):
#
#   create       over the running node ("found running" adopted it), and with cleanup
#                (destroy: stop and delete it);
#   confirm      of it (a log-in reports its facts as evil's);
#   delete       of it;
#   stop/resume  the victim stopped (a host reboot), then evil's create naming it (the
#                resume rewrote its authorized_keys with evil's key and started it);
#   guess        the id of acme's node from its names (the former ids were
#                ct-<root hash>-<tenant>-<cluster>-<node>): no such node;
#   a record     a node whose id is evil's but whose owner record names acme: refused;
#   the gateway  the ssh automator with the bridge's gateway (this host) as the node's
#                address: refused before connecting (test_sshc_addr holds the rule).
#
# Each is refused with an error naming config "facts.provider-id", and acme's node answers
# afterwards with the same init and its own authorized key. Before the fix every one of
# them acted on acme's node.
. "$DROVER_SOURCE_DIR/testlib/container.sh"

ct_create node-1
VID=$(kv node-1 '."provider-id"')
VADDR=$(kv node-1 .ipaddresses.access_v4)
VINIT=$(lxc-info -P "$CT_ROOT" -n "$VID" -pH)
VKEYS=$(cat "$CT_ROOT/$VID/upper/root/.ssh/authorized_keys")
acme_answers() { # WHAT
  [ "$(on node-1 hostname 2> /dev/null)" = node-1 ] || fail "$1: acme's node-1 ($VID on $VADDR) does not answer"
  [ "$(lxc-info -P "$CT_ROOT" -n "$VID" -pH 2> /dev/null)" = "$VINIT" ] || fail "$1: acme's node-1 was restarted"
  [ "$(cat "$CT_ROOT/$VID/upper/root/.ssh/authorized_keys")" = "$VKEYS" ] || fail "$1: acme's authorized_keys changed"
}
acme_answers "before"

# Evil's own key pair: what it would log in with.
"$KEYGEN" "$T/evil_key" "evil" || fail "keygen"
EVIL_PUB=$(cat "$T/evil_key.pub")
# evil TASK [JQ]: a task of tenant evil's cluster 9 for its node-2 (a node of its own, with
# no key-values yet), with its own key.
evil() {
  ct_task "$1" node-2 1 7 ".tenant = \"evil\" | .clusterId = \"9\" | .config.ssh.public_key = \"$EVIL_PUB\" | ${2:-.}"
}
# Naming acme's node: the fact, also at config's top level (where a build before read it).
id_only=".config.facts = {\"provider-id\": \"$VID\"} | .config[\"provider-id\"] = \"$VID\""
# shellcheck disable=SC2034 # used as ${!how}
with_ip="$id_only | .config.facts.ipaddresses = {access_v4: \"$VADDR\", bind_v4: \"$VADDR\"} | .config.ipaddresses = .config.facts.ipaddresses"
refused='config "facts.provider-id": .* (is not the id of this task.s node|is not this task.s)'

for how in id_only with_ip; do
  evil create "${!how}" | expect_fail "$CT" "create over acme's node ($how)" "$refused"
  evil create "${!how} | .cleanup = true" | expect_fail "$CT" "create with cleanup ($how)" "$refused"
  evil confirm "${!how}" | expect_fail "$CT" "confirm ($how)" "$refused"
  evil delete "${!how}" | expect_fail "$CT" "delete ($how)" "$refused"
  [ "$(last '.result."provider-id" // empty')" = "" ] || fail "a refused task reported a provider-id: $(cat "$T/last.json")"
  acme_answers "after create, cleanup, confirm and delete ($how)"
done
pass "create (adopting, with cleanup), confirm and delete naming acme's node, with and without its addresses: refused ($(last .message))"

# Stop and resume: acme's node stopped by the host; evil's create naming it would resume it
# with evil's key.
lxc-stop -P "$CT_ROOT" -n "$VID" -k > /dev/null
for how in id_only with_ip; do
  evil create "${!how}" | expect_fail "$CT" "resume acme's stopped node ($how)" "$refused"
done
[ "$(lxc-info -P "$CT_ROOT" -n "$VID" -sH)" = STOPPED ] || fail "evil's refused create started acme's node"
[ "$(cat "$CT_ROOT/$VID/upper/root/.ssh/authorized_keys")" = "$VKEYS" ] || fail "evil's key is in acme's node"
ct_task create node-1 2 | run "$CT" || fail "acme's own resume: $(last .message)"
last .message | grep -q '^resumed' || fail "acme's create did not resume: $(last .message)"
VINIT=$(lxc-info -P "$CT_ROOT" -n "$VID" -pH)
acme_answers "after acme's own resume"
pass "a stopped node of acme's: evil's create naming it refused, nothing written; acme's own create resumes it"

# Guessing: the name the former ids had, from acme's tenant, cluster and node.
guess="ct-$(printf '%s' "$CT_ROOT" | md5sum | cut -c1-6)-acme-c1-node-1"
[ "$guess" != "$VID" ] || fail "acme's node id is its names: $VID"
[ ! -e "$CT_ROOT/$guess" ] || fail "a node named $guess exists"
evil delete ".config.facts = {\"provider-id\": \"$guess\"}" | expect_fail "$CT" "delete by the guessed name" "$refused"
[ "$(ct_id node-1 evil 9)" != "$VID" ] || fail "evil's node-1 and acme's node-1 have one id"
own=$(ct_id node-2 evil 9)
pass "ids are keyed: acme's is not its names ($guess), evil's own node-1 would be another ($(ct_id node-1 evil 9))"

# The owner record: a record naming acme under the id of evil's node (as if an id were
# shared): evil's tasks are refused without touching it.
jq -n --arg id "$own" '{id: $id, tenant: "acme", cluster: "c1", node: "node-1"}' > "$CT_ROOT/.owners/$own"
evil create | expect_fail "$CT" "create over a node recorded as acme's" "$refused"
evil delete | expect_fail "$CT" "delete of a node recorded as acme's" "$refused"
[ -f "$CT_ROOT/.owners/$own" ] || fail "the refused delete removed the record"
rm -f "$CT_ROOT/.owners/$own"
acme_answers "after the record check"
pass "a node whose owner record names another tenant: refused, the record kept"

# The automator pointed at this host through the bridge: the gateway is an address of the
# worker's host (its sshd, if it listens on the wildcard, answers there), never a node's.
gw="$CT_NET_PREFIX.1"
SERVICE=app task install node-1 1 5 ".config.service = {name: \"app\", action: {type: \"shell\",
  fields: {script: \"/bin/true\"}}} | .config.ipaddresses = {access_v4: \"$gw\", bind_v4: \"$gw\"}" |
  expect_fail "$SSHA" "the automator at the bridge's gateway" "refusing to connect to $gw: an address of this host"
acme_answers "after the automator's refusal"
pass "the ssh automator at the bridge's gateway $gw: refused before connecting"

# Evil's own node works as ever, and its delete leaves acme's.
evil create | run "$CT" || fail "evil's own create: $(last .message)"
[ "$(last '.result."provider-id"')" = "$own" ] || fail "evil's node is $(last '.result."provider-id"'), not $own"
evil delete ".config.facts = {\"provider-id\": \"$own\"}" | run "$CT" || fail "evil's own delete: $(last .message)"
acme_answers "after evil's own create and delete"
pass "the container provider acts only on the task's own node; acme's node-1 answers throughout"
