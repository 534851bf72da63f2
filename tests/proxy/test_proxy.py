#!/usr/bin/env python3
"""ferry's site proxy end to end: a real xrootd origin, a real xrootd proxy loading
libXrdFerryProxy (started with `ferry proxy run`), real clients.

usage: test_proxy.py FERRY PGREAD_PROBE ROOT_DATA_DIR TEST
  TEST: basic | reuse | concurrency | crash | faults | storm | cluster | twolevel | rntuple |
  cached_only | stalled_origin | copies | copies_memory | zero_copy | zero_copy_ahead |
  zero_copy_copy (and *_long
  variants of crash and storm at full size)
Exit 0 = pass, 1 = fail, 77 = cannot run here (no xrootd, not root, no namespaces).
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
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import ferry_harness  # noqa: E402
import ferry_testbed  # noqa: E402
from ferry_harness import PY, check, ok, run_test, wait_line  # noqa: E402
from proxy_testbed import Proxy, Redirector, Skip, read_status  # noqa: E402
from proxy_testbed import settled as proxy_settled  # noqa: E402
from ferry_testbed import read_lines, wait_for  # noqa: E402

FERRY, PROBE, ROOT_DATA, TEST = sys.argv[1:5]
READER = os.path.join(HERE, "proxy_reader.py")
CACHE_READER = os.path.join(HERE, "..", "cache", "cache_reader.py")
CLIENT_PLUGIN = os.environ.get("FERRY_CLIENT_PLUGIN", "")


class Setup(ferry_harness.Setup):
    """The shared work dir without a client plug-in (the proxy is what is tested; a test that
    wants one asks for it): data served by the origin, the proxy's cache, logs."""

    XRD_ENV = {"XRD_CONNECTIONRETRY": "1", "XRD_CONNECTIONWINDOW": "2",
               "XRD_REQUESTTIMEOUT": "30", "XRD_STREAMERRORWINDOW": "2"}

    def __init__(self):
        super().__init__(FERRY, prefix="fpx-it-", timeout=180)

    def copy_root(self, name):
        shutil.copy(os.path.join(ROOT_DATA, name), self.data)
        os.chmod(os.path.join(self.data, name), 0o644)
        return os.path.join(self.data, name)

    def reader(self, *args, timeout=180, env=None):
        # tests/cache's reader has the modes both test suites use (pass, ranges, slow, loop).
        script = CACHE_READER if args and args[0] in ("pass", "ranges", "slow") else READER
        return self.run(PY, script, *args, timeout=timeout, env=env)

    def settled(self, seconds=60):
        """Waits until the proxy on the shared cache is settled (proxy_testbed.settled: files
        closed, nothing in flight, write-behind idle, asked after this call); fails the test
        when it does not settle in `seconds`. Returns the status."""
        st = proxy_settled(self.cache, seconds)
        if st is None:
            raise AssertionError("the proxy did not settle in %ds: %s" %
                                 (seconds, read_status(self.cache)))
        return st

    def flip_bit(self, offset):
        """Flips one bit of the only cache entry's data file at `offset` (a cached page)."""
        entries = json.loads(self.ferry("cache", "ls", "--dir", self.cache, "--json").stdout)
        key = entries["entries"][0]["key"]
        with open(os.path.join(self.cache, "entries", key[:2], key + ".data"), "r+b") as f:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ 0x04]))


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
        big = s.file("big.bin", 40 * 1024 * 1024, 5)
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
                    # Chunks answered in file order: XrdCl re-read no page.
                    check(r["repaired"] == 0, "%s pgread: no page read twice: %s" % (tag, r))
                    with open(local, "rb") as f:
                        f.seek(4095)
                        check(open(out, "rb").read() == f.read(300001), "%s pgread bytes" % tag)
                copy = os.path.join(s.root, "copy.bin")
                # At Info, XrdCl logs each page it reads again after a checksum mismatch.
                q = s.run("xrdcp", "-f", "-s", url, copy, env=dict(s.env, XRD_LOGLEVEL="Info"))
                ok(q, "%s xrdcp (pgread)" % tag)
                check(os.path.exists(copy) and same_file(copy, local), "%s xrdcp bytes" % tag)
                check(q.stderr.count("Received corrupted page") == 0,
                      "%s xrdcp (pgread): %d pages read again" %
                      (tag, q.stderr.count("Received corrupted page")))
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

            # The largest vector reads a client sends reach the origin within its limits.
            ok(s.reader("bigv", p.url_for("big.bin"), big), "1024-chunk and 2 MiB-chunk readv")
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
            check(acc.get("records", 0) >= 8 and acc.get("files", 0) == 2 + len(roots),
                  "access records: %s" % acc)
            check(acc.get("bytes_hit", 0) > 0 and acc.get("bytes_missed", 0) > 0,
                  "records count hits and misses: %s" % acc)
            st = p.status()
            check(st.get("redirects", 0) > 0 and st.get("opens", 0) > 0,
                  "status: opens redirected to synthetic users: %s" % st)
            # The CLI on the live proxy directory.
            ls = s.ferry("cache", "ls", "--dir", s.cache, "--json")
            check(ls.returncode == 0 and len(json.loads(ls.stdout)["entries"]) == 2 + len(roots),
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


def origin_hostport(o):
    return o.url.split("//")[1].rstrip("/")


def proxy_rss_fds(p):
    """(VmRSS in kB, open descriptors) of the proxy's xrootd."""
    pid = p.pids()[0]
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return rss, len(os.listdir("/proc/%d/fd" % pid))


def steady_fds(p, seconds=15):
    """(VmRSS, descriptors) of the proxy once its descriptor count held still for 0.3 s (the
    write-behind releases an entry's descriptors after publishing it), bounded by `seconds`."""
    samples = []

    def still():
        samples.append(proxy_rss_fds(p))
        return len(samples) >= 4 and len({fds for _, fds in samples[-4:]}) == 1
    wait_for(still, seconds=seconds, interval=0.1)
    return samples[-1]


def test_crash(kills=20):
    """The proxy SIGKILLed at random points while it fills, restarted on the same directory,
    `kills` times: verify finds no bad page, later reads return the origin's bytes."""
    s = Setup()
    try:
        local = s.file("big.bin", 24 * 1024 * 1024, 2)
        rnd = random.Random(99)
        with ferry_testbed.Origin(s.data) as o:
            origin = origin_hostport(o)
            port = None
            for i in range(kills):
                p = Proxy(FERRY, origin, s.cache, s.root, port=port, env=s.env,
                          extra=["--set", "publish_ms=0"])  # publish after every batch
                port = p.port
                url = p.url_for("big.bin")
                r = subprocess.Popen([PY, CACHE_READER, "loop", url, local, str(i)], env=s.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                # The kill lands while the proxy fills: after the reader's first read came back
                # (however slow the machine is at starting both), at a random point after it.
                check(wait_line(r, 60) is not None, "reader %d read through the proxy" % i)
                time.sleep(rnd.uniform(0.0, 0.3))
                p.kill(signal.SIGKILL)
                r.kill()
                _, err = r.communicate(timeout=30)
                # The reader either read right bytes until the proxy vanished, or failed on the
                # lost connection; a wrong byte is "mismatch".
                check("mismatch" not in err, "reader %d saw wrong bytes: %s" % (i, err[-300:]))
            rc, v = s.verify()
            print("after %d kills: %s" % (kills, v), flush=True)
            check(rc == 0 and v.get("pages_bad") == 0 and v.get("fragments_bad") == 0
                  and v.get("bad_indexes") == 0, "verify after %d kills: %s" % (kills, v))
            check(v.get("pages_ok", 0) + v.get("fragments_ok", 0) > 0, "kills left pages: %s" % v)
            with Proxy(FERRY, origin, s.cache, s.root, port=port, env=s.env) as p:
                for seed in (0, 7, 49, 1000):
                    ok(s.reader("pass", p.url_for("big.bin"), local, str(seed)),
                       "pass %d after the kills" % seed)
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0, "verify at the end: %s" % v)
    finally:
        s.remove()


def test_faults():
    """A flipped bit in a cached page, the origin killed mid-pass and restarted, a full
    filesystem under the cache: the proxy answers the origin's bytes or the origin's error."""
    s = Setup()
    state = ferry_testbed._StateDir()
    mnt = None
    try:
        local = s.file("f.bin", 4 * 1024 * 1024, 3)
        url0 = ferry_testbed._run("origin.sh", "start", "--dir", s.data, "--name", "kill",
                                  env=state.env)
        origin = url0.split("//")[1].rstrip("/")
        # The proxy gives up on the origin after 5 s (ferry.timeout), so the pass below keeps
        # going while the origin is down.
        with Proxy(FERRY, origin, s.cache, s.root, env=s.env,
                   extra=["--set", "timeout=5", "--set", "retries=1"]) as p:
            url = p.url_for("f.bin")
            # 1. A bit flipped in a cached page: detected, refetched, counted.
            ranges = ["1048576:65536", "2000003:777"]
            ok(s.run(PY, CACHE_READER, "ranges", url, local, *ranges), "fill for the bit flip")
            s.settled()
            s.flip_bit(1048576 + 5000)
            before = s.stats()
            ok(s.run(PY, CACHE_READER, "ranges", url, local, *ranges), "read after the flip")
            after = s.stats()
            check(after["crc_failures"] >= before["crc_failures"] + 1,
                  "the CRC failure was counted: %s" % after)
            # 2. The origin killed mid-pass and restarted on the same port: reads of held bytes
            # go on, the others fail with an error (never a wrong byte) and work again after.
            port = origin.rsplit(":", 1)[1]
            progress = os.path.join(s.root, "slow.progress")
            r = subprocess.Popen([PY, CACHE_READER, "slow", url, local, "120", "25", progress],
                                 env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            # Stopped once reads succeed, restarted once the reader met the outage, so reads
            # are left to complete after it.
            check(wait_for(lambda: read_lines(progress).count("ok") >= 10),
                  "reads before the origin stops: %s" % read_lines(progress))
            ferry_testbed._run("origin.sh", "stop", "--name", "kill", env=state.env)
            check(wait_for(lambda: "err" in read_lines(progress)),
                  "a read failed while the origin was down: %s" % read_lines(progress))
            ferry_testbed._run("origin.sh", "start", "--dir", s.data, "--name", "kill",
                               "--port", port, env=state.env)
            out, err = r.communicate(timeout=180)
            print("origin kill: reader", out.strip(), flush=True)
            check(r.returncode == 0, "slow reader: no wrong byte (exit %d) %s" %
                  (r.returncode, err[-500:]))
            counts = dict(kv.split("=") for kv in out.split()) if out.strip() else {}
            check(int(counts.get("ok_after_err", 0)) >= 20,
                  "reads complete after the origin restart: %s" % out)
            ok(s.reader("pass", url, local, "5"), "pass after the origin restart")
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0, "verify after the origin kill: %s" % v)
        # 3. The cache on a small tmpfs that fills up: reads stay right, the fault is counted.
        mnt = tempfile.mkdtemp(prefix="fpx-tmpfs-")
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "fpx-tmpfs", mnt],
                           capture_output=True, text=True)
        if m.returncode != 0:
            os.rmdir(mnt)
            mnt = None
            print("SKIP part 3: cannot mount a tmpfs:", m.stderr.strip())
            return
        os.chmod(mnt, 0o755)
        big = s.file("g.bin", 8 * 1024 * 1024, 4)
        full = os.path.join(mnt, "cache")
        with Proxy(FERRY, origin, full, s.root, env=s.env,
                   extra=["--set", "min_free=0", "--max-size", "1G"]) as p:
            url = p.url_for("g.bin")
            spans = ["%d:%d" % (o, 200000) for o in range(0, 8 * 1024 * 1024 - 200000, 300000)]
            for rnd in range(2):
                ok(s.run(PY, CACHE_READER, "ranges", url, big, *spans),
                   "read %d on a full cache" % rnd)
            ok(s.reader("pass", url, big, "3"), "pass on a full cache")

            def full_disk_counted():
                st = s.stats(full)
                return st if st.get("failopen_events", 0) + st.get("writes_dropped", 0) \
                    + st.get("admissions_declined", 0) > 0 else None
            st = wait_for(full_disk_counted) or s.stats(full)
            print("full disk:", json.dumps(st), flush=True)
            check(full_disk_counted(), "the full disk was counted: %s" % st)
            check(p.proc.poll() is None, "the proxy survived the full disk")
    finally:
        try:
            ferry_testbed._run("origin.sh", "stop", "--name", "kill", env=state.env)
        except Exception:  # pylint: disable=broad-except
            pass
        if mnt:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
            os.rmdir(mnt)
        state.remove()
        s.remove()


def test_storm(threads=16, opens=10000):
    """16 client threads opening 100 files `opens` times in all, 2-byte reads, stat, close:
    no error, no crash, no deadlock, no leak (descriptors and memory back where they were)."""
    s = Setup()
    try:
        files = [s.file("s/%02d.bin" % i, 65536 + i, 200 + i) for i in range(100)]
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, origin_hostport(o), s.cache, s.root, env=s.env,
                      status_ms=50) as p:
            pairs = ["%s=%s" % (p.url_for("s/%02d.bin" % i), f) for i, f in enumerate(files)]
            # A first round fills the cache and reaches the steady state of memory use.
            ok(s.reader("storm", str(threads), str(max(1, opens // threads // 10)), "1",
                        *pairs, timeout=600), "storm warm-up")
            # The baseline once every warm-up file is closed and its entry published (the
            # descriptors stop changing), not while they still go.
            check(p.idle(), "the warm-up's files were closed: %s" % p.status())
            rss0, fds0 = steady_fds(p)
            q = s.reader("storm", str(threads), str(opens // threads), "2", *pairs, timeout=900)
            ok(q, "storm")
            print("storm:", q.stdout.strip(), flush=True)
            check(p.proc.poll() is None, "the proxy is alive after the storm")
            # Descriptors of the last files' entries stay open until the write-behind thread
            # published them (publish_ms), and the origin channels opened for concurrent
            # requests stay: wait (bounded) for the count to come back; a leak never does.
            # The status file is rewritten within status_ms of a change (closes included).
            wait_for(lambda: proxy_rss_fds(p)[1] <= fds0 + 4
                     and p.status().get("open_files") == 0, seconds=15)
            rss1, fds1 = proxy_rss_fds(p)
            st = p.status()
            print("proxy rss %d -> %d kB, fds %d -> %d, status %s" %
                  (rss0, rss1, fds0, fds1, json.dumps(st)), flush=True)
            check(st.get("open_files") == 0, "every file closed: %s" % st)
            check(fds1 <= fds0 + 4, "descriptors do not leak: %d -> %d" % (fds0, fds1))
            check(rss1 <= rss0 + 64 * 1024, "memory does not grow: %d -> %d kB" % (rss0, rss1))
            # Still serving.
            ok(s.run(PY, CACHE_READER, "ranges", p.url_for("s/07.bin"), files[7], "0:65536",
                     "1000:2"), "reads after the storm")
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0, "verify after the storm: %s" % v)
    finally:
        s.remove()


def test_cluster():
    """Two proxies behind an xrootd + cmsd redirector: clients open through the redirector,
    read the origin's bytes, and both proxies serve."""
    s = Setup()
    try:
        files = [s.file("k/%d.bin" % i, 2 * 1024 * 1024 + i, 300 + i) for i in range(8)]
        with ferry_testbed.Origin(s.data) as o, Redirector(s.root) as r:
            caches = [os.path.join(s.root, "cache-a"), os.path.join(s.root, "cache-b")]
            with Proxy(FERRY, origin_hostport(o), caches[0], s.root, env=s.env,
                       extra=["--manager", r.manager]) as pa, \
                    Proxy(FERRY, origin_hostport(o), caches[1], s.root, env=s.env,
                          extra=["--manager", r.manager]) as pb:
                # Both data servers log in to the manager's cmsd before clients come.
                check(r.wait_servers(2), "both proxies logged in to the redirector")
                # (The manager makes the very first open of its life wait 10 s.)
                for rnd in range(2):
                    for i, f in enumerate(files):
                        ok(s.reader("pass", r.url_for("k/%d.bin" % i), f, str(rnd)),
                           "round %d file %d through the redirector" % (rnd, i))
                def records():  # appended as the proxies close the files
                    return [s.stats(c).get("access", {}).get("records", 0) for c in caches]

                def served_by_both():
                    n = records()
                    return n if sum(n) >= 16 and all(n) else None
                served = wait_for(served_by_both) or records()
                print("records per proxy:", served, [pa.status().get("opens"),
                                                     pb.status().get("opens")], flush=True)
                check(sum(served) >= 16, "every open was served by a proxy: %s" % served)
                check(all(n > 0 for n in served), "both proxies served: %s" % served)
    finally:
        s.remove()


def test_failover():
    """Two proxies behind a redirector, 16 clients reading through it; one proxy is SIGKILLed
    (supervisor, xrootd and cmsd: a machine gone) while they read. Every client finishes with
    the right bytes through XrdCl's recovery (back to the redirector, which sends it to the
    survivor), and the survivor's cache verifies clean."""
    s = Setup()
    try:
        files = [s.file("f/%d.bin" % i, 3 * 1024 * 1024 + 17 * i, 700 + i) for i in range(8)]
        with ferry_testbed.Origin(s.data) as o, Redirector(s.root) as r:
            caches = [os.path.join(s.root, "cache-a"), os.path.join(s.root, "cache-b")]
            proxies = [Proxy(FERRY, origin_hostport(o), c, s.root, env=s.env, status_ms=50,
                             extra=["--manager", r.manager]) for c in caches]
            try:
                check(r.wait_servers(2), "both proxies logged in to the redirector")
                # XrdCl's own recovery settings, not the fail-fast ones of the other tests.
                env = dict(s.env, XRD_CONNECTIONRETRY="5", XRD_CONNECTIONWINDOW="5",
                           XRD_STREAMERRORWINDOW="0")
                gate = os.path.join(s.root, "killed")
                readers = [subprocess.Popen(
                    [PY, READER, "rounds", r.url_for("f/%d.bin" % (i % 8)), files[i % 8],
                     str(i), "40", gate], env=env, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True) for i in range(16)]
                for i, rd in enumerate(readers):
                    check((wait_line(rd, 120) or "").strip() == "half", "reader %d read half its rounds" % i)
                # The proxy that serves more of the readers goes, once the statuses count an
                # open of each of the 8 files (XrdOfs may share one open among its readers).
                def opens():
                    n = [p.status().get("opens", 0) for p in proxies]
                    return n if sum(n) >= 8 else None
                served = wait_for(opens) or [p.status().get("opens", 0) for p in proxies]
                victim = 0 if served[0] >= served[1] else 1
                check(served[victim] > 0, "the proxy to kill serves readers: %s" % served)
                print("opens before the kill:", served, "killing", victim, flush=True)
                proxies[victim].kill(signal.SIGKILL)
                open(gate, "w").close()
                failed = []
                for i, rd in enumerate(readers):
                    out, err = rd.communicate(timeout=300)
                    if rd.returncode != 0 or "rounds 40" not in out:
                        failed.append((i, rd.returncode, err[-300:]))
                check(not failed, "every reader finished all rounds with the right bytes: %s"
                      % failed)
                survivor = proxies[1 - victim]
                took = wait_for(lambda: survivor.status().get("opens", 0) > served[1 - victim])
                check(took, "the survivor took over the victim's files: %s" % survivor.status())
            finally:
                for p in proxies:
                    p.stop()
            rc, v = s.verify(caches[1 - victim])
            print("survivor's cache:", v, flush=True)
            check(rc == 0 and v.get("pages_bad") == 0 and v.get("fragments_bad") == 0,
                  "the survivor's cache holds only verified data: %s" % v)
    finally:
        s.remove()


def test_encrypted():
    """`ferry proxy run --encrypt-key`: the master key (root's, 0600) is copied into the admin
    directory for xrootd's account; reads through the proxy are right, cold and warm (warm from
    the cache, no new origin request), and no 16-byte run of the file is anywhere in the cache
    directory. After a crash the supervisor checks the seals of what the dead server wrote."""
    s = Setup()
    try:
        local = s.file("e.bin", 5 * 1024 * 1024 + 9, 17)
        content = open(local, "rb").read()
        key = os.path.join(s.root, "master.key")
        with open(key, "wb") as f:
            f.write(os.urandom(32))
        os.chmod(key, 0o600)
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, origin_hostport(o), s.cache, s.root, env=s.env, status_ms=50,
                      extra=["--encrypt-key", key]) as p:
            url = p.url_for("e.bin")
            ok(s.reader("pass", url, local, "1"), "cold pass through the encrypted proxy")
            check(p.idle() is not None, "the proxy went idle")
            before = p.status().get("origin_requests", 0)
            ok(s.reader("pass", url, local, "1"), "warm pass through the encrypted proxy")
            check(p.idle() is not None, "the proxy went idle again")
            check(p.status().get("origin_requests", 0) == before,
                  "the warm pass came from the cache: %s" % p.status())
            copy = os.path.join(p.admin, "cache.key")
            st = os.stat(copy)
            check(st.st_mode & 0o777 == 0o600 and open(copy, "rb").read() == open(key, "rb").read(),
                  "the key's copy in the admin directory, mode 0600")
            # Sealed pages damaged, then xrootd killed: the supervisor verifies the entries the
            # dead server wrote under the master key, finds seals broken, removes the entry;
            # the next read fetches it again, right.
            data = [os.path.join(d, n) for d, _, names in os.walk(s.cache) for n in names
                    if n.endswith(".data")]
            check(len(data) == 1, "one data file in the cache: %s" % data)
            with open(data[0], "r+b") as f:  # a byte of every page: some of them are held
                for at in range(5, os.path.getsize(data[0]), 4096):
                    f.seek(at)
                    b = f.read(1)
                    f.seek(at)
                    f.write(bytes([b[0] ^ 0x40]))
            pid = p.xrootd_pid()
            os.kill(pid, signal.SIGKILL)
            line = "entries written since its start verified (1 bad, removed"
            check(wait_for(lambda: line in p.log_tail(10**6)),
                  "the supervisor found the damaged sealed pages: %s" % p.log_tail(2000))
            check(wait_for(lambda: p.xrootd_pid() not in (None, pid)), "xrootd restarted")
            ok(s.reader("pass", url, local, "1"), "a pass after the restart: right bytes")
        rnd = random.Random(3)
        runs = [content[o:o + 16] for o in (rnd.randrange(len(content) - 16) for _ in range(256))]
        blobs = []
        for root, _, names in os.walk(s.cache):
            for name in names:
                with open(os.path.join(root, name), "rb") as f:
                    blobs.append(f.read())
        found = sum(1 for r in runs if any(r in b for b in blobs))
        check(sum(len(b) for b in blobs) > 1 << 20, "the cache holds the pages")
        check(found == 0, "no plaintext run in the proxy's cache: %d of 256" % found)
    finally:
        s.remove()


def test_twolevel():
    """The ferry client cache (XrdCl plug-in) in front of a ferry proxy: both levels fill on the
    first pass and count it; the second pass is served by the client cache alone."""
    if not CLIENT_PLUGIN:
        raise Skip("no client plug-in given (FERRY_CLIENT_PLUGIN)")
    s = Setup()
    try:
        local = s.file("t.bin", 5 * 1024 * 1024 + 3, 9)
        client_cache = os.path.join(s.root, "client-cache")
        conf = os.path.join(s.root, "client-conf")
        os.mkdir(conf)
        with open(os.path.join(conf, "ferry.conf"), "w") as f:
            f.write("url = root://*\nlib = %s\nenable = true\ndir = %s\npublish_ms = 50\n"
                    % (CLIENT_PLUGIN, client_cache))
        env = dict(s.env, XRD_PLUGINCONFDIR=conf)
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, origin_hostport(o), s.cache, s.root, env=s.env,
                      status_ms=50) as p:
            url = p.url_for("t.bin")
            ok(s.reader("pass", url, local, "4", env=env), "first pass, two levels")
            s.settled()
            # The client cache needs no wait: the reader exited, and the plug-in stored and
            # published what it had queued at exit (Cache::Shutdown).
            c1, p1 = s.stats(client_cache), s.stats()
            print("client:", json.dumps(c1), "\nproxy:", json.dumps(p1), flush=True)
            check(c1["misses"] > 0 and c1["bytes_from_origin"] > 0, "client cache filled")
            check(p1["misses"] > 0 and p1["bytes_from_origin"] > 0, "proxy cache filled")
            check(p1["bytes_from_origin"] <= c1["bytes_from_origin"] + 4096 * 64,
                  "the proxy fetched what the client asked for: %d vs %d" %
                  (p1["bytes_from_origin"], c1["bytes_from_origin"]))
            ok(s.reader("pass", url, local, "4", env=env), "second pass, two levels")
            # The client's counters are merged when its process ends; the proxy's when it closes
            # the file, which the client plug-in does in the background (or its exit does).
            check(p.idle(), "the proxy closed the second pass's files: %s" % p.status())
            c2, p2 = s.stats(client_cache), s.stats()
            check(c2["hits"] > c1["hits"] and c2["misses"] == c1["misses"],
                  "second pass: client cache hits: %s" % c2)
            check(p2["hits"] + p2["misses"] == p1["hits"] + p1["misses"],
                  "second pass: nothing reached the proxy")
            # Without the client cache, the proxy alone serves it from its cache.
            ok(s.reader("pass", url, local, "4"), "third pass, proxy only")
            check(p.idle(), "the proxy closed the third pass's file: %s" % p.status())
            p3 = s.stats()
            check(p3["hits"] > p2["hits"] and p3["bytes_from_origin"] == p2["bytes_from_origin"],
                  "third pass: proxy cache hits, no origin bytes: %s" % p3)
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
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), s.cache, s.root, env=s.env,
                      status_ms=50) as p:
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

            def concurrent_at_origin():  # the status is rewritten within status_ms of a change
                st = p.status()
                return st if st.get("origin_max_inflight", 0) >= 4 else None
            st = wait_for(concurrent_at_origin, seconds=10) or p.status()
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

def test_rntuple():
    """`ferry analyze agc`, one cluster at a time, over a generated RNTuple of 1 MiB clusters
    through the proxy: the local digest cold and warm, the proxy's read-ahead fetched pages
    ahead (prefetched_bytes in proxy-status.json), and the warm pass adds no origin bytes."""
    s = Setup()
    try:
        template = os.path.join(ROOT_DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root")
        if not os.path.isfile(template):
            raise Skip("no ROOT data")
        out = os.path.join(s.root, "gen")
        ok(s.ferry("gen", "nanoaod", "--template", template, "--events", "80000", "--codec",
                   "zlib:1", "--format", "rntuple", "--cluster-bytes", str(1 << 20), "--out",
                   out, "--seed", "31"), "ferry gen --format rntuple")
        name = sorted(os.listdir(out))[0]
        shutil.copy(os.path.join(out, name), os.path.join(s.data, "r.root"))
        os.chmod(os.path.join(s.data, "r.root"), 0o644)
        local = s.ferry("analyze", "agc", os.path.join(s.data, "r.root"), "--json")
        check(local.returncode == 0, "local agc: %s" % local.stderr[-500:])
        want = json.loads(local.stdout)["digest"]
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), s.cache, s.root,
                      env=s.env) as p:
            url = p.url_for("r.root")
            cold = s.ferry("analyze", "agc", url, "--reads", "0", "--json")
            check(cold.returncode == 0 and json.loads(cold.stdout)["digest"] == want,
                  "cold agc over the RNTuple through the proxy: %s" % cold.stderr[-500:])
            # The status file is rewritten every few hundred ms: wait for the count to show.
            st = wait_for(lambda: p.status().get("prefetched_bytes", 0) > 0 and p.status())
            print("cold:", st, flush=True)
            check(st and st["prefetched_bytes"] > 0,
                  "the proxy read the RNTuple's next pages ahead: %s" % st)
            s.settled()
            before = s.stats()["bytes_from_origin"]
            warm = s.ferry("analyze", "agc", url, "--reads", "0", "--json")
            check(warm.returncode == 0 and json.loads(warm.stdout)["digest"] == want,
                  "warm agc over the RNTuple through the proxy: %s" % warm.stderr[-500:])
            check(s.stats()["bytes_from_origin"] == before, "the warm pass added no origin bytes")
    finally:
        s.remove()


def test_reuse():
    """Origin handles are kept for the next open of the same file: a second open within
    ferry.origin_idle_ms sends no open to the origin (XrdHttp opens per GET); after the idle
    time the handle is closed and the next open opens again. With revalidation on every open
    (revalidate_s=0), a reused handle still sees a file changed at the origin."""
    s = Setup()
    try:
        local = s.file("r.bin", 8 * 1024 * 1024, 41)
        with ferry_testbed.Origin(s.data) as o:
            origin = o.url.split("//")[1].rstrip("/")
            with Proxy(FERRY, origin, s.cache, s.root, env=s.env, status_ms=50,
                       extra=["--set", "origin_idle_ms=10000"]) as p:
                url = p.url_for("r.bin")

                def read(offset, what):
                    # A range no earlier read brought into the cache: it needs the origin.
                    ok(s.reader("ranges", url, local, "%d:4096" % offset), what)

                def status_shows(**want):
                    # `opens` counts opens that completed: a status written while a reader was
                    # still inside its open does not match.
                    def probe():
                        st = p.status()
                        return st if all(st.get(k) == v for k, v in want.items()) else None
                    return wait_for(probe, seconds=30) or p.status()

                read(0, "first open reads from the origin")
                st = status_shows(opens=1, origin_handles_idle=1, open_files=0)
                check(st.get("origin_opens") == 1 and st.get("origin_handles_idle") == 1,
                      "the closed file's origin handle is kept: %s" % st)
                read(2 << 20, "second open within the idle time")
                st = status_shows(opens=2, origin_handles_reused=1, open_files=0)
                check(st.get("origin_handles_reused") == 1 and st.get("origin_opens") == 1,
                      "the second open reused the handle, no second origin open: %s" % st)
                # The status thread closes the handle once it was idle for origin_idle_ms.
                st = status_shows(opens=2, origin_handles_idle=0, open_files=0)
                check(st.get("origin_handles_idle") == 0, "idle handle closed: %s" % st)
                read(4 << 20, "third open after the idle time")
                st = status_shows(opens=3, origin_opens=2, open_files=0)
                check(st.get("origin_opens") == 2 and st.get("origin_handles_reused") == 1,
                      "after the idle time the file is opened at the origin again: %s" % st)
                m = s.ferry("proxy", "metrics", "--dir", s.cache)
                check(m.returncode == 0
                      and "\nferry_proxy_origin_handles_reused_total 1\n" in m.stdout,
                      "ferry proxy metrics counts reused handles: %s" % m.stdout[-300:])
            # Every open revalidates: a reused handle must see the file as the origin has it now.
            cache2 = os.path.join(s.root, "cache2")
            with Proxy(FERRY, origin, cache2, s.root, env=s.env, status_ms=50,
                       extra=["--set", "origin_idle_ms=60000",
                              "--set", "revalidate_s=0"]) as p:
                url = p.url_for("r.bin")

                def status_shows2(**want):
                    def probe():
                        st = p.status()
                        return st if all(st.get(k) == v for k, v in want.items()) else None
                    return wait_for(probe, seconds=30) or p.status()

                ok(s.reader("ranges", url, local, "0:4096"), "revalidating proxy: first read")
                status_shows2(opens=1, origin_handles_idle=1, open_files=0)
                ok(s.reader("ranges", url, local, "0:4096", "1048576:4096"),
                   "revalidating proxy: unchanged file through the reused handle")
                st = status_shows2(opens=2, origin_handles_reused=1, open_files=0)
                check(st.get("origin_opens") == 1 and st.get("origin_handles_idle") == 1,
                      "unchanged file: reused, no second open: %s" % st)
                # Replaced at the origin (another size and content) while its handle is idle.
                local = s.file("r.bin", 6 * 1024 * 1024 + 5, 42)
                ok(s.reader("ranges", url, local, "0:4096", "3145728:4096"),
                   "the file changed at the origin: its new bytes, none of the old")
                st = status_shows2(opens=3, origin_handles_reused=2, open_files=0)
                check(st.get("origin_opens") == 2 and st.get("origin_handles_idle") == 0,
                      "the changed file's handle reopened it and was not kept: %s" % st)
    finally:
        s.remove()


def test_cached_only():
    """ferry.only_if_cached=1 in the URL's opaque part: held bytes are served, a read of any byte
    not held is an error (ENODATA: "no data available"), an uncached file fails at open, and the
    origin gets no request and no open for any of it."""
    s = Setup()
    try:
        local = s.file("c.bin", 4 * 1024 * 1024, 9)
        other = s.file("u.bin", 1024 * 1024, 10)
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), s.cache, s.root, env=s.env,
                      status_ms=50, extra=["--lookahead", "0"]) as p:
            url = p.url_for("c.bin")
            ok(s.reader("ranges", url, local, "0:1048576"), "fill the first MiB")
            s.settled()
            before = p.idle()
            check(before, "the proxy went idle after the fill")
            only = "?ferry.only_if_cached=1"
            q = s.reader("answers", url + only, local, "4096:65536", "2097152:65536",
                         "1040000:16384")
            ok(q, "only-if-cached reads")
            a = json.loads(q.stdout or "{}")
            print("only-if-cached:", json.dumps(a), flush=True)
            reads = a.get("reads", [])
            check(a.get("open") == "ok" and len(reads) == 3, "open of a cached file: %s" % a)
            check(reads and reads[0] == ["ok", "ok"], "held range served: %s" % reads)
            for r in reads[1:]:
                check(all(x != "ok" and "no data available" in x[2].lower() for x in r),
                      "a range not (wholly) held is a clear error: %s" % r)
            q = s.reader("answers", p.url_for("u.bin") + only, other, "0:4096")
            ok(q, "only-if-cached open of an uncached file")
            a = json.loads(q.stdout or "{}")
            check(a.get("open") != "ok" and "no data available" in a.get("open")[2].lower(),
                  "an uncached file fails at open: %s" % a)
            after = p.idle()
            check(after, "the proxy went idle after the only-if-cached reads")
            for k in ("origin_requests", "origin_opens"):
                check(after.get(k) == before.get(k),
                      "no origin %s: %s -> %s" % (k, before.get(k), after.get(k)))
            ok(s.reader("ranges", url, local, "2097152:65536"),
               "without the switch the same range comes from the origin")
    finally:
        s.remove()


def test_stalled_origin():
    """Two origins behind one proxy (--origin for most paths, --origin /b=HOST:PORT for /b). With
    origin B stopped by SIGSTOP: the clients of origin A are served, right bytes; B's clients get
    an error ("timer expired", from the proxy's per-origin gate or its request timeout), they do
    not hang, and no read hands out bytes (XrdOfs turns ETIMEDOUT into a 30-byte read:
    oss_errno.h); the proxy's status counts it against B alone; and once B runs again, its files
    are served again."""
    s = Setup()
    b_data = os.path.join(s.root, "data-b")
    os.makedirs(os.path.join(b_data, "b"))
    for d in (b_data, os.path.join(b_data, "b")):
        os.chmod(d, 0o755)
    a_local = s.file("a.bin", 8 << 20, 21)
    b_local = os.path.join(b_data, "b", "b.bin")
    shutil.move(s.file("b.bin", 8 << 20, 22), b_local)
    b2_local = os.path.join(b_data, "b", "b2.bin")
    shutil.move(s.file("b2.bin", 1 << 20, 23), b2_local)
    # XrdCl checks request timeouts every XRD_TIMEOUTRESOLUTION s (15 by default).
    env = dict(s.env, XRD_TIMEOUTRESOLUTION="1")
    try:
        with ferry_testbed.Origin(s.data, name="stall-a") as oa, \
                ferry_testbed.Origin(b_data, name="stall-b") as ob, \
                Proxy(FERRY, origin_hostport(oa), s.cache, s.root, env=env, status_ms=50,
                      extra=["--origin", "/b=" + origin_hostport(ob), "--lookahead", "0",
                             "--set", "timeout=3", "--set", "origin_inflight=2",
                             "--set", "origin_wait_ms=1000"]) as p:
            def answers(path, local, *ranges):
                q = s.reader("answers", p.url_for(path), local, *ranges)
                ok(q, "reads of %s" % path)
                return json.loads(q.stdout or "{}")

            for path, local in (("a.bin", a_local), ("b/b.bin", b_local)):
                a = answers(path, local, "0:65536")
                check(a.get("open") == "ok" and a["reads"] == [["ok", "ok"]],
                      "%s served through its own origin: %s" % (path, a))
            b_pid = ob.pid()
            os.kill(b_pid, signal.SIGSTOP)
            try:
                stalled = [subprocess.Popen(
                    [PY, READER, "answers", p.url_for("b/b.bin"), b_local,
                     "%d:65536" % ((k + 1) << 20)], env=s.env, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True) for k in range(4)]
                stalled.append(subprocess.Popen(
                    [PY, READER, "answers", p.url_for("b/b2.bin"), b2_local, "0:4096"],
                    env=s.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
                # Origin A's clients meanwhile: ranges not held yet, so each goes to A.
                for k in range(6):
                    a = answers("a.bin", a_local, "%d:65536" % ((k + 1) << 20))
                    check(a.get("open") == "ok" and a["reads"] == [["ok", "ok"]],
                          "A served while B is stopped: %s" % a)
                for q in stalled:
                    out, _ = q.communicate(timeout=150)
                    a = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
                    answers_b = [a.get("open")] + [x for r in a.get("reads", []) for x in r]
                    failed = [x for x in answers_b if x != "ok"]
                    check(a and failed, "a client of stopped B gets an error: %s" % out)
                    check(all("timer expired" in str(x).lower() for x in failed),
                          "the error says the time ran out: %s" % failed)
                st = wait_for(lambda: p.status() if p.status().get("origins") else None, 10)
                gates = {g["origin"]: g for g in (st or {}).get("origins", [])}
                print("gates:", json.dumps(gates), flush=True)
                g_b, g_a = gates.get(origin_hostport(ob), {}), gates.get(origin_hostport(oa), {})
                check(g_b.get("unanswered", 0) + g_b.get("turned_away", 0) > 0,
                      "the proxy counts B's stall: %s" % g_b)
                check(g_a.get("unanswered", 1) == 0 and g_a.get("turned_away", 1) == 0,
                      "and nothing against A: %s" % g_a)
            finally:
                os.kill(b_pid, signal.SIGCONT)
            a = answers("b/b.bin", b_local, "%d:65536" % (6 << 20))
            check(a.get("open") == "ok" and a["reads"] == [["ok", "ok"]],
                  "B served again once it runs: %s" % a)
    finally:
        s.remove()


def test_copies(mib=192, fraction=0.5):
    """A whole-file xrdcp through the proxy is served whole and right, and the cache keeps at
    most copy_cache_fraction of the file (copy_through.h): a file an analysis read before stays
    cached although the copy is larger than what the cache may hold. The proxy counts the copy
    and the bytes it served through; a second copy reads the held part from the cache."""
    s = Setup()
    try:
        size = mib << 20
        analysis = s.file("a.bin", 48 << 20, 31)
        copied = s.file("c.bin", size, 32)
        s.file("d.bin", 1 << 20, 33)
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), s.cache, s.root, env=s.env,
                      status_ms=50,
                      extra=["--max-size", "160M", "--set", "min_free=0",
                             "--copy-cache-fraction", str(fraction)]) as p:
            # An analysis-like pass: 1 MiB of every 3 MiB, in order (not a copy's prefix).
            ranges = ["%d:%d" % (k * (3 << 20), 1 << 20) for k in range(16)]
            ok(s.reader("ranges", p.url_for("a.bin"), analysis, *ranges), "analysis reads")
            s.settled()
            held = lambda name: sum(e.get("held_bytes", 0) for e in s.ls()  # noqa: E731
                                    if e.get("url", "").endswith("/" + name))
            held_a = held("a.bin")
            check(held_a >= 16 << 20, "the analysis's bytes are cached: %d" % held_a)
            out = os.path.join(s.root, "copy.out")
            for rnd in (1, 2):
                ok(s.run("xrdcp", "-f", p.url_for("c.bin"), out), "xrdcp %d through the proxy" % rnd)
                check(same_file(out, copied), "xrdcp %d: the origin's bytes" % rnd)
                st = s.settled()
                held_c = held("c.bin")
                print("copy %d: %.1f of %d MiB held; status %s" % (
                    rnd, held_c / 2.0 ** 20, mib,
                    {k: st.get(k) for k in ("copies_detected", "copy_bytes_through")}),
                    flush=True)
                check(0 < held_c <= size * fraction,
                      "copy %d cached at most the fraction: %d of %d" % (rnd, held_c, size))
                check(st.get("copies_detected") == rnd, "copies counted: %s" % st)
                check(st.get("copy_bytes_through", 0) >= rnd * (size - held_c),
                      "what is not held was served through: %s" % st)
            # A new file is admitted (evicting least recently read entries over max_size): the
            # analysis's file is still there, whole.
            ok(s.reader("ranges", p.url_for("d.bin"), os.path.join(s.data, "d.bin"),
                        "0:1048576"), "a new file")
            s.settled()
            check(held("a.bin") == held_a,
                  "the analysis's bytes stay cached: %d -> %d" % (held_a, held("a.bin")))
            metrics = s.ferry("proxy", "metrics", "--dir", s.cache).stdout
            check("ferry_proxy_copies_detected_total 2" in metrics
                  and "ferry_proxy_copy_bytes_through_total" in metrics,
                  "ferry proxy metrics counts copies")
            records = [json.loads(line) for line in
                       open(os.path.join(s.cache, "access.jsonl")) if line.strip()]
            last = [r for r in records if r.get("path", "").endswith("c.bin")][-1]
            # (bytes_read counts XrdCl's own second reads of pages too)
            check(last.get("bytes_bypassed", 0) >= size // 4 and last.get("bytes_read") >= size,
                  "the access record counts the bytes served through: %s" % last)
    finally:
        s.remove()


def test_copies_memory(copies=6, mib=64, budget=6 << 20):
    """Many concurrent copies through a proxy whose copy memory (ferry.copy_memory,
    copy_budget.h) is far below what they would hold (each up to 80 MiB): every copy gets every
    byte right, none fails, and the memory the copies held never passed the budget
    (copy_memory_peak_bytes, also in `ferry proxy metrics`); once they are done none is held."""
    s = Setup()
    try:
        files = [s.file("m%d.bin" % k, mib << 20, 40 + k) for k in range(copies)]
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), s.cache, s.root, env=s.env,
                      status_ms=50,
                      extra=["--set", "min_free=0", "--copy-cache-fraction", "0.1",
                             "--set", "copy_memory=%d" % budget]) as p:
            outs = [os.path.join(s.root, "m%d.out" % k) for k in range(copies)]
            procs = [subprocess.Popen(["xrdcp", "-f", p.url_for(os.path.basename(f)), out],
                                      env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                     for f, out in zip(files, outs)]
            for k, proc in enumerate(procs):
                _, err = proc.communicate(timeout=240)
                check(proc.returncode == 0, "copy %d: exit %d: %s" % (k, proc.returncode, err))
            for f, out in zip(files, outs):
                check(same_file(out, f), "%s: the origin's bytes" % os.path.basename(out))
            st = s.settled()
            print("copy memory: peak %s of %s, held %s, refused %s; copies %s, through %s" % tuple(
                st.get(k) for k in ("copy_memory_peak_bytes", "copy_memory_limit_bytes",
                                    "copy_memory_bytes", "copy_memory_refused",
                                    "copies_detected", "copy_bytes_through")), flush=True)
            check(st.get("copies_detected") == copies, "every copy recognised: %s" % st)
            check(st.get("copy_memory_limit_bytes") == budget, "the budget: %s" % st)
            check(0 < st.get("copy_memory_peak_bytes", 0) <= budget,
                  "the copies' memory stayed within the budget: %s" % st)
            check(st.get("copy_memory_bytes") == 0, "nothing held once the copies closed")
            metrics = s.ferry("proxy", "metrics", "--dir", s.cache).stdout
            check("ferry_proxy_copy_memory_peak_bytes %d" % st["copy_memory_peak_bytes"]
                  in metrics, "ferry proxy metrics shows the peak")
    finally:
        s.remove()


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x40]))


def test_zero_copy():
    """Warm plain reads (kXR_read of 8 KiB or more) are sent from the cache's data file without a
    copy (sendfile, XrdXrootd's SendData path) only when every byte is held and this proxy
    process verified it: a file partly held, partly missing and partly corrupted (bytes flipped
    in KEY.data, in a full page and in a fragment at the edge of a range) is read by a new
    proxy through the normal path first (corrupt pages caught and fetched again, missing bytes
    fetched), then, once read back and checked, through the sendfile path; every byte is right
    in every pass, and the status counts which path served."""
    s = Setup()
    size = (4 << 20) + 5000  # 64 reads of 64 KiB (sendfile-sized), then one of 5000 bytes
    local = s.file("z.bin", size, 31)
    fill = ["100000:900000", "1100000:1000000", "2200001:900000"]  # 67%: edges mid-page
    try:
        with ferry_testbed.Origin(s.data) as o:
            hostport = origin_hostport(o)
            with Proxy(FERRY, hostport, s.cache, s.root, env=s.env, status_ms=50,
                       extra=["--lookahead", "0"]) as p:
                q = s.reader("answers", p.url_for("z.bin"), local, *fill)
                ok(q, "fill part of the file")
                s.settled()
            key = json.loads(s.ferry("cache", "ls", "--dir", s.cache, "--json").stdout)[
                "entries"][0]["key"]
            base = os.path.join(s.cache, "entries", key[:2], key)
            flip(base + ".data", 500000)   # a full page
            flip(base + ".data", 100010)   # the fragment at the head of a range
            check(os.path.getsize(base + ".frag") == 0,
                  "fragments are in the data file, the log is empty")
            before = s.stats()
            with Proxy(FERRY, hostport, s.cache, s.root, env=s.env, status_ms=50,
                       extra=["--lookahead", "0"]) as p:
                url = p.url_for("z.bin")
                passes = []
                for k in range(3):
                    ok(s.reader("reads", url, local, "65536"), "pass %d: every byte right" % k)
                    st = s.settled()
                    passes.append({"stats": s.stats(), "status": st})
                    print("pass %d: zero_copy %s/%s declined %s, crc_failures %d, origin %d" % (
                        k, st.get("zero_copy_reads"), st.get("zero_copy_bytes"),
                        st.get("zero_copy_declined"), passes[-1]["stats"]["crc_failures"],
                        passes[-1]["stats"]["bytes_from_origin"]), flush=True)
                first, second, third = (x["status"] for x in passes)
                check(first.get("zero_copy_reads") == 0 and first.get("zero_copy_declined") == 64,
                      "a new proxy verified nothing: the first pass reads the normal way: %s"
                      % first)
                check(passes[0]["stats"]["crc_failures"] >= before["crc_failures"] + 2,
                      "the corrupt pages were caught: %s -> %s" % (
                          before["crc_failures"], passes[0]["stats"]["crc_failures"]))
                check(passes[0]["stats"]["bytes_from_origin"] > before["bytes_from_origin"],
                      "missing and corrupt bytes came from the origin")
                check(passes[2]["stats"]["bytes_from_origin"]
                      == passes[0]["stats"]["bytes_from_origin"],
                      "later passes: all held, nothing from the origin")
                check(second.get("zero_copy_reads", 0) > 0,
                      "bytes read back and checked in the first pass are sent: %s" % second)
                check(third.get("zero_copy_reads", 0) - second.get("zero_copy_reads", 0) == 64
                      and third.get("zero_copy_declined") == second.get("zero_copy_declined")
                      and third.get("zero_copy_bytes", 0) - second.get("zero_copy_bytes", 0)
                      == 64 * 65536, "the third pass is sent from the file: %s" % third)
                check(passes[2]["stats"]["crc_failures"] == passes[0]["stats"]["crc_failures"],
                      "no failure after the repair")
            rc, v = s.verify()
            check(rc == 0 and v.get("pages_bad") == 0 and v.get("fragments_bad") == 0,
                  "the cache verifies clean: %s" % v)
    finally:
        s.remove()


def test_zero_copy_ahead(mib=12, held_mib=8):
    """Reads sent with sendfile are followed by read-ahead like reads served the normal way
    (CachedFile::FollowZeroCopy): a reader that reads in order through the part of a file the
    proxy holds, every read of it sent from the data file, has the rest of the file fetched
    ahead of it before it gets there. The held part is filled and then verified by reads
    backwards (no sequential run: nothing read ahead); then a reader reads it forwards and keeps
    the file open, and the proxy fetches the rest meanwhile."""
    s = Setup()
    size, held = mib << 20, held_mib << 20
    local = s.file("r.bin", size, 51)
    try:
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, origin_hostport(o), s.cache, s.root, env=s.env, status_ms=50,
                      extra=["--set", "publish_ms=50"]) as p:
            url = p.url_for("r.bin")
            held_now = lambda: sum(e.get("held_bytes", 0) for e in s.ls())  # noqa: E731
            for k in ("fill", "verify"):
                ok(s.reader("span", url, local, "65536", "0", str(held), "down", "-"),
                   "%s [0, %d MiB) backwards" % (k, held_mib))
                before = s.settled()
            check(held <= held_now() < size, "only the first part is held: %d" % held_now())
            gate = os.path.join(s.root, "gate")
            reader = subprocess.Popen([PY, READER, "span", url, local, "65536", "0", str(held),
                                       "up", gate], env=s.env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            try:
                line = reader.stdout.readline().strip()
                check(line == "read", "the held part read forwards: %r" % line)
                got = wait_for(lambda: held_now() >= size, 60)
                check(got, "the rest was fetched ahead while the reader was served by sendfile:"
                      " %d of %d held" % (held_now(), size))
            finally:
                open(gate, "w").close()
                _, err = reader.communicate(timeout=120)
            check(reader.returncode == 0, "the reader: %s" % err)
            st = s.settled()
            print("zero copy: %s reads sent, %s declined; prefetched %s" % (
                st.get("zero_copy_reads", 0) - before.get("zero_copy_reads", 0),
                st.get("zero_copy_declined"), st.get("prefetched_bytes")), flush=True)
            check(st.get("zero_copy_reads", 0) - before.get("zero_copy_reads", 0) == held // 65536,
                  "every forward read was sent from the data file: %s" % st)
            check(st.get("prefetched_bytes", 0) >= size - held,
                  "read-ahead fetched it: %s" % st)
    finally:
        s.remove()


def test_zero_copy_copy(mib=64, held_mib=40):
    """A copy in plain reads of a file the proxy mostly holds: the held part is sent with
    sendfile, and those reads still count towards the copy rule (CopyThrough::NoteServed), so
    the copy is recognised and the cold rest served through, not cached whole."""
    s = Setup()
    size, held = mib << 20, held_mib << 20
    local = s.file("c.bin", size, 61)
    try:
        with ferry_testbed.Origin(s.data) as o, \
                Proxy(FERRY, origin_hostport(o), s.cache, s.root, env=s.env, status_ms=50,
                      extra=["--set", "min_free=0"]) as p:
            url = p.url_for("c.bin")
            for k in ("fill", "verify"):  # backwards: no sequential run, no copy
                ok(s.reader("span", url, local, "1048576", "0", str(held), "down", "-"), k)
                before = s.settled()
            ok(s.reader("span", url, local, "1048576", "0", str(size), "up", "-"),
               "the copy, in 1 MiB plain reads")
            st = s.settled()
            held_now = sum(e.get("held_bytes", 0) for e in s.ls())
            # (the backwards passes look like copies too once their reads meet byte 0, with
            # nothing left to read: counted before)
            delta = {k: st.get(k, 0) - before.get(k, 0)
                     for k in ("zero_copy_reads", "copies_detected", "copy_bytes_through")}
            print("copy: %s; %d held" % (delta, held_now), flush=True)
            check(delta["zero_copy_reads"] == held_mib,
                  "the held part was sent with sendfile: %s" % st)
            check(delta["copies_detected"] == 1, "the copy was recognised: %s" % st)
            check(held_now == held and delta["copy_bytes_through"] == size - held,
                  "the cold rest was served through, not cached: %d held" % held_now)
    finally:
        s.remove()


TESTS = {
    "basic": test_basic,
    "reuse": test_reuse,
    "concurrency": test_concurrency,
    "crash": test_crash,
    "crash_long": lambda: test_crash(kills=50),
    "faults": test_faults,
    "storm": lambda: test_storm(opens=2000),
    "storm_long": lambda: test_storm(opens=10000),
    "cluster": test_cluster,
    "failover": test_failover,
    "encrypted": test_encrypted,
    "twolevel": test_twolevel,
    "rntuple": test_rntuple,
    "cached_only": test_cached_only,
    "stalled_origin": test_stalled_origin,
    "copies": test_copies,
    "copies_memory": test_copies_memory,
    "zero_copy": test_zero_copy,
    "zero_copy_ahead": test_zero_copy_ahead,
    "zero_copy_copy": test_zero_copy_copy,
}


if __name__ == "__main__":
    run_test(TESTS, TEST, skips=(Skip, ferry_testbed.Skip))
