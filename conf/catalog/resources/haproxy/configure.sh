#!/bin/bash
# haproxy/configure: a frontend on this node's address, round robin over the
# cluster's nginx nodes (the cluster config's "backends", from the macro
# %join(map(ip.access_v4.service.nginx,'$'),' ')%), health-checked on /health.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir haproxy)
[ -d "$D" ] || die "not installed ($D is missing)"
port=$(cfg CLUSTER_HAPROXY_PORT 80)
bport=$(cfg CLUSTER_HAPROXY_BACKEND_PORT 80)
read -r -a backends <<< "$(cfg CLUSTER_HAPROXY_BACKENDS)"
[ ${#backends[@]} -gt 0 ] || die "no backends"
for b in "${backends[@]}"; do
  case "$b" in *%*) die "backend \"$b\" is an unexpanded macro" ;; esac
done
{
  echo "# written by Drover's haproxy/configure for node ${DROVER_NODE_ID:-}"
  echo "global"
  echo "    daemon"
  echo "    maxconn 256"
  echo "    pidfile $D/run/haproxy.pid"
  echo "defaults"
  echo "    mode http"
  echo "    timeout connect 5s"
  echo "    timeout client 30s"
  echo "    timeout server 30s"
  echo "frontend web"
  echo "    bind $IP:$port"
  echo "    default_backend nginx"
  echo "backend nginx"
  echo "    balance roundrobin"
  echo "    option httpchk GET /health"
  i=1
  for b in "${backends[@]}"; do
    echo "    server web$i $b:$bport check inter 1s"
    i=$((i + 1))
  done
} > "$D/conf/haproxy.cfg.new"
/usr/sbin/haproxy -c -q -f "$D/conf/haproxy.cfg.new" || die "haproxy refuses the configuration"
mv "$D/conf/haproxy.cfg.new" "$D/conf/haproxy.cfg"
say "frontend $IP:$port, ${#backends[@]} backends: ${backends[*]}"
