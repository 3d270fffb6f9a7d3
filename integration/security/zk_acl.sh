#!/usr/bin/env bash
# ZooKeeper ACLs (docs/zookeeper-tree.md "ACLs", docs/security.md "ZooKeeper ACLs"): the attack
# is reading the tree without credentials (a job's context with its tenant, config and sealed
# keys, run records, members with hosts and pids), with an identity that is not Drover's, or
# with another tenant's workers' identity. With digest credentials every znode under /drover
# carries exactly: all permissions for Drover's identity, read for the operator's, and on a
# tenant's queue, resources, job context, nodes and run records what that tenant's workers
# need (the per-path table); never world. A tree written before (world readable) is closed at
# droverd's start. The worker runs with tenant acme's own identity (drover key worker-zk).
# While a job is in flight (its context, nodes, run records, queue items and claims, or with
# worker.slots the worker's slots, offers and key records, the members all present) the whole
# tree is walked with each identity: none and an intruder read nothing and list nothing, the
# operator reads everything and writes nothing, acme's workers read exactly their tenant's
# part, Drover's own identity reads everything. A hostile worker of tenant beta tries to take
# acme's queue item (or write a task into acme's slot, read it, take or make an offer), read
# its context and run record, write its run record: each NOAUTH, nothing changed; a beta
# worker set to serve acme's queue is refused and logs it. `drover zk` reads with the operator's credentials and is refused without them;
# the job then ends well.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

zk_logins intruder
# start_worker gives the workers their tenant's identity (testlib/engine.sh).
ZK_DROVERD_ID=$DROVERD_ID
ZK_READERS=$OPS_ID
ACME_ZK=$(worker_zk_file acme)
BETA_ZK=$(worker_zk_file beta)
grep -qx 'worker\.acme:[0-9a-f]\{64\}' "$ACME_ZK" || fail "drover key worker-zk: $(cat "$ACME_ZK")"
[ "$(stat -c %a "$ACME_ZK")" = 600 ] || fail "the worker's credentials are not 0600"
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
start_worker worker-1 # with acme's identity, before droverd lets acme in: it waits
setup_tenant
expect 201 "$(api POST /v1/tenants '{"name":"beta"}' "$SUPER")" '' "tenant beta"
read -r _ JID <<< "$(create_cluster c1 2 '{"hold_on":{"task":"install","file":"'"$T/gate"'"}}')"
export DROVER_ZK_DIGEST_FILE="$T/ops.digest" # for the zk helper: the operator reads
claimed() { [ -n "$(held_tasks /drover/queues/acme/default)" ]; }
wait_until 60 "the job to hold its installs" claimed

# walk: every znode, by Drover's identity; each checked with each identity.
"$PY" - "$DROVER_ZK" "$T" "$OPS_ID" "$JID" "$ACME_ZK" "$BETA_ZK" << 'PY' || fail "the walk found a znode that is not closed (above)"
import re, sys
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl_credential
hosts, t, ops_id, jid, acme_file, beta_file = sys.argv[1:7]
cred = {n: open(f"{t}/{n}.digest").read().strip() for n in ("zk", "ops", "intruder")}
cred["acme"], cred["beta"] = open(acme_file).read().strip(), open(beta_file).read().strip()
def client(c):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", c)] if c else None)
    zk.start(timeout=30)
    return zk
drover, ops, none, intruder, acme = (client(cred["zk"]), client(cred["ops"]), client(None),
                                     client(cred["intruder"]), client(cred["acme"]))
def ident(c):
    return make_digest_acl_credential(*c.split(":", 1))
D, A, B = ident(cred["zk"]), ident(cred["acme"]), ident(cred["beta"])
R, W, C, X = 1, 2, 4, 8
J = f"/drover/jobs/{jid}"
# the per-path table of docs/zookeeper-tree.md, "ACLs": what acme's workers may do
grants = [(r"/drover/queues/acme(/.*)?", R | W | C | X), (r"/drover/resources/acme", R),
          (r"/drover/pools/acme(/.*)?", R | W | C | X),
          (rf"{J}/(ctx|nodes)(/.*)?", R), (rf"{J}/runs", R | C), (rf"{J}/runs/[^/]+", R | W),
          (r"/drover/members/worker/worker-1", R | W), (r"/drover/members/worker", R | C)]
def grant(p):
    for pat, perms in grants:
        if re.fullmatch(pat, p):
            return perms
    return 0
paths, todo = [], ["/drover"]
while todo:
    p = todo.pop()
    paths.append(p)
    try:
        todo += [f"{p}/{k}" for k in drover.get_children(p)]
    except Exception:
        pass  # gone meanwhile
bad, acme_read = [], 0
for p in paths:
    try:
        acls, _ = drover.get_acls(p)
    except Exception:
        continue
    have = sorted((a.id.scheme, a.id.id, a.perms) for a in acls)
    want = [("digest", D, 31), ("digest", ops_id, 1)]
    if grant(p):
        want.append(("digest", A, grant(p)))
    if p == "/drover/members/worker":  # beta's workers may join too
        want.append(("digest", B, R | C))
    if p in ("/drover/queues/beta", "/drover/pools/beta"):  # made for beta when it was created
        want.append(("digest", B, R | W | C | X))
    if have != sorted(want):
        bad.append(f"{p}: acl {have}, want {sorted(want)}")
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
    # acme's workers: read exactly their part, and never change droverd's own znodes
    try:
        acme.get(p)
        acme_read += 1
        if not grant(p) & R:
            bad.append(f"{p}: acme's workers may read")
    except NoAuthError:
        if grant(p) & R:
            bad.append(f"{p}: acme's workers may not read")
    except Exception:
        pass
    if not grant(p) & W:
        try:
            acme.set(p, b"{}")
            bad.append(f"{p}: acme's workers may write")
        except NoAuthError:
            pass
        except Exception:
            pass
must = [f"{J}/ctx", f"{J}/runs", f"{J}/state", "/drover/members/worker/worker-1",
        "/drover/members/droverd/droverd-1", "/drover/queues/acme/default", "/drover/pools/acme",
        "/drover/legacy/world-read",
        "/drover/legacy/open"]
missing = [m for m in must if m not in paths]
runs = [p for p in paths if p.startswith(f"{J}/runs/")]
claims = [p for p in paths if p.startswith(("/drover/queues/acme/default/claims/",
                                            "/drover/queues/acme/default/slots/"))]
if missing or not runs or not claims:
    bad.append(f"the walk missed {missing} (runs {len(runs)}, claims {len(claims)})")
for b in bad[:20]:
    print("FAIL:", b)
print(f"walked {len(paths)} znodes, acme's workers read {acme_read}, {len(bad)} problems")
sys.exit(1 if bad else 0)
PY
pass "every znode: Drover all, the operator read only, acme's workers their part, no one else anything"

# A hostile worker of tenant beta, with beta's own identity, against acme's job.
"$PY" - "$DROVER_ZK" "$T" "$JID" "$BETA_ZK" << 'PY' || fail "tenant beta's workers reached acme's (above)"
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
hosts, t, jid, beta_file = sys.argv[1:5]
def client(c):
    zk = KazooClient(hosts=hosts, auth_data=[("digest", c)])
    zk.start(timeout=30)
    return zk
drover = client(open(f"{t}/zk.digest").read().strip())
beta = client(open(beta_file).read().strip())
J, Q = f"/drover/jobs/{jid}", "/drover/queues/acme/default"
run = f"{J}/runs/" + sorted(drover.get_children(f"{J}/runs"))[0]
before = {p: drover.get(p)[0] for p in (f"{J}/ctx", run)}
claims = set(drover.get_children(f"{Q}/claims"))
tries = [("read acme's context", lambda: beta.get(f"{J}/ctx")),
         ("read acme's run record", lambda: beta.get(run)),
         ("write acme's run record", lambda: beta.set(run, b'{"status":"ok"}')),
         ("record a run of acme's job", lambda: beta.create(f"{J}/runs/f0.1.evil.1", b"{}")),
         ("list acme's queue", lambda: beta.get_children(f"{Q}/items")),
         ("make a queue in acme's name", lambda: beta.create("/drover/queues/acme/evil", b"{}")),
         ("read acme's resources", lambda: beta.get("/drover/resources/acme")),
         ("read acme's worker", lambda: beta.get("/drover/members/worker/worker-1"))]
shards = [s for s in sorted(drover.get_children(f"{Q}/items")) if drover.get_children(f"{Q}/items/{s}")]
if shards:  # the queue's items (worker.slots off)
    shard = shards[0]
    item = sorted(drover.get_children(f"{Q}/items/{shard}"))[0]
    before[f"{Q}/items/{shard}/{item}"] = drover.get(f"{Q}/items/{shard}/{item}")[0]
    tries += [("read acme's queue item", lambda: beta.get(f"{Q}/items/{shard}/{item}")),
              ("list acme's queue shard", lambda: beta.get_children(f"{Q}/items/{shard}")),
              ("claim acme's queue item", lambda: beta.create(f"{Q}/claims/{shard}-{item}", b"{}", ephemeral=True)),
              ("delete acme's queue item", lambda: beta.delete(f"{Q}/items/{shard}/{item}"))]
slots = sorted(drover.get_children(f"{Q}/slots")) if drover.exists(f"{Q}/slots") else []
busy = [s for s in slots if b'"key"' in drover.get(f"{Q}/slots/{s}")[0]]
if busy:  # worker.slots: droverd wrote the tasks into acme's worker's slots
    slot = busy[0]
    before[f"{Q}/slots/{slot}"] = drover.get(f"{Q}/slots/{slot}")[0]
    keys = sorted(drover.get_children(f"{Q}/keys"))
    tries += [("read acme's slot", lambda: beta.get(f"{Q}/slots/{slot}")),
              ("write a task into acme's slot", lambda: beta.set(f"{Q}/slots/{slot}", b'{"v":1,"key":"1.f0.9"}')),
              ("delete acme's slot", lambda: beta.delete(f"{Q}/slots/{slot}")),
              ("list acme's offers", lambda: beta.get_children(f"{Q}/free")),
              ("offer a slot in acme's queue", lambda: beta.create(f"{Q}/free/{slot}@99", b"", ephemeral=True)),
              ("make a slot in acme's queue", lambda: beta.create(f"{Q}/slots/evil.1.0", b'{"v":1}', ephemeral=True))]
    if keys:
        tries += [("delete acme's key record", lambda: beta.delete(f"{Q}/keys/{keys[0]}"))]
if not shards and not busy:
    print("FAIL: neither a queue item nor a busy slot of acme's to try")
    sys.exit(1)
bad = []
for what, f in tries:
    try:
        f()
        bad.append(f"beta may {what}")
    except NoAuthError:
        pass
    except Exception as e:
        if what != "read acme's resources":  # none pushed: no node, but never readable
            bad.append(f"{what}: {type(e).__name__} instead of NOAUTH")
after = {p: drover.get(p)[0] for p in before}
if after != before or set(drover.get_children(f"{Q}/claims")) - claims:
    bad.append("beta's attempts changed acme's znodes")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
pass "beta's workers: acme's context, run record, queue item: NOAUTH each, nothing changed"

# A beta worker set to serve acme's queue: refused, and it says so.
WORKER_TENANT=acme start_worker worker-evil "zookeeper.digest_file = $BETA_ZK" \
  "zookeeper.acl_owner = $ZK_DROVERD_ID" "zookeeper.acl_readers = $ZK_READERS"
refused() { grep -q 'event=queue-open-failed path=/drover/queues/acme/default zrc=-102' "$T/worker-evil.log"; }
wait_until 60 "the beta worker to be refused acme's queue" refused
kill "$(pid_of worker-evil)"

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

# A drain request reaches a worker that has its tenant's identity (control/worker/<id>).
expect 202 "$(api POST /v1/workers/worker-1/drain '{}')" '' "acme drains its worker"
drained() { grep -q 'event=draining' "$T/worker-1.log"; }
wait_until 60 "worker-1 to read its drain request" drained
pass "a drain request is read by the worker with its tenant's identity"
