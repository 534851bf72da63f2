#!/usr/bin/env python3
"""The replica tier end to end: the XrdCl plug-in in front of a real xrootd origin.

usage: test_replica.py FERRY PLUGIN_LIB ROOT_DATA_DIR JSROOT_CACHE TEST [FIXTURES_TOOL]
  TEST: fidelity | agc | auto | kill | takeover | fillbuild | rntuple | kill_rntuple | stages |
        kill_stages | fillstages | movedpast | encrypted
Exit 0 = pass, 1 = fail, 77 = cannot run here (no xrootd, no ROOT data).

- fidelity: every real file of ROOT_DATA_DIR and a generated zlib-1 and LZMA-9 set, read fully
  through the plug-in, replicated, then read whole as the virtual file with python's
  XRootD.client and written to disk: ferry's reader sees the original's values in it, and
  jsroot reads it exactly as it reads the original.
- agc: `ferry analyze agc` gives the same digests on the byte tier and on the replica, with
  one replica read per cluster and file and no origin request.
- auto: with replica = auto, a pass leaves a replica built in the background.
- kill: the builder SIGKILLed at random points 50 times: verify is clean, every read correct
  (kill_rntuple: the same over an RNTuple set).
- rntuple: every RNTuple file of data/rntuple and generated zlib-1 and LZMA-9 RNTuple sets, read
  whole through the plug-in and replicated: the virtual file (read whole with python's
  XRootD.client) holds the original's values for ferry's reader, and jsroot reads the
  generated sets' virtual files to the values ferry's reader reads; `ferry analyze agc` digests
  are the same direct, on the byte tier and on the replica, the replica pass without an origin
  request; a flipped bit in a replica page is detected, counted and served correctly.
- fillbuild: a background build runs to its end while a pass fills the cache.
- stages: zlib-1 TTree and RNTuple sets relocated as stored (stage 1), read whole as the
  virtual file: ferry's reader and jsroot see the original's values, verify is clean; then
  re-encoded (stage 2), the same again.
- kill_stages: the builder SIGKILLed in stage 1 and in stage 2, rounds of both: verify is clean
  and every read correct after each.
- fillstages: replica = auto with no core to spare during a filling pass: each file the pass
  closed is relocated while it runs (stage 1) and re-encoded once it ended (stage 2).
- movedpast: replica = auto, a reader with both files of a set open reads the first, then the
  second on and on: the first file's replica is built while both are still open (the reader
  moved past it), holds the original's values, and the handle opened before it still reads
  the original's bytes.
- encrypted: replica = auto with cache_key_file: sealed replicas built in the background serve
  AGC to the same digests, verify clean, hold no run of the files; the master key rotated
  (`ferry cache rekey`) while an AGC pass reads: its digests right, and the same replicas serve
  under the new key without the origin, not under the old one; another key: status says why.
- takeover: an explicit `replica build` while the background builder holds a file — paused by
  a pass that is running, and mid-build — returns with every file built, and the replica
  serves; the background builder steps aside and exits cleanly.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import ferry_harness  # noqa: E402
from ferry_harness import check, run_test, skip  # noqa: E402
from ferry_testbed import Origin  # noqa: E402

FERRY, PLUGIN, ROOT_DATA, JSROOT_CACHE, TEST = sys.argv[1:6]
FIXTURES = sys.argv[6] if len(sys.argv) > 6 else None  # rootwrite_fixtures, for jsroot on RNTuples
TEMPLATE = os.path.join(ROOT_DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root")
RNTUPLE_DATA = os.path.join(os.path.dirname(os.path.abspath(ROOT_DATA)), "rntuple")
JSROOT_FILES = ["nano_dy.root", "uproot-HZZ-lzma.root", "uproot-HZZ-lz4.root",
                "uproot-HZZ-zstd.root", "uproot-sample-6.20.04-uncompressed.root",
                "uproot-nesteddirs.root"]


class Setup(ferry_harness.Setup):
    """The shared work dir with replicas built on request (replica = manual) unless a test
    says otherwise, plus generated NanoAOD sets in its data dir."""

    def __init__(self, **settings):
        super().__init__(FERRY, PLUGIN, prefix="fca-rp-",
                         settings=dict({"replica": "manual"}, **settings))

    def build(self, stage="2"):
        return {f["url"].rsplit("/", 1)[-1]: f
                for f in self.json("cache", "replica", "build", "--dir", self.cache,
                                   "--stage", stage, "--json")["files"]}

    def status(self):
        return {f["url"].rsplit("/", 1)[-1]: f
                for f in self.json("cache", "replica", "status", "--dir", self.cache,
                                   "--json")["files"]}

    def verify_clean(self, what):
        v = self.ferry("cache", "verify", "--dir", self.cache, "--json")
        check(v.returncode == 0 and json.loads(v.stdout)["replicas_bad"] == 0,
              "%s: verify: %s" % (what, v.stdout[-400:]))

    def copy_root_files(self, src):
        """Copies every .root file of `src` into the data dir; their names, sorted."""
        names = []
        for name in sorted(os.listdir(src)):
            if name.endswith(".root"):
                shutil.copy(os.path.join(src, name), self.data)
                os.chmod(os.path.join(self.data, name), 0o644)
                names.append(name)
        return names

    def gen(self, codec, events, flush, seed, fmt="ttree", files=1):
        out = os.path.join(self.root, "gen-" + codec.replace(":", ""))
        p = self.ferry("gen", "nanoaod", "--template", TEMPLATE, "--events", str(events),
                       "--codec", codec, "--auto-flush", str(flush), "--out", out,
                       "--seed", str(seed), "--format", fmt, "--files", str(files))
        if p.returncode != 0:
            raise RuntimeError("ferry gen: %s" % p.stderr[-500:])
        names = []
        for name in sorted(os.listdir(out)):
            dest = "%s-%s" % (codec.replace(":", ""), name)
            shutil.move(os.path.join(out, name), os.path.join(self.data, dest))
            os.chmod(os.path.join(self.data, dest), 0o644)
            names.append(dest)
        return names


def trees(setup, path):
    p = setup.ferry("root", "ls", path, "--json")
    if p.returncode != 0:
        return None
    return [t["path"] for t in json.loads(p.stdout)["trees"]]


def rntuples(setup, path):
    p = setup.ferry("root", "ls", path, "--json")
    return [r["path"] for r in json.loads(p.stdout).get("rntuples", [])] \
        if p.returncode == 0 else []


def dump(setup, path, tree):
    p = setup.ferry("root", "dump", path, "--tree", tree, "--json")
    return p.returncode, p.stdout


READ_WHOLE = """
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
f = client.File()
st, _ = f.open(sys.argv[1], OpenFlags.READ)
assert st.ok, st.message
st, info = f.stat()
assert st.ok, st.message
with open(sys.argv[2], "wb") as out:
    pos = 0
    while pos < info.size:
        st, chunk = f.read(pos, min(8 << 20, info.size - pos))
        assert st.ok and chunk, "read at %d: %s" % (pos, st.message)
        out.write(chunk)
        pos += len(chunk)
f.close()
"""


def read_whole(setup, url, path):
    """The file as python's XRootD client reads it through the plug-in (stat size, then 8 MiB
    reads), written to `path`; its size."""
    p = subprocess.run(["/usr/bin/python3", "-c", READ_WHOLE, url, path], env=setup.env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("reading %s: %s" % (url, p.stderr[-600:]))
    return os.path.getsize(path)


def jsroot_checker():
    p = subprocess.run(["bash", os.path.join(HERE, "..", "testing", "jsroot_install.sh"),
                        JSROOT_CACHE], capture_output=True, text=True, timeout=900)
    return p.stdout.strip() if p.returncode == 0 else None


def jsroot_view(checker, path):
    """What jsroot sees in a file, with the path taken out (so two files compare)."""
    p = subprocess.run(["node", checker, FERRY, path], capture_output=True, text=True,
                       timeout=600)
    return "\n".join(line[:400].replace(path, "FILE") for line in (p.stdout + p.stderr)
                     .splitlines())


def test_fidelity():
    s = Setup()
    try:
        names = s.copy_root_files(ROOT_DATA)
        names += s.gen("zlib:1", 2000, 500, 3)
        names += s.gen("lzma:9", 1000, 250, 4)
        expected = {}
        t0 = time.time()
        with Origin(s.data) as o:
            # Fill: each file read whole through the plug-in (the byte tier), once.
            for name in names:
                local = os.path.join(s.data, name)
                expected[name] = {t: dump(s, local, t) for t in (trees(s, local) or [])}
                copy = os.path.join(s.root, "copy-" + name)
                read_whole(s, o.url_for(name), copy)
                with open(copy, "rb") as a, open(local, "rb") as b:
                    check(a.read() == b.read(), "%s through the byte tier" % name)
                os.unlink(copy)
            print("filled: %.1f s" % (time.time() - t0), flush=True)
            built = s.build()
            print("built: %.1f s" % (time.time() - t0), flush=True)
            replicated = [n for n in names if built.get(n, {}).get("state") == "built"]
            for n in ("nano_dy.root", "uproot-HZZ-lzma.root", "uproot-nesteddirs.root",
                      names[-2], names[-1]):
                check(n in replicated, "%s replicated: %s" % (n, built.get(n)))
            checker = jsroot_checker()
            if checker is None:
                print("jsroot unavailable: the jsroot comparison is skipped")
            for name in replicated:
                path = os.path.join(s.root, "virtual-" + name)
                size = read_whole(s, o.url_for(name), path)
                check(size == built[name]["virtual_bytes"] and size > os.path.getsize(
                    os.path.join(s.data, name)), "%s: virtual size %d, status says %d"
                      % (name, size, built[name]["virtual_bytes"]))
                for t, want in expected[name].items():
                    check(dump(s, path, t) == want, "%s/%s: virtual file values" % (name, t))
                # jsroot takes a second or two per file: every codec, jagged, strings, nested
                # directories and the generated sets (the rest is relocated by the same code
                # and checked by jsroot in rootwrite_jsroot).
                if checker and name in JSROOT_FILES + names[-2:]:
                    a = jsroot_view(checker, os.path.join(s.data, name))
                    b = jsroot_view(checker, path)
                    check(a == b, "%s: jsroot reads the virtual file as the original:\n%s\n%s"
                          % (name, a[-600:], b[-600:]))
            print("checked: %.1f s" % (time.time() - t0), flush=True)
            st = s.stats()
            check(st["bytes_from_replica"] > 0 and st["replica_faults"] == 0,
                  "replica served, no fault: %s" % st)
            rc = s.ferry("cache", "verify", "--dir", s.cache, "--json")
            v = json.loads(rc.stdout)
            check(rc.returncode == 0 and v["replicas_bad"] == 0 and v["replicas"] >= len(replicated),
                  "verify: %s" % v)
    finally:
        s.remove()


def agc(setup, urls):
    p = setup.ferry("analyze", "agc", *urls, "--json")
    if p.returncode != 0:
        raise RuntimeError("ferry analyze agc: %s" % p.stderr[-600:])
    return json.loads(p.stdout)


def test_agc():
    # Read-ahead off: the count of replica reads per cluster below is exact only for the
    # application's own reads (read-ahead's interplay with replicas is tested in
    # test_readahead.py's passes, by digests and bytes).
    s = Setup(readahead="off")
    try:
        names = s.gen("zlib:1", 12000, 1500, 5) + s.gen("lzma:9", 4000, 1000, 6)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            cold = agc(s, urls)
            warm = agc(s, urls)
            built = s.build()
            check(all(built[n]["state"] == "built" for n in names), "built: %s" % built)
            check(all(set(built[n]["hot_branches"]) >= {"Events/Jet_pt", "Events/nJet"}
                      for n in names), "hot branches: %s" % built[names[0]]["hot_branches"])
            before = s.stats()
            rep = agc(s, urls)
            after = s.stats()
            check(cold["digest"] == warm["digest"] == rep["digest"],
                  "digests: cold %s warm %s replica %s" % (cold["digest"], warm["digest"],
                                                          rep["digest"]))
            check(after["origin_requests"] == before["origin_requests"],
                  "the replica pass needed no origin request")
            units = rep["io"]["units"]
            check(after["replica_reads"] - before["replica_reads"] == units,
                  "one replica read per cluster: %d reads, %d clusters"
                  % (after["replica_reads"] - before["replica_reads"], units))
            check(after["bytes_from_replica"] > before["bytes_from_replica"], "bytes from replica")
            # Disk: the byte tier the replica superseded was released.
            ls = s.json("cache", "ls", "--dir", s.cache, "--json")["entries"]
            for e in ls:
                check(e["held_bytes"] < 0.5 * built[e["url"].rsplit("/", 1)[-1]]
                      ["baskets_original_bytes"] + 200000,
                      "byte tier released for %s: %s" % (e["url"], e))
    finally:
        s.remove()


def damage_replicas(cache, stride=16 << 10):
    """Flips one bit every `stride` bytes of every replica data file; how many files."""
    n = 0
    for dirpath, _, files in os.walk(os.path.join(cache, "entries")):
        for f in files:
            if ".rpd." not in f:
                continue
            path = os.path.join(dirpath, f)
            with open(path, "r+b") as out:
                for at in range(stride // 2, os.path.getsize(path), stride):
                    out.seek(at)
                    b = out.read(1)
                    out.seek(at)
                    out.write(bytes([b[0] ^ 0x10]))
            n += 1
    return n


def jsroot_rntuples(s, paths):
    """jsroot reads every simple field of the RNTuples in `paths` to the values ferry reads."""
    checker = jsroot_checker() if FIXTURES else None
    if checker is None:
        print("jsroot or the fixtures tool unavailable: the jsroot comparison is skipped")
        return
    p = subprocess.run(["node", os.path.join(os.path.dirname(checker), "jsroot_rntuple_check.mjs"),
                        FIXTURES, *paths], capture_output=True, text=True, timeout=900)
    out = "\n".join(line[:400] for line in (p.stdout + p.stderr).splitlines())
    check(p.returncode == 0, "jsroot reads the virtual RNTuples as ferry does:\n%s" % out[-1500:])
    print(out.splitlines()[-1] if out else "", flush=True)


def test_rntuple():
    if not os.path.isdir(RNTUPLE_DATA):
        skip("no RNTuple data at %s" % RNTUPLE_DATA)
    s = Setup(readahead="off")
    try:
        names = s.copy_root_files(RNTUPLE_DATA)
        generated = s.gen("zlib:1", 3000, 1000, 7, "rntuple") + s.gen("lzma:9", 2000, 500, 8,
                                                                      "rntuple")
        names += generated
        expected = {}
        for name in names:
            local = os.path.join(s.data, name)
            expected[name] = {t: dump(s, local, t) for t in rntuples(s, local)}
        with Origin(s.data) as o:
            for name in names:
                copy = os.path.join(s.root, "copy-" + name)
                read_whole(s, o.url_for(name), copy)
                os.unlink(copy)
            built = s.build()
            replicated = [n for n in names if built.get(n, {}).get("state") == "built"]
            check(set(generated) <= set(replicated) and len(replicated) >= len(names) - 2,
                  "RNTuples replicated: %s" % {n: (built.get(n, {}).get("state"),
                                                  built.get(n, {}).get("reason"))
                                              for n in names if n not in replicated})
            for name in replicated:
                path = os.path.join(s.root, "virtual-" + name)
                size = read_whole(s, o.url_for(name), path)
                check(size == built[name]["virtual_bytes"], "%s: virtual size" % name)
                for t, want in expected[name].items():
                    check(want[0] == 0 and dump(s, path, t) == want,
                          "%s/%s: virtual file values" % (name, t))
            jsroot_rntuples(s, [os.path.join(s.root, "virtual-" + n) for n in generated])
            urls = [o.url_for(n) for n in generated]
            direct = agc(s, [os.path.join(s.data, n) for n in generated])
            before = s.stats()
            rep = agc(s, urls)
            after = s.stats()
            check(rep["digest"] == direct["digest"], "agc digests: replica %s, direct %s"
                  % (rep["digest"], direct["digest"]))
            check(after["origin_requests"] == before["origin_requests"]
                  and after["bytes_from_replica"] > before["bytes_from_replica"],
                  "the replica pass read the replica, not the origin")
            # Flipped bits in replica pages: detected, counted, the bytes served from the origin.
            check(damage_replicas(s.cache) >= len(generated), "replica data files to damage")
            bad = agc(s, urls)
            check(bad["digest"] == direct["digest"], "digest with a damaged replica page")
            check(s.stats()["replica_faults"] >= 1, "the damaged page is counted")
    finally:
        s.remove()


def test_auto():
    s = Setup(replica="auto")
    try:
        names = s.gen("zlib:1", 6000, 1000, 7)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            first = agc(s, urls)
            # The pass ends; a builder was started in the background. Wait for its outcome.
            deadline = time.time() + 120
            state = None
            while time.time() < deadline:
                status = s.json("cache", "replica", "status", "--dir", s.cache, "--json")
                state = [f["state"] for f in status["files"]]
                if state and all(x == "built" for x in state):
                    break
                time.sleep(0.1)
            check(state and all(x == "built" for x in state), "auto build: %s" % state)
            before = s.stats()
            second = agc(s, urls)
            after = s.stats()
            check(first["digest"] == second["digest"], "digests")
            check(after["replica_reads"] > before["replica_reads"], "second pass used the replica")
    finally:
        s.remove()


def rotate_during_agc(s, urls, first, conf, key):
    """`ferry cache rekey` from `key` to a new key while an AGC pass reads through the plug-in
    (which still has `key`); then the plug-in's conf gets the new key and a pass must be served
    by the sealed replicas, as before, without the origin. Returns the new key's path."""
    new = os.path.join(s.root, "new.key")
    with open(new, "wb") as f:
        f.write(os.urandom(32))
    os.chmod(new, 0o600)
    during = {}
    reader = threading.Thread(target=lambda: during.update(agc(s, urls)))
    reader.start()
    r = s.ferry("cache", "rekey", "--dir", s.cache, "--old-key", key, "--new-key", new)
    reader.join(timeout=600)
    check(r.returncode == 0 and " 0 failed)" in r.stdout, "rekey: %s %s" % (r.stdout, r.stderr))
    check(during.get("digest") == first["digest"], "digests of the pass during the rotation")
    text = open(conf).read()
    with open(conf, "w") as f:
        f.write(text.replace(key, new))
    before = s.stats()
    again = agc(s, urls)
    after = s.stats()
    check(again["digest"] == first["digest"]
          and after["replica_reads"] > before["replica_reads"]
          and after["replica_faults"] == before["replica_faults"]
          and after["origin_requests"] == before["origin_requests"],
          "after the rotation, the new key: served by the same sealed replicas: %s" % after)
    v = s.ferry("cache", "verify", "--dir", s.cache, "--json",
                env=dict(s.env, FERRY_CACHE_CACHE_KEY_FILE=new))
    check(v.returncode == 0 and json.loads(v.stdout)["replicas_bad"] == 0,
          "verify with the new key: %s" % v.stdout[-400:])
    return new


def test_encrypted():
    """replica = auto with cache_key_file: the background builder (started by the plug-in, the
    key handed over) leaves sealed replicas that serve AGC to the same digests without the
    origin, verify clean, and hold no 16-byte run of the files; the master key rotated while an
    AGC pass reads leaves its digests right, and the replicas (their key derives from the data
    key, which rotation only rewraps) serve under the new key without the origin; with the old
    key or another, status says why the replica is not read and AGC is right from the origin."""
    s = Setup(replica="auto")
    try:
        key, other = os.path.join(s.root, "master.key"), os.path.join(s.root, "other.key")
        for path in (key, other):
            with open(path, "wb") as f:
                f.write(os.urandom(32))
            os.chmod(path, 0o600)
        # The plug-in reads the key from its conf; the CLI here finds no enabled conf (the
        # harness's is the plug-in's), so its commands get the key as FERRY_CACHE_CACHE_KEY_FILE.
        conf = os.path.join(s.env["XRD_PLUGINCONFDIR"], "ferry.conf")
        with open(conf, "a") as f:
            f.write("cache_key_file = %s\n" % key)
        cli = dict(s.env, FERRY_CACHE_CACHE_KEY_FILE=key)

        def status(env):
            p = s.ferry("cache", "replica", "status", "--dir", s.cache, "--json", env=env)
            return json.loads(p.stdout)["files"] if p.returncode == 0 else p.stderr

        names = s.gen("zlib:1", 6000, 1000, 7)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            first = agc(s, urls)
            deadline = time.time() + 120
            files = None
            while time.time() < deadline:
                files = status(cli)
                if files and all(f["state"] == "built" for f in files):
                    break
                time.sleep(0.1)
            check(files and all(f["state"] == "built" for f in files),
                  "sealed replicas built in the background: %s" % files)
            before = s.stats()
            second = agc(s, urls)
            after = s.stats()
            check(first["digest"] == second["digest"], "digests")
            check(after["replica_reads"] > before["replica_reads"]
                  and after["replica_faults"] == before["replica_faults"]
                  and after["origin_requests"] == before["origin_requests"],
                  "second pass served by the sealed replicas: %s" % after)
            v = s.ferry("cache", "verify", "--dir", s.cache, "--json", env=cli)
            check(v.returncode == 0 and json.loads(v.stdout)["replicas_bad"] == 0,
                  "verify with the key: %s" % v.stdout[-400:])
            check(sealed_runs(s, names) == 0, "no run of the files in the cache directory")
            new = rotate_during_agc(s, urls, first, conf, key)
            for k in (key, other):
                reasons = [f["reason"] for f in status(dict(s.env, FERRY_CACHE_CACHE_KEY_FILE=k))]
                check(reasons and all("sealed replica not read" in r for r in reasons),
                      "status with the old key or another: %s" % reasons)
            after = s.stats()
            text = open(conf).read()
            with open(conf, "w") as f:
                f.write(text.replace(new, other))
            third = agc(s, urls)
            last = s.stats()
            check(third["digest"] == first["digest"]
                  and last["origin_requests"] > after["origin_requests"],
                  "another key: right digests, from the origin: %s" % last)
    finally:
        s.remove()


def sealed_runs(s, names):
    """How many sampled 16-byte runs of the files `names` (runs of 8 byte values or more: not
    the zeros and small integers any file holds) stand in the files of the cache directory."""
    blobs = []
    for root, _, files in os.walk(s.cache):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                blobs.append(f.read())
    rnd = random.Random(3)
    found, total = 0, 0
    for n in names:
        content = open(os.path.join(s.data, n), "rb").read()
        for _ in range(400):
            o = rnd.randrange(len(content) - 16)
            run = content[o:o + 16]
            if len(set(run)) >= 8:
                total += 1
                found += any(run in b for b in blobs)
    check(total > 100, "enough runs sampled: %d" % total)
    return found


def test_kill(fmt="ttree"):
    s = Setup()
    try:
        # An RNTuple's AGC columns are about half the TTree's bytes: more events, so that a
        # zstd:19 build still outlasts the kills' window.
        names = s.gen("zlib:1", 20000 if fmt == "ttree" else 60000, 2000, 8, fmt)
        rnd = random.Random(5)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            want = agc(s, urls)["digest"]
            kills = 0
            for i in range(50):
                # zstd:19 is slow: the kill lands anywhere from reading to publishing.
                p = subprocess.Popen([FERRY, "cache", "replica", "build", "--dir", s.cache,
                                      "--codec", "zstd:19"], env=s.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                time.sleep(rnd.uniform(0.0, 0.6))
                p.send_signal(signal.SIGKILL)
                _, err = p.communicate(timeout=60)
                kills += p.returncode == -signal.SIGKILL
                check(p.returncode in (0, -signal.SIGKILL), "builder %d: %d %s" % (
                    i, p.returncode, err[-300:]))
                if i % 10 == 9:
                    # Readers in between see a consistent file, whatever the kill left.
                    check(agc(s, urls)["digest"] == want, "digest after %d kills" % (i + 1))
            check(kills >= 25, "the builder was killed mid-way (%d of 50)" % kills)
            v = s.ferry("cache", "verify", "--dir", s.cache, "--json")
            check(v.returncode == 0, "verify after the kills: %s" % v.stdout)
            built = s.build()
            dropped = s.json("cache", "stats", "--dir", s.cache, "--json")["writes_dropped"]
            if dropped > 0 and any(f["state"] != "built" for f in built.values()):
                # The cache failed open (its write-behind dropped fetches it had no room for,
                # under load): units a pass read may not be held, and the replica is partial
                # until a pass reads them again. A partial one without a drop is a fault.
                check(agc(s, urls)["digest"] == want, "digest after %d dropped writes" % dropped)
                built = s.build()
            check(all(f["state"] == "built" for f in built.values()),
                  "built at last (%d writes dropped): %s" % (dropped, built))
            check(agc(s, urls)["digest"] == want, "digest on the replica")
            v = s.ferry("cache", "verify", "--dir", s.cache, "--json")
            check(v.returncode == 0 and json.loads(v.stdout)["replicas_bad"] == 0,
                  "verify at the end: %s" % v.stdout)
    finally:
        s.remove()


class PassRunning:
    """Keeps the cache's activity mark fresh, as a pass reading through the cache does (every
    50 ms, for at most `limit` seconds), until the block ends; `filling`: its filling mark too,
    as a pass whose reads fetch from the origin does. Off: does nothing."""

    def __init__(self, cache, on=True, limit=300, filling=False):
        self.paths = [os.path.join(cache, ".active")] + (
            [os.path.join(cache, ".filling")] if filling else [])
        self.on = on
        self.limit = limit
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._touch)

    def _touch_once(self):
        for path in self.paths:
            with open(path, "a"):
                os.utime(path)

    def _touch(self):
        end = time.time() + self.limit
        while not self.stop.is_set() and time.time() < end:
            self._touch_once()
            self.stop.wait(0.05)

    def __enter__(self):
        if self.on:
            self._touch_once()
            self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.on:
            self.stop.set()
            self.thread.join()


def wait_building(s, background, what):
    """Waits (at most 120 s) until `replica status` says a file is building."""
    deadline = time.time() + 120
    while time.time() < deadline and background.poll() is None:
        status = s.json("cache", "replica", "status", "--dir", s.cache, "--json")
        if any(f["state"] == "building" for f in status["files"]):
            return
        time.sleep(0.02)
    check(False, "%s: the background builder never held a file (exit %s)"
          % (what, background.poll()))


def takeover(s, urls, want, codec, pass_running):
    """One round: the background builder holds a file, an explicit build takes it over."""
    what = "paused by a pass" if pass_running else "mid-build"
    # A replica releases the byte tier's baskets: dropped, they are read again by a pass.
    subprocess.run([FERRY, "cache", "replica", "drop", "--dir", s.cache], env=s.env, check=True,
                   stdout=subprocess.DEVNULL)
    check(agc(s, urls)["digest"] == want, "%s: digest of the filling pass" % what)
    args = [FERRY, "cache", "replica", "build", "--dir", s.cache, "--background", "--json",
            "--codec", codec]
    with PassRunning(s.cache, on=pass_running):
        background = subprocess.Popen(args, env=s.env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        wait_building(s, background, what)
        built = s.build()
    out, err = background.communicate(timeout=300)
    check(background.returncode == 0, "%s: background builder exit %d: %s"
          % (what, background.returncode, err[-300:]))
    check(all(f["state"] == "built" for f in built.values()),
          "%s: the explicit build returned with every file built: %s"
          % (what, {n: (f["state"], f["reason"]) for n, f in built.items()}))
    stepped = [f for f in json.loads(out)["files"] if f["reason"] == "yielded to an explicit build"]
    check(stepped, "%s: the background builder stepped aside: %s" % (what, out[-400:]))
    before = s.stats()
    check(agc(s, urls)["digest"] == want, "%s: digest on the replica" % what)
    check(s.stats()["replica_reads"] > before["replica_reads"], "%s: the replica serves" % what)


def test_fillbuild():
    """A background build goes on while a pass fills the cache (the activity and filling marks
    fresh, a core to spare: FERRY_REPLICA_FILL_CORES=0 takes the machine's load out of the
    test) and returns with every file built before the pass ends; a warm pass (the activity
    mark alone) holds it back, as test_takeover's paused round shows."""
    s = Setup()
    try:
        names = s.gen("zlib:1", 6000, 1000, 9)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            want = agc(s, urls)["digest"]
            env = dict(s.env, FERRY_REPLICA_FILL_CORES="0")
            with PassRunning(s.cache, filling=True) as running:
                p = subprocess.run([FERRY, "cache", "replica", "build", "--dir", s.cache,
                                    "--background", "--json"], env=env, capture_output=True,
                                   text=True, timeout=280)
                still = running.thread.is_alive()
            check(p.returncode == 0 and still, "built while the pass filled: exit %d, %s"
                  % (p.returncode, p.stderr[-300:]))
            files = json.loads(p.stdout)["files"]
            check(files and all(f["state"] == "built" for f in files),
                  "every file built: %s" % [(f["state"], f["reason"]) for f in files])
            check(agc(s, urls)["digest"] == want, "digest on the replica")
    finally:
        s.remove()


def test_takeover():
    s = Setup()
    try:
        names = s.gen("zlib:1", 20000, 2000, 9)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            want = agc(s, urls)["digest"]
            takeover(s, urls, want, "auto", pass_running=True)
            # zstd:19 is slow: the background builder is mid-way through a file's baskets.
            takeover(s, urls, want, "zstd:19", pass_running=False)
    finally:
        s.remove()


def read_virtual_values(s, o, names, built, expected, what):
    """Each file of `names` read whole as its virtual file: the original's values."""
    for name in names:
        path = os.path.join(s.root, "virtual-" + name)
        size = read_whole(s, o.url_for(name), path)
        check(size == built[name]["virtual_bytes"], "%s %s: virtual size" % (what, name))
        for t, want in expected[name].items():
            check(want[0] == 0 and dump(s, path, t) == want,
                  "%s %s/%s: virtual file values" % (what, name, t))


def test_stages():
    s = Setup(readahead="off")
    try:
        trees_ = s.gen("zlib:1", 3000, 1000, 11)
        ntuples = s.gen("zlib:1", 3000, 1000, 12, "rntuple")
        names = trees_ + ntuples
        expected = {}
        for name in names:
            local = os.path.join(s.data, name)
            expected[name] = {t: dump(s, local, t) for t in (trees(s, local) or [])
                              + rntuples(s, local)}
        checker = jsroot_checker()
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            want = agc(s, urls)["digest"]
            for stage in ("1", "2"):
                built = s.build(stage)
                check(all(built[n]["state"] == "built" and built[n]["stage"] == int(stage)
                          for n in names), "stage %s: %s" % (stage, {
                              n: (f["state"], f["stage"], f["reason"]) for n, f in built.items()}))
                if stage == "1":
                    check(all(e.startswith("stored:") for n in names
                              for e in built[n]["encodings"]),
                          "stage 1 ran no codec: %s" % built[names[0]]["encodings"])
                read_virtual_values(s, o, names, built, expected, "stage " + stage)
                for name in trees_:
                    if checker:
                        a = jsroot_view(checker, os.path.join(s.data, name))
                        b = jsroot_view(checker, os.path.join(s.root, "virtual-" + name))
                        check(a == b, "stage %s %s: jsroot reads the virtual file as the "
                              "original:\n%s\n%s" % (stage, name, a[-600:], b[-600:]))
                jsroot_rntuples(s, [os.path.join(s.root, "virtual-" + n) for n in ntuples])
                check(agc(s, urls)["digest"] == want, "stage %s: agc digest" % stage)
                s.verify_clean("stage " + stage)
    finally:
        s.remove()


def test_kill_stages():
    """SIGKILL of the builder while it relocates (stage 1) and while it re-encodes (stage 2)."""
    s = Setup()
    try:
        names = s.gen("zlib:1", 20000, 2000, 13)
        rnd = random.Random(7)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            want = agc(s, urls)["digest"]
            kills = {"1": 0, "2": 0}
            for i in range(12):
                if i % 3 == 0:
                    # From scratch: the next relocation has every unit to copy.
                    subprocess.run([FERRY, "cache", "replica", "drop", "--dir", s.cache],
                                   env=s.env, check=True, stdout=subprocess.DEVNULL)
                    check(agc(s, urls)["digest"] == want, "refill %d" % i)
                for stage, window in (("1", 0.15), ("2", 0.6)):
                    p = subprocess.Popen([FERRY, "cache", "replica", "build", "--dir", s.cache,
                                          "--stage", stage, "--codec", "zstd:19"], env=s.env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    time.sleep(rnd.uniform(0.0, window))
                    p.send_signal(signal.SIGKILL)
                    _, err = p.communicate(timeout=60)
                    kills[stage] += p.returncode == -signal.SIGKILL
                    check(p.returncode in (0, -signal.SIGKILL), "stage %s builder %d: %d %s"
                          % (stage, i, p.returncode, err[-300:]))
                    s.verify_clean("after a stage-%s kill" % stage)
                    check(agc(s, urls)["digest"] == want, "digest after round %d" % i)
            check(kills["1"] >= 1 and kills["2"] >= 6, "killed mid-way: %s" % kills)
            built = s.build()
            check(all(f["state"] == "built" and f["stage"] == 2 for f in built.values()),
                  "built at last: %s" % built)
            check(agc(s, urls)["digest"] == want, "digest on the replica")
            s.verify_clean("at the end")
    finally:
        s.remove()


def wait_stages(s, names, stage, what):
    """Waits (at most 240 s) until every file's replica is at `stage`; their status. A stage-1
    replica may be `building`: its re-encoding holds the file while it waits for the pass."""
    states = ("built", "building") if stage == 1 else ("built",)

    def done(status):
        return len(status) == len(names) and all(
            f["state"] in states and f["stage"] == stage for f in status.values())

    deadline = time.time() + 240
    status = {}
    while time.time() < deadline and not done(status):
        time.sleep(0.1)
        status = s.status()
    check(done(status),
        "%s: %s" % (what, {n: (f["state"], f["stage"], f["stage_why"])
                           for n, f in status.items()}))
    return status


def test_fillstages():
    """replica = auto: the files a filling pass closed are relocated while it runs (no core to
    spare: FERRY_REPLICA_FILL_CORES=99), then re-encoded once it ended. The pass is kept running
    (its marks fresh) until every file is at stage 1, so the outcome does not depend on how fast
    this machine reads the set."""
    s = Setup(replica="auto")
    try:
        names = s.gen("zlib:1", 12000, 1000, 14, files=4)
        with Origin(s.data) as o:
            urls = [o.url_for(n) for n in names]
            env = dict(s.env, FERRY_REPLICA_FILL_CORES="99")
            p = subprocess.Popen([FERRY, "analyze", "agc", *urls, "--json"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # The pass made the cache and marked itself: from now on it runs as long as needed.
            active = os.path.join(s.cache, ".active")
            while p.poll() is None and not os.path.exists(active):
                time.sleep(0.01)
            with PassRunning(s.cache, filling=True):
                out, err = p.communicate(timeout=300)
                check(p.returncode == 0, "fill pass: %s" % err[-400:])
                first = json.loads(out)
                wait_stages(s, names, 1, "every file relocated while the pass runs")
            status = wait_stages(s, names, 2, "every file re-encoded after the pass")
            check(all(f["stage_why"] == "asked to re-encode" for f in status.values()),
                  "relocated first, then re-encoded: %s" % {
                      n: f["stage_why"] for n, f in status.items()})
            before = s.stats()
            second = agc(s, urls)
            check(first["digest"] == second["digest"], "digests")
            check(s.stats()["replica_reads"] > before["replica_reads"], "the replica serves")
            s.verify_clean("after both stages")
    finally:
        s.remove()


MOVED_PAST_READER = """
import select
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
urls, copy = sys.argv[1:3], sys.argv[3]
files = []
for url in urls:
    f = client.File()
    st, _ = f.open(url, OpenFlags.READ)
    assert st.ok, st.message
    files.append(f)

def whole(f):
    st, info = f.stat()
    assert st.ok, st.message
    data = bytearray()
    while len(data) < info.size:
        st, chunk = f.read(len(data), min(1 << 20, info.size - len(data)))
        assert st.ok and chunk, "read at %d: %s" % (len(data), st.message)
        data += chunk
    return bytes(data)

whole(files[0])
print("first read", flush=True)
# The second file, read on until the test says stop (a line on stdin).
second = whole(files[1])
pos = 0
while not select.select([sys.stdin], [], [], 0.01)[0]:
    st, _ = files[1].read(pos, 65536)
    assert st.ok, st.message
    pos = (pos + 65536) % max(1, len(second) - 65536)
sys.stdin.readline()
with open(copy, "wb") as out:
    out.write(whole(files[0]))  # through the handle opened before the replica
for f in files:
    f.close()
print("closed", flush=True)
"""


def test_movedpast():
    """A replica asked for when the reader moved past the file, not at its close."""
    s = Setup(replica="auto", readahead="off", bypass="off")
    try:
        names = s.gen("zlib:1", 6000, 1000, 15, files=2)
        local = os.path.join(s.data, names[0])
        expected = {names[0]: {t: dump(s, local, t) for t in trees(s, local)}}
        copy = os.path.join(s.root, "copy-" + names[0])
        with Origin(s.data) as o:
            p = subprocess.Popen(["/usr/bin/python3", "-c", MOVED_PAST_READER,
                                  o.url_for(names[0]), o.url_for(names[1]), copy],
                                 env=s.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                check(p.stdout.readline().strip() == "first read", "the reader read file 1")

                def ready(status):
                    f = status.get(names[0])
                    return f and f["stage"] >= 1 and f["missing_baskets"] == 0

                deadline = time.time() + 120
                status = {}
                while time.time() < deadline and p.poll() is None and not ready(status):
                    time.sleep(0.05)
                    status = s.status()
                check(p.poll() is None and ready(status),
                      "file 1's replica while the reader still has it open: %s (reader %s)"
                      % ({n: (f["state"], f["stage"], f["reason"]) for n, f in status.items()},
                         p.poll()))
                check(status[names[1]]["stage"] == 0,
                      "file 2, still read, has no replica yet: %s" % status[names[1]])
                p.stdin.write("stop\n")
                p.stdin.flush()
                out, err = p.communicate(timeout=120)
                check(p.returncode == 0 and out.strip() == "closed", "reader: %s" % err[-600:])
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            with open(local, "rb") as a, open(copy, "rb") as b:
                check(a.read() == b.read(), "the handle opened before the replica: original bytes")
            read_virtual_values(s, o, [names[0]], status, expected, "replica built early")
            s.verify_clean("after the early build")
    finally:
        s.remove()


if __name__ == "__main__":
    if not os.path.isfile(TEMPLATE):
        skip("no ROOT data")
    run_test({"fidelity": test_fidelity, "agc": test_agc, "auto": test_auto, "kill": test_kill,
              "takeover": test_takeover, "fillbuild": test_fillbuild,
              "rntuple": test_rntuple, "kill_rntuple": lambda: test_kill("rntuple"),
              "stages": test_stages, "kill_stages": test_kill_stages,
              "fillstages": test_fillstages, "movedpast": test_movedpast,
              "encrypted": test_encrypted}, TEST)
