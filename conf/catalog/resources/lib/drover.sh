# lib/drover.sh: what the shipped catalogue's action scripts share (bash).
#
# Every script runs on its node through the ssh automator (docs/plugins.md):
# its working directory is the uploaded resources, the task's config is on
# standard input and in DROVER_CFG_* variables. Paths on the node are below
# DROVER_NODE_ROOT: a loopback node's own root, "" on a real host. Everything
# a service owns lives in $R/srv/drover/<service>, so that removing a service,
# or wiping a pool host, is removing that directory.
set -euo pipefail

R="${DROVER_NODE_ROOT-}"
IP="${DROVER_IP:?the node has no address (DROVER_IP)}"
SVC="${DROVER_SERVICE:-}"

say() { echo "$SVC/${DROVER_TASK:-}: $*"; }
die() {
  echo "$SVC/${DROVER_TASK:-}: $*" >&2
  exit 1
}

# svc_dir NAME: the directory that holds everything of service NAME on this node.
svc_dir() { echo "$R/srv/drover/$1"; }

# ensure_pkg FILE PACKAGE: the file is there, or (on a real host with apt)
# install the Debian package. A loopback node uses its host's packages as they
# are: scripts/deps installs them.
ensure_pkg() {
  local bin=$1 pkg=$2
  [ -e "$bin" ] && return 0
  if [ -z "$R" ] && command -v apt-get > /dev/null 2>&1; then
    say "installing $pkg"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" > /dev/null
  fi
  [ -e "$bin" ] || die "$bin is missing: install the Debian package $pkg"
}

# pid_alive FILE: the pid in FILE runs.
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2> /dev/null; }

# stop_pidfile FILE NAME: SIGTERM, up to 30 s, then SIGKILL; the file goes.
stop_pidfile() {
  local f=$1 name=$2 pid i
  if ! pid_alive "$f"; then
    rm -f "$f"
    say "$name is not running"
    return 0
  fi
  pid=$(cat "$f")
  kill -TERM "$pid" 2> /dev/null || true
  for i in $(seq 300); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2> /dev/null; then
    say "$name (pid $pid) ignored SIGTERM for 30 s: SIGKILL"
    kill -KILL "$pid" 2> /dev/null || true
  fi
  rm -f "$f"
  say "$name stopped"
}

# "${DAEMON_ENV[@]}" CMD...: run CMD with a minimal environment (the task's
# config, secrets included, does not stay in a long-lived process's
# environment). An array, not a function: `"${DAEMON_ENV[@]}" cmd &` keeps $!
# the daemon's own pid.
DAEMON_ENV=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)

# wait_tcp ADDR PORT SECONDS: until something accepts connections there.
wait_tcp() {
  local addr=$1 port=$2 limit=$3 i
  for i in $(seq $((limit * 10))); do
    if (exec 3<> "/dev/tcp/$addr/$port") 2> /dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

# fourlw ADDR PORT WORD: a ZooKeeper four-letter word's answer ("" when none).
fourlw() {
  (exec 3<> "/dev/tcp/$1/$2" && printf '%s' "$3" >&3 && timeout 5 cat <&3) 2> /dev/null || true
}

# cfg NAME [DEFAULT]: DROVER_CFG_<NAME> (the cluster config's value), or DEFAULT.
cfg() {
  local v="DROVER_CFG_$1"
  if [ -n "${!v-}" ]; then
    printf '%s' "${!v}"
  elif [ $# -ge 2 ]; then
    printf '%s' "$2"
  else
    die "the cluster config has no value for ${1,,} (DROVER_CFG_$1)"
  fi
}
