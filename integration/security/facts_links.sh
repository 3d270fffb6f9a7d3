#!/usr/bin/env bash
# Issue 32: a symlink planted in a node's writable layer before a resume. The root of a
# container node of tenant evil (uid 1000000 on the host) makes absolute links in its own
# tree: /etc/hostname and /etc/hosts to files of the host, /root/.ssh to a directory of the
# host. The node is stopped (as a host reboot stops it) and its create runs again (a resume),
# whose root prepare step writes the node's hostname, hosts and authorized_keys and sets
# owners and modes in that tree. Before the fix the host's files were overwritten and the
# host's directory given to uid 1000000 with evil's key in it: root on the host.
#
# Now every path goes through ctlayer (openat2, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS):
# the directory link is refused with a clear error naming it (the node stays stopped), the
# host's files and directory keep their content, owner and mode; once the node's own link
# is gone its resume replaces the file links in its own tree, never writing through them;
# tenant acme's node on the same host answers throughout.
. "$DROVER_SOURCE_DIR/testlib/container.sh"

ct_create node-1 # acme's
ct_task create node-2 1 2 '.tenant = "evil" | .clusterId = "9"' | run "$CT" || fail "evil's create: $(last .message)"
EID=$(last '.result."provider-id"')
EADDR=$(jq -r .address "$CT_ROOT/$EID/node.json")
AINIT=$(lxc-info -P "$CT_ROOT" -n "$(kv node-1 '."provider-id"')" -pH)
acme_answers() {
  [ "$(on node-1 hostname 2> /dev/null)" = node-1 ] || fail "$1: acme's node-1 does not answer"
  [ "$(lxc-info -P "$CT_ROOT" -n "$(kv node-1 '."provider-id"')" -pH)" = "$AINIT" ] || fail "$1: acme's node-1 restarted"
}

# The host's files the links point at (the test's own, standing for /etc/shadow, /root/.ssh).
mkdir -p "$T/host/dot-ssh"
echo "host secret" > "$T/host/shadow"
echo "host hosts" > "$T/host/hosts"
echo "the host's own key" > "$T/host/dot-ssh/authorized_keys"
chmod 0640 "$T/host/shadow"
chmod 0755 "$T/host/dot-ssh"
state() { stat -c '%n %u:%g %a %s' "$T/host/shadow" "$T/host/hosts" "$T/host/dot-ssh" "$T/host/dot-ssh/authorized_keys"; md5sum "$T"/host/shadow "$T"/host/hosts "$T"/host/dot-ssh/authorized_keys; ls -a "$T/host/dot-ssh"; }
before=$(state)

# evil's root plants the links in its own tree (inside the node: its own user namespace).
ct_exec "$EID" sh -c "ln -sfn '$T/host/shadow' /etc/hostname && ln -sfn '$T/host/hosts' /etc/hosts &&
  rm -rf /root/.ssh && ln -sfn '$T/host/dot-ssh' /root/.ssh" || fail "planting the links"
[ -L "$CT_ROOT/$EID/upper/root/.ssh" ] || fail "no link in evil's layer"
lxc-stop -P "$CT_ROOT" -n "$EID" -k > /dev/null

# The resume: evil's create again (attempt 2), as its retry or a restart would run it.
ct_task create node-2 2 2 '.tenant = "evil" | .clusterId = "9"' |
  expect_fail "$CT" "a resume over planted links" \
    "the node's writable layer: root/.ssh: a symbolic link, a mount point or \"..\" in the node's tree: not followed"
msg=$(last .message)
[ "$(state)" = "$before" ] || fail "the host's files changed: $(diff <(echo "$before") <(state))"
[ -L "$CT_ROOT/$EID/upper/root/.ssh" ] || fail "the directory link was changed"
[ "$(lxc-info -P "$CT_ROOT" -n "$EID" -sH)" = STOPPED ] || fail "evil's node was started"
acme_answers "after evil's resume"
pass "a resume over planted links: \"$msg\"; the host's files and directory untouched"

# Evil undoes its link (by hand, as its root could once the node runs): the resume goes on.
rm -f "$CT_ROOT/$EID/upper/root/.ssh"
ct_task create node-2 3 2 '.tenant = "evil" | .clusterId = "9"' | run "$CT" || fail "evil's resume without links: $(last .message)"
last .message | grep -q '^resumed' || fail "not resumed: $(last .message)"
[ "$(state)" = "$before" ] || fail "the host's files changed"
for f in etc/hostname etc/hosts; do
  [ ! -L "$CT_ROOT/$EID/upper/$f" ] || fail "$f is still a link"
done
grep -qx node-2 "$CT_ROOT/$EID/upper/etc/hostname" || fail "etc/hostname was not written in the node's own tree"
timeout 10 bash -c "exec 3<> /dev/tcp/$EADDR/22" || fail "evil's node does not listen after its resume"
acme_answers "at the end"
pass "planted links never followed by the root plugin; acme's node answers throughout"
