#!/bin/bash
# haproxy/stop: SIGTERM haproxy (SIGKILL after 30 s).
. lib/drover.sh
cat > /dev/null
stop_pidfile "$(svc_dir haproxy)/run/haproxy.pid" haproxy
