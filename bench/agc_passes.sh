#!/usr/bin/env bash
# bench/agc_passes: the demo's measurement at scale — the AGC ttbar analysis over a generated
# NanoAOD-like dataset (a zlib-1 and an LZMA-9 set) from a real xrootd origin behind the WAN
# emulation: local copies (the limit), direct, ferry cache cold (fill) and warm, each repeated.
#
# Prints and writes (JSON + PNG into $FERRY_BENCH_OUT/agc_passes):
#   fill overhead against direct           (target <= 1%; uCache reports 0.1-1.2%)
#   warm speedup against direct
#   warm time against the local copies     (the limit; target within 10%)
#   fraction of the dataset's bytes read   (about 6% expected)
#   CPU seconds per pass: I/O wait, decompression, analysis, other
#
# Size (GB of generated files per codec): AGC_BENCH_ZLIB_GB (default 10) and AGC_BENCH_LZMA_GB
# (default 0.25: ferry gen writes LZMA-9 at ~0.1-0.5 MB/s per core here, so 10 GB would take days;
# raise it when you have the time). Both shrink to what the disk under AGC_BENCH_DATA holds.
# AGC_BENCH_SMALL=1: 0.5 GB zlib-1 and 0.05 GB LZMA-9. AGC_BENCH_REPEAT (default 3) runs per
# pass (medians). AGC_BENCH_DATA (default /srv/ferry-agc-bench) keeps the generated data for
# the next run (remove it when done). AGC_BENCH_NO_WAN=1 serves from 127.0.0.1.
# AGC_BENCH_RNTUPLE (default 1) adds the same two sets written as RNTuples (twice the disk);
# AGC_BENCH_RNTUPLE=only runs the RNTuple sets alone. AGC_BENCH_CACHE_SET="KEY=VALUE ..." adds
# cache settings (e.g. replica_codec=lz4).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build/release}"
FERRY="$(realpath "${AGC_BENCH_FERRY:-$BUILD/bin/ferry}")"
OUT="${FERRY_BENCH_OUT:-$ROOT/out/bench}/agc_passes"
DATA="${AGC_BENCH_DATA:-/srv/ferry-agc-bench}"
TEMPLATE="${FERRY_ROOT_DATA_DIR:-$ROOT/data/root}/nanoAOD_2015_CMS_Open_Data_ttbar.root"
ZLIB_GB="${AGC_BENCH_ZLIB_GB:-10}"
LZMA_GB="${AGC_BENCH_LZMA_GB:-0.25}"
if [ "${AGC_BENCH_SMALL:-0}" = 1 ]; then
  ZLIB_GB=0.5 LZMA_GB=0.05
fi
REPEAT="${AGC_BENCH_REPEAT:-3}"
FILES="${AGC_BENCH_FILES:-}"
PY=/usr/bin/python3
mkdir -p "$OUT" "$DATA"
chmod a+rx "$DATA"

# Stored bytes per event of each codec, from a small generated sample (kept in $DATA).
bytes_per_event() {  # CODEC
  local f="$DATA/.calibration-${1/:/}.json"
  if [ ! -s "$f" ]; then
    echo "agc_passes: calibrating ferry gen for $1 (10000 events)" >&2
    "$FERRY" gen nanoaod --template "$TEMPLATE" --events 10000 --files 1 --codec "$1" --seed 5 \
      --out "$DATA/.calibration" --json >"$f.tmp"
    mv "$f.tmp" "$f"
    rm -rf "$DATA/.calibration"
  fi
  "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_per_event"])' "$f"
}
zlib_bpe="$(bytes_per_event zlib:1)"
lzma_bpe="$(bytes_per_event lzma:9)"

# Disk: both sets, the cache fills (~10% of a set each) and 10 GB of headroom must fit.
# The sets already in $DATA count as room: a matching set is reused, another is replaced (a
# rerun must not shrink, and so regenerate, the sets the last run left).
kept_kb="$(du -sk "$DATA" 2>/dev/null | cut -f1)"
avail_gb="$(df -Pk "$DATA" | awk -v kept="${kept_kb:-0}" 'NR==2 {printf "%.1f", ($4 + kept) / 1e6}')"
read -r ZLIB_GB LZMA_GB < <("$PY" - "$avail_gb" "$ZLIB_GB" "$LZMA_GB" "${AGC_BENCH_RNTUPLE:-1}" <<'PY'
import sys
avail, z, l = map(float, sys.argv[1:4])
room = max(0.2, avail - 10)
need = 1.2 * (z + l) * (2 if sys.argv[4] == "1" else 1)  # "only": one form
if need > room:
    k = room / need
    z, l = round(z * k, 2), round(l * k, 2)
    print(f"agc_passes: {avail:.0f} GB free: shrinking to {z} GB zlib-1 and {l} GB lzma-9", file=sys.stderr)
print(z, l)
PY
)
zlib_events="$("$PY" -c "print(int($ZLIB_GB * 1e9 / $zlib_bpe))")"
lzma_events="$("$PY" -c "print(int($LZMA_GB * 1e9 / $lzma_bpe))")"
# About 500 MB per file, 4 to 40 files.
[ -n "$FILES" ] || FILES="$("$PY" -c "print(max(4, min(40, int($ZLIB_GB * 2))))")"
# LZMA-9 files each cost ~25 s of encoder set-up (one per basket, ~1000 branches), so the LZMA
# set uses fewer files (about one per 50 MB).
lzma_files="$("$PY" -c "print(max(2, min($FILES, round($LZMA_GB * 20))))")"
codecs="zlib:1:$zlib_events lzma:9:$lzma_events:$lzma_files"
# The same events as RNTuples beside them (issue 29's targets are printed per set).
# AGC_BENCH_RNTUPLE=only: the RNTuple sets alone.
rntuple_sets="zlib:1:$zlib_events:$FILES:rntuple lzma:9:$lzma_events:$lzma_files:rntuple"
case "${AGC_BENCH_RNTUPLE:-1}" in
  1) codecs="$codecs $rntuple_sets" ;;
  only) codecs="$rntuple_sets" ;;
esac
args=(--ferry "$FERRY" --out "$OUT" --title "bench agc_passes" --files "$FILES"
  --codecs "$codecs" --repeat "$REPEAT" --data-dir "$DATA"
  --reads "${AGC_BENCH_READS:-16}")
echo "agc_passes: zlib-1 $zlib_events events (~$ZLIB_GB GB, $FILES files), lzma-9 $lzma_events events (~$LZMA_GB GB, $lzma_files files), $REPEAT runs per pass" >&2
[ "${AGC_BENCH_NO_WAN:-0}" = 1 ] && args+=(--no-wan)
exec bash "$ROOT/scripts/agc_passes.sh" "${args[@]}"
