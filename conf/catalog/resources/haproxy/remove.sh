#!/bin/bash
# haproxy/remove: stop haproxy if it runs, remove its configuration.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir haproxy)
stop_pidfile "$D/run/haproxy.pid" haproxy
rm -rf "$D"
say "removed $D"
