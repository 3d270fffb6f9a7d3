#!/bin/bash
# zookeeper-server/install: Debian's zookeeper package and a JRE; this node's directories.
. lib/drover.sh
cat > /dev/null
ensure_pkg /usr/share/java/zookeeper.jar zookeeper
ensure_pkg /usr/bin/java default-jre-headless
D=$(svc_dir zookeeper)
mkdir -p "$D/conf" "$D/data" "$D/log" "$D/run"
say "installed in $D ($(java -version 2>&1 | head -n 1))"
