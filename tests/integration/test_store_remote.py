#!/usr/bin/env python3
"""`ferry store info|get|scan root://...` (issue 15): stores served by a real xrootd origin on
127.0.0.1 give the results of the local store, direct and through the ferry cache plug-in; a
pick costs a bounded number of requests per shard, whatever the number of events; a scan reads
in vector reads; a corrupt remote chunk is an error naming it; column copies (issue 28) are
used remotely and never written there.

usage: test_store_remote.py FERRY_BINARY PLUGIN_LIB DATA_DIR   (exit 77 when it cannot run)
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import Contract, check, finish, skip  # noqa: E402
from ferry_testbed import Origin, Skip  # noqa: E402

FERRY, PLUGIN, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
if not os.path.isdir(DATA):
    skip("no data folder " + DATA)

ENV = dict(os.environ, FERRY_PROGRESS="0", XRD_CONNECTIONRETRY="1", XRD_REQUESTTIMEOUT="20")
ENV.pop("XRD_PLUGIN", None)
ENV.pop("XRD_PLUGINCONFDIR", None)
ferry = Contract(FERRY, timeout=120, env=ENV).run


def strip(doc):
    """A JSON document without what differs between two runs of the same query."""
    doc = dict(doc)
    for k in ("io", "seconds", "dir"):
        doc.pop(k, None)
    if isinstance(doc.get("copies"), list):  # info: last_scanned is a local file time
        doc["copies"] = [{k: v for k, v in c.items() if k != "last_scanned"} for c in doc["copies"]]
    return doc


def ids_of(root_file):
    c = json.loads(ferry("root", "dump", root_file, "--tree", "Events", "--json", "--branch", "run", "--branch",
                         "luminosityBlock", "--branch", "event").stdout)["branches"]
    return [f"{a}:{b}:{e}" for a, b, e in zip(c["run"], c["luminosityBlock"], c["event"])]


def shard_files(store):
    return sorted(f for f in os.listdir(store) if f.endswith(".shard"))


def first_e_block(path):
    """(offset, size) of the first E block of a version-3 shard (header section 5: E table)."""
    with open(path, "rb") as f:
        head = f.read(4096)
        off, size = struct.unpack_from("<QQ", head, 80 + 16 * 5)
        f.seek(off)
        b_off, b_size, _ = struct.unpack("<QII", f.read(16))
        return b_off, b_size


def first_s_chunk(path):
    with open(path, "rb") as f:
        head = f.read(4096)
        off, _ = struct.unpack_from("<QQ", head, 80 + 16 * 4)
        f.seek(off)
        c_off, c_size, _ = struct.unpack("<QII", f.read(16))
        return c_off, c_size


tmp = tempfile.mkdtemp(prefix="ferry-store-remote-")
try:
    os.chmod(tmp, 0o755)
    data = os.path.join(tmp, "data")
    os.mkdir(data)
    os.chmod(data, 0o755)
    # Two real files and a two-run generated store (convert, then append).
    stores = {}
    for name in ("nano_dy.root", "nanoAOD_2015_CMS_Open_Data_ttbar.root"):
        out = os.path.join(data, name.split(".")[0])
        ferry("store", "convert", os.path.join(DATA, name), "--out", out)
        stores[name] = out
    tpl = os.path.join(DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root")
    gens = []
    for seed in (1, 2):
        g = os.path.join(tmp, f"gen{seed}")
        ferry("gen", "nanoaod", "--template", tpl, "--events", "2000", "--seed", str(seed), "--out", g)
        gens.append(os.path.join(g, "nanoaod_0000.root"))
    two = os.path.join(data, "two")
    ferry("store", "convert", gens[0], "--out", two)
    ferry("store", "append", two, gens[1])
    stores["two"] = two
    # A store with column copies of Jet_pt (both shards) and Muon_pt (the first only).
    copied = os.path.join(data, "copied")
    ferry("store", "convert", gens[0], "--out", copied)
    ferry("store", "copies", copied, "--add", "Muon_pt")
    ferry("store", "append", copied, gens[1])
    ferry("store", "copies", copied, "--add", "Jet_pt")
    stores["copied"] = copied
    for root, dirs, files in os.walk(data):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)

    # The ferry cache plug-in, for the second set of passes.
    cache = os.path.join(tmp, "cache")
    conf = os.path.join(tmp, "conf")
    os.mkdir(conf)
    with open(os.path.join(conf, "ferry.conf"), "w") as f:
        f.write(f"url = root://*\nlib = {PLUGIN}\nenable = true\ndir = {cache}\npublish_ms = 50\n")
    cached_env = dict(ENV, XRD_PLUGINCONFDIR=conf)

    with Origin(data) as origin:
        for name, local in stores.items():
            url = origin.url_for(os.path.basename(local))
            info_l = strip(json.loads(ferry("store", "info", local, "--json").stdout))
            scan_args = ["--columns", "MET_pt,Jet_pt,nMuon", "--where", "MET_pt > 20 || n(Muon) >= 1", "--json"]
            scan_l = json.loads(ferry("store", "scan", local, *scan_args).stdout)
            # Every 7th event of the store in one get: equal values, bounded requests.
            sources = gens if name in ("two", "copied") else [os.path.join(DATA, name)]
            ev_ids = sum((ids_of(f) for f in sources), [])
            lst = os.path.join(tmp, "ids.txt")
            with open(lst, "w") as f:
                f.write("\n".join(ev_ids[::7]) + "\n")
            get_l = json.loads(ferry("store", "get", local, "--events-file", lst, "--json").stdout)
            for label, env in (("direct", ENV), ("cache cold", cached_env), ("cache warm", cached_env)):
                info_r = strip(json.loads(ferry("store", "info", url, "--json", env=env).stdout))
                check(info_r == info_l, f"{name} {label}: info differs")
                get_r = json.loads(ferry("store", "get", url, "--events-file", lst, "--json", env=env).stdout)
                check(get_r["events"] == get_l["events"], f"{name} {label}: get differs")
                shards = len(info_l["run_table"])
                # manifest + per shard: header, lumi table with event numbers, records, E blocks.
                check(get_r["io"]["requests"] <= 1 + 4 * shards,
                      f"{name} {label}: {get_r['io']['requests']} requests for {len(ev_ids[::7])} events in {shards} shards")
                scan_r = json.loads(ferry("store", "scan", url, *scan_args, env=env).stdout)
                check(strip(scan_r) == strip(scan_l), f"{name} {label}: scan differs")
                check(scan_r["io"]["requests"] < scan_r["io"]["reads"], f"{name} {label}: scan in vector reads {scan_r['io']}")
        st = json.loads(subprocess.run([FERRY, "cache", "stats", "--dir", cache, "--json"], capture_output=True,
                                       text=True, env=ENV).stdout)
        check(st["hits"] > 0 and st["bytes_from_cache"] > 0, f"the cache served the warm passes: {st}")

        # Column copies remotely: used where they exist, never written (--build-copies says why).
        url = origin.url_for("copied")
        names_before = sorted(os.listdir(copied))
        args = ["--columns", "Jet_pt,Muon_pt", "--json"]
        local_scan = json.loads(ferry("store", "scan", copied, *args).stdout)
        p = ferry("store", "scan", url, *args, "--build-copies")
        remote_scan = json.loads(p.stdout)
        check(remote_scan["columns"] == local_scan["columns"], "remote scan with copies gives the local results")
        cols = {c["name"]: c for c in remote_scan["copies"]["columns"]}
        check(cols["Jet_pt"]["shards_from_copies"] == 2 and cols["Muon_pt"]["shards_from_copies"] == 1
              and cols["Muon_pt"]["copies_built"] == 0, f"remote copies used, none built: {cols}")
        check("remote" in remote_scan["copies"]["not_built"] and "not built" in p.stderr,
              f"the remote scan says why it built nothing: {remote_scan['copies']} {p.stderr.strip()}")
        check(sorted(os.listdir(copied)) == names_before, "nothing written to the remote store")
        listed = json.loads(ferry("store", "copies", url, "--json").stdout)["copies"]
        check(len(listed) == 3, f"copies --list of a root:// store: {listed}")
        p = ferry("store", "copies", url, "--add", "Jet_eta", expect_rc=1)
        check("remote" in p.stderr, f"copies --add refused remotely: {p.stderr.strip()}")

        # A corrupt remote chunk: an error naming it (no cache, so the origin's bytes are read).
        bad = os.path.join(data, "bad")
        shutil.copytree(stores["nano_dy.root"], bad)
        os.chmod(bad, 0o755)
        shard = os.path.join(bad, shard_files(bad)[0])
        off, size = first_e_block(shard)
        with open(shard, "r+b") as f:
            f.seek(off + size // 2)
            byte = f.read(1)
            f.seek(off + size // 2)
            f.write(bytes([byte[0] ^ 0x20]))
        url = origin.url_for("bad")
        p = ferry("store", "get", url, "--event", "1:13889:3749778", expect_rc=1)
        check("E block" in p.stderr and shard_files(bad)[0] in p.stderr, f"corrupt E block named: {p.stderr.strip()}")
        off, size = first_s_chunk(shard)
        with open(shard, "r+b") as f:
            f.seek(off + size // 2)
            byte = f.read(1)
            f.seek(off + size // 2)
            f.write(bytes([byte[0] ^ 0x20]))
        p = ferry("store", "scan", url, "--columns", "run", expect_rc=1)
        check("S chunk" in p.stderr and "checksum" in p.stderr, f"corrupt S chunk named: {p.stderr.strip()}")
except Skip as e:
    skip(e)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

finish()
