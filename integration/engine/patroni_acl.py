#!/usr/bin/python3
"""patroni_acl.py STACK_DIR: Patroni's znodes are closed (issue 23; docs/zookeeper-tree.md, "patroni").

The attack: moving or reading Patroni's leader key, sync key or configuration (who is primary, who
may be promoted) from anywhere that reaches ZooKeeper. On a --ha stack (scripts/stack make_tls)
Patroni reaches ZooKeeper over TLS with the certificate CN=patroni and creates every znode with
ACLs x509:CN=patroni all, x509:CN=operator read. Walked with the operator's certificate over TLS,
every znode under /patroni must carry exactly those; then each is tried with each other identity:
no credentials and a digest (as droverd's) on the plain port, and a certificate of another CA on
the TLS port (refused at the handshake). Neither reads, lists, writes, creates under or deletes
anything; the operator reads everything and changes nothing. Exit 1 with what was open.
"""
import logging
import os
import subprocess
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NotEmptyError

d = sys.argv[1]
env = dict(line.split("=", 1) for line in open(f"{d}/stack.env").read().split() if "=" in line)
plain = env["DROVER_ZK"].strip("'")
tls = env["DROVER_ZK_TLS"].strip("'")
t = f"{d}/tls"


def client(hosts, **kw):
    zk = KazooClient(hosts=hosts, **kw)
    zk.start(timeout=30)
    return zk


ops = client(tls, use_ssl=True, ca=f"{t}/ca.pem", certfile=f"{t}/operator.pem", keyfile=f"{t}/operator.key")
none = client(plain)
digest = client(plain, auth_data=[("digest", "drover:" + os.urandom(8).hex())])

paths, todo = [], ["/patroni"]
while todo:
    p = todo.pop()
    paths.append(p)
    todo += [f"{p}/{k}" for k in ops.get_children(p)]
want = [("x509", "CN=operator", 1), ("x509", "CN=patroni", 31)]
bad = []
for p in paths:
    have = sorted((a.id.scheme, a.id.id, a.perms) for a in ops.get_acls(p)[0])
    if have != want:
        bad.append(f"{p}: acl {have}")
    for name, zk in (("no credentials", none), ("a digest", digest), ("the operator", ops)):
        tries = [("write", lambda: zk.set(p, b"{}")), ("create under", lambda: zk.create(p + "/x")),
                 ("delete", lambda: zk.delete(p))]
        if zk is not ops:
            tries += [("read", lambda: zk.get(p)), ("list", lambda: zk.get_children(p))]
        for what, f in tries:
            try:
                f()
                bad.append(f"{p}: {name} may {what}")
            except NoAuthError:
                pass
            except NotEmptyError:
                pass  # /patroni's parent is the root (world): refused only because it has children
    try:
        ops.get(p)
    except NoAuthError:
        bad.append(f"{p}: the operator may not read")

# A certificate that the stack's CA did not sign gets no session on the TLS port.
other = f"{d}/tls-other"
os.makedirs(other, mode=0o700, exist_ok=True)
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{other}/k.pem",
                "-out", f"{other}/c.pem", "-days", "1", "-subj", "/CN=patroni"], check=True, capture_output=True)
logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # its handshake errors, expected
try:
    stranger = KazooClient(hosts=tls, use_ssl=True, ca=f"{t}/ca.pem", certfile=f"{other}/c.pem",
                           keyfile=f"{other}/k.pem", connection_retry={"max_tries": 2})
    stranger.start(timeout=5)
    try:
        stranger.get("/patroni/drover/leader")
        bad.append("a self-signed CN=patroni read the leader key")
    except NoAuthError:
        pass
    stranger.stop()
except Exception:  # the handshake refused (kazoo's timeout or its SSL error): what we want
    pass

need = ["/patroni/drover/leader", "/patroni/drover/members", "/patroni/drover/config", "/patroni/drover/sync"]
missing = [m for m in need if m not in paths]
if missing:
    bad.append(f"the walk missed {missing}")
for b in bad[:20]:
    print("FAIL:", b)
print(f"walked {len(paths)} znodes under /patroni, {len(bad)} problems")
sys.exit(1 if bad else 0)
