#!/usr/bin/env bash
# Attack (issue 32, plugins of different tenants on one host): tenant beta's plugin reads
# tenant acme's plugin while it runs. Two real workers on this host, one per tenant, each
# running its own provider plugin unprivileged, as a shared worker host would. acme's
# plugin ("victim") holds its task, unread, on its standard input (the task carries opened
# secrets; here a marker in the cluster's config) and a temporary file of its own (mode
# 0644, in its TMPDIR); beta's plugin ("peek") then tries, from its own create: acme's
# /proc/<pid>/environ, /proc/<pid>/fd/0 (the pipe: reading it steals the task), its maps
# and /proc/<pid>/mem, a ptrace attach, and the temporary file.
# Expected (docs/security.md "Plugins of different tenants"): each tenant's plugins run as
# a uid of their own (worker.plugin_uids), so the kernel refuses every one of them (EACCES
# or EPERM); acme's plugin then reads its whole task, marker included, and both jobs
# succeed. Before the fix both ran as drover-plugin and beta read all of it.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
setup_tenant # acme, $TOKEN its admin
ACME=$TOKEN
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
BETA=$(body_of "$(api POST /v1/users '{"name":"bea","role":"admin","tenant":"beta"}' "$SUPER")" | jq -r .token)

# Where the two plugins meet (the test's own: any uid may write it).
M="$T/meet"
mkdir -p "$M"
chmod 1777 "$M"
P="$T/tplugins"
mkdir -p "$P/noop" "$P/victim" "$P/peek"
cp "$DROVER_BUILD_DIR/plugins/noop/plugin.json" "$P/noop/"
for n in victim peek; do
  jq -n --arg n "$n" '{name: $n, type: "provider", executable: "run.sh", providertypes: [$n],
    timeout: "3m", wants: [], description: "security_plugin_peek"}' > "$P/$n/plugin.json"
done
# acme's: on its first run (the create), leave the task unread until beta's is done.
cat > "$P/victim/run.sh" <<SH
#!/bin/sh
M="$M"
SH
cat >> "$P/victim/run.sh" <<'SH'
intact=none
if mkdir "$M/victim.once" 2>/dev/null; then
  f=$(mktemp) && echo "acme-temp-secret" > "$f" && chmod 644 "$f" && echo "$f" > "$M/victim.tmp"
  echo $$ > "$M/victim.pid.new" && mv "$M/victim.pid.new" "$M/victim.pid"
  i=0
  while [ ! -e "$M/peek.done" ] && [ $i -lt 1500 ]; do sleep 0.1; i=$((i + 1)); done
  in=$(cat)
  rm -f "$f"
  case $in in *acme-marker-7f3a*) intact=yes ;; *) intact=no ;; esac
else
  in=$(cat)
fi
case $(printf '%s' "$in" | jq -r .taskName 2> /dev/null) in
confirm) echo '{"status":"ok","result":{"hostname":"v.invalid","ipaddresses":{"access_v4":"192.0.2.8"}}}' ;;
*) jq -cn --arg i "$intact" '{status: "ok", result: {"provider-id": "victim-1", intact: $i}}' ;;
esac
SH
# beta's: every access a plugin of the same uid would have.
cat > "$P/peek/run.sh" <<SH
#!/bin/sh
M="$M"
SH
cat >> "$P/peek/run.sh" <<'SH'
in=$(cat)
case $(printf '%s' "$in" | jq -r .taskName) in
confirm) echo '{"status":"ok","result":{"hostname":"p.invalid","ipaddresses":{"access_v4":"192.0.2.9"}}}'; exit 0 ;;
create) ;;
*) echo '{"status":"ok"}'; exit 0 ;;
esac
/usr/bin/python3 - "$M" > "$M/peek.json" <<'PY'
import ctypes, errno, json, os, sys
m = sys.argv[1]
pid = int(open(f"{m}/victim.pid").read())
out = {"uid": os.getuid(), "victim_uid": os.stat(f"/proc/{pid}").st_uid}
def tried(name, fn):
    try:
        out[name] = "read: " + fn()
    except OSError as e:
        out[name] = "refused: " + errno.errorcode.get(e.errno, str(e.errno))
def environ():
    with open(f"/proc/{pid}/environ", "rb") as f:
        return "%d bytes" % len(f.read())
def stdin():
    fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    try:
        data = os.read(fd, 1 << 20)
    except BlockingIOError:
        data = b""
    os.close(fd)
    return "%d bytes%s" % (len(data), ", the marker" if b"acme-marker-7f3a" in data else "")
def mem():
    with open(f"/proc/{pid}/maps") as f:
        lo = int(f.readline().split("-")[0], 16)
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(lo)
        return "%d bytes at %x" % (len(f.read(16)), lo)
def ptrace():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    os.waitpid(pid, 0x40000000)  # __WALL
    libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    return "attached"
def tmpfile():
    with open(open(f"{m}/victim.tmp").read().strip()) as f:
        return f.read().strip()
def cmdline():
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()
for name, fn in (("environ", environ), ("fd0", stdin), ("mem", mem), ("ptrace", ptrace),
                 ("tmpfile", tmpfile), ("cmdline", cmdline)):
    tried(name, fn)
print(json.dumps(out))
PY
touch "$M/peek.done"
jq -c '{status: "ok", result: {"provider-id": "peek-1", probe: .}}' "$M/peek.json"
SH
chmod 755 "$P" "$P"/* "$P"/*/run.sh

# One worker per tenant, both on this host, plugins unprivileged (no privileged plugin).
for t in acme beta; do
  write_worker_conf "w-$t" "worker.tenant = $t" "worker.plugin_dir = $P" "worker.concurrency = 2" \
    "worker.privileged_plugins =" "secrets.tenant_key_file = $(tenant_key_file "$t")"
  start_proc "w-$t" "$BIN/drover-worker"
done

# Each tenant's catalogue names its own plugin as the provider type.
catalogue_json "$CATALOG" > "$T/cat.json"
for t in victim:acme peek:beta; do
  tok=$ACME
  [ "${t#*:}" = beta ] && tok=$BETA
  jq --arg p "${t%%:*}" '.providers |= map(.providertype = $p)' "$T/cat.json" > "$T/cat-${t#*:}.json"
  expect 200 "$(api POST /v1/import "@$T/cat-${t#*:}.json" "$tok")" '' "import ${t#*:}'s catalogue"
done

r=$(api POST /v1/clusters '{"name":"v1","template":"single","nodes":1,"config":{"note":"acme-marker-7f3a"}}' "$ACME")
expect 202 "$r" '' "acme's cluster"
AJOB=$(body_of "$r" | jq -r .job.id)
ACID=$(body_of "$r" | jq -r .cluster.id)
wait_until 60 "acme's plugin to hold its task" test -e "$M/victim.pid"
r=$(api POST /v1/clusters '{"name":"p1","template":"single","nodes":1}' "$BETA")
expect 202 "$r" '' "beta's cluster"
BJOB=$(body_of "$r" | jq -r .job.id)
BCID=$(body_of "$r" | jq -r .cluster.id)
TOKEN=$BETA wait_job "$BJOB" succeeded 120
TOKEN=$ACME wait_job "$AJOB" succeeded 120

p=$(body_of "$(api GET "/v1/clusters/$BCID" '' "$BETA")" | jq -c '.nodes[0].properties.probe')
echo "beta's plugin reported: $p"
for k in environ fd0 mem ptrace tmpfile; do
  case $(echo "$p" | jq -r ".$k") in
  refused:*) ;;
  *) fail "attack succeeded: beta's plugin got acme's $k: $(echo "$p" | jq -r ".$k")" ;;
  esac
done
[ "$(echo "$p" | jq -r .uid)" != "$(echo "$p" | jq -r .victim_uid)" ] ||
  fail "both tenants' plugins ran as uid $(echo "$p" | jq -r .uid)"
pass "beta's plugin (uid $(echo "$p" | jq -r .uid)) was refused acme's (uid $(echo "$p" | jq -r .victim_uid)) environ, fd/0, mem, ptrace and temporary file"
intact=$(body_of "$(api GET "/v1/clusters/$ACID" '' "$ACME")" | jq -r '.nodes[0].properties.intact')
[ "$intact" = yes ] || fail "acme's plugin did not read its whole task after beta's tries (intact=$intact)"
pass "acme's plugin then read its whole task; both jobs succeeded"
