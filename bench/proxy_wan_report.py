#!/usr/bin/env python3
"""Summarises bench/proxy_wan.sh runs: table and targets on stdout, JSON and PNG in OUT.

usage: proxy_wan_report.py RUNS.jsonl OUT_DIR CONFIG_JSON

CONFIG_JSON's "auth" (none|sss) and "https" say how the run was made; with "baseline" (the
JSON of a run without --auth) the paired ratios of both runs are printed side by side.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import report  # noqa: E402
from report import median  # noqa: E402

runs, out_dir, config = report.load(sys.argv)
WORKLOADS = ["replay", "agc", "multi", "xrdcp", "https-multi", "https-single"]
PAIRED = ["replay", "agc", "xrdcp", "https-multi", "https-single"]  # cold/direct, direct/warm
SCENARIOS = ["direct", "local", "plain-local", "proxy-cold", "proxy-fill", "proxy-warm",
             "xcache-default-cold", "xcache-default-warm", "xcache-tuned-cold",
             "xcache-tuned-warm"]
XCACHE_WARM = ["xcache-default-warm", "xcache-tuned-warm"]


def wall(r):
    res = r["result"]
    if r["workload"] == "replay" or r["workload"].startswith("https"):
        return res.get("wall_s")
    if r["workload"] == "agc":
        return res.get("time", {}).get("wall_s")
    return r["process_s"]


def per_gb(r, key):
    """The server's cost `key` (cpu_s, syscr) of a pass per GB it served."""
    cost, req = r.get("server_cost"), r.get("requested_bytes")
    return cost[key] / (req / 1e9) if cost and req else None


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
    r["cpu_s_per_gb"] = per_gb(r, "cpu_s")
    chunks = r["result"].get("chunks") if r["workload"] in ("replay", "multi") else None
    r["reads_per_basket"] = (r["server_cost"]["syscr"] / chunks
                             if r.get("server_cost") and chunks else None)
    if r["scenario"].startswith("proxy"):
        r["origin_bytes"] = delta(r, "bytes_from_origin")
        r["origin_requests"] = delta(r, "origin_requests")
        # The status file is rewritten every second: a pass that sent nothing to the origin
        # still sees the end of the previous one's integral.
        inflight = delta(r, "origin_inflight_seconds", "proxy")
        r["origin_inflight_mean"] = (inflight / r["wall_s"] if inflight and r["wall_s"]
                                     and r["origin_requests"] else None)
        r["prefetched_bytes"] = delta(r, "prefetched_bytes", "proxy")
    elif r["scenario"] == "direct" and r["workload"].startswith("https"):
        r["origin_requests"] = r["result"].get("requests")
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
                  "disk_bytes", "idle_pct", "origin_inflight_mean", "prefetched_bytes",
                  "cpu_s_per_gb", "reads_per_basket"):
            row[k] = median([r.get(k) for r in rs])
        row["wall_s_all"] = [r["wall_s"] for r in rs]
        if w.startswith("https"):  # what the curl clients sent and received
            for k in ("requests", "ranges", "body_bytes", "connects"):
                row["http_" + k] = median([r["result"].get(k) for r in rs])
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
for w in PAIRED:
    sw = summary.get(w, {})
    if not sw:
        continue
    d, c, wm = sw.get("direct", {}), sw.get("proxy-cold", {}), sw.get("proxy-warm", {})
    ratios[w] = {"cold_over_direct": paired(w, "proxy-cold", "direct"),
                 "direct_over_warm": paired(w, "direct", "proxy-warm")}
    if not w.startswith("https"):  # HTTPS has no target of its own: it is reported
        target("%s: proxy cold / direct (wall)" % w, median(ratios[w]["cold_over_direct"]),
               1.05, "<=")
    if w == "xrdcp":
        del ratios[w]["direct_over_warm"]  # its warm passes have their own phase (plain-local)
    if w == "replay":
        target("replay: direct / proxy warm (wall)", median(ratios[w]["direct_over_warm"]), 30,
               ">=")
    if c.get("requested_bytes") and c.get("origin_bytes") is not None and w in ("replay", "agc"):
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


def best_xcache(w, key, lower_is_better=True):
    """The best XCache profile's warm median of `key` for workload w (None without XCache)."""
    vals = [summary.get(w, {}).get(s, {}).get(key) for s in XCACHE_WARM]
    vals = [v for v in vals if v]
    return (min(vals) if lower_is_better else max(vals)) if vals else None


def ratio(a, b):
    return a / b if a is not None and b else None


def warm(w, key):
    return summary.get(w, {}).get("proxy-warm", {}).get(key)


# Issue 39's warm targets (medians of at least PROXY_WAN_WARM warm passes each).
warm_targets = {
    # CPU seconds of the proxy's processes per warm GB served, replay, over XCache's best.
    "warm_cpu_per_gb_vs_xcache": (ratio(warm("replay", "cpu_s_per_gb"),
                                        best_xcache("replay", "cpu_s_per_gb")), 0.5, "<="),
    # 8 replay processes, aggregate throughput: XCache's best warm wall over the proxy's.
    "warm_multi_vs_xcache": (ratio(best_xcache("multi", "wall_s"), warm("multi", "wall_s")),
                             1.3, ">="),
    # Warm AGC through the proxy over the same AGC reading the local files.
    "warm_agc_vs_local": (ratio(warm("agc", "wall_s"),
                                summary.get("agc", {}).get("local", {}).get("wall_s")), 1.10,
                          "<="),
    # Warm xrdcp through the proxy, throughput over a plain xrootd's from local disk.
    "warm_xrdcp_vs_plain": (ratio(summary.get("xrdcp", {}).get("plain-local", {}).get("wall_s"),
                                  warm("xrdcp", "wall_s")), 0.9, ">="),
    # Read syscalls of the proxy's xrootd per basket (chunk) of a warm replay pass.
    "warm_reads_per_basket": (warm("replay", "reads_per_basket"), 1.1, "<="),
}
for name, (value, limit, cmp) in warm_targets.items():
    target(name, value, limit, cmp)
# The floor of the replay's CPU per GB: a plain xrootd serving the files from local disk (no
# cache), which copies every kXR_readv segment through a buffer as any server inside XrdXrootd
# 5.5.3 must. What the proxy and XCache cost beside it (reported, no target).
plain_cpu = summary.get("replay", {}).get("plain-local", {}).get("cpu_s_per_gb")
warm_floor = {"plain_cpu_per_gb": plain_cpu,
              "proxy_over_plain": ratio(warm("replay", "cpu_s_per_gb"), plain_cpu),
              "xcache_best_over_plain": ratio(best_xcache("replay", "cpu_s_per_gb"), plain_cpu)}
target("agc: proxy warm / best XCache warm (wall)",
       ratio(warm("agc", "wall_s"), best_xcache("agc", "wall_s")), 1.0, "<=")

# ---- table ----
print("\nproxy_wan: RTT %s, %s; replay 8 x 200 MiB (6%% sparse, 4 threads); agc %d files, %d "
      "events, 8 threads; multi 8 processes; https: curl, 4 processes, the replay's chunks "
      "64 ranges per GET (https-multi) or every 16th chunk one per GET (https-single)"
      % (config["rtt"], config["rate"], config["agc_files"], config["agc_events"]))
print("auth: %s; https: %s; workloads: %s; load average at the end: %s" % (
    config.get("auth", "none"), config.get("https", False), config.get("workloads", "-"),
    config.get("load", "-")))
hdr = "%-12s %-20s %8s %7s %9s %9s %9s %8s %9s %8s %5s %7s %6s %5s %s" % (
    "workload", "scenario", "wall_s", "vs_dir", "req_MB", "wan_MB", "orig_MB", "orig_rq",
    "disk_MB", "ahead_MB", "infl", "cpu/GB", "rd/bk", "idle", "status")
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
        print("%-12s %-20s %8s %7s %9s %9s %9s %8s %9s %8s %5s %7s %6s %5s %s" % (
            w, s, f(r["wall_s"], "%.3f"), f(vs, "%.2fx"), f(r["requested_bytes"], "%.1f", 1e6),
            f(r["wan_bytes"], "%.1f", 1e6), f(r["origin_bytes"], "%.1f", 1e6),
            f(r["origin_requests"], "%d"), f(r["disk_bytes"], "%.1f", 1e6),
            f(r["prefetched_bytes"], "%.1f", 1e6), f(r["origin_inflight_mean"], "%.1f"),
            f(r["cpu_s_per_gb"], "%.2f"), f(r["reads_per_basket"], "%.2f"),
            f(r["idle_pct"], "%d"), "ok" if r["ok"] else "FAILED"))
print("(wan_MB: wire bytes over the emulated link; orig_MB/orig_rq: what the proxy fetched "
      "and sent (direct: the client's own requests); ahead_MB: of that, read-ahead; infl: mean "
      "origin requests outstanding over the pass; cpu/GB: CPU seconds of the server's "
      "processes per GB served; rd/bk: its xrootd's read syscalls per basket (chunk); idle: % "
      "CPU idle on this shared 2-core machine just before the run; wall_s and the rest: medians "
      "over the passes)")
https_rows = [(w, s, r) for w in WORKLOADS if w.startswith("https")
              for s, r in summary.get(w, {}).items()]
if https_rows:
    print("\nhttps (curl): GETs, ranges, body bytes received (multipart framing included), TCP "
          "connections opened")
    for w, s, r in https_rows:
        print("  %-12s %-12s %6s GETs %7s ranges %9.1f MB body %4s connections" % (
            w, s, r.get("http_requests"), r.get("http_ranges"),
            (r.get("http_body_bytes") or 0) / 1e6, r.get("http_connects")))
print("\ntargets:")
for t in targets:
    print("  %-52s %9.3f   %-7s %s" % (t["name"], t["value"], t["target"],
                                         "PASS" if t["pass"] else "FAIL"))
for w, rr in ratios.items():
    print("  (%s per round: cold/direct %s, direct/warm %s)" % (
        w, ["%.3f" % x for x in rr["cold_over_direct"]],
        ["%.1f" % x for x in rr.get("direct_over_warm", [])]))
if multi:
    print("  (multi per round: direct/cold %s)" % ["%.3f" % x for x in multi])

# ---- beside the run without --auth ----
comparison = None
if config.get("baseline"):
    with open(config["baseline"]) as fh:
        base = json.load(fh)
    comparison = {}
    print("\nratios beside the run without --auth (%s; its load: %s):" % (
        config["baseline"], base.get("config", {}).get("load", "-")))
    print("  %-36s %10s %10s" % ("median of per-round ratios", "no auth", config["auth"]))

    def show(name, a, b):
        comparison[name] = {"none": a, config["auth"]: b}
        print("  %-36s %10s %10s" % (name, "%.3f" % a if a is not None else "-",
                                     "%.3f" % b if b is not None else "-"))
    for w in PAIRED:
        br = base.get("ratios", {}).get(w, {})
        if w not in ratios:  # only what this run measured
            continue
        rr = ratios.get(w, {})
        show("%s: proxy cold / direct" % w, median(br.get("cold_over_direct", [])),
             median(rr.get("cold_over_direct", [])))
        show("%s: direct / proxy warm" % w, median(br.get("direct_over_warm", [])),
             median(rr.get("direct_over_warm", [])))
    if multi:
        show("multi: direct / proxy cold", median(base.get("multi_direct_over_cold", [])),
             median(multi))

print("\nissue 39's warm targets (medians of warm passes; a shared machine: indicative):")
for name, (value, limit, cmp) in warm_targets.items():
    print("  %-28s %9s   %s %s" % (name, "%.3f" % value if value is not None else "-", cmp, limit))
print("  replay CPU floor (plain xrootd from local disk): %s s/GB; proxy %s x it, best XCache %s x"
      % tuple("%.3f" % v if v is not None else "-" for v in warm_floor.values()))

doc = {"config": config, "scenarios": summary, "targets": targets, "ratios": ratios,
       "multi_direct_over_cold": multi, "baseline_comparison": comparison, "runs": runs}
doc.update({name: value for name, (value, _, _) in warm_targets.items()})
doc["warm_cpu_floor"] = warm_floor
json_path = report.write_json(out_dir, "proxy_wan.json", doc)

# ---- plots: wall time per scenario, and origin bytes / requested ----
LABELS = {"replay": "sparse replay", "agc": "AGC, 8 threads", "multi": "8 replay processes",
          "xrdcp": "xrdcp 3 x 200 MiB", "https-multi": "HTTPS 64-range GETs",
          "https-single": "HTTPS 1-range GETs"}
COLOURS = {"replay": "#3060c0", "agc": "#e08020", "multi": "#60a030", "xrdcp": "#c03060",
           "https-multi": "#8040a0", "https-single": "#20a0a0"}
# Every workload measured has a column: a run of some workloads only drew nothing in a panel
# whose columns were all absent, and gnuplot fails on a bare "plot".
cols = [w for w in WORKLOADS if any(r.get("wall_s") for r in summary.get(w, {}).values())]


def cell(v, fmt="%.4f"):
    return fmt % v if v is not None else "?"  # gnuplot: missing


def histogram(path, columns, rows):
    """Writes a gnuplot data file (a header line, then one line per scenario with a value);
    returns the plot command drawing its columns (titles, colours), None without columns."""
    lines = [(s, vals) for s, vals in rows if any(v is not None for v in vals)]
    if not columns or not lines:
        return None
    with open(path, "w") as fh:
        fh.write("scenario %s\n" % " ".join(name for name, _, _ in columns))
        for s, vals in lines:
            fh.write("%s %s\n" % (s, " ".join(cell(v) for v in vals)))
    return "plot " + ", ".join(
        '%s using %d%s title "%s" lc rgb "%s"' % ('"%s"' % path if i == 0 else '""', i + 2,
                                                  ":xtic(1)" if i == 0 else "", title, colour)
        for i, (_, title, colour) in enumerate(columns))


wall_plot = histogram(
    os.path.join(out_dir, "proxy_wan.dat"), [(w, LABELS[w], COLOURS[w]) for w in cols],
    [(s, [summary.get(w, {}).get(s, {}).get("wall_s") for w in cols]) for s in SCENARIOS])
bcols = [w for w in ("replay", "agc", "xrdcp", "https-multi")
         if summary.get(w, {}).get("proxy-cold", {}).get("requested_bytes")]
PAIR_COLOURS = {"replay": ("#c04030", "#40a040"), "agc": ("#e08020", "#f0c080"),
                "xrdcp": ("#c03060", "#e090b0"), "https-multi": ("#e07060", "#80d080")}


def bytes_row(s):
    vals = []
    for w in bcols:
        r = summary.get(w, {}).get(s) or {}
        req = r.get("requested_bytes")
        vals += [r["wan_bytes"] / req if req and r.get("wan_bytes") is not None else None,
                 (r.get("disk_bytes") or 0) / req if req else None]
    return vals


bytes_plot = histogram(
    os.path.join(out_dir, "proxy_wan_bytes.dat"),
    [("%s-%s" % (w, k), "%s: %s" % (LABELS[w], "from origin (wire)" if k == "wan" else "disk"),
      PAIR_COLOURS[w][0 if k == "wan" else 1]) for w in bcols for k in ("wan", "disk")],
    [(s, bytes_row(s)) for s in SCENARIOS])
png = os.path.join(out_dir, "proxy_wan.png")
xcache = any(s.startswith("xcache") for sw in summary.values() for s in sw)
title = "ferry site proxy vs direct%s over a %s RTT, %s link%s" % (
    " and XCache" if xcache else "", config["rtt"], config["rate"],
    "; auth " + config["auth"] if config.get("auth", "none") != "none" else "")
gp = report.wall_and_bytes(
    png, "1300,540", title,
    'set xtics rotate by -30\nset key top right autotitle columnhead\nset datafile missing "?"',
    wall_plot, "bytes over the WAN and disk footprint per byte requested", bytes_plot)
report.plot_and_tell(gp, json_path, png)
