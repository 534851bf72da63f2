#!/usr/bin/python3
"""Copies through the site proxy from a local origin on 127.0.0.1 (issue 39), each run through a
fresh proxy and cache, in paired rounds of alternating order (the machine's load drifts):

  proxy_copies.py writes FERRY_A FERRY_B MIB ROUNDS [PROXY_ARG...]
      one cold xrdcp of a MIB file with the copy rule off (--copy-cache-fraction 1: all of it
      is cached), A and B in turn: wall time, writes_dropped, bytes from the origin, held bytes.
      FERRY_X may carry its own proxy arguments after '::' (ferry::--set::writeback_wait_ms=0).
  proxy_copies.py memory FERRY N MIB ROUNDS SMALL
      N concurrent cold xrdcp of N different MIB files with copy_memory SMALL and 1G in turn:
      wall time, the copies' peak memory, blocks refused, origin requests.

Prints one JSON line per run and a summary (medians); run with /usr/bin/python3 (XRootD's
test harness). Figures: docs/benchmarks.md, "The copies' memory and the write-behind queue".
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "proxy"))
sys.path.insert(0, os.path.join(ROOT, "tests", "testing"))
import ferry_harness  # noqa: E402
import ferry_testbed  # noqa: E402
from proxy_testbed import Proxy, settled  # noqa: E402


def big_file(s, name, mib):
    path = os.path.join(s.data, name)
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
    os.chmod(path, 0o644)
    return path


def origin_of(o):
    return o.url.split("//")[1].rstrip("/")


def writes(a, b, mib, rounds, extra):
    s = ferry_harness.Setup(a.split("::")[0], prefix="fbench-copies-")
    res = {"A": [], "B": []}
    try:
        big_file(s, "c.bin", mib)
        with ferry_testbed.Origin(s.data) as o:
            for rnd in range(rounds):
                for tag in (("A", "B") if rnd % 2 == 0 else ("B", "A")):
                    ferry, *own = (a if tag == "A" else b).split("::")
                    cache = os.path.join(s.root, "cache-%s%d" % (tag, rnd))
                    args = ["--copy-cache-fraction", "1", "--set", "min_free=0"] + extra + own
                    with Proxy(ferry, origin_of(o), cache, s.root, env=s.env, status_ms=50,
                               extra=args) as p:
                        load = os.getloadavg()[0]
                        t0 = time.monotonic()
                        rc = s.run("xrdcp", "-f", p.url_for("c.bin"), os.path.join(s.root, "out"))
                        wall = time.monotonic() - t0
                        settled(cache, 120)
                        st = s.stats(cache)
                        r = {"tag": tag, "round": rnd, "rc": rc.returncode, "wall_s": round(wall, 3),
                             "load": round(load, 1), "writes_dropped": st.get("writes_dropped"),
                             "origin_mib": round(st.get("bytes_from_origin", 0) / 2**20, 1),
                             "held_mib": round(sum(e.get("held_bytes", 0)
                                                   for e in s.ls(cache)) / 2**20, 1)}
                        res[tag].append(r)
                        print(json.dumps(r), flush=True)
                    shutil.rmtree(cache, ignore_errors=True)
        for tag in ("A", "B"):
            w = [r["wall_s"] for r in res[tag]]
            print(tag, "wall median %.3f (%.3f-%.3f)" % (statistics.median(w), min(w), max(w)),
                  "writes_dropped", [r["writes_dropped"] for r in res[tag]])
        ratios = [y["wall_s"] / x["wall_s"] for x, y in zip(res["A"], res["B"])]
        print("B/A wall per round", [round(x, 2) for x in ratios],
              "median %.2f" % statistics.median(ratios))
    finally:
        s.remove()


def memory(ferry, n, mib, rounds, small):
    s = ferry_harness.Setup(ferry, prefix="fbench-copies-")
    res = {}
    try:
        for k in range(n):
            big_file(s, "m%d.bin" % k, mib)
        with ferry_testbed.Origin(s.data) as o:
            for rnd in range(rounds):
                for mem in ((small, "1G") if rnd % 2 == 0 else ("1G", small)):
                    cache = os.path.join(s.root, "cache-%s-%d" % (mem, rnd))
                    with Proxy(ferry, origin_of(o), cache, s.root, env=s.env, status_ms=50,
                               extra=["--set", "min_free=0", "--set", "copy_memory=" + mem]) as p:
                        t0 = time.monotonic()
                        procs = [subprocess.Popen(
                            ["xrdcp", "-f", p.url_for("m%d.bin" % k),
                             os.path.join(s.root, "o%d" % k)], env=s.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                            for k in range(n)]
                        failed = sum(1 for q in procs if q.wait(timeout=900) != 0)
                        wall = time.monotonic() - t0
                        st = settled(cache, 120) or {}
                        r = {"copy_memory": mem, "round": rnd, "failed": failed,
                             "wall_s": round(wall, 2), "load": round(os.getloadavg()[0], 1),
                             "peak_mib": st.get("copy_memory_peak_bytes", 0) / 2**20,
                             "refused": st.get("copy_memory_refused"),
                             "origin_requests": st.get("origin_requests")}
                        res.setdefault(mem, []).append(r)
                        print(json.dumps(r), flush=True)
                    shutil.rmtree(cache, ignore_errors=True)
        for mem, rs in res.items():
            print(mem, "wall median %.2f" % statistics.median(r["wall_s"] for r in rs),
                  "peak MiB", [r["peak_mib"] for r in rs],
                  "origin requests", [r["origin_requests"] for r in rs])
    finally:
        s.remove()


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == "writes":
        writes(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:])
    elif len(sys.argv) == 7 and sys.argv[1] == "memory":
        memory(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
