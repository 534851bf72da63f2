#!/usr/bin/env python3
"""ferry as a site installs it: `cmake --install` into a temporary prefix, and the Debian package.

usage: test_install.py BUILD_DIR SOURCE_DIR TEST
  TEST: prefix | package
- prefix: install, then run the installed ferry from a folder with nothing beside it: its
  version, `gen` with its default template, `cache enable --conf-dir` (the conf names the
  installed plug-in), a root:// read through that plug-in from a real xrootd origin, the man
  pages and the completion.
- package: `cpack -G DEB` in the build, and the package's contents and dependencies checked.
Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BUILD, SOURCE, TEST = sys.argv[1:4]
sys.path.insert(0, os.path.join(SOURCE, "tests", "testing"))
from ferry_harness import PY, check, run_test  # noqa: E402
from ferry_testbed import Origin, Skip  # noqa: E402


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)


def test_prefix():
    root = tempfile.mkdtemp(prefix="ferry-install-")
    os.chmod(root, 0o755)
    try:
        prefix = os.path.join(root, "prefix")
        p = run(["cmake", "--install", BUILD, "--prefix", prefix])
        check(p.returncode == 0, "cmake --install: %s" % p.stderr[-500:])
        ferry = os.path.join(prefix, "bin", "ferry")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FERRY_", "XRD_"))}
        # The installed patched libraries keep a stock xrootd alive through the requests that
        # stop the system's (patches/xrootd/README.md).
        patched = os.path.join(prefix, "lib", "ferry", "xrootd")
        for fault in ("auth", "propfind"):
            r = run([PY, os.path.join(SOURCE, "patches", "xrootd", "reproduce.py"), "--fault",
                     fault, "--lib-dir", patched, "--json"])
            check(r.returncode == 0 and json.loads(r.stdout.splitlines()[-1])["survived"],
                  "xrootd with the installed patched libraries survives the %s request: %s %s"
                  % (fault, r.stdout[-300:], r.stderr[-300:]))
        work = os.path.join(root, "work")  # nothing beside it: no source tree, no data
        os.mkdir(work)
        v = run([ferry, "--version"], cwd=work, env=env)
        check(v.returncode == 0 and re.match(r"ferry \d+\.\d+\.\d+", v.stdout),
              "version: %r" % v.stdout)
        g = run([ferry, "gen", "nanoaod", "--events", "300", "--out", "gen", "--json"], cwd=work,
                env=env)
        check(g.returncode == 0, "gen with its default template: %s" % g.stderr[-400:])
        if g.returncode == 0:
            report = json.loads(g.stdout)
            check(report["template"].startswith(os.path.join(prefix, "share", "ferry")),
                  "the installed template: %s" % report["template"])
        conf = os.path.join(root, "conf")
        e = run([ferry, "cache", "enable", "--dir", os.path.join(root, "cache"), "--conf-dir",
                 conf], cwd=work, env=env)
        check(e.returncode == 0, "cache enable: %s" % e.stderr[-400:])
        text = open(os.path.join(conf, "ferry-cache.conf")).read()
        plugin = os.path.join(prefix, "lib", "ferry", "libXrdClFerry-5.so")
        check("lib = %s" % plugin in text, "the conf names the installed plug-in:\n%s" % text)
        data = os.path.join(root, "data")
        os.mkdir(data)
        os.chmod(data, 0o755)
        shutil.copy(os.path.join(SOURCE, "data", "root", "uproot-HZZ-zlib.root"), data)
        os.chmod(os.path.join(data, "uproot-HZZ-zlib.root"), 0o644)
        with Origin(data) as o:
            read = run([ferry, "root", "dump", o.url_for("uproot-HZZ-zlib.root"), "--branch",
                        "NMuon", "--json"], cwd=work, env=dict(env, XRD_PLUGINCONFDIR=conf))
            check(read.returncode == 0 and '"NMuon"' in read.stdout,
                  "root:// read through the installed module and plug-in: %s" % read.stderr[-400:])
            st = run([ferry, "cache", "stats", "--dir", os.path.join(root, "cache"), "--json"],
                     cwd=work, env=env)
            check(st.returncode == 0 and json.loads(st.stdout)["entries"] == 1,
                  "the read went through the installed plug-in: %s" % st.stdout)
        for name in ["ferry.1", "ferry-cache.1", "ferry-store.1", "ferry-send.1"]:
            check(os.path.isfile(os.path.join(prefix, "share", "man", "man1", name)), "man " + name)
        comp = os.path.join(prefix, "share", "bash-completion", "completions", "ferry")
        check(os.path.isfile(comp) and "complete -F _ferry ferry" in open(comp).read(),
              "bash completion")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_package():
    if shutil.which("cpack") is None or shutil.which("dpkg-shlibdeps") is None:
        raise Skip("cpack or dpkg-shlibdeps missing (scripts/install-deps.sh installs dpkg-dev)")
    p = run(["cpack", "-G", "DEB"], cwd=BUILD)
    check(p.returncode == 0, "cpack: %s %s" % (p.stdout[-400:], p.stderr[-400:]))
    debs = [f for f in os.listdir(os.path.join(BUILD, "package")) if f.endswith(".deb")]
    check(len(debs) == 1, "one package: %s" % debs)
    if not debs:
        return
    deb = os.path.join(BUILD, "package", debs[0])
    contents = run(["dpkg-deb", "-c", deb]).stdout
    for path in ["./usr/bin/ferry", "./usr/lib/ferry/libXrdClFerry-5.so",
                 "./usr/lib/ferry/libXrdFerryProxy-5.so", "./usr/lib/ferry/libferry_xrootd.so",
                 "./usr/share/ferry/nanoAOD_2015_CMS_Open_Data_ttbar.root",
                 "./usr/share/man/man1/ferry-cache.1", "./usr/share/man/man1/ferry.1",
                 "./usr/share/bash-completion/completions/ferry",
                 "./usr/share/doc/ferry/format/replica.md",
                 "./usr/lib/ferry/libferry_xrd_guard.so",
                 "./usr/lib/ferry/xrootd/libXrdUtils.so.3",
                 "./usr/lib/ferry/xrootd/libXrdServer.so.3",
                 "./usr/lib/ferry/xrootd/libXrdHttpUtils.so.2",
                 "./usr/lib/ferry/xrootd/patched.info"]:
        check(path in contents, "package holds " + path)
    # The systemd units name the binary where the package puts it.
    for unit in ("ferry-proxy@.service", "ferry-proxy-metrics@.service"):
        text = open(os.path.join(SOURCE, "scripts", "systemd", unit)).read()
        check("ExecStart=/usr/bin/ferry " in text, "%s runs the packaged /usr/bin/ferry" % unit)
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    for lib in ["libxrdcl", "libxrdutils", "libzstd", "liblzma", "libc6"]:
        check(lib in depends, "depends on %s: %s" % (lib, depends.strip()))


if __name__ == "__main__":
    run_test({"prefix": test_prefix, "package": test_package}, TEST)
