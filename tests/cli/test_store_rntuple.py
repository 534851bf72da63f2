#!/usr/bin/env python3
"""`ferry store convert|append` from RNTuple inputs and `store get --out --format rntuple`:
stores converted from the TTree and the RNTuple forms of the same generated events (same seeds)
hold the same values, as does one converted from one RNTuple dataset and appended another (of
other runs), and ones from TTrees and RNTuples mixed (inputs agree on columns by name); picked events written as an RNTuple read back to the TTree pick's values.

usage: test_store_rntuple.py FERRY_BINARY ROOT_DATA_DIR   (exit 77 without the template)
"""
import json
import math
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import Contract, check, finish, skip  # noqa: E402

FERRY, ROOT_DATA = sys.argv[1], sys.argv[2]
TEMPLATE = os.path.join(ROOT_DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root")
if not os.path.isfile(TEMPLATE):
    skip("no template " + TEMPLATE)

EVENTS = 6000
ferry = Contract(FERRY, env=dict(os.environ, FERRY_PROGRESS="0"))
work = tempfile.mkdtemp(prefix="ferry-store-rntuple.")


def path(*parts):
    return os.path.join(work, *parts)


def generate(fmt, seed, files):
    out = path("%s-%d" % (fmt, seed))
    ferry.run("gen", "nanoaod", "--template", TEMPLATE, "--events", str(EVENTS), "--files",
              str(files), "--codec", "zlib:1", "--seed", str(seed), "--format", fmt, "--out", out)
    return sorted(os.path.join(out, f) for f in os.listdir(out))


def same(a, b):
    """Equal values, NaN equal to NaN (stored floats keep their bits)."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def event_ids(files, n):
    ids = []
    for f in files:
        p = ferry.run("root", "dump", f, "--branch", "run", "--branch", "luminosityBlock",
                      "--branch", "event", "--json")
        b = json.loads(p.stdout)["branches"]
        ids += ["%d:%d:%d" % t for t in zip(b["run"], b["luminosityBlock"], b["event"])]
    random.seed(3)
    with open(path("events.txt"), "w") as out:
        out.write("\n".join(random.sample(ids, n)) + "\n")
    return path("events.txt")


def get(store):
    p = ferry.run("store", "get", store, "--events-file", path("events.txt"), "--json")
    return json.loads(p.stdout)["events"] if p.returncode == 0 else []


def compare(want, got, what):
    check(len(want) == len(got) and len(want) > 0, "%s: %d events, want %d" % (what, len(got),
                                                                             len(want)))
    for w, g in zip(want, got):
        check(set(w) == set(g), "%s: columns differ: %s" % (what, sorted(set(w) ^ set(g))[:5]))
        bad = [k for k in w if k in g and not same(w[k], g[k])]
        if not check(not bad, "%s: event %s differs in %s" % (what, w.get("event"), bad[:5])):
            return


def dump(file):
    p = ferry.run("root", "dump", file, "--json", "--branch", "event", "--branch", "nJet",
                  "--branch", "Jet_pt", "--branch", "Muon_tightId", "--branch", "MET_pt")
    return json.loads(p.stdout)["branches"] if p.returncode == 0 else None


try:
    # Two datasets of different runs (seeds), each as TTrees and as RNTuples.
    trees = generate("ttree", 5, 2) + generate("ttree", 6, 1)
    rntuples = generate("rntuple", 5, 2) + generate("rntuple", 6, 1)
    event_ids(trees, 200)
    ferry.run("store", "convert", *trees, "--out", path("st_tree"))
    p = ferry.run("store", "convert", *rntuples, "--out", path("st_rntuple"))
    check("_collection" not in p.stderr, "projection sources listed as skipped: " + p.stderr[:300])
    ferry.run("store", "convert", *rntuples[:2], "--out", path("st_append"))
    ferry.run("store", "append", path("st_append"), rntuples[2])
    # Inputs agree on columns by name: TTrees and RNTuples mix, in a convert and an append.
    ferry.run("store", "convert", trees[0], rntuples[1], trees[2], "--out", path("st_mixed"))
    ferry.run("store", "convert", *trees[:2], "--out", path("st_tree_append"))
    ferry.run("store", "append", path("st_tree_append"), rntuples[2])
    want = get(path("st_tree"))
    compare(want, get(path("st_rntuple")), "converted from RNTuple")
    compare(want, get(path("st_append")), "converted and appended from RNTuple")
    compare(want, get(path("st_mixed")), "converted from TTrees and an RNTuple")
    compare(want, get(path("st_tree_append")), "a TTree store appended from an RNTuple")

    for fmt in ("ttree", "rntuple"):
        ferry.run("store", "get", path("st_rntuple"), "--events-file", path("events.txt"),
                  "--out", path("pick_%s.root" % fmt), "--format", fmt)
    ls = json.loads(ferry.run("root", "ls", path("pick_rntuple.root"), "--json").stdout)
    check("ntuples" in json.dumps(ls) or "RNTuple" in json.dumps(ls), "pick is no RNTuple: %s"
          % json.dumps(ls)[:200])
    tree_pick, rntuple_pick = dump(path("pick_ttree.root")), dump(path("pick_rntuple.root"))
    check(tree_pick is not None and same(tree_pick, rntuple_pick),
          "the RNTuple pick reads differently from the TTree pick")
    check(tree_pick is not None and len(tree_pick["event"]) == 200,
          "pick holds %s events" % (tree_pick and len(tree_pick["event"])))
    ferry.run("store", "get", path("st_tree"), "--events-file", path("events.txt"), "--out",
              path("x.root"), "--format", "csv", expect_rc=2)
finally:
    shutil.rmtree(work, ignore_errors=True)
finish()
