#!/usr/bin/env python3
"""ferry's site proxy on several cache disks (`ferry proxy run --dir A --dir B`), each a real
ext4 file system on a loop device: a real xrootd origin, the real proxy, real clients.

usage: test_proxy_disks.py FERRY TEST
  TEST: removed  two disks; entries spread over both; the second one unmounted (umount -l)
                 while clients read, later mounted again, then remounted read-only: each time
                 the clients get the origin's bytes, the disk is taken out of service (one log
                 line, ferry_proxy_disk_up 0, the status and the doctor say so), new entries
                 go to the other disk, and the disk comes back once it works again; xrootd
                 killed meanwhile restarts without the disk
        inodes   the second disk with 64 inodes: filled by the cache down to min_free_inodes,
                 then to the last inode from outside; new entries go to the first disk, the
                 full one stays in service and still serves what it holds
        ioerrors the second disk's device fails its writes (its loop device's backing file on
                 a small tmpfs that fills up: fsync gets EIO or ENOSPC, ext4 aborts its journal
                 and turns read-only) while clients read: taken out of service, the clients get the
                 origin's bytes, new entries go to the first disk
        thin     the same device without a journal: fsync gets ENOSPC while ext4 reports
                 most of its space free (a thin-provisioned device out of space): taken out
                 of service as well
Exit 0 = pass, 1 = fail, 77 = cannot run here (not root, no loop devices, no xrootd).
"""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import ferry_harness  # noqa: E402
import ferry_testbed  # noqa: E402
from ferry_harness import PY, check, ok, run_test  # noqa: E402
from ferry_testbed import read_lines, wait_for  # noqa: E402
from proxy_testbed import Proxy, Skip, read_status, settled, xrootd_answers  # noqa: E402

FERRY, TEST = sys.argv[1:3]
CACHE_READER = os.path.join(HERE, "..", "cache", "cache_reader.py")


class Disks:
    """Small ext4 file systems on loop devices under `root`, unmounted by close() whatever
    happened. mount -o loop sets autoclear: the loop device goes with the last unmount."""

    def __init__(self, root):
        self.root = root
        self.mounted = []
        self.images = {}

    def make(self, name, size_mb=64, inodes=None, backing_mb=None, journal=True):
        """A fresh file system mounted at ROOT/NAME.mnt; returns the cache dir on it (a
        subdirectory: the mount's root holds lost+found, and an empty mount point left by an
        unmount must not look like the cache). backing_mb: the (sparse) image lives on a tmpfs
        of that size, so the device fails its writes once the tmpfs is full: a failing disk."""
        img = self.image(name)
        if backing_mb:
            tmp = os.path.join(self.root, name + ".tmpfs")
            os.makedirs(tmp, exist_ok=True)
            p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % backing_mb,
                                "fpx-disk", tmp], capture_output=True, text=True)
            if p.returncode != 0:
                raise Skip("cannot mount a tmpfs: " + p.stderr.strip())
            self.mounted.append(tmp)
            self.images[name] = img = os.path.join(tmp, name + ".img")
        mnt = os.path.join(self.root, name + ".mnt")
        os.makedirs(mnt, exist_ok=True)
        with open(img, "wb") as f:
            f.truncate(size_mb << 20)
        # A 1 MiB journal: the image starts small, and its journal writes fail with the data's.
        mkfs = ["mkfs.ext4", "-q", "-F"] + (["-J", "size=1"] if journal else
                                            ["-O", "^has_journal"])
        mkfs += (["-N", str(inodes)] if inodes else []) + [img]
        p = subprocess.run(mkfs, capture_output=True, text=True)
        if p.returncode != 0:
            raise Skip("mkfs.ext4: " + p.stderr.strip())
        self.mount(name, "loop,errors=remount-ro")
        os.chmod(mnt, 0o755)
        return os.path.join(mnt, "cache")

    def image(self, name):
        return self.images.get(name, os.path.join(self.root, name + ".img"))

    def mount(self, name, options="loop"):
        img = self.image(name)
        mnt = os.path.join(self.root, name + ".mnt")
        p = subprocess.run(["mount", "-o", options, img, mnt], capture_output=True, text=True)
        if p.returncode != 0:
            raise Skip("cannot mount a loop device here: " + p.stderr.strip())
        self.mounted.append(mnt)

    def unmount(self, name):
        """Lazily, as a disk pulled out: open files keep the old file system, paths lose it."""
        mnt = os.path.join(self.root, name + ".mnt")
        subprocess.run(["umount", "-l", mnt], check=True)
        self.mounted.remove(mnt)

    def busy(self, name):
        """A loop device still has NAME's image (a lazily unmounted file system in use)."""
        img = self.image(name)
        return subprocess.run(["losetup", "-j", img], capture_output=True,
                              text=True).stdout.strip() != ""

    def close(self):
        for mnt in reversed(self.mounted):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        self.mounted = []


def disk_of(p, d):
    """The status file's entry of cache disk `d`, or {}."""
    for e in read_status(p.cache_dir).get("disks", []):
        if e.get("dir") == d:
            return e
    return {}


def keys_on(s, d):
    """The URLs of the entries cache disk `d` holds."""
    return {e["url"] for e in s.ls(d)}


def open_files(p):
    """The files (not sockets, pipes or devices) the proxy's xrootd has open, for a report."""
    pid = p.xrootd_pid()
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid) if pid else []:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("/") and not target.startswith("/dev/"):
            out.append(target)
    return out


def names(urls):
    """The file names of entry URLs."""
    return {u.rsplit("/", 1)[1] for u in urls}


def idle(p):
    st = settled(p.cache_dir)
    if st is None:
        raise AssertionError("the proxy did not settle: %s" % read_status(p.cache_dir))
    return st


def start(s, disks, extra=()):
    """The origin of s.data and a proxy on `disks` (status every 50 ms, probes every 1 s)."""
    origin = ferry_testbed.Origin(s.data).__enter__()
    argv = []
    for d in disks[1:]:
        argv += ["--dir", d]
    argv += ["--set", "disk_retry_s=1", "--set", "min_free=0", "--max-size", "1G", *extra]
    try:
        p = Proxy(FERRY, origin.url.split("//")[1].rstrip("/"), disks[0], s.root, env=s.env,
                  extra=argv, status_ms=50)
    except BaseException:
        origin.__exit__(None, None, None)
        raise
    return origin, p


def readers(s, p, files, count=1500, sleep_ms=2):
    """One slow reader per file (one read at a time, each checked), with its progress file."""
    out = []
    for i, (name, local) in enumerate(files):
        progress = os.path.join(s.root, "progress.%d" % i)
        r = subprocess.Popen([PY, CACHE_READER, "slow", p.url_for(name), local, str(count),
                              str(sleep_ms), progress], env=s.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        out.append((r, progress))
    return out


def finish_readers(rs, what):
    for r, progress in rs:
        out, err = r.communicate(timeout=240)
        check(r.returncode == 0, "%s: no wrong byte (exit %d) %s" % (what, r.returncode,
                                                                     err[-400:]))
        check("err=0 " in out, "%s: every read answered: %s" % (what, out.strip()))


def test_removed():
    s = ferry_harness.Setup(FERRY, prefix="fpx-disks-")
    disks = Disks(s.root)
    origin = p = None
    try:
        a = disks.make("a")
        b = disks.make("b")
        files = [("f%d.bin" % i, s.file("f%d.bin" % i, (3 << 20) + 17 * i, 10 + i))
                 for i in range(8)]
        origin, p = start(s, [a, b])
        # 1. A cold pass over every file: entries placed on both disks by free space.
        # Each pass stored before the next file is placed: free space decides, not timing.
        for name, local in files:
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "3"), "cold " + name)
            idle(p)
        on_a, on_b = keys_on(s, a), keys_on(s, b)
        print("placed: a=%d b=%d" % (len(on_a), len(on_b)), flush=True)
        check(on_a and on_b and len(on_a) + len(on_b) == len(files),
              "entries on both disks, each once: a=%s b=%s" % (sorted(on_a), sorted(on_b)))
        check(disk_of(p, a).get("up") == 1 and disk_of(p, b).get("up") == 1, "both up")
        # 2. Disk b pulled out while a reader reads each file.
        rs = readers(s, p, files)
        check(wait_for(lambda: all(read_lines(pr).count("ok") >= 20 for _, pr in rs), 60),
              "every reader under way before the unmount")
        t0 = time.monotonic()
        disks.unmount("b")
        down = wait_for(lambda: disk_of(p, b).get("up") == 0 and disk_of(p, b), 30)
        check(down, "disk b out of service: %s" % disk_of(p, b))
        print("b down %.2f s after the unmount (status every 50 ms):" % (time.monotonic() - t0),
              json.dumps(down), flush=True)
        marks = {pr: read_lines(pr).count("ok") for _, pr in rs}

        def went_on():
            return all(r.poll() is not None or read_lines(pr).count("ok") >= marks[pr] + 20
                       for r, pr in rs)
        check(wait_for(went_on, 60), "every reader goes on after the unmount: %s -> %s" %
              (marks, {pr: read_lines(pr).count("ok") for _, pr in rs}))
        finish_readers(rs, "readers across the unmount")
        # Each file again: the ones b held come from the origin and land on a.
        for name, local in files:
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "4"), "after " + name)
        idle(p)
        now_a = keys_on(s, a)
        check(now_a >= on_a | on_b, "every file is on disk a now: %d of %d" %
              (len(now_a), len(files)))
        log = p.log_tail(200000)
        check(log.count("cache disk %s out of service" % b) == 1,
              "one log line for the outage: %s" % log[-1500:])
        m = s.ferry("proxy", "metrics", "--dir", a)
        ok(m, "metrics")
        check('ferry_proxy_disk_up{dir="%s"} 0' % b in m.stdout and
              'ferry_proxy_disk_up{dir="%s"} 1' % a in m.stdout and
              "ferry_proxy_disks_up 1" in m.stdout, "metrics per disk: %s" %
              [x for x in m.stdout.splitlines() if "disk" in x])
        d = s.ferry("proxy", "doctor", "--origin", origin.url.split("//")[1].rstrip("/"),
                    "--port", str(p.port), "--dir", a, "--dir", b, "--json")
        check(b in d.stdout and "out of service" in d.stdout, "the doctor names the disk")
        # 2b. xrootd killed and restarted by the supervisor while b is gone: the restarted proxy
        # starts without b (its directory is not made again) and serves.
        old = p.xrootd_pid()
        os.kill(old, signal.SIGKILL)
        check(wait_for(lambda: p.xrootd_pid() not in (None, old) and xrootd_answers(p.port),
                       60), "xrootd restarted by the supervisor")
        check(wait_for(lambda: disk_of(p, b).get("up") == 0 and
                       read_status(p.cache_dir).get("pid") == p.xrootd_pid(), 30),
              "the restarted proxy has disk b out of service: %s" % disk_of(p, b))
        check("does not exist" in disk_of(p, b).get("reason", ""),
              "because its directory is gone: %s" % disk_of(p, b))
        check(not os.path.exists(b), "b's directory was not made on the mount point")
        name, local = files[0]
        ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "6"), "after the restart")
        # 3. Disk b back (mounted again): probed within disk_retry_s, back in service. Only once
        # its lazily unmounted file system is gone with its last open file (two live mounts of
        # one ext4 image would corrupt it).
        check(wait_for(lambda: not disks.busy("b"), 60),
              "the old mount of b released: %s" % open_files(p))
        t0 = time.monotonic()
        disks.mount("b")
        check(wait_for(lambda: disk_of(p, b).get("up") == 1, 30),
              "disk b back in service: %s" % disk_of(p, b))
        print("b back %.2f s after the mount (disk_retry_s 1)" % (time.monotonic() - t0),
              flush=True)
        check(wait_for(lambda: "cache disk %s back in service" % b in p.log_tail(200000), 10),
              "the return is logged")
        # 4. Disk b read-only (what ext4 does after errors): taken out by the health check.
        idle(p)
        ro = subprocess.run(["mount", "-o", "remount,ro", os.path.dirname(b)],
                            capture_output=True, text=True)
        if ro.returncode != 0:
            print("SKIP part 4: remount read-only:", ro.stderr.strip(), flush=True)
            return
        check(wait_for(lambda: disk_of(p, b).get("up") == 0, 30),
              "read-only disk b out of service: %s" % disk_of(p, b))
        check("read-only" in disk_of(p, b).get("reason", ""), "the reason says read-only")
        more = [("g%d.bin" % i, s.file("g%d.bin" % i, 1 << 20, 30 + i)) for i in range(4)]
        for name, local in more:
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "5"), "ro " + name)
        idle(p)
        check({n for n, _ in more} <= names(keys_on(s, a)), "new files placed on disk a")
        subprocess.run(["mount", "-o", "remount,rw", os.path.dirname(b)], check=True)
        check(wait_for(lambda: disk_of(p, b).get("up") == 1, 30), "disk b writable again")
        check(p.proc.poll() is None, "the proxy ran throughout")
    finally:
        if p:
            p.stop()
        if origin:
            origin.__exit__(None, None, None)
        disks.close()
        s.remove()


def test_inodes():
    s = ferry_harness.Setup(FERRY, prefix="fpx-inodes-")
    disks = Disks(s.root)
    origin = p = None
    try:
        a = disks.make("a")
        b = disks.make("b", inodes=64)
        mnt_b = os.path.dirname(b)
        # Over 1 MiB each: the reader's pass reads 64 chunks of up to 16 KiB.
        files = [("s%02d.bin" % i, s.file("s%02d.bin" % i, (1 << 20) + 4097 * i, 100 + i))
                 for i in range(30)]
        origin, p = start(s, [a, b], extra=["--set", "min_free_inodes=8"])
        for name, local in files[:20]:
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "3"), "fill " + name)
        idle(p)
        on_b = keys_on(s, b)
        st_b = os.statvfs(mnt_b)
        print("b: %d entries, %d inodes free" % (len(on_b), st_b.f_favail), flush=True)
        check(on_b, "the small disk took entries while it had inodes")
        check(len(keys_on(s, a)) + len(on_b) >= 20 - 2, "the other files are on disk a")
        # Someone else takes b's last inodes.
        n = 0
        while True:
            try:
                open(os.path.join(mnt_b, "junk%d" % n), "w").close()
                n += 1
            except OSError:
                break
        check(os.statvfs(mnt_b).f_favail == 0, "disk b has no inode left (%d taken)" % n)
        placed_b = disk_of(p, b).get("placed")
        for name, local in files[20:]:
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "4"), "full " + name)
        # What b holds is still served from b.
        held = sorted(on_b)[0].rsplit("/", 1)[1]
        local = dict(files)[held]
        before = s.stats(b)
        ok(s.run(PY, CACHE_READER, "pass", p.url_for(held), local, "5"), "warm " + held)
        idle(p)
        after = s.stats(b)
        check(after["hits"] > before["hits"], "disk b served its entry: %s -> %s" %
              (before["hits"], after["hits"]))
        check(disk_of(p, b).get("placed") == placed_b,
              "no entry placed on the inode-full disk: %s" % disk_of(p, b))
        check(disk_of(p, b).get("up") == 1 and disk_of(p, b).get("faults") == 0,
              "a full disk is not a failed one: %s" % disk_of(p, b))
        check({n for n, _ in files[20:]} <= names(keys_on(s, a)), "the new files are on disk a")
    finally:
        if p:
            p.stop()
        if origin:
            origin.__exit__(None, None, None)
        disks.close()
        s.remove()


def test_ioerrors(journal=True):
    s = ferry_harness.Setup(FERRY, prefix="fpx-ioerr-")
    disks = Disks(s.root)
    origin = p = None
    try:
        a = disks.make("a")
        # 64 MiB that only 10 MiB of device take: its writes fail past about 10 MiB.
        b = disks.make("b", backing_mb=10, journal=journal)
        files = [("e%d.bin" % i, s.file("e%d.bin" % i, (3 << 20) + 4099 * i, 200 + i))
                 for i in range(12)]
        # Not probed again during the test: a probe write may find a block the full device
        # still has, and the disk would come back to fail again (counted, logged twice).
        origin, p = start(s, [a, b], extra=["--set", "disk_retry_s=600"])
        # Each file read twice by its own reader, the second reader once the first has run:
        # the first fills, the second reads what the disk holds, or the origin once it failed.
        for name, local in files:
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "3"), "cold " + name)
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "4"), "again " + name)
            if disk_of(p, b).get("up") == 0:
                break
        down = wait_for(lambda: disk_of(p, b).get("up") == 0 and disk_of(p, b), 30)
        check(down, "the failing disk is out of service: %s" % disk_of(p, b))
        print("b down:", json.dumps(down), flush=True)
        reason = down.get("reason", "") if down else ""
        # With a journal the first fault the cache meets is EIO or ENOSPC (whichever write's
        # sync failed first, then ext4 turns read-only); without one, always ENOSPC.
        expected = ("EIO", "read-only", "EROFS", "ENOSPC") if journal else ("ENOSPC",)
        check(any(x in reason for x in expected),
              "the reason names %s: %s" % (" or ".join(expected), reason))
        mounts = open("/proc/mounts").read()
        print("b mount:", [m for m in mounts.splitlines() if "b.mnt" in m], flush=True)
        # Every file, again and after: the origin's bytes; the new ones land on disk a.
        for name, local in files:
            ok(s.run(PY, CACHE_READER, "pass", p.url_for(name), local, "5"), "after " + name)
        idle(p)
        check({n for n, _ in files} <= names(keys_on(s, a)),
              "every file is cached on disk a now: %s" % sorted(names(keys_on(s, a))))
        log = p.log_tail(200000)
        check(log.count("cache disk %s out of service" % b) == 1,
              "one log line for the failure: %s" % log[-1500:])
        m = s.ferry("proxy", "metrics", "--dir", a)
        check('ferry_proxy_disk_up{dir="%s"} 0' % b in m.stdout, "metrics: disk b down")
        check(p.proc.poll() is None, "the proxy ran throughout")
    finally:
        if p:
            p.stop()
        if origin:
            origin.__exit__(None, None, None)
        disks.close()
        s.remove()


TESTS = {"removed": test_removed, "inodes": test_inodes, "ioerrors": test_ioerrors,
         "thin": lambda: test_ioerrors(journal=False)}

if __name__ == "__main__":
    if os.geteuid() != 0:
        ferry_harness.skip("needs root: loop-device file systems")
    run_test(TESTS, TEST, skips=(Skip, ferry_testbed.Skip))
