#!/usr/bin/python3
"""autofill_pairs.py: the autofill/afterfill passes of scripts/agc_passes.sh (issue 38), for two
ferry builds side by side, in alternating pairs, so that the machine's load hits both alike.

Per build and pair: a cold pass (`ferry analyze agc`) in a fresh cache with replica = auto
(autofill), the time from its end until every file's replica serves (stage >= 1, no basket
missing: the same test as agc_passes.sh's poll), the pass right after (afterfill), then a
cold and a warm pass in a fresh replica = manual cache (warm: the byte tier's pass), and the
wait for the stage-2 re-encodings to end before the next run (so that they do not land in it).

usage: autofill_pairs.py --build A_DIR --build B_DIR --data SET_DIR [--pairs N] [--out FILE]
  A_DIR, B_DIR: directories with bin/ferry and lib/libXrdClFerry-5.so (a build tree or a copy)
  SET_DIR: a set of agc_passes.sh --data-dir (world-readable: xrootd serves it)
Behind the test bed's WAN emulation (40 ms RTT, 1 Gbit/s), as agc_passes.sh. Prints one line per
run and the medians; --out gets every run as JSON.
"""
import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TB = os.path.join(HERE, "..", "scripts", "testbed")


def sh(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, text=True, **kw).stdout


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Bed:
    def __init__(self, data):
        self.work = tempfile.mkdtemp(prefix="ferry-afp.")
        os.chmod(self.work, 0o755)
        os.environ["FERRY_TB_DIR"] = os.path.join(self.work, "tb")
        os.environ["HOME"] = os.path.join(self.work, "home")
        self.conf = os.path.join(os.environ["HOME"], ".xrootd", "client.plugins.d")
        os.makedirs(self.conf)
        os.environ["XRD_PLUGINCONFDIR"] = self.conf
        self.name = "ftb-afp%d" % (os.getpid() % 100000)
        self.wan = False
        sh("bash", os.path.join(TB, "wan.sh"), "up", "--rtt", "40ms", "--rate", "1000mbit",
           "--name", self.name)
        self.wan = True
        root = os.path.dirname(os.path.abspath(data))
        url = sh("bash", os.path.join(TB, "origin.sh"), "start", "--netns", self.name, "--name",
                 self.name, "--dir", root).strip().rstrip("/")
        self.urls = [url + "//" + os.path.relpath(f, root)
                     for f in sorted(glob.glob(os.path.join(data, "*.root")))]

    def close(self):
        subprocess.run(["bash", os.path.join(TB, "origin.sh"), "stop", "--name", self.name],
                       capture_output=True)
        if self.wan:
            subprocess.run(["bash", os.path.join(TB, "wan.sh"), "down", "--name", self.name],
                           capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)


def files_status(ferry, cache):
    p = subprocess.run([ferry, "cache", "replica", "status", "--dir", cache, "--json"],
                       capture_output=True, text=True)
    return json.loads(p.stdout)["files"] if p.returncode == 0 else []


def ready(files):
    return bool(files) and all(f["stage"] >= 1 and f["missing_baskets"] == 0
                               and f["state"] in ("built", "building") for f in files)


def stage2(files):
    return bool(files) and all(f["stage"] == 2 and f["state"] == "built" for f in files)


def manifests(cache):
    return len(glob.glob(os.path.join(cache, "**", "*.rpm"), recursive=True))


def wait_for(ferry, cache, test, nfiles, limit_s, seen=None):
    """The time when `test` held (-1: not within limit_s). Polls the manifests' count cheaply
    and `replica status` once they are all there; `seen` gets the last status."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if manifests(cache) >= nfiles:
            files = files_status(ferry, cache)
            if test(files):
                if seen is not None:
                    seen.extend(files)
                return time.time()
        time.sleep(0.005)
    return -1


def last_stage1_publish(cache, files):
    """The mtime of the newest stage-1 manifest among `files` (status entries), and how many
    stage-1 manifests there are: without the poll's own latency."""
    times = []
    for f in files:
        if f["stage"] == 1:
            path = glob.glob(os.path.join(cache, "entries", "*", f["key"] + ".rpm"))
            if path:
                times.append(os.stat(path[0]).st_mtime_ns / 1e9)
    return (max(times) if times else None), len(times)


def agc(ferry, urls):
    c0, t0 = children_cpu(), time.time()
    out = sh(ferry, "analyze", "agc", *urls, "--threads", "2", "--reads", "16", "--json")
    t1 = time.time()
    return t1 - t0, children_cpu() - c0, t1, json.loads(out)["digest"]


def enable(bed, ferry, build, cache, mode):
    sh(ferry, "cache", "enable", "--dir", cache, "--conf-dir", bed.conf, "--lib",
       os.path.join(build, "lib", "libXrdClFerry-5.so"), "--set", "replica=" + mode)


def run(bed, build, tag):
    ferry = os.path.join(build, "bin", "ferry")
    n = len(bed.urls)
    r = {"build": build, "load": float(open("/proc/loadavg").read().split()[0])}
    cache = os.path.join(bed.work, "cache-auto-" + tag)
    enable(bed, ferry, build, cache, "auto")
    r["fill_s"], r["fill_cpu_s"], end, digest = agc(ferry, bed.urls)
    seen = []
    t = wait_for(ferry, cache, ready, n, 120, seen)
    r["ready_s"] = t - end if t > 0 else -1
    r["ready_pct"] = 100 * r["ready_s"] / r["fill_s"]
    last, r["stage1_files"] = last_stage1_publish(cache, seen)
    # The last relocation's publish after the pass's end (<= 0: all were published before it).
    r["published_after_s"] = (last - end) if last is not None else None
    r["afterfill_s"], r["afterfill_cpu_s"], _, d2 = agc(ferry, bed.urls)
    t = wait_for(ferry, cache, stage2, n, 120)
    r["stage2_waited"] = t > 0
    manual = os.path.join(bed.work, "cache-manual-" + tag)
    enable(bed, ferry, build, manual, "manual")
    r["cold_s"], r["cold_cpu_s"], _, d3 = agc(ferry, bed.urls)
    r["warm_s"], r["warm_cpu_s"], _, d4 = agc(ferry, bed.urls)
    r["digests_agree"] = len({digest, d2, d3, d4}) == 1
    sh(ferry, "cache", "disable", "--conf-dir", bed.conf)
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(manual, ignore_errors=True)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    bed = Bed(a.data)
    runs = []
    try:
        for k in range(a.pairs):
            order = a.build if k % 2 == 0 else list(reversed(a.build))
            for i, b in enumerate(order):
                r = run(bed, os.path.abspath(b), "%d-%d" % (k, i))
                r["pair"] = k
                runs.append(r)
                pub = r["published_after_s"]
                print("pair %d %-28s load %.1f fill %.3f s (cpu %.2f) ready %.3f s = %.1f%%"
                      " (last stage-1 publish %s, %d files) afterfill %.3f warm %.3f cold %.3f%s" % (
                          k, b[-28:], r["load"], r["fill_s"], r["fill_cpu_s"], r["ready_s"],
                          r["ready_pct"], "-" if pub is None else "%+.3f s" % pub,
                          r["stage1_files"], r["afterfill_s"], r["warm_s"], r["cold_s"],
                          "" if r["digests_agree"] else " DIGESTS DIFFER"), flush=True)
    finally:
        bed.close()
        if a.out:
            with open(a.out, "w") as f:
                json.dump(runs, f, indent=1)
    for b in a.build:
        mine = [r for r in runs if r["build"] == os.path.abspath(b)]
        med = {k: statistics.median(r[k] for r in mine)
               for k in ("ready_pct", "ready_s", "fill_s", "fill_cpu_s", "afterfill_s", "warm_s",
                         "cold_s")}
        print("median %s: " % b + " ".join("%s %.3f" % kv for kv in med.items()))


if __name__ == "__main__":
    sys.exit(main())
