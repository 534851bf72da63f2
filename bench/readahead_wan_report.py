#!/usr/bin/env python3
"""Summarises bench/readahead_wan.sh runs: table and targets on stdout, JSON and PNG in OUT.

usage: readahead_wan_report.py RUNS.jsonl OUT_DIR CONFIG_JSON
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import report  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from inorder_limit import describe as describe_limit, inorder_limit  # noqa: E402
from report import median  # noqa: E402

runs, out_dir, config = report.load(sys.argv)

# Counters are cumulative per cache directory: per-run deltas (cold runs start a directory).
prev = {}
for r in runs:
    cur = r.get("cache_stats") or {}
    if "cold" in r["label"]:
        prev = {}
    r["delta"] = {k: v - prev.get(k, 0) for k, v in cur.items() if isinstance(v, (int, float))}
    if cur:
        prev = cur


def rate_bps(s):
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    for u, m in units.items():
        if s.endswith(u):
            return float(s[:-len(u)]) * m / 8
    return float(s) / 8


# The link rate of the limit: the nominal rate, or what iperf3 measured through the emulation in
# the same run when that is lower (the delay emulator shares the machine's cores).
nominal = rate_bps(config["rate"])
measured = config.get("measured_bps", 0) / 8
link = min(nominal, measured) if measured > 0 else nominal
labels = []
for r in runs:
    if r["label"] not in labels:
        labels.append(r["label"])
summary = {}
for label in labels:
    rs = [r for r in runs if r["label"] == label]
    ok = all(r["exit"] == 0 for r in rs)
    summary[label] = {
        "runs": len(rs), "ok": ok,
        "seconds": median(r["seconds"] for r in rs),
        "wan_bytes": median(r["wan_bytes"] for r in rs),
        "idle_pct": median(r["idle_pct"] for r in rs),
        "prefetch_bytes": median(r["delta"].get("prefetch_bytes", 0) for r in rs),
        "prefetch_unused_bytes": median(r["delta"].get("prefetch_unused_bytes", 0)
                                                   for r in rs),
        "prefetch_hits": median(r["delta"].get("prefetch_hits", 0) for r in rs),
        "origin_logins": max(r.get("origin_logins", 0) for r in rs),
        "bytes_from_origin": median(r["delta"].get("bytes_from_origin", 0)
                                               for r in rs),
        "digest": rs[0]["out"].get("digest"),
        # The python client's count, or agc's own.
        "bytes_read": rs[0]["out"].get("bytes") or rs[0]["out"].get("io", {}).get("bytes_read"),
    }

# Bytes a pass reads: the python client counts them; agc reads the same baskets.
bytes_read = next((s["bytes_read"] for l, s in summary.items() if l.startswith("py-") and
                   s["bytes_read"]), 0) or next(
    (s["bytes_read"] for l, s in summary.items() if l.startswith("agc-") and s["bytes_read"]), 0)
print("readahead_wan: %d files, %.2f GB in %s; RTT %s, link %s; AGC baskets read %.1f MB"
      % (config["files"], config["data_bytes"] / 1e9, config["data"], config["rtt"],
         config["rate"], bytes_read / 1e6))
print("%-20s %9s %9s %11s %11s %9s %7s" % ("scenario", "seconds", "WAN MB", "prefetch MB",
                                           "unused MB", "hits", "idle%"))
for label, s in summary.items():
    print("%-20s %9.2f %9.1f %11.1f %11.2f %9d %7.0f%s" % (
        label, s["seconds"], s["wan_bytes"] / 1e6, s["prefetch_bytes"] / 1e6,
        s["prefetch_unused_bytes"] / 1e6, s["prefetch_hits"], s["idle_pct"],
        "" if s["ok"] else "  (FAILED RUN)"))

targets = []


def target(name, value, limit, passed):
    targets.append({"target": name, "value": value, "limit": limit, "pass": bool(passed)})
    print("%-4s %s: %s (target %s)" % ("PASS" if passed else "FAIL", name, value, limit))


print()
print("link: nominal %.1f MB/s, iperf3 in this run %.1f MB/s; the limit uses %.1f MB/s" % (
    nominal / 1e6, measured / 1e6, link / 1e6))
for client in ("agc", "py"):
    if "%s-cold-ahead" % client not in summary:
        continue
    # The same pass on local copies: the local run, or the warm pass (the same bytes from the
    # cache's disk), whichever is faster — the machine is shared and a single run can be slow.
    local = min(summary["%s-local" % client]["seconds"], summary["%s-warm" % client]["seconds"])
    bound = max(bytes_read / link, local)
    cold = summary["%s-cold-ahead" % client]["seconds"]
    noahead = summary["%s-cold-noahead" % client]["seconds"]
    direct = summary["%s-direct" % client]["seconds"]
    print("%s: direct %.2f s, cold without read-ahead %.2f s, cold with %.2f s (%.2fx faster), "
          "warm %.2f s; physical limit max(%.2f s link, %.2f s local or warm) = %.2f s" % (
              client, direct, noahead, cold, noahead / cold if cold else 0,
              summary["%s-warm" % client]["seconds"], bytes_read / link,
              local, bound))
    target("%s cold with read-ahead / physical limit" % client, round(cold / bound, 2),
           "<= 1.10", cold <= 1.10 * bound)
    s = summary["%s-cold-ahead" % client]
    frac = s["prefetch_unused_bytes"] / bytes_read if bytes_read else 0
    target("%s prefetched bytes never used / bytes read" % client, "%.2f%%" % (100 * frac),
           "<= 2%", frac <= 0.02)
# The in-order limit (issue 27): a client that decodes its files in order cannot overlap its
# last files' decoding with transfers that ended before it,
#   L = max over k of (link time of files 1..k + local CPU of files k..n) + one RTT per file
#       opened one after another (scripts/inorder_limit.py),
# with per-file bytes and CPU from the agc runs of this run (local CPU: the local pass). agc
# --reads 4 decodes as agc does and has the same L; the python client reads the same baskets and
# decodes nothing: its per-file time is its local pass's time shared out evenly.
def inorder_limits():
    local = next((r for r in runs if r["label"] == "agc-local" and r["out"].get("files")), None)
    if not local:
        return {}
    rtt = float(config["rtt"].rstrip("ms")) / 1000 if config["rtt"].endswith("ms") else 0.0
    files = local["out"]["files"]
    # agc opens READAHEAD_WAN_OPENS files at a time; the python client one after another.
    opens = int(config.get("opens", 1))
    limits = {"agc": inorder_limit(files, link, rtt, opens),
              "agc4": inorder_limit(files, link, rtt, opens)}
    if "py-local" in summary:
        share = summary["py-local"]["seconds"] / len(files)
        py_files = [{"planned_bytes": f.get("planned_bytes", 0), "cpu_s": share} for f in files]
        limits["py"] = inorder_limit(py_files, link, rtt)
    return limits


def transfer_phase(label):
    """The link's rate over the transfer phases of the label's first run (report.transfer_rate)."""
    r = next((r for r in runs if r["label"] == label and r.get("link_samples")), None)
    return report.transfer_rate(r["link_samples"], link) if r else None


def iperf_wire_rate():
    """iperf3's rate on the counter the passes are sampled on (wire bytes), over its own busy
    bins; None when it was not sampled."""
    try:
        with open(config.get("iperf_link_samples", "")) as fh:
            samples = [[float(x) for x in line.split()] for line in fh if line.strip()]
    except OSError:
        return None
    p = report.transfer_rate(samples, link)
    return p["bytes_per_s"] if p else None


limits = inorder_limits()
iperf_wire = iperf_wire_rate()
if iperf_wire:
    print("iperf3 on the sampled link: %.1f MB/s of wire bytes (%.1f MB/s of payload)"
          % (iperf_wire / 1e6, measured / 1e6))
phases = {}
for client, L in limits.items():
    label = "%s-cold-ahead" % client
    if not L or label not in summary:
        continue
    cold = summary[label]["seconds"]
    print("%s in-order limit %s" % (client, describe_limit(L)))
    target("%s cold with read-ahead / in-order limit L" % client, round(cold / L["limit_s"], 3),
           "<= 1.10", cold <= 1.10 * L["limit_s"])
    # L counts one login and one slow start: a pass that opened a connection per file would
    # pay them per file (issue 38).
    print("%s cold with read-ahead: %d origin login(s) in its pass over %d files"
          % (client, summary[label]["origin_logins"], config["files"]))
    phases[client] = transfer_phase(label)
    if phases[client] and (iperf_wire or measured > 0):
        p = phases[client]
        ratio = p["bytes_per_s"] / (iperf_wire or measured)
        print("%s transfer phases: %.1f MB/s over %.1f s of the %.1f s pass (busy 100 ms bins)"
              % (client, p["bytes_per_s"] / 1e6, p["busy_s"], p["total_s"]))
        target("%s read-ahead's rate in the transfer phases / iperf3's" % client,
               round(ratio, 3), ">= 0.90", ratio >= 0.90)
if "agc4-cold-ahead" in summary:
    a = summary["agc4-cold-ahead"]["seconds"]
    b = summary["agc4-cold-noahead"]["seconds"]
    target("agc --reads 4: with ferry's read-ahead / without", round(a / b, 2), "<= 1.05",
           a <= 1.05 * b)
digests = {s["digest"] for l, s in summary.items() if l.startswith("agc") and s["digest"]}
target("agc digests agree over every scenario", len(digests), "1", len(digests) == 1)

report.write_json(out_dir, "readahead_wan.json",
                  {"config": config, "bytes_read": bytes_read, "link_bytes_per_second": link,
                   "inorder_limit": limits, "transfer_phases": phases,
                   "iperf_wire_bytes_per_second": iperf_wire,
                   "summary": summary, "targets": targets, "runs": runs})

dat = os.path.join(out_dir, "readahead_wan.dat")
order = ["local", "direct", "cold-noahead", "cold-ahead", "warm"]
with open(dat, "w") as f:
    f.write("scenario agc py\n")
    for o in order:
        f.write("%s %s %s\n" % (o, *["%.3f" % summary["%s-%s" % (c, o)]["seconds"]
                                     if "%s-%s" % (c, o) in summary else "0"
                                     for c in ("agc", "py")]))
    for o in ("direct", "cold-noahead", "cold-ahead"):
        if "agc4-" + o in summary:
            f.write("reads4-%s %.3f 0\n" % (o, summary["agc4-" + o]["seconds"]))
png = os.path.join(out_dir, "readahead_wan.png")
gp = ("""
set terminal pngcairo size 1100,520 font ",10" noenhanced
set output "%s"
set title "ferry read-ahead over a %s RTT, %s link: wall time of one pass (%d files, %.1f GB)"
set ylabel "seconds"
""" + report.HISTOGRAM_STYLE + """
set xtics rotate by -20
set yrange [0:*]
plot "%s" using 2:xtic(1) title "ferry analyze agc --reads 0 (reads4: --reads 4)" lc rgb "#3060c0", "" using 3 title "python XRootD, one vector read per cluster" lc rgb "#c04030"
""") % (png, config["rtt"], config["rate"], config["files"], config["data_bytes"] / 1e9, dat)
no_plot = report.plot(gp)
if no_plot is None:
    print("plot:", png)
else:
    print("no plot:", no_plot)
