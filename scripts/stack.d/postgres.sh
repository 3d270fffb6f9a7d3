# shellcheck shell=bash disable=SC2154 # dir, top and the options are scripts/stack's
# stack.d/postgres.sh: scripts/stack's PostgreSQL: one server (DIR/pg), or with --ha three
# (--pg-nodes N) under Patroni on the stack's own ZooKeeper ensemble (DIR/pgN). Sourced by
# scripts/stack (common.sh first).
#
# PostgreSQL runs as the unprivileged user "postgres" when invoked as root
# (initdb refuses root); the database "drover" belongs to the superuser
# "drover", reached over TCP on 127.0.0.1. Every connection, the local socket's
# included, needs the superuser's password (scram-sha-256; issue 32: no local
# user is trusted): a random one per stack, in DIR/pg.pass (0600, a libpq
# password file: DROVER_PG names it with passfile=, and stack.env exports it as
# PGPASSFILE, so that psql, psycopg2 and droverd started from the stack's
# environment find it).
#
# --ha: PostgreSQL made highly available by Patroni on the stack's own
# ZooKeeper ensemble (implies --ensemble): N PostgreSQL servers (--pg-nodes,
# default 3), each under its own Patroni (pid file pids/patroniN.pid; Patroni
# starts and stops its postgres), synchronous replication in strict mode, and
# a libpq multi-host DROVER_PG with target_session_attrs=read-write, so that
# clients find the primary by themselves. `down` stops each Patroni (which
# stops its postgres) before ZooKeeper, and then any postgres that Patroni
# left behind (its postmaster.pid, checked to be this stack's). See
# docs/operations.md, "PostgreSQL under Patroni".
#
# --ha also closes Patroni's znodes: Patroni 3.0 sets ACLs only for x509
# identities, so the stack makes a private CA and certificates with openssl
# (DIR/tls, keys 0600: the servers' for ZooKeeper, CN=patroni for every
# Patroni, CN=operator for a person), gives each ZooKeeper server a TLS client
# port on 127.0.0.1 beside its plain one (Netty, X509AuthenticationProvider),
# and has Patroni connect over TLS with its certificate and create its znodes
# with ACLs x509:CN=patroni all, x509:CN=operator read. droverd and the
# workers keep the plain, digest-authenticated port (DROVER_ZK); the TLS
# ports are DROVER_ZK_TLS.

# pg_password: the stack's PostgreSQL password (made once, 0600, with DIR/pg.pass, the libpq
# password file that holds it for the superuser drover and the replication user).
pg_password() {
  if [ ! -s "$dir/pg.password" ]; then
    (
      umask 077
      openssl rand -hex 16 > "$dir/pg.password"
      printf '*:*:*:drover:%s\n*:*:*:replicator:%s\n' "$(cat "$dir/pg.password")" \
        "$(cat "$dir/pg.password")" > "$dir/pg.pass"
    )
  fi
  cat "$dir/pg.password"
}

# pg_as_psql ARGS...: psql as the postgres user (when we are root) with the stack's password.
pg_as_psql() {
  local as=()
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  "${as[@]}" env PGPASSWORD="$(pg_password)" "$(pg_bindir)/psql" "$@"
}

start_pg() {
  local port=$1 addr=${2:-127.0.0.1}
  local pdir="$dir/pg"
  local bin
  bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  [ -x "$bin/initdb" ] || die "PostgreSQL server binaries not found (run scripts/deps)"
  mkdir -p "$pdir"
  local as=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$pdir"
    chmod 700 "$pdir"
    as=(runuser -u postgres --)
    # postgres must be able to walk down to its directory.
    local d=$pdir
    while [ "$d" != / ]; do
      d=$(dirname "$d")
      case "$(stat -c %A "$d" | cut -c10)" in x | t) ;; *) chmod o+x "$d" ;; esac
    done
  fi
  # The superuser's password, for initdb in a file of postgres's own, removed after.
  (umask 077 && pg_password > "$pdir/initdb.pw")
  [ "$(id -u)" = 0 ] && chown postgres: "$pdir/initdb.pw"
  "${as[@]}" "$bin/initdb" -D "$pdir/data" -U drover --auth=scram-sha-256 --pwfile="$pdir/initdb.pw" \
    -E UTF8 --locale=C.UTF-8 > "$pdir/initdb.log" 2>&1 || { cat "$pdir/initdb.log" >&2; die "initdb failed"; }
  rm -f "$pdir/initdb.pw"
  cat >> "$pdir/data/postgresql.conf" <<EOF
listen_addresses = '$addr'
port = $port
unix_socket_directories = '$pdir'
fsync = $([ "$disk_sync" = 1 ] && echo on || echo off)
full_page_writes = $([ "$disk_sync" = 1 ] && echo on || echo off)
synchronous_commit = on
max_connections = 200
shared_buffers = 64MB
log_min_messages = warning
EOF
  # DROVER_PG_STATEMENTS=1: pg_stat_statements loaded, for a benchmark's profile of the
  # statements (bench/engine/engine_small.sh BENCH_PG_STATEMENTS).
  if [ "${DROVER_PG_STATEMENTS:-}" = 1 ]; then
    printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\n" \
      >> "$pdir/data/postgresql.conf"
  fi
  # On hosts, the other hosts (and the operator's address) reach it through the bridge.
  if hosts_on; then echo "host all all $(hosts_net) scram-sha-256" >> "$pdir/data/pg_hba.conf"; fi
  host_prefix pg
  # setsid: the server leaves the caller's process group, so an interrupted
  # test runner's signal does not race with the reaper's orderly `down`.
  "${HX[@]}" "${as[@]}" setsid "$bin/pg_ctl" -D "$pdir/data" -l "$pdir/postgres.log" -w -t 60 start \
    > "$pdir/pg_ctl.log" 2>&1 || { cat "$pdir/postgres.log" >&2; die "postgres did not start"; }
  head -n 1 "$pdir/data/postmaster.pid" > "$dir/pids/pg.pid"
  pg_as_psql -h "$addr" -p "$port" -U drover -d postgres -qAtc 'CREATE DATABASE drover' > /dev/null
}

pg_bindir() { printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1; }

# for_postgres DIR: DIR (made if missing) belongs to the postgres user when we are
# root, and postgres can walk down to it.
for_postgres() {
  local d=$1
  mkdir -p "$d"
  [ "$(id -u)" = 0 ] || return 0
  chown postgres: "$d"
  chmod 700 "$d"
  while [ "$d" != / ]; do
    d=$(dirname "$d")
    case "$(stat -c %A "$d" | cut -c10)" in x | t) ;; *) chmod o+x "$d" ;; esac
  done
}

# make_tls: the --ha stack's private CA and certificates, in DIR/tls (0711: walked, not
# listed), every key 0600 and made here, never copied from elsewhere:
#   ca.pem, ca.key                  the stack's CA (its key signs the three below, then stays)
#   zookeeper.keystore.pem          the ZooKeeper servers' key and certificate (SAN 127.0.0.1)
#   patroni/{ca,cert}.pem, key.pem  CN=patroni, every Patroni's client certificate; the
#                                   directory belongs to postgres when we are root
#   operator.pem, operator.key      CN=operator, for a person reading /patroni (read only)
make_tls() {
  local t="$dir/tls" name sans="" a n
  # On hosts, the ZooKeeper servers' addresses too (Patroni verifies the one it reaches).
  if hosts_on; then
    for n in 1 2 3; do sans="$sans,IP:$(host_addr "zk$n")"; done
  fi
  mkdir -p "$t/patroni"
  chmod 711 "$t"
  chmod 700 "$t/patroni"
  (
    umask 077
    cd "$t"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 \
      -subj "/CN=drover-stack-ca" > tls.log 2>&1
    for name in zookeeper patroni operator; do
      openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$name" >> tls.log 2>&1
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost%s\n' "$sans" > "$name.ext"
      openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$name.pem" \
        -days 30 -extfile "$name.ext" >> tls.log 2>&1
      rm -f "$name.csr" "$name.ext"
    done
    cat zookeeper.key zookeeper.pem > zookeeper.keystore.pem
    rm -f zookeeper.key zookeeper.pem
    mv patroni.key patroni/key.pem
    mv patroni.pem patroni/cert.pem
    cp ca.pem patroni/ca.pem
  ) || { cat "$t/tls.log" >&2; die "openssl could not make the stack's certificates"; }
  [ "$(id -u)" = 0 ] && chown -R postgres: "$t/patroni"
  return 0
}

# rest_code PORT PATH [ADDR]: the HTTP status of Patroni's REST endpoint PATH (000: no answer).
rest_code() {
  curl -s -o /dev/null -m 2 -w '%{http_code}' "http://${3:-127.0.0.1}:$1$2" 2> /dev/null || true
}

# start_patroni N PG_PORT REST_PORT ZK_HOSTS: PostgreSQL server N under its own Patroni.
start_patroni() {
  local n=$1 pg_port=$2 rest_port=$3 zk_hosts=$4 addr=${5:-127.0.0.1} bin pdir
  pdir="$dir/pg$n"
  bin=$(pg_bindir)
  [ -x "$bin/initdb" ] || die "PostgreSQL server binaries not found (run scripts/deps)"
  command -v patroni > /dev/null || die "patroni not found (run scripts/deps)"
  for_postgres "$pdir"
  local sync
  sync=$([ "$disk_sync" = 1 ] && echo on || echo off)
  cat > "$pdir/patroni.yml" <<EOF
# Patroni for PostgreSQL server pg$n of the local stack (generated by scripts/stack up --ha).
scope: drover
namespace: /patroni/
name: pg$n
restapi:
  listen: $addr:$rest_port
  connect_address: $addr:$rest_port
zookeeper:
  # ZooKeeper's TLS ports, with the stack's certificate for Patroni (make_tls): every
  # znode Patroni creates under /patroni/ carries these ACLs, x509 identities being the
  # certificates' subjects. Nobody else (no credentials, Drover's digest) reads or
  # writes them.
  hosts: [${zk_hosts//,/, }]
  use_ssl: true
  verify: true
  cacert: $dir/tls/patroni/ca.pem
  cert: $dir/tls/patroni/cert.pem
  key: $dir/tls/patroni/key.pem
  set_acls:
    'CN=patroni': [ALL]
    'CN=operator': [READ]
bootstrap:
  dcs:
    # Failover timing, the fastest that stays safe (docs/operations.md, "PostgreSQL
    # under Patroni"):
    # - ttl 8: the leader key is an ephemeral znode of a ZooKeeper session of ttl
    #   seconds, so a dead primary (Patroni killed) is replaced about ttl s later.
    #   Shorter sessions expire by mistake when a loaded machine stalls Patroni's
    #   pings for a few seconds, and each mistake is a needless failover.
    # - loop_wait 2 and retry_timeout 3: Patroni's rule loop_wait + 2 x retry_timeout
    #   <= ttl, so that a primary cut off from ZooKeeper gives up its retries and
    #   demotes itself before its key expires and a replica takes over.
    # - synchronous_mode_strict: a lone primary accepts no write, so every commit
    #   acknowledged to Drover is on two servers and a promoted replica never lacks
    #   one, whatever the timing.
    # - primary_start_timeout 0: a primary whose postgres crashed is failed over at
    #   once rather than restarted in place; with synchronous replication this loses
    #   nothing acknowledged.
    # - maximum_lag_on_failover 1 TiB, in effect none: Patroni promotes only the
    #   synchronous standby, which holds every acknowledged commit whatever its lag;
    #   what it lags by is WAL the primary had not acknowledged (a large transaction
    #   waiting at its COMMIT). With 1 MB, a primary killed during such a transaction
    #   left no primary at all: the standby refused to be promoted (engine_pg_rejoin).
    ttl: 8
    loop_wait: 2
    retry_timeout: 3
    primary_start_timeout: 0
    maximum_lag_on_failover: 1099511627776
    synchronous_mode: true
    synchronous_mode_strict: true
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        # full_page_writes stays on even with --no-disk-sync: pg_rewind needs it to
        # bring a former primary back as a replica.
        fsync: '$sync'
        full_page_writes: 'on'
        synchronous_commit: 'on'
        max_connections: 200
        shared_buffers: 64MB
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
        hot_standby: 'on'
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
postgresql:
  listen: $addr:$pg_port
  connect_address: $addr:$pg_port
  data_dir: $pdir/data
  bin_dir: $bin
  pgpass: $pdir/pgpass
  # A former primary that cannot be rewound (pg_rewind failed, or its timeline
  # diverged) is cloned again from the primary rather than left out.
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  # A new replica is a pg_basebackup of the primary; a fast checkpoint, else it waits
  # for a spread one (minutes).
  basebackup:
    - checkpoint: fast
  # Passwords on every connection (scram-sha-256), the local socket's included: the
  # stack's (pg_password), for the superuser and the replication user alike.
  authentication:
    superuser:
      username: drover
      password: '$(pg_password)'
    replication:
      username: replicator
      password: '$(pg_password)'
  parameters:
    unix_socket_directories: '$pdir'
    log_min_messages: warning
    password_encryption: scram-sha-256
  pg_hba:
    - local all all scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
    - host replication replicator 127.0.0.1/32 scram-sha-256
EOF
  if hosts_on; then
    # On hosts, the other servers replicate and the clients connect through the bridge.
    printf '    - host all all %s scram-sha-256\n    - host replication replicator %s scram-sha-256\n' \
      "$(hosts_net)" "$(hosts_net)" >> "$pdir/patroni.yml"
  fi
  chmod 600 "$pdir/patroni.yml" # (it holds the password: postgres's own)
  [ "$(id -u)" = 0 ] && chown postgres: "$pdir/patroni.yml"
  echo "$pg_port $rest_port" > "$dir/pg$n.ports"
  launch_patroni "$n"
}

# launch_patroni N: Patroni N with its configuration (the first time or again after it
# died: `stack patroni-start N`), pid recorded in pids/patroniN.pid.
launch_patroni() {
  local n=$1 pdir="$dir/pg$1" as=()
  [ -f "$pdir/patroni.yml" ] || die "no PostgreSQL server pg$n under Patroni in $dir"
  pid_alive "patroni$n" && die "patroni$n runs already (pid $(cat "$dir/pids/patroni$n.pid"))"
  [ "$(id -u)" = 0 ] && as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
  host_prefix "pg$n"
  # setsid, then nsenter (on hosts), setpriv and patroni each exec: the pid recorded is
  # Patroni's own.
  HOME=$pdir setsid "${HX[@]}" "${as[@]}" patroni "$pdir/patroni.yml" >> "$pdir/patroni.log" 2>&1 < /dev/null &
  echo $! > "$dir/pids/patroni$n.pid"
}

# ha_primary: the number of the PostgreSQL server that Patroni calls primary (empty when none).
ha_primary() {
  local n pg rest
  for n in $(seq 1 "$pg_nodes"); do
    read -r pg rest < "$dir/pg$n.ports" || continue
    [ "$(rest_code "$rest" /primary "$(host_addr "pg$n")")" = 200 ] && { echo "$n"; return 0; }
  done
  return 0
}

# ha_synced: one server is primary and another its synchronous standby.
ha_synced() {
  local n pg rest
  [ -n "$(ha_primary)" ] || return 1
  for n in $(seq 1 "$pg_nodes"); do
    read -r pg rest < "$dir/pg$n.ports" || continue
    [ "$(rest_code "$rest" /sync "$(host_addr "pg$n")")" = 200 ] && return 0
  done
  return 1
}

# zk_via_proxies N ZK_HOSTS: the ZooKeeper hosts Patroni N is given. With
# DROVER_HA_ZK_PROXY (a tests' tcpproxy binary: integration/engine/tcpproxy.c), Patroni N
# reaches each ZooKeeper server through a proxy of its own (pids/zkproxy-N-K.pid), so that
# a test can cut that one Patroni off from ZooKeeper (SIGUSR1) and heal it (SIGUSR2).
zk_via_proxies() {
  local n=$1 zk_hosts=$2 hp k=0 lp out=""
  if [ -z "${DROVER_HA_ZK_PROXY:-}" ]; then
    echo "$zk_hosts"
    return 0
  fi
  for hp in ${zk_hosts//,/ }; do
    k=$((k + 1))
    lp=$(reserve_port)
    # exec -a: the proxy's command line names the stack's directory, as `down` checks.
    # shellcheck disable=SC2016 # expanded by the inner bash
    setsid bash -c 'exec -a "$0" "$1" "$2" "$3"' "$dir/zkproxy-$n-$k" "$DROVER_HA_ZK_PROXY" "$lp" "${hp#*:}" \
      > "$dir/zkproxy-$n-$k.log" 2>&1 < /dev/null &
    echo $! > "$dir/pids/zkproxy-$n-$k.pid"
    out="$out${out:+,}127.0.0.1:$lp"
  done
  echo "$out"
}

# ha_revive: a Patroni that died while the stack starts is started again. Seen in CI on a
# loaded machine: pg1's first ZooKeeper connection timed out (kazoo's KazooTimeoutError ends
# Patroni), and the stack waited 120 s for a server nobody ran. Until the stack is up, a dead
# Patroni is a slow start, not a fault a test made (at most 3 times each: a Patroni that
# cannot start at all shows in its log when the stack gives up).
HA_REVIVED=()
ha_revive() {
  local n
  for n in $(seq 1 "$pg_nodes"); do
    pid_alive "patroni$n" && continue
    [ "${HA_REVIVED[n]:-0}" -lt 3 ] || continue
    HA_REVIVED[n]=$((${HA_REVIVED[n]:-0} + 1))
    echo "stack: patroni$n died while the stack started ($dir/pg$n/patroni.log): started again" >&2
    launch_patroni "$n"
  done
}

# ha_database_everywhere: every PostgreSQL server of the stack answers and has the database.
ha_database_everywhere() {
  local n pg rest
  for n in $(seq 1 "$pg_nodes"); do
    read -r pg rest < "$dir/pg$n.ports"
    [ -n "$(pg_as_psql "host=$(host_addr "pg$n") port=$pg user=drover dbname=postgres connect_timeout=2" -qAtc \
      "SELECT 1 FROM pg_database WHERE datname = 'drover'" 2> /dev/null)" ] || return 1
  done
}

# start_ha ZK_HOSTS: the Patroni cluster; prints DROVER_PG (multi-host, read-write).
start_ha() {
  local zk_hosts=$1 n pg rest hosts="" ports=""
  for n in $(seq 1 "$pg_nodes"); do
    if hosts_on; then
      pg=5432 rest=8008
      host_add "pg$n" > /dev/null
    else
      pg=$(reserve_port)
      rest=$(reserve_port)
    fi
    start_patroni "$n" "$pg" "$rest" "$(zk_via_proxies "$n" "$zk_hosts")" "$(host_addr "pg$n")"
    hosts="$hosts${hosts:+,}$(host_addr "pg$n")"
    ports="$ports${ports:+,}$pg"
  done
  local deadline=$((SECONDS + 120)) p
  until p=$(ha_primary) && [ -n "$p" ]; do
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$dir"/pg*/patroni.log >&2; cmd_down; die "no primary elected"; }
    ha_revive
    sleep 0.3
  done
  read -r pg rest < "$dir/pg$p.ports"
  # The database, on the primary (the replicas get it by replication). Then wait for a
  # synchronous standby: in strict mode the primary accepts no write until one exists.
  pg_as_psql -h "$(host_addr "pg$p")" -p "$pg" -U drover -d postgres -qAtc 'CREATE DATABASE drover' \
    > /dev/null || { cmd_down; die "cannot create the database on pg$p"; }
  until ha_synced; do
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$dir"/pg*/patroni.log >&2; cmd_down; die "no synchronous standby"; }
    ha_revive
    sleep 0.3
  done
  # The leader may have changed meanwhile (a loaded machine, Patroni's ZooKeeper through the
  # split test's proxies): the database must be on the primary clients will find. Seen once
  # in CI: droverd's first connection answered 'database "drover" does not exist'.
  until p=$(ha_primary) && [ -n "$p" ]; do
    [ $SECONDS -lt $deadline ] || { cmd_down; die "no primary after the synchronous standby"; }
    sleep 0.3
  done
  read -r pg rest < "$dir/pg$p.ports"
  if [ -z "$(pg_as_psql -h "$(host_addr "pg$p")" -p "$pg" -U drover -d postgres -qAtc \
    "SELECT 1 FROM pg_database WHERE datname = 'drover'")" ]; then
    echo "stack: the database is not on the new primary pg$p: created again" >&2
    pg_as_psql -h "$(host_addr "pg$p")" -p "$pg" -U drover -d postgres -qAtc 'CREATE DATABASE drover' \
      > /dev/null || { cmd_down; die "cannot create the database on pg$p"; }
  fi
  # And on every replica: libpq tries the next host of a multi-host string only when a server
  # cannot be reached, not when one refuses the database (that counts as a failed log-in), so
  # a replica still replaying the CREATE DATABASE fails every client that tries it first. Seen
  # in CI: engine_pg_rejoin's first psql, 'database "drover" does not exist' from a replica.
  deadline=$((SECONDS + 120))
  until ha_database_everywhere; do
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$dir"/pg*/patroni.log >&2; cmd_down; die "the database did not reach every server"; }
    ha_revive
    sleep 0.3
  done
  echo "host=$hosts port=$ports dbname=drover user=drover connect_timeout=2 target_session_attrs=read-write passfile=$dir/pg.pass"
}

# stop_ha: each Patroni (it stops its postgres: fast shutdown), then any postgres left
# behind (Patroni killed), found by its postmaster.pid and checked to be this stack's.
stop_ha() {
  local f n pid
  for f in "$dir"/pids/patroni*.pid; do
    [ -e "$f" ] || continue
    stop_pid "$(basename "$f" .pid)" TERM
  done
  for f in "$dir"/pg*/data/postmaster.pid; do
    [ -e "$f" ] || continue
    pid=$(head -n 1 "$f")
    [ -n "$pid" ] && [ -d "/proc/$pid" ] || continue
    tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null | grep -qF -- "$dir" || continue
    n=$(basename "$(dirname "$(dirname "$f")")")
    kill -INT "$pid" 2> /dev/null || true
    for _ in $(seq 1 100); do
      [ -d "/proc/$pid" ] || break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then
      say "$n postgres (pid $pid) ignored SIGINT; killing"
      kill -KILL "$pid" 2> /dev/null || true
    fi
  done
  return 0
}

# ha_status: under Patroni, each PostgreSQL server's role as its Patroni says (primary, the
# synchronous standby, replicas), and its state; status 1 when none is primary.
ha_status() {
  local n pg rest js a
  for n in $(seq 1 "${DROVER_PG_HA:-0}"); do
    read -r pg rest < "$dir/pg$n.ports" || continue
    a=$(host_addr "pg$n")
    js=$(curl -s -m 2 "http://$a:$rest/patroni" 2> /dev/null || true)
    if [ -z "$js" ]; then
      printf 'postgresql   %s:%s  pg%s  patroni not answering\n' "$a" "$pg" "$n"
      continue
    fi
    js=$(echo "$js" | jq -c 'if .role == "master" then .role = "primary" else . end')
    [ "$(rest_code "$rest" /sync "$a")" = 200 ] && js=$(echo "$js" | jq -c '.role = "sync standby"')
    echo "$js" | jq -r --arg pg "$pg" --arg n "$n" --arg a "$a" \
      '"postgresql   \($a):\($pg)  pg\($n)  \(.role // "?")  \(.state // "?")  timeline \(.timeline // "?")"'
  done
  [ "${DROVER_PG_HA:-0}" = 0 ] || [ -n "$(pg_nodes=$DROVER_PG_HA ha_primary)" ]
}
