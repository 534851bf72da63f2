#!/usr/bin/env python3
"""Summarises bench/cache_wan.sh runs: table on stdout, JSON and PNG plots in OUT.

usage: cache_wan_report.py RUNS.jsonl OUT_DIR CONFIG_JSON
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import report  # noqa: E402
from report import median  # noqa: E402

runs, out_dir, config = report.load(sys.argv)

# Ferry counters are cumulative per cache directory: turn them into per-run deltas.
prev = {}
for r in runs:
    if r.get("kind") != "ferry":
        continue
    if r["label"] == "ferry-cold":
        prev = {}
    cur = r.get("cache_stats", {})
    r["origin_requests"] = cur.get("origin_requests", 0) - prev.get("origin_requests", 0)
    r["cache_bytes_from_origin"] = cur.get("bytes_from_origin", 0) - prev.get("bytes_from_origin", 0)
    prev = cur
for r in runs:
    if r.get("kind") == "direct":
        r["origin_requests"] = r["replay"].get("vector_reads", 0)

scenarios = ["direct", "ferry-cold", "ferry-warm", "xcache-default-cold", "xcache-default-warm",
             "xcache-tuned-cold", "xcache-tuned-warm"]
requested = next((r["replay"]["bytes"] for r in runs if r.get("label") == "direct"), 0)
disk_after = {r["label"]: r["disk_bytes"] for r in runs if r.get("label", "").endswith("-disk")}


summary = {}
for s in scenarios:
    rs = [r for r in runs if r.get("label") == s]
    if not rs:
        continue
    ok = all(r["exit"] == 0 for r in rs)
    row = {
        "runs": len(rs),
        "ok": ok,
        "wall_s": median([r["replay"].get("wall_s", 0) for r in rs]),
        "wall_s_all": [r["replay"].get("wall_s", 0) for r in rs],
        "process_s": median([r["process_s"] for r in rs]),
        "p50_ms": median([r["replay"].get("p50_ms", 0) for r in rs]),
        "cpu_s": median([r["replay"].get("cpu_s", 0) for r in rs]),
        "wan_bytes": median([r["wan_bytes"] for r in rs]),
        "idle_pct": median([r["idle_pct"] for r in rs]),
        "verified": all(r["replay"].get("verified", False) for r in rs),
    }
    reqs = [r["origin_requests"] for r in rs if "origin_requests" in r]
    row["origin_requests"] = median(reqs)
    if s.startswith("ferry"):
        row["disk_bytes"] = median([r["disk_bytes"] for r in rs])
    elif s.startswith("xcache"):
        row["disk_bytes"] = disk_after.get(s.rsplit("-", 1)[0] + "-disk", max(r["disk_bytes"] for r in rs))
    summary[s] = row

direct = summary.get("direct", {})
for s, row in summary.items():
    if direct.get("wall_s"):
        row["wall_vs_direct"] = row["wall_s"] / direct["wall_s"]
    if requested:
        row["wan_per_requested"] = row["wan_bytes"] / requested
        if row.get("disk_bytes") is not None:
            row["disk_per_requested"] = row["disk_bytes"] / requested

# Per-round ratios: direct and ferry of one round ran next to each other.
def paired(num_label, den_label, invert=False):
    by_round = {}
    for r in runs:
        if r.get("label") in (num_label, den_label) and r.get("round"):
            by_round.setdefault(r["round"], {})[r["label"]] = r["replay"].get("wall_s")
    ratios = []
    for rnd in sorted(by_round):
        pair = by_round[rnd]
        if pair.get(num_label) and pair.get(den_label):
            ratios.append(pair[den_label] / pair[num_label] if invert
                          else pair[num_label] / pair[den_label])
    return ratios


cold_ratios = paired("ferry-cold", "direct")
warm_speedups = paired("ferry-warm", "direct", invert=True)

targets = []


def target(name, value, limit, cmp, unit=""):
    if value is None or limit is None:
        return
    passed = value <= limit if cmp == "<=" else value >= limit
    targets.append({"name": name, "value": value, "target": "%s %s%s" % (cmp, limit, unit),
                    "pass": passed})


fc, fw = summary.get("ferry-cold", {}), summary.get("ferry-warm", {})
xc, xw = summary.get("xcache-tuned-cold", {}), summary.get("xcache-tuned-warm", {})
target("ferry cold wall / direct wall", median(cold_ratios), 1.02, "<=")
target("direct wall / ferry warm wall", median(warm_speedups), 30, ">=")
target("ferry cold bytes from origin / requested", fc.get("wan_per_requested"), 1.05, "<=")
target("ferry disk footprint / requested", fc.get("disk_per_requested"), 1.1, "<=")
if xc:
    target("ferry cold wall / XCache tuned cold wall", fc["wall_s"] / xc["wall_s"], 1.0, "<=")
    target("ferry cold bytes / XCache tuned cold bytes", fc["wan_bytes"] / max(1, xc["wan_bytes"]), 1.0, "<=")
    if xc.get("disk_bytes"):
        target("ferry disk / XCache tuned disk", fc["disk_bytes"] / xc["disk_bytes"], 1.0, "<=")
if xw:
    target("ferry warm wall / XCache tuned warm wall", fw["wall_s"] / xw["wall_s"], 1.0, "<=")

# ---- table ----
print("\ncache_wan: %d files x %s, RTT %s, %s, %d threads, requested %.1f MB per pass"
      % (config["files"], config["size"], config["rtt"], config["rate"], config["threads"],
         requested / 1e6))
hdr = "%-22s %8s %9s %8s %7s %9s %8s %9s %8s %9s %5s %s" % (
    "scenario", "wall_s", "vs_direct", "p50_ms", "cpu_s", "wan_MB", "wan/req", "origin_rq",
    "disk_MB", "disk/req", "idle", "status")
print(hdr)
print("-" * len(hdr))
for s in scenarios:
    if s not in summary:
        continue
    r = summary[s]
    def f(v, fmt):
        return fmt % v if v is not None else "-"
    print("%-22s %8s %9s %8s %7s %9s %8s %9s %8s %9s %5s %s" % (
        s, f(r["wall_s"], "%.3f"), f(r.get("wall_vs_direct"), "%.3fx"), f(r["p50_ms"], "%.1f"),
        f(r["cpu_s"], "%.3f"),
        f(r["wan_bytes"] / 1e6, "%.1f"), f(r.get("wan_per_requested"), "%.3f"),
        f(r.get("origin_requests"), "%d"),
        f(r["disk_bytes"] / 1e6 if r.get("disk_bytes") is not None else None, "%.1f"),
        f(r.get("disk_per_requested"), "%.3f"), f(r["idle_pct"], "%d"),
        ("ok" if r["ok"] else "FAILED") + ("+verified" if r["verified"] else "")))
if direct.get("wall_s") and fw.get("wall_s"):
    print("\nferry warm is %.1fx faster than direct%s" % (
        direct["wall_s"] / fw["wall_s"],
        "; XCache tuned warm %.1fx" % (direct["wall_s"] / xw["wall_s"]) if xw else ""))
print("(cpu_s: CPU seconds of the reading process; idle: % CPU idle on the machine just before"
      " a run — with little idle CPU, CPU-bound passes such as warm ones are slowed by others)")
print("\ntargets:")
for t in targets:
    print("  %-44s %10.3f   %-8s %s" % (t["name"], t["value"], t["target"],
                                          "PASS" if t["pass"] else "FAIL"))
print("  (wall-time targets: medians of per-round ratios, cold/direct %s, direct/warm %s)"
      % (["%.3f" % x for x in cold_ratios], ["%.1f" % x for x in warm_speedups]))

doc = {"config": config, "requested_bytes": requested, "scenarios": summary, "targets": targets,
       "cold_over_direct_per_round": cold_ratios, "warm_speedup_per_round": warm_speedups,
       "runs": runs}
json_path = report.write_json(out_dir, "cache_wan.json", doc)

# ---- plots ----
dat = os.path.join(out_dir, "cache_wan.dat")
with open(dat, "w") as fh:
    fh.write("scenario wall_s wan_per_req disk_per_req\n")
    for s in scenarios:
        if s in summary:
            r = summary[s]
            fh.write("%s %.4f %.4f %.4f\n" % (s, r["wall_s"], r.get("wan_per_requested", 0),
                                             r.get("disk_per_requested") or 0))
png = os.path.join(out_dir, "cache_wan.png")
gp = report.wall_and_bytes(
    png, "1200,520",
    "ferry cache vs direct and XCache over a %s RTT, %s link (%d x %s, 6%% sparse reads)"
    % (config["rtt"], config["rate"], config["files"], config["size"]),
    "set key autotitle columnhead\nset xtics rotate by -30",
    'plot "%s" using 2:xtic(1) notitle lc rgb "#3060c0"' % dat,
    "bytes from the origin and disk footprint",
    'plot "%s" using 3:xtic(1) title "from origin (wire)" lc rgb "#c04030", '
    '"" using 4 title "disk" lc rgb "#40a040"' % dat)
report.plot_and_tell(gp, json_path, png)
