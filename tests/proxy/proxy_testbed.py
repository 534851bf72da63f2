"""Real ferry site proxies for tests and benchmarks: `ferry proxy run` (xrootd loading
libXrdFerryProxy) on 127.0.0.1, plus an xrootd + cmsd redirector for cluster tests.

    with Proxy(ferry, origin_hostport, cache_dir) as p:      # root://127.0.0.1:PORT/
        url = p.url_for("f.bin")

Every server runs under `timeout` (hard lifetime) with the test bed's bind shim
(FERRY_TB_BINDSHIM, built by CMake) so that it listens on 127.0.0.1 only; it is stopped by
PID when the `with` block ends. Run with /usr/bin/python3.
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
TESTBED = os.path.normpath(os.path.join(HERE, "..", "..", "scripts", "testbed"))


def read_status(cache_dir):
    """DIR/proxy-status.json, or {} before the proxy wrote it."""
    try:
        with open(os.path.join(cache_dir, "proxy-status.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def settled(cache_dir, seconds=60):
    """Waits until the proxy of `cache_dir` is settled: no file open (every close merged its
    counters into DIR/stats), no origin request in flight, no read-ahead queued, and its cache's
    write-behind idle (what it fetched is stored and published, so a following pass hits).
    Asks for a status written after this call (DIR/proxy-status.want, plugin/proxy/service.h),
    so that a status from before the last reads cannot answer. Returns the status, or None
    after `seconds`."""
    token = time.monotonic_ns() % (1 << 62) + 1
    want = os.path.join(cache_dir, "proxy-status.want")
    with open(want + ".tmp", "w") as f:
        f.write("%d\n" % token)
    os.chmod(want + ".tmp", 0o644)
    os.rename(want + ".tmp", want)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        st = read_status(cache_dir)
        if (st.get("status_request") == token and st.get("open_files") == 0
                and st.get("writeback_idle") == 1 and st.get("origin_inflight") == 0
                and st.get("readahead_queued") == 0):
            return st
        time.sleep(0.02)
    # Say what kept it busy: the test that called this reports its own failure.
    print("not settled after %s s; the last status: %s"
          % (seconds, json.dumps(read_status(cache_dir))), file=sys.stderr, flush=True)
    return None


class Skip(Exception):
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, seconds, alive=lambda: True):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not alive():
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def preload(workdir):
    """LD_PRELOAD of a test server: the bind shim, after $FERRY_TB_PRELOAD_FIRST when set (a
    sanitizer runtime, which must come first, for a proxy library built with ASan:
    test_session_fuzz.py --asan)."""
    first = os.environ.get("FERRY_TB_PRELOAD_FIRST", "")
    return " ".join(x for x in (first, bindshim(workdir)) if x)


def bindshim(workdir):
    shim = os.environ.get("FERRY_TB_BINDSHIM")
    if shim and os.path.exists(shim):
        return shim
    out = os.path.join(workdir, "bindshim.so")
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-o", out,
                    os.path.join(TESTBED, "tools", "bindshim.c"), "-ldl"], check=True, timeout=60)
    os.chmod(out, 0o755)
    return out


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


# The xroot client's first 20 bytes (XRootD protocol, "Initial handshake").
XROOT_HANDSHAKE = struct.pack(">iiiii", 0, 0, 0, 4, 2012)


def xroot_login(user, streamid=b"\0\1"):
    """A kXR_login request as `user` (at most 8 bytes), no CGI data."""
    return struct.pack(">2sHi8sBBBBi", streamid, 3007, os.getpid(),
                       user.encode().ljust(8, b"\0")[:8], 0, 0, 5, 0, 0)


def xrootd_answers(port):
    """True when an xrootd answers the handshake on 127.0.0.1:port (`ferry proxy run` holds
    the listening socket, so an open port alone says nothing)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(XROOT_HANDSHAKE)
            s.settimeout(5)
            return len(s.recv(8)) > 0
    except OSError:
        return False


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


class Server:
    """A process started under `timeout` that listens on 127.0.0.1:port."""

    def __init__(self, argv, port, log, env=None, lifetime=900):
        if shutil.which("xrootd") is None:
            raise Skip("xrootd is not installed")
        if os.geteuid() != 0:
            raise Skip("runs as root (xrootd -R xrootd)")
        self.argv, self.port, self.log, self.lifetime = argv, port, log, lifetime
        self.env = env or os.environ.copy()
        self.proc = None

    def start(self, wait=30):
        self.proc = subprocess.Popen(
            ["timeout", "-k", "5", str(self.lifetime)] + self.argv, env=self.env,
            stdin=subprocess.DEVNULL, stdout=open(self.log + ".out", "ab"),
            stderr=subprocess.STDOUT)
        if not wait_port(self.port, wait, lambda: self.proc.poll() is None):
            tail = self.log_tail()
            self.stop()
            raise RuntimeError("server on port %d did not come up: %s" % (self.port, tail))
        return self

    def pids(self):
        """The timeout process's children (the servers; for `ferry proxy run`, the supervisor),
        for signals."""
        return children(self.proc.pid) if self.proc else []

    def tree(self):
        """Every process under the timeout process: `ferry proxy run` and the xrootd (and cmsd)
        it supervises."""
        out, todo = [], self.pids()
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo += children(pid)
        return out

    def kill(self, sig=signal.SIGKILL):
        """sig to the servers. SIGKILL is a machine's crash: every process of the tree dies, and
        the call returns once all are gone (the port is free again)."""
        pids = self.tree() if sig == signal.SIGKILL else self.pids()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if sig == signal.SIGKILL:
            self.proc.wait(timeout=30)
            deadline = time.time() + 30
            while any(os.path.exists("/proc/%d" % pid) and not _zombie(pid) for pid in pids):
                if time.time() > deadline:
                    raise RuntimeError("processes %s outlived SIGKILL" % pids)
                time.sleep(0.01)

    def xrootd_pid(self):
        """The xrootd process serving now (the supervisor's child), or None."""
        for pid in self.tree():
            try:
                with open("/proc/%d/comm" % pid) as f:
                    if f.read().strip() == "xrootd":
                        return pid
            except OSError:
                pass
        return None

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.kill(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.proc.kill()
            self.proc.wait(timeout=10)

    def log_tail(self, n=3000):
        text = ""
        for path in (self.log + ".out", self.log, self.log + ".cmsd"):
            try:
                with open(path, errors="replace") as f:
                    text += "\n--- %s ---\n%s" % (path, f.read()[-n:])
            except OSError:
                pass
        return text

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Proxy(Server):
    """`ferry proxy run` in front of origin HOST:PORT with its cache in cache_dir."""

    def __init__(self, ferry, origin, cache_dir, workdir=None, port=None, extra=(),
                 env=None, lifetime=900, status_ms=None):
        """status_ms: ferry.status_ms, how often the status file is rewritten while it changes
        (None: the proxy's default, 1 s); idle() needs it."""
        self.workdir = workdir or tempfile.mkdtemp(prefix="fpx-")
        self.status_ms = status_ms
        os.chmod(self.workdir, 0o755)
        port = port or free_port()
        self.cache_dir = cache_dir
        self.admin = os.path.join(self.workdir, "admin-%d" % port)
        os.makedirs(self.admin, exist_ok=True)
        log = os.path.join(self.admin, "xrootd.log")  # its directory: writable by xrootd
        env = dict(env or os.environ)
        env["LD_PRELOAD"] = preload(self.workdir)
        env["FERRY_TB_BIND_ADDR"] = "127.0.0.1"
        argv = [ferry, "proxy", "run", "--origin", origin, "--port", str(port), "--dir",
                cache_dir, "--host", "127.0.0.1", "--admin", self.admin, "--log", log,
                *extra]
        if status_ms is not None:
            argv += ["--set", "status_ms=%d" % status_ms]
        super().__init__(argv, port, log, env=env, lifetime=lifetime)
        self.url = "root://127.0.0.1:%d/" % port
        self.start()

    def start(self, wait=30):
        """As Server.start, and then until xrootd itself answers: `ferry proxy run` holds the
        listening socket, so an open port does not yet mean a server behind it."""
        super().start(wait)
        deadline = time.time() + wait
        while not xrootd_answers(self.port):
            if time.time() > deadline or self.proc.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError("xrootd on port %d did not answer: %s" % (self.port, tail))
            time.sleep(0.05)
        return self

    def url_for(self, path):
        return self.url + "/" + path.lstrip("/")

    def status(self):
        """DIR/proxy-status.json, or {} before the proxy wrote it."""
        return read_status(self.cache_dir)

    def idle(self, seconds=60):
        """Waits until the proxy is settled (settled() below): every close before the call has
        completed, and with it the merge of its cache counters (ferry cache stats). Returns the
        status, or None after `seconds`."""
        return settled(self.cache_dir, seconds)


class Redirector(Server):
    """A plain xrootd + cmsd manager: clients open here and are sent to a data server.
    extra_config: more lines for both (a site's security and authorisation)."""

    def __init__(self, workdir, lifetime=900, extra_config=""):
        self.workdir = workdir
        self.port, self.cms_port = free_port(), free_port()
        run = os.path.join(workdir, "redirector-%d" % self.port)
        os.makedirs(os.path.join(run, "admin"), exist_ok=True)
        cfg = os.path.join(run, "redirector.cfg")
        with open(cfg, "w") as f:
            f.write("all.role manager\nall.manager 127.0.0.1:%d\nxrd.port %d\n"
                    "all.export /\nall.adminpath %s/admin\nall.pidpath %s/admin\n"
                    "xrootd.trace emsg login\ncms.delay startup 1 lookup 1\n%s"
                    % (self.cms_port, self.port, run, run, extra_config))
        subprocess.run(["chown", "-R", "xrootd:", run], check=True)
        env = dict(os.environ, LD_PRELOAD=bindshim(workdir), FERRY_TB_BIND_ADDR="127.0.0.1")
        log = os.path.join(run, "xrootd.log")
        # xrootd and cmsd of the manager, each under its own `timeout`.
        self.cmsd = Server(["cmsd", "-R", "xrootd", "-c", cfg, "-l", log + ".cmsd", "-s",
                            run + "/admin/cmsd.pid"], self.cms_port, log + ".cmsd", env=env,
                           lifetime=lifetime)
        super().__init__(["xrootd", "-R", "xrootd", "-c", cfg, "-l", log, "-s",
                          run + "/admin/xrootd.pid"], self.port, log, env=env, lifetime=lifetime)
        self.cmsd.start()
        try:
            self.start()
        except BaseException:
            self.cmsd.stop()
            raise
        self.url = "root://127.0.0.1:%d/" % self.port
        self.manager = "127.0.0.1:%d" % self.cms_port

    def url_for(self, path):
        return self.url + "/" + path.lstrip("/")

    def wait_servers(self, n, seconds=30):
        """Waits until n data servers logged in to the manager's cmsd (its log says so)."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                with open(self.cmsd.log, errors="replace") as f:
                    if sum(1 for line in f if "server." in line and "logged in" in line) >= n:
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def stop(self):
        super().stop()
        self.cmsd.stop()
