#!/bin/bash
# zookeeper-server/remove: stop the server if it runs, remove its data and configuration.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir zookeeper)
stop_pidfile "$D/run/zookeeper.pid" zookeeper
rm -rf "$D"
say "removed $D"
