#!/usr/bin/env python3
"""`ferry analyze agc` on RNTuple inputs: the same events generated as a TTree and as an RNTuple
(`ferry gen nanoaod --format ttree|rntuple`, same seed) give the same cut flows, histograms
and digest, for zlib and lzma; a pass over TTree and RNTuple files mixed gives them too; an
RNTuple without the AGC's fields is refused naming the field.

usage: test_agc_rntuple.py FERRY_BINARY ROOT_DATA_DIR RNTUPLE_DATA_DIR   (exit 77 without data)
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import Contract, check, finish, skip  # noqa: E402

FERRY, ROOT_DATA, RNTUPLE_DATA = sys.argv[1], sys.argv[2], sys.argv[3]
TEMPLATE = os.path.join(ROOT_DATA, "nanoAOD_2015_CMS_Open_Data_ttbar.root")
MUONS = os.path.join(RNTUPLE_DATA, "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root")
if not os.path.isfile(TEMPLATE) or not os.path.isfile(MUONS):
    skip("no data: " + TEMPLATE + " / " + MUONS)

EVENTS = 30000
FILES = 3
ferry = Contract(FERRY, env=dict(os.environ, FERRY_PROGRESS="0"))
work = tempfile.mkdtemp(prefix="ferry-agc-rntuple.")


def generate(fmt, codec):
    out = os.path.join(work, "%s-%s" % (fmt, codec.replace(":", "")))
    ferry.run("gen", "nanoaod", "--template", TEMPLATE, "--events", str(EVENTS), "--files",
              str(FILES), "--codec", codec, "--seed", "11", "--format", fmt, "--out", out)
    return sorted(os.path.join(out, f) for f in os.listdir(out))


def analyze(inputs):
    p = ferry.run("analyze", "agc", *inputs, "--json", "--threads", "2", "--reads", "2")
    return json.loads(p.stdout) if p.returncode == 0 else None


def physics(report):
    """What must not depend on the format: events, cut flows, histograms, digest. A
    histogram's mean is left out (and compared apart): the per-cluster sums merge in another
    grouping when the clusters differ, which may change its last bit."""
    hists = [dict(h, mean=0) for h in report["histograms"]]
    return dict({k: report[k] for k in ("events", "cutflow", "digest")}, histograms=hists)


def same_means(a, b):
    return all(abs(x["mean"] - y["mean"]) <= 1e-12 * abs(x["mean"])
               for x, y in zip(a["histograms"], b["histograms"]))


try:
    for codec in ("zlib:1", "lzma:9"):
        tree_files = generate("ttree", codec)
        rntuple_files = generate("rntuple", codec)
        tree = analyze(tree_files)
        rnt = analyze(rntuple_files)
        if tree is None or rnt is None:
            continue
        check(tree["events"] == EVENTS, "%s: TTree pass saw %d events" % (codec, tree["events"]))
        check(tree["cutflow"]["nominal"]["one_btag"] > 0, "%s: no event selected" % codec)
        check(physics(rnt) == physics(tree),
              "%s: RNTuple digest %s differs from the TTree's %s" % (codec, rnt["digest"],
                                                                     tree["digest"]))
        check(same_means(rnt, tree), "%s: histogram means differ" % codec)
        # The RNTuple pass reads only the AGC fields' pages: a small part of the files.
        check(0 < rnt["io"]["bytes_read"] < rnt["io"]["dataset_bytes"] / 2,
              "%s: RNTuple pass read %d of %d bytes" % (codec, rnt["io"]["bytes_read"],
                                                       rnt["io"]["dataset_bytes"]))
        check(rnt["io"]["units"] >= FILES, "%s: %d units" % (codec, rnt["io"]["units"]))
        mixed = analyze([tree_files[0], rntuple_files[1], tree_files[2]])
        check(mixed is not None and physics(mixed) == physics(tree) and same_means(mixed, tree),
              "%s: a mixed TTree/RNTuple pass differs" % codec)

    # ROOT's importer output holds muons only: the missing field is named.
    p = ferry.run("analyze", "agc", MUONS, "--json", expect_rc=1)
    check("Electron_pt" in p.stderr, "missing field not named: " + p.stderr.strip()[:300])
finally:
    shutil.rmtree(work, ignore_errors=True)
finish()
