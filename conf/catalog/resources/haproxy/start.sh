#!/bin/bash
# haproxy/start: haproxy daemonises itself; wait until its frontend answers.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir haproxy)
[ -f "$D/conf/haproxy.cfg" ] || die "not configured ($D/conf/haproxy.cfg is missing)"
port=$(cfg CLUSTER_HAPROXY_PORT 80)
if pid_alive "$D/run/haproxy.pid"; then
  say "already running (pid $(cat "$D/run/haproxy.pid"))"
else
  "${DAEMON_ENV[@]}" /usr/sbin/haproxy -f "$D/conf/haproxy.cfg" < /dev/null
fi
wait_tcp "$IP" "$port" 30 || die "nothing accepts connections on $IP:$port"
say "running (pid $(cat "$D/run/haproxy.pid")) on http://$IP:$port/"
