"""Python side of the XRootD test bed: real origins (and the WAN namespace) for Python tests.

Run Python tests with /usr/bin/python3: Debian's interpreter can import the XRootD bindings,
a pyenv/venv python3 earlier on PATH cannot. Each helper drives scripts/testbed/*.sh with its
own FERRY_TB_DIR, so the processes it starts are stopped by PID when the `with` block ends.

    from ferry_testbed import Origin, Skip
    with Origin(data_dir) as o:          # root://127.0.0.1:PORT/
        url = o.url_for("nano_dy.root")  # root://127.0.0.1:PORT//nano_dy.root

Skip is raised when the machine cannot run it (no xrootd, not root, no namespaces); a test
script turns it into exit code 77.
"""
import os
import shutil
import subprocess
import tempfile
import time

TESTBED = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "..", "scripts", "testbed"))
SKIP_RC = 77


class Skip(Exception):
    """The test bed cannot run here; the caller should skip (exit 77)."""


def _run(script, *args, env, timeout=120):
    p = subprocess.run(["bash", os.path.join(TESTBED, script), *args], env=env,
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode == SKIP_RC:
        raise Skip(p.stderr.strip())
    if p.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout.strip()


def wait_for(probe, seconds=30, interval=0.05):
    """Polls probe() until it returns a true value and returns it; after `seconds`, returns
    its last (false) value for the caller to report. Tests wait for the event they need, never
    for a fixed time that assumes it happened."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def read_lines(path):
    """The lines of `path`, or none while it does not exist."""
    try:
        with open(path) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


class _StateDir:
    def __init__(self):
        if shutil.which("xrootd") is None:
            raise Skip("xrootd is not installed")
        if os.geteuid() != 0:
            raise Skip("the test bed runs as root (xrootd -R xrootd, namespaces)")
        self.dir = tempfile.mkdtemp(prefix="ferry-tb-py.")
        self.env = dict(os.environ, FERRY_TB_DIR=self.dir)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Origin:
    """A read-only xrootd serving data_dir on 127.0.0.1 (or inside namespace `netns`).
    `extra_config`: xrootd directives appended to its configuration (security, authorisation).
    `name`: tells two origins of one test apart (default: the namespace, or "lo")."""

    def __init__(self, data_dir, netns=None, state=None, extra_config=None, name=None):
        self._own_state = state is None
        self._state = state or _StateDir()
        self._args = ["--dir", data_dir]
        if extra_config:
            path = os.path.join(self._state.dir, "origin-extra.cfg")
            with open(path, "w") as f:
                f.write(extra_config)
            os.chmod(path, 0o644)
            self._args += ["--extra", path]
        self._name = name or netns or "lo"
        if netns:
            self._args += ["--netns", netns]
        self._args += ["--name", self._name]
        self.url = None

    def __enter__(self):
        try:
            self.url = _run("origin.sh", "start", *self._args, env=self._state.env)
        except BaseException:
            self._cleanup()
            raise
        return self

    def url_for(self, relative_path):
        return self.url + "/" + relative_path.lstrip("/")

    def pid(self):
        """The origin's xrootd process (for signals: SIGSTOP makes a stalled origin)."""
        out = _run("origin.sh", "status", "--name", self._name, env=self._state.env)
        return int(out.split(" pid ")[1].split()[0])

    def logins(self):
        """How many client connections logged in so far (xrootd logs each login: a client
        process that shares one connection for all its opens logs in once)."""
        path = os.path.join(self._state.dir, "origin-%s" % self._name, "var", "xrootd.log")
        with open(path, errors="replace") as f:
            return sum(1 for line in f if "XrootdXeq:" in line and line.rstrip().endswith(" login"))

    def restart(self):
        """Stops the server and starts it again on the same port, with its configuration read
        anew (an authorisation database that changed): URLs stay valid."""
        port = self.url.rstrip("/").rsplit(":", 1)[1]
        _run("origin.sh", "stop", "--name", self._name, env=self._state.env)
        self.url = _run("origin.sh", "start", *self._args, "--port", port, env=self._state.env)

    def __exit__(self, *exc):
        self._cleanup()

    def _cleanup(self):
        try:
            _run("origin.sh", "stop", "--name", self._name, env=self._state.env)
        except Exception:  # pylint: disable=broad-except
            pass
        if self._own_state:
            self._state.remove()


class Wan:
    """A namespace behind an emulated WAN link (wan.sh); .origin(data_dir) serves data inside."""

    def __init__(self, name="ftb-py", rtt="40ms", rate="1gbit"):
        self.name, self.rtt, self.rate = name, rtt, rate
        self._state = _StateDir()
        self.addr = None

    def __enter__(self):
        try:
            self.addr = _run("wan.sh", "up", "--name", self.name, "--rtt", self.rtt,
                             "--rate", self.rate, env=self._state.env)
        except BaseException:
            self._state.remove()
            raise
        return self

    def origin(self, data_dir):
        return Origin(data_dir, netns=self.name, state=self._state)

    def __exit__(self, *exc):
        try:
            _run("wan.sh", "down", "--name", self.name, env=self._state.env)
        finally:
            self._state.remove()
