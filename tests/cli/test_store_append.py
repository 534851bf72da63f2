#!/usr/bin/env python3
"""`ferry store append` (issue 15): new runs become new shards and existing shards stay
untouched; a new event of an existing run is an error naming it unless --replace-run; the
manifest is published atomically, so an append killed with SIGKILL at any point leaves the
previous store intact (20 kills at random points, the store verified after each).

usage: test_store_append.py FERRY_BINARY DATA_DIR   (exit 77 when DATA_DIR is absent)
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
run = Contract(FERRY, env=dict(os.environ, FERRY_PROGRESS="0")).run


def gen(out, events, seed):
    run("gen", "nanoaod", "--template", os.path.join(DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root"),
        "--events", str(events), "--seed", str(seed), "--out", out)
    return os.path.join(out, "nanoaod_0000.root")


def ids_of(path):
    d = json.loads(run("root", "dump", path, "--json", "--branch", "run", "--branch", "luminosityBlock",
                       "--branch", "event").stdout)["branches"]
    return [f"{r}:{l}:{e}" for r, l, e in zip(d["run"], d["luminosityBlock"], d["event"])]


def shards(store):
    return {f: os.stat(os.path.join(store, f)).st_mtime_ns for f in os.listdir(store) if f.endswith(".shard")}


tmp = tempfile.mkdtemp(prefix="ferry-store-append-")
try:
    a = gen(os.path.join(tmp, "a"), 3000, 1)
    b = gen(os.path.join(tmp, "b"), 3000, 2)
    a_small = gen(os.path.join(tmp, "a2"), 1000, 1)  # the first 1000 events of a's run
    ids_a, ids_b, ids_a2 = ids_of(a), ids_of(b), ids_of(a_small)
    run_a, run_b = {i.split(":")[0] for i in ids_a}, {i.split(":")[0] for i in ids_b}
    check(run_a.isdisjoint(run_b), f"the two datasets have different runs {run_a} {run_b}")

    store = os.path.join(tmp, "store")
    run("store", "convert", a, "--out", store)
    before = shards(store)
    p = run("store", "append", store, b, "--json")
    rep = json.loads(p.stdout)
    check(rep["events"] == 6000 and rep["events_written"] == 3000, f"append report {rep}")
    check(sorted(map(str, rep["new_runs"])) == sorted(run_b), f"new runs {rep['new_runs']}")
    after = shards(store)
    check(all(after.get(f) == t for f, t in before.items()), "existing shards untouched by append")
    check(len(after) == len(before) + len(run_b), f"one new shard per new run: {sorted(after)}")
    # get events of both datasets, equal to the ROOT files' values.
    for src, ids in ((a, ids_a), (b, ids_b)):
        pick = [ids[7], ids[-1], ids[1234]]
        got = json.loads(run("store", "get", store, *sum((["--event", i] for i in pick), []), "--json",
                             "--columns", "MET_pt,Jet_pt,nJet").stdout)["events"]
        dump = json.loads(run("root", "dump", src, "--json", "--branch", "MET_pt", "--branch", "Jet_pt").stdout)["branches"]
        for ev, i in zip(got, pick):
            k = ids.index(i)
            check(ev["MET_pt"] == dump["MET_pt"][k] and ev["Jet_pt"] == dump["Jet_pt"][k], f"values of {i}")
    check("ok" in run("store", "verify", store).stdout, "verify after append")

    # An existing run: an error naming the event; the store is unchanged.
    p = run("store", "append", store, a_small, expect_rc=1)
    check(ids_a2[0] in p.stderr and "--replace-run" in p.stderr, f"existing run named: {p.stderr.strip()}")
    check(json.loads(run("store", "info", store, "--json").stdout)["events"] == 6000, "refused append changed nothing")
    # --replace-run rebuilds that run's shard from the new inputs.
    rep = json.loads(run("store", "append", store, a_small, "--replace-run", "--json").stdout)
    check(rep["events"] == 4000 and sorted(map(str, rep["replaced_runs"])) == sorted(run_a), f"replace {rep}")
    run("store", "get", store, "--event", ids_a[2500], expect_rc=1)  # dropped with the old run
    check(json.loads(run("store", "get", store, "--event", ids_a2[999], "--json").stdout)["events"][0]["event"]
          == int(ids_a2[999].split(":")[2]), "replaced run readable")
    check("ok" in run("store", "verify", store).stdout, "verify after --replace-run")

    # SIGKILL at random points of an append: the previous store stays intact every time.
    base = os.path.join(tmp, "base")
    shutil.copytree(store, base)
    c = gen(os.path.join(tmp, "c"), 3000, 3)
    p = run("store", "append", os.path.join(tmp, "nothing"), c, expect_rc=1)
    check("not an event store" in p.stderr, f"append to a non-store: {p.stderr.strip()}")
    shutil.copytree(base, os.path.join(tmp, "timing"))
    t0 = time.monotonic()
    run("store", "append", os.path.join(tmp, "timing"), c)
    full = time.monotonic() - t0
    rnd = random.Random(15)
    killed = 0
    info0 = json.loads(run("store", "info", store, "--json").stdout)
    pre = os.path.join(tmp, "pre")
    shutil.copytree(store, pre)
    for k in range(3 * KILLS):
        if killed == KILLS:
            break
        proc = subprocess.Popen([FERRY, "store", "append", store, c], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=dict(os.environ, FERRY_PROGRESS="0"))
        time.sleep(rnd.uniform(0, full))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        info = json.loads(run("store", "info", store, "--json").stdout)
        # Finished before the kill, or killed after it published its manifest (the publish is
        # the atomic step; the process may still be tidying up when the kill lands): the new
        # state, complete. Start over from the old one.
        if proc.returncode == 0 or info["events"] != info0["events"]:
            check(info["events"] == info0["events"] + 3000, f"try {k}: finished append complete")
            v = run("store", "verify", store)
            check("ok" in v.stdout, f"try {k}: verify of the appended store {v.stderr.strip()[:200]}")
            shutil.rmtree(store)
            shutil.copytree(pre, store)
            continue
        check(info["events"] == info0["events"] and info["run_table"] == info0["run_table"],
              f"kill {k}: previous store intact")
        v = run("store", "verify", store)
        check("ok" in v.stdout, f"kill {k}: verify {v.stderr.strip()[:200]}")
    print(f"{killed} appends killed (a full append takes {full:.2f} s)")
    check(killed == KILLS, f"{KILLS} appends killed ({killed})")
    # After the kills an append completes, and the leftovers of the killed ones are gone.
    if json.loads(run("store", "info", store, "--json").stdout)["events"] == info0["events"]:
        run("store", "append", store, c)
    info = json.loads(run("store", "info", store, "--json").stdout)
    names = {r["run"] for r in info["run_table"]}
    check(info["events"] == info0["events"] + 3000, "append after the kills")
    leftover = [f for f in os.listdir(store) if f.endswith(".shard") or f.endswith(".tmp")]
    check(len(leftover) <= len(names) + len(run_a), f"no leftovers beyond one superseded generation: {leftover}")
    check("ok" in run("store", "verify", store).stdout, "verify at the end")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

finish()
