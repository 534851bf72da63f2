#!/usr/bin/env python3
"""Summarises bench/encrypted_cache.sh runs: table on stdout, JSON and a PNG in OUT.

usage: encrypted_cache_report.py RUNS.jsonl OUT_DIR CONFIG_JSON
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import report  # noqa: E402
from report import median  # noqa: E402

runs, out_dir, config = report.load(sys.argv)
LIMIT = 1.05  # issue 42: encrypted warm pass at most 1.05x the plain one

workloads = [w for w in ("replay", "agc") if any(r["workload"] == w for r in runs)]
# (tier, plain kind, encrypted kind): the client cache through the plug-in, the site proxy, and
# (AGC) the client cache with its replica tier (replica = auto), plain against sealed replicas.
PAIRS = (("client", "plain", "encrypted"), ("proxy", "proxy-plain", "proxy-encrypted"),
         ("replica", "replica", "replica-encrypted"))
KINDS = ("plain", "encrypted", "replica", "replica-encrypted", "proxy-plain", "proxy-encrypted")


def total_cpu(r):
    """CPU seconds of a pass: the reading process, and the proxy's processes for a proxy."""
    if r.get("cpu_s") is None:
        return None
    return r["cpu_s"] + (r.get("server_cpu_s") or 0)


def pair_summary(w, rows, plain, enc):
    """Encrypted against plain warm passes of workload w: per-round ratios and their medians."""
    by_round = {}
    for r in runs:
        if r["workload"] == w and r["pass"] == "warm":
            by_round.setdefault(r["round"], {})[r["kind"]] = r
    ratios = {"wall": [], "cpu": [], "server_cpu": []}
    for k in sorted(by_round):
        p, e = by_round[k].get(plain), by_round[k].get(enc)
        if not (p and e and p["wall_s"] and e["wall_s"]):
            continue
        ratios["wall"].append(e["wall_s"] / p["wall_s"])
        if total_cpu(p) and total_cpu(e):
            ratios["cpu"].append(total_cpu(e) / total_cpu(p))
        if p.get("server_cpu_s") and e.get("server_cpu_s"):
            ratios["server_cpu"].append(e["server_cpu_s"] / p["server_cpu_s"])
    pw, ew = rows.get(plain + "-warm", {}), rows.get(enc + "-warm", {})
    pc, ec = rows.get(plain + "-cold", {}), rows.get(enc + "-cold", {})
    s = {"warm_wall_ratio_per_round": ratios["wall"], "warm_cpu_ratio_per_round": ratios["cpu"],
         "warm_wall_ratio": median(ratios["wall"]), "warm_cpu_ratio": median(ratios["cpu"])}
    if ratios["server_cpu"]:
        s["warm_server_cpu_ratio_per_round"] = ratios["server_cpu"]
        s["warm_server_cpu_ratio"] = median(ratios["server_cpu"])
    if pw.get("wall_s") and ew.get("wall_s"):
        s["warm_wall_ratio_of_medians"] = ew["wall_s"] / pw["wall_s"]
    if pc.get("wall_s") and ec.get("wall_s"):
        s["cold_wall_ratio"] = ec["wall_s"] / pc["wall_s"]
    clean = all(r.get("origin_requests", 1) == 0 and r.get("crc_failures", 1) == 0
                and r.get("replica_faults", 0) == 0 for r in (pw, ew))
    return s, clean


summary, targets = {}, []
for w in workloads:
    rows = {}
    for kind in KINDS:
        for pazz in ("cold", "settle", "warm"):
            rs = [r for r in runs if r["workload"] == w and r["kind"] == kind and r["pass"] == pazz]
            if not rs:
                continue
            rows["%s-%s" % (kind, pazz)] = {
                "runs": len(rs),
                "ok": all(r["exit"] == 0 for r in rs),
                "wall_s": median([r["wall_s"] for r in rs]),
                "wall_s_all": [r["wall_s"] for r in rs],
                "cpu_s": median([r["cpu_s"] for r in rs]),
                "cpu_s_all": [r["cpu_s"] for r in rs],
                "server_cpu_s": median([r.get("server_cpu_s") for r in rs]),
                "bytes": median([r["bytes"] for r in rs]),
                "hits": median([r["cache"].get("hits") for r in rs]),
                "origin_requests": sum(r["cache"].get("origin_requests", 0) for r in rs),
                "crc_failures": sum(r["cache"].get("crc_failures", 0) for r in rs),
                "replica_faults": sum(r["cache"].get("replica_faults", 0) for r in rs),
                "writes_dropped": sum(r["cache"].get("writes_dropped", 0) for r in rs),
                "idle_pct": median([r["idle_pct"] for r in rs]),
                "load1": median([r["load1"] for r in rs]),
            }
    # Per-round ratios: the passes of a round ran next to each other. The client cache's keys
    # stay at the top level (as before the proxy pair), the proxy's under "proxy".
    s, clean = pair_summary(w, rows, "plain", "encrypted")
    s["rows"] = rows
    tiers = [("client", s, clean)]
    for tier, plain, enc in PAIRS[1:]:
        if plain + "-warm" in rows and enc + "-warm" in rows:
            s[tier], ok = pair_summary(w, rows, plain, enc)
            tiers.append((tier, s[tier], ok))
    ew = rows.get("encrypted-warm", {})
    rw = rows.get("replica-warm", {})
    if rw.get("wall_s") and ew.get("wall_s"):
        # Not the target (that is the same byte tier, encrypted or not): what an encrypted cache
        # gives up against the default unencrypted one, whose AGC passes read replicas.
        s["encrypted_over_replica_warm"] = ew["wall_s"] / rw["wall_s"]
    summary[w] = s
    for tier, t, ok in tiers:
        if t["warm_wall_ratio"] is not None:
            v = t["warm_wall_ratio"]
            targets.append({"name": "%s %s: encrypted warm wall / plain warm wall" % (w, tier),
                            "value": v, "target": "<= %.2f" % LIMIT, "pass": v <= LIMIT})
        targets.append({"name": "%s %s: warm passes: no origin request, no check failure"
                                % (w, tier), "value": float(ok), "target": "== 1", "pass": ok})


def f(v, fmt):
    return fmt % v if v is not None else "-"


print("(plain: replica = off, the encrypted cache's byte tier unencrypted; replica: the default"
      " replica = auto, replica-encrypted: with the key (sealed replicas); proxy-*: `ferry proxy"
      " run` with --set replica=off, and --encrypt-key)")
print("\nencrypted_cache: replay %d x %s (%d threads), agc %d events in %d files; %d warm rounds"
      % (config["files"], config["size"], config["threads"], config["agc_events"],
         config["agc_files"], config["repeat"]))
print("before: %s\nafter:  %s" % (config["uptime_before"], config["uptime_after"]))
hdr = "%-8s %-22s %4s %8s %7s %7s %9s %9s %7s %7s %7s %6s %5s %s" % (
    "workload", "pass", "runs", "wall_s", "cpu_s", "srv_cpu", "MB", "hits", "origin", "failed",
    "dropped", "load", "idle", "status")
print(hdr)
print("-" * len(hdr))
for w in workloads:
    for name, r in summary[w]["rows"].items():
        print("%-8s %-22s %4d %8s %7s %7s %9s %9s %7d %7d %7d %6s %5s %s" % (
            w, name, r["runs"], f(r["wall_s"], "%.3f"), f(r["cpu_s"], "%.3f"),
            f(r["server_cpu_s"], "%.3f"),
            f(r["bytes"] / 1e6 if r["bytes"] is not None else None, "%.1f"),
            f(r["hits"], "%d"), r["origin_requests"], r["crc_failures"], r["writes_dropped"],
            f(r["load1"], "%.1f"),
            f(r["idle_pct"], "%d"), "ok" if r["ok"] else "FAILED"))
for w in workloads:
    for tier, s in [("client", summary[w])] + [(t, summary[w].get(t)) for t, _, _ in PAIRS[1:]]:
        if not s:
            continue
        print("%s %s: encrypted/plain warm wall %s (per round %s; of medians %s), CPU %s (per"
              " round %s)%s%s"
              % (w, tier, f(s["warm_wall_ratio"], "%.3f"),
                 ["%.3f" % x for x in s["warm_wall_ratio_per_round"]],
                 f(s.get("warm_wall_ratio_of_medians"), "%.3f"), f(s["warm_cpu_ratio"], "%.3f"),
                 ["%.3f" % x for x in s["warm_cpu_ratio_per_round"]],
                 "; the proxy's CPU %.3f" % s["warm_server_cpu_ratio"]
                 if s.get("warm_server_cpu_ratio") else "",
                 "; cold %.3f" % s["cold_wall_ratio"] if s.get("cold_wall_ratio") else ""))
    s = summary[w]
    if s.get("encrypted_over_replica_warm"):
        print("%s: encrypted warm / plain cache with its replica tier (replica = auto) warm %.3f"
              % (w, s["encrypted_over_replica_warm"]))
print("disk: plain %.1f MB, encrypted %.1f MB" % (config["disk_plain"] / 1e6,
                                                  config["disk_encrypted"] / 1e6))
print("(cpu_s: CPU seconds of the reading process; srv_cpu: of the proxy's processes; the"
      " proxy pair's CPU ratio is of both together; origin: origin requests; failed: pages or"
      " fragments that failed their check; dropped: writes the write-behind dropped; load: 1-minute"
      " load average before a pass; idle: % CPU idle in the second before it; settle: untimed"
      " passes after the fill, until one was all hits)")
seal = config.get("page_seal_bench", {})
print("\nper-page check on one core (bin/page_seal_bench, best of %s over %s bytes):"
      % (seal.get("rounds"), seal.get("bytes")))
for p in seal.get("page_sizes", []):
    print("  page %6d: crc32c %6.2f GB/s | open %5.2f GB/s (%6.0f ns/page), two entries in turn"
          " %5.2f | seal %5.2f GB/s | bare AES-GCM %5.2f GB/s (%6.0f ns/page)"
          % (p["page_size"], p["crc32c"]["gb_per_s"], p["open"]["gb_per_s"],
             p["open"]["ns_per_page"], p["open_2keys"]["gb_per_s"], p["seal"]["gb_per_s"],
             p["bare_gcm"]["gb_per_s"], p["bare_gcm"]["ns_per_page"]))
for line in config.get("openssl_speed", []):
    print("  openssl speed: %s (kB/s per column)" % line["line"])
rr = config.get("replica_read_bench", {})
if rr.get("sealed"):
    p, e = rr["plain"], rr["sealed"]
    print("warm read of a replica's %d extents (%.0f MB), vector reads of %d (bin/replica_read_bench):"
          " plain %.0f ns/KiB, sealed %.0f ns/KiB of CPU (medians of %d rounds): %.2fx"
          % (p["extents"], p["extent_bytes"] / 1e6, rr["extents_per_read"],
             p["median_ns_per_kib"], e["median_ns_per_kib"], rr["rounds"],
             e["median_ns_per_kib"] / p["median_ns_per_kib"]))
print("\ntargets:")
for t in targets:
    print("  %-58s %8.3f   %-8s %s" % (t["name"], t["value"], t["target"],
                                       "PASS" if t["pass"] else "FAIL"))

# ENC_PERF=1: where each kind's extra pass spent its CPU (perf report by library, then symbol).
perf = {}
for name in sorted(os.listdir(out_dir)):
    if name.startswith("perf-") and name.endswith(".txt"):
        with open(os.path.join(out_dir, name)) as fh:
            perf[name[len("perf-"):-len(".txt")]] = [line.rstrip() for line in fh if line.strip()]
for name, lines in perf.items():
    if name.endswith(".dso"):
        print("\nperf, %s (share of samples by library):" % name[:-len(".dso")])
        for line in lines[:6]:
            print("  " + line.strip())

doc = {"config": config, "workloads": summary, "targets": targets, "runs": runs, "perf": perf}
json_path = report.write_json(out_dir, "encrypted_cache.json", doc)

# ---- plot: warm wall and CPU per workload, plain beside encrypted; the per-page check ----
dat = os.path.join(out_dir, "encrypted_cache.dat")
with open(dat, "w") as fh:
    fh.write("pass plain encrypted\n")
    for w in workloads:
        rows = summary[w]["rows"]
        for tier, plain, enc in PAIRS:
            pr, er = rows.get(plain + "-warm", {}), rows.get(enc + "-warm", {})
            cpu = [(pr.get("cpu_s") or 0) + (pr.get("server_cpu_s") or 0),
                   (er.get("cpu_s") or 0) + (er.get("server_cpu_s") or 0)]
            for what, (p, e) in (("wall", (pr.get("wall_s"), er.get("wall_s"))), ("cpu", cpu)):
                if p and e:
                    fh.write("%s-%s-%s 1.0 %.4f\n" % (w, tier, what, e / p))
dat2 = os.path.join(out_dir, "encrypted_cache_check.dat")
with open(dat2, "w") as fh:
    fh.write("page crc32c open bare_gcm\n")
    for p in seal.get("page_sizes", []):
        fh.write("%d %.3f %.3f %.3f\n" % (p["page_size"], p["crc32c"]["gb_per_s"],
                                          p["open"]["gb_per_s"], p["bare_gcm"]["gb_per_s"]))
png = os.path.join(out_dir, "encrypted_cache.png")
gp = """
set terminal pngcairo size 1200,520 font ",10" noenhanced
set output "%s"
set multiplot layout 1,2 title "ferry client cache and site proxy: encrypted (AES-256-GCM) vs plain, warm passes (medians of %d)"
%s
set key top left autotitle columnhead
set xtics rotate by -20
set ylabel "encrypted / plain (ratio of the medians)"
set title "warm pass, relative to the plain cache (target <= %.2f)"
set yrange [0:*]
set arrow from graph 0, first %.2f to graph 1, first %.2f nohead dt 2 lc rgb "#c04030"
plot "%s" using 2:xtic(1) lc rgb "#40a040", "" using 3 lc rgb "#3060c0"
unset arrow
set xtics norotate
set ylabel "GB/s on one core"
set title "checking one cached page (page_seal_bench)"
set xlabel "page size [bytes]"
plot "%s" using 2:xtic(1) lc rgb "#40a040", "" using 3 lc rgb "#3060c0", "" using 4 lc rgb "#909090"
unset multiplot
""" % (png, config["repeat"], report.HISTOGRAM_STYLE, LIMIT, LIMIT, LIMIT, dat, dat2)
report.plot_and_tell(gp, json_path, png)
