#!/bin/bash
# zookeeper-server/configure: zoo.cfg for this node's server, bound to its
# address; the ensemble's members are the cluster config's "servers" (from the
# macro %join(map(ip.access_v4.service.zookeeper-server,'$'),' ')%), in the
# order that %instance.self.service.zookeeper-server% numbers them.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir zookeeper)
[ -d "$D" ] || die "not installed ($D is missing)"
servers=$(cfg CLUSTER_ZOOKEEPER_SERVERS)
myid=$(cfg CLUSTER_ZOOKEEPER_MYID)
port=$(cfg CLUSTER_ZOOKEEPER_CLIENT_PORT 2181)
qport=$(cfg CLUSTER_ZOOKEEPER_QUORUM_PORT 2888)
eport=$(cfg CLUSTER_ZOOKEEPER_ELECTION_PORT 3888)
tick=$(cfg CLUSTER_ZOOKEEPER_TICK_MS 2000)
case "$myid" in '' | *[!0-9]*) die "myid \"$myid\" is not a number (an unexpanded macro?)" ;; esac
read -r -a list <<< "$servers"
[ "${list[$((myid - 1))]:-}" = "$IP" ] ||
  die "server $myid of \"$servers\" is not this node's address $IP"
{
  echo "# written by Drover's zookeeper-server/configure for node ${DROVER_NODE_ID:-}"
  echo "tickTime=$tick"
  echo "initLimit=20"
  echo "syncLimit=10"
  echo "dataDir=$D/data"
  echo "clientPort=$port"
  echo "clientPortAddress=$IP"
  echo "maxClientCnxns=0"
  echo "admin.enableServer=false"
  echo "4lw.commands.whitelist=ruok,srvr,stat,mntr,conf"
  echo "reconfigEnabled=false"
  echo "quorumListenOnAllIPs=false"
  i=1
  for s in "${list[@]}"; do
    echo "server.$i=$s:$qport:$eport"
    i=$((i + 1))
  done
} > "$D/conf/zoo.cfg.new"
echo "$myid" > "$D/data/myid"
cat > "$D/conf/log4j.properties" << EOL
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$D/log/zookeeper.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}@%L - %m%n
EOL
mv "$D/conf/zoo.cfg.new" "$D/conf/zoo.cfg"
echo "${DROVER_CFG_CLUSTER_ZOOKEEPER_HEAP_MB:-128}" > "$D/conf/heap_mb"
say "server $myid of ${#list[@]} on $IP:$port (ensemble: $servers)"
