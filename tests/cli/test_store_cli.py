#!/usr/bin/env python3
"""Contract tests of `ferry store convert|get|scan|info|verify` (issue 6): JSON shape, values
equal to `ferry root dump --json`, exit codes and messages.

usage: test_store_cli.py FERRY_BINARY DATA_DIR   (exit 77 when DATA_DIR is absent)
"""
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import Contract, check, finish, skip  # noqa: E402

FERRY, DATA = sys.argv[1], sys.argv[2]
if not os.path.isdir(DATA):
    skip("no data folder " + DATA)
run = Contract(FERRY).run


def same(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


tmp = tempfile.mkdtemp(prefix="ferry-store-cli-")
src = os.path.join(DATA, "nano_dy.root")
store = os.path.join(tmp, "dy")
p = run("store", "convert", src, "--out", store, "--block-size", "16K", "--codec", "zstd:3", "--json")
conv = json.loads(p.stdout)
check(conv["events"] == 40 and conv["verified_bytes"] > 0 and conv["version"] == 3, f"convert report {conv}")

info = json.loads(run("store", "info", store, "--json").stdout)
check(info["events"] == 40 and info["runs"] == 1 and info["padding"] == info["grid_slots"] - 40, f"info {info}")
check(info["luminosityBlock_in_input"] is True, "info: luminosityBlock present")
check(info["codec"] == "zstd:3" and info["block_size"] == 16384, "info: codec and block size")
check("grid:" in run("store", "info", store).stdout, "info text names the grid")

# get: every branch of two events equals `ferry root dump --json` of their entries.
dump = json.loads(run("root", "dump", src, "--tree", "Events", "--json").stdout)["branches"]
ids = [f"{dump['run'][i]}:{dump['luminosityBlock'][i]}:{dump['event'][i]}" for i in range(40)]
got = json.loads(run("store", "get", store, "--event", ids[7], "--event", ids[2], "--json").stdout)["events"]
check(len(got) == 2, "get returns two events")
for ev, entry in zip(got, (7, 2)):
    check(ev["run"] == dump["run"][entry] and ev["event"] == dump["event"][entry], f"coordinates of entry {entry}")
    for name, values in dump.items():
        if name in ("run", "luminosityBlock", "event"):
            continue
        check(name in ev and same(ev[name], values[entry]), f"get {ids[entry]}: {name}")
cols = json.loads(run("store", "get", store, "--event", ids[0], "--columns", "MET_pt,Jet_pt", "--json").stdout)
check(set(cols["events"][0]) == {"run", "luminosityBlock", "event", "MET_pt", "Jet_pt"}, "get --columns keys")

# An event list file, a missing event, --skip-missing.
lst = os.path.join(tmp, "events.txt")
with open(lst, "w") as f:
    f.write(f"# picked\n{ids[5]}\n\n{ids[9]}  \n")
got = json.loads(run("store", "get", store, "--events-file", lst, "--columns", "event", "--json").stdout)["events"]
check([e["event"] for e in got] == [dump["event"][5], dump["event"][9]], "events file order")
missing = "1:13889:1"
p = run("store", "get", store, "--event", ids[0], "--event", missing, "--json", expect_rc=1)
check(missing in p.stderr, f"missing event named: {p.stderr.strip()}")
p = run("store", "get", store, "--event", missing, "--event", ids[0], "--skip-missing", "--json")
check(len(json.loads(p.stdout)["events"]) == 1 and missing in p.stderr, "--skip-missing")
run("store", "get", store, "--event", "1:2", expect_rc=2)
run("store", "get", store, expect_rc=2)
run("store", "get", store, "--event", ids[0], "--columns", "Nope", expect_rc=1)
run("store", "bogus", store, expect_rc=2)
run("store", "get", store, "--event", ids[0], "--frobnicate", expect_rc=2)
run("store", "info", os.path.join(tmp, "nothing"), expect_rc=1)

# --out picked.root: a ROOT file ferry's reader opens, with the events in list order.
picked = os.path.join(tmp, "picked.root")
run("store", "get", store, "--event", ids[3], "--event", ids[1], "--out", picked)
back = json.loads(run("root", "dump", picked, "--json", "--branch", "event", "--branch", "Jet_pt").stdout)["branches"]
check(back["event"] == [dump["event"][3], dump["event"][1]], "picked.root events")
check(same(back["Jet_pt"], [dump["Jet_pt"][3], dump["Jet_pt"][1]]), "picked.root Jet_pt")

# scan: count and mean equal to the same selection computed from root dump.
sel = [i for i in range(40) if dump["MET_pt"][i] > 20 and dump["nMuon"][i] >= 1]
p = run("store", "scan", store, "--columns", "MET_pt", "--where", "MET_pt > 20 && n(Muon) >= 1", "--json")
scan = json.loads(p.stdout)
check(scan["events"] == 40 and scan["selected"] == len(sel), f"scan count {scan['selected']} vs {len(sel)}")
mean = sum(dump["MET_pt"][i] for i in sel) / len(sel)
check(abs(scan["columns"][0]["mean"] - mean) < 1e-6 * abs(mean), "scan mean")
check(sum(scan["columns"][0]["histogram"]) == len(sel), "scan histogram holds every selected value")
run("store", "scan", store, "--columns", "MET_pt", "--where", "MET_pt >", expect_rc=2)
run("store", "scan", store, "--columns", "MET_pt", "--where", "Jet_pt > 3", expect_rc=2)
check("ok" in run("store", "verify", store).stdout, "verify")

# A truncated shard: a clear error naming the file, exit 1.
shard = os.path.join(store, "run-1.g1.shard")
with open(shard, "r+b") as f:
    f.truncate(os.path.getsize(shard) // 2)
p = run("store", "get", store, "--event", ids[0], expect_rc=1)
check("run-1.g1.shard" in p.stderr, f"truncation error names the shard: {p.stderr.strip()}")
run("store", "verify", store, expect_rc=1)

# No luminosityBlock branch: stored with lumi 0, addressed as RUN:0:EVENT.
nolumi = os.path.join(tmp, "nolumi")
run("store", "convert", os.path.join(DATA, "missing_luminosityBlock.root"), "--out", nolumi)
info = json.loads(run("store", "info", nolumi, "--json").stdout)
check(info["luminosityBlock_in_input"] is False and info["events"] == 2, f"no-lumi info {info}")
check("lumi 0" in run("store", "info", nolumi).stdout, "info text explains lumi 0")
d2 = json.loads(run("root", "dump", os.path.join(DATA, "missing_luminosityBlock.root"), "--json",
                    "--branch", "run", "--branch", "event").stdout)["branches"]
ev = json.loads(run("store", "get", nolumi, "--event", f"{d2['run'][1]}:0:{d2['event'][1]}", "--json",
                    "--columns", "event").stdout)["events"][0]
check(ev["luminosityBlock"] == 0 and ev["event"] == d2["event"][1], "no-lumi get")

# Inputs without run/event cannot be addressed.
p = run("store", "convert", os.path.join(DATA, "uproot-HZZ.root"), "--tree", "events", "--out",
        os.path.join(tmp, "hzz"), expect_rc=1)
check("run" in p.stderr, f"no run leaf: {p.stderr.strip()}")

# Every file of the data folder whose Events tree has run, luminosityBlock and event: every
# event's every stored branch from `store get --json` equals `ferry root dump --json`.
for name in sorted(os.listdir(DATA)):
    if not name.endswith(".root"):
        continue
    path = os.path.join(DATA, name)
    ls = json.loads(run("root", "ls", path, "--json").stdout)
    trees = [t for t in ls["trees"] if t["path"] == "Events"]
    if not trees:
        continue
    names = {b["name"] for b in trees[0]["branches"]}
    if not {"run", "luminosityBlock", "event"} <= names:
        continue
    out = os.path.join(tmp, "all-" + name)
    p = run("store", "convert", path, "--out", out)
    skipped = {line.split(": ")[2].split(":")[0] for line in p.stderr.splitlines() if "not stored:" in line}
    dump = json.loads(run("root", "dump", path, "--tree", "Events", "--json").stdout)["branches"]
    n = len(dump["event"])
    lst = os.path.join(tmp, "all.txt")
    with open(lst, "w") as f:
        for i in range(n):
            f.write(f"{dump['run'][i]}:{dump['luminosityBlock'][i]}:{dump['event'][i]}\n")
    got = json.loads(run("store", "get", out, "--events-file", lst, "--json").stdout)["events"]
    check(len(got) == n, f"{name}: {len(got)} of {n} events")
    bad = [b for b in dump if b not in skipped and b not in ("run", "luminosityBlock", "event")
           and not all(b in ev and same(ev[b], dump[b][i]) for i, ev in enumerate(got))]
    check(not bad, f"{name}: branches differ from root dump: {bad[:5]}")
    print(f"{name}: {n} events x {len(dump) - len(skipped)} branches equal to root dump")

finish()
