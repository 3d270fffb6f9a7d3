#!/usr/bin/python3
"""taskflow_wide: Drover's wide DAG run by OpenStack TaskFlow, for a side-by-side figure.

    /usr/bin/python3 bench/peers/taskflow_wide.py --zk HOST:PORT [--chains 2000] [--steps 5]
        [--workers 64] [--flow-chains 100] [--path /taskflow-bench-X] [--no-persistence]

(Debian's python3, where python3-taskflow 5.0 is installed: bench/run peers installs it.)

The shape is bench/engine/engine_bench.sh's wide DAG: 2,000 nodes of the `single` template,
each a chain of five tasks (create, confirm, bootstrap, base install, configure: each depends
on the one before), the chains independent of each other; 10,000 tasks. Here: an unordered
flow of CHAINS linear flows of STEPS tasks, run by TaskFlow's parallel engine (a thread pool
of WORKERS) with its ZooKeeper persistence backend (taskflow.persistence.backends, kazoo) on
the bench stack's ZooKeeper: every atom's state change is written to ZooKeeper before the
engine goes on, as Drover's attempts are recorded before they count. With the stack's
forceSync on, those writes are durable.

TaskFlow saves a flow's atoms in one ZooKeeper transaction when the engine is prepared; a
flow of 2,000 tasks exceeds ZooKeeper's 1 MB request limit (jute.maxbuffer: the server drops
the connection, kazoo's ConnectionLoss), 500 fit. So the wide DAG is cut into flows of
FLOW_CHAINS chains (default 100: 500 tasks), each in a logbook of its own (a flow's save
writes its whole logbook in one transaction too), all prepared first, then run at once, each
engine in a thread of its own, their tasks on one shared pool of WORKERS threads: as parallel
as TaskFlow goes in one process. Preparing (compile, save every atom) is not in the rate.

Each task is a no-op Python function that notes the time it ran. Drover's wide DAG runs the
`noop` plugin, which is built into the worker ("builtin:noop": no process is spawned), so
neither side forks a process per task.

Throughput is measured as Drover's is: tasks / (the last task's end, recorded, - the first
task's start). Here the end is when engine.run() returns, every state saved. Two lines:

    taskflow: N noop tasks in S s: R tasks/s (chains C x steps K in F flows run at once,
        W threads, zookeeper persistence at ...; compile and prepare P s; load L)
    taskflow: CPU while the engines ran: TaskFlow C s, zookeeper Z s: M ms per task
"""

import argparse
import contextlib
from concurrent import futures
import os
import re
import sys
import threading
import time
import uuid

from taskflow import engines
from taskflow import task
from taskflow.patterns import linear_flow
from taskflow.patterns import unordered_flow
from taskflow.persistence import backends
from taskflow.persistence import models
from taskflow.utils import kazoo_utils

STARTS = []


def proc_cpu(pid):
    """User + system CPU seconds of process PID (/proc), or 0 without a pid."""
    if not pid:
        return 0.0
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
LOCK = threading.Lock()


class Noop(task.Task):
    """Succeeds at once; notes when the first one started."""

    def execute(self):
        if not STARTS:
            with LOCK:
                if not STARTS:
                    STARTS.append(time.monotonic())


def wide_flow(name, first, chains, steps):
    top = unordered_flow.Flow(name)
    for c in range(first, first + chains):
        chain = linear_flow.Flow("node-%d" % c)
        for s in range(steps):
            chain.add(Noop(name="n%d-t%d" % (c, s)))
        top.add(chain)
    return top


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--zk", help="ZooKeeper HOST:PORT (the bench stack's)")
    p.add_argument("--chains", type=int, default=2000)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--workers", type=int, default=64)
    p.add_argument("--zk-pid", type=int,
                   help="ZooKeeper's pid: its CPU while the engines run is printed too")
    p.add_argument("--flow-chains", type=int, default=100,
                   help="chains per TaskFlow flow (ZooKeeper backend: at most about 100)")
    p.add_argument("--path", default="/taskflow-bench-%s" % uuid.uuid4().hex[:8])
    p.add_argument("--no-persistence", action="store_true",
                   help="TaskFlow's in-memory backend instead (not durable; for reference)")
    a = p.parse_args()
    if not a.no_persistence and not a.zk:
        p.error("--zk is required (or --no-persistence)")
    if min(a.chains, a.steps, a.workers, a.flow_chains) < 1:
        p.error("--chains, --steps, --workers and --flow-chains must be at least 1")

    if a.no_persistence:
        conf = {"connection": "memory://"}
        kind = "in-memory persistence (not durable)"
    else:
        conf = {"connection": "zookeeper://", "hosts": a.zk, "path": a.path}
        kind = "zookeeper persistence at %s%s" % (a.zk, a.path)
    client = None
    if not a.no_persistence:
        # TaskFlow checks the server's version with kazoo's server_version(), which asks
        # for the `envi` four-letter word; the stack allows only ruok, srvr, stat, mntr,
        # cons and wchs (scripts/stack), so the version is read from `srvr` instead.
        client = kazoo_utils.make_client(conf)
        client.start()

        def server_version(retries=3):
            out = client.command(b"srvr")
            m = re.search(r"version: (\d+)\.(\d+)\.(\d+)", out)
            return tuple(int(x) for x in m.groups())

        client.server_version = server_version
    backend = backends.fetch(conf, client=client)
    with contextlib.closing(backend.get_connection()) as conn:
        conn.upgrade()
    books = []
    pool = futures.ThreadPoolExecutor(max_workers=a.workers)
    t0 = time.monotonic()
    runs = []
    for first in range(0, a.chains, a.flow_chains):
        flow = wide_flow("wide-%d" % first, first, min(a.flow_chains, a.chains - first), a.steps)
        # A logbook of its own per flow: saving a flow's detail saves its whole logbook in
        # one transaction, so one shared book would outgrow the request limit in turn.
        books.append(models.LogBook("wide-%d-%s" % (first, uuid.uuid4().hex[:8])))
        engine = engines.load(flow, backend=backend, book=books[-1], engine="parallel",
                              executor=pool)
        engine.compile()
        engine.prepare()
        runs.append(engine)
    t1 = time.monotonic()
    errors = []

    def run(engine):
        try:
            engine.run()
        except Exception as e:  # reported below, the run fails
            errors.append(e)

    c1 = os.times()
    z1 = proc_cpu(a.zk_pid)
    threads = [threading.Thread(target=run, args=(e,)) for e in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t2 = time.monotonic()
    c2 = os.times()
    z2 = proc_cpu(a.zk_pid)
    cpu = (c2.user - c1.user) + (c2.system - c1.system)
    pool.shutdown()
    if errors:
        print("taskflow: FAIL: %s" % errors[0], file=sys.stderr)
        return 1
    n = a.chains * a.steps
    first = STARTS[0] if STARTS else t1
    secs = t2 - first
    with contextlib.closing(backend.get_connection()) as conn:
        done = 0
        for book in books:
            saved = conn.get_logbook(book.uuid)
            done += sum(1 for fd in saved for ad in fd if ad.state == "SUCCESS")
            try:  # the stack's ZooKeeper stays small for the next run
                conn.destroy_logbook(book.uuid)
            except Exception as e:
                print("taskflow: logbook %s left in ZooKeeper (%s)" % (book.uuid, e),
                      file=sys.stderr)
    backend.close()
    if client is not None:
        client.stop()
        client.close()
    if done != n:
        print("taskflow: FAIL: %d of %d tasks saved as SUCCESS" % (done, n), file=sys.stderr)
        return 1
    print("taskflow: %d noop tasks in %.3f s: %.0f tasks/s (chains %d x steps %d in %d flows run"
          " at once, %d threads, %s; compile and prepare %.1f s; load %.2f)"
          % (n, secs, n / secs, a.chains, a.steps, len(runs), a.workers, kind, t1 - t0,
             os.getloadavg()[0]))
    print("taskflow: CPU while the engines ran: TaskFlow %.2f s, zookeeper %.2f s: %.3f ms per task"
          % (cpu, z2 - z1, (cpu + z2 - z1) * 1000 / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
