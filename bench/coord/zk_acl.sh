#!/usr/bin/env bash
# zk_acl: what droverd's start-up ACL walk costs (coord_acl_fixup; docs/zookeeper-tree.md
# "ACLs", docs/benchmarks.md "ZooKeeper ACLs").
#
#   DROVER_BUILD_DIR=build-rel scripts/with-stack -- bench/coord/zk_acl.sh [ZNODES]
#
# ZNODES (default 10,000) world-readable znodes, as an older droverd left them, are made with
# kazoo in one queue shard of tenant bench; then droverd starts with digest credentials twice:
# the first start closes every znode (two round trips each, a third to set it), the second
# finds them closed (two round trips each). Its own log says how long each walk took
# (event=acl-fixup ... ms=).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
n=${1:-10000}
PY=/usr/bin/python3 # the system's, with python3-kazoo

(umask 077 && echo "drover:$(openssl rand -hex 16)" > "$T/zk.digest")
"$PY" - "$DROVER_ZK" "$(cat "$T/zk.digest")" "$n" << 'PY'
import sys
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl, ACL, Id, Permissions
hosts, cred, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
user, pw = cred.split(":", 1)
zk = KazooClient(hosts=hosts, auth_data=[("digest", cred)])
zk.start(timeout=30)
old = [make_digest_acl(user, pw, all=True), ACL(Permissions.READ, Id("world", "anyone"))]
d = "/drover/queues/bench/default/items/s00"
zk.ensure_path(d, acl=old)
for i in range(0, n, 500):
    t = zk.transaction()
    for k in range(i, min(n, i + 500)):
        t.create(f"{d}/i4-{k:011x}-g{k}", b'{"task":"bench"}', acl=old)
    t.commit()
zk.stop()
PY

walk() { # NAME: start droverd-1 with credentials, print its walk, stop it
  start_droverd 1 "zookeeper.digest_file = $T/zk.digest"
  local line
  line=$(grep -o 'event=acl-fixup root=/drover znodes=[0-9]* changed=[0-9]* ms=[0-9]*' "$T/droverd-1.log" | tail -n 1)
  kill "$(pid_of droverd-1)"
  wait_exit droverd-1 30 > /dev/null
  local znodes="" changed="" ms=""
  [[ $line =~ znodes=([0-9]+)\ changed=([0-9]+)\ ms=([0-9]+) ]] &&
    znodes=${BASH_REMATCH[1]} changed=${BASH_REMATCH[2]} ms=${BASH_REMATCH[3]}
  echo "zk-acl: $1: $znodes znodes walked, $changed changed, in $ms ms:" \
    "$(echo "scale=3; $ms / $znodes" | bc) ms a znode"
}
walk "first start (a world-readable tree closed)"
walk "second start (nothing to change)"
