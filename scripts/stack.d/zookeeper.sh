# shellcheck shell=bash disable=SC2154 # dir, top and the options are scripts/stack's
# stack.d/zookeeper.sh: scripts/stack's ZooKeeper server, or ensemble of three (--ensemble),
# on loopback in DIR/zkN. Sourced by scripts/stack (common.sh first).
#
# ZooKeeper's JVM runs small (256 MB heap, serial collector) so that tests side by
# side stay light; DROVER_ZK_JVM replaces those flags (bench/run gives the engine
# benchmark a server-sized heap and the parallel collector).
#
# Every ZooKeeper server syncs a rejoining follower by snapshot only
# (zookeeper.forceSnapshotSync=true, zookeeper.snapshotSizeFactor=-1), never by DIFF:
# ZooKeeper 3.8.0 (Debian 12) loses acknowledged writes when a follower that took
# a DIFF sync, not yet on its disk, is elected after a second leader change
# (ZOOKEEPER-4646, -4785; seen in the long chaos run, docs/operations.md). A
# snapshot sync is written to the follower's disk before it acknowledges.
#
# Every server enforces ZooKeeper's quotas (zookeeper.enforceQuota=true): droverd sets a
# hard quota on each tenant's subtrees (docs/security.md "ZooKeeper quotas").
#
# With --ha each server also has a TLS client port for Patroni (stack.d/postgres.sh,
# make_tls): its ports are in ZK_SPORTS, listed as DROVER_ZK_TLS.

zk_ok() {
  # The four-letter word "ruok" over bash's /dev/tcp; the server answers "imok".
  local port=$1 addr=${2:-127.0.0.1} reply
  reply=$( (exec 3<>"/dev/tcp/$addr/$port" && printf ruok >&3 && timeout 2 cat <&3) 2>/dev/null || true)
  [ "$reply" = imok ]
}

zk_mode() {
  local port=$1 addr=${2:-127.0.0.1}
  ( (exec 3<>"/dev/tcp/$addr/$port" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null || true) |
    awk -F': ' '/^Mode/ {print $2}'
}

start_zk() {
  local n=$1 servers=$2 client_port=$3 secure_port=${4:-} addr=${5:-127.0.0.1}
  local zdir="$dir/zk$n"
  mkdir -p "$zdir/data"
  echo "$n" > "$zdir/data/myid"
  {
    echo "tickTime=500"
    echo "initLimit=20"
    echo "syncLimit=10"
    echo "dataDir=$zdir/data"
    echo "clientPort=$client_port"
    echo "clientPortAddress=$addr"
    echo "maxClientCnxns=0"
    echo "minSessionTimeout=1000"
    echo "maxSessionTimeout=60000"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,wchs"
    echo "autopurge.purgeInterval=1"
    echo "reconfigEnabled=false"
    if [ "$disk_sync" = 1 ]; then echo "forceSync=yes"; else echo "forceSync=no"; fi
    if [ -n "$secure_port" ]; then
      # A TLS client port for Patroni (make_tls): Netty serves both ports; a client's
      # certificate subject becomes its x509 identity (e.g. "CN=patroni"), which
      # Patroni's ACLs name.
      echo "secureClientPort=$secure_port"
      echo "secureClientPortAddress=$addr"
      echo "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"
      echo "ssl.keyStore.location=$dir/tls/zookeeper.keystore.pem"
      echo "ssl.keyStore.type=PEM"
      echo "ssl.trustStore.location=$dir/tls/ca.pem"
      echo "ssl.trustStore.type=PEM"
      echo "ssl.clientAuth=need"
      echo "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider"
    fi
    printf '%s' "$servers"
  } > "$zdir/zoo.cfg"
  # A private log4j config keeps the server's log in its own directory.
  cat > "$zdir/log4j.properties" <<EOF
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$zdir/zookeeper.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}@%L - %m%n
EOF
  local cp="$zdir:/usr/share/java/zookeeper.jar"
  for j in slf4j-api slf4j-log4j12 log4j-1.2; do
    [ -f "/usr/share/java/$j.jar" ] && cp="$cp:/usr/share/java/$j.jar"
  done
  if [ -n "$secure_port" ]; then
    for j in netty-buffer netty-codec netty-common netty-handler netty-resolver netty-transport \
      netty-transport-native-epoll netty-transport-native-unix-common; do
      [ -f "/usr/share/java/$j.jar" ] || die "/usr/share/java/$j.jar missing (ZooKeeper's TLS port needs Netty)"
      cp="$cp:/usr/share/java/$j.jar"
    done
  fi
  host_prefix "zk$n"
  # shellcheck disable=SC2086 # DROVER_ZK_JVM is a list of JVM options, split on purpose
  "${HX[@]}" setsid java ${DROVER_ZK_JVM:--Xms32m -Xmx256m -XX:+UseSerialGC} -Dzookeeper.log.dir="$zdir" \
    -Dlog4j.configuration="file:$zdir/log4j.properties" -Dzookeeper.jmx.log4j.disable=true \
    -Dzookeeper.forceSnapshotSync=true -Dzookeeper.snapshotSizeFactor=-1 \
    -Dzookeeper.enforceQuota=true \
    -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$zdir/zoo.cfg" \
    > "$zdir/stdout.log" 2>&1 < /dev/null &
  echo $! > "$dir/pids/zk$n.pid"
}

# zk_start_all COUNT: reserve the ports of COUNT servers (and their TLS ports with --ha)
# and start them; sets ZK_ADDRS, ZK_CPORTS, ZK_SPORTS (arrays, from 1), ZK_HOSTS and ZK_TLS
# (the client strings). On hosts (--hosts), server N is host zkN (made before, for make_tls)
# with ZooKeeper's standard ports.
zk_start_all() {
  local count=$1 n servers="" a
  ZK_HOSTS="" ZK_TLS=""
  ZK_ADDRS=() ZK_CPORTS=() ZK_SPORTS=()
  for n in $(seq 1 "$count"); do
    ZK_SPORTS[n]=
    if hosts_on; then
      a=$(host_addr "zk$n")
      ZK_ADDRS[n]=$a
      ZK_CPORTS[n]=2181
      [ "$ha" = 1 ] && ZK_SPORTS[n]=2281
      [ "$count" -gt 1 ] && servers="${servers}server.$n=$a:2888:3888"$'\n'
    else
      a=127.0.0.1
      ZK_ADDRS[n]=$a
      ZK_CPORTS[n]=$(reserve_port)
      [ "$ha" = 1 ] && ZK_SPORTS[n]=$(reserve_port)
      if [ "$count" -gt 1 ]; then
        servers="${servers}server.$n=127.0.0.1:$(reserve_port):$(reserve_port)"$'\n'
      fi
    fi
    [ "$ha" = 1 ] && ZK_TLS="${ZK_TLS:+$ZK_TLS,}$a:${ZK_SPORTS[$n]}"
    ZK_HOSTS="${ZK_HOSTS:+$ZK_HOSTS,}$a:${ZK_CPORTS[$n]}"
  done
  for n in $(seq 1 "$count"); do
    start_zk "$n" "$servers" "${ZK_CPORTS[$n]}" "${ZK_SPORTS[$n]}" "${ZK_ADDRS[$n]}"
  done
}

# zk_wait_all COUNT: until every server answers and (ensemble) one of them leads; the stack
# goes down and the command fails after 60 s.
zk_wait_all() {
  local count=$1 n deadline=$((SECONDS + 60)) ok
  while :; do
    ok=1
    for n in $(seq 1 "$count"); do
      zk_ok "${ZK_CPORTS[$n]}" "${ZK_ADDRS[$n]}" || ok=0
      [ "$count" -gt 1 ] && [ -z "$(zk_mode "${ZK_CPORTS[$n]}" "${ZK_ADDRS[$n]}")" ] && ok=0
    done
    [ "$ok" = 1 ] && break
    if [ $SECONDS -ge $deadline ]; then
      for n in $(seq 1 "$count"); do tail -n 20 "$dir/zk$n/zookeeper.log" >&2 || true; done
      cmd_down
      die "zookeeper did not start"
    fi
    sleep 0.2
  done
}

# zk_status: each server of stack.env's DROVER_ZK, and its TLS ports; status 1 when one
# does not answer.
zk_status() {
  local hp rc=0
  for hp in ${DROVER_ZK//,/ }; do
    if zk_ok "${hp##*:}" "${hp%:*}"; then
      printf 'zookeeper    %s  imok %s\n' "$hp" "$(zk_mode "${hp##*:}" "${hp%:*}")"
    else
      printf 'zookeeper    %s  not answering\n' "$hp"
      rc=1
    fi
  done
  # Under Patroni: ZooKeeper's TLS ports, Patroni's only way in (make_tls).
  for hp in ${DROVER_ZK_TLS//,/ }; do
    printf 'zookeeper    %s  tls, for Patroni (x509)\n' "$hp"
  done
  return $rc
}
