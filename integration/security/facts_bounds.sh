#!/usr/bin/env bash
# Issue 32: one tenant takes every address of the container bridge, or fills the host's disk
# through its nodes' writable layers. The host's settings bound each tenant (plugins/container,
# docs/plugins.md): here container.tenant_addresses = 2, container.node_disk = 64M (a node's
# layer: an ext4 image of its own), container.node_disk_max = 256M, container.tenant_disk =
# 192M. Tenant evil:
#  1. a third node while it holds two addresses: refused, naming the bound;
#  2. a node whose hardware type asks for 256M of disk while it has 64M: over its 192M,
#     refused; 128M fits;
#  3. a node filled from inside past its 64M layer: "No space left on device" in the node,
#     the layer's image on the host no larger than 64M;
# and tenant acme, beside it, creates its own node and it answers. Before the fix every
# create succeeded (until the range ran out for everyone) and a layer grew with the host's disk.
. "$DROVER_SOURCE_DIR/testlib/container.sh"

cat >> "$T/host.conf" << CONF
container.tenant_addresses = 2
container.node_disk = 64M
container.node_disk_max = 256M
container.tenant_disk = 192M
CONF
# evil TASK NODE [ATTEMPT [JQ]]: a task of tenant evil's cluster 9.
evil() { ct_task "$1" "$2" "${3:-1}" 3 ".tenant = \"evil\" | .clusterId = \"9\" | ${4:-.}"; }
made=()
evil_create() { # NODE [JQ]: created, its id in made
  evil create "$1" 1 "${2:-.}" | run "$CT" || fail "evil's create of $1: $(last .message)"
  made+=("$(last '.result."provider-id"')")
}
evil_create e-1
evil_create e-2

# 1. a third address
evil create e-3 | expect_fail "$CT" "a third node" \
  'tenant "evil" holds 2 of this host.s node addresses, its bound \(host config container.tenant_addresses = 2\)'
msg=$(last .message)
e3=$(ct_id e-3 evil 9)
[ ! -e "$CT_ROOT/$e3" ] && [ ! -e "$CT_ROOT/.owners/$e3" ] || fail "the refused create left something of $e3"
ct_create node-1 # acme's, beside evil's two
[ "$(on node-1 hostname)" = node-1 ] || fail "acme's node does not answer"
pass "1. a third address for evil: refused ($msg); acme's node is made and answers"

# 2. disk
evil delete e-2 1 ".config.facts = {\"provider-id\": \"${made[1]}\"}" | run "$CT" || fail "delete e-2: $(last .message)"
evil create e-3 1 '.config.disk = "256M"' | expect_fail "$CT" "256M more" \
  'tenant "evil" has 64 MiB of writable layers on this host; this node.s 256 MiB more is over its bound \(host config container.tenant_disk = 192M\)'
evil create e-3 1 '.config.disk = "300M"' | expect_fail "$CT" "over the node bound" 'over this host.s container.node_disk_max \(256M\)'
evil_create e-3 '.config.disk = "128M"'
pass "2. evil's layers bounded: 256M more refused, 300M over the node's bound refused, 128M fits"

# 3. a full layer: the node's problem, not the host's
id=${made[0]}
if ct_exec "$id" dd if=/dev/zero of=/root/fill bs=1M count=100 > "$T/dd.out" 2>&1; then
  fail "evil wrote 100 MiB into its 64M layer"
fi
grep -q "No space left on device" "$T/dd.out" || fail "dd: $(cat "$T/dd.out")"
used=$(du -k "$CT_ROOT/$id/layer.img" | cut -f1)
[ "$used" -le $((64 * 1024)) ] || fail "the layer's image takes $used KiB of the host's disk"
[ "$(on node-1 hostname)" = node-1 ] || fail "acme's node does not answer"
pass "3. a node filled past its layer: \"No space left on device\" inside, $used KiB on the host; acme's node answers"
