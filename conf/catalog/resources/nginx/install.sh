#!/bin/bash
# nginx/install: Debian's nginx package; this node's directories.
. lib/drover.sh
cat > /dev/null
ensure_pkg /usr/sbin/nginx nginx
D=$(svc_dir nginx)
mkdir -p "$D/conf" "$D/www" "$D/log" "$D/run" "$D/tmp"
say "installed in $D ($(/usr/sbin/nginx -v 2>&1))"
