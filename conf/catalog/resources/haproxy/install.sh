#!/bin/bash
# haproxy/install: Debian's haproxy package; this node's directories.
. lib/drover.sh
cat > /dev/null
ensure_pkg /usr/sbin/haproxy haproxy
D=$(svc_dir haproxy)
mkdir -p "$D/conf" "$D/run"
say "installed in $D ($(/usr/sbin/haproxy -v | head -n 1))"
