#!/bin/bash
# nginx/remove: stop nginx if it runs, remove its pages, logs and configuration.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir nginx)
stop_pidfile "$D/run/nginx.pid" nginx
rm -rf "$D"
say "removed $D"
