# shellcheck shell=bash disable=SC2154 # dir, top and the options are scripts/stack's
# stack.d/host.sh: what scripts/stack owns on the host beside its servers: the container
# nodes that tests and scripts/run made, the tests' address-range reservations, and the
# sweep of stacks whose owner died. Sourced by scripts/stack (common.sh first).
#
# Container nodes: a stack whose tests (testlib/container.sh) or whose
# scripts/run made container nodes has their host settings in DIR/host.conf
# (container.root, container.bridge). `down` deletes every node of that root through the
# container plugin's own delete, by the node's name (its container, overlay mount, veth,
# cgroups, files and address claim; no process is killed but the node's own), then the
# bridge once no port is left on it, and releases the address-range reservations
# (/tmp/drover-*-nets) that name DIR. A stack whose owner died without a `down` (its
# with-stack and the reaper both SIGKILLed) is swept by the next `up` on this machine, or
# by `sweep`: `up --owner PID` (scripts/with-stack passes its own pid) records the owner's
# pid and start time in DIR/owner and registers DIR under /tmp/drover-stacks; a registered
# stack whose owner is gone (no such pid, or another process under it) is taken down as
# above, its processes stopped by their recorded pids.

# conf_get KEY FILE: the last value of "KEY = value" in a host config file.
conf_get() { sed -n "s/^[[:space:]]*${1//./\\.}[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p" "$2" | tail -n 1; }

# sweep_containers: delete every container node of DIR/host.conf's root (the plugin's own
# delete, by name), then the bridge when no port is left on it.
sweep_containers() {
  local conf="$dir/host.conf" root bridge id plugin="$top/plugins/container/container"
  [ -f "$conf" ] || return 0
  root=$(conf_get container.root "$conf")
  bridge=$(conf_get container.bridge "$conf")
  # On hosts (scripts/run --hosts), the nodes' bridge and veths are on the host "nodes".
  local nsx=()
  [ -f "$dir/hosts/nodes" ] && hosts_on && nsx=(nsenter --net="/run/netns/$(host_ns nodes)" --)
  if [ -n "$root" ] && [ -d "$root" ]; then
    # The nodes: their directories, and the claims and owner records of any whose
    # directory is gone (the operator's delete by id: plugins/container).
    for id in $({ find "$root" -mindepth 1 -maxdepth 1 -name 'ct-*' -printf '%f\n'
      find "$root/.owners" -mindepth 1 -maxdepth 1 -name 'ct-*' -printf '%f\n' 2> /dev/null
      cat "$root"/.addresses/* 2> /dev/null || true; } | sort -u); do
      [[ $id =~ ^ct-[A-Za-z0-9_.-]+$ ]] || continue
      if jq -cn --arg id "$id" '{taskId: "0.0.1", taskName: "delete", config: {provider:
        {name: "container", providertype: "container"}, facts: {"provider-id": $id}}}' |
        DROVER_HOST_CONF="$conf" "${nsx[@]}" "$plugin" > /dev/null 2>> "$dir/sweep.log"; then
        say "container node $id deleted"
      else
        say "container node $id: delete failed (see $dir/sweep.log)"
      fi
    done
  fi
  if [ -n "$bridge" ] && ip link show "$bridge" > /dev/null 2>&1 &&
    [ -z "$(ls "/sys/class/net/$bridge/brif" 2> /dev/null)" ]; then
    ip link del "$bridge" 2> /dev/null && say "bridge $bridge deleted"
  fi
  return 0
}

# release_nets: the test address ranges (testlib/plugins.sh, container.sh) reserved for DIR.
release_nets() {
  local o
  for o in /tmp/drover-container-nets/*/owner /tmp/drover-loopback-nets/*/owner; do
    [ -f "$o" ] && [ "$(cat "$o" 2> /dev/null)" = "$dir" ] && rm -rf "$(dirname "$o")"
  done
  return 0
}

# owner_alive DIR: the stack's recorded owner still runs (or none was recorded).
owner_alive() {
  local pid st
  read -r pid st < "$1/owner" 2> /dev/null || return 0
  [ -n "$pid" ] && [ "$(start_of "$pid")" = "$st" ]
}

# sweep_dead: take down every registered stack whose owner is gone.
sweep_dead() {
  local e d
  [ -d "$STACKS" ] || return 0
  for e in "$STACKS"/*; do
    [ -f "$e" ] || continue
    d=$(cat "$e" 2> /dev/null) || continue
    if [ ! -d "$d" ]; then
      rm -f "$e"
      continue
    fi
    owner_alive "$d" && continue
    say "sweeping $d: its owner $(cut -d' ' -f1 "$d/owner" 2> /dev/null) is gone"
    "$0" down --dir "$d" || say "sweeping $d failed"
    rm -f "$e"
  done
}
