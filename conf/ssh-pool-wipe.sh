#!/bin/bash
# ssh-pool-wipe.sh: make a pool host clean for its next node (run by the ssh-pool
# provider's delete, as the pool's user): stop whatever the catalogue's
# services left running, and remove everything they own ($R/srv/drover).
# The operator's, never a tenant's (docs/security.md "Pools of existing hosts"):
# install it on the workers' hosts and name it in worker.provider_settings,
#   {"ssh-pool": {"wipe_script": "/etc/drover/ssh-pool-wipe.sh"}}
set -euo pipefail
R="${DROVER_NODE_ROOT-}"
for f in "$R"/srv/drover/*/run/*.pid; do
  [ -s "$f" ] || continue
  pid=$(cat "$f")
  kill -TERM "$pid" 2> /dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2> /dev/null || true
done
rm -rf "$R/srv/drover"
echo "wiped $R/srv/drover for node ${DROVER_NODE_ID:-} of cluster ${DROVER_CLUSTER_ID:-}"
