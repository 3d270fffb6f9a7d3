#!/usr/bin/env bash
# ZooKeeper ACLs (docs/zookeeper-tree.md "ACLs", docs/security.md "ZooKeeper ACLs"): the attack
# is reading the tree without credentials (a job's context with its tenant, config and sealed
# keys, run records, members with hosts and pids), or with an identity that is not Drover's.
# With digest credentials every znode under /drover carries exactly: all permissions for
# Drover's identity, read for the operator's; never world. A tree written before (world
# readable) is closed at droverd's start. While a job is in flight (its context, nodes, run
# records, queue items and claims, the members all present) the whole tree is walked with each
# identity: none and an intruder read nothing and list nothing, the operator reads everything
# and writes nothing, Drover's own identity reads everything; `drover zk` reads with the
# operator's credentials and is refused without them; the job then ends well.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../api/api_lib.sh"
. "$(dirname "$0")/../engine/engine_lib.sh"

(umask 077 && echo "drover:$(openssl rand -hex 16)" > "$T/zk.digest" &&
  echo "ops:$(openssl rand -hex 16)" > "$T/ops.digest" &&
  echo "intruder:$(openssl rand -hex 16)" > "$T/intruder.digest")
OPS_ID=$("$BIN/drover" key zk-id "$T/ops.digest")
[[ $OPS_ID == ops:* ]] || fail "no digest id: $OPS_ID"
PY=/usr/bin/python3 # the system's, with python3-kazoo

# What an older droverd left: world-readable znodes.
"$PY" - "$DROVER_ZK" "$(cat "$T/zk.digest")" << 'PY'
import sys
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE, ACL, Id, Permissions
user, pw = sys.argv[2].split(":", 1)
zk = KazooClient(hosts=sys.argv[1], auth_data=[("digest", sys.argv[2])])
zk.start(timeout=30)
old = [make_digest_acl(user, pw, all=True), ACL(Permissions.READ, Id("world", "anyone"))]
zk.create("/drover/legacy/world-read", b"{}", acl=old, makepath=True)
zk.set_acls("/drover/legacy", old)
zk.set_acls("/drover", old)
zk.create("/drover/legacy/open", b"{}", acl=OPEN_ACL_UNSAFE)
zk.stop()
PY

ACL_CONF=("zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $OPS_ID")
start_droverd 1 "${ACL_CONF[@]}"
grep -q 'event=acl-fixup root=/drover znodes=4 changed=4' "$T/droverd-1.log" ||
  fail "the old tree was not closed: $(grep acl-fixup "$T/droverd-1.log")"
start_worker worker-1 "${ACL_CONF[@]}"
setup_tenant
read -r _ JID <<< "$(create_cluster c1 2 '{"hold_on":{"task":"install","file":"'"$T/gate"'"}}')"
export DROVER_ZK_DIGEST_FILE="$T/ops.digest" # for the zk helper: the operator reads
claimed() { [ -n "$(zk ls /drover/queues/acme/default/claims 2> /dev/null)" ]; }
wait_until 60 "the job to hold its installs" claimed

# walk: every znode, by Drover's identity; each checked with each identity.
"$PY" - "$DROVER_ZK" "$T" "$OPS_ID" "$JID" << 'PY' || fail "the walk found a znode that is not closed (above)"
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl_credential
hosts, t, ops_id, jid = sys.argv[1:5]
cred = {n: open(f"{t}/{n}.digest").read().strip() for n in ("zk", "ops", "intruder")}
def client(c):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", c)] if c else None)
    zk.start(timeout=30)
    return zk
drover, ops, none, intruder = client(cred["zk"]), client(cred["ops"]), client(None), client(cred["intruder"])
user, pw = cred["zk"].split(":", 1)
want = sorted([("digest", make_digest_acl_credential(user, pw), 31), ("digest", ops_id, 1)])
paths, todo = [], ["/drover"]
while todo:
    p = todo.pop()
    paths.append(p)
    try:
        todo += [f"{p}/{k}" for k in drover.get_children(p)]
    except Exception:
        pass  # gone meanwhile
bad = []
for p in paths:
    try:
        acls, _ = drover.get_acls(p)
    except Exception:
        continue
    have = sorted((a.id.scheme, a.id.id, a.perms) for a in acls)
    if have != want:
        bad.append(f"{p}: acl {have}")
    for name, zk in (("none", none), ("intruder", intruder)):
        for what, f in (("read", zk.get), ("list", zk.get_children)):
            try:
                f(p)
                bad.append(f"{p}: {name} may {what}")
            except NoAuthError:
                pass
            except Exception:
                pass  # gone meanwhile
    try:
        ops.get(p)
    except NoAuthError:
        bad.append(f"{p}: the operator may not read")
    except Exception:
        pass
    for what, f in (("write", lambda: ops.set(p, b"{}")), ("create under", lambda: ops.create(p + "/x")),
                    ("delete", lambda: ops.delete(p))):
        try:
            f()
            bad.append(f"{p}: the operator may {what}")
        except NoAuthError:
            pass
        except Exception:
            pass  # e.g. not empty: refused anyway
must = [f"/drover/jobs/{jid}/ctx", f"/drover/jobs/{jid}/runs", "/drover/members/worker/worker-1",
        "/drover/members/droverd/droverd-1", "/drover/queues/acme/default", "/drover/legacy/world-read",
        "/drover/legacy/open"]
missing = [m for m in must if m not in paths]
runs = [p for p in paths if p.startswith(f"/drover/jobs/{jid}/runs/")]
claims = [p for p in paths if p.startswith("/drover/queues/acme/default/claims/")]
if missing or not runs or not claims:
    bad.append(f"the walk missed {missing} (runs {len(runs)}, claims {len(claims)})")
for b in bad[:20]:
    print("FAIL:", b)
print(f"walked {len(paths)} znodes, {len(bad)} problems")
sys.exit(1 if bad else 0)
PY
pass "every znode: Drover all, the operator read only, no one else anything (legacy ones closed at start)"

# drover zk: refused without credentials, reads with the operator's.
DROVER_ZK_DIGEST_FILE='' "$BIN/drover" zk get "/drover/jobs/$JID/ctx" --zk "$DROVER_ZK" > "$T/zk.out" 2>&1 &&
  fail "drover zk read a job's context without credentials"
grep -q 'not authenticated\|no auth\|not auth' "$T/zk.out" || fail "no reason: $(cat "$T/zk.out")"
DROVER_ZK_DIGEST_FILE='' "$BIN/drover" zk get "/drover/jobs/$JID/ctx" --zk "$DROVER_ZK" --digest-file "$T/ops.digest" | grep -q '"tenant"' ||
  fail "drover zk does not read with the operator's credentials"
DROVER_ZK_DIGEST_FILE="$T/ops.digest" "$BIN/drover" zk ls /drover/members/worker --zk "$DROVER_ZK" | grep -qx worker-1 ||
  fail "drover zk does not take DROVER_ZK_DIGEST_FILE"
pass "drover zk: refused without credentials, reads with the operator's (option or environment)"

touch "$T/gate"
wait_job "$JID" succeeded 120
pass "the job ran to the end with every znode closed"
