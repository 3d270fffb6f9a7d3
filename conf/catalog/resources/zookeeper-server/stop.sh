#!/bin/bash
# zookeeper-server/stop: SIGTERM the server (SIGKILL after 30 s).
. lib/drover.sh
cat > /dev/null
stop_pidfile "$(svc_dir zookeeper)/run/zookeeper.pid" zookeeper
