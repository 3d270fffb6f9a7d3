#!/usr/bin/env bash
# Issue 32, "every provider checks ownership", for the loopback provider (root on this host):
# tenant acme's loopback node-1 runs; tasks of tenant evil's cluster c9 (its node-1), and of
# acme's own node-2, name it by its provider-id, as a task could if anything upstream let a
# tenant's value through (the plugin is run directly, as a worker runs it):
#
#   create    with and without its ipaddresses, and with cleanup (which would kill it);
#   confirm   of it (a log-in would report its facts as evil's);
#   delete    of it, by evil and by acme's node-2;
#   no names  a create with neither nodeId nor tenant (only an operator's delete by id may).
#
# Each is refused before anything is done ("config "facts.provider-id": ... is not the id of
# this task's node"), and acme's node answers afterwards with the same sshd. The node's id is
# a function of the task's tenant, cluster and node (plugins/loopback/loopback.c, check);
# security_facts_owner holds the same for the container provider. A guard: the check came
# with the container provider's (45a746a) and had no test of its own.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"

lb_create node-1
VID=$(kv node-1 '."provider-id"')
sshd_pid() { jq -r .sshd_pid "$T/nodes/$VID/node.json" 2> /dev/null || true; }
VPID=$(sshd_pid)
[ -n "$VPID" ] && [ "$VPID" != null ] || fail "acme's node.json names no sshd pid"
acme_answers() { # WHAT
  [ "$(on node-1 echo up 2> /dev/null)" = up ] || fail "$1: acme's node-1 does not answer"
  [ -d "$T/nodes/$VID" ] || fail "$1: acme's node directory is gone"
  [ "$(sshd_pid)" = "$VPID" ] && kill -0 "$VPID" 2> /dev/null || fail "$1: acme's sshd changed or died"
}
acme_answers "before"
refused='config "facts.provider-id": ".*" is not the id of this task.s node'

# evil TASK [JQ]: a task of tenant evil's cluster c9, node-1, with acme's node-1's facts.
evil() { task "$1" node-1 1 3 ".tenant = \"evil\" | .clusterId = \"c9\" | ${2:-.}"; }
evil create | expect_fail "$LB" "evil's create naming acme's node" "$refused"
evil create 'del(.config.ipaddresses)' | expect_fail "$LB" "evil's create, no addresses" "$refused"
evil create '.cleanup = true' | expect_fail "$LB" "evil's create with cleanup" "$refused"
evil confirm | expect_fail "$LB" "evil's confirm" "$refused"
evil delete | expect_fail "$LB" "evil's delete" "$refused"
acme_answers "after evil's tasks"
pass "evil's create (with and without addresses, with cleanup), confirm and delete naming acme's node: refused"

CLUSTER_ID=c1 task delete node-2 1 4 ".config.\"provider-id\" = \"$VID\"" |
  expect_fail "$LB" "acme's node-2 deleting node-1" "$refused"
task create node-1 1 5 'del(.tenant) | .nodeId = ""' |
  expect_fail "$LB" "a create naming no node and no tenant" 'only an operator.s delete'
acme_answers "at the end"
pass "another node of acme's own cluster, and a task naming no node: refused; acme's node-1 answers with the same sshd"
