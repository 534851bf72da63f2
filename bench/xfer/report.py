#!/usr/bin/env python3
"""bench/xfer report: turns run.sh's result table into xfer.json, xfer.dat (for plot.gp) and a
summary of ferry against the limits and the best peer on each path.

usage: report.py RESULTS.tsv OUTDIR DISK_READ[:DISK_WRITE[:RAM_READ:RAM_WRITE]] BYTES KERNEL CPUS LOADAVG
                 [LONG_BYTES]

Each tool counts with its best run (iperf3 and ferry run with the system's TCP congestion
control and with cubic). The limit of a path is the lowest of iperf3 -P 8 (network), the source
disk's O_DIRECT read
rate and the destination disk's O_DIRECT write rate (a new file, fsynced), and, when source and
destination share one device, the rate at which that device reads and writes at once (a copy
on one disk cannot beat it; each alone overstates it). The rows ferry-ram
(source and destination on a RAM-backed loop device) have the same limits measured on that
device; ferry-long rows (a longer file to the disk) are reported with their steady-state rate.
"""
import datetime
import json
import sys

PEERS = {"xrdcp", "globus-url-copy", "rsync", "aria2c"}


def num(text):
    return None if text == "-" else float(text)


def main():
    tsv, out, disk, size, kernel, cpus, load = sys.argv[1:8]
    long_bytes = int(sys.argv[8]) if len(sys.argv) > 8 else 0
    limits_in = [float(x) for x in disk.split(":")] + [0.0, 0.0, 0.0, 0.0]
    disk, disk_w, ram_r, ram_w, disk_copy = limits_in[:5]
    runs = []
    with open(tsv) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t") + ["-", "-"]
            path, tool, opts, status, tool_s, total_s, gbps, cpu, checksum, steady, ld = cols[:11]
            runs.append({"path": path, "tool": tool, "options": opts, "status": status,
                         "tool_seconds": num(tool_s), "seconds": num(total_s),
                         "gbit_per_s": float(gbps), "cpu_percent": None if cpu == "-" else float(cpu),
                         "checksum": checksum, "steady_gbit_per_s": num(steady),
                         "load1": num(ld)})
    paths = []
    for r in runs:
        if r["path"] not in paths:
            paths.append(r["path"])

    def best(path, pred):
        ok = [r for r in runs if r["path"] == path and r["status"] == "ok" and pred(r)]
        return max(ok, key=lambda r: r["gbit_per_s"]) if ok else None

    summary = {}
    for p in paths:
        iperf = best(p, lambda r: r["tool"] == "iperf3")
        ferry = best(p, lambda r: r["tool"] == "ferry")
        ferry_def = best(p, lambda r: r["tool"] == "ferry-defbuf")
        ferry_null = best(p, lambda r: r["tool"] == "ferry-discard")
        iperf_n = best(p, lambda r: r["tool"] == "iperf3-n")
        peer = best(p, lambda r: r["tool"] in PEERS)
        ferry_ram = best(p, lambda r: r["tool"] == "ferry-ram")
        ferry_long = best(p, lambda r: r["tool"] == "ferry-long")
        ferry_long_steady = max((r["steady_gbit_per_s"] or 0 for r in runs
                                 if r["path"] == p and r["tool"] == "ferry-long"
                                 and r["status"] == "ok"), default=0)
        ferry_steady = max((r["steady_gbit_per_s"] or 0 for r in runs
                            if r["path"] == p and r["tool"] == "ferry" and r["status"] == "ok"),
                           default=0)
        net = iperf["gbit_per_s"] if iperf else None
        # disk_copy: source and destination on one device, read and written at once (what a
        # copy on that device can do; 0 when they are on different devices).
        limits = [x for x in (net, disk, disk_w, disk_copy) if x]
        limit = min(limits) if limits else None
        s = {"network_limit_gbit_per_s": net, "disk_limit_gbit_per_s": disk or None,
             "disk_write_limit_gbit_per_s": disk_w or None,
             "disk_copy_limit_gbit_per_s": disk_copy or None,
             "limit_gbit_per_s": limit,
             "network_limit_options": iperf["options"] if iperf else None,
             "ferry_gbit_per_s": ferry["gbit_per_s"] if ferry else None,
             "ferry_options": ferry["options"] if ferry else None,
             "ferry_default_buffers_gbit_per_s": ferry_def["gbit_per_s"] if ferry_def else None,
             "best_peer": f'{peer["tool"]} {peer["options"]}' if peer else None,
             "best_peer_gbit_per_s": peer["gbit_per_s"] if peer else None,
             # Without the destination disk (ferry recv --discard), next to iperf3 moving the
             # same bytes (-n; its rate starts at its first byte, ferry's at process start).
             "ferry_discard_gbit_per_s": ferry_null["gbit_per_s"] if ferry_null else None,
             "ferry_discard_options": ferry_null["options"] if ferry_null else None,
             "iperf3_same_bytes_gbit_per_s": iperf_n["gbit_per_s"] if iperf_n else None,
             "ferry_steady_gbit_per_s": ferry_steady or None,
             # The RAM-backed disk at both ends: ferry's own write path where the disk is slow.
             "ram_read_limit_gbit_per_s": ram_r or None,
             "ram_write_limit_gbit_per_s": ram_w or None,
             "ferry_ram_gbit_per_s": ferry_ram["gbit_per_s"] if ferry_ram else None,
             "ferry_ram_steady_gbit_per_s": ferry_ram["steady_gbit_per_s"] if ferry_ram else None,
             # The long copy (ramp-up separated from the steady state).
             "long_bytes": long_bytes or None,
             "ferry_long_gbit_per_s": ferry_long["gbit_per_s"] if ferry_long else None,
             "ferry_long_steady_gbit_per_s": ferry_long_steady or None}
        if ferry_ram:
            ram_limit = min(x for x in (net, ram_r, ram_w) if x) if (net or ram_r or ram_w) else None
            s["ram_limit_gbit_per_s"] = ram_limit
            if ram_limit:
                s["ferry_ram_vs_limit"] = round(ferry_ram["gbit_per_s"] / ram_limit, 3)
        if ferry_long_steady and net:
            s["ferry_long_steady_vs_iperf3"] = round(ferry_long_steady / net, 3)
        if ferry_null and iperf_n:
            s["ferry_discard_vs_iperf3_same_bytes"] = round(
                ferry_null["gbit_per_s"] / iperf_n["gbit_per_s"], 3)
        if ferry and limit:
            s["ferry_vs_limit"] = round(ferry["gbit_per_s"] / limit, 3)
        if ferry and net:
            s["ferry_vs_iperf3"] = round(ferry["gbit_per_s"] / net, 3)
        if ferry and disk:
            s["ferry_vs_disk"] = round(ferry["gbit_per_s"] / disk, 3)
        if ferry and peer:
            s["ferry_vs_best_peer"] = round(ferry["gbit_per_s"] / peer["gbit_per_s"], 3)
        summary[p] = s

    doc = {"benchmark": "xfer", "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "bytes": int(size), "kernel": kernel, "cpus": int(cpus), "loadavg_at_end": load,
           "disk_limit_gbit_per_s": disk, "disk_write_limit_gbit_per_s": disk_w or None,
           "disk_copy_limit_gbit_per_s": disk_copy or None,
           "ram_read_limit_gbit_per_s": ram_r or None, "ram_write_limit_gbit_per_s": ram_w or None,
           "summary": summary, "runs": runs}
    with open(f"{out}/xfer.json", "w") as f:
        json.dump(doc, f, indent=1)

    # Plot data: one row per tool (best run), one column per path.
    order = ["iperf3", "iperf3-n", "ferry", "ferry-ram", "ferry-long", "ferry-defbuf", "ferry-discard"]
    tools = [t for t in order if any(r["tool"] == t for r in runs)]
    for r in runs:
        if r["tool"] not in tools:
            tools.append(r["tool"])
    with open(f"{out}/xfer.dat", "w") as f:
        f.write("tool " + " ".join(paths) + "\n")
        f.write('"disk O_DIRECT read" ' + " ".join(f"{disk:.3f}" for _ in paths) + "\n")
        if disk_w:
            f.write('"disk O_DIRECT write" ' + " ".join(f"{disk_w:.3f}" for _ in paths) + "\n")
        if ram_w:
            f.write('"RAM disk O_DIRECT write" ' + " ".join(f"{ram_w:.3f}" for _ in paths) + "\n")
        for t in tools:
            vals = []
            for p in paths:
                b = best(p, lambda r, t=t: r["tool"] == t)
                vals.append(f'{b["gbit_per_s"]:.3f}' if b else "NaN")
            f.write(f'"{t}" ' + " ".join(vals) + "\n")

    print()
    print(f"# summary ({int(size) / 2**30:.1f} GiB, disk O_DIRECT read {disk:.2f} Gbit/s,"
          f" write {disk_w:.2f} Gbit/s"
          + (f", both at once on one device {disk_copy:.2f}" if disk_copy else "")
          + f"; RAM-backed disk read {ram_r:.2f}, write {ram_w:.2f})")
    for p, s in summary.items():
        def g(k):
            v = s.get(k)
            return "-" if v is None else f"{v:.2f}"
        print(f"{p:7s} ferry {g('ferry_gbit_per_s')} Gbit/s ({s['ferry_options'] or '-'})"
              f" | iperf3 {g('network_limit_gbit_per_s')} ({s['network_limit_options'] or '-'})"
              f" (x{g('ferry_vs_iperf3')}) | limit {g('limit_gbit_per_s')} (x{g('ferry_vs_limit')})"
              f" | best peer {g('best_peer_gbit_per_s')} {s['best_peer'] or ''} (x{g('ferry_vs_best_peer')})"
              + (f" | ferry with default buffers {g('ferry_default_buffers_gbit_per_s')}"
                 if s.get("ferry_default_buffers_gbit_per_s") else "")
              + (f" | no destination disk: ferry --discard {g('ferry_discard_gbit_per_s')}, iperf3"
                 f" -n same bytes {g('iperf3_same_bytes_gbit_per_s')}"
                 f" (x{g('ferry_discard_vs_iperf3_same_bytes')})"
                 if s.get("ferry_discard_gbit_per_s") else "")
              + (f" | RAM-backed disk: ferry {g('ferry_ram_gbit_per_s')} (steady"
                 f" {g('ferry_ram_steady_gbit_per_s')}), limit {g('ram_limit_gbit_per_s')}"
                 f" (x{g('ferry_ram_vs_limit')})" if s.get("ferry_ram_gbit_per_s") else "")
              + (f" | {long_bytes / 2**30:.0f} GiB: ferry {g('ferry_long_gbit_per_s')}, steady"
                 f" {g('ferry_long_steady_gbit_per_s')} (x{g('ferry_long_steady_vs_iperf3')} iperf3)"
                 if s.get("ferry_long_gbit_per_s") else "")
              + f" | ferry steady {g('ferry_steady_gbit_per_s')}")
    print(f"# json: {out}/xfer.json")


if __name__ == "__main__":
    main()
