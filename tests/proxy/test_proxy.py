#!/usr/bin/env python3
"""ferry's site proxy end to end: a real xrootd origin, a real xrootd proxy loading
libXrdFerryProxy (started with `ferry proxy run`), real clients.

usage: test_proxy.py FERRY PGREAD_PROBE ROOT_DATA_DIR TEST
  TEST: basic | concurrency | crash | faults | storm | cluster | twolevel (and *_long variants
  of crash and storm at full size)
Exit 0 = pass, 1 = fail, 77 = cannot run here (no xrootd, not root, no namespaces).
"""
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import ferry_testbed  # noqa: E402
from proxy_testbed import Proxy, Redirector, Skip  # noqa: E402

FERRY, PROBE, ROOT_DATA, TEST = sys.argv[1:5]
PY = "/usr/bin/python3"
READER = os.path.join(HERE, "proxy_reader.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


class Setup:
    """A world-readable work dir: data served by the origin, the proxy's cache, logs."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="fpx-it-")
        os.chmod(self.root, 0o755)
        self.data = os.path.join(self.root, "data")
        os.mkdir(self.data)
        os.chmod(self.data, 0o755)
        self.cache = os.path.join(self.root, "cache")
        self.env = dict(os.environ, XRD_CONNECTIONRETRY="1", XRD_CONNECTIONWINDOW="2",
                        XRD_REQUESTTIMEOUT="30", XRD_STREAMERRORWINDOW="2")
        self.env.pop("XRD_PLUGIN", None)
        # No client plug-in unless a test asks for one: the proxy is what is tested.
        self.env["XRD_PLUGINCONFDIR"] = os.path.join(self.root, "no-plugins")

    def file(self, name, size, seed):
        path = os.path.join(self.data, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(random.Random(seed).randbytes(size))
        os.chmod(path, 0o644)
        return path

    def copy_root(self, name):
        shutil.copy(os.path.join(ROOT_DATA, name), self.data)
        os.chmod(os.path.join(self.data, name), 0o644)
        return os.path.join(self.data, name)

    def run(self, *argv, timeout=180, env=None):
        return subprocess.run(list(argv), env=env or self.env, capture_output=True, text=True,
                              timeout=timeout)

    def reader(self, *args, timeout=180, env=None):
        return self.run(PY, READER, *args, timeout=timeout, env=env)

    def ferry(self, *args, timeout=180, env=None):
        return self.run(FERRY, *args, timeout=timeout, env=env)

    def stats(self, cache=None):
        p = self.ferry("cache", "stats", "--dir", cache or self.cache, "--json")
        if p.returncode != 0:
            raise RuntimeError("ferry cache stats: %s" % p.stderr)
        return json.loads(p.stdout)

    def verify(self, cache=None):
        p = self.ferry("cache", "verify", "--dir", cache or self.cache, "--json")
        return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else {})

    def settled(self, cache=None, seconds=20):
        """Waits until the proxy's write-behind published what it fetched (held bytes stop
        growing), so that a following pass can hit."""
        last, deadline = -1, time.time() + seconds
        while time.time() < deadline:
            p = self.ferry("cache", "ls", "--dir", cache or self.cache, "--json")
            held = sum(e["held_bytes"] for e in json.loads(p.stdout)["entries"]) \
                if p.returncode == 0 else 0
            if held == last and held > 0:
                return held
            last = held
            time.sleep(0.3)
        return last

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


def ok(p, what):
    return check(p.returncode == 0, "%s: exit %d %s %s" % (what, p.returncode,
                                                          p.stdout.strip()[-500:],
                                                          p.stderr.strip()[-1500:]))


def same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


# ---------------------------------------------------------------------------------------------

def test_basic():
    """python read/readv, pgread, xrdcp, ferry root dump and ferry analyze agc through the proxy
    read the origin's bytes; a second pass adds no origin bytes; access records; live CLI."""
    s = Setup()
    try:
        local = s.file("sub/a.bin", 6 * 1024 * 1024 + 11, 1)
        roots = []
        if os.path.isdir(ROOT_DATA):
            roots = [s.copy_root(n) for n in ("nano_dy.root",
                                             "nanoAOD_2015_CMS_Open_Data_ttbar.root")]
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), s.cache, s.root,
                      env=s.env) as p:
            url = p.url_for("sub/a.bin")

            def one_pass(tag):
                ok(s.reader("pass", url, local, "7"), "%s python read + vector read" % tag)
                out = os.path.join(s.root, "pg.out")
                q = s.run(PROBE, url, "4095", "300001", out)
                if ok(q, "%s pgread" % tag):
                    r = json.loads(q.stdout)
                    check(r["crc_ok"] and r["bytes"] == 300001,
                          "%s pgread checksums and length: %s" % (tag, r))
                    with open(local, "rb") as f:
                        f.seek(4095)
                        check(open(out, "rb").read() == f.read(300001), "%s pgread bytes" % tag)
                copy = os.path.join(s.root, "copy.bin")
                ok(s.run("xrdcp", "-f", "-s", url, copy), "%s xrdcp (pgread)" % tag)
                check(os.path.exists(copy) and same_file(copy, local), "%s xrdcp bytes" % tag)
                e2 = dict(s.env, XRD_CPUSEPGWRTRD="0")
                ok(s.run("xrdcp", "-f", "-s", url, copy, env=e2), "%s xrdcp (read)" % tag)
                check(same_file(copy, local), "%s xrdcp read bytes" % tag)
                for r in roots:
                    name = os.path.basename(r)
                    args = ["--tree", "Events", "--branch", "nJet", "--branch", "Jet_pt",
                            "--json"]
                    a = s.ferry("root", "dump", r, *args)
                    b = s.ferry("root", "dump", p.url_for(name), *args)
                    check(a.returncode == 0 and b.returncode == 0 and a.stdout == b.stdout,
                          "%s ferry root dump %s through the proxy: %s" % (tag, name,
                                                                           b.stderr[-500:]))
                if roots:
                    a = s.ferry("analyze", "agc", roots[1], "--json")
                    b = s.ferry("analyze", "agc", p.url_for(os.path.basename(roots[1])),
                                "--threads", "4", "--json")
                    check(a.returncode == 0 and b.returncode == 0, "%s agc ran: %s" %
                          (tag, b.stderr[-800:]))
                    if a.returncode == 0 and b.returncode == 0:
                        check(json.loads(a.stdout)["digest"] == json.loads(b.stdout)["digest"],
                              "%s agc digest through the proxy" % tag)

            one_pass("cold")
            s.settled()
            cold = s.stats()
            print("cold:", json.dumps(cold), flush=True)
            check(cold["bytes_from_origin"] > 0 and cold["misses"] > 0, "cold pass fetched")
            one_pass("warm")
            s.settled()
            warm = s.stats()
            print("warm:", json.dumps(warm), flush=True)
            check(warm["bytes_from_origin"] == cold["bytes_from_origin"],
                  "warm pass: no origin bytes (%d -> %d)" % (cold["bytes_from_origin"],
                                                            warm["bytes_from_origin"]))
            check(warm["origin_requests"] == cold["origin_requests"], "warm: no origin request")
            # Access records: one per closed file, summarised by ferry cache stats.
            acc = warm.get("access", {})
            check(acc.get("records", 0) >= 8 and acc.get("files", 0) == 1 + len(roots),
                  "access records: %s" % acc)
            check(acc.get("bytes_hit", 0) > 0 and acc.get("bytes_missed", 0) > 0,
                  "records count hits and misses: %s" % acc)
            st = p.status()
            check(st.get("redirects", 0) > 0 and st.get("opens", 0) > 0,
                  "status: opens redirected to synthetic users: %s" % st)
            # The CLI on the live proxy directory.
            ls = s.ferry("cache", "ls", "--dir", s.cache, "--json")
            check(ls.returncode == 0 and len(json.loads(ls.stdout)["entries"]) == 1 + len(roots),
                  "ls on the live cache: %s" % ls.stdout[-300:])
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0, "verify on the live cache: %s" % v)
            ev = s.ferry("cache", "evict", "--dir", s.cache, "--to-size", "0")
            ok(ev, "evict on the live cache")
            check(s.stats()["entries"] == 0, "evict emptied the cache")
            # After eviction the proxy fetches again and still answers right.
            ok(s.reader("pass", url, local, "8"), "pass after eviction")
            s.settled()
            check(s.stats()["entries"] >= 1, "refilled after eviction")
            # Errors are the origin's: a missing file is "not found", not a cache error.
            q = s.reader("missing", p.url_for("nope.bin"))
            check(q.returncode == 0 and "3011" in q.stdout, "missing file: %s %s" %
                  (q.stdout, q.stderr))
    finally:
        s.remove()


def wan_name(tag):
    # wan.sh names: "ftb-" and 1-8 of [a-z0-9]; "ftb-p" keeps them apart from other users'.
    return "ftb-p%s%d" % (tag, os.getpid() % 10000)


def test_concurrency():
    """Behind a 40 ms WAN: one client's concurrent vector reads of 8 files, and its concurrent
    reads of one file, are in flight at once through the proxy (not one per round trip)."""
    s = Setup()
    try:
        files = [s.file("c%d.bin" % i, 4 * 1024 * 1024, 10 + i) for i in range(8)]
        with ferry_testbed.Wan(name=wan_name("c"), rtt="40ms", rate="1gbit") as w, \
                w.origin(s.data) as o, \
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), s.cache, s.root, env=s.env) as p:
            pairs = ["%s=%s" % (p.url_for(os.path.basename(f)), f) for f in files]
            direct = ["%s=%s" % (o.url_for(os.path.basename(f)), f) for f in files]
            rtt = 0.040

            def timed(mode, n, spec, what):
                q = s.reader("concurrent", mode, str(n), *spec)
                if not ok(q, what):
                    return None
                r = json.loads(q.stdout)
                check(r["ok"], "%s: every byte right %s" % (what, r))
                print("%s: %.3f s" % (what, r["seconds"]), flush=True)
                return r["seconds"]

            d = timed("readv", 8, direct, "direct: 8 vector reads of 8 files")
            before = p.status().get("origin_max_inflight", 0)
            c = timed("readv", 8, pairs, "proxy cold: 8 vector reads of 8 files")
            # One vector read per round trip would take 8 RTT; at once, about one.
            check(c is not None and c < 4 * rtt, "vector reads of 8 files at once: %s s" % c)
            w2 = timed("readv", 8, pairs, "proxy warm: the same")
            check(w2 is not None and w2 < rtt / 2, "warm vector reads from the cache: %s" % w2)
            d1 = timed("read", 8, direct[1:2], "direct: 8 reads of one file")
            one = timed("read", 8, pairs[:1], "proxy cold: 8 reads of one file")
            # Eight round trips if they queued; the link's throughput is the same for both.
            check(one is not None and d1 is not None and one < d1 + 3 * rtt,
                  "reads of one file at once: %s s (direct %s s)" % (one, d1))
            time.sleep(1.2)  # the status file is rewritten every second
            st = p.status()
            print("status:", json.dumps(st), flush=True)
            check(st.get("origin_max_inflight", 0) >= 4,
                  "origin requests in flight at once: %s (before %s)" %
                  (st.get("origin_max_inflight"), before))
            if st.get("origin_busy_seconds"):
                print("mean outstanding origin requests while busy: %.2f" %
                      (st["origin_inflight_seconds"] / st["origin_busy_seconds"]))
            if d is not None and c is not None:
                print("cold proxy / direct: %.2f" % (c / d))
    finally:
        s.remove()


TESTS = {"basic": test_basic, "concurrency": test_concurrency}


def main():
    try:
        TESTS[TEST]()
    except (Skip, ferry_testbed.Skip) as e:
        print("SKIP:", e)
        return 77
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
