#!/usr/bin/env python3
"""The site proxy for a site that protects its data: real xrootd servers, real sss keys, a real
authorisation database, real TLS.

usage: test_proxy_auth.py FERRY TEST     TEST: sss | https | malformed
The origin admits only sss-authenticated users and authorises with an authdb: alice may read
/data/a, bob /data/b, the proxy's identity all of /data, anyone /public. The proxy in front
(`ferry proxy run --auth sss:... --authdb ... --origin-credentials sss:...`) must give no
client a byte of a file the rules deny it, whoever brought the file into the cache.
Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
from ferry_harness import PY, check, run_test  # noqa: E402
from ferry_testbed import Origin, Skip, wait_for  # noqa: E402
from proxy_testbed import Proxy, free_port  # noqa: E402

FERRY, TEST = sys.argv[1:3]
FETCH = os.path.join(HERE, "xrd_fetch.py")
USERS = ("alice", "bob", "ferryproxy")
FILES = {"alice": "data/a/alice.bin", "bob": "data/b/bob.bin", "public": "public/pub.bin"}


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


class Bed:
    """Data, the sss keys (one keytab made at once: keys made one by one can share a key
    number), each identity's own keytab line, and the origin's and the proxy's authdbs."""

    def __init__(self):
        if shutil.which("xrdsssadmin") is None:
            raise Skip("xrdsssadmin is not installed")
        self.root = tempfile.mkdtemp(prefix="fpx-auth-")
        os.chmod(self.root, 0o755)
        self.data = self.mkdir("export")
        self.bytes = {}
        for who, rel in FILES.items():
            path = os.path.join(self.data, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            for d in (os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
                os.chmod(d, 0o755)
            self.bytes[who] = random.Random(who).randbytes(3 * 1024 * 1024 + 123)
            with open(path, "wb") as f:
                f.write(self.bytes[who])
            os.chmod(path, 0o644)
        keys = self.mkdir("keys")
        self.keytab = os.path.join(keys, "all.kt")
        for user in USERS:
            p = run(["xrdsssadmin", "-k", user, "-u", user, "-g", "users", "add", self.keytab])
            if p.returncode != 0:
                raise RuntimeError("xrdsssadmin: " + p.stderr)
        self.lines = {}
        with open(self.keytab) as f:
            for line in f:
                for user in USERS:
                    if " u:%s " % user in line:
                        self.lines[user] = line
        self.kt = {user: self.write_kt(user, [user]) for user in USERS}
        self.kt["clients"] = self.write_kt("clients", ["alice", "bob"])
        shutil.chown(self.keytab, "xrootd", "xrootd")
        os.chmod(self.keytab, 0o600)
        self.origin_authdb = self.write_authdb("origin.authdb", [
            "u alice /data/a rl", "u bob /data/b rl", "u ferryproxy /data rl",
            "u * /public rl"])
        self.proxy_authdb = self.write_authdb("proxy.authdb", [
            "u alice /data/a rl", "u bob /data/b rl", "u * /public rl"])

    def mkdir(self, rel):
        path = os.path.join(self.root, rel)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o755)
        return path

    def write_kt(self, name, users):
        path = os.path.join(self.root, "keys", name + ".kt")
        with open(path, "w") as f:
            f.writelines(self.lines[u] for u in users)
        os.chmod(path, 0o600)
        return path

    def write_authdb(self, name, lines):
        path = os.path.join(self.root, "keys", name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(path, 0o644)
        return path

    def origin_config(self):
        return ("xrootd.seclib libXrdSec.so\n"
                "sec.protocol sss -s %s\n"
                "sec.protbind * only sss\n"
                "acc.authdb %s\n"
                "ofs.authorize\n" % (self.keytab, self.origin_authdb))

    def env(self, user):
        """A client's environment: only its own key (user None: no key at all)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XRD", "XrdSec"))}
        home = self.mkdir("home-%s" % user)
        env.update(HOME=home, XRD_PLUGINCONFDIR=home, XRD_CONNECTIONRETRY="1",
                   XRD_REQUESTTIMEOUT="20", XrdSecPROTOCOL="sss")
        if user:
            env["XrdSecSSSKT"] = self.kt[user]
        return env

    def fetch(self, user, url):
        """(ok, bytes read, message) of `user` reading url whole."""
        out = os.path.join(self.root, "out-%s.bin" % user)
        if os.path.exists(out):
            os.unlink(out)
        p = run([PY, FETCH, "read", url, out], env=self.env(user))
        got = open(out, "rb").read() if os.path.exists(out) else b""
        return p.returncode == 0, got, (p.stdout + p.stderr).strip()[-400:]

    def stat(self, user, url):
        p = run([PY, FETCH, "stat", url], env=self.env(user))
        return p.returncode == 0, (p.stdout + p.stderr).strip()[-400:]

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


def proxy_args(bed):
    return ["--auth", "sss:" + bed.kt["clients"], "--authdb", bed.proxy_authdb,
            "--origin-credentials", "sss:" + bed.kt["ferryproxy"]]


def url_as(proxy, user_prefix, rel):
    """root://[USER@]127.0.0.1:PORT//rel"""
    host = proxy.url[len("root://"):].rstrip("/")
    return "root://%s%s//%s" % (user_prefix + "@" if user_prefix else "", host, rel)


def check_refusals(bed, proxy, when):
    """bob (also as ferryc1) and a client without a key get none of alice's bytes."""
    alice_url = url_as(proxy, "", FILES["alice"])
    for who, url in (("bob", alice_url), ("bob", url_as(proxy, "ferryc1", FILES["alice"])),
                     (None, alice_url)):
        ok, got, msg = bed.fetch(who, url)
        label = "%s (as %s)" % (who or "a client without a key", url.split("//")[1])
        check(not ok, "%s: %s was not refused alice's file: %s" % (when, label, msg))
        check(got == b"", "%s: %s got %d bytes of alice's file" % (when, label, len(got)))
        check(bed.bytes["alice"][:4096] not in got, "%s: alice's bytes reached %s" % (when, label))
    ok, msg = bed.stat("bob", alice_url)
    check(not ok, "%s: bob's stat of alice's file was answered: %s" % (when, msg))
    ok, msg = bed.stat("bob", url_as(proxy, "ferryc2", FILES["alice"]))
    check(not ok, "%s: bob's stat as ferryc2 of alice's file was answered: %s" % (when, msg))


def origin_requests(proxy):
    return proxy.status().get("origin_requests", 0)


def test_sss(bed, origin):
    cache = os.path.join(bed.root, "cache")
    hostport = origin.url[len("root://"):].rstrip("/")
    with Proxy(FERRY, hostport, cache, extra=proxy_args(bed), status_ms=50) as proxy:
        alice_url = url_as(proxy, "", FILES["alice"])
        ok, got, msg = bed.fetch("alice", alice_url)
        check(ok and got == bed.bytes["alice"], "alice reads her file: %s" % msg)
        check(proxy.idle() is not None, "the proxy settles after alice's first pass")
        before = origin_requests(proxy)
        check(before > 0, "alice's first pass read the origin")
        ok, got, msg = bed.fetch("alice", alice_url)
        check(ok and got == bed.bytes["alice"], "alice's second pass: %s" % msg)
        proxy.idle()
        check(origin_requests(proxy) == before,
              "the second pass sent %d requests to the origin" % (origin_requests(proxy) - before))
        check_refusals(bed, proxy, "cached")
        ok, got, msg = bed.fetch("bob", url_as(proxy, "", FILES["bob"]))
        check(ok and got == bed.bytes["bob"], "bob reads his own file: %s" % msg)
        ok, got, msg = bed.fetch("alice", url_as(proxy, "", FILES["public"]))
        check(ok and got == bed.bytes["public"], "alice reads /public: %s" % msg)
        secret = bed.lines["ferryproxy"].split("k:")[1].strip()
        log = proxy.log_tail(10**7)
        check(secret not in log, "the proxy's key is in its log")
        check(secret not in json.dumps(proxy.status()), "the proxy's key is in its status")
        check(proxy.proc.poll() is None, "the proxy is still serving: %s" % proxy.log_tail())
    with Proxy(FERRY, hostport, cache, extra=proxy_args(bed), status_ms=50) as proxy:
        check_refusals(bed, proxy, "after a restart")
        ok, got, msg = bed.fetch("alice", url_as(proxy, "ferryc5", FILES["alice"]))
        check(ok and got == bed.bytes["alice"], "alice as ferryc5 after a restart: %s" % msg)
        check(proxy.proc.poll() is None, "the proxy is still serving: %s" % proxy.log_tail())


def with_bed(test):
    bed = Bed()
    try:
        with Origin(bed.data, extra_config=bed.origin_config()) as origin:
            test(bed, origin)
    finally:
        bed.remove()


if __name__ == "__main__":
    run_test({"sss": lambda: with_bed(test_sss)}, TEST)
