#!/usr/bin/env python3
"""The client cache on a machine of several users, with real local accounts and a real xrootd
origin that authenticates with sss keys and authorises with an authorisation database.

usage: test_cache_shared.py FERRY PLUGIN_LIB ROOT_DATA_DIR TEST
  TEST: private | shared
Accounts made by the test (removed at the end): alice and bob in a group, carol outside it.
The origin lets alice read /a and bob /b. Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
from ferry_harness import PY, check, run_test  # noqa: E402
from ferry_testbed import Origin, Skip  # noqa: E402

FERRY, PLUGIN, ROOT_DATA, TEST = sys.argv[1:5]
READER = os.path.join(HERE, "cache_reader.py")
FILE_A, FILE_B = "nano_dy.root", "uproot-HZZ-zstd.root"


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


class Accounts:
    """A group and three accounts named after this process, made and removed by the test."""

    def __init__(self):
        if os.geteuid() != 0 or shutil.which("useradd") is None:
            raise Skip("needs root and useradd to make test accounts")
        tag = "%d" % (os.getpid() % 100000)
        self.group = "fyg" + tag
        self.names = {u: "fy%s%s" % (u[0], tag) for u in ("alice", "bob", "carol")}
        self.made = []
        if run(["groupadd", self.group]).returncode != 0:
            raise Skip("groupadd failed")
        self.gid = grp.getgrnam(self.group).gr_gid
        for user, name in self.names.items():
            extra = ["-G", self.group] if user != "carol" else []
            p = run(["useradd", "-M", "-s", "/usr/sbin/nologin", *extra, name])
            if p.returncode != 0:
                self.remove()
                raise Skip("useradd %s: %s" % (name, p.stderr.strip()))
            self.made.append(name)

    def pw(self, user):
        return pwd.getpwnam(self.names[user])

    def remove(self):
        for name in self.made:
            run(["userdel", name])
        run(["groupdel", self.group])


class Bed:
    """Data, sss keys, the authorisation database, and each user's home, conf dir and keytab."""

    def __init__(self, accounts):
        self.acc = accounts
        self.root = tempfile.mkdtemp(prefix="fca-shared-")
        os.chmod(self.root, 0o755)
        self.data = self.mkdir("data", 0o755)
        self.scratch = self.mkdir("scratch", 0o1777)  # like /scratch or /tmp: anyone makes a dir
        for sub, name in (("a", FILE_A), ("b", FILE_B)):
            d = self.mkdir("data/" + sub, 0o755)
            shutil.copy(os.path.join(ROOT_DATA, name), d)
            os.chmod(os.path.join(d, name), 0o644)
        self.keytab = os.path.join(self.mkdir("keys", 0o755), "server.kt")
        for user in ("alice", "bob", "carol"):
            name = accounts.names[user]
            p = run(["xrdsssadmin", "-k", name, "-u", name, "-g", accounts.group, "add",
                     self.keytab])
            if p.returncode != 0:
                raise RuntimeError("xrdsssadmin: " + p.stderr)
        xrd = pwd.getpwnam("xrootd")
        os.chown(self.keytab, xrd.pw_uid, xrd.pw_gid)
        os.chmod(self.keytab, 0o600)
        self.authdb = os.path.join(self.root, "keys", "authdb")
        self.write_authdb(alice="/a", bob="/b")
        self.home = {}
        for user in ("alice", "bob", "carol"):
            self.home[user] = self.user_home(user)

    def mkdir(self, rel, mode):
        path = os.path.join(self.root, rel)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)
        return path

    def write_authdb(self, **paths):
        with open(self.authdb + ".tmp", "w") as f:
            for user, path in paths.items():
                f.write("u %s %s rl\n" % (self.acc.names[user], path))
        os.chmod(self.authdb + ".tmp", 0o644)
        os.replace(self.authdb + ".tmp", self.authdb)

    def user_home(self, user):
        """HOME, the conf dir and the keytab line of `user`, all theirs and 0700/0600."""
        pw = self.acc.pw(user)
        home = self.mkdir("home-" + user, 0o700)
        conf = os.path.join(home, "conf")
        os.mkdir(conf)
        kt = os.path.join(home, "client.kt")
        with open(self.keytab) as src, open(kt, "w") as out:
            out.writelines(line for line in src if " u:%s " % self.acc.names[user] in line)
        for path in (home, conf, kt):
            os.chown(path, pw.pw_uid, pw.pw_gid)
        os.chmod(kt, 0o600)
        return home

    def origin_config(self):
        return ("xrootd.seclib libXrdSec.so\n"
                "sec.protocol sss -s %s\n"
                "sec.protbind * only sss\n"
                "acc.authdb %s\n"
                "ofs.authorize\n" % (self.keytab, self.authdb))

    def env(self, user):
        home = self.home[user]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XRD", "FERRY_CACHE"))}
        env.update(HOME=home, USER=self.acc.names[user], XRD_PLUGINCONFDIR=home + "/conf",
                   XrdSecPROTOCOL="sss", XrdSecSSSKT=home + "/client.kt",
                   XRD_CONNECTIONRETRY="1", XRD_REQUESTTIMEOUT="20")
        return env

    def as_user(self, user, argv, umask=0o022, plugin=True):
        """Runs argv as `user` (with the group as a supplementary group when a member)."""
        pw = self.acc.pw(user)
        groups = [self.acc.gid] if user != "carol" else []
        env = self.env(user)
        if not plugin:
            env["XRD_PLUGINCONFDIR"] = self.home[user]  # no conf file there: no plug-in
        return run(argv, env=env, cwd=self.home[user], user=pw.pw_uid, group=pw.pw_gid,
                   extra_groups=groups, umask=umask)

    def enable(self, user, cache_dir, shared=True):
        argv = [FERRY, "cache", "enable", "--dir", cache_dir, "--lib", PLUGIN,
                "--conf-dir", self.home[user] + "/conf", "--set", "publish_ms=50",
                # Byte-exact copies are compared: the replica tier would serve its virtual file.
                "--set", "replica=off"]
        if shared:
            argv += ["--shared", self.acc.group]
        return self.as_user(user, argv)

    def copy(self, user, url, out):
        """What `user` reads of `url` through XrdCl (and the plug-in): (process, bytes)."""
        out_path = os.path.join(self.home[user], out)
        if os.path.exists(out_path):
            os.unlink(out_path)
        p = self.as_user(user, [PY, READER, "copy", url, out_path])
        data = open(out_path, "rb").read() if os.path.exists(out_path) else b""
        return p, data

    def local(self, sub, name):
        return open(os.path.join(self.data, sub, name), "rb").read()

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


def stats(cache_dir):
    p = run([FERRY, "cache", "stats", "--dir", cache_dir, "--json"])
    return json.loads(p.stdout) if p.returncode == 0 else {}


def walk_modes(top):
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        for n in [dirpath] + [os.path.join(dirpath, f) for f in filenames]:
            st = os.lstat(n)
            out.append((n, stat.S_IMODE(st.st_mode), st.st_gid, stat.S_ISDIR(st.st_mode)))
    return out


def test_private(bed, origin):
    url_a = origin.url_for("a/" + FILE_A)
    cache = os.path.join(bed.scratch, "alice-cache")
    p = bed.enable("alice", cache, shared=False)
    check(p.returncode == 0, "alice enables a private cache: %s" % p.stderr)
    p, got = bed.copy("alice", url_a, "a.out")
    check(p.returncode == 0 and got == bed.local("a", FILE_A), "alice reads /a: %s" % p.stderr)
    modes = walk_modes(cache)
    check(len(modes) > 4, "the pass left files in the cache: %s" % modes)
    for path, mode, _, is_dir in modes:
        if path.startswith(cache + "/replica-queue") or "/users" in path:
            continue
        check(mode == (0o700 if is_dir else 0o600), "%s is %o" % (path, mode))
    # Bob is pointed at alice's private cache: he cannot use it, reads through, is told why.
    bob_conf = os.path.join(bed.home["bob"], "conf", "ferry.conf")
    with open(bob_conf, "w") as f:
        f.write("url = root://*\nlib = %s\nenable = true\ndir = %s\n" % (PLUGIN, cache))
    os.chown(bob_conf, bed.acc.pw("bob").pw_uid, -1)
    before = stats(cache)
    p, got = bed.copy("bob", origin.url_for("b/" + FILE_B), "b.out")
    check(p.returncode == 0 and got == bed.local("b", FILE_B), "bob reads /b through: %s" % p.stderr)
    check("caching disabled" in p.stderr and "not to you" in p.stderr,
          "bob is told why the cache is not used: %r" % p.stderr[-500:])
    check(stats(cache).get("entries") == before.get("entries"), "bob added nothing to it")
    # A private cache others can read is refused to its own user too, and status says so.
    os.chmod(cache, 0o755)
    p, got = bed.copy("alice", url_a, "a2.out")
    check(p.returncode == 0 and got == bed.local("a", FILE_A), "alice reads through: %s" % p.stderr)
    check("mode 0755" in p.stderr, "the reason is logged: %r" % p.stderr[-500:])
    p = bed.as_user("alice", [FERRY, "cache", "status", "--json",
                              "--conf-dir", bed.home["alice"] + "/conf"])
    st = json.loads(p.stdout) if p.returncode == 0 else {}
    check(st.get("mode") == "private" and "0755" in st.get("problem", ""),
          "cache status reports the problem: %s %s" % (p.stdout, p.stderr))
    p = bed.enable("alice", cache, shared=False)
    check(p.returncode == 0 and stat.S_IMODE(os.stat(cache).st_mode) == 0o700,
          "enable makes it private again: %s" % p.stderr)


def test_shared(bed, origin):
    url_a, url_b = origin.url_for("a/" + FILE_A), origin.url_for("b/" + FILE_B)
    cache = os.path.join(bed.scratch, "group-cache")
    p = bed.enable("alice", cache, shared=True)
    check(p.returncode == 0, "alice makes the group cache: %s" % p.stderr)
    st = os.stat(cache)
    check(stat.S_IMODE(st.st_mode) == 0o2770 and st.st_gid == bed.acc.gid,
          "group cache is 2770 of the group: %o %d" % (stat.S_IMODE(st.st_mode), st.st_gid))
    p = bed.enable("bob", cache, shared=True)
    check(p.returncode == 0, "bob joins it: %s" % p.stderr)
    p = bed.enable("carol", cache, shared=True)
    check(p.returncode != 0 and "not a member" in p.stderr, "carol cannot join: %s" % p.stderr)

    p, got = bed.copy("alice", url_a, "a.out")
    check(p.returncode == 0 and got == bed.local("a", FILE_A), "alice reads /a: %s" % p.stderr)
    for path, mode, gid, is_dir in walk_modes(os.path.join(cache, "entries")):
        check(mode == (0o2770 if is_dir else 0o660) and gid == bed.acc.gid,
              "%s is %o of gid %d" % (path, mode, gid))
    after_alice = stats(cache)
    check(after_alice.get("access_checks") == 1, "one origin open confirmed alice: %s" % after_alice)

    # Bob is refused alice's file although its pages are in the cache: the origin's error.
    p, got = bed.copy("bob", url_a, "stolen.out")
    check(p.returncode != 0 and got == b"", "bob gets no byte of /a (exit %d, %d bytes)"
          % (p.returncode, len(got)))
    check("not authorized" in p.stderr.lower() or "permission" in p.stderr.lower(),
          "bob sees the origin's refusal: %r" % p.stderr[-300:])
    after_bob = stats(cache)
    check(after_bob.get("access_refused") == 1, "the refusal is counted: %s" % after_bob)
    check(after_bob.get("bytes_from_cache") == after_alice.get("bytes_from_cache"),
          "nothing was served from the cache to bob")
    p, got = bed.copy("bob", url_b, "b.out")
    check(p.returncode == 0 and got == bed.local("b", FILE_B), "bob reads his /b: %s" % p.stderr)

    # Alice's warm pass: from the cache, no origin open.
    before = stats(cache)
    p, got = bed.copy("alice", url_a, "a2.out")
    warm = stats(cache)
    check(p.returncode == 0 and got == bed.local("a", FILE_A), "alice's warm pass: %s" % p.stderr)
    check(warm.get("access_checks") == before.get("access_checks")
          and warm.get("bytes_from_origin") == before.get("bytes_from_origin")
          and warm.get("bytes_from_cache", 0) > before.get("bytes_from_cache", 0),
          "warm pass served from the cache without the origin: %s -> %s" % (before, warm))

    # An expired confirmation is asked again.
    user_dir = os.path.join(cache, "users", str(bed.acc.pw("alice").pw_uid))
    confirmations = os.listdir(user_dir)
    check(len(confirmations) == 1, "alice has one confirmation: %s" % confirmations)

    def age(hours):
        for name in os.listdir(user_dir):
            t = os.stat(os.path.join(user_dir, name)).st_mtime - hours * 3600
            os.utime(os.path.join(user_dir, name), (t, t))

    age(2)
    p, got = bed.copy("alice", url_a, "a3.out")
    check(p.returncode == 0 and got == bed.local("a", FILE_A), "alice after expiry: %s" % p.stderr)
    check(stats(cache).get("access_checks") == warm.get("access_checks") + 1,
          "the expired confirmation was asked again")

    # Alice removed from the authorisation database: refused once her confirmation expires.
    bed.write_authdb(bob="/b")
    origin.restart()  # xrootd re-reads an authdb at most once a minute by itself
    p, got = bed.copy("alice", url_a, "a4.out")
    check(p.returncode == 0 and got == bed.local("a", FILE_A),
          "within shared_reauth alice's confirmation still stands (documented): %s" % p.stderr[-6000:])
    age(2)
    before = stats(cache)
    p, got = bed.copy("alice", url_a, "a5.out")
    check(p.returncode != 0 and got == b"", "removed alice gets no byte (exit %d, %d bytes)"
          % (p.returncode, len(got)))
    check(stats(cache).get("access_refused") == before.get("access_refused") + 1,
          "alice's refusal is counted")

    # Outside the group nothing is readable, and management follows the owner and the group.
    entry = next(p for p, _, _, d in walk_modes(os.path.join(cache, "entries")) if not d)
    p = bed.as_user("carol", ["cat", entry], plugin=False)
    check(p.returncode != 0, "carol cannot read a cached file directly")
    p = bed.as_user("bob", [FERRY, "cache", "pin", url_b, "--dir", cache])
    check(p.returncode != 0 and "owner" in p.stderr, "bob may not pin: %s" % p.stderr)
    p = bed.as_user("bob", [FERRY, "cache", "clear", "--dir", cache])
    check(p.returncode == 0, "bob may clear what is not pinned: %s" % p.stderr)
    p = bed.as_user("alice", [FERRY, "cache", "clear", "--all", "--dir", cache])
    check(p.returncode == 0, "the owner may clear --all: %s" % p.stderr)


def with_bed(test):
    """Runs test(bed, origin) with the accounts, the bed and the protected origin made for it,
    and removed after it whatever happens."""
    if shutil.which("xrdsssadmin") is None:
        raise Skip("xrdsssadmin is not installed")
    accounts = Accounts()
    bed = None
    try:
        bed = Bed(accounts)
        with Origin(bed.data, extra_config=bed.origin_config()) as origin:
            test(bed, origin)
    finally:
        if bed:
            bed.remove()
        accounts.remove()


if __name__ == "__main__":
    run_test({"private": lambda: with_bed(test_private),
              "shared": lambda: with_bed(test_shared)}, TEST)
