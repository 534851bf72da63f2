#!/usr/bin/env python3
"""Samples a byte counter (a network interface's rx_bytes) every 20 ms until SIGTERM, or for
at most MAX_SECONDS, and writes "seconds bytes" lines to OUT: the link's rate over a pass, so a
report can tell its transfer phases from its opens and CPU (bench/lib/report.py:
transfer_rate).

usage: link_sampler.py COUNTER_FILE OUT [MAX_SECONDS]
"""
import signal
import sys
import time

counter, out = sys.argv[1], sys.argv[2]
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 3600.0
stop = False


def on_term(_signum, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
t0 = time.monotonic()
rows = []
while not stop and time.monotonic() - t0 < limit:
    with open(counter) as f:
        rows.append((time.monotonic() - t0, int(f.read())))
    time.sleep(0.02)
with open(out, "w") as f:
    f.writelines("%.3f %d\n" % r for r in rows)
