#!/usr/bin/env python3
"""The ferry cache plug-in end to end, with real xrootd origins on 127.0.0.1.

usage: test_cache_plugin.py FERRY PLUGIN_LIB ROOT_DATA_DIR TEST
  TEST: python | rootio | crash | faults | fullfs | multiproc | disk
Every test makes its own origin, cache directory and plug-in conf (XRD_PLUGINCONFDIR for the
child processes), and removes them. Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import ferry_harness  # noqa: E402
from ferry_harness import PY, check, ok, run_test, skip, wait_line  # noqa: E402
from ferry_testbed import Origin, Skip, _StateDir, _run, read_lines, wait_for  # noqa: E402

FERRY, PLUGIN, ROOT_DATA, TEST = sys.argv[1:5]
READER = os.path.join(HERE, "cache_reader.py")


class Setup(ferry_harness.Setup):
    """The shared work dir, with XrdCl told to give up on a dead origin within seconds (the
    faults test kills one), and the cache_reader.py modes."""

    XRD_ENV = {"XRD_CONNECTIONRETRY": "1", "XRD_CONNECTIONWINDOW": "2",
               "XRD_REQUESTTIMEOUT": "20", "XRD_STREAMERRORWINDOW": "2"}

    def __init__(self, cache_parent=None, **settings):
        super().__init__(FERRY, PLUGIN, prefix="fca-it-", cache_parent=cache_parent,
                         settings=settings, timeout=120)

    def reader(self, *args, timeout=120):
        return self.run(PY, READER, *args, timeout=timeout)

    def clear_cache(self):
        p = self.ferry("cache", "clear", "--dir", self.cache)
        if p.returncode != 0:
            raise RuntimeError("ferry cache clear: %s" % p.stderr.strip())


def test_python():
    s = Setup()
    try:
        local = s.file("a.bin", 6 * 1024 * 1024 + 11, 1)
        with Origin(s.data) as o:
            url = o.url_for("a.bin")
            ok(s.reader("pass", url, local, "7"), "cold pass")
            cold = s.stats()
            check(cold.get("misses", 0) > 0 and cold.get("origin_requests", 0) > 0,
                  "cold pass counted misses and origin requests: %s" % cold)
            check(cold.get("bytes_from_origin", 0) > 0, "cold pass fetched bytes")
            ok(s.reader("pass", url, local, "7"), "warm pass")
            warm = s.stats()
            check(warm["misses"] == cold["misses"], "warm pass: no new misses %s" % warm)
            check(warm["origin_requests"] == cold["origin_requests"],
                  "warm pass: no origin request")
            check(warm["hits"] - cold["hits"] == 3 * 64 + 3, "warm pass: all hits %s" % warm)
            check(warm["entries"] == 1 and warm["disk_bytes"] > 0, "one entry on disk")
            # Bytes fetched: exactly what was asked (no page rounding).
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0, "verify after passes: %s" % v)
    finally:
        s.remove()


def plaintext_runs(directory, content, samples=512):
    """How many of `samples` 16-byte runs of `content` stand anywhere in the files under
    `directory` (data, index, logs, fragments, replica: everything the cache wrote)."""
    rnd = random.Random(5)
    runs = [content[o:o + 16] for o in (rnd.randrange(len(content) - 16) for _ in range(samples))]
    blobs = []
    for root, _, names in os.walk(directory):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                blobs.append(f.read())
    return sum(1 for r in runs if any(r in b for b in blobs))


class SessionKey:
    """A kernel keyring key of type user in this process's session keyring, which the
    processes the test starts inherit (add_key(2) through ctypes: no keyutils needed)."""
    ADD_KEY, KEYCTL, KEY_SPEC_SESSION_KEYRING, KEYCTL_INVALIDATE = 248, 250, -3, 21

    def __init__(self, name, payload):
        import ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.id = self.libc.syscall(self.ADD_KEY, b"user", name.encode(), payload,
                                    ctypes.c_size_t(len(payload)),
                                    ctypes.c_int(self.KEY_SPEC_SESSION_KEYRING))
        if self.id < 0:
            raise Skip("no kernel keyring here: add_key errno %d" % ctypes.get_errno())

    def remove(self):
        self.libc.syscall(self.KEYCTL, self.KEYCTL_INVALIDATE, self.id)


def test_encrypted():
    """A cache with cache_key_file, filled through the real plug-in from a real origin: warm
    reads are hits with the right bytes, and no 16-byte run of the file is anywhere in the cache
    directory (a plain cache holds them all: the control). With another key, the reads go to
    the origin, stay right, and `ferry cache doctor` says why. The same key from the kernel
    keyring (cache_key_file = keyring:NAME) serves the entries the key file sealed."""
    keys = tempfile.mkdtemp(prefix="fca-keys-")
    key, other = os.path.join(keys, "master.key"), os.path.join(keys, "other.key")
    for path in (key, other):
        with open(path, "wb") as f:
            f.write(os.urandom(32))
        os.chmod(path, 0o600)
    try:
        for encrypted in (False, True):
            s = Setup(**({"cache_key_file": key} if encrypted else {}))
            try:
                local = s.file("secret.bin", 3 * 1024 * 1024 + 77, 42)
                content = open(local, "rb").read()
                with Origin(s.data) as o:
                    url = o.url_for("secret.bin")
                    ok(s.reader("pass", url, local, "3"), "cold pass (encrypted=%s)" % encrypted)
                    cold = s.stats()
                    ok(s.reader("pass", url, local, "3"), "warm pass (encrypted=%s)" % encrypted)
                    warm = s.stats()
                    check(warm["origin_requests"] == cold["origin_requests"]
                          and warm["hits"] > cold["hits"],
                          "warm pass served from the cache (encrypted=%s): %s" % (encrypted, warm))
                    found = plaintext_runs(s.cache, content)
                    if encrypted:
                        check(found == 0, "no plaintext run in the encrypted cache: %d" % found)
                    else:
                        check(found > 100, "the control finds the plaintext: %d of 512" % found)
                        continue
                    conf = os.path.join(s.env["XRD_PLUGINCONFDIR"], "ferry.conf")
                    text = open(conf).read()
                    with open(conf, "w") as f:
                        f.write(text.replace(key, other))
                    ok(s.reader("pass", url, local, "4"), "a pass with another key: right bytes")
                    after = s.stats()
                    check(after["origin_requests"] > warm["origin_requests"],
                          "with another key the reads went to the origin: %s" % after)
                    d = s.ferry("cache", "doctor", "--dir", s.cache, "--json")
                    report = json.loads(d.stdout) if d.stdout.strip() else {}
                    enc = [c for c in report.get("checks", []) if c["name"] == "encryption"]
                    check(d.returncode == 1 and enc and enc[0]["status"] == "fail"
                          and "master key" in enc[0]["message"],
                          "doctor names the key the entries need: %s" % enc)
                    name = "ferry-test-%d" % os.getpid()
                    ring = SessionKey(name, open(key, "rb").read())
                    try:
                        with open(conf, "w") as f:
                            f.write(text.replace(key, "keyring:" + name))
                        ok(s.reader("pass", url, local, "3"), "a pass with the keyring's key")
                        ringed = s.stats()
                        check(ringed["origin_requests"] == after["origin_requests"]
                              and ringed["hits"] > after["hits"],
                              "the keyring's key opens the key file's entries: %s" % ringed)
                    finally:
                        ring.remove()
            finally:
                s.remove()
    finally:
        shutil.rmtree(keys, ignore_errors=True)


def test_rootio():
    """ferry's own ROOT reader (XrdSource with plug-ins) through the cache's byte tier."""
    if not os.path.isdir(ROOT_DATA):
        raise Skip("no ROOT data")
    # replica = manual: with auto, a file's replica is built in the background as soon as the
    # reader moves past it, and a warm read that meets stage 2 replacing stage 1 is served from
    # the origin (replica_faults; right bytes), which is not what "warm reads need no origin"
    # is about here. Replicas under readers are test_replica.py's.
    s = Setup(replica="manual")
    try:
        for name in ["nano_dy.root", "uproot-HZZ-zstd.root"]:
            shutil.copy(os.path.join(ROOT_DATA, name), s.data)
            os.chmod(os.path.join(s.data, name), 0o644)
        with Origin(s.data) as o:
            cases = [("nano_dy.root", ["--tree", "Events", "--branch", "nJet", "--branch",
                                       "Jet_pt", "--json"]),
                     ("uproot-HZZ-zstd.root", ["--tree", "events", "--branch", "Muon_Px",
                                               "--entries", "0:200", "--json"])]
            for rnd in ("cold", "warm"):
                before = s.stats() if rnd == "warm" else None
                for name, args in cases:
                    local = s.ferry("root", "dump", os.path.join(s.data, name), *args)
                    remote = s.ferry("root", "dump", o.url_for(name), *args)
                    check(local.returncode == 0 and remote.returncode == 0,
                          "%s %s dump exit %d/%d %s" % (rnd, name, local.returncode,
                                                       remote.returncode, remote.stderr[-500:]))
                    check(local.stdout == remote.stdout, "%s %s: values differ" % (rnd, name))
                    ls = s.ferry("root", "ls", o.url_for(name), "--json")
                    check(ls.returncode == 0, "%s ls %s" % (rnd, name))
                if before is not None:
                    after = s.stats()
                    check(after["origin_requests"] == before["origin_requests"],
                          "warm ROOT reads needed no origin: %s -> %s" % (before, after))
                    check(after["hits"] > before["hits"], "warm ROOT reads hit the cache")
            check(s.stats().get("entries") == 2, "two entries")
    finally:
        s.remove()


def test_crash():
    """A reader SIGKILLed at random points during fill, 50 times: verify finds no bad page and
    later reads return the origin's bytes."""
    s = Setup(publish_ms="0")  # publish after every batch: kills land mid-publish too
    try:
        local = s.file("big.bin", 24 * 1024 * 1024, 2)
        rnd = random.Random(99)
        with Origin(s.data) as o:
            url = o.url_for("big.bin")
            for i in range(50):
                p = subprocess.Popen([PY, READER, "loop", url, local, str(i)], env=s.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                # The kill lands while the cache fills: after the first read came back (however
                # slow the machine is at starting the reader), at a random point after it.
                check(wait_line(p, 60) is not None, "reader %d read through the cache" % i)
                time.sleep(rnd.uniform(0.0, 0.3))
                p.send_signal(signal.SIGKILL)
                _, err = p.communicate(timeout=30)
                check(p.returncode == -signal.SIGKILL or p.returncode == 0,
                      "reader %d ended %d: %s" % (i, p.returncode, err[-300:]))
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0 and v.get("fragments_bad") == 0
                  and v.get("bad_indexes") == 0, "verify after 50 kills: %s" % v)
            check(v.get("pages_ok", 0) + v.get("fragments_ok", 0) > 0, "kills left pages: %s" % v)
            # Later passes (over what the killed readers fetched and more) read origin bytes.
            for seed in (0, 7, 49, 1000):
                ok(s.reader("pass", url, local, str(seed)), "pass %d after kills" % seed)
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0, "verify at the end: %s" % v)
    finally:
        s.remove()


def test_faults():
    s = Setup()
    state = _StateDir()
    try:
        local = s.file("f.bin", 4 * 1024 * 1024, 3)
        # 1. A bit flipped in a cached page: detected, refetched, counted.
        with Origin(s.data) as o:
            url = o.url_for("f.bin")
            ranges = ["1048576:65536", "2000003:777"]
            ok(s.reader("ranges", url, local, *ranges), "fill for the bit flip")
            # The flip must land in a stored page: wait until the index published both ranges.
            ls = wait_for(lambda: [e for e in s.ls() if e["held_bytes"] >= 65536 + 777])
            check(ls, "the fill was published: %s" % s.ls())
            key = ls[0]["key"]
            data_file = os.path.join(s.cache, "entries", key[:2], key + ".data")
            with open(data_file, "r+b") as f:
                f.seek(1048576 + 5000)
                b = f.read(1)
                f.seek(1048576 + 5000)
                f.write(bytes([b[0] ^ 0x04]))
            before = s.stats()
            ok(s.reader("ranges", url, local, *ranges), "read after the bit flip")
            after = s.stats()
            check(after["crc_failures"] == before["crc_failures"] + 1,
                  "one CRC failure counted: %s" % after)
            # The next read must find the refetched page, not the flipped one: wait until the
            # stored pages verify again.
            check(wait_for(s.verified), "the refetched page replaced the flipped one: %s %s"
                  % s.verify())
            ok(s.reader("ranges", url, local, *ranges), "read after the refetch")
            check(s.stats()["crc_failures"] == after["crc_failures"], "repaired: no new failure")
        # 2. The origin killed mid-pass and restarted on the same port.
        env = state.env
        url0 = _run("origin.sh", "start", "--dir", s.data, "--name", "kill", env=env)
        port = url0.rstrip("/").rsplit(":", 1)[1]
        url = url0 + "/f.bin"
        progress = os.path.join(s.root, "slow.progress")
        p = subprocess.Popen([PY, READER, "slow", url, local, "120", "25", progress], env=s.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Stopped once reads succeed, restarted once the reader met the outage, so reads are
        # left to complete after it.
        check(wait_for(lambda: read_lines(progress).count("ok") >= 10),
              "reads before the origin stops: %s" % read_lines(progress))
        _run("origin.sh", "stop", "--name", "kill", env=env)
        check(wait_for(lambda: "err" in read_lines(progress)),
              "a read failed while the origin was down: %s" % read_lines(progress))
        _run("origin.sh", "start", "--dir", s.data, "--name", "kill", "--port", port, env=env)
        out, err = p.communicate(timeout=120)
        check(p.returncode == 0, "slow reader: no wrong byte (exit %d) %s" % (p.returncode,
                                                                        err[-500:]))
        counts = dict(kv.split("=") for kv in out.split()) if out.strip() else {}
        print("origin kill: reader", out.strip(), flush=True)
        check(int(counts.get("ok", 0)) > 0, "reads succeeded: %s" % out)
        # Once the origin is back, reads complete again (the plug-in reopens its origin file).
        check(int(counts.get("ok_after_err", 0)) >= 20, "reads complete after the restart: %s" % out)
        rc, v = s.verify()
        check(rc == 0 and v.get("pages_bad") == 0, "verify after the origin kill: %s" % v)
        ok(s.reader("pass", url, local, "5"), "pass after the origin restart")
        _run("origin.sh", "stop", "--name", "kill", env=env)
    finally:
        try:
            _run("origin.sh", "stop", "--name", "kill", env=state.env)
        except Exception:  # pylint: disable=broad-except
            pass
        state.remove()
        s.remove()


def test_fullfs():
    """The cache on a small full tmpfs: reads stay correct (pass-through), faults counted."""
    mnt = tempfile.mkdtemp(prefix="fca-tmpfs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "fca-tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(mnt)
        raise Skip("cannot mount a tmpfs: " + r.stderr.strip())
    s = Setup(cache_parent=mnt, min_free="0")
    try:
        local = s.file("g.bin", 8 * 1024 * 1024, 4)
        with Origin(s.data) as o:
            url = o.url_for("g.bin")
            spans = ["%d:%d" % (off, 200000) for off in range(0, 8 * 1024 * 1024 - 200000, 300000)]
            for rnd in range(2):
                ok(s.reader("ranges", url, local, *spans), "read %d on a full cache" % rnd)
            st = s.stats()
            print("full disk:", st, flush=True)
            check(st.get("failopen_events", 0) + st.get("writes_dropped", 0) > 0,
                  "full disk counted: %s" % st)
            ok(s.reader("pass", url, local, "3"), "pass on a full cache")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
        os.rmdir(mnt)
        s.remove()


def test_multiproc():
    """4 processes x 4 threads reading the same files at once."""
    s = Setup()
    try:
        locals_ = [s.file("m%d.bin" % i, 6 * 1024 * 1024, 10 + i) for i in range(3)]
        with Origin(s.data) as o:
            specs = ["%s=%s" % (o.url_for("m%d.bin" % i), locals_[i]) for i in range(3)]
            procs = [subprocess.Popen([PY, READER, "threads", "4", "25", str(k), *specs],
                                      env=s.env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for k in range(4)]
            for k, p in enumerate(procs):
                _, err = p.communicate(timeout=180)
                check(p.returncode == 0, "process %d: exit %d %s" % (k, p.returncode, err[-500:]))
            st = s.stats()
            check(st.get("entries") == 3, "three entries: %s" % st)
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0 and v.get("fragments_bad") == 0,
                  "verify after concurrent fill: %s" % v)
            # Round 2 finds nearly everything (pieces two readers fetched in one page at the
            # same time keep one interval; the other is fetched again); round 3 finds all.
            for rnd in (2, 3):
                before = s.stats()
                procs = [subprocess.Popen([PY, READER, "threads", "4", "25", str(k), *specs],
                                          env=s.env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True) for k in range(4)]
                for k, p in enumerate(procs):
                    _, err = p.communicate(timeout=180)
                    check(p.returncode == 0, "round %d process %d: %s" % (rnd, k, err[-500:]))
                after = s.stats()
                hits = after["hits"] - before["hits"]
                misses = after["misses"] - before["misses"]
                print("round %d: %d hits, %d misses" % (rnd, hits, misses), flush=True)
                if rnd == 2:
                    check(hits >= 0.9 * (hits + misses), "round 2 mostly hits")
                else:
                    check(after["origin_requests"] == before["origin_requests"],
                          "round 3: all from the cache (%d -> %d requests)"
                          % (before["origin_requests"], after["origin_requests"]))
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0, "verify at the end: %s" % v)
    finally:
        s.remove()


def test_cli():
    """ferry cache enable writes the plug-in conf file that XrdCl then reads; the other commands.
    (--conf-dir + XRD_PLUGINCONFDIR: enabling the cache in this account's home directory would
    reach every other XRootD client of the machine.)"""
    s = Setup()
    confdir = os.path.join(s.root, "pluginconf")
    env = dict(s.env, XRD_PLUGINCONFDIR=confdir)

    def ferry(*args):
        return subprocess.run([FERRY, "cache", *args], env=env, capture_output=True, text=True,
                              timeout=120)
    try:
        local = s.file("c.bin", 3 * 1024 * 1024, 6)
        cache = os.path.join(s.root, "cli-cache")
        p = ferry("enable", "--dir", cache, "--max-size", "1G", "--lib", PLUGIN, "--url",
                  "root://*", "--set", "publish_ms=50", "--conf-dir", confdir)
        ok(p, "enable")
        check("ferry cache disable" in p.stdout, "enable tells how to disable: %s" % p.stdout)
        conf = os.path.join(confdir, "ferry-cache.conf")
        text = open(conf).read() if os.path.exists(conf) else ""
        for line in ("url = root://*", "lib = " + PLUGIN, "enable = true", "dir = " + cache,
                     "max_size = 1G", "publish_ms = 50"):
            check(line in text, "conf has '%s'" % line)
        st = json.loads(ferry("status", "--json").stdout)
        check(st["enabled"] and st["dir"] == cache, "status: %s" % st)
        with Origin(s.data) as o:
            url = o.url_for("c.bin")
            for rnd in range(2):
                p = subprocess.run([PY, READER, "pass", url, local, "9"], env=env,
                                   capture_output=True, text=True, timeout=120)
                ok(p, "read %d with the enabled conf" % rnd)
            stats = json.loads(ferry("stats", "--json").stdout)
            check(stats["misses"] > 0 and stats["hits"] > 0 and stats["entries"] == 1,
                  "reads went through the cache: %s" % stats)
            for key in ("hits", "misses", "bytes_from_cache", "bytes_from_origin",
                        "origin_requests", "crc_failures", "failopen_events",
                        "admissions_declined", "evictions", "entries", "disk_bytes"):
                check(key in stats, "stats --json has %s" % key)
            ls = json.loads(ferry("ls", "--json").stdout)["entries"]
            check(len(ls) == 1 and ls[0]["url"].endswith("/c.bin"), "ls: %s" % ls)
            ok(ferry("pin", url), "pin")
            p = ferry("clear")
            ok(p, "clear")
            check("1 pinned" in p.stdout, "clear keeps the pinned entry: %s" % p.stdout)
            ok(ferry("pin", "--unpin", url), "unpin")
            p = ferry("evict", "--older-than", "1h")
            check(p.returncode == 0 and "evicted 0 entries" in p.stdout,
                  "evict --older-than keeps an entry read just now: %s" % p.stdout)
            # Last read two hours ago (the mtimes of its lock file and index, capacity.h)
            # instead of waiting for the clock.
            key = ls[0]["key"]
            two_hours_ago = time.time() - 7200
            for ext in ("lock", "idx"):
                os.utime(os.path.join(cache, "entries", key[:2], key + "." + ext),
                         (two_hours_ago, two_hours_ago))
            p = ferry("evict", "--older-than", "1h")
            check("evicted 1 entries" in p.stdout, "evict --older-than: %s" % p.stdout)
            check(json.loads(ferry("stats", "--json").stdout)["entries"] == 0, "evicted")
            p = ferry("evict", "--to-size", "x")
            check(p.returncode == 2, "bad --to-size is a usage error (exit %d)" % p.returncode)
        ok(ferry("disable", "--conf-dir", confdir), "disable")
        check(not os.path.exists(conf), "disable removed the conf file")
        p = ferry("stats", "--json")
        check(p.returncode == 1, "no directory once disabled: exit %d" % p.returncode)
    finally:
        s.remove()


def test_disk():
    """An entry's disk use stays within 1.05x the bytes it holds after 25 readers killed
    mid-fill and 20 passes of random partial-page reads: fragments that grow are appended anew,
    and compaction must reclaim the old copies (without it: 1.2-1.45x measured)."""
    s = Setup(publish_ms="0")
    try:
        local = s.file("d.bin", 16 * 1024 * 1024, 4)
        size = os.path.getsize(local)
        rnd = random.Random(21)
        with Origin(s.data) as o:
            url = o.url_for("d.bin")
            for i in range(25):
                p = subprocess.Popen([PY, READER, "loop", url, local, str(100 + i)], env=s.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                # Killed mid-fill: after its first read came back through the cache (however
                # slow the machine is at starting the reader), at a random point after it.
                check(wait_line(p, 60) is not None, "reader %d read through the cache" % i)
                time.sleep(rnd.uniform(0.0, 0.3))
                p.send_signal(signal.SIGKILL)
                p.communicate(timeout=30)
            for n in range(20):
                ranges = []
                for _ in range(300):
                    ln = rnd.randrange(100, 3000)
                    ranges.append("%d:%d" % (rnd.randrange(0, size - ln), ln))
                ok(s.reader("ranges", url, local, *ranges), "random partial reads %d" % n)
            entry = json.loads(s.ferry("cache", "ls", "--dir", s.cache, "--json").stdout)
            e = entry["entries"][0]
            edir = os.path.join(s.cache, "entries", e["key"][:2])
            files = {f[len(e["key"]) + 1:]: os.stat(os.path.join(edir, f)).st_blocks * 512
                     for f in os.listdir(edir) if f.startswith(e["key"])}
            check(e["disk_bytes"] <= 1.05 * e["held_bytes"],
                  "disk %d for %d bytes held (%.3fx), allocated per file %s"
                  % (e["disk_bytes"], e["held_bytes"], e["disk_bytes"] / e["held_bytes"], files))
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0 and v.get("fragments_bad") == 0,
                  "verify: %s" % v)
    finally:
        s.remove()


def test_log():
    """ferry's lines reach XRootD's log at XRD_LOGLEVEL=Debug, stderr with FERRY_LOG, else nothing."""
    s = Setup()
    try:
        local = s.file("l.bin", 1024 * 1024, 5)
        with Origin(s.data) as o:
            url = o.url_for("l.bin")
            base_env = s.env
            s.env = dict(base_env, XRD_LOGLEVEL="Debug")
            s.env.pop("FERRY_LOG", None)
            p = s.reader("pass", url, local, "3")
            ok(p, "pass at XRD_LOGLEVEL=Debug")
            lines = [l for l in p.stderr.splitlines() if "cache: miss root://" in l]
            check(lines and all("Ferry" in l for l in lines),
                  "misses in XrdCl's log under the Ferry topic: %s" % p.stderr[-600:])
            s.clear_cache()
            s.env = dict(base_env, FERRY_LOG="debug")
            s.env.pop("XRD_LOGLEVEL", None)
            p = s.reader("pass", url, local, "3")
            ok(p, "pass with FERRY_LOG=debug")
            check(any(l.startswith("ferry debug cache: miss root://")
                      for l in p.stderr.splitlines()),
                  "FERRY_LOG=debug keeps ferry's own stderr lines: %s" % p.stderr[-600:])
            s.clear_cache()
            s.env = dict(base_env)
            s.env.pop("XRD_LOGLEVEL", None)
            s.env.pop("FERRY_LOG", None)
            p = s.reader("pass", url, local, "3")
            ok(p, "pass with default logging")
            check("cache: miss" not in p.stderr, "no debug lines by default: %s" % p.stderr[-600:])
    finally:
        s.remove()


TESTS = {"cli": test_cli, "log": test_log, "python": test_python, "rootio": test_rootio,
         "crash": test_crash, "faults": test_faults, "fullfs": test_fullfs,
         "multiproc": test_multiproc, "disk": test_disk, "encrypted": test_encrypted}

if __name__ == "__main__":
    if not os.path.exists(PLUGIN):
        skip("plug-in not built: " + PLUGIN)
    run_test(TESTS, TEST)
