#!/usr/bin/env python3
"""`ferry cache doctor`, `ferry cache netbench` and `ferry proxy doctor` against the mistakes a
newcomer makes (issue 41), each made for real: a plug-in conf in $HOME that XrdCl does not read,
a cache directory another account owns, a plug-in library of no ferry build, a damaged index,
a free-space floor the disk cannot meet, an origin that is down, a wrong sss keytab, an expired
certificate, one for another host, a key of another certificate, a bad authdb, a port in use;
and the errors of a TTree name that does not exist and an RNTuple given for a TTree. Each
mistake must be found with its cause and fix; a good setup must say OK and exit 0.

usage: test_doctor.py FERRY PLUGIN_LIB ROOT_DATA_DIR RNTUPLE_DATA_DIR TEST
  TEST: cache_good | cache_mistakes | proxy | errors
Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import datetime
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import ferry_harness  # noqa: E402
from ferry_harness import check, run_test  # noqa: E402
from ferry_testbed import Origin, Skip, wait_for  # noqa: E402

FERRY, PLUGIN, ROOT_DATA, RNTUPLE_DATA, TEST = sys.argv[1:6]


def doctor(setup, *args, env=None):
    """(exit code, {check name: check}) of `ferry ARGS --json`; checks of one name (keytab,
    ports) are kept as a list under "NAME*"."""
    p = setup.ferry(*args, "--json", env=env)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        raise RuntimeError("ferry %s: no JSON: %s %s" % (" ".join(args), p.stdout, p.stderr))
    check(doc["format"] == 1 and doc["ok"] == (p.returncode == 0),
          "JSON 'ok' agrees with the exit code %d" % p.returncode)
    checks = {}
    for c in doc["checks"]:
        check(set(c) == {"name", "status", "message", "fix", "values"},
              "every check has the documented keys: %s" % c)
        checks[c["name"]] = c
        checks.setdefault(c["name"] + "*", []).append(c)
    return p.returncode, checks


def expect(checks, name, status, *words):
    """A check `name` (the first of that name with `status`) says all of `words`."""
    c = next((c for c in checks.get(name + "*", []) if c["status"] == status), None)
    if not check(c is not None, "%s is %s: %s" % (name, status, checks.get(name + "*"))):
        return
    text = c["message"] + " " + c["fix"]
    for w in words:
        check(w in text, "%s names %r: %s" % (name, w, text))


class Setup(ferry_harness.Setup):
    def __init__(self):
        super().__init__(FERRY, PLUGIN, prefix="fdoc-", timeout=120)
        self.conf = os.path.join(self.root, "conf")
        # The test's own conf, as `ferry cache enable` writes it.
        os.remove(os.path.join(self.conf, "ferry.conf"))
        p = self.ferry("cache", "enable", "--dir", self.cache, "--conf-dir", self.conf,
                       "--lib", PLUGIN, "--set", "min_free=1M", "--max-size", "1G")
        check(p.returncode == 0, "cache enable: %s" % p.stderr)


def read_through(setup, url, n=200000):
    code = ("import sys\nfrom XRootD import client\nf = client.File()\n"
            "st, _ = f.open(sys.argv[1])\nassert st.ok, st\nst, d = f.read(0, %d)\n"
            "assert st.ok and len(d) == %d, st\nf.close()\n" % (n, n))
    p = setup.run("/usr/bin/python3", "-c", code, url)
    check(p.returncode == 0, "read through the cache: %s" % p.stderr[-300:])


def test_cache_good():
    s = Setup()
    try:
        s.file("a.bin", 3 * 1024 * 1024, 1)
        with Origin(s.data) as o:
            url = o.url_for("a.bin")
            read_through(s, url)
            check(wait_for(lambda: s.ls(), 30), "the read made an entry")
            rc, c = doctor(s, "cache", "doctor", url)
            check(rc == 0, "a good setup: exit 0, %s" % c)
            for name in ("conf", "plugin", "dir", "space", "inodes", "index", "origin"):
                expect(c, name, "ok")
            check(c["index"]["values"]["entries_verified"] >= 1, "an entry verified")
            v = c["origin"]["values"]
            check(v["read_bytes"] > 0 and v["rtt_ms"] > 0 and v["read_mb_per_s"] > 0,
                  "the origin probe measured: %s" % v)
            p = s.ferry("cache", "netbench", url, "--seconds", "1", "--max-bytes", "4M",
                        "--json")
            check(p.returncode == 0, "netbench: %s" % p.stderr)
            nb = json.loads(p.stdout)
            check(0 < nb["read_bytes"] <= 4 * 1024 * 1024, "netbench bounded in bytes: %s" % nb)
            p = s.ferry("cache", "doctor", url)
            check(p.returncode == 0 and "OK   conf" in p.stdout and "all good" in p.stdout,
                  "the text report: %s" % p.stdout)
    finally:
        s.remove()


def test_cache_mistakes():
    s = Setup()
    try:
        s.file("a.bin", 1024 * 1024, 1)
        # 1. No plug-in conf, and the conf written into a $HOME XrdCl does not read.
        empty = os.path.join(s.root, "empty")
        os.mkdir(empty)
        fake_home = os.path.join(s.root, "home")
        env = dict(s.env, XRD_PLUGINCONFDIR=empty, HOME=fake_home)
        account_conf = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".xrootd",
                                    "client.plugins.d", "ferry-cache.conf")
        if not os.path.exists(account_conf):
            rc, c = doctor(s, "cache", "doctor", env=env)
            check(rc == 1, "no conf: exit 1")
            expect(c, "conf", "fail", "no plug-in conf", "ferry cache enable --dir")
            p = s.ferry("cache", "enable", "--dir", s.cache, "--lib", PLUGIN, env=env)
            check(p.returncode == 0, "enable into $HOME")
            rc, c = doctor(s, "cache", "doctor", env=env)
            expect(c, "conf", "fail", "XrdCl does not read it", "XRD_PLUGINCONFDIR=")
        # 2. A plug-in library that is no ferry build.
        bad_conf = os.path.join(s.root, "badlib")
        os.mkdir(bad_conf)
        libc = "/lib/x86_64-linux-gnu/libz.so.1"
        with open(os.path.join(bad_conf, "ferry-cache.conf"), "w") as f:
            f.write("url = root://*\nlib = %s\nenable = true\ndir = %s\n" % (libc, s.cache))
        rc, c = doctor(s, "cache", "doctor", env=dict(s.env, XRD_PLUGINCONFDIR=bad_conf))
        check(rc == 1, "a foreign library: exit 1")
        expect(c, "plugin", "fail", "not an XrdCl client plug-in", "ferry cache enable")
        with open(os.path.join(bad_conf, "ferry-cache.conf"), "w") as f:
            f.write("url = root://*\nlib = /nonexistent/libXrdClFerry-5.so\nenable = true\n")
        rc, c = doctor(s, "cache", "doctor", env=dict(s.env, XRD_PLUGINCONFDIR=bad_conf))
        expect(c, "plugin", "fail", "does not exist")
        # 3. A cache directory another account owns.
        with Origin(s.data) as o:
            url = o.url_for("a.bin")
            read_through(s, url)
            check(wait_for(lambda: s.ls(), 30), "the read made an entry")
            rc, c = doctor(s, "cache", "doctor")
            check(rc == 0, "good before the mistakes: %s" % c)
            # 4. A damaged index.
            idx = [os.path.join(d, f) for d, _, fs in os.walk(s.cache) for f in fs
                   if f.endswith(".idx")]
            check(idx, "an index on disk")
            with open(idx[0], "r+b") as f:
                f.seek(20)
                b = f.read(1)
                f.seek(20)
                f.write(bytes([b[0] ^ 0xFF]))
            rc, c = doctor(s, "cache", "doctor")
            check(rc == 1, "a bad index: exit 1")
            expect(c, "index", "fail", "bad indexes", "ferry cache verify --repair")
            s.ferry("cache", "verify", "--repair", "--dir", s.cache)
            # 5. A free-space floor the disk cannot meet.
            env = dict(s.env, FERRY_CACHE_MIN_FREE="1000000T")
            rc, c = doctor(s, "cache", "doctor", env=env)
            check(rc == 1, "no space: exit 1")
            expect(c, "space", "fail", "below the free-space floor", "min_free=")
            if os.geteuid() == 0:
                shutil.chown(s.cache, "nobody")
                rc, c = doctor(s, "cache", "doctor")
                check(rc == 1, "another's directory: exit 1")
                expect(c, "dir", "fail", "belongs to nobody", "ferry cache enable --dir")
                shutil.chown(s.cache, "root")
            # 6. The origin down: its port closed.
            port = o.url.rstrip("/").rsplit(":", 1)[1]
        down = "root://127.0.0.1:%s//a.bin" % port
        env = dict(s.env, XRD_CONNECTIONRETRY="1", XRD_CONNECTIONWINDOW="2")
        rc, c = doctor(s, "cache", "doctor", down, env=env)
        check(rc == 1, "origin down: exit 1")
        expect(c, "origin", "fail", "xrdfs 127.0.0.1:%s stat /a.bin" % port)
        p = s.ferry("root", "ls", down, env=env)
        check(p.returncode == 1 and "does not answer" in p.stderr
              and "xrdfs 127.0.0.1:%s query config version" % port in p.stderr,
              "ferry root ls of a down origin names the cause and the fix: %s" % p.stderr)
        p = s.ferry("cache", "netbench", down, "--seconds", "1", env=env)
        check(p.returncode == 1 and "fix: check that the origin runs" in p.stderr,
              "netbench names the fix: %s" % p.stderr)
    finally:
        s.remove()


# ---- proxy doctor ----

def make_cert(dir_, name, host, days_from, days_to, key=None):
    import ipaddress
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = key or ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now + datetime.timedelta(days=days_from))
            .not_valid_after(now + datetime.timedelta(days=days_to))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(host)) if host[0].isdigit()
                 else x509.DNSName(host)]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path = os.path.join(dir_, name + ".pem")
    key_path = os.path.join(dir_, name + ".key")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    os.chmod(key_path, 0o600)
    return cert_path, key_path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_proxy():
    if shutil.which("xrdsssadmin") is None:
        raise Skip("xrdsssadmin is not installed")
    s = Setup()
    try:
        keys = os.path.join(s.root, "keys")
        os.mkdir(keys)
        os.chmod(keys, 0o755)
        kt = {}
        for who in ("ferryproxy", "mallory"):
            kt[who] = os.path.join(keys, who + ".kt")
            p = s.run("xrdsssadmin", "-k", who, "-u", who, "-g", "users", "add", kt[who])
            check(p.returncode == 0, "xrdsssadmin: %s" % p.stderr)
            os.chmod(kt[who], 0o600)
        origin_kt = os.path.join(keys, "origin.kt")
        shutil.copy(kt["ferryproxy"], origin_kt)
        shutil.chown(origin_kt, "xrootd", "xrootd")
        os.chmod(origin_kt, 0o600)
        security = ("xrootd.seclib libXrdSec.so\nsec.protocol sss -s %s\n"
                    "sec.protbind * only sss\n" % origin_kt)
        good, good_key = make_cert(keys, "good", "localhost", -1, 90)
        expired, expired_key = make_cert(keys, "expired", "localhost", -30, -2)
        other, other_key = make_cert(keys, "other", "elsewhere.example", -1, 90)
        authdb = os.path.join(keys, "proxy.authdb")
        with open(authdb, "w") as f:
            f.write("u alice /data/a rl\nu * /public rl\n")
        base = ["proxy", "doctor", "--port", str(free_port()), "--dir",
                os.path.join(s.root, "pcache"), "--admin", os.path.join(s.root, "admin"),
                "--host", "localhost"]
        with Origin(s.data, extra_config=security) as o:
            origin = o.url.split("//")[1].rstrip("/")
            args = base + ["--origin", origin, "--origin-credentials", "sss:" + kt["ferryproxy"],
                           "--https", str(free_port()), "--cert", good, "--key", good_key,
                           "--auth", "ztn", "--authdb", authdb]
            rc, c = doctor(s, *args)
            check(rc == 0, "a good proxy setup: exit 0, %s" % c)
            for name in ("options", "cert", "keytab", "authdb", "origin", "ports", "dir",
                         "space", "inodes"):
                expect(c, name, "ok")
            check(c["cert"]["values"]["days_to_expiry"] >= 89, "days to expiry")
            check(c["xrootd"]["status"] in ("ok", "warn"), "the xrootd build is described")

            def mistake(what, name, words, *changes):
                a = list(args)
                for old, new in changes:
                    a[a.index(old)] = new
                rc, c = doctor(s, *a)
                check(rc == 1, "%s: exit 1 (%s)" % (what, c.get(name)))
                expect(c, name, "fail", *words)

            mistake("a wrong keytab", "origin", ["refused the proxy's login", "xrdsssadmin"],
                    ("sss:" + kt["ferryproxy"], "sss:" + kt["mallory"]))
            mistake("a certificate given as keytab", "keytab", ["not an sss key"],
                    ("sss:" + kt["ferryproxy"], "sss:" + good))
            mistake("an expired certificate", "cert", ["expired", "renew"],
                    (good, expired), (good_key, expired_key))
            mistake("a certificate for another host", "cert",
                    ["does not name localhost", "--host"], (good, other), (good_key, other_key))
            mistake("a key of another certificate", "cert", ["is not the key of"],
                    (good_key, other_key))
            # A proxy reached by its address: an IP subject alternative name covers it.
            by_ip, by_ip_key = make_cert(keys, "by-ip", "127.0.0.1", -1, 90)
            a = list(args)
            a[a.index("localhost")] = "127.0.0.1"
            a[a.index(good)], a[a.index(good_key)] = by_ip, by_ip_key
            rc, c = doctor(s, *a)
            expect(c, "cert", "ok")
            with open(authdb, "w") as f:
                f.write("u alice /data/a rl\nq bob /data rl\nu carol /data l\n")
            mistake("a bad authdb", "authdb", ["line 2", "'q' is not an identity type"])
            with open(authdb, "w") as f:
                f.write("u alice /data/a rl\nu carol /data l\n")
            rc, c = doctor(s, *args)
            expect(c, "authdb", "warn", "can read nothing: u carol")
            with socket.socket() as busy:
                busy.bind(("127.0.0.1", 0))  # the doctor binds the wildcard: this clashes
                busy.listen(1)
                port = str(busy.getsockname()[1])
                mistake("a port in use", "ports", ["in use", "ss -ltnp"], (base[3], port))
        # The origin down.
        rc, c = doctor(s, *(base + ["--origin", origin]))
        check(rc == 1, "origin down: exit 1")
        expect(c, "origin", "fail", "cannot reach", "xrdfs " + origin)
    finally:
        s.remove()


def test_errors():
    nano = os.path.join(ROOT_DATA, "nano_dy.root")
    rnt = os.path.join(RNTUPLE_DATA, "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root")
    if not (os.path.exists(nano) and os.path.exists(rnt)):
        raise Skip("no ROOT data")
    s = ferry_harness.Contract(FERRY)
    p = s.run("root", "dump", nano, "--tree", "Evnets", "--branch", "nMuon", expect_rc=1)
    check("no TTree 'Evnets'" in p.stderr and "'Events'" in p.stderr
          and "ferry root ls" in p.stderr, "a misspelt tree: %s" % p.stderr)
    p = s.run("root", "baskets", rnt, "--branch", "nMuon", "--tree", "Events", expect_rc=1)
    check("is a ROOT::RNTuple, not a TTree" in p.stderr and "read RNTuples too" in p.stderr,
          "an RNTuple for a TTree: %s" % p.stderr)


if __name__ == "__main__":
    run_test({"cache_good": test_cache_good, "cache_mistakes": test_cache_mistakes,
              "proxy": test_proxy, "errors": test_errors}, TEST)
