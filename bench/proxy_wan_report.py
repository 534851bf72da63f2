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
WORKLOADS = ["replay", "agc", "multi", "https-multi", "https-single"]
PAIRED = ["replay", "agc", "https-multi", "https-single"]  # cold/direct and direct/warm
SCENARIOS = ["direct", "proxy-cold", "proxy-warm", "xcache-default-cold", "xcache-default-warm",
             "xcache-tuned-cold", "xcache-tuned-warm"]


def wall(r):
    res = r["result"]
    if r["workload"] == "replay" or r["workload"].startswith("https"):
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
                  "disk_bytes", "idle_pct", "origin_inflight_mean", "prefetched_bytes"):
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

# ---- table ----
print("\nproxy_wan: RTT %s, %s; replay 8 x 200 MiB (6%% sparse, 4 threads); agc %d files, %d "
      "events, 8 threads; multi 8 processes; https: curl, 4 processes, the replay's chunks "
      "64 ranges per GET (https-multi) or every 16th chunk one per GET (https-single)"
      % (config["rtt"], config["rate"], config["agc_files"], config["agc_events"]))
print("auth: %s; https: %s; workloads: %s; load average at the end: %s" % (
    config.get("auth", "none"), config.get("https", False), config.get("workloads", "-"),
    config.get("load", "-")))
hdr = "%-12s %-20s %8s %7s %9s %9s %9s %8s %9s %8s %5s %5s %s" % (
    "workload", "scenario", "wall_s", "vs_dir", "req_MB", "wan_MB", "orig_MB", "orig_rq",
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
        print("%-12s %-20s %8s %7s %9s %9s %9s %8s %9s %8s %5s %5s %s" % (
            w, s, f(r["wall_s"], "%.3f"), f(vs, "%.2fx"), f(r["requested_bytes"], "%.1f", 1e6),
            f(r["wan_bytes"], "%.1f", 1e6), f(r["origin_bytes"], "%.1f", 1e6),
            f(r["origin_requests"], "%d"), f(r["disk_bytes"], "%.1f", 1e6),
            f(r["prefetched_bytes"], "%.1f", 1e6), f(r["origin_inflight_mean"], "%.1f"),
            f(r["idle_pct"], "%d"), "ok" if r["ok"] else "FAILED"))
print("(wan_MB: wire bytes over the emulated link; orig_MB/orig_rq: what the proxy fetched "
      "and sent (direct: the client's own requests); ahead_MB: of that, read-ahead; infl: mean "
      "origin requests outstanding over the pass; idle: % CPU idle on this shared 2-core "
      "machine just before the run)")
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
        ["%.1f" % x for x in rr["direct_over_warm"]]))
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

doc = {"config": config, "scenarios": summary, "targets": targets, "ratios": ratios,
       "multi_direct_over_cold": multi, "baseline_comparison": comparison, "runs": runs}
json_path = report.write_json(out_dir, "proxy_wan.json", doc)

# ---- plots: wall time per scenario, and origin bytes / requested ----
LABELS = {"replay": "sparse replay", "agc": "AGC, 8 threads", "https-multi": "HTTPS 64-range GETs",
          "https-single": "HTTPS 1-range GETs"}
COLOURS = {"replay": "#3060c0", "agc": "#e08020", "https-multi": "#8040a0",
           "https-single": "#20a0a0"}
cols = [w for w in PAIRED if summary.get(w)]


def cell(v, fmt="%.4f"):
    return fmt % v if v is not None else "?"  # gnuplot: missing


dat = os.path.join(out_dir, "proxy_wan.dat")
with open(dat, "w") as fh:
    fh.write("scenario %s\n" % " ".join(cols))
    for s in SCENARIOS:
        vals = [summary.get(w, {}).get(s, {}).get("wall_s") for w in cols]
        if any(v for v in vals):
            fh.write("%s %s\n" % (s, " ".join(cell(v) for v in vals)))
bcols = [w for w in ("replay", "https-multi") if summary.get(w)]
bdat = os.path.join(out_dir, "proxy_wan_bytes.dat")
with open(bdat, "w") as fh:
    fh.write("scenario %s\n" % " ".join("%s-wan %s-disk" % (w, w) for w in bcols))
    for s in SCENARIOS:
        vals = []
        for w in bcols:
            r = summary.get(w, {}).get(s) or {}
            req = r.get("requested_bytes")
            vals += [r["wan_bytes"] / req if req and r.get("wan_bytes") is not None else None,
                     (r.get("disk_bytes") or 0) / req if req else None]
        if any(v is not None for v in vals):
            fh.write("%s %s\n" % (s, " ".join(cell(v) for v in vals)))
wall_plot = "plot " + ", ".join(
    '%s using %d%s title "%s" lc rgb "%s"' % ('"%s"' % dat if i == 0 else '""', i + 2,
                                              ":xtic(1)" if i == 0 else "", LABELS[w], COLOURS[w])
    for i, w in enumerate(cols))
bytes_plot = "plot " + ", ".join(
    '%s using %d%s title "%s" lc rgb "%s"' % (
        '"%s"' % bdat if i == 0 else '""', i + 2, ":xtic(1)" if i == 0 else "",
        "%s: %s" % (LABELS[bcols[i // 2]], "from origin (wire)" if i % 2 == 0 else "disk"),
        ("#c04030", "#40a040", "#e07060", "#80d080")[i])
    for i in range(2 * len(bcols)))
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
