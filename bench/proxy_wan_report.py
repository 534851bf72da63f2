#!/usr/bin/env python3
"""Summarises bench/proxy_wan.sh runs: table and targets on stdout, JSON and PNG in OUT.

usage: proxy_wan_report.py RUNS.jsonl OUT_DIR CONFIG_JSON
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import report  # noqa: E402
from report import median  # noqa: E402

runs, out_dir, config = report.load(sys.argv)
WORKLOADS = ["replay", "agc", "multi"]
SCENARIOS = ["direct", "proxy-cold", "proxy-warm", "xcache-default-cold", "xcache-default-warm",
             "xcache-tuned-cold", "xcache-tuned-warm"]


def wall(r):
    res = r["result"]
    if r["workload"] == "replay":
        return res.get("wall_s")
    if r["workload"] == "agc":
        return res.get("time", {}).get("wall_s")
    return r["process_s"]


def requested(r):
    res = r["result"]
    if r["workload"] == "agc":
        return res.get("io", {}).get("bytes_read")
    return res.get("bytes")


def delta(r, key, sub=None):
    a, b = r.get("proxy_after", {}), r.get("proxy_before", {})
    if sub:
        a, b = a.get(sub, {}), b.get(sub, {})
    if key not in a:
        return None
    return a.get(key, 0) - b.get(key, 0)


for r in runs:
    r["wall_s"] = wall(r)
    r["requested_bytes"] = requested(r)
    if r["scenario"].startswith("proxy"):
        r["origin_bytes"] = delta(r, "bytes_from_origin")
        r["origin_requests"] = delta(r, "origin_requests")
        # The status file is rewritten every second: a pass that sent nothing to the origin
        # still sees the end of the previous one's integral.
        inflight = delta(r, "origin_inflight_seconds", "proxy")
        r["origin_inflight_mean"] = (inflight / r["wall_s"] if inflight and r["wall_s"]
                                     and r["origin_requests"] else None)
        r["prefetched_bytes"] = delta(r, "prefetched_bytes", "proxy")
    elif r["scenario"] == "direct" and r["workload"] != "agc":
        r["origin_requests"] = r["result"].get("vector_reads")
    elif r["scenario"] == "direct":
        r["origin_requests"] = r["result"].get("io", {}).get("requests")

summary = {}
for w in WORKLOADS:
    for s in SCENARIOS:
        rs = [r for r in runs if r["workload"] == w and r["scenario"] == s]
        if not rs:
            continue
        row = {"runs": len(rs), "ok": all(r["exit"] == 0 for r in rs)}
        for k in ("wall_s", "requested_bytes", "wan_bytes", "origin_bytes", "origin_requests",
                  "disk_bytes", "idle_pct", "origin_inflight_mean", "prefetched_bytes"):
            row[k] = median([r.get(k) for r in rs])
        row["wall_s_all"] = [r["wall_s"] for r in rs]
        if w == "agc":
            row["digests"] = sorted({r["result"].get("digest") for r in rs if r["exit"] == 0})
        summary.setdefault(w, {})[s] = row


def paired(w, num, den):
    """Per-round wall ratios num/den of runs that ran next to each other."""
    by_round = {}
    for r in runs:
        if r["workload"] == w and r["scenario"] in (num, den) and r["round"]:
            by_round.setdefault(r["round"], {})[r["scenario"]] = r["wall_s"]
    return [p[num] / p[den] for _, p in sorted(by_round.items())
            if p.get(num) and p.get(den)]


targets = []


def target(name, value, limit, cmp):
    if value is None:
        return
    passed = value <= limit if cmp == "<=" else value >= limit
    targets.append({"name": name, "value": value, "target": "%s %s" % (cmp, limit),
                    "pass": passed})


ratios = {}
for w in ("replay", "agc"):
    sw = summary.get(w, {})
    d, c, wm = sw.get("direct", {}), sw.get("proxy-cold", {}), sw.get("proxy-warm", {})
    ratios[w] = {"cold_over_direct": paired(w, "proxy-cold", "direct"),
                 "direct_over_warm": paired(w, "direct", "proxy-warm")}
    target("%s: proxy cold / direct (wall)" % w, median(ratios[w]["cold_over_direct"]), 1.05,
           "<=")
    if w == "replay":
        target("replay: direct / proxy warm (wall)", median(ratios[w]["direct_over_warm"]), 30,
               ">=")
    if c.get("requested_bytes") and c.get("origin_bytes") is not None:
        target("%s: proxy origin bytes / requested" % w,
               c["origin_bytes"] / c["requested_bytes"], 1.05, "<=")
        target("%s: proxy disk / requested" % w, c["disk_bytes"] / c["requested_bytes"], 1.1,
               "<=")
    for prof in ("default", "tuned"):
        xw = sw.get("xcache-%s-warm" % prof, {})
        if xw.get("wall_s") and wm.get("wall_s"):
            target("%s: proxy warm / XCache %s warm (wall)" % (w, prof),
                   wm["wall_s"] / xw["wall_s"], 1.0, "<=")
    if w == "agc":
        digests = set()
        for row in sw.values():
            digests.update(row.get("digests", []))
        target("agc: distinct histogram digests over every pass", len(digests), 1, "<=")
multi = paired("multi", "direct", "proxy-cold")
target("multi: 8 processes, cold proxy throughput / direct", median(multi), 0.9, ">=")

# ---- table ----
print("\nproxy_wan: RTT %s, %s; replay 8 x 200 MiB (6%% sparse, 4 threads); agc %d files, %d "
      "events, 8 threads; multi 8 processes" % (config["rtt"], config["rate"],
                                                config["agc_files"], config["agc_events"]))
hdr = "%-7s %-20s %8s %7s %9s %9s %9s %8s %9s %8s %5s %5s %s" % (
    "load", "scenario", "wall_s", "vs_dir", "req_MB", "wan_MB", "orig_MB", "orig_rq",
    "disk_MB", "ahead_MB", "infl", "idle", "status")
print(hdr)
print("-" * len(hdr))
for w in WORKLOADS:
    d = summary.get(w, {}).get("direct", {})
    for s in SCENARIOS:
        r = summary.get(w, {}).get(s)
        if not r:
            continue

        def f(v, fmt, scale=1.0):
            return fmt % (v / scale) if v is not None else "-"
        vs = r["wall_s"] / d["wall_s"] if d.get("wall_s") and r["wall_s"] else None
        print("%-7s %-20s %8s %7s %9s %9s %9s %8s %9s %8s %5s %5s %s" % (
            w, s, f(r["wall_s"], "%.3f"), f(vs, "%.2fx"), f(r["requested_bytes"], "%.1f", 1e6),
            f(r["wan_bytes"], "%.1f", 1e6), f(r["origin_bytes"], "%.1f", 1e6),
            f(r["origin_requests"], "%d"), f(r["disk_bytes"], "%.1f", 1e6),
            f(r["prefetched_bytes"], "%.1f", 1e6), f(r["origin_inflight_mean"], "%.1f"),
            f(r["idle_pct"], "%d"), "ok" if r["ok"] else "FAILED"))
print("(wan_MB: wire bytes over the emulated link; orig_MB/orig_rq: what the proxy fetched "
      "and sent; ahead_MB: of that, read-ahead; infl: mean origin requests outstanding over the "
      "pass; idle: % CPU idle on this shared 2-core machine just before the run)")
print("\ntargets:")
for t in targets:
    print("  %-52s %9.3f   %-7s %s" % (t["name"], t["value"], t["target"],
                                         "PASS" if t["pass"] else "FAIL"))
for w, rr in ratios.items():
    print("  (%s per round: cold/direct %s, direct/warm %s)" % (
        w, ["%.3f" % x for x in rr["cold_over_direct"]],
        ["%.1f" % x for x in rr["direct_over_warm"]]))
print("  (multi per round: direct/cold %s)" % ["%.3f" % x for x in multi])

doc = {"config": config, "scenarios": summary, "targets": targets, "ratios": ratios,
       "multi_direct_over_cold": multi, "runs": runs}
json_path = report.write_json(out_dir, "proxy_wan.json", doc)

# ---- plots: wall time per scenario, and origin bytes / requested ----
dat = os.path.join(out_dir, "proxy_wan.dat")
with open(dat, "w") as fh:
    fh.write("scenario replay agc\n")
    for s in SCENARIOS:
        vals = [summary.get(w, {}).get(s, {}).get("wall_s") for w in ("replay", "agc")]
        if any(v for v in vals):
            fh.write("%s %s\n" % (s, " ".join("%.4f" % (v or 0) for v in vals)))
bdat = os.path.join(out_dir, "proxy_wan_bytes.dat")
with open(bdat, "w") as fh:
    fh.write("scenario wan/requested disk/requested\n")
    for s in SCENARIOS:
        r = summary.get("replay", {}).get(s)
        if r and r.get("requested_bytes"):
            fh.write("%s %.4f %.4f\n" % (s, r["wan_bytes"] / r["requested_bytes"],
                                         (r["disk_bytes"] or 0) / r["requested_bytes"]))
png = os.path.join(out_dir, "proxy_wan.png")
gp = report.wall_and_bytes(
    png, "1300,540",
    "ferry site proxy vs direct and XCache over a %s RTT, %s link" % (config["rtt"],
                                                                     config["rate"]),
    "set xtics rotate by -30\nset key top right",
    'plot "%s" using 2:xtic(1) title "sparse replay" lc rgb "#3060c0", '
    '"" using 3 title "AGC, 8 threads" lc rgb "#e08020"' % dat,
    "sparse replay: bytes over the WAN and disk footprint",
    'plot "%s" using 2:xtic(1) title "from origin (wire)" lc rgb "#c04030", '
    '"" using 3 title "disk" lc rgb "#40a040"' % bdat)
report.plot_and_tell(gp, json_path, png)
