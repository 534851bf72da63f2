#!/usr/bin/env python3
"""report.py OUT: merges store-run.json, syscalls.txt and jsroot.json into OUT/store.json,
prints the side-by-side table and draws OUT/store_picks.png, store_scans.png, store_convert.png."""
import json
import os
import subprocess
import sys

out = sys.argv[1]
d = json.load(open(os.path.join(out, "store-run.json")))
sys_path = os.path.join(out, "syscalls.txt")
d["read_syscalls"] = {}
if os.path.exists(sys_path):
    for line in open(sys_path):
        mode, n, calls = line.split()
        d["read_syscalls"][mode] = {"events": int(n), "calls": int(calls),
                                    "per_event": int(calls) / max(1, int(n))}
rem_path = os.path.join(out, "store-remote.json")
if os.path.exists(rem_path) and os.path.getsize(rem_path) > 0:
    d["remote"] = json.load(open(rem_path))
js_path = os.path.join(out, "jsroot.json")
if os.path.exists(js_path) and os.path.getsize(js_path) > 0:
    d["jsroot"] = json.loads(open(js_path).read().strip().splitlines()[-1])
json.dump(d, open(os.path.join(out, "store.json"), "w"), indent=1)

p = d["picks"]
rows = [("store (pread)", p["store_pread"], "pread"), ("store (mmap)", p["store_mmap"], "mmap"),
        ("TTree baskets", p["tree_baskets"], "basket"), ("TTree + cluster cache", p["tree_cluster_cache"], "cluster")]
print(f"{d['events']} events, {d['branches']} branches, ROOT file {d['root_bytes'] / 2**30:.2f} GiB")
print(f"\n(1) {p['events']} scattered events, every branch (baselines on the first {p['tree_baskets']['events']})")
print(f"{'reader':24} {'ms/event':>10} {'cpu ms/ev':>10} {'reads/ev':>9} {'syscalls/ev':>11} {'bytes/ev':>12}")
for name, r, mode in rows:
    sc = d["read_syscalls"].get(mode, {}).get("per_event", float("nan"))
    print(f"{name:24} {r['ms_per_event']:10.3f} {r['cpu_ms_per_event']:10.3f} {r['reads_per_event']:9.2f} "
          f"{sc:11.2f} {r['bytes_per_event']:12.0f}")
if "jsroot" in d:
    j = d["jsroot"]["picks"]
    print(f"{'jsroot':24} {j['ms_per_event']:10.1f} {'':>10} {'':>9} {'':>11} {'':>12}  ({j['events']} events)")
print(f"speedup vs basket traversal: wall {p['speedup_vs_baskets']:.0f}x, cpu {p['cpu_speedup_vs_baskets']:.0f}x "
      f"(mmap: wall {p['speedup_mmap_vs_baskets']:.0f}x, cpu {p['cpu_speedup_mmap_vs_baskets']:.0f}x)")
for key, title in (("full_scan", "(2) full scan, every branch"), ("two_column_scan", "(3) MET_pt > 25 && nMuon >= 1"),
                   ("jagged_column_scan", "(3b) Muon_pt over every event")):
    print(f"\n{title}")
    for name, r in d[key].items():
        if isinstance(r, dict):
            print(f"  {name:22} {r['seconds']:8.3f} s  cpu {r['cpu_seconds']:8.3f} s  {r['reads']:9d} reads "
                  f"{r['bytes'] / 2**20:10.1f} MiB  selected {r['selected']} mean {r['mean']:.9g}")
    if key == "two_column_scan" and "jsroot" in d:
        j = d["jsroot"]["two_column_scan"]
        print(f"  {'jsroot':22} {j['seconds']:8.3f} s  selected {j['selected']} mean {j['mean']:.9g}")
print("\n(5) conversion (size: allocated bytes / ROOT file; rate: input bytes per second against the")
print("    reader decoding every stored branch of the same file on one thread)")
rd = d.get("reader_decode", {})
if rd:
    print(f"  reader decode: {rd['seconds_round1']:.1f} s (load {rd['load_round1']:.1f}), "
          f"{rd['seconds_round2']:.1f} s (load {rd['load_round2']:.1f})")
for c in d["convert"]:
    tag = c["codec"] + (" +scan copy" if c.get("scan_copy") else "")
    print(f"  {tag:20} {c['seconds']:8.1f} s (load {c.get('load_before', 0):.1f})  "
          f"{c['store_bytes_allocated'] / 2**30:6.2f} GiB ({c['ratio_to_root']:.3f}x ROOT)  "
          f"rate {c.get('rate_ratio_to_reader', 0):.2f}x the reader (in process {c.get('rate_ratio_to_reader_in_process', 0):.2f}x)  "
          f"events/E block {c['events_per_c_block']}")
if "remote" in d:
    r = d["remote"]
    s_, t_ = r["store_remote"], r["tree_baskets_remote"]
    print(f"\n(6) remote picks over the WAN emulation: {s_['events']} events from the store in {s_['seconds']:.2f} s "
          f"({s_['requests']} requests, {r['store_requests_per_event']:.4f}/event); TTree basket traversal "
          f"{t_['ms_per_event']:.0f} ms/event ({r['tree_requests_per_event']:.0f} requests/event, {t_['events']} events): "
          f"{r['speedup']:.0f}x")
if "copies" in d:
    c = d["copies"]
    print("\n(7) column copies (issue 28): Muon_pt built from the E blocks, then read from its copy")
    for name, r in c.items():
        if isinstance(r, dict):
            print(f"  {name:22} {r['seconds']:8.3f} s  cpu {r['cpu_seconds']:8.3f} s  {r['reads']:9d} reads "
                  f"{r['bytes'] / 2**20:10.1f} MiB")
    print(f"  AGC copies {c['agc_copy_bytes'] / 2**20:.1f} MiB ({100 * c['agc_copies_over_shards']:.1f}% of the shards), "
          f"store with them {c['store_with_agc_copies_bytes'] / 2**30:.2f} GiB")
if "targets" in d:
    print("\nissue 28 targets")
    for name, t in d["targets"].items():
        print(f"  {name:40} {t['value']:10.3f}  {'met' if t['met'] else 'NOT met'}")


def plot(name, title, ylabel, labels, values, log):
    dat = os.path.join(out, name + ".dat")
    with open(dat, "w") as f:
        for lab, v in zip(labels, values):
            f.write(f'"{lab}" {v}\n')
    script = f"""
set terminal pngcairo size 1000,560 font ",10" noenhanced
set output "{os.path.join(out, name + '.png')}"
set title "{title}"
set ylabel "{ylabel}"
set style fill solid 0.85 border -1
set boxwidth 0.6
set grid ytics
unset key
set xtics rotate by -20
{'set logscale y' if log else 'set yrange [0:*]'}
plot "{dat}" using 0:2:xtic(1) with boxes, "" using 0:2:(sprintf("%.3g", $2)) with labels offset 0,1
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=False)


labels = [r[0] for r in rows]
vals = [r[1]["ms_per_event"] for r in rows]
if "jsroot" in d:
    labels.append("jsroot")
    vals.append(d["jsroot"]["picks"]["ms_per_event"])
plot("store_picks", f"{p['events']} scattered events, every branch: wall ms per event (log)", "ms / event",
     labels, vals, True)
labels = [r[0] for r in rows]
plot("store_reads", "scattered events: read requests per event (log; mmap = 0 shown as 0.01)", "reads / event",
     labels, [max(0.01, r[1]["reads_per_event"]) for r in rows], True)
t = d["two_column_scan"]
labels = ["store (pread)", "store (mmap)", "TTree column reader"]
vals = [t["store_pread"]["seconds"], t["store_mmap"]["seconds"], t["tree_column_reader"]["seconds"]]
if "jsroot" in d:
    labels.append("jsroot")
    vals.append(d["jsroot"]["two_column_scan"]["seconds"])
plot("store_scan2", "two-column scan (MET_pt > 25 && nMuon >= 1): wall seconds (log)", "s", labels, vals, True)
f = d["full_scan"]
plot("store_fullscan", "full scan of every branch: wall seconds", "s", ["store (pread)", "store (mmap)", "TTree cluster reader"],
     [f["store_pread"]["seconds"], f["store_mmap"]["seconds"], f["tree_cluster_reader"]["seconds"]], False)
plot("store_convert", "store size / ROOT file size per codec", "ratio", [c["codec"] for c in d["convert"]],
     [c["ratio_to_root"] for c in d["convert"]], False)
print(f"\nwrote {out}/store.json and {out}/store_*.png")
