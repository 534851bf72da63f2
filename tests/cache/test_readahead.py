#!/usr/bin/env python3
"""Read-ahead and the bypass of bulk readers, through the ferry cache plug-in in front of a real
xrootd origin on 127.0.0.1.

usage: test_readahead.py FERRY PLUGIN_LIB ROOT_DATA_DIR TEST
  TEST: bypass | readahead | rntuple | nextfile
- bypass: `xrdcp` of a 1 GiB file leaves the cache's disk use unchanged and counts every byte as
  bypassed; a Python script copying a 256 MiB file in order is detected after its first quarter
  (the rest bypassed, not cached); an uproot-like pass over 30% of the branches of a ROOT file is
  cached (a second pass needs no origin request) and bypasses nothing.
- readahead: `ferry analyze agc --reads 0` and the uproot-like client (one vector read per
  cluster) through the cache with read-ahead on: digests and every byte identical to the
  origin's, prefetch counters in `ferry cache stats --json`; then the file is replaced at the
  origin (another codec and cluster layout) and later truncated: every pass reads the origin's
  current bytes (the entry is invalidated), nothing stale.
- rntuple: the same analysis over an RNTuple of 1 MiB clusters, one cluster at a time: the
  next clusters' pages of the columns it reads are fetched ahead and used, the digest is the
  local one.
- nextfile: `ferry analyze agc --opens 1` over a directory of five files (one after the other,
  as a TChain): from its first open on, the next files are opened ahead (their metadata and
  first clusters fetched) and the reader's open takes them over; the digest is the local one;
  the pass, and the uproot-like client's over a copy of the directory, each log in at the origin
  once (their opens and the files opened ahead share one connection).
Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import ferry_harness  # noqa: E402
from ferry_harness import PY, check, run_test  # noqa: E402
from ferry_testbed import Origin, Skip  # noqa: E402

FERRY, PLUGIN, ROOT_DATA, TEST = sys.argv[1:5]
TEMPLATE = os.path.join(ROOT_DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root")
CLIENT = os.path.join(HERE, "..", "..", "bench", "readahead_client.py")
READER = os.path.join(HERE, "cache_reader.py")
AGC_BRANCHES = ["nJet", "Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btagCSVV2",
                "nElectron", "Electron_pt", "Electron_eta", "Electron_phi", "Electron_cutBased",
                "nMuon", "Muon_pt", "Muon_eta", "Muon_phi", "Muon_tightId", "MET_pt", "MET_phi"]


class Setup(ferry_harness.Setup):
    """The shared work dir with the replica tier off (read-ahead is tested on the byte tier),
    plus generated ROOT files, basket plans and the clients that read them."""

    def __init__(self, **settings):
        super().__init__(FERRY, PLUGIN, prefix="fca-ra-", timeout=600,
                         settings=dict({"replica": "off"}, **settings))

    def disk(self):
        if not os.path.isdir(self.cache):
            return 0
        return int(subprocess.run(["du", "-s", "-B1", self.cache], capture_output=True,
                                  text=True).stdout.split()[0])

    def gen(self, name, codec, events, flush, seed, fmt="ttree", cluster_bytes=None):
        out = os.path.join(self.root, "gen-%d" % seed)
        extra = ["--cluster-bytes", str(cluster_bytes)] if cluster_bytes else []
        p = self.ferry("gen", "nanoaod", "--template", TEMPLATE, "--events", str(events),
                       "--codec", codec, "--auto-flush", str(flush), "--out", out,
                       "--seed", str(seed), "--format", fmt, *extra)
        if p.returncode != 0:
            raise RuntimeError("ferry gen: %s" % p.stderr[-500:])
        made = sorted(os.listdir(out))
        dest = os.path.join(self.root, name)
        shutil.move(os.path.join(out, made[0]), dest)
        return dest

    def plan(self, path, branches):
        plan = os.path.join(self.root, os.path.basename(path) + ".plan.json")
        p = self.ferry("root", "baskets", path, *sum((["--branch", b] for b in branches), []))
        if p.returncode != 0:
            raise RuntimeError("ferry root baskets: %s" % p.stderr[-500:])
        with open(plan, "w") as f:
            f.write(p.stdout)
        return plan

    def client(self, plan, url):
        p = self.run(PY, CLIENT, plan, url, "--verify", self.data)
        check(p.returncode == 0, "uproot-like client: %s" % p.stderr[-500:])
        return json.loads(p.stdout) if p.returncode == 0 else {}

    def agc(self, target, *extra):
        p = self.ferry("analyze", "agc", target, "--json", *extra)
        if p.returncode != 0:
            raise RuntimeError("ferry analyze agc: %s" % p.stderr[-600:])
        return json.loads(p.stdout)

    def place(self, src, name, mtime):
        dest = os.path.join(self.data, name)
        shutil.copyfile(src, dest)
        os.chmod(dest, 0o644)
        os.utime(dest, (mtime, mtime))
        return dest


def random_file(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 64 << 20)
            f.write(os.urandom(n))
            left -= n
    os.chmod(path, 0o644)


COPY_SCRIPT = r'''
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url, out = sys.argv[1:3]
f = client.File()
st, _ = f.open(url, OpenFlags.READ)
assert st.ok, st.message
st, info = f.stat()
with open(out, "wb") as o:
    off = 0
    while off < info.size:
        st, buf = f.read(off, 4 << 20)
        assert st.ok and buf, st.message
        o.write(buf)
        off += len(buf)
f.close()
'''


def same(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


def test_bypass():
    if shutil.which("xrdcp") is None:
        raise Skip("no xrdcp")
    s = Setup()
    try:
        big = os.path.join(s.data, "big.bin")
        random_file(big, 1 << 30)
        copied = os.path.join(s.root, "copy.bin")
        with Origin(s.data) as o:
            # 1. xrdcp: a copy tool by name. Nothing cached, every byte bypassed. (A first small
            # copy makes the cache directory, its lock and stats files.)
            small = os.path.join(s.data, "small.bin")
            random_file(small, 1 << 20)
            p = s.run("xrdcp", "-s", "-f", o.url_for("small.bin"), copied)
            check(p.returncode == 0 and same(small, copied), "xrdcp of a small file")
            bypassed0 = s.stats().get("bypassed_bytes", 0)
            disk0 = s.disk()
            p = s.run("xrdcp", "-s", "-f", o.url_for("big.bin"), copied)
            check(p.returncode == 0, "xrdcp: %s" % p.stderr[-500:])
            check(same(big, copied), "xrdcp copy identical to the origin's file")
            st = s.stats()
            print("after xrdcp:", {k: st.get(k) for k in ("bypassed_bytes", "disk_bytes",
                                                          "entries", "bytes_from_origin")},
                  "du", s.disk(), flush=True)
            check(st.get("bypassed_bytes") - bypassed0 == 1 << 30,
                  "xrdcp bytes counted bypassed: %s" % st)
            check(st.get("entries", 0) == 0 and st.get("disk_bytes") == 0 and s.disk() == disk0,
                  "xrdcp left the cache's disk use unchanged (%d -> %d)" % (disk0, s.disk()))
            os.remove(copied)
            # 2. A Python script copying a file in order: detected by its pattern.
            mid = os.path.join(s.data, "mid.bin")
            random_file(mid, 256 << 20)
            script = os.path.join(s.root, "copy_script.py")
            with open(script, "w") as f:
                f.write(COPY_SCRIPT)
            before = s.stats()
            p = s.run(PY, script, o.url_for("mid.bin"), copied)
            check(p.returncode == 0, "copy script: %s" % p.stderr[-500:])
            check(same(mid, copied), "script copy identical to the origin's file")
            os.remove(copied)
            after = s.stats()
            bypassed = after["bypassed_bytes"] - before["bypassed_bytes"]
            print("python copy: bypassed %d of %d, disk %d" % (bypassed, 256 << 20, s.disk()),
                  flush=True)
            check(bypassed >= 0.7 * (256 << 20), "the script's copy was mostly bypassed")
            check(s.disk() <= 0.3 * (256 << 20) + (4 << 20),
                  "the script's copy cached at most its first quarter: %d" % s.disk())
            # 3. An analysis reading 30% of the branches: cached, not bypassed.
            root = s.gen("ana.root", "zlib:1", 20000, 1000, 11)
            ana = s.place(root, "ana.root", 1700000000)
            ls = s.json("root", "ls", ana, "--json")
            names = [b["name"] for b in ls["trees"][0]["branches"]
                     if b.get("supported") and b["baskets"] > 0]
            branches = names[::3]
            plan = s.plan(ana, branches)
            with open(plan) as f:
                want = sum(ln for c in json.load(f)["clusters"] for _, ln in c)
            before = s.stats()
            s.client(plan, o.url_for("ana.root"))
            mid_stats = s.stats()
            print("analysis of %d/%d branches (%.0f%% of %d bytes): %s" % (
                len(branches), len(names), 100.0 * want / os.path.getsize(ana),
                os.path.getsize(ana), {k: mid_stats[k] - before[k] for k in (
                    "bypassed_bytes", "bytes_from_origin", "origin_requests")}), flush=True)
            check(mid_stats["bypassed_bytes"] == before["bypassed_bytes"],
                  "the analysis bypassed nothing")
            s.client(plan, o.url_for("ana.root"))
            after = s.stats()
            check(after["origin_requests"] - mid_stats["origin_requests"] <= 2,
                  "the analysis was cached: a second pass needs (nearly) no origin request "
                  "(%d)" % (after["origin_requests"] - mid_stats["origin_requests"]))
    finally:
        s.remove()


def test_readahead():
    s = Setup(revalidate_s="0")
    try:
        a = s.gen("a.root", "zlib:1", 16000, 500, 21)
        b = s.gen("b.root", "lzma:9", 6000, 700, 22)
        want_a = s.agc(a, "--reads", "0")["digest"]
        want_b = s.agc(b, "--reads", "0")["digest"]
        plan_a = s.plan(a, AGC_BRANCHES)
        plan_b = s.plan(b, AGC_BRANCHES)
        s.place(a, "x.root", 1700000000)
        with Origin(s.data) as o:
            url = o.url_for("x.root")
            # ferry's analysis, one cluster at a time: predictions used, nothing unused to speak of.
            got = s.agc(url, "--reads", "0")
            check(got["digest"] == want_a, "cold agc digest equals the local one")
            st = s.stats()
            print("agc cold:", {k: st.get(k) for k in ("prefetch_bytes", "prefetch_hits",
                                                       "prefetch_unused_bytes", "bytes_from_origin",
                                                       "bytes_to_app", "misses", "hits")},
                  flush=True)
            check(st.get("prefetch_bytes", 0) > 0 and st.get("prefetch_hits", 0) > 0,
                  "read-ahead fetched and was used: %s" % st)
            check(st.get("prefetch_unused_bytes", 0) <= 0.05 * st.get("prefetch_bytes", 1),
                  "unused prefetched bytes at most 5%%: %s" % st)
            check(s.agc(url, "--reads", "0")["digest"] == want_a, "warm agc digest")
            s.client(plan_a, url)  # every byte compared with the origin's file
            # Replaced at the origin: another file under the same name.
            s.place(b, "x.root", 1700000500)
            before = s.stats()
            got = s.agc(url, "--reads", "0")
            check(got["digest"] == want_b, "after the replacement: the new file's digest")
            s.client(plan_b, url)
            check(s.stats()["bytes_from_origin"] > before["bytes_from_origin"],
                  "the replaced file was read from the origin")
            # Truncated at the origin: the reader sees the new size and the new bytes only.
            x = os.path.join(s.data, "x.root")
            with open(x, "r+b") as f:
                f.truncate(os.path.getsize(x) * 6 // 10)
            os.utime(x, (1700000900, 1700000900))
            p = s.run(PY, READER, "pass", url, x, "3")
            check(p.returncode == 0, "after truncation: bytes identical: %s" % p.stderr[-500:])
            rc = s.ferry("cache", "verify", "--dir", s.cache, "--json")
            check(rc.returncode == 0, "cache verify: %s" % rc.stdout[-500:])
    finally:
        s.remove()


def test_rntuple():
    s = Setup()
    try:
        # Big enough that the pass outlasts loading the layout (969 fields x ~60 clusters of
        # pages): over loopback a 16k-event file's pass was often over before read-ahead began.
        path = s.gen("r.root", "zlib:1", 80000, 500, 23, fmt="rntuple", cluster_bytes=1 << 20)
        s.place(path, "r.root", 1700000000)
        want = s.agc(path, "--reads", "0")["digest"]
        with Origin(s.data) as o:
            got = s.agc(o.url_for("r.root"), "--reads", "0")
            check(got["digest"] == want, "cold agc digest over the RNTuple equals the local one")
            st = s.stats()
            print("agc cold over an RNTuple:", {k: st.get(k) for k in (
                "prefetch_bytes", "prefetch_hits", "prefetch_unused_bytes", "bytes_from_origin",
                "misses", "hits")}, flush=True)
            check(st.get("prefetch_bytes", 0) > 0 and st.get("prefetch_hits", 0) > 0,
                  "read-ahead fetched the RNTuple's next pages and they were read: %s" % st)
            check(st.get("prefetch_unused_bytes", 0) <= 0.05 * st.get("prefetch_bytes", 1),
                  "unused prefetched bytes at most 5%%: %s" % st)
    finally:
        s.remove()


def test_nextfile():
    s = Setup()
    try:
        out = os.path.join(s.root, "gen-set")
        p = s.ferry("gen", "nanoaod", "--template", TEMPLATE, "--events", "60000", "--files",
                    "5", "--codec", "zlib:1", "--auto-flush", "2000", "--out", out, "--seed", "31")
        check(p.returncode == 0, "ferry gen: %s" % p.stderr[-300:])
        os.makedirs(os.path.join(s.data, "set"))
        names = sorted(os.listdir(out))
        for n in names:
            s.place(os.path.join(out, n), os.path.join("set", n), 1700000000)
        local = [os.path.join(s.data, "set", n) for n in names]
        # The same files in a second directory, for the python client's cold pass.
        os.makedirs(os.path.join(s.data, "set2"))
        for n in names:
            s.place(os.path.join(s.data, "set", n), os.path.join("set2", n), 1700000000)
        plans = [s.plan(path, AGC_BRANCHES) for path in local]
        args = ["--opens", "1", "--threads", "1", "--reads", "0", "--json"]
        want = json.loads(s.ferry("analyze", "agc", *local, *args).stdout)["digest"]
        with Origin(s.data) as o:
            logins = o.logins()
            p = s.ferry("analyze", "agc", *[o.url_for("set/" + n) for n in names], *args)
            check(p.returncode == 0, "agc through the cache: %s" % p.stderr[-500:])
            check(json.loads(p.stdout)["digest"] == want, "the digest is the local one")
            st = s.stats()
            print("next files:", {k: st.get(k) for k in ("next_files_warmed",
                                                         "next_files_adopted", "misses")})
            check(st.get("next_files_warmed", 0) >= 2, "files opened ahead: %s" % st)
            check(1 <= st.get("next_files_adopted", 0) <= st["next_files_warmed"],
                  "the reader took them over: %s" % st)
            # One connection for the pass (issue 38): the reader's opens and the files opened
            # ahead of it share it, so only the first file pays a login and a slow start.
            check(o.logins() - logins == 1, "agc logged in %d times" % (o.logins() - logins))
            logins = o.logins()
            pairs = sum(([plan, o.url_for("set2/" + n)] for plan, n in zip(plans, names)), [])
            p = s.run(PY, CLIENT, *pairs)
            check(p.returncode == 0, "python client through the cache: %s" % p.stderr[-500:])
            check(s.stats().get("next_files_adopted", 0) > st["next_files_adopted"],
                  "the python client took files opened ahead over")
            check(o.logins() - logins == 1,
                  "the python client logged in %d times" % (o.logins() - logins))
    finally:
        s.remove()


if __name__ == "__main__":
    run_test({"bypass": test_bypass, "readahead": test_readahead, "rntuple": test_rntuple,
              "nextfile": test_nextfile}, TEST)
