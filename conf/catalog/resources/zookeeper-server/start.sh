#!/bin/bash
# zookeeper-server/start: the server as a daemon of its own, until it answers ruok.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir zookeeper)
[ -f "$D/conf/zoo.cfg" ] || die "not configured ($D/conf/zoo.cfg is missing)"
port=$(cfg CLUSTER_ZOOKEEPER_CLIENT_PORT 2181)
if pid_alive "$D/run/zookeeper.pid"; then
  say "already running (pid $(cat "$D/run/zookeeper.pid"))"
else
  cp="$D/conf:/usr/share/java/zookeeper.jar"
  for j in slf4j-api slf4j-log4j12 log4j-1.2; do
    [ -f "/usr/share/java/$j.jar" ] && cp="$cp:/usr/share/java/$j.jar"
  done
  heap=$(cat "$D/conf/heap_mb" 2> /dev/null || echo 128)
  "${DAEMON_ENV[@]}" setsid java -Xms32m "-Xmx${heap}m" -XX:+UseSerialGC -Dzookeeper.log.dir="$D/log" \
    -Dlog4j.configuration="file:$D/conf/log4j.properties" -Dzookeeper.jmx.log4j.disable=true \
    -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$D/conf/zoo.cfg" \
    > "$D/log/stdout.log" 2>&1 < /dev/null &
  echo $! > "$D/run/zookeeper.pid"
fi
for _ in $(seq 600); do
  [ "$(fourlw "$IP" "$port" ruok)" = imok ] && break
  pid_alive "$D/run/zookeeper.pid" || die "the server exited: $(tail -n 3 "$D/log/zookeeper.log" 2> /dev/null)"
  sleep 0.1
done
[ "$(fourlw "$IP" "$port" ruok)" = imok ] || die "no imok from $IP:$port after 60 s"
say "running (pid $(cat "$D/run/zookeeper.pid")), answers ruok on $IP:$port"
