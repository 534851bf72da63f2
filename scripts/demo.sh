#!/usr/bin/env bash
# make demo: the analysis ferry exists for, measured.
#
# 1. a NanoAOD-like dataset: `ferry gen nanoaod` from the real 2015 CMS ttbar NanoAOD file, an
#    LZMA-9 set and a zlib-1 set (without `ferry gen`: copies of the real NanoAOD files);
# 2. a real xrootd origin behind the test bed's WAN emulation (network namespace, ~40 ms RTT,
#    1 Gbit/s), or on 127.0.0.1 where namespaces are not permitted (it says so);
# 3. the AGC ttbar analysis (`ferry analyze agc`) per set: on local copies (the limit), direct
#    from the origin, and — once the ferry cache is built — through the cache cold (fill) and
#    warm;
# 4. one table (wall time, bytes from origin, origin requests, bytes read as % of the dataset,
#    fill overhead, warm speedup), JSON and PNG plots in the output folder, and a check that the
#    histogram digests are identical across every pass;
# 5. stops everything it started and removes everything but the output folder.
#
# Usage: scripts/demo.sh [FERRY_BINARY]   (the Makefile passes build/release/bin/ferry)
# Environment: FERRY_DEMO_OUT (default out/demo), FERRY_DEMO_EVENTS (events per set),
# FERRY_DEMO_FILES (files per set), FERRY_DEMO_THREADS, FERRY_DEMO_NO_WAN=1 (skip the WAN).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FERRY="$(realpath "${1:-$ROOT/build/release/bin/ferry}")"
OUT="${FERRY_DEMO_OUT:-$ROOT/out/demo}"
DATA_SRC="${FERRY_ROOT_DATA_DIR:-$ROOT/../shared/data/root}"
TEMPLATE="$DATA_SRC/nanoAOD_2015_CMS_Open_Data_ttbar.root"
TB="$ROOT/scripts/testbed"
THREADS="${FERRY_DEMO_THREADS:-$(nproc)}"
PY=/usr/bin/python3
T0=$(date +%s)

say() { printf '%s\n' "demo: $*" >&2; }
die() {
  printf '%s\n' "demo: ERROR: $*" >&2
  exit 1
}
elapsed() { echo $(($(date +%s) - T0)); }

[ -x "$FERRY" ] || die "no ferry binary at $FERRY (run 'make demo')"
[ -f "$TEMPLATE" ] || die "$TEMPLATE not found (the real ROOT files live in ../shared/data/root)"
[ -x "$PY" ] || die "$PY is missing (apt-get install python3)"

# Everything but $OUT lives in WORK (world-readable: xrootd runs as the xrootd account).
WORK="$(mktemp -d /tmp/ferry-demo.XXXXXX)"
chmod 0755 "$WORK"
export FERRY_TB_DIR="$WORK/tb"
WAN_NAME=""
ORIGIN_NAME=""
cleanup() {
  local rc=$?
  set +e
  if [ -n "$ORIGIN_NAME" ]; then
    bash "$TB/origin.sh" stop --name "$ORIGIN_NAME" >/dev/null 2>&1
  fi
  if [ -n "$WAN_NAME" ]; then
    bash "$TB/wan.sh" down --name "$WAN_NAME" >/dev/null 2>&1
  fi
  rm -rf "$WORK"
  [ $rc = 0 ] || say "failed after $(elapsed) s (exit $rc); logs were in $WORK (removed)"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "$OUT"
mkdir -p "$OUT"
say "output folder $OUT, scratch $WORK"

# ---- 1. the dataset ---------------------------------------------------------------------------
SETS=()
declare -A SET_DIR SET_LABEL
if "$FERRY" gen --help >/dev/null 2>&1; then
  EVENTS="${FERRY_DEMO_EVENTS:-400000}"
  FILES="${FERRY_DEMO_FILES:-4}"
  for spec in "lzma:9" "zlib:1"; do
    set_name="${spec%%:*}${spec##*:}"
    dir="$WORK/data/$set_name"
    say "generating $set_name: $EVENTS events in $FILES files ($(elapsed) s)"
    "$FERRY" gen nanoaod --template "$TEMPLATE" --events "$EVENTS" --files "$FILES" \
      --codec "$spec" --seed 5 --out "$dir" --json >"$OUT/gen_$set_name.json"
    SETS+=("$set_name")
    SET_DIR[$set_name]="$dir"
    SET_LABEL[$set_name]="${spec%%:*}-${spec##*:}"
  done
else
  say "'ferry gen' is not built yet: the dataset is copies of the real NanoAOD files"
  dir="$WORK/data/real"
  mkdir -p "$dir"
  for i in $(seq -w 0 7); do
    cp "$TEMPLATE" "$dir/ttbar_$i.root"
    cp "$DATA_SRC/nano_dy.root" "$dir/dy_$i.root"
  done
  SETS+=(real)
  SET_DIR[real]="$dir"
  SET_LABEL[real]="real NanoAOD x8"
fi
chmod -R a+rX "$WORK/data"

# ---- 2. the origin: behind the WAN emulation, or on 127.0.0.1 ---------------------------------
ORIGIN_WHERE=""
if [ "$(id -u)" = 0 ] && [ "${FERRY_DEMO_NO_WAN:-0}" != 1 ]; then
  name="ftb-agc$(($$ % 100000))"
  set +e
  wan_out="$(bash "$TB/wan.sh" up --rtt 40ms --rate 1gbit --name "$name" 2>"$WORK/wan.err")"
  wan_rc=$?
  set -e
  if [ $wan_rc = 0 ]; then
    WAN_NAME="$name"
    ORIGIN_WHERE="behind the WAN emulation (namespace $name at $wan_out, 40 ms RTT, 1 Gbit/s)"
  else
    ORIGIN_WHERE="on 127.0.0.1 WITHOUT WAN emulation: $(tail -n 1 "$WORK/wan.err" | sed 's/^ftb: //')"
  fi
else
  ORIGIN_WHERE="on 127.0.0.1 WITHOUT WAN emulation ($([ "$(id -u)" = 0 ] && echo "FERRY_DEMO_NO_WAN=1" || echo "namespaces need root"))"
fi
if [ -n "$WAN_NAME" ]; then
  ORIGIN_NAME="$WAN_NAME"
  URL="$(bash "$TB/origin.sh" start --netns "$WAN_NAME" --name "$ORIGIN_NAME" --dir "$WORK/data" 2>>"$WORK/origin.err")" ||
    die "the origin did not start: $(tail -n 3 "$WORK/origin.err")"
else
  ORIGIN_NAME="agcdemo"
  URL="$(bash "$TB/origin.sh" start --name "$ORIGIN_NAME" --dir "$WORK/data" 2>>"$WORK/origin.err")" ||
    die "the origin did not start: $(tail -n 3 "$WORK/origin.err")"
fi
say "xrootd origin $URL $ORIGIN_WHERE"

# Bytes that crossed the link from the origin (host side of the veth pair), when there is one.
wire_rx() {
  if [ -n "$WAN_NAME" ]; then cat "/sys/class/net/$WAN_NAME-h/statistics/rx_bytes"; else echo 0; fi
}

# ---- 3. the passes ----------------------------------------------------------------------------
# run_pass SET PASS SOURCE-LIST...: ferry analyze agc --json into $OUT/SET_PASS.json, plus the
# wire bytes of the pass into $OUT/SET_PASS.wire.
run_pass() {
  local set_name="$1" pass="$2"
  shift 2
  local rx0 rx1 plot=()
  [ "$pass" = local ] && plot=(--plot "$OUT/observables_$set_name.png")
  say "$set_name: $pass pass over ${#@} files ($(elapsed) s)"
  rx0="$(wire_rx)"
  "$FERRY" analyze agc "$@" --threads "$THREADS" --json "${plot[@]}" >"$OUT/${set_name}_$pass.json" ||
    die "ferry analyze agc failed in the $pass pass of $set_name"
  rx1="$(wire_rx)"
  echo $((rx1 - rx0)) >"$OUT/${set_name}_$pass.wire"
}

PASSES=(local direct)
for s in "${SETS[@]}"; do
  files=()
  urls=()
  while IFS= read -r f; do
    files+=("$f")
    urls+=("${URL}/${f#"$WORK/data/"}")
  done < <(find "${SET_DIR[$s]}" -name '*.root' | sort)
  run_pass "$s" local "${files[@]}"
  run_pass "$s" direct "${urls[@]}"
done

# ---- 4. the table, the JSON summary, the plots, the digest check -------------------------------
printf '%s\n' "${SETS[@]}" >"$WORK/sets"
printf '%s\n' "${PASSES[@]}" >"$WORK/passes"
for s in "${SETS[@]}"; do printf '%s\t%s\n' "$s" "${SET_LABEL[$s]}"; done >"$WORK/labels"
"$PY" - "$OUT" "$WORK" "$ORIGIN_WHERE" "$([ -n "$WAN_NAME" ] && echo wan || echo loopback)" <<'PY'
import json, os, sys
out, work, where, mode = sys.argv[1:5]
sets = open(os.path.join(work, "sets")).read().split()
passes = open(os.path.join(work, "passes")).read().split()
labels = dict(l.rstrip("\n").split("\t") for l in open(os.path.join(work, "labels")) if l.strip())
rows, digests = [], {}
for s in sets:
    res = {p: json.load(open(os.path.join(out, f"{s}_{p}.json"))) for p in passes}
    wire = {p: int(open(os.path.join(out, f"{s}_{p}.wire")).read()) for p in passes}
    direct = res["direct"]["time"]["wall_s"]
    for p in passes:
        r = res[p]
        io, t = r["io"], r["time"]
        from_origin = p != "local"
        row = {
            "set": s, "label": labels[s], "pass": p, "wall_s": t["wall_s"],
            "bytes_from_origin": io["bytes_read"] if from_origin else 0,
            "origin_requests": io["requests"] if from_origin else 0,
            "wire_bytes_from_origin": wire[p] if mode == "wan" else None,
            "bytes_read": io["bytes_read"], "dataset_bytes": io["dataset_bytes"],
            "fraction_read": io["fraction_read"],
            "fill_overhead_pct": None, "speedup_vs_direct": direct / t["wall_s"] if t["wall_s"] > 0 else None,
            "cpu_s": t["cpu_s"], "io_wait_s": t["io_wait_s"], "decompress_cpu_s": t["decompress_cpu_s"],
            "analysis_cpu_s": t["analysis_cpu_s"], "other_cpu_s": t["other_cpu_s"],
            "events": r["events"], "digest": r["digest"],
        }
        rows.append(row)
        digests[f"{s}/{p}"] = r["digest"]

def mb(b):
    return "-" if b is None else f"{b / 1e6:,.1f}"

hdr = f"{'set':<16} {'pass':<8} {'wall s':>8} {'MB from origin':>15} {'origin req':>11} {'% of dataset':>13} {'fill ovh %':>11} {'x direct':>9}"
if mode == "wan":
    hdr += f" {'wire MB':>9}"
lines = [hdr, "-" * len(hdr)]
for r in rows:
    line = (f"{r['label']:<16} {r['pass']:<8} {r['wall_s']:>8.2f} {mb(r['bytes_from_origin']):>15} "
            f"{r['origin_requests']:>11,} {100 * r['fraction_read']:>12.2f}% "
            f"{'-' if r['fill_overhead_pct'] is None else format(r['fill_overhead_pct'], '.1f'):>11} "
            f"{r['speedup_vs_direct']:>8.2f}x")
    if mode == "wan":
        line += f" {mb(r['wire_bytes_from_origin']):>9}"
    lines.append(line)
cpu = ["", "CPU seconds per pass (I/O wait is wall time summed over the reading threads):",
       f"{'set':<16} {'pass':<8} {'I/O wait':>9} {'decompress':>11} {'analysis':>9} {'other':>7} {'total':>7}"]
for r in rows:
    cpu.append(f"{r['label']:<16} {r['pass']:<8} {r['io_wait_s']:>9.2f} {r['decompress_cpu_s']:>11.2f} "
               f"{r['analysis_cpu_s']:>9.2f} {r['other_cpu_s']:>7.2f} {r['cpu_s']:>7.2f}")
same = len(set(digests.values())) == 1
summary = {"origin": where, "mode": mode, "rows": rows, "digests": digests, "digests_identical": same}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
text = "\n".join(lines + cpu) + "\n"
open(os.path.join(out, "summary.txt"), "w").write(text)
# Data for the wall-time bar chart: one row per pass, one column per set.
with open(os.path.join(work, "bars.dat"), "w") as f:
    f.write("pass " + " ".join(labels[s].replace(" ", "_") for s in sets) + "\n")
    for p in passes:
        f.write(p + " " + " ".join(str(next(r["wall_s"] for r in rows if r["set"] == s and r["pass"] == p)) for s in sets) + "\n")
print(text)
if same:
    print(f"histogram digests: identical in all {len(digests)} passes ({next(iter(digests.values()))})")
else:
    print("histogram digests DIFFER:")
    for k, v in digests.items():
        print(f"  {k:<24} {v}")
sys.exit(0 if same else 3)
PY
bash "$ROOT/bench/plot_bars.sh" "ferry analyze agc: wall time per pass ($(basename "$OUT"))" \
  "seconds" "$WORK/bars.dat" "$OUT/wall_times.png" >/dev/null 2>&1 ||
  say "could not draw $OUT/wall_times.png"
echo
echo "origin: $ORIGIN_WHERE"
echo "output: $OUT (summary.txt, summary.json, one JSON per pass, observables_*.png, wall_times.png)"
say "done in $(elapsed) s"
