#!/usr/bin/env bash
# install_packages: Drover's Debian packages, built from this tree, installed on two hosts
# that boot systemd, run as services against the stack's ZooKeeper and PostgreSQL, and
# upgraded under a running job, which finishes.
#
# The stack runs on hosts (scripts/with-stack --hosts): ZooKeeper and PostgreSQL listen on
# their own addresses of 10.252.N.0/24 on the bridge drvhN. The two hosts here are
# privileged LXC containers on that bridge (10.252.N.201 and .202), each booting systemd
# from the image `scripts/image --systemd` builds once (Debian 12 with the packages'
# libraries, cached in /var/cache/drover/images). Each is set up with the commands of
# docs/deploy.md ("Drover on each host"): dpkg -i of the three packages, the fleet key, the
# configuration, systemctl enable --now droverd drover-worker.
#
#   1. scripts/package builds the packages (lintian clean) and, from the same kept build,
#      a newer version (V+test1) of them;
#   2. both hosts install V and start the units; `man drover` works there;
#   3. as an operator and a user would, with the installed `drover`: tenant acme and its
#      admin, the test catalogue, a 3-node cluster of the sleep plugin whose start tasks
#      wait on a gate file;
#   4. while those tasks wait, each host in turn is upgraded to V+test1 (dpkg -i): its
#      droverd and worker restart through their drain (droverd's jobs move to the other;
#      the worker hands its waiting tasks back), and come back serving;
#   5. the gate opens: the job succeeds, no task succeeded twice, both hosts run V+test1.
#
# The hosts are stopped (lxc-stop -k: systemd and everything under it) however the test
# ends, before the stack's bridge goes.
. "$(dirname "$0")/../../testlib/test-lib.sh"

on_hosts || fail "install_packages runs on a --hosts stack (scripts/with-stack --hosts)"
[ "$(id -u)" = 0 ] || fail "install_packages needs root (containers, dpkg)"
NETN=$(cat "$T/hosts/net")
BR=drvh$NETN
PREFIX=10.252.$NETN
LXC=$T/lxc
KEEP=$T/package-work
started=$(date +%s)
say() { echo "install: [$(($(date +%s) - started)) s] $*"; }

# ct N CMD...: run CMD as root on host N (its namespaces, a clean environment).
ct() {
  local n=$1
  shift
  lxc-attach -P "$LXC" -n "n$n" --clear-env --set-var PATH=/usr/sbin:/usr/bin:/sbin:/bin -- "$@"
}
# ct_put N FILE DEST: copy FILE to DEST on host N.
# shellcheck disable=SC2016 # expanded by the host's shell
ct_put() { ct "$1" sh -c 'cat > "$1"' _ "$3" < "$2"; }
# ct_put_all N LIST: copy the packages LIST names (one path a line) to /root/dist on host N.
ct_put_all() {
  local f
  while read -r f; do ct_put "$1" "$f" "/root/dist/$(basename "$f")"; done < "$2"
}
addr() { echo "$PREFIX.20$1"; }

cleanup_hosts() {
  local rc=$? n
  for n in 1 2; do
    [ -f "$LXC/n$n/config" ] || continue
    if [ "$rc" != 0 ]; then
      echo "--- host $n: journalctl -u droverd -u drover-worker (last lines)" >&2
      ct "$n" journalctl -u droverd -u drover-worker --no-pager -n 40 -o cat >&2 2> /dev/null || true
    fi
    lxc-stop -P "$LXC" -n "n$n" -k > /dev/null 2>&1 || true
  done
  return "$rc"
}
trap cleanup_hosts EXIT

# 1. The packages: V, then V+test1 from the same kept build (only the changelog differs).
say "scripts/package (version from debian/changelog)"
"$DROVER_SOURCE_DIR/scripts/package" --out "$T/dist-old" --work "$KEEP" > "$T/package-old.out" 2> "$T/package.log" ||
  fail "scripts/package failed: $(tail -n 30 "$T/package.log")"
V=$(dpkg-deb -f "$(head -n 1 "$T/package-old.out")" Version)
NEW=$V+test1
say "scripts/package --version $NEW"
"$DROVER_SOURCE_DIR/scripts/package" --out "$T/dist-new" --work "$KEEP" --version "$NEW" --no-lintian \
  > "$T/package-new.out" 2>> "$T/package.log" || fail "scripts/package --version failed: $(tail -n 30 "$T/package.log")"
dpkg --compare-versions "$NEW" gt "$V" || fail "$NEW is not newer than $V"
pass "packages $V and $NEW built, lintian clean: $(xargs -n1 basename < "$T/package-old.out" | tr '\n' ' ')"

# 2. The hosts.
IMG=$("$DROVER_SOURCE_DIR/scripts/image" --systemd 2> "$T/image.log") || fail "scripts/image --systemd: $(tail -n 5 "$T/image.log")"
for n in 1 2; do
  mkdir -p "$LXC/n$n/upper"
  cat > "$LXC/n$n/config" << EOF
lxc.uts.name = drover-host$n
lxc.include = /usr/share/lxc/config/common.conf
lxc.arch = linux64
lxc.rootfs.path = overlay:$IMG/rootfs:$LXC/n$n/upper
lxc.net.0.type = veth
lxc.net.0.link = $BR
lxc.net.0.flags = up
lxc.net.0.name = eth0
lxc.net.0.ipv4.address = $(addr "$n")/24
lxc.apparmor.profile = unconfined
lxc.mount.auto = proc:mixed sys:mixed cgroup:mixed
lxc.autodev = 1
lxc.console.path = none
lxc.tty.max = 0
lxc.log.file = $LXC/n$n/lxc.log
lxc.log.level = WARN
EOF
  lxc-start -P "$LXC" -n "n$n" -d || fail "lxc-start of host $n: $(tail -n 5 "$LXC/n$n/lxc.log")"
done
booted() { # N: systemd there says running (or degraded: a unit a container lacks)
  local s
  s=$(ct "$1" systemctl is-system-running 2> /dev/null) || true
  [ "$s" = running ] || [ "$s" = degraded ]
}
for n in 1 2; do
  wait_until 120 "host $n to boot systemd" booted "$n"
done
say "hosts booted"

# deploy N DIST: the steps of docs/deploy.md "Drover on each host", on host N.
deploy() {
  local n=$1 dist=$2
  ct "$n" mkdir -p /root/dist
  ct_put_all "$n" "$dist"
  ct "$n" sh -c 'dpkg -i /root/dist/*.deb' > "$T/dpkg-$n.log" 2>&1 || fail "dpkg -i on host $n: $(tail -n 20 "$T/dpkg-$n.log")"
  ct_put "$n" "$T/secrets.key" /etc/drover/secrets.key
  ct "$n" sh -c 'chown drover:drover /etc/drover/secrets.key && chmod 600 /etc/drover/secrets.key &&
    drover key derive acme --key-file /etc/drover/secrets.key > /etc/drover/acme.key &&
    chown drover:drover /etc/drover/acme.key && chmod 600 /etc/drover/acme.key'
  # The stack's PostgreSQL takes a password (scram): its libpq password file, in ~drover/.pgpass
  # as docs/deploy.md says (the stack's conninfo names its own copy on this machine: taken out).
  ct "$n" mkdir -p /var/lib/drover
  ct_put "$n" "$DROVER_STACK_DIR/pg.pass" /var/lib/drover/.pgpass
  ct "$n" sh -c 'chown drover:drover /var/lib/drover /var/lib/drover/.pgpass && chmod 600 /var/lib/drover/.pgpass'
  ct "$n" sed -i -e "s|^node.id = .*|node.id = droverd-host$n|" \
    -e "s|^http.listen = .*|http.listen = $(addr "$n"):8080|" \
    -e "s|^zookeeper.hosts = .*|zookeeper.hosts = $DROVER_ZK|" \
    -e "s|^postgres.conninfo = .*|postgres.conninfo = ${DROVER_PG% passfile=*}|" \
    /etc/drover/droverd.conf
  ct "$n" sed -i -e "s|^node.id = .*|node.id = worker-host$n|" \
    -e "s|^zookeeper.hosts = .*|zookeeper.hosts = $DROVER_ZK|" \
    -e "s|^worker.tenant = .*|worker.tenant = acme|" \
    -e "s|^# secrets.tenant_key_file = .*|secrets.tenant_key_file = /etc/drover/acme.key|" \
    -e "s|^worker.concurrency = .*|worker.concurrency = 4\nworker.plugins = sleep,sleep-provider\nworker.testing_plugins = true\nworker.grace = 3s|" \
    /etc/drover/drover-worker.conf
  ct "$n" systemctl enable --now droverd drover-worker > "$T/enable-$n.log" 2>&1 ||
    fail "systemctl enable --now on host $n: $(cat "$T/enable-$n.log")"
}
(umask 077 && openssl rand -hex 32 > "$T/secrets.key")
for n in 1 2; do
  deploy "$n" "$T/package-old.out"
  poll_until 60 curl -fs -o /dev/null "http://$(addr "$n"):8080/readyz" || fail "droverd on host $n is not ready"
done
pass "both hosts run droverd and drover-worker $V under systemd, ready"
for n in 1 2; do
  # (sed: bold and underline as overstrikes; tr: the blanks of justified lines.)
  # shellcheck disable=SC2016 # expanded by the host's shell
  ct "$n" sh -c 'page() { man -P cat "$1" | sed "s/.\x08//g" | tr -s " "; }
    page drover | grep -q "drover cluster create" && page droverd.conf | grep -q zookeeper.hosts &&
    page drover-worker | grep -q SIGTERM' || fail "man pages on host $n"
done
pass "man drover, man droverd.conf and man drover-worker work on the hosts"

# 3. As an operator, then a user, with the installed drover.
SUPER=$(ct 1 cat /var/lib/drover/superadmin.token)
URL="http://$(addr 1):8080"
dr() { ct 1 env DROVER_URL="$URL" DROVER_TOKEN="$1" drover "${@:2}"; }
dr "$SUPER" tenant create acme > /dev/null || fail "drover tenant create"
ADMIN=$(dr "$SUPER" user create alice --role admin --tenant acme | sed -n 's/^token (shown once): //p')
[ -n "$ADMIN" ] || fail "drover user create printed no token"
tar -C "$DROVER_SOURCE_DIR/integration/engine" -cf - catalog | ct 1 tar -C /root -xf -
dr "$ADMIN" import /root/catalog > /dev/null || fail "drover import"
GATE=/run/drover-install-gate
body=$(jq -cn --arg g "$GATE" '{name: "up", template: "simple", nodes: 3,
  config: {sleep: {duration_ms: 200, hold_on: {task: "start", file: $g}}}}')
r=$(curl -s -w ' %{http_code}' -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  --data-binary "$body" "$URL/v1/clusters")
[ "${r##* }" = 202 ] || fail "cluster create: $r"
JID=$(echo "${r% *}" | jq -r .job.id)
job_st() { psql_q "SELECT status FROM jobs WHERE id = $JID"; }
held() { [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND status = 'running'")" -gt 0 ]; }
wait_until 120 "job $JID's start tasks to wait on the gate" held
pass "job $JID runs, its start tasks held on the gate"

# 4. The upgrade, one host at a time, while the job's tasks wait.
for n in 1 2; do
  pid_d=$(ct "$n" systemctl show -p MainPID --value droverd)
  pid_w=$(ct "$n" systemctl show -p MainPID --value drover-worker)
  say "host $n: dpkg -i $NEW"
  ct_put_all "$n" "$T/package-new.out"
  ct "$n" sh -c "dpkg -i --force-confold /root/dist/*_${NEW}_*.deb" > "$T/upgrade-$n.log" 2>&1 ||
    fail "dpkg -i $NEW on host $n: $(tail -n 20 "$T/upgrade-$n.log")"
  for p in drover droverd drover-worker; do
    # shellcheck disable=SC2016 # dpkg-query's field
    [ "$(ct "$n" dpkg-query -W -f '${Version}' "$p")" = "$NEW" ] || fail "host $n: $p is not $NEW"
  done
  [ "$(ct "$n" systemctl show -p MainPID --value droverd)" != "$pid_d" ] || fail "host $n: droverd was not restarted"
  [ "$(ct "$n" systemctl show -p MainPID --value drover-worker)" != "$pid_w" ] || fail "host $n: drover-worker was not restarted"
  # The restart was the drain (SIGTERM: droverd logs stopping and leaves; no SIGKILL).
  ct "$n" journalctl -u droverd -u drover-worker -o cat --no-pager > "$T/journal-$n.log"
  grep -q 'module=droverd event=stopping signal=TERM' "$T/journal-$n.log" ||
    fail "host $n: droverd did not drain on the upgrade's restart"
  grep -q 'module=worker event=stopping signal=TERM' "$T/journal-$n.log" ||
    fail "host $n: the worker did not drain on the upgrade's restart"
  ! grep -q 'stop-sigterm. timed out\|Killing process' "$T/journal-$n.log" ||
    fail "host $n: systemd had to kill a daemon: $(grep 'timed out\|Killing' "$T/journal-$n.log")"
  poll_until 60 curl -fs -o /dev/null "http://$(addr "$n"):8080/readyz" || fail "droverd on host $n is not ready after the upgrade"
  pass "host $n upgraded to $NEW: droverd and drover-worker restarted through their drain, ready again"
done
[ "$(job_st)" = running ] || fail "job $JID is $(job_st) after the upgrades, expected running"

# 5. The gate opens: the job finishes.
for n in 1 2; do ct "$n" touch "$GATE"; done
done_ok() {
  local s
  s=$(job_st)
  case $s in succeeded) return 0 ;; failed | rolled-back | cancelled | needs-operator)
    fail "job $JID ended $s: $(psql_q "SELECT error FROM jobs WHERE id = $JID")" ;; esac
  return 1
}
wait_until 180 "job $JID to succeed" done_ok
dup=$(psql_q "SELECT task_id FROM task_attempts WHERE job_id = $JID AND status = 'succeeded' GROUP BY task_id, phase HAVING count(*) > 1 LIMIT 5")
[ -z "$dup" ] || fail "tasks of job $JID succeeded twice: $dup"
pass "job $JID succeeded across the upgrade of both hosts, no task twice ($(($(date +%s) - started)) s in all)"
