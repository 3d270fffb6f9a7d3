#!/bin/bash
# base/install: the node's directories, and the tools every other script needs.
. lib/drover.sh
cat > /dev/null
for t in bash awk sed timeout setsid env; do
  command -v "$t" > /dev/null 2>&1 || die "\"$t\" is missing on the node"
done
mkdir -p "$R/srv/drover"
echo "${DROVER_NODE_ID:-}" > "$R/srv/drover/.base"
say "node ${DROVER_NODE_ID:-} ready at $IP (root ${R:-/})"
