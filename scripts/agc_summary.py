#!/usr/bin/python3
"""Summary of the AGC passes written by scripts/agc_passes.sh.

Reads OUT/runs/<set>_<pass>_<run>.json (ferry analyze agc --json), .wire (bytes over the emulated
link) and .cache0/.cache1 (ferry cache counters before/after, JSON), and writes
OUT/summary.txt (the tables), OUT/summary.json (every run and the derived figures), gnuplot
bar data (--bars wall times, --cpu CPU split) and prints the tables. Exit 3 when the histogram
digests differ between passes.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inorder_limit import describe as describe_limit, inorder_limit  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--sets", required=True, help="file: one 'set<TAB>label' per line")
p.add_argument("--passes", required=True)
p.add_argument("--repeat", type=int, default=1)
p.add_argument("--where", default="")
p.add_argument("--mode", default="loopback")
p.add_argument("--title", default="ferry analyze agc")
p.add_argument("--bars")
p.add_argument("--cpu")
p.add_argument("--link-bytes-per-s", type=float, default=0,
               help="the emulated link's rate, for the in-order limit (0: no limit computed)")
p.add_argument("--rtt-s", type=float, default=0)
a = p.parse_args()

sets = [l.rstrip("\n").split("\t") for l in open(a.sets) if l.strip()]
passes = a.passes.split()


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def cache_delta(base, key):
    """Counter `key` of `ferry cache stats --json` after minus before the run, or None."""
    before, after = load(base + ".cache0", {}), load(base + ".cache1", {})

    def get(d):
        for k in (key,):
            if isinstance(d, dict):
                if k in d:
                    return d[k]
                for v in d.values():  # counters may be nested ("counters": {...})
                    if isinstance(v, dict) and k in v:
                        return v[k]
        return None

    b, e = get(before), get(after)
    return None if b is None or e is None else e - b


runs, rows, digests = [], [], {}
for set_name, label in sets:
    per_pass = {}
    for ps in passes:
        rs = []
        for k in range(1, a.repeat + 1):
            base = os.path.join(a.out, "runs", f"{set_name}_{ps}_{k}")
            r = load(base + ".json")
            if r is None:
                continue
            io, t = r["io"], r["time"]
            wire = int(open(base + ".wire").read()) if os.path.exists(base + ".wire") else 0
            loadavg = float(open(base + ".load").read()) if os.path.exists(base + ".load") else None
            run = {
                "set": set_name, "label": label, "pass": ps, "run": k,
                "wall_s": t["wall_s"], "open_s": t["open_s"], "cpu_s": t["cpu_s"],
                "io_wait_s": t["io_wait_s"], "decompress_cpu_s": t["decompress_cpu_s"],
                "analysis_cpu_s": t["analysis_cpu_s"], "other_cpu_s": t["other_cpu_s"],
                "bytes_read": io["bytes_read"], "requests": io["requests"],
                "vector_reads": io["vector_reads"], "chunks": io["chunks"],
                "dataset_bytes": io["dataset_bytes"], "fraction_read": io["fraction_read"],
                "wire_bytes": wire if a.mode == "wan" else None,
                "cache_bytes_from_origin": cache_delta(base, "bytes_from_origin"),
                "cache_origin_requests": cache_delta(base, "origin_requests"),
                "cache_hits": cache_delta(base, "hits"),
                "cache_misses": cache_delta(base, "misses"),
                "cache_bytes_from_cache": cache_delta(base, "bytes_from_cache"),
                "cache_disk_reads": cache_delta(base, "disk_reads"),
                "cache_replica_reads": cache_delta(base, "replica_reads"),
                "cache_bytes_from_replica": cache_delta(base, "bytes_from_replica"),
                "cache_replica_faults": cache_delta(base, "replica_faults"),
                "cache_access_checks": cache_delta(base, "access_checks"),
                "cache_disk_bytes": (load(base + ".cache1", {}) or {}).get("disk_bytes"),
                "events": r["events"], "digest": r["digest"], "load": loadavg,
            }
            # What the origin served: the client's own reads without a cache; the cache's
            # counters with one (falling back to the link bytes when the counters are missing).
            if ps in ("local", "inlocal"):
                run["bytes_from_origin"], run["origin_requests"] = 0, 0
            elif ps == "direct":
                run["bytes_from_origin"], run["origin_requests"] = io["bytes_read"], io["requests"]
            else:
                run["bytes_from_origin"] = run["cache_bytes_from_origin"]
                if run["bytes_from_origin"] is None:
                    run["bytes_from_origin"] = run["wire_bytes"]
                run["origin_requests"] = run["cache_origin_requests"]
            runs.append(run)
            rs.append(run)
            digests[f"{set_name}/{ps}/{k}"] = r["digest"]
        if rs:
            per_pass[ps] = rs

    def med(ps, key):
        vals = [r[key] for r in per_pass.get(ps, []) if r[key] is not None]
        return statistics.median(vals) if vals else None

    def paired(num_pass, den_pass):
        """Median over repeats k of wall(num_pass, k) / wall(den_pass, k): the two passes of a
        repeat ran next to each other, so the ratio is less exposed to the machine's load."""
        num = {r["run"]: r["wall_s"] for r in per_pass.get(num_pass, [])}
        den = {r["run"]: r["wall_s"] for r in per_pass.get(den_pass, [])}
        ratios = [num[k] / den[k] for k in num if k in den and den[k] > 0]
        return statistics.median(ratios) if ratios else None

    for ps in passes:
        if ps not in per_pass:
            continue
        wall = med(ps, "wall_s")
        row = {k: med(ps, k) for k in ("wall_s", "open_s", "cpu_s", "io_wait_s", "decompress_cpu_s",
                                       "analysis_cpu_s", "other_cpu_s", "bytes_from_origin",
                                       "origin_requests", "wire_bytes", "bytes_read",
                                       "fraction_read", "dataset_bytes", "load")}
        row.update({"set": set_name, "label": label, "pass": ps, "runs": len(per_pass[ps]),
                    "wall_s_all": [r["wall_s"] for r in per_pass[ps]]})
        row["speedup_vs_direct"] = paired("direct", ps)
        row["time_vs_local"] = paired(ps, "local")
        fill = paired("cold", "direct") if ps == "cold" else None
        row["fill_overhead_pct"] = None if fill is None else 100.0 * (fill - 1)
        rows.append(row)


def num(v, fmt, dash="-"):
    return dash if v is None else format(v, fmt)


def mb(v):
    return "-" if v is None else f"{v / 1e6:,.1f}"


hdr = (f"{'set':<16} {'pass':<7} {'wall s':>8} {'MB from origin':>15} {'origin req':>11} "
       f"{'read % of data':>15} {'fill ovh %':>11} {'x direct':>9} {'x local':>8}")
if a.mode == "wan":
    hdr += f" {'link MB':>9}"
hdr += f" {'load':>5}"
lines = [f"{a.title} — origin {a.where}", "", hdr, "-" * len(hdr)]
for r in rows:
    line = (f"{r['label']:<16} {r['pass']:<7} {num(r['wall_s'], '8.2f'):>8} {mb(r['bytes_from_origin']):>15} "
            f"{num(r['origin_requests'], ',.0f'):>11} {num(100 * r['fraction_read'], '14.2f')}% "
            f"{num(r['fill_overhead_pct'], '+.1f'):>11} {num(r['speedup_vs_direct'], '.2f') + 'x':>9} "
            f"{num(r['time_vs_local'], '.2f') + 'x':>8}")
    if a.mode == "wan":
        line += f" {mb(r['wire_bytes']):>9}"
    line += f" {num(r['load'], '5.1f'):>5}"
    lines.append(line)
lines += ["", "CPU seconds per pass (I/O wait: wall time the reading threads spent blocked, summed):",
          f"{'set':<16} {'pass':<7} {'I/O wait':>9} {'decompress':>11} {'analysis':>9} {'other':>7} {'CPU total':>10}"]
for r in rows:
    lines.append(f"{r['label']:<16} {r['pass']:<7} {num(r['io_wait_s'], '9.2f'):>9} "
                 f"{num(r['decompress_cpu_s'], '11.2f'):>11} {num(r['analysis_cpu_s'], '9.2f'):>9} "
                 f"{num(r['other_cpu_s'], '7.2f'):>7} {num(r['cpu_s'], '10.2f'):>10}")
lines.append("")
if a.repeat > 1:
    lines.append(f"wall times are medians of {a.repeat} runs; ratios (fill overhead, x direct, x local) "
                 "are medians of the per-run ratios")
lines.append(f"load: the machine's 1-minute load average before a pass ({os.cpu_count()} cores; "
             "others share it)")

# The replica tier per set: the build, the reads of a warm pass, the disk, the speed.
def replica_figures(set_name):
    by_run = {}
    for r in runs:
        if r["set"] == set_name:
            by_run.setdefault(r["run"], {})[r["pass"]] = r
    out = {"build_cpu_s": [], "build_wall_s": [], "codec": None, "disk_byte_tier": [],
           "disk_replica": [], "reads_warm": [], "reads_replica": [], "read_bytes_warm": [],
           "read_bytes_replica": [], "faults": 0}
    for k, ps in sorted(by_run.items()):
        bg = load(os.path.join(a.out, "runs", f"{set_name}_building_{k}.build"), {}) or {}
        fg = load(os.path.join(a.out, "runs", f"{set_name}_build_{k}.json"), {}) or {}
        files = bg.get("files", []) + fg.get("files", [])
        if files:
            out["build_cpu_s"].append(sum(f.get("build_cpu_seconds", 0) for f in files))
            out["codec"] = out["codec"] or next((f["codec"] for f in files if f.get("codec")), None)
        wall = os.path.join(a.out, "runs", f"{set_name}_build_{k}.wall")
        if os.path.exists(wall):
            out["build_wall_s"].append(float(open(wall).read()))
        if "warm" in ps and ps["warm"]["cache_disk_bytes"] is not None:
            out["disk_byte_tier"].append(ps["warm"]["cache_disk_bytes"])
        cache1 = load(os.path.join(a.out, "runs", f"{set_name}_build_{k}.cache1"), {}) or {}
        if cache1.get("disk_bytes") is not None:
            out["disk_replica"].append(cache1["disk_bytes"])
        w, rp = ps.get("warm"), ps.get("replica")
        if w and w["cache_disk_reads"] is not None:
            out["reads_warm"].append(w["cache_disk_reads"])
            out["read_bytes_warm"].append(w["cache_bytes_from_cache"] or 0)
        if rp and rp["cache_replica_reads"] is not None:
            out["reads_replica"].append(rp["cache_replica_reads"] + (rp["cache_disk_reads"] or 0))
            out["read_bytes_replica"].append((rp["cache_bytes_from_replica"] or 0)
                                             + (rp["cache_bytes_from_cache"] or 0))
            out["faults"] += rp["cache_replica_faults"] or 0
    m = lambda v: statistics.median(v) if v else None  # noqa: E731
    f = {"codec": out["codec"], "build_cpu_s": m(out["build_cpu_s"]),
         "build_wall_s": m(out["build_wall_s"]), "replica_faults": out["faults"]}
    f["reads_warm"], f["reads_replica"] = m(out["reads_warm"]), m(out["reads_replica"])
    f["mean_read_warm"] = (m(out["read_bytes_warm"]) / f["reads_warm"]
                           if f["reads_warm"] else None)
    f["mean_read_replica"] = (m(out["read_bytes_replica"]) / f["reads_replica"]
                              if f["reads_replica"] else None)
    f["fewer_reads"] = (f["reads_warm"] / f["reads_replica"]
                        if f["reads_warm"] and f["reads_replica"] else None)
    f["disk_byte_tier"], f["disk_replica"] = m(out["disk_byte_tier"]), m(out["disk_replica"])
    f["disk_ratio"] = (f["disk_replica"] / f["disk_byte_tier"]
                       if f["disk_replica"] and f["disk_byte_tier"] else None)
    return f


def paired_ratio(set_name, num_pass, den_pass):
    """Median over repeats of wall(num_pass) / wall(den_pass) of the same set and repeat."""
    per = {}
    for r in runs:
        if r["set"] == set_name:
            per.setdefault(r["pass"], {})[r["run"]] = r["wall_s"]
    vals = [per[num_pass][k] / per[den_pass][k] for k in per.get(num_pass, {})
            if k in per.get(den_pass, {}) and per[den_pass][k]]
    return statistics.median(vals) if vals else float("nan")


def replica_stages(set_name):
    """Per autofill run: the .stages record of scripts/agc_passes.sh (poll_replicas)."""
    out = {}
    for k in range(1, a.repeat + 1):
        d = load(os.path.join(a.out, "runs", f"{set_name}_autofill_{k}.stages"))
        if d:
            out[k] = d
    return out


def builder_memory(set_name):
    """The replica builder's peak RSS against the hot bytes it placed (median over runs):
    stage 1 from the relocation of a copy of the warm cache (runs/SET_stage1_K.json), stage 2
    from the background build beside the `building` pass (runs/SET_building_K.build)."""
    out = {}
    for stage, pattern in (("stage1", "{s}_stage1_{k}.json"), ("stage2", "{s}_building_{k}.build")):
        rss, hot = [], []
        for k in range(1, a.repeat + 1):
            d = load(os.path.join(a.out, "runs", pattern.format(s=set_name, k=k)))
            if d and d.get("peak_rss_bytes"):
                rss.append(d["peak_rss_bytes"])
                hot.append(sum(f.get("baskets_original_bytes", 0) for f in d.get("files", [])))
        if rss:
            r, h = statistics.median(rss), statistics.median(hot)
            out[stage] = {"peak_rss_bytes": r, "hot_bytes": h, "rss_per_hot_byte": r / h if h else None}
    return out


def fill_build_figures(set_name):
    """The replica built during the fill pass (issue 27): how long after the pass it was ready,
    in % of the pass; the pass's slowdown against the cold pass; the wall-clock balance of the
    pass after it (time saved against a warm byte-tier pass, less the wait)."""
    per = {}
    for r in runs:
        if r["set"] == set_name:
            per.setdefault(r["pass"], {})[r["run"]] = r["wall_s"]
    ready, pct, balance = [], [], []
    for k, fill in per.get("autofill", {}).items():
        path = os.path.join(a.out, "runs", f"{set_name}_autofill_{k}.ready")
        try:
            wait = float(open(path).read())
        except (OSError, ValueError):
            continue
        if wait < 0:
            continue
        ready.append(wait)
        pct.append(100 * wait / fill if fill else float("nan"))
        if k in per.get("warm", {}) and k in per.get("afterfill", {}):
            balance.append(per["warm"][k] - per["afterfill"][k] - wait)
    m = lambda v: statistics.median(v) if v else None  # noqa: E731
    slow = paired_ratio(set_name, "autofill", "cold")
    stages = replica_stages(set_name)
    last = stages[max(stages)] if stages else {}
    return {"replica_ready_after_fill_s": m(ready), "replica_ready_after_fill_pct": m(pct),
            # The stage each file's replica reached (the last run): when the set was ready
            # (1: relocated as stored, 2: re-encoded), and at last (stage 2 waited for after
            # the next pass, at most 120 s); every run's in replica_stages_runs.
            "replica_stage_at_ready": {n: f["stage"] for n, f in last.get("at_ready", {}).items()},
            "replica_stage_reached": {n: f["stage"] for n, f in last.get("final", {}).items()},
            "replica_stage2_after_fill_s": m([d["stage2_after_fill_s"] for d in stages.values()
                                              if d.get("stage2_after_fill_s") is not None]),
            "replica_stages_runs": stages,
            "replica_builder_memory": builder_memory(set_name),
            "fill_with_build_slowdown_pct": 100 * (slow - 1) if slow == slow else None,
            "first_replica_pass_balance_s": m(balance),
            "replica_not_ready_runs": sum(1 for k in per.get("autofill", {})
                                          if not os.path.exists(os.path.join(
                                              a.out, "runs", f"{set_name}_autofill_{k}.ready"))
                                          or open(os.path.join(a.out, "runs",
                                                  f"{set_name}_autofill_{k}.ready")).read().strip()
                                          == "-1")}


def inorder_figures(set_name):
    """The in-order client's cold pass against the limit L it can reach (issue 27): L from the
    local in-order pass of the same repeat (per-file CPU and bytes), the cold pass's median over
    repeats."""
    ratios, limits = [], []
    for k in range(1, a.repeat + 1):
        base = os.path.join(a.out, "runs", f"{set_name}_%s_{k}")
        local, cold = load(base % "inlocal" + ".json"), load(base % "inorder" + ".json")
        if not local or not cold:
            continue
        limit = inorder_limit(local.get("files"), a.link_bytes_per_s, a.rtt_s)
        if limit:
            limits.append(limit)
            ratios.append(cold["time"]["wall_s"] / limit["limit_s"])
    if not ratios:
        return {}
    mid = sorted(range(len(ratios)), key=lambda i: ratios[i])[len(ratios) // 2]
    return {"cold_vs_inorder_limit": ratios[mid], "inorder_limit": limits[mid]}


# The headline figures per set, against the targets of bench/agc_passes.
figures = []
for set_name, label in sets:
    by = {r["pass"]: r for r in rows if r["set"] == set_name}
    f = {"set": set_name, "label": label,
         "fraction_read_pct": 100 * by["direct"]["fraction_read"] if "direct" in by else None,
         "fill_overhead_pct": by["cold"]["fill_overhead_pct"] if "cold" in by else None,
         "warm_speedup_vs_direct": by["warm"]["speedup_vs_direct"] if "warm" in by else None,
         "warm_vs_local_pct": 100 * (by["warm"]["time_vs_local"] - 1) if "warm" in by and by["warm"]["time_vs_local"] else None}
    if "shared" in by and "warm" in by:
        # Paired per repeat like the other ratios: the group cache's passes against the private
        # warm pass of the same repeat.
        f["shared_vs_warm_pct"] = 100 * (paired_ratio(set_name, "shared", "warm") - 1)
        f["shared_first_vs_warm_pct"] = 100 * (paired_ratio(set_name, "shared1", "warm") - 1)
        f["shared_first_origin_opens"] = statistics.median(
            [r["cache_access_checks"] or 0 for r in runs
             if r["set"] == set_name and r["pass"] == "shared1"])
        f["shared_origin_opens"] = statistics.median(
            [r["cache_access_checks"] or 0 for r in runs
             if r["set"] == set_name and r["pass"] == "shared"])
    if "replica" in by:
        f.update(replica_figures(set_name))
        per = {}
        for r in runs:
            if r["set"] == set_name:
                per.setdefault(r["pass"], {})[r["run"]] = r

        def ratio(num, den, key="wall_s"):
            vals = [per[num][k][key] / per[den][k][key] for k in per.get(num, {})
                    if k in per.get(den, {}) and per[den][k][key]]
            return statistics.median(vals) if vals else None

        f["replica_speedup_vs_warm"] = ratio("warm", "replica")
        f["replica_vs_local"] = ratio("replica", "local")
        f["building_slowdown_pct"] = (100 * (ratio("building", "warm") - 1)
                                      if ratio("building", "warm") else None)
        saved = (by["warm"]["cpu_s"] - by["replica"]["cpu_s"]) if "warm" in by else None
        f["cpu_saved_per_pass_s"] = saved
        f["build_repaid_after_passes"] = (f["build_cpu_s"] / saved
                                          if saved and saved > 0 and f["build_cpu_s"] else None)
    if "autofill" in by:
        f.update(fill_build_figures(set_name))
    if "inorder" in by and "inlocal" in by:
        f.update(inorder_figures(set_name))
    figures.append(f)
lines += ["", "figures (targets: fill overhead <= 1%, warm within 10% of local, ~6% of the bytes read;"
          " replica: 5x warm on LZMA-9, 1.5x on zlib-1, 15x fewer reads, disk <= 1.0x/1.5x):"]
for f in figures:
    parts = [f"{f['label']}: read {num(f['fraction_read_pct'], '.2f')}% of the bytes"]
    if f["fill_overhead_pct"] is not None:
        parts.append(f"fill overhead {f['fill_overhead_pct']:+.1f}%")
    if f["warm_speedup_vs_direct"] is not None:
        parts.append(f"warm {f['warm_speedup_vs_direct']:.2f}x faster than direct")
    if f["warm_vs_local_pct"] is not None:
        parts.append(f"warm {f['warm_vs_local_pct']:+.1f}% vs local")
    if len(parts) == 1:
        parts.append("cache passes not run (ferry cache not built)")
    lines.append("  " + ", ".join(parts))
    if f.get("shared_vs_warm_pct") is not None:
        lines.append(
            f"    group cache: warm {f['shared_vs_warm_pct']:+.1f}% vs private warm (target <= 2%), "
            f"{f['shared_origin_opens']:.0f} origin opens; its first pass "
            f"{f['shared_first_vs_warm_pct']:+.1f}% with {f['shared_first_origin_opens']:.0f} "
            f"origin opens (one per file, then none for shared_reauth)")
    if f.get("replica_speedup_vs_warm") is not None:
        lzma = "lzma" in f["label"]
        lines.append(
            f"    replica ({f['codec']}): {f['replica_speedup_vs_warm']:.2f}x faster than the warm "
            f"byte tier (target {'5' if lzma else '1.5'}x), {num(f['replica_vs_local'], '.2f')}x "
            f"the local copies' time")
        lines.append(
            f"    reads per pass: {num(f['reads_warm'], ',.0f')} byte tier, "
            f"{num(f['reads_replica'], ',.0f')} replica ({num(f['fewer_reads'], '.1f')}x fewer, "
            f"target 15x), mean read {num((f['mean_read_warm'] or 0) / 1024, ',.1f')} KiB -> "
            f"{num((f['mean_read_replica'] or 0) / 1024, ',.1f')} KiB")
        lines.append(
            f"    disk: {mb(f['disk_byte_tier'])} MB byte tier alone, {mb(f['disk_replica'])} MB "
            f"with the replica ({num(f['disk_ratio'], '.2f')}x, target <= {'1.5' if lzma else '1.0'}x)")
        lines.append(
            f"    build: {num(f['build_cpu_s'], '.2f')} s CPU, saved {num(f['cpu_saved_per_pass_s'], '.2f')} "
            f"s CPU per pass (repaid after {num(f['build_repaid_after_passes'], '.2f')} passes, target "
            f"<= 1); a pass while building: {num(f['building_slowdown_pct'], '+.1f')}% (target <= 2%)"
            + (f"; {f['replica_faults']} replica faults" if f['replica_faults'] else ""))
    if f.get("replica_ready_after_fill_pct") is not None or f.get("replica_not_ready_runs"):
        lines.append(
            f"    built during the fill pass (replica = auto): ready "
            f"{num(f['replica_ready_after_fill_s'], '.2f')} s after it, "
            f"{num(f['replica_ready_after_fill_pct'], '.1f')}% of the pass (target <= 10%); the "
            f"fill pass {num(f['fill_with_build_slowdown_pct'], '+.1f')}% against the cold pass "
            f"(target <= 2%); the next pass saved {num(f['first_replica_pass_balance_s'], '+.2f')} s "
            f"against a warm byte-tier pass, net of the wait (target >= 0)"
            + (f"; {f['replica_not_ready_runs']} runs not ready in 600 s"
               if f["replica_not_ready_runs"] else ""))
        for stage, mem in (f.get("replica_builder_memory") or {}).items():
            lines.append(
                f"    replica builder ({stage}): peak RSS {mb(mem['peak_rss_bytes'])} MB for "
                f"{mb(mem['hot_bytes'])} MB of hot bytes ({num(mem['rss_per_hot_byte'], '.2f')}x; "
                f"the leading client cache: 1.8x TTree, 2.3x RNTuple)")
        reached = f.get("replica_stage_reached") or f.get("replica_stage_at_ready") or {}
        if reached:
            at_ready = f.get("replica_stage_at_ready") or {}
            lines.append(
                "    replica stage per file (when ready -> at last): "
                + ", ".join(f"{n} {at_ready.get(n, '-')}->{st}" for n, st in sorted(reached.items()))
                + f"; every file re-encoded {num(f['replica_stage2_after_fill_s'], '.2f')} s after the fill")
    if f.get("cold_vs_inorder_limit") is not None:
        lines.append(
            f"    in-order client (agc --threads 1 --reads 0 --opens 1), cold through the cache: "
            f"{f['cold_vs_inorder_limit']:.2f}x its limit (target <= 1.10), "
            f"{describe_limit(f['inorder_limit'])} (the link at its nominal {f['inorder_limit']['link_bytes_per_s'] / 1e6:.0f} MB/s)")

# The cache passes must really have gone through the cache.
for r in runs:
    if r["pass"] in ("cold", "warm", "shared", "building") and not (r["cache_hits"] or r["cache_misses"]):
        lines += ["", f"WARNING: {r['label']} {r['pass']} run {r['run']}: the cache counted no reads "
                      "(the plug-in was not used)"]
    if r["pass"] == "warm" and r["cache_bytes_from_origin"]:
        lines += ["", f"note: {r['label']} warm run {r['run']} still fetched "
                      f"{r['cache_bytes_from_origin'] / 1e6:.1f} MB from the origin"]

values = set(digests.values())
same = len(values) == 1
if same:
    verdict = f"histogram digests: identical in all {len(digests)} passes ({next(iter(values))})"
else:
    per_set = {}
    for k, v in digests.items():
        per_set.setdefault(k.split("/")[0], set()).add(v)
    if all(len(v) == 1 for v in per_set.values()):
        verdict = ("histogram digests: identical across the passes of each set ("
                   + ", ".join(f"{s}: {next(iter(v))}" for s, v in per_set.items())
                   + "); the sets hold different events")
        same = True
    else:
        verdict = "histogram digests DIFFER between passes:\n" + "\n".join(
            f"  {k:<28} {v}" for k, v in sorted(digests.items()))
lines += ["", verdict]

summary = {"title": a.title, "origin": a.where, "mode": a.mode, "repeat": a.repeat,
           "figures": figures, "rows": rows, "runs": runs, "digests": digests, "digests_identical": same}
with open(os.path.join(a.out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
text = "\n".join(lines) + "\n"
with open(os.path.join(a.out, "summary.txt"), "w") as f:
    f.write(text)
print(text, end="")

if a.bars:
    with open(a.bars, "w") as f:
        f.write("pass " + " ".join(label for _, label in sets) + "\n")
        for ps in passes:
            vals = []
            for s, _ in sets:
                r = next((r for r in rows if r["set"] == s and r["pass"] == ps), None)
                vals.append("0" if r is None else f"{r['wall_s']:.3f}")
            f.write(ps + " " + " ".join(vals) + "\n")
if a.cpu:
    with open(a.cpu, "w") as f:
        # CPU only: the I/O wait (thread-seconds blocked, summed over the reading threads) is in
        # the tables, on another scale.
        f.write("pass decompression analysis other\n")
        for r in rows:
            f.write(f"{r['label']}:{r['pass']} {r['decompress_cpu_s']:.3f} "
                    f"{r['analysis_cpu_s']:.3f} {r['other_cpu_s']:.3f}\n")
sys.exit(0 if same else 3)
