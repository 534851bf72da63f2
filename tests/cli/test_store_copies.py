#!/usr/bin/env python3
"""Column copies (issue 28): a scan of a collection without a copy reads the E blocks and says
so; --build-copies (or column_copies = auto) writes copies that later scans use, with the same
results; copies survive `append` and the new run's copy comes from the next building scan or
`copies --add`; `copies --drop` and `info --json` list and remove them; a corrupt copy is an
error naming it and the scan falls back to the E blocks; a copy build killed with SIGKILL at
random points (20 kills) leaves the store verified with each copy absent or whole; a store
converted with --scan-copy needs and gets no copies.

usage: test_store_copies.py FERRY_BINARY DATA_DIR   (exit 77 when DATA_DIR is absent)
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import Contract, check, finish, skip  # noqa: E402

FERRY, DATA = sys.argv[1], sys.argv[2]
if not os.path.isdir(DATA):
    skip("no data folder " + DATA)
KILLS = int(os.environ.get("FERRY_STORE_KILLS", "20"))
ENV = dict(os.environ, FERRY_PROGRESS="0")
run = Contract(FERRY, env=ENV).run
COLS = ["--columns", "Muon_pt,Jet_eta,MET_pt", "--where", "n(Muon) >= 1", "--json"]


def gen(out, events, seed):
    run("gen", "nanoaod", "--template", os.path.join(DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root"),
        "--events", str(events), "--seed", str(seed), "--out", out)
    return os.path.join(out, "nanoaod_0000.root")


def scan(store, *extra):
    p = run("store", "scan", store, *COLS, *extra)
    return json.loads(p.stdout), p.stderr


def results(doc):
    return doc["events"], doc["selected"], doc["columns"]


def copies(store):
    return json.loads(run("store", "info", store, "--json").stdout)["copies"]


def files(store, suffix):
    return {f: os.stat(os.path.join(store, f)).st_mtime_ns for f in os.listdir(store) if f.endswith(suffix)}


tmp = tempfile.mkdtemp(prefix="ferry-store-copies-")
try:
    a = gen(os.path.join(tmp, "a"), 3000, 1)
    b = gen(os.path.join(tmp, "b"), 3000, 2)
    store = os.path.join(tmp, "store")
    run("store", "convert", a, "--out", store)

    plain, err = scan(store)
    check("Muon_pt has no column copy" in err and "E blocks" in err, f"the scan says it read the E blocks: {err}")
    check(copies(store) == [], "no copies before asking")
    built, err = scan(store, "--build-copies")
    check(results(built) == results(plain), "a building scan gives the same results")
    check(built["copies"]["columns"][0]["copies_built"] == 1, f"copies built: {built['copies']}")
    listed = copies(store)
    check(sorted(c["column"] for c in listed) == ["Jet_eta", "Muon_pt"], f"info lists the copies: {listed}")
    check(all(c["bytes"] > 0 and c["last_scanned"] > 0 for c in listed), f"sizes and times: {listed}")
    shards = files(store, ".shard")
    used, err = scan(store)
    check(results(used) == results(plain), "a scan with copies gives the same results as one without")
    check(used["copies"]["columns"][0]["shards_from_copies"] == 1 and "no column copy" not in err,
          f"the copies were used: {used['copies']} {err}")
    check(used["io"]["bytes"] < plain["io"]["bytes"] / 4, f"copies read less: {used['io']} {plain['io']}")
    check("ok" in run("store", "verify", store).stdout, "verify with copies")

    # Append: copies of the old shard survive; the new run is read from its E blocks until a
    # building scan or copies --add.
    before = {c["file"] for c in copies(store)}
    run("store", "append", store, b)
    check({c["file"] for c in copies(store)} == before, "copies survive append")
    check(all(files(store, ".shard").get(f) == t for f, t in shards.items()), "shards untouched")
    doc, err = scan(store)
    check(doc["copies"]["columns"][0] == {"name": "Muon_pt", "shards_from_copies": 1, "shards_from_blocks": 1,
                                          "copies_built": 0}, f"new run from its E blocks: {doc['copies']}")
    check("in 1 of 2 shards" in err, f"the scan names the gap: {err}")
    add = json.loads(run("store", "copies", store, "--add", "Muon_pt", "--json").stdout)
    check(add["added"] == 1, f"copies --add built the new run's copy: {add}")
    doc2, _ = scan(store)
    check(doc2["copies"]["columns"][0]["shards_from_copies"] == 2 and results(doc2) == results(doc),
          f"both runs from copies, same results: {doc2['copies']}")
    run("store", "scan", store, *COLS, "--build-copies")  # Jet_eta of the new run too
    check(len(copies(store)) == 4, f"four copies: {copies(store)}")

    # Bad requests: a scalar, an unknown column; --drop.
    p = run("store", "copies", store, "--add", "MET_pt", expect_rc=2)
    check("not a collection column" in p.stderr, f"a scalar refused: {p.stderr.strip()}")
    run("store", "copies", store, "--add", "Nope_pt", expect_rc=2)
    drop = json.loads(run("store", "copies", store, "--drop", "Jet_eta", "--json").stdout)
    check(len(drop["removed"]) == 2 and len(copies(store)) == 2, f"drop: {drop}")
    check(len(files(store, ".copy")) == 2, f"dropped files removed: {files(store, '.copy')}")

    # A corrupt copy: an error naming it, the E blocks read instead, the same results.
    victim = copies(store)[0]["file"]
    path = os.path.join(store, victim)
    with open(path, "r+b") as f:
        f.seek(80)
        byte = f.read(1)
        f.seek(80)
        f.write(bytes([byte[0] ^ 0x41]))
    doc3, err = scan(store)
    check(results(doc3) == results(doc2), "a corrupt copy changes no result")
    check("error" in err and victim in err and "E blocks" in err, f"the corrupt copy is named: {err}")
    p = run("store", "verify", store, expect_rc=1)
    check(victim in p.stderr, f"verify names the corrupt copy: {p.stderr.strip()}")
    run("store", "scan", store, *COLS, "--build-copies")  # drops it
    run("store", "scan", store, *COLS, "--build-copies")  # builds it again
    check("ok" in run("store", "verify", store).stdout and len(copies(store)) == 4, "rebuilt")

    # column_copies = auto in the store's conf; a bad conf is an error naming its line.
    with open(os.path.join(store, "store.conf"), "w") as f:
        f.write("column_copies = always\n")
    p = run("store", "scan", store, *COLS, expect_rc=1)
    check("store.conf" in p.stderr and "line 1" in p.stderr, f"bad conf named: {p.stderr.strip()}")
    with open(os.path.join(store, "store.conf"), "w") as f:
        f.write("column_copies = auto\n")
    run("store", "scan", store, "--columns", "Electron_pt", "--json")
    check(any(c["column"] == "Electron_pt" for c in copies(store)), "auto built the Electron_pt copies")
    os.remove(os.path.join(store, "store.conf"))

    # --scan-copy at conversion still means every collection column-major (J chunks): such a
    # store reads collections from them, and copies are neither needed nor built.
    sc = os.path.join(tmp, "scancopy")
    run("store", "convert", a, "--out", sc, "--scan-copy")
    doc5, err = scan(sc, "--build-copies")
    check(results(doc5) == results(plain) and "no column copy" not in err and copies(sc) == [],
          f"a --scan-copy store needs no copies: {doc5['copies']} {err}")
    p = run("store", "copies", sc, "--add", "Muon_pt", expect_rc=1)
    check("--scan-copy" in p.stderr, f"copies --add on a --scan-copy store: {p.stderr.strip()}")

    # SIGKILL at random points of a copy build: the store verifies, every copy absent or whole.
    run("store", "copies", store, "--drop", "Muon_pt,Jet_eta,Electron_pt")
    pre = os.path.join(tmp, "pre")
    shutil.copytree(store, pre)
    add_cols = "Jet_pt,Jet_eta,Jet_phi,Jet_mass,Muon_pt,Muon_eta"
    t0 = time.monotonic()
    run("store", "copies", store, "--add", add_cols)
    full = time.monotonic() - t0
    shutil.rmtree(store)
    shutil.copytree(pre, store)
    rnd = random.Random(28)
    killed = 0
    for k in range(3 * KILLS):
        if killed == KILLS:
            break
        proc = subprocess.Popen([FERRY, "store", "copies", store, "--add", add_cols], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=ENV)
        time.sleep(rnd.uniform(0, full))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        run("store", "verify", store, "--json")  # exit 0: every shard and named copy checks out
        n = len(copies(store))
        check(n in (0, 12), f"try {k}: copies absent or all published: {n}")
        doc4, _ = scan(store)
        check(results(doc4) == results(doc2), f"try {k}: same results")
        if n:
            shutil.rmtree(store)
            shutil.copytree(pre, store)
    print(f"{killed} copy builds killed (a full build takes {full:.2f} s)")
    check(killed == KILLS, f"{KILLS} builds killed ({killed})")
    run("store", "copies", store, "--add", add_cols)
    check(len(files(store, ".copy")) == 12, f"no leftovers of killed builds: {sorted(files(store, '.copy'))}")
    check("ok" in run("store", "verify", store).stdout, "verify at the end")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

finish()
