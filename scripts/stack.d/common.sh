# shellcheck shell=bash disable=SC2154 # dir, top and the options are scripts/stack's
# stack.d/common.sh: what every server of scripts/stack shares: messages, the ports it
# reserves, the pids it records and how it stops them. Sourced by scripts/stack, which sets
# `dir` (the state directory) and PORT_LOCKS before calling anything here.
#
# Ports: each server takes random free ports in 15000-32000 (below Linux's
# ephemeral range), reserved by an atomic mkdir under /tmp/drover-ports so that
# stacks started side by side never pick the same one.
#
# Pids: everything the stack starts (and everything scripts/run starts later) records its
# pid in DIR/pids/NAME.pid; stop_pid stops exactly that pid, after checking that it still is
# the process that was started (its command line mentions DIR), and never anything else.

die() { echo "stack: $*" >&2; exit 1; }

say() { echo "stack: $*" >&2; }

# reserve_port: print a free port and keep it reserved for this stack.
reserve_port() {
  mkdir -p "$PORT_LOCKS"
  chmod 1777 "$PORT_LOCKS" 2>/dev/null || true
  local p
  for _ in $(seq 1 200); do
    p=$((15000 + RANDOM % 17000))
    if mkdir "$PORT_LOCKS/$p" 2>/dev/null; then
      if port_busy "$p"; then
        rmdir "$PORT_LOCKS/$p"
        continue
      fi
      echo "$dir" > "$PORT_LOCKS/$p/owner"
      echo "$p" >> "$dir/ports"
      echo "$p"
      return 0
    fi
    # A reservation whose stack directory is gone is stale: take it over.
    if [ -f "$PORT_LOCKS/$p/owner" ] && [ ! -d "$(cat "$PORT_LOCKS/$p/owner" 2>/dev/null)" ] &&
      ! port_busy "$p"; then
      echo "$dir" > "$PORT_LOCKS/$p/owner"
      echo "$p" >> "$dir/ports"
      echo "$p"
      return 0
    fi
  done
  die "no free port found"
}

port_busy() {
  # Anything listening on the port, on any address?
  ss -Htln "sport = :$1" 2>/dev/null | grep -q . && return 0
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
  return 1
}

release_ports() {
  [ -f "$dir/ports" ] || return 0
  local p
  while read -r p; do
    [ -n "$p" ] || continue
    if [ "$(cat "$PORT_LOCKS/$p/owner" 2>/dev/null)" = "$dir" ]; then
      rm -rf "${PORT_LOCKS:?}/$p"
    fi
  done < "$dir/ports"
  rm -f "$dir/ports"
}

# pid_alive NAME: the recorded pid runs and is still ours.
pid_alive() {
  local f="$dir/pids/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir"
}

stop_pid() {
  local name=$1 sig=${2:-TERM} f="$dir/pids/$1.pid" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if pid_alive "$name" || { [ "$name" = pg ] && [ -d "/proc/$pid" ]; }; then
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      [ -d "/proc/$pid" ] || break
      # A zombie child of ours counts as gone.
      [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
      say "$name (pid $pid) ignored SIG$sig; killing"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$f"
}

# start_of PID: the process's start time (clock ticks after boot), empty when there is none.
start_of() { sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | awk '{print $20}'; }
