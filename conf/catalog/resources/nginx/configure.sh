#!/bin/bash
# nginx/configure: a server on this node's address serving a page that names
# the node (so that a client can tell the backends behind HAProxy apart), and
# /health for checks.
. lib/drover.sh
cat > /dev/null
D=$(svc_dir nginx)
[ -d "$D" ] || die "not installed ($D is missing)"
port=$(cfg CLUSTER_NGINX_PORT 80)
message=$(cfg CLUSTER_NGINX_MESSAGE "Hello from Drover")
# On a loopback node the files are in the node's directory, readable by root only.
user=www-data
[ -n "$R" ] && user=root
cat > "$D/conf/nginx.conf.new" << EOL
# written by Drover's nginx/configure for node ${DROVER_NODE_ID:-}
user $user;
worker_processes 1;
pid $D/run/nginx.pid;
error_log $D/log/error.log;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    access_log $D/log/access.log;
    client_body_temp_path $D/tmp/body;
    proxy_temp_path $D/tmp/proxy;
    fastcgi_temp_path $D/tmp/fastcgi;
    uwsgi_temp_path $D/tmp/uwsgi;
    scgi_temp_path $D/tmp/scgi;
    server {
        listen $IP:$port;
        root $D/www;
        location = /health { default_type text/plain; return 200 "ok\n"; }
        location / { index index.html; }
    }
}
EOL
printf '%s\n' "node=${DROVER_NODE_ID:-} address=$IP message=$message" > "$D/www/index.html"
/usr/sbin/nginx -t -q -e "$D/log/error.log" -c "$D/conf/nginx.conf.new" ||
  die "nginx refuses the configuration"
mv "$D/conf/nginx.conf.new" "$D/conf/nginx.conf"
say "serving $D/www on $IP:$port"
