#!/usr/bin/env python3
"""The README's quick starts, run as written.

Every fenced ```sh block under "## Quick starts" in README.md is preceded by a marker
`<!-- readme-test: NAME ... -->`. The blocks of one NAME are joined, in README order, into one
bash script (`set -euo pipefail`) run from the top of the clone, so the commands a newcomer
copies are the commands that are tested. Only what must differ on this machine comes from the
environment, through the variables the README itself uses: ORIGIN (a local origin serving the
repository's data/ on 127.0.0.1, tests/testing/ferry_testbed.py), WORK (a temp dir), PATH (the
build's ferry first) and the ports PROXY_PORT, HTTPS_PORT, XFER_PORT. Markers:
  setup   what the test does itself (the origin, WORK, PATH): checked, not run;
  skip    not run, with the reason in the marker (root-only setup such as systemd);
  other   a quick start, run as `usage: test_readme.py ... NAME`.

usage: test_readme.py FERRY REPO NAME     NAME: shape | units | analysis | site | picker | mover
Exit 77 (skip) when the machine cannot run a local origin (no xrootd, not root).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import check, finish  # noqa: E402
from ferry_testbed import SKIP_RC, Origin, Skip  # noqa: E402

FERRY, REPO, NAME = sys.argv[1:4]
README = os.path.join(REPO, "README.md")
MARKER = re.compile(r"^<!-- readme-test: (\S+)(.*?)-->\s*$")
SCRIPT_SECONDS = int(os.environ.get("FERRY_README_SECONDS", 150))  # each quick start; the whole test stays under ~3 minutes


def blocks():
    """[(marker name, marker text, block text)] of the quick starts' ```sh blocks, and the
    ```sh blocks of that section that carry no marker (line numbers)."""
    lines = open(README).read().split("\n")
    out, unmarked, in_section, pending = [], [], False, None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            in_section = line.strip() == "## Quick starts"
        m = MARKER.match(line)
        if m:
            pending = (m.group(1), m.group(2).strip())
        elif line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if line.strip() == "```sh" and in_section:
                if pending:
                    out.append((pending[0], pending[1], "\n".join(lines[i + 1:j])))
                else:
                    unmarked.append(i + 1)
            pending = None
            i = j
        elif line.strip():
            pending = None
        i += 1
    return out, unmarked


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ferry_processes_under(path):
    """PIDs of processes whose command line names `path` (a background replica builder the
    quick start's passes started in its own session), other than this process."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(path.encode() in a for a in argv):
            pids.append(int(d))
    return pids


def run_quickstart(name, script, env, work):
    """Runs the script in its own process group; returns (rc, output). Processes it left
    behind (a background replica build) are waited for, then stopped by PID."""
    path = os.path.join(work, "quickstart-%s.sh" % name)
    with open(path, "w") as f:
        f.write("set -euo pipefail\nset -x\n" + script + "\n")
    proc = subprocess.Popen(["bash", path], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=SCRIPT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out += "\n(timed out after %d s)" % SCRIPT_SECONDS
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # what the script left in its group
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 30
    while ferry_processes_under(work) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in ferry_processes_under(work):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.returncode, out


def check_shape():
    """The README opens with the two commands, names CI's test command, stays short, and every
    relative link in it resolves."""
    text = open(README).read()
    lines = text.split("\n")
    check(len(lines) <= 320, "README.md is short: %d lines" % len(lines))
    sections = [l for l in lines if l.startswith("## ")]
    check(sections and sections[0] == "## Two commands", "first section: %s" % sections[:1])
    for cmd in ("make demo", "make test"):
        check(cmd in "\n".join(lines[:20]), "the opening names `%s`" % cmd)
    ci = open(os.path.join(REPO, ".ci", "run")).read()
    check("make test" in ci, ".ci/run runs make test")
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        check(os.path.exists(os.path.join(REPO, target)), "README link %s exists" % target)
    for doc in sorted(os.listdir(os.path.join(REPO, "docs"))):
        if not doc.endswith(".md"):
            continue
        body = open(os.path.join(REPO, "docs", doc)).read()
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", body):
            check(os.path.exists(os.path.join(REPO, "docs", target)),
                  "docs/%s link %s exists" % (doc, target))
    found, unmarked = blocks()
    check(not unmarked, "every ```sh block of the quick starts has a readme-test marker "
          "(lines %s)" % unmarked)
    names = {n for n, _, _ in found}
    for n in ("setup", "analysis", "site", "picker", "mover", "skip"):
        check(n in names, "a quick start block marked %s" % n)
    setup = "\n".join(b for n, _, b in found if n == "setup")
    for var in ("PATH=", "WORK=", "ORIGIN="):
        check(var in setup, "the setup block sets %s, as the test does" % var)
    for n, why, _ in found:
        if n == "skip":
            check(bool(why), "a skipped block says why")


def check_units():
    """The systemd units the site admin installs: `systemd-analyze verify` on an instance of
    each, with the binary path they name pointed at this build (it is /usr/bin/ferry
    once installed)."""
    if shutil.which("systemd-analyze") is None:
        print("SKIP: systemd-analyze is not installed")
        sys.exit(SKIP_RC)
    units = os.path.join(REPO, "scripts", "systemd")
    with tempfile.TemporaryDirectory() as d:
        env_file = os.path.join(d, "proxy-disk1.env")
        shutil.copy(os.path.join(units, "proxy.env.example"), env_file)
        made = []
        for unit in ("ferry-proxy@.service", "ferry-proxy-metrics@.service",
                     "ferry-proxy-metrics@.timer"):
            body = open(os.path.join(units, unit)).read()
            body = body.replace("/usr/bin/ferry", os.path.abspath(FERRY))
            body = body.replace("/etc/ferry/proxy-%i.env", env_file)
            path = os.path.join(d, unit.replace("@.", "@disk1."))
            with open(path, "w") as f:
                f.write(body)
            made.append(path)
        p = subprocess.run(["systemd-analyze", "verify", "--man=no", *made], capture_output=True,
                           text=True, timeout=60, cwd=d)
        # Only lines about our units count: verify also reports unrelated units of the host.
        ours = [l for l in (p.stdout + p.stderr).splitlines() if "ferry-proxy" in l]
        check(p.returncode == 0 and not ours,
              "systemd-analyze verify of the units: rc %d\n%s" % (p.returncode, "\n".join(ours)))


def check_quickstart(name):
    found, _ = blocks()
    script = "\n".join(b for n, _, b in found if n == name)
    check(bool(script), "README has blocks marked %s" % name)
    if not script:
        return
    shim = os.environ.get("FERRY_TB_BINDSHIM", "")
    if name == "site" and not check(os.path.exists(shim), "the bind shim is built: %r" % shim):
        return  # the proxy would listen on every address
    work = tempfile.mkdtemp(prefix="ferry-readme-%s." % name)
    os.chmod(work, 0o755)  # as the setup block does: xrootd's account reaches the proxy's files
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FERRY_CACHE", "XRD_", "XrdSec"))}
    env.update(WORK=work, PROXY_PORT=str(free_port()), HTTPS_PORT=str(free_port()),
               XFER_PORT=str(free_port()), FERRY_TB_DIR=os.path.join(work, "testbed"),
               PATH=os.path.dirname(os.path.abspath(FERRY)) + ":/usr/bin:/bin:" + env["PATH"])
    if name == "site":  # every listener on 127.0.0.1 only
        env.update(LD_PRELOAD=shim, FERRY_TB_BIND_ADDR="127.0.0.1")
    try:
        if re.search(r"\$\{?ORIGIN", script):
            with Origin(os.path.join(REPO, "data")) as origin:
                env["ORIGIN"] = origin.url.rstrip("/")
                rc, out = run_quickstart(name, script, env, work)
        else:
            rc, out = run_quickstart(name, script, env, work)
        print(out[-20000:])
        check(rc == 0, "the %s quick start runs as written (exit %s)" % (name, rc))
        if rc == 0:
            check_outcome(name, env, work, out)
    finally:
        if os.environ.get("FERRY_README_KEEP"):  # for a look at what the quick start made
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def check_outcome(name, env, work, out):
    """What the quick start promises, beyond its commands' exit codes."""
    if name == "analysis":
        cache = ["--dir", os.path.join(work, "cache"), "--json"]
        p = subprocess.run([FERRY, "cache", "stats", *cache], env=env, capture_output=True,
                           text=True, timeout=60)
        stats = json.loads(p.stdout or "{}")
        check(stats.get("hits", 0) > 0 and stats.get("bytes_from_cache", 0) > 0,
              "the warm passes read from the cache: %s" % p.stdout[:400])
        check(stats.get("replica_reads", 0) > 0, "the replica served reads: %s" % p.stdout[:400])
        p = subprocess.run([FERRY, "cache", "replica", "status", *cache], env=env,
                           capture_output=True, text=True, timeout=60)
        files = json.loads(p.stdout or "{}").get("files", [])
        check(any(f.get("state") == "built" for f in files),
              "a replica is built: %s" % p.stdout[:400])
        check(out.count("python XRootD read") >= 2, "the python job ran twice")
    elif name == "site":
        check("HTTPS 200" in out, "the anonymous HTTPS GET of /rntuple is served")
        m = re.search(r"^ferry_cache_bytes_from_origin_total (\d+)", out, re.M)
        check(m is not None and int(m.group(1)) > 0, "the metrics count the origin's bytes")
        check(filecmp(os.path.join(REPO, "data", "root", "nano_dy.root"),
                      os.path.join(work, "site", "copy.root")), "xrdcp through the proxy")
    elif name == "picker":
        check(os.path.getsize(os.path.join(work, "picked.root")) > 0, "picked.root written")
        events = open(os.path.join(work, "events.txt")).read().split()
        check(len(events) == 3, "three events picked: %s" % events)
    elif name == "mover":
        check("arrived whole" in out, "the file arrived whole")


def filecmp(a, b):
    try:
        return open(a, "rb").read() == open(b, "rb").read()
    except OSError:
        return False


try:
    if NAME == "shape":
        check_shape()
    elif NAME == "units":
        check_units()
    else:
        check_quickstart(NAME)
except Skip as e:
    print("SKIP:", e)
    sys.exit(SKIP_RC)
finish()
