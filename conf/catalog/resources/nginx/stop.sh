#!/bin/bash
# nginx/stop: SIGTERM the master (fast shutdown), SIGKILL after 30 s.
. lib/drover.sh
cat > /dev/null
stop_pidfile "$(svc_dir nginx)/run/nginx.pid" nginx
