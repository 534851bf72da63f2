#!/usr/bin/env bash
# bench/agc_passes: the demo's measurement at scale — the AGC ttbar analysis over a generated
# NanoAOD-like dataset (an LZMA-9 and a zlib-1 set) from a real xrootd origin behind the WAN
# emulation: local copies (the limit), direct, ferry cache cold (fill) and warm, each repeated.
#
# Prints and writes (JSON + PNG into $FERRY_BENCH_OUT/agc_passes):
#   fill overhead against direct           (target <= 1%; uCache reports 0.1-1.2%)
#   warm speedup against direct
#   warm time against the local copies     (the limit; target within 10%)
#   fraction of the dataset's bytes read   (about 6% expected)
#   CPU seconds per pass: I/O wait, decompression, analysis, other
#
# Size: AGC_BENCH_GB (default 10) GB of generated data per codec when the disk has room for
# both sets plus headroom, else as much as fits; AGC_BENCH_SMALL=1 for a quick run (~0.5 GB).
# AGC_BENCH_REPEAT (default 3) runs per pass; AGC_BENCH_DATA (default /srv/ferry-agc-bench)
# keeps the generated data between runs (delete it when done); AGC_BENCH_NO_WAN=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build/release}"
FERRY="${AGC_BENCH_FERRY:-$BUILD/bin/ferry}"
OUT="${FERRY_BENCH_OUT:-$ROOT/out/bench}/agc_passes"
DATA="${AGC_BENCH_DATA:-/srv/ferry-agc-bench}"
GB="${AGC_BENCH_GB:-10}"
REPEAT="${AGC_BENCH_REPEAT:-3}"
[ "${AGC_BENCH_SMALL:-0}" = 1 ] && GB="0.5"

# Events per GB per codec: measured from the generator's own report when a previous run left
# one, otherwise from a small calibration set (stored bytes per event differ by codec; the
# LZMA set, the denser one, sets the event count so both sets hold the same events).
mkdir -p "$OUT" "$DATA"
calib="$DATA/.calibration.json"
if [ ! -f "$calib" ]; then
  echo "agc_passes: calibrating the generator (20000 events, lzma-9)" >&2
  "$FERRY" gen nanoaod --template "${FERRY_ROOT_DATA_DIR:-$ROOT/../shared/data/root}/nanoAOD_2015_CMS_Open_Data_ttbar.root" \
    --events 20000 --files 1 --codec lzma:9 --seed 5 --out "$DATA/.calibration" --json >"$calib.tmp"
  mv "$calib.tmp" "$calib"
  rm -rf "$DATA/.calibration"
fi
bytes_per_event="$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["file_bytes"]/d["events"])' "$calib")"
events="$(/usr/bin/python3 -c "print(int($GB * 1e9 / $bytes_per_event))")"

# Disk: both sets (zlib-1 is about twice the size of lzma-9), the cache fill (~10% of a set)
# and 10 GB headroom must fit.
avail_kb="$(df -Pk "$DATA" | awk 'NR==2 {print $4}')"
need_kb="$(/usr/bin/python3 -c "print(int($GB * 1e6 * 3.3 + 10e6))")"
if [ "$avail_kb" -lt "$need_kb" ]; then
  fit="$(/usr/bin/python3 -c "print(max(0.2, round(($avail_kb - 10e6) / 3.3e6, 1)))")"
  echo "agc_passes: only $((avail_kb / 1000000)) GB free under $DATA: $fit GB per codec instead of $GB" >&2
  events="$(/usr/bin/python3 -c "print(int($fit * 1e9 / $bytes_per_event))")"
fi
files="$(/usr/bin/python3 -c "print(max(4, min(40, int($events * $bytes_per_event / 500e6))))")"
args=(--ferry "$FERRY" --out "$OUT" --title "bench agc_passes" --events "$events" --files "$files"
  --repeat "$REPEAT" --data-dir "$DATA" --reads "${AGC_BENCH_READS:-16}")
[ "${AGC_BENCH_NO_WAN:-0}" = 1 ] && args+=(--no-wan)
echo "agc_passes: $events events per codec in $files files (~$GB GB lzma-9), $REPEAT runs per pass" >&2
exec bash "$ROOT/scripts/agc_passes.sh" "${args[@]}"
