#!/usr/bin/env python3
"""Contract tests of `ferry root ls|dump`: JSON shape, values from the data README, exit codes.

usage: test_root_cli.py FERRY_BINARY DATA_DIR   (exit 77 when DATA_DIR is absent)
"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import Contract, check, finish, skip  # noqa: E402

FERRY, DATA = sys.argv[1], sys.argv[2]
if not os.path.isdir(DATA):
    skip("no data folder " + DATA)
run = Contract(FERRY, timeout=120).run


def ls(name):
    p = run("root", "ls", os.path.join(DATA, name), "--json")
    return json.loads(p.stdout)


def dump(name, *args):
    p = run("root", "dump", os.path.join(DATA, name), "--json", *args)
    return json.loads(p.stdout)


# Entries and top-level branch counts per tree, from data/root/README.md.
EXPECTED = {
    "missing_luminosityBlock.root": {"Events": (2, 1582)},
    "nanoAOD_2015_CMS_Open_Data_ttbar.root": {"Events": (200, 947)},
    "nano_dy.root": {"Events": (40, 1499), "Runs": (1, 8)},
    "nano_tree.root": {"Events": (10, 1011), "Runs": (1, 8)},
    "uproot-HZZ-lz4.root": {"events": (2421, 51)},
    "uproot-HZZ-lzma.root": {"events": (2421, 51)},
    "uproot-HZZ-uncompressed.root": {"events": (2421, 51)},
    "uproot-HZZ-zlib.root": {"events": (2421, 51)},
    "uproot-HZZ-zstd.root": {"events": (2421, 51)},
    "uproot-HZZ.root": {"events": (2421, 51)},
    "uproot-Zmumu.root": {"events": (2304, 20)},
    "uproot-empty.root": {"tree": (0, 3)},
    "uproot-leaflist.root": {"tree": (5, 1)},
    "uproot-nesteddirs.root": {"one/two/tree": (100, 20), "one/tree": (4, 3), "three/tree": (100, None)},
    "uproot-sample-5.23.02-zlib.root": {"sample": (30, 35)},
    "uproot-sample-6.20.04-uncompressed.root": {"sample": (30, 35)},
    "uproot-sample-6.20.04-zlib.root": {"sample": (30, 35)},
    "uproot-simple.root": {"tree": (4, 3)},
    "uproot-small-dy-nooffsets.root": {"tree": (501, 8)},
    "uproot-small-dy-withoffsets.root": {"tree": (501, 8)},
    "uproot-small-flat-tree.root": {"tree": (100, 20)},
}

for name, trees in EXPECTED.items():
    d = ls(name)
    check(d["file"].endswith(name), f"{name}: file field")
    got = {t["path"]: t for t in d["trees"]}
    check(set(got) == set(trees), f"{name}: trees {sorted(got)} != {sorted(trees)}")
    for path, (entries, nbranches) in trees.items():
        t = got.get(path)
        if t is None:
            continue
        check(t["entries"] == entries, f"{name}/{path}: entries {t['entries']} != {entries}")
        if nbranches is not None:
            check(len(t["branches"]) == nbranches, f"{name}/{path}: {len(t['branches'])} branches != {nbranches}")
        for b in t["branches"]:
            for key in ("name", "type", "jagged", "count", "zbytes", "bytes", "codec"):
                check(key in b, f"{name}/{path}/{b.get('name')}: missing {key}")
            check(b["codec"] in ("zlib", "lzma", "zstd", "lz4", "cs", "none", "mixed"), f"codec {b['codec']}")
            check(b["jagged"] == (b["count"] is not None), f"{name}/{path}/{b['name']}: jagged vs count")

# Types and codecs.
hzz = {b["name"]: b for b in ls("uproot-HZZ-zlib.root")["trees"][0]["branches"]}
check(hzz["Jet_Px"]["type"] == "Float_t" and hzz["Jet_Px"]["jagged"] and hzz["Jet_Px"]["count"] == "NJet",
      "HZZ Jet_Px is a jagged Float_t counted by NJet")
check(hzz["NJet"]["type"] == "Int_t" and not hzz["NJet"]["jagged"], "HZZ NJet is a scalar Int_t")
check(hzz["Jet_ID"]["type"] == "Bool_t", "HZZ Jet_ID is Bool_t")
for codec_file, codec in (("uproot-HZZ-zlib.root", "zlib"), ("uproot-HZZ-lzma.root", "lzma"),
                          ("uproot-HZZ-zstd.root", "zstd"), ("uproot-HZZ-lz4.root", "lz4"),
                          ("uproot-HZZ-uncompressed.root", "none")):
    b = {x["name"]: x for x in ls(codec_file)["trees"][0]["branches"]}
    check(b["Muon_Px"]["codec"] == codec, f"{codec_file}: Muon_Px codec {b['Muon_Px']['codec']} != {codec}")
    check(b["Muon_Px"]["zbytes"] > 0 and b["Muon_Px"]["bytes"] >= b["Muon_Px"]["zbytes"] or codec == "none",
          f"{codec_file}: byte counts")
sample = {b["name"]: b["type"] for b in ls("uproot-sample-6.20.04-zlib.root")["trees"][0]["branches"]}
for n, t in (("b", "Bool_t"), ("i1", "Char_t"), ("u1", "UChar_t"), ("i2", "Short_t"), ("u2", "UShort_t"),
             ("i4", "Int_t"), ("u4", "UInt_t"), ("i8", "Long64_t"), ("u8", "ULong64_t"), ("f4", "Float_t"),
             ("f8", "Double_t"), ("str", "string")):
    check(sample.get(n) == t, f"sample {n}: type {sample.get(n)} != {t}")
nested = {t["path"]: t for t in ls("uproot-nesteddirs.root")["trees"]}
check(not nested["three/tree"]["branches"][0]["supported"], "three/tree is reported unsupported")

# Values (README: first entries as read by jsroot and a raw decoder).
d = dump("nanoAOD_2015_CMS_Open_Data_ttbar.root", "--branch", "event", "--branch", "Jet_pt", "--entries", "0:5")
check(d["tree"] == "Events" and d["entries"] == [0, 5], "dump header")
check(d["branches"]["event"] == [227291401, 227291402, 227291406, 227291408, 227291410], "ttbar event")
check(d["branches"]["Jet_pt"][0] == [17.921875, 15.734375], "ttbar Jet_pt[0]")
check(len(d["branches"]["Jet_pt"][4]) == 7, "ttbar Jet_pt[4] has 7 jets")
d = dump("nano_dy.root", "--tree", "Runs")
check(d["branches"]["run"] == [1], "nano_dy Runs.run")
check(abs(d["branches"]["LHEScaleSumw_"][0][0] - 42.3966917231932) < 1e-12, "nano_dy LHEScaleSumw_")
d = dump("uproot-small-dy-nooffsets.root", "--branch", "Jet_pt", "--entries", "0:2")
check(d["branches"]["Jet_pt"] == [[34.09375, 33.53125, 20.25, 19.890625],
                                  [36.09375, 26.8125, 21.25, 17.71875, 17.640625]], "nooffsets Jet_pt")
d = dump("uproot-sample-5.23.02-zlib.root", "--entries", "0:5")
check(d["branches"]["i4"] == [-15, -14, -13, -12, -11], "sample i4")
check(d["branches"]["Ab"][:3] == [[], [True], [True, True]], "sample Ab (bool lists)")
check(d["branches"]["str"][0] == "hey-0", "sample str")
check(d["branches"]["ai4"][0] == [-14, -13, -12], "sample ai4 fixed array")
d = dump("uproot-simple.root")
check(d["branches"] == {"one": [1, 2, 3, 4], "two": [1.10000002, 2.20000005, 3.29999995, 4.4000001],
                        "three": ["uno", "dos", "tres", "quatro"]}, "simple tree")
d = dump("uproot-leaflist.root", "--entries", "4:5")
check(d["branches"]["leaflist"] == [{"x": 5.5, "y": 5, "z": 101}], "leaf list entry as object")
d = dump("uproot-small-flat-tree.root", "--branch", "Float64", "--branch", "Float32", "--entries", "1:3")
check(d["branches"]["Float64"] == [1.0, 2.0] and d["branches"]["Float32"] == [1.0, 2.0],
      f"small-flat-tree Float64/Float32 {d['branches']}")
# Floats print with %.9g: at most 9 significant digits.
d = dump("uproot-HZZ-uncompressed.root", "--branch", "Jet_E", "--entries", "0:50")
for v in (x for lst in d["branches"]["Jet_E"] for x in lst):
    check(len(repr(v).replace(".", "").replace("-", "").lstrip("0")) <= 9, f"float {v} printed with too many digits")
d = dump("uproot-empty.root")
check(d["entries"] == [0, 0] and d["branches"]["x"] == [], "empty tree")
d = dump("uproot-Zmumu.root", "--branch", "Type", "--entries", "0:3")
check(all(s in ("GT", "TT", "GG") for s in d["branches"]["Type"]), "Zmumu Type strings")
d = dump("uproot-HZZ-lz4.root", "--branch", "MET_px", "--entries", "0:2")
check(abs(d["branches"]["MET_px"][0] - 5.912771) < 1e-5, "lz4 MET_px")

# Errors: bad input exits 1 with the context chain on stderr; usage errors exit 2.
p = run("root", "ls", "/nonexistent/file.root", expect_rc=1)
check("cannot open" in p.stderr, "missing file message")
p = run("root", "dump", os.path.join(DATA, "uproot-simple.root"), "--branch", "nope", expect_rc=1)
check("nope" in p.stderr, "unknown branch named")
run("root", "ls", os.path.join(DATA, "uproot-simple.root"), "--bogus", expect_rc=2)
run("root", "frobnicate", os.path.join(DATA, "uproot-simple.root"), expect_rc=2)
run("root", "dump", os.path.join(DATA, "nano_dy.root"), expect_rc=2)  # two trees: --tree required
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "truncated.root")
    with open(os.path.join(DATA, "uproot-HZZ-zlib.root"), "rb") as src:
        data = src.read()
    with open(bad, "wb") as out:
        out.write(data[: len(data) // 2])
    p = run("root", "ls", bad, expect_rc=1)
    check("truncated.root" in p.stderr and "error" in p.stderr, "truncated file error names the file")
    # Corrupt a basket's compressed bytes: the error names branch and basket.
    b = {x["name"]: x for x in ls("uproot-HZZ-zlib.root")["trees"][0]["branches"]}
    corrupt = bytearray(data)
    pos = data.find(b"ZL", 2000)
    corrupt[pos + 20:pos + 40] = b"\x00" * 20
    with open(bad, "wb") as out:
        out.write(corrupt)
    p = subprocess.run([FERRY, "root", "dump", bad, "--json"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "basket" in p.stderr and "branch" in p.stderr,
          f"corrupt basket: rc {p.returncode}, stderr {p.stderr.strip()[:200]}")

finish()
