#!/usr/bin/env python3
"""The Grafana dashboard (scripts/grafana/ferry-proxy.json) against a real Prometheus (Debian's
`prometheus`) scraping a real proxy: an origin and `ferry proxy run` on 127.0.0.1, a cold and a
warm read through the proxy, `ferry proxy metrics` served over HTTP as the textfile collector
would serve it (a handler runs the command at each scrape), Prometheus scraping every second.
Every query of every panel must return data through Prometheus's HTTP API, and every metric a
query names must be one `ferry proxy metrics` prints.

usage: test_grafana.py FERRY DASHBOARD_JSON
Exit 0 = pass, 1 = fail, 77 = cannot run here (no prometheus, no xrootd, not root).
"""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
from ferry_harness import check, run_test  # noqa: E402
from ferry_testbed import Origin, Skip, wait_for  # noqa: E402
from proxy_testbed import Proxy, free_port  # noqa: E402

FERRY, DASHBOARD = sys.argv[1:3]


def queries(dashboard):
    """(panel title, PromQL) of every target, with Grafana's variables as a test range picks
    them: every instance, a rate window of a few scrapes."""
    out = []
    for panel in dashboard["panels"]:
        for t in panel["targets"]:
            expr = t["expr"].replace("$__rate_interval", "15s").replace('"$instance"', '".*"')
            out.append((panel["title"], expr))
    return out


def prom_query(port, expr):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": expr}))
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            doc = json.load(r)
    except OSError:
        return None
    return doc["data"]["result"] if doc.get("status") == "success" else None


def read(url, n):
    code = ("import sys\nfrom XRootD import client\nf = client.File()\n"
            "st, _ = f.open(sys.argv[1])\nassert st.ok, st\n"
            "for off in range(0, %d, 1 << 20):\n"
            "    st, d = f.read(off, 1 << 20)\n    assert st.ok, st\nf.close()\n" % n)
    p = subprocess.run(["/usr/bin/python3", "-c", code, url], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, XRD_PLUGINCONFDIR="/nonexistent"))
    check(p.returncode == 0, "read through the proxy: %s" % p.stderr[-300:])


def test_dashboard():
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        raise Skip("prometheus is not installed (scripts/install-deps.sh)")
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    ids = [p["id"] for p in dashboard["panels"]]
    check(len(ids) == len(set(ids)) and len(ids) >= 10, "panels with unique ids: %s" % ids)
    for p in dashboard["panels"]:
        check(p["targets"] and p["datasource"]["uid"] == "${datasource}",
              "panel %r has queries on the chosen data source" % p["title"])
    root = tempfile.mkdtemp(prefix="fgraf-")
    os.chmod(root, 0o755)
    data = os.path.join(root, "data")
    os.mkdir(data)
    os.chmod(data, 0o755)
    with open(os.path.join(data, "f.bin"), "wb") as f:
        f.write(os.urandom(8 << 20))
    os.chmod(os.path.join(data, "f.bin"), 0o644)
    cache = os.path.join(root, "cache")
    server = prom = None
    try:
        with Origin(data) as o, \
                Proxy(FERRY, o.url.split("//")[1].rstrip("/"), cache, root, status_ms=200) as px:
            read(px.url_for("f.bin"), 8 << 20)  # cold: misses, origin requests
            read(px.url_for("f.bin"), 8 << 20)  # warm: hits

            def metrics():
                p = subprocess.run([FERRY, "proxy", "metrics", "--dir", cache],
                                   capture_output=True, text=True, timeout=30)
                return p.stdout if p.returncode == 0 else ""

            text = metrics()
            names = set(re.findall(r"^(ferry_[a-z_]+) ", text, re.M))
            for title, expr in queries(dashboard):
                for name in re.findall(r"ferry_[a-z_]+", expr):
                    check(name in names, "%r: %s is a metric of ferry proxy metrics" %
                          (title, name))

            class Exporter(http.server.BaseHTTPRequestHandler):
                def do_GET(self):  # noqa: N802 (http.server's name)
                    body = metrics().encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

                def log_message(self, *args):
                    pass

            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            prom_port = free_port()
            config = os.path.join(root, "prometheus.yml")
            with open(config, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        "scrape_configs:\n  - job_name: ferry-proxy\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % server.server_address[1])
            prom = subprocess.Popen(
                ["timeout", "300", prometheus, "--config.file=" + config,
                 "--storage.tsdb.path=" + os.path.join(root, "tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % prom_port],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(root, "prom.log"), "w"))
            up = wait_for(lambda: prom_query(prom_port, 'up{job="ferry-proxy"} == 1'), 60, 0.2)
            check(bool(up), "Prometheus scrapes the proxy's metrics")
            # A little traffic while Prometheus scrapes: the rates have samples on both sides.
            read(px.url_for("f.bin"), 4 << 20)
            for title, expr in queries(dashboard):
                got = wait_for(lambda e=expr: prom_query(prom_port, e), 30, 0.5)
                check(bool(got), "panel %r: %s returns data" % (title, expr))
            hit = prom_query(prom_port, queries(dashboard)[0][1]) or []
            check(hit and 0 < float(hit[0]["value"][1]) <= 1,
                  "the byte hit ratio is a fraction above 0 after a warm pass: %s" % hit)
    finally:
        if prom is not None:
            prom.terminate()
            try:
                prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait(timeout=30)
        if server is not None:
            server.shutdown()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    run_test({"dashboard": test_dashboard}, "dashboard")
