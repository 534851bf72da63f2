#!/usr/bin/env python3
"""Contract tests of `ferry root ls|dump` on RNTuples: JSON shape, values, exit codes.

Expected values come from data/rntuple/jsroot-values.json (jsroot's reading, see the README
there) and from the ROOT macros that wrote the files (rntuple_*.C in scikit-hep-testdata).

usage: test_rntuple_cli.py FERRY_BINARY RNTUPLE_DATA_DIR   (exit 77 when the folder is absent)
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import check, finish  # noqa: E402

FERRY, DATA = sys.argv[1], sys.argv[2]
if not os.path.isdir(DATA):
    print("skip: no data folder", DATA)
    sys.exit(77)


def run(*args, expect_rc=0):
    p = subprocess.run([FERRY, *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == expect_rc,
          f"{' '.join(args)}: exit {p.returncode}, expected {expect_rc}; stderr: {p.stderr.strip()[:300]}")
    return p


def ls(name):
    return json.loads(run("root", "ls", os.path.join(DATA, name), "--json").stdout)


def dump(name, *args):
    return json.loads(run("root", "dump", os.path.join(DATA, name), "--json", *args).stdout)


def same(ours, theirs, single):
    """Ours printed floats with %.9g: equal to jsroot's value within float precision."""
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(
            same(a, b, single) for a, b in zip(ours, theirs))
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (ours, theirs))
    if numbers and (isinstance(ours, float) or isinstance(theirs, float)):
        return abs(ours - theirs) <= (6e-8 if single else 1e-15) * max(1.0, abs(theirs))
    if isinstance(theirs, int) and isinstance(ours, int) and abs(theirs) > 2**53:
        return float(ours) == float(theirs)  # jsroot prints 64-bit integers as doubles
    return ours == theirs


with open(os.path.join(DATA, "jsroot-values.json")) as f:
    JSROOT = json.load(f)
# Where the README says jsroot is wrong (its tests in src/rootio/rntuple_test.cc say why).
WRONG = {("Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root", "Events", f)
         for f in ("Muon_pt", "Muon_eta", "Muon_phi", "Muon_mass", "Muon_charge")}
WRONG |= {("test_extension_columns_rntuple_v1-0-0-0.root", "ntuple", "float_field"),
          ("test_float_types_rntuple_v1-0-0-0.root", "ntuple", "quant32")}

for name, ntuples in JSROOT.items():
    d = ls(name)
    got = {r["path"]: r for r in d["rntuples"]}
    check(set(got) == set(ntuples), f"{name}: RNTuples {sorted(got)} != {sorted(ntuples)}")
    check(d["trees"] == [], f"{name}: no TTrees")
    for ntuple, want in ntuples.items():
        r = got.get(ntuple)
        if r is None:
            continue
        if name != "test_multiple_cluster_groups_rntuple_v1-0-0-0.root":  # jsroot: first group only
            check(r["entries"] == want["entries"], f"{name}/{ntuple}: entries {r['entries']}")
        top = {f["name"]: f for f in r["fields"]}
        check(set(top) == set(want["fields"]) | set(want["skipped"]), f"{name}/{ntuple}: fields")
        for field, type_name in want["types"].items():
            check(top[field]["type"] == type_name, f"{name}/{ntuple}/{field}: type {top[field]['type']}")
        for c in r["columns"]:
            check(c["codec"] in ("zstd", "none"), f"{name}: codec {c['codec']}")
            check(c["zbytes"] <= c["bytes"] or c["codec"] == "none", f"{name}: column {c['id']} bytes")
        check(r["zbytes"] == sum(c["zbytes"] for c in r["columns"]), f"{name}: zbytes sum")
        values = dump(name, "--tree", ntuple, "--entries", f"0:{want['n']}")
        check(values["tree"] == ntuple and values["entries"] == [0, want["n"]], f"{name}: dump header")
        for field, theirs in want["fields"].items():
            if (name, ntuple, field) in WRONG:
                continue
            ours = values["branches"].get(field)
            single = "float" in want["types"][field]
            check(same(ours, theirs, single), f"{name}/{ntuple}/{field}: {str(ours)[:80]} != {str(theirs)[:80]}")

# The uncompressed file stores every page raw.
raw = ls("rntviewer-testfile-uncomp-single-rntuple-v1-0-0-0.root")["rntuples"][0]
check(all(c["codec"] == "none" and c["zbytes"] == c["bytes"] for c in raw["columns"]), "uncompressed pages")
# Encodings and the field tree (rntuple_stl_containers.C, rntuple_multiple_representations.C).
stl = ls("test_stl_containers_rntuple_v1-0-0-0.root")["rntuples"][0]
enc = {(c["field"], c["encoding"]) for c in stl["columns"]}
check(("variant_int32_string", "Switch") in enc and ("string", "Char") in enc, "stl encodings")
arr = {f["name"]: f for f in stl["fields"]}["array_float"]
check(arr["type"] == "std::array<float,3>" and arr["array_size"] == 3 and arr["fields"][0]["type"] == "float",
      "array field tree")
reps = ls("test_multiple_representations_rntuple_v1-0-0-0.root")["rntuples"][0]
check(sorted((c["encoding"], c["representation"]) for c in reps["columns"]) == [("Real16", 1), ("Real32", 0)],
      "two representations")
groups = ls("test_multiple_cluster_groups_rntuple_v1-0-0-0.root")["rntuples"][0]
check(groups["entries"] == 1000 and groups["cluster_groups"] == 3 and groups["clusters"] == 12, "cluster groups")
mu = {f["name"]: f for f in ls("Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root")["rntuples"][0]["fields"]}
check(mu["Muon_pt"]["type"] == "ROOT::VecOps::RVec<float>" and mu["Muon_pt"]["projected_from"] == "_collection0",
      "projected RVec")

# Values beyond jsroot's: records, variants, schema extension, cluster groups.
d = dump("test_stl_containers_rntuple_v1-0-0-0.root", "--branch", "variant_int32_string",
         "--branch", "pair_int32_string", "--branch", "lorentz_vector", "--entries", "0:2")
check(d["branches"]["variant_int32_string"] == [1, "two"], "variant values")
check(d["branches"]["pair_int32_string"] == [{"_0": 1, "_1": "one"}, {"_0": 2, "_1": "two"}], "pair values")
check(d["branches"]["lorentz_vector"][1] == {"pt": 2, "eta": 2, "phi": 2, "mass": 2}, "record values")
d = dump("test_extension_columns_rntuple_v1-0-0-0.root", "--entries", "398:402")
check(d["branches"]["intvec_field"] == [[], [], [0, 1], [1, 2]], "deferred vector")
check(d["branches"]["float_field"] == [198.5, 199.5, 0.5, 1.5], "deferred float")
d = dump("test_multiple_cluster_groups_rntuple_v1-0-0-0.root", "--branch", "int_vector", "--entries", "998:")
check(d["branches"]["int_vector"] == [[998, 999], [999, 1000]], "last cluster group")
d = dump("Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root", "--branch", "nMuon",
         "--branch", "Muon_charge", "--entries", "0:3")
check(d["branches"]["nMuon"] == [len(x) for x in d["branches"]["Muon_charge"]], "nMuon counts Muon_charge")
d = dump("test_nested_structs_rntuple_v1-0-0-0.root", "--branch", "my_struct.sub_struct.i", "--entries", "0:3")
check(d["branches"]["my_struct.sub_struct.i"] == [1, 2, 3], "a subfield by path")
p = run("root", "dump", os.path.join(DATA, "test_int_float_rntuple_v1-0-0-0.root"), "--entries", "0:2")
check(p.stdout.splitlines() == ["one_integers: [9,8]", "two_floats: [9.89999962,8.80000019]"],
      f"text dump {p.stdout!r}")
p = run("root", "ls", os.path.join(DATA, "test_int_float_rntuple_v1-0-0-0.root"))
check("RNTuple ntuple (format 1.0.0.0): 10 entries" in p.stdout, "text listing")

# Errors: a missing field or a damaged file exits 1 naming what; two RNTuples need --tree.
p = run("root", "dump", os.path.join(DATA, "test_int_float_rntuple_v1-0-0-0.root"), "--branch", "nope",
        expect_rc=1)
check("nope" in p.stderr, "unknown field named")
run("root", "dump", os.path.join(DATA, "rntviewer-testfile-multiple-rntuples-v1-0-0-0.root"), expect_rc=2)
with tempfile.TemporaryDirectory() as tmp:
    name = "rntviewer-testfile-uncomp-single-rntuple-v1-0-0-0.root"
    with open(os.path.join(DATA, name), "rb") as src:
        data = bytearray(src.read())
    data[data.find(b"Jakob")] ^= 0x20  # a page of firstName: its checksum no longer matches
    bad = os.path.join(tmp, "flipped.root")
    with open(bad, "wb") as out:
        out.write(data)
    p = run("root", "dump", bad, "--json", expect_rc=1)
    check("checksum mismatch" in p.stderr and "flipped.root" in p.stderr, f"page checksum: {p.stderr.strip()[:200]}")

finish("cli_rntuple: ")
