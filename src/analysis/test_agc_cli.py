#!/usr/bin/python3
"""`ferry analyze agc` end to end: the same cut flows, histograms and digests read locally,
through a real xrootd origin (root://, no cache), and through the ferry cache plug-in cold (it
fills) and warm (no origin reads); the RNTuple form of the generated events, locally and over
root://, with the TTree form's results; plus the PNG plot and the CLI's exit codes.

Data: the real 2015 ttbar NanoAOD file, nano_dy.root, and a small `ferry gen nanoaod` dataset
with many clusters (so the cluster reads are many vector reads).

usage: test_agc_cli.py FERRY_BINARY PLUGIN_LIBRARY DATA_DIR     (exit 77 when it cannot run)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "testing"))
from ferry_harness import check, finish, skip  # noqa: E402
from ferry_testbed import Origin, Skip  # noqa: E402

FERRY, PLUGIN, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
TTBAR = "nanoAOD_2015_CMS_Open_Data_ttbar.root"
if not os.path.isdir(DATA):
    skip("no data folder " + DATA)
if not os.path.isfile(PLUGIN):
    skip("the cache plug-in is not built: " + PLUGIN)


work = tempfile.mkdtemp(prefix="ferry-agc-cli.")
os.chmod(work, 0o755)
home = os.path.join(work, "home")
confdir = os.path.join(home, ".xrootd", "client.plugins.d")
os.makedirs(confdir)
# A private conf dir: `ferry cache enable` writes here (HOME) and XrdCl reads it
# (XRD_PLUGINCONFDIR), so nothing outside this test sees the plug-in.
ENV = dict(os.environ, HOME=home, XRD_PLUGINCONFDIR=confdir, FERRY_PROGRESS="0")


def ferry(*args, timeout=300):
    p = subprocess.run([FERRY, *args], capture_output=True, text=True, timeout=timeout, env=ENV)
    return p.returncode, p.stdout, p.stderr


def analyze(inputs, *extra):
    rc, out, err = ferry("analyze", "agc", *inputs, "--json", "--threads", "2", "--reads", "3",
                         *extra)
    check(rc == 0, f"analyze {inputs[0]}...: exit {rc} {err.strip()[-300:]}")
    return json.loads(out) if rc == 0 else None


def cache_stats(cache_dir):
    rc, out, err = ferry("cache", "stats", "--dir", cache_dir, "--json")
    check(rc == 0, f"cache stats: exit {rc} {err.strip()}")
    return json.loads(out) if rc == 0 else {}


def same_results(a, b, what, other_units=False):
    """With other_units (the RNTuple form: its clusters are not the TTree's), a histogram's
    mean may differ in the last bit: per-unit sums merge in another grouping. Bin contents,
    entries, integrals and digests may not."""
    if a is None or b is None:
        check(False, f"{what}: missing result")
        return
    check(a["digest"] == b["digest"], f"{what}: digest {a['digest']} != {b['digest']}")
    check(a["cutflow"] == b["cutflow"], f"{what}: cut flows differ")
    check(a["events"] == b["events"], f"{what}: events {a['events']} != {b['events']}")
    for ha, hb in zip(a["histograms"], b["histograms"]):
        if other_units:
            check(abs(ha["mean"] - hb["mean"]) <= 1e-12 * abs(ha["mean"]),
                  f"{what}: histogram {ha['name']} mean {ha['mean']} != {hb['mean']}")
            ha, hb = dict(ha, mean=0), dict(hb, mean=0)
        check(ha == hb, f"{what}: histogram {ha['name']} differs")


try:
    data = os.path.join(work, "data")
    os.makedirs(data)
    for name in (TTBAR, "nano_dy.root"):
        shutil.copy(os.path.join(DATA, name), data)
    rc, _, err = ferry("gen", "nanoaod", "--template", os.path.join(DATA, TTBAR), "--events",
                       "12000", "--files", "2", "--auto-flush", "1500", "--seed", "3", "--out",
                       os.path.join(data, "gen"))
    check(rc == 0, f"ferry gen: exit {rc} {err.strip()}")
    rc, _, err = ferry("gen", "nanoaod", "--template", os.path.join(DATA, TTBAR), "--events",
                       "12000", "--files", "2", "--seed", "3", "--format", "rntuple", "--out",
                       os.path.join(data, "genr"))
    check(rc == 0, f"ferry gen --format rntuple: exit {rc} {err.strip()}")
    for root, dirs, files in os.walk(data):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    rel = [TTBAR, "nano_dy.root", "gen/nanoaod_0000.root", "gen/nanoaod_0001.root"]
    local = [os.path.join(data, r) for r in rel]
    rel_rntuple = ["genr/nanoaod_0000.root", "genr/nanoaod_0001.root"]
    gen_tree = analyze(local[2:])
    same_results(gen_tree, analyze([os.path.join(data, r) for r in rel_rntuple]),
                 "RNTuple vs TTree form, local", other_units=True)

    png = os.path.join(work, "agc.png")
    ref = analyze(local, "--plot", png)
    check(ref is not None and ref["events"] == 200 + 40 + 12000, "event count of the inputs")
    # 6000 events per generated file in clusters of 1500: 4 units each, one vector read each
    # (the ttbar file's baskets are embedded in its TTree record: no read).
    check(ref is not None and ref["io"]["units"] == 1 + 1 + 8 and ref["io"]["vector_reads"] == 9,
          f"one vector read per cluster: {ref and ref['io']}")
    check(ref is not None and ref["cutflow"]["nominal"]["one_btag"] > 0, "some events selected")
    with open(png, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "--plot writes a PNG")

    with Origin(data) as origin:
        urls = [origin.url_for(r) for r in rel]
        direct = analyze(urls)
        same_results(ref, direct, "direct vs local")
        check(direct is not None and direct["io"]["bytes_read"] == ref["io"]["bytes_read"],
              "direct reads the same bytes as local")
        rntuple_direct = analyze([origin.url_for(r) for r in rel_rntuple])
        same_results(gen_tree, rntuple_direct, "RNTuple over root:// vs TTree form, local",
                     other_units=True)
        check(rntuple_direct is not None and rntuple_direct["io"]["vector_reads"] >= 2,
              f"RNTuple clusters read by vector reads: {rntuple_direct and rntuple_direct['io']}")

        cache_dir = os.path.join(work, "cache")
        rc, _, err = ferry("cache", "enable", "--dir", cache_dir, "--lib", PLUGIN)
        check(rc == 0 and os.path.exists(os.path.join(confdir, "ferry-cache.conf")),
              f"cache enable: exit {rc} {err.strip()}")
        cold = analyze(urls)
        after_cold = cache_stats(cache_dir)
        same_results(ref, cold, "cache cold vs local")
        check(after_cold.get("misses", 0) > 0 and after_cold.get("bytes_from_origin", 0) > 0,
              f"the cold pass filled the cache: {after_cold}")
        warm = analyze(urls)
        after_warm = cache_stats(cache_dir)
        same_results(ref, warm, "cache warm vs local")
        check(after_warm.get("hits", 0) > after_cold.get("hits", 0),
              f"the warm pass hit the cache: {after_warm}")
        check(after_warm.get("origin_requests") == after_cold.get("origin_requests"),
              f"the warm pass sent nothing to the origin: {after_cold} -> {after_warm}")
        rc, _, _ = ferry("cache", "disable")
        check(rc == 0, "cache disable")

        rc, _, err = ferry("analyze", "agc", origin.url_for("missing.root"))
        check(rc == 1 and "missing.root" in err, f"missing remote file: exit {rc}, {err.strip()}")

    rc, _, err = ferry("analyze", "agc")
    check(rc == 2, f"no input: exit {rc}")
    rc, _, err = ferry("analyze", "agc", local[0], "--threads", "0")
    check(rc == 2, f"--threads 0: exit {rc}")
    rc, _, err = ferry("analyze", "agc", local[0], "--bogus")
    check(rc == 2, f"unknown option: exit {rc}")
    rc, _, err = ferry("analyze", "nope")
    check(rc == 2, f"unknown analysis: exit {rc}")
    rc, out, err = ferry("analyze", "agc", local[0])
    check(rc == 0 and "digest" in out and "4j1b" in out, f"table output: exit {rc}")
except Skip as e:
    shutil.rmtree(work, ignore_errors=True)
    skip(e)
finally:
    shutil.rmtree(work, ignore_errors=True)

finish()
