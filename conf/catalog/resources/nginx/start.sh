#!/bin/bash
# nginx/start: nginx daemonises itself; wait until /health answers.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir nginx)
[ -f "$D/conf/nginx.conf" ] || die "not configured ($D/conf/nginx.conf is missing)"
port=$(cfg CLUSTER_NGINX_PORT 80)
if pid_alive "$D/run/nginx.pid"; then
  say "already running (pid $(cat "$D/run/nginx.pid"))"
else
  "${DAEMON_ENV[@]}" /usr/sbin/nginx -e "$D/log/error.log" -c "$D/conf/nginx.conf" < /dev/null
fi
for _ in $(seq 300); do
  [ "$(curl -s -m 2 "http://$IP:$port/health" || true)" = ok ] && break
  sleep 0.1
done
[ "$(curl -s -m 2 "http://$IP:$port/health" || true)" = ok ] || die "no answer on http://$IP:$port/health"
say "running (pid $(cat "$D/run/nginx.pid")) on http://$IP:$port/"
