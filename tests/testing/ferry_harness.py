"""What every Python test script of ferry shares: checks that collect failures, the closing
line and exit code, the ferry binary run as a contract test, and a work dir with a cache and the
plug-in conf in front of real origins (ferry_testbed.py starts those).

A check that fails is printed and remembered, and the script goes on: one run reports every
broken promise, not only the first. The script ends with finish() (or run_test(), which also
turns Skip into exit 77, ctest's SKIP_RETURN_CODE):

    sys.path.insert(0, ".../tests/testing")
    from ferry_harness import check, finish, run_test, Setup

    check(got == want, "what was expected: %s" % got)
    finish()                                  # "N passed, N failed", exit 1 if any failed

Run the scripts with /usr/bin/python3 (see ferry_testbed.py).
"""
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time

from ferry_testbed import SKIP_RC, Skip

PY = "/usr/bin/python3"

failures = []
_passed = 0


def check(cond, what):
    """Counts a check; a failed one is printed (at once: the failures of a test that later hangs
    are still in its log) and kept for the closing line. Returns cond, so a test may skip what
    depends on it."""
    global _passed
    if cond:
        _passed += 1
    else:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def ok(p, what):
    """Checks that the process `p` exited 0; the message holds the ends of its output."""
    return check(p.returncode == 0, "%s: exit %d %s %s" % (what, p.returncode,
                                                          p.stdout.strip()[-500:],
                                                          p.stderr.strip()[-1500:]))


def finish(prefix=""):
    """Prints the closing line and exits: 1 when any check failed, else 0."""
    print("%s%d passed, %d failed" % (prefix, _passed, len(failures)), flush=True)
    sys.exit(1 if failures else 0)


def wait_line(proc, timeout):
    """Waits (at most `timeout` seconds) for a line on proc's stdout (a pipe opened in text
    mode); returns it, or None when none came (the process ended or stayed silent)."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else None


def skip(why):
    """Exits 77, ctest's SKIP_RETURN_CODE: this machine cannot run the test (no data, no
    xrootd, not root), which is not a pass."""
    print("SKIP:", why, flush=True)
    sys.exit(SKIP_RC)


def run_test(tests, name, skips=(Skip,)):
    """Runs tests[name]() (the scripts that hold several tests take its name as an argument),
    then finish(): exit 77 when it raised one of `skips`, 1 when a check failed, else 0."""
    if name not in tests:
        sys.exit("unknown test %r (one of: %s)" % (name, " ".join(tests)))
    t0 = time.monotonic()
    try:
        tests[name]()
    except skips as e:
        skip(e)
    finish("%s (%.1f s): " % (name, time.monotonic() - t0))


class Contract:
    """The ferry binary as a contract test drives it: run() checks the exit code as well."""

    def __init__(self, ferry, timeout=300, env=None):
        self.ferry = ferry
        self.timeout = timeout
        self.env = env

    def run(self, *args, expect_rc=0, env=None):
        p = subprocess.run([self.ferry, *args], capture_output=True, text=True,
                           timeout=self.timeout, env=env or self.env)
        check(p.returncode == expect_rc,
              f"{' '.join(args)[:200]}: exit {p.returncode}, expected {expect_rc}; "
              f"stderr: {p.stderr.strip()[:300]}")
        return p


class Setup:
    """A work dir for one test: `data` (world-readable, since xrootd serves it as the xrootd
    account), the path of a cache dir, and the environment of the clients the test starts.

    With `plugin`, conf/ferry.conf enables that ferry cache plug-in for every root:// URL with
    the cache in `cache` (publish_ms = 50, then `settings`), and XRD_PLUGINCONFDIR points the
    test's clients at it: the machine's own plug-in confs are never read, and nothing outside
    the test sees this one. Without `plugin`, XRD_PLUGINCONFDIR names an empty dir: no client
    plug-in at all (a test of a server-side cache). `xrd_env` sets XrdCl's retries and
    timeouts: a test of faults wants failures reported in seconds, not minutes.

    Subclasses add what is their test's own; remove() deletes everything."""

    XRD_ENV = {"XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "30"}

    def __init__(self, ferry, plugin=None, prefix="fca-", cache_parent=None, settings=None,
                 xrd_env=None, timeout=300):
        self.ferry_bin = ferry
        self.timeout = timeout
        self.root = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.root, 0o755)
        self.data = os.path.join(self.root, "data")
        os.mkdir(self.data)
        os.chmod(self.data, 0o755)
        self.cache = os.path.join(cache_parent or self.root, "cache")
        if plugin:
            conf = os.path.join(self.root, "conf")
            os.mkdir(conf)
            with open(os.path.join(conf, "ferry.conf"), "w") as f:
                f.write("url = root://*\nlib = %s\nenable = true\ndir = %s\n" % (plugin,
                                                                               self.cache))
                f.write("publish_ms = 50\n")
                for k, v in (settings or {}).items():
                    f.write("%s = %s\n" % (k, v))
        else:
            conf = os.path.join(self.root, "no-plugins")
        self.env = dict(os.environ, **(self.XRD_ENV if xrd_env is None else xrd_env))
        self.env["XRD_PLUGINCONFDIR"] = conf
        self.env.pop("XRD_PLUGIN", None)

    def file(self, name, size, seed):
        """A file of `size` pseudo-random bytes (the same for a seed) in the data dir."""
        path = os.path.join(self.data, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(random.Random(seed).randbytes(size))
        os.chmod(path, 0o644)
        return path

    def run(self, *argv, timeout=None, env=None):
        """Runs argv with the test's environment (read now: a test may change self.env)."""
        return subprocess.run(list(argv), env=env or self.env, capture_output=True, text=True,
                              timeout=timeout or self.timeout)

    def ferry(self, *args, timeout=None, env=None):
        return self.run(self.ferry_bin, *args, timeout=timeout, env=env)

    def json(self, *args):
        """What `ferry ARGS` prints as JSON; an exit other than 0 is an error of the test."""
        p = self.ferry(*args)
        if p.returncode != 0:
            raise RuntimeError("ferry %s: exit %d: %s" % (" ".join(args), p.returncode,
                                                          p.stderr.strip()[-600:]))
        return json.loads(p.stdout)

    def stats(self, cache=None):
        return self.json("cache", "stats", "--dir", cache or self.cache, "--json")

    def ls(self, cache=None):
        """The cache's entries, none while it cannot be listed (not made yet)."""
        p = self.ferry("cache", "ls", "--dir", cache or self.cache, "--json")
        return json.loads(p.stdout)["entries"] if p.returncode == 0 else []

    def verify(self, cache=None):
        """`ferry cache verify`: (exit code, its report)."""
        p = self.ferry("cache", "verify", "--dir", cache or self.cache, "--json")
        return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else {})

    def verified(self):
        """verify's report when every stored page checks, else None."""
        rc, v = self.verify()
        return v if rc == 0 and v.get("pages_bad") == 0 else None

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)
