#!/usr/bin/env python3
"""Contract tests of `ferry gen nanoaod --mode` (issue 18): the object model is the default and
says so in --json, `--mode event` keeps the whole-event model, both are deterministic for a
seed and number events alike, and a bad mode is a usage error. `--format rntuple` writes an
'Events' RNTuple instead of the tree (ttree stays the default), deterministic for a seed, with
the AGC selection resolved as for the tree; a bad format is a usage error. `--template` also
takes an RNTuple (ROOT's importer-written muons file of data/rntuple, when present).

usage: test_gen_cli.py FERRY_BINARY DATA_DIR   (exit 77 when DATA_DIR is absent)
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import Contract, check, finish, skip  # noqa: E402

FERRY, DATA = sys.argv[1], sys.argv[2]
TEMPLATE = os.path.join(DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root")
if not os.path.isfile(TEMPLATE):
    skip("no template " + TEMPLATE)
run = Contract(FERRY).run


def gen(out, *extra):
    p = run("gen", "nanoaod", "--template", TEMPLATE, "--events", "3000", "--codec", "zstd:3",
            "--seed", "8", "--out", out, "--json", *extra)
    return json.loads(p.stdout) if p.returncode == 0 else {}


def read(path):
    with open(path, "rb") as f:
        return f.read()


def ids(path):
    d = json.loads(run("root", "dump", path, "--branch", "run", "--branch", "luminosityBlock",
                       "--branch", "event", "--json").stdout)["branches"]
    return d["run"], d["luminosityBlock"], d["event"]


tmp = tempfile.mkdtemp(prefix="ferry-gen-cli-")
try:
    default = gen(os.path.join(tmp, "default"))
    obj = gen(os.path.join(tmp, "object"), "--mode", "object")
    event = gen(os.path.join(tmp, "event"), "--mode", "event")
    check(default.get("mode") == "object" and obj.get("mode") == "object", "object is the default")
    check(event.get("mode") == "event", f"--mode event reported: {event.get('mode')}")
    name = "nanoaod_0000.root"
    a, b, c = (os.path.join(tmp, d, name) for d in ("default", "object", "event"))
    check(read(a) == read(b), "the same seed gives the same bytes")
    check(read(a) != read(c), "the two models give different events")
    check(ids(a) == ids(c), "run/luminosityBlock/event are the same in both models")
    p = run("gen", "nanoaod", "--template", TEMPLATE, "--events", "10", "--out",
            os.path.join(tmp, "bad"), "--mode", "bogus", expect_rc=2)
    check("object or event" in p.stderr, f"bad mode message: {p.stderr.strip()}")
    check("--mode" in run("gen", "--help").stdout, "--help lists --mode")

    r1 = gen(os.path.join(tmp, "rntuple"), "--format", "rntuple")
    r2 = gen(os.path.join(tmp, "rntuple2"), "--format", "rntuple")
    check(default.get("format") == "ttree", f"ttree is the default: {default.get('format')}")
    check(r1.get("format") == "rntuple", f"--format rntuple reported: {r1.get('format')}")
    ra, rb = (os.path.join(tmp, d, name) for d in ("rntuple", "rntuple2"))
    check(read(ra) == read(rb), "the same seed gives the same RNTuple bytes")
    ls = json.loads(run("root", "ls", ra, "--json").stdout)
    check(ls.get("trees") == [] and
          [(o["path"], o["class"]) for o in ls.get("objects", [])] == [("Events", "ROOT::RNTuple")],
          f"the RNTuple file holds one RNTuple and no tree: {ls.get('objects')}")
    check(r1.get("events") == 3000 and r1.get("branches") == default.get("branches"),
          "the RNTuple form has the tree form's events and branches")
    check(r1.get("agc", {}).get("branches") == default.get("agc", {}).get("branches"),
          "the AGC selection resolves alike in both formats")
    check(0 < r1.get("bytes", 0) < default.get("bytes", 0),
          "split-encoded RNTuple pages are smaller than the tree's baskets")
    p = run("gen", "nanoaod", "--template", TEMPLATE, "--events", "10", "--out",
            os.path.join(tmp, "bad2"), "--format", "parquet", expect_rc=2)
    check("ttree or rntuple" in p.stderr, f"bad format message: {p.stderr.strip()}")

    muons = os.path.join(os.path.dirname(os.path.abspath(DATA)), "rntuple",
                         "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root")
    if os.path.isfile(muons):
        for fmt in ("ttree", "rntuple"):
            p = run("gen", "nanoaod", "--template", muons, "--events", "500", "--format", fmt,
                    "--out", os.path.join(tmp, "from-rntuple-" + fmt), "--json")
            g = json.loads(p.stdout)
            # nMuon, five muon RVecs, and the run/luminosityBlock/event the generator adds.
            check(g.get("branches") == 9 and g.get("skipped") == [],
                  f"an RNTuple template ({fmt}): {g.get('branches')} branches, {g.get('skipped')}")
        d = json.loads(run("root", "dump", os.path.join(tmp, "from-rntuple-ttree", name),
                           "--branch", "nMuon", "--branch", "Muon_pt", "--json").stdout)["branches"]
        check(len(d["nMuon"]) == 500 and all(n == len(v) for n, v in zip(d["nMuon"], d["Muon_pt"])),
              "a tree generated from an RNTuple template has counters matching its muons")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

finish()
