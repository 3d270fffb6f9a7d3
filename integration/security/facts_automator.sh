#!/usr/bin/env bash
# Issue 32: the automator pointed at the worker's own host. A task's node address is a fact
# of its provider's; a task that names 127.0.0.1 (or ::1, 0.0.0.0, an IPv4-mapped loopback,
# a name, an address of this host's interfaces) would send the ssh automator, and the
# cluster's key, to the host's own sshd. A listener on 127.0.0.1 stands for that sshd and
# records every connection:
#
#  1. the ssh automator with such an address (also 127.0.0.2 and the container bridge's
#     gateway): refused before connecting ("refusing to connect to 127.0.0.1: an address of
#     this host"), the listener saw nothing;
#  2. a tenant's ssh-pool listing this host as a pool host: its create refused the same way;
#  3. a host key that does not match: the error says what was expected, never the key the
#     host offered (it was an oracle of any reachable host's key).
#
# Tenant acme's loopback node answers throughout. Before the fix the automator connected to
# 127.0.0.1 and a mismatch printed the host's real fingerprint; until the second fix, any
# other address of 127.0.0.0/8 (127.0.0.2), where the host's wildcard sshd answers, was let
# through (now a loopback address is a node's only where a socket listens on exactly it).
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"

export DROVER_ZK_HOSTS="$DROVER_ZK"
lb_create node-1
acme_answers() { [ "$(on node-1 echo up 2> /dev/null)" = up ] || fail "$1: acme's node-1 does not answer"; }

# The host's "sshd": a listener on 127.0.0.1 that logs each connection and says an SSH banner.
HPORT=$(free_port)
setsid python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, a = s.accept()
    open(sys.argv[2], "a").write("connection from %s\n" % (a,))
    try: c.sendall(b"SSH-2.0-OpenSSH_9.2p1 host\r\n")
    except OSError: pass
    c.close()
' "$HPORT" "$T/host-sshd.log" > /dev/null 2>&1 < /dev/null &
echo $! > "$T/pids/host-sshd.pid"
poll_until 10 bash -c "exec 3<> /dev/tcp/127.0.0.1/$HPORT" || fail "the listener did not start"
poll_until 10 test -s "$T/host-sshd.log" || fail "the listener logged no probe"
: > "$T/host-sshd.log" # the probe's line gone: from here, a line is a connection of a plugin
untouched() { [ ! -s "$T/host-sshd.log" ] || fail "$1: the automator connected to this host: $(cat "$T/host-sshd.log")"; }

# 1. the automator
act() { # JQ: an install on acme's node-1 with JQ applied to its task
  SERVICE=app task install node-1 1 5 ".config.service = {name: \"app\", action: {type: \"shell\", fields: {script: \"/bin/true\"}}} | $1"
}
own=$(ip -o -4 addr show scope global 2> /dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1)
# the container bridge's gateway, when this host has the bridge (the container provider's)
gw=$(ip -o -4 addr show dev drvbr0 2> /dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1 || true)
for a in 127.0.0.1 127.0.0.2 127.1.2.3 ::1 0.0.0.0 ::ffff:127.0.0.1 ::ffff:127.0.0.2 localhost \
  ${own:+"$own"} ${gw:+"$gw"}; do
  act ".config.ipaddresses = {access_v4: \"$a\", bind_v4: \"$a\"} | .config.ssh_port = $HPORT" |
    expect_fail "$SSHA" "the automator at $a" "refusing to connect to \"?$a\"?: (an address of this host|a node is reached at the address)"
  untouched "$a"
done
acme_answers "after the automator's refusals"
pass "the ssh automator at 127.0.0.1, 127.0.0.2, 127.1.2.3 (no node listens there: the host's wildcard sshd would answer), ::1, 0.0.0.0, mapped loopbacks, a name${own:+, this host address $own}${gw:+, the bridge gateway $gw}: refused before connecting ($(last .message))"

# 2. a tenant's pool listing this host
hk="SHA256:$(head -c 32 /dev/zero | base64 | tr -d '=')"
ptask() { # ADDRESS NODE
  jq -cn --arg hk "$hk" --argjson port "$HPORT" --rawfile key "$T/cluster_key" --arg a "$1" \
    '{name: "mine", providertype: "ssh-pool", hosts: [{address: $a, port: $port,
      user: "root", host_key: $hk}], private_key: $key}' > "$T/pool.json"
  CLUSTER_ID=c7 task create "$2" 1 1 ".config.provider = $(cat "$T/pool.json")"
}
for a in 127.0.0.1 127.0.0.2; do
  ptask "$a" "p-${a##*.}" | expect_fail "$POOL" "a pool host that is this host ($a)" "refusing to connect to $a: an address of this host"
  untouched "the pool at $a"
done
acme_answers "after the pool"
pass "a tenant's pool naming this host: its create refused ($(last .message))"

# 3. a wrong host key: no oracle
real=$(kv node-1 .ssh_host_key)
from=$(($(wc -l < "$T/plugins.log") + 1))
act ".config.ssh_host_key = \"$hk\"" | expect_fail "$SSHA" "a wrong host key" "does not match the one expected \\($hk\\)"
last .message | grep -qF "$real" && fail "the error shows the host's real key: $(last .message)"
tail -n "+$from" "$T/plugins.log" | grep -qF "$real" &&
  fail "the plugin's standard error (the task log) shows the host's real key"
acme_answers "at the end"
pass "a host key mismatch names what was expected, never the key offered; acme's node answers"
