#!/usr/bin/python3
"""pg_writer.py CONNINFO ACKED STOP: numbered writes, each recorded only once acknowledged.

For pg_rejoin.sh (issue 23). Inserts 1, 2, 3, ... into the table burst, one transaction each,
through CONNINFO (the stack's multi-host string, target_session_attrs=read-write), and appends a
number to the file ACKED (flushed) only after its COMMIT returned. A write that meets an error
(the primary killed, a read-only server) is not recorded, the connection is made again, and the
next number is tried: its fate is unknown, which the test allows (present or not). Runs until the
file STOP exists.
"""
import os
import sys
import time

import psycopg2

conninfo, acked, stop = sys.argv[1:4]
out = open(acked, "a", buffering=1)
conn = None
i = 0
while not os.path.exists(stop):
    try:
        if conn is None:
            conn = psycopg2.connect(conninfo)
        i += 1
        with conn.cursor() as cur:
            cur.execute("INSERT INTO burst (i) VALUES (%s)", (i,))
        conn.commit()
        out.write(f"{i}\n")
        out.flush()
        os.fsync(out.fileno())
    except psycopg2.Error:
        try:
            if conn is not None:
                conn.close()
        except psycopg2.Error:
            pass
        conn = None
        time.sleep(0.1)
