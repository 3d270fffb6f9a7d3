#!/usr/bin/python3
"""small_load: many small jobs through the HTTP API, and one alone (docs/benchmarks.md).

    small_load.py load --ports P1,P2,P3 --token TOK --pg CONNINFO --zk HOST:PORT
                       [--jobs N] [--in-flight F] [--clients C] [--prefix NAME]
    small_load.py lone --ports P1 --token TOK --pg CONNINFO --logs 'GLOB' [--runs K]

Run by bench/engine/engine_small.sh, which starts the stack, droverd and the workers.

load: C clients (threads) submit N cluster creates of the `single` template, 1 to 3 nodes
(job i gets 1 + i % 3), with POST /v1/clusters, as a user would, each client on one droverd
in turn (a load balancer's round robin). At most F jobs are unfinished at once: a client
waits for a free slot before it submits. A watcher (one PostgreSQL connection, one query
every 50 ms) frees a slot when a job's row says it ended; the bench's own queries are
counted and taken out of the transaction figures. Figures:
  - jobs/s: N / (the last job's end - the first request), from the job rows' ended_at;
  - request to succeeded: ended_at - the client's clock when it sent the POST (one clock:
    the same machine), median and p99;
  - the POST's own time (request to 202), median and p99, and the mean number of jobs in
    flight (when it stays well below F, the clients' submissions bound the rate, not F);
  - PostgreSQL: transaction ids (growth of the transaction id counter: every transaction
    that wrote, and every savepoint that wrote in one, since a batch of several jobs' parts
    runs each under a savepoint; read-only ones not) and all commits (pg_stat_database
    xact_commit, after a wait of 11 s: a backend flushes its counters when idle, within
    10 s), each per job; and the server's WAL syncs and writes per job (pg_stat_wal: the
    durable flushes; a sync carries every commit that waits for it) and its WAL bytes per job
    (pg_current_wal_lsn's growth);
  - ZooKeeper: requests received (mntr zk_packets_received, every client's, idle pings too)
    and transactions (growth of the zxid, srvr), each per job and per task;
  - under load, the parts of request to succeeded of every tenth job, as lone's below (without
    the owner's log: its start is jobs.started_at), median and p90.

lone: K jobs of 3 nodes of `single`, one after the other, nothing else running; each one's
request to succeeded split in four: request to job row (jobs.created_at), job row to the
owner's first dispatch (its log's event=first-dispatch at_ms), first dispatch to the last
task's end (of which: the tasks' own time along the longest chain of the plan, and the
hops: a dependent step's wait from its dependencies' end to its own start), last task's
end to succeeded (jobs.ended_at).
"""
import argparse
import glob
import http.client
import json
import re
import socket
import sys
import threading
import time

import psycopg2

FINAL = ("succeeded", "failed", "rolled-back", "cancelled", "needs-operator")


def now_ms():
    return time.time() * 1000.0


class Pg:
    """One autocommit connection; counts its own statements (each one is a transaction)."""

    def __init__(self, conninfo):
        self.conn = psycopg2.connect(conninfo)
        self.conn.autocommit = True
        self.statements = 0

    def q(self, sql, args=None):
        with self.conn.cursor() as c:
            c.execute(sql, args)
            self.statements += 1
            return c.fetchall() if c.description else []


def zk_word(hostport, word):
    host, port = hostport.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(word.encode())
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    return out.decode()


def zk_counters(hostport):
    """(requests received, last zxid) of one ZooKeeper server."""
    m = re.search(r"^zk_packets_received\s+(\d+)", zk_word(hostport, "mntr"), re.M)
    z = re.search(r"^Zxid: (0x[0-9a-f]+)", zk_word(hostport, "srvr"), re.M)
    if not m or not z:
        sys.exit("small_load: no zk_packets_received or Zxid from ZooKeeper at " + hostport)
    return int(m.group(1)), int(z.group(1), 16)


def pg_counters(pg):
    """(xid counter, xact_commit of the database): the first call itself takes one xid."""
    r = pg.q("SELECT pg_current_xact_id()::text::bigint,"
             " (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())")
    return int(r[0][0]), int(r[0][1])


def pg_wal(pg):
    """(WAL syncs, WAL writes, WAL position in bytes) of the server: pg_stat_wal's durable
    flushes, and pg_current_wal_lsn() (every client's WAL, full-page images included)."""
    r = pg.q("SELECT wal_sync, wal_write, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
             " FROM pg_stat_wal")
    return int(r[0][0]), int(r[0][1]), int(r[0][2])


class Api:
    """A client's keep-alive connection to one droverd."""

    def __init__(self, port, token):
        self.port, self.token, self.c = port, token, None

    def call(self, method, path, body=None):
        for attempt in range(5):
            try:
                if self.c is None:
                    self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                h = {"Authorization": "Bearer " + self.token}
                data = None
                if body is not None:
                    data = json.dumps(body).encode()
                    h["Content-Type"] = "application/json"
                self.c.request(method, path, body=data, headers=h)
                r = self.c.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                if self.c:
                    self.c.close()
                self.c = None
                if attempt == 4:
                    raise
                time.sleep(0.1)
        raise RuntimeError("unreachable")


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * p))] if s else float("nan")


def median(xs):
    s = sorted(xs)
    return s[(len(s) - 1) // 2] if s else float("nan")


def cmd_load(a):
    ports = [int(p) for p in a.ports.split(",")]
    pg = Pg(a.pg)
    lock = threading.Condition()
    state = {"next": 0, "inflight": {}, "done": {}, "refused": 0, "errors": [], "t_req": {},
             "answer": [], "samples": []}
    n = a.jobs

    def client(k):
        api = Api(ports[k % len(ports)], a.token)
        while True:
            with lock:
                while len(state["inflight"]) >= a.in_flight and not state["errors"]:
                    lock.wait(0.5)
                if state["next"] >= n or state["errors"]:
                    return
                i = state["next"]
                state["next"] += 1
                state["inflight"][("pending", i)] = None
            body = {"name": "%s-%d" % (a.prefix, i), "template": "single", "nodes": 1 + i % 3}
            while True:
                t0 = now_ms()
                code, out = api.call("POST", "/v1/clusters", body)
                if code != 429:
                    break
                with lock:
                    state["refused"] += 1
                time.sleep(0.05)
            with lock:
                del state["inflight"][("pending", i)]
                if code != 202:
                    state["errors"].append("POST %s: %d %s" % (body["name"], code, out[:300]))
                    lock.notify_all()
                    return
                jid = int(json.loads(out)["job"]["id"])
                state["t_req"][jid] = t0
                state["answer"].append(now_ms() - t0)
                state["inflight"][jid] = i

    t_first = now_ms()
    z0 = zk_counters(a.zk)
    w0 = pg_wal(pg)
    x0, c0 = pg_counters(pg)
    s0 = pg.statements
    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(a.clients)]
    for t in threads:
        t.start()
    deadline = time.time() + a.timeout
    while True:
        with lock:
            ids = [j for j in state["inflight"] if isinstance(j, int)]
            state["samples"].append(len(state["inflight"]))
            finished = len(state["done"]) >= n or state["errors"]
        if finished:
            break
        if time.time() > deadline:
            sys.exit("small_load: timed out after %d s: %d of %d jobs ended"
                     % (a.timeout, len(state["done"]), n))
        if ids:
            rows = pg.q("SELECT id, status, extract(epoch FROM ended_at) * 1000 FROM jobs"
                        " WHERE id = ANY(%s) AND status = ANY(%s)", (ids, list(FINAL)))
            with lock:
                for jid, st, ended in rows:
                    state["done"][jid] = (st, float(ended) if ended is not None else now_ms())
                    del state["inflight"][jid]
                lock.notify_all()
        time.sleep(0.05)
    for t in threads:
        t.join()
    if state["errors"]:
        sys.exit("small_load: " + "; ".join(state["errors"][:3]))
    z1 = zk_counters(a.zk)
    x1, _ = pg_counters(pg)
    # Each backend publishes its commit counts when idle, within 10 s (PGSTAT_IDLE_INTERVAL).
    time.sleep(11)
    _, c1 = pg_counters(pg)
    bench_stmts = pg.statements - s0  # the bench's own statements: each one a transaction
    w1 = pg_wal(pg)
    bad = {j: d[0] for j, d in state["done"].items() if d[0] != "succeeded"}
    lat = [state["done"][j][1] - state["t_req"][j] for j in state["done"]]
    t_last = max(d[1] for d in state["done"].values())
    tasks = pg.q("SELECT count(*) FROM task_attempts WHERE job_id = ANY(%s) AND status = 'succeeded'",
                 (list(state["done"]),))[0][0]
    secs = (t_last - t_first) / 1000.0
    print("small: %d jobs (%d tasks), %d clients, at most %d in flight: %d succeeded, %d not%s"
          % (n, tasks, a.clients, a.in_flight, n - len(bad), len(bad),
             (" (" + ", ".join("%s %s" % kv for kv in list(bad.items())[:5]) + ")") if bad else ""))
    print("small: %.1f jobs/s (%.1f tasks/s) over %.1f s, first request to last job ended"
          % (n / secs, tasks / secs, secs))
    print("small: request to succeeded: median %.0f ms, p99 %.0f ms, max %.0f ms"
          % (median(lat), pct(lat, 0.99), max(lat)))
    print("small: POST /v1/clusters answered (request to 202) in median %.0f ms, p99 %.0f ms;"
          " jobs in flight (submitted or being submitted, not ended): mean %.1f of at most %d"
          % (median(state["answer"]), pct(state["answer"], 0.99),
             sum(state["samples"]) / max(len(state["samples"]), 1), a.in_flight))
    if state["refused"]:
        print("small: %d POSTs refused with 429 and sent again" % state["refused"])
    # Write transactions: the xid counter's growth, less the one this bench's counter read takes.
    print("small: PostgreSQL: %.1f transaction ids per job (writing transactions and their"
          " savepoints), %.1f commits per job"
          " (pg_stat_database xact_commit; every client, less the bench's own %d statements)"
          % ((x1 - x0 - 1) / n, (c1 - c0 - bench_stmts) / n, bench_stmts))
    print("small: PostgreSQL WAL: %.1f syncs per job, %.1f writes per job (pg_stat_wal: the"
          " server's durable flushes, every client's; one sync carries every commit waiting),"
          " %.1f KB per job (the WAL position's growth, full-page images included)"
          % ((w1[0] - w0[0]) / n, (w1[1] - w0[1]) / n, (w1[2] - w0[2]) / n / 1024.0))
    print("small: ZooKeeper: %.1f requests per job (%.2f per task; every client, idle ones too),"
          " %.2f transactions per job (%.3f per task)"
          % ((z1[0] - z0[0]) / n, (z1[0] - z0[0]) / max(tasks, 1), (z1[1] - z0[1]) / n,
             (z1[1] - z0[1]) / max(tasks, 1)))
    # Where a job's time goes under this load: the parts of request to succeeded, as the lone
    # jobs' (below), for every tenth job (read after the counters: not counted in them).
    parts = {"row": [], "start": [], "first": [], "hops": [], "end": []}
    for jid in sorted(state["done"])[::10]:
        if jid in bad:
            continue
        sp = lone_split(pg, jid, state["t_req"][jid])
        parts["row"].append(sp["created"] - sp["t_req"])
        parts["start"].append(sp["started"] - sp["created"])
        parts["first"].append(sp["first_task"] - sp["started"])
        parts["hops"].extend(sp["hops"])
        parts["end"].append(sp["ended"] - sp["last_end"])
    if parts["row"]:
        print("small: under load, median (p90) of %d jobs: request to job row %.0f (%.0f) ms, job row"
              " to owner's start %.0f (%.0f), owner's start to first task's start %.0f (%.0f), each"
              " dependent step's hop %.0f (%.0f), last task's end to succeeded %.0f (%.0f)"
              % (len(parts["row"]), median(parts["row"]), pct(parts["row"], 0.9),
                 median(parts["start"]), pct(parts["start"], 0.9), median(parts["first"]),
                 pct(parts["first"], 0.9), median(parts["hops"]), pct(parts["hops"], 0.9),
                 median(parts["end"]), pct(parts["end"], 0.9)))
    return 1 if bad else 0


def first_dispatch_ms(logs, jid):
    pat = re.compile(r"event=first-dispatch job=%d\b.*?at_ms=(\d+)" % jid)
    best = None
    for f in glob.glob(logs):
        with open(f, errors="replace") as fh:
            for line in fh:
                m = pat.search(line)
                if m and (best is None or int(m.group(1)) < best):
                    best = int(m.group(1))
    return best


def lone_split(pg, jid, t_req):
    """The four parts of one job's request to succeeded, and its hops."""
    created, started, ended = pg.q(
        "SELECT extract(epoch FROM created_at) * 1000, extract(epoch FROM started_at) * 1000,"
        " extract(epoch FROM ended_at) * 1000 FROM jobs WHERE id = %s", (jid,))[0]
    rows = pg.q("SELECT t.idx, t.deps, extract(epoch FROM a.started_at) * 1000,"
                " extract(epoch FROM a.ended_at) * 1000 FROM tasks t"
                " LEFT JOIN task_attempts a ON a.job_id = t.job_id AND a.phase = t.phase"
                " AND a.task_id = t.id AND a.status = 'succeeded'"
                " WHERE t.job_id = %s AND t.phase = 'f'", (jid,))
    deps = {r[0]: (r[1] if isinstance(r[1], list) else json.loads(r[1] or "[]")) for r in rows}
    start = {r[0]: float(r[2]) for r in rows if r[2] is not None}
    end = {r[0]: float(r[3]) for r in rows if r[3] is not None}
    dur = {i: end[i] - start[i] if i in start and i in end else 0.0 for i in deps}
    memo = {}

    def chain(i):  # the longest chain of the tasks' own times ending with task i
        if i not in memo:
            memo[i] = dur[i] + max([chain(d) for d in deps[i]] or [0.0])
        return memo[i]

    memo_end = {}

    def eff_end(i):  # when task i was done: its own end, or an anchor's dependencies' end
        if i not in memo_end:
            if i in end:
                memo_end[i] = end[i]
            else:
                es = [e for e in (eff_end(d) for d in deps[i]) if e is not None]
                memo_end[i] = max(es) if es else None
        return memo_end[i]

    hops = []
    for i in start:
        before = [e for e in (eff_end(d) for d in deps[i]) if e is not None]
        if before:
            hops.append(start[i] - max(before))
    return {"created": float(created), "started": float(started), "ended": float(ended),
            "first_task": min(start.values()), "last_end": max(end.values()),
            "own": max(chain(i) for i in deps), "hops": sorted(hops), "tasks": len(end),
            "t_req": t_req}


def cmd_lone(a):
    port = int(a.ports.split(",")[0])
    pg = Pg(a.pg)
    api = Api(port, a.token)
    out = []
    for k in range(a.runs):
        body = {"name": "%s-%d" % (a.prefix, k), "template": "single", "nodes": 3}
        t0 = now_ms()
        code, data = api.call("POST", "/v1/clusters", body)
        if code != 202:
            sys.exit("small_load: POST %s: %d %s" % (body["name"], code, data[:300]))
        jid = int(json.loads(data)["job"]["id"])
        deadline = time.time() + 120
        while True:
            st = pg.q("SELECT status FROM jobs WHERE id = %s", (jid,))[0][0]
            if st in FINAL:
                break
            if time.time() > deadline:
                sys.exit("small_load: lone job %d still %s after 120 s" % (jid, st))
            time.sleep(0.02)
        if st != "succeeded":
            sys.exit("small_load: lone job %d ended %s" % (jid, st))
        s = lone_split(pg, jid, t0)
        fd = None
        for _ in range(50):  # the log line may reach the file after the job's end
            fd = first_dispatch_ms(a.logs, jid)
            if fd is not None:
                break
            time.sleep(0.1)
        if fd is None:
            sys.exit("small_load: no event=first-dispatch of job %d in %s" % (jid, a.logs))
        s["dispatch"] = float(fd)
        out.append(s)
        print("lone: job %d, 3 nodes, %d tasks: request to succeeded %.0f ms = request to job row"
              " %.0f + job row to first dispatch %.0f (owner's start at %.0f) + first dispatch to last"
              " task's end %.0f (tasks' own time along the longest chain %.0f; hops median %.0f ms,"
              " max %.0f over %d dependent steps) + last task's end to succeeded %.0f"
              % (jid, s["tasks"], s["ended"] - t0, s["created"] - t0, s["dispatch"] - s["created"],
                 s["started"] - s["created"], s["last_end"] - s["dispatch"], s["own"],
                 median(s["hops"]), max(s["hops"] or [0]), len(s["hops"]),
                 s["ended"] - s["last_end"]))
    if len(out) > 1:
        print("lone: median of %d: request to succeeded %.0f ms, request to row %.0f, row to first"
              " dispatch %.0f, first dispatch to last end %.0f (own %.0f), last end to succeeded %.0f"
              % (len(out), median([s["ended"] - s["t_req"] for s in out]),
                 median([s["created"] - s["t_req"] for s in out]),
                 median([s["dispatch"] - s["created"] for s in out]),
                 median([s["last_end"] - s["dispatch"] for s in out]),
                 median([s["own"] for s in out]), median([s["ended"] - s["last_end"] for s in out])))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=("load", "lone"))
    p.add_argument("--ports", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--pg", required=True)
    p.add_argument("--zk")
    p.add_argument("--logs", default="")
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--in-flight", type=int, default=100)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--prefix", default="small")
    p.add_argument("--timeout", type=int, default=1800)
    a = p.parse_args()
    if a.jobs < 1 or a.in_flight < 1 or a.clients < 1 or a.runs < 1:
        p.error("--jobs, --in-flight, --clients and --runs must be at least 1")
    if a.mode == "load" and not a.zk:
        p.error("load needs --zk")
    return cmd_load(a) if a.mode == "load" else cmd_lone(a)


if __name__ == "__main__":
    sys.exit(main())
